"""The experiment contract's configs: merge order, YAML parsing, one-line errors, the same flags everywhere."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from _cli import exiting_cli as _cli

from isotropy.cli import EXPERIMENTS, load_experiment, main
from isotropy.experiments._config import ConfigError, parse_set_options, parse_yaml_value

CG = "classifier-geometry"


def test_merge_order_defaults_then_setup_then_user_yaml_then_set(tmp_path):
    experiment = load_experiment("layer-geometry")
    user = tmp_path / "mine.yaml"
    user.write_text("max_tokens: 500\nmetrics:\n  n_neighbors: 20\n")  # partial, nested partial too
    config = experiment.config(str(user), sets=["metrics.n_neighbors=50", "static=null"])
    assert config.max_tokens == 500  # from the user's file
    assert config.metrics.n_neighbors == 50  # --set wins over the file
    assert config.metrics.k_range == [2, 15]  # untouched nested keys keep the packaged default
    assert config.static is None  # --set KEY=null reaches the config
    assert config.model == "all-MiniLM-L6-v2"  # everything else: the default setup
    packaged = experiment.config("distilbert-ptb")
    assert packaged.corpus == "ptb" and packaged.pca_layers == [1]


@pytest.mark.parametrize("text, expected", [("1e-3", 1e-3), ("-2E+2", -200.0), ("3", 3), ("null", None),
                                            ("[1, 2]", [1, 2]), ("first", "first"), ("true", True),
                                            ("'1e-3'", "1e-3")])
def test_set_values_are_yaml_with_exponent_floats(text, expected):
    value = parse_yaml_value(text, where="--set x")
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize("text, reason", [(".inf", "the number '.inf' is not finite; expected a finite number"),
                                          ("{a: 1, a: 2}", "duplicate key 'a' (first on line 1)")])
def test_valid_yaml_refused_by_design_is_not_called_invalid(text, reason):
    """'.inf' and a duplicate key are valid YAML that the loader refuses by design: the message says refused and why,
    not that the text is no valid YAML (it said "'.inf' is not a valid YAML value")."""
    with pytest.raises(ConfigError) as refused:
        parse_yaml_value(text, where="--set C")
    message = str(refused.value)
    assert message.startswith(f"--set C: '{text}' is refused ({reason}") and "valid YAML" not in message


def test_set_options_nest_dotted_keys_and_refuse_malformed_pairs():
    assert parse_set_options(["a.b=1", "a.c=x", "d=2"], experiment="e") == {"a": {"b": 1, "c": "x"}, "d": 2}
    for bad in ["novalue", "=3", "a..b=1"]:
        with pytest.raises(ConfigError, match=r"--set of e expects KEY=VALUE"):
            parse_set_options([bad], experiment="e")


def test_set_keys_nest_as_deep_as_yaml_may_and_messages_stay_short(capsys):
    # a 1,000-level dotted key was a RecursionError traceback; 3,000 bad list items a line of one sentence each (8.4 MB
    # for 90,000); a 100 KB value was echoed whole
    with pytest.raises(ConfigError, match=r"^--set of e: the key 'a\.a\.a.*\.\.\. \(2,001 characters\) nests 1000 "
                                          r"levels; expected at most 64"):
        parse_set_options([".".join(["a"] * 1000) + "=1"], experiment="e")
    assert parse_set_options([".".join(["a"] * 64) + "=1"], experiment="e")  # 64 levels: as YAML
    code, _out, err = _cli(["run", "minibatch-stability", "--print-config", "--set",
                           "seeds=[" + ",".join(["-1"] * 3000) + "]"], capsys)
    assert code == 2 and err.count("must be an int in [0, 4294967295]") == 10 and "(2990 more settings are wrong.)" in err
    assert len(err) < 2000
    code, _out, err = _cli(["run", "minibatch-stability", "--print-config", "--set", "seeds=" + "x" * 100_000], capsys)
    assert code == 2 and "... (100,002 characters) instead." in err and len(err) < 500


@pytest.mark.parametrize("content, message", [
    ("updates: [1, 2\n", "is not valid YAML"),
    ("", "is empty"),
    ("# only a comment\n", "is empty"),
    ("- 1\n- 2\n", "holds a list at the top level"),
    ("x: !!python/object/apply:os.system ['true']\n", ("uses the tag '!!python/object/apply:os.system' at line 1, "
                                                         "column 4, which constructs a Python object")),
    ("updates: abc\n", "The 'updates' setting of classifier-geometry must be an integer. Got 'abc' instead."),
    ("lr: '0.01'\n", ("The 'lr' setting of classifier-geometry must be a number. Got '0.01' (read as text, not a "
                     "number: write it as 0.01, without quotes) instead.")),
    ("lr: 1e-3\nlearning_rate: 5\n", "Unknown config key 'learning_rate' for classifier-geometry; did you mean 'lr'?"),
    ("updatse: 5\n", "did you mean 'updates'?"),
    ("threads: 2\n", ("'threads' is not a config key of classifier-geometry: it is chosen on the command line with "
                     "--threads.")),
    ("seeds: [0, true]\n", "'seeds[1]' setting"),
    ("task: nonsense\n", "The 'task' setting of classifier-geometry must be one of polarity, snli"),
])
def test_every_bad_config_file_is_one_line_and_exit_2(tmp_path, capsys, content, message):
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    code, out, err = _cli(["run", CG, "--setup", str(path), "--results-dir", str(tmp_path / "r")], capsys)
    assert code == 2 and out == ""
    assert err.startswith("Error: ") and len(err.strip().splitlines()) == 1, err
    assert message in err, err
    assert not (tmp_path / "r").exists()  # nothing was touched


def test_python_tags_are_never_executed(tmp_path, capsys):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.yaml"
    path.write_text(f"x: !!python/object/apply:os.system ['touch {marker}']\n")
    code, _, err = _cli(["run", CG, "--setup", str(path), "--print-config"], capsys)
    assert code == 2 and not marker.exists()
    code, _, err = _cli(["run", "istar", "--set", f"x=!!python/object/apply:os.system ['touch {marker}']",
                         "--print-config"], capsys)
    assert code == 2 and not marker.exists() and "tags that construct Python objects are refused by design" in err


def test_missing_setup_file_and_unknown_setup(tmp_path, capsys):
    code, _, err = _cli(["run", CG, "--setup", str(tmp_path / "nope.yaml")], capsys)
    assert code == 2 and "does not exist" in err
    code, _, err = _cli(["run", CG, "--setup", "nope"], capsys)
    assert code == 2 and "neither a packaged setup (demo, glue, polarity" in err
    assert "Did you mean" not in err  # nothing close: no guess


@pytest.mark.parametrize("argv, suggestion", [
    (["--setup", "sst2-cu"], "Did you mean 'sst2-cpu'?"),
    (["--setup", "SST2"], "Did you mean 'sst2'?"),
    (["--set", "lamdas=1"], "did you mean 'lambdas'?"),
    (["--set", "istar.zetta=0.5"], "did you mean 'istar.zeta'?"),
])
def test_a_misspelt_setup_or_key_is_one_line_with_the_closest_name(argv, suggestion, capsys):
    code, _, err = _cli(["run", "istar", *argv, "--print-config"], capsys)
    line = err.strip()
    assert code == 2 and "\n" not in line and line.endswith(suggestion), err
    if argv[0] == "--setup":  # the line lists every packaged setup
        assert "(cola, mrpc, rte, sst2, sst2-cpu, sst2-gemma-cpu)" in line


def test_print_config_shows_the_resolved_config_and_runs_nothing(tmp_path, capsys):
    import yaml

    code = None
    try:
        main(["run", CG, "--setup", "pos", "--set", "lr=1e-3", "--seeds", "3,4", "--results-dir", str(tmp_path / "r"),
              "--print-config"])
    except SystemExit as exc:
        code = exc.code
    assert code in (None, 0)
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["task"] == "pos" and printed["lr"] == 0.001 and printed["seeds"] == [3, 4]
    assert printed["n_items"] == 11462 and not (tmp_path / "r").exists()


def test_every_experiment_has_the_same_flags():
    import click

    from isotropy.experiments._command import make_command

    common = {"--setup", "--set", "--print-config", "--seeds", "--device", "--threads", "--resume", "--results-dir",
              "--data-dir", "--no-plot", "--quiet"}
    for name in EXPERIMENTS:
        command = make_command(load_experiment(name))
        flags = {opt for p in command.params if isinstance(p, click.Option) for opt in p.opts}
        assert common <= flags, name
        device = next(p for p in command.params if p.name == "device")
        assert device.default == "auto"


def _yaml_leaves(values: dict, prefix: str = ""):
    for key, value in values.items():
        if isinstance(value, dict):
            yield from _yaml_leaves(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


# keys whose packaged spelling the config canonicalises ("kmeans+mean+pca" -> "K-means + Mean + PCA")
_CANONICALISED = {("sts-isotropy", "methods"), ("sts-isotropy", "token_level.methods")}


def _spelling(names):
    return [str(name).lower().replace(" ", "").replace("-", "") for name in names]


def check_packaged_setups_validate_as_written(name):
    """Every YAML file of the experiment's packaged configs (found here by its own glob) validates, and each value
    it writes is the validated config's value: it passed vacuously when no setup was found, and checked nothing of
    what the config kept."""
    import yaml

    from isotropy.experiments._config import available_setups

    folder = Path(__file__).resolve().parent.parent / "isotropy" / "configs" / name
    files = sorted(folder.glob("*.yaml"))
    assert files, f"no packaged setup of {name} in {folder}"
    assert available_setups(name) == sorted(path.stem for path in files)
    experiment = load_experiment(name)
    for path in files:
        dumped = experiment.config(path.stem).model_dump()
        for key, written in _yaml_leaves(yaml.safe_load(path.read_text(encoding="utf-8"))):
            value = dumped
            for part in key.split("."):
                value = value[part]
            if (name, key) in _CANONICALISED:
                assert _spelling(value) == _spelling(written), (name, path.stem, key, value)
            else:
                assert value == written, (name, path.stem, key, value, written)


def test_every_packaged_setup_validates():
    for name in EXPERIMENTS:
        check_packaged_setups_validate_as_written(name)


def test_path_shortcuts_are_taken_verbatim_and_value_shortcuts_as_yaml(capsys):
    import yaml

    main_args = ["run", "layer-geometry", "--model", "models/my model #2", "--corpus", "a: b.txt", "--layers", "3",
                 "--print-config"]
    try:
        main(main_args)
    except SystemExit as exc:
        assert exc.code in (None, 0)
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["model"] == "models/my model #2" and printed["corpus"] == "a: b.txt" and printed["layers"] == 3
    try:
        main(["run", "istar", "--lambdas", "-1,0.5", "--train-size", "null", "--print-config"])
    except SystemExit as exc:
        assert exc.code in (None, 0)
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["lambdas"] == [-1.0, 0.5] and printed["train_size"] is None


# ---------------------------------------------------------------- text fields are verbatim
_MODEL_KEY = {"minibatch-stability": "embeddings.model"}  # the other experiments: model


def _printed(argv, capsys) -> dict:
    import yaml

    try:
        main(argv)
    except SystemExit as exc:
        assert exc.code in (None, 0), capsys.readouterr().err
    return yaml.safe_load(capsys.readouterr().out)


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
@pytest.mark.parametrize("how", ["--set", "--model"])
def test_a_text_option_keeps_a_hash_and_a_colon_in_every_experiment(name, how, capsys):
    """A string field takes the text as it is: YAML would cut ``models/my model #2`` at the ``#``."""
    key = _MODEL_KEY.get(name, "model")
    text = "models/my model #2: final"
    argv = ["--set", f"{key}={text}"] if how == "--set" else ["--model", text]
    printed = _printed(["run", name, *argv, "--print-config"], capsys)
    node = printed
    for part in key.split(".")[:-1]:
        node = node[part]
    assert node[key.split(".")[-1]] == text


def test_a_text_field_that_also_takes_null_or_a_number_keeps_that_meaning():
    cg = load_experiment("classifier-geometry")
    assert cg.config(sets=["data_path=null"]).data_path is None  # str | None: null is None
    assert cg.config(sets=["data_path=my data #1.csv"]).data_path == "my data #1.csv"
    assert cg.config(sets=["task=table", "label_column=[a, b]"]).label_column == ["a", "b"]  # str | list[str]: a list
    lg = load_experiment("layer-geometry")
    assert lg.config(sets=["layers=3"]).layers == 3  # int | str | list[int]: an int stays an int
    assert lg.config(sets=["layers=0,3,6"]).layers == "0,3,6"
    assert load_experiment("istar").config(sets=["model=123"]).model == "123"  # a str field: the text


def test_a_list_shortcut_shows_the_list_form_of_set(capsys):
    """'--lambdas (same as --set lambdas=...)' led to --set lambdas=-5,5, which is refused: the list form is shown."""
    from isotropy.cli import main

    main(["run", "istar", "--help"])
    assert "(same as --set 'lambdas=[a, b]')" in " ".join(capsys.readouterr().out.split())
    main(["run", "istar", "--set", "lambdas=[-5, 5]", "--print-config"])
    assert "lambdas:\n- -5.0\n- 5.0\n" in capsys.readouterr().out


@pytest.mark.parametrize("quiet", [[], ["--quiet"]])
def test_a_warning_during_a_run_is_one_line(quiet, monkeypatch, tmp_path, capsys):
    """A library warning printed its file:line and source line (with --quiet too); it is one 'Warning:' line,
    printed once in a run however many seeds raise it."""
    import types
    import warnings

    from isotropy.cli import main

    def execute(*args, **kwargs):
        for seed in range(3):  # once per seed, each after a block that changes the filters (as clustering does)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
            warnings.warn("ClusterIsotropy: 3 of 27 clusters have at most\n 12 points", UserWarning, stacklevel=1)
        warnings.warn("another warning", UserWarning, stacklevel=1)
        return types.SimpleNamespace(skipped=False, report="", figures=[], results_dir=tmp_path)

    monkeypatch.setattr("isotropy.experiments._runner.execute", execute)
    main(["run", "istar", *quiet, "--results-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert err == "Warning: ClusterIsotropy: 3 of 27 clusters have at most 12 points\nWarning: another warning\n"


@pytest.mark.parametrize("name, key, fields", [("minibatch-stability", "synthetic", ("n_features",)),
                                               ("layer-geometry", "metrics", ("n_neighbors", "k_range")),
                                               ("sts-isotropy", "sweep", ("datasets", "n_clusters", "or null"))])
@pytest.mark.parametrize("value", ["3", "[1, 2]", "abc"])
def test_a_value_given_to_a_section_says_it_is_a_section_and_shows_its_keys(name, key, fields, value, capsys):
    code, out, err = _cli(["run", name, "--set", f"{key}={value}", "--print-config"], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert f"The '{key}' setting of {name} is a section" in err, err
    assert f"e.g. --set {key}." in err and all(field in err for field in fields), err
    assert "Config" not in err and "Cloud" not in err and "dictionary" not in err, err  # no pydantic class named


def test_an_unknown_key_in_a_section_that_may_be_null_gets_the_closest_key(capsys):
    code, _, err = _cli(["run", "sts-isotropy", "--set", "sweep.n_cluster=[1]", "--print-config"], capsys)
    assert code == 2 and "did you mean 'sweep.n_clusters'?" in err, err


# ---------------------------------------------------------------- one spelling of the methods of Rajaee & Pilehvar
_SAME_PAPER = {"frozen-classification": "mean+pca", "sts-isotropy": "Mean + PCA"}  # what each records in its results


@pytest.mark.parametrize("name", sorted(_SAME_PAPER))
def test_both_experiments_of_the_same_paper_take_the_same_method_names(name):
    experiment = load_experiment(name)
    typed = experiment.config(methods=["baseline", "mean+pca", "kmeans+mean+pca"])
    shown = experiment.config(methods=["Baseline", "Mean + PCA", "K-means + Mean + PCA"])
    # each experiment keeps the spelling its committed results and configs use; the input spelling does not matter
    assert typed.methods == shown.methods and typed.methods[1] == _SAME_PAPER[name]
    with pytest.raises(ConfigError, match=r"must be a non-empty list of distinct methods from baseline, mean, "
                                          r"mean\+pca, .*Got \['mean\+pca', 'Mean \+ PCA'\] instead"):
        experiment.config(methods=["mean+pca", "Mean + PCA"])  # the same method twice
    with pytest.raises(ConfigError, match=r"'methods\[1\]' setting of .* must be one of baseline, mean, mean\+pca, "
                                          r"kmeans\+mean.* Got 'pca' instead"):
        experiment.config(methods=["baseline", "pca"])


def test_the_committed_runs_of_the_same_paper_keep_their_method_names():
    import json
    from pathlib import Path

    runs = Path(__file__).resolve().parents[1] / "docs" / "runs"
    for name in _SAME_PAPER:
        for record_path in sorted((runs / name).glob("*/run.json")):
            record = json.loads(record_path.read_text())
            config = load_experiment(name).config_model.model_validate(record["config"])
            assert config.model_dump(mode="json") == record["config"], record_path


# ---------------------------------------------------------------- a saved config names its experiment
_RUNS = __import__("pathlib").Path(__file__).resolve().parents[1] / "docs" / "runs"


def test_another_experiments_saved_config_is_one_line_naming_it_and_the_command(capsys):
    """A config.yaml saved before it named its experiment (the committed ones): found from its keys."""
    saved = _RUNS / "frozen-classification" / "minilm" / "config.yaml"
    assert "experiment" not in saved.read_text()
    code, out, err = _cli(["run", "sts-isotropy", "--setup", str(saved), "--print-config"], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"Error: The config file {str(saved)!r} is a config of frozen-classification, not of "
                          f"sts-isotropy"), err
    assert err.strip().endswith(f"run it with: isotropy run frozen-classification --setup {saved}"), err
    assert "Unknown config key" not in err


def test_a_saved_or_printed_config_names_its_experiment_and_is_checked_on_load(tmp_path, capsys):
    import yaml

    from isotropy.experiments._runner import execute
    from isotropy.experiments._template.experiment import EXPERIMENT as TEMPLATE

    config = TEMPLATE.config(sets=["sample_sizes=[50]", "seeds=[0]"], n_features=8)
    execute(TEMPLATE, config, results_dir=tmp_path / "run", device="cpu", quiet=True, plot=False)
    saved = tmp_path / "run" / "config.yaml"
    assert yaml.safe_load(saved.read_text())["experiment"] == "_template"
    assert TEMPLATE.config(str(saved)) == config  # given back, the key is checked and dropped
    with pytest.raises(ConfigError, match=r"The 'experiment' key of the config file .* must name the experiment it "
                                          r"is run with, istar. Got '_template' instead."):
        load_experiment("istar").config(str(saved))

    main(["run", "frozen-classification", "--print-config"])  # returns: nothing to exit with
    printed = capsys.readouterr().out
    assert printed.startswith("experiment: frozen-classification\n")
    mine = tmp_path / "mine.yaml"
    mine.write_text(printed)
    assert load_experiment("frozen-classification").config(str(mine)) == load_experiment("frozen-classification").config()
    code, _, err = _cli(["run", "sts-isotropy", "--setup", str(mine), "--print-config"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert (f"is a config of frozen-classification (its 'experiment' key), not of sts-isotropy; run it with: "
            f"isotropy run frozen-classification --setup {mine}") in err


def test_every_committed_config_loads_in_its_experiment():
    import json

    for saved in sorted(_RUNS.glob("*/*/config.yaml")):
        record = json.loads((saved.parent / "run.json").read_text())
        experiment = load_experiment(record["experiment"])
        config = experiment.config(str(saved))
        # as the run recorded it: a run made since records the values as they are; one made before a key changed its
        # default (classifier-geometry's table-only keys) recorded the old default, which the hash still reads
        values = config.model_dump(mode="json")
        assert record["config"] in (values, experiment.config_model.hashed_values(values)), saved


def test_a_partial_file_with_a_misspelt_key_is_not_taken_for_another_experiment(tmp_path, capsys):
    mine = tmp_path / "mine.yaml"
    mine.write_text("model: all-MiniLM-L6-v2\nlr: 1e-3\n")  # lr is istar's, but this is no istar config
    code, _, err = _cli(["run", "sts-isotropy", "--setup", str(mine), "--print-config"], capsys)
    assert code == 2 and "Unknown config key 'lr' for sts-isotropy" in err, err


def test_the_runner_finds_every_experiments_config_model():
    from isotropy.experiments._runner import _config_models

    assert _config_models() == {name: load_experiment(name).config_model for name in EXPERIMENTS}


_TINY_MINIBATCH = ["sources=[synthetic]", "batch_sizes=[8,16]", "zetas=[0.0]", "n_batches=3", "synthetic.n_features=8",
                   "shrinkage_sample=64"]


def test_execute_takes_a_saved_config_yaml_as_yaml_reads_it(tmp_path):
    """execute() takes "a plain mapping (validated here)": a saved config.yaml, headed by its experiment, is one."""
    import yaml

    from isotropy.experiments._runner import execute

    experiment = load_experiment("minibatch-stability")
    config = experiment.config(sets=_TINY_MINIBATCH)
    execute(experiment, config, results_dir=tmp_path / "a", device="cpu", quiet=True, plot=False)
    saved = yaml.safe_load((tmp_path / "a" / "config.yaml").read_text())
    assert saved["experiment"] == "minibatch-stability"
    outcome = execute(experiment, saved, results_dir=tmp_path / "b", device="cpu", quiet=True, plot=False)
    assert outcome.results_dir == tmp_path / "b" and not outcome.skipped
    assert load_experiment("minibatch-stability").config(str(tmp_path / "b" / "config.yaml")) == config


def test_execute_refuses_a_mapping_of_another_experiment_in_one_line():
    import yaml

    from isotropy.experiments._runner import execute

    printed = yaml.safe_load(_RUNS.joinpath("frozen-classification", "minilm", "config.yaml").read_text())
    mapping = {"experiment": "frozen-classification", **printed}
    with pytest.raises(ConfigError) as refused:
        execute(load_experiment("sts-isotropy"), mapping, device="cpu", quiet=True, plot=False)
    message = str(refused.value)
    assert message == ("The config mapping given to execute is a config of frozen-classification (its 'experiment' "
                       "key), not of sts-isotropy."), message
    assert "isotropy run" not in message  # no command line where a mapping was given from Python


@pytest.mark.parametrize("spelling", ["minibatch_stability", "Minibatch-Stability", " minibatch-stability"])
def test_the_experiment_key_takes_exactly_the_names_isotropy_run_takes(spelling, tmp_path, capsys):
    from isotropy.experiments._runner import execute

    code, _, err = _cli(["run", spelling, "--print-config"], capsys)
    assert code == 2 and "Unknown command" in err, err
    mine = tmp_path / "mine.yaml"
    mine.write_text(f"experiment: '{spelling}'\nn_batches: 3\n")
    code, _, err = _cli(["run", "minibatch-stability", "--setup", str(mine), "--print-config"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"must name the experiment it is run with, minibatch-stability. Got {spelling!r} instead." in err, err
    with pytest.raises(ConfigError, match="The 'experiment' key of the config mapping given to execute must name"):
        execute(load_experiment("minibatch-stability"), {"experiment": spelling, "n_batches": 3}, quiet=True)
    mine.write_text("experiment: minibatch-stability\nn_batches: 3\n")  # the name `isotropy run` takes
    main(["run", "minibatch-stability", "--setup", str(mine), "--print-config"])  # returns: nothing to exit with
    assert "\nn_batches: 3\n" in capsys.readouterr().out


def test_an_experiment_that_fails_to_import_never_crashes_the_other_experiments_config_message(monkeypatch, capsys):
    """_config_models caught only ImportError/AttributeError: any other error crashed the refusal it words."""
    import importlib

    real = importlib.import_module

    def failing(name, *args, **kwargs):
        if name == "isotropy.experiments.frozen_classification.experiment":
            raise RuntimeError("broken at import")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", failing)
    saved = _RUNS / "frozen-classification" / "minilm" / "config.yaml"
    code, out, err = _cli(["run", "sts-isotropy", "--setup", str(saved), "--print-config"], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "Unknown config key 'task' for sts-isotropy" in err and "broken at import" not in err, err


def test_the_contract_page_says_which_saved_configs_lack_the_experiment_key():
    """contract.md said a saved config.yaml "always" starts with `experiment:`; the committed runs' do not."""
    page = " ".join((_RUNS.parent / "experiments" / "contract.md").read_text().split())
    without = [p for p in sorted(_RUNS.glob("*/*/config.yaml")) if not p.read_text().startswith("experiment:")]
    if without:
        assert "always do" not in page
        assert "Runs made before the key existed saved their `config.yaml` without it, the committed runs under " \
               "`docs/runs/` among them" in page


@pytest.mark.parametrize("debug", [None, "0", "1"])
def test_isotropy_debug_shows_the_traceback_of_a_config_error(debug):
    """``isotropy run``'s errors follow ISOTROPY_DEBUG as measure's do (tests/test_measure_cli.py): one line, exit
    status 2, unless it is on; then the traceback (here, not in that file: run needs the experiments extra)."""
    env = {key: value for key, value in os.environ.items() if key != "ISOTROPY_DEBUG"}
    if debug is not None:
        env["ISOTROPY_DEBUG"] = debug
    isotropy = Path(sys.executable).parent / "isotropy"
    result = subprocess.run([str(isotropy), "run", "classifier-geometry", "--set", "updatse=1"], env=env, check=False,
                            capture_output=True, text=True, timeout=120)
    lines = result.stderr.strip().splitlines()
    if debug != "1":
        assert result.returncode == 2
        assert len(lines) == 1 and lines[0].startswith("Error: ") and "Unknown config key 'updatse'" in lines[0]
        return
    assert result.returncode == 1, result.stderr
    assert lines[0] == "Traceback (most recent call last):", result.stderr
    assert "Unknown config key 'updatse'" in lines[-1] and not any(x.startswith("Error: ") for x in lines)


@pytest.mark.parametrize("name, item, close", [("sts-isotropy", "datasets=[STS12, sts13]", "'datasets\\[1\\]'.*Got 'sts13' instead\\. Did you mean 'STS13'\\?"),
                                               ("sts-isotropy", "sweep.datasets=[stsb2]", "Got 'stsb2' instead\\. Did you mean 'STSB'\\?"),
                                               ("minibatch-stability", "sources=[synthetc]", "Did you mean 'synthetic'\\?"),
                                               ("cluster-finetune", "conditions=[basline]", "Did you mean 'baseline'\\?")])
def test_a_misspelt_list_item_gets_the_closest_name(name, item, close):
    """A list of names (data sets, sources, conditions) suggests the closest name for a misspelt item, as a single value does."""
    with pytest.raises(ValueError, match=close):
        load_experiment(name).config(sets=[item])


@pytest.mark.parametrize("name, value, key", [("sts-isotropy", "datasets=STS13", "datasets"),
                                              ("sts-isotropy", "sweep.datasets=STSB", "sweep.datasets"),
                                              ("cluster-finetune", "conditions=cluster", "conditions"),
                                              ("minibatch-stability", "sources=synthetic", "sources")])
def test_a_valid_name_where_a_list_belongs_is_told_to_be_a_list(name, value, key):
    """A bare valid name where a list of names belongs is not answered "Did you mean <the same name>?": the message
    says to write it as a list."""
    with pytest.raises(ValueError) as info:
        load_experiment(name).config(sets=[value])
    message = str(info.value)
    bare = value.split("=", 1)[1]
    assert "Did you mean" not in message, message
    assert f"Got {bare!r} instead. Write a list: {key}=[{bare}]" in message, message
    assert "\n" not in message


def test_a_misspelt_bare_name_where_a_list_belongs_still_gets_the_closest_name():
    with pytest.raises(ValueError, match="Got 'STS1' instead\\. Did you mean 'STS16'\\?"):
        load_experiment("sts-isotropy").config(sets=["datasets=STS1"])


@pytest.mark.parametrize("name, item, expected", [("minibatch-stability", "sources=[synthetc]",
                                                   ("'sources\\[0\\]' setting of minibatch-stability must be one of "
                                                    "synthetic, embeddings\\. Got 'synthetc' instead\\.")),
                                                  ("sts-isotropy", "datasets=[STS12, sts13]",
                                                   ("'datasets\\[1\\]' setting of sts-isotropy must be one of STS12, "
                                                    "STS13, STS14, STS15, STS16, STSB, SICK\\. Got 'sts13'"))])
def test_a_list_item_error_names_the_choices_of_one_item(name, item, expected):
    """An item (key ``sources[0]``) must be one name, not "a non-empty list from ..."."""
    with pytest.raises(ValueError, match=expected) as info:
        load_experiment(name).config(sets=[item])
    assert "list" not in str(info.value), str(info.value)


def test_the_python_tag_refusal_is_worded_once():
    """Why a !!python/... tag is refused is one sentence (_yaml.PYTHON_TAG_REFUSAL), in the YAML error and the config's."""
    import yaml

    from isotropy.experiments._config import ConfigError, parse_yaml_value
    from isotropy.experiments._yaml import PYTHON_TAG_REFUSAL, PythonTagError, safe_load

    sources = "".join(path.read_text() for path in (Path(__file__).parent.parent / "isotropy").rglob("*.py"))
    assert sources.count("refused by design (a safe loader: a config runs") == 1
    tag = "!!python/object/apply:os.system"
    with pytest.raises(PythonTagError) as info:
        safe_load(f"x: {tag} ['true']")
    assert isinstance(info.value, yaml.YAMLError) and str(info.value.problem).endswith(PYTHON_TAG_REFUSAL)
    with pytest.raises(ConfigError) as config_info:
        parse_yaml_value(f"{tag} ['true']", where="--set x")
    assert str(config_info.value).endswith(f"which constructs a Python object: {PYTHON_TAG_REFUSAL}.")


def test_a_bare_table_name_of_a_method_is_told_to_be_a_list():
    """'Mean + PCA' is a valid item (the table's name): alone, it is told to be written as a list, not corrected."""
    with pytest.raises(ValueError, match=r"Got 'Mean \+ PCA' instead\. Write a list: methods=\[Mean \+ PCA\]"):
        load_experiment("frozen-classification").config(sets=["methods=Mean + PCA"])
    with pytest.raises(ValueError, match=r"Got 'Mean \+ PCX' instead\. Did you mean 'Mean \+ PCA'\?"):
        load_experiment("frozen-classification").config(sets=["methods=[baseline, Mean + PCX]"])


@pytest.mark.parametrize(("sets", "message"), [
    (["lambdas=[-1,-1,1]"], ("The 'lambdas' setting of istar must be a list of distinct non-zero finite numbers (the "
                            "I-STAR weights). Got [-1, -1, 1] instead.")),
    (["lambdas=[]", "baseline=false", "cosreg=false"],
     ("The 'cosreg' setting of istar leaves nothing to run with lambdas: [] and baseline: false; give a CosReg weight, "
     "a λ in lambdas, or baseline: true. Got False instead.")),
])
def test_istar_sweeps_that_would_mislead_are_refused(sets, message, capsys):
    """A repeated λ ran once per seed but its table counted it as more seeds (seeds 3 for one run); a sweep with no
    run at all loaded the model and marked its empty tables finished (a new-user trial)."""
    argv = ["run", "istar", "--print-config"]
    for item in sets:
        argv += ["--set", item]
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip() == f"Error: {message}"
    main(["run", "istar", "--print-config", "--set", "lambdas=[]", "--set", "cosreg=false"])  # the baseline alone runs


@pytest.mark.parametrize(("argv", "flag", "key"), [
    (["run", "istar", "--seeds", "1", "--set", "seeds=[2]"], "--seeds", "seeds"),
    (["run", "istar", "--lambdas", "1", "--set", "lambdas=[2]"], "--lambdas", "lambdas"),
])
def test_a_key_set_by_a_flag_and_by_set_is_refused(argv, flag, key, capsys):
    """--seeds won over --set seeds=, while --set won over the other shortcut flags, each without a word (a new-user
    trial): both given for one key is refused."""
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--print-config"])
    assert exit_.value.code == 2
    assert f"Error: {flag} and --set {key}=... both set '{key}': give one of them." in capsys.readouterr().err


def test_an_empty_text_setting_reads_as_a_sentence(capsys):
    """--set model= said "must be String should have at least 1 character." (pydantic's sentence pasted in)."""
    with pytest.raises(SystemExit) as exit_:
        main(["run", "classifier-geometry", "--set", "model=", "--print-config"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip() == ("Error: The 'model' setting of classifier-geometry must be a non-empty "
                                               "text. Got '' instead.")


def test_print_config_refuses_a_device_name_no_run_takes(capsys):
    """--device gpu --print-config printed the config with exit 0, while the run refuses 'gpu' (a new-user trial)."""
    with pytest.raises(SystemExit) as exit_:
        main(["run", "istar", "--device", "gpu", "--print-config"])
    assert exit_.value.code == 2
    assert "Error: --device must be auto, cpu, cuda, cuda:N or mps. Got 'gpu' instead." in capsys.readouterr().err
    main(["run", "istar", "--device", "cuda:1", "--print-config"])  # a config for another machine's GPU: printed


@pytest.mark.parametrize(("argv", "message"), [
    (["--set", "seeds=[true]"], "The 'seeds[0]' setting of istar must be an int in [0, 4294967295]. Got True instead."),
    (["--set", "seeds=[0, -1]"], "The 'seeds[1]' setting of istar must be an int in [0, 4294967295]. Got -1 instead."),
    (["--lambdas", "abc"], "The 'lambdas[0]' setting of istar must be a non-zero finite number. Got 'abc' instead."),
    (["--set", "istar.layers=[x]"], ("The 'istar.layers[0]' setting of istar must be a hidden-state index. "
                                     "Got 'x' instead.")),
])
def test_an_item_of_a_list_is_told_what_one_item_must_be(argv, message, capsys):
    """--set 'seeds=[true]' said "'seeds[0]' ... must be a non-empty list of distinct non-negative ints", as if the
    item had to be a list (a new-user trial): an item's error says what one item must be."""
    code, _, err = _cli(["run", "istar", "--print-config", *argv], capsys)
    assert code == 2
    assert message in err


@pytest.mark.parametrize(("experiment", "argv", "message"), [
    (CG, ["--set", "updates=yes"], ("The 'updates' setting of classifier-geometry must be an integer. Got 'yes' "
                                    "(read as true) instead.")),
    (CG, ["--updates", "no"], ("The 'updates' setting of classifier-geometry must be an integer. Got 'no' (read as "
                               "false) instead.")),
    (CG, ["--set", "lr=OFF"], ("The 'lr' setting of classifier-geometry must be a number. Got 'OFF' (read as false) "
                               "instead.")),
    ("layer-geometry", ["--set", "metrics.n_neighbors=on"], ("The 'metrics.n_neighbors' setting of layer-geometry "
                                                            "must be an integer. Got 'on' (read as true) instead.")),
    ("activation-diagrams", ["--set", "fine_tune.lr=yes"], ("The 'fine_tune.lr' setting of activation-diagrams must "
                                                           "be a number. Got 'yes' (read as true) instead.")),
    # the last --set of a key is the one refused, as it is the one kept
    (CG, ["--set", "updates=yes", "--set", "updates=true"], ("The 'updates' setting of classifier-geometry must be "
                                                            "an integer. Got True instead.")),
    (CG, ["--set", "updates=true", "--set", "updates=yes"], ("The 'updates' setting of classifier-geometry must be "
                                                            "an integer. Got 'yes' (read as true) instead.")),
])
def test_a_yaml_boolean_word_in_set_is_shown_as_typed(experiment, argv, message, capsys):
    """--set updates=yes said "must be an integer. Got True instead.": YAML 1.1 reads yes/no/on/off as booleans."""
    code, _, err = _cli(["run", experiment, "--print-config", *argv], capsys)
    assert code == 2
    assert err.strip().splitlines()[-1] == f"Error: {message}"


@pytest.mark.parametrize(("argv", "message"), [
    (["--set", 'lr="0.01"'], ("The 'lr' setting of classifier-geometry must be a number. Got '0.01' (read as text, not "
                             "a number: write it as 0.01, without quotes) instead.")),
    (["--set", "updates='40'"], ("The 'updates' setting of classifier-geometry must be an integer. Got '40' (read as "
                                "text, not a number: write it as 40, without quotes) instead.")),
    (["--set", 'lr="fast"'], "The 'lr' setting of classifier-geometry must be a number. Got 'fast' instead."),
    (["--set", "lr=-.5"], ("The 'lr' setting of classifier-geometry must be a number. Got '-.5' (read as text, not a "
                           "number: write it as -0.5, without quotes) instead.")),
    (["--set", 'task="3"'], ("The 'task' setting of classifier-geometry must be one of polarity, snli, pos, supersense, "
                            "lexicon, glue, table. Got '3' instead.")),
])
def test_a_quoted_number_is_said_to_be_a_string(argv, message, capsys):
    """--set lr='"0.01"' (or lr: "0.01" in a file) said "must be a number. Got '0.01' instead.", which looks like a
    number (a user trial; docs/experiments/contract.md names the case); YAML 1.1 also reads -.5 as text, unquoted."""
    code, _, err = _cli(["run", CG, "--print-config", *argv], capsys)
    assert code == 2
    assert err.strip().splitlines()[-1] == f"Error: {message}"


def test_a_yaml_boolean_word_in_set_is_still_a_boolean_where_one_is_taken():
    istar = load_experiment("istar")
    assert istar.config(sets=["baseline=yes"]).baseline is True and istar.config(sets=["baseline=off"]).baseline is False
    with pytest.raises(ConfigError, match=r"^The 'updates' setting of classifier-geometry must be an integer\. Got "
                                          r"'on' \(read as true\) instead\.$"):
        load_experiment(CG).config(sets=["updates=on"])


@pytest.mark.parametrize(("expected", "item"), [
    ("a non-empty list of distinct ints >= 2", "an int >= 2"),
    ("a non-empty list of distinct floats in [0, 1]", "a float in [0, 1]"),
    ("a list [k_min, k_max] of two ints >= 1", "an int >= 1"),
    ("a list of GLUE task names such as [cola, rte]", "a GLUE task name"),
    ("a column name or a list of 0/1 indicator columns", "a 0/1 indicator column"),
    ("a list of entries", "an entry"),
    ("mean or first", None),
    ("a list of data", None),
])
def test_the_wording_of_one_item_is_taken_from_the_lists(expected, item):
    from isotropy.experiments._config import _item_wording

    assert _item_wording(expected) == item


@pytest.mark.parametrize("results", ["{}", "[" * 100_000])
def test_plot_of_results_that_hold_something_else_is_one_line(tmp_path, capsys, results):
    # isotropy plot on a results.json emptied or nested without end: a KeyError / RecursionError traceback before
    (tmp_path / "run.json").write_text('{"experiment": "minibatch-stability"}')
    (tmp_path / "results.json").write_text(results)
    code, _out, err = _cli(["plot", str(tmp_path)], capsys)
    assert code != 0 and "Traceback" not in err and err.count("\n") == 1
    if results != "{}":  # refused as it is read, naming the file
        assert err == (f"Error: The results file {str(tmp_path / 'results.json')!r} is not valid JSON: nested too deeply "
                       f"to parse (a corrupt or hostile file); expected the JSON an 'isotropy run' writes there (re-run "
                       f"the experiment into this folder).\n")
        return
    assert err == (f"Error: The results in {str(tmp_path)!r} cannot be drawn as minibatch-stability's figures: a results "
                   f"file there holds something else (no 'clouds' where expected); were they edited, or written by "
                   f"another version? Re-run the experiment into this folder.\n")


def test_resume_of_a_run_json_nested_without_end_is_one_line(tmp_path, capsys):
    (tmp_path / "run.json").write_text("[" * 100_000)  # a RecursionError traceback before
    code, _out, err = _cli(["run", "minibatch-stability", "--resume", "--results-dir", str(tmp_path)], capsys)
    assert code != 0 and "Traceback" not in err
    assert ("run.json' is not valid JSON: nested too deeply to parse (a corrupt or hostile file); it cannot be resumed. "
            "Drop --resume to start afresh.") in err


@pytest.mark.parametrize("seeds", ["99999999999999999999", "4294967296", "0,18446744073709551616"])
def test_a_seed_past_2_to_the_32_is_refused_before_anything_loads(seeds, capsys):
    # 1e20 passed validation and --print-config, then classifier-geometry failed after loading with torch's
    # "Overflow when unpacking long long" (and scikit-learn's RandomState refuses 2**32 and above)
    code, _, err = _cli(["run", CG, "--setup", "demo", "--seeds", seeds, "--print-config"], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("Error: The 'seeds[") and "setting of classifier-geometry must be an int in [0, 4294967295]. " \
        "Got " in err
    main(["run", CG, "--setup", "demo", "--seeds", "4294967295", "--print-config"])
    assert "- 4294967295" in capsys.readouterr().out


def test_a_list_flag_given_twice_or_with_an_empty_item_is_refused(capsys):
    """--seeds 0 --seeds 1 kept the last seed alone (click keeps the last value) and --lambdas 1,,2 was read as
    [1, 2] where --seeds 0,,1 is refused: both are refused now, naming the flag."""
    for argv, message in (
            (["--seeds", "0", "--seeds", "1"], ("Error: Invalid value for '--seeds': given 2 times ('0', '1'); give it "
                                               "once (a list in one value: 0,1,2).")),
            (["--lambdas", "1", "--lambdas", "2"], ("Error: Invalid value for '--lambdas': given 2 times ('1', '2'); "
                                                   "give it once.")),
            (["--lambdas", "1,,2"], ("Error: Invalid value for '--lambdas': expected comma-separated values such as 1,2 "
                                    "with none empty. Got '1,,2' instead."))):
        code, _, err = _cli(["run", "istar", *argv, "--print-config"], capsys)
        assert code == 2 and err.startswith(message), err
    main(["run", "istar", "--lambdas=-1,1", "--seeds", "0,1", "--print-config"])
    out = capsys.readouterr().out
    assert "seeds:\n- 0\n- 1\n" in out and "lambdas:\n- -1.0\n- 1.0\n" in out


def test_a_misspelt_value_of_a_literal_setting_gets_did_you_mean(capsys):
    """A Literal field without its own ``choices`` (sts-isotropy's pooling) suggests the close name too."""
    code, _, err = _cli(["run", "sts-isotropy", "--set", "pooling=maen", "--print-config"], capsys)
    assert code == 2
    assert ("The 'pooling' setting of sts-isotropy must be sentence-transformers or mean. Got 'maen' instead. "
            "Did you mean 'mean'?") in err
    _, _, far = _cli(["run", "sts-isotropy", "--set", "pooling=xyz", "--print-config"], capsys)
    assert "Got 'xyz' instead." in far and "Did you mean" not in far
