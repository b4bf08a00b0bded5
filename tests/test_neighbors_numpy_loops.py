"""The numpy loops of the exact search (``ISOTROPY_JIT=0``): their shortcuts keep the values of the plain paths bit for bit.

The blocks offered in the cell order (``_cell_order``), the sort of the exact candidates (one sort by distance, the
(distance, index) order only where ties make it matter) and the offer of a block through its reachable lines only
(``_Best.live``) against cdist and against the plain paths.
"""

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from isotropy._kernels import neighbors as kernels
from isotropy.metrics.neighbors import kneighbors


@pytest.fixture(autouse=True)
def numpy_loops(monkeypatch):
    monkeypatch.setenv("ISOTROPY_JIT", "0")


def _reference(X, k):
    D = cdist(np.asarray(X, dtype=np.float64), np.asarray(X, dtype=np.float64))
    np.fill_diagonal(D, np.inf)
    order = np.argsort(D, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(D, order, axis=1), order


@pytest.mark.parametrize("k", [3, 20])
def test_numpy_loops_in_cell_order_match_cdist_and_the_plain_order(k, monkeypatch):
    """Clusters, distance-0 duplicates and rounded rows (ties): the same neighbours as cdist, and bit for bit those of
    the points' own order, with the panels' rows gathered by numpy."""
    rng = np.random.default_rng(k)
    X = (rng.standard_normal((400, 9)) + 6 * rng.integers(0, 3, (400, 1))).astype(np.float32)
    X[300:340] = X[:40]
    X[360:] = np.round(X[360:])
    orders = []
    cell_order = kernels._cell_order
    monkeypatch.setattr(kernels, "_cell_order", lambda *args: orders.append(cell_order(*args)) or orders[-1])
    ref_d, ref_i = _reference(X, k)
    for chunk_size in (16, 61):
        runs = []
        for ordered in (1, 10**9):  # _ORDERED: the cell order from one candidate on, or never
            monkeypatch.setattr(kernels, "_ORDERED", ordered)
            runs.append(kneighbors(X, n_neighbors=k, chunk_size=chunk_size))
        np.testing.assert_allclose(runs[0][0], ref_d, rtol=1e-12, atol=0)
        np.testing.assert_array_equal(runs[0][1], ref_i)
        for a, b in zip(*runs):
            np.testing.assert_array_equal(a, b)
    assert len(orders) == 2


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", [1, 5, 12])
def test_sort_candidates_equals_the_lexicographic_sort(seed, k):
    """Rows with equal distances (within and across the k-th), inf and NaN: the first k by (distance, index)."""
    rng = np.random.default_rng(seed)
    sq = rng.choice(np.array([0.0, 0.5, 1.0, 2.0, 3.0, np.inf]), size=(300, 12))
    sq[:100] = rng.random((100, 12))  # rows without ties
    sq[100:110, 3] = np.nan
    cand = np.stack([rng.permutation(1000)[:12] for _ in range(300)])
    dist, ind = kernels._sort_candidates(sq, cand, k)
    order = np.lexsort((cand, sq), axis=-1)[:, :k]
    np.testing.assert_array_equal(dist, np.take_along_axis(sq, order, axis=1))
    np.testing.assert_array_equal(ind, np.take_along_axis(cand, order, axis=1))


@pytest.mark.parametrize("axis", [0, 1])
def test_offer_through_the_reachable_lines_keeps_the_same_entries(axis):
    """A block offered through the lines its maxima can reach (``live`` below a quarter) keeps, in the same order,
    the entries the whole block's mask keeps."""
    rng = np.random.default_rng(axis)
    S = rng.standard_normal((64, 80)).astype(np.float32)
    size = S.shape[1 - axis]
    kept = []
    for live in (0.1, 1.0):
        best = kernels._Best(size, 4)
        best.tau[:] = 3.5  # mostly out of reach: only some lines are scanned
        best.tau[::8] = 1.0
        best.live = live
        into = []
        kernels._offer(S, best, slice(0, size), 0, axis, np.empty(S.shape, dtype=bool), into)
        kept.append(into[0])
    assert 4 * np.count_nonzero(S.max(axis=axis) >= best.tau) <= size  # the reachable lines' path
    for a, b in zip(*kept):
        np.testing.assert_array_equal(a, b)
