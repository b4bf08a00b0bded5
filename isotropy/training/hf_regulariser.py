"""I-STAR / CosReg as a drop-in for a Hugging Face ``Trainer``: its ``compute_loss_func`` and a callback."""

from __future__ import annotations

from isotropy._utils.install import extra_imports

with extra_imports("isotropy.training", "train"):  # a missing package named with its extra, in one line
    import torch
    from transformers import TrainerCallback

from isotropy._utils.validation import IsotropyValueError
from isotropy.training.probe import _hidden_states, check_tokenizer
from isotropy.training.regularisers import (
    _BATCH_SIZE,
    _MAX_LENGTH,
    _POOLING,
    _ZETA,
    HiddenStateRegulariser,
    refuse_unused_sample_options,
)

__all__ = ["HFRegulariser"]


def _is_causal_lm(model) -> bool:
    """Whether ``model`` computes a next-token loss (its labels shifted by one): a decoder-only causal language model."""
    if model is None or getattr(getattr(model, "config", None), "is_encoder_decoder", False):
        return False
    if getattr(model, "loss_type", None) == "ForCausalLM":
        return True
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    name = type(model).__name__
    return name in set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values()) or name.endswith("ForCausalLM")


# Σ_S and its epoch, beside each checkpoint (HFRegulariser.on_save), read back when a run resumes from it.
_STATE_FILE = "isotropy_regulariser.pt"


def _epoch(state) -> int:
    """The epoch the Trainer is in (``state.epoch`` counts the epochs done in steps: 0.75 within the first, and at
    an epoch's start a sum of step fractions that may fall a rounding short of the whole number)."""
    import math

    return math.floor(float(state.epoch or 0) + 1e-6)


def _saved_shrinkage(args, state):
    """The regulariser's file in the checkpoint the Trainer is resuming from (``resume_from_checkpoint`` of its
    training loop, else ``output_dir/checkpoint-<global_step>``), or ``None``."""
    import os

    from isotropy.training.hf_callback import _trainer_frames

    folders = [os.fspath(local["resume_from_checkpoint"]) for local in _trainer_frames()
               if isinstance(local.get("resume_from_checkpoint"), (str, os.PathLike))]
    folders.append(os.path.join(args.output_dir, f"checkpoint-{state.global_step}"))
    for folder in folders:
        path = os.path.join(folder, _STATE_FILE)
        if os.path.isfile(path):
            return path
    return None


def _refuse_without_hidden_states(model, caller):
    """Refuse, in one line, a model whose forward cannot take ``output_hidden_states`` (the hook adds it to every training
    forward pass; the first one then raised torch's bare ``TypeError: forward() got an unexpected keyword argument``)."""
    import inspect

    try:
        parameters = inspect.signature(model.forward).parameters.values()
    except (TypeError, ValueError):  # no signature to read: the forward pass will tell
        return
    if any(p.kind is p.VAR_KEYWORD or p.name == "output_hidden_states" for p in parameters):
        return
    raise IsotropyValueError(f"{caller}: the model ({type(model).__name__}) cannot be called with "
                             f"output_hidden_states=True (its forward takes {', '.join(p.name for p in parameters)}); "
                             f"expected a transformers model, whose hidden states the penalty is computed on.")


def _default_task_loss(outputs, labels, num_items_in_batch=None, *, model=None):
    """The loss ``model`` computes for itself from ``labels``, summed and divided by ``num_items_in_batch`` (or the mean).

    As transformers' heads compute it: a causal language model, next-token cross-entropy (the labels shifted
    by one, -100 ignored); logits of one row per sample (sequence classification), by the model's
    ``config.problem_type`` or, unset, by transformers' rule: one output, mean squared error; integer labels,
    cross-entropy; float labels with several outputs, binary cross-entropy with logits (multi-label); logits of
    one row per token (token classification, masked LM), cross-entropy at every position, -100 ignored.
    Summed over the micro-batch and divided by ``num_items_in_batch`` (the Trainer's label count of the whole
    step) where given, so that a step of several micro-batches trains what one batch of all its rows would;
    otherwise the mean over the labels.
    """
    import torch.nn.functional as F

    logits = outputs["logits"] if isinstance(outputs, dict) else outputs.logits
    labels = labels.to(logits.device)
    reduction = "mean" if num_items_in_batch is None else "sum"

    def reduced(total):
        return total if num_items_in_batch is None else total / num_items_in_batch

    if _is_causal_lm(model):
        logits, labels = logits[..., :-1, :], labels[..., 1:]
    elif logits.dim() == 2 and labels.dim() <= 2:  # one row of logits per sample: a sequence-classification head
        problem = getattr(getattr(model, "config", None), "problem_type", None)
        if problem is None:
            integer = not (labels.is_floating_point() or labels.is_complex() or labels.dtype == torch.bool)
            problem = ("regression" if logits.shape[-1] == 1 else
                       "single_label_classification" if integer else "multi_label_classification")
        if problem == "regression":
            if logits.shape[-1] == 1:
                logits, labels = logits.squeeze(-1), labels.reshape(-1)
            return reduced(F.mse_loss(logits, labels.to(logits.dtype), reduction=reduction))
        if problem == "multi_label_classification":
            return reduced(F.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype), reduction=reduction))
    # in float32 at least, as transformers' token-level losses compute it (a bfloat16 causal LM's loss was 0.35 % off)
    flat_logits = logits.reshape(-1, logits.shape[-1])
    if flat_logits.dtype in (torch.float16, torch.bfloat16):
        flat_logits = flat_logits.float()
    flat_labels = labels.reshape(-1).long()
    return reduced(F.cross_entropy(flat_logits, flat_labels, ignore_index=-100, reduction=reduction))


class HFRegulariser(HiddenStateRegulariser, TrainerCallback):
    """I-STAR / CosReg for a Hugging Face ``Trainer``: its ``compute_loss_func`` and a callback.

    ``Trainer(..., compute_loss_func=reg, callbacks=[reg])``. As a callback it makes the model
    return hidden states during training (a forward pre-hook adds ``output_hidden_states=True``
    and remembers the ``attention_mask``) and refreshes Σ_S from ``shrinkage_sample`` at the
    start of every epoch; as ``compute_loss_func`` it returns
    ``task_loss(outputs, labels) + penalty``. At each of the Trainer's logging steps it also logs
    the mean task loss and the mean penalty since the last log (averaged over processes), as
    ``regulariser/task_loss`` and ``regulariser/penalty``, beside the Trainer's ``loss`` (their sum).
    Registered only as a callback (no ``compute_loss_func=reg``), it raises at the end of the first
    step instead of training without the penalty.

    Under gradient accumulation (``gradient_accumulation_steps=k``) a step trains the objective of one
    batch of all its rows: the task loss of the step (the default one sums over the micro-batch and
    divides by the Trainer's ``num_items_in_batch``, the label count of the whole step) plus the mean
    of the micro-batches' penalties (each micro-batch adds its penalty over ``k``, or over the fewer
    micro-batches of an epoch's last step: the Trainer does not divide a ``compute_loss_func``'s loss
    by ``k``). The logged parts are the step's, and add up to the Trainer's ``loss``.

    Parameters
    ----------
    method, weight, zeta, shrinkage_sample, layers, level, pooling, batch_size, max_length
        See :class:`HiddenStateRegulariser`.
    task_loss : callable, optional
        ``task_loss(outputs, labels, num_items_in_batch)``; default the loss the model computes for
        itself from ``outputs.logits`` (the Trainer hands a ``compute_loss_func`` the labels instead of
        the model): next-token cross-entropy for a causal language model; by ``config.problem_type``
        (or transformers' rule where it is unset) mean squared error, cross-entropy or binary
        cross-entropy for one row of logits per sample; cross-entropy at every position otherwise
        (-100 ignored). As the Trainer's own
        ``compute_loss_func``: given ``num_items_in_batch`` (the labels of the whole step, all
        micro-batches), return the micro-batch's summed loss divided by it; a per-batch mean would be
        counted ``gradient_accumulation_steps`` times. ``None`` is passed where the Trainer divides the
        loss itself (``trainer.loss_is_scaled_for_ga = False``): then return the micro-batch's mean.
    tokenizer : transformers tokenizer, optional
        For a text ``shrinkage_sample``; default the Trainer's ``processing_class``. Refused with no
        sample or an encoded one, where nothing is tokenised.

    Examples
    --------
    >>> from isotropy.training import HFRegulariser
    >>> reg = HFRegulariser("istar", weight=-1.0, zeta=0.2, shrinkage_sample=["a", "b c", "d e f"])
    >>> reg.method, reg.weight
    ('istar', -1.0)
    """

    def __init__(self, method="istar", *, weight=1.0, zeta=_ZETA, shrinkage_sample=None, layers="all",
                 level="token", pooling=_POOLING, task_loss=None, tokenizer=None, batch_size=_BATCH_SIZE, max_length=_MAX_LENGTH):
        # task_loss and the tokenizer checked first: refused after the base's identity-shrinkage warning, they came
        # with a warning about a regulariser that was never made
        if task_loss is not None and not callable(task_loss):
            raise TypeError(f"The 'task_loss' parameter of HFRegulariser must be callable or None. "
                            f"Got {type(task_loss).__name__} instead.")
        tokenizer = check_tokenizer(tokenizer, "HFRegulariser")
        super().__init__(method, weight=weight, zeta=zeta, shrinkage_sample=shrinkage_sample, layers=layers,
                         level=level, pooling=pooling, batch_size=batch_size, max_length=max_length,
                         caller="HFRegulariser")
        self.task_loss = task_loss or self._model_task_loss
        refuse_unused_sample_options(shrinkage_sample, method=method, caller="HFRegulariser", tokenizer=tokenizer)
        self.set_tokenizer(tokenizer)
        self._called = False  # as compute_loss_func since the training began
        self._hook = None
        self._attention_mask = None
        self._hooked_model = None
        self._step = None  # (trainer.state.global_step as the step began, micro-batches seen, accumulation steps)
        self._trainer = None  # the Trainer running the current step (its loss scaling, read in __call__)
        self._epochs = [0, 0]  # (the epoch train() began in, epochs begun since: on_epoch_begin)

    def _model_task_loss(self, outputs, labels, num_items_in_batch=None):
        """The default ``task_loss``: :func:`_default_task_loss` of the model being trained, or evaluated (the Trainer's
        model: before train() and after it, evaluate() computed a causal LM's loss unshifted; a review)."""
        model = self._hooked_model
        if model is None:
            from isotropy.training.hf_callback import _calling_trainer

            trainer = _calling_trainer()
            model = None if trainer is None else trainer.model
        return _default_task_loss(outputs, labels, num_items_in_batch, model=model)

    def _training_step(self):
        if self._step is None:
            return None
        global_step, micro, accumulation = self._step
        label = f"global_step={global_step} (trainer.state.global_step as the step began)"
        return label + (f", micro-batch {micro} of {accumulation}" if accumulation > 1 else "")

    # ------------------------------------------------------------- the callback
    def _pre_forward(self, module, args, kwargs):
        if not module.training:
            return None
        mask = kwargs.get("attention_mask")
        if mask is None and "input_ids" in kwargs:
            mask = torch.ones_like(kwargs["input_ids"])
        self._attention_mask = mask
        return args, {**kwargs, "output_hidden_states": True}

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self.set_tokenizer(kwargs.get("processing_class") or kwargs.get("tokenizer"))
        if model is not None:
            _refuse_without_hidden_states(model, self.caller)
        if model is not None and self._hooked_model is not model:
            if self._hook is not None:
                self._hook.remove()
            self._hook = model.register_forward_pre_hook(self._pre_forward, with_kwargs=True)
            self._hooked_model = model
        self._called = False
        self.logged_means(reduce=False)  # forget a previous run's sums
        if model is None:
            return
        epoch = _epoch(state)
        self.shrinkage_epoch = None  # a Σ_S of an earlier train() (other weights) is never this run's
        if state.global_step > 0 and self.method == "istar" and self.sample is not None:
            # resumed: the Σ_S the run had within this epoch, from the checkpoint (computed from the weights at the
            # epoch's start, which are gone)
            saved = _saved_shrinkage(args, state)
            if saved is not None:
                self.read_shrinkage_state(saved)
            else:
                import warnings

                from isotropy._utils.warn import user_stacklevel

                warnings.warn(f"{self.caller}: resumed at step {state.global_step} without {_STATE_FILE} in the "
                              f"checkpoint: Σ_S is computed from the resumed weights, not from those at the start of "
                              f"epoch {epoch} as the uninterrupted run did.", UserWarning, stacklevel=user_stacklevel())
        self.refresh_for_epoch(model, epoch)
        # epochs counted from here by on_epoch_begin (state.epoch is a fraction at an epoch's start with an iterable
        # dataset and max_steps: its whole part lagged one epoch behind, and Σ_S with it; a review)
        self._epochs = [epoch, 0]

    def read_shrinkage_state(self, path):
        """Σ_S and its epoch from the file ``path`` that :meth:`on_save` wrote (tensors only: ``weights_only=True``);
        a file that is not one is refused in one line that names it.

        As every checkpoint isotropy reads (:func:`isotropy.models._safety.load_checkpoint`): what is not a regular
        file (a FIFO blocked torch.load for ever) is refused unopened, and zip entries that would expand as a
        decompression bomb are refused from the zip directory, before torch.load inflates them (a 130 KB file of
        deflated entries was 128 MiB once read)."""
        from isotropy.io._archives import zip_expansion_problem
        from isotropy.io._paths import path_kind

        def refuse(cause: str) -> IsotropyValueError:
            return IsotropyValueError(f"{self.caller}: {str(path)!r} is not a readable regulariser state ({cause}); "
                                      f"delete it to compute Σ_S from the resumed weights instead.")

        kind = path_kind(path)
        if kind is not None and kind != "does not exist":  # a missing file: torch's FileNotFoundError, as before
            raise refuse(f"it {kind}")
        problem = zip_expansion_problem(path) if kind is None else None
        if problem is not None:
            raise refuse(problem)
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as exc:  # noqa: BLE001  (torch's unpickler raises many kinds on a damaged file: one line)
            raise refuse(" ".join(f"{type(exc).__name__}: {exc}".split())[:200]) from None
        self.load_shrinkage_state(state, source=repr(str(path)))

    def on_save(self, args, state, control, **kwargs):
        """Keep Σ_S and its epoch beside the checkpoint just written (``checkpoint-<step>/`` of ``output_dir``), for a
        run resumed from it."""
        saved = self.shrinkage_state()
        if saved is None or not args.should_save:  # the processes that write checkpoints (each node's, save_on_each_node)
            return
        import os

        folder = os.path.join(args.output_dir, f"checkpoint-{state.global_step}")
        if os.path.isdir(folder):
            torch.save(saved, os.path.join(folder, _STATE_FILE))

    def on_step_begin(self, args, state, control, **kwargs):
        from isotropy.training.hf_callback import _calling_trainer

        self._trainer = _calling_trainer()
        # the micro-batches of this step: gradient_accumulation_steps, fewer in an epoch's last step
        accumulation = getattr(self._trainer, "current_gradient_accumulation_steps", None)
        if not isinstance(accumulation, int) or accumulation < 1:
            accumulation = max(1, int(getattr(args, "gradient_accumulation_steps", 1) or 1))
        self._step = [state.global_step, 0, accumulation]

    def on_step_end(self, args, state, control, model=None, **kwargs):
        self._step, self._trainer = None, None
        if not self._called:
            raise IsotropyValueError("HFRegulariser is one of the Trainer's callbacks but the Trainer never called it "
                                     "for the loss: pass it as compute_loss_func too, "
                                     "Trainer(..., compute_loss_func=reg, callbacks=[reg]).")
        self._log_parts(control)

    def _log_parts(self, control):
        """When the Trainer logs its loss next (``control.should_log``: at a logging step, or at an epoch's end under
        ``logging_strategy="epoch"``), the means of the two parts since the last log beside it."""
        if not control.should_log:
            return
        from isotropy.training.hf_callback import _calling_trainer

        means = self.logged_means()
        trainer = _calling_trainer()
        if means and trainer is not None:
            flags = (control.should_log, control.should_evaluate, control.should_save)
            trainer.log(means)
            control.should_log, control.should_evaluate, control.should_save = flags

    def on_epoch_end(self, args, state, control, model=None, **kwargs):
        self._log_parts(control)

    def on_epoch_begin(self, args, state, control, model=None, **kwargs):
        first, begun = self._epochs
        self._epochs[1] = begun + 1
        if model is not None and begun:  # the first epoch of this train() (a resumed one too) has its Σ_S from train begin
            self.refresh_for_epoch(model, first + begun)

    def on_train_end(self, args, state, control, model=None, **kwargs):
        if self._hook is not None:
            self._hook.remove()
        self._hook, self._hooked_model, self._attention_mask, self._step = None, None, None, None
        self._trainer = None

    # ------------------------------------------------------------- compute_loss_func
    def _loss_scaling(self, num_items_in_batch):
        """``(divides, factor)``: whether the Trainer divides the returned loss by the step's micro-batches itself,
        and the factor by which it multiplies the returned loss before ``backward`` (``1/micro-batches`` when it
        divides; times the processes when it averages tokens across devices), as its ``training_step`` and
        ``compute_loss`` do."""
        trainer = self._trainer
        micro = self._step[2] if self._step is not None else 1
        if trainer is None:
            return False, 1.0
        scaled = getattr(trainer, "loss_is_scaled_for_ga", None)
        divides = scaled is not None and not scaled  # None: a compute_loss_func's loss counts as scaled
        factor = 1.0 / micro if divides else 1.0
        args = trainer.args
        if getattr(args, "average_tokens_across_devices", False) and num_items_in_batch is not None:
            if getattr(args, "n_gpu", 1) > 1:
                factor *= args.n_gpu
            else:
                tp_size = trainer.get_tp_size() if hasattr(trainer, "get_tp_size") else 1
                factor *= trainer.accelerator.num_processes // tp_size
        return divides, factor

    def __call__(self, outputs, labels, num_items_in_batch=None):
        if not torch.is_grad_enabled():  # evaluation and prediction: the task loss alone
            return self.task_loss(outputs, labels, num_items_in_batch)
        if self._hook is None:
            raise IsotropyValueError("HFRegulariser must also be one of the Trainer's callbacks: "
                                     "Trainer(..., compute_loss_func=reg, callbacks=[reg]).")
        divides, factor = self._loss_scaling(num_items_in_batch)
        # the Trainer divides a per-batch mean itself (loss_is_scaled_for_ga=False): the task loss is that mean
        task = self.task_loss(outputs, labels, None if divides else num_items_in_batch)
        hidden = _hidden_states(outputs, self.caller)
        micro = 1
        if self._step is not None:
            self._step[1] += 1  # this micro-batch of the step
            micro = self._step[2]
        penalty = self.penalty(hidden, self._attention_mask)
        self._called = True
        # each micro-batch's penalty is its share of the step's mean penalty, whatever the Trainer multiplies the
        # loss by: under gradient accumulation the step's objective is then that of one batch of all its rows
        # (the Trainer does not divide a compute_loss_func's loss by gradient_accumulation_steps)
        share = penalty / (micro * factor)
        first = self._step is None or self._step[1] == 1
        # the parts as they enter the Trainer's logged loss (which adds its micro-batches): their sum is that loss
        self._record(task.detach() * factor, share.detach() * factor, new_step=first)
        return task + share
