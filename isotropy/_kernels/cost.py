"""Expected running time of the O(n²) metrics, from n, d and this machine's measured speed.

The pairwise metrics (silhouette, Dunn, uniformity, TwoNN, MLE) form the blocks of the n x n distance
matrix: one product of d-long rows per pair, plus a few element-wise passes per pair (clip,
square root, per-cluster sums or neighbour selection). Their time is therefore close to

    t ≈ n² · (α_metric · d / F + β_metric / E)

with F the float32 product speed (flop/s) and E the element-wise speed (elements/s) of this
machine, both measured once per process by a tiny calibration (a 512 x 256 x 512 product and a
square root over 512² elements, about 10 ms), and α, β per-metric constants fitted on this code
(``_PAIR_COST``; for the neighbour search, per loop). On the machine they were fitted on, the
estimates fall within 1.5× of the measured times at widths and sizes the fit did not see
(``benchmarks/bench_cost_notes.py``, docs/benchmarks.md); on other machines they were not measured.
Enough to choose between waiting, ``--sample-size`` and the distributed path.
"""

from __future__ import annotations

import functools
import time

import numpy as np

from isotropy._kernels.dimension import DEFAULT_MLE_NEIGHBOURS

__all__ = ["estimate_seconds", "format_duration", "machine_speed"]

# (α, β) from ``benchmarks/bench_cost_notes.py --fit`` (float32 data near a 10-dimensional subspace, 10 clusters,
# d = 50, 128 and 384, n where the estimate is 15 s, 2 cores; docs/benchmarks.md gives the run): α·d/F is the
# product per pair, β/E the element-wise work per pair (the silhouette and the neighbour search form the
# blocks on and above the diagonal only; the Dunn index and the uniformity every block, the former scanning
# each for extremes, the latter taking an exponential per pair).
_PAIR_COST = {"silhouette_score": (0.83, 0.735), "dunn_index": (2.95, 9.38), "uniformity": (1.94, 14.2),
              "twonn_dimension": (0.862, 1.34), "mle_dimension": (0.81, 1.47)}
# The neighbour search on its compiled loops (isotropy._kernels.neighbors.compiled_kernels): the same products
# (α), a cheaper selection (β).
_PAIR_COST_COMPILED = {"twonn_dimension": (0.862, 0.458), "mle_dimension": (0.81, 0.56)}
# The neighbours each searches for (the search TwoNN and MLE share in a table is MLE's).
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
    alpha, beta = _PAIR_COST[name]
    if name in _NEIGHBOURS:
        from isotropy._kernels.neighbors import uses_compiled_kernels
        from isotropy._utils.validation import IsotropyValueError

        try:
            compiled = uses_compiled_kernels(n_samples, n_features, n_neighbors or _NEIGHBOURS[name])
        except IsotropyValueError:  # a bad ISOTROPY_JIT: the search itself says so; the note is not the place
            compiled = False
        if compiled:
            alpha, beta = _PAIR_COST_COMPILED[name]
    return pairs * (alpha * n_features / flops + beta / elements)


def format_duration(seconds: float) -> str:
    """'45 s', '12 min', '3.2 h'."""
    if seconds < 90:
        return f"{max(seconds, 0.0):.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
