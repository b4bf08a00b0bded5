"""Benchmark: ``isotropy.isoscore`` vs the ``isoscore`` package (2.0.1), speed and exactness.

Same data for both: float32, n = 20,000 x d = 384 (n > d) and n = 256 x d = 2,048 (n < d, where
we use the n x n Gram matrix). Prints the median of several repeats, the ratio package / ours
measured in the same run, and each result's error against a float64 eigenvalue reference
(``numpy.linalg.eigvalsh`` of ``np.cov`` of the data in float64). Timings on a shared CPU are
noisy: read the ratios, not the absolute times.

Usage::

    nice -n 5 .venv/bin/python benchmarks/bench_isoscore.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from isotropy import isoscore


def _median_seconds(fn, X, repeats):
    fn(X)  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(X)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _eigen_reference(X):
    X = X.astype(np.float64)
    lam = np.linalg.eigvalsh(np.cov(X, rowvar=False))
    d = X.shape[1]
    return (lam.sum() ** 2 / (lam**2).sum() - 1) / (d - 1)


def _data(n, d, seed=0):
    rng = np.random.default_rng(seed)
    mixing = rng.normal(size=(d, d)) / np.sqrt(d) + np.eye(d) * rng.uniform(0.1, 2.0, size=d)
    return (rng.normal(size=(n, d)) @ mixing + 1.0).astype(np.float32)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    from IsoScore import IsoScore as pkg  # the isoscore package, 2.0.1

    print(f"torch threads: {torch.get_num_threads()}, repeats: {args.repeats} (median)", flush=True)
    header = ("| case | isoscore pkg (s) | ours, numpy float64 (s) | ratio pkg/ours | ours, torch float32 (s) "
              "| ratio pkg/ours-torch | pkg abs err | ours abs err |")
    print(header, flush=True)
    print("|" + "---|" * 8, flush=True)
    for n, d in [(20_000, 384), (256, 2048)]:
        X = _data(n, d)
        Xt = torch.from_numpy(X)
        ref = _eigen_reference(X)
        t_pkg = _median_seconds(pkg.IsoScore, X, args.repeats)
        t_ours = _median_seconds(isoscore, X, args.repeats)
        t_ours_t = _median_seconds(isoscore, Xt, args.repeats)
        err_pkg = abs(float(pkg.IsoScore(X)) - ref)
        err_ours = abs(isoscore(X) - ref)
        print(f"| n={n:,}, d={d:,} float32 | {t_pkg:.4f} | {t_ours:.4f} | {t_pkg / t_ours:.1f}x | {t_ours_t:.4f} "
              f"| {t_pkg / t_ours_t:.1f}x | {err_pkg:.1e} | {err_ours:.1e} |", flush=True)


if __name__ == "__main__":
    main()
