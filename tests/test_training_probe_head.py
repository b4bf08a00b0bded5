"""GeometryProbe skips a transformers model's task head (classifier, LM head) where its ``base_model`` gives exactly
the same hidden states, and calls the whole model where it does not (issue 20, item 4: the cost of a measurement)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("torchmetrics")

from _tiny_models import make_tiny_bert, make_tiny_gpt2

TEXTS = ["the cat sat on the mat .", "a dog", "unbelievable cats ran , the dog sat on a mat", "cats", "the dog ran ."]


def _rows(model, tokenizer, texts=TEXTS):
    """``[(n_rows, d) pooled rows of each layer]`` as GeometryProbe hands them to its metrics, and the probe."""
    from torchmetrics import Metric

    from isotropy.training import GeometryProbe

    kept = []

    class Rows(Metric):  # keeps the rows of its first measurement; compute: their count
        def __init__(self):
            super().__init__()
            self.add_state("n", default=torch.zeros(()), dist_reduce_fx="sum")
            self.rows = []

        def update(self, X):
            self.rows.append(X.detach().clone())
            self.n += X.shape[0]

        def compute(self):
            return self.n

    def factory(n_features):
        kept.append(Rows())
        return kept[-1]

    probe = GeometryProbe(texts, metrics={"rows": factory}, batch_size=2).set_tokenizer(tokenizer)
    probe.measure(model)
    return [torch.cat(metric.rows) for metric in kept], probe


def _counting(module):
    """A list that gets one entry per forward call of ``module``."""
    calls = []
    module.register_forward_hook(lambda *args: calls.append(1))
    return calls


@pytest.mark.parametrize("kind", ["bert", "gpt2"])
def test_the_task_head_is_not_run_and_the_rows_are_those_of_the_whole_model(kind, tmp_path):
    """BertForSequenceClassification (classifier) and GPT2LMHeadModel (LM head): after the one check of the
    first measurement, no measurement calls the head; the rows equal (exactly) those of the base model itself."""
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification, GPT2Config, GPT2LMHeadModel

    if kind == "bert":
        directory = make_tiny_bert(tmp_path, n_layers=2, hidden_size=16)
        torch.manual_seed(1)
        model = BertForSequenceClassification(BertConfig.from_pretrained(directory))
        head = model.classifier
    else:
        directory = make_tiny_gpt2(tmp_path, n_layers=2, hidden_size=16)
        torch.manual_seed(1)
        model = GPT2LMHeadModel(GPT2Config.from_pretrained(directory))
        head = model.lm_head
    tokenizer = AutoTokenizer.from_pretrained(directory)
    calls = _counting(head)
    model.train()
    got, probe = _rows(model, tokenizer)
    assert len(calls) == 1 and model.training  # the check: the whole model once, on two rows
    probe.measure(model)
    assert len(calls) == 1  # later measurements: never
    expected, _ = _rows(model.base_model.eval(), tokenizer)
    assert len(got) == len(expected) == 2
    for layer, reference in zip(got, expected):
        assert layer.shape == (len(TEXTS), 16) and torch.equal(layer, reference)


class _Wrapped(torch.nn.Module):
    """A model whose ``base_model`` is a BertModel but whose own hidden states are not that model's: doubled, or
    (``refuse``) a base model that fails when called alone."""

    def __init__(self, bert, *, refuse=False):
        super().__init__()
        self.bert, self.refuse = bert, refuse
        self.calls = 0

    @property
    def base_model(self):
        if self.refuse:
            return torch.nn.Linear(2, 2)  # called with input_ids=...: a TypeError
        return self.bert

    def forward(self, **inputs):
        self.calls += 1
        states = self.bert(**inputs).hidden_states
        return {"hidden_states": states if self.refuse else tuple(2 * h for h in states)}


@pytest.mark.parametrize("refuse", [False, True])
def test_a_base_model_with_other_hidden_states_is_not_used(refuse, tmp_path):
    from transformers import BertModel, BertTokenizerFast

    directory = make_tiny_bert(tmp_path, n_layers=2, hidden_size=16)
    bert, tokenizer = BertModel.from_pretrained(directory).eval(), BertTokenizerFast.from_pretrained(directory)
    model = _Wrapped(bert, refuse=refuse)
    got, probe = _rows(model, tokenizer)
    probe.measure(model)
    assert model.calls > 2  # every batch, each measurement
    expected, _ = _rows(bert, tokenizer)
    for layer, reference in zip(got, expected, strict=True):
        torch.testing.assert_close(layer, reference if refuse else 2 * reference, rtol=0, atol=1e-6)


def test_forward_kwargs_call_the_whole_model(tmp_path):
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    from isotropy.training import GeometryProbe

    directory = make_tiny_bert(tmp_path, n_layers=2, hidden_size=16)
    model = BertForSequenceClassification(BertConfig.from_pretrained(directory)).eval()
    calls = _counting(model.classifier)
    probe = GeometryProbe(TEXTS, metrics=("isoscore",), batch_size=2)
    probe.set_tokenizer(BertTokenizerFast.from_pretrained(directory))
    probe.measure(model, forward_kwargs={"output_attentions": False})
    assert len(calls) >= 3  # every batch
