"""From a config to the optimisation problem: a matrix of initial embeddings and labelled items.

Every setup becomes the same thing: an embedding matrix ``E`` of shape ``(n_rows, d)`` (the
parameters; each distinct text or word is one row) and items, each a tuple of ``k`` row indices
(``k = 1`` for single texts and words, ``k = 2`` for sentence pairs) with its label(s). An item's
representation is the concatenation of its rows, of width ``k * d``; the classifier maps it to
the classes. IsoScore is computed on ``E`` (the unpaired embeddings), silhouette on the item
representations with the item labels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from isotropy.datasets._types import LabeledTexts

__all__ = ["TASKS", "Problem", "build_problem", "is_static_vectors", "load_task_data"]

TASKS = ("polarity", "snli", "pos", "supersense", "lexicon", "glue", "table")
_VECTOR_SUFFIXES = (".txt", ".vec", ".bin", ".w2v", ".gz")


@dataclass
class Problem:
    """Initial embeddings and the items built from their rows."""

    name: str
    embeddings: np.ndarray  # (n_rows, d) float32
    index: np.ndarray  # (n_items, k) int64 rows of ``embeddings`` per item
    labels: np.ndarray  # (n_items,) int64 or (n_items, n_labels) int8
    label_names: list[str]
    source: dict = field(default_factory=dict)

    @property
    def multilabel(self) -> bool:
        return self.labels.ndim == 2

    @property
    def n_classes(self) -> int:
        return len(self.label_names)

    @property
    def n_items(self) -> int:
        return self.index.shape[0]

    @property
    def n_parameters(self) -> int:
        d_in = self.index.shape[1] * self.embeddings.shape[1]
        return self.embeddings.size + d_in * self.n_classes + self.n_classes


def is_static_vectors(model: str) -> bool:
    """Whether ``model`` names static word vectors (the packaged GloVe or a vector file), not a sentence model."""
    from isotropy.io.word_vectors import PACKAGED_GLOVE

    path = Path(str(model)).expanduser()
    return str(model) == PACKAGED_GLOVE or (path.is_file() and path.suffix in _VECTOR_SUFFIXES) or (
        not path.exists() and path.suffix in _VECTOR_SUFFIXES)


def _also_word_vectors(model: str, exc: Exception) -> Exception:
    """``exc`` with a refusal of ``model`` by :func:`isotropy.models.resolve_model` (the sentence models alone) naming
    static word vectors too, with the closest name: ``--model glove-6b-50`` (the demo's own vectors, misspelt) got no
    word about word vectors and no "Did you mean 'glove-6b-50d'?". Any other error is returned as it is.

    Told by the accepted forms every such refusal ends with: the model is resolved once, where it is loaded (a cold
    GGUF conversion reads its weights once per command).
    """
    from isotropy._utils.suggest import did_you_mean
    from isotropy.io.word_vectors import PACKAGED_GLOVE
    from isotropy.models.resolve import _ACCEPTED

    if not isinstance(exc, (ValueError, FileNotFoundError)) or _ACCEPTED not in str(exc):
        return exc
    message, _, suggestion = str(exc).partition(" Did you mean")
    vectors = f"; or static word vectors ({PACKAGED_GLOVE}, a {'/'.join(_VECTOR_SUFFIXES)} file)"
    close = f" Did you mean{suggestion}" if suggestion else did_you_mean(str(model), [PACKAGED_GLOVE])
    return type(exc)(message.rstrip().rstrip(".") + vectors + "." + close)


def _vocabulary(config) -> tuple[list[str], np.ndarray | None]:
    """Ordered vocabulary (and vectors) of the static vectors, or of the packaged GloVe for sentence models."""
    from isotropy.io.word_vectors import PACKAGED_GLOVE, read_word_vectors

    model = config.model
    source = model if is_static_vectors(model) else PACKAGED_GLOVE
    words, X = read_word_vectors(source, limit=config.vocab_limit)
    return words, (X if source == model else None)


def _load_labelled(config, data_dir, glue_task: str | None) -> LabeledTexts:
    task = config.task
    path = config.data_path or data_dir
    if task == "polarity":
        from isotropy.datasets.polarity import load_polarity

        return load_polarity(data_dir=path)
    if task == "snli":
        from isotropy.datasets.snli import load_snli

        return load_snli(config.split or "dev", data_dir=path)
    if task == "glue":
        from isotropy.datasets.glue import load_glue_task

        return load_glue_task(glue_task, config.split or "train", data_dir=path)
    if task == "table":
        from isotropy.datasets.tables import load_table

        if not config.data_path:
            raise ValueError("The table setup needs a data file: pass --data-path FILE (CSV, TSV or JSON lines) and "
                             "set text_column / label_column in the config.")
        from isotropy.experiments._config import table_words

        try:
            return load_table(config.data_path, text_column=config.text_column, label_column=config.label_column,
                              text_pair_column=config.text_pair_column, multilabel=bool(config.multilabel),
                              label_sep=config.label_sep)
        except ValueError as exc:
            raise table_words(exc, experiment="classifier-geometry") from None
    if task == "lexicon":
        from isotropy.datasets.lexicon import load_nrc_emotion_lexicon

        return load_nrc_emotion_lexicon(config.data_path)
    raise ValueError(f"The 'task' config value of classifier-geometry must be one of {list(TASKS)}. Got {task!r} instead.")


def _first(data: LabeledTexts, n: int) -> LabeledTexts:
    labels = np.asarray(data.labels)
    if labels.ndim == 1 and labels.size and np.unique(labels[:n]).size < 2:
        # a file that lists its items class by class (polarity: every positive sentence first): refused before any
        # text is encoded; the silhouette and the classifier need two classes
        other = np.flatnonzero(labels != labels[0])
        fix = (f"give n_items of at least {other[0] + 1:,} (the first item of another class) or leave n_items out"
               if other.size else "this data set has one class")
        raise ValueError(f"The 'n_items' setting of classifier-geometry keeps the first {n:,} items of {data.name}, "
                         f"which all have one class ({_class_name(data, labels[0])}): {fix}.")
    return LabeledTexts(name=data.name, text_a=data.text_a[:n], text_b=None if data.text_b is None else data.text_b[:n],
                        labels=np.asarray(data.labels)[:n], label_names=data.label_names,
                        source={**data.source, "first_n_items": n})


def _class_name(data: LabeledTexts, label) -> str:
    names = data.label_names
    try:
        return repr(names[int(label)]) if names is not None else repr(label.item() if hasattr(label, "item") else label)
    except (IndexError, TypeError, ValueError):
        return repr(label)


def load_task_data(config, *, data_dir=None,
                   glue_task: str | None = None) -> tuple[LabeledTexts, tuple[list[str], np.ndarray] | None]:
    """Load the labelled items of ``config.task``, and the word vectors when ``config.model`` is static.

    ``config`` is a :class:`~isotropy.experiments.classifier_geometry.config.ClassifierGeometryConfig`;
    ``glue_task`` names the GLUE task of one problem of the ``task: glue`` grid. ``n_items`` selects the
    WordNet items (pos, supersense) and otherwise keeps the first ``n_items`` items.
    """
    task = config.task
    static = is_static_vectors(config.model)
    vectors = None
    if task in ("pos", "supersense"):
        from isotropy.datasets.wordnet import (
            wordnet_pos_items,
            wordnet_supersense_items,
        )

        words, X = _vocabulary(config)
        select = wordnet_pos_items if task == "pos" else wordnet_supersense_items
        data = select(words, n_items=int(config.n_items), data_dir=data_dir)
        return data, ((words, X) if static else None)
    data = _load_labelled(config, data_dir, glue_task)
    if config.n_items:
        data = _first(data, int(config.n_items))
    if static:
        vectors = _vocabulary(config)
    return data, vectors


def build_problem(config, *, glue_task: str | None = None, data_dir=None, device: str | None = None,
                  show_progress: bool = True) -> Problem:
    """Load the data of ``config`` and embed every distinct text (or look up every word) once (on ``device``).

    ``config`` is the typed config (``EXPERIMENT.config(...)``); ``glue_task`` names the GLUE task of one
    problem of the ``task: glue`` grid.
    """
    data, vectors = load_task_data(config, data_dir=data_dir, glue_task=glue_task)
    texts = data.text_a + (data.text_b or [])
    unique = list(dict.fromkeys(texts))
    row = {t: i for i, t in enumerate(unique)}
    keep = np.ones(len(data), dtype=bool)
    source = dict(data.source)
    if vectors is not None:
        words, X = vectors
        position = {}
        for i, w in enumerate(words):
            position.setdefault(w, i)
        found = [t for t in unique if t in position]
        missing = {t for t in unique if t not in position}
        keep = np.array([a not in missing and (data.text_b is None or b not in missing)
                         for a, b in zip(data.text_a, data.text_b or data.text_a)], dtype=bool)
        unique = found
        row = {t: i for i, t in enumerate(unique)}
        embeddings = np.ascontiguousarray(X[[position[t] for t in unique]], dtype=np.float32)
        source["items_without_vector"] = int((~keep).sum())
        source["encoder"] = {"kind": "static word vectors", "model": config.model}
    else:
        from isotropy.models.encoders import encode_sentences

        try:
            embeddings = encode_sentences(unique, model=config.model, device=device, show_progress=show_progress)
        except (ValueError, FileNotFoundError) as exc:
            named = _also_word_vectors(config.model, exc)
            if named is exc:
                raise
            raise named from None
        source["encoder"] = {"kind": "sentence-transformers", "model": config.model}
    index = np.array([[row[a]] + ([row[b]] if data.text_b is not None else [])
                      for a, b, k in zip(data.text_a, data.text_b or data.text_a, keep) if k], dtype=np.int64)
    labels = np.asarray(data.labels)[keep]
    if labels.ndim == 2:
        labels = labels.astype(np.int8)
    if labels.shape[0] < 3:
        raise ValueError(f"{data.name}: only {labels.shape[0]} items have embeddings; need at least 3.")
    source.update(n_items=int(index.shape[0]), n_rows=int(embeddings.shape[0]), dim=int(embeddings.shape[1]))
    return Problem(name=data.name, embeddings=embeddings, index=index.reshape(len(labels), -1), labels=labels,
                   label_names=list(data.label_names), source=source)
