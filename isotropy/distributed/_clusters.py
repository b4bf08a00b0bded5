"""Exact cluster metrics on dask arrays: silhouette and Dunn as tiles of the distance matrix,
Calinski-Harabasz and Davies-Bouldin from per-chunk centroid statistics.

All of them are scale-invariant: every block is first brought to the unit scale of the whole array by a power
of two (:func:`isotropy.distributed._graph.unit_blocks`, exact), as the in-memory functions rescale the
materialised array, so data near float64's or float32's limits give their values (squared norms overflowed
near 1e155 and underflowed near 1e-200: a silhouette of 0.0, a Calinski-Harabasz index of NaN).

The distance matrix is cut into tiles (I, J ≥ I) of row blocks. Each tile is one task: it runs the
in-memory silhouette kernel (:class:`isotropy._kernels.silhouette._BlockKernel`) on the two blocks
and returns, for the rows of I, their distance sums to each cluster's members in J, and (the tile
transposed) for the rows of J their sums to the members in I: arrays of shape
(block rows, n_clusters), never a block of the n×n matrix. The sums of a row block are added up
over its tiles by a tree reduction, and turned into the block's coefficients on the worker.
"""

from __future__ import annotations

import math

import numpy as np

from isotropy._kernels.clusters import (
    _certainly_degenerate,
    _pair_ratios,
    _warn_convention,
    _warn_davies_bouldin,
    _warn_if_coincident,
    _worst_partners,
)
from isotropy._kernels.silhouette import DIAGONAL_ROWS
from isotropy.distributed._graph import (
    aligned_arguments,
    at_metric_scale,
    at_unit_scale,
    check_dask_X,
    check_tile_rows,
    compute,
    exponent_as_given,
    finite_blocks,
    host_labels,
    like_rows,
    row_chunks,
    row_starts,
    sample_rows,
    tree_reduce,
    unit_blocks,
)

__all__ = ["calinski_harabasz_score", "davies_bouldin_score", "dunn_index", "silhouette_samples",
           "silhouette_score"]

_METRICS = ("euclidean", "cosine")


@aligned_arguments
def _unit_sum(block, exponent):
    """Σ of the rows scaled to unit norm (each row first at its own unit scale where it must be; zero rows add
    nothing), float64."""
    B = np.asarray(at_metric_scale(block, exponent, "cosine"), dtype=np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", B, B))
    return (B / np.where(norms > 0, norms, 1.0)[:, None]).sum(axis=0)


@aligned_arguments
def _row_sum(block, exponent):
    """Σ of the rows of the block at unit scale (times ``2**-exponent``), float64."""
    return np.sum(at_unit_scale(block, exponent), axis=0, dtype=np.float64)


@aligned_arguments
def _chosen_centre(sample, mean, exponent):
    """The in-memory functions' centre (:func:`isotropy._kernels.centre.distance_centre`) from their sample of rows."""
    from isotropy._kernels.centre import distance_centre

    return distance_centre(at_unit_scale(sample, exponent), mean)


def _centre(X, blocks, metric, exponent):
    """Delayed float64 centre of the augmented operands (at unit scale): the mean of the rows, or the median of the
    in-memory functions' sample where a few rows drag the mean (euclidean), or the mean of the unit rows."""
    from dask import delayed

    from isotropy._kernels.centre import sample_rows
    from isotropy.distributed._covariance import _add

    n = X.shape[0]
    if metric == "euclidean":
        parts = [delayed(_row_sum, pure=True)(b, exponent) for b in blocks]
    else:
        parts = [delayed(_unit_sum, pure=True)(b, exponent) for b in blocks]
    mean = delayed(np.divide, pure=True)(tree_reduce(parts, _add, name="isotropy-merge-centre"), n)
    if metric == "euclidean":
        return delayed(_chosen_centre, pure=True)(X[sample_rows(n)], mean, exponent)
    return mean


# ---------------------------------------------------------------------------------------------- silhouette
@aligned_arguments
def _silhouette_block(block, ids, metric, mean, exponent):
    """Row block ready for the kernel: augmented rows (at unit scale) sorted by cluster, dense local cluster ids."""
    from isotropy._kernels.silhouette import _augmented_numpy

    block = at_metric_scale(block, exponent, metric)
    dtype = np.float64 if block.dtype == np.float64 else np.float32
    order = np.argsort(ids, kind="stable")
    R = _augmented_numpy(block, metric, dtype, order, mean=mean)
    present, local = np.unique(ids[order], return_inverse=True)
    return R, local.reshape(-1), present, order


@aligned_arguments
def _block_hashes(block, caller):
    """:func:`isotropy.distributed._duplicates._row_hashes` of a block's rows as given (euclidean)."""
    from isotropy.distributed._duplicates import _row_hashes

    return _row_hashes(block, "euclidean", caller)


def _candidates(*hashes):
    """The row numbers (in the whole array, sorted) whose hash another row shares: a superset of the equal rows."""
    h = np.concatenate(hashes)
    order = np.argsort(h, kind="stable")
    shared = h[order][1:] == h[order][:-1]
    candidate = np.zeros(h.size, dtype=bool)
    candidate[order[1:][shared]] = True
    candidate[order[:-1][shared]] = True
    return np.flatnonzero(candidate)


@aligned_arguments
def _candidate_rows(block, candidates, start, stop):
    """The rows of a block (rows ``start:stop`` of the array) among ``candidates``."""
    return np.asarray(block)[candidates[(candidates >= start) & (candidates < stop)] - start]


@aligned_arguments
def _groups(candidates, n, *rows):
    """Per row of the array: the number of its group of equal rows (bit for bit), -1 for a row equal to no other;
    None when no two rows are equal (:func:`isotropy._kernels.silhouette.groups_among` of the blocks' candidates)."""
    from isotropy._kernels.silhouette import groups_among

    return groups_among(candidates, np.concatenate(rows) if candidates.size else None, n)


def _duplicate_groups(blocks, starts, n, caller):
    """Delayed :func:`_groups` of the row blocks: hashes on the workers, the candidate rows alone compared."""
    from dask import delayed

    hashes = [delayed(_block_hashes, pure=True)(b, caller) for b in blocks]
    candidates = delayed(_candidates, pure=True)(*hashes)
    rows = [delayed(_candidate_rows, pure=True)(b, candidates, int(s), int(e))
            for b, s, e in zip(blocks, starts, starts[1:])]
    return delayed(_groups, pure=True)(candidates, n, *rows)


# Rows per block of the kernel inside a silhouette tile (one thread), so that a tile's products are those of the
# in-memory kernel rather than one product of its whole blocks: a diagonal tile forms its blocks on and above the
# diagonal (DIAGONAL_ROWS), an off-diagonal tile blocks of the in-memory kernel's 2048 rows, with a 16 MiB score
# buffer instead of one of its blocks' size (64 MiB at 4096 rows each). Measured by benchmarks/bench_dask.py
# (docs/benchmarks.md, "Later on 2026-12-04").
_OFF_DIAGONAL_ROWS = 2048


@aligned_arguments
def _silhouette_tile(P, Q, metric, n_clusters, groups=None, span_p=None, span_q=None):
    """Per-cluster distance sums of the rows of blocks P and Q to the members of the other block.

    The kernel wants the samples sorted by cluster with every cluster in range present: the two
    blocks are stacked with Q's local ids shifted past P's, so each block's clusters are
    contiguous and dense. ``Q=None`` is a diagonal tile. ``groups`` (euclidean): every row's group of equal rows
    (:func:`_groups`; None when there are none), ``span_p``/``span_q`` the blocks' rows in the array: equal rows
    are at distance 0 exactly, as in the in-memory kernel.
    """
    from isotropy._kernels.silhouette import _BlockKernel

    def duplicates(block, span):
        return None if groups is None else groups[span[0]:span[1]][block[3]]  # in the block's cluster order

    if Q is None:
        R, local, present, _ = P
        sums = np.zeros((R.shape[0], present.size))
        kernel = _BlockKernel(R, local, present.size, metric, min(R.shape[0], DIAGONAL_ROWS),
                              duplicates=duplicates(P, span_p))
        kernel.add_span((0, R.shape[0]), None, sums)
        out = np.zeros((R.shape[0], n_clusters))
        out[:, present] = sums
        return out, None
    n_p, p = P[0].shape[0], P[2].size
    R = np.concatenate([P[0], Q[0]])
    both = None if groups is None else np.concatenate([duplicates(P, span_p), duplicates(Q, span_q)])
    kernel = _BlockKernel(R, np.concatenate([P[1], Q[1] + p]), p + Q[2].size, metric,
                          min(max(n_p, R.shape[0] - n_p), _OFF_DIAGONAL_ROWS), duplicates=both)
    sums = np.zeros((R.shape[0], p + Q[2].size))
    kernel.add_span((0, n_p), (n_p, R.shape[0]), sums)
    sums_p, sums_q = np.zeros((n_p, n_clusters)), np.zeros((R.shape[0] - n_p, n_clusters))
    sums_p[:, Q[2]] = sums[:n_p, p:]
    sums_q[:, P[2]] = sums[n_p:, :p]
    return sums_p, sums_q


@aligned_arguments
def _q_sums(prep, n_clusters):
    """The sum of the squared norms of the block's operands in each cluster."""
    R, local, present, _ = prep
    return np.bincount(present[local], weights=R[:, -1].astype(np.float64), minlength=n_clusters)


@aligned_arguments
def _block_coefficients(sums, prep, counts, q_sums, metric):
    """Silhouette coefficients of one row block, in the block's own row order.

    The kernel's resolution (below which a = b = 0) depends on the mean squared norm in each cluster over
    all the blocks (``q_sums / counts``): the in-memory resolution.
    """
    from isotropy._kernels.silhouette import _coefficients_numpy, _resolution

    R, local, present, order = prep
    ids = present[local]
    resolution = _resolution(R[:, -1].astype(np.float64), ids, counts.size, R.dtype, R.shape[1] - 2, metric,
                             q_mean=q_sums / np.maximum(counts, 1))
    s = np.empty(order.size)
    s[order] = _coefficients_numpy(sums, ids, counts, resolution)
    return s


@aligned_arguments
def _block_uncertain(sums, prep, counts, q_sums, metric, start):
    """The row numbers (in the whole array) of the samples of one row block whose coefficient the product kernel
    may be wrong about beyond tolerance (:func:`isotropy._kernels.silhouette._uncertain_numpy`)."""
    from isotropy._kernels.silhouette import _resolution, _uncertain_numpy

    R, local, present, order = prep
    ids = present[local]
    resolution = _resolution(R[:, -1].astype(np.float64), ids, counts.size, R.dtype, R.shape[1] - 2, metric,
                             q_mean=q_sums / np.maximum(counts, 1))
    flagged = np.zeros(order.size, dtype=bool)
    flagged[order] = _uncertain_numpy(sums, ids, counts, resolution, R.dtype)
    return start + np.flatnonzero(flagged)


@aligned_arguments
def _flagged_rows(block, exponent, metric, start, flagged):
    """One block's rows among ``flagged`` (global row numbers), at the metric's scale, float64."""
    mine = flagged[(flagged >= start) & (flagged < start + len(block))] - start
    if not mine.size:
        return np.empty((0, block.shape[1]))
    return np.asarray(at_metric_scale(block, exponent, metric)[mine], dtype=np.float64)


@aligned_arguments
def _exact_block(rows, flagged, block, exponent, metric, ids, start, n_clusters):
    """:func:`isotropy._kernels.silhouette._exact_tile` of the flagged rows against one row block (None: none)."""
    from isotropy._kernels.silhouette import _exact_tile

    if not flagged.size:
        return None
    block = at_metric_scale(block, exponent, metric)
    return _exact_tile(rows, flagged, block, np.arange(start, start + len(ids)), ids, n_clusters, metric)


@aligned_arguments
def _merge_exact(x, y):
    return y if x is None else x + y


@aligned_arguments
def _exact_coefficients(sums, own, counts, metric="euclidean", n_features=0):
    """The coefficients of the flagged samples from their exact sums (empty when nothing is flagged)."""
    from isotropy._kernels.silhouette import _coefficients_numpy, exact_resolution

    if sums is None:
        return np.empty(0)
    return _coefficients_numpy(sums, own, counts, exact_resolution(metric, n_features))


@aligned_arguments
def _patched(s, flagged, fixed, start):
    """The block's coefficients with those of its flagged samples replaced by their exact values."""
    inside = (flagged >= start) & (flagged < start + s.size)
    if not inside.any():
        return s
    s = s.copy()
    s[flagged[inside] - start] = fixed[inside]
    return s


def _exact_pass(blocks, flagged, ids, exponent, metric, n_clusters, counts, starts, n_features=0):
    """Delayed exact coefficients of the samples ``flagged`` (their sums from coordinate differences).

    Two passes over ``blocks``: one gathers the flagged rows, the next runs the exact tiles of those rows
    against every block (:func:`isotropy._kernels.silhouette._exact_tile`). Each task returns at once when
    nothing is flagged.
    """
    from dask import delayed

    gather = delayed(_flagged_rows, pure=True)
    rows = delayed(np.concatenate, pure=True)([gather(b, exponent, metric, s, flagged)
                                               for b, s in zip(blocks, starts)])
    exact = tree_reduce([delayed(_exact_block, pure=True)(rows, flagged, b, exponent, metric, ids[s:e], s, n_clusters)
                         for b, s, e in zip(blocks, starts, starts[1:])], _merge_exact, name="isotropy-merge-exact")
    return delayed(_exact_coefficients, pure=True)(exact, delayed(np.take, pure=True)(ids, flagged), counts, metric,
                                                   n_features)


def _silhouette_graph(X, ids, metric, chunk_size, caller):
    """Delayed per-block coefficient arrays (tiles I ≤ J, tree-reduced sums per row block), and more.

    Returns ``(coefficients, uncertain, starts, exact, X)``: per row block its coefficients and the row numbers
    of its samples the product kernel may be wrong about (:func:`_block_uncertain`), the blocks' first rows,
    a function ``exact(flagged, blocks)`` giving the delayed exact coefficients of the samples ``flagged``
    (:func:`_exact_pass`), and the checked array whose row blocks ``blocks`` are.
    """
    from dask import delayed

    from isotropy._kernels.silhouette import _check_n_clusters
    from isotropy._utils.validation import check_option
    from isotropy.distributed._covariance import _add

    check_option(metric, "metric", _METRICS, caller=caller)
    n_clusters = _check_n_clusters(ids, X.shape[0], caller)
    given = X.dtype
    X = check_dask_X(X, caller=caller, rows=check_tile_rows(chunk_size, caller, X.shape[-1]))
    blocks, exponent = unit_blocks(X, caller)
    exponent = exponent_as_given(exponent, blocks, given, X.dtype, caller)  # float16 judged in float16, as in memory
    starts = row_starts(X)
    mean = _centre(X, blocks, metric, exponent)
    prep = delayed(_silhouette_block, pure=True, nout=4)
    preps = [prep(b, ids[s:e], metric, mean, exponent) for b, s, e in zip(blocks, starts, starts[1:])]
    tile = delayed(_silhouette_tile, pure=True, nout=2)
    # euclidean: equal rows at distance 0 exactly, as in memory (a float32 coefficient over many duplicates was
    # ~1e-4 off); cosine: a duplicate's error is δ, not √δ
    groups = _duplicate_groups(blocks, starts, X.shape[0], caller) if metric == "euclidean" else None
    spans = list(zip((int(s) for s in starts), (int(e) for e in starts[1:])))
    parts = [[] for _ in preps]
    for i in range(len(preps)):
        for j in range(i, len(preps)):
            out = tile(preps[i], None if i == j else preps[j], metric, n_clusters, groups, spans[i],
                       None if i == j else spans[j])
            parts[i].append(out[0])
            if j != i:
                parts[j].append(out[1])
    counts = np.bincount(ids, minlength=n_clusters).astype(np.float64)
    q_sums = tree_reduce([delayed(_q_sums, pure=True)(p, n_clusters) for p in preps], _add,
                         name="isotropy-merge-norms")
    sums = [tree_reduce(row, _add, name="isotropy-merge-cluster-sums") for row in parts]
    coefficients = [delayed(_block_coefficients, pure=True)(row, p, counts, q_sums, metric)
                    for row, p in zip(sums, preps)]
    uncertain = [delayed(_block_uncertain, pure=True)(row, p, counts, q_sums, metric, s)
                 for row, p, s in zip(sums, preps, starts)]

    def exact(flagged, blocks):
        """The exact pass (:func:`_exact_pass`) of the samples ``flagged`` over ``blocks`` (X's row blocks)."""
        return _exact_pass(blocks, flagged, ids, exponent, metric, n_clusters, counts, starts, int(X.shape[1]))

    return coefficients, uncertain, starts, exact, X


def silhouette_samples(X, labels, *, metric="euclidean", chunk_size=None):
    """:func:`isotropy.silhouette_samples` of a dask array: a lazy dask array of shape (n_samples,), chunked like X's rows.

    ``chunk_size`` is the number of rows per tile (default 4096: 64 MiB float32 tiles). Nothing runs
    until the result is computed; then the tiles of all pairs of row blocks run.
    """
    import dask.array as da
    from dask import delayed

    caller = "silhouette_samples"
    rows = row_chunks(X, caller=caller)
    ids = host_labels(labels, X, caller)
    coefficients, uncertain, starts, exact, X = _silhouette_graph(X, ids, metric, chunk_size, caller)
    # lazy: the exact pass reads the same row blocks as the tiles, which the scheduler then keeps until it runs
    flagged = delayed(np.concatenate, pure=True)(uncertain)
    fixed = exact(flagged, X.to_delayed().ravel())
    parts = [delayed(_patched, pure=True)(c, flagged, fixed, s) for c, s in zip(coefficients, starts)]
    return like_rows(da.concatenate([da.from_delayed(p, shape=(e - s,), dtype=np.float64)
                                     for p, s, e in zip(parts, starts, starts[1:])]), rows)


def silhouette_score(X, labels, *, metric="euclidean", sample_size=None, random_state=None, chunk_size=None):
    """:func:`isotropy.silhouette_score` of a dask array (see there); ``sample_size`` draws the same rows."""
    from dask import delayed

    caller = "silhouette_score"
    ids = host_labels(labels, X, caller)
    if sample_size is not None:
        X, ids = sample_rows(X, ids, sample_size, random_state, caller)
    coefficients, uncertain, _, exact, X = _silhouette_graph(X, ids, metric, chunk_size, caller)
    s, flagged = compute(delayed(np.concatenate, pure=True)(coefficients), delayed(np.concatenate, pure=True)(uncertain))
    if flagged.size:  # a second graph: the blocks are read again only where some sample needs it
        (s[flagged],) = compute(exact(flagged, X.to_delayed().ravel()))
    return float(np.mean(s))


# ---------------------------------------------------------------------------------------------- centroids
@aligned_arguments
def _centroid_terms(block, ids, n_clusters, reps):
    """``(sizes, sums, f, top)`` of one block: its cluster sizes, and per cluster the sums (float64) of its rows'
    offsets ``x − r_c`` from their cluster's first row ``r_c`` (``reps``, float64) times ``2**-f``, where the largest
    ``|x − r_c|`` of the block is ``m·2**f`` (0.5 <= m < 1), or ``f = 0`` for offsets at a scale where float64 sums
    are safe (summed as they are), ``f`` None for a block of zero offsets; ``top = max|x|`` of the block, for the whole
    array's unit scale.

    Offsets from a row of the same cluster are exact for near rows (Sterbenz) and 0 for repeated ones, so the sums
    carry rounding relative to the clusters' spread, not to the data's offset (as in memory:
    :func:`isotropy.metrics.cluster_indices._cluster_frame`). Each block is brought to its own scale, not to the
    whole array's, so that no task of this pass waits for every block's maximum (the blocks stream through it, one
    or a few held at a time); :func:`_merge_scaled` brings the sums to a common power of two, exactly, and the
    client to the whole array's unit scale.
    """
    block = np.asarray(block)
    step = max(1, _TERM_ELEMENTS // max(1, block.shape[1]))
    if block.shape[0] <= step:
        return _centroid_terms_of_rows(block, ids, n_clusters, reps)
    terms = None
    for s in range(0, block.shape[0], step):  # a few MiB of float64 at a time: a chunk's temporaries stay small
        part = _centroid_terms_of_rows(block[s:s + step], ids[s:s + step], n_clusters, reps)
        terms = part if terms is None else _merge_scaled(terms, part)
    return terms


# Elements of a block's rows turned to float64 offsets at a time (_centroid_terms): each temporary 8 MiB.
_TERM_ELEMENTS = 2**20


def _centroid_terms_of_rows(block, ids, n_clusters, reps):
    """:func:`_centroid_terms` of a few rows, at once."""
    from isotropy._utils.magnitude import safe_exponent_range

    B = np.asarray(block, dtype=np.float64)
    top = max(-float(B.min()), float(B.max())) if B.size else 0.0  # no |B| temporary
    R = reps[ids]
    g = 4 if max(top, float(np.abs(R).max()) if R.size else 0.0) >= 2.0 ** 1020 else 0  # x − r could overflow there
    D = np.ldexp(B, -g) - np.ldexp(R, -g) if g else B - R
    spread = float(np.abs(D).max()) if D.size else 0.0
    f = math.frexp(spread)[1] + g if spread > 0 else None
    sums = np.zeros((n_clusters, B.shape[1]))
    if f is not None and not g and abs(f) <= safe_exponent_range(D):
        f = 0  # float64 sums of such values neither overflow nor underflow: summed as they are, no scaled copy
    np.add.at(sums, ids, D if not f else np.ldexp(D, g - f))
    return np.bincount(ids, minlength=n_clusters).astype(np.float64), sums, f, top


@aligned_arguments
def _merge_scaled(a, b):
    """Two :func:`_centroid_terms` merged at the larger of their powers of two (exact, but for sums far below it)."""
    if a[2] is None or b[2] is None:
        return a[0] + b[0], a[1] + b[1], a[2] if b[2] is None else b[2], max(a[3], b[3])
    f = max(a[2], b[2])
    return a[0] + b[0], _times(a[1], a[2] - f) + _times(b[1], b[2] - f), f, max(a[3], b[3])


@aligned_arguments
def _times(sums, shift):
    return np.ldexp(sums, shift) if shift else sums


@aligned_arguments
def _merge_pairs(a, b):
    return a[0] + b[0], a[1] + b[1]


@aligned_arguments
def _spread_terms(block, ids, reps, shift, n_clusters, exponent):
    """Σ‖x − μ_c‖² over the block, and per cluster Σ‖x − μ_c‖ (at unit scale), with ``x − μ_c`` taken as
    ``(x − r_c) − (μ_c − r_c)``: ``reps`` the clusters' first rows, ``shift`` their centroids' offsets from them."""
    block = np.asarray(block)
    sq = np.empty(block.shape[0])
    step = max(1, _TERM_ELEMENTS // max(1, block.shape[1]))
    for s in range(0, block.shape[0], step):  # a few MiB of float64 temporaries at a time, each row as at once
        B = np.asarray(at_unit_scale(block[s:s + step], exponent), dtype=np.float64)
        part = ids[s:s + step]
        sq[s:s + step] = (((B - reps[part]) - shift[part]) ** 2).sum(axis=1)
    return sq.sum(), np.bincount(ids, weights=np.sqrt(sq), minlength=n_clusters)


def _cluster_statistics(X, labels, caller):
    """Sizes, centroids and overall mean (both relative to the first row of cluster 0), within-cluster
    Σ‖x − μ_c‖² and per-cluster mean ‖x − μ_c‖, at unit scale.

    The unit scale's exponent comes from the first pass's block maxima (it streams: see :func:`_centroid_terms`);
    the clusters' first rows are read before it (a computation that reads the chunks holding them: all of them
    when most rows are clusters of their own).
    """
    from dask import delayed

    from isotropy._kernels.silhouette import _check_n_clusters
    from isotropy._utils.magnitude import times_power_of_two, unit_exponent
    from isotropy._utils.validation import refuse_subnormal_as_given

    ids = host_labels(labels, X, caller)
    n_clusters = _check_n_clusters(ids, X.shape[0], caller)
    given = X.dtype
    X = check_dask_X(X, caller=caller)
    first = np.unique(ids, return_index=True)[1]  # each cluster's first row, clusters 0..k-1
    order = np.argsort(first)
    (picked,) = compute(X[first[order]])
    reps = np.empty((n_clusters, X.shape[1]))
    reps[order] = np.asarray(picked, dtype=np.float64)
    blocks = finite_blocks(X, caller)
    starts = row_starts(X)
    terms = [delayed(_centroid_terms, pure=True)(b, ids[s:e], n_clusters, reps)
             for b, s, e in zip(blocks, starts, starts[1:])]
    ((counts, sums, f, top),) = compute(tree_reduce(terms, _merge_scaled, name="isotropy-merge-centroids"))
    refuse_subnormal_as_given(given, X, caller=caller, top=top)  # float16 judged in float16, as in memory
    exponent = unit_exponent(top, X.dtype, caller=caller)  # the in-memory functions' (raises as they do)
    shift = (np.ldexp(sums, f - exponent) if f is not None else sums) / counts[:, None]  # μ_c − r_c, at unit scale
    reps = times_power_of_two(reps, -exponent)
    centroids = (reps - reps[0]) + shift
    blocks = finite_blocks(X, caller)  # the exponent is known now: the plain check of the blocks
    spread = [delayed(_spread_terms, pure=True)(b, ids[s:e], reps, shift, n_clusters, exponent)
              for b, s, e in zip(blocks, starts, starts[1:])]
    ((intra, spread_sums),) = compute(tree_reduce(spread, _merge_pairs, name="isotropy-merge-spread"))
    mean = counts @ centroids / X.shape[0]
    return counts, centroids, mean, float(intra), spread_sums / counts


def calinski_harabasz_score(X, labels):
    """:func:`isotropy.calinski_harabasz_score` of a dask array (see there): two passes over the chunks."""
    counts, centroids, mean, intra, _ = _cluster_statistics(X, labels, "calinski_harabasz_score")
    n, k = X.shape[0], counts.size
    extra = float(np.sum(counts * np.sum((centroids - mean) ** 2, axis=1)))
    if intra == 0.0:  # scikit-learn's convention, said as in memory
        apart = "" if extra == 0.0 else ", apart from each other"
        _warn_convention("calinski_harabasz_score", f"every cluster is one point repeated{apart} (no spread within "
                                                    f"clusters)", 1.0)
        return 1.0
    return extra * (n - k) / (intra * (k - 1.0))


def davies_bouldin_score(X, labels):
    """:func:`isotropy.davies_bouldin_score` of a dask array (see there): two passes over the chunks."""
    from isotropy._utils.backend import get_namespace

    _, centroids, _, _, spread = _cluster_statistics(X, labels, "davies_bouldin_score")
    xp = get_namespace(centroids)
    # the in-memory kernel on the gathered centroids: a k x k Gram a block of rows at a time (the k x k x d
    # differences this replaced held 3.7 GB for 21,622 clusters), the worst partners on exact differences
    if _certainly_degenerate(centroids, spread, xp):  # before the pairs: each would be a candidate
        _warn_if_coincident(centroids, spread, xp)  # scikit-learn's convention, said as in memory
        return 0.0
    partner, largest = _worst_partners(centroids, spread, xp)
    ref = max(float(np.max(np.abs(spread))), largest)  # relative, as in memory
    if np.all(np.abs(spread) <= 1e-8 * ref) or largest <= 1e-8 * ref:
        if largest <= 1e-8 * ref:
            _warn_davies_bouldin()
        return 0.0
    return float(np.mean(_pair_ratios(centroids, spread, np.arange(centroids.shape[0]), partner, xp)))


# ---------------------------------------------------------------------------------------------- Dunn
# Bytes of the float64 operands (U and W of two pieces of rows) and of the product distances (and their masked
# copies) of one pair of row pieces inside a Dunn tile. A tile works through its two blocks a piece pair at a time,
# so that what a task holds beyond its two blocks as stored is bounded whatever the chunks' width and height: the
# float64 operands of whole blocks, made in a task of their own and held between tasks (32 MiB per 500 x 4096
# float32 block, each worker holding several), killed workers of 256 MiB on 3,000 x 4,096 float32 rows in chunks of
# 500 that the silhouette's tiles fit (a user trial).
_DUNN_PIECE_BYTES = 32 * 2**20


def _dunn_piece_rows(n_features, budget):
    """Rows ``r`` of the pieces of block Q (those of block P: ``2 r``) so that a piece pair's float64 operands (U of
    P's piece: 8·2r·d bytes; U of Q's piece with the rows as stored, and a float32 copy of them at the metric's scale
    where rows are rescaled: under 16 r·d) and its 2r x r product distances (with their temporaries, a masked copy and
    the masks: under 4·2r² float64) stay within ``budget`` bytes: the largest r with 40 r·d + 64 r² <= budget (1 at
    least). P's pieces are the larger: each is made once, Q's once per piece of P. Not counted: the exact
    recomputation of the candidate pairs (:func:`isotropy._kernels.clusters._extreme_pair`), which takes rows in steps
    of its own fixed size; on data with many tied distances (one-hot rows) that can add tens of MiB."""
    a = 40 * max(1, n_features)
    return max(1, (math.isqrt(a * a + 256 * budget) - a) // 128)


@aligned_arguments
def _dunn_block(block, metric, mean, exponent):
    """Float64 operands U (centred) and q of rows of a block (at unit scale), d(x_i, x_j) = q_i + q_j − s·u_i·u_j, and
    the rows W at the metric's scale in their dtype, whose differences in float64 give the exact distances
    (:func:`isotropy._kernels.clusters._extreme_pair`, ``work=float64``: no float64 copy of them is held). Each row's
    values are those of the row alone (elementwise and per-row operations): the same for any piece of rows."""
    W = np.asarray(at_metric_scale(block, exponent, metric))
    U = np.array(W, dtype=np.float64)  # one float64 array, made U in place (the same bits as new arrays)
    zero = 0.0
    if metric == "cosine":
        norms = np.sqrt(np.einsum("ij,ij->i", U, U))
        U /= np.where(norms > 0, norms, 1.0)[:, None]
        zero = (norms == 0).astype(np.float64)
    U -= mean
    q = np.einsum("ij,ij->i", U, U)
    return U, q if metric == "euclidean" else (q + zero) / 2.0, W


@aligned_arguments
def _dunn_tile(block_p, block_q, ids_p, ids_q, start_p, start_q, metric, mean, exponent, budget=None):
    """((d, i, j) of the closest pair in different clusters, (−d, i, j) of the farthest within one), by exact
    distances (in the units of the product distances: squared euclidean, or 1 − cos), as the in-memory kernel.

    ``block_q`` None: a diagonal tile (block P with itself). The blocks come as stored; their float64 operands
    (:func:`_dunn_block`) are made here a piece of rows at a time (:func:`_dunn_piece_rows` of ``budget`` bytes), and
    the pairs of pieces on and above the diagonal are searched in turn, the best pairs carried from one to the next,
    as the in-memory kernel carries them over its blocks. ``budget`` None: :data:`_DUNN_PIECE_BYTES`.
    """
    from isotropy._kernels.clusters import _dunn_slack, _extreme_pair

    diagonal = block_q is None
    block_p = np.asarray(block_p)
    block_q = block_p if diagonal else np.asarray(block_q)
    n_p, n_q, d = block_p.shape[0], block_q.shape[0], block_p.shape[1]
    r = _dunn_piece_rows(d, _DUNN_PIECE_BYTES if budget is None else budget)
    s = 2.0 if metric == "euclidean" else 1.0
    inf = float("inf")
    near, far = (inf, (start_p, start_q)), (-inf, (start_p, start_q))
    for i0 in range(0, n_p, 2 * r):
        i1 = min(n_p, i0 + 2 * r)
        Ui, qi, Wi = _dunn_block(block_p[i0:i1], metric, mean, exponent)
        for j0 in range(i0 if diagonal else 0, n_q, r):  # diagonal: the pairs on and above P's piece
            j1 = min(n_q, j0 + r)
            Uj, qj, Wj = _dunn_block(block_q[j0:j1], metric, mean, exponent)
            D = qi[:, None] + qj[None, :] - s * (Ui @ Uj.T)
            same = ids_p[i0:i1, None] == ids_q[None, j0:j1]
            # a sample's pair with itself is no pair: a zero row reads 1 from itself (cosine), and was chosen as the
            # diameter
            pair = same & (np.arange(i0, i1)[:, None] != np.arange(j0, j1)[None, :]) if diagonal and j0 < i1 else same
            slack = _dunn_slack(qi, qj, metric, d, np)
            at = (start_p + i0, start_q + j0)
            near = _extreme_pair(np.where(same, inf, D), slack, near, Wi, Wj, at, metric, np, farthest=False,
                                 work=np.float64)
            far = _extreme_pair(np.where(pair, D, -inf), slack, far, Wi, Wj, at, metric, np, farthest=True,
                                work=np.float64)
            del D, same, pair, Uj, Wj  # before the next piece is made: one piece of Q alive at a time
    return (near[0], *near[1]), (-far[0], *far[1])


@aligned_arguments
def _best_pairs(a, b):
    return min(a[0], b[0]), min(a[1], b[1])


def dunn_index(X, labels, *, metric="euclidean", chunk_size=None):
    """:func:`isotropy.dunn_index` of a dask array (see there): extreme pairs found tile by tile."""
    from dask import delayed

    from isotropy._kernels.clusters import _check_dunn_defined, _pair_distance
    from isotropy._kernels.silhouette import _check_n_clusters
    from isotropy._utils.validation import check_option

    caller = "dunn_index"
    check_option(metric, "metric", _METRICS, caller=caller)
    ids = host_labels(labels, X, caller)
    _check_n_clusters(ids, X.shape[0], caller)
    given = X.dtype
    X = check_dask_X(X, caller=caller, rows=check_tile_rows(chunk_size, caller, X.shape[-1]))
    blocks, exponent = unit_blocks(X, caller)
    exponent = exponent_as_given(exponent, blocks, given, X.dtype, caller)  # float16 judged in float16, as in memory
    starts = row_starts(X)
    mean = _centre(X, blocks, metric, exponent)
    tile = delayed(_dunn_tile, pure=True)  # the blocks as stored: each tile makes its operands piece by piece
    tiles = [tile(blocks[i], None if i == j else blocks[j], ids[starts[i]:starts[i + 1]],
                  ids[starts[j]:starts[j + 1]], starts[i], starts[j], metric, mean, exponent)
             for i in range(len(blocks)) for j in range(i, len(blocks))]
    (inter, intra), exponent = compute(tree_reduce(tiles, _best_pairs, name="isotropy-merge-extreme-pairs"), exponent)
    rows = sorted({inter[1], inter[2], intra[1], intra[2]})
    (Xs,) = compute(X[rows])
    Xs = np.asarray(at_metric_scale(Xs, exponent, metric), dtype=np.float64)
    where = {row: k for k, row in enumerate(rows)}
    separation = _pair_distance(Xs, where[inter[1]], where[inter[2]], metric, np)
    diameter = _pair_distance(Xs, where[intra[1]], where[intra[2]], metric, np)
    _check_dunn_defined(float(separation), float(diameter), X.shape[0], metric)  # 0/0: refused as in memory
    if float(diameter) == 0.0:
        return float("inf")
    return float(separation / diameter)
