"""The page headers of a Parquet column chunk: what each page declares it decompresses to.

pyarrow allocates and decompresses each page to the ``uncompressed_page_size`` of its own header (a Thrift
``PageHeader``, compact protocol), whatever the file's footer says, and exposes none of these headers (its
``ColumnChunkMetaData`` is the footer's). So they are decoded here, for
:func:`isotropy.io._archives.parquet_expansion_problem`: :class:`PageWalk` walks the pages of a chunk as pyarrow
does, and a small Thrift reader decodes what a ``PageHeader`` needs, skipping the rest. Hand-written because no
library that isotropy depends on reads them (pyarrow's Thrift reader is C++ and private).
"""

from __future__ import annotations

__all__ = ["PageProblem", "PageWalk"]

_PAGE_HEADER_MAX = 16 * 2**20  # pyarrow's max_page_header_size: a longer header is one it cannot read either
_PARQUET_816_PADDING = 100  # pyarrow reads up to 100 bytes past a chunk written by parquet-mr before 1.2.9
_THRIFT_DEPTH = 64  # Thrift's own recursion limit
_COUNTED_PAGES, _COUNTED_PAGE_BYTES = 2**16, 64  # at least 65,536 pages, or one per 64 bytes of the file


class PageProblem(Exception):
    """Why the pages of a column chunk cannot all be checked: its message is the reason given."""


class _Short(Exception):
    """The bytes read end inside the page header: read more of them."""


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
                              f"{self._stored} bytes (a corrupt file)")
        end = min(self._stored, start + length + _PARQUET_816_PADDING)
        position, seen, total = start, 0, 0
        while seen < column.num_values and position < end:
            self._pages -= 1
            if self._pages < 0:
                raise PageProblem(f"the file's columns hold more pages than isotropy checks in a file of "
                                  f"{self._stored} bytes ({_COUNTED_PAGES}, and one more per "
                                  f"{_COUNTED_PAGE_BYTES} bytes)")
            size, kind, uncompressed, compressed, values = self._header(position, end)
            if min(uncompressed, compressed, values) < 0:
                raise PageProblem(f"the page header at byte {position} declares a negative size or count "
                                  f"(a corrupt file)")
            position += size + compressed
            if position > end:
                raise PageProblem(f"the page at byte {position - size - compressed} runs past the bytes of its "
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
                    raise PageProblem(f"the page header at byte {position} is cut short, so what the page "
                                      f"decompresses to cannot be checked (a corrupt file)") from None
                wanted *= 2
                continue
            except _ThriftError as error:
                raise PageProblem(f"the page header at byte {position} cannot be read ({error}), so what the "
                                  f"page decompresses to cannot be checked (a corrupt file)") from None
            self._bytes -= header[0]
            if self._bytes < 0:
                raise PageProblem(f"the file's page headers take more bytes than isotropy checks in a file of "
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
