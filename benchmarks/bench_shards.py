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

    nice -n 10 .venv/bin/python benchmarks/bench_shards.py
"""

from __future__ import annotations

import argparse
import inspect
import json
import tempfile
from pathlib import Path

import numpy as np
from _common import low_rank_data, timed


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


def _write(root: Path, X: np.ndarray) -> tuple[Path, Path]:
    shards = root / f"shards-{len(X)}"
    shards.mkdir()
    for i, row in enumerate(X):
        np.save(shards / f"part-{i:05d}.npy", row[None])
    single = root / f"one-file-{len(X)}.npy"
    np.save(single, X)
    return shards, single


def _previous_reader(commit: str):
    """``read_shards`` of ``commit`` (``git show``), a module outside ``sys.modules`` (pickled by value to the workers)."""
    import subprocess
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-shards", type=int, default=1500)
    parser.add_argument("--before-shards", type=int, default=300)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--previous", default="a1f8c9e", help="commit whose read_shards is the 'previous' row")
    args = parser.parse_args()
    from isotropy.io import shards as shards_module

    X = low_rank_data(args.n_shards, args.dim)
    current, previous = shards_module.read_shards, _previous_reader(args.previous)
    times = {"now": [], args.previous: [], "one file": []}
    values = {}
    with tempfile.TemporaryDirectory() as work:
        root = Path(work)
        _measure(_write(root, X[:100])[1], root / "warm.json", args.workers)  # imports, not timed
        shards, single = _write(root, X)
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
            shards_b, single_b = _write(root, X[:args.before_shards])
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


if __name__ == "__main__":
    main()
