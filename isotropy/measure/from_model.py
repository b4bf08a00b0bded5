"""Layer-by-layer geometry of a model on the user's texts: ``isotropy measure --model NAME --texts FILE``.

:func:`measure_layers` embeds texts with any supported model (the packaged ``all-MiniLM-L6-v2`` or
``gemma-3-270m``, a ``.gguf`` file, a local transformers directory) and measures every selected
hidden layer: IsoScore, IsoScore*, I(W), mean cosine, TwoNN dimension, the spread of the vector
norms (max / median, which shows outliers such as a decoder's massive ``<bos>`` activations), and
with labels the cluster metrics. :func:`model_options` and :func:`run_cli` wire it into the
``isotropy measure`` command.

Kept light at import (``isotropy --help`` imports it through ``measure_cli``): click only.
"""

from __future__ import annotations

import functools
import math
import os
import sys
import warnings
from pathlib import Path

import click

from isotropy._utils.defaults import MAX_LENGTH as _MAX_LENGTH
from isotropy._utils.errors import IsotropyValueError
from isotropy.measure._notes import note

__all__ = ["DEFAULT_LAYER_METRICS", "LEVELS", "LayerNote", "LayerWarning", "MetricFailedWarning", "format_table",
           "measure_layers", "model_identity", "model_options", "plot_layers", "read_texts", "run_cli",
           "token_hidden_states"]

LEVELS = ("sentence", "token")
# isotropy.models.loading.COMPUTE_DTYPES (not imported: this module stays light at import); a test checks they agree
COMPUTE_DTYPES = ("float32", "bfloat16", "float16")
_CALLER = "measure_layers"
_DEFAULT_TOKEN_SAMPLE = 10_000
# Metrics that compute in their input's dtype (silhouette's distance blocks): given the float64 copy of
# a layer's states. Every other metric gives the same value on float32 states as on their float64 copy.
_FLOAT64_INPUT = frozenset({"silhouette_score"})

# measured per layer when --metrics is not given (any name of isotropy.metrics.table.METRICS may be asked for);
# isoscore_star joins them when a shrinkage sample is given (isotropy.metrics.table.ISOSCORE_STAR_NOTE)
DEFAULT_LAYER_METRICS = ("isoscore", "partition_isotropy", "cosine_similarity_mean", "rogue_dimension_share",
                         "twonn_dimension", "silhouette_score", "calinski_harabasz_score", "davies_bouldin_score")

# texts are cut to this many characters per token of max_length before tokenisation, so that a huge text (a
# 17 MB line) is never tokenised whole; no token of the shipped tokenizers covers more (WordPiece makes a word
# longer than 100 characters one [UNK])
_CHARS_PER_TOKEN = 100


def read_texts(path: str | os.PathLike, *, column: str | None = None, encoding: str = "utf-8") -> list[str]:
    """Texts from a file: one text per line (``.txt`` and others), or a column of a CSV/TSV or JSON-lines file.

    Parameters
    ----------
    path : path-like
        ``.csv``/``.tsv`` and ``.jsonl``/``.ndjson`` are read as tables; any other file as plain
        text, one text per line (blank lines skipped). A ``.csv`` whose first 20 non-blank lines
        hold the same number of tabs is read as tab-separated, as a ``.tsv`` (quotes are text).
    column : str or None
        The text column of a table: a field of a JSON-lines file; of a ``.csv``/``.tsv`` file, a
        name on its first line, or a 1-based position written as a positive integer (``"4"``, the
        4th column, as ``cut -f 4`` and awk's ``$4`` number them; an ``int`` is not one, being
        counted from 0 in Python). A name on the header line wins over a position; a file without a
        header line (line 1 holds a number or a text of three words or more, as GLUE's CoLA and
        SentEval's STS-B) is read by position only, line 1 included. A position past the columns,
        or of a column of numbers only, is refused. May be omitted when the table has a single
        column. A one-column ``.csv``/``.tsv`` read without it (or by position) is one text per
        line, the first line included, unless that line is a usual column name (``text``,
        ``sentence``, ``review``, ...) or a snake_case name (``clean_text``), which is then its
        header.
    encoding : str, default="utf-8"
        The file's text encoding, any name Python's codecs know (``"latin-1"``, ``"cp1252"``,
        ``"utf-16"``, ...). Bytes that are not text in it are an error that says where, and so is a
        NUL character decoded from them (a UTF-16 file read as latin-1); a UTF-16 or UTF-32 file
        (by its byte-order mark, or without one by its bytes) is told to be one, with its ``--encoding``.

    Returns
    -------
    list of str
        The texts. Of a plain-text file, a list whose attribute ``blank_lines`` is the number of
        blank (or whitespace-only) lines skipped before its last text (those after it end the
        file), and ``skipped`` says so in words (``None`` when there are none): ``isotropy
        measure --model`` adds it to the message of a ``--labels`` count that differs from the
        texts'. Of a column given by its position, a list whose attribute ``column_read`` says
        which column that was (``"the 4th of 4 tab-separated columns (no header line)"``), which
        ``isotropy measure --model`` prints as a note with the first text. White space around a
        text is left out (a file's layout: a tokenizer may make a token of a trailing space), and
        the attribute ``stripped`` counts the texts it was left out of.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "t.jsonl"
    >>> _ = path.write_text('{"text": "a cat", "y": 1}\\n{"text": "a dog", "y": 0}\\n')
    >>> read_texts(path, column="text")
    ['a cat', 'a dog']
    """
    from isotropy.io._paths import check_path_given

    check_path_given(path, caller="read_texts", name="path", expected="a file path")
    from isotropy.io._encoding import MAX_TEXT_FILE_BYTES, text_codec
    from isotropy.io._paths import binary_kind, check_regular_file

    name, decode_as = text_codec(encoding, caller="read_texts")
    path = check_regular_file(path, "The texts file", "a text file (one text a line), a CSV/TSV file or a "
                              "JSON-lines file", value_error=IsotropyValueError)

    binary = binary_kind(path, encoding=decode_as)
    if binary is not None:  # before decoding: a .npy decodes as latin-1 without an error
        raise IsotropyValueError(f"The texts file {str(path)!r} is {binary}, not text; expected a text file (one text "
                                 f"a line), a CSV/TSV file or a JSON-lines file (embeddings are measured as "
                                 f"EMBEDDINGS, without --model).")
    size = path.stat().st_size
    if size > MAX_TEXT_FILE_BYTES:  # read whole below: a bound on its memory (about 3 times the file at most)
        raise IsotropyValueError(f"The texts file {str(path)!r} is {size / 2**30:.1f} GiB; expected at most "
                                 f"{MAX_TEXT_FILE_BYTES // 2**30} GiB of texts (measure a sample of its lines).")
    return _texts_of(path.read_bytes(), subject=f"The texts file {str(path)!r}", path=path, column=column,
                     name=name, decode_as=decode_as)


def _read_stdin_texts(stream, *, column: str | None = None, encoding: str = "utf-8") -> list[str]:
    """:func:`read_texts` of the bytes of ``stream`` (standard input: ``isotropy measure --model M --texts -``).

    Read as a plain-text file is, one text a line, with the same checks and messages, which name
    "standard input"; a column (``--text-column``) is refused: a table is read by its file's suffix.
    """
    from isotropy.io._encoding import MAX_TEXT_FILE_BYTES, text_codec
    from isotropy.io._paths import binary_kind_of

    name, decode_as = text_codec(encoding, caller="read_texts")
    if column is not None:  # before anything is read
        raise IsotropyValueError(f"--text-column {column!r} needs a CSV/TSV or JSON-lines file; standard input is read as "
                                  f"plain text, one text a line. Save it under a name after its format (.csv, .tsv, .jsonl) "
                                  f"and give that file to --texts, or leave --text-column out.")
    raw = stream.read(MAX_TEXT_FILE_BYTES + 1)
    if len(raw) > MAX_TEXT_FILE_BYTES:  # a bound on its memory, as a file's
        raise IsotropyValueError(f"Standard input holds more than {MAX_TEXT_FILE_BYTES // 2**30} GiB; expected at "
                                 f"most {MAX_TEXT_FILE_BYTES // 2**30} GiB of texts (measure a sample of its lines).")
    binary = binary_kind_of(raw, len(raw), raw[-4:], encoding=decode_as)
    if binary is not None:
        raise IsotropyValueError(f"Standard input is {binary}, not text; expected texts, one a line (embeddings are "
                                 f"measured as EMBEDDINGS, a file, without --model).")
    texts = _texts_of(raw, subject="Standard input", path=None, column=None, name=name, decode_as=decode_as)
    import hashlib

    texts.identity = [{"path": "-", "bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}]  # --json's inputs
    return texts


def _texts_of(raw: bytes, *, subject: str, path: Path | None, column, name: str, decode_as: str) -> list[str]:
    """The texts in ``raw``, the bytes of the file ``path`` (``None``: standard input, read as plain text), whose
    messages begin with ``subject`` (``"The texts file '...'"``, ``"Standard input"``); see :func:`read_texts`."""
    from isotropy.io._delimited import table_delimiter, table_quoting
    from isotropy.io._encoding import MAX_LINE_CHARS, WIDE_SNIFF, longest_line, wide_encoding

    suffix = path.suffix.lower() if path is not None else ""
    of = subject[:1].lower() + subject[1:]  # "... blank lines of the texts file '...' were skipped"
    try:  # decoded here, whatever the format: a bad byte is then said at its line of the file
        content = raw.decode(decode_as)  # without a leading BOM
    except UnicodeDecodeError as exc:
        wide = wide_encoding(exc.object)  # a UTF-16/UTF-32 file read as UTF-8: its encoding, not latin-1
        raise IsotropyValueError(f"{subject} is not {name} text ({_bad_byte(exc)}); give its encoding "
                                  f"{f'(--encoding {wide[0]}: {wide[1]})' if wide else '(--encoding, e.g. latin-1 or cp1252)'}"
                                  f".") from None
    if "\x00" in content:  # a UTF-16 file read as latin-1 (or UTF-8) decodes to NULs between its letters
        import re

        line = len(re.findall(r"\r\n|\r|\n", content[:content.index("\x00")])) + 1
        wide = wide_encoding(raw[:WIDE_SNIFF])  # UTF-32 read as UTF-16 decodes too, to NULs: said unless read as its own kind
        if wide is not None and name.startswith(("utf-16", "utf-32")) and wide[0][:6] == name[:6]:
            wide = None
        expected = (f"give its encoding (--encoding {wide[0]}: {wide[1]})" if wide else
                    "expected text without NUL characters (one text a line, a CSV/TSV file or a JSON-lines file)")
        raise IsotropyValueError(f"{subject} holds a NUL character on line {line} (read as {name}), "
                                 f"which no text does; {expected}.")
    long = longest_line(content) if len(raw) > MAX_LINE_CHARS else None  # a character takes a byte at least
    if long is not None:  # before any parser: pandas held 8.5 GB of a 1 GB line before its own error
        raise IsotropyValueError(f"{subject} has a line of more than {MAX_LINE_CHARS:,} characters "
                                 f"(line {long[0]}); expected one text a line, each far shorter (a model reads at most "
                                 f"a few hundred thousand tokens of it).")
    if suffix in (".csv", ".tsv", ".jsonl", ".ndjson"):
        import io

        import pandas as pd

        sep = table_delimiter(content, suffix)
        # the objects cut to the fields read, a line that is not an object refused (outside the try: its own words)
        lines_read = _json_lines_read(content, column, path) if suffix in (".jsonl", ".ndjson") else None
        try:
            if lines_read is not None:
                table = pd.read_json(io.StringIO(lines_read), lines=True, dtype=False)
            else:  # header=None: line 1 is a header only when named (--text-column) or clearly one (_text_header)
                options = {"sep": sep, "dtype": str, "keep_default_na": False, "header": None,
                           "quoting": table_quoting(sep)}
                _check_table_cells(pd.read_csv(io.StringIO(content), nrows=1, **options).shape[1], content, path, sep)
                table = pd.read_csv(io.StringIO(content), **options)
        except IsotropyValueError:  # _check_table_cells': its own words
            raise
        except ValueError as exc:
            raise IsotropyValueError(f"The texts file {str(path)!r} could not be read as {suffix[1:]}"
                                      f"{' (tab-separated)' if sep == chr(9) and suffix == '.csv' else ''}: "
                                      f"{_table_problem(exc, sep)}") from None
        read_as = None  # a column given by its position: what it read, for the command's note
        by_position = _by_position(table, column, path, sep) if suffix in (".csv", ".tsv") else None
        if by_position is not None:  # line 1 already kept or dropped as data or header: no header refusal below
            table, column, headerless, read_as = by_position
            named_number = False
        else:
            if suffix in (".csv", ".tsv"):
                table = _with_header(table, column)
            headerless = suffix in (".csv", ".tsv") and _no_header(table.columns)
            # a named cell of a data line 1 that is a number over a column of numbers is an id, not a column's name: a
            # headerless "1<TAB>a text" file read with --text-column 1 measured the ids of lines 2 on as its texts
            named_number = headerless and column is not None and column in table.columns and _numbers_under(table,
                                                                                                            column)
        if headerless and (column is None and table.shape[1] != 1 or column is not None and column not in table.columns
                           or named_number):
            from isotropy.io._delimited import separated

            kind = f"{table.shape[1]} {separated(sep)}"
            if named_number:
                raise IsotropyValueError(f"The texts file {str(path)!r} has no header line: line 1 holds data "
                                          f"({_first_cells(table.columns)}), not column names, and --text-column "
                                          f"{column!r} names one of its cells, a number like every value under it (an "
                                          f"id, not a column of texts); expected a first line naming its {kind} "
                                          f"columns, one of them then named with --text-column.")
            # only a position can say which column of a headerless file holds the texts
            named = "" if column is None else f", so --text-column {column!r} names none of them"
            raise IsotropyValueError(f"The texts file {str(path)!r} has no header line: line 1 holds data "
                                      f"({_first_cells(table.columns)}), not column names{named}; expected "
                                      f"--text-column giving the texts' column by its position, 1 to {table.shape[1]} (as "
                                      f"cut -f counts its {kind} columns), or a first line naming them.")
        if column is None:
            if table.shape[1] != 1:
                where = (", a field of each line" if suffix in (".jsonl", ".ndjson") else  # JSON lines: no header line
                         "; line 1 names the columns, so a file without a header line needs one")
                raise IsotropyValueError(f"The texts file {str(path)!r} has the columns {_names_shown(table.columns)}; "
                                          f"name the text column (--text-column{where}).")
            column = table.columns[0]
        if list(table.columns).count(column) > 1:
            raise IsotropyValueError(f"The texts file {str(path)!r} has {list(table.columns).count(column)} columns named "
                                      f"{column!r}; expected one column of that name to read the texts from.")
        if column not in table.columns:
            from isotropy._utils.suggest import did_you_mean

            suggestion = did_you_mean(column, map(str, table.columns))
            hint = positions = ""
            if suffix in (".csv", ".tsv"):
                positions = f" or a position from 1 to {table.shape[1]}"
                if not suggestion:  # line 1 may be data whose cells read as names
                    hint = (" (line 1 was read as the file's header line; a file without one gives its column by "
                            "position)")
            raise IsotropyValueError(f"The text column {column!r} is not in {str(path)!r}; expected one of "
                                      f"{_names_shown(table.columns)}{positions}{hint}.{suggestion}")
        values = table[column].tolist()
        absent = [value is None or (isinstance(value, float) and math.isnan(value)) for value in values]
        if suffix in (".jsonl", ".ndjson"):
            # a list of tokens, an object, a number or true/false is not a text: str() of it was embedded
            # ("['the', 'cat', 'sat']", a user trial); JSON says what a value is, and a text is a string
            typed = [i for i, (gone, value) in enumerate(zip(absent, values)) if not gone and not isinstance(value, str)]
            if typed:
                value = values[typed[0]]
                kind = ("true/false" if isinstance(value, bool) else "array" if isinstance(value, list) else
                        "object" if isinstance(value, dict) else "number")
                lines = [n for n, line in enumerate(content.split("\n"), 1) if line.strip()]
                where = f"on line {lines[typed[0]]}" if typed[0] < len(lines) else f"in row {typed[0] + 1}"
                raise IsotropyValueError(f"The texts file {str(path)!r} has a JSON {kind} in the field {column!r} {where}, not "
                                          f"a string ({len(typed)} of {len(values)} lines); expected a text (a JSON string) in "
                                          f"the field {column!r} on every line.")
        texts = ["" if gone else str(value) for gone, value in zip(absent, values)]
        empty = [i for i, text in enumerate(texts) if not text.strip()]
        if empty:  # said where the user looks: the file's line (JSON lines), else the row counted from 1
            first = empty[0]
            if suffix in (".jsonl", ".ndjson"):  # one object a line, blank lines skipped as pandas skips them
                file_lines = content.split("\n")
                lines = [n for n, line in enumerate(file_lines, 1) if line.strip()]
                where = f"on line {lines[first]}" if first < len(lines) else f"in row {first + 1}"
                what = f"has no field {column!r}" if absent[first] else f"has an empty {column!r}"
                if absent[first] and first < len(lines):  # pandas reads a missing field and a null alike
                    import json

                    try:
                        record = json.loads(file_lines[lines[first] - 1])
                    except ValueError:
                        record = None
                    if isinstance(record, dict) and column in record:
                        what = f"has a null {column!r}"
                raise IsotropyValueError(f"The texts file {str(path)!r} {what} {where} ({len(empty)} of {len(texts)} lines "
                                          f"without a text); expected a text in the field {column!r} on every line.")
            where = f"row {first + 1}" + ("" if headerless else " under the header line")
            read = f", {read_as}," if read_as else ""  # a position off by one: which column was read
            raise IsotropyValueError(f"The text column {column!r}{read} of {str(path)!r} is empty in {where} "
                                      f"({len(empty)} of {len(texts)} rows empty); expected a text in every row.")
        if read_as is not None:
            texts = _TableTexts(texts)
            texts.column_read = read_as
    else:
        if column is not None:  # no --format option: the suffix says how a file is read, so the fix is its name
            tabs = table_delimiter(content, ".csv") == "\t"
            seen = (f", though its lines hold tab-separated columns: name it, or a copy or link of it, "
                    f"{path.stem + '.tsv'!r} to read its column {column!r}" if tabs else
                    "; name it, or a copy or link of it, after its format (.csv, .tsv, .jsonl) to read a column, "
                    "or leave --text-column out to read one text a line")
            raise IsotropyValueError(f"--text-column {column!r} needs a CSV/TSV or JSON-lines file; {str(path)!r} is read "
                                      f"as plain text, one text a line{seen}.")
        # lines end at \n, \r\n or \r only: str.splitlines would also end one at U+0085 (the byte 0x85 of a
        # latin-1 file, cp1252's "…"), U+2028 and the like, and give more texts than the file has lines
        import re

        lines = re.split(r"\r\n|\r|\n", content)
        while lines and not lines[-1].strip():
            lines.pop()  # blank lines after the last text end the file: they shift no text (nor a label file's lines)
        texts = _TextLines(line for line in lines if line.strip())
        texts.blank_lines = len(lines) - len(texts)
        if texts.blank_lines:
            texts.skipped = (f"{texts.blank_lines} blank line{'s' if texts.blank_lines > 1 else ''} of {of} "
                             f"{'were' if texts.blank_lines > 1 else 'was'} skipped, not read as texts")
    # spaces around a text are the file's layout, not the text: SST-2's dev.tsv ends every sentence with one, which
    # Gemma's tokenizer makes a token of its own ('▁'), and --pooling last then read that token for every text (its
    # layer 0 was 20 identical rows, a trial). Left out, and counted for the command's note.
    around = sum(1 for text in texts if text != text.strip())
    if around:
        if not isinstance(texts, (_TextLines, _TableTexts)):
            texts = _TableTexts(texts)
        texts[:] = [text.strip() for text in texts]
        texts.stripped = around
    if len(texts) < 2:
        import re

        skipped = ""
        if isinstance(texts, _TextLines):  # the blank lines at its end too, which blank_lines leaves out
            blank = sum(1 for line in re.split(r"\r\n|\r|\n", content.removesuffix("\n").removesuffix("\r"))
                        if not line.strip()) if content else 0
            skipped = (" (it is empty)" if not content else
                       f" ({blank} blank line{'s' if blank != 1 else ''} skipped)" if blank else "")
        raise IsotropyValueError(f"{subject} holds {len(texts)} text{'' if len(texts) == 1 else 's'}"
                                  f"{skipped}; expected at least 2{' (one text a line)' if isinstance(texts, _TextLines) else ''}.")
    return texts


def _bad_byte(exc: UnicodeDecodeError) -> str:
    """Where a text file stops decoding, by its line as an editor shows it (a byte offset is for no editor):
    ``byte 0xe9 on line 12: invalid continuation byte``."""
    import re

    before = exc.object[:exc.start].decode(exc.encoding, errors="replace")  # the bytes before the bad one
    line = len(re.findall(r"\r\n|\r|\n", before)) + 1
    return f"byte 0x{exc.object[exc.start]:02x} on line {line}: {exc.reason}"


class _TableTexts(list):
    """The texts of a column of a CSV/TSV file given by its position, or of spaces stripped (:func:`read_texts`): a
    list, with what was read."""

    column_read: str | None = None  # "the 4th of 4 tab-separated columns (no header line)": said by the command
    stripped: int = 0  # texts that had spaces (or other white space) around them, left out


class _TextLines(list):
    """The texts of a plain-text file (:func:`read_texts`): a list, with the count of the blank lines skipped."""

    blank_lines: int = 0
    stripped: int = 0  # lines that had spaces (or other white space) around their text, left out
    skipped: str | None = None  # the blank lines skipped, in words: added to a --labels count that differs
    identity: list | None = None  # of standard input: what input_identity gives a file, for the JSON record


# first lines of a one-column .csv/.tsv file read as its header without --text-column (compared case-insensitively)
_TEXT_HEADER_NAMES = {"text", "texts", "sentence", "sentences", "sentence1", "sentence2", "sentence_1",
                      "sentence_2", "document", "documents", "doc", "review", "reviews", "content", "body", "title",
                      "question", "answer", "premise", "hypothesis", "utterance", "query", "passage", "comment",
                      "tweet", "caption", "prompt", "input", "string", "line", "message", "post", "abstract",
                      "summary", "description"}
def _text_header(cells: list[str], rest) -> bool:
    """Whether the one cell of line 1 of a one-column table, read without --text-column, is a header.

    A judgement call: only when it clearly is one, as a usual column name (``text``, ``sentence``, ...) or a
    snake_case name (``clean_text``) that is not also a text lower down; else it is the first text. A file whose
    header is another word names it with --text-column.
    """
    import re

    from isotropy.io._encoding import header_name

    name = header_name(cells[0])
    if name in set(map(str, rest)):
        return False
    return name.lower() in _TEXT_HEADER_NAMES or re.fullmatch(r"[A-Za-z][A-Za-z0-9]*(_[A-Za-z0-9]+)+", name) is not None


#: Fields of a JSON-lines texts file kept for a message when the text field is not among them (its column names)
_NAMED_JSON_FIELDS = 64


def _json_lines_read(content: str, column, path) -> str:
    """The JSON lines of ``content`` (the file ``path``) with each object cut to the fields that :func:`_texts_of`
    reads: ``column`` when a line has it, else (no ``column``, or one no line has) the first
    :data:`_NAMED_JSON_FIELDS` fields seen, which a message names; ``content`` itself when it has no more fields than
    that, or a line that is not JSON (pandas says what is wrong with it).

    A line of JSON that is not an object (a list, a string, a number, null) is refused naming its line, as the
    labels reader refuses it: pandas raised a ``TypeError`` traceback for it ("'int' object is not iterable"), or
    its own words ("dictionary update sequence element #0 has length 1; 2 is required").

    pandas builds one column for every field of any line: a file of n lines, each with a field of its own, was an
    n x n table (quadratic in the lines of a file of a few hundred KB). Each line is parsed here once, to find the
    fields and cut it; its values are written back as JSON, which pandas reads as it read them.
    """
    import json

    from isotropy._utils import jsontext

    fields: dict = {}  # in the order pandas makes them columns: first seen, first
    lines = content.split("\n")
    records = {}  # line index -> its object, parsed once
    for index, line in enumerate(lines):
        if line.strip():
            try:
                record = jsontext.loads(line)
            except ValueError:  # not JSON, nested too deeply, an integer of too many digits: pandas' error
                return content
            if not isinstance(record, dict):
                raise IsotropyValueError(f"The texts file {str(path)!r} has a JSON {type(record).__name__} on line "
                                         f"{index + 1}, not an object; expected one JSON object per line, its text in "
                                         f"a field (--text-column).")
            fields.update(dict.fromkeys(record))
            records[index] = record
    if column in fields:
        kept = [column]
    elif len(fields) <= _NAMED_JSON_FIELDS:
        return content
    else:
        kept = list(fields)[:_NAMED_JSON_FIELDS]
    # escaped as JSON text (ensure_ascii): a lone surrogate of a cut emoji ("\ud800") written raw could not be encoded
    # for pandas, and the file was refused; pandas reads the escapes back as the file's own did
    for index, record in records.items():
        lines[index] = json.dumps({key: record[key] for key in kept if key in record})
    return "\n".join(lines)


#: The most cells (columns of line 1 x lines) of a texts table read: pandas holds each as a Python string, about 200
#: bytes with its parser's own, whatever the one or two bytes it takes in the file (a wide .csv of short cells held
#: many times its size to read one column of). Tables of texts have a few columns: 2**25 cells are
#: 11 million lines of three.
MAX_TABLE_CELLS = 2**25


def _check_table_cells(width: int, content: str, path, sep: str) -> None:
    """Refuse a texts table of more than :data:`MAX_TABLE_CELLS` cells (``width`` columns on line 1), before pandas
    reads it. Its lines are counted by their line breaks, and where that count is too many, again as the csv module
    reads the rows of a CSV file: a line break inside a quoted text (a paragraph) is not a row."""

    lines = content.count("\n") + (not content.endswith("\n"))
    if width * lines > MAX_TABLE_CELLS and sep != "\t":  # (a TSV file's quotes are text: its lines are its rows)
        import csv
        import io

        try:
            lines = sum(1 for _ in csv.reader(io.StringIO(content), delimiter=sep))
        except csv.Error:  # (a field past the csv module's limit: the line count stands, and pandas says the rest)
            pass
    if width * lines > MAX_TABLE_CELLS:
        raise IsotropyValueError(f"The texts file {str(path)!r} is a table of {width:,} column{'s' * (width != 1)} "
                                 f"and {lines:,} lines "
                                 f"({width * lines:,} cells), more than the {MAX_TABLE_CELLS:,} isotropy reads (pandas "
                                 f"holds each cell as a Python string); expected "
                                 + ("a few columns: keep the text column alone (a .txt file, one text a line, or a "
                                    ".csv of that column)." if width > 1 else
                                    "fewer lines: a .txt file, one text a line, is read without pandas."))


def _names_shown(names, n: int = 20) -> str:
    """The first ``n`` column names, shortened, for a message; ``[...] (N in all)`` past them (every name of a table of
    100,000 columns made a 1 MB line)."""
    names = list(names)
    shown = [_short(str(name)) for name in names[:n]]
    return str(shown) if len(names) <= n else str(shown)[:-1] + f", ...] ({len(names)} in all)"


def _with_header(table, column):
    """The table read without a header, with its first line as the column names when it is a header.

    With ``column`` named, line 1 names the columns; without, a table of several columns has them on line 1 (one
    is named with --text-column) and a one-column table has a header only if :func:`_text_header` says so.
    """
    if table.shape[0] == 0:
        return table
    first = [str(cell) for cell in table.iloc[0].tolist()]
    if column is None and table.shape[1] == 1 and not _text_header(first, table.iloc[1:, 0].tolist()):
        return table.set_axis(["text"], axis=1)
    from isotropy.io._encoding import header_name

    return table.iloc[1:].set_axis([header_name(cell) for cell in first], axis=1)


def _by_position(table, column, path, sep):
    """``(table, name, headerless, what was read)`` when ``column`` gives a column of ``table`` (read without a header)
    by its 1-based position, ``None`` when it is a name (or no column): see :func:`read_texts`.

    A name on line 1 wins over a position, unless line 1 is data and the cell named is a number over a column of
    numbers (an id): then a position elsewhere is read (the ids' own column stays refused, as :func:`_numbers_under`
    decided). Line 1 is the header as :func:`isotropy.io._delimited.no_header` says (one column:
    :func:`_text_header`, as without a column); the table returned has it dropped, and its columns named by their
    positions. A position past the columns is refused, with their count and line 1's cells, and so is one of a
    column of numbers only (an id, a score, a label: the column beside the texts, most likely).
    """
    from isotropy.io._delimited import column_read, is_number, position_given, separated
    from isotropy.io._encoding import header_name

    if column is None or table.shape[0] == 0:
        return None
    first = [header_name(cell) for cell in table.iloc[0].tolist()]
    named = _with_header(table, column) if column in first else None
    position = position_given(column, first, lambda j: _numbers_under(named, column))
    if position is None:
        return None
    data = _no_header(first)
    width = table.shape[1]
    if position > width:
        line, names = (("line 1, data", " (it has no header line to name one by)") if data else
                       ("its header line", " or one of those names"))
        raise IsotropyValueError(f"The text column {column!r} is a position past the {width} {separated(sep)} "
                                  f"column{'s' * (width != 1)} of {str(path)!r} ({line}: {_first_cells(first)}); "
                                  f"expected a position from 1 to {width}{names}.")
    header = not data if width > 1 else _text_header(first, table.iloc[1:, 0].tolist())
    body = table.iloc[1:] if header else table
    read = column_read(position, width, sep, first[position - 1] if header else None)
    values = body.iloc[:, position - 1]
    if len(values) and all(is_number(value) for value in values):  # an id, a score or a label: a position off by one
        raise IsotropyValueError(f"The text column {column!r}, {read}, of {str(path)!r} holds numbers only "
                                  f"({_first_cells(values.tolist(), 3)}), not texts; expected the position of the "
                                  f"texts' column, from 1 to {width}.")
    return body.set_axis([str(j) for j in range(1, width + 1)], axis=1), str(position), not header, read


def _no_header(names) -> bool:
    """:func:`isotropy.io._delimited.no_header`: line 1's cells are data, not column names (labels read it alike)."""
    from isotropy.io._delimited import no_header

    return no_header(names)


def _numbers_under(table, column) -> bool:
    """Whether the cell ``column`` of line 1 (read as the column names) and every value under it are numbers."""
    from isotropy.io._delimited import is_number

    values = table[column]
    return is_number(column) and len(values) > 0 and all(is_number(value) for value in values)


def _first_cells(names, n: int = 4) -> str:
    """The first ``n`` cells of line 1, quoted and shortened, for a message."""
    names = [_short(str(name)) for name in names]
    return ", ".join(map(repr, names[:n])) + (", ..." if len(names) > n else "")


def _short(name: str) -> str:
    return name if len(name) <= 60 else name[:57] + "..."


def _table_problem(exc: ValueError, sep: str) -> str:
    """pandas' parser error in the words of the file: ragged lines and an unclosed quote (else its own, one line)."""
    import re

    message = " ".join(str(exc).split())
    ragged = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", message)
    if ragged:
        expected, line, saw = ragged.groups()
        return (f"line {line} has {saw} columns, the lines above it {expected}; expected the same number of "
                f"{'tab' if sep == chr(9) else 'comma'}-separated columns on every line (quote a text that holds "
                f"a comma, or save the file as .txt, one text a line)")
    unclosed = re.search(r"EOF inside string starting at row (\d+)", message)
    if unclosed:
        return (f"the quote opened on row {int(unclosed.group(1)) + 1} is never closed; expected each quoted text "
                f"to end with a quote")
    return message


def token_hidden_states(texts, tokenizer, network, layers, *, batch_size, max_length, keep_special, sample_size, rng,
                        caller: str = _CALLER):
    """Hidden states of (a seeded sample of) the tokens of ``texts``.

    Returns ``{layer: (n, d)}``, each row's text index, the number of measurable tokens, each row's token
    string (``tokenizer.convert_ids_to_tokens``) and ``{layer: [(token, norm), ...]}``: the norm of every
    special token of the texts with a row (computed in float32 on the device). Texts with the same
    tokens run once: their rows are equal, whatever batches they would have fallen in; so are a causal
    decoder's tokens with the same prefix (:func:`isotropy.models.batching.copy_same_prefix_rows`).
    The rows are float32 whatever dtype ``network`` runs in; a forward pass that fails in a half dtype is one line
    naming ``dtype`` and the device (:func:`isotropy.models.loading.forward_failed`, ``caller`` named).
    """
    import numpy as np
    import torch

    from isotropy._utils.sampling import subsample_indices
    from isotropy.models.loading import capped_max_length

    max_length = capped_max_length(max_length, network.config, tokenizer)  # the model's positions bound it
    encoded = tokenizer(texts, truncation=True, max_length=max_length, return_special_tokens_mask=True)
    positions = []  # (text, token position) of every measurable token
    for i, special in enumerate(encoded["special_tokens_mask"]):
        positions.extend((i, t) for t, s in enumerate(special) if keep_special or not s)
    if not positions:
        raise IsotropyValueError("The texts hold no token to measure (every token is a special token).")
    positions = np.asarray(positions, dtype=np.int64)
    n_total = len(positions)
    if sample_size is not None and sample_size < n_total:
        positions = positions[subsample_indices(n_total, sample_size, random_state=rng)]
    # texts with the same tokens run once (in other batches, other padded widths would give them vectors a few ulps
    # apart, which neighbour metrics read as distinct points): a repeated text's rows are read from its first copy
    first: dict[tuple, int] = {}
    runs_for: dict[int, int] = {}  # each text with a row -> the text that runs for it (the first with its tokens)
    copies: dict[int, int] = {}  # each text that runs -> how many texts it stands for
    for i in dict.fromkeys(positions[:, 0].tolist()):
        runs_for[i] = first.setdefault(tuple(encoded["input_ids"][i]), i)
        copies[runs_for[i]] = copies.get(runs_for[i], 0) + 1  # its special tokens count as if it ran
    wanted: dict[int, list[tuple[int, int]]] = {}
    for row, (i, t) in enumerate(positions.tolist()):
        wanted.setdefault(runs_for[i], []).append((t, row))
    d = int(network.config.hidden_size)
    out = {layer: np.empty((len(positions), d), dtype=np.float32) for layer in layers}
    used = sorted(wanted, key=lambda i: len(encoded["input_ids"][i]))
    pieces = {i: tokenizer.convert_ids_to_tokens(encoded["input_ids"][i]) for i in used}
    row_tokens = [""] * len(positions)
    for i in used:
        for t, row in wanted[i]:
            row_tokens[row] = pieces[i][t]
    special_at = {i: [t for t, s in enumerate(encoded["special_tokens_mask"][i]) if s] for i in used}
    special_norms = {layer: [] for layer in layers}
    device = next(network.parameters()).device
    with torch.inference_mode():
        for start in range(0, len(used), batch_size):
            chunk = used[start:start + batch_size]
            batch = tokenizer.pad({"input_ids": [encoded["input_ids"][i] for i in chunk]}, return_tensors="pt")
            try:
                hidden = network(input_ids=batch["input_ids"].to(device),
                                 attention_mask=batch["attention_mask"].to(device), output_hidden_states=True).hidden_states
            except (RuntimeError, NotImplementedError) as exc:  # an operation torch lacks in a half dtype here
                from isotropy.models.loading import forward_failed

                said = forward_failed(exc, dtype=str(network.dtype).removeprefix("torch."), device=device, caller=caller)
                if said is None:
                    raise
                raise said from None
            b_idx = [b for b, i in enumerate(chunk) for _ in wanted[i]]
            t_idx = [t for i in chunk for t, _ in wanted[i]]
            rows = [r for i in chunk for _, r in wanted[i]]
            s_b = [b for b, i in enumerate(chunk) for _ in special_at[i]]
            s_t = [t for i in chunk for t in special_at[i]]
            s_names = [pieces[i][t] for i in chunk for t in special_at[i]]
            s_copies = [copies[i] for i in chunk for _ in special_at[i]]  # a repeated text's special tokens, each time
            for layer in layers:
                out[layer][rows] = hidden[layer][b_idx, t_idx].float().cpu().numpy()
                if s_b:
                    norms = hidden[layer][s_b, s_t].float().norm(dim=-1).cpu().tolist()
                    special_norms[layer].extend(pair for pair, c in zip(zip(s_names, norms), s_copies)
                                                for _ in range(c))
    from isotropy.models.batching import Prefixes, copies_prefixes, copy_same_prefix_rows

    if copies_prefixes(network, tokenizer):  # a causal decoder's tokens with the same prefix: one vector
        trie = Prefixes()
        of_text = {i: trie.ids(encoded["input_ids"][i]) for i in runs_for}
        prefixes = [of_text[i][t] for i, t in positions.tolist()]
        copy_same_prefix_rows(out, prefixes, network=network, tokenizer=tokenizer)
    return out, positions[:, 0], n_total, row_tokens, special_norms


class MetricFailedWarning(UserWarning):
    """A metric of :func:`measure_layers` failed at every layer (``result["errors"]``): it was not measured."""


class LayerNote(UserWarning):
    """A note of :func:`measure_layers` on every layer (texts cut at ``max_length``), also in ``result["warnings"]``.

    Raised as a warning, not printed, so that a Python caller can filter, record or silence it; ``isotropy measure
    --model`` prints it as ``Note: <message>.``.
    """


class LayerWarning(UserWarning):
    """A metric's warning at some layers of :func:`measure_layers` (``"layers 0, 1: twonn_dimension: ..."``), also in
    ``result["warnings"]``; its value there is as measured, or NaN where the metric is undefined.

    Raised as a warning, not printed, so that a Python caller can filter, record or silence it; ``isotropy measure
    --model`` prints it as ``Warning: <message>``.
    """


def _cache_said_once(function):
    """Run ``function`` within :func:`isotropy.models.encoders.one_cache_warning`: a cache folder that cannot be
    written is said once per call, not once for the layers and again for the sentence-transformers output row."""
    @functools.wraps(function)
    def wrapped(*args, **kwargs):
        from isotropy.models.encoders import one_cache_warning

        with one_cache_warning():
            return function(*args, **kwargs)

    return wrapped


@_cache_said_once
def measure_layers(texts, *, model: str, layers="all", level: str = "sentence", pooling: str = "mean",
                   labels=None, metrics=None, device=None, batch_size: int = 32, max_length: int = _MAX_LENGTH,
                   keep_special: bool = False, sample_size: int | None = None, random_state: int = 0,
                   progress: bool = False, shrinkage_sample=None, n_neighbors: int | None = None,
                   zeta: float | None = None, averaging: str | None = None, dtype: str = "float32") -> dict:
    """Geometry of every selected hidden layer of ``model`` on ``texts``: one record per layer.

    Parameters
    ----------
    texts : sequence of str
    model : str
        Any name :func:`isotropy.models.resolve_model` accepts.
    layers : "all", "last", str or sequence of int, default="all"
        Hidden states (0 = embedding output, ``n_layers`` = last layer), e.g. ``"0,6,12"``, ``-1`` or
        ``"0,last"`` (:func:`isotropy.models.select_layers`).
    level : {"sentence", "token"}, default="sentence"
        ``"sentence"``: one pooled vector per text (:func:`isotropy.models.encoders.encode_pooled`, cached);
        ``"token"``: one vector per token (special tokens such as [CLS] or ``<bos>`` left out unless
        ``keep_special``).
    pooling : {"mean", "last", "first"}, default="mean"
        Sentence level only (``"first"`` is refused for a causal decoder).
    labels : array-like of shape (n_texts,) or None
        One label per text (repeated for each of its tokens at token level); enables the cluster
        metrics.
    metrics : list of str or None
        Names from :data:`isotropy.metrics.table.METRICS`; default: :data:`DEFAULT_LAYER_METRICS`
        (the cluster metrics only with labels).
    device, batch_size, max_length
        Where and how the model runs (``device``: ``"auto"`` or ``None`` for CUDA when present, else
        the CPU; :func:`isotropy._utils.device.resolve_device`); texts are truncated to ``max_length`` tokens (and, before
        tokenisation, to ``100 · max_length`` characters, so that a huge text is never tokenised whole).
        ``max_length`` counts the special tokens: one that leaves no token of the text (2 under BERT's ``[CLS]``
        ``[SEP]``) is refused before the forward pass.
    keep_special : bool, default=False
        Token level: also measure the special tokens.
    sample_size : int or None
        Measure a seeded sample of this many rows (default at token level: 10,000 tokens; at
        sentence level: every text).
    random_state : int, default=0
        Seed of the samples (``sample_size``, ``shrinkage_sample``, the token sample); an int >= 0.
    progress : bool, default=False
        Print one line to standard error as each layer is measured (``layer 2 measured (3 of 7)``).
    shrinkage_sample : int or sequence of str, optional
        Σ_S of ``isoscore_star`` at each layer: the covariance of N rows drawn (seeded by
        ``random_state``) from that layer's rows before ``sample_size`` (sentence level: all texts;
        token level: the measured tokens), or of the rows of these texts, embedded by the model at
        the same level and pooling. Without it ``isoscore_star`` is left out of the default
        metrics, and asking for it warns (Σ_S = I tracks vector norms).
    n_neighbors : int or None
        ``k`` of ``mle_dimension`` at every layer (``None``: its default, 20); TwoNN reads the first two
        neighbours of the same search.
    zeta : float in [0, 1] or None
        The shrinkage weight ζ of ``isoscore_star`` at every layer (``None``: its default, 0.2).
    averaging : {"mean", "harmonic", "median"} or None
        How ``mle_dimension`` pools its local estimates at every layer (``None``: its default, the mean).
    dtype : {"float32", "bfloat16", "float16"}, default="float32"
        The precision the model runs in, whatever its files store: float32, exact, or a half dtype
        that halves the model's memory at ~1e-3 relative error in its states
        (:func:`isotropy.models.load_transformer`). Half states are pooled in float32, and every
        metric reads float32 rows; recorded as ``dtype`` and kept apart in the cache.

    Returns
    -------
    dict
        ``rows`` (one dict per layer: ``layer``, ``n_samples``, the metric values and
        ``norm_max_over_median``; NaN where a metric is undefined at that layer, with the reason in
        ``warnings``; at token level also ``token_norms``, the dict of
        :func:`isotropy.metrics.norms.token_norms` on the measured tokens: ``max_over_median``,
        ``median_norm``, the ``top`` 5 token strings by norm over the median and, in ``special``, the
        special tokens ([CLS], [SEP], ``<bos>``) of the texts that went through the model, listed apart
        whether or not ``keep_special``), ``n_layers``, ``n_features``, ``n_texts``, ``n_rows_total``,
        ``errors`` (``{metric: message}`` for a metric that failed at every layer: not measured at all, as
        a metric that fails on an embeddings file), ``left_out`` (``{metric: reason}`` for a metric of the
        default table it left out, as ``isotropy measure``'s JSON has it: ``isoscore_star`` without a
        ``shrinkage_sample``) and the options used.

    Warns
    -----
    LayerNote
        Texts were cut at the token limit, said only when at least one was, with how many (``"3 of 8 texts are
        longer than 7 tokens (...): each was cut to its first 7 tokens"``; the limit is the model's positions when
        ``max_length`` is more).
    LayerWarning
        A metric warned, or was undefined (NaN), at some layers: one warning for each message, naming the layers
        and the metrics that gave it (``"layers 0, 1, 2: twonn_dimension: ..."``).
    MetricFailedWarning
        A metric failed at every layer (``errors``).
    UserWarning
        ``isoscore_star`` asked for without ``shrinkage_sample``.

    Each note and layer warning is also kept, as said, in the result's ``warnings`` (prefixed ``"every layer: "``
    for a note); all three categories are :class:`UserWarning` subclasses, so that
    ``warnings.simplefilter("ignore", UserWarning)`` silences them and ``warnings.catch_warnings(record=True)``
    records them. Only ``progress=True`` prints (one line a layer, to standard error).

    Notes
    -----
    A sentence-transformers directory (``modules.json`` with modules after the transformer, such as
    the packaged ``all-MiniLM-L6-v2``'s Pooling and Normalize; not a GGUF model, whose converted
    directory holds a Pooling written by isotropy) gets one more row at sentence level,
    ``layer="output"``: the model's own output, ``SentenceTransformer.encode`` (its pooling, its
    normalisation) with ``max_seq_length`` set to ``max_length``, the token limit of every row, so that it
    pools the very tokens the last layer's row pools; whatever ``pooling`` says for the hidden layers;
    ``output_modules`` names the modules applied.

    ``norm_max_over_median`` is the largest vector norm divided by the median norm: values far
    above ~3 flag outlier vectors (raw decoders put 5-16x norms on ``<bos>`` in their middle layers),
    which dominate covariance-based scores such as IsoScore. At token level, ``token_norms`` says which
    tokens they are.
    """
    import numpy as np

    from isotropy._utils.sampling import subsample_indices
    from isotropy._utils.validation import SEED_MAX, check_option, check_scalar, check_texts
    from isotropy._utils.warn import user_stacklevel
    from isotropy.metrics.norms import token_norms
    from isotropy.metrics.table import ISOSCORE_STAR_NOTE, METRICS, check_metric_names, span_bound_warning
    from isotropy.models.contextual import n_transformer_layers
    from isotropy.models.layers import check_layers, check_layers_before_loading, select_layers
    from isotropy.models.pooling import check_pooling

    texts = check_texts(texts, caller=_CALLER)
    if len(texts) < 2:
        raise IsotropyValueError(f"The 'texts' parameter of {_CALLER} must hold at least 2 texts. Got {len(texts)}.")
    check_option(level, "level", LEVELS, caller=_CALLER)
    pooling = check_pooling(pooling, caller=_CALLER)
    check_scalar(batch_size, "batch_size", caller=_CALLER, kind=int, low=1)
    check_scalar(max_length, "max_length", caller=_CALLER, kind=int, low=2)
    check_scalar(sample_size, "sample_size", caller=_CALLER, kind=int, low=2, allow_none=True)
    check_scalar(n_neighbors, "n_neighbors", caller=_CALLER, kind=int, low=2, allow_none=True)
    check_scalar(zeta, "zeta", caller=_CALLER, low=0.0, high=1.0, allow_none=True)
    if averaging is not None:
        from isotropy._kernels.dimension import _AVERAGING

        check_option(averaging, "averaging", _AVERAGING, caller=_CALLER)
    from isotropy._utils.device import resolve_device
    from isotropy.models.resolve import require_model_packages

    require_model_packages(model)  # torch, transformers and a packaged model's package named up front, with their extra
    device = resolve_device(device, caller=_CALLER)  # "auto"/None -> cuda or cpu: one device for every step below
    from isotropy.models.loading import check_dtype

    dtype = check_dtype(dtype, caller=_CALLER)  # before the model is loaded
    if labels is not None:
        labels = np.asarray(labels)
        if labels.shape[0] != len(texts):
            raise IsotropyValueError(f"The 'labels' parameter of {_CALLER} must hold one label per text ({len(texts)}). "
                                      f"Got {labels.shape[0]} instead.")
    if isinstance(shrinkage_sample, (str, bytes, bytearray)):
        check_texts(shrinkage_sample, caller=_CALLER, name="shrinkage_sample", what="an int or a list of texts")
    if not (shrinkage_sample is None or isinstance(shrinkage_sample, int)
                                                  or all(isinstance(t, str) for t in shrinkage_sample)):
        raise TypeError(f"The 'shrinkage_sample' parameter of {_CALLER} must be an int or a list of texts. "
                        f"Got {type(shrinkage_sample).__name__} instead.")
    if isinstance(shrinkage_sample, int):
        check_scalar(shrinkage_sample, "shrinkage_sample", caller=_CALLER, kind=int, low=2)
    elif shrinkage_sample is not None:
        shrinkage_sample = [str(t)[:_CHARS_PER_TOKEN * max_length] for t in shrinkage_sample]
        if len(shrinkage_sample) < 2:
            raise IsotropyValueError(f"The 'shrinkage_sample' parameter of {_CALLER} must hold at least 2 texts. "
                                      f"Got {len(shrinkage_sample)} instead.")
    default_metrics = metrics is None
    if default_metrics:
        metrics = [m for m in DEFAULT_LAYER_METRICS if not METRICS[m].needs_labels or labels is not None]
        if shrinkage_sample is not None:
            metrics.insert(1, "isoscore_star")
    metrics = check_metric_names(metrics, caller=_CALLER)
    if "isoscore_star" in metrics and shrinkage_sample is None:
        from isotropy.metrics.table import ISOSCORE_STAR_WARNING

        warnings.warn(f"{_CALLER}: {ISOSCORE_STAR_WARNING} (shrinkage_sample=).", UserWarning, stacklevel=2)
    # never tokenise a huge text whole; a text cut here is longer than max_length tokens (no token covers more)
    chars_cut = np.fromiter((len(t) > _CHARS_PER_TOKEN * max_length for t in texts), dtype=bool, count=len(texts))
    texts = [t[:_CHARS_PER_TOKEN * max_length] for t in texts]
    check_layers(layers, caller=_CALLER)  # the form now; the range before the model loads where its depth can be read
    check_layers_before_loading(layers, model, caller=_CALLER)
    if labels is None and any(METRICS[m].needs_labels for m in metrics):
        raise IsotropyValueError(f"The cluster metrics need labels (one per text); got metrics={metrics!r} without labels.")
    if level == "sentence" and n_neighbors is not None and "mle_dimension" in metrics:
        # the rows are the texts (or their sample): a k they cannot give is refused before the model is loaded
        _check_mle_k(n_neighbors, texts, sample_size=sample_size)
    left_out = {}  # the metrics of the default table left out, with why (the JSON's left_out, the command's notes)
    rows = len(texts) if sample_size is None else min(len(texts), sample_size)
    if level == "sentence" and "twonn_dimension" in metrics and rows < 3:
        # known before the model is loaded: it failed at every layer after the whole forward pass (a trial). Left out
        # of the default table with a note (as the file's default table leaves MLE out); refused when asked for
        more = ("give at least 3 texts" if rows == len(texts) else
                f"measure a sample of at least 3 of the {len(texts)} texts (--sample-size; sample_size= in Python)")
        why = (f"twonn_dimension needs at least 3 rows, and the texts measured give {rows} (one row per text at the "
               f"sentence level)")
        if not default_metrics:
            raise IsotropyValueError(f"{why}: {more}, or measure without twonn_dimension.")
        metrics = [m for m in metrics if m != "twonn_dimension"]
        left_out["twonn_dimension"] = f"twonn_dimension left out: {why}; {more} to measure it"
    from isotropy._utils.validation import check_scalar

    # numpy's own "expected non-negative integer" named no parameter; refused before the model is loaded
    check_scalar(random_state, "random_state", caller=_CALLER, kind=int, low=0, high=SEED_MAX)
    rng = np.random.default_rng(random_state)

    from isotropy.models.loading import load_transformer

    tokenizer, network, location = load_transformer(model, device=device, dtype=dtype)
    from isotropy.models.loading import capped_max_length, check_max_length

    # before the forward pass: a max_length that holds only the special tokens made every text the same row
    check_max_length(max_length, tokenizer, model=model, caller=_CALLER)

    # the token limit of every row, the output row's too (its encoder's max_seq_length): the model's own 256 cut the
    # output row of long texts elsewhere than the layers it pools (--max-length 8 changed layer 6, not the output)
    seq = capped_max_length(max_length, network.config, tokenizer)
    network_config = network.config
    ran_in = str(next(network.parameters()).dtype).removeprefix("torch.")  # the precision of the forward pass
    n_cut = _count_cut(texts, chars_cut, tokenizer, seq)  # said below and recorded: a cut text is not measured whole
    n_layers = n_transformer_layers(network.config)
    layers = select_layers(layers, n_layers + 1, caller=_CALLER)
    output_modules, encoder, collected = [], None, None
    if level == "sentence":
        check_pooling(pooling, network.config, caller=_CALLER)
        from isotropy.models.encoders import encode_pooled

        output_modules = _sentence_transformer_modules(location)
        if output_modules:  # the model's own output: cached, or from the network and its forward pass below
            from isotropy.models.encoders import _load_cached, output_row_file

            row_file = output_row_file(location, texts, batch_size=batch_size, max_length=seq, device=device,
                                       dtype=dtype)
            cached_output = _load_cached(row_file, len(texts))
            if cached_output is None:
                encoder = _sentence_model_around(location, network, device, max_seq_length=seq)
                collected = _OutputRows(encoder, texts)
        states = encode_pooled(texts, model=location, layers=layers, pooling=pooling, device=device,
                               batch_size=batch_size, max_length=max_length, show_progress=progress, dtype=dtype,
                               _loaded=(tokenizer, network), _on_batch=collected)
        text_of_row = np.arange(len(texts))
        n_total = len(texts)
        full_states = states
        if sample_size is not None and sample_size < n_total:
            keep = subsample_indices(n_total, sample_size, random_state=rng)
            states = {layer: X[keep] for layer, X in states.items()}
            text_of_row = keep
    else:
        states, text_of_row, n_total, row_tokens, special_norms = token_hidden_states(
            texts, tokenizer, network, layers, batch_size=batch_size, max_length=max_length,
            keep_special=keep_special, sample_size=_DEFAULT_TOKEN_SAMPLE if sample_size is None else sample_size,
            rng=rng)
        full_states = states
    row_labels = None if labels is None else labels[text_of_row]
    if row_labels is not None and any(METRICS[m].needs_labels for m in metrics):
        from isotropy._utils.validation import check_labels

        ids = check_labels(row_labels, n_samples=len(row_labels), caller=_CALLER)
        k, n = int(ids.max()) + 1, len(ids)
        named = ", ".join(m for m in metrics if METRICS[m].needs_labels)
        if k < 2:  # ("in 1 clusters", a trial)
            raise IsotropyValueError(f"The labels put all {n} measured rows in a single cluster; the cluster metrics "
                                     f"({named}) need at least 2 clusters.")
        if k > n - 1:
            raise IsotropyValueError(f"The labels put the {n} measured rows in {k} clusters; the cluster metrics "
                                     f"({named}) need between 2 and n_samples - 1 = {n - 1} clusters.")
    shrink, few = {}, None  # layer -> Σ_S of isoscore_star; the warning of a sample of too few rows
    if shrinkage_sample is not None and "isoscore_star" in metrics:
        from isotropy.metrics.table import shrinkage_span_warning

        shrink, n_drawn = _shrinkage_covariances(shrinkage_sample, states, full_states, tokenizer, network, layers,
                                        level=level, location=location, pooling=pooling, device=device,
                                        batch_size=batch_size, max_length=max_length, keep_special=keep_special,
                                        random_state=random_state, dtype=dtype)
        few = shrinkage_span_warning(n_drawn, int(states[layers[0]].shape[1]))
    if output_modules:
        if collected is None:  # read back: the layers' cache and this row's come from the same texts
            output = cached_output
        else:
            from isotropy.models.encoders import _save

            try:
                output = collected.result(batch_size)  # encode() of the texts the pass did not give
            except (RuntimeError, NotImplementedError) as exc:  # an operation torch lacks in a half dtype here
                from isotropy.models.loading import forward_failed

                said = forward_failed(exc, dtype=dtype, device=device, caller=_CALLER)
                if said is None:
                    raise
                raise said from None
            _save(row_file, output)
        states["output"] = output[text_of_row] if len(text_of_row) < len(texts) else output
        if shrink:  # Σ_S of the output row: the same sample, through the model's own modules
            drawn = output[subsample_indices(len(output), shrinkage_sample, random_state=[random_state, 1])] \
                if isinstance(shrinkage_sample, int) else \
                (encoder or _sentence_model_around(location, network, device, max_seq_length=seq)).encode(
                    shrinkage_sample, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)
            from isotropy.metrics.covariance import CovarianceAccumulator

            shrink["output"] = CovarianceAccumulator().update(np.asarray(drawn, dtype=np.float64)).covariance()
        del encoder
    del network
    from isotropy._kernels.rows import shared_statistics
    from isotropy._utils.warn import IdentityShrinkageWarning, SpanBoundWarning
    from isotropy.measure.report import (
        _ONE_PASS,
        _isoscore_star_zeta,
        _mle_averaging,
        _mle_neighbours,
        _one_neighbour_pass,
        layer_message,
    )

    one_pass = _ONE_PASS <= set(metrics)  # TwoNN and MLE both asked for: one neighbour search per layer
    rows, notes, seen, failed = [], [], {}, {}
    for layer in [*layers, *(["output"] if output_modules else [])]:
        X = np.asarray(states[layer], dtype=np.float64)
        # the metrics read the states as computed (float32 from a float32 model): each metric gives the
        # same value as on their float64 copy (it computes in float64 itself; tests/test_measure_model.py),
        # except those of _FLOAT64_INPUT, and the covariance metrics share one pass over them
        low = states[layer] if isinstance(states[layer], np.ndarray) and states[layer].dtype == np.float32 else X
        norms = np.linalg.norm(X, axis=1)
        record = {"layer": layer, "n_samples": int(X.shape[0]),
                  "norm_max_over_median": float(norms.max() / max(np.median(norms), np.finfo(float).tiny))}
        if level == "token":
            try:
                record["token_norms"] = token_norms(X, row_tokens, special=special_norms[layer])
            except ValueError as exc:  # a zero median norm: undefined at this layer, said so, not fatal
                record["token_norms"] = {"max_over_median": float("nan"), "median_norm": float(np.median(norms)),
                                         "top": [], "special": []}
                seen.setdefault(("token_norms", " ".join(str(exc).split())), []).append(layer)
        with shared_statistics(low, metrics):
            search = {}  # the one search of TwoNN and MLE at this layer (isotropy.measure.report)
            for name in metrics:
                fn, labelled, kwargs = METRICS[name].function, METRICS[name].needs_labels, {}
                if one_pass and name in _ONE_PASS:
                    fn = functools.partial(_one_neighbour_pass, search, name, metric="euclidean", n_neighbors=n_neighbors,
                                           averaging=averaging)
                elif name == "mle_dimension":
                    kwargs = {"n_neighbors": _mle_neighbours(n_neighbors), "averaging": _mle_averaging(averaging)}
                if name == "silhouette_score":
                    kwargs = {"sample_size": 5000 if X.shape[0] > 5000 else None, "random_state": random_state}
                if name == "isoscore_star":
                    kwargs = {"shrinkage_cov": shrink.get(layer)} | ({} if zeta is None else {"zeta": zeta})
                data = X if name in _FLOAT64_INPUT else low
                try:
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        # (Σ_S = I: said once for the command, not at each layer; the span bound: below, as the CLI)
                        warnings.simplefilter("ignore", IdentityShrinkageWarning)
                        warnings.simplefilter("ignore", SpanBoundWarning)
                        record[name] = float(fn(data, row_labels, **kwargs) if labelled else fn(data, **kwargs))
                except ValueError as exc:  # e.g. identical vectors at this layer: undefined here, said so, not fatal
                    record[name] = float("nan")
                    caught = [exc]
                    failed.setdefault(name, {})[layer] = layer_message(name, exc)
                bound = span_bound_warning(name, *X.shape) if name not in failed or layer not in failed[name] else None
                said = [layer_message(name, getattr(w, "message", w)) for w in caught] + ([bound] if bound else [])
                for message in dict.fromkeys(said):
                    seen.setdefault((name, message), []).append(layer)  # one warning for every layer giving it
        rows.append(record)
        if progress:
            # progress only: the values come once, in the table (a terminal showed each of them twice)
            print(f"layer {layer} measured ({len(rows)} of {len(layers) + bool(output_modules)})", file=sys.stderr,
                  flush=True)
    # said only when a text was cut, with how many: a max_length past the model's positions that cut no text said
    # "texts longer than 512 tokens were cut to 512" all the same (result["max_length"] records the limit used)
    if n_cut:  # the vectors of these texts are of their first seq tokens only: said, not silent (a user trial)
        from isotropy.models.loading import longest_input

        longest = longest_input(network_config, tokenizer)
        limit = (f"the most the model takes: max_length={max_length} is more than its {seq} positions"
                 if seq < max_length and max_length is not _MAX_LENGTH else
                 "the most the model takes" if seq < max_length or longest is not None and longest <= seq else
                 f"max_length={seq}; the model takes up to {longest}" if longest is not None else f"max_length={seq}")
        cut = (f"every layer: {n_cut} of {len(texts)} texts {'is' if n_cut == 1 else 'are'} longer than {seq} tokens "
               f"({limit}): {'it was' if n_cut == 1 else 'each was'} cut to its first {seq} tokens")
        notes.append(cut)
        warnings.warn(cut.removeprefix("every layer: "), LayerNote, stacklevel=user_stacklevel())
    if "isoscore_star" in metrics and shrinkage_sample is None:  # warned above; kept with the values
        from isotropy.metrics.table import ISOSCORE_STAR_WARNING

        notes.append(f"every layer: isoscore_star: {ISOSCORE_STAR_WARNING} (shrinkage_sample=).")
    if few is not None:  # the same rows at every layer
        notes.append(f"every layer: isoscore_star: {few} (shrinkage_sample=).")
        warnings.warn(notes[-1], LayerWarning, stacklevel=user_stacklevel())
    measured = [row["layer"] for row in rows]
    # a metric that failed at every layer was not measured at all: an error, as on an embeddings file. The
    # output row counts as a layer here: a metric it measures was measured (its value is in the table), so one
    # that failed only at the requested layers reads nan there with a warning, as any partial failure does
    at_every = {name: next(iter(dict.fromkeys(by_layer.values()))) for name, by_layer in failed.items()
                if list(by_layer) == measured}
    errors = {name: message[:1].upper() + message[1:] for name, message in at_every.items()}  # a sentence of its own
    for name, message in errors.items():  # run_cli says it as the metric's error, with the option's name
        warnings.warn(f"{_CALLER}: {name} failed at every layer: {message}", MetricFailedWarning,
                      stacklevel=user_stacklevel())
    said = {}  # (layers, message) -> the metrics giving it: TwoNN and MLE share one search, hence its warnings
    for (name, message), where in seen.items():
        if name in at_every and message == at_every[name] and where == measured:
            continue  # said once above, not as a warning of every layer
        said.setdefault((tuple(where), message), []).append(name)
    for (where, message), names in said.items():
        named = f"layer {where[0]}" if len(where) == 1 else f"layers {', '.join(map(str, where))}"
        notes.append(f"{named}: {', '.join(names)}: {message}")
        warnings.warn(notes[-1], LayerWarning, stacklevel=user_stacklevel())
    return {"model": str(model), "location": location, "level": level,
            "pooling": pooling if level == "sentence" else None, "keep_special": keep_special if level == "token" else None,
            "n_layers": n_layers, "n_features": int(states[layers[0]].shape[1]), "n_texts": len(texts),
            "n_rows_total": int(n_total), "metrics": list(metrics), "max_length": seq, "n_truncated": n_cut, "dtype": ran_in,
            "batch_size": batch_size, "device": str(device),
            "sample_size": sample_size, "random_state": random_state, "rows": rows, "warnings": notes,
            "errors": errors,
            "n_neighbors": _mle_neighbours(n_neighbors) if "mle_dimension" in metrics else None,
            "averaging": _mle_averaging(averaging) if "mle_dimension" in metrics else None,
            "zeta": _isoscore_star_zeta(zeta) if "isoscore_star" in metrics else None,
            "shrinkage_sample": (shrinkage_sample if shrinkage_sample is None or isinstance(shrinkage_sample, int)
                                 else f"{len(shrinkage_sample)} texts"),
            # (as isotropy measure's JSON: the metrics of the default table it left out, with why)
            "left_out": ({"isoscore_star": f"{ISOSCORE_STAR_NOTE} (shrinkage_sample=)"}
                         if default_metrics and shrinkage_sample is None else {}) | left_out,
            "output_modules": output_modules}


def _count_cut(texts, chars_cut, tokenizer, seq: int) -> int:
    """How many of ``texts`` have more than ``seq`` tokens (special tokens included), and so are cut to ``seq``.

    Each text is tokenised to at most ``seq + 1`` tokens (bounded work): one that reaches it is longer. ``chars_cut``:
    the texts already cut to ``100 * max_length`` characters, longer still.
    """
    import numpy as np

    cut = np.asarray(chars_cut, dtype=bool).copy()
    for start in range(0, len(texts), 4096):
        ids = tokenizer(list(texts[start:start + 4096]), truncation=True, max_length=seq + 1)["input_ids"]
        cut[start:start + len(ids)] |= np.fromiter((len(row) > seq for row in ids), dtype=bool, count=len(ids))
    return int(cut.sum())


def model_identity(location, *, cache_dir=None) -> dict:
    """Which model ran, for the JSON record: its files' sizes and sha256, not only a name or a folder.

    A folder's contents change under its name (a checkpoint saved again, other weights copied in), as a texts file's
    do. For a model converted from GGUF (a ``.gguf`` file or the packaged Gemma), the GGUF file's sha256 (the key of
    its converted folder, read from the conversion's record, so the file is not hashed again); for any other folder
    (the packaged MiniLM too), each file the loaders read with its size and sha256 (:func:`_model_files`); for a hub
    name, the name alone. A file's digest is computed once per version of it on disk and then read back from
    ``cache_dir`` (default :func:`isotropy.models.default_cache_dir`; :func:`isotropy.models._cache.cached_sha256`):
    hashing a model's weights again on every run would cost what loading them costs.
    """
    from isotropy.models._cache import cached_sha256
    from isotropy.models.gguf import _MARKER

    path = Path(str(location))
    if not path.is_dir():
        return {"name": str(location), "files": None}
    marker = path / _MARKER
    if marker.is_file():
        from isotropy._utils import jsontext

        try:
            record = jsontext.loads(marker.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            record = {}
        if isinstance(record, dict) and isinstance(record.get("gguf_sha256"), str):
            return {"path": str(path), "gguf_sha256": record["gguf_sha256"], "source": record.get("source")}
    entries = []
    for p in _model_files(path):
        entry = {"path": p.relative_to(path).as_posix()}
        try:
            entry.update(bytes=p.stat().st_size, sha256=cached_sha256(p, cache_dir=cache_dir))
        except OSError as exc:  # gone or unreadable since it was loaded: said, the rest of the record kept
            entry.update(bytes=None, sha256=None, error=f"{type(exc).__name__}: {exc.strerror or exc}")
        entries.append(entry)
    return {"path": str(path), "files": entries}


def _model_files(path: Path) -> list[Path]:
    """The files of a model folder that its loaders read, in path order: the files at its top (config, weights,
    tokenizer; ``from_pretrained`` reads no sub-folder) and those under the module folders its ``modules.json`` names
    (a sentence-transformers model's Pooling, Dense, Normalize). Not hidden ones (a clone's ``.git`` holds the
    weights again), nor other sub-folders: a Trainer's output folder holds every ``checkpoint-N/`` (weights and
    optimizer states) beside the model saved at its top, and a packaged model may ship ONNX or OpenVINO copies."""
    from isotropy._utils import jsontext

    folders = [path]
    try:
        modules = jsontext.loads((path / "modules.json").read_text(encoding="utf-8"))
        folders += [path / str(m["path"]) for m in modules if isinstance(m, dict) and str(m.get("path", ""))]
    except (OSError, ValueError, TypeError, KeyError):
        pass  # not a sentence-transformers folder (or its modules.json is not one: its loader says so)
    root = path.resolve()
    found = set()
    for folder in folders:
        if not folder.resolve().is_relative_to(root) or not folder.is_dir():
            continue  # a module path out of the folder ("../x") is not the folder's
        walk = folder.rglob("*") if folder != path else folder.iterdir()
        found.update(p for p in walk if p.is_file() and not any(
            part.startswith(".") for part in p.relative_to(path).parts))
    return sorted(found, key=lambda p: p.relative_to(path).as_posix())


def _sentence_transformer_modules(location) -> list[str]:
    """The modules after the transformer in a sentence-transformers directory (``modules.json``), e.g. ``["Pooling", "Normalize"]``.

    Empty for a directory converted from GGUF by :func:`isotropy.models.convert_gguf`: its mean Pooling
    is isotropy's own addition (so that ``SentenceTransformer`` reads it), not a model's output, and
    its row would repeat the last layer's.
    """
    from isotropy._utils import jsontext
    from isotropy.models.gguf import _MARKER

    path = Path(str(location)) / "modules.json"
    if not path.is_file() or (path.parent / _MARKER).is_file():
        return []
    try:
        modules = jsontext.loads(path.read_text(encoding="utf-8"))
        kinds = [str(m["type"]).rsplit(".", 1)[-1] for m in sorted(modules, key=lambda m: m.get("idx", 0))]
    except (ValueError, KeyError, TypeError, AttributeError):
        return []
    return kinds[1:] if kinds and kinds[0] == "Transformer" and len(kinds) > 1 else []


def _sentence_model_around(location, network, device, *, max_seq_length: int):
    """``SentenceTransformer(location)`` built around ``network``, already loaded: its weights are not read again.

    Its ``max_seq_length`` is set to ``max_seq_length``, the token limit of the hidden layers' rows, so that the
    output row pools the very tokens the last layer's row pools (not the model's own limit, 256 for MiniLM).

    The Transformer module gets ``network`` instead of loading the weights (the modules after it,
    Pooling, Normalize, Dense, are read from their folders as usual). Where this
    sentence-transformers version builds its Transformer otherwise, the model is loaded as
    :func:`isotropy.models.encoders.load_sentence_model` does (the weights read a second time), in ``network``'s
    dtype. The token states of a network in a half dtype reach the modules after it in float32
    (:func:`isotropy.models.encoders.float32_token_states`).
    """
    from isotropy.models._safety import refuse_remote_code
    from isotropy.models.encoders import float32_token_states, load_sentence_model

    refuse_remote_code(location)
    dtype = str(network.dtype).removeprefix("torch.")
    encoder = _built_around(location, network, device, functools.partial(load_sentence_model, dtype=dtype))
    encoder.max_seq_length = max_seq_length
    return float32_token_states(encoder)


def _built_around(location, network, device, load_sentence_model):
    """The SentenceTransformer of :func:`_sentence_model_around`, at the model's own ``max_seq_length``."""
    from isotropy.models._safety import NO_REMOTE_CODE

    try:
        from sentence_transformers import SentenceTransformer
        from sentence_transformers.base.modules.transformer import Transformer
    except ImportError:
        return load_sentence_model(location, device=device)
    original = vars(Transformer).get("_load_model")
    if original is None:
        return load_sentence_model(location, device=device)
    Transformer._load_model = lambda self, *args, **kwargs: network
    try:
        encoder = SentenceTransformer(location, device=device, **NO_REMOTE_CODE)
    except (OSError, ValueError) as exc:
        raise OSError(f"Could not load the sentence-transformers model {str(location)!r}: "
                      f"({exc.__class__.__name__}: {str(exc).splitlines()[0]})") from None
    finally:
        Transformer._load_model = original
    first = encoder[0]
    if getattr(first, "model", None) is not network and getattr(first, "auto_model", None) is not network:
        return load_sentence_model(location, device=device)
    return encoder


class _OutputRows:
    """``SentenceTransformer.encode(texts)`` from the hidden layers' own forward pass (``encode_pooled``'s ``_on_batch``).

    Each batch's last hidden state goes through the modules after the Transformer (Pooling,
    Normalize, Dense). A text is taken from that pass only when sentence-transformers would feed
    the network the same tokens (the same token ids as its own tokenizer gives, after its
    ``strip``, at its ``max_seq_length``) and the model has no lower-casing, prompt or
    ``truncate_dim``; every other text (and every text when no pass ran, all layers cached) is
    encoded by ``encoder.encode``, which runs the same network.
    """

    def __init__(self, encoder, texts):
        self.encoder, self.texts = encoder, texts
        self.modules = list(encoder)[1:]
        first = encoder[0]
        self.seq = getattr(encoder, "max_seq_length", None)
        tokenizer = getattr(encoder, "tokenizer", None)
        self.usable = (self.seq is not None and callable(tokenizer) and not getattr(first, "do_lower_case", False)
                       and getattr(encoder, "default_prompt_name", None) is None
                       and getattr(encoder, "truncate_dim", None) is None)
        self.ids = None  # sentence-transformers' token ids of every text (isotropy.models.batching.TokenRows)
        if self.usable:
            from isotropy.models.batching import tokenize_texts

            try:
                self.ids = tokenize_texts(tokenizer, [t.strip() for t in texts], max_length=self.seq)
            except Exception:  # noqa: BLE001 -- a processor that wants other inputs: encode() does it all
                self.usable = False
        import numpy as np

        self.output = None
        self.done = np.zeros(len(texts), dtype=bool)

    def __call__(self, rows, batch, last_hidden):
        if not self.usable:
            return
        import numpy as np

        mask = batch["attention_mask"]
        # half states (dtype="bfloat16") go on in float32, as float32_token_states hands them on in encode()
        features = {"token_embeddings": last_hidden.float(), "attention_mask": mask}
        for module in self.modules:
            features = module(features)
        vectors = features["sentence_embedding"].float().cpu().numpy()
        if self.output is None:
            self.output = np.empty((len(self.texts), vectors.shape[1]), dtype=np.float32)
        ids, keep = batch["input_ids"].cpu().numpy(), mask.bool().cpu().numpy()
        for b, row in enumerate(rows):
            # the very tokens sentence-transformers feeds the network (its strip, its max_seq_length): its output
            if np.array_equal(self.ids.row("input_ids", row), ids[b][keep[b]]):
                self.output[row] = vectors[b]
                self.done[row] = True

    def result(self, batch_size):
        """The output rows of every text (the ones not taken from the pass encoded by the model itself).

        A text the pass did not run because an earlier one has the same tokens (``encode_pooled`` runs
        each token sequence once) takes that text's row when sentence-transformers' tokens are the same too.
        """
        import numpy as np

        if self.output is not None:
            from isotropy.models.batching import distinct_sequences

            first = distinct_sequences(self.ids)[1]  # each text's first text with sentence-transformers' same tokens
            copy = ~self.done & self.done[first]
            self.output[copy] = self.output[first[copy]]
            self.done |= copy
        redo = np.flatnonzero(~self.done)
        if len(redo) == len(self.texts):
            return self.encoder.encode(self.texts, batch_size=batch_size, convert_to_numpy=True,
                                       show_progress_bar=False)
        if len(redo):
            self.output[redo] = self.encoder.encode([self.texts[i] for i in redo], batch_size=batch_size,
                                                    convert_to_numpy=True, show_progress_bar=False)
        return self.output


def _shrinkage_covariances(sample, states, full_states, tokenizer, network, layers, *, level, location, pooling,
                           device, batch_size, max_length, keep_special, random_state, dtype="float32") -> tuple[dict, int]:
    """``(Σ_S per layer, rows drawn)``: the covariance of ``sample`` rows drawn from the layer's rows, or of the texts ``sample``
    embedded, and how many rows it is of (the same at every layer)."""
    import numpy as np

    from isotropy._utils.sampling import subsample_indices
    from isotropy.metrics.covariance import CovarianceAccumulator

    if isinstance(sample, int):
        n = len(full_states[layers[0]])
        if sample > n:
            raise IsotropyValueError(f"The 'shrinkage_sample' parameter of {_CALLER} draws {sample} rows from {n}; expected "
                                      f"at most {n} (or a list of texts).")
        rows = subsample_indices(n, sample, random_state=[random_state, 1])
        drawn = {layer: np.asarray(full_states[layer])[rows] for layer in layers}
    elif level == "sentence":
        from isotropy.models.encoders import encode_pooled

        drawn = encode_pooled(sample, model=location, layers=layers, pooling=pooling, device=device,
                              batch_size=batch_size, max_length=max_length, show_progress=False, dtype=dtype,
                              _caller=_CALLER, _texts_name="shrinkage_sample")
    else:
        drawn, *_ = token_hidden_states(sample, tokenizer, network, layers, batch_size=batch_size, max_length=max_length,
                                  keep_special=keep_special, sample_size=_DEFAULT_TOKEN_SAMPLE,
                                  rng=np.random.default_rng([random_state, 1]))
    return {layer: CovarianceAccumulator().update(np.asarray(drawn[layer], dtype=np.float64)).covariance()
            for layer in layers}, int(np.asarray(drawn[layers[0]]).shape[0])


def _cell(metric: str, value: float) -> str:
    """A value of the table: 4 significant digits (:func:`isotropy.measure.report.value_text`), ``nan`` if not finite."""
    from isotropy.measure.report import value_text

    return value_text(metric, value, 4) if math.isfinite(value) else "nan"


def format_table(result: dict) -> str:
    """The per-layer table as aligned text (one row per layer)."""
    from isotropy.metrics.table import METRICS

    names = ["n_samples", *result["metrics"], "norm_max_over_median"]
    header = ["layer", "n", *(METRICS[m].display_name for m in result["metrics"]), "max/med norm"]
    failed = result.get("errors", {})  # not measured at any layer: "failed", as in the table of an embeddings file
    cells = [header] + [[str(r["layer"]), str(r["n_samples"])] + ["failed" if m in failed else _cell(m, r[m])
                                                                  for m in names[1:]]
                        for r in result["rows"]]
    width = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return "\n".join("  ".join(cell.rjust(w) for cell, w in zip(row, width)) for row in cells)


def plot_layers(result: dict, path: str | os.PathLike) -> Path:
    """One panel per metric against the layer index (:func:`isotropy.measure.figure.layers_figure`); written atomically
    (format from the suffix)."""
    from isotropy._utils.atomic import atomic_write
    from isotropy.measure.figure import layers_figure

    path = Path(path)
    fig = layers_figure(result)
    suffix = path.suffix.lower().lstrip(".") or "png"
    with atomic_write(path, "wb", name="--plot") as handle:
        fig.savefig(handle, format=suffix, dpi=120)
    return path


def _json_safe(value):
    """``value`` with every non-finite float (also inside dicts and lists, such as ``token_norms``) as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


class _InputError(click.ClickException):
    exit_code = 2


def model_options(function):
    """The click options of ``isotropy measure --model`` (applied to the ``measure`` command)."""
    from isotropy._utils.click_types import STDIN, BoundedInt, NonEmpty
    from isotropy._utils.validation import MAX_INT
    from isotropy.measure._completion import complete_device, complete_model, complete_pooling

    options = [
        click.option("--model", default=None, metavar="NAME", shell_complete=complete_model,
                     type=NonEmpty(expected="a model name, folder or .gguf file"),
                     help="Measure a model's hidden layers instead of an embeddings file: all-MiniLM-L6-v2, "
                          "gemma-3-270m (packaged), a .gguf file or a transformers directory. Needs --texts."),
        click.option("--texts", "texts_path", type=NonEmpty(click.Path(path_type=Path), dash=STDIN), default=None,
                     metavar="FILE", help="With --model: one text a line, or a CSV/TSV/JSON-lines file "
                                          "(--text-column). A .csv whose first lines are all tab-separated is read "
                                          "as a .tsv. A one-column .csv/.tsv is one text a line, line 1 included, "
                                          "unless line 1 is a usual column name (text, sentence, ...) or "
                                          "a snake_case one; with --text-column NAME, line 1 names the columns. '-' "
                                          "reads standard input, one text a line (./- is a file named '-')."),
        click.option("--text-column", default=None, metavar="COL",
                     help="The text column of a CSV/TSV/JSON-lines --texts file: its name, or in a CSV/TSV file its "
                          "1-based position (4: the 4th column, as cut -f counts; a name on the header line wins), "
                          "the only way to pick a column of a file without a header line (GLUE's CoLA). A note "
                          "says which column a position read, and its first text."),
        click.option("--encoding", default="utf-8", show_default=True, metavar="NAME",
                     help="The text encoding of a text or CSV/TSV --labels file (latin-1, cp1252, utf-16, ...), "
                          "and with --model of --texts and of a --shrinkage-sample file of texts."),
        click.option("--layers", default="all", show_default=True, metavar="LIST",
                     help="With --model: 'all', 'last' or comma-separated hidden states (0 = embedding output, "
                          "-1 or last = last layer: 0,last)."),
        click.option("--level", type=click.Choice(LEVELS), default="sentence", show_default=True,
                     help="With --model: one pooled vector per text, or one vector per token."),
        click.option("--pooling", default="mean", show_default=True, metavar="NAME", shell_complete=complete_pooling,
                     help="With --level sentence: mean (masked mean), last (last token) or first (first token, "
                          "[CLS]; refused for decoders)."),
        click.option("--keep-special", is_flag=True, help="With --level token: also measure [CLS], <bos>, ..."),
        click.option("--plot", "plot_path", default=None,
                     type=NonEmpty(click.Path(path_type=Path),
                                   dash="(standard output), to which no figure is written: its format is told by "
                                        "its file's suffix"),
                     metavar="OUT", help="With --model: write a per-layer figure (its format from the suffix: .png, .svg, .pdf, ...)."),
        click.option("--device", default=None, metavar="auto|cpu|cuda|cuda:N|mps", shell_complete=complete_device,
                     help="With --model: the torch device (default auto: CUDA when present, else the CPU)."),
        # bounded as every count (MAX_INT); a refusal shortens the value (click's IntRange echoed 5,000 digits whole)
        click.option("--batch-size", type=BoundedInt(min=1, max=MAX_INT), default=32, show_default=True,
                     help="With --model: texts per forward pass (lower it when the device runs out of memory)."),
        click.option("--max-length", type=BoundedInt(min=2, max=MAX_INT), default=_MAX_LENGTH, show_default=True,
                     help="With --model: tokens per text (longer texts are truncated; at most the model's "
                          "positions; a note says how many texts were cut)."),
        # a choice: completed by click, and a value outside it refused in one line naming the three
        click.option("--dtype", type=click.Choice(COMPUTE_DTYPES), default="float32", show_default=True,
                     help="With --model: the precision the model runs in, whatever its files store. float32 is "
                          "exact; bfloat16 or float16 halve the model's memory (a large model on a GPU) at ~1e-3 "
                          "relative error in its states, pooled in float32. Kept apart in the cache; the --json "
                          "record's dtype says which ran."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def _check_outputs(json_path, plot_path, inputs: dict | None = None) -> None:
    """Refuse a ``--json`` or ``--plot`` destination that could not be written, or that is one of ``inputs`` (option
    -> path: ``--texts``, ``--labels``, ...) or the other output, and a ``--plot`` format matplotlib does not write,
    before any work (each named as its option)."""
    from isotropy._utils.atomic import check_writable_destination
    from isotropy.io._paths import check_not_an_input
    from isotropy.measure._json_output import stream_fd

    check_not_an_input({"--json": None if json_path is None or stream_fd(json_path) is not None else json_path,
                        "--plot": plot_path}, inputs or {})

    if json_path is not None and stream_fd(json_path) is None:
        check_writable_destination(json_path, name="--json", probe=True)
    if plot_path is None:
        return
    check_writable_destination(plot_path, name="--plot", probe=True)
    suffix = Path(plot_path).suffix.lower().lstrip(".")
    from isotropy._utils.click_types import FIGURE_FORMATS

    if not suffix:  # (a PNG written under a name without one said nothing of its format)
        raise IsotropyValueError(f"--plot {str(plot_path)!r} has no suffix, which gives the figure's format; expected a name "
                                  f"ending in one of .{', .'.join(FIGURE_FORMATS)} (e.g. {str(plot_path) + '.png'!r}).")
    if suffix not in FIGURE_FORMATS:  # the formats of 'isotropy plot --format' (avif, raw, ... depend on the platform)
        raise IsotropyValueError(f"--plot {str(plot_path)!r} has the format {suffix!r}, which is not a figure format this "
                                  f"command writes; expected one of {', '.join(FIGURE_FORMATS)}.")


def _check_mle_k(k: int, texts, *, sample_size) -> None:
    """Refuse a ``k`` of ``mle_dimension`` that the sentence-level rows cannot give: the texts (as cut to their
    length for the model), or their ``sample_size`` sample; equal texts are one point."""
    from isotropy._utils.validation import check_n_neighbors

    check_n_neighbors(k, len(texts) if sample_size is None else min(len(texts), sample_size), caller=_CALLER, low=2)
    distinct = len(set(texts)) if sample_size is None else None  # equal texts: one vector (as cut to max_length)
    if distinct is not None and k > distinct - 1:

        raise IsotropyValueError(f"The 'n_neighbors' parameter of {_CALLER} must be at most the distinct texts less "
                                 f"one, {distinct - 1} ({distinct} distinct of {len(texts)}: equal texts are one "
                                 f"point). Got {k} instead.")


def run_cli(*, model, texts_path, text_column, encoding="utf-8", layers, level, pooling, keep_special, plot_path, device, batch_size,
            max_length, dtype="float32", labels_path=None, label_column=None, metric_names=None, json_path=None, sample_size=None,
            random_state=0,
            progress=None, shrinkage_sample=None, n_neighbors=None, zeta=None, averaging=None) -> None:
    """``isotropy measure --model``: measure, print the table, write --json and --plot."""
    context = click.get_current_context(silent=True)
    if context is not None and context.get_parameter_source("max_length") is click.core.ParameterSource.DEFAULT:
        max_length = None  # measure_layers' own default: cut to the model's positions without a note
    if texts_path is None:
        raise click.UsageError("--model needs --texts FILE (one text a line, or a CSV/TSV/JSON-lines column).")
    if random_state < 0:  # numpy's "expected non-negative integer" would name no option, and only after the texts
        raise _InputError(f"--random-state {random_state}: expected an integer >= 0 (the seed of the samples).")
    to_err = json_path is not None and str(json_path) == "-"  # --json -: stdout holds the JSON alone (as for EMBEDDINGS)
    from isotropy._utils.click_types import STDIN

    from_stdin = isinstance(texts_path, str) and texts_path == STDIN  # --texts - (a file named '-' is Path('-'))
    try:
        _check_outputs(json_path, plot_path, {"--texts": None if from_stdin else texts_path, "--labels": labels_path,
                                              "--shrinkage-sample":
                       shrinkage_sample if isinstance(shrinkage_sample, Path) else None})  # before the model runs: a bad path is found in a second, not after it
        from isotropy._utils.device import resolve_device
        from isotropy.models.resolve import refuse_word_vectors, require_model_packages

        refuse_word_vectors(model)  # before the texts are read, and before the packages a model would need
        # the extra --model needs, and PyTorch's command where torch is missing, in one line before anything is read
        # (the core install said "No module named 'torch'", then, with torch, asked for the experiments extra)
        require_model_packages(model, f"--model {model}")
        device = resolve_device(device, name="--device")  # "auto" (or none given): CUDA when present, else the CPU
        try:
            if from_stdin:
                texts = _read_stdin_texts(sys.stdin.buffer, column=text_column, encoding=encoding)
            else:
                texts = read_texts(texts_path, column=text_column, encoding=encoding)
        except (ValueError, OSError) as exc:  # "The texts file ...": said as this option's file, as --shrinkage-sample's
            message = str(exc)
            if message.startswith(("The text", "Standard input")):
                given = " -" if from_stdin else ""
                raise type(exc)(f"--texts{given}: {message[:1].lower()}{message[1:]}") from None
            raise
        if getattr(texts, "stripped", 0):
            n_stripped = texts.stripped
            # "had white space around them, left out" read as texts dropped (a trial): the spaces go, every text stays
            note(f"the white space around {n_stripped} of {len(texts)} texts was stripped, every text kept "
                 f"(a tokenizer may make a token of a trailing space, and --pooling last would read it).")
        if getattr(texts, "column_read", None) is not None:  # a position off by one reads another column, silently
            note(f'--text-column {text_column}: {texts.column_read}, first text: "{_short(texts[0])}"')
        labels = None
        if labels_path is not None:
            from isotropy.io.labels import read_labels

            read_as = []  # what a --label-column position read, said as --text-column's is
            labels = read_labels(labels_path, n_rows=len(texts), column=label_column, row_kind="texts",
                                     encoding=encoding, row_note=getattr(texts, "skipped", None), _read_as=read_as)
            if read_as:
                note(f'--label-column {label_column}: {read_as[0]}, first label: "{_short(str(labels[0]))}"')
            if getattr(labels, "ndim", 1) != 1:
                raise IsotropyValueError(f"--labels {str(labels_path)!r} is multi-label; --model needs one label per text.")
        inputs = None
        if json_path is not None:  # the files as they were read: one edited while the model runs is recorded as read
            from isotropy.io._identity import input_identity

            inputs = {"texts": texts.identity if from_stdin else input_identity(texts_path),
                      "labels": None if labels_path is None else input_identity(labels_path)}
        if metric_names is not None and "mle_dimension" in metric_names and level == "sentence" \
                and n_neighbors is None:
            # asked for by name (the default table leaves it out), its default k is refused as a given one, before
            # the model is loaded (it failed at every layer after the forward pass); texts cut as measure_layers cuts
            from isotropy.measure.report import _mle_neighbours

            cut = _CHARS_PER_TOKEN * (_MAX_LENGTH if max_length is None else max_length)
            _check_mle_k(_mle_neighbours(None), [t[:cut] for t in texts], sample_size=sample_size)
        show = sys.stderr.isatty() if progress is None else progress
        shrink = shrinkage_sample
        if shrinkage_sample is not None and not isinstance(shrinkage_sample, int):
            try:
                shrink = read_texts(shrinkage_sample, encoding=encoding)
            except ValueError as exc:  # "The texts file ..." of --texts' reader: said as this option's file
                message = str(exc)
                raise type(exc)(f"--shrinkage-sample: {message[:1].lower()}{message[1:]}") from None
        from isotropy.metrics.table import ISOSCORE_STAR_WARNING

        with warnings.catch_warnings(record=True) as caught:  # the IsoScore* warning, as one line of the command
            warnings.simplefilter("always", UserWarning)
            try:
                result = measure_layers(texts, model=model, layers=layers, level=level, pooling=pooling,
                                        labels=labels, metrics=metric_names, device=device, batch_size=batch_size,
                                        max_length=_MAX_LENGTH if max_length is None else max_length,
                                        keep_special=keep_special, sample_size=sample_size,
                                        random_state=random_state, progress=show, shrinkage_sample=shrink,
                                        n_neighbors=n_neighbors, zeta=zeta, averaging=averaging, dtype=dtype)
            except IsotropyValueError as exc:  # the labels' clusters: named by the file, as the file mode names it
                if labels_path is None or not str(exc).startswith("The labels put "):
                    raise
                raise IsotropyValueError(f"--labels {str(labels_path)!r} puts {str(exc)[len('The labels put '):]}"
                                         ) from None
        from isotropy.measure.report import command_words

        # the notes and layer warnings first, in their order, as the command said them when measure_layers printed
        # them itself (before it returned, hence before the warnings below); their text as it is, the metrics' own
        # (layer_message: a metric's X is the layer's vectors here, "the layer", not a file of EMBEDDINGS)
        for w in caught:
            if issubclass(w.category, LayerNote):
                note(f"{w.message}.")
            elif issubclass(w.category, LayerWarning):  # (a Python spelling of ours, such as shrinkage_sample=: the option's)
                click.echo(f"Warning: {command_words(str(w.message))}", err=True)
        for w in caught:
            if issubclass(w.category, (MetricFailedWarning, LayerNote, LayerWarning)):
                continue  # in result["errors"]: said below as the metric's error, with the option's name; said above
            if ISOSCORE_STAR_WARNING in str(w.message):
                click.echo(f"Warning: {ISOSCORE_STAR_WARNING} (--shrinkage-sample).", err=True)
            elif issubclass(w.category, UserWarning):  # a damaged cache file recomputed, ...: one line of the
                # command, as _guard prints the readers' (Python's format showed "FILE:0: UserWarning: ...")
                from isotropy.measure.report import option_names

                click.echo(f"Warning: {option_names(' '.join(str(w.message).split()))}", err=True)
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    except (ValueError, TypeError, OSError, ImportError) as exc:
        from isotropy._utils.install import import_error_message
        from isotropy.measure.report import option_names

        # (an error about k when no --n-neighbors was given is about its default)
        raise _InputError(option_names(import_error_message(exc), n_neighbors_given=n_neighbors is not None)) from None
    left_out = {name: command_words(reason) for name, reason in result["left_out"].items()}  # the command's words
    for reason in left_out.values():
        note(f"{reason}.")
    if result["output_modules"]:
        note(f"{model} is a sentence-transformers model: the row 'output' is its own output "
             f"(SentenceTransformer.encode: {', '.join(result['output_modules'])}), its texts cut at "
             f"--max-length tokens as the layers' are; the hidden layers use "
             f"--pooling {pooling}.")
    n = result["rows"][0]["n_samples"]
    unit = "texts" if level == "sentence" else "tokens"
    if sample_size is not None and sample_size >= result["n_rows_total"]:  # not silently, as for EMBEDDINGS' rows
        note(f"--sample-size {sample_size} is not below the {result['n_rows_total']} {unit} of --texts: "
             f"every one is measured.")
    sampled = f" (a sample of {n} of {result['n_rows_total']} {unit})" if n < result["n_rows_total"] else ""
    rows = f"{n} tokens x " if level == "token" else ""
    click.echo(f"{model} on {'standard input' if from_stdin else texts_path}: {len(texts)} texts, {level} level"
               + (f" ({pooling} pooling)" if level == "sentence" else "")
               + f", {rows}{result['n_features']} features per layer{sampled}", err=to_err)
    click.echo(format_table(result), err=to_err)
    from isotropy.measure.report import option_names

    errors = {name: option_names(message, n_neighbors_given=n_neighbors is not None)  # the command's words
              for name, message in result["errors"].items()}
    if json_path is not None:
        from isotropy._utils.threads import threads_in_effect
        from isotropy._utils.versions import package_versions
        from isotropy.measure._json_output import write_json_output

        record = {**result, "texts": str(texts_path), "text_column": text_column, "encoding": encoding,
                  "labels": None if labels_path is None else str(labels_path), "label_column": label_column,
                  "inputs": {**inputs, "model": model_identity(result["location"])},
                  "rows": [_json_safe(r) for r in result["rows"]], "errors": errors, "left_out": left_out,
                  "complete": not errors,
                  "threads": threads_in_effect(), "versions": package_versions(["gguf"])}
        write_json_output(json_path, record)
    if plot_path is not None:
        click.echo(str(plot_layers(result, plot_path)), err=to_err)
    if errors:  # as on an embeddings file: each failed metric in one line, then exit status 2
        from isotropy.measure.report import failed_line

        for name, message in errors.items():
            click.echo(f"Error: {name} (every layer): {message}", err=True)
        click.echo(failed_line(errors, result["metrics"], json_path), err=True)
        sys.exit(2)
