"""A missing EMBEDDINGS path that may have meant shards (a trailing separator, --workers, --scheduler) is named
as given, with every form `isotropy measure` accepts: a file, a directory of shards, a glob, a Zarr store."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from isotropy.cli import cli

ACCEPTED = ("expected an embeddings file (.npy, .npz, .pt, .pth, .safetensors, .csv, .tsv, .parquet or a word2vec/GloVe "
            "vector file), a directory of .npy or .parquet shards, a glob pattern of such shards, or a Zarr store.")


def _error(*args):
    result = CliRunner().invoke(cli, ["measure", *map(str, args)])
    assert result.exit_code == 2, result.output
    return result.output.strip().splitlines()[-1]


@pytest.mark.parametrize("name, options", [
    ("nonexist" + os.sep, ["--workers", "2"]),
    ("nonexist" + os.sep, []),
    ("nonexist", ["--workers", "2"]),
    ("nonexist.npy", ["--workers", "2"]),
    ("nonexist", ["--scheduler", "tcp://127.0.0.1:1"]),
    ("nonexist", []),  # no extension: a folder of shards as likely as a file (it was "the embeddings file", a trial)
], ids=["dir-workers", "dir", "workers", "npy-workers", "scheduler", "no-extension"])
def test_a_missing_path_that_may_mean_shards_lists_what_is_accepted(tmp_path, name, options):
    given = str(tmp_path / "nonexist") + name[len("nonexist"):]
    assert _error(given, *options) == f"Error: The embeddings {given!r} do not exist; {ACCEPTED}"


def test_a_missing_file_keeps_its_file_message(tmp_path):
    # no separator, no cluster: a file was meant, and the message lists the file formats
    missing = tmp_path / "nosuch.npy"
    assert _error(missing).startswith(f"Error: The embeddings file '{missing}' does not exist; expected a 2-d array")


def test_a_missing_zarr_store_lists_what_is_accepted(tmp_path):
    given = str(tmp_path / "nonexist.zarr")
    for options in ([], ["--workers", "2"]):
        assert _error(given, *options) == f"Error: The embeddings {given!r} do not exist; {ACCEPTED}"


def test_a_dangling_link_is_named_as_one_with_workers_too(tmp_path):
    link = tmp_path / "dangling.npy"
    link.symlink_to(tmp_path / "nothere.npy")
    for options in ([], ["--workers", "2"]):
        error = _error(link, *options)
        assert "dangling symbolic link" in error and str(link) in error, options


def test_read_embeddings_names_the_forms_it_reads_and_where_shards_are_read(tmp_path):
    from isotropy.io.embeddings import read_embeddings

    given = str(tmp_path / "nonexist") + os.sep
    with pytest.raises(FileNotFoundError, match=f"^The embeddings '{given}' do not exist; expected a 2-d array.*"
                                                f"A directory, glob pattern or Zarr store of shards is read by "
                                                f"isotropy.io.shards.read_shards \\(and by isotropy measure\\), not "
                                                f"by read_embeddings.$"):
        read_embeddings(given)
