"""Expected running time of the O(n²) metrics, from n, d and this machine's measured speed.

The pairwise metrics (silhouette, Dunn, uniformity, TwoNN, MLE) form the blocks of the n x n distance
matrix: one product of d-long rows per pair, plus a few element-wise passes per pair (clip,
square root, per-cluster sums or neighbour selection). Their time is therefore close to

    t ≈ n² · (α_metric · d / F + β_metric / E)

with F the float32 product speed (flop/s) and E the element-wise speed (elements/s) of this
machine, both measured once per process by a tiny calibration (a 512 x 256 x 512 product and a
square root over 512² elements, about 10 ms), and α, β per-metric constants fitted on this code
(``_PAIR_COST``). The exact neighbour search of TwoNN and MLE also grows with its ``k`` neighbours:
it recomputes the ``n·k`` neighbour distances exactly (``n·k·d`` memory-bound operations), each
row's candidates are replaced about ``k·ln(n/k)`` times as the blocks go by (the expected number of
updates of a running top ``k`` over ``n`` values in random order), and at large ``k`` the row's
slots of ``k`` candidates are passed over again as they fill (``n·k²``), so for it

    t ≈ n² · (α · d / F + β / E) + (γ · d + δ · ln(1 + n/k) + ε · k) · n · k / E

with one set of constants per loop (``_SEARCH_COST``: numpy, compiled). On the machine they were fitted on, the
estimates fall within 1.5× of the measured times at widths and sizes the fit did not see
(``benchmarks/bench_cost_notes.py``, docs/benchmarks.md); on other machines they were not measured.
Enough to choose between waiting, ``--sample-size`` and the distributed path.
"""

from __future__ import annotations

import functools
import math
import time

import numpy as np

from isotropy._kernels.dimension import DEFAULT_MLE_NEIGHBOURS

__all__ = ["estimate_seconds", "format_duration", "machine_speed"]

# (α, β) from ``benchmarks/bench_cost_notes.py --fit`` (float32 data near a 10-dimensional subspace, 10 clusters,
# d = 50, 128 and 384, n where the estimate is 15 s, 2 cores; docs/benchmarks.md gives the run): α·d/F is the
# product per pair, β/E the element-wise work per pair (the silhouette and the neighbour search form the
# blocks on and above the diagonal only; the Dunn index and the uniformity every block, the former scanning
# each for extremes, the latter taking an exponential per pair).
_PAIR_COST = {"silhouette_score": (0.83, 0.735), "dunn_index": (2.95, 9.38), "uniformity": (1.94, 14.2)}
# (α, β, γ, δ, ε) of the exact neighbour search per loop (numpy; compiled: isotropy._kernels.neighbors.compiled_kernels),
# from ``benchmarks/bench_cost_notes.py --neighbours-only --n-neighbors 5,20,100,1000,3000 --fit`` (d = 50 and 384,
# k = 2 for TwoNN alone and 5 to 3000 for the search TwoNN and MLE share; docs/benchmarks.md gives the run).
_SEARCH_COST = {"numpy": (0.896, 1.69, 1.93, 205.0, 0.107), "compiled": (0.896, 0.593, 0.441, 89.0, 0.0617)}
# The neighbours each searches for by default (the search TwoNN and MLE share in a table is MLE's).
_NEIGHBOURS = {"twonn_dimension": 2, "mle_dimension": DEFAULT_MLE_NEIGHBOURS}


@functools.lru_cache(maxsize=1)
def machine_speed() -> tuple[float, float]:
    """(float32 product flop/s, element-wise float32 elements/s), measured on a tiny calibration."""
    rng = np.random.default_rng(0)
    size, width = 512, 256
    A = rng.standard_normal((size, width), dtype=np.float32)
    B = rng.standard_normal((width, size), dtype=np.float32)
    C = np.empty((size, size), dtype=np.float32)
    products, elements = [], []
    for _ in range(7):  # the median of seven: sustained speed under the machine's current load
        start = time.perf_counter()
        np.matmul(A, B, out=C)
        products.append(2.0 * size * size * width / max(time.perf_counter() - start, 1e-9))
        start = time.perf_counter()
        np.sqrt(np.abs(C, out=C), out=C)
        elements.append(size * size / max(time.perf_counter() - start, 1e-9))
    flops, elements = float(np.median(products)), float(np.median(elements))
    return flops, elements


def estimate_seconds(name: str, n_samples: int, n_features: int, *, n_neighbors: int | None = None) -> float:
    """Expected seconds of the O(n²) metric ``name`` (a key of ``_PAIR_COST``) on ``n_samples`` x ``n_features`` data here.

    ``n_neighbors``: the neighbours the search of ``twonn_dimension`` or ``mle_dimension`` takes (default: the
    metric's own, ``_NEIGHBOURS``); ignored by the other metrics.
    """
    flops, elements = machine_speed()
    pairs = float(n_samples) * float(n_samples)
    if name not in _NEIGHBOURS:
        alpha, beta = _PAIR_COST[name]
        return pairs * (alpha * n_features / flops + beta / elements)
    from isotropy._kernels.neighbors import uses_compiled_kernels
    from isotropy._utils.validation import IsotropyValueError

    k = int(n_neighbors or _NEIGHBOURS[name])
    try:
        compiled = uses_compiled_kernels(n_samples, n_features, k)
    except IsotropyValueError:  # a bad ISOTROPY_JIT: the search itself says so; the note is not the place
        compiled = False
    alpha, beta, gamma, delta, epsilon = _SEARCH_COST["compiled" if compiled else "numpy"]
    rows = float(n_samples) * k
    return (pairs * (alpha * n_features / flops + beta / elements)
            + (gamma * n_features + delta * math.log1p(n_samples / k) + epsilon * k) * rows / elements)


def format_duration(seconds: float) -> str:
    """'45 s', '12 min', '3.2 h'."""
    if seconds < 90:
        return f"{max(seconds, 0.0):.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
