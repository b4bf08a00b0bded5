"""Hostile-input review of the readers: text files of few, very wide rows.

- Word-vector text (GloVe, word2vec text): the lines were parsed 8,192 rows at a time, whatever their width, so a
  block held every field of up to 8,192 lines of up to 1 MiB each as Python strings, 20-30 times the bytes they take
  in the file: a 209 MB file of 200 lines of 349,000 two-digit numbers ran at a peak of 5.2 GB (the vectors it
  returns take 279 MB). A block now ends at :data:`isotropy.io.word_vectors._FIELDS_PER_BLOCK` fields too.
"""

from __future__ import annotations

import tracemalloc

import numpy as np

from isotropy.io import word_vectors
from isotropy.io.word_vectors import read_word_vectors


def _wide_vectors(path, n_words: int, dim: int) -> np.ndarray:
    """A GloVe text file of ``n_words`` lines of ``dim`` two-digit numbers (written as np.savetxt would)."""
    rng = np.random.default_rng(0)
    X = rng.integers(10, 100, size=(n_words, dim)).astype(np.float32)
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(f"w{i} " + " ".join(str(int(v)) for v in row) + "\n" for i, row in enumerate(X))
    return X


def test_wide_word_vector_rows_are_parsed_in_blocks_bounded_by_their_fields(tmp_path):
    """The peak memory of reading few, very wide rows stays within a few times the file, not 20-30 times."""
    path = tmp_path / "wide.txt"
    X = _wide_vectors(path, n_words=60, dim=40_000)  # 7.2 MB, 2.4 million fields: under 8,192 rows, one block before
    size = path.stat().st_size
    tracemalloc.start()
    try:
        words, read = read_word_vectors(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert words == [f"w{i}" for i in range(60)]
    np.testing.assert_array_equal(read, X)  # the same vectors, across the blocks
    # before: about 20 times the file (every field a Python string at once); now the strings of one block of
    # _FIELDS_PER_BLOCK fields, the vectors parsed (1.3 times the file here) and their concatenation
    assert peak < 8 * size, f"peak {peak / 2**20:.0f} MiB for a file of {size / 2**20:.1f} MiB"


def test_a_block_ends_at_its_fields_and_the_vectors_are_exact(tmp_path, monkeypatch):
    """Blocks cut by fields, at a line that fills one exactly and mid-way: the same words and vectors, in order."""
    monkeypatch.setattr(word_vectors, "_FIELDS_PER_BLOCK", 10)
    path = tmp_path / "v.vec"
    rng = np.random.default_rng(1)
    X = rng.normal(size=(7, 5)).astype(np.float32)
    lines = ["7 5"] + [f"w{i} " + " ".join(repr(float(v)) for v in row) for i, row in enumerate(X)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    words, read = read_word_vectors(path)
    assert words == [f"w{i}" for i in range(7)]
    np.testing.assert_array_equal(read, X)
    words, read = read_word_vectors(path, limit=3)
    np.testing.assert_array_equal(read, X[:3])
