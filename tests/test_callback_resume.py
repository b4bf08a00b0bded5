"""Geometry callbacks resumed from a checkpoint: step 0 is measured on a fresh run only, and the resume step is not
measured (logged) a second time."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("lightning")

pytestmark = pytest.mark.usefixtures("one_torch_thread")

VOCAB, SEQ = 30, 6
KEY = "geometry/isoscore/layer_2"


def _data(n_rows=16):
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(5, VOCAB, (n_rows, SEQ), generator=g)
    probe = {"input_ids": torch.randint(5, VOCAB, (12, SEQ), generator=g)}
    rows = [{"input_ids": ids[i], "attention_mask": torch.ones(SEQ, dtype=torch.long), "labels": i % 2}
            for i in range(n_rows)]
    return rows, probe


def _bert_classifier():
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    return BertForSequenceClassification(BertConfig(vocab_size=VOCAB, hidden_size=16, num_hidden_layers=2,
                                                    num_attention_heads=2, intermediate_size=32,
                                                    max_position_embeddings=16))


def _hf_trainer(tmp_path, probe, train, max_steps, save_steps):
    from transformers import Trainer, TrainingArguments

    from isotropy.training import HFGeometryCallback

    args = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=max_steps, per_device_train_batch_size=4,
                             save_steps=save_steps, learning_rate=1e-3, report_to=[], use_cpu=True, seed=0,
                             disable_tqdm=True, logging_steps=100)
    callback = HFGeometryCallback(probe, every_n_steps=3, metrics=["isoscore"])
    return Trainer(model=_bert_classifier(), args=args, train_dataset=train, callbacks=[callback]), callback


@pytest.mark.parametrize(("checkpoint", "history_steps"), [(6, [9]), (5, [6, 9])])
def test_hf_resumed_run_logs_no_step_twice(tmp_path, checkpoint, history_steps):
    """Resumed from checkpoint-6 the history read [0, 3, 6, 6, 9]; from checkpoint-5, an undocumented step 5."""
    train, probe = _data()
    first, _ = _hf_trainer(tmp_path, probe, train, max_steps=6, save_steps=checkpoint)
    first.train()
    resumed, callback = _hf_trainer(tmp_path, probe, train, max_steps=9, save_steps=checkpoint)
    resumed.train(resume_from_checkpoint=str(tmp_path / "out" / f"checkpoint-{checkpoint}"))
    steps = [e["step"] for e in resumed.state.log_history if KEY in e]
    assert steps == [0, 3, 6, 9]
    assert [step for step, _ in callback.history] == history_steps


def test_lightning_resumed_run_does_not_measure_the_resume_step_again(tmp_path):
    import lightning as L

    from isotropy.training import LightningGeometryCallback

    train, probe = _data()

    class Module(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = _bert_classifier()

        def training_step(self, batch, batch_idx):
            return self.model(**batch).loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=1e-3)

    def fit(max_steps, ckpt_path=None):
        callback = LightningGeometryCallback(probe, every_n_steps=3, model="model", metrics=["isoscore"])
        trainer = L.Trainer(accelerator="cpu", max_steps=max_steps, callbacks=[callback], logger=False,
                            enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
        trainer.fit(Module(), torch.utils.data.DataLoader(train, batch_size=4), ckpt_path=ckpt_path)
        return trainer, callback

    first, callback = fit(6)
    assert [step for step, _ in callback.history] == [0, 3, 6]
    first.save_checkpoint(tmp_path / "step6.ckpt")
    resumed, callback = fit(9, ckpt_path=tmp_path / "step6.ckpt")
    assert resumed.global_step == 9
    assert [step for step, _ in callback.history] == [9]


def _too_long_probe():
    """Token ids 20 positions long, for a model of 16 positions (``_bert_classifier``)."""
    return {"input_ids": torch.randint(5, VOCAB, (12, 20), generator=torch.Generator().manual_seed(3))}


_TOO_LONG = r"probe's 'input_ids' must be at most 16 tokens long.*max_position_embeddings=16"


def test_hf_resumed_run_refuses_a_too_long_probe_before_training(tmp_path):
    """Resumed from checkpoint-6 with every_n_steps=3, a probe longer than the model's positions was refused at
    global_step 9, the first later measurement, after three more steps had trained; now when training resumes."""
    from isotropy import IsotropyValueError

    train, probe = _data()
    first, _ = _hf_trainer(tmp_path, probe, train, max_steps=6, save_steps=6)
    first.train()
    resumed, callback = _hf_trainer(tmp_path, _too_long_probe(), train, max_steps=9, save_steps=6)
    with pytest.raises(IsotropyValueError, match=_TOO_LONG):
        resumed.train(resume_from_checkpoint=str(tmp_path / "out" / "checkpoint-6"))
    assert resumed.state.global_step == 6  # not one step trained
    assert callback.history == []


def test_lightning_resumed_run_refuses_a_too_long_probe_before_training(tmp_path):
    import lightning as L

    from isotropy import IsotropyValueError
    from isotropy.training import LightningGeometryCallback

    train, probe = _data()
    steps = []

    class Module(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = _bert_classifier()

        def training_step(self, batch, batch_idx):
            steps.append(self.trainer.global_step)
            return self.model(**batch).loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=1e-3)

    def fit(probe, max_steps, ckpt_path=None):
        callback = LightningGeometryCallback(probe, every_n_steps=3, model="model", metrics=["isoscore"])
        trainer = L.Trainer(accelerator="cpu", max_steps=max_steps, callbacks=[callback], logger=False,
                            enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
        trainer.fit(Module(), torch.utils.data.DataLoader(train, batch_size=4), ckpt_path=ckpt_path)
        return trainer

    first = fit(probe, 6)
    first.save_checkpoint(tmp_path / "step6.ckpt")
    steps.clear()
    with pytest.raises(IsotropyValueError, match=_TOO_LONG):
        fit(_too_long_probe(), 9, ckpt_path=tmp_path / "step6.ckpt")
    assert steps == []  # refused before the first batch of the resumed run (was: at step 9, after steps 6, 7, 8)
