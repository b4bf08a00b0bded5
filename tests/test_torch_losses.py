"""isotropy.torch regularisers: values (vs isoscore_star / brute force), sign convention, gradcheck, modules."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from isotropy import IsotropyValueError, isoscore_star
from isotropy.torch import (
    CosRegLoss,
    IStarLoss,
    cosine_penalty,
    istar_penalty,
    shrinkage_covariance,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _hidden(seed, n, d, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(d, d, generator=g, dtype=dtype)
    return torch.randn(n, d, generator=g, dtype=dtype) @ A + 0.5


def test_istar_penalty_value_and_closed_form():
    H = torch.tensor([[-1.0, 0, 0], [1.0, 0, 0]], dtype=torch.float64) / 2**0.5  # covariance diag(1, 0, 0)
    # closed form of issue 2: diag(1, ζ, ζ) -> 0.407407 (ζ=0.2), 0.970588 (ζ=0.75); the penalty is its negative
    assert float(istar_penalty(H, shrinkage_cov=torch.eye(3), zeta=0.2)) == pytest.approx(-0.407407, abs=1e-6)
    with pytest.warns(UserWarning, match="istar_penalty: without shrinkage_cov, Σ_S is the identity"):
        assert float(istar_penalty(H, shrinkage_cov=None, zeta=0.75)) == pytest.approx(-0.970588, abs=1e-6)
    H = _hidden(0, 32, 6)
    S = shrinkage_covariance(_hidden(1, 500, 6))
    expected = isoscore_star(H.numpy(), shrinkage_cov=S.numpy(), zeta=0.3)
    assert float(istar_penalty(H, shrinkage_cov=S, zeta=0.3)) == pytest.approx(-expected, abs=1e-12)


def test_an_identity_shrinkage_warns_once_per_module_and_not_at_zeta_zero():
    # Σ_S = I: IsoScore* tracks the vector norms (near 1 where isoscore is far lower); the wrappers warned, the
    # function and the module did not
    import warnings

    H = _hidden(3, 16, 6)
    loss = IStarLoss(zeta=0.2)
    with pytest.warns(UserWarning, match="IStarLoss: without shrinkage_cov.*call refresh_shrinkage_cov"):
        loss(H)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss(H)  # once per module, not every step
        istar_penalty(H, shrinkage_cov=None, zeta=0.0)  # ζ = 0: Σ_S does not enter
        IStarLoss(zeta=0.0)(H)
        loss.refresh_shrinkage_cov(_hidden(4, 200, 6))
        IStarLoss(zeta=0.2, shrinkage_cov=loss.shrinkage_cov)(H)
        with pytest.raises(IsotropyValueError):  # refused, not warned first
            istar_penalty(H[:, :0], shrinkage_cov=None, zeta=0.2)


def test_shrinkage_covariance_matches_numpy():
    H = _hidden(2, 200, 5, dtype=torch.float32)
    ref = np.cov(H.double().numpy(), rowvar=False)
    np.testing.assert_allclose(shrinkage_covariance(H).double().numpy(), ref, rtol=1e-6, atol=1e-6)
    assert shrinkage_covariance(H).dtype == torch.float32
    np.testing.assert_allclose(shrinkage_covariance([H[:70], H[70:]]).numpy(), shrinkage_covariance(H).numpy())


def test_gradcheck_float64():
    H = _hidden(3, 7, 4).requires_grad_(True)
    S = shrinkage_covariance(_hidden(4, 100, 4))
    assert torch.autograd.gradcheck(lambda h: istar_penalty(h, shrinkage_cov=S, zeta=0.2), (H,))
    assert torch.autograd.gradcheck(lambda h: IStarLoss(zeta=0.5, weight=-2.0, shrinkage_cov=S)(h), (H,))
    assert torch.autograd.gradcheck(cosine_penalty, (H,))
    assert torch.autograd.gradcheck(CosRegLoss(weight=3.0), (H,))


@pytest.mark.parametrize("lam", [1.0, -1.0])
def test_sgd_sign_convention_istar(lam):
    """total = task + λ·penalty: λ > 0 raises IsoScore*, λ < 0 lowers it."""
    H0 = _hidden(5, 64, 8, dtype=torch.float32)
    S = shrinkage_covariance(_hidden(6, 1000, 8, dtype=torch.float32))
    loss_fn = IStarLoss(zeta=0.2, weight=lam, shrinkage_cov=S)
    H = H0.clone().requires_grad_(True)
    opt = torch.optim.SGD([H], lr=50.0)  # IsoScore* gradients scale like 1/‖H‖
    before = float(isoscore_star(H0, shrinkage_cov=S, zeta=0.2))
    for _ in range(20):
        opt.zero_grad()
        loss_fn(H).backward()
        opt.step()
    after = float(isoscore_star(H.detach(), shrinkage_cov=S, zeta=0.2))
    assert (after - before) * lam > 0.1


@pytest.mark.parametrize("lam", [1.0, -1.0])
def test_sgd_sign_convention_cosreg(lam):
    H0 = _hidden(7, 64, 8)
    H = H0.clone().requires_grad_(True)
    opt = torch.optim.SGD([H], lr=50.0)
    before = float(cosine_penalty(H0))
    for _ in range(20):
        opt.zero_grad()
        CosRegLoss(weight=lam)(H).backward()
        opt.step()
    assert (before - float(cosine_penalty(H.detach()))) * lam > 0.02


def test_module_buffer_refresh_and_state_dict():
    istar = IStarLoss(zeta=0.2, weight=1.0)
    H = _hidden(8, 16, 5, dtype=torch.float32)
    # identity until refreshed (warned: Σ_S = I)
    with pytest.warns(UserWarning, match="IStarLoss: without shrinkage_cov") as record:
        assert float(istar(H)) == pytest.approx(-float(isoscore_star(H, zeta=0.2)), abs=1e-6)
    assert record[0].filename == __file__  # the user's line, not torch's Module.__call__
    sample = _hidden(9, 300, 5, dtype=torch.float32)
    assert istar.refresh_shrinkage_cov(sample) is istar
    assert istar.shrinkage_cov.shape == (5, 5)
    expected = float(isoscore_star(H, shrinkage_cov=shrinkage_covariance(sample), zeta=0.2))
    assert float(istar(H)) == pytest.approx(-expected, abs=1e-6)
    istar.refresh_shrinkage_cov([sample[:100], sample[100:]])  # in place, same value
    assert float(istar(H)) == pytest.approx(-expected, abs=1e-6)
    fresh = IStarLoss(zeta=0.2)
    fresh.load_state_dict(istar.state_dict())
    torch.testing.assert_close(fresh.shrinkage_cov, istar.shrinkage_cov)
    # float64 input with a float32 buffer: the output follows the input
    assert fresh(H.double()).dtype == torch.float64


def test_inputs_not_modified_and_no_grad_leak():
    H = _hidden(10, 12, 4).requires_grad_(True)
    H_copy = H.detach().clone()
    S = torch.eye(4, dtype=torch.float64)
    S_copy = S.clone()
    (istar_penalty(H, shrinkage_cov=S) + cosine_penalty(H)).backward()
    torch.testing.assert_close(H.detach(), H_copy)
    torch.testing.assert_close(S, S_copy)
    assert S.grad is None


def test_errors():
    with pytest.raises(TypeError, match="'H' parameter of istar_penalty must be a torch.Tensor"):
        istar_penalty(np.ones((3, 3)), shrinkage_cov=None)
    with pytest.raises(IsotropyValueError, match="'zeta' parameter of IStarLoss"):
        IStarLoss(zeta=2.0)
    with pytest.raises(IsotropyValueError, match=r"'shrinkage_cov' parameter of istar_penalty .*\(3, 3\)"):
        istar_penalty(torch.randn(5, 3), shrinkage_cov=torch.eye(4))
    with pytest.raises(IsotropyValueError, match="zero vectors"):
        cosine_penalty(torch.zeros(3, 2))


def test_shrinkage_covariance_of_half_precision_states_is_float32_and_finite():
    """float16 hidden states with a spread of 300: their covariance (~9e4) overflowed float16 to inf, and I-STAR
    then refused a 'shrinkage_cov' the user never passed (a new-user trial). Half precision gives float32, as the
    metrics compute it; the value is the float64 covariance of the same numbers."""
    from isotropy.torch import IStarLoss, shrinkage_covariance

    H = (torch.randn(512, 16, generator=torch.Generator().manual_seed(0)) * 300).half()
    cov = shrinkage_covariance(H)
    assert cov.dtype == torch.float32 and bool(torch.isfinite(cov).all())
    expected = torch.cov(H.double().T)
    torch.testing.assert_close(cov.double(), expected, rtol=1e-6, atol=1e-3)
    loss = IStarLoss(weight=-1.0).refresh_shrinkage_cov(H)(H[:64].float())
    assert bool(torch.isfinite(loss))
    assert shrinkage_covariance(H.bfloat16()).dtype == torch.float32


def test_davies_bouldin_of_a_graph_tensor_does_not_warn():
    """A tensor that requires grad (a training loop): no 'Converting a tensor with requires_grad=True to a scalar'
    warning on every call (a new-user trial); the value keeps its gradient."""
    import warnings

    from isotropy import davies_bouldin_score

    X = torch.randn(60, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64, requires_grad=True)
    labels = torch.arange(60) % 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value = davies_bouldin_score(X, labels)
    value.backward()
    assert X.grad is not None and bool(torch.isfinite(X.grad).all())


def test_cosine_penalty_errors_name_its_own_parameter():
    """A zero row of H: the error names cosine_penalty's 'H', not cosine_similarity_mean's 'X' (a new-user trial)."""
    from isotropy.torch import cosine_penalty

    H = torch.randn(5, 3, generator=torch.Generator().manual_seed(0))
    H[2] = 0.0
    with pytest.raises(IsotropyValueError, match=r"^The 'H' parameter of cosine_penalty must not contain zero vectors"):
        cosine_penalty(H)


def test_istar_errors_name_H_and_the_module():
    """istar_penalty called H "'X'" in its errors, and IStarLoss with a batch of the wrong width blamed its stored
    shrinkage_cov under istar_penalty's name (a Python API trial): the batch is what is wrong, named as the user's."""
    g = torch.Generator().manual_seed(0)
    with pytest.raises(IsotropyValueError, match=r"^The 'H' parameter of istar_penalty must have at least 2 samples"):
        istar_penalty(torch.randn(1, 3, generator=g), shrinkage_cov=None)
    with pytest.raises(IsotropyValueError, match=r"^The 'H' parameter of istar_penalty must have non-zero variance"):
        istar_penalty(torch.ones(8, 3), shrinkage_cov=None, zeta=0.0)
    with pytest.raises(IsotropyValueError, match=r"shrinkage_cov' parameter of istar_penalty .*\(n_features of H\)"):
        istar_penalty(torch.randn(5, 3, generator=g), shrinkage_cov=torch.eye(4))
    istar = IStarLoss(weight=-2.0, shrinkage_cov=torch.eye(4))
    with pytest.raises(IsotropyValueError, match=r"^The 'H' parameter of IStarLoss must have 4 features .*\(8, 3\)"):
        istar(torch.randn(8, 3, generator=g))
    with pytest.raises(IsotropyValueError, match=r"^The 'H' parameter of IStarLoss must be a 2-d"):
        istar(torch.randn(8, generator=g))
    H = torch.randn(8, 4, generator=g, dtype=torch.float64)
    assert float(istar(H)) == pytest.approx(-2.0 * float(istar_penalty(H, shrinkage_cov=torch.eye(4))), rel=1e-12)


def test_istar_loss_keeps_its_shrinkage_cov_in_float32_under_a_half_model():
    # model.half() on a model owning the loss cast Σ_S to float16: the covariance of states of magnitude 300
    # overflowed and forward refused it ("must contain only finite values"); it stays float32 (as shrinkage_covariance
    # gives for half input) and the penalty equals the float32 one
    H = torch.randn(256, 8, generator=torch.Generator().manual_seed(0)) * 300
    loss = IStarLoss(weight=-1.0).refresh_shrinkage_cov(H)
    expected = float(loss(H))
    for cast in (lambda m: m.half(), lambda m: m.to(torch.bfloat16)):
        model = torch.nn.Sequential(torch.nn.Linear(8, 8))
        model.add_module("istar", IStarLoss(weight=-1.0).refresh_shrinkage_cov(H))
        cast(model)
        assert model.istar.shrinkage_cov.dtype == torch.float32
        assert float(model.istar(H.to(model[0].weight.dtype))) == pytest.approx(expected, rel=2e-2)
    assert loss.double().shrinkage_cov.dtype == torch.float64


def test_istar_loss_refuses_a_shrinkage_cov_that_is_not_a_covariance():
    with pytest.raises(IsotropyValueError, match=r"^The 'shrinkage_cov' parameter of IStarLoss must be positive "
                                                 r"semi-definite \(a covariance matrix\)\. Got a smallest eigenvalue "
                                                 r"of -0\.5 instead\.$"):
        IStarLoss(shrinkage_cov=torch.diag(torch.tensor([1.0, 1.0, -0.5])))


@pytest.mark.parametrize("n, d", [(16, 64), (32, 256), (100, 768)])
def test_a_float32_covariance_of_few_rows_is_a_covariance(n, d):
    # torch.cov of a float32 batch of fewer rows than features has eigenvalues of -4e-8 to -1.2e-7 of the largest
    # (rounding), which the Σ_S check refused as "not positive semi-definite" while isoscore_star took the matrix
    from isotropy.training import IsoScoreStar

    for seed in range(3):
        C = torch.cov(torch.randn(n, d, generator=torch.Generator().manual_seed(seed)).T)
        assert IStarLoss(shrinkage_cov=C).shrinkage_cov.shape == (d, d)
        assert IsoScoreStar(shrinkage_cov=C, zeta=0.3).shrinkage_cov.shape == (d, d)


# ---------------------------------------------------------------- zeta: a 0-d tensor, as weight takes one
def _zeta_modules():
    from isotropy.training.regularisers import HiddenStateRegulariser

    return [("IStarLoss", lambda z: IStarLoss(zeta=z, shrinkage_cov=torch.eye(4, dtype=torch.float64))),
            ("HiddenStateRegulariser", lambda z: HiddenStateRegulariser("istar", zeta=z, weight=torch.tensor(1.0)))]


@pytest.mark.parametrize("name, make", _zeta_modules(), ids=lambda v: v if isinstance(v, str) else "")
def test_zeta_takes_a_0d_real_tensor_or_array_as_weight_does(name, make):
    """IStarLoss(weight=torch.tensor(1.)) was taken but IStarLoss(zeta=torch.tensor(.2)) raised TypeError ("must be a
    float ... Got tensor(0.2000)"): a ζ schedule's value is a 0-d tensor too. Read once as a float, checked in
    [0, 1]; the penalty equals that of the float."""
    schedule = torch.linspace(0.0, 1.0, 5)  # float32: 0.25 and 0.5 are exact
    for zeta, expected in ((schedule[1], 0.25), (torch.tensor(0.5, dtype=torch.float64), 0.5), (torch.tensor(1), 1.0),
                           (np.array(0.75), 0.75), (np.float32(0.25), 0.25), (0.2, 0.2)):
        module = make(zeta)
        assert type(module.zeta) is float and module.zeta == expected, zeta
    if name == "IStarLoss":
        H = _hidden(3, 10, 4)
        assert torch.equal(make(schedule[1])(H), make(0.25)(H))
        assert float(make(schedule[1])(H)) == pytest.approx(-isoscore_star(H.numpy(), shrinkage_cov=np.eye(4),
                                                                            zeta=0.25), rel=1e-12)
    from _zeta_cases import zeta_refusals

    cases = zeta_refusals(name)
    for zeta, error, message in cases:
        with pytest.raises(error) as info:
            make(zeta)
        assert str(info.value) == message
