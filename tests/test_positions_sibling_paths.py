"""The paths that tokenise with their own max_length cut texts to the model's positions, as encode_pooled does.

GeometryProbe (the callbacks) and the fine-tuning experiments' tokenise (istar, cluster-finetune, activation-diagrams)
kept max_length (default 128) above a model's table of positions (64 for the tiny BERT): a longer text crashed the
forward pass. And the fine-tuning loader printed transformers' LOAD REPORT table for a checkpoint with its head.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch
from _tiny_models import make_tiny_bert

LONG = " ".join(["the cat sat on the mat ."] * 13)  # 91 tokens with [CLS] and [SEP]


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("positions") / "bert")


def _loaded(directory):
    from transformers import AutoTokenizer, BertModel

    return AutoTokenizer.from_pretrained(directory), BertModel.from_pretrained(directory).eval()


def test_the_text_is_longer_than_the_model_s_positions(bert):
    tokenizer, network = _loaded(bert)
    assert network.config.max_position_embeddings == 64 and 64 < len(tokenizer(LONG)["input_ids"]) <= 128


@pytest.mark.parametrize("shrink", [False, True], ids=["probe", "shrinkage-sample"])
def test_geometry_probe_cuts_its_texts_to_the_model_s_positions(bert, shrink):
    from isotropy.training.probe import GeometryProbe

    tokenizer, network = _loaded(bert)
    texts = [LONG, "the cat sat .", "a dog ran .", "the mat ."]
    probe = GeometryProbe(texts, metrics=("isoscore",), layers="last", max_length=128,
                          shrinkage_sample=texts if shrink else None).set_tokenizer(tokenizer)
    values = probe.measure(network)  # crashed: "The size of tensor a (91) must match the size of tensor b (64)"
    assert len(values) == 1 and np.isfinite(list(values.values())).all(), values
    assert max(probe.rows.lengths) == 64
    # the probe's rows are the tokenizer's own truncation at the model's 64 positions
    cut = tokenizer(LONG, truncation=True, max_length=64)["input_ids"]
    assert probe.rows.encode([0])["input_ids"][0].tolist() == cut
    # a max_length below the positions is kept
    short = GeometryProbe(texts, metrics=("isoscore",), layers="last", max_length=8).set_tokenizer(tokenizer)
    short.measure(network)
    assert max(short.rows.lengths) == 8


def test_finetune_tokenise_cuts_to_the_model_s_positions(bert):
    from isotropy.datasets._types import LabeledTexts
    from isotropy.experiments._finetune.data import tokenise
    from isotropy.experiments._finetune.model import load_encoder

    data = LabeledTexts("long", [LONG, "the cat sat ."], None, np.array([0, 1]), ["a", "b"], {})
    tokenizer, network = _loaded(bert)
    # with the model's config (prepare: istar, activation-diagrams)
    tokens = tokenise(tokenizer, data, max_length=128, config=network.config)
    assert max(tokens.lengths()) == 64
    # with load_encoder's tokenizer alone (cluster-finetune tokenises without the config)
    tokenizer, encoder = load_encoder(str(bert))
    tokens = tokenise(tokenizer, data, max_length=128)
    assert max(tokens.lengths()) == 64
    batch = tokens.batch([0, 1], "cpu")
    with torch.no_grad():  # crashed: the 91 tokens past the 64 positions
        hidden = encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    assert hidden.shape[:2] == (2, 64)
    assert tokenise(tokenizer, data, max_length=8).lengths().max() == 8  # a shorter max_length is kept


def test_finetune_loader_prints_no_load_report_for_a_checkpoint_with_its_head(tmp_path, capfd):
    """A BertForSequenceClassification directory printed transformers' "LOAD REPORT" table of UNEXPECTED head
    tensors at load_encoder (istar, cluster-finetune, activation-diagrams), as load_transformer did before."""
    from transformers import BertForSequenceClassification, BertModel

    from isotropy.experiments._finetune.model import load_encoder

    directory = make_tiny_bert(tmp_path / "classifier", head=True)
    records = []  # what transformers logs, whichever stream its handler writes to (bound when first used)
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("transformers")
    logger.addHandler(handler)
    capfd.readouterr()
    try:
        tokenizer, encoder = load_encoder(str(directory))
    finally:
        logger.removeHandler(handler)
    captured = capfd.readouterr()
    assert "LOAD REPORT" not in captured.err + captured.out and "UNEXPECTED" not in captured.err, captured.err
    reported = [record.getMessage() for record in records if record.levelno >= logging.WARNING]
    assert not any("LOAD REPORT" in message or "UNEXPECTED" in message for message in reported), reported
    assert isinstance(encoder, BertModel)
    reference = BertForSequenceClassification.from_pretrained(str(directory)).bert.eval()
    batch = tokenizer(["the cat sat"], return_tensors="pt")
    with torch.no_grad():
        assert torch.equal(encoder.eval()(**batch).last_hidden_state, reference(**batch).last_hidden_state)


def test_the_regulariser_cuts_its_shrinkage_sample_to_the_model_s_positions(bert):
    """The regulariser's refresh of Σ_S ran the shrinkage sample's texts at max_length 128 on a model of 64
    positions: the forward pass crashed as the probe's did."""
    from isotropy.training.regularisers import HiddenStateRegulariser

    tokenizer, network = _loaded(bert)
    texts = [LONG, "the cat sat .", "a dog ran .", "the mat ."] * 3
    regulariser = HiddenStateRegulariser("istar", shrinkage_sample=texts, layers="all", level="sentence",
                                         max_length=128)
    regulariser.set_tokenizer(tokenizer).refresh(network)
    assert regulariser.shrinkage_cov is not None and torch.isfinite(regulariser.shrinkage_cov).all()
