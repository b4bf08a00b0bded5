"""Helpers shared by the benchmark scripts (run them as ``python benchmarks/bench_*.py``)."""

from __future__ import annotations

import contextlib
import os
import time

import numpy as np


def low_rank_data(n, d, seed=0):
    """Float32 (n, d) data near a 10-dimensional linear subspace (the structure of real embeddings)."""
    rng = np.random.default_rng(seed)
    latent = rng.standard_normal((n, 10))
    mixing = rng.standard_normal((10, d))
    return (latent @ mixing + 0.1 * rng.standard_normal((n, d))).astype(np.float32)


def timed(fn):
    """Call ``fn()``; return its value, wall seconds and CPU seconds of this process."""
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - wall, time.process_time() - cpu


@contextlib.contextmanager
def isotropy_jit(value):
    """``ISOTROPY_JIT`` set to ``value`` within the block (``None``: unset, so ``auto``), then restored."""
    before = os.environ.get("ISOTROPY_JIT")
    if value is None:
        os.environ.pop("ISOTROPY_JIT", None)
    else:
        os.environ["ISOTROPY_JIT"] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("ISOTROPY_JIT", None)
        else:
            os.environ["ISOTROPY_JIT"] = before
