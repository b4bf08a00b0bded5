"""The torchmetrics classes: a metric filled by ``merge_state`` alone computes without torchmetrics' "compute was
called before update" warning, and a batch that is not an array is refused in the toolkit's one line naming X.

Before, the merged metric's value was right but came with the warning; ``update("abc")`` raised torch's "can't
convert np.ndarray of type numpy.str_". Expected values are the float64 numpy functions on the same rows.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from isotropy import (
    cosine_similarity_mean,
    effective_rank,
    isoscore,
    isoscore_star,
    participation_ratio,
    rankme,
    twonn_dimension,
)
from isotropy.training import (
    EffectiveRank,
    IsoScore,
    IsoScoreStar,
    MeanCosine,
    ParticipationRatio,
    RankMe,
    TwoNNDimension,
)

X = np.random.default_rng(0).normal(size=(120, 5)) * [1.0, 1.0, 2.0, 3.0, 0.5] + 1.0
S = np.cov(np.random.default_rng(1).normal(size=(400, 5)), rowvar=False)

CASES = {
    "IsoScore": (IsoScore, lambda: isoscore(X)),
    "IsoScoreStar": (lambda: IsoScoreStar(shrinkage_cov=S, zeta=0.4), lambda: isoscore_star(X, shrinkage_cov=S, zeta=0.4)),
    "ParticipationRatio": (ParticipationRatio, lambda: participation_ratio(X)),
    "MeanCosine": (MeanCosine, lambda: cosine_similarity_mean(X)),
    "EffectiveRank": (EffectiveRank, lambda: effective_rank(X)),
    "RankMe": (RankMe, lambda: rankme(X)),
    "TwoNNDimension": (TwoNNDimension, lambda: twonn_dimension(X)),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("as_dict", [False, True])
def test_a_metric_filled_by_merges_alone_computes_without_warning(name, as_dict):
    make, expected = CASES[name]
    filled = make()
    filled.update(torch.as_tensor(X[:70]))
    other = make()
    other.update(torch.as_tensor(X[70:]))
    fresh = make()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fresh.merge_state(filled.metric_state if as_dict else filled)
        fresh.merge_state(other.metric_state if as_dict else other)
        value = fresh.compute()
    assert float(value) == pytest.approx(expected(), rel=1e-9)


@pytest.mark.parametrize("name", sorted(CASES))
def test_merging_an_empty_metric_into_an_empty_one_still_warns_nothing_was_seen(name):
    make, _ = CASES[name]
    fresh = make()
    fresh.merge_state(make())
    assert not fresh.update_called


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize(("batch", "got"), [("abc", "Got str instead."), (None, "Got NoneType instead."),
                                            ([["a", "b"], ["c", "d"]], "Got dtype <U1 instead.")])
def test_update_refuses_a_batch_that_is_not_an_array_in_one_line(name, batch, got):
    make, _ = CASES[name]
    metric = make()
    with pytest.raises(TypeError) as info:
        metric.update(batch)
    message = str(info.value)
    assert message.startswith(f"The 'X' parameter of {type(metric).__name__}.update must be ")
    assert message.endswith(got)


def test_array_likes_are_still_taken():
    metric = IsoScore()
    metric.update(np.zeros((0, 5)))  # an empty batch of the width: nothing to add
    metric.update(X[:60].tolist())
    metric.update(X[60:].astype(np.float32))
    assert float(metric.compute()) == pytest.approx(isoscore(np.vstack([X[:60], X[60:].astype(np.float32)])), rel=1e-9)
