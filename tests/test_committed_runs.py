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

A value that depends on a clustering seed (a record with ``depends_on_seed: true`` and its
``per_seed`` values, or a claim whose interval is the seed spread) is chaotic in its input: K-means
on token vectors that differ at 1e-7 between two CPUs can end with one point in another cluster.
Between two CPU types (``e3e094d`` and its parent), ``sts-isotropy/paper-tokens`` moved by up to
15 % of a value's seed-to-seed range (seed 1's Pearson of K-means + Mean + PCA, 1.5e-4 of a 1.0e-3
range; ``I(W)`` 2.7 %, a claim's interval end 4 %). Such a value may move by ``SEED_SHARE`` = 25 %
of that range: less than the seeds differ among themselves, which the claims' intervals report.
"""

from __future__ import annotations

import json
import math
import re
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
SEED_SHARE = 0.25
# A percentile bootstrap interval's ends may move by this share of its width. Its resamples are seeded, so a re-run
# on one machine gives the same ends; another CPU's float bits (its BLAS kernels) move the resampled statistic's values,
# through rank ties (Spearman) and the seeds' K-means, and with them the ends and the seeds' mean: sts-isotropy/
# paper-tokens' by 0.6 % of the width on a later CPU. 1.5 % is about one Monte Carlo standard error of a 2.5 % or
# 97.5 % percentile of 2000 resamples (0.06 sd of the bootstrap distribution, of a 95 % interval's 3.92 sd): a move
# below what the interval itself cannot resolve. A change of the method, the resamples or the confidence is still
# caught (the "how" text is compared exactly, and tests/test_claims.py checks bootstrap_interval's own values).
BOOTSTRAP_SHARE = 0.015


def _numbers(record, path: str = ""):
    """``(path, value)`` for every number in ``record``, paths relative to it."""
    if isinstance(record, dict):
        for key, value in record.items():
            yield from _numbers(value, f"{path}/{key}")
    elif isinstance(record, list):
        for i, value in enumerate(record):
            yield from _numbers(value, f"{path}[{i}]")
    elif isinstance(record, (int, float)) and not isinstance(record, bool) and math.isfinite(record):
        yield path, record


def seed_slack(record) -> dict[str, float] | None:
    """Absolute slack per relative path for a record whose values depend on a seed, else None.

    A result record: ``SEED_SHARE`` of each value's range over its ``per_seed`` entries (a key
    ``/all/pearson`` covers the record's own value and each seed's). A claim with a seed-spread
    interval: ``SEED_SHARE`` of the interval's width, for ``ours`` and both ends (``BOOTSTRAP_SHARE`` of it for the
    union of a seed spread and a bootstrap interval). A bootstrap interval: ``BOOTSTRAP_SHARE`` of its width, for
    both ends.
    """
    if not isinstance(record, dict):
        return None
    if record.get("depends_on_seed") is True and isinstance(record.get("per_seed"), list):
        seen: dict[str, list[float]] = {}
        for entry in record["per_seed"]:
            for path, value in _numbers(entry):
                seen.setdefault(path, []).append(value)
        return {path: SEED_SHARE * (max(v) - min(v)) for path, v in seen.items() if path != "/seed"}
    if (str(record.get("how", "")).startswith("bootstrap")
            and all(isinstance(record.get(end), (int, float)) for end in ("low", "high"))):
        width = BOOTSTRAP_SHARE * abs(record["high"] - record["low"])
        return {"/low": width, "/high": width}
    interval = record.get("interval")
    how = str(interval.get("how", "")) if isinstance(interval, dict) else ""
    if how.startswith(("seed spread", "both: seed spread")) and all(isinstance(interval.get(end), (int, float))
                                                                    for end in ("low", "high")):
        # a union with a bootstrap interval ("both: ..."): the share of a bootstrap end, of the union's width
        share = SEED_SHARE if how.startswith("seed spread") else BOOTSTRAP_SHARE
        width = share * abs(interval["high"] - interval["low"])
        return {"/ours": width, "/interval/low": width, "/interval/high": width}
    return None


def differences(committed, fresh, path: str = "", slack: tuple[str, dict] | None = None) -> list[str]:
    """Where ``fresh`` differs from ``committed`` beyond the tolerances (one line each).

    ``slack`` is ``(root path, seed_slack(record at root))`` inside a record that depends on a seed.
    """
    if isinstance(committed, dict) and isinstance(fresh, dict):
        if committed.keys() != fresh.keys():
            return [f"{path}: keys {sorted(committed)} != {sorted(fresh)}"]
        found = seed_slack(committed)
        slack = (path, found) if found is not None else slack
        return [line for key in committed if key not in TIMINGS
                for line in differences(committed[key], fresh[key], f"{path}/{key}", slack)]
    if isinstance(committed, list) and isinstance(fresh, list):
        if len(committed) != len(fresh):
            return [f"{path}: {len(committed)} items != {len(fresh)}"]
        return [line for i, (a, b) in enumerate(zip(committed, fresh))
                for line in differences(a, b, f"{path}[{i}]", slack)]
    numbers = (int, float)
    if isinstance(committed, numbers) and isinstance(fresh, numbers) and not isinstance(committed, bool):
        atol = ACCURACY_ATOL if "accuracy" in path.rsplit("/", 1)[-1] else ATOL
        if slack is not None:  # a seed-dependent value: its own and each seed's entry share one slack
            relative = re.sub(r"^/per_seed\[\d+\]", "", path[len(slack[0]):])
            atol = max(atol, slack[1].get(relative, 0.0))
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


def test_a_seed_dependent_value_moves_by_a_quarter_of_its_seed_range():
    record = {"I(W)": 0.91, "depends_on_seed": True,
              "per_seed": [{"seed": 0, "I(W)": 0.90}, {"seed": 1, "I(W)": 0.92}]}  # range 0.02: slack 0.005
    moved = {"I(W)": 0.914, "depends_on_seed": True, "per_seed": [{"seed": 0, "I(W)": 0.904},
                                                                {"seed": 1, "I(W)": 0.916}]}
    assert differences({"m": record}, {"m": moved}) == []
    assert differences({"m": record}, {"m": {**moved, "I(W)": 0.916}}) == ["/m/I(W): committed 0.91, now 0.916"]
    assert differences({**record, "depends_on_seed": False}, {**moved, "depends_on_seed": False}) != []
    claim = {"ours": -6.75, "interval": {"low": -6.87, "high": -6.62, "how": "seed spread: min–max over 3 seed(s)"}}
    assert differences(claim, {"ours": -6.74, "interval": {**claim["interval"], "high": -6.61}}) == []
    assert differences(claim, {**claim, "ours": -6.65}) == ["/ours: committed -6.75, now -6.65"]
    bootstrap = {**claim, "interval": {**claim["interval"], "how": "bootstrap over items"}}
    assert differences(bootstrap, {**bootstrap, "ours": -6.74}) != []


def test_a_bootstrap_interval_moves_by_its_monte_carlo_error():
    """sts-isotropy/paper-tokens' bootstrap ends as committed and as a later CPU computed them (2026-12-06)."""
    committed = {"low": -8.48207496827658, "high": -5.202896136031871, "how": "bootstrap over the 1,379 sentence pairs: "
                 "95 % percentile interval, 2000 resamples, union over 3 seeds"}
    assert differences(committed, {**committed, "high": -5.223498610279686}) == []
    assert differences(committed, {**committed, "high": -5.202896136031871 - 0.06}) != []  # beyond 1.5 % of 3.28
    assert differences({**committed, "how": "seed spread"}, {**committed, "high": -5.223498610279686}) != []
    # its claim: the union of the seeds' spread and that bootstrap, and the seeds' mean
    claim = {"ours": -6.749983071714475, "interval": {"low": -8.48207496827658, "high": -5.202896136031871,
                                                      "how": "both: seed spread: min–max over 3 seed(s); " +
                                                             committed["how"]}}
    assert differences(claim, {"ours": -6.7532362694597055, "interval": {**claim["interval"],
                                                                         "high": -5.223498610279686}}) == []
    assert differences(claim, {**claim, "ours": -6.749983071714475 + 0.06}) != []


def test_the_seed_slack_covers_the_two_cpus_seen():
    """K-means + Mean + PCA's per-seed values (Pearson, Spearman, I(W)) in the two CPUs' runs."""
    def record(seeds):
        per_seed = [{"seed": i, "all": {"pearson": p, "spearman": s}, "I(W)": w} for i, (p, s, w) in enumerate(seeds)]
        return {"depends_on_seed": True, "per_seed": per_seed}

    one = record([(0.7579813, 0.7527051, 0.9200180), (0.7577805, 0.7540550, 0.9040345), (0.7569540, 0.7516170, 0.9095360)])
    other = record([(0.7579813, 0.7527051, 0.9200180), (0.7579333, 0.7541526, 0.9035992), (0.7569540, 0.7516170, 0.9095360)])
    assert differences(one, other) == []
    assert len(differences(one["per_seed"], other["per_seed"])) == 3  # outside the record: no slack


@pytest.mark.parametrize("run", CHEAP)
def test_a_committed_run_is_what_the_code_computes(run, tmp_path):
    experiment_name = run.split("/")[0]
    committed = RUNS / run
    record = json.loads((committed / "run.json").read_text())
    assert record["status"] == "finished" and record["experiment"] == experiment_name
    experiment = load_experiment(experiment_name)
    outcome = execute(experiment, record["config"], results_dir=tmp_path, setup=run.split("/")[1], device="cpu",
                      threads=1, data_dir=str(shared_data_path()), quiet=True, plot=False)
    assert outcome.results_dir == tmp_path  # claims.json written by the run itself, before run.json says finished
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


# Every committed run's claims are checked without training anything: the committed files hold everything the
# experiment's ``claims`` reads (the results, run.json and the per-seed parts: ``states/`` of activation-diagrams,
# ``runs/`` of cluster-finetune and istar, ``scores.csv`` of minibatch-stability), so the claims rebuild from them with
# the current code, exactly. The runs of ``CHEAP`` are also re-run above; the slower ones only rebuilt.
REBUILT = sorted(path.parent.relative_to(RUNS).as_posix() for path in RUNS.glob("*/*/claims.json"))


def committed_results(folder: Path) -> dict:
    """The ``results`` a run's ``report`` hands its ``claims``, read back from the committed folder: ``results.json``;
    layer-geometry's ``metrics.json``; classifier-geometry's ``{"summary": summary.json}`` (its ``run`` returns that)."""
    if folder.parent.name == "classifier-geometry":
        return {"summary": json.loads((folder / "summary.json").read_text())}
    name = "metrics.json" if folder.parent.name == "layer-geometry" else "results.json"
    return json.loads((folder / name).read_text())


def test_every_committed_run_has_its_claims_rebuilt():
    """Every committed run of an experiment (a folder of docs/runs with its run.json) has the claims.json its report
    wrote, and each is rebuilt below (``REBUILT``, the folders found). A hand-kept list had left 15 of the 36
    unchecked (classifier-geometry's 7 runs, layer-geometry's 5, sts-isotropy's gemma, gemma-tokens and paper): a
    claims.json edited by hand would have gone on the pages unnoticed. A run committed without its claims, or a
    claims.json outside a run folder, fails here."""
    runs = {path.parent.relative_to(RUNS).as_posix() for path in RUNS.glob("*/*/run.json")}
    assert len(runs) >= 36
    assert sorted(runs) == REBUILT, (f"run folders without a claims.json: {sorted(runs - set(REBUILT))}; claims.json "
                                     f"without a run.json: {sorted(set(REBUILT) - runs)}")


@pytest.mark.parametrize("run", REBUILT)
def test_committed_claims_rebuild_from_the_committed_files(run):
    import importlib

    experiment = load_experiment(run.split("/")[0])
    module = importlib.import_module(f"{experiment.package}.run")
    committed = RUNS / run
    rebuilt = json.loads(json.dumps([c.to_dict() for c in module.claims(committed_results(committed), committed)]))
    stored = json.loads((committed / "claims.json").read_text())
    assert rebuilt == stored, (f"{run}/claims.json is not what the code computes from the committed files "
                               f"(re-run {json.loads((committed / 'run.json').read_text())['command']!r} and commit "
                               f"its outputs)")


@pytest.mark.parametrize("setup", ["minilm", "gemma-3-270m"])
def test_minibatch_stability_fresh_seeds_give_the_verdicts_of_the_first_seeds(setup):
    """The minibatch-stability page says the rules, written after seeds 0-2 were seen, give every verdict again on
    seeds 3-5 (runs committed beside the first ones)."""
    def verdicts(folder):
        claims = json.loads((RUNS / "minibatch-stability" / folder / "claims.json").read_text())
        return {claim["id"]: claim["verdict"] for claim in claims}

    def seeds(folder):
        return json.loads((RUNS / "minibatch-stability" / folder / "run.json").read_text())["seeds"]

    assert (seeds(setup), seeds(f"{setup}-seeds-3-5")) == ([0, 1, 2], [3, 4, 5])
    first, fresh = verdicts(setup), verdicts(f"{setup}-seeds-3-5")
    assert fresh == first
    assert {"holds", "does not hold"} & set(fresh.values())
    page = (Path(__file__).resolve().parents[1] / "docs" / "experiments" / "minibatch-stability.md").read_text()
    assert f"<!-- claims: minibatch-stability/{setup}-seeds-3-5 -->" in page


# a run of one setup keeps its curves beside its summary; a run of several models and tasks (the GLUE appendix) in
# MODEL/TASK/ folders beside their own summary and correlations, which the run's own hold under "MODEL/TASK"
_CURVES = sorted(RUNS.glob("classifier-geometry/*/curves.csv")) + sorted(RUNS.glob("classifier-geometry/*/*/*/curves.csv"))


@pytest.mark.parametrize("curves", _CURVES, ids=lambda path: "/".join(path.relative_to(RUNS).parts[1:-1]))
def test_committed_curves_are_those_of_the_committed_summary(curves):
    """A committed ``curves.csv`` (the figures of the classifier-geometry page are drawn from it) belongs to the
    committed run beside it: its first and last steps are the summary's initial and final mean and std of every
    metric, its steps the run's updates at its metric interval, and its seed-mean correlation the committed one."""
    import numpy as np
    import pandas as pd
    from scipy import stats

    table = pd.read_csv(curves)
    summary = json.loads((curves.parent / "summary.json").read_text())
    correlations = json.loads((curves.parent / "correlations.json").read_text())[summary["setup"]]["seed_means"]
    if curves.parent.parent.name != "classifier-geometry":  # MODEL/TASK/ of a run of several: the run's entry
        run = curves.parents[2]
        assert json.loads((run / "summary.json").read_text())[summary["setup"]] == summary
        assert json.loads((run / "correlations.json").read_text())[summary["setup"]]["seed_means"] == correlations
    steps = list(range(0, summary["updates"] + 1, summary["metric_interval"]))
    if steps[-1] != summary["updates"]:
        steps.append(summary["updates"])
    assert table["step"].tolist() == steps
    for end, row in (("initial", table.iloc[0]), ("final", table.iloc[-1])):
        for metric, values in summary[end].items():
            assert row[f"{metric}_mean"] == pytest.approx(values["mean"], rel=1e-12, abs=1e-15), (end, metric)
            assert row[f"{metric}_std"] == pytest.approx(values["std"], rel=1e-12, abs=1e-15), (end, metric)
    assert correlations["n_steps"] == len(table)
    assert stats.pearsonr(table["isoscore_mean"], table["silhouette_mean"])[0] == pytest.approx(
        correlations["pearson_r"], rel=1e-9)
    assert stats.spearmanr(table["isoscore_mean"], table["silhouette_mean"])[0] == pytest.approx(
        correlations["spearman_rho"], rel=1e-9)
    assert np.isfinite(table.drop(columns="step").to_numpy()).all()
