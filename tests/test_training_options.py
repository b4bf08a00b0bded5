"""The training callbacks and regularisers refuse what they would not use, and say what is wrong before step 0.

From a user trial (each failed as described before its fix): IsoScore*'s Σ_S warning at ζ = 0, where Σ_S is
unused; options the callbacks took and ignored (``zeta`` without ``isoscore_star``, ``tokenizer`` and
``max_length`` with a tokenised probe); a model without ``output_hidden_states`` under HFRegulariser (torch's bare
TypeError at the first step); token ids out of the model's vocabulary (torch's IndexError at the first
measurement); a metric factory returning something else than a metric (AttributeError at the first measurement).
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("lightning")

from isotropy import IsotropyValueError

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TEXTS = ["a b", "c d e", "f g", "h i j k"]


def _encoded(rows=4, high=20):
    g = torch.Generator().manual_seed(0)
    return {"input_ids": torch.randint(1, high, (rows, 5), generator=g), "attention_mask": torch.ones(rows, 5)}


def _bert():
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    return BertModel(BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=32, max_position_embeddings=16)).eval()


def test_zeta_zero_does_not_warn_of_the_identity():
    from isotropy.training import HFGeometryCallback, HiddenStateRegulariser, IsoScoreStar

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        IsoScoreStar(zeta=0.0)
        HiddenStateRegulariser("istar", zeta=0.0)
        HFGeometryCallback(TEXTS, metrics=["isoscore_star"], zeta=0.0)
    for make in (lambda: IsoScoreStar(zeta=0.1), lambda: HiddenStateRegulariser("istar", zeta=0.1),
                 lambda: HFGeometryCallback(TEXTS, metrics=["isoscore_star"], zeta=0.1)):
        with pytest.warns(UserWarning, match="Σ_S is the identity|tracks the vector norms"):
            make()


def _tokenizer(texts, **kwargs):
    """A callable that check_tokenizer takes (never called here: nothing is tokenised)."""
    raise AssertionError("not called")


@pytest.mark.parametrize("name", ["HFGeometryCallback", "LightningGeometryCallback"])
def test_callbacks_refuse_options_nothing_uses(name):
    from isotropy import training

    make = getattr(training, name)
    for zeta in (0.5, 0.2):  # the default's value passed is refused as any other: it was passed
        with pytest.raises(IsotropyValueError, match=r"The 'zeta' parameter of .* applies to the shrinkage of "
                                                     r"isoscore_star only, and isoscore_star is not among the metrics"):
            make(TEXTS, zeta=zeta)
    for zeta in (torch.tensor(0.25), np.float32(0.25), np.array(0.25)):  # a 0-d tensor or array shows its value
        with pytest.raises(IsotropyValueError, match=r"isoscore_star is not among the metrics\. Got 0\.25 \(a "
                                                     r"(Tensor|ndarray|float32)\) instead"):
            make(TEXTS, zeta=zeta)
    with pytest.raises(IsotropyValueError, match=r"The 'max_length' parameter of .* applies to tokenising texts only, "
                                                 r"and the probe .* is already tokenised .* Got 16 instead"):
        make(_encoded(), max_length=16)
    with pytest.raises(IsotropyValueError, match=r"The 'tokenizer' parameter of .* applies to tokenising texts only"):
        make(_encoded(), tokenizer=_tokenizer)
    with pytest.warns(UserWarning, match="Σ_S = I"):  # used: taken (with the identity's warning)
        make(TEXTS, zeta=0.5, metrics=["isoscore_star"])
    make(_encoded(), max_length=16, shrinkage_sample=TEXTS, tokenizer=_tokenizer)  # the sample's texts use them
    make(TEXTS, max_length=16, tokenizer=_tokenizer)


def test_hf_regulariser_refuses_a_model_without_hidden_states(tmp_path):
    from transformers import Trainer, TrainingArguments

    from isotropy.training import HFRegulariser

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(30, 8)
            self.head = torch.nn.Linear(8, 2)

        def forward(self, input_ids, attention_mask=None, labels=None):
            return {"logits": self.head(self.embed(input_ids).mean(1))}

    rows = [{"input_ids": torch.arange(1, 6), "attention_mask": torch.ones(5, dtype=torch.long), "labels": i % 2}
            for i in range(4)]
    reg = HFRegulariser("cosreg")
    args = TrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=2, max_steps=1, report_to=[],
                             use_cpu=True, save_strategy="no", disable_tqdm=True)
    trainer = Trainer(model=Tiny(), args=args, train_dataset=rows, compute_loss_func=reg, callbacks=[reg])
    with pytest.raises(IsotropyValueError, match=r"HFRegulariser: the model \(Tiny\) cannot be called with "
                                                 r"output_hidden_states=True \(its forward takes input_ids, "
                                                 r"attention_mask, labels\); expected a transformers model"):
        trainer.train()


def test_token_ids_outside_the_vocabulary_are_refused_in_one_line():
    from isotropy.training import GeometryProbe

    bad = _encoded()
    bad["input_ids"][2, 3] = -1
    with pytest.raises(IsotropyValueError, match=r"must have 'input_ids' of token ids 0 or more \(padding included\)"
                                                 r"\. Got -1 at \(2, 3\) instead"):
        GeometryProbe(bad)
    probe = GeometryProbe(_encoded(high=40))  # the model's table holds 30 tokens
    with pytest.raises(IsotropyValueError, match=r"GeometryProbe: the probe's 'input_ids' must be below the model's 30 "
                                                 r"token embeddings \(its vocabulary\)\. Got 3\d at"):
        probe.measure(_bert())
    assert set(GeometryProbe(_encoded(high=30)).measure(_bert())) >= {"geometry/isoscore/layer_1"}


def _long_encoded(width, real, rows=4):
    """``rows`` encoded rows ``width`` columns wide, the first ``real`` of them real tokens, the rest padding (0)."""
    g = torch.Generator().manual_seed(1)
    mask = torch.zeros(rows, width, dtype=torch.long)
    mask[:, :real] = 1
    return {"input_ids": torch.randint(1, 20, (rows, width), generator=g) * mask, "attention_mask": mask}


@pytest.mark.parametrize("family", ["bert", "gpt2", "roberta"])
def test_token_ids_longer_than_the_model_positions_are_refused_in_one_line(family):
    """Encoded rows past the model's table of learned positions failed inside the forward pass with torch's bare size
    error (texts are cut to the positions; token ids past the vocabulary were refused already); now the probe and
    the shrinkage sample are refused in one line naming the argument, the length found and the model's limit, which
    is the config's max_position_embeddings (GPT-2: n_positions; RoBERTa: less its padding offset of
    pad_token_id + 1). Rows padded past the limit with their real tokens within it are measured, as the same rows
    without that padding."""
    from transformers import BertConfig, BertModel, GPT2Config, GPT2Model, RobertaConfig, RobertaModel

    from isotropy.training import GeometryProbe, HiddenStateRegulariser

    torch.manual_seed(0)
    small = {"hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 32}
    model, limit, said = {
        "bert": lambda: (BertModel(BertConfig(vocab_size=30, max_position_embeddings=16, **small)), 16,
                         "config.max_position_embeddings=16"),
        "gpt2": lambda: (GPT2Model(GPT2Config(vocab_size=30, n_embd=16, n_layer=2, n_head=2, n_positions=16,
                                                    bos_token_id=0, eos_token_id=0)), 16,
                         "config.n_positions=16"),
        "roberta": lambda: (RobertaModel(RobertaConfig(vocab_size=30, max_position_embeddings=18, pad_token_id=1,
                                                       **small)), 16,
                            "config.max_position_embeddings=18, less 2 for its padding offset"),
    }[family]()
    model.eval()
    expected = (rf"the {{name}}'s 'input_ids' must be at most {limit} tokens long, the most the model takes "
                rf"\({re.escape(said)}\)\. Got rows {limit + 3} tokens long \(row 0 has a real token at position "
                rf"{limit + 2}\) instead; cut them to {limit}\.$")
    with pytest.raises(IsotropyValueError, match="^GeometryProbe: " + expected.format(name="probe")):
        GeometryProbe(_long_encoded(limit + 3, limit + 3)).measure(model)
    with pytest.raises(IsotropyValueError, match="^GeometryProbe: " + expected.format(name="shrinkage_sample")):
        GeometryProbe(_encoded(), shrinkage_sample=_long_encoded(limit + 3, limit + 3)).measure(model)
    with pytest.raises(IsotropyValueError, match="^HiddenStateRegulariser: " + expected.format(name="shrinkage_sample")):
        HiddenStateRegulariser("istar", shrinkage_sample=_long_encoded(limit + 3, limit + 3)).refresh(model)
    padded = _long_encoded(limit + 3, limit)
    cut = {key: value[:, :limit] for key, value in padded.items()}
    got, want = GeometryProbe(padded).measure(model), GeometryProbe(cut).measure(model)
    assert got.keys() == want.keys() and all(v == pytest.approx(want[k], rel=1e-6, abs=1e-9) for k, v in got.items())


def test_an_hf_trainer_stops_at_setup_on_a_probe_past_the_positions(tmp_path):
    """trainer.train() with such a probe: the refusal comes from the callback's first measurement, as training
    begins (no optimiser step taken), not torch's size error from inside the forward pass."""
    from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

    from isotropy.training import HFGeometryCallback

    torch.manual_seed(0)
    model = BertForSequenceClassification(BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=2,
                                                     num_attention_heads=2, intermediate_size=32,
                                                     max_position_embeddings=16))
    rows = [{"input_ids": torch.arange(1, 6), "attention_mask": torch.ones(5, dtype=torch.long), "labels": i % 2}
            for i in range(4)]
    args = TrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=2, max_steps=1, report_to=[],
                             use_cpu=True, save_strategy="no", disable_tqdm=True)
    trainer = Trainer(model=model, args=args, train_dataset=rows, callbacks=[HFGeometryCallback(_long_encoded(20, 20))])
    with pytest.raises(IsotropyValueError, match=r"^HFGeometryCallback: the probe's 'input_ids' must be at most 16 "
                                                 r"tokens long.* Got rows 20 tokens long"):
        trainer.train()
    assert trainer.state.global_step == 0


def test_a_metric_factory_must_return_a_metric():
    from isotropy.training import GeometryProbe

    probe = GeometryProbe(_encoded(), metrics={"x": lambda d: 3})
    with pytest.raises(TypeError, match=r"The 'metrics' parameter of GeometryProbe must map names to factories "
                                        r"factory\(n_features\) that return a metric .* Got int from the factory of 'x'"):
        probe.measure(_bert())


def test_a_text_shrinkage_sample_without_tokenizer_is_named():
    from isotropy.training import HiddenStateRegulariser

    reg = HiddenStateRegulariser("istar", shrinkage_sample=TEXTS)
    with pytest.raises(IsotropyValueError, match=r"HiddenStateRegulariser: the shrinkage_sample is a list of texts but "
                                                 r"no tokenizer was found"):
        reg.refresh(_bert())


@pytest.mark.parametrize("name", ["a/b", "", " x"])
def test_a_metric_name_must_read_back_from_the_log(name):
    """A name with '/' was logged as geometry/a/b/layer_1, which read_geometry_log skipped without a word."""
    from isotropy.training import GeometryProbe, IsoScore

    with pytest.raises(IsotropyValueError, match=r"The 'metrics' parameter of GeometryProbe must map names without "
                                                 r"'/' .* geometry/<name>/layer_<i>\. Got"):
        GeometryProbe(_encoded(), metrics={name: lambda d: IsoScore()})
