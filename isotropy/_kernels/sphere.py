"""Kernels of the contrastive metrics, in memory and on dask: rows projected onto the unit sphere, and the
log-sum-exp of uniformity's Gaussian potentials over the pairs of two blocks of rows."""

from __future__ import annotations

import numpy as np

from isotropy._utils.backend import is_torch
from isotropy._utils.errors import IsotropyValueError

__all__ = ["EMPTY_SUM", "merge_sums", "pair_potentials", "potential_rows", "row_exponents",
           "rows_times_power_of_two", "unit_rows"]


def unit_rows(X, *, caller: str, name: str = "X"):
    """``x / ‖x‖`` row by row: a torch tensor stays one (differentiable), anything else becomes float64 numpy.

    Each row is first brought to unit scale by a power of two of its own largest entry (exact), so that
    ``‖x‖`` neither overflows (rows near 1e155 and above) nor underflows to 0 (rows near 1e-160 and below);
    at any other scale the result is the plain ``x / ‖x‖``, bit for bit. A zero row has no direction on the
    sphere: refused in one line naming ``caller``'s parameter ``name``.
    """
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
    if is_torch(X):
        X = rows_times_power_of_two(X, -row_exponents(top))
        return X / X.norm(dim=1, keepdim=True)
    X = np.ldexp(X, -np.frexp(top)[1])
    return X / np.linalg.norm(X, axis=1, keepdims=True)


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


EMPTY_SUM = (-np.inf, 0.0)  # (shift, shifted sum) of no pairs


def merge_sums(a, b):
    """Two ``(shift, Σ exp(v − shift))`` pairs as one: the larger shift, the other sum rescaled to it."""
    if a[0] < b[0]:
        a, b = b, a
    if b[0] == -np.inf:
        return a
    return a[0], a[1] + b[1] * float(np.exp(b[0] - a[0]))


def pair_potentials(A, qa, B, qb, t: float, *, diagonal: bool, rows: int = 1024, cols: int = 8192):
    """``(shift, Σ exp(v − shift))`` of ``v = −t‖a − b‖²`` over the pairs of float64 row blocks A and B.

    ``qa``, ``qb`` are the squared row norms; ``‖a − b‖² = ‖a‖² + ‖b‖² − 2a·b`` clipped at 0, a
    ``rows × cols`` slab at a time. ``diagonal``: A is B, and only its pairs i < j count. The shift
    (the largest exponent) keeps a large ``t`` from underflowing to ``log 0``.
    """
    out = EMPTY_SUM
    for i0 in range(0, A.shape[0], rows):
        i1 = min(i0 + rows, A.shape[0])
        for j0 in range(i0 if diagonal else 0, B.shape[0], cols):  # on a diagonal block: on and above it
            j1 = min(j0 + cols, B.shape[0])
            d2 = qa[i0:i1, None] + qb[None, j0:j1] - 2.0 * (A[i0:i1] @ B[j0:j1].T)
            v = -t * np.maximum(d2, 0.0)
            if diagonal and j0 < i1:  # the slab crosses the diagonal: keep j > i only
                v = np.where(np.arange(j0, j1)[None, :] > np.arange(i0, i1)[:, None], v, -np.inf)
            top = v.max() if v.size else -np.inf
            if top != -np.inf:
                out = merge_sums(out, (float(top), float(np.exp(v - top).sum())))
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
