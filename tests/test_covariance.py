"""participation_ratio and CovarianceAccumulator: eigenvalue reference, and streaming == in-memory.

References: participation ratio from numpy eigenvalues of np.cov (float64); the accumulator is
compared with the in-memory functions of this package, which are themselves checked against the
`isoscore` package and eigenvalue references in test_isoscore.py, and with np.cov / np.mean.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
import torch

from isotropy import (
    CovarianceAccumulator,
    IsotropyValueError,
    cosine_similarity_mean,
    isoscore,
    isoscore_star,
    participation_ratio,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _pr_reference(X):
    lam = np.linalg.eigvalsh(np.cov(np.asarray(X, dtype=np.float64), rowvar=False))
    return lam.sum() ** 2 / (lam**2).sum()


@pytest.mark.parametrize("n, d", [(300, 10), (8, 25)])
def test_participation_ratio_matches_eigen_reference(rng, backend, n, d):
    X = rng.normal(size=(n, d)) @ rng.normal(size=(d, d)) - 2.0
    out = participation_ratio(backend(X))
    assert float(out) == pytest.approx(_pr_reference(X), rel=1e-12)
    assert float(out) == pytest.approx(1 + (d - 1) * isoscore(X), rel=1e-12)


def test_participation_ratio_closed_forms(rng):
    # k equal, orthogonal directions: PR = k
    X = np.vstack([np.eye(6)[:3], -np.eye(6)[:3]])
    assert participation_ratio(X) == pytest.approx(3.0, abs=1e-14)
    assert participation_ratio(np.outer(rng.normal(size=20), rng.normal(size=4))) == pytest.approx(1.0, abs=1e-12)
    with pytest.raises(IsotropyValueError, match="non-zero variance"):
        participation_ratio(np.ones((4, 3)))
    X_t = torch.tensor(rng.normal(size=(6, 3)), requires_grad=True)
    assert torch.autograd.gradcheck(participation_ratio, (X_t,))


def _accumulate(chunks):
    acc = CovarianceAccumulator()
    for chunk in chunks:
        assert acc.update(chunk) is acc
    return acc


def test_memmap_chunks_equal_in_memory(tmp_path, rng):
    n, d = 5003, 12
    X = (rng.normal(size=(n, d)) @ rng.normal(size=(d, d)) + 4.0).astype(np.float32)
    path = tmp_path / "big.npy"
    np.save(path, X)
    mm = np.load(path, mmap_mode="r")  # read-only: the accumulator must not write into it
    sizes = [1, 999, 2000, 3, 2000]  # uneven chunks, including a single row
    bounds = np.cumsum([0, *sizes])
    acc = _accumulate(mm[a:b] for a, b in pairwise(bounds))
    assert acc.n_samples_ == n and acc.n_features_ == d
    X64 = X.astype(np.float64)
    np.testing.assert_allclose(acc.mean(), X64.mean(0), rtol=0, atol=1e-12)
    np.testing.assert_allclose(acc.covariance(), np.cov(X64, rowvar=False), rtol=1e-11, atol=1e-11)
    assert acc.isoscore() == pytest.approx(isoscore(X), abs=1e-10)
    S = np.cov(X64[:500], rowvar=False)
    assert acc.isoscore_star(shrinkage_cov=S, zeta=0.3) == pytest.approx(
        isoscore_star(X, shrinkage_cov=S, zeta=0.3), abs=1e-10)
    assert acc.isoscore_star() == pytest.approx(isoscore_star(X), abs=1e-10)
    assert acc.participation_ratio() == pytest.approx(participation_ratio(X), abs=1e-10)
    assert acc.cosine_similarity_mean() == pytest.approx(cosine_similarity_mean(X), abs=1e-10)


def test_large_offset_keeps_precision(rng):
    # unit-variance data far from the origin: Σxxᵀ − nμμᵀ would lose ~10 digits here
    X = rng.normal(size=(4000, 5)) * [1.0, 2.0, 3.0, 4.0, 5.0] + 1e5
    acc = _accumulate(np.array_split(X, 7))
    np.testing.assert_allclose(acc.covariance(), np.cov(X, rowvar=False), rtol=1e-9, atol=1e-9)
    assert acc.isoscore() == pytest.approx(isoscore(X), abs=1e-10)


def test_torch_chunks_and_inputs_untouched(rng):
    X = rng.normal(size=(100, 4))
    X_copy = X.copy()
    t = torch.tensor(X)
    acc = _accumulate([X[:40], t[40:]])
    np.testing.assert_array_equal(X, X_copy)
    torch.testing.assert_close(t, torch.tensor(X_copy))
    assert acc.isoscore() == pytest.approx(isoscore(X), abs=1e-12)


def test_accumulator_errors(rng):
    acc = CovarianceAccumulator()
    with pytest.raises(IsotropyValueError, match="at least 2 samples"):
        acc.isoscore()
    acc.update(rng.normal(size=(3, 4)))
    with pytest.raises(IsotropyValueError, match="must have 4 features"):
        acc.update(rng.normal(size=(3, 5)))
    with pytest.raises(IsotropyValueError, match="finite"):
        acc.update(np.full((2, 4), np.nan))
    zero = CovarianceAccumulator().update(np.zeros((3, 4))).update(np.zeros((2, 4)))
    with pytest.raises(IsotropyValueError, match="non-zero variance"):
        zero.isoscore()
    with pytest.raises(IsotropyValueError, match="zero vectors"):
        zero.cosine_similarity_mean()
    with pytest.raises(IsotropyValueError, match="non-zero variance"):  # ζ·I alone would read 1.0: Σ_S's score
        zero.isoscore_star(zeta=0.2)


@pytest.mark.parametrize("seed", [1, 2, 5, 16])
def test_participation_ratio_of_a_rank_one_set_is_exactly_its_lower_bound(seed):
    # the rounding of (tr C)² and ‖C‖²_F put a rank-1 set at 0.9999999999999998 (these seeds, on some path each),
    # below the documented range [1, n_features]: the value is clipped into it, on every path (dask's, which this
    # file's minimum-versions job cannot import: tests/test_distributed.py)
    rng = np.random.default_rng(seed)
    X = np.outer(rng.normal(size=50), rng.normal(size=5))
    acc = CovarianceAccumulator()
    acc.update(X)
    tensor = torch.tensor(X, requires_grad=True)
    values = [participation_ratio(X), float(participation_ratio(tensor).detach()), acc.participation_ratio()]
    assert all(1.0 <= value <= 1.0 + 1e-15 for value in values), values
    participation_ratio(tensor).backward()  # the clipped tensor keeps its graph
    assert torch.isfinite(tensor.grad).all()


def test_participation_ratio_never_exceeds_n_features():
    from isotropy._kernels.accumulator import participation_ratio_in_range

    assert participation_ratio_in_range(5.000000000000001, 5) == 5.0
    assert participation_ratio_in_range(0.9999999999999998, 5) == 1.0
    assert participation_ratio_in_range(2.5, 5) == 2.5
    clamped = participation_ratio_in_range(torch.tensor(0.9999999999999998, dtype=torch.float64), 5)
    assert float(clamped) == 1.0 and clamped.dtype == torch.float64


def test_accumulator_takes_empty_chunks_and_says_what_it_lacks():
    """A stream may hold an empty chunk (a shard or batch without rows): it adds nothing (it was refused). The
    messages name the rows the statistic needs, not a 'data' parameter the method does not have (an API audit)."""
    X = np.random.default_rng(0).normal(size=(30, 3))
    acc = CovarianceAccumulator().update(np.empty((0, 3))).update(X[:10]).update(np.empty((0, 3))).update(X[10:])
    assert acc.n_samples_ == 30 and acc.isoscore() == CovarianceAccumulator().update(X).isoscore()
    with pytest.raises(IsotropyValueError, match=r"must have 3 features \(columns\), like the previous chunks\. Got 4"):
        acc.update(np.empty((0, 4)))
    empty = CovarianceAccumulator().update(np.empty((0, 3)))  # an empty chunk gives the stream its width
    assert empty.n_samples_ == 0 and empty.n_features_ == 3
    with pytest.raises(IsotropyValueError, match=r"must have 3 features \(columns\), like the previous chunks\. Got 4"):
        empty.update(np.empty((0, 4)))
    with pytest.raises(IsotropyValueError) as info:
        CovarianceAccumulator().mean()
    assert str(info.value) == ("CovarianceAccumulator.mean needs at least 1 sample (row); call update() with rows "
                               "first. Got 0 instead.")
    with pytest.raises(IsotropyValueError) as info:
        CovarianceAccumulator().update(X[:1]).isoscore()
    assert str(info.value) == ("CovarianceAccumulator.isoscore needs at least 2 samples (rows); call update() with "
                               "more rows first. Got 1 instead.")
    with pytest.raises(IsotropyValueError) as info:
        CovarianceAccumulator().update(np.ones((5, 3))).isoscore()
    assert str(info.value) == ("The rows given to CovarianceAccumulator.update must have non-zero variance. Got 5 "
                               "(numerically) identical samples instead, whose covariance is zero, so the score is "
                               "undefined.")
