"""Command-line advice that leads somewhere (from a user trial: each failed as described before its fix)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from click.testing import CliRunner

from isotropy.cli import cli


def test_parquet_shards_with_a_label_column_are_told_to_name_the_folder(tmp_path):
    """The advice named one shard (--labels pshards/part-0.parquet), which gave the same error again."""
    rng = np.random.default_rng(0)
    folder = tmp_path / "pshards"
    folder.mkdir()
    for k in range(2):
        frame = pd.DataFrame(rng.normal(size=(40, 4)), columns=list("abcd"))
        frame["label"] = rng.integers(0, 3, 40)
        frame.to_parquet(folder / f"part-{k}.parquet")
    refused = CliRunner().invoke(cli, ["measure", str(folder), "--metrics", "isoscore"])
    assert refused.exit_code != 0
    assert f"give the labels with --labels {folder} --label-column label" in refused.output
    followed = CliRunner().invoke(cli, ["measure", str(folder), "--labels", str(folder), "--label-column", "label",
                                        "--metrics", "isoscore,silhouette_score"])
    assert followed.exit_code == 0, followed.output
    assert "silhouette_score" in followed.output


def test_an_empty_experiment_shortcut_is_refused(tmp_path):
    """--data-path "" (an unset shell variable) became null, and the run then asked for --data-path."""
    result = CliRunner().invoke(cli, ["run", "classifier-geometry", "--setup", "table", "--data-path", "",
                                      "--seeds", "0", "--results-dir", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert "Invalid value for '--data-path': expected a value. Got '' instead (empty: an unset shell variable?)" \
        in result.output
    assert not (tmp_path / "r").exists()


def test_a_results_folder_as_setup_points_to_its_config(tmp_path):
    run = tmp_path / "cg1"
    run.mkdir()
    (run / "config.yaml").write_text("experiment: classifier-geometry\n")
    result = CliRunner().invoke(cli, ["run", "classifier-geometry", "--setup", str(run), "--print-config"])
    assert result.exit_code != 0  # (the console command prints the error as one 'Error:' line)
    assert f"To run the configuration of that results folder again, give --setup '{run / 'config.yaml'}'." \
        in str(result.exception)
