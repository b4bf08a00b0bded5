"""Kernels of the contrastive metrics, in memory and on dask: rows projected onto the unit sphere, and the
log-mean-exp of uniformity's Gaussian potentials over the pairs of two blocks of rows."""

from __future__ import annotations

import numpy as np

from isotropy._utils.backend import is_torch
from isotropy._utils.errors import IsotropyValueError

__all__ = ["EMPTY_SUM", "exponents", "float_layout", "log_mean_exp", "log_mean_exp_torch", "merge_sums",
           "pair_potentials", "potential_rows", "powers_of_two", "row_exponents", "rows_times_power_of_two",
           "scaled_rows", "scaled_rows_queued", "sphere_rows", "unit_rows", "unit_scales"]


def unit_rows(X, *, caller: str, name: str = "X"):
    """``x / ‖x‖`` row by row: a torch tensor stays one (differentiable), anything else becomes float64 numpy.

    Each row is first brought to unit scale by a power of two of its own largest entry (exact), so that
    ``‖x‖`` neither overflows (rows near 1e155 and above) nor underflows to 0 (rows near 1e-160 and below);
    at any other scale the result is the plain ``x / ‖x‖``, bit for bit. A zero row has no direction on the
    sphere: refused in one line naming ``caller``'s parameter ``name``.
    """
    X, top = _row_tops(X, caller=caller, name=name)
    if is_torch(X):
        X = rows_times_power_of_two(X, -row_exponents(top))
        return X / X.norm(dim=1, keepdim=True)
    X = np.ldexp(X, -np.frexp(top)[1])
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def _row_tops(X, *, caller: str, name: str):
    """``(X, max |x| of each row as a column)``, X a tensor or float64 numpy; a zero row refused (no direction)."""
    if is_torch(X):
        top = X.detach().abs().amax(dim=1, keepdim=True)
        zero = bool((top == 0).any())
    else:
        X = np.asarray(X, dtype=np.float64)
        top = np.abs(X).max(axis=1, keepdims=True) if X.size else np.ones((X.shape[0], 1))
        zero = bool((top == 0).any())
    if zero:
        raise IsotropyValueError(f"The '{name}' parameter of {caller} has a zero row, which has no direction on "
                                 f"the sphere: expected non-zero rows (or normalize=False).")
    return X, top


_HALF_SQRT2 = float(np.sqrt(0.5))  # a norm m·2**e, m in [0.5, 1), is brought to m or 2m: in [1/√2, √2)


def scaled_rows(X, *, caller: str, name: str = "X"):
    """The rows of ``X`` each multiplied by a power of two (exact: the direction is X's, not a rounded x / ‖x‖) to a
    norm in [1/√2, √2), as float64 numpy; a zero row refused as by :func:`unit_rows`. (A tensor's rows:
    :func:`scaled_rows_queued`, which reads nothing from the device.)"""
    X, top = _row_tops(np.asarray(X, dtype=np.float64), caller=caller, name=name)
    X = np.ldexp(X, -np.frexp(top)[1])
    m, e = np.frexp(np.linalg.norm(X, axis=1, keepdims=True))
    return np.ldexp(X, -np.where(m < _HALF_SQRT2, e - 1, e))


def scaled_rows_queued(X):
    """:func:`scaled_rows` of a float64 (or float32) tensor without reading it: ``(rows, zero)``, ``zero`` a 0-dim bool
    tensor (a row of zeros, to be refused by the caller after its one read from the device), the rows each multiplied
    by powers of two built from their exponents' bits (:func:`powers_of_two`) to a norm in [1/√2, √2), differentiably.
    A row that is not finite stays so (its norm inf or NaN)."""
    import torch

    with torch.no_grad():
        first, more = unit_scales(X.abs().amax(dim=1))
    X = X * first[:, None] * more[:, None]  # the largest entry in [0.5, 1) (2**-52 and up for a subnormal row)
    with torch.no_grad():
        norms = torch.linalg.vector_norm(X, dim=1)
        e = exponents(norms)  # norms · 2**-e in [0.5, 1), then [1/√2, √2)
        e = torch.where(norms * powers_of_two(-e) < _HALF_SQRT2, e - 1, e)
        zero = (norms == 0).any()
    return X * powers_of_two(-e)[:, None], zero


def sphere_rows(Z, *, centre=None):
    """``(Z − c, ‖Z − c‖², h, ‖Z‖)`` of :func:`scaled_rows` ``Z``, ``h = ‖z‖² − ‖c‖²`` computed as ``‖z − c‖² + 2c·(z − c)``,
    ``c`` the mean of Z's rows (``centre``: given, as for a dask block); a torch tensor with its graph (``c`` detached).

    :func:`pair_potentials` takes the chord of the directions of two such rows from the identity
    ``‖ẑ − ŵ‖² = (‖z − w‖² − (‖z‖ − ‖w‖)²) / (‖z‖‖w‖)``, ``‖z‖ − ‖w‖ = (h_z − h_w) / (‖z‖ + ‖w‖)``, exact for any ``c``.
    Its rounding is about 1e-16 of the rows' squared spread about ``c``, not of 1: for nearly collapsed rows, of the
    chord itself. The rounded unit rows x / ‖x‖ (about 1e-16 off in each entry) and the expansion ``2 − 2x̂·ŷ`` of
    their Gram matrix erred by about 1e-16 absolute: all of a squared chord of 1e-18 (a user trial). Rows of one
    direction whose lengths differ keep that absolute error (their ``‖z − w‖²`` is mostly the radial term).
    """
    if is_torch(Z):
        c = Z.detach().mean(dim=0) if centre is None else centre
        B = Z - c
        q = (B * B).sum(dim=1)
        return B, q, q + 2.0 * (B @ c), Z.norm(dim=1)
    c = Z.mean(axis=0) if centre is None else centre
    B = Z - c
    q = np.square(B).sum(axis=1)  # pairwise summation: einsum's running sums lost a few ulps more on wide rows
    return B, q, q + 2.0 * (B @ c), np.linalg.norm(Z, axis=1)


def row_exponents(top):
    """``e`` with ``top · 2**-e`` in about [0.5, 1) for the tensor ``top`` of non-negative (detached) magnitudes, 0 where
    ``top`` is 0; in top's float dtype. From log2 (frexp is not on every device): where log2 rounds across a power of two
    the scaled value is 1 or a hair above, never more than 2."""
    import torch

    return torch.where(top > 0, torch.floor(torch.log2(top)) + 1, torch.zeros_like(top))


def rows_times_power_of_two(X, e):
    """``X · 2**e``, ``e`` a (detached) float tensor of exponents broadcast over X's rows (a column, or per row as
    ``(n_rows,)``): exact for normal results and differentiable in X.

    Applied in two halves so that neither factor overflows (a subnormal row's 2**1029). The exponents go in as X's
    float dtype: with integer exponents torch's ldexp backward computes 2**e in integers, 0 for every e < 0, and the
    gradient of every row with an entry of magnitude 1 or more was 0.
    """
    import torch

    e = e.reshape(-1, 1) if e.dim() == 1 else e
    half = torch.floor(e / 2)
    return torch.ldexp(torch.ldexp(X, half.to(X.dtype)), (e - half).to(X.dtype))


def exponents(top):
    """``e`` with ``top · 2**-e`` in [0.5, 1) for the detached tensor ``top`` of non-negative magnitudes, read from the
    bits of ``top`` (exact, on any device): clamped to the exponents of normal powers of two (``e`` ≥ −1022 in
    float64, so that a subnormal ``top`` is brought to at least 2**-52; 0 gives −1022 and stays 0; inf and NaN give
    the largest and stay what they are)."""

    bits, mantissa, bias = float_layout(top.dtype)
    biased = (top.view(bits) >> mantissa) & (2 * bias + 1)
    return (biased - (bias - 1)).clamp(min=-(bias - 1), max=bias - 1).to(top.dtype)


def unit_scales(top):
    """Two powers of two whose product brings rows of largest magnitudes ``top`` to [0.5, 1): the second is 1 except
    for a row of subnormal numbers (whose power, up to 2**1073, is past float64's range). Left below 2**-52, such a row
    and a unit row of nearly its direction lost their chord to the cancellation of ``‖x − y‖² − (‖x‖ − ‖y‖)²`` (0.24
    relative)."""
    first = powers_of_two(-exponents(top))
    return first, powers_of_two(-exponents(top * first))


def powers_of_two(e):
    """``2**e`` of the detached tensor ``e`` of whole numbers from −(bias − 1) to bias − 1 (normal powers of two of
    ``e``'s float dtype), built from their bits: exact on any device, as ``exp2`` or ``pow`` need not be."""

    bits, mantissa, bias = float_layout(e.dtype)
    return ((e.to(bits) + bias) << mantissa).view(e.dtype)


def float_layout(dtype):
    """``(integer dtype of the same width, mantissa bits, exponent bias)`` of float64 or float32."""
    import torch

    return (torch.int64, 52, 1023) if dtype == torch.float64 else (torch.int32, 23, 127)


EMPTY_SUM = (-np.inf, 0.0, 0.0, 0)  # (shift, Σ exp(v − shift), Σ expm1(v − shift), pairs) of no pairs


def merge_sums(a, b):
    """Two ``(shift, Σ exp(v − shift), Σ expm1(v − shift), pairs)`` as one: the larger shift, the other rescaled to it.

    With δ the (non-positive) change of b's shift, ``Σ exp(v − shift)`` scales by exp(δ) and
    ``Σ expm1(v − shift) = pairs · expm1(δ) + exp(δ) · Σ expm1(v − b's shift)``: terms of one sign, so that each sum
    keeps its relative precision through any order of merges. A shift of −inf holds pairs whose potentials all
    underflow (each adds exp 0, expm1 −1).
    """
    if a[0] < b[0]:
        a, b = b, a
    shift, total, below, pairs = a
    if not b[3]:
        return a
    if b[0] == -np.inf:  # (a's shift too: all potentials 0 so far, the sums stay 0 relative to no shift)
        return shift, total, below - b[3] if shift > -np.inf else 0.0, pairs + b[3]
    delta = b[0] - shift
    scale = float(np.exp(delta))
    return shift, total + b[1] * scale, below + b[3] * float(np.expm1(delta)) + b[2] * scale, pairs + b[3]


def log_mean_exp(sums) -> float:
    """``log mean exp(v)`` from :func:`merge_sums`' four numbers: ``shift + log1p(mean expm1(v − shift))`` where the mean
    of ``exp(v − shift)`` is above ½, ``shift + log(mean exp(v − shift))`` otherwise.

    Nearly collapsed rows have potentials all just below 1 and a value just below 0: the log of their mean lost it
    to the mean's rounding near 1 (4.5e-6 relative at an offset of 3e5; all of it once exp rounds to 1), where
    ``expm1`` keeps each term's distance from 1. At ½ and below the plain form is exact and ``1 + mean expm1``
    would not be (a few pairs far above the rest). The shift (≤ 0) and the log have one sign: no cancellation.
    """
    shift, total, below, pairs = sums
    if shift == -np.inf:
        return -np.inf
    if total > 0.5 * pairs:
        return float(shift + np.log1p(below / pairs))
    return float(shift + np.log(total / pairs))


def log_mean_exp_torch(v):
    """:func:`log_mean_exp` of the 1-d tensor ``v`` (one potential's exponent per pair), differentiable and read
    nowhere: the shift is detached (the value does not depend on it), and the form is chosen on the detached sums, as
    numpy's slabs do, by ``torch.where`` (both forms are computed: two passes over the pairs where one did, against a
    read of the device per choice). Every potential 0 (the shift −inf) gives −inf with zero gradients."""
    import torch

    count = v.numel()
    with torch.no_grad():
        shift = v.max()
        some = torch.isfinite(shift)  # (−inf: every potential underflows; NaN and inf are refused before)
        shift = torch.where(some, shift, 0.0)
    w = v - shift
    total = torch.exp(w).sum()
    with torch.no_grad():
        near = total > 0.5 * count  # mostly near the shift: their distance from it kept by expm1
    # each form given a harmless argument where it is not taken, so that its gradient there is 0, not 0 · inf
    close = torch.log1p(torch.where(near, torch.expm1(w).sum() / count, 0.0))
    plain = torch.log(torch.where(near | ~some, 1.0, total / count))
    return torch.where(some, shift + torch.where(near, close, plain), -np.inf)


def pair_potentials(P, Q, t: float, *, diagonal: bool, rows: int = 1024, cols: int = 8192):
    """:func:`merge_sums`' ``(shift, Σ exp(v − shift), Σ expm1(v − shift), pairs)`` of ``v = −t‖a − b‖²`` over the pairs
    of the rows of P and Q.

    ``P = (A, qa)``: float64 rows and their squared norms (:func:`potential_rows`), ``‖a − b‖² = ‖a‖² + ‖b‖² − 2a·b``
    clipped at 0; ``P = (A, qa, ha, na)``: :func:`sphere_rows`, ``‖a − b‖²`` the chord of their directions. A
    ``rows × cols`` slab at a time. ``diagonal``: P is Q, and only its pairs i < j count. The shift (the largest
    exponent) keeps a large ``t`` from underflowing to ``log 0``; the expm1 sum keeps potentials just below 1 exact.
    """
    A, qa = P[0], P[1]
    B, qb = Q[0], Q[1]
    chord = len(P) == 4
    out = EMPTY_SUM
    for i0 in range(0, A.shape[0], rows):
        i1 = min(i0 + rows, A.shape[0])
        for j0 in range(i0 if diagonal else 0, B.shape[0], cols):  # on a diagonal block: on and above it
            j1 = min(j0 + cols, B.shape[0])
            v = A[i0:i1] @ B[j0:j1].T  # in place from here: each pass over a slab is one pass over memory
            v *= -2.0
            v += qa[i0:i1, None]
            v += qb[None, j0:j1]  # ‖a − b‖²
            if chord:
                na, nb = P[3][i0:i1], Q[3][j0:j1]
                radial = np.subtract.outer(P[2][i0:i1], Q[2][j0:j1])
                radial /= np.add.outer(na, nb)  # ‖a‖ − ‖b‖
                radial *= radial
                v -= radial
                v /= np.multiply.outer(na, nb, out=radial)  # the chord of the directions
            np.maximum(v, 0.0, out=v)
            with np.errstate(over="ignore"):  # t·‖a − b‖² past float64: −inf, a potential of exp(−inf) = 0
                v *= -t
            invalid = None
            if diagonal and j0 < i1:  # the slab crosses the diagonal: keep j > i only
                invalid = np.arange(j0, j1)[None, :] <= np.arange(i0, i1)[:, None]
                v[invalid] = -np.inf
            pairs = v.size - (0 if invalid is None else int(invalid.sum()))
            if not pairs:
                continue
            top = float(v.max())
            if top == -np.inf:  # every potential underflows (t·‖a − b‖² past float64)
                out = merge_sums(out, (-np.inf, 0.0, 0.0, pairs))
                continue
            v -= top
            total = float(np.exp(v).sum())  # the masked pairs add exp(−inf) = 0
            if total > 0.5 * pairs:  # potentials mostly near the shift: their distance from it kept by expm1
                np.expm1(v, out=v)
                if invalid is not None:
                    v[invalid] = 0.0
                below = float(v.sum())
            else:  # at least half of each term is its −1: Σ (exp − 1) as exact as the sum of exp
                below = total - pairs
            out = merge_sums(out, (top, total, below, pairs))
    return out


def potential_rows(X, *, centre=None, caller: str):
    """Float64 rows of ``X`` for :func:`pair_potentials` and their squared norms, less ``centre`` (``None``: as they are).

    The pairs' ``‖x‖² + ‖y‖² − 2x·y`` of rows far from the origin cancel the offset: uniformity without
    normalisation read −0.63 for −4.34 at an offset of 1e8 (a user trial); its distances do not depend on a
    translation, so the rows are centred first. Squared norms beyond float64's range (the pairs' sums gave NaN) are
    refused: the value depends on the scale there. A torch tensor (its caller's float64 copy) stays one, with its
    graph, and is refused alike; its squared norms come back detached.
    """
    if is_torch(X):
        B = X if centre is None else X - centre
        sq = (B.detach() * B.detach()).sum(dim=1)
        _refuse_far_rows(sq.cpu().numpy(), lambda: float(B.detach().abs().max()), centred=centre is not None,
                         caller=caller)
        return B, sq
    B = np.asarray(X, dtype=np.float64)
    if centre is not None:
        B = B - centre
    with np.errstate(over="ignore", invalid="ignore"):
        sq = np.einsum("ij,ij->i", B, B)
    _refuse_far_rows(sq, lambda: float(np.abs(B).max()), centred=centre is not None, caller=caller)
    return B, sq


def _refuse_far_rows(sq: np.ndarray, top, *, centred: bool, caller: str) -> None:
    """Refuse squared norms ``sq`` (float64) beyond float64's range, or whose pairs' sums are; ``top()`` gives the
    largest ``|x|`` for the message."""
    with np.errstate(over="ignore", invalid="ignore"):
        if not np.isfinite(sq).all() or (sq.size and not np.isfinite(2.0 * sq.max())):
            where = " from their mean" if centred else ""
            raise IsotropyValueError(f"The 'X' parameter of {caller} has rows whose squared distances exceed float64's "
                                     f"range (coordinates{where} up to {top():.3g}); with normalize=False the value "
                                     f"depends on the scale: rescale X, or use normalize=True.")
