"""uniformity of nearly collapsed rows keeps its relative precision (numpy, torch, dask; float64 and float32 input).

Found by a user trial: rows of a random matrix plus an offset of 3e5 (distances about 5e-6 of the norms) gave a
value 4.5e-6 off, and rows closer still lost it all. Two roundings, both near 1: the mean of potentials
exp(−t‖x − y‖²) just below 1, whose log is the tiny negative value (now ``m + log1p(mean expm1(v − m))``), and, with
``normalize``, the unit rows x / ‖x‖ and the expansion 2 − 2x̂·ŷ of their Gram matrix, each about 1e-16 off in
absolute terms, against squared chords of 1e-18 (now the chords of the rows' exact directions, less their mean).

References: the definition evaluated with mpmath at 50 digits on the very values passed (float32 inputs as the
float32 numbers they are), unit rows and distances included; closed forms for a tiny ``t``; torch's gradcheck.
"""

from __future__ import annotations

import functools

import dask.array as da
import mpmath
import numpy as np
import pytest
import torch

from isotropy.metrics.contrastive import uniformity


def _rows(A, normalize):
    """The rows of ``A`` as mpmath numbers (the exact values of the floats), projected exactly with ``normalize``."""
    rows = [[mpmath.mpf(float(v)) for v in row] for row in np.asarray(A)]
    if normalize:
        rows = [[v / mpmath.sqrt(mpmath.fsum(w * w for w in row)) for v in row] for row in rows]
    return rows


@functools.cache
def _reference(data: bytes, shape, dtype, t, normalize):
    """log of the mean over the pairs i < j of exp(−t‖x_i − x_j‖²), at 50 digits."""
    with mpmath.workdps(50):
        rows = _rows(np.frombuffer(data, dtype=dtype).reshape(shape), normalize)
        terms = [mpmath.exp(-mpmath.mpf(t) * mpmath.fsum((a - b) ** 2 for a, b in zip(rows[i], rows[j])))
                 for i in range(len(rows)) for j in range(i + 1, len(rows))]
        return mpmath.log(mpmath.fsum(terms) / len(terms))


def reference(A, t=2.0, normalize=True):
    A = np.ascontiguousarray(A)
    return _reference(A.tobytes(), A.shape, A.dtype.str, float(t), bool(normalize))


def _collapsed(level, dtype, n=24, d=12, seed=0):
    """Rows a distance of about ``level`` times their norm apart: an offset plus ``level`` times noise. A third of the
    offset's entries are small, so that float32 rows (spacing 6e-8 of the norm in the large entries) differ too."""
    rng = np.random.default_rng(seed)
    offset = rng.normal(size=d)
    offset[::3] *= 1e-3
    return (offset + level * rng.normal(size=(n, d))).astype(dtype)


def _value(kind, A, **kwargs):
    if kind == "torch":
        return uniformity(torch.tensor(A), **kwargs)
    if kind == "dask":
        return uniformity(da.from_array(A, chunks=(7, -1)), **kwargs)  # 4 blocks: 10 tiles merged
    return uniformity(A, **kwargs)


def _relative(value, ref):
    return float(abs((mpmath.mpf(float(value)) - ref) / ref))


@pytest.mark.parametrize("kind", ["numpy", "torch", "dask"])
@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("level", [1e-1, 1e-3, 1e-6, 1e-9])
def test_nearly_collapsed_float64_rows_keep_relative_precision(kind, normalize, level):
    # before: 7e-5 (normalize, level 1e-6) and 6e-6 (not) relative error, all of it at 1e-9 (the value read 0.0)
    X = _collapsed(level, np.float64)
    ref = reference(X, normalize=normalize)
    assert ref < 0
    value = _value(kind, X, normalize=normalize)
    assert _relative(value, ref) < 3e-14


@pytest.mark.parametrize("kind", ["numpy", "torch", "dask"])
@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("level", [1e-3, 1e-6, 1e-9])
def test_nearly_collapsed_float32_rows_keep_relative_precision(kind, normalize, level):
    # the reference on the float32 numbers themselves; numpy and dask return a float64 float, torch a float32 tensor
    X = _collapsed(level, np.float32)
    assert (np.ptp(X, axis=0) > 0).sum() >= 4  # distinct rows in float32 too
    ref = reference(X, normalize=normalize)
    assert ref < 0
    value = _value(kind, X, normalize=normalize)
    if kind == "torch":
        assert value.dtype == torch.float32
        assert _relative(value, ref) <= 2.0**-24 * (1 + 1e-9)  # the float64 value rounded once to float32
        assert float(value) == float(np.float32(float(ref)))
    else:
        assert _relative(value, ref) < 3e-14


@pytest.mark.parametrize("kind", ["numpy", "torch", "dask"])
def test_the_trial_rows_at_an_offset_of_3e5(kind):
    # the trial: a random matrix plus 3e5, normalised (the default): 4.5e-6 relative error
    X = np.random.default_rng(1).normal(size=(30, 16)) + 3e5
    ref = reference(X)
    assert -1e-9 < ref < 0
    assert _relative(_value(kind, X), ref) < 3e-14


@pytest.mark.parametrize("kind", ["numpy", "torch", "dask"])
@pytest.mark.parametrize("normalize", [True, False])
def test_a_tiny_t_gives_minus_t_times_the_mean_squared_distance(kind, normalize):
    # log mean exp(−t d²) = −t mean d² + O(t²): at t = 1e-300 the closed form is exact; before, every potential
    # rounded to 1 and the value read 0.0
    X = np.random.default_rng(2).normal(size=(20, 6))
    rows = _rows(X, normalize)
    with mpmath.workdps(50):
        d2 = [mpmath.fsum((a - b) ** 2 for a, b in zip(rows[i], rows[j]))
              for i in range(len(rows)) for j in range(i + 1, len(rows))]
        expected = -mpmath.mpf(1e-300) * mpmath.fsum(d2) / len(d2)
    assert _relative(_value(kind, X, t=1e-300, normalize=normalize), expected) < 3e-14


@pytest.mark.parametrize("kind", ["numpy", "torch", "dask"])
@pytest.mark.parametrize("sizes", [(12, 8), (14, 6)])
def test_two_tight_clusters_either_side_of_a_mean_potential_of_one_half(kind, sizes):
    # two antipodal clusters 1e-7 wide: pairs within them have potentials just below 1, pairs across exp(−8);
    # (12, 8) has a mean potential of 0.495 (the plain log of the mean), (14, 6) 0.558 (log1p of the mean expm1).
    # On dask the blocks mix the clusters: tiles of different shifts are merged
    rng = np.random.default_rng(3)
    direction = rng.normal(size=5)
    X = np.vstack([direction + 1e-7 * rng.normal(size=(sizes[0], 5)),
                   -direction + 1e-7 * rng.normal(size=(sizes[1], 5))])[rng.permutation(sum(sizes))]
    ref = reference(X)
    assert _relative(_value(kind, X), ref) < 3e-14


@pytest.mark.parametrize("kind", ["numpy", "torch", "dask"])
def test_a_large_t_keeps_the_shift_of_the_closest_pair(kind):
    # the potentials of most pairs underflow float64 (exp(−t·d²) with t·d² past 745): the shift keeps them
    X = np.random.default_rng(4).normal(size=(20, 3))
    ref = reference(X, t=1e4)
    assert _relative(_value(kind, X, t=1e4), ref) < 1e-13  # t·d² ~ 1e3 to 4e4 carries its own rounding


def _sums(v):
    """The four numbers of one block of exponents ``v`` (the kernel's, written out)."""
    v = np.asarray(v, dtype=np.float64)
    top = float(v.max())
    if top == -np.inf:
        return -np.inf, 0.0, 0.0, v.size
    return top, float(np.exp(v - top).sum()), float(np.expm1(v - top).sum()), v.size


@pytest.mark.parametrize("seed", range(4))
def test_merges_in_any_order_give_the_log_mean_exp(seed):
    from isotropy._kernels.sphere import EMPTY_SUM, log_mean_exp, merge_sums

    # exponents just below 0, far below, underflowing (−inf) and between, in blocks merged in random trees
    rng = np.random.default_rng(seed)
    v = np.concatenate([-rng.random(50) * 1e-12, -rng.random(20) * 1e3, [-np.inf] * 5, -rng.random(30) * 3])
    with mpmath.workdps(50):
        finite = [mpmath.mpf(float(x)) for x in v if x > -np.inf]
        expected = mpmath.log(mpmath.fsum(mpmath.exp(x) for x in finite) / v.size)
    for _ in range(5):
        parts = [_sums(p) for p in np.array_split(rng.permutation(v), 9)]
        while len(parts) > 1:
            k = int(rng.integers(len(parts) - 1))
            parts[k:k + 2] = [merge_sums(parts[k], parts[k + 1])]
        assert parts[0][3] == v.size
        assert _relative(log_mean_exp(merge_sums(EMPTY_SUM, parts[0])), expected) < 1e-14
    # a block whose potentials all underflow still counts its pairs (each exp 0)
    merged = merge_sums(_sums([-1e-15, -2e-15]), (-np.inf, 0.0, 0.0, 2))
    assert merged[3] == 4
    with mpmath.workdps(50):
        expected = mpmath.log((mpmath.exp(mpmath.mpf(-1e-15)) + mpmath.exp(mpmath.mpf(-2e-15))) / 4)
    assert _relative(log_mean_exp(merged), expected) < 1e-15


@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("level", [1e-3, 1e-6])
def test_gradients_of_nearly_collapsed_rows_equal_central_differences(normalize, level):
    # central differences of a value exact to 1e-16 relative: steps of level·1e-3 and tolerances of level·1e-9
    # (before, the value's absolute rounding near 1e-16 made the differences 1e-13/level off)
    X = torch.tensor(_collapsed(level, np.float64, n=8, d=4), requires_grad=True)
    assert torch.autograd.gradcheck(lambda u: uniformity(u, normalize=normalize), (X,), eps=level * 1e-3,
                                    atol=level * 1e-9, rtol=1e-6)
