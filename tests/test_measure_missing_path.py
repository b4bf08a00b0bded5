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
], ids=["dir-workers", "dir", "workers", "npy-workers", "scheduler"])
def test_a_missing_path_that_may_mean_shards_lists_what_is_accepted(tmp_path, name, options):
    given = str(tmp_path / "nonexist") + name[len("nonexist"):]
    assert _error(given, *options) == f"Error: The embeddings {given!r} do not exist; {ACCEPTED}"


def test_a_missing_file_keeps_its_file_message(tmp_path):
    # no separator, no cluster: a file was meant, and the message lists the file formats
    missing = tmp_path / "nosuch.npy"
    assert _error(missing).startswith(f"Error: The embeddings file '{missing}' does not exist; expected a 2-d array")
