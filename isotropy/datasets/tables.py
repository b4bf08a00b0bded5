"""A user's own labelled texts: CSV, TSV or JSON-lines files with named text and label columns."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from isotropy._utils import jsontext
from isotropy._utils.errors import IsotropyValueError
from isotropy.datasets._types import LabeledTexts, check_indicator_size

__all__ = ["load_table"]

_FORMATS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl"}


def _read_rows(path: Path, fmt: str) -> list[dict]:
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            if fmt == "jsonl":
                rows = []
                for line_no, line in enumerate(handle, start=1):
                    if line.strip():
                        try:
                            row = jsontext.loads(line)
                        except json.JSONDecodeError as exc:
                            raise IsotropyValueError(f"{path}:{line_no}: not a JSON object ({exc.msg}); expected one JSON "
                                             f"object a line.") from None
                        if not isinstance(row, dict):
                            raise IsotropyValueError(f"{path}:{line_no}: a JSON {type(row).__name__}, not an object; expected "
                                             f"one JSON object a line.")
                        rows.append(row)
                return rows
            if fmt == "tsv":  # tab-separated files rarely quote; quotes are kept as text
                return list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
            return list(csv.DictReader(handle))
    except (csv.Error, UnicodeDecodeError) as exc:  # a field past csv's limit, a NUL byte, bytes that are not UTF-8
        raise IsotropyValueError(f"{path}: not a readable {fmt.upper()} file ({' '.join(str(exc).split())[:120]}); expected "
                         f"UTF-8 text with a header row.") from None


def load_table(path, *, text_column: str = "text", label_column: str | list[str] = "label",
               text_pair_column: str | None = None, multilabel: bool = False, label_sep: str = ",",
               format: str | None = None, name: str | None = None) -> LabeledTexts:
    """Load labelled texts from a CSV, TSV or JSON-lines file with named columns.

    Parameters
    ----------
    path : path-like
        The file. Its format comes from the extension (``.csv``, ``.tsv``, ``.jsonl``/``.json``)
        unless ``format`` is given.
    text_column : str, default="text"
        Column with the (first) text of each item.
    label_column : str or list of str, default="label"
        Single-label: one column with a class name or id per row. Multi-label: either one column
        with ``multilabel=True`` holding a JSON list or a ``label_sep``-separated string of label
        names, or a list of 0/1 indicator columns (one per label).
    text_pair_column : str, optional
        Column with the second text of pair items (e.g. a hypothesis).
    multilabel : bool, default=False
        Whether the single ``label_column`` holds several labels per row.
    label_sep : str, default=","
        Separator of label names inside one cell for ``multilabel=True`` text cells.
    format : {"csv", "tsv", "jsonl"}, optional
    name : str, optional
        Data set name (defaults to the file stem).

    Returns
    -------
    LabeledTexts
        Single-label: ids into ``label_names`` (the sorted distinct labels). Multi-label: a
        ``(n_items, n_labels)`` 0/1 int8 matrix whose columns are ``label_names``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "toy.csv"
    >>> _ = path.write_text('text,tags\\n"good, fine",pos\\nawful,"neg,bad"\\n')
    >>> data = load_table(path, label_column="tags", multilabel=True)
    >>> data.text_a, data.label_names, data.labels.tolist()
    (['good, fine', 'awful'], ['bad', 'neg', 'pos'], [[0, 0, 1], [1, 1, 0]])
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"The data file {str(path)!r} does not exist; expected a CSV, TSV or JSON-lines file "
                                f"with a text column and a label column.")
    fmt = format or _FORMATS.get(path.suffix.lower())
    if fmt not in ("csv", "tsv", "jsonl"):
        raise IsotropyValueError(f"The 'format' parameter of load_table must be one of {{'csv', 'tsv', 'jsonl'}} (or a file "
                         f"ending in .csv, .tsv or .jsonl). Got {format or path.suffix!r} instead.")
    rows = _read_rows(path, fmt)
    if not rows:
        raise IsotropyValueError(f"{path}: no data rows.")
    label_columns = [label_column] if isinstance(label_column, str) else list(label_column)
    asked = [("text_column", text_column), *([("text_pair_column", text_pair_column)] if text_pair_column else []),
             *(("label_column", column) for column in label_columns)]
    needed = [column for _, column in asked]
    present = [key for key in rows[0] if key is not None]  # (None: csv.DictReader's key of fields past the header)
    for parameter, column in asked:  # the error names the parameter that asked for the column
        if column not in present:
            from isotropy._utils.suggest import did_you_mean

            raise IsotropyValueError(f"The '{parameter}' parameter of load_table must name a column of {str(path)!r}, "
                                     f"one of {present}. Got {column!r} instead."
                                     f"{did_you_mean(str(column), map(str, present))}")
    for line, row in enumerate(rows, start=2):  # a JSON-lines row without a key; a CSV row cut short (None)
        # csv.DictReader's key of the fields past the header's, dropped silently; empty ones are a trailing delimiter
        if fmt != "jsonl" and None in row and any(str(extra).strip() for extra in row[None]):
            header = sum(key is not None for key in row)
            quote = "quote a text that holds the delimiter" if fmt == "csv" else "a text cannot hold a tab"
            raise IsotropyValueError(f"{path}: data row {line - 1} has {header + len(row[None])} fields where the header "
                                     f"names {header}; expected as many fields on every row ({quote}).")
        missing = [c for c in needed if row.get(c) is None]
        if missing:
            raise IsotropyValueError(f"{path}: data row {line - 1} has no value in the column(s) {missing}; expected every row "
                             f"to fill {needed}.")
    text_a = [str(r[text_column]).strip() for r in rows]
    text_b = [str(r[text_pair_column]).strip() for r in rows] if text_pair_column else None
    if len(label_columns) > 1:
        try:
            labels = np.asarray([[int(float(r[c])) for c in label_columns] for r in rows])
        except (TypeError, ValueError, OverflowError):  # OverflowError: "inf"
            raise IsotropyValueError(f"{path}: indicator columns {label_columns} must hold 0 or 1.") from None
        if not np.isin(labels, (0, 1)).all():
            raise IsotropyValueError(f"{path}: indicator columns {label_columns} must hold 0 or 1.")
        names = label_columns
        labels = labels.astype(np.int8)
    elif multilabel:
        def tags(cell):
            if isinstance(cell, list):
                return [str(t).strip() for t in cell]
            return [t.strip() for t in str(cell).split(label_sep) if t.strip()]
        sets = [tags(r[label_columns[0]]) for r in rows]
        names = sorted({t for s in sets for t in s})
        check_indicator_size(path, len(rows), len(names))
        index = {n: j for j, n in enumerate(names)}
        labels = np.zeros((len(rows), len(names)), dtype=np.int8)
        for i, s in enumerate(sets):
            labels[i, [index[t] for t in s]] = 1
    else:
        values = [str(r[label_columns[0]]).strip() for r in rows]
        def numeric(v):  # class ids sort as numbers ("2" before "10"); 19 digits at most, no unbounded int()
            return v.removeprefix("-").isdecimal() and v.isascii() and len(v) <= 19

        names = sorted(set(values), key=lambda v: (not numeric(v), int(v) if numeric(v) else 0, v))
        index = {n: j for j, n in enumerate(names)}
        labels = np.asarray([index[v] for v in values], dtype=np.int64)
    return LabeledTexts(name=name or path.stem, text_a=text_a, text_b=text_b, labels=labels, label_names=list(names),
                        source={"path": str(path), "format": fmt, "text_column": text_column,
                                "text_pair_column": text_pair_column, "label_column": label_column})
