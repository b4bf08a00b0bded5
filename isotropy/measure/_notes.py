"""The ``Note:`` lines of ``isotropy measure`` on stderr, which ``--quiet`` silences (warnings and errors stay).

A note says what the command chose or left out (a metric left out of the default table, the rows a sample kept, the
time an O(n²) metric will take); a ``Warning:`` says something about the numbers, and an ``Error:`` that one failed:
those two are printed whatever ``--quiet`` says, as ``isotropy run --quiet`` keeps them. The switch is the command's
(one per process; :func:`notes_off` puts it back when the command ends, also in a test's in-process run).
"""

from __future__ import annotations

import contextlib

import click

__all__ = ["note", "notes_off", "notes_silenced"]

_silenced = [False]


def note(text: str) -> None:
    """Print ``Note: <text>`` on stderr, unless ``--quiet`` silences the notes."""
    if not _silenced[0]:
        click.echo(f"Note: {text}", err=True)


def notes_silenced() -> bool:
    """Whether ``--quiet`` silences the notes (for a note written another way, such as above a progress bar)."""
    return _silenced[0]


@contextlib.contextmanager
def notes_off(quiet: bool):
    """Silence :func:`note` while the command runs (``quiet``), and put the switch back after."""
    before = _silenced[0]
    _silenced[0] = bool(quiet)
    try:
        yield
    finally:
        _silenced[0] = before
