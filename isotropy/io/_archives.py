"""How far a compressed file may expand when read: one rule for ``.npz``, ``.pt`` and ``.parquet``.

A few megabytes of deflate, zstd or run-length encoding can decode to gigabytes (a "bomb"). Every
reader of a compressed container asks :func:`expansion_problem` before decoding, with the sizes the
container's own metadata declares (a zip member's ``file_size``, which zipfile and torch's reader
both enforce while extracting; a Parquet file's row and value counts), and refuses in one line.

A Parquet file's footer is not what pyarrow sizes its memory by: each page's own header declares
what the page decompresses to, and pyarrow allocates that, whatever the footer says (with pyarrow
26, a 31 KB file whose footer declares 32 KB and whose one page declares 300 MiB was read at a
peak RSS of 423 MiB). :func:`parquet_expansion_problem` therefore reads every page header too
(:mod:`isotropy.io._parquet_pages`) and counts the larger of the two.

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

from isotropy.io._parquet_pages import PageProblem, PageWalk

__all__ = ["EXPANSION_FLOOR_BYTES", "MAX_EXPANSION", "UnreadableParquet", "expansion_problem",
           "parquet_expansion_problem", "zip_expansion_problem"]

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


class UnreadableParquet(str):
    """A reason of :func:`parquet_expansion_problem` that is a file pyarrow cannot read either (a page header it
    cannot decode, a page outside its chunk), not one that expands too far: the reader words it as such."""


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
        its footer cannot be read (the reader then says what is wrong with the file). A page
        header that cannot be decoded is a reason too (see Notes), an :class:`UnreadableParquet`.

    Notes
    -----
    The footer is decoded here (:func:`isotropy.io._parquet_pages.file_metadata`), not through
    pyarrow's ``ColumnChunkMetaData``, which aborts the process on some corrupt footers (an
    uncaught C++ exception) that pyarrow's reader refuses cleanly; once pyarrow has opened the
    file, a footer that cannot be decoded, or a row group without a chunk for each column of the
    schema, is an :class:`UnreadableParquet` reason; an encrypted one is left to pyarrow (``None``).

    First from the footer and the page headers: each column chunk counts at least its number of
    values times the width of its column's type (dictionary and run-length encoding make the uncompressed
    sizes small too: 2**27 float64 zeros take 260 KB), BYTE_ARRAY values 8 bytes each, and at
    least the larger of the footer's ``total_uncompressed_size`` and the sum of the
    ``uncompressed_page_size`` that its pages' headers declare: pyarrow allocates and decompresses
    each page to what its header says, and a footer can say less. The pages are walked as pyarrow
    walks them (:class:`isotropy.io._parquet_pages.PageWalk`), reading only their headers. A
    header that cannot be decoded, a negative size, a page past its chunk, or more pages than one
    per 64 bytes of the file (65,536 at least) is refused as well: pyarrow cannot read such a file
    either, and a page that this check could not read is one it cannot vouch for, so the file is
    not handed to pyarrow unchecked (returning ``None`` would let a header that pyarrow decodes
    and this reader does not pass).

    Then the text of every BYTE_ARRAY chunk, which the footer does not bound: a dictionary page
    holding one long string that every row references, or ``DELTA_BYTE_ARRAY`` values that each
    repeat the one before as a prefix, decode to the string's length times the number of rows.
    The column encodings that the footer lists are not trusted (the pages say how they are
    encoded), so every BYTE_ARRAY chunk is measured, found by its index (two columns may have
    one dotted name: a column ``"a.b"`` and the field ``b`` of a struct ``a``):

    * read as an Arrow dictionary (what a dictionary page holds, plus one int32 index per value:
      memory within the sizes already checked above), its decoded size is the sum of the
      lengths of the entries the indices reference, computed without building the strings;
    * pages that cannot be read as a dictionary (``DELTA_BYTE_ARRAY``) are decoded a batch at a
      time, counting stops past the cap. No value is longer than the chunk's uncompressed bytes
      (the larger of the footer's and the pages'; a value repeats at most the one before and
      adds bytes of the page), so a batch of as many values as fit, at that length, in the bytes
      the cap still allows (64 MiB at least, 2**16 values at most) takes no more memory than a
      file within the cap does when read. A column takes about
      ``rows * uncompressed / (100 * stored)`` batches: as many as it has rows over 100 times its
      compression ratio, a cost that grows with the rows, not with their square;
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
        decoded, texts = 0, []
        try:
            pages = PageWalk(source, stored)
        except OSError:  # the file went away after its footer was read: the reader says so
            return None
        with pages:
            # pyarrow's ColumnChunkMetaData is never built: on some corrupt footers it throws a C++ exception that
            # its Python API does not catch (the process aborts), so the footer is decoded here
            try:
                footer = pages.footer()
            except PageProblem as problem:
                return UnreadableParquet(str(problem))
            except OSError:  # the file went away after its footer was read: the reader says so
                return None
            if footer is None:  # encrypted: pyarrow says whether it can read it
                return None
            if (footer.num_rows, len(footer.leaves), len(footer.row_groups)) != \
                    (metadata.num_rows, metadata.num_columns, metadata.num_row_groups):
                return UnreadableParquet(f"its footer reads as {footer.num_rows} rows, {len(footer.leaves)} "
                                         f"columns and {len(footer.row_groups)} row groups, but pyarrow reads "
                                         f"{metadata.num_rows}, {metadata.num_columns} and "
                                         f"{metadata.num_row_groups}")
            what = f"its data ({footer.num_rows} rows)"
            for i, group in enumerate(footer.row_groups):
                for j, (column, leaf) in enumerate(zip(group, footer.leaves)):
                    try:
                        uncompressed = max(column.total_uncompressed_size, pages.declared(column))
                    except PageProblem as problem:
                        reason = f"column {column.path_in_schema!r} of row group {i}: {problem}"
                        return UnreadableParquet(reason) if problem.corrupt else reason
                    # pyarrow decodes a chunk as its leaf's type, whatever type the chunk's metadata gives
                    width = _PARQUET_WIDTHS.get(leaf.physical_type) or max(1, leaf.type_length or 1)
                    counted = max(uncompressed, column.num_values * width)
                    decoded += counted
                    if leaf.physical_type == "BYTE_ARRAY":
                        texts.append((i, j, column, leaf.max_repetition_level > 0, counted, uncompressed))
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
