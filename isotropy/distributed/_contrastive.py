"""Uniformity (Wang & Isola 2020) of a dask array, exact over all pairs, as tiles of row blocks.

Tile (I, J ≥ I) is one task: on the float64 rows of blocks I and J it computes the squared distances of
its pairs as the in-memory function does (with ``normalize`` the chords of the rows' exact directions,
less the mean of the whole array's rows scaled by powers of two; otherwise ``‖x‖² + ‖y‖² − 2x·y`` of the
rows less their column means, clipped at 0; on a diagonal tile the pairs i < j only), a slab of rows at a
time, and returns the log-mean-exp of ``−t‖x_i − x_j‖²`` over them as four numbers: the largest exponent,
the sums of the exponentials and of their ``expm1`` shifted by it, and the pairs. The tiles' numbers are
merged by a tree reduction (the larger shift wins, the other sums are rescaled, each sum of one sign), so
that a large ``t`` does not underflow to ``log 0`` and potentials just below 1 keep their distance from 1;
the client takes the log of the mean over the ``n(n − 1)/2`` pairs.
"""

from __future__ import annotations

import numbers

import numpy as np

from isotropy._kernels.sphere import (
    log_mean_exp,
    merge_sums,
    pair_potentials,
    potential_rows,
    scaled_rows,
    sphere_rows,
)
from isotropy.distributed._graph import (
    aligned_arguments,
    check_dask_X,
    check_tile_rows,
    compute,
    finite_blocks,
    tree_reduce,
)

__all__ = ["uniformity"]

_SLAB_ROWS = 512  # rows of the first block per product inside a tile: 512 x b float64 (16 MiB at b = 4096)


@aligned_arguments
def _uniformity_block(block, normalize, caller, centre):
    """Float64 rows of one block for :func:`isotropy._kernels.sphere.pair_potentials`, as in memory: with ``normalize``
    :func:`isotropy._kernels.sphere.sphere_rows` of its scaled rows less ``centre`` (the mean of the whole array's
    scaled rows), otherwise its rows less the column means of the whole array and their squared norms."""
    if normalize:
        return sphere_rows(scaled_rows(block, caller=caller), centre=centre)
    return potential_rows(np.asarray(block, dtype=np.float64), centre=centre, caller=caller)


@aligned_arguments
def _scaled_sum(block, caller):
    """The sum of the block's rows scaled by :func:`isotropy._kernels.sphere.scaled_rows` (a zero row refused there)."""
    return scaled_rows(block, caller=caller).sum(axis=0)


@aligned_arguments
def _uniformity_tile(P, Q, t):
    """:func:`isotropy._kernels.sphere.pair_potentials` of blocks P and Q (``Q=None``: P's pairs i < j), as in memory."""
    return pair_potentials(P, P if Q is None else Q, t, diagonal=Q is None, rows=_SLAB_ROWS,
                           cols=max(1, (P if Q is None else Q)[0].shape[0]))


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
    # one pass first for the centre, as in memory: the mean of the scaled rows (normalize), or the column means
    if normalize:
        (total,) = compute(tree_reduce([delayed(_scaled_sum, pure=True)(b, caller) for b in blocks], _add,
                                       name="isotropy-merge-uniformity-centre"))
        centre = total / n
    else:
        centre = compute(X.mean(axis=0, dtype=np.float64))[0]
    preps = [prep(b, bool(normalize), caller, centre) for b in blocks]
    tile = delayed(_uniformity_tile, pure=True)
    tiles = [tile(preps[i], None if i == j else preps[j], float(t))
             for i in range(len(preps)) for j in range(i, len(preps))]
    (sums,) = compute(tree_reduce(tiles, merge_sums, name="isotropy-merge-uniformity"))
    return log_mean_exp(sums)


@aligned_arguments
def _add(a, b):
    return a + b
