"""Exact k-nearest neighbours of every point among the others, in BLAS-shaped chunks.

The search is brute force but never a Python loop over points: for a block of query rows the
squared distances to all points come from one matrix product, ``‖x‖² + ‖y‖² − 2·x·yᵀ``, the
``m`` best candidates of each row are picked with a partial sort, and their distances are then
recomputed directly (``‖x − y‖`` in float64 from the original rows), so the returned distances
do not suffer the cancellation of the matrix-product formula. Extra memory is bounded by the
block size. Used by the intrinsic-dimension estimators of :mod:`isotropy.dimension`.
"""

from __future__ import annotations

import numbers

import numpy as np

from isotropy._backend import is_torch
from isotropy._validation import IsotropyValueError, check_option, check_scalar, check_X

__all__ = ["kneighbors"]

_METRICS = ("euclidean", "cosine")
# Extra memory of one block of query rows (distance block + partial-sort indices), in bytes.
_WORKING_MEMORY = 128 * 2**20
# Gathered candidate rows for the exact recomputation, in bytes.
_GATHER_MEMORY = 32 * 2**20


def _n_candidates(n_neighbors: int, n_samples: int) -> int:
    """Candidates kept from the matrix-product distances before the exact recomputation.

    A margin beyond ``n_neighbors`` lets the exact float64 distances reorder neighbours whose
    matrix-product distances were swapped by rounding (float32 input, near-ties).
    """
    return min(n_samples - 1, n_neighbors + max(8, n_neighbors // 4))


def _auto_chunk_size(n_samples: int, itemsize: int) -> int:
    per_row = n_samples * (itemsize + 8)  # distances + argpartition indices
    return int(max(16, min(n_samples, _WORKING_MEMORY // per_row)))


def _exact_sq_distances(R: np.ndarray, rows: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """``‖R[rows[i]] − R[cand[i, j]]‖²`` in float64, by direct differences, in bounded chunks."""
    n_rows, m = cand.shape
    out = np.empty((n_rows, m), dtype=np.float64)
    step = max(1, _GATHER_MEMORY // max(1, m * R.shape[1] * 8))
    for s in range(0, n_rows, step):
        e = min(n_rows, s + step)
        diff = R[cand[s:e]]  # (b, m, d) float64 copy
        diff -= R[rows[s:e]][:, None, :]
        out[s:e] = np.einsum("bmd,bmd->bm", diff, diff)
    return out


def _sort_candidates(sq: np.ndarray, cand: np.ndarray, n_neighbors: int):
    """Sort each row by (distance, index) and keep the first ``n_neighbors``."""
    order = np.lexsort((cand, sq), axis=-1)[:, :n_neighbors]
    return np.take_along_axis(sq, order, axis=1), np.take_along_axis(cand, order, axis=1)


def _prepare(X: np.ndarray, metric: str, caller: str):
    """Float64 representation whose euclidean geometry defines the metric, and the block dtype."""
    compute_dtype = np.float32 if X.dtype == np.float32 else np.float64
    R = np.asarray(X, dtype=np.float64)
    if metric == "cosine":
        norms = np.sqrt(np.einsum("ij,ij->i", R, R))
        zero = int(np.count_nonzero(norms == 0))
        if zero:
            raise IsotropyValueError(f"The 'X' parameter of {caller} must have no zero rows with metric='cosine' "
                                     f"(the cosine distance is undefined for them). Got {zero} zero rows instead.")
        R = R / norms[:, None]
    return R, compute_dtype


def _kneighbors_numpy(R: np.ndarray, n_neighbors: int, compute_dtype, chunk_size: int | None):
    """Squared euclidean distances and indices of the nearest neighbours of the rows of ``R``."""
    n = R.shape[0]
    m = _n_candidates(n_neighbors, n)
    C = (R - R.mean(axis=0)).astype(compute_dtype, copy=False)  # centring keeps xxᵀ small
    sq_norms = np.einsum("ij,ij->i", C, C)
    b = chunk_size or _auto_chunk_size(n, C.dtype.itemsize)
    dist = np.empty((n, n_neighbors), dtype=np.float64)
    ind = np.empty((n, n_neighbors), dtype=np.intp)
    for start in range(0, n, b):
        stop = min(n, start + b)
        rows = np.arange(start, stop)
        D = C[start:stop] @ C.T
        D *= -2
        D += sq_norms[None, :]
        D += sq_norms[start:stop, None]
        D[rows - start, rows] = np.inf  # a point is not its own neighbour
        if m < n - 1:
            cand = np.argpartition(D, m - 1, axis=1)[:, :m]
        else:  # every other point is a candidate; the point itself sorts last (inf)
            cand = np.argsort(D, axis=1)[:, :m]
        del D
        sq = _exact_sq_distances(R, rows, cand)
        sq, cand = _sort_candidates(sq, cand, n_neighbors)
        dist[start:stop] = sq
        ind[start:stop] = cand
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
        b = chunk_size or _auto_chunk_size(n, C.element_size())
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
        Query rows per block; a block holds ``chunk_size × n_samples`` distances and partial-sort
        indices. ``None`` picks the largest block within about 128 MiB.

    Returns
    -------
    distances : ndarray of shape (n_samples, n_neighbors), float64
        Sorted increasingly in each row. A torch tensor on the input's device for torch input.
    indices : ndarray of shape (n_samples, n_neighbors), int
        Row indices of the neighbours; ties are broken by the smaller index.

    Notes
    -----
    For a block ``B`` of query rows of the centred data ``C``, ``D = ‖c_i‖² + ‖c_j‖² − 2·C_B·Cᵀ``
    (one GEMM, in float32 for float32 input and float64 otherwise), the diagonal is set to
    ``+inf``, and ``np.argpartition`` keeps ``n_neighbors`` plus a margin of candidates per row.
    Their squared distances are recomputed as ``Σ (x_i − x_j)²`` in float64 from the original
    rows, sorted, and the first ``n_neighbors`` returned. Time ``O(n²·d)`` in BLAS, memory
    ``O(chunk_size·n)``. For float64 input the result equals an exact brute-force search; for
    float32 input candidates are preselected in float32, which can only swap neighbours whose
    distances agree to float32 rounding.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy.neighbors import kneighbors
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]])
    >>> dist, ind = kneighbors(X, n_neighbors=1)
    >>> dist.ravel().tolist(), ind.ravel().tolist()
    ([1.0, 1.0, 2.0], [1, 0, 1])
    """
    caller = "kneighbors"
    X = check_X(X, caller=caller)
    metric = check_option(metric, "metric", _METRICS, caller=caller)
    n = X.shape[0]
    check_scalar(n_neighbors, "n_neighbors", caller=caller, kind=numbers.Integral, low=1, high=n - 1)
    check_scalar(chunk_size, "chunk_size", caller=caller, kind=numbers.Integral, low=1, allow_none=True)
    n_neighbors = int(n_neighbors)
    if is_torch(X):
        return _kneighbors_torch(X, n_neighbors, metric, chunk_size, caller)
    R, compute_dtype = _prepare(X, metric, caller)
    sq, ind = _kneighbors_numpy(R, n_neighbors, compute_dtype, chunk_size)
    return _finish(sq, metric), ind


def _finish(sq: np.ndarray, metric: str) -> np.ndarray:
    """Squared euclidean distances of the representation -> distances of ``metric`` (in place)."""
    if metric == "cosine":
        sq /= 2  # 1 - cos(x, y) = ‖u - v‖² / 2 for unit vectors u, v
        return sq
    return np.sqrt(sq, out=sq)
