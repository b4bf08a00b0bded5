"""Invariance tests over a registry of every public metric.

Each entry says which transformations of the data leave the metric unchanged (a property of its
formula, not of the implementation): rotation ``X Q`` (Q orthogonal), translation ``X + b``,
positive scaling ``c X``, relabelling the clusters, and reordering the rows. Hypothesis draws the
data (Gaussian blobs with anisotropic noise, small shapes), the rotation, shift and scale. Every
metric must also reject NaN, inf and 1-d or 3-d input with an ``IsotropyValueError`` naming ``X``,
and give the same value for a float64 torch tensor as for the numpy array (as a tensor).

Entries that are *not* invariant to a transformation list it under ``changes``; a fixed example
checks that the value really moves, so the invariance tests cannot pass vacuously.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import isotropy
from isotropy import IsotropyValueError

ROTATION, TRANSLATION, SCALE, RELABEL, ROW_ORDER = "rotation", "translation", "scale", "relabel", "row_order"
GEOMETRIC = (ROTATION, TRANSLATION, SCALE)
ALL = frozenset({*GEOMETRIC, RELABEL, ROW_ORDER})


def _public(name):
    """Resolve a public name of :mod:`isotropy` or ``isotropy.torch`` (a missing module fails loudly)."""
    if name.startswith("torch."):
        return getattr(importlib.import_module("isotropy.torch"), name.removeprefix("torch."))
    return getattr(isotropy, name)


def _torch_penalty(name, *, sign=1.0, **kwargs):
    """A torch-only penalty as a metric: numpy X goes in as a float64 tensor, a float comes out."""
    def call(X, labels):
        import torch

        value = sign * _public(name)(X if isinstance(X, torch.Tensor) else torch.as_tensor(X), **kwargs)
        return value if isinstance(X, torch.Tensor) else float(value)
    return call


def _accumulated(method, **kwargs):
    """Feed X to a CovarianceAccumulator in two chunks, then read ``method``."""
    def call(X, labels):
        accumulator = _public("CovarianceAccumulator")()
        half = X.shape[0] // 2
        accumulator.update(X[:half])
        accumulator.update(X[half:])
        return getattr(accumulator, method)(**kwargs)
    return call


def _from_covariance(X, labels):
    """isoscore_from_covariance of the sample covariance of X (other shapes passed through)."""
    if X.ndim == 2:
        with np.errstate(invalid="ignore"):  # inf in X: NaN covariance, which must be rejected
            X = X.T.cov() if hasattr(X, "cov") else np.cov(X, rowvar=False)
    return _public("isoscore_from_covariance")(X)


@dataclass(frozen=True)
class Metric:
    """One registry entry: how to call the metric and which transformations it ignores."""

    id: str
    public_name: str
    call: object  # (X, labels) -> value
    kind: str  # "isotropy" | "cluster" | "dimension"
    invariances: frozenset
    changes: frozenset = field(default_factory=frozenset)
    per_sample: bool = False
    min_samples: int | None = 2  # None: the input is not a data matrix (no sample-count check)
    x_name: str = "X"  # the parameter named in error messages
    shape_error: str = r"2-d array of shape \(n_samples, n_features\)"
    torch_output: bool = True  # torch in -> tensor out (False: a Python float either way)

    def __call__(self, X, labels):
        return self.call(X, labels)


def _fn(name, *, labelled=False, **kwargs):
    if labelled:
        return lambda X, labels: _public(name)(X, labels, **kwargs)
    return lambda X, labels: _public(name)(X, **kwargs)


REGISTRY = [
    # isotropy of the point cloud: functions of the covariance spectrum (IsoScore, PR) or of directions
    Metric("isoscore", "isoscore", _fn("isoscore"), "isotropy", frozenset({*GEOMETRIC, ROW_ORDER})),
    # Σ_S = I is fixed, so only rotation (QᵀIQ = I) and translation keep the shrunk covariance's spectrum
    Metric("isoscore_star[Σ_S=I]", "isoscore_star", _fn("isoscore_star", zeta=0.2), "isotropy",
           frozenset({ROTATION, TRANSLATION, ROW_ORDER}), changes=frozenset({SCALE})),
    # max/min over ±eigenvectors of XᵀX (uncentred): rotation-invariant, but exp(uᵀx) sees shifts and scale
    Metric("partition_isotropy", "partition_isotropy", _fn("partition_isotropy"), "isotropy",
           frozenset({ROTATION, ROW_ORDER}), changes=frozenset({SCALE, TRANSLATION})),
    Metric("cosine_similarity_mean", "cosine_similarity_mean", _fn("cosine_similarity_mean"), "isotropy",
           frozenset({ROTATION, SCALE, ROW_ORDER}), changes=frozenset({TRANSLATION})),
    Metric("inter_type_cosine[mean]", "inter_type_cosine", _fn("inter_type_cosine", labelled=True, type_vector="mean"),
           "isotropy", frozenset({ROTATION, SCALE, RELABEL, ROW_ORDER}), changes=frozenset({TRANSLATION})),
    Metric("intra_type_cosine", "intra_type_cosine", _fn("intra_type_cosine", labelled=True), "isotropy",
           frozenset({ROTATION, SCALE, RELABEL, ROW_ORDER}), changes=frozenset({TRANSLATION})),
    # per-dimension shares of the mean cosine: a rotation or a shift moves them between dimensions
    Metric("rogue_dimension_share", "rogue_dimension_share", _fn("rogue_dimension_share", n_dimensions=2),
           "isotropy", frozenset({SCALE, ROW_ORDER}), changes=frozenset({ROTATION, TRANSLATION})),
    Metric("participation_ratio", "participation_ratio", _fn("participation_ratio"), "isotropy",
           frozenset({*GEOMETRIC, ROW_ORDER})),
    # entropy of the normalised singular values: of the matrix as given (a shift changes them), or centred
    Metric("effective_rank", "effective_rank", _fn("effective_rank"), "isotropy",
           frozenset({ROTATION, SCALE, ROW_ORDER}), changes=frozenset({TRANSLATION})),
    Metric("effective_rank[center]", "effective_rank", _fn("effective_rank", center=True), "isotropy",
           frozenset({*GEOMETRIC, ROW_ORDER})),
    Metric("rankme", "rankme", _fn("rankme"), "isotropy",
           frozenset({ROTATION, SCALE, ROW_ORDER}), changes=frozenset({TRANSLATION})),
    # Gaussian potential between directions on the unit sphere: a shift moves the directions
    Metric("uniformity", "uniformity", _fn("uniformity"), "isotropy",
           frozenset({ROTATION, SCALE, ROW_ORDER}), changes=frozenset({TRANSLATION})),
    Metric("isoscore_from_covariance", "isoscore_from_covariance", _from_covariance, "isotropy",
           frozenset({*GEOMETRIC, ROW_ORDER}), min_samples=None, x_name="cov", shape_error="square matrix of shape"),
    Metric("CovarianceAccumulator.isoscore", "CovarianceAccumulator", _accumulated("isoscore"), "isotropy",
           frozenset({*GEOMETRIC, ROW_ORDER}), x_name="X_chunk", torch_output=False),
    Metric("CovarianceAccumulator.isoscore_star[Σ_S=I]", "CovarianceAccumulator", _accumulated("isoscore_star"),
           "isotropy", frozenset({ROTATION, TRANSLATION, ROW_ORDER}), changes=frozenset({SCALE}),
           x_name="X_chunk", torch_output=False),
    Metric("CovarianceAccumulator.participation_ratio", "CovarianceAccumulator",
           _accumulated("participation_ratio"), "isotropy", frozenset({*GEOMETRIC, ROW_ORDER}),
           x_name="X_chunk", torch_output=False),
    Metric("CovarianceAccumulator.cosine_similarity_mean", "CovarianceAccumulator",
           _accumulated("cosine_similarity_mean"), "isotropy", frozenset({ROTATION, SCALE, ROW_ORDER}),
           changes=frozenset({TRANSLATION}), x_name="X_chunk", torch_output=False),
    # the PyTorch regularisers are the same quantities, differentiable (IsoScore* = −istar_penalty)
    Metric("torch.istar_penalty[Σ_S=I]", "torch.istar_penalty",
           _torch_penalty("torch.istar_penalty", sign=-1.0, shrinkage_cov=None), "isotropy",
           frozenset({ROTATION, TRANSLATION, ROW_ORDER}), changes=frozenset({SCALE}), x_name="H"),
    Metric("torch.cosine_penalty", "torch.cosine_penalty", _torch_penalty("torch.cosine_penalty"), "isotropy",
           frozenset({ROTATION, SCALE, ROW_ORDER}), changes=frozenset({TRANSLATION}), x_name="H"),
    # cluster quality: distances only (euclidean), or angles only (cosine)
    Metric("silhouette_score[euclidean]", "silhouette_score", _fn("silhouette_score", labelled=True), "cluster", ALL),
    Metric("silhouette_score[cosine]", "silhouette_score", _fn("silhouette_score", labelled=True, metric="cosine"),
           "cluster", ALL - {TRANSLATION}, changes=frozenset({TRANSLATION})),
    Metric("silhouette_samples", "silhouette_samples", _fn("silhouette_samples", labelled=True), "cluster", ALL,
           per_sample=True),
    Metric("calinski_harabasz_score", "calinski_harabasz_score", _fn("calinski_harabasz_score", labelled=True),
           "cluster", ALL),
    Metric("davies_bouldin_score", "davies_bouldin_score", _fn("davies_bouldin_score", labelled=True), "cluster", ALL),
    Metric("dunn_index", "dunn_index", _fn("dunn_index", labelled=True), "cluster", ALL),
    # intrinsic dimension: ratios of neighbour distances
    Metric("twonn_dimension", "twonn_dimension", _fn("twonn_dimension"), "dimension",
           frozenset({*GEOMETRIC, ROW_ORDER}), min_samples=3),
    Metric("mle_dimension", "mle_dimension", _fn("mle_dimension", n_neighbors=5), "dimension",
           frozenset({*GEOMETRIC, ROW_ORDER}), min_samples=3),
    Metric("local_mle_dimension", "local_mle_dimension", _fn("local_mle_dimension", n_neighbors=5), "dimension",
           frozenset({*GEOMETRIC, ROW_ORDER}), per_sample=True, min_samples=3),
]
IDS = [m.id for m in REGISTRY]
# an error class; the estimator classes wrap twonn_dimension / mle_dimension (covered above and in
# test_dimension.py); kneighbors is the neighbour search itself (test_neighbors.py)
# alignment takes paired inputs (X, Y): its invariances are those of the pairs (tests/test_beyond_papers.py)
# token_norms returns a dict of named tokens, not a number: its invariances (scale, row order) are in
# tests/test_token_norms.py; neighbour_dimensions returns a dict of TwoNN's, MLE's and the local MLE's values from one
# search (each registered on its own above; test_dimension.py checks they are the functions' values)
NOT_METRICS = {"IsotropyValueError", "IdentityShrinkageWarning", "SpanBoundWarning", "TwoNN", "MLE", "kneighbors", "alignment", "token_norms", "neighbour_dimensions"}


def test_registry_covers_every_public_metric():
    missing = set(isotropy.__all__) - NOT_METRICS - {m.public_name for m in REGISTRY}
    assert not missing, f"public names without an invariance entry: {sorted(missing)}"


def test_every_registered_metric_resolves():
    for metric in REGISTRY:
        assert callable(_public(metric.public_name)), metric.id


# ------------------------------------------------------------------------------ data and transformations
def blobs(seed, n, d, k):
    """n points in d dims around k random centres, anisotropic noise; labels 0..k-1, each used ≥ 2 times."""
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(n) % k)
    centres = rng.normal(scale=3.0, size=(k, d))
    X = centres[labels] + rng.normal(size=(n, d)) * rng.uniform(0.3, 2.0, size=d) + rng.normal(scale=2.0, size=d)
    return X, labels


def random_rotation(rng, d):
    Q, R = np.linalg.qr(rng.normal(size=(d, d)))
    return Q * np.sign(np.diag(R))


def transform(kind, X, labels, rng, scale):
    """Apply one transformation; returns (X', labels', row permutation or None)."""
    if kind == ROTATION:
        return X @ random_rotation(rng, X.shape[1]), labels, None
    if kind == TRANSLATION:
        return X + rng.normal(scale=5.0, size=X.shape[1]), labels, None
    if kind == SCALE:
        return scale * X, labels, None
    if kind == RELABEL:
        k = labels.max() + 1
        return X, rng.permutation(k)[labels] + 7, None  # new names as well as a new order
    if kind == ROW_ORDER:
        order = rng.permutation(X.shape[0])
        return X[order], labels[order], order
    raise AssertionError(kind)


def assert_same(metric, before, after, order=None):
    if metric.per_sample:
        before = np.asarray(before)
        np.testing.assert_allclose(after, before if order is None else before[order], rtol=1e-7, atol=1e-9)
    else:  # an undefined value (the rogue share of rows whose mean cosine is noise: NaN) stays undefined
        assert after == pytest.approx(before, rel=1e-7, abs=1e-9, nan_ok=True)


CASES = [(m, kind) for m in REGISTRY for kind in sorted(m.invariances)]

data_strategy = st.tuples(
    st.integers(0, 2**32 - 1),  # seed
    st.integers(16, 40),  # n_samples
    st.integers(2, 6),  # n_features
    st.integers(2, 4),  # n_clusters
    st.floats(1e-2, 1e2),  # scale factor
)


@pytest.mark.parametrize("metric,kind", CASES, ids=[f"{m.id}-{k}" for m, k in CASES])
@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(drawn=data_strategy)
def test_invariance(metric, kind, drawn):
    seed, n, d, k, scale = drawn
    X, labels = blobs(seed, n, d, k)
    rng = np.random.default_rng(seed + 1)
    X2, labels2, order = transform(kind, X, labels, rng, scale)
    assert_same(metric, metric(X, labels), metric(X2, labels2), order)


CHANGES = [(m, kind) for m in REGISTRY for kind in sorted(m.changes)]


@pytest.mark.parametrize("metric,kind", CHANGES, ids=[f"{m.id}-{k}" for m, k in CHANGES])
def test_declared_non_invariance_is_real(metric, kind):
    X, labels = blobs(3, 30, 4, 3)
    X2, labels2, _ = transform(kind, X, labels, np.random.default_rng(4), 7.0)
    assert metric(X2, labels2) != pytest.approx(metric(X, labels), rel=1e-4)


# ------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("metric", REGISTRY, ids=IDS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
def test_rejects_non_finite(metric, bad, backend):
    X, labels = blobs(0, 20, 3, 2)
    X[4, 1] = bad
    with pytest.raises(IsotropyValueError, match=rf"'{metric.x_name}' parameter of .*finite") as info:
        metric(backend(X), labels)
    if metric.x_name == "X":  # said where, as the command line says it
        assert f"Got {bad} at row 4, column 1 instead." in str(info.value)


@pytest.mark.parametrize("metric", REGISTRY, ids=IDS)
@pytest.mark.parametrize("shape", [(20,), (20, 3, 2)], ids=["1d", "3d"])
def test_rejects_wrong_dimensionality(metric, shape):
    X = np.random.default_rng(0).normal(size=shape)
    labels = np.arange(20) % 2
    with pytest.raises(IsotropyValueError, match=rf"'{metric.x_name}' parameter of .*{metric.shape_error}"):
        metric(X, labels)


SAMPLED = [m for m in REGISTRY if m.min_samples is not None]


@pytest.mark.parametrize("metric", SAMPLED, ids=[m.id for m in SAMPLED])
def test_rejects_too_few_samples(metric):
    X = np.random.default_rng(0).normal(size=(metric.min_samples - 1, 3))
    labels = np.zeros(metric.min_samples - 1, dtype=int)
    counted = r"(1 sample \(row\)|\d+ samples \(rows\))"  # singular for 1
    if metric.x_name == "X_chunk":  # the accumulator takes empty chunks (a stream's): its statistic says what it lacks
        pattern = rf"^CovarianceAccumulator\.\w+ needs at least {counted}; call update\(\) with more rows first\. Got \d+ instead\.$"
    else:
        pattern = rf"'{metric.x_name}' parameter of .*at least {counted}\. Got \d+ instead"
    with pytest.raises(IsotropyValueError, match=pattern):
        metric(X, labels)


# ------------------------------------------------------------------------------ numpy / torch parity
@pytest.mark.parametrize("metric", REGISTRY, ids=IDS)
def test_numpy_torch_parity(metric):
    torch = pytest.importorskip("torch")
    X, labels = blobs(5, 30, 4, 3)
    expected = metric(X, labels)
    got = metric(torch.tensor(X), labels)
    if not metric.torch_output:
        assert isinstance(got, float) and got == pytest.approx(expected, rel=1e-12)
        return
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float64
    if metric.per_sample:
        assert got.shape == (30,)
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-9, atol=1e-12)
    else:
        assert got.ndim == 0
        assert float(got) == pytest.approx(expected, rel=1e-9, abs=1e-12)
        assert isinstance(expected, float)


def test_module_of_every_entry_is_importable():
    """The lazy export table points each registered name at a module that defines it."""
    for metric in REGISTRY:
        if metric.public_name.startswith("torch."):
            continue
        module = importlib.import_module(isotropy._EXPORTS[metric.public_name])
        assert hasattr(module, metric.public_name), metric.id


def test_torch_penalties_are_the_metrics():
    """−istar_penalty is IsoScore* and cosine_penalty the mean cosine (same formula, same value)."""
    pytest.importorskip("torch")
    X, _ = blobs(2, 25, 5, 2)
    by_id = {m.id: m for m in REGISTRY}
    assert by_id["torch.istar_penalty[Σ_S=I]"](X, None) == pytest.approx(
        by_id["isoscore_star[Σ_S=I]"](X, None), rel=1e-12)
    assert by_id["torch.cosine_penalty"](X, None) == pytest.approx(by_id["cosine_similarity_mean"](X, None), rel=1e-12)
