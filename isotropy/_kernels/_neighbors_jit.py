"""Compiled loops of the exact neighbour search (numba, the ``fast`` extra): imported only by :func:`isotropy._kernels.neighbors.compiled_kernels`.

Loops that numpy runs as several passes over memory: the scan of a score block against the
thresholds of its rows and of its columns (one pass for both sides), the appending of the entries
found to each point's slots with their compaction to its best ``m`` (the slots of
:class:`isotropy._kernels.neighbors._Best`), the exact squared distances of gathered pairs (the
gather, the differences and the sum of squares in one pass), and a cache-friendly order of the rows
for them. They run without the GIL, on the worker threads of
:func:`isotropy._kernels.silhouette._run_tasks`, and compute what the numpy loops of
:mod:`isotropy._kernels.neighbors` compute: the same candidate sets, and squared distances that
differ from numpy's only in the order of the float64 sum (both within the bound the certificate
allows for, ``(d + 4)·ε`` relative)."""

from __future__ import annotations

import numba
import numpy as np

_OPTIONS = {"nogil": True, "cache": True, "boundscheck": False}


@numba.njit(fastmath={"reassoc"}, **_OPTIONS)
def sq_distances(X, scale, rows, cand, out):
    """``out[r, j] = Σ_t (X[cand[r, j], t]·s_c − X[rows[r], t]·s_i)²`` in float64 (``s``: ``scale``, empty for 1)."""
    n_rows, m = cand.shape
    d = X.shape[1]
    query = np.empty(d)
    scaled = scale.size > 0
    for r in range(n_rows):
        i = rows[r]
        s_i = scale[i] if scaled else 1.0
        for t in range(d):
            query[t] = X[i, t] * s_i if scaled else np.float64(X[i, t])
        for j in range(m):
            c = cand[r, j]
            total = 0.0
            if scaled:
                s_c = scale[c]
                for t in range(d):
                    e = X[c, t] * s_c - query[t]
                    total += e * e
            else:
                for t in range(d):
                    e = np.float64(X[c, t]) - query[t]
                    total += e * e
            out[r, j] = total


@numba.njit(**_OPTIONS)
def scan(S, bits, row_thr, col_thr, offsets, start, both, row_found, col_found, mask):
    """Entries of ``S`` (float32) reaching their row's threshold (and, if ``both``, their column's), from row ``start`` on.

    Appends ``(target, key)`` to ``row_found`` and ``col_found`` (``capacity × 2``), ``key`` as
    :func:`isotropy._kernels.neighbors._keys` builds it from the score (``bits``: ``S`` viewed as
    int32) and the other point: ``(a + i, key(b + j))`` for the rows and ``(c + j, key(e + i))``
    for the columns, with ``offsets = (a, b, c, e)`` (targets numbered as their side numbers them).
    Each row is first compared whole into ``mask`` (uint8, a multiple of 8 bytes: a loop that
    vectorises), then read 8 entries at a time as one uint64, so that only the groups holding an
    entry to keep (few once every point has a threshold) are looked at entry by entry. Stops before
    a row whose entries might not fit and returns ``(next row, row count, column count)``.
    """
    n_rows, n_cols = S.shape
    capacity = row_found.shape[0]
    words = mask.view(np.uint64)
    n_row = n_col = 0
    for i in range(start, n_rows):
        if n_row + n_cols > capacity or n_col + n_cols > capacity:
            return i, n_row, n_col
        threshold = row_thr[i]
        row = S[i]
        if both:
            for j in range(n_cols):
                mask[j] = (row[j] >= threshold) | (row[j] >= col_thr[j])
        else:
            for j in range(n_cols):
                mask[j] = row[j] >= threshold
        for w in range((n_cols + 7) // 8):
            if words[w] == 0:  # (past n_cols: stale bytes, at most a group looked at for nothing)
                continue
            for j in range(8 * w, min(n_cols, 8 * w + 8)):
                if mask[j] == 0:
                    continue
                s = row[j]
                b = np.int64(0) if s == 0 else np.int64(bits[i, j])  # -0 as +0
                order = (b ^ ((b >> 31) & 0x7FFFFFFF)) << 32
                if s >= threshold:
                    row_found[n_row, 0] = offsets[0] + i
                    row_found[n_row, 1] = order | (0xFFFFFFFF - (offsets[1] + j))
                    n_row += 1
                if both and s >= col_thr[j]:
                    col_found[n_col, 0] = offsets[2] + j
                    col_found[n_col, 1] = order | (0xFFFFFFFF - (offsets[3] + i))
                    n_col += 1
    return n_rows, n_row, n_col


@numba.njit(**_OPTIONS)
def _select(a, lo, hi, kth):
    """Reorder ``a[lo:hi]`` in place so that ``a[kth]`` is the value sorted order puts there, smaller ones
    before it and larger ones after (quickselect, median-of-three pivots)."""
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
        if fill[t] == capacity:
            compact(keys, fill, tau_bits, t, m, empty)
        f = fill[t]
        keys[t, f] = found[e, 1]
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
