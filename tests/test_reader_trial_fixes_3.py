"""Fixes from a new user's trial of ``isotropy measure`` (third round): row-id columns, malformed CSV lines, row names
pandas reads as missing, label header names, labels in a Parquet file."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from isotropy import isoscore
from isotropy.cli import main
from isotropy.io.embeddings import read_embeddings


def _gaussian(n=50, d=4, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


# 1. a row-id column with a header is row names, not a feature


@pytest.mark.parametrize("name", ["id", "ID", "index", "Index", "idx", "row", "row_id", "Row_ID", "Unnamed: 0"])
@pytest.mark.parametrize(("suffix", "sep"), [(".csv", ","), (".tsv", "\t")])
@pytest.mark.parametrize("start", [0, 1])
def test_a_headed_row_id_column_of_a_table_is_row_names(tmp_path, name, suffix, sep, start):
    X = _gaussian()
    frame = pd.DataFrame(X, columns=list("abcd"))
    frame.index += start
    frame.index.name = name
    path = tmp_path / f"p{suffix}"
    frame.to_csv(path, sep=sep)
    read, names = read_embeddings(path)
    assert read.shape == (50, 4)  # it was (50, 5): the row ids measured as a feature
    np.testing.assert_allclose(read, X, rtol=1e-15)
    assert names[:3] == [str(start), str(start + 1), str(start + 2)]


@pytest.mark.parametrize("name", ["id", "index", "IDX", "row_id"])
def test_a_row_id_column_of_a_parquet_table_is_row_names(tmp_path, name):
    X = _gaussian()
    frame = pd.DataFrame(X, columns=list("abcd"))
    frame.index.name = name
    frame.reset_index().to_parquet(tmp_path / "p.parquet")
    read, names = read_embeddings(tmp_path / "p.parquet")
    assert read.shape == (50, 4)
    np.testing.assert_allclose(read, X, rtol=1e-15)
    assert names[:2] == ["0", "1"]
    # beside a column of words, the words stay the row names and the ids are still not a feature
    frame.insert(0, "word", [f"w{i}" for i in range(50)])
    frame.reset_index().to_parquet(tmp_path / "w.parquet")
    read, names = read_embeddings(tmp_path / "w.parquet")
    np.testing.assert_allclose(read, X, rtol=1e-15)
    assert names[:2] == ["w0", "w1"]


def test_isotropy_measure_of_a_table_with_an_id_column_measures_the_features(tmp_path, capsys):
    X = _gaussian()
    frame = pd.DataFrame(X, columns=list("abcd"))
    frame.index.name = "id"
    frame.to_csv(tmp_path / "p.csv")
    frame.reset_index().to_parquet(tmp_path / "p.parquet")
    expected = isoscore(X)
    assert expected == pytest.approx(0.8846, abs=1e-4)
    for name in ("p.csv", "p.parquet"):
        main(["measure", str(tmp_path / name), "--metrics", "isoscore", "--json", str(tmp_path / "out.json")])
        got = json.loads((tmp_path / "out.json").read_text())["values"]["isoscore"]
        assert got == pytest.approx(expected, rel=1e-9)  # was 0.0085 with the ids as a fifth feature
    capsys.readouterr()


def test_a_row_id_header_over_other_numbers_or_elsewhere_stays_a_feature(tmp_path):
    X = _gaussian(n=6, d=3)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame.insert(0, "id", [0, 1, 2, 3, 5, 4])  # not the row numbers in order
    frame.to_csv(tmp_path / "shuffled.csv", index=False)
    read, names = read_embeddings(tmp_path / "shuffled.csv")
    assert read.shape == (6, 4) and names is None
    np.testing.assert_array_equal(read[:, 0], [0, 1, 2, 3, 5, 4])
    # a column of the row numbers under a feature's name is a feature (only a row-id header says otherwise)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame.insert(0, "x", range(6))
    frame.to_csv(tmp_path / "x.csv", index=False)
    read, names = read_embeddings(tmp_path / "x.csv")
    assert read.shape == (6, 4) and names is None
    # only the first column: an "index" column after the features is one of them
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["index"] = range(6)
    frame.to_csv(tmp_path / "last.csv", index=False)
    frame.to_parquet(tmp_path / "last.parquet", index=False)
    for name in ("last.csv", "last.parquet"):
        read, names = read_embeddings(tmp_path / name)
        assert read.shape == (6, 4) and names is None
        np.testing.assert_array_equal(read[:, 3], range(6))
