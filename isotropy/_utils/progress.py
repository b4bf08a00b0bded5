"""Progress of the long (O(n²)) kernels, reported to whoever asked for it.

The block loops of the silhouette, the Dunn index and the neighbour search call
``progress = blocks(total)`` once, then ``progress()`` after each block. Nothing is reported
(and the call costs nothing) unless a caller, such as ``isotropy measure --progress``, wrapped
the computation in :func:`reporting`. The reporter is looked up when the loop starts, in the
calling thread, so worker threads of the silhouette report to it too.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading

__all__ = ["blocks", "current", "reporting"]

_REPORTER: contextvars.ContextVar = contextvars.ContextVar("isotropy_progress", default=None)


@contextlib.contextmanager
def reporting(callback):
    """Within the block, kernels call ``callback(done, total)`` as their blocks complete."""
    token = _REPORTER.set(callback)
    try:
        yield
    finally:
        _REPORTER.reset(token)


def current():
    """The callback of the innermost :func:`reporting` block, or None."""
    return _REPORTER.get()


def _nothing() -> None:
    return None


def blocks(total: int):
    """A function to call once per finished block of ``total`` (thread-safe), or a no-op."""
    callback = _REPORTER.get()
    if callback is None or total <= 0:
        return _nothing
    lock = threading.Lock()
    done = [0]

    def advance() -> None:
        with lock:
            done[0] += 1
            callback(done[0], total)

    return advance
