"""A results directory as a run sees it: one lock, old results kept until the new run has something to write.

- :class:`ResultsLock`: a ``filelock`` lock per results directory (released by the operating
  system when the process dies, also on ``kill -9``); the holder's pid, host, command and start
  time are written beside it, so that a second run is refused with one line naming the first.
- :class:`Replacement`: a fresh run moves the previous run's files into ``.previous/`` (nothing is
  deleted yet); :meth:`Replacement.commit` deletes them once the new run has written its first
  result, :meth:`Replacement.restore` puts them back when the new run fails before that. A run
  killed before its first result leaves ``.previous/``; the next run in the directory restores it
  first, so a run that had nothing to write never replaced anything.
- Only what the toolkit wrote is ever moved or removed: the names the lock's holder wrote in the
  directory (every file of the toolkit goes through :func:`~isotropy._utils.atomic.atomic_write`, which
  tells the lock; a name is listed before its file is renamed into place, so a ``kill -9`` leaves it
  listed), and those of earlier runs still there, are listed in ``.isotropy.files.json``; a fresh run
  moves aside only those. What another process writes there while the lock is held (a user's
  ``NOTES.md`` appended to, an ``isotropy measure --json`` output) is not the run's and stays; it
  was listed as the run's when the list was every name created or changed under the lock, and the
  next fresh run deleted it. A run's folder may hold another run's folder (``DIR/inner``): one
  that holds a run of its own (a ``run.json`` or a lock) is never the toolkit's entry of the run
  around it, neither moved aside by a fresh run nor removed by a failed one's restore (lists written by
  earlier versions may name one); :func:`check_results_dir` refuses only a directory inside one whose
  lock is held (a run going on there, or a plot drawing into it). A directory from before this list existed counts as the toolkit's whatever is
  not newer than its ``run.json``. ``run.json``, ``config.yaml``, ``claims.json`` and ``figures/``
  are always the run's (:data:`RUN_NAMES`): earlier versions wrote ``claims.json`` (and ``isotropy
  plot`` its figures) without the lock, so older lists lack them, and a fresh run kept a previous
  config's claims beside its own numbers.
- ``isotropy plot`` takes the same lock to draw into a run directory, so its figures are listed
  too; :func:`lock_holder` tells it whether a run is in progress.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import socket
from pathlib import Path

from isotropy._utils.atomic import atomic_temp_target, atomic_write, watch_writes
from isotropy.experiments._files import read_json

__all__ = ["DISCARD_NAME", "LOCK_NAME", "OWNER_NAME", "PREVIOUS_NAME", "RUN_NAMES", "Replacement", "ResultsLock",
           "check_results_dir", "holder_kind", "lock_holder", "running_around"]

LOCK_NAME = ".isotropy.lock"
OWNER_NAME = ".isotropy.owner.json"
PREVIOUS_NAME = ".previous"
MANIFEST_NAME = ".isotropy.files.json"  # the names the toolkit wrote in this results directory
_KEPT_NAME = ".kept.json"  # in .previous/: the user's entries a fresh run left in place, and the run's it moved aside
DISCARD_NAME = ".previous.discard"  # .previous renamed by commit before it is deleted
_OURS = {LOCK_NAME, OWNER_NAME, PREVIOUS_NAME, MANIFEST_NAME, DISCARD_NAME}
# the names of the contract's layout (docs/experiments/contract.md): the run's whatever the list says
RUN_NAMES = frozenset({"run.json", "config.yaml", "claims.json", "figures"})


def _entries(results_dir: Path) -> list[Path]:
    """Everything in ``results_dir`` but the lock, its owner file and ``.previous``."""
    return sorted(p for p in results_dir.iterdir() if p.name not in _OURS)


def _snapshot(results_dir: Path) -> dict[str, int]:
    """Name -> modification time (ns, not following links) of every entry but the toolkit's own bookkeeping."""
    stamps = {}
    for entry in _entries(results_dir):
        try:
            stamps[entry.name] = entry.lstat().st_mtime_ns
        except OSError:
            pass
    return stamps


def _read_names(path: Path) -> set[str] | None:
    """The names listed in ``path``; None when it is unreadable (a FIFO, /dev/zero, 200,000 '[': refused with bounded
    work by read_json) or not a list."""
    try:
        names = read_json(path)
    except (OSError, ValueError):
        return None
    return {n for n in names if isinstance(n, str) and "/" not in n} if isinstance(names, list) else None


def _read_aside(path: Path) -> tuple[set[str], set[str] | None] | None:
    """``.previous/.kept.json``: (the user's entries left in place, the run's entries moved aside); None if unreadable.

    A list (written before the moved names were recorded) is the kept names alone: (kept, None).
    """
    try:
        data = read_json(path)
    except (OSError, ValueError):
        return None

    def names(value):
        return {n for n in value if isinstance(n, str) and "/" not in n} if isinstance(value, list) else None

    if isinstance(data, list):
        return names(data), None
    if isinstance(data, dict) and names(data.get("kept")) is not None:
        return names(data.get("kept")), names(data.get("moved"))
    return None


def _remove(entry: Path) -> None:
    shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink(missing_ok=True)


def toolkit_entries(results_dir: Path) -> list[Path]:
    """The entries of ``results_dir`` that the toolkit wrote (see the module docstring); never a user's own file."""
    results_dir = Path(results_dir)
    names = _read_names(results_dir / MANIFEST_NAME)
    entries = [p for p in _entries(results_dir) if p.name in RUN_NAMES or not _holds_a_run(p)]
    if names is not None:
        return [p for p in entries if p.name in names or p.name in RUN_NAMES]
    run_json = results_dir / "run.json"
    if not run_json.is_file():
        return []
    limit = run_json.stat().st_mtime_ns + 2 * 10**9  # a directory from before the list: not newer than run.json
    return [p for p in entries if p.lstat().st_mtime_ns <= limit or p.name in RUN_NAMES]


def _holds_a_run(folder: Path) -> bool:
    """Whether ``folder`` is a run's results directory (a run.json, one moved aside, or a run's lock); links not
    followed: a link to a run's folder is an entry like any other."""
    if folder.is_symlink() or not folder.is_dir():
        return False
    return any((folder / name).is_file() for name in ("run.json", f"{PREVIOUS_NAME}/run.json", LOCK_NAME))


def running_around(folder: Path) -> tuple[Path, str] | None:
    """The directory above ``folder`` whose lock a process holds (a run, or a plot drawing into it), and who holds
    it; None if none. Links resolved."""
    folder = Path(folder).resolve()
    for candidate in folder.parents:
        holder = lock_holder(candidate)
        if holder is not None:
            return candidate, holder
    return None


def check_results_dir(results_dir: Path) -> None:
    """Refuse a results directory that is a file, or that holds files but no ``run.json`` (not ours to replace).

    What the directory or its ``run.json`` is when it is not what a run writes (a FIFO, a socket, a device, a link
    loop) is said in :func:`~isotropy.io._paths.path_kind`'s words, as the results files' reader
    (:mod:`isotropy.experiments._files`) says it; nothing is opened (opening a FIFO blocks until a writer comes).
    """
    from isotropy.io._paths import path_kind

    expected = "a new or empty directory, or one an 'isotropy run' wrote"
    try:  # a name or path too long for the file system, a folder on the way this user may not enter: one line
        os.lstat(results_dir)
    except (FileNotFoundError, NotADirectoryError):
        pass
    except OSError as exc:
        from isotropy._utils.validation import _describe

        raise ValueError(f"--results-dir {_describe(str(results_dir), 80, length=True)} cannot be used "
                         f"({(exc.strerror or type(exc).__name__).lower()}); expected {expected}.") from None
    around = running_around(results_dir)
    if around is not None:
        raise ValueError(f"--results-dir {str(results_dir)!r} lies inside {str(around[0])!r}, which is in use "
                         f"({around[1]}); expected a directory outside a folder that is being written.")
    if results_dir.exists() and not results_dir.is_dir():  # links followed
        kind = (path_kind(results_dir) or "is a regular file").removesuffix(", not a regular file")
        raise ValueError(f"--results-dir {str(results_dir)!r} {kind}, not a directory; expected {expected}.")
    run_json = results_dir / "run.json"
    kind = path_kind(run_json) if results_dir.is_dir() else None
    if kind is not None and kind != "does not exist":  # a FIFO, a socket, a device, a directory, a dangling link
        raise ValueError(f"--results-dir {str(results_dir)!r} has a run.json that {kind} ({str(run_json)!r}); "
                         f"expected the run.json an 'isotropy run' writes (a regular file), or {expected}.")
    if results_dir.is_dir() and not run_json.is_file() and _entries(results_dir) \
            and not (results_dir / PREVIOUS_NAME / "run.json").is_file():
        holder = lock_holder(results_dir)  # a run that holds it and has not written its run.json yet
        if holder is not None:
            raise ValueError(f"--results-dir {str(results_dir)!r} is in use by {holder_kind(results_dir)} ({holder}); "
                             f"wait for it to finish or choose another directory.")
        raise ValueError(f"--results-dir {str(results_dir)!r} holds files but no run.json of an 'isotropy run'; "
                         f"refusing to replace them. Choose a new or empty directory.")


class ResultsLock:
    """An exclusive lock on one results directory (``filelock``); a second holder gets one line naming the first."""

    def __init__(self, results_dir: Path, *, purpose: str = "run"):
        self.results_dir = Path(results_dir)
        self.purpose = purpose  # "run", or "plot" (isotropy plot drawing into a run's folder): said to a second comer
        self._lock = None
        self._created = False
        self._parents_created: list[Path] = []
        self._earlier: set[str] = set()
        self._written: set[str] = set()
        self._roots: tuple[str, ...] = ()
        self._watch = None

    def acquire(self) -> None:
        from filelock import FileLock, Timeout

        self._created = not self.results_dir.exists()
        # the folders above it this run creates (results/<experiment>/ for results/<experiment>/<setup>/), deepest
        # first: removed with it when it fails early, as the directory itself
        self._parents_created = []
        parent = self.results_dir.absolute().parent
        while self._created and not parent.exists() and parent != parent.parent:
            self._parents_created.append(parent)
            parent = parent.parent
        lock = FileLock(str(self.results_dir / LOCK_NAME))
        try:
            self.results_dir.mkdir(parents=True, exist_ok=True)
            lock.acquire(timeout=0)
        except Timeout:
            raise ValueError(f"--results-dir {str(self.results_dir)!r} is in use by {holder_kind(self.results_dir)} "
                             f"({self._describe_owner()}); wait for it to finish or choose another directory.") from None
        except OSError as exc:  # after Timeout (a TimeoutError, so an OSError too): a parent that is a file,
            # /proc, a read-only mount, no permission: said as the option
            from isotropy._utils.validation import _describe

            reason = exc.strerror or type(exc).__name__
            raise ValueError(f"--results-dir {_describe(str(self.results_dir), 80, length=True)} cannot be written "
                             f"({reason.lower()}); "
                             f"expected a directory this user can create and write in.") from None
        self._lock = lock
        self._written = set()
        self._roots = tuple({os.path.abspath(self.results_dir), os.path.realpath(self.results_dir)})
        self._watch = watch_writes(self._wrote)
        self._watch.__enter__()
        # what was the toolkit's when the lock was taken (the list, or the rule for a directory without one): a
        # holder that only adds files (`isotropy plot`) must not narrow a directory from before the list to those
        self._earlier = {p.name for p in toolkit_entries(self.results_dir)}
        from isotropy._utils.versions import command_line

        owner = {"pid": os.getpid(), "host": socket.gethostname(), "purpose": self.purpose,
                 "command": command_line(),
                 "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
        with atomic_write(self.results_dir / OWNER_NAME) as handle:
            json.dump(owner, handle)

    def _describe_owner(self) -> str:
        try:
            owner = read_json(self.results_dir / OWNER_NAME)
            return (f"pid {owner.get('pid')} on {owner.get('host')}, started {owner.get('started')}: "
                    f"{owner.get('command')}")
        except (OSError, ValueError, AttributeError):  # AttributeError: not a mapping
            return "owner unknown"

    def _wrote(self, path) -> None:
        """:func:`atomic_write` is about to put ``path`` in place: its first name under the directory is the run's."""
        path = os.path.abspath(path)
        for candidate in (path, os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))):
            for root in self._roots:
                relative = os.path.relpath(candidate, root)
                name = relative.split(os.sep)[0]
                if name not in ("", ".", "..") and name not in _OURS:
                    if name not in self._written:
                        self._written.add(name)
                        self._write_manifest(listed=True)  # before the file is there: a kill -9 leaves it listed
                    return

    def release(self) -> None:
        """Release the lock; a directory this run created and left empty (it failed early) is removed."""
        if self._lock is not None:
            (self.results_dir / OWNER_NAME).unlink(missing_ok=True)
            self._watch.__exit__(None, None, None)
            self._watch = None
            self._write_manifest()
            self._lock.release()
            self._lock = None
            if self._created and not _entries(self.results_dir) and not (self.results_dir / PREVIOUS_NAME).exists():
                (self.results_dir / LOCK_NAME).unlink(missing_ok=True)
                try:
                    self.results_dir.rmdir()
                    for parent in self._parents_created:  # only while empty: another run may have written there
                        parent.rmdir()
                except OSError:
                    pass

    def _write_manifest(self, *, listed: bool = False) -> None:
        """List what the toolkit wrote: the names this holder wrote, and earlier runs' still there.

        ``listed``: while the run goes on, the names listed so far are kept too (those of the run moved aside among
        them); on release the list is only what is there.
        """
        now = _snapshot(self.results_dir)
        earlier = (_read_names(self.results_dir / MANIFEST_NAME) or set()) | self._earlier
        ours = sorted(n for n in now if n in earlier or n in self._written)
        if listed:
            ours = sorted(set(ours) | self._written | (_read_names(self.results_dir / MANIFEST_NAME) or set()))
        if not ours:
            (self.results_dir / MANIFEST_NAME).unlink(missing_ok=True)
            return
        try:
            with atomic_write(self.results_dir / MANIFEST_NAME) as handle:
                json.dump(ours, handle, indent=0)
        except (OSError, ValueError):  # a directory this user can no longer write in: no list
            pass

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()


def holder_kind(results_dir: Path) -> str:
    """What holds the lock of ``results_dir``, in words: "a plot drawing its figures" or "another run" (also when the
    owner file says nothing, as those of earlier versions)."""
    try:
        purpose = read_json(Path(results_dir) / OWNER_NAME).get("purpose")
    except (OSError, ValueError, AttributeError):
        purpose = None
    return "an 'isotropy plot' drawing its figures" if purpose == "plot" else "another run"


def lock_holder(results_dir: Path) -> str | None:
    """Who holds the lock of ``results_dir`` ("pid 12 on host, started ...: command"); None when no process does.

    None too where that cannot be told (no lock file, a directory this user cannot write).
    """
    from filelock import FileLock, Timeout

    results_dir = Path(results_dir)
    if not (results_dir / LOCK_NAME).is_file() or not os.access(results_dir / LOCK_NAME, os.W_OK):
        return None
    lock = FileLock(str(results_dir / LOCK_NAME))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return ResultsLock(results_dir)._describe_owner()
    except OSError:
        return None
    lock.release()
    return None


class Replacement:
    """Move a previous run's files aside; delete them on :meth:`commit`, put them back on :meth:`restore`.

    Each step is ordered so that a process killed at any point (``kill -9``, a second Ctrl-C) leaves a
    state that :meth:`recover` completes: :meth:`move_aside` writes ``.previous/.kept.json`` (the user's
    entries it leaves in place and the run's it moves) before it moves anything, :meth:`restore` deletes
    that list only once everything is back, and :meth:`commit` renames ``.previous`` before deleting it.
    """

    def __init__(self, results_dir: Path):
        self.results_dir = Path(results_dir)
        self.previous = self.results_dir / PREVIOUS_NAME
        self.committed = False

    def recover(self) -> bool:
        """Clean up after a killed run (call with the lock held); True if it had moved results aside.

        Temporary files of interrupted atomic writes (``.<name>.<random>.tmp``, exactly as :func:`atomic_write`
        names them) are removed where runs write: the results directory itself and the toolkit's folders in it,
        never a user's file or folder. Results moved into ``.previous/`` by a run killed before its first result
        are restored (also when the kill came in the middle of moving them aside or back); a commit killed
        while deleting them is finished.
        """
        shutil.rmtree(self.results_dir / DISCARD_NAME, ignore_errors=True)
        self._remove_temporary_files()
        if not self.previous.is_dir():
            return False
        self.restore()
        return True

    def _remove_temporary_files(self) -> None:
        listing = _read_aside(self.previous / _KEPT_NAME)
        users = listing[0] if listing is not None else set()
        folders = {p for p in toolkit_entries(self.results_dir) if p.is_dir() and not p.is_symlink()}
        if listing is not None:  # a run moved the previous results aside: what is not the user's is that run's
            folders |= {p for p in _entries(self.results_dir) if p.is_dir() and not p.is_symlink() and p.name not in users}
        for entry in self.results_dir.iterdir():
            target = atomic_temp_target(entry.name)
            if target is not None and target not in users and entry.is_file() and not entry.is_symlink():
                entry.unlink(missing_ok=True)
        for folder in sorted(folders):
            for root, _dirs, files in os.walk(folder):
                for name in files:
                    path = Path(root) / name
                    if atomic_temp_target(name) is not None and path.is_file() and not path.is_symlink():
                        path.unlink(missing_ok=True)

    def move_aside(self) -> None:
        """Move the entries the toolkit wrote into ``.previous/``; a user's own files stay where they are."""
        ours = toolkit_entries(self.results_dir)
        kept = sorted(p.name for p in _entries(self.results_dir) if p not in ours)
        self.previous.mkdir(parents=True, exist_ok=True)
        # written before anything moves: killed in the middle, restore tells the previous run's entries not moved
        # yet from the user's and from the new run's
        with atomic_write(self.previous / _KEPT_NAME) as handle:
            json.dump({"kept": kept, "moved": sorted(p.name for p in ours)}, handle)
        for entry in ours:
            os.replace(entry, self.previous / entry.name)

    def commit(self) -> None:
        """The new run has written a result: the previous run's files go.

        ``.previous`` is renamed first, so that a commit killed while deleting never looks like results to restore.
        """
        if not self.committed:
            self.committed = True
            discard = self.results_dir / DISCARD_NAME
            shutil.rmtree(discard, ignore_errors=True)
            try:
                os.replace(self.previous, discard)
            except OSError:
                shutil.rmtree(self.previous, ignore_errors=True)
            shutil.rmtree(discard, ignore_errors=True)

    def _aside(self) -> list[str]:
        """The names in ``.previous`` to put back (not its list, nor the list's own temporary file)."""
        if not self.previous.is_dir():
            return []
        return sorted(p.name for p in self.previous.iterdir()
                      if p.name != _KEPT_NAME and atomic_temp_target(p.name) != _KEPT_NAME)

    def restore(self) -> None:
        """Remove what the new run wrote (never the user's files left in place) and put the previous run's files back.

        Any step may be interrupted: the list ``.previous/.kept.json`` goes last, once everything is back, and an
        entry the list names as moved aside that is no longer in ``.previous`` (put back already, or not moved yet)
        is the previous run's and stays; so running restore again (``recover``) finishes the job.
        """
        listing = _read_aside(self.previous / _KEPT_NAME)
        aside = self._aside()
        if listing is not None:
            kept, moved = listing
            # what the new run wrote is listed (before each file was put in place); an entry another process made
            # meanwhile (a measure --json output, a run's folder) is not, and stays
            listed = _read_names(self.results_dir / MANIFEST_NAME)
            for entry in _entries(self.results_dir):
                if entry.name in kept or (moved is not None and entry.name in moved and entry.name not in aside):
                    continue
                if entry.name not in RUN_NAMES and (_holds_a_run(entry) or (listed is not None
                                                                              and entry.name not in listed)):
                    continue
                _remove(entry)
        for name in aside:
            target = self.results_dir / name
            if listing is None and (target.exists() or target.is_symlink()):
                # no list (a directory of a version that moved everything aside): the entry beside the one moved
                # aside is the new run's; nothing else is removed
                _remove(target)
            os.replace(self.previous / name, target)
        if self.previous.is_dir():
            (self.previous / _KEPT_NAME).unlink(missing_ok=True)
            for entry in self.previous.iterdir():  # the list's own temporary file, of a kill while writing it
                if atomic_temp_target(entry.name) == _KEPT_NAME:
                    entry.unlink(missing_ok=True)
            self.previous.rmdir()
