"""An empty path (an unset shell variable: ``isotropy measure "$EMB"``) is refused, never read as the current folder.

``Path('')`` is ``.``: ``isotropy measure ""`` measured every ``.npy`` file of the current folder as the shards of one
array (60 x 8 from two unrelated 30 x 8 files, exit status 0), and ``--labels ""`` was "a directory".
"""

from __future__ import annotations

import numpy as np
import pytest
from _cli import exiting_cli

from isotropy.io import read_embeddings, read_labels, read_word_vectors
from isotropy.measure.from_model import read_texts

EMPTY = "Got '' instead (empty: an unset shell variable?)."


@pytest.mark.parametrize("argv, name, expected", [
    (["measure", ""], "EMBEDDINGS", "a file, a folder of shards, a quoted pattern or 'glove-6b-50d'"),
    (["measure", "a.npy", "--labels", ""], "--labels", "a path"),
    (["measure", "a.npy", "--shrinkage-sample", ""], "--shrinkage-sample", "a number of rows or a file of rows"),
    (["measure", "--model", "", "--texts", "t.txt"], "--model", "a model name, folder or .gguf file"),
    (["measure", "--model", "all-MiniLM-L6-v2", "--texts", ""], "--texts", "a path"),
    (["measure", "--model", "all-MiniLM-L6-v2", "--texts", "t.txt", "--plot", ""], "--plot", "a path"),
    (["plot", ""], "PATH", "a path"),
    (["plot", "a.npy", "--out", ""], "--out", "a folder path"),
    (["run", "classifier-geometry", "--data-dir", ""], "--data-dir", "a folder path"),
])
def test_an_empty_path_on_the_command_line_is_refused(argv, name, expected, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    np.save("a.npy", rng.normal(size=(30, 8)))
    np.save("b.npy", rng.normal(size=(30, 8)))
    (tmp_path / "t.txt").write_text("a b\nc d\n")
    code, out, err = exiting_cli(argv, capsys)
    assert code == 2 and out == ""
    assert err.startswith(f"Error: Invalid value for '{name}': expected {expected}. {EMPTY}"), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy", "b.npy", "t.txt"]  # nothing written


@pytest.mark.parametrize("reader, name, expected", [
    (read_embeddings, "path", "a file path, or 'glove-6b-50d'"),
    (read_labels, "path", "a file path"),
    (read_texts, "path", "a file path"),
    (read_word_vectors, "path", "a file path, or 'glove-6b-50d'"),
])
def test_an_empty_path_given_to_a_reader_is_refused(reader, name, expected, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    np.save("a.npy", np.zeros((3, 2)))
    with pytest.raises(ValueError) as caught:
        reader("")
    assert str(caught.value) == f"The {name!r} parameter of {reader.__name__} must be {expected}. Got '' (empty) instead."


def test_an_empty_source_of_shards_is_refused(tmp_path, monkeypatch):
    pytest.importorskip("dask")
    from isotropy.io.shards import read_shards

    monkeypatch.chdir(tmp_path)
    np.save("a.npy", np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"^The 'source' parameter of read_shards must be a folder, a glob pattern or "
                                         r"a Zarr store\. Got '' \(empty\) instead\.$"):
        read_shards("")


@pytest.mark.parametrize("reader, name, expected", [
    (read_embeddings, "path", "a file path, or 'glove-6b-50d'"),
    (read_labels, "path", "a file path"),
    (read_texts, "path", "a file path"),
    (read_word_vectors, "path", "a file path, or 'glove-6b-50d'"),
])
@pytest.mark.parametrize("given, kind", [(np.zeros((3, 2)), "ndarray"), (None, "NoneType"), (5, "int"),
                                         (b"a.npy", "bytes")])
def test_a_path_of_another_type_given_to_a_reader_is_refused_in_one_line(reader, name, expected, given, kind,
                                                                         tmp_path, monkeypatch):
    """An array (the data itself, not its file), None or bytes: a TypeError naming the reader and its argument, not
    pathlib's ``expected str, bytes or os.PathLike object, not ndarray`` (found by a new user, read_embeddings(X))."""
    monkeypatch.chdir(tmp_path)
    np.save("a.npy", np.zeros((3, 2)))
    with pytest.raises(TypeError) as caught:
        reader(given)
    assert str(caught.value) == (f"The {name!r} parameter of {reader.__name__} must be {expected}: a str or an "
                                 f"os.PathLike such as pathlib.Path. Got {kind} instead.")


def test_a_source_of_shards_of_another_type_is_refused_in_one_line(tmp_path, monkeypatch):
    """``read_shards(X)`` of an array said "Cannot read embeddings from '[0. 0. 0.]': no .npy or .parquet shards
    found there", as if the array's text were a folder."""
    pytest.importorskip("dask")
    from isotropy.io.shards import read_shards

    monkeypatch.chdir(tmp_path)
    with pytest.raises(TypeError, match=r"^The 'source' parameter of read_shards must be a folder, a glob pattern or a "
                                        r"Zarr store: a str or an os\.PathLike such as pathlib\.Path\. Got ndarray "
                                        r"instead\.$"):
        read_shards(np.zeros(3))
