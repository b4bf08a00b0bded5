"""Silhouette: reference values from scikit-learn 1.x (sklearn.metrics.silhouette_samples/score,
computed on the same arrays in each test), closed forms, invariances, errors, numpy/torch parity."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm

from isotropy import IsotropyValueError, silhouette_samples, silhouette_score


def _blobs(rng, n, d, k, spread=3.0, offset=5.0):
    centres = rng.normal(scale=spread, size=(k, d))
    labels = rng.integers(0, k, n)
    labels[:k] = np.arange(k)  # every cluster present
    return centres[labels] + rng.normal(size=(n, d)) + offset, labels


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
@pytest.mark.parametrize(("n", "d", "k", "chunk_size"), [
    (40, 2, 2, None), (301, 17, 5, 64), (500, 3, 40, 97), (257, 64, 3, 256), (120, 1, 4, 7)])
def test_samples_match_sklearn(rng, metric, n, d, k, chunk_size):
    X, labels = _blobs(rng, n, d, k)
    expected = skm.silhouette_samples(X, labels, metric=metric)
    got = silhouette_samples(X, labels, metric=metric, chunk_size=chunk_size)
    assert got.dtype == np.float64 and got.shape == (n,)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-10)
    assert abs(silhouette_score(X, labels, metric=metric) - skm.silhouette_score(X, labels, metric=metric)) < 1e-10


def test_closed_form_two_pairs():
    # a = 1, b = (10 + sqrt(101)) / 2, s = 1 - a / b for every point
    X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    expected = 1 - 2 / (10 + np.sqrt(101))
    np.testing.assert_allclose(silhouette_samples(X, [0, 0, 1, 1]), expected, rtol=0, atol=1e-15)


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_many_clusters_row_panels_match_sklearn(rng, monkeypatch, metric):
    # a cluster-sum table over the memory budget switches to row panels (every block formed)
    import isotropy.metrics.silhouette as module

    monkeypatch.setattr(module, "_SUMS_BUDGET", 1000)
    X, labels = _blobs(rng, 400, 6, 150)
    expected = skm.silhouette_samples(X, labels, metric=metric)
    np.testing.assert_allclose(silhouette_samples(X, labels, metric=metric, chunk_size=90), expected,
                               rtol=0, atol=1e-10)


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
@pytest.mark.parametrize(("n_clusters", "diagonal_rows", "chunk_size"), [(5, 13, 97), (150, 101, 250)])
def test_diagonal_blocks_in_smaller_blocks_with_partial_last_ones(rng, monkeypatch, metric, n_clusters, diagonal_rows,
                                                                  chunk_size):
    # each diagonal block of chunk_size rows runs as blocks of diagonal_rows on and above its diagonal (the last ones
    # cut short), with duplicate rows across blocks; 150 clusters put more than 32 in a block's rows (the one-hot
    # product of its column sums). Reference: scikit-learn on float64 differences (exact zeros for duplicates)
    from scipy.spatial.distance import cdist

    import isotropy.metrics.silhouette as module

    monkeypatch.setattr(module, "DIAGONAL_ROWS", diagonal_rows)
    X, labels = _blobs(rng, 400, 6, n_clusters)
    X[250:280] = X[90:120]
    expected = skm.silhouette_samples(cdist(X, X, metric=metric), labels, metric="precomputed")
    np.testing.assert_allclose(silhouette_samples(X, labels, metric=metric, chunk_size=chunk_size), expected,
                               rtol=0, atol=1e-10)


def test_singletons_and_duplicates_match_sklearn(rng):
    X = rng.normal(size=(30, 4))
    X[5] = X[6]  # exact duplicate pair in one cluster -> a = 0
    labels = np.repeat(np.arange(10), 3)
    labels[[0, 29]] = [10, 11]  # two singleton clusters: s = 0 there
    got = silhouette_samples(X, labels)
    np.testing.assert_allclose(got, skm.silhouette_samples(X, labels), rtol=0, atol=1e-10)
    assert got[0] == 0.0 and got[29] == 0.0


def test_cosine_zero_vector_matches_sklearn(rng):
    X = rng.normal(size=(60, 5))
    X[3] = 0.0  # cosine distance 1 to everything (sklearn's convention)
    labels = rng.integers(0, 3, 60)
    np.testing.assert_allclose(silhouette_samples(X, labels, metric="cosine"),
                               skm.silhouette_samples(X, labels, metric="cosine"), rtol=0, atol=1e-10)


def test_multilabel_each_distinct_row_is_a_cluster(rng):
    X, _ = _blobs(rng, 200, 6, 3)
    Y = rng.integers(0, 2, size=(200, 3)).astype(np.int8)
    _, ids = np.unique(Y, axis=0, return_inverse=True)
    for metric in ("euclidean", "cosine"):
        expected = skm.silhouette_score(X, ids.ravel(), metric=metric)
        assert abs(silhouette_score(X, Y, metric=metric) - expected) < 1e-10
        assert abs(silhouette_score(X, Y.astype(float), metric=metric) - expected) < 1e-10


@pytest.mark.parametrize("random_state", [0, 7, "RandomState"])
def test_sample_size_selects_sklearns_subset(rng, random_state):
    X, labels = _blobs(rng, 400, 8, 4)
    ours_rs = np.random.RandomState(3) if random_state == "RandomState" else random_state
    theirs_rs = np.random.RandomState(3) if random_state == "RandomState" else random_state
    got = silhouette_score(X, labels, sample_size=150, random_state=ours_rs)
    expected = skm.silhouette_score(X, labels, sample_size=150, random_state=theirs_rs)
    assert abs(got - expected) < 1e-10
    # a Generator draws the same way: generator.permutation(n)[:sample_size]
    idx = np.random.default_rng(5).permutation(400)[:150]
    got = silhouette_score(X, labels, sample_size=150, random_state=np.random.default_rng(5))
    assert abs(got - skm.silhouette_score(X[idx], labels[idx])) < 1e-10


def test_float32_close_to_float64(rng):
    X, labels = _blobs(rng, 3000, 48, 6, offset=50.0)  # large offset: centring matters
    s64 = silhouette_samples(X, labels)
    s32 = silhouette_samples(X.astype(np.float32), labels, chunk_size=700)
    assert np.abs(s32 - s64).max() < 1e-6
    s64c = silhouette_samples(X, labels, metric="cosine")
    s32c = silhouette_samples(X.astype(np.float32), labels, metric="cosine", chunk_size=700)
    assert np.abs(s32c - s64c).max() < 1e-6


# ---------------------------------------------------------------------------------------------
# invariances


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), k=st.integers(2, 6), shift=st.floats(-1e3, 1e3))
def test_invariances_euclidean(seed, k, shift):
    rng = np.random.default_rng(seed)
    X, labels = _blobs(rng, 60, 5, k)
    base = silhouette_samples(X, labels)
    permuted = rng.permutation(k)[labels] + 100  # relabel clusters (any values)
    np.testing.assert_allclose(silhouette_samples(X, permuted), base, rtol=0, atol=1e-10)
    Q, _ = np.linalg.qr(rng.normal(size=(5, 5)))
    np.testing.assert_allclose(silhouette_samples(X @ Q + shift, labels), base, rtol=0, atol=1e-9)
    np.testing.assert_allclose(silhouette_samples(3.5 * X, labels), base, rtol=0, atol=1e-10)
    order = rng.permutation(60)  # permuting samples permutes the coefficients
    np.testing.assert_allclose(silhouette_samples(X[order], labels[order]), base[order], rtol=0, atol=1e-10)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_invariances_cosine(seed):
    rng = np.random.default_rng(seed)
    X, labels = _blobs(rng, 50, 4, 3)
    base = silhouette_samples(X, labels, metric="cosine")
    scales = rng.uniform(0.1, 10.0, size=(50, 1))  # per-row rescaling changes nothing
    np.testing.assert_allclose(silhouette_samples(X * scales, labels, metric="cosine"), base, rtol=0, atol=1e-10)
    Q, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    np.testing.assert_allclose(silhouette_samples(X @ Q, labels, metric="cosine"), base, rtol=0, atol=1e-10)


# ---------------------------------------------------------------------------------------------
# errors


@pytest.mark.parametrize(("labels", "match"), [
    (np.zeros(10, int), "between 2 and n_samples - 1 = 9 clusters. Got 1 cluster instead"),
    (np.arange(10), "between 2 and n_samples - 1 = 9 clusters. Got 10 clusters instead"),
    (np.zeros(9, int), "one entry per sample \\(10\\). Got 9 instead"),
    (np.array([0, 1] * 4 + [np.nan, 1]), "finite"),
])
def test_bad_labels(labels, match):
    X = np.random.default_rng(0).normal(size=(10, 3))
    for fn in (silhouette_samples, silhouette_score):
        with pytest.raises(IsotropyValueError, match=match):
            fn(X, labels)


def test_bad_arguments():
    X = np.random.default_rng(0).normal(size=(10, 3))
    labels = [0, 1] * 5
    bad_X = X.copy()
    bad_X[2, 1] = np.nan
    with pytest.raises(IsotropyValueError, match="'X' parameter of silhouette_score must contain only finite"):
        silhouette_score(bad_X, labels)
    with pytest.raises(IsotropyValueError, match="2-d array"):
        silhouette_score(X[0], labels)
    with pytest.raises(IsotropyValueError, match="'metric' parameter of silhouette_score must be one of"):
        silhouette_score(X, labels, metric="manhattan")
    # more samples than rows: every row, as scikit-learn (a trial: its code broke on small data), even past int64
    for size in (11, 2**64):
        assert silhouette_score(X, labels, sample_size=size, random_state=0) == pytest.approx(
            skm.silhouette_score(X, labels, sample_size=11, random_state=0), rel=1e-12)
    with pytest.raises(IsotropyValueError, match="'chunk_size' parameter of silhouette_samples"):
        silhouette_samples(X, labels, chunk_size=0)
    with pytest.raises(TypeError, match="'random_state' parameter of silhouette_score"):
        silhouette_score(X, labels, sample_size=5, random_state="seed")
    # 2 samples allow at most 1 cluster: no silhouette is ever defined, so the option's range starts at 3 (it said
    # "between 2 and n_samples - 1 = 1 clusters")
    with pytest.raises(IsotropyValueError, match=r"'sample_size' parameter of silhouette_score must be an int in the "
                                                 r"range \[3, inf\)"):
        silhouette_score(X, labels, sample_size=2, random_state=0)


# ---------------------------------------------------------------------------------------------
# backends


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_backend_parity(backend, rng, metric):
    X, labels = _blobs(rng, 150, 7, 4)
    expected = skm.silhouette_samples(X, labels, metric=metric)
    Xb = backend(X)
    got = silhouette_samples(Xb, backend(labels), metric=metric, chunk_size=64)
    score = silhouette_score(Xb, labels, metric=metric)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=0, atol=1e-10)
    assert abs(float(score) - expected.mean()) < 1e-10
    if type(Xb).__module__.startswith("torch"):
        assert got.shape == (150,) and got.dtype == Xb.dtype and got.device == Xb.device
        assert score.ndim == 0 and score.dtype == Xb.dtype
    else:
        assert isinstance(score, float)


def test_torch_float32_requires_grad_and_inputs_untouched(rng):
    import torch

    X, labels = _blobs(rng, 400, 16, 3)
    Xt = torch.tensor(X, dtype=torch.float32, requires_grad=True)
    before = Xt.detach().clone()
    score = silhouette_score(Xt, torch.tensor(labels))
    assert not score.requires_grad and score.dtype == torch.float32
    assert abs(score.item() - skm.silhouette_score(X, labels)) < 1e-6
    assert torch.equal(Xt.detach(), before)
    sub = silhouette_score(Xt.detach(), labels, sample_size=100, random_state=4)
    assert abs(sub.item() - skm.silhouette_score(X, labels, sample_size=100, random_state=4)) < 1e-6


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_torch_device_kernel_matches_numpy_kernel(rng, metric):
    # CPU tensors go through the numpy kernel; the torch kernel (used on GPUs) is checked here
    # on CPU against sklearn, in float64 and (to 1e-6) in float32, with uneven blocks.
    import torch

    from isotropy.metrics.silhouette import _cluster_sums_torch, _coefficients_torch, _resolution_torch

    X, labels = _blobs(rng, 333, 9, 5, offset=30.0)
    expected = skm.silhouette_samples(X, labels, metric=metric)
    for dtype, tol in ((torch.float64, 1e-10), (torch.float32, 1e-6)):
        T = torch.tensor(X, dtype=dtype)
        sums, q = _cluster_sums_torch(T, labels, 5, metric, 100)
        assert sums.dtype == torch.float64
        resolution = _resolution_torch(q, labels, 5, T, metric)
        np.testing.assert_allclose(_coefficients_torch(sums, labels, resolution).numpy(), expected, rtol=0, atol=tol)



@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_duplicates_have_a_equal_b_equal_0_not_rounding_noise(metric):
    # found by the fuzz suite: a point whose own and nearest clusters are copies of it has a = b = 0,
    # hence s = 0 (scikit-learn), but the product kernel's rounding noise gave it +1 or -1
    import torch

    from isotropy.metrics.silhouette import _cluster_sums_torch, _coefficients_torch, _resolution_torch

    X = np.array([[1.0, 2.0], [0.0, 1.0]] + [[1.0, 2.0]] * 13)
    labels = np.array([2, 1, 1, 0, 0, 0, 0, 0, 0, 2, 1, 2, 1, 1, 2])
    expected = skm.silhouette_samples(X, labels, metric=metric)
    np.testing.assert_allclose(silhouette_samples(X, labels, metric=metric), expected, atol=1e-12)
    T = torch.tensor(X)
    sums, q = _cluster_sums_torch(T, labels, 3, metric, 4)
    got = _coefficients_torch(sums, labels, _resolution_torch(q, labels, 3, T, metric)).numpy()
    np.testing.assert_allclose(got, expected, atol=1e-12)


def test_a_column_of_labels_is_read_as_labels(rng):
    """Integer labels of shape (n, 1), as scikit-learn reads them (they were refused as a multi-label matrix that
    must hold only 0 and 1; a new-user trial)."""
    X = rng.normal(size=(90, 4))
    labels = np.arange(90) % 3
    assert silhouette_score(X, labels[:, None]) == pytest.approx(skm.silhouette_score(X, labels), abs=1e-12)


def test_labels_of_mixed_kinds_are_refused_in_one_line(rng):
    """An object array mixing ints and strings (a pandas column, say): a TypeError that names the parameter, not
    numpy's "'<' not supported between instances of 'str' and 'int'"."""
    X = rng.normal(size=(6, 2))
    with pytest.raises(TypeError, match=r"^The 'labels' parameter of silhouette_score must hold labels of one kind "
                                        r"\(all numbers or all strings\)\. Got a mix of int, str instead\.$"):
        silhouette_score(X, np.array([1, "a", 2, "b", 1, "a"], dtype=object))


def test_a_subsample_with_one_cluster_is_named_as_the_subsample():
    # 100 rows, 2 clusters, sample_size=5: the draw held one cluster, and the error read "The 'labels' parameter ...
    # must define between 2 and n_samples - 1 = 4 clusters. Got 1 cluster instead." for labels the user gave with
    # 100 rows and 2 clusters. Now it says the sample drew them
    from isotropy import IsotropyValueError, silhouette_score

    X = np.random.default_rng(0).normal(size=(100, 3))
    labels = np.r_[np.zeros(98, int), [1, 1]]
    with pytest.raises(IsotropyValueError, match=r"^The 'sample_size' parameter of silhouette_score drew 5 of the 100 "
                                                 r"rows, which hold 1 cluster of 'labels'; .* sample_size - 1 = 4"):
        silhouette_score(X, labels, sample_size=5, random_state=0)


@pytest.mark.parametrize("seed", [1, 3, 4, 5])
def test_float32_coefficients_stay_within_minus_one_and_one(seed):
    # Tiny cosine distances inside one cluster, summed in float32 beside a block shift of a typical distance, gave
    # a mean distance a slightly below 0 and s = (b - a) / b above 1. a and b are clipped at 0.
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(size=(100, 8)) * 1e-3, rng.normal(size=(100, 8)) * 1e-3 + 1e-2,
                   rng.normal(size=(100, 8)) + 1e4]).astype(np.float32)
    labels = np.repeat([0, 1, 2], 100)
    s = silhouette_samples(X, labels, metric="cosine")
    assert s.max() <= 1.0 and s.min() >= -1.0
    # within the kernel's tolerance of the float64 coefficients (docs/api/cluster.md)
    assert np.abs(s - silhouette_samples(X.astype(np.float64), labels, metric="cosine")).max() < 1e-4


def test_cosine_rows_parallel_to_their_own_and_nearest_clusters_have_silhouette_0():
    # rows 4 and 12, (1.1, 1.1) and (2.1, 2.1), form a cluster and are parallel to row 11, (0.1, 0.1), alone in
    # the nearest cluster: a = b = 0 exactly, s = 0. Their unit rows differ by a rounding, and the exact pass read
    # those ~1e-32 distances as real: s = +-1 (float64 and float32 input alike)
    X = np.array([[1.1, 2.1], [-0.9, 1.1], [-0.9, -1.9], [0.1, -0.9], [1.1, 1.1], [2.1, 0.1], [1.1, -0.9], [-0.9, 1.1],
                  [1.1, 0.1], [-1.9, 0.1], [-1.9, -1.9], [0.1, 0.1], [2.1, 2.1], [-1.9, -0.9], [-0.9, 0.1]])
    labels = np.array([1, 5, 2, 5, 6, 5, 5, 1, 4, 5, 5, 7, 6, 0, 5])
    expected = skm.silhouette_samples(X, labels, metric="cosine")  # right here, to the rounding of 1 - cos
    for dtype in (np.float64, np.float32):
        s = silhouette_samples(X.astype(dtype), labels, metric="cosine")
        assert s[4] == 0.0 and s[12] == 0.0
        np.testing.assert_allclose(s, expected, rtol=0, atol=1e-6)
    torch = pytest.importorskip("torch")
    from isotropy.metrics.silhouette import _silhouette_torch  # the device kernel, checked on CPU

    for dtype in (torch.float64, torch.float32):
        s = _silhouette_torch(torch.tensor(X, dtype=dtype), np.unique(labels, return_inverse=True)[1], 8, "cosine",
                              None)
        assert float(s[4]) == 0.0 and float(s[12]) == 0.0
