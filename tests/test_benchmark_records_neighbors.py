"""``benchmarks/bench_neighbors_floor.py --json``: the record the docs' summary reads for issue 20's goals.

The script printed its ratios (the neighbour family against the half-GEMM floor; the default ``isotropy measure``
table against TwoNN alone, and its peak memory) and the docs typed them. ``--json`` now writes each ratio as printed
with its rounds, their interval, the goal fixed in the script and the verdict, and what ran. Here the script runs on
tiny data (the verdicts there say nothing about the kernels; what is checked is that each one follows its rule).
"""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest
from _benchmarks import BENCHMARKS
from _benchmarks import load_benchmark as _load

ROOT = BENCHMARKS.parent


def test_the_goals_are_issue_20s(monkeypatch):
    """Issue 20: "each at most 1.2× the half-GEMM floor"; "the default table costs at most 1.3× TwoNN alone, and its
    peak memory is at most 2× the input plus the interpreter's own"."""
    bench = _load("bench_neighbors_floor", monkeypatch)
    assert (bench.FLOOR_GOAL, bench.TABLE_GOAL, bench.MEMORY_GOAL) == (1.2, 1.3, 2.0)


def test_rows_pair_each_round_with_its_own_floor_and_peer(monkeypatch):
    """Each round's ratio is that round's kernel over that round's fastest floor (the floor runs before each kernel
    and after the last), and the table over TwoNN alone in the same round; the verdict reads their interval."""
    bench = _load("bench_neighbors_floor", monkeypatch)
    same = {"against": "after", "bit_for_bit": True, "indices_equal": True, "max_relative_difference": 0.0}
    row = bench._kernel_row("mle", 20, "abc1234, compiled", [1.1, 3.0], [[2.0, 1.0, 3.0], [4.0, 2.0, 2.5]], same)
    assert (row["case"], row["k"], row["checkout"], row["loops"], row["label"]) == (
        "mle", 20, "abc1234", "compiled", "abc1234, compiled")
    assert row["floor_s"] == [1.0, 2.0] and row["ratio_rounds"] == [1.1, 1.5]
    assert row["ratio"] == 1.1  # printed: fastest kernel (1.1) over fastest floor (1.0)
    assert (row["ratio_low"], row["ratio_high"], row["goal"], row["verdict"]) == (1.1, 1.5, 1.2, "not established")
    assert row["values_against"] == "after" and row["values_bit_for_bit"] is True
    this = bench._kernel_row("twonn", 2, "after", [1.0, 1.1, 1.0, 1.3, 0.9], [[1.0, 1.0]] * 5, None)
    assert (this["checkout"], this["loops"], this["values_against"], this["values_bit_for_bit"]) == (
        "this", "numpy", None, None)
    assert (this["ratio_low"], this["ratio_high"], this["verdict"]) == (1.0, 1.1, "met")  # quartiles of five rounds
    mib = 2**20
    run = {"table": [(1.2, 3.0), (2.8, 4.0)], "alone": [(1.0, 2.0), (2.0, 2.5)],
           "peaks": [110 * mib, 104 * mib], "interpreter_bytes": 100 * mib}
    measured = bench._measure_row("abc1234 (/some/dir)", "abc1234", None, run, 4 * mib)
    assert (measured["checkout"], measured["jit"]) == ("abc1234", "auto")
    assert measured["seconds_ratio_rounds"] == pytest.approx([1.2, 1.4]) and measured["seconds_ratio"] == 1.2
    assert (measured["seconds_goal"], measured["seconds_verdict"]) == (1.3, "not established")
    assert measured["whole_ratio"] == 1.5 and measured["whole_ratio_rounds"] == [1.5, 1.6]
    assert measured["memory_ratio_rounds"] == [2.5, 1.0] and measured["memory_ratio"] == 1.0
    assert (measured["memory_goal"], measured["memory_verdict"]) == (2.0, "not established")
    assert (measured["input_mib"], measured["interpreter_mib"], measured["peak_mib"]) == (4.0, 100.0, [110.0, 104.0])


def test_bench_neighbors_floor_writes_both_goals_rows_verdicts_and_what_ran(monkeypatch, tmp_path, capsys):
    """One run of both parts (the default) with this checkout also as ``--compare``: the kernel rows per case and
    kernel, the measure rows per checkout, each ratio as printed with its rounds, interval, goal and verdict."""
    from isotropy._kernels.neighbors import exact_knn

    bench = _load("bench_neighbors_floor", monkeypatch)
    common = _load("_common", monkeypatch)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True, capture_output=True,
                            text=True).stdout.strip()
    path = tmp_path / "out" / "bench.json"
    argv = ["--n", "600", "--d", "16", "--repeat", "2", "--compare", str(ROOT), "--json", str(path)]
    returned = bench.main(argv)
    record = json.loads(path.read_text())
    assert record == returned
    assert record["command"] == "python benchmarks/bench_neighbors_floor.py " + " ".join(argv)
    assert (record["n"], record["d"], record["repeat"], record["compare"]) == (
        600, 16, 2, [{"dir": str(ROOT), "commit": commit}])
    assert (record["floor_goal"], record["table_goal"], record["memory_goal"]) == (1.2, 1.3, 2.0)
    assert record["versions"]["numpy"] and record["source_commit"]
    assert record["floor"]["rows_per_block"] in bench._FLOOR_BLOCKS and len(record["floor"]["tried_s"]) == 6

    kernels = record["kernels"]
    columns = [(commit, "numpy", commit), (commit, "compiled", f"{commit}, compiled"), ("this", "numpy", "after"),
               ("this", "compiled", "after, compiled")]
    assert [(r["case"], r["k"], r["checkout"], r["loops"], r["label"]) for r in kernels] == [
        (case, k, *column) for case, k in (("twonn", 2), ("mle", 20), ("kneighbors", 100)) for column in columns]
    printed = capsys.readouterr().out
    X = bench.low_rank_data(600, 16)
    for row in kernels:
        assert [len(runs) for runs in row["floor_runs_s"]] == [len(columns) + 1] * 2
        assert row["floor_s"] == [min(runs) for runs in row["floor_runs_s"]]
        assert row["ratio_rounds"] == [s / f for s, f in zip(row["kernel_s"], row["floor_s"])]
        assert row["ratio"] == min(row["kernel_s"]) / min(row["floor_s"])
        assert (row["ratio_low"], row["ratio_high"]) == common.round_interval(row["ratio_rounds"])
        assert row["ratio_low"] <= row["ratio"] <= row["ratio_high"]  # two rounds: the interval is their range
        assert row["goal"] == bench.FLOOR_GOAL
        assert row["verdict"] == common.verdict_at_most(row["ratio_low"], row["ratio_high"], row["goal"])
        if row["checkout"] == commit:  # the same code: the same bits as this checkout's same loops
            assert row["values_against"] == ("after, compiled" if row["loops"] == "compiled" else "after")
            assert row["values_bit_for_bit"] and row["values_indices_equal"]
            assert row["values_max_relative_difference"] == 0.0
        elif row["loops"] == "compiled":  # against the numpy loops, recomputed here
            with common.isotropy_jit("0"):
                d0, i0 = exact_knn(X, None, row["k"])
            with common.isotropy_jit("1"):
                d1, i1 = exact_knn(X, None, row["k"])
            assert row["values_against"] == "after" and row["values_indices_equal"] == np.array_equal(i0, i1) is True
            assert row["values_max_relative_difference"] == pytest.approx(
                float(np.max(np.abs(d1 - d0) / d0)), rel=1e-6, abs=1e-300)
            assert row["values_max_relative_difference"] < 1e-12
        else:
            assert row["values_against"] is None and row["values_bit_for_bit"] is None
    twonn = [f"{r['ratio']:.2f}" for r in kernels if r["case"] == "twonn"]
    assert f"| TwoNN | 2 | {' | '.join(twonn)} | " in printed  # the printed ratio is the recorded one

    measure = record["measure"]
    here = f"this checkout ({commit} + working tree)"
    expected = [(f"{commit} ({ROOT})", commit, "auto"), (here, "this", "auto")]
    if not record["auto_compiles"]:
        expected.append((f"{here}, ISOTROPY_JIT=1", "this", "1"))
    assert [(r["label"], r["checkout"], r["jit"]) for r in measure] == expected
    for row in measure:
        assert row["input_mib"] == X.nbytes / 2**20
        assert len(row["table_s"]) == len(row["twonn_alone_s"]) == len(row["peak_mib"]) == 2
        assert row["seconds_ratio_rounds"] == [t / a for t, a in zip(row["table_s"], row["twonn_alone_s"])]
        assert row["seconds_ratio"] == min(row["table_s"]) / min(row["twonn_alone_s"])
        assert row["seconds_ratio_low"] <= row["seconds_ratio"] <= row["seconds_ratio_high"]
        assert (row["seconds_ratio_low"], row["seconds_ratio_high"]) == common.round_interval(
            row["seconds_ratio_rounds"])
        assert row["seconds_goal"] == bench.TABLE_GOAL and row["seconds_verdict"] == common.verdict_at_most(
            row["seconds_ratio_low"], row["seconds_ratio_high"], row["seconds_goal"])
        assert row["whole_ratio"] == min(row["table_whole_s"]) / min(row["twonn_alone_whole_s"])
        assert row["memory_ratio_rounds"] == pytest.approx(
            [(peak - row["interpreter_mib"]) / row["input_mib"] for peak in row["peak_mib"]], rel=1e-12)
        assert row["memory_ratio"] == pytest.approx(min(row["memory_ratio_rounds"]), rel=1e-12)
        assert row["memory_goal"] == bench.MEMORY_GOAL and row["memory_verdict"] == common.verdict_at_most(
            row["memory_ratio_low"], row["memory_ratio_high"], row["memory_goal"])
        assert f"| {row['label']} | {row['seconds_ratio']:.2f} | {row['whole_ratio']:.2f} | " \
               f"{row['memory_ratio']:.2f} |" in printed


@pytest.mark.parametrize("mode", [["--stages"], ["--live-memory"], ["--cold", "1000"]])
def test_json_is_refused_with_a_mode_that_measures_no_goal(monkeypatch, tmp_path, capsys, mode):
    bench = _load("bench_neighbors_floor", monkeypatch)
    path = tmp_path / "bench.json"
    with pytest.raises(SystemExit) as raised:
        bench.main(["--n", "600", "--d", "16", *mode, "--json", str(path)])
    assert raised.value.code == 2 and not path.exists()
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"error: argument --json: not allowed with {mode[0]} (it measures no goal of issue 20" in error


@pytest.mark.parametrize(("argv", "message"), [
    (["--measure-only", "--kernels-only"], "argument --kernels-only: not allowed with --measure-only"),
    (["--repeat", "0"], "argument --repeat: expected at least 1 round, got 0"),
])
def test_bad_combinations_are_refused_before_any_run(monkeypatch, capsys, argv, message):
    bench = _load("bench_neighbors_floor", monkeypatch)
    with pytest.raises(SystemExit) as raised:
        bench.main(argv)
    assert raised.value.code == 2 and message in capsys.readouterr().err


def test_two_compare_checkouts_at_one_commit_are_refused(monkeypatch, capsys, tmp_path):
    """Each --compare checkout's rows (and the kernels loaded from it) are named by its commit: a second checkout at
    the same commit overwrote the first's rows in silence; it is refused, naming both, before any run."""
    bench = _load("bench_neighbors_floor", monkeypatch)
    monkeypatch.setattr(bench, "_commit", lambda tree: "abc1234")
    with pytest.raises(SystemExit) as raised:
        bench.main(["--kernels-only", "--compare", str(tmp_path / "a"), "--compare", str(tmp_path / "b")])
    assert raised.value.code == 2
    assert (f"argument --compare: {tmp_path / 'a'} and {tmp_path / 'b'} are both at commit abc1234"
            in capsys.readouterr().err)
