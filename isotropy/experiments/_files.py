"""Text and JSON files read back from a results folder or a config, with bounded work and one-line refusals.

A results folder is written by a run but read back by ``isotropy plot``, ``--resume`` and the claims from
whatever is there. Read with ``json.loads(path.read_text())``, a FIFO named ``summary.json`` (or ``--setup
fifo.yaml``) blocked forever in ``open()``, a link to ``/dev/zero`` was read until memory ran out
(``MemoryError``), a manifest of 200,000 ``[`` raised ``RecursionError``, and a file cut short said only
``Expecting property name ...: line 6 column 20 (char 100)``, naming no file.

:func:`read_bytes` refuses what is not a regular file once links are followed (a FIFO, a device, a directory,
a dangling link) before it is opened, and a file past ``limit`` bytes by its size and again while reading (a
file that grows); :func:`read_text` decodes UTF-8 and :func:`read_json` parses with
:func:`isotropy._utils.jsontext.loads` (deep nesting a ``JSONDecodeError`` too). Every refusal is one line,
``The <what> '<path>' <problem>; expected <expected>.``, raised as ``error`` (an
:class:`~isotropy._utils.errors.IsotropyValueError` unless the caller names its own, e.g. ``ConfigError``);
a path that is not there at all is a ``FileNotFoundError`` with the same wording. The exception's
``problem`` attribute holds the ``<problem>`` part alone, for a caller that words its own line.

It lives with the experiments (the floor above :mod:`isotropy.io`) because what a path that is not a regular file
is, in words, is :func:`isotropy.io._paths.path_kind`'s, written once there.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from isotropy._utils import jsontext
from isotropy._utils.errors import IsotropyValueError

__all__ = ["RESULTS_EXPECTED", "RESULTS_LIMIT", "read_bytes", "read_json", "read_text"]

RESULTS_LIMIT = 256 * 2**20  # a results file: the committed runs' largest are under 200 KB
RESULTS_EXPECTED = "the JSON an 'isotropy run' writes there (re-run the experiment into this folder)"


def _refusal(error, path: Path, what: str, problem: str, expected: str) -> Exception:
    exc = error(f"The {what} {str(path)!r} {problem}; expected {expected}.")
    exc.problem = problem
    return exc


def _mib(limit: int) -> str:
    return f"{limit // 2**20} MiB" if limit >= 2**20 and limit % 2**20 == 0 else f"{limit:,} bytes"


def read_bytes(path, *, what: str, expected: str, limit: int, error=IsotropyValueError) -> bytes:
    """The bytes of the regular file ``path`` (links followed), at most ``limit`` of them; else one line (see the module)."""
    from isotropy.io._paths import path_kind  # what a path that is not a regular file is, in words

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


def read_text(path, *, what: str = "results file", expected: str = RESULTS_EXPECTED, limit: int = RESULTS_LIMIT,
              error=IsotropyValueError) -> str:
    """The UTF-8 text of ``path``, read by :func:`read_bytes`; text that is not UTF-8 is refused in one line too."""
    raw = read_bytes(path, what=what, expected=expected, limit=limit, error=error)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _refusal(error, Path(path), what, f"is not UTF-8 text (byte {exc.start} is {raw[exc.start]:#04x})",
                       expected) from None


def read_json(path, *, what: str = "results file", expected: str = RESULTS_EXPECTED, limit: int = RESULTS_LIMIT,
              error=IsotropyValueError):
    """The JSON document in ``path`` (a results file by default), read by :func:`read_text`.

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
