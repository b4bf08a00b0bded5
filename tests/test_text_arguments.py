"""A bare str (or bytes) where a list of texts is expected is refused in one line, never split into characters."""

from __future__ import annotations

import pytest

from isotropy.measure.from_model import measure_layers
from isotropy.models import input_word_vectors
from isotropy.models.contextual import extract_token_embeddings
from isotropy.models.encoders import encode_mean_pooled, encode_pooled, encode_sentences
from isotropy.training.probe import GeometryProbe

# each entry point checks its texts before it resolves or loads a model, so no model is needed here
ENTRY_POINTS = {
    "encode_sentences": (lambda t: encode_sentences(t, device="cpu"), "texts"),
    "encode_pooled": (lambda t: encode_pooled(t, device="cpu"), "texts"),
    "encode_mean_pooled": (lambda t: encode_mean_pooled(t, device="cpu"), "texts"),
    "measure_layers": (lambda t: measure_layers(t, model="all-MiniLM-L6-v2", device="cpu"), "texts"),
    "measure_layers-shrinkage": (lambda t: measure_layers(["a b", "c d"], model="all-MiniLM-L6-v2", device="cpu",
                                                          shrinkage_sample=t), "shrinkage_sample"),
    "input_word_vectors": (lambda t: input_word_vectors(t), "words"),
    "extract_token_embeddings": (lambda t: extract_token_embeddings(t, device="cpu"), "lines"),
    "GeometryProbe": (lambda t: GeometryProbe(t), "probe"),
    "GeometryProbe-shrinkage": (lambda t: GeometryProbe(["a", "b", "c"], shrinkage_sample=t), "shrinkage_sample"),
}


@pytest.mark.parametrize("text, kind", [("hello world", "a string ('hello world')"),
                                        (b"hello world", "bytes (b'hello world')")], ids=["str", "bytes"])
@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_a_bare_string_is_refused(entry, text, kind):
    call, name = ENTRY_POINTS[entry]
    with pytest.raises(TypeError) as info:
        call(text)
    message = str(info.value)
    assert f"The '{name}' parameter of " in message
    assert f"Got {kind} instead; put a single text in a list: [text]." in message
    assert "\n" not in message


# (the probes refuse such elements in their own words already: tests/test_training_probe.py)
TEXT_LISTS = {k: ENTRY_POINTS[k] for k in ("encode_sentences", "encode_pooled", "encode_mean_pooled", "measure_layers")}


@pytest.mark.parametrize("element, said", [(None, "NoneType (None) at index 1"), (float("nan"), "float (nan) at index 1"),
                                           (b"b", "bytes (b'b') at index 1 instead; decode bytes first")],
                         ids=["None", "NaN", "bytes"])
@pytest.mark.parametrize("entry", list(TEXT_LISTS))
def test_an_element_that_is_not_a_text_is_refused(entry, element, said):
    """None, a pandas NaN and bytes were embedded as the texts "None", "nan" and "b'...'" (the same vectors as those
    texts: a user trial), where the command line and the training probes refuse them."""
    call, name = TEXT_LISTS[entry]
    with pytest.raises(TypeError, match=rf"The '{name}' parameter of .* each a str\. Got ") as info:
        call(["a b", element, "c d"])
    assert said in str(info.value)
    assert "\n" not in str(info.value)

