"""Alignment and uniformity of embeddings on the hypersphere (Wang & Isola, ICML 2020).

Alignment: how close the embeddings of positive pairs are (lower is better aligned).
Uniformity: how evenly the embeddings spread over the unit sphere, as the log of the average
Gaussian potential between all pairs (lower is more uniform). Both are defined on L2-normalised
embeddings, which is the default here (``normalize=True``).
"""

from __future__ import annotations

import functools
import math
import numbers

import numpy as np

from isotropy._kernels.sphere import (
    exponents,
    float_layout,
    log_mean_exp,
    log_mean_exp_torch,
    pair_potentials,
    potential_rows,
    powers_of_two,
    scaled_rows,
    scaled_rows_queued,
    sphere_rows,
    unit_rows,
    unit_scales,
)
from isotropy._utils.backend import is_dask, is_torch, to_output
from isotropy._utils.errors import IsotropyValueError
from isotropy._utils.validation import check_bool, check_scalar, check_X

__all__ = ["alignment", "uniformity"]

_BLOCK_ROWS, _BLOCK_COLS = 1024, 8192  # uniformity's tiles: 1024 x 8192 float64 distances (64 MB) at a time


def alignment(X, Y, *, alpha: float = 2, normalize: bool = True):
    """Alignment of positive pairs: the mean of ``‖x_i − y_i‖^α`` over the rows.

    Parameters
    ----------
    X, Y : array-like, torch.Tensor or dask array of shape (n_samples, n_features)
        Row ``i`` of ``X`` and row ``i`` of ``Y`` embed the two sides of the ``i``-th positive pair
        (two augmentations, a sentence and its paraphrase, a query and its document). One tensor and
        one array: the array is taken as a tensor on the tensor's device, computed with it in float64
        (which holds both; float32 on MPS, which refuses an array it cannot hold), and the value comes
        back in the tensor's dtype (float32 for float16, bfloat16 and integer tensors). One dask array
        and one numpy array: both are read as dask arrays;
        a dask array with a tensor is refused.
    alpha : float, default=2
        The exponent (the paper's default is 2).
    normalize : bool, default=True
        Project every row onto the unit sphere first, as the paper's definition assumes.

    Returns
    -------
    align : float or torch.Tensor
        In ``[0, 2^α]`` with ``normalize``; 0 when every pair coincides. Python float for numpy
        and dask input; a differentiable 0-dim tensor when ``X`` or ``Y`` is a tensor, in the
        tensor's dtype, float32 for float16, bfloat16 and integer tensors (of two tensors, the wider
        of those: float16 with float64 gives float64); a mean below that dtype's smallest number
        rounds to 0 there, as 0.1^1000 does in float64, one above its largest is refused.

    Notes
    -----
    .. math:: \\mathcal{L}_{\\text{align}} = \\mathbb{E}_{(x, y) \\sim p_{\\text{pos}}}
              \\lVert f(x) - f(y) \\rVert_2^{\\alpha}

    Each pair and its difference are brought to unit scale by powers of two (exact) and the powers
    summed relative to the largest, so that ``normalize=False`` neither overflows nor underflows at
    any scale; a mean that itself lies past float64's largest number is refused in one line (the
    same on numpy, dask and torch). With ``normalize`` the distance is the chord of the rows' exact
    directions (each row scaled by a power of two, not rounded to x / ‖x‖), so that nearly parallel
    pairs keep their relative precision. Torch input is computed the same way in float64 (float32
    on MPS), differentiable, whatever its dtype (float32 or narrower values need no scaling there:
    their squares never leave float64's range), and reads the device once per call, to refuse bad
    input after the value is queued.

    References
    ----------
    .. [1] T. Wang and P. Isola, "Understanding Contrastive Representation Learning through
       Alignment and Uniformity on the Hypersphere", ICML 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy.metrics.contrastive import alignment
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> round(alignment(X, X[::-1]), 12)          # orthogonal unit pairs: squared distance 2
    2.0
    """
    caller = "alignment"
    check_scalar(alpha, "alpha", caller=caller, kind=numbers.Real, low=0, closed="neither")
    check_bool(normalize, "normalize", caller=caller)
    if is_dask(X) or is_dask(Y):
        for name, data in (("X", X), ("Y", Y)):
            if is_torch(data):  # da.asarray of a tensor needing grad raised torch's "Can't call numpy() on Tensor ..."
                other = "Y" if name == "X" else "X"
                raise IsotropyValueError(f"The '{name}' parameter of {caller} must be a dask or numpy array when "
                                         f"'{other}' is a dask array. Got a torch.Tensor instead (pass "
                                         f"{name}.detach().cpu().numpy(), or two tensors).")
        return _dask_alignment(X, Y, alpha=float(alpha), normalize=normalize, caller=caller)
    # tensors are checked for NaN and inf by the torch path itself, in its one read from the device
    X = check_X(X, caller=caller, min_samples=1, allow_nonfinite=is_torch(X))
    Y = check_X(Y, caller=caller, name="Y", min_samples=1, allow_nonfinite=is_torch(Y))
    if is_torch(X) or is_torch(Y):
        return _torch_alignment(X, Y, alpha=float(alpha), normalize=normalize, caller=caller)
    if tuple(X.shape) != tuple(Y.shape):
        raise IsotropyValueError(f"The 'Y' parameter of {caller} must have the shape of 'X' {tuple(X.shape)}. "
                                 f"Got {tuple(Y.shape)} instead.")
    top, total = _power_sum(np.asarray(X, dtype=np.float64), np.asarray(Y, dtype=np.float64), float(alpha),
                            normalize=normalize)
    return to_output(_mean_of_powers(top, total, X.shape[0], float(alpha), caller), X)


def _torch_alignment(X, Y, *, alpha: float, normalize: bool, caller: str):
    """:func:`alignment` when ``X`` or ``Y`` is a tensor: computed in float64 (float32 on MPS) on the tensor's device,
    differentiable, exact at any scale as the numpy path, and returned in the tensor's dtype, float32 for half and
    integer tensors (``check_X`` made them float32; refused where the mean lies beyond that dtype's range).

    One tensor and one numpy array: a decision, the numpy one becomes a tensor on the tensor's device, and the value
    is the tensor's (differentiable in it), as if both had been tensors. Refusing would make the common training use
    (a model's output against fixed numpy targets) convert by hand; the numpy side has no graph to lose, and style
    says device and dtype come from the input. It is converted to the computing dtype, which holds both, not to the
    tensor's: cast to a float32 tensor's dtype, a float64 array's 1e40 became inf and the value 0.0 (a NaN pair read
    as a coinciding one), and its 1e-50 became 0 and was refused as a zero row. Before that, the tensor went through
    numpy: torch's raw "Can't call numpy() on Tensor that requires grad", or a float64 float with a NumPy
    DeprecationWarning for a float32 tensor.

    Both in float64 because float32 lost what numpy keeps: the squared differences of float32 pairs near 1e-25
    underflowed (0 for 2.06e-26) and near 1e25 overflowed (inf), and unit rows rounded to float32 moved the
    differences of nearly parallel rows (2e-4 relative at an offset of 3e5).

    One read from the device per call, at the end (a decision): the tensor inputs come from ``check_X`` unread
    (``allow_nonfinite``), and :func:`_alignment_kernel` queues the value and four flags (non-finite input, a zero
    row of X, of Y, a power past the range; a fifth, the value past the output dtype's range, is added here) without
    reading anything; one ``tolist()`` of the flags then refuses bad input in the words of the numpy path. Called on
    every training step, the call used to read the device eight times with ``normalize`` (six without: the extremes
    of X and of Y, each operand's zero rows, the largest exponent, the result's range), each read a wait for the
    device's queue to drain before the next kernel could be queued. Not reading at all would return NaN or inf for
    bad input without a word, which the project does not do; the one read comes after the forward pass is queued,
    so that it waits once, for the kernels of this value only.
    """
    import torch

    like = X if is_torch(X) else Y
    dtype = torch.promote_types(X.dtype, Y.dtype) if is_torch(X) and is_torch(Y) else like.dtype
    wide = torch.float32 if like.device.type == "mps" else torch.float64  # MPS has no float64
    given = X, Y
    if tuple(X.shape) != tuple(Y.shape):
        _refuse_nonfinite(given, caller)  # (in the order of the numpy path: finiteness first)
        raise IsotropyValueError(f"The 'Y' parameter of {caller} must have the shape of 'X' {tuple(X.shape)}. "
                                 f"Got {tuple(Y.shape)} instead.")
    # the squares of every number of the operands' dtypes lie in the computing dtype's normal range (float32 or
    # narrower data in float64): no scaling is needed for them to neither overflow nor underflow
    narrow = all(_squares_fit(A.dtype if is_torch(A) else torch.from_numpy(np.zeros(0, A.dtype)).dtype, wide)
                 for A in given)
    X, Y = (_as_tensor(A, name, wide, like.device, caller) for A, name in ((X, "X"), (Y, "Y")))
    value, L, checks = _alignment_kernel(X, Y, alpha=alpha, normalize=normalize, narrow=narrow)
    out = value.to(dtype)
    nonfinite, zero_x, zero_y, past = _read_flags(checks, out)
    if nonfinite:
        _refuse_nonfinite(given, caller)
    for zero, name in ((zero_x, "X"), (zero_y, "Y")):
        if zero:  # scaled_rows' own words, as the numpy path
            scaled_rows(np.zeros((1, 1)), caller=caller, name=name)
    if past:  # log2 of the mean, from the log2 of each power (L): its largest, and the mean relative to it
        top = float(L.max())
        log2_mean = top if top == math.inf else top + math.log2(float(torch.exp2(L - top).mean()))
        _refuse_mean(log2_mean, alpha, caller, dtype)
    return out


def _read_flags(checks, out) -> list[bool]:
    """``[non-finite input, zero row of X, of Y, past the range]`` from the kernel's ``checks`` (``[all finite, zero row
    of X, of Y, a power past the range]``, tensors or bools) and the value ``out``: the one read from the device of a
    torch alignment (:func:`_torch_alignment`)."""
    import torch

    checks = [*checks, torch.isinf(out.detach())]
    read = iter(torch.stack([c for c in checks if torch.is_tensor(c)]).tolist())
    finite, zero_x, zero_y, power, value = (bool(next(read)) if torch.is_tensor(c) else c for c in checks)
    return [not finite, zero_x, zero_y, power or value]


@functools.cache
def _squares_fit(dtype, wide) -> bool:
    """Whether the squares of every finite number of ``dtype``, times 2**64 or over it, are normal numbers of ``wide``."""
    import torch

    if not dtype.is_floating_point:
        return False
    got, into = torch.finfo(dtype), torch.finfo(wide)
    return (2 * math.log2(got.max) + 64 < math.log2(into.max)
            and 2 * math.log2(got.smallest_normal * got.eps) - 64 > math.log2(into.smallest_normal))


def _alignment_kernel(X, Y, *, alpha: float, normalize: bool, narrow: bool):
    """``(value, L, checks)`` of alignment of the float64 (float32 on MPS) tensors ``X``, ``Y``, read nowhere:
    ``value`` the mean of ``‖x − y‖^α`` (of the directions with ``normalize``) with its graph, ``L`` the log2 of each
    power (detached; −inf for a coinciding pair), and ``checks`` = ``[X and Y finite, X has a zero row
    (with normalize), Y has one, a power past the exponent's range]``, 0-dim bool tensors or ``False``. Input that is
    not finite gives NaN (never a coinciding pair's 0).

    ``narrow`` (X and Y hold float32 or narrower values): their squares and products are normal float64 numbers at
    any scale, and the differences of two of them are multiples of the smallest float32: computed as they are, without
    scaling. Otherwise (float64 values) as :func:`_power_sum`: each row (with ``normalize``) or each pair (without)
    brought to unit scale by a power of two (exact), then each difference by its own, so that neither the difference
    nor its squares overflow or underflow; ``‖x − y‖^α = 2^L``, ``L = α(k + j) + (α/2)·log2(s)``, ``s`` the squared
    norm of the scaled difference (with ``normalize`` the squared chord of the directions at that scale). With
    ``normalize`` the chord is ``(‖x − y‖² − (‖x‖ − ‖y‖)²) / (‖x‖‖y‖)``, ``‖x‖ − ‖y‖ = (x − y)·(x + y) / (‖x‖ + ‖y‖)``: the
    rows' exact directions, not rounded unit rows (see :func:`_power_sum`). The powers are summed relative to the
    largest ``L`` with tensor operations only, so that nothing waits for the device.
    """
    import torch

    n = X.shape[0]
    if narrow:
        D = X - Y
        s = (D * D).sum(dim=1)
        k = j = None
        if normalize:
            nx, ny = torch.linalg.vector_norm(X, dim=1), torch.linalg.vector_norm(Y, dim=1)
    else:
        with torch.no_grad():
            top_x, top_y = X.abs().amax(dim=1), Y.abs().amax(dim=1)
            if normalize:  # each row at unit scale by its own power of two (a chord has no scale)
                k = None
                (scale_x, more_x), (scale_y, more_y) = unit_scales(top_x), unit_scales(top_y)
            else:  # each pair by one (its power keeps its scale, k)
                k = exponents(torch.maximum(top_x, top_y))
                scale_x = scale_y = powers_of_two(-k)
        X, Y = X * scale_x[:, None], Y * scale_y[:, None]
        if normalize:  # rows of subnormal numbers: the rest of their way to unit scale (1 for every other row)
            X, Y = X * more_x[:, None], Y * more_y[:, None]
        D = X - Y
        with torch.no_grad():
            j = exponents(D.abs().amax(dim=1))
        D = D * powers_of_two(-j)[:, None]
        s = (D * D).sum(dim=1)
        if normalize:
            nx, ny = torch.linalg.vector_norm(X, dim=1), torch.linalg.vector_norm(Y, dim=1)
    if normalize:
        nxy = nx * ny
        radial = ((D * (X + Y)).sum(dim=1)) / (nx + ny)  # (‖x‖ − ‖y‖), times 2**-j when scaled
        s = (s - radial * radial).clamp(min=0.0) / nxy
        k = None  # a chord has no scale: ‖x̂ − ŷ‖^α = 2^(αj)·s^(α/2)
    with torch.no_grad():  # (nx·ny neither overflows nor underflows for finite rows, scaled or not)
        checks = ([torch.isfinite(nxy).all(), (nx == 0).any(), (ny == 0).any()] if normalize else
                  [torch.isfinite(s).all(), False, False])
    # a pair coincides where s is exactly 0 (a NaN is not 0: it would not be averaged in as a coinciding pair); its
    # power is 0 with the gradient 0 (a subgradient): for α < 1 the norm's 0 times the power's infinite slope gave
    # a NaN gradient to both rows of an identical pair
    apart = s != 0
    log_s = torch.log2(torch.where(apart, s, 1.0))
    whole = None if j is None else (j if k is None else k + j)
    if whole is None:
        L = (alpha / 2) * log_s
    elif alpha > _LOG_POWER:  # α·(k + j) and α·log2(s) may each overflow (to inf and −inf: their sum NaN)
        L = alpha * (whole + log_s / 2)
    else:  # the integer part apart: exact for α = 1, 2, and the log's rounding stays relative to log2(s)
        L = alpha * whole + (alpha / 2) * log_s
    L = torch.where(apart, L, -math.inf)  # (its power exp2(−inf) is 0, and so is its gradient)
    with torch.no_grad():
        top = L.max()
        checks.append(top == math.inf)
        # the powers relative to 2**W, W the whole part of the largest L (0 when every pair coincides, or every
        # power is past float64's exponent: a sum of 0), each power below 2
        reach = 2 * (float_layout(X.dtype)[2] - 1)  # two normal powers of two: 2**±2044 in float64
        W = torch.where(torch.isfinite(top), torch.floor(top), 0.0).clamp(-reach, reach)
        half = torch.trunc(W / 2)
        powers = powers_of_two(torch.stack([half, W - half]))
    mean = torch.exp2(L - W).sum() / n  # in [1/n, 2) (0 when every pair coincides): the mean is mean · 2**W
    # times 2**W as two powers of two of at most 2**±1022 each (float64): a result past the range is inf or 0, as the
    # numpy path's ldexp (inf is refused; 0 is the rounding of a mean below the range, as 2**−2044 times less than 2)
    value = mean * powers[0] * powers[1]
    return value, L.detach(), checks


def _refuse_nonfinite(given, caller: str) -> None:
    """Refuse a tensor among ``given`` (X, Y) that holds a NaN or an inf, in ``check_X``'s words, placing it."""
    for A, name in zip(given, ("X", "Y")):
        if is_torch(A):
            check_X(A, caller=caller, name=name, min_samples=1)


def _as_tensor(A, name: str, dtype, device, caller: str):
    """``A`` (a checked tensor or numpy array) as a tensor of ``dtype`` on ``device``, a tensor with its graph.

    A numpy array whose values ``dtype`` cannot hold (float32 on MPS, for a float64 array) is refused naming it, not
    cast to inf or to 0.
    """
    import torch

    if is_torch(A):
        return A.to(dtype)
    if dtype != torch.float64 and A.size:
        info = torch.finfo(dtype)
        magnitude = np.abs(A)
        top, low = float(magnitude.max()), float(np.min(magnitude, initial=np.inf, where=magnitude > 0))
        if top > info.max or low < info.tiny:
            bad = top if top > info.max else low
            raise IsotropyValueError(f"The '{name}' parameter of {caller} must have values that "
                                     f"{str(dtype).replace('torch.', '')} holds (normal magnitudes from {info.tiny:.3g} "
                                     f"to {info.max:.3g}), the dtype of the computation on {device.type}. Got "
                                     f"{bad:.3g} instead.")
    return torch.as_tensor(np.asarray(A), device=device).to(dtype)


def _dask_alignment(X, Y, *, alpha: float, normalize: bool, caller: str) -> float:
    """:func:`alignment` of dask arrays (either may be numpy): checked, projected and summed block by block of rows, by
    the kernel of the in-memory path (:func:`_power_sum`), so that both give one value, and refuse the same input in
    the same words: the problems of the blocks come back to the host and are raised in the in-memory order (a NaN in
    'X', one in 'Y', a zero row of 'X', one of 'Y'), at the first row in each, whichever task finishes first."""
    import dask
    import dask.array as da

    from isotropy.distributed._graph import check_dask_shape, compute

    X = check_dask_shape(da.asarray(X), caller=caller, min_samples=1)
    Y = check_dask_shape(da.asarray(Y), caller=caller, name="Y", min_samples=1)
    if X.shape != Y.shape:
        raise IsotropyValueError(f"The 'Y' parameter of {caller} must have the shape of 'X' {X.shape}. "
                                 f"Got {Y.shape} instead.")
    X = X.rechunk({1: -1})  # whole rows per block: each is projected as in memory
    Y = Y.rechunk(X.chunks)
    block = dask.delayed(_alignment_block, pure=True)
    starts = np.cumsum((0, *X.chunks[0]))
    parts = compute(*[block(x, y, alpha, normalize, int(start))
                      for x, y, start in zip(X.to_delayed().ravel(), Y.to_delayed().ravel(), starts)])
    for index, name in enumerate(("X", "Y")):
        found = next((part[index] for part in parts if part[index] is not None), None)
        if found is not None:
            raise IsotropyValueError(f"The '{name}' parameter of {caller} must contain only finite values. Got "
                                     f"{found.at()} instead.")
    for index, name in enumerate(("X", "Y")):
        if any(part[2 + index] for part in parts):  # unit_rows' own words, as in memory
            unit_rows(np.zeros((1, 1)), caller=caller, name=name)
    top, total = functools.reduce(_merge_power_sums, (part[4] for part in parts), (-np.inf, 0.0))
    return _mean_of_powers(top, total, X.shape[0], alpha, caller)


# float64 entries of each operand converted at a time by a dask block of alignment (8 MiB): the float64 copies and
# the temporaries of _power_sum for a whole 64 MiB float32 chunk peaked near 10 times the chunk, which killed
# workers of 512 MiB (a user trial)
_ALIGNMENT_PIECE = 2**20


def _alignment_block(X, Y, alpha: float, normalize: bool, start: int):
    """``(NaN/inf of X, of Y, X has a zero row, Y has one, (top, total))`` of one block of rows starting at row
    ``start``, a piece of ``_ALIGNMENT_PIECE`` entries at a time; the sum is left out when the block has a problem."""
    from isotropy._utils.validation import NonFinite, first_nonfinite

    step = max(1, _ALIGNMENT_PIECE // max(1, X.shape[1]))
    bad, zero, sums = [None, None], [False, False], (-np.inf, 0.0)
    for s in range(0, X.shape[0], step):
        pieces = [np.asarray(A[s:s + step], dtype=np.float64) for A in (X, Y)]
        for i, A in enumerate(pieces):
            found = first_nonfinite(A) if bad[i] is None else None
            if found is not None:  # the first of the block: its pieces are scanned in order
                bad[i] = NonFinite(start + s + found.row, found.column, found.value)
            zero[i] = zero[i] or bool(normalize and A.size and (np.abs(A).max(axis=1) == 0).any())
        if any(b is not None for b in bad) or any(zero):
            continue  # (the later pieces may still hold the first problem of the other operand)
        sums = _merge_power_sums(sums, _power_sum(*pieces, alpha, normalize=normalize))
    if any(b is not None for b in bad) or any(zero):
        return bad[0], bad[1], zero[0], zero[1], (-np.inf, 0.0)
    return None, None, False, False, sums


# α above which m**α of a mantissa m in [0.5, 1) may underflow: the power goes through log2 instead
_LOG_POWER = 512.0


def _power_sum(X, Y, alpha: float, *, normalize: bool = False) -> tuple[float, float]:
    """``(top, total)`` with ``Σ_i ‖x_i − y_i‖^α = total · 2**top`` over the rows of float64 arrays ``X``, ``Y``
    (``(-inf, 0.0)`` when every pair coincides), without overflow or underflow at any scale.

    Each pair of rows is brought to unit scale by a power of two of its own (exact) before the difference, so
    that ``x − y`` does not overflow (rows near 1e308); the difference by its own again, so that its norm
    neither overflows nor underflows; ``‖x − y‖ = m · 2**q``, ``m`` in [0.5, 1), and ``‖x − y‖^α = m^α · 2**(αq)``
    summed relative to the largest ``αq``. At a plain scale the value is the plain ``Σ ‖x − y‖^α`` to rounding
    (the differences are the same floats, only multiplied by powers of two).

    ``normalize``: ``‖x̂ − ŷ‖`` of the rows' directions, each row first scaled by a power of two to a norm near 1
    (exact; a zero row refused naming X or Y), as ``(‖x − y‖² − (‖x‖ − ‖y‖)²) / (‖x‖‖y‖)`` with
    ``‖x‖ − ‖y‖ = (x − y)·(x + y) / (‖x‖ + ‖y‖)``: the rounded unit rows x / ‖x‖ (about 1e-16 off per entry) put an
    absolute error near 1e-16 on the distance of nearly parallel rows, 1e-8 relative at 1e-9 of the norms.
    """
    if X.shape[0] == 0:
        return -np.inf, 0.0
    if normalize:
        X, Y = scaled_rows(X, caller="alignment", name="X"), scaled_rows(Y, caller="alignment", name="Y")
    k = np.frexp(np.maximum(np.abs(X).max(axis=1), np.abs(Y).max(axis=1)))[1][:, None]
    X, Y = np.ldexp(X, -k), np.ldexp(Y, -k)
    D = X - Y
    j = np.frexp(np.abs(D).max(axis=1))[1][:, None]
    D = np.ldexp(D, -j)
    if normalize:
        nx, ny = np.linalg.norm(X, axis=1), np.linalg.norm(Y, axis=1)
        radial = np.einsum("ij,ij->i", D, X + Y) / (nx + ny)  # (‖x‖ − ‖y‖)·2**-j
        m, q = np.frexp(np.sqrt(np.maximum(np.square(D).sum(axis=1) - radial * radial, 0.0) / (nx * ny)))
    else:
        m, q = np.frexp(np.linalg.norm(D, axis=1))
    apart = m > 0
    if not apart.any():
        return -np.inf, 0.0
    whole = (q + j[:, 0] + (0 if normalize else k[:, 0]))[apart].astype(np.float64)  # a chord has no scale
    m = m[apart]
    with np.errstate(over="ignore"):  # past float64's exponent: ±inf, handled below and by _mean_of_powers
        if alpha > _LOG_POWER:
            # α·whole and α·log2(m) may each overflow (to inf and −inf: their sum NaN); log2 of the norm first
            exponent, powers = alpha * (whole + np.log2(m)), np.ones_like(m)
        else:
            exponent, powers = alpha * whole, m ** alpha
    top = float(exponent.max())
    if top == -np.inf:  # every power underflows float64's exponent itself: a sum of 0
        return -np.inf, 0.0
    if top == np.inf:  # the mean overflows: _mean_of_powers refuses it
        return np.inf, 1.0
    return top, float(np.sum(powers * np.exp2(exponent - top)))


def _merge_power_sums(a, b):
    """Two ``(top, total)`` of :func:`_power_sum` as one."""
    if a[0] < b[0]:
        a, b = b, a
    if b[0] == -np.inf:
        return a
    return a[0], a[1] + b[1] * (1.0 if b[0] == a[0] else float(np.exp2(b[0] - a[0])))  # (inf − inf: NaN)


def _mean_of_powers(top: float, total: float, n_samples: int, alpha: float, caller: str) -> float:
    """``total · 2**top / n_samples`` as a float; refused in one line when that mean itself overflows float64."""
    if total == 0.0:
        return 0.0
    if math.isfinite(top):
        whole = math.floor(top)
        try:
            return math.ldexp(total / n_samples * 2.0 ** (top - whole), whole)
        except OverflowError:
            pass
    _refuse_mean(top + math.log2(total / n_samples), alpha, caller, "float64")


def _refuse_mean(log2_mean: float, alpha: float, caller: str, dtype) -> None:
    """Refuse a mean ``2**log2_mean`` of ``‖x − y‖^α`` beyond ``dtype``'s range, its size said readably."""
    dtype = str(dtype).replace("torch.", "")
    decimal = log2_mean * math.log10(2)
    if not math.isfinite(decimal):  # α·log2‖x − y‖ itself past float64: no exponent to show
        size = "a mean past 10^(1.8e308), whose exponent itself overflows float64"
    elif abs(decimal) < 1e6:
        size = f"a mean of about 1e{decimal:.0f}"
    else:  # an exponent of 300 digits said as a power of ten of a power of ten
        size = f"a mean of about 10^({decimal:.3g})"
    wider = " (or pass float64 tensors)" if dtype != "float64" else ""
    raise IsotropyValueError(
        f"The 'X' and 'Y' parameters of {caller} must have a mean ‖x − y‖^α inside {dtype}'s range. Got {size} "
        f"(alpha={alpha:g}) instead; rescale X and Y, or take a smaller alpha{wider}.")


def uniformity(X, *, t: float = 2, normalize: bool = True):
    """Uniformity: the log of the mean Gaussian potential ``exp(−t ‖x_i − x_j‖²)`` over all pairs ``i < j``.

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        The embeddings, one sample per row.
    t : float, default=2
        The potential's scale (the paper's default is 2).
    normalize : bool, default=True
        Project every row onto the unit sphere first, as the paper's definition assumes.

    Returns
    -------
    unif : float or torch.Tensor
        ``≤ 0``; more negative is more uniform, 0 when all rows coincide. Python float for numpy
        input, and for a dask array (every pair, by tiles: :func:`isotropy.distributed.uniformity`);
        a differentiable 0-dim tensor for torch input.

    Notes
    -----
    .. math:: \\mathcal{L}_{\\text{uniform}} = \\log \\frac{2}{n(n-1)} \\sum_{i<j}
              e^{-t \\lVert f(x_i) - f(x_j) \\rVert_2^2}

    Exact over all ``n(n − 1)/2`` pairs, as the paper's reference code (``torch.pdist``). numpy
    input: float64 tiles on and above the diagonal of the Gram matrix (each pair once, bounded
    memory). Without ``normalize`` the rows less their mean, ``‖x − y‖² = ‖x‖² + ‖y‖² − 2x·y``
    clipped at 0; with it the chord of the rows' exact directions, from the rows scaled by powers
    of two (not rounded to x / ‖x‖) less their mean: its rounding is about 1e-16 of the rows'
    spread, so that nearly collapsed rows keep their tiny distances (to relative precision where
    the rows' lengths are close, as in a cloud about an offset). The mean of the potentials is
    taken as ``m + log1p(mean expm1(v − m))``, ``m`` the largest exponent, where it lies above ½
    (``m + log mean exp(v − m)`` below), so that a large ``t`` does not underflow to ``log 0`` and
    a value just below 0 is not lost to the rounding of a mean near 1. Torch input is computed
    with one differentiable ``torch.pdist``, as in training, in float64 (float32 on MPS) whatever
    its dtype, by the same formulas, and refused beyond float64's range as numpy input; the value
    comes back in the input's dtype (float32 for float16, bfloat16 and integer tensors). A tensor
    is read from its device once per call, to refuse bad input after the value is queued.

    References
    ----------
    .. [1] T. Wang and P. Isola, "Understanding Contrastive Representation Learning through
       Alignment and Uniformity on the Hypersphere", ICML 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy.metrics.contrastive import uniformity
    >>> X = np.array([[1.0, 0.0], [-1.0, 0.0]])       # antipodal: squared distance 4
    >>> uniformity(X, t=2)
    -8.0
    """
    caller = "uniformity"
    check_scalar(t, "t", caller=caller, kind=numbers.Real, low=0, closed="neither")
    check_bool(normalize, "normalize", caller=caller)
    if is_dask(X):  # a dask array: every pair once, by tiles on the dask scheduler (the same value)
        from isotropy import distributed

        return distributed.uniformity(X, t=t, normalize=normalize)
    # a tensor is checked for NaN and inf by the torch path itself, in its one read from the device
    X = check_X(X, caller=caller, allow_nonfinite=is_torch(X))
    t = float(t)
    if is_torch(X):
        return _torch_uniformity(X, t=t, normalize=normalize, caller=caller)
    if normalize:  # the rows' exact directions, less their mean, for the chords (sphere_rows)
        P = sphere_rows(scaled_rows(X, caller=caller))
    else:  # centred (the distances do not depend on it; far from the origin the expansion cancelled)
        X = np.asarray(X, dtype=np.float64)
        P = potential_rows(X, centre=X.mean(axis=0), caller=caller)
    # every pair once, in tiles of _BLOCK_ROWS x _BLOCK_COLS on and above the diagonal (the dask tiles' kernel)
    return log_mean_exp(pair_potentials(P, P, t, diagonal=True, rows=_BLOCK_ROWS, cols=_BLOCK_COLS))


def _torch_uniformity(X, *, t: float, normalize: bool, caller: str):
    """:func:`uniformity` of a tensor, differentiable, with one read from the device (as :func:`_torch_alignment`).

    All in float64 (differentiable), as numpy: in float32 the squared distances of rows near 1e25 overflowed (-inf for
    -4.159) and unit rows rounded to float32 moved the distances of nearly parallel rows (4e-5 relative at an offset
    of 3e5); the log-mean-exp in float64 too: exp(−t·d²) of nearly collapsed rows (d² ~ 1e-8) rounded to 1 in float32
    and the value read exactly 0 ("all rows coincide"). The checks (X finite, a zero row, squared distances past
    float64's range, a value past the output dtype's) are queued beside the value and read once at the end; they used
    to be read back six times per call (check_X's extremes, the zero rows, the log-mean-exp's shift and its choice of
    form, the output's range).
    """
    import torch

    wide = torch.float32 if X.device.type == "mps" else torch.float64  # MPS has no float64
    W = X.to(wide)
    with torch.no_grad():
        finite = torch.isfinite(W).all()  # (one pass over the rows: the pairs cost n / 2 times more)
    if normalize:  # the chords of the exact directions, as numpy (sphere_rows)
        Z, zero = scaled_rows_queued(W)
        B, _, h, norms = sphere_rows(Z)
        i, j = torch.triu_indices(B.shape[0], B.shape[0], 1, device=B.device)  # pdist's order of the pairs
        ni, nj = norms.index_select(0, i), norms.index_select(0, j)
        radial = (h.index_select(0, i) - h.index_select(0, j)) / (ni + nj)  # ‖a‖ − ‖b‖
        sq = ((torch.pdist(B, p=2).pow(2) - radial * radial) / (ni * nj)).clamp(min=0.0)
        far = False
    else:  # centred (the distances do not depend on it; far from the origin the expansion cancelled)
        zero = False
        B = W - W.detach().mean(dim=0)
        with torch.no_grad():  # squared norms past float64's range, or their pairs' sums: refused as numpy refuses
            squares = (B * B).sum(dim=1)
            far = ~(torch.isfinite(squares).all() & torch.isfinite(2.0 * squares.max()))
        sq = torch.pdist(B, p=2).pow(2)
    value = log_mean_exp_torch(-t * sq)
    out = value.to(X.dtype)
    # narrowed to float32 (or less): an -inf that float64 did not give is refused
    narrowed = (torch.isinf(out.detach()) & ~torch.isinf(value.detach())) if out.dtype != value.dtype else False
    checks = [finite, zero, far, narrowed]
    read = iter(torch.stack([c for c in checks if torch.is_tensor(c)]).tolist())
    finite, zero, far, narrowed = (bool(next(read)) if torch.is_tensor(c) else c for c in checks)
    if not finite:
        check_X(X, caller=caller)  # its words, placing the first NaN or inf
    if zero:
        scaled_rows(np.zeros((1, 1)), caller=caller)  # scaled_rows' own words
    if far:
        potential_rows(W.detach(), centre=W.detach().mean(dim=0), caller=caller)  # its words
    if narrowed:
        dtype = str(X.dtype).replace("torch.", "")
        raise IsotropyValueError(
            f"The 'X' parameter of {caller} must have a uniformity inside {dtype}'s range. Got about "
            f"{float(value.detach()):.3g} (t={t:g}) instead; rescale X, take a smaller t, or pass float64 tensors.")
    return out
