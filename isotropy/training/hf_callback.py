"""Per-layer geometry of a probe set, logged from a Hugging Face ``Trainer`` (a ``TrainerCallback``)."""

from __future__ import annotations

import inspect
import numbers

from isotropy._utils.install import extra_imports

with extra_imports("isotropy.training", "train"):  # a missing package named with its extra, in one line
    from transformers import Trainer, TrainerCallback

from isotropy._utils.validation import IsotropyValueError, check_bool, check_scalar
from isotropy.training.probe import _MAX_LENGTH, _ZETA, GeometryProbe, check_tokenizer

__all__ = ["HFGeometryCallback"]


def _trainer_frames():
    """The local variables of each frame on the call stack that runs a ``Trainer`` method (``self`` a Trainer),
    innermost first."""
    frame = inspect.currentframe()
    try:
        while frame is not None:
            if isinstance(frame.f_locals.get("self"), Trainer):
                yield frame.f_locals
            frame = frame.f_back
    finally:
        del frame


def _calling_trainer():
    """The ``Trainer`` whose loop is calling the current callback event (found on the call stack)."""
    return next((local["self"] for local in _trainer_frames()), None)


class HFGeometryCallback(TrainerCallback):
    """Log IsoScore, IsoScore*, mean cosine, ... of every layer of the model being trained.

    At the start of training (step 0; not when resuming from a checkpoint, whose history holds its
    steps), every ``every_n_steps`` optimiser steps, after the last step
    (unless ``load_best_model_at_end``, which swaps in the best checkpoint first) and after every
    evaluation, the probe is embedded by the model being trained (eval mode, no gradients, then
    back to train mode), each chosen layer is pooled to one vector per probe row, and the metrics
    are logged through the Trainer's own ``log`` as ``geometry/<metric>/layer_<i>``: they land in
    ``trainer_state.json``'s ``log_history`` and in every logger the run reports to
    (``report_to``: TensorBoard, W&B, ...).

    Parameters
    ----------
    probe : list of str (or a 1-d array or Series of str) or dict of tensors
        Texts, tokenised with the Trainer's ``processing_class`` (or ``tokenizer``), or encoded
        inputs (``input_ids``, optional ``attention_mask``). Keep it small (hundreds of rows): it is
        embedded every ``every_n_steps`` steps.
    every_n_steps : int, default=100
        Measure when ``global_step`` is a multiple of this.
    layers : "all", "last", int, str or list of int, default="all"
        Entries of ``hidden_states`` (:func:`isotropy.models.select_layers`): ``"all"`` = every
        transformer layer 1..L; 0 (embedding output) only when listed. Checked here.
    pooling : {"mean", "last", "first"}, default="mean"
        Masked mean, last non-padding token or first token ([CLS]).
    metrics : sequence of str or dict, optional
        Names of :mod:`isotropy.metrics.table` (see :class:`isotropy.training.GeometryProbe`). Default:
        ``isoscore``, ``cosine_similarity_mean``, ``rogue_dimension_share``, plus ``isoscore_star``
        when ``shrinkage_sample`` is given (asked for without one, it warns: it then tracks vector
        norms). Add ``"twonn_dimension"``, ``"participation_ratio"``, ``"effective_rank"``, ``"rankme"``.
    shrinkage_sample : list of str (or a 1-d array or Series of str) or dict of tensors, optional
        A larger sample whose per-layer covariance (under the current model) is Σ_S of
        ``isoscore_star``; ``None`` uses the identity. See :class:`isotropy.training.GeometryProbe`.
    zeta : float in [0, 1] or 0-d tensor, default=0.2
        Shrinkage weight of ``isoscore_star``; a 0-d real tensor or array is read once as a float,
        as by :func:`isotropy.isoscore_star`.
    tokenizer : transformers tokenizer, optional
        Overrides the Trainer's ``processing_class`` for text probes.
    batch_size : int, default=32
    max_length : int, default=128
    on_evaluate : bool, default=True
        Also measure after each evaluation (once per step).

    Notes
    -----
    Under DDP every process embeds its share of the probe (rows ``rank::world_size``; of a probe
    of texts, every ``world_size``-th distinct token sequence with all its rows) and the metric
    states of every process are gathered and merged in ``compute`` (the table's metrics: gathered with
    ``dist_reduce_fx="cat"``, merged exactly; a factory's metric by its own reduction), so the logged value is
    that of the whole probe.
    The model is called as ``model(**inputs, output_hidden_states=True, return_dict=True)`` on the
    device of its parameters; its ``base_model`` instead where that gives exactly the same hidden
    states (checked once on two probe rows; not for several processes, compiled or FSDP models,
    nor with ``forward_kwargs``): the task head (classifier, LM head) is not run.

    Examples
    --------
    >>> from isotropy.training import HFGeometryCallback
    >>> callback = HFGeometryCallback(["a probe sentence", "another one", "and a third"], every_n_steps=50)
    >>> callback.probe.n_rows, callback.every_n_steps
    (3, 50)

    Add it to an existing script with ``Trainer(..., callbacks=[callback])`` or
    ``trainer.add_callback(callback)``.
    """

    def __init__(self, probe, *, every_n_steps=100, layers="all", pooling="mean", metrics=None,
                 shrinkage_sample=None, zeta=_ZETA, tokenizer=None, batch_size=32, max_length=_MAX_LENGTH,
                 on_evaluate=True):
        caller = "HFGeometryCallback"
        self.every_n_steps = int(check_scalar(every_n_steps, "every_n_steps", caller=caller, kind=numbers.Integral,
                                              low=1))
        self.probe = GeometryProbe(probe, layers=layers, pooling=pooling, metrics=metrics, batch_size=batch_size,
                                   max_length=max_length, shrinkage_sample=shrinkage_sample, zeta=zeta, caller=caller)
        self.probe.set_tokenizer(check_tokenizer(tokenizer, caller))
        self.probe.refuse_unused(tokenizer=tokenizer)
        self._user_tokenizer = tokenizer is not None
        self.measure_on_evaluate = check_bool(on_evaluate, "on_evaluate", caller=caller)
        self._last_step = None
        self.history = []  # (global_step, values) of every measurement, on every rank

    def _measure_and_log(self, state, control, model, kwargs):
        if model is None or self._last_step == state.global_step:
            return
        if not self._user_tokenizer:
            self.probe.set_tokenizer(kwargs.get("processing_class") or kwargs.get("tokenizer"))
        trainer = _calling_trainer()
        if trainer is None:
            raise IsotropyValueError("HFGeometryCallback must be called by a transformers Trainer (its events log "
                                     "through Trainer.log). Got an event from outside a Trainer instead.")
        values = self.probe.measure(model)
        self._last_step = state.global_step
        self.history.append((state.global_step, values))
        # Trainer.log runs the on_log events, which clear control.should_log: keep the Trainer's own plans
        flags = (control.should_log, control.should_evaluate, control.should_save)
        trainer.log(dict(values))
        control.should_log, control.should_evaluate, control.should_save = flags

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        if model is not None:  # a probe the model cannot run is refused now, not at the first measurement of a
            # resumed run (every_n_steps later, after those steps had trained)
            if not self._user_tokenizer:
                self.probe.set_tokenizer(kwargs.get("processing_class") or kwargs.get("tokenizer"))
            self.probe.check_model(model)
        if state.global_step > 0:  # resumed from a checkpoint: its step was measured before it was saved
            self._last_step = state.global_step
            return
        self._last_step = None
        self._measure_and_log(state, control, model, kwargs)

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if state.global_step % self.every_n_steps == 0:
            self._measure_and_log(state, control, model, kwargs)

    def on_train_end(self, args, state, control, model=None, **kwargs):
        # the trained weights, when the last step is not a multiple of every_n_steps (max_steps=5, every 3: 0, 3, 5);
        # not with load_best_model_at_end, whose best checkpoint the Trainer has loaded by now: its geometry would be
        # logged at the last step as the trained weights'
        if not getattr(args, "load_best_model_at_end", False):
            self._measure_and_log(state, control, model, kwargs)

    def on_evaluate(self, args, state, control, model=None, **kwargs):
        if self.measure_on_evaluate:
            self._measure_and_log(state, control, model, kwargs)
