"""Fuzz suite for the metrics (issue 11): every public metric, on arrays hypothesis draws.

Arrays of many dtypes (float64, float32, float16, int64, int32, uint8, bool) and shapes, small
integer patterns (so duplicates, constant columns and ties are frequent) multiplied by 10**k
with k from -320 to 300 (subnormal to near-overflow). For each array, a metric must either

- return a finite value equal to an independent float64 reference computed on the data brought
  to unit scale (scikit-learn for the silhouette, Calinski-Harabasz and Davies-Bouldin; an
  eigendecomposition of ``np.cov`` for IsoScore and the participation ratio; the pairwise
  definitions for the cosine, the Dunn index and I(W)), or
- raise a one-line ``ValueError`` (or ``TypeError``) naming the parameter.

Never NaN for finite input without an error, never another exception.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.spatial.distance import cdist
from scipy.special import logsumexp
from sklearn.metrics import calinski_harabasz_score, davies_bouldin_score, silhouette_score

import isotropy as iso

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

# exponent range per dtype: from subnormal (refused) to near the largest finite value
_EXPONENTS = {np.float64: (-320, 300), np.float32: (-42, 36), np.float16: (-6, 3)}
_DTYPES = [np.float64, np.float32, np.float16, np.int64, np.int32, np.uint8, np.bool_]


@st.composite
def data_matrices(draw, min_rows=2, max_rows=30, max_features=5):
    """(X, exponent): a small-integer pattern (duplicates and constant columns likely), in one dtype, scaled."""
    n = draw(st.integers(min_rows, max_rows))
    d = draw(st.integers(1, max_features))
    dtype = draw(st.sampled_from(_DTYPES))
    high = 1 if dtype is np.bool_ else 6
    low = 0 if dtype in (np.uint8, np.bool_) else -6
    base = draw(arrays(np.int64, (n, d), elements=st.integers(low, high)))
    if draw(st.booleans()):  # duplicated rows
        base[n // 2:] = base[: n - n // 2]
    if d > 1 and draw(st.booleans()):  # a constant column
        base[:, draw(st.integers(0, d - 1))] = draw(st.integers(low, high))
    exponent = 0
    if dtype in _EXPONENTS:
        exponent = draw(st.integers(*_EXPONENTS[dtype]))
        with np.errstate(over="ignore", under="ignore"):
            X = (base * 10.0**exponent).astype(dtype) if exponent > -300 else (base * 1e-300 * 10.0**(exponent + 300)).astype(dtype)
    else:
        X = base.astype(dtype)
    assume(np.isfinite(X.astype(np.float64)).all())
    return X


def _unit(X):
    """float64 copy brought to unit scale by the largest |x| (the metrics' scale invariance)."""
    X = np.asarray(X, dtype=np.float64)
    top = np.abs(X).max()
    return X / 2.0 ** math.frexp(top)[1] if top > 0 else X


# ------------------------------------------------------------------------------ references
def _ref_isoscore(X):
    lam = np.linalg.eigvalsh(np.atleast_2d(np.cov(_unit(X), rowvar=False)))
    d = X.shape[1]
    return ((lam.sum() ** 2 / (lam**2).sum()) - 1.0) / (d - 1)


def _ref_participation_ratio(X):
    lam = np.linalg.eigvalsh(np.atleast_2d(np.cov(_unit(X), rowvar=False)))
    return lam.sum() ** 2 / (lam**2).sum()


def _ref_cosine(X):
    U = _unit(X)
    U = U / np.linalg.norm(U, axis=1, keepdims=True)
    C = U @ U.T
    n = len(U)
    return (C.sum() - np.trace(C)) / (n * (n - 1))


def _ref_dunn(X, labels):
    D = cdist(_unit(X), _unit(X))
    same = labels[:, None] == labels[None, :]
    diameter = D[same].max()
    return np.inf if diameter == 0 else D[~same].min() / diameter


def _ref_partition(X):
    X = np.asarray(X, dtype=np.float64)
    _, U = np.linalg.eigh(X.T @ X)
    log_z = logsumexp(X @ np.hstack([U, -U]), axis=0)
    return math.exp(log_z.min() - log_z.max())


LABEL_FREE = {
    "isoscore": (iso.isoscore, _ref_isoscore),
    "participation_ratio": (iso.participation_ratio, _ref_participation_ratio),
    "cosine_similarity_mean": (iso.cosine_similarity_mean, _ref_cosine),
    "twonn_dimension": (iso.twonn_dimension, lambda X: iso.twonn_dimension(_unit(X))),
    "mle_dimension": (lambda X: iso.mle_dimension(X, n_neighbors=3), lambda X: iso.mle_dimension(_unit(X), n_neighbors=3)),
    "isoscore_star": (iso.isoscore_star, None),
    "partition_isotropy": (iso.partition_isotropy, None),
}
LABELLED = {
    "silhouette_score": (iso.silhouette_score, lambda X, y: silhouette_score(_unit(X), y)),
    "calinski_harabasz_score": (iso.calinski_harabasz_score, lambda X, y: calinski_harabasz_score(_unit(X), y)),
    "davies_bouldin_score": (iso.davies_bouldin_score, lambda X, y: davies_bouldin_score(_unit(X), y)),
    "dunn_index": (iso.dunn_index, _ref_dunn),
}


def _outcome(f, *args):
    """('value', v) or ('error', message); anything but ValueError/TypeError propagates (a failure)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "value", float(f(*args))
        except (ValueError, TypeError) as exc:
            message = str(exc)
            assert "\n" not in message and len(message) < 600, message
            assert "parameter of" in message or "Cannot" in message, message
            return "error", message


def _reference(ref, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return float(ref(*args))
        except (ValueError, ZeroDivisionError, np.linalg.LinAlgError):
            return math.nan


def _check(name, kind, value, expected, X):
    if kind == "error":
        return
    assert not math.isnan(value), f"{name} gave NaN for finite input {X!r}"
    if math.isinf(expected):  # Dunn: every cluster a single point; MLE: equidistant neighbours (with a warning)
        assert value == expected, (name, X)
        return
    assert math.isfinite(value), f"{name} gave {value} for {X!r}"
    if not math.isnan(expected):
        assert value == pytest.approx(expected, rel=1e-6, abs=1e-9), (name, X)


@SETTINGS
@given(X=data_matrices())
def test_label_free_metrics(X):
    for name, (f, ref) in LABEL_FREE.items():
        kind, value = _outcome(f, X)
        if name == "isoscore_star":
            if kind == "value":
                assert -1e-9 <= value <= 1.0 + 1e-9, (name, value)
            continue
        if name == "partition_isotropy":
            if kind == "value":
                assert 0.0 <= value <= 1.0 + 1e-12
                if X.dtype.kind != "f" or np.abs(X.astype(np.float64)).max() < 1e100:
                    assert value == pytest.approx(_ref_partition(X), rel=1e-6, abs=1e-12), X
            continue
        _check(name, kind, value, _reference(ref, X), X)


@SETTINGS
@given(X=data_matrices(min_rows=4), seed=st.integers(0, 2**16))
def test_cluster_metrics(X, seed):
    labels = np.random.default_rng(seed).integers(0, 3, size=X.shape[0])
    for name, (f, ref) in LABELLED.items():
        kind, value = _outcome(f, X, labels)
        expected = _reference(ref, X, labels) if kind == "value" else math.nan
        _check(name, kind, value, expected, X)


@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(X=data_matrices(max_rows=20), seed=st.integers(0, 2**16))
def test_torch_agrees_with_numpy(X, seed):
    if X.dtype not in (np.float64, np.float32):
        return
    labels = np.random.default_rng(seed).integers(0, 3, size=X.shape[0])
    T = torch.from_numpy(X.copy())
    for name, (f, _) in {**LABEL_FREE, **LABELLED}.items():
        args = (labels,) if name in LABELLED else ()
        kind_np, value_np = _outcome(f, X, *args)
        kind_t, value_t = _outcome(f, T, *args)
        if kind_t == "value":
            assert not math.isnan(value_t), (name, X)
        if kind_np == kind_t == "value" and math.isfinite(value_np):
            tol = 1e-9 if X.dtype == np.float64 else 2e-3
            assert value_t == pytest.approx(value_np, rel=tol, abs=tol), (name, X)
