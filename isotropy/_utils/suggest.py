"""Did-you-mean suggestions for misspelt names (metrics, experiments, setups, models, options)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["did_you_mean"]


def did_you_mean(value, choices: Iterable[str], *, n: int = 1, cutoff: float = 0.6) -> str:
    """``" Did you mean 'x'?"`` for the closest of ``choices`` to ``value``, or ``""`` when none is close.

    Case-insensitive; meant to be appended to a one-line error message.

    Examples
    --------
    >>> did_you_mean("isoscor", ["isoscore", "silhouette_score"])
    " Did you mean 'isoscore'?"
    >>> did_you_mean("zzz", ["isoscore"])
    ''
    """
    if not isinstance(value, str):
        return ""
    choices = list(choices)
    by_lower = {c.lower(): c for c in choices}
    close = difflib.get_close_matches(value.lower(), list(by_lower), n=n, cutoff=cutoff)
    if not close:
        return ""
    return " Did you mean " + " or ".join(repr(by_lower[c]) for c in close) + "?"
