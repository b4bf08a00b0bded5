"""``isotropy measure DIR --workers 2`` on many one-row shards against the same rows in one file, in one run.

Writes ``--n-shards`` one-row ``.npy`` shards (float32, ``--dim`` features) and one ``.npy`` file of
the same rows, then times ``isotropy measure`` (default metrics, in this process through click's
runner, a ``LocalCluster`` of ``--workers`` processes each time) on

- **now**: the shard directory as :func:`isotropy.io.shards.read_shards` reads it now (shards
  cut and joined into chunks of about 64 MiB before any metric runs, here one chunk; each ``.npy``
  header read once, its rows then read with one plain read, no memory map), read once and held by
  the workers for every metric (an input this small: ``held_by_workers`` in the JSON);
- **a1f8c9e**: the same directory read by ``read_shards`` as of commit ``--previous`` (default
  a1f8c9e: coalesced, but each shard opened twice, through a memory map, and the list of shards
  checked once per shard), loaded from ``git show`` and patched in for that run;
- the one file of the same rows;

interleaved for ``--repeats`` rounds (minimum of each), and

- **before coalescing**: the same directory read one chunk per shard (``_CHUNK_BYTES`` set to one
  byte, which for one-row shards is the graph of the reader before coalescing: one task per
  shard), and read again by each metric (nothing held, as then), on ``--before-shards`` shards (default 300: the 1,500-shard run did not finish in 300 s;
  0 skips it), against the one file of those rows, once;

and prints the ratios shards / one file. The values of each are equal to the one file's (checked here and in
tests/test_distributed_shards.py). Timings on a shared machine are noisy; compare the ratios.

``--json PATH`` also writes the rows (``now``; ``previous``, with its commit; ``before_coalescing``), each with the
ratio printed (fastest over fastest), its seconds, the per-round ratios (each round's shards time over the same
round's one-file time), their interval (``_common.round_interval``) and the verdict on ``SHARDS_GOAL`` (issue 20:
at most 1.5, fixed here before any run), with the one file's values and what ran (``_common.write_record``). The
before-coalescing row is one run on ``--before-shards`` shards: its interval is that one ratio.

    nice -n 10 .venv/bin/python benchmarks/bench_shards.py [--json PATH]
"""

from __future__ import annotations

import argparse
import inspect
import json
import subprocess
import tempfile
from pathlib import Path

import numpy as np
from _common import low_rank_data, round_interval, timed, verdict_at_most, write_record

# Issue 20, item 3: "`--workers 2` on 1,500 one-row shards costs at most 1.5× the same rows in one file with
# `--workers 2`". Fixed here before any run; every row is judged against it (the older readers too, for the
# closing note's before and after).
SHARDS_GOAL = 1.5


def _measure(source: Path, out: Path, workers: int) -> dict:
    from click.testing import CliRunner

    from isotropy.cli import cli

    result = CliRunner().invoke(cli, ["measure", str(source), "--workers", str(workers), "--no-progress",
                                      "--json", str(out)])
    if result.exit_code != 0:
        raise RuntimeError(result.output)
    return json.loads(out.read_text())


def _same(a, b) -> bool:
    """Equal values of the JSON (``null``, a metric's non-finite value or error, equal to ``null`` only)."""
    if a is None or b is None:
        return a is None and b is None
    return bool(np.isclose(a, b, rtol=1e-9, equal_nan=True))


def _write(root: Path, X: np.ndarray, name: str) -> tuple[Path, Path]:
    shards = root / f"shards-{name}"
    shards.mkdir()
    for i, row in enumerate(X):
        np.save(shards / f"part-{i:05d}.npy", row[None])
    single = root / f"one-file-{name}.npy"
    np.save(single, X)
    return shards, single


def _previous_reader(commit: str):
    """``read_shards`` of ``commit`` (``git show``), a module outside ``sys.modules`` (pickled by value to the workers)."""
    import types

    root = Path(__file__).resolve().parents[1]
    source = subprocess.run(["git", "show", f"{commit}:isotropy/io/shards.py"], cwd=root, capture_output=True,
                            text=True, check=True).stdout
    module = types.ModuleType(f"shards_{commit}")
    exec(compile(source, f"shards_{commit}.py", "exec"), module.__dict__)  # noqa: S102 -- our own history
    old = module.read_shards
    parameters = inspect.signature(old).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    accepted = {key for key in parameters} if not takes_any else None

    def read_shards(*args, **kwargs):
        # the command passes keywords the old reader did not have (label_column, ...): left out while they are unset
        if accepted is None:
            return old(*args, **kwargs)
        later = {key: value for key, value in kwargs.items() if key not in accepted}
        if any(value not in (None, False) for value in later.values()):
            raise RuntimeError(f"read_shards of {commit} has no {sorted(later)}, set here to {later}")
        return old(*args, **{key: value for key, value in kwargs.items() if key in accepted})

    return read_shards


def _row(case, reader, commit, n_shards, chunks, shards_rounds, one_rounds, ratio):
    """One comparison of the record: its seconds per round, the ratio the script prints (``ratio``), the per-round
    ratios (each round's shards time over the same round's one-file time), their interval and the verdict on
    :data:`SHARDS_GOAL`."""
    rounds = [s / o for s, o in zip(shards_rounds, one_rounds)]
    low, high = round_interval(rounds)
    return {"case": case, "reader": reader, "commit": commit, "n_shards": n_shards, "chunks": chunks,
            "shards_s": min(shards_rounds), "one_file_s": min(one_rounds), "shards_rounds_s": list(shards_rounds),
            "one_file_rounds_s": list(one_rounds), "ratio": ratio, "rounds": rounds, "ratio_low": low,
            "ratio_high": high, "goal": SHARDS_GOAL, "verdict": verdict_at_most(low, high, SHARDS_GOAL)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-shards", type=int, default=1500)
    parser.add_argument("--before-shards", type=int, default=300)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--previous", default="a1f8c9e", help="commit whose read_shards is the 'previous' row")
    parser.add_argument("--json", metavar="PATH",
                        help="also write the rows, each goal's verdict and what ran as JSON to PATH")
    args = parser.parse_args(argv)
    for option, value, low in (("--n-shards", args.n_shards, 1), ("--before-shards", args.before_shards, 0),
                               ("--dim", args.dim, 1), ("--workers", args.workers, 1), ("--repeats", args.repeats, 1)):
        if value < low:
            parser.error(f"{option} must be at least {low}. Got {option} {value}.")
    if args.before_shards > args.n_shards:
        parser.error(f"--before-shards must be at most --n-shards ({args.n_shards}: its rows are the first of "
                     f"those). Got --before-shards {args.before_shards}.")
    if args.previous in ("now", "one file"):
        parser.error(f"--previous must name a commit, not a row of the table. Got --previous {args.previous!r}.")
    from isotropy.io import shards as shards_module

    X = low_rank_data(args.n_shards, args.dim)
    try:
        previous = _previous_reader(args.previous)
    except subprocess.CalledProcessError as error:
        parser.error(f"--previous: git show {args.previous}:isotropy/io/shards.py failed: "
                     f"{error.stderr.strip().splitlines()[-1] if error.stderr.strip() else error}")
    current = shards_module.read_shards
    times = {"now": [], args.previous: [], "one file": []}
    values = {}
    with tempfile.TemporaryDirectory() as work:
        root = Path(work)
        _measure(_write(root, X[:100], "warm")[1], root / "warm.json", args.workers)  # imports, not timed
        shards, single = _write(root, X, "timed")
        for _ in range(args.repeats):
            for label, reader, source in (("now", current, shards), (args.previous, previous, shards),
                                          ("one file", current, single)):
                shards_module.read_shards = reader
                try:
                    values[label], seconds, _ = timed(lambda: _measure(source, root / "m.json", args.workers))  # noqa: B023
                finally:
                    shards_module.read_shards = current
                times[label].append(seconds)
        for label in ("now", args.previous):
            for name, value in values["one file"]["values"].items():
                if not _same(values[label]["values"][name], value):
                    raise AssertionError(f"{label}: {name} {values[label]['values'][name]} != {value}")
        coalescing = None
        if args.before_shards:
            shards_b, single_b = _write(root, X[:args.before_shards], "before")
            from isotropy.measure import distributed as measure_distributed

            default, hold = shards_module._CHUNK_BYTES, measure_distributed._HOLD_BYTES
            shards_module._CHUNK_BYTES, measure_distributed._HOLD_BYTES = 1, 0  # one task per shard, read per metric
            try:
                sharded, t_shards, _ = timed(lambda: _measure(shards_b, root / "s.json", args.workers))
            finally:
                shards_module._CHUNK_BYTES, measure_distributed._HOLD_BYTES = default, hold
            one, t_one, _ = timed(lambda: _measure(single_b, root / "o.json", args.workers))
            for name, value in one["values"].items():
                if not _same(sharded["values"][name], value):
                    raise AssertionError(f"before coalescing: {name} {sharded['values'][name]} != {value}")
            coalescing = (sharded["chunking"]["n_chunks"], t_shards, t_one)
    best = {label: min(t) for label, t in times.items()}
    print(f"isotropy measure --workers {args.workers}, default metrics, {args.dim} float32 features; "
          f"min of {args.repeats} interleaved runs\n")
    print("| reader | one-row shards | chunks | shards s | one file s | shards / one file |\n"
          "|---|---:|---:|---:|---:|---:|")
    for label in ("now", args.previous):
        print(f"| {label} | {args.n_shards} | {values[label]['chunking']['n_chunks']} | {best[label]:.2f} | "
              f"{best['one file']:.2f} | {best[label] / best['one file']:.2f} |")
    if coalescing:
        chunks, t_shards, t_one = coalescing
        print(f"| before coalescing (1 run) | {args.before_shards} | {chunks} | {t_shards:.1f} | {t_one:.1f} | "
              f"{t_shards / t_one:.2f} |")
    rows = [_row("now", "read_shards of this checkout", None, args.n_shards, values["now"]["chunking"]["n_chunks"],
                 times["now"], times["one file"], best["now"] / best["one file"]),
            _row("previous", f"read_shards of {args.previous}", args.previous, args.n_shards,
                 values[args.previous]["chunking"]["n_chunks"], times[args.previous], times["one file"],
                 best[args.previous] / best["one file"])]
    if coalescing:
        rows.append(_row("before_coalescing", "read_shards of this checkout, one chunk per shard and read again by "
                         "each metric (the graph before coalescing), one run", None, args.before_shards, chunks,
                         [t_shards], [t_one], t_shards / t_one))
    record = {"n_shards": args.n_shards, "before_shards": args.before_shards, "dim": args.dim, "dtype": "float32",
              "workers": args.workers, "repeats": args.repeats, "previous": args.previous, "goal": SHARDS_GOAL,
              "statistic": "ratio: the fastest shards run over the fastest one-file run, as printed; rounds: each "
                           "round's shards time over the same round's one-file time (interleaved), ratio_low and "
                           "ratio_high their interval (_common.round_interval), the verdict read from it",
              "values": values["one file"]["values"], "rows": rows}
    if args.json:
        return write_record(args.json, record, argv=None if argv is None else [__file__, *argv])
    return record


if __name__ == "__main__":
    main()
