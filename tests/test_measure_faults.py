"""``isotropy measure`` under faults: where the JSON goes, a failing metric, an interruption, the cost note.

Issue 11, items 1, 10 and 11: ``--json`` never replaces a symlink, a FIFO or a directory and ``-``
means stdout; every metric's line is printed as it finishes; a failing metric is reported, the
others still run and the JSON keeps what finished; O(n²) metrics announce their cost.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from isotropy import isoscore, participation_ratio
from isotropy._kernels.cost import estimate_seconds, format_duration
from isotropy.cli import cli
from isotropy.measure.command import METRICS

ISOTROPY = Path(sys.executable).parent / "isotropy"


@pytest.fixture
def x_file(tmp_path):
    X = np.random.default_rng(3).normal(size=(60, 4)) * [1.0, 2.0, 3.0, 4.0]
    np.save(tmp_path / "x.npy", X)
    return tmp_path / "x.npy", X


def invoke(*args):
    return CliRunner().invoke(cli, ["measure", *map(str, args)])


def _errors(text):
    return [line for line in text.splitlines() if line.startswith("Error: ")]


# ------------------------------------------------------------------------------ --json destinations
def test_json_dash_writes_json_alone_to_stdout(x_file):
    path, X = x_file
    result = invoke(path, "--metrics", "isoscore,participation_ratio", "--json", "-")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)  # nothing but the JSON on stdout
    assert record["values"]["isoscore"] == pytest.approx(isoscore(X), rel=1e-12)
    assert record["values"]["participation_ratio"] == pytest.approx(participation_ratio(X), rel=1e-12)
    assert record["complete"] is True and record["errors"] == {}
    assert "isoscore" in result.stderr and "metric" in result.stderr  # the table went to stderr
    assert not (Path.cwd() / "-").exists()


def test_json_through_a_symlink_writes_its_target(x_file, tmp_path):
    path, X = x_file
    target = tmp_path / "real.json"
    target.write_text("old\n")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    result = invoke(path, "--metrics", "isoscore", "--json", link)
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert json.loads(target.read_text())["values"]["isoscore"] == pytest.approx(isoscore(X), rel=1e-12)


def test_json_to_a_fifo_is_refused_at_once(x_file, tmp_path):
    path, _ = x_file
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    # a real process: a writer that opened the FIFO would block forever (timeout = the hang)
    result = subprocess.run([str(ISOTROPY), "measure", str(path), "--metrics", "isoscore", "--json", str(fifo)],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2
    expected = (f"Error: The --json {str(fifo)!r} is a FIFO; expected a regular file path (it would be replaced, "
                f"not written into).")
    assert result.stderr.strip().splitlines() == [expected]
    assert result.stdout == ""  # refused before any work
    assert fifo.is_fifo()


def test_json_to_a_directory_is_one_line_exit_2(x_file, tmp_path):
    path, _ = x_file
    (tmp_path / "outdir").mkdir()
    result = invoke(path, "--metrics", "isoscore", "--json", tmp_path / "outdir")
    assert result.exit_code == 2
    assert len(_errors(result.output)) == 1 and "is a directory" in _errors(result.output)[0]
    assert "Usage" not in result.output and "Traceback" not in result.output
    assert (tmp_path / "outdir").is_dir() and not any((tmp_path / "outdir").iterdir())


# a destination in a folder this user cannot write was found only by the atomic writer, after every metric had run:
# "Error: [Errno 13] Permission denied: '/…/ro/.x.json.9amqhc76.tmp'" (ro/x.json) or "... 'ro/sub'" (ro/sub/x.json),
# naming neither --json nor the path given. The tests run as root, for whom os.access says yes: it is patched.
@pytest.mark.parametrize("given, nearest", [("ro/x.json", "its directory"),
                                            ("ro/sub/x.json", "the nearest existing directory above it")])
def test_json_in_a_folder_this_user_cannot_write_is_refused_before_any_metric(x_file, tmp_path, monkeypatch, given,
                                                                              nearest):
    path, _ = x_file
    (tmp_path / "ro").mkdir()
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == tmp_path / "ro" else real(p, mode, **kw))
    monkeypatch.chdir(tmp_path)
    result = invoke(path, "--metrics", "isoscore", "--json", given)
    assert result.exit_code == 2, result.output
    expected = (f"Error: The --json {given!r} cannot be written: {nearest}, {str(tmp_path / 'ro')!r}, is not "
                f"writable by this user (permission denied, or a read-only file system).")
    assert result.output.splitlines() == [expected]  # before any metric: no line of the table
    assert not any((tmp_path / "ro").iterdir())


def test_json_empty_is_said_as_empty_not_as_a_directory(x_file):
    path, _ = x_file
    result = invoke(path, "--metrics", "isoscore", "--json", "")
    assert result.exit_code == 2
    assert result.output.splitlines() == ["Error: The --json '' is empty; expected a file path."]


def test_json_that_cannot_be_made_names_the_option_and_the_path_not_the_temporary_file(x_file, tmp_path):
    """/proc lets root in by os.access: found by the writer, after every metric had run (their values lost); a probe
    file now finds it before the work, naming --json and the folder that refused it, never the probe."""
    if not Path("/proc/self").is_dir():
        pytest.skip("no /proc")
    path, _ = x_file
    for given, where in (("/proc/x.json", "its directory"), ("/proc/isotropy-test/x.json",
                                                             "the nearest existing directory above it")):
        result = invoke(path, "--metrics", "isoscore", "--json", given)
        assert result.exit_code == 2
        errors = _errors(result.output)
        assert len(errors) == 1 and errors[0].startswith(f"Error: The --json {given!r} cannot be written")
        assert ".tmp" not in errors[0] and "[Errno" not in errors[0] and "probe" not in errors[0]
        assert "isoscore" not in result.output  # refused before the metric ran
        if os.access("/proc", os.W_OK | os.X_OK):  # root: the permission bits let it in, the probe does not
            assert errors[0] == (f"Error: The --json {given!r} cannot be written: {where}, '/proc', refused a file "
                                 f"(no such file or directory); expected a file path in a directory this user can "
                                 f"write in.")


def test_atomic_write_errors_name_the_destination(tmp_path, monkeypatch):
    import tempfile

    from isotropy._utils.atomic import atomic_write

    def denied(*args, dir=None, prefix="", suffix="", **kwargs):
        raise PermissionError(13, "Permission denied", os.path.join(dir, f"{prefix}9amqhc76{suffix}"))

    monkeypatch.setattr(tempfile, "mkstemp", denied)
    with pytest.raises(PermissionError) as info, atomic_write(tmp_path / "x.json", name="--json") as handle:
        handle.write("{}")
    assert str(info.value) == f"The --json {str(tmp_path / 'x.json')!r} cannot be written: permission denied."
    assert info.value.errno == 13


# ------------------------------------------------------------------------------ failing metrics
def test_a_failing_metric_does_not_lose_the_others(tmp_path):
    X = np.random.default_rng(0).normal(size=(30, 3))
    X[7] = 0.0  # the cosine is undefined for a zero vector; the other metrics are fine
    np.save(tmp_path / "x.npy", X)
    out = tmp_path / "m.json"
    result = invoke(tmp_path / "x.npy", "--metrics", "isoscore,cosine_similarity_mean,participation_ratio",
                    "--json", out)
    assert result.exit_code == 2
    rows = {line.split()[0]: line.split()[1] for line in result.stdout.splitlines()[2:]}
    assert rows["cosine_similarity_mean"] == "failed"
    assert float(rows["isoscore"]) == pytest.approx(isoscore(X), rel=1e-5)
    assert float(rows["participation_ratio"]) == pytest.approx(participation_ratio(X), rel=1e-5)
    errors = _errors(result.stderr)
    assert errors[0].startswith("Error: cosine_similarity_mean: ") and "all-zero row" in errors[0]
    assert errors[-1] == "Error: 1 of 3 metrics failed (cosine_similarity_mean); the others are above and in the JSON."
    record = json.loads(out.read_text())
    assert set(record["values"]) == {"isoscore", "participation_ratio"}
    assert record["values"]["isoscore"] == pytest.approx(isoscore(X), rel=1e-12)
    assert "all-zero row" in record["errors"]["cosine_similarity_mean"] and record["complete"] is False


def _register(monkeypatch, function_name):
    """Put a fake metric (a function of this module) in the metric table for one test."""
    from isotropy.metrics.table import MetricSpec

    monkeypatch.setitem(METRICS, function_name, MetricSpec(function_name, __name__, "covariance", False, function_name))


def _probe_seen_by_second_metric(X):
    """A metric that records what stdout held when it started (was the first line already printed?)."""
    sys.stdout.flush()
    _probe_seen_by_second_metric.seen = sys.stdout.buffer.getvalue().decode()
    return 0.5


def _broken_metric(X):
    raise RuntimeError("simulated bug")


def _interrupting_metric(X):
    raise KeyboardInterrupt


def _killed_workers_metric(X):
    from types import SimpleNamespace

    from distributed.scheduler import KilledWorker

    raise KilledWorker("_centroid_terms-abc", SimpleNamespace(address="tcp://127.0.0.1:1"), 3)


def test_each_line_is_printed_as_the_metric_finishes(x_file, monkeypatch):
    path, X = x_file
    _register(monkeypatch, "_probe_seen_by_second_metric")
    result = invoke(path, "--metrics", "isoscore,_probe_seen_by_second_metric")
    assert result.exit_code == 0, result.output
    seen = _probe_seen_by_second_metric.seen.splitlines()
    assert seen[1].split() == ["metric", "value", "seconds"]
    assert seen[2].split()[0] == "isoscore" and float(seen[2].split()[1]) == pytest.approx(isoscore(X), rel=1e-5)


def test_an_internal_error_exits_1_and_keeps_the_rest(x_file, tmp_path, monkeypatch):
    path, X = x_file
    monkeypatch.delenv("ISOTROPY_DEBUG", raising=False)
    _register(monkeypatch, "_broken_metric")
    out = tmp_path / "m.json"
    result = invoke(path, "--metrics", "_broken_metric,isoscore", "--json", out)
    assert result.exit_code == 1
    assert "Error: _broken_metric: RuntimeError: simulated bug" in result.stderr and "Traceback" not in result.output
    assert json.loads(out.read_text())["values"] == {"isoscore": pytest.approx(isoscore(X), rel=1e-12)}


def test_isotropy_debug_shows_a_failing_metrics_traceback_and_keeps_the_rest(x_file, tmp_path, monkeypatch):
    """A metric's failure is one line in the table's run; ISOTROPY_DEBUG=1 adds its traceback before that line."""
    path, X = x_file
    monkeypatch.setenv("ISOTROPY_DEBUG", "1")
    _register(monkeypatch, "_broken_metric")
    out = tmp_path / "m.json"
    result = invoke(path, "--metrics", "_broken_metric,isoscore", "--json", out)
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    start = lines.index("Traceback (most recent call last):")
    error = lines.index("Error: _broken_metric: RuntimeError: simulated bug")
    assert start < lines.index("RuntimeError: simulated bug") < error
    assert any(line.strip() == 'raise RuntimeError("simulated bug")' for line in lines[start:error])
    assert json.loads(out.read_text())["values"] == {"isoscore": pytest.approx(isoscore(X), rel=1e-12)}


def test_an_interruption_writes_what_finished(x_file, tmp_path, monkeypatch):
    path, X = x_file
    _register(monkeypatch, "_interrupting_metric")
    out = tmp_path / "m.json"
    result = invoke(path, "--metrics", "isoscore,_interrupting_metric,participation_ratio", "--json", out)
    assert result.exit_code == 130
    record = json.loads(out.read_text())
    assert record["values"] == {"isoscore": pytest.approx(isoscore(X), rel=1e-12)} and record["complete"] is False


# ------------------------------------------------------------------------------ cost of O(n²) metrics
def test_quadratic_metrics_announce_their_cost(x_file, monkeypatch):
    from isotropy.measure import report as _measure_report

    path, _ = x_file
    monkeypatch.setattr(_measure_report, "_COST_NOTE_SECONDS", 0.0)  # note every estimate, however short
    result = invoke(path, "--metrics", "isoscore,twonn_dimension", "--no-progress")
    assert result.exit_code == 0, result.output
    notes = [line for line in result.stderr.splitlines() if line.startswith("Note: ")]
    assert len(notes) == 1 and notes[0].startswith("Note: twonn_dimension compares all 60 x 60 pairs (O(n²))")
    assert "--sample-size" in notes[0] and "(--scheduler ADDRESS)" in notes[0]


def test_twonn_and_mle_announce_their_one_search_once(x_file, monkeypatch):
    from isotropy.measure import report as _measure_report

    path, _ = x_file
    monkeypatch.setattr(_measure_report, "_COST_NOTE_SECONDS", 0.0)
    result = invoke(path, "--metrics", "mle_dimension,twonn_dimension", "--no-progress")
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    notes = [line for line in lines if line.startswith("Note: ")]
    assert len(notes) == 1 and notes[0].startswith("Note: mle_dimension and twonn_dimension compare (one neighbour "
                                                   "search) all 60 x 60 pairs (O(n²))")
    rows = result.stdout.splitlines()
    assert [row.split()[0] for row in rows[2:]] == ["mle_dimension", "twonn_dimension"]


def test_cost_estimate_scales_as_n_squared_and_reads_well():
    small, large = estimate_seconds("silhouette_score", 10_000, 384), estimate_seconds("silhouette_score", 20_000, 384)
    assert large == pytest.approx(4 * small, rel=1e-12)
    assert estimate_seconds("dunn_index", 10_000, 768) > estimate_seconds("dunn_index", 10_000, 16) > 0
    assert [format_duration(s) for s in (4.4, 600, 4 * 3600)] == ["4 s", "10 min", "4.0 h"]


def test_cost_estimate_follows_the_loops_the_neighbour_search_will_run(monkeypatch):
    """TwoNN's and MLE's estimates take the constants of the loops the search would run; a bad ISOTROPY_JIT leaves
    the note to the numpy loops' constants (the search itself refuses it)."""
    from isotropy._kernels import cost, neighbors

    flops, elements = cost.machine_speed()
    n, d = 80_000, 384

    def expected(loop, k):
        alpha, beta, gamma, delta, epsilon = cost._SEARCH_COST[loop]
        return (n * n * (alpha * d / flops + beta / elements)
                + (gamma * d + delta * np.log(1 + n / k) + epsilon * k) * n * k / elements)

    assert cost._SEARCH_COST["numpy"] != cost._SEARCH_COST["compiled"]
    for name, k in (("twonn_dimension", 2), ("mle_dimension", 20)):
        monkeypatch.setenv("ISOTROPY_JIT", "0")
        assert estimate_seconds(name, n, d) == pytest.approx(expected("numpy", k), rel=1e-12)
        assert estimate_seconds(name, n, d, n_neighbors=100) == pytest.approx(expected("numpy", 100), rel=1e-12)
        monkeypatch.setenv("ISOTROPY_JIT", "1")
        assert estimate_seconds(name, n, d) == pytest.approx(expected("compiled", k), rel=1e-12)
        monkeypatch.setenv("ISOTROPY_JIT", "yes")
        assert estimate_seconds(name, n, d) == pytest.approx(expected("numpy", k), rel=1e-12)
    monkeypatch.setenv("ISOTROPY_JIT", "0")  # a larger k costs more: more candidates, more exact distances
    assert estimate_seconds("mle_dimension", n, d, n_neighbors=100) > estimate_seconds("mle_dimension", n, d)
    # silhouette and Dunn do not depend on the loops
    monkeypatch.setenv("ISOTROPY_JIT", "1")
    alpha, beta = cost._PAIR_COST["dunn_index"]
    assert estimate_seconds("dunn_index", n, d) == pytest.approx(n * n * (alpha * d / flops + beta / elements),
                                                                 rel=1e-12)
    monkeypatch.setenv("ISOTROPY_JIT", "auto")  # the same choice as the search makes
    assert not neighbors.uses_compiled_kernels(1_000, d, 20)
    if not neighbors._installed("numba"):  # the core install (numba is in the test extra)
        assert not neighbors.uses_compiled_kernels(80_000, d, 20)
        return
    for size, width, k in [(1_000, 384, 20), (20_000, 384, 2), (20_000, 384, 100), (80_000, 384, 2),
                           (60_000, 50, 2), (20_000, 50, 20), (30_000, 1024, 2), (10**6, 8, 2)]:
        chosen = neighbors.compiled_kernels(size, width, k) is not None
        assert neighbors.uses_compiled_kernels(size, width, k) is chosen, (size, width, k)
    assert neighbors.uses_compiled_kernels(80_000, d, 20)


def test_every_pairwise_metric_has_its_cost_constants():
    """measure announces every pairwise metric of the table: each has its fitted (α, β), none a made-up default."""
    from isotropy._kernels import cost
    from isotropy.metrics.table import METRICS

    pairwise = {name for name, spec in METRICS.items() if spec.pairwise}
    assert pairwise == set(cost._PAIR_COST) | set(cost._NEIGHBOURS) and not set(cost._PAIR_COST) & set(cost._NEIGHBOURS)
    assert all(alpha > 0 and beta > 0 for alpha, beta in cost._PAIR_COST.values())
    assert set(cost._SEARCH_COST) == {"numpy", "compiled"}
    assert all(alpha > 0 and beta > 0 and min(rest) >= 0 for alpha, beta, *rest in cost._SEARCH_COST.values())


def test_cost_note_does_not_load_numba():
    """Whether the search will be compiled is known without importing numba (a note for a search that is)."""
    code = ("import os, sys; os.environ['ISOTROPY_JIT'] = 'auto'\n"
            "from isotropy._kernels.neighbors import _installed, uses_compiled_kernels\n"
            "from isotropy.measure.report import _cost_note\n"
            "note = _cost_note('mle_dimension', 10**6, 384)\n"
            "print(note is not None, uses_compiled_kernels(10**6, 384, 20) is _installed('numba'), 'numba' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "True", "False"]


def test_cost_note_suggests_numba_only_where_its_absence_costs(monkeypatch):
    """Without numba, a large search on narrow rows runs the numpy loops: the note prices the compiled ones by the
    same fit and names the install. Not with numba found, not under ISOTROPY_JIT=0 (the user's choice), not where
    the two estimates are close (d = 384, k = 20) and never for a metric without a neighbour search."""
    from isotropy._kernels import cost
    from isotropy._kernels import neighbors as kernels
    from isotropy._utils.install import extra_command
    from isotropy.measure.report import _cost_note

    monkeypatch.setattr(cost, "machine_speed", lambda: (1.8e11, 1.5e9))  # a 2-core machine's (fixed: the test's)
    monkeypatch.setenv("ISOTROPY_JIT", "auto")
    n, d = 200_000, 50
    found = {"numba": False}
    monkeypatch.setattr(kernels, "_installed", lambda name: found.get(name, True))
    note = _cost_note("mle_dimension", n, d, names=["twonn_dimension", "mle_dimension"])
    numpy_s = estimate_seconds("mle_dimension", n, d, loops="numpy")
    compiled_s = estimate_seconds("mle_dimension", n, d, loops="compiled")
    assert compiled_s < 0.75 * numpy_s and estimate_seconds("mle_dimension", n, d) == numpy_s
    assert f"about {cost.format_duration(numpy_s)} on this machine" in note
    assert f"with numba ({extra_command('fast')}) all rows take about {cost.format_duration(compiled_s)};" in note
    assert "with numba" not in _cost_note("mle_dimension", n, 384)  # within the estimate's error there
    assert "with numba" not in _cost_note("silhouette_score", n, d)
    monkeypatch.setenv("ISOTROPY_JIT", "0")
    assert "with numba" not in _cost_note("mle_dimension", n, d)
    monkeypatch.setenv("ISOTROPY_JIT", "auto")
    found["numba"] = True
    assert "with numba" not in _cost_note("mle_dimension", n, d)
    assert estimate_seconds("mle_dimension", n, d) == compiled_s
    with pytest.raises(ValueError, match="loops must be None, 'numpy' or 'compiled'. Got 'fast' instead"):
        estimate_seconds("mle_dimension", n, d, loops="fast")


@pytest.mark.parametrize("speed", [None, (3e9, 2.5e7)])  # this machine; one 100 times slower
@pytest.mark.parametrize("name", ["twonn_dimension", "mle_dimension", "silhouette_score"])
@pytest.mark.parametrize("n_features", [8, 16, 384])
def test_cost_note_sample_takes_what_it_says(name, n_features, speed, monkeypatch):
    """The note's --sample-size is estimated at about the note's 10 s, by the same estimate (also where the sample
    is small enough for the neighbour search to run on other loops than all the rows: on the slow machine)."""
    import re

    from isotropy.measure.report import _COST_NOTE_SECONDS, _cost_note

    if speed is not None:
        monkeypatch.setattr("isotropy._kernels.cost.machine_speed", lambda: speed)
    monkeypatch.setenv("ISOTROPY_JIT", "auto")

    for n in (300_000, 3_000_000):
        note = _cost_note(name, n, n_features)
        sample = int(re.search(r"--sample-size (\d+) takes about", note).group(1))
        assert 0.8 * _COST_NOTE_SECONDS <= estimate_seconds(name, sample, n_features) <= 1.1 * _COST_NOTE_SECONDS


def test_cost_note_prices_the_search_at_its_k_and_suggests_a_sample_the_search_accepts(monkeypatch):
    """measure --n-neighbors K: the note's estimate and its sample are those of the search with k = K, and the
    sample keeps more rows than K (the MLE refuses fewer), with the time that sample takes."""
    import re

    from isotropy._kernels import cost
    from isotropy.measure.report import _cost_note

    monkeypatch.setenv("ISOTROPY_JIT", "0")
    n, d = 300_000, 64
    for k in (5, 100):
        note = _cost_note("mle_dimension", n, d, names=["twonn_dimension", "mle_dimension"], n_neighbors=k)
        assert f"about {cost.format_duration(estimate_seconds('mle_dimension', n, d, n_neighbors=k))} on" in note
    assert _cost_note("mle_dimension", n, d, n_neighbors=100) != _cost_note("mle_dimension", n, d, n_neighbors=5)
    monkeypatch.setattr(cost, "machine_speed", lambda: (1e7, 1e5))  # so slow that 10 s holds a few rows only
    note = _cost_note("mle_dimension", 20_000, d, n_neighbors=500)
    sample = int(re.search(r"--sample-size (\d+) takes about", note).group(1))
    assert sample == 501
    took = cost.format_duration(estimate_seconds("mle_dimension", sample, d, n_neighbors=500))
    assert f"--sample-size 501 takes about {took}" in note


def test_cost_note_reads_as_sentences_and_gives_only_advice_that_works(monkeypatch, tmp_path):
    """No '.;' when the sample would be every row; the in-memory-only uniformity is never sent to the distributed
    path, and on that path without a sample (where it refuses at once) it gets no note at all."""
    from isotropy.measure.report import _cost_note

    monkeypatch.setattr("isotropy._kernels.cost.machine_speed", lambda: (3e9, 2.5e7))
    every_row = 0
    for name in ("uniformity", "silhouette_score", "twonn_dimension"):
        for n in np.unique(np.geomspace(5_000, 300_000, 400).astype(int)):  # also just above the note's 10 s
            for distributed in (False, True):
                note = _cost_note(name, int(n), 64, distributed=distributed)
                if note is None:
                    continue
                assert ".;" not in note and ".." not in note and note.endswith("."), note
                assert ("distributed path" in note) is (not distributed), note
                every_row += "--sample-size" not in note  # the sample would be every row: not suggested
    assert every_row > 0
    X = np.random.default_rng(0).normal(size=(3000, 8)).astype(np.float32)
    shards = tmp_path / "shards"
    shards.mkdir()
    np.save(shards / "a.npy", X[:1500])
    np.save(shards / "b.npy", X[1500:])
    monkeypatch.setattr("isotropy.measure.report._COST_NOTE_SECONDS", 1e-9)  # every pairwise metric gets its note
    result = CliRunner().invoke(cli, ["measure", str(shards), "--metrics", "uniformity"])
    # by tiles on the dask path: its note is before the work, and it advises no distributed path it is on
    assert result.exit_code == 0 and "Note: uniformity compares all 3000 x 3000 pairs" in result.output
    assert "distributed path" not in result.output
    result = CliRunner().invoke(cli, ["measure", str(shards), "--metrics", "uniformity", "--sample-size", "500"])
    assert result.exit_code == 0 and "Note: uniformity compares all 500 x 500 pairs" in result.output


# ------------------------------------------------------------------------------ progress inside O(n²) metrics
@pytest.mark.parametrize("name", ["silhouette_score", "dunn_index", "twonn_dimension", "mle_dimension"])
def test_quadratic_kernels_report_every_block(name):
    import isotropy
    from isotropy._utils.progress import reporting

    X = np.random.default_rng(0).normal(size=(700, 3))
    labels = np.arange(700) % 4
    calls = []
    function = getattr(isotropy, name)
    args = (X, labels) if name in ("silhouette_score", "dunn_index") else (X,)
    kwargs = {"chunk_size": 100} if name == "dunn_index" else {}
    with reporting(lambda done, total: calls.append((done, total))):
        value = function(*args, **kwargs)
    assert calls and calls[-1][0] == calls[-1][1]  # finished: done == total
    assert sorted(done for done, _ in calls) == list(range(1, calls[-1][1] + 1))  # each block once
    assert function(*args, **kwargs) == value  # without a reporter: same value, nothing reported


def test_measure_progress_shows_inside_a_metric_when_not_a_terminal(tmp_path):
    np.save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(3000, 4)))
    (tmp_path / "y.txt").write_text("".join(f"c{i % 3}\n" for i in range(3000)))
    result = invoke(tmp_path / "x.npy", "--labels", tmp_path / "y.txt", "--metrics", "dunn_index", "--progress")
    assert result.exit_code == 0, result.output
    assert "dunn_index 100%" in result.stderr  # CliRunner's stderr is not a terminal
    quiet = invoke(tmp_path / "x.npy", "--labels", tmp_path / "y.txt", "--metrics", "dunn_index")
    assert "%" not in quiet.stderr


def test_measure_progress_into_a_log_file_writes_whole_lines(tmp_path):
    """``--progress 2> log``: one line per metric and per tenth of its blocks, never a bar redrawn with '\\r' that
    the table's rows (stdout, the same file with 2>&1) would cut into."""
    np.save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(3000, 4)))
    (tmp_path / "y.txt").write_text("".join(f"c{i % 3}\n" for i in range(3000)))
    with open(tmp_path / "log", "w") as log:
        run = subprocess.run([str(ISOTROPY), "measure", str(tmp_path / "x.npy"), "--labels", str(tmp_path / "y.txt"),
                              "--metrics", "isoscore,dunn_index", "--progress"], stdout=log, stderr=subprocess.STDOUT,
                             timeout=120, check=False)
    text = (tmp_path / "log").read_text()
    assert run.returncode == 0, text
    assert "\r" not in text
    lines = text.splitlines()
    assert lines[2:4] == ["metrics 1/2: isoscore", lines[3]] and lines[3].startswith("isoscore ")
    assert lines[4] == "metrics 2/2: dunn_index" and lines[-2] == "metrics 2/2: dunn_index 100%"
    assert lines[-1].startswith("dunn_index ")
    percents = [int(line.rsplit(" ", 1)[1].rstrip("%")) for line in lines[5:-1]]
    assert percents == sorted(set(percents)) and all(p % 10 == 0 for p in percents)


# ------------------------------------------------------------------------------ issue 19: --json to a stream
@pytest.mark.parametrize("dest", ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"])
def test_json_to_dev_stdout_redirected_to_a_file_keeps_the_table(x_file, tmp_path, dest):
    path, X = x_file
    out = tmp_path / "out.txt"
    with open(out, "w") as handle:
        proc = subprocess.run([str(ISOTROPY), "measure", str(path), "--metrics", "isoscore", "--json", dest],
                              stdout=handle, stderr=subprocess.PIPE, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    table, _, rest = text.partition("{")
    assert "isoscore" in table and "metric" in table  # the printed table is still there
    record = json.loads("{" + rest)
    assert record["values"]["isoscore"] == pytest.approx(isoscore(X), rel=1e-12)
    assert out.is_file() and not out.is_symlink()


def test_json_to_dev_stderr_and_an_inherited_descriptor(x_file, tmp_path):
    path, X = x_file
    result = invoke(path, "--metrics", "isoscore", "--json", "/dev/stderr")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stderr)["values"]["isoscore"] == pytest.approx(isoscore(X), rel=1e-12)
    read, write = os.pipe()
    proc = subprocess.run([str(ISOTROPY), "measure", str(path), "--metrics", "isoscore", "--json", f"/dev/fd/{write}"],
                          pass_fds=(write,), capture_output=True, text=True, timeout=120, check=False)
    os.close(write)
    with os.fdopen(read) as handle:
        record = json.loads(handle.read())
    assert proc.returncode == 0 and record["values"]["isoscore"] == pytest.approx(isoscore(X), rel=1e-12)


@pytest.mark.parametrize("value", ["1", "0", "-3", "x", "2.5"])
def test_bad_sample_size_is_one_line_not_a_usage_block(x_file, value):
    path, _ = x_file
    result = invoke(path, "--sample-size", value, "--metrics", "isoscore")
    assert result.exit_code == 2 and "Usage:" not in result.output, result.output
    assert result.output.strip().splitlines() == [(f"Error: --sample-size {value!r}: expected an integer number of "
                                                   f"rows of at least 2.")]


def test_measure_progress_of_shards_into_a_log_file_writes_whole_lines(tmp_path):
    """On the dask path --progress into a file drew dask's bar with '\\r' (a docs check): it now writes the
    command's lines, as for one file."""
    shards = tmp_path / "shards"
    shards.mkdir()
    X = np.random.default_rng(0).normal(size=(300, 8)).astype(np.float32)
    for i, part in enumerate(np.array_split(X, 3)):
        np.save(shards / f"p{i}.npy", part)
    with open(tmp_path / "log", "w") as log:
        run = subprocess.run([str(ISOTROPY), "measure", str(shards), "--metrics", "isoscore,twonn_dimension",
                              "--progress"], stdout=log, stderr=subprocess.STDOUT, timeout=300, check=False)
    text = (tmp_path / "log").read_text()
    assert run.returncode == 0, text
    assert "\r" not in text and "Completed" not in text
    lines = text.splitlines()
    assert "metrics 1/2: isoscore" in lines and "metrics 2/2: twonn_dimension" in lines


def test_show_progress_into_a_file_writes_a_line_per_tenth_of_a_large_graph(capsys):
    import dask.array as da

    from isotropy.distributed import show_progress
    from isotropy.distributed._graph import compute

    with show_progress():
        (total,) = compute(da.ones((100, 4), chunks=(1, 4)).sum())
    assert total == 400
    err = capsys.readouterr().err
    assert "\r" not in err
    percents = [line for line in err.splitlines() if line.startswith("dask: ")]
    assert percents[-1].startswith("dask: 100% of ") and len(percents) <= 10


def test_workers_killed_running_a_metric_are_said_to_be_out_of_memory_most_often(x_file, monkeypatch):
    """dask's KilledWorker names no cause: a user trial at --memory-limit 512MiB could not tell what to change."""
    path, _ = x_file
    _register(monkeypatch, "_killed_workers_metric")
    result = invoke(path, "--metrics", "_killed_workers_metric,isoscore")
    assert result.exit_code == 1
    line = next(line for line in result.stderr.splitlines() if line.startswith("Error: _killed_workers_metric: "))
    assert line.startswith("Error: _killed_workers_metric: KilledWorker: ")
    assert line.endswith("(dask workers die this way most often when a task outgrows their memory: raise "
                         "--memory-limit, or run fewer --workers, each with more memory)")


def test_tiled_estimate_prices_the_tiles_and_the_threads(monkeypatch):
    """The dask path's estimate: the pair tiles form the in-memory products (the same n² term); a neighbour tile also
    recomputes its candidates and starts its thresholds anew, so each row's share is paid once per row block (B times,
    with ln(1 + b/k)); the work is spread over the threads that run tiles at once, at this machine's speed per core."""
    from isotropy._kernels import cost

    monkeypatch.setattr(cost, "_cores", lambda: 4)
    flops, elements = 4e11, 3e9  # this machine's speeds (machine_speed: all of its cores)
    monkeypatch.setattr(cost, "machine_speed", lambda: (flops, elements))
    monkeypatch.setattr(cost, "_TILED_OVERHEAD", {"silhouette_score": 1.5})
    monkeypatch.setattr(cost, "_TILED_SEARCH", (1.25, 0.75))  # the search's pair term, its repeated per-row share
    monkeypatch.setenv("ISOTROPY_JIT", "0")
    n, d, b, k = 100_000, 384, 8192, 20
    tiled = cost.estimate_tiled_seconds("silhouette_score", n, d, tile_rows=4096, threads=2)
    assert tiled == pytest.approx(1.5 * estimate_seconds("silhouette_score", n, d) * 4 / 2, rel=1e-12)
    alpha, beta, gamma, delta, epsilon = cost._SEARCH_COST["numpy"]
    blocks = 13  # ⌈100,000 / 8192⌉
    want = 4 / 8 * (1.25 * n * n * (alpha * d / flops + beta / elements)
                    + 0.75 * (gamma * d + delta * np.log(1 + b / k) + epsilon * k) * n * blocks * k / elements)
    assert cost.estimate_tiled_seconds("mle_dimension", n, d, tile_rows=b, threads=8) == pytest.approx(want, rel=1e-12)
    # one tile of all the rows: the in-memory search's two terms, each at its factor, spread over the cores alike
    monkeypatch.setattr(cost, "_TILED_SEARCH", (1.25, 1.25))
    assert cost.estimate_tiled_seconds("mle_dimension", n, d, tile_rows=10**6, threads=4) == pytest.approx(
        1.25 * estimate_seconds("mle_dimension", n, d), rel=1e-12)
    monkeypatch.setattr(cost, "_TILED_SEARCH", (1.25, 0.75))
    # dask's threaded scheduler in this process: the search's own factors
    monkeypatch.setattr(cost, "_TILED_SEARCH_IN_PROCESS", (0.5, 2.0))
    threaded = 4 / 8 * (0.5 * n * n * (alpha * d / flops + beta / elements)
                        + 2.0 * (gamma * d + delta * np.log(1 + b / k) + epsilon * k) * n * blocks * k / elements)
    assert cost.estimate_tiled_seconds("mle_dimension", n, d, tile_rows=b, threads=8, in_process=True) == \
        pytest.approx(threaded, rel=1e-12)
    assert cost.estimate_tiled_seconds("silhouette_score", n, d, tile_rows=4096, threads=2, in_process=True) == tiled
    assert cost.estimate_tiled_seconds("mle_dimension", n, d, tile_rows=b, threads=8, loops="compiled") < want


def test_tiled_estimate_does_not_grow_with_the_cores_at_the_same_speed_per_core(monkeypatch):
    """2 workers on a machine of 16 cores as fast each as 2: the same estimate. The element-wise rate was a one-thread
    reading while the product rate was of all the cores, so the estimate grew about sixfold (a review)."""
    from isotropy._kernels import cost

    got = {}
    for cores in (2, 16):
        monkeypatch.setattr(cost, "_cores", lambda cores=cores: cores)
        monkeypatch.setattr(cost, "measured_speed", lambda cores=cores: (1e10 * cores, 1e9))  # per core, one thread
        cost.machine_speed.cache_clear()
        try:
            got[cores] = [cost.estimate_tiled_seconds(name, 200_000, 384, tile_rows=8192, threads=2)
                          for name in ("mle_dimension", "uniformity", "silhouette_score")]
            # in memory, the work of every core: 8 times the cores, 8 times faster
            got[cores].append(cost.estimate_seconds("mle_dimension", 200_000, 384) * cores)
        finally:
            cost.machine_speed.cache_clear()
    np.testing.assert_allclose(got[16], got[2], rtol=1e-12)


def test_cost_note_on_the_dask_path_prices_its_tiles_and_threads(monkeypatch):
    """On the dask path the note gave the in-memory estimate, then that estimate as a lower bound ("the dask path takes
    longer"): a run on 2 local workers took well beyond it. It now prices the tiles on the threads that run them: local
    workers share this machine's cores (at most that many at once), a cluster's worker threads are counted at this
    machine's speed per core; the sample it suggests is priced on the same path. In memory the note is unchanged."""
    import re

    from isotropy._kernels import cost, silhouette
    from isotropy.measure.report import _cost_note

    cost.machine_speed()  # measured (and cached) with this machine's own cores before they are patched
    monkeypatch.setattr(silhouette, "_cores", lambda: 2)  # (the note's count of this machine's cores)
    monkeypatch.setattr(cost, "_cores", lambda: 2)
    n, d = 10**6, 384
    local = _cost_note("silhouette_score", n, d, distributed=(2, True))
    tiled = cost.estimate_tiled_seconds("silhouette_score", n, d, tile_rows=4096, threads=2)
    assert f"about {format_duration(tiled)} on the dask path on 2 threads of this machine." in local, local
    assert "in memory" not in local and "--scheduler" not in local
    sample = int(re.search(r"--sample-size (\d+) takes about ([^.;]+)\.", local).group(1))
    assert 8 <= cost.estimate_tiled_seconds("silhouette_score", sample, d, tile_rows=4096, threads=2) <= 12  # (2 digits)
    remote = _cost_note("silhouette_score", n, d, distributed=(64, False))
    tiled = cost.estimate_tiled_seconds("silhouette_score", n, d, tile_rows=4096, threads=64)
    assert f"about {format_duration(tiled)} on the cluster's 64 worker threads at this machine's speed per core." in \
        remote, remote
    assert _cost_note("silhouette_score", n, d, distributed=True) == _cost_note("silhouette_score", n, d,
                                                                                 distributed=(None, True))
    crowded = _cost_note("silhouette_score", n, d, distributed=(8, True))  # more local workers than cores
    assert "on the dask path, its 8 workers sharing this machine's 2 cores." in crowded, crowded
    empty = _cost_note("silhouette_score", n, d, distributed=(0, False))  # a cluster with no worker yet
    assert "on one worker thread at this machine's speed (the cluster has no worker yet)." in empty, empty
    from isotropy.measure.distributed import open_cluster

    with open_cluster(None, None) as where:  # dask's threaded scheduler: this machine's cores
        assert where["threads"] == (2, True, True)  # the tiles run on this process's threads
    mle = _cost_note("mle_dimension", n, d, distributed=(2, True), names=["twonn_dimension", "mle_dimension"])
    want = cost.estimate_tiled_seconds("mle_dimension", n, d, tile_rows=8192, threads=2)
    assert f"about {format_duration(want)} on the dask path on 2 threads" in mle, mle
    # dask's threaded scheduler (open_cluster's third element): the search's factors of tiles in this process
    monkeypatch.setattr(cost, "_TILED_SEARCH_IN_PROCESS", tuple(4 * rho for rho in cost._TILED_SEARCH))
    threaded = _cost_note("mle_dimension", n, d, distributed=(2, True, True), names=["twonn_dimension", "mle_dimension"])
    assert f"about {format_duration(4 * want)} on the dask path on 2 threads" in threaded, threaded
    in_memory = _cost_note("silhouette_score", n, d)
    assert f"about {format_duration(estimate_seconds('silhouette_score', n, d))} on this machine." in in_memory


def test_cost_note_on_a_cluster_does_not_advise_numba_from_this_machine(monkeypatch):
    """numba missing here says nothing of a cluster's workers, which follow their own installation; local workers and
    the threaded scheduler run this installation."""
    from isotropy._kernels import neighbors
    from isotropy.measure.report import _cost_note

    monkeypatch.setenv("ISOTROPY_JIT", "auto")
    monkeypatch.setattr(neighbors, "_installed", lambda name: name != "numba")
    n, d = 400_000, 16  # narrow rows, many pairs: the compiled loops' gain is large here
    local = _cost_note("mle_dimension", n, d, distributed=(2, True), n_neighbors=100)
    assert "with numba" in local, local
    remote = _cost_note("mle_dimension", n, d, distributed=(64, False), n_neighbors=100)
    assert "with numba" not in remote, remote
