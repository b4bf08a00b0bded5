"""Loaders for the data sets the experiments use, in the layouts their users have on disk.

The loaders are names of this package (``isotropy.datasets.load_sts``), imported on first use.
"""

from __future__ import annotations

from isotropy._utils.lazy import lazy_exports

_EXPORTS = {
    "LabeledTexts": "isotropy.datasets._types",
    "load_corpus": "isotropy.datasets.corpora",
    "load_ptb": "isotropy.datasets.corpora",
    "load_text_file": "isotropy.datasets.corpora",
    "load_wikitext2": "isotropy.datasets.corpora",
    "load_glue_task": "isotropy.datasets.glue",
    "load_nrc_emotion_lexicon": "isotropy.datasets.lexicon",
    "load_polarity": "isotropy.datasets.polarity",
    "load_snli": "isotropy.datasets.snli",
    "STSPairs": "isotropy.datasets.sts",
    "load_sts": "isotropy.datasets.sts",
    "sts_correlations": "isotropy.datasets.sts",
    "load_table": "isotropy.datasets.tables",
    "load_wordnet": "isotropy.datasets.wordnet",
}

__all__ = sorted(_EXPORTS)  # noqa: PLE0605 (the lazy exports are the public names)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
