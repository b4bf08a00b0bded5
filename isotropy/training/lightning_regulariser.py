"""I-STAR / CosReg as a drop-in for a Lightning module: a callback refreshing Σ_S, plus ``penalty``."""

from __future__ import annotations

from isotropy._utils.install import extra_imports

with extra_imports("isotropy.training", "train"):  # a missing package named with its extra, in one line
    import torch
    from lightning.pytorch.callbacks import Callback
    from lightning.pytorch.trainer.states import TrainerFn

from isotropy._utils.validation import IsotropyValueError
from isotropy.training.lightning_callback import _find_tokenizer, check_model, resolve_submodule
from isotropy.training.probe import check_tokenizer
from isotropy.training.regularisers import (
    _BATCH_SIZE,
    _MAX_LENGTH,
    _POOLING,
    _ZETA,
    LOG_KEYS,
    HiddenStateRegulariser,
    refuse_unused_sample_options,
)

__all__ = ["LightningRegulariser"]


class LightningRegulariser(HiddenStateRegulariser, Callback):
    """I-STAR / CosReg for a Lightning module: a callback that refreshes Σ_S, plus ``penalty``.

    Register it (``Trainer(callbacks=[reg])``) and add ``reg.penalty(out.hidden_states,
    batch["attention_mask"])`` to the loss in ``training_step`` (call the model with
    ``output_hidden_states=True``). Σ_S is recomputed from ``shrinkage_sample`` at the start
    of every training epoch; a validation, test or prediction run (``trainer.validate`` before ``fit``,
    the sanity check of ``fit``) that finds none computes it at its start the same way, so its
    ``penalty`` is the one training would give. After each batch the penalty and the task loss (the loss returned
    by ``training_step`` minus the penalty) are logged with ``pl_module.log`` as
    ``regulariser/penalty`` and ``regulariser/task_loss``, at the batch's own step, as
    :class:`HFRegulariser` logs them. Under ``accumulate_grad_batches=k`` they are the means over the
    step's micro-batches so far, so the value a logger keeps for a step (its last micro-batch's) is
    the step's mean. A batch whose ``training_step`` did not call ``penalty`` raises
    (registered as a callback but not wired into the loss).

    Parameters
    ----------
    method, weight, zeta, shrinkage_sample, layers, level, pooling, batch_size, max_length
        See :class:`HiddenStateRegulariser`.
    model : None, str or callable, default=None
        What to call to embed the sample: the LightningModule, its attribute of that name, or
        ``model(pl_module)`` (as :class:`LightningGeometryCallback`). Refused with no sample, where
        nothing is embedded.
    tokenizer : transformers tokenizer, optional
        For a text sample; default ``pl_module.tokenizer`` or ``trainer.datamodule.tokenizer``. Refused
        with no sample or an encoded one, where nothing is tokenised.

    Examples
    --------
    >>> from isotropy.training import LightningRegulariser
    >>> LightningRegulariser("cosreg", weight=0.5).method
    'cosreg'
    """

    def __init__(self, method="istar", *, weight=1.0, zeta=_ZETA, shrinkage_sample=None, layers="all",
                 level="token", pooling=_POOLING, model=None, tokenizer=None, batch_size=_BATCH_SIZE, max_length=_MAX_LENGTH):
        # the model and tokenizer checked first: a refused model=3 came after the base's identity-shrinkage warning
        model = check_model(model, "LightningRegulariser")
        tokenizer = check_tokenizer(tokenizer, "LightningRegulariser")
        super().__init__(method, weight=weight, zeta=zeta, shrinkage_sample=shrinkage_sample, layers=layers,
                         level=level, pooling=pooling, batch_size=batch_size, max_length=max_length,
                         caller="LightningRegulariser")
        self.model = model
        refuse_unused_sample_options(shrinkage_sample, method=method, caller="LightningRegulariser", model=model,
                                     tokenizer=tokenizer)
        self.set_tokenizer(tokenizer)
        self._batch_penalty = None  # the sum of this batch's penalties (None: penalty not called yet)
        self._step = None  # (trainer.global_step, batch_idx) of the training batch in progress
        self._step_sums = None  # (global_step, task loss, penalty, micro-batches) of the optimiser step in progress
        self._restored = False  # Σ_S taken from a checkpoint for the fit about to start (load_state_dict)

    def _training_step(self):
        return None if self._step is None else f"global_step={self._step[0]} (trainer.global_step), batch_idx={self._step[1]}"

    def penalty(self, hidden_states, attention_mask=None):
        """``−λ·IsoScore*(H)`` or ``λ·mean_cos(H)``: add it to the loss returned by ``training_step``.

        ``hidden_states`` the model's (``output_hidden_states=True``), ``attention_mask`` the batch's
        (``None``: no padding); see :func:`isotropy.training.regularisers.regularised_states`.
        """
        if self.method == "istar" and self.sample is not None and self.shrinkage_cov is None:
            # outside the Trainer's hooks (called by hand, or not a callback): Σ_S = I would be used without a word
            raise IsotropyValueError("LightningRegulariser.penalty was called before Σ_S was computed from the "
                                     "shrinkage_sample: the Trainer it is a callback of (L.Trainer(..., "
                                     "callbacks=[reg])) computes it at the start of training, validation, testing and "
                                     "prediction; outside one, call reg.refresh(model) first, or use "
                                     "HiddenStateRegulariser.")
        value = super().penalty(hidden_states, attention_mask)
        if value.requires_grad and self._step is None:
            # a training step's penalty with no callback hook run: not one of the Trainer's callbacks, so Σ_S would
            # stay the identity (shrinkage_sample never embedded) and nothing be logged, without a word
            raise IsotropyValueError("LightningRegulariser.penalty was called with gradients outside a training batch "
                                     "of a Trainer it is a callback of: pass it to the Trainer too, "
                                     "L.Trainer(..., callbacks=[reg]) (it embeds the shrinkage_sample for Σ_S each "
                                     "epoch and logs the penalty). Outside Lightning, use HiddenStateRegulariser.")
        if value.requires_grad or self._batch_penalty is not None:
            self._batch_penalty = (self._batch_penalty or 0.0) + float(value.detach())
        return value

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self._batch_penalty = None
        self._step = (trainer.global_step, batch_idx)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        # the optimiser steps before this batch (global_step has moved already after a step's last micro-batch)
        step = trainer.global_step if self._step is None else self._step[0]
        self._step = None
        if self._batch_penalty is None:
            raise IsotropyValueError("LightningRegulariser is one of the Trainer's callbacks but training_step never "
                                     "called reg.penalty(...): add it to the loss, e.g. loss = out.loss + "
                                     "reg.penalty(out.hidden_states, batch['attention_mask']).")
        loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
        if loss is not None:
            # Lightning has divided the loss training_step returned by accumulate_grad_batches (automatic
            # optimisation): the task loss is that returned loss, less the penalty
            if getattr(pl_module, "automatic_optimization", True):
                loss = loss * trainer.accumulate_grad_batches
            loss = float(loss.detach())
        # the means over this optimiser step's micro-batches
        if self._step_sums is None or self._step_sums[0] != step:
            self._step_sums = [step, 0.0, 0.0, 0]
        if loss is not None:
            self._step_sums[1] += loss - self._batch_penalty
        self._step_sums[2] += self._batch_penalty
        self._step_sums[3] += 1
        count = self._step_sums[3]
        options = {"on_step": True, "on_epoch": False, "batch_size": 1}
        pl_module.log(LOG_KEYS[1], self._step_sums[2] / count, **options)
        if loss is not None:
            pl_module.log(LOG_KEYS[0], self._step_sums[1] / count, **options)

    def _embed_sample(self, trainer, pl_module, epoch):
        """Σ_S of ``epoch`` (:meth:`refresh_for_epoch`: the model in eval mode, no gradients; ``epoch`` is ``None``
        outside a fit)."""
        self.set_tokenizer(_find_tokenizer(trainer, pl_module))
        if self.method == "istar" and self.sample is not None:  # only Σ_S's sample is embedded by the module
            # (a run resumed within an epoch has that epoch's Σ_S from the checkpoint: load_state_dict). Lightning
            # evaluates under inference mode, whose tensors training could not use: Σ_S is made outside it
            with torch.inference_mode(False):
                self.refresh_for_epoch(resolve_submodule(pl_module, self.model, self.caller), epoch)

    def on_train_epoch_start(self, trainer, pl_module):
        self._embed_sample(trainer, pl_module, trainer.current_epoch)

    def on_fit_start(self, trainer, pl_module):
        # before the sanity check: a Σ_S of an earlier fit or evaluation (other weights) is never this one's; a
        # checkpoint's is (restored before this hook, or after it by strategies that restore after setup)
        if not self._restored:
            self.shrinkage_cov = self.shrinkage_epoch = None

    def on_train_start(self, trainer, pl_module):
        self._restored = False

    def _evaluation_start(self, trainer, pl_module):
        """Σ_S where none is computed yet (an evaluation before fit, the sanity check), as the training epoch's start
        computes it, so that ``penalty`` in validation_step and the like is not that of Σ_S = I; one kept (this
        fit's epoch's, a restored checkpoint's, the last fit's) is used as is."""
        fitting = trainer.state.fn == TrainerFn.FITTING
        if not fitting:  # validate(ckpt_path=...) restored Σ_S for this evaluation alone (kept below)
            self._restored = False
        if self.shrinkage_cov is None:  # the sanity check's is the epoch's about to start (the same weights)
            self._embed_sample(trainer, pl_module, trainer.current_epoch if fitting else None)

    def on_validation_start(self, trainer, pl_module):  # the sanity check of fit too
        self._evaluation_start(trainer, pl_module)

    def on_test_start(self, trainer, pl_module):
        self._evaluation_start(trainer, pl_module)

    def on_predict_start(self, trainer, pl_module):
        self._evaluation_start(trainer, pl_module)

    def state_dict(self):
        """Σ_S and the epoch it was computed at (:meth:`shrinkage_state`), kept in Lightning's checkpoints."""
        return self.shrinkage_state() or {}

    def load_state_dict(self, state_dict):
        if state_dict:
            self.load_shrinkage_state(dict(state_dict), source="the checkpoint's LightningRegulariser state")
            self._restored = True  # (fit(ckpt_path=...) restores the callbacks before on_train_start)
