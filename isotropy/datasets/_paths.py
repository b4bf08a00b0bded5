"""Where data sets live on disk."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["data_dir"]


def data_dir(explicit: str | os.PathLike | None = None) -> Path:
    """Where data sets live: ``explicit``, else ``$ISOTROPY_DATA``, else ``./data``."""
    if explicit is not None:
        return Path(explicit)
    return Path(os.environ.get("ISOTROPY_DATA", "data"))
