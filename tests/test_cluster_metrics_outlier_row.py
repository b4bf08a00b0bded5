"""One row far from the rest does not change the silhouette or the Dunn index of the other rows.

Found by a new-user trial: 600 rows in 4 clusters with one row multiplied by 1e8 read silhouette -0.225
against scikit-learn's -0.1658 (1e15 and 1e30 alike), and the Dunn index was 3x off at 1e15 and 1e30, with
no warning. Three causes, each fixed: the operands were centred on the mean, which the row drags by 1e8/n,
so the distances among all the other rows were lost to cancellation (now the coordinate-wise median of a
sample of rows, :mod:`isotropy._kernels.centre`); the sums of a block were shifted by the block's mean
distance, dominated by that row; and the resolution below which a = b = 0 took the largest squared norm of
all rows, so every other sample read 0 (now the largest of the cluster each mean distance is to).
References: scikit-learn's ``silhouette_score`` and the Dunn index from scipy's ``cdist``.
"""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest
import sklearn.metrics as skm
import torch
from scipy.spatial.distance import cdist

import isotropy


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, 600)
    X = rng.normal(size=(600, 16)) * np.linspace(0.3, 2.0, 16) + labels[:, None] * 0.8
    return X, labels


def _dunn(X, labels):
    D = cdist(X, X)
    same = labels[:, None] == labels[None, :]
    return D[~same].min() / D[same].max()


def _with_outlier(X, factor):
    Y = X.copy()
    Y[5] *= factor
    return Y


@pytest.mark.parametrize("factor", [1e8, 1e15, 1e30])
def test_silhouette_and_dunn_with_one_far_row(data, factor):
    X, labels = data
    Y = _with_outlier(X, factor)
    expected = skm.silhouette_score(Y, labels)
    assert isotropy.silhouette_score(Y, labels) == pytest.approx(expected, abs=1e-12)
    np.testing.assert_allclose(isotropy.silhouette_samples(Y, labels), skm.silhouette_samples(Y, labels), atol=1e-12)
    assert isotropy.dunn_index(Y, labels) == pytest.approx(_dunn(Y, labels), rel=1e-12)
    assert float(isotropy.dunn_index(torch.tensor(Y), torch.tensor(labels))) == pytest.approx(_dunn(Y, labels),
                                                                                             rel=1e-12)
    with dask.config.set(scheduler="synchronous"):
        Yd = da.from_array(Y, chunks=(100, 16))
        assert float(isotropy.silhouette_score(Yd, labels)) == pytest.approx(expected, abs=1e-12)
        assert float(isotropy.dunn_index(Yd, labels)) == pytest.approx(_dunn(Y, labels), rel=1e-12)


@pytest.mark.parametrize("factor", [1e8, 1e15])
def test_float32_silhouette_with_one_far_row(data, factor):
    """float32 products: the other rows' distances keep float32's digits about the median centre."""
    X, labels = data
    Y = _with_outlier(X, factor).astype(np.float32)
    expected = skm.silhouette_score(Y.astype(np.float64), labels)
    assert isotropy.silhouette_score(Y, labels) == pytest.approx(expected, abs=1e-6)


def test_torch_device_kernel_with_one_far_row(data):
    """The torch kernel (GPUs), run on CPU tensors: its centre and resolution too."""
    from isotropy.metrics.silhouette import _cluster_sums_torch, _coefficients_torch, _resolution_torch

    X, labels = data
    Y = _with_outlier(X, 1e8)
    expected = skm.silhouette_samples(Y, labels)
    for dtype, tol in ((torch.float64, 1e-10), (torch.float32, 1e-5)):
        T = torch.tensor(Y, dtype=dtype)
        sums, q = _cluster_sums_torch(T, labels, 4, "euclidean", 128)
        got = _coefficients_torch(sums, labels, _resolution_torch(q, labels, 4, T, "euclidean")).numpy()
        np.testing.assert_allclose(got, expected, rtol=0, atol=tol)
