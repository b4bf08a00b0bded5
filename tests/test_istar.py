"""I-STAR / CosReg fine-tuning (isotropy.experiments.istar) on a tiny randomly initialised BERT.

Expected values come from independent references: numpy's covariance for Σ_S, sentence-transformers'
own encoding of the packaged MiniLM for the pooled representation, autograd linearity for the sign
of the regulariser, and an uninterrupted sweep for the resumed one.
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import torch

from conftest import shared_data_path
from isotropy import isoscore_star
from isotropy.experiments._config import ConfigError
from isotropy.experiments._finetune import train as train_module
from isotropy.experiments._finetune.config import resolve
from isotropy.experiments._finetune.data import subsample, tokenise
from isotropy.experiments._finetune.model import (
    SentenceClassifier,
    layer_indices,
    select_states,
)
from isotropy.experiments._finetune.train import (
    regularised_loss,
    shrinkage_covariance,
    training_step,
)
from isotropy.experiments._runner import execute
from isotropy.experiments.istar.experiment import EXPERIMENT as IS

SENTENCES = ["a gripping , funny film", "dull and lifeless", "the best movie of the year",
             "i hated every minute", "an uneven but rewarding ride", "painfully slow",
             "sharp writing and great acting", "nothing works here", "a small gem", "boring beyond belief",
             "warm , witty and wise", "a mess from start to finish"]


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    """A 2-layer, 32-d BERT with random weights and the packaged MiniLM tokenizer, saved as a model directory."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    from isotropy.models.encoders import resolve_model

    path = tmp_path_factory.mktemp("tiny-bert")
    tokenizer = AutoTokenizer.from_pretrained(resolve_model("all-MiniLM-L6-v2"))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64)
    BertModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    from isotropy.experiments._finetune.model import load_encoder

    return load_encoder(str(tiny_model_dir))


def _config(**overrides):
    return resolve(IS.config("sst2-cpu", **overrides))


def _batch(tokenizer, n=12):
    from isotropy.datasets._types import LabeledTexts

    data = LabeledTexts("toy", SENTENCES[:n], None, np.arange(n) % 2, ["neg", "pos"])
    return tokenise(tokenizer, data, max_length=32)


def test_penalty_gradient_reaches_encoder_with_documented_sign(tiny):
    tokenizer, encoder = tiny
    torch.manual_seed(0)
    model = SentenceClassifier(copy.deepcopy(encoder), 2, dropout=0.0).eval()
    batch = _batch(tokenizer).batch(np.arange(12), "cpu")
    out = model(batch)
    states = select_states(out.hidden_states, batch["attention_mask"], layers="all", level="token", pooling="mean")
    assert states.shape == (2 * int(batch["attention_mask"].sum()), 32)  # every token of both layers
    shrink = torch.eye(32)
    lam = 3.0
    total, task, iso, cos = regularised_loss(out.logits, batch["labels"], states, method="istar", lam=lam,
                                             shrinkage_cov=shrink, zeta=0.2)
    assert cos is None
    # the penalty is IsoScore* of the states (the core metric, numpy float64 reference)
    assert float(iso.detach()) == pytest.approx(isoscore_star(states.detach().double().numpy(), shrinkage_cov=np.eye(32),
                                                     zeta=0.2), abs=1e-5)
    params = [model.encoder.embeddings.word_embeddings.weight, model.encoder.encoder.layer[0].attention.self.query.weight]
    g_total = torch.autograd.grad(total, params, retain_graph=True)
    g_task = torch.autograd.grad(task, params, retain_graph=True, allow_unused=True)
    g_iso = torch.autograd.grad(iso, params, retain_graph=True)
    for gt, gk, gi in zip(g_total, g_task, g_iso):
        assert float(gi.abs().sum()) > 0  # the penalty's gradient reaches the encoder
        gk = torch.zeros_like(gt) if gk is None else gk
        torch.testing.assert_close(gt, gk - lam * gi, rtol=1e-4, atol=1e-7)  # total = task − λ·IsoScore*
    # CosReg: total = task + λ·mean pairwise cosine
    total_c, task_c, _, cos_c = regularised_loss(out.logits, batch["labels"], states, method="cosreg", lam=2.0)
    U = torch.nn.functional.normalize(states.detach().double(), dim=1)
    n = U.shape[0]
    expected_cos = float(((U @ U.T).sum() - n) / (n * (n - 1)))
    assert float(cos_c.detach()) == pytest.approx(expected_cos, abs=1e-5)
    assert float(total_c.detach()) == pytest.approx(float(task_c.detach()) + 2.0 * expected_cos, abs=1e-5)


@pytest.mark.parametrize("lam", [-5.0, 5.0])
def test_lambda_sign_moves_batch_isoscore_star(tiny, lam):
    """λ < 0 lowers IsoScore* of the batch's regularised states over a few steps, λ > 0 raises it."""
    tokenizer, encoder = tiny
    torch.manual_seed(1)
    model = SentenceClassifier(copy.deepcopy(encoder), 2, dropout=0.0)
    model.eval()  # no dropout noise: the change comes from the regulariser
    config = _config(model="unused", lr=1e-3, max_grad_norm=None)
    data = _batch(tokenizer)
    shrink = shrinkage_covariance(model, data, np.arange(12), config=config, device="cpu")
    batch = data.batch(np.arange(12), "cpu")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    values = [training_step(model, batch, optimizer, method="istar", lam=lam, shrinkage_cov=shrink,
                            config=config)["iso_star"] for _ in range(8)]
    with torch.no_grad():
        out = model(batch)
        H = select_states(out.hidden_states, batch["attention_mask"], layers="all", level="token", pooling="mean")
    after = isoscore_star(H.double().numpy(), shrinkage_cov=shrink.double().numpy(), zeta=0.2)
    if lam < 0:
        assert after < values[0] - 0.02
    else:
        assert after > values[0] + 0.02


def test_shrinkage_covariance_matches_numpy(tiny):
    tokenizer, encoder = tiny
    model = SentenceClassifier(copy.deepcopy(encoder), 2)
    config = _config(model="unused", eval_batch_size=5)  # several length-sorted batches
    data = _batch(tokenizer)
    idx = np.array([0, 3, 4, 7, 8, 10, 11])
    cov = shrinkage_covariance(model, data, idx, config=config, device="cpu")
    assert model.training  # mode restored
    model.eval()
    with torch.no_grad():
        batch = data.batch(idx, "cpu")
        out = model(batch)
        H = select_states(out.hidden_states, batch["attention_mask"], layers="all", level="token", pooling="mean")
    np.testing.assert_allclose(cov.numpy(), np.cov(H.double().numpy(), rowvar=False), atol=1e-5)


def test_mean_pooling_matches_sentence_transformers():
    """The classifier's pooled representation of the packaged MiniLM is sentence-transformers' embedding."""
    from sentence_transformers import SentenceTransformer

    from isotropy.experiments._finetune.model import load_encoder
    from isotropy.experiments._finetune.train import evaluate
    from isotropy.models.encoders import resolve_model

    tokenizer, encoder = load_encoder("all-MiniLM-L6-v2")
    model = SentenceClassifier(encoder, 2)
    _, pooled = evaluate(model, _batch(tokenizer, 6), batch_size=4, device="cpu")
    reference = SentenceTransformer(resolve_model("all-MiniLM-L6-v2"), device="cpu").encode(SENTENCES[:6])
    np.testing.assert_allclose(pooled / np.linalg.norm(pooled, axis=1, keepdims=True), reference, atol=2e-5)


def _sweep_config(model_dir, **overrides):
    base = {"model": str(model_dir), "train_size": 24,
            "validation_size": 20, "batch_size": 8, "eval_batch_size": 32, "seeds": [0], "lambdas": [-3.0],
            "cosreg": False, "checkpoint_every": 1, "istar.shrinkage_sample": 16, "lr": 1e-3, "max_length": 24}
    base.update(overrides)
    return IS.config("sst2-cpu", **base)


def run(config, results_dir, *, resume=False, quiet=True):
    """One sweep through the experiment contract on CPU, data from ../shared/data; returns the results."""
    return execute(IS, config, results_dir=results_dir, device="cpu", resume=resume, quiet=quiet, plot=False,
                   data_dir=shared_data_path("glue_data").parent).results


def _strip(records):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in records]


def test_resume_after_interrupt_gives_identical_results(tiny_model_dir, tmp_path, monkeypatch, capsys):
    config = _sweep_config(tiny_model_dir)
    whole = run(config, tmp_path / "whole")
    original = train_module.train_run

    def interrupted(spec, *args, **kwargs):  # mid-run, after 2 of 3 steps of the I-STAR run
        return original(spec, *args, **kwargs, interrupt_at_step=2 if spec.run_id == "istar_-3_seed0" else None)

    monkeypatch.setattr(train_module, "train_run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(config, tmp_path / "cut")
    monkeypatch.setattr(train_module, "train_run", original)
    assert (tmp_path / "cut" / "runs" / "base_seed0.json").is_file()
    assert not (tmp_path / "cut" / "runs" / "istar_-3_seed0.json").exists()
    assert (tmp_path / "cut" / "checkpoints" / "istar_-3_seed0.pt").is_file()
    partial = json.loads((tmp_path / "cut" / "results.json").read_text())  # tables kept up to date per run
    assert not partial["complete"] and (partial["finished_runs"], partial["planned_runs"]) == (1, 2)
    assert (tmp_path / "cut" / "results.md").read_text().startswith("Partial: 1 of 2 runs finished.")
    assert json.loads((tmp_path / "cut" / "run.json").read_text())["status"] == "interrupted"
    with pytest.raises(ValueError, match=r"Cannot resume .*: its run ran with lr=.* where this one has .*--overwrite"):
        run(_sweep_config(tiny_model_dir, lr=2e-3), tmp_path / "cut", resume=True)
    capsys.readouterr()
    resumed = run(config, tmp_path / "cut", resume=True, quiet=False)
    messages = capsys.readouterr().err
    assert "finished earlier" in messages and "resumed at step 2/3" in messages
    assert _strip(resumed["runs"]) == _strip(whole["runs"]) and resumed["complete"]
    assert not (tmp_path / "cut" / "checkpoints" / "istar_-3_seed0.pt").exists()


def test_resume_refuses_a_finished_run_file_without_its_metrics(tiny_model_dir, tmp_path):
    """A runs/*.json with a valid mark but no metrics: one line naming the file (a KeyError traceback before)."""
    config = _sweep_config(tiny_model_dir, lambdas=[-3.0], checkpoint_every=0)
    run(config, tmp_path)
    part = tmp_path / "runs" / "base_seed0.json"
    record = json.loads(part.read_text())
    part.write_text(json.dumps({k: v for k, v in record.items() if k not in ("score", "isoscore_star")}))
    with pytest.raises(ValueError, match=r"is marked complete but lacks \['score', 'isoscore_star'\]") as info:
        run(config, tmp_path, resume=True)
    assert "\n" not in str(info.value) and str(part) in str(info.value)
    part.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))  # a random file in its place
    with pytest.raises(ValueError, match="is not a readable part file"):
        run(config, tmp_path, resume=True)


def test_quiet_silences_every_progress_bar_and_restores_the_switches(tiny_model_dir, tmp_path, capfd, monkeypatch):
    """--quiet: not even transformers' own "Loading weights" bar; its and the hub's settings come back after. Without
    --quiet the libraries' bars follow the run's: drawn on a terminal, not into a pipe or a log file."""
    import shutil

    from huggingface_hub.utils import are_progress_bars_disabled
    from transformers.utils import logging as hf_logging

    import isotropy.experiments._runner as runner

    fresh = tmp_path / "model"
    shutil.copytree(tiny_model_dir, fresh)  # a directory no earlier test has loaded
    config = _sweep_config(fresh, lambdas=[-3.0], checkpoint_every=0)
    assert hf_logging.is_progress_bar_enabled() and not are_progress_bars_disabled()
    capfd.readouterr()
    run(config, tmp_path / "quiet", quiet=True)
    quiet = capfd.readouterr()
    assert "Loading weights" not in quiet.err and "it/s]" not in quiet.err and "%|" not in quiet.err, quiet.err
    assert quiet.out == ""
    assert hf_logging.is_progress_bar_enabled() and not are_progress_bars_disabled()  # restored
    run(config, tmp_path / "piped", quiet=False)  # stderr is pytest's capture, not a terminal: no bar either
    assert "Loading weights" not in capfd.readouterr().err
    assert hf_logging.is_progress_bar_enabled() and not are_progress_bars_disabled()  # restored
    monkeypatch.setattr(runner, "_stderr_is_a_terminal", lambda: True)
    run(config, tmp_path / "loud", quiet=False)  # the reference: on a terminal the same run draws the bar
    assert "Loading weights" in capfd.readouterr().err


@pytest.mark.parametrize(("override", "match"), [
    ({"istar": {"zeta": 1.5, "level": "token", "layers": "all", "shrinkage_sample": 8}}, "'istar.zeta'.*Got 1.5"),
    ({"istar": {"zeta": 0.2, "level": "word", "layers": "all", "shrinkage_sample": 8}}, "'istar.level'.*'word'"),
    ({"seeds": []}, "'seeds'"),
    ({"lambdas": [-1, 0]}, "'lambdas'.*non-zero"),
    ({"pooling": "max"}, "'pooling'.*'max'"),
    ({"batch_size": 0}, "'batch_size'.*greater than or equal to 1"),
    ({"metric": "auc"}, "'metric'.*'auc'"),
    ({"checkpoint_every": -1}, "'checkpoint_every'.*Got -1"),
    ({"cosreg": "yes"}, "'cosreg'.*'yes'"),
])
def test_bad_config_values_are_clear_errors(override, match):
    with pytest.raises(ConfigError, match=match):
        IS.config("sst2-cpu", **override)


def test_bad_layers_and_task_are_clear_errors(tiny_model_dir, tmp_path):
    assert layer_indices("all", 7) == [1, 2, 3, 4, 5, 6] and layer_indices([0, -1], 7) == [0, 6]
    with pytest.raises(ValueError, match=r"'istar.layers'.*Got \[9\]"):
        layer_indices([9], 7)
    with pytest.raises(ValueError, match="'task'.*'imdb'"):
        run(_sweep_config(tiny_model_dir, task="imdb"), tmp_path / "x")


def test_max_length_past_the_model_s_positions_is_refused_before_any_training(tiny_model_dir, tmp_path):
    """--set max_length=128 on a model of 64 positions was cut to 64 where the texts were tokenised, without a word,
    while config.yaml recorded 128; now refused once the model is loaded, before any training."""
    from isotropy.experiments._config import ConfigError

    with pytest.raises(ConfigError) as info:
        run(_sweep_config(tiny_model_dir, max_length=65), tmp_path / "x")
    assert str(info.value) == (f"The 'max_length' setting of istar must be at most 64, the most tokens "
                               f"{str(tiny_model_dir)!r} takes (max_position_embeddings: 64 in its config). Got 65 "
                               f"instead.")
    assert not (tmp_path / "x").exists()  # refused in prepare: nothing written


def test_max_length_is_checked_against_the_positions_only_where_they_are_known():
    from types import SimpleNamespace

    from transformers import BertConfig, RobertaConfig

    from isotropy.experiments._config import ConfigError
    from isotropy.experiments._encode import check_max_length

    check_max_length(64, BertConfig(max_position_embeddings=64), model="m", experiment="istar")  # the limit itself
    check_max_length(10**6, SimpleNamespace(model_type="t5", pad_token_id=0), model="m", experiment="istar")  # none
    check_max_length(10**6, None, model="m", experiment="istar")  # no config to read: cut when tokenised, as before
    check_max_length(10**6, {"model_type": "t5"}, model="m", experiment="istar")  # a config.json without positions
    # a packaged default the user did not choose is cut where the texts are tokenised, as before
    check_max_length(128, BertConfig(max_position_embeddings=64), model="m", experiment="istar", given=False)
    with pytest.raises(ConfigError) as info:  # RoBERTa's table of 514 rows holds 512 tokens
        check_max_length(513, RobertaConfig(max_position_embeddings=514, pad_token_id=1), model="roberta-base",
                         experiment="istar")
    assert str(info.value) == ("The 'max_length' setting of istar must be at most 512, the most tokens 'roberta-base' "
                               "takes (max_position_embeddings: 514 in its config, less 2 for its padding offset). "
                               "Got 513 instead.")
    with pytest.raises(ConfigError) as info:  # a config.json read without loading (GPT-2's n_positions)
        check_max_length(2048, {"model_type": "gpt2", "n_positions": 1024}, model="gpt2", experiment="frozen-"
                         "classification")
    assert str(info.value) == ("The 'max_length' setting of frozen-classification must be at most 1024, the most "
                               "tokens 'gpt2' takes (n_positions: 1024 in its config). Got 2048 instead.")


def test_a_config_knows_which_keys_the_user_gave(tmp_path):
    from isotropy.experiments._config import dump_config
    from isotropy.experiments.minibatch_stability.experiment import EXPERIMENT as MS

    assert not IS.config("sst2-cpu").was_given("max_length")
    assert IS.config("sst2-cpu", max_length=24).was_given("max_length")
    assert IS.config("sst2-cpu", sets=["max_length=24"]).was_given("max_length")
    assert resolve(IS.config("sst2-cpu", max_length=24)).was_given("max_length")  # kept by the fine-tuning's copy
    mine = tmp_path / "mine.yaml"
    mine.write_text("max_length: 24\n")
    assert IS.config(str(mine)).was_given("max_length")  # the user's partial YAML file
    saved = tmp_path / "config.yaml"  # a run's saved config holds every key, defaults too: none chosen but --set's
    saved.write_text(dump_config(IS.config("sst2-cpu").model_dump(mode="json"), experiment="istar"))
    assert not IS.config(str(saved)).was_given("max_length")
    assert IS.config(str(saved), sets=["max_length=24"]).was_given("max_length")
    nested = MS.config(sets=["embeddings.max_length=100"])
    assert nested.was_given("embeddings.max_length") and not nested.was_given("embeddings.model")


@pytest.mark.parametrize("experiment, key", [("frozen-classification", "max_length"),
                                             ("minibatch-stability", "embeddings.max_length"),
                                             ("cluster-finetune", "max_length"),
                                             ("layer-geometry", "max_length"),
                                             ("sts-isotropy", "max_length"),
                                             ("activation-diagrams", "fine_tune.max_length")])
def test_every_experiment_with_max_length_refuses_one_past_the_model_s_positions(tiny_model_dir, tmp_path, capsys,
                                                                                  experiment, key):
    from isotropy.cli import main

    model = ["--set", f"embeddings.model={tiny_model_dir}", "--set", "sources=[embeddings]"] \
        if experiment == "minibatch-stability" else ["--set", f"model={tiny_model_dir}"]
    with pytest.raises(SystemExit) as exc:  # cluster-finetune reads its data before it loads the model
        main(["run", experiment, *model, "--set", f"{key}=100", "--results-dir", str(tmp_path / "r"), "--quiet",
              "--device", "cpu", "--data-dir", str(shared_data_path("glue_data").parent)])
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"Error: The '{key}' setting of {experiment} must be at most 64, the most tokens {str(tiny_model_dir)!r} "
        f"takes (max_position_embeddings: 64 in its config). Got 100 instead.")
    assert not (tmp_path / "r").exists()


def test_cli_errors_are_one_line(tmp_path, capsys):
    from isotropy.cli import main

    for argv, match in [(["--seeds", "a,b"], "--seeds"), (["--setup", "nope"], "setup 'nope' of istar"),
                        (["--set", "istar.zeta"], "KEY=VALUE"), (["--set", "nope=1"], "Unknown config key 'nope'"),
                        (["--set", "istar.zeta=2"], "'istar.zeta' setting of istar must be less than or equal to 1"),
                        (["--model", str(tmp_path), "--results-dir", str(tmp_path / "r"), "--data-dir",
                          str(shared_data_path("glue_data").parent), "--train-size", "8"], "could not be loaded")]:
        with pytest.raises(SystemExit) as exc:
            main(["run", "istar", *argv])
        assert exc.value.code == 2
        assert match in capsys.readouterr().err


def test_cli_end_to_end_on_sst2(tiny_model_dir, tmp_path, capsys):
    from isotropy.cli import main

    out = tmp_path / "sweep"
    main(["run", "istar", "--model", str(tiny_model_dir), "--data-dir", str(shared_data_path("glue_data").parent),
          "--results-dir", str(out), "--train-size", "16", "--seeds", "0,1", "--lambdas", "-1,1", "--quiet",
          "--device", "cpu",
          "--set", "validation_size=24", "--set", "batch_size=8", "--set", "istar.shrinkage_sample=8",
          "--set", "max_length=24", "--set", "checkpoint_every=0"])
    printed = capsys.readouterr().out
    assert "| istar | -1 | 2 |" in printed and "| cosreg | 1 | 2 |" in printed
    results = json.loads((out / "results.json").read_text())
    assert len(results["runs"]) == 8  # 2 seeds × (base, λ=-1, λ=1, CosReg)
    assert [r["condition"] for r in results["summary"]] == ["base", "istar:-1", "istar:1", "cosreg:1"]
    for record in results["runs"]:
        assert record["metric"] == "accuracy" and record["n_validation"] == 24 and record["n_train"] == 16
        assert 0 <= record["score"] <= 1 and 0 <= record["isoscore"] <= 1 and 0 <= record["isoscore_star"] <= 1
        assert record["twonn_dimension"] > 0 and -1 <= record["silhouette"] <= 1
        assert (record["score"] * 24) == pytest.approx(round(record["score"] * 24))  # a count of 24 items
        boot = record["bootstrap"]  # the same 200 resamples of the 24 items in every run: paired
        assert boot["random_state"] == [0, 24] and len(boot["score"]) == boot["n_resamples"] == 200
        assert all(s is None or (s * 24) == pytest.approx(round(s * 24)) for s in boot["score"])
    claims = json.loads((out / "claims.json").read_text())  # 2 seeds: not established, but with both intervals
    # the task score: seeds and items; IsoScore*, TwoNN and the silhouette, whose item resamples repeat sentences:
    # the seed spread alone
    assert {c["id"]: c["interval"]["how"].split(":")[0] for c in claims} == {
        "istar-moves-isotropy": "seed spread", "lower-isotropy-better-performance": "both",
        "lower-isotropy-lower-dimension": "seed spread", "minimising-isoscore-maximises-silhouette": "seed spread",
        "negative-istar-beats-no-regularisation": "both"}
    row = results["summary"][1]
    scores = [r["score"] for r in results["runs"] if r["condition"] == "istar:-1"]
    assert row["score_mean"] == pytest.approx(np.mean(scores)) and row["score_std"] == pytest.approx(np.std(scores, ddof=1))
    meta = json.loads((out / "run.json").read_text())
    assert meta["experiment"] == "istar" and meta["resolved_metric"] == "accuracy" and meta["seeds"] == [0, 1]
    assert meta["config"]["lambdas"] == [-1.0, 1.0] and meta["status"] == "finished"
    for name in ("performance_vs_isoscore_star", "twonn_dimension"):
        for ext in ("png", "svg"):
            assert (out / "figures" / f"{name}.{ext}").stat().st_size > 1000
    assert not list((out / "checkpoints").glob("*.pt"))
    (out / "figures" / "twonn_dimension.png").unlink()
    main(["plot", str(out)])
    assert (out / "figures" / "twonn_dimension.png").is_file()


def test_class_silhouette_matches_sklearn():
    """Rudman & Eickhoff's silhouette of the classes: sklearn's euclidean silhouette; None without two classes."""
    from sklearn.metrics import silhouette_score

    from isotropy.experiments._finetune.train import _class_silhouette

    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, size=60)
    X = rng.normal(size=(60, 5)) + labels[:, None] * 2.0
    assert _class_silhouette(X, labels) == pytest.approx(silhouette_score(X, labels), rel=1e-10)
    assert _class_silhouette(X, np.zeros(60, dtype=np.int64)) is None
    assert _class_silhouette(X, np.linspace(0, 1, 60)) is None  # a regression target has no classes


def test_subsample_is_fixed_by_seed():
    from isotropy.datasets._types import LabeledTexts

    data = LabeledTexts("toy", [str(i) for i in range(50)], None, np.arange(50) % 2, ["a", "b"])
    a, b = subsample(data, 10, seed=3), subsample(data, 10, seed=3)
    assert a.text_a == b.text_a and len(a) == 10 and subsample(data, None, seed=0) is data
    assert [int(t) % 2 for t in a.text_a] == a.labels.tolist()


def test_sweep_on_a_user_table_with_sentence_pairs(tiny_model_dir, tmp_path):
    """task: table reads CSV/TSV/JSON-lines files via isotropy.datasets.tables (pairs, label names)."""
    rows = [(SENTENCES[i], SENTENCES[(i + 1) % 12], "same" if i % 3 else "other") for i in range(12)]
    train = tmp_path / "train.csv"
    train.write_text("premise,hypothesis,rel\n" + "".join(f'"{a}","{b}",{c}\n' for a, b, c in rows))
    valid = tmp_path / "valid.jsonl"  # a validation file lacking the class 'other' keeps the training ids
    valid.write_text("".join(json.dumps({"premise": a, "hypothesis": b, "rel": "same"}) + "\n" for a, b, _ in rows[1:7]))
    options = {"task": "table", "model": str(tiny_model_dir), "seeds": [0], "lambdas": [-1.0], "baseline": False,
               "cosreg": False, "batch_size": 4, "train_size": None, "checkpoint_every": 0,
               "istar.shrinkage_sample": 8}
    config = IS.config("sst2-cpu", **options, table={"train": str(train), "validation": str(valid),
                                                     "text_column": "premise", "text_pair_column": "hypothesis",
                                                     "label_column": "rel"})
    results = run(config, tmp_path / "out")
    (record,) = results["runs"]
    assert record["metric"] == "accuracy" and record["n_train"] == 12 and record["n_validation"] == 6
    assert record["steps"] == 3
    with pytest.raises(ConfigError, match="lacks the required key 'table.validation'"):
        IS.config("sst2-cpu", **options, table={"train": str(train)})
