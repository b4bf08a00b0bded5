"""Fixes from a trial of the readers (fourth round): labels ending with a NUL character in text and CSV/TSV files,
the semicolon hint of read_embeddings for a decimal-comma export."""

from __future__ import annotations

import numpy as np
import pytest

from isotropy.io.labels import read_labels

# 1. a text or CSV/TSV label ending with a NUL character is refused naming its line, not merged with the label
# without it (numpy's string array drops trailing NULs: 'a\x00' became 'a'), as a .parquet one is (589e724)

_NUL = "ends with a NUL character"


@pytest.mark.parametrize(("name", "content", "where", "kwargs"), [
    ("y.txt", "a\x00\na\nb\n", "line 1", {}),
    ("y.txt", "a\nb\n\x00\n", "line 3", {}),  # a NUL alone became an empty label
    ("y.txt", "a\na\x00\nb\n\n\n", "line 2", {}),  # blank lines at the end: read line by line
    ("y.labels", "a\r\nb \x00 \r\n", "line 2", {}),  # stripped of spaces, the NUL last
    ("y.csv", "a\x00\na\nb\n", "line 1", {}),
    ("y.csv", "label\na\nb\x00\n", "line 3", {}),  # under a header
    ("y.tsv", "a\nb\x00\na\n", "line 2", {}),
    ("y.csv", "1,0\n1\x00,0\n0,1\n", "line 2, column 1", {}),  # a 0/1 cell: '1\x00' was read as 1
    ("y.csv", "text,label\nx,a\n\ny,a\x00\n", "line 4 of column 'label'", {"column": "label"}),
    ("y.tsv", "label\ttext\na\x00\tx\nb\ty\n", "line 2 of column 'label'", {"column": "label"}),
])
def test_a_label_ending_with_nul_is_refused_naming_its_line(tmp_path, name, content, where, kwargs):
    path = tmp_path / name
    path.write_bytes(content.encode())
    with pytest.raises(ValueError, match=f"{where} {_NUL}") as info:  # was read: 'a\x00' the same label as 'a'
        read_labels(path, **kwargs)
    assert "\n" not in str(info.value)
    assert "expected labels without a trailing NUL" in str(info.value)


def test_a_nul_inside_a_label_is_kept(tmp_path):
    path = tmp_path / "y.txt"
    path.write_bytes(b"a\x00b\na\n")  # numpy keeps a NUL that is not trailing: no merge, nothing to refuse
    assert read_labels(path).tolist() == ["a\x00b", "a"]


def test_a_nul_label_in_a_long_text_file_is_found_past_the_first_piece(tmp_path):
    path = tmp_path / "y.txt"
    path.write_bytes(b"a\n" * 200_000 + b"b\x00\n" + b"a\n" * 10)
    with pytest.raises(ValueError, match=f"line 200001 {_NUL}"):
        read_labels(path)


# 4. a European decimal-comma export (1,5;2,25;3) read as a .csv is said to look semicolon-separated with decimal
# commas, not only "column '5;2' is not numeric" (578d0d7 said so only of a first line with ';' and no comma)


def _decimal_comma_message(path, reason, semicolons, commas):
    return (f"Cannot read embeddings from {str(path)!r}: {reason}: its first line holds {semicolons} ';' and {commas}, "
            f"so the file looks semicolon-separated with decimal commas (1,5 for 1.5), but a .csv file is read "
            f"comma-separated; expected comma-separated numbers with decimal points: read it with "
            f"pandas.read_csv(path, sep=';', decimal=',') (header=None if it has no header line) and save it with "
            f"sep=',' (df.to_csv's default), or tab-separated as .tsv.")


@pytest.mark.parametrize(("text", "reason", "semicolons", "commas"), [
    ("1,5;2,25;3\n0,5;1,75;2\n", "column '5;2' is not numeric ('5;1' on line 2)", 2, "2 commas"),  # headerless
    ("1,5;2;3\n0,5;1,75;2\n", "column '5;2;3' is not numeric ('75;2' on line 2)", 2, "1 comma"),
    # all decimal: a number after the first field of line 1 ('5') makes it a data line, not a header
    ("1,5;2,25;3,5\n0,5;1,75;2,5\n", "column 1 is not numeric ('5;2' on line 1)", 2, "3 commas"),
    ("cat;1,5;2,25;3,5\ndog;0,5;1,75;2,5\n", "column 1 is not numeric ('5;2' on line 1)", 3, "3 commas"),
])
def test_a_decimal_comma_export_is_said_to_look_semicolon_separated(tmp_path, capsys, text, reason, semicolons,
                                                                    commas):
    from isotropy.cli import main
    from isotropy.io.embeddings import read_embeddings

    path = tmp_path / "x.csv"
    path.write_text(text)
    with pytest.raises(ValueError) as error:
        read_embeddings(path)  # said only "column '5;2' is not numeric ..."
    assert str(error.value) == _decimal_comma_message(path, reason, semicolons, commas)
    with pytest.raises(SystemExit) as exit_:
        main(["measure", str(path), "--metrics", "isoscore"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == f"Error: {_decimal_comma_message(path, reason, semicolons, commas)}\n"


def test_a_comma_separated_file_with_a_semicolon_in_a_cell_keeps_its_message(tmp_path):
    from isotropy.io.embeddings import read_embeddings

    path = tmp_path / "x.csv"
    path.write_text("a,b,c;d\n1,2,x\n")  # comma-separated, one ';' in a header cell: not a decimal-comma export
    with pytest.raises(ValueError) as error:
        read_embeddings(path)
    assert "semicolon" not in str(error.value) and "column 'c;d' is not numeric" in str(error.value)
    path.write_text("a,b,c\n1.5,2,3\n")
    assert read_embeddings(path)[0].tolist() == [[1.5, 2.0, 3.0]]


def test_a_json_lines_label_ending_with_nul_is_refused_naming_its_line(tmp_path):
    """The JSON-lines reader too: '{"l": "a\\u0000"}' read as the label 'a' (merged with the real 'a' cluster)."""
    import json

    from isotropy.io.labels import read_labels

    path = tmp_path / "y.jsonl"
    path.write_text(json.dumps({"l": "a"}) + "\n\n" + json.dumps({"l": "a\u0000"}) + "\n" + json.dumps({"l": "b"}) + "\n")
    with pytest.raises(ValueError, match=r"y\.jsonl': line 3's field 'l' ends with a NUL character \('a\\x00'\)"):
        read_labels(path, n_rows=3, column="l")
    path.write_text(json.dumps({"l": "a"}) + "\n" + json.dumps({"l": "a b"}) + "\n" + json.dumps({"l": "b"}) + "\n")
    assert read_labels(path, n_rows=3, column="l").tolist() == ["a", "a b", "b"]


def test_one_label_too_many_after_a_header_is_not_said_to_be_line_1(tmp_path):
    """A labels CSV headed 'label' with 5 labels for 4 rows said "line 1 '0' was read as a label, not a header"
    (a docs check): line 1 is the header, read as one."""
    (tmp_path / "yh.csv").write_text("label\n0\n1\n0\n1\n0\n")
    with pytest.raises(ValueError, match=r"it has 5 labels but the embeddings have 4 rows \(after the header line; "
                                         r"is the last line '0' a stray one\?\)"):
        read_labels(tmp_path / "yh.csv", n_rows=4)
    (tmp_path / "y.csv").write_text("0\n1\n0\n1\n0\n")
    with pytest.raises(ValueError, match=r"\(line 1 '0' was read as a label, not a header"):
        read_labels(tmp_path / "y.csv", n_rows=4)


# 5. data lines longer than the header: pandas read their leading fields as the row index and dropped them without a
# word ('a,b,c' over '1.5,2,3,4,7' read as [3, 4, 7]); they are refused naming the first data line, unless one
# field more than the header holds row names (R's write.table: words, or distinct integers), then read as the names

_FIELDS = "expected the same number of fields on every line."
_NO_NAME = "(its first field reads as no row name: not a word nor a distinct integer)"


@pytest.mark.parametrize(("text", "reason"), [
    ("a,b,c\n1.5,2,3,4,7\n2,3.5,4,5,8\n3,4,5.5,6,9\n", "line 2 has 5 fields, the header has 3"),  # was (3, 3)
    ("a,b,c\n\n1.5,2,3,4\n2,3.5,4,5\n3,4,5.5,6\n",  # a first field of fractions: a feature, not a row name
     f"line 3 has 4 fields, the header has 3 {_NO_NAME}"),
    ("a,b,c\n1,2,3,4\n1,3.5,4,5\n2,4,5.5,6\n",  # a repeated integer: no row name either
     f"line 2 has 4 fields, the header has 3 {_NO_NAME}"),
    ("a\nw,1,2\nv,3,4\n", "line 2 has 3 fields, the header has 1"),  # two leading fields, one a word: not R's
])
def test_data_lines_longer_than_the_header_are_refused_naming_the_first(tmp_path, text, reason):
    from isotropy.cli import cli
    from isotropy.io.embeddings import read_embeddings

    path = tmp_path / "extra.csv"
    path.write_text(text)
    message = f"Cannot read embeddings from {str(path)!r}: {reason}; {_FIELDS}"
    with pytest.raises(ValueError) as error:
        read_embeddings(path)  # was read, its leading fields dropped
    assert str(error.value) == message
    from click.testing import CliRunner

    result = CliRunner().invoke(cli, ["measure", str(path), "--metrics", "isoscore"])
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines()[-1] == f"Error: {message}"


@pytest.mark.parametrize(("first", "names"), [
    (["r1", "r2", "r3"], ["r1", "r2", "r3"]),  # R's write.table of named rows
    (['"1"', '"2"', '"3"'], ["1", "2", "3"]),  # ... of unnamed rows, quoted
    (["12", "5", "7"], ["12", "5", "7"]),  # ... of a subset
])
def test_row_names_before_a_shorter_header_are_read_as_the_names(tmp_path, first, names):
    from isotropy.io.embeddings import read_embeddings

    X = np.array([[1.5, 2.0, 3.0], [4.0, 5.5, 6.0], [7.0, 8.0, 9.5]])
    path = tmp_path / "r.csv"
    path.write_text('"a","b","c"\n' + "".join(f"{w},{','.join(map(str, x))}\n" for w, x in zip(first, X)))
    read, read_names = read_embeddings(path)
    np.testing.assert_array_equal(read, X)
    assert read_names == names  # were dropped (None)


# 6. a semicolon-separated export with decimal commas and a header line (df.to_csv(sep=';', decimal=',',
# index=False)) was read as one column of garbage (its header 'a;b;c' one name, '0,13;-0,13;0,64' split at the commas)


def _semicolon_export(path, rows=50):
    import pandas as pd

    frame = pd.DataFrame(np.random.default_rng(0).normal(size=(rows, 3)).round(2), columns=list("abc"))
    frame.to_csv(path, sep=";", decimal=",", index=False)
    return frame


def test_a_decimal_comma_export_with_a_header_is_said_to_look_semicolon_separated(tmp_path):
    from click.testing import CliRunner

    from isotropy.cli import cli
    from isotropy.io.embeddings import read_embeddings

    path = tmp_path / "semi_abc.csv"
    _semicolon_export(path)
    line2 = path.read_text().splitlines()[1]
    message = (f"Cannot read embeddings from {str(path)!r}: its header line holds 2 ';' and no comma and its line 2 "
               f"({line2!r}) reads as 3 ';'-separated numbers with decimal commas, so the file looks "
               f"semicolon-separated with decimal commas (1,5 for 1.5), but a .csv file is read comma-separated; "
               f"expected comma-separated numbers with decimal points: read it with pandas.read_csv(path, sep=';', "
               f"decimal=',') (header=None if it has no header line) and save it with sep=',' (df.to_csv's "
               f"default), or tab-separated as .tsv.")
    with pytest.raises(ValueError) as error:
        read_embeddings(path)  # was (50, 1) of garbage
    assert str(error.value) == message
    result = CliRunner().invoke(cli, ["measure", str(path), "--metrics", "isoscore"])
    assert result.exit_code == 2, result.output  # was "has 1 feature (column)"
    assert result.output.strip().splitlines()[-1] == f"Error: {message}"
    # with row names first (index=True) too
    path.write_text("word;a;b\ncat;1,5;2,25\ndog;0,5;-1\n")
    with pytest.raises(ValueError, match=r"its header line holds 2 ';' and no comma and its line 2 \('cat;1,5;2,25'\) "
                                         r"reads as 3 ';'-separated numbers with decimal commas \(a row name first\)"):
        read_embeddings(path)
    # the advice works: read so and saved comma-separated, it is the frame written
    import pandas as pd

    frame = _semicolon_export(path)
    pd.read_csv(path, sep=";", decimal=",").to_csv(tmp_path / "fixed.csv", index=False)
    np.testing.assert_array_equal(read_embeddings(tmp_path / "fixed.csv")[0], frame.to_numpy())


@pytest.mark.parametrize(("text", "expected", "names"), [
    ("x\n1.5\n2.5\n-3\n", [[1.5], [2.5], [-3.0]], None),  # one column under a header: as before
    ("x;y\n1.5\n2.5\n", [[1.5], [2.5]], None),  # a ';' in the one column's name
    ("name,x\na;b,1.5\nc;d,2.5\n", [[1.5], [2.5]], ["a;b", "c;d"]),  # ';' in row names of a comma-separated file
])
def test_one_column_files_and_semicolons_in_names_are_read_as_before(tmp_path, text, expected, names):
    from isotropy.io.embeddings import read_embeddings

    path = tmp_path / "one.csv"
    path.write_text(text)
    read, read_names = read_embeddings(path)
    np.testing.assert_array_equal(read, expected)
    assert read_names == names
