"""The delimiter of a delimited table (``.csv``/``.tsv``), as every reader of texts and labels decides it.

A judgement call made once, for :func:`isotropy.io.read_labels` and ``isotropy measure --model --texts``
alike: files named ``.csv`` are often tab-separated (SentEval's STS-B ``sts-dev.csv``), and read with
commas each of their lines would be one cell (or be refused at the first line with a comma in a
sentence). A ``.csv`` is read as tab-separated when each of its first 20 non-blank lines holds the
same number (one or more) of tabs before its last cell: a comma-separated file with tabs inside its
cells rarely has as many on every line, and tabs that end every line (a one-column file's) separate
nothing. Read so, quotes are text, as in a ``.tsv``.
"""

from __future__ import annotations

import csv
import os
import re

__all__ = ["SNIFF_LINES", "file_delimiter", "table_delimiter", "table_quoting"]

SNIFF_LINES = 20
_SNIFF_CHARS = 2**20


def table_delimiter(content: str, suffix: str) -> str:
    """A tab for ``.tsv`` and for a ``.csv`` whose first lines are all tab-separated (see the module); else a comma.

    >>> table_delimiter("id\\tlabel\\n0\\ta\\n", ".csv"), table_delimiter("id,label\\n0,a\\n", ".csv")
    ('\\t', ',')
    """
    suffix = suffix.lower()
    if suffix == ".tsv":
        return "\t"
    if suffix != ".csv":
        return ","
    lines = [line for line in re.split(r"\r\n|\r|\n", content[:_SNIFF_CHARS]) if line.strip()][:SNIFF_LINES]
    tabs = {line.rstrip().count("\t") for line in lines}  # trailing tabs (a one-column file's) separate nothing
    return "\t" if len(tabs) == 1 and tabs != {0} else ","


def table_quoting(sep: str) -> int:
    """The :mod:`csv` quoting a table separated by ``sep`` is read with: quotes are text in a tab-separated one.

    Tab-separated files carry no quoting convention (TensorBoard's projector, GloVe-derived TSVs, GLUE): GloVe's
    vocabulary holds the word ``"``, which read with CSV quoting opened a field that ran to the end of the file. A
    comma-separated file keeps CSV quoting (a sentence with a comma is written quoted).

    >>> table_quoting("\\t") == csv.QUOTE_NONE, table_quoting(",") == csv.QUOTE_MINIMAL
    (True, True)
    """
    return csv.QUOTE_NONE if sep == "\t" else csv.QUOTE_MINIMAL


def file_delimiter(path: str | os.PathLike, encoding: str) -> str:
    """:func:`table_delimiter` of the file at ``path`` (its first MiB, undecodable bytes replaced)."""
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if suffix != ".csv":
        return table_delimiter("", suffix)
    try:
        with open(path, encoding=encoding, errors="replace", newline="") as handle:
            return table_delimiter(handle.read(_SNIFF_CHARS), suffix)
    except (OSError, LookupError):  # unreadable: the reader itself says why
        return ","
