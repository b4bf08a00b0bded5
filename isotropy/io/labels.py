"""Read cluster labels, one per row of an embedding matrix, from a text, CSV/TSV, ``.npy``, ``.npz``, ``.pt``,
``.safetensors``, JSON-lines or ``.parquet`` file.

* text (``.txt``, ``.labels``, ``.lst`` or no extension): one label per line;
* ``.csv``/``.tsv``: one column of labels, or several 0/1 columns (a multi-label indicator matrix,
  each distinct row one cluster); an optional header line is recognised by its content (a name
  such as ``label``, or a word above numeric labels, ``0`` above labels none of them an integer, as pandas names an
  unnamed Series, or a non-0/1 line above 0/1 columns), never by the number of lines; a first column without a
  name on the header line that numbers the rows in order (pandas' index, 0, 1, 2, ...; R's ``write.csv``, 1, 2,
  3, ...) is left out; a column named as the labelling (``label``, ``class``, ``cluster``, ...) beside two or more
  other 0/1 columns is refused, naming ``--label-column``; with ``column``, its column named on line 1 or given by
  its 1-based position;
* ``.npy``: a 1-d array of labels or a 2-d 0/1 matrix;
* ``.npz``: the same, as the member named by ``column`` (or the only member);
* ``.pt``/``.pth`` (``torch.save`` of a tensor, or of a dict of tensors) and ``.safetensors``: the same, as the
  tensor named by ``column`` (or the only tensor), integers, floats (bfloat16 too) or booleans; read as the
  embeddings reader reads such files (:func:`isotropy.io.embeddings._torch_array`: ``weights_only=True``, the
  zip-expansion and storage checks), so the labels may sit in the embeddings file itself
  (``torch.save({"emb": X, "y": y}, path)``);
* ``.jsonl``/``.ndjson`` (JSON lines, as a texts file may be): the field named by ``column`` of each line, or
  the only field of objects of one field;
* ``.parquet``: the column named by ``column``, or the only column that does not hold vectors (a table of texts,
  embeddings and labels names it); only that column is read, once the file passed the decompression-bomb check
  of :func:`isotropy.io.embeddings.read_embeddings`.

Text and CSV/TSV files are read into memory, so bounded as :func:`isotropy.measure.from_model.read_texts` bounds
the texts they go with: a file past 1 GiB is refused unread, a line of a text file past 1 MiB (the line cap of
:mod:`isotropy.io.word_vectors`) before it is read whole, a line of a CSV/TSV or JSON-lines file past 4 MiB (a line
of 1 MiB characters at 4 bytes a character, in any encoding) before the file is parsed, and labels whose
fixed-width numpy array would take more than 100 times the file above 64 MiB (one very long line among short
labels) before the array is made.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np

from isotropy._utils.validation import IsotropyValueError, check_scalar
from isotropy.io._archives import EXPANSION_FLOOR_BYTES, MAX_EXPANSION
from isotropy.io._delimited import file_delimiter, table_quoting
from isotropy.io._encoding import (
    _ID_ENDINGS,
    MAX_LINE_CHARS,
    MAX_TEXT_FILE_BYTES,
    WIDE_SNIFF,
    header_name,
    is_label_header,
    is_row_id_header,
    text_codec,
    wide_encoding,
)
from isotropy.io._paths import _mib, npy_magic_problem, npy_size_problem, path_kind
from isotropy.io.word_vectors import _MAX_LINE

__all__ = ["LABEL_EXTENSIONS", "read_labels"]

_TEXT_EXTENSIONS = ("", ".txt", ".labels", ".lst")
# files of tensors, read as the embeddings reader reads them
_TENSORS = (".pt", ".pth", ".safetensors")
LABEL_EXTENSIONS = (".txt", ".labels", ".lst", ".csv", ".tsv", ".npy", ".npz", *_TENSORS, ".jsonl", ".ndjson",
                    ".parquet")
_EXPECTED = ("one label per line (.txt), one label column or several 0/1 columns (.csv, .tsv), "
             "a 1-d array or 2-d 0/1 array (.npy, or a named member of an .npz, or a named tensor of a .pt, .pth or "
             ".safetensors file), a named field of JSON lines (.jsonl, .ndjson), or a column of a .parquet file")
_JSON_LINES = (".jsonl", ".ndjson")
#: Files whose labels are an array of their own beside the features' (column= / --label-column names it, --key the
#: features'): never a column left out of the features (isotropy.measure.report.own_label_column)
MEMBER_EXTENSIONS = (".npz", *_TENSORS)
# files with named columns (column= / --label-column): an .npz archive's are its members, a .pt's or .safetensors'
# its tensors
_COLUMNS = (".csv", ".tsv", *_JSON_LINES, ".parquet", *MEMBER_EXTENSIONS)
_COLUMNS_EXPECTED = ("a .csv or .tsv file with a header line naming the column, a .jsonl or a .parquet file, a "
                     "member of an .npz archive, or a tensor of a .pt, .pth or .safetensors file")
_SHARD_LABELS = "a directory of .parquet shards, each with that column"


# A labels text file (one label a line, or a table) is read into memory: past this size it is refused, not read (the
# cap of read_texts, which reads the texts the labels go with)
_MAX_LABELS_BYTES = MAX_TEXT_FILE_BYTES
# Characters read at a time from a text file of one label a line (a line may be up to _MAX_LINE, 1 MiB, long); the
# labels of a piece are parsed into a numpy array at once: a file's labels are never all held as Python strings
_PIECE = 2**18
# The longest line of a CSV/TSV or JSON-lines labels file, in bytes, measured before it is parsed (csv and json read
# a line whole: one 500 MB line was 500 MB in memory before any check): a line of MAX_LINE_CHARS characters, the
# line cap of read_texts, which reads the texts of the same table, at 4 bytes a character (UTF-8, UTF-16 and UTF-32
# alike), so that no line the texts reader takes is refused here
_MAX_TABLE_LINE_BYTES = 4 * MAX_LINE_CHARS


def _fail(path, reason: str, expected: str = _EXPECTED, *, suggest: tuple | None = None) -> IsotropyValueError:
    """The reader's error; ``suggest``: ``(name, names)`` of a column not found, for a "Did you mean ...?"."""
    from isotropy._utils.suggest import did_you_mean

    close = did_you_mean(suggest[0], map(str, suggest[1])) if suggest is not None else ""
    return IsotropyValueError(f"Cannot read labels from {str(path)!r}: {reason}; expected {expected}.{close}")


def read_labels(path: str | os.PathLike, *, n_rows: int | None = None, column: str | None = None,
                row_kind: str = "embedding rows", encoding: str = "utf-8", row_note: str | None = None,
                _read_as: list | None = None) -> np.ndarray:
    """Read labels, one per embedding row.

    Parameters
    ----------
    path : path-like
        The labels file (see the module docstring for the formats); with ``column``, also a directory
        of ``.parquet`` shards: that column of each, in the order
        :func:`isotropy.io.shards.read_shards` joins them (shards without rows skipped).
    n_rows : int or None, default=None
        The number of embedding rows the labels belong to; a different count is an error
        (``None``: no check, every label of the file is returned). In ``.csv``/``.tsv`` files the first line is a header when its
        content says so: in one column, a usual header name (``label``, ``gold_label``,
        ``sentiment``, ``class``, ``y``, ...: :data:`isotropy.io._encoding.LABEL_HEADERS`, which
        :func:`isotropy.io.embeddings.read_embeddings` refuses as a feature, and ``y``, ``type``,
        ``group``) that is not also a label, a non-numeric word above integer labels, or ``0`` (pandas'
        name of an unnamed Series) above labels none of which is an integer; in several 0/1
        columns, a first line that is not all 0/1. The number of lines never decides: ``0`` above
        integer labels is a label, and one label too many says that ``column="0"`` reads it as pandas'
        header.
    column : str, optional
        The label column of a ``.csv``/``.tsv`` file (a table of texts and labels, say): its cells
        are the labels, the other columns are ignored. A name from its header line, or a 1-based
        position written as a positive integer (``"2"``, as ``cut -f 2`` numbers the columns; a name
        on the header line wins), for a file without a header line too: line 1 is then data when it
        holds a number or a text of three words or more, as
        :func:`isotropy.measure.from_model.read_texts` decides for the same table. In a
        ``.tsv`` file quotes are text, as in :func:`isotropy.measure.from_model.read_texts`.
        Of a ``.jsonl``/``.ndjson`` file, the field of each line's object (needed unless the first
        line's object has a single field, which every line must then hold); a number or true/false is read as its
        JSON text
        (``1``, ``true``), as a CSV cell would be. Of a ``.parquet`` file, the column (needed
        unless it is the only one that does not hold vectors), its values as stored; a missing
        one is refused, naming its row. Of an ``.npz`` archive, the member; of a ``.pt``/``.pth``
        file saving a dict of tensors, or of a ``.safetensors`` file, the tensor (needed unless
        it is the only one).
    row_kind : str, default="embedding rows"
        What the ``n_rows`` rows are, in the message of a count that differs (``"texts"``).
    encoding : str, default="utf-8"
        The text encoding of a text, ``.csv`` or ``.tsv`` file (``"latin-1"``, ``"cp1252"``, ...),
        as :func:`isotropy.measure.from_model.read_texts` takes it; a leading byte-order
        mark is not part of the first label. A UTF-16 or UTF-32 file (known by its byte-order mark or,
        without one, by its bytes) read in another encoding is refused naming its own; ``"utf-16"``
        (``"utf-32"``) reads one without a byte-order mark in the byte order its bytes show.
    row_note : str or None, default=None
        Said after a count that differs, in parentheses: how the ``n_rows`` rows were counted
        (``isotropy measure --model``: the blank lines of the texts file skipped).
    _read_as : list or None, default=None
        Private (``isotropy measure``): a ``column`` given by its position appends what it read, in words
        (``"the 2nd of 4 tab-separated columns (no header line)"``), for the command's note.

    Returns
    -------
    labels : ndarray of shape (n_rows,) or (n_rows, n_labels)
        1-d labels (strings from text and CSV files, as stored in ``.npy`` files and tensors; float16
        and bfloat16 tensors as float32), or an int8 0/1 indicator matrix for multi-label files.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from isotropy.io.labels import read_labels
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "y.txt"
    >>> _ = path.write_text("pos\\nneg\\npos\\n")
    >>> read_labels(path, n_rows=3).tolist()
    ['pos', 'neg', 'pos']
    """
    from isotropy.io._paths import check_path_given

    check_path_given(path, caller="read_labels", name="path", expected="a file path")
    text = text_codec(encoding, caller="read_labels")
    # (-1 was read, then said "the embeddings have -1 rows"; 0 rows is a count, refused by the count check below)
    n_rows = check_scalar(n_rows, "n_rows", caller="read_labels", kind=int, low=0, allow_none=True)
    path = Path(path)
    kind = path_kind(path)
    import glob

    # a glob of .parquet shards, as EMBEDDINGS takes one ('pq/*.parquet' was "does not exist" here, a trial)
    pattern = kind == "does not exist" and glob.has_magic(str(path)) and column is not None
    if kind == "does not exist" and not pattern:
        shards = (" (a glob of .parquet shards is read with the name of their label column: --label-column; column= "
                  "in Python)" if glob.has_magic(str(path)) else "")
        raise FileNotFoundError(f"The labels file {str(path)!r} does not exist{shards}; expected {_EXPECTED}.")
    directory = pattern or (kind is not None and kind.startswith("is a directory"))
    if directory and column is not None:  # the column of a directory (or glob) of .parquet shards
        if not pattern:
            check_column(path, column)  # a Zarr store: no columns
        labels = _read_shard_labels(path, column)
    elif kind is not None:  # a directory, a device such as /dev/zero, a link loop or a dangling link
        raise _fail(path, f"it {kind}" + (" (for labels inside .parquet shards, name their column: --label-column; "
                                          "column= in Python)" if directory else ""))
    else:
        labels = _read_file(path, column, text, _read_as)
    if n_rows is not None and labels.shape[0] != n_rows:
        hint, suffix = "", path.suffix.lower()
        if suffix in (".csv", ".tsv") and labels.shape[0] == n_rows + 1 and labels.ndim == 1:
            if _first_field(path, text) == str(labels[0]) == _PANDAS_NAME and column is None:
                # pandas' header of an unnamed Series, or a label 0: the count alone does not say which (a stray
                # last line is as likely), so it is not taken as the header, but named as one
                hint = (f" (line 1 {_PANDAS_NAME!r} was read as a label, not a header; if it is the header pandas "
                        f"writes above an unnamed Series, pd.Series(y).to_csv(path, index=False), read it as one: "
                        f"--label-column {_PANDAS_NAME} (column= in Python); or is the last line {str(labels[-1])!r} "
                        f"a stray one?)")
            elif _first_field(path, text) == str(labels[0]):
                hint = (f" (line 1 {str(labels[0])!r} was read as a label, not a header; a header names the "
                        f"column, e.g. 'label'; or is the last line {str(labels[-1])!r} a stray one?)")
            else:  # a header line was read as such: the label too many is elsewhere
                hint = f" (after the header line; is the last line {str(labels[-1])!r} a stray one?)"
        elif suffix in _TEXT_EXTENSIONS and labels.shape[0] == n_rows + 1 and labels.ndim == 1:
            hint = (f" (a text file has one label per line and no header, so line 1 {str(labels[0])!r} is a label: "
                    f"if it is a header, remove it or save the file as .csv, whose header line is recognised; or is "
                    f"the last line {str(labels[-1])!r} a stray one?)")
        if row_note:
            hint += f" ({row_note})"
        if row_kind == "embedding rows":
            raise _fail(path, f"it has {labels.shape[0]} labels but the embeddings have {n_rows} rows{hint}",
                        "one label per embedding row")
        raise _fail(path, f"it has {labels.shape[0]} labels for {n_rows} {row_kind}{hint}", f"one label per row of "
                          f"the {row_kind}")
    return labels


def _read_file(path: Path, column, text, read_as: list | None = None) -> np.ndarray:
    """:func:`read_labels` of one file, before the count is checked."""
    check_column(path, column)
    suffix = path.suffix.lower()
    if suffix in (*_COLUMNS, *_TEXT_EXTENSIONS) and suffix not in (".parquet", *MEMBER_EXTENSIONS):  # binary: checked
        # by their readers
        from isotropy.io._paths import binary_kind

        binary = binary_kind(path, encoding=text[1], nul=False)  # NUL in a label: said below, by its line
        if binary is not None:  # a .npy decoded as latin-1 without an error, each line of bytes a "label"
            raise _fail(path, f"it is {binary}, not {suffix or 'plain'} text"
                              + (" (labels in a .npy file are read from a file named .npy)" if "npy" in binary else ""))
        size = path.stat().st_size
        if size > _MAX_LABELS_BYTES:  # read into memory below: a bound on it
            raise _fail(path, f"it is {size:,} bytes", f"at most {_MAX_LABELS_BYTES:,} bytes "
                              f"({_MAX_LABELS_BYTES // 2**30} GiB) of labels, as read_texts reads")
        # after the binary check: a .npy's bytes may hold every other byte NUL, as UTF-16 text does
        text = _wide_text(path, text)
    if suffix == ".npy":
        labels = _read_npy(path)
    elif suffix == ".npz":
        labels = _read_npz(path, column)
    elif suffix in _TENSORS:
        labels = _read_tensor(path, column)
    elif suffix in _JSON_LINES:
        if column is None:  # the field of objects of one field, as a .parquet file's only column that is no vector
            fields = _first_json_fields(path, text)
            if len(fields) != 1:
                named = "" if not fields else f" and its first object has {len(fields)} fields: {fields[:20]}"
                raise _fail(path, f"no label column was named for a JSON-lines file{named}",
                            "the name of the field that holds the labels (--label-column; column= in Python)")
            column = fields[0]
        labels = _read_json_column(path, column, text)
    elif suffix == ".parquet":
        labels = _read_parquet(path, column)
    elif column is not None:  # a .csv or .tsv file: check_column refused the others
        labels = _read_column(path, file_delimiter(path, text[1]), column, text, read_as)
    elif suffix in (".csv", ".tsv"):
        labels = _read_delimited(path, file_delimiter(path, text[1]), text)
    elif suffix in _TEXT_EXTENSIONS:
        labels = _read_text(path, text)
    else:
        raise _fail(path, f"unknown file extension {suffix!r}", f"one of {', '.join(LABEL_EXTENSIONS)}")
    return labels


def _read_shard_labels(path: Path, column: str) -> np.ndarray:
    """The column ``column`` of every ``.parquet`` shard of the directory ``path``, in the order
    :func:`isotropy.io.shards.read_shards` joins them (their names, numbers as numbers), shards without rows
    skipped as it skips them. Labels written beside the vectors, one shard at a time, needed concatenating by hand,
    in the right order."""
    from isotropy.io.shards import _shard_paths

    shards = _shard_paths(path, fail=_fail, expected=_SHARD_LABELS)  # named as labels, not as embeddings
    others = [shard for shard in shards if shard.suffix.lower() != ".parquet"]
    if others:
        raise _fail(others[0], f"a label column ({column!r}) was named for the shard directory {str(path)!r}, but "
                               f"this shard is {others[0].suffix} and has no columns",
                    _SHARD_LABELS)
    import pyarrow.parquet as pq

    parts = []
    for shard in shards:
        try:
            rows = pq.ParquetFile(shard).metadata.num_rows
        except Exception as exc:  # noqa: BLE001 -- not Parquet, a corrupt footer: named, as read_shards names it
            raise _fail(shard, f"not a readable .parquet file ({' '.join(str(exc).split())[:120]})") from None
        if rows:
            parts.append(_read_parquet(shard, column))
    if not parts:
        raise _fail(path, "none of its .parquet shards has rows", "labels in at least one shard")
    kinds = {part.dtype.kind for part in parts}
    if len(kinds) > 1 and not kinds <= set("iuf"):  # numbers in one shard, text in another: not one labelling
        raise _fail(path, f"its shards hold labels of different kinds ({', '.join(sorted(str(p.dtype) for p in parts[:3]))})",
                    "the same kind of label (text or numbers) in every shard")
    return np.concatenate(parts)


def check_column(path: str | os.PathLike, column: str | None) -> None:
    """Refuse a label ``column`` of a labels file without columns (any but ``.csv``/``.tsv``/``.jsonl``/``.ndjson``),
    which would ignore it.

    :func:`read_labels` checks it before it reads the file; ``isotropy measure`` before it reads anything (its
    message prefixed with ``--label-column``).
    """
    suffix = Path(path).suffix
    if column is not None and Path(path).is_dir():  # .parquet shards: their column (_read_shard_labels)
        from isotropy.io.shards import _is_zarr

        if _is_zarr(Path(path)):  # read as shards, it was "Cannot read embeddings from ...", blaming EMBEDDINGS
            raise _fail(path, f"a label column ({column!r}) was named, but a Zarr store has no columns (and is not "
                              f"read as labels: save them as a .npy file, or as a column of a .parquet file)",
                        f"{_COLUMNS_EXPECTED}, or {_SHARD_LABELS}")
        return
    if column is not None and suffix.lower() not in (*_COLUMNS, *_TEXT_EXTENSIONS, ".npy"):
        # a file read_labels does not read at all (a .pt dict, a .dat file): "leave the column out" was advice that
        # led to "unknown file extension" next (a user trial), so the extension is refused first, as read_labels does
        raise _fail(path, f"unknown file extension {suffix.lower()!r}", f"one of {', '.join(LABEL_EXTENSIONS)}")
    if column is not None and suffix.lower() not in _COLUMNS:
        kind = f"a {suffix} file" if suffix else "a file without extension (plain text)"
        raise _fail(path, f"a label column ({column!r}) was named, but {kind} has no columns (leave the column out: "
                          f"that file holds the labels alone)", _COLUMNS_EXPECTED)


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


#: The header pandas writes above an unnamed Series (``pd.Series(y).to_csv(path, index=False)``, the column name ``0``)
_PANDAS_NAME = "0"


def _is_header(rows, width) -> bool:
    """Whether the first line of a label table is a header, judged from the cells only."""
    first, rest = rows[0], rows[1:]
    if width > 1:  # 0/1 indicator columns: a header is a first line that is not all 0/1
        return not all(cell in ("0", "1") for cell in first)
    cell, others = first[0], {row[0] for row in rest}
    if cell in others:
        return False  # the same text lower down is a label
    if is_label_header(cell):
        return True
    if cell == _PANDAS_NAME and rest and not any(_is_int(row[0]) for row in rest):
        return True  # pandas' header above words: pd.Series(["cat", "dog"]).to_csv(path, index=False)
    return bool(rest) and not _is_int(cell) and all(_is_int(row[0]) for row in rest)  # a word above integers


def _indicator(values: np.ndarray, path) -> np.ndarray:
    if values.dtype.kind in "biuf":
        ok = np.isin(values, (0, 1))
        if ok.all():
            return values.astype(np.int8)
        bad = values[~ok][0]
    else:
        ok = np.isin(values.astype(str), ("0", "1"))
        if ok.all():
            return (values.astype(str) == "1").astype(np.int8)
        bad = values[~ok][0]
    bad = bad.item() if isinstance(bad, np.generic) else bad  # 'x', not np.str_('x')
    shown = repr(bad) if len(repr(bad)) <= 60 else repr(bad)[:57] + "..."
    raise _fail(path, f"a matrix of labels must hold 0/1 indicators (multi-label); found {shown}",
                "0/1 columns, one label column, or the name of the label column of a table with a header "
                "(--label-column; column= in Python)")


def _read_npy(path) -> np.ndarray:
    problem = npy_size_problem(path)  # before numpy allocates the shape claimed, or reads the first array of two
    if problem is not None:
        raise _fail(path, problem, "a complete .npy array as np.save writes it")
    try:
        labels = np.load(path, allow_pickle=False)
        if not isinstance(labels, np.ndarray):  # np.load opened a zip archive (an .npz) as one
            labels.close()
            raise _fail(path, npy_magic_problem(path) or "not a .npy file")
    except IsotropyValueError:
        raise
    except Exception as exc:  # noqa: BLE001 -- corrupt header, object arrays, truncated data, not a .npy at all
        problem = npy_magic_problem(path)  # else numpy's "contains pickled (object) data" for any non-.npy file
        if problem is not None:
            raise _fail(path, problem) from None
        text = " ".join(str(exc).split())[:120]
        raise _fail(path, f"not a readable .npy array ({text})") from None
    return _array_labels(labels, path)


def _read_npz(path, column) -> np.ndarray:
    """The member ``column`` of an ``.npz`` archive (or its only member), as a ``.npy`` file of labels is read.

    The member is checked before numpy reads it (its expansion and its declared size, as the embeddings reader
    checks the member it reads); pickled (object) members are refused.
    """
    from isotropy.io.embeddings import _check_npz_member

    try:
        archive = np.load(path, allow_pickle=False)
    except Exception as exc:  # noqa: BLE001 -- not a zip archive, a corrupt directory
        with open(path, "rb") as handle:
            head = handle.read(8)
        problem = (f"not a readable .npz archive ({' '.join(str(exc).split())[:120]})" if head.startswith(b"PK") else
                   f"not an .npz archive (a zip archive of .npy arrays, starting with b'PK'): it starts with {head!r}")
        raise _fail(path, problem) from None
    if isinstance(archive, np.ndarray):  # a .npy file named .npz: its one array
        if column is not None:
            raise _fail(path, f"a member ({column!r}) was named, but the file is a .npy array, not an .npz archive",
                        "the label column left out for a file holding one array")
        return _array_labels(archive, path)
    with archive:
        name = _pick(path, {name: name for name in archive.files}, column, ".npz archive")
        member = name if name in archive.zip.namelist() else name + ".npy"
        _check_npz_member(path, archive.zip, member, fail=_fail)
        try:
            labels = archive[name]
        except Exception as exc:  # noqa: BLE001 -- pickled (object) data, a truncated member
            raise _fail(path, f"member {name!r} is not readable ({' '.join(str(exc).split())[:120]})") from None
    if not isinstance(labels, np.ndarray):  # numpy returns a member that is not a .npy array as its raw bytes
        raise _fail(path, f"member {name!r} is not a .npy array")
    return _array_labels(labels, path)


def _pick(path, arrays: dict, column, what: str):
    """The array of ``arrays`` named ``column``, or the only one; ``what``: the container ("saved dict"), as
    :func:`isotropy.io.embeddings._pick` takes it, whose place this takes in the labels reader's words (its name is
    ``--label-column``, not ``--key``, and a name not found is suggested)."""
    noun = "arrays" if what == ".npz archive" else "tensors"
    # listed in the order saved (an archive's, a dict's), but a .safetensors file's by name: its loaders return the
    # tensors in no fixed order
    names = sorted(arrays) if what == ".safetensors file" else list(arrays)
    if not names:
        raise _fail(path, f"the {what} holds no {noun}")
    if column is None and len(names) > 1:
        shown = ", ".join(repr(n) for n in names[:8]) + (", ..." if len(names) > 8 else "")
        raise _fail(path, f"the {what} holds several {noun} ({shown})",
                    "the one holding the labels named with --label-column (column= in Python)")
    name = names[0] if column is None else column
    if name not in arrays:
        raise _fail(path, f"the {what} has no {noun[:-1]} {name!r}", "one of " + ", ".join(map(repr, names[:8])),
                    suggest=(name, names))
    return arrays[name]


def _no_member(path, column, what: str) -> None:
    """Refuse a tensor named (``column``) in a ``.pt`` file of one tensor (``what``), in the labels reader's words."""
    raise _fail(path, f"a tensor ({column!r}) was named, but the file saves a single tensor, not a dict of tensors",
                "the label column left out for a file holding one tensor")


def _read_tensor(path, column) -> np.ndarray:
    """The tensor ``column`` of a ``.pt``/``.pth`` or ``.safetensors`` file (or its only tensor), read by the
    embeddings reader's code (:func:`isotropy.io.embeddings._torch_array`, ``_safetensors_array``: the same
    ``weights_only=True`` load and expansion, layout and storage checks, bfloat16 as float32) in this reader's
    words, then taken as a ``.npy`` file of labels is."""
    from isotropy.io import embeddings

    if path.suffix.lower() == ".safetensors":
        labels = embeddings._safetensors_array(path, column, fail=_fail, pick=_pick)
    else:
        labels = embeddings._torch_array(path, column, fail=_fail, pick=_pick, no_key=_no_member, labels=True)
    if labels.dtype.kind == "f" and labels.itemsize < 4:  # float16 of a .safetensors file: float32, as a .pt's is
        labels = labels.astype(np.float32)
    return _array_labels(labels, path)


def _array_labels(labels: np.ndarray, path) -> np.ndarray:
    """The labels of a ``.npy`` array (or ``.npz`` member): 1-d, a column, or a 2-d 0/1 indicator matrix."""
    if labels.dtype.kind == "c":  # each distinct complex value was taken as a cluster: no labelling means that
        raise _fail(path, f"the array is complex ({labels.dtype})", "real labels: integers, strings, or a 2-d 0/1 array")
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    if labels.ndim == 1:
        if labels.dtype.kind == "f" and not np.isfinite(labels).all():
            raise _fail(path, "it contains NaN or inf", "finite labels")
        return labels
    if labels.ndim == 2:
        return _indicator(labels, path)
    raise _fail(path, f"the array has shape {labels.shape}", "a 1-d array of labels or a 2-d 0/1 array")


def _read_text(path, text: tuple[str, str]) -> np.ndarray:
    """One label a line, stripped; blank lines at the end left out, one elsewhere refused.

    Lines are those of ``str.splitlines`` on the whole text (``\\r\\n``, ``\\r``, ``\\x85``, ``\\u2028``, ... end
    one), found a piece of ``_PIECE`` characters at a time: a line longer than ``_MAX_LINE`` (its line break not
    counted) is refused before it is read whole, and labels whose fixed-width array would take far more than the
    file are refused (:func:`_check_width`) before the array is made. A piece is parsed at once; one with a blank
    line, a line near the cap or labels near the width limit line by line (:func:`_read_lines`), which says where.
    """
    size = path.stat().st_size
    state = _Lines(path, size)
    try:
        with open(path, encoding=text[1], newline="") as handle:
            rest = ""
            while True:
                piece = handle.read(_PIECE)
                lines = (rest + piece).splitlines(keepends=True)
                # the last line may go on in the next piece (a "\r" may be followed by its "\n"): kept for it
                rest = lines.pop() if piece and lines else ""
                if _line_length(rest) > _MAX_LINE:
                    lines.append(rest)
                if lines:
                    _read_piece(state, lines)
                if not piece:
                    break
    except UnicodeDecodeError:
        raise _fail(path, _not_text(text, path), "a text file with one label per line") from None
    if state.gap is not None:
        raise _fail(path, f"line {state.gap} is empty", "one non-empty label per line")
    if not state.blocks:
        raise _fail(path, "the file is empty")
    return state.blocks[0] if len(state.blocks) == 1 else np.concatenate(state.blocks)


class _Lines:
    """Where :func:`_read_text` is in a file: the labels so far (arrays), lines read, the longest label and where it
    is, the first of the blank lines just read (``empty``) and the first blank line followed by a label (``gap``)."""

    def __init__(self, path, size: int):
        self.path, self.size, self.limit = path, size, _width_limit(size)
        self.blocks, self.n, self.longest, self.longest_line, self.lineno = [], 0, 0, 0, 0
        self.empty = self.gap = None


def _read_piece(state: _Lines, lines: list[str]) -> None:
    """The labels of ``lines`` (whole lines, with their line breaks) at once: the usual piece, of labels only."""
    long = max(map(len, lines)) > _MAX_LINE  # with its line break: a line near the cap, measured line by line
    if state.gap is not None:  # a blank line before a label: the file is refused once read (as UTF-8 text)
        if long:  # only a line past the cap is said before the gap
            _read_lines(state, lines, list(map(str.strip, lines)))
        else:
            state.lineno += len(lines)
        return
    labels = list(map(str.strip, lines))
    if long or state.empty is not None or "" in labels:
        _read_lines(state, lines, labels)
        return
    widest = max(map(len, labels))
    if 4 * (state.n + len(labels)) * max(state.longest, widest) > state.limit:
        _read_lines(state, lines, labels)  # refused at the label that makes the array too large
        return
    _refuse_trailing_nul(state.path, labels, lambda i: f"line {state.lineno + 1 + i}")
    if widest > state.longest:
        state.longest, state.longest_line = widest, state.lineno + 1 + list(map(len, labels)).index(widest)
    state.n += len(labels)
    state.lineno += len(labels)
    state.blocks.append(np.asarray(labels))


def _read_lines(state: _Lines, lines: list[str], labels: list[str]) -> None:
    """The labels of ``lines`` one at a time: a blank line, a line past the cap, the label past the width limit."""
    kept, numbers = [], []
    for line, label in zip(lines, labels):
        state.lineno += 1
        if _line_length(line) > _MAX_LINE:
            raise _fail(state.path, f"line {state.lineno} is longer than {_MAX_LINE:,} characters", "one label per line")
        if not label:
            state.empty = state.lineno if state.empty is None else state.empty
            continue
        if state.empty is not None and state.gap is None:
            state.gap = state.empty  # refused once the whole file is known to be UTF-8 text, as before
        state.empty = None
        if state.gap is not None:
            continue
        state.n += 1
        if len(label) > state.longest:
            state.longest, state.longest_line = len(label), state.lineno
        if 4 * state.n * state.longest > state.limit:
            _check_width(state.path, state.n, state.longest, state.size, line=state.longest_line)
        kept.append(label)
        numbers.append(state.lineno)
    _refuse_trailing_nul(state.path, kept, lambda i: f"line {numbers[i]}")
    if kept:
        state.blocks.append(np.asarray(kept))


# What str.splitlines ends a line at ("\r\n" too): a line break, not a character of the line
_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def _line_length(line: str) -> int:
    """The characters of ``line`` (one of ``str.splitlines(keepends=True)``) without its line break."""
    if line.endswith("\r\n"):
        return len(line) - 2
    return len(line) - (line[-1:] in _LINE_BREAKS) if line else 0


def _width_limit(size: int) -> int:
    """Bytes the array of a labels file of ``size`` bytes may take: 100x the file above 64 MiB, as for archives."""
    return max(EXPANSION_FLOOR_BYTES, MAX_EXPANSION * size)


def _check_width(path, n: int, longest: int, size: int, *, line: int | None = None) -> None:
    """Refuse ``n`` labels whose array (each as wide as the ``longest``, 4 bytes a character) is too large.

    A numpy array of strings gives every label the width of the longest: one line of a million characters among
    short labels would make each of them 4 MB.
    """
    need = 4 * n * longest
    if need <= _width_limit(size):
        return
    where = f"{longest:,} characters{'' if line is None else f', line {line}'}"
    raise _fail(path, f"{n} labels as wide as its longest ({where}) would take {need:,} bytes as an array, more than "
                      f"{MAX_EXPANSION}x the file ({size:,} bytes) above {EXPANSION_FLOOR_BYTES // 2**20} MiB",
                "labels of similar lengths")


def _first_field(path, text) -> str | None:
    """The first field of the file's first non-blank line, as the readers strip it (None if unreadable)."""
    try:
        text = _wide_text(path, text)  # as the labels were read (a UTF-16 file without a byte-order mark)
        with open(path, encoding=text[1], errors="replace") as handle:
            for line in handle:
                if line.strip():
                    return line.strip().split(file_delimiter(path, text[1]))[0].strip()
    except (OSError, IsotropyValueError):
        return None
    return None


def _refuse_trailing_nul(path, labels, where) -> None:
    """Refuse a label ending with a NUL character, ``where(i)`` naming the place of ``labels[i]`` in the file.

    numpy's fixed-width strings drop trailing NULs: ``'a\\x00'`` would become the label ``'a'`` (and ``'\\x00'`` an
    empty one), merging two clusters without a word. Every reader of text labels checks them with this.
    """
    ending = next((i for i, label in enumerate(labels) if label.endswith("\x00")), None)
    if ending is None:
        return
    shown = repr(labels[ending]) if len(repr(labels[ending])) <= 60 else repr(labels[ending])[:57] + "..."
    raise _fail(path, f"{where(ending)} ends with a NUL character ({shown}), which a label array would drop "
                      f"(merging it with the label without it)", "labels without a trailing NUL")


def _read_column(path, sep: str, column: str, text: tuple[str, str], read_as: list | None = None) -> np.ndarray:
    """The cells of the column ``column`` of a delimited file: named on its first line, or given by its 1-based
    position (``"2"``), line 1 then a header or data as :func:`isotropy.io._delimited.no_header` says (one column: as
    without a column), as :func:`isotropy.measure.from_model.read_texts` reads the same table; what a position read
    is appended to ``read_as``."""
    from isotropy.io._delimited import column_read, no_header, position_given, separated

    # quotes are text in a .tsv, as read_texts reads the same table
    rows = _table_rows(path, sep, text, quoting=table_quoting(sep))
    # names matched as read_embeddings(label_column=) matches them: a byte-order mark and spaces around left out
    header, name = list(map(header_name, rows[0])), header_name(column)
    width, data = len(header), no_header(header)
    position = position_given(name, header, lambda j: _numbers_below(rows, j))
    if position is not None and position > width:
        line, names = ("line 1, data", "(it has no header line to name one by)") if data else \
                      ("its header line", "or one of those names")
        raise _fail(path, f"column {column!r} is a position past its {width} {separated(sep)} "
                          f"column{'s' * (width != 1)} ({line}: {_cells(header)})",
                    f"a position from 1 to {width} {names}")
    if position is None and name not in header:
        if data:  # only a position can say which column of a headerless file holds the labels
            raise _fail(path, f"it has no header line: line 1 holds data ({_cells(header)}), not column names, so "
                              f"{column!r} names none of them",
                        f"the label column's position, 1 to {width} (as cut -f counts its {separated(sep)} columns), "
                        f"or a first line naming them")
        shown = [cell[:40] for cell in header[:20]]
        raise _fail(path, f"it has no column {column!r} (its header: {shown}{' ...' if len(header) > 20 else ''})",
                    f"the name of a column of its first line or a position from 1 to {width}",
                    suggest=(column, header))
    if position is None and header.count(name) > 1:
        raise _fail(path, f"its header has {header.count(name)} columns named {name!r}",
                    "one column of that name to read the labels from")
    has_header = position is None or (not data if width > 1 else _is_header(rows, 1))
    j, labels, lines = header.index(name) if position is None else position - 1, [], []
    if position is not None and read_as is not None:
        read_as.append(column_read(position, width, sep, header[j] if has_header else None))
    for line, row in enumerate(rows[1:] if has_header else rows, start=2 if has_header else 1):
        if not any(row):
            continue  # a blank line, as read_texts skips it in the same table
        if len(row) != len(header):
            raise _fail(path, f"line {line} has {len(row)} columns, {'the header' if has_header else 'line 1'} "
                              f"{len(header)}", "the same number of columns on every line")
        if not row[j]:
            raise _fail(path, f"line {line} has no label in column {column!r}", "a label in every row")
        labels.append(row[j])
        lines.append(line)
    if not labels:
        raise _fail(path, "it has a header and no rows")
    _refuse_trailing_nul(path, labels, lambda i: f"line {lines[i]} of column {column!r}")
    _check_width(path, len(labels), max(map(len, labels)), path.stat().st_size)
    return np.asarray(labels)


def _numbers_below(rows: list[list[str]], j: int) -> bool:
    """Whether every non-blank line below line 1 has a number in its column ``j`` (counted from 0), and there is one."""
    from isotropy.io._delimited import is_number

    below = [row for row in rows[1:] if any(row)]
    return bool(below) and all(j < len(row) and is_number(row[j]) for row in below)


def _cells(cells: list[str], n: int = 4) -> str:
    """The first ``n`` cells of a line, quoted and shortened, for a message."""
    from isotropy.io._delimited import shorten_cell

    return ", ".join(repr(shorten_cell(cell)) for cell in cells[:n]) + (", ..." if len(cells) > n else "")


def _json_objects(path, text: tuple[str, str]):
    """``(line number, object)`` of every non-blank line of a JSON-lines file; a line that is too long, no JSON or no
    object, and a file that is not text in its encoding, are refused naming the line."""
    import json

    from isotropy._utils import jsontext

    _refuse_long_line(path, "one JSON object per line")
    try:
        with open(path, encoding=text[1]) as handle:
            for lineno, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                if len(line) > _MAX_LINE:
                    raise _fail(path, f"line {lineno} is longer than {_MAX_LINE:,} characters",
                                "one JSON object per line")
                try:
                    record = jsontext.loads(line)
                except json.JSONDecodeError as exc:
                    raise _fail(path, f"line {lineno} is not JSON ({exc.msg})", "one JSON object per line") from None
                if not isinstance(record, dict):
                    raise _fail(path, f"line {lineno} is a JSON {type(record).__name__}, not an object",
                                "one JSON object per line")
                yield lineno, record
    except UnicodeDecodeError:
        raise _fail(path, _not_text(text, path)) from None


def _first_json_fields(path, text: tuple[str, str]) -> list[str]:
    """The field names of the first object of a JSON-lines file (its lines refused as :func:`_json_objects` does)."""
    for _, record in _json_objects(path, text):
        return [str(key) for key in record]
    raise _fail(path, "the file is empty")


def _read_json_column(path, column: str, text: tuple[str, str]) -> np.ndarray:
    """The field ``column`` of every line of a JSON-lines file (each line an object; blank lines skipped)."""
    import json

    name, labels, lines = header_name(column), [], []
    for lineno, record in _json_objects(path, text):
        keys = {header_name(key): key for key in record}
        if name not in keys:
            shown = [str(key)[:40] for key in list(record)[:20]]
            raise _fail(path, f"line {lineno} has no field {column!r} (its fields: {shown})",
                        "the label field on every line")
        value = record[keys[name]]
        if value is None or isinstance(value, (dict, list)) or str(value).strip() == "":
            raise _fail(path, f"line {lineno} has no label in field {column!r} (it holds "
                              f"{json.dumps(value)[:40]})", "a string, number or true/false label on every line")
        # a number or a boolean as its JSON text (1, 2.5, true), as the same label in a CSV cell reads
        labels.append(value.strip() if isinstance(value, str) else json.dumps(value))
        lines.append(lineno)
    if not labels:
        raise _fail(path, "the file is empty")
    _refuse_trailing_nul(path, labels, lambda i: f"line {lines[i]}'s field {column!r}")
    _check_width(path, len(labels), max(map(len, labels)), path.stat().st_size)
    return np.asarray(labels)


def _read_parquet(path, column: str | None) -> np.ndarray:
    """The column ``column`` of a Parquet file, or its only column that does not hold vectors; values as stored
    (integers stay integers), none missing. Only the file's schema and that column are read, after the
    decompression-bomb check of the embeddings reader."""
    from isotropy.io.embeddings import _check_parquet_expansion, _import_optional

    pd = _import_optional("pandas", path, "pandas and pyarrow")
    pq = _import_optional("pyarrow.parquet", path, "pandas and pyarrow")
    import pyarrow as pa

    _check_parquet_expansion(path, fail=_fail)
    try:
        schema = pq.read_schema(path)
    except Exception as exc:  # noqa: BLE001 -- not a Parquet file, a corrupt footer
        raise _fail(path, f"not a readable .parquet file ({' '.join(str(exc).split())[:120]})") from None
    names = [name for name in schema.names if not name.startswith("__index_level_")]  # pandas' stored index
    vectors = {field.name for field in schema
               if pa.types.is_list(field.type) or pa.types.is_large_list(field.type) or
               pa.types.is_fixed_size_list(field.type)}
    if column is None:
        candidates = [name for name in names if name not in vectors]
        if len(candidates) != 1:
            raise _fail(path, f"it has {len(candidates)} columns that do not hold vectors {candidates[:20]}",
                        "the name of the label column (--label-column; column= in Python)")
        name = candidates[0]
    else:
        matches = [name for name in names if header_name(name) == header_name(column)]
        if not matches:
            raise _fail(path, f"it has no column {column!r} (its columns: {[n[:40] for n in names[:20]]}"
                              f"{' ...' if len(names) > 20 else ''})", "the name of one of its columns",
                        suggest=(column, names))
        if len(matches) > 1:
            raise _fail(path, f"it has {len(matches)} columns named {header_name(column)!r}",
                        "one column of that name to read the labels from")
        name = matches[0]
    if name in vectors:
        raise _fail(path, f"its column {name!r} holds vectors", "a column of one label per row")
    try:
        values = pd.read_parquet(path, columns=[name])[name]
    except Exception as exc:  # noqa: BLE001
        raise _fail(path, f"not a readable .parquet file ({' '.join(str(exc).split())[:120]})") from None
    if len(values) == 0:
        raise _fail(path, f"its column {name!r} has no rows")
    numeric = pd.api.types.is_numeric_dtype(values) and not isinstance(values.dtype, pd.CategoricalDtype)
    missing = values.isna().to_numpy()
    if not numeric:  # an empty or blank string is no label, as an empty CSV cell is none
        missing = missing | (values.astype(str).str.strip().eq("").to_numpy() & ~missing)
    elif pd.api.types.is_float_dtype(values):
        missing = missing | ~np.isfinite(values.to_numpy(dtype=np.float64, na_value=np.nan))
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        value = values.iloc[row]
        value = value.item() if isinstance(value, np.generic) else value  # inf, not np.float64(inf)
        held = "a missing value" if pd.isna(value) else f"it holds {value!r}"
        raise _fail(path, f"row {row} of column {name!r} has no label ({held})", "a label in every row")
    if numeric:
        return values.to_numpy()
    labels = values.astype(str).to_numpy()
    _refuse_trailing_nul(path, labels, lambda row: f"row {row} of column {name!r}")
    _check_width(path, len(labels), max(map(len, labels)), path.stat().st_size)
    return np.asarray(labels, dtype=str)


def _not_text(text: tuple[str, str], path) -> str:
    """Why a file did not decode: "it is not UTF-8 text" and how to read it, or the encoding given.

    ``isotropy measure EMBEDDINGS --labels FILE`` reads the labels as UTF-8 (its --encoding is --model's): the
    message says how to convert the file, as well as the parameter that reads another encoding in Python.
    """
    name = text[0]
    if name != "utf-8":
        return f"it is not {name} text (encoding={text[1]!r})"
    import shlex

    converted = shlex.quote(str(Path(path).with_name(f"{Path(path).stem}-utf8{Path(path).suffix}")))
    return (f"it is not UTF-8 text (convert it, e.g. iconv -f latin-1 -t utf-8 {shlex.quote(str(path))} > "
            f"{converted}, or give its encoding: encoding='latin-1' in Python, --encoding latin-1 on the command line)")


def _wide_text(path, text: tuple[str, str]) -> tuple[str, str]:
    """``text`` (``(name, decode_as)`` of :func:`text_codec`) as the text, CSV/TSV or JSON-lines file ``path`` is to
    be decoded, its first bytes looked at by :func:`isotropy.io._encoding.wide_encoding` (the check of ``--texts``).

    A UTF-16 or UTF-32 file read in another encoding is refused with the ``encoding`` it needs: as UTF-8 it was "not
    UTF-8 text" with advice to read it as latin-1, which then said "line 1 ends with a NUL character" (a user trial),
    and UTF-16 without a byte-order mark was that NUL message alone. Read in its own encoding, ``utf-16`` (or
    ``utf-32``) reads a file without a byte-order mark in the byte order its bytes show (Python's decoder raised
    "UTF-16 stream does not start with BOM"), and a byte-order mark is not part of the first label whichever order
    was named (``utf-16-le`` decodes it as the character U+FEFF). A file that shows no byte order, read as
    ``utf-16`` or ``utf-32`` without a mark, is refused asking for the order.
    """
    try:
        with open(path, "rb") as handle:
            head = handle.read(WIDE_SNIFF)
    except OSError:
        return text  # the reader says why
    name = text[0]  # the codec's own name: 'utf-16', 'utf-16-le', 'utf-32-be', 'utf-8', 'iso8859-1', ...
    family = name[:6] if name.startswith(("utf-16", "utf-32")) else None
    marks = {"utf-16": (b"\xff\xfe", b"\xfe\xff"), "utf-32": (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")}
    wide = wide_encoding(head)
    if wide is None:
        # (shorter than one character: the decoder says "not utf-16 text", as of any truncated character)
        if name == family and len(head) >= int(family[-2:]) // 8 and not head.startswith(marks[family]):
            raise _fail(path, f"it does not start with a {family.upper()} byte-order mark and its bytes do not show "
                              f"its byte order (encoding={text[1]!r})",
                        f"the byte order named: encoding='{family}-le' in Python, --encoding {family}-le on the "
                        f"command line (or {family}-be; or the file's own encoding, if it is not {family.upper()})")
        return text
    found = wide[0]
    marked = found in marks
    order = ("le" if head.startswith(b"\xff\xfe") else "be") if marked else found[-2:]
    if family == found[:6] and (name == family or name.endswith(order)):
        # the family's own codec reads a byte-order mark (either order) and leaves it out of the text
        return name, found if marked else f"{family}-{order}"
    given = "UTF-8 text" if name == "utf-8" else f"{name} text (encoding={text[1]!r})"
    raise _fail(path, f"it is {found.upper()} text ({wide[1]}), not {given}",
                f"its encoding given: encoding={found!r} in Python, --encoding {found} on the command line")


def _refuse_long_line(path, expected: str) -> None:
    """Refuse a line of ``path`` longer than ``_MAX_TABLE_LINE_BYTES``, measured by the embeddings reader's line scan
    (:func:`isotropy.io.embeddings._long_line`: a block of bytes at a time, stopping at the first line over the bound;
    a file within the bound is not scanned) before a parser reads the line whole."""
    from isotropy.io.embeddings import _long_line

    bound = _MAX_TABLE_LINE_BYTES
    try:
        long = _long_line(path, bound) if os.path.getsize(path) > bound else None
    except OSError as exc:
        raise _fail(path, f"the file cannot be read ({(exc.strerror or type(exc).__name__).lower()})") from None
    if long is not None:
        raise _fail(path, f"line {long[0]:,} is longer than {bound:,} bytes ({long[1]:,} at least)",
                    f"{expected}, each line at most {_mib(bound)} (a line of {MAX_LINE_CHARS:,} characters, "
                          f"4 bytes a character at most)")


def _table_rows(path, sep: str, text: tuple[str, str], *, quoting=csv.QUOTE_MINIMAL) -> list[list[str]]:
    """The stripped cells of every line of a delimited file, trailing blank lines left out; never empty."""
    _refuse_long_line(path, "one row of labels per line")
    try:
        with open(path, encoding=text[1], newline="") as handle:
            rows = [[cell.strip() for cell in row] for row in csv.reader(handle, delimiter=sep, quoting=quoting)]
    except UnicodeDecodeError:
        raise _fail(path, _not_text(text, path)) from None
    except csv.Error as exc:
        raise _fail(path, f"not a readable {path.suffix} file ({' '.join(str(exc).split())[:120]})") from None
    while rows and not any(rows[-1]):
        rows.pop()
    if not rows:
        raise _fail(path, "the file is empty")
    return rows


def _read_delimited(path, sep: str, text: tuple[str, str]) -> np.ndarray:
    rows = _table_rows(path, sep, text)
    widths = {len(row) for row in rows}
    if len(widths) > 1:
        line = next(i for i, row in enumerate(rows) if len(row) != len(rows[0])) + 1
        raise _fail(path, f"line {line} has {len(rows[line - 1])} columns, line 1 has {len(rows[0])}",
                    "the same number of columns on every line")
    width = len(rows[0])
    header = _is_header(rows, width)
    offset = 1 if header else 0
    _refuse_trailing_nul(path, [cell for row in rows[offset:] for cell in row],
                         lambda i: f"line {i // width + 1 + offset}" + (f", column {i % width + 1}" if width > 1 else ""))
    _check_width(path, (len(rows) - offset) * width, max((len(cell) for row in rows[offset:] for cell in row), default=0),
                 path.stat().st_size)
    table = np.asarray(rows[offset:], dtype=str).reshape(-1, width)
    if table.size and (table == "").any():
        r, c = np.argwhere(table == "")[0]
        raise _fail(path, f"line {r + 1 + offset}, column {c + 1} is empty", "a label in every cell")
    names = rows[0]
    if header and width > 1 and header_name(names[0]) == "":  # an unnamed first column: pandas' or R's index
        numbers = np.arange(len(table))
        if any(np.array_equal(table[:, 0], (numbers + start).astype(str)) for start in (0, 1)):
            # pd.Series(y).to_csv(path) writes its default index, the rows' numbers 0, 1, 2, ... in order, under an
            # empty header cell (R's write.csv 1, 2, 3, ... under ""): the columns after it are the file, read as if
            # it had none
            table, names, width = table[:, 1:], names[1:], width - 1
        elif not any(is_label_header(cell) for cell in names) and not np.isin(table, ("0", "1")).all():
            # an index that is not the rows' order (a filtered frame): which rows the labels belong to is not known
            row = next(i for i, cell in enumerate(table[:, 0]) if cell != str(i))
            raise _fail(path, f"its first column has no name on the header line, as pandas writes a frame's index "
                              f"(to_csv without index=False), and it does not number the rows 0, 1, 2, ... in order "
                              f"(line {row + 1 + offset} holds {str(table[row, 0])!r})",
                        f"the label column named: --label-column {names[1] if width == 2 else 'NAME'} (column= in "
                        f"Python), or the file written with index=False")
    if width == 1:
        return table[:, 0]
    if header:  # a column of labels beside others ('id,label', 'label,score') is not a table of 0/1 indicators
        named = next((cell for cell in names if is_label_header(cell) or is_row_id_header(cell)), None)
        if named is not None and not np.isin(table, ("0", "1")).all():
            label = next((cell for cell in names if is_label_header(cell)), None)
            which = f"the label column {label!r}" if label is not None else f"the row-id column {named!r}"
            raise _fail(path, f"its header names {which} beside {width - 1} other column{'' if width == 2 else 's'}, "
                              f"and not every column holds 0/1, so it is not a table of 0/1 indicator columns "
                              f"(multi-label)", f"the label column named: --label-column {label or 'NAME'} (column= "
                                                f"in Python), or multi-label 0/1 columns headed by their classes")
        label = next((cell for cell in names if _is_the_label(cell)), None)
        if label is not None and width > 2:
            # 'label,is_test,flag' of 0/1 values was 3 multi-label columns, 8 clusters of label x is_test x flag, in
            # silence (a user trial). Refused, not read as its 'label' column: the same header above values not all
            # 0/1 is refused asking for --label-column (above), and a file should not be read two ways by its values;
            # the message names the option that reads it. Class names that are also names of labellings ('topic',
            # 'target') stay multi-label columns (_is_the_label); two columns ('label,x') stay warned below, as
            # documented (they may be two classes)
            others = [cell for cell in names if cell != label]
            raise _fail(path, f"its header names the label column {label!r} beside {width - 1} other 0/1 columns "
                              f"({_cells(others)}), so it is not read as {width} multi-label 0/1 columns (each "
                              f"distinct row of them a cluster)",
                        f"the label column named: --label-column {label} (column= in Python), or multi-label 0/1 "
                        f"columns headed by their classes")
        if named is not None and width == 2:  # 'label,x' of 0/1 values: two classes, or a label and a 0/1 feature
            import warnings

            warnings.warn(f"{str(path)!r} is read as 2 multi-label 0/1 columns, {names[0]!r} and {names[1]!r}; "
                          f"if {named!r} is the one label column, name it: --label-column {named} (column= in "
                          f"Python).", UserWarning, stacklevel=4)
    return _indicator(table, path)


#: Header names that say a column is the labelling itself, never one class among multi-label 0/1 columns (as
#: 'topic', 'target' or 'sentiment' may be): such a column beside two or more 0/1 columns is refused (_read_delimited)
_THE_LABEL_HEADERS = frozenset({"label", "labels", "gold_label", "gold_labels", "class", "classes", "cluster",
                                "clusters"})


def _is_the_label(cell) -> bool:
    """Whether a header cell is one of :data:`_THE_LABEL_HEADERS`, or such a name with an id ending (``label_id``)."""
    name = header_name(cell).lower()
    return name in _THE_LABEL_HEADERS or any(name.endswith(end) and name[: -len(end)] in _THE_LABEL_HEADERS
                                             for end in _ID_ENDINGS)
