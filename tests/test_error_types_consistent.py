"""One exception type for one problem (a user trial).

A scipy sparse ``X`` raised TypeError where a torch sparse tensor raised IsotropyValueError (a ValueError), and
``metric=1`` or ``metric=['cosine']`` a ValueError for what is a wrong type. Both now raise
:class:`isotropy._utils.errors.IsotropyTypeError`, a TypeError (the convention for a wrong type, as scikit-learn's
InvalidParameterError is) that is also the IsotropyValueError they raised before, so that code catching either
still catches them; a string that is not an option stays an IsotropyValueError alone.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse
import torch

import isotropy
from isotropy import IsotropyValueError
from isotropy._utils.errors import IsotropyTypeError

X = np.random.default_rng(0).normal(size=(60, 5))


def _raised(call) -> Exception:
    with pytest.raises(Exception) as info:
        call()
    return info.value


def test_the_error_type_is_both():
    assert issubclass(IsotropyTypeError, TypeError) and issubclass(IsotropyTypeError, IsotropyValueError)
    assert issubclass(IsotropyTypeError, ValueError)


def test_sparse_x_is_the_same_error_for_scipy_and_torch():
    scipy_error = _raised(lambda: isotropy.isoscore(scipy.sparse.csr_matrix(X)))
    torch_error = _raised(lambda: isotropy.isoscore(torch.tensor(X).to_sparse()))
    assert type(scipy_error) is type(torch_error) is IsotropyTypeError
    assert str(scipy_error) == ("The 'X' parameter of isoscore must be a dense array. Got a scipy sparse csr_matrix "
                                "instead; convert it with .toarray().")
    assert str(torch_error) == ("The 'X' parameter of isoscore must be a dense tensor. Got a sparse tensor (layout "
                                "torch.sparse_coo) instead; convert it with .to_dense().")


@pytest.mark.parametrize("metric, shown", [(1, "1"), (["cosine"], "['cosine']"), (None, "None")])
def test_a_metric_that_is_not_a_string_is_a_type_error(metric, shown):
    for call, caller in ((lambda: isotropy.kneighbors(X, n_neighbors=2, metric=metric), "kneighbors"),
                         (lambda: isotropy.silhouette_score(X, np.arange(60) % 3, metric=metric), "silhouette_score"),
                         (lambda: isotropy.twonn_dimension(X, metric=metric), "twonn_dimension")):
        error = _raised(call)
        assert type(error) is IsotropyTypeError
        assert str(error) == (f"The 'metric' parameter of {caller} must be one of {{'euclidean', 'cosine'}}. Got "
                              f"{shown} instead.")
    # an array of strings is refused before `in` compares it element by element (numpy's "truth value ... ambiguous")
    error = _raised(lambda: isotropy.kneighbors(X, n_neighbors=2, metric=np.array(["cosine", "euclidean"])))
    assert type(error) is IsotropyTypeError and "Got array(['cosine', 'euclidean'], dtype='<U9') instead." in str(error)


def test_a_string_that_is_not_an_option_is_a_value_error_only():
    error = _raised(lambda: isotropy.kneighbors(X, n_neighbors=2, metric="manhattan"))
    assert type(error) is IsotropyValueError and not isinstance(error, TypeError)
    dist, _ = isotropy.kneighbors(X, n_neighbors=2, metric=np.str_("euclidean"))  # a numpy string is a string
    assert dist.shape == (60, 2)


@pytest.mark.parametrize("call", [
    lambda metric: isotropy.silhouette_score(X, np.arange(60) % 2, metric=metric),
    lambda metric: isotropy.twonn_dimension(X, metric=metric),
    lambda metric: isotropy.mle_dimension(X, metric=metric),
], ids=["silhouette_score", "twonn_dimension", "mle_dimension"])
def test_an_array_as_metric_is_a_wrong_type_not_numpy_truth_value_error(call):
    # the metric chose X's rescaling (metric == "cosine") before it was checked: numpy's "truth value of an array
    # ... is ambiguous" for an array of two names, and an array of one compared equal to "cosine"
    for metric in (np.array(["cosine", "euclidean"]), np.array(["cosine"])):
        error = _raised(lambda: call(metric))  # noqa: B023
        assert type(error) is IsotropyTypeError
        assert "'metric' parameter" in str(error) and "must be one of" in str(error)


def test_regulariser_method_of_a_wrong_type_and_isoscorestar_complex_cov():
    from isotropy.training.metrics import IsoScoreStar
    from isotropy.training.regularisers import HiddenStateRegulariser

    error = _raised(lambda: HiddenStateRegulariser(method=1))
    assert type(error) is IsotropyTypeError and "'method' parameter of HiddenStateRegulariser" in str(error)
    error = _raised(lambda: HiddenStateRegulariser(method=np.array(["istar"])))
    assert type(error) is IsotropyTypeError
    error = _raised(lambda: HiddenStateRegulariser(method="istr"))
    assert type(error) is IsotropyValueError and str(error).endswith("Did you mean 'istar'?")
    error = _raised(lambda: IsoScoreStar(shrinkage_cov=np.eye(5) + 1j * np.triu(np.ones((5, 5)), 1)))
    assert type(error) is IsotropyTypeError
    assert str(error) == ("The 'shrinkage_cov' parameter of IsoScoreStar must be a real-valued matrix. Got dtype "
                          "complex128 instead.")
