"""effective_rank, rankme and uniformity through the metric table: accumulator, torchmetrics, ``isotropy measure``, dask.

Also the IsoScore* rule of the default tables (left out without a shrinkage sample, a warning when asked
for by name) and ``--shrinkage-sample``. Every expected value is the in-memory function of
:mod:`isotropy.metrics.spectrum` / :mod:`isotropy.metrics.contrastive` on the same rows.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from isotropy import CovarianceAccumulator, effective_rank, isoscore_star, rankme, uniformity
from isotropy.cli import cli
from isotropy.metrics.table import LEFT_OUT, METRICS, check_metric_names, default_metric_names, metric_names


@pytest.fixture(scope="module")
def X():
    rng = np.random.default_rng(0)
    return rng.normal(size=(400, 12)) * np.linspace(0.5, 4.0, 12) + 1.5  # well conditioned, off the origin


def test_rows_families_and_defaults():
    assert METRICS["effective_rank"].family == METRICS["rankme"].family == "covariance"
    assert METRICS["uniformity"].pairwise and METRICS["uniformity"].torchmetric is None
    assert {"effective_rank", "rankme"} <= set(metric_names(torchmetric=True))
    for labels in (False, True):
        for shrinkage in (False, True):
            names = default_metric_names(labels=labels, shrinkage=shrinkage)
            assert not {"effective_rank", "rankme", "uniformity"} & set(names)
            assert ("isoscore_star" in names) == shrinkage
    with pytest.raises(ValueError, match="positive pairs.*isotropy.alignment"):
        check_metric_names(["alignment"], caller="t")
    assert "alignment" in LEFT_OUT


@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("normalize", [False, True])
def test_accumulator_equals_the_svd_functions(X, center, normalize):
    acc = CovarianceAccumulator()
    for part in np.array_split(X, 7):
        acc.update(part)
    assert acc.effective_rank(center=center, normalize=normalize) == pytest.approx(
        effective_rank(X, center=center, normalize=normalize), rel=1e-10)
    assert acc.rankme(center=center, normalize=normalize) == pytest.approx(
        rankme(X, center=center, normalize=normalize), rel=1e-10)


def test_accumulator_with_fewer_rows_than_features_and_far_scales(X):
    few = X[:7]  # n < d: 7 singular values; centred, the 7th is 0
    acc = CovarianceAccumulator().update(few[:3]).update(few[3:])
    for center in (False, True):
        assert acc.rankme(center=center, normalize=True) == pytest.approx(
            rankme(few, center=center, normalize=True), rel=1e-10)
        assert acc.effective_rank(center=center) == pytest.approx(effective_rank(few, center=center), rel=1e-10)
    for scale in (1e-150, 1e150):
        big = CovarianceAccumulator().update(X[:100] * scale).update(X[100:] * scale)
        assert big.effective_rank() == pytest.approx(effective_rank(X), rel=1e-10)


def test_torchmetrics_classes_equal_the_functions(X):
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchmetrics")
    from isotropy.training import EffectiveRank, RankMe
    from isotropy.training.metrics import metric_from_name

    T = torch.from_numpy(X)
    for cls, fn, options in ((EffectiveRank, effective_rank, {}), (RankMe, rankme, {"epsilon": 1e-5}),
                             (EffectiveRank, effective_rank, {"center": True, "normalize": True})):
        metric, other = cls(**options), cls(**options)
        for batch in T[:250].split(60):
            metric(batch)  # forward works without n_features, also on the 10-row last batch
        other.update(T[250:])
        metric.merge_state(other)
        assert float(metric.compute()) == pytest.approx(fn(X, **options), rel=1e-10)
    assert type(metric_from_name("rankme", n_features=12)).__name__ == "RankMe"
    with pytest.raises(TypeError, match="'center' parameter of EffectiveRank must be a bool"):
        EffectiveRank(center="yes")
    with pytest.raises(ValueError, match="epsilon"):
        RankMe(epsilon=-1.0)


def invoke(*args):
    return CliRunner().invoke(cli, ["measure", *map(str, args)])


def _values(result):
    lines = [line for line in result.stdout.splitlines() if line and not line.startswith(("metric", "/"))]
    return {line.split()[0]: float(line.split()[1]) for line in lines if len(line.split()) == 3}


def test_measure_new_metrics_equal_the_functions(X, tmp_path):
    np.save(tmp_path / "x.npy", X)
    out = tmp_path / "m.json"
    result = invoke(tmp_path / "x.npy", "--metrics", "effective_rank,rankme,uniformity", "--json", out)
    assert result.exit_code == 0, result.output
    values = json.loads(out.read_text())["values"]
    assert values["effective_rank"] == pytest.approx(effective_rank(X), rel=1e-12)
    assert values["rankme"] == pytest.approx(rankme(X), rel=1e-12)
    assert values["uniformity"] == pytest.approx(uniformity(X), rel=1e-12)


def test_measure_new_metrics_on_dask_shards(X, tmp_path):
    pytest.importorskip("dask")
    shards = tmp_path / "shards"
    shards.mkdir()
    for i, part in enumerate(np.array_split(X, 3)):
        np.save(shards / f"part-{i}.npy", part)
    out = tmp_path / "m.json"
    result = invoke(shards, "--metrics", "effective_rank,rankme", "--json", out)
    assert result.exit_code == 0, result.output
    values = json.loads(out.read_text())["values"]
    assert values["effective_rank"] == pytest.approx(effective_rank(X), rel=1e-10)
    assert values["rankme"] == pytest.approx(rankme(X), rel=1e-10)
    # uniformity by tiles of the pairs on the dask path: all rows, or a --sample-size sample of them
    from isotropy._utils.sampling import subsample_indices
    from isotropy.metrics.contrastive import uniformity

    sampled = invoke(shards, "--metrics", "uniformity,isoscore", "--sample-size", 60, "--json", out)
    assert sampled.exit_code == 0, sampled.output
    rows = subsample_indices(len(X), 60, random_state=0)
    assert json.loads(out.read_text())["values"]["uniformity"] == pytest.approx(uniformity(X[rows]), rel=1e-10)
    whole = invoke(shards, "--metrics", "uniformity", "--json", out)
    assert whole.exit_code == 0, whole.output
    assert json.loads(out.read_text())["values"]["uniformity"] == pytest.approx(uniformity(X), rel=1e-10)


def test_isoscore_star_rule_of_the_default_table(X, tmp_path):
    np.save(tmp_path / "x.npy", X)
    plain = invoke(tmp_path / "x.npy")
    assert plain.exit_code == 0, plain.output
    assert "isoscore_star" not in _values(plain)
    assert "Note: isoscore_star left out" in plain.stderr and "--shrinkage-sample" in plain.stderr
    asked = invoke(tmp_path / "x.npy", "--metrics", "isoscore,isoscore_star", "--json", tmp_path / "w.json")
    assert asked.exit_code == 0, asked.output
    assert "Warning: isoscore_star without a shrinkage sample" in asked.stderr and "vector norms" in asked.stderr
    noted = json.loads((tmp_path / "w.json").read_text())["warnings"]  # the warning stays with the saved value
    assert list(noted) == ["isoscore_star"] and "Σ_S = I" in noted["isoscore_star"][0]
    drawn = invoke(tmp_path / "x.npy", "--shrinkage-sample", "150", "--random-state", "4", "--json", tmp_path / "a.json")
    assert drawn.exit_code == 0, drawn.output
    assert "isoscore_star" in _values(drawn) and "left out" not in drawn.stderr and "Warning" not in drawn.stderr
    rows = np.sort(np.random.default_rng([4, 1]).choice(len(X), size=150, replace=False))
    record = json.loads((tmp_path / "a.json").read_text())
    assert record["shrinkage_sample"] == 150 and record["warnings"] == {}
    expected = isoscore_star(X, shrinkage_cov=np.cov(X[rows], rowvar=False))
    assert record["values"]["isoscore_star"] == pytest.approx(expected, rel=1e-10)
    np.save(tmp_path / "s.npy", X[:50] * 2)
    from_file = invoke(tmp_path / "x.npy", "--metrics", "isoscore_star", "--shrinkage-sample", tmp_path / "s.npy",
                       "--json", tmp_path / "b.json")
    assert from_file.exit_code == 0, from_file.output
    value = json.loads((tmp_path / "b.json").read_text())["values"]["isoscore_star"]
    assert value == pytest.approx(isoscore_star(X, shrinkage_cov=np.cov(X[:50] * 2, rowvar=False)), rel=1e-10)
    np.save(tmp_path / "narrow.npy", X[:, :3])
    bad = invoke(tmp_path / "x.npy", "--shrinkage-sample", tmp_path / "narrow.npy")
    assert bad.exit_code == 2 and "12 features" in bad.output
    too_many = invoke(tmp_path / "x.npy", "--metrics", "isoscore_star", "--shrinkage-sample", "5000", "--json",
                      tmp_path / "c.json")  # every row, with a note, as --sample-size beyond the rows
    assert too_many.exit_code == 0 and f"Note: --shrinkage-sample 5000 is not below the {len(X)} rows" in too_many.stderr
    assert json.loads((tmp_path / "c.json").read_text())["values"]["isoscore_star"] == pytest.approx(
        isoscore_star(X, shrinkage_cov=np.cov(X, rowvar=False)), rel=1e-10)
    neither = invoke(tmp_path / "x.npy", "--shrinkage-sample", "abc")  # no number and no file: this option, not the input
    assert neither.exit_code == 2 and neither.output.strip().splitlines()[-1] == (
        "Error: --shrinkage-sample 'abc': expected a number of rows of at least 2 or a file of rows; that path does "
        "not exist.")


def test_cost_note_does_not_advise_workers_on_the_dask_path(monkeypatch):
    from isotropy.measure import report

    monkeypatch.setattr("isotropy._kernels.cost.estimate_seconds", lambda name, n, d, **options: 1000.0)
    assert "(--scheduler ADDRESS)" in report._cost_note("silhouette_score", 10**6, 8)
    for name in ("silhouette_score", "uniformity"):
        note = report._cost_note(name, 10**6, 8, distributed=True)
        assert "--scheduler" not in note and "--workers" not in note and "--sample-size" in note
    # uniformity runs by tiles on the distributed path too: advised there like the silhouette
    note = report._cost_note("uniformity", 10**6, 8)
    assert "(--scheduler ADDRESS)" in note and "--sample-size" in note
