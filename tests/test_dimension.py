"""Intrinsic dimension: TwoNN and Levina–Bickel MLE against scikit-dimension (same data, same
neighbours), hand-computed values, data of known dimension, duplicates and bad arguments."""

import re
import warnings

import numpy as np
import pytest
import skdim
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.neighbors import NearestNeighbors
from sklearn.utils.estimator_checks import check_estimator

from isotropy import local_mle_dimension, mle_dimension, twonn_dimension
from isotropy._utils.validation import IsotropyValueError
from isotropy.metrics.estimators import MLE, TwoNN


def _embedded_cube(n, d, D, seed):
    """``n`` points uniform in the unit ``d``-cube, rotated into ``D`` dimensions and shifted."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((D, d)))
    return rng.random((n, d)) @ Q.T + rng.standard_normal(D)


# ------------------------------------------------------------------ scikit-dimension reference

@pytest.mark.parametrize("D", [12, 40])  # skdim: k-NN search below 26 features, sorted distance rows above
@pytest.mark.parametrize("method", ["linear", "mle"])
@pytest.mark.parametrize("discard_fraction", [0.1, 0.3])
def test_twonn_matches_skdim(D, method, discard_fraction):
    X = _embedded_cube(1500, 4, D, seed=D)
    ours = twonn_dimension(X, discard_fraction=discard_fraction, method=method)
    ref = skdim.id.TwoNN(discard_fraction=discard_fraction, method=method).fit(X).dimension_
    assert isinstance(ours, float)
    assert ours == pytest.approx(ref, rel=1e-8)


def test_mle_matches_skdim_local_and_global():
    X = _embedded_cube(1200, 6, 30, seed=7)
    for k in (5, 20):
        fitted = {comb: skdim.id.MLE().fit(X, n_neighbors=k, comb=comb) for comb in ("mean", "mle", "median")}
        np.testing.assert_allclose(local_mle_dimension(X, n_neighbors=k), fitted["mean"].dimension_pw_, rtol=1e-8)
        assert mle_dimension(X, n_neighbors=k) == pytest.approx(fitted["mean"].dimension_, rel=1e-8)
        assert mle_dimension(X, n_neighbors=k, averaging="harmonic") == pytest.approx(fitted["mle"].dimension_, rel=1e-8)
        assert mle_dimension(X, n_neighbors=k, averaging="median") == pytest.approx(fitted["median"].dimension_, rel=1e-8)


def test_cosine_mle_matches_skdim_on_sklearn_cosine_neighbours():
    rng = np.random.default_rng(8)
    X = rng.standard_normal((800, 10)) @ rng.standard_normal((10, 48))
    knn = NearestNeighbors(n_neighbors=30, algorithm="brute", metric="cosine").fit(X).kneighbors()
    ref = skdim.id.MLE().fit(X, precomputed_knn_arrays=knn)
    np.testing.assert_allclose(local_mle_dimension(X, n_neighbors=30, metric="cosine"), ref.dimension_pw_, rtol=1e-8)
    assert mle_dimension(X, n_neighbors=30, metric="cosine", averaging="harmonic") == pytest.approx(ref.dimension_, rel=1e-8)


# ------------------------------------------------------------------ closed forms, known dimension

def test_hand_computed_values():
    # points 0, 1, 3, 7 on a line (embedded in 2-d). Neighbour distances:
    #   0: (1, 3, 7)  1: (1, 2, 6)  3: (2, 3, 4)  7: (4, 6, 7)
    X = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0], [7.0, 0.0]])
    T = np.array([[1, 3, 7], [1, 2, 6], [2, 3, 4], [4, 6, 7]], dtype=float)
    expected = 2 / (np.log(T[:, 2] / T[:, 0]) + np.log(T[:, 2] / T[:, 1]))
    np.testing.assert_allclose(local_mle_dimension(X, n_neighbors=3), expected, rtol=1e-14)
    with pytest.warns(UserWarning, match="n_neighbors=3 the mean of the local estimates has no finite variance"):
        assert mle_dimension(X, n_neighbors=3) == pytest.approx(expected.mean(), rel=1e-14)
    # TwoNN MLE without discarding: mu = (3, 2, 1.5, 1.5); d = (N - 1) / sum(log mu)
    mu = np.array([3, 2, 1.5, 1.5])
    assert twonn_dimension(X, discard_fraction=0, method="mle") == pytest.approx(3 / np.log(mu).sum(), rel=1e-14)
    # linear with discard 0.25: keep the 3 smallest, F = (1, 2, 3)/4
    x, y = np.log([1.5, 1.5, 2]), -np.log(1 - np.arange(1, 4) / 4)
    assert twonn_dimension(X, discard_fraction=0.25) == pytest.approx(x @ y / (x @ x), rel=1e-14)


@pytest.mark.parametrize("d", [2, 5])
def test_known_dimension(d):
    X = _embedded_cube(4000, d, 60, seed=d)
    assert twonn_dimension(X) == pytest.approx(d, rel=0.15)
    assert mle_dimension(X, n_neighbors=20) == pytest.approx(d, rel=0.15)
    assert np.median(local_mle_dimension(X, n_neighbors=50)) == pytest.approx(d, rel=0.15)


def test_invariances():
    X = _embedded_cube(600, 3, 10, seed=11)
    rng = np.random.default_rng(12)
    Q, _ = np.linalg.qr(rng.standard_normal((10, 10)))
    moved = 7.5 * X @ Q + 100.0  # rotation, scaling, translation
    assert twonn_dimension(moved) == pytest.approx(twonn_dimension(X), rel=1e-9)
    np.testing.assert_allclose(local_mle_dimension(moved, n_neighbors=10), local_mle_dimension(X, n_neighbors=10),
                               rtol=1e-9)
    perm = rng.permutation(600)
    np.testing.assert_allclose(local_mle_dimension(X[perm], n_neighbors=10), local_mle_dimension(X, n_neighbors=10)[perm],
                               rtol=1e-12)


# ------------------------------------------------------------------ duplicates, degenerate data

def test_duplicates_are_merged_with_a_warning():
    X = _embedded_cube(500, 3, 8, seed=13)
    dup = np.vstack([X, X[:20], X[:5]])  # 25 duplicate rows
    with pytest.warns(UserWarning, match="25 duplicate rows"):
        t = twonn_dimension(dup)
    assert t == pytest.approx(twonn_dimension(X), rel=1e-12)
    with pytest.warns(UserWarning, match="25 duplicate rows"):
        m = mle_dimension(dup, n_neighbors=10)
    assert m == pytest.approx(mle_dimension(X, n_neighbors=10), rel=1e-12)
    with pytest.warns(UserWarning, match="25 duplicate rows"):
        lid = local_mle_dimension(dup, n_neighbors=10)
    assert np.isfinite(lid).all() and lid.shape == (525,)
    ref = local_mle_dimension(X, n_neighbors=10)
    np.testing.assert_allclose(lid, np.concatenate([ref, ref[:20], ref[:5]]), rtol=1e-12)


def test_cosine_duplicates_are_parallel_vectors():
    rng = np.random.default_rng(14)
    X = rng.standard_normal((300, 6))
    with pytest.warns(UserWarning, match="10 duplicate rows"):
        lid = local_mle_dimension(np.vstack([X, 2.0 * X[:10]]), n_neighbors=8, metric="cosine")
    np.testing.assert_allclose(lid[300:], lid[:10], rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.integers(0, 30), st.sampled_from([None, "cosine"]))
def test_distinct_rows_from_the_repeated_ones_match_numpy_unique(seed, n, n_copies, metric):
    """The distinct points found by comparing only the rows at distance 0 from another are those of
    ``np.unique(axis=0)`` over every row: the same sets of equal rows, each with its first row."""
    from isotropy._kernels.neighbors import _prepare, _representation
    from isotropy._kernels.repeats import distinct_rows as _distinct

    rng = np.random.default_rng(seed)
    X = rng.integers(-2, 3, (n, 3)).astype(np.float64)  # coarse values: chance duplicates too
    X = np.vstack([X, X[rng.integers(0, n, n_copies)]])
    X[np.all(X == 0, axis=1)] = 1.0  # no zero rows (undefined for the cosine)
    X, scale = _prepare(X, metric or "euclidean", "test")
    R = _representation(X, scale)
    _, ref_first, ref_inverse = np.unique(R, axis=0, return_index=True, return_inverse=True)
    repeated = np.array([(np.all(R == R[i], axis=1).sum() > 1) for i in range(R.shape[0])])
    first, inverse = _distinct(X, scale, repeated)
    np.testing.assert_array_equal(first, np.sort(ref_first))
    np.testing.assert_array_equal(R[first][inverse], R)  # every row is its distinct point
    np.testing.assert_array_equal(first[inverse] <= np.arange(R.shape[0]), True)  # the first equal row
    # the same partition of the rows as numpy's
    np.testing.assert_array_equal(ref_inverse.reshape(-1)[first][inverse], ref_inverse.reshape(-1))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.integers(0, 30), st.integers(1, 40),
       st.sampled_from(["euclidean", "cosine"]))
def test_candidate_duplicates_hold_every_repeated_row(seed, n, n_copies, d, metric):
    """The rows compared whole for duplicates (equal on a few columns) include every row equal to another,
    ``-0.0`` and ``0.0`` alike, and for the cosine every positive multiple of another row."""
    from isotropy._kernels.neighbors import _prepare, _representation
    from isotropy._kernels.repeats import maybe_repeated as _maybe_repeated

    rng = np.random.default_rng(seed)
    X = rng.integers(-2, 3, (n, d)).astype(np.float64)
    X[np.all(X == 0, axis=1), 0] = 1.0  # no zero rows (undefined for the cosine)
    copies = X[rng.integers(0, n, n_copies)] * (2.0 if metric == "cosine" else 1.0)
    copies[copies == 0] = -0.0
    X, scale = _prepare(np.vstack([X, copies]), metric, "test")
    R = _representation(X, scale)
    repeated = np.array([(np.all(R == R[i], axis=1).sum() > 1) for i in range(R.shape[0])])
    assert np.all(_maybe_repeated(X, scale)[repeated])


def test_too_few_distinct_points():
    X = np.repeat(np.eye(3), 4, axis=0)  # 12 rows, 3 distinct points
    with pytest.raises(IsotropyValueError, match=r"more than n_neighbors=3 distinct points. Got 3 distinct points \(9 duplicate"):
        mle_dimension(X, n_neighbors=3)
    with pytest.raises(IsotropyValueError, match=r"twonn_dimension must have more than 2 distinct points \(TwoNN reads the two nearest neighbours of each\). Got 2"):
        twonn_dimension(X[:5])  # 4 copies of e1 and e2


def _neighbour_dimensions(X, **kwargs):
    from isotropy.metrics.dimension import neighbour_dimensions

    return neighbour_dimensions(X, **kwargs)


TEN_TIMES_THREE = np.repeat(np.random.default_rng(0).normal(size=(10, 4)), 3, axis=0)  # 30 rows, 10 distinct


@pytest.mark.parametrize("func", [mle_dimension, local_mle_dimension, _neighbour_dimensions],
                         ids=["mle_dimension", "local_mle_dimension", "neighbour_dimensions"])
@pytest.mark.parametrize(("X", "k", "got"), [
    (np.ones((5, 3)), None, "1 distinct point (4 duplicate rows)"),  # the default k (20, 100), past the 5 rows too
    (TEN_TIMES_THREE, 10, "10 distinct points (20 duplicate rows)"),  # within [2, n_samples - 1]
    (TEN_TIMES_THREE, 29, "10 distinct points (20 duplicate rows)"),
    (TEN_TIMES_THREE, 30, "10 distinct points (20 duplicate rows)"),  # past n_samples - 1 as well
    (TEN_TIMES_THREE, 500, "10 distinct points (20 duplicate rows)"),
], ids=["5-identical-default", "k=10", "k=29", "k=30", "k=500"])
def test_n_neighbors_limited_by_the_distinct_points_says_so(func, X, k, got):
    """Where the duplicates are what limits k, every k past them gets the one message that says so, not a range
    [2, n_samples - 1] that the distinct points do not allow either."""
    name = func.__name__.lstrip("_")
    kwargs = {} if k is None else {"n_neighbors": k}
    k = (100 if func is local_mle_dimension else 20) if k is None else k  # their defaults
    with pytest.raises(IsotropyValueError, match=rf"^The 'X' parameter of {name} must have more than n_neighbors={k} "
                                                 rf"distinct points\. Got {re.escape(got)} instead\.$"):
        func(X, **kwargs)


@pytest.mark.parametrize("k", [1, 2.5])
def test_an_n_neighbors_wrong_whatever_the_data_names_n_neighbors(k):
    with pytest.raises((IsotropyValueError, TypeError), match=r"^The 'n_neighbors' parameter of mle_dimension must be "
                                                             r"an int in the range \[2, 29\]"):
        mle_dimension(TEN_TIMES_THREE, n_neighbors=k)


def test_n_neighbors_past_the_rows_of_distinct_data_names_the_range():
    torch = pytest.importorskip("torch")
    X = np.random.default_rng(0).normal(size=(5, 3))
    for data in (X, torch.tensor(X)):
        with pytest.raises(IsotropyValueError, match=r"^The 'n_neighbors' parameter of mle_dimension must be an int in "
                                                     r"the range \[2, 4\] \(at most n_samples - 1 = 4 for 5 samples\)\. Got 20 instead\.$"):
            mle_dimension(data)
    with pytest.raises(IsotropyValueError, match=r"^The 'X' parameter of mle_dimension must have more than "
                                                 r"n_neighbors=20 distinct points\. Got 1 distinct point"):
        mle_dimension(torch.ones(5, 3, dtype=torch.float64))


def test_the_estimator_lowers_n_neighbors_to_the_distinct_points_as_documented():
    """MLE (the scikit-learn estimator) lowers k to n_distinct - 1 with a warning, as scikit-dimension's MLE does
    (its docstring says so); the function refuses. Both agree once k fits."""
    with pytest.warns(UserWarning) as warned:
        est = MLE(n_neighbors=500).fit(TEN_TIMES_THREE)
    assert any("n_neighbors=500 is not below the 10 distinct points; using n_neighbors=9" in str(w.message)
               for w in warned)
    assert est.n_neighbors_ == 9
    with pytest.warns(UserWarning, match="20 duplicate rows"):
        assert est.dimension_ == pytest.approx(mle_dimension(TEN_TIMES_THREE, n_neighbors=9), rel=1e-12)


@pytest.mark.parametrize("how", ["function", "method_mle", "neighbour_dimensions"])
def test_twonn_on_tied_neighbour_distances_names_the_ties(how):
    """Binary data: most points have their first and second neighbours at the same distance, r2/r1 = 1,
    so every ratio kept is 1, log(r2/r1) = 0 and the fit is 0/0. The error says so, with the count of
    such points, and what to do; not "distances at the limits of float64" (scikit-dimension returns 0)."""
    B = (np.random.default_rng(0).normal(size=(50, 6)) > 0).astype(float)  # 34 distinct rows, 32 with r2/r1 = 1
    if how == "function":
        call, caller = lambda: twonn_dimension(B), "twonn_dimension"
    elif how == "method_mle":  # (K - 1) / 0: it gave inf
        call, caller = lambda: twonn_dimension(B, method="mle"), "twonn_dimension"
    elif how == "neighbour_dimensions":
        from isotropy.metrics.dimension import neighbour_dimensions

        call, caller = lambda: neighbour_dimensions(B, mle=False), "neighbour_dimensions"
    # (the dask path: tests/test_distributed.py, which the core install's CI job does not run)
    with pytest.warns(UserWarning, match="16 duplicate rows"), pytest.raises(IsotropyValueError) as info:
        call()
    message = str(info.value)
    assert message.startswith(f"The 'X' parameter of {caller} must have unequal first and second neighbour distances "
                              f"at more than 4 of its 34 distinct points")
    assert "Got 2 instead: 32 points have r2/r1 = 1" in message
    assert "jitter" in message and "another estimator" in message
    assert "limits of float64" not in message and "\n" not in message


LATTICE = np.array([[i, j] for i in range(12) for j in range(12)], dtype=float)  # integer grid: exact distance ties


def test_neighbour_dimensions_gives_nan_for_the_estimate_the_data_refuse_and_the_others_values():
    """A square lattice: every point has its first and second neighbours at distance 1 (r2/r1 = 1), so TwoNN is
    undefined, while the MLE, whose k = 10 distances are not all equal, is defined. The call raised TwoNN's refusal
    and gave no MLE; now TwoNN is NaN with one warning naming it and giving its refusal, and the MLE and the local
    MLE are those of mle_dimension / local_mle_dimension alone and of scikit-dimension's MLE (no duplicates here)."""
    from isotropy.metrics.dimension import neighbour_dimensions

    with pytest.raises(IsotropyValueError) as twonn_alone:
        twonn_dimension(LATTICE)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = neighbour_dimensions(LATTICE, n_neighbors=10, local_mle=True)
    assert set(out) == {"twonn_dimension", "mle_dimension", "local_mle_dimension"}
    assert isinstance(out["twonn_dimension"], float) and np.isnan(out["twonn_dimension"])
    assert out["mle_dimension"] == pytest.approx(mle_dimension(LATTICE, n_neighbors=10), rel=1e-12)
    np.testing.assert_allclose(out["local_mle_dimension"], local_mle_dimension(LATTICE, n_neighbors=10), rtol=1e-12)
    ref = skdim.id.MLE().fit(LATTICE, n_neighbors=10, comb="mean")
    assert out["mle_dimension"] == pytest.approx(ref.dimension_, rel=1e-8)
    np.testing.assert_allclose(out["local_mle_dimension"], ref.dimension_pw_, rtol=1e-8)
    refusal = str(twonn_alone.value).replace("of twonn_dimension", "of neighbour_dimensions")
    assert "144 points have r2/r1 = 1" in refusal
    warned = "twonn_dimension: undefined on these data, so it is NaN (mle_dimension, local_mle_dimension computed): "
    assert [str(w.message) for w in caught] == [warned + refusal]
    assert {w.filename for w in caught} == {__file__}  # the warning points at the caller's line


def test_neighbour_dimensions_raises_when_every_estimate_asked_for_is_undefined():
    """Nothing measured is an error, not a dict of NaN: TwoNN alone on the lattice raises its refusal, as before; an
    option no data could meet (discard_fraction=0 with the linear fit) stays an error of the call beside the MLE."""
    from isotropy.metrics.dimension import neighbour_dimensions

    with pytest.raises(IsotropyValueError, match="^The 'X' parameter of neighbour_dimensions must have unequal first "
                                                 "and second neighbour distances at more than 15 of its 144 distinct"):
        neighbour_dimensions(LATTICE, mle=False)
    with pytest.raises(IsotropyValueError, match="^The 'discard_fraction' parameter of neighbour_dimensions must "
                                                 "leave out at least the largest ratio"):
        neighbour_dimensions(_embedded_cube(300, 3, 8, seed=1), discard_fraction=0.0)


def test_every_estimate_refused_for_its_own_reason_is_one_error_naming_each():
    """Where the estimates asked for fail for different reasons, the call's error gives each (one line); where they
    share one refusal (the MLE and the local MLE read one computation) it is that refusal itself."""
    from isotropy._kernels.dimension import undefined_estimates

    ties, nan = IsotropyValueError("ties."), IsotropyValueError("nan.")
    with pytest.raises(IsotropyValueError) as both:
        undefined_estimates({"twonn_dimension": ties, "mle_dimension": nan}, ["twonn_dimension", "mle_dimension"],
                            "neighbour_dimensions")
    assert str(both.value) == ("The 'X' parameter of neighbour_dimensions must allow at least one of the estimates "
                               "asked for. Got none instead: twonn_dimension: ties; mle_dimension: nan.")
    with pytest.raises(IsotropyValueError) as shared:
        undefined_estimates({"mle_dimension": nan, "local_mle_dimension": nan},
                            ["mle_dimension", "local_mle_dimension"], "neighbour_dimensions")
    assert shared.value is nan


def test_equidistant_neighbours_warn_and_give_inf():
    X = np.eye(6)  # all pairwise distances sqrt(2)
    with pytest.warns(UserWarning, match="6 points have all their 3 nearest neighbours at the same distance"):
        lid = local_mle_dimension(X, n_neighbors=3)
    assert np.isinf(lid).all()


# ------------------------------------------------------------------ torch, arguments

def test_torch_input():
    torch = pytest.importorskip("torch")
    X = _embedded_cube(400, 3, 12, seed=15)
    T = torch.tensor(X)
    t = twonn_dimension(T)
    assert isinstance(t, torch.Tensor) and t.ndim == 0 and t.dtype == torch.float64
    assert float(t) == pytest.approx(twonn_dimension(X), rel=1e-12)
    lid = local_mle_dimension(T, n_neighbors=10, metric="cosine")
    assert lid.shape == (400,) and lid.device == T.device
    np.testing.assert_allclose(lid.numpy(), local_mle_dimension(X, n_neighbors=10, metric="cosine"), rtol=1e-12)
    m = mle_dimension(T.float(), averaging="harmonic")
    assert m.dtype == torch.float32
    assert float(m) == pytest.approx(mle_dimension(X.astype(np.float32), averaging="harmonic"), rel=1e-6)


@pytest.mark.parametrize(("func", "kwargs", "match"), [
    (twonn_dimension, {"discard_fraction": 1.0}, r"'discard_fraction' parameter of twonn_dimension must be a float in the range \[0, 1\)"),
    (twonn_dimension, {"discard_fraction": -0.1}, r"range \[0, 1\). Got -0.1 instead"),
    (twonn_dimension, {"discard_fraction": 0.0}, r"must leave out at least the largest ratio with method='linear'"),
    (twonn_dimension, {"discard_fraction": 0.95}, r"must keep at least 2 of the 20 distinct points"),
    (twonn_dimension, {"method": "ols"}, r"'method' parameter of twonn_dimension must be one of \{'linear', 'mle'\}"),
    (mle_dimension, {"n_neighbors": 1}, r"'n_neighbors' parameter of mle_dimension must be an int in the range \[2, 19\]"),
    (mle_dimension, {"n_neighbors": 20}, r"range \[2, 19\] \(at most n_samples - 1 = 19 for 20 samples\)\. Got 20 instead"),
    (mle_dimension, {"averaging": "geometric"}, r"'averaging' parameter of mle_dimension must be one of"),
    (local_mle_dimension, {"n_neighbors": 100}, r"'n_neighbors' parameter of local_mle_dimension .* Got 100"),
    (local_mle_dimension, {"n_neighbors": 5, "metric": "l1"}, r"'metric' parameter of local_mle_dimension"),
])
def test_bad_arguments(func, kwargs, match):
    X = np.random.default_rng(0).standard_normal((20, 4))
    with pytest.raises(IsotropyValueError, match=match):
        func(X, **kwargs)


def test_bad_data():
    with pytest.raises(IsotropyValueError, match="at least 3 samples"):
        twonn_dimension(np.zeros((2, 3)))
    with pytest.raises(IsotropyValueError, match="finite"):
        mle_dimension(np.array([[np.inf, 0.0]] * 5), n_neighbors=2)
    with pytest.raises(IsotropyValueError, match="2-d array"):
        local_mle_dimension(np.zeros((4, 2, 2)), n_neighbors=2)


# ------------------------------------------------------------------ estimator classes

@pytest.mark.filterwarnings("ignore::UserWarning")  # MLE lowers n_neighbors on the checks' tiny data
@pytest.mark.parametrize("estimator", [TwoNN(), MLE()], ids=["TwoNN", "MLE"])
def test_sklearn_estimator_contract(estimator):
    results = check_estimator(estimator, on_fail=None)
    failed = [(r["check_name"], str(r["exception"])) for r in results if r["status"] == "failed"]
    assert len(results) > 30 and not failed


def test_estimators_wrap_the_functions():
    X = _embedded_cube(700, 4, 16, seed=16)
    assert TwoNN(method="mle").fit(X).dimension_ == twonn_dimension(X, method="mle")
    est = MLE(n_neighbors=12, metric="cosine", averaging="harmonic").fit(X)
    assert est.dimension_ == pytest.approx(mle_dimension(X, n_neighbors=12, metric="cosine", averaging="harmonic"),
                                           rel=1e-12)
    np.testing.assert_allclose(est.dimension_pw_, local_mle_dimension(X, n_neighbors=12, metric="cosine"), rtol=1e-12)
    ref = skdim.id.MLE().fit(X, n_neighbors=12)  # scikit-dimension's estimator, same neighbours count
    assert MLE(n_neighbors=12, averaging="harmonic").fit(X).dimension_ == pytest.approx(ref.dimension_, rel=1e-8)


def test_twonn_estimator_errors_and_warnings_name_the_class():
    """A new-user trial: TwoNN(discard_fraction=2).fit(X) said "The 'discard_fraction' parameter of twonn_dimension",
    a function the user never called, where MLE.fit's errors name MLE.fit. The same checks now name TwoNN.fit, and
    the function's own messages are unchanged."""
    X = _embedded_cube(100, 3, 6, seed=18)
    refusals = [({"discard_fraction": 2}, r"'discard_fraction' parameter of TwoNN\.fit must be a float in the range"),
                ({"method": "x"}, r"'method' parameter of TwoNN\.fit must be one of \{'linear', 'mle'\}"),
                ({"metric": "manhattan"}, r"'metric' parameter of TwoNN\.fit must be one of")]
    for params, message in refusals:
        with pytest.raises(IsotropyValueError, match=message):
            TwoNN(**params).fit(X)
        with pytest.raises(IsotropyValueError, match=message.replace(r"TwoNN\.fit", "twonn_dimension")):
            twonn_dimension(X, **params)
    with pytest.raises(IsotropyValueError, match=r"'X' parameter of TwoNN\.fit must have no zero rows with metric='cosine'"):
        TwoNN(metric="cosine").fit(np.vstack([X, np.zeros((1, 6))]))
    with pytest.raises(IsotropyValueError, match=r"'X' parameter of TwoNN\.fit must have more than 2 distinct points "
                                                 r"\(TwoNN reads the two nearest neighbours of each\)"):
        TwoNN().fit(np.ones((10, 4)))
    # the warnings name the caller and point at the user's line (TwoNN.fit's pointed into isotropy's estimators.py)
    with pytest.warns(UserWarning, match=r"^TwoNN\.fit: 10 distance ratios kept \(of 12 points\)") as record:
        dimension = TwoNN().fit(X[:12]).dimension_
    assert record[0].filename == __file__
    with pytest.warns(UserWarning, match=r"^twonn_dimension: 10 distance ratios kept") as record:
        assert dimension == twonn_dimension(X[:12])
    assert record[0].filename == __file__
    with pytest.warns(UserWarning, match=r"^TwoNN\.fit: X has 2 duplicate rows") as record:
        TwoNN().fit(np.vstack([X, X[:2]]))
    assert [w.filename for w in record] == [__file__]


def test_mle_estimator_lowers_n_neighbors_for_small_data():
    X = _embedded_cube(10, 2, 5, seed=17)
    with pytest.warns(UserWarning, match="using n_neighbors=9"):
        est = MLE().fit(X)
    assert est.n_neighbors_ == 9
    np.testing.assert_allclose(est.dimension_pw_, local_mle_dimension(X, n_neighbors=9), rtol=1e-12)


def test_mle_mean_carried_by_one_far_point_warns():
    """One row 1e8 times the others (a new-user trial): its 20 neighbours are at about the same distance, its local
    estimate is ~5e8 and the mean of 600 local estimates read 820,848 for 16-dimensional data, without a word. The
    harmonic mean (scikit-dimension's default pooling) and the median stay near the dimension."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 16)) * np.linspace(0.3, 2.0, 16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # ordinary data: no warning
        plain = mle_dimension(X)
    X[5] *= 1e8
    with pytest.warns(UserWarning, match=r"mean of the local estimates \(.*\) is more than twice their median"):
        carried = mle_dimension(X)
    assert carried > 1000 * plain
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mle_dimension(X, averaging="harmonic") == pytest.approx(plain, rel=0.05)
    X[5] *= 1e22  # all its neighbours at one distance: an infinite local estimate, one warning that says what helps
    with pytest.warns(UserWarning, match="averaging='harmonic' or 'median'") as record:
        assert mle_dimension(X) == np.inf
    assert len(record) == 1


def test_neighbour_dimensions_with_nothing_to_measure_is_refused():
    # returned {} without a word
    from isotropy.metrics.dimension import neighbour_dimensions

    with pytest.raises(IsotropyValueError, match="^neighbour_dimensions needs at least one of twonn, mle and local_mle"):
        neighbour_dimensions(np.random.default_rng(0).normal(size=(50, 3)), twonn=False, mle=False)


@pytest.mark.parametrize("name", ["twonn_dimension", "mle_dimension", "local_mle_dimension"])
def test_distinct_rows_whose_distance_underflows_are_refused_not_merged_as_duplicates(name):
    # rows at 1e150 and 1e-150: brought to unit scale, the small rows' squared differences underflow to 0. They were
    # merged as "duplicate rows (... or parallel to it to the input's precision)" with a value from the rest (3.99);
    # the dask estimators refused them. Now both refuse, in one message
    import isotropy

    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(30, 3)) * 1e150, rng.normal(size=(30, 3)) * 1e-150])
    kwargs = {} if name == "twonn_dimension" else {"n_neighbors": 5}
    with pytest.raises(IsotropyValueError, match=rf"^The 'X' parameter of {name} must have its distinct rows at a "
                                                 r"nonzero float64 distance .* Got 30 distinct row\(s\) at distance 0"):
        getattr(isotropy, name)(X, **kwargs)


def test_twonn_from_a_few_points_warns_of_its_standard_error():
    """3 points gave 3.6 with nothing said; below 25 ratios kept (1/sqrt(K) above 20 %) it is said, with the count."""

    rng = np.random.default_rng(0)
    with pytest.warns(UserWarning, match=r"^twonn_dimension: 2 distance ratios kept \(of 3 points\): the estimate's "
                                         r"relative standard error is about 1/sqrt\(2\) = 71 %; measure at least 28 "
                                         r"points for 20 %\.$"):
        twonn_dimension(rng.normal(size=(3, 8)))
    with pytest.warns(UserWarning, match=r"24 distance ratios kept \(of 25 points\)"):
        twonn_dimension(rng.normal(size=(25, 8)), discard_fraction=0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        twonn_dimension(rng.normal(size=(28, 8)))  # 25 kept: nothing said


def test_twonn_says_an_estimate_above_the_span_of_its_points():
    """10 points of a 32-d model read 26 and 28 (a trial's probe), where 10 points span at most 9 dimensions: only the
    standard-error warning said anything. An estimate above N - 1 is now said to be noise; the value is unchanged, and
    points of a low-dimensional set get no such warning."""
    X = np.random.default_rng(0).normal(size=(10, 32))
    with pytest.warns(UserWarning) as caught:
        value = twonn_dimension(X)
    said = [str(w.message) for w in caught if "the estimate is above" in str(w.message)]
    assert value > 9 and said == [
        ("twonn_dimension: the estimate is above the 9 dimensions that 10 distinct points span at most: it is the noise "
        "of their few distance ratios, not a dimension of the data; measure more points.")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert twonn_dimension(X) == value
    low = np.random.default_rng(1).normal(size=(200, 2)) @ np.random.default_rng(2).normal(size=(2, 32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert 1.5 < twonn_dimension(low) < 2.5
