"""The centre of the product kernels of euclidean distances: the mean, or a median where a few rows drag the mean.

Distances do not depend on the centre the rows are taken from, but the rounding of ``q_i + q_j − 2·u_i·u_j``
does: its error grows with the squared norms ``q`` of the centred rows. The mean gives the smallest ``q`` on
average, but a few rows of huge norm drag it (one row 10⁸ times the others moves it 10⁸/n), and then the
distances among all the other rows are lost to cancellation. The coordinate-wise median of a sample of rows
stays inside the bulk there, but on data in two far groups it lands in one of them, and the other group's rows
get larger norms than about the mean. :func:`distance_centre` takes the median only where it leaves most rows
much closer than the mean does.
"""

from __future__ import annotations

import numpy as np

from isotropy._utils.backend import is_torch

__all__ = ["CENTRE_SAMPLE", "column_medians", "distance_centre", "sample_rows"]

# Rows sampled for the median and the choice: a few milliseconds whatever n.
CENTRE_SAMPLE = 1025
# The median is taken when the 90th percentile of the sample's squared norms about it is this many times smaller
# than about the mean: ordinary data keep the mean (and their values, bit for bit).
_MEDIAN_GAIN = 4.0
# Float64 entries of the sample converted at a time (4 MiB).
_ELEMENTS = 2**19


def sample_rows(n_samples: int) -> np.ndarray:
    """Sorted indices of up to :data:`CENTRE_SAMPLE` rows of ``n_samples``, drawn with a fixed seed.

    Random, not evenly spaced: a stride lines up with periodic layouts (every 16th row an end-of-sequence token,
    n a multiple of 1024·16), and the sample would be made of one kind of row.
    """
    if n_samples <= CENTRE_SAMPLE:
        return np.arange(n_samples)
    return np.sort(np.random.default_rng(0x150).choice(n_samples, size=CENTRE_SAMPLE, replace=False))


def column_medians(sample: np.ndarray, scale=None) -> np.ndarray:
    """Coordinate-wise lower median (float64) of the rows of ``sample·scale`` (``scale``: float64, one factor per
    row, or ``None``), a few columns at a time: the float64 copy stays small."""
    rows, d = sample.shape
    centre = np.empty(d)
    middle = (rows - 1) // 2
    step = max(1, _ELEMENTS // max(rows, 1))
    for s in range(0, d, step):  # each column contiguous: one partition per column
        columns = np.asarray(sample[:, s:s + step], dtype=np.float64)
        if scale is not None:
            columns = columns * scale[:, None]
        centre[s:s + step] = np.partition(np.ascontiguousarray(columns.T), middle, axis=1)[:, middle]
    return centre


def _spread(sample: np.ndarray, centre: np.ndarray) -> float:
    """The 90th percentile of the squared norms of the sample's rows about ``centre`` (float64), a few rows at a time:
    no float64 copy of a wide sample (each row's norm is that of the row alone)."""
    rows, d = sample.shape
    step = max(1, _ELEMENTS // max(d, 1))
    norms = np.empty(rows)
    for s in range(0, rows, step):
        diff = np.asarray(sample[s:s + step], dtype=np.float64) - centre
        norms[s:s + step] = np.einsum("ij,ij->i", diff, diff)
    return float(np.percentile(norms, 90))


def distance_centre(X, mean):
    """The centre for the euclidean product kernels of ``X``: ``mean`` (the mean of ``X``'s rows, which the caller
    computes in its own way: float64 numpy, or a tensor on ``X``'s device), or the coordinate-wise median of
    :func:`sample_rows` when the 90th percentile of the sample's squared norms about it is ``_MEDIAN_GAIN`` times
    smaller (then as ``mean``'s type: a numpy array, or a tensor of ``mean``'s dtype and device)."""
    rows = sample_rows(X.shape[0])
    if is_torch(X):
        import torch

        sample = X.detach()[torch.as_tensor(rows, device=X.device)].to("cpu", torch.float64).numpy()
        mean_host = mean.detach().to("cpu", torch.float64).numpy()
    else:
        # the sample as stored: column_medians and _spread convert a few MiB of it to float64 at a time (a float64
        # copy and two of its differences were 65 MiB for 4,096 float32 features, in one dask task)
        sample = np.asarray(X if rows.size == X.shape[0] else X[rows])  # every row (a dask task's sample): no copy
        mean_host = np.asarray(mean, dtype=np.float64)
    median = column_medians(sample)
    if _MEDIAN_GAIN * _spread(sample, median) >= _spread(sample, mean_host):
        return mean
    if is_torch(mean):
        import torch

        return torch.as_tensor(median, dtype=mean.dtype, device=mean.device)
    return median
