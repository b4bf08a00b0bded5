"""The toolkit's error class, in a module of its own so that every helper can raise it without cycles."""

from __future__ import annotations

__all__ = ["IsotropyValueError"]


class IsotropyValueError(ValueError):
    """A bad value given to a public function of :mod:`isotropy`."""
