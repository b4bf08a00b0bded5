"""IsoScore and IsoScore*: how evenly a point cloud spreads its variance over its dimensions.

Both scores depend on the covariance matrix only through its trace and its squared Frobenius
norm, so they need no eigendecomposition (see :func:`isoscore` Notes). The covariance -> score
step lives in one place, :func:`isoscore_from_covariance` / ``_score_from_moments`` (defined in
the private :mod:`isotropy._kernels.isoscore`, re-exported here), shared with
:mod:`isotropy.metrics.covariance` (participation ratio, streaming accumulator) and :mod:`isotropy.distributed`.
"""

from __future__ import annotations

import numpy as np

from isotropy._kernels.isoscore import (
    _as_float,
    _check_shrinkage_cov,
    _check_variance,
    _eps,
    _numpy_centred,
    _scatter_stats,
    _score_from_moments,
    _shrinkage_weights,
    _shrunk_moments,
    check_covariance,
    constant_rows,
    isoscore_from_covariance,
)
from isotropy._utils.backend import is_dask, is_torch, to_output, without_autocast
from isotropy._utils.magnitude import rescaled
from isotropy._utils.validation import (
    IsotropyValueError,
    check_tensor_data,
    check_X,
    check_zeta,
    refuse_subnormal_as_given,
)
from isotropy._utils.warn import IdentityShrinkageWarning, warn_identity_shrinkage
from isotropy.metrics.table import warn_span_bound

__all__ = ["IdentityShrinkageWarning", "isoscore", "isoscore_from_covariance", "isoscore_star"]


@without_autocast
def isoscore(X):
    """IsoScore of a point cloud: 1 = isotropic, 0 = all variance along one direction.

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        The point cloud, one sample per row; ``n_samples >= 2`` and ``n_features >= 2``.
        With ``n_samples <= n_features`` the rows span at most ``n_samples - 1`` dimensions and the
        value is at most ``(n_samples - 2)/(n_features - 1)``, whatever the space: a
        ``SpanBoundWarning`` says so (measure more rows than features to compare spaces by it, or
        use :func:`isoscore_star` with a shrinkage covariance on small batches).

    Returns
    -------
    score : float or torch.Tensor
        A Python float for numpy input (computed in float64 whatever the input dtype); a 0-dim
        tensor on the input's device, differentiable, for torch input: float32 for float16, bfloat16
        and integer tensors (computed in float32), else the input's dtype.

    Raises
    ------
    IsotropyValueError
        If ``X`` is not 2-d, has NaN/inf, or all samples are (numerically) identical.

    See Also
    --------
    isoscore_star : IsoScore with covariance shrinkage (stable on small batches).
    isotropy.participation_ratio : (Σλ)²/Σλ² = 1 + (d − 1)·IsoScore.

    Notes
    -----
    Let λ be the eigenvalues of the sample covariance (ddof=1) of ``X`` and d = n_features.
    Rudman et al. normalise λ̂ = √d·λ/‖λ‖, take the isotropy defect
    δ = ‖λ̂ − 1‖ / √(2(d − √d)) and rescale ι = ((d − δ²(d − √d))² − d) / (d(d − 1)).
    Expanding ‖λ̂ − 1‖² = 2d − 2√d·Σλ/‖λ‖ gives exactly

    .. math:: \\iota = \\frac{(\\sum\\lambda)^2 / \\sum\\lambda^2 - 1}{d - 1}
              = \\frac{(\\operatorname{tr} C)^2 / \\|C\\|_F^2 - 1}{d - 1},

    which needs no eigendecomposition: tr C = ‖X_c‖²_F/(n−1) and
    ‖C‖²_F = ‖X_cᵀX_c‖²_F/(n−1)² = ‖X_c X_cᵀ‖²_F/(n−1)², whichever Gram matrix is smaller.
    Cost O(n·d·min(n, d)). The value is invariant to rotation, translation and scaling of ``X``.

    References
    ----------
    .. [1] W. Rudman, N. Gillman, T. Rayne and C. Eickhoff, "IsoScore: Measuring the Uniformity
       of Embedding Space Utilization", Findings of ACL 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy import isoscore
    >>> X = np.random.default_rng(0).normal(size=(5000, 3)) * [1.0, 1.0, 1.0]
    >>> round(isoscore(X), 2)
    1.0
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]])   # variance along one axis only
    >>> isoscore(X)
    0.0
    """
    if is_dask(X):  # a dask array: computed by tiles / chunk statistics on the dask scheduler
        from isotropy import distributed
        value = distributed.isoscore(X)
        warn_span_bound("isoscore", *X.shape)
        return value
    caller = "isoscore"
    X = check_X(X, caller=caller, min_features=2, rescale=True)
    n, d = X.shape
    st = _scatter_stats(X)
    _check_variance(st.trace, n_samples=n, mean_sq_norm=st.mean_sq, eps=_eps(X), caller=caller, X=X)
    warn_span_bound(caller, n, d)
    return to_output(_score_from_moments(st.trace, st.frob_sq, d), X)


def isoscore_star(X, *, shrinkage_cov=None, zeta=0.2):
    """IsoScore* (IsoScore with RDA shrinkage): IsoScore of (1 − ζ)·Σ_X + ζ·Σ_S.

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        The point cloud (e.g. a mini-batch of hidden states), one sample per row.
    shrinkage_cov : array-like or torch.Tensor of shape (n_features, n_features), default=None
        Σ_S, the covariance matrix of a larger sample of the same distribution (symmetric,
        positive semi-definite). ``None`` uses the identity, as the reference implementation
        recommends when no larger sample is available; the value then tracks the vector norms
        rather than isotropy (see Notes), and an :class:`IdentityShrinkageWarning` says so
        (with ``zeta > 0``).
    zeta : float in [0, 1] or 0-d tensor, default=0.2
        Shrinkage weight ζ. ``zeta=0`` gives :func:`isoscore`; ``zeta=1`` the IsoScore of Σ_S. A
        0-d real tensor or numpy array (a ζ schedule's value) is read once as a float, as the
        regularisers read it; one that requires grad is refused, since the score is differentiable
        with respect to ``X`` only and no gradient would reach ζ (pass ``float(zeta)`` or
        ``zeta.detach()``).

    Returns
    -------
    score : float or torch.Tensor
        A Python float for numpy input (float64 arithmetic); a differentiable 0-dim tensor on the
        input's device for torch input: float32 for float16, bfloat16 and integer tensors (computed
        in float32), else the input's dtype. 1 = isotropic, 0 = one direction only.

    Raises
    ------
    IsotropyValueError
        Bad ``X``, ``zeta`` or ``shrinkage_cov``; all rows identical (zero variance) at ``zeta=0`` or
        without ``shrinkage_cov`` (see Notes).

    Notes
    -----
    With Σ_ζ = (1 − ζ)·Σ_X + ζ·Σ_S (Σ_X the sample covariance, ddof=1), d = n_features:

    .. math:: \\iota^* = \\frac{(\\operatorname{tr}\\Sigma_\\zeta)^2/\\|\\Sigma_\\zeta\\|_F^2 - 1}{d - 1},

    the closed form of Algorithm 1 of Rudman & Eickhoff (see :func:`isoscore`). tr and ‖·‖²_F
    of Σ_ζ are expanded in those of Σ_X, Σ_S and ⟨Σ_X, Σ_S⟩_F, so Σ_X is never formed when
    n_samples < n_features. Σ_S = I is scale-dependent: IsoScore* with the identity changes when
    ``X`` is rescaled, whereas IsoScore does not.

    At ``zeta=1`` with a given ``shrinkage_cov``, Σ_ζ = Σ_S whatever the rows: one row is then enough
    (its Σ_X, ddof=1, is undefined but weighs nothing), and the score is the IsoScore of Σ_S, with no
    gradient to ``X``. Identical rows (Σ_X = 0) with ``zeta > 0`` and a given ``shrinkage_cov`` have Σ_ζ = ζ·Σ_S, a
    covariance: their score is the IsoScore of Σ_S (Algorithm 1 computes it, and rows a few ulps
    apart tend to it), with no gradient to ``X``. At ``zeta=0`` it is 0/0, and with the identity it
    would be 1.0 whatever the rows (the best I-STAR penalty for a collapsed batch): both are refused.
    In training, :class:`isotropy.training.HiddenStateRegulariser` gives such a batch a penalty of 0
    with a warning instead, as a batch of one state.

    References
    ----------
    .. [1] W. Rudman and C. Eickhoff, "Stable Anisotropic Regularization", ICLR 2024
       (arXiv:2305.19358), Algorithm 1.
    .. [2] J. H. Friedman, "Regularized Discriminant Analysis", JASA 84(405), 1989.

    Examples
    --------
    Points whose sample covariance is diag(1, 0, 0), shrunk toward the identity:

    >>> import numpy as np
    >>> from isotropy import isoscore_star
    >>> X = np.array([[-1.0, 0, 0], [1.0, 0, 0]]) / np.sqrt(2)
    >>> round(isoscore_star(X, zeta=0.2), 6)
    0.407407
    >>> round(isoscore_star(X, shrinkage_cov=np.eye(3), zeta=0.75), 6)
    0.970588
    """
    if is_dask(X):  # a dask array: computed by tiles / chunk statistics on the dask scheduler (which warns as below)
        from isotropy import distributed
        return distributed.isoscore_star(X, shrinkage_cov=shrinkage_cov, zeta=zeta)
    value = _isoscore_star(X, shrinkage_cov=shrinkage_cov, zeta=zeta, caller="isoscore_star")
    if shrinkage_cov is None and float(zeta) != 0.0:  # (zeta checked above: a number, or a 0-d array or tensor)
        warn_identity_shrinkage("isoscore_star", stacklevel=2)
    return value


@without_autocast
def _isoscore_star(X, *, shrinkage_cov, zeta, caller, name="X"):
    """:func:`isoscore_star` with the public caller's name, and its name for ``X``, in its error messages."""
    zeta = check_zeta(zeta, caller=caller)
    given = X
    # ζ = 1 with a given Σ_S: Σ_ζ = Σ_S alone, defined for one row (whose Σ_X, ddof=1, is not): its IsoScore, as for
    # identical rows below. ζ < 1 weighs that undefined Σ_X, and ζ = 1 without Σ_S is I (1.0 for any row): 2 rows.
    only_s = zeta == 1.0 and shrinkage_cov is not None
    X = check_X(X, caller=caller, name=name, min_features=2, min_samples=1 if only_s else 2)
    refuse_subnormal_as_given(given, X, caller=caller, name=name)  # float16 tensors judged in float16, as numpy's
    X, exponent_c = rescaled(X, caller=caller, name=name)  # Σ_X = 4^e·Σ_X̂: weighted below, never formed
    n, d = X.shape
    st = _scatter_stats(X)
    exponent_s = 0
    S = None
    if shrinkage_cov is not None:  # checked whatever ζ: a wrong Σ_S must not wait for a ζ schedule to leave 0
        check_tensor_data(shrinkage_cov, caller=caller, name="shrinkage_cov")
        # Σ_S = 2^e_s·Ŝ, Ŝ at unit scale in X's dtype: its factor goes into the weights (a float64 Σ_S of 1e40 or
        # 1e-50 with a float32 tensor X was refused as "NaN or inf" or "the zero matrix": cast before it was scaled)
        S, exponent_s = _check_shrinkage_cov(shrinkage_cov, d, like=X, caller=caller, data_name=name,
                                             with_exponent=True)
        # a negative direction gave (tr Σ_ζ)² < ‖Σ_ζ‖²_F, a score clamped to 0 (isoscore_from_covariance refused it)
        check_covariance(S, caller=caller, nonzero=zeta > 0.0, given=shrinkage_cov)  # once per training loop's Σ_S
    if zeta == 0.0 or S is None:
        S, exponent_s = None, 0
        trace_s, frob_sq_s = float(d), float(d)
    else:
        trace_s = S.diagonal().sum() if is_torch(S) else np.trace(S)
        frob_sq_s = (S * S).sum()
    if _as_float(trace_s) <= 0.0 and zeta > 0.0:
        raise IsotropyValueError(f"The 'shrinkage_cov' parameter of {caller} must be a non-zero covariance matrix "
                                 f"(positive trace). Got trace {_as_float(trace_s):.3g} instead.")
    # identical rows (Σ_X = 0): with ζ > 0 and a given Σ_S, Σ_ζ = ζ·Σ_S is a covariance and the score is
    # IsoScore(Σ_S) (Algorithm 1 of Rudman & Eickhoff, and the limit of rows a few ulps apart); at ζ = 0 it is 0/0,
    # and with the identity (no Σ_S) it would be 1.0 whatever the data, the best I-STAR penalty for a collapsed
    # batch: both refused, as isoscore refuses such rows
    m = n - 1
    if S is not None and (n == 1 or constant_rows(st.trace, n_samples=n, mean_sq_norm=st.mean_sq, eps=_eps(X), X=X)):
        zero = st.trace * 0.0  # Σ_X exactly 0 (not centring's few ulps), in the graph: no gradient flows to X
        trace_c = frob_sq_c = inner = zero
    else:
        _check_variance(st.trace, n_samples=n, mean_sq_norm=st.mean_sq, eps=_eps(X), caller=caller, name=name, X=X)
        # covariance moments of X (ddof=1) from those of the scatter matrix
        trace_c, frob_sq_c = st.trace / m, st.frob_sq / (m * m)
        if S is None:
            inner = trace_c  # <C, I>_F = tr C
        elif st.scatter is not None:
            inner = (st.scatter * S).sum() / m  # <C, S>_F with C = S_X / m formed (d×d)
        else:
            Xc = st.centred if st.centred is not None else _numpy_centred(X)
            inner = ((Xc @ S) * Xc).sum() / m  # tr(Xc S Xcᵀ) / m without forming C
    weights = _shrinkage_weights(zeta, exponent_c, exponent_s)
    trace, frob_sq = _shrunk_moments(trace_c, frob_sq_c, inner, trace_s, frob_sq_s, *weights)
    return to_output(_score_from_moments(trace, frob_sq, d), X)


