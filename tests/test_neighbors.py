"""Exact k-nearest neighbours: against scikit-learn's brute-force NearestNeighbors and a full
numpy distance matrix (direct differences), for numpy and torch input."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.neighbors import NearestNeighbors

from isotropy._utils.validation import IsotropyValueError
from isotropy.metrics.neighbors import kneighbors


def _full_reference(X, metric):
    """All pairwise distances by direct differences in float64; diagonal +inf; stable sort (ties by index)."""
    R = np.asarray(X, dtype=np.float64)
    if metric == "cosine":
        R = R / np.linalg.norm(R, axis=1, keepdims=True)
    D = ((R[:, None, :] - R[None, :, :]) ** 2).sum(-1)
    D = D / 2 if metric == "cosine" else np.sqrt(D)
    np.fill_diagonal(D, np.inf)
    order = np.argsort(D, axis=1, kind="stable")
    return np.take_along_axis(D, order, axis=1), order


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
@pytest.mark.parametrize(("chunk_size", "k"), [(None, 15), (37, 15), (200, 5), (203, 5), (203, 1)])
def test_matches_sklearn_brute_float64(metric, chunk_size, k):
    # chunk sizes exercise one block, blocks narrower than the candidate count, and several
    # blocks with and without leftover columns in the grouped selection
    rng = np.random.default_rng(1)
    X = rng.standard_normal((600, 30)) + 3.0  # off-centre: the search centres internally
    dist, ind = kneighbors(X, n_neighbors=k, metric=metric, chunk_size=chunk_size)
    ref_d, ref_i = NearestNeighbors(n_neighbors=k, algorithm="brute", metric=metric).fit(X).kneighbors()
    assert dist.dtype == np.float64 and dist.shape == (600, k) and ind.shape == (600, k)
    np.testing.assert_allclose(dist, ref_d, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(ind, ref_i)  # continuous data: no ties


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
@pytest.mark.parametrize("chunk_size", [64, 203])
def test_float32_input_gives_exact_float64_distances(metric, chunk_size):
    rng = np.random.default_rng(2)
    X32 = (rng.standard_normal((500, 64)) + 10.0).astype(np.float32)  # large mean: hard for float32 GEMM
    dist, ind = kneighbors(X32, n_neighbors=10, metric=metric, chunk_size=chunk_size)
    ref_d, ref_i = _full_reference(X32, metric)
    np.testing.assert_allclose(dist, ref_d[:, :10], rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(ind, ref_i[:, :10])


def test_ties_broken_by_index_on_a_lattice():
    grid = np.array([(i, j) for i in range(6) for j in range(5)], dtype=float)
    dist, ind = kneighbors(grid, n_neighbors=8, chunk_size=17)
    ref_d, ref_i = _full_reference(grid, "euclidean")
    np.testing.assert_array_equal(dist, ref_d[:, :8])  # integer coordinates: exact
    np.testing.assert_array_equal(ind, ref_i[:, :8])


def test_all_other_points_and_duplicates():
    X = np.array([[0.0, 0.0], [0.0, 0.0], [3.0, 4.0], [6.0, 8.0]])
    dist, ind = kneighbors(X, n_neighbors=3)
    np.testing.assert_array_equal(ind, [[1, 2, 3], [0, 2, 3], [0, 1, 3], [2, 0, 1]])  # ties by index
    np.testing.assert_array_equal(dist, [[0, 5, 10], [0, 5, 10], [5, 5, 5], [5, 10, 10]])


def test_cosine_is_one_minus_cos_and_scale_invariant():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((200, 8))
    scaled = X * rng.uniform(0.1, 10.0, size=(200, 1))
    d1, i1 = kneighbors(X, n_neighbors=5, metric="cosine")
    d2, i2 = kneighbors(scaled, n_neighbors=5, metric="cosine")
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_allclose(d1, d2, rtol=1e-12)
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    cos = np.einsum("ij,ikj->ik", U, U[i1])
    np.testing.assert_allclose(d1, 1 - cos, rtol=0, atol=1e-14)


def test_torch_matches_numpy():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    X = rng.standard_normal((300, 20))
    for metric in ("euclidean", "cosine"):
        ref_d, ref_i = kneighbors(X, n_neighbors=12, metric=metric)
        for dtype in (torch.float64, torch.float32):
            T = torch.tensor(X, dtype=dtype, requires_grad=True)
            dist, ind = kneighbors(T, n_neighbors=12, metric=metric, chunk_size=50)
            assert isinstance(dist, torch.Tensor) and dist.device == T.device and dist.dtype == torch.float64
            np.testing.assert_array_equal(ind.numpy(), ref_i)
            tol = 1e-12 if dtype == torch.float64 else 1e-6
            np.testing.assert_allclose(dist.numpy(), ref_d, rtol=tol, atol=tol)


def test_huge_float32_values_fall_back_to_float64():
    rng = np.random.default_rng(6)
    X = rng.standard_normal((300, 8)) * 1e19  # squares overflow float32
    X32 = X.astype(np.float32)
    dist, ind = kneighbors(X32, n_neighbors=3)
    ref_d, ref_i = _full_reference(X32, "euclidean")  # float64: no overflow
    np.testing.assert_array_equal(ind, ref_i[:, :3])
    np.testing.assert_allclose(dist, ref_d[:, :3], rtol=1e-12)
    # squares overflow float64 too: the search works on X·2^-e and scales the distances back (exact)
    ref_d, ref_i = _full_reference(X, "euclidean")
    dist, ind = kneighbors(X * 1e141, n_neighbors=3)
    np.testing.assert_array_equal(ind, ref_i[:, :3])
    np.testing.assert_allclose(dist, ref_d[:, :3] * 1e141, rtol=1e-12)


def test_input_not_modified():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((50, 4)).astype(np.float32)
    before = X.copy()
    kneighbors(X, n_neighbors=3, metric="cosine")
    np.testing.assert_array_equal(X, before)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), shift=st.floats(-1e3, 1e3), k=st.integers(1, 9))
def test_translation_invariance(seed, shift, k):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((40, 5))
    d1, i1 = kneighbors(X, n_neighbors=k)
    d2, i2 = kneighbors(X + shift, n_neighbors=k)
    np.testing.assert_allclose(d1, d2, rtol=1e-9, atol=1e-9 * (1 + abs(shift)))
    np.testing.assert_array_equal(i1, i2)  # continuous data: no ties


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"n_neighbors": 0}, r"'n_neighbors' parameter of kneighbors must be an int in the range \[1, 9\] \(at most n_samples - 1 = 9 for 10 samples\)\. Got 0"),
    ({"n_neighbors": 10}, r"range \[1, 9\] \(at most n_samples - 1 = 9 for 10 samples\)\. Got 10 instead"),
    ({"n_neighbors": 3, "metric": "manhattan"}, r"'metric' parameter of kneighbors must be one of"),
    ({"n_neighbors": 3, "chunk_size": 0}, r"'chunk_size' parameter of kneighbors"),
])
def test_bad_arguments(kwargs, match):
    X = np.random.default_rng(0).standard_normal((10, 3))
    with pytest.raises(IsotropyValueError, match=match):
        kneighbors(X, **kwargs)


def test_bad_data():
    with pytest.raises(TypeError, match="'n_neighbors' parameter of kneighbors must be an int"):
        kneighbors(np.zeros((5, 2)), n_neighbors="2")
    with pytest.raises(IsotropyValueError, match="'n_neighbors' parameter of kneighbors must be an int.*Got 2.5"):
        kneighbors(np.zeros((5, 2)), n_neighbors=2.5)
    with pytest.raises(IsotropyValueError, match="2-d array"):
        kneighbors(np.zeros(5), n_neighbors=1)
    with pytest.raises(IsotropyValueError, match="finite"):
        kneighbors(np.array([[0.0, np.nan], [1.0, 2.0], [3.0, 1.0]]), n_neighbors=1)
    with pytest.raises(IsotropyValueError, match=r"no zero rows with metric='cosine'.*Got 1 zero row \(at index 0\) "
                                                 r"instead\.$"):
        kneighbors(np.array([[0.0, 0.0], [1.0, 2.0], [3.0, 1.0]]), n_neighbors=1, metric="cosine")
    with pytest.raises(IsotropyValueError, match=r"Got 2 zero rows \(first at index 1\) instead\.$"):
        kneighbors(np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 2.0], [0.0, 0.0]]), n_neighbors=1, metric="cosine")


@pytest.mark.parametrize("scale, dtype", [(1e20, "float32"), (1e-30, "float32"), (1e160, "float64"),
                                          (1e-200, "float64"), (1e300, "float64")], ids=lambda v: str(v))
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_kneighbors_at_any_scale_gives_the_unit_scale_neighbours(scale, dtype, metric, backend):
    # the torch path squared the data as given (0.4 % of the indices right at 1e20 in float32, inf or 0 distances
    # in float64); numpy's cosine path overflowed near 1e160 and saw "zero rows" near 1e-200
    import torch

    X = np.random.default_rng(0).normal(size=(150, 5)).astype(dtype)
    ref_d, ref_i = NearestNeighbors(n_neighbors=4, metric=metric, algorithm="brute").fit(X.astype(np.float64)) \
        .kneighbors(X.astype(np.float64))
    Y = (X.astype(np.float64) * scale).astype(dtype)
    d, i = kneighbors(torch.from_numpy(Y) if backend == "torch" else Y, n_neighbors=3, metric=metric)
    d, i = np.asarray(d, dtype=np.float64), np.asarray(i)
    assert np.array_equal(i, ref_i[:, 1:])
    expected = ref_d[:, 1:] * (scale if metric == "euclidean" else 1.0)
    np.testing.assert_allclose(d, expected, rtol=1e-6 if dtype == "float32" else 1e-12, atol=1e-15)


@pytest.mark.parametrize("chunk_size", [31, 10**6, 10**12])
def test_a_chunk_size_beyond_the_rows_is_the_whole_array(chunk_size):
    """Blocks are capped at the number of points: 10**6 asked for 3.64 TiB of buffers on 30 rows, 10**12 raised
    numpy's "Maximum allowed dimension exceeded" (an API audit)."""
    X = np.random.default_rng(0).normal(size=(30, 5))
    dist, ind = kneighbors(X, n_neighbors=2, chunk_size=chunk_size)
    reference = kneighbors(X, n_neighbors=2)
    np.testing.assert_array_equal(dist, reference[0])
    np.testing.assert_array_equal(ind, reference[1])

