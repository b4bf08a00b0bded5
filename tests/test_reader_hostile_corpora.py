"""Hostile-input review of the readers: corpus text files (``load_text_file``, ``load_corpus``, the named corpora).

- A file that is not text in its encoding (a latin-1 ``café``, a binary file, a UTF-16 export) was a
  ``UnicodeDecodeError`` traceback from deep in the codec ("'utf-8' codec can't decode byte 0xe9 in position 3");
  ``layer-geometry`` reads a user's corpus so. It is refused in one line naming the file, the line and the byte.
"""

from __future__ import annotations

import re

import pytest

from isotropy._utils.errors import IsotropyValueError
from isotropy.datasets.corpora import PUBLISHED, load_corpus, load_text_file, load_wikitext2


def test_a_latin1_corpus_is_refused_naming_its_line_and_byte(tmp_path):
    path = tmp_path / "c.txt"
    path.write_bytes(b"the cat sat\n\nun caf\xe9 au lait\n")
    for load in (load_text_file, load_corpus):
        with pytest.raises(IsotropyValueError) as err:
            load(path)
        assert str(err.value) == (f"The corpus file {str(path)!r} is not utf-8 text (line 3, byte 0xe9); expected a "
                                  f"plain-text file in its encoding (encoding='latin-1', 'cp1252', ...).")
    # read in its encoding, it is the words written
    assert load_text_file(path, encoding="latin-1").lines == [["the", "cat", "sat"], ["un", "café", "au", "lait"]]


def test_a_binary_or_utf16_file_is_refused_in_one_line(tmp_path):
    path = tmp_path / "c.txt"
    path.write_bytes(bytes(range(256)) * 4)  # bytes 0-10 decode: line 2 (after 0x0a) starts at 0x0b, then 0x80
    with pytest.raises(IsotropyValueError, match=r"is not utf-8 text \(line 2, byte 0x80\)") as err:
        load_text_file(path)
    assert "\n" not in str(err.value)
    path.write_text("a b\nc d\n", encoding="utf-16")
    with pytest.raises(IsotropyValueError, match=r"is not utf-8 text \(line 1, byte 0xff\)"):
        load_text_file(path)


def test_a_named_corpus_that_is_not_utf8_is_refused_in_one_line(tmp_path):
    folder = tmp_path / "wikitext-2"
    folder.mkdir()
    (folder / "wiki.valid.tokens").write_bytes(b" = Title = \n a b \n c \xff d \n")
    with pytest.raises(IsotropyValueError) as err:
        load_wikitext2("validation", data_dir=tmp_path)
    assert str(err.value) == (f"The corpus file {str(folder / 'wiki.valid.tokens')!r} is not utf-8 text (line 3, byte "
                              f"0xff); expected UTF-8 text, as wikitext-2 is published at {PUBLISHED['wikitext-2']}.")


def test_a_corpus_path_that_is_no_file_is_said_as_what_it_is(tmp_path):
    """/dev/zero, a FIFO or a folder was 'does not exist' (is_file() is False for them), and an unknown encoding a
    LookupError from the codecs; each is now one line saying what it is."""
    import os

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for path, kind in ((tmp_path, "is a directory"), (fifo, "is a FIFO (named pipe)"),
                       ("/dev/zero", "is a character device")):
        with pytest.raises(IsotropyValueError, match=rf"^The corpus file '{path}' {re.escape(kind)}, not a regular "
                                                     rf"file: expected a plain-text file"):
            load_text_file(path)
    with pytest.raises(FileNotFoundError, match=r"^The corpus file '.*absent.txt' does not exist: expected"):
        load_text_file(tmp_path / "absent.txt")
    text = tmp_path / "c.txt"
    text.write_text("a b\n")
    with pytest.raises(IsotropyValueError, match=r"^The 'encoding' parameter of load_text_file must be a text encoding "
                                                 r"such as 'utf-8', 'latin-1' or 'cp1252'. Got 'utf-9' instead.$"):
        load_text_file(text, encoding="utf-9")
    assert load_text_file(text, encoding="latin-1").lines == [["a", "b"]]


def test_a_utf16_corpus_is_refused_naming_its_own_line(tmp_path):
    """The line of the bad byte was found by splitting the file at its b"\\n" bytes: right for UTF-8 and latin-1, but a
    UTF-16 file with a lone surrogate on line 4 was said to fail on 'line 1, byte 0x0a' (a review)."""
    path = tmp_path / "u16.txt"
    path.write_bytes("a b\nc d\ne f\n".encode("utf-16-le") + b"\x00\xd8" + "x\n".encode("utf-16-le"))
    with pytest.raises(IsotropyValueError, match=r"is not utf-16-le text \(line 4, byte 0x00\)"):
        load_text_file(path, encoding="utf-16-le")
