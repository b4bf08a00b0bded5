"""The cosine metrics read each row's direction alone, whatever the rows' lengths.

Rows multiplied by very different powers of two (``2**660`` beside ``2**-330`` in float64, about 1e199 and
1e-99; ``2**±60`` in float32) have the directions of the unscaled rows, bit for bit, so every cosine metric
must give the value of the unscaled data (the reference: the same functions on those data, themselves
tested against scikit-learn and scikit-dimension). One power of two for the whole array, as the metrics
used, kept the rows' relative lengths: the small rows underflowed to zero or to a few bits, and the
cosine silhouette was silently off (0.020 for 0.119), the Dunn index too, and the neighbour family
refused the data for "zero rows". Every row is now brought to unit scale by its own power of two
(:func:`isotropy._utils.magnitude.directions_at_unit_scale`), in memory (numpy and torch) and on dask.
"""

from __future__ import annotations

import warnings

import dask
import dask.array as da
import numpy as np
import pytest
import torch
from distributed import Client, LocalCluster

import isotropy
from isotropy._utils.magnitude import directions_at_unit_scale
from isotropy.metrics.neighbors import kneighbors

CLUSTER = {"silhouette_score", "silhouette_samples", "dunn_index"}
METRICS = [("silhouette_score", {}), ("silhouette_samples", {}), ("dunn_index", {}), ("twonn_dimension", {}),
           ("mle_dimension", {"n_neighbors": 7}), ("local_mle_dimension", {"n_neighbors": 7})]
# float64: rows near 1e199 beside rows near 1e-99; float32: near 1e18 beside 1e-18
SHIFTS = {np.float64: (660, -330), np.float32: (60, -60)}


@pytest.fixture(scope="module")
def blobs():
    """Three blobs in 6-d (240 rows), one row repeated (a duplicate point), shuffled labels for some rows."""
    rng = np.random.default_rng(7)
    labels = np.repeat(np.arange(3), 80)
    X = rng.normal(scale=2.0, size=(3, 6))[labels] + rng.normal(size=(240, 6))
    X[11] = X[12]
    rng.shuffle(labels[:40])
    return X, labels


def _mixed(X, dtype):
    """X in dtype with its even rows times 2**high and its odd rows times 2**low (exact)."""
    high, low = SHIFTS[dtype]
    X = X.astype(dtype)
    shift = np.where(np.arange(X.shape[0]) % 2 == 0, high, low)
    return np.ldexp(X, shift[:, None]).astype(dtype)


def _value(name, X, labels, kwargs):
    args = (labels,) if name in CLUSTER else ()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the duplicate point, and local MLE's infinite estimates
        value = getattr(isotropy, name)(X, *args, metric="cosine", **kwargs)
    if isinstance(value, da.Array):
        value = value.compute()
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    return np.asarray(value, dtype=np.float64)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("name", "kwargs"), METRICS)
def test_cosine_metrics_of_rows_at_very_different_scales_equal_those_of_their_directions(blobs, name, kwargs, dtype):
    X, labels = blobs
    expected = _value(name, X.astype(dtype), labels, kwargs)
    got = _value(name, _mixed(X, dtype), labels, kwargs)
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_kneighbors_cosine_of_rows_at_very_different_scales(blobs, dtype):
    X, _ = blobs
    dist, ind = kneighbors(X.astype(dtype), n_neighbors=5, metric="cosine")
    got_dist, got_ind = kneighbors(_mixed(X, dtype), n_neighbors=5, metric="cosine")
    np.testing.assert_array_equal(got_ind, ind)
    np.testing.assert_allclose(got_dist, dist, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize(("name", "kwargs"), [("silhouette_score", {}), ("dunn_index", {}),
                                              ("twonn_dimension", {}), ("mle_dimension", {"n_neighbors": 7})])
def test_torch_cosine_metrics_of_rows_at_very_different_scales(blobs, name, kwargs, dtype):
    X, labels = blobs
    np_dtype = np.float64 if dtype == torch.float64 else np.float32
    expected = _value(name, torch.from_numpy(X.astype(np_dtype)), torch.from_numpy(labels), kwargs)
    got = _value(name, torch.from_numpy(_mixed(X, np_dtype)), torch.from_numpy(labels), kwargs)
    np.testing.assert_allclose(got, expected, rtol=1e-6 if dtype == torch.float32 else 1e-13, atol=1e-15)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_torch_kneighbors_cosine_of_rows_at_very_different_scales(blobs, dtype):
    X, _ = blobs
    np_dtype = np.float64 if dtype == torch.float64 else np.float32
    dist, ind = kneighbors(torch.from_numpy(X.astype(np_dtype)), n_neighbors=5, metric="cosine")
    got_dist, got_ind = kneighbors(torch.from_numpy(_mixed(X, np_dtype)), n_neighbors=5, metric="cosine")
    torch.testing.assert_close(got_ind, ind)
    torch.testing.assert_close(got_dist, dist, rtol=1e-13, atol=1e-15)


def test_dask_cosine_metrics_of_rows_at_very_different_scales_on_a_local_cluster(blobs):
    """The dask functions (row blocks of 50) on a real LocalCluster: the in-memory values of the unscaled rows."""
    X, labels = blobs
    M = _mixed(X, np.float64)
    with LocalCluster(n_workers=1, processes=False, threads_per_worker=2, dashboard_address=None) as cluster, \
            Client(cluster), dask.config.set(scheduler=None):
        for name, kwargs in METRICS:
            expected = _value(name, X, labels, kwargs)
            got = _value(name, da.from_array(M, chunks=(50, 6)), labels, kwargs)
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15, err_msg=name)
        dist, ind = kneighbors(X, n_neighbors=5, metric="cosine")
        got_dist, got_ind = kneighbors(da.from_array(M, chunks=(50, 6)), n_neighbors=5, metric="cosine")
        np.testing.assert_array_equal(np.asarray(got_ind), ind)
        np.testing.assert_allclose(np.asarray(got_dist), dist, rtol=1e-12, atol=1e-15)


def test_directions_at_unit_scale_leaves_rows_at_a_safe_scale_alone():
    """No copy when every row is at a safe scale; else only the rows outside it move, each by a power of two."""
    X = np.array([[3.0, -4.0], [0.0, 0.0], [2.0**-90, 1.0], [2.0**200, -(2.0**199)], [-(2.0**-500), 0.0]])
    safe = X[:3].copy()
    assert directions_at_unit_scale(safe) is safe
    out = directions_at_unit_scale(X)
    np.testing.assert_array_equal(out[:3], X[:3])
    np.testing.assert_array_equal(out[3], [0.5, -0.25])
    np.testing.assert_array_equal(out[4], [-0.5, 0.0])
    np.testing.assert_array_equal(X[3], [2.0**200, -(2.0**199)])  # the input is not changed
    T = torch.tensor(X, requires_grad=True)
    out_t = directions_at_unit_scale(T)
    np.testing.assert_array_equal(out_t.detach().numpy(), out)
    out_t.sum().backward()  # differentiable: each row's factor
    np.testing.assert_array_equal(T.grad.numpy()[:, 0], [1.0, 1.0, 1.0, 2.0**-201, 2.0**499])
    f32 = np.array([[2.0**-60, 0.0], [1.0, 1.0]], dtype=np.float32)
    np.testing.assert_array_equal(directions_at_unit_scale(torch.from_numpy(f32)).numpy(), [[0.5, 0.0], [1.0, 1.0]])


@pytest.mark.parametrize("dtype", [np.float16, np.longdouble])
@pytest.mark.parametrize(("name", "kwargs"), [("silhouette_score", {}), ("dunn_index", {}), ("twonn_dimension", {})])
def test_cosine_metrics_take_float16_and_longdouble_arrays(blobs, name, kwargs, dtype):
    """Other numpy float dtypes keep working (a lookup by item size raised KeyError 2 or 16 for them): the value
    of the same numbers in float64, within float16's rounding where the kernels compute in float32."""
    X, labels = blobs
    Y = X.astype(dtype)
    expected = _value(name, Y.astype(np.float64), labels, kwargs)
    np.testing.assert_allclose(_value(name, Y, labels, kwargs), expected, rtol=1e-5)


def test_torch_float32_kneighbors_cosine_keeps_each_rows_scale():
    """Rows at 2**±40 that differ only in an entry near 2**-62 of their length: one factor for the whole tensor after
    the rows' own (torch float32's range is narrower) pushed the small rows' tiny entries below float32's normal
    numbers, and their cosine distance came out 1.6e-3 off (9.3977e-38 against 9.4132e-38)."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 4))
    X /= np.abs(X).max(axis=1, keepdims=True) * 1.01
    X[:, 3] = 1.2345678 * 2.0**-62 * np.sign(rng.normal(size=60))
    X = X.astype(np.float32)
    X[1, :3] = X[0, :3]
    X[1, 3] = np.float32(1.1111111 * 2.0**-62)
    shift = np.where(np.arange(60) % 2 == 0, 40, -40)
    shift[:2] = -40
    M = np.ldexp(X, shift[:, None]).astype(np.float32)
    dist, ind = kneighbors(torch.from_numpy(X), n_neighbors=1, metric="cosine")
    got_dist, got_ind = kneighbors(torch.from_numpy(M), n_neighbors=1, metric="cosine")
    assert int(got_ind[0, 0]) == int(ind[0, 0]) == 1
    torch.testing.assert_close(got_dist, dist, rtol=1e-12, atol=0.0)


def test_dask_cosine_duplicates_are_those_in_memory():
    """Two rows that are one direction once each is at its own unit scale (an entry 2**-1074 of the row's length
    becomes 0 there): one point in memory and on dask alike (dask hashed them apart at their stored scale and
    refused '2 distinct rows at distance 0')."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    X[0] = [2.0**200, 2.0**-874, 0.0]
    X[1] = [2.0**200, 0.0, 0.0]
    with dask.config.set(scheduler="synchronous"):
        for name, kwargs in [("twonn_dimension", {}), ("mle_dimension", {"n_neighbors": 5})]:
            with pytest.warns(UserWarning, match="1 duplicate rows"):
                expected = getattr(isotropy, name)(X, metric="cosine", **kwargs)
            with pytest.warns(UserWarning, match="1 duplicate rows"):
                got = getattr(isotropy, name)(da.from_array(X, chunks=(10, 3)), metric="cosine", **kwargs)
            assert float(got) == float(expected)


def test_torch_directions_need_no_frexp(monkeypatch):
    """torch.frexp has no kernel on every device (MPS): the rows' exponents come from log2, with the same result."""
    X = torch.tensor([[3.0, -4.0], [2.0**-90, 1.0], [2.0**200, -(2.0**199)], [-(2.0**-1070), 0.0], [0.0, 0.0]],
                     dtype=torch.float64)
    expected = directions_at_unit_scale(X.numpy())

    def no_kernel(*args, **kwargs):
        raise NotImplementedError("aten::frexp.Tensor_out is not implemented for the MPS device")

    monkeypatch.setattr(torch, "frexp", no_kernel)
    np.testing.assert_array_equal(directions_at_unit_scale(X).numpy(), expected)
