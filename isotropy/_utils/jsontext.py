"""JSON text from files, with a document nested too deeply for the parser refused like any other bad JSON.

:func:`json.loads` recurses once per level of nesting: 100,000 ``[`` in a file raise ``RecursionError``,
which no reader's ``except json.JSONDecodeError`` (nor the command line's ``ValueError``) catches.
:func:`loads` raises :class:`json.JSONDecodeError` (a ``ValueError``) instead, so every reader that
refuses bad JSON in one line refuses this file too.
"""

from __future__ import annotations

import json

__all__ = ["loads"]


def loads(text: str | bytes):
    """:func:`json.loads`, with nesting beyond the parser's recursion limit a :class:`json.JSONDecodeError`."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except (RecursionError, ValueError) as exc:  # ValueError: an integer past Python's 4300 digits
        document = text if isinstance(text, str) else text.decode("utf-8", "replace")
        why = "nested too deeply to parse" if isinstance(exc, RecursionError) else "an integer of too many digits"
        raise json.JSONDecodeError(f"{why} (a corrupt or hostile file)", document[:80], 0) from None
