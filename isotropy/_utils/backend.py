"""One array namespace for numpy and PyTorch inputs.

Metrics are written once against the array API standard (``xp = get_namespace(X)``)
and serve numpy arrays and torch tensors alike, on whatever device the tensor lives.
torch is never imported here: a tensor can only exist if the caller imported torch.
"""

from __future__ import annotations

import contextlib
import functools
import sys

import numpy as np

__all__ = ["as_float64_numpy", "as_tensor", "get_namespace", "is_dask", "is_torch", "no_autocast", "to_output",
           "without_autocast"]


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


def as_tensor(value, **kwargs):
    """``torch.as_tensor(value, **kwargs)`` of a host array, a read-only one copied first.

    torch shares a numpy array's memory and cannot mark it read-only: an array that is not writable
    (``np.load(..., mmap_mode="r")``, a pandas 3 frame's ``to_numpy()``) gave PyTorch's "The given NumPy array is
    not writable ... undefined behavior" UserWarning, raised by the toolkit's own conversion (an error under
    ``-W error``). Only callers that have imported torch get here.
    """
    torch = sys.modules["torch"]
    if isinstance(value, np.ndarray) and not value.flags.writeable:
        value = value.copy()
    return torch.as_tensor(value, **kwargs)


def no_autocast(X):
    """A context that turns autocast off on ``X``'s device while the toolkit computes on the tensor ``X``.

    Under ``torch.autocast`` (a mixed-precision training step) torch runs matmuls in bfloat16 or float16 whatever
    the dtype of their operands: IsoScore's float32 Gram products came back as bfloat16, 1e-3 off (I-STAR's
    penalty 1e-2), where the metrics promise float32 arithmetic for half input and the input's dtype otherwise.
    Autocast is a per-device thread-local mode, so this works on every device type (cpu, cuda, mps, xpu, ...) and
    keeps the graph: gradients flow to ``X`` as outside autocast. A no-op (``nullcontext``) for anything but a
    tensor, and where autocast is off or unknown to the device (``meta``).
    """
    if not is_torch(X):
        return contextlib.nullcontext()
    torch = sys.modules["torch"]
    device = X.device.type
    try:
        enabled = torch.is_autocast_enabled(device)
    except TypeError:  # torch < 2.4 takes no device type: CUDA's flag, and the CPU's of its own
        enabled = torch.is_autocast_cpu_enabled() if device == "cpu" else (
            device == "cuda" and torch.is_autocast_enabled())
    except RuntimeError:  # a device type autocast does not know (meta): it cannot be on there
        enabled = False
    return torch.autocast(device_type=device, enabled=False) if enabled else contextlib.nullcontext()


def without_autocast(func):
    """Decorate a metric or penalty: its arithmetic on a torch tensor argument (the first one, positional or
    keyword: ``X``/``H``) runs with autocast off on that tensor's device (see :func:`no_autocast`)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        X = next((a for a in (*args, *kwargs.values()) if is_torch(a)), None)
        with no_autocast(X):
            return func(*args, **kwargs)

    return wrapper
