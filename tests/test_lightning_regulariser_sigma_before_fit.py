"""LightningRegulariser's penalty outside training uses the Σ_S of its shrinkage_sample, not Σ_S = I.

Σ_S was computed only in on_train_epoch_start: ``trainer.validate`` before ``fit`` and the sanity check inside ``fit``
gave a penalty of Σ_S = I (``reg.shrinkage_cov is None``), without a word. The references here are independent: the
sample embedded by hand (eval mode, no gradients), :func:`isotropy.torch.shrinkage_covariance` of its token states of
layers 1..L, and :func:`isotropy.torch.istar_penalty` of the validation batch's.
"""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
L = pytest.importorskip("lightning")

from isotropy._utils.validation import IsotropyValueError
from isotropy.torch import istar_penalty, shrinkage_covariance
from isotropy.training import LightningRegulariser

WEIGHT, ZETA = 1.0, 0.2


def _config():
    from transformers import BertConfig

    return BertConfig(vocab_size=19, hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=16,
                      max_position_embeddings=16)


def _data():
    g = torch.Generator().manual_seed(3)
    lengths = torch.tensor([6, 4, 5, 6, 3, 6, 2, 5, 6])
    sample = {"input_ids": torch.randint(5, 19, (9, 6), generator=g),
              "attention_mask": (torch.arange(6)[None] < lengths[:, None]).long()}
    rows = [{"input_ids": torch.randint(5, 19, (6,), generator=g),
             "attention_mask": (torch.arange(6) < 6 - i % 3).long()} for i in range(8)]
    return sample, rows


def _module(reg, seed):
    from transformers import BertModel

    class Module(L.LightningModule):
        def __init__(self):
            super().__init__()
            torch.manual_seed(seed)
            self.model = BertModel(_config()).double()
            self.sanity = []  # the penalties of the sanity check's batches

        def training_step(self, batch, batch_idx):
            out = self.model(**batch, output_hidden_states=True)
            return out.last_hidden_state.pow(2).mean() + reg.penalty(out.hidden_states, batch["attention_mask"])

        def validation_step(self, batch, batch_idx):
            out = self.model(**batch, output_hidden_states=True)
            value = reg.penalty(out.hidden_states, batch["attention_mask"])
            if self.trainer.sanity_checking:
                self.sanity.append(float(value))
            self.log("val_pen", value, batch_size=len(batch["input_ids"]))

        def test_step(self, batch, batch_idx):
            self.validation_step(batch, batch_idx)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.5)

    return Module()


def _trainer(**kwargs):
    options = {"accelerator": "cpu", "logger": False, "enable_checkpointing": False, "enable_progress_bar": False,
               "enable_model_summary": False, **kwargs}
    return L.Trainer(**options)


def _token_states(encoder, batch):
    """Token states (no padding) of layers 1..L, stacked, by hand: the encoder in eval mode, no gradients."""
    encoder = copy.deepcopy(encoder).eval()
    with torch.no_grad():
        hidden = encoder(**batch, output_hidden_states=True).hidden_states
    keep = batch["attention_mask"].bool()
    return torch.cat([h[keep] for h in hidden[1:]])


def _expected(encoder, sample, rows):
    """(Σ_S of the sample, the penalty of the batch of all ``rows`` with it, the same with Σ_S = I)."""
    S = shrinkage_covariance(_token_states(encoder, sample))
    batch = torch.utils.data.default_collate(rows)
    H = _token_states(encoder, batch)
    return (S, WEIGHT * float(istar_penalty(H, shrinkage_cov=S, zeta=ZETA)),
            WEIGHT * float(istar_penalty(H, shrinkage_cov=torch.eye(S.shape[0], dtype=S.dtype), zeta=ZETA)))


def _reg(sample):
    return LightningRegulariser("istar", weight=WEIGHT, zeta=ZETA, shrinkage_sample=sample, model="model")


def test_validate_before_fit_uses_the_sigma_of_the_shrinkage_sample():
    sample, rows = _data()
    reg = _reg(sample)
    module = _module(reg, seed=0)
    S, expected, identity = _expected(module.model, sample, rows)
    assert abs(expected - identity) > 1e-3  # the two differ: the value below tells them apart
    loader = torch.utils.data.DataLoader(rows, batch_size=len(rows))
    (result,) = _trainer(callbacks=[reg]).validate(module, loader)
    assert result["val_pen"] == pytest.approx(expected, rel=1e-10)
    assert torch.allclose(reg.shrinkage_cov, S, rtol=1e-10, atol=1e-13)
    assert reg.shrinkage_epoch is None  # no training epoch's Σ_S (nothing for a checkpoint to keep)
    assert not reg.shrinkage_cov.is_inference()  # made outside Lightning's inference mode: training can use it
    (tested,) = _trainer(callbacks=[reg]).test(module, loader)  # test() the same (Σ_S kept: computed from these weights)
    assert tested["val_pen"] == pytest.approx(expected, rel=1e-10)


def test_the_sanity_check_of_fit_uses_the_sigma_of_the_fits_own_weights():
    """The sanity check (num_sanity_val_steps) runs before the first training epoch: it computes Σ_S from the
    module's weights, the Σ_S epoch 0 then uses. A second fit of another module with the same regulariser does not
    reuse the first fit's Σ_S (other weights) in its sanity check."""
    sample, rows = _data()
    reg = _reg(sample)
    seen = []

    class Record(L.Callback):
        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            seen.append(reg.shrinkage_cov.clone())

    loader = torch.utils.data.DataLoader(rows, batch_size=len(rows))
    for seed in (0, 1):
        module = _module(reg, seed=seed)
        S, expected, identity = _expected(module.model, sample, rows)
        assert abs(expected - identity) > 1e-3
        seen.clear()
        _trainer(max_epochs=1, num_sanity_val_steps=1, callbacks=[reg, Record()]).fit(module, loader, loader)
        assert module.sanity == [pytest.approx(expected, rel=1e-10)]
        assert torch.allclose(seen[0], S, rtol=1e-10, atol=1e-13)  # epoch 0's Σ_S: of the same weights


def test_validate_with_a_checkpoint_keeps_its_restored_sigma(tmp_path):
    """validate(ckpt_path=...) restores the callback's Σ_S (computed at the start of the checkpoint's epoch, from
    weights before its training steps): the evaluation uses it, not one recomputed from the restored weights."""
    sample, rows = _data()
    reg = _reg(sample)
    module = _module(reg, seed=0)
    loader = torch.utils.data.DataLoader(rows, batch_size=4)
    trainer = _trainer(max_epochs=1, num_sanity_val_steps=0, callbacks=[reg])
    trainer.fit(module, loader)
    trainer.save_checkpoint(tmp_path / "one.ckpt")
    saved = reg.shrinkage_cov.clone()
    assert reg.shrinkage_epoch == 0
    fresh = _reg(sample)
    other = _module(fresh, seed=1)
    batch = torch.utils.data.DataLoader(rows, batch_size=len(rows))
    (result,) = _trainer(callbacks=[fresh]).validate(other, batch, ckpt_path=tmp_path / "one.ckpt", weights_only=False)
    assert torch.equal(fresh.shrinkage_cov, saved)
    H = _token_states(other.model, torch.utils.data.default_collate(rows))  # the checkpoint's weights, restored
    assert result["val_pen"] == pytest.approx(WEIGHT * float(istar_penalty(H, shrinkage_cov=saved, zeta=ZETA)),
                                              rel=1e-10)
    recomputed = shrinkage_covariance(_token_states(other.model, sample))
    assert not torch.allclose(recomputed, saved)  # training moved the weights: keeping it is observable


def test_penalty_before_any_sigma_outside_a_trainer_is_refused():
    sample, rows = _data()
    reg = _reg(sample)
    module = _module(reg, seed=0)
    batch = torch.utils.data.default_collate(rows)
    with torch.no_grad():
        hidden = module.model.eval()(**batch, output_hidden_states=True).hidden_states
    with pytest.raises(IsotropyValueError, match=r"^LightningRegulariser.penalty was called before Σ_S was computed "
                                                 r"from the shrinkage_sample: .*call reg.refresh\(model\) first"):
        reg.penalty(hidden, batch["attention_mask"])
    _, expected, _ = _expected(module.model, sample, rows)
    assert float(reg.refresh(module.model).penalty(hidden, batch["attention_mask"])) == pytest.approx(expected,
                                                                                                      rel=1e-10)
