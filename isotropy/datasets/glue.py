"""GLUE tasks in the layout of ``download_glue_data.py``: ``glue_data/<TASK>/<split>.tsv``.

Columns are read by their header names (CoLA, which ships without a header, by position), so the
variants different converters write (e.g. RTE as ``sentence1 sentence2 label idx`` with 0/1 labels, or
as ``index sentence1 sentence2 label`` with label names) load the same way. Labels given as names
are mapped onto the ids of ``label_names``; labels given as integers are taken as those ids.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from isotropy._utils.errors import IsotropyValueError
from isotropy.datasets._paths import data_dir as resolve_data_dir
from isotropy.datasets._types import LabeledTexts

__all__ = ["GLUE_TASKS", "find_glue_root", "glue_task_path", "load_glue_task"]

GLUE_URL = "https://gluebenchmark.com/tasks (download script: download_glue_data.py)"


@dataclass(frozen=True)
class _Task:
    folder: str
    text_a: str | int
    text_b: str | int | None
    label: str | int
    label_names: tuple[str, ...]
    header: bool = True


# label ids follow the GLUE benchmark's (and the Hugging Face `glue` data set's) order
GLUE_TASKS: dict[str, _Task] = {
    "cola": _Task("CoLA", 3, None, 1, ("unacceptable", "acceptable"), header=False),
    "sst2": _Task("SST-2", "sentence", None, "label", ("negative", "positive")),
    "mrpc": _Task("MRPC", "#1 String", "#2 String", "Quality", ("not_equivalent", "equivalent")),
    "qqp": _Task("QQP", "question1", "question2", "is_duplicate", ("not_duplicate", "duplicate")),
    "mnli": _Task("MNLI", "sentence1", "sentence2", "gold_label", ("entailment", "neutral", "contradiction")),
    "qnli": _Task("QNLI", "question", "sentence", "label", ("entailment", "not_entailment")),
    "rte": _Task("RTE", "sentence1", "sentence2", "label", ("entailment", "not_entailment")),
    "wnli": _Task("WNLI", "sentence1", "sentence2", "label", ("not_entailment", "entailment")),
}

_ALIASES = {"sst-2": "sst2", "sst": "sst2", "mnli-m": "mnli"}
_SPLIT_ALIASES = {("mnli", "dev"): "dev_matched", ("mnli", "validation"): "dev_matched"}


def _check_task(task) -> str:
    key = _ALIASES.get(str(task).lower(), str(task).lower()) if isinstance(task, str) else task
    if key not in GLUE_TASKS:
        raise IsotropyValueError(f"The 'task' parameter of load_glue_task must be one of {sorted(GLUE_TASKS)}. "
                         f"Got {task!r} instead.")
    return key


def find_glue_root(data_dir=None) -> Path:
    """The ``glue_data`` directory: ``data_dir`` itself or ``data_dir/glue_data``.

    ``data_dir`` defaults to ``$ISOTROPY_DATA``, else ``./data``.
    """
    base = resolve_data_dir(data_dir)
    if (base / "glue_data").is_dir():
        return base / "glue_data"
    if base.name == "glue_data" or any((base / t.folder).is_dir() for t in GLUE_TASKS.values()):
        return base
    return base / "glue_data"


def glue_task_path(task: str, split: str = "train", *, data_dir=None) -> Path:
    """Path of ``<glue_data>/<TASK>/<split>.tsv`` (whether or not it exists)."""
    key = _check_task(task)
    split = _SPLIT_ALIASES.get((key, split), split)
    return find_glue_root(data_dir) / GLUE_TASKS[key].folder / f"{split}.tsv"


def _label_id(value: str, names: tuple[str, ...], where: str) -> int:
    value = value.strip()
    if value in names:
        return names.index(value)
    try:
        number = int(float(value))
    except ValueError:
        number = -1
    if 0 <= number < len(names) and float(value) == number:
        return number
    raise IsotropyValueError(f"{where}: label {value!r} is neither one of {list(names)} nor an id in range({len(names)}).")


def _unreadable(path, exc: Exception) -> str:
    """Why a GLUE file cannot be read: the line and byte of the first that is not UTF-8 (read again, once refused),
    or csv's own words."""
    if isinstance(exc, UnicodeDecodeError):
        from isotropy.io._encoding import undecodable

        return undecodable(Path(path).read_bytes(), "utf-8") or f"byte 0x{exc.object[exc.start]:02x}"
    return " ".join(str(exc).split())[:120]


def load_glue_task(task: str, split: str = "train", *, data_dir=None) -> LabeledTexts:
    """Load one labelled split of a GLUE task from the ``download_glue_data.py`` layout.

    Parameters
    ----------
    task : {"cola", "sst2", "mrpc", "qqp", "mnli", "qnli", "rte", "wnli"}
        GLUE task with class labels (STS-B, a regression task, is not supported).
    split : str, default="train"
        File stem under the task folder: ``"train"``, ``"dev"`` (for MNLI ``"dev_matched"`` or
        ``"dev_mismatched"``; ``"dev"`` means matched), CoLA's ``"dev_out_of_domain"``. Test
        files carry no labels and are rejected.
    data_dir : path-like, optional
        The folder containing ``glue_data`` or ``glue_data`` itself. Defaults to ``$ISOTROPY_DATA``,
        else ``./data``.

    Returns
    -------
    LabeledTexts
        ``text_b`` is set for pair tasks; ``labels`` are ``(n_items,)`` ids into ``label_names``.
        Leading and trailing whitespace of each text is stripped.

    Raises
    ------
    FileNotFoundError
        If the file is missing; the message names the expected path and where GLUE is published.

    References
    ----------
    Wang et al. (2019). GLUE: A Multi-Task Benchmark and Analysis Platform for Natural Language
    Understanding. ICLR.

    Examples
    --------
    >>> from isotropy.datasets.glue import glue_task_path
    >>> glue_task_path("sst2", data_dir="/data").as_posix()
    '/data/glue_data/SST-2/train.tsv'
    """
    key = _check_task(task)
    spec = GLUE_TASKS[key]
    path = glue_task_path(key, split, data_dir=data_dir)
    if not path.is_file():
        raise FileNotFoundError(
            f"GLUE task {key!r} split {split!r}: expected the file {path} (the layout of download_glue_data.py: "
            f"<data_dir>/glue_data/{spec.folder}/{path.name}); pass --data-dir (data_dir= in Python) or set ISOTROPY_DATA "
            f"to the folder containing glue_data. GLUE is published at {GLUE_URL}.")
    try:  # not UTF-8, a field past csv's limit: one line naming the file (were tracebacks naming none)
        with open(path, encoding="utf-8-sig", newline="") as handle:
            rows = list(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    except (UnicodeDecodeError, csv.Error) as exc:
        raise IsotropyValueError(f"GLUE task {key!r}: {path} is not a readable UTF-8 TSV file ({_unreadable(path, exc)}); "
                                 f"expected the file as download_glue_data.py writes it.") from None
    # each with its line of the file (QUOTE_NONE: a row is one line), so that a message names it past blank lines
    rows = [(number, r) for number, r in enumerate(rows, start=1) if r and any(cell.strip() for cell in r)]
    if spec.header:
        header = [h.strip() for h in rows[0][1]] if rows else []
        rows = rows[1:]
        columns = {}
        for name in (spec.text_a, spec.text_b, spec.label):
            if name is None:
                continue
            if name not in header:
                what = "a label column (test files are unlabelled)" if name == spec.label else f"the column {name!r}"
                raise IsotropyValueError(f"GLUE task {key!r}: {path} lacks {what}; its header is {header}.")
            columns[name] = header.index(name)
        width = len(header)
    else:
        columns = {spec.text_a: spec.text_a, spec.label: spec.label}
        width = 4
    text_a, text_b, labels, skipped = [], [] if spec.text_b is not None else None, [], 0
    for line, row in rows:
        if len(row) < width:  # a handful of malformed lines exist in some GLUE releases (QQP)
            skipped += 1
            continue
        labels.append(_label_id(row[columns[spec.label]], spec.label_names, f"{path}:{line}"))
        text_a.append(row[columns[spec.text_a]].strip())
        if text_b is not None:
            text_b.append(row[columns[spec.text_b]].strip())
    return LabeledTexts(
        name=f"{key}/{path.stem}", text_a=text_a, text_b=text_b, labels=np.asarray(labels, dtype=np.int64),
        label_names=list(spec.label_names),
        source={"path": str(path), "task": key, "split": path.stem, "skipped_malformed_rows": skipped,
                "published": GLUE_URL})
