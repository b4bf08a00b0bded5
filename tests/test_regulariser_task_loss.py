"""HFRegulariser's default task loss: the loss each kind of transformers head computes for itself, and the same
objective under any gradient accumulation.

The Trainer hands a ``compute_loss_func`` the labels instead of the model, so the default task loss must compute
what the model would: the reference here is transformers' own loss (``model(..., labels=labels).loss``) of tiny
randomly initialised models. A review found mean squared error where the model's own multi-label loss is binary
cross-entropy, an unshifted cross-entropy for a causal language model (which then learns to copy its input), and a
regression loss that doubled with ``gradient_accumulation_steps=2``.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

pytestmark = pytest.mark.usefixtures("one_torch_thread")

VOCAB, SEQ = 30, 6


def _inputs(rows=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, VOCAB, (rows, SEQ), generator=g)
    mask = (torch.arange(SEQ)[None] < torch.randint(3, SEQ + 1, (rows,), generator=g)[:, None]).long()
    return {"input_ids": ids, "attention_mask": mask}, g


def _bert(head, **config):
    import transformers

    torch.manual_seed(0)
    settings = {"vocab_size": VOCAB, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
                "intermediate_size": 32, "max_position_embeddings": 16, "hidden_dropout_prob": 0.0,
                "attention_probs_dropout_prob": 0.0, **config}
    return getattr(transformers, head)(transformers.BertConfig(**settings)).eval()


def _gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_embd=16, n_layer=1, n_head=2, n_positions=16,
                                      bos_token_id=0, eos_token_id=0, resid_pdrop=0.0, embd_pdrop=0.0,
                                      attn_pdrop=0.0)).eval()


def _cases():
    """(name, model, labels) for every head whose loss the default follows."""
    inputs, g = _inputs()
    tokens = inputs["input_ids"].clone()
    tokens[inputs["attention_mask"] == 0] = -100
    return inputs, [
        ("single-label", _bert("BertForSequenceClassification", num_labels=3), torch.randint(0, 3, (8,), generator=g)),
        ("regression", _bert("BertForSequenceClassification", num_labels=1), torch.randn(8, generator=g)),
        ("regression, two targets", _bert("BertForSequenceClassification", num_labels=2, problem_type="regression"),
         torch.randn(8, 2, generator=g)),
        ("multi-label, problem_type", _bert("BertForSequenceClassification", num_labels=4,
                                            problem_type="multi_label_classification"),
         torch.randint(0, 2, (8, 4), generator=g).float()),
        ("multi-label, float labels", _bert("BertForSequenceClassification", num_labels=4),
         torch.randint(0, 2, (8, 4), generator=g).float()),
        ("token classification", _bert("BertForTokenClassification", num_labels=5),
         torch.where(inputs["attention_mask"] == 1, torch.randint(0, 5, (8, SEQ), generator=g), -100)),
        ("masked LM", _bert("BertForMaskedLM"), tokens),
        ("causal LM", _gpt2(), tokens),
    ]


@pytest.mark.parametrize("case", range(8))
def test_default_task_loss_is_the_models_own(case):
    from isotropy.training.hf_regulariser import _default_task_loss

    inputs, cases = _cases()
    name, model, labels = cases[case]
    with torch.no_grad():
        expected = model(**inputs, labels=labels).loss
        outputs = model(**inputs)
        got = _default_task_loss(outputs, labels, model=model)
        assert float(got) == pytest.approx(float(expected), rel=1e-6), name
        # summed over the micro-batch and divided by the step's label count where the Trainer gives it
        count = int((labels[..., 1:] if name == "causal LM" else labels).ne(-100).sum())
        summed = _default_task_loss(outputs, labels, num_items_in_batch=3 * count, model=model)
        assert float(summed) == pytest.approx(float(expected) / 3, rel=1e-6), name


@pytest.mark.parametrize("accumulation", [2, 4])
def test_regression_loss_is_the_same_under_gradient_accumulation(tmp_path, accumulation):
    """One step of 8 rows as 1, 2 or 4 micro-batches: the same logged task loss (it was 2 and 4 times larger)."""
    from transformers import Trainer, TrainingArguments

    from isotropy.training import HFRegulariser

    inputs, g = _inputs()
    labels = torch.randn(8, generator=g)
    rows = [{"input_ids": inputs["input_ids"][i], "attention_mask": inputs["attention_mask"][i], "labels": labels[i]}
            for i in range(8)]

    def first_step(batch, steps):
        reg = HFRegulariser("cosreg", weight=1.0)
        args = TrainingArguments(output_dir=str(tmp_path / f"{steps}"), per_device_train_batch_size=batch,
                                 gradient_accumulation_steps=steps, max_steps=1, learning_rate=0.0, logging_steps=1,
                                 save_strategy="no", report_to=[], use_cpu=True, seed=0, disable_tqdm=True,
                                 train_sampling_strategy="sequential")
        trainer = Trainer(model=_bert("BertForSequenceClassification", num_labels=1).train(), args=args,
                          train_dataset=rows, compute_loss_func=reg, callbacks=[reg])
        trainer.train()
        return next(e for e in trainer.state.log_history if "regulariser/task_loss" in e)["regulariser/task_loss"]

    model = _bert("BertForSequenceClassification", num_labels=1)
    with torch.no_grad():
        expected = float(model(**inputs, labels=labels).loss)
    assert first_step(8, 1) == pytest.approx(expected, rel=1e-5)
    assert first_step(8 // accumulation, accumulation) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("strategy", ["epoch", "steps"])
def test_parts_are_logged_under_every_logging_strategy(tmp_path, strategy):
    """logging_strategy="epoch": the Trainer sets should_log at the epoch's end, not at a step's, and the parts were
    never logged (a review); now each of the Trainer's loss entries has its two parts beside it, adding up to it."""
    from transformers import Trainer, TrainingArguments

    from isotropy.training import HFRegulariser

    inputs, g = _inputs()
    labels = torch.randint(0, 3, (8,), generator=g)
    rows = [{"input_ids": inputs["input_ids"][i], "attention_mask": inputs["attention_mask"][i], "labels": labels[i]}
            for i in range(8)]
    reg = HFRegulariser("cosreg", weight=1.0)
    args = TrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=4, num_train_epochs=2,
                             logging_strategy=strategy, logging_steps=1, learning_rate=1e-3, save_strategy="no",
                             report_to=[], use_cpu=True, seed=0, disable_tqdm=True)
    trainer = Trainer(model=_bert("BertForSequenceClassification", num_labels=3).train(), args=args,
                      train_dataset=rows, compute_loss_func=reg, callbacks=[reg])
    trainer.train()
    losses = {e["step"]: e["loss"] for e in trainer.state.log_history if "loss" in e}
    parts = {e["step"]: e for e in trainer.state.log_history if "regulariser/task_loss" in e}
    assert sorted(losses) == sorted(parts) == ([2, 4] if strategy == "epoch" else [1, 2, 3, 4])
    for step, loss in losses.items():
        total = parts[step]["regulariser/task_loss"] + parts[step]["regulariser/penalty"]
        assert total == pytest.approx(loss, rel=1e-4, abs=1e-6)


def test_istar_resumed_within_an_epoch_goes_on_as_the_uninterrupted_run(tmp_path):
    """Σ_S is computed from the weights at an epoch's start; resumed from a checkpoint within the epoch, it was
    computed again from the resumed weights (the loss at the next step 0.8571 against 0.8053, a review). It is now
    kept beside each checkpoint and read back: the resumed steps log the uninterrupted run's values."""
    from transformers import Trainer, TrainingArguments

    from isotropy.training import HFRegulariser

    inputs, g = _inputs(rows=16)
    labels = torch.randint(0, 3, (16,), generator=g)
    rows = [{"input_ids": inputs["input_ids"][i], "attention_mask": inputs["attention_mask"][i], "labels": labels[i]}
            for i in range(16)]
    sample, _ = _inputs(rows=12, seed=3)

    def run(out, resume=None):
        reg = HFRegulariser("istar", weight=-1.0, shrinkage_sample=sample)
        args = TrainingArguments(output_dir=str(out), per_device_train_batch_size=4, max_steps=6, learning_rate=1e-2,
                                 lr_scheduler_type="constant", logging_steps=1, save_strategy="steps", save_steps=3,
                                 report_to=[], use_cpu=True, seed=0, disable_tqdm=True)
        trainer = Trainer(model=_bert("BertForSequenceClassification", num_labels=3).train(), args=args,
                          train_dataset=rows, compute_loss_func=reg, callbacks=[reg])
        trainer.train(resume_from_checkpoint=resume)
        return {e["step"]: e for e in trainer.state.log_history if "regulariser/penalty" in e}, reg

    whole, _ = run(tmp_path / "whole")
    assert (tmp_path / "whole" / "checkpoint-3" / "isotropy_regulariser.pt").is_file()
    saved = torch.load(tmp_path / "whole" / "checkpoint-3" / "isotropy_regulariser.pt", weights_only=True)
    assert saved["epoch"] == 0 and saved["shrinkage_cov"].shape == (16, 16)
    resumed, _ = run(tmp_path / "whole", resume=str(tmp_path / "whole" / "checkpoint-3"))
    assert sorted(resumed) == [1, 2, 3, 4, 5, 6]  # steps 1-3 from the checkpoint's trainer_state.json
    for step in (4, 5, 6):  # step 4: epoch 0's Σ_S, restored; steps 5-6: epoch 1's, computed at its start in both
        assert resumed[step]["regulariser/penalty"] == pytest.approx(whole[step]["regulariser/penalty"], rel=1e-5)
        assert resumed[step]["regulariser/task_loss"] == pytest.approx(whole[step]["regulariser/task_loss"], rel=1e-5)
    # without the file (a checkpoint from an older version): a warning, and Σ_S of the resumed weights
    (tmp_path / "whole" / "checkpoint-3" / "isotropy_regulariser.pt").unlink()
    with pytest.warns(UserWarning, match=r"resumed at step 3 without isotropy_regulariser.pt in the checkpoint"):
        run(tmp_path / "whole", resume=str(tmp_path / "whole" / "checkpoint-3"))


def test_lightning_regulariser_keeps_its_shrinkage_in_the_checkpoint_state():
    """LightningRegulariser's state (Lightning keeps a callback's state_dict in its checkpoints): Σ_S and its epoch;
    loaded, the same epoch's start keeps it (a run resumed within the epoch), the next epoch's recomputes it."""
    from isotropy import IsotropyValueError
    from isotropy.training import LightningRegulariser

    sample, _ = _inputs(rows=12, seed=3)
    model = _bert("BertModel")
    first = LightningRegulariser("istar", weight=-1.0, shrinkage_sample=sample)
    assert first.state_dict() == {}
    first.refresh_for_epoch(model, 2)
    state = first.state_dict()
    assert state["epoch"] == 2 and torch.equal(state["shrinkage_cov"], first.shrinkage_cov)
    second = LightningRegulariser("istar", weight=-1.0, shrinkage_sample=sample)
    second.load_state_dict({"shrinkage_cov": 2 * state["shrinkage_cov"], "epoch": 2})
    second.refresh_for_epoch(model, 2)  # resumed within epoch 2: the saved Σ_S, not one of these weights
    assert torch.equal(second.shrinkage_cov, 2 * state["shrinkage_cov"])
    second.refresh_for_epoch(model, 3)
    assert torch.allclose(second.shrinkage_cov, state["shrinkage_cov"]) and second.shrinkage_epoch == 3
    for bad in ({"shrinkage_cov": [[1.0]], "epoch": 2}, {"shrinkage_cov": torch.ones(2, 3), "epoch": 2},
                {"shrinkage_cov": torch.eye(2), "epoch": True},
                {"shrinkage_cov": -torch.eye(2, dtype=torch.float64), "epoch": 2}):  # not a covariance matrix
        with pytest.raises(IsotropyValueError, match=r"LightningRegulariser: .*the checkpoint's LightningRegulariser "
                                                     r"state"):
            second.load_state_dict(bad)


def _valid_state_bytes(tmp_path):
    path = tmp_path / "valid.pt"
    torch.save({"shrinkage_cov": torch.eye(4, dtype=torch.float64), "epoch": 1}, path)
    return path.read_bytes()


def test_the_saved_shrinkage_state_reads_back_and_refuses_what_is_not_one(tmp_path):
    from isotropy import IsotropyValueError
    from isotropy.training import HFRegulariser

    reg = HFRegulariser("istar", shrinkage_sample=_inputs(rows=4)[0])
    path = tmp_path / "state.pt"
    path.write_bytes(_valid_state_bytes(tmp_path))
    reg.read_shrinkage_state(path)
    assert reg.shrinkage_epoch == 1 and torch.equal(reg.shrinkage_cov, torch.eye(4, dtype=torch.float64))
    torch.save({"shrinkage_cov": torch.eye(4), "epoch": 1, "payload": torch.nn.Linear(2, 2)}, path)  # a module: code
    with pytest.raises(IsotropyValueError, match=r"is not a readable regulariser state \(UnpicklingError"):
        reg.read_shrinkage_state(path)
    torch.save([torch.eye(4)], path)
    with pytest.raises(IsotropyValueError, match=r"does not hold a saved shrinkage state"):
        reg.read_shrinkage_state(path)


def test_fuzzed_shrinkage_states_are_refused_in_one_line(tmp_path):
    """Random bytes spliced into a valid state, and truncations of it: read, or refused as IsotropyValueError."""
    from _fuzz import spliced
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from isotropy import IsotropyValueError
    from isotropy.training import HFRegulariser

    valid = _valid_state_bytes(tmp_path)
    reg = HFRegulariser("istar", shrinkage_sample=_inputs(rows=4)[0])
    path = tmp_path / "fuzzed.pt"

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(data=st.binary(max_size=64), cut=st.integers(0, len(valid)))
    def check(data, cut):
        for content in (spliced(valid, data), valid[:cut], data):
            path.write_bytes(content)
            try:
                reg.read_shrinkage_state(path)
            except IsotropyValueError as exc:
                assert "\n" not in str(exc)

    check()


def test_a_second_train_computes_sigma_from_its_own_model(tmp_path):
    """The same HFRegulariser in a second Trainer from step 0: Σ_S of that Trainer's model, not the first run's
    epoch-0 Σ_S (kept for a resume within its epoch, never for another run)."""
    from transformers import Trainer, TrainingArguments

    from isotropy.training import HFRegulariser

    inputs, g = _inputs(rows=8)
    labels = torch.randint(0, 3, (8,), generator=g)
    rows = [{"input_ids": inputs["input_ids"][i], "attention_mask": inputs["attention_mask"][i], "labels": labels[i]}
            for i in range(8)]
    sample, _ = _inputs(rows=12, seed=3)
    reg = HFRegulariser("istar", weight=-1.0, shrinkage_sample=sample)
    seen = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        model = _bert("BertForSequenceClassification", num_labels=3, initializer_range=0.02 * (1 + seed)).train()
        expected = HFRegulariser("istar", shrinkage_sample=sample).refresh(model).shrinkage_cov
        args = TrainingArguments(output_dir=str(tmp_path / str(seed)), per_device_train_batch_size=4, max_steps=1,
                                 learning_rate=0.0, save_strategy="no", report_to=[], use_cpu=True, disable_tqdm=True)
        Trainer(model=model, args=args, train_dataset=rows, compute_loss_func=reg, callbacks=[reg]).train()
        assert torch.allclose(reg.shrinkage_cov, expected)
        seen.append(reg.shrinkage_cov)
    assert not torch.allclose(seen[0], seen[1])


def test_sigma_is_refreshed_at_each_pass_of_an_iterable_dataset(tmp_path):
    """With an IterableDataset and max_steps, state.epoch is a fraction at a pass's start (0.33 at the second of three):
    Σ_S, refreshed by its whole part, lagged a pass behind (a review). Counted from train begin: every pass's start."""
    from transformers import Trainer, TrainingArguments

    from isotropy.training import HFRegulariser

    inputs, g = _inputs(rows=8)
    labels = torch.randint(0, 3, (8,), generator=g)

    class Rows(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter([{"input_ids": inputs["input_ids"][i], "attention_mask": inputs["attention_mask"][i],
                          "labels": labels[i]} for i in range(8)])

    reg = HFRegulariser("istar", weight=-1.0, shrinkage_sample=_inputs(rows=12, seed=3)[0])
    refreshed = []
    real = reg.refresh
    reg.refresh = lambda model, **kw: refreshed.append(1) or real(model, **kw)
    args = TrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=4, max_steps=6, learning_rate=1e-3,
                             save_strategy="no", report_to=[], use_cpu=True, disable_tqdm=True)
    Trainer(model=_bert("BertForSequenceClassification", num_labels=3).train(), args=args, train_dataset=Rows(),
            compute_loss_func=reg, callbacks=[reg]).train()
    assert len(refreshed) == 3 and reg.shrinkage_epoch == 2  # train begin (pass 1), then passes 2 and 3


def test_the_default_task_loss_outside_training_and_in_bfloat16(tmp_path):
    """evaluate() before train() (no model hooked yet) gave a causal LM's loss unshifted; a bfloat16 model's loss was
    computed in bfloat16, 0.35 % off transformers' float32 one (a review)."""
    from transformers import Trainer, TrainingArguments

    from isotropy.training import HFRegulariser
    from isotropy.training.hf_regulariser import _default_task_loss

    inputs, _ = _inputs(rows=4)
    tokens = inputs["input_ids"].clone()
    tokens[inputs["attention_mask"] == 0] = -100
    model = _gpt2()
    rows = [{"input_ids": inputs["input_ids"][i], "attention_mask": inputs["attention_mask"][i], "labels": tokens[i]}
            for i in range(4)]
    args = TrainingArguments(output_dir=str(tmp_path), per_device_eval_batch_size=4, report_to=[], use_cpu=True,
                             disable_tqdm=True)
    expected = Trainer(model=model, args=args, eval_dataset=rows).evaluate()["eval_loss"]  # the plain Trainer's
    reg = HFRegulariser("cosreg", weight=1.0)
    trainer = Trainer(model=model, args=args, eval_dataset=rows, compute_loss_func=reg, callbacks=[reg])
    assert trainer.evaluate()["eval_loss"] == pytest.approx(expected, rel=1e-6)
    half = _gpt2().to(torch.bfloat16)
    with torch.no_grad():
        own = half(**inputs, labels=tokens).loss
        got = _default_task_loss(half(**inputs), tokens, model=half)
    assert got.dtype == torch.float32 and float(got) == pytest.approx(float(own), rel=1e-6)


def test_istar_resumed_refuses_a_too_long_shrinkage_sample_before_training(tmp_path):
    """Resumed within an epoch, Σ_S comes from the checkpoint and the sample is not embedded: a token-id sample longer
    than the model's 16 positions was refused only at the next epoch's start, after the epoch's remaining steps had
    trained; now when training resumes (HF) or the resumed epoch starts (Lightning), before its first batch."""
    from transformers import Trainer, TrainingArguments

    from isotropy import IsotropyValueError
    from isotropy.training import HFRegulariser, LightningRegulariser

    inputs, g = _inputs(rows=16)
    labels = torch.randint(0, 3, (16,), generator=g)
    rows = [{"input_ids": inputs["input_ids"][i], "attention_mask": inputs["attention_mask"][i], "labels": labels[i]}
            for i in range(16)]
    sample, _ = _inputs(rows=12, seed=3)
    too_long = {"input_ids": torch.randint(3, VOCAB, (12, 20), generator=torch.Generator().manual_seed(4))}

    def trainer(shrinkage_sample):
        reg = HFRegulariser("istar", weight=-1.0, shrinkage_sample=shrinkage_sample)
        args = TrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=4, max_steps=6,
                                 learning_rate=1e-2, logging_steps=1, save_strategy="steps", save_steps=1, report_to=[],
                                 use_cpu=True, seed=0, disable_tqdm=True)
        return Trainer(model=_bert("BertForSequenceClassification", num_labels=3).train(), args=args,
                       train_dataset=rows, compute_loss_func=reg, callbacks=[reg])

    trainer(sample).train()
    resumed = trainer(too_long)
    with pytest.raises(IsotropyValueError, match=r"shrinkage_sample's 'input_ids' must be at most 16 tokens long"):
        resumed.train(resume_from_checkpoint=str(tmp_path / "checkpoint-2"))  # within epoch 0 (4 steps an epoch)
    assert resumed.state.global_step == 2  # not one step trained
    # Lightning: restored within epoch 0, the epoch's start checks the sample with the model
    reg = LightningRegulariser("istar", weight=-1.0, shrinkage_sample=too_long)
    reg.load_state_dict({"shrinkage_cov": torch.eye(16), "epoch": 0})
    with pytest.raises(IsotropyValueError, match=r"shrinkage_sample's 'input_ids' must be at most 16 tokens long"):
        reg.refresh_for_epoch(_bert("BertModel"), 0)


def test_a_shrinkage_state_that_expands_as_a_decompression_bomb_is_refused_unread(tmp_path):
    """Read with torch.load alone, a saved state whose zip entries were deflated was inflated whole: a 130 KB file
    became 128 MiB of float64 zeros before its shape was checked (a few MB, gigabytes). Refused first, from the
    zip directory, as every other checkpoint isotropy reads is (:func:`isotropy.io._archives.zip_expansion_problem`);
    a device or FIFO in its place is refused unopened."""
    import io
    import os
    import zipfile

    from isotropy import IsotropyValueError
    from isotropy.training import HFRegulariser

    reg = HFRegulariser("istar", shrinkage_sample=_inputs(rows=4)[0])
    buffer = io.BytesIO()
    torch.save({"shrinkage_cov": torch.zeros(2**12, 2**12, dtype=torch.float64), "epoch": 1}, buffer)
    path = tmp_path / "state.pt"
    with zipfile.ZipFile(buffer) as source, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as bomb:
        for info in source.infolist():
            bomb.writestr(info.filename, source.read(info.filename))
    with pytest.raises(IsotropyValueError, match=r"is not a readable regulariser state \(member '[^']+' expands from "
                                                 r"\d+ to 134217728 bytes .*as a decompression bomb would\)") as err:
        reg.read_shrinkage_state(path)
    assert "\n" not in str(err.value)
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "fifo.pt"
        os.mkfifo(fifo)
        with pytest.raises(IsotropyValueError, match=r"is not a readable regulariser state \(it is a FIFO"):
            reg.read_shrinkage_state(fifo)
