"""A transform whose settings remove every direction of variance says so: its rows become the zero vector.

``AllButTheTop(n_components=8)`` on 8 features and ``InBatchClusterIsotropy(n_components=8)`` on 8 features returned
zeros without a word, where ``ClusterIsotropy`` warned of the same (a user trial).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from isotropy.training import InBatchClusterIsotropy
from isotropy.transforms import AllButTheTop, all_but_the_top

X = np.random.default_rng(0).normal(size=(100, 8))


def _messages(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = call()
    return value, [str(w.message) for w in caught]


def test_all_but_the_top_of_every_direction_warns_that_the_rows_become_zero():
    Z, said = _messages(lambda: AllButTheTop(n_components=8).fit_transform(X))
    assert np.abs(Z).max() < 1e-12
    assert said == [("AllButTheTop: n_components=8 removes every direction of variance of X (the centred X has rank 8), "
                    "so the rows fitted on (and any row in their span) become the zero vector; use at most 7 "
                    "components to keep some of its variance.")]
    low_rank = X[:, :2] @ np.random.default_rng(1).normal(size=(2, 8))  # rank 2 in 8 features
    Z, said = _messages(lambda: all_but_the_top(low_rank, n_components=2))
    assert np.abs(Z).max() < 1e-12 and len(said) == 1 and "(the centred X has rank 2)" in said[0]
    assert "use at most 1 component to keep" in said[0]
    for k in (0, 1, 7):  # some variance kept: nothing said
        Z, said = _messages(lambda k=k: AllButTheTop(n_components=k).fit_transform(X))
        assert said == [] and np.abs(Z).max() > 0.1


def test_auto_capped_below_its_rule_says_it_once():
    rows = np.random.default_rng(2).normal(size=(3, 300))  # auto: 3 directions, 3 rows span 2
    _, said = _messages(lambda: AllButTheTop().fit(rows))
    assert len(said) == 1 and said[0].startswith("AllButTheTop: n_components='auto' gives 3")


def test_in_batch_cluster_isotropy_of_every_direction_warns():
    H = torch.randn(64, 8, generator=torch.Generator().manual_seed(0), requires_grad=True)
    out, said = _messages(lambda: InBatchClusterIsotropy(n_clusters=2, n_components=8)(H))
    assert float(out.detach().abs().max()) < 1e-4  # float32 round-off of zero
    assert said == [("InBatchClusterIsotropy: n_components=8 removes every one of the n_features=8 directions from "
                    "each cluster: every row becomes the zero vector and passes no gradient. Use fewer components.")]
    out, said = _messages(lambda: InBatchClusterIsotropy(n_clusters=2, n_components=1)(H))
    assert said == [] and float(out.detach().abs().max()) > 0.1


def test_the_warning_points_at_the_users_line():
    with pytest.warns(UserWarning, match="removes every direction") as record:
        AllButTheTop(n_components=8).fit(X)
    assert record[0].filename == __file__
