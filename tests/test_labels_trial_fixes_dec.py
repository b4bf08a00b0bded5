"""Fixes from a user trial of ``isotropy measure EMB --labels FILE``: UTF-16/UTF-32 labels files, pandas' header
``0`` and index column, and a column named as the label beside other 0/1 columns."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from isotropy.cli import main
from isotropy.io.labels import read_labels

LABELS = ["cat", "dog", "cat", "bird"]


def _refusal(path, **kwargs) -> str:
    with pytest.raises(ValueError) as caught:
        read_labels(path, **kwargs)
    return str(caught.value)


# 1. UTF-16 and UTF-32 files: said to be such, with the encoding that reads them (was: latin-1 advice, then NULs)

@pytest.mark.parametrize(("name", "encoding", "found", "why"), [
    ("u16.txt", "utf-16", "utf-16", "it starts with a UTF-16 byte-order mark"),
    ("u16.csv", "utf-16", "utf-16", "it starts with a UTF-16 byte-order mark"),
    ("u16le.txt", "utf-16-le", "utf-16-le", "every other byte is NUL, as in UTF-16 text without a byte-order mark"),
    ("u16be.tsv", "utf-16-be", "utf-16-be", "every other byte is NUL, as in UTF-16 text without a byte-order mark"),
    ("u32.txt", "utf-32", "utf-32", "it starts with a UTF-32 byte-order mark"),
    ("u32le.jsonl", "utf-32-le", "utf-32-le", "its bytes decode as UTF-32 text, without a byte-order mark"),
])
def test_a_wide_labels_file_is_named_with_its_encoding_and_read_in_it(tmp_path, name, encoding, found, why):
    path = tmp_path / name
    body = "".join(json.dumps({"y": y}) + "\n" for y in LABELS) if name.endswith(".jsonl") else "\n".join(LABELS) + "\n"
    path.write_bytes(body.encode(encoding))
    column = "y" if name.endswith(".jsonl") else None
    expected = f"expected its encoding given: encoding={found!r} in Python, --encoding {found} on the command line."
    assert _refusal(path, n_rows=4, column=column) == (
        f"Cannot read labels from {str(path)!r}: it is {found.upper()} text ({why}), not UTF-8 text; {expected}")
    # latin-1, the advice of the old message, decoded it to NUL characters between the letters
    assert _refusal(path, n_rows=4, column=column, encoding="latin-1") == (
        f"Cannot read labels from {str(path)!r}: it is {found.upper()} text ({why}), not iso8859-1 text "
        f"(encoding='latin-1'); {expected}")
    assert read_labels(path, n_rows=4, column=column, encoding=found).tolist() == LABELS
    # the family's name reads either byte order, the mark or the bytes telling which
    assert read_labels(path, n_rows=4, column=column, encoding=found[:6]).tolist() == LABELS


def test_a_wide_file_read_in_the_other_wide_encoding_or_byte_order_is_refused(tmp_path):
    path = tmp_path / "y.txt"
    path.write_bytes("cat\ndog\n".encode("utf-32"))
    assert _refusal(path, n_rows=2, encoding="utf-16") == (  # UTF-32 decodes as UTF-16, to NULs between letters
        f"Cannot read labels from {str(path)!r}: it is UTF-32 text (it starts with a UTF-32 byte-order mark), not "
        f"utf-16 text (encoding='utf-16'); expected its encoding given: encoding='utf-32' in Python, --encoding "
        f"utf-32 on the command line.")
    path.write_bytes("cat\ndog\n".encode("utf-16-le"))
    assert _refusal(path, n_rows=2, encoding="utf-16-be") == (
        f"Cannot read labels from {str(path)!r}: it is UTF-16-LE text (every other byte is NUL, as in UTF-16 text "
        f"without a byte-order mark), not utf-16-be text (encoding='utf-16-be'); expected its encoding given: "
        f"encoding='utf-16-le' in Python, --encoding utf-16-le on the command line.")
    # a byte-order mark read with the byte order named is no character of the first label ('\ufeffcat' was one)
    path.write_bytes("cat\ndog\n".encode("utf-16"))
    assert read_labels(path, n_rows=2, encoding="utf-16-le").tolist() == ["cat", "dog"]


def test_utf16_without_a_mark_or_a_byte_order_its_bytes_show_asks_for_the_order(tmp_path):
    """Python's decoder raised "UTF-16 stream does not start with BOM", a bare UnicodeError."""
    path = tmp_path / "y.txt"
    path.write_bytes("猫\n犬\n".encode("utf-16-be"))  # no NUL byte: the order is not in the bytes
    assert _refusal(path, n_rows=2, encoding="utf-16") == (
        f"Cannot read labels from {str(path)!r}: it does not start with a UTF-16 byte-order mark and its bytes do not "
        f"show its byte order (encoding='utf-16'); expected the byte order named: encoding='utf-16-le' in Python, "
        f"--encoding utf-16-le on the command line (or utf-16-be; or the file's own encoding, if it is not UTF-16).")
    assert read_labels(path, n_rows=2, encoding="utf-16-be").tolist() == ["猫", "犬"]


def test_the_command_names_the_encoding_of_utf16_labels_and_reads_them_with_it(tmp_path, capsys):
    X = np.random.default_rng(0).normal(size=(4, 3))
    np.save(tmp_path / "x.npy", X)
    labels = tmp_path / "u16.txt"
    labels.write_bytes("\n".join(LABELS).encode("utf-16"))
    args = ["measure", str(tmp_path / "x.npy"), "--labels", str(labels), "--metrics", "silhouette_score"]
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 2
    assert capsys.readouterr().err == (
        f"Error: Cannot read labels from {str(labels)!r}: it is UTF-16 text (it starts with a UTF-16 byte-order mark), "
        f"not UTF-8 text; expected its encoding given: --encoding utf-16.\n")
    main([*args, "--encoding", "utf-16", "--json", str(tmp_path / "out.json")])
    from isotropy import silhouette_score

    got = json.loads((tmp_path / "out.json").read_text())["values"]["silhouette_score"]
    assert got == pytest.approx(silhouette_score(X, LABELS), rel=1e-12)


# 2. pandas' header '0' and its index column

def test_pandas_header_0_above_word_labels_is_a_header(tmp_path):
    path = tmp_path / "y.csv"
    pd.Series(LABELS).to_csv(path, index=False)
    assert path.read_text() == "0\ncat\ndog\ncat\nbird\n"
    assert read_labels(path, n_rows=4).tolist() == LABELS
    assert read_labels(path).tolist() == LABELS  # by its content, without the count
    (tmp_path / "z.csv").write_text("0\ncat\n0\ndog\n")  # '0' lower down: a label, as any repeated first line is
    assert read_labels(tmp_path / "z.csv", n_rows=4).tolist() == ["0", "cat", "0", "dog"]


def test_pandas_header_0_above_integer_labels_is_named_by_the_count_error_with_the_option_that_reads_it(tmp_path):
    """'0' above integers is a label or pandas' header; the count does not decide (a stray last line is as likely):
    the error says which option reads it as the header, and that option does."""
    path = tmp_path / "y.csv"
    pd.Series([1, 2, 0, 2]).to_csv(path, index=False)
    assert _refusal(path, n_rows=4) == (
        f"Cannot read labels from {str(path)!r}: it has 5 labels but the embeddings have 4 rows (line 1 '0' was read "
        f"as a label, not a header; if it is the header pandas writes above an unnamed Series, "
        f"pd.Series(y).to_csv(path, index=False), read it as one: --label-column 0 (column= in Python); or is the "
        f"last line '2' a stray one?); expected one label per embedding row.")
    assert read_labels(path, n_rows=4, column="0").tolist() == ["1", "2", "0", "2"]
    assert read_labels(path).tolist() == ["0", "1", "2", "0", "2"]  # without a count: labels, as before


@pytest.mark.parametrize(("values", "name"), [([1, 2, 0, 2], None), (LABELS, None), (LABELS, "label")])
def test_pandas_default_index_column_is_left_out(tmp_path, values, name):
    """pd.Series(y).to_csv(path) was "a matrix of labels must hold 0/1 indicators; found '2'"."""
    path = tmp_path / "y.csv"
    pd.Series(values, name=name).to_csv(path)
    assert path.read_text().splitlines()[:2] == [f",{name or 0}", f"0,{values[0]}"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_labels(path, n_rows=4).tolist() == list(map(str, values))
    (tmp_path / "r.csv").write_text('"","label"\n"1","b"\n"2","a"\n"3","b"\n')  # R's write.csv: rows from 1
    assert read_labels(tmp_path / "r.csv", n_rows=3).tolist() == ["b", "a", "b"]


def test_pandas_index_with_0_1_columns_is_left_out_of_the_multi_label_table(tmp_path):
    path = tmp_path / "m.csv"
    pd.DataFrame({"a": [0, 1, 1], "b": [1, 1, 0], "c": [0, 0, 1]}).to_csv(path)
    np.testing.assert_array_equal(read_labels(path, n_rows=3), [[0, 1, 0], [1, 1, 0], [1, 0, 1]])


def test_pandas_index_that_is_not_the_rows_order_is_refused_naming_the_label_column(tmp_path):
    path = tmp_path / "y.csv"
    pd.Series([1, 2, 0], index=[3, 7, 9]).to_csv(path)  # a filtered frame's labels
    assert _refusal(path, n_rows=3) == (
        f"Cannot read labels from {str(path)!r}: its first column has no name on the header line, as pandas writes a "
        f"frame's index (to_csv without index=False), and it does not number the rows 0, 1, 2, ... in order (line 2 "
        f"holds '3'); expected the label column named: --label-column 0 (column= in Python), or the file written "
        f"with index=False.")
    assert read_labels(path, n_rows=3, column="0").tolist() == ["1", "2", "0"]


# 3. a column named as the label beside other 0/1 columns

@pytest.mark.parametrize(("header", "label", "others"), [
    ("label,is_test,flag", "label", "'is_test', 'flag'"),
    ("is_test,class_id,flag", "class_id", "'is_test', 'flag'"),
])
def test_a_label_column_beside_other_0_1_columns_is_refused_not_read_as_multi_label(tmp_path, header, label, others):
    """'label,is_test,flag' of 0/1 values was read as 3 multi-label columns (8 clusters), without a word."""
    path = tmp_path / "m.csv"
    path.write_text(f"{header}\n0,1,0\n1,0,1\n1,1,1\n0,0,0\n")
    assert _refusal(path, n_rows=4) == (
        f"Cannot read labels from {str(path)!r}: its header names the label column {label!r} beside 2 other 0/1 "
        f"columns ({others}), so it is not read as 3 multi-label 0/1 columns (each distinct row of them a cluster); "
        f"expected the label column named: --label-column {label} (column= in Python), or multi-label 0/1 columns "
        f"headed by their classes.")
    expected = {"label": ["0", "1", "1", "0"], "class_id": ["1", "0", "1", "0"]}[label]
    assert read_labels(path, n_rows=4, column=label).tolist() == expected


def test_classes_named_like_labellings_stay_multi_label(tmp_path):
    """'topic', 'target', 'sentiment' may be classes of multi-label columns (as documented): read as before."""
    path = tmp_path / "m.csv"
    path.write_text("sports,politics,topic,target\n0,1,1,0\n1,1,0,1\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(read_labels(path, n_rows=2), [[0, 1, 1, 0], [1, 1, 0, 1]])


def test_the_command_names_the_label_column_of_a_label_beside_0_1_flags(tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(4, 3)))
    labels = tmp_path / "m.csv"
    labels.write_text("label,is_test,flag\n0,1,0\n1,0,1\n1,1,1\n0,0,0\n")
    with pytest.raises(SystemExit) as exit_:
        main(["measure", str(tmp_path / "x.npy"), "--labels", str(labels), "--metrics", "silhouette_score"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == (
        f"Error: Cannot read labels from {str(labels)!r}: its header names the label column 'label' beside 2 other "
        f"0/1 columns ('is_test', 'flag'), so it is not read as 3 multi-label 0/1 columns (each distinct row of them a "
        f"cluster); expected the label column named: --label-column label, or multi-label 0/1 columns headed by their "
        f"classes.\n")
