"""One range of int seeds, [0, 2**32 - 1], refused in one line naming the parameter and the function.

A negative seed gave numpy's "expected non-negative integer" (naming neither), and 2**40 was taken by
the functions that seed a Generator but refused by ``silhouette_score`` with numpy's "Seed must be
between 0 and 2**32 - 1".
"""

from __future__ import annotations

import numpy as np
import pytest

import isotropy
from isotropy.transforms import cluster_center, cluster_isotropy

X = np.random.default_rng(0).normal(size=(60, 4))
GROUPS = np.arange(60) % 3

CALLS = {
    "silhouette_score": lambda seed: isotropy.silhouette_score(X, GROUPS, sample_size=30, random_state=seed),
    "inter_type_cosine": lambda seed: isotropy.inter_type_cosine(X, GROUPS, random_state=seed),
    "intra_type_cosine": lambda seed: isotropy.intra_type_cosine(X, GROUPS, max_instances=5, random_state=seed),
    "cluster_isotropy": lambda seed: cluster_isotropy(X, n_clusters=2, n_components=1, random_state=seed),
    "cluster_center": lambda seed: cluster_center(X, n_clusters=2, random_state=seed),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_int_seeds_outside_the_range_are_refused_in_one_line(name):
    for seed in (-1, 2**40):
        with pytest.raises(ValueError) as info:
            CALLS[name](seed)
        assert str(info.value) == (f"The 'random_state' parameter of {name} must be None, a numpy Generator or "
                                   f"RandomState, or an int in the range [0, 2**32 - 1]. Got {seed} instead.")
    first, again = CALLS[name](2**32 - 1), CALLS[name](2**32 - 1)  # the largest seed is taken, and repeats
    for a, b in zip(*(r if isinstance(r, tuple) else (r,) for r in (first, again))):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
