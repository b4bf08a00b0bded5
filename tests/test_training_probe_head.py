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


def _called(monkeypatch):
    """A list of the modules GeometryProbe runs its probe batches through (one entry per batch)."""
    from isotropy.training.probe import GeometryProbe

    called, forward_pooled = [], GeometryProbe._forward_pooled

    def recording(self, model, inputs, forward_kwargs):
        called.append(model)
        return forward_pooled(self, model, inputs, forward_kwargs)

    monkeypatch.setattr(GeometryProbe, "_forward_pooled", recording)
    return called


def _classifier(tmp_path):
    """A tiny randomly initialised BertForSequenceClassification, in eval mode, and its tokenizer."""
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    directory = make_tiny_bert(tmp_path, n_layers=2, hidden_size=16)
    torch.manual_seed(1)
    model = BertForSequenceClassification(BertConfig.from_pretrained(directory)).eval()
    return model, BertTokenizerFast.from_pretrained(directory)


def _unsynced_rows_probe(tokenizer):
    """A probe whose one metric never syncs across processes (torch.distributed is faked below)."""
    from torchmetrics import MeanMetric

    from isotropy.training import GeometryProbe

    def factory(n_features):
        metric = MeanMetric(sync_on_compute=False)
        metric.update = lambda X, update=metric.update: update(X.mean())
        return metric

    return GeometryProbe(TEXTS, metrics={"mean": factory}, batch_size=2).set_tokenizer(tokenizer)


@pytest.mark.parametrize("told_by", ["arguments", "torch.distributed"])
def test_runs_of_more_than_one_process_call_the_whole_model(told_by, tmp_path, monkeypatch):
    """Each rank would decide alone (ranks that disagree issue different collectives under FSDP/ZeRO-3: a hang):
    with world_size > 1, given or from torch.distributed, the probe calls the whole model, checked or not."""
    model, tokenizer = _classifier(tmp_path)
    probe = _unsynced_rows_probe(tokenizer)
    called = _called(monkeypatch)
    if told_by == "arguments":
        probe.measure(model, rank=1, world_size=2)
        probe.measure(model, rank=1, world_size=2)
    else:
        monkeypatch.setattr(torch.distributed, "is_available", lambda: True)
        monkeypatch.setattr(torch.distributed, "is_initialized", lambda: True)
        monkeypatch.setattr(torch.distributed, "get_world_size", lambda *args, **kwargs: 2)
        monkeypatch.setattr(torch.distributed, "get_rank", lambda *args, **kwargs: 0)
        probe.measure(model)
        probe.measure(model)
    assert len(called) >= 2 and all(module is model for module in called)
    assert len(probe._encoders) == 0  # not checked either


def test_fsdp_models_call_the_whole_model(tmp_path, monkeypatch):
    """fully_shard's root module gathers the parameters in its own pre-forward hook, which its base_model skips."""
    if not torch.distributed.is_available():
        pytest.skip("torch.distributed is not available")
    fully_shard = pytest.importorskip("torch.distributed.fsdp").fully_shard
    model, tokenizer = _classifier(tmp_path)
    probe = _unsynced_rows_probe(tokenizer)
    torch.distributed.init_process_group("gloo", rank=0, world_size=1, store=torch.distributed.HashStore())
    try:
        fully_shard(model, reshard_after_forward=False)  # the base model would run on the gathered parameters
        called = _called(monkeypatch)
        probe.measure(model)
        probe.measure(model)
    finally:
        torch.distributed.destroy_process_group()
    assert len(called) >= 2 and all(module is model for module in called)


@pytest.mark.parametrize("how", ["torch.compile", "Module.compile"])
def test_compiled_models_call_the_whole_model(how, tmp_path, monkeypatch):
    """torch.compile(model).base_model is the uncompiled base model: the probe runs the compiled whole model.

    The compiled module is torch's OptimizedModule run without dynamo (tracing a BERT costs seconds), and
    ``Module.compile()`` is stood in for by the attribute it sets, an eager ``_compiled_call_impl``."""
    model, tokenizer = _classifier(tmp_path)
    if how == "torch.compile":
        eval_frame = pytest.importorskip("torch._dynamo.eval_frame")
        model = eval_frame.OptimizedModule(model, eval_frame.DisableContext())
        assert model.base_model is model._orig_mod.base_model
    else:
        model._compiled_call_impl = model._call_impl
    called = _called(monkeypatch)
    probe = _unsynced_rows_probe(tokenizer)
    probe.measure(model)
    probe.measure(model)
    assert len(called) >= 2 and all(module is model for module in called)


class _OutOfMemory(torch.nn.Module):
    def __init__(self, error):
        super().__init__()
        self.error = error

    def forward(self, **inputs):
        raise self.error


class _OutOfMemoryWrapped(_Wrapped):
    """A model whose own hidden states are its BertModel's and whose base_model runs out of memory."""

    def __init__(self, bert, error):
        super().__init__(bert, refuse=True)
        self.failing = _OutOfMemory(error)

    @property
    def base_model(self):
        return self.failing


@pytest.mark.parametrize("error", [torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
                                   RuntimeError("MPS backend out of memory (MPS allocated: 1.00 GB)")])
def test_the_base_model_running_out_of_memory_is_raised(error, tmp_path):
    """Out of memory in the check is not a base model that fails: calling the whole model instead would hide it
    (and, on one rank only, make the ranks run different modules)."""
    from transformers import BertModel, BertTokenizerFast

    from isotropy.training import GeometryProbe

    directory = make_tiny_bert(tmp_path, n_layers=2, hidden_size=16)
    bert, tokenizer = BertModel.from_pretrained(directory).eval(), BertTokenizerFast.from_pretrained(directory)
    model = _OutOfMemoryWrapped(bert, error)
    probe = GeometryProbe(TEXTS, metrics=("isoscore",), batch_size=2).set_tokenizer(tokenizer)
    with pytest.raises(type(error), match="out of memory"):
        probe.measure(model)


class _FreshBase(torch.nn.Module):
    """A model whose base_model property builds a new module (over the same BertModel) at every call."""

    def __init__(self, bert):
        super().__init__()
        self.bert, self.calls = bert, 0

    @property
    def base_model(self):
        return _View(self.bert)

    def forward(self, **inputs):
        self.calls += 1
        return self.bert(**inputs)


class _View(torch.nn.Module):
    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, **inputs):
        return self.bert(**inputs)


def test_the_decision_is_kept_per_model_not_per_base_model_object(tmp_path):
    """A base_model property that returns a new module at each call is checked once, not at each measurement."""
    from transformers import BertModel, BertTokenizerFast

    from isotropy.training import GeometryProbe

    directory = make_tiny_bert(tmp_path, n_layers=2, hidden_size=16)
    bert, tokenizer = BertModel.from_pretrained(directory).eval(), BertTokenizerFast.from_pretrained(directory)
    model = _FreshBase(bert)
    probe = GeometryProbe(TEXTS, metrics=("isoscore",), batch_size=2).set_tokenizer(tokenizer)
    probe.measure(model)
    assert model.calls == 1  # the check; the batches ran the base model
    probe.measure(model)
    probe.measure(model)
    assert model.calls == 1


def test_a_base_model_that_refers_to_its_model_does_not_keep_it_alive(tmp_path):
    """The probe keeps its decision per model weakly: a base model that points back at its model (as wrappers may)
    must not keep the model, and its entry, alive."""
    import gc

    model, tokenizer = _classifier(tmp_path)
    model.bert.__dict__["owner"] = model  # a plain attribute, not a submodule
    probe = _unsynced_rows_probe(tokenizer)
    probe.measure(model)
    assert len(probe._encoders) == 1
    del model
    gc.collect()
    assert len(probe._encoders) == 0
