"""Complex matrices given where a covariance is expected (a user trial).

``isoscore_from_covariance`` of a Hermitian matrix scored its real part (0.8763, with numpy's ComplexWarning only);
a complex64 tensor did so without any warning, and ``IStarLoss(shrinkage_cov=...)`` and ``shrinkage_covariance`` of
complex states dropped the imaginary parts silently. Each is refused as a complex ``X`` is: one line naming the
argument and the dtype, a TypeError that is also an IsotropyValueError (what these matrices raised before).
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import torch

from isotropy import CovarianceAccumulator, IsotropyValueError, isoscore_from_covariance, isoscore_star
from isotropy.torch import IStarLoss, istar_penalty, shrinkage_covariance

X = np.random.default_rng(0).normal(size=(60, 5))
C = np.cov(X, rowvar=False)
U = np.triu(np.ones((5, 5)), 1)
HERMITIAN = C + 1j * (U - U.T)  # Hermitian, positive definite: a complex covariance whose real part is C


def _refused(call, message):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning nor torch's "Casting complex values" first
        with pytest.raises(TypeError) as info:
            call()
    assert isinstance(info.value, IsotropyValueError)
    assert str(info.value) == message


@pytest.mark.parametrize("cov, dtype", [
    (HERMITIAN, "complex128"),
    (HERMITIAN.tolist(), "complex128"),
    (torch.tensor(HERMITIAN), "torch.complex128"),
    (torch.tensor(HERMITIAN).to(torch.complex64), "torch.complex64"),  # cast to float32 without a word
])
def test_a_complex_cov_is_refused(cov, dtype):
    _refused(lambda: isoscore_from_covariance(cov), "The 'cov' parameter of isoscore_from_covariance must be a "
                                                    f"real-valued matrix. Got dtype {dtype} instead.")


@pytest.mark.parametrize("torch_S", [False, True])
def test_a_complex_shrinkage_cov_is_refused_by_every_entry_point(torch_S):
    S = torch.tensor(HERMITIAN) if torch_S else HERMITIAN
    dtype = "torch.complex128" if torch_S else "complex128"
    H = torch.tensor(X)
    calls = {
        "isoscore_from_covariance": lambda: isoscore_from_covariance(C, shrinkage_cov=S, zeta=0.5),
        "isoscore_star": lambda: isoscore_star(X, shrinkage_cov=S),
        "CovarianceAccumulator.isoscore_star": lambda: CovarianceAccumulator().update(X).isoscore_star(shrinkage_cov=S),
        "istar_penalty": lambda: istar_penalty(H, shrinkage_cov=S),
        "IStarLoss": lambda: IStarLoss(shrinkage_cov=S),  # made real by .to(float) with a UserWarning at most
    }
    for caller, call in calls.items():
        _refused(call, f"The 'shrinkage_cov' parameter of {caller} must be a real-valued matrix. Got dtype {dtype} "
                       f"instead.")


def test_complex_hidden_states_are_refused_by_shrinkage_covariance():
    """Cast to float64, complex states gave the covariance of their real parts (no warning at all)."""
    H = torch.tensor(X + 1j)
    _refused(lambda: shrinkage_covariance(H), "The 'H' parameter of shrinkage_covariance must be a real-valued "
                                              "tensor. Got dtype torch.complex128 instead.")
    _refused(lambda: shrinkage_covariance([torch.tensor(X), H]), "The 'H[1]' parameter of shrinkage_covariance must "
                                                                 "be a real-valued tensor. Got dtype torch.complex128 "
                                                                 "instead.")
    _refused(lambda: IStarLoss().refresh_shrinkage_cov(H), "The 'H' parameter of IStarLoss.refresh_shrinkage_cov must "
                                                           "be a real-valued tensor. Got dtype torch.complex128 "
                                                           "instead.")


def test_an_object_array_of_complex_numbers_is_one_line():
    """numpy's "float() argument must be a string or a real number, not 'complex'" named nothing."""
    with pytest.raises(IsotropyValueError) as info:
        isoscore_from_covariance(HERMITIAN.astype(object))
    assert re.match(r"^The 'cov' parameter of isoscore_from_covariance must be a square matrix of real numbers, of "
                    r"shape \(n_features, n_features\)\. Got array\(\[\[\(0\.72", str(info.value)), str(info.value)


def test_real_matrices_are_still_scored_as_the_eigenvalue_formula():
    """The closed form of Rudman et al. from the eigenvalues (numpy float64): the checks take real input as before."""
    lam = np.linalg.eigvalsh(C)
    expected = ((lam.sum() ** 2 / (lam ** 2).sum()) - 1) / (len(lam) - 1)
    assert isoscore_from_covariance(C) == pytest.approx(expected, rel=1e-13)
    assert float(isoscore_from_covariance(torch.tensor(C))) == pytest.approx(expected, rel=1e-13)
    assert isoscore_from_covariance(C.astype(np.float32)) == pytest.approx(expected, rel=1e-6)
