"""The two training integrations log the same keys at the same steps (issue 21 item 2), in one process.

Both run the tiny random BERT of ``_lightning_geometry_run`` for 4 steps with geometry every 2 steps:
HF's ``trainer_state`` log history and Lightning's ``metrics.csv`` must hold the geometry at steps 0, 2
and 4 under the same keys, and the regularisers must log ``regulariser/task_loss`` and
``regulariser/penalty`` separately in both (their sum is the optimised loss).
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
L = pytest.importorskip("lightning")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

NAMES = ("isoscore", "cosine_similarity_mean")


def _data():
    g = torch.Generator().manual_seed(2)
    return [{"input_ids": torch.randint(5, 19, (7,), generator=g), "attention_mask": torch.ones(7, dtype=torch.long),
             "labels": torch.tensor(i % 2)} for i in range(16)]


def _hf(tmp_path, callbacks, compute_loss_func=None):
    from _lightning_geometry_run import tiny_bert
    from transformers import Trainer, TrainingArguments

    args = TrainingArguments(output_dir=str(tmp_path / "hf"), per_device_train_batch_size=4, max_steps=4,
                             learning_rate=0.1, optim="sgd", lr_scheduler_type="constant", logging_steps=1,
                             save_strategy="no", report_to=[], use_cpu=True, seed=0, disable_tqdm=True)
    trainer = Trainer(model=tiny_bert(), args=args, train_dataset=_data(), callbacks=callbacks,
                      compute_loss_func=compute_loss_func)
    trainer.train()
    return trainer.state.log_history


class _Module(L.LightningModule):
    def __init__(self, regulariser=None):
        super().__init__()
        from _lightning_geometry_run import tiny_bert

        self.model, self.regulariser = tiny_bert(), regulariser

    def training_step(self, batch, batch_idx):
        out = self.model(**batch, output_hidden_states=self.regulariser is not None)
        loss = out.loss
        if self.regulariser is not None and self.regulariser.weight != 12345:
            loss = loss + self.regulariser.penalty(out.hidden_states, batch["attention_mask"])
        self.log("loss", loss, on_step=True, on_epoch=False, batch_size=4)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def _lightning(tmp_path, module, callbacks):
    from lightning.pytorch.loggers import CSVLogger

    trainer = L.Trainer(accelerator="cpu", devices=1, max_steps=4, logger=CSVLogger(tmp_path / "csv", name="run"),
                        callbacks=callbacks, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, log_every_n_steps=1)
    trainer.fit(module, torch.utils.data.DataLoader(_data(), batch_size=4))
    (path,) = (tmp_path / "csv").rglob("metrics.csv")
    return list(csv.DictReader(path.open()))


def _steps_and_keys(entries):
    found = {}
    for entry in entries:
        for key, value in entry.items():
            if key.startswith(("geometry/", "regulariser/")) and value not in ("", None):
                found.setdefault(key, set()).add(int(entry["step"]))
    return found


def test_geometry_callbacks_log_the_same_keys_at_the_same_steps(tmp_path):
    from _lightning_geometry_run import probe_inputs

    from isotropy.training import HFGeometryCallback, LightningGeometryCallback

    hf = _hf(tmp_path, [HFGeometryCallback(probe_inputs(), every_n_steps=2, metrics=NAMES)])
    lightning = _lightning(tmp_path, _Module(),
                           [LightningGeometryCallback(probe_inputs(), every_n_steps=2, metrics=NAMES, model="model")])
    hf_found, lightning_found = _steps_and_keys(hf), _steps_and_keys(lightning)
    assert hf_found == lightning_found
    assert sorted(hf_found) == sorted(f"geometry/{n}/layer_{i}" for n in NAMES for i in (1, 2))
    assert all(steps == {0, 2, 4} for steps in hf_found.values())
    # Lightning: geometry at step s sits beside the loss that batch logged at step s
    loss_steps = {int(r["step"]) for r in lightning if r.get("loss")}
    assert {0, 2} <= loss_steps


def test_both_callbacks_measure_the_trained_weights_after_the_last_step(tmp_path):
    # max_steps=4 with every_n_steps=3: before, neither measured the weights after step 4 (the Lightning docs said
    # it did); the HF values at step 4 are those of the trained model
    from _lightning_geometry_run import probe_inputs

    from isotropy.training import HFGeometryCallback, LightningGeometryCallback

    hf_callback = HFGeometryCallback(probe_inputs(), every_n_steps=3, metrics=NAMES)
    hf = _hf(tmp_path, [hf_callback])
    lightning = _lightning(tmp_path, _Module(),
                           [LightningGeometryCallback(probe_inputs(), every_n_steps=3, metrics=NAMES, model="model")])
    for found in (_steps_and_keys(hf), _steps_and_keys(lightning)):
        assert found and all(steps == {0, 3, 4} for steps in found.values())
    assert [step for step, _ in hf_callback.history] == [0, 3, 4]


def test_regularisers_log_task_loss_and_penalty_separately_in_both(tmp_path):
    from isotropy.training import HFRegulariser, LightningRegulariser

    hf_reg = HFRegulariser("cosreg", weight=0.5, level="sentence")
    hf = _hf(tmp_path, [hf_reg], compute_loss_func=hf_reg)
    lightning = _lightning(tmp_path, _Module(reg := LightningRegulariser("cosreg", weight=0.5, level="sentence")),
                           [reg])
    hf_found, lightning_found = _steps_and_keys(hf), _steps_and_keys(lightning)
    assert set(hf_found) == set(lightning_found) == {"regulariser/task_loss", "regulariser/penalty"}
    assert hf_found["regulariser/penalty"] == {1, 2, 3, 4} and lightning_found["regulariser/penalty"] == {0, 1, 2, 3}
    by_step = {}
    for entry in hf:
        by_step.setdefault(entry["step"], {}).update(entry)
    for step in (1, 2, 3, 4):
        entry = by_step[step]
        assert entry["regulariser/task_loss"] > 0 and entry["regulariser/penalty"] > 0
        assert entry["loss"] == pytest.approx(entry["regulariser/task_loss"] + entry["regulariser/penalty"], rel=1e-3)
    for row in lightning:
        if row.get("regulariser/penalty"):
            assert float(row["loss"]) == pytest.approx(float(row["regulariser/task_loss"])
                                                       + float(row["regulariser/penalty"]), rel=1e-6)


def test_a_regulariser_only_passed_as_a_callback_is_an_error(tmp_path):
    from isotropy.training import HFRegulariser, LightningRegulariser

    with pytest.raises(ValueError, match="compute_loss_func"):
        _hf(tmp_path, [HFRegulariser("cosreg", weight=0.5)])
    reg = LightningRegulariser("cosreg", weight=12345)  # the module's marker: do not add the penalty
    with pytest.raises(ValueError, match=r"never called reg.penalty"):
        _lightning(tmp_path, _Module(reg), [reg])
    # the other way round: the penalty added in training_step, the regulariser not among the callbacks; before,
    # training ran without Σ_S's sample (the identity instead) and without the regulariser's logs, without a word
    with pytest.raises(ValueError, match=r"^LightningRegulariser.penalty was called with gradients outside a training "
                                         r"batch of a Trainer it is a callback of: pass it to the Trainer too"):
        _lightning(tmp_path, _Module(LightningRegulariser("cosreg", weight=0.5, level="sentence")), [])


@pytest.mark.parametrize(("factory", "message"), [
    (lambda T: T.HFGeometryCallback(["a b", "c d", "e f"], on_evaluate="yes"), "'on_evaluate' parameter"),
    (lambda T: T.LightningGeometryCallback(["a b", "c d", "e f"], model=3), "'model' parameter"),
    (lambda T: T.LightningGeometryCallback(["a b", "c d", "e f"], layers="x"), "'layers' parameter"),
    (lambda T: T.HFGeometryCallback(["a b", "c d", "e f"], tokenizer=3), "'tokenizer' parameter"),
    (lambda T: T.LightningRegulariser("cosreg", model=3.5), "'model' parameter"),
    (lambda T: T.HFRegulariser("cosreg", tokenizer="bert"), "'tokenizer' parameter"),
    (lambda T: T.GeometryProbe(["a b", "c d", "e f"], prefix=""), "'prefix' parameter"),
])
def test_every_argument_is_checked_in_the_constructor(factory, message):
    import isotropy.training as T

    with pytest.raises((ValueError, TypeError), match=message):
        factory(T)


def test_isoscore_star_rule_in_the_callbacks(caplog):
    import logging

    from isotropy.training import HFGeometryCallback, LightningGeometryCallback

    probe = ["a b", "c d", "e f"]
    with caplog.at_level(logging.INFO, logger="isotropy.training"):
        default = LightningGeometryCallback(probe)
    assert "isoscore_star" not in default.probe.metric_factories and "isoscore_star left out" in caplog.text
    assert "isoscore_star" in HFGeometryCallback(probe, shrinkage_sample=probe).probe.metric_factories
    with pytest.warns(UserWarning, match="tracks the vector norms"):
        HFGeometryCallback(probe, metrics=["isoscore_star"])


@pytest.mark.parametrize("trainer", ["hf", "lightning"])
def test_a_one_row_last_batch_trains_through_with_one_warning(tmp_path, trainer, monkeypatch):
    """9 rows in batches of 4: the third batch has 1 row, whose sentence-level penalty is undefined. Training stopped
    there (an experiments trial: "The 'H' parameter of istar_penalty must have at least 2 samples"); that batch now
    has no penalty, said once, and the run finishes its steps."""
    from isotropy.training import HFRegulariser, LightningRegulariser

    rows = _data()[:9]
    monkeypatch.setattr(sys.modules[__name__], "_data", lambda: rows)
    if trainer == "hf":
        reg = HFRegulariser("cosreg", weight=0.5, level="sentence", layers="last")
        with pytest.warns(UserWarning) as caught:
            log = _hf(tmp_path, [reg], compute_loss_func=reg)
        steps = sorted({e["step"] for e in log if "regulariser/penalty" in e})
    else:
        reg = LightningRegulariser("cosreg", weight=0.5, level="sentence", layers="last")
        with pytest.warns(UserWarning) as caught:
            log = _lightning(tmp_path, _Module(reg), [reg])
        steps = sorted({int(e["step"]) for e in log if e.get("regulariser/penalty")})
    said = [str(w.message) for w in caught if "a training batch gave 1 regularised state" in str(w.message)]
    assert len(said) == 1 and "(level='sentence'); cosreg's penalty needs at least 2" in said[0]
    assert len(steps) == 4  # max_steps: the run went past the one-row batch (the third)
