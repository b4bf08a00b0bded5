"""The isotropy-enhancing methods of Rajaee & Pilehvar, named the same way in every experiment that runs them.

Two experiments run them: ``frozen-classification`` (a classifier on the transformed vectors) and
``sts-isotropy`` (STS correlations). What a user types is the short name (``mean+pca``,
``kmeans+mean+pca``); what a table or figure shows is the paper's row name (``Mean + PCA``,
``K-means + Mean + PCA``). Both experiments take either spelling, in any case and spacing:
:func:`method_list` is the one config type of a list of methods.

Each experiment keeps, in its resolved config and its results, the spelling its committed runs
(``docs/runs/``) were written with: ``frozen-classification`` the short names, ``sts-isotropy`` the
row names. Their results are keyed by those names, so renaming them would change committed results.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import BeforeValidator

from isotropy.experiments._config import expects

__all__ = ["METHOD_NAMES", "method_key", "method_list"]

# what users type -> the paper's row name (tables, figures)
METHOD_NAMES = {"baseline": "Baseline", "mean": "Mean", "mean+pca": "Mean + PCA", "kmeans+mean": "K-means + Mean",
                "gmm+mean+pca": "GMM + Mean + PCA", "kmeans+mean+pca": "K-means + Mean + PCA",
                "whitening": "Whitening"}


def method_key(name) -> str | None:
    """The short name of a method written either way (``'K-means + Mean'`` -> ``'kmeans+mean'``); None if none."""
    if not isinstance(name, str):
        return None
    key = re.sub(r"[\s\-_]+", "", name.lower())
    return key if key in METHOD_NAMES else None


def method_list(methods: Sequence[str], *, min_length: int = 1):
    """The config type of a list of ``methods`` (named as the experiment records them), taken in either spelling.

    Each item is replaced by the experiment's own name of its method; an unknown item is left as it is,
    so the error names it. The same method twice (in any spelling) is refused.
    """
    recorded = {method_key(m): m for m in methods}
    typed = ", ".join(k for k in METHOD_NAMES if k in recorded)
    text = f"{'a non-empty ' if min_length else 'a '}list of distinct methods from {typed}"

    def recorded_names(value):
        if not isinstance(value, list):
            return value
        names = [recorded.get(method_key(item), item) for item in value]
        keys = [method_key(n) for n in names]
        if len(set(keys)) != len(keys):
            raise ValueError("distinct")
        return names

    # the short names, then the recorded ones ('Mean + PCA'): a bare name of either kind where the list belongs is
    # told to be written as a list (_config._format_errors), and a misspelt one gets the closest
    keys = [k for k in METHOD_NAMES if k in recorded]
    choices = list(dict.fromkeys([*keys, *(METHOD_NAMES[k] for k in keys), *(m for m in methods if m not in METHOD_NAMES)]))
    return Annotated[list[Literal[tuple(methods)]], BeforeValidator(recorded_names),
                     expects(f"{text} (or the table's names, such as 'Mean + PCA')", choices=choices,
                             min_length=min_length)]
