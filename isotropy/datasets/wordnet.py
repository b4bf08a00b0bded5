"""Word-level multi-label tasks from WordNet 3.0 (through NLTK): parts of speech and noun supersenses.

Items are chosen from an ordered vocabulary (a word2vec or GloVe file lists words by decreasing
corpus frequency): the first words that pass the selection rule, so the items are the most
frequent words of the vector file that WordNet knows. A word counts only through WordNet lemmas
spelled exactly like it (no morphological reduction: ``"dogs"`` is not the noun ``"dog"``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from isotropy.datasets._paths import data_dir as resolve_data_dir
from isotropy.datasets._types import LabeledTexts

__all__ = ["POS_LABELS", "load_wordnet", "wordnet_pos_items", "wordnet_supersense_items"]

WORDNET_URL = "https://wordnet.princeton.edu/ (or: python -m nltk.downloader wordnet)"
POS_LABELS = ("noun", "verb", "adjective", "adverb")
_POS_COLUMN = {"n": 0, "v": 1, "a": 2, "s": 2, "r": 3}
_WORD = re.compile(r"[a-z]+(?:-[a-z]+)*")


def load_wordnet(*, data_dir=None):
    """Return NLTK's WordNet corpus reader, loaded; look in ``data_dir`` and ``data_dir/nltk_data`` too.

    NLTK searches ``$NLTK_DATA`` and its default folders; ``data_dir`` (or ``$ISOTROPY_DATA``) adds
    ``<data_dir>/nltk_data`` and ``<data_dir>`` to that search path.
    """
    try:
        import nltk
        from nltk.corpus import wordnet
    except ImportError:
        from isotropy._utils.install import extra_command

        raise ImportError(f"WordNet tasks need the 'nltk' package: {extra_command('experiments')}") from None
    base = resolve_data_dir(data_dir)
    extra = [str(base / "nltk_data"), str(base)]
    for folder in reversed(extra):
        if folder not in nltk.data.path:
            nltk.data.path.insert(0, folder)
    try:
        wordnet.ensure_loaded()
    except LookupError:
        where = ", ".join(extra + [str(p) for p in nltk.data.path if str(p) not in extra][:3])
        raise FileNotFoundError(
            f"WordNet 3.0 not found: expected <nltk_data>/corpora/wordnet/ (index.noun, data.noun, lexnames, ...) in one "
            f"of {where}, ...; set NLTK_DATA, or pass --data-dir containing nltk_data/. WordNet is published at "
            f"{WORDNET_URL}.") from None
    return wordnet


def _candidates(vocabulary: Sequence[str]):
    seen = set()
    for word in vocabulary:
        if len(word) >= 2 and word not in seen and _WORD.fullmatch(word):
            seen.add(word)
            yield word


def wordnet_pos_items(vocabulary: Sequence[str], *, n_items: int = 11_462, data_dir=None) -> LabeledTexts:
    """Words labelled with their WordNet parts of speech (multi-label: noun, verb, adjective, adverb).

    Parameters
    ----------
    vocabulary : sequence of str
        Candidate words, most frequent first (e.g. the words of a GloVe or word2vec file).
    n_items : int, default=11462
        How many words to keep (the paper's item count); fewer if the vocabulary runs out.
    data_dir : path-like, optional
        Also look for ``nltk_data`` here (see :func:`load_wordnet`).

    Returns
    -------
    LabeledTexts
        The first ``n_items`` words of ``vocabulary`` that are lowercase alphabetic (hyphens allowed),
        at least 2 characters long and a WordNet lemma of at least one part of speech, with a
        ``(n_items, 4)`` 0/1 matrix; adjective includes satellite adjectives.

    References
    ----------
    Miller, G. A. (1995). WordNet: a lexical database for English. Communications of the ACM, 38(11).

    Examples
    --------
    >>> items = wordnet_pos_items(["the", "dog", "quickly", "run", "xqzt"], n_items=10)
    >>> items.text_a, items.labels.tolist()
    (['dog', 'quickly', 'run'], [[1, 1, 0, 0], [0, 0, 0, 1], [1, 1, 0, 0]])
    """
    wn = load_wordnet(data_dir=data_dir)
    names = {pos: set(wn.all_lemma_names(pos)) for pos in "nvars"}
    words, rows = [], []
    for word in _candidates(vocabulary):
        row = [0, 0, 0, 0]
        for pos, lemma_names in names.items():
            if word in lemma_names:
                row[_POS_COLUMN[pos]] = 1
        if any(row):
            words.append(word)
            rows.append(row)
            if len(words) == n_items:
                break
    return LabeledTexts(name="wordnet-pos", text_a=words, text_b=None, labels=np.asarray(rows, dtype=np.int8).reshape(-1, 4),
                        label_names=list(POS_LABELS),
                        source={"resource": "WordNet 3.0 via nltk", "n_items": len(words),
                                "rule": "first words of the vector vocabulary (frequency order) matching [a-z]+(-[a-z]+)*, "
                                        "length >= 2, that are an exact WordNet lemma of some part of speech"})


def wordnet_supersense_items(vocabulary: Sequence[str], *, n_items: int = 2_275, data_dir=None) -> LabeledTexts:
    """Nouns labelled with their WordNet supersenses (multi-label over the 26 ``noun.*`` lexicographer files).

    Parameters
    ----------
    vocabulary : sequence of str
        Candidate words, most frequent first.
    n_items : int, default=2275
        How many words to keep (the paper's item count).
    data_dir : path-like, optional
        Also look for ``nltk_data`` here (see :func:`load_wordnet`).

    Returns
    -------
    LabeledTexts
        The first ``n_items`` words of ``vocabulary`` (same spelling rule as :func:`wordnet_pos_items`)
        that are WordNet lemmas of nouns only (no verb, adjective or adverb lemma of that spelling),
        labelled with the lexicographer files (``noun.animal``, ``noun.person``, ...) of all their
        noun senses; the label columns are all 26 ``noun.*`` files in WordNet's order.

    Examples
    --------
    >>> items = wordnet_supersense_items(["the", "dog", "run", "apple", "idea"], n_items=10)
    >>> items.text_a  # "dog" and "run" are also verbs, "the" is no noun
    ['apple', 'idea']
    >>> [items.label_names[j] for j in items.labels[0].nonzero()[0]]
    ['noun.food', 'noun.plant']
    """
    wn = load_wordnet(data_dir=data_dir)
    nouns = set(wn.all_lemma_names("n"))
    others = set().union(*(set(wn.all_lemma_names(pos)) for pos in "vars"))
    lexnames = [name for name in _lexicographer_files(wn) if name.startswith("noun.")]
    column = {name: j for j, name in enumerate(lexnames)}
    words, rows = [], []
    for word in _candidates(vocabulary):
        if word not in nouns or word in others:
            continue
        row = np.zeros(len(lexnames), dtype=np.int8)
        for lemma in wn.lemmas(word, pos="n"):
            if lemma.name().lower() == word:
                row[column[lemma.synset().lexname()]] = 1
        if row.any():
            words.append(word)
            rows.append(row)
            if len(words) == n_items:
                break
    labels = np.asarray(rows, dtype=np.int8).reshape(-1, len(lexnames))
    return LabeledTexts(name="wordnet-supersense", text_a=words, text_b=None, labels=labels, label_names=lexnames,
                        source={"resource": "WordNet 3.0 via nltk", "n_items": len(words),
                                "rule": "first words of the vector vocabulary (frequency order) matching [a-z]+(-[a-z]+)*, "
                                        "length >= 2, that are exact WordNet noun lemmas and no verb/adjective/adverb "
                                        "lemma; labels: lexicographer files of all their noun senses"})


def _lexicographer_files(wn) -> list[str]:
    """The 45 lexicographer file names in WordNet's numbering (from the ``lexnames`` file)."""
    with wn.open("lexnames") as handle:
        return [line.split()[1] for line in handle.read().splitlines() if line.strip()]
