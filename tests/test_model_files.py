"""Model weight files that are cut short, random or pickled: one-line refusals, exit 2 (issue 19).

Before: a truncated or random ``model.safetensors`` was a ``SafetensorError`` traceback, a pickled
``pytorch_model.bin`` an ``UnpicklingError`` traceback (or, with weights_only=False, a payload run),
a GGUF file cut short a ``struct.error``, one claiming 2^62 tensors asked for that many, and a
failed GGUF conversion left its lock file in the cache.
"""

from __future__ import annotations

import os
import struct

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from isotropy.cli import cli
from isotropy.models._weights import check_gguf_header, check_safetensors

torch = pytest.importorskip("torch")

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    from _tiny_models import make_tiny_bert

    return make_tiny_bert(tmp_path_factory.mktemp("bert") / "model")


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    from _tiny_models import make_tiny_gemma_gguf

    path, _ = make_tiny_gemma_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf")
    return path


def _copy_model(src, dst):
    dst.mkdir()
    for file in src.iterdir():
        (dst / file.name).write_bytes(file.read_bytes())
    return dst


def _measure_model(directory, tmp_path):
    texts = tmp_path / "texts.txt"
    texts.write_text("the cat sat\na dog ran\nthe mat\n")
    return CliRunner().invoke(cli, ["measure", "--model", str(directory), "--texts", str(texts)])


def _one_line(result):
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert "Traceback" not in result.output
    return lines[0]


@pytest.mark.parametrize("damage", ["truncated", "random", "header too long", "empty"])
def test_damaged_safetensors_is_one_line(bert_dir, tmp_path, damage):
    model = _copy_model(bert_dir, tmp_path / "m")
    weights = model / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes({"truncated": data[: len(data) // 2], "random": os.urandom(4096),
                         "header too long": struct.pack("<Q", 2**40) + data[8:], "empty": b""}[damage])
    line = _one_line(_measure_model(model, tmp_path))
    assert "model.safetensors" in line


def test_pickled_weights_are_refused_and_never_unpickled(bert_dir, tmp_path):
    model = _copy_model(bert_dir, tmp_path / "m")
    from safetensors.torch import load_file

    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    torch.save({"weights": load_file(str(bert_dir / "model.safetensors")), "x": Payload()},
               model / "pytorch_model.bin")
    (model / "model.safetensors").unlink()
    line = _one_line(_measure_model(model, tmp_path))
    assert "pytorch_model.bin" in line and "pickle" in line
    assert not marker.exists()


def test_a_model_directory_without_weights_is_one_line_naming_it(bert_dir, tmp_path):
    # transformers said "Error no file named model.safetensors, ..." (shown as "Error: Error ...") after the tokenizer
    # had loaded; now the directory is named before anything loads
    model = _copy_model(bert_dir, tmp_path / "m")
    (model / "model.safetensors").unlink()
    line = _one_line(_measure_model(model, tmp_path))
    assert line == (f"Error: The model directory {str(model)!r} holds no weights (no .safetensors file); expected the "
                    f"weights as model.safetensors beside config.json (model.save_pretrained(dir)).")


def test_a_model_directory_without_tokenizer_files_is_one_line_naming_it(bert_dir, tmp_path):
    """Without its tokenizer files, transformers built a tokenizer of the special tokens alone: every word became the
    unknown token, and the command printed a table of those vectors with exit 0 (a user trial)."""
    model = _copy_model(bert_dir, tmp_path / "m")
    for file in model.iterdir():
        if file.name not in ("config.json", "model.safetensors"):
            file.unlink()
    line = _one_line(_measure_model(model, tmp_path))
    assert line.startswith(f"Error: The tokenizer of {str(model)!r}") and "holds only its" in line
    assert "special tokens: its tokenizer files" in line


def test_a_tokenizer_json_nested_without_end_is_one_line(bert_dir, tmp_path):
    model = _copy_model(bert_dir, tmp_path / "m")
    (model / "tokenizer.json").write_text('{"a":' * 100_000)  # transformers' json.load: a RecursionError traceback
    line = _one_line(_measure_model(model, tmp_path))
    assert line.startswith(f"Error: Could not load the model {str(model)!r}") and "RecursionError" in line


@pytest.mark.parametrize("damage", ["cut short", "2^62 tensors", "2^62 metadata", "long string", "not gguf"])
def test_damaged_gguf_is_one_line(tiny_gguf, tmp_path, damage):
    data = tiny_gguf.read_bytes()
    bad = tmp_path / "bad.gguf"
    if damage == "cut short":
        bad.write_bytes(data[:200])
    elif damage == "2^62 tensors":
        bad.write_bytes(data[:8] + struct.pack("<Q", 2**62) + data[16:])
    elif damage == "2^62 metadata":
        bad.write_bytes(data[:16] + struct.pack("<Q", 2**62) + data[24:])
    elif damage == "long string":
        bad.write_bytes(data[:24] + struct.pack("<Q", 2**62) + data[32:])
    else:
        bad.write_bytes(b"NOPE" + data[4:])
    cache = tmp_path / "cache"
    texts = tmp_path / "texts.txt"
    texts.write_text("the cat sat\na dog ran\n")
    result = CliRunner().invoke(cli, ["measure", "--model", str(bad), "--texts", str(texts)],
                                env={"ISOTROPY_CACHE": str(cache)})
    line = _one_line(result)
    assert "bad.gguf" in line
    leftovers = [p for p in cache.rglob("*")] if cache.exists() else []
    assert not [p for p in leftovers if p.name.endswith(".lock")], leftovers


def test_a_failed_conversion_leaves_nothing_but_its_lock_file(tiny_gguf, tmp_path, monkeypatch):
    # the lock file stays (removed while held, two converters could get in after a failure: test_gguf.py)
    from isotropy.models import convert_gguf, gguf

    def fails(path, out, **kwargs):
        raise ValueError("simulated failure")

    monkeypatch.setattr(gguf, "_convert", fails)
    with pytest.raises(ValueError, match="simulated"):
        convert_gguf(tiny_gguf, cache_dir=tmp_path, show_progress=False)
    assert [p.name for p in (tmp_path / "models").iterdir() if not p.name.endswith(".lock")] == []


def test_the_intact_files_pass_the_checks(bert_dir, tiny_gguf):
    check_safetensors(bert_dir / "model.safetensors")
    check_gguf_header(tiny_gguf)


# ---------------------------------------------------------------- fuzz: safetensors and GGUF headers
def _refused_or_fine(check, path):
    try:
        check(path)
    except ValueError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 600
        return "refused"
    return "ok"


@SETTINGS
@given(cut=st.integers(0, 4000), flips=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), max_size=4))
def test_fuzz_safetensors_headers(bert_dir, tmp_path_factory, cut, flips):
    data = bytearray((bert_dir / "model.safetensors").read_bytes())
    for where, value in flips:
        data[where % len(data)] = value
    path = tmp_path_factory.mktemp("st") / "model.safetensors"
    path.write_bytes(bytes(data[: len(data) - cut]))
    verdict = _refused_or_fine(check_safetensors, path)
    if verdict == "ok":  # what the check passes, safetensors itself reads
        from safetensors.numpy import load_file

        try:
            load_file(str(path))
        except Exception as exc:  # noqa: BLE001
            # flipped bytes inside a JSON string or the data are fine for the structure
            assert "bfloat16" in str(exc) or "BF16" in str(exc) or "dtype" in str(exc), exc


@SETTINGS
@given(cut=st.integers(0, 100_000), flips=st.lists(st.tuples(st.integers(0, 2000), st.integers(0, 255)), max_size=4))
def test_fuzz_gguf_headers(tiny_gguf, tmp_path_factory, cut, flips):
    data = bytearray(tiny_gguf.read_bytes())
    for where, value in flips:
        data[where % len(data)] = value
    path = tmp_path_factory.mktemp("gguf") / "x.gguf"
    path.write_bytes(bytes(data[: max(0, len(data) - cut)]))
    _refused_or_fine(check_gguf_header, path)


# ---------------------------------------------------------------- hostile headers (audit)
_DEEP = "[" * 100_000 + "]" * 100_000  # beyond json's recursion limit: was a RecursionError traceback


def test_a_deeply_nested_config_json_is_one_line(bert_dir, tmp_path):
    from isotropy.models._safety import refuse_remote_code

    refuse_remote_code(bert_dir)  # the intact directory passes
    model = _copy_model(bert_dir, tmp_path / "m")
    (model / "config.json").write_text(_DEEP)
    line = _one_line(_measure_model(model, tmp_path))
    assert line == (f"Error: The model file {str(model / 'config.json')!r} is not valid JSON (JSONDecodeError): "
                    f"expected a Hugging Face configuration file.")


def test_a_deeply_nested_safetensors_header_is_one_line(bert_dir, tmp_path):
    model = _copy_model(bert_dir, tmp_path / "m")
    header = _DEEP.encode()
    (model / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    line = _one_line(_measure_model(model, tmp_path))
    assert line == (f"Error: The weights file {str(model / 'model.safetensors')!r} has a header that is not JSON "
                    f"(not a safetensors file); expected a complete .safetensors file (as written by save_pretrained).")


def _safetensors(path, header: dict, data: bytes = b"\0" * 16):
    import json

    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    return path


@pytest.mark.parametrize("shape, reason", [
    ([10**3999] * 50, "describes tensor 'x' wrongly"),  # 4000-digit dimensions: past numpy's 2^63
    ([2**62] * 800, "is cut short or corrupt: tensor 'x' has a shape of more elements than the 16 bytes of data"),
    ([17, 1], "is cut short or corrupt: tensor 'x' has a shape of more elements than the 16 bytes of data"),
    ([0, 2**63], "describes tensor 'x' wrongly"),
])
def test_a_huge_safetensors_shape_is_refused_at_once(tmp_path, shape, reason):
    # the full product of 800 4000-digit numbers took 33 s: the bound stops it (performance is not asserted here)
    path = _safetensors(tmp_path / "model.safetensors", {"x": {"dtype": "F32", "shape": shape, "data_offsets": [0, 16]}})
    with pytest.raises(ValueError) as info:
        check_safetensors(path)
    assert str(info.value) == (f"The weights file {str(path)!r} {reason}; expected a complete .safetensors file "
                               f"(as written by save_pretrained).")


def test_safetensors_shapes_that_fit_their_bytes_pass(tmp_path):
    from safetensors.numpy import load_file

    path = _safetensors(tmp_path / "model.safetensors", {
        "x": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
        "empty": {"dtype": "F32", "shape": [0, 2**40], "data_offsets": [16, 16]},  # a 0: any dimension fits
        "scalar": {"dtype": "U8", "shape": [], "data_offsets": [16, 17]}}, b"\0" * 17)
    check_safetensors(path)
    tensors = load_file(str(path))
    assert tensors["x"].shape == (2, 2) and tensors["empty"].shape == (0, 2**40) and tensors["scalar"].shape == ()


def _gguf(path, entries: bytes, n_kv: int):
    """A GGUF v3 file of no tensors and these metadata entries."""
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, n_kv) + entries)
    return path


def _key(name: str) -> bytes:
    return struct.pack("<Q", len(name)) + name.encode()


_ARCH = _key("general.architecture") + struct.pack("<I", 8) + _key("llama")


def _u8_array(name: str, count: int) -> bytes:
    return _key(name) + struct.pack("<IIQ", 9, 0, count) + b"\0" * count


def _measure_gguf(path, tmp_path):
    texts = tmp_path / "texts.txt"
    texts.write_text("the cat sat\na dog ran\n")
    cache = tmp_path / "cache"
    result = CliRunner().invoke(cli, ["measure", "--model", str(path), "--texts", str(texts)],
                                env={"ISOTROPY_CACHE": str(cache)})
    return _one_line(result), cache


def test_a_gguf_metadata_array_of_millions_is_one_line_at_once(tmp_path):
    from isotropy.models._weights import _GGUF_MAX_ARRAY

    # announced, not written: 5 million empty strings made a 40 MB file that transformers' reader
    # took past 60 s and 2.6 GB to parse; the count alone is refused
    bad = _gguf(tmp_path / "bad.gguf", _ARCH + _key("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 5_000_000)
                + struct.pack("<Q", 0) * 64, 2)
    line, cache = _measure_gguf(bad, tmp_path)
    assert line == (f"Error: The GGUF file {str(bad)!r} has a metadata array of 5000000 elements; expected at most "
                    f"1048576 (the largest tokenizer vocabularies hold about 262,144).")
    assert _GGUF_MAX_ARRAY == 2**20 and not cache.exists()  # refused before any hashing, locking or temp folder
    check_gguf_header(_gguf(tmp_path / "fits.gguf", _ARCH + _u8_array("x", 2**20), 2))  # the cap itself passes


def test_gguf_metadata_values_are_capped_in_all(tmp_path):
    # 3 entries and 2^20 + 2^20 - 3 array elements are the 2^21 values allowed; one element more is refused
    fits = _gguf(tmp_path / "fits.gguf", _u8_array("a", 2**20) + _u8_array("b", 2**20 - 3) + _ARCH, 3)
    check_gguf_header(fits)
    bad = _gguf(tmp_path / "bad.gguf", _u8_array("a", 2**20) + _u8_array("b", 2**20 - 2) + _ARCH, 3)
    with pytest.raises(ValueError) as info:
        check_gguf_header(bad)
    assert str(info.value) == (f"The GGUF file {str(bad)!r} holds more than 2097152 metadata values (entries and "
                               f"array elements); expected at most 2097152 (real models hold under a million).")


def test_a_gguf_metadata_array_of_arrays_is_one_line(tmp_path):
    nested = _key("x") + struct.pack("<IIQ", 9, 9, 1) + struct.pack("<IQ", 4, 1) + struct.pack("<I", 7)
    bad = _gguf(tmp_path / "bad.gguf", _ARCH + nested, 2)
    line, _ = _measure_gguf(bad, tmp_path)
    assert line == (f"Error: The GGUF file {str(bad)!r} has a metadata array of element type 9; expected arrays of "
                    f"numbers or strings (GGUF version 2 or 3).")


def test_a_gguf_the_layout_reader_cannot_take_is_named(tmp_path):
    from isotropy.models import gguf

    # past the header check (as a file changed after it would be): the layout reader's error names the file
    bad = _gguf(tmp_path / "bad.gguf", _ARCH + _key("x") + struct.pack("<IIQ", 9, 9, 0), 2)
    with pytest.raises(ValueError) as info:
        gguf._convert(bad, tmp_path / "out", sha256="0" * 64, source=str(bad))
    assert str(info.value) == (f"The GGUF file {str(bad)!r} could not be read: expected a GGUF checkpoint of an "
                               f"architecture transformers supports. (a metadata array of element type 9 (numbers or "
                               f"strings expected))")
    assert not (tmp_path / "out").exists()
