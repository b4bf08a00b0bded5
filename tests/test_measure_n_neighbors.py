"""``isotropy measure --n-neighbors``: k of mle_dimension on every path (a file, shards on dask, a model's layers).

References: :func:`isotropy.mle_dimension` with the same ``n_neighbors`` (itself tested against
scikit-dimension in tests/test_dimension.py) and the Levina-Bickel formula written out here.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from isotropy.cli import cli
from isotropy.metrics.dimension import mle_dimension, twonn_dimension


def invoke(*args):
    return CliRunner().invoke(cli, ["measure", *map(str, args)])


@pytest.fixture(scope="module")
def points(tmp_path_factory):
    root = tmp_path_factory.mktemp("k")
    rng = np.random.default_rng(3)
    X = (rng.random((300, 4)) @ rng.standard_normal((4, 12))).astype(np.float32)
    np.save(root / "x.npy", X)
    return root, X


def _levina_bickel(X, k):
    """The MLE of Levina & Bickel (2005), mean of the local estimates, from scipy's exact distances."""
    from scipy.spatial.distance import cdist

    D = cdist(X.astype(np.float64), X.astype(np.float64))
    np.fill_diagonal(D, np.inf)
    T = np.sort(D, axis=1)[:, :k]
    local = 1.0 / (np.log(T[:, -1:] / T[:, :-1]).sum(axis=1) / (k - 1))
    return float(local.mean())


@pytest.mark.parametrize("k", [5, 50])
def test_file_mode_takes_k_and_records_it(points, tmp_path, k):
    root, X = points
    out = tmp_path / "m.json"
    result = invoke(root / "x.npy", "--n-neighbors", k, "--metrics", "twonn_dimension,mle_dimension", "--json", out)
    assert result.exit_code == 0, result.output
    record = json.loads(out.read_text())
    assert record["n_neighbors"] == k
    assert record["values"]["mle_dimension"] == pytest.approx(mle_dimension(X, n_neighbors=k), rel=1e-12)
    assert record["values"]["mle_dimension"] == pytest.approx(_levina_bickel(X, k), rel=1e-9)
    assert record["values"]["twonn_dimension"] == pytest.approx(twonn_dimension(X), rel=1e-12)  # unchanged by k


def test_default_k_is_recorded_and_differs_from_another_k(points, tmp_path):
    root, X = points
    default, other = tmp_path / "d.json", tmp_path / "o.json"
    assert invoke(root / "x.npy", "--json", default).exit_code == 0
    assert invoke(root / "x.npy", "--n-neighbors", 5, "--json", other).exit_code == 0
    d, o = json.loads(default.read_text()), json.loads(other.read_text())
    assert d["n_neighbors"] == 20 and o["n_neighbors"] == 5
    assert d["values"]["mle_dimension"] == pytest.approx(_levina_bickel(X, 20), rel=1e-9)
    assert abs(d["values"]["mle_dimension"] - o["values"]["mle_dimension"]) > 1e-3
    without = tmp_path / "w.json"
    assert invoke(root / "x.npy", "--metrics", "isoscore", "--json", without).exit_code == 0
    assert json.loads(without.read_text())["n_neighbors"] is None  # no MLE measured: no k to record


def test_mle_alone_takes_k(points):
    root, X = points
    result = invoke(root / "x.npy", "--metrics", "mle_dimension", "--n-neighbors", 7, "--json", "-")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["values"]["mle_dimension"] == pytest.approx(_levina_bickel(X, 7), rel=1e-9)


@pytest.mark.parametrize("value", ["1", "0", "-3", "abc", "2.5"])
def test_bad_k_is_one_line_exit_2(points, value):
    root, _ = points
    result = invoke(root / "x.npy", "--n-neighbors", value)
    assert result.exit_code == 2
    assert f"--n-neighbors {value!r}: expected an integer number of neighbours of at least 2" in result.output
    assert "Usage:" not in result.output


def test_k_without_mle_is_refused(points):
    root, _ = points
    result = invoke(root / "x.npy", "--metrics", "isoscore,twonn_dimension", "--n-neighbors", 5)
    assert result.exit_code == 2
    assert "--n-neighbors sets k of mle_dimension, which --metrics isoscore,twonn_dimension leaves out" in result.output


@pytest.mark.parametrize("layout", ["file", "shards"])
def test_too_large_k_is_refused_before_any_metric_runs(points, tmp_path, layout):
    # the rows are known before the metrics: a k they cannot give is the user's, refused at once (TwoNN used to be
    # measured first, and on a model's texts the forward pass ran before the refusal)
    root, X = points
    embeddings = root / "x.npy"
    if layout == "shards":
        embeddings = tmp_path / "shards"
        embeddings.mkdir()
        for i, part in enumerate(np.array_split(X, 3)):
            np.save(embeddings / f"part-{i}.npy", part)
    result = invoke(embeddings, "--metrics", "twonn_dimension,mle_dimension", "--n-neighbors", 300, "--json",
                    tmp_path / "out.json")
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == ("Error: --n-neighbors must be an int in the range [2, 299] (at "
                                                      "most n_samples - 1 = 299 for 300 samples). Got 300 instead.")
    assert "twonn_dimension" not in result.output and not (tmp_path / "out.json").exists()


def test_too_large_k_for_a_models_texts_is_refused_before_the_model_is_loaded(tmp_path):
    texts = tmp_path / "t.txt"
    texts.write_text("a cat\nthe dog runs\nbirds fly\nfish swim\n")
    result = invoke("--model", tmp_path / "no-such-model", "--texts", texts, "--metrics", "isoscore,mle_dimension",
                    "--n-neighbors", 6)
    assert result.exit_code == 2  # the model path does not exist: the k was refused before it was looked for
    assert result.output.strip().splitlines()[-1] == ("Error: --n-neighbors must be an int in the range [2, 3] (at "
                                                      "most n_samples - 1 = 3 for 4 samples). Got 6 instead.")


def test_shards_on_dask_take_k(points, tmp_path):
    _, X = points
    shards = tmp_path / "shards"
    shards.mkdir()
    for i, part in enumerate(np.array_split(X, 3)):
        np.save(shards / f"part-{i}.npy", part)
    result = invoke(shards, "--metrics", "mle_dimension", "--n-neighbors", 9, "--json", "-")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["n_neighbors"] == 9 and record["chunking"] is not None  # the dask path
    assert record["values"]["mle_dimension"] == pytest.approx(_levina_bickel(X, 9), rel=1e-9)


def test_cost_note_estimate_follows_k(monkeypatch):
    from isotropy._kernels import cost, neighbors

    seen = []
    monkeypatch.setattr(neighbors, "uses_compiled_kernels", lambda n, d, k=2: seen.append(k) or False)
    cost.estimate_seconds("mle_dimension", 10_000, 64, n_neighbors=50)
    cost.estimate_seconds("mle_dimension", 10_000, 64)
    assert seen == [50, 20]  # the loops are chosen for the search's own k


def test_duplicate_rows_name_the_option_and_are_warned_once_per_metric_on_dask(tmp_path):
    """Too few distinct rows for k names --n-neighbors; the dask path's duplicate warning reads once per metric."""
    X = np.repeat(np.random.default_rng(0).standard_normal((10, 5)), 30, axis=0)
    np.save(tmp_path / "dup.npy", X)
    result = invoke(tmp_path / "dup.npy", "--metrics", "twonn_dimension,mle_dimension")
    assert result.exit_code == 2
    # (the default k, not an option given: "the default --n-neighbors 20", as the range error of a default k says)
    assert ("Error: mle_dimension: EMBEDDINGS must have more than the default --n-neighbors 20 distinct "
            "points. Got 10 distinct points (290 duplicate rows) instead." in result.output)
    shards = tmp_path / "shards"
    shards.mkdir()
    for i, part in enumerate(np.array_split(X, 3)):
        np.save(shards / f"p{i}.npy", part)
    result = invoke(shards, "--metrics", "twonn_dimension,mle_dimension", "--n-neighbors", 5)
    assert result.exit_code == 0, result.output
    warned = [line for line in result.output.splitlines() if line.startswith("Warning:")
              and "relative standard error" not in line]  # (few distinct points: TwoNN's own warning too)
    assert [line.split(":")[1].strip() for line in warned] == ["twonn_dimension", "mle_dimension"]
    assert all(line.split(": ", 2)[2].startswith("EMBEDDINGS has 290 duplicate rows") for line in warned)


@pytest.mark.parametrize(("k", "what"), [(2, "expectation"), (3, "variance")])
def test_a_k_whose_mean_has_a_heavy_tail_is_warned_of(points, k, what):
    """At k = 2 the local MLE (k - 1)/S, S ~ Gamma(k - 1), has no finite mean; at k = 3 no finite variance."""
    import warnings

    from isotropy import MLE

    root, X = points
    result = invoke(root / "x.npy", "--metrics", "mle_dimension", "--n-neighbors", k, "--json", "-")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["values"]["mle_dimension"] == pytest.approx(_levina_bickel(X, k), rel=1e-9)  # still the formula
    message = f"with n_neighbors={k} the mean of the local estimates has no finite {what}"
    assert any(message in note for note in record["warnings"]["mle_dimension"])
    with pytest.warns(UserWarning, match=message):
        MLE(n_neighbors=k).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mle_dimension(X, n_neighbors=4)  # from k = 4 on: no warning
        mle_dimension(X, n_neighbors=k, averaging="harmonic")  # the harmonic mean is not heavy-tailed


@pytest.mark.parametrize("layout", ["file", "shards"])
@pytest.mark.parametrize(("k", "what"), [(2, "expectation"), (3, "variance")])
def test_the_heavy_tail_warning_of_a_small_k_is_mles_alone(points, tmp_path, layout, k, what):
    """TwoNN and MLE share one neighbour search, but the warning on MLE's mean at k = 2, 3 concerns MLE alone
    (TwoNN reads two neighbours whatever k is): printed and kept under mle_dimension only. The duplicate rows,
    which both estimators see, are still warned of under each."""
    _, X = points
    X = np.concatenate([X, X[:7]])  # 7 duplicate rows
    if layout == "file":
        embeddings = tmp_path / "x.npy"
        np.save(embeddings, X)
    else:  # the dask path, where each estimator runs on its own
        embeddings = tmp_path / "shards"
        embeddings.mkdir()
        for i, part in enumerate(np.array_split(X, 3)):
            np.save(embeddings / f"part-{i}.npy", part)
    result = invoke(embeddings, "--metrics", "twonn_dimension,mle_dimension", "--n-neighbors", k, "--json", "-")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    heavy = f"with n_neighbors={k} the mean of the local estimates has no finite {what}"
    duplicates = "EMBEDDINGS has 7 duplicate rows"  # the command names its data as its errors do
    twonn, mle = record["warnings"]["twonn_dimension"], record["warnings"]["mle_dimension"]
    assert [note.startswith(duplicates) for note in twonn] == [True]
    assert [(note.startswith(duplicates), note.startswith(heavy)) for note in mle] == [(True, False), (False, True)]
    warned = [line for line in result.stderr.splitlines() if line.startswith("Warning:")]
    assert [line for line in warned if heavy in line] == [line for line in warned if line.startswith(
        f"Warning: mle_dimension: {heavy}")]
    assert len([line for line in warned if heavy in line]) == 1
    with pytest.warns(UserWarning, match="X has 7 duplicate rows"):  # the Python API names its parameter:
        alone = twonn_dimension(X)
    assert record["values"]["twonn_dimension"] == pytest.approx(alone, rel=1e-12)  # unchanged by k


def test_default_k_of_mle_asked_for_by_name_is_refused_before_any_metric_runs(tmp_path):
    # 15 rows, MLE by name without --n-neighbors: isoscore ran, then MLE failed on its default k = 20 (two lines, the
    # second "the metric failed ... the reason is above"); now refused at once, as a k given too large is
    path = tmp_path / "small.npy"
    np.save(path, np.random.default_rng(0).normal(size=(15, 6)))
    result = invoke(path, "--metrics", "isoscore,mle_dimension", "--json", tmp_path / "out.json")
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [("Error: the default --n-neighbors must be an int in the range [2, 14] "
                                                  "(at most n_samples - 1 = 14 for 15 samples). Got 20 instead.")]
    assert not (tmp_path / "out.json").exists()
    # the default table still leaves MLE out with a note, and measures the rest
    assert invoke(path).exit_code == 0


def test_default_k_of_mle_asked_for_by_name_on_a_models_texts_is_refused_before_the_model_is_loaded(tmp_path):
    texts = tmp_path / "t.txt"
    texts.write_text("a cat\nthe dog runs\nbirds fly\nfish swim\nthe sun is hot\n")
    result = invoke("--model", tmp_path / "no-such-model", "--texts", texts, "--metrics", "mle_dimension")
    assert result.exit_code == 2  # the model path does not exist: the default k was refused before it was looked for
    assert result.output.strip().splitlines() == [("Error: the default --n-neighbors must be an int in the range [2, 4] "
                                                  "(at most n_samples - 1 = 4 for 5 samples). Got 20 instead.")]
    # equal texts are one point: the default k against the distinct texts, as a given k
    texts.write_text("a cat\n" * 25 + "the dog runs\n")
    result = invoke("--model", tmp_path / "no-such-model", "--texts", texts, "--metrics", "isoscore,mle_dimension")
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == ("Error: the default --n-neighbors must be at most the distinct "
                                                      "texts less one, 1 (2 distinct of 26: equal texts are one "
                                                      "point). Got 20 instead.")
