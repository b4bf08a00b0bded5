"""The dask paths of effective_rank, rankme and alignment check their input as the numpy paths do, in the same words.

Found by a tester: complex dask input lost its imaginary part silently, object dtype was accepted, zero features gave
numpy's raw "zero-size array to reduction", subnormal data a raw LinAlgError, NaN was not placed at its row and column.
"""

import numpy as np
import pytest

import isotropy as iso
from isotropy.metrics import spectrum

da = pytest.importorskip("dask.array")


@pytest.fixture
def XY():
    rng = np.random.default_rng(0)
    return rng.normal(size=(100, 4)), rng.normal(size=(100, 4))


def _nan_at(X, row, column):
    Z = X.copy()
    Z[row, column] = np.nan
    return Z


def _raised(call):
    try:
        call()
    except (TypeError, ValueError) as exc:
        return type(exc), str(exc)
    return None


RANK_CASES = {
    "complex": lambda X, Y: X + 1j * Y,
    "object": lambda X, Y: X.astype(object),
    "no features": lambda X, Y: X[:, :0],
    "one row": lambda X, Y: X[:1],
    "one-dimensional": lambda X, Y: X[:, 0],
    "subnormal": lambda X, Y: X * 1e-315,
    "float32 subnormal": lambda X, Y: (X * 1e-40).astype(np.float32),
    "nan": lambda X, Y: _nan_at(X, 57, 2),
    "inf": lambda X, Y: np.where(np.arange(100)[:, None] == 80, -np.inf, X),
}


@pytest.mark.parametrize("metric", ["effective_rank", "rankme", "singular_values"])
@pytest.mark.parametrize("case", sorted(RANK_CASES))
def test_ranks_refuse_bad_dask_input_as_numpy_does(XY, metric, case):
    data = RANK_CASES[case](*XY)
    function = getattr(spectrum, metric)
    in_memory = _raised(lambda: function(data))
    assert in_memory is not None  # every case is refused in memory
    chunks = (25, -1) if data.ndim == 2 else 25
    lazy = _raised(lambda: function(da.from_array(data, chunks=chunks)))
    assert lazy == in_memory
    assert "\n" not in lazy[1] and f"parameter of {metric}" in lazy[1]


def test_the_messages_name_what_was_expected(XY):
    X, Y = XY
    with pytest.raises(TypeError, match=r"^The 'X' parameter of effective_rank must be a real-valued array. Got dtype "
                                        r"complex128 instead.$"):
        iso.effective_rank(da.from_array(X + 1j * Y, chunks=(25, 4)))
    with pytest.raises(iso.IsotropyValueError, match=r"^The 'X' parameter of rankme must contain only finite values. "
                                                     r"Got nan at row 57, column 2 instead.$"):
        iso.rankme(da.from_array(_nan_at(X, 57, 2), chunks=(25, 2)))
    with pytest.raises(iso.IsotropyValueError, match=r"at least 1 feature \(column\). Got 0 instead.$"):
        iso.effective_rank(da.from_array(X[:, :0]))
    with pytest.raises(iso.IsotropyValueError, match="must have values of normal magnitude"):
        iso.effective_rank(da.from_array(X * 1e-315, chunks=(25, 4)))


def test_a_nan_in_a_dask_array_of_unknown_row_count_is_placed_too(XY):
    X = _nan_at(XY[0], 57, 2)
    lazy = da.from_array(X, chunks=(25, 4))
    kept = lazy[lazy[:, 0] > -10]  # every row kept, their count unknown until computed
    assert np.isnan(kept.shape[0])
    with pytest.raises(iso.IsotropyValueError, match=r"Got nan at row 57, column 2 instead.$"):
        iso.effective_rank(kept)


def test_good_dask_input_gives_numpy_values(XY):
    X, _ = XY
    assert iso.effective_rank(da.from_array(X, chunks=(25, 2))) == pytest.approx(iso.effective_rank(X), rel=1e-12)
    assert iso.rankme(da.from_array(X * 1e-300, chunks=(30, 4)), center=True) == pytest.approx(
        iso.rankme(X, center=True), rel=1e-12)
    ints = np.arange(40).reshape(10, 4) % 7
    assert iso.effective_rank(da.from_array(ints, chunks=(5, 4))) == pytest.approx(iso.effective_rank(ints), rel=1e-12)


# --- alignment of one tensor and one numpy array --------------------------------------------------------------------
# a decision (see alignment's comment): the numpy side becomes a tensor on the tensor's device, in its dtype

@pytest.mark.parametrize("tensor_side", ["X", "Y"])
def test_alignment_of_a_tensor_and_a_numpy_array_is_the_tensor_value_with_its_graph(XY, tensor_side):
    torch = pytest.importorskip("torch")
    X, Y = XY
    t = torch.tensor(Y if tensor_side == "Y" else X, requires_grad=True)
    value = iso.alignment(X, t) if tensor_side == "Y" else iso.alignment(t, Y)
    assert isinstance(value, torch.Tensor) and value.dim() == 0 and value.dtype == torch.float64
    assert float(value.detach()) == pytest.approx(iso.alignment(X, Y), rel=1e-12)
    value.backward()
    both = torch.tensor(Y if tensor_side == "Y" else X, requires_grad=True)
    other = torch.tensor(X if tensor_side == "Y" else Y)
    (iso.alignment(other, both) if tensor_side == "Y" else iso.alignment(both, other)).backward()
    torch.testing.assert_close(t.grad, both.grad, rtol=1e-12, atol=0)


def test_alignment_of_a_float32_tensor_and_a_float64_array_is_a_float32_tensor_without_warnings(XY):
    torch = pytest.importorskip("torch")
    import warnings

    X, Y = XY
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's DeprecationWarning of __array__ on a float32 tensor
        value = iso.alignment(torch.tensor(X, dtype=torch.float32), Y)
    assert isinstance(value, torch.Tensor) and value.dtype == torch.float32
    assert float(value) == pytest.approx(iso.alignment(X.astype(np.float32), Y.astype(np.float32)), rel=1e-6)


def test_alignment_of_a_dask_array_and_a_tensor_is_refused_in_one_line(XY):
    torch = pytest.importorskip("torch")
    X, Y = XY
    with pytest.raises(iso.IsotropyValueError, match=r"^The 'Y' parameter of alignment must be a dask or numpy array "
                                                     r"when 'X' is a dask array. Got a torch.Tensor instead"):
        iso.alignment(da.from_array(X), torch.tensor(Y, requires_grad=True))
    with pytest.raises(iso.IsotropyValueError, match=r"^The 'X' parameter of alignment must be a dask or numpy array "
                                                     r"when 'Y' is a dask array"):
        iso.alignment(torch.tensor(X), da.from_array(Y))


# --- alignment on dask: the checks and the value of the in-memory path ----------------------------------------------

def _both(X, Y, **kwargs):
    """alignment in memory and on dask (rows in chunks of 30), each a value or the (type, message) of its refusal."""
    def run(a, b):
        try:
            return iso.alignment(a, b, **kwargs)
        except (TypeError, ValueError) as exc:
            return type(exc), str(exc)

    lazy = [da.from_array(A, chunks=(30, -1) if A.ndim == 2 else 30) for A in (X, Y)]
    return run(X, Y), run(*lazy)


def _with(A, row, value):
    A = A.copy()
    A[row] = value
    return A


ALIGNMENT_REFUSALS = {
    "1-d X": lambda X, Y: (X[:, 0], Y[:, 0]),
    "1-d Y": lambda X, Y: (X, Y[:, 0]),
    "complex": lambda X, Y: (X + 1j * Y, Y),
    "object": lambda X, Y: (X, Y.astype(object)),
    "no features": lambda X, Y: (X[:, :0], Y[:, :0]),
    "no rows": lambda X, Y: (X[:0], Y[:0]),
    "nan in X after one in Y": lambda X, Y: (_with(X, 70, np.nan), _with(Y, 3, np.inf)),
    "inf in Y": lambda X, Y: (X, _with(Y, 64, -np.inf)),
    "zero row of X after one of Y": lambda X, Y: (_with(X, 90, 0.0), _with(Y, 2, 0.0)),
    "zero row of Y": lambda X, Y: (X, _with(Y, 2, 0.0)),
}


@pytest.mark.parametrize("case", sorted(ALIGNMENT_REFUSALS))
def test_alignment_refuses_bad_dask_input_as_numpy_does(XY, case):
    in_memory, lazy = _both(*ALIGNMENT_REFUSALS[case](*XY))
    assert isinstance(in_memory, tuple)  # refused in memory
    assert lazy == in_memory
    assert "\n" not in lazy[1]


def test_alignment_on_one_dimensional_dask_input_says_two_dimensional(XY):
    X, Y = XY
    with pytest.raises(iso.IsotropyValueError, match=r"^The 'Y' parameter of alignment must be a 2-d array of shape "
                                                     r"\(n_samples, n_features\). Got an array with shape \(100,\) "
                                                     r"instead.$"):
        iso.alignment(da.from_array(X), da.from_array(Y[:, 0]))


def test_alignment_places_a_nan_at_its_row_and_column_on_dask(XY):
    X, Y = XY
    with pytest.raises(iso.IsotropyValueError, match=r"^The 'X' parameter of alignment must contain only finite "
                                                     r"values. Got nan at row 57, column 2 instead.$"):
        iso.alignment(da.from_array(_nan_at(X, 57, 2), chunks=(25, 4)), Y)


# alignment(X·1e200, Y·1e200, normalize=False) was inf on numpy (a RuntimeWarning) and refused on dask: both now
# compute the mean without overflow, and refuse, in the same words, only a mean that itself leaves float64's range

@pytest.mark.parametrize("scale, alpha", [(1e300, 1), (1e150, 2), (1e-300, 1), (1e-160, 2), (1.0, 0.5), (1e100, 3)])
def test_alignment_without_normalising_is_exact_at_any_scale_in_memory_and_on_dask(XY, scale, alpha):
    import warnings

    X, Y = XY
    expected = np.mean(np.linalg.norm(X - Y, axis=1) ** alpha)  # at unit scale: plain float64
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow or underflow warning on the way
        in_memory, lazy = _both(X * scale, Y * scale, alpha=alpha, normalize=False)
    assert in_memory == pytest.approx(expected * scale ** alpha, rel=1e-12)
    assert lazy == pytest.approx(in_memory, rel=1e-12)


@pytest.mark.parametrize("scale, alpha, normalize", [(1e200, 2, False), (1e300, 1.5, False), (1.0, 2000, True)])
def test_a_mean_past_float64_is_refused_alike_in_memory_and_on_dask(XY, scale, alpha, normalize):
    X, Y = XY
    in_memory, lazy = _both(X * scale, Y * scale, alpha=alpha, normalize=normalize)
    assert in_memory == lazy
    assert in_memory[0] is iso.IsotropyValueError
    assert in_memory[1].startswith("The 'X' and 'Y' parameters of alignment must have a mean ‖x − y‖^α inside "
                                   "float64's range. Got a mean of about 1e")


def test_alignment_of_the_largest_floats_does_not_overflow_in_the_difference():
    X = np.array([[1.5e308, 0.0], [0.0, -1.0e308]])
    Y = -X
    # ‖x − y‖ = 3e308 and 2e308 (each past float64's largest), their mean 2.5e308 too: refused; the square roots
    # of them are not
    expected = (np.sqrt(3.0) + np.sqrt(2.0)) / 2 * 1e154
    assert iso.alignment(X, Y, alpha=0.5, normalize=False) == pytest.approx(expected, rel=1e-12)
    assert iso.alignment(da.from_array(X, chunks=(1, 2)), Y, alpha=0.5, normalize=False) == pytest.approx(expected,
                                                                                                         rel=1e-12)


# --- docs/api pages fixed with these (placed here: the only test files open to this change) -------------------------

def _docs(page):
    from pathlib import Path

    return (Path(__file__).resolve().parents[1] / "docs" / "api" / page).read_text(encoding="utf-8")


def test_the_transform_signatures_in_the_docs_are_keyword_only_as_the_constructors():
    import inspect
    import re

    from isotropy import transforms

    rows = re.findall(r"^\| `(\w+)\((.*?)\)` \(`\w+`\) \|", _docs("transforms.md"), flags=re.MULTILINE)
    assert sorted(name for name, _ in rows) == ["AllButTheTop", "ClusterCentering", "ClusterIsotropy", "Whitening"]
    for name, shown in rows:
        parameters = inspect.signature(getattr(transforms, name)).parameters
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters.values())
        assert shown.startswith("*, "), (name, shown)  # the docs wrote ClusterIsotropy(n_clusters=27, ..., *, ...)
        assert re.findall(r"(\w+)=", shown) == list(parameters), name


def test_the_dimension_page_says_dask_local_mle_merges_parallel_rows_as_numpy_does():
    text = " ".join(_docs("dimension.md").split())
    assert "which refuses them" not in text
    assert "`local_mle_dimension` included" in text
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 5))
    X[10] = 3 * X[20]  # parallel: cosine distance 0
    # one warning, in the same words on both (dask counted its parallel rows in a warning of its own before)
    said = "1 duplicate rows .*or parallel to it to the input's precision"
    with pytest.warns(UserWarning, match=said):
        lazy = iso.local_mle_dimension(da.from_array(X, chunks=(50, 5)), metric="cosine", n_neighbors=10)
    with pytest.warns(UserWarning, match=said):
        in_memory = iso.local_mle_dimension(X, metric="cosine", n_neighbors=10)
    lazy = np.asarray(lazy)
    np.testing.assert_allclose(lazy, in_memory, rtol=1e-10)
    assert lazy[10] == lazy[20]


@pytest.mark.parametrize("name", ["effective_rank", "rankme"])
def test_dask_ranks_of_a_masked_array_count_its_rows(name):
    # a dask array filtered by a mask has unknown chunk sizes; 0 or 1 rows, all-zero rows and even 50 ordinary rows
    # ended in raw dask/numpy errors ("all the input array dimensions ... must match", "expected a sequence of
    # integers ... got 'nan'") from its empty blocks: now counted block by block, with check_X's messages
    from isotropy import IsotropyValueError

    fn = getattr(iso, name)
    X = np.random.default_rng(0).normal(size=(100, 4))
    D = da.from_array(X, chunks=(25, 4))
    for keep, rows in ((np.arange(100) > 200, 0), (np.arange(100) == 3, 1)):
        with pytest.raises(IsotropyValueError, match=rf"^The 'X' parameter of {name} must have at least 2 samples "
                                                     rf"\(rows\)\. Got {rows} instead\.$"):
            fn(D[da.from_array(keep, chunks=25)])
    half = da.from_array(np.arange(100) < 50, chunks=25)  # two of four blocks empty
    assert fn(D[half]) == pytest.approx(fn(X[:50]), rel=1e-12)
    zeros = da.from_array(np.zeros((100, 4)), chunks=(25, 4))[half]
    with pytest.raises(IsotropyValueError, match="must not be all zero"):
        fn(zeros)


def test_a_dask_alignment_block_holds_a_bounded_share_of_its_chunk():
    """A block of alignment converted its whole chunk to float64 and took _power_sum's temporaries of it: about 10
    times a 64 MiB float32 chunk, which killed workers of 512 MiB (a user trial). Pieces of 2**20 entries now: well
    under twice a 48 MiB chunk (tracemalloc), with the in-memory value."""
    import tracemalloc

    from isotropy.metrics.contrastive import _alignment_block

    X = np.random.default_rng(0).normal(size=(32768, 384)).astype(np.float32)  # 48 MiB
    Y = X * 1.5 + 0.1
    tracemalloc.start()
    try:
        *problems, (top, total) = _alignment_block(X, Y, 2.0, True, 0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert problems == [None, None, False, False]
    assert peak < 2 * X.nbytes, peak / 2**20
    assert total * 2.0**top / X.shape[0] == pytest.approx(iso.alignment(X, Y), rel=1e-12)


@pytest.mark.parametrize("dropped", [slice(0, 100), slice(100, 200), slice(200, 300)])
def test_spectral_ranks_of_a_dask_array_with_a_chunk_of_no_rows(dropped):
    # rows dropped by a boolean mask, then compute_chunk_sizes() (the route the other metrics' errors give): a chunk of
    # no rows made dask's min/max fail with numpy's raw concatenate error (a user trial); the in-memory values now
    import dask.array as da

    from isotropy import effective_rank, rankme

    X = np.random.default_rng(0).normal(size=(300, 8)) * np.linspace(0.5, 3.0, 8)
    keep = np.ones(300, dtype=bool)
    keep[dropped] = False
    Y = da.from_array(X, chunks=(100, -1))[da.from_array(keep, chunks=100)]
    Y.compute_chunk_sizes()
    assert 0 in Y.chunks[0]
    for metric in (effective_rank, rankme):
        assert float(metric(Y)) == pytest.approx(metric(X[keep]), rel=1e-13, abs=0)
