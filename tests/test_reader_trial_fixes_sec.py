"""Fixes from a security trial of the embeddings readers: small files that read as huge arrays, lines and error
messages without bound, and a float type read by one reader and refused by another."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from isotropy.io.embeddings import read_embeddings


def _refusal(path, **kwargs) -> str:
    with pytest.raises(ValueError) as error:
        read_embeddings(path, **kwargs)
    message = str(error.value)
    assert message.startswith(f"Cannot read embeddings from {str(path)!r}: "), message
    assert "\n" not in message and len(message) < 600, message
    return message


@pytest.mark.parametrize("make", ["expand", "as_strided", "half", "in_dict"])
def test_a_stride_0_tensor_is_refused_before_it_is_copied(tmp_path, make):
    torch = pytest.importorskip("torch")
    n, d = 200_000, 1_000  # 800 MB of float32 (the trial's 1.6 KB file held 10**6 x 1500: 6 GB)
    if make == "expand":
        obj = torch.zeros(1).expand(n, d)
    elif make == "as_strided":
        obj = torch.arange(float(d)).as_strided((n, d), (0, 1))  # one stored row, repeated
    elif make == "half":
        obj = torch.zeros(1, dtype=torch.float16).expand(n, d)  # tensor.float() allocated 400 GB in the trial
    else:
        obj = {"vectors": torch.zeros(1).expand(n, d)}
    path = tmp_path / "x.pt"
    torch.save(obj, path)
    assert path.stat().st_size < 10_000
    tracemalloc.start()
    try:
        message = _refusal(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20, peak
    assert f"shape ({n}, {d})" in message and "expanded or overlapping view" in message, message
    assert "expected a tensor saved with its own data" in message, message


def test_slices_of_a_saved_tensor_still_read(tmp_path):
    torch = pytest.importorskip("torch")
    base = torch.arange(60.0).reshape(6, 10)
    path = tmp_path / "x.pt"
    torch.save({"a": base[1:4, 2:5], "b": base.T}, path)  # views sharing one larger storage
    np.testing.assert_array_equal(read_embeddings(path, key="a")[0], base[1:4, 2:5].numpy())
    np.testing.assert_array_equal(read_embeddings(path, key="b")[0], base.T.numpy())
