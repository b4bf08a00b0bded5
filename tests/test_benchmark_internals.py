"""The private kernels the benchmarks time run as the benchmarks call them.

``benchmarks/`` is not run by the test suite (minutes per script), but some benchmarks time the
package's private tile kernels directly; a change of their signatures broke ``bench_dask.py`` without a
failing test. Here the benchmark's own tile-timing function runs on a small array.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from _benchmarks import BENCHMARKS
from _benchmarks import load_benchmark as _load

import isotropy


def test_bench_dask_times_the_tiles_of_every_computation(monkeypatch):
    bench = _load("bench_dask", monkeypatch)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(96, 8)).astype(np.float32)
    labels = rng.integers(0, 3, 96)
    costs = bench._tile_costs(X, labels, {"silhouette": 32, "knn": 32, "mle": 32}, repeats=1)
    expected = {(name, 32) for name in ("floor", "silhouette", "silhouette_diagonal", "silhouette_memory", "knn",
                                        "knn_diagonal", "knn_memory", "mle", "mle_diagonal", "mle_memory")}
    assert expected <= set(costs) and all(costs[key] >= 0 for key in expected)
    assert set(costs["loops"]) == {10, 20}


def test_bench_nearest_center_runs_and_its_labels_agree_with_the_peer(monkeypatch, capsys):
    bench = _load("bench_nearest_center", monkeypatch)
    monkeypatch.setattr(sys, "argv", ["bench", "--n", "600", "--d", "8", "--k", "5", "--repeats", "1"])
    bench.main()
    out = capsys.readouterr().out
    assert "| nearest_center |" in out and "labels agree on 100.0000% of the rows" in out


def test_bench_calibration_prints_both_calibrations_and_their_ratio(monkeypatch, capsys):
    """The script that measured cost._TO_FITTED_UNITS runs against the package's calibration as it is."""
    bench = _load("bench_calibration", monkeypatch)
    bench.main(["--rounds", "1"])
    out = capsys.readouterr().out
    assert "| fitted with (median of 7 single calls, all BLAS threads) |" in out
    assert "| measured_speed (median of 5 windows of 15 / 8 ms, one BLAS thread x cores) |" in out
    assert "fitted with / measured_speed (cost._TO_FITTED_UNITS): (" in out


def test_bench_contrastive_times_both_metrics_and_agrees_with_the_papers_formulas(monkeypatch, capsys):
    """The torch uniformity/alignment benchmark runs, and ours equals the reference formulas in float64 on its rows
    (to the float32 rounding of the value it returns for float32 rows)."""
    bench = _load("bench_contrastive", monkeypatch)
    bench.main(["--sizes", "16,40", "--d", "8", "--repeat", "1"])
    rows = [line.split("|")[1:-1] for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    cases = {(cells[0].strip(), cells[1].strip()): float(cells[-1]) for cells in rows[1:]}
    assert set(cases) == {(metric, n) for metric in ("uniformity", "alignment") for n in ("16", "40")}
    assert all(0 <= gap <= 2.0**-24 for gap in cases.values()), cases


def test_every_benchmark_script_answers_help_without_running(tmp_path):
    """Each script of benchmarks/ prints its usage for --help and exits 0 before any work: supersense_dynamics.py read
    '--help' as its output folder and started a run into it."""
    import subprocess

    scripts = sorted(p for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_"))
    assert len(scripts) >= 16
    for script in scripts:
        run = subprocess.run([sys.executable, str(script), "--help"], cwd=tmp_path, capture_output=True, text=True,
                             timeout=300, check=False)
        assert run.returncode == 0 and run.stdout.startswith("usage:"), (script.name, run.stderr[-500:])
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_bench_neighbors_floor_picks_its_fastest_block_once_per_shape_and_forms_every_upper_block(monkeypatch, capsys):
    bench = _load("bench_neighbors_floor", monkeypatch)
    X = np.random.default_rng(0).normal(size=(2500, 8)).astype(np.float32)
    chosen = bench._floor_block(X)
    assert chosen[0] in bench._FLOOR_BLOCKS and chosen[1] in (False, True)
    assert "the floor runs" in capsys.readouterr().out
    assert bench._floor_block(X) == chosen and capsys.readouterr().out == ""  # cached: timed and printed once
    formed = []
    real = np.matmul

    def counting(a, b, out=None):
        formed.append((a.shape[0], b.shape[1]))
        return real(a, b, out=out)

    monkeypatch.setattr(bench.np, "matmul", counting)
    bench._floor(X, 1024)  # blocks 1024, 1024, 452 rows: the 6 on and above the diagonal
    whole = [(1024, 1024), (1024, 1024), (1024, 452), (1024, 1024), (1024, 452), (452, 452)]
    assert sorted(formed) == sorted(whole)
    formed.clear()
    bench._floor(X, 1024, True)  # each diagonal block as its two halves and the block between them
    halves = [(512, 512)] * 6 + [(226, 226)] * 3
    assert sorted(formed) == sorted([(1024, 1024), (1024, 452), (1024, 452), *halves])


def test_supersense_dynamics_records_its_command_seed_settings_and_versions(monkeypatch):
    """``dynamics.json`` (committed under docs/runs/classifier-geometry/supersense-dynamics/, read by the docs) recorded
    its numbers only: no command, seed, settings or package versions, which every committed run output must carry."""
    import importlib.metadata
    import json

    bench = _load("supersense_dynamics", monkeypatch)
    record = bench.run_record(["/somewhere/supersense_dynamics.py", "results/supersense-dynamics"])
    assert record["command"] == "python benchmarks/supersense_dynamics.py results/supersense-dynamics"
    assert (record["seed"], record["updates"], record["isoscore_every"]) == (0, 1000, 20)
    assert record["versions"]["numpy"] == importlib.metadata.version("numpy")
    assert record["versions"]["torch"] == importlib.metadata.version("torch")
    committed = Path(__file__).resolve().parent.parent / "docs" / "runs" / "classifier-geometry" / \
        "supersense-dynamics" / "dynamics.json"
    stored = json.loads(committed.read_text())["record"]
    assert stored["command"].startswith("python benchmarks/supersense_dynamics.py ")
    assert stored["seed"] == 0 and stored["versions"]["torch"]


def test_bench_dimension_writes_its_rows_verdicts_and_what_ran(monkeypatch, tmp_path):
    """The docs' benchmarks summary typed this script's printed numbers; ``--json`` now records its rows, each with the
    verdict of the rule fixed in the script, and the command, date and versions, for the docs' value markers."""
    import json

    import skdim

    from isotropy import twonn_dimension

    bench = _load("bench_dimension", monkeypatch)
    path = tmp_path / "out" / "bench.json"
    rows = bench.main(["--n", "400", "--d", "12", "--repeats", "1", "--json", str(path)])
    record = json.loads(path.read_text())
    assert record["rows"] == rows and [r["case"] for r in rows] == ["twonn", "mle", "local_mle"]
    assert record["command"] == f"python benchmarks/bench_dimension.py --n 400 --d 12 --repeats 1 --json {path}"
    assert record["versions"]["scikit-dimension"] and record["n"] == 400 and record["d"] == 12
    X = bench.low_rank_data(400, 12)
    twonn = rows[0]
    assert twonn["ours_value"] == twonn_dimension(X)
    assert abs(twonn["peer_value"] - skdim.id.TwoNN().fit(X).dimension_) < 1e-12
    assert twonn["ratio_wall"] == twonn["peer_wall_s"] / twonn["ours_wall_s"]
    for row in rows:
        expected = "no target" if row["target"] is None else "met" if row["ratio_wall"] >= row["target"] else "not met"
        assert row["verdict"] == expected
    assert bench.verdict(5.0, 5.0) == "met" and bench.verdict(4.99, 5.0) == "not met"


def test_bench_silhouette_and_isoscore_write_their_rows_verdicts_and_what_ran(monkeypatch, tmp_path):
    """The docs' benchmarks summary reads these scripts' ``--json`` records (docs/runs/benchmarks/): each row's values
    against the peer computed here, each verdict by the rule its script fixes, and the command that ran."""
    import json

    from IsoScore import IsoScore as pkg
    from sklearn.metrics import silhouette_score as sk_score

    silhouette = _load("bench_silhouette", monkeypatch)
    path = tmp_path / "silhouette.json"
    argv = ["--n", "300", "--d", "8", "--clusters", "2", "3", "--repeats", "1", "--memory-d", "8", "--json", str(path)]
    rows = silhouette.main(argv)
    record = json.loads(path.read_text())
    assert record["rows"] == rows and [r["k"] for r in rows] == [2, 3]
    assert record["command"] == "python benchmarks/bench_silhouette.py " + " ".join(argv)
    for row in rows:
        X, labels = silhouette.blobs(300, 8, row["k"])
        assert row["score_diff_sklearn"] == pytest.approx(abs(isotropy.silhouette_score(X, labels) - sk_score(X, labels)),
                                                          abs=1e-12)
        assert row["target"] == silhouette.SPEEDUP_TARGET
        assert row["verdict"] == ("met" if row["speedup"] >= row["target"] else "not met")
    memory = record["memory"]
    assert (memory["n"], memory["d"], memory["target_mib"]) == (300, 8, silhouette.MEMORY_TARGET_MIB)
    assert memory["verdict"] == ("not measured" if memory["vmhwm_extra_mib"] is None else
                                 "met" if memory["vmhwm_extra_mib"] < memory["target_mib"] else "not met")

    bench = _load("bench_isoscore", monkeypatch)
    path = tmp_path / "isoscore.json"
    rows = bench.main(["--repeats", "1", "--sizes", "200x6", "12x40", "--json", str(path)])
    record = json.loads(path.read_text())
    assert record["rows"] == rows and [(r["n"], r["d"]) for r in rows] == [(200, 6), (12, 40)]
    assert record["faster_at"] == bench.FASTER and record["versions"]["isoscore"]
    for row in rows:
        X = bench._data(row["n"], row["d"])
        reference = bench._eigen_reference(X)
        assert row["ours_abs_error"] == abs(isotropy.isoscore(X) - reference)
        assert row["package_abs_error"] == pytest.approx(abs(float(pkg.IsoScore(X)) - reference), abs=1e-15)
        assert row["ratio_low"] <= row["ratio"] <= row["ratio_high"]
        assert row["verdict"] == bench.verdict(row["ratio_low"], row["ratio_high"])
    assert [bench.verdict(*interval) for interval in ((1.05, 1.2), (0.97, 1.03), (0.8, 1 / 1.05), (1.01, 1.1))] == [
        "met", "parity", "not met", "not established"]
    with pytest.raises(SystemExit):
        bench.main(["--sizes", "20000by384"])


def test_verdicts_at_most_read_the_interval_of_the_rounds(monkeypatch):
    """Goals of the form "at most" (issue 20: the floor ratios, the table against TwoNN alone, the shards, GGUF,
    measure --model, the callback's overhead) are judged on the interval of the per-round ratios, never on one
    round: quartiles from four rounds on, else the least and greatest; rounds on both sides establish nothing."""
    common = _load("_common", monkeypatch)
    assert common.round_interval([1.3, 1.1]) == (1.1, 1.3)
    assert common.round_interval([5.0]) == (5.0, 5.0)
    assert common.round_interval([1, 2, 3, 4, 5]) == (2.0, 4.0)  # inclusive quartiles of five rounds
    assert [common.verdict_at_most(*interval, 1.2) for interval in ((1.0, 1.2), (1.21, 1.4), (1.1, 1.3))] == [
        "met", "not met", "not established"]
    with pytest.raises(ValueError, match="no rounds"):
        common.round_interval([])
