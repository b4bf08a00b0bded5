"""Per-sample results and uniformity on a real ``dask.distributed.LocalCluster`` of 2 worker processes.

- ``silhouette_samples``, ``local_mle_dimension`` and ``kneighbors`` of a dask array come back as dask
  arrays chunked like X's rows (``X.chunks[0]``), equal to the in-memory functions, and the pass over
  all pairs runs when they are computed, not when they are called (``local_mle_dimension``'s
  duplicate-finding pass over the chunks runs at the call);
- ``uniformity`` of a dask array (tiles of row blocks, a log-sum-exp per tile merged by a tree
  reduction) equals the in-memory value.
"""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest
from distributed import Client, LocalCluster

import isotropy
from isotropy.metrics.neighbors import kneighbors

WORKER_MEMORY = 400 * 2**20  # bytes per worker process
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def client():
    # the scheduler's transition log (read by _tiles_run) keeps every transition of the module, not the last 1000
    with dask.config.set({"distributed.admin.low-level-log-length": 10**6}), LocalCluster(n_workers=2, processes=True, threads_per_worker=1, memory_limit=WORKER_MEMORY,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        yield client


@pytest.fixture(scope="module")
def data():
    """3000 rows in 8-d around three centres, in row chunks of 700 (the last one 200), and their labels."""
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 3, 3000)
    X = rng.normal(size=(3000, 8)) + labels[:, None] * 1.5
    return X, da.from_array(X, chunks=(700, -1)), labels


def _tiles_run(name):
    """How many tasks of the tile function ``name`` the scheduler has computed so far (a tile with one consumer
    is fused with its ``getitem``: ``silhouette_tile-getitem-...``)."""
    def count(dask_scheduler):
        return sum(1 for entry in dask_scheduler.transition_log if name in str(entry[0]) and entry[2] == "memory")

    return count


ROWS = (700, 700, 700, 700, 200)


def test_per_sample_results_are_chunked_like_x_rows_and_equal_in_memory(client, data):
    X, Xd, labels = data
    assert Xd.chunks[0] == ROWS
    s = isotropy.silhouette_samples(Xd, labels)
    local = isotropy.local_mle_dimension(Xd, n_neighbors=10)
    dist, ind = kneighbors(Xd, n_neighbors=5)
    assert s.chunks == (ROWS,) and local.chunks == (ROWS,)
    assert dist.chunks == (ROWS, (5,)) and ind.chunks == (ROWS, (5,))
    np.testing.assert_allclose(s.compute(), isotropy.silhouette_samples(X, labels), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(local.compute(), isotropy.local_mle_dimension(X, n_neighbors=10), rtol=1e-10)
    expected_dist, expected_ind = kneighbors(X, n_neighbors=5)
    np.testing.assert_allclose(dist.compute(), expected_dist, rtol=1e-10)
    np.testing.assert_array_equal(ind.compute(), expected_ind)
    # chunk by chunk: each chunk holds its own rows
    np.testing.assert_allclose(s.blocks[4].compute(), isotropy.silhouette_samples(X, labels)[2800:], rtol=1e-10,
                               atol=1e-12)


def test_per_sample_results_with_several_column_chunks_and_duplicates(client, data):
    """Column chunks do not count; duplicate rows (merged by local MLE, then spread back) keep X's row chunks."""
    X, _, labels = data
    X = X.copy()
    X[[5, 1400, 2999]] = X[0]  # duplicates across chunks
    Xd = da.from_array(X, chunks=(1000, 3))
    with pytest.warns(UserWarning, match="3 duplicate rows"):
        local = isotropy.local_mle_dimension(Xd, n_neighbors=10)
    assert local.chunks == ((1000, 1000, 1000),)
    with pytest.warns(UserWarning, match="3 duplicate rows"):
        expected = isotropy.local_mle_dimension(X, n_neighbors=10)
    np.testing.assert_allclose(local.compute(), expected, rtol=1e-10)
    s = isotropy.silhouette_samples(Xd, labels, chunk_size=256)  # tiles smaller than X's chunks
    assert s.chunks == ((1000, 1000, 1000),)
    np.testing.assert_allclose(s.compute(), isotropy.silhouette_samples(X, labels), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(("tile", "call"), [
    ("silhouette_tile", lambda Xd, labels: isotropy.silhouette_samples(Xd, labels, chunk_size=1000)),
    ("knn_tile", lambda Xd, labels: kneighbors(Xd, n_neighbors=5, chunk_size=1000)[0]),
    ("knn_tile", lambda Xd, labels: isotropy.distributed.local_mle_dimension(Xd, n_neighbors=10, chunk_size=1000)),
])
def test_the_pass_over_all_pairs_runs_when_the_result_is_computed(client, data, tile, call):
    _, _, labels = data
    Xd = da.random.default_rng(11).normal(size=(3000, 8), chunks=(700, 8))  # new keys: no tile computed before
    before = client.run_on_scheduler(_tiles_run(tile))
    result = call(Xd, labels)
    assert client.run_on_scheduler(_tiles_run(tile)) == before
    result.compute()
    assert client.run_on_scheduler(_tiles_run(tile)) >= before + 6  # 3 row blocks of 1000: 6 tiles


@pytest.mark.parametrize(("chunks", "kwargs"), [
    ((700, -1), {}),                                  # one tile row block (4096 rows per tile by default)
    ((700, -1), {"chunk_size": 256}),                 # 12 row blocks: 78 tiles, the last of 184 rows
    ((1000, 3), {"chunk_size": 1, "rows": 40}),       # one row per tile: diagonal tiles without pairs
    ((700, -1), {"t": 50.0, "chunk_size": 500}),
    ((10, -1), {"t": 1e5, "chunk_size": 16, "rows": 40}),  # every exp(-t d²) underflows: log-sum-exp
    ((700, -1), {"normalize": False, "t": 0.5, "chunk_size": 999}),
    ((700, -1), {"dtype": np.float32, "chunk_size": 1000}),
])
def test_uniformity_of_a_dask_array_equals_in_memory(client, data, chunks, kwargs):
    X, _, _ = data
    kwargs = dict(kwargs)
    X = X[:kwargs.pop("rows", X.shape[0])].astype(kwargs.pop("dtype", np.float64))
    Xd = da.from_array(X, chunks=chunks)
    options = {key: kwargs[key] for key in ("t", "normalize") if key in kwargs}
    expected = isotropy.uniformity(X, **options)
    got = isotropy.distributed.uniformity(Xd, **kwargs)
    assert isinstance(got, float)
    assert got == pytest.approx(expected, rel=1e-10)
    if kwargs.get("t") == 1e5:
        assert expected < -746  # below log of the smallest float64: each exp(-t d²) alone is 0.0


def test_uniformity_of_a_dask_array_refuses_what_in_memory_refuses(client, data):
    X, _, _ = data
    zero = X[:300].copy()
    zero[123] = 0.0
    with pytest.raises(isotropy.IsotropyValueError) as in_memory:
        isotropy.uniformity(zero)
    with pytest.raises(isotropy.IsotropyValueError) as on_dask:
        isotropy.distributed.uniformity(da.from_array(zero, chunks=(100, -1)))
    assert str(on_dask.value) == str(in_memory.value)
    nan = X[:300].copy()
    nan[250, 2] = np.nan
    with pytest.raises(isotropy.IsotropyValueError, match=r"finite values\. Got nan at row 250, column 2 instead"):
        isotropy.distributed.uniformity(da.from_array(nan, chunks=(100, -1)))
    with pytest.raises(isotropy.IsotropyValueError, match="'t' parameter of uniformity"):
        isotropy.distributed.uniformity(da.from_array(X, chunks=(700, -1)), t=0)
    with pytest.raises(isotropy.IsotropyValueError, match="at least 2 samples"):
        isotropy.distributed.uniformity(da.from_array(X[:1], chunks=(1, -1)))


def test_isotropy_uniformity_hands_a_dask_array_to_the_tiles(client, data):
    X, Xd, _ = data
    assert isotropy.uniformity(Xd, t=3) == pytest.approx(isotropy.uniformity(X, t=3), rel=1e-10)
