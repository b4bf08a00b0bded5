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
    encoded), so every BYTE_ARRAY chunk is measured:

    * read as an Arrow dictionary (what a dictionary page holds, plus one int32 index per value:
      memory within the footer's sizes, already checked above), its decoded size is the sum of
      the lengths of the entries the indices reference, computed without building the strings;
    * pages that cannot be read as a dictionary (``DELTA_BYTE_ARRAY``) are decoded a batch at a
      time, a batch no larger than 64 MiB (no value is longer than the chunk's uncompressed bytes:
      a value repeats at most the one before and adds bytes of the page), counting stops past
      the cap;
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
        except Exception:  # noqa: BLE001 -- a corrupt footer: the reader says what is wrong
            return None
        what = f"its data ({metadata.num_rows} rows)"
        decoded, texts = 0, []
        for i in range(metadata.num_row_groups):
            group = metadata.row_group(i)
            for j in range(group.num_columns):
                column, schema = group.column(j), metadata.schema.column(j)
                width = _PARQUET_WIDTHS.get(column.physical_type) or max(1, schema.length or 1)
                counted = max(column.total_uncompressed_size, column.num_values * width)
                decoded += counted
                if column.physical_type == "BYTE_ARRAY":
                    texts.append((i, column, schema.max_repetition_level > 0, counted))
        problem = expansion_problem(what, decoded, stored)
        if problem is not None or not texts:
            return problem
        cap = max(EXPANSION_FLOOR_BYTES, MAX_EXPANSION * max(stored, 1))
        for i, column, nested, counted in texts:
            pointers = 8 * column.num_values
            # text past `limit` bytes takes the total past the cap: no need to count further
            text, bound = _parquet_text_bytes(source, metadata, i, column, nested, limit=cap - decoded + counted - pointers)
            decoded += max(0, pointers + text - counted)
            if decoded > cap:
                return expansion_problem(what, decoded, stored, bound=bound)
        return None
    finally:
        if start is not None:
            source.seek(start)


def _parquet_text_bytes(source, metadata, group: int, column, nested: bool, *, limit: int) -> tuple[int, str]:
    """The bytes of text the BYTE_ARRAY ``column`` of row group ``group`` decodes to, and how they bound it.

    ``(n, "")``: exactly ``n``; ``(n, "at least")``: counting stopped at ``n``, past ``limit``; ``(n, "up to")``:
    a worst case, the chunk not measured (see :func:`parquet_expansion_problem`).
    """
    import pyarrow.parquet as pq

    name = column.path_in_schema
    try:
        with pq.ParquetFile(source, metadata=metadata, read_dictionary=[name]) as handle:
            return _arrow_text_bytes(handle.read_row_group(group, columns=[name]).column(0)), ""
    except Exception:  # noqa: BLE001 -- pyarrow reads DELTA_BYTE_ARRAY pages densely only: below
        longest = max(column.total_uncompressed_size, 1)  # no value is longer than the bytes of its chunk
    if nested:  # a row may hold every value of the chunk: counted at its worst
        return column.num_values * longest, "up to"
    total = 0
    try:
        with pq.ParquetFile(source, metadata=metadata) as handle:  # a row is one value: 64 MiB of text a batch
            for batch in handle.iter_batches(batch_size=max(1, min(2**16, EXPANSION_FLOOR_BYTES // longest)),
                                             row_groups=[group], columns=[name]):
                total += _arrow_text_bytes(batch.column(0))
                if total > limit:
                    return total, "at least"
    except Exception:  # noqa: BLE001 -- unreadable: counted at its worst, the reader says why
        return column.num_values * longest, "up to"
    return total, ""


def _arrow_text_bytes(array) -> int:
    """Bytes of the strings (or binary values) that ``array`` holds once every dictionary index is resolved."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(array, pa.ChunkedArray):
        return sum(_arrow_text_bytes(chunk) for chunk in array.chunks)
    kind = array.type
    if pa.types.is_dictionary(kind):
        lengths = pc.binary_length(array.dictionary) if len(array.dictionary) else None
        return 0 if lengths is None else int(pc.sum(pc.take(lengths, array.indices)).as_py() or 0)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind) \
            or pa.types.is_list_view(kind) or pa.types.is_large_list_view(kind) or pa.types.is_map(kind):
        return _arrow_text_bytes(array.flatten())
    if pa.types.is_struct(kind):
        return sum(_arrow_text_bytes(field) for field in array.flatten())
    if len(array) == 0:
        return 0
    return int(pc.sum(pc.binary_length(array)).as_py() or 0)
