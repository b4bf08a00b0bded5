"""The covariance -> IsoScore math, shared by :mod:`isotropy.metrics.isoscore`, :mod:`isotropy.metrics.covariance` and :mod:`isotropy.distributed`.

Both scores depend on the covariance matrix only through its trace and its squared Frobenius
norm: the scatter statistics of a point cloud (:func:`_scatter_stats`), the zero-variance check
and the score from those moments live here, together with :func:`isoscore_from_covariance`, so
that the public metric functions (which hand dask arrays to :mod:`isotropy.distributed`) and the
dask reductions import this module instead of each other. Public names are re-exported from
:mod:`isotropy.metrics.isoscore`.
"""

from __future__ import annotations

import math
import weakref
from typing import NamedTuple

import numpy as np

from isotropy._kernels.rows import all_rows_equal
from isotropy._utils.backend import as_tensor, is_torch, to_output
from isotropy._utils.magnitude import _tiny, rescaled, safe_exponent_range, times_power_of_two, unit_scale
from isotropy._utils.validation import (
    IsotropyValueError,
    _describe,
    check_real,
    check_tensor_data,
    check_zeta,
    first_nonfinite,
)

# Data whose total variance is below (_FLOOR_ULPS * eps)^2 * ||mean||^2 per sample is treated as
# constant: the residual of exact centring of identical rows is a few ulps of the mean.
_FLOOR_ULPS = 8.0
_CHUNK_ELEMENTS = 1 << 21  # float64 rows converted at a time by the numpy path (16 MiB)


class _ScatterStats(NamedTuple):
    """Statistics of the centred scatter matrix S = Σ (x − μ)(x − μ)ᵀ (unnormalised, ddof-free)."""

    trace: object  # tr S = ||Xc||_F²
    frob_sq: object  # ||S||_F²
    scatter: object  # S (d×d) when n_samples >= n_features, else None
    centred: object  # Xc (n×d) for torch when n_samples < n_features, else None (numpy: :func:`_numpy_centred`)
    mean_sq: float  # ||μ||², for the zero-variance test


def _as_float(value) -> float:
    return float(value.detach()) if is_torch(value) else float(value)


def _eps(X) -> float:
    if is_torch(X):
        import torch

        return float(torch.finfo(X.dtype).eps)
    return float(np.finfo(np.float64).eps)


def _numpy_scatter(X, *, split_mean=False):
    """Float64 scatter matrix and mean of a numpy ``X`` (n ≥ 1), in one pass, without a float64 copy.

    Rows are converted a chunk at a time and shifted by K, the mean of the first chunk (a shift
    close to the mean keeps the large-offset precision of two-pass centring):
    with m = mean(x − K), Σ(x − μ)(x − μ)ᵀ = Σ(x − K)(x − K)ᵀ − n·m·mᵀ and μ = K + m. With
    ``split_mean`` returns ``(scatter, K, m)``: μ kept as K + m loses nothing to the rounding of μ.
    The pass is :func:`isotropy._kernels.rows.row_statistics` (shared with the other covariance
    metrics of an ``isotropy measure`` table).
    """
    from isotropy._kernels.rows import row_statistics

    scatter, shift, m = row_statistics(X, ("scatter",))["scatter"]  # may be shared: read, never changed
    return (scatter, shift, m) if split_mean else (scatter, shift + m)


def _torch_outer(v):
    """v vᵀ for a 1-d tensor (differentiable)."""
    return v[:, None] * v[None, :]


def _scatter_stats(X) -> _ScatterStats:
    """Centred-scatter statistics of ``X``: float64 for numpy input, ``X``'s dtype/graph for torch.

    ``||S||_F² = ||Xcᵀ Xc||_F² = ||Xc Xcᵀ||_F²`` (both Σσᵢ⁴ over the singular values of Xc), so
    the cheaper Gram side is formed: d×d when n ≥ d, else n×n (numpy: by blocks of columns, never an n×d
    float64 copy, :func:`isotropy._kernels.rows.row_statistics`). Centring is two-pass in effect
    (the mean r of the residuals after subtracting the mean is removed, as S − n·r·rᵀ when the
    d×d side is formed) so float32 and large offsets lose no precision.
    """
    n, d = X.shape
    if is_torch(X):
        mean = X.mean(dim=0, keepdim=True)
        Xc = X - mean
        resid = Xc.mean(dim=0)  # rounding error of the first mean, removed below
        mean_sq = float((mean.detach() ** 2).sum())
        if n >= d:
            S = Xc.T @ Xc - n * _torch_outer(resid)
            return _ScatterStats(S.diagonal().sum(), (S * S).sum(), S, None, mean_sq)
        Xc = Xc - resid
        G = Xc @ Xc.T  # tr G = tr S
        return _ScatterStats(G.diagonal().sum(), (G * G).sum(), None, Xc, mean_sq)
    if n >= d:
        S, mean = _numpy_scatter(X)
        return _ScatterStats(np.trace(S), np.vdot(S, S), S, None, float(mean @ mean))
    from isotropy._kernels.rows import row_statistics

    # n < d: Xc Xcᵀ summed over blocks of columns (shared with the other metrics of a table), no n×d float64 copy
    G, mean_sq = row_statistics(X, ("centred_gram",))["centred_gram"]  # tr G = tr S; read, never changed
    return _ScatterStats(np.trace(G), np.vdot(G, G), None, None, mean_sq)


def _numpy_centred(X) -> np.ndarray:
    """The rows of a numpy ``X`` centred in float64 (two-pass in effect), an n×d copy: Xc for ⟨C, Σ_S⟩ when n < d."""
    Xc = np.array(X, dtype=np.float64, copy=True)
    Xc -= Xc.mean(axis=0)
    Xc -= Xc.mean(axis=0)
    return Xc


def constant_rows(trace, *, n_samples, mean_sq_norm, eps, X=None) -> bool:
    """Whether the rows whose centred scatter has trace ``trace`` are all equal (zero variance): the refusal of
    :func:`_check_variance`, whose docstring says how rows a few ulps apart are told from them.

    IsoScore* asks it too: with ζ > 0 and a given Σ_S the shrunk covariance ζ·Σ_S of such rows is defined
    (:func:`isotropy.metrics.isoscore._isoscore_star`).
    """
    if _as_float(trace) > n_samples * (_FLOOR_ULPS * eps) ** 2 * mean_sq_norm:
        return False
    return _as_float(trace) <= 0.0 or (X is not None and all_rows_equal(X.detach() if is_torch(X) else X))


def _check_variance(trace, *, n_samples, mean_sq_norm, eps, caller, name="X", X=None):
    """Raise a clear error when the data are constant: the score would be 0/0.

    Below the floor, the residual that centring leaves of identical rows (a few ulps of the mean), the
    rows are refused only when they are all equal: rows a few ulps apart are centred exactly (their
    differences are, by Sterbenz), so their tiny covariance is a value (1e8 + 1e-7·N was refused as 200
    identical samples; its IsoScore is 0.40). With the rows at hand (``X``: the in-memory paths) that is
    checked on them; streamed (the accumulator, dask, the torchmetrics classes: ``X`` is ``None``), the
    sums of identical rows are exactly 0 (their shift is their own row, :func:`isotropy._kernels.rows.
    first_chunk_shift`), so a positive trace is rows that differ. ``name=None``: rows fed by ``update`` calls, not
    a parameter of ``caller``.
    """
    if constant_rows(trace, n_samples=n_samples, mean_sq_norm=mean_sq_norm, eps=eps, X=X):
        subject = f"The '{name}' parameter of {caller}" if name else f"The rows given to {caller}"
        raise IsotropyValueError(
            f"{subject} must have non-zero variance. Got {n_samples} "
            f"(numerically) identical samples instead, whose covariance is zero, so the score is undefined.")


def _score_from_moments(trace, frob_sq, n_features):
    """((tr C)² / ||C||_F² − 1) / (d − 1): IsoScore from the two covariance moments, in [0, 1].

    The ratio (tr C)² / ||C||_F² lies in [1, d]; its rounding could leave it just outside (rank-1 data
    streamed through the accumulator read −7.4e-17), so it is clamped there. A torch value keeps the
    gradient of the unclamped ratio (at rank-1 data the score still rises off it).
    """
    ratio = trace * trace / frob_sq
    if is_torch(ratio):
        ratio = ratio + (ratio.detach().clamp(1.0, float(n_features)) - ratio.detach())
    else:
        ratio = min(max(ratio, 1.0), float(n_features))
    return (ratio - 1.0) / (n_features - 1)


def _expected_shape(n_features, data_name, *, real=False):
    """What a Σ_S must be, for the messages of :func:`_check_shrinkage_cov` (``n_features=None``: any square width; it
    named ``(-1, -1) (n_features of X)`` for a 1-d Σ_S given to IStarLoss, which has no X)."""
    numbers = " of real numbers" if real else ""
    if n_features is None:
        return f"square covariance matrix{numbers} of shape (n_features, n_features) with n_features >= 1"
    return f"covariance matrix of shape ({n_features}, {n_features}) (n_features of {data_name}){numbers}"


def _not_a_matrix(shrinkage_cov, n_features, *, caller, name="shrinkage_cov", data_name="X"):
    """The error of a Σ_S that is no matrix of real numbers (a string, a ragged list): one line naming it."""
    expected = _expected_shape(n_features, data_name, real=True)
    got = " ".join(_describe(shrinkage_cov).split())  # an array's repr spans lines
    return IsotropyValueError(f"The '{name}' parameter of {caller} must be a {expected}. Got {got} instead.")


def as_shrinkage_tensor(shrinkage_cov, *, caller, name="shrinkage_cov"):
    """``torch.as_tensor(shrinkage_cov)`` for a Σ_S given to a module or a metric before any data (IStarLoss,
    IsoScoreStar), then checked by :func:`_check_shrinkage_cov`: a string or a ragged list is refused in one line
    naming it, where torch's own error ("new(): invalid data type 'str'") named neither."""
    try:
        return as_tensor(shrinkage_cov)
    except (TypeError, ValueError, RuntimeError):
        raise _not_a_matrix(shrinkage_cov, None, caller=caller, name=name) from None


def _check_shrinkage_cov(shrinkage_cov, n_features, *, like, caller, name="shrinkage_cov", data_name="X",
                         with_exponent=False):
    """Validate Σ_S: a real, finite, symmetric (n_features, n_features) matrix; returned in ``like``'s backend.

    ``n_features=None``: any square matrix (a Σ_S given before any data, to a module or a metric, fixes the width).

    Never modifies the caller's matrix (symmetrising makes a new array).

    numpy ``like``: float64 ndarray. torch ``like``: tensor on ``like``'s device and dtype.

    The checks read Σ_S in the precision it is given in: a float64 Σ_S of 1e40 or 1e-50 is finite and non-zero,
    though float32 cannot hold it (cast to a float32 ``X``'s dtype first, it was refused as "NaN or inf" or as
    "the zero matrix", where a numpy float32 ``X``, computed in float64, took it). With ``with_exponent`` it is
    returned as ``(Ŝ, e)``, ``Σ_S = 2**e · Ŝ`` exactly (a power of two): ``e`` is non-zero where the largest
    ``|s|`` lies outside the safe range of ``like``'s dtype (:func:`isotropy._utils.magnitude.safe_exponent_range`),
    and Ŝ, at unit scale, is what is cast to ``like``'s dtype. Without, a Σ_S that ``like``'s dtype cannot hold is
    refused in one line.
    """
    check_tensor_data(shrinkage_cov, caller=caller, name=name)
    check_real(shrinkage_cov, caller=caller, name=name)  # numpy and torch would drop the imaginary parts
    try:
        if is_torch(shrinkage_cov) and not is_torch(like):
            S = shrinkage_cov.detach().cpu().double().numpy()
        elif is_torch(like):
            import torch

            S = torch.as_tensor(shrinkage_cov)  # a tensor as it is (its device, dtype and graph); else on the host
            if not is_torch(shrinkage_cov):
                S = as_tensor(np.asarray(shrinkage_cov, dtype=np.float64))
            if not S.is_floating_point():
                S = S.to(like.dtype)
            # the wider of the two dtypes, where that dtype lives: Σ_S's device when it is the wider (a float64 Σ_S
            # for a float32 X on a device without float64), else X's (the exact widening made there)
            if S.dtype != torch.promote_types(S.dtype, like.dtype):
                S = S.to(device=like.device, dtype=like.dtype)
        else:
            S = np.asarray(shrinkage_cov, dtype=np.float64)
    except (TypeError, ValueError, RuntimeError):  # a string, a ragged list, complex values in an object array
        raise _not_a_matrix(shrinkage_cov, n_features, caller=caller, name=name, data_name=data_name) from None
    shape = tuple(S.shape)
    if n_features is None and len(shape) == 2 and shape[0] == shape[1] >= 1:  # (0, 0): no maximum to scale by
        n_features = shape[0]
    if shape != (n_features, n_features):
        raise IsotropyValueError(f"The '{name}' parameter of {caller} must be a {_expected_shape(n_features, data_name)}. "
                                 f"Got an array with shape {shape} instead.")
    if is_torch(S):
        finite = bool(S.isfinite().all())
        asym = float((S - S.T).abs().max().detach()) if n_features else 0.0
        scale = float(S.abs().max().detach())
        eps = _eps(like)  # a tensor Σ_S is checked for a tensor X: the rounding of X's dtype
    else:
        finite = bool(np.isfinite(S).all())
        asym = float(np.abs(S - S.T).max())
        scale = float(np.abs(S).max())
        eps = float(np.finfo(np.float64).eps)
    if not finite:  # named where it is, as a bad entry of X is
        found = first_nonfinite(S)
        raise IsotropyValueError(f"The '{name}' parameter of {caller} must contain only finite values. Got "
                                 f"{'NaN or inf' if found is None else found.at()} instead.")
    # tolerate the rounding asymmetry of a covariance computed in float32, then symmetrise exactly
    if asym > max(1e-5, 1e3 * eps) * max(scale, np.finfo(np.float64).tiny):
        raise IsotropyValueError(f"The '{name}' parameter of {caller} must be a symmetric covariance "
                                 f"matrix. Got a matrix with max |S - Sᵀ| = {asym:.3g} instead.")
    exponent = math.frexp(scale)[1] if scale > 0.0 else 0
    exponent = exponent if with_exponent and abs(exponent) > safe_exponent_range(like) else 0
    S = times_power_of_two(S, -exponent)  # exact: Ŝ at unit scale (a normal number keeps every digit)
    if is_torch(S) and (S.dtype != like.dtype or S.device != like.device):
        S = S.to(device=like.device, dtype=like.dtype)
        top = float(S.abs().max().detach())
        if not math.isfinite(top) or (scale > 0.0 and top < _tiny(like) / _eps(like)):
            raise IsotropyValueError(
                f"The '{name}' parameter of {caller} must have values that {str(like.dtype).replace('torch.', '')} "
                f"({data_name}'s dtype) holds. Got a largest |s| of {scale:.3g} instead.")
    S = S if asym == 0 else (S + S.T) / 2
    return (S, exponent) if with_exponent else S


def torch_eigvalsh(C):
    """Eigenvalues of a symmetric tensor, computed in float64 on its device (half precision has no solver)."""
    import torch

    return torch.linalg.eigvalsh(C.to(torch.float64))


def _eye_like(C):
    if is_torch(C):
        import torch

        return torch.eye(C.shape[0], device=C.device, dtype=C.dtype)
    return np.eye(C.shape[0])


def _shrinkage_weights(zeta, exponent_c=0, exponent_s=0):
    """Weights (a, b) ∝ ((1 − ζ)·2^(2·e_c), ζ·2^e_s), the larger one 1 when an exponent is non-zero.

    Σ_ζ = (1 − ζ)·C + ζ·S with C = 4^e_c·Ĉ and S = 2^e_s·Ŝ (Ĉ, Ŝ at unit scale); the score is
    invariant to a common factor, so a·Ĉ + b·Ŝ gives it without forming 4^e_c (which overflows
    float64 for data beyond ~1e77). A weight far below the other underflows to 0: its term is
    below float64's precision.
    """
    return _mixing_weights(zeta, 2 * exponent_c, exponent_s)


def _mixing_weights(zeta, log2_c=0, log2_s=0):
    """Weights (a, b) ∝ ((1 − ζ)·2^log2_c, ζ·2^log2_s), the larger one 1 when a power is non-zero: those of
    (1 − ζ)·C + ζ·S with C = 2^log2_c·Ĉ and S = 2^log2_s·Ŝ (see :func:`_shrinkage_weights`)."""
    if (log2_c == 0 and log2_s == 0) or zeta in (0.0, 1.0):
        return 1.0 - zeta, zeta
    log_a, log_b = math.log2(1.0 - zeta) + log2_c, math.log2(zeta) + log2_s
    top = max(log_a, log_b)
    return 2.0 ** (log_a - top), 2.0 ** (log_b - top)


def _shrunk_moments(trace_c, frob_sq_c, inner_cs, trace_s, frob_sq_s, a, b):
    """Trace and ||·||_F² of a·C + b·S from those of C, S and ⟨C, S⟩_F."""
    trace = a * trace_c + b * trace_s
    frob_sq = a * a * frob_sq_c + 2.0 * a * b * inner_cs + b * b * frob_sq_s
    return trace, frob_sq


# Tensors (and numpy arrays) given as Σ_S and found positive semi-definite, by id: (a weak reference to the tensor, a copy of its values
# then). A training loop passes the same Σ_S at every step: it is factored again only when its values differ from the
# copy (an O(d²) comparison; a version counter missed writes through .data or shared numpy memory, and inference
# tensors have none). A few kept: each copy is d² values.
_PSD_TENSORS: dict[int, tuple] = {}
_PSD_TENSORS_KEPT = 4


def check_covariance(S, *, caller, name="shrinkage_cov", nonzero=True, given=None):
    """Refuse a symmetric finite matrix (checked by :func:`_check_shrinkage_cov`) that is not a covariance matrix:
    one with a direction of variance below ``−τ·‖S‖_F`` (``τ = max(1e-8, d·eps(float32))``), or (``nonzero``) the
    zero matrix.

    One Cholesky factorisation of ``S + τ·‖S‖_F·I`` in float64 (``d³/3`` flops, a few milliseconds at
    ``d = 768``), so that the functions called at every step (:func:`isotropy.isoscore_star`,
    :func:`isotropy.torch.istar_penalty`) check Σ_S as fully as the classes that store it: a matrix with a
    negative eigenvalue gives ``(tr Σ_ζ)² < ‖Σ_ζ‖²_F``, a score clamped to 0 that says nothing. The eigenvalues
    are computed only to name the smallest in the error. ``τ`` allows the rounding of a covariance formed in
    float32, whatever dtype it comes in now: ``torch.cov`` of a float32 batch of fewer rows than features has
    eigenvalues of −4e-8 to −1.2e-7 of the largest; any matrix with a real negative direction (−I,
    diag(1, 1, 1, −0.5)) is refused. Scale-invariant: at unit scale (a power of two, exact), so that a matrix near
    1e200 or 1e-300 neither overflows nor underflows.

    ``given``: the caller's tensor ``S`` was made from (a training loop's Σ_S): once found positive
    semi-definite it is not factored again while it is the same tensor holding the same values.
    """
    recorded = is_torch(given) or isinstance(given, np.ndarray)
    known = recorded and _known_psd(given)
    E = unit_scale(S.detach() if is_torch(S) else S, caller=caller, name=name)
    d = E.shape[0]
    if is_torch(E):
        import torch

        E = E.to(torch.float64)
        frobenius = float(torch.linalg.matrix_norm(E))
        shifted = E + (_psd_tolerance(d) * frobenius) * torch.eye(d, dtype=E.dtype, device=E.device)
        factored = known or int(torch.linalg.cholesky_ex(shifted).info) == 0
    else:
        E = np.asarray(E, dtype=np.float64)
        frobenius = float(np.linalg.norm(E))
        try:
            np.linalg.cholesky(E + _psd_tolerance(d) * frobenius * np.eye(d))
            factored = True
        except np.linalg.LinAlgError:
            factored = False
    if nonzero and frobenius == 0.0:
        raise IsotropyValueError(f"The '{name}' parameter of {caller} must be a non-zero covariance matrix "
                                 f"(positive trace). Got the zero matrix instead.")
    if not factored and frobenius > 0.0:  # the zero matrix (a covariance of constant rows) factors with no shift
        lowest = float((torch_eigvalsh(E) if is_torch(E) else np.linalg.eigvalsh(E)).min())
        raise IsotropyValueError(f"The '{name}' parameter of {caller} must be positive semi-definite (a covariance "
                                 f"matrix). Got a smallest eigenvalue of {lowest:.3g} instead.")
    if recorded and not known:
        for key in [key for key, (ref, _) in _PSD_TENSORS.items() if ref() is None][:_PSD_TENSORS_KEPT]:
            del _PSD_TENSORS[key]
        if len(_PSD_TENSORS) >= _PSD_TENSORS_KEPT:
            _PSD_TENSORS.pop(next(iter(_PSD_TENSORS)))
        _PSD_TENSORS[id(given)] = (weakref.ref(given), given.detach().clone() if is_torch(given) else given.copy())


def _known_psd(tensor) -> bool:
    """Whether :data:`_PSD_TENSORS` holds ``tensor`` itself (not a dead one of the same id) with the same values."""
    entry = _PSD_TENSORS.get(id(tensor))
    if entry is None or entry[0]() is not tensor:
        return False
    copy = entry[1]
    if not is_torch(tensor):  # a numpy array (the record of one is a numpy copy)
        return copy.shape == tensor.shape and copy.dtype == tensor.dtype and np.array_equal(copy, tensor)
    import torch

    return (copy.shape == tensor.shape and copy.dtype == tensor.dtype and copy.device == tensor.device
            and torch.equal(copy, tensor.detach()))


def _psd_tolerance(n_features: int) -> float:
    """``τ`` of :func:`check_covariance`."""
    return max(1e-8, n_features * float(np.finfo(np.float32).eps))


def isoscore_from_covariance(cov, *, shrinkage_cov=None, zeta=0.0):
    """IsoScore (or IsoScore*) of a given covariance matrix.

    Use when the covariance is known (a Gaussian's Σ) or accumulated elsewhere
    (:class:`isotropy.CovarianceAccumulator`).

    Parameters
    ----------
    cov : array-like or torch.Tensor of shape (n_features, n_features)
        A symmetric positive semi-definite covariance matrix, n_features >= 2.
    shrinkage_cov : array-like or torch.Tensor of shape (n_features, n_features), default=None
        Σ_S for IsoScore*; ``None`` means the identity (only used when ``zeta > 0``).
    zeta : float in [0, 1] or 0-d tensor, default=0.0
        Shrinkage weight; the default 0 gives plain IsoScore. A 0-d real tensor or array is read
        once as a float, as by :func:`isotropy.isoscore_star`.

    Returns
    -------
    score : float or torch.Tensor
        Python float for numpy input, 0-dim tensor (with graph) for torch input: float32 for
        half-precision and integer tensors (computed in float32, as ``X`` is), else ``cov``'s dtype.

    Notes
    -----
    ι = ((tr Σ_ζ)²/‖Σ_ζ‖²_F − 1)/(d − 1) with Σ_ζ = (1 − ζ)·cov + ζ·Σ_S; equal to the
    eigenvalue formula of Rudman et al. for symmetric PSD matrices (see :func:`isoscore`). The zero
    ``cov`` (identical rows) is refused, except with ``zeta > 0`` and a given ``shrinkage_cov``,
    where Σ_ζ = ζ·Σ_S and the score is that of Σ_S (as :func:`isotropy.isoscore_star` gives it).

    References
    ----------
    .. [1] W. Rudman, N. Gillman, T. Rayne and C. Eickhoff, "IsoScore: Measuring the Uniformity
       of Embedding Space Utilization", Findings of ACL 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy.metrics.isoscore import isoscore_from_covariance
    >>> isoscore_from_covariance(np.diag([1.0, 1.0, 1.0, 1.0]))
    1.0
    >>> round(isoscore_from_covariance(np.diag([1.0, 0.0, 0.0]), zeta=0.2), 6)
    0.407407
    """
    return _isoscore_from_covariance(cov, shrinkage_cov=shrinkage_cov, zeta=zeta, caller="isoscore_from_covariance")


def _isoscore_from_covariance(cov, *, shrinkage_cov, zeta, caller, data_name="cov"):
    """:func:`isoscore_from_covariance` with the public caller's name, and its name for the data whose width
    ``shrinkage_cov`` must have, in its error messages."""
    zeta = check_zeta(zeta, caller=caller)
    check_tensor_data(cov, caller=caller, name="cov")  # a nested tensor has no shape to read below
    check_real(cov, caller=caller, name="cov")  # as a complex X is refused: its real part was scored, with a warning
    if not is_torch(cov):
        try:
            cov = np.asarray(cov, dtype=np.float64)
        except (TypeError, ValueError):  # a string, a ragged list, an object array of complex numbers
            raise IsotropyValueError(f"The 'cov' parameter of {caller} must be a square matrix of real numbers, of "
                                     f"shape (n_features, n_features). Got {' '.join(_describe(cov).split())} "
                                     f"instead.") from None
    elif not cov.is_floating_point() or cov.itemsize < 4:
        # half precision overflows in ‖Σ‖²_F (float16 gave inf) and rounds it to 3 digits (bfloat16): float32, as X is
        # computed (differentiable; the score comes back as a float32 tensor)
        cov = cov.float()
    shape = tuple(cov.shape)
    if len(shape) != 2 or shape[0] != shape[1] or shape[0] < 2:
        raise IsotropyValueError(f"The 'cov' parameter of {caller} must be a square matrix of shape "
                                 f"(n_features, n_features) with n_features >= 2. Got an array with shape {shape} instead.")
    d = shape[0]
    C = _check_shrinkage_cov(cov, d, like=cov, caller=caller, name="cov")  # finite, symmetric
    # the zero matrix too, unless ζ > 0 with a given Σ_S (then ζ·Σ_S, as isoscore_star of identical rows): with the
    # identity its score would be 1.0 whatever the data (constant rows scored as perfectly isotropic), at ζ = 0 0/0
    shrunk_only = zeta > 0.0 and shrinkage_cov is not None
    check_covariance(C, caller=caller, name="cov", nonzero=not shrunk_only)
    S, exponent_s = None, 0
    if shrinkage_cov is not None:  # checked whatever ζ: a wrong Σ_S must not wait for a ζ schedule to leave 0
        # Σ_S = 2^e_s·Ŝ: one that cov's dtype cannot hold (float64 1e40 with a float32 tensor) is mixed at unit scale
        S, exponent_s = _check_shrinkage_cov(shrinkage_cov, d, like=C, caller=caller, data_name=data_name,
                                             with_exponent=True)
        check_covariance(S, caller=caller, nonzero=zeta > 0.0)  # Σ_S = −I gave 1.0 silently
    if shrunk_only and not bool((C != 0).any()):  # ζ·Σ_S alone: the score ignores the factor ζ
        C = S + C * 0.0  # (cov's graph kept: no gradient flows to it)
    elif zeta > 0.0 and exponent_s:  # (1 − ζ)·2^e_c·Ĉ + ζ·2^e_s·Ŝ ∝ a·Ĉ + b·Ŝ (the score ignores a common factor)
        C, exponent_c = rescaled(C, caller=caller, name="cov")
        a, b = _mixing_weights(zeta, exponent_c, exponent_s)
        C = a * C + b * S
    elif zeta > 0.0:
        C = (1.0 - zeta) * C + zeta * (_eye_like(C) if S is None else S)
    C = unit_scale(C, caller=caller, name="cov")  # after the mixing with Σ_S, which is not scale-invariant
    trace = C.diagonal().sum() if is_torch(C) else np.asarray(np.trace(C))
    if _as_float(trace) <= 0.0:
        raise IsotropyValueError(f"The 'cov' parameter of {caller} must be a non-zero covariance matrix "
                                 f"(positive trace). Got trace {_as_float(trace):.3g} instead.")
    frob_sq = (C * C).sum()
    return to_output(_score_from_moments(trace, frob_sq, d), cov)
