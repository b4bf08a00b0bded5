"""Read embeddings stored as many shards, lazily, into one row-chunked dask array.

A *sharded* source is a directory (or a glob pattern) of ``.npy`` / ``.parquet`` files whose rows
are concatenated in the order of their names (runs of digits compared as numbers: ``part-2`` before
``part-10``), or a Zarr array. Only the shards' headers
(``.npy`` shape, Parquet row counts and first row, Zarr metadata) are read when the array is built;
the shards are then cut and joined into chunks of about 64 MiB (large shards split, small ones
grouped), and each chunk's rows are read by one task, so no process ever holds more than a few
chunks and many small shards are not many tasks. A ``.npy`` shard is opened once when the array is
built (its header and first row, by ``np.lib.format``); the task then reads its rows with one plain
read at the offset found there (no memory map, no second header parse), falling back to ``np.load``
for a Fortran-ordered shard or one rewritten since.

Problems are reported as one line naming the shard, like :func:`isotropy.io.embeddings.read_embeddings`
does for a single file: an unreadable shard or one of another width when the array is built, a NaN
or inf when the chunk holding it is computed.
"""

from __future__ import annotations

import glob
import io
import math
import os
import re
from pathlib import Path

import numpy as np

from isotropy.io._archives import MAX_EXPANSION, expansion_problem
from isotropy.io._paths import natural_key, npy_header, path_kind
from isotropy.io.embeddings import (
    EmbeddingsReadError,
    _as_matrix,
    _check_parquet_expansion,
    _fail,
    _load_npy,
    _read_parquet,
    _short,
    missing_embeddings,
)

__all__ = ["SHARD_EXTENSIONS", "is_sharded", "read_shards"]

SHARD_EXTENSIONS = (".npy", ".parquet")
_CHUNK_BYTES = 64 * 2**20  # rows per chunk of a .npy shard: about this many bytes
_EXPECTED = "a directory or glob pattern of .npy or .parquet shards of one width, or a Zarr array"


def _is_zarr(path: Path) -> bool:
    return path.suffix.lower() == ".zarr" or (path / ".zarray").is_file() or (path / "zarr.json").is_file()


def is_sharded(source) -> bool:
    """True when ``source`` names a directory, a glob pattern or a Zarr array (not a single file)."""
    text = str(source)
    path = Path(text)
    return path.is_dir() or _is_zarr(path) or (not path.exists() and glob.has_magic(text))


def _warn_nested(path: Path) -> None:
    """Warn when sub-directories of the shard directory ``path`` hold shards, at any depth: only its own files are read.

    A partitioned layout (``DIR/year=2024/month=01/part-0.parquet``) would otherwise lose those rows without a
    word. The warning gives the recursive pattern that reads every shard under ``path``, its own included. Hidden
    directories and Zarr stores are not looked into; the walk stops at the first shard of each sub-directory.
    """
    nested, suffixes = [], set()
    for sub in sorted(path.iterdir()):
        if sub.name.startswith(".") or not sub.is_dir() or _is_zarr(sub):
            continue
        for root, dirs, files in os.walk(sub):
            dirs[:] = [d for d in dirs if not d.startswith(".") and not d.lower().endswith(".zarr")]
            found = {Path(f).suffix.lower() for f in files} & set(SHARD_EXTENSIONS)
            if found:
                nested.append(sub.name)
                suffixes |= found
                break
    if nested:
        import warnings

        shown = ", ".join(repr(name) for name in nested[:3]) + (f" and {len(nested) - 3} more" if len(nested) > 3 else "")
        patterns = " or ".join(repr(str(path / "**" / f"*{suffix}")) for suffix in sorted(suffixes))
        warnings.warn(f"The shard directory {str(path)!r} has sub-directories with shards ({shown}) that are not read: "
                      f"only its own .npy and .parquet files are. To read every shard under it, its own included, "
                      f"give the pattern {patterns}.", UserWarning, stacklevel=3)


def _shard_paths(source, fail=_fail, expected: str = _EXPECTED) -> list[Path]:
    """The shards of a directory or glob ``source``, in order; ``fail``, ``expected``: the error and what it expects
    (the labels reader's, for labels read from shards)."""
    text = str(source)
    path = Path(text)
    if path.is_dir():
        paths = [p for p in path.iterdir() if p.suffix.lower() in SHARD_EXTENSIONS and not p.is_dir()]
        _warn_nested(path)
    else:
        paths = [Path(p) for p in glob.glob(text, recursive=True) if not Path(p).is_dir()]  # '**': any depth
    others = [p for p in paths if p.suffix.lower() not in SHARD_EXTENSIONS]  # once: not once per shard
    for p in paths:  # a shard that cannot be opened is an error, never skipped (its rows would be lost)
        if not p.is_file():
            raise fail(p, f"this shard {path_kind(p)}", expected)
        if others:
            raise fail(others[0], f"the pattern {text!r} matches a file of unsupported type {others[0].suffix!r}",
                       expected)
    if not paths:
        raise fail(text, "no .npy or .parquet shards found there", expected)
    return sorted(paths, key=lambda p: natural_key(p.name if path.is_dir() else str(p)))


class _NamedBuffer(io.BytesIO):
    """An in-memory Parquet file whose error messages name the shard it came from."""

    def __init__(self, data, name):
        super().__init__(data)
        self._name = name

    def __str__(self):
        return self._name


def _npy_header(path: Path):
    """``(n_rows, n_features, dtype, layout)`` of a ``.npy`` shard from its header and first row (no full read).

    ``layout`` is ``(data offset, stored dtype, size, mtime)`` of a C-ordered shard whose data are all
    there, which :func:`_load_npy_rows` then reads with one plain read (no second header parse, no
    memory map) while the file keeps that size and mtime;
    ``None`` for any other shard (Fortran order, a header that promises more or fewer bytes than the file
    holds, an unusual header), which goes through ``np.load`` and its one-line errors as before.
    """
    fast = _npy_fast_header(path)
    if fast is not None:
        return fast
    arr = _load_npy(path, "r")
    if arr.ndim == 2 and arr.shape[0] == 0 and arr.shape[1] and arr.dtype.kind in "biuf":
        return 0, arr.shape[1], None, None  # a shard without rows (read_shards skips it)
    probe = _as_matrix(arr[:1] if arr.ndim == 2 and arr.shape[0] else arr, path)  # no full read
    return arr.shape[0], arr.shape[1], probe.dtype, None


def _npy_fast_header(path: Path):
    """:func:`_npy_header` of a plain 2-d C-ordered numeric shard in one open, or ``None`` (the general path)."""
    try:
        with open(path, "rb") as handle:
            shape, fortran, stored, offset = npy_header(handle)
            stat = os.fstat(handle.fileno())
            if fortran or len(shape) != 2 or not shape[0] or not shape[1] or stored.kind not in "biuf" \
                    or stored.hasobject or stat.st_size != offset + shape[0] * shape[1] * stored.itemsize:
                return None
            first = np.fromfile(handle, dtype=stored, count=shape[1]).reshape(1, shape[1])
    except Exception:  # noqa: BLE001 -- anything odd: the general path says what is wrong
        return None
    probe = _as_matrix(first, path)
    return shape[0], shape[1], probe.dtype, (offset, stored.str, stat.st_size, stat.st_mtime_ns)


def _stamp(path) -> tuple[int, int] | None:
    """``(size, mtime_ns)`` of ``path``: a shard with the same stamp is the file checked before; None if unreadable."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns


def _parquet_header(path: Path, key, label_column=None):
    """Rows, width, dtype, stamp and columns of a Parquet shard, checked for expansion (once) before its first row
    is read.

    The columns are ``(names, listed)``: the names of the columns the vectors are read from, in order, and whether
    that is one column of vectors (else one column per feature), from the one row read here (no data read again),
    compared across shards by :func:`_check_same_columns`.

    The stamp is taken before the check: the chunk task reads the shard without checking it again only
    while its size and modification time are those (:func:`_load_parquet`), as a ``.npy`` shard's rows are
    read by the offset of its header.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    stamp = _stamp(path)
    _check_parquet_expansion(path)  # before the first row is read: its pages may be the bomb
    try:
        handle = pq.ParquetFile(path)
        n_rows = handle.metadata.num_rows
        first = next(handle.iter_batches(batch_size=1), None)
    except Exception as exc:  # noqa: BLE001 -- corrupt footer, truncated file
        raise _fail(path, f"not a readable .parquet file ({_short(exc)})") from None
    if not n_rows or first is None:
        return 0, None, None, stamp, None  # a shard without rows (read_shards skips it)
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_batches([first]), sink)
    # a copy of the one row already decoded, written here: nothing in it to check
    probe, _, columns = _read_parquet(_NamedBuffer(sink.getvalue(), str(path)), key, checked=True, with_columns=True,
                                      label_column=label_column)
    return n_rows, probe.shape[1], probe.dtype, stamp, columns


def _check_same_columns(paths: list[Path], columns: list) -> None:
    """Refuse the first Parquet shard whose vector columns differ in name or order from the first Parquet shard's.

    Shards are joined by position: a shard with columns g0.. where the first has f0.., or f2, f1, f0 where it has
    f0, f1, f2, was stacked as if it matched, and every metric of the joined rows was silently wrong. Refused,
    not matched by name: names that differ cannot be matched at all, a reordered shard most likely comes from
    another writer (perhaps another model) whose other differences no reordering would fix, and a refusal cannot
    silently give a wrong answer; the user reorders or renames that shard's columns once. A shard of one column of
    vectors has no names inside its vectors: only that column's name is compared (with ``key`` it is the same in
    every shard), and a shard of vectors among shards of one column per feature is refused too.
    ``columns``: ``(names, listed)`` per shard from :func:`_parquet_header`, ``None`` for a ``.npy`` shard.
    """
    first = next(((p, c) for p, c in zip(paths, columns) if c is not None), None)
    if first is None:
        return
    (ref_path, (ref_names, ref_listed)) = first
    expected = (f"the vector columns of {ref_path.name!r}, the same names in the same order, in every Parquet shard "
                f"(shards are joined by position; rename or reorder this shard's columns)")
    for shard, found in zip(paths, columns):
        if found is None or found == first[1]:
            continue
        names, listed = found
        if listed != ref_listed:
            raise _fail(shard, f"the shard holds {_layout(names, listed)} where {ref_path.name!r} holds "
                               f"{_layout(ref_names, ref_listed)}", expected)
        if listed:
            raise _fail(shard, f"the shard's vectors are in column {names[0]!r} where {ref_path.name!r} has them in "
                               f"{ref_names[0]!r}", expected)
        i = next(i for i, (a, b) in enumerate(zip(names, ref_names)) if a != b)  # one width: as many names
        order = ", the same names in another order" if sorted(names) == sorted(ref_names) else ""
        raise _fail(shard, f"the shard's feature column {i} is {names[i]!r} where {ref_path.name!r} has "
                           f"{ref_names[i]!r} (columns {_names(names)}{order})", expected)


def _names(names) -> str:
    return ", ".join(map(repr, names[:4])) + (", ..." if len(names) > 4 else "")


def _layout(names, listed: bool) -> str:
    return f"one column of vectors {names[0]!r}" if listed else f"one column per feature ({_names(names)})"


def _check_finite(block, path, first_row, global_row):
    """``block`` (rows from ``first_row`` of ``path``) if finite; ``global_row`` None: ``path`` is all the rows
    (one file, a Zarr array), named without shard wording."""
    from isotropy._utils.validation import first_nonfinite

    found = first_nonfinite(block)
    if found is not None:
        where = "" if global_row is None else f" of the shard (row {global_row + found.row} of all shards)"
        raise _fail(path, f"a non-finite value {found.at(first_row + found.row)}{where}",
                    "finite numbers (no NaN or inf)")
    return block


def _load_npy_rows(path, start, stop, dtype, global_row, layout=None, width=None):
    block = None
    if layout is not None:  # the header read when the array was built: one plain read of these rows
        offset, stored, size, mtime = layout
        stored = np.dtype(stored)
        count = (stop - start) * width
        try:
            with open(path, "rb") as handle:
                stat = os.fstat(handle.fileno())
                if (stat.st_size, stat.st_mtime_ns) == (size, mtime):  # else rewritten since: read as a new file
                    handle.seek(offset + start * width * stored.itemsize)
                    block = np.fromfile(handle, dtype=stored, count=count)
        except OSError:
            block = None  # the general path names the problem
        if block is not None and block.size == count:
            block = block.reshape(stop - start, width).astype(dtype, copy=False)
        else:
            block = None
    if block is None:
        arr = _load_npy(Path(path), "r")
        # the rows the array was built with (from the header read then: its shape is every chunk's): a rewrite with
        # other rows was read as it is now, a shorter one giving fewer rows than the array has and a longer one its
        # first rows, and a metric the value of neither data set (a user trial)
        built = None if layout is None else (layout[2] - layout[0]) // max(1, width * np.dtype(layout[1]).itemsize)
        if arr.shape[0] < stop or (built is not None and arr.shape[0] != built):
            raise _fail(path, f"it holds {arr.shape[0]} rows now, {'not' if built is not None else 'fewer than'} the "
                              f"{built if built is not None else stop} it had when the array was built (it changed "
                              f"since)", "shards that keep their rows while they are read; read them again "
                              "(read_shards) after changing them")
        block = np.array(arr[start:stop], dtype=dtype)  # reads only these rows
    return _check_finite(block, path, start, global_row)


def _load_parquet(path, key, n_rows, dtype, global_row, stamp=None, *, label_column=None, width=None):
    """The rows of a Parquet shard; checked for expansion again only if it changed since ``stamp`` (its header's).
    ``label_column``: left out, as its header left it out. ``width``: the features the array was built with, from
    the first row of each shard (:func:`_parquet_header`)."""
    X, _ = _read_parquet(Path(path), key, checked=stamp is not None and _stamp(path) == stamp,
                         label_column=label_column, global_row=global_row)
    if X.shape[0] != n_rows:
        raise _fail(path, f"it changed while being read ({X.shape[0]} rows, {n_rows} when the array was built)",
                    "shards that stay the same during the computation")
    if width is not None and X.shape[1] != width:
        # what the first row said of a column (row ids, say: an 'id' of 0 there, 1.5 further on) the whole shard
        # does not bear out: refused, never a block of another width than the array's
        raise _fail(path, f"its rows read as {X.shape[1]} features, where its first row read as {width} (a first "
                          f"column headed as row ids, or a label column, holds other values further on)",
                    "a first column of row ids (distinct integers) throughout, or one to measure; rename or drop it")
    return _check_finite(np.asarray(X, dtype=dtype), path, 0, global_row)


def _read_zarr(path: Path, key, chunk_rows, most_rows=None, least_elements=0):
    from isotropy._utils.install import extra_imports

    with extra_imports(f"Reading {str(path)!r}", "distributed"):
        import dask.array as da
        import zarr  # noqa: F401 -- da.from_zarr reads the store with it: missing, it read as "not a readable Zarr array"

    try:
        arr = da.from_zarr(str(path), component=key)
    except Exception as exc:  # noqa: BLE001 -- missing metadata, wrong component
        members = _zarr_group_arrays(path)
        if members is not None:  # a group: which of its arrays, by --key (zarr's own words named its node types)
            from isotropy._utils.suggest import did_you_mean

            shown = ", ".join(repr(name) for name in members[:8]) + (", ..." if len(members) > 8 else "")
            what = "holds no arrays" if not members else f"holds the arrays {shown}"
            if key is None:
                raise _fail(path, f"the Zarr store is a group and {what}", "--key (key=) naming the array to measure"
                            ) from None
            error = _fail(path, f"the Zarr group has no array {key!r} and {what}", "--key (key=) naming one of them")
            raise type(error)(f"{error}{did_you_mean(str(key), members)}") from None
        if key is not None and _is_zarr_array(path):  # zarr's words: "No array found in store <FsspecStore(...)>"
            raise _fail(path, f"key={key!r} was given but the Zarr store is a single array",
                        "no key with a Zarr array (--key names an array of a Zarr group)") from None
        raise _fail(path, f"not a readable Zarr array ({_short(exc)})", "a 2-d numeric Zarr array") from None
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0 or arr.dtype.kind not in "biuf":
        raise _fail(path, f"the array has shape {arr.shape} and dtype {arr.dtype}",
                    "a 2-d numeric Zarr array with at least one row and one column")
    counts = _zarr_chunk_counts(path, key)
    if counts is not None and counts[3]:
        problem = _zarr_expansion_problem(counts[3], counts[4] * np.dtype(arr.dtype).itemsize)
        if problem is not None:
            raise _fail(path, problem, f"a Zarr array whose chunks expand at most {MAX_EXPANSION}x; if the store is "
                                       f"genuine, write it again with a lighter compressor or none")
    if counts is not None and counts[0] < counts[1]:
        stored, total, fill = counts[:3]
        raise _fail(path, f"the Zarr array stores {stored} of its {total} chunks (the missing ones would read as "
                          f"the fill value {fill})", "a Zarr array with every chunk stored (missing chunks mean an "
                          "incomplete or corrupt store; if chunks equal to the fill value were left out on purpose, "
                          "write the array again with write_empty_chunks=True)")
    dtype = np.float64 if arr.dtype.kind in "biu" else (np.float32 if arr.dtype.itemsize < 4 else arr.dtype)
    rows = chunk_rows or default_chunk_rows(arr.shape[1], np.dtype(dtype).itemsize, most_rows, least_elements)
    arr = arr.astype(dtype).rechunk({0: rows, 1: -1})
    starts = np.cumsum((0, *arr.chunks[0]))[:-1]
    return arr.map_blocks(_check_zarr_block, str(path), starts, dtype=dtype)


def _zarr_group_arrays(path: Path) -> list[str] | None:
    """The names of the arrays of the Zarr group at ``path`` (its own level, sorted), or None when it is not a group."""
    try:
        import zarr

        return sorted(zarr.open_group(str(path), mode="r").array_keys())
    except Exception:  # noqa: BLE001 -- not a group (an array, a broken store): the caller says what it is
        return None


def _is_zarr_array(path: Path) -> bool:
    """Whether the Zarr store at ``path`` is an array itself (not a group)."""
    try:
        import zarr

        zarr.open_array(str(path), mode="r")
    except Exception:  # noqa: BLE001 -- a group, a broken store: the caller says what it is
        return False
    return True


def _zarr_expansion_problem(sizes: dict, chunk_bytes: int) -> str | None:
    """Why stored chunk objects of ``sizes`` (key: bytes on disk), each decoding to ``chunk_bytes``, expand too far.

    A Zarr chunk is decoded whole (zstd, blosc, gzip: a 52,947-byte chunk declared 400000 x 1000 float32 decoded to
    1.6 GB), so every chunk object is checked against the size its grid declares (edge chunks are stored whole too),
    and all of them together, by :func:`isotropy.io._archives.expansion_problem`: the rule of ``.npz``, ``.pt``
    and Parquet files. Only the store's directory is read (file sizes), no chunk."""
    for chunk_key, size in sizes.items():
        problem = expansion_problem(f"its chunk {chunk_key!r}", chunk_bytes, size)
        if problem is not None:
            return problem
    return expansion_problem(f"its {len(sizes)} chunks", chunk_bytes * len(sizes), sum(sizes.values()))


def _zarr_chunk_counts(path: Path, key):
    """``(stored, total, fill value, sizes, chunk values)``: chunk objects (shards, when sharded) in the store and in
    the array's grid, the fill value, the bytes on disk of each stored object (by key; empty when zarr counted),
    and the values one object holds.

    The stored ones are counted in one walk of the array's directory, each file name decoded as chunk
    coordinates and checked by encoding them again (zarr 3's ``nchunks_initialized`` compares every
    chunk of the grid with every stored key: quadratic, and unbounded for a grid declared huge). With
    zarr 2, or a store that is not a directory, zarr counts. ``None`` when the array cannot be opened.
    """
    import zarr

    try:
        z = zarr.open_array(store=str(path), path=key or "", mode="r")
        grid = getattr(z, "shards", None) or z.chunks
        counts = tuple(-(-size // step) for size, step in zip(z.shape, grid))
        encode = getattr(getattr(z, "metadata", None), "encode_chunk_key", None)
        root = path / key if key else path
        values = math.prod(grid)
        if encode is None or not root.is_dir():
            return int(z.nchunks_initialized), int(z.nchunks), z.fill_value, {}, values
    except Exception:  # noqa: BLE001 -- opened by dask above; a store zarr cannot count is left as before
        return None
    stored, sizes = 0, {}
    for folder, _, files in os.walk(root):
        prefix = os.path.relpath(folder, root).replace(os.sep, "/")
        for name in files:
            chunk_key = name if prefix == "." else f"{prefix}/{name}"
            parts = re.split(r"[./]", chunk_key)
            parts = parts[1:] if parts[0] == "c" else parts
            if len(parts) != len(counts) or not all(p.isascii() and p.isdigit() for p in parts):
                continue
            coords = tuple(int(p) for p in parts)
            if all(c < n for c, n in zip(coords, counts)) and encode(coords) == chunk_key:
                stored += 1
                try:
                    sizes[chunk_key] = os.path.getsize(os.path.join(folder, name))
                except OSError:  # gone since the walk: zarr says so when it reads it
                    pass
    return stored, math.prod(counts), z.fill_value, sizes, values


def _check_zarr_block(block, path, starts, block_info=None):
    row = int(starts[block_info[0]["chunk-location"][0]])
    return _check_finite(block, path, row, None)  # one array: its rows, no shard wording


def read_shards(source: str | os.PathLike, *, key: str | None = None, chunk_rows: int | None = None,
                label_column: str | None = None):
    """Embeddings of shape ``(n_samples, n_features)`` from many shards, as a lazy row-chunked dask array.

    Parameters
    ----------
    source : path-like or str
        A directory holding ``.npy`` and/or ``.parquet`` shards (concatenated in the order of their
        file names, numbers as numbers: ``part-2`` before ``part-10``), a glob pattern such as
        ``"embeddings/part-*.npy"`` (its paths in that order), or
        a Zarr array (a ``.zarr`` directory or one holding Zarr metadata).
    key : str or None, default=None
        The column of vectors of the Parquet shards, or the array inside a Zarr group, as
        ``read_embeddings``'s ``key``.
    chunk_rows : int or None, default=None
        Rows per chunk (default: about 64 MiB per chunk). Shards are cut and joined into chunks
        of that many rows, in order, before any metric runs: a large ``.npy`` shard is split, many
        small shards are read by one task (1,500 one-row shards are one chunk, as one file of
        those rows would be). A Parquet shard is read whole, so a chunk holding one may be larger.
    label_column : str or None, default=None
        A column of every Parquet shard left out of the features, as ``read_embeddings``'s
        ``label_column`` leaves it out of a ``.parquet`` file (``isotropy measure FILE.parquet
        --labels FILE.parquet --label-column COL --workers N``). Refused with ``.npy`` shards and
        Zarr arrays, which have no named columns.

    Returns
    -------
    dask.array.Array of shape (n_samples, n_features)
        float32 or float64 (float64 for integer shards, float32 for float16), one column chunk.
        Each chunk is checked for NaN and inf when it is computed.

    Raises
    ------
    FileNotFoundError
        ``source`` does not exist.
    IsotropyValueError
        No shards, an unreadable shard, a shard that is not 2-d, shards of different widths or
        dtypes kinds that cannot be combined, Parquet shards whose vector columns differ in name or
        order (shards are joined by position); when computed, a NaN or inf (naming shard, row and column).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import numpy as np
    >>> from isotropy.io.shards import read_shards
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> for k in range(3):
    ...     np.save(root / f"part-{k}.npy", np.full((4, 2), float(k)))
    >>> X = read_shards(root)
    >>> X.shape, X.chunks[0], float(X.sum().compute())  # small shards: one chunk
    ((12, 2), (12,), 24.0)
    >>> read_shards(root, chunk_rows=5).chunks[0]  # large ones split
    (5, 5, 2)
    """
    return read_capped_shards(source, key=key, chunk_rows=chunk_rows, label_column=label_column)


def default_chunk_rows(width: int, itemsize: int, most_rows: int | None = None, least_elements: int = 0) -> int:
    """Rows per chunk when none are asked for: about ``_CHUNK_BYTES`` of rows ``width`` values of ``itemsize`` bytes
    wide, and at most ``most_rows``, unless that many rows hold fewer than ``least_elements`` values (narrow rows:
    then as many rows as hold them)."""
    width = max(1, int(width))
    rows = max(1, _CHUNK_BYTES // (width * int(itemsize)))
    if most_rows is None:
        return rows
    return max(1, min(rows, max(int(most_rows), -(-int(least_elements) // width))))


def read_capped_shards(source, *, key=None, chunk_rows=None, label_column=None, most_rows: int | None = None,
                       least_elements: int = 0):
    """:func:`read_shards`, whose default chunks also hold at most ``most_rows`` rows where those hold at least
    ``least_elements`` values (:func:`default_chunk_rows`; ``isotropy measure`` on dask: its row tiles' rows, so
    that no worker holds a chunk of 64 MiB to cut a tile from it). A Parquet shard is still read whole (its chunk
    keeps all its rows), as by :func:`read_shards`."""
    from isotropy.io._paths import check_path_given

    check_path_given(source, caller="read_shards", name="source", expected="a folder, a glob pattern or a Zarr store")
    from isotropy._utils.install import extra_imports

    with extra_imports(f"Reading {str(source)!r}", "distributed"):  # dask named with its extra, not a traceback
        import dask.array as da
        from dask import delayed
        from dask.base import tokenize

    from isotropy._utils.validation import check_scalar

    # the library's one range check: a number out of range (0, 2.5, True) is a ValueError, a non-number a TypeError
    chunk_rows = check_scalar(chunk_rows, "chunk_rows", caller="read_shards", kind=int, low=1, allow_none=True)
    chunk_rows = None if chunk_rows is None else int(chunk_rows)
    path = Path(str(source))
    # nothing there (a dangling link is something: its shard check names it); a missing 'x.zarr' included
    if not path.exists() and not path.is_symlink() and not glob.has_magic(str(source)):
        raise missing_embeddings(source)  # read_shards also reads one .npy or .parquet file: every form named
    if _is_zarr(path):
        if label_column is not None:
            raise _fail(path, f"label_column={label_column!r} was given but a Zarr array has no named columns",
                        "no label_column (it names a column of .parquet shards)")
        return _read_zarr(path, key, chunk_rows, most_rows, least_elements)
    paths = _shard_paths(source)
    single = path.is_file()  # one file (measure --workers): named as a file, not as a shard
    headers = []
    for shard in paths:
        if shard.suffix.lower() == ".npy":
            if key is not None:
                raise _fail(shard, f"key={key!r} was given but .npy shards hold a single array",
                            "no key with .npy shards")
            if label_column is not None:
                raise _fail(shard, f"label_column={label_column!r} was given but .npy shards have no named columns",
                            "no label_column with .npy shards (it names a column of .parquet shards)")
            headers.append((*_npy_header(shard), None))
        else:
            headers.append(_shard_header(shard, key, label_column, source, single))
    paths, headers = _without_empty_shards(paths, headers, single)
    width = headers[0][1]
    for shard, (_, d, _, _, _) in zip(paths, headers):
        if d != width:
            raise _fail(shard, f"the shard has {d} features (columns) but {paths[0].name!r} has {width}",
                        "shards of one width")
    _check_same_columns(paths, [h[4] for h in headers])
    dtype = np.result_type(*[h[2] for h in headers])
    rows = chunk_rows or default_chunk_rows(width, dtype.itemsize, most_rows, least_elements)
    chunks = []
    for group in _coalesce(paths, [h[0] for h in headers], rows, [h[3] for h in headers], width):
        # the workers read the pieces from their own working directory: a relative path given here named no file
        # there when the cluster (--scheduler) was started elsewhere (a trial)
        # (named in the task's messages as given here, as the other shard errors name them: shown)
        shown = {str(Path(path).absolute()): str(path) for _, path, *_ in group}
        group = [(kind, Path(path).absolute(), *rest) for kind, path, *rest in group]
        n = sum(piece[4] - piece[3] for piece in group)
        # a changed shard: a new key (a .npy piece with a layout carries its size and mtime already)
        stamps = [piece if len(piece) > 5 else (*piece, os.stat(piece[1]).st_mtime_ns) for piece in group]
        token = tokenize(stamps, key, dtype, single, label_column, width)
        task = delayed(_load_group)(group, key, dtype, single, label_column, width, shown,
                                    dask_key_name=f"read-shards-{token}")
        chunks.append(da.from_delayed(task, shape=(n, width), dtype=dtype))
    return chunks[0] if len(chunks) == 1 else da.concatenate(chunks, axis=0)


def _shard_header(shard: Path, key, label_column, source, single: bool):
    """:func:`_parquet_header` of one shard; its advice to read a label column with ``--labels <the shard>`` names the
    shards' source instead (labels are read from all the shards, as the embeddings: the shard alone was refused)."""
    import shlex

    try:
        return _parquet_header(shard, key, label_column)
    except EmbeddingsReadError as exc:
        text = str(exc)
        hint = f"--labels {shlex.quote(str(shard))} "
        if single or hint not in text:
            raise
        raise EmbeddingsReadError(text.replace(hint, f"--labels {shlex.quote(str(source))} ")) from None


def _without_empty_shards(paths: list[Path], headers: list, single: bool):
    """The shards with rows, and their headers; the others skipped with one warning (a writer's empty partitions,
    as Spark leaves them, aborted the whole read). A lone file without rows, or only such shards, is an error; so is
    an empty ``.npy`` shard of another width than the first shard with rows (a shard of another data set)."""
    kept = [(path, header) for path, header in zip(paths, headers) if header[0]]
    if not kept or single:
        if kept:
            return paths, headers
        raise _fail(paths[0], "the shard has no rows" if len(paths) == 1 else
                    f"none of the {len(paths)} shards has rows", "at least one row in the shards")
    width = kept[0][1][1]
    empty = [(path, header) for path, header in zip(paths, headers) if not header[0]]
    if not empty:
        return paths, headers
    for path, header in empty:
        if header[1] is not None and header[1] != width:
            raise _fail(path, f"the shard has no rows and {header[1]} features (columns), but "
                              f"{kept[0][0].name!r} has {width}", "shards of one width")
    import warnings

    names = ", ".join(repr(path.name) for path, _ in empty[:3]) + (f" and {len(empty) - 3} more" if len(empty) > 3
                                                                    else "")
    warnings.warn(f"{len(empty)} shard{'s' if len(empty) > 1 else ''} without rows skipped ({names}).", UserWarning,
                  stacklevel=3)
    return [path for path, _ in kept], [header for _, header in kept]


def _coalesce(paths: list[Path], n_rows: list[int], rows: int, layouts=None, width=None) -> list[list[tuple]]:
    """Cut the concatenated shards into chunks of ``rows`` rows: large ``.npy`` shards split, small shards joined.

    Each chunk is a list of pieces ``(kind, path, global first row, first row, stop row)`` read by
    one task (:func:`_load_group`), so 1,500 one-row shards make one chunk, not 1,500 tasks; a
    ``.npy`` piece whose header was read (``layouts``: see :func:`_npy_header`) also carries
    ``(data offset, stored dtype, size, mtime)`` and ``width``, so the task reads its rows without opening
    the header again; a Parquet piece carries the ``(size, mtime)`` its expansion check saw (see
    :func:`_parquet_header`). A Parquet shard is read whole, so it is never split: it closes the chunk
    before it when both would pass ``rows``.
    """
    groups, current, filled, row = [], [], 0, 0
    for path, n, layout in zip(paths, n_rows, layouts or [None] * len(paths)):
        if path.suffix.lower() != ".npy":
            if current and filled + n > rows:
                groups.append(current)
                current, filled = [], 0
            current.append(("parquet", str(path), row, 0, n) if layout is None else ("parquet", str(path), row, 0, n,
                                                                                     layout))
            filled += n
        else:
            start = 0
            while start < n:
                take = min(n - start, rows - filled)
                piece = ("npy", str(path), row + start, start, start + take)
                current.append(piece if layout is None else (*piece, layout, width))
                filled, start = filled + take, start + take
                if filled >= rows:
                    groups.append(current)
                    current, filled = [], 0
        if filled >= rows:
            groups.append(current)
            current, filled = [], 0
        row += n
    if current:
        groups.append(current)
    return groups


def _load_group(group: list[tuple], key, dtype, single: bool = False, label_column=None,
                width: int | None = None, shown: dict | None = None) -> np.ndarray:
    """The rows of one chunk: each piece read (checked for NaN and inf, named by its shard), then stacked.

    ``single``: the source is one file, whose bad row is named without shard wording ("row 3", not "row 3 of
    the shard (row 3 of all shards)"). ``shown``: each piece's absolute path (read by the workers) to the path as the
    user gave it, which a refusal names, as the shard errors found before any task name it (a NaN's named the
    absolute path, a user trial).
    """
    try:
        blocks = [_load_npy_rows(path, start, stop, dtype, None if single else global_row, *extra) if kind == "npy"
                  else _load_parquet(path, key, stop, dtype, None if single else global_row, *extra,
                                     label_column=label_column, width=width)
                  for kind, path, global_row, start, stop, *extra in group]
    except EmbeddingsReadError as exc:
        message = str(exc)
        for absolute, given in (shown or {}).items():
            message = message.replace(repr(absolute), repr(given))
        if message == str(exc):
            raise
        raise EmbeddingsReadError(message) from None
    return blocks[0] if len(blocks) == 1 else np.concatenate(blocks, axis=0)
