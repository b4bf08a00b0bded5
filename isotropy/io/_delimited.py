"""The delimiter of a delimited table (``.csv``/``.tsv``), as every reader of texts and labels decides it.

A judgement call made once, for :func:`isotropy.io.read_labels` and ``isotropy measure --model --texts``
alike: files named ``.csv`` are often tab-separated (SentEval's STS-B ``sts-dev.csv``), and read with
commas each of their lines would be one cell (or be refused at the first line with a comma in a
sentence). A ``.csv`` is read as tab-separated when each of its first 20 non-blank lines holds the
same number (one or more) of tabs before its last cell: a comma-separated file with tabs inside its
cells rarely has as many on every line, and tabs that end every line (a one-column file's) separate
nothing. Read so, quotes are text, as in a ``.tsv``.

Whether line 1 holds data or column names (:func:`no_header`) and a column given by its 1-based position
(:func:`column_position`, ``--text-column 4`` of GLUE's headerless CoLA) are decided here too, once for texts and
labels: ``--texts t.tsv --text-column 4 --labels t.tsv --label-column 2`` must skip the same line 1 or none.
"""

from __future__ import annotations

import csv
import os
import re

__all__ = ["SNIFF_LINES", "column_position", "column_read", "file_delimiter", "file_quoting", "is_number", "no_header", "ordinal",
           "position_given", "separated", "shorten_cell", "table_delimiter", "table_quoting"]

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


def table_quoting(sep: str, first_line: str | None = None) -> int:
    """The :mod:`csv` quoting a table separated by ``sep`` is read with: quotes are text in a tab-separated one,
    unless its ``first_line`` is written quoted.

    Tab-separated files carry no quoting convention (TensorBoard's projector, GloVe-derived TSVs, GLUE): GloVe's
    vocabulary holds the word ``"``, which read with CSV quoting opened a field that ran to the end of the file. A
    comma-separated file keeps CSV quoting (a sentence with a comma is written quoted). So does a tab-separated
    file whose first line encloses a cell in quotes and has no other quote (R's ``write.table(sep = "\\t")`` quotes
    every name: read as text, its names came back as ``'"cat"'`` and its ``"label"`` column was not ``label``, a
    review).

    >>> table_quoting("\\t") == csv.QUOTE_NONE, table_quoting(",") == csv.QUOTE_MINIMAL
    (True, True)
    >>> table_quoting("\\t", '"a"\\t"b"') == csv.QUOTE_MINIMAL, table_quoting("\\t", '"\\t0.1\\t0.2') == csv.QUOTE_NONE
    (True, True)
    """
    if sep != "\t":
        return csv.QUOTE_MINIMAL
    cells = (first_line or "").rstrip("\r\n").split(sep)
    enclosed = [cell for cell in cells if len(cell) >= 2 and cell[0] == cell[-1] == '"']
    stray = any('"' in cell for cell in cells if cell not in enclosed)
    return csv.QUOTE_MINIMAL if enclosed and not stray else csv.QUOTE_NONE


def file_quoting(path: str | os.PathLike, sep: str, encoding: str = "utf-8-sig") -> int:
    """:func:`table_quoting` of the file at ``path``, from its first non-blank line."""
    if sep != "\t":
        return csv.QUOTE_MINIMAL
    try:
        with open(path, encoding=encoding, errors="replace", newline="") as handle:
            for _, line in zip(range(SNIFF_LINES), handle):
                if line.strip():
                    return table_quoting(sep, line[:_SNIFF_CHARS])
    except (OSError, LookupError):  # unreadable: the reader itself says why
        pass
    return csv.QUOTE_NONE


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


def is_number(cell) -> bool:
    """Whether ``cell`` reads as a number (``float`` takes it: ``5``, ``0001``, ``-1e3``, ``nan``).

    >>> is_number("5.000"), is_number("label"), is_number(None)
    (True, False, False)
    """
    try:
        float(cell)
    except (TypeError, ValueError):
        return False
    return True


def no_header(cells) -> bool:
    """Whether the cells of line 1 of a table, read as its column names, are data: a number (``0001``, ``5.000``)
    or a text of three words or more (``a plane is taking off .``) names no column, as in SentEval's headerless
    ``sts-train.csv`` and GLUE's CoLA. A judgement call: a header of such names is rare, and the messages and notes
    of its readers say what was read.

    pandas' column numbers ``0, 1, ..., w-1`` (``w >= 2``) of an unnamed frame, ``pd.DataFrame(X).to_csv(path,
    index=False)``, are a header, as :func:`isotropy.io.embeddings.read_embeddings` reads them: the labels reader
    counted them as a row of data, one label more than the embeddings' rows, and read ``--label-column 16`` as the
    16th position rather than the column named ``16`` (a user trial).

    >>> no_header(["gj04", "1", "", "The sailors rode the breeze."]), no_header(["sentence", "label"])
    (True, False)
    >>> no_header(["0", "1", "2"]), no_header(["1", "2", "3"])
    (False, True)
    """
    if len(cells) >= 2 and [str(cell).strip() for cell in cells] == [str(i) for i in range(len(cells))]:
        return False
    return any(is_number(name) or len(str(name).split()) >= 3 for name in cells)


def column_position(column) -> int | None:
    """The 1-based column position written in ``column`` (``"4"``: the 4th column, as ``cut -f 4`` and awk's ``$4``
    number them), or ``None`` when it is no positive integer (a name, or ``"0"``, ``"-1"``).

    Only a string is a position: an int from Python may be meant from 0, as pandas and numpy count.

    >>> column_position("4"), column_position("0"), column_position("label"), column_position(4)
    (4, None, None, None)
    """
    if not isinstance(column, str) or not re.fullmatch(r"[0-9]+", column.strip()):
        return None
    return int(column) or None


def position_given(column, first: list[str], numbers_under) -> int | None:
    """The 1-based position ``column`` gives (``"4"``), or ``None`` when it is a name (or neither) of a table whose
    line 1 holds the cells ``first`` (as :func:`isotropy.io._encoding.header_name` gives them); the texts and the
    labels readers decide alike, so that one file read for both skips the same line 1.

    A cell of line 1 that ``column`` names wins (a header of numbers, pandas' ``0``, ``1``, ... over texts), unless
    line 1 is data (:func:`no_header`) and ``numbers_under(j)`` says the named cell's column ``j`` (counted from 0)
    holds numbers below it, an id or a label of a headerless file, which no one names: GLUE's CoLA,
    ``gj04<TAB>1<TAB><TAB>The sailors ...``, given ``--label-column 1``, means its first column, not the label column
    under the cell ``1``. The position is then read, if it is one of the columns and not that same column (which
    each reader reads as before: the texts reader refuses it, an id).
    """
    position = column_position(column)
    if position is None or column not in first:
        return position
    j = first.index(column)
    if no_header(first) and numbers_under(j) and position - 1 != j and position <= len(first):
        return position
    return None


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ``11th``, ``22nd``, ...

    >>> [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 102)]
    ['1st', '2nd', '3rd', '4th', '11th', '12th', '13th', '21st', '102nd']
    """
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def separated(sep: str) -> str:
    """``tab-separated`` or ``comma-separated``: how a table's columns are told apart, in words."""
    return "tab-separated" if sep == "\t" else "comma-separated"


def column_read(position: int, width: int, sep: str, header: str | None) -> str:
    """What a column given by its ``position`` read, for the note that says so (a position off by one reads another
    column without an error): ``the 4th of 4 tab-separated columns (no header line)``, or with ``header`` (the cell
    of the header line above it) ``the 1st of 4 tab-separated columns, 'sentence1' on the header line``.

    >>> column_read(4, 4, "\\t", None)
    'the 4th of 4 tab-separated columns (no header line)'
    """
    where = " (no header line)" if header is None else f", {shorten_cell(header)!r} on the header line"
    return f"the {ordinal(position)} of {width} {separated(sep)} column{'s' * (width != 1)}{where}"


def shorten_cell(cell, limit: int = 60) -> str:
    """A cell of a table as a message quotes it: cut to ``limit`` characters, ``...`` after."""
    cell = str(cell)
    return cell if len(cell) <= limit else cell[:limit - 3] + "..."
