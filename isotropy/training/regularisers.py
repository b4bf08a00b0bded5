"""I-STAR and CosReg as drop-ins for a Hugging Face ``Trainer`` script or a Lightning module.

One core, :class:`HiddenStateRegulariser`, picks the regularised states out of a forward pass
(token states of the chosen layers without padding, or one pooled vector per sentence and layer),
returns the signed penalty of :mod:`isotropy.torch`, and refreshes Σ_S, the shrinkage covariance
of I-STAR, from a stored sample embedded by the current model (eval mode, no gradients) at the
start of every epoch, as the ``istar`` experiment does. Sign convention (as :mod:`isotropy.torch`):
``total = task_loss + penalty`` with ``penalty = −λ·IsoScore*(H)`` (I-STAR) or ``λ·mean_cos(H)``
(CosReg), so λ > 0 raises isotropy and λ < 0 lowers it. Both drop-ins log the task loss and the
penalty on their own, as ``regulariser/task_loss`` and ``regulariser/penalty`` (:data:`LOG_KEYS`), at
the framework's logging steps; the framework's ``loss`` stays the optimised total. Registered as a
callback but never called for the loss, either drop-in raises at the end of the first training
step rather than train without its penalty.

- :class:`isotropy.training.HFRegulariser` is the Trainer's ``compute_loss_func`` *and* a ``TrainerCallback``:
  ``Trainer(..., compute_loss_func=reg, callbacks=[reg])``.
- :class:`isotropy.training.LightningRegulariser` is a Lightning ``Callback`` with a ``penalty`` method for
  ``training_step``.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence

from isotropy._kernels.rows import all_rows_equal
from isotropy._utils.install import extra_imports

with extra_imports("isotropy.training", "train"):  # a missing package named with its extra, in one line
    import torch

from isotropy._utils.validation import IsotropyValueError, check_option, check_scalar, check_weight, check_zeta
from isotropy._utils.warn import user_stacklevel
from isotropy.models.layers import select_layers
from isotropy.models.pooling import _pool, check_attention_mask, check_pooling
from isotropy.torch import _istar, cosine_penalty, shrinkage_covariance  # at import: never in the loop
from isotropy.training.probe import (  # the documented defaults, told apart from the same values passed
    _BATCH_SIZE,
    _MAX_LENGTH,
    _POOLING,
    _ZETA,
    _Rows,
    check_distinct_layers,
    forward_hidden_states,
    refuse_non_module,
)

__all__ = ["LOG_KEYS", "HiddenStateRegulariser", "regularised_states"]

METHODS = ("istar", "cosreg")
LEVELS = ("token", "sentence")
#: The keys under which both drop-ins log the task loss and the penalty (their sum is the optimised loss).
LOG_KEYS = ("regulariser/task_loss", "regulariser/penalty")




def refuse_unused_sample_options(sample, *, method, caller, **passed):
    """Refuse the options that only embed the shrinkage sample when they were passed and nothing uses them.

    ``passed`` maps each option's name to its value, ``None`` where it was left out. With no ``sample``
    (CosReg, or I-STAR with Σ_S = I) all of them go unused; with an encoded sample (a dict of tensors)
    ``tokenizer`` and ``max_length`` do, since nothing is tokenised. Taken and ignored, the user believed
    them in effect.
    """
    texts = sample is not None and not isinstance(sample, Mapping)
    for name, value in passed.items():
        if value is None or (sample is not None and (texts or name not in ("tokenizer", "max_length"))):
            continue
        shown = repr(value) if isinstance(value, (numbers.Number, str)) else f"a {type(value).__name__}"
        if sample is None:
            why = ("CosReg has no shrinkage sample" if method == "cosreg" else
                   "no shrinkage_sample was given (Σ_S = I)")
            advice = "leave it out" if method == "cosreg" else "leave it out, or pass shrinkage_sample="
        else:
            why = "the shrinkage_sample given is already tokenised (a dict of tensors)"
            advice = "leave it out"
        raise IsotropyValueError(f"The '{name}' parameter of {caller} applies to embedding the shrinkage_sample "
                                 f"only, and {why}. Got {shown} instead; {advice}.")


def _check_hidden_states(hidden_states, caller):
    """``hidden_states`` as a tuple of ``(batch, seq, d)`` tensors, refused in one line otherwise."""
    expected = ("a sequence of (batch, seq, d) tensors, one per layer (outputs.hidden_states of a model called with "
                "output_hidden_states=True)")
    start = f"The 'hidden_states' parameter of {caller} must be {expected}."
    if hidden_states is None:
        raise TypeError(f"{start} Got None instead: call the model with output_hidden_states=True.")
    if isinstance(hidden_states, torch.Tensor):
        raise TypeError(f"{start} Got one tensor of shape {tuple(hidden_states.shape)} instead; pass the whole "
                        f"tuple, not one layer of it.")
    if isinstance(hidden_states, Mapping) or hasattr(hidden_states, "hidden_states"):
        raise TypeError(f"{start} Got the model's output ({type(hidden_states).__name__}) instead; pass its "
                        f"hidden_states (outputs.hidden_states).")
    if not isinstance(hidden_states, Sequence) or isinstance(hidden_states, (str, bytes)):
        raise TypeError(f"{start} Got {type(hidden_states).__name__} instead.")
    if not hidden_states:
        raise IsotropyValueError(f"{start} Got an empty {type(hidden_states).__name__} instead.")
    for i, h in enumerate(hidden_states):
        if not isinstance(h, torch.Tensor) or h.ndim != 3:
            got = f"shape {tuple(h.shape)}" if isinstance(h, torch.Tensor) else type(h).__name__
            raise IsotropyValueError(f"{start} Got {got} at index {i} instead.")
    return tuple(hidden_states)


def _refuse_token_pooling(pooling, *, level, caller):
    """A ``pooling`` passed at the token level (``pooling="last"``) was taken and never used: every token state is
    kept. Refused in one line (the default object, :data:`_POOLING`, is the one not passed)."""
    if level == "token" and pooling is not _POOLING:
        raise IsotropyValueError(f"The 'pooling' parameter of {caller} applies to level='sentence' only: at "
                                 f"level='token' every token state is regularised, none pooled. Got {pooling!r} "
                                 f"with level='token' instead; leave it out, or pass level='sentence'.")


def _check_mask(first, attention_mask, *, level, caller):
    """:func:`check_attention_mask` of the first chosen layer, in the words of :func:`regularised_states`: the states
    are ``hidden_states``, and at the token level a row of zeros has no token to regularise."""
    empty = ("at level='token' that row has no token (no unmasked position) to regularise" if level == "token" else
             "that row has no sentence vector")
    return check_attention_mask(first, attention_mask, caller=caller, name="hidden_states", empty_row=empty)


def regularised_states(hidden_states, attention_mask=None, *, layers="all", level="token", pooling=_POOLING,
                       caller="regularised_states"):
    """The matrix ``(n_states, d)`` a regulariser sees, from the ``hidden_states`` of one forward pass.

    Parameters
    ----------
    hidden_states : sequence of tensors of shape (batch, seq, d)
        A transformers model's ``hidden_states`` (index 0 = embedding output).
    attention_mask : tensor of shape (batch, seq) or None, default=None
        1 for real tokens, 0 for padding; ``None``: no padding (every position counts), as a transformers
        model reads a missing mask.
    layers : "all", "last", int or list of int, default="all"
        ``"all"`` = every transformer layer 1..L (see :func:`isotropy.models.select_layers`).
    level : {"token", "sentence"}, default="token"
        ``"token"``: every non-padding token state of every chosen layer, stacked (the authors' I-STAR
        setting); ``"sentence"``: one pooled vector per sentence and chosen layer.
    pooling : {"mean", "last", "first"}, default="mean"
        Used with ``level="sentence"`` (:func:`isotropy.models.pool_hidden_states`); passed with
        ``level="token"``, where no state is pooled, it is refused.

    Returns
    -------
    H : torch.Tensor of shape (n_states, d)
        With the graph of ``hidden_states``.
    """
    check_option(level, "level", LEVELS, caller=caller)
    _refuse_token_pooling(pooling, level=level, caller=caller)
    hidden_states = _check_hidden_states(hidden_states, caller)
    chosen = [hidden_states[i] for i in select_layers(layers, len(hidden_states), include_embeddings=False,
                                                      caller=caller)]
    if attention_mask is None:
        attention_mask = torch.ones(chosen[0].shape[:2], dtype=torch.long, device=chosen[0].device)
    mask = _check_mask(chosen[0], attention_mask, level=level, caller=caller).to(chosen[0].device)  # once, not per layer
    if level == "token":
        keep = mask.bool()
        return torch.cat([h[keep] for h in chosen], dim=0)
    pooling = check_pooling(pooling, caller=caller)
    return torch.cat([_pool(h, mask, pooling) for h in chosen], dim=0)


class HiddenStateRegulariser:
    """I-STAR or CosReg on the hidden states of a transformers-style model (the drop-ins' core).

    Parameters
    ----------
    method : {"istar", "cosreg"}, default="istar"
        I-STAR (penalty ``−λ·IsoScore*(H)``) or CosReg (``λ·mean_cos(H)``).
    weight : float or 0-d torch.Tensor, default=1.0
        λ. λ > 0 raises isotropy, λ < 0 lowers it (Rudman & Eickhoff find λ < 0 helps fine-tuning).
        A 0-d real tensor (a λ schedule's value) is read once as a float; one that is not 0-d, of
        bool or complex dtype, not finite, or that requires grad is refused.
    zeta : float in [0, 1] or 0-d torch.Tensor, default=0.2
        Shrinkage weight of IsoScore* (I-STAR only: refused with ``method="cosreg"``); a 0-d real
        tensor or array (a schedule's value) is read once as a float, as ``weight`` is.
    shrinkage_sample : list of str (or a 1-d array or Series of str) or dict of tensors, optional
        The stored sample (texts, or ``input_ids`` / ``attention_mask``) whose regularised states
        give Σ_S, recomputed with the current model at the start of every epoch (I-STAR only:
        refused with ``method="cosreg"``). ``None``: Σ_S = I (scale-dependent; give a sample). Token ids past
        the model's vocabulary, or rows longer than its positions, are refused when Σ_S is first computed.
    layers, level, pooling
        Which states are regularised; see :func:`regularised_states`. Each layer once, as for
        :class:`~isotropy.training.GeometryProbe`: a repeat is refused (``[1, 1]`` here; ``-1`` beside the
        last index at the first forward pass). ``pooling`` (default ``"mean"``) applies to
        ``level="sentence"`` only: passed with ``level="token"``, where no state is pooled, it is refused.
    batch_size, max_length : int, default=32 and 128
        Batching and truncation when embedding the shrinkage sample; refused when passed with no
        ``shrinkage_sample`` (and ``max_length`` with an already tokenised one), where nothing uses them.

    Attributes
    ----------
    shrinkage_cov : torch.Tensor or None
        The current Σ_S (no graph).
    """

    def __init__(self, method="istar", *, weight=1.0, zeta=_ZETA, shrinkage_sample=None, layers="all", level="token",
                 pooling=_POOLING, batch_size=_BATCH_SIZE, max_length=_MAX_LENGTH, caller="HiddenStateRegulariser"):
        self.caller = caller
        if not isinstance(method, str) or method not in METHODS:  # check_option's message, with a did-you-mean
            from isotropy.metrics.table import suggest_name

            try:
                check_option(method, "method", METHODS, caller=caller)
            except IsotropyValueError as exc:  # the same type (a wrong type stays a TypeError)
                raise type(exc)(f"{exc}{suggest_name(method, METHODS) if isinstance(method, str) else ''}") from None
        self.method = method
        # I-STAR's arguments given to CosReg were taken and never used, while the user believed them in effect
        if method == "cosreg" and zeta is not _ZETA:
            raise IsotropyValueError(f"The 'zeta' parameter of {caller} applies to method='istar' only: CosReg has no "
                                     f"shrinkage. Got {zeta!r} with method='cosreg' instead; leave it out.")
        if method == "cosreg" and shrinkage_sample is not None:
            raise IsotropyValueError(f"The 'shrinkage_sample' parameter of {caller} applies to method='istar' only: "
                                     f"CosReg has no shrinkage covariance Σ_S to estimate. Got a "
                                     f"{type(shrinkage_sample).__name__} with method='cosreg' instead; leave it out.")
        refuse_unused_sample_options(shrinkage_sample, method=method, caller=caller,
                                     batch_size=None if batch_size is _BATCH_SIZE else batch_size,
                                     max_length=None if max_length is _MAX_LENGTH else max_length)
        self.weight = check_weight(weight, caller=caller)
        self.zeta = check_zeta(zeta, caller=caller)  # a 0-d tensor too, as weight
        # the form now, a repeat ([1, 1]) refused as by the probe; the range, and two indices of one hidden state
        # (-1 beside the last index), at the first forward pass
        check_distinct_layers(layers, caller=caller)
        self.layers = layers
        self.level = check_option(level, "level", LEVELS, caller=caller)
        _refuse_token_pooling(pooling, level=level, caller=caller)
        self.pooling = str(check_pooling(pooling, caller=caller))
        self.batch_size = int(check_scalar(batch_size, "batch_size", caller=caller, kind=numbers.Integral, low=1))
        max_length = int(check_scalar(max_length, "max_length", caller=caller, kind=numbers.Integral, low=1))
        self.sample = None if shrinkage_sample is None else _Rows(shrinkage_sample, name="shrinkage_sample",
                                                                  caller=caller, max_length=max_length)
        # the warning of the callback and the table, in these terms (ζ = 0: Σ_S is unused, IsoScore* is IsoScore)
        if method == "istar" and shrinkage_sample is None and self.zeta > 0:
            import warnings

            from isotropy.metrics.table import ISOSCORE_STAR_WARNING

            warnings.warn(f"{caller}: {ISOSCORE_STAR_WARNING} (shrinkage_sample=).", UserWarning,
                          stacklevel=user_stacklevel())  # the user's line, through the drop-ins' super() call too
        self._distinct_for = None  # the number of hidden states for which the layers were found distinct
        self.shrinkage_cov = None
        self.shrinkage_epoch = None  # the epoch at whose start the drop-ins computed shrinkage_cov (restored on resume)
        self.last_penalty = None
        self._warned_single = False
        self._warned_identical = False  # a batch of identical states (_identical_states) warned of once
        self._sums = [0.0, 0.0, 0]  # task loss, penalty, (optimiser) steps since the last log (see logged_means)
        self._device = None  # the device of the last batch's states: where logged_means reduces its sums under NCCL

    def _training_step(self) -> str | None:
        """Which training step the batch given to :meth:`penalty` belongs to, where the drop-in knows it (for messages).

        ``None`` here: called by hand, the regulariser does not know the step. The Trainer drop-ins say it.
        """
        return None

    def _record(self, task_loss, penalty, *, new_step=True):
        """Count one training batch's task loss and penalty towards the next logged means.

        ``new_step=False``: another micro-batch of the step already counted (gradient accumulation), whose parts add
        to that step's instead of counting as one more step.
        """
        self._sums[0] += float(task_loss)
        self._sums[1] += float(penalty)
        self._sums[2] += int(new_step)

    def logged_means(self, *, reduce=True):
        """``{LOG_KEYS[0]: mean task loss, LOG_KEYS[1]: mean penalty}`` since the last call, then reset.

        Under ``torch.distributed`` (``reduce=True``) the sums are added across processes first, as
        a Trainer averages its own loss over processes; every process must then call this. Empty
        (``{}``) when no batch was counted.
        """
        task, penalty, count = self._sums
        self._sums = [0.0, 0.0, 0]
        if reduce and torch.distributed.is_available() and torch.distributed.is_initialized():
            totals = torch.tensor([task, penalty, float(count)], dtype=torch.float64)
            if torch.distributed.get_backend() == "nccl":  # NCCL reduces tensors on the process's GPU: the states'
                totals = totals.to(self._device if self._device is not None  # (or, before any batch, the current one)
                                   else torch.device("cuda", torch.cuda.current_device()))
            torch.distributed.all_reduce(totals)
            task, penalty, count = (float(v) for v in totals.cpu())
        if not count:
            return {}
        return {LOG_KEYS[0]: task / count, LOG_KEYS[1]: penalty / count}

    def set_tokenizer(self, tokenizer):
        """Tokenise a text ``shrinkage_sample`` with ``tokenizer`` (or a processor's tokenizer)."""
        if tokenizer is not None and self.sample is not None and self.sample.texts is not None \
                and self.sample.tokenizer is None:
            self.sample.tokenizer = getattr(tokenizer, "tokenizer", tokenizer)
        return self

    def states(self, hidden_states, attention_mask=None):
        """The regularised states ``(n_states, d)`` of one forward pass (see :func:`regularised_states`)."""
        pooling = self.pooling if self.level == "sentence" else _POOLING  # the token level pools nothing
        H = regularised_states(hidden_states, attention_mask, layers=self.layers, level=self.level,
                               pooling=pooling, caller=self.caller)
        n_states = len(hidden_states)  # a sequence: checked above, with the range of the layers
        if n_states != self._distinct_for:  # -1 beside the last index: one hidden state, regularised once; the probe's
            check_distinct_layers(self.layers, n_states, caller=self.caller)  # words, once per depth (not every step)
            self._distinct_for = n_states
        return H

    def penalty(self, hidden_states, attention_mask=None):
        """``−λ·IsoScore*(H)`` or ``λ·mean_cos(H)`` of the regularised states: add it to the task loss.

        ``hidden_states`` the model's (``output_hidden_states=True``), ``attention_mask`` the batch's
        (``None``: no padding); see :func:`regularised_states`.

        A batch of fewer than 2 regularised states (sentence level, a one-row batch) has no IsoScore* nor
        mean cosine: its penalty is 0, without gradient, with one warning, and training goes on. The
        exception is I-STAR with ``zeta=1`` and a Σ_S (``shrinkage_cov``): Σ_ζ is Σ_S alone, so one state's
        IsoScore* is defined, the IsoScore of Σ_S, and its penalty is ``−λ·IsoScore(Σ_S)``, what
        :func:`isotropy.isoscore_star` and :class:`~isotropy.torch.IStarLoss` give for that batch (logged
        as such, not as 0, and not warned of); no gradient reaches the state either way.
        """
        if isinstance(hidden_states, (tuple, list)) and hidden_states:
            # the layers against the model's depth first: a setting, no batch's fault, refused without the step's words
            select_layers(self.layers, len(hidden_states), include_embeddings=False, caller=self.caller)
        try:
            H = self.states(hidden_states, attention_mask)
        except IsotropyValueError as exc:
            step = self._training_step()
            if step is None:
                raise
            # "row 3" of a training batch is a row of the (shuffled) batch, not of the dataset: name the step too
            raise IsotropyValueError(f"{exc} This batch is the one of training step {step}; its rows are counted "
                                     f"within that step's batch, in the order the data loader gave them.") from None
        self._device = H.device
        # one state (sentence level, a one-row batch): no IsoScore* nor mean cosine of it, except I-STAR's at ζ = 1
        # with a Σ_S, which is IsoScore(Σ_S) whatever the state (isoscore_star and IStarLoss give it): computed below
        only_s = self.method == "istar" and self.zeta == 1.0 and self.shrinkage_cov is not None
        if H.shape[0] < 2 and not (only_s and H.shape[0] == 1):
            if not self._warned_single:
                import warnings

                self._warned_single = True
                n = H.shape[0]
                why = ("the batch has no rows" if n == 0 else
                       "an epoch of batch_size·m + 1 rows ends with such a batch; drop_last, or a batch size that "
                       "divides the data, avoids it" if self.level == "sentence" else
                       "the batch's attention mask keeps one token in all")
                warnings.warn(f"{self.caller}: a training batch gave {n} regularised state{'' if n == 1 else 's'} "
                              f"(level={self.level!r}); {self.method}'s penalty needs at least 2, so it is 0 for that "
                              f"batch ({why}). Later such batches are not warned of.", UserWarning,
                              stacklevel=user_stacklevel())  # the user's line, not the Trainer's or the model's
            # a training batch's states need gradients, and so does its penalty (the Lightning drop-in counts it so)
            value = torch.zeros((), dtype=H.dtype, device=H.device).requires_grad_(H.requires_grad)
            self.last_penalty = 0.0
            return value
        if self.method == "istar":
            # warned once when made without a shrinkage sample (in its terms, shrinkage_sample=), not per step
            try:
                value = self.weight * _istar(H, shrinkage_cov=self.shrinkage_cov, zeta=self.zeta,
                                             caller="istar_penalty", warn=False)
            except IsotropyValueError:
                # identical states where IsoScore* is undefined: compared only once _istar has refused the batch, so
                # that an ordinary batch costs no comparison of its rows (nor a device sync) on every step
                if (self.zeta == 0.0 or self.shrinkage_cov is None) and all_rows_equal(H.detach()):
                    return self._identical_states(H)
                raise
        else:
            value = self.weight * cosine_penalty(H)
        self.last_penalty = float(value.detach())
        return value

    def _identical_states(self, H):
        """I-STAR's penalty of a batch of identical states where IsoScore* is undefined: 0, without gradient.

        Their covariance is zero: with ζ > 0 and a Σ_S, IsoScore* is that of ζ·Σ_S and is computed (no gradient flows
        either); at ζ = 0 it is 0/0, and with Σ_S = I (no shrinkage sample) it would be 1.0 whatever the states, which
        :func:`isotropy.isoscore_star` refuses. A training run is not stopped for one such batch (a collapsed batch
        of padding-like rows): it counts as a batch of one state does, with one warning.
        """
        if not self._warned_identical:
            import warnings

            self._warned_identical = True
            why = "zeta=0 (IsoScore, 0/0)" if self.zeta == 0.0 else \
                "Σ_S = I without a shrinkage_sample (it would score them 1.0 whatever they are)"
            step = self._training_step()
            warnings.warn(f"{self.caller}: a training batch gave {H.shape[0]} identical regularised states "
                          f"(level={self.level!r}{'' if step is None else f', training step {step}'}); their "
                          f"covariance is zero and IsoScore* is undefined with {why}, so I-STAR's penalty is 0 for "
                          f"that batch, as for a batch of one state. Later such batches are not warned of.",
                          UserWarning, stacklevel=user_stacklevel())
        self.last_penalty = 0.0
        return torch.zeros((), dtype=H.dtype, device=H.device).requires_grad_(H.requires_grad)

    @torch.no_grad()
    def shrinkage_state(self):
        """``{"shrinkage_cov": Σ_S (CPU), "epoch": the epoch it was computed at}``, what a checkpoint keeps so that a run
        resumed within that epoch goes on with the Σ_S of the uninterrupted run (not one of the resumed weights);
        ``None`` when there is no Σ_S to keep (CosReg, no shrinkage sample, not computed yet)."""
        if self.shrinkage_cov is None or self.shrinkage_epoch is None:
            return None
        return {"shrinkage_cov": self.shrinkage_cov.detach().cpu(), "epoch": int(self.shrinkage_epoch)}

    def load_shrinkage_state(self, state, *, source):
        """Take Σ_S and its epoch from :meth:`shrinkage_state`'s dict (``source`` names where it came from), checked."""
        if not isinstance(state, dict) or not isinstance(state.get("shrinkage_cov"), torch.Tensor) or not isinstance(
                state.get("epoch"), int) or isinstance(state.get("epoch"), bool):
            raise IsotropyValueError(f"{self.caller}: {source} does not hold a saved shrinkage state: expected a dict "
                                     f"with 'shrinkage_cov' (a tensor) and 'epoch' (an int).")
        S = state["shrinkage_cov"]
        from isotropy._kernels.isoscore import _check_shrinkage_cov, check_covariance

        try:  # the checks of a Σ_S passed in: a finite symmetric square matrix, and a covariance one
            S = _check_shrinkage_cov(S, None, like=S, caller=self.caller)
            check_covariance(S, caller=self.caller)
        except (TypeError, ValueError) as exc:
            raise IsotropyValueError(f"{self.caller}: {source} does not hold a saved shrinkage state ({exc})") from None
        self.shrinkage_cov, self.shrinkage_epoch = S, state["epoch"]

    def _method_caller(self, method):
        """The name of ``method`` in messages: ``HiddenStateRegulariser.refresh``, or the drop-in's own name."""
        return f"HiddenStateRegulariser.{method}" if self.caller == "HiddenStateRegulariser" else self.caller

    def refresh_for_epoch(self, model, epoch, *, forward_kwargs=None):
        """:meth:`refresh` at the start of ``epoch``, unless Σ_S is that epoch's already (restored from a checkpoint
        taken within it: the uninterrupted run computed it from the weights at the epoch's start)."""
        if self.method != "istar" or self.sample is None:
            return self
        refuse_non_module(model, self._method_caller("refresh_for_epoch"))
        if self.shrinkage_cov is not None and self.shrinkage_epoch == epoch:
            # restored (a resumed run): a sample the model cannot run is still refused now, not at the next epoch
            self.sample.fit(model)
            return self
        self.refresh(model, forward_kwargs=forward_kwargs)
        self.shrinkage_epoch = epoch
        return self

    def refresh(self, model, *, forward_kwargs=None):
        """Recompute Σ_S from the stored sample with ``model`` (eval mode, no gradients); returns ``self``.

        ``model`` is called as ``model(**inputs, output_hidden_states=True, return_dict=True)``: a
        ``torch.nn.Module`` (a plain function is refused, as by :meth:`GeometryProbe.measure
        <isotropy.training.GeometryProbe.measure>`: it has no eval mode and no device).
        """
        if self.method != "istar" or self.sample is None:
            return self
        refuse_non_module(model, self._method_caller("refresh"))
        parameter = next(iter(model.parameters()), None)
        device = parameter.device if parameter is not None else torch.device("cpu")
        was_training = model.training
        model.eval()
        self.sample.fit(model)  # texts cut to the model's positions (longer ones crashed its forward pass)
        try:
            parts = []
            for start in range(0, self.sample.n_rows, self.batch_size):
                inputs = {k: v.to(device) for k, v in
                          self.sample.encode(list(range(start, min(start + self.batch_size, self.sample.n_rows)))).items()}
                with torch.no_grad():  # no graph of the sample's forward passes: Σ_S has none (it was kept till here)
                    states = forward_hidden_states(model, inputs, self.caller, forward_kwargs)
                parts.append(self.states(states, inputs["attention_mask"]))
        finally:
            model.train(was_training)
        self.shrinkage_cov = shrinkage_covariance(parts)
        return self
