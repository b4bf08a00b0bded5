"""Fixes from a new user's trial of ``isotropy measure``: the ``limit`` of the word-vector readers."""

from __future__ import annotations

import numpy as np
import pytest

from isotropy.io.word_vectors import packaged_glove, read_word_vectors


@pytest.fixture
def vectors(tmp_path):
    path = tmp_path / "v.txt"
    path.write_text("cat 0.5 1.5\ndog 2.0 -1.0\nmat 3.0 0.25\n")
    return path


def test_limit_reads_the_first_words(vectors):
    words, X = read_word_vectors(vectors, limit=2)
    assert words == ["cat", "dog"]
    np.testing.assert_array_equal(X, np.array([[0.5, 1.5], [2.0, -1.0]], dtype=np.float32))
    assert read_word_vectors(vectors, limit=np.int64(1))[0] == ["cat"]
    assert read_word_vectors(vectors, limit=None)[0] == ["cat", "dog", "mat"]


@pytest.mark.parametrize(("limit", "shown", "error"), [(-1, "-1", ValueError), (0, "0", ValueError),
                                                       (1.5, "1.5", ValueError), (True, "True", ValueError),
                                                       ("2", "'2'", TypeError)])
def test_a_limit_that_is_not_a_positive_int_is_refused(vectors, limit, shown, error):
    with pytest.raises(error) as caught:
        read_word_vectors(vectors, limit=limit)
    assert str(caught.value) == (f"The 'limit' parameter of read_word_vectors must be an int in the range [1, inf) "
                                 f"or None. Got {shown} instead.")
    with pytest.raises(error) as caught:  # refused before the package is looked for
        packaged_glove(limit=limit)
    assert str(caught.value) == (f"The 'limit' parameter of packaged_glove must be an int in the range [1, inf) "
                                 f"or None. Got {shown} instead.")
