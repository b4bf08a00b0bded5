"""The scale-invariant metrics on dask arrays near float64's and float32's limits equal the in-memory values at unit scale.

Every value of ``X`` multiplied by ``2**515`` (about 1e155) or ``2**-665`` (about 1e-200) in float64, or by
``2**±66`` (about 1e20, 1e-20) in float32: the squared norms and distances of the data overflow or lose every
digit, and the dask silhouette read 0.0, Calinski-Harabasz NaN, Davies-Bouldin 0.0, Dunn inf, and the
neighbour search gave wrong neighbours or refused the data. The in-memory functions bring the data to unit
scale by a power of two first (exact, :mod:`isotropy._utils.magnitude`); the dask ones now do the same
with the exponent of the whole array, so they give the in-memory value at unit scale (reference: the
in-memory functions of this package on the unscaled array, themselves tested against scikit-learn and
scikit-dimension) to 1e-12, and ``kneighbors`` gives the true distances (the unit-scale ones times the
power of two: exact).
"""

from __future__ import annotations

import warnings

import dask
import dask.array as da
import numpy as np
import pytest
import torch
from distributed import Client, LocalCluster

import isotropy
from isotropy.metrics.dimension import neighbour_dimensions
from isotropy.metrics.neighbors import kneighbors

FLOAT64_SCALES = [515, -665]  # 2**515 ~ 1e155, 2**-665 ~ 1e-200
METRICS = [("silhouette_score", {}), ("silhouette_score", {"metric": "cosine"}), ("silhouette_samples", {}),
           ("calinski_harabasz_score", {}), ("davies_bouldin_score", {}), ("dunn_index", {}),
           ("dunn_index", {"metric": "cosine"}), ("twonn_dimension", {}), ("twonn_dimension", {"metric": "cosine"}),
           ("mle_dimension", {"n_neighbors": 7}), ("mle_dimension", {"n_neighbors": 7, "metric": "cosine"}),
           ("local_mle_dimension", {"n_neighbors": 7})]
CLUSTER = {"silhouette_score", "silhouette_samples", "calinski_harabasz_score", "davies_bouldin_score", "dunn_index"}


@pytest.fixture(scope="module", autouse=True)
def threaded_scheduler():
    with dask.config.set(scheduler="threads"):  # as tests/test_distributed.py runs these metrics
        yield


@pytest.fixture(scope="module")
def blobs():
    """Four blobs in 6-d (300 rows, float64) with shuffled labels for a quarter of the rows."""
    rng = np.random.default_rng(1)
    labels = np.repeat(np.arange(4), 75)
    X = rng.normal(scale=3.0, size=(4, 6))[labels] + rng.normal(size=(300, 6))
    rng.shuffle(labels[:75])
    return X, labels


def _value(name, X, labels, kwargs):
    args = (labels,) if name in CLUSTER else ()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # local MLE: points with an infinite estimate, the same at every scale
        value = getattr(isotropy, name)(X, *args, **kwargs)
    return value.compute() if isinstance(value, da.Array) else value


@pytest.mark.parametrize("exponent", FLOAT64_SCALES)
@pytest.mark.parametrize(("name", "kwargs"), METRICS, ids=[f"{n}-{k.get('metric', 'euclidean')}" for n, k in METRICS])
def test_dask_metric_at_extreme_float64_scale_is_the_unit_scale_value(blobs, name, kwargs, exponent):
    X, labels = blobs
    want = _value(name, X, labels, kwargs)
    got = _value(name, da.from_array(np.ldexp(X, exponent), chunks=(70, 6)), labels, kwargs)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


@pytest.mark.parametrize("exponent", [66, -66])  # 2**66 ~ 7e19: float32 squared norms overflow
@pytest.mark.parametrize("name", ["silhouette_score", "silhouette_samples"])
def test_dask_silhouette_at_extreme_float32_scale_is_the_unit_scale_value(blobs, name, exponent):
    X, labels = blobs
    X32 = X.astype(np.float32)
    want = _value(name, X32, labels, {})
    got = _value(name, da.from_array(np.ldexp(X32, exponent), chunks=(70, 6)), labels, {})
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


@pytest.mark.parametrize("exponent", [*FLOAT64_SCALES, 1015, -1000])
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_dask_kneighbors_at_extreme_scale_gives_the_true_distances(blobs, metric, exponent):
    X, _ = blobs
    want_dist, want_ind = kneighbors(X, n_neighbors=5, metric=metric)
    dist, ind = kneighbors(da.from_array(np.ldexp(X, exponent), chunks=(70, 6)), n_neighbors=5, metric=metric)
    dist, ind = dask.compute(dist, ind)
    np.testing.assert_array_equal(ind, want_ind)
    back = exponent if metric == "euclidean" else 0  # the cosine distance does not depend on the scale
    np.testing.assert_allclose(dist, np.ldexp(want_dist, back), rtol=1e-12, atol=0)


def test_dask_metrics_at_extreme_scale_on_a_local_cluster(blobs):
    """The exponent travels between the tasks of a ``dask.distributed`` cluster as on the local scheduler."""
    X, labels = blobs
    Xd = da.from_array(np.ldexp(X, 515), chunks=(70, 6))
    with LocalCluster(n_workers=1, processes=False, threads_per_worker=2, dashboard_address=None) as cluster, \
            Client(cluster):
        got = (isotropy.silhouette_score(Xd, labels), isotropy.calinski_harabasz_score(Xd, labels),
               isotropy.mle_dimension(Xd, n_neighbors=7))
        dist, ind = dask.compute(*kneighbors(Xd, n_neighbors=5))
    want = (isotropy.silhouette_score(X, labels), isotropy.calinski_harabasz_score(X, labels),
            isotropy.mle_dimension(X, n_neighbors=7))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    want_dist, want_ind = kneighbors(X, n_neighbors=5)
    np.testing.assert_array_equal(ind, want_ind)
    np.testing.assert_allclose(dist, np.ldexp(want_dist, 515), rtol=1e-12, atol=0)


@pytest.mark.parametrize("name", ["silhouette_score", "calinski_harabasz_score", "dunn_index", "twonn_dimension",
                                  "kneighbors"])
def test_dask_data_of_subnormal_numbers_only_are_refused_as_in_memory(blobs, name):
    X, labels = blobs
    X = np.ldexp(X, -1030)  # every |x| below float64's smallest normal number (2**-1022)
    if name == "kneighbors":
        def function(Z):
            return dask.compute(*kneighbors(Z, n_neighbors=2))
    else:
        def function(Z):
            return _value(name, Z, labels, {})
    with pytest.raises(isotropy.IsotropyValueError) as in_memory:
        function(X)
    with pytest.raises(isotropy.IsotropyValueError) as on_dask:
        function(da.from_array(X, chunks=(70, 6)))
    assert str(on_dask.value) == str(in_memory.value)
    assert "must have values of normal magnitude" in str(on_dask.value)


_SUBNORMAL_CASES = {  # the neighbour searches and the estimators on them, each metric
    "twonn_dimension": lambda Z, metric: isotropy.twonn_dimension(Z, metric=metric),
    "mle_dimension": lambda Z, metric: isotropy.mle_dimension(Z, metric=metric),
    "local_mle_dimension": lambda Z, metric: dask.compute(isotropy.local_mle_dimension(Z, n_neighbors=10,
                                                                                       metric=metric)),
    "neighbour_dimensions": lambda Z, metric: dask.compute(neighbour_dimensions(Z, local_mle=True, metric=metric)),
    "kneighbors": lambda Z, metric: dask.compute(*kneighbors(Z, n_neighbors=2, metric=metric)),
}


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
@pytest.mark.parametrize("name", list(_SUBNORMAL_CASES))
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_data_subnormal_in_their_own_dtype_are_refused_on_numpy_torch_and_dask(name, metric, dtype):
    """float16 values of about 1e-6 (all subnormal: float16's smallest normal is 6.1e-5) were refused in memory and
    measured on dask and as a tensor (TwoNN 5.64), both of which read float16 as float32, where they are normal
    numbers, and checked after. Judged in the dtype they came in, on all three, in the same words; float32 and float64
    (refused on all three already) stay so."""
    tiny = float(np.finfo(dtype).tiny)
    X = (np.random.default_rng(0).standard_normal((300, 6)) * tiny / 16).astype(dtype)
    assert 0 < np.abs(X).max() < tiny
    function = _SUBNORMAL_CASES[name]
    with pytest.raises(isotropy.IsotropyValueError) as in_memory:
        function(X, metric)
    top = float(np.abs(X).max())
    assert str(in_memory.value).startswith(
        f"The 'X' parameter of {name} must have values of normal magnitude. Got only subnormal "
        f"{np.dtype(dtype).name} numbers (largest |x| = {top:.3g} < {tiny:.3g}), ")
    for Z in (torch.from_numpy(X), da.from_array(X, chunks=100)):
        with pytest.raises(isotropy.IsotropyValueError) as other:
            function(Z, metric)
        assert str(other.value) == str(in_memory.value), type(Z)


def test_float16_data_of_normal_magnitude_are_measured_alike():
    """Not refused where the largest |x| is a normal float16 number (here 5 % of the entries are subnormal), and dask's
    kneighbors stays lazy until computed."""
    X = (np.random.default_rng(0).standard_normal((300, 6)) * 1e-3).astype(np.float16)
    for metric in ("euclidean", "cosine"):
        expected = isotropy.twonn_dimension(X, metric=metric)
        assert isotropy.twonn_dimension(da.from_array(X, chunks=100), metric=metric) == pytest.approx(expected,
                                                                                                      rel=1e-12)
        assert float(isotropy.twonn_dimension(torch.from_numpy(X), metric=metric)) == pytest.approx(expected, rel=1e-6)
    dist, _ = kneighbors(da.from_array(X / np.float16(64), chunks=100), n_neighbors=2)  # subnormal: refused ...
    with pytest.raises(isotropy.IsotropyValueError, match="only subnormal float16 numbers"):
        dist.compute()  # ... when computed


# Every public metric of the package face, called on one matrix Z (numpy, torch or dask) with its labels: the
# registry of the backend-consistency tests below. A lazy dask result is computed; an estimator is fitted.
_LABELS = np.repeat(np.arange(3), 20)
_TYPES = np.tile(np.arange(6), 10)
_TOKENS = [f"t{i % 7}" for i in range(60)]


def _flipped(Z):
    return Z.flip(0) if isinstance(Z, torch.Tensor) else Z[::-1]


_EVERY_METRIC = {
    "isoscore": lambda Z: isotropy.isoscore(Z),
    "isoscore_star": lambda Z: isotropy.isoscore_star(Z),
    "partition_isotropy": lambda Z: isotropy.partition_isotropy(Z),
    "cosine_similarity_mean": lambda Z: isotropy.cosine_similarity_mean(Z),
    "inter_type_cosine": lambda Z: isotropy.inter_type_cosine(Z, _TYPES, random_state=0),
    "intra_type_cosine": lambda Z: isotropy.intra_type_cosine(Z, _TYPES),
    "participation_ratio": lambda Z: isotropy.participation_ratio(Z),
    "CovarianceAccumulator": lambda Z: isotropy.CovarianceAccumulator().update(Z).isoscore(),
    "silhouette_samples": lambda Z: dask.compute(isotropy.silhouette_samples(Z, _LABELS))[0],
    "silhouette_score": lambda Z: isotropy.silhouette_score(Z, _LABELS),
    "silhouette_score(cosine)": lambda Z: isotropy.silhouette_score(Z, _LABELS, metric="cosine"),
    "silhouette_score(sample_size)": lambda Z: isotropy.silhouette_score(Z, _LABELS, sample_size=30, random_state=0),
    "calinski_harabasz_score": lambda Z: isotropy.calinski_harabasz_score(Z, _LABELS),
    "davies_bouldin_score": lambda Z: isotropy.davies_bouldin_score(Z, _LABELS),
    "dunn_index": lambda Z: isotropy.dunn_index(Z, _LABELS),
    "dunn_index(cosine)": lambda Z: isotropy.dunn_index(Z, _LABELS, metric="cosine"),
    "twonn_dimension": lambda Z: isotropy.twonn_dimension(Z),
    "mle_dimension": lambda Z: isotropy.mle_dimension(Z, n_neighbors=5),
    "local_mle_dimension": lambda Z: dask.compute(isotropy.local_mle_dimension(Z, n_neighbors=5))[0],
    "neighbour_dimensions": lambda Z: dask.compute(isotropy.neighbour_dimensions(Z, n_neighbors=5))[0],
    "kneighbors": lambda Z: dask.compute(*isotropy.kneighbors(Z, n_neighbors=3)),
    "TwoNN": lambda Z: isotropy.TwoNN().fit(Z).dimension_,
    "MLE": lambda Z: isotropy.MLE(n_neighbors=5).fit(Z).dimension_,
    "rogue_dimension_share": lambda Z: isotropy.rogue_dimension_share(Z),
    "effective_rank": lambda Z: isotropy.effective_rank(Z),
    "effective_rank(center)": lambda Z: isotropy.effective_rank(Z, center=True),
    "rankme": lambda Z: isotropy.rankme(Z, center=True),
    "alignment": lambda Z: isotropy.alignment(Z, _flipped(Z)),
    "uniformity": lambda Z: isotropy.uniformity(Z),
    "token_norms": lambda Z: isotropy.token_norms(Z, _TOKENS),
}
# The metrics of the rows' directions judge each row (a row made only of subnormal numbers of the dtype it is computed
# in is refused, by its index); in memory they read float16 rows of subnormal float16 numbers as float32 and measure
# them, and so do the other backends. Every other metric refuses, in memory, float16 data whose largest |x| is
# subnormal (isotropy._utils.validation.refuse_subnormal_as_given).
_ROWS_JUDGED = {"cosine_similarity_mean", "inter_type_cosine", "intra_type_cosine", "rogue_dimension_share",
                "alignment", "uniformity"}
# an error class and two warning classes; a function of a covariance matrix
_NOT_METRICS = {"IsotropyValueError", "IdentityShrinkageWarning", "SpanBoundWarning", "isoscore_from_covariance"}


def test_the_backend_registry_holds_every_public_metric():
    names = {name.split("(")[0] for name in _EVERY_METRIC}
    assert names == set(isotropy.__all__) - _NOT_METRICS


def _as_backend(X, backend):
    if backend == "torch":
        return torch.from_numpy(X.copy())
    if backend == "dask":
        return da.from_array(X, chunks=(20, X.shape[1]))
    return X


def _float(value) -> float:
    return float(value.detach()) if isinstance(value, torch.Tensor) else float(value)


def _subnormal_float16(seed=0, shape=(60, 8)):
    """Distinct values from 1e-6 to 5e-5, four in five positive (the rows share a direction: a rogue dimension share
    that is not NaN): all subnormal float16 numbers (the smallest normal is 6.1e-5), normal ones in float32."""
    rng = np.random.default_rng(seed)
    X = (rng.uniform(1e-6, 5e-5, shape) * rng.choice([-1.0, 1.0], shape, p=[0.2, 0.8])).astype(np.float16)
    assert 0 < np.abs(X).max() < np.finfo(np.float16).tiny
    return X


@pytest.mark.parametrize("backend", ["torch", "dask"])
@pytest.mark.parametrize("name", list(_EVERY_METRIC))
def test_float16_data_subnormal_in_float16_are_refused_on_every_backend_as_in_memory(name, backend):
    """float16 data whose largest |x| is subnormal were refused in memory by every metric that judges the whole array,
    and measured on dask by the covariance family (IsoScore, IsoScore*, I(W), PR), the cluster metrics, the spectral
    ranks and token_norms, and as tensors by isoscore_star, partition_isotropy, token_norms and
    CovarianceAccumulator.update (all read float16 as float32, where these values are normal numbers); the
    scikit-learn estimators TwoNN and MLE measured them on numpy too, where twonn_dimension and mle_dimension refused
    them. Now every backend refuses them in the in-memory words; the metrics that judge rows measure them alike."""
    function = _EVERY_METRIC[name]
    X = _subnormal_float16()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (isoscore_star without a shrinkage sample)
        if name in _ROWS_JUDGED:
            expected = _float(function(X))
            assert np.isfinite(expected)
            # (torch computes in float32: to 1e-5)
            assert _float(function(_as_backend(X, backend))) == pytest.approx(expected, rel=1e-5)
            return
        with pytest.raises(isotropy.IsotropyValueError) as in_memory:
            function(X)
        top = float(np.abs(X).max())
        assert f"must have values of normal magnitude. Got only subnormal float16 numbers (largest |x| = {top:.3g} < " \
               f"6.1e-05)" in str(in_memory.value)
        with pytest.raises(isotropy.IsotropyValueError) as other:
            function(_as_backend(X, backend))
    assert str(other.value) == str(in_memory.value)


@pytest.mark.parametrize("name", ["istar_penalty", "IStarLoss"])
def test_the_istar_penalty_refuses_float16_data_subnormal_in_float16_as_isoscore_star(name):
    """The I-STAR penalty (isoscore_star of a float16 batch, read as float32) was a value where numpy's isoscore_star
    refused the same values."""
    from isotropy.torch import IStarLoss, istar_penalty

    X = _subnormal_float16()
    with pytest.raises(isotropy.IsotropyValueError) as in_memory:
        isotropy.isoscore_star(X, zeta=0.0)
    with pytest.raises(isotropy.IsotropyValueError) as penalty:
        if name == "istar_penalty":
            istar_penalty(torch.from_numpy(X), shrinkage_cov=None, zeta=0.0)
        else:
            IStarLoss(zeta=0.0)(torch.from_numpy(X))
    assert str(penalty.value) == str(in_memory.value).replace("'X' parameter of isoscore_star", f"'H' parameter of {name}")


def _reference(name, X):
    """Independent float64 references (scikit-learn; numpy formulas) of the float16 values ``X``, exact in float64."""
    from sklearn import metrics

    X = X.astype(np.float64)
    if name == "silhouette_score":
        return metrics.silhouette_score(X, _LABELS)
    if name == "calinski_harabasz_score":
        return metrics.calinski_harabasz_score(X, _LABELS)
    if name == "davies_bouldin_score":
        return metrics.davies_bouldin_score(X, _LABELS)
    if name == "participation_ratio":
        lam = np.linalg.eigvalsh(np.cov(X, rowvar=False))
        return lam.sum() ** 2 / (lam ** 2).sum()
    s = np.linalg.svd(X - X.mean(axis=0) if name != "effective_rank" else X, compute_uv=False)
    p = s / s.sum() + (1e-7 if name == "rankme" else 0.0)
    return float(np.exp(-np.sum(p[p > 0] * np.log(p[p > 0]))))


@pytest.mark.parametrize("backend", ["numpy", "torch", "dask"])
@pytest.mark.parametrize("name", ["silhouette_score", "calinski_harabasz_score", "davies_bouldin_score",
                                  "participation_ratio", "effective_rank", "rankme"])
def test_float16_data_of_normal_magnitude_keep_their_values_on_every_backend(name, backend):
    """Not refused where the largest |x| is a normal float16 number, also when a whole row chunk of the dask array
    (rows 0 to 19) is made of subnormal float16 numbers: the values of scikit-learn's and numpy's float64 formulas
    on the same numbers (computed in float32: to 1e-5)."""
    X = np.random.default_rng(2).normal(size=(60, 8)).astype(np.float16)
    X[:20] = _subnormal_float16(seed=3, shape=(20, 8))
    function = _EVERY_METRIC[name]
    got = float(function(_as_backend(X, backend)))
    assert got == pytest.approx(_reference(name, X), rel=1e-5)



def _flat(value) -> np.ndarray:
    """Every number of a metric's value (a float, a tensor, an array, a tuple, a dict of them), float64, in order."""
    if isinstance(value, dict):
        return np.concatenate([_flat(value[key]) for key in sorted(value) if key not in ("top", "special")] +
                              [_flat([ratio for _, ratio in value.get("top", [])])])
    if isinstance(value, (tuple, list)):
        return np.concatenate([_flat(v) for v in value]) if value else np.empty(0)
    if isinstance(value, torch.Tensor):
        value = value.detach().numpy()
    return np.ravel(np.asarray(value, dtype=np.float64))


@pytest.mark.parametrize("backend", ["torch", "dask"])
@pytest.mark.parametrize("name", list(_EVERY_METRIC))
def test_float16_data_of_normal_magnitude_are_measured_alike_by_every_metric_on_every_backend(name, backend):
    """The same float16 data (rows 0 to 19, a whole dask chunk, made of subnormal float16 numbers; the largest |x| a
    normal one) are measured, not refused, by every metric on every backend, to the in-memory value (numpy reads
    float16 as float32, as torch and dask do: to 1e-5; kneighbors' indices exactly)."""
    X = np.random.default_rng(2).normal(loc=0.5, size=(60, 8)).astype(np.float16)  # (a shared direction: a rogue share)
    X[:20] = _subnormal_float16(seed=3, shape=(20, 8))
    function = _EVERY_METRIC[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (isoscore_star without a shrinkage sample)
        expected, got = _flat(function(X)), _flat(function(_as_backend(X, backend)))
    assert np.isfinite(expected).all()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)

def _counted_blocks(n_blocks, rows, alive):
    """A dask array of ``n_blocks`` row blocks made by tasks, ``alive = [live now, most live at once]``."""
    import weakref

    from dask import delayed

    def make(i):
        block = np.random.default_rng(i).normal(size=(rows, 6))
        alive[0] += 1
        alive[1] = max(alive[1], alive[0])
        weakref.finalize(block, lambda: alive.__setitem__(0, alive[0] - 1))
        return block

    return da.concatenate([da.from_delayed(delayed(make, pure=True)(i), shape=(rows, 6), dtype=float)
                           for i in range(n_blocks)])


@pytest.mark.parametrize("name", ["calinski_harabasz_score", "davies_bouldin_score", "hashes"])
def test_the_first_pass_streams_the_blocks(name):
    """The passes that stream (cluster sums; the duplicate-row hashes of TwoNN and MLE) hold one block at a time.

    The unit scale's exponent needs every block's maximum: a pass whose tasks took it would hold every block
    until the last one was read (12 of 12 here, and the whole array on out-of-core data). The blocks are of a
    useful size: smaller ones are joined first (check_dask_X), up to a bounded chunk of _STREAM_ELEMENTS."""
    from isotropy.distributed._duplicates import distinct_rows
    from isotropy.distributed._graph import _SMALL_CHUNK_ELEMENTS, check_dask_X

    alive = [0, 0]
    X = _counted_blocks(12, _SMALL_CHUNK_ELEMENTS // 6 + 1, alive)
    labels = np.random.default_rng(0).integers(0, 3, X.shape[0])
    with dask.config.set(scheduler="synchronous"):
        if name == "hashes":
            distinct_rows(check_dask_X(X, caller="twonn_dimension", min_samples=3), n_neighbors=2, metric="cosine",
                          caller="twonn_dimension")
        else:
            getattr(isotropy, name)(X, labels)
    assert alive[1] == 1


@pytest.mark.parametrize("exponent", [*FLOAT64_SCALES, 0])
def test_dask_cosine_duplicates_at_extreme_scale_are_found_as_in_memory(blobs, exponent):
    """Rows in the same direction (a row and twice it) are one point for the cosine metric at any scale."""
    X = np.vstack([blobs[0], 2.0 * blobs[0][:20], 0.5 * blobs[0][20:25]])
    with pytest.warns(UserWarning, match="25 duplicate rows"):
        expected = isotropy.twonn_dimension(X, metric="cosine")
    with pytest.warns(UserWarning, match="25 duplicate rows"):
        got = isotropy.twonn_dimension(da.from_array(np.ldexp(X, exponent), chunks=70), metric="cosine")
    assert got == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("name, kwargs", [("twonn_dimension", {}), ("mle_dimension", {"n_neighbors": 5})])
def test_rows_apart_below_float64_squares_are_refused_on_dask_as_in_memory(name, kwargs):
    """Near 2**900, two rows of 2**-140 one ulp apart: the searches bring the largest |x| to 2**40
    (:func:`isotropy._utils.magnitude.neighbour_target`), where the two rows stay normal numbers and distinct, but
    their squared distance (near 2**-2100) is not a float64. Both paths refuse them in the same words. (At unit
    scale their entries were subnormal and the rows equal: both paths merged them as duplicates.)"""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3)) * 2.0**900
    X[1] = rng.normal(size=3) * 2.0**-140
    X[2] = X[1]
    X[2, 1] = np.nextafter(X[2, 1], 1.0)
    message = "distinct rows at a nonzero float64 distance from each other .* Got 2 distinct row"
    with pytest.raises(isotropy.IsotropyValueError, match=message):
        getattr(isotropy, name)(X, **kwargs)
    with pytest.raises(isotropy.IsotropyValueError, match=message):
        getattr(isotropy, name)(da.from_array(X, chunks=10), **kwargs)


@pytest.mark.parametrize("offset", [1e8, 1e12])
def test_dask_cluster_indices_lose_nothing_to_an_offset(blobs, offset):
    # the chunks' centroid sums lost the clusters' spread to the offset (Calinski-Harabasz off by 3e-5 at 1e10);
    # reference: scikit-learn on the data less their first row, a subtraction that is exact here (Sterbenz)
    from sklearn.metrics import calinski_harabasz_score, davies_bouldin_score

    X, labels = blobs
    X = X + offset
    Xd = da.from_array(X, chunks=(70, X.shape[1]))
    with dask.config.set(scheduler="synchronous"):
        assert isotropy.calinski_harabasz_score(Xd, labels) == pytest.approx(
            calinski_harabasz_score(X - X[0], labels), rel=1e-13)
        assert isotropy.davies_bouldin_score(Xd, labels) == pytest.approx(
            davies_bouldin_score(X - X[0], labels), rel=1e-13)
        repeated = da.from_array(np.tile([[0.1, 0.7, 1 / 3]], (9, 1)), chunks=(4, 3))  # 12.0 for the 1.0 of W = 0
        assert isotropy.calinski_harabasz_score(repeated, [0, 0, 0, 1, 1, 1, 2, 2, 2]) == 1.0


def test_streamed_isoscore_of_rows_a_few_ulps_apart_is_measured_and_identical_rows_refused():
    # streamed, the rows are gone: rows a few ulps apart were refused below the floor of the rounded mean; identical
    # rows now sum to an exact 0 (their shift is their own row), so the rows that differ are measured, as in memory
    X = 1e8 + 1e-7 * np.random.default_rng(0).normal(size=(200, 4))
    expected = isotropy.isoscore(X - X[0])
    assert isotropy.isoscore(X) == pytest.approx(expected, rel=1e-12)
    with dask.config.set(scheduler="synchronous"):
        assert isotropy.isoscore(da.from_array(X, chunks=(50, 4))) == pytest.approx(expected, rel=1e-10)
        assert isotropy.participation_ratio(da.from_array(X, chunks=(50, 4))) == pytest.approx(
            isotropy.participation_ratio(X - X[0]), rel=1e-10)
        with pytest.raises(ValueError, match=r"^The 'X' parameter of isoscore must have non-zero variance\. Got 200 "
                                             r"\(numerically\) identical samples instead, whose covariance is zero"):
            isotropy.isoscore(da.from_array(np.tile(X[:1], (200, 1)), chunks=(50, 4)))
