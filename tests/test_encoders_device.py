"""The ``device`` of isotropy.models' public entries: one rule (isotropy._utils.device), checked before the cache.

A device this machine lacks (cuda without CUDA, mps without MPS), an unknown device string or the meta
device is refused in one line naming the argument, the function and the value, whether or not the result
is already cached; ``"cpu"``, ``"auto"`` and ``None`` give the same vectors, cached and uncached.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from isotropy import IsotropyValueError
from isotropy.models.encoders import encode_mean_pooled, encode_pooled, encode_sentences

TEXTS = ["A cat sat.", "Stocks fell.", "It rained.", "Nice film."]

# devices refused on this machine: unknown strings and meta always, cuda/mps where torch sees none
BAD = ["gpu", "meta", "cuda:x", "", "tpu"]
if not torch.cuda.is_available():
    BAD += ["cuda", "cuda:0", "cuda:3"]
if not torch.backends.mps.is_available():
    BAD += ["mps"]


def _sentences(device, cache_dir, use_cache):
    return encode_sentences(TEXTS, device=device, cache_dir=cache_dir, use_cache=use_cache, show_progress=False)


def _pooled(device, cache_dir, use_cache):
    return encode_pooled(TEXTS, layers=[-1], device=device, cache_dir=cache_dir, use_cache=use_cache)[-1]


def _mean_pooled(device, cache_dir, use_cache):
    return encode_mean_pooled(TEXTS, layer=-1, device=device, cache_dir=cache_dir, use_cache=use_cache)


ENCODERS = {"encode_sentences": _sentences, "encode_pooled": _pooled, "encode_mean_pooled": _mean_pooled}


@pytest.fixture(scope="module")
def cached(tmp_path_factory):
    """Each encoder's vectors of TEXTS computed on the CPU, uncached, and a cache directory that holds them."""
    root = tmp_path_factory.mktemp("device-cache")
    out = {}
    for name, encode in ENCODERS.items():
        out[name] = encode("cpu", root / name, False)
        np.testing.assert_array_equal(encode("cpu", root / name, True), out[name])  # written to the cache
    return root, out


def _message(device, caller):
    return rf"^The 'device' parameter of {caller} (must be|is) .*{re.escape(repr(device))}"


@pytest.mark.parametrize("name", ENCODERS)
@pytest.mark.parametrize("device", BAD)
def test_a_bad_device_is_refused_uncached(name, device, tmp_path):
    with pytest.raises(IsotropyValueError, match=_message(device, name)) as info:
        ENCODERS[name](device, tmp_path, False)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("name", ENCODERS)
@pytest.mark.parametrize("device", BAD)
def test_a_bad_device_is_refused_when_the_result_is_cached(cached, name, device):
    root, _ = cached
    with pytest.raises(IsotropyValueError, match=_message(device, name)) as info:
        ENCODERS[name](device, root / name, True)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("name", ENCODERS)
def test_no_texts_is_refused_as_the_library_refuses(name, tmp_path):
    """docs/refusals.md: every refusal is an IsotropyValueError, one line naming the argument and the value."""
    encode = {"encode_sentences": encode_sentences, "encode_pooled": encode_pooled,
              "encode_mean_pooled": encode_mean_pooled}[name]
    with pytest.raises(IsotropyValueError, match=rf"^The 'texts' parameter of {name} must hold at least one "
                                                 r"sentence\. Got none\.$"):
        encode([], device="cpu", cache_dir=tmp_path)


@pytest.mark.parametrize("name", ENCODERS)
@pytest.mark.parametrize("device", ["cpu", "auto", None, " cpu "])
@pytest.mark.parametrize("use_cache", [True, False])
def test_cpu_and_auto_give_the_same_vectors_cached_and_uncached(cached, name, device, use_cache):
    root, expected = cached
    X = ENCODERS[name](device, root / name, use_cache)
    if device in ("cpu", " cpu ") or not torch.cuda.is_available():
        np.testing.assert_array_equal(X, expected[name])
    else:  # auto on a GPU machine (cached apart from the CPU's): the same vectors up to float rounding
        np.testing.assert_allclose(X, expected[name], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("device", BAD)
def test_the_loaders_and_token_extraction_check_the_device_before_the_model(monkeypatch, device):
    """load_transformer, load_sentence_model and extract_token_embeddings: the device is refused before any model
    is resolved (a GGUF would otherwise be converted first), and whatever model was handed over."""
    from isotropy.models import contextual, encoders, loading, resolve
    from isotropy.models.contextual import extract_token_embeddings

    def no_model(*args, **kwargs):
        raise AssertionError("the model was resolved before the device was checked")

    monkeypatch.setattr(resolve, "_resolve", no_model)
    monkeypatch.setattr(encoders, "resolve_model", no_model)
    for caller, call in (("load_transformer", lambda: loading.load_transformer("all-MiniLM-L6-v2", device=device)),
                         ("load_sentence_model", lambda: encoders.load_sentence_model(device=device)),
                         ("extract_token_embeddings",
                          lambda: extract_token_embeddings([["a", "cat"]], device=device, show_progress=False)),
                         ("extract_token_embeddings",
                          lambda: extract_token_embeddings([["a", "cat"]], device=device, show_progress=False,
                                                           tokenizer_and_model=(object(), object())))):
        with pytest.raises(IsotropyValueError, match=_message(device, caller)):
            call()
    assert contextual.load_transformer is loading.load_transformer


def test_the_cache_keeps_the_vectors_of_each_batch_size_apart(tmp_path):
    # a file computed with another batch size was read back as this one's (which texts share a padded batch moves
    # the last digits: isoscore 0.07334928926671543 where batches of 7 give 0.0733492895040497)
    texts = [f"{word} is a word number {i}." for i, word in enumerate(["cat", "stock", "rain", "film", "tree"] * 3)]
    texts[3] = "A much longer sentence than the others, so that the batches pad it differently from the rest."
    fresh = {size: encode_pooled(texts, layers=[-1], batch_size=size, device="cpu", use_cache=False)[-1]
             for size in (1, 4)}
    assert not np.array_equal(fresh[1], fresh[4])  # the batching moves the last digits
    for size in (4, 1, 4):
        X = encode_pooled(texts, layers=[-1], batch_size=size, device="cpu", cache_dir=tmp_path)[-1]
        np.testing.assert_array_equal(X, fresh[size])
    assert len(list(tmp_path.glob("*.npy"))) == 2


@pytest.mark.parametrize("name", ENCODERS)
@pytest.mark.parametrize("batch_size", [0, -5, 2.5, "x", True])
@pytest.mark.parametrize("use_cache", [True, False])
def test_a_bad_batch_size_is_refused_cached_or_not(cached, name, batch_size, use_cache):
    """encode_sentences took 0, -5, 2.5 and "x" once its vectors were cached, and an empty cache gave
    sentence-transformers' own "batch_size must be a positive integer, got 0." (no function named)."""
    root, _ = cached
    call = {"encode_sentences": lambda: encode_sentences(TEXTS, batch_size=batch_size, cache_dir=root / name,
                                                         use_cache=use_cache, show_progress=False),
            "encode_pooled": lambda: encode_pooled(TEXTS, layers=[-1], batch_size=batch_size, cache_dir=root / name,
                                                   use_cache=use_cache),
            "encode_mean_pooled": lambda: encode_mean_pooled(TEXTS, layer=-1, batch_size=batch_size,
                                                             cache_dir=root / name, use_cache=use_cache)}[name]
    with pytest.raises((TypeError, ValueError), match=r"^The 'batch_size' parameter of encode_(sentences|pooled) "
                                                      r"must be an int") as info:
        call()
    assert "\n" not in str(info.value) and repr(batch_size) in str(info.value)


@pytest.mark.parametrize("layers", ["all", "last", "0,-1"])
def test_encode_pooled_says_what_layers_it_takes_of_a_string(layers, tmp_path):
    """layers="all" was "must be a sequence of ints. Got ['a', 'l', 'l'] instead"."""
    with pytest.raises(TypeError) as info:
        encode_pooled(TEXTS, layers=layers, cache_dir=tmp_path)
    assert str(info.value) == (
        f"The 'layers' parameter of encode_pooled must be an int or a sequence of ints (indices into the hidden states: "
        f"0 = embedding output, -1 = last layer; for 'all' or 'last' pass isotropy.models.select_layers({layers!r}, "
        f"n_hidden_states)). Got {layers!r} instead.")
