"""The errors of the loss modules name the module (or its method), not the function it calls.

``CosRegLoss()(H)`` said "... of cosine_penalty ..." and ``IStarLoss().refresh_shrinkage_cov(H)`` said "... of
shrinkage_covariance ..."; ``IStarLoss()(H)`` named itself already, the pattern followed.
"""

import pytest
import torch

from isotropy import IsotropyValueError
from isotropy.torch import CosRegLoss, IStarLoss, cosine_penalty, istar_penalty, shrinkage_covariance


def _message(call):
    with pytest.raises((TypeError, ValueError)) as info:
        call()
    assert "\n" not in str(info.value)
    return str(info.value)


def test_cosreg_loss_names_itself():
    assert _message(lambda: CosRegLoss()(torch.randn(2, 2, 2))) == (
        "The 'H' parameter of CosRegLoss must be a 2-d array of shape (n_samples, n_features). Got an array with shape "
        "(2, 2, 2) instead.")
    assert _message(lambda: CosRegLoss()([[1.0, 2.0], [3.0, 4.0]])).startswith(
        "The 'H' parameter of CosRegLoss must be a torch.Tensor of shape (n_samples, n_features). Got list")
    assert "parameter of CosRegLoss" in _message(lambda: CosRegLoss()(torch.tensor([[1.0, 0.0], [0.0, 0.0]])))


def test_refresh_shrinkage_cov_names_itself():
    refresh = IStarLoss().refresh_shrinkage_cov
    assert _message(lambda: refresh(torch.randn(1, 4))) == (
        "The 'H' parameter of IStarLoss.refresh_shrinkage_cov must have shape (n_samples, n_features) with "
        "n_samples >= 2. Got shape (1, 4) instead.")
    assert _message(lambda: refresh([])).startswith("The 'H' parameter of IStarLoss.refresh_shrinkage_cov must be "
                                                    "a tensor or a non-empty list")
    assert _message(lambda: refresh([torch.randn(3, 4), torch.randn(3, 5)])).startswith(
        "The 'H' parameter of IStarLoss.refresh_shrinkage_cov must be a list of tensors with the same number")
    H = torch.randn(5, 3)
    H[2, 1] = float("nan")
    assert _message(lambda: refresh(H)) == ("The 'H' parameter of IStarLoss.refresh_shrinkage_cov must contain only "
                                            "finite values. Got nan at row 2, column 1 instead.")
    assert _message(lambda: refresh([torch.randn(2, 3), H])).endswith("Got nan at row 2, column 1 of H[1] instead.")
    assert _message(lambda: refresh("H")).startswith("The 'H' parameter of IStarLoss.refresh_shrinkage_cov must be "
                                                     "a torch.Tensor")


def test_the_functions_and_istar_loss_still_name_themselves():
    assert _message(lambda: cosine_penalty(torch.randn(1, 4))) == (
        "The 'H' parameter of cosine_penalty must have at least 2 samples (rows). Got 1 instead.")
    assert "parameter of shrinkage_covariance" in _message(lambda: shrinkage_covariance(torch.randn(1, 4)))
    with pytest.raises(IsotropyValueError, match="^The 'H' parameter of IStarLoss must"):
        IStarLoss()(torch.randn(2, 2, 2))


def test_the_values_are_unchanged():
    H = torch.tensor([[1.0, 1.0], [2.0, 2.0], [1.0, -1.0]])
    assert float(CosRegLoss(weight=2.0)(H)) == pytest.approx(2 * float(cosine_penalty(H)), rel=1e-7)
    loss = IStarLoss().refresh_shrinkage_cov(H)
    torch.testing.assert_close(loss.shrinkage_cov, shrinkage_covariance(H))
    expected = torch.tensor([[1.0 / 3, 2.0 / 3], [2.0 / 3, 7.0 / 3]])  # by hand: ddof=1
    torch.testing.assert_close(shrinkage_covariance(H), expected)


# ---------------------------------------------------------------- weight: a λ schedule's 0-d tensor
def _regularisers():
    from isotropy.training.regularisers import HiddenStateRegulariser

    return [("IStarLoss", lambda w: IStarLoss(weight=w, shrinkage_cov=torch.eye(4))),
            ("CosRegLoss", lambda w: CosRegLoss(weight=w)),
            ("HiddenStateRegulariser", lambda w: HiddenStateRegulariser("cosreg", weight=w))]


@pytest.mark.parametrize("name, make", _regularisers(), ids=lambda v: v if isinstance(v, str) else "")
def test_weight_takes_a_0d_real_tensor_read_once_as_a_float(name, make):
    """IStarLoss(weight=torch.tensor(-0.5)) was refused ("must be a float ... Got tensor(-0.5000)"): a λ schedule's
    value is a 0-d tensor."""
    import numpy as np

    schedule = torch.linspace(0.0, -1.0, 5, dtype=torch.float64)
    for weight, expected in ((schedule[2], -0.5), (torch.tensor(3), 3.0), (np.float32(0.25), 0.25),
                             (np.array(-2.0), -2.0), (0.75, 0.75), (-1, -1.0)):
        module = make(weight)
        assert type(module.weight) is float and module.weight == expected
    if name != "HiddenStateRegulariser":
        H = torch.randn(6, 4, generator=torch.Generator().manual_seed(0))
        out = make(schedule[2])(H)  # a float64 λ: the penalty keeps H's float32, as a float λ gives
        assert out.dtype == torch.float32 and out.ndim == 0
        assert float(out) == pytest.approx(float(make(-0.5)(H)), rel=1e-7)


@pytest.mark.parametrize("name, make", _regularisers(), ids=lambda v: v if isinstance(v, str) else "")
def test_weight_refuses_a_tensor_that_is_not_one_real_finite_constant(name, make):
    import numpy as np

    expected = f"The 'weight' parameter of {name} must be a real number or a 0-d real tensor"
    array = f"The 'weight' parameter of {name} must be a real number or a 0-d real array"
    number = f"The 'weight' parameter of {name} must be a float in the range (-inf, inf)"  # as before
    grad = "that does not require grad: it is read once as a float, and no gradient would reach it"
    cases = [
        (torch.tensor([0.5]), IsotropyValueError, f"{expected}. Got a tensor of shape (1,) instead."),
        (torch.ones(2, 2), IsotropyValueError, f"{expected}. Got a tensor of shape (2, 2) instead."),
        (torch.tensor(True), TypeError, f"{expected}. Got a 0-d tensor of dtype torch.bool instead."),
        (torch.tensor(1 + 2j), TypeError, f"{expected}. Got a 0-d tensor of dtype torch.complex64 instead."),
        (torch.tensor(float("nan")), IsotropyValueError, f"{expected} with a finite value. Got tensor(nan) instead."),
        (torch.tensor(-float("inf")), IsotropyValueError, f"{expected} with a finite value. Got tensor(-inf) instead."),
        (torch.tensor(0.5, requires_grad=True), IsotropyValueError,
         f"{expected} {grad}. Got tensor(0.5000, requires_grad=True) instead."),
        (np.array([1.0]), IsotropyValueError, f"{array}. Got an array of shape (1,) instead."),
        (np.array(1j), TypeError, f"{array}. Got a 0-d array of dtype complex128 instead."),
        ("abc", TypeError, f"{number}. Got 'abc' instead."),
        (float("inf"), IsotropyValueError, f"{number}. Got inf instead."),
    ]
    for weight, error, message in cases:
        with pytest.raises(error) as info:
            make(weight)
        assert str(info.value) == message


@pytest.mark.parametrize("name", ["IStarLoss", "IsoScoreStar"])
def test_a_shrinkage_cov_given_before_any_data_is_refused_as_what_it_is(name):
    """A new-user trial: ``IStarLoss(shrinkage_cov=torch.ones(3))`` said "must be a covariance matrix of shape (-1, -1)
    (n_features of X)" (a shape no matrix has, of an X the module has none of); a string or a ragged list raised torch's
    own "new(): invalid data type 'str'" / "expected sequence of length 2 at dim 1", and a 0 x 0 tensor a RuntimeError
    from inside a max(). Each is one line now; a 2-d square Σ_S is taken as before."""
    from isotropy.training import IsoScoreStar

    cls = {"IStarLoss": IStarLoss, "IsoScoreStar": IsoScoreStar}[name]

    def make(S):
        return cls(shrinkage_cov=S)

    square = (f"The 'shrinkage_cov' parameter of {name} must be a square covariance matrix of shape "
              f"(n_features, n_features) with n_features >= 1. Got an array with shape ")
    assert _message(lambda: make(torch.ones(3))) == square + "(3,) instead."
    assert _message(lambda: make(torch.ones(3, 4))) == square + "(3, 4) instead."
    assert _message(lambda: make(torch.ones(0, 0))) == square + "(0, 0) instead."
    numbers = (f"The 'shrinkage_cov' parameter of {name} must be a square covariance matrix of real numbers of shape "
               f"(n_features, n_features) with n_features >= 1. Got ")
    assert _message(lambda: make("abc")) == numbers + "'abc' instead."
    assert _message(lambda: make([[1.0, 0.0], [0.0]])) == numbers + "[[1.0, 0.0], [0.0]] instead."
    # the functions, which know the width from H, still name it
    assert _message(lambda: istar_penalty(torch.randn(5, 3), shrinkage_cov=torch.ones(3))) == (
        "The 'shrinkage_cov' parameter of istar_penalty must be a covariance matrix of shape (3, 3) (n_features of H). "
        "Got an array with shape (3,) instead.")
    S = torch.tensor([[2.0, 0.5], [0.5, 1.0]])
    assert torch.equal(make(S).shrinkage_cov.float(), S)


@pytest.mark.parametrize("make", [lambda: IStarLoss(zeta=0.2), lambda: CosRegLoss(weight=2.0)], ids=["istar", "cosreg"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_one_row_batch_costs_nothing_with_one_warning_as_the_drop_ins(make, dtype):
    """A trial: the last batch of an epoch of batch_size·m + 1 rows crashed a plain loop through IStarLoss / CosRegLoss
    ("must have at least 2 samples") where the drop-in regularisers give 0 and go on. The modules now give 0 (float32
    for half H, as their values), no gradient to the row, one warning per module; the functions still refuse."""
    import warnings

    loss = make()
    name = type(loss).__name__
    H = torch.randn(1, 6, dtype=dtype, requires_grad=True)
    with pytest.warns(UserWarning, match=rf"^{name}: a batch of 1 row; .* needs at least 2, so the penalty is 0 for "
                                         r"that batch \(an epoch of batch_size·m \+ 1 rows ends"):
        value = loss(H)
    assert value.shape == () and float(value) == 0.0 and value.dtype == torch.float32 and value.requires_grad
    (value + H.float().sum()).backward()
    torch.testing.assert_close(H.grad, torch.ones_like(H))  # the task loss's gradient only
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once per module
        assert float(loss(torch.randn(1, 6, dtype=dtype))) == 0.0
    two = torch.randn(2, 6, dtype=dtype)
    assert float(loss(two)) != 0.0  # two rows: the penalty as before
    with pytest.raises(IsotropyValueError, match="must have at least 2 samples"):
        (istar_penalty(H, shrinkage_cov=None, zeta=0.2) if name == "IStarLoss" else cosine_penalty(H))


def test_istar_loss_at_zeta_one_with_a_sample_covariance_still_gives_its_value_for_one_row():
    """At ζ = 1 with Σ_S, IsoScore* of any batch is IsoScore(Σ_S), one row included (the drop-ins agree)."""
    from isotropy import isoscore_from_covariance

    loss = IStarLoss(zeta=1.0).refresh_shrinkage_cov(torch.randn(50, 4, generator=torch.Generator().manual_seed(0)))
    assert float(loss(torch.randn(1, 4))) == pytest.approx(-isoscore_from_covariance(loss.shrinkage_cov.numpy()),
                                                           rel=1e-5)



def test_istar_loss_refuses_a_zero_refreshed_or_a_bad_loaded_shrinkage_cov():
    # refresh_shrinkage_cov took rows of one point (Σ_S = 0) and forward refused it later, naming a 'shrinkage_cov'
    # never passed; load_state_dict took any matrix (a non-square one was blamed on the next batch): both refused
    # where they happen, in the constructor's words, and the module keeps its Σ_S
    loss = IStarLoss(zeta=0.2)
    with pytest.raises(IsotropyValueError, match=r"^The 'H' parameter of IStarLoss\.refresh_shrinkage_cov must have "
                                                 r"rows that vary: Σ_S is their covariance\. Got rows that are all "
                                                 r"the same point \(the zero matrix\) instead\.$"):
        loss.refresh_shrinkage_cov(torch.full((10, 8), 0.1))
    assert loss.shrinkage_cov is None
    IStarLoss(zeta=0.0).refresh_shrinkage_cov(torch.ones(10, 8))  # ζ = 0: Σ_S unused, as the constructor allows
    loss.refresh_shrinkage_cov(torch.eye(8).repeat(2, 1))
    kept = loss.shrinkage_cov.clone()
    for bad, why in [(torch.ones(3, 8), r"must be a square covariance matrix"),
                     (-torch.eye(8), (r"must be positive semi-definite \(a covariance matrix\)\. Got a smallest "
                                     r"eigenvalue of -1 instead")),
                     (torch.full((8, 8), float("nan")), r"must contain only finite values")]:
        with pytest.raises(IsotropyValueError, match=rf"^The 'shrinkage_cov' parameter of IStarLoss\.load_state_dict "
                                                     rf"{why}"):
            loss.load_state_dict({"shrinkage_cov": bad})
        assert torch.equal(loss.shrinkage_cov, kept)
    fresh = IStarLoss(zeta=0.2)
    fresh.load_state_dict(loss.state_dict())
    assert torch.equal(fresh.shrinkage_cov, kept)
