"""Whitespace-tokenised text corpora: WikiText-2, the Penn Treebank (Mikolov's LM version), any text file.

Every loader returns a :class:`Corpus`: one list of words per non-blank line, in file order. The
corpora are read in the layouts their users already have on disk:

- WikiText-2 (word level, tokenised): ``<data_dir>/wikitext-2/wiki.{train,valid,test}.tokens``, one
  paragraph a line, section headings written as ``= Title =`` / ``= = Section = =``.
- PTB: ``<data_dir>/ptb/ptb.{train,valid,test}.txt``, one sentence a line, lower case, numbers as ``N``.
- Any plain-text file: each non-blank line split on whitespace.

Words are kept exactly as written (``<unk>`` included); what to skip is the caller's choice.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from isotropy._utils.validation import IsotropyValueError

__all__ = [
    "CORPORA",
    "SPLITS",
    "Corpus",
    "corpus_path",
    "load_corpus",
    "load_ptb",
    "load_text_file",
    "load_wikitext2",
]

# corpus name -> (folder, file name pattern with {split})
CORPORA = {
    "wikitext-2": ("wikitext-2", "wiki.{split}.tokens"),
    "ptb": ("ptb", "ptb.{split}.txt"),
}
# Where each corpus is published, in the layout above (named in the message for a missing file).
PUBLISHED = {
    "wikitext-2": "https://huggingface.co/datasets/Salesforce/wikitext (wikitext-2-v1: Merity et al. 2016, "
                  "the tokenised files wiki.{train,valid,test}.tokens)",
    "ptb": "https://www.fit.vut.cz/person/imikolov/public/rnnlm/simple-examples.tgz (Mikolov's data/ptb.*.txt)",
}
# user-facing split name -> the name in the file names
SPLITS = {"train": "train", "validation": "valid", "valid": "valid", "test": "test"}


@dataclass
class Corpus:
    """A whitespace-tokenised corpus.

    Attributes
    ----------
    name : str
        E.g. ``"wikitext-2/validation"`` or the file name.
    lines : list of list of str
        The words of each non-blank line, in file order.
    source : dict
        Where the text came from (path, split, filtering), written beside results.
    """

    name: str
    lines: list[list[str]]
    source: dict = field(default_factory=dict)

    @property
    def n_words(self) -> int:
        """Number of word tokens (whitespace-separated) in the corpus."""
        return sum(len(line) for line in self.lines)

    def word_counts(self) -> Counter:
        """Corpus frequency of every word type."""
        counts: Counter = Counter()
        for line in self.lines:
            counts.update(line)
        return counts

    def __len__(self) -> int:
        return len(self.lines)


def _is_heading(words: list[str]) -> bool:
    return len(words) >= 2 and words[0] == "=" and words[-1] == "="


_IN_ITS_ENCODING = "a plain-text file in its encoding (encoding='latin-1', 'cp1252', ...)"


def _read_lines(path: Path, *, encoding: str, drop_headings: bool = False,
                expected: str = _IN_ITS_ENCODING) -> list[list[str]]:
    """The words of each non-blank line; a file that is not text in ``encoding`` is refused in one line naming the
    line and byte (it was a ``UnicodeDecodeError`` traceback), ``expected`` saying what was expected instead."""
    lines = []
    try:
        with open(path, encoding=encoding) as handle:
            for raw in handle:
                words = raw.split()
                if not words or (drop_headings and _is_heading(words)):
                    continue
                lines.append(words)
    except UnicodeDecodeError as exc:
        from isotropy.io._encoding import undecodable

        where = undecodable(path.read_bytes(), encoding) or f"byte 0x{exc.object[exc.start]:02x}"  # (read again, once)
        raise IsotropyValueError(f"The corpus file {str(path)!r} is not {encoding} text ({where}); "
                                 f"expected {expected}.") from None
    return lines


def _check_nonempty(lines, what: str) -> None:
    if not lines:
        raise IsotropyValueError(f"The corpus {what} is empty: expected at least one non-blank line of text.")


def corpus_path(corpus: str, split: str = "validation", *, data_dir: str | os.PathLike | None = None) -> Path:
    """Expected path of a split of a named corpus (``"wikitext-2"`` or ``"ptb"``).

    ``data_dir`` defaults to ``$ISOTROPY_DATA`` or ``./data``; the file is
    ``<data_dir>/wikitext-2/wiki.valid.tokens`` for WikiText-2 validation, and so on.
    """
    from isotropy.datasets._paths import data_dir as _data_dir

    if corpus not in CORPORA:
        raise IsotropyValueError(f"The 'corpus' parameter of corpus_path must be one of {sorted(CORPORA)}. "
                                 f"Got {corpus!r} instead.")
    if split not in SPLITS:
        raise IsotropyValueError(f"The 'split' parameter of corpus_path must be one of {sorted(SPLITS)}. "
                                 f"Got {split!r} instead.")
    folder, pattern = CORPORA[corpus]
    return _data_dir(data_dir) / folder / pattern.format(split=SPLITS[split])


def _load_named(corpus: str, split: str, data_dir, *, drop_headings: bool) -> Corpus:
    path = corpus_path(corpus, split, data_dir=data_dir)
    if not path.is_file():
        raise FileNotFoundError(f"The {corpus} {split} split was not found: expected the file {str(path)!r} "
                                f"(give the folder that holds '{CORPORA[corpus][0]}/' with --data-dir or "
                                f"$ISOTROPY_DATA). It is published at {PUBLISHED[corpus]}.")
    lines = _read_lines(path, encoding="utf-8", drop_headings=drop_headings,
                        expected=f"UTF-8 text, as {corpus} is published at {PUBLISHED[corpus]}")
    _check_nonempty(lines, repr(str(path)))
    return Corpus(name=f"{corpus}/{split}", lines=lines,
                  source={"corpus": corpus, "split": split, "path": str(path), "drop_headings": drop_headings})


def load_wikitext2(split: str = "validation", *, data_dir: str | os.PathLike | None = None,
                   drop_headings: bool = True) -> Corpus:
    """Load a split of WikiText-2 (word level).

    Parameters
    ----------
    split : {"validation", "test", "train"}, default="validation"
    data_dir : path-like or None
        Folder holding ``wikitext-2/``; default ``$ISOTROPY_DATA`` or ``./data``.
    drop_headings : bool, default=True
        Drop the section-heading lines (``= Title =``), whose ``=`` markers are not text.

    Returns
    -------
    Corpus
        One entry per non-blank line (paragraph); the validation split has 213,886 words
        (209,338 without the headings).
    """
    return _load_named("wikitext-2", split, data_dir, drop_headings=drop_headings)


def load_ptb(split: str = "validation", *, data_dir: str | os.PathLike | None = None) -> Corpus:
    """Load a split of the Penn Treebank in Mikolov's language-modelling version.

    Parameters
    ----------
    split : {"validation", "test", "train"}, default="validation"
    data_dir : path-like or None
        Folder holding ``ptb/``; default ``$ISOTROPY_DATA`` or ``./data``.

    Returns
    -------
    Corpus
        One entry per sentence; the validation split has 3,370 sentences and 70,390 words.
    """
    return _load_named("ptb", split, data_dir, drop_headings=False)


def load_text_file(path: str | os.PathLike, *, encoding: str = "utf-8") -> Corpus:
    """Load any plain-text file: each non-blank line split on whitespace.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.txt"
    >>> _ = p.write_text("a b c\\n\\n b c\\n")
    >>> load_text_file(p).lines
    [['a', 'b', 'c'], ['b', 'c']]
    """
    from isotropy.io._encoding import text_codec
    from isotropy.io._paths import path_kind

    text_codec(encoding, caller="load_text_file")  # an unknown codec: one line, not a LookupError
    path = Path(path)
    kind = path_kind(path)  # a device or a FIFO is not "does not exist" (nor read: /dev/zero never ends)
    if kind is not None:
        error = FileNotFoundError if kind == "does not exist" else IsotropyValueError
        raise error(f"The corpus file {str(path)!r} {kind}: expected a plain-text file, one sentence or paragraph a "
                    f"line, or one of {sorted(CORPORA)}.")
    lines = _read_lines(path, encoding=encoding)
    _check_nonempty(lines, f"file {str(path)!r}")
    return Corpus(name=path.name, lines=lines, source={"path": str(path.resolve()), "encoding": encoding})


def load_corpus(corpus: str | os.PathLike, *, split: str = "validation",
                data_dir: str | os.PathLike | None = None) -> Corpus:
    """Load ``"wikitext-2"``, ``"ptb"`` (the given split, under ``data_dir``) or a text file path."""
    if str(corpus) == "wikitext-2":
        return load_wikitext2(split, data_dir=data_dir)
    if str(corpus) == "ptb":
        return load_ptb(split, data_dir=data_dir)
    return load_text_file(corpus)
