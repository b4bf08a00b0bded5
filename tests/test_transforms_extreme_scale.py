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
