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
                 r"not column names; expected --text-column giving the texts' column by its position, 1 to 7 \(as cut "
                 r"-f counts its 7 tab-separated columns\), or a first line naming them\.$")
    with pytest.raises(ValueError, match=no_header):
        read_texts(headerless)
    # its columns by position (1 to 7), every line a row; the scores beside the texts are refused, not embedded
    assert read_texts(headerless, column="6") == ["A man with a hard hat is dancing.", "A young child is riding a horse.",
                                                  'He said, "no, it is not".']
    with pytest.raises(ValueError) as caught:
        read_texts(headerless, column="5")
    assert str(caught.value) == (f"The text column '5', the 5th of 7 tab-separated columns (no header line), of "
                                 f"{str(headerless)!r} holds numbers only ('5.000', '4.750', '1.000'), not texts; "
                                 f"expected the position of the texts' column, from 1 to 7.")


def test_ragged_csv_lines_are_said_in_the_files_words(tmp_path):
    path = tmp_path / "rag.csv"
    path.write_text("the cat sat\na dog ran\nthe mat, red\n")
    with pytest.raises(ValueError) as caught:
        read_texts(path)
    assert str(caught.value) == (f"The texts file {str(path)!r} could not be read as csv: line 3 has 2 columns, the "
                                 f"lines above it 1; expected the same number of comma-separated columns on every "
                                 f"line (quote a text that holds a comma, or save the file as .txt, one text a line)")
    assert "C error" not in str(caught.value)



@pytest.mark.parametrize("suffix, sep", [(".csv", ","), (".tsv", "\t")])
@pytest.mark.parametrize("cell", ["abc", ""])
def test_a_first_row_of_numbers_with_one_bad_cell_is_not_taken_for_a_header(tmp_path, suffix, sep, cell, capsys):
    """A headerless table whose line 1 held one bad field (a word, or nothing) among its numbers lost that row
    silently, read as the column names (n - 1 rows measured), while the same field on line 51 is refused. Column
    names are never numbers with a fraction such as 0.418: line 1 is then data, and its bad field is refused."""
    import numpy as np
    from _cli import exiting_cli

    from isotropy.io import read_embeddings

    X = np.random.default_rng(0).normal(size=(6, 4)).round(4)
    lines = [sep.join(f"{v:.4f}" for v in row) for row in X]
    path = tmp_path / f"e{suffix}"
    path.write_text("\n".join(lines) + "\n")
    np.testing.assert_array_equal(read_embeddings(path)[0], X)  # the intact file: six rows
    fields = lines[0].split(sep)
    fields[2] = cell
    path.write_text("\n".join([sep.join(fields), *lines[1:]]) + "\n")
    if cell:
        with pytest.raises(ValueError) as caught:
            read_embeddings(path)
        problem = (f"Cannot read embeddings from {str(path)!r}: column 2 is not numeric ('abc' on line 1); expected "
                   f"numbers in every column but the row names.")
        assert str(caught.value) == problem
    else:  # the empty field is NaN, as lower down; the command refuses it at its row
        read = read_embeddings(path)[0]
        assert read.shape == (6, 4) and np.isnan(read[0, 2])
        np.testing.assert_array_equal(np.delete(read.ravel(), 2), np.delete(X.ravel(), 2))
        problem = (f"EMBEDDINGS {str(path)!r} has a non-finite value nan at row 0, column 2 (counted from 0: the row "
                   f"is line 1 of the file); expected finite numbers (no NaN or inf).")
    code, out, err = exiting_cli(["measure", str(path), "--metrics", "isoscore"], capsys)
    assert code == 2 and out == "" and err.strip().splitlines() == [f"Error: {problem}"]


def test_a_header_of_names_above_numbers_is_still_a_header(tmp_path):
    import numpy as np

    from isotropy.io import read_embeddings

    path = tmp_path / "e.csv"
    path.write_text("x,y,z\n0.5,1.5,2.5\n1.0,0.25,3.0\n")
    np.testing.assert_array_equal(read_embeddings(path)[0], [[0.5, 1.5, 2.5], [1.0, 0.25, 3.0]])
    path.write_text("word,dim_0,dim_1\nthe,0.5,1.5\ncat,1.0,0.25\n")  # a header over a column of row names
    X, names = read_embeddings(path)
    np.testing.assert_array_equal(X, [[0.5, 1.5], [1.0, 0.25]])
    assert names == ["the", "cat"]


@pytest.mark.parametrize("name, text", [("h.csv", "a,b\n"), ("h.csv", "a,b\n\n\n"), ("h.tsv", "a\tb\n"),
                                        ("h.csv", ",0,1\n"), ("h.csv", "word,0,1,2\n")])
def test_a_header_line_without_rows_is_said_so(tmp_path, name, text):
    """``pd.DataFrame(columns=[...]).to_csv(path)`` (or an export cut after its header) was refused as "column 'a' is
    not numeric": the columns hold nothing at all, no text."""
    from isotropy.io import read_embeddings

    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ValueError) as caught:
        read_embeddings(path)
    assert str(caught.value) == (f"Cannot read embeddings from {str(path)!r}: it has a header line and no rows; "
                                 f"expected rows of numbers, optionally a header and a first column of row names.")


def test_a_number_named_on_a_headerless_line_1_is_refused_not_read_as_a_column(tmp_path):
    """A headerless "id<TAB>text" file with --text-column 1 (the column's index, meant) read line 1's cell '1' as the
    name of the id column and measured the ids of lines 2 on as its texts; it is refused, naming what line 1 holds.
    A header of numbers over a column of texts (pandas' default names, written by to_csv) is still one."""
    headerless = tmp_path / "ids.tsv"
    headerless.write_text("1\thello world\n2\tanother sentence\n3\ta third one\n")
    with pytest.raises(ValueError) as caught:
        read_texts(headerless, column="1")
    assert str(caught.value) == (
        f"The texts file {str(headerless)!r} has no header line: line 1 holds data ('1', 'hello world'), not column "
        f"names, and --text-column '1' names one of its cells, a number like every value under it (an id, not a column "
        f"of texts); expected a first line naming its 2 tab-separated columns, one of them then named with "
        f"--text-column.")
    numbered = tmp_path / "numbered.tsv"
    numbered.write_text("0\t1\n7\thello world\n8\tanother sentence\n")
    assert read_texts(numbered, column="1") == ["hello world", "another sentence"]
