"""The torch metrics and penalties compute with autocast off: under ``torch.autocast`` (a mixed-precision training
step) they give their float32 values and documented dtypes, and the gradients they give outside it.

Before, CPU autocast ran their float32 matmuls in bfloat16: ``isoscore`` of a 64 × 96 float32 batch came back as a
bfloat16 tensor, about 1e-3 off, and ``istar_penalty`` about 1e-2 off. Expected values are the float64 numpy path of
the same function (``.double().numpy()``), which autocast cannot reach.
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
    partition_isotropy,
    rankme,
    rogue_dimension_share,
)
from isotropy._utils.backend import no_autocast
from isotropy._utils.warn import SpanBoundWarning
from isotropy.metrics.cosine import intra_type_cosine
from isotropy.metrics.rogue import cosine_contributions
from isotropy.metrics.spectrum import singular_values
from isotropy.torch import CosRegLoss, IStarLoss, cosine_penalty, istar_penalty, shrinkage_covariance


def _autocast():
    return torch.autocast("cpu", dtype=torch.bfloat16)


@pytest.fixture
def H():
    """Hidden states far from the origin, fewer rows than features (the n × n Gram path), of uneven spread."""
    g = torch.Generator().manual_seed(0)
    return torch.randn(64, 96, generator=g) * torch.linspace(0.05, 1, 96) + 100


@pytest.fixture
def S(H):
    return torch.as_tensor(np.cov(H.double().numpy(), rowvar=False), dtype=torch.float32)


GROUPS = np.arange(64) % 4

# name -> (torch call on H and S, float64 numpy reference on (X, S) as numpy arrays)
CASES = {
    "isoscore": (lambda H, S: isoscore(H), lambda X, S: isoscore(X)),
    "isoscore_star": (lambda H, S: isoscore_star(H, shrinkage_cov=S, zeta=0.3),
                      lambda X, S: isoscore_star(X, shrinkage_cov=S, zeta=0.3)),
    "participation_ratio": (lambda H, S: participation_ratio(H), lambda X, S: participation_ratio(X)),
    "partition_isotropy": (lambda H, S: partition_isotropy(H), lambda X, S: partition_isotropy(X)),
    "cosine_similarity_mean": (lambda H, S: cosine_similarity_mean(H), lambda X, S: cosine_similarity_mean(X)),
    "intra_type_cosine": (lambda H, S: intra_type_cosine(H, GROUPS), lambda X, S: intra_type_cosine(X, GROUPS)),
    "effective_rank": (lambda H, S: effective_rank(H, center=True), lambda X, S: effective_rank(X, center=True)),
    "rankme": (lambda H, S: rankme(H), lambda X, S: rankme(X)),
    "singular_values": (lambda H, S: singular_values(H, center=True), lambda X, S: singular_values(X, center=True)),
    "cosine_contributions": (lambda H, S: cosine_contributions(H), lambda X, S: cosine_contributions(X)),
    "rogue_dimension_share": (lambda H, S: rogue_dimension_share(H, n_dimensions=3),
                              lambda X, S: rogue_dimension_share(X, n_dimensions=3)),
    "istar_penalty": (lambda H, S: istar_penalty(H, shrinkage_cov=S), lambda X, S: -isoscore_star(X, shrinkage_cov=S)),
    "IStarLoss": (lambda H, S: IStarLoss(weight=-2.0, shrinkage_cov=S)(H),
                  lambda X, S: 2.0 * isoscore_star(X, shrinkage_cov=S)),
    "cosine_penalty": (lambda H, S: cosine_penalty(H), lambda X, S: cosine_similarity_mean(X)),
    "CosRegLoss": (lambda H, S: CosRegLoss(weight=0.5)(H), lambda X, S: 0.5 * cosine_similarity_mean(X)),
    "shrinkage_covariance": (lambda H, S: shrinkage_covariance(H), lambda X, S: np.cov(X, rowvar=False)),
}


def _reference(name, H, S):
    return np.asarray(CASES[name][1](H.double().numpy(), S.double().numpy()), dtype=np.float64)


@pytest.mark.parametrize("name", sorted(CASES))
def test_value_and_dtype_under_autocast(name, H, S):
    with _autocast():
        value = CASES[name][0](H, S)
    assert value.dtype == torch.float32  # the input's dtype, not autocast's bfloat16
    expected = _reference(name, H, S)
    scale = max(float(np.abs(expected).max()), 1.0)
    # float32 arithmetic on data at 100 ± 1: about 1e-5 relative at worst; bfloat16 matmuls were 1e-3 to 1e-2 off
    np.testing.assert_allclose(value.double().numpy(), expected, rtol=0, atol=2e-5 * scale)


@pytest.mark.parametrize("name", ["isoscore", "isoscore_star", "participation_ratio", "istar_penalty", "IStarLoss",
                                  "cosine_penalty", "CosRegLoss", "effective_rank", "rogue_dimension_share"])
def test_gradients_under_autocast_equal_those_outside(name, H, S):
    call = CASES[name][0]
    outside = H.clone().requires_grad_(True)
    call(outside, S).backward()
    inside = H.clone().requires_grad_(True)
    with _autocast():
        value = call(inside, S)
    value.backward()
    assert inside.grad.dtype == torch.float32 and bool(torch.isfinite(inside.grad).all())
    scale = float(outside.grad.abs().max())
    assert scale > 0
    torch.testing.assert_close(inside.grad, outside.grad, rtol=0, atol=1e-5 * scale)


def test_tester_report_istar_on_384_features():
    """The reported case: 256 × 384 at offset 100; IsoScore and the I-STAR penalty against float64 (0.309055)."""
    g = torch.Generator().manual_seed(1)
    H = torch.randn(256, 384, generator=g) * torch.linspace(0.05, 1, 384) + 100
    X = H.double().numpy()
    S = torch.as_tensor(np.cov(X, rowvar=False))
    with _autocast():
        v, p = isoscore(H), istar_penalty(H, shrinkage_cov=S)
    assert v.dtype == torch.float32 and p.dtype == torch.float32
    assert float(v) == pytest.approx(isoscore(X), abs=2e-5)
    assert float(p) == pytest.approx(-isoscore_star(X, shrinkage_cov=S.numpy()), abs=2e-5)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_input_under_autocast_computes_in_float32(dtype, H, S):
    """Half H: a float32 penalty (as documented) whose gradient comes back in H's dtype, also under autocast."""
    Hh = (H - 100).to(dtype).requires_grad_(True)
    X = Hh.detach().double().numpy()
    with _autocast():
        p = istar_penalty(Hh, shrinkage_cov=S)
        v = isoscore(Hh)
    assert p.dtype == torch.float32 and v.dtype == torch.float32
    assert v.item() == pytest.approx(isoscore(X), abs=2e-5)
    assert p.item() == pytest.approx(-isoscore_star(X, shrinkage_cov=S.double().numpy()), abs=2e-5)
    p.backward()
    assert Hh.grad.dtype == dtype and bool(torch.isfinite(Hh.grad.float()).all())


def test_torchmetrics_classes_under_autocast_equal_float64_functions(H, S):
    """The torchmetrics classes accumulate float64 states, which autocast leaves alone: checked here for good."""
    from isotropy.training import IsoScore, IsoScoreStar, MeanCosine, ParticipationRatio

    X = H.double().numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", SpanBoundWarning)  # (the functions' bound of these few rows: not autocast's)
        metrics = {IsoScore(): isoscore(X), ParticipationRatio(): participation_ratio(X),
                   MeanCosine(): cosine_similarity_mean(X),
                   IsoScoreStar(shrinkage_cov=S, zeta=0.3): isoscore_star(X, shrinkage_cov=S.double().numpy(), zeta=0.3)}
        with _autocast():
            for metric, expected in metrics.items():
                metric.update(H[:40])
                metric.update(H[40:])
                value = metric.compute()
                assert value.dtype == torch.float64
                assert float(value) == pytest.approx(expected, rel=1e-9)


def test_no_autocast_is_a_no_op_off_autocast_and_for_non_tensors():
    import contextlib

    assert isinstance(no_autocast(np.zeros((2, 2))), contextlib.nullcontext)
    assert isinstance(no_autocast(torch.zeros(2, 2)), contextlib.nullcontext)  # autocast is off here
    assert isinstance(no_autocast(torch.zeros(2, 2, device="meta")), contextlib.nullcontext)  # unknown to autocast
    with _autocast():
        assert torch.is_autocast_enabled("cpu")
        with no_autocast(torch.zeros(2, 2)):
            assert not torch.is_autocast_enabled("cpu")
        assert torch.is_autocast_enabled("cpu")  # restored on exit


def test_partition_isotropy_under_autocast_is_float32_and_exact():
    # far from the origin its value is 0 whatever the precision (the case above); centred data gave 0.4883 in
    # bfloat16 for 0.49405 before partition_isotropy turned autocast off
    g = torch.Generator().manual_seed(0)
    H = torch.randn(256, 32, generator=g) * torch.linspace(0.5, 1, 32)
    with _autocast():
        value = partition_isotropy(H)
    assert value.dtype == torch.float32
    assert float(value) == pytest.approx(partition_isotropy(H.double().numpy()), abs=1e-5)
