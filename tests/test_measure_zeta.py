"""``isotropy measure --zeta``: ζ of isoscore_star on every path (a file, shards on dask, a model's layers).

Reference: :func:`isotropy.isoscore_star` with the same ``zeta`` and ``shrinkage_cov`` (itself tested against the
``isoscore`` package and the closed form in tests/test_isoscore.py), and IsoScore* written out here from numpy's
covariance.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from isotropy import isoscore, isoscore_star
from isotropy.cli import cli


def invoke(*args):
    return CliRunner().invoke(cli, ["measure", *map(str, args)])


@pytest.fixture(scope="module")
def points(tmp_path_factory):
    root = tmp_path_factory.mktemp("zeta")
    rng = np.random.default_rng(5)
    X = (rng.standard_normal((400, 6)) * np.linspace(0.2, 3.0, 6) + 1.0).astype(np.float32)
    np.save(root / "x.npy", X)
    return root, X


def _isoscore_star(X, shrinkage, zeta):
    """IsoScore* of (1 − ζ)·Σ_X + ζ·Σ_S from its definition (Rudman & Eickhoff): (tr² / ‖·‖_F² − 1) / (d − 1)."""
    S = (1 - zeta) * np.cov(X.astype(np.float64), rowvar=False) + zeta * shrinkage
    return float((np.trace(S) ** 2 / np.sum(S * S) - 1) / (X.shape[1] - 1))


@pytest.mark.parametrize("zeta", [0.0, 0.5, 1.0])
def test_file_mode_takes_zeta_and_records_it(points, zeta):
    root, X = points
    result = invoke(root / "x.npy", "--metrics", "isoscore,isoscore_star", "--zeta", zeta, "--json", "-")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["zeta"] == zeta
    assert record["values"]["isoscore_star"] == pytest.approx(_isoscore_star(X, np.eye(6), zeta), rel=1e-9)
    if zeta == 0.0:  # ζ = 0 is IsoScore
        assert record["values"]["isoscore_star"] == pytest.approx(isoscore(X), rel=1e-12)


def test_default_zeta_is_recorded_and_differs(points):
    root, X = points
    record = json.loads(invoke(root / "x.npy", "--metrics", "isoscore_star", "--json", "-").stdout)
    assert record["zeta"] == 0.2 and record["values"]["isoscore_star"] == pytest.approx(isoscore_star(X), rel=1e-12)
    other = json.loads(invoke(root / "x.npy", "--metrics", "isoscore_star", "--zeta", 0.7, "--json", "-").stdout)
    assert abs(other["values"]["isoscore_star"] - record["values"]["isoscore_star"]) > 1e-3
    assert json.loads(invoke(root / "x.npy", "--metrics", "isoscore", "--json", "-").stdout)["zeta"] is None


def test_zeta_with_a_shrinkage_sample_in_the_default_table(points):
    root, _ = points
    result = invoke(root / "x.npy", "--shrinkage-sample", 100, "--zeta", 0.4, "--json", "-")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["zeta"] == 0.4 and "isoscore_star" in record["values"]
    with_default = json.loads(invoke(root / "x.npy", "--shrinkage-sample", 100, "--json", "-").stdout)
    assert abs(record["values"]["isoscore_star"] - with_default["values"]["isoscore_star"]) > 1e-4


def test_shards_on_dask_take_zeta(points, tmp_path):
    _, X = points
    shards = tmp_path / "shards"
    shards.mkdir()
    for i, part in enumerate(np.array_split(X, 3)):
        np.save(shards / f"part-{i}.npy", part)
    result = invoke(shards, "--metrics", "isoscore_star", "--zeta", 0.6, "--json", "-")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["zeta"] == 0.6 and record["chunking"] is not None  # the dask path
    assert record["values"]["isoscore_star"] == pytest.approx(_isoscore_star(X, np.eye(6), 0.6), rel=1e-9)


@pytest.mark.parametrize("value", ["1.5", "-0.1", "nan", "half", "inf"])
def test_bad_zeta_is_one_line_exit_2(points, value):
    root, _ = points
    result = invoke(root / "x.npy", "--metrics", "isoscore_star", "--zeta", value)
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == (
        f"Error: --zeta {value!r}: expected a number in [0, 1] (the shrinkage weight ζ of isoscore_star: 0 is "
        f"isoscore, 1 the IsoScore of Σ_S).")


def test_zeta_without_isoscore_star_is_refused(points):
    root, _ = points
    result = invoke(root / "x.npy", "--metrics", "isoscore", "--zeta", 0.3)
    assert result.exit_code == 2
    assert ("--zeta sets ζ of isoscore_star, which --metrics isoscore leaves out; add isoscore_star to --metrics or "
            "leave --zeta out.") in result.output
    result = invoke(root / "x.npy", "--zeta", 0.3)
    assert result.exit_code == 2
    assert "which the default table without --shrinkage-sample leaves out" in result.output


def test_a_models_layers_take_zeta(tmp_path):
    pytest.importorskip("torch")
    from _tiny_models import make_tiny_bert

    from isotropy.measure.from_model import measure_layers

    make_tiny_bert(tmp_path / "bert")
    texts = ["the cat sat on the mat .", "a dog ran .", "the dog sat on a mat", "a cat ran", "the mat .", "dog sat"]
    kwargs = {"model": str(tmp_path / "bert"), "metrics": ["isoscore_star"], "layers": [0, -1],
              "shrinkage_sample": 4}
    default = measure_layers(texts, **kwargs)
    half = measure_layers(texts, **kwargs, zeta=0.5)
    assert default["zeta"] == 0.2 and half["zeta"] == 0.5
    for a, b in zip(default["rows"], half["rows"]):
        assert np.isfinite(a["isoscore_star"]) and np.isfinite(b["isoscore_star"])  # NaN != anything: not a pass
        assert a["isoscore_star"] != pytest.approx(b["isoscore_star"], rel=1e-6)
    full = measure_layers(texts, **kwargs, zeta=0.0)
    plain = measure_layers(texts, model=kwargs["model"], metrics=["isoscore"], layers=[0, -1])
    for a, b in zip(full["rows"], plain["rows"]):
        assert a["isoscore_star"] == pytest.approx(b["isoscore"], rel=1e-9)  # ζ = 0 is IsoScore at every layer
    with pytest.raises(ValueError, match=r"The 'zeta' parameter of .* must be a float in the range \[0(\.0)?, 1(\.0)?\]"):
        measure_layers(texts, **kwargs, zeta=2.0)
    texts_file = tmp_path / "t.txt"
    texts_file.write_text("\n".join(texts) + "\n")
    result = invoke("--model", tmp_path / "bert", "--texts", texts_file, "--shrinkage-sample", 4, "--zeta", 0.5,
                    "--layers", "0,-1", "--json", "-")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["zeta"] == 0.5
    assert [r["isoscore_star"] for r in record["rows"]] == pytest.approx([r["isoscore_star"] for r in half["rows"]])
