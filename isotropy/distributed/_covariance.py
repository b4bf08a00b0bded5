"""The covariance family on dask arrays: per-chunk sufficient statistics merged by a tree reduction.

Each row chunk becomes a :class:`isotropy.CovarianceAccumulator` on the worker that holds it
(float64 count, mean, centred scatter and sum of unit vectors: O(d²) bytes, whatever the chunk's
length); accumulators are merged pairwise (:meth:`~isotropy.CovarianceAccumulator.merge`, the
update of Chan, Golub & LeVeque), log2(n_chunks) levels deep, and only the final d×d statistics
reach the client. I(W) needs two passes: XᵀX, then per-chunk log-sum-exp terms of the
projections, merged the same way.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from isotropy.distributed._graph import (
    aligned_arguments,
    check_dask_X,
    compute,
    finite_blocks,
    largest_as_given,
    nonfinite_in,
    refuse_nonfinite,
    row_starts,
    tree_reduce,
)

__all__ = [
    "cosine_similarity_mean",
    "covariance_accumulator",
    "isoscore",
    "isoscore_star",
    "participation_ratio",
    "partition_isotropy",
]


class _Refused(NamedTuple):
    """What chunks that cannot be accumulated found, returned as data (no task fails on a worker) and refused on
    the client (:func:`_accepted`) with the in-memory message."""

    nonfinite: tuple  # the first NaN/inf of each such chunk (NonFinite, by row of the whole array)
    subnormal: float  # the largest |x| of the chunks made only of subnormal numbers (0.0: none)
    rows: tuple | None  # (first, last) row of the first such chunk
    normal: bool  # whether a chunk holding a normal number was merged with them


@aligned_arguments
def _chunk_accumulator(block, start):
    """The chunk's :class:`isotropy.CovarianceAccumulator`; a :class:`_Refused` for a NaN/inf or only subnormal numbers."""
    from isotropy._kernels.accumulator import CovarianceAccumulator

    B = np.asarray(block)
    bad = nonfinite_in(B, start)
    if bad is not None:
        return _Refused((bad,), 0.0, None, False)
    top = float(np.abs(B).max()) if B.size else 0.0
    if 0.0 < top < np.finfo(B.dtype).tiny:  # the accumulator refuses it, naming its own parameter
        return _Refused((), top, (start, start + B.shape[0] - 1), False)
    return CovarianceAccumulator().update(B)


def _as_refused(part):
    if isinstance(part, _Refused):
        return part
    return _Refused((), 0.0, None, bool(np.any(part._shift + part._mean) or np.any(part._scatter)))


@aligned_arguments
def _merge_accumulators(a, b):
    from isotropy._kernels.accumulator import CovarianceAccumulator

    if isinstance(a, _Refused) or isinstance(b, _Refused):
        a, b = _as_refused(a), _as_refused(b)
        return _Refused(a.nonfinite + b.nonfinite, max(a.subnormal, b.subnormal), a.rows or b.rows,
                        a.normal or b.normal)
    return CovarianceAccumulator().merge(a).merge(b)


def _accepted(acc, dtype, caller, given=None, top=None):
    """The merged accumulator; or the in-memory message for what a chunk refused (the first NaN/inf in row order;
    data whose largest |x| is subnormal: ``top``, when ``X`` came in a narrower dtype ``given`` than ``dtype``, judged
    in it, as in memory)."""
    from isotropy._utils.magnitude import refuse_subnormal
    from isotropy._utils.validation import IsotropyValueError, refuse_subnormal_as_given

    if isinstance(acc, _Refused):
        refuse_nonfinite(acc.nonfinite, caller)
    if top is not None:
        refuse_subnormal_as_given(given, np.empty(0, dtype=dtype), caller=caller, top=top)
    if not isinstance(acc, _Refused):
        return acc
    if not acc.normal:
        refuse_subnormal(np.empty(0, dtype=dtype), acc.subnormal, caller=caller)
    raise IsotropyValueError(f"The 'X' parameter of {caller} must have a normal number in every row chunk of a dask "
                             f"array. Got rows {acc.rows[0]} to {acc.rows[1]} made only of subnormal numbers (largest "
                             f"|x| = {acc.subnormal:.3g}) instead; rechunk X, or store the data at a larger scale.")


def _accumulator_graph(X, caller, min_features=1, min_samples=2):
    """``(merged accumulator, max|x| or None, X's checked dtype, its dtype as given)``, the first two delayed (the
    largest ``|x|`` only for data that came in a narrower float dtype: :func:`largest_as_given`)."""
    given = X.dtype
    X = check_dask_X(X, caller=caller, min_features=min_features, min_samples=min_samples)
    from dask import delayed

    chunk = delayed(_chunk_accumulator, pure=True, name="isotropy-chunk-statistics")
    blocks = X.to_delayed().ravel()
    partials = [chunk(block, start) for block, start in zip(blocks, row_starts(X))]
    merged = tree_reduce(partials, _merge_accumulators, name="isotropy-merge-statistics")
    return merged, largest_as_given(blocks, given, X.dtype), X.dtype, given


def _accumulate(X, caller, min_features=1, min_samples=2):
    graph, top, dtype, given = _accumulator_graph(X, caller, min_features, min_samples)
    # (no None handed to compute: a client's progress feed waited for it as for a future, for ever)
    acc, top = compute(graph, top) if top is not None else (*compute(graph), None)
    return _accepted(acc, dtype, caller, given, top)


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
    return _accumulate(X, "covariance_accumulator")


def _variance_checked(acc, caller):
    """Run the accumulator's zero-variance check under the public caller's name."""
    from isotropy._kernels.isoscore import _check_variance

    # the accumulator's own floor (its mean is _shift + _mean): the residual _mean alone let the accumulator's check
    # refuse next, naming "The rows given to CovarianceAccumulator.update" (a review)
    mean = acc._shift + acc._mean
    _check_variance(np.trace(acc._scatter), n_samples=acc.n_samples_, mean_sq_norm=float(np.sum(mean * mean)),
                    eps=float(np.finfo(np.float64).eps), caller=caller)


def isoscore(X):
    """:func:`isotropy.isoscore` of a dask array (see there); equal to it on the materialised array."""
    caller = "isoscore"
    acc = _accumulate(X, caller, min_features=2)
    _variance_checked(acc, caller)
    return acc.isoscore()


def isoscore_star(X, *, shrinkage_cov=None, zeta=0.2):
    """:func:`isotropy.isoscore_star` of a dask array (see there)."""
    from isotropy._utils.validation import check_zeta

    caller = "isoscore_star"
    zeta = check_zeta(zeta, caller=caller)
    only_s = zeta == 1.0 and shrinkage_cov is not None  # Σ_S alone: one row is enough, as in memory
    acc = _accumulate(X, caller, min_features=2, min_samples=1 if only_s else 2)
    if zeta == 0.0 or shrinkage_cov is None:  # identical rows with ζ > 0 and Σ_S: ζ·Σ_S, as in memory
        _variance_checked(acc, caller)
    value = acc._isoscore_star(shrinkage_cov=shrinkage_cov, zeta=zeta)
    if shrinkage_cov is None and zeta != 0.0:  # as in memory
        from isotropy._utils.warn import warn_identity_shrinkage

        warn_identity_shrinkage(caller, stacklevel=3)  # (isotropy.isoscore_star -> here)
    return value


def participation_ratio(X):
    """:func:`isotropy.participation_ratio` of a dask array (see there)."""
    caller = "participation_ratio"
    acc = _accumulate(X, caller)
    _variance_checked(acc, caller)
    return acc.participation_ratio()


def cosine_similarity_mean(X):
    """:func:`isotropy.cosine_similarity_mean` of a dask array (see there): per-chunk sums of the unit rows (the
    in-memory arithmetic), merged; all-zero rows and rows made only of subnormal numbers refused as in memory."""
    from isotropy._kernels.rows import mean_pair_cosine
    from isotropy.distributed._rows import refuse_rows, unit_sums

    caller = "cosine_similarity_mean"
    X = check_dask_X(X, caller=caller)
    unit_sum, _, zero, subnormal = unit_sums(X, caller=caller, squares=False)
    refuse_rows(zero, subnormal, caller=caller, name="X")
    return float(mean_pair_cosine(float(unit_sum @ unit_sum), X.shape[0]))


# ---------------------------------------------------------------------------------------------- I(W)
@aligned_arguments
def _gram(block):
    """``(e, Bᵀ·B at scale 2**-e, max|B|)`` of one block; ``e`` is None for a block of zeros.

    A block at a safe scale keeps ``e = 0`` (its Gram is the plain one); one whose largest entry is far
    from 1 is brought to unit scale by a power of two first (exact), so that ``BᵀB`` never overflows
    (values near float64's limit) nor loses every digit (values near its smallest normal numbers).
    """
    import math

    from isotropy._utils.magnitude import safe_exponent_range

    B = np.asarray(block, dtype=np.float64)
    top = float(np.abs(B).max()) if B.size else 0.0
    if top == 0.0:
        return None, np.zeros((B.shape[1], B.shape[1])), 0.0
    e = math.frexp(top)[1]
    e = 0 if abs(e) <= safe_exponent_range(B) else e
    Bs = np.ldexp(B, -e) if e else B
    return e, Bs.T @ Bs, top


@aligned_arguments
def _add(a, b):
    return a + b


@aligned_arguments
def _add_gram(a, b):
    """The Gram matrices of two groups of blocks at the larger of their two scales (each factor a power of two)."""
    if a[0] is None or b[0] is None:
        kept = b if a[0] is None else a
        return kept[0], kept[1] + 0.0, max(a[2], b[2])
    e = max(a[0], b[0])
    with np.errstate(under="ignore"):  # a Gram 2**-2044 times smaller than the other's adds nothing it could hold
        G = np.ldexp(a[1], 2 * (a[0] - e)) + np.ldexp(b[1], 2 * (b[0] - e))
    return e, G, max(a[2], b[2])


# Float64 entries of a chunk projected at a time by _logsumexp_terms (8 MiB): its memory does not grow with the chunk
_PROJECTED = 2**20


@aligned_arguments
def _logsumexp_terms(block, U, exponent):
    """Per column of P = [B U, −B U]: the maximum m and Σ exp(P − m); None when a projection overflows float64.

    ``()`` for a block without rows (it adds nothing to the sums). The rows are projected a slice at a time and
    the slices' terms merged (:func:`_merge_logsumexp`): the whole chunk at once held about 9 float64 copies of it,
    and a 67 MB chunk of 335,544 × 50 float32 rows killed 400 MiB workers.
    """
    out = ()
    step = max(1, _PROJECTED // max(1, block.shape[1]))
    for start in range(0, block.shape[0], step):
        B = np.asarray(block[start:start + step], dtype=np.float64)
        P = (np.ldexp(B, -exponent) if exponent else B) @ U
        if exponent:
            with np.errstate(over="ignore"):  # checked just below
                P = np.ldexp(P, exponent)
        if not np.isfinite(P).all():
            return None
        top = np.concatenate([P.max(axis=0), -P.min(axis=0)])
        with np.errstate(over="ignore"):  # a difference below -1.8e308 is -inf: its exp is 0, as it should be
            sums = np.concatenate([np.exp(P - top[:P.shape[1]]).sum(axis=0), np.exp(-P - top[P.shape[1]:]).sum(axis=0)])
        out = _merge_logsumexp(out, (top, sums))
    return out


@aligned_arguments
def _merge_logsumexp(a, b):
    if a is None or b is None:  # a projection overflowed
        return None
    if not a or not b:  # a block without rows
        return b if not a else a
    top = np.maximum(a[0], b[0])
    with np.errstate(over="ignore"):
        return top, a[1] * np.exp(a[0] - top) + b[1] * np.exp(b[0] - top)


def partition_isotropy(X):
    """:func:`isotropy.partition_isotropy` of a dask array (see there): two passes over the chunks.

    The Gram matrix is summed at a common power-of-two scale (:func:`_gram`), so data near float64's
    limits give the in-memory value; projections that overflow float64 are refused as there.
    """
    from dask import delayed

    from isotropy._utils.magnitude import refuse_partition_all_zero, refuse_partition_overflow, rescaled
    from isotropy._utils.validation import refuse_subnormal_as_given

    caller = "partition_isotropy"
    given = X.dtype
    X = check_dask_X(X, caller=caller, min_samples=2)  # one row, or all zero: refused as in memory
    blocks = finite_blocks(X, caller)
    gram = tree_reduce([delayed(_gram, pure=True)(b) for b in blocks], _add_gram, name="isotropy-merge-gram")
    ((exponent, G, top),) = compute(gram)
    refuse_partition_all_zero(top, X.shape[0])
    refuse_subnormal_as_given(given, X, caller=caller, top=top)  # float16 judged in float16, as in memory
    dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.float64  # check_X's: ints are read as float64
    rescaled(np.array([top], dtype=dtype), top, caller=caller)  # only subnormal numbers of that dtype: refused as in memory
    exponent = exponent or 0
    _, U = np.linalg.eigh(G)
    terms = [delayed(_logsumexp_terms, pure=True)(b, U, exponent) for b in blocks]
    (merged,) = compute(tree_reduce(terms, _merge_logsumexp, name="isotropy-merge-logsumexp"))
    if merged is None:
        refuse_partition_overflow(exponent)
    top, total = merged
    log_z = top + np.log(total)
    with np.errstate(over="ignore"):  # log I below -1.8e308: I = 0.0, as in memory
        return float(np.exp(log_z.min() - log_z.max()))
