"""IsoScore and IsoScore*: closed form vs eigenvalue reference, vs the `isoscore` package, closed forms.

Provenance of the references:
- ``_eigen_reference``: Algorithm 1 of Rudman & Eickhoff / Rudman et al. 2022 written out in float64
  numpy (eigenvalues of the ddof=1 covariance, normalisation, isotropy defect, rescaling).
- The `isoscore` package 2.0.1 (PyPI ``IsoScore``, module ``IsoScore.IsoScore``): ``IsoScore(points)``
  takes points of shape (n_samples, n_features) (it calls ``torch.cov(points.T)``), does no PCA or
  other preprocessing, and takes ``svdvals`` of the covariance; ``IsoScore_star(points, C0, zeta)``
  shrinks that covariance as (1 - zeta)*C + zeta*C0. It computes sqrt(d) in float32, so it only
  agrees to ~1e-7: compared at 1e-6.
- Closed forms from issue 2: covariance diag(1, 0, 0) with Σ_S = I gives diag(1, ζ, ζ):
  ((1 + 2ζ)² / (1 + 2ζ²) - 1) / 2 = 0.407407... at ζ = 0.2 and 0.970588... at ζ = 0.75.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from isotropy import IsotropyValueError, isoscore, isoscore_star
from isotropy.metrics.isoscore import isoscore_from_covariance


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """Tiny tensors: one intra-op thread avoids OpenMP spin contention on a shared CPU (restored after)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def _eigen_reference(X, shrinkage_cov=None, zeta=0.0):
    X = np.asarray(X, dtype=np.float64)
    d = X.shape[1]
    C = np.cov(X, rowvar=False, ddof=1)
    if zeta > 0:
        C = (1 - zeta) * C + zeta * (np.eye(d) if shrinkage_cov is None else shrinkage_cov)
    lam = np.linalg.eigvalsh(C)
    lam_hat = np.sqrt(d) * lam / np.linalg.norm(lam)
    defect = np.linalg.norm(lam_hat - 1) / np.sqrt(2 * (d - np.sqrt(d)))
    return ((d - defect**2 * (d - np.sqrt(d))) ** 2 - d) / (d * (d - 1))


def _anisotropic(rng, n, d):
    return rng.normal(size=(n, d)) @ rng.normal(size=(d, d)) + 3.0


@pytest.mark.parametrize("n, d", [(400, 12), (12, 40), (40, 40), (2, 5), (3, 2)])
def test_closed_form_matches_eigen_reference_float64(rng, n, d):
    X = _anisotropic(rng, n, d)  # n < d exercises the Gram (n x n) side
    assert isoscore(X) == pytest.approx(_eigen_reference(X), abs=1e-10)
    S = np.cov(_anisotropic(rng, 3 * d, d), rowvar=False)
    for zeta in (0.2, 0.75):
        assert isoscore_star(X, shrinkage_cov=S, zeta=zeta) == pytest.approx(
            _eigen_reference(X, S, zeta), abs=1e-10)
        assert isoscore_star(X, zeta=zeta) == pytest.approx(_eigen_reference(X, None, zeta), abs=1e-10)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 30), d=st.integers(2, 30), seed=st.integers(0, 2**16), scale=st.floats(1e-3, 1e3))
def test_closed_form_property(n, d, seed, scale):
    X = _anisotropic(np.random.default_rng(seed), n, d) * scale
    ref = _eigen_reference(X)
    got = isoscore(X)
    assert got == pytest.approx(ref, abs=1e-9)
    assert -1e-12 <= got <= 1 + 1e-12


def test_matches_isoscore_package(rng):
    from IsoScore import IsoScore as pkg

    for n, d in [(1000, 30), (20, 50)]:
        X = _anisotropic(rng, n, d)
        assert isoscore(X) == pytest.approx(float(pkg.IsoScore(X)), abs=1e-6)
        C0 = np.cov(_anisotropic(rng, 200, d), rowvar=False)
        for zeta in (0.0, 0.2, 0.75):
            expected = float(pkg.IsoScore_star(X, torch.tensor(C0), zeta))
            assert isoscore_star(X, shrinkage_cov=C0, zeta=zeta) == pytest.approx(expected, abs=1e-6)


def test_isoscore_star_closed_forms():
    X = np.array([[-1.0, 0, 0], [1.0, 0, 0]]) / np.sqrt(2)  # sample covariance diag(1, 0, 0)
    np.testing.assert_allclose(np.cov(X, rowvar=False), np.diag([1.0, 0, 0]), atol=1e-15)
    assert isoscore_star(X, shrinkage_cov=np.eye(3), zeta=0.2) == pytest.approx(0.407407, abs=1e-6)
    assert isoscore_star(X, shrinkage_cov=np.eye(3), zeta=0.75) == pytest.approx(0.970588, abs=1e-6)
    assert isoscore_star(X, zeta=0.2) == pytest.approx(1.0 / 1.08 * 1.96 / 2 - 0.5, abs=1e-12)  # (1.96/1.08 - 1)/2
    assert isoscore(X) == pytest.approx(0.0, abs=1e-15)
    assert isoscore_from_covariance(np.diag([1.0, 0, 0]), zeta=0.75) == pytest.approx(0.970588, abs=1e-6)
    assert isoscore_star(X, zeta=1.0) == pytest.approx(1.0, abs=1e-15)


def test_zeta_zero_equals_isoscore(rng, backend):
    X = backend(_anisotropic(rng, 50, 8))
    S = np.cov(_anisotropic(rng, 100, 8), rowvar=False)
    assert float(isoscore_star(X, shrinkage_cov=S, zeta=0.0)) == pytest.approx(float(isoscore(X)), abs=1e-12)


def test_isotropic_and_one_direction(rng):
    assert isoscore(rng.normal(size=(200_000, 4))) == pytest.approx(1.0, abs=2e-4)
    line = np.outer(rng.normal(size=100), rng.normal(size=6))
    assert isoscore(line) == pytest.approx(0.0, abs=1e-12)
    # k equal directions out of d: (k - 1) / (d - 1) (Rudman et al.)
    assert isoscore_from_covariance(np.diag([1.0, 1, 1, 0, 0, 0, 0])) == pytest.approx(2 / 6, abs=1e-15)


def test_float32_numpy_computed_in_float64(rng):
    X64 = _anisotropic(rng, 300, 10) + 1e4
    X32 = X64.astype(np.float32)
    assert isoscore(X32) == pytest.approx(_eigen_reference(X32.astype(np.float64)), abs=1e-10)
    assert isinstance(isoscore(X32), float)


def test_torch_backend(rng):
    X = _anisotropic(rng, 60, 7)
    t64 = torch.tensor(X, requires_grad=True)
    out = isoscore(t64)
    assert isinstance(out, torch.Tensor) and out.ndim == 0 and out.dtype == torch.float64
    assert float(out.detach()) == pytest.approx(_eigen_reference(X), abs=1e-10)
    out.backward()
    assert t64.grad is not None and torch.isfinite(t64.grad).all()
    t32 = torch.tensor(X, dtype=torch.float32)
    out32 = isoscore_star(t32, shrinkage_cov=np.eye(7), zeta=0.2)
    assert out32.dtype == torch.float32 and out32.device == t32.device
    assert float(out32) == pytest.approx(_eigen_reference(X, np.eye(7), 0.2), abs=1e-5)
    # float32 with a large offset: centring must not lose the variance
    t_off = torch.tensor(X, dtype=torch.float32) + 1e3
    assert float(isoscore(t_off)) == pytest.approx(_eigen_reference(t_off.double().numpy()), abs=1e-5)


@pytest.mark.parametrize("n, d", [(9, 4), (3, 6)])
def test_gradcheck(rng, n, d):
    X = torch.tensor(_anisotropic(rng, n, d), requires_grad=True)
    S = torch.tensor(np.cov(_anisotropic(rng, 30, d), rowvar=False))
    assert torch.autograd.gradcheck(isoscore, (X,))
    assert torch.autograd.gradcheck(lambda x: isoscore_star(x, shrinkage_cov=S, zeta=0.3), (X,))
    assert torch.autograd.gradcheck(lambda x: isoscore_star(x, zeta=0.3), (X,))


def test_inputs_not_modified(rng, backend):
    X0 = _anisotropic(rng, 20, 5)
    X = backend(X0.copy())
    S0 = np.eye(5) * 2
    S = S0.copy()
    isoscore(X)
    isoscore_star(X, shrinkage_cov=S, zeta=0.5)
    np.testing.assert_array_equal(np.asarray(X), X0)
    np.testing.assert_array_equal(S, S0)


def test_invariances(rng):
    X = _anisotropic(rng, 100, 6)
    Q, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    ref = isoscore(X)
    assert isoscore(X @ Q) == pytest.approx(ref, abs=1e-12)
    assert isoscore(3.7 * X - 11.0) == pytest.approx(ref, abs=1e-12)


def test_zero_variance_is_a_clear_error(backend):
    const = np.full((10, 4), 3.3)
    with pytest.raises(IsotropyValueError, match="non-zero variance"):
        isoscore(backend(const))
    with pytest.raises(IsotropyValueError, match="non-zero variance"):
        isoscore_star(backend(const), zeta=0.0)
    with pytest.raises(IsotropyValueError, match="non-zero variance"):
        isoscore(np.zeros((5, 3)))
    big = torch.full((1000, 4), 12345.678, dtype=torch.float32)
    with pytest.raises(IsotropyValueError, match="non-zero variance"):
        isoscore(big)
    # with the identity as Σ_S too: the shrunk covariance ζ·I is defined, but its score 1.0 would be read as
    # "perfectly isotropic" data (and as the best I-STAR penalty, -1, for a collapsed batch) whatever the rows; with
    # a given Σ_S the score is defined and computed (test_identical_rows_with_a_shrinkage_cov_score_sigma_s)
    import isotropy.torch as isotropy_torch
    from isotropy import CovarianceAccumulator

    for zeta in (0.2, 1.0):
        with pytest.raises(IsotropyValueError, match="^The 'X' parameter of isoscore_star must have non-zero variance"):
            isoscore_star(backend(const), zeta=zeta)
        with pytest.raises(IsotropyValueError, match="^The 'H' parameter of istar_penalty must have non-zero variance"):
            isotropy_torch.istar_penalty(torch.ones(40, 5, dtype=torch.int64), shrinkage_cov=None, zeta=zeta)
        with pytest.raises(IsotropyValueError, match="^The 'cov' parameter of isoscore_from_covariance must be a "
                                                     "non-zero covariance matrix"):
            isoscore_from_covariance(backend(np.zeros((5, 5))), zeta=zeta)
        acc = CovarianceAccumulator().update(const)
        with pytest.raises(IsotropyValueError, match="non-zero variance"):
            acc.isoscore_star(zeta=zeta)


def _isoscore_star_by_algorithm_1(X, S, zeta):
    """IsoScore* of Rudman & Eickhoff's Algorithm 1, step by step in float64: Σ_ζ = (1 − ζ)·Σ_X + ζ·Σ_S, its
    eigenvalues normalised to norm √d, the isotropy defect δ, φ and ι."""
    X = np.asarray(X, dtype=np.float64)
    d = X.shape[1]
    shrunk = (1 - zeta) * np.cov(X, rowvar=False) + zeta * np.asarray(S, dtype=np.float64)
    lam = np.linalg.eigvalsh(shrunk)
    lam_hat = np.sqrt(d) * lam / np.linalg.norm(lam)
    delta = np.linalg.norm(lam_hat - 1) / np.sqrt(2 * (d - np.sqrt(d)))
    phi = (d - delta ** 2 * (d - np.sqrt(d))) ** 2 / d ** 2
    return (d * phi - 1) / (d - 1)


@pytest.mark.parametrize("zeta", [0.2, 1.0])
def test_identical_rows_with_a_shrinkage_cov_score_sigma_s(backend, zeta):
    """Identical rows have Σ_X = 0: with ζ > 0 and a given Σ_S the shrunk covariance ζ·Σ_S is a covariance and
    Algorithm 1 gives a value (the IsoScore of Σ_S), which every path now computes (they refused "identical samples
    ... undefined"), with no gradient to the rows; at ζ = 0 the score stays 0/0 and refused."""
    import isotropy.torch as isotropy_torch
    from isotropy import CovarianceAccumulator

    rng = np.random.default_rng(4)
    S = np.cov(rng.normal(size=(60, 5)) * [3.0, 1.0, 1.0, 0.5, 0.2], rowvar=False)
    const = np.full((12, 5), 3.3)
    expected = _isoscore_star_by_algorithm_1(const, S, zeta)
    assert 0.0 < expected < 1.0
    assert isoscore_star(backend(const), shrinkage_cov=backend(S), zeta=zeta) == pytest.approx(expected, rel=1e-12)
    assert isoscore_star(const[:3], shrinkage_cov=S, zeta=zeta) == pytest.approx(expected, rel=1e-12)  # n < d
    acc = CovarianceAccumulator().update(const[:5]).update(const[5:])
    assert acc.isoscore_star(shrinkage_cov=S, zeta=zeta) == pytest.approx(expected, rel=1e-12)
    assert isoscore_from_covariance(np.zeros((5, 5)), shrinkage_cov=S, zeta=zeta) == pytest.approx(expected, rel=1e-12)
    H = torch.full((12, 5), 3.3, dtype=torch.float64, requires_grad=True)
    penalty = isotropy_torch.istar_penalty(H, shrinkage_cov=torch.tensor(S), zeta=zeta)
    assert float(penalty.detach()) == pytest.approx(-expected, rel=1e-12)
    penalty.backward()
    assert torch.equal(H.grad, torch.zeros_like(H))  # Σ_X = 0 is a minimum of its moments: no gradient
    loss = isotropy_torch.IStarLoss(zeta=zeta, weight=2.0, shrinkage_cov=torch.tensor(S))
    assert float(loss(H.detach())) == pytest.approx(-2.0 * expected, rel=1e-12)
    with pytest.raises(IsotropyValueError, match="^The 'X' parameter of isoscore_star must have non-zero variance"):
        isoscore_star(backend(const), shrinkage_cov=backend(S), zeta=0.0)


def test_bad_input_messages(rng):
    X = rng.normal(size=(10, 3))
    with pytest.raises(IsotropyValueError, match=r"The 'zeta' parameter of isoscore_star must be a float in the range \[0.0, 1.0\]. Got 1.5 instead."):
        isoscore_star(X, zeta=1.5)
    with pytest.raises(IsotropyValueError, match=r"'shrinkage_cov' parameter of isoscore_star .* shape \(3, 3\)"):
        isoscore_star(X, shrinkage_cov=np.eye(4))
    with pytest.raises(IsotropyValueError, match="symmetric"):
        isoscore_star(X, shrinkage_cov=np.triu(np.ones((3, 3))))
    with pytest.raises(IsotropyValueError, match="2-d array"):
        isoscore(np.ones(5))
    with pytest.raises(IsotropyValueError, match="at least 2 features"):
        isoscore(rng.normal(size=(10, 1)))
    with pytest.raises(IsotropyValueError, match="finite"):
        isoscore(np.array([[1.0, np.nan], [0.0, 1.0]]))
    with pytest.raises(IsotropyValueError, match="'cov' parameter of isoscore_from_covariance"):
        isoscore_from_covariance(np.ones((2, 3)))


def test_float32_rounding_asymmetry_of_shrinkage_cov_is_tolerated(rng):
    X = rng.normal(size=(30, 6))
    S = np.cov(rng.normal(size=(100, 6)), rowvar=False)
    S_noisy = S.copy()
    S_noisy[0, 1] *= 1 + 1e-7  # float32-level asymmetry: accepted and symmetrised
    expected = _eigen_reference(X, (S_noisy + S_noisy.T) / 2, 0.4)
    assert isoscore_star(X, shrinkage_cov=S_noisy, zeta=0.4) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("module", ["isoscore", "cosine", "partition", "covariance", "torch"])
def test_docstring_examples_run(module):
    import doctest
    import importlib

    name = "isotropy.torch" if module == "torch" else f"isotropy.metrics.{module}"
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_chunked_float64_path_matches_reference(rng, monkeypatch):
    import importlib

    monkeypatch.setattr(importlib.import_module("isotropy._kernels.rows"), "_CHUNK_ELEMENTS", 50)  # 5 rows of 10 per chunk
    X = (_anisotropic(rng, 203, 10) + 1e4).astype(np.float32)
    X_before = X.copy()
    ref = _eigen_reference(X.astype(np.float64))
    assert isoscore(X) == pytest.approx(ref, abs=1e-10)
    S = np.cov(_anisotropic(rng, 50, 10), rowvar=False)
    assert isoscore_star(X, shrinkage_cov=S, zeta=0.3) == pytest.approx(
        _eigen_reference(X.astype(np.float64), S, 0.3), abs=1e-10)
    np.testing.assert_array_equal(X, X_before)
    with pytest.raises(IsotropyValueError, match="non-zero variance"):
        isoscore(np.full((1001, 10), 7.77, dtype=np.float32))


def test_half_precision_tensors_are_scored_in_float32():
    # float16 second moments overflow; the boundary upcasts half tensors (the reference is float64 numpy)
    X = np.random.default_rng(3).standard_normal((100, 10)) * 30
    expected = isoscore(X)
    value = isoscore(torch.tensor(X, dtype=torch.float16))
    assert value.dtype == torch.float32
    assert abs(float(value) - expected) < 1e-3


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["isoscore", "isoscore_star", "participation_ratio", "partition_isotropy",
                                  "cosine_similarity_mean", "inter_type_cosine", "intra_type_cosine"])
def test_half_precision_gives_float32_on_the_device_as_docs_api_isotropy_says(name, half):
    """docs/api/isotropy.md: torch in gives a tensor on the input's device and dtype, float32 for half precision."""
    import isotropy

    X = torch.tensor(np.random.default_rng(4).standard_normal((60, 5)), dtype=getattr(torch, half))
    labels = np.arange(60) % 3
    value = getattr(isotropy, name)(*((X, labels) if name.endswith("type_cosine") else (X,)))
    assert isinstance(value, torch.Tensor) and value.dtype == torch.float32 and value.device == X.device


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int64"])
def test_isoscore_from_covariance_scores_half_and_integer_tensors_in_float32(dtype):
    # a float16 covariance with entries near 160 gave inf (‖Σ‖²_F overflows) and bfloat16 a 1% error (its sums
    # rounded to 3 digits); X of these dtypes was already computed in float32
    X = np.random.default_rng(5).standard_normal((30, 5))
    C = torch.tensor(np.round(X.T @ X)).to(getattr(torch, dtype))
    value = isoscore_from_covariance(C)
    assert value.dtype == torch.float32
    assert float(value) == pytest.approx(isoscore_from_covariance(C.double().numpy()), rel=1e-6)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_rows_a_few_ulps_apart_are_scored_and_identical_rows_refused(backend):
    # rows 10 to 92 ulps apart at an offset of 1e8 were refused as "200 (numerically) identical samples"; their
    # differences are exact (Sterbenz), so their IsoScore is that of the data less its first row
    from isotropy import participation_ratio

    wrap = torch.tensor if backend == "torch" else np.asarray
    N = np.random.default_rng(0).normal(size=(200, 4))
    X = 1e8 + 1e-7 * N
    assert len({tuple(row) for row in X}) == 200
    assert float(isoscore(wrap(X))) == pytest.approx(isoscore(X - X[0]), rel=1e-12)
    assert float(participation_ratio(wrap(X))) == pytest.approx(participation_ratio(X - X[0]), rel=1e-12)
    for constant in (np.tile(X[:1], (30, 1)), np.full((3, 4), 1 / 3)):
        with pytest.raises(IsotropyValueError, match="must have non-zero variance"):
            isoscore(wrap(constant))


def test_the_accumulator_scores_rows_a_few_ulps_apart_and_refuses_identical_ones():
    # streamed, the rows are gone: rows a few ulps apart were refused, below the floor of their rounded mean; identical
    # rows now sum to an exact 0 (their shift is their own row), also merged from several chunks
    from isotropy import CovarianceAccumulator

    X = 1e8 + 1e-7 * np.random.default_rng(0).normal(size=(200, 4))
    acc = CovarianceAccumulator()
    for rows in np.array_split(np.arange(200), 4):
        acc.update(X[rows])
    assert acc.isoscore() == pytest.approx(isoscore(X - X[0]), rel=1e-10)
    same = CovarianceAccumulator()
    for _ in range(3):
        same.update(np.tile(X[:1], (7, 1)))
    assert same.covariance().max() == 0.0
    with pytest.raises(IsotropyValueError, match=r"Got 21 \(numerically\) identical samples instead, whose covariance "
                                                 r"is zero"):
        same.isoscore()


def test_isoscore_from_covariance_rejects_indefinite_matrices():
    with pytest.raises(IsotropyValueError, match="'cov' parameter of isoscore_from_covariance must be positive semi"):
        isoscore_from_covariance(np.diag([1.0, 1.0, -0.9]))


@pytest.mark.parametrize("scale", [1e-300, 1e-200, 1e200, 1e300], ids=lambda s: f"{s:.0e}")
def test_isoscore_from_covariance_does_not_depend_on_the_scale(scale):
    # ‖Σ‖²_F overflowed (1e200) or underflowed (1e-300) and the score was NaN; IsoScore* mixes with a Σ_S of the
    # same scale, so it does not move either
    from isotropy.metrics.isoscore import isoscore_from_covariance

    rng = np.random.default_rng(0)
    C = np.cov(rng.normal(size=(200, 6)) * np.linspace(0.3, 2.0, 6), rowvar=False)
    assert isoscore_from_covariance(C * scale) == pytest.approx(isoscore_from_covariance(C), rel=1e-12)
    star = isoscore_from_covariance(C, zeta=0.3, shrinkage_cov=np.eye(6))
    assert isoscore_from_covariance(C * scale, zeta=0.3, shrinkage_cov=np.eye(6) * scale) == pytest.approx(star,
                                                                                                           rel=1e-12)


@pytest.mark.parametrize("S, message", [(-np.eye(4), "positive semi-definite .* smallest eigenvalue of -1 "),
                                        (np.diag([1.0, 1.0, 1.0, -0.5]), "smallest eigenvalue of -0.5 "),
                                        (np.zeros((4, 4)), r"non-zero covariance matrix \(positive trace\)\. Got the zero")])
def test_isoscore_from_covariance_refuses_a_shrinkage_cov_that_is_not_a_covariance(S, message):
    # Σ_S = −I gave 1.0 silently, where isoscore_star refuses it
    with pytest.raises(IsotropyValueError, match=rf"^The 'shrinkage_cov' parameter of isoscore_from_covariance must "
                                                 rf"be .*{message}"):
        isoscore_from_covariance(np.eye(4), shrinkage_cov=S, zeta=0.3)


def test_isoscore_of_rank_one_data_streamed_is_not_negative():
    # rank-1 rows streamed through the accumulator read -7.4e-17 (the rounding of (tr C)²/‖C‖²_F just below 1); the
    # score is clamped to [0, 1], and a torch value keeps the gradient of the unclamped ratio
    from isotropy import CovarianceAccumulator

    r = np.random.default_rng(0).normal(size=(1, 4)) * 1e8 + 0.3
    X = np.vstack([np.tile(r, (3, 1)), np.tile(np.nextafter(r, r + 1), (3, 1))])
    assert CovarianceAccumulator().update(X[:3]).update(X[3:]).isoscore() == 0.0
    line = torch.tensor(np.outer(np.arange(6.0), [1.0, 2.0, -1.0]), requires_grad=True)
    value = isoscore(line)
    value.backward()
    assert float(value) == pytest.approx(0.0, abs=1e-15) and torch.isfinite(line.grad).all()
    assert float(line.grad.abs().max()) > 0  # off the line the score rises


_BAD_SHRINKAGE = [
    (np.diag([1.0, -1.0, 0.5]), "positive semi-definite.*smallest eigenvalue of -1"),  # clamped to a score of 0
    (np.eye(7), r"shape \(3, 3\)"),
    (np.full((3, 3), np.nan), "finite"),
    ("abc", r"shape \(3, 3\).*of real numbers. Got 'abc'"),
    # its imaginary parts were dropped; refused as a complex X is (a TypeError that is an IsotropyValueError too)
    (np.eye(3) * (1 + 1j), r"must be a real-valued matrix\. Got dtype (torch\.)?complex128 instead\.$"),
]


@pytest.mark.parametrize("zeta", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("S, message", _BAD_SHRINKAGE)
def test_every_entry_point_refuses_the_same_bad_shrinkage_cov_whatever_zeta(rng, S, message, zeta):
    """The values trial: isoscore_star and istar_penalty took diag(1, −1, 0.5) and returned 0.0 and −0.632 (the
    ratio below 1 clamped), where isoscore_from_covariance, IStarLoss and the accumulator refused it; and with
    ζ = 0 a Σ_S of the wrong shape, NaN or a string passed unchecked (a ζ schedule would have met it later). Every
    entry point now refuses each, naming itself (the accumulator named isoscore_from_covariance and an 'X')."""
    from isotropy import CovarianceAccumulator
    from isotropy.torch import istar_penalty

    X = rng.normal(size=(50, 3))
    H = torch.tensor(X)
    S_torch = torch.tensor(S) if isinstance(S, np.ndarray) else S
    calls = {
        "isoscore_star": lambda: isoscore_star(X, shrinkage_cov=S, zeta=zeta),
        "istar_penalty": lambda: istar_penalty(H, shrinkage_cov=S_torch, zeta=zeta),
        "isoscore_from_covariance": lambda: isoscore_from_covariance(np.cov(X.T), shrinkage_cov=S, zeta=zeta),
        "CovarianceAccumulator.isoscore_star":
            lambda: CovarianceAccumulator().update(X).isoscore_star(shrinkage_cov=S, zeta=zeta),
    }
    for caller, call in calls.items():
        with pytest.raises(IsotropyValueError) as info:
            call()
        text = str(info.value)
        assert f"'shrinkage_cov' parameter of {caller} must" in text and "\n" not in text, text
        assert __import__("re").search(message, text), text
        if "shape" in message and caller == "CovarianceAccumulator.isoscore_star":
            assert "n_features of the rows seen" in text, text


def test_a_shrinkage_cov_at_the_rounding_of_float32_is_still_taken(rng):
    """The PSD check (a Cholesky factorisation with a shift of d·eps(float32)·‖Σ_S‖_F) still takes the covariance of
    a float32 batch of fewer rows than features, whose smallest eigenvalues are rounding below 0, and the zero
    matrix with ζ = 0 (where Σ_S is not used)."""
    H = torch.tensor(rng.normal(size=(20, 64)), dtype=torch.float32)
    S = torch.cov(H.T)
    assert float(torch.linalg.eigvalsh(S.double()).min()) < 0  # the case the tolerance is for
    X = rng.normal(size=(40, 64))
    expected = _eigen_reference(X, S.double().numpy(), zeta=0.3)
    assert isoscore_star(X, shrinkage_cov=S.double().numpy(), zeta=0.3) == pytest.approx(expected, abs=1e-9)
    assert isoscore_star(X[:, :3], shrinkage_cov=np.zeros((3, 3)), zeta=0.0) == pytest.approx(isoscore(X[:, :3]),
                                                                                              abs=1e-15)


def test_a_training_loops_shrinkage_cov_is_factored_once_until_it_changes(rng, monkeypatch):
    """istar_penalty checks Σ_S at every call, but a loop passes the same tensor at every step: it is factored once,
    again after an in-place change (its version counter), and a new tensor is factored anew."""
    from isotropy.torch import istar_penalty

    calls = []
    factor = torch.linalg.cholesky_ex
    monkeypatch.setattr(torch.linalg, "cholesky_ex", lambda A: calls.append(1) or factor(A))
    S = torch.cov(torch.tensor(rng.normal(size=(40, 5))).T)
    H = torch.tensor(rng.normal(size=(8, 5)))
    values = [float(istar_penalty(H, shrinkage_cov=S, zeta=0.3)) for _ in range(5)]
    assert len(calls) == 1 and len(set(values)) == 1
    S.mul_(2)
    istar_penalty(H, shrinkage_cov=S, zeta=0.3)
    assert len(calls) == 2
    S[0, 0] = -50.0  # in place: found, not taken from the record of the earlier check
    with pytest.raises(IsotropyValueError, match="positive semi-definite"):
        istar_penalty(H, shrinkage_cov=S, zeta=0.3)
    istar_penalty(H, shrinkage_cov=S.abs() * 0 + torch.eye(5, dtype=S.dtype), zeta=0.3)
    assert len(calls) == 4


@pytest.mark.parametrize("write", ["data", "numpy", "inference"])
def test_the_shrinkage_cov_record_follows_its_values_not_its_version(rng, write):
    """A review: the record of a checked Σ_S read its version counter, which writes through .data or through shared
    numpy memory do not move (diag(1, 1, −0.5) then gave −0.330 instead of a refusal), and which inference tensors
    lack (torch.inference_mode(): a raw RuntimeError). The record keeps the values."""
    from isotropy.torch import istar_penalty

    H = torch.tensor(rng.normal(size=(8, 3)))
    if write == "inference":
        with torch.inference_mode():
            S = torch.eye(3, dtype=torch.float64)
            first = istar_penalty(H, shrinkage_cov=S, zeta=0.5)
            S[2, 2] = -0.5
            with pytest.raises(IsotropyValueError, match="positive semi-definite"):
                istar_penalty(H, shrinkage_cov=S, zeta=0.5)
        assert float(first) < 0
        return
    values = np.eye(3)
    S = torch.from_numpy(values) if write == "numpy" else torch.eye(3, dtype=torch.float64)
    istar_penalty(H, shrinkage_cov=S, zeta=0.5)
    if write == "numpy":
        values[2, 2] = -0.5
    else:
        S.data[2, 2] = -0.5
    with pytest.raises(IsotropyValueError, match="positive semi-definite"):
        istar_penalty(H, shrinkage_cov=S, zeta=0.5)


def test_zeta_takes_a_0d_real_tensor_or_array_as_the_regularisers_do(rng):
    """IStarLoss and HiddenStateRegulariser took ``zeta=torch.tensor(0.25)`` (a ζ schedule's value), while
    isoscore_star raised TypeError "must be a float ... Got tensor(0.2500)": now every ζ reads a 0-d real tensor or
    array once as a float, range-checked in the same words. Reference: the `isoscore` package's IsoScore_star at the
    float ζ (agrees to 1e-6, see the module docstring), and the function at the float ζ (exactly). (The dask path:
    tests/test_distributed.py, whose package the core install of the minimum-versions job lacks.)"""
    from IsoScore import IsoScore as pkg

    from isotropy import CovarianceAccumulator
    from isotropy.torch import istar_penalty

    X = _anisotropic(rng, 40, 6)
    S = np.cov(_anisotropic(rng, 200, 6), rowvar=False)
    schedule = torch.linspace(0.0, 1.0, 5)  # float32: 0.25 and 0.5 are exact
    for zeta, plain in ((schedule[1], 0.25), (torch.tensor(0.5, dtype=torch.float64), 0.5), (np.array(0.75), 0.75),
                        (torch.tensor(1), 1.0), (np.float32(0.25), 0.25)):
        expected = isoscore_star(X, shrinkage_cov=S, zeta=plain)
        assert expected == pytest.approx(float(pkg.IsoScore_star(X, torch.tensor(S), plain)), abs=1e-6)
        assert isoscore_star(X, shrinkage_cov=S, zeta=zeta) == expected
        assert CovarianceAccumulator().update(X).isoscore_star(shrinkage_cov=S, zeta=zeta) == pytest.approx(
            expected, rel=1e-12)
        assert isoscore_from_covariance(np.cov(X, rowvar=False), shrinkage_cov=S, zeta=zeta) == pytest.approx(
            expected, rel=1e-12)
        H = torch.tensor(X)
        assert float(isoscore_star(H, shrinkage_cov=torch.tensor(S), zeta=zeta)) == pytest.approx(expected, rel=1e-12)
        assert float(istar_penalty(H, shrinkage_cov=torch.tensor(S), zeta=zeta)) == pytest.approx(-expected, rel=1e-12)
    from _zeta_cases import zeta_refusals

    cases = zeta_refusals("isoscore_star")
    for zeta, error, message in cases:
        for data in (X, torch.tensor(X)):
            with pytest.raises(error) as info:
                isoscore_star(data, shrinkage_cov=S, zeta=zeta)
            assert str(info.value) == message


@pytest.mark.parametrize("as_tensor", [False, True])
def test_a_non_finite_shrinkage_cov_entry_is_named_where_it_is(as_tensor):
    """A NaN or inf in Σ_S is refused naming its row, column and value, as one in X is (it said "NaN or inf")."""
    S = np.eye(3)
    S[1, 2] = np.nan
    X = np.random.default_rng(0).standard_normal((10, 3))
    if as_tensor:
        S, X = torch.from_numpy(S), torch.from_numpy(X)
    with pytest.raises(IsotropyValueError) as info:
        isoscore_star(X, shrinkage_cov=S)
    assert str(info.value) == ("The 'shrinkage_cov' parameter of isoscore_star must contain only finite values. "
                               "Got nan at row 1, column 2 instead.")


@settings(max_examples=30, deadline=None)
@given(n=st.integers(3, 30), extra=st.integers(0, 40), seed=st.integers(0, 2**16))
def test_rows_no_more_than_features_cap_isoscore_at_the_bound_the_measure_warning_gives(n, extra, seed):
    """n <= d centred rows span n - 1 dimensions: IsoScore <= (n - 2)/(d - 1) and PR <= n - 1 for any rows, with
    equality for the n vertices of a regular simplex (the rows of an n x d identity), the bound `isotropy measure`
    states (span_bound_warning); with more rows than features it says nothing."""
    from isotropy import participation_ratio
    from isotropy.metrics.table import span_bound_warning

    d = n + extra
    simplex = np.eye(n, d)
    assert isoscore(simplex) == pytest.approx((n - 2) / (d - 1), abs=1e-12)
    assert participation_ratio(simplex) == pytest.approx(n - 1, rel=1e-12)
    X = np.random.default_rng(seed).normal(size=(n, d)) * np.linspace(0.5, 2.0, d)
    assert isoscore(X) <= (n - 2) / (d - 1) + 1e-12
    assert participation_ratio(X) <= n - 1 + 1e-9
    assert f"so the value is at most {(n - 2) / (d - 1):.3g} on any" in span_bound_warning("isoscore", n, d)
    assert f"so the value is at most {n - 1} on any" in span_bound_warning("participation_ratio", n, d)
    assert span_bound_warning("isoscore", d + 1, d) is None
    assert span_bound_warning("twonn_dimension", n, d) is None
