"""``isotropy measure --model NAME --texts FILE``: per-layer geometry of tiny random BERT and Gemma models."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _tiny_models import make_tiny_bert, make_tiny_gemma_gguf
from click.testing import CliRunner

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


def test_cluster_metrics_with_labels(files):
    from sklearn.metrics import calinski_harabasz_score, silhouette_score

    states = _bert_states(files / "bert")
    result = measure_layers(TEXTS, model=str(files / "bert"), layers=[1], labels=LABELS, device="cpu")
    X = np.stack([s[1].mean(0) for s in states]).astype(np.float64)
    row = result["rows"][0]
    assert row["silhouette_score"] == pytest.approx(silhouette_score(X, LABELS), rel=1e-4)
    assert row["calinski_harabasz_score"] == pytest.approx(calinski_harabasz_score(X, LABELS), rel=1e-4)


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
    assert figure.stat().st_size > 1000


def test_cli_on_a_gguf_decoder(files, tmp_path):
    result = invoke("--model", files / "gemma.gguf", "--texts", files / "texts.txt", "--device", "cpu",
                    "--pooling", "last", "--layers", "1,2")
    assert result.exit_code == 0, result.output
    assert "8 texts x 16 features per layer" in result.stdout.splitlines()[0]
    refused = invoke("--model", files / "gemma.gguf", "--texts", files / "texts.txt", "--pooling", "first")
    assert refused.exit_code == 2 and "first token sees only itself" in refused.output
    tokens = invoke("--model", files / "gemma.gguf", "--texts", files / "texts.txt", "--level", "token",
                    "--layers", "2", "--json", "-")
    assert tokens.exit_code == 0, tokens.output
    record = json.loads(tokens.stdout[tokens.stdout.index("{"):])
    assert record["level"] == "token" and record["rows"][0]["n_samples"] == record["n_rows_total"]


@pytest.mark.parametrize(("args", "message"), [
    (["--texts", "TEXTS"], "give EMBEDDINGS, or --model NAME with --texts FILE"),
    (["--model", "BERT"], "--model needs --texts FILE"),
    (["--model", "BERT", "--texts", "CSV"], "name the text column"),
    (["--model", "BERT", "--texts", "TEXTS", "--layers", "7"], "must be 'all', 'last' or hidden-state indices"),
    (["--model", "BERT", "--texts", "TEXTS", "--pooling", "cls"], "Got 'cls' instead. Did you mean 'first'?"),
    (["--model", "BERT", "--texts", "TEXTS", "--metrics", "dunn"], "Did you mean 'dunn_index'?"),
    (["--model", "BERT", "--texts", "TEXTS", "--labels", "TEXTS"], None),
])
def test_cli_errors_are_one_line(files, args, message):
    paths = {"TEXTS": files / "texts.txt", "CSV": files / "texts.csv", "BERT": files / "bert"}
    result = invoke(*[paths.get(a, a) for a in args])
    assert result.exit_code == 2, result.output
    if message is not None:
        assert message in result.output
    assert result.output.strip().splitlines()[-1].startswith("Error:")
