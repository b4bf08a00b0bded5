"""The covariance family on dask arrays: per-chunk sufficient statistics merged by a tree reduction.

Each row chunk becomes a :class:`isotropy.CovarianceAccumulator` on the worker that holds it
(float64 count, mean, centred scatter and sum of unit vectors: O(d²) bytes, whatever the chunk's
length); accumulators are merged pairwise (:meth:`~isotropy.CovarianceAccumulator.merge`, the
update of Chan, Golub & LeVeque), log2(n_chunks) levels deep, and only the final d×d statistics
reach the client. I(W) needs two passes: XᵀX, then per-chunk log-sum-exp terms of the
projections, merged the same way.
"""

from __future__ import annotations

import numpy as np

from isotropy.distributed._graph import check_dask_X, compute, finite_blocks, tree_reduce

__all__ = [
    "cosine_similarity_mean",
    "covariance_accumulator",
    "isoscore",
    "isoscore_star",
    "participation_ratio",
    "partition_isotropy",
]


def _chunk_accumulator(block):
    from isotropy._kernels.accumulator import CovarianceAccumulator

    return CovarianceAccumulator().update(block)


def _merge_accumulators(a, b):
    from isotropy._kernels.accumulator import CovarianceAccumulator

    return CovarianceAccumulator().merge(a).merge(b)


def _accumulator_graph(X, caller, min_features=1):
    X = check_dask_X(X, caller=caller, min_features=min_features)
    from dask import delayed

    chunk = delayed(_chunk_accumulator, pure=True, name="isotropy-chunk-statistics")
    partials = [chunk(block) for block in finite_blocks(X, caller)]
    return tree_reduce(partials, _merge_accumulators, name="isotropy-merge-statistics")


def covariance_accumulator(X):
    """A :class:`isotropy.CovarianceAccumulator` holding every row of the dask array ``X``.

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
        Row-chunked data (column chunks are joined first).

    Returns
    -------
    isotropy.CovarianceAccumulator
        Its ``mean()``, ``covariance()``, ``isoscore()``, ... are those of the materialised array.
    """
    (acc,) = compute(_accumulator_graph(X, "covariance_accumulator"))
    return acc


def _variance_checked(acc, caller):
    """Run the accumulator's zero-variance check under the public caller's name."""
    from isotropy._kernels.isoscore import _check_variance

    _check_variance(np.trace(acc._scatter), n_samples=acc.n_samples_, mean_sq_norm=float(acc._mean @ acc._mean),
                    eps=float(np.finfo(np.float64).eps), caller=caller)


def isoscore(X):
    """:func:`isotropy.isoscore` of a dask array (see there); equal to it on the materialised array."""
    caller = "isoscore"
    (acc,) = compute(_accumulator_graph(X, caller, min_features=2))
    _variance_checked(acc, caller)
    return acc.isoscore()


def isoscore_star(X, *, shrinkage_cov=None, zeta=0.2):
    """:func:`isotropy.isoscore_star` of a dask array (see there)."""
    from isotropy._utils.validation import check_scalar

    caller = "isoscore_star"
    zeta = float(check_scalar(zeta, "zeta", caller=caller, low=0.0, high=1.0))
    (acc,) = compute(_accumulator_graph(X, caller, min_features=2))
    if zeta == 0.0:
        _variance_checked(acc, caller)
    return acc.isoscore_star(shrinkage_cov=shrinkage_cov, zeta=zeta)


def participation_ratio(X):
    """:func:`isotropy.participation_ratio` of a dask array (see there)."""
    caller = "participation_ratio"
    (acc,) = compute(_accumulator_graph(X, caller))
    _variance_checked(acc, caller)
    return acc.participation_ratio()


def cosine_similarity_mean(X):
    """:func:`isotropy.cosine_similarity_mean` of a dask array (see there)."""
    from isotropy._utils.validation import IsotropyValueError

    caller = "cosine_similarity_mean"
    (acc,) = compute(_accumulator_graph(X, caller))
    if acc._n_zero_rows:
        raise IsotropyValueError(f"The 'X' parameter of {caller} must not contain zero vectors, for which cosine "
                                 f"similarity is undefined. Got {acc._n_zero_rows} all-zero row(s) instead.")
    return acc.cosine_similarity_mean()


# ---------------------------------------------------------------------------------------------- I(W)
def _gram(block):
    B = np.asarray(block, dtype=np.float64)
    return B.T @ B


def _add(a, b):
    return a + b


def _logsumexp_terms(block, U):
    """Per column of P = [B U, −B U]: the maximum m and Σ exp(P − m)."""
    P = np.asarray(block, dtype=np.float64) @ U
    P = np.concatenate([P, -P], axis=1)
    top = P.max(axis=0)
    return top, np.exp(P - top).sum(axis=0)


def _merge_logsumexp(a, b):
    top = np.maximum(a[0], b[0])
    return top, a[1] * np.exp(a[0] - top) + b[1] * np.exp(b[0] - top)


def partition_isotropy(X):
    """:func:`isotropy.partition_isotropy` of a dask array (see there): two passes over the chunks."""
    from dask import delayed

    caller = "partition_isotropy"
    X = check_dask_X(X, caller=caller, min_samples=1)
    blocks = finite_blocks(X, caller)
    gram = tree_reduce([delayed(_gram, pure=True)(b) for b in blocks], _add, name="isotropy-merge-gram")
    (G,) = compute(gram)
    _, U = np.linalg.eigh(G)
    terms = [delayed(_logsumexp_terms, pure=True)(b, U) for b in blocks]
    ((top, total),) = compute(tree_reduce(terms, _merge_logsumexp, name="isotropy-merge-logsumexp"))
    log_z = top + np.log(total)
    return float(np.exp(log_z.min() - log_z.max()))
