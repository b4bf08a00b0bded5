"""Run one of the tests' scripts in a fresh interpreter, or under torchrun with CPU processes (gloo).

The package comes from this checkout (first on ``PYTHONPATH``) and each process uses one OpenMP thread,
so several ranks on a 2-core machine do not oversubscribe it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run_script(name: str, *args, nproc: int | None = None, timeout: float = 1200) -> subprocess.CompletedProcess:
    """Run ``tests/<name>`` with ``args``: in one process, or under ``torch.distributed.run`` with ``nproc``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1"}
    launcher = [] if nproc is None else ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(nproc)]
    return subprocess.run([sys.executable, *launcher, str(HERE / name), *map(str, args)], check=False, env=env,
                          capture_output=True, text=True, timeout=timeout)
