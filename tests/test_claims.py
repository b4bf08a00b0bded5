"""Claims as data: the verdict logic of isotropy.experiments._claims, claims.json, and the docs tables built from them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from isotropy.experiments._claims import (
    MIN_SEEDS,
    VERDICTS,
    Claim,
    Rule,
    bootstrap_interval,
    claim,
    command_of,
    decide,
    decide_why,
    markdown_table,
    not_run,
    read_claims,
    reason_of,
    seed_interval,
    write_claims,
)

REPO = Path(__file__).resolve().parent.parent
FIELDS = ["id", "paper", "claim", "paper_value", "model", "statistic", "ours", "interval", "n_seeds", "rule",
          "verdict", "command"]
ABOVE = Rule("holds if the change is above 0 in every seed", above=0.0)


def _claim(values, rule=ABOVE, **kw):
    return claim(id="x", paper="P, Fig. 1", claim="c", paper_value=1.0, model="m", statistic="s", values=values,
                 rule=rule, command="isotropy run x", **kw)


def test_fields_are_the_issue_s():
    assert list(Claim.__dataclass_fields__) == FIELDS
    assert VERDICTS == ("holds", "does not hold", "not established")


def test_one_seed_is_not_established_even_when_clear():
    assert _claim([5.0]).verdict == "not established"
    assert _claim([-5.0]).verdict == "not established"
    assert decide([5.0, 6.0], ABOVE, seed_interval([5.0, 6.0])) == "not established"
    assert MIN_SEEDS == 3


def test_three_seeds_clearing_the_rule_decide():
    assert _claim([1.0, 2.0, 3.0]).verdict == "holds"
    assert _claim([-1.0, -2.0, -3.0]).verdict == "does not hold"


def test_an_interval_straddling_the_threshold_is_not_established():
    assert _claim([-1.0, 2.0, 3.0]).verdict == "not established"
    # every seed above, but an interval reaching below the threshold does not clear the rule
    assert decide([1.0, 2.0, 3.0], ABOVE, {"low": -0.5, "high": 3.0, "how": "x"}) == "not established"


def test_deterministic_values_decide_with_one_seed():
    rule = Rule("holds if the ratio is below 5", below=5.0, random=False)
    assert _claim([1.76], rule=rule).verdict == "holds"
    assert _claim([30.9], rule=rule).verdict == "does not hold"


def test_nan_and_missing_interval_are_not_established():
    assert decide([float("nan")] * 3, ABOVE, {"low": float("nan"), "high": 1.0, "how": "x"}) == "not established"
    assert decide([1.0, 2.0, 3.0], ABOVE, None) == "not established"
    record = not_run(id="y", paper="P", claim="c", paper_value="yes", model="m", statistic="s", rule=ABOVE,
                     command="isotropy run y", reason="one seed")
    assert record.verdict == "not established" and record.ours is None and "one seed" in record.interval["how"]


def test_rule_needs_one_threshold():
    with pytest.raises(ValueError, match="exactly one"):
        Rule("x")
    with pytest.raises(ValueError, match="exactly one"):
        Rule("x", below=1.0, above=0.0)


def test_seed_spread_and_bootstrap_intervals():
    assert seed_interval([0.3, 0.1, 0.2])["low"] == 0.1 and seed_interval([0.3, 0.1, 0.2])["high"] == 0.3
    rng = np.random.default_rng(0)
    items = [rng.random(500) < 0.7 for _ in range(3)]
    span = bootstrap_interval(items, lambda a: float(np.mean(a)), n_resamples=300)
    assert 0.6 < span["low"] < 0.7 < span["high"] < 0.8 and "union over 3 seeds" in span["how"]
    # paired items are resampled together: the difference of identical arrays is exactly 0
    paired = bootstrap_interval([(items[0], items[0])], lambda a, b: float(np.mean(a) - np.mean(b)), n_resamples=50)
    assert paired["low"] == paired["high"] == 0.0


def test_both_is_the_union_and_can_block_a_verdict():
    items = [np.r_[np.ones(10), -np.ones(10)] + 0.1 for _ in range(3)]  # mean 0.1, bootstrap straddles 0
    only_seeds = _claim([0.1, 0.1, 0.1])
    both = _claim([0.1, 0.1, 0.1], interval="both", items=items, item_statistic=lambda a: float(np.mean(a)))
    assert only_seeds.verdict == "holds" and both.verdict == "not established"
    assert both.interval["how"].startswith("both:")
    with pytest.raises(ValueError, match="needs 'items'"):
        _claim([1.0, 2.0, 3.0], interval="both")


def test_write_and_read_claims(tmp_path):
    records = [_claim([1.0, 2.0, 3.0]), not_run(id="y", paper="P", claim="c", paper_value="yes", model="m",
                                                  statistic="s", rule=ABOVE, command="c", reason="r")]
    path = write_claims(tmp_path, records)
    assert path.name == "claims.json"
    back = read_claims(tmp_path)
    assert [list(r) for r in back] == [FIELDS, FIELDS] and back[0]["verdict"] == "holds"
    with pytest.raises(ValueError, match="unique"):
        write_claims(tmp_path, [records[0], records[0]])
    bad = {**records[0].to_dict(), "verdict": "yes"}
    with pytest.raises(ValueError, match="must be one of"):
        write_claims(tmp_path, [bad])


def test_command_of_hides_local_paths(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps({"command": "isotropy run x --setup a --data-dir /home/me/data "
                                                              "--results-dir /tmp/r --no-plot --seeds 0,1,2"}))
    assert command_of(tmp_path, "f") == "isotropy run x --setup a --data-dir DATA_DIR --seeds 0,1,2"
    assert command_of(tmp_path / "missing", "f") == "f"


def test_every_not_established_verdict_gives_its_reason():
    # one seed of a random value, every number clearly above 0 (the new-user trial: 0.1057 > 0, no reason given)
    one = _claim([0.1057])
    assert one.verdict == "not established" and one.interval["low"] == one.interval["high"] == 0.1057
    assert one.interval["how"] == "seed spread: min–max over 1 seed(s); not established: fewer than 3 seeds (1)"
    assert reason_of(one.to_dict()) == "fewer than 3 seeds (1)"
    straddle = _claim([-1.0, 2.0, 3.0])
    assert reason_of(straddle.to_dict()) == "the per-seed values and the interval [-1, 3] lie on both sides of the threshold 0"
    nan = _claim([float("nan"), 1.0, 2.0])
    assert reason_of(nan.to_dict()) == "a per-seed value or an end of the interval is not a finite number"
    items = [np.r_[np.ones(10), -np.ones(10)] + 0.1 for _ in range(3)]  # the bootstrap straddles 0
    both = _claim([0.1, 0.1, 0.1], interval="both", items=items, item_statistic=lambda a: float(np.mean(a)))
    assert both.verdict == "not established" and "lie on both sides of the threshold 0" in reason_of(both.to_dict())
    assert decide_why([1.0, 2.0, 3.0], ABOVE, None) == ("not established", "no interval")
    assert decide_why([1.0, 2.0, 3.0], ABOVE, seed_interval([1.0, 2.0, 3.0])) == ("holds", None)
    held = _claim([1.0, 2.0, 3.0])
    assert held.interval["how"] == "seed spread: min–max over 3 seed(s)" and reason_of(held.to_dict()) is None
    gone = not_run(id="y", paper="P", claim="c", paper_value="yes", model="m", statistic="s", rule=ABOVE,
                   command="c", reason="no such rows")
    assert reason_of(gone.to_dict()) == "no such rows"
    # both docs tables show the reason beside the verdict, once
    for link in (None, "x.md"):
        table = markdown_table([one.to_dict(), gone.to_dict()], link=link)
        assert "**not established** — fewer than 3 seeds (1) |" in table
        assert "**not established** — no such rows |" in table
        assert table.count("fewer than 3 seeds") == 1


def test_markdown_table_has_every_record():
    table = markdown_table([_claim([1.0, 2.0, 3.0]).to_dict()])
    assert "**holds**" in table and "[1, 3]" in table and "`isotropy run x`" in table


# --- the docs: "paper vs ours" tables and the index claims table come only from committed claims.json ---

_MARKER = re.compile(r"<!-- claims: ([\w.-]+/[\w.-]+) -->")
_INDEX_MARKER = "<!-- claims-index -->"
EXPERIMENT_PAGES = sorted(p for p in (REPO / "docs" / "experiments").glob("*.md")
                          if p.stem not in ("index", "contract"))


def _section(text: str, heading: str) -> str:
    match = re.search(rf"^## {re.escape(heading)}\s*$(.*?)(?=^## |\Z)", text, flags=re.MULTILINE | re.DOTALL)
    return match.group(1) if match else ""


@pytest.mark.parametrize("page", EXPERIMENT_PAGES, ids=lambda p: p.stem)
def test_paper_vs_ours_is_only_the_generated_table(page):
    section = _section(_typed(page), "Paper vs ours")
    assert section, f"{page.name} has no '## Paper vs ours' section"
    markers = _MARKER.findall(section)
    assert markers, f"{page.name}: the 'Paper vs ours' section has no <!-- claims: experiment/setup --> marker"
    table_lines = [line for line in section.splitlines() if line.lstrip().startswith("|")]
    assert not table_lines, f"{page.name}: a hand-typed table in 'Paper vs ours': {table_lines[:2]}"
    for target in markers:
        path = REPO / "docs" / "runs" / target / "claims.json"
        assert path.is_file(), f"{page.name}: {path} is missing"
        assert target.split("/")[0] == page.stem
        for record in read_claims(path):
            assert list(record) == FIELDS and record["verdict"] in VERDICTS
            if record["ours"] is not None and record["n_seeds"] < MIN_SEEDS and record["verdict"] != "not established":
                # only a value that depends on no randomness may be decided on fewer seeds
                assert "no randomness" in record["rule"], record["id"]


def test_index_table_is_generated_and_agrees_with_the_pages():
    import importlib.util

    index = (REPO / "docs" / "experiments" / "index.md").read_text(encoding="utf-8")
    assert _INDEX_MARKER in index
    spec = importlib.util.spec_from_file_location("docs_hooks", REPO / "docs" / "_hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    rendered_index = hooks.render_claims(index, "experiments/index.md")
    index_rows = {}
    for line in rendered_index.splitlines():
        match = re.match(r"\| \[(.*?)\]\(([\w.-]+)\.md\) \|.*\| \*\*(.*?)\*\*(?: — [^|]*)? \|$", line)
        if match:
            index_rows.setdefault(match.group(2), []).append((match.group(1), match.group(3)))
    assert index_rows
    for page in EXPERIMENT_PAGES:
        rendered = hooks.render_claims(page.read_text(encoding="utf-8"), f"experiments/{page.name}")
        page_verdicts = re.findall(r"\*\*(holds|does not hold|not established)\*\*(?: — [^|]*)? \|$", rendered,
                                   flags=re.MULTILINE)
        assert [v for _, v in index_rows.get(page.stem, [])] == page_verdicts, page.stem
    # each row says how many seeds its verdict reads and what its interval is; a first line counts the rows
    assert "| claim | paper | model | statistic | ours | seeds | interval | verdict |" in rendered_index
    rows = [line for line in rendered_index.splitlines()
            if re.match(r"\| \[.*\]\([\w.-]+\.md\) \|.*\| \*\*(holds|does not hold|not established)\*\*", line)]
    assert all(re.search(r"\| \d+ \| (seed spread|bootstrap|none \(not measured\))[^|]* \| \*\*", r) for r in rows)
    count = re.search(r"^(\d+) claims from (\d+) `claims.json` files: (\d+) holds, (\d+) does not hold, (\d+) not "
                      r"established\.$", rendered_index, flags=re.MULTILINE)
    assert count and int(count.group(1)) == len(rows) == sum(int(count.group(i)) for i in (3, 4, 5))


# --- the reports of the experiments whose runs are not re-run here: their claims from (fake) results ---

def test_istar_claims_from_the_runs(tmp_path):
    from isotropy.experiments.istar.run import claims as istar_claims

    (tmp_path / "runs").mkdir()
    for seed in range(3):
        for lam in (-5.0, 5.0):
            record = {"method": "istar", "lambda": lam, "seed": seed, "score": 0.70 + 0.01 * seed,
                      "isoscore_star": 0.2 if lam < 0 else 0.3, "twonn_dimension": 28.0 if lam < 0 else 41.0,
                      "silhouette": (0.05 if lam < 0 else 0.08) + 0.01 * seed}
            (tmp_path / "runs" / f"istar_{lam:g}_seed{seed}.json").write_text(json.dumps(record))
    (tmp_path / "run.json").write_text(json.dumps({"command": "isotropy run istar --data-dir /d",
                                                   "config": {"model": "m"}}))
    got = {c.id: c for c in istar_claims({}, tmp_path)}
    assert got["istar-moves-isotropy"].verdict == "holds" and got["istar-moves-isotropy"].n_seeds == 3
    assert got["lower-isotropy-lower-dimension"].verdict == "holds"
    assert got["lower-isotropy-better-performance"].verdict == "does not hold"  # equal scores: not higher
    silhouette = got["minimising-isoscore-maximises-silhouette"]  # lower at λ < 0 in every seed: the opposite
    assert silhouette.verdict == "does not hold" and silhouette.ours == pytest.approx(-0.03)
    assert got["istar-moves-isotropy"].command == "isotropy run istar --data-dir DATA_DIR"
    assert {c.verdict for c in istar_claims(None, None, model="m", reason="r")} == {"not established"}


def test_istar_claims_take_the_paired_item_bootstrap_of_the_runs(tmp_path):
    """A per-seed accuracy difference of one or two points on a few hundred items is within the items' own noise:
    with the runs' resamples (item_bootstrap) the interval adds the paired bootstrap, and that claim is not
    established, where the seed spread alone (the runs before the resamples) said "does not hold" (a trial)."""
    from isotropy.experiments._finetune.train import BOOTSTRAP_RESAMPLES, item_bootstrap
    from isotropy.experiments.istar.run import claims as istar_claims

    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 300)
    (tmp_path / "runs").mkdir()
    replicates = {}
    for seed in range(3):
        X = rng.normal(size=(300, 6)) + labels[:, None]
        common = rng.random(300) < 0.7  # items both runs of the seed get right
        for lam, extra in ((-5.0, 0.00), (5.0, 0.02)):
            right = common | (rng.random(300) < 0.3 + extra)
            predictions = np.where(right, labels, 1 - labels)
            boot = item_bootstrap(X * (0.5 if lam < 0 else 1.0), labels, predictions, metric="accuracy",
                                  shrinkage_cov=np.eye(6), zeta=0.2)
            assert len(boot["score"]) == BOOTSTRAP_RESAMPLES and boot["random_state"] == [0, 300]
            replicates[lam, seed] = boot
            record = {"method": "istar", "lambda": lam, "seed": seed, "score": float((predictions == labels).mean()),
                      "isoscore_star": 0.2 if lam < 0 else 0.3, "twonn_dimension": 28.0 if lam < 0 else 41.0,
                      "silhouette": 0.05 if lam < 0 else 0.08, "bootstrap": boot}
            (tmp_path / "runs" / f"istar_{lam:g}_seed{seed}.json").write_text(json.dumps(record))
    got = {c.id: c for c in istar_claims({}, tmp_path, model="m")}
    performance = got["lower-isotropy-better-performance"]
    assert performance.interval["how"].startswith("both: seed spread: min–max over 3 seed(s); bootstrap over items: "
                                                  "95 % percentile interval, 200 resamples (paired: the same "
                                                  "resampled validation items at both λ), union over 3 seeds")
    # the reference: the percentiles of the per-resample differences, per seed, then their union with the seed spread
    lows, highs = [], []
    for seed in range(3):
        diffs = np.subtract(replicates[-5.0, seed]["score"], replicates[5.0, seed]["score"])
        lows.append(np.quantile(diffs, 0.025))
        highs.append(np.quantile(diffs, 0.975))
    values = [json.loads((tmp_path / "runs" / f"istar_-5_seed{s}.json").read_text())["score"]
              - json.loads((tmp_path / "runs" / f"istar_5_seed{s}.json").read_text())["score"] for s in range(3)]
    assert performance.interval["low"] == pytest.approx(min(min(lows), min(values)), rel=1e-12)
    assert performance.interval["high"] == pytest.approx(max(max(highs), max(values)), rel=1e-12)
    assert performance.interval["low"] < 0 < performance.interval["high"]
    assert performance.verdict == "not established"
    # the task score alone: the resamples repeat sentences, which biases IsoScore*, TwoNN and the silhouette
    assert {i: c.interval["how"].split(":")[0] for i, c in got.items()} == {
        "istar-moves-isotropy": "seed spread", "lower-isotropy-better-performance": "both",
        "lower-isotropy-lower-dimension": "seed spread", "minimising-isoscore-maximises-silhouette": "seed spread",
        "negative-istar-beats-no-regularisation": "not measured"}  # no baseline runs here


def test_istar_claim_against_no_regularisation(tmp_path):
    """Figure 6 compares negative-λ I-STAR with fine-tuning without a regulariser (a review found the claims
    compared only the two ends of λ): the score at the most negative λ minus the baseline's, seed by seed."""
    from isotropy.experiments.istar.run import claims as istar_claims

    (tmp_path / "runs").mkdir()
    scores = {(-5.0, 0): 0.71, (-5.0, 1): 0.74, (-5.0, 2): 0.70, (-1.0, 0): 0.90, (-1.0, 1): 0.90, (-1.0, 2): 0.90,
              (5.0, 0): 0.60, (5.0, 1): 0.61, (5.0, 2): 0.62, (0.0, 0): 0.69, (0.0, 1): 0.70, (0.0, 2): 0.66}
    for (lam, seed), score in scores.items():
        record = {"method": "none" if lam == 0 else "istar", "lambda": lam, "seed": seed, "score": score}
        (tmp_path / "runs" / f"run_{lam:g}_seed{seed}.json").write_text(json.dumps(record))
    (tmp_path / "run.json").write_text(json.dumps({"command": "isotropy run istar --data-dir /d", "config": {}}))
    got = {c.id: c for c in istar_claims({}, tmp_path, model="m")}["negative-istar-beats-no-regularisation"]
    expected = [0.71 - 0.69, 0.74 - 0.70, 0.70 - 0.66]  # λ = -5 (the most negative; not -1) minus the baseline
    assert got.n_seeds == 3 and got.ours == pytest.approx(np.mean(expected), rel=1e-12)
    assert (got.interval["low"], got.interval["high"]) == pytest.approx((min(expected), max(expected)), rel=1e-12)
    assert got.verdict == "holds" and got.statistic == "validation score at λ = -5 minus without regularisation"
    for seed in range(3):  # lower than the baseline in every seed: does not hold
        (tmp_path / "runs" / f"run_0_seed{seed}.json").write_text(json.dumps(
            {"method": "none", "lambda": 0.0, "seed": seed, "score": 0.8}))
    assert {c.id: c for c in istar_claims({}, tmp_path, model="m")}[
        "negative-istar-beats-no-regularisation"].verdict == "does not hold"
    for seed in range(3):  # no baseline (the Gemma setup): not measured, and said why
        (tmp_path / "runs" / f"run_0_seed{seed}.json").unlink()
    missing = {c.id: c for c in istar_claims({}, tmp_path, model="m")}["negative-istar-beats-no-regularisation"]
    assert missing.verdict == "not established" and missing.ours is None
    assert missing.interval["how"].endswith("no baseline without regularisation beside a negative λ (baseline: false)")


def test_classifier_geometry_claims_per_seed():
    from isotropy.experiments.classifier_geometry.run import claims as cg_claims

    summary = {"setup": "demo", "updates": 10, "data": {}, "correlation": {"per_seed": {
        "0": {"spearman_rho": -0.9}, "1": {"spearman_rho": -0.8}, "2": {"spearman_rho": -0.95}}}}
    (claim_,) = cg_claims({"summary": summary}, None)
    assert claim_.verdict == "holds" and claim_.interval["low"] == -0.95
    summary["correlation"]["per_seed"] = {"0": {"spearman_rho": -0.9}}
    assert cg_claims({"summary": summary}, None)[0].verdict == "not established"  # one seed


def test_layer_geometry_and_sts_claims_are_one_sample():
    from isotropy.experiments.layer_geometry.run import claims as lg_claims
    from isotropy.experiments.sts_isotropy.run import claims as sts_claims

    layers = [{"s_inter": 0.9, "s_inter_centered": 0.01, "isoscore_centered": 0.05, "pc1_frequency_rho": 0.7},
              {"s_inter": 0.6, "s_inter_centered": 0.03, "isoscore_centered": 0.08, "pc1_frequency_rho": 0.2}]
    got = {c.id: c for c in lg_claims({"model": "m", "samples": [{"seed": 0, "layers": layers}]}, None)}
    assert got["anisotropic-globally"].ours == 0.6 and got["centring-near-isotropic-isoscore"].ours == 0.05
    assert got["frequency-manifold"].ours == 0.7
    assert {c.verdict for c in got.values()} == {"not established"}  # one token sample
    shifted = [{**r, "s_inter": r["s_inter"] - 0.1 * i} for r in layers for i in (1,)]
    three = [{"seed": 0, "layers": layers}, {"seed": 1, "layers": shifted}, {"seed": 2, "layers": layers}]
    got = {c.id: c for c in lg_claims({"model": "m", "samples": three}, None)}
    assert got["anisotropic-globally"].verdict == "holds" and got["anisotropic-globally"].n_seeds == 3  # 0.5 > 0.3
    assert got["anisotropic-globally"].interval["low"] == pytest.approx(0.5)
    assert got["centring-near-isotropic-cosine"].verdict == "holds"  # largest 0.03 < 0.1 in every sample
    assert got["centring-near-isotropic-isoscore"].verdict == "does not hold"  # smallest 0.05 <= 0.5
    methods = {"Baseline": {"all": {"spearman": 0.5}, "I(W)": 1e-5},
               "Mean + PCA": {"all": {"spearman": 0.55}, "I(W)": 1e-3},
               "K-means + Mean + PCA": {"all": {"spearman": 0.6}, "I(W)": 0.5}}
    got = {c.id: c for c in sts_claims({"datasets": {"STSB": {"methods": methods}}}, None)}
    assert got["cluster-raises-sts"].ours == pytest.approx(10.0)
    assert got["cluster-beats-global-pca"].ours == pytest.approx(5.0)
    assert got["cluster-raises-isotropy"].n_seeds == 1 and got["cluster-raises-isotropy"].verdict == "not established"


def test_value_markers_render_the_committed_numbers(tmp_path):
    """Prose numbers come from the committed runs through ``<!-- value: ... -->`` markers: the supersense paragraph
    said "took 18.6 min (run.json), 1,059 of the 1,110 ... seconds in the silhouette", typed by hand, where the
    committed run.json and summary.json say 8.0 min and 478 s."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_hooks", REPO / "docs" / "_hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    for page in sorted((REPO / "docs").rglob("*.md")):
        rendered = hooks.render_claims(page.read_text(encoding="utf-8"), page.name)
        assert "<!-- value:" not in rendered, page
    page = hooks.render_claims((REPO / "docs" / "experiments" / "classifier-geometry.md").read_text(encoding="utf-8"))
    run = json.loads((REPO / "docs" / "runs" / "classifier-geometry" / "supersense" / "run.json").read_text())
    import datetime

    minutes = (datetime.datetime.fromisoformat(run["ended"]) - datetime.datetime.fromisoformat(run["started"]))
    assert f"It took {minutes.total_seconds() / 60:.1f} min (`run.json`)" in page
    rho = json.loads((REPO / "docs" / "runs" / "classifier-geometry" / "supersense" / "correlations.json").read_text())
    per_seed = [seed["spearman_rho"] for seed in rho["supersense"]["per_seed"].values()]
    assert f"runs\nfrom {min(per_seed):.3f}".replace("-", "−") in page and f"{max(per_seed):+.3f}." in page
    with pytest.raises(KeyError, match="has no entry 'final.nothing'"):
        hooks.render_claims("<!-- value: classifier-geometry/supersense summary.json final.nothing .3f -->")
    with pytest.raises(ValueError, match="needs 'min:', 'max:' or 'mean:'"):
        hooks.render_claims("<!-- value: classifier-geometry/supersense correlations.json supersense.per_seed.* .3f -->")


def test_value_markers_filter_average_scale_and_quote():
    """Prose numbers that are a selection, an average or a percentage of the committed entries: ``FIELD=VALUE`` keeps
    the entries whose FIELD is VALUE, ``mean:`` averages, ``×100`` scales, a quoted path may hold a space."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_hooks", REPO / "docs" / "_hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    runs = json.loads((REPO / "docs" / "runs" / "istar" / "sst2-gemma-cpu" / "results.json").read_text())["runs"]
    low = [r["accuracy"] for r in runs if r["lambda"] == -3]
    render = hooks.render_claims
    assert render("<!-- value: istar/sst2-gemma-cpu results.json min:runs.*.lambda=-3.accuracy .1f ×100 -->") == \
        f"{100 * min(low):.1f}"
    assert render("<!-- value: istar/sst2-gemma-cpu results.json mean:runs.*.lambda=-3.accuracy .4f -->") == \
        f"{sum(low) / len(low):.4f}"
    one = next(r["accuracy"] for r in runs if r["lambda"] == 3 and r["seed"] == 0)
    assert render("<!-- value: istar/sst2-gemma-cpu results.json runs.*.lambda=3.seed=0.accuracy .3f -->") == f"{one:.3f}"
    sts = json.loads((REPO / "docs" / "runs" / "sts-isotropy" / "gemma" / "results.json").read_text())["datasets"]
    rho = [d["methods"]["K-means + Mean + PCA"]["all"]["spearman"] for d in sts.values()]
    marker = ('<!-- value: sts-isotropy/gemma results.json "mean:datasets.*.methods.K-means + Mean + PCA.all.spearman" '
              '.2f ×100 -->')
    assert render(marker) == f"{100 * sum(rho) / len(rho):.2f}"
    with pytest.raises(ValueError, match="needs 'min:', 'max:' or 'mean:'"):  # several entries left
        render("<!-- value: istar/sst2-gemma-cpu results.json runs.*.lambda=3.accuracy .3f -->")
    with pytest.raises(KeyError, match="at 'lambda=7'"):  # a filter that keeps nothing
        render("<!-- value: istar/sst2-gemma-cpu results.json min:runs.*.lambda=7.accuracy .3f -->")
    # a filter's value may hold a colon (a condition "istar:-3"): the aggregate is a leading "min:", "max:" or "mean:"
    # only (the last colon was taken for it, and the path read from "-3")
    summary = json.loads((REPO / "docs" / "runs" / "activation-diagrams" / "gemma-3-270m" / "results.json").read_text())
    row = next(r for r in summary["summary"] if r["condition"] == "istar:-3")
    assert render("<!-- value: activation-diagrams/gemma-3-270m results.json summary.*.condition=istar:-3.accuracy "
                  ".4f -->") == f"{row['accuracy']:.4f}"
    assert render("<!-- value: activation-diagrams/gemma-3-270m results.json max:summary.*.condition=istar:3.accuracy "
                  ".4f -->") == f"{next(r for r in summary['summary'] if r['condition'] == 'istar:3')['accuracy']:.4f}"
    for misspelt in ("mni:", ":"):  # a misspelt aggregate is named, not read as a key (found in review)
        with pytest.raises(ValueError, match=f"'{misspelt}' is not an aggregate"):
            render(f"<!-- value: istar/sst2-gemma-cpu results.json {misspelt}runs.*.lambda=-3.accuracy .3f -->")
    # claims picked by their id, not their place in claims.json (a new claim before it would have moved it)
    claims = json.loads((REPO / "docs" / "runs" / "cluster-finetune" / "minilm" / "claims.json").read_text())
    cost = next(c for c in claims if c["id"] == "accuracy-cost")
    assert render("<!-- value: cluster-finetune/minilm claims.json *.id=accuracy-cost.interval.low +.3f -->") == \
        format(cost["interval"]["low"], "+.3f").replace("-", "−")


def _hooks():
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_hooks", REPO / "docs" / "_hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    return hooks


def _typed(page: Path) -> str:
    """The page as typed: the text that ``python docs/_hooks.py --fill`` writes after each marker is generated from
    the run records (tests/test_docs_values.py checks it), so the checks of typed numbers read the page without it."""
    return _hooks().render_claims(page.read_text(encoding="utf-8"), mode="bare")


def test_minutes_marker_gives_its_unit_and_never_zero_minutes():
    """``@minutes`` of a run under a minute rendered "0 min" (frozen-classification's Gemma run, 28 s by its run.json):
    under a minute it gives whole seconds, from a minute on the minutes with the SPEC; the unit is part of the value."""
    import datetime

    hooks = _hooks()

    def seconds(experiment, setup):
        run = json.loads((REPO / "docs" / "runs" / experiment / setup / "run.json").read_text())
        return (datetime.datetime.fromisoformat(run["ended"])
                - datetime.datetime.fromisoformat(run["started"])).total_seconds()

    short = seconds("frozen-classification", "gemma-3-270m")
    assert short < 60
    assert hooks.render_claims("<!-- value: frozen-classification/gemma-3-270m run.json @minutes .0f -->") == \
        f"{short:.0f} s"
    long = seconds("classifier-geometry", "supersense")
    assert long >= 60
    assert hooks.render_claims("<!-- value: classifier-geometry/supersense run.json @minutes .1f -->") == \
        f"{long / 60:.1f} min"
    with pytest.raises(ValueError, match="takes no '×N'"):
        hooks.render_claims("<!-- value: classifier-geometry/supersense run.json @minutes .0f ×60 -->")
    for page in sorted((REPO / "docs").rglob("*.md")):  # the unit is rendered: a typed one would be doubled
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"@minutes [^>]*-->\s*(min|s)\b", text), page.name
        assert not re.search(r"(?<![\d.,])0 min\b", hooks.render_claims(text, page.name)), page.name


def test_claims_tables_name_their_models_setup_and_seeds():
    """The tables of several runs on one page (sts-isotropy has four back to back) were told apart only by their
    "Reproduce:" line: each now has a line above it naming the models of its records, its setup and its seeds."""
    hooks = _hooks()
    folder = REPO / "docs" / "runs" / "frozen-classification" / "minilm"
    (model,) = {r["model"] for r in read_claims(folder / "claims.json")}
    seeds = json.loads((folder / "run.json").read_text())["seeds"]
    assert model == "all-MiniLM-L6-v2 (frozen, mean-pooled layer -1), sst2 validation (872 sentences)"
    assert seeds == [0, 1, 2]
    rendered = hooks.render_claims("<!-- claims: frozen-classification/minilm -->")
    assert rendered.startswith("**all-MiniLM-L6-v2 (frozen, mean-pooled layer -1), sst2 validation (872 sentences)** "
                               "(`--setup minilm`, seeds 0, 1, 2):\n\n| id | claim (paper, where) |")
    # several models, one per bolded name in record order; the seeds of run.json tell seeds 3-5 from 0-2
    line = hooks.render_claims("<!-- claims: minibatch-stability/minilm-seeds-3-5 -->").splitlines()[0]
    assert line == ("**Gaussian N(0, diag(i^-0.5)), d = 384**; **all-MiniLM-L6-v2 on sst2/dev (872 sentences)** "
                    "(`--setup minilm`, seeds 3, 4, 5):")
    # a command without --setup ran the experiment's default setup
    line = hooks.render_claims("<!-- claims: layer-geometry/minilm-wikitext2 -->").splitlines()[0]
    assert line == "**all-MiniLM-L6-v2** (`--setup minilm-wikitext2`, seeds 0, 1, 2):"
    # a model up to its first "; " (the rest describes the protocol, which the setup names); markup escaped
    line = hooks.render_claims("<!-- claims: sts-isotropy/gemma-tokens -->").splitlines()[0]
    assert line == ("**Gemma 3 270M base (Q4\\_K\\_M dequantised to float32), mean of the last layer** "
                    "(`--setup gemma-tokens`, seeds 0, 1, 2):")
    page = hooks.render_claims((REPO / "docs" / "experiments" / "sts-isotropy.md").read_text(encoding="utf-8"))
    labels = re.findall(r"^\*\*.*\*\* \(`--setup ([\w.-]+)`, seeds? [\d, ]+\):\n\n\| id \|", page, flags=re.MULTILINE)
    assert labels == ["paper", "gemma", "paper-tokens", "gemma-tokens", "separate-corpus", "gemma-separate-corpus"]
    # the index tells the runs of one model apart by their setup too: a decided verdict of a run fitted on a separate
    # corpus read like a second verdict of the paper's protocol, so it was left off the pages (an evidence review)
    index = hooks.render_claims((REPO / "docs" / "experiments" / "index.md").read_text(encoding="utf-8"))
    rows = [line for line in index.splitlines() if line.startswith("| [") and "(sts-isotropy.md)" in line
            and re.search(r"\| \*\*(holds|does not hold|not established)\*\*", line)]
    runs = [re.search(r"\(`--setup ([\w.-]+)`\) \|", row).group(1) for row in rows]
    assert sorted(set(runs)) == sorted(["paper", "gemma", "paper-tokens", "gemma-tokens", "separate-corpus",
                                        "gemma-separate-corpus"])


# Sections that hold the papers' own numbers (typed from the papers, with their provenance), not ours.
_PAPER_SECTIONS = ("## What the paper claims", "## The paper's numbers")


@pytest.mark.parametrize("page", EXPERIMENT_PAGES, ids=lambda p: p.stem)
def test_no_table_of_our_numbers_is_typed(page):
    """Outside the papers' own numbers, a table row with a decimal number reads it from a committed run.

    Each table of our results is a generated table (``<!-- run-table -->``, ``<!-- run-compare -->``,
    ``<!-- claims -->``) or a row of ``<!-- value -->`` markers: a row of typed decimals is a number
    that no command checks or rebuilds when the code or the run changes.
    """
    section, typed = "", []
    for number, line in enumerate(_typed(page).splitlines(), start=1):
        if line.startswith("## "):
            section = line.strip()
        if (line.startswith("|") and not line.startswith("|---") and re.search(r"\d\.\d", line)
                and "<!-- value:" not in line and section not in _PAPER_SECTIONS):
            typed.append(f"{page.name}:{number}: {line[:80]}")
    assert not typed, "typed numbers in a table of ours:\n" + "\n".join(typed)


def test_classifier_geometry_claim_needs_enough_recorded_updates():
    """A demo run of 20 updates recorded every 10 gave ρ = −1 over 3 points in each seed and read "holds"; over 3 points
    ρ is ±1 or ±0.5, and a random order gives −1 one time in six. Fewer than MIN_STEPS recorded updates decide
    nothing; the committed runs (14 to 1,001) keep their verdicts."""
    from isotropy.experiments._claims import reason_of
    from isotropy.experiments.classifier_geometry.run import MIN_STEPS
    from isotropy.experiments.classifier_geometry.run import claims as cg_claims

    def summary(n_steps):
        return {"setup": "demo", "updates": 20, "data": {}, "correlation": {"per_seed": {
            str(seed): {"spearman_rho": -1.0, "n_steps": n_steps} for seed in range(3)}}}

    (few,) = cg_claims({"summary": summary(3)}, None)
    assert few.verdict == "not established" and few.ours == -1.0
    assert f"over 3 recorded updates, fewer than {MIN_STEPS}" in reason_of(few.to_dict())
    (enough,) = cg_claims({"summary": summary(MIN_STEPS)}, None)
    assert enough.verdict == "holds" and reason_of(enough.to_dict()) is None


def test_the_classifier_geometry_timings_are_read_from_the_committed_benchmark():
    """The page's 'Performance' paragraph and the benchmarks summary typed a 2026-11-22 run's seconds (6.5 min, 389 s,
    0.355 s against 1.643 s) that no committed output held (an evidence review). They are now value markers of the
    committed bench.json of benchmarks/bench_classifier_geometry.py; a number of seconds typed there fails here."""
    hooks = _hooks()
    bench = json.loads((REPO / "docs" / "runs" / "classifier-geometry" / "benchmark" / "bench.json").read_text())
    page = _typed(REPO / "docs" / "experiments" / "classifier-geometry.md")
    section = _section(page, "Performance")
    typed = re.findall(r"\d+(?:\.\d+)? ?(?:s|ms|min)\b|\d+(?:\.\d+)?×", re.sub(r"<!-- value: [^>]* -->", "", section))
    assert typed == [], typed
    rendered = hooks.render_claims(section)
    assert f"**{bench['run_wall_s']:.0f} s**" in rendered
    assert f"{bench['peer_median_s']['sklearn_silhouette']:.3f} s ({bench['peer_ratio']['silhouette']:.1f}×)" in rendered
    assert f"{bench['date']}, commit `{bench['source_commit']}`" in rendered
    summary = hooks.render_claims((REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8"))
    assert (f"1 seed ({bench['date']}) | | {bench['run_wall_s']:.0f} s | | < {bench['target_s']:.0f} s "
            f"({bench['verdict']}) |") in summary


def test_the_benchmarks_summary_is_read_from_committed_outputs():
    """The summary of docs/benchmarks.md typed the seconds, ratios and verdicts of a 2026-12-06 run of the silhouette,
    isoscore and dimension scripts, copied from their printed output (an evidence review). The scripts now write
    their rows with each verdict (the rule fixed in the script) and what ran (``--json``), committed under
    docs/runs/benchmarks/, and the summary is value markers of those files: a number typed there fails here."""
    hooks = _hooks()
    page = _typed(REPO / "docs" / "benchmarks.md")
    summary = page[page.index("Summary."):page.index("\n## ")]
    typed = re.findall(r"\d+(?:\.\d+)? ?(?:s|ms|MiB)\b|\d+(?:\.\d+)?×|\b(?:not )?met\b(?! the)",
                       re.sub(r"<!-- value: [^>]* -->", "", summary))
    assert typed == [], typed
    rendered = hooks.render_claims(summary)
    runs = REPO / "docs" / "runs" / "benchmarks"
    records = {name: json.loads((runs / name / "bench.json").read_text()) for name in ("silhouette", "isoscore",
                                                                                        "dimension")}
    for name, record in records.items():
        assert record["command"].startswith(f"python benchmarks/bench_{name}.py ") and "--json" in record["command"]
        assert record["versions"]["numpy"] and record["source_commit"] and record["date"] in rendered
    two = next(r for r in records["silhouette"]["rows"] if r["k"] == 2)
    assert two["verdict"] == ("met" if two["speedup"] >= two["target"] else "not met")
    assert (f"scikit-learn {two['sklearn_s']:.2f} s | {two['ours_s']:.2f} s | **{two['speedup']:.1f}×** | "
            f"≥ {two['target']:.0f}× ({two['verdict']}) |") in rendered
    twonn = next(r for r in records["dimension"]["rows"] if r["case"] == "twonn")
    assert f"**{twonn['ratio_wall']:.1f}×** (wall; {twonn['ratio_cpu']:.1f}× CPU)" in rendered
    small = next(r for r in records["isoscore"]["rows"] if (r["n"], r["d"]) == (256, 2048))
    assert (f"{small['ratio']:.0f}× (rounds' quartiles {small['ratio_low']:.0f}–{small['ratio_high']:.0f}) | "
            f"faster ({small['verdict']}) |") in rendered


def test_value_markers_pick_entries_by_fields_not_places():
    """Markers read minibatch-stability's summary by place (summary.4 = 8 rows at zeta 0.9), which a new batch size or
    zeta would move to another entry without a word; a filter's number may now hold a fraction (zeta=0.9), and the
    page's markers pick by batch size and zeta. Prose verdicts are markers too (an evidence review)."""
    hooks = _hooks()
    assert hooks._path_keys("clouds.sst2.summary.*.batch_size=8.zeta=0.9.mean") == [
        "clouds", "sst2", "summary", "*", "batch_size=8", "zeta=0.9", "mean"]
    assert hooks._path_keys("runs.*.lambda=-3.seed=0.accuracy") == ["runs", "*", "lambda=-3", "seed=0", "accuracy"]
    assert hooks._path_keys("summary.0.mean") == ["summary", "0", "mean"]
    results = json.loads((REPO / "docs" / "runs" / "minibatch-stability" / "minilm" / "results.json").read_text())
    entry = next(e for e in results["clouds"]["sst2"]["summary"] if e["batch_size"] == 8 and e["zeta"] == 0.9)
    marker = ("<!-- value: minibatch-stability/minilm results.json clouds.sst2.summary.*.batch_size=8.zeta=0.9.mean "
              ".4f -->")
    assert hooks.render_claims(marker) == f"{entry['mean']:.4f}"
    page = (REPO / "docs" / "experiments" / "minibatch-stability.md").read_text(encoding="utf-8")
    assert not re.search(r"summary\.\d+\.", page)
    claims = {c["id"]: c["verdict"] for c in read_claims(REPO / "docs" / "runs" / "minibatch-stability" / "minilm" /
                                                          "claims.json")}
    rendered = hooks.render_claims(page)
    assert (f"`isoscore-star-stable` now reads\n  \"{claims['isoscore-star-stable-synthetic']}\" and its "
            f"`isoscore-star-true`\n  \"{claims['isoscore-star-true-synthetic']}\"") in rendered


# issue 20's committed records (docs/runs/benchmarks/NAME/FILE) and the script each comes from
_ISSUE_20_RECORDS = {("neighbors", "kernels.json"): "bench_neighbors_floor", ("neighbors", "measure.json"): "bench_neighbors_floor",
                     ("neighbors", "measure-200k.json"): "bench_neighbors_floor",
                     ("shards", "bench.json"): "bench_shards", ("gguf", "bench.json"): "bench_gguf",
                     ("measure-model", "bench.json"): "bench_measure_model", ("callbacks", "bench.json"): "bench_callbacks",
                     ("cost-notes", "bench.json"): "bench_cost_notes", ("dask", "bench.json"): "bench_dask"}


def _verdicts(record):
    """Every ``(low, high, goal, verdict)`` of a record: the dicts holding a goal, an interval and a verdict."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            for low, high, goal, verdict in (("ratio_low", "ratio_high", "goal", "verdict"),
                                             ("seconds_ratio_low", "seconds_ratio_high", "seconds_goal", "seconds_verdict"),
                                             ("memory_ratio_low", "memory_ratio_high", "memory_goal", "memory_verdict")):
                if all(key in node for key in (low, high, goal, verdict)) and node[goal] is not None:
                    found.append((node[low], node[high], node[goal], node[verdict]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(record)
    return found


def test_issue_20s_goals_are_read_from_committed_records(monkeypatch):
    """Issue 20 closes on its goals: each is a ratio with the interval of its rounds, the goal fixed in the script and a
    verdict by the scripts' shared rule (benchmarks/_common.py), in the committed record of one command. The docs'
    section of those goals is value markers of those records (a number typed there fails here), every record names
    the command the section gives, and every verdict in them is the rule's on its own interval and goal."""
    from _benchmarks import load_benchmark

    common = load_benchmark("_common", monkeypatch)
    hooks = _hooks()
    page = _typed(REPO / "docs" / "benchmarks.md")
    start = page.index("## Issue 20's goals, from committed runs")
    section = page[start:page.index("\n## ", start + 1)]
    typed = re.findall(r"\d+(?:\.\d+)? ?(?:s|ms|MiB|%)(?=[\s,;.)|])|\d+(?:\.\d+)?×|\b(?:not )?met\b(?! the| on| when)|"
                       r"\bnot established\b(?! when)",  # (the rule's own words, in bold, name no result)
                       re.sub(r"\*\*[a-z ]+\*\*", "", re.sub(r"<!-- value: [^>]* -->", "", section)))
    assert typed == [], typed
    rendered = hooks.render_claims(section)
    assert "<!-- value:" not in rendered
    runs = REPO / "docs" / "runs" / "benchmarks"
    shown = " ".join(section.split())  # the commands as the section gives them, across its line breaks
    for (name, file), script in _ISSUE_20_RECORDS.items():
        record = json.loads((runs / name / file).read_text(encoding="utf-8"))
        assert record["command"].startswith(f"python benchmarks/{script}.py ") and record["source_commit"]
        assert f"{name} {file}" in section, (name, file)  # the section reads it
        command = record["command"].removeprefix("python ")
        assert command.split(" --compare ")[0] in shown.replace(" DIR", ""), command
        if name == "cost-notes":
            continue  # its goal is two-sided (within a factor either way): checked below
        verdicts = _verdicts(record)
        assert verdicts, (name, file)
        for low, high, goal, verdict in verdicts:
            assert verdict == common.verdict_at_most(low, high, goal), (name, file, low, high, goal, verdict)
    kernels = json.loads((runs / "neighbors" / "kernels.json").read_text(encoding="utf-8"))["kernels"]
    start = [row for row in kernels if row["checkout"] == "b79a661"]  # "the numpy loops give the bits of b79a661"
    assert [row["case"] for row in start] == ["twonn", "mle", "kneighbors"]
    assert all(row["values_bit_for_bit"] is True and row["values_against"] for row in start)
    notes = json.loads((runs / "cost-notes" / "bench.json").read_text(encoding="utf-8"))
    for row in notes["rows"]:
        within = 1 / row["goal_within"] <= row["ratio_low"] and row["ratio_high"] <= row["goal_within"]
        outside = row["ratio_high"] < 1 / row["goal_within"] or row["ratio_low"] > row["goal_within"]
        assert row["verdict"] == ("met" if within else "not met" if outside else "not established")
    assert notes["verdict"] == ("met" if all(row["verdict"] == "met" for row in notes["rows"]) else
                                "not met" if any(row["verdict"] == "not met" for row in notes["rows"]) else "not established")
