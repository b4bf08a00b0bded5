"""The library's exception for bad values, in a module of its own.

Private: :mod:`isotropy._utils.validation` (the argument checks) and :mod:`isotropy._utils.magnitude` (the
rescaling that refuses data out of range) both raise it without importing each other; it is public
as :class:`isotropy.IsotropyValueError`.
"""

from __future__ import annotations

import os

__all__ = ["IsotropyValueError", "debugging"]


class IsotropyValueError(ValueError):
    """A bad value given to a public function of :mod:`isotropy`."""


def debugging() -> bool:
    """Whether ``ISOTROPY_DEBUG`` is on (set, and not ``0``, ``false``, ``no`` or ``off``, in any case): errors
    are then shown with their traceback, not as one line.

    Read by :func:`isotropy.cli.main` for every subcommand's error, and by ``isotropy measure`` for a metric that
    fails while the others go on (its traceback comes before its one line).
    """
    return os.environ.get("ISOTROPY_DEBUG", "").strip().lower() not in ("", "0", "false", "no", "off")
