"""The library's exception for bad values, in a module of its own.

Private: :mod:`isotropy._utils.validation` (the argument checks) and :mod:`isotropy._utils.magnitude` (the
rescaling that refuses data out of range) both raise it without importing each other; it is public
as :class:`isotropy.IsotropyValueError`.
"""

from __future__ import annotations

import os

__all__ = ["IsotropyTypeError", "IsotropyValueError", "Terminated", "debugging"]


class IsotropyValueError(ValueError):
    """A bad value given to a public function of :mod:`isotropy`."""

    def __reduce__(self):
        # rebuilt from its message and attributes, not by calling the class again: a subclass whose __init__ takes
        # keyword-only fields (RankDeficient's rank, say) failed to unpickle, and scikit-learn's n_jobs=2 and dask
        # showed "A result has failed to un-serialize" in place of the one-line message
        return _rebuilt, (type(self), self.args, self.__dict__)


def _rebuilt(cls, args, state):
    """An exception of class ``cls`` with ``args`` and the attributes ``state``, without calling its ``__init__``."""
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


class IsotropyTypeError(IsotropyValueError, TypeError):
    """An argument of the wrong type (a sparse matrix for ``X``, ``metric=1``, complex values, a set of labels).

    Both a ``TypeError`` (the convention: a wrong type is a TypeError) and an :class:`IsotropyValueError` (a
    ``ValueError``), as scikit-learn's ``InvalidParameterError`` is both: the same problem raised one type for
    numpy and another for torch (a scipy sparse ``X`` a TypeError, a torch sparse one a ValueError), and code
    catching either kept working when they were made one. Caught as ``TypeError`` or as ``IsotropyValueError``.
    """


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
