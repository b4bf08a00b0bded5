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


@pytest.mark.parametrize(("shape", "chunks", "what"), [((20_000, 1_000), (20_000, 1_000), "its chunk 'c/0/0'"),
                                                       ((20_000, 1_000), (250, 1_000), "its 80 chunks")])
def test_a_zarr_chunk_expanding_like_a_bomb_is_refused_before_it_is_decoded(tmp_path, shape, chunks, what):
    zarr = pytest.importorskip("zarr")
    pytest.importorskip("dask")
    from isotropy.io.shards import read_shards

    path = tmp_path / "x.zarr"  # 80 MB of float32 ones, zstd: a few KB on disk (the trial's 62 KB read as 1.6 GB)
    array = zarr.create_array(str(path), shape=shape, chunks=chunks, dtype="f4", fill_value=0.0)
    array[:] = 1.0
    stored = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    assert stored < 200_000
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as error:  # IsotropyValueError
            read_shards(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(error.value)
    assert peak < 20 * 2**20, peak
    assert message.startswith(f"Cannot read embeddings from {str(path)!r}: {what} expands from "), message
    assert "to 80000000 bytes" in message and "expected a Zarr array whose chunks expand at most 100x" in message
    assert "\n" not in message and len(message) < 400


def test_a_compressible_zarr_array_under_the_floor_still_reads(tmp_path):
    zarr = pytest.importorskip("zarr")
    pytest.importorskip("dask")
    from isotropy.io.shards import read_shards

    array = zarr.create_array(str(tmp_path / "x.zarr"), shape=(1_000, 50), chunks=(100, 50), dtype="f4")
    array[:] = 1.0  # 200 KB of ones: compresses far past 100x, but below 64 MiB any expansion is allowed
    assert read_shards(tmp_path / "x.zarr").shape == (1_000, 50)


@pytest.mark.parametrize("suffix", [".npz", ".safetensors"])
def test_a_container_of_many_arrays_lists_a_few_names(tmp_path, suffix):
    arrays = {f"member_{i:05d}": np.zeros((1, 1), dtype=np.float32) for i in range(3_000)}
    path = tmp_path / f"many{suffix}"
    if suffix == ".npz":
        np.savez(path, **arrays)
    else:
        pytest.importorskip("safetensors.numpy").save_file(arrays, str(path))
    message = _refusal(path)  # the trial's 20,000 members: one line of 189 KB
    assert "holds several arrays ['member_00000', 'member_00001', 'member_00002', 'member_00003', 'member_00004', " \
           "… and 2995 more]; expected --key (key=) naming one of them" in message, message
    message = _refusal(path, key="x" * 1_000)
    assert f"has no array '{'x' * 40}…'; expected one of ['member_00000', " in message and "2995 more" in message
    assert len(message) < 400


def test_bfloat16_safetensors_read_as_float32_exactly_as_pt(tmp_path):
    torch = pytest.importorskip("torch")
    save_file = pytest.importorskip("safetensors.torch").save_file
    rng = np.random.default_rng(0)
    X = torch.from_numpy(rng.normal(size=(50, 8)).astype(np.float32)).to(torch.bfloat16)
    X[0, :4] = torch.tensor([0.0, -0.0, 1e-40, -3.0e38])  # zeros, a subnormal, a large negative
    save_file({"emb": X, "other": torch.ones(3, 2, dtype=torch.bfloat16)}, str(tmp_path / "x.safetensors"))
    torch.save({"emb": X, "other": torch.ones(3, 2, dtype=torch.bfloat16)}, tmp_path / "x.pt")
    read, _ = read_embeddings(tmp_path / "x.safetensors", key="emb")  # refused: "data type 'bfloat16' not understood"
    assert read.dtype == np.float32 and read.shape == (50, 8)
    np.testing.assert_array_equal(read, X.float().numpy())
    assert np.signbit(read[0, 1]) and read[0, 2] == X[0, 2].float().item() != 0
    np.testing.assert_array_equal(read, read_embeddings(tmp_path / "x.pt", key="emb")[0])
    message = _refusal(tmp_path / "x.safetensors")
    assert "holds several arrays ['emb', 'other']" in message, message
    save_file({"only": X[:3]}, str(tmp_path / "one.safetensors"))
    np.testing.assert_array_equal(read_embeddings(tmp_path / "one.safetensors")[0], X[:3].float().numpy())


def test_a_csv_line_far_longer_than_its_columns_allow_is_refused_before_pandas_reads_it(tmp_path, monkeypatch):
    pd = pytest.importorskip("pandas")
    path = tmp_path / "long.csv"
    with open(path, "w") as handle:  # the trial's 1 GB line: 120 s, 7.45 GB, a 1 GB error line
        handle.write("a,b\n1,2\n" + "4" * 40_000_000 + ",1\n3,4\n")

    def read_csv(*args, **kwargs):
        raise AssertionError("pandas read the file")

    monkeypatch.setattr(pd, "read_csv", read_csv)
    message = _refusal(path)
    assert "line 3 is longer than 1,049,088 bytes" in message and "2 columns" in message, message
    assert "each field at most 256 bytes besides a row name of at most 1 MiB" in message, message


def test_a_cell_quoted_in_an_error_is_cut_and_long_row_names_still_read(tmp_path):
    pytest.importorskip("pandas")
    path = tmp_path / "x.csv"
    path.write_text("a,b\n1,2\n3," + "4x" * 100_000 + "\n")  # 200 KB: within the bound, not a number
    message = _refusal(path)
    assert f"column 'b' is not numeric ('{'4x' * 20}…' on line 3)" in message, message
    path.write_text("".join(f"{'w' * 100_000}{i},{i},{i + 1}\n" for i in range(3)))  # row names of 100 KB
    X, names = read_embeddings(path)
    assert X.shape == (3, 2) and len(names[0]) == 100_001


def test_a_row_name_quoted_by_measure_is_cut():
    from isotropy.measure.report import InputError, _check_finite

    X = np.array([[1.0, 2.0], [np.nan, 1.0]])
    with pytest.raises(InputError, match=r"\(row name '1\.51\.5") as error:
        _check_finite(X, "x.csv", ["a", "1.5" * 10**6], np.arange(2), 2)
    assert len(error.value.message) < 300 and "…'" in error.value.message
