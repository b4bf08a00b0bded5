"""``isotropy run`` overrides that were silently dropped or refused late (a report-only trial of the run command)."""

from __future__ import annotations

import pytest
from _cli import exiting_cli as _cli

from isotropy.cli import main

CG = "classifier-geometry"


def _error(argv, capsys) -> str:
    code, out, err = _cli(argv, capsys)
    assert code == 2 and out == ""
    assert err.startswith("Error: ") and err.count("\n") == 1, err
    return err


def test_a_second_setup_is_refused_not_dropped(tmp_path, capsys):
    """A second --setup replaced the first without a word (its lr was dropped)."""
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text("lr: 0.5\n")
    second.write_text("updates: 7\n")
    err = _error(["run", CG, "--setup", str(first), "--setup", str(second), "--print-config"], capsys)
    assert "--setup" in err and "a.yaml" in err and "b.yaml" in err


def test_threads_past_the_bound_are_refused_naming_the_range(capsys):
    """--threads 99999 failed inside an import and was reported as a missing package."""
    from isotropy.experiments._context import max_threads

    err = _error(["run", CG, "--threads", "99999", "--print-config"], capsys)
    assert "--threads" in err and f"[1, {max_threads()}]" in err and "99999" in err


def test_execute_refuses_threads_past_the_bound_and_an_empty_results_dir(tmp_path):
    from isotropy.cli import load_experiment
    from isotropy.experiments._runner import execute

    experiment = load_experiment(CG)
    config = experiment.config()
    with pytest.raises(ValueError, match=r"--threads must be an int in \[1, "):
        execute(experiment, config, results_dir=tmp_path, threads=99999)
    with pytest.raises(ValueError, match="--results-dir must be a folder path. Got ''"):
        execute(experiment, config, results_dir="", threads=1)


def test_an_empty_results_dir_is_refused(capsys):
    """--results-dir '' was Path('.'): the results were written into the current directory."""
    err = _error(["run", CG, "--results-dir", "", "--print-config"], capsys)
    assert "--results-dir" in err and "''" in err and "empty" in err


@pytest.mark.parametrize("sets, start", [
    (["tasks=[cola, rte]"], ("The 'tasks' setting of classifier-geometry applies to task: glue only (this config's "
                             "task is 'lexicon'")),
    (["models=[nonexistent-model]"], "The 'models' setting of classifier-geometry applies to task: glue only"),
    (["split=dev"], "The 'split' setting of classifier-geometry applies to task: snli or glue only"),
])
def test_classifier_geometry_refuses_keys_its_task_does_not_read(sets, start, capsys):
    """tasks/models under the lexicon task were recorded and changed nothing (label_sep was already refused)."""
    argv = ["run", CG, *[a for s in sets for a in ("--set", s)], "--print-config"]
    assert _error(argv, capsys).startswith(f"Error: {start}")


@pytest.mark.parametrize("tasks", ["[]", "[cola, cola]", "null", "[stsb]"])
def test_the_glue_grid_refuses_bad_tasks_before_loading_anything(tasks, capsys):
    err = _error(["run", CG, "--setup", "glue", "--set", f"tasks={tasks}", "--print-config"], capsys)
    assert err.startswith("Error: The 'tasks' setting of classifier-geometry must be a non-empty list of distinct "
                          "GLUE tasks from cola, ")


def test_the_packaged_setups_of_classifier_geometry_still_validate():
    from test_experiment_config import check_packaged_setups_validate_as_written

    check_packaged_setups_validate_as_written(CG)


def test_minibatch_stability_refuses_a_cloud_it_does_not_draw(tmp_path, capsys):
    """--set embeddings.model=... under sources [synthetic] finished and recorded the model it never loaded."""
    err = _error(["run", "minibatch-stability", "--set", "sources=[synthetic]", "--set", "embeddings.model=doesnotexist",
                  "--print-config"], capsys)
    assert err.startswith("Error: The 'embeddings.model' setting of minibatch-stability applies only when embeddings "
                          "is in sources (this config's sources are ['synthetic'])")
    assert "'doesnotexist'" in err
    partial = tmp_path / "partial.yaml"
    partial.write_text("sources: [embeddings]\nsynthetic:\n  decay: 2.0\n")
    assert "'synthetic' setting" in _error(["run", "minibatch-stability", "--setup", str(partial), "--print-config"],
                                           capsys)
    # a saved config holds every section, read or not: it runs again as it is
    main(["run", "minibatch-stability", "--set", "sources=[synthetic]", "--print-config"])
    saved = tmp_path / "config.yaml"
    saved.write_text(capsys.readouterr().out)
    main(["run", "minibatch-stability", "--setup", str(saved), "--print-config"])
    assert "- synthetic" in capsys.readouterr().out


def test_activation_diagrams_refuses_a_top_k_past_the_width_before_fine_tuning(tmp_path):
    """top_k 1000 on a narrower model was left out of results.json while config.yaml recorded it."""
    from _repro_models import make_tiny_bert_with_minilm_tokenizer

    from conftest import shared_data_path
    from isotropy.experiments._config import ConfigError
    from isotropy.experiments._runner import execute
    from isotropy.experiments.activation_diagrams.experiment import EXPERIMENT

    shared_data_path("glue_data", "SST-2", "train.tsv")
    model = make_tiny_bert_with_minilm_tokenizer(tmp_path / "tiny-bert")  # 32-d
    fine_tune = {"train_size": 24, "validation_size": 40, "batch_size": 8, "eval_batch_size": 16, "max_length": 32}
    config = EXPERIMENT.config(model=str(model), fine_tune=fine_tune, lambdas=[], top_k=[1, 1000])
    with pytest.raises(ConfigError, match=r"^The 'top_k' setting of activation-diagrams must hold ints in \[1, 32\] "
                                          r"\(the width of .*'s embeddings\); \[1000\] are past it. Got \[1, 1000\] "
                                          r"instead.$"):
        execute(EXPERIMENT, config, results_dir=tmp_path / "ad", device="cpu", data_dir=shared_data_path(),
                quiet=True, threads=1)
    assert not (tmp_path / "ad" / "run.json").exists()


def test_cluster_finetune_refuses_epochs_below_one_step_before_loading_the_model(tmp_path):
    """epochs 1e-9 trained one step (a quarter of an epoch) and recorded 1e-09 epochs."""
    from conftest import shared_data_path
    from isotropy.experiments._config import ConfigError
    from isotropy.experiments._runner import execute
    from isotropy.experiments.cluster_finetune.experiment import EXPERIMENT

    shared_data_path("glue_data", "RTE", "train.tsv")
    config = EXPERIMENT.config(model="never-loaded", train_size=64, validation_size=20, epochs=1e-9, batch_size=16)
    with pytest.raises(ConfigError, match=r"^The 'epochs' setting of cluster-finetune must be at least 0.25, one "
                                          r"optimiser step \(64 training items in batches of 16: 4 steps per epoch\)\. "
                                          r"Got 1e-09 instead\.$"):
        execute(EXPERIMENT, config, results_dir=tmp_path / "cf", device="cpu", data_dir=shared_data_path(), quiet=True,
                threads=1)
    assert not (tmp_path / "cf").exists() or not any((tmp_path / "cf").iterdir())


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    from _repro_models import make_tiny_bert_with_minilm_tokenizer

    return str(make_tiny_bert_with_minilm_tokenizer(tmp_path_factory.mktemp("tiny-bert")))  # 2 layers: [-3, 2]


@pytest.mark.parametrize("name, key, sets", [
    ("frozen-classification", "layer", {"layer": 99, "max_length": 32, "train_size": 40, "seeds": [0]}),
    ("minibatch-stability", "embeddings.layer", {"sources": ["embeddings"], "embeddings.layer": 50,
                                                 "embeddings.max_length": 32, "shrinkage_sample": 8,
                                                 "batch_sizes": [4], "n_batches": 2}),
])
def test_a_layer_the_model_lacks_names_the_config_key(name, key, sets, tiny_bert, tmp_path):
    """The message named encode_mean_pooled's 'layer' parameter, not the key the user set."""
    from conftest import shared_data_path
    from isotropy.cli import load_experiment
    from isotropy.experiments._config import ConfigError
    from isotropy.experiments._runner import execute

    shared_data_path("glue_data", "SST-2", "train.tsv")
    experiment = load_experiment(name)
    model_key = "embeddings.model" if "." in key else "model"
    config = experiment.config(**sets, **{model_key: tiny_bert})
    with pytest.raises(ConfigError, match=rf"^The '{key}' setting of {name} must be a hidden-state index in \[-3, 2\] "
                                          rf"for .*\. Got {sets.get(key)} instead\.$"):
        execute(experiment, config, results_dir=tmp_path / "r", device="cpu", data_dir=shared_data_path(), quiet=True,
                threads=1)


@pytest.mark.parametrize("k_range", ["[15, 2]", "[1, 1]", "[1, 5]"])
def test_layer_geometry_checks_k_range_before_extracting(k_range, capsys):
    """[15, 2] passed --print-config, then failed after the extraction naming ClusterCentering's parameter."""
    err = _error(["run", "layer-geometry", "--set", f"metrics.k_range={k_range}", "--print-config"], capsys)
    assert err.startswith("Error: The 'metrics.k_range' setting of layer-geometry must be a list [k_min, k_max] of "
                          "two ints with 2 <= k_min <= k_max. Got ")


def test_sts_whitening_of_a_rank_deficient_cloud_names_the_config_keys():
    """whitening_eps=0 failed naming Whitening's n_components and eps, not the config's keys."""
    import numpy as np

    from isotropy.experiments._config import ConfigError
    from isotropy.experiments.sts_isotropy.experiment import EXPERIMENT
    from isotropy.experiments.sts_isotropy.run import _apply

    config = EXPERIMENT.config(whitening_eps=0.0)
    X = np.random.default_rng(0).normal(size=(5, 8))  # rank 4 < 8 features
    with pytest.raises(ConfigError, match=r"^The 'whitening_eps' setting of sts-isotropy must be > 0 for these "
                                          r"embeddings, whose covariance is rank-deficient \(rank 4 < 8 directions\).* "
                                          r"whitening_components <= 4\. Got 0\.0 instead\.$"):
        _apply("Whitening", config, X, X, seed=0)


def test_activation_diagrams_fine_tune_baseline_is_refused_without_naming_an_unknown_key(capsys):
    """The hint said --set baseline=..., which is no key of activation-diagrams."""
    err = _error(["run", "activation-diagrams", "--set", "fine_tune.baseline=false", "--print-config"], capsys)
    assert err.startswith("Error: The 'fine_tune' setting of activation-diagrams may not set baseline: this experiment "
                          "always fine-tunes the baseline")
    assert "--set baseline" not in err


@pytest.mark.parametrize("text, where", [
    ("1: 2\n", "the key 1, which YAML reads as a number"),
    ("metrics:\n  true: 3\n", "the key True under 'metrics', which YAML reads as a boolean"),
])
def test_a_setup_file_key_that_is_not_a_name_is_one_sentence(text, where, tmp_path, capsys):
    """It was "The 'config' setting of classifier-geometry must be Keys should be strings. Got 1 instead."."""
    path = tmp_path / "k.yaml"
    path.write_text(text)
    err = _error(["run", "layer-geometry", "--setup", str(path), "--print-config"], capsys)
    assert err == (f"Error: The config file {str(path)!r} has {where}; expected config keys, which are names such as "
                   f"lr (quote a key meant as a name).\n")


@pytest.mark.parametrize("layers", ["[]", "[1, 1]"])
def test_istar_layers_empty_or_repeated_are_refused_up_front(layers, capsys):
    err = _error(["run", "istar", "--set", f"istar.layers={layers}", "--print-config"], capsys)
    assert err.startswith("Error: The 'istar.layers' setting of istar must be 'all', 'last' or a non-empty list of "
                          "distinct hidden-state indices. Got ")


@pytest.mark.parametrize("layers, why", [([0, 99], r"\[99\] are outside it"),
                                         ([2, -1], "two of them name the same hidden state")])
def test_istar_layers_the_model_lacks_are_refused_before_training(layers, why, tiny_bert, tmp_path):
    """Checked at the first I-STAR step before (in select_layers' words), and [6, -1] of 7 was merged silently."""
    from conftest import shared_data_path
    from isotropy.experiments._config import ConfigError
    from isotropy.experiments._runner import execute
    from isotropy.experiments.istar.experiment import EXPERIMENT

    shared_data_path("glue_data", "SST-2", "train.tsv")
    config = EXPERIMENT.config("sst2-cpu", model=tiny_bert, train_size=24, validation_size=40, max_length=32,
                               seeds=[0], lambdas=[-1.0], cosreg=None, **{"istar.layers": layers})
    with pytest.raises(ConfigError, match=rf"^The 'istar.layers' setting must hold distinct hidden-state indices of "
                                          rf".* in \[-3, 2\] \(0 = embedding output, 2 = last layer\); {why}\. Got "):
        execute(EXPERIMENT, config, results_dir=tmp_path / "r", device="cpu", data_dir=shared_data_path(), quiet=True,
                threads=1)
    assert not (tmp_path / "r" / "run.json").exists()


@pytest.mark.parametrize("text, message", [
    ("lr: 1\n---\nupdates: 3\n", ("is not valid YAML: expected a single document in the stream, but found "
                                  "another document at line 2, column 1.")),
    ("null\n", "holds null at the top level; expected a mapping of config keys to values."),
    ("# nothing\n", "is empty; expected a mapping of config keys to values."),
])
def test_config_file_wording(text, message, tmp_path, capsys):
    """Two documents said only "but found another document"; a file holding null was called empty."""
    path = tmp_path / "c.yaml"
    path.write_text(text)
    assert _error(["run", CG, "--setup", str(path), "--print-config"], capsys) == \
        f"Error: The config file {str(path)!r} {message}\n"
