"""The text encoding of a file the toolkit reads as text (texts, labels): one check, one decoding rule."""

from __future__ import annotations

import codecs

from isotropy._utils.errors import IsotropyValueError

__all__ = ["text_codec"]


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
