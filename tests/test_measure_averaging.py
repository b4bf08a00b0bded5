"""``isotropy measure --averaging``: how mle_dimension pools its local estimates, on every path (a file, shards
on dask, a model's layers), and the MLE warnings' advice in the command's words.

Reference: :func:`isotropy.mle_dimension` with the same ``averaging`` (itself tested against scikit-dimension's
``comb`` in tests/test_dimension.py) and the pooled local estimates written out here.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from isotropy import local_mle_dimension, mle_dimension
from isotropy.cli import cli


def invoke(*args):
    return CliRunner().invoke(cli, ["measure", *map(str, args)])


@pytest.fixture(scope="module")
def far(tmp_path_factory):
    """Normal 5-d data with one row 1e8 times the others: the mean of the local estimates is carried away."""
    root = tmp_path_factory.mktemp("averaging")
    X = np.random.default_rng(0).normal(size=(500, 5))
    X[0] *= 1e8
    np.save(root / "x.npy", X)
    return root, X


def _pooled(X, how):
    local = local_mle_dimension(X, n_neighbors=20)
    return {"mean": local.mean(), "harmonic": 1.0 / np.mean(1.0 / local), "median": np.median(local)}[how]


@pytest.mark.parametrize("how", ["mean", "harmonic", "median"])
@pytest.mark.parametrize("metrics", ["mle_dimension", "twonn_dimension,mle_dimension"])  # alone and the shared search
def test_file_mode_takes_averaging_and_records_it(far, how, metrics):
    root, X = far
    result = invoke(root / "x.npy", "--metrics", metrics, "--averaging", how, "--json", "-")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["averaging"] == how
    assert record["values"]["mle_dimension"] == pytest.approx(_pooled(X, how), rel=1e-12)
    assert record["values"]["mle_dimension"] == pytest.approx(mle_dimension(X, averaging=how), rel=1e-12)


def test_the_warning_advises_the_option_and_the_default_is_recorded(far):
    root, _ = far
    result = invoke(root / "x.npy", "--metrics", "mle_dimension", "--json", "-")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["averaging"] == "mean"
    assert ("so a few points carry it (e.g. points far from all the others); pool with averaging='harmonic' "
            "(scikit-dimension's default) or 'median' (--averaging harmonic or median on the command line).") \
        in result.stderr
    assert json.loads(invoke(root / "x.npy", "--metrics", "isoscore", "--json", "-").stdout)["averaging"] is None


def test_shards_on_dask_take_averaging(far, tmp_path):
    _, X = far
    shards = tmp_path / "shards"
    shards.mkdir()
    for i, part in enumerate(np.array_split(X, 3)):
        np.save(shards / f"part-{i}.npy", part)
    result = invoke(shards, "--metrics", "twonn_dimension,mle_dimension", "--averaging", "median", "--json", "-")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["averaging"] == "median" and record["chunking"] is not None  # the dask path
    assert record["values"]["mle_dimension"] == pytest.approx(_pooled(X, "median"), rel=1e-9)


@pytest.mark.parametrize("value", ["geometric", "Mean", "1"])
def test_bad_averaging_is_one_line_exit_2(far, value):
    root, _ = far
    result = invoke(root / "x.npy", "--metrics", "mle_dimension", "--averaging", value)
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == (
        f"Error: --averaging {value!r}: expected one of mean, harmonic, median (how mle_dimension pools its local "
        f"estimates).")


def test_averaging_without_mle_is_refused(far):
    root, _ = far
    result = invoke(root / "x.npy", "--metrics", "isoscore,twonn_dimension", "--averaging", "median")
    assert result.exit_code == 2
    assert ("--averaging sets how mle_dimension pools its local estimates, which --metrics isoscore,twonn_dimension "
            "leaves out; add mle_dimension to --metrics or leave --averaging out.") in result.output


def test_a_models_layers_take_averaging(tmp_path):
    pytest.importorskip("torch")
    from _tiny_models import make_tiny_bert

    from isotropy.measure.from_model import measure_layers

    make_tiny_bert(tmp_path / "bert")
    words = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "."]  # the tiny model's vocabulary
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(words, size=rng.integers(3, 8))) for _ in range(40)]
    kwargs = {"model": str(tmp_path / "bert"), "metrics": ["twonn_dimension", "mle_dimension"], "layers": [0, -1],
              "n_neighbors": 5}
    mean = measure_layers(texts, **kwargs)
    median = measure_layers(texts, **kwargs, averaging="median")
    assert mean["averaging"] == "mean" and median["averaging"] == "median"
    assert all(a["twonn_dimension"] == b["twonn_dimension"] for a, b in zip(mean["rows"], median["rows"]))
    assert all(np.isfinite(r["mle_dimension"]) for r in mean["rows"] + median["rows"])
    assert any(a["mle_dimension"] != b["mle_dimension"] for a, b in zip(mean["rows"], median["rows"]))
    with pytest.raises(ValueError, match=r"The 'averaging' parameter of .* must be one of"):
        measure_layers(texts, **kwargs, averaging="geometric")
    texts_file = tmp_path / "t.txt"
    texts_file.write_text("\n".join(texts) + "\n")
    result = invoke("--model", tmp_path / "bert", "--texts", texts_file, "--metrics", "mle_dimension",
                    "--n-neighbors", 5, "--averaging", "median", "--layers", "0,-1", "--json", "-")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["averaging"] == "median"
    assert [r["mle_dimension"] for r in record["rows"]] == pytest.approx([r["mle_dimension"] for r in median["rows"]])
