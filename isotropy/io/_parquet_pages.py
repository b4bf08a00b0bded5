"""The footer and page headers of a Parquet file: its column chunks, and what each page declares it decompresses to.

pyarrow allocates and decompresses each page to the ``uncompressed_page_size`` of its own header (a Thrift
``PageHeader``, compact protocol), whatever the file's footer says, and exposes none of these headers (its
``ColumnChunkMetaData`` is the footer's). So they are decoded here, for
:func:`isotropy.io._archives.parquet_expansion_problem`: :class:`PageWalk` walks the pages of a chunk as pyarrow
does, and a small Thrift reader decodes what a ``PageHeader`` needs, skipping the rest. The footer is decoded here
too (:func:`file_metadata`, :meth:`PageWalk.footer`): pyarrow's Python API for a column chunk's metadata throws
an uncaught C++ exception on some corrupt footers, which aborts the process. Hand-written because no library that
isotropy depends on reads them (pyarrow's Thrift reader is C++ and private).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Chunk", "Footer", "FooterProblem", "Leaf", "PageProblem", "PageWalk"]

_PAGE_HEADER_MAX = 16 * 2**20  # pyarrow's max_page_header_size: a longer header is one it cannot read either
_PARQUET_816_PADDING = 100  # pyarrow reads up to 100 bytes past a chunk written by parquet-mr before 1.2.9
_THRIFT_DEPTH = 64  # Thrift's own recursion limit
# pyarrow's thrift_container_size_limit (kDefaultThriftContainerSizeLimit in Arrow's parquet/properties.h): Thrift
# refuses a list, set or map of more items ("Exceeded size limit"), so a header holding one is one it cannot read
_CONTAINER_LIMIT = 1000 * 1000
_VECTORIZED = 64  # lists of varints this long are skipped with numpy, shorter ones item by item
_COUNTED_PAGES, _COUNTED_PAGE_BYTES = 2**16, 64  # at least 65,536 pages, or one per 64 bytes of the file


class PageProblem(Exception):
    """Why the pages of a column chunk cannot all be checked: its message is the reason given. ``corrupt``: the
    file is one pyarrow cannot read either (a header it cannot decode, a page outside its chunk), rather than one
    past the check's budget."""

    def __init__(self, reason: str, *, corrupt: bool = True):
        super().__init__(reason)
        self.corrupt = corrupt


class FooterProblem(PageProblem):
    """A footer (Thrift ``FileMetaData``) that cannot be decoded, or whose fields contradict each other: a file
    pyarrow cannot read either."""


# Parquet's physical types, by their number in the footer
_PHYSICAL_TYPES = ("BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY")


def _type_name(kind: int) -> str:
    return _PHYSICAL_TYPES[kind] if 0 <= kind < len(_PHYSICAL_TYPES) else "UNKNOWN"


@dataclass(frozen=True, slots=True)
class Leaf:
    """A leaf of the schema (a column as pyarrow counts them): its dotted ``path``, physical type, ``type_length``
    (``FIXED_LEN_BYTE_ARRAY``'s width, as the footer gives it) and maximum repetition level."""

    path: str
    physical_type: str
    type_length: int | None
    max_repetition_level: int


@dataclass(frozen=True, slots=True)
class Chunk:
    """What the footer's ``ColumnMetaData`` says of one column chunk, under the attribute names of pyarrow's
    ``ColumnChunkMetaData`` (``codec``: the footer's number of the compression codec)."""

    path_in_schema: str
    physical_type: str
    codec: int
    num_values: int
    total_uncompressed_size: int
    total_compressed_size: int
    data_page_offset: int
    dictionary_page_offset: int | None

    @property
    def has_dictionary_page(self) -> bool:
        return self.dictionary_page_offset is not None


@dataclass(frozen=True, slots=True)
class Footer:
    """What :func:`isotropy.io._archives.parquet_expansion_problem` needs of a Parquet footer: the rows, the schema's
    leaves in order, and each row group's column chunks (one per leaf)."""

    num_rows: int
    leaves: tuple[Leaf, ...]
    row_groups: tuple[tuple[Chunk, ...], ...]


class _Short(Exception):
    """The bytes read end inside the page header: read more of them, ``needed`` at least (the first argument)."""

    @property
    def needed(self) -> int:
        return self.args[0]


class PageWalk:
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
        is one it cannot vouch for, so :class:`PageProblem` is raised (the file is refused) rather than the chunk
        let through unchecked. More pages or header bytes than the budget (non-overlapping chunks of real files
        stay far within it; chunks that the footer overlaps would be walked again and again): :class:`PageProblem`.
        """
        start = column.data_page_offset
        if column.has_dictionary_page and 0 < (column.dictionary_page_offset or 0) < start:
            start = column.dictionary_page_offset
        length = column.total_compressed_size
        if start < 0 or length < 0 or start + length > self._stored:
            raise PageProblem(f"the footer places its pages at bytes {start} to {start + length} of a file of "
                              f"{self._stored} bytes")
        end = min(self._stored, start + length + _PARQUET_816_PADDING)
        position, seen, total = start, 0, 0
        while seen < column.num_values and position < end:
            self._pages -= 1
            if self._pages < 0:
                raise PageProblem(f"the file's columns hold more pages than isotropy checks in a file of "
                                  f"{self._stored} bytes ({_COUNTED_PAGES}, and one more per "
                                  f"{_COUNTED_PAGE_BYTES} bytes)", corrupt=False)
            size, kind, uncompressed, compressed, values = self._header(position, end)
            if min(uncompressed, compressed, values) < 0:
                raise PageProblem(f"the page header at byte {position} declares a negative size or count")
            position += size + compressed
            if position > end:
                raise PageProblem(f"the page at byte {position - size - compressed} runs past the bytes of its "
                                  f"column")
            total += uncompressed
            if kind in (0, 3):  # DATA_PAGE, DATA_PAGE_V2: pyarrow stops once they hold the chunk's values
                seen += values
        return total

    def footer(self) -> Footer | None:
        """The file's footer, decoded here (:func:`file_metadata`); ``None`` for an encrypted one (``PARE``), which
        is left to pyarrow. A footer that cannot be read or decoded: :class:`FooterProblem`."""
        if self._stored < 12:
            raise FooterProblem(f"a file of {self._stored} bytes has no footer")
        self._handle.seek(self._stored - 8)
        tail = self._handle.read(8)
        if len(tail) < 8 or tail[4:] not in (b"PAR1", b"PARE"):
            raise FooterProblem("the file does not end in PAR1")
        if tail[4:] == b"PARE":
            return None
        length = int.from_bytes(tail[:4], "little")
        if length > self._stored - 12:
            raise FooterProblem(f"a footer of {length} bytes in a file of {self._stored} bytes")
        self._handle.seek(self._stored - 8 - length)
        data = self._handle.read(length)
        if len(data) < length:
            raise FooterProblem("the footer is cut short")
        return file_metadata(data)

    def _header(self, position: int, end: int) -> tuple[int, int, int, int, int]:
        """``(header bytes, page type, uncompressed_page_size, compressed_page_size, num_values)`` of the page
        header at ``position``, read 256 bytes at first, then, each time the decoder reaches the end of the bytes
        read, twice as many (as pyarrow does) or at once as many as it needs (a string's length, a list's items).
        The header is decoded once, on from where the decoder stopped (each read is of the header from its start:
        all of them together read less than four times its bytes)."""
        most, wanted = min(end - position, _PAGE_HEADER_MAX), 256

        def grow(needed: int) -> bytes:
            nonlocal wanted
            wanted = min(most, max(2 * wanted, needed))
            self._handle.seek(position)
            data = self._handle.read(wanted) if needed <= most else b""
            if len(data) < needed:  # the chunk, the file or pyarrow's 16 MiB for a header ends first
                raise PageProblem(f"the page header at byte {position} is cut short")
            return data

        self._handle.seek(position)
        try:
            header = _page_header(self._handle.read(min(wanted, most)), grow)
        except _ThriftError as error:
            raise PageProblem(f"the page header at byte {position} cannot be read ({error})") from None
        self._bytes -= header[0]
        if self._bytes < 0:
            raise PageProblem(f"the file's page headers take more bytes than isotropy checks in a file of "
                              f"{self._stored} bytes (1 MiB more than the file)", corrupt=False)
        return header


class _ThriftError(Exception):
    """Bytes that are not a Thrift compact-protocol struct."""


def _page_header(data: bytes, grow=None) -> tuple[int, int, int, int, int]:
    """``(bytes, type, uncompressed_page_size, compressed_page_size, num_values)`` of the ``PageHeader`` that
    ``data`` starts with; ``num_values`` is that of its ``data_page_header`` (field 5) or ``data_page_header_v2``
    (field 8), 0 without one. Read as Thrift's generated code reads it: a field of another type than its own is
    skipped, a repeated field's last value is kept; the three required fields must be present. ``grow(n)``: the
    header's first ``n`` bytes at least, when those of ``data`` end (without it: :class:`_Short`)."""
    cursor = _Thrift(data, grow or _short)
    fields = cursor.struct({1: 5, 2: 5, 3: 5, 5: 12, 8: 12}, 1)
    if not {1, 2, 3} <= fields.keys():
        raise _ThriftError("a required field is missing")
    kind = fields[1]
    page = fields.get(5 if kind == 0 else 8 if kind == 3 else -1, {})
    return cursor.position, kind, fields[2], fields[3], page.get(1, 0)


def _short(needed: int) -> bytes:
    raise _Short(needed)


class _Thrift:
    """A cursor over ``data``, read in Thrift's compact protocol as Thrift's C++ library (pyarrow's) reads it;
    ``grow(n)`` gives more of the bytes when they end, ``n`` at least."""

    def __init__(self, data: bytes, grow):
        self.data, self.position, self.grow = data, 0, grow

    def take(self, n: int) -> int:
        """Skip ``n`` bytes; the position they start at."""
        if self.position + n > len(self.data):
            self.data = self.grow(self.position + n)
        self.position += n
        return self.position - n

    def varint(self) -> int:
        self.position, value, self.data = _varint(self.data, self.position, self.grow)
        return value

    def i32(self) -> int:
        value = self.varint() & 0xFFFFFFFF  # Thrift truncates an i32 (and a field id, an i16) to its width
        return (value >> 1) ^ -(value & 1)

    def struct(self, wanted: dict[int, int], depth: int) -> dict[int, object]:
        """Read a struct; the values of the fields ``wanted`` (field id: compact type, 5 an i32, 12 a struct, of
        whose fields the i32 field 1 is kept), if of that type; other fields skipped."""
        if depth > _THRIFT_DEPTH:
            raise _ThriftError("structs nested too deeply")
        fields, last = {}, 0
        while True:
            at = self.take(1)  # before self.data is read: take may grow it
            byte = self.data[at]
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

    def fields(self, wanted: dict, depth: int) -> dict[int, object]:
        """Read a struct: the values of the fields ``wanted`` (field id: ``(compact type, what it holds)``, see
        ``_FILE_METADATA``) that are of that type, the others skipped; a required field missing (``_REQUIRED``):
        :class:`_ThriftError`."""
        if depth > _THRIFT_DEPTH:
            raise _ThriftError("structs nested too deeply")
        fields, last = {}, 0
        while True:
            at = self.take(1)
            byte = self.data[at]
            kind = byte & 0x0F
            if kind == 0:  # STOP
                missing = _REQUIRED.get(id(wanted), set()) - fields.keys()
                if missing:
                    raise _ThriftError(f"a required field ({min(missing)}) is missing")
                return fields
            field = last + (byte >> 4) if byte >> 4 else self.i32()
            last = (field + 2**15) % 2**16 - 2**15  # an i16
            if last not in wanted or wanted[last][0] != kind:
                self.skip(kind, depth, in_struct=True)
            else:
                fields[last] = self.value(*wanted[last], depth)

    def value(self, kind: int, holds, depth: int):
        """A value of the compact type ``kind`` (an i32, i64, binary, list or struct; ``holds``: see
        :meth:`fields`)."""
        if kind == _I32:
            return self.i32()
        if kind == _I64:
            value = self.varint()
            return (value >> 1) ^ -(value & 1)
        if kind == _BINARY:
            size = self.varint() & 0xFFFFFFFF
            if size >= 2**31:
                raise _ThriftError("a negative size")
            at = self.take(size)
            return bytes(self.data[at:at + size])
        if kind == _STRUCT:
            return self.fields(holds, depth + 1)
        head = self.data[self.take(1)]  # a list: its items are read as the field's type, whatever their header says
        count = head >> 4
        if count == 15:
            count = self.varint()
        count = _checked(count, "list")
        if head & 0x0F > 13:
            raise _ThriftError(f"an unknown type {head & 0x0F}")
        if depth + 1 > _THRIFT_DEPTH:
            raise _ThriftError("containers nested too deeply")
        return [self.value(*holds, depth + 1) for _ in range(count)]  # each takes a byte at least: bounded

    def skip(self, kind: int, depth: int, *, in_struct: bool = False) -> None:
        """Skip a value of the compact type ``kind`` in a struct (or list, set, map) at ``depth``."""
        self.position, self.data = _skip(self.data, self.position, kind, depth, in_struct, self.grow)


# the bytes of the compact types of a fixed width (bools, bytes, doubles, UUIDs), in a list, set or map
_ITEM_WIDTHS = {1: 1, 2: 1, 3: 1, 7: 8, 13: 16}


def _skip(data: bytes, position: int, kind: int, depth: int, in_struct: bool, grow) -> tuple[int, bytes]:
    """The position past the value of compact type ``kind`` at ``position`` (in a struct: ``in_struct``, where a
    bool is its field's type), read as Thrift reads it, and the bytes (``grow(n)`` when they end before byte
    ``n``). A list, set or map of more than a million items (pyarrow's limit), structs and containers nested deeper
    than 64, a varint of more than 10 bytes, an unknown type: :class:`_ThriftError`.

    One loop, no call per value: a stack holds, for each struct or container the value is inside, ``None`` (a
    struct: its next field header is read) or ``[values left, their types]`` (a list's items, a map's keys and
    values in turn). A list of a fixed-width type is skipped at once, a long list of varints with numpy."""
    stack, base = [], depth
    while True:
        if kind in (1, 2):  # a bool: in the field's type in a struct, a byte in a list, set or map
            position += 0 if in_struct else 1
        elif kind == 3:  # a byte
            position += 1
        elif 4 <= kind <= 6 or kind == 8:  # i16, i32, i64 (varints); binary (its length, then its bytes)
            position, value, data = _varint(data, position, grow)
            if kind == 8:
                if value & 0xFFFFFFFF >= 2**31:
                    raise _ThriftError("a negative size")
                position += value & 0xFFFFFFFF
        elif kind == 7:  # a double
            position += 8
        elif kind == 13:  # a UUID (Thrift 0.19)
            position += 16
        elif kind == 12:
            if base + len(stack) + 1 > _THRIFT_DEPTH:
                raise _ThriftError("structs nested too deeply")
            stack.append(None)
        elif kind in (9, 10, 11):  # list, set, map
            if kind == 11:
                position, count, data = _varint(data, position, grow)
                count, kinds = _checked(count, "map"), ()
                if count:
                    if position >= len(data):
                        data = grow(position + 1)
                    kinds = (data[position] >> 4, data[position] & 0x0F)
                    position += 1
            else:
                if position >= len(data):
                    data = grow(position + 1)
                head = data[position]
                position, count = position + 1, head >> 4
                if count == 15:
                    position, count, data = _varint(data, position, grow)
                count, kinds = _checked(count, "list" if kind == 9 else "set"), (head & 0x0F,)
            if base + len(stack) + 1 > _THRIFT_DEPTH:
                raise _ThriftError("containers nested too deeply")
            for item in kinds:
                if item > 13:  # Thrift's C++ library takes a STOP (0) for a type here: an error once skipped
                    raise _ThriftError(f"an unknown type {item}")
            widths = [_ITEM_WIDTHS.get(item) for item in kinds]
            if count and None not in widths:
                position += count * sum(widths)
            elif count * len(kinds) >= _VECTORIZED and all(4 <= item <= 6 for item in kinds):
                position, data = _skip_varints(data, position, count * len(kinds), grow)
            elif count:
                stack.append([count * len(kinds), kinds])
        else:
            raise _ThriftError(f"an unknown type {kind}")
        while True:  # the next value: a field of the innermost struct, an item of the innermost container
            if not stack:
                if position > len(data):
                    data = grow(position)
                return position, data
            top = stack[-1]
            if top is None:
                if position >= len(data):
                    data = grow(position + 1)
                byte = data[position]
                position += 1
                kind = byte & 0x0F
                if kind == 0:  # STOP
                    stack.pop()
                    continue
                if not byte >> 4:  # the field id in full (an i16): read and not needed
                    position, _, data = _varint(data, position, grow)
                in_struct = True
                break
            if not top[0]:
                stack.pop()
                continue
            top[0] -= 1
            kinds = top[1]
            kind, in_struct = kinds[0] if len(kinds) == 1 else kinds[1 - top[0] % 2], False
            break


def _varint(data: bytes, position: int, grow) -> tuple[int, int, bytes]:
    """The position past the varint at ``position`` (10 bytes at most, as Thrift reads them), its value, and the
    bytes (``grow(n)`` when they end before byte ``n``)."""
    value, shift = 0, 0
    while True:
        if position >= len(data):
            data = grow(position + 1)
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return position, value & (2**64 - 1), data
        shift += 7
        if shift >= 70:
            raise _ThriftError("a variable-length integer of more than 10 bytes")


def _checked(count: int, what: str) -> int:
    """``count``, the items of a list, set or map, if Thrift reads that many in pyarrow (a million at most)."""
    count &= 0xFFFFFFFF  # an i32, not zigzag-encoded
    if count >= 2**31:
        raise _ThriftError("a negative size")
    if count > _CONTAINER_LIMIT:
        raise _ThriftError(f"a {what} of {count} items, more than the {_CONTAINER_LIMIT} that pyarrow reads")
    return count


def _skip_varints(data: bytes, position: int, count: int, grow) -> tuple[int, bytes]:
    """The position past ``count`` varints at ``position``, found in one pass over their bytes (each ends at a byte
    below 0x80, 10 bytes at most), and the bytes (``grow(n)`` when they end before byte ``n``)."""
    while True:
        window = np.frombuffer(data, np.uint8, count=max(0, min(len(data) - position, 10 * count)),
                               offset=min(position, len(data)))
        ends = np.flatnonzero(window < 0x80)[:count]
        if (np.diff(ends, prepend=-1) > 10).any() or len(ends) < count and \
                len(window) - (int(ends[-1]) + 1 if len(ends) else 0) >= 10:
            raise _ThriftError("a variable-length integer of more than 10 bytes")
        if len(ends) == count:
            return position + int(ends[-1]) + 1, data
        data = grow(max(len(data), position) + count - len(ends))  # a byte more for each varint not ended


# The footer's Thrift structs (parquet.thrift) as far as they hold lists: field id -> (compact type, what it holds: a
# struct's fields, a list's (item type, what an item holds)). Thrift's generated code reads a list's items as the type
# the field has, whatever type the list's header gives them, so every list that pyarrow's code reads is read here
# too (as are the fields the check needs); any other field is skipped as Thrift skips it, by its wire type (which
# for a struct of no lists reads the same bytes as its generated code). Required fields needed: _REQUIRED.
_I32, _I64, _BINARY, _LIST, _STRUCT = 5, 6, 8, 9, 12
_SCALAR = {}  # a struct read field by field by the types on the wire: KeyValue, SortingColumn, PageEncodingStats...
_SCHEMA_ELEMENT = {1: (_I32, None), 2: (_I32, None), 3: (_I32, None), 4: (_BINARY, None), 5: (_I32, None)}
_COLUMN_METADATA = {
    1: (_I32, None), 2: (_LIST, (_I32, None)), 3: (_LIST, (_BINARY, None)), 4: (_I32, None), 5: (_I64, None),
    6: (_I64, None), 7: (_I64, None), 8: (_LIST, (_STRUCT, _SCALAR)), 9: (_I64, None), 11: (_I64, None),
    13: (_LIST, (_STRUCT, _SCALAR)),
    16: (_STRUCT, {2: (_LIST, (_I64, None)), 3: (_LIST, (_I64, None))}),  # SizeStatistics: level histograms
    17: (_STRUCT, {2: (_LIST, (_I32, None))}),  # GeospatialStatistics: geospatial_types
}
# ColumnCryptoMetaData, a union: ENCRYPTION_WITH_COLUMN_KEY holds the column's path
_CRYPTO_METADATA = {2: (_STRUCT, {1: (_LIST, (_BINARY, None))})}
# meta_data; crypto_metadata and encrypted_column_metadata (an encrypted column): only whether they are there
_COLUMN_CHUNK = {3: (_STRUCT, _COLUMN_METADATA), 8: (_STRUCT, _CRYPTO_METADATA), 9: (_BINARY, None)}
_ROW_GROUP = {1: (_LIST, (_STRUCT, _COLUMN_CHUNK)), 3: (_I64, None), 4: (_LIST, (_STRUCT, _SCALAR))}
_FILE_METADATA = {2: (_LIST, (_STRUCT, _SCHEMA_ELEMENT)), 3: (_I64, None), 4: (_LIST, (_STRUCT, _ROW_GROUP)),
                  5: (_LIST, (_STRUCT, _SCALAR)), 7: (_LIST, (_STRUCT, _SCALAR))}
_REQUIRED = {id(_SCHEMA_ELEMENT): {4}, id(_COLUMN_METADATA): {1, 3, 4, 5, 6, 7, 9}, id(_ROW_GROUP): {1, 3},
             id(_FILE_METADATA): {2, 3, 4}}
_REPEATED = 2  # FieldRepetitionType


def file_metadata(data: bytes) -> Footer | None:
    """The :class:`Footer` that the Thrift ``FileMetaData`` ``data`` (a footer's bytes, without its length and
    magic) holds, read as Thrift's C++ library reads it (a field of another type than its own skipped, a list's items
    read as the type the field has, a repeated field's last value kept), the schema unflattened as pyarrow does, and
    a chunk for each leaf in every row group. A chunk's type may differ from its leaf's: pyarrow decodes a chunk as
    its leaf's type, and reads some such files (it refuses others, when reading their statistics), so that is left
    to pyarrow. ``None`` when a column is encrypted (left to pyarrow). Anything else: :class:`FooterProblem`, never
    another error."""
    try:
        fields = _Thrift(data, _ended).fields(_FILE_METADATA, 1)
        leaves = _leaves(fields[2])
        groups = []
        for group in fields[4]:
            chunks = group[1]
            if len(chunks) != len(leaves):
                raise _ThriftError(f"a row group of {len(chunks)} column chunks in a schema of {len(leaves)} "
                                   f"columns")
            decoded = []
            for chunk, leaf in zip(chunks, leaves):
                if 8 in chunk or 9 in chunk:  # an encrypted column: pyarrow says whether it can read it
                    return None
                if 3 not in chunk:
                    raise _ThriftError(f"column {leaf.path!r} has a chunk without its metadata")
                meta = chunk[3]
                path = ".".join(part.decode("utf-8", "replace") for part in meta[3])
                decoded.append(Chunk(path, _type_name(meta[1]), meta[4], meta[5], meta[6], meta[7], meta[9],
                                     meta.get(11)))
            groups.append(tuple(decoded))
        return Footer(fields[3], leaves, tuple(groups))
    except _ThriftError as error:
        raise FooterProblem(f"the footer cannot be read ({error})") from None


def _ended(needed: int) -> bytes:
    raise _ThriftError("the footer ends inside a value")


def _leaves(elements: list[dict]) -> tuple[Leaf, ...]:
    """The leaves of the flattened schema ``elements`` (decoded ``SchemaElement`` fields), unflattened as pyarrow
    does (``Unflatten`` in parquet/schema.cc): an element of no children with a type is a leaf, any other a group
    of its ``num_children`` next elements; the root (the first) is not part of a path nor of a level."""
    if not elements:
        raise _ThriftError("an empty schema (no root)")
    if elements[0].get(5, 0) == 0:
        if len(elements) == 1:
            return ()
        raise _ThriftError("a schema of several elements whose root has no children")
    leaves, position = [], 1
    groups = [[elements[0][5], 0, ()]]  # [children left, repetition level, path] of each group entered
    while groups:
        group = groups[-1]
        if group[0] <= 0:
            groups.pop()
            continue
        group[0] -= 1
        if position == len(elements):
            raise _ThriftError("a schema of fewer elements than its groups hold")
        element = elements[position]
        position += 1
        level = group[1] + (element.get(3) == _REPEATED)
        path = (*group[2], element[4].decode("utf-8", "replace"))
        if element.get(5, 0) == 0 and 1 in element:
            leaves.append(Leaf(".".join(path), _type_name(element[1]), element.get(2), level))
        else:
            groups.append([element.get(5, 0), level, path])
    return tuple(leaves)
