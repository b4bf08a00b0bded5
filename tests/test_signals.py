"""Ctrl-C and SIGTERM are not lost when they land inside a garbage-collector callback (isotropy._utils.signals).

Python runs a signal's handler at the next bytecode of the main thread; inside a ``gc.callbacks`` function (dask's
distributed registers one) the handler's exception was printed as "Exception ignored" and dropped, and ``isotropy
measure --workers 2`` then finished its search and exited 0 after a Ctrl-C (once in the suite).
"""

from __future__ import annotations

import contextlib
import gc
import signal
import sys
import threading
import time

import pytest

from isotropy._utils.errors import Terminated
from isotropy._utils.signals import exceptions_dropped_at, interrupts_outside_gc


@contextlib.contextmanager
def _handler(signum, handler):
    previous = signal.signal(signum, handler)
    try:
        yield
    finally:
        signal.signal(signum, previous)


@contextlib.contextmanager
def _signal_inside_a_gc_callback(signum):
    """A gc callback that sends ``signum`` to this process at the first collection and runs Python code after it, so
    that the handler runs inside the callback."""
    fired = []

    def callback(phase, info):
        if phase == "start" and not fired:
            fired.append(True)
            signal.raise_signal(signum)
            for _ in range(1000):  # bytecodes: the handler runs here
                pass

    gc.callbacks.append(callback)
    try:
        yield fired
    finally:
        gc.callbacks.remove(callback)


def _collect_then_wait():
    gc.collect()
    for _ in range(200):  # 2 s: the redelivered signal arrives within milliseconds
        time.sleep(0.01)


def _raise_terminated(signum, frame):
    raise Terminated()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_without_the_guard_a_ctrl_c_inside_a_gc_callback_is_lost():
    """The failure itself, so that the test below can fail: the KeyboardInterrupt is dropped."""
    with _handler(signal.SIGINT, signal.default_int_handler), _signal_inside_a_gc_callback(signal.SIGINT) as fired:
        _collect_then_wait()  # no KeyboardInterrupt reaches here
    assert fired


@pytest.mark.parametrize(("signum", "handler", "exception"), [(signal.SIGINT, signal.default_int_handler,
                                                                KeyboardInterrupt),
                                                               (signal.SIGTERM, _raise_terminated, Terminated)])
def test_a_signal_inside_a_gc_callback_is_delivered_after_it(signum, handler, exception):
    with _handler(signum, handler):
        with interrupts_outside_gc(), _signal_inside_a_gc_callback(signum) as fired, pytest.raises(exception):
            _collect_then_wait()
        assert fired
        assert signal.getsignal(signum) is handler  # put back


def test_a_signal_outside_gc_callbacks_is_handled_at_once_and_other_handlers_are_left_alone():
    with _handler(signal.SIGINT, signal.default_int_handler), interrupts_outside_gc(), \
            pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)
        for _ in range(1000):
            pass
    with _handler(signal.SIGINT, signal.SIG_IGN), interrupts_outside_gc():
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN  # an ignored Ctrl-C stays ignored


def test_in_gc_callback_reads_the_frames_of_the_callbacks():
    seen = []

    def callback(phase, info):
        seen.append(exceptions_dropped_at(sys._getframe()))

    gc.callbacks.append(callback)
    try:
        gc.collect()
    finally:
        gc.callbacks.remove(callback)
    assert seen and all(seen) and not exceptions_dropped_at(sys._getframe())


def test_a_deferred_signal_wakes_a_main_thread_blocked_in_a_wait():
    """Sent again as a real signal: a main thread waiting on an event (as dask's client waits for its results) is
    woken at once, not when the wait ends (Python's simulated signal reached it only then)."""
    with _handler(signal.SIGINT, signal.default_int_handler), interrupts_outside_gc(), \
            _signal_inside_a_gc_callback(signal.SIGINT):
        start = time.perf_counter()
        with pytest.raises(KeyboardInterrupt):
            gc.collect()
            threading.Event().wait(10)
        assert time.perf_counter() - start < 5


def test_a_signal_deferred_when_the_block_ends_is_handled_then(monkeypatch):
    """A Ctrl-C deferred in the block's last moment is handled as the block ends, inside it, not lost once the
    handlers are put back (SIGTERM's default would end the process silently; a late KeyboardInterrupt would escape
    the command's handling)."""
    from isotropy._utils import signals

    monkeypatch.setattr(signals, "_REDELIVER_SECONDS", 30)
    with _handler(signal.SIGINT, signal.default_int_handler):
        with pytest.raises(KeyboardInterrupt), _signal_inside_a_gc_callback(signal.SIGINT) as fired, \
                interrupts_outside_gc():
            gc.collect()
        assert fired and signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_signal_inside_a_del_method_is_delivered_after_it():
    class Finalised:
        def __del__(self):
            signal.raise_signal(signal.SIGINT)
            for _ in range(1000):
                pass

    with _handler(signal.SIGINT, signal.default_int_handler), interrupts_outside_gc(), \
            pytest.raises(KeyboardInterrupt):
        Finalised()  # dropped at once: __del__ runs here
        for _ in range(200):
            time.sleep(0.01)
