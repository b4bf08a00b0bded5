"""Hostile-input trial of the readers (trial-readers): defects found by crafted files, each with its test.

- ``--set KEY=VALUE`` with an unknown KEY of 100,000 characters was echoed whole in a 100 KB error line (a value
  was already cut to 80 characters; the key is now cut the same way).
- A float8 tensor: a ``.pt`` file of one raised a ``TypeError`` traceback ("Got unsupported ScalarType
  Float8_e4m3fn") from ``read_embeddings`` and ``isotropy measure``; a ``.safetensors`` file of one was refused as
  "module 'numpy' has no attribute 'float8_e4m3fn'". Both now name the tensor's type.

- A ``.npy`` whose header does not describe the file's size: numpy allocates the shape a header claims before
  reading (a 192-byte file claiming (10**12, 10**12) was refused as "Unable to allocate 6.95 EiB for an array with
  shape (2003764205206896640,)", a size wrapped around 2**64, for a file merely cut short), and it ignores bytes
  after the array (``cat a.npy b.npy > c.npy`` read as a.npy's rows alone, silently: the embeddings reader, the
  labels reader and the shard reader alike).
"""

from __future__ import annotations

import io
import struct

import numpy as np
import pytest

from isotropy.io.embeddings import read_embeddings
from isotropy.io.labels import read_labels
from isotropy.io.shards import read_shards


def _npy(X) -> bytes:
    buf = io.BytesIO()
    np.save(buf, X)
    return buf.getvalue()


def _npy_header(descr: str, shape: tuple) -> bytes:
    """A version 1.0 header as np.save writes it, for any shape (the data is up to the caller)."""
    text = repr({"descr": descr, "fortran_order": False, "shape": shape}).encode()
    text += b" " * (64 - (10 + len(text) + 1) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text


# ---------------------------------------------------------------- .npy: the header and the file's size
def test_two_arrays_written_one_after_the_other_are_refused_not_read_as_the_first(tmp_path):
    A, B = np.arange(6, dtype=np.float32).reshape(3, 2), np.arange(8, dtype=np.float32).reshape(4, 2)
    path = tmp_path / "c.npy"
    path.write_bytes(_npy(A) + _npy(B))
    # the reference: numpy reads the first array only, whatever follows it
    np.testing.assert_array_equal(np.load(path), A)
    declared, size = len(_npy(A)), len(_npy(A)) + len(_npy(B))
    with pytest.raises(ValueError) as info:
        read_embeddings(path)
    assert str(info.value) == (
        f"Cannot read embeddings from {str(path)!r}: its header declares shape (3, 2) of float32 ({declared:,} bytes "
        f"with the header) but the file holds {size:,} bytes (bytes after the array: two arrays written one after "
        f"the other?); expected a complete .npy array as np.save writes it.")
    with pytest.raises(ValueError, match=r"^Cannot read labels from .*bytes after the array"):
        read_labels(path)
    with pytest.raises(ValueError, match=r"^Cannot read embeddings from .*bytes after the array"):
        read_embeddings(path, mmap_mode="r")


def test_a_shard_with_bytes_after_its_array_is_refused(tmp_path):
    folder = tmp_path / "shards"
    folder.mkdir()
    A = np.arange(8, dtype=np.float32).reshape(4, 2)
    (folder / "part-0.npy").write_bytes(_npy(A))
    (folder / "part-1.npy").write_bytes(_npy(A) + _npy(A))
    with pytest.raises(ValueError, match=r"part-1\.npy'.*bytes after the array"):
        read_shards(folder).compute()
    (folder / "part-1.npy").write_bytes(_npy(A))  # the same shard alone reads
    np.testing.assert_array_equal(read_shards(folder).compute(), np.vstack([A, A]))


@pytest.mark.parametrize("shape", [(10**12, 10**12), (2**62, 2**62), (10**6, 10**5)])
def test_a_header_claiming_a_huge_shape_is_refused_by_its_size_not_an_allocation(tmp_path, shape):
    path = tmp_path / "x.npy"
    header = _npy_header("<f4", shape)
    path.write_bytes(header + b"\0" * 64)
    declared = len(header) + 4 * shape[0] * shape[1]  # Python ints: the exact size, no wrap-around
    expected = (f"its header declares shape {shape} of float32 ({declared:,} bytes with the header) but the file "
                f"holds {len(header) + 64:,} bytes (cut short or damaged)")
    with pytest.raises(ValueError) as info:
        read_embeddings(path)
    assert expected in str(info.value) and "allocate" not in str(info.value)
    with pytest.raises(ValueError) as info:
        read_labels(path)
    assert expected in str(info.value)


def test_a_negative_dimension_is_named(tmp_path):
    path = tmp_path / "x.npy"
    path.write_bytes(_npy_header("<f4", (-1, 4)) + b"\0" * 16)
    with pytest.raises(ValueError, match=r"declares shape \(-1, 4\), with a negative"):
        read_embeddings(path)


def test_a_cut_npy_names_both_sizes(tmp_path):
    good = _npy(np.arange(8, dtype=np.float32).reshape(2, 4))
    path = tmp_path / "x.npy"
    path.write_bytes(good[:-5])
    with pytest.raises(ValueError, match=rf"\({len(good):,} bytes with the header\) but the file holds "
                                         rf"{len(good) - 5:,} bytes \(cut short or damaged\)"):
        read_embeddings(path)


@pytest.mark.parametrize("X", [np.arange(6, dtype=np.float64).reshape(3, 2), np.ones((2, 3), dtype=">f4"),
                               np.asfortranarray(np.arange(6.0).reshape(2, 3)), np.arange(4, dtype=np.int8).reshape(2, 2)])
def test_complete_npy_files_still_read(tmp_path, X):
    path = tmp_path / "x.npy"
    np.save(path, X)
    np.testing.assert_array_equal(read_embeddings(path)[0], X.astype(np.float64))


# ---------------------------------------------------------------- --set KEY=VALUE: an unknown key is quoted cut
_TOP_KEYS = "sources, batch_sizes, zetas, n_batches, shrinkage, shrinkage_sample, synthetic, embeddings, seeds"


@pytest.mark.parametrize("prefix, known", [("", _TOP_KEYS), ("synthetic.", "n_features, decay")])
def test_a_long_unknown_set_key_is_quoted_cut_to_80_characters(capsys, prefix, known):
    from _cli import exiting_cli

    key = prefix + "x" * 100_000
    code, _, err = exiting_cli(["run", "minibatch-stability", "--set", f"{key}=1", "--print-config"], capsys)
    shown = key[:77] + f"... ({len(key):,} characters)"  # was the whole 100,000-character key, in a 100 KB line
    assert code == 2
    assert err == f"Error: Unknown config key '{shown}' for minibatch-stability; expected one of {known}.\n"


# ---------------------------------------------------------------- tensors of a type numpy cannot hold
@pytest.mark.parametrize("dtype, name", [("float8_e4m3fn", "F8_E4M3"), ("float8_e5m2", "F8_E5M2")])
def test_a_float8_tensor_is_refused_naming_its_type(tmp_path, dtype, name):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file

    X = torch.ones(2, 2).to(getattr(torch, dtype))
    path = tmp_path / "x.safetensors"
    save_file({"X": X}, str(path))
    # was "not a readable .safetensors file (module 'numpy' has no attribute 'float8_e4m3fn')"
    with pytest.raises(ValueError) as info:
        read_embeddings(path)
    assert str(info.value) == (
        f"Cannot read embeddings from {str(path)!r}: its tensor 'X' has dtype {name}, which numpy cannot hold; "
        f"expected a .safetensors file of float (F16, BF16, F32, F64) or integer tensors; convert the tensor "
        f"(tensor.float()) before saving it.")
    pt = tmp_path / "x.pt"
    for saved in (X, {"X": X}):
        torch.save(saved, pt)
        # was a TypeError traceback ("Got unsupported ScalarType Float8_e4m3fn") from read_embeddings and measure
        with pytest.raises(ValueError) as info:
            read_embeddings(pt)
        assert str(info.value) == (
            f"Cannot read embeddings from {str(pt)!r}: its tensor has dtype {dtype}, which numpy cannot hold; "
            f"expected a tensor of floats (float16, bfloat16, float32, float64) or integers; convert it "
            f"(tensor.float()) before saving it.")


def test_a_float_tensor_beside_a_float8_one_still_reads(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file

    Y = np.arange(6, dtype=np.float32).reshape(3, 2) / 4
    path = tmp_path / "x.safetensors"
    save_file({"X": torch.ones(2, 2).to(torch.float8_e4m3fn), "Y": torch.from_numpy(Y)}, str(path))
    np.testing.assert_array_equal(read_embeddings(path, key="Y")[0], Y)
    with pytest.raises(ValueError, match="its tensor 'X' has dtype F8_E4M3"):
        read_embeddings(path, key="X")


def test_a_long_set_key_with_an_invalid_value_is_quoted_cut(capsys):
    from _cli import exiting_cli

    key = "x" * 1000  # found by test_fuzz_readers_more: the key of a value YAML refuses was echoed whole
    code, _, err = exiting_cli(["run", "minibatch-stability", "--set", f"{key}={{0", "--print-config"], capsys)
    assert code == 2
    assert err == (f"Error: --set {key[:77]}... (1,000 characters): '{{0' is not a valid YAML value (while parsing a "
                   f"flow mapping, expected ',' or '}}', but got '<stream end>' at line 1, column 3).\n")


@pytest.mark.parametrize(("name", "encoding", "said"), [
    ("u16.csv", "utf-16", "UTF-16 text (it starts with a UTF-16 byte-order mark)"),
    ("u16le.tsv", "utf-16-le", "UTF-16-LE text (every other byte is NUL"),
    ("u32.csv", "utf-32", "UTF-32 text (it starts with a UTF-32 byte-order mark)"),
    ("u16.vec", "utf-16", "UTF-16 text (it starts with a UTF-16 byte-order mark)"),
    ("u32be.txt", "utf-32-be", "UTF-32-BE text (its bytes decode as UTF-32 text"),
])
def test_a_utf16_or_utf32_text_file_is_refused_naming_its_encoding(tmp_path, name, encoding, said):
    """A spreadsheet's "Unicode text" export (UTF-16 with a byte-order mark) was refused as "line 3 has 1 fields, the
    header has 2" (a reader trial); UTF-16 and UTF-32 tables and vector files are now said to be so, with how to
    convert them, and the same rows in UTF-8 read as the numbers written."""
    rows = [[1.5, -2.0, 3.25], [4.0, 5.5, -6.0]]
    if name.endswith((".csv", ".tsv")):
        sep = "," if name.endswith(".csv") else "\t"
        text = sep.join("abc") + "\n" + "".join(sep.join(map(str, row)) + "\n" for row in rows)
    else:
        text = "".join(f"w{i} " + " ".join(map(str, row)) + "\n" for i, row in enumerate(rows))
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    with pytest.raises(ValueError) as caught:
        read_embeddings(path)
    message = str(caught.value)
    assert said in message and "read as UTF-8" in message and "iconv -f" in message and "\n" not in message
    if name.endswith((".csv", ".tsv")):  # the pandas advice, run as given, writes a file read as the rows written
        import pandas

        advice = message[message.index("pandas.read_csv("):].removesuffix(".")
        new_path = tmp_path / f"converted{path.suffix}"
        eval(advice, {"pandas": pandas, "path": path, "new_path": new_path})  # the message's own code
        np.testing.assert_array_equal(read_embeddings(new_path)[0], np.array(rows))
    path.write_bytes(text.encode("utf-8"))
    np.testing.assert_array_equal(read_embeddings(path)[0], np.array(rows))
