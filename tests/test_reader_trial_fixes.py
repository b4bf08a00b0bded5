"""Fixes from a new user's trial of ``isotropy measure``: readers of texts, labels and embeddings."""

from __future__ import annotations

import pytest

from isotropy.measure.from_model import read_texts

STS_LINES = ["main-captions\tMSRvid\t2012test\t0000\t5.000\tA man with a hard hat is dancing.\tA man is dancing.",
             "main-captions\tMSRvid\t2012test\t0002\t4.750\tA young child is riding a horse.\tA child rides.",
             'main-forums\tdeft-forum\t2014\t0005\t1.000\tHe said, "no, it is not".\tShe said yes, I think.']


def test_a_one_column_csv_without_header_keeps_its_first_text(tmp_path):
    path = tmp_path / "plain.csv"
    path.write_text("the cat sat\na dog ran\nthe mat is red\nbirds fly\n")
    assert read_texts(path) == ["the cat sat", "a dog ran", "the mat is red", "birds fly"]
    (tmp_path / "plain.tsv").write_text("the cat sat\na dog ran\n")
    assert read_texts(tmp_path / "plain.tsv") == ["the cat sat", "a dog ran"]


@pytest.mark.parametrize("header", ["text", "Sentence", "clean_text"])
def test_a_one_column_csv_with_a_clear_header_drops_it(tmp_path, header):
    path = tmp_path / "t.csv"
    path.write_text(f"{header}\nthe cat sat\na dog ran\n")
    assert read_texts(path) == ["the cat sat", "a dog ran"]
    path.write_text(f"{header}\nthe cat sat\n{header}\n")  # the same line lower down: a text, not a header
    assert read_texts(path) == [header, "the cat sat", header]


def test_a_tab_separated_csv_is_read_as_tsv(tmp_path):
    path = tmp_path / "sts-dev.csv"
    path.write_text("\n".join(["g\tsrc\tyear\tid\tscore\tsentence1\tsentence2", *STS_LINES]) + "\n")
    assert read_texts(path, column="sentence1") == ["A man with a hard hat is dancing.",
                                                    "A young child is riding a horse.",
                                                    'He said, "no, it is not".']
    headerless = tmp_path / "headerless.csv"
    headerless.write_text("\n".join(STS_LINES) + "\n")
    # its first line is data (numbers, sentences): said so, not listed as its "columns"
    no_header = (r"has no header line: line 1 holds data \('main-captions', 'MSRvid', '2012test', '0000', \.\.\.\), "
                 r"not column names; expected a first line naming its 7 tab-separated columns, one of them then named "
                 r"with --text-column\.$")
    with pytest.raises(ValueError, match=no_header):
        read_texts(headerless)
    with pytest.raises(ValueError, match=no_header):
        read_texts(headerless, column="5")


def test_ragged_csv_lines_are_said_in_the_files_words(tmp_path):
    path = tmp_path / "rag.csv"
    path.write_text("the cat sat\na dog ran\nthe mat, red\n")
    with pytest.raises(ValueError) as caught:
        read_texts(path)
    assert str(caught.value) == (f"The texts file {str(path)!r} could not be read as csv: line 3 has 2 columns, the "
                                 f"lines above it 1; expected the same number of comma-separated columns on every "
                                 f"line (quote a text that holds a comma, or save the file as .txt, one text a line)")
    assert "C error" not in str(caught.value)

