"""``isoscore`` and ``participation_ratio`` of ``n_samples <= n_features`` rows warn that the rows cap the value (they
span at most n − 1 dimensions), as ``isotropy measure`` and the training callbacks did; the functions were silent and
their docstring called it fine (a user trial: an isotropic Gaussian of 50 x 384 reads IsoScore 0.111, under its
ceiling (n − 2)/(d − 1) = 0.125)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from isotropy import isoscore, participation_ratio
from isotropy._utils.warn import SpanBoundWarning
from isotropy.cli import cli

X = np.random.default_rng(0).normal(size=(50, 384))


def _said(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = call()
    return value, [w for w in caught if issubclass(w.category, SpanBoundWarning)]


@pytest.mark.parametrize("kind", ["numpy", "torch", "dask"])
def test_the_functions_say_the_bound_at_the_callers_line(kind):
    import dask.array as da

    data = {"numpy": X, "torch": torch.as_tensor(X), "dask": da.from_array(X, chunks=(20, 384))}[kind]
    value, said = _said(lambda: isoscore(data))
    assert float(value) <= 48 / 383 and len(said) == 1 and said[0].filename == __file__
    assert str(said[0].message) == ("isoscore: 50 rows in 384 features span at most 49 dimensions, so the value is at "
                                    "most 0.125 on any such rows (a regular simplex reaches it); measure more rows "
                                    "than features to compare spaces by it.")
    value, said = _said(lambda: participation_ratio(data))
    assert float(value) <= 49 and len(said) == 1 and said[0].filename == __file__
    assert "so the value is at most 49 on any such rows" in str(said[0].message)


def test_more_rows_than_features_say_nothing():
    assert _said(lambda: isoscore(X.T[:, :50]))[1] == []  # 384 rows in 50 features
    assert _said(lambda: participation_ratio(X[:, :49]))[1] == []  # 50 rows in 49 features


def test_a_regular_simplex_reaches_the_bound():
    simplex = np.eye(50, 384)  # 50 equidistant points
    assert _said(lambda: isoscore(simplex))[0] == pytest.approx(48 / 383, rel=1e-12)


def test_isotropy_measure_says_it_once_with_the_value(tmp_path):
    np.save(tmp_path / "x.npy", X)
    out = tmp_path / "out.json"
    result = CliRunner().invoke(cli, ["measure", str(tmp_path / "x.npy"), "--metrics", "isoscore", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert result.output.count("span at most 49 dimensions") == 1
    assert len(json.loads(out.read_text())["warnings"]["isoscore"]) == 1
