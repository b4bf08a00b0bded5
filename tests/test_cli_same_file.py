"""An output of a command onto one of its own input files is refused before anything is written.

Before, ``isotropy measure self.npy --metrics isoscore --json self.npy`` overwrote the embeddings with
the JSON and exited 0; the same for ``--labels`` and ``--texts``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from isotropy.cli import main


def _fails(capsys, *argv):
    with pytest.raises(SystemExit) as info:
        main(list(map(str, argv)))
    err = capsys.readouterr().err.strip()
    assert info.value.code == 2 and "\n" not in err, err
    return err


@pytest.fixture
def inputs(tmp_path):
    rng = np.random.default_rng(0)
    np.save(tmp_path / "self.npy", rng.normal(size=(40, 4)))
    np.save(tmp_path / "lab2.npy", np.arange(40) % 2)
    (tmp_path / "selft.txt").write_text("".join(f"text {i}\n" for i in range(10)))
    return tmp_path


def _unchanged(path, before):
    assert path.read_bytes() == before


def test_json_onto_the_embeddings_is_refused_and_the_file_kept(inputs, capsys):
    target = inputs / "self.npy"
    before = target.read_bytes()
    err = _fails(capsys, "measure", target, "--metrics", "isoscore", "--json", target)
    assert err == f"Error: --json {str(target)!r} is the same file as EMBEDDINGS; expected another path (writing it " \
                  f"would overwrite the input)."
    _unchanged(target, before)


def test_json_onto_the_embeddings_through_a_link_is_refused(inputs, capsys):
    link = inputs / "link.json"
    os.symlink(inputs / "self.npy", link)
    before = (inputs / "self.npy").read_bytes()
    err = _fails(capsys, "measure", inputs / "self.npy", "--metrics", "isoscore", "--json", link)
    assert "is the same file as EMBEDDINGS" in err
    _unchanged(inputs / "self.npy", before)


def test_json_onto_the_labels_is_refused(inputs, capsys):
    before = (inputs / "lab2.npy").read_bytes()
    err = _fails(capsys, "measure", inputs / "self.npy", "--labels", inputs / "lab2.npy", "--metrics", "silhouette_score",
                 "--json", inputs / "lab2.npy")
    assert "--json" in err and "is the same file as --labels" in err
    _unchanged(inputs / "lab2.npy", before)


def test_json_or_plot_onto_the_texts_of_model_is_refused_before_the_model_loads(inputs, capsys):
    texts = inputs / "selft.txt"
    before = texts.read_bytes()
    err = _fails(capsys, "measure", "--model", inputs / "no-such-model", "--texts", texts, "--json", texts)
    assert err.startswith(f"Error: --json {str(texts)!r} is the same file as --texts")
    err = _fails(capsys, "measure", "--model", inputs / "no-such-model", "--texts", texts, "--plot", texts)
    assert err.startswith(f"Error: --plot {str(texts)!r} is the same file as --texts")
    out = inputs / "out.png"
    err = _fails(capsys, "measure", "--model", inputs / "no-such-model", "--texts", texts, "--json", out, "--plot", out)
    assert err.startswith(f"Error: --plot {str(out)!r} is the same file as --json")
    _unchanged(texts, before)


# --- an output path too long for the file system: one line, the path cut, not "[Errno 36] File name too long: '<all>'"


def test_json_path_too_long_is_a_one_line_refusal_with_the_path_cut(inputs, capsys):
    long_path = str(inputs) + "/" + "a/" * 2100 + "x.json"  # past PATH_MAX (4096)
    err = _fails(capsys, "measure", inputs / "self.npy", "--metrics", "isoscore", "--json", long_path)
    assert err.startswith("Error: The --json ") and "cannot be written (file name too long)" in err
    assert len(err) < 400 and "characters)" in err


def test_results_dir_with_a_name_too_long_is_a_one_line_refusal(tmp_path):
    from isotropy.experiments._results_dir import ResultsLock, check_results_dir

    for results_dir in (tmp_path / ("d" * 300), tmp_path / "r" / ("d" * 300)):
        with pytest.raises(ValueError) as info:
            check_results_dir(results_dir)
            ResultsLock(results_dir).acquire()
        text = str(info.value)
        assert text.startswith("--results-dir '") and "(file name too long)" in text and len(text) < 300, text


def test_plot_out_onto_the_folder_of_a_training_log_named_geometry_csv_is_refused(tmp_path, capsys):
    log = tmp_path / "geometry.csv"
    log.write_text("step,geometry/isoscore/layer_1\n0,0.1\n10,0.05\n")
    before = log.read_bytes()
    err = _fails(capsys, "plot", log, "--out", tmp_path)
    assert err == f"Error: --out {str(log)!r} is the same file as the training log; expected another path (writing " \
                  f"it would overwrite the input)."
    _unchanged(log, before)


@pytest.mark.parametrize("pattern", ["{dir}", "{dir}/*.npy"])
def test_json_onto_a_shard_of_a_folder_or_glob_is_refused_and_the_shard_kept(tmp_path, capsys, pattern):
    # the shards of a folder or glob EMBEDDINGS were not compared: --json shards/part-1.npy wrote the report over it
    shards = tmp_path / "shards"
    shards.mkdir()
    rng = np.random.default_rng(0)
    for i in range(2):
        np.save(shards / f"part-{i}.npy", rng.normal(size=(30, 4)))
    target = shards / "part-1.npy"
    before = target.read_bytes()
    err = _fails(capsys, "measure", pattern.format(dir=shards), "--metrics", "isoscore", "--json", target)
    assert "is the same file as EMBEDDINGS (shard 2 of 2)" in err
    _unchanged(target, before)
