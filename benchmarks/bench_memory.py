"""Benchmark: peak memory of the covariance metrics (or of ``--metrics``) on a 200,000 x 384 float32 file (issue 11, item 10).

Every measurement runs in a fresh process, so one metric's arrays cannot hide another's:

- ``library``: ``np.load`` the file, then call one metric; reports the tracemalloc peak of the
  call (numpy registers its buffers with tracemalloc) and the process's VmHWM (peak resident
  memory) before and after the call;
- ``measure``: ``isotropy measure FILE --metrics <all covariance metrics>``; reports VmHWM at exit,
  and the same for a bare ``python -c "import numpy, isotropy.measure.command"`` (the interpreter's own
  memory), so that the part due to the data can be read as the difference.

All figures are given as multiples of the input (n·d·4 bytes), with the call's wall seconds. ``--metrics``
names other metrics of the package (e.g. ``effective_rank,rankme``); ``--compare DIR`` (repeatable) runs the
``library`` rows with another checkout's package too (``git worktree add DIR COMMIT``), first on ``PYTHONPATH``.
Usage::

    nice -n 10 .venv/bin/python benchmarks/bench_memory.py [--rows 200000] [--features 384] [--metrics LIST]
        [--compare DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

COVARIANCE_METRICS = ["isoscore", "isoscore_star", "participation_ratio", "cosine_similarity_mean",
                      "partition_isotropy", "rogue_dimension_share"]

_CHILD = """
import sys, time, tracemalloc
import numpy as np
import isotropy

def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
X = np.load(sys.argv[1])
before = hwm()
tracemalloc.start()
start = time.perf_counter()
getattr(isotropy, sys.argv[2])(X)
seconds = time.perf_counter() - start
peak = tracemalloc.get_traced_memory()[1]
print(peak, before, hwm(), seconds)
"""

_HWM_AT_EXIT = """
import runpy, sys, atexit
def report():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            print("VMHWM", int(line.split()[1]) * 1024, file=sys.stderr)
atexit.register(report)
sys.argv = ["isotropy", *sys.argv[1:]]
try:
    from isotropy.cli import main
except ImportError:
    from isotropy.cli import cli as main
main()
"""


def _hwm_of(args) -> int:
    result = subprocess.run([sys.executable, "-c", _HWM_AT_EXIT, *args], capture_output=True, text=True, check=False)
    lines = [line for line in result.stderr.splitlines() if line.startswith("VMHWM")]
    if result.returncode != 0 or not lines:
        raise RuntimeError(result.stderr[-2000:])
    return int(lines[-1].split()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--features", type=int, default=384)
    parser.add_argument("--metrics", default=",".join(COVARIANCE_METRICS), help="metrics of the isotropy package")
    parser.add_argument("--compare", action="append", default=[], metavar="DIR",
                        help="another checkout's package for the library rows (repeatable)")
    args = parser.parse_args()
    metrics = [name.strip() for name in args.metrics.split(",") if name.strip()]
    trees = {"this checkout": None, **{str(tree): tree for tree in args.compare}}
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.npy"
        X = (rng.standard_normal((args.rows, args.features), dtype=np.float32) * 0.1
             + rng.standard_normal(args.features, dtype=np.float32))
        np.save(path, X)
        size = X.nbytes
        del X
        print(f"input: {args.rows} x {args.features} float32 = {size / 2**20:.0f} MiB")
        print(f"{'checkout':<24}{'metric':<24}{'tracemalloc peak':>18}{'VmHWM growth':>14}{'seconds':>10}  "
              f"(multiples of the input)")
        for name in metrics:
            for label, tree in trees.items():
                env = None if tree is None else {**os.environ, "PYTHONPATH": os.pathsep.join(
                    filter(None, [str(tree), os.environ.get("PYTHONPATH")]))}
                out = subprocess.run([sys.executable, "-c", _CHILD, str(path), name], capture_output=True, text=True,
                                     check=True, env=env, cwd=tree).stdout.split()
                peak, before, after = map(int, out[:3])
                print(f"{label:<24}{name:<24}{peak / size:>18.3f}{(after - before) / size:>14.3f}{float(out[3]):>10.2f}")
        bare = _hwm_of(["--help"])
        full = _hwm_of(["measure", str(path), "--metrics", ",".join(metrics), "--no-progress"])
        print(f"isotropy measure (all {len(metrics)}): VmHWM {full / 2**20:.0f} MiB = "
              f"{full / size:.2f} x input; interpreter alone {bare / 2**20:.0f} MiB; "
              f"difference {(full - bare) / size:.2f} x input")


if __name__ == "__main__":
    main()
