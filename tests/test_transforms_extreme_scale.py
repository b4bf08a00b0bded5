"""Whitening and the clustering transforms at extreme scales: exact where the result is representable, a one-line
refusal where it is not.

Whitening is scale-covariant (the whitening matrix of c·X is W/c): ``whiten`` returns unit-scale data at
any scale of X; ``Whitening`` also stores the variances (|x|**2), which float64 holds only for |x|
between about 1e-154 and 1e154. Before, X·1e300 gave a raw LinAlgError and X·1e-300 a false rank error.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from isotropy import IsotropyValueError
from isotropy.transforms import (
    ClusterCentering,
    ClusterIsotropy,
    Whitening,
    cluster_center,
    cluster_isotropy,
    whiten,
)


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
    with pytest.raises(IsotropyValueError, match=r"rank-deficient covariance \(rank 4 < the 5 features"):
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


# --- The clustering transforms far from unit scale -------------------------------------------------------------
# K-means (and the Gaussian mixture) on X itself square |x|: inf from |x| ~ 2**512, 0 below 2**-537. Before, at
# 2**520 ClusterCentering(4).predict agreed with labels_ on 75% of these points and the labels matched those of the
# unit-scale fit on 25%. They are now fitted on X·2**-e (exact for normal numbers) and scaled back.

SCALES = (520, -540, 1000)


@pytest.fixture(scope="module")
def blobs():
    """Four clusters in 5-d (240 points) and 40 new points; |x| below 2**5, so X·2**1000 is representable."""
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(size=(60, 5)) + 6 * rng.normal(size=5) for _ in range(4)])
    return X, rng.normal(size=(40, 5)) * 4


def _assert_scaled(scaled, reference, k):
    """``scaled`` is ``reference · 2**k`` to 1e-12 relative (of the largest entry)."""
    back = np.ldexp(scaled, -k)
    assert np.isfinite(back).all()
    np.testing.assert_allclose(back, reference, rtol=0, atol=1e-12 * np.abs(reference).max())


@pytest.mark.parametrize("n_clusters", ["auto", 4])
@pytest.mark.parametrize("k", SCALES)
def test_cluster_centering_far_from_unit_scale_is_the_unit_scale_fit(blobs, k, n_clusters):
    X, new = blobs
    reference = ClusterCentering(n_clusters=n_clusters, random_state=0).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow in square on the way
        fitted = ClusterCentering(n_clusters=n_clusters, random_state=0).fit(np.ldexp(X, k))
        predicted, Y, Y_new = (fitted.predict(np.ldexp(X, k)), fitted.transform(np.ldexp(X, k)),
                               fitted.transform(np.ldexp(new, k)))
    assert reference.n_clusters_ == fitted.n_clusters_ == 4  # "auto" makes the same choice
    assert fitted.silhouette_scores_.keys() == reference.silhouette_scores_.keys()
    for j, score in reference.silhouette_scores_.items():
        assert fitted.silhouette_scores_[j] == pytest.approx(score, rel=1e-12)
    np.testing.assert_array_equal(fitted.labels_, reference.labels_)
    np.testing.assert_array_equal(predicted, fitted.labels_)
    np.testing.assert_array_equal(fitted.predict(np.ldexp(new, k)), reference.predict(new))
    _assert_scaled(fitted.cluster_centers_, reference.cluster_centers_, k)
    _assert_scaled(Y, reference.transform(X), k)
    _assert_scaled(Y_new, reference.transform(new), k)


@pytest.mark.parametrize("k", SCALES)
def test_cluster_center_far_from_unit_scale(blobs, k):
    X, _ = blobs
    Y0, labels0 = cluster_center(X, random_state=1)
    Y, labels = cluster_center(np.ldexp(X, k), random_state=1)
    np.testing.assert_array_equal(labels, labels0)
    _assert_scaled(Y, Y0, k)
    # one cluster (plain centring): the mean of X·2**k, whose sum overflows at 2**1023
    top = np.ldexp(X / np.abs(X).max(), 1023)
    Y1, _ = cluster_center(top, n_clusters=1)
    _assert_scaled(Y1, X / np.abs(X).max() - (X / np.abs(X).max()).mean(axis=0), 1023)


@pytest.mark.parametrize("k", SCALES)
def test_cluster_isotropy_kmeans_far_from_unit_scale_is_the_unit_scale_fit(blobs, k):
    X, new = blobs
    reference = ClusterIsotropy(n_clusters=4, n_components=2, random_state=0).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        fitted = ClusterIsotropy(n_clusters=4, n_components=2, random_state=0).fit(np.ldexp(X, k))
        Y, Y_new = fitted.transform(np.ldexp(X, k)), fitted.transform(np.ldexp(new, k))
    np.testing.assert_array_equal(fitted.labels_, reference.labels_)
    np.testing.assert_array_equal(fitted.predict(np.ldexp(X, k)), fitted.labels_)
    np.testing.assert_array_equal(fitted.predict(np.ldexp(new, k)), reference.predict(new))
    np.testing.assert_array_equal(fitted.n_components_, reference.n_components_)
    np.testing.assert_allclose(fitted.components_, reference.components_, rtol=0, atol=1e-12)  # unit vectors
    _assert_scaled(fitted.cluster_centers_, reference.cluster_centers_, k)
    _assert_scaled(fitted.clusterer_.cluster_centers_, reference.clusterer_.cluster_centers_, k)
    _assert_scaled(Y, reference.transform(X), k)
    _assert_scaled(Y_new, reference.transform(new), k)
    Y_fn, labels = cluster_isotropy(np.ldexp(X, k), n_clusters=4, n_components=2, random_state=0)
    np.testing.assert_array_equal(labels, reference.labels_)
    _assert_scaled(Y_fn, reference.transform(X), k)


@pytest.mark.parametrize("k", SCALES)
def test_cluster_isotropy_gmm_function_far_from_unit_scale(blobs, k):
    X, _ = blobs
    Y0, labels0 = cluster_isotropy(X, n_clusters=4, n_components=2, clustering="gmm", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        Y, labels = cluster_isotropy(np.ldexp(X, k), n_clusters=4, n_components=2, clustering="gmm", random_state=0)
    np.testing.assert_array_equal(labels, labels0)
    _assert_scaled(Y, Y0, k)


@pytest.mark.parametrize("k", [300, -300])
def test_cluster_isotropy_gmm_stores_the_mixture_of_X_where_float64_holds_it(blobs, k):
    """At |x| ~ 2**±300 the variances (4**±300) are representable: clusterer_ is the unit-scale mixture scaled back.
    Data with max|x| in [0.5, 1) are their own unit-scale version, so the fits agree to rounding. Before, the
    mixture of X·2**-300 had all its variances at reg_covar=1e-6 (its labels matched on 25% of the points)."""
    X, new = blobs
    X = np.ldexp(X, -np.frexp(np.abs(X).max())[1])
    new = np.ldexp(new, -5)  # |x| below 1 too
    reference = ClusterIsotropy(n_clusters=4, n_components=2, clustering="gmm", random_state=0).fit(X)
    fitted = ClusterIsotropy(n_clusters=4, n_components=2, clustering="gmm", random_state=0).fit(np.ldexp(X, k))
    np.testing.assert_array_equal(fitted.labels_, reference.labels_)
    np.testing.assert_array_equal(fitted.predict(np.ldexp(new, k)), reference.predict(new))
    ref, fit = reference.clusterer_, fitted.clusterer_
    _assert_scaled(fit.means_, ref.means_, k)
    _assert_scaled(fit.covariances_, ref.covariances_, 2 * k)
    _assert_scaled(fit.precisions_, ref.precisions_, -2 * k)
    _assert_scaled(fit.precisions_cholesky_, ref.precisions_cholesky_, -k)
    np.testing.assert_allclose(fit.weights_, ref.weights_, rtol=1e-12)
    assert fit.lower_bound_ == pytest.approx(ref.lower_bound_ - X.shape[1] * k * np.log(2.0), rel=1e-12)
    _assert_scaled(fitted.transform(np.ldexp(new, k)), reference.transform(new), k)


@pytest.mark.parametrize(("k", "variances"), [(520, "1e313"), (-540, "1e-325")])
def test_cluster_isotropy_gmm_refuses_variances_float64_cannot_hold(blobs, k, variances):
    X, _ = blobs
    with pytest.raises(IsotropyValueError) as info:
        ClusterIsotropy(n_clusters=4, n_components=2, clustering="gmm", random_state=0).fit(np.ldexp(X, k))
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("The 'X' parameter of ClusterIsotropy with clustering='gmm' must have variances "
                              "that float64 holds")
    assert f"Got X with largest |x| = {np.abs(np.ldexp(X, k)).max():.3g}, whose variances, about {variances}, " \
           in message
    assert "clustering='kmeans', and cluster_isotropy(X) with either, work at any scale" in message


@pytest.mark.parametrize("make", [lambda: ClusterCentering(n_clusters=2), lambda: ClusterIsotropy(n_clusters=2, n_components=1)])
def test_clustering_refuses_only_subnormal_data_in_one_line(blobs, make):
    X, _ = blobs
    estimator = make()
    with pytest.raises(IsotropyValueError) as info:
        estimator.fit(np.ldexp(X / np.abs(X).max(), -1050))
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"The 'X' parameter of {type(estimator).__name__} must have values of normal "
                              f"magnitude. Got only subnormal float64 numbers (largest |x| = ")


def test_feature_name_mismatch_names_the_columns_and_complex_tensors_are_refused():
    # the one-line cut kept only "The feature names should match ..." (not which), and a complex torch tensor was fitted
    # on its real part (torch's .double() warning only) where a complex numpy array is refused
    import pandas as pd
    import torch

    X = pd.DataFrame(np.random.default_rng(0).normal(size=(30, 3)), columns=["a", "b", "c"])
    fitted = Whitening().fit(X)
    with pytest.raises(IsotropyValueError) as info:
        fitted.transform(X.rename(columns={"c": "z"}))
    assert str(info.value).endswith("Feature names unseen at fit time: z; Feature names seen at fit time, yet now "
                                    "missing: c.") and "\n" not in str(info.value)
    with pytest.raises(TypeError, match="^The 'X' parameter of Whitening.fit must be a real-valued tensor"):
        Whitening().fit(torch.ones(30, 3, dtype=torch.complex64))


def _cross(rng, n=100):
    """Two clusters at (∓20, 0): the first stretched along y, the second along x."""
    return np.vstack([rng.normal(size=(n, 2)) * [0.1, 5.0] + [-20.0, 0.0],
                      rng.normal(size=(n, 2)) * [5.0, 0.1] + [20.0, 0.0]])


def test_gmm_predicts_far_points_by_the_variances_without_overflow():
    """A mixture fitted at unit scale, asked about points 1e3 to 1e300 away: the component whose variance is largest
    along the point's direction (the mixture's log-density there is −½ Σ (x_d/σ_kd)², the constants negligible).
    GaussianMixture.predict squares x: from |x| ~ 1e155 it overflowed and answered component 0 for every point."""
    ci = ClusterIsotropy(n_clusters=2, n_components=1, clustering="gmm", random_state=0).fit(_cross(np.random.default_rng(0)))
    along_x = ci.predict([[20.0, 0.0]])[0]
    along_y = 1 - along_x
    points = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.01], [0.01, -1.0]])
    expected = [along_x, along_y, along_x, along_y]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for scale in (1e3, 1e154, 1e155, 1e300, 1.7e308):
            np.testing.assert_array_equal(ci.predict(points * scale), expected, err_msg=f"scale {scale:g}")
            Y = ci.transform(points * scale)
            assert np.isfinite(Y).all() or scale > 1e300  # (1.7e308 minus a centre may round to inf: not refused)


def test_gmm_fits_clusters_under_a_large_common_offset():
    """Clusters 0.05 apart at offsets up to 1e8: the mixture is fitted on the centred data (scikit-learn's expansion of
    (x − μ)² cancelled there: at 1e6 the fit failed with "ill-defined empirical covariance")."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(100, 2)) * 0.005, rng.normal(size=(100, 2)) * 0.005 + [0.05, 0.0]])
    truth = np.repeat([0, 1], 100)
    for offset in (0.0, 1e6, 1e8):
        ci = ClusterIsotropy(n_clusters=2, n_components=1, clustering="gmm", random_state=0).fit(X + offset)
        assert (ci.labels_ == truth).all() or (ci.labels_ == 1 - truth).all(), offset
        np.testing.assert_array_equal(ci.predict(X + offset), ci.labels_)
        np.testing.assert_allclose(ci.clusterer_.means_ - offset, ClusterIsotropy(
            n_clusters=2, n_components=1, clustering="gmm", random_state=0).fit(X).clusterer_.means_, atol=1e-7)


def test_most_probable_component_is_scikit_learns_predict_at_an_ordinary_scale():
    from sklearn.mixture import GaussianMixture

    from isotropy.transforms._cluster_isotropy import most_probable_component

    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(size=(300, 6)) * rng.uniform(0.2, 3.0, size=6) + rng.normal(size=6) * 4 for _ in range(5)])
    mixture = GaussianMixture(n_components=5, covariance_type="diag", random_state=0).fit(X)
    new = rng.normal(size=(2000, 6)) * 6
    np.testing.assert_array_equal(most_probable_component(mixture, new), mixture.predict(new))
    np.testing.assert_array_equal(most_probable_component(mixture, X), mixture.predict(X))


def test_a_component_of_weight_zero_is_never_the_most_probable_even_far_away():
    """Where every score overflows, the component of least Σ((x − μ)ρ)² wins, but never one of weight 0 (a review)."""
    from types import SimpleNamespace

    from isotropy.transforms._cluster_isotropy import most_probable_component

    mixture = SimpleNamespace(means_=np.zeros((2, 2)), precisions_cholesky_=np.array([[0.1, 0.1], [1.0, 1.0]]),
                              weights_=np.array([0.0, 1.0]))
    np.testing.assert_array_equal(most_probable_component(mixture, np.array([[1e10, 1e10], [1e200, 1e200]])), [1, 1])
    mixture.weights_ = np.array([0.5, 0.5])  # with weight, the wider component 0 wins far away
    np.testing.assert_array_equal(most_probable_component(mixture, np.array([[1e10, 1e10], [1e200, 1e200]])), [0, 0])
