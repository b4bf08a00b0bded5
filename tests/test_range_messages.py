"""Range messages say what they mean: an int parameter says "an int", an open end "inf)", and a neighbour
count's upper end names the sample count it comes from."""

from __future__ import annotations

import re

import numpy as np
import pytest

import isotropy
from isotropy import distributed
from isotropy.metrics.dimension import local_mle_dimension, neighbour_dimensions
from isotropy.models.encoders import encode_pooled

X = np.random.default_rng(0).normal(size=(10, 4))


@pytest.mark.parametrize("call, message", [
    (lambda: encode_pooled(["a", "b"], device="cpu", batch_size=2.5),
     "The 'batch_size' parameter of encode_pooled must be an int in the range [1, inf). Got 2.5 instead."),
    (lambda: encode_pooled(["a", "b"], device="cpu", max_length=0),
     "The 'max_length' parameter of encode_pooled must be an int in the range [2, inf). Got 0 instead."),
    (lambda: encode_pooled(["a", "b"], device="cpu", batch_size=np.int64(0)),
     "The 'batch_size' parameter of encode_pooled must be an int in the range [1, inf). Got np.int64(0) instead."),
])
def test_an_int_parameter_says_int_and_an_open_end(call, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        call()


def test_a_numpy_int_is_an_int():
    # kind=int accepts numpy's integers (a numpy int64 batch size is an int; it was refused as "not a float")
    from isotropy._utils.validation import check_scalar

    assert check_scalar(np.int64(3), "batch_size", caller="f", kind=int, low=1) == 3


def _limit(k, n, low):
    return (f"must be an int in the range [{low}, {n - 1}] (at most n_samples - 1 = {n - 1} for {n} samples). "
            f"Got {k} instead.")


@pytest.mark.parametrize("name, call, low", [
    ("mle_dimension", lambda A, k: isotropy.mle_dimension(A, n_neighbors=k), 2),
    ("local_mle_dimension", lambda A, k: local_mle_dimension(A, n_neighbors=k), 2),
    ("neighbour_dimensions", lambda A, k: neighbour_dimensions(A, n_neighbors=k), 2),
    ("kneighbors", lambda A, k: isotropy.kneighbors(A, n_neighbors=k), 1),
])
def test_a_neighbour_count_names_the_samples_it_is_limited_by(name, call, low):
    with pytest.raises(ValueError, match=f"^The 'n_neighbors' parameter of {name} {re.escape(_limit(20, 3, low))}$"):
        call(X[:3], 20)


def test_mle_dimension_of_three_rows():
    with pytest.raises(ValueError) as info:
        isotropy.mle_dimension(X[:3])
    assert str(info.value) == ("The 'n_neighbors' parameter of mle_dimension must be an int in the range [2, 2] "
                               "(at most n_samples - 1 = 2 for 3 samples). Got 20 instead.")


@pytest.mark.parametrize("name, low", [("kneighbors", 1), ("mle_dimension", 2), ("local_mle_dimension", 2)])
def test_the_dask_neighbour_counts_say_the_same(name, low):
    import dask.array as da

    A = da.from_array(X[:4], chunks=2)
    with pytest.raises(ValueError, match=re.escape(_limit(9, 4, low))):
        result = getattr(distributed, name)(A, n_neighbors=9)
        getattr(result, "compute", lambda: result)()
