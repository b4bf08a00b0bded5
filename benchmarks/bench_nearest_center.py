"""Benchmark: the nearest-centre assignment of ``ClusterCentering``/``ClusterIsotropy`` against its peer and floor.

``isotropy.transforms._cluster_centering.nearest_center`` (the shifted expansion, near-tie rows decided
again by direct differences, float64) on ``--n`` x ``--d`` float32 rows near ``--k`` centres, against

- the peer, scikit-learn's ``KMeans.predict`` with the same centres (its unshifted float32 expansion,
  which cancels under a large common offset: that is why the package does not call it);
- the floor, the float64 product of the rows with the centres (``X @ C.T`` in chunks of the same size),
  the minimal matrix-product work of any expansion;

each the median of ``--repeats`` runs, with the peak of Python-allocated memory (``tracemalloc``) of one
run, and whether the labels agree. Timings on a shared CPU are noisy: read the ratios, measured in one run.

    nice -n 5 .venv/bin/python benchmarks/bench_nearest_center.py [--n 200000 --d 384 --k 27 --repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc

import numpy as np


def _run(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return value, statistics.median(times), peak / 2**20


def main():
    from sklearn.cluster import KMeans

    from isotropy.transforms._cluster_centering import nearest_center

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--k", type=int, default=27)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(args.k, args.d))
    X = (centers[rng.integers(0, args.k, args.n)] + rng.normal(size=(args.n, args.d))).astype(np.float32)
    kmeans = KMeans(n_clusters=args.k, n_init=1, max_iter=1, random_state=0).fit(centers.astype(np.float32))
    kmeans.cluster_centers_ = centers.astype(np.float32)
    step = max(1, 2**16 // args.d)

    def floor():
        for s in range(0, args.n, step):
            X[s:s + step].astype(np.float64) @ centers.T

    ours, t_ours, m_ours = _run(lambda: nearest_center(X, centers), args.repeats)
    peer, t_peer, m_peer = _run(lambda: kmeans.predict(X), args.repeats)
    _, t_floor, _ = _run(floor, args.repeats)
    print(f"n = {args.n:,}, d = {args.d}, k = {args.k}, float32 rows; median of {args.repeats}\n")
    print("| | seconds | / floor | peak MiB |")
    print("|---|---:|---:|---:|")
    print(f"| nearest_center | {t_ours:.3f} | {t_ours / t_floor:.2f} | {m_ours:.1f} |")
    print(f"| KMeans.predict (peer) | {t_peer:.3f} | {t_peer / t_floor:.2f} | {m_peer:.1f} |")
    print(f"| floor: X @ C.T, float64 chunks | {t_floor:.3f} | 1.00 | |")
    print(f"\nours / peer: {t_ours / t_peer:.2f}; labels agree on {np.mean(ours == peer):.4%} of the rows")


if __name__ == "__main__":
    main()
