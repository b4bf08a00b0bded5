"""alignment on tensors reads the device once per call, and keeps its values at every scale.

Found from docs/benchmarks.md (uniformity and alignment on torch tensors): alignment cost 5.3 times the float64
reference formula at n = 256, most of it fixed work, and read its data back to the host five or six times a call
(the finiteness of X and of Y, each operand's zero rows, the largest exponent, the result's range), each a wait for a
GPU's queue on every training step. It now queues the value and its checks and reads one small tensor of flags at
the end. The reads are counted here by wrapping every Tensor method that brings a value to the host (on a GPU, a
sync). References for the values: the definition in mpmath at 60 digits on the very numbers passed.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import torch

import isotropy as iso

_READS = ("item", "tolist", "numpy", "__bool__", "__float__", "__int__", "__index__")


@pytest.fixture
def reads(monkeypatch):
    """The names of the Tensor methods that read a value back to the host, one entry per call."""
    seen = []
    for name in _READS:
        original = getattr(torch.Tensor, name)

        def wrapped(self, *args, _name=name, _original=original, **kwargs):
            seen.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, wrapped)
    return seen


def _pairs(dtype, n=40, d=16, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return (torch.tensor(X, dtype=dtype, requires_grad=True),
            torch.tensor(X + 0.3 * rng.normal(size=(n, d)), dtype=dtype, requires_grad=True))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
@pytest.mark.parametrize("normalize", [True, False])
def test_one_read_from_the_device_per_call(reads, dtype, normalize):
    X, Y = _pairs(dtype)
    value = iso.alignment(X, Y, normalize=normalize)
    assert reads == ["tolist"]  # the flags of bad input, after the value is queued (was: 5 or 6 reads)
    del reads[:]
    value.backward()
    assert reads == []
    assert X.grad is not None and torch.isfinite(X.grad).all()


def test_one_read_with_a_numpy_partner(reads):
    X, Y = _pairs(torch.float32)
    Y = np.array(Y.detach().tolist())
    del reads[:]
    iso.alignment(X, Y)
    assert reads == ["tolist"]


def _reference(X, Y, alpha, normalize):
    """The mean of ‖x − y‖^α (of x / ‖x‖ − y / ‖y‖ with normalize) at 60 digits."""
    with mpmath.workdps(60):
        total = mpmath.mpf(0)
        for x, y in zip(X.tolist(), Y.tolist()):
            x, y = [mpmath.mpf(v) for v in x], [mpmath.mpf(v) for v in y]
            if normalize:
                nx, ny = (mpmath.sqrt(mpmath.fsum(v * v for v in r)) for r in (x, y))
                x, y = [v / nx for v in x], [v / ny for v in y]
            total += mpmath.sqrt(mpmath.fsum((a - b) ** 2 for a, b in zip(x, y))) ** mpmath.mpf(alpha)
        return total / len(X)


def _relative(value, ref):
    return float(abs((mpmath.mpf(float(value)) - ref) / ref))


# float32 data from its subnormals to its largest numbers (computed unscaled in float64), float64 data from its
# subnormals to its largest (scaled by powers of two read from the bits)
@pytest.mark.parametrize(("dtype", "scale"), [(torch.float32, 1e-40), (torch.float32, 1e-30), (torch.float32, 1e37),
                                              (torch.float64, 1e-315), (torch.float64, 1e-300),
                                              (torch.float64, 1e300)])
@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("alpha", [0.5, 1, 2, 7])
def test_values_at_extreme_scales_equal_the_definition(dtype, scale, normalize, alpha):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(12, 5))
    Y = X + 1e-3 * rng.normal(size=X.shape)
    A, B = (torch.tensor(M * scale, dtype=torch.float64).to(dtype) for M in (X, Y))
    assert (A != 0).any(dim=1).all() and (A != B).any(dim=1).all()
    ref = _reference(A, B, alpha, normalize)
    info = np.finfo(np.float32 if dtype == torch.float32 else np.float64)
    if ref >= mpmath.mpf(float(info.max)):  # past the output's range: refused, not inf
        with pytest.raises(iso.IsotropyValueError, match="alignment"):
            iso.alignment(A, B, alpha=alpha, normalize=normalize)
        return
    value = iso.alignment(A, B, alpha=alpha, normalize=normalize)
    if ref <= mpmath.mpf(float(info.tiny)):  # below the normal range: a subnormal (or 0) within one step of it
        assert value.dtype == dtype
        assert abs(mpmath.mpf(float(value)) - ref) <= mpmath.mpf(float(info.smallest_subnormal))
        return
    assert value.dtype == dtype
    # float32: the float64 value rounded once; float64: a few roundings of the log and exp2 of each power
    assert _relative(value, ref) < (2.0**-24 * (1 + 1e-6) if dtype == torch.float32 else 1e-13)


def test_subnormal_rows_keep_their_directions():
    # rows of subnormal float64 numbers only: brought to unit scale by 2**1022 and then by their own exponent
    X = torch.tensor([[3e-320, 1e-320], [5e-324, 0.0]], dtype=torch.float64)
    Y = torch.tensor([[1.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
    ref = _reference(X, Y, 1.0, True)
    assert _relative(iso.alignment(X, Y, alpha=1.0), ref) < 1e-14


def test_coinciding_pairs_give_zero_with_zero_gradients():
    X, _ = _pairs(torch.float64)
    Y = X.detach().clone().requires_grad_(True)
    for alpha in (0.5, 2.0):
        value = iso.alignment(X, Y, alpha=alpha, normalize=False)
        assert float(value.detach()) == 0.0
        gx, gy = torch.autograd.grad(value, (X, Y))
        assert (gx == 0).all() and (gy == 0).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_refusals_keep_their_words_after_the_one_read(dtype):
    X, Y = (A.detach().clone() for A in _pairs(dtype))
    Y[5, 2] = math.inf
    with pytest.raises(iso.IsotropyValueError, match=r"^The 'Y' parameter of alignment must contain only finite "
                                                     r"values\. Got inf at row 5, column 2 instead\.$"):
        iso.alignment(X, Y)
    Y[5, 2] = 0.0
    X[7] = 0.0
    with pytest.raises(iso.IsotropyValueError, match=r"^The 'X' parameter of alignment has a zero row"):
        iso.alignment(X, Y)
    assert float(iso.alignment(X, Y, normalize=False)) > 0
    with pytest.raises(iso.IsotropyValueError, match=rf"inside {str(dtype)[6:]}'s range\. Got a mean of about 1e"):
        iso.alignment(X, Y * 1e30, normalize=False, alpha=100 if dtype == torch.float64 else 3)


# --- uniformity: the same single read ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
@pytest.mark.parametrize("normalize", [True, False])
def test_uniformity_reads_the_device_once_per_call(reads, dtype, normalize):
    X, _ = _pairs(dtype)
    value = iso.uniformity(X, normalize=normalize)
    assert reads == ["tolist"]  # (was: 6 reads, the log-mean-exp's shift and choice of form among them)
    del reads[:]
    value.backward()
    assert reads == [] and torch.isfinite(X.grad).all()


@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("spread", [1e-7, 1.0])  # both forms of the log-mean-exp: near the shift (expm1) and not
def test_uniformity_equals_the_definition(normalize, spread):
    rng = np.random.default_rng(2)
    A = torch.tensor(3.0 + spread * rng.normal(size=(9, 4)))
    with mpmath.workdps(60):
        rows = [[mpmath.mpf(v) for v in r] for r in A.tolist()]
        if normalize:
            rows = [[v / mpmath.sqrt(mpmath.fsum(u * u for u in r)) for v in r] for r in rows]
        pairs = [mpmath.fsum((a - b) ** 2 for a, b in zip(rows[i], rows[j]))
                 for i in range(len(rows)) for j in range(i + 1, len(rows))]
        ref = mpmath.log(mpmath.fsum(mpmath.exp(-2 * d) for d in pairs) / len(pairs))
    assert _relative(iso.uniformity(A, normalize=normalize), ref) < 1e-12


def test_uniformity_refusals_keep_their_words_after_the_one_read():
    X, _ = (A.detach().clone() for A in _pairs(torch.float64))
    X[4, 1] = math.nan
    with pytest.raises(iso.IsotropyValueError, match=r"^The 'X' parameter of uniformity must contain only finite "
                                                     r"values\. Got nan at row 4, column 1 instead\.$"):
        iso.uniformity(X)
    X[4, 1] = 1.0
    X[2] = 0.0
    with pytest.raises(iso.IsotropyValueError, match=r"^The 'X' parameter of uniformity has a zero row"):
        iso.uniformity(X)
    with pytest.raises(iso.IsotropyValueError, match=r"^The 'X' parameter of uniformity has rows whose squared "
                                                     r"distances exceed float64's range"):
        iso.uniformity(X * 1e160, normalize=False)
