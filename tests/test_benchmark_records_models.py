"""``--json`` records of issue 20's model benchmarks: GGUF conversion (item 4) and ``measure --model`` (item 5).

The docs' benchmarks summary reads committed records (docs/runs/benchmarks/) through value markers: each row's
ratio, its per-round ratios (each contender over the floor of the same round), their interval and the verdict on the
issue's goal. Here the scripts run end to end on tiny inputs (a tiny GGUF file written by the test; the packaged
MiniLM on 8 STS-B sentences), and the record-building functions on fabricated timings.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from _tiny_models import make_tiny_gemma_gguf

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"

pytest.importorskip("torch")  # the [test] extra brings torch, gguf and transformers


def _load(name, monkeypatch):
    monkeypatch.setattr(sys, "path", [str(BENCHMARKS), *sys.path])  # the scripts import their _common
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _assert_ratio_fields(row, floor_rounds, *, by_construction=True):
    """The row's ratios from its own recorded seconds: fastest over fastest, and each round over the same round's
    floor; with fewer than four rounds the interval is the least and greatest round, which hold the ratio."""
    assert row["ratio"] == min(row["round_seconds"]) / min(floor_rounds)
    assert row["round_ratios"] == [s / f for s, f in zip(row["round_seconds"], floor_rounds, strict=True)]
    if by_construction:
        assert (row["ratio_low"], row["ratio_high"]) == (min(row["round_ratios"]), max(row["round_ratios"]))
        assert row["ratio_low"] <= row["ratio"] <= row["ratio_high"]


def test_bench_gguf_records_each_conversion_against_the_floor_of_its_round(monkeypatch, tmp_path):
    """Issue 20, item 4: the conversion at most 1.5 times the ``gguf`` package's reader plus dequantising every tensor,
    in the same run. Round r runs the floor and then each contender; the record holds every step's ratio, its
    per-round ratios, their interval and the verdict, and the floor dequantised every value of the file."""
    bench = _load("bench_gguf", monkeypatch)
    verdict_at_most = _load("_common", monkeypatch).verdict_at_most
    gguf_path, state = make_tiny_gemma_gguf(tmp_path / "tiny.gguf")
    calls = []
    for name in ("_floor", "_convert", "_cold_load"):
        original = getattr(bench, name)

        def spy(*args, _original=original, _name=name, **kwargs):
            calls.append((_name, kwargs.get("through_transformers")))
            return _original(*args, **kwargs)

        monkeypatch.setattr(bench, name, spy)
    monkeypatch.setenv("ISOTROPY_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "runs" / "gguf.json"
    argv = ["--gguf", str(gguf_path), "--repeat", "2", "--json", str(out)]
    returned = bench.main(argv)
    record = json.loads(out.read_text())

    assert record == returned and record["command"] == "python benchmarks/bench_gguf.py " + " ".join(argv)
    assert record["gguf"] == "tiny.gguf" and record["repeat"] == 2 and record["versions"]["isotropy-source"]
    assert bench.os.environ["ISOTROPY_CACHE"] == str(tmp_path / "cache")  # the cold load put it back
    # one untimed warm-up conversion, then two rounds, each the floor first and then every contender
    round_calls = [("_floor", None), ("_convert", True), ("_convert", False), ("_cold_load", None)]
    assert calls == [("_convert", False), *round_calls, *round_calls]
    # the floor dequantised every tensor the file holds (the LM head is tied to the embedding: not stored)
    assert record["floor_values"] == sum(t.numel() for name, t in state.items() if name != "lm_head.weight")

    rows = record["rows"]
    assert [row["step"] for row in rows] == ["floor", "before", "after", "cold_load"]
    assert bench.GOAL == 1.5 and record["goal"] == 1.5
    assert {row["step"]: row["goal"] for row in rows} == {"floor": None, "before": 1.5, "after": 1.5, "cold_load": None}
    floor = rows[0]["round_seconds"]
    assert len(floor) == 2 and rows[0]["round_ratios"] == [1.0, 1.0]
    for row in rows:
        assert len(row["round_seconds"]) == 2 and row["seconds"] == min(row["round_seconds"])
        _assert_ratio_fields(row, floor)
        expected = "no goal" if row["goal"] is None else verdict_at_most(row["ratio_low"], row["ratio_high"], row["goal"])
        assert row["verdict"] == expected
    with pytest.raises(SystemExit):
        bench.main(["--gguf", str(gguf_path), "--repeat", "0"])


def test_bench_gguf_rows_read_the_quartiles_of_five_rounds(monkeypatch):
    """From four rounds on the interval is the quartiles of the per-round ratios: a step whose rounds straddle 1.5 is
    not established, whatever its fastest over the fastest floor says."""
    bench = _load("bench_gguf", monkeypatch)
    seconds = {"floor": [10.0, 10.0, 10.0, 10.0, 20.0], "before": [30.0, 31.0, 32.0, 33.0, 60.0],
               "after": [12.0, 14.0, 15.0, 16.0, 36.0], "cold_load": [11.0, 12.0, 13.0, 14.0, 30.0]}
    rows = {row["step"]: row for row in bench.rows_from_rounds(seconds)}
    after = rows["after"]
    assert after["round_ratios"] == [1.2, 1.4, 1.5, 1.6, 1.8] and after["ratio"] == 1.2
    assert (after["ratio_low"], after["ratio_high"]) == pytest.approx((1.4, 1.6))
    assert after["verdict"] == "not established"
    assert rows["before"]["verdict"] == "not met" and rows["cold_load"]["verdict"] == "no goal"
    assert bench.rows_from_rounds({**seconds, "after": [9.0, 9.0, 9.0, 9.0, 18.0]})[2]["verdict"] == "met"
