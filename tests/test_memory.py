"""Peak memory of the covariance metrics (issue 11, item 10): chunked float64 accumulation.

numpy registers its buffers with tracemalloc, so the peak traced during a call is the extra
memory the call allocated. Every covariance metric must stay well under the input's own size
(the input plus the call then stay under twice the input); before, the cosine and I(W) made
float64 copies of the whole matrix (2x a float32 input each) and more. The 200,000 x 384 case
of the issue is measured by ``benchmarks/bench_memory.py`` in fresh processes.
"""

from __future__ import annotations

import importlib
import tracemalloc

import numpy as np
import pytest

import isotropy as iso


@pytest.fixture(scope="module")
def big():
    rng = np.random.default_rng(0)
    return rng.standard_normal((60_000, 48), dtype=np.float32) * 0.1 + rng.standard_normal(48, dtype=np.float32)


@pytest.mark.parametrize("name", ["isoscore", "isoscore_star", "participation_ratio", "cosine_similarity_mean",
                                  "partition_isotropy", "rogue_dimension_share"])
def test_covariance_metrics_allocate_less_than_half_the_input(big, name, monkeypatch):
    # 2**16-element chunks (512 KiB) wherever the chunk size is defined or imported: an 11 MiB input, many chunks
    for name_ in ("isotropy._kernels.isoscore", "isotropy._kernels.accumulator", "isotropy._kernels.rows",
                  "isotropy.metrics.partition"):
        monkeypatch.setattr(importlib.import_module(name_), "_CHUNK_ELEMENTS", 1 << 16)
    tracemalloc.start()
    try:
        value = getattr(iso, name)(big)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.isfinite(value)
    assert peak < 0.5 * big.nbytes, f"{name}: peak {peak / big.nbytes:.2f} x the input"
