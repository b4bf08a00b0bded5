"""The torchmetrics classes refuse options by position and unknown keywords in one line naming the class and its
keywords: ``IsoScore(5)`` named the private base ``_MomentMetric.__init__``, ``TwoNNDimension(foo=1)`` was
torchmetrics' "Unexpected keyword arguments" ValueError, and ``compute()`` before ``update()`` raised an error whose
class was private (a user trial)."""

from __future__ import annotations

import copy
import pickle
import warnings

import pytest
import torch

from isotropy import IsotropyValueError
from isotropy.training import metrics

CLASSES = [getattr(metrics, name) for name in metrics.__all__ if isinstance(getattr(metrics, name), type)]
KEYWORDS = {"IsoScore": "n_features", "ParticipationRatio": "n_features", "MeanCosine": "n_features",
            "IsoScoreStar": "shrinkage_cov, zeta, n_features", "EffectiveRank": "center, normalize, n_features",
            "RankMe": "epsilon, center, normalize, n_features", "RogueDimensionShare": "n_dimensions, n_features",
            "TwoNNDimension": "max_samples, random_state, discard_fraction, method, metric, n_features"}


def _quiet(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call()


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_options_by_position_and_unknown_keywords_name_the_class(cls):
    name = cls.__name__
    assert sorted(KEYWORDS) == sorted(c.__name__ for c in CLASSES)
    with pytest.raises(TypeError) as info:
        _quiet(lambda: cls(5))
    assert str(info.value) == (f"{name} takes its options as keywords ({KEYWORDS[name]}, and torchmetrics.Metric's); "
                               f"got 1 positional argument (5). The rows go to update(): {name}().update(X).")
    with pytest.raises(TypeError, match=rf"^{name} got an unexpected keyword 'foo'; it takes {KEYWORDS[name]} and "
                                        r"torchmetrics\.Metric's keywords \(compute_on_cpu, "):
        _quiet(lambda: cls(foo=1))
    metric = _quiet(cls)  # copies and pickles still build (torchmetrics passes arguments to __new__ for them)
    rows = torch.randn(30, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    copies = [copy.deepcopy(metric), pickle.loads(pickle.dumps(metric))]
    metric.update(rows)
    for again in copies:
        again.update(rows)
        torch.testing.assert_close(_quiet(again.compute), _quiet(metric.compute), equal_nan=True)


def test_compute_before_update_raises_a_public_error():
    with pytest.raises(IsotropyValueError) as info:
        _quiet(metrics.IsoScore().compute)
    assert type(info.value).__name__ == "TooFewRowsError" and not type(info.value).__name__.startswith("_")
    assert str(info.value) == "IsoScore.compute needs at least 2 rows; call update() with data first. Got 0 instead."
