"""Frozen-encoder classification with the isotropy transforms (Rajaee & Pilehvar, "Test on Classification Task").

References: scikit-learn's LogisticRegression on independently built representations, scikit-learn's
PCA for the removed directions, and ``partition_isotropy`` for I(W).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from _repro_models import make_tiny_bert_with_minilm_tokenizer
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression

from conftest import shared_data_path
from isotropy import partition_isotropy
from isotropy.experiments._config import ConfigError
from isotropy.experiments._runner import execute
from isotropy.experiments.frozen_classification.experiment import EXPERIMENT
from isotropy.experiments.frozen_classification.science import METHODS, evaluate_method, make_transform


@pytest.fixture(scope="module")
def tiny_bert_dir(tmp_path_factory):
    return make_tiny_bert_with_minilm_tokenizer(tmp_path_factory.mktemp("tiny-bert"))


def _blobs(n, seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    X = rng.normal(size=(n, 10)) + 0.8 * y[:, None] * np.eye(10)[0] + 20.0  # a large common offset
    X[:, 1] *= 6.0  # one dominant direction that carries no label information
    return X, y


def test_baseline_is_sklearn_logistic_regression():
    X, y = _blobs(300, 0)
    Xv, yv = _blobs(100, 1)
    got = evaluate_method(X, y, Xv, yv, None, C=0.5)
    clf = LogisticRegression(C=0.5, max_iter=2000).fit(X, y)
    assert got["accuracy"] == pytest.approx(clf.score(Xv, yv))
    assert got["train_accuracy"] == pytest.approx(clf.score(X, y))
    assert got["partition_isotropy"] == pytest.approx(partition_isotropy(Xv))


def test_mean_pca_removes_the_top_directions_of_the_training_data():
    X, y = _blobs(300, 0)
    Xv, yv = _blobs(100, 1)
    transform = make_transform("mean+pca", n_clusters=3, n_components=1)
    got = evaluate_method(X, y, Xv, yv, transform)
    pca = PCA(n_components=1).fit(X)
    Zv = (Xv - X.mean(0)) - ((Xv - X.mean(0)) @ pca.components_.T) @ pca.components_
    Z = (X - X.mean(0)) - ((X - X.mean(0)) @ pca.components_.T) @ pca.components_
    clf = LogisticRegression(max_iter=2000).fit(Z, y)
    assert got["accuracy"] == pytest.approx(clf.score(Zv, yv))
    assert got["partition_isotropy"] == pytest.approx(partition_isotropy(Zv), rel=1e-6)
    # the offset and the label-free dominant direction are gone: I(W) rises by orders of magnitude
    assert got["partition_isotropy"] > 100 * evaluate_method(X, y, Xv, yv, None)["partition_isotropy"]


def test_cluster_method_centres_every_cluster():
    X, y = _blobs(300, 0)
    transform = make_transform("kmeans+mean", n_clusters=4, n_components=0, random_state=0)
    evaluate_method(X, y, X[:50], y[:50], transform)
    Z = transform.transform(X)
    for j in range(4):
        np.testing.assert_allclose(Z[transform.labels_ == j].mean(0), 0.0, atol=1e-9)


def test_make_transform_rejects_unknown_method():
    assert len(METHODS) == 6
    with pytest.raises(ValueError, match="'method' parameter of make_transform"):
        make_transform("whitening", n_clusters=2, n_components=1)


@pytest.mark.parametrize("setup", ["minilm", "gemma-3-270m", "bert-base"])
def test_packaged_setups_validate(setup):
    config = EXPERIMENT.config(setup)
    assert config.n_clusters == 27 and config.n_components == 12 and "kmeans+mean+pca" in config.methods


def test_config_validation():
    with pytest.raises(ConfigError, match=r"'methods\[1\]' setting of frozen-classification .* Got 'whiten'"):
        EXPERIMENT.config(methods=["baseline", "whiten"])
    with pytest.raises(ConfigError, match="'train_size' setting of frozen-classification"):
        EXPERIMENT.config(train_size=1)


def test_run_tiny_model(tmp_path, tiny_bert_dir, one_torch_thread):
    shared_data_path("glue_data", "SST-2", "train.tsv")
    from isotropy.datasets.glue import load_glue_task
    from isotropy.models.encoders import encode_mean_pooled

    data_dir = str(shared_data_path())
    config = EXPERIMENT.config(model=str(tiny_bert_dir), max_length=32, train_size=300, n_clusters=3, n_components=2,
                               methods=["baseline", "kmeans+mean+pca"], seeds=[0, 1])
    results = execute(EXPERIMENT, config, results_dir=tmp_path, device="cpu", data_dir=data_dir, quiet=True).results
    assert (tmp_path / "figures" / "frozen_classification.png").is_file()
    train = load_glue_task("sst2", "train", data_dir=data_dir)
    idx = np.sort(np.random.default_rng(0).choice(len(train), size=300, replace=False))
    dev = load_glue_task("sst2", "dev", data_dir=data_dir)
    X = encode_mean_pooled([train.text_a[i] for i in idx], model=str(tiny_bert_dir), max_length=32, use_cache=False)
    Xv = encode_mean_pooled(dev.text_a, model=str(tiny_bert_dir), max_length=32, use_cache=False)
    clf = LogisticRegression(max_iter=2000).fit(X.astype(float), train.labels[idx])
    base = results["summary"][0]
    assert base["method"] == "baseline" and base["accuracy_sd"] == 0.0
    assert base["accuracy"] == pytest.approx(clf.score(Xv.astype(float), dev.labels), abs=2 / len(dev))
    assert base["partition_isotropy"] == pytest.approx(partition_isotropy(Xv.astype(float)), rel=1e-3)
    assert len(results["records"]) == 4
    assert "| kmeans+mean+pca |" in (tmp_path / "results.md").read_text()
    # the report writes claims.json: two clustering seeds decide nothing; the accuracy interval bootstraps the items
    assert len(results["records"][0]["valid_correct"]) == len(dev)
    EXPERIMENT.report(results, tmp_path)
    claims = {c["id"]: c for c in json.loads((tmp_path / "claims.json").read_text())}
    assert sorted(claims) == ["accuracy-kept", "isotropy-up"]
    assert claims["accuracy-kept"]["interval"]["how"].startswith("both:")
    assert claims["accuracy-kept"]["ours"] == pytest.approx(
        100 * (results["summary"][1]["accuracy"] - base["accuracy"]))
    assert {c["verdict"] for c in claims.values()} == {"not established"}


def test_table_shows_a_rounding_level_spread_as_zero():
    from isotropy.experiments.frozen_classification.run import markdown_table

    row = {"method": "mean", "accuracy": 0.8, "accuracy_sd": 0.0, "partition_isotropy": 0.191,
           "partition_isotropy_sd": 3.4e-17, "isoscore": 0.25, "isoscore_sd": 0.0, "train_accuracy": 0.87}
    results = {"task": "sst2", "model": "m", "layer": -1, "seeds": [0, 1, 2], "summary": [row, {
        **row, "method": "kmeans", "partition_isotropy": 7.97e-6, "partition_isotropy_sd": 1.2e-7}],
        "data": {"train": {"n_sentences": 5000}, "validation": {"n_sentences": 872}}}
    lines = markdown_table(results).splitlines()
    assert "| 0.191 ± 0 |" in lines[-2]  # the same value from every seed, up to its last bit
    assert "| 7.97e-06 ± 1.2e-07 |" in lines[-1]  # a spread at the value's own scale is kept
    row["partition_isotropy_sd"] = 4e-4  # a real spread below the mean's last shown digit: still shown
    assert "| 0.191 ± 0.0004 |" in markdown_table(results).splitlines()[-2]


def test_resume_of_a_finished_run_runs_nothing(tmp_path, tiny_bert_dir, one_torch_thread, capsys):
    """As sts-isotropy and layer-geometry: --resume of a finished run of this config is 'nothing to run'."""
    config = EXPERIMENT.config(model=str(tiny_bert_dir), max_length=32, train_size=300, n_clusters=3, n_components=2,
                               methods=["baseline", "mean"], seeds=[0])
    data_dir = str(shared_data_path())
    execute(EXPERIMENT, config, results_dir=tmp_path, device="cpu", data_dir=data_dir, quiet=True, plot=False)
    written = {name: (tmp_path / name).stat().st_mtime_ns for name in ("results.json", "claims.json", "run.json")}
    capsys.readouterr()
    outcome = execute(EXPERIMENT, config, results_dir=tmp_path, device="cpu", data_dir=data_dir, resume=True,
                      plot=False)
    assert outcome.skipped
    assert "already finished with this config; nothing to run" in capsys.readouterr().err
    assert {name: (tmp_path / name).stat().st_mtime_ns for name in written} == written


def test_one_seed_prints_no_spread():
    """One seed measures no spread: the table gives the mean alone, never '± 0.00' (the summary's sd is 0 there)."""
    from isotropy.experiments.frozen_classification.run import markdown_table, summarise

    record = {"method": "mean", "accuracy": 0.8, "train_accuracy": 0.9, "partition_isotropy": 0.191, "isoscore": 0.25,
              "partition_isotropy_train": 0.2}
    results = {"task": "sst2", "model": "m", "layer": -1, "seeds": [0], "summary": summarise([record], ["mean"]),
               "data": {"train": {"n_sentences": 5000}, "validation": {"n_sentences": 872}}}
    assert markdown_table(results).splitlines()[-1] == "| mean | 80.00 | 0.191 | 0.250 | 90.00 |"
    results["summary"] = summarise([record, {**record, "accuracy": 0.7}], ["mean"])
    assert markdown_table(results).splitlines()[-1] == "| mean | 75.00 ± 7.07 | 0.191 ± 0 | 0.250 ± 0.000 | 90.00 |"


def test_istar_table_with_one_seed_prints_no_spread():
    from isotropy.experiments.istar.tables import markdown_table, summarise

    record = {"condition": "istar:-1", "method": "istar", "lambda": -1.0, "metric": "accuracy", "seed": 0,
              "score": 0.81234, "accuracy": 0.81234, "isoscore_star": 0.1, "isoscore": 0.2, "twonn_dimension": 9.5,
              "silhouette": 0.05, "train_isoscore_star_first": 0.1, "train_isoscore_star_last": 0.3}
    line = markdown_table(summarise([record])).splitlines()[-1]
    assert line == "| istar | -1 | 1 | 0.8123 | 0.1000 | 0.2000 | 9.50 | 0.050 | 0.100 → 0.300 |"
    line = markdown_table(summarise([record, {**record, "seed": 1, "score": 0.80234}])).splitlines()[-1]
    assert line.startswith("| istar | -1 | 2 | 0.8073 ± 0.0071 | 0.1000 ± 0.0000 |")
    older = {key: value for key, value in record.items() if key != "silhouette"}  # a run before that field
    line = markdown_table(summarise([record, {**older, "seed": 1}])).splitlines()[-1]
    assert "| 9.50 ± 0.00 | 0.050 |" in line  # one seed recorded the silhouette: its mean alone
