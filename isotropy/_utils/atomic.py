"""The one atomic file writer of the toolkit.

Every file the toolkit writes (``--json`` output, ``run.json``, results, figures) goes through
:func:`atomic_write`: the bytes go to a temporary file beside the destination, which is renamed
onto it only once complete, so an interrupted write never leaves a half-written file.

What the destination may be:

- a regular file or a path that does not exist yet: written atomically; the new file gets the
  mode an ordinary ``open(path, "w")`` would give it (``0o666`` minus the umask), or the mode of
  the file it replaces;
- a symbolic link: followed, and its target is written (the link itself stays a link);
- anything else (a directory, a FIFO, a device node, a socket): refused with a one-line
  ``ValueError``, because renaming over it would destroy it. Stream to such a destination
  yourself if you mean to (``isotropy measure --json -`` writes to stdout).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from pathlib import Path

__all__ = ["atomic_temp_target", "atomic_write", "check_writable_destination", "watch_writes"]

# callables told the path (as given) of every file atomic_write completes in this process: a results directory's
# lock records what its run wrote there (isotropy.experiments._results_dir), never what another process wrote
_watchers: list = []


@contextlib.contextmanager
def watch_writes(callback):
    """Call ``callback(path)`` with the destination (as given) of every :func:`atomic_write` this process completes."""
    _watchers.append(callback)
    try:
        yield
    finally:
        _watchers.remove(callback)

# the temporary file of atomic_write: ``.<name>.<random>.tmp`` beside <name>, <random> being tempfile's eight
# characters (tempfile._RandomNameSequence: lowercase letters, digits, "_")
_TEMP_NAME = re.compile(r"\.(?P<name>.+)\.[a-z0-9_]{8}\.tmp")


def atomic_temp_target(name: str) -> str | None:
    """The file name whose :func:`atomic_write` temporary file ``name`` is, or None when it is not one.

    >>> atomic_temp_target(".run.json.k3j_9xq2.tmp")
    'run.json'
    >>> atomic_temp_target(".my-notes.tmp") is None
    True
    """
    match = _TEMP_NAME.fullmatch(name)
    if match is None or match["name"] in (".", "..") or "/" in match["name"]:
        return None
    return match["name"]


def _current_umask() -> int:
    # os.umask both sets and returns; there is no read-only query. Set it back at once.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def check_writable_destination(path: str | os.PathLike, *, name: str = "path", probe: bool = False) -> Path:
    """Resolve ``path`` (through symbolic links) and check that a regular file may be written there.

    Returns the resolved destination. Raises ``ValueError`` naming ``name`` and the path as given when the
    path is empty, when the destination exists and is not a regular file (a directory, a FIFO, a device, a
    socket), when a folder on its way is a file, or when the folder the file goes in (or, where that does
    not exist yet, the nearest folder above it that does) is not one this user may write in: the temporary
    file of :func:`atomic_write` is made there. ``probe``: also make and remove a file (or folder) there, for a
    command that checks its outputs before long work (the permission bits do not tell every refusal).
    """
    if os.fspath(path) == "":  # Path("") is "." (a directory): said as what it is
        raise ValueError(f"The {name} '' is empty; expected a file path.")
    path = Path(path)
    try:
        target = path.resolve() if path.is_symlink() else path
        mode = target.stat().st_mode
    except FileNotFoundError:
        mode = None
    except NotADirectoryError:  # a folder on the way is a file: it could never hold the file
        blocker = next(p for p in reversed(target.parents) if p.exists() and not p.is_dir())
        raise ValueError(f"The {name} {str(path)!r} cannot be written: {str(blocker)!r} on its way is a file, not a "
                         f"directory.") from None
    except OSError as exc:  # a folder on the way this user may not enter, a loop of links, a name too long
        from isotropy._utils.validation import _describe  # a path of 5,000 characters is shown cut

        raise ValueError(f"The {name} {_describe(str(path), 80, length=True)} cannot be written "
                         f"({(exc.strerror or type(exc).__name__).lower()}); expected a file path in a directory this "
                         f"user can write in.") from None
    if mode is None or stat.S_ISREG(mode):
        _check_folder(path, target, name, probe)
        return target
    kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
    raise ValueError(f"The {name} {str(path)!r} is {kind}; expected a regular file path "
                     f"(it would be replaced, not written into).")


def _check_folder(path: Path, target: Path, name: str, probe: bool) -> None:
    """Refuse ``target`` when the folder its temporary file goes in (the nearest one that exists) is not writable."""
    folder = target.absolute().parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    where = "its directory" if folder == target.absolute().parent else "the nearest existing directory above it"
    if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"The {name} {str(path)!r} cannot be written: {where}, {str(folder)!r}, is not writable by "
                         f"this user (permission denied, or a read-only file system).")
    if probe and folder.is_dir():
        # os.access says yes where the file system still refuses (root in /proc, a full disk, some network mounts):
        # a probe made and removed at once, so that a command refuses before its work, not when it writes its result
        import tempfile

        try:
            if folder == target.absolute().parent:
                handle, probe = tempfile.mkstemp(dir=folder, prefix=".isotropy-probe-")
                os.close(handle)
                os.unlink(probe)
            else:  # the folders on the way are made later: one made and removed here
                os.rmdir(tempfile.mkdtemp(dir=folder, prefix=".isotropy-probe-"))
        except OSError as exc:
            raise ValueError(f"The {name} {str(path)!r} cannot be written: {where}, {str(folder)!r}, refused a file "
                             f"({(exc.strerror or type(exc).__name__).lower()}); expected a file path in a directory "
                             f"this user can write in.") from None


def _cannot_write(exc: OSError, path, name: str) -> OSError:
    """``exc`` said as the destination ``path`` (named ``name``), not as the temporary file or folder it came from."""
    reason = (exc.strerror or type(exc).__name__).lower()
    culprit = None if exc.filename is None else os.fsdecode(exc.filename)
    # a folder on the way (mkdir of ro/sub) is named; the temporary file, or the destination again, is not
    where = "" if culprit is None or culprit == str(path) or atomic_temp_target(Path(culprit).name) is not None \
        else f" ({culprit!r})"
    error = type(exc)(f"The {name} {str(path)!r} cannot be written: {reason}{where}.")
    error.errno = exc.errno
    return error


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", *, name: str = "path", encoding: str | None = None):
    """Open a temporary file beside ``path`` and rename it onto ``path`` only on success.

    Parameters
    ----------
    path : str or path-like
        Destination. A symbolic link is followed; a destination that exists and is not a
        regular file is refused (``ValueError`` naming ``name``).
    mode : {"w", "wb"}, default="w"
        Text or binary.
    name : str, default="path"
        How the destination is called in error messages (e.g. ``"--json"``).
    encoding : str, optional
        Text encoding (default UTF-8 for text mode).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "result.txt"
    >>> with atomic_write(out) as handle:
    ...     _ = handle.write("0.42\\n")
    >>> out.read_text()
    '0.42\\n'
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"The 'mode' parameter of atomic_write must be 'w' or 'wb'. Got {mode!r} instead.")
    target = check_writable_destination(path, name=name)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            file_mode = stat.S_IMODE(target.stat().st_mode)
        except FileNotFoundError:
            file_mode = 0o666 & ~_current_umask()
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:  # said as the destination given, not as the temporary file or a folder on its way
        raise _cannot_write(exc, path, name) from exc
    try:
        os.fchmod(fd, file_mode)
        kwargs = {} if "b" in mode else {"encoding": encoding or "utf-8"}
        with os.fdopen(fd, mode, **kwargs) as handle:
            yield handle
            try:
                handle.flush()
                os.fsync(handle.fileno())
            except OSError as exc:  # a full disk, a quota
                raise _cannot_write(exc, path, name) from exc
        for watcher in tuple(_watchers):  # a copy; before the rename: a kill between the two leaves only a listed name
            watcher(path)
        try:
            os.replace(tmp, target)
        except OSError as exc:
            raise _cannot_write(exc, path, name) from exc
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
