"""The errors of the loss modules name the module (or its method), not the function it calls.

``CosRegLoss()(H)`` said "... of cosine_penalty ..." and ``IStarLoss().refresh_shrinkage_cov(H)`` said "... of
shrinkage_covariance ..."; ``IStarLoss()(H)`` named itself already, the pattern followed.
"""

import pytest
import torch

from isotropy import IsotropyValueError
from isotropy.torch import CosRegLoss, IStarLoss, cosine_penalty, shrinkage_covariance


def _message(call):
    with pytest.raises((TypeError, ValueError)) as info:
        call()
    assert "\n" not in str(info.value)
    return str(info.value)


def test_cosreg_loss_names_itself():
    assert _message(lambda: CosRegLoss()(torch.randn(1, 4))) == (
        "The 'H' parameter of CosRegLoss must have at least 2 samples (rows). Got 1 instead.")
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
        IStarLoss()(torch.randn(1, 4))


def test_the_values_are_unchanged():
    H = torch.tensor([[1.0, 1.0], [2.0, 2.0], [1.0, -1.0]])
    assert float(CosRegLoss(weight=2.0)(H)) == pytest.approx(2 * float(cosine_penalty(H)), rel=1e-7)
    loss = IStarLoss().refresh_shrinkage_cov(H)
    torch.testing.assert_close(loss.shrinkage_cov, shrinkage_covariance(H))
    expected = torch.tensor([[1.0 / 3, 2.0 / 3], [2.0 / 3, 7.0 / 3]])  # by hand: ddof=1
    torch.testing.assert_close(shrinkage_covariance(H), expected)
