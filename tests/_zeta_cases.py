"""The refusals of a ζ that is not a real number or a 0-d real tensor/array in [0, 1], in the words every caller
uses (``isotropy._utils.validation.check_zeta``): one table for the tests of each caller."""

from __future__ import annotations

import numpy as np
import torch

from isotropy import IsotropyValueError


def zeta_refusals(caller: str, *, grad: bool = True) -> list:
    """``[(zeta, exception type, message), ...]`` of ``caller``'s refusals; ``grad``: with the ζ that requires grad
    (refused where ζ is read once as a float; callers that never see one leave it out)."""
    start = f"The 'zeta' parameter of {caller} must be"
    tensor = f"{start} a real number or a 0-d real tensor"
    cases = [
        (torch.tensor(1.5), IsotropyValueError, f"{tensor} in the range [0.0, 1.0]. Got tensor(1.5000) instead."),
        (np.array(-0.5), IsotropyValueError,
         f"{start} a real number or a 0-d real array in the range [0.0, 1.0]. Got array(-0.5) instead."),
        (torch.tensor([0.2]), IsotropyValueError, f"{tensor}. Got a tensor of shape (1,) instead."),
        (torch.tensor(True), TypeError, f"{tensor}. Got a 0-d tensor of dtype torch.bool instead."),
        (1.5, IsotropyValueError, f"{start} a float in the range [0.0, 1.0]. Got 1.5 instead."),  # a number: as before
    ]
    if grad:  # read as a float, ζ gets no gradient (the score is differentiable in X only): refused, saying so
        cases.insert(4, (torch.tensor(0.2, requires_grad=True), IsotropyValueError,
                         (f"{tensor} that does not require grad: it is read once as a float, and no gradient would "
                          f"reach it. Got tensor(0.2000, requires_grad=True) instead.")))
    return cases
