"""Exact silhouette and k-NN on dask: 1 worker, 2 workers and in memory, in one run.

For float32 data of n samples x d features (near a 10-dimensional subspace, 10 clusters), prints
(markdown) the wall time of

- ``isotropy.silhouette_score`` and ``isotropy.metrics.neighbors.kneighbors(n_neighbors=10)`` in memory
  (numpy input: the in-process threaded kernels, all cores);
- the same functions on a row-chunked dask array on a ``LocalCluster`` of 1 and of 2 worker
  processes (one thread each), the array scattered to the workers first (not timed);

with the peak resident memory of each worker process (``VmHWM``) and of this process, the
ratios (in memory / dask), the tiles' count and bytes moved, and the measured cost of one tile
(one process, one thread) that the cost model in docs/scaling.md scales from. Every value of a
table comes from the same run; timings on a shared machine are noisy, compare the ratios.

    nice -n 10 .venv/bin/python benchmarks/bench_dask.py            # n = 100,000, d = 384
    nice -n 10 .venv/bin/python benchmarks/bench_dask.py --n 20000  # a quicker run
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np
from _common import low_rank_data


def _peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _worker_peak_rss_mib():
    """Peak resident memory of this process's own address space (VmHWM, Linux).

    Not ``ru_maxrss``: Linux carries the parent's peak over fork and exec into it, so a worker
    spawned by this (large) process would report at least the parent's peak.
    """
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024  # KiB


def _labels(X, k=10, seed=0):
    """Clusters by the nearest of k random data points (cheap, deterministic)."""
    rng = np.random.default_rng(seed)
    centres = X[rng.choice(X.shape[0], k, replace=False)].astype(np.float64)
    sq = (centres**2).sum(1)[None, :] - 2 * X.astype(np.float64) @ centres.T
    return sq.argmin(axis=1)


def _tile_costs(X, labels, tile, repeats=3):
    """Seconds for one silhouette tile and one k-NN tile of tile x tile rows, in this process."""
    from isotropy.distributed._clusters import _silhouette_block, _silhouette_tile
    from isotropy.distributed._neighbors import _knn_block, _knn_tile
    from isotropy.metrics.neighbors import _n_candidates

    A, B = X[:tile], X[tile:2 * tile]
    mean = X[: 2 * tile].mean(axis=0, dtype=np.float64)
    P = _silhouette_block(A, labels[:tile], "euclidean", mean)
    Q = _silhouette_block(B, labels[tile:2 * tile], "euclidean", mean)
    m = _n_candidates(10, X.shape[0])
    kp, kq = _knn_block(A, "euclidean", "bench"), _knn_block(B, "euclidean", "bench")
    from threadpoolctl import threadpool_limits

    out = {}
    for name, fn in (("silhouette", lambda: _silhouette_tile(P, Q, "euclidean", int(labels.max()) + 1)),
                     ("knn", lambda: _knn_tile(kp, kq, 0, tile, m, X.shape[0], "bench"))):
        times = []
        with threadpool_limits(1):  # as a worker runs it (threads_per_worker=1, one BLAS thread)
            for _ in range(repeats):
                start = time.perf_counter()
                fn()
                times.append(time.perf_counter() - start)
        out[name] = float(np.median(times))
    return out


def _on_cluster(X, labels, n_workers, tile):
    import dask.array as da
    from distributed import Client, LocalCluster, wait

    import isotropy
    from isotropy.metrics.neighbors import kneighbors

    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        Xd = da.from_array(X, chunks=(tile, -1)).persist()  # the data on the workers, as shards would be
        wait(Xd)
        client.run(lambda: __import__("isotropy.distributed"))  # imports are not part of the timing
        times = {}
        start = time.perf_counter()
        times["silhouette_value"] = isotropy.silhouette_score(Xd, labels)
        times["silhouette"] = time.perf_counter() - start
        start = time.perf_counter()
        dist, _ = kneighbors(Xd, n_neighbors=10)
        times["knn_checksum"] = float(dist.sum().compute())
        times["knn"] = time.perf_counter() - start
        peaks = client.run(_worker_peak_rss_mib)
        times["peak_worker_mib"] = max(peaks.values())
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--tile", type=int, default=4096)
    parser.add_argument("--json", default=None, help="also write the numbers to this file")
    args = parser.parse_args()

    import isotropy
    from isotropy.metrics.neighbors import kneighbors

    X = low_rank_data(args.n, args.d)
    labels = _labels(X)
    n_blocks = -(-args.n // args.tile)
    n_tiles = n_blocks * (n_blocks + 1) // 2
    tile_costs = _tile_costs(X, labels, min(args.tile, args.n // 2))

    results = {"n": args.n, "d": args.d, "tile_rows": args.tile, "n_tiles": n_tiles, "tile_seconds": tile_costs}
    for workers in (1, 2):
        results[f"{workers}_workers"] = _on_cluster(X, labels, workers, args.tile)
    memory = {}
    start = time.perf_counter()
    memory["silhouette_value"] = isotropy.silhouette_score(X, labels)
    memory["silhouette"] = time.perf_counter() - start
    start = time.perf_counter()
    dist, _ = kneighbors(X, n_neighbors=10)
    memory["knn_checksum"] = float(dist.sum())
    memory["knn"] = time.perf_counter() - start
    memory["peak_process_mib"] = _peak_rss_mib()
    results["in_memory"] = memory

    block_bytes = args.tile * (args.d + 2) * 4
    print(f"n = {args.n:,}, d = {args.d}, float32, 10 clusters, tiles of {args.tile} rows: {n_tiles} tiles, "
          f"each reading 2 blocks ({2 * block_bytes / 2**20:.1f} MiB)\n")
    print("| computation | in memory (s) | 1 worker (s) | 2 workers (s) | 1 worker / 2 workers | "
          "in memory / 2 workers | peak RSS per worker, 1 / 2 workers (MiB) |")
    print("|---|---|---|---|---|---|---|")
    one, two = results["1_workers"], results["2_workers"]
    for key in ("silhouette", "knn"):
        print(f"| {key} | {memory[key]:.1f} | {one[key]:.1f} | {two[key]:.1f} | {one[key] / two[key]:.2f} | "
              f"{memory[key] / two[key]:.2f} | {one['peak_worker_mib']:.0f} / {two['peak_worker_mib']:.0f} |")
    print(f"\npeak RSS of this process (in-memory runs, holding X): {memory['peak_process_mib']:.0f} MiB")
    print(f"one tile ({min(args.tile, args.n // 2)} x {min(args.tile, args.n // 2)} rows, one thread): "
          f"silhouette {tile_costs['silhouette']:.3f} s, k-NN {tile_costs['knn']:.3f} s")
    print(f"per tile on 1 worker (wall / {n_tiles} tiles, with scheduling and reductions): "
          f"silhouette {one['silhouette'] / n_tiles:.3f} s, k-NN {one['knn'] / n_tiles:.3f} s")
    print(f"same values: silhouette |dask - memory| = "
          f"{abs(two['silhouette_value'] - memory['silhouette_value']):.2e}, k-NN distance sums "
          f"{two['knn_checksum']:.6e} vs {memory['knn_checksum']:.6e}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=2)


if __name__ == "__main__":
    main()
