"""The exact kNN kernel at any scale (issue 19 item 4) and the one-pass dimension table (issue 20 item 2).

References: scipy's ``cdist`` (float64 differences, sorted stably: ties by index), scikit-learn's
``NearestNeighbors(algorithm="brute")`` on well-scaled data, scikit-dimension's TwoNN / MLE.
"""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist
from sklearn.neighbors import NearestNeighbors

import isotropy as iso
from isotropy.metrics.dimension import neighbour_dimensions
from isotropy.metrics.neighbors import kneighbors


def _reference(X, k):
    D = cdist(np.asarray(X, dtype=np.float64), np.asarray(X, dtype=np.float64))
    np.fill_diagonal(D, np.inf)
    order = np.argsort(D, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(D, order, axis=1), order


def _twonn_reference(X, discard_fraction=0.1):
    d, _ = _reference(X, 2)
    mu = np.sort(d[:, 1] / d[:, 0])
    n_keep = int(mu.size * (1 - discard_fraction))
    x = np.log(mu[:n_keep])
    y = -np.log1p(-np.arange(1, n_keep + 1) / mu.size)
    return x @ y / (x @ x)


def _adversarial(scale, rows=3, dtype=np.float64):
    X = np.random.default_rng(0).standard_normal((500, 24))
    X[:rows] *= scale
    return X.astype(dtype)


@pytest.mark.parametrize("scale", [1e12, 1e8, 1e-8, 1e150, 1e-150])
def test_kneighbors_exact_with_a_few_rows_of_another_magnitude(scale):
    X = _adversarial(scale)
    dist, ind = kneighbors(X, n_neighbors=5)
    ref_d, ref_i = _reference(X, 5)
    np.testing.assert_allclose(dist, ref_d, rtol=1e-12, atol=0)
    bulk = slice(3, None)  # the huge rows' neighbours among the bulk tie in float64 (1e150: all at |x|)
    if scale < 1e100:
        np.testing.assert_array_equal(ind[bulk], ref_i[bulk])


@pytest.mark.parametrize("scale", [1e12, 1e-8, 1e8])
def test_kneighbors_exact_float32_rows_of_another_magnitude(scale):
    X = _adversarial(scale, dtype=np.float32)
    dist, ind = kneighbors(X, n_neighbors=4, chunk_size=128)
    ref_d, ref_i = _reference(X, 4)
    np.testing.assert_allclose(dist, ref_d, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(ind, ref_i)


@pytest.mark.parametrize("scale", [1e12, 1e150, 1e-150])
def test_twonn_exact_with_a_few_rows_of_another_magnitude(scale):
    X = _adversarial(scale)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning needed: the value is right
        assert iso.twonn_dimension(X) == pytest.approx(_twonn_reference(X), rel=1e-10)


@pytest.mark.parametrize("scale", [1e150, 1e-150])
def test_whole_data_at_extreme_scales_is_finite_and_unchanged(scale):
    X = _adversarial(1.0)
    assert iso.twonn_dimension(X * scale) == pytest.approx(iso.twonn_dimension(X), rel=1e-10)
    assert iso.mle_dimension(X * scale) == pytest.approx(iso.mle_dimension(X), rel=1e-10)
    dist, _ = kneighbors(X * scale, n_neighbors=3)
    np.testing.assert_allclose(dist, _reference(X, 3)[0] * scale, rtol=1e-12)


def test_dask_tiles_run_the_same_exact_kernel():
    da = pytest.importorskip("dask.array")
    X = _adversarial(1e12)
    import isotropy.distributed

    dist, ind = isotropy.distributed.kneighbors(da.from_array(X, chunks=(120, 24)), n_neighbors=5)
    ref_d, ref_i = _reference(X, 5)
    np.testing.assert_allclose(dist.compute(), ref_d, rtol=1e-12)
    np.testing.assert_array_equal(ind.compute(), ref_i)
    assert iso.twonn_dimension(da.from_array(X, chunks=(120, 24))) == pytest.approx(_twonn_reference(X), rel=1e-10)


def test_matches_sklearn_brute_on_well_scaled_float32():
    X = np.random.default_rng(3).standard_normal((700, 40)).astype(np.float32)
    dist, ind = kneighbors(X, n_neighbors=20, chunk_size=150)
    ref_d, ref_i = NearestNeighbors(n_neighbors=20, algorithm="brute").fit(X.astype(np.float64)).kneighbors()
    np.testing.assert_allclose(dist, ref_d, rtol=1e-9)
    np.testing.assert_array_equal(ind, ref_i)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), power=st.integers(-400, 400), shift=st.floats(-1e3, 1e3))
def test_invariant_under_power_of_two_scaling_translation_and_rotation(seed, power, shift):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((60, 5))
    Q, _ = np.linalg.qr(rng.standard_normal((5, 5)))
    d0, i0 = kneighbors(X, n_neighbors=4)
    d1, i1 = kneighbors(np.ldexp(X, power), n_neighbors=4)  # exact: a power of two
    np.testing.assert_array_equal(i1, i0)
    np.testing.assert_allclose(np.ldexp(d1, -power), d0, rtol=1e-12)
    d2, i2 = kneighbors(X @ Q + shift, n_neighbors=4)
    np.testing.assert_array_equal(i2, i0)
    np.testing.assert_allclose(d2, d0, rtol=1e-9, atol=1e-9 * (1 + abs(shift)))
    assert iso.twonn_dimension(np.ldexp(X, power)) == pytest.approx(iso.twonn_dimension(X), rel=1e-12)


def test_one_pass_equals_the_separate_estimators():
    X = np.random.default_rng(5).standard_normal((900, 9))
    out = neighbour_dimensions(X, n_neighbors=15, local_mle=True, averaging="harmonic")
    assert out["twonn_dimension"] == iso.twonn_dimension(X)
    assert out["mle_dimension"] == iso.mle_dimension(X, n_neighbors=15, averaging="harmonic")
    np.testing.assert_array_equal(out["local_mle_dimension"], iso.local_mle_dimension(X, n_neighbors=15))
    assert set(neighbour_dimensions(X, mle=False)) == {"twonn_dimension"}


def test_one_pass_matches_skdim():
    skdim = pytest.importorskip("skdim")
    X = np.random.default_rng(6).random((1500, 4)) @ np.random.default_rng(7).standard_normal((4, 30))
    out = neighbour_dimensions(X, n_neighbors=20, averaging="harmonic")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert out["twonn_dimension"] == pytest.approx(skdim.id.TwoNN().fit(X).dimension_, rel=1e-8)
        assert out["mle_dimension"] == pytest.approx(skdim.id.MLE().fit(X, n_neighbors=20).dimension_, rel=1e-8)


@pytest.mark.parametrize("chunk_size", [3, 16, 61, None])
@pytest.mark.parametrize("k", [1, 5, 40])
def test_uneven_blocks_and_ties_match_cdist(chunk_size, k):
    """Blocks of unequal sides (the last panel), threads finishing them in any order, duplicated rows (ties
    broken by index), float32 and float64: the same neighbours as a stable sort of cdist."""
    rng = np.random.default_rng(k)
    X = rng.standard_normal((157, 9))
    X[100:130] = X[:30]  # exact duplicates: distance-0 ties
    X[140:] = np.round(X[140:])  # coarse values: more ties
    for dtype in (np.float64, np.float32):
        Y = X.astype(dtype)
        dist, ind = kneighbors(Y, n_neighbors=k, chunk_size=chunk_size)
        ref_d, ref_i = _reference(Y, k)
        np.testing.assert_allclose(dist, ref_d, rtol=1e-12, atol=0)
        np.testing.assert_array_equal(ind, ref_i)
        again = kneighbors(Y, n_neighbors=k, chunk_size=chunk_size)
        np.testing.assert_array_equal(again[0], dist)  # the same bits whatever order the blocks finished in
        np.testing.assert_array_equal(again[1], ind)


@pytest.mark.parametrize("rows", [1, 7, 50])
def test_blocks_scored_a_few_rows_at_a_time_match_cdist(rows, monkeypatch):
    """The operand panels are built from X per task and each block is scored ``_ROWS`` rows at a time
    (the diagonal of a diagonal block falling anywhere in them): the same neighbours as cdist."""
    from isotropy._kernels import neighbors as kernels

    monkeypatch.setattr(kernels, "_ROWS", rows)
    X = np.random.default_rng(rows).standard_normal((157, 9)).astype(np.float32)
    X[100:110] = X[:10]
    for chunk_size in (16, 61):
        dist, ind = kneighbors(X, n_neighbors=5, chunk_size=chunk_size)
        ref_d, ref_i = _reference(X, 5)
        np.testing.assert_allclose(dist, ref_d, rtol=1e-12, atol=0)
        np.testing.assert_array_equal(ind, ref_i)


@pytest.mark.parametrize("n_panels", [1, 2, 5, 6])
def test_tasks_cover_each_block_once(n_panels):
    from isotropy._kernels.neighbors import _panels, _tasks

    panels = _panels(0, 10 * n_panels, 10)
    blocks = [(I.start, J.start) for I, Js in _tasks(panels, panels, diagonal=True) for J in Js]
    assert sorted(blocks) == sorted((I.start, J.start) for t, J in enumerate(panels) for I in panels[:t + 1])
    assert blocks[:n_panels] == [(I.start, I.start) for I in panels]  # the diagonal first
    other = _panels(10 * n_panels, 10 * n_panels + 35, 10)
    blocks = [(I.start, J.start) for I, Js in _tasks(panels, other, diagonal=False) for J in Js]
    assert sorted(blocks) == sorted((I.start, J.start) for I in panels for J in other)


@pytest.mark.parametrize("n_p", [1, 7, 60, 150])
def test_cross_kernel_matches_cdist(n_p):
    from isotropy._kernels.neighbors import exact_knn_cross

    X = np.random.default_rng(n_p).standard_normal((157, 5))
    (sq_p, ind_p), (sq_q, ind_q) = exact_knn_cross(X, None, n_p, 6)
    D = cdist(X, X) ** 2
    for rows, cols, sq, ind in ((slice(0, n_p), slice(n_p, None), sq_p, ind_p), (slice(n_p, None), slice(0, n_p), sq_q, ind_q)):
        block = D[rows, cols]
        k = min(6, block.shape[1])
        order = np.argsort(block, axis=1, kind="stable")[:, :k]
        np.testing.assert_allclose(sq[:, :k], np.take_along_axis(block, order, axis=1), rtol=1e-12, atol=1e-300)
        np.testing.assert_array_equal(ind[:, :k], order + cols.indices(157)[0])
        assert np.all(np.isinf(sq[:, k:]))



def test_blocks_between_far_clusters_prefiltered_by_their_maxima(monkeypatch):
    """Blocks between far clusters have no entry any target can keep: after the first, a side compares
    only the lines its block maxima can reach (or none). The same neighbours as cdist, ties included."""
    from isotropy._kernels import neighbors as kernels

    rng = np.random.default_rng(5)
    centres = rng.standard_normal((6, 8)) * 100
    X = (centres[np.arange(600) // 100] + rng.standard_normal((600, 8))).astype(np.float32)  # clusters in turn
    X[590:] = X[:10]  # duplicates
    calls = []
    offer = kernels._offer

    def counting(S, best, *args):
        calls.append(best.live < 0.25)
        return offer(S, best, *args)

    monkeypatch.setattr(kernels, "_offer", counting)
    dist, ind = kneighbors(X, n_neighbors=6, chunk_size=40)
    assert sum(calls) > len(calls) // 2  # most blocks took the prefiltered path
    ref_d, ref_i = _reference(X, 6)
    np.testing.assert_allclose(dist, ref_d, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(ind, ref_i)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reachable", [0, 3, 40])
def test_prefiltered_offer_keeps_the_entries_of_the_full_comparison(axis, reachable):
    """``_offer`` through the block maxima (few targets reachable) keeps exactly the entries the whole
    comparison keeps, for rows (axis 1) and, transposed, for columns (axis 0)."""
    from isotropy._kernels.neighbors import _Best, _offer

    rng = np.random.default_rng(reachable + 10 * axis)
    S = rng.standard_normal((40, 50)).astype(np.float32)
    n_targets = S.shape[1 - axis]
    kept, chosen = [], rng.permutation(n_targets)[:reachable]
    for live in (0.0, 1.0):  # prefiltered, whole
        best = _Best(n_targets, 4)
        best.tau[:] = 10.0  # nothing reaches ...
        best.tau[chosen] = 0.5  # ... but these targets
        best.live = live
        into = []
        _offer(S, best, slice(0, n_targets), 100, axis, np.empty(S.shape, dtype=bool), into)
        entries = set() if not into else set(zip(*(part.tolist() for part in into[0])))
        kept.append(entries)
    assert kept[0] == kept[1]
    expected = {(t, o + 100) for t, o in zip(*np.nonzero((S if axis == 1 else S.T) >= 0.5))
                if best.tau[t] == 0.5}
    assert {(t, o) for t, o, _ in kept[0]} == expected
