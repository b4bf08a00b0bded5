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

from isotropy._kernels.neighbors import _METRICS, _finish, _n_candidates, _prepare, exact_knn
from isotropy._utils.backend import is_dask, is_torch
from isotropy._utils.magnitude import rescaled
from isotropy._utils.validation import IsotropyValueError, check_n_neighbors, check_option, check_scalar, check_X

__all__ = ["kneighbors"]


def _kneighbors_numpy(X: np.ndarray, scale, n_neighbors: int, chunk_size: int | None, caller: str = "kneighbors"):
    """Squared distances (float64, sorted) and indices of the nearest neighbours of the rows ``X[i]·scale[i]``.

    The exact kernel :func:`isotropy._kernels.neighbors.exact_knn` (float32 candidate blocks of the
    upper triangle, exact float64 distances, a rounding certificate per row, exact fallbacks).
    """
    return exact_knn(X, scale, n_neighbors, block=chunk_size, caller=caller)


def _kneighbors_torch(X, n_neighbors: int, metric: str, chunk_size: int | None, caller: str):
    import torch

    with torch.no_grad():
        # at unit scale by a power of two (exact): float32 scores of data near 1e20, float64 squares near 1e160
        # and 1e-200, overflowed or lost every digit (wrong neighbours, inf or 0 distances); scaled back below
        # (the cosine metric's rows are each at their own unit scale already, check_X: one factor for all would
        # push the small ones back under float32's normal range)
        X, exponent = (X.detach(), 0) if metric == "cosine" else rescaled(X.detach(), caller=caller)
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
        if metric == "cosine":
            return dist / 2, ind  # of directions: the scale does not enter
        dist = dist.sqrt_()
        if exponent:  # in two factors, each a normal number: exact
            half = exponent // 2
            dist = dist * (2.0 ** half) * (2.0 ** (exponent - half))
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
        ``2·chunk_size²`` floats per core; default 1024) or query rows per block (torch input: default
        about 128 MiB of ``chunk_size × n_samples`` scores).

    Returns
    -------
    distances : ndarray of shape (n_samples, n_neighbors), float64
        Sorted increasingly in each row. A torch tensor on the input's device for torch input,
        without a graph (the search is not differentiable).
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
    once with each side's current ``m``-th best, and only the few that reach it are merged. The
    blocks run on one worker thread per core (single-threaded BLAS each), so that the selection
    of one block overlaps the products of the others. The ``m`` candidates'
    squared distances are then recomputed as ``Σ (x_i − x_j)²`` in float64 from the original
    rows, sorted, and the first ``n_neighbors`` returned; a bound on the rounding of the scores
    certifies, row by row, that no other point can be nearer, and a row it cannot certify is
    searched again in float64. The result is that of an exact float64 brute-force search. Time
    ``O(n²·d/2)`` in BLAS; extra memory ``O(chunk_size² + n·m)``, no copy of ``X``.

    With numba installed (``pip install -e ".[fast]"``), searches whose work
    ``n² + 3·n·n_neighbors·d`` is at least ``1.4·10⁹`` run the selection and the
    recomputation in compiled loops, whose loading in a new process such searches repay
    (smaller ones do not); the environment variable
    ``ISOTROPY_JIT`` sets this: ``auto`` (the default), ``1`` (always) or ``0`` (never). Both
    give the same neighbours and distances equal up to the order of their float64 sums (a
    relative ``(d + 4)·ε``), so two points at the same distance up to that rounding may trade
    places. Torch input uses ``torch.topk`` on blocks of rows on the tensor's device instead.

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
    X = check_X(X, caller=caller, rescale="directions" if metric == "cosine" else False)
    n = X.shape[0]
    check_n_neighbors(n_neighbors, n, caller=caller, low=1)
    check_scalar(chunk_size, "chunk_size", caller=caller, kind=numbers.Integral, low=1, allow_none=True)
    n_neighbors = int(n_neighbors)
    if is_torch(X):
        return _kneighbors_torch(X, n_neighbors, metric, chunk_size, caller)
    # exact: a power of two; for the cosine metric too (its norms overflowed near 1e160 and underflowed to "zero
    # rows" near 1e-200), whose distances do not depend on the scale
    X, exponent = rescaled(X, caller=caller)
    X, scale = _prepare(X, metric, caller)
    sq, ind = _kneighbors_numpy(X, scale, n_neighbors, chunk_size)
    return np.ldexp(_finish(sq, metric), exponent if metric == "euclidean" else 0), ind


