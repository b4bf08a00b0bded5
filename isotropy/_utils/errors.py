"""The library's exception for bad values, in a module of its own.

Private: :mod:`isotropy._utils.validation` (the argument checks) and :mod:`isotropy._utils.magnitude` (the
rescaling that refuses data out of range) both raise it without importing each other; it is public
as :class:`isotropy.IsotropyValueError`.
"""

from __future__ import annotations

import os

__all__ = ["IsotropyValueError", "Terminated", "debugging"]


class IsotropyValueError(ValueError):
    """A bad value given to a public function of :mod:`isotropy`."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill PID``, a batch system's time limit), raised where the command is, as Ctrl-C raises
    ``KeyboardInterrupt``: a run marks itself interrupted, or puts the previous results back when it had written none
    (the same clean-up as Ctrl-C, which is why it is one), and the command exits 143. Here, below every command that
    catches Ctrl-C, so that each can tell the two apart (the CLI raises it: :mod:`isotropy.cli`)."""


def debugging() -> bool:
    """Whether ``ISOTROPY_DEBUG`` is on (set, and not ``0``, ``false``, ``no`` or ``off``, in any case): errors
    are then shown with their traceback, not as one line.

    Read by :func:`isotropy.cli.main` for every subcommand's error, and by ``isotropy measure`` for a metric that
    fails while the others go on (its traceback comes before its one line).
    """
    return os.environ.get("ISOTROPY_DEBUG", "").strip().lower() not in ("", "0", "false", "no", "off")
