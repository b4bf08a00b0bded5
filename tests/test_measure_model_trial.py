"""``measure --model`` seen by a new user (trial of the model plumbing against independent references): texts cut at
``max_length`` are counted and said, the precision the model ran in, the model's identity in the JSON record, and
the cache of pooled vectors."""

from __future__ import annotations

import pytest
from _tiny_models import make_tiny_bert

from isotropy.measure.from_model import measure_layers

torch = pytest.importorskip("torch")

TEXTS = ["the cat sat on the mat .", "a dog ran .", "the dog sat on a mat", "a cat ran", "the mat .",
         "dog sat", "the cat ran on the mat , the dog sat on the mat .", "a dog sat ."]


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("trial") / "bert")


@pytest.mark.parametrize("level", ["sentence", "token"])
def test_texts_cut_at_max_length_are_counted_and_said(bert, capsys, level):
    """A text longer than max_length was cut to its first tokens without a word, at the default 128 as at a value
    given (a user trial: 4 of 6 texts cut at --max-length 3, nothing said). The count is now said and recorded; the
    reference is the tokenizer's own token count of each whole text."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(bert))
    lengths = [len(ids) for ids in tokenizer(TEXTS)["input_ids"]]  # whole texts, [CLS] and [SEP] included
    max_length = 7
    expected = sum(n > max_length for n in lengths)
    assert 0 < expected < len(TEXTS)
    result = measure_layers(TEXTS, model=str(bert), device="cpu", metrics=["isoscore"], max_length=max_length,
                            level=level)
    err = capsys.readouterr().err
    assert result["n_truncated"] == expected
    note = (f"{expected} of {len(TEXTS)} texts are longer than {max_length} tokens (max_length={max_length}; the "
            f"model takes up to 64): each was cut to its first {max_length} tokens")
    assert f"Note: {note}." in err
    assert f"every layer: {note}" in result["warnings"]
    whole = measure_layers(TEXTS, model=str(bert), device="cpu", metrics=["isoscore"], max_length=max(lengths),
                           level=level)
    assert whole["n_truncated"] == 0 and "longer than" not in capsys.readouterr().err
