"""Rogue dimensions (Timkey & van Schijndel 2021): the few dimensions that carry the expected cosine similarity.

The mean cosine similarity over the distinct pairs of rows splits exactly into one term per
dimension, because cos(x, y) = Σᵢ x̂ᵢŷᵢ with x̂ = x/‖x‖. With s = Σⱼ x̂ⱼ and q = Σⱼ x̂ⱼ² (sums
over rows, per dimension), the contribution of dimension i is (sᵢ² − qᵢ)/(n(n − 1)): O(n·d),
no n×n matrix, and the sums can be accumulated batch by batch
(:class:`isotropy.training.RogueDimensionShare`). Whether the mean cosine is above its sampling
noise needs ‖Σ x̂x̂ᵀ‖_F (an O(n·d²) product, formed in memory only when a cheap bound leaves the
question open; the streaming class keeps the d × d sum).
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from isotropy._utils.backend import is_dask, is_torch, to_output, without_autocast
from isotropy._utils.validation import check_scalar, check_X
from isotropy._utils.warn import user_stacklevel
from isotropy.metrics.cosine import _refuse_rows, _unit_rows, _unit_sums

__all__ = ["cosine_contributions", "rogue_dimension_share"]


def _contributions_from_sums(unit_sum, unit_sq_sum, n_samples):
    """CCᵢ = (sᵢ² − qᵢ) / (n(n − 1)) from the per-dimension sums of unit rows and of their squares."""
    return (unit_sum * unit_sum - unit_sq_sum) / (n_samples * (n_samples - 1))


# the mean cosine must exceed this many of its standard deviations for rows that share no direction: its null
# distribution is that of a weighted sum of (χ²₁ − 1) terms, most skewed with one term, where P(χ²₁ − 1 > 5·√2) is
# 0.45 %; with many (isotropic rows) it is nearly normal, 3e-7. (At 3: 2-3 % of centred, strongly anisotropic
# 200 × 50 samples were read as sharing a direction.)
_NOISE_Z = 5.0


def _null_sigma(gram_frob_sq, n_samples, mean_cosine=0.0):
    """Standard deviation of the mean cosine of ``n`` rows that share no direction, from ``‖Σ x̂x̂ᵀ‖²_F``.

    The mean cosine m is Σ_{j≠k} cⱼₖ/(n(n − 1)) with cⱼₖ = x̂ⱼ·x̂ₖ; for independent rows of mean
    direction 0 the cⱼₖ have mean 0 and are uncorrelated but for the pair's two orders, so its
    variance is 2 Σ_{j≠k} E cⱼₖ²/(n(n − 1))². E cⱼₖ² is estimated by the pairs' spread about their
    mean, Σ_{j≠k} (cⱼₖ − m)² = ‖ÛᵀÛ‖²_F − n − n(n − 1)m²: under that null m is about 0 and it is the
    plain Σ cⱼₖ², and where the rows do share a direction the shared part m is not counted as noise
    (Σ cⱼₖ² counted it: 7 rows whose cosines are all 0.3 read a σ of 0.065, and a shared direction
    needed n(n − 1)/2 > 25 pairs, n ≥ 8, to be told from noise at all).
    """
    n = n_samples
    pairs = n * (n - 1) // 2
    if pairs < 2:  # one pair has no spread about its own mean to measure the noise by: no test
        return math.inf
    spread = float(gram_frob_sq) - n - n * (n - 1) * float(mean_cosine) ** 2
    # the spread about the pairs' own mean is that of P pairs less one degree of freedom (Bessel's P / (P − 1)):
    # without it, two rows were always "above their noise" (σ = 0) and three rows of no shared direction got a share
    # far more often than the 0.5 % below (a user trial)
    return math.sqrt(2.0 * max(spread, 0.0) * pairs / (pairs - 1)) / (n * (n - 1))


# Student's t 99.9 % quantiles above _NOISE_Z, by degrees of freedom (scipy.stats.t.ppf(0.999, df); from 9 degrees
# of freedom on, 4.30 and less): three rows (3 pairs) and four rows (6 pairs). Written out, not computed: importing
# scipy.stats cost every first call its second (tests/test_cosine.py checks them against scipy).
_FEW_PAIRS_Z = {2: 22.327124770119866, 5: 5.893429531356009}


def _noise_z(n_samples: int) -> float:
    """How many standard deviations (:func:`_null_sigma`) the mean cosine must exceed: ``_NOISE_Z``, or, for few rows,
    the 99.9 % quantile of Student's t with one degree of freedom less than the ``P = n(n − 1)/2`` pairs whose spread
    estimates the noise (three rows: 22.3, four: 5.9; from five rows on, ``_NOISE_Z`` is the larger). A noise measured
    on few pairs is itself uncertain: with 5 for three rows, rows of no shared direction got a share in a few trials in
    a hundred."""
    pairs = n_samples * (n_samples - 1) // 2
    return max(_NOISE_Z, _FEW_PAIRS_Z.get(pairs - 1, _NOISE_Z))


def _share_from_sums(unit_sum, unit_sq_sum, n_samples, n_dimensions, *, caller, gram_frob_sq):
    """Σ of the ``n_dimensions`` largest CCᵢ over Σᵢ CCᵢ, from the sums of unit rows and of their squares.

    NaN with a warning when the mean cosine Σᵢ CCᵢ is not above ``_NOISE_Z`` times its standard
    deviation for rows that share no direction (:func:`_null_sigma`): the total is then noise, and
    the share of noise is noise (isotropic ``randn(2000, 50)`` read 0.991, 1.041, NaN, NaN, 0.59 for
    five seeds, a mean cosine of about 5e-5 against a standard deviation of 5e-4).
    ``gram_frob_sq``: a callable giving ``‖Σ x̂x̂ᵀ‖²_F`` (an O(n·d²) pass), called only when the
    bound ``‖Σ x̂x̂ᵀ‖²_F ≤ n²`` leaves the decision open.
    """
    cc = _contributions_from_sums(unit_sum, unit_sq_sum, n_samples)
    total = cc.sum()
    value = float(total.detach() if is_torch(total) else total)
    if n_samples < 3:  # one pair: no spread to measure the noise by (before the O(n·d) pass of gram_frob_sq)
        warnings.warn(f"{caller}: the share is undefined (NaN) for {n_samples} rows: one pair of rows has no spread of "
                      f"cosines to tell a shared direction from noise by; measure at least 3 rows.", RuntimeWarning,
                      stacklevel=user_stacklevel())
        return total * float("nan")
    noise, z = None, _noise_z(n_samples)
    if value > 0.0 and not value > z * _null_sigma(n_samples * n_samples, n_samples):
        noise = z * _null_sigma(gram_frob_sq(), n_samples, value)
    if not value > 0.0 or (noise is not None and not value > noise):
        against = "" if noise is None else f", against {z:.3g} times its standard deviation for rows that share no direction, {noise:.3g}"
        warnings.warn(f"{caller}: the share is undefined (NaN) when the mean cosine similarity is not above its "
                      f"sampling noise: no direction is shared by the rows, so no dimension dominates it. Got a mean "
                      f"cosine similarity of {value:.3g}{against}.", RuntimeWarning, stacklevel=user_stacklevel())
        return total * float("nan")
    if is_torch(cc):
        import torch

        top = torch.topk(cc, n_dimensions).values
    else:
        top = np.sort(cc)[::-1][:n_dimensions]
    return top.sum() / total


def _sums(X, caller):
    """Σ x̂ and Σ x̂² over the rows (per dimension): numpy input in float64 a chunk of rows at a time, no n×d copy."""
    if is_torch(X):
        U = _unit_rows(X, caller=caller)
        return U.sum(0), (U * U).sum(0)
    units = _unit_sums(X, caller=caller, squares=True)
    return units.sum, units.squares


def _unit_gram_frob_sq(X, caller):
    """‖Σ x̂x̂ᵀ‖²_F over the unit rows (float64): numpy in chunked passes, torch from its unit rows.

    ‖ÛᵀÛ‖_F = ‖ÛÛᵀ‖_F: the smaller is formed (for numpy n × n when n < d, :func:`isotropy._kernels.rows.row_statistics`).
    """
    if is_torch(X):
        U = _unit_rows(X.detach(), caller=caller).double()
        G = U.T @ U if U.shape[0] >= U.shape[1] else U @ U.T  # the same Frobenius norm, the smaller product
        return float((G * G).sum())
    from isotropy._kernels.rows import row_statistics

    G = row_statistics(X, ("unit_gram",))["unit_gram"]
    return float(np.vdot(G, G))


def _check_n_dimensions(n_dimensions, n_features, *, caller):
    check_scalar(n_dimensions, "n_dimensions", caller=caller, kind=numbers.Integral, low=1, high=n_features)
    return int(n_dimensions)


@without_autocast
def cosine_contributions(X):
    """Contribution of each dimension to the mean cosine similarity of the rows of ``X``.

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        One vector per row, ``n_samples >= 2``; no all-zero rows.

    Returns
    -------
    cc : ndarray or torch.Tensor of shape (n_features,)
        ``cc[i]`` = mean over distinct pairs (j, k) of x̂ⱼᵢ·x̂ₖᵢ; ``cc.sum()`` is
        :func:`isotropy.cosine_similarity_mean`. float64 numpy for numpy input; on the input's
        device (differentiable) for a tensor: float32 for float16, bfloat16 and integer tensors
        (computed in float32), else the input's dtype.

    Notes
    -----
    With x̂ⱼ = xⱼ/‖xⱼ‖, sᵢ = Σⱼ x̂ⱼᵢ and qᵢ = Σⱼ x̂ⱼᵢ²,

    .. math:: CC_i = \\frac{1}{n(n-1)} \\sum_{j \\neq k} \\hat x_{ji} \\hat x_{ki}
              = \\frac{s_i^2 - q_i}{n(n-1)},
              \\qquad \\sum_i CC_i = \\overline{\\cos}.

    Timkey & van Schijndel estimate the same quantity from randomly drawn pairs; this is the exact
    mean over all distinct pairs.

    References
    ----------
    .. [1] W. Timkey and M. van Schijndel, "All Bark and No Bite: Rogue Dimensions in Transformer
       Language Models Obscure Representational Quality", EMNLP 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy.metrics.rogue import cosine_contributions
    >>> X = np.array([[3.0, 4.0], [3.0, -4.0], [1.0, 0.0]])  # pair cosines -0.28, 0.6, 0.6
    >>> cosine_contributions(X).round(4)                    # (0.36 + 0.6 + 0.6)/3, -0.64/3
    array([ 0.52  , -0.2133])
    """
    caller = "cosine_contributions"
    X = check_X(X, caller=caller)
    return _contributions_from_sums(*_sums(X, caller), X.shape[0])


@without_autocast
def rogue_dimension_share(X, *, n_dimensions=1):
    """Share of the expected cosine similarity carried by the top ``n_dimensions`` dimensions.

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        One vector per row (e.g. sentence embeddings), ``n_samples >= 2``; no all-zero rows.
    n_dimensions : int in [1, n_features], default=1
        k, the number of largest contributions summed.

    Returns
    -------
    share : float or torch.Tensor
        Σ of the k largest :func:`cosine_contributions` over their total (the mean cosine
        similarity). k/d or less when every dimension contributes alike; near 1 (it can exceed 1
        when other dimensions contribute negatively) when k "rogue" dimensions dominate the cosine
        similarity. Python float for numpy input (float64); a 0-dim tensor on the input's device for
        a tensor: float32 for float16, bfloat16 and integer tensors (computed in float32), else the
        input's dtype.

        NaN, with a ``RuntimeWarning``, when the mean cosine similarity is not above five times
        its standard deviation for rows that share no direction (centred or isotropic data: see
        Notes): the share of a total that is noise is undefined.

    Raises
    ------
    IsotropyValueError
        If ``X`` is not 2-d, has NaN/inf or all-zero rows, or if ``n_dimensions`` is out of range.

    Notes
    -----
    With CCᵢ the contribution of dimension i (see :func:`cosine_contributions`) and T the indices
    of the k largest CCᵢ,

    .. math:: \\mathrm{share}_k = \\frac{\\sum_{i \\in T} CC_i}{\\sum_{i=1}^{d} CC_i}.

    For rows that share no direction (independent, of mean direction 0) the mean cosine
    m = Σᵢ CCᵢ has mean 0 and standard deviation σ = √(2(‖ÛᵀÛ‖²_F − n − n(n − 1)m²)·P/(P − 1))/(n(n − 1)),
    Û the unit rows and P = n(n − 1)/2 the pairs (the pairs' cosines' spread about m, so that a shared
    direction is not counted as noise, with Bessel's correction); the share is reported only when
    Σᵢ CCᵢ > zσ, z = 5, or for few rows the 99.9 % quantile of Student's t with P − 1 degrees of freedom
    when larger (22.3 for three rows, 5.9 for four; two rows, one pair, are never enough). For such rows
    that happens with probability below 0.5 % however they are spread. σ ≤ √(2P/((P − 1)·n(n − 1))), so
    the O(n·d·min(n, d)) product is formed only when the mean cosine is below z times that bound.

    Timkey & van Schijndel find that in GPT-2, BERT and other transformers one to three
    dimensions carry most of the expected cosine similarity; Rudman & Eickhoff (ICLR 2024) relate
    them to anisotropy.

    References
    ----------
    .. [1] W. Timkey and M. van Schijndel, "All Bark and No Bite: Rogue Dimensions in Transformer
       Language Models Obscure Representational Quality", EMNLP 2021.

    Examples
    --------
    One dimension holds a large common offset, the others are noise:

    >>> import numpy as np
    >>> from isotropy import rogue_dimension_share
    >>> X = np.random.default_rng(0).normal(size=(500, 8))
    >>> X[:, 3] += 10.0
    >>> round(rogue_dimension_share(X), 2)
    1.0
    """
    caller = "rogue_dimension_share"
    if is_dask(X):  # per-chunk sums of unit rows merged on the dask scheduler
        from isotropy.distributed._graph import check_dask_X
        from isotropy.distributed._rows import unit_gram_frob_sq, unit_sums

        X = check_dask_X(X, caller=caller)
        k = _check_n_dimensions(n_dimensions, X.shape[1], caller=caller)
        unit_sum, unit_sq_sum, zero, subnormal = unit_sums(X, caller=caller)
        _refuse_rows(zero, subnormal, caller=caller, name="X")
        return float(_share_from_sums(unit_sum, unit_sq_sum, X.shape[0], k, caller=caller,
                                      gram_frob_sq=lambda: unit_gram_frob_sq(X)))
    X = check_X(X, caller=caller)
    k = _check_n_dimensions(n_dimensions, X.shape[1], caller=caller)
    return to_output(_share_from_sums(*_sums(X, caller), X.shape[0], k, caller=caller,
                                      gram_frob_sq=lambda: _unit_gram_frob_sq(X, caller)), X)
