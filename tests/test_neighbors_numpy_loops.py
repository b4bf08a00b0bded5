"""The numpy loops of the exact search (``ISOTROPY_JIT=0``): their shortcuts keep the values of the plain paths bit for bit.

The sort of the exact candidates (one sort by distance, the (distance, index) order only where ties make it matter)
and the offer of a block through its reachable lines only (``_Best.live``) against the plain paths; the blocks offered in the cell order on both loops:
``tests/test_neighbors_exact.py::test_blocks_offered_in_cell_order_match_cdist``.
"""

import numpy as np
import pytest

from isotropy._kernels import neighbors as kernels


@pytest.fixture(autouse=True)
def numpy_loops(monkeypatch):
    monkeypatch.setenv("ISOTROPY_JIT", "0")


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


@pytest.mark.parametrize("scaled", [False, True])
def test_exact_distances_are_the_float64_differences(monkeypatch, scaled):
    """``_exact_sq_distances`` (numpy loops): within the float64 rounding of the sum of the squared differences
    (math.fsum of the rounded squares), the bound the certificate allows for it, with candidates gathered over several
    steps of the gather buffer, the last partial, on rows of norms from 1e-3 to 1e3."""
    import math

    monkeypatch.setattr(kernels, "_GATHER_MEMORY", 7 * 12 * 8 * 5)  # 7 rows per step: 3 steps, the last partial
    rng = np.random.default_rng(5)
    X = (rng.standard_normal((40, 12)) * 10.0 ** rng.integers(-3, 4, size=(40, 1))).astype(np.float32)
    scale = 1.0 / np.linalg.norm(X.astype(np.float64), axis=1) if scaled else None
    rows = rng.integers(0, 40, size=17)
    cand = rng.integers(0, 40, size=(17, 7))
    got = kernels._exact_sq_distances(X, scale, rows, cand)
    Y = X.astype(np.float64) * (1.0 if scale is None else scale[:, None])
    for r in range(rows.size):
        for j in range(cand.shape[1]):
            diff = Y[cand[r, j]] - Y[rows[r]]
            exact = math.fsum(float(t) * float(t) for t in diff)
            assert got[r, j] == pytest.approx(exact, rel=(12 + 4) * np.finfo(np.float64).eps, abs=0.0)
