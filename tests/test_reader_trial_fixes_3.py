"""Fixes from a new user's trial of ``isotropy measure`` (third round): row-id columns, malformed CSV lines, row names
pandas reads as missing, label header names, labels in a Parquet file."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from isotropy import isoscore
from isotropy.cli import main
from isotropy.io.embeddings import read_embeddings


def _gaussian(n=50, d=4, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


# 1. a row-id column with a header is row names, not a feature


@pytest.mark.parametrize("name", ["id", "ID", "index", "Index", "idx", "row", "row_id", "Row_ID", "Unnamed: 0"])
@pytest.mark.parametrize(("suffix", "sep"), [(".csv", ","), (".tsv", "\t")])
@pytest.mark.parametrize("start", [0, 1])
def test_a_headed_row_id_column_of_a_table_is_row_names(tmp_path, name, suffix, sep, start):
    X = _gaussian()
    frame = pd.DataFrame(X, columns=list("abcd"))
    frame.index += start
    frame.index.name = name
    path = tmp_path / f"p{suffix}"
    frame.to_csv(path, sep=sep)
    read, names = read_embeddings(path)
    assert read.shape == (50, 4)  # it was (50, 5): the row ids measured as a feature
    np.testing.assert_allclose(read, X, rtol=1e-15)
    assert names[:3] == [str(start), str(start + 1), str(start + 2)]


@pytest.mark.parametrize("name", ["id", "index", "IDX", "row_id"])
def test_a_row_id_column_of_a_parquet_table_is_row_names(tmp_path, name):
    X = _gaussian()
    frame = pd.DataFrame(X, columns=list("abcd"))
    frame.index.name = name
    frame.reset_index().to_parquet(tmp_path / "p.parquet")
    read, names = read_embeddings(tmp_path / "p.parquet")
    assert read.shape == (50, 4)
    np.testing.assert_allclose(read, X, rtol=1e-15)
    assert names[:2] == ["0", "1"]
    # beside a column of words, the words stay the row names and the ids are still not a feature
    frame.insert(0, "word", [f"w{i}" for i in range(50)])
    frame.reset_index().to_parquet(tmp_path / "w.parquet")
    read, names = read_embeddings(tmp_path / "w.parquet")
    np.testing.assert_allclose(read, X, rtol=1e-15)
    assert names[:2] == ["w0", "w1"]


def test_isotropy_measure_of_a_table_with_an_id_column_measures_the_features(tmp_path, capsys):
    X = _gaussian()
    frame = pd.DataFrame(X, columns=list("abcd"))
    frame.index.name = "id"
    frame.to_csv(tmp_path / "p.csv")
    frame.reset_index().to_parquet(tmp_path / "p.parquet")
    expected = isoscore(X)
    assert expected == pytest.approx(0.8846, abs=1e-4)
    for name in ("p.csv", "p.parquet"):
        main(["measure", str(tmp_path / name), "--metrics", "isoscore", "--json", str(tmp_path / "out.json")])
        got = json.loads((tmp_path / "out.json").read_text())["values"]["isoscore"]
        assert got == pytest.approx(expected, rel=1e-9)  # was 0.0085 with the ids as a fifth feature
    capsys.readouterr()


def test_a_row_id_header_over_numbers_with_a_fraction_or_elsewhere_stays_a_feature(tmp_path):
    X = _gaussian(n=6, d=3)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame.insert(0, "index", [0.5, 1, 2, 3, 5, 4])  # a measured quantity headed "index"
    frame.to_csv(tmp_path / "fraction.csv", index=False)
    frame.to_parquet(tmp_path / "fraction.parquet", index=False)
    for name in ("fraction.csv", "fraction.parquet"):
        read, names = read_embeddings(tmp_path / name)
        assert read.shape == (6, 4) and names is None
        np.testing.assert_array_equal(read[:, 0], [0.5, 1, 2, 3, 5, 4])
    # a column of the row numbers under a feature's name is a feature (only a row-id header says otherwise)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame.insert(0, "x", range(6))
    frame.to_csv(tmp_path / "x.csv", index=False)
    read, names = read_embeddings(tmp_path / "x.csv")
    assert read.shape == (6, 4) and names is None
    # only the first column: an "index" column after the features is one of them
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["index"] = range(6)
    frame.to_csv(tmp_path / "last.csv", index=False)
    frame.to_parquet(tmp_path / "last.parquet", index=False)
    for name in ("last.csv", "last.parquet"):
        read, names = read_embeddings(tmp_path / name)
        assert read.shape == (6, 4) and names is None
        np.testing.assert_array_equal(read[:, 3], range(6))


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".parquet"])
@pytest.mark.parametrize("name", ["id", "index", "Row_ID"])
def test_the_ids_of_a_shuffled_or_sampled_frame_are_row_names(tmp_path, suffix, name):
    X = _gaussian(n=200, d=4)
    frame = pd.DataFrame(X, columns=list("abcd"))
    frame.index.name = name
    sample = frame.sample(n=50, random_state=0)  # its index: 50 distinct integers of 0..199, in no order
    path = tmp_path / f"s{suffix}"
    if suffix == ".parquet":
        sample.reset_index().to_parquet(path)
    else:
        sample.to_csv(path, sep="\t" if suffix == ".tsv" else ",")
    read, names = read_embeddings(path)
    assert read.shape == (50, 4)  # was (50, 5): the ids measured as a feature
    np.testing.assert_allclose(read, sample.to_numpy(), rtol=1e-15)
    assert names == [str(i) for i in sample.index]
    assert isoscore(read) == pytest.approx(isoscore(sample.to_numpy()), rel=1e-12)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_integers_that_repeat_under_a_row_id_header_are_refused(tmp_path, suffix):
    frame = pd.DataFrame(_gaussian(n=6, d=3), columns=["a", "b", "c"])
    frame.insert(0, "id", [7, 3, 9, 3, 1, 2])
    path = tmp_path / f"r{suffix}"
    if suffix == ".parquet":
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)
    where = "lines 3 and 5" if suffix == ".csv" else "rows 1 and 3"
    with pytest.raises(ValueError) as error:
        read_embeddings(path)
    assert str(error.value) == (
        f"Cannot read embeddings from {str(path)!r}: its first column 'id' is headed as row ids but repeats the "
        f"integer 3 ({where}), so it neither names one row each nor is clearly a feature; expected distinct row ids "
        f"under a row-id header ('id' is read as row names then), or, if the column is a feature or a group, a header "
        f"that is not a row id's (id, index, row, ...).")
    # pandas' unnamed index ("Unnamed: 0") is the row names whatever it holds (frames concatenated)
    frame = frame.rename(columns={"id": "Unnamed: 0"})
    frame.to_csv(tmp_path / "u.csv", index=False)
    read, names = read_embeddings(tmp_path / "u.csv")
    assert names == ["7", "3", "9", "3", "1", "2"]
    np.testing.assert_allclose(read, frame[["a", "b", "c"]].to_numpy(), rtol=1e-15)


# 2. a malformed line is said as such, not read as a NaN


_FIELDS = "the same number of fields on every line"
_TRAILING = "no delimiter after the last value of a line"


@pytest.mark.parametrize(("text", "reason", "expected"), [
    ("a,b,c,d\n1.0,2.0,3.0,4.0\n1.0,2.0,3.0\n", "line 3 has 3 fields, the header has 4", _FIELDS),
    ("a,b,c,d\n1.0,2.0,3.0\n", "line 2 has 3 fields, the header has 4", _FIELDS),
    ("a,b,c,d\n1,2,3,4,\n5,6,7,8,\n",
     "line 2 has 5 fields, the header has 4 (its last field is empty: a trailing delimiter?)", _FIELDS),
    ("a,b,c,d,\n1,2,3,4,\n5,6,7,8,\n", "every line ends with an empty field, column 5 (a trailing delimiter?)",
     _TRAILING),
    ("1,2,3,\n4,5,6,\n", "every line ends with an empty field, column 4 (a trailing delimiter?)", _TRAILING),
    ("a,b,c\n1,2,3\n\n4,5,6,7\n1,2,3\n", "line 4 has 4 fields, the header has 3", _FIELDS),
    ("1,2,3\n4,5\n", "line 2 has 2 fields, line 1 has 3", _FIELDS),
    ("1,2,3\n4,5,6\n7\n", "line 3 has 1 field, line 1 has 3", _FIELDS),  # (was "1 fields")
    ("a,b,c\nr1,1,2,3\nr2,4,5\n", "line 3 has 3 fields, the header has 3 and the lines below it 4 (a row name first)",
     _FIELDS),
])
def test_a_malformed_csv_line_is_refused_naming_the_line(tmp_path, text, reason, expected):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ValueError) as error:
        read_embeddings(path)
    assert str(error.value) == f"Cannot read embeddings from {str(path)!r}: {reason}; expected {expected}."


def test_a_short_line_is_refused_by_isotropy_measure_in_one_line(tmp_path, capsys):
    path = tmp_path / "short.csv"
    path.write_text("a,b,c,d\n" + "0.5,0.1,0.2,0.3\n" * 10 + "1.0,2.0,3.0\n")
    with pytest.raises(SystemExit) as exit_:
        main(["measure", str(path), "--metrics", "isoscore"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err  # was "has a non-finite value nan at row 10, column 3"
    assert err == (f"Error: Cannot read embeddings from {str(path)!r}: line 12 has 3 fields, the header has 4; expected "
                   f"the same number of fields on every line.\n")


def test_an_empty_field_among_written_ones_is_a_nan_as_pandas_writes_it(tmp_path):
    """DataFrame.to_csv writes NaN as an empty field (a review: refusing it broke such files in the Python API,
    whose reader returns NaN as stored); isotropy measure refuses the NaN naming its row and column."""
    frame = pd.DataFrame({"a": [1.0, np.nan, 3.0], "b": [4.0, 5.0, np.nan]})
    frame.to_csv(tmp_path / "gaps.csv", index=False)
    read, _ = read_embeddings(tmp_path / "gaps.csv")
    np.testing.assert_array_equal(read, frame.to_numpy())
    with pytest.raises(SystemExit) as exit_:
        main(["measure", str(tmp_path / "gaps.csv"), "--metrics", "isoscore"])
    assert exit_.value.code == 2


@pytest.mark.parametrize(("name", "text", "line", "where"), [
    # header, blank line: the empty field of array row 1 is on the file's line 4
    ("gaps.csv", "a,b,c\n1,2,3\n\n4,,6\n7,8,9\n", 4, "row 1, column 1"),
    ("gaps.csv", "1,2,3\n4,5,\n", 2, "row 1, column 2"),  # no header
    ("gaps.csv", 'id,a,b\n0,1,2\n1,"3\n",4\n2,nan,5\n', 5, "row 2, column 0 (row name '2'"),  # a quoted line break
    ("gaps.tsv", "a\tb\n1\t2\n3\tinf\n", 3, "row 1, column 1"),
    ("m.txt", "# np.savetxt header\n1 2\n\n3 4 # note\n5 nan\n", 5, "row 2, column 1"),
    ("w.vec", "3 2\nthe 1 2\n\n# 1 nan\ncat 1 2\n", 4, "row 1, column 1 (row name '#'"),  # '#' is a word here
])
def test_a_non_finite_cell_of_a_text_file_is_named_at_its_line_too(tmp_path, capsys, name, text, line, where):
    """The NaN check names a cell by its array row and column from 0, which a header, blank lines and comments
    shift away from the file's lines (a user trial: an empty CSV cell on line 3, field 2 was "row 1, column 1")."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(SystemExit) as exit_:
        main(["measure", str(path), "--metrics", "isoscore"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"at {where}" in err and f"counted from 0: the row is line {line} of the file)" in err, err


def test_a_nan_written_as_nan_and_row_names_before_a_shorter_header_are_read(tmp_path):
    path = tmp_path / "nan.csv"
    path.write_text("a,b,c\n1,nan,3\n4,NaN,6\n")
    read, names = read_embeddings(path)
    np.testing.assert_array_equal(read, [[1, np.nan, 3], [4, np.nan, 6]])
    assert names is None
    # R's write.table: a header without the row names' column, every line one field longer
    path.write_text("a\tb\tc\nr1\t1\tnan\t3\nr2\t4\t5\t6\n")
    read, _ = read_embeddings(path.rename(tmp_path / "r.tsv"))
    np.testing.assert_array_equal(read, [[1, np.nan, 3], [4, 5, 6]])


# 3. row names that pandas reads as missing are the strings written


@pytest.mark.parametrize("header", ["word,a,b\n", ",a,b\n", ""])
@pytest.mark.parametrize("extra", [True, False])
def test_row_names_pandas_reads_as_missing_are_read_as_written(tmp_path, header, extra):
    words = ["NA", "nan", "null", "None", "n/a"] + (["cat"] if extra else [])
    X = np.arange(2.0 * len(words)).reshape(-1, 2)
    path = tmp_path / "names.csv"
    path.write_text(header + "".join(f"{w},{a:g},{b:g}\n" for w, (a, b) in zip(words, X)))
    read, names = read_embeddings(path)
    assert names == words  # were float nan (every one but 'cat'), or a column of NaN measured as a feature
    assert all(type(name) is str for name in names)
    np.testing.assert_array_equal(read, X)


def test_a_feature_column_keeps_its_missing_values(tmp_path):
    path = tmp_path / "x.tsv"
    path.write_text("a\tb\tc\nNA\t1\t2\n1.5\t3\t4\n2.5\tnan\t6\n")
    read, names = read_embeddings(path)
    assert names is None
    np.testing.assert_array_equal(read, [[np.nan, 1, 2], [1.5, 3, 4], [2.5, np.nan, 6]])


# 4. one list of label header names, for labels files and tables of embeddings


@pytest.mark.parametrize("name", ["gold_label", "Gold_Label", "sentiment", "label", "category", "target", "tag", "y",
                                  "class"])
def test_a_label_header_of_a_one_column_labels_file_is_a_header(tmp_path, name):
    from isotropy.io.labels import read_labels

    labels = np.random.default_rng(0).choice(["pos", "neg", "neutral"], 500)
    path = tmp_path / "labels.csv"
    path.write_text(name + "\n" + "".join(f"{label}\n" for label in labels))
    assert read_labels(path, n_rows=500).tolist() == labels.tolist()  # gold_label, sentiment: 501 labels


@pytest.mark.parametrize("name", ["sentiment", "gold_label", "Label"])
def test_an_integer_column_with_a_label_header_in_a_table_of_embeddings_is_refused(tmp_path, name):
    frame = pd.DataFrame(_gaussian(n=6, d=3), columns=["a", "b", "c"])
    frame[name] = [0, 1, 0, 1, 1, 0]
    path = tmp_path / "x.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(ValueError, match=f"its column '{name}' holds integer labels, not a feature"):
        read_embeddings(path)
    read, _ = read_embeddings(path, label_column=name)
    np.testing.assert_allclose(read, frame[["a", "b", "c"]].to_numpy(), rtol=1e-15)


@pytest.mark.parametrize("name", ["label", "sentiment", "Class"])
def test_an_integer_label_column_of_a_parquet_table_of_features_is_refused_as_in_csv(tmp_path, name, capsys):
    X = _gaussian(n=6, d=3)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame[name] = [0, 1, 0, 1, 1, 0]
    path = tmp_path / "x.parquet"
    frame.to_parquet(path, index=False)
    with pytest.raises(ValueError) as error:
        read_embeddings(path)  # was read as a fourth feature
    assert str(error.value) == (
        f"Cannot read embeddings from {str(path)!r}: its column '{name}' holds integer labels, not a feature (its "
        f"header says so); expected feature columns only: give the labels with --labels {path} --label-column {name} "
        f"(label_column= in Python), which also leaves the column out of the features.")
    read, _ = read_embeddings(path, label_column=name)
    np.testing.assert_allclose(read, X, rtol=1e-15)
    # a second label column beside the one named is refused too
    frame.assign(target=[1, 2, 1, 2, 1, 2]).to_parquet(path, index=False)
    with pytest.raises(ValueError, match=f"its column 'target' holds integer labels, not a feature .*, besides the "
                                         f"label column '{name}'"):
        read_embeddings(path, label_column=name)
    # isotropy measure says so in one line
    frame.to_parquet(path, index=False)
    with pytest.raises(SystemExit) as exit_:
        main(["measure", str(path), "--metrics", "isoscore"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_y_type_and_group_stay_features_of_a_table_of_embeddings(tmp_path):
    frame = pd.DataFrame({"x": [1, 2, 3, 4], "y": [3, 1, 4, 1], "group": [0, 1, 0, 1]})
    frame.to_csv(tmp_path / "xy.csv", index=False)
    read, _ = read_embeddings(tmp_path / "xy.csv")
    np.testing.assert_array_equal(read, frame.to_numpy())


# 5. labels in a Parquet file


def _hf_table(tmp_path, n=40):
    rng = np.random.default_rng(0)
    E, labels = rng.normal(size=(n, 8)), rng.integers(0, 3, n)
    pd.DataFrame({"text": [f"t{i}" for i in range(n)], "emb": list(E), "label": labels}).to_parquet(
        tmp_path / "hf.parquet")
    return E, labels


def test_labels_are_read_from_a_column_of_a_parquet_file(tmp_path):
    from isotropy.io.labels import read_labels

    _, labels = _hf_table(tmp_path)
    got = read_labels(tmp_path / "hf.parquet", n_rows=40, column="label")
    np.testing.assert_array_equal(got, labels)
    assert got.dtype.kind == "i"  # as stored
    assert read_labels(tmp_path / "hf.parquet", column="text")[:2].tolist() == ["t0", "t1"]
    # the only column that does not hold vectors needs no name
    pd.DataFrame({"emb": list(np.eye(3)), "label": ["a", "b", "a"]}).to_parquet(tmp_path / "one.parquet")
    assert read_labels(tmp_path / "one.parquet", n_rows=3).tolist() == ["a", "b", "a"]


@pytest.mark.parametrize(("column", "reason", "expected"), [
    (None, "it has 2 columns that do not hold vectors ['text', 'label']",
     "the name of the label column (--label-column; column= in Python)"),
    ("emb", "its column 'emb' holds vectors", "a column of one label per row"),
    ("nope", "it has no column 'nope' (its columns: ['text', 'emb', 'label'])", "the name of one of its columns"),
])
def test_a_parquet_label_column_that_is_not_one_is_refused(tmp_path, column, reason, expected):
    from isotropy.io.labels import read_labels

    _hf_table(tmp_path)
    path = tmp_path / "hf.parquet"
    with pytest.raises(ValueError) as error:
        read_labels(path, column=column)
    assert str(error.value) == f"Cannot read labels from {str(path)!r}: {reason}; expected {expected}."


@pytest.mark.parametrize(("values", "row", "shown"), [
    ([0, 1, None, 1], 2, "a missing value"), (["a", None, "b", "a"], 1, "a missing value"),
    (["a", "b", " ", "a"], 2, "it holds ' '"), ([0.5, 1.0, 2.0, float("nan")], 3, "a missing value"),
    ([0.5, float("inf"), 2.0, 1.0], 1, "it holds inf"),
])
def test_a_missing_parquet_label_is_refused_naming_the_row(tmp_path, values, row, shown):
    from isotropy.io.labels import read_labels

    path = tmp_path / "y.parquet"
    pd.DataFrame({"label": values}).to_parquet(path)
    with pytest.raises(ValueError) as error:
        read_labels(path, n_rows=4)
    assert str(error.value) == (f"Cannot read labels from {str(path)!r}: row {row} of column 'label' has no label "
                                f"({shown}); expected a label in every row.")
    pd.DataFrame({"label": [0, 1, 1]}).to_parquet(path)
    with pytest.raises(ValueError, match="it has 3 labels but the embeddings have 4 rows"):
        read_labels(path, n_rows=4)


def test_isotropy_measure_reads_labels_from_the_parquet_file_of_the_embeddings(tmp_path, capsys):
    from isotropy import silhouette_score

    E, labels = _hf_table(tmp_path)
    path = str(tmp_path / "hf.parquet")
    expected = silhouette_score(E, labels)
    main(["measure", path, "--key", "emb", "--labels", path, "--label-column", "label", "--metrics",
          "silhouette_score", "--json", str(tmp_path / "out.json")])
    got = json.loads((tmp_path / "out.json").read_text())["values"]["silhouette_score"]
    assert got == pytest.approx(expected, rel=1e-12)  # was "a .parquet file has no columns"
    # a table of one feature per column: the label column is left out of the features
    table = pd.DataFrame(E[:, :3], columns=["a", "b", "c"]).assign(label=labels)
    table.to_parquet(tmp_path / "t.parquet")
    X, _ = read_embeddings(tmp_path / "t.parquet", label_column="label")
    np.testing.assert_array_equal(X, E[:, :3])
    main(["measure", str(tmp_path / "t.parquet"), "--labels", str(tmp_path / "t.parquet"), "--label-column", "label",
          "--metrics", "silhouette_score", "--json", str(tmp_path / "out.json")])
    got = json.loads((tmp_path / "out.json").read_text())["values"]["silhouette_score"]
    assert got == pytest.approx(silhouette_score(E[:, :3], labels), rel=1e-12)
    capsys.readouterr()


def test_a_parquet_labels_file_passes_the_decompression_bomb_check_first(tmp_path, monkeypatch):
    from isotropy.io import embeddings
    from isotropy.io.labels import read_labels

    path = tmp_path / "y.parquet"
    pd.DataFrame({"label": [0, 1]}).to_parquet(path)
    monkeypatch.setattr(embeddings, "parquet_expansion_problem", lambda _: "column 'label' expands from 1 to 2 bytes")
    with pytest.raises(ValueError) as error:
        read_labels(path)
    assert str(error.value).startswith(f"Cannot read labels from {str(path)!r}: column 'label' expands from 1 to 2 "
                                       f"bytes; expected a Parquet file expanding at most 100x")


# 6. the label column of a Parquet table left out on dask (--workers, --scheduler) too


def test_read_shards_leaves_the_label_column_out_of_parquet_shards(tmp_path):
    from isotropy.io.shards import read_shards

    E, labels = _gaussian(n=30, d=3), np.arange(30) % 3
    frame = pd.DataFrame(E, columns=["a", "b", "c"]).assign(label=labels)
    frame.iloc[:20].to_parquet(tmp_path / "part-0.parquet", index=False)
    frame.iloc[20:].to_parquet(tmp_path / "part-1.parquet", index=False)
    X = read_shards(tmp_path, label_column="label")
    assert X.shape == (30, 3)  # was (30, 4), or refused as a column of integer labels
    np.testing.assert_array_equal(X.compute(), E)
    np.save(tmp_path / "part-2.npy", E[:2])
    with pytest.raises(ValueError) as error:
        read_shards(tmp_path, label_column="label")
    assert str(error.value) == (
        f"Cannot read embeddings from {str(tmp_path / 'part-2.npy')!r}: label_column='label' was given but .npy "
        f"shards have no named columns; expected no label_column with .npy shards (it names a column of .parquet "
        f"shards).")


@pytest.mark.parametrize("column", ["label", "speaker"])  # speaker: no label header, was silently a feature
def test_measure_workers_leaves_the_label_column_of_a_parquet_table_out_as_in_memory(tmp_path, capsys, column):
    from isotropy import silhouette_score

    rng = np.random.default_rng(3)
    labels = rng.integers(0, 3, 60)
    E = rng.normal(size=(60, 3)) + labels[:, None]
    path = tmp_path / "t.parquet"
    pd.DataFrame(E, columns=["a", "b", "c"]).assign(**{column: labels}).to_parquet(path, index=False)
    values = {}
    for options in ([], ["--workers", "1"]):
        out = tmp_path / f"m{len(options)}.json"
        main(["measure", str(path), "--labels", str(path), "--label-column", column, "--metrics",
              "isoscore,silhouette_score", "--json", str(out), "--no-progress", *options])
        record = json.loads(out.read_text())
        assert record["n_features"] == 3  # was 4 on dask: the labels measured as a feature
        values[len(options)] = record["values"]
    capsys.readouterr()
    assert values[0]["isoscore"] == pytest.approx(isoscore(E), rel=1e-12)
    assert values[0]["silhouette_score"] == pytest.approx(silhouette_score(E, labels), rel=1e-12)
    assert values[2]["isoscore"] == pytest.approx(values[0]["isoscore"], rel=1e-9)
    assert values[2]["silhouette_score"] == pytest.approx(values[0]["silhouette_score"], rel=1e-9)


# 7. a semicolon-separated file is said to be one


@pytest.mark.parametrize("text", ["a;b;c\n1.5;2;3\n4;5;6\n", "1.5;2;3\n4;5;6\n", "word;a;b\ncat;1;2\ndog;3;4\n"])
def test_a_semicolon_separated_csv_is_said_to_be_one(tmp_path, text, capsys):
    path = tmp_path / "x.csv"
    path.write_text(text)
    with pytest.raises(ValueError) as error:
        read_embeddings(path)  # said only "there are no numeric columns"
    assert str(error.value) == (
        f"Cannot read embeddings from {str(path)!r}: there are no numeric columns: its first line holds ';' and no "
        f"comma, so the file looks semicolon-separated, but a .csv file is read comma-separated; expected "
        f"comma-separated numbers: save it with sep=',' (df.to_csv's default), or tab-separated as .tsv.")
    path = path.rename(tmp_path / "x.tsv")
    with pytest.raises(SystemExit) as exit_:
        main(["measure", str(path), "--metrics", "isoscore"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == (
        f"Error: Cannot read embeddings from {str(path)!r}: there are no numeric columns: its first line holds ';' and "
        f"no tab, so the file looks semicolon-separated, but a .tsv file is read tab-separated; expected tab-separated "
        f"numbers: save it with sep='\\t', or comma-separated as .csv.\n")


def test_semicolons_below_a_first_line_without_one_keep_the_plain_message(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("name\na;b\nc;d\n")  # a one-column file of names: the first line says nothing of a separator
    with pytest.raises(ValueError, match="there are no numeric columns; expected numeric columns"):
        read_embeddings(path)


def test_a_parquet_shard_whose_later_rows_belie_its_first_is_refused_not_a_block_of_another_width(tmp_path):
    """read_shards decides a Parquet shard's columns from its first row: an 'id' of 0.0 there reads as row ids, but
    1.5 further on makes it a feature in the whole shard. The lazy array said (6, 2) and computed (6, 3) (a review);
    the chunk task now refuses the shard in one line."""
    import pandas as pd

    from isotropy.io.shards import read_shards

    frame = pd.DataFrame({"id": [0.0, 1.5, 2.0, 3.0, 4.0, 5.0], "a": np.arange(6.0), "b": np.arange(6.0) ** 2})
    frame.to_parquet(tmp_path / "s.parquet")
    assert read_embeddings(tmp_path / "s.parquet")[0].shape == (6, 3)  # in memory: a feature
    lazy = read_shards(tmp_path / "s.parquet")
    assert lazy.shape == (6, 2)
    with pytest.raises(ValueError, match=r"'.*s\.parquet': its rows read as 3 features, where its first row read as 2 "
                                         r"\(a first column headed as row ids, or a label column, holds other values"):
        lazy.compute()
    frame.assign(id=np.arange(6.0)).to_parquet(tmp_path / "ok.parquet")  # row ids throughout: as in memory
    np.testing.assert_array_equal(read_shards(tmp_path / "ok.parquet").compute(),
                                  read_embeddings(tmp_path / "ok.parquet")[0])


def test_the_line_of_a_cell_is_not_looked_for_in_a_file_too_large_to_read_twice(tmp_path, monkeypatch, capsys):
    """data_line reads the file twice on the error path: a file over _DATA_LINE_BYTES keeps the array's row only."""
    from isotropy.io import embeddings

    path = tmp_path / "gaps.csv"
    path.write_text("a,b\n1,2\n3,\n")
    assert embeddings.data_line(path, 1, 2, named=False) == 3
    monkeypatch.setattr(embeddings, "_DATA_LINE_BYTES", path.stat().st_size - 1)
    assert embeddings.data_line(path, 1, 2, named=False) is None
    with pytest.raises(SystemExit):
        main(["measure", str(path), "--metrics", "isoscore"])
    assert "at row 1, column 1; expected finite numbers" in capsys.readouterr().err  # the row only, no line
