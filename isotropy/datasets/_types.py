"""The container every text-classification loader returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from isotropy._utils.errors import IsotropyValueError

__all__ = ["LabeledTexts"]


@dataclass
class LabeledTexts:
    """Texts (single sentences or pairs) with single- or multi-label targets.

    Attributes
    ----------
    name : str
        Data set name, e.g. ``"sst2/train"``.
    text_a : list of str
        First (or only) text of each item.
    text_b : list of str or None
        Second text of each item for pair tasks, else ``None``.
    labels : ndarray
        ``(n_items,)`` integer class ids in ``range(len(label_names))`` for single-label tasks, or
        ``(n_items, n_labels)`` 0/1 int8 indicators for multi-label tasks.
    label_names : list of str
        Name of each class id (single-label) or each indicator column (multi-label).
    source : dict
        Where the data came from (paths, selection rules), written beside results.
    """

    name: str
    text_a: list[str]
    text_b: list[str] | None
    labels: np.ndarray
    label_names: list[str]
    source: dict = field(default_factory=dict)

    def __post_init__(self):
        n = len(self.text_a)
        if self.text_b is not None and len(self.text_b) != n:
            raise IsotropyValueError(f"{self.name}: text_b has {len(self.text_b)} items, text_a has {n}.")
        if len(self.labels) != n:
            raise IsotropyValueError(f"{self.name}: labels has {len(self.labels)} rows, text_a has {n}.")

    @property
    def is_pair(self) -> bool:
        return self.text_b is not None

    @property
    def is_multilabel(self) -> bool:
        return np.asarray(self.labels).ndim == 2

    def __len__(self) -> int:
        return len(self.text_a)
