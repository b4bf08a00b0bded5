"""Finite data at extreme scales (issue 11, item 4), and I(W) in the rank's space (item 9).

The scale-invariant metrics must give at x1e77, x1e-160, x1e200 and x1e300 the value they give at
x1 (they gave NaN, 0.0 or -1/(n-1) before); subnormal data are refused with a message that says
so; I(W) of a 5 x 10,000 matrix takes milliseconds and equals the definition on XᵀX.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.special import logsumexp

import isotropy as iso
from isotropy import IsotropyValueError

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

LABEL_FREE = {
    "isoscore": iso.isoscore,
    "participation_ratio": iso.participation_ratio,
    "cosine_similarity_mean": iso.cosine_similarity_mean,
    "twonn_dimension": iso.twonn_dimension,
    "mle_dimension": lambda X: iso.mle_dimension(X, n_neighbors=10),
}
LABELLED = {
    "silhouette_score": iso.silhouette_score,
    "calinski_harabasz_score": iso.calinski_harabasz_score,
    "davies_bouldin_score": iso.davies_bouldin_score,
    "dunn_index": iso.dunn_index,
}
SCALES = [1e77, 1e-160, 1e200, 1e300]


@pytest.fixture(scope="module")
def cloud():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(90, 5)) * [1.0, 2.0, 0.5, 3.0, 1.5] + rng.normal(size=5)
    return X, np.arange(90) % 3


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("name", list(LABEL_FREE) + list(LABELLED))
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_scale_invariant_metrics_keep_their_value(cloud, name, scale, backend):
    X, labels = cloud
    f = LABEL_FREE.get(name) or (lambda Z, f=LABELLED[name]: f(Z, labels))
    reference = f(X)
    data = X * scale if backend == "numpy" else torch.tensor(X) * scale
    value = float(f(data))
    assert math.isfinite(value)
    assert value == pytest.approx(reference, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("scale", [1e30, 1e-30])
@pytest.mark.parametrize("name", ["isoscore", "participation_ratio", "cosine_similarity_mean"])
def test_float32_tensors_at_extreme_scales(cloud, name, scale):
    X, _ = cloud
    X32 = torch.tensor(X, dtype=torch.float32)
    value = LABEL_FREE[name](X32 * scale)
    assert value.dtype == torch.float32 and torch.isfinite(value)
    assert float(value) == pytest.approx(float(LABEL_FREE[name](X32)), rel=1e-4, abs=1e-6)


def test_rescaled_torch_values_keep_their_gradient(cloud):
    X, _ = cloud
    T = (torch.tensor(X) * 1e200).requires_grad_(True)
    iso.isoscore(T).backward()
    U = torch.tensor(X).requires_grad_(True)
    iso.isoscore(U).backward()
    # d score / d(sX) = (1/s) d score / dX: the gradient of the rescaled path is the exact chain rule
    np.testing.assert_allclose(T.grad.numpy() * 1e200, U.grad.numpy(), rtol=1e-9, atol=1e-14)


def test_isoscore_star_at_extreme_scales_tends_to_its_limits(cloud):
    X, _ = cloud
    assert iso.isoscore_star(X * 1e200) == pytest.approx(iso.isoscore(X), rel=1e-12)  # identity negligible
    assert iso.isoscore_star(X * 1e-160) == pytest.approx(1.0, abs=1e-12)  # the data negligible
    # a common factor of the data covariance (4**110) and of Σ_S: same score, with both rescaled
    S = np.diag([1.0, 2.0, 3.0, 4.0, 5.0])
    assert iso.isoscore_star(X * 2.0**110, shrinkage_cov=S * 2.0**220, zeta=0.3) == pytest.approx(
        iso.isoscore_star(X, shrinkage_cov=S, zeta=0.3), rel=1e-12)
    T = torch.tensor(X) * 2.0**110
    assert float(iso.isoscore_star(T, shrinkage_cov=torch.tensor(S) * 2.0**220, zeta=0.3)) == pytest.approx(
        iso.isoscore_star(X, shrinkage_cov=S, zeta=0.3), rel=1e-12)


def test_cosine_of_rows_of_wildly_different_norms(cloud):
    X, _ = cloud
    rows = X[:6].copy()
    mixed = rows * np.array([1e300, 1e-300, 1e150, 1e-150, 1.0, 1e-200])[:, None]  # per-row scales
    assert iso.cosine_similarity_mean(mixed) == pytest.approx(iso.cosine_similarity_mean(rows), rel=1e-12)
    assert float(iso.cosine_similarity_mean(torch.tensor(mixed))) == pytest.approx(
        iso.cosine_similarity_mean(rows), rel=1e-12)


@pytest.mark.parametrize("name", ["isoscore", "participation_ratio", "twonn_dimension"])
def test_subnormal_data_are_called_subnormal(cloud, name):
    X, _ = cloud
    with pytest.raises(IsotropyValueError, match=r"subnormal float64 numbers \(largest \|x\| = .*\)") as info:
        LABEL_FREE[name](X * 1e-315)
    assert "identical" not in str(info.value) and "\n" not in str(info.value)


def test_subnormal_rows_in_the_cosine_are_called_subnormal(cloud):
    X, _ = cloud
    Y = X.copy()
    Y[4] *= 1e-318
    with pytest.raises(IsotropyValueError, match=r"1 row\(s\) \(first at index 4\) made only of subnormal numbers"):
        iso.cosine_similarity_mean(Y)
    with pytest.raises(IsotropyValueError, match="all-zero row"):
        iso.cosine_similarity_mean(np.vstack([X, np.zeros(5)]))


# ------------------------------------------------------------------------------ I(W)
def _partition_reference(X):
    """I(W) from the definition: eigenvectors of XᵀX (d x d, numpy's eig), both signs, scipy's logsumexp."""
    _, U = np.linalg.eig(X.T @ X)
    U = np.real(U) / np.linalg.norm(np.real(U), axis=0)
    log_z = logsumexp(X @ np.hstack([U, -U]), axis=0)
    return math.exp(log_z.min() - log_z.max())


@pytest.mark.parametrize("n, d", [(3, 7), (5, 12), (9, 10), (2, 40)])
def test_partition_isotropy_in_the_rank_space_equals_the_definition(n, d):
    X = np.random.default_rng(n * d).normal(size=(n, d)) * 0.7 + 0.1
    expected = _partition_reference(X)
    assert iso.partition_isotropy(X) == pytest.approx(expected, rel=1e-9)
    assert float(iso.partition_isotropy(torch.tensor(X))) == pytest.approx(expected, rel=1e-9)


def test_partition_isotropy_of_5_by_10000_decomposes_the_5_by_5_gram(monkeypatch):
    X = np.random.default_rng(0).normal(size=(5, 10_000)) * 0.01
    shapes, eigh = [], np.linalg.eigh

    def recording(A, *args, **kwargs):  # which matrix is decomposed (a timed assert would read the CPU's speed)
        shapes.append(np.shape(A))
        return eigh(A, *args, **kwargs)

    monkeypatch.setattr(np.linalg, "eigh", recording)
    value = iso.partition_isotropy(X)
    monkeypatch.undo()
    assert shapes == [(5, 5)]  # the 10,000 x 10,000 eigendecomposition of XᵀX took > 300 s
    # directions orthogonal to every row give Z = n; the five others come from the 5 x 5 Gram matrix
    lam, W = np.linalg.eigh(X @ X.T)
    P = W * np.sqrt(lam)
    log_z = np.append(logsumexp(np.hstack([P, -P]), axis=0), math.log(5))
    assert value == pytest.approx(math.exp(log_z.min() - log_z.max()), rel=1e-12)


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_partition_isotropy_at_extreme_scales():
    X = np.vstack([np.eye(3), -np.eye(3)])
    for scale in (1e-160, 1e-300, 1.0):
        assert iso.partition_isotropy(X * scale) == pytest.approx(1.0, abs=1e-12)  # symmetric: Z(u) = Z(-u)
    assert iso.partition_isotropy((X + [1.0, 0, 0]) * 1e200) == 0.0  # exp(-2e200) underflows to 0
    with pytest.raises(IsotropyValueError, match=r"projections overflow; I\(W\) depends on the scale of X"):
        iso.partition_isotropy(np.array([[1.5e308, 1.5e308], [-1.5e308, 1.4e308]]))


@pytest.mark.parametrize("scale", SCALES)
def test_covariance_accumulator_at_extreme_scales(cloud, scale):
    X, _ = cloud
    reference = iso.CovarianceAccumulator().update(X)
    acc = iso.CovarianceAccumulator().update(X[:40] * scale).update(torch.tensor(X[40:70]) * scale)
    acc.merge(iso.CovarianceAccumulator().update(X[70:] * scale))
    for name in ("isoscore", "participation_ratio", "cosine_similarity_mean"):
        assert getattr(acc, name)() == pytest.approx(getattr(reference, name)(), rel=1e-9), name
    # IsoScore* with the identity is not scale-invariant: the exact value of the scaled data
    assert acc.isoscore_star() == pytest.approx(iso.isoscore_star(X * scale), rel=1e-9)


def test_covariance_accumulator_mixes_scales_and_refuses_what_overflows(cloud):
    X, _ = cloud
    acc = iso.CovarianceAccumulator().update(X[:45] * 1e-200).update(X[45:] * 1e200)
    both = np.vstack([X[:45] * 1e-200, X[45:] * 1e200])  # the small rows are points at the origin, to 1e-400
    assert acc.isoscore() == pytest.approx(iso.isoscore(both), rel=1e-9)
    assert acc.isoscore() == pytest.approx(iso.isoscore(np.vstack([np.zeros((45, 5)), X[45:]])), rel=1e-9)
    assert acc.cosine_similarity_mean() == pytest.approx(iso.cosine_similarity_mean(X), rel=1e-9)  # directions only
    with pytest.raises(IsotropyValueError, match=r"covariance of data at scale 2\*\*\d+ overflows float64"):
        acc.covariance()
    np.testing.assert_allclose(acc.mean(), np.vstack([X[:45] * 1e-200, X[45:] * 1e200]).mean(axis=0), rtol=1e-12)


def _stable_neighbours(X, k):
    """Distances and indices of the k nearest other rows by scipy's float64 ``cdist``, ties by the smaller index."""
    from scipy.spatial.distance import cdist

    D = cdist(X.astype(np.float64), X.astype(np.float64))
    np.fill_diagonal(D, np.inf)
    ind = np.argsort(D, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(D, ind, axis=1), ind


@pytest.mark.parametrize("dtype, big, small", [(np.float64, 1e150, 1e-10), (np.float32, 1e20, 1e-20)])
def test_neighbours_of_small_rows_beside_huge_ones(dtype, big, small):
    """Rows near ``small`` beside rows near ``big``: the searches brought the largest |x| to unit scale, where the
    small rows' squared differences (float64, near 1e-320) or the small rows themselves (float32, near 1e-40) were
    subnormal numbers of a few bits: wrong neighbours for many rows and distances off by percents (a user trial).
    They now bring it to 2**40 (:func:`isotropy._utils.magnitude.neighbour_target`): the neighbours are those
    of scipy's float64 ``cdist``, ties by index, on numpy, torch and dask, and TwoNN that of scikit-dimension."""
    import dask.array as da
    import skdim

    from isotropy.metrics.neighbors import kneighbors

    rng = np.random.default_rng(3)
    X = rng.standard_normal((600, 5))
    X[:300] *= big
    X[300:] *= small
    X = X.astype(dtype)
    want_d, want_i = _stable_neighbours(X, 5)
    dist, ind = kneighbors(X, n_neighbors=5)
    np.testing.assert_array_equal(ind, want_i)
    np.testing.assert_allclose(dist, want_d, rtol=1e-14)
    on_dask = [a.compute() for a in kneighbors(da.from_array(X, chunks=(200, -1)), n_neighbors=5)]
    on_torch = kneighbors(torch.from_numpy(X), n_neighbors=5)
    for got_d, got_i in (on_dask, [t.numpy() for t in on_torch]):
        np.testing.assert_array_equal(got_d, dist)
        np.testing.assert_array_equal(got_i, ind)
    expected = skdim.id.TwoNN().fit(X.astype(np.float64)).dimension_
    assert iso.twonn_dimension(X) == pytest.approx(expected, rel=1e-12)
    assert iso.twonn_dimension(da.from_array(X, chunks=(200, -1))) == iso.twonn_dimension(X)
    on_tensor = iso.twonn_dimension(torch.from_numpy(X))  # in the tensor's dtype
    assert float(on_tensor) == pytest.approx(expected, rel=1e-6 if dtype == np.float32 else 1e-12)


def _kneighbors_everywhere(X, n_neighbors, chunk_size):
    """kneighbors of X as a numpy array, a tensor and a dask array (tiles of ``chunk_size`` rows), computed."""
    import dask.array as da

    from isotropy.metrics.neighbors import kneighbors

    yield lambda: kneighbors(X, n_neighbors=n_neighbors)
    yield lambda: [t.numpy() for t in kneighbors(torch.from_numpy(X), n_neighbors=n_neighbors)]
    for size in (chunk_size, X.shape[0]):  # several tiles, and one
        yield lambda size=size: [a.compute() for a in kneighbors(da.from_array(X, chunks=(10, -1)),
                                                                 n_neighbors=n_neighbors, chunk_size=size)]


UNDERFLOWED = ("The 'X' parameter of kneighbors must have its distinct rows at a nonzero float64 distance from each "
               "other (identical rows are neighbours at distance 0). Got {} distinct row(s) at distance 0 from another "
               "row instead: their squared differences underflow float64 (X's values span too many orders of "
               "magnitude).")


@pytest.mark.parametrize("big, small", [(1e100, 1e-100), (1.0, 1e-170)])
def test_kneighbors_refuses_distinct_rows_it_cannot_tell_apart(big, small):
    """Rows near 1e-100 beside rows near 1e100 (outside the safe range: brought to the search's scale), or near
    1e-170 beside rows near 1 (inside it: used as they are): the small rows' squared differences lie below float64's
    range, and kneighbors returned distance 0 between distinct rows, while TwoNN and MLE refuse them. It now refuses
    them in their words, on numpy, torch and dask: each of the 20 small rows has another one at distance 0."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    X[:20] *= big
    X[20:] *= small
    from scipy.spatial.distance import cdist

    true = cdist(X[20:] / small, X[20:] / small) * small  # the small rows' distances, each a normal float64 number
    assert np.all(true + np.eye(20) > 0) and len(np.unique(X, axis=0)) == 40
    for search in _kneighbors_everywhere(X, 3, chunk_size=15):
        with pytest.raises(IsotropyValueError) as caught:
            search()
        said = str(caught.value)
        # a dask tile counts its own rows: "at least" where it holds only some of them
        assert said in (UNDERFLOWED.format(20), *(UNDERFLOWED.format(f"at least {c}") for c in range(1, 21))), said
    with pytest.raises(IsotropyValueError, match=r"nonzero float64 distance .* Got 20 distinct row\(s\) at distance 0"):
        iso.twonn_dimension(X)  # the same rows, the same words


def test_kneighbors_refuses_distinct_rows_made_equal_at_its_scale_and_keeps_equal_rows_at_zero():
    """Beside rows near 1e150, rows of 1e-300 and 2e-300 become the same zero row at the search's scale (2**40 for the
    largest |x|): distinct as given, they are refused; equal rows (0.0 and -0.0 compare equal) stay neighbours at
    distance 0, as scipy's cdist gives them."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((30, 3)) * 1e150
    X[15] = [-0.0, 0.0, 1e-300]
    X[16] = [0.0, 0.0, 1e-300]
    want_d, _ = _stable_neighbours(X, 1)
    for search in _kneighbors_everywhere(X, 1, chunk_size=7):
        dist, ind = search()
        np.testing.assert_allclose(dist, want_d, rtol=1e-14)
        assert dist[15, 0] == dist[16, 0] == 0.0 and ind[15, 0] == 16 and ind[16, 0] == 15
    X[0] = [1e-300, 0.0, 0.0]
    X[29] = [2e-300, 0.0, 0.0]
    for search in _kneighbors_everywhere(X, 1, chunk_size=7):  # 0 and 29, 15 and 16: each has a distinct row at 0
        with pytest.raises(IsotropyValueError, match=r"nonzero float64 distance .* Got (at least )?\d distinct row"):
            search()


def test_float16_arrays_are_searched_in_float32_as_tensors_and_dask_arrays_are():
    """A float16 array was rescaled in float16 (whose safe range is 2**8): above 256 its small entries became subnormal
    float16 numbers or zero, distinct rows were merged, and numpy's neighbours and TwoNN differed from those of the
    same values as a tensor or a dask array, which are read as float32 (a review). Now all three are read as float32."""
    import dask.array as da

    from isotropy.metrics.neighbors import kneighbors

    X = np.array([[1000, 0, 0], [0, 0, 0], [0, 2**-24, 0], [0, 0, 2**-23], [1, 1, 1]], dtype=np.float16)
    want_d, want_i = _stable_neighbours(X, 1)  # float64 cdist of the float16 values
    results = [kneighbors(X, n_neighbors=1), [t.numpy() for t in kneighbors(torch.from_numpy(X), n_neighbors=1)],
               [a.compute() for a in kneighbors(da.from_array(X, chunks=(2, -1)), n_neighbors=1)]]
    for dist, ind in results:
        np.testing.assert_array_equal(ind, want_i)
        np.testing.assert_allclose(dist, want_d, rtol=1e-15)
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(300, 5)) * 1e-2
    Y[0, 0] = 1000
    Y = Y.astype(np.float16)
    expected = iso.twonn_dimension(Y.astype(np.float32))
    assert iso.twonn_dimension(Y) == expected
    assert iso.twonn_dimension(da.from_array(Y, chunks=(100, -1))) == expected
    assert float(iso.twonn_dimension(torch.from_numpy(Y))) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("scale", [1e200, 1e-200, 1e-160])
def test_the_mle_estimator_rescales_as_mle_dimension(scale):
    """MLE.fit passed its X to the search unscaled: near 1e200 it was refused as too large, near 1e-200 as rows at
    distance 0, and near 1e-160 its value was another (a review). It now brings X to the searches' scale first."""
    from isotropy.metrics.estimators import MLE

    X = np.random.default_rng(2).normal(size=(300, 5)) * scale
    assert MLE(n_neighbors=10).fit(X).dimension_ == pytest.approx(iso.mle_dimension(X, n_neighbors=10), rel=1e-13)
