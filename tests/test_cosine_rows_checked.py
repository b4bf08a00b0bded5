"""Per-type cosines (S_inter, S_intra) check every row of X, whatever rows the seed draws (a user trial), on numpy,
torch and dask; kept apart from test_cosine.py, which also runs in CI's core-only minimum-versions job."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_cosine import _brute_intra, _brute_mean_cos

from isotropy import IsotropyValueError, inter_type_cosine, intra_type_cosine

# --- a user trial: S_inter's zero rows refused whatever the draw, and a zero type mean named by its label ------------

def _as(kind, A):
    if kind == "torch":
        return torch.tensor(A)
    if kind == "dask":
        import dask.array as da  # (a module of its own: test_cosine runs in CI's core-only job too)
        return da.from_array(A, chunks=(25, A.shape[1]))
    return A


@pytest.mark.parametrize("kind", ["numpy", "torch", "dask"])
def test_inter_instance_refuses_a_zero_row_of_X_whatever_the_seed(kind):
    # only the drawn rows were checked, by their place among the drawn: random_state=0 measured -0.0143 past the zero
    # row 40, random_state=1 refused it as "first at index 0"
    X = np.random.default_rng(0).normal(size=(60, 5))
    X[40] = 0.0
    groups = np.arange(60) % 20
    for seed in range(4):
        with pytest.raises(IsotropyValueError) as info:
            inter_type_cosine(_as(kind, X), groups, random_state=seed)
        assert str(info.value) == ("The 'X' parameter of inter_type_cosine must not contain zero vectors, for which "
                                   "cosine similarity is undefined. Got 1 all-zero row(s) (first at index 40) instead.")
    X[40] = 1e-310
    with pytest.raises(IsotropyValueError, match=r"^The 'X' parameter of inter_type_cosine must have rows of normal "
                                                 r"magnitude\. Got 1 row\(s\) \(first at index 40\) made only of "
                                                 r"subnormal numbers"):
        inter_type_cosine(_as(kind, X), groups, random_state=0)


@pytest.mark.parametrize("kind", ["numpy", "torch", "dask"])
def test_inter_mean_names_the_type_whose_mean_is_zero_by_its_label(kind):
    X = np.random.default_rng(0).normal(size=(60, 5))
    groups = np.array([f"w{i % 20:02d}" for i in range(60)])
    X[groups == "w04"] = 0.0
    X[4], X[24] = 1.0, -1.0  # type w04's instances cancel (the position of the type among the labels is 4 too)
    X[groups == "w07"] = 0.0
    with pytest.raises(IsotropyValueError) as info:
        inter_type_cosine(_as(kind, X), groups, type_vector="mean")
    assert str(info.value) == ("The 'X' parameter of inter_type_cosine must give every type a mean of non-zero length "
                               "with type_vector='mean' (the cosine of a zero vector is undefined). Got 2 type(s) "
                               "whose instances sum to the zero vector (first: type 'w04') instead.")
    # a zero instance is no direction of its own there: it leaves its type's mean, and the value, as they are
    Y = np.random.default_rng(1).normal(size=(60, 5))
    Y[40] = 0.0
    means = np.stack([Y[groups == g].mean(0) for g in np.unique(groups)])
    out = inter_type_cosine(_as(kind, Y), groups, type_vector="mean")
    assert float(out) == pytest.approx(_brute_mean_cos(means), abs=1e-12)


# --- the same trial for S_intra: with max_instances every row of X is checked, and a bad row named by its row -------

@pytest.mark.parametrize("kind", ["numpy", "torch", "dask"])
def test_intra_max_instances_refuses_a_zero_row_of_X_whatever_the_seed(kind):
    # only the drawn rows were checked, by their place among the drawn: random_state=0 measured 0.0529 past the zero
    # row 40, random_state=1 refused it as "first at index 30", 2 as "first at index 23"
    X = np.random.default_rng(0).normal(size=(60, 5))
    X[40] = 0.0
    groups = np.arange(60) % 20
    for seed in range(4):
        with pytest.raises(IsotropyValueError) as info:
            intra_type_cosine(_as(kind, X), groups, max_instances=2, random_state=seed)
        assert str(info.value) == ("The 'X' parameter of intra_type_cosine must not contain zero vectors, for which "
                                   "cosine similarity is undefined. Got 1 all-zero row(s) (first at index 40) instead.")
    X[40] = 1e-310
    for seed in range(4):
        with pytest.raises(IsotropyValueError, match=r"^The 'X' parameter of intra_type_cosine must have rows of "
                                                     r"normal magnitude\. Got 1 row\(s\) \(first at index 40\) made "
                                                     r"only of subnormal numbers"):
            intra_type_cosine(_as(kind, X), groups, max_instances=2, random_state=seed)
    # a type of one instance has no pair, but its zero row is refused as with max_instances=None
    X[40] = 1.0
    X[59] = 0.0
    single = np.r_[groups[:59], 99]
    for max_instances in (None, 2):
        with pytest.raises(IsotropyValueError, match=r"all-zero row\(s\) \(first at index 59\)"):
            intra_type_cosine(_as(kind, X), single, max_instances=max_instances, random_state=0)


@pytest.mark.parametrize("kind", ["numpy", "torch", "dask"])
def test_intra_max_instances_value_after_the_check(kind):
    # the check of every row leaves the draw and the value as they were: the brute force over the rows drawn
    X = np.random.default_rng(3).normal(size=(60, 5)) + 0.5
    groups = np.arange(60) % 7
    perm = np.random.default_rng(5).permutation(60)
    order = perm[np.argsort(groups[perm], kind="stable")]
    keep = np.concatenate([order[groups[order] == g][:3] for g in range(7)])
    out = intra_type_cosine(_as(kind, X), groups, max_instances=3, random_state=5)
    assert float(out) == pytest.approx(_brute_intra(X[keep], groups[keep]), abs=1e-12)
    # the groups' refusal comes first, as without max_instances
    X[2] = 0.0
    with pytest.raises(IsotropyValueError, match="2 or more instances"):
        intra_type_cosine(_as(kind, X), np.arange(60), max_instances=2, random_state=0)
