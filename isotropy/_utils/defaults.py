"""Documented defaults told apart from the same values passed: an option nothing uses is refused only when passed."""

from __future__ import annotations

__all__ = ["MAX_LENGTH", "DefaultFloat", "DefaultInt", "DefaultName"]


class DefaultFloat(float):
    """A documented default (``zeta=0.2``) told apart from the same value passed: it shows and computes as the float."""


class DefaultName(str):
    """A documented default name (``pooling="mean"``) told apart from the same name passed: it shows as the string."""


class DefaultInt(int):
    """A documented integer default (``batch_size=32``) told apart from the same value passed: it computes as the int."""


# max_length's default (tokens per text, cut to the model's positions) of isotropy measure --model, the geometry
# probe and the regularisers: told apart from 128 passed (refused where nothing is tokenised, noted where it is cut)
MAX_LENGTH = DefaultInt(128)
