"""What a path that is not a readable regular file really is: a message says so instead of "does not exist".

``/dev/zero`` exists (reading it never ends), a symbolic link loop exists (opening it fails with
ELOOP), a dangling link exists as a link: each gets its own words, and only a path that is not
there at all "does not exist". A file named ``.npy`` that is not one says so (:func:`npy_magic_problem`).

:func:`read_bytes`, :func:`read_text` and :func:`read_json` read a small file (JSON a run or a trainer wrote, a
config) with bounded work and one-line refusals: what is not a regular file once links are followed (a FIFO, a
device, a directory, a dangling link) is refused before it is opened (opening a FIFO blocks until a writer comes),
a file past ``limit`` bytes by its size and again while reading (a file that grows), text that is not UTF-8 at its
byte, and JSON that does not parse (nested too deeply, an integer of too many digits: :mod:`isotropy._utils.jsontext`)
naming the file and where it stopped. Every refusal is one line, ``The <what> '<path>' <problem>; expected
<expected>.``, raised as ``error`` (:class:`~isotropy._utils.errors.IsotropyValueError` unless the caller names its
own); a path that is not there at all is a ``FileNotFoundError`` with the same wording. The exception's ``problem``
attribute holds the ``<problem>`` part alone, for a caller that words its own line. They live here, beside
:func:`path_kind`, so that the library's readers (:mod:`isotropy.training.logs`) and the experiments'
(:mod:`isotropy.experiments._files`, results folders and configs) share them.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from pathlib import Path

from isotropy._utils import jsontext
from isotropy._utils.errors import IsotropyTypeError, IsotropyValueError

__all__ = ["check_not_an_input", "check_regular_file", "npy_header", "npy_magic_problem", "npy_size_problem",
           "npz_magic_problem", "path_kind", "read_bytes", "read_json", "read_text"]


def path_kind(path) -> str | None:
    """``None`` for a regular file (or a link to one); else a phrase such as ``"is a symbolic link loop"``."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "is a symbolic link loop"
        if exc.errno == errno.ENOENT:
            if os.path.islink(path):
                try:
                    target = os.readlink(path)
                except OSError:
                    target = "?"
                return f"is a dangling symbolic link (to {target!r}, which does not exist)"
            return "does not exist"
        if exc.errno == errno.ENOTDIR:
            return "does not exist (a part of the path is a file, not a directory)"
        if exc.errno == errno.EACCES:
            return "cannot be examined (permission denied)"
        return f"cannot be examined ({exc.strerror or type(exc).__name__})"
    if stat.S_ISREG(mode):
        return None
    for test, words in ((stat.S_ISDIR, "is a directory"), (stat.S_ISCHR, "is a character device"),
                        (stat.S_ISBLK, "is a block device"), (stat.S_ISFIFO, "is a FIFO (named pipe)"),
                        (stat.S_ISSOCK, "is a socket")):
        if test(mode):
            return f"{words}, not a regular file"
    return "is not a regular file"


def check_path_given(path, *, caller: str, name: str = "path", expected: str = "a file path") -> None:
    """Refuse the empty path, which ``Path('')`` would read as the current folder (an unset shell variable gives it),
    and what is no path at all (an array, the data itself; ``None``; bytes, which ``Path`` refuses), whose ``TypeError``
    from pathlib named neither the reader nor the argument."""
    if not isinstance(path, (str, os.PathLike)):
        raise IsotropyTypeError(f"The {name!r} parameter of {caller} must be {expected}: a str or an os.PathLike such "
                                f"as pathlib.Path. Got {type(path).__name__} instead.")
    if isinstance(path, str) and len(path) == 0:
        raise IsotropyValueError(f"The {name!r} parameter of {caller} must be {expected}. Got {path!r} (empty) "
                                 f"instead.")


def check_regular_file(path, what: str, expected: str, *, value_error=ValueError) -> Path:
    """``path`` if it is a regular file; else ``FileNotFoundError`` (not there) or ``value_error`` (something else).

    The message names ``what`` (``"The embeddings file"``), the path, what it really is and ``expected``.
    """
    path = Path(path)
    kind = path_kind(path)
    if kind is None:
        return path
    message = f"{what} {str(path)!r} {kind}; expected {expected}."
    if kind == "does not exist":
        raise FileNotFoundError(message)
    raise value_error(message)


def _refusal(error, path: Path, what: str, problem: str, expected: str) -> Exception:
    exc = error(f"The {what} {str(path)!r} {problem}; expected {expected}.")
    exc.problem = problem
    return exc


def _mib(limit: int) -> str:
    return f"{limit // 2**20} MiB" if limit >= 2**20 and limit % 2**20 == 0 else f"{limit:,} bytes"


def read_bytes(path, *, what: str, expected: str, limit: int, error=IsotropyValueError) -> bytes:
    """The bytes of the regular file ``path`` (links followed), at most ``limit`` of them; else one line (see the module)."""
    path = Path(path)
    kind = path_kind(path)  # before open(): opening a FIFO blocks until a writer comes
    if kind == "does not exist":
        exc = FileNotFoundError(f"The {what} {str(path)!r} does not exist; expected {expected}.")
        exc.problem = kind
        raise exc
    if kind is not None:
        raise _refusal(error, path, what, kind, expected)
    too_large = f"is larger than {_mib(limit)}"
    try:
        if os.stat(path).st_size > limit:
            raise _refusal(error, path, what, too_large, expected)
        # O_NONBLOCK: a path swapped for a FIFO since the check opens at once and is refused below by fstat
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise _refusal(error, path, what, "is not a regular file", expected)
            raw = handle.read(limit + 1)  # enforced while reading too: a file that grows is not read whole
    except OSError as exc:
        reason = (exc.strerror or type(exc).__name__).lower()
        raise _refusal(error, path, what, f"cannot be read ({reason})", expected) from None
    if len(raw) > limit:
        raise _refusal(error, path, what, too_large, expected)
    return raw


def read_text(path, *, what: str, expected: str, limit: int, error=IsotropyValueError) -> str:
    """The UTF-8 text of ``path``, read by :func:`read_bytes`; text that is not UTF-8 is refused in one line too."""
    raw = read_bytes(path, what=what, expected=expected, limit=limit, error=error)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _refusal(error, Path(path), what, f"is not UTF-8 text (byte {exc.start} is {raw[exc.start]:#04x})",
                       expected) from None


def read_json(path, *, what: str, expected: str, limit: int, error=IsotropyValueError):
    """The JSON document in ``path``, read by :func:`read_text`.

    Bad JSON is one line naming the file, the parser's reason and where it stopped; a document that ends
    before it is complete says so (a file cut short).
    """
    text = read_text(path, what=what, expected=expected, limit=limit, error=error)
    try:
        return jsontext.loads(text)
    except json.JSONDecodeError as exc:
        reason = " ".join(exc.msg.split())
        # "Unterminated string starting at": where the string starts
        where = f"{reason}{'' if reason.endswith(' at') else ' at'} line {exc.lineno}, column {exc.colno}"
        if not text.strip():
            problem = "is not valid JSON: it is empty"
        elif exc.pos >= len(text.rstrip()) or reason.startswith("Unterminated string"):
            problem = f"is not valid JSON: it ends mid-document ({where}), as a file cut short does"
        elif reason.startswith(("nested too deeply", "an integer of too many")):
            problem = f"is not valid JSON: {reason}"
        else:
            problem = f"is not valid JSON: {where}"
        raise _refusal(error, Path(path), what, problem, expected) from None


# The first bytes of binary formats a text or CSV reader may be handed by mistake, and what each is in words; each
# holds a byte no text starts with (a control character), so that no line of text is taken for one. GGUF, Parquet
# and safetensors start with text-like bytes and are told by more of their structure (binary_kind).
_BINARY_MAGIC = (
    (b"\x93NUMPY", "a .npy array (as np.save writes)"),
    (b"PK\x03\x04", "a zip archive (an .npz, a .pt checkpoint, a .zip)"),
    (b"\x1f\x8b", "gzip-compressed data"),
    (b"\x89HDF", "an HDF5 file"),
)
# Bytes read to tell a binary file from text: a NUL among them is never text in an 8-bit or UTF-8 encoding.
_SNIFF_BYTES = 4096


def looks_like_gguf(head: bytes) -> bool:
    """Whether the first bytes of a file are a GGUF file's: ``GGUF`` then a version 1 to 3 (little-endian ``uint32``).

    A text that starts with the word ``GGUF`` is not (its next bytes make a version in the hundreds of millions);
    the converter checks the whole header, and refuses version 1 there in its own words."""
    return head[:4] == b"GGUF" and len(head) >= 8 and 1 <= int.from_bytes(head[4:8], "little") <= 3


def binary_kind(path, *, encoding: str = "utf-8", nul: bool = True) -> str | None:
    """What ``path`` is when its first bytes say it is binary, not text (``"a .npy array (as np.save writes)"``); else ``None``.

    For the readers of texts, labels and CSV tables: a ``.npy`` given as ``--texts`` decoded as latin-1 without an
    error (its bytes are all latin-1) and 89 "texts" were measured. Formats that start with printable bytes are
    told by their structure too: GGUF by its version (1 to 3) after ``GGUF``, Parquet by ``PAR1`` at both ends,
    safetensors by a header length that fits the file followed by ``{"``; a text that merely starts with ``GGUF``
    or ``PAR1`` is text. A NUL byte counts as binary except for UTF-16 and UTF-32 text (by the ``encoding`` given,
    or by a byte-order mark, or with every other byte NUL), whose characters hold NUL bytes: left to the decoder.
    ``nul=False``: by the formats' bytes alone (the labels reader keeps a NUL inside a label and names a trailing
    one by its line). Unreadable: ``None`` (the reader says why).
    """
    try:
        with open(path, "rb") as handle:
            head = handle.read(_SNIFF_BYTES)
            size = os.fstat(handle.fileno()).st_size
            handle.seek(max(0, size - 4))
            tail = handle.read(4)
    except OSError:
        return None
    return binary_kind_of(head, size, tail, encoding=encoding, nul=nul)


def binary_kind_of(head: bytes, size: int, tail: bytes, *, encoding: str = "utf-8", nul: bool = True) -> str | None:
    """:func:`binary_kind` of data already read (standard input): its first bytes ``head`` (a few KiB or all),
    its ``size`` in bytes and its last 4 bytes ``tail``."""
    import codecs

    head = head[:_SNIFF_BYTES]
    for magic, kind in _BINARY_MAGIC:
        if head.startswith(magic):
            return kind
    if looks_like_gguf(head):
        return "a GGUF model file"
    if head.startswith(b"PAR1") and size >= 12 and tail == b"PAR1":
        return "a Parquet file"
    if len(head) >= 10 and head[8:10] == b'{"' and 0 < int.from_bytes(head[:8], "little") <= size - 8:
        return "a safetensors file"
    try:
        name = codecs.lookup(encoding).name  # 'u16', 'UTF_16': utf-16
    except LookupError:
        name = encoding.lower()
    wide = name.startswith(("utf-16", "utf-32")) or head.startswith((b"\xff\xfe", b"\xfe\xff")) \
        or max(head[0::2].count(0), head[1::2].count(0)) > len(head) // 4  # UTF-16 without a mark, either order
    if nul and b"\x00" in head and not wide:
        return "binary data (it holds NUL bytes, which no text does)"
    return None


def npy_magic_problem(path) -> str | None:
    """``None`` when ``path`` starts with numpy's magic string (or cannot be opened: ``np.load`` says why); else why
    it is not a ``.npy`` file, e.g. ``"not a .npy file (it does not start with numpy's magic string ...)"``.

    Checked before ``np.load``: without the magic string numpy tries a zip archive (an ``.npz`` renamed to ``.npy``
    is loaded as one) and then pickle, and its message says the file "contains pickled (object) data", whatever
    it holds.
    """
    from numpy.lib.format import MAGIC_PREFIX

    try:
        with open(path, "rb") as handle:
            head = handle.read(16)
    except OSError:
        return None
    if head.startswith(MAGIC_PREFIX):
        return None
    if not head:
        return "not a .npy file (the file is empty)"
    if head.startswith(b"PK\x03\x04"):
        return "not a .npy file (it is a zip archive, as np.savez writes; a .npy is written by np.save)"
    return (f"not a .npy file (it does not start with numpy's magic string \\x93NUMPY but with "
            f"{head[:len(MAGIC_PREFIX)]!r})")


def npz_magic_problem(path) -> str | None:
    """``None`` when ``path`` starts as a zip archive or a ``.npy`` array (``np.load`` reads one named ``.npz``), or
    cannot be opened (``np.load`` says why); else what the file is instead, e.g. ``"it is text, not an .npz archive
    (a zip archive of .npy arrays, as np.savez writes)"``.

    Checked before ``np.load``, which tries pickle on anything else and says the file "contains pickled (object)
    data": wrong for a CSV table named ``.npz`` (a reader trial).
    """
    from numpy.lib.format import MAGIC_PREFIX

    try:
        with open(path, "rb") as handle:
            head = handle.read(_SNIFF_BYTES)
    except OSError:
        return None
    # a zip's first record: a file's header, the end record of an archive of no member (np.savez() with no array:
    # "the archive holds no arrays" is then said), or a spanned archive's marker
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08", MAGIC_PREFIX)):
        return None
    archive = "an .npz archive (a zip archive of .npy arrays, as np.savez writes)"
    if not head:
        return f"the file is empty, not {archive}"
    kind = binary_kind(path)
    if kind is None:
        try:  # text, but for a character cut at the end of the bytes read
            head.decode("utf-8") if len(head) < _SNIFF_BYTES else head[:-4].decode("utf-8", errors="strict")
            kind = "text"
        except UnicodeDecodeError:
            return f"it is not {archive}: it starts with {head[:8]!r}"
    return f"it is {kind}, not {archive}"


def npy_header(handle) -> tuple[tuple, bool, object, int]:
    """``(shape, fortran_order, dtype, data offset)`` of the ``.npy`` file open in ``handle`` (at its start), from
    its header alone: no data read, nothing allocated for the shape it claims (which may be a lie: the callers
    compare it with the file's size). Versions 1.0, 2.0 and 3.0; numpy's ``ValueError`` for anything else.
    """
    from numpy.lib import format as fmt

    version = fmt.read_magic(handle)
    if version == (1, 0):
        shape, fortran, dtype = fmt.read_array_header_1_0(handle)
    elif version in ((2, 0), (3, 0)):
        shape, fortran, dtype = fmt.read_array_header_2_0(handle)
    else:
        raise ValueError(f"an .npy header of version {version}")
    return shape, fortran, dtype, handle.tell()


def npy_size_problem(path) -> str | None:
    """Why the ``.npy`` file ``path`` is not the size its header declares; ``None`` when it is (or when the header
    cannot be read, or declares pickled objects: ``np.load`` refuses those in its own words).

    Read from the header alone, before ``np.load``: numpy allocates the shape a header claims before reading a byte
    (a 192-byte file claiming shape (10**12, 10**12) was refused as "Unable to allocate 6.95 EiB", a size wrapped
    around 2**64, for a file merely cut short), and it ignores bytes after the array (``cat a.npy b.npy > c.npy``
    read as a.npy's rows alone, silently). A member of an ``.npz`` is held to the same rule
    (:func:`isotropy.io.embeddings._check_npz_member`), and so is an entry of the embeddings cache.
    """
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            shape, _, dtype, offset = npy_header(handle)
    except Exception:  # noqa: BLE001 -- not an .npy, a damaged header: np.load's refusal (or npy_magic_problem) says it
        return None
    if dtype.hasobject:
        return None
    declared = offset
    for dim in shape:
        if not isinstance(dim, int) or dim < 0:
            return f"its header declares shape {shape}, with a negative or non-integer dimension"
    count = 1
    for dim in shape:
        count *= dim  # Python ints: no wrap-around at 2**64
    declared += count * dtype.itemsize
    if declared == size:
        return None
    what = "cut short or damaged" if declared > size else "bytes after the array: two arrays written one after the other?"
    return (f"its header declares shape {shape} of {dtype} ({declared:,} bytes with the header) but the file holds "
            f"{size:,} bytes ({what})")


def natural_key(name: str) -> tuple:
    """The sort key of a name with its runs of digits compared as numbers: ``part-2`` before ``part-10``.

    Shared by the shard reader (:func:`isotropy.io.shards.read_shards`) and the training logs' reader (Lightning's
    ``version_10`` after ``version_9``). Only ASCII digits are numbers (``'²'`` is text).

    Plain string order put ``part-10`` and ``part-11`` between ``part-1`` and ``part-2``, and a labels file written
    in the shards' numbered order then lined up with the wrong rows, without a word. Zero-padded names
    (``part-00002``) keep the order they had.

    Examples
    --------
    >>> sorted(["part-10.npy", "part-2.npy", "part-1.npy"], key=natural_key)
    ['part-1.npy', 'part-2.npy', 'part-10.npy']
    """
    return tuple((0, int(run), run) if run.isdigit() and run.isascii() else (1, 0, run)
                 for run in re.split(r"([0-9]+)", name) if run)


def _same_file(a, b) -> bool:
    """Whether ``a`` and ``b`` name one file (links followed, hard links too); False when either is not there."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def check_not_an_input(outputs: dict, inputs: dict) -> None:
    """Refuse an output path that is one of the command's input files, or another output: it would be overwritten.

    ``outputs`` and ``inputs`` map an option's name (``"--json"``, ``"EMBEDDINGS"``) to its path (None: not given).
    Compared as files (``os.path.samefile``: through symbolic and hard links), outputs also by resolved path (neither
    exists yet). One line: ``--json 'x.npy' is the same file as EMBEDDINGS 'x.npy'; ...``.
    """
    given = [(name, path) for name, path in outputs.items() if path is not None]
    for index, (name, path) in enumerate(given):
        for other, source in [*((k, v) for k, v in inputs.items() if v is not None), *given[:index]]:
            same = _same_file(path, source) or (other in outputs and os.path.realpath(path) == os.path.realpath(source))
            if same:
                shown = f" {str(source)!r}" if str(source) != str(path) else ""
                raise ValueError(f"{name} {str(path)!r} is the same file as {other}{shown}; expected another path "
                                 f"(writing it would overwrite {'the input' if other in inputs else 'that output'}).")
