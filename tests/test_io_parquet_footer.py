"""The Parquet footer as :mod:`isotropy.io._parquet_pages` decodes it, instead of pyarrow's ``ColumnChunkMetaData``.

pyarrow (26) throws an uncaught C++ exception, which aborts the process, when its Python API builds the metadata of a
column chunk from some corrupt footers (a chunk's type that is not its column's, a level histogram of the wrong
size), files that ``pq.read_table`` refuses with a clean ``OSError``. The expansion check decodes the footer itself,
so these files get the reader's one-line error; the decoded fields must be pyarrow's for real files.
"""

from __future__ import annotations

import io
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isotropy.io import _parquet_pages

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("pandas")

_CODECS = {0: "UNCOMPRESSED", 1: "SNAPPY", 2: "GZIP", 4: "BROTLI", 6: "ZSTD"}


def _table(rows: int = 300):
    rng = np.random.default_rng(0)
    return pa.table({
        "x": rng.normal(size=rows),
        "f": pa.array(rng.normal(size=rows).astype(np.float32)),
        "i": pa.array(rng.integers(0, 5, rows).astype(np.int32)),
        "flag": pa.array(rng.integers(0, 2, rows).astype(bool)),
        "word": [f"w{k % 17}" for k in range(rows)],
        "tags": [[f"t{k}", None, "u"] if k % 3 else None for k in range(rows)],
        "nested": [[[k, k + 1], []] for k in range(rows)],
        "point": [{"a": k, "b": f"s{k}"} for k in range(rows)],
        "fixed": pa.array([bytes([k % 256]) * 6 for k in range(rows)], pa.binary(6)),
        "a.b": pa.array(rng.normal(size=rows)),
    })


def _footer(data: bytes) -> bytes:
    length = int.from_bytes(data[-8:-4], "little")
    return data[-8 - length:-8]


@pytest.mark.parametrize("options", [
    {},
    {"compression": "zstd", "use_dictionary": False, "write_statistics": False},
    {"compression": "snappy", "data_page_version": "2.0", "row_group_size": 70},
    {"compression": "gzip", "use_dictionary": ["word"], "data_page_version": "2.0", "data_page_size": 128},
    {"compression": "none", "write_statistics": False, "row_group_size": 100, "write_page_index": True},
    {"compression": "brotli", "use_dictionary": True, "store_schema": False, "write_page_checksum": True},
])
def test_footer_fields_are_pyarrows(tmp_path, options):
    """Every decoded field equals pyarrow's, for files written with various options (codecs, dictionaries or not,
    v1 or v2 pages, several row groups, no statistics, page indexes, nested lists and structs)."""
    path = tmp_path / "t.parquet"
    pq.write_table(_table(), path, **options)
    metadata = pq.ParquetFile(path).metadata
    with _parquet_pages.PageWalk(path, path.stat().st_size) as walk:
        footer = walk.footer()
    assert footer == _parquet_pages.file_metadata(_footer(path.read_bytes()))
    assert footer.num_rows == metadata.num_rows
    assert len(footer.leaves) == metadata.num_columns
    for j, leaf in enumerate(footer.leaves):
        schema = metadata.schema.column(j)
        assert (leaf.path, leaf.physical_type, leaf.max_repetition_level) == \
            (schema.path, schema.physical_type, schema.max_repetition_level)
        if leaf.physical_type == "FIXED_LEN_BYTE_ARRAY":
            assert leaf.type_length == schema.length == 6
    assert any(leaf.max_repetition_level == 2 for leaf in footer.leaves)  # the list of lists
    assert len(footer.row_groups) == metadata.num_row_groups
    if "row_group_size" in options:
        assert len(footer.row_groups) > 1
    for i, group in enumerate(footer.row_groups):
        assert len(group) == metadata.row_group(i).num_columns
        for j, chunk in enumerate(group):
            expected = metadata.row_group(i).column(j)
            for name in ("path_in_schema", "physical_type", "num_values", "total_uncompressed_size",
                         "total_compressed_size", "data_page_offset", "dictionary_page_offset",
                         "has_dictionary_page"):
                assert getattr(chunk, name) == getattr(expected, name), name
            assert _CODECS[chunk.codec] == expected.compression
    if options.get("use_dictionary", True) is True:
        assert any(chunk.has_dictionary_page for group in footer.row_groups for chunk in group)


# The files of the fuzzing that found the aborts: 4 normal float64 columns and a column of names, zstd, statistics
# written; the bytes overwritten in their footers, (offset in the file, byte written, byte pyarrow wrote there).
_ABORTS = {
    # a chunk's type -9 (UNKNOWN, its column DOUBLE): pyarrow aborts reading the chunk's statistics
    "type": [(8313, 17, 10), (9156, 195, 112)],
    # a definition level histogram of 2 levels for a column of 1: pyarrow aborts building the chunk's metadata
    "histogram": [(8148, 11, 2)],
}


def _fuzzed() -> bytes:
    table = pa.table({f"x{i}": np.random.default_rng(i).normal(size=200) for i in range(4)}
                     | {"name": [f"r{i}" for i in range(200)]})
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd", write_statistics=True)
    return buffer.getvalue()


_CHILD = """
import sys
from isotropy.io.embeddings import read_embeddings
try:
    read_embeddings(sys.argv[1])
except Exception as error:
    print(type(error).__name__, error)
"""


@pytest.mark.parametrize("corruption", sorted(_ABORTS))
def test_footers_that_abort_pyarrows_metadata_api_are_one_line_errors(tmp_path, corruption):
    """The check never builds pyarrow's ``ColumnChunkMetaData`` (run in a subprocess: an abort fails the test)."""
    data = bytearray(_fuzzed())
    assert len(data) == 9204  # as pyarrow 26 writes it: the offsets below are its
    for at, byte, written in _ABORTS[corruption]:
        assert data[at] == written
        data[at] = byte
    path = tmp_path / "corrupt.parquet"
    path.write_bytes(bytes(data))
    with pytest.raises(OSError):  # pyarrow refuses it cleanly
        pq.read_table(path)
    run = subprocess.run([sys.executable, "-c", _CHILD, str(path)], check=False, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-500:]
    assert run.stdout.startswith("EmbeddingsReadError ") and run.stdout.count("\n") == 1, run.stdout
    assert "not a readable .parquet file (" in run.stdout


def test_footer_refusals_and_encrypted_footers(tmp_path):
    data = _fuzzed()
    for kind, message in (("short", "has no footer"), ("magic", "does not end in PAR1"),
                          ("long", "a footer of"), ("encrypted", None)):
        changed = {"short": data[-11:], "magic": data[:-1] + b"2",
                   "long": data[:-8] + (len(data)).to_bytes(4, "little") + b"PAR1",
                   "encrypted": data[:-4] + b"PARE"}[kind]
        with _parquet_pages.PageWalk(io.BytesIO(changed), len(changed)) as walk:
            if message is None:
                assert walk.footer() is None
            else:
                with pytest.raises(_parquet_pages.FooterProblem, match=message):
                    walk.footer()
    footer = _footer(data)
    with pytest.raises(_parquet_pages.FooterProblem, match="ends inside a value"):
        _parquet_pages.file_metadata(footer[:-20])
    with pytest.raises(_parquet_pages.FooterProblem, match="required field"):
        _parquet_pages.file_metadata(b"\x00")


_VALID = _footer(_fuzzed())


@settings(max_examples=400, deadline=None, derandomize=True)
@given(flips=st.lists(st.tuples(st.integers(0, len(_VALID) - 1), st.integers(0, 255)), min_size=1, max_size=4),
       cut=st.integers(0, 8))
def test_footer_decoder_raises_only_its_own_errors(flips, cut):
    """Bytes of a footer overwritten (and its end cut off): decoded, or refused with a FooterProblem."""
    data = bytearray(_VALID)
    for at, byte in flips:
        data[at] = byte
    try:
        footer = _parquet_pages.file_metadata(bytes(data[:len(data) - cut]))
    except _parquet_pages.FooterProblem:
        return
    if footer is not None:
        assert all(len(group) == len(footer.leaves) for group in footer.row_groups)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(data=st.binary(max_size=96))
def test_footer_decoder_raises_only_its_own_errors_on_any_bytes(data):
    try:
        _parquet_pages.file_metadata(data)
    except _parquet_pages.FooterProblem:
        pass
