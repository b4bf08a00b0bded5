"""The layer-geometry experiment: metrics pipeline vs hand-computed values, the CLI end to end, its errors."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from _cli import exiting_cli as _cli
from _tiny_models import make_tiny_bert

from isotropy.experiments.layer_geometry.metrics import space_metrics, static_space
from isotropy.experiments.layer_geometry.run import markdown_table


def _unit(X):
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def _brute_mean_cosine(X):
    """Mean cosine over distinct pairs, by the full Gram matrix (independent of the library's O(n·d) sums)."""
    U = _unit(X)
    G = U @ U.T
    n = len(X)
    return (G.sum() - np.trace(G)) / (n * (n - 1))


def _brute_intra(X, types):
    return np.mean([_brute_mean_cosine(X[types == t]) for t in np.unique(types) if (types == t).sum() >= 2])


@pytest.fixture(scope="module")
def blobs():
    """Three far-apart blobs in 12-d; 6 word types, 2 per blob, 20 instances each."""
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(3, 12)) * 40.0
    blob = np.repeat(np.arange(3), 40)
    X = centres[blob] + rng.normal(size=(120, 12))
    types = np.repeat(np.arange(6), 20)
    return X, types, blob


def test_space_metrics_match_brute_force(blobs):
    X, types, blob = blobs
    m, labels = space_metrics(X, types, seed=0, n_neighbors=30, return_labels=True)
    assert (m["n"], m["d"], m["n_types"]) == (120, 12, 6)
    # S_intra: every type has 20 <= 1000 instances, so no draw: exact against the Gram matrix
    assert m["s_intra"] == pytest.approx(_brute_intra(X, types), rel=1e-10)
    # K-means picks the three blobs (silhouette of far-apart blobs is close to 1)
    assert m["n_clusters"] == 3 and m["silhouette"] > 0.9
    from sklearn.metrics import adjusted_rand_score

    assert adjusted_rand_score(blob, labels) == 1.0
    centred = X - np.array([X[blob == b].mean(axis=0) for b in range(3)])[blob]
    assert m["s_intra_centered"] == pytest.approx(_brute_intra(centred, types), rel=1e-10)
    # centring removes the blob directions: within-type cosine falls from ~1 to ~0
    assert m["s_intra"] > 0.95 and abs(m["s_intra_centered"]) < 0.1
    # mean LID against scikit-dimension's pointwise Levina-Bickel MLE
    skdim = pytest.importorskip("skdim")
    ref = skdim.id.MLE().fit(X, n_neighbors=30).dimension_pw_
    assert m["lid_euclidean"] == pytest.approx(float(np.mean(ref)), rel=1e-6)


def test_s_inter_is_the_mean_cosine_between_types():
    """Instances of a type differ only in norm, so whichever instance is drawn, S_inter is exact."""
    rng = np.random.default_rng(1)
    directions = rng.normal(size=(5, 8))
    types = np.repeat(np.arange(5), 4)
    X = directions[types] * rng.uniform(0.5, 3.0, size=(20, 1))
    m = space_metrics(X, types, seed=3, n_neighbors=10)
    assert m["s_inter"] == pytest.approx(_brute_mean_cosine(directions), rel=1e-10)
    assert m["s_intra"] == pytest.approx(1.0, abs=1e-12)


def test_isotropic_and_static_rows():
    """± the basis vectors: covariance ∝ I, so IsoScore = 1; one instance per type leaves S_intra undefined."""
    X = np.vstack([np.eye(6), -np.eye(6)]) * 2.0
    m = space_metrics(X, np.arange(12), seed=0, n_neighbors=5)
    assert m["isoscore"] == pytest.approx(1.0, abs=1e-9)
    assert math.isnan(m["s_intra"]) and math.isnan(m["s_intra_centered"])
    assert m["s_inter"] == pytest.approx(_brute_mean_cosine(X), abs=1e-12)  # = -1/11
    assert m["n_clusters"] == 1  # no cluster structure: best silhouette below 0.1


def test_static_space_restricts_glove_to_the_corpus_vocabulary():
    from isotropy.io.word_vectors import packaged_glove

    words, table = packaged_glove(limit=1000)
    X, found = static_space(["The", "the", "of", "qqqzzzunseen", "Paris"])
    assert found == ["the", "of", "paris"]  # lower-cased, deduplicated, unknown words left out
    np.testing.assert_array_equal(X[:2], table[[words.index("the"), words.index("of")]])
    with pytest.raises(ValueError, match="Only 0 corpus word types"):
        static_space(["qqqzzzunseen"])


def test_markdown_table_formats_nan_and_static():
    row = {"n": 1200, "d": 8, "n_types": 7, "s_inter": 0.12345, "s_intra": math.nan, "n_clusters": 2,
           "silhouette": 0.5, "s_inter_centered": 0.0, "s_intra_centered": math.nan, "isoscore": 0.9,
           "isoscore_centered": 0.95, "lid_euclidean": 5.0, "lid_cosine": 4.0}
    clusters = [{"cluster": 0, "size": 1000, "top_words": ["the", "of"]}, {"cluster": 1, "size": 200,
                                                                          "top_words": [",", "."]}]
    table = markdown_table({"layers": [{"layer": 0, **row, "clusters": clusters}],
                            "static": {"name": "GloVe", **row}})
    lines = table.strip().splitlines()
    assert lines[2].startswith("| 0 | 1,200 | 8 | 7 | 0.123 | – | 2 |")
    assert lines[3].startswith("| GloVe (static) |")
    assert lines[-2:] == ["| 0 | 0 | 1,000 | the of |", "| 0 | 1 | 200 | , . |"]


# ---------------------------------------------------------------- the CLI, end to end on a tiny BERT

TEXT = ["the cat sat on the mat .", "a dog ran on the mat , the cat sat .", "the unbelievable dog sat on a cat .",
        "a cat ran , a dog sat on the mat ."] * 3


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    return str(make_tiny_bert(tmp_path_factory.mktemp("bert")))


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "tiny.txt"
    path.write_text("\n".join(TEXT) + "\n")
    return path


def test_cli_end_to_end_on_a_tiny_model(tiny_bert, corpus_file, tmp_path, capsys):
    results_dir = tmp_path / "results"
    from isotropy.cli import main

    main(["run", "layer-geometry", "--model", tiny_bert, "--corpus", str(corpus_file), "--layers", "0,2",
          "--set", "max_per_type=8", "--set", "pca_layers=[2]", "--device", "cpu", "--results-dir", str(results_dir),
          "--quiet", "--threads", "1", "--set", "metrics.k_range=[2, 4]"])
    out = capsys.readouterr().out
    assert "| layer | n | d |" in out and f"Results in {results_dir}" in out
    results = json.loads((results_dir / "metrics.json").read_text())
    assert [row["layer"] for row in results["layers"]] == [0, 2]
    n_expected = sum(min(c, 8) for c in __import__("collections").Counter(" ".join(TEXT).split()).values())
    assert results["n_tokens"] == n_expected and results["layers"][1]["d"] == 16
    assert results["static"]["name"] == "GloVe 6B 50d" and results["static"]["d"] == 50
    run_json = json.loads((results_dir / "run.json").read_text())
    assert run_json["experiment"] == "layer-geometry" and run_json["config"]["layers"] == "0,2"
    assert run_json["status"] == "finished" and run_json["config"]["metrics"]["k_range"] == [2, 4]
    for stem in ("layer_metrics", "pca_layer2_2d", "pca_layer2_3d"):
        for fmt in ("png", "svg"):
            assert (results_dir / "figures" / f"{stem}.{fmt}").stat().st_size > 1000
    table = (results_dir / "metrics.md").read_text()
    assert table.splitlines()[4].startswith("| GloVe 6B 50d (static) | ")  # header, rule, 2 layers, static
    # the figures can be redrawn from the results directory alone
    (results_dir / "figures" / "layer_metrics.png").unlink()
    main(["plot", str(results_dir)])
    assert (results_dir / "figures" / "layer_metrics.png").is_file()


def test_the_setups_pca_layers_follow_a_shallower_model_given_with_model(tiny_bert, corpus_file, tmp_path, capsys):
    """The default setup's pca_layers [3, 6] (MiniLM's 6 layers) with a 2-layer --model: was a refusal asking for --set."""
    from isotropy.cli import main

    results_dir = tmp_path / "results"
    main(["run", "layer-geometry", "--model", tiny_bert, "--corpus", str(corpus_file), "--set", "max_per_type=4",
          "--device", "cpu", "--results-dir", str(results_dir), "--threads", "1", "--no-plot",
          "--set", "metrics.k_range=[2, 4]"])
    out = capsys.readouterr()
    assert ("pca_layers: the setup's [3, 6] with a model of 2 layers and layers [0, 1, 2] drawn as [0, 2] (the first "
            "and last extracted; --set pca_layers=... to choose)") in out.out + out.err
    results = json.loads((results_dir / "metrics.json").read_text())
    assert results["pca_layers"] == [0, 2]
    assert sorted(p.name for p in results_dir.glob("projection_layer*")) == ["projection_layer0.npz", "projection_layer2.npz"]
    # the run's config.yaml says what it drew, and re-runs as it is (every key of a file counts as given)
    import yaml

    saved = yaml.safe_load((results_dir / "config.yaml").read_text())
    assert saved["pca_layers"] == [0, 2]
    again = tmp_path / "again"
    main(["run", "layer-geometry", "--setup", str(results_dir / "config.yaml"), "--device", "cpu",
          "--results-dir", str(again), "--threads", "1", "--no-plot", "--quiet"])
    assert json.loads((again / "metrics.json").read_text())["pca_layers"] == [0, 2]
    # a pca_layers the user gives is still theirs: one beyond the model is refused
    code, _, err = _cli(["run", "layer-geometry", "--model", tiny_bert, "--corpus", str(corpus_file), "--device", "cpu",
                         "--results-dir", str(tmp_path / "r"), "--set", "pca_layers=[3]"], capsys)
    assert code == 2 and "'pca_layers'" in err and not (tmp_path / "r").exists()


def test_cli_errors(tiny_bert, corpus_file, tmp_path, capsys):
    # pca_layers=null: the setup's [3, 6] are beyond the tiny model, refused before the corpus is read
    base = ["run", "layer-geometry", "--device", "cpu", "--quiet", "--results-dir", str(tmp_path / "r"),
            "--set", "pca_layers=null"]
    code, _, err = _cli([*base, "--model", tiny_bert, "--corpus", str(corpus_file), "--layers", "0,9"], capsys)
    assert code == 2 and "'layers'" in err and "in [-3, 2]" in err and "Got '0,9' instead" in err
    empty = tmp_path / "empty.txt"
    empty.write_text("\n \n")
    code, _, err = _cli([*base, "--model", tiny_bert, "--corpus", str(empty)], capsys)
    assert code == 2 and "is empty" in err
    code, _, err = _cli([*base, "--model", str(tmp_path / "no-model"), "--corpus", str(corpus_file)], capsys)
    assert code == 2 and "does not exist" in err and "no-model" in err
    code, _, err = _cli([*base, "--model", tiny_bert, "--corpus", "wikitext-2", "--data-dir", str(tmp_path)], capsys)
    assert code == 2 and str(tmp_path / "wikitext-2" / "wiki.valid.tokens") in err
    code, _, err = _cli([*base, "--model", tiny_bert, "--corpus", str(tmp_path / "nope.txt")], capsys)
    assert code == 2 and "nope.txt" in err and "does not exist" in err
    code, _, err = _cli([*base, "--model", tiny_bert, "--corpus", str(corpus_file), "--layers", "0,2",
                         "--set", "pca_layers=[1]"], capsys)
    assert code == 2 and "'pca_layers'" in err and "[0, 2]" in err and "--set pca_layers=null" in err
    code, _, err = _cli([*base, "--model", tiny_bert, "--corpus", str(corpus_file), "--set", "max_tokens=0"], capsys)
    assert code == 2 and "'max_tokens' setting of layer-geometry" in err and "Got 0 instead" in err
    assert not (tmp_path / "r").exists()  # every failure came before the results directory was made


def test_pca_layers_follow_the_layers_given_and_a_given_one_outside_is_refused_before_any_data(tmp_path, capsys):
    """--layers 0,1 under the default pca_layers [3, 6] failed, and only after the corpus was read."""
    from isotropy.experiments._config import ConfigError
    from isotropy.experiments.layer_geometry.experiment import EXPERIMENT

    assert EXPERIMENT.config().pca_layers == [3, 6]  # the setup's, untouched when its layers are extracted
    assert EXPERIMENT.config(sets=["layers=0,3,6"]).pca_layers == [3, 6]
    first_last = EXPERIMENT.config(sets=["layers=0,1"])
    assert first_last.pca_layers == [0, 1]
    assert first_last._notes == [("pca_layers: the setup's [3, 6] with layers [0, 1] drawn as [0, 1] (the first "
                                  "and last extracted; --set pca_layers=... to choose)")]
    assert EXPERIMENT.config(sets=["layers=[0, 3, 4]"]).pca_layers == [3]  # the setup's that are extracted
    assert EXPERIMENT.config(sets=["layers=2"]).pca_layers == [2]
    assert EXPERIMENT.config(sets=["layers=all"]).pca_layers == [3, 6]  # checked against the model in prepare
    assert EXPERIMENT.config(sets=["layers=0,1", "pca_layers=null"]).pca_layers is None  # the middle extracted
    with pytest.raises(ConfigError, match=r"^The 'pca_layers' setting of layer-geometry must list extracted layers, "
                                          r"here \[0, 1\]\. Got \[3\] instead: give --set 'pca_layers=\[1\]'"):
        EXPERIMENT.config(sets=["layers=0,1", "pca_layers=[3]"])
    user = tmp_path / "mine.yaml"
    user.write_text("layers: 0,1\npca_layers: [3, 6]\n")  # given in a file: the user's, refused too
    with pytest.raises(ConfigError, match="'pca_layers' setting"):
        EXPERIMENT.config(str(user))
    # from the command line: refused before the model or the corpus is read (neither exists here)
    code, _, err = _cli(["run", "layer-geometry", "--data-dir", str(tmp_path / "no-data"), "--seeds", "0",
                         "--model", str(tmp_path / "no-model"), "--layers", "0,1", "--set", "pca_layers=[3]",
                         "--results-dir", str(tmp_path / "r"), "--quiet"], capsys)
    assert code == 2 and "'pca_layers' setting" in err and "Got [3] instead" in err and "no-data" not in err
    from isotropy.cli import main

    main(["run", "layer-geometry", "--layers", "0,1", "--print-config"])  # the resolved config, as it runs
    assert "\npca_layers:\n- 0\n- 1\n" in capsys.readouterr().out

def test_packaged_configs_share_one_schema():
    from isotropy.experiments._config import available_setups
    from isotropy.experiments.layer_geometry.experiment import EXPERIMENT

    setups = available_setups("layer-geometry")
    assert {"minilm-wikitext2", "bert-base-wikitext2", "gpt2-wikitext2", "distilbert-ptb"} <= set(setups)
    default = EXPERIMENT.config()
    assert default.model == "all-MiniLM-L6-v2" and default.metrics.n_neighbors == 100
    assert default.metrics.k_range == [2, 15] and default.metrics.intra_max_instances == 1000
    from isotropy.experiments._config import load_yaml, setup_path

    defaults = default.model_dump()
    for setup in setups:
        raw = load_yaml(setup_path("layer-geometry", setup))
        config = EXPERIMENT.config(setup)
        assert config.corpus in ("wikitext-2", "ptb")
        if setup == EXPERIMENT.default_setup:  # the default setup sets every key of the schema
            assert set(raw) == set(type(default).model_fields)
            assert set(raw["metrics"]) == set(type(default.metrics).model_fields)
            continue
        values = config.model_dump()  # the others state only what differs from the defaults (issue 18)
        for key in raw:
            nested = raw[key] if isinstance(raw[key], dict) else None
            for sub in nested or [None]:
                mine = values[key] if sub is None else values[key][sub]
                theirs = defaults[key] if sub is None else defaults[key][sub]
                assert mine != theirs, (setup, key, sub)


def test_pc1_frequency_rho_matches_sklearn_pca_and_scipy():
    from scipy.stats import spearmanr
    from sklearn.decomposition import PCA

    from isotropy.experiments.layer_geometry.metrics import pc1_frequency_rho

    rng = np.random.default_rng(4)
    frequency = rng.integers(1, 500, size=300)
    X = rng.normal(size=(300, 10)) + np.log(frequency)[:, None] * rng.normal(size=10)  # frequency along one line
    pc1 = PCA(n_components=1).fit_transform(X)[:, 0]
    expected = abs(spearmanr(pc1, np.log(frequency)).statistic)
    assert pc1_frequency_rho(X, frequency) == pytest.approx(expected, rel=1e-10)
    assert expected > 0.85
    assert math.isnan(pc1_frequency_rho(X, np.full(300, 7)))  # one frequency: no order to find


def test_several_token_samples_give_means_spreads_and_claims(tiny_bert, corpus_file, tmp_path, capsys):
    """--seeds 0,1,2: one token sample per seed; the table is the mean, the claims read one value per sample."""
    results_dir = tmp_path / "results"
    from isotropy.cli import main

    main(["run", "layer-geometry", "--model", tiny_bert, "--corpus", str(corpus_file), "--layers", "0,2",
          "--set", "max_tokens=40", "--set", "pca_layers=[2]", "--set", "static=null", "--seeds", "0,1,2",
          "--device", "cpu", "--results-dir", str(results_dir), "--quiet", "--threads", "1",
          "--set", "metrics.k_range=[2, 4]", "--set", "metrics.n_neighbors=10"])
    capsys.readouterr()
    results = json.loads((results_dir / "metrics.json").read_text())
    samples = results["samples"]
    assert [s["seed"] for s in samples] == [0, 1, 2] and results["seeds"] == [0, 1, 2]
    assert all(s["n_tokens"] == 40 for s in samples)
    # different lines visited per seed: the samples differ
    assert len({round(s["layers"][1]["s_inter"], 12) for s in samples}) > 1
    for j, row in enumerate(results["layers"]):
        for key in ("s_inter", "isoscore", "isoscore_centered", "pc1_frequency_rho"):
            values = [s["layers"][j][key] for s in samples]
            assert row[key] == pytest.approx(float(np.mean(values)), rel=1e-12)
            assert row["spread"][key] == pytest.approx([min(values), max(values)], rel=1e-12)
    table = (results_dir / "metrics.md").read_text()
    assert "Mean over 3 token samples (seeds 0, 1, 2)" in table and "PC1–frequency |ρ|" in table
    # outliers in view: per layer the largest norm over the median, the words that carry it, the specials apart
    norms = samples[0]["layers"][1]["token_norms"]
    assert norms["max_over_median"] == pytest.approx(samples[0]["layers"][1]["norm_max_over_median"])
    assert {w for w, _ in norms["special"]} == {"[CLS]", "[SEP]"} and len(norms["top"]) == 5
    assert "| layer | max / median | largest words (ratio) | special tokens (largest ratio) |" in table
    claims = {c["id"]: c for c in json.loads((results_dir / "claims.json").read_text())}
    assert set(claims) == {"anisotropic-globally", "centring-near-isotropic-cosine", "centring-near-isotropic-isoscore",
                           "frequency-manifold"}
    smallest = [min(r["s_inter"] for r in s["layers"] if r["layer"] >= 1) for s in samples]  # contextual layers
    c = claims["anisotropic-globally"]
    assert c["n_seeds"] == 3 and c["ours"] == pytest.approx(float(np.mean(smallest)))
    assert [c["interval"]["low"], c["interval"]["high"]] == pytest.approx([min(smallest), max(smallest)])
    expected = "holds" if min(smallest) > 0.3 else "does not hold" if max(smallest) <= 0.3 else "not established"
    assert c["verdict"] == expected
    assert c["command"].startswith("isotropy run layer-geometry")


def test_claims_leave_layer_0_out():
    """The claims are about contextual token spaces: layer 0 (the static input embeddings) is not one of the layers
    they read. On Gemma, layer 0 alone had S_inter 0.245 < 0.3 and turned anisotropic-globally to "does not hold"
    while every layer >= 1 was above 0.36; and its PC1-frequency |ρ| must not be the "some layer" either."""
    from isotropy.experiments.layer_geometry.run import claims as lg_claims

    def row(layer, s_inter, rho, centered=0.05, isoscore=0.6):
        return {"layer": layer, "s_inter": s_inter, "s_inter_centered": centered, "isoscore_centered": isoscore,
                "pc1_frequency_rho": rho}

    samples = [{"seed": seed, "layers": [row(0, 0.245, 0.9, centered=0.5, isoscore=0.01),
                                         row(1, 0.6, 0.2), row(6, 0.37 + 0.001 * seed, 0.3)]} for seed in range(3)]
    got = {c.id: c for c in lg_claims({"model": "m", "samples": samples}, None)}
    aniso = got["anisotropic-globally"]
    assert aniso.verdict == "holds" and aniso.interval["low"] == pytest.approx(0.37)  # not layer 0's 0.245
    assert "contextual layers" in aniso.statistic and "layer 0" in aniso.statistic and "left out" in aniso.statistic
    assert "contextual layer" in aniso.rule
    assert got["centring-near-isotropic-cosine"].verdict == "holds"  # layer 0's 0.5 after centring left out
    assert got["centring-near-isotropic-isoscore"].verdict == "holds"  # layer 0's 0.01 left out
    freq = got["frequency-manifold"]
    assert freq.ours == pytest.approx(0.3) and freq.verdict == "does not hold"  # layer 0's 0.9 is not "some layer"
    assert "some layer" in freq.statistic and "maximum" in freq.statistic and "selection" in freq.statistic
    assert freq.claim.startswith("The first principal component of the token space is ordered by word frequency")
    only_layer_0 = [{"seed": 0, "layers": [row(0, 0.245, 0.9)]}]
    assert {c.verdict for c in lg_claims({"model": "m", "samples": only_layer_0}, None)} == {"not established"}


def test_pca_view_pins_an_outlier_to_the_border():
    """One point 1,000x away from the rest must not set the axes: it is pinned, the bulk fills the view."""
    from isotropy.experiments.layer_geometry.plot import clip_to_view

    rng = np.random.default_rng(0)
    coords = rng.normal(size=(1000, 3))
    coords[7] = [1000.0, -1000.0, 0.0]
    clipped, outside, limits = clip_to_view(coords)
    assert outside[7] and outside.sum() < 8  # the outlier, and at most the tails beyond the 0.1/99.9 percentiles
    for axis, (low, high) in enumerate(limits):
        assert -6 < low < -2 and 2 < high < 6  # set by the bulk (about ±3.1 sd, widened), not by the outlier
        assert clipped[:, axis].min() >= low and clipped[:, axis].max() <= high
    np.testing.assert_array_equal(clipped[~outside], coords[~outside])


def test_compare_table_gives_each_choice_against_the_reference_and_its_sample_spread():
    from isotropy.experiments.layer_geometry.run import compare_table

    ref = {"layers": [{"layer": 0, "isoscore": 0.2, "s_inter": 0.5, "spread": {"isoscore": [0.19, 0.21]}},
                      {"layer": 3, "isoscore": 0.1, "s_inter": 0.9}]}
    other = {"layers": [{"layer": 3, "isoscore": 0.25, "s_inter": 0.8}, {"layer": 6, "isoscore": 0.3, "s_inter": 0.1}]}
    table = compare_table({"space": ref, "no-space": other})
    assert "| 3 | 0.100 | – | 0.250 (+0.150) |" in table  # only the layers both runs have
    assert "| 3 | 0.900 | – | 0.800 (-0.100) |" in table and "| 0 |" not in table and "| 6 |" not in table
    with pytest.raises(ValueError, match="at least 2 runs"):
        compare_table({"space": ref})
    # one-sample variants of seed 1: compared with the reference's own seed-1 sample (the same tokens)
    ref["samples"] = [{"seed": 0, "layers": ref["layers"]},
                      {"seed": 1, "layers": [{"layer": 3, "isoscore": 0.12, "s_inter": 0.88}]}]
    table = compare_table({"space": ref, "no-space": {**other, "seeds": [1]}})
    assert "| layer | space (seed 1) | space: spread over samples | no-space (Δ) |" in table
    assert "| 3 | 0.120 | – | 0.250 (+0.130) |" in table
