"""Fixes from a new-user trial of the Python API: the Dunn index on data whose value is 0/0 or that hold a
zero row under the cosine metric, partition_isotropy on input whose value is meaningless, and the grammar of
the sample/feature-count messages. References: scikit-learn's pairwise distances and closed forms."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics.pairwise import cosine_distances, euclidean_distances

from isotropy import IsotropyValueError, dunn_index, partition_isotropy


def _dunn_sklearn(X, labels, metric):
    """Dunn index from scikit-learn's full distance matrix, over pairs of two different samples."""
    X, labels = np.asarray(X, dtype=np.float64), np.asarray(labels)
    D = cosine_distances(X) if metric == "cosine" else euclidean_distances(X)
    same = labels[:, None] == labels[None, :]
    pairs = same & ~np.eye(len(labels), dtype=bool)
    return D[~same].min() / D[pairs].max()


# ---------------------------------------------------------------------------------------------- item 2
def test_cosine_dunn_with_a_zero_row_follows_sklearn_cosine_distances():
    """A zero row is at cosine distance 1 from every other row (scikit-learn, and silhouette_score): the
    diameter of its cluster is 1, not the 0 of its distance to itself (the index read inf)."""
    X = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 2.0]])
    labels = [0, 0, 0, 1, 1]
    expected = _dunn_sklearn(X, labels, "cosine")
    assert expected == 1.0
    for chunk_size in (None, 1, 2, 3):
        assert dunn_index(X, labels, metric="cosine", chunk_size=chunk_size) == expected


@pytest.mark.parametrize("chunk_size", [None, 7, 16])
def test_cosine_dunn_with_zero_rows_matches_sklearn_on_random_data(chunk_size):
    rng = np.random.default_rng(11)
    labels = np.arange(60) % 3
    X = rng.normal(size=(60, 4)) + 3.0 * np.eye(4)[labels]
    X[[5, 17, 40]] = 0.0
    expected = _dunn_sklearn(X, labels, "cosine")
    assert dunn_index(X, labels, metric="cosine", chunk_size=chunk_size) == pytest.approx(expected, rel=1e-12)
    # the euclidean path skips the diagonal too: still the brute-force value
    assert dunn_index(X, labels, chunk_size=chunk_size) == pytest.approx(_dunn_sklearn(X, labels, "euclidean"),
                                                                         rel=1e-12)


def test_cosine_dunn_with_a_zero_row_torch():
    import torch

    X = torch.tensor([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 2.0]], dtype=torch.float64)
    got = dunn_index(X, [0, 0, 0, 1, 1], metric="cosine")
    assert isinstance(got, torch.Tensor) and float(got) == _dunn_sklearn(X.numpy(), [0, 0, 0, 1, 1], "cosine")


# ---------------------------------------------------------------------------------------------- item 1
_ZERO_OVER_ZERO = (r"^The 'X' parameter of dunn_index must have a cluster of non-zero diameter or clusters at a "
                   r"non-zero distance from each other\. Got 6 samples whose clusters are each a single repeated "
                   r"point, two of them at the same point \((euclidean|cosine) distance 0\), so the index is 0/0, "
                   r"undefined\.$")

_UNDEFINED = [
    (np.zeros((6, 3)), [0, 0, 0, 1, 1, 1], "euclidean"),  # the trial's input
    (np.full((6, 3), 2.5), [0, 1, 0, 1, 0, 1], "euclidean"),  # constant rows
    (np.repeat([[1.0, 2.0], [1.0, 2.0], [4.0, 0.0]], 2, axis=0), [0, 0, 1, 1, 2, 2], "euclidean"),  # two coincide
    (np.repeat([[3.0, 4.0], [6.0, 8.0], [4.0, 0.0]], 2, axis=0), [0, 0, 1, 1, 2, 2], "cosine"),  # one direction
]


@pytest.mark.parametrize(("X", "labels", "metric"), _UNDEFINED)
def test_dunn_of_zero_over_zero_is_refused(X, labels, metric):
    """Every cluster one repeated point and two clusters at the same point: separation and diameter are both 0
    (scikit-learn's distance matrix gives 0/0 = nan), and the index (inf before) is refused, as isoscore refuses
    identical samples."""
    with np.errstate(invalid="ignore"):
        assert np.isnan(_dunn_sklearn(X, labels, metric))
    with pytest.raises(IsotropyValueError, match=_ZERO_OVER_ZERO):
        dunn_index(X, labels, metric=metric)


@pytest.mark.parametrize(("X", "labels", "metric"), _UNDEFINED)
def test_dunn_of_zero_over_zero_is_refused_torch(X, labels, metric):
    import torch

    with pytest.raises(IsotropyValueError, match=_ZERO_OVER_ZERO):
        dunn_index(torch.tensor(X, requires_grad=True), labels, metric=metric)


def test_dunn_stays_defined_next_to_the_refusal():
    """Compact clusters apart: inf (separation > 0, diameter 0); all-zero rows under cosine: 1 (each zero row at
    distance 1 from the others, scikit-learn's convention), not refused."""
    X = np.repeat([[0.0, 0.0], [3.0, 4.0]], 3, axis=0)
    assert dunn_index(X, [0, 0, 0, 1, 1, 1]) == np.inf
    with np.errstate(divide="ignore"):
        assert _dunn_sklearn(X, [0, 0, 0, 1, 1, 1], "euclidean") == np.inf
    zeros = np.zeros((6, 3))
    assert dunn_index(zeros, [0, 0, 0, 1, 1, 1], metric="cosine") == _dunn_sklearn(zeros, [0, 0, 0, 1, 1, 1],
                                                                                     "cosine") == 1.0


# ---------------------------------------------------------------------------------------------- item 3
def _partition_reference(X):
    """I(W) by its definition: eigenvectors of XᵀX (both signs), Z(c) = Σ exp(c·x) in log space (scipy)."""
    from scipy.special import logsumexp

    X = np.asarray(X, dtype=np.float64)
    _, U = np.linalg.eigh(X.T @ X)
    U = np.hstack([U, -U])
    log_z = logsumexp(X @ U, axis=0)
    return float(np.exp(log_z.min() - log_z.max()))


def _backends():
    import dask.array as da
    import torch

    return [lambda X: X, torch.tensor, lambda X: da.from_array(X, chunks=(2, -1))]


@pytest.mark.parametrize("to", range(3), ids=["numpy", "torch", "dask"])
def test_partition_isotropy_refuses_one_row(to):
    """A single vector has no spread to measure: its value, exp(-2|x|), only restates its norm (the trial got
    0.024); refused with the 'at least 2 samples' of every other metric."""
    X = np.array([[1.2, -0.9, 0.8]])
    assert _partition_reference(X) == pytest.approx(np.exp(-2 * np.linalg.norm(X)), rel=1e-12)
    with pytest.raises(IsotropyValueError, match=r"^The 'X' parameter of partition_isotropy must have at least 2 "
                                                 r"samples \(rows\)\. Got 1 instead\.$"):
        partition_isotropy(_backends()[to](X))


@pytest.mark.parametrize("to", range(3), ids=["numpy", "torch", "dask"])
@pytest.mark.parametrize("shape", [(6, 3), (2, 5)], ids=["n>d", "n<d"])
def test_partition_isotropy_refuses_all_zero(to, shape):
    """All-zero rows: Z(c) = n for every c, so the formula reads 1, 'perfectly isotropic', for rows without a
    direction (it returned 1.0); refused, as effective_rank refuses all-zero data."""
    X = np.zeros(shape)
    assert _partition_reference(X) == 1.0  # the formula's (meaningless) value
    with pytest.raises(IsotropyValueError, match=rf"^The 'X' parameter of partition_isotropy must not be all zero\. "
                                                 rf"Got {shape[0]} zero rows instead, which have no direction: Z\(c\) = n "
                                                 rf"for every c, so I\(W\) = 1 would say nothing about isotropy\.$"):
        partition_isotropy(_backends()[to](X))


@pytest.mark.parametrize("to", range(3), ids=["numpy", "torch", "dask"])
def test_partition_isotropy_of_identical_rows_is_their_closed_form(to):
    """Identical non-zero rows are kept (I(W) is not centred): all in one direction, I = exp(-2|x|)."""
    X = np.tile([[0.5, -1.0, 2.0]], (4, 1))
    expected = np.exp(-2 * np.linalg.norm(X[0]))
    assert _partition_reference(X) == pytest.approx(expected, rel=1e-12)
    assert float(partition_isotropy(_backends()[to](X))) == pytest.approx(expected, rel=1e-12)


# ---------------------------------------------------------------------------------------------- item 4
def _transformers():
    from isotropy.transforms import AllButTheTop, ClusterCentering, ClusterIsotropy, Whitening

    return {"AllButTheTop": lambda: AllButTheTop(n_components=1), "Whitening": lambda: Whitening(),
            "ClusterCentering": lambda: ClusterCentering(n_clusters=2, random_state=0),
            "ClusterIsotropy": lambda: ClusterIsotropy(n_clusters=2, n_components=1, random_state=0)}


_TRANSFORMERS = ["AllButTheTop", "Whitening", "ClusterCentering", "ClusterIsotropy"]


def _data():
    rng = np.random.default_rng(3)
    return rng.normal(size=(40, 6)) + 4.0 * (np.arange(40) % 2)[:, None]


@pytest.mark.parametrize("name", _TRANSFORMERS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("to", ["numpy", "torch"])
def test_transforms_refuse_non_finite_in_one_line(name, bad, to):
    """fit and transform refuse NaN/inf in one line, at its row and column, as the metrics do (scikit-learn's
    message ran over several lines and recommended HistGradientBoostingClassifier)."""
    import torch

    X = _data()
    Y = X.copy()
    Y[5, 3] = bad
    wrap = torch.tensor if to == "torch" else (lambda A: A)
    for method, call in (("fit", lambda: _transformers()[name]().fit(wrap(Y))),
                         ("transform", lambda: _transformers()[name]().fit(X).transform(wrap(Y))),
                         ("fit", lambda: _transformers()[name]().fit_transform(wrap(Y)))):
        with pytest.raises(IsotropyValueError) as info:
            call()
        assert str(info.value) == (f"The 'X' parameter of {name}.{method} must contain only finite values (no NaN or inf). "
                                   f"Got {bad} at row 5, column 3 instead.")


@pytest.mark.parametrize("name", ["ClusterCentering", "ClusterIsotropy"])
def test_cluster_transforms_predict_refuses_non_finite_in_one_line(name):
    X = _data()
    Y = X.copy()
    Y[0, 0] = np.nan
    with pytest.raises(IsotropyValueError, match=rf"^The 'X' parameter of {name}\.predict must contain only finite "
                                                 rf"values \(no NaN or inf\)\. Got nan at row 0, column 0 instead\.$"):
        _transformers()[name]().fit(X).predict(Y)


def test_transform_refuses_pandas_missing_value_at_its_row():
    import pandas as pd

    X = _data()
    frame = pd.DataFrame(X, columns=[f"c{j}" for j in range(6)]).astype("Float64")
    frame.iloc[9, 4] = pd.NA
    with pytest.raises(IsotropyValueError, match=r"^The 'X' parameter of AllButTheTop\.fit must contain only finite "
                                                 r"values \(no NaN or inf\)\. Got nan at row 9, column 4 instead\.$"):
        _transformers()["AllButTheTop"]().fit(frame)


def test_a_refused_refit_keeps_the_previous_fit():
    """A refit refused for a NaN leaves the fitted transform as it was (its width included): the values are still
    All-But-The-Top of the first data, against scikit-learn's PCA (mean removed, top direction projected out)."""
    from sklearn.decomposition import PCA

    X = _data()
    model = _transformers()["AllButTheTop"]().fit(X)
    wide = np.random.default_rng(0).normal(size=(30, 9))
    wide[2, 2] = np.nan
    with pytest.raises(IsotropyValueError, match="Got nan at row 2, column 2"):
        model.fit(wide)
    assert model.n_features_in_ == 6
    pca = PCA(n_components=1).fit(X)
    Xc = X - pca.mean_
    expected = Xc - (Xc @ pca.components_.T) @ pca.components_
    np.testing.assert_allclose(model.transform(X), expected, atol=1e-10)


# ---------------------------------------------------------------------------------------------- item 5
@pytest.mark.parametrize("name", ["cosine_similarity_mean", "twonn_dimension"])
def test_one_feature_is_singular(name):
    import isotropy

    with pytest.raises(IsotropyValueError) as info:
        getattr(isotropy, name)(np.ones((5, 0)))
    assert str(info.value) == (f"The 'X' parameter of {name} must have at least 1 feature (column). "
                               f"Got 0 instead.")


def test_one_sample_is_singular_and_more_stay_plural():
    import isotropy
    from isotropy.transforms import all_but_the_top

    with pytest.raises(IsotropyValueError) as info:
        all_but_the_top(np.ones((0, 3)))
    assert str(info.value) == "The 'X' parameter of all_but_the_top must have at least 1 sample (row). Got 0 instead."
    with pytest.raises(IsotropyValueError) as info:
        isotropy.isoscore(np.ones((5, 1)))
    assert str(info.value) == "The 'X' parameter of isoscore must have at least 2 features (columns). Got 1 instead."
    with pytest.raises(IsotropyValueError) as info:
        isotropy.isoscore(np.ones((1, 3)))
    assert str(info.value) == "The 'X' parameter of isoscore must have at least 2 samples (rows). Got 1 instead."


# ---------------------------------------------------------------------------------------------- the dask paths
@pytest.mark.parametrize(("X", "labels", "metric"), _UNDEFINED)
def test_dunn_of_zero_over_zero_is_refused_on_dask(X, labels, metric):
    import dask
    import dask.array as da

    with dask.config.set(scheduler="sync"), pytest.raises(IsotropyValueError, match=_ZERO_OVER_ZERO):
        dunn_index(da.from_array(X, chunks=(2, -1)), labels, metric=metric, chunk_size=2)


@pytest.mark.parametrize("chunk_size", [1, 2, 5])
def test_cosine_dunn_with_a_zero_row_on_dask(chunk_size):
    """The tiles' diagonal: a zero row's pair with itself (1 under cosine) was the diameter there too, so inf."""
    import dask
    import dask.array as da

    X = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 2.0]])
    labels = [0, 0, 0, 1, 1]
    with dask.config.set(scheduler="sync"):
        got = dunn_index(da.from_array(X, chunks=(chunk_size, -1)), labels, metric="cosine", chunk_size=chunk_size)
    assert got == _dunn_sklearn(X, labels, "cosine") == 1.0


@pytest.mark.parametrize("name", ["cosine_similarity_mean", "twonn_dimension"])
def test_one_feature_is_singular_on_dask(name):
    import dask.array as da

    import isotropy

    with pytest.raises(IsotropyValueError) as info:
        getattr(isotropy, name)(da.ones((5, 0)))
    assert str(info.value) == f"The 'X' parameter of {name} must have at least 1 feature (column). Got 0 instead."


@pytest.mark.parametrize("labels", [
    ["a", None, "b", "a"],
    ["a", float("nan"), "b", "a"],  # numpy alone made this the four strings 'a', 'nan', 'b', 'a': a cluster 'nan'
    "pandas object",
    "pandas string",
])
def test_a_missing_label_is_refused_at_its_row(labels):
    """Labels with a missing one (None, NaN, pd.NA): refused naming the row, not 'a mix of NoneType, str' (a Python
    API trial) nor, for a list holding NaN among strings, read as a label 'nan' (silently)."""
    import pandas as pd

    from isotropy import silhouette_score

    if labels == "pandas object":
        labels = pd.Series(["a", None, "b", "a"])
    elif labels == "pandas string":
        labels = pd.Series(["a", "b", "b", "a"], dtype="string").where([True, False, True, True])
    X = np.random.default_rng(0).normal(size=(4, 2))
    with pytest.raises(IsotropyValueError, match=r"^The 'labels' parameter of silhouette_score must have a label for "
                                                 r"every sample\. Got a missing label \((None|nan|<NA>)\) at row 1 "
                                                 r"instead\.$"):
        silhouette_score(X, labels)
