"""Parquet files whose page headers say more than their footer: the crafting behind the page-bomb tests.

A Parquet column chunk is a run of pages, each a Thrift (compact protocol) ``PageHeader`` followed by the page's
bytes; pyarrow sizes its decompression buffer from the header's ``uncompressed_page_size``, whatever the footer
says. :func:`page_bomb` overwrites the first page of every column chunk of a valid file with one page that declares,
and really decompresses to, ``page_bytes`` bytes: a hand-made zstd frame of RLE blocks (4 bytes per 128 KiB of
zeros), so crafting a gigabyte page costs nothing. The footer is left as written, offsets included.
"""

from __future__ import annotations

import struct

_BLOCK = 2**17  # zstd's largest block: 128 KiB


def zstd_zeros(n_bytes: int) -> bytes:
    """A zstd frame that decompresses to ``n_bytes`` zero bytes, without its content size (as a stream encoder
    writes it): one RLE block per 128 KiB."""
    blocks = [min(_BLOCK, n_bytes - start) for start in range(0, n_bytes, _BLOCK)] or [0]
    out = bytearray(struct.pack("<I", 0xFD2FB528))
    out += bytes([0x00, 7 << 3])  # descriptor: no content size, no checksum; window 2**(10 + 7) = 128 KiB
    for k, size in enumerate(blocks):
        last = k == len(blocks) - 1
        out += (int(last) | 1 << 1 | size << 3).to_bytes(3, "little") + b"\x00"  # an RLE block of `size` zeros
    return bytes(out)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _zigzag(value: int) -> bytes:
    return _varint((value << 1) ^ (value >> 63))


def thrift_struct(fields: list[tuple[int, object]]) -> bytes:
    """A Thrift compact-protocol struct of ``(field id, value)`` pairs in increasing id order: an ``int`` is an i32,
    a ``list`` of pairs a nested struct."""
    out, last = bytearray(), 0
    for field, value in fields:
        kind = 12 if isinstance(value, list) else 5
        out += bytes([(field - last) << 4 | kind]) if 0 < field - last < 16 else bytes([kind]) + _zigzag(field)
        out += thrift_struct(value) if isinstance(value, list) else _zigzag(value)
        last = field
    return bytes(out) + b"\x00"


def i32_list_field(field: int, items: int) -> bytes:
    """A struct field ``field`` (in Thrift's long form) holding a list of ``items`` zeros (i32, a byte each): a
    field that ``PageHeader`` does not have, which Thrift skips."""
    return bytes([0x09]) + _zigzag(field) + bytes([0xF5]) + _varint(items) + b"\x00" * items


def data_page_header(uncompressed: int | list[int], compressed: int, num_values: int, *, version: int = 1,
                     extra: bytes = b"") -> bytes:
    """The ``PageHeader`` of a data page of ``num_values`` PLAIN values of a required column, no levels; a list
    ``uncompressed`` is written as that field repeated (Thrift keeps the last); ``extra``: fields written last."""
    sizes = [(2, size) for size in (uncompressed if isinstance(uncompressed, list) else [uncompressed])]
    if version == 1:  # DataPageHeader: num_values, encoding PLAIN, RLE levels
        fields = [(1, 0), *sizes, (3, compressed), (5, [(1, num_values), (2, 0), (3, 3), (4, 3)])]
    else:  # DataPageHeaderV2: num_values, num_nulls, num_rows, encoding PLAIN, no level bytes
        fields = [(1, 3), *sizes, (3, compressed), (8, [(1, num_values), (2, 0), (3, num_values), (4, 0), (5, 0),
                                                        (6, 0)])]
    return thrift_struct(fields)[:-1] + extra + b"\x00"


def page_bomb(path, page_bytes: int, *, columns: int = 1, rows: int = 4096, version: int = 1,
              declared: list[int] | None = None, extra: bytes = b"") -> None:
    """Write to ``path`` a Parquet file of ``columns`` required float64 columns of ``rows`` rows (zstd, one row
    group) whose each column's first page declares, and decompresses to, ``page_bytes`` zero bytes: the values
    read as zeros, the footer's sizes stay those of the file written. ``declared``: the page's
    ``uncompressed_page_size`` written that many times, these values (``[page_bytes]`` by default); ``extra``:
    fields written last in the page's header."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    # random values barely compress: each chunk keeps room for the bomb page, which overwrites it
    values = np.random.default_rng(0).normal(size=(columns, rows))
    schema = pa.schema([pa.field(f"x{k}", pa.float64(), nullable=False) for k in range(columns)])
    table = pa.table(list(values), schema=schema)
    pq.write_table(table, path, compression="zstd", use_dictionary=False, write_statistics=False,
                   data_page_version="1.0" if version == 1 else "2.0", data_page_size=2**30)
    metadata = pq.ParquetFile(path).metadata
    data = bytearray(open(path, "rb").read())  # noqa: SIM115
    frame = zstd_zeros(page_bytes)
    page = data_page_header(declared or page_bytes, len(frame), rows, version=version, extra=extra) + frame
    for k in range(columns):
        chunk = metadata.row_group(0).column(k)
        if len(page) > chunk.total_compressed_size:
            raise ValueError(f"{page_bytes} bytes need more than {rows} rows to hide in")
        data[chunk.data_page_offset:chunk.data_page_offset + len(page)] = page  # the rest of the chunk: unread
    with open(path, "wb") as handle:
        handle.write(data)
