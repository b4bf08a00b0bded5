"""Fixes from a new user's trial of ``isotropy measure``: labels files."""

from __future__ import annotations

import numpy as np
import pytest

from isotropy.cli import main
from isotropy.io.labels import read_labels


def test_latin1_labels_say_how_to_read_them(tmp_path, capsys):
    X = np.random.default_rng(0).normal(size=(4, 3))
    np.save(tmp_path / "x.npy", X)
    labels = tmp_path / "lab_latin.txt"
    labels.write_bytes("négatif\npositif\nnégatif\npositif\n".encode("latin-1"))
    with pytest.raises(SystemExit) as exit_:
        main(["measure", str(tmp_path / "x.npy"), "--labels", str(labels), "--metrics", "silhouette_score"])
    assert exit_.value.code == 2
    converted = tmp_path / "lab_latin-utf8.txt"
    assert capsys.readouterr().err == (
        f"Error: Cannot read labels from {str(labels)!r}: it is not UTF-8 text (convert it, e.g. iconv -f latin-1 "
        f"-t utf-8 {labels} > {converted}, or give its encoding: encoding='latin-1' in Python, --encoding with "
        f"--model); expected a text file with one label per line.\n")
    assert read_labels(labels, n_rows=4, encoding="latin-1").tolist() == ["négatif", "positif", "négatif", "positif"]
