"""End-to-end test of ``isotropy run sts-isotropy`` on small subsets of the real files, and its parts."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from scipy.stats import pearsonr, spearmanr

from conftest import shared_data_path
from isotropy.cli import cli


@pytest.fixture(scope="module")
def data_root():
    shared_data_path("senteval", "STS", "STSBenchmark")
    shared_data_path("SICK", "SICK.txt")
    return shared_data_path()


@pytest.fixture(scope="module")
def small_run(data_root, tmp_path_factory):
    """One run on 60 pairs of STS-B test and SICK test (fit on self), with a two-point sweep.

    The setup file is partial: it holds only what differs from the packaged defaults.
    """
    tmp = tmp_path_factory.mktemp("sts")
    config = {"datasets": ["STSB", "SICK"], "limit": 60, "n_clusters": 3, "n_components": 2,
                  "sweep": {"datasets": ["STSB"], "n_clusters": [1, 2], "n_components": [0, 1]}}
    setup = tmp / "small.yaml"
    setup.write_text(yaml.safe_dump(config))
    out = tmp / "results"
    result = CliRunner().invoke(cli, ["run", "sts-isotropy", "--setup", str(setup), "--data-dir", str(data_root),
                                      "--results-dir", str(out), "--device", "cpu", "--quiet"])
    assert result.exit_code == 0, result.output
    return out, json.loads((out / "results.json").read_text())


def test_run_writes_tables_figures_and_metadata(small_run):
    out, results = small_run
    for name in ("results.md", "run.json", "config.yaml", "figures/sts_spearman.png", "figures/sts_spearman.svg",
                 "figures/sts_sweep.png"):
        assert (out / name).is_file(), name
    meta = json.loads((out / "run.json").read_text())
    assert meta["experiment"] == "sts-isotropy" and meta["status"] == "finished"
    assert meta["config"]["limit"] == 60 and meta["config"]["methods"][0] == "Baseline"  # partial YAML merged
    assert list(results["datasets"]) == ["STSB", "SICK"]
    methods = list(results["datasets"]["STSB"]["methods"])
    assert methods == ["Baseline", "Mean", "Mean + PCA", "K-means + Mean", "GMM + Mean + PCA",
                       "K-means + Mean + PCA", "Whitening"]
    md = (out / "results.md").read_text()
    assert "| K-means + Mean + PCA |" in md and "fitted on the sentences of each evaluated data set" in md
    assert [(p["param"], p["value"]) for p in results["sweep"]] == [
        ("n_clusters", 1), ("n_clusters", 2), ("n_components", 0), ("n_components", 1)]


def test_baseline_and_transformed_rows_match_an_independent_computation(small_run, data_root):
    from isotropy import isoscore, partition_isotropy
    from isotropy.datasets.sts import load_sts
    from isotropy.models.encoders import encode_sentences

    _, results = small_run
    d = load_sts("STSB", data_dir=data_root)
    keep = np.sort(np.random.default_rng(0).choice(len(d), 60, replace=False))  # the run's seeded subset
    a = encode_sentences([d.text_a[i] for i in keep], device="cpu", show_progress=False).astype(np.float64)
    b = encode_sentences([d.text_b[i] for i in keep], device="cpu", show_progress=False).astype(np.float64)
    gold = d.scores[keep]
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    row = results["datasets"]["STSB"]["methods"]["Baseline"]
    assert row["all"]["spearman"] == pytest.approx(spearmanr(cos, gold)[0], abs=1e-5)
    assert row["all"]["pearson"] == pytest.approx(pearsonr(cos, gold)[0], abs=1e-5)
    X = np.vstack([a, b])
    assert row["I(W)"] == pytest.approx(partition_isotropy(X), rel=1e-4)
    # "Mean": plain centring of the 120 sentences, by hand
    Xc = X - X.mean(axis=0)
    cos_c = (Xc[:60] * Xc[60:]).sum(1) / np.linalg.norm(Xc[:60], axis=1) / np.linalg.norm(Xc[60:], axis=1)
    mean_row = results["datasets"]["STSB"]["methods"]["Mean"]
    assert mean_row["all"]["spearman"] == pytest.approx(spearmanr(cos_c, gold)[0], abs=1e-5)
    assert mean_row["IsoScore"] == pytest.approx(isoscore(Xc), rel=1e-4)
    # 120 sentences span at most 119 of the 384 dimensions: whitening equalises those, so IsoScore rises
    # above the baseline's but stays far from 1 (it would be ~1 with n >> d, as in the full run)
    white = results["datasets"]["STSB"]["methods"]["Whitening"]["IsoScore"]
    assert row["IsoScore"] < white < 119 / 384 + 0.05


def test_plot_command_redraws_from_the_results_dir(small_run):
    out, _ = small_run
    (out / "figures" / "sts_sweep.png").unlink()
    result = CliRunner().invoke(cli, ["plot", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "figures" / "sts_sweep.png").is_file()


def test_spearman_bars_start_at_zero_and_show_negative_values(small_run, tmp_path):
    import shutil

    from isotropy.experiments.sts_isotropy.plot import plot_results

    out, results = small_run
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    results["datasets"]["STSB"]["methods"]["Mean"]["all"]["spearman"] = -0.25  # a method that hurts
    (copy / "results.json").write_text(json.dumps(results))
    ax = plot_results(copy)["figures/sts_spearman"].axes[0]
    low, high = ax.get_ylim()
    heights = [patch.get_height() for patch in ax.patches]
    assert min(heights) == pytest.approx(-25.0) and low < -25.0 and high > max(heights)
    assert all(patch.get_y() == 0 for patch in ax.patches)  # every bar is drawn from zero


def test_cli_rejects_unknown_dataset(capsys):
    from isotropy.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["run", "sts-isotropy", "--datasets", "STS99"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and len(err.strip().splitlines()) == 1
    assert "'datasets[0]' setting of sts-isotropy must be a non-empty list of data sets from STS12" in err
    assert "'STS99'" in err


def test_fit_on_separate_corpora(data_root):
    from isotropy.experiments.sts_isotropy.run import fit_sentences

    stsb, source = fit_sentences("stsb-train", data_dir=data_root, max_sentences=20000, seed=0)
    assert len(stsb) == 2 * 5749 and source["n_sentences"] == 11498
    shared_data_path("wikitext-2", "wiki.valid.tokens")
    wiki, _ = fit_sentences("wikitext-2", data_dir=data_root, max_sentences=500, seed=0)
    assert len(wiki) == 500 and all(len(s.split()) >= 3 for s in wiki)
    with pytest.raises(FileNotFoundError, match="must be self, stsb-train, wikitext-2 or a text file"):
        fit_sentences("no-such-corpus.txt", data_dir=data_root, max_sentences=10, seed=0)


def test_cosine_rows_matches_sklearn(rng):
    from sklearn.metrics.pairwise import paired_cosine_distances

    from isotropy.experiments.sts_isotropy.run import cosine_rows

    A, B = rng.normal(size=(20, 5)), rng.normal(size=(20, 5))
    np.testing.assert_allclose(cosine_rows(A, B), 1 - paired_cosine_distances(A, B), atol=1e-12)
    B[3] = 0.0
    assert cosine_rows(A, B)[3] == 0.0


def test_encode_mean_pooled_matches_sentence_transformers_and_caches(tmp_path):
    from isotropy.models.encoders import encode_mean_pooled, encode_sentences

    texts = ["a girl is styling her hair .", "a group of men play soccer on the beach .", "hi"]
    X = encode_mean_pooled(texts, device="cpu", cache_dir=tmp_path)
    # all-MiniLM-L6-v2 = mean pooling of the last layer, then L2 normalisation
    ref = encode_sentences(texts, device="cpu", use_cache=False, show_progress=False)
    np.testing.assert_allclose(X / np.linalg.norm(X, axis=1, keepdims=True), ref, atol=1e-5)
    # the one forward pass caches the layer asked for (-1) and every hidden state 0..6 of the 6-layer model
    assert len(list(tmp_path.glob("*.npy"))) == 8
    np.testing.assert_array_equal(encode_mean_pooled(texts, device="cpu", cache_dir=tmp_path), X)
    X0 = encode_mean_pooled(texts, device="cpu", layer=0, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*.npy"))) == 8 and not np.allclose(X0, X)
    with pytest.raises(ValueError, match="'layer' parameter of encode_mean_pooled must be in"):
        encode_mean_pooled(texts, device="cpu", layer=40, use_cache=False)


def test_fit_on_a_text_file_uses_the_corpus_mean(data_root, tmp_path):
    from isotropy.datasets.sts import load_sts
    from isotropy.models.encoders import encode_sentences

    corpus = load_sts("STSB", split="train", data_dir=data_root).text_a[:80]
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(corpus) + "\n")
    out = tmp_path / "results"
    result = CliRunner().invoke(cli, ["run", "sts-isotropy", "--fit-on", str(path), "--datasets", "STSB", "--set",
                                      "limit=30", "--set", "n_clusters=2", "--set", "n_components=1", "--set",
                                      "sweep=null", "--data-dir", str(data_root), "--results-dir", str(out),
                                      "--device", "cpu", "--quiet"])
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    assert results["fit"]["n_sentences"] == 80
    assert "once on a separate corpus" in (out / "results.md").read_text()
    # "Mean" subtracts the corpus mean (not the evaluated sentences' mean): recompute by hand
    mu = encode_sentences(corpus, device="cpu", show_progress=False).astype(np.float64).mean(axis=0)
    d = load_sts("STSB", data_dir=data_root)
    keep = np.sort(np.random.default_rng(0).choice(len(d), 30, replace=False))
    a = encode_sentences([d.text_a[i] for i in keep], device="cpu", show_progress=False) - mu
    b = encode_sentences([d.text_b[i] for i in keep], device="cpu", show_progress=False) - mu
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    got = results["datasets"]["STSB"]["methods"]["Mean"]["all"]["spearman"]
    assert got == pytest.approx(spearmanr(cos, d.scores[keep])[0], abs=1e-5)
