"""Writing results: JSON and text files, each written atomically through :func:`isotropy._utils.atomic.atomic_write`.

``run.json`` and ``config.yaml`` are written by the runner (:mod:`isotropy.experiments._runner`),
figures by :func:`isotropy.experiments._runner.save_figures`; experiments write their numbers here.
"""

from __future__ import annotations

import json
from pathlib import Path

from isotropy._utils.atomic import atomic_write

__all__ = ["mean_sd", "write_json", "write_text"]


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


def mean_sd(mean, sd, n_seeds: int, fmt: str = ".3f", *, scale: float = 1.0, sd_text=None) -> str:
    """A table cell: ``mean ± sd`` over ``n_seeds`` seeds, the mean alone for one seed, ``–`` for no value.

    One seed measures no spread, so no ``± 0.000`` is printed for it (the summaries store sd 0 there, beside
    their ``n_seeds``). ``scale`` multiplies both numbers (100 for percentages); ``sd_text(mean, sd)``, when
    given, writes the sd instead of ``fmt``.

    Examples
    --------
    >>> mean_sd(0.51234, 0.0123, 3), mean_sd(0.51234, 0.0, 1), mean_sd(None, None, 0)
    ('0.512 ± 0.012', '0.512', '–')
    >>> mean_sd(0.8123, 0.021, 3, ".1f", scale=100)
    '81.2 ± 2.1'
    """
    if mean is None:
        return "–"
    text = format(scale * mean, fmt)
    if n_seeds <= 1 or sd is None:
        return text
    return f"{text} ± {sd_text(scale * mean, scale * sd) if sd_text else format(scale * sd, fmt)}"


def _json_default(obj):
    import numpy as np

    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serialisable")
