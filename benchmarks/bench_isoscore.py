"""Benchmark: ``isotropy.isoscore`` vs the ``isoscore`` package (2.0.1), speed and exactness.

Same data for both: float32, n = 20,000 x d = 384 and 768 (n > d) and n = 256 x d = 2,048 (n < d, where
we use the n x n Gram matrix). Prints the median of several repeats, the ratio package / ours
measured in the same run, and each result's error against a float64 eigenvalue reference
(``numpy.linalg.eigvalsh`` of ``np.cov`` of the data in float64). Timings on a shared CPU are
noisy: read the ratios, not the absolute times.

``--json PATH`` also writes the rows, each with its verdict on the target "faster than the package"
from the quartiles of its per-round ratios (``FASTER`` and :func:`verdict`: fixed here before any run), and what ran (``_common.write_record``); the docs' summary reads the
committed one, ``docs/runs/benchmarks/isoscore/bench.json``, through value markers.

Usage::

    nice -n 5 .venv/bin/python benchmarks/bench_isoscore.py [--repeats 7] [--threads 1] [--sizes NxD ...] [--json PATH]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from _common import write_record

from isotropy import isoscore

# "Faster" than the package: its time at least this many times ours; between 1 / FASTER and FASTER the two are at
# parity, within what this benchmark's repeats tell apart on a shared machine. The verdict reads the interval of the
# per-round ratios (their quartiles), not their median alone: a median just past FASTER with rounds on both sides of
# it establishes nothing.
FASTER = 1.05


def verdict(low: float, high: float) -> str:
    """The verdict on the package's time over ours from the interval ``[low, high]`` of the per-round ratios:
    ``"met"`` (faster: all of it at FASTER or above), ``"not met"`` (slower: all of it at 1 / FASTER or below),
    ``"parity"`` (all of it strictly between), else ``"not established"``."""
    if low >= FASTER:
        return "met"
    if high <= 1 / FASTER:
        return "not met"
    return "parity" if low > 1 / FASTER and high < FASTER else "not established"


def _seconds(fn, X):
    start = time.perf_counter()
    fn(X)
    return time.perf_counter() - start


def _interleaved(contenders, repeats):
    """Time the contenders in alternation, ``repeats`` rounds after a warm-up round.

    Returns ``{name: [seconds per round]}``; on a shared, loaded CPU the contenders of one round
    see about the same load, so per-round ratios are steadier than ratios of separate medians.
    """
    for fn, X in contenders.values():
        fn(X)
    times = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, (fn, X) in contenders.items():
            times[name].append(_seconds(fn, X))
    return times


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
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS and torch threads for every contender (default: the libraries' own)")
    parser.add_argument("--json", metavar="PATH", help="also write the rows and what ran as JSON to PATH")
    parser.add_argument("--sizes", nargs="+", default=["20000x384", "20000x768", "256x2048"], metavar="NxD",
                        help="the cases, n rows by d columns (default: the three of the docs)")
    args = parser.parse_args(argv)
    sizes = []
    for size in args.sizes:
        n, _, d = size.partition("x")
        if not (n.isdigit() and d.isdigit() and int(n) >= 2 and int(d) >= 2):
            parser.error(f"--sizes: {size!r} is not NxD with N and D integers of at least 2 (e.g. 20000x384)")
        sizes.append((int(n), int(d)))
    from IsoScore import IsoScore as pkg  # the isoscore package, 2.0.1
    from threadpoolctl import threadpool_limits

    if args.threads is not None:
        torch.set_num_threads(args.threads)
        threadpool_limits(args.threads)
    print(f"torch threads: {torch.get_num_threads()}, BLAS threads: {args.threads or 'default'}, "
          f"{args.repeats} interleaved rounds (medians; ratio = median of per-round ratios)", flush=True)
    print("| case | isoscore pkg (s) | ours, numpy float64 (s) | pkg / ours | ours, torch float32 (s) "
          "| pkg / ours (torch) | pkg abs err | ours abs err |", flush=True)
    print("|" + "---|" * 8, flush=True)
    rows = []
    for n, d in sizes:
        X = _data(n, d)
        ref = _eigen_reference(X)
        t = _interleaved({"pkg": (pkg.IsoScore, X), "ours": (isoscore, X),
                          "torch": (isoscore, torch.from_numpy(X))}, args.repeats)
        med = {name: statistics.median(v) for name, v in t.items()}
        rounds = [p / o for p, o in zip(t["pkg"], t["ours"])]
        ratio = statistics.median(rounds)
        low, high = (float(v) for v in np.percentile(rounds, [25, 75]))
        ratio_t = statistics.median(p / o for p, o in zip(t["pkg"], t["torch"]))
        err_pkg = abs(float(pkg.IsoScore(X)) - ref)
        err_ours = abs(isoscore(X) - ref)
        print(f"| n={n:,}, d={d:,} float32 | {med['pkg']:.4f} | {med['ours']:.4f} | {ratio:.2f}x | {med['torch']:.4f} "
              f"| {ratio_t:.2f}x | {err_pkg:.1e} | {err_ours:.1e} |", flush=True)
        rows.append({"n": n, "d": d, "dtype": "float32", "package_s": med["pkg"], "ours_s": med["ours"],
                     "ratio": ratio, "ratio_low": low, "ratio_high": high, "ours_torch_s": med["torch"],
                     "ratio_torch": ratio_t, "package_abs_error": err_pkg, "ours_abs_error": err_ours,
                     "target": "faster", "verdict": verdict(low, high)})
    if args.json:
        write_record(args.json, {"faster_at": FASTER, "repeats": args.repeats, "torch_threads": torch.get_num_threads(),
                                 "blas_threads": args.threads, "statistic": "medians of interleaved rounds; ratio: "
                                 "the median of the per-round ratios, ratio_low and ratio_high their quartiles", "reference": "float64 eigenvalues of np.cov",
                                 "rows": rows}, argv=None if argv is None else [__file__, *argv])
    return rows


if __name__ == "__main__":
    main()
