"""A robust centre for the product kernels of distances: the coordinate-wise median of evenly spaced rows.

Distances do not depend on the centre the rows are taken from, but the rounding of ``q_i + q_j − 2·u_i·u_j``
does: its error grows with the squared norms ``q`` of the centred rows. The mean is dragged by a few rows of
huge norm (one row 10⁸ times the others moves it 10⁸/n), and then the distances among all the other rows are
lost to cancellation; the lower median of each coordinate stays inside the bulk of the rows.
"""

from __future__ import annotations

import numpy as np

from isotropy._utils.backend import is_torch

__all__ = ["CENTRE_SAMPLE", "median_centre", "sample_rows"]

# Rows sampled for the centre: a few milliseconds whatever n.
CENTRE_SAMPLE = 1025
# Float64 entries of the sample converted at a time (4 MiB).
_ELEMENTS = 2**19


def sample_rows(n_samples: int) -> np.ndarray:
    """Sorted indices of up to :data:`CENTRE_SAMPLE` evenly spaced rows of ``n_samples``."""
    return np.unique(np.linspace(0, n_samples - 1, min(n_samples, CENTRE_SAMPLE)).astype(np.intp))


def median_centre(X, scale=None):
    """Coordinate-wise lower median (float64) of up to :data:`CENTRE_SAMPLE` evenly spaced rows of ``X·scale``.

    ``scale`` (float64, one factor per row) or ``None``. A numpy array gives a numpy array; a torch tensor
    gives a float64 tensor (float32 on MPS) on its device, from its sampled rows copied to the CPU.
    """
    n, d = X.shape
    rows = sample_rows(n)
    if is_torch(X):
        import torch

        sample = X.detach()[torch.as_tensor(rows, device=X.device)].to("cpu", torch.float64).numpy()
        centre = median_centre(sample, None if scale is None else np.asarray(scale)[rows])
        dtype = torch.float32 if X.device.type == "mps" else torch.float64
        return torch.as_tensor(centre, dtype=dtype, device=X.device)
    sample, rows_scale = X[rows], None if scale is None else scale[rows]
    centre = np.empty(d)
    middle = (rows.size - 1) // 2
    step = max(1, _ELEMENTS // max(rows.size, 1))
    for s in range(0, d, step):  # a few columns at a time, each contiguous: one partition per column
        columns = np.array(sample[:, s:s + step], dtype=np.float64)
        if rows_scale is not None:
            columns *= rows_scale[:, None]
        centre[s:s + step] = np.partition(np.ascontiguousarray(columns.T), middle, axis=1)[:, middle]
    return centre
