"""Fixes from a new user's trial: the ``encoding`` and ``binary`` options of ``read_word_vectors``.

``encoding="utf-9"`` raised the codec's bare ``LookupError: unknown encoding: utf-9`` (``encoding=5`` open()'s
TypeError), where ``read_labels`` and ``read_texts`` name the argument; ``binary="no"``, a truthy string, read a
text file as binary and said it "is not a word2vec binary file".
"""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from isotropy.io.word_vectors import read_word_vectors


@pytest.fixture
def vectors(tmp_path):
    path = tmp_path / "v.txt"
    path.write_bytes("caf\xe9 0.5 1.5\ndog 2.0 -1.0\n".encode("latin-1"))
    return path


def test_a_known_encoding_reads_the_words(vectors):
    words, X = read_word_vectors(vectors, encoding="latin-1")
    assert words == ["café", "dog"]
    np.testing.assert_array_equal(X, np.array([[0.5, 1.5], [2.0, -1.0]], dtype=np.float32))


@pytest.mark.parametrize("encoding", ["utf-9", 5, None, "rot13"])
@pytest.mark.parametrize("compressed", [False, True])
def test_an_unknown_encoding_is_refused_in_one_line(vectors, encoding, compressed, tmp_path):
    path = vectors
    if compressed:
        path = tmp_path / "v.vec.gz"
        path.write_bytes(gzip.compress(vectors.read_bytes()))
    with pytest.raises(ValueError) as caught:
        read_word_vectors(path, encoding=encoding)
    assert str(caught.value) == (f"The 'encoding' parameter of read_word_vectors must be a text encoding such as "
                                 f"'utf-8', 'latin-1' or 'cp1252'. Got {encoding!r} instead.")


@pytest.mark.parametrize("binary", ["no", 0, 1.0])
def test_binary_that_is_not_a_bool_or_none_is_refused(vectors, binary):
    with pytest.raises(TypeError) as caught:
        read_word_vectors(vectors, binary=binary)
    assert str(caught.value) == (f"The 'binary' parameter of read_word_vectors must be a bool or None. "
                                 f"Got {type(binary).__name__} instead.")


def test_binary_false_and_none_read_a_text_file(vectors):
    assert read_word_vectors(vectors, binary=False, encoding="latin-1")[0] == ["café", "dog"]
    assert read_word_vectors(vectors, binary=np.False_, encoding="latin-1")[0] == ["café", "dog"]
