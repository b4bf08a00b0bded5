"""Semantic textual similarity benchmarks: STS 2012-2016, STS Benchmark and SICK, scored as SentEval does.

The files are read in the layouts their users have on disk:

- STS 2012-2016: SentEval's layout ``<data_dir>/senteval/STS/STS1{2..6}-en-test/`` with one
  ``STS.input.<subset>.txt`` (two tab-separated sentences a line) and ``STS.gs.<subset>.txt`` (the gold
  score, or an empty line for an unscored pair, dropped as SentEval drops it) per sub-file. The
  sub-files are SentEval's: STS13 without the licence-restricted SMT file.
- STS Benchmark: ``<data_dir>/senteval/STS/STSBenchmark/sts-{train,dev,test}.csv`` (tab-separated;
  column 5 the score, columns 6 and 7 the sentences).
- SICK: ``<data_dir>/SICK/SICK.txt`` (the full release, 12 tab-separated columns; ``SemEval_set``
  gives TRAIN / TRIAL / TEST, ``relatedness_score`` the gold score in [1, 5]).

Sentences are whitespace-normalised (split and re-joined), which is what SentEval's tokenisation
``s.split()`` followed by a sentence encoder's ``" ".join`` gives.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from isotropy._utils.validation import IsotropyValueError, check_option

__all__ = [
    "STS_DATASETS",
    "STS_SUBSETS",
    "STSPairs",
    "load_sts",
    "sts_correlations",
]

# SentEval's sub-files of each STS year (folder, sub-file names in SentEval's order)
STS_SUBSETS = {
    "STS12": ("STS12-en-test", ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews")),
    "STS13": ("STS13-en-test", ("FNWN", "headlines", "OnWN")),
    "STS14": ("STS14-en-test", ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news")),
    "STS15": ("STS15-en-test", ("answers-forums", "answers-students", "belief", "headlines", "images")),
    "STS16": ("STS16-en-test", ("answer-answer", "headlines", "plagiarism", "postediting", "question-question")),
}
STS_DATASETS = (*STS_SUBSETS, "STSB", "SICK")
_STSB_SPLITS = {"train": "sts-train.csv", "dev": "sts-dev.csv", "test": "sts-test.csv"}
_SICK_SPLITS = {"train": "TRAIN", "dev": "TRIAL", "test": "TEST"}


@dataclass
class STSPairs:
    """Sentence pairs with gold similarity scores.

    Attributes
    ----------
    name : str
        E.g. ``"STS12"``, ``"STSB/test"``, ``"SICK/test"``.
    text_a, text_b : list of str
        The two sentences of each pair.
    scores : ndarray of shape (n_pairs,), float64
        Gold similarity (0-5 for STS, 1-5 for SICK relatedness).
    subsets : ndarray of shape (n_pairs,), str
        The sub-file of each pair (STS12-16); the data set name for STS-B and SICK.
    source : dict
        Paths and selection rules, written beside results.
    """

    name: str
    text_a: list[str]
    text_b: list[str]
    scores: np.ndarray
    subsets: np.ndarray
    source: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.text_a)

    @property
    def subset_names(self) -> list[str]:
        """Distinct sub-files, in file order."""
        return list(dict.fromkeys(self.subsets.tolist()))

    def sentences(self) -> list[str]:
        """All sentences, first ``text_a`` then ``text_b`` (the order embeddings are computed in)."""
        return [*self.text_a, *self.text_b]


def _norm(text: str) -> str:
    return " ".join(text.split())


def _root(data_dir) -> Path:
    from isotropy.datasets._paths import data_dir as _data_dir

    return _data_dir(data_dir)


# Where the files are published: the STS files in SentEval's layout (its download script fetches them
# all), SICK as its full release.
SENTEVAL_URL = "https://github.com/facebookresearch/SentEval (data/downstream/get_transfer_data.bash)"
SICK_URL = "https://marcobaroni.org/composes/sick.html (Marelli et al. 2014, the full release SICK.txt)"


def _missing(path: Path, what: str) -> FileNotFoundError:
    layout, where = ("the full SICK release", SICK_URL) if what == "SICK" else ("SentEval's layout", SENTEVAL_URL)
    return FileNotFoundError(f"The {what} file {str(path)!r} does not exist: expected {layout} under the data "
                             f"directory (pass data_dir / --data-dir, or set $ISOTROPY_DATA). It is published at "
                             f"{where}.")


def _lines(path: Path, what: str) -> list[str]:
    """The lines of ``path``; a file that is not UTF-8 is refused in one line naming its line and byte (it was a
    ``UnicodeDecodeError`` traceback naming no file)."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        from isotropy.io._encoding import undecodable

        raise IsotropyValueError(f"{what}: {path} is not UTF-8 text ({undecodable(raw, 'utf-8')}); expected the file "
                                 f"as published.") from None


def _score(text: str, what: str, path: Path, line_no: int, expected: str) -> float:
    """A gold score; one that is not a number is refused naming its file and line (it was ``could not convert string
    to float: 'x'``, naming neither)."""
    try:
        return float(text)
    except ValueError:
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise IsotropyValueError(f"{what}: line {line_no} of {path} has the score {shown!r}; expected {expected}.") \
            from None


def _load_sts_year(name: str, root: Path) -> STSPairs:
    folder, subsets = STS_SUBSETS[name]
    a, b, gold, sub = [], [], [], []
    for subset in subsets:
        inputs = root / "senteval" / "STS" / folder / f"STS.input.{subset}.txt"
        golds = inputs.with_name(f"STS.gs.{subset}.txt")
        for path in (inputs, golds):
            if not path.is_file():
                raise _missing(path, name)
        pairs = _lines(inputs, name)
        scores = _lines(golds, name)
        if len(pairs) != len(scores):
            raise IsotropyValueError(f"{name}: {inputs.name} has {len(pairs)} lines but {golds.name} has "
                                     f"{len(scores)}; expected one gold line per sentence pair.")
        for line_no, (pair, score) in enumerate(zip(pairs, scores), start=1):
            if not score.strip():  # unscored pair (STS15/16): SentEval drops it
                continue
            fields = pair.split("\t")
            if len(fields) < 2:
                raise IsotropyValueError(f"{name}: line {line_no} of {inputs.name} has {len(fields)} tab-separated "
                                         f"field(s); expected two sentences.")
            a.append(_norm(fields[0]))
            b.append(_norm(fields[1]))
            gold.append(_score(score, name, golds, line_no, "a number (or an empty line for an unscored pair)"))
            sub.append(subset)
    return STSPairs(name=name, text_a=a, text_b=b, scores=np.asarray(gold), subsets=np.asarray(sub),
                    source={"dataset": name, "path": str(root / "senteval" / "STS" / folder),
                            "subsets": list(subsets), "rule": "pairs with an empty gold score dropped"})


def _load_stsb(split: str, root: Path) -> STSPairs:
    path = root / "senteval" / "STS" / "STSBenchmark" / _STSB_SPLITS[split]
    if not path.is_file():
        raise _missing(path, "STS Benchmark")
    a, b, gold = [], [], []
    for line_no, line in enumerate(_lines(path, "STSB"), start=1):
        fields = line.split("\t")
        if len(fields) < 7:
            raise IsotropyValueError(f"STSB: line {line_no} of {path.name} has {len(fields)} tab-separated fields; "
                                     f"expected at least 7 (score in column 5, sentences in 6 and 7).")
        gold.append(_score(fields[4], "STSB", path, line_no, "a number in column 5"))
        a.append(_norm(fields[5]))
        b.append(_norm(fields[6]))
    name = f"STSB/{split}"
    return STSPairs(name=name, text_a=a, text_b=b, scores=np.asarray(gold), subsets=np.full(len(a), "STSB"),
                    source={"dataset": "STSB", "split": split, "path": str(path)})


def _load_sick(split: str, root: Path) -> STSPairs:
    path = root / "SICK" / "SICK.txt"
    if not path.is_file():
        raise _missing(path, "SICK")
    lines = _lines(path, "SICK")
    if not lines:
        raise IsotropyValueError(f"SICK: {path} is empty; expected the full release's columns sentence_A, sentence_B, "
                                 f"relatedness_score, SemEval_set.")
    header = lines[0].strip().split("\t")
    try:
        ia, ib, isc, iset = (header.index(c) for c in ("sentence_A", "sentence_B", "relatedness_score", "SemEval_set"))
    except ValueError:
        raise IsotropyValueError(f"SICK: {path} has header {header[:6]}...; expected the full release's columns "
                                 f"sentence_A, sentence_B, relatedness_score, SemEval_set.") from None
    a, b, gold = [], [], []
    for line_no, line in enumerate(lines[1:], start=2):
        fields = line.rstrip("\r\n").split("\t")
        if len(fields) <= iset or fields[iset].strip() != _SICK_SPLITS[split]:
            continue
        if len(fields) <= max(ia, ib, isc):  # was an IndexError traceback
            raise IsotropyValueError(f"SICK: line {line_no} of {path} has {len(fields)} tab-separated fields; expected "
                                     f"{len(header)}, as its header names.")
        a.append(_norm(fields[ia]))
        b.append(_norm(fields[ib]))
        gold.append(_score(fields[isc], "SICK", path, line_no, "a number in the column relatedness_score"))
    name = f"SICK/{split}"
    return STSPairs(name=name, text_a=a, text_b=b, scores=np.asarray(gold), subsets=np.full(len(a), "SICK"),
                    source={"dataset": "SICK", "split": split, "path": str(path),
                            "rule": f"SemEval_set == {_SICK_SPLITS[split]}"})


def load_sts(name: str, *, split: str = "test", data_dir: str | os.PathLike | None = None) -> STSPairs:
    """Load an STS data set.

    Parameters
    ----------
    name : {"STS12", "STS13", "STS14", "STS15", "STS16", "STSB", "SICK"}
    split : {"test", "train", "dev"}, default="test"
        STS-B and SICK only (SICK's "dev" is its TRIAL set); STS12-16 have only their test files.
    data_dir : path-like or None
        Folder holding ``senteval/STS/`` and ``SICK/``; default ``$ISOTROPY_DATA`` or ``./data``.

    Returns
    -------
    STSPairs
        Pairs with gold scores. Sizes of the files here: STS12 3,108; STS13 1,500; STS14 3,750;
        STS15 3,000; STS16 1,186 (SentEval's counts); STS-B train/dev/test 5,749/1,500/1,379;
        SICK train/trial/test 4,439/495/4,906.
    """
    check_option(name, "name", STS_DATASETS, caller="load_sts")
    check_option(split, "split", ("test", "train", "dev"), caller="load_sts")
    root = _root(data_dir)
    if name in STS_SUBSETS:
        if split != "test":
            raise IsotropyValueError(f"The 'split' parameter of load_sts must be 'test' for {name} (SentEval ships "
                                     f"only its test files). Got {split!r} instead.")
        return _load_sts_year(name, root)
    return _load_stsb(split, root) if name == "STSB" else _load_sick(split, root)


def _pearson(x, y) -> float:
    from scipy.stats import pearsonr

    return float(pearsonr(x, y)[0])


def _spearman(x, y) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(x, y)[0])


def sts_correlations(predicted, gold, subsets=None) -> dict:
    """Pearson and Spearman correlations between predicted similarities and gold scores, as SentEval.

    Parameters
    ----------
    predicted : array-like of shape (n_pairs,)
        System similarities (e.g. cosine of the two sentence embeddings).
    gold : array-like of shape (n_pairs,)
    subsets : array-like of shape (n_pairs,) or None
        Sub-file of each pair; ``None`` is one sub-file.

    Returns
    -------
    dict
        ``{"subsets": {name: {"pearson", "spearman", "n"}}, "all": {"pearson", "spearman"},
        "mean": {...}, "wmean": {...}, "n": n_pairs}``: per sub-file, pooled over all pairs
        ("all"), and the plain and size-weighted means of the per-sub-file values (SentEval's STS12-16
        report all three; with one sub-file they coincide).

    Examples
    --------
    >>> r = sts_correlations([0.1, 0.5, 0.9, 0.3], [1.0, 2.0, 5.0, 1.5])
    >>> round(r["all"]["spearman"], 6)
    1.0
    """
    predicted = np.asarray(predicted, dtype=np.float64).reshape(-1)
    gold = np.asarray(gold, dtype=np.float64).reshape(-1)
    if predicted.shape != gold.shape or predicted.size < 2:
        raise IsotropyValueError(f"The 'predicted' parameter of sts_correlations must have one value per gold score "
                                 f"(at least 2). Got {predicted.size} and {gold.size} instead.")
    for name, values in (("predicted", predicted), ("gold", gold)):  # a NaN gave NaN correlations without a word
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise IsotropyValueError(f"The '{name}' parameter of sts_correlations must hold finite numbers. Got "
                                     f"{values[bad[0]]} at index {int(bad[0])} ({bad.size} non-finite in all) instead; "
                                     f"leave undefined pairs out of both, as the sts-isotropy experiment does.")
    subsets = np.full(gold.size, "all") if subsets is None else np.asarray(subsets)
    per = {}
    for name in dict.fromkeys(subsets.tolist()):
        rows = subsets == name
        per[name] = {"pearson": _pearson(predicted[rows], gold[rows]),
                     "spearman": _spearman(predicted[rows], gold[rows]), "n": int(rows.sum())}
    weights = np.array([v["n"] for v in per.values()], dtype=float)
    out = {"subsets": per, "n": int(gold.size),
           "all": {"pearson": _pearson(predicted, gold), "spearman": _spearman(predicted, gold)}}
    for key, w in (("mean", None), ("wmean", weights)):
        out[key] = {m: float(np.average([v[m] for v in per.values()], weights=w)) for m in ("pearson", "spearman")}
    return out
