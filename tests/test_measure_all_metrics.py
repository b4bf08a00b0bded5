"""`isotropy measure --metrics all`: every metric the input allows (a trial asked for it), the others named."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.metrics import silhouette_score

from isotropy.cli import cli
from isotropy.metrics.table import METRICS


def _measure(*args):
    return CliRunner().invoke(cli, ["measure", *map(str, args)])


def test_all_measures_every_metric_the_input_allows_and_names_the_others(tmp_path):
    X = np.random.default_rng(0).normal(size=(60, 5)).astype(np.float32)
    np.save(tmp_path / "x.npy", X)
    (tmp_path / "labels.txt").write_text("".join(f"{i % 3}\n" for i in range(60)))
    result = _measure(tmp_path / "x.npy", "--metrics", "all", "--json", tmp_path / "a.json")
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "a.json").read_text())
    clusters = [name for name, spec in METRICS.items() if spec.needs_labels]
    assert list(record["values"]) == [name for name in METRICS if name not in clusters + ["isoscore_star"]]
    assert (f"Note: --metrics all: left out isoscore_star (without --shrinkage-sample it tracks the vector norms, not "
            f"isotropy); {', '.join(clusters)} (they need labels: --labels FILE or --label-column COLUMN).") in result.stderr
    result = _measure(tmp_path / "x.npy", "--metrics", "all", "--labels", tmp_path / "labels.txt",
                      "--shrinkage-sample", "30", "--json", tmp_path / "b.json")
    assert result.exit_code == 0, result.output
    assert list(json.loads((tmp_path / "b.json").read_text())["values"]) == list(METRICS)
    assert "--metrics all: left out" not in result.stderr


def test_all_with_a_label_column_alone_measures_the_cluster_metrics(tmp_path):
    # the labels of a table's own column (no --labels): `--metrics all` resolved before they were known, and left the
    # cluster metrics out as if there were none (a new user's trial), where the default table measured them
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(20, 3)) + 6 * k for k in range(3)])
    table = tmp_path / "emb.csv"
    table.write_text("label,a,b,c\n" + "".join(f"{i // 20},{a},{b},{c}\n" for i, (a, b, c) in enumerate(X)))
    result = _measure(table, "--label-column", "label", "--metrics", "all", "--json", tmp_path / "c.json")
    assert result.exit_code == 0, result.output
    values = json.loads((tmp_path / "c.json").read_text())["values"]
    assert list(values) == [name for name in METRICS if name != "isoscore_star"]
    assert values["silhouette_score"] == pytest.approx(silhouette_score(X, np.repeat([0, 1, 2], 20)), rel=1e-6)
    assert "--label-column" not in result.stderr


def test_all_beside_other_names_is_refused(tmp_path):
    np.save(tmp_path / "x.npy", np.eye(4, dtype=np.float32))
    result = _measure(tmp_path / "x.npy", "--metrics", "all,isoscore")
    assert result.exit_code == 2
    assert "Invalid value for '--metrics': got 'all,isoscore'; 'all' names every metric: give it alone." in result.output


def test_a_metric_name_given_to_metric_points_to_metrics(tmp_path):
    """`--metric isoscore` (one letter short of --metrics) read only "'isoscore' is not one of 'euclidean', 'cosine'"
    (a trial): a metric's name there says which option names the metrics."""
    np.save(tmp_path / "x.npy", np.eye(4, dtype=np.float32))
    for value in ("isoscore", "isoscore,twonn_dimension", "all"):
        result = _measure(tmp_path / "x.npy", "--metric", value)
        assert result.exit_code == 2
        assert (f"Invalid value for '--metric': {value!r} is not one of 'euclidean', 'cosine': --metric is the "
                f"distance; --metrics names the metrics to measure.") in result.output
    result = _measure(tmp_path / "x.npy", "--metric", "cosin")
    assert result.exit_code == 2 and "--metrics names" not in result.output
