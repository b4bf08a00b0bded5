"""Where models and embeddings are cached, shared by :mod:`isotropy.models.resolve` and :mod:`isotropy.models.gguf`."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["default_cache_dir"]


def default_cache_dir() -> Path:
    """``$ISOTROPY_CACHE`` or ``~/.cache/isotropy``: embeddings and converted models are cached here."""
    return Path(os.environ.get("ISOTROPY_CACHE", Path.home() / ".cache" / "isotropy"))
