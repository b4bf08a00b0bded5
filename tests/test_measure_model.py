"""``isotropy measure --model NAME --texts FILE``: per-layer geometry of tiny random BERT and Gemma models."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from _fuzz import spliced
from _tiny_models import make_tiny_bert, make_tiny_gemma_gguf, width_rounding
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from isotropy._utils.errors import IsotropyValueError
from isotropy.cli import cli
from isotropy.measure.from_model import measure_layers, read_texts

torch = pytest.importorskip("torch")

TEXTS = ["the cat sat on the mat .", "a dog ran .", "the dog sat on a mat", "a cat ran", "the mat .",
         "dog sat", "the cat ran on the mat", "a dog sat ."]
LABELS = ["x", "y", "y", "x", "x", "y", "x", "y"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("measure-model")
    make_tiny_bert(root / "bert")
    make_tiny_gemma_gguf(root / "gemma.gguf")
    (root / "texts.txt").write_text("\n".join(TEXTS) + "\n\n")
    np.save(root / "emb.npy", np.random.default_rng(0).normal(size=(40, 6)).astype(np.float32))
    (root / "labels.txt").write_text("\n".join(LABELS) + "\n")
    (root / "texts.csv").write_text("id,sentence\n" + "".join(f'{i},"{t}"\n' for i, t in enumerate(TEXTS)))
    (root / "texts.jsonl").write_text("".join(json.dumps({"text": t, "y": y}) + "\n" for t, y in zip(TEXTS, LABELS)))
    return root


def invoke(*args):
    return CliRunner().invoke(cli, ["measure", *map(str, args)])


def _bert_states(directory):
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(directory)
    network = AutoModel.from_pretrained(directory).eval()
    states = []
    with torch.inference_mode():
        for text in TEXTS:  # one text at a time: no padding in the reference
            batch = tokenizer([text], return_tensors="pt")
            states.append([h[0].numpy() for h in network(**batch, output_hidden_states=True).hidden_states])
    return states


def test_read_texts_formats_and_errors(files):
    assert read_texts(files / "texts.txt") == TEXTS
    assert read_texts(files / "texts.csv", column="sentence") == TEXTS
    assert read_texts(files / "texts.jsonl", column="text") == TEXTS
    with pytest.raises(ValueError, match=r"columns \['id', 'sentence'\]; name the text column"):
        read_texts(files / "texts.csv")
    with pytest.raises(ValueError, match="'body' is not in"):
        read_texts(files / "texts.jsonl", column="body")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_texts(files / "absent.txt")


_VALID_TEXTS = {".txt": "a cat\na dog\n", ".csv": 'text\n"a, cat"\na dog\n', ".tsv": "text\ta\na cat\t1\na dog\t0\n",
                ".jsonl": '{"text": "a cat"}\n{"text": "a dog"}\n'}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300), suffix=st.sampled_from(sorted(_VALID_TEXTS)), splice=st.booleans(),
       encoding=st.sampled_from(["utf-8", "latin-1", "utf-16"]))
def test_fuzzed_texts_files_read_or_are_refused_in_one_line(tmp_path, data, suffix, splice, encoding):
    """Any bytes, or a valid texts file with bytes spliced in: at least 2 non-blank texts, or one ValueError line."""
    if splice:
        valid = _VALID_TEXTS[suffix].encode()
        data = spliced(valid, data)
    path = tmp_path / f"t{suffix}"
    path.write_bytes(data)
    column = "text" if suffix == ".tsv" else None
    try:
        texts = read_texts(path, column=column, encoding=encoding)
    except ValueError as exc:
        assert "\n" not in str(exc)
    else:
        assert len(texts) >= 2 and all(isinstance(t, str) and t.strip() for t in texts)


def test_a_texts_file_past_the_size_bound_is_not_read(tmp_path):
    path = tmp_path / "big.txt"
    with open(path, "wb") as handle:  # sparse: 2 GiB on disk in name only, refused before a byte is read
        handle.truncate(2**31)
    with pytest.raises(ValueError, match=r"big.txt' is 2.0 GiB; expected at most 1 GiB of texts"):
        read_texts(path)


def test_sentence_level_equals_manual_mean_pooling(files):
    from IsoScore import IsoScore

    from isotropy import isoscore, partition_isotropy, twonn_dimension

    result = measure_layers(TEXTS, model=str(files / "bert"), device="cpu")
    states = _bert_states(files / "bert")
    assert [r["layer"] for r in result["rows"]] == [0, 1, 2]
    for row in result["rows"]:
        X = np.stack([s[row["layer"]].mean(0) for s in states]).astype(np.float64)
        # the isoscore package (the authors' reference) expects (n_samples, n_features) points
        assert row["isoscore"] == pytest.approx(float(IsoScore.IsoScore(X)), rel=1e-3)
        assert row["isoscore"] == pytest.approx(isoscore(X), rel=1e-4)
        assert row["partition_isotropy"] == pytest.approx(partition_isotropy(X), rel=1e-3)
        assert row["twonn_dimension"] == pytest.approx(twonn_dimension(X), rel=1e-3)
        norms = np.linalg.norm(X, axis=1)
        assert row["norm_max_over_median"] == pytest.approx(norms.max() / np.median(norms), rel=1e-4)
        assert "token_norms" not in row  # token level only


def test_token_level_leaves_out_special_tokens_unless_asked(files):
    from isotropy import cosine_similarity_mean

    states = _bert_states(files / "bert")
    result = measure_layers(TEXTS, model=str(files / "bert"), level="token", layers="2", device="cpu")
    X = np.concatenate([s[2][1:-1] for s in states])  # without [CLS] and [SEP]
    assert result["rows"][0]["n_samples"] == X.shape[0] == result["n_rows_total"]
    assert result["rows"][0]["cosine_similarity_mean"] == pytest.approx(cosine_similarity_mean(X), rel=1e-4)
    kept = measure_layers(TEXTS, model=str(files / "bert"), level="token", layers="2", device="cpu", keep_special=True)
    assert kept["n_rows_total"] == X.shape[0] + 2 * len(TEXTS)
    sampled = measure_layers(TEXTS, model=str(files / "bert"), level="token", layers="2", device="cpu",
                             sample_size=20, random_state=3)
    assert sampled["rows"][0]["n_samples"] == 20


def test_token_level_names_the_largest_norms_with_the_special_tokens_apart(files):
    from transformers import AutoTokenizer

    from isotropy import token_norms

    states = _bert_states(files / "bert")
    tokenizer = AutoTokenizer.from_pretrained(files / "bert")
    pieces = [tokenizer.convert_ids_to_tokens(tokenizer(text)["input_ids"]) for text in TEXTS]
    assert all(p[0] == "[CLS]" and p[-1] == "[SEP]" for p in pieces)
    result = measure_layers(TEXTS, model=str(files / "bert"), level="token", layers="0,2", device="cpu")
    kept = measure_layers(TEXTS, model=str(files / "bert"), level="token", layers="0,2", device="cpu",
                          keep_special=True)
    for row, kept_row in zip(result["rows"], kept["rows"]):
        layer = row["layer"]
        # the reference: each text run alone, its [CLS] and [SEP] measured apart
        X = np.concatenate([s[layer][1:-1] for s in states]).astype(np.float64)
        special = [(p[t], float(np.linalg.norm(s[layer][t]))) for p, s in zip(pieces, states) for t in (0, -1)]
        expected = token_norms(X, [t for p in pieces for t in p[1:-1]], special=special, top=len(X))
        got = row["token_norms"]
        assert set(got) == {"max_over_median", "median_norm", "top", "special"}
        assert got["max_over_median"] == pytest.approx(expected["max_over_median"], rel=1e-4)
        assert got["median_norm"] == pytest.approx(expected["median_norm"], rel=1e-4)
        # the values; near-ties (layer 0 is a LayerNorm output: every norm close to the median) may swap two tokens
        np.testing.assert_allclose([r for _, r in got["top"]], [r for _, r in expected["top"][:5]], rtol=1e-4)
        best = dict(map(tuple, expected["top"]))
        assert all(r == pytest.approx(best[t], rel=1e-4) for t, r in got["top"])
        assert sorted(t for t, _ in got["special"]) == ["[CLS]", "[SEP]"]
        assert dict(map(tuple, got["special"])) == pytest.approx(dict(map(tuple, expected["special"])), rel=1e-4)
        assert got["max_over_median"] == pytest.approx(row["norm_max_over_median"], rel=1e-9)
        # --keep-special: the specials are rows too (in the median and in top), and still listed apart
        assert sorted(t for t, _ in kept_row["token_norms"]["special"]) == ["[CLS]", "[SEP]"]
        X_kept = np.concatenate([s[layer] for s in states]).astype(np.float64)
        expected_kept = token_norms(X_kept, [t for p in pieces for t in p], special=special)
        assert dict(map(tuple, kept_row["token_norms"]["special"])) == pytest.approx(
            dict(map(tuple, expected_kept["special"])), rel=1e-4)
        assert kept_row["token_norms"]["median_norm"] == pytest.approx(expected_kept["median_norm"], rel=1e-4)


def test_token_norms_in_the_json_table_and_plot(files, tmp_path):
    out, figure = tmp_path / "t.json", tmp_path / "t.png"
    result = invoke("--model", files / "bert", "--texts", files / "texts.txt", "--level", "token", "--layers", "1,2",
                    "--json", out, "--plot", figure, "--device", "cpu", "--batch-size", "5")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[1].split()[:2] == ["layer", "n"] and "token" not in lines[1]  # the table leaves the dict out
    assert [line.split()[0] for line in lines[2:4]] == ["1", "2"]
    record = json.loads(out.read_text())
    assert record["batch_size"] == 5 and record["device"] == "cpu"  # what the last digits depend on: recorded
    for row in record["rows"]:
        norms = row["token_norms"]
        assert norms["max_over_median"] == pytest.approx(row["norm_max_over_median"], rel=1e-9)
        assert 1 <= len(norms["top"]) <= 5 and all(isinstance(t, str) and r > 0 for t, r in norms["top"])
        assert sorted(t for t, _ in norms["special"]) == ["[CLS]", "[SEP]"]
    assert figure.stat().st_size > 1000


def test_json_rows_map_nan_to_null_also_inside_token_norms():
    from isotropy.measure.from_model import _json_safe

    row = {"layer": 1, "isoscore": float("nan"), "n_samples": 3,
           "token_norms": {"max_over_median": float("inf"), "median_norm": 0.0, "top": [["a", float("nan")]],
                           "special": [("[CLS]", 2.0)]}}
    assert json.loads(json.dumps(_json_safe(row), allow_nan=False)) == {
        "layer": 1, "isoscore": None, "n_samples": 3,
        "token_norms": {"max_over_median": None, "median_norm": 0.0, "top": [["a", None]], "special": [["[CLS]", 2.0]]}}


def test_twonn_and_mle_of_a_layer_share_one_neighbour_search(files, monkeypatch):
    """Asked for together, TwoNN and MLE read one neighbour search per layer, with the values of each alone."""
    from isotropy.metrics import neighbors

    alone = {name: measure_layers(TEXTS, model=str(files / "bert"), level="token", layers=[1, 2], metrics=[name],
                                  device="cpu")["rows"] for name in ("twonn_dimension", "mle_dimension")}
    searches = []
    search = neighbors.exact_knn
    monkeypatch.setattr(neighbors, "exact_knn", lambda *a, **k: searches.append(1) or search(*a, **k))
    both = measure_layers(TEXTS, model=str(files / "bert"), level="token", layers=[1, 2],
                          metrics=["twonn_dimension", "mle_dimension"], device="cpu")["rows"]
    assert len(searches) == 2  # one per layer
    for name, rows in alone.items():
        assert [r[name] for r in both] == [r[name] for r in rows]
        assert all(np.isfinite(r[name]) for r in rows)


def test_cluster_metrics_with_labels(files):
    from sklearn.metrics import calinski_harabasz_score, silhouette_score

    states = _bert_states(files / "bert")
    result = measure_layers(TEXTS, model=str(files / "bert"), layers=[1], labels=LABELS, device="cpu")
    X = np.stack([s[1].mean(0) for s in states]).astype(np.float64)
    row = result["rows"][0]
    assert row["silhouette_score"] == pytest.approx(silhouette_score(X, LABELS), rel=1e-4)
    assert row["calinski_harabasz_score"] == pytest.approx(calinski_harabasz_score(X, LABELS), rel=1e-4)


def test_labels_from_a_column_of_the_texts_table(files, tmp_path):
    """--labels TABLE --label-column COL: the labels of a table with a header, the --texts file itself included."""
    table = tmp_path / "pairs.tsv"  # quotes are text in a .tsv, for the texts and the labels alike
    table.write_text("sentence\tlabel\tid\n" + "".join(f'{t} "q\t{y}\t{i}\n' for i, (t, y) in enumerate(zip(TEXTS, LABELS))))
    args = ("--model", files / "bert", "--texts", table, "--text-column", "sentence", "--layers", "1", "--metrics",
            "silhouette_score", "--device", "cpu", "--json", "-")
    result = invoke(*args, "--labels", table, "--label-column", "label")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["label_column"] == "label" and record["n_texts"] == len(TEXTS)
    expected = measure_layers([f'{t} "q' for t in TEXTS], model=str(files / "bert"), layers=[1], labels=LABELS,
                              metrics=["silhouette_score"], device="cpu")["rows"][0]["silhouette_score"]
    assert record["rows"][0]["silhouette_score"] == pytest.approx(expected, rel=1e-12)
    result = invoke(*args, "--labels", table)  # the whole table read as labels: one line that names the option
    assert result.exit_code == 2 and "in Python" not in result.output
    assert ("its header names the label column 'label' beside 2 other columns, and not every column holds 0/1, so it "
            "is not a table of 0/1 indicator columns (multi-label); expected the label column named: --label-column "
            "label, or multi-label 0/1 columns headed by their classes.") in result.output
    assert "np.str_" not in result.output
    result = invoke(*args, "--labels", table, "--label-column", "y")
    assert result.exit_code == 2
    assert "it has no column 'y' (its header: ['sentence', 'label', 'id'])" in result.output
    result = invoke(*args, "--label-column", "label")  # without --labels: the column of the --texts table itself
    assert result.exit_code == 0, result.output
    alone = json.loads(result.stdout)
    assert alone["labels"] == str(table) and alone["rows"][0]["silhouette_score"] == record["rows"][0]["silhouette_score"]
    result = CliRunner().invoke(cli, ["measure", *map(str, args[:3]), "-", *map(str, args[4:]), "--label-column", "label"],
                                input=table.read_text())
    assert result.exit_code == 2 and ("--label-column names a column of --labels FILE, or of the EMBEDDINGS file or "
                                      "--texts FILE itself; give --labels too.") in result.output
    short = tmp_path / "short.txt"
    short.write_text("x\ny\n")
    result = invoke(*args, "--labels", short)
    assert result.exit_code == 2 and f"it has 2 labels for {len(TEXTS)} texts; expected one label per row of the texts" \
        in result.output


def test_columns_of_a_headerless_table_by_position(files, tmp_path):
    """GLUE's CoLA has no header line: --text-column 4 --label-column 2 read its sentences and labels (line 1
    included), measured as the texts and labels themselves are; notes say what each position read, and the JSON
    records the columns as given."""
    table = tmp_path / "dev.tsv"
    table.write_text("".join(f"gj04\t{'1' if y == 'x' else '0'}\t\t{t}\n" for t, y in zip(TEXTS, LABELS)))
    result = invoke("--model", files / "bert", "--texts", table, "--text-column", "4", "--labels", table,
                    "--label-column", "2", "--layers", "1", "--metrics", "isoscore,silhouette_score", "--device", "cpu",
                    "--json", "-")
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[:2] == [
        f'Note: --text-column 4: the 4th of 4 tab-separated columns (no header line), first text: "{TEXTS[0]}"',
        'Note: --label-column 2: the 2nd of 4 tab-separated columns (no header line), first label: "1"']
    record = json.loads(result.stdout)
    assert record["text_column"] == "4" and record["label_column"] == "2" and record["n_texts"] == len(TEXTS)
    expected = measure_layers(TEXTS, model=str(files / "bert"), layers=[1], labels=LABELS, device="cpu",
                              metrics=["isoscore", "silhouette_score"])["rows"][0]
    assert record["rows"][0]["isoscore"] == pytest.approx(expected["isoscore"], rel=1e-12)
    assert record["rows"][0]["silhouette_score"] == pytest.approx(expected["silhouette_score"], rel=1e-12)


def test_layers_last_in_a_list_is_the_last_layer(files):
    """--layers last,0 was refused while 0,-1 was measured: both measure the embedding output and the last layer."""
    args = ("--model", files / "bert", "--texts", files / "texts.txt", "--metrics", "isoscore", "--device", "cpu",
            "--json", "-")
    results = [invoke(*args, "--layers", layers) for layers in ("last,0", "0,-1")]
    assert [r.exit_code for r in results] == [0, 0], [r.output for r in results]
    last, indices = (json.loads(r.stdout)["rows"] for r in results)
    assert [row["layer"] for row in last] == [0, 2] and last == indices


def test_a_labels_count_off_by_the_blank_lines_of_the_texts_says_so(files, tmp_path):
    """Blank lines of a .txt --texts file are skipped: a label file with a label for each line was 'off' unexplained."""
    texts = tmp_path / "texts.txt"
    texts.write_text(f"{TEXTS[0]}\n\n" + "\n".join(TEXTS[1:6]) + "\n   \n" + "\n".join(TEXTS[6:]) + "\n\n\n")
    read = read_texts(texts)
    assert read == TEXTS and read.blank_lines == 2  # the two after the last text end the file: not counted
    labels = tmp_path / "labels.csv"
    labels.write_text("label\n" + "".join(f"{y}\n" for y in LABELS[:1] + ["x"] + LABELS[1:6] + ["x"] + LABELS[6:]))
    result = invoke("--model", files / "bert", "--texts", texts, "--labels", labels, "--layers", "1")
    assert result.exit_code == 2
    assert result.output == (  # said "it has 10 labels for 8 texts" alone
        f"Error: Cannot read labels from {str(labels)!r}: it has 10 labels for 8 texts (2 blank lines of the texts "
        f"file {str(texts)!r} were skipped, not read as texts); expected one label per row of the texts.\n")
    texts.write_text("\n".join(TEXTS[:3]) + "\n\n" + "\n".join(TEXTS[3:]) + "\n")
    assert read_texts(texts).skipped == f"1 blank line of the texts file {str(texts)!r} was skipped, not read as texts"
    # none skipped: the message as it was
    result = invoke("--model", files / "bert", "--texts", files / "texts.txt", "--labels", labels, "--layers", "1")
    assert result.exit_code == 2 and "it has 10 labels for 8 texts; expected one label per row of the texts." in \
        result.output


def test_label_column_reads_the_table_in_the_encoding_of_the_texts(files, tmp_path):
    """--encoding latin-1 reads --texts; the labels of the same latin-1 table (--label-column) were read as UTF-8."""
    table = tmp_path / "latin.csv"
    names = {"x": "négatif", "y": "élevé"}
    table.write_bytes(("sentence,label\n" + "".join(f"{t},{names[y]}\n" for t, y in zip(TEXTS, LABELS)))
                      .encode("latin-1"))
    result = invoke("--model", files / "bert", "--texts", table, "--text-column", "sentence", "--encoding", "latin-1",
                    "--labels", table, "--label-column", "label", "--layers", "1", "--metrics", "silhouette_score",
                    "--device", "cpu", "--json", "-")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    expected = measure_layers(TEXTS, model=str(files / "bert"), layers=[1], labels=LABELS,
                              metrics=["silhouette_score"], device="cpu")["rows"][0]["silhouette_score"]
    assert record["rows"][0]["silhouette_score"] == pytest.approx(expected, rel=1e-12)


def test_cli_table_json_and_plot(files, tmp_path):
    out, figure = tmp_path / "m.json", tmp_path / "m.png"
    result = invoke("--model", files / "bert", "--texts", files / "texts.jsonl", "--text-column", "text",
                    "--labels", files / "labels.txt", "--json", out, "--plot", figure, "--device", "cpu",
                    "--layers", "0,2")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "8 texts, sentence level (mean pooling)" in lines[0]
    assert lines[1].split()[:3] == ["layer", "n", "IsoScore"] and "silhouette" in lines[1]
    assert [line.split()[0] for line in lines[2:4]] == ["0", "2"]
    record = json.loads(out.read_text())
    assert [r["layer"] for r in record["rows"]] == [0, 2] and record["labels"].endswith("labels.txt")
    import hashlib

    texts = files / "texts.jsonl"
    assert record["inputs"]["texts"] == [{"path": str(texts), "bytes": texts.stat().st_size,
                                          "sha256": hashlib.sha256(texts.read_bytes()).hexdigest()}]
    assert record["inputs"]["labels"][0]["path"] == str(files / "labels.txt")
    assert figure.stat().st_size > 1000


def test_the_json_records_the_texts_as_read_not_as_edited_during_the_run(files, tmp_path, monkeypatch):
    """``inputs`` of ``--json`` hashed the texts and labels files after the forward pass, so a file edited while the
    model ran was recorded with the new contents it never measured (a user trial): they are hashed as read."""
    import hashlib

    from isotropy.measure import from_model

    texts, labels = tmp_path / "texts.txt", tmp_path / "labels.txt"
    texts.write_text("".join(f"{t}\n" for t in TEXTS))
    labels.write_text("".join(f"{y}\n" for y in LABELS))
    read = {path: (path.stat().st_size, hashlib.sha256(path.read_bytes()).hexdigest()) for path in (texts, labels)}
    measured = from_model.measure_layers

    def edited_meanwhile(*args, **kwargs):
        for path in (texts, labels):
            path.write_text(path.read_text() + "edited while the model ran\n")
        return measured(*args, **kwargs)

    monkeypatch.setattr(from_model, "measure_layers", edited_meanwhile)
    out = tmp_path / "m.json"
    result = invoke("--model", files / "bert", "--texts", texts, "--labels", labels, "--layers", "1", "--metrics",
                    "isoscore", "--device", "cpu", "--json", out)
    assert result.exit_code == 0, result.output
    record = json.loads(out.read_text())
    for name, path in (("texts", texts), ("labels", labels)):
        assert record["inputs"][name] == [{"path": str(path), "bytes": read[path][0], "sha256": read[path][1]}]


def _lines_of(fig):
    return [[(line.get_xydata().tolist(), line.get_marker()) for line in ax.lines] for ax in fig.axes]


def test_plot_draws_the_layers_of_a_measure_json_as_measure_plot_does(files, tmp_path, capsys):
    """`isotropy plot OUT.json` draws, from the JSON of `measure --model --json`, the figure --plot draws while measuring
    (the same points, NaN where a value was written as null), beside the JSON or into --out, without the model."""
    from _cli import exiting_cli

    from isotropy.cli import main
    from isotropy.measure.figure import layers_figure, read_layers_json

    out = tmp_path / "m.json"
    result = invoke("--model", files / "bert", "--texts", files / "texts.txt", "--json", out, "--device", "cpu",
                    "--metrics", "isoscore,cosine_similarity_mean,partition_isotropy")
    assert result.exit_code == 0, result.output
    measured = measure_layers(TEXTS, model=str(files / "bert"), metrics=["isoscore", "cosine_similarity_mean", "partition_isotropy"],
                              device="cpu")
    record = read_layers_json(out)
    assert [r["layer"] for r in record["rows"]] == [r["layer"] for r in measured["rows"]] == [0, 1, 2]
    drawn, expected = _lines_of(layers_figure(record)), _lines_of(layers_figure(measured))
    assert len(drawn) == 4 and all(drawn)  # three metrics and the max / median norm, each with its line
    for got, want in zip(drawn, expected):
        assert [m for _, m in got] == [m for _, m in want]
        np.testing.assert_allclose(np.array([xy for xy, _ in got], dtype=float),
                                   np.array([xy for xy, _ in want], dtype=float), rtol=1e-6)
    main(["plot", str(out), "--format", "png"])
    assert capsys.readouterr().out.splitlines() == [str(tmp_path / "m-layers.png")]
    assert (tmp_path / "m-layers.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    main(["plot", str(out), "--format", "svg", "--out", str(tmp_path / "figs")])
    assert (tmp_path / "figs" / "m-layers.svg").stat().st_size > 1000
    # a failed metric (null in the JSON) is a gap, not an error
    broken = json.loads(out.read_text())
    broken["rows"][1]["isoscore"] = None
    (tmp_path / "gap.json").write_text(json.dumps(broken))
    gap = read_layers_json(tmp_path / "gap.json")
    assert np.isnan(gap["rows"][1]["isoscore"]) and gap["rows"][0]["isoscore"] == record["rows"][0]["isoscore"]
    # what cannot be drawn is one line naming the file, and nothing is written
    broken["rows"][1]["layer"] = "middle"
    (tmp_path / "bad.json").write_text(json.dumps(broken))
    code, _, err = exiting_cli(["plot", str(tmp_path / "bad.json")], capsys)
    assert code == 2 and err.strip() == (
        f"Error: The measure JSON {str(tmp_path / 'bad.json')!r} cannot be drawn: row 1 has the layer 'middle'; "
        f"expected layer indices (0 to 100,000) in increasing order, and 'output' only as the last row; expected "
        f"the JSON that "
        f"'isotropy measure --model M --texts T --json FILE' writes.")
    assert not (tmp_path / "bad-layers.png").exists()


def test_plot_of_a_measure_json_into_a_run_folder_only_under_its_figures(tmp_path, capsys):
    """--out into an 'isotropy run' folder put the figure among the run's results; only its figures/ is taken."""
    from _cli import exiting_cli

    from isotropy.cli import main

    rows = [{"layer": i, "isoscore": 0.1 * (i + 1), "norm_max_over_median": 2.0, "n_samples": 5} for i in range(3)]
    (tmp_path / "m.json").write_text(json.dumps({"model": "m", "level": "sentence", "pooling": "mean",
                                                 "metrics": ["isoscore"], "rows": rows}))
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"experiment": "layer-geometry", "status": "finished"}))
    for out in (run, run / "tables"):
        code, _, err = exiting_cli(["plot", str(tmp_path / "m.json"), "--out", str(out)], capsys)
        assert code == 2 and err == (f"Error: --out {str(out)!r} is a folder of the run in {str(run.resolve())!r}: "
                                     f"figures there would count as its results (the next --resume would run it "
                                     f"again). Name {str(run.resolve() / 'figures')!r} or a folder outside the run. "
                                     f"(see 'isotropy plot --help')\n")
    assert sorted(p.name for p in run.rglob("*")) == ["run.json"]
    (run / "notes").mkdir()  # the JSON inside the run, without --out: its folder named as such
    (run / "notes" / "m.json").write_text((tmp_path / "m.json").read_text())
    code, _, err = exiting_cli(["plot", str(run / "notes" / "m.json")], capsys)
    assert code == 2 and err.startswith(f"Error: The JSON's folder {str(run / 'notes')!r} (where the figures go "
                                        f"without --out) is a folder of the run in {str(run.resolve())!r}: ")
    assert f"Give --out {str(run.resolve() / 'figures')!r} or a folder outside the run." in err
    (run / "notes" / "m.json").unlink()
    (run / "notes").rmdir()
    main(["plot", str(tmp_path / "m.json"), "--out", str(run / "figures"), "--format", "png"])
    assert capsys.readouterr().out.splitlines() == [str(run / "figures" / "m-layers.png")]
    # drawn under the run's lock, the figure is listed among the run's files, as a run's own figures are
    assert json.loads((run / ".isotropy.files.json").read_text()) == ["figures", "run.json"]


def test_plot_of_a_json_cut_short_names_both_kinds_it_reads_once(tmp_path, capsys):
    """A JSON that is not valid is one line naming both kinds of JSON plot reads ('expected expected' before)."""
    from _cli import exiting_cli

    (tmp_path / "cut.json").write_text('{"log_history": [')
    code, _, err = exiting_cli(["plot", str(tmp_path / "cut.json")], capsys)
    assert code == 2 and "expected expected" not in err and err.count("\n") == 1
    assert err.endswith("expected the JSON that 'isotropy measure --model M --texts T --json FILE' writes, or a "
                        "Hugging Face trainer_state.json.\n") and "ends mid-document" in err


def test_plot_of_a_measure_json_that_lost_a_key_says_which(tmp_path, capsys):
    """A --model JSON without its 'metrics' was passed on to the training logs' reader ("no 'log_history' list")."""
    from _cli import exiting_cli

    (tmp_path / "m.json").write_text(json.dumps({"model": "m", "level": "sentence", "pooling": "mean", "rows": []}))
    code, _, err = exiting_cli(["plot", str(tmp_path / "m.json")], capsys)
    assert code == 2 and err == (f"Error: The measure JSON {str(tmp_path / 'm.json')!r} cannot be drawn: it has no "
                                 f"'metrics'; expected the JSON that 'isotropy measure --model M --texts T --json FILE' "
                                 f"writes.\n")
    (tmp_path / "state.json").write_text(json.dumps({"log_history": [], "metrics": 1}))  # a training log: its reader's
    code, _, err = exiting_cli(["plot", str(tmp_path / "state.json")], capsys)
    assert code == 2 and "measure JSON" not in err


def test_plot_of_the_json_of_an_embeddings_file_says_it_has_no_layers(files, tmp_path, capsys):
    from _cli import exiting_cli

    out = tmp_path / "e.json"
    assert invoke(files / "emb.npy", "--metrics", "isoscore", "--json", out).exit_code == 0
    code, _, err = exiting_cli(["plot", str(out)], capsys)
    assert code == 2 and err.strip() == (
        f"Error: The measure JSON {str(out)!r} is of an embeddings file: one row of values, with no layer to draw them "
        f"against; expected the JSON that 'isotropy measure --model M --texts T --json FILE' writes, one row per layer.")


def test_table_cells_say_when_i_w_underflowed():
    """I(W) is positive; a 0.0 is float64 underflow (min Z / max Z below 2**-1074, as on Gemma's middle layers)."""
    from isotropy.measure.from_model import format_table

    result = {"metrics": ["isoscore", "partition_isotropy"],
              "rows": [{"layer": 1, "n_samples": 3, "isoscore": 0.0, "partition_isotropy": 0.0, "norm_max_over_median": 2.0},
                       {"layer": 2, "n_samples": 3, "isoscore": float("nan"), "partition_isotropy": 1.23456e-5,
                        "norm_max_over_median": 1.0}]}
    rows = [line.split() for line in format_table(result).splitlines()]
    assert rows[1] == ["1", "3", "0", "<5e-324", "2"] and rows[2] == ["2", "3", "nan", "1.235e-05", "1"]


def test_plot_marks_the_layers_where_i_w_underflowed(tmp_path, monkeypatch):
    """On the log-scale I(W) panel a 0.0 (underflow) cannot be drawn: those layers get their own marker."""
    from matplotlib.figure import Figure

    from isotropy.measure.from_model import plot_layers

    figures = []
    monkeypatch.setattr(Figure, "savefig", lambda self, *args, **kwargs: figures.append(self))
    rows = [{"layer": i, "n_samples": 5, "partition_isotropy": v, "norm_max_over_median": 1.5}
            for i, v in enumerate([4e-11, 3e-314, 0.0, 0.0, 1e-42])]
    plot_layers({"metrics": ["partition_isotropy"], "rows": rows, "model": "m", "level": "sentence",
                 "pooling": "mean"}, tmp_path / "layers.png")
    panel = figures[0].axes[0]
    assert panel.get_yscale() == "log"
    marked = [line for line in panel.lines if line.get_label() == "< 5e-324 (underflow)"]
    assert len(marked) == 1 and list(marked[0].get_xdata()) == [2, 3] and max(marked[0].get_ydata()) < 3e-314


def test_cli_device_auto_and_json_on_stdout(files):
    """--device auto (what the error for an absent CUDA suggests) runs where there is no GPU; with --json - stdout holds
    the JSON alone, the table goes to stderr."""
    result = invoke("--model", files / "bert", "--texts", files / "texts.txt", "--device", "auto", "--layers", "1",
                    "--json", "-")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert [row["layer"] for row in record["rows"]] == [1] and record["n_texts"] == len(TEXTS)
    assert "features per layer" in result.stderr and "features per layer" not in result.stdout
    out = files / "to_stdout.txt"  # --json /dev/stdout > file: the table, then the JSON, as for EMBEDDINGS
    done = subprocess.run([sys.executable, "-m", "isotropy", "measure", "--model", str(files / "bert"), "--texts",
                           str(files / "texts.txt"), "--device", "cpu", "--layers", "1", "--json", "/dev/stdout"],
                          stdout=out.open("w"), stderr=subprocess.PIPE, text=True, check=False)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert "features per layer" in text.splitlines()[0] and json.loads(text[text.index("{"):])["rows"][0]["layer"] == 1


def test_cli_on_a_gguf_decoder(files, tmp_path):
    result = invoke("--model", files / "gemma.gguf", "--texts", files / "texts.txt", "--device", "cpu",
                    "--pooling", "last", "--layers", "1,2")
    assert result.exit_code == 0, result.output
    assert "8 texts, sentence level (last pooling), 16 features per layer" in result.stdout.splitlines()[0]
    refused = invoke("--model", files / "gemma.gguf", "--texts", files / "texts.txt", "--pooling", "first")
    assert refused.exit_code == 2 and "first token sees only itself" in refused.output
    tokens = invoke("--model", files / "gemma.gguf", "--texts", files / "texts.txt", "--level", "token",
                    "--layers", "2", "--json", "-")
    assert tokens.exit_code == 0, tokens.output
    record = json.loads(tokens.stdout)  # --json -: stdout holds the JSON alone (the table went to stderr)
    assert record["level"] == "token" and record["rows"][0]["n_samples"] == record["n_rows_total"]
    assert [t for t, _ in record["rows"][0]["token_norms"]["special"]] == ["<bos>"]  # Gemma's one special token


@pytest.mark.parametrize(("args", "message"), [
    (["--texts", "TEXTS"], "name the model with --model NAME (e.g. --model all-MiniLM-L6-v2)."),
    (["EMB", "--model", "BERT", "--texts", "TEXTS"], "not both"),
    (["EMB", "--device", "cpu"], "--device applies to --model NAME --texts FILE only"),
    (["EMB", "--texts", "TEXTS", "--layers", "1", "--plot", "OUT"], "--texts, --layers, --plot apply to --model"),
    (["TEXTS"], "To embed sentences with a model: isotropy measure --model NAME --texts FILE."),
    (["--model", "BERT", "--texts", "TEXTS", "--layers", "9"], "Error: --layers must be 'all', 'last' or"),
    (["--model", "BERT", "--texts", "TEXTS", "--device", "gpu"], "Error: --device must be auto, cpu, cuda"),
    (["--model", "BERT", "--texts", "TEXTS", "--metric", "cosine", "--key", "x"], "--metric, --key apply to EMBEDDINGS"),
    (["--model", "BERT"], "--model needs --texts FILE"),
    (["--model", "BERT", "--texts", "TEXTS", "--level", "token", "--pooling", "last"],
     "--pooling applies to --level sentence only"),
    (["--model", "BERT", "--texts", "TEXTS", "--keep-special"], "--keep-special applies to --level token only"),
    (["--model", "BERT", "--texts", "CSV"], "name the text column"),
    (["--model", "BERT", "--texts", "TEXTS", "--layers", "7"], "must be 'all', 'last' or hidden-state indices"),
    (["--model", "BERT", "--texts", "TEXTS", "--pooling", "cls"], "Got 'cls' instead. Did you mean 'first'?"),
    (["--model", "BERT", "--texts", "TEXTS", "--metrics", "dunn"], "Did you mean 'dunn_index'?"),
    (["--model", "BERT", "--texts", "TEXTS", "--labels", "TEXTS"], None),
])
def test_cli_errors_are_one_line(files, args, message):
    paths = {"TEXTS": files / "texts.txt", "CSV": files / "texts.csv", "BERT": files / "bert", "EMB": files / "emb.npy",
             "OUT": files / "figure.png"}
    result = invoke(*[paths.get(a, a) for a in args])
    assert result.exit_code == 2, result.output
    if message is not None:
        assert message in result.output
    assert result.output.strip().splitlines()[-1].startswith("Error:")


def test_every_metric_gives_on_float32_states_the_value_of_their_float64_copy():
    """measure_layers hands a float32 model's states to the metrics as they are (no float64 copy, one shared
    covariance pass): that changes no value for any metric outside ``_FLOAT64_INPUT``, which get the copy."""
    import warnings

    from isotropy._kernels.rows import shared_statistics
    from isotropy.measure.from_model import _FLOAT64_INPUT
    from isotropy.metrics.table import METRICS

    rng = np.random.default_rng(0)
    X = (rng.standard_normal((300, 4)) @ rng.standard_normal((4, 24)) + 0.1 * rng.standard_normal((300, 24)) + 0.5)
    X = X.astype(np.float32)
    labels = rng.integers(0, 3, 300)
    names = list(METRICS)
    differing = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with shared_statistics(X, names):
            values = {name: float(METRICS[name].function(*((X, labels) if METRICS[name].needs_labels else (X,))))
                      for name in names}
        X64 = X.astype(np.float64)
        for name in names:
            spec = METRICS[name]
            if float(spec.function(*((X64, labels) if spec.needs_labels else (X64,)))) != values[name]:
                differing.add(name)
    assert differing <= _FLOAT64_INPUT
    assert "silhouette_score" in differing  # the test can see a difference: the float32 distance blocks


def test_token_level_runs_repeated_texts_once_and_their_rows_are_equal(files):
    """A repeated text in another batch would get rows a few ulps away from its first copy's (another padded width):
    near-duplicates TwoNN reads as distinct points. It runs once; its rows and special-token norms are its copy's."""
    from transformers import AutoModel, AutoTokenizer

    from isotropy.measure.from_model import token_hidden_states

    tokenizer = AutoTokenizer.from_pretrained(files / "bert")
    network = AutoModel.from_pretrained(files / "bert").eval()
    texts = [*TEXTS, TEXTS[0], TEXTS[4].upper()]  # the tiny tokenizer lower-cases: both repeat a text
    seen = []
    forward = type(network).forward

    def spy(self, *args, **kwargs):
        seen.append(int(kwargs["input_ids"].shape[0]))
        return forward(self, *args, **kwargs)

    type(network).forward = spy
    try:
        out, owner, _, _, special = token_hidden_states(
            texts, tokenizer, network, [0, 2], batch_size=3, max_length=32, keep_special=True, sample_size=None,
            rng=None)
    finally:
        type(network).forward = forward
    assert sum(seen) == len(TEXTS)  # 10 texts, 8 distinct token sequences
    for layer in (0, 2):
        for a, b in ((0, 8), (4, 9)):
            assert np.array_equal(out[layer][owner == a], out[layer][owner == b])
    reference = _bert_states(files / "bert")
    for i, text in enumerate(texts):  # every row is its text's own state (to float32 rounding of other widths)
        expected = reference[TEXTS.index(text.lower())][2]
        np.testing.assert_allclose(out[2][owner == i], expected, rtol=0, atol=1e-5)
    counts = {}
    for name, _ in special[2]:
        counts[name] = counts.get(name, 0) + 1
    assert counts == {"[CLS]": len(texts), "[SEP]": len(texts)}  # each text's special tokens, repeats included


def test_token_level_gives_a_decoder_s_tokens_with_the_same_prefix_one_vector(files):
    """Gemma (causal): "<bos> the" opens 4 of the texts and "<bos> the cat" 2; each prefix's rows are one vector."""
    from isotropy.measure.from_model import token_hidden_states
    from isotropy.models.loading import load_transformer

    tokenizer, network, _ = load_transformer(str(files / "gemma.gguf"), device="cpu")
    with width_rounding(type(network)):
        out, owner, _, _, _ = token_hidden_states(TEXTS, tokenizer, network, [1, 2], batch_size=3, max_length=32,
                                                  keep_special=True, sample_size=None, rng=None)
    encoded = tokenizer(TEXTS, truncation=True, max_length=32)["input_ids"]
    position = np.concatenate([np.arange(len(ids)) for ids in encoded])
    groups = {}
    for row, (i, t) in enumerate(zip(owner, position)):
        groups.setdefault(tuple(encoded[i][:t + 1]), []).append(row)
    shared = [rows for rows in groups.values() if len(rows) > 1]
    assert max(map(len, shared)) == len(TEXTS) and len(shared) >= 3  # <bos> opens every text; <bos> the, <bos> a, ...
    for layer in (1, 2):
        for rows in shared:
            assert all(np.array_equal(out[layer][rows[0]], out[layer][r]) for r in rows[1:])


def test_plot_joins_adjacent_layers_only_and_gives_the_output_row_its_own_tick(tmp_path, monkeypatch):
    """Layers 0, 6, 7 and the output row: 6-7 joined by a solid line, 0-6 by a dotted one (layers 1-5 were not
    measured), and the output star at a tick labelled 'output', not at a layer number."""
    from matplotlib.figure import Figure

    from isotropy.measure.from_model import plot_layers

    figures = []
    monkeypatch.setattr(Figure, "savefig", lambda self, *args, **kwargs: figures.append(self))
    rows = [{"layer": layer, "n_samples": 5, "isoscore": v, "norm_max_over_median": 1.5}
            for layer, v in ((0, 0.1), (6, 0.2), (7, 0.3), ("output", 0.4))]
    plot_layers({"metrics": ["isoscore"], "rows": rows, "model": "m", "level": "sentence", "pooling": "mean"},
                tmp_path / "layers.png")
    panel = figures[0].axes[0]
    solid = [list(line.get_xdata()) for line in panel.lines  # (the output's vertical separator left out)
             if line.get_linestyle() == "-" and len(set(line.get_xdata())) > 1]
    dotted = [list(line.get_xdata()) for line in panel.lines if line.get_linestyle() == ":"]
    assert solid == [[6, 7]] and dotted == [[0, 6]]
    labels = [tick.get_text() for tick in panel.get_xticklabels()]
    assert labels == ["0", "6", "7", "output"]
    star = next(line for line in panel.lines if line.get_label() == "model output")
    assert star.get_xdata()[0] == panel.get_xticks()[-1] and star.get_xdata()[0] not in (0, 6, 7)


def test_n_neighbors_sets_the_mle_of_every_layer(files, tmp_path):
    """``--n-neighbors`` is k of each layer's MLE (the reference: mle_dimension on the manually pooled states)."""
    from isotropy import mle_dimension, twonn_dimension

    out = tmp_path / "k.json"
    result = invoke("--model", files / "bert", "--texts", files / "texts.txt", "--metrics",
                    "twonn_dimension,mle_dimension", "--n-neighbors", 4, "--device", "cpu", "--json", out)
    assert result.exit_code == 0, result.output
    record = json.loads(out.read_text())
    assert record["n_neighbors"] == 4 and record["errors"] == {}
    states = _bert_states(files / "bert")
    for row in record["rows"]:
        X = np.stack([s[row["layer"]].mean(0) for s in states]).astype(np.float64)
        assert row["mle_dimension"] == pytest.approx(mle_dimension(X, n_neighbors=4), rel=1e-3)
        assert row["twonn_dimension"] == pytest.approx(twonn_dimension(X), rel=1e-3)
        assert abs(mle_dimension(X, n_neighbors=4) - mle_dimension(X, n_neighbors=6)) > 1e-3  # k matters here


def test_a_metric_failing_at_every_layer_is_an_error_with_exit_2(files, tmp_path):
    """As on an embeddings file: the metric's error in one line naming the option, the others measured, exit 2."""
    out = tmp_path / "f.json"
    # MLE by name with its default k = 20 > 8 texts - 1: refused before the model is loaded, as a --n-neighbors the
    # texts cannot give (it failed at every layer after the forward pass)
    result = invoke("--model", files / "bert", "--texts", files / "texts.txt", "--metrics",
                    "twonn_dimension,mle_dimension", "--device", "cpu", "--json", out)
    assert result.exit_code == 2, result.output
    assert result.output == ("Error: the default --n-neighbors must be an int in the range [2, 7] (at most n_samples - "
                             "1 = 7 for 8 samples). Got 20 instead.\n")
    assert not out.exists()
    # token level: the rows (the tokens) are known only once embedded, and a k they cannot give fails every layer
    result = invoke("--model", files / "bert", "--texts", files / "texts.txt", "--level", "token", "--metrics",
                    "twonn_dimension,mle_dimension", "--n-neighbors", 100, "--device", "cpu", "--json", out)
    assert result.exit_code == 2, result.output
    assert "Error: mle_dimension (every layer): The layer must have more than --n-neighbors 100 distinct points" \
        in result.output
    assert "Error: 1 of 2 metrics failed (mle_dimension); the others are above and in the JSON." in result.output
    record = json.loads(out.read_text())
    assert list(record["errors"]) == ["mle_dimension"]
    assert all(r["mle_dimension"] is None and r["twonn_dimension"] > 0 for r in record["rows"])


def test_measure_layers_returns_and_warns_a_metric_that_failed_at_every_layer(files):
    from isotropy.measure.from_model import MetricFailedWarning

    with pytest.warns(MetricFailedWarning, match="mle_dimension failed at every layer: The 'n_neighbors' parameter"):
        result = measure_layers(TEXTS, model=str(files / "bert"), metrics=["mle_dimension"], device="cpu")
    assert list(result["errors"]) == ["mle_dimension"]
    with pytest.raises(ValueError, match="The 'n_neighbors' parameter of measure_layers must be"):
        measure_layers(TEXTS, model=str(files / "bert"), metrics=["mle_dimension"], device="cpu", n_neighbors=1)


def test_texts_in_another_encoding(files, tmp_path):
    """--encoding reads a latin-1 / cp1252 / utf-16 file; without it the error says where and names the option."""
    texts = ["café au lait", "naïve – text", "plain line"]
    for name, encoding in [("t.txt", "latin-1"), ("t.csv", "cp1252"), ("u.txt", "utf-16")]:
        path = tmp_path / name
        body = ("sentence\n" + "".join(f'"{t}"\n' for t in texts)) if name.endswith(".csv") else "\n".join(texts)
        if encoding == "latin-1":
            body = body.replace("–", "-")
        path.write_bytes(body.encode(encoding))
        expected = [t.replace("–", "-") for t in texts] if encoding == "latin-1" else texts
        assert read_texts(path, encoding=encoding) == expected
        with pytest.raises(ValueError, match=rf"{name}' is not utf-8 text \(byte 0x.. on line \d+: .*\); give its "
                                             r"encoding \(--encoding"):
            read_texts(path)
    for codec in ("no-such-codec", "rot13", "base64"):  # the last two are codecs, not text encodings
        with pytest.raises(ValueError, match="The 'encoding' parameter of read_texts must be a text encoding"):
            read_texts(tmp_path / "t.txt", encoding=codec)
    long = tmp_path / "long.csv"  # the bad byte's line in the file, far beyond a reader's first buffer (not its offset)
    long.write_bytes(("text\n" + "plain line\n" * 5000 + "café\n").encode("latin-1"))
    with pytest.raises(ValueError, match=r"\(byte 0xe9 on line 5002: invalid continuation byte\)"):
        read_texts(long)
    ellipsis = tmp_path / "ellipsis.txt"  # 0x85 is U+0085 in latin-1 (a line break to str.splitlines), not a new text
    ellipsis.write_bytes("it was ok\x85 I guess\r\nsecond line\rthird\u2028 part\n".encode("latin-1", "replace"))
    assert read_texts(ellipsis, encoding="latin-1") == ["it was ok\x85 I guess", "second line", "third? part"]
    bom = tmp_path / "bom.csv"  # a UTF-8 file with a byte-order mark (spreadsheet exports): the column keeps its name
    bom.write_bytes("text,y\ncafé,1\nthé,0\n".encode("utf-8-sig"))
    assert read_texts(bom, column="text") == ["café", "thé"]
    result = invoke("--model", files / "bert", "--texts", tmp_path / "t.txt", "--metrics", "isoscore", "--device", "cpu")
    assert result.exit_code == 2 and "give its encoding (--encoding, e.g. latin-1 or cp1252)" in result.output
    result = invoke("--model", files / "bert", "--texts", tmp_path / "t.txt", "--encoding", "latin-1", "--metrics",
                    "isoscore", "--device", "cpu", "--json", "-")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["n_texts"] == 3 and json.loads(result.stdout)["encoding"] == "latin-1"
    result = invoke("--model", files / "bert", "--texts", files / "texts.txt", "--shrinkage-sample", tmp_path / "t.txt",
                    "--metrics", "isoscore_star", "--device", "cpu")  # the sample's file is named by its option
    assert result.exit_code == 2
    assert f"Error: --shrinkage-sample: the texts file {str(tmp_path / 't.txt')!r} is not utf-8 text" in result.output
    result = invoke("--model", files / "bert", "--texts", tmp_path / "t.txt", "--encoding", "nope")
    assert result.exit_code == 2
    assert "Error: --encoding must be a text encoding such as 'utf-8', 'latin-1' or 'cp1252'. Got 'nope'" in result.output


def test_failed_metric_reads_the_same_in_the_table_and_json_as_on_an_embeddings_file(files, tmp_path):
    out = tmp_path / "f.json"
    # token level: the rows (tokens) are known only once the texts are tokenised, so the k fails the metric per layer
    result = invoke("--model", files / "bert", "--texts", files / "texts.txt", "--metrics", "isoscore,mle_dimension",
                    "--level", "token", "--sample-size", 8, "--n-neighbors", 9, "--device", "cpu", "--json", out)
    assert result.exit_code == 2
    table = result.stdout.splitlines()[1:]
    assert table[0].split() == ["layer", "n", "IsoScore", "MLE", "max/med", "norm"]
    assert all(line.split()[3] == "failed" for line in table[1:])
    record = json.loads(out.read_text())
    assert record["complete"] is False
    assert record["errors"] == {"mle_dimension": "The layer must have more than --n-neighbors 9 distinct points. Got 7 "
                                                 "distinct points (1 duplicate rows) instead."}
    assert record["errors"]["mle_dimension"] in result.output  # the JSON's error is the one the table printed
    fine = json.loads(invoke("--model", files / "bert", "--texts", files / "texts.txt", "--metrics", "isoscore",
                             "--device", "cpu", "--json", "-").stdout)
    assert fine["complete"] is True and fine["errors"] == {}


def test_n_neighbors_with_the_default_model_table_is_refused(files):
    """The default --model table has no MLE: --n-neighbors would be ignored without a word."""
    result = invoke("--model", files / "bert", "--texts", files / "texts.txt", "--n-neighbors", 5)
    assert result.exit_code == 2
    assert "--n-neighbors sets k of mle_dimension, which the default table of --model leaves out" in result.output


@pytest.mark.parametrize("option, name, message", [
    ("--json", "afile/x.json", "Error: The --json '{p}' cannot be written: '{a}' on its way is a file, not a directory."),
    ("--plot", "x.jpgg", ("Error: --plot '{p}' has the format 'jpgg', which is not a figure format this command "
                         "writes; expected one of png, svg, pdf, eps, ps, jpg, jpeg, tif, tiff, webp.")),
    ("--plot", "x.raw", "Error: --plot '{p}' has the format 'raw', which is not a figure format this command writes"),
    ("--plot", "out", ("Error: --plot '{p}' has no suffix, which gives the figure's format; expected a name ending in "
                       "one of .png, .svg, .pdf, .eps, .ps, .jpg, .jpeg, .tif, .tiff, .webp (e.g. '{p}.png').")),
    ("--plot", "afile/x.png", "Error: The --plot '{p}' cannot be written: '{a}' on its way is a file, not a directory."),
])
def test_model_outputs_are_checked_before_the_model_runs(tmp_path, option, name, message):
    """A --json under a file or a --plot of an unknown format failed after the whole measurement, as a raw
    '[Errno 20] Not a directory' or matplotlib's message; now at once (the model named here does not even exist)."""
    (tmp_path / "afile").write_text("")
    texts = tmp_path / "t.txt"
    texts.write_text("a cat\nthe dog\n")
    path = tmp_path / name
    result = invoke("--model", tmp_path / "no-such-model", "--texts", texts, option, path)
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1].startswith(message.format(p=path, a=tmp_path / "afile"))


def test_a_sample_size_not_below_the_texts_is_said_not_silently_ignored(files):
    """--sample-size 500 on fewer texts measured them all without a word (a new-user trial); on a file of embeddings
    the same request is said in a note. Now said for --model too, and the values are those without the option."""
    n_texts = len(TEXTS)
    asked = invoke("--model", files / "bert", "--texts", files / "texts.txt", "--metrics", "isoscore",
                   "--sample-size", 500, "--device", "cpu", "--json", "-")
    assert asked.exit_code == 0, asked.output
    assert (f"Note: --sample-size 500 is not below the {n_texts} texts of --texts: every one is measured."
            in asked.stderr)
    plain = invoke("--model", files / "bert", "--texts", files / "texts.txt", "--metrics", "isoscore",
                   "--device", "cpu", "--json", "-")
    assert "--sample-size" not in plain.stderr
    rows = [json.loads(r.stdout)["rows"] for r in (asked, plain)]
    assert [r["isoscore"] for r in rows[0]] == [r["isoscore"] for r in rows[1]]
    assert all(r["n_samples"] == n_texts for r in rows[0])
    fewer = invoke("--model", files / "bert", "--texts", files / "texts.txt", "--metrics", "isoscore",
                   "--sample-size", n_texts - 1, "--device", "cpu", "--json", "-")
    assert fewer.exit_code == 0 and "is not below" not in fewer.stderr


@pytest.mark.parametrize("name", ["metrics.json", "claims.json", "run.json"])
def test_plot_of_a_json_inside_a_run_says_to_give_the_run_folder(tmp_path, capsys, name):
    """``isotropy plot runs/lg/metrics.json`` (layer-geometry's, which has 'model', 'pooling' and 'layers') was told it
    is a measure JSON without 'rows' and 'metrics': a user trial. A JSON file of a run's folder (one holding run.json)
    is that run's: the message says to draw the run's figures from its folder."""
    from _cli import exiting_cli

    run = tmp_path / "lg"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"experiment": "layer-geometry", "status": "complete"}))
    (run / "metrics.json").write_text(json.dumps({"experiment": "layer-geometry", "model": "m", "pooling": "first",
                                                  "layers": [0, 1]}))
    (run / "claims.json").write_text(json.dumps({"claims": []}))
    code, _, err = exiting_cli(["plot", str(run / name)], capsys)
    assert code == 2 and err == (f"Error: The JSON {str(run / name)!r} is a file of the run {str(run)!r}, not the JSON "
                                 f"that 'isotropy measure --model M --texts T --json FILE' writes; draw the run's "
                                 f"figures from its folder: isotropy plot {run}\n")


def test_labels_of_one_class_are_refused_naming_the_file(files, tmp_path):
    """--model with labels of one class said "The labels put the 60 measured rows in 1 clusters", naming neither the
    file nor the metrics (a trial); file mode names LABELS. Now as file mode: the file, all rows, the metrics."""
    one = tmp_path / "one.txt"
    one.write_text("pos\n" * len(TEXTS))
    result = invoke("--model", files / "bert", "--texts", files / "texts.txt", "--labels", one, "--layers", "1",
                    "--metrics", "isoscore,silhouette_score", "--device", "cpu")
    assert result.exit_code == 2, result.output
    assert (f"--labels {str(one)!r} puts all {len(TEXTS)} measured rows in a single cluster; the cluster metrics "
            f"(silhouette_score) need at least 2 clusters.") in result.output
    with pytest.raises(IsotropyValueError, match=r"^The labels put the 3 measured rows in 3 clusters; the cluster "
                                                 r"metrics \(silhouette_score\) need between 2 and n_samples - 1 = 2 "
                                                 r"clusters\.$"):
        measure_layers(TEXTS[:3], model=str(files / "bert"), layers=[1], labels=["a", "b", "c"],
                       metrics=["silhouette_score"], device="cpu")
