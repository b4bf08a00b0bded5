"""isotropy.experiments.run_experiment: an experiment from Python, as `isotropy run` runs it (a trial found only the
private isotropy.experiments._runner.execute for a notebook)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from isotropy.cli import cli
from isotropy.experiments import experiment_setups, run_experiment

SMALL = {"seeds": [0], "updates": 4, "metric_interval": 2, "n_items": 300}


def test_run_experiment_gives_the_commands_run(tmp_path):
    outcome = run_experiment("classifier-geometry", "demo", results_dir=tmp_path / "api", device="cpu", threads=1,
                             quiet=True, plot=False, **SMALL)
    assert outcome.results_dir == tmp_path / "api" and not outcome.skipped and outcome.figures == []
    assert "| demo | 299 | 4 | 1 |" in outcome.report
    command = CliRunner().invoke(cli, ["run", "classifier-geometry", "--setup", "demo", "--seeds", "0", "--updates",
                                       "4", "--set", "metric_interval=2", "--set", "n_items=300", "--threads", "1",
                                       "--device", "cpu", "--no-plot", "--quiet", "--results-dir",
                                       str(tmp_path / "cli")], catch_exceptions=False)
    assert command.exit_code == 0, command.output
    api, cli_run = (json.loads((tmp_path / name / "run.json").read_text()) for name in ("api", "cli"))
    assert api["config"] == cli_run["config"] and api["config_hash"] == cli_run["config_hash"]
    assert (tmp_path / "api" / "claims.json").read_text() == (tmp_path / "cli" / "claims.json").read_text()
    again = run_experiment("classifier-geometry", "demo", results_dir=tmp_path / "api", device="cpu", threads=1,
                           quiet=True, plot=False, resume=True, sets="n_items=300",
                           **{k: v for k, v in SMALL.items() if k != "n_items"})
    assert again.skipped and again.results == {}  # the same config, finished: nothing to run


def test_run_experiment_refuses_as_the_command_does(tmp_path):
    with pytest.raises(ValueError, match=r"^Unknown experiment 'classifier-geometri'; expected one of .* Did you mean "
                                         r"'classifier-geometry'\?$"):
        run_experiment("classifier-geometri", results_dir=tmp_path)
    with pytest.raises(ValueError, match="updates"):
        run_experiment("classifier-geometry", "demo", updates=-1, results_dir=tmp_path)
    with pytest.raises(ValueError, match=r"^run_experiment got 'seeds' both in sets= and as seeds=: give each key "
                                         r"once\.$"):  # as the command refuses --seeds with --set seeds=...
        run_experiment("classifier-geometry", "demo", sets=["seeds=[5]"], seeds=[0], results_dir=tmp_path)
    with pytest.raises(ValueError, match=r"^run_experiment got 'updates' both in sets= and as a keyword"):
        run_experiment("classifier-geometry", "demo", sets=["updates=7"], updates=3, results_dir=tmp_path)
    assert not any(tmp_path.iterdir())  # refused before anything was written


def test_experiment_setups_lists_every_experiment_default_first():
    from isotropy.cli import EXPERIMENTS, load_experiment

    setups = experiment_setups()
    assert sorted(setups) == sorted(EXPERIMENTS)
    for name, names in setups.items():
        assert names[0] == load_experiment(name).default_setup and len(set(names)) == len(names)


@pytest.mark.parametrize(("args", "line"), [
    (["--batches", "5"], ("Error: No such option '--batches'; 'n_batches' is a config key: --set n_batches=5 (see "
                         "'isotropy run minibatch-stability --help')")),
    (["--n-batches=7"], ("Error: No such option '--n-batches'; 'n_batches' is a config key: --set n_batches=7 (see "
                        "'isotropy run minibatch-stability --help')")),
    (["--batch-size"], ("Error: No such option '--batch-size'; 'embeddings.batch_size' is a config key: --set "
                       "embeddings.batch_size=VALUE (see 'isotropy run minibatch-stability --help')")),
])
def test_an_unknown_option_that_names_a_config_key_points_at_set(args, line):
    """`--batches 5` got "Did you mean '--threads'?" (a trial); the config key's --set is the way to give it."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "isotropy", "run", "minibatch-stability", *args],
                          check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.strip() == line


def test_an_unknown_option_near_a_flag_keeps_its_suggestion_and_a_list_key_gets_a_list():
    """`--seed 0` was pointed at `--set seeds=0`, which is refused (seeds is a list with a flag of its own, --seeds:
    a review); a list-valued key's one value is written as a list."""
    import subprocess
    import sys

    def error(*args):
        done = subprocess.run([sys.executable, "-m", "isotropy", "run", *args], check=False, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 2
        return done.stderr.strip()

    assert "Did you mean one of: '--seeds'" in error("classifier-geometry", "--seed", "0")
    assert error("minibatch-stability", "--batch-sizes", "8") == (
        "Error: No such option '--batch-sizes'; 'batch_sizes' is a config key: --set batch_sizes=[8] (see 'isotropy "
        "run minibatch-stability --help')")
