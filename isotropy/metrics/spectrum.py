"""Effective rank of an embedding matrix (Roy & Vetterli, 2007) and RankMe (Garrido et al., 2023).

Both are the exponential of the Shannon entropy of the normalised singular values of ``X``: a
smooth count of the dimensions the embeddings use, from 1 (one direction) to ``min(n, d)``
(every singular value equal). RankMe is the same quantity with a small ε added to each
normalised singular value, as its paper defines it for detecting dimensional collapse.

Maximum rank. ``n`` rows span at most ``min(n, d)`` dimensions, and after centring at most
``min(n − 1, d)`` (the centred rows sum to zero). A normalised rank (``normalize=True``) divides by
the bound that applies, so that one is reachable: dividing a centred rank by ``min(n, d)`` would
cap it below 1 whenever ``n ≤ d``. RankMe's ε raises that bound (its ``p`` sum to ``1 + min(n, d)·ε``):
its normalised value divides by the RankMe of the flat spectrum, so that it, too, is at most 1.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from isotropy._kernels.accumulator import entropy_rank, entropy_rank_in_range
from isotropy._kernels.rows import first_chunk_shift
from isotropy._utils.backend import is_dask, is_torch, without_autocast
from isotropy._utils.errors import IsotropyValueError
from isotropy._utils.validation import check_bool, check_scalar, check_X

__all__ = ["effective_rank", "rankme", "singular_values"]


@without_autocast
def singular_values(X, *, center: bool = False):
    """Singular values of ``X`` (or of ``X`` minus its column means), largest first.

    numpy and dask input give a float64 numpy array (dask by the tall-and-skinny QR of
    :func:`dask.array.linalg.svd`: exact, never an ``n x n`` array; tall numpy input by a QR of its
    row chunks in turn, holding one chunk in float64 beside the data); torch input a tensor on its
    device, differentiable. The values are scaled by the power of two that brought ``X`` to unit
    scale (exact), so only their ratios are meaningful, which is all the ranks use.

    ``center`` subtracts the column means as the covariance metrics do (two-pass in effect, on every
    backend): the rows less a shift ``K`` near them (:func:`isotropy._kernels.rows.first_chunk_shift`:
    the mean of a first chunk of rows, or their common row when they are all equal), then less the
    mean of what that leaves. A large common offset loses no digits to the rounding of one mean
    (a single-pass numpy mean at an offset of 1e8 moved an effective rank from 5.04 to 5.81), and
    identical rows are centred to exact zeros on numpy, torch and dask alike (they were the rounding
    noise of an inexact mean on some backends, an effective rank of 1.0 where others refused).
    """
    caller = "singular_values"
    check_bool(center, "center", caller=caller)
    return _singular_values(_validated(X, caller), center=center, caller=caller, given=getattr(X, "dtype", None))


def _validated(X, caller: str):
    """``X`` checked once: numpy/torch by :func:`check_X` (rescaled to unit scale); dask by :func:`~isotropy.distributed._graph.check_dask_shape`
    (its values are checked, with the same messages, in the one pass that finds its scale)."""
    if not is_dask(X):
        return check_X(X, caller=caller, rescale=True)
    from isotropy.distributed._graph import check_dask_shape

    return check_dask_shape(X, caller=caller, allow_unknown_rows=True)


def dask_scale(X, *, caller: str, name: str = "X", given=None) -> float:
    """``max|x|`` of a dask array checked by :func:`~isotropy.distributed._graph.check_dask_shape`, its values checked as :func:`check_X` checks
    them in memory: a NaN or inf refused at its row and column (found by a second pass, only then), and data whose
    largest ``|x|`` is subnormal refused (they have lost their significant digits; their SVD failed in LAPACK), in
    the dtype ``given`` they came in when it is narrower (float16, read as float32)."""
    import dask
    import dask.array as da

    from isotropy._utils.magnitude import refuse_subnormal
    from isotropy._utils.validation import refuse_subnormal_as_given

    # rows not known (a masked array), or a chunk of no rows (the same array after compute_chunk_sizes(), the route
    # the other metrics' errors give): block by block, dask's min/max failed on its empty blocks (a raw concatenate
    # error); rows counted, and too few refused as check_dask_shape refuses them
    if math.isnan(X.shape[0]) or 0 in X.chunks[0]:
        parts = dask.compute(*[dask.delayed(_block_extremes)(block) for block in X.to_delayed().ravel()])
        rows = sum(part[0] for part in parts) // max(1, X.numblocks[1])
        if rows < 2:
            raise IsotropyValueError(f"The '{name}' parameter of {caller} must have at least 2 samples (rows). Got "
                                     f"{rows} instead.")
        nonfinite = any(rows and not (math.isfinite(low) and math.isfinite(high)) for rows, low, high in parts)
        low = float("nan") if nonfinite else min(part[1] for part in parts)  # (min of floats with NaN: by order)
        high = float("nan") if nonfinite else max(part[2] for part in parts)
    else:
        low, high = (float(v) for v in da.compute(X.min(), X.max()))
    if not (np.isfinite(low) and np.isfinite(high)):
        found, row = _first_nonfinite_block(X)
        raise IsotropyValueError(f"The '{name}' parameter of {caller} must contain only finite values. Got "
                                 f"{'NaN or inf' if found is None else found.at(row)} instead.")
    top = max(-low, high)
    refuse_subnormal_as_given(given, X, caller=caller, name=name, top=top)  # float16 judged in float16, as in memory
    refuse_subnormal(np.empty(0, dtype=X.dtype), top, caller=caller, name=name)
    return top


def _block_extremes(block):
    """``(rows, min, max)`` of one block (``inf``, ``-inf`` for an empty one); NaN propagates to the bounds."""
    B = np.asarray(block)
    if not B.size:
        return B.shape[0], float("inf"), float("-inf")
    return B.shape[0], float(B.min()), float(B.max())


def dask_rows(X) -> int:
    """The rows of a dask array, counted from its blocks when its chunk sizes are unknown (reads them once)."""
    if not math.isnan(X.shape[0]):
        return int(X.shape[0])
    import dask

    shapes = dask.compute(*[dask.delayed(np.shape)(block) for block in X.to_delayed()[:, 0]])
    return int(sum(shape[0] for shape in shapes))


def _first_nonfinite_block(X):
    """``(NonFinite, global row)`` of the first NaN/inf of a dask array, block row by block row (also when its chunk
    sizes are unknown: each block says its rows); ``(None, None)`` when there is none."""
    import dask

    from isotropy._utils.validation import first_nonfinite

    def search(block):
        return block.shape[0], first_nonfinite(np.asarray(block))

    found = dask.compute(*[dask.delayed(search)(block) for block in X.rechunk({1: -1}).to_delayed().ravel()])
    start = 0
    for rows, hit in found:
        if hit is not None:
            return hit, start + hit.row
        start += rows
    return None, None


def _singular_values(X, *, center: bool, caller: str, given=None):
    """Singular values of an already validated ``X`` (see :func:`singular_values`); ``given``: the dtype a dask ``X``
    came in (:func:`dask_scale`)."""
    if is_dask(X):
        import dask.array as da

        scale = dask_scale(X, caller=caller, given=given)
        X = X.astype(np.float64)
        if scale == 0:
            return np.zeros(min(dask_rows(X), X.shape[1]))
        X = X * 2.0 ** -np.frexp(scale)[1]
        if X.numblocks[1] != 1:
            X = X.rechunk({1: -1})
        if center:
            X = X - _dask_shift(X)
            X = X - X.mean(axis=0)
        rows = max(X.shape[1], _SVD_ELEMENTS // X.shape[1])
        if X.shape[0] > X.shape[1] and max(X.chunks[0]) > rows:
            # the tall-and-skinny QR holds several float64 copies of a chunk: a 67 MB chunk of 335,544 × 50 float32
            # rows killed 400 MiB workers; rechunked into chunks of about 16 MiB (the rows themselves unchanged)
            X = X.rechunk({0: rows})
        _, s, _ = da.linalg.svd(X)
        return np.asarray(s.compute())
    if is_torch(X):
        import torch

        if not center:
            return torch.linalg.svdvals(X)
        Z = X - first_chunk_shift(X.detach())  # (a constant: the gradient is that of X less its mean)
        # in place: one centred copy held (Z - mean held two at once); Z is this function's own tensor, and no
        # backward saves it before (the gradient of a subtraction or a mean needs no input), so autograd is unharmed
        Z.sub_(Z.mean(dim=0, keepdim=True))
        return torch.linalg.svdvals(Z)
    return _numpy_singular_values(X, center=center)


def _dask_shift(X):
    """The shift ``K`` of :func:`singular_values` for a dask array (one column block): :func:`first_chunk_shift` of its
    first block that has rows (computed here: a chunk; blocks of a filtered array may be empty)."""
    for block in X.to_delayed()[:, 0]:
        first = np.asarray(block.compute())
        if first.shape[0]:
            return first_chunk_shift(first)
    return np.zeros(X.shape[1])  # no rows (refused before: at least 2 are counted)


def _numpy_singular_values(X, *, center: bool):
    """Singular values of a numpy ``X`` (less its column means): one SVD of a float64 copy when it is small, else
    those of the ``R`` of a QR of its float64 row chunks, one after the other.

    The SVD of a float64 copy held the copy, its centred copy and LAPACK's own copy at once: five times a float32
    input (a user's scale trial). ``R`` has the singular values of the rows it has
    absorbed (a QR keeps them: ``[R; C] = Q'R'``), so the rows go in chunks of ``_QR_ELEMENTS``, each stacked under
    the ``d x d`` ``R`` so far (the tall-and-skinny QR of the dask path, here in one stream): memory bounded by a
    chunk, the same backward stability as the SVD of the whole (Householder QR, then the SVD of ``R``), and about
    half its flops when ``n >> d``.

    Centring (see :func:`singular_values`) subtracts the shift ``K`` of the first chunk, then the mean of the rows
    less ``K``: for tall input a first pass over the float64 chunks sums them (one chunk held, as in the QR's pass).
    """
    n, d = X.shape
    rows = max(2 * d, _QR_ELEMENTS // max(d, 1))
    shift = first_chunk_shift(X[:rows]) if center else None
    if n <= rows:  # one chunk: the SVD of the whole, as always
        if not center:
            return np.linalg.svd(np.asarray(X, dtype=np.float64), compute_uv=False)
        Z = np.array(X, dtype=np.float64)  # one float64 copy, centred in place
        Z -= shift
        Z -= Z.mean(axis=0)
        return np.linalg.svd(Z, compute_uv=False)
    if center:  # the mean of the rows less the shift, a float64 chunk at a time
        total = np.zeros(d)
        for start in range(0, n, rows):
            C = np.array(X[start:start + rows], dtype=np.float64)
            C -= shift
            total += C.sum(axis=0)
        mean = total / n
    R = np.empty((0, d))
    for start in range(0, n, rows):
        C = np.array(X[start:start + rows], dtype=np.float64)
        if center:
            C -= shift
            C -= mean
        R = np.linalg.qr(np.concatenate([R, C]), mode="r")
    return np.linalg.svd(R, compute_uv=False)


# Float64 entries per row chunk of the dask SVD (16 MiB); a chunk keeps at least as many rows as columns
_SVD_ELEMENTS = 2**21
# The same in memory (4 MiB), where each chunk, at least twice as many rows as columns, is stacked under the d x d R
# so far: a chunk, its stack and the QR's own copy of it are what the SVD holds beside the data
_QR_ELEMENTS = 2**19


def _rank_bound(n_samples: int, n_features: int, center: bool) -> int:
    return min(n_samples - 1 if center else n_samples, n_features)


def _entropy_rank(s, *, epsilon: float, caller: str):
    """exp(−Σ p log p), p = s/Σs + ε (terms with p = 0 contribute 0): torch here, numpy in the accumulator's kernel."""
    if is_torch(s):
        import torch

        total = s.sum()
        if float(total.detach()) == 0:
            raise IsotropyValueError(f"The 'X' parameter of {caller} must not be all zero (after centring when "
                                     f"center=True): every singular value is 0.")
        p = s / total + epsilon
        terms = torch.where(p > 0, p * torch.log(torch.where(p > 0, p, torch.ones_like(p))), torch.zeros_like(p))
        return torch.exp(-terms.sum())
    return entropy_rank(s, epsilon=epsilon, caller=caller)


def effective_rank(X, *, center: bool = False, normalize: bool = False):
    """Effective rank of ``X``: the exponential of the entropy of its normalised singular values.

    Parameters
    ----------
    X : array-like, torch.Tensor or dask array of shape (n_samples, n_features)
        The embeddings, one sample per row.
    center : bool, default=False
        Subtract the column means first (the rank of the point cloud's spread rather than of the
        matrix; Roy & Vetterli define it on the matrix as given). Identical rows leave nothing: they
        are refused on every backend, as :func:`isotropy.isoscore` refuses them.
    normalize : bool, default=False
        Divide by the largest rank ``X`` can have: ``min(n_samples, n_features)``, or
        ``min(n_samples − 1, n_features)`` when ``center`` (centred rows span one dimension fewer).

    Returns
    -------
    erank : float or torch.Tensor
        In ``[1, min(n, d)]`` (``(0, 1]`` when ``normalize``). Python float for numpy and dask
        input; a differentiable 0-dim tensor for torch input.

    Notes
    -----
    With :math:`\\sigma_1 \\ge \\dots \\ge \\sigma_K` the singular values of ``X``,
    :math:`K = \\min(n, d)`,

    .. math:: p_k = \\frac{\\sigma_k}{\\sum_j \\sigma_j}, \\qquad
              \\operatorname{erank}(X) = \\exp\\Big(-\\sum_{k: p_k > 0} p_k \\log p_k\\Big).

    It is invariant to scaling ``X`` and to orthogonal transforms of its rows or columns.

    References
    ----------
    .. [1] O. Roy and M. Vetterli, "The effective rank: a measure of effective dimensionality",
       15th European Signal Processing Conference (EUSIPCO), 2007.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy.metrics.spectrum import effective_rank
    >>> round(effective_rank(np.diag([1.0, 1.0, 1.0, 0.0])), 12)      # three equal directions
    3.0
    >>> round(effective_rank(np.eye(5), center=True, normalize=True), 12)   # 5 centred rows span 4 dimensions
    1.0
    """
    return _rank(X, center=center, normalize=normalize, epsilon=0.0, caller="effective_rank")


def rankme(X, *, epsilon: float = 1e-7, center: bool = False, normalize: bool = False):
    """RankMe: the smooth rank of an embedding matrix used to detect dimensional collapse.

    Parameters
    ----------
    X : array-like, torch.Tensor or dask array of shape (n_samples, n_features)
        The embeddings, one sample per row (the paper uses ``n ≥ d`` source embeddings).
    epsilon : float, default=1e-7
        Added to each normalised singular value, as in the paper.
    center : bool, default=False
        Subtract the column means first (the paper does not); identical rows are refused, as by
        :func:`effective_rank`.
    normalize : bool, default=False
        Divide by the RankMe of a flat spectrum of ``min(n_samples, n_features)`` equal singular
        values (``min(n_samples − 1, n_features)`` when ``center``): the largest value for this shape,
        slightly above that count with ``epsilon > 0``, so the normalised value is at most 1.

    Returns
    -------
    rank : float or torch.Tensor
        Between the RankMe of one non-zero singular value (1 when ``epsilon`` is 0) and that of the
        flat spectrum (``(0, 1]`` when ``normalize``). Python float for numpy and dask input; a
        differentiable 0-dim tensor for torch input.

    Notes
    -----
    .. math:: p_k = \\frac{\\sigma_k(X)}{\\lVert \\sigma(X) \\rVert_1} + \\varepsilon, \\qquad
              \\operatorname{RankMe}(X) = \\exp\\Big(-\\sum_{k=1}^{\\min(n, d)} p_k \\log p_k\\Big).

    With ``epsilon=0`` it equals :func:`effective_rank`.

    References
    ----------
    .. [1] Q. Garrido, R. Balestriero, L. Najman and Y. LeCun, "RankMe: Assessing the Downstream
       Performance of Pretrained Self-Supervised Representations by Their Rank", ICML 2023.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy.metrics.spectrum import rankme
    >>> round(rankme(np.diag([2.0, 2.0, 0.0])), 5)
    2.0
    """
    check_scalar(epsilon, "epsilon", caller="rankme", kind=numbers.Real, low=0, high=1)
    return _rank(X, center=center, normalize=normalize, epsilon=float(epsilon), caller="rankme")


@without_autocast
def _rank(X, *, center, normalize, epsilon, caller):
    check_bool(center, "center", caller=caller)
    check_bool(normalize, "normalize", caller=caller)
    given = getattr(X, "dtype", None)
    X = _validated(X, caller)
    s = _singular_values(X, center=center, caller=caller, given=given)
    n_rows = X.shape[0]
    if math.isnan(n_rows):  # a dask array of unknown row count (a filtered one): the values say whether n < d
        n_rows = int(s.shape[0]) if int(s.shape[0]) < int(X.shape[1]) else int(X.shape[1]) + 1
    reachable = _rank_bound(int(n_rows), int(X.shape[1]), center)
    if reachable < int(s.shape[0]):  # centred n <= d rows: the last value is 0, but for rounding (which made the
        # effective rank of 2 centred rows 1.0000000000000036, past its bound 1): set to the 0 it is
        if is_torch(s):
            import torch

            s = torch.cat([s[:reachable], torch.zeros_like(s[reachable:])])
        else:
            s = np.concatenate([s[:reachable], np.zeros(s.shape[0] - reachable)])
    rank = _entropy_rank(s, epsilon=epsilon, caller=caller)
    # clipped into its range (past it by rounding), normalised by the largest rank of this many values (above
    # min(n, d) when epsilon > 0: RankMe's ε)
    n_values = int(s.shape[0])
    rank = entropy_rank_in_range(rank, n_values, min(reachable, n_values), epsilon, normalize=normalize)
    return rank if is_torch(X) else float(rank)
