"""``isotropy measure FILE --key K --shrinkage-sample OTHER``: ``--key`` picks the array of EMBEDDINGS, and of a
shrinkage file only where that file holds several arrays.

A new user's trial: EMBEDDINGS in an ``.npz`` (``--key coords``, as layer-geometry writes them) with a
``--shrinkage-sample`` file that is a plain ``.npy`` (or CSV) was refused, "--shrinkage-sample: Cannot read
embeddings from 'sample.npy': key='coords' was given but .npy files hold a single array", though no option could
make the command run: the key is needed by EMBEDDINGS and applies to nothing in the shrinkage file.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from isotropy.cli import cli


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 5)) * np.linspace(0.5, 2.0, 5)
    S = rng.normal(size=(200, 5))
    np.savez(tmp_path / "emb.npz", coords=X, cluster=np.arange(60) % 3)
    np.savez(tmp_path / "shrink.npz", coords=S, other=S[:, :2])
    np.save(tmp_path / "shrink.npy", S)
    return tmp_path, X, S


def _expected(X, S):
    """IsoScore* with ζ = 0.2: the IsoScore of C = (1 - ζ)·Σ_X + ζ·Σ_S (each np.cov, n - 1), by the closed form
    ((tr C)² / ||C||_F² - 1) / (d - 1) of Rudman et al. (2022)."""
    C = 0.8 * np.cov(X, rowvar=False) + 0.2 * np.cov(S, rowvar=False)
    return (np.trace(C) ** 2 / np.sum(C * C) - 1) / (C.shape[0] - 1)


def _measure(*args):
    return CliRunner().invoke(cli, ["measure", *map(str, args), "--metrics", "isoscore_star"])


@pytest.mark.parametrize("shrink", ["shrink.npy", "shrink.csv"])
def test_a_single_array_shrinkage_file_is_read_whatever_the_key_of_embeddings(files, shrink):
    root, X, S = files
    if shrink.endswith(".csv"):
        np.savetxt(root / shrink, S, delimiter=",", fmt="%.17g")
    out = root / "m.json"
    result = _measure(root / "emb.npz", "--key", "coords", "--shrinkage-sample", root / shrink, "--json", out)
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["values"]["isoscore_star"] == pytest.approx(_expected(X, S), rel=1e-10)


def test_a_shrinkage_container_is_still_read_with_the_key(files):
    root, X, S = files
    out = root / "m.json"
    result = _measure(root / "emb.npz", "--key", "coords", "--shrinkage-sample", root / "shrink.npz", "--json", out)
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["values"]["isoscore_star"] == pytest.approx(_expected(X, S), rel=1e-10)
    np.savez(root / "nokey.npz", a=S, b=S)
    result = _measure(root / "emb.npz", "--key", "coords", "--shrinkage-sample", root / "nokey.npz")
    assert result.exit_code == 2
    assert result.output.strip() == (f"Error: --shrinkage-sample: Cannot read embeddings from "
                                     f"{str(root / 'nokey.npz')!r}: the .npz archive has no array 'coords'; expected "
                                     f"one of ['a', 'b'] (--key 'coords', the array of EMBEDDINGS, was tried in it: "
                                     f"give --shrinkage-key K for this file).")


def test_the_shrinkage_key_picks_the_array_of_the_shrinkage_file_alone(files):
    """A trial: a .npy EMBEDDINGS with a shrinkage .npz of several arrays, or the two containers with members of other
    names, could not be measured at all (--key applied to both files). --shrinkage-key picks the shrinkage file's
    array, and the JSON says which arrays were read."""
    root, X, S = files
    np.savez(root / "other.npz", a=S, b=S[:, :2])
    np.save(root / "x.npy", X)
    for embeddings in (["x.npy"], ["emb.npz", "--key", "coords"]):
        out = root / "m.json"
        result = _measure(root / embeddings[0], *embeddings[1:], "--shrinkage-sample", root / "other.npz",
                          "--shrinkage-key", "a", "--json", out)
        assert result.exit_code == 0, result.output
        record = json.loads(out.read_text())
        assert record["values"]["isoscore_star"] == pytest.approx(_expected(X, S), rel=1e-10)
        assert (record["key"], record["shrinkage_key"]) == (embeddings[2] if len(embeddings) > 1 else None, "a")
    out = root / "m.json"
    assert _measure(root / "emb.npz", "--key", "coords", "--shrinkage-sample", root / "shrink.npz", "--json",
                    out).exit_code == 0
    assert json.loads(out.read_text())["shrinkage_key"] == "coords"  # --key, which the container holds too
    result = _measure(root / "x.npy", "--shrinkage-sample", root / "other.npz")
    assert result.exit_code == 2
    assert result.output == (f"Error: --shrinkage-sample: Cannot read embeddings from {str(root / 'other.npz')!r}: the "
                             f".npz archive holds several arrays ['a', 'b']; expected --shrinkage-key naming one of "
                             f"them.\n")


@pytest.mark.parametrize("args,message", [
    (["--shrinkage-sample", "shrink.npy", "--shrinkage-key", "a"],
     ("Error: --shrinkage-key 'a': --shrinkage-sample '{root}/shrink.npy' is no container of several arrays (.npz, "
      ".pt, .safetensors, .parquet); leave --shrinkage-key out.\n")),
    (["--shrinkage-key", "a"], ("picks the array of a --shrinkage-sample FILE holding several; give --shrinkage-sample "
                               "FILE too.")),
    (["--shrinkage-sample", "50", "--shrinkage-key", "a"],
     "--shrinkage-sample 50 draws rows from the input. Leave --shrinkage-key out."),
])
def test_a_shrinkage_key_that_picks_nothing_is_refused(files, args, message):
    root, _, _ = files
    args = [str(root / a) if a.endswith(".npy") else a for a in args]
    result = _measure(root / "emb.npz", "--key", "coords", *args)
    assert result.exit_code == 2
    assert message.format(root=root) in result.output


def test_a_misspelt_key_gets_a_did_you_mean(files):
    # "--key emd" listed the members but suggested none, where a misspelt metric or column gets one
    root, _, _ = files
    result = CliRunner().invoke(cli, ["measure", str(root / "emb.npz"), "--key", "cords"])
    assert result.exit_code == 2
    assert result.output == (f"Error: Cannot read embeddings from {str(root / 'emb.npz')!r}: the .npz archive has no "
                             f"array 'cords'; expected one of ['cluster', 'coords']. Did you mean 'coords'?\n")
    far = CliRunner().invoke(cli, ["measure", str(root / "emb.npz"), "--key", "zzzz"])
    assert far.exit_code == 2 and "Did you mean" not in far.output  # nothing close: no guess


def test_a_key_of_a_single_array_file_is_said_as_the_option(files):
    # "key='emb' was given but .npy files hold a single array": the Python spelling, on the command line
    root, _, _ = files
    for key, shown in [("emb", "--key emb"), ("my key", "--key 'my key'")]:
        result = CliRunner().invoke(cli, ["measure", str(root / "shrink.npy"), "--key", key])
        assert result.exit_code == 2
        assert result.output == (f"Error: Cannot read embeddings from {str(root / 'shrink.npy')!r}: {shown} was given "
                                 f"but .npy files hold a single array; expected no key (keys select an array in .npz, "
                                 f".pt, .pth, .safetensors and .parquet files).\n")
    shards = root / "shards"
    shards.mkdir()
    np.save(shards / "part-0.npy", np.ones((3, 2)))
    result = CliRunner().invoke(cli, ["measure", str(shards), "--key", "emb"])
    assert result.exit_code == 2
    assert result.output == (f"Error: Cannot read embeddings from {str(shards / 'part-0.npy')!r}: --key emb was given "
                             f"but .npy shards hold a single array; expected no key with .npy shards.\n")


def test_a_label_column_for_shards_without_columns_is_said_as_the_command_spells_it(tmp_path):
    """``label_column='label' was given but .npy shards have no named columns; expected no label_column`` reached the
    command line in its Python spelling (a trial, ``--labels SHARDS --label-column label``): the command says
    ``--label-column``, as it does for ``--key``."""
    shards = tmp_path / "shards"
    shards.mkdir()
    np.save(shards / "part-0.npy", np.ones((3, 2)))
    for column, shown in [("label", "--label-column label"), ("my label", "--label-column 'my label'")]:
        result = CliRunner().invoke(cli, ["measure", str(shards), "--labels", str(shards), "--label-column", column])
        assert result.exit_code == 2, result.output
        assert f": {shown} was given but .npy shards have no named columns; expected no --label-column " in result.output
        assert "label_column=" not in result.output and "no label_column" not in result.output


def test_a_shrinkage_count_beyond_the_rows_is_every_row_with_a_note(files):
    """--shrinkage-sample N of more rows than EMBEDDINGS holds was an error where --sample-size N is a note (a trial):
    now a note too, and Σ_S is the covariance of every row."""
    root, X, _ = files
    out = root / "m.json"
    result = _measure(root / "emb.npz", "--key", "coords", "--shrinkage-sample", "99999", "--json", out)
    assert result.exit_code == 0, result.output
    assert ("Note: --shrinkage-sample 99999 is not below the 60 rows of EMBEDDINGS: Σ_S is the covariance of every "
            "row (with every row measured, that of the rows measured: isoscore_star is then isoscore).") in result.output
    assert json.loads(out.read_text())["values"]["isoscore_star"] == pytest.approx(_expected(X, X), rel=1e-10)


def test_a_shrinkage_sample_with_nan_or_of_one_point_is_refused_naming_the_option(files):
    # the covariance accumulator named its own parameter ("The 'X_chunk' parameter of CovarianceAccumulator.update
    # must contain only finite values"), isoscore_star its 'shrinkage_cov' (the zero matrix): neither the option nor
    # its file (a user trial). Refused before any metric runs, in the option's words
    tmp_path, _, S = files
    bad = S.copy()
    bad[7, 3] = np.nan
    np.save(tmp_path / "nan.npy", bad)
    np.save(tmp_path / "same.npy", np.ones((20, 5)))
    result = _measure(tmp_path / "shrink.npy", "--shrinkage-sample", tmp_path / "nan.npy")
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (f"Error: --shrinkage-sample {str(tmp_path / 'nan.npy')!r} has a "
                                              f"non-finite value nan at row 7, column 3 (rows counted from 0); "
                                              f"expected finite numbers (no NaN or inf).")
    result = _measure(tmp_path / "shrink.npy", "--shrinkage-sample", tmp_path / "same.npy")
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (f"Error: --shrinkage-sample {str(tmp_path / 'same.npy')!r}: its 20 rows "
                                              f"are all the same point, so Σ_S, their covariance, is the zero matrix; "
                                              f"expected rows that vary, such as a larger sample of the embeddings.")
    np.save(tmp_path / "emb_nan.npy", bad)  # drawn from EMBEDDINGS: the row of EMBEDDINGS named
    result = _measure(tmp_path / "emb_nan.npy", "--shrinkage-sample", 199)
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == ("Error: --shrinkage-sample 199 drew a non-finite value of EMBEDDINGS, "
                                              "nan at row 7, column 3; expected finite numbers (no NaN or inf).")
