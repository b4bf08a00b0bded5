"""Distance of one pair of samples for the cluster indices, shared by :mod:`isotropy.metrics.cluster_indices` and :mod:`isotropy.distributed`.

Private: the Dunn index locates its extreme pairs on a product kernel, then recomputes their
distances straight from the data with :func:`_pair_distance` (numpy or torch, in memory or on a
dask worker).
"""

from __future__ import annotations

from isotropy._utils.backend import is_torch
from isotropy._utils.validation import IsotropyValueError


def _scalar(value) -> float:
    return float(value.detach()) if is_torch(value) else float(value)


def _sqrt(x, xp):
    """Square root with a zero (not NaN) gradient at 0, e.g. for a singleton's distance to its centroid."""
    positive = x > 0
    return xp.where(positive, xp.sqrt(xp.where(positive, x, xp.ones_like(x))), xp.zeros_like(x))


def _pair_distance(X, i, j, metric, xp):
    """d(x_i, x_j) straight from the data (keeps a torch graph; the gradient of a zero distance is 0, not NaN: two
    clusters sharing a point gave a NaN gradient to a Dunn index of 0)."""
    if metric == "euclidean":
        return _sqrt(xp.sum((X[i, :] - X[j, :]) ** 2), xp)
    ni, nj = xp.sqrt(xp.sum(X[i, :] ** 2)), xp.sqrt(xp.sum(X[j, :] ** 2))
    if _scalar(ni) == 0.0 or _scalar(nj) == 0.0:
        return xp.sum(X[i, :]) * 0.0 + (0.0 if i == j else 1.0)
    # 1 - cos as half the squared distance of the unit rows: never negative, 0 for parallel rows, and no
    # cancellation for nearly parallel ones (1 - x.y/(|x||y|) read -7e-5 for a duplicate row at an offset of 1e6)
    diff = X[i, :] / ni - X[j, :] / nj
    return xp.sum(diff * diff) / 2.0


def _check_dunn_defined(separation: float, diameter: float, n_samples: int, metric: str, caller: str = "dunn_index"):
    """Refuse a Dunn index that is 0/0: every cluster one repeated point, and two clusters at the same point.

    The same refusal in memory and on dask (:mod:`isotropy.distributed`), as isoscore refuses identical
    samples: the smallest distance between clusters and the largest diameter are both 0, and no value
    (inf, nan, 0) is right. A zero diameter with clusters apart stays inf (perfectly compact clusters).
    """
    if diameter == 0.0 and separation == 0.0:
        raise IsotropyValueError(
            f"The 'X' parameter of {caller} must have a cluster of non-zero diameter or clusters at a non-zero "
            f"distance from each other. Got {n_samples} samples whose clusters are each a single repeated point, "
            f"two of them at the same point ({metric} distance 0), so the index is 0/0, undefined.")
