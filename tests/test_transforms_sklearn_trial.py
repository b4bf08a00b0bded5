"""Tests of isotropy.transforms from a new user's trial: few rows, large offsets, warnings, messages, inverses.

Expected values come from numpy (SVD, direct differences) and scikit-learn (KMeans, PCA), computed here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.cluster import KMeans
from sklearn.datasets import make_blobs
from sklearn.pipeline import make_pipeline

from isotropy.transforms import (
    AllButTheTop,
    ClusterCentering,
    ClusterIsotropy,
    Whitening,
    all_but_the_top,
    cluster_center,
    cluster_isotropy,
)


def _exact_mean(X):
    """The column means of ``X`` from its exactly rounded sums (``math.fsum``): ``X.mean(axis=0)`` adds the rows in
    order, and under an offset of 1e7 its error (many ulps of the offset) showed in the centred rows beside ours."""
    return np.array([math.fsum(column) / X.shape[0] for column in X.T])


def _top_projector(X, D):
    """Projector on the top ``D`` right singular vectors of centred ``X`` (numpy SVD: the reference)."""
    _, _, vt = np.linalg.svd(X - _exact_mean(X), full_matrices=False)
    return vt[:D].T @ vt[:D]


# ---------------------------------------------------------------- 1. AllButTheTop on few rows

def test_all_but_the_top_refuses_more_directions_than_centred_rows_span():
    X = np.random.default_rng(0).normal(size=(8, 768))
    with pytest.raises(ValueError, match=r"'n_components' .* at most min\(n_samples - 1, n_features\) = 0: "
                                         r"n_samples=1 rows span at most n_samples - 1 directions"):
        AllButTheTop(n_components=1).fit(X[:1])
    with pytest.raises(ValueError, match=r"'n_components' .* = 7: n_samples=8 rows .* Got 8 instead"):
        all_but_the_top(X, n_components=8)
    # n_samples - 1 is accepted, and removes the directions numpy's SVD gives
    abtt = AllButTheTop(n_components=7).fit(X)
    np.testing.assert_allclose(abtt.components_.T @ abtt.components_, _top_projector(X, 7), atol=1e-10)


def test_all_but_the_top_auto_caps_at_n_samples_minus_one_with_a_warning():
    rng = np.random.default_rng(1)
    X, X_new = rng.normal(size=(8, 768)), rng.normal(size=(5, 768))
    with pytest.warns(UserWarning, match=r"n_components='auto' gives 8 .* n_samples=8 rows .* removing 7") as record:
        abtt = AllButTheTop().fit(X)
    assert record[0].filename == __file__
    assert abtt.n_components_ == 7
    P = _top_projector(X, 7)
    Xc = X_new - X.mean(axis=0)
    np.testing.assert_allclose(abtt.transform(X_new), Xc - Xc @ P, atol=1e-10)
    with pytest.warns(UserWarning, match="removing 7") as record:
        Y = all_but_the_top(X)
    assert record[0].filename == __file__
    np.testing.assert_allclose(Y, (X - X.mean(axis=0)) @ (np.eye(768) - P), atol=1e-10)
    # one row: "auto" removes nothing (plain centring), not coordinate 0
    with pytest.warns(UserWarning, match="removing 0"):
        np.testing.assert_array_equal(AllButTheTop().fit(X[:1]).transform(X_new), X_new - X[0])


# ---------------------------------------------------------------- 2. nearest centre under a large offset

def _offset_blobs():
    """Two tight clusters (std 0.01, 0.05 apart per coordinate) under a common offset of 1e7."""
    rng = np.random.default_rng(0)
    return np.vstack([rng.normal(size=(200, 16)) * 0.01, rng.normal(size=(200, 16)) * 0.01 + 0.05]) + 1e7


def _is_true_split(labels):
    return len(set(labels[:200])) == 1 and len(set(labels[200:])) == 1 and labels[0] != labels[200]


def test_cluster_centering_assigns_training_points_to_their_cluster_under_a_large_offset():
    B = _offset_blobs()
    cc = ClusterCentering(n_clusters=2, random_state=0).fit(B)
    assert _is_true_split(cc.labels_)  # sklearn's KMeans.fit centres the data: its labels are the reference
    np.testing.assert_array_equal(cc.predict(B), cc.labels_)
    np.testing.assert_array_equal(cc.transform(B), B - cc.cluster_centers_[cc.labels_])


def test_cluster_isotropy_kmeans_assigns_training_points_to_their_cluster_under_a_large_offset():
    B = _offset_blobs()
    ci = ClusterIsotropy(n_clusters=2, n_components=1, random_state=0).fit(B)
    assert _is_true_split(ci.clusterer_.labels_)
    np.testing.assert_array_equal(ci.labels_, ci.clusterer_.labels_)
    np.testing.assert_array_equal(ci.predict(B), ci.labels_)
    # per true cluster: subtract its mean, remove its top principal direction (numpy SVD)
    expected = np.empty_like(B)
    for rows in (slice(0, 200), slice(200, 400)):
        Xc = B[rows] - _exact_mean(B[rows])
        expected[rows] = Xc - Xc @ _top_projector(B[rows], 1)
    np.testing.assert_allclose(ci.transform(B), expected, atol=1e-8)


def test_nearest_centre_on_ordinary_data_gives_sklearn_kmeans_predict_labels():
    X, _ = make_blobs(600, centers=6, n_features=12, cluster_std=3.0, random_state=2)
    X_new, _ = make_blobs(400, centers=6, n_features=12, cluster_std=6.0, random_state=5)
    cc = ClusterCentering(n_clusters=6, random_state=0).fit(X)
    km = KMeans(n_clusters=6, init=cc.cluster_centers_, n_init=1).fit(X)  # converged centres: a fixed point
    np.testing.assert_allclose(km.cluster_centers_, cc.cluster_centers_, atol=1e-12)
    np.testing.assert_array_equal(cc.predict(X_new), km.predict(X_new))
    np.testing.assert_array_equal(cc.predict(X), cc.labels_)
    ci = ClusterIsotropy(n_clusters=6, n_components=2, random_state=0).fit(X)
    np.testing.assert_array_equal(ci.predict(X_new), ci.clusterer_.predict(X_new))
    np.testing.assert_array_equal(ci.labels_, ci.clusterer_.labels_)


# ---------------------------------------------------------------- 3. warnings name the user's line

def _tiny_cluster_data():
    """40 points near the origin and one far away: with 2 clusters, one cluster has a single point."""
    rng = np.random.default_rng(3)
    return np.vstack([rng.normal(size=(40, 4)), [[100.0, 100.0, 100.0, 100.0]]])


_CALLS = {  # each lambda is a line of this file: the line the warning must name
    "function": lambda X: cluster_isotropy(X, n_clusters=2, n_components=1, random_state=0),
    "fit": lambda X: ClusterIsotropy(n_clusters=2, n_components=1, random_state=0).fit(X),
    "fit_transform": lambda X: ClusterIsotropy(n_clusters=2, n_components=1, random_state=0).fit_transform(X),
    "pipeline": lambda X: make_pipeline(ClusterIsotropy(n_clusters=2, n_components=1, random_state=0)).fit(X),
}


@pytest.mark.parametrize("call", list(_CALLS))
def test_cluster_isotropy_small_cluster_warning_points_at_the_callers_line(call):
    X = _tiny_cluster_data()
    with pytest.warns(UserWarning, match=r"1 of 2 clusters have at most n_components \+ 1 = 2 points") as record:
        _CALLS[call](X)
    assert len(record) == 1
    assert record[0].filename == __file__


# ---------------------------------------------------------------- 4. unknown keywords of fit_transform

@pytest.mark.parametrize("estimator", [AllButTheTop(n_components=1), ClusterCentering(n_clusters=2, random_state=0),
                                       ClusterIsotropy(n_clusters=2, n_components=1, random_state=0), Whitening()],
                         ids=lambda e: type(e).__name__)
def test_fit_transform_refuses_unknown_keywords_as_fit_does(estimator):
    X = np.random.default_rng(4).normal(size=(30, 5))
    with pytest.raises(TypeError, match="foo"):
        estimator.fit(X, foo=1)
    with pytest.raises(TypeError, match="foo"):
        estimator.fit_transform(X, foo=1)


# ---------------------------------------------------------------- 5. messages list every accepted value

def test_n_clusters_message_lists_ints_and_auto():
    X = np.random.default_rng(5).normal(size=(20, 3))
    with pytest.raises(ValueError, match=r"^The 'n_clusters' parameter of ClusterCentering must be one of: an int "
                                         r">= 1, or 'auto'\. Got 'AUTO' instead\.$"):
        ClusterCentering(n_clusters="AUTO").fit(X)
    with pytest.raises(ValueError, match=r"^The 'n_clusters' parameter of cluster_center must be one of: an int "
                                         r">= 1, or 'auto'\. Got 'two' instead\.$"):
        cluster_center(X, n_clusters="two")


def test_random_state_message_lists_random_state_instances():
    X = np.random.default_rng(6).normal(size=(20, 3))
    with pytest.raises(TypeError, match=r"^The 'random_state' parameter of ClusterCentering must be None, an int, "
                                        r"a numpy Generator or a numpy RandomState\. Got .*'x'.* instead\.$"):
        ClusterCentering(n_clusters=2, random_state="x").fit(X)
    # what the message lists is accepted: a RandomState gives a fit like any other seed
    cc = ClusterCentering(n_clusters=2, random_state=np.random.RandomState(0)).fit(X)
    assert cc.cluster_centers_.shape == (2, 3)


# ---------------------------------------------------------------- 6. the docs name the checked parameters

def test_docs_name_the_parameters_the_estimator_checks_run_with():
    import re
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    source = (repo / "tests" / "test_transforms.py").read_text()
    block = source[source.index("ESTIMATORS = ["):source.index("]\n", source.index("ESTIMATORS = ["))]
    checked = re.findall(r"^\s+(\w+\(.*\)),$", block, flags=re.MULTILINE)
    assert len(checked) == 8
    docs = " ".join((repo / "docs" / "api" / "transforms.md").read_text().split())
    assert "passing `sklearn.utils.estimator_checks`" not in docs  # unqualified: false at ClusterIsotropy's defaults
    for estimator in checked:
        assert f"`{estimator}`" in docs, estimator


# ---------------------------------------------------------------- 7. Whitening.inverse_transform

def _correlated(n, seed):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 6)) @ np.random.default_rng(10).normal(size=(6, 6)) + 5.0


def test_whitening_inverse_transform_recovers_x_at_full_rank():
    from sklearn.decomposition import PCA

    X, X_new = _correlated(200, 7), _correlated(50, 8)
    w = Whitening().fit(X)
    np.testing.assert_allclose(w.inverse_transform(w.transform(X)), X, rtol=0, atol=1e-10)
    np.testing.assert_allclose(w.inverse_transform(w.transform(X_new)), X_new, rtol=0, atol=1e-10)
    pca = PCA(whiten=True).fit(X)
    Z = np.random.default_rng(9).normal(size=(30, 6))
    # PCA's whitened coordinates are ours up to the sign of each direction
    signs = np.sign((w.components_ * pca.components_).sum(axis=1))
    np.testing.assert_allclose(w.inverse_transform(Z * signs), pca.inverse_transform(Z), rtol=0, atol=1e-10)
    # eps > 0 scales by (lambda + eps)**-1/2 and back: still the identity
    w_eps = Whitening(eps=0.5).fit(X)
    np.testing.assert_allclose(w_eps.inverse_transform(w_eps.transform(X_new)), X_new, rtol=0, atol=1e-10)


def test_whitening_inverse_transform_with_fewer_components_is_pcas():
    from sklearn.decomposition import PCA

    X, X_new = _correlated(200, 11), _correlated(50, 12)
    w, pca = Whitening(n_components=3).fit(X), PCA(n_components=3, whiten=True).fit(X)
    back = w.inverse_transform(w.transform(X_new))
    assert back.shape == (50, 6)
    np.testing.assert_allclose(back, pca.inverse_transform(pca.transform(X_new)), rtol=0, atol=1e-10)
    with pytest.raises(ValueError, match=r"'X' parameter of Whitening.inverse_transform must have n_components_=3 "
                                         r"columns .* Got 6 columns instead"):
        w.inverse_transform(X_new)


def test_whitening_inverse_transform_torch_in_torch_out():
    import torch

    X = _correlated(100, 13)
    w = Whitening(n_components=4).fit(X)
    Z = np.random.default_rng(14).normal(size=(20, 4)).astype(np.float32)
    out = w.inverse_transform(torch.from_numpy(Z))
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32 and out.shape == (20, 6)
    # the float64 numpy result, rounded to float32
    np.testing.assert_allclose(out.numpy(), w.inverse_transform(Z.astype(np.float64)), rtol=1e-6, atol=0)


@pytest.mark.parametrize(("fitted_eps", "later_eps"), [(0.5, 0.0), (0.0, 3.0), (0.5, 100.0)])
def test_whitening_inverse_transform_uses_the_eps_of_the_fit(fitted_eps, later_eps):
    """set_params(eps=...) without refitting changes neither transform nor its inverse: both use the fitted eps_."""
    X, X_new = _correlated(200, 15), _correlated(50, 16)
    w = Whitening(eps=fitted_eps).fit(X)
    Z = w.transform(X_new)
    w.set_params(eps=later_eps)
    assert w.eps == later_eps and w.eps_ == fitted_eps
    np.testing.assert_allclose(w.transform(X_new), Z, rtol=0, atol=0)
    np.testing.assert_allclose(w.inverse_transform(Z), X_new, rtol=0, atol=1e-10)
    w.fit(X)  # a refit takes the new eps
    assert w.eps_ == later_eps
    np.testing.assert_allclose(w.inverse_transform(w.transform(X_new)), X_new, rtol=0, atol=1e-10)


def _brute_force_nearest(X, centers):
    """argmin of |x - c|^2 by direct float64 differences: the reference."""
    return np.argmin(((X[:, None, :] - centers[None, :, :]) ** 2).sum(axis=2), axis=1)


def test_nearest_centre_with_a_spread_of_centres_far_beside_their_gaps_is_the_brute_force_one():
    """Centres at 0, 1e8·e0 and 1e8·e0 + 0.05·e1: the shift by their mean leaves |x'| ~ 3e7 beside a gap of
    0.05, where the expansion's rounding (~|x'|^2 eps ~ 0.1) decides (44.5% agreed before). Rows within its
    rounding bound are decided again by direct differences."""
    from isotropy.transforms._cluster_centering import nearest_center

    rng = np.random.default_rng(21)
    centers = np.zeros((3, 8))
    centers[1, 0] = centers[2, 0] = 1e8
    centers[2, 1] = 0.05
    X = np.vstack([centers[1] + rng.normal(size=(600, 8)) * 0.02, centers[2] + rng.normal(size=(600, 8)) * 0.02,
                   centers[0] + rng.normal(size=(50, 8))])
    expected = _brute_force_nearest(X, centers)
    assert 0 < (expected == 1).sum() < 1150 and (expected == 0).sum() == 50  # both close clusters are hit
    np.testing.assert_array_equal(nearest_center(X, centers), expected)
    # as ClusterCentering.predict and transform use it, with the centres it fitted
    cc = ClusterCentering(n_clusters=3, random_state=0).fit(X)
    fitted = _brute_force_nearest(X, cc.cluster_centers_)
    np.testing.assert_array_equal(cc.predict(X), fitted)
    np.testing.assert_array_equal(cc.transform(X), X - cc.cluster_centers_[fitted])


def test_nearest_centre_keeps_the_expansions_labels_where_no_row_is_near_a_tie():
    """Ordinary data: every row decided by the expansion (no row goes to the direct differences), as before."""
    from unittest import mock

    from isotropy.transforms import _cluster_centering

    X, _ = make_blobs(2000, centers=8, n_features=64, cluster_std=2.0, random_state=3)
    centers = KMeans(n_clusters=8, n_init=1, random_state=0).fit(X).cluster_centers_
    with mock.patch.object(_cluster_centering, "_nearest_by_differences", side_effect=AssertionError("called")):
        labels = _cluster_centering.nearest_center(X, centers)
    np.testing.assert_array_equal(labels, _brute_force_nearest(X, centers))


def test_a_tensor_through_a_transform_has_no_autograd_history_and_the_in_batch_module_does():
    """As docs/api/transforms.md says: the transforms run in numpy; InBatchClusterIsotropy is differentiable."""
    import torch

    from isotropy.training import InBatchClusterIsotropy
    from isotropy.transforms import AllButTheTop

    H = torch.randn(40, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(0), requires_grad=True)
    out = AllButTheTop(n_components=1).fit_transform(H)
    assert isinstance(out, torch.Tensor) and not out.requires_grad and out.grad_fn is None
    moved = InBatchClusterIsotropy(n_clusters=2, n_components=1)(H)
    moved.pow(2).sum().backward()
    assert H.grad is not None and torch.isfinite(H.grad).all() and H.grad.abs().sum() > 0


def _brute_force_nearest_in_chunks(X, centers, rows=500):
    return np.concatenate([_brute_force_nearest(X[s:s + rows], centers) for s in range(0, X.shape[0], rows)])


def test_nearest_centre_works_in_small_chunks_without_full_size_temporaries():
    """12,000 x 384 rows, 27 centres: the rows are shifted into one reused buffer of ~2**16 values, the squared
    norms come from einsum and the runner-up from a min, so no temporary of the rows' size (or of a 2**22-value
    chunk: 32 MiB) is made. The peak stays below 4 MiB (66 MiB before); labels are the brute-force ones."""
    import tracemalloc

    from isotropy.transforms._cluster_centering import nearest_center

    rng = np.random.default_rng(5)
    X, centers = rng.normal(size=(12_000, 384)), rng.normal(size=(27, 384))
    nearest_center(X[:10], centers)  # imports and caches outside the measurement
    tracemalloc.start()
    try:
        labels = nearest_center(X, centers)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * 2**20, peak
    np.testing.assert_array_equal(labels, _brute_force_nearest_in_chunks(X, centers))


@pytest.mark.parametrize("rows_dtype", [np.float64, np.float32])
def test_nearest_centre_with_float32_centres_is_the_brute_force_float64_one(rows_dtype):
    """float32 centres 1e5 from the origin, two of them 8 apart, rows near their bisector: the shift, products and
    squared norms were computed in float32 while the rounding bound took float64's eps, so rows near the tie were
    not re-decided (49.6% agreed). Everything is float64 now."""
    from isotropy.transforms._cluster_centering import nearest_center

    rng = np.random.default_rng(0)
    C = (rng.normal(size=(3, 8)) * 1e5).astype(np.float32)
    C[1] = C[0] + np.float32(8.0)
    X = ((C[0].astype(float) + C[1]) / 2 + rng.normal(size=(1000, 8)) * 0.5).astype(rows_dtype)
    expected = _brute_force_nearest(X.astype(float), C.astype(float))
    assert 300 < (expected == 0).sum() < 700  # both sides of the bisector are hit
    np.testing.assert_array_equal(nearest_center(X, C), expected)


@pytest.mark.parametrize("exponent", [540, -540, 1000, -1000])
def test_nearest_centre_far_from_unit_scale_gives_the_unit_scale_labels(exponent):
    """Rows and centres times 2**±540 or 2**±1000: squares overflowed to inf (every row then went to the direct
    differences, which overflowed too) or underflowed to 0 (centres [0, 0] and [1, 0], rows [.9, 0] and [.1, 0]
    times 2**-540 were labelled [0, 0]). Both are brought to unit scale by one power of two first."""
    from isotropy.transforms._cluster_centering import nearest_center

    C, X = np.array([[0.0, 0.0], [1.0, 0.0]]), np.array([[0.9, 0.0], [0.1, 0.0]])
    np.testing.assert_array_equal(nearest_center(np.ldexp(X, exponent), np.ldexp(C, exponent)), [1, 0])
    rng = np.random.default_rng(1)
    centers = rng.normal(size=(5, 16))
    X = np.vstack([centers[rng.integers(0, 5, 300)] + 0.3 * rng.normal(size=(300, 16)),
                   (centers[0] + centers[1]) / 2 + 1e-6 * rng.normal(size=(20, 16))])  # some near a tie
    expected = nearest_center(X, centers)
    np.testing.assert_array_equal(expected, _brute_force_nearest(X, centers))
    assert np.unique(expected).size == 5
    np.testing.assert_array_equal(nearest_center(np.ldexp(X, exponent), np.ldexp(centers, exponent)), expected)


def test_nearest_centre_with_rows_far_above_centres_at_unit_scale_is_the_rescaled_one():
    """Centres at unit scale, rows near 2**1024: the products x'.c overflow (to -inf, inf and NaN, which argmin
    took: label 1). The chunk is computed again with rows and centres times 2**-1024, where the centres are
    negligible beside the rows: every distance ties, index 0."""
    import warnings

    from isotropy.transforms._cluster_centering import nearest_center

    centers = np.array([[0.0, 0.0], [4.0, 4.0], [4.0, -4.0]])
    X = np.array([[1.5 * 2.0**1023, 1.5 * 2.0**1023], [1.5 * 2.0**1023, 0.0]])
    scaled = np.ldexp(X, -1024), np.ldexp(centers, -1024)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow on the way
        np.testing.assert_array_equal(nearest_center(X, centers), _brute_force_nearest(*scaled))


def test_nearest_centre_with_duplicated_centres_is_the_brute_force_one_without_the_direct_path():
    """A duplicated centre ties exactly with its copy (a gap of 0), which sent every row to the direct differences.
    The search is among the distinct centres; a label is the smallest index of its centre, as the argmin's."""
    from unittest import mock

    from isotropy.transforms import _cluster_centering

    X, _ = make_blobs(3000, centers=6, n_features=32, cluster_std=1.0, random_state=4)
    centers = KMeans(n_clusters=6, n_init=1, random_state=0).fit(X).cluster_centers_
    centers = np.vstack([centers, centers[1], centers[4], centers[1]])  # copies after the originals
    centers[[0, 6]] = centers[[6, 0]]  # and one before: indices 0, 1 and 8 hold one centre, 4 and 7 another
    expected = _brute_force_nearest(X, centers)
    assert set(np.unique(expected)) == {0, 2, 3, 4, 5, 6}  # the smallest index of every distinct centre
    with mock.patch.object(_cluster_centering, "_nearest_by_differences", side_effect=AssertionError("called")):
        labels = _cluster_centering.nearest_center(X, centers)
    assert labels.dtype == np.intp
    np.testing.assert_array_equal(labels, expected)
    # rows near a tie between distinct centres still go to the direct differences, and agree with brute force
    near = (centers[2] + centers[3]) / 2 + 1e-9 * np.random.default_rng(0).normal(size=(40, 32))
    np.testing.assert_array_equal(_cluster_centering.nearest_center(near, centers), _brute_force_nearest(near, centers))


@pytest.mark.parametrize("documented", [all_but_the_top, AllButTheTop])
def test_all_but_the_top_docstrings_say_how_n_components_is_capped_and_refused(documented):
    """Both docstrings give the cap of "auto" at n_samples - 1 (with a warning) and the refusal of a larger int,
    as the code does (they said only D = max(1, round(n_features/100)))."""
    doc = " ".join(documented.__doc__.split())
    assert "capped at ``n_samples - 1``" in doc and "with a warning" in doc
    assert "above ``min(n_samples - 1, n_features)`` is refused" in doc
    X = np.random.default_rng(0).normal(size=(3, 500))  # "auto" would be 5 directions; 3 rows span 2
    with pytest.warns(UserWarning, match="removing 2"):
        assert AllButTheTop().fit(X).n_components_ == 2
    with pytest.raises(ValueError, match="at most min"):
        all_but_the_top(X, n_components=3)


@pytest.mark.parametrize("stray_scale, centre_scale", [(2.0**665, 1.0), (2.0**600, 2.0**-600)])
def test_one_stray_row_far_from_the_others_sets_only_its_own_scale(stray_scale, centre_scale):
    """A row of 1e200 among ordinary rows (or ordinary rows beside centres of 2**-600): a chunk brought to one
    scale turned the other rows subnormal, all tied, all label 0; each row is decided at its own scale."""
    from isotropy.transforms._cluster_centering import nearest_center

    rng = np.random.default_rng(3)
    C = rng.normal(size=(5, 4))
    X = C[rng.integers(0, 5, 200)] + 0.1 * rng.normal(size=(200, 4))
    expected = np.argmin(((X[:, None, :] - C[None]) ** 2).sum(axis=2), axis=1)
    stray = np.zeros((1, 4))
    stray[0, 0] = stray_scale
    got = nearest_center(np.vstack([X[:100], stray, X[100:]]) * centre_scale, C * centre_scale)
    assert np.array_equal(np.delete(got, 100), expected)

# (here, not in test_transforms.py: the core install of the minimum-versions job has no dask)
@pytest.mark.parametrize("make", ["AllButTheTop(n_components=1)", "Whitening()", "ClusterCentering(n_clusters=2, random_state=0)"])
def test_a_dask_array_is_gathered_with_a_warning_and_transformed_as_in_memory(make):
    """A trial: a dask array became one in-memory array without a word (where the metrics run by tiles). Said at fit
    and at transform, with its size; the values are those of the same rows in memory."""
    import warnings

    import dask.array as da

    from isotropy import transforms
    from isotropy._utils.validation import IsotropyValueError

    X = np.random.default_rng(0).normal(size=(1000, 5)) * np.linspace(0.5, 2.0, 5)
    lazy = da.from_array(X, chunks=(200, 5))
    name = make.split("(")[0]
    with pytest.warns(UserWarning, match=rf"^{name}\.fit: X is a dask array, gathered into one in-memory array "
                                         r"\(0\.0 MiB in float64\): the transforms fit and apply in memory"):
        fitted = eval(make, vars(transforms)).fit(lazy)
    with pytest.warns(UserWarning, match=rf"^{name}\.transform: X is a dask array"):
        Z = fitted.transform(lazy)
    expected = eval(make, vars(transforms)).fit(X).transform(X)
    np.testing.assert_allclose(Z, expected, rtol=1e-12, atol=1e-12)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        both = eval(make, vars(transforms)).fit_transform(lazy)
    assert [str(w.message).split(":")[0] for w in caught] == [f"{name}.fit_transform"]  # gathered once, said once
    np.testing.assert_allclose(both, expected, rtol=1e-12, atol=1e-12)
    for bad in (da.ones(5), da.ones((2, 2, 2))):  # refused as numpy arrays of these shapes are, not unpacked
        with pytest.raises(IsotropyValueError, match=rf"^The 'X' parameter of {name}\.fit must be a 2-d array"):
            eval(make, vars(transforms)).fit(bad)
    with pytest.warns(UserWarning, match=r"^whiten: X is a dask array"):
        transforms.whiten(lazy)
