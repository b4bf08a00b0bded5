"""Helpers shared by the benchmark scripts (run them as ``python benchmarks/bench_*.py``)."""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import sys
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


def write_record(path, record: dict, *, argv=None) -> dict:
    """Write ``record`` as JSON to ``path`` with what ran beside its numbers, and return it.

    Adds the command (``argv``: ``sys.argv`` by default), the date, the machine's core count and the
    package versions with the commit the package ran from (``isotropy-source``; ``+modified`` when the
    tree differs from it): the docs read committed records (``docs/runs/benchmarks/``) through value
    markers, never typed numbers. Written atomically, so a failed run leaves no half-written record.
    """
    import shlex

    from isotropy._utils.atomic import atomic_write
    from isotropy._utils.versions import package_versions

    argv = sys.argv if argv is None else argv
    full = {**record, "command": shlex.join(["python", "benchmarks/" + os.path.basename(argv[0]), *argv[1:]]),
            "date": datetime.date.today().isoformat(), "cpu_count": os.cpu_count(),
            "versions": package_versions(["scikit-dimension", "isoscore", "threadpoolctl"])}
    full["source_commit"] = full["versions"]["isotropy-source"]
    with atomic_write(path, name="--json") as handle:
        json.dump(full, handle, indent=2)
        handle.write("\n")
    return full


def round_interval(ratios) -> tuple[float, float]:
    """``(low, high)`` of per-round ratios: their quartiles from four rounds on, else their least and greatest
    (with two or three rounds a quartile would be an interpolation between the rounds, not a measurement)."""
    ratios = sorted(float(r) for r in ratios)
    if not ratios:
        raise ValueError("no rounds to form an interval from")
    if len(ratios) < 4:
        return ratios[0], ratios[-1]
    import statistics

    low, _, high = statistics.quantiles(ratios, n=4, method="inclusive")
    return low, high


def verdict_at_most(low: float, high: float, goal: float) -> str:
    """The verdict on a ratio whose goal is ``at most goal``, from the interval ``[low, high]`` of its per-round
    ratios (:func:`round_interval`): ``"met"`` when all of it is at or below the goal, ``"not met"`` when all of
    it is above, else ``"not established"`` (rounds on both sides of the goal establish neither)."""
    if high <= goal:
        return "met"
    return "not met" if low > goal else "not established"
