"""alignment of nearly parallel pairs keeps its relative precision with normalize (numpy, torch, dask).

The same rounding as uniformity's (tests/test_uniformity_collapsed.py): the unit rows x / ‖x‖ are about 1e-16 off in
each entry, an absolute error on ‖x̂ − ŷ‖ that was 1e-8 of the value for pairs 1e-9 of their norms apart (7e-12 at
1e-6), and 1e-9 off for directions apart by a subnormal number. The chord of the rows' exact directions is now taken
from rows scaled by powers of two. References: the definition with mpmath at 50 digits on the values passed.
"""

from __future__ import annotations

import dask.array as da
import mpmath
import numpy as np
import pytest
import torch

from isotropy.metrics.contrastive import alignment


def reference(X, Y, alpha):
    """The mean of ‖x̂ − ŷ‖^α over the pairs of rows, the directions exact, at 50 digits."""
    with mpmath.workdps(50):
        total = mpmath.mpf(0)
        for x, y in zip(np.asarray(X), np.asarray(Y)):
            x, y = ([mpmath.mpf(float(v)) for v in row] for row in (x, y))
            nx, ny = (mpmath.sqrt(mpmath.fsum(v * v for v in row)) for row in (x, y))
            chord = mpmath.sqrt(mpmath.fsum((a / nx - b / ny) ** 2 for a, b in zip(x, y)))
            total += chord ** mpmath.mpf(alpha)
        return total / len(X)


def _pairs(level, dtype, n=20, d=10, seed=0):
    """Pairs about ``level`` times their norm apart (a third of the entries small, so that float32 pairs differ)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:, ::3] *= 1e-3
    Y = X + level * rng.normal(size=(n, d))
    return X.astype(dtype), Y.astype(dtype)


def _value(kind, X, Y, **kwargs):
    if kind == "torch":
        return alignment(torch.tensor(X), torch.tensor(Y), **kwargs)
    if kind == "dask":
        return alignment(da.from_array(X, chunks=(7, -1)), da.from_array(Y, chunks=(7, -1)), **kwargs)
    return alignment(X, Y, **kwargs)


def _relative(value, ref):
    return float(abs((mpmath.mpf(float(value)) - ref) / ref))


@pytest.mark.parametrize("kind", ["numpy", "torch", "dask"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("level", [1e-1, 1e-3, 1e-6, 1e-9])
@pytest.mark.parametrize("alpha", [2, 1, 0.5])
def test_nearly_parallel_pairs_keep_relative_precision(kind, dtype, level, alpha):
    X, Y = _pairs(level, dtype)
    assert (X != Y).any(axis=1).all()
    ref = reference(X, Y, alpha)
    value = _value(kind, X, Y, alpha=alpha)
    if kind == "torch" and dtype == np.float32:
        assert value.dtype == torch.float32
        assert _relative(value, ref) <= 2.0**-24 * (1 + 1e-9)  # the float64 value rounded once to float32
    else:
        assert _relative(value, ref) < 3e-14


@pytest.mark.parametrize("kind", ["numpy", "torch", "dask"])
def test_directions_apart_by_a_subnormal_number(kind):
    # (1e300, 3) and (1e300, 3.0000000001) are 1e-310 apart on the sphere: the unit rows' difference was a subnormal
    # float and the value 1.1e-9 off; now the limit is the subnormal difference of the scaled rows (1e-13)
    X = np.array([[1.0, 1e-300], [1e300, 3.0]])
    Y = np.array([[1.0, 0.0], [1e300, 3.0000000001]])
    assert _relative(_value(kind, X, Y, alpha=0.3), reference(X, Y, 0.3)) < 1e-12


@pytest.mark.parametrize("level", [1e-3, 1e-6])
def test_gradients_of_nearly_parallel_pairs_equal_central_differences(level):
    X, Y = (torch.tensor(A, requires_grad=True) for A in _pairs(level, np.float64, n=6, d=4))
    assert torch.autograd.gradcheck(lambda u, v: alignment(u, v), (X, Y), eps=level * 1e-3, atol=level * 1e-9,
                                    rtol=1e-6)
