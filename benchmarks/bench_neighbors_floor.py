"""Benchmark: the exact neighbour family (TwoNN, MLE, kneighbors) against the half-GEMM floor, before and after.

The floor is the minimal exact work: the float32 blocks on and above the diagonal of ``X·Xᵀ``
(4096-row blocks, ``n²d`` multiply-adds), timed in the same run, before and after each case (the
smaller of the two is used). "before" is the kernel at commit ``7acb82b`` (read from git history at
run time, so this script needs the repository's history); "after" is the current one. The last
rows time the two-estimator table (TwoNN and MLE from one neighbour pass,
:func:`isotropy.metrics.dimension.neighbour_dimensions`) against TwoNN alone and against the two
separate calls. On a shared CPU read the ratios, measured in the same run, not the absolute times.

Usage::

    nice -n 5 .venv/bin/python benchmarks/bench_neighbors_floor.py [--n 20000] [--d 384]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
from _common import low_rank_data, timed

from isotropy import mle_dimension, twonn_dimension
from isotropy.metrics.dimension import neighbour_dimensions
from isotropy.metrics.neighbors import _kneighbors_numpy

BEFORE = "7acb82b"
ROOT = Path(__file__).resolve().parent.parent


def _old_kernel():
    """``_kneighbors_numpy`` of commit ``BEFORE`` (its kernels module loaded under another name)."""
    def source(path):
        return subprocess.run(["git", "show", f"{BEFORE}:{path}"], cwd=ROOT, check=True, capture_output=True,
                              text=True).stdout
    kernels = types.ModuleType("_old_neighbour_kernels")
    exec(compile(source("isotropy/_kernels/neighbors.py"), kernels.__name__, "exec"), kernels.__dict__)  # noqa: S102 - our own history
    sys.modules[kernels.__name__] = kernels
    public = types.ModuleType("_old_neighbours")
    text = source("isotropy/metrics/neighbors.py").replace("from isotropy._kernels.neighbors import",
                                                         f"from {kernels.__name__} import")
    exec(compile(text, public.__name__, "exec"), public.__dict__)  # noqa: S102 - our own history
    return public._kneighbors_numpy


def _floor(X, b=4096):
    """The float32 blocks on and above the diagonal of X·Xᵀ."""
    n = X.shape[0]
    buf = np.empty(min(n, b) ** 2, dtype=np.float32)
    for a in range(0, n, b):
        for a2 in range(a, n, b):
            e, e2 = min(n, a + b), min(n, a2 + b)
            np.matmul(X[a:e], X[a2:e2].T, out=buf[: (e - a) * (e2 - a2)].reshape(e - a, e2 - a2))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--d", type=int, default=384)
    args = parser.parse_args(argv)
    X = low_rank_data(args.n, args.d)
    old = _old_kernel()
    print(f"data: float32, n={args.n:,}, d={args.d}; floor = blocks on and above the diagonal of X·Xᵀ (float32)",
          flush=True)
    print("| case | k | before / floor | after / floor |", flush=True)
    print("|---|---|---|---|", flush=True)
    for name, k in (("TwoNN", 2), ("MLE", 20), ("kneighbors", 100)):
        ratios = []
        for kernel in (old, _kneighbors_numpy):
            floor_a = timed(lambda: _floor(X))[1]
            spent = timed(lambda kernel=kernel, k=k: kernel(X, None, k, None))[1]
            floor_b = timed(lambda: _floor(X))[1]
            ratios.append(spent / min(floor_a, floor_b))
        print(f"| {name} | {k} | {ratios[0]:.2f} | {ratios[1]:.2f} |", flush=True)
    alone = timed(lambda: twonn_dimension(X))[1]
    table = timed(lambda: neighbour_dimensions(X, n_neighbors=20))[1]
    separate = timed(lambda: (twonn_dimension(X), mle_dimension(X, n_neighbors=20)))[1]
    print(f"TwoNN + MLE (k=20) from one pass / TwoNN alone: {table / alone:.2f}; "
          f"two separate calls / TwoNN alone: {separate / alone:.2f}", flush=True)


if __name__ == "__main__":
    main()
