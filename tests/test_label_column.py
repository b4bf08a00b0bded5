"""``--labels FILE --label-column COL`` and the refusal of a label column measured as a feature (review fixes).

Each case was wrong before: a header cell with a UTF-8 byte-order mark or spaces around its name was not
found by ``--label-column`` (and a numbered header behind a BOM was read as a row of data), the advice
of the refusal could not be pasted for a path with a space, a second label column beside the one named
by ``--label-column`` was measured as a feature, and ``--label-column`` with ``.npy`` labels was ignored.
"""

from __future__ import annotations

import json
import shlex

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.metrics import silhouette_score

from isotropy import IsotropyValueError, isoscore
from isotropy.cli import cli
from isotropy.io.embeddings import read_embeddings
from isotropy.io.labels import read_labels

X = np.random.default_rng(3).normal(size=(30, 3)) * [0.5, 1.0, 2.0]
Y = np.arange(30) % 2


def _table(path, header: str, *, bom: bool = False, extra=None):
    """A CSV of the 0/1 labels ``Y`` (first), optionally ``extra`` integer columns, and the features ``X``."""
    lines = [header]
    for i, (label, row) in enumerate(zip(Y, X)):
        cells = [str(int(label)), *([str(int(extra[i]))] if extra is not None else []), *(repr(float(v)) for v in row)]
        lines.append(",".join(cells))
    path.write_text(("\ufeff" if bom else "") + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def measure(*args):
    return CliRunner().invoke(cli, ["measure", *map(str, args)])


def _one_line_error(result) -> str:
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "Usage:" not in result.output, result.output
    return lines[0]


@pytest.mark.parametrize(("header", "bom"), [("label,a,b,c", True), (" label , a, b, c", False),
                                             ("\ufeff label,a,b,c", False)])
def test_the_label_column_is_found_behind_a_bom_or_spaces(tmp_path, header, bom):
    path = _table(tmp_path / "e.csv", header, bom=bom)
    with pytest.raises(IsotropyValueError, match=r"holds integer labels, not a feature .* --label-column label "):
        read_embeddings(path)
    Z, names = read_embeddings(path, label_column="label")
    np.testing.assert_array_equal(Z, X)
    assert names is None
    result = measure(path, "--labels", path, "--label-column", "label", "--metrics", "isoscore,silhouette_score",
                     "--json", "-")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["n_features"] == 3 and record["n_clusters"] == 2
    assert record["values"]["isoscore"] == pytest.approx(isoscore(X), rel=1e-12)


@pytest.mark.parametrize(("header", "bom", "column"), [
    ("\ufeff label ,a,b,c", True, "label"),  # a second byte-order mark (the codec drops the first) and spaces
    (" \ufeff label,a,b,c", False, "label"),  # a space before the mark
    (" label ,a,b,c", True, " label "),  # spaces around the name asked for
    ("label,a,b,c", False, "\ufeff label"),  # a mark pasted into the name asked for
])
def test_one_label_column_names_the_column_for_both_readers(tmp_path, header, bom, column):
    """read_embeddings(label_column=) left out a column read_labels(column=) did not find (it compared the names as
    they were): names are matched one way, in both readers, for the header and the column asked for."""
    path = _table(tmp_path / "e.csv", header, bom=bom)
    Z, _ = read_embeddings(path, label_column=column)
    np.testing.assert_array_equal(Z, X)
    assert read_labels(path, n_rows=len(Y), column=column).tolist() == [str(v) for v in Y]
    result = measure(path, "--labels", path, "--label-column", column, "--metrics", "isoscore,silhouette_score",
                     "--json", "-")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["n_features"] == 3 and record["n_clusters"] == 2


def test_read_labels_refuses_two_columns_of_the_name_asked_for(tmp_path):
    """As read_embeddings refuses them: which of the two holds the labels is not guessed."""
    path = tmp_path / "t.csv"
    path.write_text("label,text, label \n0,a,1\n1,b,0\n")
    with pytest.raises(IsotropyValueError, match=r"its header has 2 columns named 'label'; expected one column of that "
                                                 r"name to read the labels from\.$"):
        read_labels(path, n_rows=2, column="label")


def test_a_header_name_behind_a_second_byte_order_mark_is_a_header(tmp_path):
    path = tmp_path / "y.csv"
    path.write_text("\ufeff\ufeff label\npos\nneg\n", encoding="utf-8")
    assert read_labels(path, n_rows=2).tolist() == ["pos", "neg"]


def test_two_columns_of_the_same_name_but_for_spaces_are_refused(tmp_path):
    path = _table(tmp_path / "e.csv", "label, label ,a,b,c", extra=np.arange(30) % 3)
    with pytest.raises(IsotropyValueError, match=r"its header has 2 columns named 'label'; expected one column"):
        read_embeddings(path, label_column="label")


@pytest.mark.parametrize("header", ["\ufeff0,1,2", " 0, 1, 2"])
def test_a_numbered_header_behind_a_bom_or_spaces_is_a_header(tmp_path, header):
    """pandas' header of an unnamed frame, 0, 1, 2: with a BOM or spaces it was read as a row of data."""
    path = tmp_path / "n.csv"
    path.write_text(header + "\n" + "".join(",".join(repr(float(v)) for v in row) + "\n" for row in X),
                    encoding="utf-8")
    Z, _ = read_embeddings(path)
    np.testing.assert_array_equal(Z, X)


def test_the_advice_of_the_refusal_can_be_pasted(tmp_path):
    """A path with a space and a header with spaces around the name: the advice, as shell words, measures."""
    path = _table(tmp_path / "my embeddings.csv", " label ,a,b,c")
    result = measure(path, "--metrics", "isoscore")
    line = _one_line_error(result)
    assert "in Python" not in line  # the command's words only
    advice = line.split("give the labels with ", 1)[1].split(", which also", 1)[0]
    words = shlex.split(advice)
    assert words == ["--labels", str(path), "--label-column", "label"]
    result = measure(path, *words, "--metrics", "isoscore,silhouette_score", "--json", "-")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["n_features"] == 3


def test_a_second_label_column_beside_the_named_one_is_refused(tmp_path):
    """label and class, both integers: --label-column label left class among the features without a word."""
    classes = np.arange(30) % 3
    path = _table(tmp_path / "e.csv", "label,class,a,b,c", extra=classes)
    with pytest.raises(IsotropyValueError, match=r"its column 'class' holds integer labels, not a feature .*besides "
                                                 r"the label column 'label'.*remove the column 'class'"):
        read_embeddings(path, label_column="label")
    line = _one_line_error(measure(path, "--labels", path, "--label-column", "label", "--metrics", "isoscore"))
    assert "'class'" in line and "--label-column" in line
    with pytest.raises(IsotropyValueError, match=r"its column 'label' holds integer labels.*besides the label column "
                                                 r"'class'"):
        read_embeddings(path, label_column="class")


@pytest.mark.parametrize("labels_name", ["y.npy", "y.txt", "y"])
def test_label_column_with_labels_that_have_no_columns_is_refused(tmp_path, labels_name):
    np.save(tmp_path / "x.npy", X)
    labels = tmp_path / labels_name
    if labels_name.endswith(".npy"):
        np.save(labels, Y)
    else:
        labels.write_text("".join(f"{v}\n" for v in Y))
    line = _one_line_error(measure(tmp_path / "x.npy", "--labels", labels, "--label-column", "label",
                                   "--metrics", "isoscore,silhouette_score"))
    assert "--label-column 'label'" in line and repr(str(labels)) in line and ".csv or .tsv" in line
    # read_labels' own refusal, named by the option: one check for both
    with pytest.raises(IsotropyValueError) as err:
        read_labels(labels, n_rows=len(Y), column="label")
    assert line == f"Error: --label-column 'label': {err.value}"
    # the same with --model, refused before any model is loaded
    (tmp_path / "t.txt").write_text("".join(f"text {i}\n" for i in range(30)))
    line = _one_line_error(measure("--model", tmp_path / "absent-model", "--texts", tmp_path / "t.txt", "--labels",
                                   labels, "--label-column", "label"))
    assert "--label-column 'label'" in line and ".csv or .tsv" in line


def test_read_embeddings_refuses_label_column_on_a_file_without_columns(tmp_path):
    np.save(tmp_path / "x.npy", X)
    with pytest.raises(IsotropyValueError, match=r"label_column='label' was given but .npy files have no named "
                                                 r"columns"):
        read_embeddings(tmp_path / "x.npy", label_column="label")


def test_a_header_line_in_a_text_labels_file_is_named_in_the_error(tmp_path):
    """A .txt labels file has no header (labels may be words): a first line 'label' above 50 integers is one label
    too many, and the error says that line 1 is read as a label and how to give a header (a new-user trial read
    the docs as recognising it, and the error did not point at the line)."""
    path = tmp_path / "labels.txt"
    path.write_text("label\n" + "".join(f"{k % 3}\n" for k in range(50)))
    with pytest.raises(IsotropyValueError, match=r"it has 51 labels but the embeddings have 50 rows \(a text file has "
                                                 r"one label per line and no header, so line 1 'label' is a label"):
        read_labels(path, n_rows=50)
    csv = tmp_path / "labels.csv"
    csv.write_text(path.read_text())
    assert read_labels(csv, n_rows=50).tolist() == [str(k % 3) for k in range(50)]


@pytest.mark.parametrize("workers", [None, "1"])
def test_labels_inside_parquet_shards_are_read_in_the_shards_order(tmp_path, workers):
    # --labels DIR --label-column COL was "a directory": labels written beside the vectors, shard by shard, had to be
    # joined by hand, in the right order (part-2 before part-10)
    import pandas as pd
    from sklearn.metrics import silhouette_score

    rng = np.random.default_rng(0)
    frames = []
    for k in range(11):
        y = rng.integers(0, 3, 20 + k)
        frame = pd.DataFrame({"vector": list(rng.normal(size=(y.size, 4)) + 2.0 * y[:, None]),
                              "label": [f"c{v}" for v in y]})
        frame.to_parquet(tmp_path / f"part-{k}.parquet")
        frames.append(frame)
    pd.DataFrame({"vector": pd.Series([], dtype=object), "label": pd.Series([], dtype=str)}).to_parquet(
        tmp_path / "part-11.parquet")  # no rows: skipped by both readers
    whole = pd.concat(frames)
    labels = read_labels(tmp_path, column="label", n_rows=len(whole))
    np.testing.assert_array_equal(labels, whole["label"].to_numpy(dtype=str))
    args = ["measure", str(tmp_path), "--labels", str(tmp_path), "--label-column", "label", "--metrics",
            "silhouette_score", "--json", "-", "--no-progress", *(["--workers", workers] if workers else [])]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["values"]["silhouette_score"] == pytest.approx(
        silhouette_score(np.stack(whole["vector"].to_numpy()), whole["label"]), rel=1e-10)
    with pytest.raises(IsotropyValueError, match=r"it is a directory, not a regular file \(for labels inside "
                                                 r"\.parquet shards, name their column: --label-column"):
        read_labels(tmp_path)


def test_an_unreadable_parquet_shard_of_labels_is_named(tmp_path):
    import pandas as pd

    pd.DataFrame({"label": ["a", "b"]}).to_parquet(tmp_path / "part-0.parquet")
    (tmp_path / "part-1.parquet").write_bytes(b"garbage")  # pyarrow's own message named no file (a review)
    with pytest.raises(IsotropyValueError, match=r"^Cannot read labels from '.*part-1\.parquet': not a readable "
                                                 r"\.parquet file"):
        read_labels(tmp_path, column="label")


@pytest.mark.parametrize("header", [True, False])
def test_a_tab_separated_csv_of_labels_is_read_as_its_tsv_twin(tmp_path, header):
    """A .csv whose lines are all tab-separated (SentEval's sts-dev.csv style) is read as a .tsv, as --texts reads
    such a file: its header was one cell 'id\\tlabel' ("no column 'label'", with 'id\\tlabel' offered as the fix)."""
    names = np.array(["pos", "neg", "neu"])[np.arange(30) % 3]
    body = "".join(f"{i}\t{name}\n" for i, name in enumerate(names))
    for suffix in (".csv", ".tsv"):
        (tmp_path / f"l{suffix}").write_text(("id\tlabel\n" if header else "") + body, encoding="utf-8")
    if header:
        got = read_labels(tmp_path / "l.csv", n_rows=30, column="label")
        assert got.tolist() == names.tolist() == read_labels(tmp_path / "l.tsv", n_rows=30, column="label").tolist()
        np.save(tmp_path / "x.npy", X)
        outputs = []
        for suffix in (".csv", ".tsv"):
            result = measure(tmp_path / "x.npy", "--labels", tmp_path / f"l{suffix}", "--label-column", "label",
                             "--metrics", "silhouette_score", "--json", "-")
            assert result.exit_code == 0, result.output
            outputs.append(json.loads(result.stdout)["values"]["silhouette_score"])
        assert outputs[0] == outputs[1] and np.isfinite(outputs[0])
    else:  # a two-column table of words without a header: the same refusal for both names
        with pytest.raises(IsotropyValueError) as csv_error:
            read_labels(tmp_path / "l.csv", n_rows=30)
        with pytest.raises(IsotropyValueError) as tsv_error:
            read_labels(tmp_path / "l.tsv", n_rows=30)
        assert str(csv_error.value).replace("l.csv", "l.tsv") == str(tsv_error.value)
    # a comma-separated .csv with a tab inside one label is still read with commas
    (tmp_path / "c.csv").write_text("label\n" + "".join(f"{'a' if i % 2 else 'b'}{chr(9) if i == 3 else ''}\n"
                                                        for i in range(30)), encoding="utf-8")
    assert read_labels(tmp_path / "c.csv", n_rows=30, column="label").tolist() == ["b", "a"] * 15


def test_a_one_column_csv_of_labels_whose_lines_end_in_a_tab_is_still_read_with_commas(tmp_path):
    """Tabs that end every line separate nothing: such a file was sniffed as tab-separated, with an empty column."""
    (tmp_path / "tt.csv").write_text("".join(f"{'pos' if i % 2 else 'neg'}\t\n" for i in range(10)), encoding="utf-8")
    assert read_labels(tmp_path / "tt.csv", n_rows=10).tolist() == ["neg", "pos"] * 5


def test_labels_from_a_member_of_an_npz_archive(tmp_path):
    """layer-geometry writes projection_layer<L>.npz with the members coords and cluster: ``--key coords --labels
    FILE --label-column cluster`` measures it. Before, the labels reader refused .npz files, and its advice for a
    column named on one ("leave the column out") led to "unknown file extension '.npz'" (a user trial)."""
    path = tmp_path / "projection_layer6.npz"
    np.savez(path, coords=X, cluster=Y)
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "y.npy", Y)
    out, reference = tmp_path / "npz.json", tmp_path / "npy.json"
    assert measure(path, "--key", "coords", "--labels", path, "--label-column", "cluster", "--metrics",
                   "isoscore,silhouette_score", "--json", out).exit_code == 0
    assert measure(tmp_path / "x.npy", "--labels", tmp_path / "y.npy", "--metrics", "isoscore,silhouette_score",
                   "--json", reference).exit_code == 0
    assert json.loads(out.read_text())["values"] == json.loads(reference.read_text())["values"]
    line = _one_line_error(measure(path, "--key", "coords", "--labels", path, "--metrics", "silhouette_score"))
    assert line == (f"Error: Cannot read labels from {str(path)!r}: the .npz archive holds several arrays ('coords', "
                    f"'cluster'); expected the one holding the labels named with --label-column.")
    line = _one_line_error(measure(path, "--key", "coords", "--labels", path, "--label-column", "clusters"))
    assert line.endswith("has no array 'clusters'; expected one of 'coords', 'cluster'. Did you mean 'cluster'?")


def test_an_npz_member_that_is_not_an_array_is_refused(tmp_path):
    """numpy returns a zip member that is not a .npy file as its raw bytes: refused by name, not a traceback (a
    review)."""
    import zipfile

    path = tmp_path / "raw.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("labels", b"xx")
    with pytest.raises(IsotropyValueError) as err:
        read_labels(path, n_rows=3)
    assert str(err.value).startswith(f"Cannot read labels from {str(path)!r}: member 'labels' is not a .npy array; ")


@pytest.mark.parametrize("embeddings", ["store", "npy"])
def test_a_label_column_of_a_zarr_store_is_blamed_on_labels(tmp_path, embeddings):
    """A user trial: ``measure g.zarr --key emb --labels g.zarr --label-column lab`` said "Cannot read embeddings from
    'g.zarr': label_column='lab' was given ...", blaming EMBEDDINGS; it is the labels' error, as with .npy labels."""
    zarr = pytest.importorskip("zarr")

    store = tmp_path / "g.zarr"
    zarr.open_group(str(store), mode="w").create_array("emb", data=X)
    np.save(tmp_path / "x.npy", X)
    source = [str(store), "--key", "emb"] if embeddings == "store" else [str(tmp_path / "x.npy")]
    result = CliRunner().invoke(cli, ["measure", *source, "--labels", str(store), "--label-column", "lab",
                                      "--json", str(tmp_path / "out.json")])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    assert errors[0].startswith(f"Error: --label-column 'lab': Cannot read labels from {str(store)!r}: a label column "
                                f"('lab') was named, but a Zarr store has no columns"), errors[0]
    assert "embeddings" not in errors[0].lower()
    assert not (tmp_path / "out.json").exists()
    with pytest.raises(IsotropyValueError, match=r"^Cannot read labels from .*g\.zarr': a label column \('lab'\) was "
                                                 r"named, but a Zarr store has no columns"):
        read_labels(store, column="lab")


def test_a_label_directory_without_shards_is_blamed_on_labels(tmp_path):
    # "Cannot read embeddings from 'DIR': no .npy or .parquet shards found there", for the --labels directory
    (tmp_path / "labels").mkdir()
    np.save(tmp_path / "x.npy", X)
    result = CliRunner().invoke(cli, ["measure", str(tmp_path / "x.npy"), "--labels", str(tmp_path / "labels"),
                                      "--label-column", "lab"])
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines()[-1] == (
        f"Error: Cannot read labels from {str(tmp_path / 'labels')!r}: no .npy or .parquet shards found there; "
        f"expected a directory of .parquet shards, each with that column.")


def test_a_table_whose_only_column_is_the_label_column_is_refused_in_one_line(tmp_path):
    """`isotropy measure t.csv --labels t.csv --label-column label` on a CSV of the label column alone ended in an
    IndexError traceback (found in review): one line naming the label column, exit status 2."""
    from click.testing import CliRunner

    from isotropy.cli import cli

    path = tmp_path / "t.csv"
    path.write_text("label\n0\n1\n0\n1\n")
    result = CliRunner().invoke(cli, ["measure", str(path), "--labels", str(path), "--label-column", "label"])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        (f"Error: Cannot read embeddings from {str(path)!r}: its only column is the label column 'label' "
         f"(--label-column, label_column= in Python); expected feature columns beside the label column.")]


@pytest.mark.parametrize("kind", ["csv", "parquet", "parquet-shards"])
def test_a_misspelt_label_column_of_the_embeddings_file_gets_the_closest_name(tmp_path, kind):
    """--labels E --label-column labl on E itself said "it has 0 columns named 'labl' to leave out as labels" (a user
    trial), without the "Did you mean 'label'?" that the same typo gets from a separate labels file."""
    import pandas as pd

    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame.insert(0, "label", Y)
    if kind == "csv":
        path = tmp_path / "e.csv"
        frame.to_csv(path, index=False)
    elif kind == "parquet":
        path = tmp_path / "e.parquet"
        frame.to_parquet(path)
    else:
        path = tmp_path / "shards"
        path.mkdir()
        frame[:15].to_parquet(path / "part-0.parquet")
        frame[15:].to_parquet(path / "part-1.parquet")
    line = _one_line_error(measure(path, "--labels", path, "--label-column", "labl", "--metrics", "silhouette_score"))
    assert "it has no column 'labl' to leave out as labels" in line, line
    assert line.endswith("Did you mean 'label'?"), line
    record = json.loads(measure(path, "--labels", path, "--label-column", "label", "--metrics", "isoscore",
                                "--json", "-").stdout)
    assert record["n_features"] == 3 and record["values"]["isoscore"] == pytest.approx(isoscore(X), rel=1e-12)


def test_a_label_column_by_position_of_a_table_with_or_without_a_header(tmp_path):
    """--label-column 2 of GLUE's headerless CoLA asked for a header line; a 1-based position reads the column, line
    1 included when it is data (as the texts of the same table are read), under it when it is a header; what was read
    is reported for the command's note, and a position past the columns names their count and line 1."""
    cola = tmp_path / "dev.tsv"
    cola.write_text("gj04\t1\t\tThe sailors rode the breeze.\ngj04\t0\t*\tThe doll wriggled itself.\n"
                    "cj99\t1\t\tThe more you eat, the fatter you get.\n")
    read_as = []
    assert read_labels(cola, column="2", n_rows=3, _read_as=read_as).tolist() == ["1", "0", "1"]
    assert read_as == ["the 2nd of 4 tab-separated columns (no header line)"]
    # '1' is a cell of line 1, a label over labels: no one's name for a column, so its position
    assert read_labels(cola, column="1").tolist() == ["gj04", "gj04", "cj99"]
    with pytest.raises(IsotropyValueError) as caught:
        read_labels(cola, column="5")
    assert str(caught.value) == (
        f"Cannot read labels from {str(cola)!r}: column '5' is a position past its 4 tab-separated columns (line 1, "
        f"data: 'gj04', '1', '', 'The sailors rode the breeze.'); expected a position from 1 to 4 (it has no header "
        f"line to name one by).")
    with pytest.raises(IsotropyValueError, match="it has no header line: line 1 holds data .*, not column names, so "
                                                 "'label' names none of them; expected the label column's position, "
                                                 "1 to 4 "):
        read_labels(cola, column="label")
    table = tmp_path / "rte.csv"
    table.write_text("sentence1,label,idx\nA man sleeps.,0,0\nA dog runs.,1,1\n")
    read_as = []
    assert read_labels(table, column="2", _read_as=read_as).tolist() == ["0", "1"]
    assert read_as == ["the 2nd of 3 comma-separated columns, 'label' on the header line"]
    named = []
    assert read_labels(table, column="label", _read_as=named).tolist() == ["0", "1"] and named == []


def test_a_position_names_the_label_column_of_the_embeddings_file_itself(tmp_path):
    """A review: --label-column takes a 1-based position for a CSV/TSV --labels file, but with --labels EMBEDDINGS
    itself it was read as a column name ("no column '4' ... Did you mean"). The position now names that header
    cell's column, left out of the features as the name leaves it out: the same values as by name."""
    import json
    import subprocess
    import sys

    path = tmp_path / "e.csv"
    path.write_text("word,x1,x2,label\ncat,0.1,0.2,a\ndog,0.3,0.5,b\nox,0.5,0.7,a\nem,0.9,0.1,b\n")

    def measure(column):
        out = subprocess.run([sys.executable, "-m", "isotropy", "measure", str(path), "--labels", str(path),
                              "--label-column", column, "--metrics", "silhouette_score", "--json", "-"],
                             capture_output=True, text=True, timeout=300, check=False)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout), out.stderr

    by_position, said = measure("4")
    by_name, _ = measure("label")
    assert by_position["n_features"] == by_name["n_features"] == 2
    assert by_position["values"] == by_name["values"]
    assert by_position["label_column"] == "4"
    assert "Note: --label-column 4: the 4th of 4 comma-separated columns, 'label' on the header line, first label: " \
           '"a"' in said


def test_labels_of_parquet_shards_named_by_a_glob_as_embeddings_are(tmp_path):
    """A trial: EMBEDDINGS took 'pq/*.parquet' but --labels 'pq/*.parquet' --label-column label was "does not exist".
    A glob of .parquet shards now gives their column, in the shards' order, as their directory does; without a
    column the message says one is needed."""
    import pandas as pd

    from isotropy.io.labels import read_labels

    rng = np.random.default_rng(0)
    (tmp_path / "pq").mkdir()
    expected = []
    for i in (0, 1, 10, 2):  # numbers in the names ordered as numbers
        labels = rng.integers(0, 3, 7)
        pd.DataFrame({"emb": list(rng.normal(size=(7, 4))), "label": labels}).to_parquet(tmp_path / "pq" /
                                                                                       f"part-{i}.parquet")
        expected.append((i, labels))
    order = np.concatenate([labels for _, labels in sorted(expected)])
    np.testing.assert_array_equal(read_labels(str(tmp_path / "pq" / "*.parquet"), column="label", n_rows=28), order)
    np.testing.assert_array_equal(read_labels(tmp_path / "pq", column="label", n_rows=28), order)
    with pytest.raises(FileNotFoundError, match=r"does not exist \(a glob of \.parquet shards is read with the name of "
                                                r"their label column: --label-column; column= in Python\)"):
        read_labels(str(tmp_path / "pq" / "*.parquet"))


def test_a_label_column_alone_reads_the_labels_from_the_embeddings_file_itself(tmp_path):
    """``--label-column COL`` without ``--labels``: the column of EMBEDDINGS itself (a table, an .npz archive, a folder
    of .parquet shards), the same values as ``--labels EMBEDDINGS --label-column COL``. Before, it was refused ("give
    --labels too"), though the labels were in the file being measured (a user trial)."""
    import pandas as pd

    table = _table(tmp_path / "e.csv", "label,a,b,c")
    archive = tmp_path / "projection.npz"
    np.savez(archive, coords=X, cluster=Y)
    vectors = tmp_path / "vectors.parquet"
    pd.DataFrame({"id": np.arange(30), "embedding": list(X), "label": Y}).to_parquet(vectors)
    shards = tmp_path / "shards"
    shards.mkdir()
    for k, rows in enumerate((slice(0, 12), slice(12, 30))):
        pd.DataFrame({"embedding": list(X[rows]), "label": Y[rows]}).to_parquet(shards / f"part-{k}.parquet")
    metrics = ("--metrics", "isoscore,silhouette_score", "--json", "-", "--no-progress")
    for path, options, column in ((table, (), "label"), (archive, ("--key", "coords"), "cluster"),
                                  (vectors, (), "label"), (shards, (), "label")):
        implied = measure(path, *options, "--label-column", column, *metrics)
        assert implied.exit_code == 0, implied.output
        given = measure(path, *options, "--labels", path, "--label-column", column, *metrics)
        assert given.exit_code == 0, given.output
        record = json.loads(implied.stdout)
        assert record["values"] == json.loads(given.stdout)["values"] and record["labels"] == str(path)
        assert record["values"]["silhouette_score"] == pytest.approx(silhouette_score(X, Y), rel=1e-10)
    np.save(tmp_path / "x.npy", X)  # no columns: the labels must come from elsewhere
    line = _one_line_error(measure(tmp_path / "x.npy", "--label-column", "label"))
    assert line == (f"Error: --label-column 'label' reads the labels from EMBEDDINGS itself when no --labels is given, "
                    f"but {str(tmp_path / 'x.npy')!r} has no columns. Give the labels with --labels FILE.")
    result = measure(str(tmp_path / "*.npy"), "--label-column", "label")  # a pattern is no file to read a column of
    assert result.exit_code == 2 and ("--label-column names a column of --labels FILE, or of the EMBEDDINGS file or "
                                      "--texts FILE itself; give --labels too.") in result.output
