"""The silhouette of clusters much closer to each other than to the data's centre, exact in float32 and float64.

Two tight clusters side by side and a third far away (offset 1e4 times their spread): the product kernel centres
every row on one centre, so a distance between the near clusters was the small difference of large products, and
in float32 the silhouette of their samples read 0 (a = b = 0 to the kernel's precision): 0.333 for a true 0.459.
Those samples are now recomputed around their own cluster's centre. Reference: scikit-learn on distances
computed from differences in float64 (no products of large numbers).
"""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest
import torch
from sklearn.metrics import silhouette_samples as sk_silhouette_samples

import isotropy
from isotropy import distributed

E = np.eye(8)


def _near_clusters(offset, dtype, seed=0):
    rng = np.random.default_rng(seed)
    X = np.concatenate([offset * E[0] + rng.normal(size=(150, 8)), offset * E[0] + 3 * E[1] + rng.normal(size=(150, 8)),
                        offset * E[2] + rng.normal(size=(150, 8))]).astype(dtype)
    labels = np.repeat(np.arange(3), 150)
    order = rng.permutation(labels.size)
    return X[order], labels[order]


def _reference(X, labels, metric):
    """scikit-learn's silhouette of distances from float64 differences."""
    X = X.astype(np.float64)
    if metric == "cosine":
        X = X / np.linalg.norm(X, axis=1, keepdims=True)
        D = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1) / 2.0
    else:
        D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    return sk_silhouette_samples(D, labels, metric="precomputed")


CASES = [(np.float32, 1e2), (np.float32, 1e4), (np.float32, 1e5), (np.float64, 1e6), (np.float64, 1e9)]


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
@pytest.mark.parametrize(("dtype", "offset"), CASES)
def test_in_memory_samples_and_score(metric, dtype, offset):
    X, labels = _near_clusters(offset, dtype)
    expected = _reference(X, labels, metric)
    tol = 1e-5 if dtype == np.float32 else 1e-9
    got = isotropy.silhouette_samples(X, labels, metric=metric)
    np.testing.assert_allclose(got, expected, rtol=0, atol=tol)
    assert isotropy.silhouette_score(X, labels, metric=metric) == pytest.approx(expected.mean(), abs=tol)
    assert expected.mean() > 0.4  # the near clusters are told apart: 1/3 when their samples read 0
    T = torch.from_numpy(X)  # a CPU tensor takes the same kernel
    np.testing.assert_allclose(isotropy.silhouette_samples(T, labels, metric=metric).numpy(), expected, rtol=0, atol=tol)


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
@pytest.mark.parametrize(("dtype", "offset"), [CASES[1], CASES[3]])
def test_dask_samples_and_score(metric, dtype, offset):
    X, labels = _near_clusters(offset, dtype, seed=1)
    expected = _reference(X, labels, metric)
    tol = 1e-5 if dtype == np.float32 else 1e-9
    Xd = da.from_array(X, chunks=(100, 8))
    with dask.config.set(scheduler="threads"):
        got = distributed.silhouette_samples(Xd, labels, metric=metric, chunk_size=120).compute()
        score = distributed.silhouette_score(Xd, labels, metric=metric, chunk_size=120)
    np.testing.assert_allclose(got, expected, rtol=0, atol=tol)
    assert score == pytest.approx(expected.mean(), abs=tol)


def test_ordinary_data_recompute_nothing(monkeypatch):
    """Normal data and well-separated blobs: no sample is recomputed (the float32 kernel's error stays ~1e-7)."""
    import isotropy.metrics.silhouette as module

    calls = []
    real = module._exact_sums
    monkeypatch.setattr(module, "_exact_sums", lambda *a, **k: calls.append(a[2].size) or real(*a, **k))
    rng = np.random.default_rng(2)
    centres = 20 * rng.normal(size=(10, 64))
    ids = rng.integers(0, 10, 2000)
    for X in (rng.normal(size=(2000, 384)), rng.normal(size=(2000, 64)) + centres[ids]):
        X = X.astype(np.float32)
        for metric in ("euclidean", "cosine"):
            got = isotropy.silhouette_samples(X, ids, metric=metric)
            np.testing.assert_allclose(got, sk_silhouette_samples(X.astype(np.float64), ids, metric=metric), atol=2e-6)
    assert calls == []


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
@pytest.mark.parametrize(("dtype", "offset"), [CASES[1], CASES[3]])
def test_torch_device_kernel(metric, dtype, offset):
    """The kernel a GPU tensor takes (run here on a CPU tensor): the same recomputation, on the tensor's device."""
    from isotropy.metrics.silhouette import _silhouette_torch

    X, labels = _near_clusters(offset, dtype, seed=2)
    expected = _reference(X, labels, metric)
    got = _silhouette_torch(torch.from_numpy(X), labels, 3, metric, 128)
    np.testing.assert_allclose(got.numpy(), expected, rtol=0, atol=1e-5 if dtype == np.float32 else 1e-9)


@pytest.mark.parametrize("layout", ["one point repeated", "every row ten times"])
def test_equal_rows_are_at_distance_zero_in_float32(layout):
    """Equal rows came out of the product at up to √δ apart (δ the squared distances' rounding), which averaged over
    many duplicates put a float32 coefficient 1.2e-4 off (a review); they are now at distance 0 exactly."""
    from isotropy._kernels.silhouette import duplicate_groups

    rng = np.random.default_rng(2)
    if layout == "one point repeated":
        p = rng.normal(size=16)
        X = np.concatenate([np.tile(p, (95, 1)), p + 0.3 * rng.normal(size=(5, 16)),
                            p + 1 + 0.3 * rng.normal(size=(100, 16)), p + rng.normal(size=(100, 16))])
        labels = np.repeat([0, 1, 2], 100)
    else:
        X = np.repeat(rng.normal(size=(60, 16)), 10, axis=0)
        labels = np.repeat(np.arange(60) % 7, 10)
    expected = _reference(X, labels, "euclidean")
    got = isotropy.silhouette_samples(X.astype(np.float32), labels)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
    groups = duplicate_groups(X.astype(np.float32))
    assert (groups >= 0).sum() == (95 if layout == "one point repeated" else 600)
    assert duplicate_groups(rng.normal(size=(500, 16)).astype(np.float32)) is None
    # the tensor kernel (the GPU path, run here on a CPU tensor), in blocks smaller and larger than the data: was
    # 4.5e-5 off on "every row ten times"
    from isotropy.metrics.silhouette import _duplicate_groups_torch, _silhouette_torch

    for chunk in (64, 4096):
        got = _silhouette_torch(torch.from_numpy(X.astype(np.float32)), labels, int(labels.max()) + 1, "euclidean",
                                chunk)
        np.testing.assert_allclose(got.numpy(), expected, rtol=0, atol=1e-6)
    tensor_groups = _duplicate_groups_torch(torch.from_numpy(X.astype(np.float32))).numpy()
    pairs = set(zip(groups.tolist(), tensor_groups.tolist()))  # the same partition, whatever the group numbers
    assert len(pairs) == len(set(groups.tolist())) == len(set(tensor_groups.tolist()))
    assert all((a < 0) == (b < 0) for a, b in pairs)
    assert _duplicate_groups_torch(torch.from_numpy(rng.normal(size=(500, 16)).astype(np.float32))) is None
    # and the dask tiles (the duplicates found by a hash pass over the blocks, candidates compared bit for bit): were
    # 5.5e-5 off on "every row ten times"; the rows shuffled so that equal rows fall in different blocks
    order = rng.permutation(X.shape[0])
    lazy = da.from_array(X[order].astype(np.float32), chunks=(64, -1))
    got = distributed.silhouette_samples(lazy, labels[order]).compute()
    np.testing.assert_allclose(got, expected[order], rtol=0, atol=1e-6)


# The review's nine points: sample 8 is sample 1 moved by `gap` along the second axis, in another cluster of 3.
_NINE = np.array([[-0.5, 1], [1.5, 0], [0, 0], [1, 0.5], [0, 1], [-1, -1], [-1.5, -1], [-0.5, 1], [1.5, 0]])
_NINE_LABELS = np.array([2, 0, 2, 1, 1, 2, 2, 0, 1])


@pytest.mark.parametrize(("dtype", "gap", "tol"), [(np.float32, 1e-9, 1e-6), (np.float32, 1e-6, 1e-6),
                                                   (np.float32, 1e-4, 1e-6), (np.float64, 1e-12, 1e-10),
                                                   (np.float64, 1e-9, 1e-10), (np.float64, 1e-6, 1e-10)])
def test_near_equal_rows_in_small_clusters(dtype, gap, tol):
    """Two rows `gap` apart, not equal: the product put their distance anywhere up to √δ (δ the squared distances'
    rounding) and the error estimate assumed δ/(2·d), so the float32 coefficients of the two were 1e-4 and 2.8e-4
    off in clusters of 3 (a review), float64 8.4e-9 at a gap of 1e-12. Such rows are now recomputed from
    differences, on every kernel: numpy, the tensor kernel of a GPU (run here on a CPU tensor) and the dask tiles."""
    from isotropy.metrics.silhouette import _silhouette_torch

    X = _NINE.astype(dtype)
    X[8, 1] = gap
    assert X[8, 1] != 0
    expected = _reference(X, _NINE_LABELS, "euclidean")
    np.testing.assert_allclose(isotropy.silhouette_samples(X, _NINE_LABELS), expected, rtol=0, atol=tol)
    got = _silhouette_torch(torch.from_numpy(X), _NINE_LABELS, 3, "euclidean", None)
    np.testing.assert_allclose(got.numpy(), expected, rtol=0, atol=tol)
    with dask.config.set(scheduler="threads"):
        got = distributed.silhouette_samples(da.from_array(X, chunks=(4, -1)), _NINE_LABELS).compute()
    np.testing.assert_allclose(got, expected, rtol=0, atol=tol)


def test_near_equal_rows_among_many(monkeypatch):
    """Pairs of rows 1e-5 of the spread apart, in clusters of 4, among ordinary rows: only those rows are
    recomputed, and every coefficient is within the float32 kernel's 1e-6."""
    import isotropy.metrics.silhouette as module

    calls = []
    real = module._exact_sums
    monkeypatch.setattr(module, "_exact_sums", lambda *a, **k: calls.append(np.sort(a[2])) or real(*a, **k))
    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 16))
    X[1:40:2] = X[0:40:2] + 1e-5 * rng.normal(size=(20, 16))  # 20 near pairs
    labels = np.arange(600) // 4
    expected = _reference(X.astype(np.float32), labels, "euclidean")
    got = isotropy.silhouette_samples(X.astype(np.float32), labels, chunk_size=128)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
    assert len(calls) == 1 and np.array_equal(calls[0], np.arange(40))


def test_rows_merely_close_are_not_recomputed(monkeypatch):
    """Every row with a twin 2.7 % of its norm away (float32, d = 384): within the kernel's 1e-6 as they are; flagging
    pairs within 100 rounding bounds sent all of them to the exact pass, many times slower (a review)."""
    import isotropy.metrics.silhouette as module

    calls = []
    real = module._exact_sums
    monkeypatch.setattr(module, "_exact_sums", lambda *a, **k: calls.append(a[2].size) or real(*a, **k))
    rng = np.random.default_rng(0)
    base = rng.normal(size=(1000, 384))
    scale = np.linalg.norm(base - base.mean(0), axis=1, keepdims=True) / np.sqrt(384)
    X = np.concatenate([base, base + 0.027 * scale * rng.normal(size=base.shape)]).astype(np.float32)
    labels = np.tile(rng.integers(0, 20, 1000), 2)
    got = isotropy.silhouette_samples(X, labels)
    np.testing.assert_allclose(got, sk_silhouette_samples(X.astype(np.float64), labels), rtol=0, atol=1e-6)
    assert calls == []
