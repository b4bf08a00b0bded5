"""The science of the mini-batch stability experiment (Rudman & Eickhoff, Figure 4), as pure functions.

A point cloud of *known* isotropy is a Gaussian N(0, Σ) whose covariance is given, so its IsoScore is
the closed form :func:`isotropy.metrics.isoscore.isoscore_from_covariance` of Σ. Mini-batches of ``b`` rows drawn
from it have sample covariances S = W/m, W ~ Wishart_d(m, Σ) with m = b − 1, whose first two moments are
known (:func:`expected_batch_isoscore`): this predicts how far IsoScore and IsoScore* of a mini-batch fall
below the value of the whole cloud, without sampling.
"""

from __future__ import annotations

import numpy as np

from isotropy import isoscore, isoscore_star

__all__ = ["batch_scores", "expected_batch_isoscore", "power_law_spectrum", "summarise_scores"]


def power_law_spectrum(n_features: int, *, decay: float) -> np.ndarray:
    """Covariance eigenvalues λ_i = i^(−decay), i = 1..n_features, scaled to sum to n_features.

    ``decay = 0`` is the isotropic Gaussian (IsoScore 1); larger values concentrate the variance in
    the leading directions, as the spectra of pre-trained language models do.
    """
    lam = np.arange(1, n_features + 1, dtype=np.float64) ** (-float(decay))
    return lam * (n_features / lam.sum())


def expected_batch_isoscore(cov, batch_size: int, *, zeta: float = 0.0, shrinkage_cov=None) -> float:
    """IsoScore* of a mini-batch of a Gaussian N(μ, cov), predicted from the Wishart moments.

    Parameters
    ----------
    cov : array-like of shape (n_features, n_features)
        The population covariance Σ of the point cloud.
    batch_size : int
        Rows per mini-batch, b >= 2; the batch covariance (ddof=1) is S = W/m, W ~ Wishart_d(m, Σ), m = b − 1.
    zeta : float in [0, 1], default=0.0
        Shrinkage weight; 0 gives plain IsoScore.
    shrinkage_cov : array-like of shape (n_features, n_features), default=None
        Σ_S, held fixed (not resampled with the batch); ``None`` is the identity.

    Returns
    -------
    float
        ((E[(tr Σ_ζ)²] / E[‖Σ_ζ‖²_F]) − 1)/(d − 1) with Σ_ζ = (1 − ζ)·S + ζ·Σ_S: the IsoScore formula with
        both moments replaced by their expectations. Exact as b → ∞ (where it is IsoScore*(Σ)); for
        finite b the ratio of expectations is close to the expected ratio when d is large (the moments
        concentrate), which the tests check by simulation.

    Notes
    -----
    With T = tr Σ and F = tr Σ² (Muirhead 1982, Thm 3.2.5: E[W²] = m(m+1)Σ² + m·T·Σ; Var(tr W) = 2mF):

    .. math:: E[(\\operatorname{tr} S)^2] = T^2 + 2F/m, \\qquad E[\\|S\\|_F^2] = ((m + 1) F + T^2)/m,

    and E[⟨S, Σ_S⟩_F] = ⟨Σ, Σ_S⟩_F, E[tr S] = T. For ζ = 0 and the isotropic cloud Σ = I_d this is
    (m − 1)/(m + d + 1) = (b − 2)/(b + d): a mini-batch of b ≪ d rows cannot look isotropic, whatever
    the cloud.

    References
    ----------
    .. [1] W. Rudman and C. Eickhoff, "Stable Anisotropic Regularization", ICLR 2024, Figure 4.
    .. [2] R. J. Muirhead, *Aspects of Multivariate Statistical Theory*, Wiley, 1982.

    Examples
    --------
    >>> import numpy as np
    >>> round(expected_batch_isoscore(np.eye(4), 10**9), 6)      # the whole cloud: isotropic
    1.0
    >>> round(expected_batch_isoscore(np.eye(100), 11), 4)       # 11 rows in 100 dimensions: 9/111
    0.0811
    """
    C = np.asarray(cov, dtype=np.float64)
    d = C.shape[0]
    m = float(batch_size) - 1.0
    if m < 1:
        raise ValueError(f"The 'batch_size' parameter of expected_batch_isoscore must be an int >= 2. "
                         f"Got {batch_size!r} instead.")
    if not 0.0 <= float(zeta) <= 1.0:
        raise ValueError(f"The 'zeta' parameter of expected_batch_isoscore must be a float in the range [0, 1]. "
                         f"Got {zeta!r} instead.")
    S = np.eye(d) if shrinkage_cov is None else np.asarray(shrinkage_cov, dtype=np.float64)
    T, F = np.trace(C), float((C * C).sum())
    a, z = 1.0 - float(zeta), float(zeta)
    tr_sq = a * a * (T * T + 2.0 * F / m) + 2.0 * a * z * T * np.trace(S) + z * z * np.trace(S) ** 2
    frob_sq = a * a * ((m + 1.0) * F + T * T) / m + 2.0 * a * z * float((C * S).sum()) + z * z * float((S * S).sum())
    return float((tr_sq / frob_sq - 1.0) / (d - 1))


def batch_scores(draw_batch, batch_sizes, zetas, *, n_batches: int, shrinkage_cov=None) -> list[dict]:
    """IsoScore* for every ζ on ``n_batches`` mini-batches of every size.

    Parameters
    ----------
    draw_batch : callable
        ``draw_batch(batch_size, index) -> ndarray of shape (batch_size, n_features)``: the ``index``-th
        batch of that size (the caller owns the randomness, so the same batch is scored for every ζ).
    batch_sizes : sequence of int
    zetas : sequence of float
        ``0`` is plain IsoScore (:func:`isotropy.isoscore`).
    n_batches : int
    shrinkage_cov : array-like of shape (n_features, n_features), default=None
        Σ_S of IsoScore*; ``None`` is the identity.

    Returns
    -------
    list of dict
        One record per (batch size, batch, ζ): ``batch_size``, ``batch``, ``zeta``, ``score``.
    """
    rows = []
    for size in batch_sizes:
        for index in range(int(n_batches)):
            X = draw_batch(int(size), index)
            for zeta in zetas:
                score = (isoscore(X) if float(zeta) == 0.0
                         else isoscore_star(X, shrinkage_cov=shrinkage_cov, zeta=float(zeta)))
                rows.append({"batch_size": int(size), "batch": index, "zeta": float(zeta), "score": float(score)})
    return rows


def summarise_scores(rows: list[dict], *, reference: dict[float, float]) -> list[dict]:
    """Mean, standard deviation (ddof=1), 5 % and 95 % quantiles and RMSE to ``reference[zeta]`` per (size, ζ)."""
    out = []
    keys = sorted({(r["batch_size"], r["zeta"]) for r in rows})
    for size, zeta in keys:
        values = np.array([r["score"] for r in rows if r["batch_size"] == size and r["zeta"] == zeta])
        ref = reference[zeta]
        out.append({"batch_size": size, "zeta": zeta, "n_batches": int(values.size), "mean": float(values.mean()),
                    "std": float(values.std(ddof=1)) if values.size > 1 else 0.0,
                    "q05": float(np.quantile(values, 0.05)), "q95": float(np.quantile(values, 0.95)),
                    "reference": float(ref), "bias": float(values.mean() - ref),
                    "rmse": float(np.sqrt(np.mean((values - ref) ** 2)))})
    return out
