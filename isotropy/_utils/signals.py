"""Ctrl-C and SIGTERM that are never lost where Python drops the exceptions of their handlers.

Python runs a signal's handler in the main thread at the next bytecode it executes. When that bytecode belongs to a
callback of the garbage collector (``gc.callbacks``: dask.distributed registers one in every process that runs a
client or a worker) or to a ``__del__`` method, the ``KeyboardInterrupt`` the handler raises is printed as "Exception
ignored in ..." and dropped: the command went on to the end of its search and exited 0, as if Ctrl-C had not been
pressed (seen once in the test suite: ``test_ctrl_c_on_local_workers_ends_in_the_commands_own_line``).
:func:`interrupts_outside_gc` wraps the handlers in place so that a signal that arrives there is sent again to the
main thread a moment later, where the exception reaches the command; one still pending when the block ends is handled
then, before the handlers are put back.
"""

from __future__ import annotations

import contextlib
import gc
import signal
import threading

# The signals whose Python handlers are guarded (SIGTERM where the platform has it).
_SIGNALS = tuple(s for s in (signal.SIGINT, getattr(signal, "SIGTERM", None)) if s is not None)
# Seconds after which a signal that arrived where its exception would be dropped is sent again (the callbacks take
# microseconds; a signal sent again that lands in another one is deferred again).
_REDELIVER_SECONDS = 0.02


def exceptions_dropped_at(frame) -> bool:
    """Whether ``frame`` (a signal handler's) runs inside a function of ``gc.callbacks`` or a ``__del__`` method (or
    below one), where Python prints an exception as "Exception ignored" and drops it."""
    codes = set()
    for callback in list(gc.callbacks):
        code = getattr(getattr(callback, "__func__", callback), "__code__", None)  # functions, bound methods
        if code is not None:
            codes.add(code)
    while frame is not None:
        if frame.f_code in codes or frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


def _send_again(signum: int) -> None:
    """``signum`` to the main thread: a real signal where the platform can (it wakes a main thread blocked in a wait,
    as the first did), else Python's simulation of one."""
    if hasattr(signal, "pthread_kill"):
        signal.pthread_kill(threading.main_thread().ident, signum)
    else:  # (Windows)
        import _thread

        _thread.interrupt_main(signum)


class _Guard:
    """The guarded handlers of :func:`interrupts_outside_gc` and the signals they deferred.

    The handlers and :meth:`close` run in the main thread only (Python runs signal handlers there), so ``deferred``
    needs no lock (a lock held by :meth:`close` would deadlock a handler run inside it); a timer's thread only sends
    the signal again and notes that it did (``sent``).
    """

    def __init__(self):
        self.handlers, self.deferred, self.sent = {}, {}, set()

    def _later(self, signum: int) -> None:
        _send_again(signum)
        self.sent.add(signum)

    def install(self, signum: int, handler) -> None:
        def guarded(signum, frame):
            if exceptions_dropped_at(frame):
                self.sent.discard(signum)
                timer = threading.Timer(_REDELIVER_SECONDS, self._later, args=(signum,))
                timer.daemon = True
                self.deferred[signum] = timer
                timer.start()
                return None
            self.deferred.pop(signum, None)
            return handler(signum, frame)

        guarded.wrapped = handler
        signal.signal(signum, guarded)
        self.handlers[signum] = handler

    def close(self) -> None:
        """Put the handlers back; a signal deferred and not yet sent again is handled now, by its own handler (one
        sent again is handled by the guarded handler at the next bytecode, before the handlers are put back)."""
        try:
            for signum, timer in list(self.deferred.items()):
                timer.cancel()
                timer.join()
                if signum not in self.sent and self.deferred.pop(signum, None) is not None:
                    self.handlers[signum](signum, None)
        finally:
            for signum, handler in self.handlers.items():
                with contextlib.suppress(ValueError, OSError, TypeError):
                    if getattr(signal.getsignal(signum), "wrapped", None) is handler:  # not another one set since
                        signal.signal(signum, handler)


@contextlib.contextmanager
def interrupts_outside_gc(signals=_SIGNALS):
    """Within the block, the Python handlers of ``signals`` in place (Python's ``KeyboardInterrupt`` for SIGINT, a
    command's own for SIGTERM) act only where their exception is not dropped (:func:`exceptions_dropped_at`); put
    back after it, once any signal they deferred is handled.

    Only in the main thread, and only over Python handlers: an ignored or default signal is left as it is.
    """
    guard = _Guard()
    if threading.current_thread() is threading.main_thread():
        for signum in signals:
            with contextlib.suppress(ValueError, OSError, TypeError):
                handler = signal.getsignal(signum)
                if callable(handler) and not hasattr(handler, "wrapped"):
                    guard.install(signum, handler)
    try:
        yield
    finally:
        guard.close()
