"""How far a compressed file may expand when read: one rule for ``.npz``, ``.pt`` and ``.parquet``.

A few megabytes of deflate, zstd or run-length encoding can decode to gigabytes (a "bomb"). Every
reader of a compressed container asks :func:`expansion_problem` before decoding, with the sizes the
container's own metadata declares (a zip member's ``file_size``, which zipfile and torch's reader
both enforce while extracting; a Parquet file's row and value counts), and refuses in one line.

A Parquet text column is the exception: its metadata does not bound what it decodes to. A
dictionary-encoded column of one long string referenced by every row, or a ``DELTA_BYTE_ARRAY``
column whose every value repeats the one before as its prefix, stores that string once and
decodes it once per row (a 1 KB file, gigabytes of text). :func:`parquet_expansion_problem`
therefore measures the text that such columns really decode to, without decoding it: see there.

The cap: more than :data:`MAX_EXPANSION` times the compressed size, once the decoded size is above
:data:`EXPANSION_FLOOR_BYTES`. Embeddings are floats, and float data barely compresses: real
vectors shrink by 1.1-1.5x under deflate or zstd, quantised or low-precision ones by a few times,
so 100x is far beyond any real matrix (the bombs found expand 1,000x-4,000x). Below 64 MiB (the
size of one chunk read by :mod:`isotropy.io.shards`) any expansion is allowed, so small arrays of
zeros or constants, which do compress 1,000x, still read; past it the memory at stake is real.
"""

from __future__ import annotations

import os
import zipfile

__all__ = ["EXPANSION_FLOOR_BYTES", "MAX_EXPANSION", "expansion_problem", "parquet_expansion_problem",
           "zip_expansion_problem"]

MAX_EXPANSION = 100
EXPANSION_FLOOR_BYTES = 64 * 2**20


def expansion_problem(what: str, decoded: int, stored: int, *, bound: str = "") -> str | None:
    """Why ``what``, ``stored`` bytes that decode to ``decoded`` bytes, is refused; ``None`` when it is not.

    ``bound``: ``"at least"`` when ``decoded`` is where counting stopped, past the cap; ``"up to"`` when it is a
    worst case; ``""`` when it is the decoded size.
    """
    if decoded <= EXPANSION_FLOOR_BYTES or decoded <= MAX_EXPANSION * max(stored, 1):
        return None
    return (f"{what} expands from {stored} to {bound + ' ' if bound else ''}{decoded} bytes "
            f"({decoded // max(stored, 1)}x; isotropy refuses more than {MAX_EXPANSION}x above "
            f"{EXPANSION_FLOOR_BYTES // 2**20} MiB, as a decompression bomb would)")


def zip_expansion_problem(path: str | os.PathLike) -> str | None:
    """Why the zip archive at ``path`` would expand too far when read, from its directory alone; ``None`` if not.

    Each member is checked against its compressed size, and all members together against the size
    of the file. A file that is not a zip archive (a legacy ``torch.save`` pickle) or whose
    directory cannot be read gives ``None``: its reader reports it as before.
    """
    try:
        if not zipfile.is_zipfile(path):
            return None
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
        size = os.path.getsize(path)
    except (OSError, zipfile.BadZipFile, ValueError, EOFError, TypeError):  # TypeError: not a path
        return None
    for info in infos:
        problem = expansion_problem(f"member {info.filename!r}", info.file_size, info.compress_size)
        if problem is not None:
            return problem
    return expansion_problem(f"its {len(infos)} members", sum(info.file_size for info in infos), size)


# bytes per value once decoded, by Parquet physical type (BYTE_ARRAY: at least a pointer per value; the text
# itself is measured by _parquet_text_bytes)
_PARQUET_WIDTHS = {"BOOLEAN": 1, "INT32": 4, "INT64": 8, "INT96": 12, "FLOAT": 4, "DOUBLE": 8, "BYTE_ARRAY": 8}


def _stored_size(source) -> int:
    if hasattr(source, "seek"):  # a binary file object (isotropy.io.shards reads a shard's first row from memory)
        return source.seek(0, os.SEEK_END)
    return os.path.getsize(source)


def _unreadable() -> tuple[type[BaseException], ...]:
    """What pyarrow raises on a file it cannot read: a corrupt footer or page (``OSError``, ``ArrowInvalid``), an
    encoding it cannot decode that way (``ArrowNotImplementedError``), a column name that is not UTF-8
    (``UnicodeDecodeError``). Anything else is a bug here, and is not taken for a property of the file."""
    import pyarrow as pa

    return pa.ArrowException, OSError, UnicodeDecodeError


def parquet_expansion_problem(source) -> str | None:
    """Why the Parquet file ``source`` would expand too far when read; ``None`` if not.

    Parameters
    ----------
    source : path-like or binary file object
        The file; a file object is left at the position it had.

    Returns
    -------
    str or None
        The reason, for the reader's one-line error; ``None`` when the file may be read, and when
        its footer cannot be read (the reader then says what is wrong with the file).

    Notes
    -----
    First from the footer alone: each column chunk counts at least its number of values times the
    width of its type (dictionary and run-length encoding make ``total_uncompressed_size`` small
    too: 2**27 float64 zeros take 260 KB), BYTE_ARRAY values 8 bytes each.

    Then the text of every BYTE_ARRAY chunk, which the footer does not bound: a dictionary page
    holding one long string that every row references, or ``DELTA_BYTE_ARRAY`` values that each
    repeat the one before as a prefix, decode to the string's length times the number of rows.
    The column encodings that the footer lists are not trusted (the pages say how they are
    encoded), so every BYTE_ARRAY chunk is measured, found by its index (two columns may have
    one dotted name: a column ``"a.b"`` and the field ``b`` of a struct ``a``):

    * read as an Arrow dictionary (what a dictionary page holds, plus one int32 index per value:
      memory within the footer's sizes, already checked above), its decoded size is the sum of
      the lengths of the entries the indices reference, computed without building the strings;
    * pages that cannot be read as a dictionary (``DELTA_BYTE_ARRAY``) are decoded a batch at a
      time, counting stops past the cap. No value is longer than the chunk's uncompressed bytes
      (a value repeats at most the one before and adds bytes of the page), so a batch of as many
      values as fit, at that length, in the bytes the cap still allows (64 MiB at least, 2**16
      values at most) takes no more memory than a file within the cap does when read. A column
      takes about ``rows * uncompressed / (100 * stored)`` batches: as many as it has rows over
      100 times its compression ratio, a cost that grows with the rows, not with their square;
    * a nested chunk (a list of strings) that cannot be read as a dictionary, or a chunk that
      cannot be read at all, counts its worst case: every value as long as the chunk's
      uncompressed bytes.

    The reader never needs more than one text column (the row names), but it decodes every column
    of the file, so every text column is counted, not only that one.
    """
    import pyarrow.parquet as pq

    start = source.tell() if hasattr(source, "tell") else None
    try:
        try:
            with pq.ParquetFile(source) as handle:
                metadata = handle.metadata
            stored = _stored_size(source)
        except _unreadable():  # a corrupt footer: the reader says what is wrong
            return None
        what = f"its data ({metadata.num_rows} rows)"
        decoded, texts = 0, []
        try:
            pages = _PageWalk(source, stored)
        except OSError:  # the file went away after its footer was read: the reader says so
            return None
        with pages:
            for i in range(metadata.num_row_groups):
                group = metadata.row_group(i)
                for j in range(group.num_columns):
                    column, schema = group.column(j), metadata.schema.column(j)
                    try:
                        uncompressed = max(column.total_uncompressed_size, pages.declared(column))
                    except _PageProblem as problem:
                        return f"column {column.path_in_schema!r} of row group {i}: {problem}"
                    width = _PARQUET_WIDTHS.get(column.physical_type) or max(1, schema.length or 1)
                    counted = max(uncompressed, column.num_values * width)
                    decoded += counted
                    if column.physical_type == "BYTE_ARRAY":
                        texts.append((i, j, column, schema.max_repetition_level > 0, counted, uncompressed))
        problem = expansion_problem(what, decoded, stored)
        if problem is not None or not texts:
            return problem
        cap = max(EXPANSION_FLOOR_BYTES, MAX_EXPANSION * max(stored, 1))
        for i, j, column, nested, counted, uncompressed in texts:
            pointers = 8 * column.num_values
            # text past `limit` bytes takes the total past the cap: no need to count further
            text, bound = _parquet_text_bytes(source, metadata, i, j, column, nested, uncompressed,
                                              limit=cap - decoded + counted - pointers)
            decoded += max(0, pointers + text - counted)
            if decoded > cap:
                return expansion_problem(what, decoded, stored, bound=bound)
        return None
    finally:
        if start is not None:
            source.seek(start)


def _parquet_text_bytes(source, metadata, group: int, index: int, column, nested: bool, uncompressed: int, *,
                        limit: int) -> tuple[int, str]:
    """The bytes of text the BYTE_ARRAY column ``index`` (a leaf of the schema) of row group ``group`` decodes to,
    and how they bound it; ``column``: its chunk's metadata, ``uncompressed``: the bytes its pages decompress to.

    ``(n, "")``: exactly ``n``; ``(n, "at least")``: counting stopped at ``n``, past ``limit``; ``(n, "up to")``:
    a worst case, the chunk not measured (see :func:`parquet_expansion_problem`).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    chunk = None
    try:
        with pq.ParquetFile(source, metadata=metadata, read_dictionary=[index]) as handle:
            # a type read densely all the same (JSON, an extension type of pyarrow 19; a decimal) is read below, a
            # batch at a time: the whole chunk at once could be the bomb
            if _reads_as_dictionary(handle.schema_arrow, index, metadata.num_columns):
                chunk = handle.reader.read_row_group(group, column_indices=[index], use_threads=False).column(0)
    except _unreadable():  # pyarrow reads DELTA_BYTE_ARRAY pages densely only: below
        pass
    if chunk is not None:
        try:
            return _arrow_text_bytes(chunk), ""
        except pa.ArrowIndexError:  # an index past the dictionary (pyarrow reads them unchecked): a corrupt page
            pass
    longest = max(uncompressed, 1)  # no value is longer than the bytes of its chunk
    if nested:  # a row may hold every value of the chunk: counted at its worst
        return column.num_values * longest, "up to"
    # a row is one value: a batch of at most max(64 MiB, limit) bytes of text, within what the cap allows anyway
    batch_size = max(1, min(2**16, max(EXPANSION_FLOOR_BYTES, limit) // longest))
    total = 0
    try:
        with pq.ParquetFile(source, metadata=metadata) as handle:
            for batch in handle.reader.iter_batches(batch_size, [group], column_indices=[index], use_threads=False):
                total += _arrow_text_bytes(batch.column(0))
                if total > limit:
                    return total, "at least"
    except _unreadable():  # counted at its worst, the reader says why
        return column.num_values * longest, "up to"
    return total, ""


def _reads_as_dictionary(schema, index: int, leaves: int) -> bool:
    """Whether pyarrow, reading with ``schema`` (its Arrow schema for the file), reads leaf ``index`` of the file's
    ``leaves`` as a dictionary."""
    types = [leaf for field in schema for leaf in _leaf_types(field.type)]
    return len(types) == leaves and _has_type(types[index], "is_dictionary")


def _leaf_types(kind) -> list:
    """The Arrow types of the Parquet leaves that a field of type ``kind`` is read from, in the schema's order."""
    import pyarrow as pa

    if isinstance(kind, pa.BaseExtensionType):
        return _leaf_types(kind.storage_type)
    if _has_type(kind, "is_struct"):
        return [leaf for i in range(kind.num_fields) for leaf in _leaf_types(kind.field(i).type)]
    if _has_type(kind, "is_map"):
        return _leaf_types(kind.key_type) + _leaf_types(kind.item_type)
    if _has_type(kind, "is_list", "is_large_list", "is_fixed_size_list", "is_list_view", "is_large_list_view"):
        return _leaf_types(kind.value_type)
    return [kind]


def _has_type(kind, *predicates: str) -> bool:
    """Whether ``kind`` passes one of the ``pyarrow.types`` predicates named; one that this pyarrow lacks
    (``is_list_view``, ``is_string_view``: pyarrow 16) is false, as no array of its type can be made."""
    from pyarrow import types

    return any(getattr(types, name, lambda _: False)(kind) for name in predicates)


def _arrow_text_bytes(array) -> int:
    """Bytes of the strings (or binary values) that ``array`` holds once every dictionary index is resolved."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(array, pa.ChunkedArray):
        return sum(_arrow_text_bytes(chunk) for chunk in array.chunks)
    kind = array.type
    if _has_type(kind, "is_string", "is_large_string", "is_binary", "is_large_binary"):
        return int(pc.sum(pc.binary_length(array)).as_py() or 0) if len(array) else 0
    if _has_type(kind, "is_string_view", "is_binary_view"):  # binary_length has no kernel for views
        return _arrow_text_bytes(array.cast(pa.large_binary()))
    if _has_type(kind, "is_dictionary"):
        values = array.dictionary
        if _has_type(values.type, "is_string_view", "is_binary_view"):
            values = values.cast(pa.large_binary())
        if not _has_type(values.type, "is_string", "is_large_string", "is_binary", "is_large_binary"):
            return _arrow_text_bytes(array.dictionary_decode())  # not text (a decimal): as wide as its type
        return int(pc.sum(pc.take(pc.binary_length(values), array.indices)).as_py() or 0) if len(values) else 0
    if isinstance(array, pa.ExtensionArray):  # JSON text (arrow.json): its storage
        return _arrow_text_bytes(array.storage)
    if _has_type(kind, "is_list", "is_large_list", "is_fixed_size_list", "is_list_view", "is_large_list_view",
                 "is_map"):
        return _arrow_text_bytes(array.flatten())
    if _has_type(kind, "is_struct"):
        return sum(_arrow_text_bytes(field) for field in array.flatten())
    return array.nbytes  # a type of fixed width (a BYTE_ARRAY decimal): the bytes it takes


# The page headers of a column chunk. pyarrow exposes none of them (its ColumnChunkMetaData is the footer's), so
# they are decoded here: a Thrift compact-protocol reader of what a PageHeader needs, the rest skipped.
_PAGE_HEADER_MAX = 16 * 2**20  # pyarrow's max_page_header_size: a longer header is one it cannot read either
_PARQUET_816_PADDING = 100  # pyarrow reads up to 100 bytes past a chunk written by parquet-mr before 1.2.9
_THRIFT_DEPTH = 64  # Thrift's own recursion limit
_COUNTED_PAGES, _COUNTED_PAGE_BYTES = 2**16, 64  # at least 65,536 pages, or one per 64 bytes of the file


class _PageProblem(Exception):
    """Why the pages of a column chunk cannot all be checked: its message is the reason given."""


class _Short(Exception):
    """The bytes read end inside the page header: read more of them."""


class _PageWalk:
    """Reads the page headers of the column chunks of one Parquet file (a path or a binary file object), within a
    budget of pages and header bytes that grows with the file's size (see :meth:`declared`)."""

    def __init__(self, source, stored: int):
        self._handle = source if hasattr(source, "read") else open(source, "rb")  # noqa: SIM115
        self._owned = self._handle is not source
        self._stored = stored
        self._pages = _COUNTED_PAGES + stored // _COUNTED_PAGE_BYTES
        self._bytes = 2**20 + stored  # header bytes decoded, in all

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        if self._owned:
            self._handle.close()

    def declared(self, column) -> int:
        """The bytes that the pages of the chunk ``column`` (its footer metadata) declare they decompress to.

        The pages are walked as pyarrow walks them: from the dictionary page (if the footer places one before the
        data pages) over the chunk's ``total_compressed_size`` bytes, until the data pages hold the footer's
        ``num_values``; each page counts its header's ``uncompressed_page_size``, which is what pyarrow allocates
        and decompresses to, whatever the footer says. A header that cannot be decoded, a negative size or count, a
        page that runs past its chunk: pyarrow cannot read them either, but a header this reader could not decode
        is one it cannot vouch for, so :class:`_PageProblem` is raised (the file is refused) rather than the chunk
        let through unchecked. More pages or header bytes than the budget (non-overlapping chunks of real files
        stay far within it; chunks that the footer overlaps would be walked again and again): :class:`_PageProblem`.
        """
        start = column.data_page_offset
        if column.has_dictionary_page and 0 < (column.dictionary_page_offset or 0) < start:
            start = column.dictionary_page_offset
        length = column.total_compressed_size
        if start < 0 or length < 0 or start + length > self._stored:
            raise _PageProblem(f"the footer places its pages at bytes {start} to {start + length} of a file of "
                               f"{self._stored} bytes (a corrupt file)")
        end = min(self._stored, start + length + _PARQUET_816_PADDING)
        position, seen, total = start, 0, 0
        while seen < column.num_values and position < end:
            self._pages -= 1
            if self._pages < 0:
                raise _PageProblem(f"the file's columns hold more pages than isotropy checks in a file of "
                                   f"{self._stored} bytes ({_COUNTED_PAGES}, and one more per "
                                   f"{_COUNTED_PAGE_BYTES} bytes)")
            size, kind, uncompressed, compressed, values = self._header(position, end)
            if min(uncompressed, compressed, values) < 0:
                raise _PageProblem(f"the page header at byte {position} declares a negative size or count "
                                   f"(a corrupt file)")
            position += size + compressed
            if position > end:
                raise _PageProblem(f"the page at byte {position - size - compressed} runs past the bytes of its "
                                   f"column (a corrupt file)")
            total += uncompressed
            if kind in (0, 3):  # DATA_PAGE, DATA_PAGE_V2: pyarrow stops once they hold the chunk's values
                seen += values
        return total

    def _header(self, position: int, end: int) -> tuple[int, int, int, int, int]:
        """``(header bytes, page type, uncompressed_page_size, compressed_page_size, num_values)`` of the page
        header at ``position``, read 256 bytes at first, then twice as many at a time (as pyarrow does)."""
        wanted, most = 256, min(end - position, _PAGE_HEADER_MAX)
        while True:
            self._handle.seek(position)
            data = self._handle.read(min(wanted, most))
            try:
                header = _page_header(data)
            except _Short:
                if len(data) < min(wanted, most) or wanted >= most:
                    raise _PageProblem(f"the page header at byte {position} is cut short, so what the page "
                                       f"decompresses to cannot be checked (a corrupt file)") from None
                wanted *= 2
                continue
            except _ThriftError as error:
                raise _PageProblem(f"the page header at byte {position} cannot be read ({error}), so what the "
                                   f"page decompresses to cannot be checked (a corrupt file)") from None
            self._bytes -= header[0]
            if self._bytes < 0:
                raise _PageProblem(f"the file's page headers take more bytes than isotropy checks in a file of "
                                   f"{self._stored} bytes (1 MiB more than the file)")
            return header


class _ThriftError(Exception):
    """Bytes that are not a Thrift compact-protocol struct."""


def _page_header(data: bytes) -> tuple[int, int, int, int, int]:
    """``(bytes, type, uncompressed_page_size, compressed_page_size, num_values)`` of the ``PageHeader`` that
    ``data`` starts with; ``num_values`` is that of its ``data_page_header`` (field 5) or ``data_page_header_v2``
    (field 8), 0 without one. Read as Thrift's generated code reads it: a field of another type than its own is
    skipped, a repeated field's last value is kept; the three required fields must be present."""
    cursor = _Thrift(data)
    fields = cursor.struct({1: 5, 2: 5, 3: 5, 5: 12, 8: 12}, 1)
    if not {1, 2, 3} <= fields.keys():
        raise _ThriftError("a required field is missing")
    kind = fields[1]
    page = fields.get(5 if kind == 0 else 8 if kind == 3 else -1, {})
    return cursor.position, kind, fields[2], fields[3], page.get(1, 0)


class _Thrift:
    """A cursor over ``data``, read in Thrift's compact protocol as Thrift's C++ library (pyarrow's) reads it."""

    def __init__(self, data: bytes):
        self.data, self.position = data, 0

    def take(self, n: int) -> int:
        """Skip ``n`` bytes; the position they start at."""
        if self.position + n > len(self.data):
            raise _Short
        self.position += n
        return self.position - n

    def varint(self) -> int:
        value = 0
        for shift in range(0, 70, 7):  # at most 10 bytes, as Thrift reads them
            byte = self.data[self.take(1)]
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value & (2**64 - 1)
        raise _ThriftError("a variable-length integer of more than 10 bytes")

    def i32(self) -> int:
        value = self.varint() & 0xFFFFFFFF  # Thrift truncates an i32 (and a field id, an i16) to its width
        return (value >> 1) ^ -(value & 1)

    def size(self) -> int:
        size = self.varint() & 0xFFFFFFFF  # an i32, not zigzag-encoded
        if size >= 2**31:
            raise _ThriftError("a negative size")
        return size

    def struct(self, wanted: dict[int, int], depth: int) -> dict[int, object]:
        """Read a struct; the values of the fields ``wanted`` (field id: compact type, 5 an i32, 12 a struct, of
        whose fields the i32 field 1 is kept), if of that type; other fields skipped."""
        if depth > _THRIFT_DEPTH:
            raise _ThriftError("structs nested too deeply")
        fields, last = {}, 0
        while True:
            byte = self.data[self.take(1)]
            kind = byte & 0x0F
            if kind == 0:  # STOP
                return fields
            field = last + (byte >> 4) if byte >> 4 else self.i32()
            last = (field + 2**15) % 2**16 - 2**15  # an i16
            if wanted.get(last) != kind:
                self.skip(kind, depth, in_struct=True)
            elif kind == 5:
                fields[last] = self.i32()
            else:
                fields[last] = self.struct({1: 5}, depth + 1)

    def skip(self, kind: int, depth: int, *, in_struct: bool = False) -> None:
        if kind in (1, 2):  # a bool: in the field's type in a struct, a byte in a list, set or map
            self.take(0 if in_struct else 1)
        elif kind == 3:  # a byte
            self.take(1)
        elif kind in (4, 5, 6):  # i16, i32, i64
            self.varint()
        elif kind == 7:  # a double
            self.take(8)
        elif kind == 8:  # binary
            self.take(self.size())
        elif kind in (9, 10):  # list, set
            head = self.data[self.take(1)]
            count = head >> 4 if head >> 4 != 15 else self.size()
            self._skip_items(count, [head & 0x0F], depth)
        elif kind == 11:  # map
            count = self.size()
            if count:
                head = self.data[self.take(1)]
                self._skip_items(count, [head >> 4, head & 0x0F], depth)
        elif kind == 12:
            self.struct({}, depth + 1)
        elif kind == 13:  # a UUID (Thrift 0.19)
            self.take(16)
        else:
            raise _ThriftError(f"an unknown type {kind}")

    def _skip_items(self, count: int, kinds: list[int], depth: int) -> None:
        if depth + 1 > _THRIFT_DEPTH:
            raise _ThriftError("containers nested too deeply")
        if all(kind in (1, 2, 3) for kind in kinds):  # bytes, bools: one byte each
            self.take(count * len(kinds))
            return
        for _ in range(count):  # every item takes a byte at least: `count` is bounded by the bytes read
            for kind in kinds:
                self.skip(kind, depth + 1)
