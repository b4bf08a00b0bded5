"""SNLI 1.0: the official JSON-lines (``snli_1.0_<split>.jsonl``) or tab-separated (``.txt``) files."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from isotropy._utils import jsontext
from isotropy._utils.errors import IsotropyValueError
from isotropy.datasets._paths import data_dir as resolve_data_dir
from isotropy.datasets._types import LabeledTexts

__all__ = ["SNLI_LABELS", "SNLI_URL", "load_snli"]

SNLI_URL = "https://nlp.stanford.edu/projects/snli/ (snli_1.0.zip)"
SNLI_LABELS = ("entailment", "neutral", "contradiction")
_SPLITS = {"dev": "dev", "validation": "dev", "train": "train", "test": "test"}


def _find(split: str, data_dir) -> Path:
    base = resolve_data_dir(data_dir)
    if base.is_file():
        return base
    stem = f"snli_1.0_{split}"
    for folder in (base / "snli_1.0", base):
        for ext in (".jsonl", ".txt"):
            if (folder / (stem + ext)).is_file():
                return folder / (stem + ext)
    raise FileNotFoundError(
        f"SNLI {split} split not found: expected {base / 'snli_1.0' / (stem + '.jsonl')} (or .txt); pass "
        f"--data-dir (data_dir= in Python) or set ISOTROPY_DATA to the folder containing snli_1.0. SNLI is published at {SNLI_URL}.")


def load_snli(split: str = "dev", *, data_dir=None) -> LabeledTexts:
    """Load the gold-labelled sentence pairs of one SNLI split.

    Parameters
    ----------
    split : {"dev", "train", "test"}, default="dev"
        ``"validation"`` is an alias of ``"dev"``.
    data_dir : path-like, optional
        The folder containing ``snli_1.0/``, that folder itself, or the file. Defaults to
        ``$ISOTROPY_DATA``, else ``./data``.

    Returns
    -------
    LabeledTexts
        Pairs (``text_a`` premise, ``text_b`` hypothesis) with labels 0 = entailment, 1 = neutral,
        2 = contradiction. Pairs without a gold label (``gold_label == "-"``) are dropped.

    References
    ----------
    Bowman, S. R., Angeli, G., Potts, C. and Manning, C. D. (2015). A large annotated corpus for
    learning natural language inference. EMNLP.

    Examples
    --------
    >>> from isotropy.datasets.snli import load_snli
    >>> load_snli("dev", data_dir="/nonexistent")
    Traceback (most recent call last):
    ...
    FileNotFoundError: SNLI dev split not found: expected /nonexistent/snli_1.0/snli_1.0_dev.jsonl ...
    """
    if split not in _SPLITS:
        raise IsotropyValueError(f"The 'split' parameter of load_snli must be one of {sorted(_SPLITS)}. Got {split!r} instead.")
    split = _SPLITS[split]
    path = _find(split, data_dir)
    try:
        with open(path, encoding="utf-8") as handle:
            if path.suffix == ".jsonl":
                records = [jsontext.loads(line) for line in handle if line.strip()]
            else:
                records = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    except (ValueError, csv.Error) as exc:  # not JSON, nested too deeply, not UTF-8, a field past csv's limit
        raise IsotropyValueError(f"{path}: not a readable SNLI file ({' '.join(str(exc).split())[:120]}); expected SNLI's "
                         f"official JSON-lines or tab-separated release.") from None
    fields = ("gold_label", "sentence1", "sentence2")
    broken = next((i for i, r in enumerate(records) if not isinstance(r, dict) or
                   not all(isinstance(r.get(k), str) for k in fields)), None)
    if broken is not None:
        raise IsotropyValueError(f"{path}: record {broken} lacks a text field among {list(fields)}; expected SNLI's "
                         f"official field names.")
    kept = [r for r in records if r["gold_label"] in SNLI_LABELS]
    return LabeledTexts(
        name=f"snli/{split}", text_a=[r["sentence1"].strip() for r in kept], text_b=[r["sentence2"].strip() for r in kept],
        labels=np.asarray([SNLI_LABELS.index(r["gold_label"]) for r in kept], dtype=np.int64),
        label_names=list(SNLI_LABELS),
        source={"path": str(path), "dropped_without_gold_label": len(records) - len(kept), "published": SNLI_URL})
