"""The digests that name a model (the ``--json`` record's ``inputs.model``, a GGUF file's converted folder): computed
once per version of a file on disk and read back, over the files the loaders read.

A review found every ``measure --model --json`` run hashing every file under the model folder again: 0.12 s for the
packaged MiniLM, about 20 s for a 14 GB model, and all of a Trainer output folder's ``checkpoint-*/`` weights and
optimizer states beside the model saved at its top. The reference for every digest is ``hashlib`` on the bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from isotropy.models._cache import cached_sha256


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _counting(monkeypatch):
    from isotropy._utils import digest

    read, original = [], digest.file_sha256

    def counted(path):
        read.append(os.path.basename(path))
        return original(path)

    monkeypatch.setattr(digest, "file_sha256", counted)
    return read


def test_a_digest_is_computed_once_per_version_of_the_file(tmp_path, monkeypatch):
    read = _counting(monkeypatch)
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(os.urandom(3000))
    cache = tmp_path / "cache"
    assert [cached_sha256(weights, cache_dir=cache) for _ in range(3)] == [_sha(weights)] * 3
    assert read == ["model.safetensors"]  # hashed once, read back twice
    weights.write_bytes(os.urandom(3000))  # the same size, written again: another version
    os.utime(weights, ns=(1, 10**9))
    assert cached_sha256(weights, cache_dir=cache) == _sha(weights) and len(read) == 2
    (tmp_path / "blocked").write_text("a file where the cache folder should be")
    assert cached_sha256(weights, cache_dir=tmp_path / "blocked") == _sha(weights)  # unwritable: hashed, no error


@pytest.mark.skipif(sys.platform == "win32", reason="st_ctime is the creation time on Windows")
def test_a_file_rewritten_with_its_modification_time_set_back_is_hashed_again(tmp_path, monkeypatch):
    """Rewritten in place to the same size, its modification time set back to the one the digest was kept under (a
    copy that keeps times, touch -d): the old digest was read back for new bytes. The change time names it too."""
    import time

    read = _counting(monkeypatch)
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(os.urandom(3000))
    before = weights.stat()
    cache = tmp_path / "cache"
    assert cached_sha256(weights, cache_dir=cache) == _sha(weights)
    time.sleep(0.02)  # a change time of its own, on file systems of coarse clocks too
    with open(weights, "r+b") as handle:  # in place: the same inode and device
        handle.write(os.urandom(3000))
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = weights.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    assert cached_sha256(weights, cache_dir=cache) == _sha(weights) and len(read) == 2


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kept=st.one_of(st.binary(max_size=200), st.text(alphabet="0123456789abcdefABCDEF ", max_size=70).map(str.encode)))
def test_a_damaged_digest_file_is_never_believed(tmp_path, kept):
    """Fuzz of the digest files' reader: whatever bytes a digest file holds, the value is the file's own sha256 (a
    well-formed digest of other bytes is the one thing it cannot tell, as any cache keyed by size and time)."""
    import tempfile

    tmp_path = tmp_path.__class__(tempfile.mkdtemp(dir=tmp_path))  # each example its own folder
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"weights")
    cache = tmp_path / "cache"
    truth = cached_sha256(weights, cache_dir=cache)
    (entry,) = (cache / "digests").iterdir()
    if len(kept) == 64 and all(c in b"0123456789abcdef" for c in kept):
        kept = kept[:-1]  # not a well-formed digest
    entry.write_bytes(kept)
    assert cached_sha256(weights, cache_dir=cache) == truth == _sha(weights)


def test_the_record_names_the_files_the_loaders_read_and_hashes_them_once(tmp_path, monkeypatch):
    from isotropy.measure.from_model import model_identity

    folder = tmp_path / "run"
    folder.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json", "modules.json"):
        (folder / name).write_bytes(os.urandom(100) if name != "modules.json" else json.dumps(
            [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
             {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
             {"idx": 2, "name": "2", "path": "../outside", "type": "sentence_transformers.models.Normalize"}]).encode())
    for sub, name in (("1_Pooling", "config.json"), ("checkpoint-500", "model.safetensors"),
                      ("checkpoint-500", "optimizer.pt"), ("onnx", "model.onnx"), (".git", "HEAD")):
        (folder / sub).mkdir(exist_ok=True)
        (folder / sub / name).write_bytes(os.urandom(50))
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.bin").write_bytes(b"x")
    read = _counting(monkeypatch)
    record = model_identity(folder, cache_dir=tmp_path / "cache")
    expected = ["1_Pooling/config.json", "config.json", "model.safetensors", "modules.json", "tokenizer.json"]
    assert [entry["path"] for entry in record["files"]] == expected
    for entry in record["files"]:
        assert (entry["bytes"], entry["sha256"]) == ((folder / entry["path"]).stat().st_size, _sha(folder / entry["path"]))
    assert sorted(read) == sorted(p.rsplit("/", 1)[-1] for p in expected)
    assert model_identity(folder, cache_dir=tmp_path / "cache") == record and len(read) == len(expected)


def test_a_gguf_file_is_hashed_once_for_its_converted_folder(tmp_path, monkeypatch):
    pytest.importorskip("gguf")
    from _tiny_models import make_tiny_gemma_gguf

    from isotropy.models import convert_gguf

    path, _ = make_tiny_gemma_gguf(tmp_path / "tiny.gguf")
    read = _counting(monkeypatch)
    first = convert_gguf(path, cache_dir=tmp_path / "cache", show_progress=False)
    assert first.name == f"gguf-{_sha(path)}" and read == ["tiny.gguf"]
    assert convert_gguf(path, cache_dir=tmp_path / "cache", show_progress=False) == first and read == ["tiny.gguf"]
