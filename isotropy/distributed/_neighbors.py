"""Exact k-nearest neighbours of a dask array as tiles, and TwoNN / Levina–Bickel MLE on them.

Tile (I, J ≥ I) runs the in-memory search's kernels (:mod:`isotropy.metrics.neighbors`: augmented
operands, grouped-threshold selection for rows and, transposed, for columns) on the two row
blocks, recomputes the squared distances of its candidates exactly in float64 from the original
rows, and returns each row's best ``m`` candidates (distance, global index). A row block's
candidates from all its tiles are merged by a tree reduction that keeps the ``m`` best by
(distance, index); the first ``n_neighbors`` are the result. The candidate set is a superset of
the in-memory search's, so float64 results are those of an exact brute-force search, as in memory.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from isotropy.distributed._duplicates import distinct_rows
from isotropy.distributed._graph import check_dask_X, check_tile_rows, compute, finite_blocks, row_starts, tree_reduce

__all__ = ["kneighbors", "local_mle_dimension", "mle_dimension", "twonn_dimension"]

_METRICS = ("euclidean", "cosine")


def _knn_block(block, metric, caller):
    from isotropy._kernels.neighbors import _prepare

    return _prepare(np.asarray(block), metric, caller)


def _operands(X, scale, caller):
    """[c, ‖c‖²/2, 1] rows and [c, −1, −‖c‖²/2] rows of the tile's points, centred on the tile."""
    from isotropy._kernels.neighbors import _augmented
    from isotropy._utils.validation import IsotropyValueError

    A = _augmented(X, scale, X.dtype)
    if A is None and X.dtype == np.float32:
        A = _augmented(X, scale, np.float64)
    if A is None:
        raise IsotropyValueError(f"The 'X' parameter of {caller} must have values whose squared distances fit in "
                                 f"float64. Got values too large instead.")
    d = X.shape[1]
    B = np.empty_like(A)
    B[:, :d] = A[:, :d]
    B[:, d] = -1
    B[:, d + 1] = -A[:, d]
    return A, B


def _exact_candidates(X, scale, best_v, best_i, rows, to_global, n_total):
    """Exact float64 squared distances of the kept candidates, with global indices (invalid: inf, n)."""
    from isotropy._kernels.neighbors import _exact_sq_distances

    sq = _exact_sq_distances(X, scale, rows, best_i)
    invalid = np.isneginf(best_v)
    sq[invalid] = np.inf
    index = to_global(best_i)
    index[invalid] = n_total
    return sq, index


def _knn_tile(P, Q, start_p, start_q, m, n_total, caller):
    """Best ``m`` candidates (exact squared distance, global index) of P's rows and Q's rows in this tile."""
    from isotropy._kernels.neighbors import _update_cols, _update_rows

    n_p = P[0].shape[0]
    if Q is None:
        X, scale = P
        A, B = _operands(X, scale, caller)
        S = A @ B.T
        np.fill_diagonal(S, -np.inf)  # a point is not its own neighbour
        best_v, best_i = np.full((n_p, m), -np.inf, dtype=S.dtype), np.zeros((n_p, m), dtype=np.intp)
        _update_rows(best_v, best_i, 0, S, 0, first=True)
        return _exact_candidates(X, scale, best_v, best_i, np.arange(n_p), lambda i: i + start_p, n_total), None
    X = np.concatenate([P[0], Q[0]])
    scale = None if P[1] is None else np.concatenate([P[1], Q[1]])
    A, B = _operands(X, scale, caller)
    S = A[:n_p] @ B[n_p:].T
    n_q = S.shape[1]
    vp, ip = np.full((n_p, m), -np.inf, dtype=S.dtype), np.zeros((n_p, m), dtype=np.intp)
    vq, iq = np.full((n_q, m), -np.inf, dtype=S.dtype), np.zeros((n_q, m), dtype=np.intp)
    _update_rows(vp, ip, 0, S, n_p, first=True)  # columns are tile rows n_p:
    _update_cols(vq, iq, 0, S, 0, first=True)
    return (_exact_candidates(X, scale, vp, ip, np.arange(n_p), lambda i: i - n_p + start_q, n_total),
            _exact_candidates(X, scale, vq, iq, np.arange(n_p, n_p + n_q), lambda i: i + start_p, n_total))


def _merge_candidates(a, b):
    from isotropy._kernels.neighbors import _sort_candidates

    m = a[0].shape[1]
    return _sort_candidates(np.concatenate([a[0], b[0]], axis=1), np.concatenate([a[1], b[1]], axis=1), m)


def _final(cands, n_neighbors, metric):
    from isotropy._kernels.neighbors import _finish, _sort_candidates

    sq, index = _sort_candidates(*cands, n_neighbors)
    return _finish(np.array(sq), metric), index


def _neighbour_blocks(X, n_neighbors, metric, chunk_size, caller):
    """Delayed (distances, indices) per row block, and the row starts."""
    from dask import delayed

    from isotropy._kernels.neighbors import _n_candidates
    from isotropy._utils.validation import check_option, check_scalar

    check_option(metric, "metric", _METRICS, caller=caller)
    n = X.shape[0]
    check_scalar(n_neighbors, "n_neighbors", caller=caller, kind=numbers.Integral, low=1, high=n - 1)
    m = _n_candidates(int(n_neighbors), n)
    X = check_dask_X(X, caller=caller, min_samples=2, rows=max(check_tile_rows(chunk_size, caller, X.shape[-1]), m + 1))
    starts = row_starts(X)
    preps = [delayed(_knn_block, pure=True, nout=2)(b, metric, caller) for b in finite_blocks(X, caller)]
    tile = delayed(_knn_tile, pure=True, nout=2)
    parts = [[] for _ in preps]
    for i in range(len(preps)):
        for j in range(i, len(preps)):
            out = tile(preps[i], None if i == j else preps[j], starts[i], starts[j], m, n, caller)
            parts[i].append(out[0])
            if j != i:
                parts[j].append(out[1])
    final = delayed(_final, pure=True, nout=2)
    return [final(tree_reduce(p, _merge_candidates, name="isotropy-merge-neighbours"), int(n_neighbors), metric)
            for p in parts], starts


def kneighbors(X, *, n_neighbors, metric="euclidean", chunk_size=None):
    """:func:`isotropy.metrics.neighbors.kneighbors` of a dask array: lazy dask arrays (distances, indices).

    ``chunk_size`` is the rows per tile (default 4096). Each point's neighbours are exact (float64
    input: those of a brute-force search; ties broken by the smaller index).
    """
    import dask.array as da

    blocks, starts = _neighbour_blocks(X, n_neighbors, metric, chunk_size, "kneighbors")
    k = int(n_neighbors)
    dist = da.concatenate([da.from_delayed(b[0], shape=(e - s, k), dtype=np.float64)
                           for b, s, e in zip(blocks, starts, starts[1:])])
    ind = da.concatenate([da.from_delayed(b[1], shape=(e - s, k), dtype=np.intp)
                          for b, s, e in zip(blocks, starts, starts[1:])])
    return dist, ind


def _no_duplicates(dist, caller, start=0):
    """A zero first-neighbour distance left after merging duplicates (:mod:`._duplicates`) is an error."""
    from isotropy._utils.validation import IsotropyValueError

    zero = np.flatnonzero(dist[:, 0] == 0)
    if zero.size:
        raise IsotropyValueError(
            f"The 'X' parameter of {caller} must have its distinct rows at a nonzero float64 distance from each "
            f"other (identical rows are merged). Got {zero.size} distinct row(s) at distance 0 from another row "
            f"instead (rescale X).")
    return dist


def twonn_dimension(X, *, discard_fraction=0.1, method="linear", metric="euclidean", chunk_size=None):
    """:func:`isotropy.twonn_dimension` of a dask array (see there): exact two nearest neighbours by tiles."""
    from dask import delayed

    from isotropy._utils.validation import IsotropyValueError, check_option, check_scalar

    caller = "twonn_dimension"
    X = check_dask_X(X, caller=caller, min_samples=3)
    check_scalar(discard_fraction, "discard_fraction", caller=caller, low=0, high=1, closed="left")
    method = check_option(method, "method", ("linear", "mle"), caller=caller)
    check_option(metric, "metric", _METRICS, caller=caller)
    distinct = distinct_rows(X, n_neighbors=2, metric=metric, caller=caller)
    if distinct is not None:  # merged as in memory: each distinct point once
        X = X[distinct.rows]
    blocks, _ = _neighbour_blocks(X, 2, metric, chunk_size, caller)
    (dist,) = compute(delayed(np.concatenate, pure=True)([b[0] for b in blocks]))
    mu = np.sort(_no_duplicates(dist, caller)[:, 1] / dist[:, 0])
    N = mu.shape[0]
    n_keep = int(N * (1 - discard_fraction))
    if method == "linear" and n_keep == N:
        raise IsotropyValueError(
            f"The 'discard_fraction' parameter of {caller} must leave out at least the largest ratio with "
            f"method='linear' (where F(mu) = 1 and -log(1 - F) is infinite). Got {discard_fraction!r} instead.")
    if n_keep < 2:
        raise IsotropyValueError(f"The 'discard_fraction' parameter of {caller} must keep at least 2 of the {N} "
                                 f"distinct points. Got {discard_fraction!r} instead.")
    log_mu = np.log(mu[:n_keep])
    if method == "mle":
        return float((n_keep - 1) / (log_mu.sum() + (N - n_keep) * log_mu[-1]))
    y = -np.log1p(-np.arange(1, n_keep + 1) / N)
    return float(np.dot(log_mu, y) / np.dot(log_mu, log_mu))


def _local_block(dist, caller, start):
    from isotropy._kernels.dimension import _local_mle

    with warnings.catch_warnings():  # counted and reported once, on the client
        warnings.simplefilter("ignore")
        return _local_mle(_no_duplicates(dist, caller, start), caller)


def _local_graph(X, n_neighbors, metric, chunk_size, caller):
    """Lazy local estimates of the distinct points of ``X``, and the :class:`Distinct` map (None: all distinct)."""
    import dask.array as da
    from dask import delayed

    from isotropy._utils.validation import check_option, check_scalar

    X = check_dask_X(X, caller=caller, min_samples=3)
    check_scalar(n_neighbors, "n_neighbors", caller=caller, kind=numbers.Integral, low=2, high=X.shape[0] - 1)
    check_option(metric, "metric", _METRICS, caller=caller)
    distinct = distinct_rows(X, n_neighbors=int(n_neighbors), metric=metric, caller=caller, stacklevel=5)
    if distinct is not None:  # merged as in memory: each distinct point once
        X = X[distinct.rows]
    blocks, starts = _neighbour_blocks(X, n_neighbors, metric, chunk_size, caller)
    local = delayed(_local_block, pure=True)
    return da.concatenate([da.from_delayed(local(b[0], caller, s), shape=(e - s,), dtype=np.float64)
                           for b, s, e in zip(blocks, starts, starts[1:])]), distinct


def _warn_flat(local, n_neighbors, caller):
    flat = int(np.count_nonzero(np.isinf(local)))
    if flat:
        warnings.warn(f"{caller}: {flat} points have all their {n_neighbors} nearest neighbours at the same "
                      f"distance; their local MLE dimension is infinite (increase n_neighbors).", UserWarning,
                      stacklevel=3)


def local_mle_dimension(X, *, n_neighbors=100, metric="euclidean", chunk_size=None):
    """:func:`isotropy.local_mle_dimension` of a dask array: a lazy dask array of shape (n_samples,)."""
    local, distinct = _local_graph(X, n_neighbors, metric, chunk_size, "local_mle_dimension")
    return local if distinct is None else local[distinct.inverse]  # a duplicate row gets its point's estimate


def mle_dimension(X, *, n_neighbors=20, metric="euclidean", averaging="mean", chunk_size=None):
    """:func:`isotropy.mle_dimension` of a dask array (see there)."""
    from isotropy._kernels.dimension import _AVERAGING, _pool
    from isotropy._utils.validation import check_option

    caller = "mle_dimension"
    averaging = check_option(averaging, "averaging", _AVERAGING, caller=caller)
    (local,) = compute(_local_graph(X, n_neighbors, metric, chunk_size, caller)[0])
    _warn_flat(local, n_neighbors, caller)
    return _pool(local, averaging)
