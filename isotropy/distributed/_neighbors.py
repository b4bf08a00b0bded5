"""Exact k-nearest neighbours of a dask array as tiles, and TwoNN / Levina–Bickel MLE on them.

Tile (I, J ≥ I) runs the in-memory search's kernels (:mod:`isotropy.metrics.neighbors`: augmented
operands, grouped-threshold selection for rows and, transposed, for columns) on the two row
blocks, recomputes the squared distances of its candidates exactly in float64 from the original
rows, and returns each row's best ``m`` candidates (distance, global index). A row block's
candidates from all its tiles are merged by a tree reduction that keeps the ``m`` best by
(distance, index); the first ``n_neighbors`` are the result. The candidate set is a superset of
the in-memory search's, so float64 results are those of an exact brute-force search, as in memory.

The blocks are searched at the unit scale of the whole array (a power of two, exact: :func:`unit_blocks`), as
the in-memory search rescales the materialised array: near 1e155 or 1e-200 in float64 (1e20 in float32) the
squared distances overflowed or lost every digit. :func:`kneighbors` scales its distances back (inf or 0 only
where the true distance is not a float64); TwoNN and MLE take the unit-scale distances (only their ratios count).
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from isotropy._kernels.dimension import DEFAULT_MLE_NEIGHBOURS, parallel_radius
from isotropy.distributed._duplicates import distinct_rows
from isotropy.distributed._graph import (
    NEIGHBOUR_TILE_ROWS,
    aligned_arguments,
    at_metric_scale,
    check_dask_X,
    check_tile_rows,
    compute,
    exponent_as_given,
    finite_blocks,
    like_rows,
    row_chunks,
    row_starts,
    tree_reduce,
    unit_blocks,
)

__all__ = ["kneighbors", "local_mle_dimension", "mle_dimension", "neighbour_dimensions", "twonn_dimension"]

_METRICS = ("euclidean", "cosine")


@aligned_arguments
def _knn_block(block, metric, caller, exponent, fingerprint=False):
    """``(rows, scale, fingerprints)`` of a block for the tiles: its rows at the search's scale, the cosine metric's
    ``1/‖x‖`` (else None) and, with ``fingerprint`` (kneighbors) where bringing them to that scale (data outside
    the safe range only) left entries subnormal or zero, a digest of each such row as given (``b""`` for the
    others; else None): two distinct rows may then be equal at the search's scale (:func:`_distinct_at_zero`)."""
    from isotropy._kernels.neighbors import _prepare

    scaled = at_metric_scale(block, exponent, metric)
    fingerprints = None
    if fingerprint and metric == "euclidean" and exponent and scaled.size:
        import hashlib

        given = np.asarray(block)
        lost = ((np.abs(scaled) < np.finfo(scaled.dtype).tiny) & (given != 0)).any(axis=1)
        if lost.any():
            fingerprints = np.full(scaled.shape[0], b"", dtype="S16")
            for row in np.flatnonzero(lost):  # + 0.0: -0.0 is 0.0, as the values compare
                fingerprints[row] = hashlib.blake2b((given[row] + 0.0).tobytes(), digest_size=16).digest()
    return (*_prepare(scaled, metric, caller), fingerprints)


def _distinct_at_zero(X, fingerprints, parts, caller, whole):
    """Refuse distinct rows at distance 0 in a tile (kneighbors on dask, as in memory: ``parts``, ``(sq, ind, rows)``
    of its rows, ``ind`` into ``X``); ``whole``: the tile holds every row, so its count is X's."""
    from isotropy._kernels.dimension import NEIGHBOURS_AT_ZERO, rows_at_zero_distance, underflowed_distances

    found = [rows_at_zero_distance(X, sq, ind, rows=rows, fingerprints=fingerprints) for sq, ind, rows in parts]
    count = np.unique(np.concatenate(found)).size
    if count:
        raise underflowed_distances(caller, count, identical=NEIGHBOURS_AT_ZERO, at_least=not whole)


@aligned_arguments
def _knn_tile(P, Q, start_p, start_q, k, n_total, caller, check=False):
    """Exact ``k`` nearest (squared distance, global index) of P's rows and Q's rows within this tile.

    The in-memory kernel itself: :func:`~isotropy._kernels.neighbors.exact_knn` on a diagonal tile,
    :func:`~isotropy._kernels.neighbors.exact_knn_cross` (its off-diagonal block) on the others.
    Each tile's ``k`` nearest are exact, so the ``k`` nearest of a row are among its tiles' and the
    merge by (distance, index) is exact. Missing neighbours (a part smaller than ``k``): ``inf``, ``n_total``.
    The loops (numpy or compiled) are those the in-memory search of all ``n_total`` points for ``k``
    neighbours runs (``search``): the same distances, bit for bit, and numba loaded once per worker, not
    left out because one tile is small. A tile runs in the thread dask gives it
    (:func:`~isotropy._kernels.silhouette.tasks_in_this_thread`): dask runs the tiles in parallel.
    """
    from isotropy._kernels.silhouette import tasks_in_this_thread

    with tasks_in_this_thread():
        return _knn_tile_here(P, Q, start_p, start_q, k, n_total, caller, check)


def _knn_tile_here(P, Q, start_p, start_q, k, n_total, caller, check=False):
    from isotropy._kernels.neighbors import exact_knn, exact_knn_cross

    def to_global(sq, ind, local_size, start):
        ind = ind + start
        ind[np.isinf(sq)] = n_total
        return sq, ind

    if Q is None:
        X, scale, fingerprints = P
        n_p = X.shape[0]
        if n_p < 2:
            return (np.full((n_p, k), np.inf), np.full((n_p, k), n_total, dtype=np.intp)), None
        sq, ind = exact_knn(X, scale, min(k, n_p - 1), caller=caller, search=(n_total, k))
        if check:
            _distinct_at_zero(X, fingerprints, [(sq, ind, None)], caller, whole=n_p == n_total)
        if sq.shape[1] < k:
            sq = np.pad(sq, ((0, 0), (0, k - sq.shape[1])), constant_values=np.inf)
            ind = np.pad(ind, ((0, 0), (0, k - ind.shape[1])))
        return to_global(sq, ind, n_p, start_p), None
    n_p = P[0].shape[0]
    X = np.concatenate([P[0], Q[0]])
    scale = None if P[1] is None else np.concatenate([P[1], Q[1]])
    (sq_p, ind_p), (sq_q, ind_q) = exact_knn_cross(X, scale, n_p, k, caller=caller, search=(n_total, k))
    if check:
        fingerprints = None
        if P[2] is not None or Q[2] is not None:
            fingerprints = np.concatenate([np.full(part[0].shape[0], b"", dtype="S16") if part[2] is None else part[2]
                                           for part in (P, Q)])
        _distinct_at_zero(X, fingerprints, [(sq_p, ind_p, None), (sq_q, ind_q, np.arange(n_p, X.shape[0]))], caller,
                          whole=X.shape[0] == n_total)
    return to_global(sq_p, ind_p - n_p, n_p, start_q), to_global(sq_q, ind_q, n_p, start_p)


@aligned_arguments
def _merge_candidates(a, b):
    from isotropy._kernels.neighbors import _sort_candidates

    m = a[0].shape[1]
    return _sort_candidates(np.concatenate([a[0], b[0]], axis=1), np.concatenate([a[1], b[1]], axis=1), m)


@aligned_arguments
def _final(cands, metric, exponent=0):
    """(distances, indices) of a row block; euclidean distances times ``2**exponent`` (back to X's scale)."""
    from isotropy._kernels.neighbors import _finish

    dist = _finish(np.array(cands[0]), metric)
    if exponent and metric == "euclidean":
        with np.errstate(over="ignore", under="ignore"):  # inf or 0 only where the true distance is not a float64
            dist = np.ldexp(dist, exponent)
    return dist, cands[1]


def _neighbour_blocks(X, n_neighbors, metric, chunk_size, caller, exponent=None):
    """Delayed (distances, indices) per row block, and the row starts.

    ``exponent`` None: the blocks are searched at X's unit scale, and the distances scaled back
    (:func:`kneighbors`); an int: the blocks are searched at the scale ``X·2**-exponent`` and the
    distances are those of that scale (the unit scale TwoNN and MLE found with the duplicates).
    """
    from dask import delayed

    from isotropy._utils.validation import check_n_neighbors, check_option

    given = X.dtype  # (kneighbors': float16 is read as float32)
    check_dask_X(X, caller=caller, min_samples=2)  # X before the options, as in memory: one row is "at least 2 samples"
    check_option(metric, "metric", _METRICS, caller=caller)
    n = X.shape[0]
    check_n_neighbors(n_neighbors, n, caller=caller, low=1)
    k = int(n_neighbors)
    rows = check_tile_rows(chunk_size, caller, X.shape[-1], default=NEIGHBOUR_TILE_ROWS)
    X = check_dask_X(X, caller=caller, min_samples=2, rows=rows)
    starts = row_starts(X)
    check = exponent is None and metric == "euclidean"  # kneighbors: distinct rows at distance 0 refused in the tiles
    if exponent is None:
        blocks, exponent = unit_blocks(X, caller, neighbours=True)
        back = exponent
    else:
        blocks, back = finite_blocks(X, caller), 0
    exponent = exponent_as_given(exponent, blocks, given, X.dtype, caller)  # refused first, as in memory
    preps = [delayed(_knn_block, pure=True, nout=3)(b, metric, caller, exponent, check) for b in blocks]
    tile = delayed(_knn_tile, pure=True, nout=2)
    parts = [[] for _ in preps]
    for i in range(len(preps)):
        for j in range(i, len(preps)):
            out = tile(preps[i], None if i == j else preps[j], starts[i], starts[j], k, n, caller, check)
            parts[i].append(out[0])
            if j != i:
                parts[j].append(out[1])
    final = delayed(_final, pure=True, nout=2)
    return [final(tree_reduce(p, _merge_candidates, name="isotropy-merge-neighbours"), metric, back)
            for p in parts], starts


def kneighbors(X, *, n_neighbors, metric="euclidean", chunk_size=None):
    """:func:`isotropy.metrics.neighbors.kneighbors` of a dask array: lazy dask arrays (distances, indices).

    Both of shape (n_samples, n_neighbors), chunked like X's rows (one chunk across the neighbours);
    nothing runs until they are computed. ``chunk_size`` is the rows per tile (default 8192, fewer for
    data wider than 512 features: a block of at most 32 MiB in float64). Each point's neighbours are
    exact (float64 input: those of a brute-force search; ties broken by the smaller index). Distinct rows at
    euclidean distance 0 are refused when computed, as in memory (each tile counts those it finds).
    """
    import dask.array as da

    rows = row_chunks(X, caller="kneighbors")
    blocks, starts = _neighbour_blocks(X, n_neighbors, metric, chunk_size, "kneighbors")
    k = int(n_neighbors)
    dist = da.concatenate([da.from_delayed(b[0], shape=(e - s, k), dtype=np.float64)
                           for b, s, e in zip(blocks, starts, starts[1:])])
    ind = da.concatenate([da.from_delayed(b[1], shape=(e - s, k), dtype=np.intp)
                          for b, s, e in zip(blocks, starts, starts[1:])])
    return like_rows(dist, rows), like_rows(ind, rows)


def _no_duplicates(dist, caller, start=0, radius=0.0):
    """A zero first-neighbour distance left after merging duplicates (:mod:`._duplicates`) is an error; so is,
    under the cosine metric, one within ``radius`` (:func:`~isotropy._kernels.dimension.parallel_radius`): rows
    parallel to another to their values' precision, which the in-memory estimators merge as duplicates."""
    from isotropy._utils.validation import IsotropyValueError

    parallel = np.flatnonzero((dist[:, 0] > 0) & (dist[:, 0] <= radius))
    if parallel.size:
        raise IsotropyValueError(
            f"The 'X' parameter of {caller} must have no row parallel to another with metric='cosine' on a dask array "
            f"(a positive multiple, such as a normalised copy: at cosine distance 0). Got {parallel.size} such "
            f"row(s) instead; drop the copies, or measure X in memory, where they are merged with a warning.")
    zero = np.flatnonzero(dist[:, 0] == 0)
    if zero.size:
        from isotropy._kernels.dimension import underflowed_distances

        raise underflowed_distances(caller, int(zero.size))  # the in-memory estimators' refusal
    return dist


def twonn_dimension(X, *, discard_fraction=0.1, method="linear", metric="euclidean", chunk_size=None):
    """:func:`isotropy.twonn_dimension` of a dask array (see there): exact two nearest neighbours by tiles."""
    from dask import delayed

    from isotropy._kernels.dimension import _twonn
    from isotropy._utils.validation import check_option, check_scalar

    caller = "twonn_dimension"
    given = getattr(X, "dtype", None)  # the precision of the values as given (float16 is read as float32)
    X = check_dask_X(X, caller=caller, min_samples=3)
    check_scalar(discard_fraction, "discard_fraction", caller=caller, low=0, high=1, closed="left")
    method = check_option(method, "method", ("linear", "mle"), caller=caller)
    check_option(metric, "metric", _METRICS, caller=caller)
    n_rows = X.shape[0]
    distinct, exponent = distinct_rows(X, n_neighbors=2, metric=metric, caller=caller, report=metric != "cosine",
                                       given=given)
    if distinct is not None:  # merged as in memory: each distinct point once
        X = X[distinct.rows]
    radius = parallel_radius(X.shape[1], given, metric)
    if metric == "cosine":  # rows parallel to another merge as in memory (a search or two more), counted with the rest
        dist = _merge_parallel_rows(X, 2, metric, chunk_size, caller, exponent, radius, n_rows)
    else:
        blocks, _ = _neighbour_blocks(X, 2, metric, chunk_size, caller, exponent)
        (dist,) = compute(delayed(np.concatenate, pure=True)([b[0] for b in blocks]))
    return _twonn(_no_duplicates(dist, caller, radius=radius), discard_fraction, method, caller)


def _has_parallel(dist, radius) -> bool:
    """Whether a row's nearest neighbour is parallel to it (cosine distance within ``radius``, above 0)."""
    return bool(((dist[:, 0] > 0) & (dist[:, 0] <= radius)).any())


def _parallel_merged(X, n_neighbors, metric, chunk_size, caller, exponent, radius):
    """``(points, dist, where, parallel)``: ``X``'s points once the rows parallel to another are merged, as the
    in-memory estimators merge them (:func:`~isotropy._kernels.dimension.merge_parallel`, searched again until none is
    left); the last search's distances (``n_neighbors`` of them, or as many as there are points to search); each row
    of ``X``'s position among the points; whether any row was merged. Neither warns nor refuses."""
    from dask import delayed

    from isotropy._kernels.dimension import merge_parallel

    where, parallel, dist = np.arange(X.shape[0]), False, None
    while X.shape[0] > 1:  # fewer points than n_neighbors + 1: searched all the same, so that they are counted merged
        blocks, _ = _neighbour_blocks(X, min(n_neighbors, X.shape[0] - 1), metric, chunk_size, caller, exponent)
        dist, ind = compute(delayed(np.concatenate, pure=True)([b[0] for b in blocks]),
                            delayed(np.concatenate, pure=True)([b[1] for b in blocks]))
        found = merge_parallel(dist, ind, radius)
        if found is None:
            break
        X, where, parallel = X[found[0]], found[1][where], True
    return X, dist, where, parallel


def _merge_parallel_rows(X, n_neighbors, metric, chunk_size, caller, exponent, radius, n_rows, *, inverse=False):
    """The neighbour distances of ``X``'s points once the rows parallel to another are merged
    (:func:`_parallel_merged`), with the in-memory warning, or its refusal when ``n_neighbors`` or fewer points remain.
    ``n_rows``: the rows ``X``'s points came from (equal rows merged already, ``distinct_rows(report=False)``), so that
    the duplicates counted are the equal rows and the parallel ones together, as in memory (this said "2 duplicate
    rows" where the in-memory refusal said 98, and warned of the equal rows first). Rows parallel to another were
    refused once (a normalised copy of a row, at cosine distance 0): the same data gave a value in memory and an
    error on dask. With ``inverse``, also each row of ``X``'s position among the merged points: ``(dist, inverse)``."""
    from isotropy._kernels.dimension import duplicate_rows_message, too_few_distinct

    X, dist, where, parallel = _parallel_merged(X, n_neighbors, metric, chunk_size, caller, exponent, radius)
    if X.shape[0] - 1 < n_neighbors:
        raise too_few_distinct(caller, n_neighbors, X.shape[0], n_rows - X.shape[0])
    if X.shape[0] < n_rows:
        warnings.warn(duplicate_rows_message(caller, n_rows - X.shape[0], X.shape[0], metric, parallel), UserWarning,
                      stacklevel=4)
    return (dist, where) if inverse else dist


def _warn_equal_rows(caller, n_rows, n_points, metric):
    """The in-memory warning of equal rows that ``distinct_rows(report=False)`` left to the caller, once the search
    found no row parallel to another (called by the estimators: the line that called them is named)."""
    from isotropy._kernels.dimension import duplicate_rows_message

    if n_points < n_rows:
        warnings.warn(duplicate_rows_message(caller, n_rows - n_points, n_points, metric), UserWarning, stacklevel=4)


@aligned_arguments
def _local_block(dist, caller, start, radius=0.0, flag_parallel=False):
    """Local estimates of a block's points; with ``flag_parallel``, NaN for a block holding a row parallel to
    another (the client then merges them: :func:`_merge_parallel_rows`) instead of the refusal."""
    from isotropy._kernels.dimension import _local_mle

    if flag_parallel and _has_parallel(dist, radius):
        return np.full(dist.shape[0], np.nan)
    with warnings.catch_warnings():  # counted and reported once, on the client
        warnings.simplefilter("ignore")
        return _local_mle(_no_duplicates(dist, caller, start, radius), caller)


def _check_estimate_neighbours(X, n_neighbors, metric, caller, given=None, chunk_size=None) -> int:
    """The MLE's ``k``: an int in ``[2, n_samples - 1]``; past the rows, when duplicates are what limit it, the error
    says so, as in memory (:func:`~isotropy._kernels.dimension.too_few_distinct`); under the cosine metric rows
    parallel to another count as duplicates (``given``: X's dtype as it came in, the precision they are parallel to)."""
    from isotropy._kernels.dimension import too_few_distinct
    from isotropy._utils.validation import check_n_neighbors

    try:
        return check_n_neighbors(n_neighbors, X.shape[0], caller=caller, low=2)
    except ValueError:
        if isinstance(n_neighbors, numbers.Integral) and not isinstance(n_neighbors, bool) and n_neighbors >= 2:
            k, cosine = int(n_neighbors), metric == "cosine"
            distinct, exponent = distinct_rows(X, n_neighbors=k, metric=metric, caller=caller, report=not cosine,
                                               given=given)  # raises if duplicates (equal rows)
            if cosine:
                points = X if distinct is None else X[distinct.rows]
                points = _parallel_merged(points, k, metric, chunk_size, caller, exponent,
                                          parallel_radius(X.shape[1], given, metric))[0]
                if points.shape[0] < X.shape[0]:
                    raise too_few_distinct(caller, k, points.shape[0], X.shape[0] - points.shape[0]) from None
        raise


def _local_graph(X, n_neighbors, metric, chunk_size, caller, flag_parallel=False):
    """Lazy local estimates of the distinct points of ``X``, the :class:`Distinct` map (None: all distinct), and
    ``(X's distinct rows, the unit scale's exponent, the parallel radius)`` for :func:`_merge_parallel_rows`
    (``flag_parallel``: a block with rows parallel to another gives NaN estimates, see :func:`_local_block`)."""
    import dask.array as da
    from dask import delayed

    from isotropy._utils.validation import check_option

    given = getattr(X, "dtype", None)  # the precision of the values as given (float16 is read as float32)
    X = check_dask_X(X, caller=caller, min_samples=3)
    check_option(metric, "metric", _METRICS, caller=caller)
    _check_estimate_neighbours(X, n_neighbors, metric, caller, given, chunk_size)
    n_rows = X.shape[0]
    distinct, exponent = distinct_rows(X, n_neighbors=int(n_neighbors), metric=metric, caller=caller, stacklevel=5,
                                       report=metric != "cosine", given=given)
    if distinct is not None:  # merged as in memory: each distinct point once
        X = X[distinct.rows]
    radius = parallel_radius(X.shape[1], given, metric)
    _refuse_few_points(X, int(n_neighbors), metric, chunk_size, caller, exponent, radius, n_rows)
    blocks, starts = _neighbour_blocks(X, n_neighbors, metric, chunk_size, caller, exponent)
    local = delayed(_local_block, pure=True)
    return da.concatenate([da.from_delayed(local(b[0], caller, s, radius, flag_parallel), shape=(e - s,),
                                           dtype=np.float64)
                           for b, s, e in zip(blocks, starts, starts[1:])]), distinct, (X, exponent, radius, n_rows)


def _refuse_few_points(points, n_neighbors, metric, chunk_size, caller, exponent, radius, n_rows):
    """Under the cosine metric (``distinct_rows(report=False)``), ``n_neighbors`` or fewer points once equal rows are
    merged: refused, with the rows parallel to another merged and counted first, as in memory."""
    if metric == "cosine" and points.shape[0] - 1 < n_neighbors:
        _merge_parallel_rows(points, n_neighbors, metric, chunk_size, caller, exponent, radius, n_rows)  # raises


def _client_local(dist, caller, radius):
    """Local estimates from the merged points' distances, on the client; their flat points are warned about once,
    by :func:`_warn_flat` (as the tiles' are)."""
    from isotropy._kernels.dimension import _local_mle

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _local_mle(_no_duplicates(dist, caller, radius=radius), caller)


def _warn_flat(local, n_neighbors, caller, stacklevel=3):
    from isotropy._kernels.dimension import flat_points_message

    flat = int(np.count_nonzero(np.isinf(local)))
    if flat:  # the in-memory estimators' warning
        warnings.warn(flat_points_message(caller, flat, n_neighbors), UserWarning, stacklevel=stacklevel)


def local_mle_dimension(X, *, n_neighbors=100, metric="euclidean", chunk_size=None):
    """:func:`isotropy.local_mle_dimension` of a dask array: a dask array of shape (n_samples,), chunked like X's rows.

    The call runs one pass over the chunks, which hashes the rows to find duplicates (the graph
    depends on them); with the euclidean metric the neighbour tiles run when the result is computed.
    With ``metric="cosine"`` they run at the call: rows parallel to another (positive multiples, such
    as a normalised copy) are found only by the search, and are merged as in memory, each row getting
    its point's estimate (they were refused when the result was computed).
    """
    import dask.array as da

    caller = "local_mle_dimension"
    rows = row_chunks(X, caller=caller)
    local, distinct, (points, exponent, radius, n_rows) = _local_graph(X, n_neighbors, metric, chunk_size, caller,
                                                                       flag_parallel=metric == "cosine")
    if metric == "cosine":
        (local,) = compute(local)
        if np.isnan(local).any():  # rows parallel to another: merged as in memory, then estimated on the client
            dist, where = _merge_parallel_rows(points, int(n_neighbors), metric, chunk_size, caller, exponent,
                                               radius, n_rows, inverse=True)
            local = _client_local(dist, caller, radius)[where]
        else:
            _warn_equal_rows(caller, n_rows, points.shape[0], metric)
        _warn_flat(local, n_neighbors, caller)
        local = da.from_array(local, chunks=-1)
    if distinct is not None:
        local = local[distinct.inverse]  # a duplicate row gets its point's estimate
    return like_rows(local, rows)


def mle_dimension(X, *, n_neighbors=DEFAULT_MLE_NEIGHBOURS, metric="euclidean", averaging="mean", chunk_size=None):
    """:func:`isotropy.mle_dimension` of a dask array (see there)."""
    from isotropy._kernels.dimension import _AVERAGING, _pool
    from isotropy._utils.validation import check_option

    caller = "mle_dimension"
    averaging = check_option(averaging, "averaging", _AVERAGING, caller=caller)
    graph, _, (distinct, exponent, radius, n_rows) = _local_graph(X, n_neighbors, metric, chunk_size, caller,
                                                                  flag_parallel=True)
    (local,) = compute(graph)
    if np.isnan(local).any():  # cosine rows parallel to another: merged as in memory, then estimated on the client
        dist = _merge_parallel_rows(distinct, int(n_neighbors), metric, chunk_size, caller, exponent, radius, n_rows)
        local = _client_local(dist, caller, radius)
    elif metric == "cosine":
        _warn_equal_rows(caller, n_rows, distinct.shape[0], metric)
    _warn_flat(local, n_neighbors, caller)
    return _pool(local, averaging, caller, n_neighbors, stacklevel=4)  # (one frame more than in memory)


@aligned_arguments
def _dimension_block(dist, caller, start, radius, estimates):
    """A row block's first two neighbour distances (TwoNN's) and, with ``estimates``, its points' local MLE
    estimates (:func:`_local_block`: NaN for a block holding a row parallel to another, merged on the client)."""
    first = np.ascontiguousarray(dist[:, :2])
    if not estimates:
        return first, np.empty(0)
    return first, _local_block(dist, caller, start, radius, flag_parallel=True)


def neighbour_dimensions(X, *, twonn=True, mle=True, local_mle=False, n_neighbors=DEFAULT_MLE_NEIGHBOURS,
                         discard_fraction=0.1, method="linear", averaging="mean", metric="euclidean", chunk_size=None):
    """:func:`isotropy.metrics.dimension.neighbour_dimensions` of a dask array: TwoNN, the MLE and the local MLE from one
    pass of neighbour tiles.

    Equal to :func:`twonn_dimension`, :func:`mle_dimension` and :func:`local_mle_dimension` with the same options (the
    search's ``k = n_neighbors`` neighbours are exact, ties by index, so its first two are TwoNN's), at the cost of one
    duplicates pass and one search instead of one each. Each row block's tiles return its first two distances and its
    points' local estimates: the client holds ``3·n_samples`` floats, never the ``n_samples × k`` distances (unless rows
    parallel to another under the cosine metric are merged, as in :func:`mle_dimension`). ``local_mle_dimension`` comes
    back computed, as a dask array chunked like X's rows. An estimate the data refuse (TwoNN on tied neighbour
    distances) is NaN with one warning naming it, the others computed; when all are refused the call raises, as in
    memory.
    """
    import dask.array as da
    from dask import delayed

    from isotropy._kernels.dimension import _AVERAGING, _pool, _twonn, twonn_kept, undefined_estimates
    from isotropy._utils.validation import IsotropyValueError, check_option, check_scalar

    caller = "neighbour_dimensions"
    if not (twonn or mle or local_mle):
        raise IsotropyValueError(f"{caller} needs at least one of twonn, mle and local_mle to be True. Got all three "
                                 f"False instead.")
    rows = row_chunks(X, caller=caller)
    given = getattr(X, "dtype", None)  # the precision of the values as given (float16 is read as float32)
    X = check_dask_X(X, caller=caller, min_samples=3)
    check_option(metric, "metric", _METRICS, caller=caller)
    check_scalar(discard_fraction, "discard_fraction", caller=caller, low=0, high=1, closed="left")
    method = check_option(method, "method", ("linear", "mle"), caller=caller)
    averaging = check_option(averaging, "averaging", _AVERAGING, caller=caller)
    estimates = mle or local_mle
    k = _check_estimate_neighbours(X, n_neighbors, metric, caller, given, chunk_size) if estimates else 2
    n_rows = X.shape[0]
    distinct, exponent = distinct_rows(X, n_neighbors=k, metric=metric, caller=caller, report=metric != "cosine",
                                       given=given)
    points = X if distinct is None else X[distinct.rows]  # merged as in memory: each distinct point once
    radius = parallel_radius(X.shape[1], given, metric)
    _refuse_few_points(points, k, metric, chunk_size, caller, exponent, radius, n_rows)
    blocks, starts = _neighbour_blocks(points, k, metric, chunk_size, caller, exponent)
    part = delayed(_dimension_block, pure=True, nout=2)
    parts = [part(b[0], caller, s, radius, estimates) for b, s in zip(blocks, starts)]
    join = delayed(np.concatenate, pure=True)
    first, local = compute(join([p[0] for p in parts]), join([p[1] for p in parts]))
    where = None  # each point's position among the merged ones (cosine rows parallel to another)
    if _has_parallel(first, radius) or (estimates and np.isnan(local).any()):
        dist, where = _merge_parallel_rows(points, k, metric, chunk_size, caller, exponent, radius, n_rows,
                                           inverse=True)
        first = dist[:, :2]
        if estimates:
            local = _client_local(dist, caller, radius)
    elif metric == "cosine":
        _warn_equal_rows(caller, n_rows, points.shape[0], metric)
    out, failed = {}, {}  # an estimate the data refuse is NaN, the others computed, as in memory
    if twonn:
        first = _no_duplicates(first, caller, radius=radius)
        twonn_kept(first.shape[0], discard_fraction, method, caller)  # an option no data could meet: the call's error
        try:
            out["twonn_dimension"] = _twonn(first, discard_fraction, method, caller, warns_as="twonn_dimension")
        except IsotropyValueError as exc:  # tied neighbour distances (a lattice, binary data)
            failed["twonn_dimension"], out["twonn_dimension"] = exc, float("nan")
    if estimates:
        # a warning of the estimates names them (isotropy measure keeps it under mle_dimension, not under TwoNN)
        name = "mle_dimension" if mle else "local_mle_dimension"
        _warn_flat(local, k, name, stacklevel=4)
        if mle:
            try:
                out["mle_dimension"] = _pool(local, averaging, caller, k, warns_as=name, stacklevel=4)
            except IsotropyValueError as exc:
                failed["mle_dimension"], out["mle_dimension"] = exc, float("nan")
        if local_mle:
            each = local if where is None else local[where]
            each = each if distinct is None else each[distinct.inverse]  # a duplicate row gets its point's estimate
            out["local_mle_dimension"] = da.from_array(each, chunks=(rows,))  # in X's row chunks
    undefined_estimates(failed, list(out), caller, stacklevel=4)
    return out
