"""Effective rank, RankMe, alignment and uniformity against closed forms and direct implementations of their papers.

References written here from the definitions (not from the library): Roy & Vetterli (2007) and
Garrido et al. (2023) from ``numpy.linalg.svd``; Wang & Isola (2020) as their paper's PyTorch
snippet (``(x - y).norm(dim=1).pow(alpha).mean()`` and ``torch.pdist(x).pow(2).mul(-t).exp().mean().log()``).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import ortho_group

from isotropy import IsotropyValueError
from isotropy.metrics.contrastive import alignment, uniformity
from isotropy.metrics.spectrum import effective_rank, rankme


def _erank_reference(X, epsilon=0.0):
    s = np.linalg.svd(np.asarray(X, dtype=np.float64), compute_uv=False)
    p = s / s.sum() + epsilon
    p = p[p > 0]
    return float(np.exp(-(p * np.log(p)).sum()))


def _normalise(X):
    return X / np.linalg.norm(X, axis=1, keepdims=True)


@pytest.fixture
def rng():
    return np.random.default_rng(7)


# --- effective rank and RankMe ------------------------------------------------------------------------

@pytest.mark.parametrize("k", [1, 2, 5, 17])
def test_effective_rank_of_k_equal_directions_is_k(k):
    X = np.zeros((40, 20))
    X[np.arange(k), np.arange(k)] = 3.0
    assert effective_rank(X) == pytest.approx(k, rel=1e-12)
    assert effective_rank(X, normalize=True) == pytest.approx(k / 20, rel=1e-12)


def test_effective_rank_closed_form_of_two_unequal_directions():
    X = np.diag([3.0, 1.0])
    p = np.array([0.75, 0.25])
    assert effective_rank(X) == pytest.approx(np.exp(-(p * np.log(p)).sum()), rel=1e-13)


def test_effective_rank_and_rankme_equal_the_svd_reference(rng):
    X = rng.normal(size=(300, 24)) * np.geomspace(0.01, 10, 24)
    assert effective_rank(X) == pytest.approx(_erank_reference(X), rel=1e-12)
    assert rankme(X) == pytest.approx(_erank_reference(X, 1e-7), rel=1e-12)
    assert rankme(X, epsilon=0.0) == pytest.approx(effective_rank(X), rel=1e-12)
    centred = X - X.mean(axis=0)
    assert effective_rank(X, center=True) == pytest.approx(_erank_reference(centred), rel=1e-12)


def test_a_normalised_centred_rank_divides_by_n_minus_one():
    """n centred rows span n − 1 dimensions: n points in general position reach a normalised rank of 1."""
    X = np.eye(6)[:5] * 4.0 + 1.0  # 5 rows in 6 dimensions; centred, a regular simplex: 4 equal directions
    assert effective_rank(X, center=True, normalize=True) == pytest.approx(1.0, rel=1e-12)
    assert effective_rank(X, center=True) == pytest.approx(4.0, rel=1e-12)
    # the uncentred rank is bounded by min(n, d) = 5
    assert effective_rank(X, normalize=True) == pytest.approx(effective_rank(X) / 5, rel=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_two_centred_rows_have_rank_one_exactly_and_n_at_most_d_stay_within_their_bound(seed):
    # the last singular value of n <= d centred rows is 0 but for rounding, which made the normalised effective rank
    # of 2 centred rows 1.0000000000000036 (past the documented (0, 1]); the streaming accumulator already set it to 0
    from isotropy import CovarianceAccumulator

    X = np.random.default_rng(seed).normal(size=(6, 8)) * 10.0 ** np.arange(-3, 5)
    for data in (X[:2], torch.tensor(X[:2])):
        assert float(effective_rank(data, center=True, normalize=True)) == 1.0
        assert float(effective_rank(data, center=True)) == 1.0
        assert float(rankme(data, center=True, normalize=True)) <= 1.0
    for n in (3, 6):
        assert effective_rank(X[:n], center=True, normalize=True) <= 1.0
        assert effective_rank(X[:n], center=True) == pytest.approx(
            CovarianceAccumulator().update(X[:n]).effective_rank(center=True), rel=1e-7)


def test_rankme_of_a_collapsed_embedding_is_about_one(rng):
    X = np.outer(rng.normal(size=500), rng.normal(size=32)) + 1e-9 * rng.normal(size=(500, 32))
    assert 1.0 <= rankme(X) < 1.01


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), exponent=st.integers(-300, 300))
def test_ranks_are_invariant_to_scale_and_rotation(seed, exponent):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 8)) * rng.uniform(0.1, 3, size=8)
    Q = ortho_group.rvs(8, random_state=seed)
    for center in (False, True):
        base = effective_rank(X, center=center)
        assert effective_rank(X * 2.0 ** exponent, center=center) == pytest.approx(base, rel=1e-10)
        assert effective_rank(X @ Q, center=center) == pytest.approx(base, rel=1e-9)
    assert rankme(X * 2.0 ** exponent) == pytest.approx(rankme(X), rel=1e-10)


@pytest.mark.parametrize("size", [5, 100, 1000])
def test_normalised_rankme_is_at_most_one_and_one_for_a_flat_spectrum(size, rng):
    """RankMe's ε makes its p sum to 1 + m·ε, so a flat spectrum's RankMe exceeds m: normalised by m it read
    1.0000003 for the identity of size 5 and 1.0029 of size 4000 (a new-user trial). It is normalised by the flat
    spectrum's RankMe, written out here from the paper's formula."""
    from isotropy.metrics.covariance import CovarianceAccumulator

    eps = 1e-7
    flat = np.exp(-size * (1 / size + eps) * np.log(1 / size + eps))
    assert rankme(np.eye(size)) == pytest.approx(flat, rel=1e-12)
    assert rankme(np.eye(size), normalize=True) == pytest.approx(1.0, rel=1e-12)
    assert float(rankme(torch.eye(size, dtype=torch.float64), normalize=True)) == pytest.approx(1.0, rel=1e-12)
    X = rng.normal(size=(3 * size, size)) * np.linspace(0.5, 2.0, size)
    assert rankme(X, normalize=True) == pytest.approx(rankme(X) / flat, rel=1e-12) and rankme(X, normalize=True) < 1
    streamed = CovarianceAccumulator().update(X)
    assert streamed.rankme(normalize=True) == pytest.approx(rankme(X, normalize=True), rel=1e-9)
    assert effective_rank(np.eye(size), normalize=True) == pytest.approx(1.0, rel=1e-12)  # ε = 0: divided by m


def test_ranks_on_torch_are_differentiable_and_on_dask_exact(rng):
    import dask.array as da

    X = rng.normal(size=(400, 12)) * np.linspace(0.2, 2, 12)
    T = torch.tensor(X, requires_grad=True)
    value = rankme(T, center=True)
    value.backward()
    assert float(value) == pytest.approx(rankme(X, center=True), rel=1e-10)
    assert T.grad is not None and torch.isfinite(T.grad).all()
    Xd = da.from_array(X, chunks=(64, -1))
    assert effective_rank(Xd) == pytest.approx(effective_rank(X), rel=1e-10)
    assert rankme(Xd, center=True, normalize=True) == pytest.approx(rankme(X, center=True, normalize=True), rel=1e-10)


@pytest.mark.parametrize(("call", "match"), [
    (lambda: effective_rank(np.zeros((5, 3))), "all zero"),
    (lambda: effective_rank(np.ones((5, 3)), center=True), "all zero"),
    (lambda: rankme(np.eye(3), epsilon=-1), "'epsilon'"),
    (lambda: effective_rank(np.eye(3), normalize="yes"), "'normalize'"),
    (lambda: effective_rank(np.array([[np.nan, 1.0], [1.0, 2.0]])), "finite"),
])
def test_ranks_refuse_bad_input_in_one_line(call, match):
    with pytest.raises((IsotropyValueError, TypeError), match=match) as info:
        call()
    assert "\n" not in str(info.value)


# --- alignment and uniformity -------------------------------------------------------------------------

def test_alignment_and_uniformity_equal_the_papers_code(rng):
    X, Y = rng.normal(size=(257, 16)), rng.normal(size=(257, 16))
    Y = X + 0.3 * Y
    x, y = torch.from_numpy(_normalise(X)), torch.from_numpy(_normalise(Y))
    assert alignment(X, Y) == pytest.approx(float((x - y).norm(dim=1).pow(2).mean()), rel=1e-12)
    assert alignment(X, Y, alpha=1) == pytest.approx(float((x - y).norm(dim=1).pow(1).mean()), rel=1e-12)
    for t in (1.0, 2.0, 10.0):
        reference = float(torch.pdist(x, p=2).pow(2).mul(-t).exp().mean().log())
        assert uniformity(X, t=t) == pytest.approx(reference, rel=1e-12)


def test_uniformity_tiles_cover_every_pair_once(rng, monkeypatch):
    import isotropy.metrics.contrastive as module

    X = rng.normal(size=(53, 5))
    whole = uniformity(X)
    monkeypatch.setattr(module, "_BLOCK_ROWS", 7)
    monkeypatch.setattr(module, "_BLOCK_COLS", 11)
    assert uniformity(X) == pytest.approx(whole, rel=1e-13)
    assert uniformity(X, normalize=False, t=0.1) == pytest.approx(
        float(torch.pdist(torch.from_numpy(X)).pow(2).mul(-0.1).exp().mean().log()), rel=1e-12)


def test_uniformity_closed_forms():
    antipodal = np.array([[1.0, 0.0], [-1.0, 0.0]])
    assert uniformity(antipodal, t=2) == -8.0
    assert uniformity(np.ones((4, 3))) == 0.0   # every pair coincides
    # a large t underflows exp(-t d^2) to 0 for every pair, but not its logarithm
    simplex = np.eye(3)
    assert uniformity(simplex, t=1000) == pytest.approx(-2000.0, rel=1e-12)


def test_alignment_and_uniformity_on_torch_and_dask(rng):
    import dask.array as da

    X, Y = rng.normal(size=(64, 8)), rng.normal(size=(64, 8))
    tx = torch.tensor(X, requires_grad=True)
    (alignment(tx, torch.from_numpy(Y)) + uniformity(tx)).backward()
    assert tx.grad is not None and torch.isfinite(tx.grad).all()
    assert alignment(da.from_array(X, chunks=(16, -1)), da.from_array(Y, chunks=(32, -1))) == pytest.approx(
        alignment(X, Y), rel=1e-12)
    assert uniformity(da.from_array(X, chunks=(16, -1))) == pytest.approx(uniformity(X), rel=1e-12)
    # column chunks: each row projected whole, as in memory; a zero row refused in the in-memory words
    assert alignment(da.from_array(X, chunks=(16, 3)), da.from_array(Y, chunks=(9, 5))) == pytest.approx(
        alignment(X, Y), rel=1e-12)
    Z = X.copy()
    Z[40] = 0.0
    for name, args in (("X", (da.from_array(Z, chunks=(16, 3)), Y)), ("Y", (X, da.from_array(Z, chunks=(16, -1))))):
        with pytest.raises(IsotropyValueError, match=rf"^The '{name}' parameter of alignment has a zero row, which has "
                                                     r"no direction on the sphere"):
            alignment(*args)


@pytest.mark.parametrize("scale", [0.5, 1.0, 3.0, 1e100])
def test_alignment_and_uniformity_gradients_equal_plain_torch(scale):
    """The gradients of a training loss: the papers' formulas in plain torch (F.normalize) as reference. The rows'
    power-of-two rescaling used integer exponents, whose ldexp backward is 0 for a negative exponent, so every row
    with an entry of magnitude 1 or more had a zero gradient (a Python API trial); gradcheck failed."""
    import torch.nn.functional as F

    g = torch.Generator().manual_seed(0)
    X = torch.randn(24, 6, generator=g, dtype=torch.float64) * scale
    X[3] *= 1e-3  # rows of different scales in one batch
    Y = torch.randn(24, 6, generator=g, dtype=torch.float64)
    for ours, plain in ((lambda h: uniformity(h), lambda h: torch.pdist(F.normalize(h), p=2).pow(2).mul(-2).exp()
                         .mean().log()),
                        (lambda h: alignment(h, Y), lambda h: (F.normalize(h) - F.normalize(Y)).norm(dim=1).pow(2)
                         .mean())):
        H = X.clone().requires_grad_()
        (got,) = torch.autograd.grad(ours(H), H)
        (expected,) = torch.autograd.grad(plain(H), H)
        torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12 / scale)
        assert got.abs().max() > 0
    assert torch.autograd.gradcheck(uniformity, (X[:8].clone().requires_grad_(),))


@pytest.mark.parametrize(("call", "match"), [
    (lambda: alignment(np.eye(3), np.eye(4)[:3]), "shape of 'X'"),
    (lambda: alignment(np.eye(3), np.eye(3), alpha=0), "'alpha'"),
    (lambda: uniformity(np.eye(3), t=-1), "'t'"),
    (lambda: uniformity(np.vstack([np.eye(3), np.zeros((1, 3))])), "zero row"),
    (lambda: uniformity(np.eye(3)[:1]), "at least 2 samples"),
])
def test_alignment_and_uniformity_refuse_bad_input_in_one_line(call, match):
    with pytest.raises((IsotropyValueError, TypeError), match=match) as info:
        call()
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("scale", [1e-300, 1e-200, 1e-160, 1e155, 1e300], ids=lambda s: f"{s:.0e}")
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_normalised_alignment_and_uniformity_do_not_depend_on_the_scale(scale, backend):
    # ‖x‖² overflowed above ~1e154 (uniformity 0.0, alignment 0.0) and underflowed to 0 below ~1e-162 (a false
    # "zero row" refusal): each row is now brought to unit scale by a power of two before it is normalised
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 5))
    Y = X + 0.1 * rng.normal(size=X.shape)
    to = (lambda A: A) if backend == "numpy" else torch.from_numpy
    assert float(uniformity(to(X * scale))) == pytest.approx(uniformity(X), rel=1e-12)
    assert float(alignment(to(X * scale), to(Y * scale))) == pytest.approx(alignment(X, Y), rel=1e-12)


def test_normalised_rows_at_unit_scale_are_the_plain_quotient_bit_for_bit():
    from isotropy._kernels.sphere import unit_rows

    X = np.random.default_rng(1).normal(size=(40, 7)) * np.logspace(-3, 3, 40)[:, None]
    assert np.array_equal(unit_rows(X, caller="t"), X / np.linalg.norm(X, axis=1, keepdims=True))
    T = torch.tensor(X, requires_grad=True)
    unit_rows(T, caller="t").sum().backward()  # still differentiable
    assert T.grad is not None and torch.isfinite(T.grad).all()


def test_normalised_torch_rows_of_subnormal_or_float32_extreme_data_keep_their_direction():
    # a row whose largest entry is subnormal needs 2**1029: applied in two halves, never one overflowing factor
    from isotropy._kernels.sphere import unit_rows

    X = np.random.default_rng(2).normal(size=(20, 4))
    expected = X / np.linalg.norm(X, axis=1, keepdims=True)
    np.testing.assert_allclose(unit_rows(torch.tensor(X * 1e-310), caller="t").numpy(), expected, rtol=1e-10)
    tiny = torch.tensor(X * 1e-40, dtype=torch.float32)  # subnormal float32: the direction of the stored values
    stored = tiny.double().numpy()
    np.testing.assert_allclose(unit_rows(tiny, caller="t").numpy(), stored / np.linalg.norm(stored, axis=1,
                                                                                           keepdims=True), rtol=1e-6)


def test_ranks_of_a_dask_array_of_unknown_row_count(rng):
    # a filtered dask array has shape (nan, d): effective_rank raised "cannot convert float NaN to integer" (a review)
    import dask.array as da

    from isotropy import effective_rank, rankme

    X = rng.normal(size=(200, 5)) * np.arange(1, 6)
    lazy = da.from_array(X, chunks=(50, 5))
    kept = lazy[lazy[:, 0] > -10]
    assert np.isnan(kept.shape[0])
    assert effective_rank(kept, center=True) == pytest.approx(effective_rank(X, center=True), rel=1e-10)
    assert rankme(kept, normalize=True) == pytest.approx(rankme(X, normalize=True), rel=1e-10)
    few = lazy[:3][lazy[:3, 0] > -10]  # n = 3 < d = 5 rows, centred: rank 2 at most, its bound reached exactly
    assert effective_rank(few, center=True, normalize=True) == pytest.approx(
        effective_rank(X[:3], center=True, normalize=True), rel=1e-10)


def test_uniformity_of_nearly_collapsed_float32_tensors_is_not_rounded_to_zero():
    # exp(−t·d²) of d² ~ 5e-8 rounded to 1 in float32: the torch value read exactly 0 ("all rows coincide") where
    # numpy reads −9.8e-8 on the same float32 values; the log-sum-exp now runs in float64, the result in float32
    torch = pytest.importorskip("torch")
    X = (torch.randn(256, 16, generator=torch.Generator().manual_seed(0)) + 1e4 * torch.linspace(-1, 1, 16)).float()
    value = uniformity(X)
    assert value.dtype == torch.float32
    assert float(value) == pytest.approx(uniformity(X.numpy()), rel=1e-4)
    assert float(value) < 0


@pytest.mark.parametrize("alpha", [0.5, 1.0, 2.0])
def test_alignment_gradient_is_finite_for_identical_pairs(alpha):
    # for alpha < 1 the norm's 0 times the power's infinite slope gave NaN to both rows of an identical pair; the
    # subgradient 0 is taken there, and elsewhere the gradient is the analytic one (gradcheck)
    torch = pytest.importorskip("torch")
    X = torch.tensor(np.random.default_rng(4).normal(size=(6, 4)), requires_grad=True)
    Y = X.detach().clone()
    Y[3:] += torch.tensor(np.random.default_rng(5).normal(size=(3, 4)))
    value = alignment(X, Y, alpha=alpha, normalize=False)
    value.backward()
    assert float(value) == pytest.approx(alignment(X.detach().numpy(), Y.numpy(), alpha=alpha, normalize=False),
                                         rel=1e-13)
    assert torch.equal(X.grad[:3], torch.zeros(3, 4, dtype=X.dtype))
    assert torch.isfinite(X.grad).all()
    moved = X.detach()[3:].clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda Z: alignment(Z, Y[3:], alpha=alpha, normalize=False), (moved,))


@pytest.mark.parametrize("offset", [0.0, 1e4, 1e6, 1e8])
def test_accumulator_uncentred_spectrum_keeps_its_small_values_far_from_the_origin(offset):
    """Uncentred singular values of rows offset from the origin: the eigenvalues of M + n·μμᵀ rounded the small ones
    relative to n·|μ|² (3.5e-3 off at 1e6, 0 at 1e8: a review); from the singular values of [V·Λ^½, √n·μ] they are
    within 1e-15·σ_max of the SVD of the rows, and the effective rank follows."""
    from isotropy import CovarianceAccumulator

    X = offset + np.random.default_rng(0).normal(size=(1000, 8)) * np.linspace(0.3, 2.0, 8)
    acc = CovarianceAccumulator()
    for chunk in np.array_split(X, 7):
        acc.update(chunk)
    reference = np.linalg.svd(X, compute_uv=False)
    got = acc.singular_values()
    scale = reference[0] / got[0]  # the accumulator's units: a power of two
    np.testing.assert_allclose(got * scale, reference, rtol=0, atol=2e-15 * reference[0])
    assert acc.effective_rank() == pytest.approx(_erank_reference(X), rel=1e-13)
    np.testing.assert_allclose(acc.singular_values(center=True) * scale, np.linalg.svd(X - X.mean(0), compute_uv=False),
                               rtol=1e-10)


@pytest.mark.parametrize("offset", [1e5, 1e7, 1e8])
def test_uniformity_without_normalisation_does_not_depend_on_an_offset(offset):
    """‖x‖² + ‖y‖² − 2x·y of rows far from the origin cancelled: −0.63 for −4.34 at 1e8 (a user trial). Centred
    first: the reference's value (scipy's pdist of the rows without the offset) to the rounding of the offset rows."""
    import dask.array as da
    from scipy.spatial.distance import pdist
    from scipy.special import logsumexp

    X = np.random.default_rng(0).normal(size=(200, 8))
    reference = logsumexp(-0.5 * pdist(X, "sqeuclidean")) - np.log(200 * 199 / 2)
    for data in (X + offset, da.from_array(X + offset, chunks=(64, -1))):
        assert uniformity(data, t=0.5, normalize=False) == pytest.approx(reference, rel=1e-9)


def test_uniformity_beyond_float64s_range_is_refused_in_one_line():
    import dask.array as da

    X = np.random.default_rng(0).normal(size=(50, 4)) * 1e154
    for data in (X, da.from_array(X, chunks=(16, -1))):
        with pytest.raises(IsotropyValueError, match=r"^The 'X' parameter of uniformity has rows whose squared "
                                                     r"distances exceed float64's range .* use normalize=True\.$"):
            uniformity(data, normalize=False)
