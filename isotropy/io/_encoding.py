"""Text files the toolkit reads (texts, labels): one encoding check, one decoding rule, one size cap, one way to
match a header name."""

from __future__ import annotations

import codecs

from isotropy._utils.errors import IsotropyValueError

__all__ = ["LABEL_HEADERS", "MAX_LINE_CHARS", "MAX_TEXT_FILE_BYTES", "ROW_ID_HEADERS", "header_name",
           "is_label_header", "is_row_id_header", "longest_line", "shorten", "text_codec", "undecodable", "wide_encoding"]

#: A texts file (``measure --model --texts``) or a labels text file is read into memory: past this size it is
#: refused, not read. A million sentences take about 100 MB; a forward pass over 1 GiB of text takes hours even on
#: a GPU.
MAX_TEXT_FILE_BYTES = 2**30
#: The longest line of a texts file: a text far past any model's context (they read 512 to 131,072 tokens). A file of
#: one 1 GB line was parsed whole first: pandas held 8.5 GB of it before any check.
MAX_LINE_CHARS = 2**20
# characters of a decoded text looked at a time by longest_line (as 4-byte code points: 64 MiB)
_LINE_SCAN = 2**24


def shorten(text: str, limit: int = 40) -> str:
    """``text`` cut to its first ``limit`` characters and ``…`` when longer: what an error message quotes of a value
    read from a file (a cell, a row name, a member's name), which may be a gigabyte long.

    >>> shorten("x" * 50, 5)
    'xxxxx…'
    >>> shorten("short")
    'short'
    """
    return text if len(text) <= limit else text[:limit] + "…"


def longest_line(text: str, limit: int = MAX_LINE_CHARS) -> tuple[int, int] | None:
    """``(line number from 1, its length so far)`` of the first line of ``text`` longer than ``limit`` characters,
    ``None`` when there is none; lines end at ``\\n`` or ``\\r``.

    Linear in ``len(text)``, in chunks of code points (numpy), whatever the file's encoding; no line is copied.

    Examples
    --------
    >>> longest_line("a\\nbbbb\\ncc", limit=3)
    (2, 4)
    >>> longest_line("a\\nbbb", limit=3) is None
    True
    >>> longest_line("a\\r\\nb\\r\\n" + "x" * 10, limit=5)  # \\r\\n is one line break
    (3, 10)
    """
    import numpy as np

    start, line = 0, 1  # where the current line starts, and its number
    for offset in range(0, len(text), _LINE_SCAN):
        # the chunk with a code point either side: \r\n is one break (at its \n, the \r not counted in the line)
        base = max(0, offset - 1)
        points = np.frombuffer(text[base:offset + _LINE_SCAN + 1].encode("utf-32-le", "surrogatepass"),
                               dtype=np.uint32)
        is_n, is_r = points == 10, points == 13
        lo, hi = offset - base, offset - base + min(_LINE_SCAN, len(text) - offset)
        at = np.flatnonzero((is_n | (is_r & ~np.append(is_n[1:], False)))[lo:hi]) + lo
        breaks = at + base
        crlf = is_n[at] & np.insert(is_r[:-1], 0, False)[at]
        pending = hi > lo and hi < points.size and is_r[hi - 1] and is_n[hi]  # a \r\n cut by the chunk's end
        ends = np.concatenate([breaks - crlf, [base + hi - pending]])
        lengths = ends - np.concatenate([[start], breaks + 1])
        over = np.flatnonzero(lengths > limit)
        if over.size:
            return line + int(over[0]), int(lengths[over[0]])
        if breaks.size:
            start, line = int(breaks[-1]) + 1, line + breaks.size
    return None


def undecodable(data: bytes, encoding: str) -> str | None:
    """``"line N, byte 0xNN"``: where ``data`` first fails to decode as ``encoding``, its line counted in the text
    decoded before it (so that a UTF-16 file names its own line, not one of its b"\\n" bytes); ``None`` where it decodes.

    >>> undecodable(b"the cat\\nun caf\\xe9\\n", "utf-8"), undecodable(b"ok", "utf-8")
    ('line 2, byte 0xe9', None)
    """
    try:
        data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[:exc.start].decode(encoding, errors="replace").count("\n") + 1
        return f"line {line}, byte 0x{data[exc.start]:02x}"
    return None


def text_codec(encoding, *, caller: str) -> tuple[str, str]:
    """``(name, decode_as)`` for ``encoding``, a text encoding Python's codecs know.

    ``name`` is the codec's canonical name (``"utf-8"``, ``"iso8859-1"``); ``decode_as`` is what to
    open or decode the file with: ``"utf-8-sig"`` for UTF-8, so that a leading byte-order mark is
    not read as text, else ``encoding`` itself. Codecs that are not text encodings (``rot13``,
    ``hex``, ``base64``, ``zlib``) and unknown names are refused in one line.
    """
    try:
        info = codecs.lookup(encoding)
    except (LookupError, TypeError):
        info = None
    if info is None or not getattr(info, "_is_text_encoding", True):
        raise IsotropyValueError(f"The 'encoding' parameter of {caller} must be a text encoding such as 'utf-8', "
                                 f"'latin-1' or 'cp1252'. Got {encoding!r} instead.")
    return info.name, ("utf-8-sig" if info.name == "utf-8" else encoding)


def header_name(cell) -> str:
    """A header cell, or a column name asked for, as names are matched: without a UTF-8 byte-order mark and the
    spaces around it (``read_embeddings(label_column=)`` and ``read_labels(column=)`` alike)."""
    return str(cell).strip().lstrip("\ufeff").strip()


#: Headers of a column of row numbers (compared case-insensitively, as :func:`header_name` gives them): ``id`` of
#: ``df.index.name = "id"; df.to_csv(path)``, ``index`` of ``df.reset_index()``, ``Unnamed: 0`` of a frame read back
#: with its unnamed index and saved again.
ROW_ID_HEADERS = frozenset({"id", "ids", "index", "idx", "row", "rows", "row_id", "rowid", "row_index", "row_idx",
                            "row_number", "unnamed: 0"})


def is_row_id_header(cell) -> bool:
    """Whether a header cell or column name is one of :data:`ROW_ID_HEADERS` (``ID``, ``Index``, ``Row_ID`` too)."""
    return header_name(cell).lower() in ROW_ID_HEADERS



#: Headers of a column of labels (compared case-insensitively, as :func:`header_name` gives them): the header line
#: of a one-column labels file (:func:`isotropy.io.labels.read_labels`), and the header of a column of integers in
#: a table of embeddings, refused rather than measured as a feature (:func:`isotropy.io.embeddings.read_embeddings`).
LABEL_HEADERS = frozenset({"label", "labels", "gold_label", "gold_labels", "gold", "class", "classes", "target",
                           "targets", "category", "categories", "cluster", "clusters", "tag", "tags", "sentiment",
                           "emotion", "intent", "topic"})
#: Headers of a one-column labels file too, but also names of features (the coordinates x, y): not refused in a table
#: of embeddings.
_FEATURE_LIKE_LABEL_HEADERS = frozenset({"y", "type", "types", "group", "groups"})


#: Endings of the name of a column of label ids (``label_id``, ``class_idx``, ``target-index``): the name less one of
#: them is one of :data:`LABEL_HEADERS`.
_ID_ENDINGS = ("_id", "_ids", "_idx", "_index", "-id", "-idx", "-index", " id", "id")


def is_label_header(cell, *, of_features: bool = False, columns=()) -> bool:
    """Whether a header cell or column name names labels: one of :data:`LABEL_HEADERS`, or such a name with an id
    ending (``label_id``, ``class_idx``), or, but for the header of a table of features (``of_features``), ``y``,
    ``type`` or ``group``. In a table of features ``y`` names labels too (scikit-learn's name for the target) unless
    one of its ``columns`` is named ``x`` (coordinates ``x, y``)."""
    name = header_name(cell).lower()
    if name in LABEL_HEADERS or any(name.endswith(end) and name[: -len(end)] in LABEL_HEADERS for end in _ID_ENDINGS):
        return True
    if of_features:
        return name == "y" and not any(header_name(column).lower() == "x" for column in columns)
    return name in _FEATURE_LIKE_LABEL_HEADERS


#: Bytes of a text file looked at for a UTF-16/UTF-32 encoding (:func:`wide_encoding`).
WIDE_SNIFF = 4096


def wide_encoding(data: bytes) -> tuple[str, str] | None:
    """``(encoding, why)`` when the first bytes of a file say it is UTF-16 or UTF-32 text: by its byte-order mark,
    or without one by the bytes themselves (UTF-32: they decode as UTF-32 without a NUL character, which no other
    text or binary data does; UTF-16: every other byte is NUL); else ``None``.

    >>> wide_encoding("a b\\n".encode("utf-16"))
    ('utf-16', 'it starts with a UTF-16 byte-order mark')
    >>> wide_encoding("a b\\n".encode("utf-32-be"))[0]
    'utf-32-be'
    >>> wide_encoding(b"plain") is None
    True
    """
    head = data[:WIDE_SNIFF]
    for mark, encoding in ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"),
                           (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16")):
        if head.startswith(mark):
            return encoding, f"it starts with a {encoding.upper()} byte-order mark"
    # UTF-32 without a mark: four bytes a character, each at most 0x10FFFF (UTF-16 or 8-bit text as UTF-32 is not)
    body = head[:len(head) - len(head) % 4] if len(data) > len(head) else head  # a cut head ends mid-character
    if len(body) >= 4 and len(body) % 4 == 0 and b"\x00" in body:
        for encoding in ("utf-32-le", "utf-32-be"):
            try:
                text = body.decode(encoding)
            except UnicodeDecodeError:
                continue
            if "\x00" not in text:
                return encoding, "its bytes decode as UTF-32 text, without a byte-order mark"
    if len(head) >= 4:
        for start, encoding in ((1, "utf-16-le"), (0, "utf-16-be")):
            if head[start::2].count(0) > len(head) // 4 and b"\x00" not in head[1 - start::2]:
                return encoding, "every other byte is NUL, as in UTF-16 text without a byte-order mark"
    return None
