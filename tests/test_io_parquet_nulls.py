"""A Parquet null among the numbers of an embeddings file is refused as missing, naming its file, column and row.

pandas reads a null as NaN, which the readers then reported as "a non-finite value nan" (or returned as NaN): a user
who wrote a null was told of a value they never wrote. A NaN stored as a float is not a null and reads as before.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isotropy import IsotropyValueError
from isotropy.io import read_embeddings, read_labels
from isotropy.io.shards import read_shards

HINT = "expected a number in every cell (pandas' to_parquet writes a NaN as a null)."
LIST_TYPES = {"list": pa.list_, "large_list": pa.large_list, "fixed_size_list": None}


def _vectors(rows, layout: str, dtype=None):
    """A column of vectors (``rows``: lists, None entries written as nulls) of the Arrow type ``layout`` (float32
    entries unless ``dtype``)."""
    dtype = pa.float32() if dtype is None else dtype
    if layout == "fixed_size_list":
        return pa.array(rows, pa.list_(dtype, len(rows[0])))
    return pa.array(rows, LIST_TYPES[layout](dtype))


def _refusals(path):
    """The one-line refusals of read_embeddings and read_shards (the whole file read) of ``path``."""
    messages = []
    for read in (read_embeddings, lambda p: read_shards(p).compute()):
        with pytest.raises(IsotropyValueError) as caught:
            read(path)
        messages.append(str(caught.value))
        assert "\n" not in messages[-1]
    return messages


@pytest.mark.parametrize("dtype", [pa.float64(), pa.float32(), pa.int64()])
def test_a_null_in_a_column_of_numbers_is_refused_as_missing(tmp_path, dtype):
    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"f0": pa.array([1, 2, 3, None], dtype), "f1": pa.array([1, 2, None, 4], dtype),
                             "f2": pa.array([1, 2, 3, 4], dtype)}), path)
    line = (f"Cannot read embeddings from {str(path)!r}: column 'f1' has a missing value (a Parquet null) on row 2 "
            f"where a number was expected; {HINT}")
    assert _refusals(path) == [line, line]  # was NaN (read_embeddings) and "a non-finite value nan" (read_shards)


@pytest.mark.parametrize("layout", list(LIST_TYPES))
def test_a_null_entry_of_a_vector_is_refused_as_missing(tmp_path, layout):
    path = tmp_path / "x.parquet"
    rows = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, None], [None, 1.0, 1.0]]
    pq.write_table(pa.table({"word": ["a", "b", "c", "d"], "emb": _vectors(rows, layout)}), path)
    line = (f"Cannot read embeddings from {str(path)!r}: column 'emb' has a missing value (a Parquet null) on row 2, "
            f"entry 2 of its vector, where a number was expected; {HINT}")
    assert _refusals(path) == [line, line]


def test_a_missing_vector_is_refused_as_before(tmp_path):
    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"emb": _vectors([[1.0, 2.0], None, [None, 3.0]], "list")}), path)
    line = (f"Cannot read embeddings from {str(path)!r}: column 'emb' has a missing vector on row 1; expected one "
            f"vector per row.")
    assert _refusals(path) == [line, line]


@pytest.mark.parametrize("layout", ["scalar", *LIST_TYPES])
def test_a_nan_stored_as_a_float_reads_as_before(tmp_path, layout):
    """pyarrow stores a float NaN as the float NaN (pandas' to_parquet would store a null): read as NaN by
    read_embeddings, refused as non-finite by read_shards, as before."""
    path = tmp_path / "x.parquet"
    X = np.arange(12, dtype=np.float32).reshape(4, 3)
    X[2, 1] = np.nan
    if layout == "scalar":
        table = pa.table({f"f{j}": pa.array(X[:, j]) for j in range(3)})
    else:
        table = pa.table({"emb": _vectors(X.tolist(), layout)})
    assert all(column.null_count == 0 for column in table.columns)  # the NaN is a value
    pq.write_table(table, path)
    got, names = read_embeddings(path)
    assert names is None and got.dtype == np.float32
    np.testing.assert_array_equal(got, X)  # NaN where written, every other value as written
    with pytest.raises(IsotropyValueError) as caught:
        read_shards(path).compute()
    assert str(caught.value) == (f"Cannot read embeddings from {str(path)!r}: a non-finite value nan at row 2, "
                                 f"column 1; expected finite numbers (no NaN or inf).")


def test_the_first_row_with_a_null_is_named_across_row_groups_and_past_a_nan(tmp_path):
    """Rows are the file's, not a row group's; a NaN in an earlier row is no null."""
    path = tmp_path / "x.parquet"
    f0 = [float(i) for i in range(9)]
    f0[1] = float("nan")
    f1 = [float(i) for i in range(9)]
    f0[7], f1[5] = None, None
    pq.write_table(pa.table({"f0": pa.array(f0), "f1": pa.array(f1)}), path, row_group_size=2)
    assert pq.ParquetFile(path).metadata.num_row_groups == 5
    line = (f"Cannot read embeddings from {str(path)!r}: column 'f1' has a missing value (a Parquet null) on row 5 "
            f"where a number was expected; {HINT}")
    assert _refusals(path) == [line, line]


def test_a_null_in_a_shard_is_named_by_the_shard_and_the_row_of_all_shards(tmp_path):
    root = tmp_path / "shards"
    root.mkdir()
    X = np.arange(24, dtype=np.float32).reshape(8, 3)
    pq.write_table(pa.table({"emb": _vectors(X[:5].tolist(), "list")}), root / "part-0.parquet")
    rows = X[5:].tolist()
    rows[2][0] = None
    pq.write_table(pa.table({"emb": _vectors(rows, "list")}), root / "part-1.parquet")
    with pytest.raises(IsotropyValueError) as caught:
        read_shards(root).compute()
    assert str(caught.value) == (
        f"Cannot read embeddings from {str(root / 'part-1.parquet')!r}: column 'emb' has a missing value (a Parquet "
        f"null) on row 2 of the shard (row 7 of all shards), entry 0 of its vector, where a number was expected; "
        f"{HINT}")
    rows = X[5:].tolist()
    rows[0][1] = None  # in the first row: refused when the shard's first row is read (the array built)
    pq.write_table(pa.table({"emb": _vectors(rows, "list")}), root / "part-1.parquet")
    with pytest.raises(IsotropyValueError) as caught:
        read_shards(root)
    assert str(caught.value) == (
        f"Cannot read embeddings from {str(root / 'part-1.parquet')!r}: column 'emb' has a missing value (a Parquet "
        f"null) on row 0, entry 1 of its vector, where a number was expected; {HINT}")


def test_a_nan_written_by_pandas_is_a_null_in_the_file_and_said_so(tmp_path):
    """A judgement call: pandas' to_parquet stores a NaN of a float column (and of a vector) as a null, so a file
    from pandas cannot tell a NaN from a missing value; it is refused as missing, with the hint."""
    import pandas as pd

    path = tmp_path / "x.parquet"
    X = np.ones((3, 2))
    X[1, 1] = np.nan
    pd.DataFrame({"vector": list(X)}).to_parquet(path)
    assert pq.read_table(path).column("vector").combine_chunks().flatten().null_count == 1
    line = (f"Cannot read embeddings from {str(path)!r}: column 'vector' has a missing value (a Parquet null) on "
            f"row 1, entry 1 of its vector, where a number was expected; {HINT}")
    assert _refusals(path) == [line, line]


def test_a_null_row_id_is_a_missing_value_of_a_feature(tmp_path):
    """A row-id column with a null is no row ids (as before): a feature column, whose null is refused."""
    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"id": pa.array([0, None, 2]), "f0": [1.0, 2.0, 3.0], "f1": [1.0, 2.0, 3.0]}), path)
    line = (f"Cannot read embeddings from {str(path)!r}: column 'id' has a missing value (a Parquet null) on row 1 "
            f"where a number was expected; {HINT}")
    assert _refusals(path) == [line, line]


def test_a_null_label_is_the_labels_readers_to_refuse(tmp_path):
    """Consistent with the labels: a null in the label column is refused by read_labels naming its row, as it was;
    read_embeddings leaves that column out (label_column=) and reads the vectors."""
    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"emb": _vectors([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], "list"),
                             "label": pa.array(["a", None, "b"])}), path)
    X, _ = read_embeddings(path, label_column="label")
    np.testing.assert_array_equal(X, [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    with pytest.raises(IsotropyValueError) as caught:
        read_labels(path, n_rows=3, column="label")
    assert str(caught.value) == (f"Cannot read labels from {str(path)!r}: row 1 of column 'label' has no label (a "
                                 f"missing value); expected a label in every row.")


@settings(max_examples=40, deadline=None, derandomize=True)
@given(n=st.integers(1, 7), d=st.integers(1, 4), layout=st.sampled_from(["scalar", *LIST_TYPES]),
       cells=st.lists(st.tuples(st.integers(0, 99), st.sampled_from(["null", "nan"])), max_size=4),
       row_group_size=st.sampled_from([1, 3, 64]))
def test_nulls_and_nans_anywhere(tmp_path_factory, n, d, layout, cells, row_group_size):
    """Nulls and NaNs at any cells, in any layout and row groups: the first row with a null (its first column, its
    first entry) is named; without one, the values as written, NaN included."""
    path = tmp_path_factory.mktemp("nulls") / "x.parquet"
    X = np.arange(n * d, dtype=np.float64).reshape(n, d) / 4
    null = np.zeros((n, d), dtype=bool)
    for cell, kind in cells:
        i, j = divmod(cell % (n * d), d)
        null[i, j] = kind == "null"
        X[i, j] = np.nan
    rows = [[None if null[i, j] else float(X[i, j]) for j in range(d)] for i in range(n)]
    if layout == "scalar":
        table = pa.table({f"f{j}": pa.array([row[j] for row in rows], pa.float64()) for j in range(d)})
    else:
        table = pa.table({"emb": _vectors(rows, layout, pa.float64())})
    pq.write_table(table, path, row_group_size=row_group_size)
    if null.any():
        i = int(np.flatnonzero(null.any(axis=1))[0])
        j = int(np.flatnonzero(null[i])[0])
        where = f"column 'f{j}' has a missing value (a Parquet null) on row {i} where" if layout == "scalar" else \
            f"column 'emb' has a missing value (a Parquet null) on row {i}, entry {j} of its vector, where"
        line = f"Cannot read embeddings from {str(path)!r}: {where} a number was expected; {HINT}"
        assert _refusals(path) == [line, line]
    else:
        np.testing.assert_array_equal(read_embeddings(path)[0], X)
