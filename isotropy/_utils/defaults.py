"""Documented defaults told apart from the same values passed: an option nothing uses is refused only when passed."""

from __future__ import annotations

__all__ = ["DefaultFloat", "DefaultInt", "DefaultName"]


class DefaultFloat(float):
    """A documented default (``zeta=0.2``) told apart from the same value passed: it shows and computes as the float."""


class DefaultName(str):
    """A documented default name (``pooling="mean"``) told apart from the same name passed: it shows as the string."""


class DefaultInt(int):
    """A documented integer default (``batch_size=32``) told apart from the same value passed: it computes as the int."""
