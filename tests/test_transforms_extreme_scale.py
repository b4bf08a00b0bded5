"""Whitening at extreme scales: exact where the result is representable, a one-line refusal where it is not.

Whitening is scale-covariant (the whitening matrix of c·X is W/c): ``whiten`` returns unit-scale data at
any scale of X; ``Whitening`` also stores the variances (|x|**2), which float64 holds only for |x|
between about 1e-154 and 1e154. Before, X·1e300 gave a raw LinAlgError and X·1e-300 a false rank error.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from isotropy import IsotropyValueError
from isotropy.transforms import Whitening, whiten


@pytest.fixture(scope="module")
def X():
    rng = np.random.default_rng(5)
    return rng.normal(size=(80, 4)) * [3.0, 1.0, 0.5, 0.1] + rng.normal(size=4)


@pytest.mark.parametrize("scale", [1e300, 1e200, 1e-160, 1e-300, 2.0**1000, 2.0**-1000])
def test_whiten_is_exact_at_any_scale(X, scale):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow/underflow RuntimeWarning on the way
        Y = whiten(X * scale)
    assert np.isfinite(Y).all()
    np.testing.assert_allclose(Y, whiten(X), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("scale", [1e100, 1e-100, 1e150, 1e-150])
def test_whitening_fit_scales_back_exactly_where_representable(X, scale):
    reference, fitted = Whitening().fit(X), Whitening().fit(X * scale)
    np.testing.assert_allclose(fitted.components_ * scale, reference.components_, rtol=1e-11)
    np.testing.assert_allclose(fitted.mean_ / scale, reference.mean_, rtol=1e-11)
    np.testing.assert_allclose(fitted.explained_variance_ / scale**2, reference.explained_variance_, rtol=1e-11)
    np.testing.assert_allclose(fitted.transform(X * scale), reference.transform(X), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize(("scale", "variance"), [
    (1e300, "largest variance, about 1e601, is above float64's largest number 1.8e+308"),
    (1e200, "largest variance, about 1e401, is above float64's largest number 1.8e+308"),
    (1e-300, "smallest variance, about 1e-602, is below float64's smallest normal number 2.2e-308"),
    (1e-160, "smallest variance, about 1e-322, is below float64's smallest normal number 2.2e-308"),
])
def test_whitening_fit_refuses_variances_float64_cannot_hold(X, scale, variance):
    with pytest.raises(IsotropyValueError) as info:
        Whitening().fit(X * scale)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("The 'X' parameter of Whitening must have variances that float64 holds")
    assert f"Got X with largest |x| = {np.abs(X * scale).max():.3g}, whose {variance}: " in message
    assert "|x| about 1e-154 to 1e154; whiten(X) whitens X exactly at any scale" in message


def test_eps_stays_in_the_units_of_X_at_extreme_scales(X):
    # eps * 4**-exponent alone would overflow (X·1e-300, eps=1: W must be ~U, not 0) or vanish beside
    # a zero variance (rank-deficient X·1e300, eps=1e-6: W must be finite)
    tiny = X * 1e-300
    centred = tiny - tiny.mean(axis=0)
    U = np.linalg.eigh(np.cov(X, rowvar=False))[1][:, ::-1]
    np.testing.assert_allclose(np.abs(whiten(tiny, eps=1.0)), np.abs(centred @ U), rtol=1e-9)
    flat = np.hstack([X, X[:, :1]]) * 1e300  # rank 4 in 5-d
    with pytest.raises(IsotropyValueError, match=r"rank-deficient covariance \(rank 4 < n_components=5\)"):
        whiten(flat)
    Y = whiten(flat, eps=1e-6)
    assert np.isfinite(Y).all()
    np.testing.assert_allclose(np.cov(Y[:, :4], rowvar=False), np.eye(4), atol=1e-8)


@pytest.fixture(scope="module")
def constant_column():
    """Three random columns and a constant one: an exactly zero eigenvalue, kept with eps > 0."""
    rng = np.random.default_rng(11)
    return np.hstack([rng.normal(size=(50, 3)) * [2.0, 1.0, 0.5], np.ones((50, 1))])


@pytest.mark.parametrize("scale", [1e200, 1e300, 2.0**1000])
def test_whiten_with_a_zero_variance_direction_and_eps_is_finite_at_large_scales(constant_column, scale):
    # frexp(0) has exponent 0: a zero eigenvalue set the column's scale to 4**exponent, beside which eps
    # underflowed (eps * 4**-exponent = 0 from |x| ~ 1e158) and the column was 1/0: NaN in the output
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Y = whiten(constant_column * scale, eps=1e-6)
    assert np.isfinite(Y).all()
    # eps (in X's units) is nothing beside the other variances: those directions are whitened as without it
    np.testing.assert_allclose(np.abs(Y[:, :3]), np.abs(whiten(constant_column[:, :3])), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(("k", "eps"), [(600, 2.0**-200), (700, 1e-300), (1000, 2.0**-1070), (-500, 2.0**200)])
def test_whiten_of_X_times_2_to_the_k_with_eps_times_4_to_the_k_is_whiten_of_X(constant_column, k, eps):
    """whiten(X·2**k, eps·4**k) is whiten(X, eps) bit for bit: the variances of X·2**k are 4**k times those of X, so
    (lam·4**k + eps·4**k)**-1/2 (X·2**k - mean·2**k) is (lam + eps)**-1/2 (X - mean), and powers of two change no
    digit. The constant column has a zero eigenvalue, whose column of W is eps**-1/2 (times the power of two)."""
    from isotropy.transforms._whitening import fit_whitening

    scaled, scaled_eps = np.ldexp(constant_column, k), float(np.ldexp(eps, 2 * k))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Y = whiten(scaled, eps=scaled_eps)
    np.testing.assert_array_equal(Y, whiten(constant_column, eps=eps))
    # the whitening matrices themselves (fit_whitening's, at unit scale: X = 2**exponent · Xu)
    mean, W, lam, exponent = fit_whitening(scaled, eps=scaled_eps)
    mean0, W0, lam0, exponent0 = fit_whitening(constant_column, eps=eps)
    assert lam[-1] == lam0[-1] == 0.0 and np.isfinite(W).all()
    np.testing.assert_array_equal(np.ldexp(W, k - exponent + exponent0), W0)
    np.testing.assert_array_equal(np.ldexp(mean, exponent - k), np.ldexp(mean0, exponent0))
    assert abs(W0[3, 3]) == pytest.approx(np.ldexp(1.0, exponent0) / np.sqrt(eps), rel=1e-15)
