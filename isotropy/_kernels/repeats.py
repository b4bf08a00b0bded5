"""Rows equal to another, found in O(n·d): the exact neighbour search (:mod:`isotropy._kernels.neighbors`), the
dimension metrics and the silhouette's duplicate rows (:mod:`isotropy._kernels.silhouette`) share these.

A module of its own, importing neither of those kernels: each of them imports it.
"""

from __future__ import annotations

import numpy as np


def _representation(X: np.ndarray, scale) -> np.ndarray:
    """Float64 rows ``X[i]·scale[i]`` whose euclidean geometry is the metric."""
    R = np.asarray(X, dtype=np.float64)
    return R if scale is None else R * scale[:, None]


# Float64 entries of the rows projected at a time (maybe_repeated).
_PROJECTED = 2**18


def maybe_repeated(X, scale) -> np.ndarray:
    """The rows ``X[i]·scale[i]`` whose projection on one fixed random direction equals another row's.

    A superset of the rows equal to another (:func:`distinct_rows` compares them whole): equal rows
    have equal projections (the same arithmetic; ``−0.0`` and ``0.0`` project alike), distinct rows
    almost never do. ``O(n·d)`` work a few rows at a time (about ``_PROJECTED`` float64 entries), every
    column read: a key from a few sampled columns flagged most rows of sparse or one-hot data, whose
    comparison then copied them all.
    """
    n, d = X.shape
    probe = np.random.default_rng(0).standard_normal(d)
    keys = np.empty(n)
    step = max(1, _PROJECTED // max(d, 1))
    for s in range(0, n, step):
        rows = _representation(X[s:s + step], None if scale is None else scale[s:s + step])  # (X itself, if float64)
        # einsum's own loop, not BLAS: one summation order for every row, whatever its place in the chunk; no
        # temporary of the chunk's size (the product and its sum in one pass: 3.4 times faster than the product,
        # then its sum, on 20,000 x 384 float32 rows)
        np.einsum("ij,j->i", rows, probe, out=keys[s:s + step])
    _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    return counts[inverse.reshape(-1)] > 1


def distinct_rows(X, scale, repeated):
    """The distinct rows ``X[i]·scale[i]``: ``first`` (each one's first row, ascending) and ``inverse`` (each row's).

    Only the ``repeated`` rows are compared (``np.unique`` over them, axis 0): a superset of the rows that
    equal another (:func:`maybe_repeated`), usually few; every other row is a distinct point of its own.
    """
    n = X.shape[0]
    among = np.flatnonzero(repeated)
    # in X's own dtype for the euclidean metric (equal there is equal in float64; + 0.0: −0.0 is 0.0)
    rows = X[among] + X.dtype.type(0) if scale is None else _representation(X[among], scale[among])
    _, first_among, inverse_among = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    del rows
    representative = np.arange(n)
    representative[among] = among[first_among][inverse_among.reshape(-1)]  # each row's first equal row
    first, inverse = np.unique(representative, return_inverse=True)  # sorted by that row's index
    return first, inverse.reshape(-1)
