"""Row statistics of dask arrays for the per-type cosines, the rogue-dimension share and the token norms.

Each row chunk is read once, on the worker that holds it, into a few statistics of its rows: the
per-type sums of its unit rows (or of its rows, for type means), the column sums of its unit rows
and of their squares, or its rows' norms. The statistics are merged by a tree reduction and only
they reach the client (token norms: one float per row). A chunk's bad rows (a NaN or inf, an
all-zero row, a row made only of subnormal numbers) come back as data as well, and the client
refuses them with the message of the in-memory function, naming the row of the whole array: no
task fails on a worker.
"""

from __future__ import annotations

import itertools

import numpy as np

from isotropy._kernels.rows import refuse_rows
from isotropy.distributed._graph import (
    aligned_arguments,
    compute,
    nonfinite_in,
    refuse_nonfinite,
    row_starts,
    tree_reduce,
)

__all__ = ["drawn_rows", "refuse_rows", "row_norms", "type_sums", "unit_gram_frob_sq", "unit_sums"]


# ------------------------------------------------------------------------------------------ shared plumbing
def _unit(B, offset):
    """``(float64 unit rows of B, zero rows, subnormal rows)``, the rows counted from ``offset``: the in-memory scaling."""
    from isotropy._kernels.rows import _unit_rows_block

    U = np.array(B, dtype=np.float64)
    zero, subnormal = [], []
    _unit_rows_block(U, offset, zero, subnormal)
    return U, zero, subnormal


def _bad_rows(part):
    """The zero and subnormal rows the chunks found, in row order."""
    return [np.sort(np.concatenate(part[key])) if part[key] else np.empty(0, dtype=np.intp)
            for key in ("zero", "subnormal")]


@aligned_arguments
def _merge(a, b):
    """Two chunks' statistics: lists joined, sparse group sums united, arrays added; a NaN/inf found wins."""
    if a["bad"] or b["bad"]:
        return {"bad": a["bad"] + b["bad"]}
    out = {}
    for key, value in a.items():
        if isinstance(value, list):
            out[key] = value + b[key]
        elif key == "groups":
            out[key] = _merge_groups(value, b[key])
        else:
            out[key] = value + b[key]
    return out


def _merge_groups(a, b):
    ids = np.union1d(a[0], b[0])
    sums = np.zeros((ids.size, a[1].shape[1]))
    sums[np.searchsorted(ids, a[0])] += a[1]
    sums[np.searchsorted(ids, b[0])] += b[1]
    return ids, sums


def _group_sums(B, ids):
    """``(the ids present, their row sums)`` of the float64 rows ``B``: the in-memory summation, per chunk."""
    if not B.shape[0]:
        return np.empty(0, dtype=np.intp), np.zeros((0, B.shape[1]))
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    return sorted_ids[starts], np.add.reduceat(B[order], starts, axis=0)


def _reduce(X, chunk, per_chunk, name):
    """``chunk(block, start, *args)`` on every row chunk (``per_chunk``: one tuple of args each), tree-merged, computed."""
    from dask import delayed

    task = delayed(chunk, pure=True)
    starts = row_starts(X)
    parts = [task(block, start, *args) for block, start, args in zip(X.to_delayed().ravel(), starts, per_chunk)]
    (merged,) = compute(tree_reduce(parts, _merge, name=name))
    return merged


# --------------------------------------------------------------------------------------- per-type cosines
@aligned_arguments
def _type_chunk(block, start, keep, offset, ids, unit):
    """Group sums of the chunk's rows ``keep`` (all for None), of their unit rows with ``unit``; bad rows as data."""
    B = np.asarray(block)
    bad = nonfinite_in(B, start)
    if bad is not None:
        return {"bad": [bad]}
    B = B if keep is None else B[keep]
    if unit:
        U, zero, subnormal = _unit(B, offset)
        return {"bad": [], "zero": zero, "subnormal": subnormal, "groups": _group_sums(U, ids)}
    return {"bad": [], "groups": _group_sums(np.array(B, dtype=np.float64), ids)}


@aligned_arguments
def _rows_chunk(block, start, local, positions):
    """The chunk's rows ``local`` (those drawn), with their ``positions`` among the drawn rows; a NaN/inf as data."""
    B = np.asarray(block)
    bad = nonfinite_in(B, start)
    if bad is not None:
        return {"bad": [bad]}
    return {"bad": [], "rows": [(positions, B[local])]}


def _split(X, rows, ids=None):
    """Per row chunk: ``(local indices of the sorted global ``rows`` in it, their positions in ``rows``, their ids)``."""
    starts = row_starts(X)
    out = []
    for start, stop in itertools.pairwise(starts):
        lo, hi = np.searchsorted(rows, [start, stop])
        out.append((rows[lo:hi] - start, lo, None if ids is None else ids[lo:hi]))
    return out


def type_sums(X, ids, n_types, *, keep=None, unit=True, caller):
    """``(sums, zero rows, subnormal rows)``: the per-type sums (float64, n_types × n_features) of the unit rows of
    the dask array ``X`` (checked, :func:`isotropy.distributed._graph.check_dask_X`), or of its rows for ``unit=False``.

    ``keep``: the sorted rows to read (all for None), ``ids`` their types; the zero and subnormal rows are counted
    among them, as the in-memory function counts the rows of ``X[keep]``. A NaN/inf anywhere in ``X`` is refused.
    """
    if keep is None:
        per_chunk = [(None, start, ids[start:stop], unit) for start, stop in itertools.pairwise(row_starts(X))]
    else:
        per_chunk = [(*args, unit) for args in _split(X, keep, ids)]
    part = _reduce(X, _type_chunk, per_chunk, "isotropy-merge-type-sums")
    refuse_nonfinite(part["bad"], caller)
    sums = np.zeros((n_types, X.shape[1]))
    sums[part["groups"][0]] = part["groups"][1]
    return (sums, *_bad_rows(part)) if unit else (sums, np.empty(0, dtype=np.intp), np.empty(0, dtype=np.intp))


def drawn_rows(X, rows, *, caller):
    """``X[rows]`` of the dask array ``X`` as a numpy array in X's dtype, each chunk checked for NaN/inf as it is read."""
    order = np.argsort(rows)
    per_chunk = [(local, order[lo:lo + local.size]) for local, lo, _ in _split(X, rows[order])]
    part = _reduce(X, _rows_chunk, per_chunk, "isotropy-merge-drawn-rows")
    refuse_nonfinite(part["bad"], caller)
    V = np.empty((len(rows), X.shape[1]), dtype=X.dtype)
    for positions, values in part["rows"]:
        V[positions] = values
    return V


# ---------------------------------------------------------------------------------- rogue-dimension share
@aligned_arguments
def _unit_sums_chunk(block, start, squares):
    """Σ x̂ (and with ``squares`` Σ x̂²) over the chunk's rows (the in-memory arithmetic), and its bad rows as data."""
    B = np.asarray(block)
    bad = nonfinite_in(B, start)
    if bad is not None:
        return {"bad": [bad]}
    U, zero, subnormal = _unit(B, start)
    return {"bad": [], "zero": zero, "subnormal": subnormal, "sum": U.sum(axis=0),
            "squares": np.multiply(U, U, out=U).sum(axis=0) if squares else 0.0}


@aligned_arguments
def _unit_block(block):
    return _unit(np.asarray(block), 0)[0]  # rows already checked by the first pass


@aligned_arguments
def _unit_gram(block):
    U = _unit_block(block)
    return U.T @ U


@aligned_arguments
def _add(a, b):
    return a + b


@aligned_arguments
def _tile_frob_sq(U, V):
    """‖U Vᵀ‖²_F, twice for two distinct blocks (the tile and its transpose)."""
    if V is None:
        P = U @ U.T
        return float(np.vdot(P, P))
    P = U @ V.T
    return 2.0 * float(np.vdot(P, P))


def unit_gram_frob_sq(X):
    """‖Σ x̂x̂ᵀ‖²_F of the unit rows: the d × d sum of the chunks' Grams, or for n < d the n × n ÛÛᵀ by tiles of
    row blocks (the same Frobenius norm; the side the in-memory function forms)."""
    from dask import delayed

    blocks = list(X.to_delayed().ravel())
    if X.shape[0] >= X.shape[1]:
        (G,) = compute(tree_reduce([delayed(_unit_gram, pure=True)(b) for b in blocks], _add,
                                   name="isotropy-merge-unit-gram"))
        return float(np.vdot(G, G))
    units = [delayed(_unit_block, pure=True)(b) for b in blocks]
    tile = delayed(_tile_frob_sq, pure=True)
    tiles = [tile(units[i], None if i == j else units[j]) for i in range(len(units)) for j in range(i, len(units))]
    (total,) = compute(tree_reduce(tiles, _add, name="isotropy-merge-unit-gram"))
    return float(total)


def unit_sums(X, *, caller, squares=True):
    """``(Σ x̂, Σ x̂², zero rows, subnormal rows)`` over the rows of the checked dask array ``X`` (per dimension; Σ x̂²
    is 0.0 unless ``squares``); a NaN/inf is refused."""
    part = _reduce(X, _unit_sums_chunk, [(squares,)] * len(X.chunks[0]), "isotropy-merge-unit-sums")
    refuse_nonfinite(part["bad"], caller)
    return (part["sum"], part["squares"], *_bad_rows(part))


# ------------------------------------------------------------------------------------------------ token norms
@aligned_arguments
def _top_chunk(block, start):
    """``(first NaN/inf or None, max|x|)`` of a chunk."""
    B = np.asarray(block)
    bad = nonfinite_in(B, start)
    return bad, (0.0 if bad is not None or not B.size else float(np.abs(B).max()))


def _scale(*parts):
    """max|x| of the whole array; None when a chunk holds a NaN/inf (no norm is computed then)."""
    if any(bad is not None for bad, _ in parts):
        return None
    return max((top for _, top in parts), default=0.0)


@aligned_arguments
def _norms_chunk(block, scale):
    """The chunk's row norms of ``X / max|X|`` (the in-memory arithmetic); None after a NaN/inf."""
    if scale is None:
        return None
    B = np.asarray(block, dtype=np.float64)
    unit = B / scale if scale > 0 else B
    return np.sqrt(np.einsum("ij,ij->i", unit, unit))


def row_norms(X, *, caller):
    """``(‖x‖ / max|X| for every row, max|X|)`` of the checked dask array ``X`` (the in-memory arithmetic): the chunks'
    largest ``|x|``, then their rows' norms at the scale of the whole array; a NaN/inf is refused.

    Two passes over the chunks: in one graph, every chunk's norms waited for the scale, which needs every chunk, so the
    scheduler held all the chunks in memory at once before the first norm (a review of f9c5604)."""
    from dask import delayed

    blocks = list(X.to_delayed().ravel())
    tops = compute(*[delayed(_top_chunk, pure=True)(b, s) for b, s in zip(blocks, row_starts(X))])
    refuse_nonfinite([bad for bad, _ in tops if bad is not None], caller)
    scale = _scale(*tops)
    norms = compute(*[delayed(_norms_chunk, pure=True)(b, scale) for b in blocks])
    return np.concatenate(norms), scale
