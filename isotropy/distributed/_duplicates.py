"""Duplicate rows of a dask array, merged as the in-memory dimension estimators merge them.

The in-memory estimators (:mod:`isotropy.metrics.dimension`) count each distinct point once: rows whose
metric representation (:func:`isotropy._kernels.neighbors._representation`: the row, or the row
over its norm for the cosine metric) is identical are one point, and a per-row result is that of
its point. Here one pass over the chunks hashes every row's representation (64 bits, on the
workers); only rows whose hash is shared are fetched to the client and compared exactly, at the unit
scale of the whole array (:func:`~isotropy.distributed._graph.unit_blocks`), so the client holds
n_samples integers and the candidate duplicate rows, never the data. The same pass finds that scale's
exponent for the neighbour search that follows; the hashes do not wait for it (see
:func:`_scale_free_row_hashes`), so the pass streams the blocks.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np

from isotropy.distributed._graph import (
    aligned_arguments,
    at_metric_scale,
    at_unit_scale,
    compute,
    exponent_as_given,
    finite_blocks,
    unit_blocks,
)

__all__ = ["Distinct", "distinct_rows"]


class Distinct(NamedTuple):
    """The distinct points of ``X``: ``rows`` (sorted indices of their first rows) and ``inverse``
    (for every row of ``X``, the position of its point in ``rows``)."""

    rows: np.ndarray
    inverse: np.ndarray


def _representation(block, metric, caller):
    from isotropy._kernels.neighbors import _prepare, _representation

    return _representation(*_prepare(np.asarray(block), metric, caller)) + 0.0  # + 0.0: -0.0 becomes 0.0


# Entries of a block hashed at a time: the rows' float64 representation and its products are a few MiB, where a whole
# chunk at once (the shard reader's are 64 MiB of float32) took several float64 copies of it (a worker held about 300
# MiB beyond its imports for the hashes of 2 such chunks; docs/benchmarks.md).
_HASH_ELEMENTS = 2**18


def _row_hashes(block, metric, caller, start=0, exponent=None, zeros=None):
    """A 64-bit hash of each row's representation (a multiply-add over its float64 bit patterns), a few rows at a time.

    The rows are first brought to scale: ``exponent`` None, :func:`~isotropy.distributed._graph.at_metric_scale` with 0
    (scale-free: :func:`_scale_free_row_hashes`); else at unit scale, times ``2**-exponent``. A zero row under the
    cosine metric (no direction) is refused, named by its row in the whole array (``start``: the block's first); or,
    with a list ``zeros``, appended to it (that row's hash is of no direction) for the client to refuse once every block
    is read, naming the first and counting them all, as in memory.
    """
    B = np.asarray(block)
    n, d = B.shape
    multipliers = np.random.default_rng(0x150).integers(1, 2**63, size=d, dtype=np.uint64) | np.uint64(1)
    out = np.empty(n, dtype=np.uint64)
    step = max(1, _HASH_ELEMENTS // max(1, d))
    for s in range(0, n, step):
        part = B[s:s + step]
        part = at_metric_scale(part, 0, metric) if exponent is None else at_unit_scale(part, exponent)
        if metric == "cosine" and not part.any(axis=1).all():
            zero = ~part.any(axis=1)
            if zeros is None:
                from isotropy._kernels.neighbors import refuse_zero_rows

                refuse_zero_rows(start + np.flatnonzero(~B.any(axis=1)), caller=caller)
            zeros.extend((start + s + np.flatnonzero(zero)).tolist())
            part = np.where(zero[:, None], np.ones_like(part[:1]), part)  # (refused on the client: any direction)
        bits = _representation(part, metric, caller).view(np.uint64)
        with np.errstate(over="ignore"):
            h = (bits * multipliers).sum(axis=1, dtype=np.uint64)
            h ^= h >> np.uint64(31)
            h *= np.uint64(0x9E3779B97F4A7C15)
            h ^= h >> np.uint64(29)
        out[s:s + step] = h
    return out


@aligned_arguments
def _scale_free_row_hashes(block, metric, caller, start=0):
    """:func:`_row_hashes` of representations that do not depend on the array's scale, so that no hash waits for it,
    and the rows with no direction under the cosine metric (their indices in the whole array).

    Euclidean: the rows as they are. Cosine: each row brought to its own unit scale where it must be, then
    normalised, as the in-memory cosine metrics do (:func:`~isotropy._utils.magnitude.directions_at_unit_scale`,
    which reads no exponent of the whole array), so the relation is theirs. Were the hashes taken at the
    array's unit scale, every hash task would wait for its exponent, that is for every block, and all the
    blocks would be held in memory at once instead of streamed. Euclidean rows times ``2**-e`` with ``e <= 0``
    (data not rescaled, or scaled up) stay equal when equal and distinct when distinct, so these hashes are
    those of the unit-scale rows; for ``e > 0`` (data beyond ``2**100``) entries far below the largest can
    become subnormal, and :func:`distinct_rows` hashes at unit scale instead.
    """
    zeros = []
    hashes = _row_hashes(block, metric, caller, start, zeros=zeros)
    return hashes, np.asarray(zeros, dtype=np.intp)


@aligned_arguments
def _unit_row_hashes(block, metric, caller, exponent, start=0):
    """:func:`_row_hashes` of the block at unit scale (times ``2**-exponent``)."""
    return _row_hashes(block, metric, caller, start, exponent)


def distinct_rows(X, *, n_neighbors, metric, caller, stacklevel=4, report=True, given=None):
    """``(distinct, e)``: ``distinct`` None when the rows of the (checked, row-chunked) dask array ``X`` are
    distinct, else :class:`Distinct`; ``X·2**-e`` is X at unit scale (:func:`~isotropy.distributed._graph.unit_blocks`).

    With duplicates, warns as the in-memory estimators do (how many duplicate rows, how many
    distinct points), and raises when fewer than ``n_neighbors + 1`` distinct points remain. ``report=False`` leaves
    both to the caller (under the cosine metric the search merges rows parallel to another as well, and the in-memory
    warning or refusal counts them all: :func:`isotropy.distributed._neighbors._merge_parallel_rows`). ``given``: X's
    dtype before it was checked (data whose largest ``|x|`` is subnormal in it are refused, as in memory:
    :func:`~isotropy.distributed._graph.exponent_as_given`).
    """
    from dask import delayed


    hash_block = delayed(_scale_free_row_hashes, pure=True)
    blocks, exponent = unit_blocks(X, caller, neighbours=True)
    # the unit scale's exponent computed with the hashes: its block maxima come from the tasks that check the
    # blocks for NaN/inf, so the shards are read once for both; no hash task takes the exponent (the blocks stream)
    starts = np.cumsum((0, *X.chunks[0]))
    exponent = exponent_as_given(exponent, blocks, given, X.dtype, caller)
    *parts, exponent = compute(*[hash_block(b, metric, caller, int(first)) for b, first in zip(blocks, starts)],
                               exponent)
    zero = np.concatenate([part[1] for part in parts]) if parts else np.empty(0, dtype=np.intp)
    if zero.size:  # every block read: the first zero row of the array named, all of them counted (as in memory)
        from isotropy._kernels.neighbors import refuse_zero_rows

        refuse_zero_rows(np.sort(zero), caller=caller)
    parts = [part[0] for part in parts]
    # scaled down: an entry can become subnormal and two distinct rows equal, as in memory (the cosine metric
    # brings each row to its own unit scale instead, as the scale-free hashes did)
    if exponent > 0 and metric != "cosine":
        unit_hash = delayed(_unit_row_hashes, pure=True)
        parts = compute(*[unit_hash(b, metric, caller, exponent, int(first))
                          for b, first in zip(finite_blocks(X, caller), starts)])
    hashes = np.concatenate(parts)
    n = hashes.shape[0]
    order = np.argsort(hashes, kind="stable")
    shared = hashes[order][1:] == hashes[order][:-1]
    if not shared.any():
        return None, exponent
    candidate = np.zeros(n, dtype=bool)
    candidate[order[1:][shared]] = True
    candidate[order[:-1][shared]] = True
    candidates = np.flatnonzero(candidate)  # sorted: np.unique's first index is the smallest row
    (rows,) = compute(X[candidates])
    _, first, inverse = np.unique(_representation(at_metric_scale(rows, exponent, metric), metric, caller), axis=0, return_index=True,
                                  return_inverse=True)
    first_row = np.arange(n)
    first_row[candidates] = candidates[first[inverse.reshape(-1)]]
    keep = first_row == np.arange(n)
    n_distinct = int(np.count_nonzero(keep))
    n_dup = n - n_distinct
    if n_dup == 0:  # hash collisions of distinct rows only
        return None, exponent
    if report:
        from isotropy._kernels.dimension import duplicate_rows_message, too_few_distinct

        if n_distinct - 1 < n_neighbors:
            raise too_few_distinct(caller, n_neighbors, n_distinct, n_dup)
        warnings.warn(duplicate_rows_message(caller, n_dup, n_distinct, metric), UserWarning, stacklevel=stacklevel)
    position = np.cumsum(keep) - 1
    return Distinct(rows=np.flatnonzero(keep), inverse=position[first_row]), exponent
