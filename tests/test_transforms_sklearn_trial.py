"""Tests of isotropy.transforms from a new user's trial: few rows, large offsets, warnings, messages, inverses.

Expected values come from numpy (SVD, direct differences) and scikit-learn (KMeans, PCA), computed here.
"""

from __future__ import annotations

import numpy as np
import pytest

from isotropy.transforms import (
    AllButTheTop,
    all_but_the_top,
)


def _top_projector(X, D):
    """Projector on the top ``D`` right singular vectors of centred ``X`` (numpy SVD: the reference)."""
    _, _, vt = np.linalg.svd(X - X.mean(axis=0), full_matrices=False)
    return vt[:D].T @ vt[:D]


# ---------------------------------------------------------------- 1. AllButTheTop on few rows

def test_all_but_the_top_refuses_more_directions_than_centred_rows_span():
    X = np.random.default_rng(0).normal(size=(8, 768))
    with pytest.raises(ValueError, match=r"'n_components' .* at most min\(n_samples - 1, n_features\) = 0: "
                                         r"n_samples=1 rows span at most n_samples - 1 directions"):
        AllButTheTop(n_components=1).fit(X[:1])
    with pytest.raises(ValueError, match=r"'n_components' .* = 7: n_samples=8 rows .* Got 8 instead"):
        all_but_the_top(X, n_components=8)
    # n_samples - 1 is accepted, and removes the directions numpy's SVD gives
    abtt = AllButTheTop(n_components=7).fit(X)
    np.testing.assert_allclose(abtt.components_.T @ abtt.components_, _top_projector(X, 7), atol=1e-10)


def test_all_but_the_top_auto_caps_at_n_samples_minus_one_with_a_warning():
    rng = np.random.default_rng(1)
    X, X_new = rng.normal(size=(8, 768)), rng.normal(size=(5, 768))
    with pytest.warns(UserWarning, match=r"n_components='auto' gives 8 .* n_samples=8 rows .* removing 7") as record:
        abtt = AllButTheTop().fit(X)
    assert record[0].filename == __file__
    assert abtt.n_components_ == 7
    P = _top_projector(X, 7)
    Xc = X_new - X.mean(axis=0)
    np.testing.assert_allclose(abtt.transform(X_new), Xc - Xc @ P, atol=1e-10)
    with pytest.warns(UserWarning, match="removing 7") as record:
        Y = all_but_the_top(X)
    assert record[0].filename == __file__
    np.testing.assert_allclose(Y, (X - X.mean(axis=0)) @ (np.eye(768) - P), atol=1e-10)
    # one row: "auto" removes nothing (plain centring), not coordinate 0
    with pytest.warns(UserWarning, match="removing 0"):
        np.testing.assert_array_equal(AllButTheTop().fit(X[:1]).transform(X_new), X_new - X[0])
