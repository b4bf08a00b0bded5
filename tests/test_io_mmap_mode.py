"""read_embeddings(mmap_mode=...) never writes to the user's file: only None, "r" and "c" are taken.

numpy's "w+" truncated the .npy file to 0 bytes before reading it, and "r+" returned a writable view onto it.
"""

import numpy as np
import pytest

from isotropy._utils.validation import IsotropyValueError
from isotropy.io.embeddings import _load_npy, read_embeddings


@pytest.fixture
def npy(tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, np.arange(12, dtype=np.float64).reshape(4, 3))
    return path


@pytest.mark.parametrize("mode", ["w+", "r+", "readwrite", "write", "R", "", 1, ["r"]])
def test_writing_or_unknown_modes_are_refused_and_the_file_is_left_as_it_was(npy, mode):
    before = npy.read_bytes()
    with pytest.raises(IsotropyValueError) as info:
        read_embeddings(npy, mmap_mode=mode)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("The 'mmap_mode' parameter of read_embeddings must be one of {None, 'r', 'c'}")
    assert message.endswith(f"Got {mode!r} instead.")
    assert npy.read_bytes() == before
    np.testing.assert_array_equal(np.load(npy), np.arange(12.0).reshape(4, 3))


def test_refused_before_the_path_is_looked_at(tmp_path):
    # the mode is wrong whatever the file: a missing one is not named first
    with pytest.raises(IsotropyValueError, match="'mmap_mode' parameter of read_embeddings"):
        read_embeddings(tmp_path / "missing.npy", mmap_mode="w+")
    with pytest.raises(IsotropyValueError, match="'mmap_mode' parameter of read_embeddings"):
        read_embeddings("glove-6b-50d", mmap_mode="r+")


def test_the_private_loader_refuses_too(npy):
    before = npy.read_bytes()
    with pytest.raises(IsotropyValueError, match="'mmap_mode' parameter"):
        _load_npy(npy, "w+")
    assert npy.read_bytes() == before


@pytest.mark.parametrize("mode", [None, "r", "c"])
def test_read_only_modes_read_the_values_and_never_write(npy, mode):
    X, names = read_embeddings(npy, mmap_mode=mode)
    assert names is None
    np.testing.assert_array_equal(X, np.arange(12.0).reshape(4, 3))
    if mode == "r":
        assert not X.flags.writeable
    if mode == "c":  # copy-on-write: a write changes the array in memory, never the file
        X[0, 0] = 99.0
    np.testing.assert_array_equal(np.load(npy), np.arange(12.0).reshape(4, 3))
