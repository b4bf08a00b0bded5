"""partition_isotropy (I(W), Mu & Viswanath 2018) vs a direct reference, closed forms, overflow."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.special import logsumexp

from isotropy import IsotropyValueError, partition_isotropy


def _reference(X):
    """Direct definition: eigenvectors of XᵀX (both signs) and Z(u) = Σ exp(uᵀx) in log space via scipy."""
    X = np.asarray(X, dtype=np.float64)
    _, U = np.linalg.eig(X.T @ X)  # a different LAPACK routine (geev) from the implementation's eigh
    U = np.real(U) / np.linalg.norm(np.real(U), axis=0)
    U = np.hstack([U, -U])
    log_z = logsumexp(X @ U, axis=0)
    return math.exp(log_z.min() - log_z.max())


def test_closed_form():
    # X = ±e_i + e_1: XᵀX = diag(8, 2, 2); Z(±e_1) = e^{±2} + 4e^{±1} + 1 is the max / min
    X = np.vstack([np.eye(3), -np.eye(3)]) + np.array([1.0, 0, 0])
    expected = (math.exp(-2) + 4 * math.exp(-1) + 1) / (math.exp(2) + 4 * math.exp(1) + 1)
    assert partition_isotropy(X) == pytest.approx(expected, abs=1e-14)
    assert partition_isotropy(np.vstack([np.eye(4), -np.eye(4)])) == pytest.approx(1.0, abs=1e-15)


@pytest.mark.parametrize("n, d", [(200, 5), (6, 10)])
def test_matches_reference(rng, n, d, backend):
    X = rng.normal(size=(n, d)) @ rng.normal(size=(d, d)) * 0.3 + 0.2
    out = partition_isotropy(backend(X))
    assert float(out) == pytest.approx(_reference(X), abs=1e-10)
    if isinstance(out, torch.Tensor):
        assert out.ndim == 0 and out.dtype == torch.float64


def test_large_norms_do_not_overflow(rng):
    X = rng.normal(size=(50, 4)) * 1e3 + 5e3  # exp(uᵀx) ~ exp(1e4) overflows float64
    with np.errstate(over="ignore"):
        assert not np.isfinite(np.exp(X @ np.ones(4) / 2).sum())
    value = partition_isotropy(X)
    assert 0.0 <= value <= 1.0 and math.isfinite(value)
    assert value == pytest.approx(_reference(X), abs=1e-12)
    t = partition_isotropy(torch.tensor(X, dtype=torch.float32))
    assert torch.isfinite(t)



@pytest.mark.filterwarnings("error")
def test_projections_near_float64s_limit_are_exact_and_warn_nothing():
    """At 4e307 the projections of both signs differ by more than 1.8e308: numpy's "overflow in subtract" leaked."""
    X = np.random.default_rng(0).normal(size=(100, 4))
    # min log Z − max log Z is about −1e308 (log Z(u) ≈ max_i uᵀx_i): I(W) = exp of it is 0.0 in float64
    assert partition_isotropy(X * 4e307) == 0.0
    assert partition_isotropy((X * 4e307)[:3]) == 0.0  # n < d: the Gram path
    # symmetric rows at 1.7e308: every Z(±e_i) is the same, I(W) = 1 exactly, though P − max P overflows
    S = np.vstack([np.eye(4), -np.eye(4)]) * 1.7e308
    assert partition_isotropy(S) == 1.0
    assert float(partition_isotropy(torch.tensor(S))) == 1.0
    assert float(partition_isotropy(torch.tensor(X * 4e307))) == 0.0

def test_rotation_invariant_and_sign_free(rng):
    X = rng.normal(size=(100, 5)) + 0.3
    Q, _ = np.linalg.qr(rng.normal(size=(5, 5)))
    assert partition_isotropy(X @ Q) == pytest.approx(partition_isotropy(X), abs=1e-10)
    assert partition_isotropy(-X) == pytest.approx(partition_isotropy(X), abs=1e-12)


def test_errors():
    with pytest.raises(IsotropyValueError, match="finite"):
        partition_isotropy(np.array([[np.inf, 0.0], [1.0, 0.0]]))
    with pytest.raises(IsotropyValueError, match="2-d"):
        partition_isotropy(np.ones(3))


@pytest.mark.parametrize("pad", [0, 6], ids=["n>=d", "n<d"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_torch_gradient_where_eigenvalues_tie(pad, dtype):
    """Tied eigenvalues (XᵀX = diag(2, 2, 8, 8)): eigh's gradient was NaN in every entry; now finite, with the
    directional derivatives that keep the ties (a scaling, a change of the tied pairs' norms) equal to finite
    differences of the value (the solver returns the axes at every point of those paths)."""
    D = np.hstack([np.diag([1.0, 1.0, 2.0, 2.0]), np.zeros((4, pad))])
    X = np.vstack([D, -D])  # 8 rows, 4 or 10 features: Z(±e_3) = 2cosh(2) + 6 is the max; the min is Z(±e_1) =
    # 2cosh(1) + 6, or with 10 features Z = 8 on the directions orthogonal to every row
    T = torch.tensor(X, dtype=dtype, requires_grad=True)
    value = partition_isotropy(T)
    value.backward()
    assert float(value) == pytest.approx((8 if pad else 2 * math.cosh(1) + 6) / (2 * math.cosh(2) + 6), rel=1e-6)
    assert torch.isfinite(T.grad).all()
    grad = T.grad.double().numpy()
    E = np.zeros_like(X)
    E[[0, 1, 4, 5], [0, 1, 0, 1]] = [1.0, 1.0, -1.0, -1.0]  # the norm of the rows ±e_1, ±e_2: still tied
    h = 1e-5
    for direction in (X, E):
        numeric = (partition_isotropy(X + h * direction) - partition_isotropy(X - h * direction)) / (2 * h)
        assert float((grad * direction).sum()) == pytest.approx(numeric, rel=1e-4 if dtype == torch.float32 else 1e-7)


def test_torch_gradient_without_ties_is_eighs(rng):
    """Distinct eigenvalues keep eigh's gradient: it matches finite differences in every direction (gradcheck)."""
    for n, d in ((30, 5), (5, 8)):
        X = torch.tensor(rng.normal(size=(n, d)) + 0.3, dtype=torch.float64, requires_grad=True)
        assert torch.autograd.gradcheck(partition_isotropy, (X,), eps=1e-6, atol=1e-6)


def _central_differences(H, step=1e-6):
    grad = torch.zeros_like(H)
    with torch.no_grad():
        for index in np.ndindex(*H.shape):
            up, down = H.clone(), H.clone()
            up[index] += step
            down[index] -= step
            grad[index] = (partition_isotropy(up) - partition_isotropy(down)) / (2 * step)
    return grad


@pytest.mark.parametrize("layout", ["two dead columns", "repeated rows, n < d"])
def test_torch_gradient_where_only_zero_eigenvalues_tie_is_exact(layout):
    """Two zero eigenvalues (dead dimensions; rows spanning fewer dimensions than the Gram matrix has) made every entry
    of the gradient NaN, eigh dividing by their zero gap (a user trial). The value does not depend on their basis: the
    gradient leaves out the rotations within it and equals central differences."""
    g = torch.Generator().manual_seed(0)
    if layout == "two dead columns":
        H = torch.randn(20, 6, dtype=torch.float64, generator=g) + 0.5
        H[:, 4:] = 0
    else:
        H = torch.randn(4, 10, dtype=torch.float64, generator=g)
        H = torch.cat([H, H[:2]])
    leaf = H.clone().requires_grad_(True)
    grad = torch.autograd.grad(partition_isotropy(leaf), leaf)[0]
    reference = _central_differences(H)
    assert torch.isfinite(grad).all()
    assert reference.abs().max() > 1e-3  # a gradient to get right
    torch.testing.assert_close(grad, reference, rtol=0, atol=1e-8)
