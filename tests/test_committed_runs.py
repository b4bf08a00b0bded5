"""The committed runs the docs are generated from are what the current code computes.

The docs' tables and claims come from ``docs/runs/EXPERIMENT/SETUP`` (``docs/_hooks.py``). A change
that moves an experiment's numbers (how texts are batched, a metric's arithmetic) leaves those runs
describing older code unless they are re-run. The runs cheap enough for every CI run (a minute or
two each on one core, from an empty embeddings cache) are re-run here from their own recorded
configuration, and their results and claims compared with the committed ones (less the wall-clock
times they record).

Tolerances: the same code on another CPU rounds float32 products differently (other BLAS kernels),
which moves a value by about 1e-7 of itself, and a difference of two close values (a bias) by more
of itself; so floats agree to ``rtol=1e-4`` above ``atol=1e-8``. An accuracy can move by a few
examples when a point sits on the classifier's boundary: ``atol=2e-3`` (10 of the 5,000 examples
of the largest set). A verdict must be the same.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from conftest import shared_data_path
from isotropy.cli import load_experiment
from isotropy.experiments._runner import execute

RUNS = Path(__file__).resolve().parents[1] / "docs" / "runs"
CHEAP = ["frozen-classification/minilm", "minibatch-stability/minilm", "sts-isotropy/paper-tokens"]
# wall-clock times: measured, not computed
TIMINGS = ("seconds", "timings")
RTOL, ATOL, ACCURACY_ATOL = 1e-4, 1e-8, 2e-3


def differences(committed, fresh, path: str = "") -> list[str]:
    """Where ``fresh`` differs from ``committed`` beyond the tolerances (one line each)."""
    if isinstance(committed, dict) and isinstance(fresh, dict):
        if committed.keys() != fresh.keys():
            return [f"{path}: keys {sorted(committed)} != {sorted(fresh)}"]
        return [line for key in committed if key not in TIMINGS
                for line in differences(committed[key], fresh[key], f"{path}/{key}")]
    if isinstance(committed, list) and isinstance(fresh, list):
        if len(committed) != len(fresh):
            return [f"{path}: {len(committed)} items != {len(fresh)}"]
        return [line for i, (a, b) in enumerate(zip(committed, fresh)) for line in differences(a, b, f"{path}[{i}]")]
    numbers = (int, float)
    if isinstance(committed, numbers) and isinstance(fresh, numbers) and not isinstance(committed, bool):
        atol = ACCURACY_ATOL if "accuracy" in path.rsplit("/", 1)[-1] else ATOL
        if math.isnan(committed) and math.isnan(fresh):
            return []
        if math.isclose(committed, fresh, rel_tol=RTOL, abs_tol=atol):
            return []
    elif committed == fresh:
        return []
    return [f"{path}: committed {committed!r}, now {fresh!r}"]


def test_differences_applies_the_tolerances():
    assert differences({"a": [1.0, 0.5]}, {"a": [1.0 + 1e-6, 0.5]}) == []
    assert differences({"a": 1.0}, {"a": 1.001}) == ["/a: committed 1.0, now 1.001"]
    assert differences({"train_accuracy": 0.8718}, {"train_accuracy": 0.8716}) == []
    assert differences({"train_accuracy": 0.8718}, {"train_accuracy": 0.868}) != []
    assert differences({"bias": 0.0}, {"bias": 3e-17}) == []
    assert differences({"verdict": "holds"}, {"verdict": "not established"}) != []
    assert differences([1, 2], [1, 2, 3]) == [": 2 items != 3"]
    assert differences({"x": float("nan")}, {"x": float("nan")}) == []
    assert differences({"seconds": 1.8, "x": 1.0}, {"seconds": 1.1, "x": 1.0}) == []


@pytest.mark.parametrize("run", CHEAP)
def test_a_committed_run_is_what_the_code_computes(run, tmp_path):
    experiment_name = run.split("/")[0]
    committed = RUNS / run
    record = json.loads((committed / "run.json").read_text())
    assert record["status"] == "finished" and record["experiment"] == experiment_name
    experiment = load_experiment(experiment_name)
    outcome = execute(experiment, record["config"], results_dir=tmp_path, setup=run.split("/")[1], device="cpu",
                      threads=1, data_dir=str(shared_data_path()), quiet=True, plot=False)
    experiment.report(outcome.results, outcome.results_dir)  # claims.json, as `isotropy run` writes it
    fresh = json.loads((tmp_path / "run.json").read_text())
    assert fresh["config"] == record["config"]  # the same configuration, resolved again
    for name in ("results.json", "claims.json"):
        # the data files are named by where they were read: the same DATA_DIR wherever the data lies
        committed_values, fresh_values = (json.loads((where / name).read_text().replace(json.dumps(data)[1:-1],
                                                                                          "DATA_DIR"))
                                          for where, data in ((committed, record["data_dir"]),
                                                              (tmp_path, fresh["data_dir"])))
        if name == "claims.json":  # each claim names the command that made it: this test's own, here
            for claim in [*committed_values, *fresh_values]:
                claim.pop("command")
        found = differences(committed_values, fresh_values)
        assert not found, (f"{run}/{name} no longer matches the code (re-run it and commit its outputs, "
                           f"{record['command']!r}):\n" + "\n".join(found[:20]))
