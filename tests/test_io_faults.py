"""Readers against files that lie (issue 11, items 5 and 6): a header must agree with the file.

Each case was read wrongly before: a 4 x 2 ``np.savetxt`` integer file became a 3 x 1 word2vec
matrix, word2vec binary headers that understate the dimension or the count gave garbage or
dropped vectors, a stray word in column 0 of a CSV turned the column into row names, and a label
file with one line too many lost its first label to a "header" found by counting lines.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from click.testing import CliRunner

from isotropy import IsotropyValueError
from isotropy.cli import cli
from isotropy.io.embeddings import read_embeddings
from isotropy.io.labels import read_labels

VECTORS = np.random.default_rng(7).normal(size=(5, 3)).astype("<f4")


def _word2vec_binary(path, n_words, dim, X=VECTORS, newline=True):
    with open(path, "wb") as handle:
        handle.write(f"{n_words} {dim}\n".encode())
        handle.writelines(f"w{i} ".encode() + row.tobytes() + (b"\n" if newline else b"") for i, row in enumerate(X))
    return path


# issue 19: '3 1' then three rows of two numbers is a consistent word2vec header for 1-d vectors of the
# "words" 5, 7, 9 on its first lines; the file is 4 x 2. Without the .txt extension only a two-field first
# line looks like a word2vec header, so the 4-wide matrix is checked under .txt alone.
_INTEGER_MATRICES = [np.arange(8).reshape(4, 2), np.arange(6).reshape(3, 2), np.array([[3, 1], [5, 6], [7, 8], [9, 10]]),
                     np.array([[4, 1], [1, 2], [3, 4], [5, 6], [7, 8]])]


@pytest.mark.parametrize(("M", "name"), [(M, name) for M in _INTEGER_MATRICES for name in ("m.txt", "m.dat", "m")]
                         + [(np.arange(24).reshape(6, 4), "m.txt")])
def test_savetxt_integer_matrix_is_not_word2vec(tmp_path, M, name):
    # first line '0 1' / '0 1 2 3' / '3 1': integers that look like a header; decided on the whole file
    np.savetxt(tmp_path / name, M, fmt="%d")
    X, names = read_embeddings(tmp_path / name)
    assert names is None
    np.testing.assert_array_equal(X, M)


def test_word2vec_text_with_a_true_header_is_still_word_vectors(tmp_path):
    # numeric words and a header consistent with the file: word vectors (the count and width agree)
    (tmp_path / "w.txt").write_text("2 2\n1999 0.5 1.5\n2000 2.5 3.5\n")
    X, names = read_embeddings(tmp_path / "w.txt")
    assert names == ["1999", "2000"]
    np.testing.assert_array_equal(X, [[0.5, 1.5], [2.5, 3.5]])


@pytest.mark.parametrize("header,why", [("3 2", "has 2 word vectors but its header announces 3"),
                                        ("1 2", "has 2 word vectors but its header announces 1"),
                                        ("2 3", "expected a word and 3 numbers")])
def test_word2vec_text_header_that_lies_is_refused(tmp_path, header, why):
    (tmp_path / "w.vec").write_text(f"{header}\nthe 0.5 1.5\nof 2.5 3.5\n")
    with pytest.raises(IsotropyValueError, match=why):
        read_embeddings(tmp_path / "w.vec")


@pytest.mark.parametrize("newline", [True, False])
def test_word2vec_binary_with_a_true_header_reads_exactly(tmp_path, newline):
    X, names = read_embeddings(_word2vec_binary(tmp_path / "w.bin", 5, 3, newline=newline))
    assert names == [f"w{i}" for i in range(5)]
    np.testing.assert_array_equal(X, VECTORS)


@pytest.mark.parametrize("n_words,dim,why", [
    (5, 2, "goes on after the 5 vectors of 2 features"),  # understated dimension: no garbage vectors
    (4, 3, "goes on after the 4 vectors of 3 features"),  # understated count: no vector silently dropped
    (6, 3, "too short for the 6 vectors"),  # overstated count
    (5, 4, "too short for the 5 vectors of 4 float32"),  # overstated dimension
    (0, 3, "expected at least one word"),
])
def test_word2vec_binary_header_that_lies_is_refused(tmp_path, n_words, dim, why):
    with pytest.raises(IsotropyValueError, match=why):
        read_embeddings(_word2vec_binary(tmp_path / "w.bin", n_words, dim))


def test_csv_stray_word_in_column_0_is_an_error_not_row_names(tmp_path):
    (tmp_path / "x.csv").write_text("1.0,2.0,3.0\n4.0,5.0,6.0\noops,7.0,8.0\n")
    with pytest.raises(IsotropyValueError, match=r"column 0 is not numeric \('oops' on line 3\)"):
        read_embeddings(tmp_path / "x.csv")


def test_csv_column_of_words_is_row_names_even_with_a_numeric_word(tmp_path):
    (tmp_path / "x.csv").write_text("the,1.0,2.0\nof,4.0,5.0\n1999,7.0,8.0\n")
    X, names = read_embeddings(tmp_path / "x.csv")
    assert names == ["the", "of", "1999"]
    np.testing.assert_array_equal(X, [[1, 2], [4, 5], [7, 8]])


# ------------------------------------------------------------------------------ labels
def test_label_csv_with_a_stray_last_line_is_a_count_error_not_a_shift(tmp_path):
    (tmp_path / "y.csv").write_text("0\n1\n0\n1\nx\n")
    with pytest.raises(IsotropyValueError, match=r"it has 5 labels but the embeddings have 4 rows"):
        read_labels(tmp_path / "y.csv", n_rows=4)


@pytest.mark.parametrize("text,expected", [
    ("label\npos\nneg\npos\n", ["pos", "neg", "pos"]),  # a usual header name
    ("sentiment\n0\n1\n0\n", ["0", "1", "0"]),  # a word above integer labels
    ("pos\nneg\npos\n", ["pos", "neg", "pos"]),  # no header
    ("neg\nneg\npos\n", ["neg", "neg", "pos"]),  # a first label that repeats is a label
])
def test_label_header_is_judged_by_content(tmp_path, text, expected):
    (tmp_path / "y.csv").write_text(text)
    assert read_labels(tmp_path / "y.csv", n_rows=3).tolist() == expected
    assert read_labels(tmp_path / "y.csv", n_rows=None).tolist() == expected  # the count never decides


def test_label_header_word_without_a_count_check(tmp_path):
    (tmp_path / "y.csv").write_text("pos\nneg\npos\nneg\n")  # 4 labels for 3 rows: no header invented
    with pytest.raises(IsotropyValueError, match="it has 4 labels but the embeddings have 3 rows"):
        read_labels(tmp_path / "y.csv", n_rows=3)


def test_measure_refuses_the_savetxt_case_no_more(tmp_path):
    np.savetxt(tmp_path / "m.txt", np.array([[0, 1], [5, 3], [1, 8], [2, 2]]), fmt="%d")
    result = CliRunner().invoke(cli, ["measure", str(tmp_path / "m.txt"), "--metrics", "participation_ratio"])
    assert result.exit_code == 0, result.output
    assert "4 samples x 2 features" in result.stdout.splitlines()[0]


# ---------------------------------------------------------------- issue 19: nothing silently dropped, say what a path is
def test_word2vec_with_word_tokens_and_one_dimension_stays_word_vectors(tmp_path):
    (tmp_path / "w.txt").write_text("2 1\ncat 0.5\ndog 1.5\n")
    X, names = read_embeddings(tmp_path / "w.txt")
    assert names == ["cat", "dog"]
    np.testing.assert_array_equal(X, [[0.5], [1.5]])


def _special_paths(tmp_path):
    (tmp_path / "loop.npy").symlink_to(tmp_path / "loop.npy")
    (tmp_path / "dangling.npy").symlink_to(tmp_path / "gone.npy")
    os.mkfifo(tmp_path / "fifo.npy")
    return {"loop.npy": "symbolic link loop", "dangling.npy": "dangling symbolic link",
            "fifo.npy": "FIFO (named pipe)", "/dev/zero": "character device", "dir.npy": "is a directory"}


@pytest.mark.parametrize("reader", ["embeddings", "labels", "word_vectors", "texts"])
def test_a_path_that_is_not_a_file_is_named_for_what_it_is(tmp_path, reader):
    from isotropy.io.word_vectors import read_word_vectors
    from isotropy.measure.from_model import read_texts

    (tmp_path / "dir.npy").mkdir()
    read = {"embeddings": read_embeddings, "labels": lambda p: read_labels(p, n_rows=3),
            "word_vectors": read_word_vectors, "texts": read_texts}[reader]
    for name, kind in _special_paths(tmp_path).items():
        path = name if name.startswith("/") else tmp_path / name
        with pytest.raises(ValueError) as info:
            read(path)
        message = str(info.value)
        assert kind in message and str(path) in message and "does not exist" not in message.replace(
            "which does not exist", ""), message
        assert "\n" not in message


def test_measure_dev_zero_and_link_loop_are_one_line_exit_2(tmp_path):
    (tmp_path / "loop.npy").symlink_to(tmp_path / "loop.npy")
    for path, kind in (("/dev/zero", "character device"), (tmp_path / "loop.npy", "symbolic link loop")):
        result = CliRunner().invoke(cli, ["measure", str(path)])
        assert result.exit_code == 2 and kind in result.output and "does not exist" not in result.output
        assert result.output.count("\n") == 1, result.output


@pytest.mark.parametrize("how", ["glob", "directory"])
@pytest.mark.parametrize("kind", ["dangling", "loop", "fifo"])
def test_a_dangling_shard_is_an_error_that_names_it(tmp_path, how, kind):
    from isotropy.io.shards import read_shards

    root = tmp_path / "shards"
    root.mkdir()
    for k in range(2):
        np.save(root / f"part-{k}.npy", np.full((100, 3), float(k)))
    bad = root / "part-2.npy"
    if kind == "dangling":
        bad.symlink_to(tmp_path / "moved-away.npy")
    elif kind == "loop":
        bad.symlink_to(bad)
    else:
        os.mkfifo(bad)
    source = root if how == "directory" else root / "part-*.npy"
    with pytest.raises(ValueError, match="part-2.npy"):
        read_shards(source)
    result = CliRunner().invoke(cli, ["measure", str(source), "--metrics", "isoscore"])
    # no row count (the 200 rows of the two good shards) in the message; the path itself may hold any digits
    message = result.output.replace(str(tmp_path), "<tmp>")
    assert result.exit_code == 2 and "part-2.npy" in message and "200" not in message, result.output


@pytest.mark.parametrize("X", [np.zeros((1, 1), "<f4"), np.zeros((3, 4), "<f4"), np.full((2, 2), 1.0, "<f4")])
def test_word2vec_binary_whose_bytes_decode_as_text_is_still_binary(tmp_path, X):
    # float32 zeros are NUL bytes, valid UTF-8: the layout, not the decoding, says binary
    X_read, names = read_embeddings(_word2vec_binary(tmp_path / "w.bin", len(X), X.shape[1], X=X))
    assert names == [f"w{i}" for i in range(len(X))]
    np.testing.assert_array_equal(X_read, X)


def test_word_vector_text_reads_in_blocks_and_refuses_a_line_it_cannot_hold(tmp_path):
    """Rows parsed in float32 blocks give what numpy parses from the whole text; a 1 MiB+ line is one error."""
    from isotropy.io import word_vectors
    from isotropy.io.word_vectors import read_word_vectors

    rng = np.random.default_rng(3)
    n = 2 * word_vectors._ROWS_PER_BLOCK + 5  # three blocks, the last partial
    V = rng.normal(size=(n, 4)).astype(np.float32)
    lines = [f"w{i} " + " ".join(repr(float(v)) for v in row) for i, row in enumerate(V)]
    (tmp_path / "g.txt").write_text("\n".join(lines) + "\n")
    words, X = read_word_vectors(tmp_path / "g.txt")
    assert words == [f"w{i}" for i in range(n)] and X.dtype == np.float32
    np.testing.assert_array_equal(X, V)
    words, X = read_word_vectors(tmp_path / "g.txt", limit=word_vectors._ROWS_PER_BLOCK + 1)
    np.testing.assert_array_equal(X, V[: word_vectors._ROWS_PER_BLOCK + 1])
    (tmp_path / "long.txt").write_text("the 0.5 1.5\nof " + "0.25 " * 300_000 + "\n")
    with pytest.raises(IsotropyValueError, match=r"long.txt:2: a line of more than 1,048,576 characters"):
        read_word_vectors(tmp_path / "long.txt")
    with open(tmp_path / "nul.txt", "wb") as handle:  # a sparse file of NUL bytes: no line end anywhere
        handle.truncate(2**31)
    with pytest.raises(IsotropyValueError, match=r"nul.txt:1: a line of more than"):
        read_word_vectors(tmp_path / "nul.txt", binary=False)


def test_a_csv_label_column_is_refused_as_a_feature_and_left_out_when_named(tmp_path):
    """A 0/1 column headed 'label' changed IsoScore from 0.49 to another number without a word; now refused, and
    --labels FILE --label-column label reads the labels from it and measures the other columns."""
    import pandas as pd
    from sklearn.metrics import silhouette_score as sk_silhouette

    from isotropy import isoscore

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 5)) * np.linspace(0.2, 2, 5)
    y = (X[:, 0] > 0).astype(int)
    frame = pd.DataFrame(X)
    frame.insert(0, "label", y)  # pandas' header: "label,0,1,2,3,4" (numbers after a named column: still a header)
    frame.to_csv(tmp_path / "e.csv", index=False)
    with pytest.raises(IsotropyValueError, match=r"its column 'label' holds integer labels, not a feature .* "
                                                 r"--labels \S*/e.csv --label-column label"):  # the path as given
        read_embeddings(tmp_path / "e.csv")
    Z, names = read_embeddings(tmp_path / "e.csv", label_column="label")
    np.testing.assert_array_equal(Z, X)
    assert names is None
    with pytest.raises(IsotropyValueError, match=r"it has no column 'class' to leave out as labels"):
        read_embeddings(tmp_path / "e.csv", label_column="class")
    result = CliRunner().invoke(cli, ["measure", str(tmp_path / "e.csv"), "--labels", str(tmp_path / "e.csv"),
                                      "--label-column", "label", "--metrics", "isoscore,silhouette_score", "--json", "-"])
    assert result.exit_code == 0, result.output
    record = __import__("json").loads(result.stdout)
    assert record["n_features"] == 5 and record["label_column"] == "label"
    assert record["values"]["isoscore"] == pytest.approx(isoscore(X), rel=1e-12)
    assert record["values"]["silhouette_score"] == pytest.approx(sk_silhouette(X, y), rel=1e-9)
    pd.DataFrame({"x": X[:, 0], "y": np.round(X[:, 1])}).to_csv(tmp_path / "xy.csv", index=False)
    assert read_embeddings(tmp_path / "xy.csv")[0].shape == (60, 2)  # a coordinate named y is a feature


@pytest.mark.parametrize(("n_rows", "error"), [(-1, IsotropyValueError), (2.5, IsotropyValueError),
                                               (True, IsotropyValueError), ("2", TypeError)])
def test_read_labels_refuses_a_count_of_rows_that_is_no_count(tmp_path, n_rows, error):
    """n_rows=-1 was taken, and the labels then refused as "it has 2 labels but the embeddings have -1 rows"."""
    path = tmp_path / "labels.txt"
    path.write_text("a\nb\n")
    with pytest.raises(error, match=r"^The 'n_rows' parameter of read_labels must be an int in the range "
                                    r"\[0, inf\) or None\. Got .* instead\.$"):
        read_labels(path, n_rows=n_rows)
    assert read_labels(path, n_rows=2).tolist() == ["a", "b"]
