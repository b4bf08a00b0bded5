"""Magnitude of the data: exact power-of-two rescaling for the scale-invariant metrics.

IsoScore, the participation ratio, the silhouette, the cluster indices and the intrinsic
dimensions do not change when ``X`` is multiplied by a positive constant, but their internals
(second moments, squared norms, Gram products, fourth moments) overflow float64 from about
``|x| ~ 1e77`` and underflow below ``|x| ~ 1e-77``; in float32 much sooner. Multiplying ``X`` by
``2**-e`` (``e`` the binary exponent of the largest ``|x|``) changes no significant digit of any
normal number, so the metric computed on the rescaled data is the metric of ``X``, exactly.

Data already at a safe scale are returned as they are (no copy): the common case costs one
read of ``X`` for its minimum and maximum, which also serves the NaN/inf check.
"""

from __future__ import annotations

import contextlib
import contextvars
import math

import numpy as np

from isotropy._utils.backend import is_torch
from isotropy._utils.errors import IsotropyValueError

__all__ = ["directions_at_unit_scale", "extremes", "neighbour_target", "refuse_partition_overflow", "rescaled",
           "rows_at_unit_scale", "safe_exponent_range", "times_power_of_two", "unit_exponent", "unit_scale"]

# |binary exponent| of max|x| below which the data are used as they are, by working precision.
# float64: squares, sums of n·d squares and squared Frobenius norms (fourth powers) stay inside
# float64 for n·d up to ~1e40. float32 numpy data are accumulated in float64 (covariance) or used
# in float32 products of squares (silhouette, neighbours); float32 tensors keep float32 throughout,
# including the fourth moments of the torch IsoScore path, hence the narrower range.
_SAFE_EXPONENT = {("numpy", 8): 100, ("torch", 8): 100, ("numpy", 4): 40, ("torch", 4): 8}


# The binary exponent the neighbour searches bring the largest |x| to when they rescale (at most the safe range's):
# as high as their float32 scores allow, so that the entries far below the largest keep their digits. Brought to
# unit scale instead, float64 rows near 1e-10 beside rows near 1e150 had squared differences near 1e-320, subnormal
# numbers of a few bits (wrong neighbours, distances off by percents), and float32 rows near 1e-20 beside rows near
# 1e20 became subnormal float32 numbers themselves. At 2**40 the float32 scores of any width up to 2**40 features
# stay finite (|s_ij| <= ‖c_i‖² + ‖c_j‖² <= 8·2**80·d, and float32 holds 2**127).
_NEIGHBOUR_TOP = 40


# |binary exponent| of a row's largest |x| below which the cosine metrics use the row as it is: its squared norm
# (float64, or float32 products of float32 rows) and the products of two such rows stay normal numbers.
_DIRECTIONS_EXPONENT = {8: 100, 4: 40}


_REMEMBERED: contextvars.ContextVar = contextvars.ContextVar("isotropy_remembered_extremes", default=None)


@contextlib.contextmanager
def remembered_extremes(X):
    """Within the block, :func:`extremes` of this very array reads it once (the metrics of a table each check it).

    The array must not change within the block.
    """
    token = _REMEMBERED.set([X, None])
    try:
        yield
    finally:
        _REMEMBERED.reset(token)


def extremes(X) -> tuple[float, float]:
    """``(min(X), max(X))`` as Python floats (NaN when ``X`` holds a NaN); ``(0, 0)`` when empty."""
    if is_torch(X):
        if X.numel() == 0:
            return 0.0, 0.0
        import torch

        low, high = torch.aminmax(X.detach())
        return float(low), float(high)
    if X.size == 0:
        return 0.0, 0.0
    remembered = _REMEMBERED.get()
    if remembered is not None and remembered[0] is X:
        if remembered[1] is None:
            remembered[1] = (float(X.min()), float(X.max()))
        return remembered[1]
    return float(X.min()), float(X.max())


def safe_exponent_range(X) -> int:
    """The largest ``|e|`` with ``max|x| ~ 2**e`` that the metrics compute on without rescaling (``X``: an array, a
    tensor or a numpy dtype)."""
    itemsize = X.element_size() if is_torch(X) else X.itemsize if isinstance(X, np.dtype) else X.dtype.itemsize
    return _SAFE_EXPONENT.get(("torch" if is_torch(X) else "numpy", itemsize), 8)


def _tiny(X) -> float:
    if is_torch(X):
        import torch

        return float(torch.finfo(X.dtype).tiny)
    return float(np.finfo(X.dtype).tiny)


def rescaled(X, top: float | None = None, *, caller: str, name: str = "X", target: int = 0):
    """``(X · 2**-e, e)`` with ``max|X · 2**-e|`` in [2**(target − 1), 2**target), or ``(X, 0)`` when ``X`` is at a
    safe scale.

    ``top`` is ``max|X|`` when already known. ``target`` (at most :func:`safe_exponent_range`; 0, unit scale, by
    default) is where the largest ``|x|`` lands: higher keeps more of the entries far below it normal numbers
    (:func:`neighbour_target`). The product is exact for every normal result (an entry far below the largest may
    become subnormal, i.e. lose digits that are below the dtype's precision relative to the largest entry anyway).
    Raises :class:`IsotropyValueError` when the largest ``|x|`` is itself subnormal: such data carry fewer
    significant bits than the dtype's precision, so no metric of them would mean what it says.
    """
    if top is None:
        low, high = extremes(X)
        top = max(abs(low), abs(high))
    if top == 0.0:
        return X, 0  # all zeros: every metric reports its own degenerate case
    refuse_subnormal(X, top, caller=caller, name=name)
    exponent = math.frexp(top)[1]  # top = m * 2**exponent, 0.5 <= m < 1
    if abs(exponent) <= safe_exponent_range(X):
        return X, 0
    return times_power_of_two(X, target - exponent), exponent - target


def rescaled_as_float64(X: np.ndarray, *, caller: str, name: str = "X"):
    """:func:`rescaled` of the numpy ``X`` read as float64, without a float64 copy of a float32 ``X`` that float64
    computes on as it is.

    A float32 ``X`` comes back as it is (exponent 0) wherever ``rescaled(X.astype(np.float64))`` returns the
    float64 copy unscaled: its readers then convert it a row chunk at a time (:mod:`isotropy.transforms._scatter`),
    with the same float64 values and arithmetic. Elsewhere (an ``|x|`` beyond float64's safe range, or a largest
    ``|x|`` that float32 holds only as a subnormal number) the float64 copy is rescaled, as before.
    """
    if X.dtype == np.float64:
        return rescaled(X, caller=caller, name=name)
    low, high = extremes(X)
    top = max(abs(low), abs(high))
    if X.dtype == np.float32 and (top == 0.0 or (top >= np.finfo(np.float32).tiny and
                                                 abs(math.frexp(top)[1]) <= safe_exponent_range(np.dtype(np.float64)))):
        return X, 0
    return rescaled(np.asarray(X, dtype=np.float64), top, caller=caller, name=name)


def neighbour_target(X) -> int:
    """The ``target`` of :func:`rescaled` for the neighbour searches of ``X`` (an array, a tensor or a numpy dtype):
    ``2**40``, within the safe range of numpy data of its width, so that a tensor and an array of the same values
    are searched at the same scale (the float32 scores of a search on any device hold ``2**40``)."""
    if is_torch(X):
        itemsize = X.element_size()
    else:
        itemsize = X.itemsize if isinstance(X, np.dtype) else X.dtype.itemsize
    return min(_NEIGHBOUR_TOP, _SAFE_EXPONENT.get(("numpy", itemsize), 8))


def refuse_subnormal(X, top: float, *, caller: str, name: str = "X") -> None:
    """Raise :class:`IsotropyValueError` when ``top`` (the largest ``|x|`` of ``X``) is a nonzero subnormal number."""
    if 0.0 < top < _tiny(X):
        dtype = str(X.dtype).replace("torch.", "")
        raise IsotropyValueError(
            f"The '{name}' parameter of {caller} must have values of normal magnitude. Got only subnormal "
            f"{dtype} numbers (largest |x| = {top:.3g} < {_tiny(X):.3g}), which have already lost most of "
            f"their significant digits; store the data at a larger scale (e.g. multiplied by 2**{_lift(top, X)}).")


def directions_at_unit_scale(X):
    """For metrics of the rows' directions alone (the cosine distance): ``X`` with every row whose largest ``|x|``
    lies outside ``2**±100`` (float64; ``2**±40`` for float32) multiplied by its own power of two, which brings
    that largest ``|x|`` into [0.5, 1); ``X`` itself (no copy) when every row is at a safe scale.

    One power of two for the whole array (:func:`rescaled`) keeps the rows' relative lengths, which the
    cosine distance does not read; data mixing rows near ``1e200`` with rows near ``1e-100`` lose the small
    rows to underflow at the array's unit scale (zero rows, or directions of a few bits). Each row at its own
    scale keeps every row's direction exact: ``x·2**k`` and ``x`` have the same normalised bits. Zero rows stay
    zero. Numpy arrays or torch tensors (on their device, differentiable), float32 or float64.
    """
    if is_torch(X):
        return _torch_directions(X)
    if X.size == 0:
        return X
    top = np.maximum(X.max(axis=1), -X.min(axis=1))  # two reads, no n x d temporary
    exponent = np.frexp(top)[1]  # 0 for a zero row
    odd = np.abs(exponent) > _DIRECTIONS_EXPONENT.get(X.dtype.itemsize, 8)  # float16, longdouble: narrow
    if not odd.any():
        return X
    # one new array (the rows at a safe scale times 2**0, unchanged): no gathered copy of the odd rows beside it
    return np.ldexp(X, np.where(odd, -exponent, 0)[:, None]).astype(X.dtype, copy=False)


def _torch_directions(X):
    import torch

    if X.numel() == 0:
        return X
    Xd = X.detach()
    top = torch.maximum(Xd.amax(dim=1), -Xd.amin(dim=1))  # no n x d temporary
    # the binary exponent from log2, as frexp has no kernel on every device (MPS); exact at powers of two, else
    # at most one too large near one (still a power of two: the row's max then lies in [0.25, 1))
    exponent = torch.where(top > 0, torch.floor(torch.log2(top)) + 1, torch.zeros_like(top)).to(torch.int64)
    odd = exponent.abs() > _DIRECTIONS_EXPONENT.get(X.element_size(), 8)
    if not bool(odd.any()):
        return X
    shift = torch.where(odd, -exponent, torch.zeros_like(exponent))
    half = torch.div(shift, 2, rounding_mode="floor")
    # each factor a normal power of two built from its bits (exact on every device, where pow(2, k) need not be):
    # float64 |shift| <= 1074 and float32 <= 149, so each half is inside the dtype's normal exponents
    return X * _powers_of_two(half, X.dtype)[:, None] * _powers_of_two(shift - half, X.dtype)[:, None]


def _powers_of_two(k, dtype):
    """``2.0**k`` (``k`` an int64 tensor of normal exponents) in float32 or float64, from the exponent bits."""
    import torch

    if dtype == torch.float64:
        return ((k + 1023) << 52).view(torch.float64)
    return ((k + 127) << 23).to(torch.int32).view(torch.float32)


def times_power_of_two(X, exponent: int):
    """``X · 2**exponent`` in ``X``'s dtype (exact for normal results); ``X`` itself for 0.

    A torch tensor is multiplied by two factors, each a normal number of its dtype (float32 exponents
    stay within ±150, float64 within ±1075): exact and differentiable.
    """
    if not exponent:
        return X
    if is_torch(X):
        half = exponent // 2
        return X * (2.0 ** half) * (2.0 ** (exponent - half))
    return np.ldexp(X, exponent).astype(X.dtype, copy=False)


def rows_at_unit_scale(B: np.ndarray) -> np.ndarray:
    """Each row of the float array ``B`` times its own power of two, ``max|row|`` then in [0.5, 1) (exact for normal
    numbers; rows of zeros unchanged): a row's direction, or its norm's digits, whatever its length."""
    return np.ldexp(B, -np.frexp(np.abs(B).max(axis=1))[1][:, None]).astype(B.dtype, copy=False)


def _lift(top: float, X) -> int:
    """A power of two that brings ``top`` to unit scale (for the message)."""
    return -math.frexp(top)[1]


def unit_scale(X, top: float | None = None, *, caller: str, name: str = "X", target: int = 0):
    """:func:`rescaled` without the exponent: ``X`` brought to unit scale (to ``2**target``) when it must be."""
    return rescaled(X, top, caller=caller, name=name, target=target)[0]


def unit_exponent(top: float, dtype, *, caller: str, name: str = "X", target: int = 0) -> int:
    """The ``e`` of :func:`rescaled` for numpy data of ``dtype`` whose largest ``|x|`` is ``top``: 0 at a safe scale.

    For data held in pieces (the row chunks of a dask array): the largest ``|x|`` of all the pieces gives the
    exponent :func:`rescaled` would use for the whole, and each piece times ``2**-e`` is that piece of the
    rescaled whole. Raises as :func:`rescaled` when ``top`` is subnormal.
    """
    return rescaled(np.array([top], dtype=dtype), top, caller=caller, name=name, target=target)[1]


def refuse_partition_overflow(exponent: int):
    """The one-line refusal of I(W) (:func:`isotropy.partition_isotropy`, in memory and on dask) at a scale whose
    projections overflow float64."""
    raise IsotropyValueError(
        f"The 'X' parameter of partition_isotropy must have projections uᵀx inside float64's range. Got data at "
        f"scale 2**{exponent} (about 1e{round(exponent * math.log10(2))}), whose projections overflow; I(W) "
        f"depends on the scale of X, so it cannot be computed there: rescale X first.")


def refuse_partition_all_zero(top: float, n_samples: int, caller: str = "partition_isotropy") -> None:
    """Refuse all-zero data (``top`` = max |x|), in memory and on dask.

    The formula's value there is 1 (Z(c) = n for every c), but it says nothing: XᵀX = 0, so every
    direction is an eigenvector and no row has a direction at all; "perfectly isotropic" would be a
    reading of nothing. Refused as effective_rank refuses all-zero data.
    """
    if top == 0.0:
        raise IsotropyValueError(
            f"The 'X' parameter of {caller} must not be all zero. Got {n_samples} zero rows instead, which have "
            f"no direction: Z(c) = n for every c, so I(W) = 1 would say nothing about isotropy.")
