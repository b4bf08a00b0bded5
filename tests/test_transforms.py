"""Tests of isotropy.transforms: sklearn's estimator checks and hand-derived cases."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.utils.estimator_checks import parametrize_with_checks

from isotropy._validation import IsotropyValueError
from isotropy.transforms import ClusterCentering, cluster_center

ESTIMATORS = [
    ClusterCentering(),
    ClusterCentering(n_clusters=2),
]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


# ---------------------------------------------------------------- ClusterCentering (Cai et al.)

def test_cluster_centering_auto_picks_k_of_separated_blobs():
    # 4 blobs of std 1 whose centres are >= 20 apart: silhouette is maximal at the true k
    X, y = make_blobs(400, centers=4, n_features=8, cluster_std=1.0, center_box=(-40, 40), random_state=3)
    cc = ClusterCentering(random_state=0).fit(X)
    assert cc.n_clusters_ == 4
    assert max(cc.silhouette_scores_, key=cc.silhouette_scores_.get) == 4
    # clusters recovered up to relabelling: the contingency table is a permutation
    table = np.zeros((4, 4), int)
    np.add.at(table, (y, cc.labels_), 1)
    assert (table > 0).sum() == 4


def test_cluster_centering_auto_keeps_one_cluster_on_a_gaussian(rng):
    X = rng.normal(size=(500, 10)) + 3.0
    cc = ClusterCentering(random_state=0).fit(X)
    assert cc.n_clusters_ == 1
    assert max(cc.silhouette_scores_.values()) < 0.1
    # one cluster = plain centring
    np.testing.assert_allclose(cc.transform(X), X - X.mean(axis=0), atol=1e-12)


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
