"""The benchmark scripts (``benchmarks/``) loaded as modules, for the tests of their internals and their records."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def load_benchmark(name, monkeypatch):
    """``benchmarks/NAME.py`` as a fresh module (``_common`` included), with ``benchmarks/`` on ``sys.path`` for the
    test's duration: the scripts import their ``_common``."""
    monkeypatch.setattr(sys, "path", [str(BENCHMARKS), *sys.path])
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
