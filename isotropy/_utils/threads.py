"""Single-threaded BLAS for a block of code, without rescanning the process's libraries each time.

``threadpoolctl.threadpool_limits`` reads ``/proc/self/maps`` and matches every loaded library on
each call: about 5 ms with numpy alone, more with torch loaded, paid by every metric of every layer
of ``isotropy measure --model``. One :class:`threadpoolctl.ThreadpoolController` is kept instead and
found again only when modules were imported since (a new extension module may bring its own BLAS).
"""

from __future__ import annotations

import contextlib
import sys
import threading

_LOCK = threading.Lock()
_CACHED: list = [None, -1]  # the controller, and len(sys.modules) when it was made


def _controller():
    """The process's thread-pool controller, found again when modules were imported since."""
    from threadpoolctl import ThreadpoolController

    with _LOCK:
        if _CACHED[0] is None or _CACHED[1] != len(sys.modules):
            _CACHED[1] = len(sys.modules)  # counted first: ThreadpoolController imports nothing new after
            _CACHED[0] = ThreadpoolController()
        return _CACHED[0]


# one_blas_thread's blocks in different threads run one at a time (a block nested in one thread's block just runs)
_BLOCKS = threading.RLock()


@contextlib.contextmanager
def one_blas_thread():
    """Context manager: BLAS on one thread within the block, restored on exit (nothing without threadpoolctl).

    BLAS thread limits belong to the process, and OpenBLAS does not raise its thread count again
    when the call comes from another thread than the one that lowered it. Blocks in different
    threads therefore run one at a time, each restoring in its own thread what it found: two
    threads' overlapping blocks (metrics called from a thread pool) left BLAS on one thread for the
    rest of the process. Nothing inside a block waits for another thread's block (the kernels'
    worker threads never enter one), so the lock cannot deadlock.
    """
    try:
        controller = _controller()
    except ImportError:
        yield
        return
    with _BLOCKS, controller.limit(limits=1, user_api="blas"):
        yield


def blas_on_one_thread() -> bool:
    """Whether every BLAS of the process runs on one thread now (as in a dask worker started by its nanny).

    False without threadpoolctl (the limits cannot be read).
    """
    try:
        controller = _controller()
    except ImportError:
        return False
    return all(lib["num_threads"] == 1 for lib in controller.info() if lib["user_api"] == "blas")


def threads_in_effect() -> dict:
    """The thread counts the numbers are computed with: torch's intra-op threads (when torch is loaded) and each
    BLAS/OpenMP pool's, ``{"torch": n, "blas": n, "openmp": n}``.

    Recorded beside results (``run.json``, ``isotropy measure --json``): they change the last digits
    of the numbers (a silhouette of -0.009541787435454377 on 1 thread, -0.009541787520098577 on 2),
    and a default run said nothing of them. Reads the pools; imports nothing (torch only if loaded).
    """
    pools: dict[str, int] = {}
    for pool in _controller().info():
        pools[pool["user_api"]] = max(pools.get(pool["user_api"], 0), int(pool["num_threads"]))
    torch = sys.modules.get("torch")
    loaded = {"torch": int(torch.get_num_threads())} if torch is not None and hasattr(torch, "get_num_threads") else {}
    return {**loaded, **dict(sorted(pools.items()))}
