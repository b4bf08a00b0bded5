"""Compiled loops of the exact neighbour search (numba, the ``fast`` extra): imported only by :func:`isotropy._kernels.neighbors.compiled_kernels`.

Loops that numpy runs as several passes over memory: the scan of a score block against the
thresholds of its rows and of its columns (one pass for both sides), the appending of the entries
found to each point's slots with their compaction to its best ``m`` (the slots of
:class:`isotropy._kernels.neighbors._Best`), the exact squared distances of gathered pairs (the
gather, the differences and the sum of squares in one pass), a cache-friendly order of the rows
for them, and the operand panels of the score blocks (the centred rows and their two norm columns
in one pass). They run without the GIL, on the worker threads of
:func:`isotropy._kernels.silhouette._run_tasks`, and compute what the numpy loops of
:mod:`isotropy._kernels.neighbors` compute: the same candidate sets, and squared distances that
differ from numpy's only in the order of the float64 sum (both within the bound the certificate
allows for, ``(d + 4)·ε`` relative)."""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

_OPTIONS = {"nogil": True, "cache": True, "boundscheck": False}


@intrinsic
def _prefetch(typingctx, array, row, line):
    """Ask the CPU to bring cache line ``line`` (64 bytes) of row ``row`` of a C-ordered 2-d ``array`` into
    its caches (LLVM's ``llvm.prefetch``: a hint, for reading, kept in every level; no effect on values)."""
    def codegen(context, builder, signature, args):
        array_type = signature.args[0]
        data = context.make_array(array_type)(context, builder, args[0])
        row_at, line_at = (context.cast(builder, value, kind, types.intp)  # any integer type, as intp
                           for value, kind in zip(args[1:], signature.args[1:]))
        start = cgutils.get_item_pointer(context, builder, array_type, data,
                                         [row_at, context.get_constant(types.intp, 0)], wraparound=False)
        byte = ir.IntType(8).as_pointer()
        address = builder.gep(builder.bitcast(start, byte), [builder.mul(line_at, context.get_constant(types.intp, 64))])
        i32 = ir.IntType(32)
        hint = builder.module.declare_intrinsic("llvm.prefetch", [byte],
                                                fnty=ir.FunctionType(ir.VoidType(), [byte, i32, i32, i32]))
        builder.call(hint, [address, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.void(array, row, line), codegen


# Cache lines of each candidate's row that the exact distances ask the caches for, a group of four candidates ahead
# (_group_distances; the hardware's own prefetcher follows a row once it is being read, its first lines are what a
# gather waits for). With one candidate at a time, 2 ahead and 8 lines were 24 % faster than none on 20,000 x 384
# float32 at k = 100 (in the order of locality_order), 1-3 ahead and 6-12 lines within a few % of it, whole 1.5 KB
# rows slower; with groups of four, the next group's rows were faster than the next one or two candidates'.
_LINES = 8


@numba.njit(**_OPTIONS)
def _prefetch_lines(X):
    """Cache lines of a row of ``X`` that :func:`_prefetch` asks for (none unless its rows are contiguous)."""
    return min(_LINES, (X.shape[1] * X.itemsize + 63) // 64) if X.strides[1] == X.itemsize else 0


@numba.njit(**_OPTIONS)
def _query(X, scale, i, scaled, query):
    """``query = X[i]·s_i`` in float64."""
    s_i = scale[i] if scaled else 1.0
    for t in range(X.shape[1]):
        query[t] = X[i, t] * s_i if scaled else np.float64(X[i, t])


@numba.njit(fastmath={"reassoc"}, **_OPTIONS)
def _squared4(X, scale, c0, c1, c2, c3, scaled, query):
    """``Σ_t (X[c, t]·s_c − query[t])²`` in float64 for the four candidates ``c0``-``c3`` (``s_c = scale[c]`` if
    ``scaled``, else 1), in one pass over ``t``.

    Four independent sums that share each ``query[t]``: the exact distances of ``kneighbors`` at k = 100 on
    20,000 × 384 float32 rows took 0.17 of the half-GEMM floor against 0.21 one candidate at a time
    (``benchmarks/bench_neighbors_floor.py --stages --compare``, docs/benchmarks.md). Each candidate's
    sum is the same loop, which the compiler vectorises the same way whatever its place among the four:
    a distance has the same bits in any group (a last group of fewer repeats its last candidate), so a
    tile of the dask search and the in-memory search give the same bits (``tests/test_neighbors_exact.py``
    checks every place).
    """
    a0 = a1 = a2 = a3 = 0.0
    if scaled:
        s0, s1, s2, s3 = scale[c0], scale[c1], scale[c2], scale[c3]
        for t in range(X.shape[1]):
            q = query[t]
            e0 = X[c0, t] * s0 - q
            e1 = X[c1, t] * s1 - q
            e2 = X[c2, t] * s2 - q
            e3 = X[c3, t] * s3 - q
            a0 += e0 * e0
            a1 += e1 * e1
            a2 += e2 * e2
            a3 += e3 * e3
    else:
        for t in range(X.shape[1]):
            q = query[t]
            e0 = np.float64(X[c0, t]) - q
            e1 = np.float64(X[c1, t]) - q
            e2 = np.float64(X[c2, t]) - q
            e3 = np.float64(X[c3, t]) - q
            a0 += e0 * e0
            a1 += e1 * e1
            a2 += e2 * e2
            a3 += e3 * e3
    return a0, a1, a2, a3


@numba.njit(**_OPTIONS)
def _group_distances(X, scale, cand, at, count, scaled, query, out, lines):
    """``out[at[u]] = `` the squared distance of candidate ``cand[at[u]]`` for ``u < count``, four at a time
    (:func:`_squared4`; a last group of fewer repeats its last candidate), each group's rows asked for
    (:func:`_prefetch`) while the group before is summed."""
    for u in range(min(4, count)):
        for line in range(lines):
            _prefetch(X, cand[at[u]], line)
    for g in range(0, count, 4):
        last = min(count, g + 4) - 1
        for u in range(g + 4, min(count, g + 8)):
            for line in range(lines):
                _prefetch(X, cand[at[u]], line)
        j0, j1, j2, j3 = at[g], at[min(g + 1, last)], at[min(g + 2, last)], at[min(g + 3, last)]
        v0, v1, v2, v3 = _squared4(X, scale, cand[j0], cand[j1], cand[j2], cand[j3], scaled, query)
        out[j0] = v0
        out[j1] = v1
        out[j2] = v2
        out[j3] = v3


@numba.njit(**_OPTIONS)
def sq_distances(X, scale, rows, cand, out):
    """``out[r, j] = Σ_t (X[cand[r, j], t]·s_c − X[rows[r], t]·s_i)²`` in float64 (``s``: ``scale``, empty for 1).

    Four candidates of a row at a time (:func:`_group_distances`).
    """
    n_rows, m = cand.shape
    lines = _prefetch_lines(X)
    query = np.empty(X.shape[1])
    scaled = scale.size > 0
    at = np.arange(m)
    for r in range(n_rows):
        _query(X, scale, rows[r], scaled, query)
        _group_distances(X, scale, cand[r], at, m, scaled, query, out[r], lines)


@numba.njit(**_OPTIONS)
def refine_rows(X, scale, rows, best_v, best_i, order, k, q, gamma, floor, rounding, dist, ind):
    """The refinement of :func:`isotropy._kernels.neighbors._refine_chunk` in one loop per row.

    Row ``r``'s candidates ``best_i[r, order[r, j]]`` (``order``: best score first) get their exact
    squared distances (:func:`_group_distances`) for ``j < k``; those of an unfilled one (score ``−inf``)
    are ``inf``. Their largest, times ``rounding`` plus ``floor``, bounds the ``k``-th exact distance;
    a further filled candidate is recomputed unless its score's rounding bound
    ``−2v − 2γ(q_i + q_c) − floor`` exceeds it (``inf`` otherwise). The first ``k`` by (distance,
    index) go to ``dist`` and ``ind`` (:func:`_sort_row`). The same arithmetic, in the same order,
    as the numpy loops of ``_refine_chunk``.
    """
    n_rows, m = best_v.shape
    lines = _prefetch_lines(X)
    query = np.empty(X.shape[1])
    sq = np.empty(m)
    cand = np.empty(m, dtype=best_i.dtype)
    vals = np.empty(m)
    idx = np.empty(m, dtype=best_i.dtype)
    at = np.arange(m)
    need = np.empty(m, dtype=np.intp)
    scaled = scale.size > 0
    for r in range(n_rows):
        i = rows[r]
        _query(X, scale, i, scaled, query)
        for j in range(m):
            cand[j] = best_i[r, order[r, j]]
        _group_distances(X, scale, cand, at, k, scaled, query, sq, lines)
        largest = 0.0
        for j in range(k):
            if best_v[r, order[r, j]] == -np.inf:
                sq[j] = np.inf
            largest = max(largest, sq[j])
        bound = largest * rounding + floor
        count = 0
        for j in range(k, m):
            v = np.float64(best_v[r, order[r, j]])
            sq[j] = np.inf
            if v != -np.inf:
                low = -2.0 * v - 2.0 * gamma * (q[i] + q[cand[j]]) - floor
                if not low > bound:
                    need[count] = j
                    count += 1
        _group_distances(X, scale, cand, need, count, scaled, query, sq, lines)
        _sort_row(sq, cand, vals, idx)
        for j in range(k):
            dist[r, j] = vals[j]
            ind[r, j] = idx[j]


@numba.njit(**_OPTIONS)
def _panel_row(X, i, centre, half, left, out, r):
    """Row ``r`` of an operand panel from the point ``i`` (see :func:`panel`)."""
    d = X.shape[1]
    for t in range(d):
        out[r, t] = X[i, t] - centre[t]
    if left:
        out[r, d] = half[i]
        out[r, d + 1] = 1.0
    else:
        out[r, d] = -1.0
        out[r, d + 1] = -half[i]


@numba.njit(**_OPTIONS)
def panel(X, start, stop, centre, half, left, out):
    """The operand rows of the points ``start:stop`` in ``out`` (float32, ``(stop − start) × (d + 2)``), one pass:
    ``[X[i] − centre, half[i], 1]`` (``left``) or ``[X[i] − centre, −1, −half[i]]`` (right), as
    :class:`isotropy._kernels.neighbors._Operands` builds them from float32 rows and a float32 centre (numpy's
    float32 subtraction, bit for bit), without a numpy call per column."""
    for r in range(stop - start):
        _panel_row(X, start + r, centre, half, left, out, r)


@numba.njit(**_OPTIONS)
def gathered_panel(X, rows, centre, half, left, out):
    """:func:`panel` of the points ``rows`` (indices), gathered in the same pass (numpy's ``X[rows]`` first copies
    the rows)."""
    for r in range(rows.size):
        _panel_row(X, rows[r], centre, half, left, out, r)


# The position of a word's lowest set bit: _DE_BRUIJN_POSITION[((w & -w) * _DE_BRUIJN) >> 58] (a de Bruijn sequence:
# each 6-bit window of it is distinct, so the product's top 6 bits name the bit).
_DE_BRUIJN = np.uint64(0x03F79D71B4CB0A89)
_DE_BRUIJN_POSITION = np.zeros(64, dtype=np.int64)
for _bit in range(64):
    _DE_BRUIJN_POSITION[((1 << _bit) * 0x03F79D71B4CB0A89 % 2**64) >> 58] = _bit


@numba.njit(**_OPTIONS)
def scan(S, bits, row_thr, col_thr, offsets, start, both, row_found, col_found, mask):
    """Entries of ``S`` (float32) reaching their row's threshold (and, if ``both``, their column's), from row ``start`` on.

    Appends ``(target, key)`` to ``row_found`` and ``col_found`` (``capacity × 2``), ``key`` as
    :func:`isotropy._kernels.neighbors._keys` builds it from the score (``bits``: ``S`` viewed as
    int32) and the other point: ``(a + i, key(b + j))`` for the rows and ``(c + j, key(e + i))``
    for the columns, with ``offsets = (a, b, c, e)`` (targets numbered as their side numbers them).
    Each row is first compared whole into ``mask`` (uint8, a multiple of 8 bytes: a loop that
    vectorises; bit 0 of a byte for its row, bit 1 for its column), then read 8 entries at a time
    as one uint64, and only the entries whose byte is set are visited, the lowest first (found by
    its bit, without a branch per entry); each is written to both buffers and counted where kept.
    Stops before a row whose entries might not fit and returns ``(next row, row count, column count)``.

    The thresholds may be the sides' live ``tau`` (:meth:`isotropy._kernels.neighbors._Best.current`), which
    other threads raise while this one reads them: any value read is valid (``tau`` only rises, and an entry
    below a point's ``tau`` at any moment is not among its best ``m``). Never ``−inf`` (``current`` only once
    every point has a threshold, ``thresholds`` otherwise), so the diagonal's ``−inf`` never enters.
    """
    n_rows, n_cols = S.shape
    capacity = row_found.shape[0]
    words = mask.view(np.uint64)
    one, byte = np.uint64(1), np.uint64(0xFF)
    n_words = (n_cols + 7) // 8
    n_row = n_col = 0
    for i in range(start, n_rows):
        if n_row + n_cols > capacity or n_col + n_cols > capacity:
            return i, n_row, n_col
        threshold = row_thr[i]
        row = S[i]
        if both:
            for j in range(n_cols):
                mask[j] = (row[j] >= threshold) | ((row[j] >= col_thr[j]) << 1)
        else:
            for j in range(n_cols):
                mask[j] = row[j] >= threshold
        for j in range(n_cols, 8 * n_words):  # the last word's bytes past the row
            mask[j] = 0
        for w in range(n_words):
            word = words[w]
            while word != 0:
                low = word & (~word + one)
                position = _DE_BRUIJN_POSITION[(low * _DE_BRUIJN) >> np.uint64(58)] >> 3
                word &= ~(byte << np.uint64(8 * position))
                j = 8 * w + position
                kept = mask[j]
                b = np.int64(bits[i, j]) if row[j] != 0 else np.int64(0)  # -0 as +0
                order = (b ^ ((b >> 31) & 0x7FFFFFFF)) << 32
                row_found[n_row, 0] = offsets[0] + i
                row_found[n_row, 1] = order | (0xFFFFFFFF - (offsets[1] + j))
                n_row += kept & 1
                col_found[n_col, 0] = offsets[2] + j
                col_found[n_col, 1] = order | (0xFFFFFFFF - (offsets[3] + i))
                n_col += kept >> 1
    return n_rows, n_row, n_col


@numba.njit(**_OPTIONS)
def _median3(a, x, y, z):
    """The position among ``x``, ``y``, ``z`` of the median of their values in ``a``."""
    if a[x] < a[y]:
        if a[y] < a[z]:
            return y
        return z if a[x] < a[z] else x
    if a[x] < a[z]:
        return x
    return z if a[y] < a[z] else y


# Length below which the selection runs the branching partition (Hoare's), faster on a few values.
_SMALL = 32


@numba.njit(**_OPTIONS)
def _select(a, lo, hi, kth):
    """Reorder ``a[lo:hi]`` in place so that ``a[kth]`` is the value sorted order puts there, smaller ones
    before it and larger ones after (quickselect).

    Long ranges are partitioned without branches on the values (Lomuto's scheme with the swap
    always done and the boundary advanced by the comparison: the slots' keys arrive in no
    predictable order, and a mispredicted branch per value cost more than the partition itself),
    around the median of three medians of three; short ones, and ranges that a run of poor pivots
    leaves long (many equal values), by Hoare's partition with median-of-three pivots.
    """
    rounds = 0
    while hi - lo > _SMALL and rounds < 64:
        rounds += 1
        n = hi - lo
        q = n >> 2
        p = _median3(a, _median3(a, lo, lo + 1, lo + 2), _median3(a, lo + q, lo + 2 * q, lo + 3 * q),
                     _median3(a, hi - 3, hi - 2, hi - 1))
        last = hi - 1
        a[p], a[last] = a[last], a[p]
        pivot = a[last]
        store = lo
        for i in range(lo, last):  # a[lo:store] < pivot <= a[store:i]
            x = a[i]
            a[i] = a[store]
            a[store] = x
            store += x < pivot
        a[store], a[last] = a[last], a[store]
        if kth == store:
            return
        if kth < store:
            hi = store
        else:
            lo = store + 1
    hi -= 1
    while hi > lo:
        mid = (lo + hi) >> 1
        if a[mid] < a[lo]:
            a[mid], a[lo] = a[lo], a[mid]
        if a[hi] < a[lo]:
            a[hi], a[lo] = a[lo], a[hi]
        if a[hi] < a[mid]:
            a[hi], a[mid] = a[mid], a[hi]
        pivot = a[mid]
        i, j = lo, hi
        while i <= j:
            while a[i] < pivot:
                i += 1
            while a[j] > pivot:
                j -= 1
            if i <= j:
                a[i], a[j] = a[j], a[i]
                i += 1
                j -= 1
        if kth <= j:
            hi = j
        elif kth >= i:
            lo = i
        else:
            return


@numba.njit(**_OPTIONS)
def compact(keys, fill, tau_bits, t, m, empty):
    """Keep the best ``m`` keys of point ``t``'s slots (one selection; ``empty`` in the others) and set its threshold."""
    row = keys[t]
    f = fill[t]
    _select(row, 0, f, f - m)  # the best m at f - m:f
    for u in range(m):  # forward: a source never precedes its destination
        row[u] = row[f - m + u]
    row[m:] = empty
    fill[t] = m
    o = np.int32(row[0] >> 32)  # the m-th best (the smallest of the best m: row[f - m] before the copy)
    tau_bits[t] = o ^ ((o >> 31) & 0x7FFFFFFF)


@numba.njit(**_OPTIONS)
def push(keys, fill, tau_bits, m, found, count, empty):
    """Append ``count`` entries ``(target, key)`` to their points' slots (:class:`isotropy._kernels.neighbors._Best`).

    A point whose slots are full is compacted to its best ``m`` first, and a point that reaches
    ``m`` entries for the first time is compacted at once (it has a threshold from then on): the
    slots end with the best ``m`` of everything pushed, whatever the order it arrives in.
    """
    capacity = keys.shape[1]
    no_threshold = np.int32(-8388608)  # the bits of float32 -inf
    for e in range(count):
        t = found[e, 0]
        key = found[e, 1]
        o = tau_bits[t]  # the point's threshold now (it may have risen since the entry was found): below it, dropped
        if (key >> 32) < (o ^ ((o >> 31) & 0x7FFFFFFF)):
            continue
        if fill[t] == capacity:
            compact(keys, fill, tau_bits, t, m, empty)
        f = fill[t]
        keys[t, f] = key
        fill[t] = f + 1
        if f + 1 == m and tau_bits[t] == no_threshold:
            compact(keys, fill, tau_bits, t, m, empty)


@numba.njit(**_OPTIONS)
def locality_order(cand):
    """The points ``0..n−1`` in breadth-first order of the graph ``i → cand[i, j]`` (from point 0, then
    the first point not reached yet): a point comes soon after the points it is a candidate of."""
    n = cand.shape[0]
    seen = np.zeros(n, dtype=np.bool_)
    order = np.empty(n, dtype=np.int64)
    head = tail = 0
    for first in range(n):
        if seen[first]:
            continue
        seen[first] = True
        order[tail] = first
        tail += 1
        while head < tail:
            v = order[head]
            head += 1
            for j in range(cand.shape[1]):
                u = cand[v, j]
                if not seen[u]:
                    seen[u] = True
                    order[tail] = u
                    tail += 1
    return order


@numba.njit(**_OPTIONS)
def _sort_row(sq, cand, vals, idx):
    """``(vals, idx)``: the row ``(sq, cand)`` sorted by (distance, index), by insertion (see :func:`sort_rows`)."""
    for j in range(sq.size):
        v, c = sq[j], cand[j]
        t = j - 1
        while t >= 0 and (vals[t] > v or (vals[t] == v and idx[t] > c)):
            vals[t + 1] = vals[t]
            idx[t + 1] = idx[t]
            t -= 1
        vals[t + 1] = v
        idx[t + 1] = c


@numba.njit(**_OPTIONS)
def sort_rows(sq, cand, k, out_sq, out_ind):
    """Each row of ``(sq, cand)`` sorted by (distance, index), its first ``k`` into ``out_sq`` and ``out_ind``.

    By insertion: the candidates arrive in the order of their scores, which is their order by
    distance up to rounding, so that a row takes about one comparison per candidate (the caller
    bounds the row length, hence the cost of rows that arrive in another order).
    """
    n_rows, m = sq.shape
    vals = np.empty(m)
    idx = np.empty(m, dtype=cand.dtype)
    for r in range(n_rows):
        _sort_row(sq[r], cand[r], vals, idx)
        for j in range(k):
            out_sq[r, j] = vals[j]
            out_ind[r, j] = idx[j]


@numba.njit(**_OPTIONS)
def finish(keys, fill, m, scores, indices, first, order):
    """The best ``m`` of the slots of points ``first, first + 1, ...`` (:meth:`isotropy._kernels.neighbors._Best.result`):
    scores (float32, through ``scores.view(np.int32)``) and indices; slots past a point's fill hold the unfilled key.

    ``order`` (empty: none): the slots are those of the points in this order, so that slot row ``t`` goes
    to row ``order[first + t]`` and an index ``j`` reads ``order[j]``.
    """
    bits = scores.view(np.int32)
    ordered = order.size > 0
    for t in range(keys.shape[0]):
        row = keys[t]
        f = fill[t]
        start = 0
        if f > m:
            _select(row, 0, f, f - m)
            start = f - m
        at = order[first + t] if ordered else first + t
        for u in range(m):
            key = row[start + u]
            o = np.int32(key >> 32)
            bits[at, u] = o ^ ((o >> 31) & 0x7FFFFFFF)
            j = 0xFFFFFFFF - (key & 0xFFFFFFFF)
            indices[at, u] = order[j] if ordered else j
