"""Pang & Lee (2005) sentence polarity data set v1.0 (``rt-polaritydata``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from isotropy.datasets._paths import data_dir as resolve_data_dir
from isotropy.datasets._types import LabeledTexts

__all__ = ["POLARITY_URL", "load_polarity"]

POLARITY_URL = "https://www.cs.cornell.edu/people/pabo/movie-review-data/ (rt-polaritydata.tar.gz)"
_FILES = ("rt-polarity.neg", "rt-polarity.pos")


def _find(data_dir) -> Path:
    base = resolve_data_dir(data_dir)
    for candidate in (base / "rt-polaritydata", base / "rt-polaritydata" / "rt-polaritydata", base):
        if all((candidate / f).is_file() for f in _FILES):
            return candidate
    expected = base / "rt-polaritydata"
    raise FileNotFoundError(
        f"Sentence polarity data not found: expected {expected / _FILES[1]} and {expected / _FILES[0]} "
        f"(one sentence a line, latin-1); pass --data-dir (data_dir= in Python) or set ISOTROPY_DATA to the folder "
        f"containing rt-polaritydata. The data set (sentence polarity dataset v1.0) is published at {POLARITY_URL}.")


def load_polarity(*, data_dir=None) -> LabeledTexts:
    """Load the sentence polarity data set: 5,331 negative then 5,331 positive sentences.

    Parameters
    ----------
    data_dir : path-like, optional
        The folder containing ``rt-polaritydata/`` (or that folder itself). Defaults to
        ``$ISOTROPY_DATA``, else ``./data``.

    Returns
    -------
    LabeledTexts
        ``labels`` are 0 = negative, 1 = positive; files are decoded as latin-1 (as shipped) and each
        line is stripped of surrounding whitespace.

    References
    ----------
    Pang, B. and Lee, L. (2005). Seeing stars: exploiting class relationships for sentiment
    categorization with respect to rating scales. ACL.

    Examples
    --------
    >>> from isotropy.datasets.polarity import load_polarity
    >>> load_polarity(data_dir="/nonexistent")
    Traceback (most recent call last):
    ...
    FileNotFoundError: Sentence polarity data not found: expected /nonexistent/rt-polaritydata/rt-polarity.pos ...
    """
    folder = _find(data_dir)
    texts, labels = [], []
    for label, name in enumerate(_FILES):
        with open(folder / name, encoding="latin-1") as handle:
            lines = [line.strip() for line in handle if line.strip()]
        texts += lines
        labels += [label] * len(lines)
    return LabeledTexts(name="polarity", text_a=texts, text_b=None, labels=np.asarray(labels, dtype=np.int64),
                        label_names=["negative", "positive"],
                        source={"path": str(folder), "encoding": "latin-1", "published": POLARITY_URL})
