"""Fixes from a new user's trial of ``isotropy measure``: embeddings files whose layout was misread."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from isotropy import participation_ratio
from isotropy.io.embeddings import read_embeddings


def _low_rank(n=300, d=50, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, 20)) @ rng.normal(size=(20, d))).astype(np.float64)


@pytest.mark.parametrize(("sep", "suffix", "start"), [(",", ".csv", 0), ("\t", ".tsv", 0), (",", ".csv", 1)])
def test_row_numbers_of_a_headerless_table_are_row_names(tmp_path, sep, suffix, start):
    X = _low_rank()
    frame = pd.DataFrame(X)
    frame.index += start
    path = tmp_path / f"x{suffix}"
    frame.to_csv(path, header=False, sep=sep)
    read, names = read_embeddings(path)
    assert read.shape == (300, 50)
    np.testing.assert_allclose(read, X, rtol=1e-12)
    assert names[:3] == [str(start), str(start + 1), str(start + 2)]
    assert participation_ratio(read) == pytest.approx(participation_ratio(X), rel=1e-9)
    assert participation_ratio(read) > 10  # the row numbers as a feature gave 1.003


def test_a_first_column_that_is_not_the_row_numbers_stays_a_feature(tmp_path):
    X = _low_rank(n=6, d=3)
    X[:, 0] = [0, 1, 2, 2, 5, 4]  # integers, not 0..n-1 in order, and one repeated: no frame's index
    path = tmp_path / "x.csv"
    pd.DataFrame(X).astype({0: int}).to_csv(path, header=False, index=False)
    read, names = read_embeddings(path)
    assert read.shape == (6, 3) and names is None
    np.testing.assert_allclose(read[:, 0], [0, 1, 2, 2, 5, 4])
    # distinct integers in another order, beside features with fractions, are a shuffled frame's index (decided
    # 2026-12-07 after a user trial: df.sample(100).to_csv(header=False) was measured with its index as a feature)
    X[:, 0] = [0, 1, 2, 3, 5, 4]
    pd.DataFrame(X).astype({0: int}).to_csv(path, header=False, index=False)
    read, names = read_embeddings(path)
    assert read.shape == (6, 2) and names == ["0", "1", "2", "3", "5", "4"]


def _refused_alike(path, message, capsys):
    """``read_embeddings(path)`` refuses with ``message``, and ``isotropy measure path`` says it as its one line."""
    from isotropy.cli import main

    with pytest.raises(ValueError) as caught:
        read_embeddings(path)
    assert str(caught.value) == message
    with pytest.raises(SystemExit) as exit_:
        main(["measure", str(path), "--metrics", "isoscore"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == f"Error: {message}\n"


def _write_vectors(path, words, X):
    with open(path, "w") as handle:
        handle.writelines(f"{word} " + " ".join(f"{v:.6f}" for v in row) + "\n" for word, row in zip(words, X))


def test_glove_vectors_with_numeric_words_read_alike_as_txt_and_vec(tmp_path):
    X = _low_rank().astype(np.float32)
    words = [str(1900 + i) for i in range(300)]
    for suffix in (".txt", ".vec"):
        _write_vectors(tmp_path / f"nodes{suffix}", words, X)
        read, names = read_embeddings(tmp_path / f"nodes{suffix}")
        assert read.shape == (300, 50)
        assert names[:2] == ["1900", "1901"]
        np.testing.assert_allclose(read, X, atol=1e-6)


def test_numeric_text_matrices_stay_matrices(tmp_path):
    X = _low_rank(n=20, d=4)
    np.savetxt(tmp_path / "floats.txt", X)  # floats in every column: a matrix
    assert read_embeddings(tmp_path / "floats.txt")[0].shape == (20, 4)
    counts = np.arange(40).reshape(20, 2)
    np.savetxt(tmp_path / "ints.txt", counts, fmt="%d")  # all integers: a matrix
    read, names = read_embeddings(tmp_path / "ints.txt")
    assert read.shape == (20, 2) and names is None
    repeated = X.copy()
    repeated[:, 0] = np.arange(20) % 3  # integer but repeating first values: a feature, not ids
    with open(tmp_path / "repeat.txt", "w") as handle:
        handle.writelines(f"{int(row[0])} " + " ".join(f"{v:.6f}" for v in row[1:]) + "\n" for row in repeated)
    read, names = read_embeddings(tmp_path / "repeat.txt")
    assert read.shape == (20, 4) and names is None


def test_a_stray_text_column_of_a_parquet_file_is_named(tmp_path):
    path = tmp_path / "x.parquet"
    pd.DataFrame({"word": ["a", "b", "c"], "x": [1.0, 2.0, 3.0], "y": [2.0, 3.0, 1.0],
                  "note": ["ok", "fix", "ok"]}).to_parquet(path)
    with pytest.raises(ValueError) as caught:
        read_embeddings(path)
    assert str(caught.value) == (f"Cannot read embeddings from {str(path)!r}: column 'note' is not numeric ('ok' on "
                                 f"row 0); expected numbers in every column but the row names.")


def test_a_key_on_a_parquet_table_of_numbers_says_to_leave_it_out(tmp_path):
    """key='a' on a Parquet file of scalar columns offered 'one of []' (a Python API trial): there is no vector
    column to name, and the key is what to drop."""
    import pandas as pd

    pd.DataFrame(np.random.default_rng(0).normal(size=(5, 3)), columns=list("abc")).to_parquet(tmp_path / "i.parquet")
    with pytest.raises(ValueError, match=r"column 'a' does not hold vectors, and no column does \(the file is a table "
                                         r"of numbers, one feature per column\); expected no key \(--key\) for such a "
                                         r"table: leave it out\.$"):
        read_embeddings(tmp_path / "i.parquet", key="a")
    assert read_embeddings(tmp_path / "i.parquet")[0].shape == (5, 3)


def _glove_table(n=12, d=50):
    """A GloVe-like table: ``d`` float columns ``d0``..., as a user's pandas frame of vectors holds them."""
    return pd.DataFrame(_low_rank(n=n, d=d), columns=[f"d{i}" for i in range(d)])


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_text_column_of_a_parquet_table_is_refused_as_in_csv(tmp_path, suffix, capsys):
    """A 'pos' column inserted as the 11th of a Parquet table of 50 features was read as the row names, and the file
    measured without a word, while the same table as .csv was refused: both are refused alike now."""
    frame = _glove_table()
    frame.insert(10, "pos", ["NOUN", "VERB", "ADJ"] * 4)
    path = tmp_path / f"x{suffix}"
    frame.to_parquet(path) if suffix == ".parquet" else frame.to_csv(path, index=False)
    place = "row 0" if suffix == ".parquet" else "line 2"
    message = (f"Cannot read embeddings from {str(path)!r}: column 'pos' is not numeric ('NOUN' on {place}); "
               f"expected numbers in every column but the row names.")
    _refused_alike(path, message, capsys)


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_trailing_string_label_column_is_refused_pointing_at_label_column(tmp_path, suffix):
    """A trailing 'label' column of strings in a Parquet table was dropped silently (one of integers was refused
    with a hint); refused now as a non-numeric column, with the hint, in both formats."""
    frame = _glove_table()
    frame["label"] = ["pos", "neg", "neg"] * 4
    path = tmp_path / f"x{suffix}"
    frame.to_parquet(path) if suffix == ".parquet" else frame.to_csv(path, index=False)
    place = "row 0" if suffix == ".parquet" else "line 2"
    with pytest.raises(ValueError) as caught:
        read_embeddings(path)
    assert str(caught.value) == (
        f"Cannot read embeddings from {str(path)!r}: column 'label' is not numeric ('pos' on {place}); expected "
        f"numbers in every column but the row names; give the labels with --labels {path} --label-column label "
        f"(label_column= in Python), which also leaves the column out of the features.")
    read, names = read_embeddings(path, label_column="label")
    np.testing.assert_allclose(read, frame.drop(columns="label").to_numpy(), rtol=1e-12)
    assert names is None


def test_a_first_string_column_of_a_parquet_table_still_names_the_rows(tmp_path):
    frame = _glove_table()
    frame.insert(0, "word", [f"w{i}" for i in range(12)])
    frame["label"] = ["pos", "neg", "neg"] * 4
    frame.to_parquet(tmp_path / "x.parquet")
    read, names = read_embeddings(tmp_path / "x.parquet", label_column="label")
    assert read.shape == (12, 50) and names[:2] == ["w0", "w1"]
    # beside a column of vectors a text column anywhere still names the rows
    pd.DataFrame({"vector": list(read), "word": names}).to_parquet(tmp_path / "v.parquet")
    assert read_embeddings(tmp_path / "v.parquet")[1] == names


@pytest.mark.parametrize(("first", "said"), [("0,1,2,3", "4 numbers at commas"),
                                              ("0.5, 1.5, 2.5", "3 numbers at commas"),
                                              ("0,1,2,", "3 numbers at commas"),  # a trailing comma
                                              ("the,0.1,0.2,0.3", "3 numbers at commas after a word")])
def test_a_comma_separated_txt_file_is_said_to_be_one(tmp_path, first, said):
    """A .csv saved as .txt was "expected a word vector ..., got '0,1,2,3'" and the command for sentences."""
    path = tmp_path / "x.txt"
    path.write_text(f"{first}\n{first}\n")
    with pytest.raises(ValueError) as caught:
        read_embeddings(path)
    assert str(caught.value) == (f"{path}:1: expected a word vector '<word> <x1> ... <xd>' (a GloVe or word2vec text "
                                 f"file), got {first!r}: it splits into {said}, so the file looks comma-separated; "
                                 f"name it .csv to read it as a table.")
    path.write_text("a fine, warm film\n")  # a sentence with a comma stays one
    with pytest.raises(ValueError, match=r"got 'a fine, warm film'\. To embed sentences with a model"):
        read_embeddings(path)


def test_hidden_states_of_three_axes_are_refused_with_the_ways_to_make_rows(tmp_path, capsys):
    """(batch, seq, dim) hidden states were "(select one layer or reshape to 2-d first)", which names no sequence
    axis; the message gives the array's shape and the reshapes, with its own feature count, in one line."""
    path = tmp_path / "h.npy"
    np.save(path, np.zeros((20, 16, 384), dtype=np.float32))
    message = (f"Cannot read embeddings from {str(path)!r}: the array holds shape (20, 16, 384), 3-d; expected a 2-d "
               f"array of shape (n_samples, n_features): reshape it first, e.g. flatten hidden states (batch, seq, "
               f"dim) to (batch*seq, dim) with X.reshape(-1, 384), pool over the sequence with X.mean(axis=1), or "
               f"pick one layer of (layers, n, dim) with X[layer].")
    _refused_alike(path, message, capsys)
    np.save(path, np.zeros((2, 3, 4, 5)))
    with pytest.raises(ValueError) as caught:
        read_embeddings(path)
    assert str(caught.value).endswith("the array holds shape (2, 3, 4, 5), 4-d; expected a 2-d array of shape "
                                      "(n_samples, n_features): reshape it first, e.g. make every vector a row with "
                                      "X.reshape(-1, 5), or pick one layer or sample first.")
