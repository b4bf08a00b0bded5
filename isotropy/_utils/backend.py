"""One array namespace for numpy and PyTorch inputs.

Metrics are written once against the array API standard (``xp = get_namespace(X)``)
and serve numpy arrays and torch tensors alike, on whatever device the tensor lives.
torch is never imported here: a tensor can only exist if the caller imported torch.
"""

from __future__ import annotations

import sys

import numpy as np

__all__ = ["as_float64_numpy", "get_namespace", "is_dask", "is_torch", "to_output"]


def is_torch(X) -> bool:
    """True when ``X`` is a torch tensor (without importing torch)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(X, torch.Tensor)


def is_dask(X) -> bool:
    """True when ``X`` is a dask array (without importing dask: one can only exist if the caller did)."""
    da = sys.modules.get("dask.array")
    return da is not None and isinstance(X, da.Array)


def get_namespace(*arrays):
    """Return the array-API namespace shared by ``arrays`` (numpy or torch)."""
    from array_api_compat import array_namespace

    return array_namespace(*[a for a in arrays if a is not None])


def to_output(value, like):
    """Fixed return types: a Python float for numpy input, a 0-dim tensor for torch input.

    ``like`` is the user's input; ``value`` a 0-dim array or tensor computed from it.
    Tensors keep their graph and device.
    """
    if is_torch(like):
        return value
    return float(np.asarray(value))


def as_float64_numpy(X) -> np.ndarray:
    """Detached float64 numpy copy of a numpy array or torch tensor (for non-differentiable paths)."""
    if is_torch(X):
        return X.detach().to("cpu").double().numpy()
    return np.asarray(X, dtype=np.float64)
