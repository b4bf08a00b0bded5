"""Ctrl-C and SIGTERM that are never lost inside a garbage-collector callback.

Python runs a signal's handler in the main thread at the next bytecode it executes. When that bytecode belongs to a
callback of the garbage collector (``gc.callbacks``: dask.distributed registers one in every process that runs a
client or a worker), the ``KeyboardInterrupt`` the handler raises is printed as "Exception ignored in ..." and
dropped: the command went on to the end of its search and exited 0, as if Ctrl-C had not been pressed (seen once
in the test suite: ``test_ctrl_c_on_local_workers_ends_in_the_commands_own_line``). :func:`interrupts_outside_gc`
wraps the handlers in place so that a signal that arrives inside such a callback is delivered again a moment later,
once the collection is over, where the exception reaches the command.
"""

from __future__ import annotations

import contextlib
import gc
import signal
import threading

# The signals whose Python handlers are guarded (SIGTERM where the platform has it).
_SIGNALS = tuple(s for s in (signal.SIGINT, getattr(signal, "SIGTERM", None)) if s is not None)
# Seconds after which a signal that arrived inside a garbage-collector callback is delivered again (the callbacks
# take microseconds; a redelivery that lands in another one is deferred again).
_REDELIVER_SECONDS = 0.02


def in_gc_callback(frame) -> bool:
    """Whether ``frame`` (a signal handler's) runs inside a function of ``gc.callbacks`` (or below one)."""
    codes = set()
    for callback in list(gc.callbacks):
        function = getattr(callback, "__func__", callback)
        code = getattr(function, "__code__", None)  # functions and bound methods (distributed's is one)
        if code is not None:
            codes.add(code)
    while frame is not None and codes:
        if frame.f_code in codes:
            return True
        frame = frame.f_back
    return False


def _guarded(handler):
    """``handler`` (a Python signal handler), except that inside a garbage-collector callback the signal is sent again
    to the main thread shortly after instead of handled there (where its exception would be dropped)."""
    import _thread

    def guarded(signum, frame):
        if in_gc_callback(frame):
            timer = threading.Timer(_REDELIVER_SECONDS, _thread.interrupt_main, args=(signum,))
            timer.daemon = True
            timer.start()
            return None
        return handler(signum, frame)

    guarded.wrapped = handler
    return guarded


@contextlib.contextmanager
def interrupts_outside_gc(signals=_SIGNALS):
    """Within the block, the Python handlers of ``signals`` in place (Python's ``KeyboardInterrupt`` for SIGINT, a
    command's own for SIGTERM) act outside garbage-collector callbacks only (:func:`_guarded`); put back after it.

    Only in the main thread, and only over Python handlers: an ignored or default signal is left as it is.
    """
    replaced = {}
    if threading.current_thread() is threading.main_thread():
        for signum in signals:
            with contextlib.suppress(ValueError, OSError, TypeError):
                handler = signal.getsignal(signum)
                if callable(handler) and not hasattr(handler, "wrapped"):
                    signal.signal(signum, _guarded(handler))
                    replaced[signum] = handler
    try:
        yield
    finally:
        for signum, handler in replaced.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                current = signal.getsignal(signum)
                if getattr(current, "wrapped", None) is handler:  # not if the command put another in place since
                    signal.signal(signum, handler)
