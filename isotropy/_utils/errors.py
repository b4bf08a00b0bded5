"""The library's exception for bad values, in a module of its own.

Private: :mod:`isotropy._utils.validation` (the argument checks) and :mod:`isotropy._utils.magnitude` (the
rescaling that refuses data out of range) both raise it without importing each other; it is public
as :class:`isotropy.IsotropyValueError`.
"""

from __future__ import annotations

__all__ = ["IsotropyValueError"]


class IsotropyValueError(ValueError):
    """A bad value given to a public function of :mod:`isotropy`."""
