"""Tests of isotropy.transforms: sklearn's estimator checks and hand-derived cases."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import make_blobs
from sklearn.utils.estimator_checks import parametrize_with_checks

from isotropy._utils.validation import IsotropyValueError
from isotropy.transforms import (
    AllButTheTop,
    ClusterCentering,
    ClusterIsotropy,
    Whitening,
    all_but_the_top,
    cluster_center,
    cluster_isotropy,
    whiten,
)

ESTIMATORS = [
    AllButTheTop(),
    AllButTheTop(n_components=2),
    ClusterCentering(k_range=(2, 4)),
    ClusterCentering(n_clusters=2),
    ClusterIsotropy(n_clusters=3, n_components=1),
    ClusterIsotropy(n_clusters=2, n_components=1, clustering="gmm"),
    Whitening(),
    Whitening(n_components=1),
]


_ALL = parametrize_with_checks(ESTIMATORS)
# the array-API check skips itself unless SCIPY_ARRAY_API=1 is set before scipy is imported (never in CI):
# leave it out rather than report a skip
_PARAMS = [p for p in _ALL.args[1] if "check_array_api_input" not in _ALL.kwargs["ids"](p[1])]


@pytest.mark.parametrize(_ALL.args[0], _PARAMS, ids=_ALL.kwargs["ids"])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


# ---------------------------------------------------------------- ClusterCentering (Cai et al.)

def test_cluster_centering_auto_picks_k_of_separated_blobs():
    # 4 blobs of std 1 whose centres are >= 20 apart: silhouette is maximal at the true k
    X, y = make_blobs(200, centers=4, n_features=8, cluster_std=1.0, center_box=(-40, 40), random_state=3)
    cc = ClusterCentering(k_range=(2, 8), n_init=1, random_state=0).fit(X)
    assert cc.n_clusters_ == 4
    assert max(cc.silhouette_scores_, key=cc.silhouette_scores_.get) == 4
    # clusters recovered up to relabelling: the contingency table is a permutation
    table = np.zeros((4, 4), int)
    np.add.at(table, (y, cc.labels_), 1)
    assert (table > 0).sum() == 4


def test_cluster_centering_auto_keeps_one_cluster_on_a_gaussian(rng):
    """One cluster is said (a user trial reported GloVe "cluster-centred" that was plain centring without a word)."""
    X = rng.normal(size=(300, 10)) + 3.0
    with pytest.warns(UserWarning) as caught:
        cc = ClusterCentering(k_range=(2, 8), random_state=0).fit(X)
    assert cc.n_clusters_ == 1
    assert max(cc.silhouette_scores_.values()) < 0.1
    top = max(cc.silhouette_scores_, key=cc.silhouette_scores_.get)
    assert [str(w.message) for w in caught] == [
        (f"ClusterCentering took the data as one cluster (plain centring) with n_clusters='auto': the highest mean "
        f"silhouette over k = 2..8 was {cc.silhouette_scores_[top]:.3g} (k = {top}), below min_silhouette=0.1. Pass "
        f"n_clusters=k to centre on k clusters whatever their silhouette, or a lower min_silhouette.")]
    assert caught[0].filename == __file__
    # one cluster = plain centring
    np.testing.assert_allclose(cc.transform(X), X - X.mean(axis=0), atol=1e-12)


_UNRELIABLE = "ClusterCentering chose n_clusters={k} for n_samples={n} with n_clusters='auto', an unreliable choice: "
_CUT = "k_range=(2, 15) was cut to k <= n_samples - 1 = {m}, the most the silhouette takes"
_FEW = ("{mean} points per cluster on average, fewer than 3: the silhouette of clusters of one or two points scores "
        "nearest neighbours, not clusters")


def test_cluster_centering_auto_warns_of_k_near_n_samples():
    """12 points: "auto" chose k = 6, pairs of nearest neighbours, from a k_range cut to 11, without a word."""
    X = np.random.default_rng(0).normal(size=(12, 2))
    with pytest.warns(UserWarning) as record:
        cc = ClusterCentering(random_state=0).fit(X)
    assert [str(w.message) for w in record] == [
        _UNRELIABLE.format(k=6, n=12) + _CUT.format(m=11) + "; " + _FEW.format(mean="2.0")
        + ". Give more samples, or a k_range whose high is at most n_samples // 3 = 4."]
    assert record[0].filename == __file__  # the user's line, not the library's
    # as before (only warned): two of the 12 points alone, centred to 0
    assert cc.n_clusters_ == 6 and sorted(np.bincount(cc.labels_)) == [1, 1, 2, 2, 2, 4]
    np.testing.assert_allclose(cc.transform(X), X - cc.cluster_centers_[cc.labels_], atol=1e-12)


def test_cluster_centering_auto_warns_of_small_clusters_and_of_a_cut_range_apart():
    pairs = np.repeat(np.arange(10.0)[:, None] * [100.0, 0.0], 2, axis=0) + np.tile([[0.0, 0.0], [0.0, 1.0]], (10, 1))
    with pytest.warns(UserWarning) as record:  # 10 far pairs, k_range within n_samples - 1: the mean size alone
        cc = ClusterCentering(k_range=(2, 12), random_state=0).fit(pairs)
    assert cc.n_clusters_ == 10
    assert [str(w.message) for w in record] == [
        _UNRELIABLE.format(k=10, n=20) + _FEW.format(mean="2.0")
        + ". Give more samples, or a k_range whose high is at most n_samples // 3 = 6."]
    blobs = np.vstack([np.zeros((7, 2)), np.full((7, 2), 50.0)]) + np.random.default_rng(1).normal(size=(14, 2))
    with pytest.warns(UserWarning) as record:  # two blobs of 7: the cut range alone
        cc = ClusterCentering(random_state=0).fit(blobs)
    assert cc.n_clusters_ == 2
    assert [str(w.message) for w in record] == [
        _UNRELIABLE.format(k=2, n=14) + _CUT.format(m=13) + ". Give more samples, or a k_range whose high is at most "
        "n_samples // 3 = 4."]
    with pytest.warns(UserWarning) as record:  # no k at all in the range
        _, labels = cluster_center(blobs[:4], k_range=(5, 8))
    assert labels.tolist() == [0, 0, 0, 0]
    assert [str(w.message) for w in record] == [
        ("cluster_center chose n_clusters=1 for n_samples=4 with n_clusters='auto', an unreliable choice: "
         "k_range=(5, 8) lies above n_samples - 1 = 3, the most the silhouette takes, so no k was tried. "
         "Give more samples, or n_clusters=1 (plain centring).")]


def test_cluster_centering_no_warning_with_enough_points_or_an_explicit_k():
    X, _ = make_blobs(200, centers=4, n_features=8, cluster_std=1.0, center_box=(-40, 40), random_state=3)
    tiny = np.random.default_rng(0).normal(size=(12, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ClusterCentering(k_range=(2, 8), n_init=1, random_state=0).fit(X).n_clusters_ == 4
        assert ClusterCentering(n_clusters=6, random_state=0).fit(tiny).n_clusters_ == 6  # the user's own k


def test_cluster_center_subtracts_each_cluster_mean(rng):
    X = np.vstack([rng.normal(size=(30, 3)), rng.normal(size=(40, 3)) + [50.0, 0, 0]])
    Xc, labels = cluster_center(X, n_clusters=2, random_state=0)
    for j in range(2):
        np.testing.assert_allclose(Xc[labels == j], X[labels == j] - X[labels == j].mean(axis=0), atol=1e-12)
    assert sorted(np.bincount(labels)) == [30, 40]


def test_cluster_centering_transform_assigns_new_points_to_nearest_centre(rng):
    X = np.vstack([rng.normal(size=(30, 2)), rng.normal(size=(30, 2)) + [50.0, 0]])
    cc = ClusterCentering(n_clusters=2, random_state=0).fit(X)
    new = np.array([[49.0, 1.0], [1.0, -1.0]])
    far = int(np.argmax(cc.cluster_centers_[:, 0]))
    out = cc.transform(new)
    np.testing.assert_allclose(out[0], new[0] - cc.cluster_centers_[far])
    np.testing.assert_allclose(out[1], new[1] - cc.cluster_centers_[1 - far])


def test_cluster_centering_torch_round_trip(rng):
    torch = pytest.importorskip("torch")
    X = rng.normal(size=(60, 4))
    Xt = torch.tensor(X, dtype=torch.float32)
    out = ClusterCentering(n_clusters=3, random_state=0).fit(X).transform(Xt)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32 and out.device == Xt.device
    np.testing.assert_allclose(out.numpy(), ClusterCentering(n_clusters=3, random_state=0).fit(X).transform(
        X.astype(np.float32)), atol=1e-5)


@pytest.mark.parametrize("kwargs, match", [
    ({"n_clusters": "many"}, "'n_clusters' parameter of ClusterCentering must be one of"),
    ({"n_clusters": 0}, "'n_clusters' parameter of ClusterCentering must be an int in the range"),
    ({"k_range": (1, 5)}, "'k_range' parameter of ClusterCentering"),
    ({"min_silhouette": 2.0}, "'min_silhouette' parameter of ClusterCentering"),
    ({"n_clusters": 50}, "at least n_clusters=50 samples. Got n_samples=10"),
])
def test_cluster_centering_bad_parameters(kwargs, match, rng):
    with pytest.raises(IsotropyValueError, match=match):
        ClusterCentering(**kwargs).fit(rng.normal(size=(10, 2)))


# ---------------------------------------------------------------- AllButTheTop (Mu & Viswanath)

def _anisotropic(rng, n=300, d=20):
    # distinct variances 1..20 on a random rotation, plus a common offset: a well-defined PCA basis
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    return (rng.normal(size=(n, d)) * np.arange(d, 0, -1.0)) @ Q.T + 5.0


def test_all_but_the_top_zero_mean_and_no_variance_along_removed_directions(rng):
    X = _anisotropic(rng)
    abtt = AllButTheTop(n_components=3).fit(X)
    Y = abtt.transform(X)
    np.testing.assert_allclose(Y.mean(axis=0), 0.0, atol=1e-10)
    np.testing.assert_allclose(Y @ abtt.components_.T, 0.0, atol=1e-9)
    # the removed directions are the top-3 eigenvectors of the covariance (numpy eigh as reference)
    lam, vecs = np.linalg.eigh(np.cov(X, rowvar=False))
    top = vecs[:, np.argsort(lam)[::-1][:3]]
    np.testing.assert_allclose(np.abs(abtt.components_ @ top), np.eye(3), atol=1e-8)
    # what is left is the covariance with those eigenvalues set to zero
    rest = np.sort(lam)[::-1][3:]
    np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(np.cov(Y, rowvar=False)))[::-1][:17], rest, rtol=1e-8)


def test_all_but_the_top_auto_is_d_over_100(rng):
    assert AllButTheTop().fit(rng.normal(size=(30, 384))).n_components_ == 4
    assert AllButTheTop().fit(rng.normal(size=(30, 20))).n_components_ == 1
    assert AllButTheTop().fit(rng.normal(size=(30, 768))).n_components_ == 8


def test_all_but_the_top_function_matches_class_and_torch(rng):
    torch = pytest.importorskip("torch")
    X = _anisotropic(rng, n=50, d=6)
    expected = AllButTheTop(n_components=2).fit_transform(X)
    np.testing.assert_allclose(all_but_the_top(X, n_components=2), expected)
    out = all_but_the_top(torch.tensor(X), n_components=2)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float64
    np.testing.assert_allclose(out.numpy(), expected, atol=1e-12)


def test_all_but_the_top_bad_n_components(rng):
    with pytest.raises(IsotropyValueError, match="'n_components' parameter of AllButTheTop must be at most"):
        AllButTheTop(n_components=7).fit(rng.normal(size=(10, 6)))
    with pytest.raises(IsotropyValueError, match="must be an int >= 0 or 'auto'. Got 'top' instead"):
        AllButTheTop(n_components="top").fit(rng.normal(size=(10, 6)))


def _abtt_reference(X, D):
    # Mu & Viswanath (2018) as written: remove the mean, then the projections on the top D principal directions
    Xc = X - X.mean(axis=0)
    top = np.linalg.svd(Xc, full_matrices=False)[2][:D]
    return Xc - (Xc @ top.T) @ top


def _traced_peak(fn):
    import tracemalloc

    tracemalloc.start()
    try:
        result = fn()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_all_but_the_top_fits_from_the_covariance_in_bounded_memory(rng):
    # the fit ran a thin SVD of the n x d rows (a centred copy, U and LAPACK's workspace): on 20,000 x 64 float64 the
    # fit_transform peaked at 3.0x the input (10.1x a float32 input on 100,000 x 384, 44-58 s); the top directions
    # are the top eigenvectors of the d x d covariance, built from row chunks, and the rows go out in chunks
    X = _anisotropic(rng, n=20_000, d=64)
    for estimator in (AllButTheTop(), AllButTheTop(n_components=8)):
        Y, peak = _traced_peak(lambda estimator=estimator: estimator.fit_transform(X))
        assert Y.dtype == np.float64 and Y.shape == X.shape
        assert peak < 1.6 * X.nbytes, f"peak {peak / X.nbytes:.2f}x the input"  # the output itself is 1x
    _, peak = _traced_peak(lambda: all_but_the_top(X, n_components=3))
    assert peak < 1.6 * X.nbytes, f"peak {peak / X.nbytes:.2f}x the input"


@pytest.mark.parametrize("shape", [(20_000, 64), (301, 300), (40, 200)], ids=["tall", "square", "wide"])
def test_all_but_the_top_equals_the_papers_formula(rng, shape):
    n, d = shape
    X = _anisotropic(rng, n=n, d=d)
    for D in sorted({0, 1, 3, min(n - 1, d) - 1, min(n - 1, d)}):
        expected = _abtt_reference(X, D)
        np.testing.assert_allclose(all_but_the_top(X, n_components=D), expected, rtol=0, atol=1e-10)
        abtt = AllButTheTop(n_components=D).fit(X)
        np.testing.assert_allclose(abtt.transform(X), expected, rtol=0, atol=1e-10)
        np.testing.assert_allclose(abtt.transform(X[:7]), expected[:7], rtol=0, atol=1e-10)  # new rows too
        np.testing.assert_allclose(abtt.components_ @ abtt.components_.T, np.eye(D), atol=1e-12)


# ---------------------------------------------------------------- Whitening (Su et al.)

def test_whitening_gives_identity_covariance(rng):
    X = _anisotropic(rng)
    Y = Whitening().fit_transform(X)
    np.testing.assert_allclose(Y.mean(axis=0), 0.0, atol=1e-10)
    np.testing.assert_allclose(np.cov(Y, rowvar=False), np.eye(20), atol=1e-9)


def test_whitening_top_k_keeps_largest_variance_directions(rng):
    X = _anisotropic(rng)
    w = Whitening(n_components=4).fit(X)
    Y = w.transform(X)
    assert Y.shape == (300, 4)
    np.testing.assert_allclose(np.cov(Y, rowvar=False), np.eye(4), atol=1e-9)
    lam = np.sort(np.linalg.eigvalsh(np.cov(X, rowvar=False)))[::-1]
    np.testing.assert_allclose(w.explained_variance_, lam[:4], rtol=1e-10)
    # equals sklearn's PCA(whiten=True), which uses the same n - 1 covariance, up to the sign of each axis
    from sklearn.decomposition import PCA

    ref = PCA(n_components=4, whiten=True).fit_transform(X)
    np.testing.assert_allclose(np.abs(Y), np.abs(ref), atol=1e-8)


def test_whitening_rank_deficient_raises_or_regularises(rng):
    X = rng.normal(size=(50, 3)) @ rng.normal(size=(3, 6))  # rank 3 in 6-d
    with pytest.raises(IsotropyValueError, match=r"rank-deficient covariance \(rank 3 < the 6 features "
                                                 r"\(n_components=None\)\)"):  # not an n_components=6 never passed
        Whitening().fit(X)
    with pytest.raises(IsotropyValueError, match=r"rank-deficient covariance \(rank 3 < n_components=5\)"):
        Whitening(n_components=5).fit(X)
    Y = Whitening(n_components=3).fit_transform(X)
    np.testing.assert_allclose(np.cov(Y, rowvar=False), np.eye(3), atol=1e-8)
    assert np.isfinite(Whitening(eps=1e-6).fit_transform(X)).all()


def test_whiten_function_torch_float32(rng):
    torch = pytest.importorskip("torch")
    X = _anisotropic(rng, n=100, d=5)
    out = whiten(torch.tensor(X, dtype=torch.float32))
    assert out.dtype == torch.float32
    np.testing.assert_allclose(out.numpy(), whiten(X.astype(np.float32)), atol=1e-4)


def test_whitening_of_fewer_rows_than_features_is_refused_before_any_d_by_d_work(rng):
    # n rows span at most n - 1 directions, so with eps=0 the refusal is certain from the shape: it came only after
    # np.cov and eigh of the d x d covariance (2,000 x 5,000: 13.7 s; 2,000 x 20,000: a crash in np.cov at 4.4 GB)
    X = rng.normal(size=(30, 3000))
    d_by_d = 3000 * 3000 * 8
    # (eps > 0 regularises all the features, not an arbitrary part of the zero-variance directions)
    for make, asked, eps in ((lambda: Whitening(), "the 3000 features (n_components=None)", "eps > 0"),
                             (lambda: Whitening(n_components=30), "n_components=30",
                              "eps > 0 with n_components=None (all features)")):
        with pytest.raises(IsotropyValueError) as info:
            make().fit(X)
        message = str(info.value)
        assert message == (f"The 'X' parameter of Whitening has a rank-deficient covariance (rank 29 < {asked}), "
                           f"which cannot be whitened. Pass n_components <= 29, or {eps} to regularise, or more "
                           f"samples.")
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(IsotropyValueError, match=r"rank 29 < the 3000 features"):
            whiten(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < d_by_d / 20, f"peak {peak / 1e6:.1f} MB"  # the d x d covariance alone is 72 MB
    # the rank stated is the data's (rows repeated: 15 distinct rows span 14 directions)
    with pytest.raises(IsotropyValueError, match=r"\(rank 14 < n_components=20\)"):
        Whitening(n_components=20).fit(np.repeat(rng.normal(size=(15, 300)), 2, axis=0))


def test_whitening_of_fewer_rows_than_features_still_whitens_what_it_can(rng):
    # n_components <= n - 1: the n x n Gram route; eps > 0 with all d components: the d x d route from the chunked
    # covariance (np.cov's to rounding)
    X = rng.normal(size=(40, 60)) @ np.diag(np.linspace(1, 3, 60)) + 2.0
    lam, vecs = np.linalg.eigh(np.cov(X, rowvar=False))
    order = np.argsort(lam)[::-1][:5]
    expected = (X - X.mean(axis=0)) @ (vecs[:, order] / np.sqrt(lam[order]))
    np.testing.assert_allclose(np.abs(Whitening(n_components=5).fit_transform(X)), np.abs(expected), atol=1e-9)
    Y = Whitening(eps=1e-3).fit_transform(X)
    assert Y.shape == (40, 60) and np.isfinite(Y).all()


def _covariance_whitening(X, k, eps=0.0):
    """The d x d route by hand: eigenvectors of np.cov, largest first, scaled by (lambda + eps)**-1/2."""
    lam, vecs = np.linalg.eigh(np.cov(X, rowvar=False))
    order = np.argsort(lam)[::-1][:k]
    return vecs[:, order] / np.sqrt(lam[order] + eps), lam[order]


@pytest.mark.parametrize("eps", [0.0, 1e-3])
@pytest.mark.parametrize("k", [1, 10, 49])
def test_whitening_of_wide_data_from_the_gram_equals_the_covariance_route(rng, k, eps):
    # n < d with n_components <= n - 1: the top directions are V = Xc^T U Sigma^-1 from the n x n centred Gram, no
    # longer the eigenvectors of the d x d covariance; the same whitening to rounding, each axis up to its sign (as
    # the covariance route's own eigenvectors, and PCA(whiten=True))
    X = rng.normal(size=(50, 400)) @ np.diag(np.linspace(1, 3, 400)) + 2.0
    w = Whitening(n_components=k, eps=eps).fit(X)
    W, lam = _covariance_whitening(X, k, eps)
    signs = np.sign(np.sum(w.components_.T * W, axis=0))
    assert w.components_.shape == (k, 400) and (signs != 0).all()
    np.testing.assert_allclose(w.components_.T * signs, W, rtol=0, atol=1e-10 * np.abs(W).max())
    np.testing.assert_allclose(w.explained_variance_, lam, rtol=1e-10)
    Y = w.transform(X)
    np.testing.assert_allclose(Y * signs, (X - X.mean(axis=0)) @ W, rtol=0, atol=1e-10 * np.abs(Y).max())
    np.testing.assert_allclose(whiten(X, n_components=k, eps=eps), Y, rtol=0, atol=1e-12 * np.abs(Y).max())
    if eps == 0:
        np.testing.assert_allclose(np.cov(Y, rowvar=False), np.eye(k), atol=1e-10)
        from sklearn.decomposition import PCA

        ref = PCA(n_components=k, whiten=True, svd_solver="full").fit_transform(X)
        np.testing.assert_allclose(np.abs(Y), np.abs(ref), rtol=0, atol=1e-9)


def test_whitening_of_wide_rank_deficient_data_with_eps(rng):
    # rank 3 < n_components = 5 <= n - 1: the Gram gives only 3 directions. eps > 0 once completed them from the d x d
    # route with 2 of the 47 zero-variance directions, an arbitrary choice (test_whitening_with_eps_refuses_part_of_
    # the_directions_past_the_rank): refused now, with or without eps; all 50 (None) or at most 3 are whitened.
    X = rng.normal(size=(20, 3)) @ rng.normal(size=(3, 50))
    with pytest.raises(IsotropyValueError, match=r"rank-deficient covariance \(rank 3 < n_components=5\)"):
        Whitening(n_components=5).fit(X)
    with pytest.raises(IsotropyValueError, match=r"at most the rank of the covariance, 3, or None"):
        Whitening(n_components=5, eps=1e-3).fit(X)
    w = Whitening(n_components=3, eps=1e-3).fit(X)
    W, _ = _covariance_whitening(X, 3, 1e-3)
    signs = np.sign(np.sum(w.components_.T * W, axis=0))
    np.testing.assert_allclose(w.components_.T * signs, W, rtol=0, atol=1e-10 * np.abs(W).max())
    w = Whitening(eps=1e-3).fit(X)
    np.testing.assert_allclose(w.components_ @ w.components_.T * (w.explained_variance_ + 1e-3)[:, None],
                               np.eye(50), atol=1e-10)


def test_whitening_of_wide_data_builds_no_d_by_d_matrix():
    # d = 60,000 features, 40 samples, 10 components: the d x d covariance alone is 28.8 GB; the n x n Gram route
    # holds the Gram (40 x 40), a block of columns, and the d x k directions
    import tracemalloc

    X = np.random.default_rng(0).normal(size=(40, 60_000)) * np.linspace(1, 2, 60_000)
    tracemalloc.start()
    try:
        w = Whitening(n_components=10).fit(X)
        Y = w.transform(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200e6, f"peak {peak / 1e6:.1f} MB"  # d x d float64: 28.8e9 bytes
    assert Y.shape == (40, 10)
    np.testing.assert_allclose(np.cov(Y, rowvar=False), np.eye(10), atol=1e-10)
    np.testing.assert_allclose(w.components_ @ w.components_.T * w.explained_variance_[:, None], np.eye(10),
                               atol=1e-10)


# ---------------------------------------------------------------- ClusterIsotropy (Rajaee & Pilehvar)

def _two_elongated_clusters(rng, n=200):
    # cluster A stretched along e0, cluster B along e1, far apart along e2
    a = rng.normal(size=(n, 4)) * [10.0, 1, 1, 1]
    b = rng.normal(size=(n, 4)) * [1, 10.0, 1, 1] + [0, 0, 100.0, 0]
    return np.vstack([a, b]), np.repeat([0, 1], n)


@pytest.mark.parametrize("clustering", ["kmeans", "gmm"])
def test_cluster_isotropy_on_constructed_clusters(clustering, rng):
    X, _ = _two_elongated_clusters(rng)
    ci = ClusterIsotropy(n_clusters=2, n_components=1, clustering=clustering, random_state=0).fit(X)
    assert (ci.labels_ == ci.labels_[0]).sum() == 200 and (ci.labels_[:200] == ci.labels_[0]).all()
    Y = ci.transform(X)
    for j, axis in ((ci.labels_[0], 0), (ci.labels_[-1], 1)):
        members = ci.labels_ == j
        # each cluster's own mean is removed ...
        np.testing.assert_allclose(Y[members].mean(axis=0), 0.0, atol=1e-10)
        # ... and its dominant direction (its stretched axis) found and removed
        assert abs(ci.components_[j, 0, axis]) > 0.99
        np.testing.assert_allclose(Y[members] @ ci.components_[j, 0], 0.0, atol=1e-9)
    # hand-derived equivalent: per-cluster All-But-The-Top
    for j in (0, 1):
        members = ci.labels_ == j
        np.testing.assert_allclose(Y[members], all_but_the_top(X[members], n_components=1), atol=1e-9)


def test_cluster_isotropy_zero_components_is_cluster_centering(rng):
    X, _ = _two_elongated_clusters(rng, n=50)
    Y, labels = cluster_isotropy(X, n_clusters=2, n_components=0, random_state=0)
    Yc, labels_c = cluster_center(X, n_clusters=2, random_state=0)
    assert (labels == labels_c).all() or (labels == 1 - labels_c).all()
    np.testing.assert_allclose(Y, Yc, atol=1e-10)


def test_cluster_isotropy_transform_assigns_new_points(rng):
    X, _ = _two_elongated_clusters(rng)
    ci = ClusterIsotropy(n_clusters=2, n_components=1, random_state=0).fit(X)
    new = np.array([[3.0, 0.5, 101.0, 0.2]])
    j = ci.labels_[-1]
    assert ci.predict(new)[0] == j
    x = new[0] - ci.cluster_centers_[j]
    u = ci.components_[j, 0]
    np.testing.assert_allclose(ci.transform(new)[0], x - (x @ u) * u, atol=1e-12)


def test_cluster_isotropy_warns_of_clusters_of_n_components_plus_one_points(rng):
    """Clusters of 2 points with n_components=1 became the zero vector with no warning (the test read n_j <=
    n_components; n_j points span n_j - 1 directions): they are warned of now, and their points are zero."""
    X = np.vstack([rng.normal(size=(2, 5)) + 10 * i for i in range(3)])
    with pytest.warns(UserWarning, match=r"3 of 3 clusters have at most n_components \+ 1 = 2 points \(6 points in "
                                         r"all, the smallest 2\)"):
        Y = ClusterIsotropy(n_clusters=3, n_components=1, random_state=0).fit_transform(X)
    assert np.abs(Y).max() < 1e-12


def test_cluster_isotropy_with_no_components_warns_of_single_points_only(rng):
    """n_components=0 (centring only; frozen-classification's kmeans+mean) warned that 'every direction' of a one-point
    cluster 'is removed' (trial): none is; centring on its own mean makes it zero, which is what it now says."""
    X = np.vstack([rng.normal(size=(1, 5)), rng.normal(size=(30, 5)) + 50])
    with pytest.warns(UserWarning, match=r"ClusterIsotropy: 1 of 2 clusters have a single point, which centring on its "
                                         r"cluster's mean makes the zero vector\. Use fewer clusters, or more rows\.$"):
        Y = ClusterIsotropy(n_clusters=2, n_components=0, random_state=0).fit_transform(X)
    np.testing.assert_allclose(Y[0], 0, atol=1e-12)
    np.testing.assert_allclose(Y[1:], X[1:] - X[1:].mean(axis=0), atol=1e-10)
    Z = np.vstack([rng.normal(size=(2, 5)), rng.normal(size=(30, 5)) + 50])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # two points and nothing removed: not zero, no warning
        ClusterIsotropy(n_clusters=2, n_components=0, random_state=0).fit(Z)


def test_cluster_isotropy_small_clusters_remove_at_most_n_minus_1(rng):
    X = np.vstack([rng.normal(size=(3, 5)), rng.normal(size=(30, 5)) + 50])
    with pytest.warns(UserWarning, match=r"ClusterIsotropy: 1 of 2 clusters have at most n_components \+ 1 = 5 points "
                                         r"\(3 points in all, the smallest 3\); every direction of theirs is removed"):
        ci = ClusterIsotropy(n_clusters=2, n_components=4, random_state=0).fit(X)
    assert sorted(ci.n_components_.tolist()) == [2, 4]
    Y = ci.transform(X)
    small = ci.labels_ == ci.labels_[0]
    np.testing.assert_allclose(Y[small], 0, atol=1e-12)  # what the warning says: the 3 points become 0
    assert np.linalg.norm(Y[~small], axis=1).min() > 1e-3


@pytest.mark.parametrize("kwargs, match", [
    ({"clustering": "dbscan"}, "'clustering' parameter of ClusterIsotropy must be one of"),
    ({"n_clusters": 0}, "'n_clusters' parameter of ClusterIsotropy"),
    ({"n_components": 9}, "must be at most n_features=3"),
    ({"n_clusters": 20}, "at least n_clusters=20 samples. Got n_samples=10"),
])
def test_cluster_isotropy_bad_parameters(kwargs, match, rng):
    with pytest.raises(IsotropyValueError, match=match):
        ClusterIsotropy(**{"n_clusters": 2, "n_components": 1, **kwargs}).fit(rng.normal(size=(10, 3)))


# ---------------------------------------------------------------- properties (hypothesis)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), shift=st.floats(-100, 100), D=st.integers(0, 3))
def test_all_but_the_top_is_translation_invariant(seed, shift, D):
    # the mean is removed first and projections are sign-free, so a common offset cannot matter
    X = _anisotropic(np.random.default_rng(seed), n=40, d=6)
    np.testing.assert_allclose(all_but_the_top(X + shift, n_components=D), all_but_the_top(X, n_components=D),
                               atol=1e-8 * (1 + abs(shift)))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), scale=st.floats(1e-3, 1e3))
def test_whitening_is_scale_invariant_and_white(seed, scale):
    X = _anisotropic(np.random.default_rng(seed), n=60, d=5)
    Y = whiten(X * scale)
    np.testing.assert_allclose(np.cov(Y, rowvar=False), np.eye(5), atol=1e-8)
    np.testing.assert_allclose(np.abs(Y), np.abs(whiten(X)), atol=1e-7)


@pytest.mark.parametrize(("make", "names"), [
    (lambda: AllButTheTop(n_components=1), [f"x{i}" for i in range(5)]),
    (lambda: ClusterCentering(n_clusters=2, random_state=0), [f"x{i}" for i in range(5)]),
    (lambda: ClusterIsotropy(n_clusters=2, n_components=1, random_state=0), [f"x{i}" for i in range(5)]),
    (lambda: Whitening(n_components=3), ["whitening0", "whitening1", "whitening2"]),
])
def test_feature_names_out_follow_scikit_learn(make, names):
    X = np.random.default_rng(3).normal(size=(120, 5))
    transformer = make().fit(X)
    assert list(transformer.get_feature_names_out()) == names
    assert list(transformer.get_feature_names_out([f"x{i}" for i in range(5)])) == names
    assert transformer.transform(X).shape[1] == len(names)


@pytest.mark.parametrize("make", [lambda: __import__("isotropy.metrics.estimators", fromlist=["TwoNN"]).TwoNN(),
                                  lambda: __import__("isotropy.metrics.estimators", fromlist=["MLE"]).MLE(),
                                  AllButTheTop, Whitening], ids=["TwoNN", "MLE", "AllButTheTop", "Whitening"])
def test_the_estimators_refuse_bad_input_in_one_line_naming_themselves(make):
    # scikit-learn's validation printed the whole 1-d array and "Reshape your data ...", 82 lines for a complex X,
    # and recommended HistGradientBoostingClassifier for a NaN
    estimator = make()
    caller = f"The 'X' parameter of {type(estimator).__name__}.fit "
    complex_X = np.ones((40, 3), dtype=complex) + 1j
    nan_X = np.random.default_rng(0).normal(size=(40, 3))
    nan_X[7, 2] = np.nan
    cases = [(np.arange(40.0), "must be a 2-d array of shape (n_samples, n_features). Got an array with shape (40,)"),
             (complex_X, "is refused: Complex data not supported."),
             (None, "must be an array of shape (n_samples, n_features). Got NoneType instead."),
             (nan_X, "must contain only finite values (no NaN or inf). Got nan at row 7, column 2 instead."),
             (np.ones((12, 0)), "is refused: Found array with 0 feature(s) (shape=(12, 0))")]
    for X, expected in cases:
        with pytest.raises((ValueError, TypeError)) as info:
            estimator.fit(X)
        message = str(info.value)
        assert message.startswith(caller) and expected in message and "\n" not in message, message
        assert len(message) < 300, message


def test_options_of_the_estimators_and_losses_are_keyword_only():
    # AllButTheTop(3), ClusterIsotropy(4, 2) and IStarLoss(0.5) were taken positionally: IStarLoss(0.5) set zeta
    # where a reader of the paper expects the weight lambda; the style's rule is data positional, options by name
    import torch

    from isotropy.torch import IStarLoss
    from isotropy.training import InBatchClusterIsotropy

    for make in (lambda: AllButTheTop(3), lambda: Whitening(3), lambda: ClusterCentering(2),
                 lambda: ClusterIsotropy(4, 2), lambda: IStarLoss(0.5), lambda: InBatchClusterIsotropy(2, 1)):
        with pytest.raises(TypeError, match="positional argument"):
            make()
    assert AllButTheTop(n_components=3).n_components == 3 and IStarLoss(zeta=0.5).zeta == 0.5
    assert isinstance(IStarLoss(zeta=0.5, weight=2.0), torch.nn.Module)


@pytest.mark.parametrize("noise, D", [(1e-6, 4), (1e-6, 15), (1e-8, 8)])
def test_all_but_the_top_is_the_papers_formula_where_d_cuts_between_small_eigenvalues(noise, D):
    """Rank 3 plus tiny noise, D inside the noise (several chunks of rows): the eigenvectors of the d x d scatter
    square the condition and were off by 4e-9 to 1.8e-7 of the data's scale; the chunked QR keeps the SVD's
    accuracy (1e-12)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20_000, 3)) @ rng.standard_normal((3, 30)) + noise * rng.standard_normal((20_000, 30))
    Xc = X - X.mean(axis=0)
    V = np.linalg.svd(Xc, full_matrices=False)[2][:D].T
    expected = Xc - (Xc @ V) @ V.T
    got = all_but_the_top(X, n_components=D)
    assert np.abs(got - expected).max() <= 1e-12 * np.abs(Xc).max()


def test_whitening_of_ill_conditioned_wide_data_is_as_accurate_as_the_covariance_route():
    """A review: the n x n Gram route formed v_i = X_cᵀu_i/σ_i, which carries the Gram's rounding times σ_1/σ_i: on
    60 x 400 data with singular values from 1 to 1e-6 the whitened covariance was 8.7e-6 from the identity, against
    4.2e-7 on the covariance route. One Rayleigh-Ritz step on the span of those v_i brought it to 1e-7 on one
    OpenBLAS and 3.2e-6 on another (its eigh of BᵀB squared the conditioning); from the SVD of B it is 1e-11, as the
    SVD of the centred data gives (5.7e-12)."""
    rng = np.random.default_rng(0)
    n, d, k = 60, 400, 55
    U, _ = np.linalg.qr(rng.normal(size=(n, n)))
    V, _ = np.linalg.qr(rng.normal(size=(d, n)))
    X = (U * np.logspace(0, -6, n)) @ V.T
    Y = whiten(X, n_components=k)
    assert np.abs(np.cov(Y.T) - np.eye(k)).max() < 1e-9
    np.testing.assert_allclose(Y.mean(axis=0), 0.0, atol=1e-10)


def test_all_but_the_top_refuses_directions_past_the_rank():
    """Rank-2 rows in 10-d: the 3rd and 4th "principal directions" have no variance and are round-off (a 1e-14
    perturbation turned them around), so removing them removed arbitrary directions from new data. An int past
    the rank is refused as one past n_samples - 1 is; "auto" is capped at it with a warning."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2)) @ rng.normal(size=(2, 10)) + 3.0
    with pytest.raises(ValueError, match=r"at most the rank of the centred X, 2: .* Got 4 instead"):
        AllButTheTop(n_components=4).fit(X)
    assert AllButTheTop(n_components=2).fit(X).n_components_ == 2
    wide = np.repeat(rng.normal(size=(3, 500)), 10, axis=0)  # "auto": 5 directions; 3 distinct rows span 2
    with pytest.warns(UserWarning, match="has rank 2 .*removing 2"):
        assert AllButTheTop().fit(wide).n_components_ == 2
    same = np.full((20, 7), 0.1)  # one repeated point: its mean leaves rounding, not a direction
    with pytest.raises(ValueError, match="rank of the centred X, 0"):
        AllButTheTop(n_components=1).fit(same)
    for scale in (1e-300, 1e200, 1e300):  # the rank at any scale, on both routes (n < d: the SVD of X - mean)
        for shape in ((5, 50), (50, 5)):
            assert AllButTheTop(n_components=2).fit(rng.normal(size=shape) * scale + scale).n_components_ == 2


def test_cluster_isotropy_removes_no_direction_from_a_cluster_of_one_repeated_point():
    """A cluster of 10 copies of one point has no direction of variance: one was removed all the same (the SVD's
    arbitrary answer on rounding), and transform took it out of new points assigned to that cluster."""
    rng = np.random.default_rng(0)
    X = np.repeat(rng.normal(size=(2, 5)), 10, axis=0) + 100.0
    # their points become 0, as those of the small clusters that are warned of: these clusters are warned of too
    with pytest.warns(UserWarning, match=r"2 of 2 clusters have more than n_components \+ 1 = 2 points but at most "
                                         r"n_components = 1 directions of variance \(rank 0: their points span no "
                                         r"more, as repeated rows or data of low rank do; 20 points"):
        ci = ClusterIsotropy(n_clusters=2, n_components=1, random_state=0).fit(X)
    assert ci.n_components_.tolist() == [0, 0]
    np.testing.assert_array_equal(ci.components_, 0.0)
    new = X[:1] + [[1.0, 2.0, 3.0, 4.0, 5.0]]
    np.testing.assert_allclose(ci.transform(new), new - ci.cluster_centers_[ci.predict(new)], rtol=0, atol=1e-12)


@pytest.mark.parametrize("X", [np.full((20, 7), 0.1), np.repeat(np.random.default_rng(0).normal(size=(1, 7)), 20, 0) + 3.0],
                         ids=["constant", "repeated-row"])
def test_whitening_refuses_copies_of_one_point_whose_mean_is_not_exact(X):
    """The mean of copies of 0.1 is not 0.1 exactly: the centred rows held a rounding, whose largest covariance
    eigenvalue set the rank tolerance, so the rounding was whitened as a direction (components ~1/eps). The
    tolerance has a floor from the mean's size; the refusal is the documented rank-0 one."""
    for k in (1, None):
        with pytest.raises(ValueError, match=r"zero covariance \(rank 0: all 20 samples are the same point\)"):
            Whitening(n_components=k).fit(X)
    # data at an offset far above their spread are still whitened
    Y = np.random.default_rng(1).normal(size=(500, 7)) + 1e8
    np.testing.assert_allclose(np.cov(Whitening().fit_transform(Y), rowvar=False), np.eye(7), atol=1e-6)


def test_whitening_with_eps_refuses_part_of_the_directions_past_the_rank():
    """5 rows in 50-d (rank 4) with eps > 0: n_components=10 kept 6 of the 46 zero-variance directions, an arbitrary
    choice (round-off) that a perturbation of 1e-14 of X turned around, and scaled them by eps**-1/2 in new data.
    All of them (n_components=None) are whitened alike whatever their basis, and stay accepted."""
    rng = np.random.default_rng(0)
    X, new = rng.normal(size=(5, 50)), rng.normal(size=(3, 50))
    for k in (5, 10):
        with pytest.raises(ValueError, match=rf"at most the rank of the covariance, 4, or None .*Got {k} instead"):
            Whitening(n_components=k, eps=1e-6).fit(X)
    assert Whitening(n_components=4, eps=1e-6).fit(X).n_components_ == 4
    norms = [np.linalg.norm(Whitening(eps=1e-6).fit(X + 1e-14 * rng.normal(size=X.shape)).transform(new), axis=1)
             for _ in range(2)]
    np.testing.assert_allclose(norms[0], norms[1], rtol=1e-6)


@pytest.mark.parametrize("clustering", ["kmeans", "gmm"])
def test_cluster_isotropy_fit_leaves_the_clusterers_centres_alone(clustering):
    """fit set each cluster's member mean into an alias of clusterer_'s own centres (K-means cluster_centers_, the
    mixture's means_), so transform and predict then assigned points by those means: on its own training points
    predict disagreed with labels_, and transform with cluster_isotropy(X) (points moved to another cluster)."""
    rng = np.random.default_rng(0)
    rng.normal(size=(2, 3))
    X = np.vstack([rng.normal(size=(50, 3)), rng.normal(size=(50, 3)) + 1e7])
    ci = ClusterIsotropy(n_clusters=5, n_components=1, clustering=clustering, random_state=0).fit(X)
    np.testing.assert_array_equal(ci.predict(X), ci.labels_)
    Y, labels = cluster_isotropy(X, n_clusters=5, n_components=1, clustering=clustering, random_state=0)
    np.testing.assert_array_equal(labels, ci.labels_)
    np.testing.assert_allclose(ci.transform(X), Y, rtol=0, atol=1e-9)
    centres = ci.clusterer_.cluster_centers_ if clustering == "kmeans" else ci.clusterer_.means_
    assert not np.shares_memory(centres, ci.cluster_centers_)


def test_transforms_far_from_the_origin_are_those_at_the_origin():
    """Rows 1e11 to 2e11 from the origin (float64 keeps about five digits of their spread) are the same rows as at
    the origin, moved: the fits must agree. With a one-pass mean the rank tests' floor grew with n times the mean's
    size, and Whitening refused these rows as rank-deficient (GloVe rows as far away as "all the same point"), while
    the mean's own error moved AllButTheTop's output by many ulps of the offset."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5000, 50)) * np.linspace(0.1, 2.0, 50)
    offset = 1e11 * (1 + rng.random(50))
    Y = X + offset
    near = Y - offset  # exact (Sterbenz): the same rows, at the origin
    ulp = float(np.spacing(offset.max()))
    for make, atol in ((lambda: Whitening(), 20 * ulp / 0.1),  # the smallest column's spread is 0.1
                       (lambda: AllButTheTop(n_components=5), 2 * ulp),
                       (lambda: ClusterIsotropy(n_clusters=3, n_components=5, random_state=0), 2 * ulp)):
        far, at_origin = make().fit_transform(Y), make().fit_transform(near)
        signs = np.sign((far * at_origin).sum(axis=0))  # Whitening's directions have no sign
        np.testing.assert_allclose(far, at_origin * signs, rtol=0, atol=atol)



def test_cluster_isotropy_says_the_rank_of_low_rank_clusters_not_repeated_points():
    """A trial: 200 distinct rows of rank 3 in 50 features, n_components=5, were said to hold "repeated points"; the
    warning now gives the clusters' rank (3, less the one the centring takes), and suggests fewer components."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3)) @ rng.normal(size=(3, 50))
    assert np.unique(X, axis=0).shape[0] == 200
    with pytest.warns(UserWarning, match=r"2 of 2 clusters have more than n_components \+ 1 = 6 points but at most "
                                         r"n_components = 5 directions of variance \(rank 3: their points span no "
                                         r"more, as repeated rows or data of low rank do; 200 points in all\).*Use "
                                         r"fewer components"):
        ci = ClusterIsotropy(n_clusters=2, n_components=5, random_state=0).fit(X)
    assert ci.n_components_.tolist() == [3, 3]


@pytest.mark.parametrize("shape,why", [((200, 10), "X has n_features=10 directions"),
                                       ((5, 50), ("n_samples=5 rows span at most n_samples - 1 directions after "
                                                 "centring"))])
def test_all_but_the_top_says_the_bound_that_binds(shape, why):
    """A trial: 50 components of 200 rows of 10 features were refused for the rows' span, not the 10 features."""
    limit = min(shape[0] - 1, shape[1])
    with pytest.raises(IsotropyValueError) as info:
        AllButTheTop(n_components=50).fit(np.random.default_rng(0).normal(size=shape))
    assert str(info.value) == (f"The 'n_components' parameter of AllButTheTop must be at most min(n_samples - 1, "
                               f"n_features) = {limit}: {why}. Got 50 instead.")


# ---------------------------------------------------------------- float32 in, float32 out (scikit-learn's PCA rule)

_FUNCTIONS = {
    "all_but_the_top": lambda X: all_but_the_top(X, n_components=2),
    "cluster_center": lambda X: cluster_center(X, n_clusters=3, random_state=0)[0],
    "cluster_isotropy": lambda X: cluster_isotropy(X, n_clusters=3, n_components=1, random_state=0)[0],
    "whiten": lambda X: whiten(X),
}
_CLASSES = {
    "AllButTheTop": lambda: AllButTheTop(n_components=2),
    "ClusterCentering": lambda: ClusterCentering(n_clusters=3, random_state=0),
    "ClusterIsotropy": lambda: ClusterIsotropy(n_clusters=3, n_components=1, random_state=0),
    "ClusterIsotropy-gmm": lambda: ClusterIsotropy(n_clusters=3, n_components=1, clustering="gmm", random_state=0),
    "Whitening": lambda: Whitening(n_components=5),
}


def _blobs32(n=600, d=12):
    X, _ = make_blobs(n, centers=3, n_features=d, cluster_std=2.0, random_state=1)
    return (X * np.linspace(1, 4, d) + 7.0).astype(np.float32)


@pytest.mark.parametrize("name", list(_FUNCTIONS))
def test_functions_keep_float32_and_compute_in_float64(name):
    # the float64 result of the same float32 values, rounded once to float32: the arithmetic is float64's
    X = _blobs32()
    out, reference = _FUNCTIONS[name](X), _FUNCTIONS[name](X.astype(np.float64))
    assert out.dtype == np.float32 and reference.dtype == np.float64
    np.testing.assert_array_equal(out, reference.astype(np.float32))
    assert _FUNCTIONS[name](X.astype(np.float16)).dtype == np.float64  # other dtypes: float64, as before


@pytest.mark.parametrize("name", list(_CLASSES))
def test_estimators_keep_float32_and_compute_in_float64(name):
    X = _blobs32()
    est = _CLASSES[name]().fit(X)
    out, reference = est.transform(X), est.transform(X.astype(np.float64))
    assert out.dtype == np.float32 and reference.dtype == np.float64
    np.testing.assert_array_equal(out, reference.astype(np.float32))
    assert est.fit_transform(X).dtype == np.float32
    assert est.transform(X.astype(np.float16)).dtype == np.float64
    assert est.transform(X.astype(np.int64)).dtype == np.float64
    if name == "Whitening":
        back, back64 = est.inverse_transform(out), est.inverse_transform(out.astype(np.float64))
        assert back.dtype == np.float32
        np.testing.assert_array_equal(back, back64.astype(np.float32))


@pytest.mark.parametrize("name", ["AllButTheTop", "ClusterIsotropy", "Whitening"])
def test_float32_transform_of_many_rows_holds_no_float64_copy(name):
    # 200,000 x 64 float32 (51 MB) in 49 row chunks: the float64 copy of X and the float64 result (2x the input
    # each: 4.x in all before) are never made; the output and a few float64 arrays of one chunk (2 MiB each) are
    rng = np.random.default_rng(0)
    X = (rng.normal(size=(200_000, 64)) * np.linspace(1, 3, 64)).astype(np.float32)
    est = _CLASSES[name]().fit(X[:2_000])
    Y, peak = _traced_peak(lambda: est.transform(X))
    assert Y.dtype == np.float32 and Y.shape[0] == X.shape[0]
    assert peak < Y.nbytes + 0.25 * X.nbytes, f"peak {(peak - Y.nbytes) / X.nbytes:.2f}x the input above the output"
    np.testing.assert_allclose(Y, est.transform(X.astype(np.float64)), rtol=0, atol=1e-5 * float(np.abs(Y).max()))



def test_float32_whitening_beyond_float32_range_is_refused():
    # fitted on data 1e-30 times smaller, the float32 X whitens to values past float32's largest (3.4e38); fitted on
    # data 1e37 times larger, whitened float32 rows map back past it: each refused in one line naming the method
    # (numpy rounded them to inf with an "overflow encountered in cast" warning); the same rows in float64 stay finite
    X = _blobs32()
    expected = r"and its transformed values reach [0-9.e+]+, beyond float32's largest 3\.4e\+38\. Pass X as float64 " \
               r"to keep them\.$"
    est = Whitening().fit(X.astype(np.float64) * 1e-30)
    big = X * np.float32(1e10)
    with pytest.raises(IsotropyValueError, match=r"^The 'X' parameter of Whitening\.transform is float32 " + expected):
        est.transform(big)
    assert np.isfinite(est.transform(big.astype(np.float64))).all()
    est = Whitening().fit(X.astype(np.float64) * 1e37)
    Z = est.transform(X.astype(np.float64) * 1e37).astype(np.float32)
    with pytest.raises(IsotropyValueError,
                       match=r"^The 'X' parameter of Whitening\.inverse_transform is float32 " + expected):
        est.inverse_transform(Z)
    assert np.isfinite(est.inverse_transform(Z.astype(np.float64))).all()



@pytest.mark.parametrize(("dtype", "largest"), [("float32", r"3\.4e\+38"), ("float16", r"6\.55e\+04")])
def test_tensor_transform_beyond_its_dtype_range_is_refused(dtype, largest):
    # a tensor comes back in its own dtype: values past its range were rounded to inf by torch without a word
    torch = pytest.importorskip("torch")
    X = _blobs32().astype(np.float64)
    given = getattr(torch, dtype)
    est = Whitening().fit(X * (1e-30 if dtype == "float32" else 1e-6))
    big = torch.tensor(X * (1e10 if dtype == "float32" else 1.0), dtype=given)
    with pytest.raises(IsotropyValueError, match=rf"^The 'X' parameter of Whitening\.transform is {dtype} and its "
                                                 rf"transformed values reach [0-9.e+]+, beyond {dtype}'s "
                                                 rf"largest {largest}\. Pass X as float64 to keep them\.$"):
        est.transform(big)
    out = est.transform(big.double())
    assert out.dtype == torch.float64 and bool(torch.isfinite(out).all())
    # in range: its own dtype, the float64 values rounded (float32: once, by numpy; float16 by torch, which may round
    # through float32 first: within one unit in the last place)
    small = torch.tensor(X * (1e-30 if dtype == "float32" else 1e-6), dtype=given)
    out, reference = est.transform(small), est.transform(small.double()).numpy().astype(dtype)
    assert out.dtype == given
    if dtype == "float32":
        np.testing.assert_array_equal(out.numpy(), reference)
    else:
        np.testing.assert_array_max_ulp(out.numpy(), reference, maxulp=1)


# ---------------------------------------------------------------- float32 fits read as float64 chunk by chunk

def _fitted(est) -> dict:
    return {key: value for key, value in vars(est).items() if key.endswith("_") and not key.startswith("_")}


@pytest.mark.parametrize("name", ["AllButTheTop", "Whitening"])
@pytest.mark.parametrize(("rows", "scale"), [(600, 1.0), (9, 1.0), (600, 2.0**60), (600, 2.0**-110),
                                             (600, 2.0**-140), (9, 2.0**-110)])
def test_float32_fit_is_the_fit_of_its_float64_values(name, rows, scale):
    # AllButTheTop and Whitening fit a float32 X without a float64 copy of it (read as float64 a row chunk at a time):
    # every fitted attribute is the one fitted on X.astype(float64), bit for bit; at ordinary and extreme scales
    # (2**60: beyond float32's safe range but not float64's; 2**-110: beyond float64's, rescaled on a float64 copy;
    # 2**-140: float32 subnormal numbers) and with fewer rows than features (the n x n side)
    X = (_blobs32()[:rows] * np.float32(scale)).astype(np.float32)
    assert np.isfinite(X).all() and (X != 0).any()
    make = {"AllButTheTop": lambda: AllButTheTop(n_components=2),
            "Whitening": lambda: Whitening(n_components=5 if rows > 12 else 3)}[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (subnormal data: the same warning either way)
        got, want = _fitted(make().fit(X)), _fitted(make().fit(X.astype(np.float64)))
        if rows > 12:  # the functions too, through the same fit: their float32 output is the float64 one rounded
            function = {"AllButTheTop": lambda Z: all_but_the_top(Z, n_components=2), "Whitening": whiten}[name]
            np.testing.assert_array_equal(function(X), function(X.astype(np.float64)).astype(np.float32))
    assert got.keys() == want.keys()
    for key in want:
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)
        assert np.asarray(got[key]).dtype == np.asarray(want[key]).dtype, key


@pytest.mark.parametrize("name", ["AllButTheTop", "Whitening"])
def test_float32_fit_holds_no_float64_copy(name):
    # 200,000 x 64 float32 (51 MB): fit made a float64 copy (2.1x the input at its peak); it reads row chunks now
    rng = np.random.default_rng(0)
    X = (rng.normal(size=(200_000, 64)) * np.linspace(1, 3, 64)).astype(np.float32)
    _, peak = _traced_peak(lambda: _CLASSES[name]().fit(X))
    assert peak < 0.3 * X.nbytes, f"fit's peak {peak / X.nbytes:.2f}x the input"
    torch = pytest.importorskip("torch")
    for key, value in _fitted(_CLASSES[name]().fit(torch.from_numpy(X[:5000]))).items():  # a float32 tensor alike
        np.testing.assert_array_equal(value, _fitted(_CLASSES[name]().fit(X[:5000]))[key], err_msg=key)


@pytest.mark.parametrize("name", [*_FUNCTIONS, *_CLASSES])
def test_big_endian_float32_is_float32(name):
    # '>f4' (a big-endian file's float32) is not np.float32 on a little-endian machine: the transforms returned
    # float64 for it; now the output of the same values in native order, float32
    X = _blobs32()
    swapped = X.astype(X.dtype.newbyteorder("S"))  # the other byte order, the same values
    assert not swapped.dtype.isnative and np.array_equal(swapped, X)
    if name in _FUNCTIONS:
        out, native = _FUNCTIONS[name](swapped), _FUNCTIONS[name](X)
    else:
        out, native = _CLASSES[name]().fit(swapped).transform(swapped), _CLASSES[name]().fit(X).transform(X)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, native)
