"""effective_rank and rankme agree on numpy, torch and dask, and with an independent reference (a user's trial).

Three defects, each on some backends only:

- identical rows with ``center=True``: numpy and dask gave an effective rank of 1.0 for rows of
  ``[0.1, 0.2, 0.3, 0.7]`` (the rank of the rounding noise an inexact column mean left), where torch refused, and
  every backend refused rows of ``[1, 2, 3, 4]``; now refused alike, as isoscore refuses identical samples;
- rounding past the documented ranges: ``effective_rank(np.eye(5))`` was 5.000000000000001 (1.0000000000000002
  normalised), past ``[1, min(n, d)]`` and ``(0, 1]``; now clipped, as the participation ratio is;
- a large common offset: numpy's single-pass column mean put the centred rank of rows at an offset of 1e8 at 5.81
  (torch 5.0367, dask 5.0451) where the data's is 5.0350; now centred as the covariance metrics centre.

The reference is numpy's float64 SVD of the rows less their exact mean, in two parts (``math.fsum``, then the
``fsum`` mean of what that leaves): one rounded ``fsum`` mean alone leaves a residual up to 2e-8 per column at an
offset of 1e8, which moves the reference itself (5.0359 for 5.0350).
"""

import math

import numpy as np
import pytest

import isotropy as iso
from isotropy import IsotropyValueError
from isotropy.metrics import spectrum

torch = pytest.importorskip("torch")
dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")


@pytest.fixture(autouse=True)
def _threads():
    with dask.config.set(scheduler="threads"):
        yield


def _fsum_centred(X):
    """``X`` less its column means, the mean exact to float64 in two parts (independent of the package)."""
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    high = np.array([math.fsum(column) / n for column in X.T])
    D = X - high
    return D - np.array([math.fsum(column) / n for column in D.T])


def _reference(X, *, center, epsilon=0.0):
    """exp(−Σ p log p), p = σ/Σσ + ε, of numpy's float64 SVD (of the fsum-centred rows with ``center``)."""
    s = np.linalg.svd(_fsum_centred(X) if center else np.asarray(X, dtype=np.float64), compute_uv=False)
    if center and X.shape[0] <= X.shape[1]:
        s[X.shape[0] - 1:] = 0.0
    p = s / s.sum() + epsilon
    p = p[p > 0]
    return float(np.exp(-np.sum(p * np.log(p))))


def _backends(X, chunks):
    """``X`` on each backend: numpy, torch (CPU, float64) and dask (known and unknown chunk sizes)."""
    D = da.from_array(X, chunks=(chunks, -1))
    keep = da.from_array(np.ones(X.shape[0], dtype=bool), chunks=chunks)
    return {"numpy": X, "torch": torch.tensor(X), "dask": D, "dask, unknown chunks": D[keep]}


def _value(rank):
    return float(rank.detach()) if torch.is_tensor(rank) else rank


RANKS = {"effective_rank": iso.effective_rank, "rankme": iso.rankme}


# 1. Identical rows -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("row", [[1.0, 2.0, 3.0, 4.0], [0.1, 0.2, 0.3, 0.7], [1e8 + 0.1, -3.3, 1e-5, 7.0]])
@pytest.mark.parametrize("name", RANKS)
def test_identical_rows_are_refused_on_every_backend(name, row):
    X = np.tile(row, (50, 1))
    assert np.ptp(_fsum_centred(X)) == 0.0  # (the reference: nothing is left of them)
    for backend, A in _backends(X, 10).items():
        for normalize in (False, True):
            with pytest.raises(IsotropyValueError, match=rf"^The 'X' parameter of {name} must not be all zero"):
                RANKS[name](A, center=True, normalize=normalize)
                pytest.fail(f"{backend} gave a value")  # (not reached when refused)
    accumulator = iso.CovarianceAccumulator().update(X)
    with pytest.raises(IsotropyValueError, match="must not be all zero"):
        getattr(accumulator, name)(center=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_identical_rows_are_refused_through_the_chunked_numpy_path_too(monkeypatch, dtype):
    monkeypatch.setattr(spectrum, "_QR_ELEMENTS", 4 * 8)  # 8 rows a chunk: several chunks
    X = np.tile(np.array([0.1, 0.2, 0.3, 0.7], dtype=dtype), (50, 1))
    for rank in RANKS.values():
        with pytest.raises(IsotropyValueError, match="must not be all zero"):
            rank(X, center=True)
        with pytest.raises(IsotropyValueError, match="must not be all zero"):
            rank(torch.tensor(X), center=True)


def test_rows_a_few_ulps_apart_are_a_value_on_every_backend_as_for_isoscore():
    # not identical: their differences are exact (Sterbenz), their spread a value (isoscore scores them too)
    base = np.array([1e8, 2e8, 3e8, 0.7])
    X = base + np.spacing(base) * np.random.default_rng(3).integers(0, 4, size=(60, 4))
    expected = _reference(X, center=True)
    assert 1.0 < expected < 4.0
    iso.isoscore(X)  # not refused
    for backend, A in _backends(X, 16).items():
        assert _value(iso.effective_rank(A, center=True)) == pytest.approx(expected, rel=1e-12), backend


# 2. The documented ranges ------------------------------------------------------------------------------------------


def _flat(k, seed):
    """A k x k orthogonal matrix (every singular value 1 but for rounding), at an awkward scale."""
    return np.linalg.qr(np.random.default_rng(seed).normal(size=(k, k)))[0] * 3.7


@pytest.mark.parametrize("k", [2, 3, 5, 7, 12, 33])
def test_the_ranks_stay_in_their_ranges_on_every_backend(k):
    for X in (np.eye(k), _flat(k, k)):
        for backend, A in _backends(X, max(1, k // 2)).items():
            erank = _value(iso.effective_rank(A))
            assert 1.0 <= erank <= k and erank == pytest.approx(_reference(X, center=False), rel=1e-13), backend
            normalised = _value(iso.effective_rank(A, normalize=True))
            assert 0.0 < normalised <= 1.0 and normalised == pytest.approx(1.0, rel=1e-13), backend
            for center in (False, True):
                assert 0.0 < _value(iso.rankme(A, center=center, normalize=True)) <= 1.0, backend
                assert _value(iso.effective_rank(A, center=center, normalize=True)) <= 1.0, backend
        accumulator = iso.CovarianceAccumulator().update(X)
        assert 1.0 <= accumulator.effective_rank() <= k
        assert 0.0 < accumulator.effective_rank(normalize=True) <= 1.0
        assert 0.0 < accumulator.rankme(normalize=True) <= 1.0


def test_the_identity_of_size_5_is_rank_5_not_past_it():
    # the user's case: 5.000000000000001 and 1.0000000000000002 on every backend and the accumulator.
    # Closed forms for five equal singular values: effective rank exp(log 5) = 5 exactly; RankMe with
    # p = 1/5 + eps is exp(-5 p log p), slightly above 5, so its normalised value is clipped to 1.
    # (The upper bounds alone passed a rank that collapsed to 1.)
    p = 0.2 + 1e-7
    rankme_5 = math.exp(-5 * p * math.log(p))
    accumulator = iso.CovarianceAccumulator().update(np.eye(5))
    for backend, A in {**_backends(np.eye(5), 2), "float32 tensor": torch.eye(5)}.items():
        rel = 1e-6 if backend == "float32 tensor" else 1e-14
        rank = _value(iso.effective_rank(A))
        assert rank <= 5.0 and rank == pytest.approx(5.0, rel=rel), backend
        normalised = _value(iso.effective_rank(A, normalize=True))
        assert normalised <= 1.0 and normalised == pytest.approx(1.0, rel=rel), backend
        assert _value(iso.rankme(A)) == pytest.approx(rankme_5, rel=rel), backend
        assert _value(iso.rankme(A, normalize=True)) == 1.0, backend
    assert accumulator.effective_rank() <= 5.0 and accumulator.effective_rank(normalize=True) <= 1.0
    assert accumulator.effective_rank() == pytest.approx(5.0, rel=1e-14)
    assert accumulator.effective_rank(normalize=True) == pytest.approx(1.0, rel=1e-14)
    assert accumulator.rankme() == pytest.approx(rankme_5, rel=1e-14) and accumulator.rankme(normalize=True) == 1.0


def test_rank_one_data_is_rank_one_not_below_it():
    rng = np.random.default_rng(5)
    for seed in range(20):
        u, v = np.random.default_rng(seed).normal(size=(2, 30))
        X = np.outer(u, v[:7]) * rng.uniform(0.1, 10)
        for backend, A in _backends(X, 10).items():
            assert 1.0 <= _value(iso.effective_rank(A)) <= 1.0 + 1e-6, backend


def test_a_clipped_torch_rank_keeps_its_dtype_and_gradient():
    X = torch.eye(5, dtype=torch.float64, requires_grad=True)
    rank = iso.effective_rank(X, normalize=True)
    assert rank.dtype == torch.float64 and float(rank.detach()) <= 1.0
    rank.backward()
    assert X.grad is not None and bool(torch.isfinite(X.grad).all())
    assert iso.effective_rank(torch.eye(5)).dtype == torch.float32


# 3. A large common offset ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def offset_rows():
    """The user's rows: a spectrum over 15 decades at 1e-3, at an offset of 1e8 (tall: the numpy path's QR chunks)."""
    rng = np.random.default_rng(14)
    n, d = 40000, 64
    Q = np.linalg.qr(rng.normal(size=(d, d)))[0]
    return (rng.normal(size=(n, d)) * np.logspace(0, -15, d) @ Q) * 1e-3 + 1e8 * rng.normal(size=d)


@pytest.mark.parametrize("name", RANKS)
def test_a_large_offset_costs_no_precision_on_any_backend(offset_rows, name):
    # before: numpy 5.8145 (15 % off), torch 5.0367, dask 5.0451 for the reference 5.0350
    X = offset_rows
    centred = _fsum_centred(X)
    s = np.linalg.svd(centred, compute_uv=False)
    epsilon = 1e-7 if name == "rankme" else 0.0
    p = s / s.sum() + epsilon
    flat = 1.0 / len(s) + epsilon  # normalised by the rank of a flat spectrum of min(n − 1, d) = 64 values
    for normalize in (False, True):
        expected = float(np.exp(-np.sum(p * np.log(p))))
        if normalize:
            expected /= float(np.exp(-len(s) * flat * np.log(flat)))
        for backend, A in {"numpy": X, "torch": torch.tensor(X), "dask": da.from_array(X, chunks=(5000, -1))}.items():
            got = _value(RANKS[name](A, center=True, normalize=normalize))
            assert got == pytest.approx(expected, rel=1e-10), backend


@pytest.mark.parametrize(("dtype", "offset"), [(np.float32, 3e4), (np.float64, 1e8)])
def test_a_large_offset_in_one_chunk_and_in_float32(monkeypatch, dtype, offset):
    # the one-chunk numpy path (one SVD of a float64 copy) centres as the chunked one; float64 rows at 1e8 were 7e-10
    # off there (float32 rows were exact: their float64 sums are)
    rng = np.random.default_rng(2)
    X = ((rng.normal(size=(3000, 12)) * np.logspace(0, -4, 12)) + offset * rng.normal(size=12)).astype(dtype)
    expected = _reference(X, center=True)
    one = iso.effective_rank(X, center=True)
    monkeypatch.setattr(spectrum, "_QR_ELEMENTS", 12 * 100)
    chunked = iso.effective_rank(X, center=True)
    lazy = iso.effective_rank(da.from_array(X, chunks=(700, -1)), center=True)
    tensor = float(iso.effective_rank(torch.tensor(X, dtype=torch.float64), center=True))
    for backend, got in {"numpy": one, "numpy chunked": chunked, "dask": lazy, "torch": tensor}.items():
        assert got == pytest.approx(expected, rel=1e-12), backend


# 4. Memory of the torch centring -----------------------------------------------------------------------------------


def _most_copies_alive(function, X):
    """The most tensors of ``X``'s shape made by ``function(X)`` that were alive at once (by storage), and its value.

    Every op's outputs are watched through a TorchDispatchMode (weak references: a tensor freed is no longer counted).
    Left out: views of ``X`` itself (its storage), and the SVD's factors and their aliases (LAPACK's, saved for the
    backward, or computed under the mode even without a gradient): not copies of ``X`` made by the package."""
    import weakref

    from torch.utils._python_dispatch import TorchDispatchMode

    def storage(t):
        return t.untyped_storage().data_ptr()

    class Watch(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.most, self.made, self.left_out = 0, [], {storage(X)}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in out if isinstance(out, (tuple, list)) else (out,):
                if isinstance(t, torch.Tensor) and t.is_floating_point() and tuple(t.shape) == tuple(X.shape):
                    if "svd" in str(func):
                        self.left_out.add(storage(t))
                    self.made.append(weakref.ref(t))
            alive = {storage(ref()) for ref in self.made if ref() is not None} - self.left_out
            self.most = max(self.most, len(alive))
            return out

    with Watch() as watch:
        value = function(X)
    return watch.most, value


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("name", RANKS)
def test_torch_centring_holds_one_centred_copy_and_keeps_its_values(name, dtype, requires_grad):
    """center=True on torch held two centred copies of X at once (Z - Z.mean(0) beside Z); now Z is centred in place:
    one copy (float16 is computed on its float32 copy: two). The values are unchanged (bit for bit, checked when the
    change was made) and those of numpy's float64 SVD of the fsum-centred rows; the gradient flows (see the gradcheck
    below)."""
    rows = np.random.default_rng(0).normal(size=(400, 30)) * 3 + 5
    X = torch.tensor(rows).to(getattr(torch, dtype)).requires_grad_(requires_grad)
    most, value = _most_copies_alive(lambda Z: RANKS[name](Z, center=True), X)
    assert most == (2 if dtype == "float16" else 1)
    expected = _reference(X.detach().double().numpy(), center=True, epsilon=1e-7 if name == "rankme" else 0.0)
    assert _value(value) == pytest.approx(expected, rel=1e-12 if dtype == "float64" else 1e-5)
    if requires_grad:
        value.backward()
        assert X.grad.shape == X.shape and bool(torch.isfinite(X.grad).all())


@pytest.mark.parametrize("name", RANKS)
def test_torch_centred_rank_gradient_is_the_numerical_one(name):
    X = torch.tensor(np.random.default_rng(1).normal(size=(7, 4)), requires_grad=True)
    assert torch.autograd.gradcheck(lambda Z: RANKS[name](Z, center=True), (X,))
