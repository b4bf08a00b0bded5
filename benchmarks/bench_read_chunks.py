"""Benchmark: the chunks ``isotropy measure`` reads shards in on dask, 8192 rows at most against the reader's 64 MiB.

Writes float32 data near a 10-dimensional subspace (``--n`` x ``--d``) as ``.npy`` shards of 10,000 rows in a
temporary folder and runs the default table on it (``isotropy measure DIR --json OUT``, with ``--workers N`` unless
``--workers 0``: dask's threads in the command's process), each run in a fresh interpreter, alternating between the
two readings ``--repeat`` times: ``8192 rows``, the command's chunks (``isotropy.measure.distributed._chunk_limits``),
and ``64 MiB``, the reader's default (the limits left out). Prints per run the command's wall time, the most
resident memory of its own process and of its largest worker process (``ru_maxrss``), then each pair's time and
peak ratios (8192 rows over 64 MiB) and the largest relative difference of any value between the two readings.

    nice -n 5 .venv/bin/python benchmarks/bench_read_chunks.py [--n 80000] [--d 384] [--workers 2] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import low_rank_data

_SHARD_ROWS = 10_000
_MODES = ("8192 rows", "64 MiB")


def _child(mode: str, folder: str, workers: int, out: str) -> None:
    """One ``isotropy measure`` in this interpreter, reading in ``mode``; prints its wall time and peaks as JSON."""
    import resource

    from isotropy.cli import main
    from isotropy.measure import distributed

    if mode == "64 MiB":
        distributed._chunk_limits = lambda: {"most_rows": None, "least_elements": 0}
    args = ["measure", folder, "--json", out, "--quiet"] + (["--workers", str(workers)] if workers else [])
    start = time.perf_counter()
    try:
        code = main(args)
    except SystemExit as stop:
        code = stop.code
    if code:
        raise SystemExit(f"isotropy measure exited with {code}")
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "own_peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                      "worker_peak": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=80_000)
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--workers", type=int, default=2, help="local worker processes (0: dask's threads)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "shards"
        folder.mkdir()
        X = low_rank_data(args.n, args.d)
        for i, start in enumerate(range(0, args.n, _SHARD_ROWS)):
            np.save(folder / f"part-{i:03d}.npy", X[start:start + _SHARD_ROWS])
        del X
        where = f"--workers {args.workers}" if args.workers else "dask's threads in the command's process"
        print(f"isotropy measure DIR (default table), {args.n:,} x {args.d} float32 in .npy shards of {_SHARD_ROWS:,} "
              f"rows, {where}; fresh interpreters, alternating", flush=True)
        print("| run | chunks | wall (s) | command's peak (MiB) | largest worker's peak (MiB) |", flush=True)
        print("|---|---|---|---|---|", flush=True)
        runs, values = {mode: [] for mode in _MODES}, {}
        for run in range(args.repeat):
            for mode in _MODES:
                out = Path(tmp) / f"{mode.split()[0]}-{run}.json"
                done = subprocess.run([sys.executable, __file__, "--child", mode, str(folder), str(args.workers),
                                       str(out)], capture_output=True, text=True, check=True)
                record = json.loads(done.stdout.strip().splitlines()[-1])
                runs[mode].append(record)
                values.setdefault(mode, json.loads(out.read_text())["values"])
                worker = f"{record['worker_peak'] / 2**20:.0f}" if args.workers else "-"
                print(f"| {run + 1} | {mode} | {record['seconds']:.1f} | {record['own_peak'] / 2**20:.0f} | {worker} |",
                      flush=True)
    new, old = runs[_MODES[0]], runs[_MODES[1]]
    ratios = ", ".join(f"{a['seconds'] / b['seconds']:.2f}" for a, b in zip(new, old))
    peaks = ", ".join(f"{(b['own_peak'] - a['own_peak']) / 2**20:.0f}" for a, b in zip(new, old))
    print(f"\n8192 rows / 64 MiB, wall time per pair: {ratios}; the command's peak lower by (MiB): {peaks}", flush=True)
    a, b = values[_MODES[0]], values[_MODES[1]]
    differences = {name: abs(a[name] - b[name]) / abs(b[name]) for name in b if b[name] not in (0, None)
                   and a.get(name) is not None and np.isfinite(b[name])}
    worst = max(differences, key=differences.get)
    print(f"values: the same metrics ({sorted(a) == sorted(b)}); largest relative difference {differences[worst]:.1e} "
          f"({worst}), the others at most {max([v for k, v in differences.items() if k != worst] or [0]):.1e}",
          flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
    else:
        main()
