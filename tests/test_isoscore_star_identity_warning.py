"""IsoScore* without ``shrinkage_cov`` warns wherever it is called: Σ_S is then the identity and the value tracks the
vector norms, not isotropy. The function and ``CovarianceAccumulator.isoscore_star`` were silent where
``IsoScoreStar``, the regularisers and the callbacks warned (a user trial: 0.9994 on 64 MiniLM sentence embeddings, 0.104
on the same rows times 100, while their IsoScore is 0.102); callers that say it in their own terms say it once.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from isotropy import isoscore_star
from isotropy._kernels.accumulator import CovarianceAccumulator
from isotropy.cli import cli
from isotropy.metrics.isoscore import IdentityShrinkageWarning
from isotropy.training.metrics import IsoScoreStar

X = np.random.default_rng(0).normal(size=(60, 6)) * np.arange(1, 7)


def _identity_warnings(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = call()
    return value, [w for w in caught if issubclass(w.category, IdentityShrinkageWarning)]


@pytest.mark.parametrize("kind", ["numpy", "torch", "dask", "accumulator"])
def test_isoscore_star_without_shrinkage_cov_warns_once_at_the_callers_line(kind):
    if kind == "dask":
        import dask.array as da

        data = da.from_array(X, chunks=(20, 6))
    else:
        data = torch.as_tensor(X) if kind == "torch" else X
    if kind == "accumulator":
        accumulator = CovarianceAccumulator().update(X)
        value, said = _identity_warnings(lambda: accumulator.isoscore_star(zeta=0.2))
    else:
        value, said = _identity_warnings(lambda: isoscore_star(data, zeta=0.2))
    assert len(said) == 1 and said[0].filename == __file__
    caller = "CovarianceAccumulator.isoscore_star" if kind == "accumulator" else "isoscore_star"
    assert str(said[0].message).startswith(f"{caller}: without shrinkage_cov, Σ_S is the identity and the value "
                                           f"tracks the vector norms, not isotropy")
    assert float(value) == pytest.approx(isoscore_star(X, shrinkage_cov=np.eye(6), zeta=0.2), rel=1e-12)
    # with a Σ_S, or at zeta = 0 (Σ_S unused), nothing is said
    for call in (lambda: isoscore_star(data, shrinkage_cov=np.cov(X, rowvar=False)), lambda: isoscore_star(data, zeta=0)):
        if kind != "accumulator":
            assert _identity_warnings(call)[1] == []
    if kind == "accumulator":
        assert _identity_warnings(lambda: accumulator.isoscore_star(shrinkage_cov=np.eye(6)))[1] == []
        assert _identity_warnings(lambda: accumulator.isoscore_star(zeta=0.0))[1] == []


def test_the_value_depends_on_the_scale_as_the_warning_says():
    scaled = [_identity_warnings(lambda s=s: isoscore_star(X * s))[0] for s in (0.01, 1.0, 100.0)]
    assert scaled[0] > scaled[1] > scaled[2]  # shrunk toward I: small rows read near 1, large ones near IsoScore


def test_callers_that_say_it_in_their_own_terms_say_it_once(tmp_path):
    _, said = _identity_warnings(lambda: IsoScoreStar())  # the class, when built (as before) ...
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        metric = IsoScoreStar()
    metric.update(torch.as_tensor(X))
    _, again = _identity_warnings(metric.compute)  # ... not again at compute
    assert said == [] and again == []  # (its own UserWarning, not this category)
    with warnings.catch_warnings(record=True) as built:
        warnings.simplefilter("always")
        IsoScoreStar()
    assert any("IsoScoreStar: without shrinkage_cov" in str(w.message) for w in built)
    np.save(tmp_path / "x.npy", X)
    out = tmp_path / "out.json"
    result = CliRunner().invoke(cli, ["measure", str(tmp_path / "x.npy"), "--metrics", "isoscore_star", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert result.output.count("Σ_S") == 1 and "shrinkage_cov" not in result.output
    notes = json.loads(out.read_text())["warnings"]["isoscore_star"]
    assert len(notes) == 1 and notes[0].endswith("give a shrinkage sample (--shrinkage-sample).")


def test_a_shrinkage_sample_of_no_more_rows_than_features_is_said_by_measure(tmp_path):
    """`--shrinkage-sample 5` on 64 features was taken without a word (a new user's trial): Σ_S of 5 rows is singular
    (rank 4 at most). Said as a warning naming the rows, the features and the rows needed; not for 65 rows."""
    rows = np.random.default_rng(1).normal(size=(200, 64)).astype(np.float32)
    np.save(tmp_path / "x.npy", rows)
    np.save(tmp_path / "s.npy", rows[:3])
    for spec, said in (("5", 5), (str(tmp_path / "s.npy"), 3), ("65", None)):
        result = CliRunner().invoke(cli, ["measure", str(tmp_path / "x.npy"), "--metrics", "isoscore_star",
                                          "--shrinkage-sample", spec, "--no-progress"])
        assert result.exit_code == 0, result.output
        warned = [line for line in result.stderr.splitlines() if "Σ_S is singular" in line]
        if said is None:
            assert warned == []
        else:
            assert warned == [(f"Warning: isoscore_star: the shrinkage sample of {said} rows in 64 features spans at most "
                              f"{said - 1} dimensions, so Σ_S is singular and shrinks the covariance toward that span "
                              f"only; draw more rows than features (at least 65) for the larger sample Σ_S stands for "
                              f"(--shrinkage-sample).")]


def test_the_singular_shrinkage_sample_is_said_only_where_isoscore_star_runs(tmp_path):
    """Σ_S is read whenever --shrinkage-sample is given; its warning is IsoScore*'s, so a table without it says nothing
    (a review: `--metrics isoscore --shrinkage-sample 5` warned of a metric not measured). Drawn from every row of a
    file of no more rows than features, more rows can only come from a FILE: said."""
    rows = np.random.default_rng(2).normal(size=(30, 64)).astype(np.float32)
    np.save(tmp_path / "x.npy", rows)

    def stderr(*args):
        result = CliRunner().invoke(cli, ["measure", str(tmp_path / "x.npy"), "--no-progress", *args])
        assert result.exit_code == 0, result.output
        return [line for line in result.stderr.splitlines() if "Σ_S is singular" in line]

    assert stderr("--metrics", "isoscore", "--shrinkage-sample", "5") == []
    result = CliRunner().invoke(cli, ["measure", str(tmp_path / "x.npy"), "--no-progress", "--metrics", "isoscore_star",
                                      "--shrinkage-sample", "5", "--json", str(tmp_path / "r.json")])
    assert result.exit_code == 0, result.output
    kept = json.loads((tmp_path / "r.json").read_text())["warnings"]["isoscore_star"]  # with the value, as --model keeps it
    assert kept[0].startswith("the shrinkage sample of 5 rows in 64 features spans at most 4 dimensions")
    assert stderr("--metrics", "isoscore_star", "--shrinkage-sample", "5")[0].endswith(
        "for the larger sample Σ_S stands for (--shrinkage-sample).")
    assert stderr("--metrics", "isoscore_star", "--shrinkage-sample", "30")[0].endswith(
        "for the larger sample Σ_S stands for; or give a FILE of more rows (--shrinkage-sample).")
