"""Torch input gets the exact neighbours: tight clusters far from the rest of the data, float32 and float64.

The torch search once kept the candidates of one float32 product of mean-centred rows: with clusters of scale
0.01 beside one at 100 (a 1e4 ratio) 9 % of the 3 nearest indices were right, TwoNN gave 11.10 for 12.51 and the
MLE 8.03 for 12.13; float64 tensors failed at a 1e9 ratio. CPU tensors now take the numpy kernel, other devices
:func:`isotropy.metrics.neighbors._kneighbors_device`, tested here on CPU tensors (the same torch code).

References: scipy's ``cdist`` in float64 (direct differences) with ties broken by the smaller index, and
scikit-dimension's ``TwoNN`` and ``MLE`` on the same float64 points.
"""

import numpy as np
import pytest
import skdim
import torch
from scipy.spatial.distance import cdist

from isotropy import mle_dimension, twonn_dimension
from isotropy.metrics import neighbors
from isotropy.metrics.neighbors import kneighbors


def _far_clusters(offset: float, dtype, seed: int = 0) -> np.ndarray:
    """Two clusters of scale 0.01 near the origin (0.05 apart) and one at ``offset`` (the tester's data at 100)."""
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(size=(100, 16)) * 0.01, rng.normal(size=(100, 16)) * 0.01 + 0.05,
                      rng.normal(size=(100, 16)) * 0.01 + offset]).astype(dtype)


def _brute_force(X: np.ndarray, n_neighbors: int, metric: str = "euclidean"):
    """Distances and indices from scipy's float64 ``cdist``, sorted by (distance, index), a point not its own."""
    Y = X.astype(np.float64)
    if metric == "cosine":  # 1 − cos = ‖u − v‖²/2 of the unit rows (no cancellation for nearly parallel rows)
        U = Y * (1.0 / np.sqrt((Y * Y).sum(axis=1)))[:, None]
        D = cdist(U, U, "sqeuclidean") / 2
    else:
        D = cdist(Y, Y)
    np.fill_diagonal(D, np.inf)
    order = np.lexsort((np.broadcast_to(np.arange(len(Y)), D.shape), D), axis=1)[:, :n_neighbors]
    return np.take_along_axis(D, order, axis=1), order


def _assert_exact(dist, ind, X, n_neighbors, metric="euclidean"):
    ref_d, ref_i = _brute_force(X, n_neighbors, metric)
    np.testing.assert_array_equal(ind.numpy(), ref_i)
    np.testing.assert_allclose(dist.numpy(), ref_d, rtol=1e-13, atol=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_neighbors", [1, 3, 10])
def test_cpu_tensor_far_clusters_match_brute_force(dtype, n_neighbors):
    X = _far_clusters(100.0, dtype)
    T = torch.from_numpy(X).requires_grad_()
    dist, ind = kneighbors(T, n_neighbors=n_neighbors)
    assert dist.device == T.device and dist.dtype == torch.float64 and ind.dtype == torch.int64
    assert not dist.requires_grad  # the search has no graph (docs/api/dimension.md)
    _assert_exact(dist, ind, X, n_neighbors)


def test_float64_tensor_at_a_1e9_ratio_matches_brute_force():
    X = _far_clusters(1e7, np.float64)  # scale 0.01 beside 1e7
    dist, ind = kneighbors(torch.from_numpy(X), n_neighbors=5)
    _assert_exact(dist, ind, X, 5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_twonn_and_mle_of_a_tensor_match_skdim_on_far_clusters(dtype):
    X = _far_clusters(100.0, dtype)
    X64 = X.astype(np.float64)  # the same points
    T = torch.from_numpy(X)
    rtol = 1e-6 if dtype == np.float32 else 1e-8  # float32 estimates for float32 tensors; 1e-8 as test_dimension.py
    twonn = twonn_dimension(T)
    assert isinstance(twonn, torch.Tensor) and twonn.dtype == T.dtype
    assert float(twonn) == pytest.approx(skdim.id.TwoNN().fit(X64).dimension_, rel=rtol)  # 12.51
    mle = float(mle_dimension(T, n_neighbors=10))
    assert mle == pytest.approx(skdim.id.MLE().fit(X64, n_neighbors=10, comb="mean").dimension_, rel=rtol)  # 12.13


@pytest.fixture
def stages(monkeypatch):
    """Counts of the device search's fallbacks: rows rescored in float64, rows searched by differences."""
    counts = {"scored": 0, "differences": 0}
    top, differences = neighbors._top_scores, neighbors._nearest_by_differences

    def counted_top(low, half, rows, m):
        if low.dtype == torch.float64 and half.dtype == torch.float64:
            counts["scored"] += rows.numel()
        return top(low, half, rows, m)

    def counted_differences(R, rows, k):
        counts["differences"] += rows.numel()
        return differences(R, rows, k)

    monkeypatch.setattr(neighbors, "_top_scores", counted_top)
    monkeypatch.setattr(neighbors, "_nearest_by_differences", counted_differences)
    return counts


@pytest.mark.parametrize("chunk_size", [64, None])
@pytest.mark.parametrize("n_neighbors", [1, 10])
def test_device_search_is_exact_on_far_clusters(chunk_size, n_neighbors, stages):
    X = _far_clusters(100.0, np.float32)
    T = torch.from_numpy(X).requires_grad_()
    dist, ind = neighbors._kneighbors_device(T, n_neighbors, "euclidean", chunk_size, "kneighbors")
    assert dist.device == T.device and dist.dtype == torch.float64 and ind.dtype == torch.int64
    assert not dist.requires_grad
    _assert_exact(dist, ind, X, n_neighbors)
    assert stages["scored"] > 0  # the float32 scores could not certify the tight clusters' rows


def test_device_search_is_exact_for_float64_at_a_1e9_ratio(stages):
    X = _far_clusters(1e7, np.float64)
    dist, ind = neighbors._kneighbors_device(torch.from_numpy(X), 5, "euclidean", 128, "kneighbors")
    _assert_exact(dist, ind, X, 5)
    assert stages["differences"] > 0  # float64 scores could not certify them either


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_device_search_matches_brute_force_on_gaussian_data(metric, dtype):
    rng = np.random.default_rng(3)
    X = (rng.normal(size=(700, 24)) * 1e3 + 5e3).astype(dtype)  # off-centre, far from unit scale
    dist, ind = neighbors._kneighbors_device(torch.from_numpy(X), 12, metric, 100, "kneighbors")
    _assert_exact(dist, ind, X, 12, metric)


def test_device_search_keeps_every_point_a_candidate_when_few():
    X = _far_clusters(100.0, np.float32)[::20]  # 15 points: 14 candidates each, nothing to certify
    dist, ind = neighbors._kneighbors_device(torch.from_numpy(X), 3, "euclidean", None, "kneighbors")
    _assert_exact(dist, ind, X, 3)


def test_reduced_precision_float32_products_widen_the_bound_and_stay_exact():
    before = torch.get_float32_matmul_precision()
    gamma = neighbors._score_bound(torch, torch.float32, 16)[0]
    bound64 = neighbors._score_bound(torch, torch.float64, 16)
    try:
        torch.set_float32_matmul_precision("medium")  # products may round their inputs to bfloat16 (on a GPU)
        assert neighbors._score_bound(torch, torch.float32, 16)[0] > 100 * gamma
        assert neighbors._score_bound(torch, torch.float64, 16) == bound64  # float64 products are never reduced
        X = _far_clusters(100.0, np.float32)
        dist, ind = neighbors._kneighbors_device(torch.from_numpy(X), 4, "euclidean", None, "kneighbors")
        _assert_exact(dist, ind, X, 4)
    finally:
        torch.set_float32_matmul_precision(before)
