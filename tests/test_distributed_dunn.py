"""The dask Dunn index's memory: a tile's working set is bounded whatever the width and height of its blocks.

Its float64 operands were made per block in a task of their own and held between tasks (two float64 copies of
every block), and a tile of two such blocks held four: 3,000 x 4,096 float32 rows killed workers of 256 MiB (a user
trial; KilledWorker) on which the silhouette's tiles ran. A tile now makes its operands from the blocks as stored,
a piece of rows at a time (``_DUNN_PIECE_BYTES``).

References: the pairs and distances of scipy's ``cdist`` on the float64 rows (brute force), the tile without
pieces (bit for bit), and the in-memory :func:`isotropy.dunn_index`.
"""

from __future__ import annotations

import tracemalloc

import dask.array as da
import numpy as np
import pytest
from scipy.spatial.distance import cdist

import isotropy
from isotropy.distributed._clusters import _dunn_piece_rows, _dunn_tile

BUDGET = 2**20  # bytes of a piece pair in the tests: 5 rows of 2,048 features


def _brute_force(P, Q, ids_p, ids_q, start_p, start_q, metric):
    """(d, i, j) of the closest pair in different clusters and (d, i, j) of the farthest in one, from cdist on the
    float64 rows (squared euclidean, or 1 - cos), a pair of a row with itself excluded."""
    P, Q = P.astype(np.float64), Q.astype(np.float64)
    D = cdist(P, Q, "sqeuclidean" if metric == "euclidean" else "cosine")
    same = ids_p[:, None] == ids_q[None, :]
    rows_p, rows_q = start_p + np.arange(len(P)), start_q + np.arange(len(Q))
    pair = same & (rows_p[:, None] != rows_q[None, :])
    i, j = np.unravel_index(np.argmin(np.where(same, np.inf, D)), D.shape)
    k, m = np.unravel_index(np.argmax(np.where(pair, D, -np.inf)), D.shape)
    return (D[i, j], rows_p[i], rows_q[j]), (D[k, m], rows_p[k], rows_q[m])


def _peak(call):
    call()  # once before: first-call allocations (imports, caches) are not the tile's
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
@pytest.mark.parametrize("diagonal", [True, False])
def test_a_tile_of_wide_blocks_stays_within_its_piece_budget_with_the_same_pairs(metric, diagonal):
    rng = np.random.default_rng(4)
    n, d = 240, 2048  # each block 1.9 MiB of float32; its float64 operands (U and W) 7.5 MiB
    X = rng.normal(size=(2 * n, d)).astype(np.float32) + rng.integers(0, 3, 2 * n)[:, None].astype(np.float32)
    ids = rng.integers(0, 3, 2 * n)
    mean = X.astype(np.float64).mean(axis=0) if metric == "euclidean" else np.zeros(d)
    P, ids_p = X[:n], ids[:n]
    Q, ids_q, start_q = (None, ids_p, 0) if diagonal else (X[n:], ids[n:], n)
    assert 1 < _dunn_piece_rows(d, BUDGET) < n // 8  # many pieces

    def tile(budget):
        return lambda: _dunn_tile(P, Q, ids_p, ids_q, 0, start_q, metric, mean, 0, budget)

    pieced, peak = _peak(tile(BUDGET))
    whole, whole_peak = _peak(tile(2**62))
    assert peak <= BUDGET, (peak, whole_peak)
    assert whole_peak > 8 * BUDGET  # the blocks' operands at once: what the pieces avoid
    assert pieced == whole  # the same pairs and distances, bit for bit
    (near, i, j), (far, k, m) = pieced
    (ref_near, ri, rj), (ref_far, rk, rm) = _brute_force(P, P if diagonal else Q, ids_p, ids_q, 0, start_q, metric)
    assert {(i, j), (j, i)} & {(ri, rj), (rj, ri)}
    assert {(k, m), (m, k)} & {(rk, rm), (rm, rk)}
    assert near == pytest.approx(ref_near, rel=1e-12)
    assert -far == pytest.approx(ref_far, rel=1e-12)


@pytest.mark.slow
def test_wide_rows_on_workers_of_256_mib_equal_the_in_memory_index():
    """The user trial's shape on workers of 256 MiB (the rows made on the workers, not sent in the graph): it killed
    them (each worker held the float64 operands of every block, 64 MiB each); now the in-memory value."""
    from distributed import Client, LocalCluster

    labels = np.random.default_rng(0).integers(0, 3, 3000)
    Xd = da.random.default_rng(0).normal(size=(3000, 4096), chunks=(500, 4096)).astype(np.float32)
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, memory_limit=256 * 2**20,
                      dashboard_address=None) as cluster, Client(cluster):
        X = Xd.compute()
        got = isotropy.dunn_index(Xd, labels)
        got_cosine = isotropy.dunn_index(Xd, labels, metric="cosine")
    assert got == isotropy.dunn_index(X, labels)
    assert got_cosine == isotropy.dunn_index(X, labels, metric="cosine")
    D, same = cdist(X.astype(np.float64), X.astype(np.float64)), labels[:, None] == labels[None, :]
    assert got == pytest.approx(D[~same].min() / D[same].max(), rel=1e-12)
