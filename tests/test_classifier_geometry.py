"""The classifier-geometry experiment: a real small run, resumption, determinism, CLI errors, report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import stats

from conftest import shared_data_path
from isotropy.cli import cli
from isotropy.experiments._runner import execute
from isotropy.experiments.classifier_geometry import train as train_module
from isotropy.experiments.classifier_geometry.experiment import EXPERIMENT as CG
from isotropy.experiments.classifier_geometry.problem import build_problem
from isotropy.experiments.classifier_geometry.report import (
    correlations,
    curves,
    seed_frame,
)
from isotropy.experiments.classifier_geometry.train import train_seed

EXPERIMENT = "classifier-geometry"


def _demo(**overrides):
    """The demo setup (NRC emotion lexicon over the packaged GloVe) on its first n_items words."""
    base = {"n_items": 600, "updates": 30, "seeds": [0, 1], "metric_interval": 10}
    return CG.config("demo", **{**base, **overrides})


def run(config, *, results_dir, resume=False, data_dir=None, overwrite=False):
    """One run through the experiment contract (CPU, one thread, quiet); returns the results."""
    return execute(CG, config, results_dir=results_dir, device="cpu", threads=1, resume=resume, data_dir=data_dir,
                   quiet=True, overwrite=overwrite).results


@pytest.fixture(scope="module")
def small_problem():
    return build_problem(_demo(), device="cpu", show_progress=False)


# ---------------------------------------------------------------- the optimisation loop
def test_real_run_silhouette_rises_isoscore_falls(tmp_path):
    # 2,000 NRC words, 10 emotion labels, lr 0.01 as in the demo config: the paper's effect
    config = _demo(n_items=2000, updates=60, seeds=[0], metric_interval=20)
    result = run(config, results_dir=tmp_path)
    c = pd.read_csv(tmp_path / "curves.csv")
    assert c["step"].tolist() == [0, 20, 40, 60]
    assert np.all(np.diff(c["silhouette_mean"]) > 0)
    assert np.all(np.diff(c["isoscore_mean"]) < 0)
    assert c["loss_mean"].iloc[-1] < c["loss_mean"].iloc[0]
    summary = result["summary"]
    assert summary["correlation"]["seed_means"]["pearson_r"] < -0.9
    assert summary["data"]["n_items"] == 1999  # one of the first 2,000 NRC words has no GloVe vector
    assert summary["data"]["n_parameters"] == 1999 * 50 + 50 * 10 + 10  # embeddings + weight + bias
    for name in ("metrics.csv", "curves.csv", "summary.json", "correlations.md", "correlations.json", "run.json",
                 "config.yaml", "figures/fig2_metrics_vs_updates.png", "figures/fig3_isoscore_vs_silhouette.svg"):
        assert (tmp_path / name).is_file(), name
    meta = json.loads((tmp_path / "run.json").read_text())
    assert meta["experiment"] == EXPERIMENT and meta["seeds"] == [0]
    assert meta["status"] == "finished" and meta["ended"] >= meta["started"]
    assert meta["results_dir"] == str(tmp_path.resolve()) and meta["device"] == "cpu" and meta["threads"] == 1
    seed_file = json.loads((tmp_path / "seeds" / "seed_0.json").read_text())
    assert seed_file["seed"] == 0 and seed_file["complete"] and seed_file["config_hash"] == meta["config_hash"]
    assert not list(tmp_path.rglob("*.tmp*"))


def test_metrics_match_independent_references(small_problem):
    """Step 0 metrics against scikit-learn's silhouette and the isoscore package on the initial vectors."""
    from IsoScore import IsoScore as isoscore_pkg  # takes (n_samples, n_features)
    from sklearn.metrics import silhouette_score as sk_silhouette

    record = train_seed(small_problem, seed=0, updates=1, sample_size=None, threads=1)
    X = small_problem.embeddings.astype(np.float64)
    _, ids = np.unique(small_problem.labels, axis=0, return_inverse=True)
    assert record["metrics"]["silhouette"][0] == pytest.approx(sk_silhouette(X, ids.ravel()), abs=1e-4)
    assert record["metrics"]["isoscore"][0] == pytest.approx(float(isoscore_pkg.IsoScore(X)), abs=1e-4)


def test_same_seed_same_numbers_other_seed_differs(small_problem):
    a = train_seed(small_problem, seed=3, updates=12, metric_interval=4, sample_size=300, threads=1)
    b = train_seed(small_problem, seed=3, updates=12, metric_interval=4, sample_size=300, threads=1)
    c = train_seed(small_problem, seed=4, updates=12, metric_interval=4, sample_size=300, threads=1)
    assert a["metrics"] == b["metrics"]
    assert a["metrics"]["step"] == [0, 4, 8, 12]
    assert a["metrics"]["loss"] != c["metrics"]["loss"]


def test_sampling_draws_fresh_samples(small_problem):
    # with a sample smaller than the data, the step-0 value depends on the sample, not only on the data
    full = train_seed(small_problem, seed=0, updates=1, sample_size=None, threads=1)
    sampled = train_seed(small_problem, seed=0, updates=1, sample_size=200, threads=1)
    assert sampled["metrics"]["isoscore"][0] != full["metrics"]["isoscore"][0]
    assert sampled["metrics"]["loss"] == full["metrics"]["loss"]


# ---------------------------------------------------------------- resumption
def test_interrupt_after_one_seed_then_resume_gives_identical_numbers(tmp_path, monkeypatch):
    config = _demo(seeds=[0, 1], updates=10, metric_interval=5)
    reference = run(config, results_dir=tmp_path / "ref")

    calls = []
    original = train_module.train_seed

    class Interrupt(BaseException):  # stands in for Ctrl-C (pytest reserves KeyboardInterrupt for itself)
        pass

    def interrupted(problem, *, seed, **kwargs):
        calls.append(seed)
        if seed == 1 and calls.count(1) == 1:  # only the first attempt of seed 1 is interrupted
            raise Interrupt
        return original(problem, seed=seed, **kwargs)

    monkeypatch.setattr(train_module, "train_seed", interrupted)
    with pytest.raises(Interrupt):
        run(config, results_dir=tmp_path / "run")
    assert calls == [0, 1]
    assert sorted(p.name for p in (tmp_path / "run" / "seeds").iterdir()) == ["seed_0.json"]
    assert not (tmp_path / "run" / "summary.json").exists()
    assert not list((tmp_path / "run").rglob("*.tmp*"))

    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["status"] == "failed" and "Interrupt" in meta["error"] and meta["ended"]
    resumed = run(config, results_dir=tmp_path / "run", resume=True)
    assert calls == [0, 1, 1]  # seed 0 was kept, seed 1 ran again
    ref = pd.read_csv(tmp_path / "ref" / "metrics.csv")
    got = pd.read_csv(tmp_path / "run" / "metrics.csv")
    pd.testing.assert_frame_equal(ref, got)
    assert resumed["summary"]["correlation"] == reference["summary"]["correlation"]


def test_resume_refuses_a_different_config(tmp_path):
    run(_demo(seeds=[0], updates=4, metric_interval=2), results_dir=tmp_path)
    with pytest.raises(ValueError, match=r"Cannot resume .*: its run ran with updates=4 where this one has 6\. .*--overwrite"):
        run(_demo(seeds=[0], updates=6, metric_interval=2), results_dir=tmp_path, resume=True)


def _snapshot(directory):
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_a_fresh_run_failing_before_its_first_result_leaves_the_previous_results_intact(tmp_path, monkeypatch):
    run(_demo(seeds=[0], updates=4, metric_interval=2), results_dir=tmp_path)
    before = _snapshot(tmp_path)
    assert "summary.json" in before and "figures/fig2_metrics_vs_updates.png" in before

    class Interrupt(BaseException):
        pass

    def interrupted(problem, *, seed, **kwargs):
        raise Interrupt

    monkeypatch.setattr(train_module, "train_seed", interrupted)
    with pytest.raises(Interrupt):
        run(_demo(seeds=[0], updates=6, metric_interval=2), results_dir=tmp_path, overwrite=True)
    assert _snapshot(tmp_path) == before  # byte for byte: run.json still describes the finished run
    assert json.loads((tmp_path / "run.json").read_text())["status"] == "finished"


def test_plot_of_a_run_whose_curves_were_removed_names_the_file_and_resume_rewrites_it(tmp_path, monkeypatch, capsys):
    """``curves.csv`` deleted by hand: plot said "no seed has finished there yet", and --resume ran nothing."""
    config = _demo(seeds=[0, 1], updates=4, metric_interval=2, n_items=300)
    run(config, results_dir=tmp_path)
    before = (tmp_path / "curves.csv").read_bytes()
    (tmp_path / "curves.csv").unlink()
    meta = json.loads((tmp_path / "run.json").read_text())
    plot = CliRunner().invoke(cli, ["plot", str(tmp_path)], standalone_mode=False)
    assert isinstance(plot.exception, FileNotFoundError)
    assert str(plot.exception) == (  # run from Python: run.json holds pytest's command, not an isotropy one
        f"{tmp_path} has no curves.csv (the per-update table), though seeds 0, 1 finished there "
        f"(seeds/seed_<s>.json): rewrite it from them, training only the seeds without a file, with "
        f"'isotropy run classifier-geometry ... --results-dir {tmp_path} --resume'.")
    meta["command"] = f"isotropy run classifier-geometry --setup demo --results-dir {tmp_path} --no-plot --quiet"
    (tmp_path / "run.json").write_text(json.dumps(meta))
    plot = CliRunner().invoke(cli, ["plot", str(tmp_path)], standalone_mode=False)
    assert str(plot.exception).endswith(
        f"with 'isotropy run classifier-geometry --setup demo --results-dir {tmp_path} --quiet --resume'.")

    def no_training(problem, **kwargs):
        raise AssertionError("a finished seed was trained again")

    monkeypatch.setattr(train_module, "train_seed", no_training)
    execute(CG, config, results_dir=tmp_path, device="cpu", threads=1, resume=True, quiet=False, plot=False)
    assert (f"{tmp_path}: this run finished, but curves.csv is not there; running again to rewrite it (finished "
            f"parts are kept).") in capsys.readouterr().err
    assert (tmp_path / "curves.csv").read_bytes() == before


def test_plot_of_a_run_without_a_finished_seed_says_so(tmp_path):
    run(_demo(seeds=[0], updates=4, metric_interval=2, n_items=300), results_dir=tmp_path)
    (tmp_path / "curves.csv").unlink()
    (tmp_path / "seeds" / "seed_0.json").unlink()
    plot = CliRunner().invoke(cli, ["plot", str(tmp_path)], standalone_mode=False)
    assert str(plot.exception) == (f"{tmp_path} has no curves.csv: no seed has finished there yet "
                                   f"(run 'isotropy run classifier-geometry ... --resume').")


# ---------------------------------------------------------------- report
def test_correlations_and_curves_match_scipy_and_numpy():
    rng = np.random.default_rng(0)
    records = [{"seed": s, "metrics": {"step": list(range(6)), "loss": rng.random(6).tolist(),
                                       "accuracy": rng.random(6).tolist(), "micro_f1": rng.random(6).tolist(),
                                       "isoscore": rng.random(6).tolist(), "silhouette": rng.random(6).tolist()}}
               for s in (0, 1, 2)]
    frame = seed_frame(records)
    out = correlations(frame)
    iso = np.array([r["metrics"]["isoscore"] for r in records])
    sil = np.array([r["metrics"]["silhouette"] for r in records])
    assert out["per_seed"][1]["pearson_r"] == pytest.approx(stats.pearsonr(iso[1], sil[1])[0])
    assert out["seed_means"]["spearman_rho"] == pytest.approx(stats.spearmanr(iso.mean(0), sil.mean(0))[0])
    c = curves(frame)
    np.testing.assert_allclose(c["isoscore_std"], iso.std(axis=0))
    np.testing.assert_allclose(c["silhouette_mean"], sil.mean(axis=0))


# ---------------------------------------------------------------- data of the setups
def test_snli_problem_pairs_rows_of_distinct_sentences(monkeypatch):
    captured = {}

    def fake_encode(texts, **kwargs):  # no model needed to check how pairs index the sentence matrix
        captured["texts"] = list(texts)
        return np.arange(len(texts) * 2, dtype=np.float32).reshape(-1, 2)

    monkeypatch.setattr("isotropy.models.encoders.encode_sentences", fake_encode)
    config = CG.config("snli")
    problem = build_problem(config, data_dir=shared_data_path(), show_progress=False)
    assert problem.n_items == 9_842 and problem.embeddings.shape[0] == 12_982
    assert problem.index.shape == (9_842, 2)
    assert problem.n_parameters == 12_982 * 2 + 4 * 3 + 3
    texts = captured["texts"]
    first = json.loads((shared_data_path("snli_1.0", "snli_1.0_dev.jsonl")).open().readline())
    assert texts[problem.index[0, 0]] == first["sentence1"] and texts[problem.index[0, 1]] == first["sentence2"]


# ---------------------------------------------------------------- command line
def _invoke(args, tmp_path):
    return CliRunner().invoke(cli, ["run", EXPERIMENT, *args, "--results-dir", str(tmp_path), "--quiet"],
                              standalone_mode=False, catch_exceptions=True)


def test_cli_runs_and_plot_redraws(tmp_path):
    result = _invoke(["--setup", "demo", "--updates", "4", "--seeds", "0", "--set", "metric_interval=2",
                      "--set", "n_items=300", "--threads", "1", "--device", "cpu"], tmp_path)
    assert result.exception is None, result.output
    assert "| demo | 299 | 4 | 1 |" in result.output  # the correlation table, labelled by the setup
    assert f"figure: {tmp_path / 'figures' / 'fig2_metrics_vs_updates.png'}" in result.output
    (tmp_path / "figures" / "fig2_metrics_vs_updates.png").unlink()
    redraw = CliRunner().invoke(cli, ["plot", str(tmp_path), "--format", "png,pdf", "--dpi", "50"],
                                standalone_mode=False)
    assert redraw.exception is None and "fig2_metrics_vs_updates.png" in redraw.output
    assert (tmp_path / "figures" / "fig2_metrics_vs_updates.png").is_file()
    assert (tmp_path / "figures" / "fig3_isoscore_vs_silhouette.pdf").read_bytes().startswith(b"%PDF")


@pytest.mark.parametrize("args, error, message", [
    (["--setup", "nonsense"], "ConfigError", (r"neither a packaged setup \(demo, glue, polarity, pos, snli, supersense, "
                                             r"table\) nor a path to a .yaml file")),
    (["--updates", "0"], "ConfigError", (r"The 'updates' setting of classifier-geometry must be greater than or "
                                        r"equal to 1. Got 0 instead.")),
    (["--lr", "-1"], "ConfigError", r"'lr' setting .* greater than 0. Got -1 instead"),
    (["--set", "lr=abc"], "ConfigError", r"'lr' setting .* must be a number. Got 'abc' instead"),
    (["--seeds", "1,1"], "ConfigError", r"'seeds' setting .* distinct"),
    (["--seeds", "a"], "BadParameter", r"comma-separated non-negative ints"),
    (["--device", "bogus"], "ValueError", r"--device must be auto, cpu, cuda, cuda:N.* Got 'bogus'"),
    (["--set", "learning_rate=5"], "ConfigError", r"Unknown config key 'learning_rate' .* did you mean 'lr'\?"),
    (["--set", "device=cpu"], "ConfigError", r"'device' is not a config key .* --device"),
    (["--setup", "glue", "--set", "tasks=[stsb]"], "ValueError", r"'tasks' setting .* GLUE tasks"),
    # two recorded points gave NaN correlations, without a word
    (["--updates", "50", "--set", "metric_interval=50"], "ConfigError",
     (r"^The 'metric_interval' setting of classifier-geometry records the metrics at 2 points with updates=50 \(step "
      r"0 and every metric_interval-th update\), and the correlations over them need at least 3: give metric_interval "
      r"of at most 25 or updates of at least 51. Got 50 instead.$")),
    (["--updates", "1"], "ConfigError", r"at 2 points with updates=1 .*: give updates of at least 11. Got 10 instead.$"),
])
def test_cli_rejects_bad_values(tmp_path, args, error, message):
    result = _invoke(args, tmp_path)
    assert error in [c.__name__ for c in type(result.exception).__mro__], repr(result.exception)
    assert re.search(message, str(result.exception)), str(result.exception)


@pytest.mark.parametrize("setup, expected", [
    ("polarity", r"rt-polaritydata/rt-polarity.pos .*cornell.edu"),
    ("snli", r"snli_1.0/snli_1.0_dev.jsonl .*nlp.stanford.edu/projects/snli"),
    ("glue", r"glue_data/CoLA/train.tsv .*gluebenchmark.com"),
])
def test_missing_data_names_expected_files_and_source(tmp_path, setup, expected):
    result = _invoke(["--setup", setup, "--data-dir", str(tmp_path / "nowhere"), "--model", "glove-6b-50d"], tmp_path)
    assert isinstance(result.exception, FileNotFoundError)
    assert re.search(expected, str(result.exception)), str(result.exception)


def test_glue_grid_runs_each_task_and_draws_figure_4(tmp_path, monkeypatch):
    def fake_encode(texts, **kwargs):  # a stand-in encoder: the grid logic, not MiniLM, is under test here
        rng = np.random.default_rng(len(texts))
        return rng.normal(size=(len(texts), 8)).astype(np.float32)

    monkeypatch.setattr("isotropy.models.encoders.encode_sentences", fake_encode)
    config = CG.config("glue", tasks=["rte", "cola"], n_items=80, updates=4, seeds=[0, 1], metric_interval=2,
                       sample_size=50)
    result = run(config, results_dir=tmp_path, data_dir=shared_data_path())
    assert sorted(result["summary"]) == ["all-MiniLM-L6-v2/cola", "all-MiniLM-L6-v2/rte"]
    rte = result["summary"]["all-MiniLM-L6-v2/rte"]
    assert rte["data"]["n_items"] == 80 and rte["data"]["item_width"] == 2  # pairs: [sentence1; sentence2]
    assert rte["data"]["n_parameters"] == rte["data"]["n_rows"] * 8 + 16 * 2 + 2
    assert (tmp_path / "figures" / "fig4_glue_grid.png").is_file()
    assert (tmp_path / "all-MiniLM-L6-v2" / "cola" / "figures" / "fig2_metrics_vs_updates.svg").is_file()
    assert "all-MiniLM-L6-v2/cola" in (tmp_path / "correlations.md").read_text()
    from isotropy.experiments.classifier_geometry.plot import plot_results

    figures = plot_results(tmp_path)
    assert "figures/fig4_glue_grid" in figures and "all-MiniLM-L6-v2/rte/figures/fig2_metrics_vs_updates" in figures
    grid = figures["figures/fig4_glue_grid"]
    labels = {ax.get_ylabel() for ax in grid.axes}
    assert {"IsoScore", "silhouette"} <= labels  # both y axes of every panel are labelled


# ---------------------------------------------------------------- the table-only keys (text_column ... label_sep)
TABLE_ONLY = ("text_column", "text_pair_column", "label_column", "multilabel", "label_sep")
RUNS = Path(__file__).resolve().parents[1] / "docs" / "runs" / EXPERIMENT


def _printed_config(argv, capsys) -> dict:
    import yaml

    from isotropy.cli import main

    main(["run", EXPERIMENT, *argv, "--print-config"])
    return yaml.safe_load(capsys.readouterr().out)


def test_the_demo_config_does_not_say_single_label_for_the_multi_label_lexicon(capsys):
    """``--setup demo --print-config`` printed ``multilabel: false`` (and a text/label column) for the NRC lexicon,
    which is multi-label and has no columns: the table-only keys are null, 'from the task'."""
    printed = _printed_config(["--setup", "demo"], capsys)
    assert printed["task"] == "lexicon" and {key: printed[key] for key in TABLE_ONLY} == dict.fromkeys(TABLE_ONLY)
    table = _printed_config(["--setup", "table"], capsys)  # a table: its values, null ones resolved
    assert {key: table[key] for key in TABLE_ONLY} == {"text_column": "text", "text_pair_column": None,
                                                        "label_column": "label", "multilabel": False, "label_sep": ","}
    assert _printed_config(["--setup", "demo", "--set", "task=table"], capsys)["multilabel"] is False


@pytest.mark.parametrize("key, text, value", [("multilabel", "true", True), ("multilabel", "false", False),
                                              ("label_column", "emotion", "emotion"), ("label_sep", ";", ";")])
def test_a_table_only_key_set_for_another_task_is_one_line(capsys, key, text, value):
    from isotropy.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["run", EXPERIMENT, "--setup", "demo", "--set", f"{key}={text}", "--print-config"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert err == (f"Error: The '{key}' setting of classifier-geometry applies to task: table only (this config's task "
                   f"is 'lexicon', whose items and labels come with the task); leave it out or null. Got {value!r} "
                   f"instead.\n")


def test_a_committed_config_still_loads_with_its_hash_and_an_earlier_runs_config_resumes(tmp_path, tmp_path_factory):
    """Runs from before the table-only keys became null saved them at their old defaults (text, label, false, ',')
    for every task: such a config loads, and hashes as it did, so its seeds' files are still this config's."""
    import yaml

    from isotropy.experiments._config import config_hash

    record = json.loads((RUNS / "supersense" / "run.json").read_text())
    saved = yaml.safe_load((RUNS / "supersense" / "config.yaml").read_text())
    assert saved["multilabel"] is None and saved["text_column"] is None  # the committed run, re-run on 2026-12-06
    legacy_keys = {"text_column": "text", "label_column": "label", "multilabel": False, "label_sep": ","}
    # that config as runs before 2026-11-28 wrote it (beside, not in, the results folder the run below writes)
    legacy = tmp_path_factory.mktemp("legacy") / "config.yaml"
    legacy.write_text(yaml.safe_dump({**saved, **legacy_keys}))
    config = CG.config(str(legacy))
    assert config.multilabel is None and config.text_column is None
    values = CG.config_model.hashed_values(config.model_dump(mode="json"))
    # the hash of the run before the re-run (dc4eba5244c7588a, recorded with the old defaults) and after it
    assert config_hash(values, ignore=CG.resume_keys) == record["config_hash"] == "dc4eba5244c7588a"

    run(_demo(n_items=300, seeds=[0], updates=4, metric_interval=2), results_dir=tmp_path)
    meta = json.loads((tmp_path / "run.json").read_text())
    assert {key: meta["config"][key] for key in TABLE_ONLY} == dict.fromkeys(TABLE_ONLY)
    legacy = {"text_column": "text", "text_pair_column": None, "label_column": "label", "multilabel": False,
              "label_sep": ","}
    (tmp_path / "run.json").write_text(json.dumps({**meta, "config": {**meta["config"], **legacy}}))
    before = _snapshot(tmp_path)
    outcome = execute(CG, _demo(n_items=300, seeds=[0], updates=4, metric_interval=2), results_dir=tmp_path,
                      device="cpu", threads=1, resume=True, quiet=True)
    assert outcome.skipped and (tmp_path / "run.json").read_bytes() == before["run.json"]  # nothing to run
    outcome = execute(CG, _demo(n_items=300, seeds=[0, 1], updates=4, metric_interval=2), results_dir=tmp_path,
                      device="cpu", threads=1, resume=True, quiet=True)
    assert (tmp_path / "seeds" / "seed_0.json").read_bytes() == before["seeds/seed_0.json"]  # kept, not re-run
    assert json.loads((tmp_path / "seeds" / "seed_1.json").read_text())["config_hash"] == meta["config_hash"]


def test_n_items_that_keeps_one_class_is_refused_before_any_text_is_encoded():
    """The polarity file lists every negative sentence first: n_items=200 kept one class, and the run failed after
    encoding, in silhouette_score, naming neither n_items nor the data."""
    import numpy as np

    from isotropy.datasets._types import LabeledTexts
    from isotropy.experiments.classifier_geometry.problem import _first

    data = LabeledTexts(name="polarity", text_a=[f"t{i}" for i in range(10)], text_b=None,
                        labels=np.array([0] * 6 + [1] * 4), label_names=["negative", "positive"], source={})
    with pytest.raises(ValueError, match=r"^The 'n_items' setting of classifier-geometry keeps the first 5 items of "
                                         r"polarity, which all have one class \('negative'\): give n_items of at least "
                                         r"7 \(the first item of another class\) or leave n_items out\.$"):
        _first(data, 5)
    kept = _first(data, 7)
    assert kept.labels.tolist() == [0] * 6 + [1] and kept.source == {"first_n_items": 7}


def test_a_small_updates_fits_the_setups_metric_interval_with_a_note():
    """--updates 2 under the demo's metric_interval 10 recorded 2 points, whose correlations were NaN."""
    from isotropy.experiments.classifier_geometry.config import recorded_points

    config = CG.config("demo", updates=2)
    assert config.metric_interval == 1 and recorded_points(2, 1) == 3
    assert config._notes == [("metric_interval: the setup's 10 with updates=2 drawn as 1 (3 points at least for the "
                              "correlations; --set metric_interval=... to choose)")]
    assert CG.config("demo").metric_interval == 10 and CG.config("demo", updates=40).metric_interval == 10


@pytest.mark.parametrize(("model", "close"), [("glove-6b-50", " Did you mean 'glove-6b-50d'?"),
                                              ("all-minilm-l6", " Did you mean 'all-MiniLM-L6-v2'?"),
                                              ("no-such-model-anywhere", "")])
def test_an_unknown_model_is_refused_naming_word_vectors_too(tmp_path, monkeypatch, model, close):
    """The demo runs on static word vectors: a misspelt glove-6b-50d got the sentence models' refusal alone, with no
    word about word vectors and no suggestion (a user trial)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = _invoke(["--setup", "demo", "--model", model, "--set", "n_items=300", "--seeds", "0"], tmp_path / "run")
    assert result.exception is not None
    message = str(result.exception)
    assert "\n" not in message
    assert message.endswith("or a Hugging Face hub name while online; or static word vectors (glove-6b-50d, a "
                            ".txt/.vec/.bin/.w2v/.gz file)." + close)
    assert not (tmp_path / "run").exists()


def test_a_table_column_not_in_the_file_is_named_as_the_setting_that_gave_it(tmp_path, capsys):
    # "The 'text_column' parameter of load_table names a column of ..." named a Python parameter no option has (a
    # user trial): the setting, its columns, the closest one and the --set that changes it
    from isotropy.cli import main

    path = tmp_path / "sst.tsv"
    path.write_text("sentence\tlabel\n" + "".join(f"good movie {i}\t{i % 2}\n" for i in range(20)))
    base = ["run", EXPERIMENT, "--setup", "table", "--data-path", str(path), "--results-dir", str(tmp_path / "out")]
    for argv, key, got, close in ([[], "text_column", "text", ""],
                                  [["--set", "text_column=sentence", "--set", "label_column=lable"], "label_column",
                                   "lable", " Did you mean 'label'?"]):
        with pytest.raises(SystemExit) as exit_info:
            main([*base, *argv])
        assert exit_info.value.code == 2
        assert capsys.readouterr().err.splitlines()[-1] == (
            f"Error: The '{key}' setting of classifier-geometry must name a column of {str(path)!r}, one of "
            f"['sentence', 'label']. Got {got!r} instead.{close} Set it with --set {key}=NAME.")
