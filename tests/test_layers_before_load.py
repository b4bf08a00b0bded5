"""A layer selection beyond the model is refused before the model loads, where its depth can be read.

``isotropy measure --model M.gguf --layers 0,40`` converted the GGUF (seconds for Gemma 3 270M, the first
time) and loaded the weights before it said the model has 18 layers; the depth is now read from the
config.json or the GGUF header first (:func:`isotropy.models.resolve.peek_n_layers`).
"""

from __future__ import annotations

import json

import pytest
from _tiny_models import make_tiny_bert, make_tiny_decoder_gguf, make_tiny_gemma_gguf

from isotropy.models.resolve import peek_n_layers

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("depth")
    make_tiny_bert(root / "bert", n_layers=3)
    make_tiny_gemma_gguf(root / "gemma.gguf", n_layers=2)
    make_tiny_decoder_gguf(root / "gpt2.gguf", "gpt2")
    make_tiny_decoder_gguf(root / "llama.gguf", "llama")
    return root


def test_the_depth_read_without_loading_is_the_loaded_models(models, tmp_path):
    from isotropy.models.contextual import n_transformer_layers
    from isotropy.models.loading import load_transformer

    for name in ("bert", "gemma.gguf", "gpt2.gguf", "llama.gguf"):
        peeked = peek_n_layers(models / name)
        _, network, _ = load_transformer(str(models / name), device="cpu")
        assert peeked == n_transformer_layers(network.config), name
    assert peek_n_layers("all-MiniLM-L6-v2") == 6  # the packaged model's config.json (6 layers)
    # what it cannot read without the loader is None, never an error: the loader says what is wrong
    (tmp_path / "cut.gguf").write_bytes((models / "gemma.gguf").read_bytes()[:100])
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "config.json").write_text("[" * 100_000)
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "config.json").write_text(json.dumps({"num_hidden_layers": True}))
    for model in (tmp_path / "cut.gguf", tmp_path / "nested", tmp_path / "odd", tmp_path / "none", "org/some-model",
                  12, None):
        assert peek_n_layers(model) is None, model


def _no_load(*args, **kwargs):
    raise AssertionError("the model was loaded before the layers were checked")


@pytest.mark.parametrize("name", ["bert", "gemma.gguf"])
def test_measure_refuses_layers_beyond_the_model_before_loading_it(models, name, monkeypatch, capsys):
    from _cli import exiting_cli

    import isotropy.models.loading
    from isotropy.measure.from_model import measure_layers

    monkeypatch.setattr(isotropy.models.loading, "load_transformer", _no_load)
    depth = 3 if name == "bert" else 2
    expected = (f"The 'layers' parameter of measure_layers must be 'all', 'last' or hidden-state indices in "
                f"[-{depth + 1}, {depth}] (0 = embedding output, {depth} = last layer). Got '0,9' instead.")
    with pytest.raises(ValueError) as caught:
        measure_layers(["a b", "c d", "e f"], model=str(models / name), layers="0,9", device="cpu")
    assert str(caught.value) == expected
    texts = models / "texts.txt"
    texts.write_text("a b\nc d\ne f\n")
    code, _, err = exiting_cli(["measure", "--model", str(models / name), "--texts", str(texts), "--layers", "0,9",
                                "--device", "cpu"], capsys)
    assert code == 2 and f"[-{depth + 1}, {depth}]" in err and "Got '0,9' instead" in err


def test_extract_token_embeddings_refuses_layers_beyond_the_model_before_loading_it(models, monkeypatch):
    from isotropy.models import contextual

    monkeypatch.setattr(contextual, "load_transformer", _no_load)
    with pytest.raises(ValueError, match=r"hidden-state indices in \[-4, 3\].*Got \[5\] instead"):
        contextual.extract_token_embeddings([["a", "b"]], model=str(models / "bert"), layers=[5], device="cpu")


def test_layer_geometry_refuses_layers_beyond_the_model_before_loading_it(models, tmp_path, monkeypatch, capsys):
    from _cli import exiting_cli

    from isotropy.models import contextual

    monkeypatch.setattr(contextual, "load_transformer", _no_load)
    (tmp_path / "corpus.txt").write_text("a b c\nd e f\n")
    code, _, err = exiting_cli(["run", "layer-geometry", "--device", "cpu", "--quiet", "--model", str(models / "bert"),
                                "--corpus", str(tmp_path / "corpus.txt"), "--layers", "0,9", "--set",
                                "pca_layers=null", "--results-dir", str(tmp_path / "r")], capsys)
    assert code == 2 and "in [-4, 3]" in err and "Got '0,9' instead" in err
    assert not (tmp_path / "r").exists()


def test_a_gguf_file_without_the_suffix_is_read_as_one(models, tmp_path, monkeypatch):
    """A GGUF saved without '.gguf' (a file named 'mistral', ollama's sha256-... blobs) was refused as "a file, not a
    model directory or a .gguf file"; its header says what it is. Another file without the suffix is still refused."""
    from isotropy.models.contextual import n_transformer_layers
    from isotropy.models.loading import load_transformer

    monkeypatch.setenv("ISOTROPY_CACHE", str(tmp_path / "cache"))
    bare = tmp_path / "mistral"
    bare.write_bytes((models / "gemma.gguf").read_bytes())
    assert peek_n_layers(bare) == 2
    _, network, location = load_transformer(str(bare), device="cpu")
    assert n_transformer_layers(network.config) == 2 and "gguf-" in location
    (tmp_path / "notes").write_text("GGUF is a format\n")
    with pytest.raises(ValueError, match=r"is a file, not a model directory or a \.gguf file"):
        load_transformer(str(tmp_path / "notes"), device="cpu")
