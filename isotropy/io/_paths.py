"""What a path that is not a readable regular file really is: a message says so instead of "does not exist".

``/dev/zero`` exists (reading it never ends), a symbolic link loop exists (opening it fails with
ELOOP), a dangling link exists as a link: each gets its own words, and only a path that is not
there at all "does not exist". A file named ``.npy`` that is not one says so (:func:`npy_magic_problem`).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path

__all__ = ["check_regular_file", "npy_header", "npy_magic_problem", "path_kind"]


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
