"""Hostile-input review of the readers: multi-label files whose every item has a label of its own.

The NRC lexicon reader and ``load_table(..., multilabel=True)`` build a dense ``(n_items, n_labels)`` 0/1 matrix:
items that each name a label of their own make it n x n (a 480 KB lexicon of 20,000 words was a 400 MB matrix;
a 2 MB one, 10 GB). A matrix of more than 100 times the file's bytes, above 64 MiB (the cap on any file that
expands, :mod:`isotropy.io._archives`), is refused in one line before it is allocated.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from isotropy._utils.errors import IsotropyValueError
from isotropy.datasets.lexicon import load_nrc_emotion_lexicon
from isotropy.datasets.tables import load_table

N = 9000  # 9000 x 9000 int8: 81 MB, above 64 MiB, from a file of a few hundred KB


def test_a_lexicon_whose_every_word_has_a_label_of_its_own_is_refused(tmp_path):
    path = tmp_path / "lex.json"
    path.write_text(json.dumps({f"w{i}": [f"t{i}"] for i in range(N)}), encoding="utf-8")
    with pytest.raises(IsotropyValueError) as err:
        load_nrc_emotion_lexicon(path)
    size = path.stat().st_size
    assert str(err.value) == (f"{path}: its {N} items hold {N} distinct labels, a {N} x {N} 0/1 matrix of {N * N} "
                              f"bytes from a file of {size} bytes ({N * N // size}x; more than 100x above 64 MiB is "
                              f"refused); expected a few labels that many items share.")


def test_a_multilabel_table_whose_every_row_has_a_label_of_its_own_is_refused(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("text,tags\n" + "".join(f"x,t{i}\n" for i in range(N)), encoding="utf-8")
    with pytest.raises(IsotropyValueError, match=rf"^{path}: its {N} items hold {N} distinct labels, a {N} x {N} 0/1 "
                                                 rf"matrix of {N * N} bytes from a file of \d+ bytes"):
        load_table(path, label_column="tags", multilabel=True)


def test_shared_labels_still_read(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("text,tags\n" + "".join(f"x{i},\"a,b{i % 3}\"\n" for i in range(N)), encoding="utf-8")
    data = load_table(path, label_column="tags", multilabel=True)
    assert data.label_names == ["a", "b0", "b1", "b2"]
    assert data.labels.shape == (N, 4) and data.labels.sum() == 2 * N
    np.testing.assert_array_equal(data.labels[:3], [[1, 1, 0, 0], [1, 0, 1, 0], [1, 0, 0, 1]])
    lex = tmp_path / "lex.json"
    lex.write_text(json.dumps({"good": ["joy", "trust"], "bad": ["anger"], "none": []}), encoding="utf-8")
    lexicon = load_nrc_emotion_lexicon(lex)
    assert lexicon.text_a == ["good", "bad"] and lexicon.label_names == ["anger", "joy", "trust"]
    np.testing.assert_array_equal(lexicon.labels, [[0, 1, 1], [1, 0, 0]])
