"""The exact kNN kernel at any scale (issue 19 item 4) and the one-pass dimension table (issue 20 item 2).

References: scipy's ``cdist`` (float64 differences, sorted stably: ties by index), scikit-learn's
``NearestNeighbors(algorithm="brute")`` on well-scaled data, scikit-dimension's TwoNN / MLE.
Every test runs twice: on the numpy loops (``ISOTROPY_JIT=0``) and on the compiled ones (``=1``, numba).
"""

import sys
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist
from sklearn.neighbors import NearestNeighbors

import isotropy as iso
from isotropy.metrics.dimension import neighbour_dimensions
from isotropy.metrics.neighbors import kneighbors


@pytest.fixture(autouse=True, params=["0", "1"], ids=["numpy", "compiled"])
def jit(request, monkeypatch):
    """The search's loops: numpy (``ISOTROPY_JIT=0``) or compiled by numba (``1``; test extra)."""
    monkeypatch.setenv("ISOTROPY_JIT", request.param)
    return request.param


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


@pytest.mark.parametrize("stripe", [5, 16, 1024])
def test_workers_appending_under_striped_locks_match_cdist(stripe, monkeypatch):
    """Two workers (forced below ``_ONE_WORKER``) appending to the running best under locks of ``stripe``
    points each, blocks straddling stripes: the same neighbours as cdist, the same bits on every run."""
    from isotropy._kernels import neighbors as kernels
    from isotropy._kernels import silhouette

    monkeypatch.setattr(kernels, "_ONE_WORKER", 0)
    monkeypatch.setattr(kernels, "_STRIPE", stripe)
    monkeypatch.setattr(silhouette, "_cores", lambda: 2)  # two workers on any machine
    X = np.random.default_rng(stripe).standard_normal((400, 9)).astype(np.float32)
    X[300:340] = X[:40]  # distance-0 ties
    ref_d, ref_i = _reference(X, 7)
    for chunk_size in (16, 61):
        for _ in range(3):
            dist, ind = kneighbors(X, n_neighbors=7, chunk_size=chunk_size)
            np.testing.assert_allclose(dist, ref_d, rtol=1e-12, atol=0)
            np.testing.assert_array_equal(ind, ref_i)


def test_stripes_hold_the_locks_of_their_points(monkeypatch):
    """``_Stripes.hold(start, stop)`` takes the locks of the stripes that the points ``start:stop`` fall in."""
    from isotropy._kernels import neighbors as kernels

    monkeypatch.setattr(kernels, "_STRIPE", 10)
    stripes = kernels._Stripes(35)
    assert len(stripes.locks) == 4
    for (start, stop), expected in {(0, 1): [0], (0, 10): [0], (9, 11): [0, 1], (12, 35): [1, 2, 3],
                                    (30, 35): [3], (0, 35): [0, 1, 2, 3]}.items():
        held = stripes.hold(start, stop)
        assert held.locks == [stripes.locks[i] for i in expected]
        with held:
            assert all(lock.locked() for lock in held.locks)
        assert not any(lock.locked() for lock in stripes.locks)


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



@pytest.mark.parametrize("jit", ["0"], indirect=True)  # the numpy loops' prefilter
def test_blocks_between_far_clusters_prefiltered_by_their_maxima(jit, monkeypatch):
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


@pytest.mark.parametrize("jit", ["0"], indirect=True)  # a function of the numpy loops
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reachable", [0, 3, 40])
def test_prefiltered_offer_keeps_the_entries_of_the_full_comparison(jit, axis, reachable):
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


@pytest.mark.parametrize("jit", ["0"], indirect=True)  # each test below sets the variable itself
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**16), n=st.integers(2, 90), d=st.integers(1, 12), k=st.integers(1, 12),
       dtype=st.sampled_from([np.float32, np.float64]), levels=st.sampled_from([0, 3]),
       metric=st.sampled_from(["euclidean", "cosine"]))
def test_compiled_loops_give_the_numpy_loops_neighbours(jit, seed, n, d, k, dtype, levels, metric):
    """The same neighbours from both loops, distances equal up to the order of their float64 sums (``levels``:
    integer-valued data full of ties; a tie that only one sum breaks may pick another point at that distance)."""
    import os

    rng = np.random.default_rng(seed)
    X = (rng.integers(0, levels, (n, d)) if levels else rng.standard_normal((n, d))).astype(dtype)
    if metric == "cosine":
        X[np.all(X == 0, axis=1), 0] = 1
    k = min(k, n - 1)
    out = {}
    for mode in "01":
        os.environ["ISOTROPY_JIT"] = mode
        try:
            out[mode] = kneighbors(X, n_neighbors=k, metric=metric, chunk_size=7)
        finally:
            os.environ["ISOTROPY_JIT"] = "0"
    tol = 4 * (d + 4) * np.finfo(np.float64).eps
    np.testing.assert_allclose(out["1"][0], out["0"][0], rtol=tol, atol=tol)
    # indices differ only between points at the same distance up to rounding (a tie the two sums break apart)
    D = cdist(X.astype(np.float64), X.astype(np.float64), metric)
    rows, cols = np.nonzero(out["1"][1] != out["0"][1])
    np.testing.assert_allclose(D[rows, out["1"][1][rows, cols]], D[rows, out["0"][1][rows, cols]], rtol=tol, atol=tol)


@pytest.mark.parametrize("jit", ["0"], indirect=True)
def test_which_loops_run(jit, monkeypatch):
    """``ISOTROPY_JIT``: "0" never compiled, "1" always, "auto" from the size of the search alone; a bad value
    or "1" without numba is a one-line error that names the variable."""
    from isotropy._kernels import neighbors as kernels

    monkeypatch.setenv("ISOTROPY_JIT", "0")
    assert kernels.compiled_kernels(10**6, 1000) is None
    monkeypatch.setenv("ISOTROPY_JIT", "1")
    assert kernels.compiled_kernels(10, 2).__name__ == "isotropy._kernels._neighbors_jit"
    monkeypatch.setenv("ISOTROPY_JIT", "auto")
    assert kernels.compiled_kernels(1000, 384) is None
    assert kernels.compiled_kernels(10**6, 384) is not None
    # the work n² + w·n·k·d against the threshold: the neighbours' recomputation counts at large k
    w, work = kernels._RECOMPUTATION_WEIGHT, kernels._COMPILED_WORK
    n = 20_000
    k_edge = (work - n * n) / (w * n * 384)  # the k from which a search of 20,000 × 384 is compiled
    assert kernels.compiled_kernels(n, 384, int(k_edge)) is None
    assert kernels.compiled_kernels(n, 384, int(k_edge) + 1) is not None
    assert kernels.compiled_kernels(n, 384, 2) is None  # TwoNN's search of the same points
    # what the candidate pass saves does not grow with d: narrow data compile from about as many points as wide
    assert kernels.compiled_kernels(60_000, 50, 2) is not None and kernels.compiled_kernels(20_000, 50, 20) is None
    assert kernels.compiled_kernels(30_000, 1024, 2) is None
    monkeypatch.delenv("ISOTROPY_JIT")
    assert kernels.compiled_kernels(10**6, 384) is not None  # unset: "auto"
    monkeypatch.setenv("ISOTROPY_JIT", " Yes ")
    with pytest.raises(iso.IsotropyValueError, match=r"ISOTROPY_JIT environment variable must be 'auto', '0' or "
                                                     r"'1'\. Got ' Yes ' instead"):
        kernels.compiled_kernels(10, 2)
    monkeypatch.setenv("ISOTROPY_JIT", " 1 ")  # spaces and case do not matter
    assert kernels.compiled_kernels(10, 2) is not None
    monkeypatch.setitem(sys.modules, "isotropy._kernels._neighbors_jit", None)  # as if numba were not installed
    monkeypatch.setattr(kernels, "_installed", lambda name: False)
    monkeypatch.setenv("ISOTROPY_JIT", "auto")
    assert kernels.compiled_kernels(10**6, 384) is None
    monkeypatch.setenv("ISOTROPY_JIT", "1")
    with pytest.raises(iso.IsotropyValueError, match=r"pip install -e \".*\[fast\]\""):
        kernels.compiled_kernels(10, 2)


@pytest.mark.parametrize("jit", ["0"], indirect=True)
def test_numba_that_fails_to_load(jit, monkeypatch):
    """numba installed but failing to load (no writable cache directory, a numpy it does not support): the numpy
    loops under auto, and under "1" a one-line error that gives the cause."""
    from isotropy._kernels import neighbors as kernels

    def failing(name):
        raise RuntimeError("cannot cache function 'sq_distances':\n no locator available")

    monkeypatch.setattr(kernels.importlib, "import_module", failing)
    monkeypatch.setenv("ISOTROPY_JIT", "auto")
    assert kernels.compiled_kernels(10**6, 384) is None
    _, ind = kneighbors(np.eye(4), n_neighbors=1)  # the numpy loops
    np.testing.assert_array_equal(ind.ravel(), [1, 0, 0, 0])
    monkeypatch.setenv("ISOTROPY_JIT", "1")
    with pytest.raises(iso.IsotropyValueError) as error:
        kernels.compiled_kernels(10, 2)
    assert str(error.value) == ("The ISOTROPY_JIT environment variable is '1', but numba could not be loaded "
                                "(RuntimeError: cannot cache function 'sq_distances': no locator available). "
                                "Unset ISOTROPY_JIT to use the numpy loops.")


@pytest.mark.parametrize("jit", ["0"], indirect=True)
def test_scan_refuses_buffers_a_row_does_not_fit_in(jit):
    """The compiled scan has no bounds checks: buffers smaller than a block's row are refused before it runs."""
    from isotropy._kernels import _neighbors_jit as compiled
    from isotropy._kernels import neighbors as kernels

    S = np.zeros((4, 40), dtype=np.float32)
    sides = (kernels._Best(4, 2), kernels._Best(40, 2, offset=4))
    for found in ([np.empty((39, 2), np.int64), np.empty((64, 2), np.int64), np.zeros(40, np.uint8)],
                  [np.empty((64, 2), np.int64), np.empty((64, 2), np.int64), np.zeros(32, np.uint8)]):
        with pytest.raises(ValueError, match="for a block of 40 columns"):
            kernels._scan(S, sides, slice(0, 4), slice(4, 44), False, found, compiled)


def test_prefetch_takes_any_integer_row_and_leaves_values_alone():
    """The prefetch hint compiles for int32, uint16 and int64 row and line numbers and changes nothing it reads."""
    import numba

    from isotropy._kernels._neighbors_jit import _prefetch

    @numba.njit
    def first_of(X, row, line):
        _prefetch(X, row, line)
        return X[row, 0]

    X = np.arange(24, dtype=np.float32).reshape(4, 6)
    for row, line in ((np.int32(3), np.int32(0)), (np.uint16(2), np.int64(0)), (1, 0)):
        assert first_of(X, row, line) == X[int(row), 0]


@pytest.mark.parametrize("jit", ["0"], indirect=True)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.one_of(st.lists(st.integers(-5, 5), min_size=1, max_size=300),
                        st.lists(st.integers(-2**63, 2**63 - 1), min_size=1, max_size=300)), data=st.data())
def test_compiled_selection_orders_around_the_kth(jit, values, data):
    """The compiled quickselect against numpy's partition: the same value at ``kth``, none larger before it,
    none smaller after it, the same multiset (short and long ranges, few distinct values or all distinct)."""
    from isotropy._kernels._neighbors_jit import _select

    a = np.array(values, dtype=np.int64)
    kth = data.draw(st.integers(0, a.size - 1))
    b = a.copy()
    _select(b, 0, b.size, kth)
    assert b[kth] == np.partition(a, kth)[kth]
    assert np.all(b[:kth] <= b[kth]) and np.all(b[kth + 1:] >= b[kth])
    np.testing.assert_array_equal(np.sort(b), np.sort(a))


@pytest.mark.parametrize("jit", ["0"], indirect=True)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.integers(1, 4), width=st.integers(1, 40), few=st.booleans(), data=st.data())
def test_compiled_row_sort_matches_lexsort(jit, rows, width, few, data):
    """The compiled insertion sort of the refinement keeps, per row, the first ``k`` by (distance, index) that
    numpy's lexsort keeps: rows in any order, equal distances (ties by index), ``inf``, repeated indices."""
    from isotropy._kernels import _neighbors_jit as compiled
    from isotropy._kernels import neighbors as kernels

    values = st.sampled_from([0.0, 1.0, 2.5, np.inf]) if few else st.floats(0, 1e300) | st.just(np.inf)
    sq = np.array(data.draw(st.lists(values, min_size=rows * width, max_size=rows * width))).reshape(rows, width)
    cand = np.array(data.draw(st.lists(st.integers(0, 50), min_size=rows * width, max_size=rows * width)),
                    dtype=np.intp).reshape(rows, width)
    k = data.draw(st.integers(1, width))
    dist, ind = kernels._sort_candidates(sq, cand, k, compiled)
    ref_dist, ref_ind = kernels._sort_candidates(sq, cand, k)
    np.testing.assert_array_equal(dist, ref_dist)
    np.testing.assert_array_equal(ind, ref_ind)


@pytest.mark.parametrize("jit", ["0"], indirect=True)
@pytest.mark.parametrize("size", [33, 224, 1000])
def test_compiled_selection_finishes_on_equal_values(jit, size):
    """Equal values move the branch-free partition's boundary by one per round: after its rounds, Hoare's
    partition finishes the range (the selection ends, and every value stays)."""
    from isotropy._kernels._neighbors_jit import _select

    a = np.full(size, 7, dtype=np.int64)
    a[-1] = 8
    for kth in (0, size // 2, size - 2, size - 1):
        b = a.copy()
        _select(b, 0, size, kth)
        assert b[kth] == (8 if kth == size - 1 else 7)
        assert np.all(b[:kth] <= b[kth]) and np.all(b[kth + 1:] >= b[kth])
        np.testing.assert_array_equal(np.sort(b), a)


@pytest.mark.parametrize("jit", ["0"], indirect=True)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_compiled_scan_and_push_keep_the_sets_of_offer_and_merge(jit, seed):
    """A block scanned and pushed by the compiled loops leaves every point the same best ``m`` as
    ``_offer`` and ``_Best.merge`` (scores drawn from few values: ties by index, and ``-0.0``)."""
    from isotropy._kernels import _neighbors_jit as compiled
    from isotropy._kernels import neighbors as kernels

    rng = np.random.default_rng(seed)
    m, n_rows, n_cols = 5, 30, 40
    sets = []
    for use in ("numpy", "compiled"):
        rows_best, cols_best = kernels._Best(n_rows, m), kernels._Best(n_cols, m, offset=n_rows)
        for block in range(4):
            S = np.ascontiguousarray(rng.choice(np.array([-1.0, -0.0, 0.0, 0.5, 2.0], np.float32), (n_rows, n_cols))
                                     if block % 2 else rng.standard_normal((n_rows, n_cols)).astype(np.float32))
            rows, cols = slice(0, n_rows), slice(n_rows, n_rows + n_cols)
            if use == "numpy":
                into_rows, into_cols, mask = [], [], np.empty(S.shape, dtype=bool)
                kernels._offer(S, rows_best, rows, cols.start, 1, mask, into_rows)
                kernels._offer(S, cols_best, cols, rows.start, 0, mask, into_cols)
                kernels._merge(rows_best, into_rows)
                kernels._merge(cols_best, into_cols)
            else:
                found = [np.empty((64, 2), dtype=np.int64) for _ in range(2)]  # a few rows per scan: resumed
                found.append(np.full(48, 255, dtype=np.uint8))  # the mask (40 columns: stale bytes after them)
                kernels._scan(S, (rows_best, cols_best), rows, cols, False, found, compiled)
        rng = np.random.default_rng(seed)  # the same blocks for both
        kept = []
        for best in (rows_best, cols_best):  # the compiled loops also read the slots out compiled
            scores, indices = best.result(compiled if use == "compiled" else None)
            order = np.lexsort((scores, indices), axis=1)  # (the blocks repeat the same points: an index recurs)
            kept.append((np.take_along_axis(indices, order, 1), np.take_along_axis(scores, order, 1).view(np.int32)))
        sets.append(kept)
    for (i0, s0), (i1, s1) in zip(*sets):
        np.testing.assert_array_equal(i0, i1)
        np.testing.assert_array_equal(s0, s1)  # bit for bit (the -0.0 entries read as +0.0 on both)


@pytest.mark.parametrize("panels", [1, 2, 3])
def test_column_panels_per_task_give_the_same_neighbours(panels, monkeypatch):
    """Tasks of one, two or three column panels (``_COLUMN_PANELS``: the blocks within a group of the diagonal are
    tasks of their own) cover every block on and above the diagonal once: the neighbours of cdist, bit for bit
    the same whatever the grouping, on two workers."""
    from isotropy._kernels import neighbors as kernels
    from isotropy._kernels import silhouette

    monkeypatch.setattr(kernels, "_ONE_WORKER", 0)
    monkeypatch.setattr(silhouette, "_cores", lambda: 2)
    rng = np.random.default_rng(panels)
    X = (rng.standard_normal((350, 7)) + 5 * rng.integers(0, 3, (350, 1))).astype(np.float32)
    panels_of = kernels._panels(0, 350, 40)
    monkeypatch.setattr(kernels, "_COLUMN_PANELS", panels)
    tasks = kernels._tasks(panels_of, panels_of, diagonal=True)
    blocks = sorted((I.start, J.start) for I, Js in tasks for J in Js)
    assert blocks == sorted((I.start, J.start) for a, I in enumerate(panels_of) for J in panels_of[a:])
    assert all(len(Js) <= panels for _, Js in tasks)
    runs = [kneighbors(X, n_neighbors=6, chunk_size=40)]
    monkeypatch.setattr(kernels, "_COLUMN_PANELS", 1)
    runs.append(kneighbors(X, n_neighbors=6, chunk_size=40))
    ref_d, ref_i = _reference(X, 6)
    np.testing.assert_allclose(runs[0][0], ref_d, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(runs[0][1], ref_i)
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("jit", ["0", "1"], indirect=True)
@pytest.mark.parametrize("k", [3, 20])
def test_blocks_offered_in_cell_order_match_cdist(jit, k, monkeypatch):
    """The candidate pass over the points grouped by their nearest evenly spaced point (``_cell_order``: the
    panels gather their rows, the slots are read back into the points' own order), on both loops (the numpy
    loops gather the panels' rows with numpy), on two workers and small stripes, with duplicates and ties: the same neighbours as cdist, bit for bit those of the points' own order."""
    from isotropy._kernels import neighbors as kernels
    from isotropy._kernels import silhouette

    monkeypatch.setattr(kernels, "_ONE_WORKER", 0)
    monkeypatch.setattr(kernels, "_STRIPE", 16)
    monkeypatch.setattr(silhouette, "_cores", lambda: 2)
    rng = np.random.default_rng(k)
    X = (rng.standard_normal((400, 9)) + 6 * rng.integers(0, 3, (400, 1))).astype(np.float32)  # three clusters
    X[300:340] = X[:40]  # distance-0 ties
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
    assert len(orders) == 2  # one per ordered search, each a permutation
    for order in orders:
        np.testing.assert_array_equal(np.sort(order), np.arange(X.shape[0]))


@pytest.mark.parametrize("jit", ["0"], indirect=True)
@pytest.mark.parametrize("seed", [0, 1])
def test_slots_read_out_in_an_order(jit, seed):
    """Slots filled for the points in an order are read out, on both loops, into the points' own rows with
    the points' own indices: ``result(order)[order[p]]`` holds ``order`` of what row ``p`` holds."""
    from isotropy._kernels import _neighbors_jit as compiled
    from isotropy._kernels import neighbors as kernels

    rng = np.random.default_rng(seed)
    n, m = 50, 6
    order = rng.permutation(n)
    targets = np.repeat(np.arange(n), 20)
    others = rng.integers(0, n, targets.size)
    vals = rng.choice(np.array([-1.0, -0.0, 0.5, 2.0], np.float32), targets.size)
    sets = []
    for loops, by in ((None, None), (None, order), (compiled, order)):
        best = kernels._Best(n, m)
        best.merge(targets, others, vals)
        scores, indices = best.result(loops, by)
        if by is None:  # what the ordered read-outs must give, row order[p] for slot row p
            scores[order], indices[order] = scores.copy(), order[indices]
        key = np.lexsort((indices, scores.view(np.int32)), axis=1)
        sets.append((np.take_along_axis(scores, key, 1).view(np.int32), np.take_along_axis(indices, key, 1)))
    for s, i in sets[1:]:
        np.testing.assert_array_equal(s, sets[0][0])
        np.testing.assert_array_equal(i, sets[0][1])


@pytest.mark.parametrize("jit", ["0"], indirect=True)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.integers(1, 40), cols=st.integers(1, 300), m=st.integers(1, 120), few=st.booleans(),
       axis=st.sampled_from([0, 1]), seed=st.integers(0, 2**16))
def test_first_threshold_lets_at_least_m_entries_through(jit, rows, cols, m, few, axis, seed):
    """``_group_threshold`` with groups of 8 down to single entries (by the line's length against ``m``): at
    least ``m`` entries of every line reach it, ties and ``-inf`` entries included; ``-inf`` when a line has
    fewer groups than ``m``."""
    from isotropy._kernels import neighbors as kernels

    rng = np.random.default_rng(seed)
    S = (rng.integers(-2, 3, (rows, cols)) if few else rng.standard_normal((rows, cols))).astype(np.float32)
    S[rng.random(S.shape) < 0.05] = -np.inf
    thr = kernels._group_threshold(S, axis, m)
    assert thr.shape == (S.shape[1 - axis],)
    reached = (S >= (thr[:, None] if axis == 1 else thr[None, :])).sum(axis=axis)
    finite = ~np.isneginf(thr)
    assert np.all(reached[finite] >= m)
    if S.shape[axis] < m:
        assert not finite.any()


def test_certificate_covers_the_points_of_every_chunk():
    # _refine_chunk passed the chunk's own q_i to _certified, whose "no point lies beyond q1" test then read the
    # largest norm of that chunk of rows: a row could be certified past a point of larger norm in another chunk.
    # Here q_i = 1, tau = -1, gamma = 1e-3, k-th squared distance 1.99: the first bound suffices up to q1 = 4, and a
    # point of q_j = 5 is excluded by neither bound (d^2 >= 1.988 and >= (sqrt 5 - 1)^2 = 1.53, both below 1.99)
    from isotropy._kernels.neighbors import _certified

    args = (np.array([-1.0]), np.array([1.99]), np.array([1.0]), 1e-3, 0.0, 4)
    assert not _certified(*args, 5.0)[0]  # a point of norm 5 somewhere: not provable
    assert _certified(*args, 3.9)[0]  # every point within q1: the first bound excludes each non-candidate
    assert not _certified(*args[:2], np.array([1.0]), 1e-3, 0.0, 4, 4.1)[0]


def _tied_data(kind, n, d, rng):
    return {"identical": np.ones((n, d)), "one-hot": np.eye(d)[rng.integers(0, d, n)],
            "lattice": rng.integers(0, 2, (n, d)).astype(float), "gaussian": rng.standard_normal((n, d))}[kind]


@pytest.mark.parametrize("kind", ["identical", "one-hot", "lattice", "gaussian"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_fallbacks_match_cdist_on_ties_in_small_pieces(jit, kind, seed, monkeypatch):
    """The float64 fallbacks (stage 3a, ``_float64_candidates``; stage 3b, ``_exact_rows``) on rows whose distances
    tie, among a range of the points (a dask tile's), in pieces of a few columns and rows (their memory bounds
    made tiny): each row's k nearest by (distance, index), as a stable sort of cdist."""
    from isotropy._kernels import neighbors as kernels

    rng = np.random.default_rng(seed)
    n, d = 97, 5
    X = _tied_data(kind, n, d, rng)
    monkeypatch.setattr(kernels, "_GATHER_MEMORY", 8 * d * int(rng.integers(1, 9)))
    monkeypatch.setattr(kernels, "_FALLBACK_SCORES", int(rng.integers(1, 200)))
    jit_module = kernels.compiled_kernels(n, d, 1) if jit == "1" else None
    assert (jit_module is not None) == (jit == "1")
    first, stop = (0, n) if seed == 0 else (int(rng.integers(0, 30)), int(rng.integers(60, n + 1)))
    rows = rng.choice(n, size=40, replace=False)
    cols = np.arange(first, stop)
    D = cdist(X[rows], X[cols])
    D[rows[:, None] == cols[None, :]] = np.inf
    for k in (1, 4, stop - first - 1):
        order = np.argsort(D, axis=1, kind="stable")[:, :k]
        sq, ind = kernels._exact_rows(X, None, rows, k, (first, stop), jit_module)
        np.testing.assert_array_equal(ind, cols[order])
        np.testing.assert_allclose(np.sqrt(sq), np.take_along_axis(D, order, axis=1), rtol=1e-12, atol=1e-15)
    # stage 3a keeps each row's m best float64 scores: the candidates hold a nearest neighbour set
    centre = X.mean(axis=0)
    q = ((X - centre) ** 2).sum(axis=1)
    m = 6
    v, i = kernels._float64_candidates(X, None, centre, q, rows, m, (first, stop))
    score = -np.sort(D, axis=1) ** 2 / 2  # -‖x_i - x_j‖²/2, best first
    np.testing.assert_allclose(np.sort(v, axis=1)[:, ::-1], score[:, :m], rtol=1e-9, atol=1e-9)
    held = -np.take_along_axis(D, np.searchsorted(cols, i), axis=1) ** 2 / 2  # each candidate's own score
    np.testing.assert_allclose(held, v, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kind", ["identical", "one-hot"])
def test_ties_everywhere_keep_the_fallback_linear(jit, kind, monkeypatch):
    """Data whose every distance ties (repeated rows, one-hot rows): every row goes to the exact fallback, whose
    selection sorts each distance at most once (no sort by (distance, index) of each step, and numpy's partition,
    which slows down badly on such rows, is not used); the result is the stable sort of cdist."""
    from isotropy._kernels import neighbors as kernels

    n, d, k = 600, 8, 5
    X = _tied_data(kind, n, d, np.random.default_rng(0))
    ref_d, ref_i = _reference(X, k)
    sorted_entries = []

    def counting(sort):
        def counted(a, *args, **kwargs):
            sorted_entries.append(np.size(a[0]) if sort is np.lexsort else np.size(a))
            return sort(a, *args, **kwargs)
        return counted

    for name in ("sort", "argsort", "lexsort"):
        monkeypatch.setattr(kernels.np, name, counting(getattr(np, name)))

    def no_partition(*args, **kwargs):
        raise AssertionError("np.argpartition/np.partition in the exact fallbacks")

    monkeypatch.setattr(kernels.np, "argpartition", no_partition)
    monkeypatch.setattr(kernels.np, "partition", no_partition)
    monkeypatch.setattr(kernels, "_GATHER_MEMORY", 8 * d * 50)  # 50 columns a step: 12 steps
    monkeypatch.setattr(kernels, "_FALLBACK_SCORES", 50 * n)  # the same for the float64 scores
    jit_module = kernels.compiled_kernels(n, d, k) if jit == "1" else None
    dist, ind = kernels._exact_rows(X, None, np.arange(n), k, (0, n), jit_module)
    np.testing.assert_array_equal(ind, ref_i)
    np.testing.assert_allclose(np.sqrt(dist), ref_d, rtol=1e-12, atol=0)
    # the first step sorts its k + 50 entries per row (and argsorts the k it keeps); after it, only the rows that
    # take a new entry sort the k they hold and the few new ones (one-hot rows whose first 50 columns held fewer
    # than k of their class); a sort of every step's entries would be 12 times the first term
    assert sum(sorted_entries) <= n * (k + 50) + n * k + n * 4 * k
    sorted_entries.clear()
    centre = X.mean(axis=0)
    kernels._float64_candidates(X, None, centre, ((X - centre) ** 2).sum(axis=1), np.arange(n), k + 8, (0, n))
    # float64 scores of tied points differ by their rounding, so a few enter at each step: far fewer than a sort of
    # every step's scores (12 steps of m + 50 per row, and the m kept)
    m = k + 8
    assert sum(sorted_entries) <= 0.3 * 12 * n * (m + 50 + m)


@pytest.mark.parametrize("kind", ["identical", "one-hot"])
def test_rows_whose_candidates_all_tie_skip_the_float64_scores(jit, kind, monkeypatch):
    """A row whose m candidates hold one score has m points tied there: float64 scores tie too and cannot certify it,
    so it goes to the differences to every point at once (stage 3b), not through stage 3a first; the neighbours are
    the stable sort of cdist. Rows of a few magnitudes apart (no tie) still take stage 3a."""
    from isotropy._kernels import neighbors as kernels

    scored = []
    original = kernels._float64_candidates

    def counting(X, scale, centre, q, rows, m, cols):
        scored.append(rows.size)
        return original(X, scale, centre, q, rows, m, cols)

    monkeypatch.setattr(kernels, "_float64_candidates", counting)
    X = _tied_data(kind, 300, 8, np.random.default_rng(0))
    dist, ind = kneighbors(X, n_neighbors=5)
    ref_d, ref_i = _reference(X, 5)
    np.testing.assert_array_equal(ind, ref_i)
    np.testing.assert_allclose(dist, ref_d, rtol=1e-12, atol=0)
    assert sum(scored) == 0
    Y = _adversarial(1e-8, rows=50)  # rows float32 scores leave uncertified: float64 scores certify them
    np.testing.assert_array_equal(kneighbors(Y, n_neighbors=5)[1], _reference(Y, 5)[1])
    assert sum(scored) > 0


@pytest.mark.parametrize("kind", ["one-hot", "lattice", "counts", "identical"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_integer_rows_are_final_after_the_exact_distances(jit, kind, dtype, monkeypatch):
    """Integer rows of moderate norm have exact float32 scores (``_Operands.exact``): every row is certified by
    its candidates alone, ties included, and neither float64 fallback runs; the neighbours are the stable sort of
    cdist (ties by index), at k = 1, 5, and at k = 70, whose 78 candidates would otherwise take the cell order."""
    from isotropy._kernels import neighbors as kernels

    def refused(*args, **kwargs):
        raise AssertionError("a float64 fallback ran on exact scores")

    monkeypatch.setattr(kernels, "_float64_candidates", refused)
    monkeypatch.setattr(kernels, "_exact_rows", refused)
    rng = np.random.default_rng(3)
    n, d = 500, 12
    X = (rng.poisson(2.0, (n, d)) - 3 if kind == "counts" else _tied_data(kind, n, d, rng)).astype(dtype)
    orders = []
    monkeypatch.setattr(kernels, "_cell_order", lambda *args: orders.append(1))
    for k in (1, 5, 70):
        sq, ind = kernels.exact_knn(X, None, k, block=100)
        ref_d, ref_i = _reference(X, k)
        np.testing.assert_array_equal(ind, ref_i)
        np.testing.assert_array_equal(np.sqrt(sq), ref_d)  # integer squared distances: exact
    assert not orders
    assert kernels._Operands(X, None, np.zeros(d), "test").exact


def test_exact_scores_only_for_integer_rows_of_moderate_norm(jit):
    """``_Operands.exact`` holds for integer rows whose centred squared norms are at most 2^22 under the euclidean
    metric; not for half-integers, larger integers or the cosine metric's scaled rows, whose searches keep the
    certificate (the neighbours of each still the stable sort of cdist)."""
    from isotropy._kernels import neighbors as kernels

    rng = np.random.default_rng(0)
    base = rng.integers(-3, 4, (300, 6)).astype(np.float64)
    big = base.copy()
    big[7, 0] = 2**11 + 1  # (2^11 + 1)^2 > 2^22
    edge = base.copy()
    edge[7] = 0
    edge[7, 0] = 2**11  # exactly 2^22
    cases = {"integers": (base, None, True), "2^22": (edge, None, True), "half": (base + 0.5, None, False),
             "large": (big, None, False), "cosine": (base + 10, 1 / np.linalg.norm(base + 10, axis=1), False)}
    for name, (X, scale, exact) in cases.items():
        assert kernels._Operands(X, scale, np.zeros(6), "test").exact is exact, name
        if scale is None:
            ref_d, ref_i = _reference(X, 4)
            sq, ind = kernels.exact_knn(X, None, 4)
            np.testing.assert_array_equal(ind, ref_i, err_msg=name)
            np.testing.assert_allclose(np.sqrt(sq), ref_d, rtol=1e-12, err_msg=name)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**16), n=st.integers(3, 120), d=st.integers(1, 9), k=st.integers(1, 15),
       levels=st.integers(1, 5), repeats=st.integers(0, 30))
def test_integer_rows_with_repeats_match_cdist(jit, seed, n, d, k, levels, repeats):
    """Small-integer rows with repeated rows (ties at every distance, 0 included), in blocks of a few points: the
    stable sort of cdist, in the dask tiles' cross search too (rows of one part among the other's)."""
    from isotropy._kernels import neighbors as kernels

    rng = np.random.default_rng(seed)
    X = rng.integers(-levels, levels + 1, (n, d)).astype(np.float64)
    if repeats:
        X[rng.integers(0, n, repeats)] = X[rng.integers(0, n, repeats)]
    k = min(k, n - 1)
    ref_d, ref_i = _reference(X, k)
    sq, ind = kernels.exact_knn(X, None, k, block=int(rng.integers(k + 1, max(k + 2, n) + 1)))
    np.testing.assert_array_equal(ind, ref_i)
    np.testing.assert_array_equal(np.sqrt(sq), ref_d)
    n_p = int(rng.integers(1, n))
    (sq_p, ind_p), (sq_q, ind_q) = kernels.exact_knn_cross(X, None, n_p, k)
    for rows, cols, got, got_sq in ((slice(0, n_p), slice(n_p, n), ind_p, sq_p), (slice(n_p, n), slice(0, n_p), ind_q,
                                                                                 sq_q)):
        D = cdist(X[rows], X[cols])
        kk = min(k, D.shape[1])
        order = np.argsort(D, axis=1, kind="stable")[:, :kk]
        np.testing.assert_array_equal(got[:, :kk], order + cols.start)
        np.testing.assert_array_equal(np.sqrt(got_sq[:, :kk]), np.take_along_axis(D, order, axis=1))


@pytest.mark.parametrize("jit", ["1"], indirect=True)
@pytest.mark.parametrize("d", [1, 3, 7, 50, 384])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_compiled_distances_have_the_same_bits_in_any_group(jit, d, dtype, metric):
    """The compiled exact distances sum four candidates at a time (``_squared4``); a candidate's squared distance
    has the same bits whatever its place in a group and whatever the group's size (a tile of the dask search
    groups other candidates than the in-memory search), and is within the rounding the certificate allows of
    ``math.fsum`` of its float64 squared differences."""
    import math

    from isotropy._kernels import neighbors as kernels

    module = kernels.compiled_kernels(10, d)
    rng = np.random.default_rng(d)
    X = rng.standard_normal((60, d)).astype(dtype)
    scale = 1 / np.linalg.norm(X.astype(np.float64), axis=1) if metric == "cosine" else np.empty(0)
    y = X.astype(np.float64) * (scale[:, None] if scale.size else 1.0)
    for row in (0, 17, 59):
        cand = rng.choice(60, size=11, replace=False)
        seen = {}
        for shift in range(4):
            for size in (1, 2, 3, 4, 5, 11):
                c = np.roll(cand, shift)[:size]
                out = np.empty((1, size))
                module.sq_distances(X, scale, np.array([row]), c[None, :], out)
                for j, value in zip(c, out[0]):
                    assert seen.setdefault(int(j), value) == value  # the same bits
        for j, value in seen.items():
            exact = math.fsum((y[j] - y[row]) ** 2)
            assert abs(value - exact) <= (d + 4) * np.finfo(np.float64).eps * exact


def _with_repeats(rng, n, d, distinct, metric):
    """``n`` rows: half of them distinct Gaussian rows, the rest drawn from ``distinct`` rows (large groups of
    repeats); under the cosine metric, some repeats are positive multiples (parallel rows)."""
    X = rng.standard_normal((n, d))
    pool = rng.standard_normal((distinct, d))
    at = rng.choice(n, n // 2, replace=False)
    X[at] = pool[rng.integers(0, distinct, at.size)]
    if metric == "cosine":
        X[at[::3]] *= rng.choice([0.5, 2.0, 4.0], size=(at[::3].size, 1))
    return X


def _reference_of(X, metric, k):
    """The stable sort (ties by index) of the exact distances between the kernel's own representation rows."""
    from isotropy._kernels.neighbors import _prepare, _representation

    R = _representation(*_prepare(X, metric, "test"))
    D = cdist(R, R, "sqeuclidean")
    np.fill_diagonal(D, np.inf)
    order = np.argsort(D, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(D, order, axis=1), order


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**16), n=st.integers(3, 160), d=st.integers(1, 8), k=st.integers(1, 40),
       distinct=st.integers(1, 6), dtype=st.sampled_from([np.float32, np.float64]),
       metric=st.sampled_from(["euclidean", "cosine"]))
def test_repeated_rows_search_the_distinct_points_with_the_same_bits(jit, seed, n, d, k, distinct, dtype, metric):
    """Rows repeated more than ``m − k`` times: the search runs on the distinct points and reads each row's
    neighbours from its point's (``_search_distinct``); the neighbours are the stable sort of the exact
    distances, and the distances and indices are bit for bit those of the search of every row."""
    from isotropy._kernels import neighbors as kernels

    rng = np.random.default_rng(seed)
    X = _with_repeats(rng, n, d, distinct, metric).astype(dtype)
    k = min(k, n - 1)
    A, scale = kernels._prepare(X, metric, "test")
    sq, ind = kernels.exact_knn(A, scale, k, block=int(rng.integers(k + 1, n + 2)))
    ref_sq, ref_ind = _reference_of(X, metric, k)
    np.testing.assert_array_equal(ind, ref_ind)
    np.testing.assert_allclose(sq, ref_sq, rtol=4 * (d + 4) * np.finfo(np.float64).eps, atol=0)
    whole = kernels._search_points(A, scale, k, block=None, caller="test", search=None)
    np.testing.assert_array_equal(sq, whole[0])
    np.testing.assert_array_equal(ind, whole[1])


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_padding_rows_take_the_distinct_search_and_no_fallback(jit, metric, monkeypatch):
    """A quarter of the rows one padding row (as token embeddings with padding): every row of it, and every row
    it reaches, tied beyond the candidates, went to the float64 differences to every point (the "padded" kind of
    benchmarks/bench_neighbors_ties.py). Now the search of the distinct points runs, no
    fallback runs, and the neighbours are the stable sort of the exact distances."""
    from isotropy._kernels import neighbors as kernels

    def refused(*args, **kwargs):
        raise AssertionError("a float64 fallback ran")

    monkeypatch.setattr(kernels, "_exact_rows", refused)
    monkeypatch.setattr(kernels, "_float64_candidates", refused)
    searched = []
    inner = kernels._search_distinct
    monkeypatch.setattr(kernels, "_search_distinct", lambda *a, **kw: (searched.append(a[1]), inner(*a, **kw))[1])
    rng = np.random.default_rng(0)
    X = rng.standard_normal((600, 16)).astype(np.float32)
    X[::4] = X[1]
    dist, ind = kneighbors(X, n_neighbors=20, metric=metric)
    ref_sq, ref_ind = _reference_of(X, metric, 20)
    np.testing.assert_array_equal(ind, ref_ind)
    np.testing.assert_allclose(dist, kernels._finish(ref_sq, metric), rtol=1e-13, atol=0)
    assert len(searched) == 1


def test_a_tie_at_the_last_distinct_neighbour_needs_no_further_search(jit, monkeypatch):
    """One-hot rows of 80 categories, one repeated 20 times: every distinct point lies at √2 from every other, so
    the k + 1 distinct neighbours found end inside a tie; no further point can reach a list (its rows come after
    the first rows of those found), so no fallback runs, and the rows of the repeated category (40-59) come
    before the later categories (60-79) at √2, as the stable sort of cdist orders them. A review found a
    further search here that grew to every pair of distinct points on many one-hot categories."""
    from isotropy._kernels import neighbors as kernels

    def refused(*args, **kwargs):
        raise AssertionError("a float64 fallback ran")

    monkeypatch.setattr(kernels, "_exact_rows", refused)
    monkeypatch.setattr(kernels, "_float64_candidates", refused)
    X = np.vstack([np.eye(80)[:40], np.tile(np.eye(80)[40], (20, 1)), np.eye(80)[41:80]])
    for k in (1, 3, 25, 60, 98):
        sq, ind = kernels.exact_knn(X, None, k)
        ref_sq, ref_ind = _reference(X, k)
        np.testing.assert_array_equal(ind, ref_ind)
        np.testing.assert_array_equal(np.sqrt(sq), ref_sq)


def test_exact_scores_need_integer_rows_not_integer_differences(jit):
    """A fraction that rounds away beside a large integer (2⁻⁶⁰ − (−7) is 7.0 in float64) leaves the centred rows
    integers but not the rows: the scores are not exact, the certificate decides, and the neighbours are right
    (a review: rows differing by such fractions got each other's neighbours; the small counts below, whose zeros
    carry 1e-17 of noise, got wrong nearest neighbours on many rows)."""
    from isotropy._kernels import neighbors as kernels

    X = np.concatenate([np.arange(-30, 0), np.arange(16) * 2.0**-60, [1.0]])[:, None]
    assert not kernels._Operands(X, None, np.array([-7.0]), "test").exact
    for k in (1, 3):
        np.testing.assert_array_equal(kernels.exact_knn(X, None, k)[1], _reference(X, k)[1])
    rng = np.random.default_rng(1)
    Y = rng.integers(0, 4, size=(2000, 3)).astype(np.float64)
    zero = Y == 0
    Y[zero] = rng.standard_normal(zero.sum()) * 1e-17
    np.testing.assert_array_equal(kneighbors(Y, n_neighbors=1)[1], _reference(Y, 1)[1])


def test_repeat_candidates_read_every_column_and_leave_x_alone(jit):
    """``maybe_repeated`` keys every row by its projection on one random direction: sparse rows that agree on a few
    sampled columns (their zeros) are not flagged (a review: almost all were, and their comparison held a float64
    copy of them, several times X), equal rows always are (``-0.0`` as ``0.0``), and a float64 X is not written to."""
    from isotropy._kernels import neighbors as kernels

    rng = np.random.default_rng(0)
    S = (rng.random((2000, 300)) < 0.01) * rng.standard_normal((2000, 300))
    S[np.all(S == 0, axis=1), 0] = 1.0 + np.arange(np.all(S == 0, axis=1).sum())  # no two rows equal
    before = S.copy()
    assert not kernels.maybe_repeated(S, None).any()
    np.testing.assert_array_equal(S, before)
    S[7], S[1500] = S[3], -0.0 * S[3] + S[3]
    S[1500, S[3] == 0] = -0.0
    flagged = kernels.maybe_repeated(S, None)
    assert flagged[[3, 7, 1500]].all() and flagged.sum() == 3


def test_the_dimension_metrics_look_for_repeats_once(jit, monkeypatch):
    """The dimension metrics find the distinct points before their search (``maybe_repeated``, ``distinct_rows``);
    the kernel does not look again (``distinct=True``), while ``kneighbors`` itself looks once."""
    from isotropy._kernels import neighbors as kernels

    looked = []
    inner = kernels.maybe_repeated
    monkeypatch.setattr(kernels, "maybe_repeated", lambda *a: (looked.append(1), inner(*a))[1])
    X = np.random.default_rng(0).standard_normal((300, 8))
    X[::3] = X[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the duplicates' note
        iso.twonn_dimension(X)
        iso.mle_dimension(X, n_neighbors=5)
    assert looked == []
    kneighbors(X, n_neighbors=5)
    assert looked == [1]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**16), n=st.integers(3, 160), d=st.integers(1, 6), k=st.integers(1, 30),
       distinct=st.integers(1, 5), dtype=st.sampled_from([np.float32, np.float64]))
def test_cross_search_of_repeated_rows_reads_the_distinct_points(jit, seed, n, d, k, distinct, dtype):
    """The dask tiles' cross search (rows of one part among the other's) with rows repeated beyond the margin in
    either part: through the distinct points of both parts (``_cross_distinct``), bit for bit the search of every
    row (``_cross_points``), the stable sort of cdist, padded with ``inf`` and ``n`` past the other part's rows."""
    from isotropy._kernels import neighbors as kernels

    rng = np.random.default_rng(seed)
    X = _with_repeats(rng, n, d, distinct, "euclidean").astype(dtype)
    n_p = int(rng.integers(1, n))
    got = kernels.exact_knn_cross(X, None, n_p, k)
    whole = kernels._cross_points(X, None, n_p, k, caller="test", search=None)
    for (sq, ind), (sq_w, ind_w), rows, cols in zip(got, whole, (slice(0, n_p), slice(n_p, n)),
                                                     (slice(n_p, n), slice(0, n_p))):
        np.testing.assert_array_equal(sq, sq_w)
        np.testing.assert_array_equal(ind, ind_w)
        D = cdist(X[rows].astype(np.float64), X[cols].astype(np.float64), "sqeuclidean")
        kk = min(k, D.shape[1])
        order = np.argsort(D, axis=1, kind="stable")[:, :kk]
        np.testing.assert_array_equal(ind[:, :kk], order + cols.start)
        np.testing.assert_allclose(sq[:, :kk], np.take_along_axis(D, order, axis=1), rtol=1e-12, atol=0)
        assert np.isinf(sq[:, kk:]).all() and (ind[:, kk:] == n).all()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(200, 7), (1500, 384)])
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_distances_do_not_depend_on_the_memory_layout(dtype, shape, metric):
    """A Fortran-ordered array (the packaged GloVe vectors are one) or a strided view gave other last bits than the
    same values in C order, on dask and on torch (a user trial): the cosine metric's row norms were summed in the
    order of X's layout, and the compiled exact distances, vectorised for contiguous rows, summed strided rows in
    another order. The norms are now summed over contiguous rows, and the compiled loops search a C-ordered copy
    of such an X: the same bits on both loops."""
    import dask.array as da
    import torch

    import isotropy

    X = np.asfortranarray(np.random.default_rng(1).standard_normal(shape).astype(dtype))
    want_d, want_i = kneighbors(np.ascontiguousarray(X), n_neighbors=3, metric=metric)
    strided = np.repeat(X, 2, axis=1)[:, ::2]
    on_dask = [a.compute() for a in kneighbors(da.from_array(X, chunks=(shape[0] // 3, -1)), n_neighbors=3,
                                               metric=metric)]
    on_torch = [t.numpy() for t in kneighbors(torch.from_numpy(np.ascontiguousarray(X)), n_neighbors=3,
                                              metric=metric)]
    for got_d, got_i in (kneighbors(X, n_neighbors=3, metric=metric),
                         kneighbors(strided, n_neighbors=3, metric=metric), on_dask, on_torch):
        np.testing.assert_array_equal(got_d, want_d)
        np.testing.assert_array_equal(got_i, want_i)
    assert isotropy.twonn_dimension(X, metric=metric) == isotropy.twonn_dimension(np.ascontiguousarray(X),
                                                                                     metric=metric)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scaled", [False, True])
def test_repeated_rows_are_flagged_wherever_they_fall_in_the_chunks(dtype, scaled):
    """Equal rows get equal keys in any chunk and at any place in one (the first, the last, across chunk
    boundaries): every repeated row is flagged, and the distinct random rows are not."""
    from isotropy._kernels import repeats

    rng = np.random.default_rng(7)
    d = 48
    step = repeats._PROJECTED // d  # rows per chunk
    X = rng.standard_normal((3 * step + 17, d)).astype(dtype)
    for source, places in ((5, [step - 1, step, 2 * step + 3, X.shape[0] - 1]), (step + 1, [0, 3 * step])):
        X[places] = X[source]
    scale = rng.uniform(0.5, 2.0, X.shape[0]) if scaled else None
    if scaled:  # the rows as measured, X[i]·scale[i], equal: one scale for the copies of a row
        scale[[5, step - 1, step, 2 * step + 3, X.shape[0] - 1]] = scale[5]
        scale[[step + 1, 0, 3 * step]] = scale[step + 1]
    expected = np.zeros(X.shape[0], dtype=bool)
    expected[[5, step - 1, step, 2 * step + 3, X.shape[0] - 1, step + 1, 0, 3 * step]] = True
    np.testing.assert_array_equal(repeats.maybe_repeated(X, scale), expected)


@pytest.mark.parametrize("jit", ["1"], indirect=True)
def test_compiled_operand_panels_equal_numpys_bit_for_bit(jit):
    """The compiled loops build the left and right operand panels (contiguous and gathered rows) with the values the
    numpy loops build, bit for bit: the candidate pass scores the same products on either loops."""
    from isotropy._kernels import _neighbors_jit as compiled
    from isotropy._kernels import neighbors as kernels

    rng = np.random.default_rng(3)
    X = (rng.standard_normal((300, 37)) * 10.0 ** rng.integers(-3, 4, (300, 1)) + 5).astype(np.float32)
    centre = kernels._centre(X, None).astype(np.float32).astype(np.float64)
    ops = kernels._Operands(X, None, centre, "test")
    assert ops.low_centre is not None and ops.dtype == np.float32
    gathered = rng.permutation(300)[:101]
    for rows in (slice(13, 250), gathered):
        for side in ("left", "right"):
            ops.jit = None
            expected = getattr(ops, side)(rows, np.empty(300 * 39, dtype=np.float32)).copy()
            ops.jit = compiled
            got = getattr(ops, side)(rows, np.full(300 * 39, np.nan, dtype=np.float32))
            np.testing.assert_array_equal(got.view(np.int32), expected.view(np.int32))


def test_current_thresholds_are_tau_itself_once_every_point_has_one():
    """Before every point has a threshold (tau = -inf: its first block, a cross search's first blocks) there are no
    current ones and the block's own are used; from then on, a view of tau, which later raises show through."""
    from isotropy._kernels import neighbors as kernels

    best = kernels._Best(6, 2, offset=10)
    assert best.current(slice(10, 13)) is None
    best.tau[:5] = 1.0
    assert best.current(slice(10, 13)) is None and not best.ready  # one point has none yet
    best.tau[5] = 2.0
    view = best.current(slice(12, 16))
    np.testing.assert_array_equal(view, [1.0, 1.0, 1.0, 2.0])
    best.tau[3] = 4.0  # raised by another merge
    assert view[1] == 4.0 and best.ready
    assert kernels._Best64(3, 1).current(slice(0, 3)) is None
