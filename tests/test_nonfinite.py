"""The first NaN/inf of an array, named one way everywhere: ``nan at row R, column C``.

:func:`isotropy._utils.validation.first_nonfinite` finds it (numpy and torch, a block of rows at a
time); the in-memory check (``check_X``), ``isotropy measure`` (its report), the shard reader and the
dask check (here on a real ``dask.distributed.LocalCluster`` of worker processes) each say it with
their own context: the row name, the shard and its global row, the block's global offset.
"""

from __future__ import annotations

import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

from isotropy._utils import validation
from isotropy._utils.validation import NonFinite, first_nonfinite

BAD = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf}
N_ROWS, N_COLUMNS = 300_000, 8  # 2.4M entries: three blocks of 131,072 rows


def _large(dtype, kind):
    """A large array whose first bad entry (``bad``) is at row 250,000, column 5 (the second block), with
    others after it in row order: a later column of that row, the next row's column 0, a later block."""
    step = validation._NONFINITE_BLOCK // N_COLUMNS
    assert step <= 250_000 < 2 * step < 290_000 < N_ROWS  # the second block, and one more after it
    X = np.random.default_rng(0).normal(size=(N_ROWS, N_COLUMNS)).astype(dtype)
    others = [value for name, value in BAD.items() if name != kind]
    X[250_000, 5] = BAD[kind]
    X[250_000, 7] = others[0]
    X[250_001, 0] = others[1]
    X[290_000, 2] = others[0]
    return X


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("kind", list(BAD))
def test_first_nonfinite_numpy_in_a_later_block(dtype, kind):
    found = first_nonfinite(_large(dtype, kind))
    assert found[:2] == (250_000, 5) and str(found.value) == kind
    assert isinstance(found, NonFinite) and type(found.row) is int and type(found.column) is int
    assert found.at() == f"{kind} at row 250000, column 5"
    assert found.at(7) == f"{kind} at row 7, column 5"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", list(BAD))
def test_first_nonfinite_torch_in_a_later_block(dtype, kind):
    torch = pytest.importorskip("torch")
    X = torch.from_numpy(_large(getattr(np, dtype), kind))
    assert first_nonfinite(X).at() == f"{kind} at row 250000, column 5"
    assert first_nonfinite(X.T.contiguous().T).at() == f"{kind} at row 250000, column 5"  # column-major storage
    small = torch.ones(4, 3, dtype=getattr(torch, dtype), requires_grad=True)
    with torch.no_grad():
        small[2, 1] = BAD[kind]
    assert first_nonfinite(small).at() == f"{kind} at row 2, column 1"
    assert first_nonfinite(torch.ones(5, 3)) is None


def test_first_nonfinite_small_and_edge_shapes():
    X = np.ones((5, 3))
    assert first_nonfinite(X) is None
    X[3, 0], X[2, 2] = np.nan, -np.inf
    assert first_nonfinite(X) == (2, 2, -np.inf)
    assert first_nonfinite(np.asfortranarray(X)) == (2, 2, -np.inf)
    assert first_nonfinite(X[::-1]).at() == "nan at row 1, column 0"  # a strided view
    assert first_nonfinite(np.ones((0, 3))) is None and first_nonfinite(np.ones((3, 0))) is None
    wide = np.ones((3, validation._NONFINITE_BLOCK + 5), dtype=np.float32)  # wider than a block: a row at a time
    wide[2, -1] = np.inf
    assert first_nonfinite(wide).at() == f"inf at row 2, column {validation._NONFINITE_BLOCK + 4}"


def test_first_nonfinite_allocates_one_block_mask_not_a_copy():
    """A later block all bad: a list of every bad entry, or a mask of the whole array, would be megabytes."""
    X = np.ones((N_ROWS, N_COLUMNS))
    X[200_000:] = np.nan  # 800,000 bad entries
    tracemalloc.start()
    try:
        found = first_nonfinite(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found.at() == "nan at row 200000, column 0"
    assert peak < 1.5 * validation._NONFINITE_BLOCK  # one boolean mask of a block, and a flag per row


def test_validation_does_not_import_torch():
    code = ("import sys, numpy as np; from isotropy._utils.validation import first_nonfinite; "
            "assert first_nonfinite(np.full((2, 2), np.inf)).at() == 'inf at row 0, column 0'; "
            "assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("kind", list(BAD))
def test_check_x_names_row_column_and_value(kind, backend):
    import isotropy

    X = np.random.default_rng(1).normal(size=(30, 4))
    X[17, 3], X[20, 0] = BAD[kind], np.nan
    with pytest.raises(isotropy.IsotropyValueError) as info:
        isotropy.isoscore(backend(X))
    assert str(info.value) == (f"The 'X' parameter of isoscore must contain only finite values. "
                               f"Got {kind} at row 17, column 3 instead.")


def test_measure_report_names_the_row_of_the_file_and_its_name():
    from isotropy.measure.report import InputError, _check_finite

    X = np.ones((3, 4))
    X[1, 2] = -np.inf
    rows = np.array([4, 9, 12])  # the sample measured: rows 4, 9, 12 of the file
    with pytest.raises(InputError) as info:
        _check_finite(X, "w.txt", [f"word{i}" for i in range(20)], rows, 20)  # (no such file: no line said)
    assert info.value.message == ("EMBEDDINGS 'w.txt' has a non-finite value -inf at row 9, column 2 "
                                  "(row name 'word9'); expected finite numbers (no NaN or inf).")
    _check_finite(np.ones((3, 4)), "w.txt", None, rows, 20)  # all finite: nothing said


def test_shard_check_names_the_shard_and_the_global_row():
    from isotropy.io.shards import _check_finite

    block = np.ones((6, 3), dtype=np.float32)
    block[4, 1] = np.inf
    with pytest.raises(ValueError) as info:
        _check_finite(block, "part-2.npy", 10, 110)
    assert "a non-finite value inf at row 14, column 1 of the shard (row 114 of all shards); " in str(info.value)


# ------------------------------------------------------------------------ the dask check on worker processes
@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, memory_limit=400 * 2**20,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        yield client


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(BAD))
def test_dask_check_on_a_cluster_names_global_row_column_and_value(client, kind):
    """The bad block starts at row 300: the row named is the whole array's (321), with the column and value."""
    da = pytest.importorskip("dask.array")
    from dask.base import get_scheduler

    import isotropy

    X = np.random.default_rng(2).normal(size=(1000, 6))
    X[321, 4] = BAD[kind]
    # later in row order, in the same block (another block's error could come first: blocks run in parallel)
    X[321, 5] = X[322, 0] = X[399, 1] = np.nan if kind != "nan" else np.inf
    Xd = da.from_array(X, chunks=(100, 6))
    assert get_scheduler() == client.get  # computed by the cluster's worker processes
    with pytest.raises(isotropy.IsotropyValueError) as info:
        isotropy.isoscore(Xd)
    assert str(info.value) == (f"The 'X' parameter of isoscore must contain only finite values. "
                               f"Got {kind} at row 321, column 4 instead.")
