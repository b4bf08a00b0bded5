"""Benchmark: exact k-nearest neighbours of every point (``isotropy.metrics.neighbors.kneighbors``) vs
scikit-learn's ``NearestNeighbors`` (``algorithm="brute"`` and the default ``"auto"``).

Data: float32, n = 100,000 x d = 384, points near a 10-dimensional linear subspace (Gaussian
latent, random mixing, isotropic noise of scale 0.1); k = 100 neighbours of every point among the
others, as for the local intrinsic dimension of Cai et al. Ours runs on all n points. scikit-learn
at this size takes minutes per run, so it is timed on the first ``--queries`` points queried
against all n points (k + 1 neighbours, the point itself dropped) and its time is extrapolated
linearly to n queries (its brute-force search costs the same per query); the table says so. The
overlap of the query rows checks agreement: largest distance difference and the share of rows
with identical neighbour lists. Wall and CPU (``time.process_time``, all threads) times; on a
shared CPU read the ratios, measured in the same run, not the absolute times.

Usage::

    nice -n 5 .venv/bin/python benchmarks/bench_neighbors.py [--n 100000] [--queries 5000] [--k 100]
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import low_rank_data, timed
from sklearn.neighbors import NearestNeighbors

from isotropy.metrics.neighbors import kneighbors


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--queries", type=int, default=5_000)
    args = parser.parse_args(argv)
    X = low_rank_data(args.n, args.d)
    q = min(args.queries, args.n)
    scale = args.n / q
    print(f"data: float32, n={args.n:,}, d={args.d}, k={args.k}; scikit-learn timed on {q:,} queries against "
          f"all {args.n:,} points, x{scale:g} to extrapolate to {args.n:,} queries", flush=True)

    (dist, ind), wall_o, cpu_o = timed(lambda: kneighbors(X, n_neighbors=args.k))
    rows = [("isotropy kneighbors (all points)", wall_o, cpu_o, None)]
    for algorithm in ("brute", "auto"):
        nn = NearestNeighbors(n_neighbors=args.k + 1, algorithm=algorithm)
        (ref_d, ref_i), wall, cpu = timed(lambda nn=nn: nn.fit(X).kneighbors(X[:q]))
        ref_d, ref_i = ref_d[:, 1:], ref_i[:, 1:]  # drop the query point itself
        label = f"sklearn NearestNeighbors(algorithm={algorithm!r}) -> {nn._fit_method}"
        rows.append((label, wall * scale, cpu * scale, (wall, cpu)))
        diff = float(np.max(np.abs(dist[:q] - ref_d)))
        same = float(np.mean((ind[:q] == ref_i).all(axis=1)))
        print(f"agreement with {label} on {q:,} rows: max |distance difference| {diff:.1e}, "
              f"identical neighbour lists {100 * same:.2f}%", flush=True)
    print("| method | wall (s) | CPU (s) | ratio to ours, wall | ratio to ours, CPU | measured on |", flush=True)
    print("|---|---|---|---|---|---|", flush=True)
    for label, wall, cpu, measured in rows:
        how = f"{args.n:,} queries" if measured is None else (
            f"{q:,} queries: {measured[0]:.1f} s wall, {measured[1]:.1f} s CPU; x{scale:g}")
        print(f"| {label} | {wall:.1f} | {cpu:.1f} | {wall / wall_o:.1f}x | {cpu / cpu_o:.1f}x | {how} |", flush=True)


if __name__ == "__main__":
    main()
