"""Where data sets live on disk: the one rule every loader and experiment uses."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["data_dir"]


def data_dir(explicit: str | os.PathLike | None = None) -> Path:
    """Where data sets live: ``explicit``, else ``$ISOTROPY_DATA``, else ``./data`` (``~`` expanded).

    Examples
    --------
    >>> data_dir("~/corpora").name
    'corpora'
    """
    if explicit is None:
        explicit = os.environ.get("ISOTROPY_DATA") or "data"
    return Path(explicit).expanduser()
