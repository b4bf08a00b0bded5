"""Benchmark: what dask workers hold for the default table's neighbour search on shards, by memory limit.

Writes float32 data near a 10-dimensional subspace (``--n`` x ``--d``) as ``.npy`` shards of 10,000 rows in a
temporary folder, reads them lazily (:func:`isotropy.io.shards.read_shards`, as ``isotropy measure DIR --workers N``
does) and computes TwoNN and the MLE (k = 20) from one pass of neighbour tiles
(:func:`isotropy.metrics.dimension.neighbour_dimensions`) on a ``LocalCluster`` of ``--workers`` one-thread worker
processes, once per ``--memory-limit`` (a new cluster each). Prints, per limit, each worker's resident memory after
its imports (the package and the compiled loops) and its peak (``VmHWM``), the peak above the imports against the
input's size, the wall time and the values (the same for every limit).

A second table says what each worker held at its highest resident memory, sampled every 20 ms in the worker (the
sample can miss the ``VmHWM`` by a few MiB): the results it held in memory there (their numpy buffers, each
counted once, by task name), the rest (about dask's "unmanaged memory"), and of the rest the pages of mapped files (the libraries: Python,
numpy, llvmlite...) and the bytes freed but kept by glibc's malloc (``mallinfo2``, all arenas); then the worker's
resident memory with the tiles' loops loaded (a tiny diagonal and cross tile, before the pass: the compiled loops
load llvmlite's code and numba's), and after the pass, when it holds no results, and after ``malloc_trim(0)``.

    nice -n 5 .venv/bin/python benchmarks/bench_dask_memory.py [--n 120000] [--d 384] [--workers 2]
        [--memory-limit auto,400MiB] [--chunk-rows ROWS]
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from _common import low_rank_data

_SHARD_ROWS = 10_000


def _status(field: str) -> float:
    """A ``/proc/self/status`` field in MiB (Linux)."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _resident() -> float:
    return _status("VmRSS")


def _peak() -> float:
    return _status("VmHWM")


def _mallinfo_free() -> float:
    """Bytes freed but kept by glibc's malloc, all arenas (``mallinfo2().fordblks``), in MiB; NaN without glibc."""
    import ctypes

    class Mallinfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                          "fsmblks", "uordblks", "fordblks", "keepcost")]

    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = Mallinfo2
    except (OSError, AttributeError):
        return float("nan")
    return libc.mallinfo2().fordblks / 2**20


def _buffers(value, into: dict) -> None:
    """The numpy buffers under ``value`` (an array, or tuples and lists of them), by address: their owners' bytes."""
    if isinstance(value, np.ndarray):
        while isinstance(value.base, np.ndarray):
            value = value.base
        into.setdefault(value.__array_interface__["data"][0], value.nbytes)
    elif isinstance(value, (tuple, list)):
        for item in value:
            _buffers(item, into)


def _start_sampling(dask_worker) -> None:
    """Sample this worker's resident memory, mapped files, results held in memory (by task name) and malloc's free
    bytes. The results are counted by their numpy buffers, each once: dask's own count (``sizeof`` per key) counts a
    buffer twice where two keys hold it (``from_delayed``'s key and the task it names) and counts results spilled to
    disk."""
    import threading

    samples, stop = [], threading.Event()
    fast = getattr(dask_worker.data, "fast", dask_worker.data)  # the spill buffer's results in memory
    fast = getattr(fast, "d", fast)  # (zict.LRU: its dict, read without moving keys in its order)

    def sample():
        while not stop.wait(0.02):
            held, seen = {}, {}
            for key in list(fast.keys()):
                with contextlib.suppress(KeyError):
                    before = set(seen)
                    _buffers(fast[key], seen)
                    name = key[0] if isinstance(key, tuple) else key
                    name = str(name).rsplit("-", 1)[0].lstrip("_")
                    held[name] = held.get(name, 0) + sum(seen[a] for a in set(seen) - before) / 2**20
            samples.append((_resident(), _status("RssFile"), sum(seen.values()) / 2**20, _mallinfo_free(), held))

    dask_worker._bench_samples, dask_worker._bench_stop = samples, stop
    threading.Thread(target=sample, name="bench-memory-sampler", daemon=True).start()


def _at_peak(dask_worker) -> dict:
    """The sample of highest resident memory, then the resident memory now (nothing held) and after malloc_trim."""
    import ctypes
    import gc

    dask_worker._bench_stop.set()
    rss, files, managed, free, held = max(dask_worker._bench_samples, key=lambda sample: sample[0])
    gc.collect()
    after = _resident()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    return {"rss": rss, "files": files, "managed": managed, "free": free, "held": held, "after": after,
            "trimmed": _resident()}


def _warm() -> None:
    import importlib

    importlib.import_module("isotropy.distributed")
    with contextlib.suppress(Exception):  # no numba: the numpy loops, nothing to load
        importlib.import_module("isotropy._kernels._neighbors_jit")


def _load_loops(n: int, d: int) -> float:
    """Resident memory (MiB) once the tiles' loops for ``n`` points are loaded: one diagonal and one cross tile of 64
    float32 rows (the loops, numpy or compiled, are those of the search of all ``n`` points, as in the pass)."""
    from isotropy._kernels.silhouette import tasks_in_this_thread
    from isotropy.distributed._neighbors import _knn_tile_here

    rows = (np.random.default_rng(0).standard_normal((64, d)).astype(np.float32), None, None)
    with tasks_in_this_thread():
        _knn_tile_here(rows, None, 0, 0, 20, n, "bench")
        _knn_tile_here(rows, rows, 0, 64, 20, n, "bench")
    return _resident()


def _run(folder: Path, workers: int, limit: str, chunk_rows) -> dict:
    from distributed import Client, LocalCluster

    from isotropy.io.shards import read_shards
    from isotropy.metrics.dimension import neighbour_dimensions

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      memory_limit=limit) as cluster, Client(cluster) as client:
        client.run(_warm)
        base = client.run(_resident)
        X = read_shards(folder, chunk_rows=chunk_rows)
        loops = client.run(_load_loops, *X.shape)
        client.run(_start_sampling)
        start = time.perf_counter()
        values = neighbour_dimensions(X)
        seconds = time.perf_counter() - start
        peak = client.run(_peak)
        sampled = client.run(_at_peak)
    return {"base": [base[k] for k in sorted(base)], "peak": [peak[k] for k in sorted(peak)], "seconds": seconds,
            "values": values, "input_mib": X.nbytes / 2**20, "sampled": [sampled[k] for k in sorted(sampled)],
            "loops": [loops[k] for k in sorted(loops)]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=120_000)
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="auto,400MiB", help="comma-separated limits per worker")
    parser.add_argument("--chunk-rows", type=int, default=None,
                        help="rows per chunk read from the shards (read_shards' chunk_rows; default: about 64 MiB)")
    args = parser.parse_args(argv)
    if args.n < 3 or args.d < 1 or args.workers < 1:
        parser.error(f"--n must be at least 3, --d and --workers at least 1. Got {args.n}, {args.d}, {args.workers}.")
    warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
    X = low_rank_data(args.n, args.d)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for i, s in enumerate(range(0, args.n, _SHARD_ROWS)):
            np.save(folder / f"part{i:05d}.npy", X[s:s + _SHARD_ROWS])
        del X
        print(f"n = {args.n:,}, d = {args.d}, float32 in .npy shards of {_SHARD_ROWS:,} rows; TwoNN and MLE (k = 20) "
              f"from one pass of tiles on a LocalCluster of {args.workers} one-thread workers; "
              f"read in chunks of {'about 64 MiB' if args.chunk_rows is None else f'{args.chunk_rows:,} rows'}\n")
        print("| memory limit per worker | resident after imports (MiB) | peak (MiB) | peak above imports / input | "
              "seconds | TwoNN | MLE |\n|---|---|---|---|---|---|---|")
        runs = []
        for limit in args.memory_limit.split(","):
            r = _run(folder, args.workers, limit.strip(), args.chunk_rows)
            runs.append((limit, r))
            base = " / ".join(f"{b:.0f}" for b in r["base"])
            peak = " / ".join(f"{p:.0f}" for p in r["peak"])
            above = " / ".join(f"{(p - b) / r['input_mib']:.2f}" for p, b in zip(r["peak"], r["base"]))
            values = r["values"]
            print(f"| {limit} | {base} | {peak} | {above} | {r['seconds']:.1f} | {values['twonn_dimension']:.10g} | "
                  f"{values['mle_dimension']:.10g} |", flush=True)
        print(f"\ninput: {r['input_mib']:.1f} MiB\n\nat each worker's sampled peak of resident memory (MiB):\n")
        print("| memory limit per worker | worker | resident | results held | the rest | of it: mapped files | "
              "of it: freed, kept by malloc | resident with the loops loaded, before the pass | resident after the pass / "
              "after malloc_trim | largest results held |\n|---|---|---|---|---|---|---|---|---|---|")
        for limit, r in runs:
            for w, (s, loops) in enumerate(zip(r["sampled"], r["loops"])):
                held = ", ".join(f"{name} {mib:.0f}" for name, mib in sorted(s["held"].items(), key=lambda kv: -kv[1])[:3])
                print(f"| {limit} | {w} | {s['rss']:.0f} | {s['managed']:.0f} | {s['rss'] - s['managed']:.0f} | "
                      f"{s['files']:.0f} | {s['free']:.1f} | {loops:.0f} | {s['after']:.0f} / {s['trimmed']:.0f} | {held} |")


if __name__ == "__main__":
    main()
