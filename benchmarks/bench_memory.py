"""Benchmark: peak memory of the covariance metrics on a 200,000 x 384 float32 file (issue 11, item 10).

Every measurement runs in a fresh process, so one metric's arrays cannot hide another's:

- ``library``: ``np.load`` the file, then call one metric; reports the tracemalloc peak of the
  call (numpy registers its buffers with tracemalloc) and the process's VmHWM (peak resident
  memory) before and after the call;
- ``measure``: ``isotropy measure FILE --metrics <all covariance metrics>``; reports VmHWM at exit,
  and the same for a bare ``python -c "import numpy, isotropy.measure.command"`` (the interpreter's own
  memory), so that the part due to the data can be read as the difference.

All figures are given as multiples of the input (n·d·4 bytes). Usage::

    nice -n 10 .venv/bin/python benchmarks/bench_memory.py [--rows 200000] [--features 384]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

COVARIANCE_METRICS = ["isoscore", "isoscore_star", "participation_ratio", "cosine_similarity_mean",
                      "partition_isotropy", "rogue_dimension_share"]

_CHILD = """
import sys, tracemalloc
import numpy as np
import isotropy

def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
X = np.load(sys.argv[1])
before = hwm()
tracemalloc.start()
getattr(isotropy, sys.argv[2])(X)
peak = tracemalloc.get_traced_memory()[1]
print(peak, before, hwm())
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
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.npy"
        X = (rng.standard_normal((args.rows, args.features), dtype=np.float32) * 0.1
             + rng.standard_normal(args.features, dtype=np.float32))
        np.save(path, X)
        size = X.nbytes
        del X
        print(f"input: {args.rows} x {args.features} float32 = {size / 2**20:.0f} MiB")
        print(f"{'metric':<24}{'tracemalloc peak':>18}{'VmHWM growth':>14}  (multiples of the input)")
        for name in COVARIANCE_METRICS:
            out = subprocess.run([sys.executable, "-c", _CHILD, str(path), name], capture_output=True, text=True,
                                 check=True).stdout.split()
            peak, before, after = map(int, out)
            print(f"{name:<24}{peak / size:>18.3f}{(after - before) / size:>14.3f}")
        bare = _hwm_of(["--help"])
        full = _hwm_of(["measure", str(path), "--metrics", ",".join(COVARIANCE_METRICS), "--no-progress"])
        print(f"isotropy measure (all {len(COVARIANCE_METRICS)}): VmHWM {full / 2**20:.0f} MiB = "
              f"{full / size:.2f} x input; interpreter alone {bare / 2**20:.0f} MiB; "
              f"difference {(full - bare) / size:.2f} x input")


if __name__ == "__main__":
    main()
