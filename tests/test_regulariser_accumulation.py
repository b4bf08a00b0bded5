"""Gradient accumulation with the regularisers: the step's objective and its logged parts, recomputed independently.

With ``gradient_accumulation_steps=k`` a step of ``k`` micro-batches must train, and log, what one batch of all its
rows would with the penalty averaged over the micro-batches: the task loss of all the rows, plus the mean of the
micro-batches' penalties (not their sum, which made the weight ``k·λ``).
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("lightning")

pytestmark = pytest.mark.usefixtures("one_torch_thread")

N_ROWS, SEQ, VOCAB = 24, 6, 30


def _rows():
    g = torch.Generator().manual_seed(5)
    ids = torch.randint(5, VOCAB, (N_ROWS, SEQ), generator=g)
    mask = (torch.arange(SEQ)[None] < torch.randint(3, SEQ + 1, (N_ROWS,), generator=g)[:, None]).long()
    labels = torch.arange(N_ROWS) % 2
    return ids, mask, labels


def _bert_classifier():
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    config = BertConfig(vocab_size=VOCAB, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0, num_labels=2)
    return BertForSequenceClassification(config)


def _mean_cosine(H):
    """Mean cosine similarity of the distinct pairs of rows (CosReg's penalty), from the Gram matrix."""
    U = H / H.norm(dim=1, keepdim=True)
    n = U.shape[0]
    return ((U @ U.T).sum() - n) / (n * (n - 1))


def _expected_step(model, ids, mask, labels, groups, weight):
    """``(task, penalty, gradient norm)`` of one optimiser step over the micro-batches ``groups`` (row slices): the
    cross-entropy of all the rows plus ``weight`` times the mean of the micro-batches' token-level CosReg."""
    model.zero_grad()
    rows = torch.cat([torch.arange(N_ROWS)[g] for g in groups])
    out = model(input_ids=ids[rows], attention_mask=mask[rows], output_hidden_states=True)
    task = torch.nn.functional.cross_entropy(out.logits, labels[rows])
    penalties = []
    for g in groups:
        hidden = model(input_ids=ids[g], attention_mask=mask[g], output_hidden_states=True).hidden_states
        keep = mask[g].bool()
        penalties.append(weight * _mean_cosine(torch.cat([h[keep] for h in hidden[1:]])))
    penalty = torch.stack(penalties).mean()
    (task + penalty).backward()
    norm = math.sqrt(sum(float(p.grad.pow(2).sum()) for p in model.parameters() if p.grad is not None))
    model.zero_grad()
    return float(task.detach()), float(penalty.detach()), norm


def _hf_run(tmp_path, *, batch, accumulation, task_loss=None, scaled_for_ga=None):
    from transformers import Trainer, TrainingArguments

    from isotropy.training import HFRegulariser

    ids, mask, labels = _rows()
    train = [{"input_ids": ids[i], "attention_mask": mask[i], "labels": labels[i]} for i in range(N_ROWS)]
    reg = HFRegulariser("cosreg", weight=1.0, task_loss=task_loss)
    args = TrainingArguments(output_dir=str(tmp_path / "out"), per_device_train_batch_size=batch,
                             gradient_accumulation_steps=accumulation, num_train_epochs=1, learning_rate=0.0,
                             logging_steps=1, save_strategy="no", report_to=[], use_cpu=True, seed=0,
                             disable_tqdm=True, train_sampling_strategy="sequential")
    trainer = Trainer(model=_bert_classifier(), args=args, train_dataset=train, compute_loss_func=reg,
                      callbacks=[reg])
    if scaled_for_ga is not None:
        trainer.loss_is_scaled_for_ga = scaled_for_ga
    trainer.train()
    logged = {}
    for entry in trainer.state.log_history:
        logged.setdefault(entry["step"], {}).update(entry)
    return logged


def _summed_cross_entropy(outputs, labels, num_items_in_batch=None):
    """A user's task loss that follows the Trainer's compute_loss_func contract: the summed loss over the step's
    label count when it is given."""
    total = torch.nn.functional.cross_entropy(outputs.logits, labels, reduction="sum")
    return total / (num_items_in_batch if num_items_in_batch is not None else labels.numel())


@pytest.mark.parametrize(("task_loss", "scaled_for_ga"), [(None, None), (_summed_cross_entropy, None),
                                                          (None, False)])
def test_hf_accumulated_step_is_the_objective_of_one_batch(tmp_path, task_loss, scaled_for_ga):
    # 24 rows, micro-batches of 8, 2 per step: step 1 = rows 0-15 in two micro-batches, step 2 = rows 16-23 alone
    logged = _hf_run(tmp_path, batch=8, accumulation=2, task_loss=task_loss, scaled_for_ga=scaled_for_ga)
    ids, mask, labels = _rows()
    model = _bert_classifier()  # learning_rate=0: the weights of both steps
    for step, groups in ((1, [slice(0, 8), slice(8, 16)]), (2, [slice(16, 24)])):
        task, penalty, norm = _expected_step(model, ids, mask, labels, groups, 1.0)
        values = logged[step]
        assert values["regulariser/task_loss"] == pytest.approx(task, rel=1e-5)
        assert values["regulariser/penalty"] == pytest.approx(penalty, rel=1e-5)
        assert values["loss"] == pytest.approx(task + penalty, rel=1e-5)
        assert values["grad_norm"] == pytest.approx(norm, rel=1e-4)


def test_hf_accumulated_step_matches_one_batch_of_its_rows(tmp_path):
    """One step of 2×8 logs the task loss of a step of 16 rows (the penalties differ: two halves, not one batch)."""
    one = _hf_run(tmp_path / "one", batch=16, accumulation=1)
    two = _hf_run(tmp_path / "two", batch=8, accumulation=2)
    assert two[1]["regulariser/task_loss"] == pytest.approx(one[1]["regulariser/task_loss"], rel=1e-5)
    assert two[1]["loss"] == pytest.approx(two[1]["regulariser/task_loss"] + two[1]["regulariser/penalty"], rel=1e-5)


class _Recorder:
    """A Lightning logger keeping every ``log_metrics`` call (the last value of a key at a step is the kept one)."""

    def __new__(cls):
        from lightning.pytorch.loggers import Logger

        class Recorder(Logger):
            def __init__(self):
                super().__init__()
                self.calls = []

            @property
            def name(self):
                return "recorder"

            @property
            def version(self):
                return 0

            def log_hyperparams(self, params, *args, **kwargs):
                pass

            def log_metrics(self, metrics, step=None):
                self.calls.append((step, dict(metrics)))

        return Recorder()


def test_lightning_accumulated_step_logs_the_task_loss_and_the_mean_penalty():
    """The task loss was the loss Lightning had divided by accumulate_grad_batches, less the whole penalty
    ((0.696 + 0.305) / 2 − 0.305 = 0.196 for a cross-entropy of 0.696), and the penalty the last micro-batch's."""
    import lightning as L

    from isotropy.training import LightningRegulariser

    ids, mask, labels = _rows()
    data = [{"input_ids": ids[i], "attention_mask": mask[i], "labels": labels[i]} for i in range(N_ROWS)]
    reg = LightningRegulariser("cosreg", weight=1.0)

    class Module(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = _bert_classifier()

        def training_step(self, batch, batch_idx):
            out = self.model(**batch, output_hidden_states=True)
            return out.loss + reg.penalty(out.hidden_states, batch["attention_mask"])

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.0)

    recorder = _Recorder()
    trainer = L.Trainer(accelerator="cpu", max_epochs=1, accumulate_grad_batches=2, log_every_n_steps=1,
                        callbacks=[reg], logger=recorder, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(Module(), torch.utils.data.DataLoader(data, batch_size=8))
    kept = {}
    for step, metrics in recorder.calls:
        kept.setdefault(step, {}).update(metrics)

    # independent: lr=0 keeps the initial weights; per micro-batch the mean cross-entropy and the token CosReg
    model = _bert_classifier()
    parts = []
    for g in (slice(0, 8), slice(8, 16), slice(16, 24)):
        with torch.no_grad():
            out = model(input_ids=ids[g], attention_mask=mask[g], output_hidden_states=True)
        keep = mask[g].bool()
        parts.append((float(torch.nn.functional.cross_entropy(out.logits, labels[g])),
                      float(_mean_cosine(torch.cat([h[keep] for h in out.hidden_states[1:]])))))
    # step 0: micro-batches 0 and 1; step 1: the epoch's last micro-batch alone
    for step, micro in ((0, parts[:2]), (1, parts[2:])):
        assert kept[step]["regulariser/task_loss"] == pytest.approx(sum(t for t, _ in micro) / len(micro), rel=1e-5)
        assert kept[step]["regulariser/penalty"] == pytest.approx(sum(p for _, p in micro) / len(micro), rel=1e-5)
