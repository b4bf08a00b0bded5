"""Cluster fine-tuning (Rajaee & Pilehvar, "Fine-Tuning BERT"): the measurements and the classifier's plumbing.

References: closed forms for the zero-mean ratio, ``partition_isotropy``/``isoscore`` for the per-layer
geometry, and the tiny model's own hidden states for the pooled vectors.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _repro_models import make_tiny_bert_with_minilm_tokenizer

from conftest import shared_data_path
from isotropy import isoscore, partition_isotropy
from isotropy.experiments.cluster_finetune.science import layer_geometry, zero_mean_ratio


@pytest.fixture(scope="module")
def tiny_bert_dir(tmp_path_factory):
    return make_tiny_bert_with_minilm_tokenizer(tmp_path_factory.mktemp("tiny-bert"))


def test_zero_mean_ratio_closed_forms():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 5))
    X -= X.mean(0)
    assert zero_mean_ratio(X) == pytest.approx(0.0, abs=1e-12)
    assert zero_mean_ratio(np.tile([3.0, 4.0], (7, 1))) == pytest.approx(1.0)
    # rows ±e1 plus a common offset c·e2: ‖mean‖ = c, every row has norm sqrt(1 + c²)
    Y = np.array([[1.0, 2.0], [-1.0, 2.0]])
    assert zero_mean_ratio(Y) == pytest.approx(2.0 / np.sqrt(5.0))
    with pytest.raises(ValueError, match="'X' parameter of zero_mean_ratio"):
        zero_mean_ratio(np.zeros(3))


def test_layer_geometry_uses_the_library_metrics():
    rng = np.random.default_rng(1)
    states = [rng.normal(size=(40, 6)) + offset for offset in (0.0, 3.0)]
    rows = layer_geometry(states)
    assert [r["layer"] for r in rows] == [1, 2]
    for r, X in zip(rows, states):
        assert r["partition_isotropy"] == pytest.approx(partition_isotropy(X))
        assert r["isoscore"] == pytest.approx(isoscore(X))
        assert r["zero_mean_ratio"] == pytest.approx(zero_mean_ratio(X))
    assert rows[1]["partition_isotropy"] < rows[0]["partition_isotropy"]  # the offset lowers I(W)


class _Centre(torch.nn.Module):
    def forward(self, X):
        return X - X.mean(0, keepdim=True)


@pytest.mark.parametrize("pooling", ["first", "mean"])
def test_pair_classifier_pools_and_transforms(tiny_bert_dir, pooling, one_torch_thread):
    from transformers import AutoModel, AutoTokenizer

    from isotropy.experiments.cluster_finetune.model import PairClassifier

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert_dir)
    encoder = AutoModel.from_pretrained(tiny_bert_dir)
    batch = tokenizer(["a cat sat", "the dog ran far away", "a mat"], ["on the mat", "it sat", "yes"],
                      padding=True, return_tensors="pt")
    labels = torch.tensor([0, 1, 1])
    model = PairClassifier(encoder, 2, pooling=pooling, transform=_Centre(), dropout=0.0).eval()
    raw, features, _ = model.pooled(**batch, output_hidden_states=True)
    hidden = encoder(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    expected = hidden[:, 0] if pooling == "first" else (hidden * mask).sum(1) / mask.sum(1)
    torch.testing.assert_close(raw, expected)
    torch.testing.assert_close(features, expected - expected.mean(0, keepdim=True))  # transform_at_eval
    output = model(**batch, labels=labels, output_hidden_states=True)
    torch.testing.assert_close(output.loss, torch.nn.functional.cross_entropy(model.head(features), labels))
    assert len(output.hidden_states) == 3  # embeddings + 2 layers
    model.transform_at_eval = False
    torch.testing.assert_close(model.pooled(**batch)[1], expected)
    assert model(**batch).hidden_states is None


def test_partition_isotropy_metric_over_batches():
    from isotropy.experiments.cluster_finetune.model import PartitionIsotropyMetric

    X = torch.tensor(np.random.default_rng(2).normal(size=(30, 4)) + 0.5)
    metric = PartitionIsotropyMetric(4)
    for part in torch.split(X, 7):
        metric.update(part)
    assert float(metric.compute()) == pytest.approx(partition_isotropy(X.numpy()))


def test_run_tiny_model_end_to_end(tmp_path, tiny_bert_dir, one_torch_thread, capfd):
    shared_data_path("glue_data", "RTE", "train.tsv")
    from isotropy.experiments._runner import execute
    from isotropy.experiments.cluster_finetune.experiment import EXPERIMENT

    config = EXPERIMENT.config(model=str(tiny_bert_dir), train_size=24, validation_size=20, epochs=1, batch_size=8,
                               eval_batch_size=10, max_length=32, **{"geometry.every_n_steps": 1,
                                                                      "geometry.probe_size": None})
    results = execute(EXPERIMENT, config, results_dir=tmp_path, device="cpu", data_dir=shared_data_path(),
                      quiet=False).results
    printed = capfd.readouterr()  # not --quiet, stderr not a terminal: no Trainer log dicts, no bars
    assert "{'" not in printed.out and "geometry/" not in printed.out and "%|" not in printed.err, printed
    assert [r["condition"] for r in results["summary"]] == ["pretrained", "baseline", "cluster"]
    assert {c["metric"] for c in results["curves"]["baseline_seed0"]} == {"partition_isotropy", "isoscore",
                                                                          "cosine_similarity_mean"}
    assert sorted(p.name for p in (tmp_path / "figures").glob("*.png")) == ["layers.png", "training_curves.png"]
    pretrained = results["summary"][0]["layers"]
    assert [r["layer"] for r in pretrained] == [1, 2]
    # the callback's measurement at step 0 (through the Trainer's log) is the pre-trained encoder's [CLS] geometry
    for name in ("baseline_seed0", "cluster_seed0"):
        start = {c["layer"]: c["value"] for c in results["curves"][name]
                 if c["step"] == 0 and c["metric"] == "partition_isotropy"}
        assert sorted(start) == [1, 2]
        for layer in pretrained:
            assert start[layer["layer"]] == pytest.approx(layer["partition_isotropy"], rel=1e-4)
        steps = {c["step"] for c in results["curves"][name]}
        assert steps == {0, 1, 2, 3}  # every step, 24 pairs in batches of 8
    baseline, cluster = results["summary"][1], results["summary"][2]
    assert baseline["partition_isotropy"] == pytest.approx(baseline["partition_isotropy_pooled"])  # no transform
    assert cluster["partition_isotropy"] > cluster["partition_isotropy_pooled"]  # the transform's whole point
    assert 0.0 <= baseline["accuracy"] <= 1.0
    assert "| cluster | 62.8 | 0.29 |" in (tmp_path / "results.md").read_text()
    import json

    # one epoch, one entry: the final evaluate() of the same model was a second entry of epoch 1.0
    run = json.loads((tmp_path / "runs" / "baseline_seed0.json").read_text())
    assert [e["epoch"] for e in run["epochs"]] == [1.0] and run["steps"] == 3
    # claims.json: one seed of training decides nothing

    EXPERIMENT.report(results, tmp_path)
    claims = json.loads((tmp_path / "claims.json").read_text())
    assert [c["id"] for c in claims] == ["accuracy-cost", "isotropy-up", "cls-not-improved", "cls-zero-mean"]
    assert all(c["n_seeds"] == 1 and c["verdict"] == "not established" for c in claims)
    assert claims[1]["ours"] == pytest.approx(np.log10(cluster["partition_isotropy"]) -
                                              np.log10(baseline["partition_isotropy"]))


def test_small_last_batch_is_refused(tmp_path, tiny_bert_dir):
    shared_data_path("glue_data", "RTE", "train.tsv")
    from isotropy.experiments._runner import execute
    from isotropy.experiments.cluster_finetune.experiment import EXPERIMENT

    config = EXPERIMENT.config(model=str(tiny_bert_dir), train_size=17, batch_size=8)  # last batch: 1 row, 2 clusters
    with pytest.raises(ValueError, match="'train_size' setting of cluster-finetune gives 17 items"):
        execute(EXPERIMENT, config, results_dir=tmp_path / "r", device="cpu", data_dir=shared_data_path(), quiet=True)
    assert not (tmp_path / "r").exists()


def test_first_token_pooling_of_a_decoder_is_refused():
    """A causal decoder's first token sees only itself: [CLS]-style pooling would give every pair one vector."""
    from transformers import GPT2Config, GPT2Model

    from isotropy.experiments.cluster_finetune.model import PairClassifier

    decoder = GPT2Model(GPT2Config(n_embd=16, n_layer=1, n_head=2, vocab_size=50, n_positions=32))
    with pytest.raises(ValueError, match=r"^The 'pooling' parameter of cluster-finetune cannot be 'first' for the "
                                         r"causal decoder 'gpt2': its first token sees only itself, so every sentence would get "
                                         r"the same vector\. Use 'mean'\.$"):
        PairClassifier(decoder, 2, pooling="first")
    assert PairClassifier(decoder, 2, pooling="mean").pooling == "mean"


def _claims_of(tmp_path, pooled_gain: list[float]):
    """The claims of a run whose raw pooled I(W) is ``gain`` times the baseline's, per seed."""
    import json

    from isotropy.experiments.cluster_finetune.run import claims

    runs = tmp_path / "runs"
    runs.mkdir()
    layers = [{"layer": 1, "partition_isotropy": 0.1, "zero_mean_ratio": 0.8}]
    for seed, gain in enumerate(pooled_gain):
        for condition, pooled in (("baseline", 1e-3), ("cluster", 1e-3 * gain)):
            record = {"condition": condition, "seed": seed, "accuracy": 0.6, "partition_isotropy": 1e-3 if
                      condition == "baseline" else 0.3, "isoscore": 0.1, "partition_isotropy_pooled": pooled,
                      "layers": layers}
            (runs / f"{condition}_seed{seed}.json").write_text(json.dumps(record))
    results = {"seeds": list(range(len(pooled_gain))), "pooling": "first", "model": "tiny", "task": "rte",
               "n_train": 40, "epochs": 1, "n_validation": 20}
    return {c.id: c for c in claims(results, tmp_path)}


@pytest.mark.parametrize(("gains", "verdict"), [
    ([3.0, 5.0, 9.0], "does not hold"),     # a threefold to ninefold gain improves the isotropy: not "cannot improve"
    ([0.7, 0.9, 1.1], "holds"),             # within 0.1 decade of no change, or a fall
    ([0.9, 1.0, 1.5], "not established"),   # one seed improves by ×1.5
])
def test_cls_not_improved_needs_a_change_near_zero(tmp_path, gains, verdict):
    found = _claims_of(tmp_path, gains)["cls-not-improved"]
    assert found.ours == pytest.approx(np.mean(np.log10(gains)))
    assert found.verdict == verdict
    assert "below 0.1" in found.rule and "tenfold" not in found.rule


def test_the_page_names_the_rte_validation_classes_as_the_loader_reads_them():
    """The page said "146 not-entailment" for the 277 RTE validation pairs; 146 are entailment (label 0 of the shared
    data's dev.tsv), 131 not-entailment."""
    from pathlib import Path

    from conftest import shared_data_path
    from isotropy.datasets.glue import load_glue_task

    shared_data_path("glue_data", "RTE", "dev.tsv")
    data = load_glue_task("rte", "dev", data_dir=shared_data_path())
    counts = np.bincount(np.asarray(data.labels), minlength=len(data.label_names))
    majority = int(np.argmax(counts))
    page = " ".join((Path(__file__).resolve().parents[1] / "docs" / "experiments" / "cluster-finetune.md")
                    .read_text(encoding="utf-8").split())
    named = ", ".join(f"{n} {name.replace('_', '-')}" for n, name in sorted(zip(counts.tolist(), data.label_names),
                                                                             reverse=True))
    assert f"({named}: always predicting {data.label_names[majority].replace('_', '-')} gives " \
           f"{100 * counts[majority] / counts.sum():.1f} %)" in page
