"""Dask arrays as input (dask's local schedulers): every metric equals the in-memory function on the
materialised array, the k-NN and silhouette equal scikit-learn's brute force, the covariance
accumulator merges exactly, and bad input gets the in-memory one-line errors.

References: the in-memory functions of this package (themselves tested against scikit-learn,
``isoscore`` and scikit-dimension), ``sklearn.metrics.silhouette_score`` / ``silhouette_samples``
and ``sklearn.neighbors.NearestNeighbors(algorithm="brute")`` directly.
"""

from __future__ import annotations

import itertools
import re
import subprocess
import sys

import dask
import dask.array as da
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import isotropy
from isotropy import CovarianceAccumulator, IsotropyValueError

LABEL_FREE = ["isoscore", "isoscore_star", "participation_ratio", "cosine_similarity_mean", "partition_isotropy"]
NEIGHBOURS = {"twonn_dimension": {}, "mle_dimension": {"n_neighbors": 7},
              "local_mle_dimension": {"n_neighbors": 7}}
CLUSTER = [(name, metric) for name in ("silhouette_score", "silhouette_samples", "dunn_index")
           for metric in ("euclidean", "cosine")] + [("calinski_harabasz_score", None), ("davies_bouldin_score", None)]


@pytest.fixture(scope="module", autouse=True)
def synchronous_scheduler():
    with dask.config.set(scheduler="threads"):
        yield


@pytest.fixture(scope="module")
def blobs():
    """Four anisotropic blobs in 9-d (float64) with shuffled labels for a quarter of the rows."""
    rng = np.random.default_rng(1)
    labels = np.repeat(np.arange(4), 150)
    X = rng.normal(scale=3.0, size=(4, 9))[labels] + rng.normal(size=(600, 9)) * np.linspace(0.3, 2.0, 9)
    rng.shuffle(labels[:150])
    return X, labels


def _compute(value):
    return value.compute() if isinstance(value, da.Array) else value


@pytest.mark.parametrize("chunks", [(97, 9), (600, 9), (150, 4)])
@pytest.mark.parametrize("name", LABEL_FREE + list(NEIGHBOURS))
def test_label_free_metrics_equal_in_memory(blobs, name, chunks):
    X, _ = blobs
    function = getattr(isotropy, name)
    kwargs = NEIGHBOURS.get(name, {})
    got = _compute(function(da.from_array(X, chunks=chunks), **kwargs))
    np.testing.assert_allclose(got, function(X, **kwargs), rtol=1e-10, atol=1e-12)
    assert isinstance(got, float) or got.shape == (X.shape[0],)


@pytest.mark.parametrize(("name", "metric"), CLUSTER)
def test_cluster_metrics_equal_in_memory(blobs, name, metric):
    X, labels = blobs
    function = getattr(isotropy, name)
    kwargs = {} if metric is None else {"metric": metric}
    Xd = da.from_array(X, chunks=(113, 9))
    got = _compute(function(Xd, da.from_array(labels, chunks=200), **kwargs))
    np.testing.assert_allclose(got, function(X, labels, **kwargs), rtol=1e-10, atol=1e-12)


def test_silhouette_against_sklearn_with_small_tiles(blobs):
    from sklearn.metrics import silhouette_samples, silhouette_score

    X, labels = blobs
    Xd = da.from_array(X, chunks=(250, 9))
    got = isotropy.distributed.silhouette_samples(Xd, labels, chunk_size=64).compute()  # 10 x 10 tiles
    np.testing.assert_allclose(got, silhouette_samples(X, labels), rtol=1e-10, atol=1e-12)
    assert isotropy.silhouette_score(Xd, labels, metric="cosine") == pytest.approx(
        silhouette_score(X, labels, metric="cosine"), rel=1e-10)


def test_silhouette_sample_size_draws_sklearns_rows(blobs):
    from sklearn.metrics import silhouette_score

    X, labels = blobs
    Xd = da.from_array(X, chunks=(100, 9))
    got = isotropy.silhouette_score(Xd, labels, sample_size=200, random_state=7)
    assert got == pytest.approx(silhouette_score(X, labels, sample_size=200, random_state=7), rel=1e-10)
    assert got == pytest.approx(isotropy.silhouette_score(X, labels, sample_size=200, random_state=7), rel=1e-12)
    assert got != pytest.approx(isotropy.silhouette_score(Xd, labels, sample_size=200, random_state=8), rel=1e-6)


def test_silhouette_with_clusters_missing_from_blocks():
    """Rows sorted by cluster: most tiles see 1-2 of the 7 clusters (the per-tile relabelling)."""
    from sklearn.metrics import silhouette_samples

    rng = np.random.default_rng(3)
    labels = np.sort(rng.integers(0, 7, 300))
    X = rng.normal(size=(300, 4)) + labels[:, None]
    got = isotropy.silhouette_samples(da.from_array(X.astype(np.float32), chunks=(41, 4)), labels).compute()
    np.testing.assert_allclose(got, silhouette_samples(X, labels), atol=1e-5)
    got = isotropy.distributed.silhouette_samples(da.from_array(X, chunks=(41, 4)), labels, chunk_size=37)
    np.testing.assert_allclose(got.compute(), silhouette_samples(X, labels), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_silhouette_tiles_in_kernel_blocks_with_partial_last_blocks(monkeypatch, metric):
    """A tile runs the kernel on blocks of DIAGONAL_ROWS / _OFF_DIAGONAL_ROWS rows (here 13 and 29, so that
    every tile of 97 rows ends on a partial block), with clusters missing from blocks and duplicate rows."""
    from scipy.spatial.distance import cdist
    from sklearn.metrics import silhouette_samples

    import isotropy.distributed._clusters as tiles

    monkeypatch.setattr(tiles, "DIAGONAL_ROWS", 13)
    monkeypatch.setattr(tiles, "_OFF_DIAGONAL_ROWS", 29)
    rng = np.random.default_rng(5)
    labels = np.sort(rng.integers(0, 6, 400))
    X = rng.normal(size=(400, 5)) + labels[:, None]
    X[200:230] = X[170:200]  # duplicates across tiles (euclidean: at distance 0 exactly)
    got = isotropy.distributed.silhouette_samples(da.from_array(X, chunks=(97, 5)), labels, metric=metric,
                                                  chunk_size=97).compute()
    # distances by float64 differences (scikit-learn's own euclidean ones put duplicates ~1e-8 apart)
    expected = silhouette_samples(cdist(X, X, metric=metric), labels, metric="precomputed")
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_kneighbors_against_sklearn_brute_force(metric):
    from sklearn.neighbors import NearestNeighbors

    rng = np.random.default_rng(2)
    X = rng.normal(size=(700, 6))
    dist, ind = isotropy.distributed.kneighbors(da.from_array(X, chunks=(90, 6)), n_neighbors=5, metric=metric,
                                                chunk_size=64)
    dist, ind = dask.compute(dist, ind)
    ref_dist, ref_ind = NearestNeighbors(n_neighbors=5, algorithm="brute", metric=metric).fit(X).kneighbors()
    np.testing.assert_allclose(dist, ref_dist, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(ind, ref_ind)
    _same_dist, same_ind = isotropy.metrics.neighbors.kneighbors(da.from_array(X, chunks=(700, 6)), n_neighbors=5,
                                                        metric=metric)
    np.testing.assert_array_equal(same_ind.compute(), ind)  # the public function dispatches


def test_tiles_pick_the_loops_of_the_whole_search(monkeypatch):
    """Every tile asks for the loops of all n points (what the in-memory search runs), not of its own two blocks."""
    import isotropy._kernels.neighbors as kernels

    asked = []
    choose = kernels.compiled_kernels

    def recording(n_samples, n_features, n_neighbors=2):
        asked.append((n_samples, n_features, n_neighbors))
        return choose(n_samples, n_features, n_neighbors)

    monkeypatch.setattr(kernels, "compiled_kernels", recording)
    X = np.random.default_rng(3).normal(size=(259, 5)).astype(np.float32)
    dist, _ = isotropy.distributed.kneighbors(da.from_array(X, chunks=(80, 5)), n_neighbors=4, chunk_size=64)
    dist.compute()
    assert len(asked) == 15  # 4 blocks of 64 rows and one of 3: 5 diagonal tiles and 10 off-diagonal ones
    assert set(asked) == {(259, 5, 4)}  # also the last block's own search, which has 2 neighbours to give


def test_neighbour_tiles_take_8192_rows_by_default():
    """The neighbour searches tile by 8192 rows (fewer for wide data, as the silhouette's 4096): what a tile does per
    row beyond its products is a smaller share of a larger tile. 20,000 rows: 3 row blocks, 6 tiles (4096: 15)."""
    from isotropy.distributed._graph import DEFAULT_TILE_ROWS, NEIGHBOUR_TILE_ROWS, check_tile_rows

    assert check_tile_rows(None, "t", 384, default=NEIGHBOUR_TILE_ROWS) == NEIGHBOUR_TILE_ROWS == 8192
    assert check_tile_rows(None, "t", 768, default=NEIGHBOUR_TILE_ROWS) == 5461  # a block of 32 MiB in float64
    assert check_tile_rows(None, "t", 384) == DEFAULT_TILE_ROWS == 4096
    assert check_tile_rows(300, "t", 384, default=NEIGHBOUR_TILE_ROWS) == 300
    X = da.from_array(np.random.default_rng(0).normal(size=(20000, 4)), chunks=(1000, 4))

    def tiles(array):
        return sum(str(key[0] if isinstance(key, tuple) else key).startswith("_knn_tile-")
                   for key in array.__dask_graph__())

    assert tiles(isotropy.distributed.kneighbors(X, n_neighbors=3)[0]) == 6
    assert tiles(isotropy.distributed.kneighbors(X, n_neighbors=3, chunk_size=4096)[0]) == 15


def test_a_tile_runs_in_the_thread_dask_gives_it(monkeypatch):
    """Where BLAS runs on one thread (a dask worker started by its nanny), a k-NN tile starts no worker threads of
    its own: dask runs the tiles in parallel. The same search outside a tile does, and so does a tile where BLAS has
    several threads (dask's threaded scheduler, whose tiles cannot set the process's BLAS limits for themselves).
    The tile's neighbours are those of a brute-force search."""
    from scipy.spatial.distance import cdist
    from threadpoolctl import threadpool_limits

    from isotropy._kernels import silhouette
    from isotropy._kernels.neighbors import _prepare, exact_knn_cross
    from isotropy.distributed._neighbors import _knn_block, _knn_tile

    def no_threads(workers):
        raise AssertionError("worker threads started")

    monkeypatch.setattr(silhouette, "_cores", lambda: 4)  # as on a machine with several cores
    monkeypatch.setattr(silhouette, "_threads", no_threads)
    X = np.random.default_rng(5).normal(size=(9000, 6))
    n_p = 4500  # 9,000 points: more than one worker's worth (_ONE_WORKER) outside a tile
    parts = (_knn_block(X[:n_p], "euclidean", "t", 0), _knn_block(X[n_p:], "euclidean", "t", 0))
    with threadpool_limits(limits=1, user_api="blas"):
        (sq_p, ind_p), (_sq_q, ind_q) = _knn_tile(*parts, 0, n_p, 3, 9000, "t")
        assert not getattr(silhouette._CALLING_THREAD, "only", False)  # restored on the way out
        with pytest.raises(AssertionError, match="worker threads started"):
            exact_knn_cross(*_prepare(X, "euclidean", "t"), n_p, 3)
    D = cdist(X[:n_p], X[n_p:], "sqeuclidean")
    np.testing.assert_array_equal(ind_p, np.argsort(D, axis=1, kind="stable")[:, :3] + n_p)
    np.testing.assert_array_equal(ind_q, np.argsort(D.T, axis=1, kind="stable")[:, :3])
    np.testing.assert_allclose(sq_p, np.sort(D, axis=1)[:, :3], rtol=1e-12)
    with threadpool_limits(limits=2, user_api="blas"), pytest.raises(AssertionError, match="worker threads started"):
        _knn_tile(*parts, 0, n_p, 3, 9000, "t")


@pytest.mark.parametrize("jit", ["0", "1", "auto"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
@pytest.mark.parametrize("padded", [False, True], ids=["distinct", "padded"])
def test_tiles_give_the_in_memory_distances_bit_for_bit(monkeypatch, jit, dtype, metric, padded):
    """On either loops, the tiles' merged neighbours are the in-memory search's: the same indices, the same bits.

    Under ``auto`` the threshold is lowered so that the in-memory search of these 515 points runs the compiled
    loops while a tile of 256 (or a diagonal tile of the last 3 rows, which asks for 2 neighbours) alone would
    not: the tiles must follow the whole search, not their own size. ``padded``: every fourth row one padding
    row, which every tile and the in-memory search reach through their distinct points.
    """
    import isotropy._kernels.neighbors as kernels

    monkeypatch.setenv("ISOTROPY_JIT", jit)  # "1": numba, in the test extra
    monkeypatch.setattr(kernels, "_COMPILED_WORK", 4e5)  # auto compiles 515 points, k = 9, d = 12: 432,000
    rng = np.random.default_rng(4)
    X = (rng.normal(size=(515, 12)) @ rng.normal(size=(12, 12)) + 5.0).astype(dtype)
    X[7] = X[3]  # a duplicate: a tie at distance 0, broken by the smaller index on both paths
    if padded:
        X[::4] = X[1]
    want = isotropy.metrics.neighbors.kneighbors(X, n_neighbors=9, metric=metric)
    dist, ind = dask.compute(*isotropy.distributed.kneighbors(da.from_array(X, chunks=(150, 12)), n_neighbors=9,
                                                              metric=metric, chunk_size=128))
    np.testing.assert_array_equal(ind, want[1])
    np.testing.assert_array_equal(dist, want[0])


def test_float32_input_matches_in_memory_to_float32_rounding(blobs):
    X, labels = blobs
    X32 = X.astype(np.float32)
    Xd = da.from_array(X32, chunks=(128, 9))
    assert isotropy.isoscore(Xd) == pytest.approx(isotropy.isoscore(X32), rel=1e-12)
    assert isotropy.silhouette_score(Xd, labels) == pytest.approx(isotropy.silhouette_score(X32, labels), abs=1e-6)
    assert isotropy.twonn_dimension(Xd) == pytest.approx(isotropy.twonn_dimension(X32), rel=1e-9)


# ---------------------------------------------------------------------------------------------- accumulator
@settings(max_examples=25, deadline=None)
@given(cuts=st.lists(st.integers(1, 199), max_size=6, unique=True), shift=st.floats(-1e3, 1e3))
def test_merge_of_pieces_equals_one_stream(cuts, shift):
    X = np.random.default_rng(len(cuts)).normal(size=(200, 5)) * [1, 2, 3, 4, 5] + shift
    edges = [0, *sorted(cuts), 200]
    merged = CovarianceAccumulator()
    for a, b in itertools.pairwise(edges):
        merged.merge(CovarianceAccumulator().update(X[a:b]))
    np.testing.assert_allclose(merged.covariance(), np.cov(X, rowvar=False), rtol=1e-9, atol=1e-9)
    assert merged.n_samples_ == 200
    assert merged.isoscore() == pytest.approx(isotropy.isoscore(X), rel=1e-9)
    assert merged.cosine_similarity_mean() == pytest.approx(isotropy.cosine_similarity_mean(X), rel=1e-9, abs=1e-12)


def test_merge_edge_cases_and_reset():
    X = np.random.default_rng(0).normal(size=(50, 3))
    acc = CovarianceAccumulator().update(X[:20])
    other = CovarianceAccumulator().update(X[20:])
    before = other.covariance().copy()
    assert acc.merge(CovarianceAccumulator()) is acc and acc.n_samples_ == 20  # an empty one adds nothing
    acc.merge(other)
    np.testing.assert_array_equal(other.covariance(), before)  # other is left as it was
    np.testing.assert_allclose(CovarianceAccumulator().merge(acc).covariance(), np.cov(X, rowvar=False), rtol=1e-12)
    with pytest.raises(IsotropyValueError, match="must have 3 features, like this accumulator. Got 2 instead"):
        acc.merge(CovarianceAccumulator().update(X[:5, :2]))
    with pytest.raises(TypeError, match="must be a CovarianceAccumulator. Got ndarray instead"):
        acc.merge(X)
    assert acc.reset() is acc and (acc.n_samples_, acc.n_features_) == (0, None)
    acc.update(X[:, :2])  # a reset accumulator takes any width
    assert acc.n_features_ == 2


# ---------------------------------------------------------------------------------------------- errors
def test_bad_dask_input_gets_the_in_memory_messages(blobs):
    X, labels = blobs
    bad = X.copy()
    bad[321, 4] = np.nan
    with pytest.raises(IsotropyValueError, match=r"'X' parameter of isoscore must contain only finite values. "
                                                 r"Got nan at row 321, column 4 instead\."):
        isotropy.isoscore(da.from_array(bad, chunks=(100, 9)))
    with pytest.raises(IsotropyValueError, match="must be a 2-d array of shape"):
        isotropy.silhouette_score(da.from_array(X[:, 0], chunks=100), labels)
    with pytest.raises(IsotropyValueError, match="must have one entry per sample"):
        isotropy.silhouette_score(da.from_array(X, chunks=100), labels[:-1])
    with pytest.raises(IsotropyValueError, match="'metric' parameter of dunn_index must be one of"):
        isotropy.dunn_index(da.from_array(X, chunks=100), labels, metric="manhattan")
    with pytest.raises(TypeError, match="must be a real-valued array"):
        isotropy.isoscore(da.from_array(X.astype(complex), chunks=100))
    with pytest.raises(IsotropyValueError, match="must have at least 2 features"):
        isotropy.isoscore(da.from_array(X[:, :1], chunks=100))


@pytest.mark.parametrize("name", ["silhouette_samples", "silhouette_score", "calinski_harabasz_score",
                                  "davies_bouldin_score", "dunn_index"])
def test_unknown_chunk_sizes_blame_X_not_the_labels(blobs, name):
    """Rows selected by a dask mask have unknown chunk sizes (nan): the error names X and the cure, as
    isoscore's does, not the labels, which cannot be counted against nan samples."""
    X, labels = blobs
    keep = X[:, 0] > 0
    unknown = da.from_array(X, chunks=(100, -1))[da.from_array(keep, chunks=100)]
    assert np.isnan(unknown.shape[0])
    with pytest.raises(IsotropyValueError, match=rf"^The 'X' parameter of {name} must be a dask array with known chunk "
                                                 r"sizes\. Got .* instead \(call X\.compute_chunk_sizes\(\) first\)\.$"):
        getattr(isotropy, name)(unknown, labels[keep])


def test_dask_n_neighbors_past_the_rows_of_duplicated_data_is_the_in_memory_error():
    X = np.repeat(np.random.default_rng(0).normal(size=(10, 4)), 3, axis=0)  # 30 rows, 10 distinct
    with pytest.raises(IsotropyValueError) as in_memory:
        isotropy.mle_dimension(X, n_neighbors=30)
    with pytest.raises(IsotropyValueError) as on_dask:
        isotropy.mle_dimension(da.from_array(X, chunks=7), n_neighbors=30)
    assert str(on_dask.value) == str(in_memory.value)


def _with_duplicates(X):
    """X with 57 duplicate rows: rows repeated up to 3 times, across and within chunks, in shuffled order."""
    rng = np.random.default_rng(3)
    X = np.vstack([X, X[:40], X[100:108], X[100:108], X[550:551]])
    X = X[rng.permutation(X.shape[0])]
    return X, 57


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
@pytest.mark.parametrize(("name", "kwargs"), [("twonn_dimension", {}), ("twonn_dimension", {"method": "mle"}),
                                              ("mle_dimension", {"n_neighbors": 7, "averaging": "harmonic"}),
                                              ("local_mle_dimension", {"n_neighbors": 7})])
def test_dask_dimension_estimators_merge_duplicates_as_in_memory(blobs, name, kwargs, metric):
    X, n_dup = _with_duplicates(blobs[0])
    function = getattr(isotropy, name)
    with pytest.warns(UserWarning) as in_memory:
        want = function(X, metric=metric, **kwargs)
    with pytest.warns(UserWarning) as dask_path:
        got = _compute(function(da.from_array(X, chunks=(101, 9)), metric=metric, **kwargs))
    message = (f"{name}: X has {n_dup} duplicate rows (at {metric} distance 0 from another row); each distinct "
               f"point is counted once and neighbours are searched among the 600 distinct points.")
    assert [str(w.message) for w in dask_path] == [str(w.message) for w in in_memory] == [message]
    assert dask_path[0].filename == __file__  # attributed to the caller's line, as in memory
    np.testing.assert_allclose(got, want, rtol=1e-12)
    if name == "local_mle_dimension":  # one estimate per row; a duplicate has its point's
        assert got.shape == (X.shape[0],) and np.unique(got).size == 600


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_dask_neighbour_dimensions_is_one_search_with_the_estimators_values(blobs, metric, monkeypatch):
    """TwoNN, MLE and the local MLE of a dask array from one duplicates pass and one pass of tiles (they took one each,
    each estimator alone: the default table of `isotropy measure` searched twice), with the values of the estimators
    alone and of the in-memory search, duplicates merged and, under the cosine metric, a row parallel to another."""
    from isotropy.distributed import _neighbors
    from isotropy.metrics.dimension import neighbour_dimensions

    X, n_dup = _with_duplicates(blobs[0])
    if metric == "cosine":
        X = np.vstack([X, 3.0 * X[:1]])  # parallel to row 0: merged after the search, as in memory
    options = {"n_neighbors": 7, "averaging": "harmonic", "metric": metric, "discard_fraction": 0.2, "method": "mle"}
    searches, passes = [], []
    blocks, duplicates = _neighbors._neighbour_blocks, _neighbors.distinct_rows
    monkeypatch.setattr(_neighbors, "_neighbour_blocks", lambda *a, **k: searches.append(a[1]) or blocks(*a, **k))
    monkeypatch.setattr(_neighbors, "distinct_rows", lambda *a, **k: passes.append(k) or duplicates(*a, **k))
    with pytest.warns(UserWarning) as caught:
        got = neighbour_dimensions(da.from_array(X, chunks=(101, 9)), local_mle=True, **options)
    assert searches == [7] if metric == "euclidean" else searches[:2] == [7, 7]  # the second: after the merge
    assert len(passes) == 1  # one duplicates pass
    # the equal rows and the parallel one counted together, as in memory (dask warned of each apart)
    assert str(caught[0].message).startswith(f"neighbour_dimensions: X has {n_dup + (metric == 'cosine')} duplicate rows")
    assert all(str(w.message).startswith("neighbour_dimensions: ") for w in caught)
    assert got["local_mle_dimension"].chunks[0] == da.from_array(X, chunks=(101, 9)).chunks[0]
    with pytest.warns(UserWarning) as in_memory:
        want = neighbour_dimensions(X, local_mle=True, **options)
    assert [str(w.message) for w in caught] == [str(w.message) for w in in_memory]
    with pytest.warns(UserWarning):
        alone = {"twonn_dimension": isotropy.twonn_dimension(da.from_array(X, chunks=(101, 9)), metric=metric,
                                                             discard_fraction=0.2, method="mle"),
                 "mle_dimension": isotropy.mle_dimension(da.from_array(X, chunks=(101, 9)), n_neighbors=7,
                                                         metric=metric, averaging="harmonic")}
    for name in ("twonn_dimension", "mle_dimension"):
        assert got[name] == alone[name]
        assert got[name] == pytest.approx(want[name], rel=1e-12)
    np.testing.assert_allclose(got["local_mle_dimension"].compute(), want["local_mle_dimension"], rtol=1e-12)
    distinct = da.from_array(blobs[0][:300], chunks=(97, 9))
    only = neighbour_dimensions(distinct, mle=False, metric=metric)
    assert set(only) == {"twonn_dimension"}
    assert only["twonn_dimension"] == isotropy.twonn_dimension(distinct, metric=metric)
    assert searches[-2:] == [2, 2]  # TwoNN alone: its two neighbours


@pytest.mark.parametrize("name", ["mle_dimension", "neighbour_dimensions"])
def test_dask_mle_pooling_warnings_name_the_callers_line(blobs, name):
    """The pooled mean's warning pointed at isotropy/metrics/dimension.py on a dask array (one frame more than in
    memory), not at the line that called the estimator."""
    X = da.from_array(blobs[0], chunks=(97, 9))
    with pytest.warns(UserWarning, match="with n_neighbors=3 the mean of the local estimates") as caught:
        getattr(isotropy, name)(X, n_neighbors=3)
    assert {w.filename for w in caught} == {__file__}


def test_dask_neighbour_dimensions_refuses_as_in_memory(blobs):
    from isotropy.metrics.dimension import neighbour_dimensions

    X = blobs[0]
    for kwargs in ({"n_neighbors": 600}, {"averaging": "mode"}, {"method": "ols"}, {"discard_fraction": 1.0},
                   {"twonn": False, "mle": False}):
        with pytest.raises(IsotropyValueError) as in_memory:
            neighbour_dimensions(X, **kwargs)
        with pytest.raises(IsotropyValueError) as on_dask:
            neighbour_dimensions(da.from_array(X, chunks=(97, 9)), **kwargs)
        assert str(on_dask.value) == str(in_memory.value)


def test_dask_duplicate_merging_compares_rows_not_hashes(blobs, monkeypatch):
    """Every row's hash colliding (the worst case) still merges exactly the identical rows."""
    from isotropy.distributed import _duplicates

    X, n_dup = _with_duplicates(blobs[0])
    monkeypatch.setattr(_duplicates, "_row_hashes",
                        lambda block, metric, caller, *where, **options: np.zeros(len(block), np.uint64))
    with pytest.warns(UserWarning, match=f"X has {n_dup} duplicate rows"):
        got = isotropy.mle_dimension(da.from_array(X, chunks=(101, 9)), n_neighbors=7)
    with pytest.warns(UserWarning, match=f"X has {n_dup} duplicate rows"):
        assert got == pytest.approx(isotropy.mle_dimension(X, n_neighbors=7), rel=1e-12)
    distinct = blobs[0][:300]  # no duplicate: no warning, the plain search
    assert isotropy.twonn_dimension(da.from_array(distinct, chunks=(97, 9))) == pytest.approx(
        isotropy.twonn_dimension(distinct), rel=1e-12)


def test_dask_zero_row_under_cosine_is_named_by_its_row_in_the_whole_array():
    """The duplicates pass named a zero row by its row within its chunk (1500 for row 9500 of the third chunk), and
    counted those of that chunk only (one, for zero rows in two chunks)."""
    X = np.random.default_rng(0).standard_normal((12_000, 100)).astype(np.float32)
    X[9500] = 0
    X[11_000] = 0
    X[100] = 0
    with pytest.raises(IsotropyValueError) as in_memory:
        isotropy.twonn_dimension(X, metric="cosine")
    with pytest.raises(IsotropyValueError) as on_dask:
        isotropy.twonn_dimension(da.from_array(X, chunks=(4000, 100)), metric="cosine")
    assert "Got 3 zero rows (first at index 100)" in str(on_dask.value)
    assert str(on_dask.value) == str(in_memory.value)


def test_dask_row_hashes_hold_a_few_rows_at_a_time():
    """The hashes of a chunk took several float64 copies of it at once (a 64 MiB chunk of the shard reader: hundreds of
    MiB on a worker); a few rows at a time, the pass holds a few MiB whatever the chunk's size, with the same hashes."""
    import tracemalloc

    from isotropy.distributed import _duplicates

    block = np.random.default_rng(0).standard_normal((16_384, 256)).astype(np.float32)  # 16 MiB
    tracemalloc.start()
    try:
        hashes = _duplicates._row_hashes(block, "euclidean", "test")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < block.nbytes / 2, peak
    # the same hashes as one pass over the whole block (the formula: a multiply-add over the float64 bits, then mixed)
    bits = (block.astype(np.float64) + 0.0).view(np.uint64)
    multipliers = np.random.default_rng(0x150).integers(1, 2**63, size=256, dtype=np.uint64) | np.uint64(1)
    with np.errstate(over="ignore"):
        want = (bits * multipliers).sum(axis=1, dtype=np.uint64)
        want ^= want >> np.uint64(31)
        want *= np.uint64(0x9E3779B97F4A7C15)
        want ^= want >> np.uint64(29)
    np.testing.assert_array_equal(hashes, want)


def test_dask_too_few_distinct_points_is_the_in_memory_error(blobs):
    X = np.repeat(blobs[0][:5], 4, axis=0)
    message = r"must have more than n_neighbors=5 distinct points. Got 5 distinct points \(15 duplicate rows\)"
    with pytest.raises(IsotropyValueError, match=message):
        isotropy.mle_dimension(X, n_neighbors=5)
    with pytest.raises(IsotropyValueError, match=message):
        isotropy.mle_dimension(da.from_array(X, chunks=(6, 9)), n_neighbors=5)


def test_numpy_users_never_import_dask():
    code = ("import sys, numpy as np, isotropy; X = np.random.default_rng(0).normal(size=(50, 3)); "
            "isotropy.isoscore(X); isotropy.silhouette_score(X, np.arange(50) % 2); isotropy.twonn_dimension(X); "
            "print('dask' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_progress_bar_on_the_local_scheduler(blobs, monkeypatch):
    """On a terminal, dask's bar; into a file, lines (tests/test_measure_faults.py)."""
    import io

    from isotropy.distributed import _graph

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    screen = Terminal()
    monkeypatch.setattr(_graph, "_stderr", lambda: screen)
    X, _ = blobs
    with isotropy.distributed.show_progress():
        isotropy.isoscore(da.from_array(X, chunks=(100, 9)))
    assert "100% Completed" in screen.getvalue()


@pytest.mark.parametrize("name", [n for n in isotropy.distributed.__all__ if n != "show_progress"])
def test_the_distributed_functions_refuse_an_in_memory_array_in_one_line(name):
    """``isotropy.distributed.f(numpy array)`` was an AttributeError ('rechunk', 'chunks'); the metrics take both."""
    X, labels = np.random.default_rng(0).normal(size=(50, 4)), np.arange(50) % 2
    function = getattr(isotropy.distributed, name)
    args = (X, labels) if "labels" in function.__code__.co_varnames[:function.__code__.co_argcount] else (X,)
    with pytest.raises(IsotropyValueError, match=rf"^The 'X' parameter of isotropy\.distributed\.{name} must be a dask "
                                                 rf"array\. Got numpy\.ndarray instead \(the metrics of the isotropy "
                                                 rf"package take in-memory arrays and dask arrays alike\)\.$"):
        kwargs = {"n_neighbors": 3} if name == "kneighbors" else {}
        function(*args, **kwargs)


@pytest.mark.parametrize("method", ["linear", "mle"])
def test_dask_twonn_on_tied_neighbour_distances_names_the_ties(method):
    """The in-memory refusal (tests/test_dimension.py), on the dask path: binary data, 32 of 34 points r2/r1 = 1."""
    B = (np.random.default_rng(0).normal(size=(50, 6)) > 0).astype(float)
    with pytest.warns(UserWarning, match="16 duplicate rows"), pytest.raises(IsotropyValueError) as on_dask:
        isotropy.twonn_dimension(da.from_array(B, chunks=20), method=method)
    with pytest.warns(UserWarning, match="16 duplicate rows"), pytest.raises(IsotropyValueError) as in_memory:
        isotropy.twonn_dimension(B, method=method)
    assert str(on_dask.value) == str(in_memory.value)
    assert "Got 2 instead: 32 points have r2/r1 = 1" in str(on_dask.value)


def test_dask_isoscore_star_of_identical_rows_with_a_shrinkage_cov_equals_in_memory():
    """Identical rows on a dask array: with ζ > 0 and Σ_S, ζ·Σ_S is scored as in memory (its IsoScore, from float64
    eigenvalues here); with the identity or ζ = 0 refused as in memory."""
    S = np.cov(np.random.default_rng(6).normal(size=(40, 3)) * [1.0, 2.0, 0.1], rowvar=False)
    const = np.full((30, 3), 7.25)
    lam = np.linalg.eigvalsh(S)
    expected = (lam.sum() ** 2 / (lam ** 2).sum() - 1) / 2
    got = isotropy.isoscore_star(da.from_array(const, chunks=7), shrinkage_cov=S, zeta=0.5)
    assert got == pytest.approx(expected, rel=1e-12)
    assert got == pytest.approx(isotropy.isoscore_star(const, shrinkage_cov=S, zeta=0.5), rel=1e-12)
    for kwargs in ({"zeta": 0.5}, {"shrinkage_cov": S, "zeta": 0.0}):
        with pytest.raises(IsotropyValueError, match="^The 'X' parameter of isoscore_star must have non-zero variance"):
            isotropy.isoscore_star(da.from_array(const, chunks=7), **kwargs)


def test_dask_neighbour_dimensions_gives_nan_for_twonn_on_ties_as_in_memory():
    """A square lattice (r2/r1 = 1 at every point): TwoNN is NaN with the in-memory warning, the MLE the value of
    mle_dimension alone (tests/test_dimension.py compares it to scikit-dimension); TwoNN alone still raises."""
    from isotropy.metrics.dimension import neighbour_dimensions

    grid = np.array([[i, j] for i in range(12) for j in range(12)], dtype=float)
    with pytest.warns(UserWarning) as on_dask:
        got = neighbour_dimensions(da.from_array(grid, chunks=50), n_neighbors=10)
    with pytest.warns(UserWarning) as in_memory:
        want = neighbour_dimensions(grid, n_neighbors=10)
    assert np.isnan(got["twonn_dimension"]) and np.isnan(want["twonn_dimension"])
    assert got["mle_dimension"] == pytest.approx(isotropy.mle_dimension(grid, n_neighbors=10), rel=1e-12)
    assert [str(w.message) for w in on_dask] == [str(w.message) for w in in_memory]
    assert len(on_dask) == 1 and str(on_dask[0].message).startswith("twonn_dimension: undefined on these data")
    assert {w.filename for w in on_dask} == {__file__}
    with pytest.raises(IsotropyValueError, match="144 points have r2/r1 = 1"):
        neighbour_dimensions(da.from_array(grid, chunks=50), mle=False)


@pytest.mark.parametrize("scale", [2.0**-1000, 1e-300, 1.0, 1e200, 1e307], ids=lambda s: f"{s:.0e}")
def test_partition_isotropy_near_float64_limits_equals_in_memory(blobs, scale):
    # the Gram matrix of each chunk at a common power-of-two scale: at 1e307 the plain XᵀX overflowed
    # (LinAlgError in eigh), near the smallest normals it kept no digit
    X, _ = blobs
    Y = X * scale
    got = isotropy.partition_isotropy(da.from_array(Y, chunks=(97, 9)))
    np.testing.assert_allclose(got, isotropy.partition_isotropy(Y), rtol=1e-10, atol=1e-300)


def test_partition_isotropy_with_a_chunk_of_subnormal_numbers_only_equals_in_memory(blobs):
    X, _ = blobs
    Y = np.vstack([X[:100] * 1e-310, X])
    got = isotropy.partition_isotropy(da.from_array(Y, chunks=(100, 9)))
    np.testing.assert_allclose(got, isotropy.partition_isotropy(Y), rtol=1e-10)
    assert 0 < got < 1


def test_partition_isotropy_gram_of_chunks_at_different_scales_is_summed_at_the_largest():
    # the plain XᵀX of a chunk at 2**600 overflows; one at 2**-600 adds nothing a float64 sum at 2**600 could hold
    from isotropy.distributed._covariance import _add_gram, _gram

    rng = np.random.default_rng(3)
    blocks = [np.ldexp(rng.normal(size=(30, 5)), shift) for shift in (600, 0, 600, -600)]
    e, G, top = _add_gram(_add_gram(_gram(blocks[0]), _gram(blocks[1])), _add_gram(_gram(blocks[2]), _gram(blocks[3])))
    assert e == np.frexp(max(np.abs(blocks[0]).max(), np.abs(blocks[2]).max()))[1]
    assert top == max(np.abs(b).max() for b in blocks)
    big = np.vstack([np.ldexp(blocks[0], -e), np.ldexp(blocks[2], -e)])
    middle = np.ldexp(blocks[1], -e)  # its Gram at 2**-1200 underflows to 0, as in any float64 sum at that scale
    np.testing.assert_allclose(G, big.T @ big + middle.T @ middle, rtol=1e-13)
    empty = _gram(np.empty((0, 5)))
    assert empty[0] is None and _add_gram(empty, _gram(blocks[1]))[0] == _gram(blocks[1])[0]


@pytest.mark.parametrize("chunks", [((0, 300, 0, 300), (9,)), ((300, 0, 300), (9,))], ids=["first-empty", "middle-empty"])
def test_partition_isotropy_with_empty_chunks_equals_in_memory(blobs, chunks):
    X, _ = blobs
    got = isotropy.partition_isotropy(da.from_array(X, chunks=chunks))
    np.testing.assert_allclose(got, isotropy.partition_isotropy(X), rtol=1e-10)


def test_partition_isotropy_of_float32_subnormals_only_is_refused_as_in_memory(blobs):
    X, _ = blobs
    Y = (X * 1e-40).astype(np.float32)
    with pytest.raises(IsotropyValueError) as memory:
        isotropy.partition_isotropy(Y)
    with pytest.raises(IsotropyValueError) as chunked:
        isotropy.partition_isotropy(da.from_array(Y, chunks=(97, 9)))
    assert str(chunked.value) == str(memory.value) and "subnormal float32" in str(memory.value)


def test_partition_isotropy_whose_projections_overflow_is_refused_as_in_memory():
    Y = np.full((40, 2), 1.5e308) * np.r_[np.ones(20), -np.ones(20)][:, None]  # u = (1, 1)/√2 gives 2.1e308
    with pytest.raises(IsotropyValueError) as memory:
        isotropy.partition_isotropy(Y)
    with pytest.raises(IsotropyValueError) as chunked:
        isotropy.partition_isotropy(da.from_array(Y, chunks=(7, 2)))
    assert str(chunked.value) == str(memory.value) and "projections overflow" in str(memory.value)


@pytest.mark.parametrize("scale", [1e-9, 1e-30], ids=lambda s: f"{s:.0e}")
def test_dask_davies_bouldin_does_not_depend_on_the_scale(blobs, scale):
    X, labels = blobs
    got = isotropy.davies_bouldin_score(da.from_array(X * scale, chunks=(97, 9)), labels)
    np.testing.assert_allclose(got, isotropy.davies_bouldin_score(X, labels), rtol=1e-10)


def test_an_array_of_many_small_chunks_is_joined_before_a_streaming_metric():
    """A dask array the user built from many small pieces (500 chunks of 8 rows): one task per chunk per metric spent
    the scheduler's time on tasks, not rows (isoscore 12.7 s on 2 worker processes, 4.9 s joined). The streaming
    metrics join such chunks (rows and values unchanged, a NaN still named at its global row); chunks of a useful size
    are kept as the user made them."""
    from isotropy.distributed._graph import _SMALL_CHUNK_ELEMENTS, check_dask_X

    rng = np.random.default_rng(4)
    x = rng.normal(size=(4000, 96)) * np.linspace(0.5, 2.0, 96)
    small = da.concatenate([da.from_array(x[i:i + 8]) for i in range(0, 4000, 8)])
    assert small.numblocks == (500, 1)
    joined = check_dask_X(small, caller="isoscore")
    assert joined.numblocks == (1, 1)
    np.testing.assert_array_equal(joined.compute(), x)
    useful = da.from_array(np.zeros((8 * _SMALL_CHUNK_ELEMENTS // 96, 96)), chunks=(2 * _SMALL_CHUNK_ELEMENTS // 96, 96))
    assert check_dask_X(useful, caller="isoscore") is useful
    with dask.config.set(scheduler="threads"):
        for name in ("isoscore", "participation_ratio", "cosine_similarity_mean"):
            assert getattr(isotropy, name)(small) == pytest.approx(getattr(isotropy, name)(x), rel=1e-12), name
        bad = x.copy()
        bad[2531, 7] = np.nan
        with pytest.raises(IsotropyValueError, match=r"Got nan at row 2531, column 7 instead"):
            isotropy.isoscore(da.concatenate([da.from_array(bad[i:i + 8]) for i in range(0, 4000, 8)]))


def test_computes_from_several_threads_leave_the_fusion_setting_as_it_was():
    """The computes switch dask's task fusion off for their own graphs: with dask.config.set around each compute,
    threads setting and restoring it at once left it off for the whole process (2 runs in 3 of a review's script)."""
    import threading

    from isotropy.distributed import _graph

    X = da.from_array(np.random.default_rng(0).normal(size=(400, 8)), chunks=(100, 8))
    before = dask.config.get("optimization.fuse.active", None)
    results = []

    def work():
        for _ in range(15):
            results.append(_graph.compute(X.sum())[0])

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert dask.config.get("optimization.fuse.active", None) == before
    assert len(results) == 60 and np.allclose(results, X.sum().compute())


def test_dask_davies_bouldin_of_many_clusters_stays_small_and_exact():
    """The dask index took each cluster's worst partner from a k x k x d difference of the gathered centroids (1,500
    clusters in 200-d: 3.6 GB); now the in-memory kernel's k x k Gram a block of rows at a time. Equal to
    scikit-learn on the materialised array, with a peak far below that array."""
    import tracemalloc

    from sklearn.metrics import davies_bouldin_score as sk_davies_bouldin

    rng = np.random.default_rng(3)
    k, d = 1500, 200
    labels = np.repeat(np.arange(k), 3)
    X = rng.normal(size=(k, d))[labels] * 4 + rng.normal(size=(labels.size, d))
    tracemalloc.start()
    try:
        got = isotropy.davies_bouldin_score(da.from_array(X, chunks=(1000, d)), labels)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == pytest.approx(sk_davies_bouldin(X, labels), rel=1e-10)
    assert peak < 300 * 2**20, peak


@pytest.mark.parametrize("rows", [7, 20, 60])
def test_dunn_of_tight_clusters_side_by_side_far_from_the_centre_is_exact(rows):
    # the tiles took the pair of the smallest product distance, which cancellation made the wrong one (3.14e-6
    # against 2.48e-6 at every chunking, 100-row clusters): now as in memory, by exact distances
    from scipy.spatial.distance import cdist

    rng = np.random.default_rng(0)
    X = np.vstack([1e3 + 1e-6 * rng.normal(size=(20, 3)), 1e3 + 1e-5 + 1e-6 * rng.normal(size=(20, 3)),
                   -1e3 + rng.normal(size=(20, 3))])
    labels = np.repeat([0, 1, 2], 20)
    D, same = cdist(X, X), labels[:, None] == labels[None, :]
    expected = D[~same].min() / D[same].max()
    assert isotropy.dunn_index(da.from_array(X, chunks=(rows, 3)), labels) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("name", ["twonn_dimension", "mle_dimension"])
def test_distinct_rows_whose_distance_underflows_get_the_in_memory_refusal(name):
    # the dask estimators said "(rescale X)", which cannot help values spanning 300 orders of magnitude; now the
    # in-memory estimators' message, word for word
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(30, 3)) * 1e150, rng.normal(size=(30, 3)) * 1e-150])
    kwargs = {} if name == "twonn_dimension" else {"n_neighbors": 5}
    with pytest.raises(IsotropyValueError) as in_memory:
        getattr(isotropy, name)(X, **kwargs)
    with pytest.raises(IsotropyValueError) as on_dask:
        getattr(isotropy, name)(da.from_array(X, chunks=(20, 3)), **kwargs)
    assert str(on_dask.value) == str(in_memory.value)
    assert "squared differences underflow float64" in str(on_dask.value)


@pytest.mark.parametrize("seed", [1, 2, 5, 16])
def test_participation_ratio_of_a_rank_one_set_is_its_lower_bound_on_dask(seed):
    # the rounding put a rank-1 set at 0.9999999999999998 on some path, below the documented range [1, n_features]
    rng = np.random.default_rng(seed)
    X = np.outer(rng.normal(size=50), rng.normal(size=5))
    assert 1.0 <= isotropy.participation_ratio(da.from_array(X, chunks=(10, 5))) <= 1.0 + 1e-15


@pytest.mark.parametrize("name", ["calinski_harabasz_score", "davies_bouldin_score"])
@pytest.mark.parametrize("scale", [1.0, 2.0**600, 2.0**-600])
def test_centroid_passes_in_parts_of_a_chunk_equal_in_memory(blobs, monkeypatch, name, scale):
    """A chunk's float64 offsets are taken a few rows at a time (8 MiB), merged as chunks are: a 64 MiB float32 chunk
    held four float64 copies of itself at once and killed the workers of --memory-limit 512MiB (a user trial)."""
    import isotropy.distributed._clusters as clusters

    X, labels = blobs
    X = X * scale
    whole = _compute(getattr(isotropy, name)(da.from_array(X, chunks=(600, 9)), labels))
    monkeypatch.setattr(clusters, "_TERM_ELEMENTS", 9 * 7)  # 7 rows at a time, in chunks of 113 and 600 rows
    for chunks in ((113, 9), (600, 9)):
        got = _compute(getattr(isotropy, name)(da.from_array(X, chunks=chunks), labels))
        np.testing.assert_allclose(got, getattr(isotropy, name)(X, labels), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(got, whole, rtol=1e-12)


def test_measure_chunks_take_at_most_a_sixteenth_of_a_workers_memory():
    from isotropy.measure.distributed import _fit_chunks

    X = da.zeros((50_000, 384), dtype=np.float32, chunks=(43_690, 384))  # 64 MiB chunks, as shards coalesce
    fitted = _fit_chunks(X, {"memory_limit": 512 * 2**20})
    assert max(fitted.chunks[0]) * 384 * 4 <= 32 * 2**20 and sum(fitted.chunks[0]) == 50_000
    assert _fit_chunks(X, {"memory_limit": 2**30}) is X  # 64 MiB is a sixteenth of 1 GiB: as it is
    assert _fit_chunks(X, {"memory_limit": None}) is X  # no common limit (the threaded scheduler): as it is


def test_a_chunks_centroid_and_spread_terms_hold_a_few_mib_beyond_it():
    import tracemalloc

    import isotropy.distributed._clusters as clusters

    rng = np.random.default_rng(0)
    block = rng.normal(size=(20_000, 384)).astype(np.float32)  # 29 MiB
    ids = rng.integers(0, 8, size=20_000)
    reps = block[:8].astype(np.float64)
    for run in (lambda: clusters._centroid_terms(block, ids, 8, reps),
                lambda: clusters._spread_terms(block, ids, reps, np.zeros((8, 384)), 8, 0)):
        tracemalloc.start()
        run()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < 48 * 2**20, peak / 2**20  # before: 4 float64 copies of the chunk at once (234 MiB)


def _runs(calls):
    """``(done, total)`` calls cut where the total changes or done falls back: one run per computation reported."""
    runs = []
    for done, total in calls:
        if not runs or total != runs[-1][-1][1] or done < runs[-1][-1][0]:
            runs.append([])
        runs[-1].append((done, total))
    return runs


def test_a_metric_on_dask_reports_its_tasks_not_each_tiles_blocks():
    """A tile runs the in-memory kernel, whose blocks reported to the caller's callback (isotropy measure --progress)
    as if they were the whole metric's: 0 to 100 % once per tile, from the scheduler's threads (a user's log: hundreds
    of interleaved lines for one metric, two of them glued). The graph's tasks done are reported instead, from the
    thread that computes, each computation once to its end."""
    import threading

    from isotropy._utils.progress import reporting

    X = np.random.default_rng(3).normal(size=(1200, 6))
    calls, threads = [], set()

    def callback(done, total):
        calls.append((done, total))
        threads.add(threading.get_ident())

    with reporting(callback):
        value = isotropy.distributed.twonn_dimension(da.from_array(X, chunks=(100, 6)), chunk_size=200)
    assert value == pytest.approx(isotropy.twonn_dimension(X), rel=1e-12)
    assert threads == {threading.get_ident()}
    runs = _runs(calls)
    assert 1 <= len(runs) <= 3 and all(run[-1][0] == run[-1][1] for run in runs), runs


def test_dask_isoscore_star_reads_a_0d_tensor_or_array_zeta_as_in_memory():
    """``zeta`` of a ζ schedule (a 0-d torch tensor or numpy array) on a dask array gives the in-memory value at the
    float ζ (moved here from tests/test_isoscore.py, which the minimum-versions job runs without dask)."""
    import torch

    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 6)) * np.linspace(0.3, 2.0, 6)
    S = np.cov(rng.normal(size=(200, 6)) * np.linspace(2.0, 0.3, 6), rowvar=False)
    for zeta, plain in ((torch.linspace(0.0, 1.0, 5)[1], 0.25), (np.array(0.75), 0.75), (torch.tensor(1), 1.0)):
        expected = isotropy.isoscore_star(X, shrinkage_cov=S, zeta=plain)
        assert isotropy.isoscore_star(da.from_array(X, chunks=(15, 6)), shrinkage_cov=S, zeta=zeta) == pytest.approx(
            expected, rel=1e-12)
    for zeta in (torch.tensor(1.5), np.array(-0.5), torch.tensor([0.2]), torch.tensor(True), 1.5):  # refused as in memory
        with pytest.raises((IsotropyValueError, TypeError)) as in_memory:
            isotropy.isoscore_star(X, shrinkage_cov=S, zeta=zeta)
        with pytest.raises(type(in_memory.value), match=f"^{re.escape(str(in_memory.value))}$"):
            isotropy.isoscore_star(da.from_array(X), shrinkage_cov=S, zeta=zeta)


def test_an_in_memory_array_is_a_type_error_naming_the_in_memory_metrics():
    # "a wrong type gives a TypeError" (docs/refusals.md): isotropy.distributed's functions refused a numpy array with
    # a ValueError alone (a user trial); it is both now, as the library's other wrong types are
    import inspect

    from isotropy import distributed

    labels = np.array([0, 0, 0, 1, 1, 1])
    for name in sorted(set(distributed.__all__) - {"show_progress", "covariance_accumulator"}):
        with pytest.raises(TypeError, match=rf"^The 'X' parameter of isotropy\.distributed\.{name} must be a dask "
                                            rf"array\. Got numpy\.ndarray instead \(the metrics of the isotropy "
                                            rf"package take in-memory arrays and dask arrays alike\)\.$") as caught:
            function = getattr(distributed, name)
            args = (labels,) if "labels" in inspect.signature(function).parameters else ()
            function(np.ones((6, 3)), *args, **({"n_neighbors": 2} if name == "kneighbors" else {}))
        assert isinstance(caught.value, IsotropyValueError)
