"""Compressed files that would expand far beyond their size, and incomplete stores, are refused in one line.

Each hostile file is built small (a few hundred KB at most) in ``tmp_path``; the same kind of file
written the ordinary way still reads with its values.
"""

from __future__ import annotations

import io
import re
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isotropy import IsotropyValueError
from isotropy.io._archives import EXPANSION_FLOOR_BYTES, MAX_EXPANSION, expansion_problem
from isotropy.io.embeddings import read_embeddings


def _npy_header(shape, dtype="<f8") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def _zeros_member(archive: zipfile.ZipFile, name: str, n_bytes: int, header: bytes = b"") -> None:
    """Write ``header`` then ``n_bytes`` zero bytes as one deflated member, without holding them in memory."""
    with archive.open(name, "w", force_zip64=True) as member:
        member.write(header)
        chunk = bytes(2**22)
        for _ in range(n_bytes // len(chunk)):
            member.write(chunk)


_BOMB_ROWS, _BOMB_COLS = 9 * 2**10, 2**10  # float64: 72 MiB, just above the 64 MiB floor


def test_the_cap_is_the_documented_one():
    assert (MAX_EXPANSION, EXPANSION_FLOOR_BYTES) == (100, 64 * 2**20)
    assert expansion_problem("x", EXPANSION_FLOOR_BYTES, 1) is None  # at the floor: any ratio
    assert expansion_problem("x", EXPANSION_FLOOR_BYTES + 1, 2**20) is None  # above it, 64x: fine
    assert "x expands from 1 to 67108865 bytes (67108865x" in expansion_problem("x", EXPANSION_FLOOR_BYTES + 1, 1)


def test_npz_zip_bomb_is_refused_naming_member_and_sizes(tmp_path):
    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        _zeros_member(archive, "x.npy", _BOMB_ROWS * _BOMB_COLS * 8, _npy_header((_BOMB_ROWS, _BOMB_COLS)))
    assert path.stat().st_size < 2**20
    with pytest.raises(IsotropyValueError) as err:
        read_embeddings(path)
    message = str(err.value)
    assert "\n" not in message and str(path) in message and "member 'x.npy'" in message
    assert f"to {128 + _BOMB_ROWS * _BOMB_COLS * 8} bytes" in message and "more than 100x above 64 MiB" in message
    assert "np.savez rather than np.savez_compressed" in message


@pytest.mark.parametrize("shape", [(10**6, 10**6), (40000, 40000)])
def test_npz_member_shorter_than_its_header_declares_is_refused(tmp_path, shape):
    path = tmp_path / "lie.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("x.npy", _npy_header(shape) + bytes(64))
    with pytest.raises(IsotropyValueError, match=r"member 'x.npy' declares shape \(\d+, \d+\) of float64 "
                                                 r"\(\d+ bytes with its header\) but holds 192 bytes"):
        read_embeddings(path)


def test_compressed_npz_of_zeros_and_of_random_values_still_read(tmp_path):
    zeros, rng = np.zeros((500, 64)), np.random.default_rng(0).normal(size=(300, 16))
    np.savez_compressed(tmp_path / "z.npz", zeros=zeros, x=rng)  # zeros compress ~1000x, below the floor
    X, names = read_embeddings(tmp_path / "z.npz", key="zeros")
    assert names is None and X.shape == (500, 64) and not X.any()
    np.testing.assert_array_equal(read_embeddings(tmp_path / "z.npz", key="x")[0], rng)


def _torch_bomb(path, torch) -> None:
    """A torch.save zip whose ``data/0`` entry is deflated and expands to 72 MiB (torch.save stores entries)."""
    buf = io.BytesIO()
    torch.save(torch.zeros(4), buf)
    with zipfile.ZipFile(buf) as source, zipfile.ZipFile(path, "w") as archive:
        for info in source.infolist():
            if info.filename.endswith("data/0"):
                archive.compression, archive.compresslevel = zipfile.ZIP_DEFLATED, 1
                _zeros_member(archive, info.filename, _BOMB_ROWS * _BOMB_COLS * 8)
                archive.compression = zipfile.ZIP_STORED
            else:
                archive.writestr(info, source.read(info.filename))


def test_pt_with_a_deflated_bomb_entry_is_refused_by_both_readers(tmp_path):
    torch = pytest.importorskip("torch")
    from isotropy.models._safety import load_checkpoint

    path = tmp_path / "bomb.pt"
    _torch_bomb(path, torch)
    assert path.stat().st_size < 2**20
    expands = f"member '{zipfile.ZipFile(path).namelist()[0].split('/')[0]}/data/0' expands from "
    with pytest.raises(IsotropyValueError) as err:
        read_embeddings(path)
    message = str(err.value)
    assert "\n" not in message and str(path) in message and expands in message
    assert f" to {_BOMB_ROWS * _BOMB_COLS * 8} bytes" in message and "torch.save it again" in message
    with pytest.raises(IsotropyValueError) as err:
        load_checkpoint(path, what="checkpoint of run r1")
    message = str(err.value)
    assert "\n" not in message and f"checkpoint of run r1 {str(path)!r}" in message and expands in message


def test_pt_written_by_torch_save_zip_and_legacy_still_reads(tmp_path):
    torch = pytest.importorskip("torch")
    from isotropy.models._safety import load_checkpoint

    X = torch.arange(12, dtype=torch.float32).reshape(4, 3)
    torch.save({"x": X}, tmp_path / "new.pt")
    torch.save({"x": X}, tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    for name in ("new.pt", "old.pt"):
        np.testing.assert_array_equal(read_embeddings(tmp_path / name)[0], X.numpy())
        assert torch.equal(load_checkpoint(tmp_path / name)["x"], X)
    assert zipfile.is_zipfile(tmp_path / "new.pt") and not zipfile.is_zipfile(tmp_path / "old.pt")


def test_parquet_bomb_of_dictionary_encoded_zeros_is_refused(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path, block = tmp_path / "bomb.parquet", pa.table({"a": np.zeros(2**20)})
    with pq.ParquetWriter(path, block.schema, compression="zstd") as writer:
        for _ in range(9):  # 9 row groups of 2**20 float64 zeros: 72 MiB decoded, just above the floor
            writer.write_table(block)
    size = path.stat().st_size
    assert size < 2**20 and pq.ParquetFile(path).metadata.num_rows == 9 * 2**20
    with pytest.raises(IsotropyValueError) as err:
        read_embeddings(path)
    message = str(err.value)
    assert "\n" not in message and str(path) in message
    assert f"its data ({9 * 2**20} rows) expands from {size} to {9 * 2**23} bytes" in message
    assert "save the array with np.save" in message


def test_parquet_of_zeros_below_the_floor_and_of_vectors_still_read(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    pd.DataFrame({"a": np.zeros(100_000), "b": np.ones(100_000)}).to_parquet(tmp_path / "z.parquet")
    X, names = read_embeddings(tmp_path / "z.parquet")
    assert names is None and X.shape == (100_000, 2) and not X[:, 0].any() and (X[:, 1] == 1).all()
    V = np.random.default_rng(1).normal(size=(50, 8))
    pd.DataFrame({"word": [f"w{i}" for i in range(50)], "v": list(V)}).to_parquet(tmp_path / "v.parquet")
    X, names = read_embeddings(tmp_path / "v.parquet")
    np.testing.assert_array_equal(X, V)
    assert names == [f"w{i}" for i in range(50)]


def test_zarr_declaring_chunks_it_does_not_store_is_refused(tmp_path):
    zarr = pytest.importorskip("zarr")
    pytest.importorskip("dask")
    from isotropy.io.shards import _zarr_chunk_counts, read_shards

    huge = tmp_path / "huge.zarr"  # 10**7 x 1000 float64 declared, metadata only
    zarr.create_array(str(huge), shape=(10**7, 1000), chunks=(10**5, 1000), dtype="f8", fill_value=0.0)
    with pytest.raises(IsotropyValueError) as err:
        read_shards(huge)
    message = str(err.value)
    assert "\n" not in message and str(huge) in message
    assert "the Zarr array stores 0 of its 100 chunks (the missing ones would read as the fill value 0.0)" in message
    assert "write_empty_chunks=True" in message
    part = zarr.create_array(str(tmp_path / "part.zarr"), shape=(30, 4), chunks=(10, 4), dtype="f4")
    part[:20] = 1.0  # the last chunk never written
    with pytest.raises(IsotropyValueError, match="stores 2 of its 3 chunks"):
        read_shards(tmp_path / "part.zarr")
    zarr.create_array(str(tmp_path / "grid.zarr"), shape=(10**12, 10), chunks=(1, 10), dtype="f4")
    assert _zarr_chunk_counts(tmp_path / "grid.zarr", None)[:3] == (0, 10**12, 0.0)  # the files counted, not the grid


@pytest.mark.parametrize("options", [{"zarr_format": 2}, {}, {"shards": (20, 6)},
                                     {"chunk_key_encoding": {"name": "v2", "separator": "."}}])
def test_complete_zarr_arrays_still_read(tmp_path, options):
    zarr = pytest.importorskip("zarr")
    pytest.importorskip("dask")
    from isotropy.io.shards import read_shards

    X = np.random.default_rng(2).normal(size=(50, 6)).astype(np.float32)
    z = zarr.create_array(str(tmp_path / "x.zarr"), shape=X.shape, chunks=(10, 3), dtype="f4", **options)
    z[:] = X
    np.testing.assert_array_equal(read_shards(tmp_path / "x.zarr").compute(), X)
    group = zarr.open_group(str(tmp_path / "g.zarr"), mode="w")
    group.create_array("emb", shape=X.shape, chunks=(25, 6), dtype="f4")[:] = X
    np.testing.assert_array_equal(read_shards(tmp_path / "g.zarr", key="emb").compute(), X)


@pytest.mark.parametrize("first", ["a" * 200_000 + ",1,2", '"' + "a" * 200_000 + ",1,2"])
def test_csv_first_field_over_the_csv_limit_is_one_line(tmp_path, first):
    path = tmp_path / "long.csv"
    path.write_text(first + "\n" + "w,1,2\n")
    with pytest.raises(IsotropyValueError) as err:
        read_embeddings(path)
    message = str(err.value)
    assert "\n" not in message and str(path) in message
    assert "line 1 is not a readable .csv row (field larger than field limit (131072))" in message


def test_csv_first_line_is_read_bounded(tmp_path, monkeypatch):
    from isotropy.io import embeddings

    monkeypatch.setattr(embeddings, "_MAX_FIRST_LINE", 1000)
    path = tmp_path / "wide.csv"
    path.write_text(",".join(["1.5"] * 2000))  # 7,999 characters, no line break
    with pytest.raises(IsotropyValueError, match=r"'.*wide\.csv': its first line is longer than 1000 characters; "
                                                 r"expected rows of numbers, .* one row per line\.$"):
        read_embeddings(path)
    path.write_text("\n".join([",".join(["1.5"] * 200)] * 3))  # 599 characters a line: reads
    X, names = read_embeddings(path)
    assert names is None and X.shape == (3, 200) and (X == 1.5).all()


def test_a_table_wider_than_any_embedding_is_refused_before_pandas_reads_it(tmp_path):
    # 3 rows of 3 million columns (36 MB) ran past 10 minutes in pandas; Parquet took 7 s per 100,000 columns
    import pandas as pd

    from isotropy.io.embeddings import _MAX_COLUMNS

    path = tmp_path / "wide.csv"
    path.write_text("\n".join([",".join(["0.5"] * (_MAX_COLUMNS + 2))] * 3))
    with pytest.raises(IsotropyValueError, match=rf"'.*wide\.csv': its first line holds {_MAX_COLUMNS + 2:,} "
                                                 rf"columns; expected at most {_MAX_COLUMNS:,} features a row\.$"):
        read_embeddings(path)
    path = tmp_path / "wide.parquet"
    pd.DataFrame(np.zeros((2, _MAX_COLUMNS + 3)), columns=[f"c{i}" for i in range(_MAX_COLUMNS + 3)]).to_parquet(path)
    with pytest.raises(IsotropyValueError, match=rf"'.*wide\.parquet': it holds {_MAX_COLUMNS + 3:,} columns; "
                                                 rf"expected at most {_MAX_COLUMNS:,} features a row"):
        read_embeddings(path)
    path.unlink()
    pd.DataFrame(np.ones((2, 1000)), columns=[f"c{i}" for i in range(1000)]).to_parquet(path)  # reads
    assert read_embeddings(path)[0].shape == (2, 1000)


def test_a_text_matrix_line_is_read_bounded(tmp_path, monkeypatch):
    # the .txt sniffing read a 1 GB line whole (3.1 GB); np.loadtxt of a 120 MB line ran 50 s at 3.4 GB
    from isotropy.io import embeddings

    monkeypatch.setattr(embeddings, "_MAX_FIRST_LINE", 1000)
    path = tmp_path / "long.txt"
    path.write_text("1.5 2.5\n" + "1" * 1001)
    with pytest.raises(IsotropyValueError, match=r"'.*long\.txt': line 2 is longer than 1,000 characters; expected "
                                                 r"rows of numbers, or a word and its vector, one row per line\.$"):
        read_embeddings(path)
    monkeypatch.setattr(embeddings, "_MAX_COLUMNS", 100)
    path.write_text(" ".join(["0.5"] * 102) + "\n")
    with pytest.raises(IsotropyValueError, match=r"line 1 holds 102 numbers; expected at most 100 features a row"):
        read_embeddings(path)
    path.write_text((" ".join(["0.5"] * 100) + "\n") * 2)  # at the caps: read
    assert read_embeddings(path)[0].shape == (2, 100)


@pytest.mark.parametrize("suffix", [".txt", ".csv", ".jsonl"])
def test_a_texts_file_line_past_the_cap_is_refused_before_it_is_parsed(tmp_path, suffix):
    # a 1 GB line was parsed whole first (pandas held 8.5 GB of it before its own error)
    import json

    from isotropy.io._encoding import MAX_LINE_CHARS
    from isotropy.measure.from_model import read_texts

    def line(text):  # one text as a line of the format
        return json.dumps({"text": text}) if suffix == ".jsonl" else text

    overhead = len(line(""))
    path = tmp_path / f"texts{suffix}"
    head = "" if suffix == ".jsonl" else "text\n"
    path.write_text(head + "\n".join(line(t) for t in ["a short text", "x" * (MAX_LINE_CHARS + 1 - overhead)]))
    with pytest.raises(IsotropyValueError, match=rf"^The texts file '.*' has a line of more than {MAX_LINE_CHARS:,} "
                                                 rf"characters \(line {3 if head else 2}\); expected one text a line"):
        read_texts(path)
    path.write_text(head + "\n".join(line(t) for t in ["a short text", "x" * (MAX_LINE_CHARS - overhead)]))
    texts = read_texts(path, column=None if suffix == ".txt" else "text")  # at the cap: read
    assert texts[-1] == "x" * (MAX_LINE_CHARS - overhead) and texts[-2] == "a short text"


def test_csv_unclosed_quote_is_one_line_and_quoted_names_still_read(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text('"w0,1,2\nw1,3,4\n')
    with pytest.raises(IsotropyValueError) as err:
        read_embeddings(path)
    assert "\n" not in str(err.value) and str(path) in str(err.value)
    path.write_text('"w 0",1,2\n"w,1",3,4\n')
    X, names = read_embeddings(path)
    np.testing.assert_array_equal(X, [[1, 2], [3, 4]])
    assert names == ["w 0", "w,1"]


def test_tsv_quotes_are_text(tmp_path):
    """A .tsv has no quoting (GloVe-derived tables name a row '"'): an unclosed quote is part of its row's name."""
    path = tmp_path / "q.tsv"
    path.write_text('"w0\t1\t2\nw1\t3\t4\n"w 2"\t5\t6\n')
    X, names = read_embeddings(path)
    np.testing.assert_array_equal(X, [[1, 2], [3, 4], [5, 6]])
    assert names == ['"w0', "w1", '"w 2"']


# ------------------------------------------------------------------------------ Parquet text columns
_TEXT_ROWS, _TEXT_LENGTH = 9 * 2**10, 2**13  # one 8 KiB string in each of 9,216 rows: 72 MiB of text


def _one_string_many_rows(pa, rows=_TEXT_ROWS, nested=False):
    """A dictionary-encoded column whose one entry, an 8 KiB string, every row references (stored once)."""
    column = pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, dtype=np.int32)), pa.array(["a" * _TEXT_LENGTH]))
    if nested:  # a list of one string a row
        column = pa.ListArray.from_arrays(pa.array(np.arange(rows + 1, dtype=np.int32)), column)
    return pa.table({"name": column})


@pytest.mark.parametrize("nested", [False, True])
def test_parquet_dictionary_text_bomb_is_counted_as_decoded(tmp_path, nested):
    pytest.importorskip("pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from isotropy.io._archives import parquet_expansion_problem

    path = tmp_path / "text-bomb.parquet"
    pq.write_table(_one_string_many_rows(pa, nested=nested), path, compression="zstd")
    size, column = path.stat().st_size, pq.ParquetFile(path).metadata.row_group(0).column(0)
    assert size < 8192 and column.physical_type == "BYTE_ARRAY" and column.total_uncompressed_size < 2**15
    problem = parquet_expansion_problem(path)  # 8 bytes a value, and the text of each: exactly what decoding makes
    assert problem.startswith(f"its data ({_TEXT_ROWS} rows) expands from {size} to "
                              f"{_TEXT_ROWS * (_TEXT_LENGTH + 8)} bytes (")
    assert "\n" not in problem and "more than 100x above 64 MiB" in problem
    with open(path, "rb") as handle:  # a file object (a shard read from memory) is measured and left where it was
        handle.seek(3)
        assert parquet_expansion_problem(handle) == problem and handle.tell() == 3


def test_parquet_delta_byte_array_text_bomb_is_counted_a_batch_at_a_time(tmp_path):
    pytest.importorskip("pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from isotropy.io._archives import parquet_expansion_problem

    path, block = tmp_path / "delta-bomb.parquet", pa.table({"name": pa.array(["a" * _TEXT_LENGTH] * 2**10)})
    with pq.ParquetWriter(path, block.schema, compression="zstd", use_dictionary=False,
                          column_encoding={"name": "DELTA_BYTE_ARRAY"}) as writer:
        for _ in range(9):  # each value repeats the one before as its prefix: 8 KiB stored once a row group
            writer.write_table(block)
    size = path.stat().st_size
    assert size < 8192 and "DELTA_BYTE_ARRAY" in pq.ParquetFile(path).metadata.row_group(0).column(0).encodings
    problem = parquet_expansion_problem(path)
    counted = int(re.fullmatch(rf"its data \({_TEXT_ROWS} rows\) expands from {size} to at least (\d+) bytes "
                               rf"\(\d+x; isotropy refuses more than 100x above 64 MiB, as a decompression bomb "
                               rf"would\)", problem).group(1))
    assert EXPANSION_FLOOR_BYTES < counted <= _TEXT_ROWS * (_TEXT_LENGTH + 8)  # counting stopped past the cap


def test_parquet_with_short_text_columns_is_not_refused_and_reads(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from isotropy.io._archives import parquet_expansion_problem

    V = np.random.default_rng(4).normal(size=(300, 4))
    frame = pd.DataFrame({"id": [f"id-{i}" for i in range(300)], "v": list(V)})
    frame.to_parquet(tmp_path / "vectors.parquet")
    assert parquet_expansion_problem(tmp_path / "vectors.parquet") is None
    X, names = read_embeddings(tmp_path / "vectors.parquet")
    np.testing.assert_array_equal(X, V)
    assert names == [f"id-{i}" for i in range(300)]
    # 200,000 distinct ids (the dictionary outgrows its page, the rest is plain) or one short word in every row
    # (dictionary-encoded): counted exactly, and allowed
    rows, x = 200_000, np.arange(200_000, dtype=np.float64)
    for name, texts in (("ids", [f"id-{i:06d}" for i in range(rows)]), ("split", ["train"] * rows)):
        pq.write_table(pa.table({name: texts, "x": x}), tmp_path / f"{name}.parquet", write_statistics=False)
        assert parquet_expansion_problem(tmp_path / f"{name}.parquet") is None
        X, names = read_embeddings(tmp_path / f"{name}.parquet")
        np.testing.assert_array_equal(X[:, 0], x)
        assert names == texts
    assert parquet_expansion_problem(tmp_path / "missing.parquet") is None  # no footer: the reader says why
    (tmp_path / "junk.parquet").write_bytes(b"PAR1 not parquet")
    assert parquet_expansion_problem(tmp_path / "junk.parquet") is None


def test_parquet_text_bomb_is_refused_by_the_readers(tmp_path):
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from isotropy.io.shards import read_shards

    path = tmp_path / "text-bomb.parquet"
    table = _one_string_many_rows(pa).append_column("x", pa.array(np.zeros(_TEXT_ROWS)))  # names and a feature
    pq.write_table(table, path, compression="zstd")
    size = path.stat().st_size
    for read in (read_embeddings, lambda p: read_shards(p).compute()):
        with pytest.raises(IsotropyValueError) as err:
            read(path)
        message = str(err.value)
        assert "\n" not in message and str(path) in message and "save the array with np.save" in message
        assert f"its data ({_TEXT_ROWS} rows) expands from {size} to {_TEXT_ROWS * (_TEXT_LENGTH + 16)} bytes" in message


def _sentences(rows: int, seed: int = 0) -> list[str]:
    """``rows`` distinct sentences of 5 to 40 words (about 120 characters), as text columns hold them."""
    words = np.array(["the", "cat", "sat", "on", "mat", "dog", "ran", "far", "away", "blue", "sky", "river", "stone"])
    rng = np.random.default_rng(seed)
    lengths = rng.integers(5, 40, rows)
    picks = np.split(rng.integers(0, len(words), int(lengths.sum())), np.cumsum(lengths)[:-1])
    return [" ".join(words[pick]) + f" #{i}" for i, pick in enumerate(picks)]


def _delta_text_file(pa, pq, path, texts, kind=None):
    """``texts`` as a DELTA_BYTE_ARRAY column (of Arrow type ``kind``) beside a column of numbers."""
    table = pa.table({"text": pa.array(texts, type=kind), "x": np.arange(len(texts), dtype=np.float64)})
    pq.write_table(table, path, use_dictionary=False, column_encoding={"text": "DELTA_BYTE_ARRAY"})
    assert "DELTA_BYTE_ARRAY" in pq.ParquetFile(path).metadata.row_group(0).column(0).encodings
    return path


def test_parquet_delta_text_is_counted_in_batches_sized_from_what_the_cap_allows(tmp_path, monkeypatch):
    """200,000 sentences in one DELTA_BYTE_ARRAY chunk of 21 MB: a batch holds as many values of the chunk's length
    as the bytes left under the cap (100x the file) allow, 45, not as 64 MiB allow (3 rows a batch: a cost that
    grew as the square of the rows, 3 to 8 s for this column, which pyarrow reads in 0.2 s)."""
    pytest.importorskip("pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from isotropy.io import _archives

    rows = 200_000
    path = _delta_text_file(pa, pq, tmp_path / "sentences.parquet", _sentences(rows))
    assert EXPANSION_FLOOR_BYTES // pq.ParquetFile(path).metadata.row_group(0).column(0).total_uncompressed_size < 5
    measure, batches = _archives._arrow_text_bytes, []

    def counted(array):
        batches.append(len(array))
        if len(batches) > rows // 20:  # stops a check that would take seconds (and reads as a bomb there)
            raise AssertionError(f"{len(batches)} batches for {rows} rows")
        return measure(array)

    monkeypatch.setattr(_archives, "_arrow_text_bytes", counted)
    assert _archives.parquet_expansion_problem(path) is None
    assert sum(batches) == rows and len(batches) <= rows // 20


def test_parquet_text_check_needs_no_arrow_type_that_pyarrow_12_lacks(tmp_path, monkeypatch):
    """pyarrow before 16 has no list views or string views: their predicates are looked up, a plain string column
    is measured (it was counted at its worst, 1 GB, and the file refused as a bomb)."""
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from isotropy.io._archives import parquet_expansion_problem

    texts = _sentences(5000)
    path = _delta_text_file(pa, pq, tmp_path / "sentences.parquet", texts)
    with monkeypatch.context() as pyarrow_12:  # pandas needs them to read the file
        for name in ("is_list_view", "is_large_list_view", "is_string_view", "is_binary_view"):
            pyarrow_12.delattr(pa.types, name, raising=False)
        assert parquet_expansion_problem(path) is None
    # past the check, the file is read: sentences beside a column of whole numbers are a file of texts, as in a .csv
    with pytest.raises(ValueError, match=r"its column 'text' holds texts \(.*\) beside 1 numeric column: a file of "
                                         r"texts, not of embeddings"):
        read_embeddings(path)


def test_parquet_text_check_raises_its_own_errors_and_counts_unreadable_pages_at_their_worst(tmp_path, monkeypatch):
    """Only what pyarrow raises on a file it cannot read makes a chunk count its worst case: an error of the check
    itself is raised, not reported as a bomb."""
    pytest.importorskip("pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from isotropy.io import _archives
    from isotropy.io._parquet_pages import _page_header

    path = _delta_text_file(pa, pq, tmp_path / "sentences.parquet", _sentences(5000))
    with monkeypatch.context() as patched:
        patched.setattr(_archives, "_arrow_text_bytes", lambda array: 1 // 0)
        with pytest.raises(ZeroDivisionError):
            _archives.parquet_expansion_problem(path)
    chunk, x = (pq.ParquetFile(path).metadata.row_group(0).column(j) for j in range(2))
    # the text's first page overwritten, its header and the footer intact: pyarrow cannot decode it
    data, start = bytearray(path.read_bytes()), chunk.data_page_offset
    header, _, _, compressed, _ = _page_header(bytes(data[start:start + 1024]))
    data[start + header:start + header + compressed] = b"\xff" * compressed
    path.write_bytes(bytes(data))
    problem = _archives.parquet_expansion_problem(path)
    worst = 5000 * 8 + 5000 * chunk.total_uncompressed_size + max(x.total_uncompressed_size, 5000 * 8)
    assert f"expands from {len(data)} to up to {worst} bytes" in problem
    names = tmp_path / "names.parquet"  # a column name that is not UTF-8: the reader says so
    pq.write_table(pa.table({"é": ["a", "b"]}), names, store_schema=False)
    names.write_bytes(names.read_bytes().replace("é".encode(), b"\xff\xfe"))
    assert _archives.parquet_expansion_problem(names) is None


def test_parquet_text_columns_are_read_by_index_not_by_dotted_name(tmp_path):
    """A column named "a.b" after the field b of a struct a: both are measured, not the first one twice."""
    pytest.importorskip("pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from isotropy.io._archives import parquet_expansion_problem

    path, bomb = tmp_path / "dotted.parquet", _one_string_many_rows(pa).column("name")
    short = pa.StructArray.from_arrays([pa.array(["s"] * _TEXT_ROWS)], names=["b"])
    pq.write_table(pa.table([short, bomb], names=["a", "a.b"]), path, compression="zstd")
    assert [column.path for column in pq.ParquetFile(path).schema] == ["a.b", "a.b"]
    problem = parquet_expansion_problem(path)
    assert problem.startswith(f"its data ({_TEXT_ROWS} rows) expands from {path.stat().st_size} to "
                              f"{_TEXT_ROWS * (8 + 1) + _TEXT_ROWS * (8 + _TEXT_LENGTH)} bytes (")


@pytest.mark.parametrize("kind", ["large_string", "string_view", "json_"])
def test_parquet_text_of_every_arrow_text_type_is_measured(tmp_path, kind):
    """Text that pyarrow reads as large strings, string views (pyarrow 16) or JSON (pyarrow 19, an extension type)
    is measured as text: a legitimate column is allowed (views and JSON were counted at their worst, the file
    refused), a bomb is refused."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from isotropy.io._archives import parquet_expansion_problem

    if not hasattr(pa, kind):
        pytest.skip(f"pyarrow {pa.__version__} has no {kind}")
    texts = [f'"{text}"' for text in _sentences(5000)]  # JSON strings
    assert parquet_expansion_problem(_delta_text_file(pa, pq, tmp_path / "texts.parquet", texts, getattr(pa, kind)())) is None
    pq.write_table(pa.table({"text": pa.array(texts, type=getattr(pa, kind)())}), tmp_path / "dictionary.parquet")
    assert parquet_expansion_problem(tmp_path / "dictionary.parquet") is None
    bomb = _delta_text_file(pa, pq, tmp_path / "bomb.parquet", [f'"{"a" * _TEXT_LENGTH}"'] * _TEXT_ROWS, getattr(pa, kind)())
    assert "to at least" in parquet_expansion_problem(bomb)


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="ab\r\n", max_size=30), limit=st.integers(0, 4), scan=st.sampled_from([1, 2, 3, 7, 2**24]))
def test_longest_line_finds_the_line_re_split_finds(text, limit, scan):
    # \r\n is one break: counted as two, a CRLF file's line numbers came out doubled (a review)
    import re

    from isotropy.io import _encoding

    lines = re.split(r"\r\n|\r|\n", text)
    expected = next(((number, len(line)) for number, line in enumerate(lines, start=1) if len(line) > limit), None)
    previous, _encoding._LINE_SCAN = _encoding._LINE_SCAN, scan
    try:
        got = _encoding.longest_line(text, limit)
    finally:
        _encoding._LINE_SCAN = previous
    assert (got is None) == (expected is None)
    if got is not None:  # chunked: the length so far, past the limit
        assert got[0] == expected[0] and limit < got[1] <= expected[1]
        assert scan < len(text) or got == expected


def test_a_pt_file_of_self_holding_shared_or_deep_lists_is_walked_in_bounded_time(tmp_path):
    """A review: the walk over the dicts and lists of a saved .pt dict (their tensors count, 'b/c') did not remember
    what it had walked: a list holding itself (1.5 KB) grew without end, and a = [a, a] thirty times (1.8 KB) named
    2³⁰ paths to one tensor. Each container is now walked once, and nesting past 64 levels is refused in one line."""
    import torch

    from isotropy.io.labels import read_labels

    T = torch.arange(15.0).reshape(5, 3)
    own = [T]
    own.append(own)
    torch.save({"a": T, "b": own}, tmp_path / "cyc.pt")
    shared = [T]
    for _ in range(30):
        shared = [shared, shared]
    torch.save({"a": shared}, tmp_path / "dag.pt")
    deep = [T]
    for _ in range(100):
        deep = [deep]
    torch.save({"x": deep}, tmp_path / "deep.pt")
    np.testing.assert_array_equal(read_embeddings(tmp_path / "cyc.pt", key="a")[0], T.numpy())
    np.testing.assert_array_equal(read_embeddings(tmp_path / "cyc.pt", key="b/0")[0], T.numpy())
    with pytest.raises(ValueError, match=r"\['a', 'b/0'\]"):  # two tensors: a key names one
        read_embeddings(tmp_path / "cyc.pt")
    np.testing.assert_array_equal(read_embeddings(tmp_path / "dag.pt")[0], T.numpy())  # one container: one name
    for read in (read_embeddings, lambda p: read_labels(p, n_rows=5)):
        with pytest.raises(ValueError) as info:
            read(tmp_path / "deep.pt")
        assert "its dicts and lists are nested more than 64 deep; expected a dict of tensors (nested at most 64 " \
               "deep)." in str(info.value) and "\n" not in str(info.value)
