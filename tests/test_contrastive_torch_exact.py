"""alignment and uniformity on tensors give numpy's value (or its refusal) at any scale, with gradients.

Found by a user trial: a float32 tensor with a float64 array returned 0.0 (the array cast to float32 became inf, then
NaN, and the NaN pair was averaged in as a coinciding one); float32 and float64 tensors underflowed or overflowed where
numpy gave the exact value or refused; float32 tensors drifted from numpy on nearly parallel rows; a huge alpha leaked
RuntimeWarnings and an error message with a 300-digit exponent. References: closed forms computed in float64 (or
np.longdouble) on the same values, scipy's pdist, and the numpy path's own refusals.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

import isotropy as iso


@pytest.fixture
def XY():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 5))
    return X, X + 0.1 * rng.normal(size=X.shape)


def _unit(A):
    A = np.asarray(A, dtype=np.longdouble)
    return A / np.sqrt((A * A).sum(axis=1))[:, None]


def _alignment_reference(X, Y, alpha=2.0):
    """The mean of ‖x̂ − ŷ‖^α of the unit rows, in extended precision."""
    return float(np.mean(np.sqrt(((_unit(X) - _unit(Y)) ** 2).sum(axis=1)) ** alpha))


def _error(call):
    with pytest.raises(iso.IsotropyValueError) as info:
        call()
    return str(info.value)


# --- 1. one tensor and one numpy array ------------------------------------------------------------------------------

@pytest.mark.parametrize("scale", [1e40, 1e-50])
def test_a_float32_tensor_with_an_array_it_cannot_hold_gets_the_value_of_both(XY, scale):
    # the array was cast to float32 first: 1e40 became inf and the value 0.0; 1e-50 became 0, "a zero row"
    X, Y = XY
    t = torch.tensor(X, dtype=torch.float32, requires_grad=True)
    value = iso.alignment(t, Y * scale)  # normalised: scale-invariant
    assert value.dtype == torch.float32
    expected = _alignment_reference(X.astype(np.float32), Y)
    assert float(value.detach()) == pytest.approx(expected, rel=1e-6, abs=0)
    assert float(value.detach()) == pytest.approx(iso.alignment(X.astype(np.float32).astype(np.float64), Y * scale),
                                                  rel=1e-6, abs=0)
    value.backward()
    assert torch.isfinite(t.grad).all() and t.grad.abs().sum() > 0


def test_a_mean_past_the_tensors_dtype_is_refused_not_inf(XY):
    X, Y = XY
    exact = iso.alignment(X.astype(np.float32).astype(np.float64), Y * 1e40, normalize=False)  # ~1e81: a float64
    message = _error(lambda: iso.alignment(torch.tensor(X, dtype=torch.float32), Y * 1e40, normalize=False))
    assert message == (f"The 'X' and 'Y' parameters of alignment must have a mean ‖x − y‖^α inside float32's range. "
                       f"Got a mean of about 1e{math.log10(exact):.0f} (alpha=2) instead; rescale X and Y, or take a "
                       f"smaller alpha (or pass float64 tensors).")
    # in float64 tensors, the value
    value = iso.alignment(torch.tensor(X.astype(np.float32), dtype=torch.float64), Y * 1e40, normalize=False)
    assert float(value) == pytest.approx(exact, rel=1e-12, abs=0)


def test_an_array_the_computing_dtype_cannot_hold_is_refused_naming_it(XY):
    # on MPS (no float64) the computing dtype is float32: a float64 array past it is refused, not cast to inf or 0
    from isotropy.metrics.contrastive import _as_tensor

    _, Y = XY
    for A, shown in ((Y * 1e40, f"{np.abs(Y * 1e40).max():.3g}"), (Y * 1e-50, f"{np.abs(Y * 1e-50).min():.3g}")):
        message = _error(lambda A=A: _as_tensor(A, "Y", torch.float32, torch.device("cpu"), "alignment"))
        assert message == ("The 'Y' parameter of alignment must have values that float32 holds (normal magnitudes "
                           f"from 1.18e-38 to 3.4e+38), the dtype of the computation on cpu. Got {shown} instead.")
    assert _as_tensor(Y, "Y", torch.float32, torch.device("cpu"), "alignment").dtype == torch.float32


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("narrow", [False, True])
def test_a_nan_pair_is_not_averaged_in_as_a_coinciding_one(XY, normalize, narrow):
    # NaN failed the test "> 0" and counted as a pair at distance 0; a public call refuses NaN from the flags the
    # kernel queues beside its value (one read from the device), the kernel itself gives NaN
    from isotropy.metrics.contrastive import _alignment_kernel

    X, Y = (torch.tensor(A) for A in XY)
    X[3, 1] = math.nan
    value, _, checks = _alignment_kernel(X, Y, alpha=2.0, normalize=normalize, narrow=narrow)
    assert math.isnan(float(value)) and [bool(c) for c in checks] == [False, False, False, False]  # (not all finite)
    assert _error(lambda: iso.alignment(X, Y, normalize=normalize)) == (
        "The 'X' parameter of alignment must contain only finite values. Got nan at row 3, column 1 instead.")


# --- 2. tensors at extreme scales: numpy's value or its refusal ----------------------------------------------------

@pytest.mark.parametrize("scale", [1e-25, 1e25])
def test_float32_tensors_far_from_unit_scale_give_numpys_value(XY, scale):
    X, Y = XY
    A, B = (X * scale).astype(np.float32), (Y * scale).astype(np.float32)
    norms = np.linalg.norm(A.astype(np.float64) - B.astype(np.float64), axis=1)  # float64 holds these squares
    value = iso.alignment(torch.tensor(A), torch.tensor(B), alpha=1, normalize=False)
    assert value.dtype == torch.float32 and float(value) == pytest.approx(norms.mean(), rel=1e-6, abs=0)
    assert iso.alignment(A, B, alpha=1, normalize=False) == pytest.approx(norms.mean(), rel=1e-12, abs=0)


def test_float32_uniformity_of_rows_near_1e25_is_numpys_value(XY):
    from scipy.spatial.distance import pdist

    X, _ = XY
    A = (X * 1e25).astype(np.float32)
    d2 = pdist(A.astype(np.float64)) ** 2  # ~1e50: fine in float64, inf in float32
    expected = float(np.log(np.mean(np.exp(-1e-50 * d2))))
    assert iso.uniformity(A, t=1e-50, normalize=False) == pytest.approx(expected, rel=1e-12, abs=0)
    value = iso.uniformity(torch.tensor(A), t=1e-50, normalize=False)
    assert value.dtype == torch.float32 and float(value) == pytest.approx(expected, rel=1e-6, abs=0)


def test_float64_tensors_far_from_unit_scale_give_numpys_value_or_refusal(XY):
    X, Y = XY
    lift = 2.0 ** 600  # the closed form at unit scale, brought back by a power of two (exact)
    expected = np.mean(np.linalg.norm((X * 1e-170) * lift - (Y * 1e-170) * lift, axis=1)) / lift
    value = iso.alignment(torch.tensor(X * 1e-170), torch.tensor(Y * 1e-170), alpha=1, normalize=False)
    assert float(value) == pytest.approx(expected, rel=1e-12, abs=0)
    refused = _error(lambda: iso.uniformity(X * 1e160, normalize=False))
    assert refused.startswith("The 'X' parameter of uniformity has rows whose squared distances exceed float64's range")
    assert _error(lambda: iso.uniformity(torch.tensor(X * 1e160), normalize=False)) == refused


def test_float32_tensors_of_nearly_parallel_rows_keep_numpys_accuracy(XY):
    # unit rows rounded to float32 moved the differences of rows at an offset of 3e5 (alignment 4e-2 off, uniformity
    # 1e-3 off here): now normalised in float64 as numpy normalises float32 input
    X, Y = XY
    A, B = (X + 3e5).astype(np.float32), (Y + 3e5).astype(np.float32)
    expected = _alignment_reference(A, B)
    assert iso.alignment(A, B) == pytest.approx(expected, rel=1e-9, abs=0)
    assert float(iso.alignment(torch.tensor(A), torch.tensor(B))) == pytest.approx(expected, rel=1e-6, abs=0)
    assert float(iso.uniformity(torch.tensor(A))) == pytest.approx(iso.uniformity(A), rel=1e-6, abs=0)


@pytest.mark.parametrize("scale", [1e-100, 1.0, 1e100])
@pytest.mark.parametrize("normalize", [False, True])
def test_gradients_at_any_scale_equal_central_differences(XY, scale, normalize):
    X, Y = (A[:7, :3] for A in XY)
    for alpha in (0.5, 1, 2):
        unit = 1.0 if normalize else scale ** alpha  # the value brought to unit scale: central differences of 1e-6

        def f(u, v, alpha=alpha, unit=unit):
            return iso.alignment(u * scale, v * scale, alpha=alpha, normalize=normalize) / unit

        assert torch.autograd.gradcheck(f, (torch.tensor(X, requires_grad=True), torch.tensor(Y, requires_grad=True)))
    t = 2.0 if normalize else 2.0 / scale**2
    assert torch.autograd.gradcheck(lambda u: iso.uniformity(u * scale, t=t, normalize=normalize),
                                    (torch.tensor(X, requires_grad=True),))


# --- 3. a huge alpha --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("alpha", [1e20, 1e300, 1.7e308])
def test_a_huge_alpha_warns_nothing_and_says_the_mean_readably(XY, alpha):
    import dask.array as da
    X, Y = XY
    A, B = X * 100, Y * 100  # pairs more than 1 apart: the mean overflows
    largest = float(np.linalg.norm(A - B, axis=1).max())
    decimal = alpha * math.log10(largest)  # log10 of the mean to 3 digits: the largest pair's power dominates
    size = (f"10^({decimal:.3g})" if math.isfinite(decimal) else None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # overflow encountered in multiply/add, invalid value in subtract
        messages = [_error(lambda: iso.alignment(A, B, alpha=alpha, normalize=False)),
                    _error(lambda: iso.alignment(torch.tensor(A), torch.tensor(B), alpha=alpha, normalize=False)),
                    _error(lambda: iso.alignment(da.from_array(A, chunks=(25, 5)), B, alpha=alpha, normalize=False))]
        # pairs less than 1 apart: their powers underflow to 0, without a warning either
        assert iso.alignment(X, Y, alpha=alpha, normalize=False) == 0.0
        assert float(iso.alignment(torch.tensor(X), torch.tensor(Y), alpha=alpha, normalize=False)) == 0.0
    got = ("a mean of about " + size) if size else "a mean past 10^(1.8e308), whose exponent itself overflows float64"
    expected = (f"The 'X' and 'Y' parameters of alignment must have a mean ‖x − y‖^α inside float64's range. "
                f"Got {got} (alpha={alpha:g}) instead; rescale X and Y, or take a smaller alpha.")
    assert messages == [expected] * 3


def test_uniformity_of_float32_tensors_beyond_float32_is_refused_not_minus_inf():
    """Computed in float64, uniformity came back as -inf in a float32 tensor's dtype when its value lay beyond float32
    (rows near 1e30 unnormalised, or t = 1e40), with finite gradients: a training loop got -inf without a word (a user
    trial). Refused in one line, as alignment refuses a mean beyond the tensor's range; float64 tensors give the value."""
    import torch

    import isotropy

    X = np.random.default_rng(0).normal(size=(50, 4))
    with pytest.raises(isotropy.IsotropyValueError, match=r"uniformity inside float32's range\. Got about -"):
        isotropy.uniformity(torch.tensor(X * 1e30, dtype=torch.float32), normalize=False)
    with pytest.raises(isotropy.IsotropyValueError, match=r"t=1e\+40"):
        isotropy.uniformity(torch.tensor(X, dtype=torch.float32), t=1e40)
    wide = isotropy.uniformity(torch.tensor(X), t=1e40)
    assert float(wide) == pytest.approx(isotropy.uniformity(X, t=1e40), rel=1e-12)
    assert float(wide) < -np.finfo(np.float32).max
