"""Kernels of the exact k-nearest-neighbour search, shared by :mod:`isotropy.metrics.neighbors` and :mod:`isotropy.distributed`.

Private: the in-memory search (:func:`isotropy.metrics.neighbors.kneighbors`) runs them over blocks of one
array, the dask search over tiles of a chunked one; keeping them here lets both import them without
the public module and the dask package importing each other.
"""

from __future__ import annotations

import numpy as np

from isotropy._utils.progress import blocks
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


def _finish(sq: np.ndarray, metric: str) -> np.ndarray:
    """Squared euclidean distances of the representation -> distances of ``metric`` (in place)."""
    if metric == "cosine":
        sq /= 2  # 1 - cos(x, y) = ‖u - v‖² / 2 for unit vectors u, v
        return sq
    return np.sqrt(sq, out=sq)


# ---------------------------------------------------------------------------------------------
# The exact search: candidates from float32 blocks of the upper triangle, exact float64 distances,
# a certificate per row from the float32 error bound, and exact fallbacks where it fails.
# ---------------------------------------------------------------------------------------------

# Rows (and columns) of one square block of the score matrix.
_BLOCK = 4096
# Rows sampled for the centre (a coordinate-wise median: a few rows of huge norm do not move it).
_CENTRE_SAMPLE = 4096
# Scores per chunk of the float64 fallbacks (rows x all points).
_FALLBACK_SCORES = 2**22


def _centre(X: np.ndarray, scale) -> np.ndarray:
    """Coordinate-wise median (float64) of up to ``_CENTRE_SAMPLE`` evenly spaced rows of ``X·scale``.

    Any centre gives the same distances; a median keeps the centred norms of the bulk of the
    points small even when a few rows are ``10^12`` times larger than the rest (a mean would be
    dragged to them, and the float32 scores of the bulk would lose every digit).
    """
    n = X.shape[0]
    rows = np.unique(np.linspace(0, n - 1, min(n, _CENTRE_SAMPLE)).astype(np.intp))
    return np.median(_representation(X[rows], None if scale is None else scale[rows]), axis=0)


def _operands(X: np.ndarray, scale, centre: np.ndarray, dtype):
    """``(A, q)``: rows ``[c_i, ‖c_i‖²/2, 1]`` of ``c_i = X[i]·scale[i] − centre`` in ``dtype``, and
    ``q_i = ‖c_i‖²`` in float64; ``A`` is None when ``dtype`` cannot hold the scores."""
    n, d = X.shape
    A = np.empty((n, d + 2), dtype=dtype)
    q = np.empty(n, dtype=np.float64)
    step = max(1, (1 << 21) // max(d, 1))
    for s in range(0, n, step):
        c = _representation(X[s:s + step], None if scale is None else scale[s:s + step]) - centre
        q[s:s + step] = np.einsum("ij,ij->i", c, c)
        A[s:s + step, :d] = c
    if not np.all(q <= np.finfo(dtype).max / 8):  # |s_ij| <= ‖c_i‖² + ‖c_j‖² must not overflow
        return None, q
    with np.errstate(under="ignore"):
        A[:, d] = np.einsum("ij,ij->i", A[:, :d], A[:, :d]) / 2
    A[:, d + 1] = 1
    return A, q


def _right(A: np.ndarray, rows: slice, out: np.ndarray) -> np.ndarray:
    """Rows ``[c_j, −1, −‖c_j‖²/2]``: ``A[i]·B[j] = c_i·c_j − ‖c_i‖²/2 − ‖c_j‖²/2 = −‖c_i − c_j‖²/2``."""
    d = A.shape[1] - 2
    B = out[: (rows.stop - rows.start) * (d + 2)].reshape(rows.stop - rows.start, d + 2)
    B[:, :d] = A[rows, :d]
    B[:, d] = -1
    B[:, d + 1] = -A[rows, d]
    return B


def _error_factor(dtype, n_features: int) -> float:
    """``γ`` with ``|s̃_ij − s_ij| <= γ·(q_i + q_j)`` for the scores of :func:`_operands` in ``dtype``.

    With ``u`` the unit roundoff: rounding ``c`` to ``dtype`` moves ``−‖c_i − c_j‖²/2`` by at most
    ``2u(q_i + q_j)``, the rounded ``‖ĉ_i‖²/2`` by ``(d + 1)u·q_i/2``, and a dot product of ``d + 2``
    terms in any summation order by ``(d + 2)u·Σ|a_k b_k| <= (d + 2)u·(q_i + q_j)`` (Higham 2002,
    §3.1): ``γ = (1.5d + 4.5)u``, taken as ``(1.5d + 6)u`` with a 2 % margin for second-order terms.
    """
    u = float(np.finfo(dtype).eps) / 2
    return 1.02 * (1.5 * n_features + 6) * u


def _certified(tau, kth_sq, q, gamma: float, floor: float, n_features: int) -> np.ndarray:
    """Rows whose ``k`` nearest are provably among their candidates.

    ``tau[i]`` is row i's ``m``-th best approximate score: every other point j has
    ``s̃_ij <= tau[i]``, hence ``d²_ij >= −2·tau[i] − 2γ(q_i + q_j) − floor``, and, by the triangle
    inequality around the centre, ``d_ij >= √q_j − √q_i``. The row is certified when every
    ``q_j >= 0`` makes one of the two bounds exceed the exact ``k``-th squared distance (inflated by
    the float64 rounding of the exact distances).
    """
    kth = kth_sq * (1 + (n_features + 4) * float(np.finfo(np.float64).eps)) + floor
    with np.errstate(invalid="ignore", over="ignore"):
        base = -2.0 * tau.astype(np.float64) - 2.0 * gamma * q - floor  # bound at q_j = 0
        ok = base - 2.0 * gamma * q > kth  # every q_j <= q_i (the first bound decreases in q_j)
        q1 = (base - kth) / (2.0 * gamma)  # beyond q1 the first bound no longer suffices
        shrink = 1 - 4 * (n_features + 2) * float(np.finfo(np.float64).eps)
        far = (np.sqrt(np.maximum(q1, q)) * shrink - np.sqrt(q)) ** 2 > kth
    return ok & (far | (q1 > q.max()))


def _candidate_pass(A: np.ndarray, m: int, b: int):
    """Best ``m`` approximate scores and their indices of every row, from the upper triangle of blocks.

    The diagonal blocks come first, so that every point already holds ``m`` candidates among its
    own block (a finite threshold) when the off-diagonal blocks are offered to it; each off-diagonal
    block is computed once and offered to its rows and, transposed, to its columns.
    """
    n, d2 = A.shape
    n_panels = -(-n // b)
    b = -(-n // n_panels)  # equal panels
    starts = list(range(0, n, b))
    best_v = np.full((n, m), -np.inf, dtype=A.dtype)
    best_i = np.zeros((n, m), dtype=np.intp)
    S_buf = np.empty(min(n, b) ** 2, dtype=A.dtype)
    B_buf = np.empty(min(n, b) * d2, dtype=A.dtype)
    advance = blocks(n_panels * (n_panels + 1) // 2)  # progress, when a caller asked for it
    pairs = [(a, a) for a in starts] + [(a, a2) for a in starts for a2 in starts if a2 > a]
    for a, a2 in pairs:
        e, e2 = min(n, a + b), min(n, a2 + b)
        B = _right(A, slice(a2, e2), B_buf)
        S = np.matmul(A[a:e], B.T, out=S_buf[: (e - a) * (e2 - a2)].reshape(e - a, e2 - a2))
        if a2 == a:
            np.fill_diagonal(S, -np.inf)  # a point is not its own neighbour
            _update_rows(best_v, best_i, a, S, a2, first=True)
        else:
            _update_rows(best_v, best_i, a, S, a2, first=False)
            _update_cols(best_v, best_i, a2, S, a, first=False)
        advance()
    return best_v, best_i


def _exact_rows(X, scale, rows: np.ndarray, n_neighbors: int, cols: tuple[int, int]):
    """Exact search for a few rows among the points ``cols[0]:cols[1]``: float64 differences, ties by index."""
    step = max(1, _GATHER_MEMORY // max(1, X.shape[1] * 8))
    best_sq = np.full((rows.size, n_neighbors), np.inf)
    best_i = np.zeros((rows.size, n_neighbors), dtype=np.intp)
    for s in range(cols[0], cols[1], step):
        c = np.arange(s, min(cols[1], s + step))
        sq = _exact_sq_distances(X, scale, rows, np.broadcast_to(c, (rows.size, c.size)))
        sq[rows[:, None] == c[None, :]] = np.inf  # a point is not its own neighbour
        best_sq, best_i = _sort_candidates(np.concatenate([best_sq, sq], axis=1),
                                           np.concatenate([best_i, np.broadcast_to(c, sq.shape)], axis=1),
                                           n_neighbors)
    return best_sq, best_i


def _float64_candidates(X, scale, centre, q, rows: np.ndarray, m: int, cols: tuple[int, int]):
    """Best ``m`` float64 scores (and indices) of ``rows`` against the points ``cols[0]:cols[1]``."""
    C = _representation(X[rows], None if scale is None else scale[rows]) - centre
    best_v = np.full((rows.size, m), -np.inf)
    best_i = np.zeros((rows.size, m), dtype=np.intp)
    step = max(m + 1, _FALLBACK_SCORES // max(1, rows.size))
    for s in range(cols[0], cols[1], step):
        e = min(cols[1], s + step)
        c = _representation(X[s:e], None if scale is None else scale[s:e]) - centre
        S = C @ c.T - q[rows, None] / 2 - q[None, s:e] / 2
        S[(rows[:, None] == np.arange(s, e)[None, :])] = -np.inf
        v = np.concatenate([best_v, S], axis=1)
        i = np.concatenate([best_i, np.broadcast_to(np.arange(s, e), S.shape)], axis=1)
        top = np.argpartition(v, v.shape[1] - m, axis=1)[:, -m:]
        best_v, best_i = np.take_along_axis(v, top, axis=1), np.take_along_axis(i, top, axis=1)
    return best_v, best_i


def _refine(X, scale, rows, best_v, best_i, n_neighbors, q, gamma, floor):
    """Exact float64 distances of the candidates, sorted; and which rows are certified.

    Unfilled candidates (score ``−inf``: fewer other points than candidates) are at distance
    ``inf``; a row with one has no point outside its candidates, hence is certified.
    """
    dist = np.empty((rows.size, n_neighbors), dtype=np.float64)
    ind = np.empty((rows.size, n_neighbors), dtype=np.intp)
    for s in range(0, rows.size, 4 * _BLOCK):
        e = min(rows.size, s + 4 * _BLOCK)
        sq = _exact_sq_distances(X, scale, rows[s:e], best_i[s:e])
        sq[np.isneginf(best_v[s:e])] = np.inf
        dist[s:e], ind[s:e] = _sort_candidates(sq, best_i[s:e], n_neighbors)
    tau = best_v.min(axis=1)
    ok = np.isneginf(tau) | _certified(tau, dist[:, -1], q[rows], gamma, floor, X.shape[1])
    return dist, ind, ok


def _exact_selection(X, scale, centre, q, rows, best_v, best_i, n_neighbors, dtype, cols):
    """Stages 2 and 3 of :func:`exact_knn` for ``rows`` searched among the points ``cols[0]:cols[1]``."""
    d = X.shape[1]
    dist, ind, ok = _refine(X, scale, rows, best_v, best_i, n_neighbors, q, _error_factor(dtype, d),
                            4.0 * (d + 2) * float(np.finfo(dtype).tiny))
    failed = np.flatnonzero(~ok)
    if failed.size:  # stage 3a: float64 scores for the rows float32 could not certify
        v, i = _float64_candidates(X, scale, centre, q, rows[failed], best_v.shape[1], cols)
        d64, i64, ok64 = _refine(X, scale, rows[failed], v, i, n_neighbors, q, _error_factor(np.float64, d),
                                 4.0 * (d + 2) * float(np.finfo(np.float64).tiny))
        dist[failed], ind[failed] = d64, i64
        failed = failed[~ok64]
    if failed.size:  # stage 3b: differences to every point
        dist[failed], ind[failed] = _exact_rows(X, scale, rows[failed], n_neighbors, cols)
    return dist, ind


def _operands_any(X, scale, centre, caller):
    """:func:`_operands` in float32, or in float64 where float32 cannot hold the scores."""
    A, q = _operands(X, scale, centre, np.float32)
    if A is None:
        A, q = _operands(X, scale, centre, np.float64)
    if A is None:
        raise IsotropyValueError(f"The 'X' parameter of {caller} must have values whose squared distances fit in "
                                 f"float64. Got values too large instead.")
    return A, q


def exact_knn(X: np.ndarray, scale, n_neighbors: int, *, block: int | None = None, caller: str = "kneighbors"):
    """Squared distances (float64, sorted) and indices of the ``n_neighbors`` nearest other points.

    The metric is the euclidean distance between the rows ``y_i = X[i]·scale[i]`` (see
    :func:`_prepare`). Three stages, each exact where the one before cannot prove it is:

    1. scores ``s̃_ij ≈ −‖c_i − c_j‖²/2`` of the centred rows ``c`` (centre: :func:`_centre`) as
       BLAS products of float32 blocks (float64 when float32 cannot hold them), over the blocks on
       and above the diagonal only, each offered to its rows and its columns; every row keeps its
       ``m = n_neighbors + max(8, n_neighbors // 8)`` best;
    2. their squared distances ``Σ (y_i − y_j)²`` in float64 from the differences, sorted by
       (distance, index);
    3. a certificate per row (:func:`_certified`, from the rounding bound of stage 1): a row
       whose ``k``-th exact distance is not provably below every non-candidate's is searched again
       with float64 scores, and if still not certified, by float64 differences to every point.

    Memory: one ``block × block`` score buffer, the ``n × (d + 2)`` operands and ``n × m`` candidates.
    """
    n = X.shape[0]
    m = _n_candidates(n_neighbors, n)
    centre = _centre(X, scale)
    A, q = _operands_any(X, scale, centre, caller)
    best_v, best_i = _candidate_pass(A, m, max(block or _BLOCK, m + 1))  # a diagonal block holds m others
    dtype = A.dtype
    del A
    return _exact_selection(X, scale, centre, q, np.arange(n), best_v, best_i, n_neighbors, dtype, (0, n))


def exact_knn_cross(X: np.ndarray, scale, n_p: int, n_neighbors: int, *, caller: str = "kneighbors"):
    """:func:`exact_knn` between two parts of ``X``: rows ``:n_p`` among rows ``n_p:``, and back.

    One product of the two parts (the off-diagonal block of :func:`exact_knn`), offered to the
    rows and, transposed, to the columns, then the same exact stages 2 and 3. Returns
    ``(sq_p, ind_p), (sq_q, ind_q)`` with indices into ``X``; a part with fewer points than
    ``n_neighbors`` pads with ``inf``. The dask search runs it on each tile.
    """
    n = X.shape[0]
    n_q = n - n_p
    centre = _centre(X, scale)
    A, q = _operands_any(X, scale, centre, caller)
    B = _right(A, slice(n_p, n), np.empty(n_q * A.shape[1], dtype=A.dtype))
    S = A[:n_p] @ B.T
    out = []
    for size, other, cols, update in ((n_p, n_q, (n_p, n), _update_rows), (n_q, n_p, (0, n_p), _update_cols)):
        m = min(_n_candidates(n_neighbors, n), other)
        best_v, best_i = np.full((size, m), -np.inf, dtype=A.dtype), np.zeros((size, m), dtype=np.intp)
        update(best_v, best_i, 0, S, 0, first=True)
        rows = np.arange(size) + (0 if update is _update_rows else n_p)
        best_i += n_p if update is _update_rows else 0
        k = min(n_neighbors, m)
        sq, ind = _exact_selection(X, scale, centre, q, rows, best_v, best_i, k, A.dtype, cols)
        if k < n_neighbors:
            sq = np.pad(sq, ((0, 0), (0, n_neighbors - k)), constant_values=np.inf)
            ind = np.pad(ind, ((0, 0), (0, n_neighbors - k)), constant_values=n)
        out.append((sq, ind))
    return out[0], out[1]
