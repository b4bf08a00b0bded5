"""Messages that name what the user called.

A metric's warning names the user's line (the first frame outside isotropy, torch and torchmetrics), whatever path
led to it: with a fixed stacklevel=3, rogue_dimension_share's NaN warning named isotropy/_utils/backend.py (the
autocast wrapper) and RogueDimensionShare's named isotropy/training/metrics.py, lines the user can neither read nor
filter by (``warnings.filterwarnings(module=...)``). A metric's error names its own method, not a function inside.
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest

import isotropy


def _isotropic(n_rows):
    return np.random.default_rng(0).standard_normal((n_rows, 8))


def _caught(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = call()
    return value, caught


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("n_rows", [16, 2], ids=["noise", "one pair"])
def test_rogue_dimension_share_warns_at_the_callers_line(backend, n_rows):
    X = _isotropic(n_rows)
    if backend == "torch":
        torch = pytest.importorskip("torch")
        X = torch.tensor(X)
    value, caught = _caught(lambda: isotropy.rogue_dimension_share(X))
    assert math.isnan(float(value))  # rows that share no direction (the reference: no share is defined)
    assert [(w.category, w.filename) for w in caught] == [(RuntimeWarning, __file__)]


def test_rogue_dimension_share_metric_warns_at_the_callers_line():
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchmetrics")
    from isotropy.training import RogueDimensionShare

    metric = RogueDimensionShare()
    metric.update(torch.tensor(_isotropic(16)))
    value, caught = _caught(metric.compute)
    assert math.isnan(float(value))
    assert [(w.category, w.filename) for w in caught] == [(RuntimeWarning, __file__)]


@pytest.mark.parametrize("n_rows", [0, 1, 2])
def test_twonn_metric_with_too_few_rows_names_its_compute(n_rows):
    """With 1 or 2 rows the error came from the function inside ("The 'X' parameter of twonn_dimension must have at
    least 3 samples"), naming a call the user never made; with 0 rows it named TwoNNDimension.compute. Now one
    message for all three, with the count of rows."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchmetrics")
    from isotropy import IsotropyValueError
    from isotropy.training import TwoNNDimension

    metric = TwoNNDimension()
    if n_rows:
        metric.update(torch.tensor(_isotropic(n_rows)))
    expected = (f"TwoNNDimension.compute needs at least 3 rows; call update() with data first. Got {n_rows} "
                f"instead.")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torchmetrics' own warning of a compute before any update
        with pytest.raises(IsotropyValueError, match=f"^{re.escape(expected)}$"):
            metric.compute()
    metric.update(torch.tensor(_isotropic(40)))  # and with enough rows, the function's value on all of them
    rows = np.concatenate([_isotropic(n_rows), _isotropic(40)]) if n_rows else _isotropic(40)
    assert float(metric.compute()) == pytest.approx(isotropy.twonn_dimension(rows), rel=1e-12)


def test_istar_warning_names_a_user_file_whose_name_begins_like_the_package():
    """I-STAR's warning named the frame above a user's ``isotropy_demo.py`` written beside a source checkout: its walk
    (isotropy.torch._caller_level, a copy of the package's one walk) took the folder ``.../isotropy`` without its
    separator for a prefix, which ``.../isotropy_demo.py`` matches (found in review; ``.../torch`` held
    ``.../torchvision`` the same way). The user's function is given that file name; the reference is the name itself."""
    import os

    torch = pytest.importorskip("torch")
    from isotropy.torch import istar_penalty

    user_file = os.path.dirname(os.path.dirname(os.path.abspath(isotropy.__file__))) + os.sep + "isotropy_demo.py"
    H = torch.tensor(_isotropic(16))

    def demo():
        return istar_penalty(H, shrinkage_cov=None)

    demo.__code__ = demo.__code__.replace(co_filename=user_file)  # the user's function, as if written in that file
    value, caught = _caught(demo)
    assert [(w.category, w.filename, w.lineno) for w in caught] == [(UserWarning, user_file, demo.__code__.co_firstlineno + 1)]
    assert math.isfinite(float(value))
