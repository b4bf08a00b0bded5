"""One BLAS thread within a block, from one cached thread-pool controller (isotropy._utils.threads)."""

import sys

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


def test_the_controller_is_found_once_until_a_module_is_imported(monkeypatch):
    first = threads._controller()
    assert threads._controller() is first  # no second scan of the process's libraries
    monkeypatch.setitem(sys.modules, "_isotropy_test_new_module", object())
    assert threads._controller() is not first  # a new module may bring its own BLAS: scanned again
