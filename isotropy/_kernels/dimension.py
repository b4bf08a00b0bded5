"""Kernels of the nearest-neighbour dimension estimators, shared by :mod:`isotropy.metrics.dimension` and :mod:`isotropy.distributed`.

Private: the maximum-likelihood terms of Levina & Bickel (2004) from neighbour distances and their
pooling over samples; the public estimators (in memory) and the dask ones both call them.
"""

from __future__ import annotations

import warnings

import numpy as np

_AVERAGING = ("mean", "harmonic", "median")


def _local_mle(dist: np.ndarray, caller: str) -> np.ndarray:
    """Levina–Bickel local estimates from sorted neighbour distances (n, k), k >= 2."""
    k = dist.shape[1]
    total = np.log(dist[:, -1:] / dist[:, :-1]).sum(axis=1)
    flat = int(np.count_nonzero(total == 0))
    if flat:
        warnings.warn(
            f"{caller}: {flat} points have all their {k} nearest neighbours at the same distance; their local "
            f"MLE dimension is infinite (increase n_neighbors).", UserWarning, stacklevel=3)
    with np.errstate(divide="ignore"):
        return (k - 1) / total


def _pool(local: np.ndarray, averaging: str) -> float:
    """Pool local estimates: arithmetic mean, harmonic mean (inverse of the mean inverse) or median."""
    if averaging == "mean":
        return float(local.mean())
    if averaging == "median":
        return float(np.median(local))
    return float(1.0 / np.mean(1.0 / local))
