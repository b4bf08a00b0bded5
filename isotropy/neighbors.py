"""Exact k-nearest neighbours of every point among the others, in BLAS-shaped chunks.

The search is brute force but never a Python loop over points: squared distances come from
matrix products (``‖x‖² + ‖y‖² − 2·x·yᵀ``) over square blocks of the upper triangle of the
symmetric distance matrix, each point keeps its best candidates, and their distances are then
recomputed directly (``‖x − y‖`` in float64 from the original rows), so the returned distances
do not suffer the cancellation of the matrix-product formula. Extra memory is bounded by the
block size. Used by the intrinsic-dimension estimators of :mod:`isotropy.dimension`.
"""

from __future__ import annotations

import numbers

import numpy as np

from isotropy._backend import is_dask, is_torch
from isotropy._progress import blocks
from isotropy._validation import IsotropyValueError, check_option, check_scalar, check_X

__all__ = ["kneighbors"]

_METRICS = ("euclidean", "cosine")
# Rows (and columns) of one square block of the score matrix.
_BLOCK = 4096
# Entries per group in the grouped selection of _update_rows / _update_cols.
_GROUP = 8
# Gathered candidate rows for the exact recomputation, in bytes (small: stays in cache).
_GATHER_MEMORY = 2 * 2**20


def _n_candidates(n_neighbors: int, n_samples: int) -> int:
    """Candidates kept from the matrix-product distances before the exact recomputation.

    A margin beyond ``n_neighbors`` lets the exact float64 distances reorder neighbours whose
    matrix-product distances were swapped by rounding (float32 input, near-ties).
    """
    return min(n_samples - 1, n_neighbors + max(8, n_neighbors // 8))


def _exact_sq_distances(X: np.ndarray, scale, rows: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """``‖y_rows[i] − y_cand[i, j]‖²`` in float64 by direct differences, ``y_i = X[i]·scale[i]``.

    Works through the candidates a few rows at a time so that the gathered rows stay in cache.
    """
    n_rows, m = cand.shape
    out = np.empty((n_rows, m), dtype=np.float64)
    step = max(1, _GATHER_MEMORY // max(1, m * X.shape[1] * 8))
    for s in range(0, n_rows, step):
        e = min(n_rows, s + step)
        diff = np.take(X, cand[s:e], axis=0).astype(np.float64, copy=False)  # (b, m, d)
        query = X[rows[s:e]].astype(np.float64)
        if scale is not None:
            diff *= scale[cand[s:e], None]
            query *= scale[rows[s:e], None]
        diff -= query[:, None, :]
        out[s:e] = np.einsum("bmd,bmd->bm", diff, diff)
    return out


def _sort_candidates(sq: np.ndarray, cand: np.ndarray, n_neighbors: int):
    """Sort each row by (distance, index) and keep the first ``n_neighbors``."""
    order = np.lexsort((cand, sq), axis=-1)[:, :n_neighbors]
    return np.take_along_axis(sq, order, axis=1), np.take_along_axis(cand, order, axis=1)


def _prepare(X: np.ndarray, metric: str, caller: str):
    """``(X, scale)``: the metric is the euclidean distance between the rows ``X[i]·scale[i]``.

    ``X`` comes back as float32 or float64 (never copied then); ``scale`` is ``None`` for the
    euclidean metric and ``1/‖x_i‖`` (float64) for the cosine metric.
    """
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    if metric != "cosine":
        return X, None
    norms = np.sqrt(np.einsum("ij,ij->i", X, X, dtype=np.float64))
    zero = int(np.count_nonzero(norms == 0))
    if zero:
        raise IsotropyValueError(f"The 'X' parameter of {caller} must have no zero rows with metric='cosine' "
                                 f"(the cosine distance is undefined for them). Got {zero} zero rows instead.")
    return X, 1.0 / norms


def _representation(X: np.ndarray, scale) -> np.ndarray:
    """Float64 rows ``X[i]·scale[i]`` whose euclidean geometry is the metric."""
    R = np.asarray(X, dtype=np.float64)
    return R if scale is None else R * scale[:, None]


def _merge(best_v, best_i, rows, vals, cols) -> None:
    """Keep, for ``rows``, the ``m`` largest of the running best and the new candidates (2-d)."""
    m = best_v.shape[1]
    v = np.concatenate([best_v[rows], vals], axis=1)
    i = np.concatenate([best_i[rows], cols], axis=1)
    top = np.argpartition(v, v.shape[1] - m, axis=1)[:, -m:]
    best_v[rows] = np.take_along_axis(v, top, axis=1)
    best_i[rows] = np.take_along_axis(i, top, axis=1)


def _merge_sparse(best_v, best_i, base: int, rel_rows, cols, vals) -> None:
    """Merge candidates ``(base + rel_rows[t], cols[t], vals[t])``, ``rel_rows`` non-decreasing."""
    if rel_rows.size == 0:
        return
    counts = np.bincount(rel_rows)
    rows = np.flatnonzero(counts)
    counts = counts[rows]
    which = np.repeat(np.arange(rows.size), counts)
    pos = np.arange(rel_rows.size) - np.repeat(np.cumsum(counts) - counts, counts)
    packed_v = np.full((rows.size, int(counts.max())), -np.inf, dtype=best_v.dtype)
    packed_v[which, pos] = vals
    packed_i = np.zeros(packed_v.shape, dtype=best_i.dtype)
    packed_i[which, pos] = cols
    _merge(best_v, best_i, base + rows, packed_v, packed_i)


def _threshold(best_v, rows, maxima, axis: int, first: bool):
    """Entries a point must reach to enter its best ``m``: ``(τ, comparison)``.

    Later blocks: above the current ``m``-th best. A first block: at least the ``m``-th largest
    group maximum (``m`` groups reach it, so at least ``m`` entries do, and every entry among
    the ``m`` largest does).
    """
    m = best_v.shape[1]
    if not first:
        return best_v[rows].min(axis=1), np.greater
    g = 0 if maxima is None else maxima.shape[axis]
    if g < m:
        return np.full(best_v[rows].shape[0], -np.inf, dtype=best_v.dtype), np.greater
    return np.take(np.partition(maxima, g - m, axis=axis), g - m, axis=axis), np.greater_equal


def _update_rows(best_v, best_i, a: int, S: np.ndarray, col0: int, first: bool) -> None:
    """Offer the scores ``S`` of rows ``a:a+r`` against columns ``col0:col0+c`` to those rows.

    The columns are cut into ``_GROUP`` interleaved groups (column ``t·g + q`` is in group
    ``q``); a group whose maximum does not reach a row's threshold ``τ`` (see
    :func:`_threshold`) is skipped after one vectorised max-reduction, and only the entries
    of the other groups that reach it are merged.
    """
    r, c = S.shape
    g = c // _GROUP
    if g == 0:
        maxima, flat = None, np.arange(r * c).reshape(r, c, 1)
    else:
        maxima = S[:, :g].copy()  # maxima of the column groups, one slab at a time (fast)
        for t in range(1, _GROUP):
            np.maximum(maxima, S[:, t * g:(t + 1) * g], out=maxima)
    tau, reaches = _threshold(best_v, slice(a, a + r), maxima, 1, first)
    if g:
        qr, qq = np.nonzero(reaches(maxima, tau[:, None]))  # sorted by row
        flat = (qr * c + qq)[:, None] + g * np.arange(_GROUP)
        if c > g * _GROUP:  # leftover columns: candidates of every row
            extra = np.arange(r)[:, None] * c + np.arange(g * _GROUP, c)
            flat = np.concatenate([flat.ravel(), extra.ravel()])
            flat.sort()
    flat = flat.ravel()
    vals = np.take(S, flat)
    rows, cols = np.divmod(flat, c)
    keep = reaches(vals, tau[rows])
    _merge_sparse(best_v, best_i, a, rows[keep], cols[keep] + col0, vals[keep])


def _update_cols(best_v, best_i, a2: int, S: np.ndarray, row0: int, first: bool) -> None:
    """Offer the scores ``S`` (rows ``row0:``, columns ``a2:a2+c``) to the points ``a2:a2+c``.

    The same as :func:`_update_rows` on ``Sᵀ`` without transposing: groups of rows of ``S``.
    """
    r, c = S.shape
    g = r // _GROUP
    maxima = S[: g * _GROUP].reshape(_GROUP, g, c).max(axis=0) if g else None
    tau, reaches = _threshold(best_v, slice(a2, a2 + c), maxima, 0, first)
    if g:
        qj, qq = np.nonzero(reaches(maxima, tau[None, :]).T)  # sorted by column of S
        rows = (qq[:, None] + g * np.arange(_GROUP)).ravel()
        cols = np.repeat(qj, _GROUP)
        if r > g * _GROUP:  # leftover rows: candidates of every column
            extra_r = np.broadcast_to(np.arange(g * _GROUP, r), (c, r - g * _GROUP)).ravel()
            extra_c = np.repeat(np.arange(c), r - g * _GROUP)
            order = np.argsort(np.concatenate([cols, extra_c]), kind="stable")
            rows, cols = np.concatenate([rows, extra_r])[order], np.concatenate([cols, extra_c])[order]
    else:
        rows, cols = np.tile(np.arange(r), c), np.repeat(np.arange(c), r)
    vals = np.take(S, rows * c + cols)
    keep = reaches(vals, tau[cols])
    _merge_sparse(best_v, best_i, a2, cols[keep], rows[keep] + row0, vals[keep])


def _augmented(X: np.ndarray, scale, dtype):
    """Rows ``[c_i, ‖c_i‖²/2, 1]`` of the centred points in ``dtype``; None if the scores could overflow."""
    n, d = X.shape
    A = np.empty((n, d + 2), dtype=dtype)
    if scale is None:
        mean = X.mean(axis=0, dtype=np.float64)
        A[:, :d] = X
    else:
        mean = np.einsum("i,ij->j", scale, X, dtype=np.float64) / n
        np.multiply(X, scale[:, None].astype(dtype), out=A[:, :d])
    A[:, :d] -= mean.astype(dtype)  # centring keeps c·c small
    with np.errstate(over="ignore"):
        A[:, d] = np.einsum("ij,ij->i", A[:, :d], A[:, :d]) / 2
    if not np.all(A[:, d] <= np.finfo(dtype).max / 8):  # |s_ij| <= ‖c_i‖² + ‖c_j‖² must not overflow
        return None
    A[:, d + 1] = 1
    return A


def _kneighbors_numpy(X: np.ndarray, scale, n_neighbors: int, chunk_size: int | None, caller: str = "kneighbors"):
    """Squared distances and indices of the nearest neighbours of the points ``X[i]·scale[i]``.

    On the centred data ``c`` the score ``s_ij = c_i·c_j − ‖c_i‖²/2 − ‖c_j‖²/2 = −‖c_i − c_j‖²/2``
    is one matrix product of ``[c, ‖c‖²/2, 1]`` and ``[c, −1, −‖c‖²/2]``, symmetric, so only
    the square blocks of the upper triangle are computed; each serves its rows and its columns.
    Each block is offered to its rows (:func:`_update_rows`) and columns (:func:`_update_cols`).
    """
    n, d = X.shape
    m = _n_candidates(n_neighbors, n)
    A = _augmented(X, scale, X.dtype)
    if A is None and X.dtype == np.float32:  # squares overflow float32: work in float64
        A = _augmented(X, scale, np.float64)
    if A is None:
        raise IsotropyValueError(f"The 'X' parameter of {caller} must have values whose squared distances fit in "
                                 f"float64. Got values too large instead.")
    compute_dtype = A.dtype
    b = max(chunk_size or _BLOCK, m + 1)  # a first block must hold m other points
    best_v = np.full((n, m), -np.inf, dtype=compute_dtype)
    best_i = np.zeros((n, m), dtype=np.intp)
    S_buf = np.empty(min(n, b) ** 2, dtype=compute_dtype)  # reused: no page faults per block
    B_buf = np.empty(min(n, b) * (d + 2), dtype=compute_dtype)
    n_blocks = -(-n // b)
    advance = blocks(n_blocks * (n_blocks + 1) // 2)  # progress, when a caller asked for it
    for a in range(0, n, b):
        e = min(n, a + b)
        for a2 in range(a, n, b):  # upper triangle of blocks: rows a:e, columns a2:e2
            e2 = min(n, a2 + b)
            B = B_buf[: (e2 - a2) * (d + 2)].reshape(e2 - a2, d + 2)  # [c, -1, -‖c‖²/2]
            B[:, :d] = A[a2:e2, :d]
            B[:, d] = -1
            B[:, d + 1] = -A[a2:e2, d]
            S = np.matmul(A[a:e], B.T, out=S_buf[: (e - a) * (e2 - a2)].reshape(e - a, e2 - a2))
            if a2 == a:
                np.fill_diagonal(S, -np.inf)  # a point is not its own neighbour
            _update_rows(best_v, best_i, a, S, a2, first=a2 == 0)  # rows a:e met columns 0:a before
            if a2 != a:
                _update_cols(best_v, best_i, a2, S, a, first=a == 0)
            advance()
    dist = np.empty((n, n_neighbors), dtype=np.float64)
    ind = np.empty((n, n_neighbors), dtype=np.intp)
    rows = np.arange(n)
    for a in range(0, n, 4 * _BLOCK):
        e = min(n, a + 4 * _BLOCK)
        sq = _exact_sq_distances(X, scale, rows[a:e], best_i[a:e])
        dist[a:e], ind[a:e] = _sort_candidates(sq, best_i[a:e], n_neighbors)
    return dist, ind


def _kneighbors_torch(X, n_neighbors: int, metric: str, chunk_size: int | None, caller: str):
    import torch

    with torch.no_grad():
        X = X.detach()
        exact = torch.float32 if X.device.type == "mps" else torch.float64
        R = X.to(exact)
        if metric == "cosine":
            norms = torch.linalg.vector_norm(R, dim=1)
            zero = int((norms == 0).sum())
            if zero:
                raise IsotropyValueError(f"The 'X' parameter of {caller} must have no zero rows with metric='cosine' "
                                         f"(the cosine distance is undefined for them). Got {zero} zero rows instead.")
            R = R / norms[:, None]
        n = R.shape[0]
        m = _n_candidates(n_neighbors, n)
        compute = X.dtype if X.dtype in (torch.float32, torch.float64) else torch.float32
        C = (R - R.mean(dim=0)).to(compute)
        sq_norms = (C * C).sum(dim=1)
        b = chunk_size or max(1, min(n, 2**25 // n))  # about 128 MiB of float32 scores per block
        dist = torch.empty((n, n_neighbors), dtype=exact, device=X.device)
        ind = torch.empty((n, n_neighbors), dtype=torch.int64, device=X.device)
        for start in range(0, n, b):
            stop = min(n, start + b)
            rows = torch.arange(start, stop, device=X.device)
            D = torch.addmm(sq_norms[None, :], C[start:stop], C.T, alpha=-2)
            D += sq_norms[start:stop, None]
            D[rows - start, rows] = torch.inf
            cand = torch.topk(D, m, dim=1, largest=False, sorted=False).indices
            del D
            diff = R[cand] - R[rows][:, None, :]
            sq = (diff * diff).sum(dim=2)
            del diff
            # sort by (distance, index): stable sort by index first, then by distance
            by_index = torch.argsort(cand, dim=1)
            cand = torch.gather(cand, 1, by_index)
            sq = torch.gather(sq, 1, by_index)
            order = torch.argsort(sq, dim=1, stable=True)[:, :n_neighbors]
            dist[start:stop] = torch.gather(sq, 1, order)
            ind[start:stop] = torch.gather(cand, 1, order)
        dist = dist / 2 if metric == "cosine" else dist.sqrt_()
    return dist, ind


def kneighbors(X, *, n_neighbors: int, metric: str = "euclidean", chunk_size: int | None = None):
    """Exact distances and indices of every point's nearest neighbours among the other points.

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        The points.
    n_neighbors : int
        Number of neighbours per point, ``1 <= n_neighbors <= n_samples - 1``. A point is never
        its own neighbour; an exact duplicate of it is (at distance 0).
    metric : {"euclidean", "cosine"}, default="euclidean"
        ``"cosine"`` is the cosine distance ``1 − cos(x, y)``, computed as ``‖u − v‖²/2`` with
        ``u = x/‖x‖`` (no cancellation for nearly parallel vectors). Zero rows are rejected.
    chunk_size : int or None, default=None
        Rows (and columns) of one square block of the score matrix (numpy input: memory about
        ``3·chunk_size²`` floats; default 4096) or query rows per block (torch input: default
        about 128 MiB of ``chunk_size × n_samples`` scores).

    Returns
    -------
    distances : ndarray of shape (n_samples, n_neighbors), float64
        Sorted increasingly in each row. A torch tensor on the input's device for torch input.
    indices : ndarray of shape (n_samples, n_neighbors), int
        Row indices of the neighbours; ties are broken by the smaller index (among the
        candidates kept, so only when fewer than ``max(8, n_neighbors // 8)`` extra points tie
        at the last distance).

    Notes
    -----
    On the centred data ``c`` the score ``s_ij = c_i·c_j − ‖c_i‖²/2 − ‖c_j‖²/2 = −‖c_i − c_j‖²/2``
    is one matrix product of the augmented rows ``[c_i, ‖c_i‖²/2, 1]`` and ``[c_j, −1, −‖c_j‖²/2]``
    (float32 for float32 input, float64 otherwise). It is symmetric, so only the square blocks
    of the upper triangle are computed, and each block is offered to its rows and, transposed,
    to its columns: half the ``n²·d`` multiply-adds of a plain search. Each point keeps its
    ``m = n_neighbors + max(8, n_neighbors // 8)`` best scores; a block's entries are compared
    with the current ``m``-th best only through maxima of groups of 8 entries, so after the
    first blocks almost nothing but a max-reduction is spent on them. The ``m`` candidates'
    squared distances are then recomputed as ``Σ (x_i − x_j)²`` in float64 from the original
    rows, sorted, and the first ``n_neighbors`` returned. Time ``O(n²·d/2)`` in BLAS; extra
    memory ``O(chunk_size² + n·m)`` besides one copy of ``X``. For float64 input the result is
    that of an exact brute-force search; for float32 input the candidates are preselected in
    float32, which can only exchange neighbours whose distances agree to float32 rounding.
    Torch input uses ``torch.topk`` on blocks of rows on the tensor's device instead.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy.neighbors import kneighbors
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]])
    >>> dist, ind = kneighbors(X, n_neighbors=1)
    >>> dist.ravel().tolist(), ind.ravel().tolist()
    ([1.0, 1.0, 2.0], [1, 0, 1])
    """
    if is_dask(X):  # a dask array: computed by tiles / chunk statistics on the dask scheduler
        from isotropy import distributed
        return distributed.kneighbors(X, n_neighbors=n_neighbors, metric=metric, chunk_size=chunk_size)
    caller = "kneighbors"
    X = check_X(X, caller=caller)
    metric = check_option(metric, "metric", _METRICS, caller=caller)
    n = X.shape[0]
    check_scalar(n_neighbors, "n_neighbors", caller=caller, kind=numbers.Integral, low=1, high=n - 1)
    check_scalar(chunk_size, "chunk_size", caller=caller, kind=numbers.Integral, low=1, allow_none=True)
    n_neighbors = int(n_neighbors)
    if is_torch(X):
        return _kneighbors_torch(X, n_neighbors, metric, chunk_size, caller)
    X, scale = _prepare(X, metric, caller)
    sq, ind = _kneighbors_numpy(X, scale, n_neighbors, chunk_size)
    return _finish(sq, metric), ind


def _finish(sq: np.ndarray, metric: str) -> np.ndarray:
    """Squared euclidean distances of the representation -> distances of ``metric`` (in place)."""
    if metric == "cosine":
        sq /= 2  # 1 - cos(x, y) = ‖u - v‖² / 2 for unit vectors u, v
        return sq
    return np.sqrt(sq, out=sq)
