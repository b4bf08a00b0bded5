"""Writing results: JSON and text files, each written atomically through :func:`isotropy._utils.atomic.atomic_write`.

``run.json`` and ``config.yaml`` are written by the runner (:mod:`isotropy.experiments._runner`),
figures by :func:`isotropy.experiments._runner.save_figures`; experiments write their numbers here.
"""

from __future__ import annotations

import json
from pathlib import Path

from isotropy._utils.atomic import atomic_write

__all__ = ["write_json", "write_text"]


def write_json(path, obj) -> Path:
    """Write ``obj`` as indented JSON, atomically (numpy scalars and arrays, paths allowed)."""
    with atomic_write(path) as handle:
        json.dump(obj, handle, indent=2, default=_json_default)
        handle.write("\n")
    return Path(path)


def write_text(path, text: str) -> Path:
    """Write ``text`` atomically."""
    with atomic_write(path) as handle:
        handle.write(text)
    return Path(path)


def _json_default(obj):
    import numpy as np

    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serialisable")
