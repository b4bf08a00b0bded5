"""The container every text-classification loader returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from isotropy._utils.errors import IsotropyValueError

__all__ = ["LabeledTexts", "check_indicator_size"]


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


def check_indicator_size(path, n_items: int, n_labels: int) -> None:
    """Refuse a file's ``(n_items, n_labels)`` int8 0/1 matrix of more than ``MAX_EXPANSION`` times the file's bytes,
    above ``EXPANSION_FLOOR_BYTES`` (:mod:`isotropy.io._archives`: the cap on any file that expands when read),
    before it is allocated: items that each name a label of their own make it n x n (a 480 KB lexicon of 20,000
    words was a 400 MB matrix)."""
    import os

    from isotropy.io._archives import EXPANSION_FLOOR_BYTES, MAX_EXPANSION

    cells, size = n_items * n_labels, os.path.getsize(path)
    if cells <= EXPANSION_FLOOR_BYTES or cells <= MAX_EXPANSION * max(size, 1):
        return
    raise IsotropyValueError(f"{path}: its {n_items} items hold {n_labels} distinct labels, a {n_items} x {n_labels} "
                             f"0/1 matrix of {cells} bytes from a file of {size} bytes ({cells // max(size, 1)}x; "
                             f"more than {MAX_EXPANSION}x above {EXPANSION_FLOOR_BYTES // 2**20} MiB is refused); "
                             f"expected a few labels that many items share.")
