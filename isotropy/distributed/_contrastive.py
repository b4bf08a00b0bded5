"""Uniformity (Wang & Isola 2020) of a dask array, exact over all pairs, as tiles of row blocks.

Tile (I, J ≥ I) is one task: on the float64 rows of blocks I and J (projected onto the unit sphere
with ``normalize``) it computes the squared distances of its pairs as the in-memory function does
(``‖x‖² + ‖y‖² − 2x·y`` clipped at 0; on a diagonal tile the pairs i < j only), a slab of rows at a
time, and returns the log-sum-exp of ``−t‖x_i − x_j‖²`` over them as two floats: the largest
exponent and the sum of the exponentials shifted by it. The tiles' pairs are merged by a tree
reduction (the larger shift wins, the other sum is rescaled), so that a large ``t`` does not
underflow to ``log 0``; the client takes the log of the mean over the ``n(n − 1)/2`` pairs.
"""

from __future__ import annotations

import numbers

import numpy as np

from isotropy._kernels.sphere import unit_rows
from isotropy.distributed._graph import check_dask_X, check_tile_rows, compute, finite_blocks, tree_reduce

__all__ = ["uniformity"]

_SLAB_ROWS = 512  # rows of the first block per product inside a tile: 512 x b float64 (16 MiB at b = 4096)
_EMPTY = (-np.inf, 0.0)  # the log-sum-exp of no pairs


def _uniformity_block(block, normalize, caller):
    """Float64 rows of one block and their squared norms; with ``normalize`` the unit rows, as in memory."""
    B = np.asarray(block, dtype=np.float64)
    if normalize:
        B = unit_rows(B, caller=caller)
    return B, np.einsum("ij,ij->i", B, B)


def _shifted_sum(v):
    """(max, Σ exp(v − max)) of the exponents ``v``; ``_EMPTY`` when there are none (or all are −inf)."""
    top = v.max() if v.size else -np.inf
    if top == -np.inf:
        return _EMPTY
    return float(top), float(np.exp(v - top).sum())


def _merge_sums(a, b):
    """Two (shift, shifted sum) pairs as one: the larger shift, the other sum rescaled to it."""
    if a[0] < b[0]:
        a, b = b, a
    if b[0] == -np.inf:
        return a
    return a[0], a[1] + b[1] * float(np.exp(b[0] - a[0]))


def _uniformity_tile(P, Q, t):
    """(shift, shifted sum) of ``−t‖x − y‖²`` over the pairs of blocks P and Q; ``Q=None``: P's pairs i < j."""
    diagonal = Q is None
    A, qa = P
    B, qb = P if diagonal else Q
    out = _EMPTY
    for i0 in range(0, A.shape[0], _SLAB_ROWS):
        i1 = min(i0 + _SLAB_ROWS, A.shape[0])
        j0 = i0 + 1 if diagonal else 0  # a diagonal slab pairs its rows with the later rows only
        if j0 >= B.shape[0]:
            break
        d2 = qa[i0:i1, None] + qb[None, j0:] - 2.0 * (A[i0:i1] @ B[j0:].T)
        v = -t * np.maximum(d2, 0.0)
        if diagonal:
            v = np.where(np.arange(j0, B.shape[0])[None, :] > np.arange(i0, i1)[:, None], v, -np.inf)
        out = _merge_sums(out, _shifted_sum(v))
    return out


def uniformity(X, *, t=2, normalize=True, chunk_size=None):
    """:func:`isotropy.metrics.contrastive.uniformity` of a dask array (see there): exact over all pairs, by tiles.

    ``chunk_size`` is the number of rows per tile (default 4096, fewer for data wider than 1024
    features: a block of at most 32 MiB in float64). A tile holds 512 × ``chunk_size`` float64
    distances at a time and returns two floats; the values equal the in-memory function's to
    rounding (1e-10 relative).
    """
    from dask import delayed

    from isotropy._utils.validation import check_bool, check_scalar

    caller = "uniformity"
    check_scalar(t, "t", caller=caller, kind=numbers.Real, low=0, closed="neither")
    check_bool(normalize, "normalize", caller=caller)
    X = check_dask_X(X, caller=caller, rows=check_tile_rows(chunk_size, caller, X.shape[-1]))
    n = X.shape[0]
    prep = delayed(_uniformity_block, pure=True)
    preps = [prep(b, bool(normalize), caller) for b in finite_blocks(X, caller)]
    tile = delayed(_uniformity_tile, pure=True)
    tiles = [tile(preps[i], None if i == j else preps[j], float(t))
             for i in range(len(preps)) for j in range(i, len(preps))]
    ((top, total),) = compute(tree_reduce(tiles, _merge_sums, name="isotropy-merge-uniformity"))
    return float(top + np.log(total) - np.log(n * (n - 1) / 2))
