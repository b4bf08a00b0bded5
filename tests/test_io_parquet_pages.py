"""Parquet page headers that declare more than the footer: pyarrow allocates and decompresses what each page's
header declares (``uncompressed_page_size``), whatever the footer says, so the bomb check reads the headers.

Measured with pyarrow 26 before the headers were read: a 31 KB file whose footer declares 32 KB and whose one
page declares, and decompresses to, 300 MiB was read by ``read_embeddings`` at a peak RSS of 423 MiB (a file
written as is: 123 MiB); four such columns, 126 KB, at 725 MiB. Crafted by ``tests/_page_bombs.py``.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from _page_bombs import page_bomb
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from isotropy._utils.validation import IsotropyValueError
from isotropy.io import _archives, _parquet_pages
from isotropy.io.embeddings import read_embeddings

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("pandas")

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
_BOMB = 72 * 2**20  # just above the 64 MiB floor, thousands of times the file


def _refusal(read, path) -> str:
    with pytest.raises(IsotropyValueError) as err:
        read(path)
    message = str(err.value)
    assert "\n" not in message and str(path) in message and "save the array with np.save" in message
    return message


@pytest.mark.parametrize("version", [1, 2])
def test_parquet_pages_declaring_more_than_the_footer_are_refused_by_the_readers(tmp_path, version):
    from isotropy.io.shards import read_shards

    path = tmp_path / "page-bomb.parquet"
    page_bomb(path, _BOMB, version=version)
    size, chunk = path.stat().st_size, pq.ParquetFile(path).metadata.row_group(0).column(0)
    assert size < 2**16 and chunk.total_uncompressed_size < 2**16  # the footer declares 32 KB
    for read in (read_embeddings, lambda p: read_shards(p).compute()):
        message = _refusal(read, path)
        assert f"its data (4096 rows) expands from {size} to {_BOMB} bytes" in message
    with open(path, "rb") as handle:  # a file object is read as well, and left where it was
        handle.seek(3)
        assert f"expands from {size} to {_BOMB} bytes" in _archives.parquet_expansion_problem(handle)
        assert handle.tell() == 3


def test_parquet_pages_of_every_column_are_counted_together(tmp_path):
    path = tmp_path / "page-bombs.parquet"
    page_bomb(path, 40 * 2**20, columns=2)  # each column below the floor, the two above it
    message = _refusal(read_embeddings, path)
    assert f"expands from {path.stat().st_size} to {80 * 2**20} bytes" in message
    page_bomb(path, 30 * 2**20, columns=2)  # and below: read, as zeros (the bomb pages hold zeros)
    X, names = read_embeddings(path)
    assert names is None and X.shape == (4096, 2) and not X.any()


def _walk(path):
    """``[(header bytes, uncompressed_page_size, compressed_page_size), ...]`` of each chunk of the file at ``path``,
    as the check reads them, and the metadata of the chunks."""
    metadata, calls = pq.ParquetFile(path).metadata, []
    decode = _parquet_pages._page_header

    def recorded(data, *grow):
        header = decode(data, *grow)
        calls[-1].append((header[0], header[2], header[3]))
        return header

    chunks = [metadata.row_group(i).column(j) for i in range(metadata.num_row_groups)
              for j in range(metadata.num_columns)]
    with pytest.MonkeyPatch.context() as patched, _parquet_pages.PageWalk(path, path.stat().st_size) as walk:
        patched.setattr(_parquet_pages, "_page_header", recorded)
        for chunk in chunks:
            calls.append([])
            assert walk.declared(chunk) == sum(page[1] for page in calls[-1])
    return calls, chunks


@pytest.mark.parametrize("compression", ["snappy", "zstd", "none"])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [False, True])
def test_parquet_files_of_many_pages_read_unchanged_and_their_headers_add_up_to_the_footer(
        tmp_path, compression, version, dictionary):
    """pyarrow's footer counts each page's header and its bytes: the headers as decoded add up to it exactly."""
    rng = np.random.default_rng(0)
    names, X = [f"w{i}" for i in range(3000)], rng.normal(size=(3000, 3))
    path = tmp_path / "pages.parquet"
    table = pa.table({"word": names, **{f"x{k}": X[:, k] for k in range(3)}})
    pq.write_table(table, path, compression=compression, data_page_version=version, use_dictionary=dictionary,
                   data_page_size=512, write_batch_size=64, row_group_size=1000)
    calls, chunks = _walk(path)
    assert len(chunks) == 12 and all(len(pages) >= 10 for pages in calls)  # many pages in every chunk
    for chunk, pages in zip(chunks, calls):
        assert chunk.has_dictionary_page == dictionary
        assert sum(h + u for h, u, _ in pages) == chunk.total_uncompressed_size
        assert sum(h + c for h, _, c in pages) == chunk.total_compressed_size
    assert _archives.parquet_expansion_problem(path) is None
    read_X, read_names = read_embeddings(path)
    np.testing.assert_array_equal(read_X, X)
    assert read_names == names



@pytest.mark.parametrize("options", [{"compression": "lz4", "write_page_checksum": True},
                                     {"compression": "gzip", "data_page_version": "2.0", "write_page_index": True}])
def test_parquet_vectors_of_many_pages_with_checksums_and_page_indexes_read_unchanged(tmp_path, options):
    """A list column (repetition and definition levels in each page), page CRCs (field 4 of the header), page
    indexes: the headers still add up to the footer, and the vectors read as written."""
    names, X = [f"w{i}" for i in range(2000)], np.random.default_rng(3).normal(size=(2000, 8)).astype(np.float32)
    path = tmp_path / "vectors.parquet"
    table = pa.table({"word": names, "vector": pa.array(list(X), type=pa.list_(pa.float32()))})
    pq.write_table(table, path, data_page_size=1024, write_batch_size=128, **options)
    calls, chunks = _walk(path)
    assert len(calls[0]) >= 5 and len(calls[1]) >= 50  # a dictionary page and data pages; 109 pages of vectors
    for chunk, pages in zip(chunks, calls):
        assert sum(h + u for h, u, _ in pages) == chunk.total_uncompressed_size
        assert sum(h + c for h, _, c in pages) == chunk.total_compressed_size
    read_X, read_names = read_embeddings(path)
    np.testing.assert_array_equal(read_X, X)
    assert read_names == names

@st.composite
def _corruptions(draw):
    """Bytes written over a page header: where (which header, how far in) and what."""
    return draw(st.integers(0, 2**16)), draw(st.integers(0, 64)), draw(st.binary(min_size=1, max_size=8))


@pytest.fixture(scope="module")
def _paged(tmp_path_factory):
    """A small file of many pages (a dictionary page and v2 data pages for the text) and where its headers are."""
    path = tmp_path_factory.mktemp("paged") / "paged.parquet"
    X = np.random.default_rng(1).normal(size=(400, 2))
    table = pa.table({"word": [f"w{i}" for i in range(400)], "x0": X[:, 0], "x1": X[:, 1]})
    pq.write_table(table, path, compression="zstd", data_page_version="2.0", data_page_size=256,
                   write_batch_size=50, column_encoding={"x1": "BYTE_STREAM_SPLIT"}, use_dictionary=["word"])
    calls, chunks = _walk(path)
    headers = []
    for chunk, pages in zip(chunks, calls):
        position = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
        for size, _, compressed in pages:
            headers.append((position, size))
            position += size + compressed
    return path.read_bytes(), headers, X


@SETTINGS
@given(corruption=_corruptions())
@example(corruption=(0, 13, b"\x00"))  # corruptions that pyarrow reads through (found by trying bytes)
@example(corruption=(7, 4, b"\x7f"))
@example(corruption=(7, 12, b"\x00"))
def test_parquet_page_header_corruption_is_one_line_or_a_clean_read(tmp_path, _paged, corruption):
    """A corrupt page header: refused in one line, or read; and never refused by the check when pyarrow reads the
    file (the check decodes the headers as pyarrow does, it must not refuse what pyarrow reads)."""
    valid, headers, X = _paged
    which, offset, data = corruption
    start, size = headers[which % len(headers)]
    corrupt = bytearray(valid)
    at = start + offset % size
    corrupt[at:at + len(data)] = data
    path = tmp_path / "corrupt.parquet"
    path.write_bytes(bytes(corrupt))
    problem = _archives.parquet_expansion_problem(path)
    assert problem is None or ("\n" not in problem and len(problem) < 400)
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError):
        table = None
    if table is not None:
        assert problem is None
    try:
        read_X, _ = read_embeddings(path)
    except IsotropyValueError as error:
        assert "\n" not in str(error) and table is None
    else:
        assert read_X.shape == X.shape


@settings(max_examples=300, deadline=None, derandomize=True)
@given(data=st.binary(max_size=64))
def test_page_header_decoder_raises_only_its_own_errors(data):
    try:
        size, *_ = _parquet_pages._page_header(data)
    except (_parquet_pages._Short, _parquet_pages._ThriftError):
        return
    assert 0 < size <= len(data)


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(page_bytes=st.integers(4096 * 8, 100 * 2**20), columns=st.integers(1, 3), version=st.sampled_from([1, 2]))
def test_parquet_page_bombs_are_refused_exactly_when_their_pages_pass_the_cap(tmp_path, page_bytes, columns, version):
    """Whatever the pages declare beyond the footer (pages of at least the 4096 values their rows hold): refused by
    the check, in its words, or read as written."""
    path = tmp_path / "bomb.parquet"
    page_bomb(path, page_bytes, columns=columns, version=version)
    footer = pq.ParquetFile(path).metadata.row_group(0).column(0).total_uncompressed_size
    decoded = max(page_bytes, footer) * columns
    if decoded > max(_archives.EXPANSION_FLOOR_BYTES, _archives.MAX_EXPANSION * path.stat().st_size):
        assert f"expands from {path.stat().st_size} to {decoded} bytes" in _refusal(read_embeddings, path)
    else:
        X, _ = read_embeddings(path)
        assert X.shape == (4096, columns) and not X.any()


def test_parquet_page_header_fields_are_read_as_pyarrow_reads_them(tmp_path):
    """A field written twice (the second in Thrift's long form, by field id): pyarrow allocates the last value, and
    so does the check count it, whichever of the two is the bomb."""
    path = tmp_path / "repeated.parquet"
    page_bomb(path, _BOMB, declared=[2**15, _BOMB])
    assert f"to {_BOMB} bytes" in _refusal(read_embeddings, path)
    page_bomb(path, 2**20, declared=[2**30, 2**20])  # 1 GiB declared first, then the page's real size
    assert _archives.parquet_expansion_problem(path) is None
    X, _ = read_embeddings(path)  # pyarrow reads it (1 GiB would not decompress): the last value is the one
    assert X.shape == (4096, 1) and not X.any()


def test_parquet_page_header_decoder_skips_what_it_does_not_need(tmp_path):
    from _page_bombs import thrift_struct

    statistics = bytes([0x18, 3]) + b"abc" + bytes([0x19, 0x35, 2, 4, 6]) + bytes([0x1C, 0x11, 0x00]) + b"\x00"
    header = thrift_struct([(1, 0), (2, 100), (3, 50)])[:-1] + bytes([0x2C]) + thrift_struct([(1, 7)])[:-1] \
        + bytes([0x0C, 0x0A]) + statistics + b"\x00" + b"\x00"  # field 5, then a binary, an i32 list, a struct
    assert _parquet_pages._page_header(header + b"page bytes") == (len(header), 0, 100, 50, 7)
    for cut in range(len(header)):  # a header cut anywhere asks for more bytes
        with pytest.raises(_parquet_pages._Short):
            _parquet_pages._page_header(header[:cut])
    long = b"\x15" + b"\x80" * 9 + b"\x00" + b"\x15\x02\x15\x04\x00"  # field 1, an i32 in ten bytes: read
    assert _parquet_pages._page_header(long) == (len(long), 0, 1, 2, 0)
    with pytest.raises(_parquet_pages._ThriftError, match="more than 10 bytes"):
        _parquet_pages._page_header(b"\x15" + b"\x80" * 10 + b"\x00")
    with pytest.raises(_parquet_pages._ThriftError, match="required field"):
        _parquet_pages._page_header(bytes([0x18, 1, 0x41]) + thrift_struct([(3, 1)]))  # field 2 a binary: skipped
    nested = b"\x1c" * 70 + b"\x00" * 71  # structs in structs, 70 deep
    with pytest.raises(_parquet_pages._ThriftError, match="nested too deeply"):
        _parquet_pages._page_header(nested)


def test_parquet_unreadable_page_headers_and_too_many_pages_are_refused_in_one_line(tmp_path, monkeypatch):
    path = tmp_path / "pages.parquet"
    X = np.random.default_rng(2).normal(size=(2000, 2))
    pq.write_table(pa.table({"x0": X[:, 0], "x1": X[:, 1]}), path, data_page_size=512, write_batch_size=64)
    start = pq.ParquetFile(path).metadata.row_group(0).column(1).data_page_offset
    with monkeypatch.context() as patched:  # a budget of no pages at all
        patched.setattr(_parquet_pages, "_COUNTED_PAGES", 0)
        patched.setattr(_parquet_pages, "_COUNTED_PAGE_BYTES", 2**40)
        assert "more pages than isotropy checks" in _refusal(read_embeddings, path)
    data = bytearray(path.read_bytes())
    data[start] = 0xFF  # field 15 of type 15, which Thrift does not have
    path.write_bytes(bytes(data))
    from isotropy.io.embeddings import _EXPECTED
    from isotropy.io.shards import read_shards

    for read in (read_embeddings, lambda p: read_shards(p).compute()):  # worded as a file pyarrow cannot read
        with pytest.raises(IsotropyValueError) as err:
            read(path)
        assert str(err.value) == (f"Cannot read embeddings from {str(path)!r}: not a readable .parquet file (column "
                                  f"'x1' of row group 0: the page header at byte {start} cannot be read (an unknown "
                                  f"type 15)); expected {_EXPECTED}.")


def test_parquet_page_walk_refuses_what_pyarrow_refuses():
    """Chunks that the footer places outside the file, pages of negative size or that run past their chunk."""
    from types import SimpleNamespace

    from _page_bombs import thrift_struct

    def column(start, length, values=10):
        return SimpleNamespace(data_page_offset=start, has_dictionary_page=False, dictionary_page_offset=None,
                               total_compressed_size=length, num_values=values)

    page = thrift_struct([(1, 0), (2, 100), (3, 20), (5, [(1, 10)])])
    data = io.BytesIO(page + b"x" * 20 + b"tail")
    size = len(data.getvalue())
    with _parquet_pages.PageWalk(data, size) as walk:
        assert walk.declared(column(0, len(page) + 20)) == 100
        assert walk.declared(column(0, len(page) + 20, values=0)) == 0  # pyarrow reads no page
        with pytest.raises(_parquet_pages.PageProblem, match="at bytes 0 to 1000 of a file"):
            walk.declared(column(0, 1000))
    for page, match in ((thrift_struct([(1, 0), (2, -1), (3, 20)]), "negative size"),
                        (thrift_struct([(1, 0), (2, 100), (3, 200)]), "runs past"),
                        (thrift_struct([(1, 0), (2, 100), (3, 200)])[:-1], "cut short")):
        with _parquet_pages.PageWalk(io.BytesIO(page), len(page)) as walk, \
                pytest.raises(_parquet_pages.PageProblem, match=match):
            walk.declared(column(0, len(page)))


class _CountedReads(io.BytesIO):
    read_bytes = 0

    def read(self, size=-1):
        data = super().read(size)
        self.read_bytes += len(data)
        return data


def test_parquet_page_header_lists_longer_than_pyarrow_reads_are_refused_unread():
    """Thrift in pyarrow reads a list of a million items at most (``thrift_container_size_limit``): a header with a
    longer one is refused from its first bytes, not decoded (a 4 MiB header of a list of 4 Mi items was decoded,
    again at each doubling of the bytes read, in 12 s); a long list within the limit is skipped with numpy."""
    from types import SimpleNamespace

    from _page_bombs import i32_list_field, thrift_struct

    for items, refused in ((4 * 2**20, True), (10**6, False)):
        page = thrift_struct([(1, 0), (2, 100), (3, 20), (5, [(1, 10)])])[:-1] + i32_list_field(9, items) + b"\0"
        data = _CountedReads(page + b"x" * 20)
        column = SimpleNamespace(data_page_offset=0, has_dictionary_page=False, dictionary_page_offset=None,
                                 total_compressed_size=len(page) + 20, num_values=10)
        with _parquet_pages.PageWalk(data, len(page) + 20) as walk:
            if refused:
                with pytest.raises(_parquet_pages.PageProblem) as problem:
                    walk.declared(column)
                assert str(problem.value) == (f"the page header at byte 0 cannot be read (a list of {items} items, "
                                              f"more than the 1000000 that pyarrow reads)")
                assert data.read_bytes == 256  # the first read only
            else:
                assert walk.declared(column) == 100
                assert data.read_bytes < 4 * len(page)  # each read from the header's start, at least twice longer


def test_parquet_files_whose_page_header_holds_a_list_are_read_exactly_as_pyarrow_reads_them(tmp_path):
    """A million items in a list in a page header: pyarrow reads the file, and the check lets it through; one more:
    pyarrow cannot ("Exceeded size limit"), and the file is refused as unreadable."""
    from _page_bombs import i32_list_field

    path = tmp_path / "listed.parquet"
    page_bomb(path, 140_000 * 8, rows=140_000, extra=i32_list_field(9, 10**6))
    assert _archives.parquet_expansion_problem(path) is None
    assert pq.read_table(path).num_rows == 140_000
    page_bomb(path, 140_000 * 8, rows=140_000, extra=i32_list_field(9, 10**6 + 1))
    with pytest.raises(OSError, match="Exceeded size limit"):
        pq.read_table(path)
    assert _archives.parquet_expansion_problem(path) == (
        "column 'x0' of row group 0: the page header at byte 4 cannot be read (a list of 1000001 items, more than "
        "the 1000000 that pyarrow reads)")
