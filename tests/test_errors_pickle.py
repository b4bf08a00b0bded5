"""The library's errors survive pickling (process pools, dask workers), with their message and their fields.

A subclass whose ``__init__`` takes keyword-only fields (``RankDeficient``'s ``rank``) failed to unpickle, so that
scikit-learn's ``n_jobs=2`` reported "A result has failed to un-serialize" in place of the one-line refusal (a user
trial).
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from isotropy import IsotropyValueError
from isotropy._kernels.dimension import TooFewDistinctError
from isotropy._utils.errors import IsotropyTypeError
from isotropy.models.encoders import LayerOutOfRange
from isotropy.training.metrics import TooFewRowsError
from isotropy.transforms import Whitening
from isotropy.transforms._whitening import RankDeficient


@pytest.mark.parametrize("error", [
    IsotropyValueError("bad value"), IsotropyTypeError("bad type"),
    RankDeficient("rank 2 of 5", rank=2, n_directions=5), TooFewRowsError("1 row", rows=1, need=2),
    LayerOutOfRange("layer 9", low=0, high=3, model="m", layer=9), TooFewDistinctError("3 of 2", 3, 2)])
def test_an_error_pickles_with_its_message_and_fields(error):
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is type(error) and str(again) == str(error) and again.args == error.args
    assert vars(again) == vars(error)


def test_a_refusal_inside_a_process_pool_reaches_the_caller_as_itself():
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score
    from sklearn.pipeline import make_pipeline

    X = np.random.default_rng(0).normal(size=(40, 60))  # 20 rows per fold in 60 features: rank-deficient
    y = np.arange(40) % 2
    with pytest.raises(RankDeficient) as alone:
        Whitening().fit(X[:20])
    with pytest.raises(RankDeficient) as pooled:
        cross_val_score(make_pipeline(Whitening(), LogisticRegression()), X, y, cv=2, n_jobs=2, error_score="raise")
    assert str(pooled.value) == str(alone.value)  # any 20 of these rows: the same rank, the same message
    assert (pooled.value.rank, pooled.value.n_directions) == (alone.value.rank, alone.value.n_directions)
