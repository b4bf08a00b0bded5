"""Shared plumbing for experiment results: configs, run metadata and atomic writes.

Every run writes, beside its results, ``run.json`` with the experiment name, the resolved
configuration, the seeds, the command line, the start time and the versions of the packages
that produced the numbers. Files are written to a temporary name and renamed into place, so an
interrupted run never leaves a half-written result file.
"""

from __future__ import annotations

import datetime as _dt
import json
import platform
import sys
from pathlib import Path
from typing import Any

import yaml

from isotropy._atomic import atomic_write
from isotropy._versions import package_versions
from isotropy.datasets._paths import data_dir  # re-exported for the experiments

__all__ = [
    "CONFIG_ROOT",
    "load_config",
    "config_path",
    "available_setups",
    "package_versions",
    "atomic_write",
    "write_json",
    "write_text",
    "write_run_metadata",
    "data_dir",
]

CONFIG_ROOT = Path(__file__).resolve().parent.parent / "configs"

def config_path(experiment: str, setup: str) -> Path:
    """Path of the packaged config ``configs/<experiment>/<setup>.yaml``."""
    return CONFIG_ROOT / experiment / f"{setup}.yaml"


def available_setups(experiment: str) -> list[str]:
    """Names of the packaged setups of ``experiment``."""
    return sorted(p.stem for p in (CONFIG_ROOT / experiment).glob("*.yaml"))


def load_config(experiment: str, setup: str, overrides: dict[str, Any] | None = None, *,
                sets: dict[str, Any] | None = None) -> dict[str, Any]:
    """Load a packaged (or user-given ``.yaml`` path) config and apply overrides.

    ``overrides`` come from CLI options, where ``None`` means "not given" and is skipped; ``sets``
    (``--set KEY=VALUE``) are applied after them and keep ``None`` (``KEY=null``). Keys may be
    dotted (``"optim.lr"``) to reach nested values. Unknown keys are an error.
    """
    path = Path(setup) if setup.endswith((".yaml", ".yml")) else config_path(experiment, setup)
    if not path.is_file():
        raise ValueError(f"Unknown setup {setup!r} for {experiment}: expected one of {available_setups(experiment)} "
                         f"or a path to a .yaml config file.")
    config = yaml.safe_load(path.read_text()) or {}
    given = [(k, v) for k, v in (overrides or {}).items() if v is not None]
    for key, value in given + list((sets or {}).items()):
        node = config
        parts = key.split(".")
        for depth, part in enumerate(parts):
            if not isinstance(node, dict) or part not in node:
                known = sorted(node) if isinstance(node, dict) else []
                where = ".".join(parts[:depth]) or "the top level"
                raise ValueError(f"Unknown config key {key!r} for {experiment}/{setup}: {part!r} is not a key of "
                                 f"{where}; expected one of {known}.")
            if depth < len(parts) - 1:
                node = node[part]
        node[parts[-1]] = value
    return config


def write_json(path, obj) -> Path:
    """Write ``obj`` as indented JSON, atomically."""
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


def write_run_metadata(results_dir, *, experiment: str, config: dict[str, Any], seeds=None,
                       extra: dict[str, Any] | None = None) -> Path:
    """Write ``run.json`` (experiment, resolved config, seeds, command, time, versions) and ``config.yaml``."""
    results_dir = Path(results_dir)
    meta = {
        "experiment": experiment,
        "config": config,
        "seeds": list(seeds) if seeds is not None else None,
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "versions": package_versions(),
        **(extra or {}),
    }
    write_text(results_dir / "config.yaml", yaml.safe_dump(config, sort_keys=False))
    return write_json(results_dir / "run.json", meta)


def save_figure(fig, stem, *, formats=("png", "svg"), dpi: int = 150, **savefig_kwargs) -> list[Path]:
    """Save a matplotlib figure as ``stem.<format>`` for each format, each file written atomically."""
    stem = Path(stem)
    savefig_kwargs.setdefault("bbox_inches", "tight")
    paths = []
    for fmt in formats:
        path = stem.with_suffix(f".{fmt}")
        with atomic_write(path, "wb") as handle:
            fig.savefig(handle, format=fmt, dpi=dpi, **savefig_kwargs)
        paths.append(path)
    return paths
