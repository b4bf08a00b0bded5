"""Σ_S of float32 hidden states at extreme scale (a user trial).

``shrinkage_covariance`` of valid float32 states at 1e20 returned an inf float32 matrix (at 1e-30 an all-zero one);
``IStarLoss.refresh_shrinkage_cov`` stored it without a word and the next forward blamed a 'shrinkage_cov' the user
never passed. And a finite float64 Σ_S of 1e40 (1e-50) given with a float32 tensor ``X`` was refused as "NaN or inf"
("the zero matrix"): cast to float32 before anything else, where a numpy float32 ``X`` took it. Now the covariance is
kept in float64 where float32 cannot hold it, and Σ_S is used at unit scale (an exact power of two).

Every expected value is numpy float64 from the closed form ((tr Σ_ζ)²/‖Σ_ζ‖²_F − 1)/(d − 1), with both matrices
scaled by exact powers of two so that nothing over- or underflows.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from isotropy import IsotropyValueError, isoscore_from_covariance, isoscore_star
from isotropy.torch import IStarLoss, istar_penalty, shrinkage_covariance

X = np.random.default_rng(0).normal(size=(60, 5))


def _cov(A: np.ndarray) -> np.ndarray:
    """np.cov (float64) of ``A`` at any scale: computed at unit scale, the power of two put back (exact)."""
    e = math.frexp(float(np.abs(A).max()))[1]
    return np.ldexp(np.cov(np.ldexp(A.astype(np.float64), -e), rowvar=False), 2 * e)


def _istar(C: np.ndarray, S: np.ndarray, zeta: float) -> float:
    """IsoScore* of (1 − ζ)·C + ζ·S in float64, each matrix brought to unit scale by its power of two first."""
    ec, es = (math.frexp(float(np.abs(M).max()))[1] for M in (C, S))
    log_a, log_b = math.log2(1 - zeta) + ec, math.log2(zeta) + es
    top = max(log_a, log_b)
    M = 2.0 ** (log_a - top) * np.ldexp(C, -ec) + 2.0 ** (log_b - top) * np.ldexp(S, -es)
    return (np.trace(M) ** 2 / np.sum(M * M) - 1) / (len(M) - 1)


@pytest.mark.parametrize("scale", [1e20, 1e-20, 1e-30])
def test_the_covariance_of_float32_states_is_numpys_at_any_scale(scale):
    H = torch.tensor(X, dtype=torch.float32) * scale  # valid float32 states (normal numbers)
    S = shrinkage_covariance(H)
    assert S.dtype == torch.float64  # float32 holds neither 1e40 (inf) nor 1e-60 (0); float64 does
    np.testing.assert_allclose(S.numpy(), _cov(H.double().numpy()), rtol=1e-12, atol=0)
    S = shrinkage_covariance([H[:25], H[25:]])
    np.testing.assert_allclose(S.numpy(), _cov(H.double().numpy()), rtol=1e-12, atol=0)


def test_float32_states_at_a_safe_scale_keep_a_float32_covariance():
    H = torch.tensor(X, dtype=torch.float32) * 1e3
    S = shrinkage_covariance(H)
    assert S.dtype == torch.float32
    np.testing.assert_allclose(S.double().numpy(), _cov(H.double().numpy()), rtol=1e-6)


def test_float64_states_far_from_unit_scale():
    """float64 states at 2**500 (about 3e150): their covariance (1e301) is computed at unit scale (the products
    overflowed to inf); at 2**600 it is beyond float64 and refused in one line, naming the scale."""
    H = torch.tensor(np.ldexp(X, 500))
    np.testing.assert_allclose(shrinkage_covariance(H).numpy(), np.ldexp(np.cov(X, rowvar=False), 1000), rtol=1e-13)
    with pytest.raises(IsotropyValueError, match=r"^The 'H' parameter of shrinkage_covariance must have a covariance "
                                                 r"that float64 holds\. Got a largest variance of about 2\.6e\+361 \(a "
                                                 r"spread of about 5\.1e\+180\) instead, beyond float64's range; "
                                                 r"rescale"):
        shrinkage_covariance(torch.tensor(np.ldexp(X, 600)))


@pytest.mark.parametrize("scale", [1e20, 1e-20])
def test_istar_loss_refreshed_on_states_at_extreme_scale(scale):
    H = torch.tensor(X, dtype=torch.float32) * scale
    loss = IStarLoss(weight=1.0, zeta=0.2)
    loss.refresh_shrinkage_cov(H)  # stored inf (or 0) and forward refused "'shrinkage_cov' ... NaN or inf"
    assert loss.shrinkage_cov.dtype == torch.float64 and bool(torch.isfinite(loss.shrinkage_cov).all())
    C = _cov(H.double().numpy())
    expected = -_istar(C, C, 0.2)
    batch = H[:20]
    assert float(loss(batch)) == pytest.approx(-_istar(_cov(batch.double().numpy()), C, 0.2), rel=1e-5)
    assert float(loss(H)) == pytest.approx(expected, rel=1e-5)
    # a float32 Σ_S refreshed at a normal scale first: the new one is not copied into float32 (inf), it replaces it
    loss = IStarLoss(zeta=0.2).refresh_shrinkage_cov(H / scale)
    assert loss.shrinkage_cov.dtype == torch.float32
    loss.refresh_shrinkage_cov(H)
    assert loss.shrinkage_cov.dtype == torch.float64
    np.testing.assert_allclose(loss.shrinkage_cov.numpy(), C, rtol=1e-12)
    assert float(loss(H)) == pytest.approx(expected, rel=1e-5)
    # model.float() / .half() on a model owning the loss: a Σ_S float32 cannot hold stays float64
    for cast in (lambda m: m.float(), lambda m: m.half()):
        model = torch.nn.Sequential(torch.nn.Linear(5, 5))
        model.add_module("istar", IStarLoss(zeta=0.2).refresh_shrinkage_cov(H))
        cast(model)
        assert model.istar.shrinkage_cov.dtype == torch.float64
        assert float(model.istar(H)) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("factor", [1e40, 1e-50, 1e300])
def test_a_float64_shrinkage_cov_float32_cannot_hold_is_taken_with_a_float32_tensor(factor):
    """A finite float64 Σ_S of 1e40 was refused as "NaN or inf", one of 1e-50 as "the zero matrix"; a numpy float32
    X took both (computed in float64). Now the tensor's value is that one, to float32's precision."""
    X32 = X.astype(np.float32)
    C = np.cov(X32.astype(np.float64), rowvar=False)
    S = np.cov(X, rowvar=False) * factor
    expected = _istar(C, S, 0.2)
    assert isoscore_star(X32, shrinkage_cov=S) == pytest.approx(expected, rel=1e-12)
    T = torch.tensor(X32)
    for given in (S, torch.tensor(S)):
        assert float(isoscore_star(T, shrinkage_cov=given)) == pytest.approx(expected, rel=1e-5)
        assert float(istar_penalty(T, shrinkage_cov=given)) == pytest.approx(-expected, rel=1e-5)
        assert float(IStarLoss(shrinkage_cov=given)(T)) == pytest.approx(-expected, rel=1e-5)
    # isoscore_from_covariance mixes a float32 cov with it at unit scale too
    for zeta in (0.3, 0.5):
        expected = _istar(C, S, zeta)
        assert float(isoscore_from_covariance(torch.tensor(C, dtype=torch.float32), shrinkage_cov=S, zeta=zeta)) == \
            pytest.approx(expected, rel=1e-5)
        assert isoscore_from_covariance(C, shrinkage_cov=S, zeta=zeta) == pytest.approx(expected, rel=1e-12)
