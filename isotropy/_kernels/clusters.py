"""Distance of one pair of samples for the cluster indices, shared by :mod:`isotropy.metrics.cluster_indices` and :mod:`isotropy.distributed`.

Private: the Dunn index locates its extreme pairs on a product kernel, then recomputes their
distances straight from the data with :func:`_pair_distance` (numpy or torch, in memory or on a
dask worker).
"""

from __future__ import annotations

from isotropy._utils.backend import is_torch


def _scalar(value) -> float:
    return float(value.detach()) if is_torch(value) else float(value)


def _pair_distance(X, i, j, metric, xp):
    """d(x_i, x_j) straight from the data (keeps a torch graph)."""
    if metric == "euclidean":
        return xp.sqrt(xp.sum((X[i, :] - X[j, :]) ** 2))
    ni, nj = xp.sqrt(xp.sum(X[i, :] ** 2)), xp.sqrt(xp.sum(X[j, :] ** 2))
    if _scalar(ni) == 0.0 or _scalar(nj) == 0.0:
        return xp.sum(X[i, :]) * 0.0 + (0.0 if i == j else 1.0)
    # 1 - cos as half the squared distance of the unit rows: never negative, 0 for parallel rows, and no
    # cancellation for nearly parallel ones (1 - x.y/(|x||y|) read -7e-5 for a duplicate row at an offset of 1e6)
    diff = X[i, :] / ni - X[j, :] / nj
    return xp.sum(diff * diff) / 2.0
