"""A binary file handed to a reader of text (texts, labels, CSV embeddings) is said to be what it is.

``--texts e.npy --encoding latin-1`` measured 89 "texts" made of the array's bytes (every byte decodes as latin-1),
and a .npy saved as ``x.csv`` was "line 2 has 1 fields, the header has 5".
"""

from __future__ import annotations

import numpy as np
import pytest

from isotropy.io import read_embeddings, read_labels
from isotropy.io._paths import binary_kind
from isotropy.measure.from_model import read_texts


@pytest.fixture
def files(tmp_path):
    X = np.random.default_rng(0).normal(size=(30, 5))
    np.save(tmp_path / "x.npy", X)
    np.savez(tmp_path / "x.npz", X=X)
    (tmp_path / "nul.txt").write_bytes(b"pos\nn\x00eg\n")
    (tmp_path / "u16.txt").write_text("pos\nneg\n", encoding="utf-16")
    (tmp_path / "plain.txt").write_text("pos\nneg\n")
    return tmp_path


def test_binary_kind_names_the_format_and_leaves_text_alone(files):
    assert binary_kind(files / "x.npy") == "a .npy array (as np.save writes)"
    assert binary_kind(files / "x.npz").startswith("a zip archive")
    assert binary_kind(files / "nul.txt") == "binary data (it holds NUL bytes, which no text does)"
    assert binary_kind(files / "nul.txt", nul=False) is None and binary_kind(files / "x.npy", nul=False) is not None
    assert binary_kind(files / "u16.txt") is None  # UTF-16: the decoder asks for its encoding
    assert binary_kind(files / "u16.txt", encoding="utf-16") is None
    assert binary_kind(files / "plain.txt") is None
    assert binary_kind(files / "missing.txt") is None
    # text that merely starts like a format is text: the structure after the magic bytes is checked too
    (files / "g.txt").write_text("GGUF is a file format\nsecond line\n")
    (files / "p.txt").write_text("PAR1\nPAR2\n")
    (files / "j.jsonl").write_text('{"meta":{"src":"a"},"text":"a cat"}\n')
    (files / "be.txt").write_bytes("pos\nneg\n".encode("utf-16-be"))  # no byte-order mark
    for name in ("g.txt", "p.txt", "j.jsonl", "be.txt"):
        assert binary_kind(files / name) is None, name
    assert read_texts(files / "g.txt") == ["GGUF is a file format", "second line"]
    assert read_labels(files / "p.txt").tolist() == ["PAR1", "PAR2"]
    assert binary_kind(files / "be.txt", encoding="u16") is None  # an alias of utf-16
    # and the formats themselves, as their writers write them
    import pandas as pd
    from _tiny_models import make_tiny_gemma_gguf
    from safetensors.numpy import save_file

    pd.DataFrame({"a": [1, 2]}).to_parquet(files / "t.parquet")
    save_file({"x": np.zeros((2, 2), dtype=np.float32)}, str(files / "t.safetensors"))
    make_tiny_gemma_gguf(files / "t.gguf")
    assert binary_kind(files / "t.parquet") == "a Parquet file"
    assert binary_kind(files / "t.safetensors") == "a safetensors file"
    assert binary_kind(files / "t.gguf") == "a GGUF model file"


@pytest.mark.parametrize("name, encoding", [("x.npy", "latin-1"), ("x.npy", "utf-8"), ("nul.txt", "latin-1")])
def test_texts_from_a_binary_file_are_refused_whatever_the_encoding(files, name, encoding):
    kind = binary_kind(files / name)
    with pytest.raises(ValueError) as caught:
        read_texts(files / name, encoding=encoding)
    assert str(caught.value) == (f"The texts file {str(files / name)!r} is {kind}, not text; expected a text file "
                                 f"(one text a line), a CSV/TSV file or a JSON-lines file (embeddings are measured as "
                                 f"EMBEDDINGS, without --model).")


def test_labels_from_a_binary_file_named_as_text_are_refused(files):
    (files / "y.txt").write_bytes((files / "x.npy").read_bytes())
    with pytest.raises(ValueError, match=r"^Cannot read labels from '.*y\.txt': it is a \.npy array \(as np\.save "
                                         r"writes\), not \.txt text \(labels in a \.npy file are read from a file "
                                         r"named \.npy\); expected one label per line"):
        read_labels(files / "y.txt", encoding="latin-1")
    assert read_labels(files / "plain.txt").tolist() == ["pos", "neg"]


def test_a_npy_file_named_csv_is_said_to_be_one(files):
    (files / "x.csv").write_bytes((files / "x.npy").read_bytes())
    with pytest.raises(ValueError, match=r"^Cannot read embeddings from '.*x\.csv': it is a \.npy array \(as np\.save "
                                         r"writes\), not CSV text; name the file by its format"):
        read_embeddings(files / "x.csv")


@pytest.mark.parametrize("content", ["label,score\n0,0.5\n1,0.25\n", "id,label\n0,2\n1,3\n"])
def test_a_label_column_beside_others_is_not_read_as_indicators(tmp_path, content):
    """'label,score' was "a matrix of labels must hold 0/1 indicators; found '0.0'": a header naming a label column
    beside columns that are not all 0/1 asks for it by name."""
    (tmp_path / "y.csv").write_text(content)
    with pytest.raises(ValueError, match=r"its header names the label column 'label' beside 1 other column, and not "
                                         r"every column holds 0/1, so it is not a table of 0/1 indicator columns "
                                         r"\(multi-label\); expected the label column named: --label-column label "
                                         r"\(column= in Python\), or multi-label"):
        read_labels(tmp_path / "y.csv")
    assert read_labels(tmp_path / "y.csv", column="label").shape == (2,)


def test_multi_label_tables_stay_multi_label_and_a_two_column_one_named_as_a_label_warns(tmp_path):
    """Classes named like labels ('topic', 'target') are multi-label columns as before; 'label,x' of 0/1 values was
    silently two labels per row: it still is (it may be two classes), with a warning naming --label-column."""
    import warnings

    (tmp_path / "m.csv").write_text("sports,politics,topic\n0,1,1\n1,1,0\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_labels(tmp_path / "m.csv").tolist() == [[0, 1, 1], [1, 1, 0]]
    (tmp_path / "lx.csv").write_text("label,x\n0,1\n1,1\n")
    with pytest.warns(UserWarning, match=r"lx\.csv' is read as 2 multi-label 0/1 columns, 'label' and 'x'; if "
                                         r"'label' is the one label column, name it: --label-column label"):
        assert read_labels(tmp_path / "lx.csv").tolist() == [[0, 1], [1, 1]]


@pytest.mark.parametrize(("encoding", "said"), [
    ("utf-8", ("is not utf-8 text (byte 0xff on line 1: invalid start byte); give its encoding (--encoding utf-16: "
              "it starts with a UTF-16 byte-order mark).")),
    ("latin-1", ("holds a NUL character on line 1 (read as iso8859-1), which no text does; give its encoding "
                "(--encoding utf-16: it starts with a UTF-16 byte-order mark).")),
])
def test_a_utf16_file_is_said_to_be_one_and_never_read_as_latin1(tmp_path, encoding, said):
    """The first error suggested latin-1, which then read 'ÿþa\\x00 \\x00m\\x00...' and a text '\\x00' as texts."""
    path = tmp_path / "u16.txt"
    path.write_text("a man is dancing .\nA dog runs .\n" * 20, encoding="utf-16")
    with pytest.raises(ValueError) as caught:
        read_texts(path, encoding=encoding)
    assert str(caught.value) == f"The texts file {str(path)!r} {said}"
    assert read_texts(path, encoding="utf-16")[:2] == ["a man is dancing .", "A dog runs ."]
    (tmp_path / "u32.txt").write_text("a b\nc d\n", encoding="utf-32")
    with pytest.raises(ValueError, match=r"give its encoding \(--encoding utf-32: it starts with a UTF-32 byte-order"):
        read_texts(tmp_path / "u32.txt")


def test_nul_characters_after_decoding_are_refused_by_their_line(tmp_path):
    """A UTF-16 file's NUL bytes were left to its decoder; a NUL character it decodes to was then read as text."""
    (tmp_path / "n.txt").write_text("a man\nis\x00 dancing .\nA dog runs .\n", encoding="utf-16")
    with pytest.raises(ValueError) as caught:
        read_texts(tmp_path / "n.txt", encoding="utf-16")
    assert str(caught.value) == (f"The texts file {str(tmp_path / 'n.txt')!r} holds a NUL character on line 2 (read "
                                 f"as utf-16), which no text does; expected text without NUL characters (one text a "
                                 f"line, a CSV/TSV file or a JSON-lines file).")
    (tmp_path / "be.txt").write_bytes("a b\nc d\n".encode("utf-16-be"))  # no byte-order mark
    with pytest.raises(ValueError, match=r"line 1 \(read as utf-8\), which no text does; give its encoding "
                                         r"\(--encoding utf-16-be: every other byte is NUL"):
        read_texts(tmp_path / "be.txt")


@pytest.mark.parametrize("written", ["utf-32", "utf-32-le", "utf-32-be"])
@pytest.mark.parametrize("read", ["utf-8", "utf-16", "utf-16-le", "latin-1"])
def test_a_utf32_file_is_said_to_be_utf32_whatever_it_is_read_as(tmp_path, written, read):
    """Read as UTF-16 (--encoding utf-16), a UTF-32 file decodes to NULs between its letters, and the message said
    only "expected text without NUL characters"; read as UTF-8 without its byte-order mark, the same. The message now
    names UTF-32: by its byte-order mark, or (without one) by its bytes decoding as UTF-32 text."""
    path = tmp_path / "u32.txt"
    path.write_text("a man is dancing .\nA dog runs .\n" * 20, encoding=written)
    why = ("it starts with a UTF-32 byte-order mark" if written == "utf-32" else
           "its bytes decode as UTF-32 text, without a byte-order mark")
    with pytest.raises(ValueError) as caught:
        read_texts(path, encoding=read)
    said = str(caught.value)
    assert said.startswith(f"The texts file {str(path)!r} ")
    assert said.endswith(f"; give its encoding (--encoding {written}: {why}).")
    assert read_texts(path, encoding=written)[:2] == ["a man is dancing .", "A dog runs ."]  # the encoding it names


def test_utf32_is_not_guessed_for_other_text(tmp_path):
    """UTF-16 text (with or without its mark) is still said to be UTF-16; text read as its own UTF-32 that holds a
    NUL character is refused for the NUL, with no other encoding named."""
    (tmp_path / "le.txt").write_bytes("a b\nc d\n".encode("utf-16-le"))
    with pytest.raises(ValueError, match=r"\(--encoding utf-16-le: every other byte is NUL"):
        read_texts(tmp_path / "le.txt")
    (tmp_path / "n.txt").write_text("a man\nis\x00 dancing .\nA dog runs .\n", encoding="utf-32")
    with pytest.raises(ValueError) as caught:
        read_texts(tmp_path / "n.txt", encoding="utf-32")
    assert str(caught.value).endswith("on line 2 (read as utf-32), which no text does; expected text without NUL "
                                      "characters (one text a line, a CSV/TSV file or a JSON-lines file).")
