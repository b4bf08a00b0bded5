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


def test_a_failed_conversion_leaves_no_lock_file(tiny_gguf, tmp_path, monkeypatch):
    from isotropy.models import convert_gguf, gguf

    def fails(path, out, **kwargs):
        raise ValueError("simulated failure")

    monkeypatch.setattr(gguf, "_convert", fails)
    with pytest.raises(ValueError, match="simulated"):
        convert_gguf(tiny_gguf, cache_dir=tmp_path, show_progress=False)
    assert not list(tmp_path.rglob("*.lock")) and not list((tmp_path / "models").iterdir())


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
    import time

    path = _safetensors(tmp_path / "model.safetensors", {"x": {"dtype": "F32", "shape": shape, "data_offsets": [0, 16]}})
    start = time.perf_counter()
    with pytest.raises(ValueError) as info:
        check_safetensors(path)
    assert time.perf_counter() - start < 5  # the full product of 800 4000-digit numbers took 33 s
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
