"""Per-layer geometry of a probe set, logged from a Lightning ``Trainer`` (a ``lightning.Callback``)."""

from __future__ import annotations

import numbers

from isotropy._utils.install import extra_imports

with extra_imports("isotropy.training", "train"):  # a missing package named with its extra, in one line
    import torch
    from lightning.pytorch.callbacks import Callback

from isotropy._utils.validation import IsotropyValueError, check_bool, check_scalar
from isotropy.training.probe import _MAX_LENGTH, _ZETA, GeometryProbe, check_tokenizer

__all__ = ["LightningGeometryCallback", "check_model", "resolve_submodule"]


def check_model(model, caller):
    """``None``, an attribute name or a callable: the ``model`` option of the Lightning classes (checked at construction)."""
    if model is not None and not isinstance(model, str) and not callable(model):
        raise TypeError(f"The 'model' parameter of {caller} must be None, an attribute name or a callable. "
                        f"Got {type(model).__name__} instead.")
    return model


def resolve_submodule(pl_module, model, caller):
    """The module to call: ``pl_module`` itself, its attribute named ``model``, or ``model(pl_module)``."""
    if model is None:
        # torch's placeholder (LightningModule's forward only calls it): calling it raised a bare TypeError
        if getattr(type(pl_module).forward, "__qualname__", "") in ("_forward_unimplemented",
                                                                      "LightningModule.forward"):
            names = _module_attributes(pl_module)
            raise IsotropyValueError(f"The LightningModule given to {caller} has no forward method, so it cannot embed "
                                     f"the probe itself: pass model= naming its transformers model"
                                     f"{' (' + ', '.join(repr(n) for n in names) + ')' if names else ''}, or a "
                                     f"callable.")
        return pl_module
    if isinstance(model, str):
        found = getattr(pl_module, model, None)
        if not isinstance(found, torch.nn.Module):
            from isotropy._utils.suggest import did_you_mean

            got = "no such attribute" if not hasattr(pl_module, model) else type(found).__name__
            raise IsotropyValueError(f"The 'model' parameter of {caller} must name a torch.nn.Module attribute of the "
                                     f"LightningModule. Got {model!r} ({got}) instead."
                                     f"{did_you_mean(model, _module_attributes(pl_module))}")
        return found
    if callable(model):
        module = model(pl_module)
        if not isinstance(module, torch.nn.Module):  # a function of a batch: the probe cannot put it in eval mode
            from isotropy.training.probe import _named

            raise TypeError(f"The 'model' parameter of {caller} must be None, an attribute name or a callable "
                            f"returning a torch.nn.Module (model(pl_module)). Got a callable returning "
                            f"{_named(module)} instead.")
        return module
    raise TypeError(f"The 'model' parameter of {caller} must be None, an attribute name or a callable. "
                    f"Got {type(model).__name__} instead.")


def _module_attributes(pl_module) -> list[str]:
    """The names of the LightningModule's direct sub-modules (what ``model=`` may name)."""
    return [name for name, _ in pl_module.named_children()]


def _find_tokenizer(trainer, pl_module):
    for owner in (pl_module, getattr(trainer, "datamodule", None)):
        tokenizer = getattr(owner, "tokenizer", None) if owner is not None else None
        if tokenizer is not None:
            return tokenizer
    return None


class LightningGeometryCallback(Callback):
    """Log IsoScore, IsoScore*, mean cosine, ... of every layer of a model trained with Lightning.

    Before the first step (step 0; not when resuming from a checkpoint, whose run measured its step),
    every ``every_n_steps`` optimiser steps (``trainer.global_step``),
    after the last step and at the end of every validation epoch, the probe is embedded by the model
    (eval mode, no gradients, then back to train mode) and the per-layer metrics are sent to every
    logger of the Trainer (TensorBoard, CSV, W&B) as ``geometry/<metric>/layer_<i>`` at step
    ``trainer.global_step``, and put in ``trainer.callback_metrics`` (for
    ``ModelCheckpoint(monitor=...)`` and the like). The shared core is
    :class:`isotropy.training.GeometryProbe`.

    Same keys and steps as :class:`isotropy.training.HFGeometryCallback`: the value at step ``s``
    is that of the weights after ``s`` optimiser steps. It is measured at the start of the batch
    that trains from those weights, so it sits at the step of that batch's own ``self.log``
    values (Lightning logs a batch at the number of optimiser steps before it), not one step later.

    Parameters
    ----------
    probe : list of str (or a 1-d array or Series of str) or dict of tensors
        Texts (tokenised with ``tokenizer``, else ``pl_module.tokenizer``, else
        ``trainer.datamodule.tokenizer``) or encoded inputs (``input_ids``, ``attention_mask``).
    every_n_steps : int, default=100
    layers, pooling, metrics, shrinkage_sample, zeta, batch_size, max_length
        As :class:`isotropy.training.HFGeometryCallback`.
    model : None, str or callable, default=None
        What to call for hidden states: the LightningModule itself (``None``), its attribute of that
        name (e.g. ``"model"`` for a wrapped transformers model) or ``model(pl_module)``, which must
        return a ``torch.nn.Module`` (a function of a batch is refused: it has no eval mode). It is
        called as ``model(**inputs, output_hidden_states=True, return_dict=True)`` (its
        ``base_model`` where that gives exactly the same hidden states, as for
        :class:`isotropy.training.HFGeometryCallback`: the task head is not run).
    tokenizer : transformers tokenizer, optional
    on_validation : bool, default=True
        Also measure at the end of each validation epoch (not during the sanity check).

    Notes
    -----
    Under DDP every process embeds its share of the probe and the metric states of every process
    are gathered and merged inside ``compute`` (the table's metrics: gathered with
    ``dist_reduce_fx="cat"``, merged exactly; a factory's metric by its own reduction); the values
    are therefore already global (the loggers
    write them from rank 0). They go to the loggers directly rather than through
    ``pl_module.log``, which would repeat the last value at every later step of the epoch.

    Examples
    --------
    >>> from isotropy.training import LightningGeometryCallback
    >>> callback = LightningGeometryCallback(["one", "two", "three"], every_n_steps=10, model="model")
    >>> callback.every_n_steps
    10
    """

    def __init__(self, probe, *, every_n_steps=100, layers="all", pooling="mean", metrics=None,
                 shrinkage_sample=None, zeta=_ZETA, model=None, tokenizer=None, batch_size=32, max_length=_MAX_LENGTH,
                 on_validation=True):
        caller = "LightningGeometryCallback"
        self.every_n_steps = int(check_scalar(every_n_steps, "every_n_steps", caller=caller, kind=numbers.Integral,
                                              low=1))
        self.probe = GeometryProbe(probe, layers=layers, pooling=pooling, metrics=metrics, batch_size=batch_size,
                                   max_length=max_length, shrinkage_sample=shrinkage_sample, zeta=zeta, caller=caller)
        self.model = check_model(model, caller)
        self.tokenizer = check_tokenizer(tokenizer, caller)
        self.probe.refuse_unused(tokenizer=tokenizer)
        self.measure_on_validation = check_bool(on_validation, "on_validation", caller=caller)
        self._last_step = None
        self.history = []  # (global_step, values) of every measurement, on every rank

    def _measure(self, trainer, pl_module):
        self.probe.set_tokenizer(self.tokenizer or _find_tokenizer(trainer, pl_module))
        values = self.probe.measure(resolve_submodule(pl_module, self.model, "LightningGeometryCallback"))
        self._last_step = trainer.global_step
        self.history.append((trainer.global_step, values))
        return values

    def _log(self, trainer, values):
        # straight to the Trainer's loggers at the current global step: pl_module.log would re-send
        # the last value at every later step of the epoch (Lightning keeps step results until the
        # epoch ends), drawing flat segments between two measurements
        for logger in trainer.loggers:
            logger.log_metrics(dict(values), step=trainer.global_step)
        # and visible to the other callbacks (ModelCheckpoint(monitor=...), EarlyStopping, ...)
        trainer.callback_metrics.update({key: torch.tensor(value, dtype=torch.float64)
                                         for key, value in values.items()})

    def on_train_start(self, trainer, pl_module):
        # resumed from a checkpoint (ckpt_path=): its step was measured by the run that saved it, so the first batch
        # of this run does not log it again; a fresh run measures step 0
        self._last_step = trainer.global_step if trainer.global_step > 0 else None
        # a probe the model cannot run is refused now, not at the first measurement of a resumed run (every_n_steps
        # later, after those steps had trained)
        self.probe.set_tokenizer(self.tokenizer or _find_tokenizer(trainer, pl_module))
        self.probe.check_model(resolve_submodule(pl_module, self.model, "LightningGeometryCallback"))

    def _due(self, trainer):
        step = trainer.global_step
        return step % self.every_n_steps == 0 and step != self._last_step

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        # the weights after global_step optimiser steps, before this batch trains them: step 0 included, and the
        # same step as this batch's own logged values
        if self._due(trainer):
            self._log(trainer, self._measure(trainer, pl_module))

    def on_train_end(self, trainer, pl_module):
        # the trained weights, whether or not the last step is a multiple of every_n_steps (max_steps=5, every 3:
        # 0, 3, 5; before, the weights after step 5 were never measured)
        if trainer.global_step != self._last_step:
            self._log(trainer, self._measure(trainer, pl_module))

    def on_validation_epoch_end(self, trainer, pl_module):
        if not self.measure_on_validation or trainer.sanity_checking or trainer.global_step == self._last_step:
            return
        self._log(trainer, self._measure(trainer, pl_module))
