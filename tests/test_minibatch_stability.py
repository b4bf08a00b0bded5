"""Mini-batch stability experiment (Rudman & Eickhoff, Figure 4).

References: the closed form (b − 2)/(b + d) of the Wishart moments for an isotropic cloud, the closed
form IsoScore of a known covariance (``isoscore_from_covariance``), Monte Carlo simulation for the
prediction of anisotropic clouds, and an independent re-encoding of the sentences for the real cloud.
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from _repro_models import make_tiny_bert_with_minilm_tokenizer

from conftest import shared_data_path
from isotropy import isoscore, isoscore_star
from isotropy.experiments._config import ConfigError
from isotropy.experiments._runner import execute
from isotropy.experiments.minibatch_stability.experiment import EXPERIMENT
from isotropy.experiments.minibatch_stability.science import (
    batch_scores,
    expected_batch_isoscore,
    power_law_spectrum,
    summarise_scores,
)
from isotropy.metrics.isoscore import isoscore_from_covariance


@pytest.fixture(scope="module")
def tiny_bert_dir(tmp_path_factory):
    return make_tiny_bert_with_minilm_tokenizer(tmp_path_factory.mktemp("tiny-bert"))


@pytest.mark.parametrize(("b", "d"), [(2, 5), (8, 384), (100, 30), (1024, 768)])
def test_isotropic_cloud_prediction_is_closed_form(b, d):
    # Σ = I: E[(tr S)²]/E‖S‖²_F = (md + 2)/(m + d + 1), so IsoScore ≈ (m − 1)/(m + d + 1) = (b − 2)/(b + d)
    assert expected_batch_isoscore(np.eye(d), b) == pytest.approx((b - 2) / (b + d), rel=1e-12)


@pytest.mark.parametrize("zeta", [0.0, 0.2, 0.9])
def test_prediction_tends_to_the_whole_cloud_value(zeta):
    cov = np.diag(power_law_spectrum(20, decay=0.7))
    shrink = np.diag(np.linspace(0.5, 2.0, 20))
    expected = isoscore_from_covariance(cov, shrinkage_cov=shrink, zeta=zeta)
    assert expected_batch_isoscore(cov, 10**12, zeta=zeta, shrinkage_cov=shrink) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize(("b", "zeta"), [(8, 0.0), (32, 0.2), (128, 0.5), (16, 0.9)])
def test_prediction_matches_simulation(b, zeta):
    d = 64
    lam = power_law_spectrum(d, decay=0.5)
    shrink = np.diag(lam[::-1])  # a Σ_S unlike Σ, so the cross term matters
    rng = np.random.default_rng(1)
    sims = [isoscore_star(rng.normal(size=(b, d)) * np.sqrt(lam), shrinkage_cov=shrink, zeta=zeta)
            for _ in range(300)]
    predicted = expected_batch_isoscore(np.diag(lam), b, zeta=zeta, shrinkage_cov=shrink)
    assert np.mean(sims) == pytest.approx(predicted, rel=0.03)


def test_power_law_spectrum():
    lam = power_law_spectrum(5, decay=1.0)
    np.testing.assert_allclose(lam, 5 * np.array([1, 1 / 2, 1 / 3, 1 / 4, 1 / 5]) / (137 / 60))
    assert isoscore_from_covariance(np.diag(power_law_spectrum(7, decay=0.0))) == pytest.approx(1.0)


def test_batch_scores_and_summary():
    X = np.random.default_rng(0).normal(size=(50, 6)) * [3.0, 1, 1, 1, 1, 0.5]
    rows = batch_scores(lambda size, i: X[i:i + size], [4, 10], [0.0, 0.5], n_batches=3, shrinkage_cov=np.eye(6) * 2)
    assert len(rows) == 2 * 3 * 2
    first = [r for r in rows if r["batch_size"] == 10 and r["batch"] == 2]
    assert first[0]["score"] == pytest.approx(isoscore(X[2:12]))
    assert first[1]["score"] == pytest.approx(isoscore_star(X[2:12], shrinkage_cov=np.eye(6) * 2, zeta=0.5))
    summary = summarise_scores(rows, reference={0.0: 0.5, 0.5: 0.5})
    cell = next(s for s in summary if s["batch_size"] == 4 and s["zeta"] == 0.0)
    values = np.array([isoscore(X[i:i + 4]) for i in range(3)])
    assert cell["mean"] == pytest.approx(values.mean())
    assert cell["std"] == pytest.approx(values.std(ddof=1))
    assert cell["rmse"] == pytest.approx(np.sqrt(np.mean((values - 0.5) ** 2)))


def test_config_rejects_bad_values():
    with pytest.raises(ConfigError, match=r"The 'zetas' setting of minibatch-stability must be .*Got \[0.0, 1.5\]"):
        EXPERIMENT.config(zetas=[0.0, 1.5])
    with pytest.raises(ConfigError, match="'batch_sizes' setting"):
        EXPERIMENT.config(batch_sizes=[1, 8])
    with pytest.raises(ConfigError, match="did you mean 'n_batches'"):
        EXPERIMENT.config(sets=["n_batchs=3"])


@pytest.mark.parametrize("setup", ["minilm", "gemma-3-270m", "bert-base"])
def test_packaged_setups_validate(setup):
    config = EXPERIMENT.config(setup)
    assert config.zetas == [0.0, 0.1, 0.2, 0.5, 0.9] and config.batch_sizes[-1] == 1024


def test_cli_bad_value_is_one_line(tmp_path, capsys):
    from isotropy.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["run", "minibatch-stability", "--set", "zetas=[0, 2]", "--results-dir", str(tmp_path / "r")])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip() == ("Error: The 'zetas' setting of minibatch-stability must be a non-empty "
                                               "list of distinct floats in [0, 1]. Got [0, 2] instead.")
    assert not (tmp_path / "r").exists()


def _execute(results_dir, config, **kwargs):
    return execute(EXPERIMENT, EXPERIMENT.config(**config), results_dir=results_dir, device="cpu", quiet=True,
                   **kwargs).results


def test_run_synthetic(tmp_path):
    config = {"sources": ["synthetic"], "batch_sizes": [4, 16, 64], "zetas": [0.0, 0.5], "n_batches": 4,
              "shrinkage_sample": 256, "synthetic": {"n_features": 12, "decay": 0.8}, "seeds": [0, 3]}
    results = _execute(tmp_path, config)
    assert sorted(p.name for p in (tmp_path / "figures").iterdir()) == ["minibatch_stability.png",
                                                                       "minibatch_stability.svg"]
    cloud = results["clouds"]["synthetic"]
    truth = isoscore_from_covariance(np.diag(power_law_spectrum(12, decay=0.8)))
    assert cloud["whole_cloud"] == pytest.approx(truth, rel=1e-12)
    assert {r["seed"] for r in cloud["scores"]} == {0, 3}
    with open(tmp_path / "scores.csv") as handle:
        written = list(csv.DictReader(handle))
    assert len(written) == 3 * 4 * 2 * 2
    for row in cloud["summary"]:
        values = [float(w["score"]) for w in written
                  if int(w["batch_size"]) == row["batch_size"] and float(w["zeta"]) == row["zeta"]]
        assert row["mean"] == pytest.approx(np.mean(values))
        assert row["predicted"] == pytest.approx(expected_batch_isoscore(
            np.diag(power_law_spectrum(12, decay=0.8)), row["batch_size"], zeta=row["zeta"],
            shrinkage_cov=_held_out_cov(config)))
    assert (tmp_path / "results.md").read_text().count("| 64 |") == 1
    # the report writes claims.json: two seeds decide nothing that depends on sampling
    EXPERIMENT.report(results, tmp_path)
    claims = json.loads((tmp_path / "claims.json").read_text())
    # the claims reading ζ = 0.9 or 0.2, which this run left out, are recorded as not measured
    assert [c["id"] for c in claims] == ["isoscore-unstable-synthetic", "isoscore-star-stable-synthetic",
                                         "isoscore-star-true-synthetic", "isoscore-star-approaches-synthetic",
                                         "zeta-zero-synthetic"]
    assert all(c["interval"]["how"].startswith("not measured: ") for c in claims[1:])
    assert claims[0]["n_seeds"] == 2 and claims[0]["interval"]["how"].startswith("both:")
    assert {c["verdict"] for c in claims} == {"not established"}


def _star_cloud(whole, star, score):
    scores = [{"seed": seed, "batch_size": b, "batch": i, "zeta": 0.9, "score": score(i)}
              for seed in (0, 1, 2) for b in (8, 64) for i in range(3)]
    return {"kind": "synthetic", "decay": 0.5, "n_features": 16, "batch_sizes": [8, 64], "whole_cloud": whole,
            "whole_cloud_star": {"0.9": star}, "shrinkage_isoscore": 0.29, "scores": scores}


def _star_claim(cloud, which):
    from isotropy.experiments.minibatch_stability.run import claims as mb_claims

    results = {"seeds": [0, 1, 2], "zetas": [0.9], "clouds": {"synthetic": cloud}}
    (found,) = [c for c in mb_claims(results, None) if c.id == f"isoscore-star-{which}-synthetic"]
    return found


def test_isoscore_star_true_compares_with_the_whole_cloud_isoscore():
    """The bias claim judges IsoScore* at ζ = 0.9 against the whole cloud's IsoScore (the true isotropy score, Figure
    4's dashed line), not against the whole cloud's IsoScore* at ζ = 0.9, which sits near IsoScore(Σ_S) by
    construction: batches matching the latter but 40 % off the former are not near the truth, and the statistic says
    how far Σ_S alone is."""
    whole, star = 0.5, 0.3  # the true score, and IsoScore* of the whole cloud with the same Σ_S
    cloud = _star_cloud(whole, star, lambda i: star * (1 + 0.01 * (i - 1)))
    true = _star_claim(cloud, "true")
    assert true.ours == pytest.approx(0.4) and true.verdict == "does not hold"
    assert "whole cloud's IsoScore (the true isotropy score" in true.rule
    assert "whole-cloud IsoScore (0.5000)" in true.statistic and "IsoScore(Σ_S) alone is 42.0% from it" in true.statistic
    cloud["whole_cloud"] = 0.32  # within 25 % of the true score
    true = _star_claim(cloud, "true")
    assert true.ours == pytest.approx(0.02 / 0.32) and true.verdict == "holds"


def test_isoscore_star_stable_is_the_batches_error_about_the_same_shrinkage():
    """The variance claim compares every batch with IsoScore* of the whole cloud with the same Σ_S and ζ, so that Σ_S's
    share cancels: batches within ±1 % of it are stable however far the true score is, batches 40 % below are not."""
    whole, star = 0.5, 0.3
    stable = _star_claim(_star_cloud(whole, star, lambda i: star * (1 + 0.01 * (i - 1))), "stable")
    assert stable.ours == pytest.approx(0.01 * np.sqrt(2 / 3)) and stable.verdict == "holds"
    assert "same Σ_S and ζ" in stable.rule and "(0.3000, the same Σ_S and ζ)" in stable.statistic
    # the spread counts as well as the bias: one batch 0.9·star, one star, one 1.1·star
    stable = _star_claim(_star_cloud(whole, star, lambda i: star * (1 + 0.1 * (i - 1))), "stable")
    assert stable.ours == pytest.approx(0.1 * np.sqrt(2 / 3))
    stable = _star_claim(_star_cloud(whole, star, lambda i: 0.6 * star), "stable")
    assert stable.ours == pytest.approx(0.4) and stable.verdict == "does not hold"


def _held_out_cov(config):
    # the held-out sample of the run: rng [first seed, 1], independent of the batches
    d = config["synthetic"]["n_features"]
    lam = power_law_spectrum(d, decay=config["synthetic"]["decay"])
    held = np.random.default_rng([config["seeds"][0], 1]).normal(size=(config["shrinkage_sample"], d)) * np.sqrt(lam)
    return np.cov(held, rowvar=False)


def test_run_embeddings_tiny_model(tmp_path, tiny_bert_dir, one_torch_thread):
    shared_data_path("glue_data", "SST-2", "dev.tsv")
    from isotropy.datasets.glue import load_glue_task
    from isotropy.models.encoders import encode_mean_pooled

    config = {"sources": ["embeddings"], "batch_sizes": [8, 512, 1024], "zetas": [0.0, 0.9], "n_batches": 2,
              "shrinkage_sample": 64, "embeddings.model": str(tiny_bert_dir), "embeddings.max_length": 32}
    results = _execute(tmp_path, config, data_dir=shared_data_path(), plot=False)
    cloud = results["clouds"]["sst2"]
    dev = load_glue_task("sst2", "dev", data_dir=shared_data_path())
    X = encode_mean_pooled(dev.text_a, model=str(tiny_bert_dir), device="cpu", max_length=32, use_cache=False)
    assert cloud["n_samples"] == len(dev) == 872
    assert cloud["whole_cloud"] == pytest.approx(isoscore(X), rel=1e-5)
    assert cloud["skipped_batch_sizes"] == [1024]
    assert cloud["batch_sizes"] == [8, 512]


def test_missing_data_fails_before_any_encoding_line(tmp_path, capsys):
    config = {"sources": ["embeddings"], "batch_sizes": [4], "zetas": [0.0], "n_batches": 2, "seeds": [0]}
    with pytest.raises(FileNotFoundError) as error:
        execute(EXPERIMENT, EXPERIMENT.config(**config), results_dir=tmp_path / "out", device="cpu", quiet=False,
                data_dir=tmp_path / "no-data")
    assert "sst2" in str(error.value).lower()
    assert "encoding" not in capsys.readouterr().err


def test_the_table_says_what_plus_minus_means():
    """The docs' table (``<!-- run-table: minibatch-stability/minilm -->``) is this function's text of the committed run."""
    from pathlib import Path

    from isotropy.experiments.minibatch_stability.run import markdown_table

    committed = Path(__file__).resolve().parents[1] / "docs" / "runs" / "minibatch-stability" / "minilm"
    table = markdown_table(json.loads((committed / "results.json").read_text()))
    assert ("Each cell: mean ± sample standard deviation (ddof = 1) of the score over the 90 mini-batches of that "
            "size (30 per seed, 3 seeds): the spread from batch to batch, not an error of the mean.") in table
    assert table.count("Each cell:") == 1


def test_isoscore_star_approaches_reads_the_gap_either_way():
    """IsoScore* 50 % *below* IsoScore does not approach it (the signed excess, -0.5, read "holds")."""
    from isotropy.experiments.minibatch_stability.run import claims as mb_claims

    def approaches(ratio):
        scores = [{"seed": s, "batch_size": 64, "batch": i, "zeta": z, "score": 0.4 * (ratio if z == 0.2 else 1.0)}
                  for s in (0, 1, 2) for i in range(3) for z in (0.0, 0.2)]
        cloud = {"kind": "synthetic", "decay": 0.5, "n_features": 16, "batch_sizes": [64], "whole_cloud": 0.5,
                 "whole_cloud_star": {"0.2": 0.45}, "scores": scores}
        (found,) = [c for c in mb_claims({"seeds": [0, 1, 2], "zetas": [0.0, 0.2], "clouds": {"synthetic": cloud}},
                                         None) if c.id == "isoscore-star-approaches-synthetic"]
        return found

    below, above, near = approaches(0.5), approaches(1.5), approaches(0.9)
    assert below.ours == pytest.approx(0.5) and below.verdict == "does not hold"
    assert above.ours == pytest.approx(0.5) and above.verdict == "does not hold"
    assert near.ours == pytest.approx(0.1) and near.verdict == "holds"
    assert below.statistic.startswith("|IsoScore* − IsoScore| / IsoScore")


def test_a_claim_whose_zeta_the_run_left_out_is_recorded_as_not_measured(tmp_path):
    """A run with ``zetas=[0.5]`` wrote only the ζ = 0 identity row: the four claims that read ζ = 0, 0.2 or 0.9 were
    dropped without a word, where the contract records a claim not measured as ``not established`` with its reason."""
    from isotropy.experiments._claims import reason_of
    from isotropy.experiments._runner import execute
    from isotropy.experiments.minibatch_stability.experiment import EXPERIMENT

    config = EXPERIMENT.config(sets=["sources=[synthetic]", "zetas=[0.5]", "batch_sizes=[8]", "n_batches=3",
                                     "synthetic.n_features=4", "seeds=[0]"])
    execute(EXPERIMENT, config, results_dir=tmp_path, device="cpu", quiet=True, plot=False)
    records = {r["id"]: r for r in json.loads((tmp_path / "claims.json").read_text())}
    for id_ in ("isoscore-unstable", "isoscore-star-stable", "isoscore-star-true", "isoscore-star-approaches"):
        record = records[f"{id_}-synthetic"]
        assert record["verdict"] == "not established" and record["ours"] is None
        assert "do not include ζ = " in reason_of(record), reason_of(record)
    assert "ζ = 0.9" in reason_of(records["isoscore-star-true-synthetic"])
    assert "ζ = 0, 0.2" in reason_of(records["isoscore-star-approaches-synthetic"])
