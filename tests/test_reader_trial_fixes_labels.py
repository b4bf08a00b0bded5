"""Fixes from a new user's trial of ``isotropy measure``: labels files."""

from __future__ import annotations

import numpy as np
import pytest

from isotropy.cli import main
from isotropy.io.labels import read_labels


def test_latin1_labels_say_how_to_read_them(tmp_path, capsys):
    X = np.random.default_rng(0).normal(size=(4, 3))
    np.save(tmp_path / "x.npy", X)
    labels = tmp_path / "lab_latin.txt"
    labels.write_bytes("négatif\npositif\nnégatif\npositif\n".encode("latin-1"))
    with pytest.raises(SystemExit) as exit_:
        main(["measure", str(tmp_path / "x.npy"), "--labels", str(labels), "--metrics", "silhouette_score"])
    assert exit_.value.code == 2
    converted = tmp_path / "lab_latin-utf8.txt"
    assert capsys.readouterr().err == (
        f"Error: Cannot read labels from {str(labels)!r}: it is not UTF-8 text (convert it, e.g. iconv -f latin-1 "
        f"-t utf-8 {labels} > {converted}, or give its encoding: --encoding latin-1); expected a text file with one "
        f"label per line.\n")  # the command's words: encoding='latin-1' in Python is for read_labels' users
    assert read_labels(labels, n_rows=4, encoding="latin-1").tolist() == ["négatif", "positif", "négatif", "positif"]
    # --encoding reads the labels of EMBEDDINGS too (it was refused without --model): the labels' silhouette
    main(["measure", str(tmp_path / "x.npy"), "--labels", str(labels), "--encoding", "latin-1", "--metrics",
          "silhouette_score", "--json", str(tmp_path / "out.json")])
    import json

    from isotropy import silhouette_score

    got = json.loads((tmp_path / "out.json").read_text())["values"]["silhouette_score"]
    assert got == pytest.approx(silhouette_score(X, ["négatif", "positif", "négatif", "positif"]), rel=1e-12)
    with pytest.raises(SystemExit) as exit_:  # without --labels it reads nothing: refused, saying what it reads
        main(["measure", str(tmp_path / "x.npy"), "--encoding", "latin-1"])
    assert exit_.value.code == 2
    assert "--encoding applies to --model NAME --texts FILE only (--encoding also reads a --labels file)" in \
        capsys.readouterr().err


SNLI = ['{"gold_label": "neutral", "sentence1": "Two women embrace.", "sentence2": "Sisters hug."}',
        '{"gold_label": "entailment", "sentence1": "Two women embrace.", "sentence2": "Two women hold."}',
        '',
        '{"gold_label": "contradiction", "sentence1": "Two women embrace.", "sentence2": "Men fight."}',
        '{"gold_label": "neutral", "sentence1": "A dog runs.", "sentence2": "A dog plays."}']


def test_a_json_lines_labels_file_reads_its_label_column(tmp_path):
    path = tmp_path / "snli.jsonl"
    path.write_text("\n".join(SNLI) + "\n")
    assert read_labels(path, n_rows=4, column="gold_label").tolist() == ["neutral", "entailment", "contradiction",
                                                                        "neutral"]
    numbers = tmp_path / "y.ndjson"
    numbers.write_text('{"y": 1}\n{"y": 0}\n{"y": true}\n')
    assert read_labels(numbers, n_rows=3, column="y").tolist() == ["1", "0", "true"]
    with pytest.raises(ValueError) as caught:
        read_labels(path, n_rows=4)
    assert str(caught.value) == (f"Cannot read labels from {str(path)!r}: no label column was named for a JSON-lines "
                                 f"file and its first object has 3 fields: ['gold_label', 'sentence1', 'sentence2']; "
                                 f"expected the name of the field that holds the labels (--label-column; column= in "
                                 f"Python).")
    # objects of one field: that field, as a .parquet file's only column that holds no vectors (it needed column=)
    assert read_labels(numbers, n_rows=3).tolist() == ["1", "0", "true"]
    (tmp_path / "mixed.jsonl").write_text('{"y": "a"}\n{"z": "b"}\n')
    with pytest.raises(ValueError, match=r"line 2 has no field 'y' \(its fields: \['z'\]\)"):
        read_labels(tmp_path / "mixed.jsonl", n_rows=2)
    (tmp_path / "list.jsonl").write_text('[1]\n[2]\n')
    with pytest.raises(ValueError, match=r"line 1 is a JSON list, not an object; expected one JSON object per line"):
        read_labels(tmp_path / "list.jsonl", n_rows=2)  # as with column= (it said no label column was named)
    (tmp_path / "cut.jsonl").write_text('{"y": "a"\n{"y": "b"}\n')
    with pytest.raises(ValueError, match=r"line 1 is not JSON \(Expecting ',' delimiter\)"):
        read_labels(tmp_path / "cut.jsonl", n_rows=2)
    with pytest.raises(ValueError, match=r"line 1 has no field 'label' \(its fields: \['gold_label', 'sentence1', "
                                         r"'sentence2'\]\); expected the label field on every line\.$"):
        read_labels(path, n_rows=4, column="label")
    (tmp_path / "null.jsonl").write_text('{"y": "a"}\n{"y": null}\n')
    with pytest.raises(ValueError, match=r"line 2 has no label in field 'y' \(it holds null\)"):
        read_labels(tmp_path / "null.jsonl", n_rows=2, column="y")
    X = np.random.default_rng(0).normal(size=(4, 3))
    np.save(tmp_path / "x.npy", X)
    main(["measure", str(tmp_path / "x.npy"), "--labels", str(path), "--label-column", "gold_label", "--metrics",
          "silhouette_score", "--json", str(tmp_path / "out.json")])
    import json

    from isotropy import silhouette_score

    record = json.loads((tmp_path / "out.json").read_text())
    expected = silhouette_score(X, ["neutral", "entailment", "contradiction", "neutral"])
    assert record["n_clusters"] == 3 and record["label_column"] == "gold_label"
    assert record["values"]["silhouette_score"] == pytest.approx(expected, rel=1e-12)


def test_read_labels_reads_every_label_without_n_rows(tmp_path):
    path = tmp_path / "y.csv"
    path.write_text("label\npos\nneg\npos\n")
    assert read_labels(path).tolist() == ["pos", "neg", "pos"]
    with pytest.raises(ValueError, match=r"it has 3 labels but the embeddings have 2 rows"):
        read_labels(path, n_rows=2)


def test_a_labels_table_line_of_500_mb_is_refused_before_it_is_read(tmp_path, monkeypatch):
    """csv read a line whole before any check: one 500 MB line was 500 MB in memory (and csv's 'field larger than field
    limit' named no line). Now every line is measured first, a block at a time, by the embeddings reader's scan."""
    import tracemalloc

    import isotropy.io.labels as labels_module

    path = tmp_path / "y.csv"
    with open(path, "wb") as handle:  # sparse: one line of 500 MB (NUL bytes), never written out
        handle.write(b"label\npos\nneg\n")
        handle.truncate(500 * 2**20)

    def read_rows(*args, **kwargs):
        raise AssertionError("csv read the file")

    monkeypatch.setattr(labels_module.csv, "reader", read_rows)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as error:
            read_labels(path, n_rows=2)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 128 * 2**20, peak  # the scan reads the line in blocks, never whole
    assert str(error.value) == (f"Cannot read labels from {str(path)!r}: line 4 is longer than 4,194,304 bytes "
                                f"(16,777,202 at least); expected one row of labels per line, each line at most 4 MiB "
                                f"(a line of 1,048,576 characters, 4 bytes a character at most).")
    monkeypatch.undo()  # csv.reader back
    # the same bound on a table with a label column (.tsv) and on JSON lines, with the bound made small
    monkeypatch.setattr(labels_module, "_MAX_TABLE_LINE_BYTES", 1000)
    table = tmp_path / "t.tsv"
    table.write_text("text\ty\na cat\t1\n" + "x\t" * 600 + "\t0\na dog\t0\n")
    with pytest.raises(ValueError, match=r"t\.tsv': line 3 is longer than 1,000 bytes \(1,202 at least\); expected one "
                                         r"row of labels per line, each line at most 1,000 bytes \(a line of "):
        read_labels(table, column="y")
    lines = tmp_path / "t.jsonl"
    lines.write_text('{"y": 1}\n{"y": "' + "x" * 2000 + '"}\n')
    with pytest.raises(ValueError, match=r"t\.jsonl': line 2 is longer than 1,000 bytes \(2,009 at least\); expected "
                                         r"one JSON object per line"):
        read_labels(lines, column="y")
    table.write_text("text\ty\na cat\t1\n" + "x" * 990 + "\t0\n")  # within the bound: read
    assert read_labels(table, column="y").tolist() == ["1", "0"]
