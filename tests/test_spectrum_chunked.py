"""effective_rank, rankme and singular_values of a numpy array hold a chunk of it, not float64 copies of all of it.

A user's scale trial: the two ranks of 200,000 x 384 float32 rows peaked at five times the input (a float64 copy, a
centred copy and LAPACK's own copy for one SVD each). Tall inputs now go through a QR of their row chunks, stacked
under the R so far; the reference here is LAPACK's SVD of the whole float64 array.
"""

import tracemalloc

import numpy as np
import pytest

import isotropy as iso
from isotropy.metrics import spectrum


def _spread(n, d, seed=0):
    """Rows whose singular values span eight decades, off the origin (so centring matters)."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    return (rng.normal(size=(n, d)) * np.logspace(0, -8, d)) @ Q + 3.0


@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("n", [97, 1000, 1001])
def test_chunked_singular_values_are_lapacks_of_the_whole(monkeypatch, n, center):
    monkeypatch.setattr(spectrum, "_QR_ELEMENTS", 12 * 40)  # 40 rows a chunk: several chunks, a short last one
    X = _spread(n, 12)
    Z = X - X.mean(axis=0) if center else X
    reference = np.linalg.svd(Z, compute_uv=False)
    got = spectrum.singular_values(X, center=center)
    np.testing.assert_allclose(got, reference, rtol=0, atol=1e-13 * reference[0])
    p = reference / reference.sum()
    assert iso.effective_rank(X, center=center) == pytest.approx(np.exp(-np.sum(p * np.log(p))), rel=1e-12)
    q = p + 1e-7
    assert iso.rankme(X, center=center) == pytest.approx(np.exp(-np.sum(q * np.log(q))), rel=1e-12)


def test_the_ranks_hold_a_chunk_not_copies_of_the_input(monkeypatch):
    monkeypatch.setattr(spectrum, "_QR_ELEMENTS", 2**12)
    X = np.random.default_rng(1).normal(size=(20_000, 16)).astype(np.float32)
    tracemalloc.start()
    try:
        held = tracemalloc.get_traced_memory()[0]
        for rank in (iso.effective_rank, iso.rankme):
            rank(X, center=True)
        peak = tracemalloc.get_traced_memory()[1] - held
    finally:
        tracemalloc.stop()
    assert peak < 0.25 * X.nbytes, peak / X.nbytes  # a float64 copy alone is twice the input
