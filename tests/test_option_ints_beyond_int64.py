"""Int options of 2**64 and more (a user trial).

``check_scalar`` called ``np.isfinite(value)``, which numpy refuses for a Python int from 2**64 on ("ufunc 'isfinite'
not supported for the input types"), while 2**64 - 1 got the one-line range message; the dask ``chunk_size`` of
2**64 passed the check and reached dask's rechunk, which raised the same numpy error.
"""

from __future__ import annotations

import numpy as np
import pytest
import sklearn.metrics as skm
from sklearn.neighbors import NearestNeighbors

import isotropy
from isotropy import IsotropyValueError

X = np.random.default_rng(0).normal(size=(60, 5))
LABELS = np.arange(60) % 3
B = 2**64
_AT_MOST = "at most n_samples - 1 = 59 for 60 samples"


@pytest.mark.parametrize("call, message", [
    (lambda: isotropy.kneighbors(X, n_neighbors=B),
     f"The 'n_neighbors' parameter of kneighbors must be an int in the range [1, 59] ({_AT_MOST}). Got {B} instead."),
    (lambda: isotropy.mle_dimension(X, n_neighbors=B),
     f"The 'n_neighbors' parameter of mle_dimension must be an int in the range [2, 59] ({_AT_MOST}). Got {B} instead."),
    (lambda: isotropy.rogue_dimension_share(X, n_dimensions=B),
     f"The 'n_dimensions' parameter of rogue_dimension_share must be an int in the range [1, 5]. Got {B} instead."),
    (lambda: isotropy.kneighbors(X, n_neighbors=10**5000),  # past Python's 4,300-digit limit of repr
     (f"The 'n_neighbors' parameter of kneighbors must be an int in the range [1, 59] ({_AT_MOST}). Got an int of "
      "about 5,001 digits instead.")),
    (lambda: isotropy.rankme(X, epsilon=10**400),  # a float option: an int beyond float64 is not a finite float
     f"The 'epsilon' parameter of rankme must be a float in the range [0, 1]. Got 1{'0' * 56}... instead."),
])
def test_an_int_beyond_int64_gets_the_range_message(call, message):
    with pytest.raises(IsotropyValueError) as info:
        call()
    assert str(info.value) == message


def test_a_weight_beyond_float64_is_refused_in_one_line():
    """float(10**400) raised OverflowError ('int too large to convert to float') after the check."""
    import torch

    from isotropy.torch import IStarLoss

    with pytest.raises(IsotropyValueError, match=r"^The 'weight' parameter of IStarLoss must be a float in the range "
                                                 r"\(-inf, inf\)\. Got 1000"):
        IStarLoss(weight=10**400)
    assert IStarLoss(weight=2**64).weight == float(2**64)  # an int float64 holds is taken
    lam = np.linalg.eigvalsh(np.cov(X, rowvar=False))  # IsoScore from the eigenvalues (Rudman et al.)
    expected = -float(B) * (lam.sum() ** 2 / (lam ** 2).sum() - 1) / (len(lam) - 1)
    assert float(IStarLoss(weight=B, zeta=0.0)(torch.tensor(X))) == pytest.approx(expected, rel=1e-12)


def test_chunk_sizes_of_any_size_give_the_reference_neighbours():
    """``chunk_size`` has no upper bound (more rows than the array has is one tile): 2**64 and 10**30 rows per tile
    give scikit-learn's neighbours, in memory and on dask."""
    import dask.array as da
    ref_d, ref_i = NearestNeighbors(n_neighbors=3).fit(X).kneighbors(X, n_neighbors=4)
    for chunk_size in (B, 10**30):
        dist, ind = isotropy.kneighbors(X, n_neighbors=3, chunk_size=chunk_size)
        np.testing.assert_array_equal(ind, ref_i[:, 1:])
        np.testing.assert_allclose(dist, ref_d[:, 1:], rtol=1e-12)
        dist, ind = isotropy.distributed.kneighbors(da.from_array(X, chunks=20), n_neighbors=3, chunk_size=chunk_size)
        np.testing.assert_array_equal(ind.compute(), ref_i[:, 1:])
        np.testing.assert_allclose(dist.compute(), ref_d[:, 1:], rtol=1e-12)
        value = isotropy.distributed.silhouette_score(da.from_array(X, chunks=20), LABELS, chunk_size=chunk_size)
        assert float(value) == pytest.approx(skm.silhouette_score(X, LABELS), abs=1e-12)
