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

from isotropy._kernels.sphere import merge_sums, pair_potentials, potential_rows, unit_rows
from isotropy.distributed._graph import check_dask_X, check_tile_rows, compute, finite_blocks, tree_reduce

__all__ = ["uniformity"]

_SLAB_ROWS = 512  # rows of the first block per product inside a tile: 512 x b float64 (16 MiB at b = 4096)


def _uniformity_block(block, normalize, caller, centre=None):
    """Float64 rows of one block and their squared norms; with ``normalize`` the unit rows, otherwise less the column
    means of the whole array (``centre``), as in memory (:func:`isotropy._kernels.sphere.potential_rows`)."""
    B = np.asarray(block, dtype=np.float64)
    if normalize:
        B = unit_rows(B, caller=caller)
    return potential_rows(B, centre=centre, caller=caller)


def _uniformity_tile(P, Q, t):
    """(shift, shifted sum) over the pairs of blocks P and Q (``Q=None``: P's pairs i < j), as in memory."""
    A, qa = P
    B, qb = P if Q is None else Q
    return pair_potentials(A, qa, B, qb, t, diagonal=Q is None, rows=_SLAB_ROWS, cols=max(1, B.shape[0]))


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
    blocks = finite_blocks(X, caller)
    # without normalisation, the rows less their column means (one pass first), as in memory
    centre = None if normalize else compute(X.mean(axis=0, dtype=np.float64))[0]
    preps = [prep(b, bool(normalize), caller, centre) for b in blocks]
    tile = delayed(_uniformity_tile, pure=True)
    tiles = [tile(preps[i], None if i == j else preps[j], float(t))
             for i in range(len(preps)) for j in range(i, len(preps))]
    ((top, total),) = compute(tree_reduce(tiles, merge_sums, name="isotropy-merge-uniformity"))
    return float(top + np.log(total) - np.log(n * (n - 1) / 2))
