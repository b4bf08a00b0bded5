"""Under the cosine metric a row and its positive multiple are one point (cosine distance 0).

A new-user trial: 200 rows that were positive multiples of others (``c·x``, c in [0.5, 4]) came out of the exact
search about 1e-32 apart, were not merged as duplicates, and TwoNN read 0.02 for a true 4.2. Rows parallel to
another to the precision of their values (:func:`isotropy._kernels.dimension.parallel_radius`) are now merged like
equal rows, with the same warning. Reference: the estimators on the rows without the copies, and TwoNN under the
cosine metric is half the euclidean TwoNN of the unit rows (the cosine distance is half the squared chord, so each
ratio r2/r1 is squared), which scikit-dimension gives.
"""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
import torch

import isotropy
from isotropy import distributed
from isotropy.metrics.dimension import neighbour_dimensions

rng = np.random.default_rng(0)
X = rng.normal(size=(1000, 10))
COPIES = rng.uniform(0.5, 4.0, (200, 1)) * X[:200]  # positive multiples of the first 200 rows
A = np.vstack([X, COPIES])
WARNING = r"X has 200 duplicate rows \(at cosine distance 0 from another row, or parallel to it to the input's precision\)"


def test_twonn_of_scaled_copies_is_that_of_the_distinct_rows():
    skdim = pytest.importorskip("skdim")
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    reference = skdim.id.TwoNN(discard_fraction=0.1).fit(U).dimension_ / 2.0
    assert isotropy.twonn_dimension(X, metric="cosine") == pytest.approx(reference, rel=1e-9)
    with pytest.warns(UserWarning, match=WARNING):
        assert isotropy.twonn_dimension(A, metric="cosine") == pytest.approx(reference, rel=1e-9)


@pytest.mark.parametrize("averaging", ["mean", "harmonic"])
def test_mle_and_local_mle_of_scaled_copies(averaging):
    with pytest.warns(UserWarning, match=WARNING):
        got = isotropy.mle_dimension(A, metric="cosine", averaging=averaging)
    assert got == pytest.approx(isotropy.mle_dimension(X, metric="cosine", averaging=averaging), rel=1e-12)
    with pytest.warns(UserWarning, match=WARNING):
        local = isotropy.local_mle_dimension(A, metric="cosine", n_neighbors=20)
    distinct = isotropy.local_mle_dimension(X, metric="cosine", n_neighbors=20)
    np.testing.assert_allclose(local, np.concatenate([distinct, distinct[:200]]), rtol=1e-12)  # a copy: its point's


def test_float32_normalised_copies_and_torch_input():
    B = np.vstack([X, X[:200] / np.linalg.norm(X[:200], axis=1, keepdims=True)]).astype(np.float32)
    expected = isotropy.twonn_dimension(X.astype(np.float32), metric="cosine")
    with pytest.warns(UserWarning, match=WARNING):
        assert isotropy.twonn_dimension(B, metric="cosine") == pytest.approx(expected, rel=1e-12)
    with pytest.warns(UserWarning, match=WARNING):
        got = isotropy.twonn_dimension(torch.from_numpy(A), metric="cosine")
    assert float(got) == pytest.approx(isotropy.twonn_dimension(X, metric="cosine"), rel=1e-12)


def test_close_but_distinct_directions_are_not_merged():
    """A direction 1e-6 rad away is a point of its own (cosine distance 5e-13, far above the radius)."""
    other = rng.normal(size=(200, 10))
    other -= (other * X[:200]).sum(1, keepdims=True) / (X[:200] ** 2).sum(1, keepdims=True) * X[:200]
    near = X[:200] + 1e-6 * np.linalg.norm(X[:200], axis=1, keepdims=True) * other / np.linalg.norm(
        other, axis=1, keepdims=True)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no duplicate warning
        value = isotropy.twonn_dimension(np.vstack([X, near]), metric="cosine")
    assert value < 1.0  # 200 pairs at distance 5e-13: TwoNN reads them, as it should
    assert isotropy.twonn_dimension(np.vstack([X, near])) < 1.0  # and so does the euclidean metric


def test_euclidean_metric_keeps_scaled_copies_apart():
    assert isotropy.twonn_dimension(A) != pytest.approx(isotropy.twonn_dimension(X), rel=1e-3)


def test_dask_merges_parallel_rows_as_in_memory_for_twonn_and_mle():
    # a dask array of scaled copies was refused (the same data gave a value in memory); local_mle_dimension too,
    # when its lazy result was computed: it now searches at the call and gives each copy its point's estimate
    assert distributed.twonn_dimension(da.from_array(X, chunks=300), metric="cosine") == pytest.approx(
        isotropy.twonn_dimension(X, metric="cosine"), rel=1e-12)
    # the in-memory warning, word for word (dask warned "X has 200 rows parallel to another", in words of its own)
    for function, options in ((distributed.twonn_dimension, {}), (distributed.mle_dimension, {}),
                              (distributed.mle_dimension, {"averaging": "harmonic", "n_neighbors": 7})):
        with pytest.warns(UserWarning, match=rf"^{function.__name__}: {WARNING}") as in_memory:
            expected = getattr(isotropy, function.__name__)(A, metric="cosine", **options)
        with pytest.warns(UserWarning) as on_dask:
            got = function(da.from_array(A, chunks=300), metric="cosine", **options)
        assert [str(w.message) for w in on_dask] == [str(w.message) for w in in_memory]
        assert got == pytest.approx(expected, rel=1e-12)
    with pytest.warns(UserWarning, match=WARNING):
        expected = isotropy.local_mle_dimension(A, metric="cosine", n_neighbors=10)
    with pytest.warns(UserWarning, match=rf"^local_mle_dimension: {WARNING}"):
        got = distributed.local_mle_dimension(da.from_array(A, chunks=300), metric="cosine", n_neighbors=10)
    assert got.chunks == da.from_array(A, chunks=300).chunks[:1]
    np.testing.assert_allclose(got.compute(), expected, rtol=1e-12)


def test_half_precision_copies_are_judged_at_the_precision_they_came_in():
    """float16 (read as float32 on dask) and bfloat16 tensors (read as float32 in memory): normalised copies are
    parallel only to their own precision. A review found dask measuring float16 copies silently (0.106 for 3.86)
    and bfloat16 copies not merged (0.14 for 3.85)."""
    U = X[:300]
    copies = U[:60] / np.linalg.norm(U[:60], axis=1, keepdims=True)
    half = np.vstack([U, copies]).astype(np.float16)
    with pytest.warns(UserWarning, match="X has 60 duplicate rows"):
        expected = isotropy.twonn_dimension(half, metric="cosine")
    assert expected == pytest.approx(isotropy.twonn_dimension(U.astype(np.float16), metric="cosine"), rel=1e-12)
    with pytest.warns(UserWarning, match="X has 60 duplicate rows"):
        on_dask = distributed.twonn_dimension(da.from_array(half, chunks=100), metric="cosine")
    assert on_dask == pytest.approx(expected, rel=1e-12)
    brain = torch.from_numpy(np.vstack([U, copies])).to(torch.bfloat16)
    with pytest.warns(UserWarning, match="X has 60 duplicate rows"):
        got = isotropy.twonn_dimension(brain, metric="cosine")
    assert float(got) == pytest.approx(float(isotropy.twonn_dimension(torch.from_numpy(U).to(torch.bfloat16),
                                                                      metric="cosine")), rel=1e-6)


def test_the_mle_estimator_class_caps_k_at_the_cosine_distinct_points():
    """MLE.fit capped k at the rows' distinct count; under the cosine metric scaled copies are one point, so a k of
    the rows' count was refused (8 directions, 16 rows, n_neighbors=10)."""
    from isotropy.metrics.dimension import distinct_points
    from isotropy.metrics.estimators import MLE

    few = np.vstack([X[:8], 3.0 * X[:8]])
    assert distinct_points(few) == 16 and distinct_points(few, metric="cosine") == 8
    with pytest.warns(UserWarning, match="n_neighbors=10 is not below the 8 distinct points; using n_neighbors=7"):
        fitted = MLE(n_neighbors=10, metric="cosine").fit(few)
    assert fitted.n_neighbors_ == 7
    assert fitted.dimension_ == pytest.approx(isotropy.mle_dimension(X[:8], n_neighbors=7, metric="cosine"), rel=1e-12)


def _on(backend, data):
    """``data`` as numpy, a CPU tensor, or a dask array (computed by the threaded scheduler)."""
    if backend == "torch":
        return torch.from_numpy(data)
    if backend == "dask":
        return da.from_array(data, chunks=37)
    return data


_ESTIMATORS = {  # n_neighbors given: the error names it
    "twonn_dimension": lambda Z, k: isotropy.twonn_dimension(Z, metric="cosine"),
    "mle_dimension": lambda Z, k: isotropy.mle_dimension(Z, n_neighbors=k, metric="cosine"),
    "local_mle_dimension": lambda Z, k: _computed(isotropy.local_mle_dimension(Z, n_neighbors=k, metric="cosine")),
    "neighbour_dimensions": lambda Z, k: _computed(neighbour_dimensions(Z, n_neighbors=k, local_mle=True,
                                                                        metric="cosine")),
}


def _computed(value):
    if isinstance(value, dict):
        return {key: _computed(v) for key, v in value.items()}
    return value.compute() if hasattr(value, "compute") else value


def _refusal(name, n_neighbors, n_distinct, n_dup):
    needs = ("more than 2 distinct points (TwoNN reads the two nearest neighbours of each)" if name == "twonn_dimension"
             else f"more than n_neighbors={n_neighbors} distinct points")
    return (f"The 'X' parameter of {name} must have {needs}. Got {n_distinct} distinct points ({n_dup} duplicate rows) "
            f"instead.")


@pytest.mark.parametrize("backend", ["numpy", "torch", "dask"])
@pytest.mark.parametrize("name", list(_ESTIMATORS))
@pytest.mark.parametrize("n_neighbors", [5, 150])  # within the rows, and past them
def test_too_few_directions_are_refused_with_every_duplicate_counted(backend, name, n_neighbors):
    """100 rows of one feature: 2 directions, 98 duplicates. Said "4 distinct points (96 duplicate rows)" in memory
    (the refusal came before the rows parallel to another were merged), and "2 distinct points (2 duplicate rows)" on
    dask (the parallel rows alone counted), after a warning of 96 duplicate rows among 4 points. No warning now, as
    in memory: the refusal says it all."""
    import warnings

    X1 = np.random.default_rng(0).standard_normal((100, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(isotropy.IsotropyValueError) as info:
            _ESTIMATORS[name](_on(backend, X1), n_neighbors)
    assert str(info.value) == _refusal(name, n_neighbors, 2, 98)


@pytest.mark.parametrize("backend", ["numpy", "torch", "dask"])
@pytest.mark.parametrize("n_neighbors", [40, 100])  # within the rows, and past them (90 rows)
def test_fewer_directions_than_neighbours_count_equal_and_parallel_rows_together(backend, n_neighbors):
    """30 directions, each at 1, 2 and 3 times its length: 60 duplicates (2x: equal once normalised; 3x: parallel to
    the input's precision). Dask said "(28 duplicate rows)" for mle_dimension(n_neighbors=40); past the rows (100),
    every path said the rows' range instead, not the 30 directions."""
    import warnings

    D = np.random.default_rng(1).standard_normal((30, 8))
    tripled = np.vstack([D, 2.0 * D, 3.0 * D])
    for name in ("mle_dimension", "local_mle_dimension", "neighbour_dimensions"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(isotropy.IsotropyValueError) as info:
                _ESTIMATORS[name](_on(backend, tripled), n_neighbors)
        assert str(info.value) == _refusal(name, n_neighbors, 30, 60)


def test_equal_and_parallel_rows_give_one_warning_on_every_backend():
    """Equal rows and rows parallel to another are one count of duplicates in one warning, on dask as in memory (dask
    warned of the equal rows, then of the parallel ones among points that were not the distinct ones)."""
    D = np.random.default_rng(1).standard_normal((30, 8))
    tripled = np.vstack([D, 2.0 * D, 3.0 * D])
    for name, estimator in _ESTIMATORS.items():
        expected = (f"{name}: X has 60 duplicate rows (at cosine distance 0 from another row, or parallel to it to the "
                    f"input's precision); each distinct point is counted once and neighbours are searched among the "
                    f"30 distinct points.")
        values = []
        for backend in ("numpy", "torch", "dask"):
            with pytest.warns(UserWarning) as caught:
                values.append(estimator(_on(backend, tripled), 7))
            assert [str(w.message) for w in caught] == [expected], (name, backend)
            assert {w.filename for w in caught} == {__file__}
        if name == "mle_dimension":
            assert float(values[1]) == pytest.approx(values[0], rel=1e-12)
            assert values[2] == pytest.approx(values[0], rel=1e-12)
