"""Where ``--json OUT`` goes: a file, replaced atomically, or a stream the shell opened, written to as is.

``--json /dev/stdout > out.txt`` must add the JSON to ``out.txt`` after the printed table: replacing
the file the stream points to (what an atomic write does) would lose the table, and reopening it
with ``open(..., "w")`` would truncate it. So ``-``, ``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``
and ``/proc/self/fd/N`` are written through the descriptor the process already holds.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

__all__ = ["stream_fd", "write_json_output"]

_NAMED = {"-": 1, "/dev/stdout": 1, "/dev/stderr": 2}


def stream_fd(json_path) -> int | None:
    """The open descriptor that ``json_path`` names when it is a stream (see the module docstring), else ``None``."""
    text = str(json_path)
    if text in _NAMED:
        return _NAMED[text]
    for prefix in ("/dev/fd/", "/proc/self/fd/"):
        if text.startswith(prefix) and text[len(prefix):].isdigit():
            return int(text[len(prefix):])
    return None


def write_json_output(json_path, record: dict) -> None:
    """Write ``record`` as indented JSON to a stream as is, or to a file through the one atomic writer."""
    text = json.dumps(record, indent=2) + "\n"
    fd = stream_fd(json_path)
    if fd is None:
        from isotropy._utils.atomic import atomic_write

        with atomic_write(Path(json_path), name="--json") as handle:
            handle.write(text)
        return
    if fd in (1, 2):  # through Python's stream: the printed table and the JSON stay in order
        stream = sys.stdout if fd == 1 else sys.stderr
        stream.write(text)
        stream.flush()
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    data = text.encode("utf-8")
    while data:
        data = data[os.write(fd, data):]
