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
