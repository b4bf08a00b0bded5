"""Exact k-nearest neighbours of every point among the others, in BLAS-shaped chunks.

The search is brute force but never a Python loop over points: squared distances come from
matrix products (``‖x‖² + ‖y‖² − 2·x·yᵀ``) over square blocks of the upper triangle of the
symmetric distance matrix, each point keeps its best candidates, and their distances are then
recomputed directly (``‖x − y‖`` in float64 from the original rows), so the returned distances
do not suffer the cancellation of the matrix-product formula. Extra memory is bounded by the
block size. Used by the intrinsic-dimension estimators of :mod:`isotropy.metrics.dimension`.
"""

from __future__ import annotations

import numbers

import numpy as np

from isotropy._kernels.neighbors import (
    _METRICS,
    _error_factor,
    _finish,
    _n_candidates,
    _prepare,
    exact_knn,
    refuse_zero_rows,
)
from isotropy._utils.backend import is_dask, is_torch
from isotropy._utils.magnitude import extremes, neighbour_target, rescaled
from isotropy._utils.validation import check_n_neighbors, check_option, check_scalar, check_X, half_as_float32

__all__ = ["kneighbors"]


def _kneighbors_numpy(X: np.ndarray, scale, n_neighbors: int, chunk_size: int | None, caller: str = "kneighbors",
                      *, distinct: bool = False):
    """Squared distances (float64, sorted) and indices of the nearest neighbours of the rows ``X[i]·scale[i]``.

    The exact kernel :func:`isotropy._kernels.neighbors.exact_knn` (float32 candidate blocks of the
    upper triangle, exact float64 distances, a rounding certificate per row, exact fallbacks).
    ``distinct``: no two rows are equal (the caller found its distinct points): the kernel does not look again.
    """
    return exact_knn(X, scale, n_neighbors, block=chunk_size, caller=caller, distinct=distinct)


def _search_numpy(X: np.ndarray, n_neighbors: int, metric: str, chunk_size: int | None, caller: str):
    """Distances (float64) and indices of the neighbours of a checked array: :func:`exact_knn` at unit scale."""
    # exact: a power of two; for the cosine metric too (its norms overflowed near 1e160 and underflowed to "zero
    # rows" near 1e-200), whose distances do not depend on the scale
    if X.dtype.itemsize < 4:  # half precision: judged in its own dtype, searched in float32 (as torch and dask)
        low, high = extremes(X)
        X = half_as_float32(X, max(-low, high), caller=caller)
    X, exponent = rescaled(X, caller=caller, target=neighbour_target(X))
    X, scale = _prepare(X, metric, caller)
    sq, ind = _kneighbors_numpy(X, scale, n_neighbors, chunk_size, caller)
    return np.ldexp(_finish(sq, metric), exponent if metric == "euclidean" else 0), ind


def _kneighbors_torch(X, n_neighbors: int, metric: str, chunk_size: int | None, caller: str):
    """Distances (float64; float32 on MPS) and int64 indices of a tensor's neighbours, on its device, without a graph.

    The search once kept the candidates of one float32 product of mean-centred rows: tight clusters far from the
    rest of the data (a mean far from them) lost every digit of their scores, hence wrong neighbours (9 % right at
    a 1e4 ratio of scales), TwoNN and MLE; float64 tensors too at a 1e9 ratio. Now the search is exact on every
    device. A CPU tensor takes the numpy kernel (:func:`exact_knn`, on a view of its data: no copy): the same
    neighbours and distances as numpy input, about 3.5x faster than the torch search it replaces on a CPU
    (5,000 x 128 float32, k = 20; 2 cores), and no graph is lost (the search never had one). A tensor on another
    device stays there (:func:`_kneighbors_device`: the same stages and certificate in torch operations).
    """
    if X.device.type != "cpu":
        return _kneighbors_device(X, n_neighbors, metric, chunk_size, caller)
    import torch

    dist, ind = _search_numpy(X.detach().resolve_conj().resolve_neg().numpy(), n_neighbors, metric, chunk_size, caller)
    return torch.from_numpy(dist), torch.from_numpy(ind.astype(np.int64, copy=False))


# Scores per block of rows of the device search (about 128 MiB of float32 scores).
_DEVICE_SCORES = 2**25
# Entries of the differences gathered at a time for the exact distances on the device (32 MiB of float64).
_DEVICE_DIFFERENCES = 2**22
# Rows sampled for the centre of the device search (the numpy kernel's 1,025).
_DEVICE_CENTRE_SAMPLE = 1025


def _kneighbors_device(X, n_neighbors: int, metric: str, chunk_size: int | None, caller: str):
    """The stages of :func:`exact_knn` in torch operations on the tensor's device (any device; CPU in the tests).

    1. Scores ``s̃_ij = ĉ_i·ĉ_j − ‖ĉ_i‖²/2 − ‖ĉ_j‖²/2`` of the rows centred on a coordinate-wise median
       (a few far rows do not move it, as a mean is moved), in float32 for float32 input (float64 otherwise),
       for ``chunk_size`` rows against all points at a time; ``torch.topk`` keeps ``m`` candidates per row.
    2. Their squared distances ``Σ (x_i − x_j)²`` by float64 differences (float32 on MPS, which has no
       float64), sorted by (distance, index).
    3. The certificate of the numpy kernel per row (:func:`_certified_device`, from the rounding bound of the
       scores, TF32 or bfloat16 products included: :func:`_score_bound`); a row it cannot certify is searched
       again with float64 scores (after float32 ones), then by differences to every point.

    The result is that of an exact brute-force search in the exact dtype. Memory: ``chunk_size × n_samples``
    scores, a float64 copy of ``X`` and one in the score dtype, ``n_samples × m`` candidates.
    """
    import torch

    with torch.no_grad():
        # at unit scale by a power of two (exact): float32 scores of data near 1e20, float64 squares near 1e160
        # and 1e-200, overflowed or lost every digit (wrong neighbours, inf or 0 distances); scaled back below
        # (the cosine metric's rows are each at their own unit scale already, check_X: one factor for all would
        # push the small ones back under float32's normal range)
        X, exponent = (X.detach(), 0) if metric == "cosine" else rescaled(X.detach(), caller=caller,
                                                                          target=neighbour_target(X))
        device = X.device
        exact = torch.float32 if device.type == "mps" else torch.float64
        eps = float(torch.finfo(exact).eps)
        R = X.to(exact)
        if metric == "cosine":  # the rows x·(1/‖x‖) of the numpy kernel (_prepare)
            norms = (R * R).sum(dim=1).sqrt()
            refuse_zero_rows(torch.nonzero(norms == 0).flatten().cpu().numpy(), caller=caller)
            R = R * (1.0 / norms)[:, None]
        n, d = R.shape
        k = n_neighbors
        m = _n_candidates(k, n)
        sample = np.unique(np.linspace(0, n - 1, min(n, _DEVICE_CENTRE_SAMPLE)).astype(np.int64))
        centre = R[torch.as_tensor(sample, device=device)].median(dim=0).values  # the lower median
        C = R - centre
        q = (C * C).sum(dim=1)  # ‖c_i‖², exact dtype
        q_max = q.max()
        compute = X.dtype if exact == torch.float64 else torch.float32
        if compute == torch.float32 and float(q_max) > torch.finfo(torch.float32).max / 8:
            compute = exact  # |s_ij| <= q_i + q_j must not overflow the scores
        low = C.to(compute)
        del C
        half = (low * low).sum(dim=1) / 2
        gamma, floor = _score_bound(torch, compute, d)
        b = min(chunk_size, n) if chunk_size else max(1, min(n, _DEVICE_SCORES // n))
        dist = torch.empty((n, k), dtype=exact, device=device)
        ind = torch.empty((n, k), dtype=torch.int64, device=device)
        ok = torch.ones(n, dtype=torch.bool, device=device)
        for start in range(0, n, b):
            stop = min(n, start + b)
            rows = torch.arange(start, stop, device=device)
            top, cand = _top_scores(low, half, rows, m)
            dist[start:stop], ind[start:stop] = _nearest_candidates(R, rows, cand, k)
            if m < n - 1:  # else every other point is a candidate
                ok[start:stop] = _certified_device(top.min(dim=1).values.to(exact), dist[start:stop, -1],
                                                   q[start:stop], q_max, gamma, floor, d, eps)
        del low, half
        failed = torch.nonzero(~ok).flatten()
        if failed.numel() and compute != exact:  # float64 scores for the rows float32 could not certify
            C = R - centre
            gamma, floor = _score_bound(torch, exact, d)
            still = []
            for s in range(0, failed.numel(), max(1, _DEVICE_SCORES // 2 // n)):
                rows = failed[s:s + max(1, _DEVICE_SCORES // 2 // n)]
                top, cand = _top_scores(C, q / 2, rows, m)
                dd, ii = _nearest_candidates(R, rows, cand, k)
                dist[rows], ind[rows] = dd, ii
                still.append(rows[~_certified_device(top.min(dim=1).values, dd[:, -1], q[rows], q_max, gamma, floor,
                                                     d, eps)])
            failed = torch.cat(still)
            del C
        if failed.numel():  # differences to every point
            dist[failed], ind[failed] = _nearest_by_differences(R, failed, k)
        if metric == "cosine":
            return dist / 2, ind  # of directions: the scale does not enter
        dist = dist.sqrt_()
        if exponent:  # in two factors, each a normal number: exact
            half_exponent = exponent // 2
            dist = dist * (2.0 ** half_exponent) * (2.0 ** (exponent - half_exponent))
    return dist, ind


def _top_scores(low, half, rows, m: int):
    """The ``m`` best scores ``low_i·low_j − half_i − half_j`` of ``rows`` among the other points, and their indices."""
    import torch

    S = torch.addmm(-half[None, :], low[rows], low.T)
    S -= half[rows, None]
    S[torch.arange(rows.numel(), device=rows.device), rows] = -torch.inf  # not its own neighbour
    return torch.topk(S, m, dim=1, sorted=False)


def _nearest_candidates(R, rows, cand, k: int):
    """The ``k`` nearest of each row's candidates by their exact squared distances ``Σ (R_i − R_j)²``."""
    import torch

    r, m = cand.shape
    sq = torch.empty((r, m), dtype=R.dtype, device=R.device)
    step = max(1, _DEVICE_DIFFERENCES // max(1, m * R.shape[1]))
    for s in range(0, r, step):
        diff = R[cand[s:s + step]] - R[rows[s:s + step], None, :]
        sq[s:s + step] = diff.square_().sum(dim=2)
    return _sorted_rows(sq, cand, k)


def _sorted_rows(sq, cand, k: int):
    """The first ``k`` of each row by (distance, index): a stable sort by distance of the rows sorted by index."""
    import torch

    by_index = torch.argsort(cand, dim=1)
    cand, sq = cand.gather(1, by_index), sq.gather(1, by_index)
    order = torch.argsort(sq, dim=1, stable=True)[:, :k]
    return sq.gather(1, order), cand.gather(1, order)


def _nearest_by_differences(R, rows, k: int):
    """The ``k`` nearest of ``rows`` among all points by exact differences, a few rows and columns at a time."""
    import torch

    n, d = R.shape
    dist = torch.empty((rows.numel(), k), dtype=R.dtype, device=R.device)
    ind = torch.empty((rows.numel(), k), dtype=torch.int64, device=R.device)
    rb = min(rows.numel(), 64)
    cb = max(1, _DEVICE_DIFFERENCES // (rb * max(1, d)))
    for s in range(0, rows.numel(), rb):
        at = rows[s:s + rb]
        best_sq = torch.full((at.numel(), k), torch.inf, dtype=R.dtype, device=R.device)
        best_i = torch.full((at.numel(), k), n, dtype=torch.int64, device=R.device)
        for c in range(0, n, cb):
            cols = torch.arange(c, min(n, c + cb), device=R.device)
            sq = (R[None, c:c + cb] - R[at, None, :]).square_().sum(dim=2)
            sq[at[:, None] == cols[None, :]] = torch.inf  # not its own neighbour
            best_sq, best_i = _sorted_rows(torch.cat([best_sq, sq], dim=1),
                                           torch.cat([best_i, cols.expand(at.numel(), -1)], dim=1), k)
        dist[s:s + rb], ind[s:s + rb] = best_sq, best_i
    return dist, ind


def _score_roundoff(torch, dtype) -> float:
    """Unit roundoff of the inputs of a ``dtype`` matrix product as torch may run it (0: as stored).

    Under ``torch.set_float32_matmul_precision("high")`` (or ``allow_tf32``) float32 products may round their
    inputs to TF32 (10 bits; by truncation, perhaps: one ulp), under ``"medium"`` to bfloat16 (7 bits); float64
    products never.
    """
    if dtype != torch.float32:
        return 0.0
    precision = torch.get_float32_matmul_precision()
    for backend in ("cuda", "mkldnn", "mps"):
        matmul = getattr(getattr(torch.backends, backend, None), "matmul", None)
        if precision == "highest" and getattr(matmul, "allow_tf32", False) is True:
            precision = "high"
        if precision == "highest" and str(getattr(matmul, "fp32_precision", "ieee")).lower() in ("tf32", "bf16"):
            precision = "medium"
    return {"highest": 0.0, "high": 2.0**-10}.get(precision, 2.0**-7)


def _score_bound(torch, dtype, n_features: int) -> tuple[float, float]:
    """``(γ, floor)`` with ``|s̃_ij − s_ij| <= γ·(q_i + q_j) + floor`` for the device scores in ``dtype``.

    The scores of :func:`_top_scores` round as the numpy kernel's augmented product
    (:func:`isotropy._kernels.neighbors._error_factor`); inputs rounded to TF32 or bfloat16 with unit roundoff
    ``v`` (:func:`_score_roundoff`) move ``ĉ_i·ĉ_j``, whose terms sum to at most ``(q_i + q_j)/2`` in absolute
    value, by ``(2v + v²)`` of that more.
    """
    np_dtype = np.float32 if dtype == torch.float32 else np.float64
    v = _score_roundoff(torch, dtype)
    return (_error_factor(np_dtype, n_features) + 1.02 * (v + v * v / 2),
            4.0 * (n_features + 2) * float(np.finfo(np_dtype).tiny))


def _certified_device(tau, kth_sq, q, q_max, gamma: float, floor: float, n_features: int, eps: float):
    """The certificate of :func:`isotropy._kernels.neighbors._certified` on tensors: rows whose ``k`` nearest are
    provably among their candidates.

    ``tau``: each row's ``m``-th best score (every non-candidate's is at most that); ``kth_sq``: its exact
    ``k``-th squared distance, inflated by its rounding (``eps``: of the exact dtype); ``q_max``: the largest
    ``q_j`` over all points (a point beyond ``q1`` is excluded by the triangle inequality, or there is none).
    """
    kth = kth_sq * (1 + (n_features + 4) * eps) + floor
    base = -2.0 * tau - 2.0 * gamma * q - floor  # the bound at q_j = 0
    ok = base - 2.0 * gamma * q > kth  # every q_j <= q_i (the first bound decreases in q_j)
    q1 = (base - kth) / (2.0 * gamma)  # beyond q1 the first bound no longer suffices
    shrink = 1 - 4 * (n_features + 2) * eps
    far = (q1.maximum(q).sqrt() * shrink - q.sqrt()) ** 2 > kth
    return ok & (far | (q1 > q_max))


def kneighbors(X, *, n_neighbors: int, metric: str = "euclidean", chunk_size: int | None = None):
    """Exact distances and indices of every point's nearest neighbours among the other points.

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        The points.
    n_neighbors : int
        Number of neighbours per point, ``1 <= n_neighbors <= n_samples - 1``. A point is never
        its own neighbour; an exact duplicate of it is (at distance 0). Distinct rows found at
        euclidean distance 0 (their squared differences below float64's range: rows near 1e-100
        beside rows near 1e100) are refused, as TwoNN and MLE refuse them.
    metric : {"euclidean", "cosine"}, default="euclidean"
        ``"cosine"`` is the cosine distance ``1 − cos(x, y)``, computed as ``‖u − v‖²/2`` with
        ``u = x/‖x‖`` (no cancellation for nearly parallel vectors). Zero rows are rejected. The unit rows
        are rounded to float64, and the distances are exact for them: two points at exactly the same
        cosine distance (a row and its positive multiples, count rows with equal cosines) may lie a few
        ε² apart, and are then ordered by those last bits, not by index (the dimension estimators merge
        parallel rows: see :func:`isotropy.twonn_dimension`).
    chunk_size : int or None, default=None
        Rows (and columns) of one square block of the score matrix (numpy input and CPU tensors: memory
        about ``2·chunk_size²`` floats per core; default 1024) or query rows per block (tensors on other
        devices: default about 128 MiB of ``chunk_size × n_samples`` scores).

    Returns
    -------
    distances : ndarray of shape (n_samples, n_neighbors), float64
        Sorted increasingly in each row. A torch tensor on the input's device for torch input,
        without a graph (the search is not differentiable).
    indices : ndarray of shape (n_samples, n_neighbors), int
        Row indices of the neighbours; ties are broken by the smaller index: for numpy input and
        CPU tensors as a stable sort of the exact distances (repeated rows included), on other
        devices among the candidates kept (so only when fewer than ``max(8, n_neighbors // 8)``
        extra points tie at the last distance).

    Notes
    -----
    On the centred data ``c`` the score ``s_ij = c_i·c_j − ‖c_i‖²/2 − ‖c_j‖²/2 = −‖c_i − c_j‖²/2``
    is one matrix product of the augmented rows ``[c_i, ‖c_i‖²/2, 1]`` and ``[c_j, −1, −‖c_j‖²/2]``
    (float32 for float32 input, float64 otherwise). It is symmetric, so only the square blocks
    of the upper triangle are computed, and each block is offered to its rows and, transposed,
    to its columns: half the ``n²·d`` multiply-adds of a plain search. Each point keeps its
    ``m = n_neighbors + max(8, n_neighbors // 8)`` best scores; a block's entries are compared
    once with each side's current ``m``-th best, and only the few that reach it are merged. The
    blocks run on one worker thread per core (single-threaded BLAS each), so that the selection
    of one block overlaps the products of the others. The ``m`` candidates'
    squared distances are then recomputed as ``Σ (x_i − x_j)²`` in float64 from the original
    rows, sorted, and the first ``n_neighbors`` returned; a bound on the rounding of the scores
    certifies, row by row, that no other point can be nearer, and a row it cannot certify is
    searched again in float64. The result is that of an exact float64 brute-force search. On
    integer rows of moderate norm (one-hot, 0/1, counts: centred squared norms up to ``2²²``) the
    float32 scores are exact, so every row is certified, ties included, without a second search.
    Rows repeated more than ``max(8, n_neighbors // 8)`` times (a padding row, a constant row) are
    searched once, as distinct points, and their neighbour lists shared: the same result. Time
    ``O(n²·d/2)`` in BLAS; extra memory ``O(chunk_size² + n·m)``, no copy of ``X`` (of its distinct rows
    when rows repeat, above).

    With numba installed (``pip install -e ".[fast]"``), searches whose work
    ``n² + 3·n·n_neighbors·d`` is at least ``1.4·10⁹`` run the selection and the
    recomputation in compiled loops, whose loading in a new process such searches repay
    (smaller ones do not); the environment variable
    ``ISOTROPY_JIT`` sets this: ``auto`` (the default), ``1`` (always) or ``0`` (never). Both
    give the same neighbours and distances equal up to the order of their float64 sums (a
    relative ``(d + 4)·ε``), so two points at the same distance up to that rounding may trade
    places. A CPU tensor is searched by the same kernel (on its data, no copy); a tensor on another
    device by the same stages in torch operations on its device: ``torch.topk`` of float32 (or
    float64) scores of blocks of rows, float64 differences (float32 on MPS, which has no float64),
    the same certificate (its bound widened when float32 products may run in TF32 or bfloat16) and
    the same fallbacks, so that it returns the same neighbours.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy.metrics.neighbors import kneighbors
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]])
    >>> dist, ind = kneighbors(X, n_neighbors=1)
    >>> dist.ravel().tolist(), ind.ravel().tolist()
    ([1.0, 1.0, 2.0], [1, 0, 1])
    """
    if is_dask(X):  # a dask array: computed by tiles / chunk statistics on the dask scheduler
        from isotropy import distributed
        return distributed.kneighbors(X, n_neighbors=n_neighbors, metric=metric, chunk_size=chunk_size)
    caller = "kneighbors"
    metric = check_option(metric, "metric", _METRICS, caller=caller)
    # the cosine distance reads each row's direction alone: every row at its own unit scale (exact), so rows of
    # 1e200 beside rows of 1e-100 keep their directions (one scale for all made the small ones zero rows)
    given = X
    X = check_X(X, caller=caller, rescale="directions" if metric == "cosine" else False)
    if metric == "euclidean":  # (the cosine metric's rescaling refused them) as numpy's search refuses them
        from isotropy._utils.validation import refuse_subnormal_as_given

        refuse_subnormal_as_given(given, X, caller=caller)  # float16 tensors, searched in float32
    n = X.shape[0]
    check_n_neighbors(n_neighbors, n, caller=caller, low=1)
    check_scalar(chunk_size, "chunk_size", caller=caller, kind=numbers.Integral, low=1, allow_none=True)
    n_neighbors = int(n_neighbors)
    if is_torch(X):
        dist, ind = _kneighbors_torch(X, n_neighbors, metric, chunk_size, caller)
    else:
        dist, ind = _search_numpy(X, n_neighbors, metric, chunk_size, caller)
    if metric == "euclidean":
        _refuse_underflowed(X, dist, ind, caller)
    return dist, ind


def _refuse_underflowed(X, dist, ind, caller: str) -> None:
    """Refuse distinct rows of ``X`` (as given) found at distance 0, as TwoNN and MLE refuse them.

    Their squared differences lay below float64's range at the search's scale (rows near 1e-100 beside rows near
    1e100): 0 was returned for them. Equal rows stay neighbours at distance 0. Costs a look at the distances (none
    is 0 on data without equal rows and without such values), and a comparison of the rows of the pairs at 0.
    """
    from isotropy._kernels.dimension import NEIGHBOURS_AT_ZERO, rows_at_zero_distance, underflowed_distances

    count = rows_at_zero_distance(X.detach() if is_torch(X) else X, dist, ind).shape[0]
    if count:
        raise underflowed_distances(caller, count, identical=NEIGHBOURS_AT_ZERO)


