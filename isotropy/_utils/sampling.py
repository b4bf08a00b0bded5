"""The one subsampling rule: a seeded random subset of rows when there are more than asked for."""

from __future__ import annotations

import numpy as np

__all__ = ["subsample_indices"]


def subsample_indices(n_samples: int, size: int | None, *, random_state=None, sort: bool = True) -> np.ndarray:
    """Indices of a random subset of ``size`` of ``n_samples`` rows, or of every row when there are not more.

    Parameters
    ----------
    n_samples : int
        Rows available.
    size : int or None
        Rows wanted; ``None`` (or ``size >= n_samples``) keeps every row, in order, and draws
        nothing from ``random_state``.
    random_state : int, sequence of ints, numpy Generator or None
        Seeds ``numpy.random.default_rng``; a Generator is used (and advanced) as is, so that
        successive calls draw fresh subsets.
    sort : bool, default=True
        Return the chosen indices in increasing order (rows keep their original order).

    Returns
    -------
    numpy.ndarray of int64
        ``rng.choice(n_samples, size, replace=False)`` (sorted when ``sort``), or ``arange(n_samples)``.

    Examples
    --------
    >>> subsample_indices(10, 4, random_state=0).tolist()
    [2, 4, 5, 7]
    >>> subsample_indices(3, 5, random_state=0).tolist()
    [0, 1, 2]
    """
    if size is None or size >= n_samples:
        return np.arange(n_samples)
    if isinstance(size, bool) or int(size) != size or size < 0:
        raise ValueError(f"The 'size' parameter of subsample_indices must be a non-negative int or None. "
                         f"Got {size!r} instead.")
    chosen = np.random.default_rng(random_state).choice(n_samples, int(size), replace=False)
    return np.sort(chosen) if sort else chosen
