"""Parameter bounds of the transforms, found by a user trial: each refusal names the transform's own parameter.

- ``silhouette_sample_size=2`` passed cluster_center's check ([2, inf)) and was refused by silhouette_score under its
  own 'sample_size' ([3, n]); a draw holding one cluster (or one per row) was refused the same way.
- ``n_init`` had no upper bound: ``n_init=10**12`` ran for ever on a 30 x 3 input.
- ``whiten`` of data whose samples are all one point suggested "Pass n_components <= 0", a value it refuses.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from isotropy._utils.validation import IsotropyValueError
from isotropy.transforms import ClusterCentering, Whitening, cluster_center, whiten


@pytest.fixture
def X():
    return np.random.default_rng(0).normal(size=(60, 5))


@pytest.mark.parametrize("make", [
    lambda X, **kw: cluster_center(X, k_range=(2, 3), random_state=0, **kw),
    lambda X, **kw: ClusterCentering(k_range=(2, 3), random_state=0, **kw).fit(X),
])
def test_a_silhouette_sample_of_two_is_refused_under_the_transforms_own_name(X, make):
    with pytest.raises(IsotropyValueError) as info:
        make(X, silhouette_sample_size=2)
    name = "cluster_center" if "cluster_center" in str(info.value) else "ClusterCentering"
    assert str(info.value) == (f"The 'silhouette_sample_size' parameter of {name} must be an int in the range "
                               f"[3, 1000000000] or None. Got 2 instead.")


def test_a_draw_without_a_silhouette_is_refused_under_the_transforms_own_name(X):
    # random_state=0 chooses k=4 on this data and draws 3 rows in 3 of its clusters: one cluster per row
    with pytest.raises(IsotropyValueError) as info:
        cluster_center(X, k_range=(2, 5), silhouette_sample_size=3, random_state=0)
    message = str(info.value)
    assert re.fullmatch(r"The 'silhouette_sample_size' parameter of cluster_center drew 3 of the 60 rows, which hold "
                        r"[13] of the k=\d K-means clusters; a silhouette needs between 2 and silhouette_sample_size "
                        r"- 1 = 2 clusters in the sample\. Pass a larger silhouette_sample_size \(or None for all "
                        r"rows\), or another random_state\.", message), message
    assert "'sample_size'" not in message


def test_the_silhouettes_of_a_subsample_are_scikit_learns_on_the_same_draw(X):
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    cc = ClusterCentering(k_range=(2, 4), n_init=2, silhouette_sample_size=25, random_state=3).fit(X)
    seed = int(np.random.default_rng(3).integers(2**31 - 1))  # the seed fit_cluster_centers draws
    assert sorted(cc.silhouette_scores_) == [2, 3, 4]
    for k, value in cc.silhouette_scores_.items():
        labels = KMeans(n_clusters=k, n_init=2, random_state=seed).fit(X).labels_
        expected = silhouette_score(X, labels, sample_size=25, random_state=seed)
        assert value == pytest.approx(expected, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("n_init", [1001, 10**12])
def test_n_init_is_bounded(n_init):
    X = np.random.default_rng(0).normal(size=(30, 3))
    message = (f"The 'n_init' parameter of {{}} must be an int in the range [1, 1000] (each restart is a whole "
               f"K-means run, for every k tried). Got {n_init} instead.")
    with pytest.raises(IsotropyValueError) as info:
        cluster_center(X, n_clusters=2, n_init=n_init)
    assert str(info.value) == message.format("cluster_center")
    with pytest.raises(IsotropyValueError) as info:
        ClusterCentering(n_clusters=2, n_init=n_init).fit(X)
    assert str(info.value) == message.format("ClusterCentering")
    # the bound itself is taken
    from isotropy.transforms._cluster_centering import _check_params

    _check_params(2, (2, 15), 0.1, 1000, None, caller="cluster_center")


@pytest.mark.parametrize("Z", [np.zeros((10, 3)), np.full((4, 6), 2.5)], ids=["zeros", "one point"])
@pytest.mark.parametrize("n_components", [None, 2])
def test_whitening_data_without_spread_says_what_helps(Z, n_components):
    for fit, name in ((lambda: whiten(Z, n_components=n_components), "whiten"),
                      (lambda: Whitening(n_components=n_components).fit(Z), "Whitening")):
        with pytest.raises(IsotropyValueError) as info:
            fit()
        # with n_components < n_features, eps > 0 would keep an arbitrary part of the zero-variance directions
        regularise = "eps > 0" if n_components is None else "eps > 0 with n_components=None (all features)"
        assert str(info.value) == (f"The 'X' parameter of {name} has a zero covariance (rank 0: all {Z.shape[0]} "
                                   f"samples are the same point), so no direction can be whitened. Pass {regularise} "
                                   f"to regularise, or samples that vary.")
        assert info.value.rank == 0
    # what it suggests works: with eps > 0 every sample is whitened to the origin
    np.testing.assert_array_equal(whiten(Z, eps=1e-3), 0.0)
