"""Fixes from a new-user trial of the Python API: the Dunn index on data whose value is 0/0 or that hold a
zero row under the cosine metric, partition_isotropy on input whose value is meaningless, and the grammar of
the sample/feature-count messages. References: scikit-learn's pairwise distances and closed forms."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics.pairwise import cosine_distances, euclidean_distances

from isotropy import dunn_index


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
