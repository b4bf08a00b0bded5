"""Kernels of the exact k-nearest-neighbour search, shared by :mod:`isotropy.metrics.neighbors` and :mod:`isotropy.distributed`.

Private: the in-memory search (:func:`isotropy.metrics.neighbors.kneighbors`) runs them over blocks of one
array, the dask search over tiles of a chunked one; keeping them here lets both import them without
the public module and the dask package importing each other.
"""

from __future__ import annotations

import numpy as np

from isotropy._utils.validation import IsotropyValueError

# Entries per group in the grouped selection of _update_rows / _update_cols.
_GROUP = 8
# Gathered candidate rows for the exact recomputation, in bytes (small: stays in cache).
_GATHER_MEMORY = 2 * 2**20


_METRICS = ("euclidean", "cosine")


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


def _finish(sq: np.ndarray, metric: str) -> np.ndarray:
    """Squared euclidean distances of the representation -> distances of ``metric`` (in place)."""
    if metric == "cosine":
        sq /= 2  # 1 - cos(x, y) = ‖u - v‖² / 2 for unit vectors u, v
        return sq
    return np.sqrt(sq, out=sq)
