"""Rows projected onto the unit sphere, for the contrastive metrics (in memory and on dask)."""

from __future__ import annotations

import numpy as np

from isotropy._utils.backend import is_torch
from isotropy._utils.errors import IsotropyValueError

__all__ = ["unit_rows"]


def unit_rows(X, *, caller: str, name: str = "X"):
    """``x / ‖x‖`` row by row: a torch tensor stays one (differentiable), anything else becomes float64 numpy.

    A zero row has no direction on the sphere: refused in one line naming ``caller``'s parameter ``name``.
    """
    if is_torch(X):
        norms = X.norm(dim=1, keepdim=True)
        zero = bool((norms == 0).any())
    else:
        X = np.asarray(X, dtype=np.float64)
        norms = np.linalg.norm(X, axis=1, keepdims=True)
        zero = bool((norms == 0).any())
    if zero:
        raise IsotropyValueError(f"The '{name}' parameter of {caller} has a zero row, which has no direction on "
                                 f"the sphere: expected non-zero rows (or normalize=False).")
    return X / norms
