"""The core shared by the geometry callbacks: embed a probe set with the model being trained, per layer.

:class:`GeometryProbe` holds the probe (texts or a dict of tensors), the layers, the pooling and
the metrics. :meth:`GeometryProbe.measure` puts the model in eval mode, embeds this process's share
of the probe without gradients, pools every chosen layer, feeds the per-layer torchmetrics metrics
(:mod:`isotropy.training.metrics`), restores the training mode and returns
``{"geometry/<metric>/layer_<i>": value}``. Under ``torch.distributed`` each rank embeds the rows
``rank, rank + world_size, ...`` and the metrics' states are reduced across processes in
``compute``, so every rank returns the values of the whole probe.

The forward passes are the cost of a measurement. A text probe is tokenised once (at the first
measurement, again only if the tokenizer changes); the rows of this rank's share are run longest
first, each batch padded only to its own longest row and cut where the lengths drop by more than
another forward pass costs (on a CPU; at most ``batch_size`` rows), and the pooled vectors are
put back in probe order before the metrics see them, in one update per sorting window
(``batch_size * ceil(1024 / batch_size)`` rows: 1024 rounded up to whole batches): the values are
those of an unsorted pass to float32 rounding of the forward passes
(``tests/test_training_probe.py``, a tiny float32 BERT: pooled vectors against each text
embedded alone, and values against those at ``batch_size=1``, to 1e-5). A transformers model's
task head is not run where its ``base_model`` gives exactly the same hidden states, in a run of one
process, for a model neither compiled nor FSDP-wrapped (:meth:`GeometryProbe._encoder`). The
forward runs under ``torch.no_grad()``, not ``inference_mode``: buffers a model builds lazily in
its forward (position caches) could otherwise become inference tensors that the training loop's
backward pass refuses.
"""

from __future__ import annotations

import functools
import logging
import numbers
import re
import warnings
import weakref
from collections.abc import Mapping, Sequence

import numpy as np

from isotropy._utils.install import extra_imports

with extra_imports("isotropy.training", "train"):  # a missing package named with its extra, in one line
    import torch

from isotropy._utils.backend import as_tensor
from isotropy._utils.defaults import MAX_LENGTH as _MAX_LENGTH
from isotropy._utils.defaults import DefaultFloat, DefaultInt, DefaultName
from isotropy._utils.suggest import did_you_mean
from isotropy._utils.validation import IsotropyValueError, _describe, check_scalar, check_texts, check_zeta
from isotropy._utils.warn import user_stacklevel
from isotropy.metrics.table import check_metric_names, metric_names, span_bound_warning
from isotropy.models.batching import distinct_sequences, pad_rows, refuse_empty_rows, tokenize_texts
from isotropy.models.layers import check_layers, select_layers
from isotropy.models.pooling import _pool, check_attention_mask, check_pooling

__all__ = ["DEFAULT_METRICS", "GeometryProbe", "check_tokenizer", "import_for_measuring", "refuse_non_module"]

# names from the metric table (isotropy.metrics.table), logged as <prefix>/<name>/layer_<i>; isoscore_star joins
# them when a shrinkage sample is given (without one it tracks vector norms: isotropy.metrics.table.ISOSCORE_STAR_NOTE)
DEFAULT_METRICS = ("isoscore", "cosine_similarity_mean", "rogue_dimension_share")
_LOG = logging.getLogger("isotropy.training")
# the probe's forward passes sort the rows by length within windows of this many rows (rounded up to whole
# batches): the pooled vectors of one window (rows x width x layers) are held to put them back in probe order, and
# those of a text that comes back in a later window until then (one vector per layer and text)
_SORT_WINDOW = 1024
# the cost of one more forward pass, in padded token positions, by device type (_length_batches): on a CPU thread a
# pass of all-MiniLM-L6-v2 costs ~10 ms beyond its ~0.3 ms per position (measured, torch 2.13), so cutting a batch
# where the lengths drop pays from ~32 saved positions on (256 SST-2 sentences: 7328 -> 6744 positions, 8 -> 13
# passes, ~10 % less forward time). Elsewhere (GPUs) padding is nearly free next to a pass: the fewest passes.
# It only decides where batches end, so the speed; the values change only to float32 rounding (other batch
# compositions, as another batch_size gives). One constant for every model: a pass's overhead (per operator
# dispatched, so per layer) and its cost per position (per layer, x width^2) both grow with depth, and for wider
# models than MiniLM (384) the true cost is fewer positions: 32 then cuts less often than would pay, and the forward
# time stays between that of the best cut and that of the fewest passes (a pass cost above the true one never
# costs more than the fewest passes do).
_PASS_COST = {"cpu": 32}
_PROBE_OPTIONS = {"twonn_dimension": {"max_samples": 4096, "random_state": 0}}  # a bounded cost per measurement
# the modules a table metric's compute() imports on its first call, imported when the probe is built instead
_COMPUTE_MODULES = {"isoscore_star": ("isotropy.metrics.isoscore",), "rogue_dimension_share": ("isotropy.metrics.rogue",),
                    # a CPU tensor's search is the numpy kernel's, whose worker pool and progress load on first use
                    "twonn_dimension": ("isotropy.metrics.dimension", "isotropy._kernels.silhouette",
                                        "isotropy._utils.progress")}


def import_for_measuring(names=()):
    """Import now what a measurement of the table metrics ``names`` would import on its first call.

    torchmetrics, the metric classes, their kernels and the modules their ``compute`` reads: 2-3 s
    that would otherwise land on the first measurement inside the training loop.
    """
    import importlib

    importlib.import_module("isotropy.training.metrics")  # torchmetrics and the accumulator kernels
    for name in names:
        for module in _COMPUTE_MODULES.get(name, ()):
            importlib.import_module(module)


def check_tokenizer(tokenizer, caller):
    """``None`` or a callable tokenizer (a transformers tokenizer or processor), refused in one line otherwise."""
    if tokenizer is not None and not callable(tokenizer):
        raise TypeError(f"The 'tokenizer' parameter of {caller} must be a transformers tokenizer (callable) or None. "
                        f"Got {type(tokenizer).__name__} instead.")
    return tokenizer


def forward_hidden_states(model, inputs, caller, forward_kwargs=None):
    """``model(**inputs, output_hidden_states=True, return_dict=True)``'s per-layer states (:func:`_hidden_states`).

    A module whose forward does not take those keywords (not a transformers model) raised torch's bare
    ``TypeError: forward() got an unexpected keyword argument 'output_hidden_states'``: said in one line here.
    """
    try:
        output = model(**inputs, output_hidden_states=True, return_dict=True, **(forward_kwargs or {}))
    except TypeError as exc:
        text = str(exc)
        # only the forward's own refusal of these keywords (a model's inner error or a typo in forward_kwargs: as is)
        if "unexpected keyword argument" not in text or not any(
                f"'{name}'" in text for name in ("output_hidden_states", "return_dict", "input_ids", "attention_mask")):
            raise
        raise IsotropyValueError(
            f"{caller}: the model ({type(model).__name__}) cannot be called as model(input_ids=..., attention_mask=..., "
            f"output_hidden_states=True, return_dict=True) ({text.splitlines()[0][:160]}); expected a transformers "
            f"model, whose hidden states are measured (for a module that wraps one, give that model).") from exc
    return _hidden_states(output, caller)


def _hidden_states(output, caller):
    """The tuple of per-layer token states ``(batch, seq, d)`` from a model output."""
    states = getattr(output, "hidden_states", None)
    if states is None and isinstance(output, Mapping):
        states = output.get("hidden_states")
    if states is None and isinstance(output, (tuple, list)) and output and all(
            isinstance(h, torch.Tensor) and h.ndim == 3 for h in output):
        states = output
    if states is None and isinstance(output, torch.Tensor) and output.ndim == 3:
        states = (output,)
    if states is None:
        raise TypeError(f"{caller}: the model's output has no hidden states. Expected an output with "
                        f"'hidden_states' (a transformers model called with output_hidden_states=True), a tuple of "
                        f"(batch, seq, hidden) tensors or one such tensor. Got {type(output).__name__} instead.")
    return tuple(states)


def _named(value):
    """A callable as its kind and name (``function 'embed'``), anything else as its type (``a partial``)."""
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    return f"{type(value).__name__} {name!r}" if isinstance(name, str) else f"a {type(value).__name__}"


def refuse_non_module(model, caller):
    """Refuse, in one line, a ``model`` that is not a ``torch.nn.Module`` (a plain function of a batch).

    Refused, not supported: a measurement puts the model in eval mode and back (a function has no mode: dropout in a
    function's own modules would stay on, values noisy at every step), runs it on the device of its parameters
    (a function has none; the probe's rows are on the CPU, where no input gives a device) and may run its
    ``base_model`` without the task head. :meth:`GeometryProbe.measure` documents a ``torch.nn.Module``, and the
    Lightning callback's callable ``model=`` is ``model(pl_module)``, which returns the module to call, not the
    hidden states. torch's ``AttributeError: 'function' object has no attribute 'parameters'`` said none of this.
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"The 'model' parameter of {caller} must be a torch.nn.Module (called as model(**inputs, "
                        f"output_hidden_states=True, return_dict=True), in eval mode, on the device of its "
                        f"parameters). Got {_named(model)} instead; pass the module whose hidden states to measure.")
    return model


def _compiled(model):
    """Whether ``model`` runs compiled: ``torch.compile(model)`` (an ``OptimizedModule``, which holds the module in
    ``_orig_mod``) or ``model.compile()``; told without importing ``torch._dynamo``."""
    return type(model).__name__ == "OptimizedModule" or "_orig_mod" in vars(model) or \
        "_orig_mod" in getattr(model, "_modules", {}) or getattr(model, "_compiled_call_impl", None) is not None


def _sharded(model):
    """Whether ``model`` or one of its modules is FSDP-wrapped (``FullyShardedDataParallel``, or ``fully_shard``'s
    ``FSDPModule``); told by the class names, without importing ``torch.distributed.fsdp``."""
    return any(cls.__name__ in ("FullyShardedDataParallel", "FSDPModule")
               for module in model.modules() for cls in type(module).__mro__)


def _out_of_memory(exc):
    """Whether ``exc`` is an out-of-memory error: ``torch.OutOfMemoryError`` (``torch.cuda.OutOfMemoryError`` before
    torch 2.5), or a RuntimeError that says so (other backends, "MPS backend out of memory")."""
    if isinstance(exc, torch.cuda.OutOfMemoryError):
        return True
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc)


@functools.lru_cache(maxsize=32)
def _length_batches(lengths, batch_size, pass_cost):
    """Cut rows sorted longest first (``lengths``, a tuple) into batches of at most ``batch_size`` rows.

    Returns the ``(start, stop)`` of each batch, in order, minimising the padded positions of all
    batches (each padded to its first, longest row) plus ``pass_cost`` per batch (a dynamic program
    over the cut points); ``pass_cost=None`` gives the fewest batches and, among those, the fewest
    padded positions. Cached: a probe's lengths are the same at every measurement.
    """
    n = len(lengths)
    if pass_cost is None:  # more than any padding a cut can save
        pass_cost = n * (max(lengths, default=0) + 1) + 1
    widths = np.asarray(lengths, dtype=np.int64)
    best, cut = np.zeros(n + 1, dtype=np.int64), np.zeros(n + 1, dtype=np.int64)  # of rows [0, j): least cost, last start
    for j in range(1, n + 1):
        start = max(0, j - batch_size)
        cost = best[start:j] + (j - np.arange(start, j)) * widths[start:j]
        i = int(np.argmin(cost))  # the first minimum: the longest last batch wins a tie (fewer batches)
        best[j], cut[j] = cost[i] + pass_cost, start + i
    bounds, j = [], n
    while j:
        bounds.append((int(cut[j]), j))
        j = int(cut[j])
    return tuple(reversed(bounds))


def _text_column(probe):
    """A 1-d numpy array or pandas Series (or Index) of texts' dtype (str, bytes, object, pandas' "string") as a list of
    its elements (Python objects: ``np.str_`` made ``str``, a Series read by position, not by its labels); else None.

    ``df["text"]`` and ``df["text"].to_numpy()`` are how a data set's texts come: refused, the user had to write
    ``list(...)``. The elements are then checked as a list's are (:func:`_texts`: every one a str).
    """
    if not (isinstance(probe, np.ndarray) or type(probe).__module__.split(".")[0] == "pandas"):
        return None
    if getattr(probe, "ndim", None) != 1 or getattr(getattr(probe, "dtype", None), "kind", None) not in ("U", "S", "O"):
        return None
    return probe.tolist()


def _texts(probe, *, name, caller, given=None):
    """The probe's texts as a list, refused in one line when empty or when an element is not a str (``given``: what
    the user passed, when ``probe`` is its list)."""
    what = "a non-empty list of texts or a dict of tensors with 'input_ids'"
    if not probe:
        raise IsotropyValueError(f"The '{name}' parameter of {caller} must be {what}. Got an empty "
                                 f"{type(probe if given is None else given).__name__} instead.")
    bad = next((i for i, t in enumerate(probe) if not isinstance(t, str)), None)
    if bad is not None:
        raise TypeError(f"The '{name}' parameter of {caller} must be {what}. Got {type(probe[bad]).__name__} at "
                        f"index {bad} instead.")
    return check_texts(probe, caller=caller, name=name, what=what)


def _refuse_metric_instance(factory, name, caller):
    """Refuse, in one line, a metric where ``metrics`` maps ``name`` to a factory of metrics.

    A torchmetrics metric is a module, so callable: ``metrics={"x": IsoScore()}`` passed the check of a factory and
    its first measurement called ``metric(n_features)``, its ``forward``, whose error spoke of a 0-d ``X`` given to
    ``IsoScore.update``. An instance, not a class, with a metric's methods (those :meth:`GeometryProbe._make_metric`
    requires of what a factory returns) is a metric. The probe needs a new metric per layer and measurement.
    """
    if isinstance(factory, type) or not all(callable(getattr(factory, method, None))
                                            for method in ("update", "compute", "reset")):
        return
    cls = type(factory).__name__
    example = f"lambda d: {cls}(n_features=d)" if hasattr(factory, "n_features") else f"lambda d: {cls}()"
    raise TypeError(f"The 'metrics' parameter of {caller} must map names to factories factory(n_features) that return "
                    f"a new metric (one per layer and measurement), not to a metric instance. Got an instance of {cls} "
                    f"for {name!r} instead; pass a factory such as {example} (with any options the instance had).")


def _refuse_repeats(values, given, *, name, caller, what):
    """Refuse a value named twice in ``values`` (a metric, a layer index), naming the first repeat.

    A repeat was dropped silently (:func:`~isotropy.metrics.table.check_metric_names`,
    :func:`~isotropy.models.select_layers`): measured and logged once, where the user asked for it twice, most
    likely meaning another metric or layer.
    """
    seen = set()
    for value in values:
        if value in seen:
            raise IsotropyValueError(f"The '{name}' parameter of {caller} must name each {what} once. Got "
                                     f"{_describe(given)} instead: {value!r} is repeated.")
        seen.add(value)


def check_distinct_layers(layers, n_states=None, *, caller):
    """:func:`~isotropy.models.check_layers` of ``layers``, refusing a layer named twice; returns its form.

    Without ``n_states`` (when the probe or regulariser is built) an index written twice (``[1, 1]``,
    ``"2,1,2"``) is refused; with the model's number of hidden states ``n_states`` (once its depth is
    known, after :func:`~isotropy.models.select_layers` has bounded them) so are two indices of one
    hidden state (``-1`` beside the last index). Both were dropped silently by ``select_layers``:
    measured or regularised once, where the user asked for the layer twice, most likely meaning another.
    """
    form = check_layers(layers, caller=caller)
    if not isinstance(form, tuple):
        return form
    # 'last' among indices is -1 (check_layers): said so where the -1 a message names is one the user wrote as 'last'
    last = "'last' is -1" if "last" in str(layers).lower() else ""
    if n_states is None:
        try:
            _refuse_repeats(form, layers, name="layers", caller=caller, what="layer")
        except IsotropyValueError as exc:
            raise IsotropyValueError(f"{str(exc)[:-1]}{f' ({last})' if last else ''}.") from None
        return form
    first = {}
    for i in form:
        if first.setdefault(i % n_states, i) != i:
            raise IsotropyValueError(
                f"The 'layers' parameter of {caller} must name each layer once. Got {_describe(layers)} instead: "
                f"{first[i % n_states]} and {i} are both layer_{i % n_states} (the model's hidden states are "
                f"0..{n_states - 1}{f'; {last}' if last else ''}).")
    return form


def _refuse_blank_texts(texts, *, name, caller):
    """Refuse empty and whitespace-only texts, naming the first: they carry no word (called when the probe is built).

    Under an encoder's tokenizer such a text is a row of special tokens only ([CLS] [SEP]), a vector of no
    sentence; other texts with no word token (a zero-width space) are refused once tokenised
    (:func:`_refuse_special_only`).
    """
    blank = [i for i, t in enumerate(texts) if not t.strip()]
    if blank:
        raise IsotropyValueError(f"The '{name}' parameter of {caller} must have texts that are not blank. Got "
                                 f"{len(blank)} blank (the first: {texts[blank[0]]!r}, at index {blank[0]}); remove "
                                 f"them.")


def _refuse_special_only(tokens, texts, tokenizer, *, name, caller):
    """Refuse texts whose tokens are all special tokens of ``tokenizer`` (``"\u200b"`` under BERT: [CLS] [SEP])."""
    from isotropy.models.batching import TokenRows

    special = [int(i) for i in (getattr(tokenizer, "all_special_ids", None) or [])]
    if not special or "input_ids" not in tokens.values:
        return
    real = np.concatenate([[0], np.cumsum(~np.isin(tokens.values["input_ids"], special))])
    counts = real[tokens.offsets[1:]] - real[tokens.offsets[:-1]]
    refuse_empty_rows(TokenRows({}, np.concatenate([[0], np.cumsum(counts)])), texts, name=name, caller=caller,
                      tokenizer_of="its tokenizer besides its special tokens")


# the per-token keys of an encoded probe: taken from arrays and lists too, and checked against input_ids' shape
_TOKEN_KEYS = ("attention_mask", "token_type_ids")
# the words a key of the input's mask is written with besides attention_mask ("mask", "input_mask", "attn_mask",
# "padding_mask"): _refuse_misnamed_mask
_MASK_WORDS = frozenset({"attention", "attentions", "attn", "att", "input", "inputs", "padding", "pad"})


def _names_the_mask(key):
    """Whether ``key`` names the mask of the input tokens under a name other than ``attention_mask``.

    Its words (snake, kebab or camel case) are ``mask`` alone or after one of :data:`_MASK_WORDS`
    (``input_mask``, ``attn_masks``, ``PaddingMask``), or it is a misspelling of ``attention_mask``
    (``attention_masks``, ``attentionmask``: difflib's ratio 0.9 or more). Not the masks of other inputs,
    ``decoder_attention_mask``, ``global_attention_mask``, ``head_mask``, ``special_tokens_mask`` (ratio 0.8 or
    less): legitimate inputs.
    """
    import difflib

    if not isinstance(key, str):
        return False
    words = [w for w in re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key).lower()) if w]
    if words and words[-1] in ("mask", "masks") and len(words) <= 2 and set(words[:-1]) <= _MASK_WORDS:
        return True
    return difflib.SequenceMatcher(None, "_".join(words), "attention_mask").ratio() >= 0.9


def _refuse_misnamed_mask(probe, *, start):
    """Refuse an encoded probe without ``attention_mask`` that has its mask under another key (:func:`_names_the_mask`).

    That key was passed to the model, which in transformers 5 takes and ignores an unknown keyword, and the probe
    took a mask of all ones: the mean pooling counted the padding (IsoScore 0.4133 where the mask gave 0.4524).
    """
    if "attention_mask" in probe:
        return
    key = next((k for k in probe if _names_the_mask(k)), None)
    if key is not None:
        raise IsotropyValueError(f"{start} must have the mask of its padding as 'attention_mask' (the pooling and the "
                                 f"model read that key; without it every position counts as a token). Got {key!r} "
                                 f"and no 'attention_mask' instead.{did_you_mean(key, ['attention_mask'], cutoff=0)}")


def _encoded(probe, *, name, caller):
    """The encoded probe as ``{key: tensor}``: ``input_ids``, ``attention_mask`` (all ones if absent) and
    ``token_type_ids`` (arrays and nested lists, as a tokenizer's ``return_tensors="np"`` or none gives them, made
    tensors; the last two of the shape of ``input_ids``; a mask of 0s and 1s with a real token in every row), and
    the other keys that are tensors with the probe's rows (others, such as a text column, are not passed on). The
    mask under another key, without ``attention_mask``, is refused (:func:`_refuse_misnamed_mask`)."""
    start = f"The '{name}' parameter of {caller}"
    if "input_ids" not in probe:
        raise IsotropyValueError(f"{start} must be a list of texts or a dict with an 'input_ids' tensor of shape "
                                 f"(n_rows, seq). Got keys {sorted(probe)} instead.")

    def tensor(key, expected):
        value = probe[key]
        if not isinstance(value, torch.Tensor):
            try:
                array = np.asarray(value)
            except ValueError:  # nested lists of different lengths
                array = None
            if array is None or array.dtype.kind not in "biuf":
                got = "ragged rows" if array is None else type(value).__name__
                raise TypeError(f"{start} must have {key!r} as a tensor, array or nested list of numbers of shape "
                                f"{expected}. Got {got} instead.")
            value = as_tensor(array)
        return value

    ids = tensor("input_ids", "(n_rows, seq)")
    if ids.ndim != 2 or ids.dtype.is_floating_point or ids.dtype == torch.bool or ids.dtype.is_complex:
        got = f"shape {tuple(ids.shape)}" if ids.ndim != 2 else f"dtype {ids.dtype}"
        raise IsotropyValueError(f"{start} must have 'input_ids' of integer token ids of shape (n_rows, seq). "
                                 f"Got {got} instead.")
    if ids.dtype not in (torch.int32, torch.int64):  # uint8/int16 ids: an embedding takes int32 or int64 only
        ids = ids.long()
    if ids.numel() and int(ids.min()) < 0:  # every position is embedded, padding too: torch's IndexError at step 0
        where = tuple(int(i) for i in (ids < 0).nonzero()[0])
        raise IsotropyValueError(f"{start} must have 'input_ids' of token ids 0 or more (padding included). Got "
                                 f"{int(ids[where])} at {where} instead.")
    n, seq = ids.shape
    _refuse_misnamed_mask(probe, start=start)
    encoded = {"input_ids": ids}
    for key in probe:
        if key == "input_ids":
            continue
        if key not in _TOKEN_KEYS:
            # other keys (a datasets batch's text column, labels, idx) are the model's business only as tensors of
            # the probe's rows, as before: anything else is not passed to the model
            value = probe[key]
            if isinstance(value, torch.Tensor):
                if value.ndim == 0 or value.shape[0] != n:
                    raise IsotropyValueError(f"{start} must have {key!r} of shape ({n}, ...): one row per row of "
                                             f"'input_ids'. Got shape {tuple(value.shape)} instead.")
                encoded[key] = value
            continue
        expected = f"({n}, {seq}) like 'input_ids'"  # one value per token, as input_ids
        value = tensor(key, expected)
        if tuple(value.shape) != (n, seq):
            raise IsotropyValueError(f"{start} must have {key!r} of shape {expected}. Got shape "
                                     f"{tuple(value.shape)} instead.")
        encoded[key] = value
    if "attention_mask" in encoded:  # 0s and 1s, a real token per row: checked once here, in the probe's row order
        check_attention_mask(torch.empty(n, seq, 0), encoded["attention_mask"].cpu(), caller=f"{caller}'s {name}")
    else:
        encoded["attention_mask"] = torch.ones_like(ids)
    return encoded


# zeta's default, 0.2: CosReg refuses a zeta passed to it (even 0.2), and this object is the one not passed
_ZETA = DefaultFloat(0.2)
# pooling's default, "mean": level="token" refuses a pooling passed to it (even "mean"), and this is the one not passed
_POOLING = DefaultName("mean")


# the defaults of the options that embed texts (a probe, a shrinkage sample): refused when passed with none to embed
_BATCH_SIZE = DefaultInt(32)


def _model_config(model):
    """The transformers config of ``model``, also inside a wrapper (DDP's ``module``, ``torch.compile``'s
    ``_orig_mod``); ``None`` for a module without one."""
    for _ in range(8):  # wrappers of wrappers, not for ever
        config = getattr(model, "config", None)
        if config is not None:
            return config
        inner = getattr(model, "module", None)
        model = inner if isinstance(inner, torch.nn.Module) else getattr(model, "_orig_mod", None)
        if not isinstance(model, torch.nn.Module):
            return None
    return None


def _embedding_rows(model):
    """The rows of ``model``'s table of input token embeddings (``get_input_embeddings``, inside wrappers too), else its
    config's ``vocab_size``; ``None`` when neither is known."""
    for _ in range(8):
        get = getattr(model, "get_input_embeddings", None)
        if callable(get):
            try:
                table = get()
            except (NotImplementedError, AttributeError):
                table = None
            if isinstance(getattr(table, "num_embeddings", None), int):
                return table.num_embeddings
            break
        inner = getattr(model, "module", None)
        model = inner if isinstance(inner, torch.nn.Module) else getattr(model, "_orig_mod", None)
        if not isinstance(model, torch.nn.Module):
            return None
    vocab = getattr(_model_config(model), "vocab_size", None)
    return vocab if isinstance(vocab, int) and vocab > 0 else None


def _refuse_past_positions(mask, config, *, name, caller):
    """Refuse encoded rows longer than the positions the model of ``config`` declares (``max_position_embeddings``).

    A table of learned positions (BERT, GPT-2, RoBERTa) fails past it; a rotary model (Gemma, Llama) runs longer
    rows but was trained to that length, and text probes are cut there too: one limit for both.

    A batch is padded to its longest row (:meth:`_Rows.encode` drops only the columns that are padding in all of
    its rows), so the longest input the model is given reaches the last column that holds a real token in some row:
    past ``max_position_embeddings`` (``n_positions``, less RoBERTa's padding offset:
    :func:`isotropy.models.loading.longest_input` without a tokenizer, the cut of text probes) the forward pass
    failed with torch's bare size error. Nothing is checked where the config bounds no positions (T5, ALiBi).
    """
    from isotropy.models.loading import longest_input

    limit = longest_input(config) if config is not None else None
    real = mask.ne(0).any(0).nonzero()
    if limit is None or not real.numel() or int(real[-1]) + 1 <= limit:
        return
    length = int(real[-1]) + 1
    row = int(mask[:, length - 1].ne(0).nonzero()[0])
    # the name the config holds (GPT-2's n_positions is also read as max_position_embeddings)
    attribute = next((name for name in ("max_position_embeddings", "n_positions") if name in vars(config)),
                     "max_position_embeddings")
    table = getattr(config, attribute)
    offset = "" if table == limit else f", less {table - limit} for its padding offset"
    raise IsotropyValueError(f"{caller}: the {name}'s 'input_ids' must be at most {limit} tokens long, the most the "
                             f"model takes (config.{attribute}={table}{offset}). Got rows {length} tokens long "
                             f"(row {row} has a real token at position {length - 1}) instead; cut them to {limit}.")


def _vocabulary_size(tokenizer):
    """The number of tokens ``tokenizer`` has (``len``, its added tokens counted), else ``None``."""
    try:
        size = len(tokenizer)
    except Exception:  # noqa: BLE001 (a tokenizer-like object without a length)
        return None
    return size if isinstance(size, int) and size > 0 else None


def _tokenizer_hint(caller):
    """How the user of ``caller`` gives it a tokenizer: the argument, or where the callback looks for one."""
    if caller.startswith("HF"):  # HFGeometryCallback, HFRegulariser: the Trainer's processing_class (or tokenizer)
        return (f"pass tokenizer=... to {caller}, or give it to the Trainer, Trainer(processing_class=tokenizer), "
                f"where {caller} finds it")
    if caller.startswith("Lightning"):  # the LightningModule's tokenizer attribute, else the datamodule's
        return (f"pass tokenizer=... to {caller}, or set it as the LightningModule's tokenizer attribute "
                f"(pl_module.tokenizer = tokenizer) or the datamodule's (trainer.datamodule.tokenizer), where "
                f"{caller} finds it")
    return f"call {caller}.set_tokenizer(tokenizer) first"


class _Rows:
    """Probe rows: texts (tokenised once per tokenizer) or encoded tensors; ``encode(rows)`` pads a batch.

    A text probe is tokenised on first use, all rows at once, and kept (token ids per row) until the
    tokenizer changes; ``lengths`` holds the token count of every row (the attention mask's sum for
    encoded tensors), by which :class:`GeometryProbe` orders its batches.
    """

    def __init__(self, probe, *, name, caller, max_length, distinct=False):
        self.caller, self.name, self.max_length, self.tokenizer = caller, name, max_length, None
        self.distinct = distinct  # at least 2 distinct rows (a probe: one vector's geometry is undefined)
        self.asked = max_length  # the user's max_length; max_length: it cut to the model's positions (fit)
        # the tokenised texts, and the tokenizer and max_length that made them
        self._tokens, self._tokenised_by, self._tokenised_at = None, None, None
        self._first, self._first_of = None, None  # each row's first row with the same tokens, and of which tokens
        if isinstance(probe, Mapping):
            self.encoded = _encoded(probe, name=name, caller=caller)
            self.texts = None
            n = self.encoded["input_ids"].shape[0]
        elif isinstance(probe, (str, bytes, bytearray)):  # one text per character: refused
            check_texts(probe, caller=caller, name=name, what="a list of texts or a dict of tensors with 'input_ids'")
        elif isinstance(probe, Sequence) or (column := _text_column(probe)) is not None:
            listed = probe if isinstance(probe, Sequence) else column  # a 1-d array or Series of texts: its list
            self.texts, self.encoded = _texts(listed, name=name, caller=caller, given=probe), None
            _refuse_blank_texts(self.texts, name=name, caller=caller)  # when built, not at the first measurement
            n = len(self.texts)
        else:  # a wrong type (a tensor of ids, a 2-d array of texts): a TypeError that says what to pass
            kind = (("f" if probe.is_floating_point() else "i") if isinstance(probe, torch.Tensor) else
                    getattr(getattr(probe, "dtype", None), "kind", None))
            hint = ("; pass a 1-d array or a list of its texts" if kind in ("U", "S", "O") else
                    "; pass token ids as a dict, {'input_ids': probe}" if kind in ("i", "u") else "")
            raise TypeError(f"The '{name}' parameter of {caller} must be a non-empty list of texts or a dict of "
                            f"tensors with 'input_ids'. Got {type(probe).__name__} instead{hint}.")
        if n < 3:
            rows = "texts" if self.encoded is None else "rows of input_ids"
            raise IsotropyValueError(f"The '{name}' parameter of {caller} must have at least 3 {rows}. "
                                     f"Got {n} instead.")
        self.n_rows = n
        if distinct:
            self._refuse_one_row()

    def _refuse_one_row(self):
        """Refuse rows that are all the same (texts, or the real tokens of encoded rows): they are one vector, whose
        geometry is undefined (a probe of one text ten times logged NaN with two warnings that contradicted each
        other)."""
        if self.texts is not None:
            text = self.texts[0]
            n_distinct, rows = len(set(self.texts)), "texts"
            shown = f" ({text!r})" if len(text) <= 40 else f" ({text[:40]!r}...)"
        else:  # the real tokens of each row (padding may differ)
            ids = self.encoded["input_ids"].masked_fill(self.encoded["attention_mask"].eq(0), -1)
            n_distinct, rows, shown = int(torch.unique(ids, dim=0).shape[0]), "rows of input_ids", ""
        if n_distinct < 2:
            raise IsotropyValueError(f"The '{self.name}' parameter of {self.caller} must have at least 2 distinct "
                                     f"{rows}. Got {self.n_rows} {rows}, {n_distinct} distinct{shown}, instead: their "
                                     f"vectors are one point, whose geometry is undefined.")

    def _tokenised(self):
        """The :class:`~isotropy.models.batching.TokenRows` of the texts under the current tokenizer (made once)."""
        if self.tokenizer is None:
            raise IsotropyValueError(f"{self.caller}: the {self.name} is a list of texts but no tokenizer was found; "
                                     f"{_tokenizer_hint(self.caller)} (or pass a dict of encoded tensors as the "
                                     f"{self.name}).")
        if self._tokens is not None and self._tokenised_by is self.tokenizer and self._tokenised_at != self.max_length:
            # another cut (fit: the model's positions) gives the same tokens when no row reached either cut
            longest = int(max(self._tokens.lengths, default=0))
            if longest < self._tokenised_at and longest <= self.max_length:
                self._tokenised_at = self.max_length
        if self._tokens is None or self._tokenised_by is not self.tokenizer or self._tokenised_at != self.max_length:
            tokens = tokenize_texts(self.tokenizer, self.texts, max_length=self.max_length)
            refuse_empty_rows(tokens, self.texts, name=self.name, caller=self.caller, tokenizer_of="its tokenizer")
            _refuse_special_only(tokens, self.texts, self.tokenizer, name=self.name, caller=self.caller)
            if self.distinct and len(distinct_sequences(tokens)[0]) < 2:  # other texts, one row of tokens
                raise IsotropyValueError(
                    f"The '{self.name}' parameter of {self.caller} must have at least 2 texts that tokenise "
                    f"differently. Got {self.n_rows} texts ({len(set(self.texts))} distinct) that its tokenizer "
                    f"makes one row of tokens, instead: their vectors are one point, whose geometry is undefined.")
            self._tokens, self._tokenised_by, self._tokenised_at = tokens, self.tokenizer, self.max_length
        return self._tokens

    def fit(self, model):
        """Cut ``max_length`` to the most tokens ``model`` takes (its table of positions, the tokenizer's
        ``model_max_length``: :func:`isotropy.models.loading.capped_max_length`); returns ``self``.

        Texts longer than the model's positions (the default 128 on a model of 64) crashed its forward pass. Encoded
        tensors are the caller's: taken as given, but refused in one line where the model cannot run them: a token id
        past its table of embeddings (torch's bare IndexError in the forward pass) or rows longer than the positions
        it declares (:func:`_refuse_past_positions`: torch's bare size error).
        """
        table = _embedding_rows(model)
        if self.texts is not None:
            from isotropy.models.loading import capped_max_length

            self.max_length = capped_max_length(self.asked, _model_config(model), self.tokenizer)
            if self.tokenizer is not None and table is not None:  # (without one: refused when the texts are read)
                # a tokenizer of a larger vocabulary than the model's (another model's): torch's bare IndexError
                tokens = self._tokenised()
                ids = tokens.values.get("input_ids")
                if ids is not None and ids.size and int(ids.max()) >= table:
                    at = int(np.argmax(ids >= table))
                    row = int(np.searchsorted(tokens.offsets, at, side="right")) - 1
                    text = self.texts[row]
                    shown = repr(text) if len(text) <= 40 else f"{text[:40]!r}..."
                    tokenizer = type(self.tokenizer).__name__
                    named = getattr(self.tokenizer, "name_or_path", "") or ""
                    size = _vocabulary_size(self.tokenizer)
                    raise IsotropyValueError(
                        f"{self.caller}: the {self.name}'s 'input_ids' must be below the model's {table} token "
                        f"embeddings (its vocabulary). Got {int(ids[at])} in text {row} ({shown}) from its tokenizer "
                        f"({tokenizer}{f' {named!r}' if named else ''}{f' of {size} tokens' if size else ''}) instead: "
                        f"the tokenizer is not the model's; pass the model's own tokenizer.")
        else:  # ids past the model's table of embeddings: torch's bare IndexError in the forward pass
            ids = self.encoded["input_ids"]
            if table is not None and ids.numel() and int(ids.max()) >= table:
                where = tuple(int(i) for i in (ids >= table).nonzero()[0])
                raise IsotropyValueError(f"{self.caller}: the {self.name}'s 'input_ids' must be below the model's "
                                         f"{table} token embeddings (its vocabulary). Got {int(ids[where])} at {where} "
                                         f"instead.")
            _refuse_past_positions(self.encoded["attention_mask"], _model_config(model), name=self.name,
                                   caller=self.caller)
        return self

    def first_rows(self):
        """For a text probe, each row's first row with the same tokens
        (:func:`~isotropy.models.batching.distinct_sequences`); ``None`` for encoded tensors."""
        if self.encoded is not None:
            return None
        tokens = self._tokenised()
        if self._first_of is not tokens:
            self._first, self._first_of = distinct_sequences(tokens)[1], tokens
        return self._first

    @property
    def lengths(self):
        """The token count of every row (list of int)."""
        if self.encoded is not None:
            return self.encoded["attention_mask"].ne(0).sum(1).tolist()
        return self._tokenised().lengths.tolist()

    def encode(self, rows):
        """Inputs for the rows ``rows``, padded (on the right) to the longest of them, on the CPU.

        Encoded tensors are taken as given, less the trailing columns that are padding (attention
        mask 0) in every one of these rows.
        """
        if self.encoded is not None:
            batch = {k: v[rows] for k, v in self.encoded.items()}
            seq = batch["input_ids"].shape[1]
            real = batch["attention_mask"].ne(0).any(0).nonzero()
            width = int(real[-1]) + 1 if real.numel() else seq
            if width < seq:  # every seq-wide tensor loses its all-padding tail
                batch = {k: v[:, :width] if v.ndim >= 2 and v.shape[1] == seq else v for k, v in batch.items()}
            return batch
        return pad_rows(self._tokenised(), rows, pad_id=self.tokenizer.pad_token_id)


class GeometryProbe:
    """Per-layer geometry of a fixed probe set under the model being trained (the callbacks' core).

    Parameters
    ----------
    probe : list of str, 1-d array or Series of str, or dict of tensors
        Texts (tokenised with :meth:`set_tokenizer`'s tokenizer, one row per text; a 1-d numpy array
        or pandas Series of str, ``df["text"]``, is taken as its list) or already
        encoded inputs: a dict with ``input_ids`` of shape ``(n_rows, seq)`` and optionally
        ``attention_mask`` (all ones if absent; 0s and 1s, a 1 in every row) and ``token_type_ids``
        of that shape, and other per-row values; numpy arrays and nested lists are taken as tensors
        (a tokenizer's ``return_tensors="np"`` or none). A value of another shape or type is refused, and so is the
        mask under another key (``"mask"``, ``"input_mask"``, ``"attention_masks"``) without ``attention_mask``; so,
        at the first measurement, are token ids past the model's vocabulary and rows longer than its positions.
    layers : "all", "last", int, str or list of int, default="all"
        Entries of the model's ``hidden_states`` to measure (:func:`isotropy.models.select_layers`
        with ``include_embeddings=False``): ``"all"`` is every transformer layer 1..L; 0 (the
        embedding output) only when listed; negative indices count from the end. Checked here,
        bounded at the first measurement. Logged as ``layer_<i>`` with ``i >= 0``. Each layer once:
        a repeat is refused (``[1, 1]`` here; ``-1`` beside the last index at the first measurement).
    pooling : {"mean", "last", "first"}, default="mean"
        Sentence vector per row (:func:`isotropy.models.pool_hidden_states`): masked mean of the
        tokens, the last non-padding token or the first token ([CLS]).
    metrics : sequence of str or dict, optional
        Names from the metric table (:mod:`isotropy.metrics.table`) that have a torchmetrics class:
        ``isoscore``, ``isoscore_star`` (see ``shrinkage_sample``), ``participation_ratio``,
        ``cosine_similarity_mean``, ``rogue_dimension_share`` (top 1 dimension), ``twonn_dimension``
        (at most 4096 rows), ``effective_rank``, ``rankme``; or a dict ``name -> factory(n_features)``
        returning a fresh torchmetrics ``Metric`` whose ``compute()`` is one number, e.g.
        ``{"iso": lambda d: IsoScore(n_features=d)}`` (a metric instance in its place is refused); each name once (a
        repeat is refused). Default (``None``): ``isoscore``,
        ``cosine_similarity_mean``, ``rogue_dimension_share``, and ``isoscore_star`` when a
        ``shrinkage_sample`` is given (without one it is left out, with a note in the
        ``isotropy.training`` log; asked for by name without one, it warns: Σ_S = I tracks vector norms).
    batch_size : int, default=32
        Most probe rows per forward pass (taken longest first, each batch padded to its own longest
        row; on a CPU a batch ends early where the lengths drop by more than another pass costs;
        texts with the same tokens run once; the metrics get the pooled vectors back in probe
        order, in one update per sorting window of ``batch_size * ceil(1024 / batch_size)`` rows).
    max_length : int, default=128
        Truncation length when tokenising texts; cut to the model's positions (``max_position_embeddings``) and
        the tokenizer's ``model_max_length`` when they are fewer.
    prefix : str, default="geometry"
        First part of the logged keys ``<prefix>/<metric>/layer_<i>``.
    shrinkage_sample : list of str (or a 1-d array or Series of str) or dict of tensors, optional
        A larger sample (e.g. a few hundred training sentences), embedded at each measurement just
        before the probe: its per-layer covariance is Σ_S of ``isoscore_star``, as Rudman & Eickhoff
        compute IsoScore* of a mini-batch. ``None`` uses Σ_S = I (the reference implementation's
        default; scale-dependent: with small hidden-state variances the identity dominates).
    zeta : float in [0, 1] or 0-d tensor, default=0.2
        Shrinkage weight of ``isoscore_star``; a 0-d real tensor or array is read once as a float,
        as by :func:`isotropy.isoscore_star`.
    """

    def __init__(self, probe, *, layers="all", pooling="mean", metrics=None, batch_size=32,
                 max_length=_MAX_LENGTH, prefix="geometry", shrinkage_sample=None, zeta=_ZETA, caller="GeometryProbe"):
        self.caller = caller
        self.max_length = int(check_scalar(max_length, "max_length", caller=caller, kind=numbers.Integral, low=1))
        self.rows = _Rows(probe, name="probe", caller=caller, max_length=self.max_length, distinct=True)
        self.n_rows = self.rows.n_rows
        self.shrinkage_rows = None if shrinkage_sample is None else _Rows(
            shrinkage_sample, name="shrinkage_sample", caller=caller, max_length=self.max_length)
        self.zeta = check_zeta(zeta, caller=caller)
        # the form now, [1, 1] refused; the range, and [-1, 2] (one layer on 2 layers only), once the depth is known
        check_distinct_layers(layers, caller=caller)
        self.layers = layers
        self.pooling = check_pooling(pooling, caller=caller)
        if isinstance(metrics, Mapping):
            self.metric_factories = dict(metrics)
            for name, factory in self.metric_factories.items():
                if not isinstance(name, str) or not name or "/" in name or name != name.strip():
                    # logged as <prefix>/<name>/layer_<i>: a '/' made a key read_geometry_log cannot read back
                    raise IsotropyValueError(f"The 'metrics' parameter of {caller} must map names without '/' (and not "
                                             f"empty) to factories: a name is the middle part of the logged key "
                                             f"{prefix if isinstance(prefix, str) else 'geometry'}/<name>/layer_<i>. "
                                             f"Got {name!r} instead.")
                if not callable(factory):
                    raise TypeError(f"The 'metrics' parameter of {caller} must map names to factories "
                                    f"factory(n_features). Got {type(factory).__name__} for {name!r} instead.")
                _refuse_metric_instance(factory, name, caller)
        else:
            from isotropy.metrics.table import ISOSCORE_STAR_NOTE, ISOSCORE_STAR_WARNING

            if metrics is None:
                names = list(DEFAULT_METRICS)
                if shrinkage_sample is not None:
                    names.insert(1, "isoscore_star")
                else:
                    _LOG.info("%s: %s (shrinkage_sample=).", caller, ISOSCORE_STAR_NOTE)
            else:
                try:  # a generator once, for both checks
                    given = [metrics] if isinstance(metrics, str) else list(metrics)
                except TypeError:
                    given = metrics
                names = check_metric_names(given, caller=caller, allowed=metric_names(torchmetric=True))
                _refuse_repeats(given, metrics, name="metrics", caller=caller, what="metric")
                if "isoscore_star" in names and shrinkage_sample is None and self.zeta > 0:  # ζ = 0: Σ_S unused
                    warnings.warn(f"{caller}: {ISOSCORE_STAR_WARNING} (shrinkage_sample=).", UserWarning,
                                  stacklevel=user_stacklevel())
            self.metric_factories = {name: None for name in names}  # None: the table's class (_make_metric)
        self._asked = {"zeta": zeta, "max_length": max_length}  # passed (not the defaults): refuse_unused
        self.refuse_unused()
        # the imports of the first measurement, now: it then costs what the later ones cost
        import_for_measuring(name for name, factory in self.metric_factories.items() if factory is None)
        self.batch_size = int(check_scalar(batch_size, "batch_size", caller=caller, kind=numbers.Integral, low=1))
        if not isinstance(prefix, str) or not prefix or prefix.startswith("/") or prefix.endswith("/"):
            raise IsotropyValueError(f"The 'prefix' parameter of {caller} must be a non-empty str without a leading "
                                     f"or trailing '/'. Got {prefix!r} instead.")
        self.prefix = prefix
        self._encoders = weakref.WeakKeyDictionary()  # model -> whether to call its base_model instead
        self._said = {}  # (logged key, category, message before its "Got ...") warned of: not again (_warn_once)

    # ----------------------------------------------------------------- inputs
    def set_tokenizer(self, tokenizer):
        """Tokenise text probes with ``tokenizer`` (a transformers tokenizer or text processor) from now on."""
        if tokenizer is not None:
            for rows in (self.rows, self.shrinkage_rows):
                if rows is not None and rows.texts is not None:
                    rows.tokenizer = getattr(tokenizer, "tokenizer", tokenizer)  # a processor wraps its tokenizer
        return self

    def check_model(self, model):
        """Refuse, before any measurement, a probe or shrinkage sample that ``model`` cannot run; returns ``self``.

        Encoded rows with token ids past the model's vocabulary or longer than the positions it declares are refused
        in one line; texts are cut to its positions (:meth:`_Rows.fit`). The callbacks call it when training starts,
        also when it resumes from a checkpoint, whose first measurement may come many steps later: a too-long probe
        was refused only there, after those steps had trained. ``model`` must be a ``torch.nn.Module``
        (:func:`refuse_non_module`).
        """
        refuse_non_module(model, self._method_caller("check_model"))
        for source in (self.rows, self.shrinkage_rows):
            if source is not None:
                source.fit(model)
        return self

    def _pooled(self, model, source, rows, device, forward_kwargs):
        """Yield ``({layer: pooled vectors}, real)`` for the rows ``rows`` of ``source``, a window of rows at a time.

        The forward passes take the rows longest first (a window of at most ``_SORT_WINDOW`` rows
        at a time), each batch padded only to its own longest row, the batches cut by
        :func:`_length_batches` (at most ``batch_size`` rows); the pooled vectors are then put
        back in the order of ``rows`` and handed out a window at a time (one metric update per
        window, not per batch: 6 layers x 3 metrics x 8 batches of 32 cost ~0.1 s of float64 merges per
        measurement of 256 rows, one update per layer and metric ~0.04 s), so the metrics see the rows
        as an unsorted pass would give them (to float32 rounding: other batch compositions; to
        float64 rounding: other splits of the metrics' updates). A rank with no rows still runs one forward pass (on row 0) and yields its
        vectors with ``real=False``: it needs the layers and widths to join the metrics' sync.
        Texts with the same tokens run once and share their vectors (exactly equal rows, as
        :func:`isotropy.models.encoders.encode_pooled` gives them), also across windows: the vectors
        of a sequence that comes back in a later window are kept until then.
        """
        size = self.batch_size
        if not rows:
            inputs = {k: v.to(device) for k, v in source.encode([0]).items()}
            yield self._forward_pooled(model, inputs, forward_kwargs), False
            return
        lengths, first = source.lengths, source.first_rows()
        window = size * max(1, -(-_SORT_WINDOW // size))  # whole batches of the unsorted order
        starts = range(0, len(rows), window)
        # the sequences (first rows) that come back in a later window: their vectors are kept from the window that
        # runs them, so that every row of one sequence gets the same vector, however far apart the rows are
        last = {}  # sequence -> the last window it is in
        for start in starts if first is not None else ():
            for r in rows[start:start + window]:
                last[int(first[r])] = start
        kept = {}  # sequence -> {layer: (d,) vector}, from its first window to its last
        for start in starts:
            part = rows[start:start + window]
            if first is None:
                run, sequence_of = part, None
            else:  # each sequence once, and not again once kept
                sequence_of = [int(first[r]) for r in part]
                run = [q for q in dict.fromkeys(sequence_of) if q not in kept]
            order = sorted(range(len(run)), key=lambda j: -lengths[run[j]])  # longest first, stable
            bounds = _length_batches(tuple(lengths[run[j]] for j in order), size, _PASS_COST.get(device.type))
            chunks = []
            for a, b in bounds:
                inputs = {key: v.to(device) for key, v in source.encode([run[j] for j in order[a:b]]).items()}
                chunks.append(self._forward_pooled(model, inputs, forward_kwargs))
            computed = {}  # layer -> (len(run), d) vectors in the order of run
            if chunks:
                back = torch.empty(len(order), dtype=torch.long)
                back[torch.tensor(order)] = torch.arange(len(order))  # the sorted position of each row of run
                computed = {i: torch.cat([c[i] for c in chunks])[back.to(chunks[0][i].device)] for i in chunks[0]}
            if sequence_of is None:
                pooled = computed
            else:
                at = {q: j for j, q in enumerate(run)}
                for q in at:
                    if last[q] != start:  # a copy: a view would hold the window's vectors
                        kept[q] = {i: vectors[at[q]].clone() for i, vectors in computed.items()}
                reused = [q for q in dict.fromkeys(sequence_of) if q not in at]  # run in an earlier window
                source_of = {**at, **{q: len(run) + j for j, q in enumerate(reused)}}
                index = torch.tensor([source_of[q] for q in sequence_of], dtype=torch.long)
                layers = computed.keys() if computed else kept[reused[0]].keys()
                pooled = {}
                for i in layers:
                    rows_of = [computed[i]] if computed else []
                    if reused:
                        rows_of.append(torch.stack([kept[q][i] for q in reused]))
                    stacked = torch.cat(rows_of) if len(rows_of) > 1 else rows_of[0]
                    pooled[i] = stacked[index.to(stacked.device)]
                for q in reused:
                    if last[q] == start:  # not met again
                        del kept[q]
            yield pooled, True

    def _forward_pooled(self, model, inputs, forward_kwargs):
        """``{layer: (batch, d) pooled vectors}`` of the chosen layers for one batch of inputs."""
        states = forward_hidden_states(model, inputs, self.caller, forward_kwargs)
        # the probe's own masks: padded from rows with a real token each (checked when the probe was built or its
        # texts tokenised), so no check per batch
        mask = inputs["attention_mask"].to(states[0].device)
        return {i: _pool(states[i], mask, self.pooling) for i in self._layer_ids(len(states))}

    def _encoder(self, model, device, forward_kwargs, world_size):
        """The module whose forward gives the hidden states of ``model``: its ``base_model`` when that gives them.

        A transformers model with a task head (``BertForSequenceClassification``: dropout and
        classifier; ``GPT2LMHeadModel``: a vocabulary-wide LM head, ~30 % of GPT-2 small's multiply-adds per token
        and a (batch, seq, vocab) logits tensor) returns the hidden states of its ``base_model``,
        the encoder or decoder stack. Those are used when, on the shortest and the longest probe
        row (padding included), ``base_model`` gives exactly (``torch.equal``) the hidden states
        ``model`` gives; else, or when ``base_model`` fails (out of memory excepted: that is
        raised), ``model`` itself. Checked once per model (one pass of each on two rows; the
        decision is kept, not the base model: a ``base_model`` property may build a new module at
        each call). ``model`` itself, unchecked, with ``forward_kwargs``, in a run of more than one
        process (``world_size``: :meth:`measure` passes the larger of its own and ``torch.distributed``'s; each rank would decide alone, and ranks
        that disagree, or a base model that skips the FSDP/ZeRO-3 root's gathering of the
        parameters, issue different collectives: a hang), for a model with FSDP modules, and for a
        compiled model (``torch.compile(model)``, whose ``base_model`` is the uncompiled one, or
        ``model.compile()``).
        """
        if forward_kwargs or world_size > 1 or _compiled(model) or _sharded(model):
            return model
        base = getattr(model, "base_model", None)
        if not isinstance(base, torch.nn.Module) or base is model:
            return model
        same = self._encoders.get(model)
        if same is None:
            lengths = self.rows.lengths
            rows = sorted({min(range(self.n_rows), key=lengths.__getitem__),
                           max(range(self.n_rows), key=lengths.__getitem__)})
            inputs = {k: v.to(device) for k, v in self.rows.encode(rows).items()}
            expected = forward_hidden_states(model, inputs, self.caller)
            try:
                got = _hidden_states(base(**inputs, output_hidden_states=True, return_dict=True), self.caller)
            except Exception as exc:  # whatever the base model refuses or fails at: the whole model; not out of memory
                if _out_of_memory(exc):
                    raise
                got = None
            same = self._encoders[model] = got is not None and len(got) == len(expected) and all(
                g.shape == e.shape and torch.equal(g, e) for g, e in zip(got, expected))
        return base if same else model

    def _shrinkage_covariances(self, model, rank, world_size, device, forward_kwargs):
        """Per-layer Σ_S: the covariance of the pooled shrinkage sample (summed across ranks)."""
        from isotropy.training.metrics import IsoScore

        share = list(range(rank, self.shrinkage_rows.n_rows, world_size))
        accumulators = None
        for pooled, real in self._pooled(model, self.shrinkage_rows, share, device, forward_kwargs):
            if accumulators is None:
                accumulators = {i: IsoScore(n_features=vectors.shape[-1]) for i, vectors in pooled.items()}
            if real:
                for i, accumulator in accumulators.items():
                    accumulator.update(pooled[i])
        covariances = {}
        for i, accumulator in accumulators.items():
            with accumulator.sync_context():
                covariances[i] = accumulator.to_accumulator().covariance()
        return covariances

    def refuse_unused(self, *, tokenizer=None):
        """Refuse, in one line, an option that was passed and that nothing here uses: ``zeta`` without
        ``isoscore_star`` among the metrics, ``max_length`` and ``tokenizer`` (``None``: not passed) when neither
        the probe nor the shrinkage sample is texts. Taken and ignored, the user believed them in effect."""
        texts = self.rows.texts is not None or (self.shrinkage_rows is not None and self.shrinkage_rows.texts is not None)
        passed = {**self._asked, "tokenizer": tokenizer}
        for name, value in passed.items():
            if value is None or value is _ZETA or value is _MAX_LENGTH:
                continue
            if name == "zeta" and "isoscore_star" not in self.metric_factories:
                why, advice = "isoscore_star is not among the metrics", "leave it out, or add isoscore_star"
            elif name != "zeta" and not texts:
                why, advice = "the probe (and any shrinkage_sample) is already tokenised (a dict of tensors)", "leave it out"
            else:
                continue
            if isinstance(value, (int, float, str)):
                shown = repr(value)
            elif getattr(value, "ndim", None) == 0 and callable(getattr(value, "item", None)):  # numpy scalar, 0-d tensor
                shown = f"{value.item()!r} (a {type(value).__name__})"
            else:
                shown = f"a {type(value).__name__}"
            what = "the shrinkage of isoscore_star" if name == "zeta" else "tokenising texts"
            raise IsotropyValueError(f"The '{name}' parameter of {self.caller} applies to {what} only, and {why}. "
                                     f"Got {shown} instead; {advice}.")

    def _layer_ids(self, n_states):
        ids = select_layers(self.layers, n_states, include_embeddings=False, caller=self.caller)
        check_distinct_layers(self.layers, n_states, caller=self.caller)  # -1 and the last index: one hidden state
        return ids

    # ----------------------------------------------------------------- measuring
    def _make_metric(self, name, factory, n_features, shrink, layer):
        if factory is not None:
            metric = factory(n_features)
            if not all(callable(getattr(metric, method, None)) for method in ("update", "compute", "reset")):
                raise TypeError(f"The 'metrics' parameter of {self.caller} must map names to factories "
                                f"factory(n_features) that return a metric (update, compute, reset: a torchmetrics "
                                f"Metric). Got {type(metric).__name__} from the factory of {name!r} instead.")
            return metric
        from isotropy.training.metrics import metric_from_name

        options = dict(_PROBE_OPTIONS.get(name, {}))
        if name == "isoscore_star":
            options.update(zeta=self.zeta, shrinkage_cov=None if shrink is None else shrink[layer])
            if shrink is None:  # warned once, when the callback was made: not again per layer and epoch
                from isotropy.training.metrics import no_shrinkage_cov_warning

                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", message=re.escape(no_shrinkage_cov_warning()))
                    return metric_from_name(name, n_features=n_features, **options)
        return metric_from_name(name, n_features=n_features, **options)

    def _share(self, rank, world_size):
        """The rows rank ``rank`` embeds: every ``world_size``-th row of encoded tensors; of a text probe, every
        ``world_size``-th distinct token sequence with all its rows, so that the rows of one sequence run on one
        rank and get one vector (two ranks would run them in other batches: vectors a few ulps apart)."""
        first = self.rows.first_rows() if world_size > 1 else None
        if first is None:
            return list(range(rank, self.n_rows, world_size))
        sequence = np.searchsorted(np.unique(first), first)  # the distinct sequences in order of first appearance
        return np.flatnonzero(sequence % world_size == rank).tolist()

    @torch.no_grad()
    def measure(self, model, *, rank=None, world_size=None, forward_kwargs=None):
        """Embed this rank's share of the probe with ``model`` and return every logged value.

        Parameters
        ----------
        model : torch.nn.Module
            Called as ``model(**inputs, output_hidden_states=True, return_dict=True)`` (a transformers
            model, or a module accepting those arguments); its device is that of its parameters. A
            plain function of a batch is refused (TypeError): it has no eval mode to put it in and no
            device (:func:`refuse_non_module`); wrap it in a module. A
            model with a ``base_model`` that gives the same hidden states (checked once, exactly, on
            two probe rows) has that called instead: its task head (classifier, LM head) is not run;
            not in a run of more than one process, nor for a compiled or FSDP-wrapped model, nor with
            ``forward_kwargs`` (:meth:`_encoder`).
        rank, world_size : int, optional
            This process's share of the probe; default from ``torch.distributed`` when initialised,
            else the whole probe. Every rank must call ``measure`` (the metrics sync in ``compute``).
        forward_kwargs : dict, optional
            Extra keyword arguments of the forward call.

        Returns
        -------
        dict
            ``{"<prefix>/<metric>/layer_<i>": float}``. A metric that is undefined for the probe
            (e.g. identical rows) gives NaN with a warning.
        """
        refuse_non_module(model, self._method_caller("measure"))
        distributed = torch.distributed.is_available() and torch.distributed.is_initialized()
        if rank is None:
            rank = torch.distributed.get_rank() if distributed else 0
        processes = torch.distributed.get_world_size() if distributed else 1
        if world_size is None:
            world_size = processes
        parameter = next(iter(model.parameters()), None)
        device = parameter.device if parameter is not None else torch.device("cpu")
        self.check_model(model)  # texts cut to the model's positions before they are read
        rows = self._share(rank, world_size)
        was_training = model.training
        model.eval()
        try:
            # the whole model in a run of several processes, also where this call measures the whole probe
            encoder = self._encoder(model, device, forward_kwargs, max(world_size, processes))
            shrink = None if self.shrinkage_rows is None else self._shrinkage_covariances(
                encoder, rank, world_size, device, forward_kwargs)
            metrics, widths = None, {}
            for pooled, real in self._pooled(encoder, self.rows, rows, device, forward_kwargs):
                if metrics is None:
                    widths = {i: vectors.shape[-1] for i, vectors in pooled.items()}
                    metrics = {(name, i): self._make_metric(name, factory, vectors.shape[-1], shrink, i)
                               for i, vectors in pooled.items() for name, factory in self.metric_factories.items()}
                if real:
                    for (name, i), metric in metrics.items():
                        metric.update(pooled[i])
        finally:
            model.train(was_training)
        values = {}
        for (name, i), metric in metrics.items():
            key = f"{self.prefix}/{name}/layer_{i}"
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    values[key] = self._logged_value(metric.compute(), name, key)
                except IsotropyValueError as exc:
                    warnings.warn(f"{self.caller}: {key} is undefined for this probe ({exc}); logged as NaN.",
                                  RuntimeWarning)
                    values[key] = float("nan")
            for said in caught:
                self._warn_once(key, said)
            bound = span_bound_warning(name, self.n_rows, widths[i])
            if bound is not None:  # once per metric, not per layer: the probe's rows are the same at every layer
                self._warn_once(f"{self.prefix}/{name}", warnings.WarningMessage(
                    UserWarning(f"{self.caller}: the probe's {bound}"), UserWarning, __file__, 0))
        return values

    def _method_caller(self, method):
        """The name of ``method`` in messages: ``GeometryProbe.measure``, or the callback that built the probe."""
        return f"GeometryProbe.{method}" if self.caller == "GeometryProbe" else self.caller

    def _logged_value(self, value, name, key):
        """``float(value)`` of a metric's ``compute()``; a value that is not one number (a factory's metric returning
        rows, a dict) is refused in one line naming the metric, where ``float`` raised "only one element tensors can be
        converted to Python scalars\"."""
        try:
            return float(value)
        except (TypeError, ValueError, RuntimeError):
            got = (f"a tensor of shape {tuple(value.shape)}" if isinstance(value, torch.Tensor) else
                   type(value).__name__)
            raise TypeError(f"The 'metrics' parameter of {self.caller} must map names to factories of metrics whose "
                            f"compute() returns one number (logged as {key}). Got {got} from the factory of {name!r} "
                            f"instead.") from None

    def _warn_once(self, key, said):
        """Give a metric's warning for ``key`` once per kind, not at every measurement of a training run.

        A metric's warning carries its numbers ("Got a mean cosine similarity of 0.0123 ..."), so Python's filter,
        which repeats a warning whose text differs, said it again at every measurement for every layer. Its kind is
        its text before the numbers (" Got "); the first is given, with a word that later ones are not; the NaN or
        value logged at each step says the rest. Given through the user's own filters (an "error" filter raises it).
        Claimed with one ``dict.setdefault`` (a single step under the GIL, where a look and then an insert let two
        threads measuring at once both give it), without a lock, which would make the probe unpicklable.
        """
        text = str(said.message)
        kind = (key, said.category, text.split(" Got ")[0])
        claim = object()
        if self._said.setdefault(kind, claim) is not claim:
            return
        # the user's line, also through the callbacks (isotropy's own frames: stacklevel=3 named the callback's line)
        warnings.warn(f"{text} (said once for {key}; later measurements do not repeat it)", said.category,
                      stacklevel=user_stacklevel())
