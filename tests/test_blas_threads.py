"""One BLAS thread within a block, from one cached thread-pool controller (isotropy._utils.threads)."""

import sys

import pytest
from threadpoolctl import threadpool_info

from isotropy._utils import threads


def _blas_threads():
    return sorted(lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas")


def test_limits_blas_to_one_thread_and_restores_it():
    before = _blas_threads()
    assert before  # numpy's BLAS is found
    with threads.one_blas_thread():
        assert set(_blas_threads()) == {1}
    assert _blas_threads() == before


_POOL_OF_METRICS = """
import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from threadpoolctl import threadpool_info

import isotropy

def blas():
    return sorted(lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas")

X = np.random.default_rng(0).normal(size=(3000, 256))
before = blas()
with ThreadPoolExecutor(4) as pool:
    values = sorted(set(pool.map(lambda _: isotropy.partition_isotropy(X), range(40))))
print(json.dumps({"before": before, "after": blas(), "values": values, "alone": isotropy.partition_isotropy(X)}))
"""


def test_metrics_called_from_a_thread_pool_leave_the_blas_limits_as_they_found_them():
    """One-BLAS-thread blocks of several threads at once (I(W)'s eigenvectors) restore the process's limits. They
    used to overlap, and the main thread was left with BLAS on one thread (its products then ran at half speed on
    two cores). A fresh interpreter whose main thread never set a limit, as a user's script is."""
    import json
    import os
    import subprocess

    env = {**os.environ, "OPENBLAS_NUM_THREADS": "2"}  # BLAS on two threads, whatever this machine has
    out = subprocess.run([sys.executable, "-c", _POOL_OF_METRICS], capture_output=True, text=True, check=True,
                         env=env, timeout=300).stdout
    got = json.loads(out.splitlines()[-1])
    assert got["before"] == [2]
    assert got["after"] == got["before"]
    assert got["values"] == [got["alone"]]


def test_the_controller_is_found_once_until_a_module_is_imported(monkeypatch):
    first = threads._controller()
    assert threads._controller() is first  # no second scan of the process's libraries
    monkeypatch.setitem(sys.modules, "_isotropy_test_new_module", object())
    assert threads._controller() is not first  # a new module may bring its own BLAS: scanned again


def test_kernel_tasks_run_once_each_on_threads_kept_between_calls(monkeypatch):
    import threading
    import time

    import pytest

    from isotropy._kernels import silhouette

    monkeypatch.setattr(silhouette, "_cores", lambda: 2)
    done, idents = [], []

    def task(i, state):
        time.sleep(0.002)  # long enough for both workers to take tasks
        done.append(i)
        idents.append(threading.get_ident())

    silhouette._run_tasks(task, [(i,) for i in range(50)])
    assert sorted(done) == list(range(50))
    first = set(idents)
    assert len(first) == 2 and threading.get_ident() not in first
    idents.clear()
    silhouette._run_tasks(task, [(i,) for i in range(50)])
    assert set(idents) <= first  # no new thread: the same workers again

    def failing(i, state):
        if i == 7:
            raise RuntimeError("task 7")
        done.append(i)

    done.clear()
    with pytest.raises(RuntimeError, match="task 7"):
        silhouette._run_tasks(failing, [(i,) for i in range(20)])
    assert sorted(done) == [i for i in range(20) if i != 7]  # the other worker ran the rest
    done.clear()
    silhouette._run_tasks(task, [(i,) for i in range(5)])  # still usable
    assert sorted(done) == list(range(5))


def test_a_larger_set_of_kernel_threads_ends_the_smaller_one():
    """Asking for more workers than the kept threads replaces them, and the old threads are let go."""
    from isotropy._kernels import silhouette

    old = silhouette._threads(1)
    size = silhouette._THREADS[1]
    bigger = silhouette._threads(size + 1)
    assert bigger is not old and silhouette._THREADS[1] == size + 1
    with pytest.raises(RuntimeError, match="shutdown"):
        old.submit(int)
    assert silhouette._threads(size + 1) is bigger  # kept from then on
