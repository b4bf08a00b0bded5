"""torchmetrics metrics of embedding geometry: IsoScore, IsoScore*, participation ratio, effective rank, RankMe, mean cosine, rogue share, TwoNN.

Each metric is a thin stateful wrapper around the toolkit's streaming covariance
(:class:`isotropy.CovarianceAccumulator`, :func:`isotropy._kernels.accumulator.merge_moments`):
``update`` adds a batch of rows of shape ``(n_samples, n_features)``, ``compute`` returns the pure
function's value on every row seen. The states are the count, mean and *centred* scatter matrix of
the rows (in units of a power of two, so data at 1e±150 neither over- nor underflows), merged with
the pairwise update of Chan, Golub & LeVeque: after any split into batches, after ``merge_state``
and after a sync across DDP processes (``dist_reduce_fx="cat"`` gathers every process's states,
``compute`` merges them) the value is the pure function on all rows, to float64 rounding, however
far the data sit from the origin. TwoNN is not a function of moments: it keeps the rows
(``dist_reduce_fx="cat"``), optionally capped by a seeded uniform sample.

``metric(batch)`` (torchmetrics' ``forward``, the usual call in a Lightning step) adds the batch
and returns the value of that batch alone: NaN when the batch alone does not define it (one row; said once),
while the rows still count towards ``compute``. Names, families and classes are listed once in
:mod:`isotropy.metrics.table`; :func:`metric_from_name` builds a class from its table name.

States live on the device of the first batch (or wherever ``.to(device)`` put the metric); values
are returned as 0-dim float64 tensors there (MPS, which has no float64, accumulates on the CPU).
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from isotropy._utils.install import extra_imports

with extra_imports("isotropy.training", "train"):  # a missing package named with its extra, in one line
    import torch
    from torchmetrics import Metric

from isotropy._kernels.accumulator import CovarianceAccumulator, Moments, merge_moments
from isotropy._kernels.isoscore import check_covariance
from isotropy._kernels.rows import first_chunk_shift
from isotropy._utils.backend import as_tensor
from isotropy._utils.magnitude import rescaled
from isotropy._utils.validation import (
    SEED_MAX,
    IsotropyValueError,
    check_bool,
    check_option,
    check_real,
    check_scalar,
    check_X,
    check_zeta,
    refuse_subnormal_as_given,
)
from isotropy._utils.warn import user_stacklevel

__all__ = ["EffectiveRank", "IsoScore", "IsoScoreStar", "MeanCosine", "ParticipationRatio", "RankMe",
           "RogueDimensionShare", "TwoNNDimension", "metric_from_name"]

# the keywords torchmetrics.Metric takes (named in the message of a wrong keyword)
_TORCHMETRICS_KEYWORDS = ("compute_on_cpu", "dist_sync_on_step", "process_group", "dist_sync_fn",
                          "distributed_available_fn", "sync_on_compute", "compute_with_cache")


def _as_rows(X, metric):
    """Validated detached float64 rows of ``X`` on the metric's working device (moving the states there first);
    ``None`` for a batch of no rows of the metric's width (nothing to add: the last batch of a filtered stream, a
    process's share that came out empty), which was an error."""
    caller = f"{type(metric).__name__}.update"
    if not isinstance(X, torch.Tensor):  # numpy's checks of its type (a str gave torch's "can't convert np.ndarray of
        # type numpy.str_"); its shape and values are checked below, after the empty batch's way out
        X = as_tensor(check_X(X, caller=caller, min_samples=0, allow_nonfinite=True))
    if X.ndim == 2 and X.shape[0] == 0 and X.shape[1] > 0:
        fixed = metric.n_features or (metric._width() if metric._has_data() else 0)
        _check_width(caller, fixed, X.shape[1])
        return None
    given = X
    X = check_X(X, caller=caller, min_samples=1)
    if metric.device.type == "meta" or _on_meta(metric):  # built under torch.device("meta") (a module's deferred
        # init) or moved there: no data
        _materialise(metric, X.device if X.device.type != "mps" else torch.device("cpu"))
    if getattr(metric, "_moments", True):  # float16 read as float32: judged in float16, as the functions judge a batch
        refuse_subnormal_as_given(given, X, caller=caller)  # (the cosine metrics judge rows, and measure them alike)
    device = X.device if X.device.type != "mps" else torch.device("cpu")
    if metric.device != device and not metric._has_data():
        metric.to(device)  # a fresh metric follows its input
    return X.detach().to(device=metric.device, dtype=torch.float64)


def _on_meta(metric) -> bool:
    """Whether ``metric``'s states are on the meta device, which holds shapes and no data (a list state by its first
    tensor: they share a device, and TwoNN's lists grow by one a batch, so a walk of them cost O(batches) an update)."""
    return any(isinstance(value, torch.Tensor) and value.is_meta for state in metric.metric_state.values()
               for value in (state[:1] if isinstance(state, list) else [state]))


def _refuse_meta(metric) -> None:
    """Refuse to read the states of a metric moved to the meta device, whose rows are gone (``.item()`` there was
    torch's bare "cannot be called on meta tensors")."""
    if _on_meta(metric):
        raise IsotropyValueError(f"{type(metric).__name__}: its states are on the 'meta' device, which holds no data; "
                                 f"update it with rows on a real device (a metric on the meta device takes the device "
                                 f"of its next batch).")


def _materialise(metric, device) -> None:
    """The states (and the defaults ``reset`` restores) of a metric on the meta device, made again, empty, on
    ``device``: ``with torch.device("meta"): IsoScore()`` then ``update`` on CPU rows failed in torch's ".item() cannot
    be called on meta tensors" (a trial), where the docs say the states live on the device of the first batch. Rows
    moved to the meta device are gone (it holds no data), so nothing is lost that was still there."""
    for name, default in list(metric._defaults.items()):
        if isinstance(default, torch.Tensor):
            metric._defaults[name] = torch.zeros(default.shape, dtype=default.dtype, device=device)
            setattr(metric, name, metric._defaults[name].clone())
        else:  # a list state (TwoNN's rows): empty
            setattr(metric, name, [])
    metric._device = torch.device(device)


def _different_widths(name, widths) -> IsotropyValueError:
    """The refusal of a DDP sync whose processes saw rows of different widths."""
    return IsotropyValueError(f"{name}: the processes saw rows of different widths ({widths} features); every "
                              f"process must update it with rows of one width.")


def _gather_all_tensors():
    """torchmetrics' default gather across processes (imported when a sync needs it)."""
    from torchmetrics.utilities.distributed import gather_all_tensors

    return gather_all_tensors


def no_shrinkage_cov_warning():
    """IsoScoreStar's warning without ``shrinkage_cov``: the table's IsoScore* warning
    (:data:`isotropy.metrics.table.ISOSCORE_STAR_WARNING`) in the terms of this class, which takes the matrix."""
    from isotropy._utils.warn import identity_shrinkage_message

    return identity_shrinkage_message("IsoScoreStar")


def _incoming_state(metric, incoming_state):
    """The ``metric_state`` dict of ``merge_state``'s argument, refused in one line when another metric's or, of a
    metric, when built with other settings (:func:`_refuse_other_settings`)."""
    mine, source, given = type(metric).__name__, None, incoming_state
    if isinstance(incoming_state, Metric):  # judged by its state, as a state dict is: a subclass, or a metric that
        # keeps the same statistics (IsoScore's covariance sums into IsoScoreStar's), merges
        source, incoming_state = type(incoming_state).__name__, incoming_state.metric_state
    elif not isinstance(incoming_state, dict):
        raise TypeError(f"The 'incoming_state' parameter of {mine}.merge_state must be another {mine} or its metric_state "
                        f"dict. Got {type(incoming_state).__name__} instead.")
    if set(incoming_state) != set(metric.metric_state):
        source = source or f"keys {sorted(incoming_state)}, where {mine} has {sorted(metric.metric_state)}"
        raise IsotropyValueError(f"{mine}.merge_state: the incoming state comes from a different metric ({source}); "
                                 f"merge the states of two {mine} metrics.")
    _refuse_other_settings(metric, given)
    return incoming_state


def _setting_text(value):
    """A setting's value in a message: a float as ``:g`` (``0.5``, ``1e-07``), another as its repr."""
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, numbers.Integral)):
        return f"{float(value):g}"
    return repr(int(value)) if isinstance(value, numbers.Integral) and not isinstance(value, bool) else repr(value)


def _same_setting(mine, theirs):
    """Whether two values of a setting are equal: matrices (IsoScoreStar's Σ_S) element for element."""
    if isinstance(mine, torch.Tensor) or isinstance(theirs, torch.Tensor):
        return (isinstance(mine, torch.Tensor) and isinstance(theirs, torch.Tensor) and theirs.shape == mine.shape
                and bool(torch.equal(theirs.to(device=mine.device, dtype=mine.dtype), mine)))
    return mine == theirs


def _refuse_other_settings(metric, incoming):
    """Refuse, in one line, a ``merge_state`` of a metric built with other settings that change the value.

    The receiver's settings would win (its ``compute`` reads its own), so the value depended on the order of the
    merge: IsoScoreStar gave 0.987 one way and 0.781 the other on the same rows, TwoNNDimension's sample of seed 0
    merged with that of seed 1 was neither seed's, RogueDimensionShare summed the receiver's top k. Each class names
    its settings (``_settings``) and gives those in effect (``_setting_values``: Σ_S not at ζ = 0, the seed not
    without ``max_samples``), in the order they are compared (ζ before Σ_S, so that one is in effect on both sides
    when the other is compared). A setting the incoming metric does not have (IsoScore merged into IsoScoreStar,
    EffectiveRank into RankMe) is not compared, and a ``metric_state`` dict carries none: merged as the rows it holds.
    """
    read = getattr(incoming, "_setting_values", None) if isinstance(incoming, Metric) else None
    theirs = read() if callable(read) else {}
    for name, mine in metric._setting_values().items():
        if name not in theirs or _same_setting(mine, theirs[name]):
            continue
        cls = type(metric).__name__
        what = (f"another {name} matrix" if isinstance(mine, torch.Tensor) or isinstance(theirs[name], torch.Tensor)
                else f"{name} {_setting_text(theirs[name])}, where this metric has {_setting_text(mine)}")
        names = list(metric._settings)
        listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
        raise IsotropyValueError(f"{cls}.merge_state: the incoming metric has other settings ({what}); merge {cls} "
                                 f"metrics built with the same {listed}.")


def _keep_float64_states(metric, fn, exclude_state, apply):
    """``Metric._apply`` (``.to``, ``.cuda``, ``.cpu``, ``set_dtype``, a module's ``.to(dtype)``) that moves the states
    to the new device but keeps their dtype.

    torchmetrics casts the states with ``.to(dtype)``: the float64 sums became bfloat16 (``compute`` then raised
    "unsupported ScalarType BFloat16"), float16 (the scatter overflowed) or float32 (values off by 3e-9, the count
    a float32), also when the metric is an attribute of a module converted with ``module.to(torch.bfloat16)``. The
    states are sums whose precision the values need, whatever dtype the model computes in.
    """
    states = [key for key in metric._defaults if key not in exclude_state]
    device = fn(torch.zeros(1, device=metric.device)).device
    this = apply(fn, exclude_state=(*exclude_state, *states))

    def move(value):
        return value.to(device) if isinstance(value, torch.Tensor) else [v.to(device) for v in value]

    for key in states:
        this._defaults[key] = move(this._defaults[key])
        setattr(this, key, move(getattr(this, key)))
    return this


def _merged_as_update(metric):
    """Count a ``merge_state`` that brought rows as an update: torchmetrics warned "compute was called before
    update" on a metric filled by merges alone, whose value was right."""
    if metric._has_data():
        metric._update_count += 1


def _plot(self, val=None, ax=None):
    """Draw the value (``compute()`` when ``val`` is ``None``) or a sequence of values (of ``forward`` or ``compute``)
    with matplotlib; returns ``(figure, axes)``, as torchmetrics' own metrics do (``Metric.plot`` raised a bare
    ``NotImplementedError``)."""
    return self._plot(val, ax)


def _check_width(caller, expected, got, what="the previous batches"):
    if expected and got != expected:
        raise IsotropyValueError(f"The 'X' parameter of {caller} must have {expected} features (columns), like "
                                 f"{what}. Got {got} instead.")


def _refuse_positional(metric, args) -> None:
    """Options given to a metric class by position (``args``): a TypeError that names the class and its keywords."""
    if args:
        name, given = type(metric).__name__, ", ".join(repr(a) for a in args[:3]) + (", ..." if len(args) > 3 else "")
        raise TypeError(f"{name} takes its options as keywords ({', '.join(metric._keywords)}, and torchmetrics."
                        f"Metric's); got {len(args)} positional argument{'s' if len(args) > 1 else ''} ({given}). "
                        f"The rows go to update(): {name}().update(X).")


def _metric_init(metric, init, args, kwargs) -> None:
    """``torchmetrics.Metric.__init__`` (``init``) with ``kwargs``. Options given by position (``args``), and a keyword
    neither it nor the class takes, are a TypeError that names the class and its keywords (Python named the private
    base class whose ``__init__`` refused them, "_MomentMetric.__init__() takes 1 positional argument"; torchmetrics
    says "Unexpected keyword arguments: `x`", a ValueError)."""
    _refuse_positional(metric, args)
    try:
        init(**kwargs)
    except ValueError as exc:
        if "Unexpected keyword" not in str(exc):
            raise
        wrong = ", ".join(repr(k) for k in kwargs if k not in _TORCHMETRICS_KEYWORDS) or str(exc)
        raise TypeError(f"{type(metric).__name__} got an unexpected keyword {wrong}; it takes "
                        f"{', '.join(metric._keywords)} and torchmetrics.Metric's keywords "
                        f"({', '.join(_TORCHMETRICS_KEYWORDS)}).") from None


class _MomentMetric(Metric):
    """Common base: per-part count, mean, centred scatter and exponent (and unit-vector sums), float64.

    Every state has a leading "part" axis: one part on a process (each batch is merged into it at
    once), one per process after a DDP gather (``dist_reduce_fx="cat"``); ``compute`` merges the
    parts (:func:`~isotropy._kernels.accumulator.merge_moments`) and hands the result to a
    :class:`~isotropy.CovarianceAccumulator`, whose methods give the value. The width is fixed by
    ``n_features`` or by the first batch.
    """

    full_state_update = False
    is_differentiable = False
    _keywords = ("n_features",)  # this class's own keywords, for the message of a wrong one
    _n_features_from = "n_features"  # where the fixed width comes from, for the message of a wrong one
    plot = _plot
    _moments = True  # count, mean, scatter, exponent (the covariance metrics)
    _units = False  # sums of unit vectors and of their squares (the cosine metrics)
    _gram = False  # Σ x̂x̂ᵀ of the unit vectors (d × d): the noise of a small mean cosine (RogueDimensionShare)
    _settings = ()  # the options that change the value, which merge_state requires equal (_refuse_other_settings)

    def __init__(self, *args, n_features=None, **kwargs):
        _metric_init(self, super().__init__, args, kwargs)
        check_scalar(n_features, "n_features", caller=type(self).__name__, kind=numbers.Integral, low=1,
                     allow_none=True)
        self.n_features = None if n_features is None else int(n_features)
        self._batch_value = False
        self._said_undefined_batch = False  # (_undefined_batch: said once per metric)
        for name, shape in self._state_shapes(self.n_features or 0).items():
            self.add_state(name, default=torch.zeros(shape, dtype=torch.float64), dist_reduce_fx="cat")

    def _apply(self, fn, exclude_state=()):
        return _keep_float64_states(self, fn, exclude_state, super()._apply)

    def _sync_dist(self, dist_sync_fn=None, process_group=None):
        """torchmetrics' gather, with the states of a process that has seen no rows widened to the others' width.

        Without ``n_features``, a process whose share of the data was empty holds states of width 0 (it
        never learnt the width) and torch's stack of the gathered states failed ("stack expects each
        tensor to be equal size"); its count is 0, so its zero states add nothing to the merge. Processes
        that saw rows of different widths are refused in one line.
        """
        gather = dist_sync_fn or _gather_all_tensors()
        name = type(self).__name__

        def widened(tensor, group=None):
            parts = gather(tensor, group=group)
            shapes = {tuple(part.shape) for part in parts if part.numel()}
            if len(shapes) > 1:
                widths = sorted({shape[-1] for shape in shapes})
                raise _different_widths(name, widths)
            if shapes and any(not part.numel() for part in parts):
                shape = shapes.pop()
                parts = [part if part.numel() else part.new_zeros(shape) for part in parts]
            return parts

        super()._sync_dist(widened, process_group=process_group)

    def _state_shapes(self, d):
        shapes = {"n_samples": (1,)}
        if self._moments:
            shapes.update(shift=(1, d), mean=(1, d), scatter=(1, d, d), exponent=(1,))
        if self._units:
            shapes.update(unit_sum=(1, d), unit_sq_sum=(1, d))
        if self._gram:
            shapes.update(unit_gram=(1, d, d))
        return shapes

    # ------------------------------------------------------------------ states
    def _has_data(self):
        _refuse_meta(self)
        return bool(self.n_samples.sum().item() > 0)

    def _width(self, state=None):
        state = self.metric_state if state is None else state
        key = "mean" if self._moments else "unit_sum"
        return int(state[key].shape[-1])

    def _ensure_width(self, d):
        current = self._width()
        if current == 0:
            for name, shape in self._state_shapes(d).items():
                setattr(self, name, torch.zeros(shape, dtype=torch.float64, device=self.device))
        else:
            _check_width(f"{type(self).__name__}.update", current, d)

    def _parts(self, state):
        """The state as a list of parts ``{name: tensor without the part axis}`` (a gathered state has several)."""
        d = self._width(state)
        shapes = self._state_shapes(d)
        flat = {name: state[name].reshape(-1, *shapes[name][1:]).to(self.device) for name in shapes}
        parts = flat["n_samples"].shape[0]
        for name, value in flat.items():  # a state of another version (one without this state) failed in indexing
            if value.shape[0] != parts:
                raise IsotropyValueError(f"{type(self).__name__}: its state {name!r} holds {value.shape[0]} part(s) "
                                         f"for {parts} count(s); a state saved by another version of isotropy cannot "
                                         f"be resumed; update the metric with the rows again.")
        return [{name: flat[name][i] for name in shapes} for i in range(parts)]

    def _merged(self, parts):
        """One part holding all rows of ``parts`` (Chan, Golub & LeVeque pairwise, as a balanced tree)."""
        parts = [p for p in parts if p["n_samples"].item() > 0]
        if not parts:
            return None
        while len(parts) > 1:
            parts = [self._merge_two(*parts[i:i + 2]) if i + 1 < len(parts) else parts[i]
                     for i in range(0, len(parts), 2)]
        return parts[0]

    def _merge_two(self, a, b):
        out = {"n_samples": a["n_samples"] + b["n_samples"]}
        if self._moments:
            merged = merge_moments(self._as_moments(a), self._as_moments(b))
            out.update(shift=merged.shift, mean=merged.mean, scatter=merged.scatter,
                       exponent=torch.tensor(float(merged.exponent), dtype=torch.float64, device=self.device))
        if self._units:
            out.update(unit_sum=a["unit_sum"] + b["unit_sum"], unit_sq_sum=a["unit_sq_sum"] + b["unit_sq_sum"])
        if self._gram:
            out.update(unit_gram=a["unit_gram"] + b["unit_gram"])
        return out

    @staticmethod
    def _as_moments(part):
        return Moments(int(part["n_samples"].item()), part["mean"], part["scatter"], int(part["exponent"].item()),
                       part["shift"])

    def _store(self, part):
        for name, value in part.items():
            setattr(self, name, value.reshape(1, *value.shape).to(self.device))

    def _reduce_states(self, incoming_state):
        """Merge another state (a ``forward`` call's running state, or ``merge_state``'s) into this one."""
        theirs, mine = self._width(incoming_state), self._width()
        if theirs and mine and theirs != mine:
            raise IsotropyValueError(f"{type(self).__name__}.merge_state: the incoming state has {theirs} features "
                                     f"and this metric {mine}; both must have the same width.")
        parts = (self._parts(incoming_state) if theirs else []) + (self._parts(self.metric_state) if mine else [])
        merged = self._merged(parts)
        if merged is not None:
            self._store(merged)

    def _setting_values(self):
        """``{name: value}`` of the settings in effect, in the order :func:`_refuse_other_settings` compares them."""
        return {name: getattr(self, name) for name in self._settings}

    def merge_state(self, incoming_state):
        """Add the rows of another instance (or of its ``metric_state`` dict); an empty side is allowed.

        Another instance must have the same settings that change the value (``zeta`` and ``shrinkage_cov``,
        ``n_dimensions``, ...: :func:`_refuse_other_settings`); a ``metric_state`` dict carries none.
        """
        other = _incoming_state(self, incoming_state)
        self._reduce_states(other)
        self._computed = None  # a value computed before the merge is stale (torchmetrics keeps it otherwise)
        _merged_as_update(self)

    # ------------------------------------------------------------------ update
    def update(self, X):
        """Add a batch ``X`` of shape ``(n_samples, n_features)`` (tensor or array; float64 accumulation)."""
        caller = f"{type(self).__name__}.update"
        X = _as_rows(X, self)
        if X is None:
            return
        _check_width(caller, self.n_features, X.shape[1], self._n_features_from)
        part = {"n_samples": torch.tensor(float(X.shape[0]), dtype=torch.float64, device=self.device)}
        if self._units:
            part.update(self._unit_sums(X, caller, gram=self._gram))
        self._ensure_width(X.shape[1])
        if self._moments:
            scaled, exponent = rescaled(X, caller=caller)  # (X, 0) at a safe scale; else exact powers of two
            shift = first_chunk_shift(scaled)  # the mean in two parts, shift + rest (see Moments): no digit lost
            centred = scaled - shift
            rest = centred.mean(0)
            part.update(shift=shift, mean=rest, scatter=centred.T @ centred - X.shape[0] * torch.outer(rest, rest),
                        exponent=torch.tensor(float(exponent), dtype=torch.float64, device=self.device))
        merged = self._merged(self._parts(self.metric_state) + [part])
        self._store(merged)

    @staticmethod
    def _unit_sums(X, caller, gram=False):
        top = X.abs().amax(1)
        zero = int((top == 0).sum())
        if zero:  # in the functions' words, with the first one's index (refuse_rows)
            from isotropy._kernels.rows import refuse_rows

            refuse_rows(torch.nonzero(top == 0)[:, 0].cpu().numpy(), np.empty(0, dtype=np.intp), caller=caller,
                        name="X")
        shift = -torch.frexp(top).exponent.to(X.dtype)[:, None]  # each row to unit scale (exact): no overflow
        half = torch.floor(shift / 2)
        U = X * torch.pow(2.0, half) * torch.pow(2.0, shift - half)
        U = U / torch.linalg.vector_norm(U, dim=1, keepdim=True)
        sums = {"unit_sum": U.sum(0), "unit_sq_sum": (U * U).sum(0)}
        if gram:
            sums["unit_gram"] = U.T @ U
        return sums

    # ------------------------------------------------------------------ compute
    def forward(self, *args, **kwargs):
        """Add the batch and return the value of that batch alone (NaN where one batch does not define it)."""
        self._batch_value = True
        try:
            return super().forward(*args, **kwargs)
        finally:
            self._batch_value = False

    def _all_rows(self, min_samples=2):
        """The merged part of every row seen (all processes after a sync); raises below ``min_samples`` rows."""
        _refuse_meta(self)
        merged = self._merged(self._parts(self.metric_state)) if self._width() else None
        n = 0 if merged is None else int(merged["n_samples"].item())
        if n < min_samples:
            raise TooFewRowsError(f"{type(self).__name__}.compute needs at least {min_samples} rows; call update() with "
                              f"data first. Got {n} instead.", rows=n, need=min_samples)
        return merged

    def to_accumulator(self):
        """The :class:`~isotropy.CovarianceAccumulator` of the rows seen (of every process inside ``sync_context``)."""
        part = self._all_rows(min_samples=1)
        moments = Moments(int(part["n_samples"].item()), part["mean"].cpu().numpy(), part["scatter"].cpu().numpy(),
                          int(part["exponent"].item()), part["shift"].cpu().numpy())
        return CovarianceAccumulator._from_moments(moments, n_features=moments.mean.shape[0])

    def _value(self, read):
        """``read()`` as a 0-dim float64 tensor on the metric's device; NaN for a batch value it cannot define."""
        try:
            value = read()
        except IsotropyValueError as exc:
            if not self._batch_value:
                raise
            value = _undefined_batch(self, _batch_reason(exc))
        return torch.tensor(float(value), dtype=torch.float64, device=self.device)

    def _from_accumulator(self, method, min_samples=2, **kwargs):
        caller = f"{type(self).__name__}.compute"

        def read():
            self._all_rows(min_samples=min_samples)
            accumulator = self.to_accumulator()
            try:
                return getattr(accumulator, method)(**kwargs)
            except IsotropyValueError as exc:  # name the metric, not the accumulator it wraps
                # compute takes no data: the rows are what update saw
                message = str(exc).replace("The rows given to CovarianceAccumulator.update",
                                           f"The rows given to {type(self).__name__}.update")
                raise IsotropyValueError(message.replace(f"CovarianceAccumulator.{method.lstrip('_')}", caller)) from None

        return self._value(read)


class IsoScore(_MomentMetric):
    """IsoScore of all rows seen, as a torchmetrics metric (exact over batches, merges and DDP).

    Parameters
    ----------
    n_features : int, optional
        Width of the rows. Optional on one process (taken from the first batch); under DDP give it
        (or make sure every process updates before ``compute``) so every process holds states of
        the same shape for the gather across processes.
    **kwargs
        Passed to :class:`torchmetrics.Metric` (``sync_on_compute``, ``process_group``, ...).

    Notes
    -----
    States per part: n, μ (d,, kept as a shift plus a remainder), the centred scatter M = Σ(x − μ)(x − μ)ᵀ (d, d) and a power-of-two
    exponent, float64, gathered by ``cat`` and merged (Chan et al.) in ``compute``, which forms
    C = M/(n − 1) and returns ((tr C)²/‖C‖²_F − 1)/(d − 1), the closed form of :func:`isotropy.isoscore`.
    It equals the function on the concatenated rows to float64 rounding, also for data offset by
    1e8 or scaled by 1e±150. Memory O(d²), time O(n·d²).

    References
    ----------
    .. [1] W. Rudman, N. Gillman, T. Rayne and C. Eickhoff, "IsoScore: Measuring the Uniformity
       of Embedding Space Utilization", Findings of ACL 2022.
    .. [2] T. F. Chan, G. H. Golub and R. J. LeVeque, "Updating Formulae and a Pairwise Algorithm
       for Computing Sample Variances", Stanford CS report STAN-CS-79-773, 1979.

    Examples
    --------
    >>> import torch
    >>> from isotropy import isoscore
    >>> from isotropy.training import IsoScore
    >>> X = torch.randn(300, 5, generator=torch.Generator().manual_seed(0)) * torch.tensor([1.0, 1, 2, 2, 3])
    >>> metric = IsoScore()
    >>> for batch in X.split(64):
    ...     _ = metric(batch)   # forward: adds the batch, returns its own IsoScore
    >>> abs(float(metric.compute()) - isoscore(X.double().numpy())) < 1e-12
    True
    """

    higher_is_better = True

    def compute(self):
        return self._from_accumulator("isoscore")


class ParticipationRatio(_MomentMetric):
    """Participation ratio (Σλ)²/Σλ² of the covariance of all rows seen, as a torchmetrics metric.

    Parameters
    ----------
    n_features : int, optional
        As :class:`IsoScore`.
    **kwargs
        Passed to :class:`torchmetrics.Metric`.

    Notes
    -----
    Same states as :class:`IsoScore`; (tr C)²/‖C‖²_F equals :func:`isotropy.participation_ratio` on all
    rows seen (to float64 rounding): between 1 (one direction) and d (isotropic).

    Examples
    --------
    >>> import torch
    >>> from isotropy.training import ParticipationRatio
    >>> metric = ParticipationRatio()
    >>> metric.update(torch.randn(2000, 4, generator=torch.Generator().manual_seed(0)))
    >>> round(float(metric.compute()))
    4
    """

    higher_is_better = None

    def compute(self):
        return self._from_accumulator("participation_ratio")


class IsoScoreStar(_MomentMetric):
    """IsoScore* (IsoScore of (1 − ζ)·C + ζ·Σ_S) of all rows seen, as a torchmetrics metric.

    Parameters
    ----------
    shrinkage_cov : tensor or array of shape (n_features, n_features), optional
        Σ_S, the covariance of a larger sample (``isotropy.torch.shrinkage_covariance(sample)`` or
        ``np.cov(sample, rowvar=False)``); ``None`` (default) uses the identity and warns, as the
        callbacks do (the value then tracks the vector norms). Kept as a float64 buffer that moves
        with the metric.
    zeta : float in [0, 1] or 0-d tensor, default=0.2
        Shrinkage weight ζ; a 0-d real tensor or array is read once as a float, as by
        :func:`isotropy.isoscore_star`.
    n_features : int, optional
        As :class:`IsoScore`; implied by ``shrinkage_cov`` when given.
    **kwargs
        Passed to :class:`torchmetrics.Metric`.

    Notes
    -----
    Same states as :class:`IsoScore`; ``compute`` equals :func:`isotropy.isoscore_star` on all
    rows seen (to float64 rounding). At ``zeta=1`` with ``shrinkage_cov`` the value is the IsoScore
    of Σ_S from one row on (``forward`` of a one-row batch gives it, not NaN).

    References
    ----------
    .. [1] W. Rudman and C. Eickhoff, "Stable Anisotropic Regularization", ICLR 2024.

    Examples
    --------
    >>> import torch
    >>> from isotropy import isoscore_star
    >>> from isotropy.training import IsoScoreStar
    >>> X = torch.randn(40, 6, generator=torch.Generator().manual_seed(0))
    >>> S = torch.cov(torch.randn(500, 6, generator=torch.Generator().manual_seed(1)).T)  # Σ_S of a larger sample
    >>> metric = IsoScoreStar(shrinkage_cov=S, zeta=0.5)
    >>> metric.update(X[:25]); metric.update(X[25:])
    >>> abs(float(metric.compute()) - isoscore_star(X.double().numpy(), shrinkage_cov=S.double().numpy(), zeta=0.5)) < 1e-12
    True
    """

    higher_is_better = True
    _keywords = ("shrinkage_cov", "zeta", "n_features")
    _settings = ("zeta", "shrinkage_cov")

    def __init__(self, *args, shrinkage_cov=None, zeta=0.2, n_features=None, **kwargs):
        _refuse_positional(self, args)
        caller = "IsoScoreStar"
        if "shrinkage_sample" in kwargs:  # the callbacks' and regularisers' name for Σ_S's source
            sample = kwargs["shrinkage_sample"]
            got = f"an array of shape {tuple(sample.shape)}" if hasattr(sample, "shape") else type(sample).__name__
            raise TypeError(f"The 'shrinkage_sample' keyword is not one of IsoScoreStar's ({', '.join(self._keywords)}): "
                            f"give shrinkage_cov, Σ_S as an (n_features, n_features) covariance matrix of the sample, "
                            f"e.g. isotropy.torch.shrinkage_covariance(sample) or np.cov(sample, rowvar=False). "
                            f"Got shrinkage_sample={got} instead.")
        self.zeta = check_zeta(zeta, caller=caller)
        S = None
        if shrinkage_cov is not None:
            from isotropy._kernels.isoscore import _check_shrinkage_cov, as_shrinkage_tensor

            S = as_shrinkage_tensor(check_real(shrinkage_cov, caller=caller, name="shrinkage_cov"), caller=caller)
            S = S.detach().to(torch.float64)
            d = S.shape[0] if S.ndim == 2 else -1
            if n_features is not None and d != n_features:
                raise IsotropyValueError(f"The 'shrinkage_cov' parameter of {caller} must have shape "
                                         f"({n_features}, {n_features}) (n_features). Got {tuple(S.shape)} instead.")
            S = _check_shrinkage_cov(S, None, like=S, caller=caller)  # square: its width is the metric's
            if self.zeta > 0:  # −I was taken and gave a value, where isoscore_star refuses it
                check_covariance(S, caller=caller)
        elif self.zeta > 0:  # as the callbacks and regularisers warn: Σ_S = I tracks the vector norms (ζ = 0: unused)
            warnings.warn(no_shrinkage_cov_warning(), UserWarning, stacklevel=user_stacklevel())
        given = n_features is not None
        super().__init__(n_features=n_features if S is None else S.shape[0], **kwargs)
        if S is not None and not given:  # the width the rows must have is shrinkage_cov's, not an n_features given
            self._n_features_from = f"shrinkage_cov's shape {tuple(S.shape)}"
        self.register_buffer("shrinkage_cov", S, persistent=False)

    def _apply(self, fn, exclude_state=()):
        S = self.shrinkage_cov  # a buffer: module.to(dtype) would cast it as well
        this = super()._apply(fn, exclude_state)
        if S is not None:
            this.shrinkage_cov = S.to(fn(torch.zeros(1, device=S.device)).device)
        return this

    def _setting_values(self):
        """``zeta``, and ``shrinkage_cov`` where ζ > 0 (at ζ = 0 Σ_S is unused): merged only with the same."""
        return {"zeta": self.zeta, **({"shrinkage_cov": self.shrinkage_cov} if self.zeta != 0 else {})}

    def compute(self):
        S = None if self.shrinkage_cov is None else self.shrinkage_cov.cpu().numpy()
        # ζ = 1 with Σ_S: Σ_S alone, defined from one row on (a one-row batch's forward value, not NaN)
        rows = 1 if S is not None and self.zeta == 1.0 else 2
        # (the accumulator's own warning without Σ_S left out: this class said it when it was built)
        return self._from_accumulator("_isoscore_star", min_samples=rows, shrinkage_cov=S, zeta=self.zeta)


class EffectiveRank(_MomentMetric):
    """Effective rank (Roy & Vetterli) of all rows seen, as a torchmetrics metric (exact over batches, merges, DDP).

    Parameters
    ----------
    center : bool, default=False
        Of the rows minus their mean, as :func:`isotropy.effective_rank`.
    normalize : bool, default=False
        Divide by ``min(n_samples, n_features)`` (``min(n_samples − 1, n_features)`` when ``center``).
    n_features : int, optional
        As :class:`IsoScore`.
    **kwargs
        Passed to :class:`torchmetrics.Metric`.

    Notes
    -----
    Same states as :class:`IsoScore` (count n, mean μ, centred scatter M). The singular values of
    the rows are the square roots of the eigenvalues of the second-moment matrix
    ``XᵀX = M + n·μμᵀ`` (of ``M`` when ``center``), and

    .. math:: p_k = \\frac{\\sigma_k}{\\sum_j \\sigma_j}, \\qquad
              \\operatorname{erank} = \\exp\\Big(-\\sum_k p_k \\log p_k\\Big).

    The function takes the SVD of the rows instead; the two agree to about 1e-10 relative on
    well-conditioned data (an eigenvalue's rounding, ~1e-16·λ_max, is ~1e-8·σ_max on a singular
    value). Memory O(d²), time O(n·d² + d³).

    References
    ----------
    .. [1] O. Roy and M. Vetterli, "The effective rank: a measure of effective dimensionality",
       EUSIPCO 2007.

    Examples
    --------
    >>> import torch
    >>> from isotropy import effective_rank
    >>> from isotropy.training import EffectiveRank
    >>> X = torch.randn(300, 6, generator=torch.Generator().manual_seed(0)) * torch.tensor([1.0, 1, 2, 2, 3, 4])
    >>> metric = EffectiveRank()
    >>> for batch in X.split(64):
    ...     metric.update(batch)
    >>> abs(float(metric.compute()) / effective_rank(X.double().numpy()) - 1) < 1e-10
    True
    """

    higher_is_better = None
    _keywords = ("center", "normalize", "n_features")
    _settings = ("center", "normalize")

    def __init__(self, *args, center=False, normalize=False, n_features=None, **kwargs):
        _refuse_positional(self, args)
        caller = type(self).__name__
        self.center = check_bool(center, "center", caller=caller)
        self.normalize = check_bool(normalize, "normalize", caller=caller)
        super().__init__(n_features=n_features, **kwargs)

    def compute(self):
        return self._from_accumulator("effective_rank", center=self.center, normalize=self.normalize)


class RankMe(EffectiveRank):
    """RankMe (Garrido et al.) of all rows seen, as a torchmetrics metric: :class:`EffectiveRank` with ε.

    Parameters
    ----------
    epsilon : float in [0, 1], default=1e-7
        Added to each normalised singular value, as :func:`isotropy.rankme`.
    center, normalize, n_features, **kwargs
        As :class:`EffectiveRank`.

    Notes
    -----
    .. math:: p_k = \\frac{\\sigma_k}{\\lVert \\sigma \\rVert_1} + \\varepsilon, \\qquad
              \\operatorname{RankMe} = \\exp\\Big(-\\sum_{k=1}^{\\min(n, d)} p_k \\log p_k\\Big),

    with the singular values from the streamed second-moment matrix (see :class:`EffectiveRank`:
    equal to the function's SVD to about 1e-10 relative on well-conditioned data).

    References
    ----------
    .. [1] Q. Garrido, R. Balestriero, L. Najman and Y. LeCun, "RankMe: Assessing the Downstream
       Performance of Pretrained Self-Supervised Representations by Their Rank", ICML 2023.

    Examples
    --------
    >>> import torch
    >>> from isotropy import rankme
    >>> from isotropy.training import RankMe
    >>> X = torch.randn(200, 5, generator=torch.Generator().manual_seed(0))
    >>> metric = RankMe()
    >>> metric.update(X[:120]); metric.update(X[120:])
    >>> abs(float(metric.compute()) / rankme(X.double().numpy()) - 1) < 1e-10
    True
    """

    higher_is_better = True
    _keywords = ("epsilon", "center", "normalize", "n_features")
    _settings = ("epsilon", "center", "normalize")

    def __init__(self, *args, epsilon=1e-7, center=False, normalize=False, n_features=None, **kwargs):
        _refuse_positional(self, args)
        self.epsilon = float(check_scalar(epsilon, "epsilon", caller="RankMe", kind=numbers.Real, low=0, high=1))
        super().__init__(center=center, normalize=normalize, n_features=n_features, **kwargs)

    def compute(self):
        return self._from_accumulator("rankme", epsilon=self.epsilon, center=self.center, normalize=self.normalize)


class _UnitMetric(_MomentMetric):
    """States n, Σ x̂ and Σ x̂² over the unit-normalised rows x̂ = x/‖x‖ (float64; sums, merged by adding)."""

    _moments = False
    _units = True

    def _sums(self):
        part = self._all_rows()
        return int(part["n_samples"].item()), part["unit_sum"], part["unit_sq_sum"]


class MeanCosine(_UnitMetric):
    """Mean cosine similarity over the distinct pairs of all rows seen, as a torchmetrics metric.

    Parameters
    ----------
    n_features : int, optional
        As :class:`IsoScore`.
    **kwargs
        Passed to :class:`torchmetrics.Metric`.

    Notes
    -----
    (‖Σ x̂‖² − n)/(n(n − 1)) with x̂ = x/‖x‖, as :func:`isotropy.cosine_similarity_mean`, from float64
    sums (exact over batches, merges and DDP). Each row is brought to unit scale by a power of two
    before its norm is taken, so rows at 1e±160 count like any other.

    Examples
    --------
    >>> import torch
    >>> from isotropy.training import MeanCosine
    >>> metric = MeanCosine()
    >>> metric.update(torch.tensor([[1.0, 0.0], [0.0, 2.0]])); metric.update(torch.tensor([[3.0, 3.0]]))
    >>> round(float(metric.compute()), 6)   # (0 + 2·√½) / 3
    0.471405
    """

    higher_is_better = False

    def compute(self):
        def read():
            n, unit_sum, _ = self._sums()
            from isotropy._kernels.rows import mean_pair_cosine

            return float(mean_pair_cosine((unit_sum * unit_sum).sum(), n))

        return self._value(read)


class RogueDimensionShare(_UnitMetric):
    """Share of the mean cosine similarity carried by the top ``n_dimensions`` dimensions (torchmetrics).

    Parameters
    ----------
    n_dimensions : int, default=1
        k, the number of largest per-dimension contributions summed.
    n_features : int, optional
        As :class:`IsoScore`.
    **kwargs
        Passed to :class:`torchmetrics.Metric`.

    Notes
    -----
    Contribution of dimension i: CCᵢ = ((Σ x̂ᵢ)² − Σ x̂ᵢ²)/(n(n − 1)); the value is the sum of the k
    largest CCᵢ over Σᵢ CCᵢ, as :func:`isotropy.rogue_dimension_share` (NaN with a warning when the
    mean cosine is not above five times its standard deviation for rows that share no direction,
    from the state Σ x̂x̂ᵀ: d × d float64, as :class:`IsoScore`'s scatter, 32 MiB at d = 2,048; above 1
    when other dimensions contribute negatively, as a share of a total with negative parts can). Exact
    over batches, merges and DDP.

    References
    ----------
    .. [1] W. Timkey and M. van Schijndel, "All Bark and No Bite: Rogue Dimensions in Transformer
       Language Models Obscure Representational Quality", EMNLP 2021.

    Examples
    --------
    >>> import torch
    >>> from isotropy.training import RogueDimensionShare
    >>> X = torch.randn(500, 8, generator=torch.Generator().manual_seed(0))
    >>> X[:, 3] += 10.0
    >>> metric = RogueDimensionShare(n_dimensions=1)
    >>> metric.update(X)
    >>> round(float(metric.compute()), 2)
    1.0
    """

    _gram = True
    higher_is_better = False
    _keywords = ("n_dimensions", "n_features")
    _settings = ("n_dimensions",)

    def __init__(self, *args, n_dimensions=1, n_features=None, **kwargs):
        _refuse_positional(self, args)
        check_scalar(n_dimensions, "n_dimensions", caller="RogueDimensionShare", kind=numbers.Integral, low=1)
        self.n_dimensions = int(n_dimensions)
        super().__init__(n_features=n_features, **kwargs)

    def compute(self):
        from isotropy.metrics.rogue import _check_n_dimensions, _share_from_sums

        def read():
            part = self._all_rows()
            n, unit_sum = int(part["n_samples"].item()), part["unit_sum"]
            k = _check_n_dimensions(self.n_dimensions, unit_sum.shape[0], caller="RogueDimensionShare")
            gram = part["unit_gram"]
            # Σ x̂x̂ᵀ has trace n: a state without it (saved by a version before it, loaded without complaint by
            # torchmetrics) read 0 and skipped the noise rule (isotropic rows read 1.806 instead of NaN)
            if gram.shape != (unit_sum.shape[0],) * 2 or abs(float(gram.diagonal().sum()) - n) > 1e-6 * n:
                raise IsotropyValueError("RogueDimensionShare.compute needs its state unit_gram (the sum of x̂x̂ᵀ over "
                                         "the unit rows), which this state lacks: a state saved by a version of "
                                         "isotropy before it cannot be resumed; update the metric with the rows again.")
            return float(_share_from_sums(unit_sum, part["unit_sq_sum"], n, k, caller="RogueDimensionShare",
                                          gram_frob_sq=lambda: float((gram * gram).sum())))

        return self._value(read)


# SplitMix64's mixing function (G. Steele, D. Lea and C. Flood, "Fast splittable pseudorandom number generators",
# OOPSLA 2014), in torch int64 arithmetic, which wraps modulo 2**64 as uint64's does: the constants as signed int64
_GOLDEN = 0x9E3779B97F4A7C15 - 2**64
_MIX = (0xBF58476D1CE4E5B9 - 2**64, 0x94D049BB133111EB - 2**64)


def _shift_right(x, s):
    """Logical right shift of int64 ``x`` read as uint64 (torch's ``>>`` on int64 copies the sign bit)."""
    return (x >> s) & ((1 << (64 - s)) - 1)


def _mix64(x):
    x = (x ^ _shift_right(x, 30)) * _MIX[0]
    x = (x ^ _shift_right(x, 27)) * _MIX[1]
    return x ^ _shift_right(x, 31)


def _row_keys(X, random_state):
    """Keys uniform in [0, 1) of the float64 rows ``X`` (on their device): 53 bits of a 64-bit hash of the bits of
    each row (each value salted by its column and the seed, mixed, summed, mixed again); equal rows, equal keys."""
    seed = int(np.random.SeedSequence(random_state).generate_state(1, np.uint64)[0])
    seed -= 2**64 if seed >= 2**63 else 0
    bits = (X + 0.0).contiguous().view(torch.int64)  # -0.0 + 0.0 = 0.0: equal rows have equal bits
    salt = torch.arange(1, X.shape[1] + 1, dtype=torch.int64, device=X.device) * _GOLDEN + seed
    h = _mix64(_mix64(bits + salt).sum(dim=1))
    return _shift_right(h, 11).to(torch.float64) * 2.0**-53


class TwoNNDimension(Metric):
    """TwoNN intrinsic dimension of the rows seen, as a torchmetrics metric (keeps the rows).

    TwoNN depends on every pair of nearest neighbours, not on sums: this metric **stores the rows**
    (float64, on the metric's device; ``dist_reduce_fx="cat"`` under DDP). With ``max_samples``
    it keeps at most that many, a uniform random sample of all rows seen: every row's key is a hash
    of its values and ``random_state``, uniform in [0, 1), and the rows with the smallest keys are
    kept; merging or syncing keeps the smallest keys of the union. The kept rows are therefore the
    same, and ``compute`` gives the same value, whatever the batch split, the process that saw a
    row, the order of ``merge_state`` calls, or a resume from ``state_dict``: the ``max_samples``
    rows of smallest key among all rows seen (copies of a row share its key, and are kept or left
    together: TwoNN counts each distinct point once). Without a cap ``compute`` equals
    :func:`isotropy.twonn_dimension` on all rows.

    Parameters
    ----------
    max_samples : int, optional
        Cap on the rows kept (memory O(max_samples·d)); ``None`` keeps every row.
    random_state : int, default=0
        Seed of the keys that choose the kept rows (used only with ``max_samples``).
    discard_fraction, method, metric
        Passed to :func:`isotropy.twonn_dimension`.
    **kwargs
        Passed to :class:`torchmetrics.Metric`.

    References
    ----------
    .. [1] E. Facco, M. d'Errico, A. Rodriguez and A. Laio, "Estimating the intrinsic dimension of
       datasets by a minimal neighborhood information", Scientific Reports 7, 2017.

    Examples
    --------
    >>> import torch
    >>> from isotropy.training import TwoNNDimension
    >>> g = torch.Generator().manual_seed(0)
    >>> X = torch.randn(2000, 3, generator=g) @ torch.randn(3, 10, generator=g)   # a 3-d plane in 10-d
    >>> metric = TwoNNDimension(max_samples=1000)
    >>> for batch in X.split(500):
    ...     metric.update(batch)
    >>> round(float(metric.compute()))
    3
    """

    full_state_update = False
    is_differentiable = False
    higher_is_better = None
    plot = _plot

    _keywords = ("max_samples", "random_state", "discard_fraction", "method", "metric", "n_features")
    _settings = ("max_samples", "random_state", "discard_fraction", "method", "metric")

    def __init__(self, *args, max_samples=None, random_state=0, discard_fraction=0.1, method="linear",
                 metric="euclidean", n_features=None, **kwargs):
        _metric_init(self, super().__init__, args, kwargs)
        caller = "TwoNNDimension"
        check_scalar(n_features, "n_features", caller=caller, kind=numbers.Integral, low=1, allow_none=True)
        self.n_features = None if n_features is None else int(n_features)
        self._batch_value = False
        self._said_undefined_batch = False
        check_scalar(max_samples, "max_samples", caller=caller, kind=numbers.Integral, low=3, allow_none=True)
        check_scalar(random_state, "random_state", caller=caller, kind=numbers.Integral, low=0, high=SEED_MAX)
        self.max_samples = None if max_samples is None else int(max_samples)
        self.random_state = int(random_state)
        # twonn_dimension's own checks of its options, now, naming this class (not at compute, naming the function)
        from isotropy._kernels.neighbors import _METRICS

        check_scalar(discard_fraction, "discard_fraction", caller=caller, low=0, high=1, closed="left")
        self.twonn_kwargs = {"discard_fraction": discard_fraction,
                             "method": check_option(method, "method", ("linear", "mle"), caller=caller),
                             "metric": check_option(metric, "metric", _METRICS, caller=caller)}
        if method == "linear" and discard_fraction == 0:  # whatever the rows: the largest ratio must be left out
            raise IsotropyValueError(f"The 'discard_fraction' parameter of {caller} must be above 0 with "
                                     f"method='linear' (the fit leaves out at least the largest ratio, whose "
                                     f"-log(1 - i/N) is infinite). Got {discard_fraction!r} instead; or use "
                                     f"method='mle'.")
        self.add_state("rows", default=[], dist_reduce_fx="cat")
        self.add_state("keys", default=[], dist_reduce_fx="cat")

    def _apply(self, fn, exclude_state=()):
        return _keep_float64_states(self, fn, exclude_state, super()._apply)

    def _has_data(self):
        _refuse_meta(self)
        return len(self.rows) > 0 if isinstance(self.rows, list) else self.rows.numel() > 0

    def _sync_dist(self, dist_sync_fn=None, process_group=None):
        """torchmetrics' gather, with a process that saw no rows sending float64 ``(0, width)`` rows and ``(0,)`` keys.

        torchmetrics sends ``tensor([])`` of the default dtype for an empty list state: beside the
        other processes' float64 ``(n, d)`` rows, gloo aborted the job ("Received data size doesn't
        match expected size"). The state is restored after the sync (torchmetrics keeps a copy).
        """
        if isinstance(self.rows, list) and not self.rows:
            self.rows = [torch.zeros((0, self.n_features or 0), dtype=torch.float64, device=self.device)]
            self.keys = [torch.zeros(0, dtype=torch.float64, device=self.device)]
        gather = dist_sync_fn or _gather_all_tensors()
        name = type(self).__name__

        def widened(tensor, group=None):
            parts = gather(tensor, group=group)
            if tensor.ndim != 2:
                return parts
            widths = sorted({int(part.shape[1]) for part in parts if part.shape[0]})
            if len(widths) > 1:
                raise _different_widths(name, widths)
            return [part if not widths or part.shape[1] == widths[0] else part.new_zeros((0, widths[0]))
                    for part in parts]

        super()._sync_dist(widened, process_group=process_group)

    def _keys(self, X):
        """The keys of the float64 rows ``X``: a hash of each row's values and ``random_state`` (:func:`_row_keys`).

        The keys were drawn from a generator seeded with (random_state, rank), whose state was neither in the metric
        state nor shared between instances: two instances merged in one process drew the same keys for their i-th
        rows (kept or dropped in pairs: 200 rows kept, 100 distinct keys), and a metric resumed from ``state_dict``
        restarted the stream (row 500 + i took row i's key; 6.32 instead of 5.60). A counter of the rows seen, saved
        as state, mends the resume but not two instances of one seed that each start at row 0. A key that is a
        function of the row alone needs no state at all: every split, merge, sync and resume of the same rows keeps
        the same sample, and keys of distinct rows are independent (as far as a 64-bit mix can tell).
        """
        return _row_keys(X, self.random_state)

    @staticmethod
    def _cat(state):
        return torch.cat(state) if isinstance(state, list) else state

    def _keep_smallest(self, rows, keys):
        if self.max_samples is None or rows.shape[0] <= self.max_samples:
            return rows, keys
        keep = torch.topk(keys, self.max_samples, largest=False).indices.sort().values
        return rows[keep], keys[keep]

    def _width(self, rows=None):
        rows = self.rows if rows is None else rows
        if isinstance(rows, list):
            return int(rows[0].shape[1]) if rows else 0
        return int(rows.shape[1]) if rows.numel() else 0

    def update(self, X):
        """Add a batch ``X`` of shape ``(n_samples, n_features)``."""
        X = _as_rows(X, self)
        if X is None:
            return
        _check_width("TwoNNDimension.update", self.n_features, X.shape[1], "n_features")
        _check_width("TwoNNDimension.update", self._width(), X.shape[1])
        keys = self._keys(X)
        if self.max_samples is None:
            self.rows.append(X)
            self.keys.append(keys)
            return
        rows, keys = self._keep_smallest(torch.cat([*self.rows, X]), torch.cat([*self.keys, keys]))
        self.rows, self.keys = [rows], [keys]

    def _setting_values(self):
        """The settings in effect (:func:`_refuse_other_settings`): ``random_state`` only with ``max_samples`` (without
        a cap every row is kept, whatever the keys)."""
        seed = {} if self.max_samples is None else {"random_state": self.random_state}
        return {"max_samples": self.max_samples, **seed, **self.twonn_kwargs}

    def merge_state(self, incoming_state):
        """Add the rows of another instance (or of its ``metric_state`` dict); both must have the same width.

        Another instance must have the same ``max_samples``, ``random_state`` (with ``max_samples``),
        ``discard_fraction``, ``method`` and ``metric`` (:func:`_refuse_other_settings`): the sample kept is chosen
        by the keys of the seed, and the receiver's cap and options would win. A ``metric_state`` dict carries none.
        """
        other = _incoming_state(self, incoming_state)
        theirs, mine = self._width(other["rows"]), self._width()
        if theirs and mine and theirs != mine:
            raise IsotropyValueError(f"TwoNNDimension.merge_state: the incoming state has {theirs} features and this "
                                     f"metric {mine}; both must have the same width.")
        super().merge_state(incoming_state)
        self._computed = None  # a value computed before the merge is stale (torchmetrics keeps it otherwise)
        _merged_as_update(self)

    def forward(self, *args, **kwargs):
        """Add the batch and return the TwoNN dimension of that batch alone (NaN below 3 rows)."""
        self._batch_value = True
        try:
            return super().forward(*args, **kwargs)
        finally:
            self._batch_value = False

    def compute(self):
        from isotropy.metrics.dimension import _twonn_dimension

        rows = self._cat(self.rows) if self._has_data() else None
        if rows is None or rows.shape[0] < 3:  # 1 or 2 rows: twonn_dimension's message named itself, not compute
            if self._batch_value:
                reason = _too_few(0 if rows is None else rows.shape[0], 3)
                return torch.tensor(_undefined_batch(self, reason), dtype=torch.float64, device=self.device)
            raise IsotropyValueError(f"TwoNNDimension.compute needs at least 3 rows; call update() with data first. "
                                     f"Got {0 if rows is None else rows.shape[0]} instead.")
        rows, _ = self._keep_smallest(rows, self._cat(self.keys))
        try:
            # its errors and warnings name this metric (they named twonn_dimension, a function the user never called);
            # compute takes no data: the rows are what update saw
            value = _twonn_dimension(rows, **self.twonn_kwargs, caller="TwoNNDimension.compute")
        except IsotropyValueError as exc:
            if not self._batch_value:  # (the same error, its type and counts kept: TooFewDistinctError's)
                exc.args = (str(exc).replace("The 'X' parameter of TwoNNDimension.compute",
                                             "The rows given to TwoNNDimension.update"), *exc.args[1:])
                raise
            value = _undefined_batch(self, _batch_reason(exc))
        return torch.as_tensor(value, dtype=torch.float64, device=rows.device)


class TooFewRowsError(IsotropyValueError):
    """``compute`` on fewer rows than the metric needs: ``rows`` seen, ``need`` wanted."""

    def __init__(self, message, *, rows: int, need: int):
        super().__init__(message)
        self.rows, self.need = rows, need


def _batch_reason(exc: IsotropyValueError) -> str:
    """Why a batch alone defines no value, in the batch's words: its rows against those needed (not "call update()
    with data first", which ``compute`` says), else the metric's own error."""
    return _too_few(exc.rows, exc.need) if isinstance(exc, TooFewRowsError) else " ".join(str(exc).split())


def _too_few(rows: int, need: int) -> str:
    return f"{rows} row{'' if rows == 1 else 's'}, fewer than the {need} it needs"


def _undefined_batch(metric, reason: str) -> float:
    """NaN, the value of a batch that does not define ``metric`` alone (``metric(batch)``, torchmetrics' ``forward``),
    said once per metric with ``reason`` (:func:`_batch_reason`): a plain loop logging ``metric(batch)`` got NaN for
    an epoch's last batch of one row without a word (a trial), where ``compute()`` on one row raises and the
    regularisers warn."""
    if not metric._said_undefined_batch:
        metric._said_undefined_batch = True
        warnings.warn(f"{type(metric).__name__}(batch) is NaN for a batch that does not define it alone ({reason}); "
                      f"its rows still count towards compute(). Later such batches are not warned of.", UserWarning,
                      stacklevel=user_stacklevel())
    return math.nan


def metric_from_name(name, *, n_features=None, **options):
    """A fresh torchmetrics metric for a name of the metric table (:mod:`isotropy.metrics.table`).

    Parameters
    ----------
    name : str
        A table name whose row has a torchmetrics class (``"isoscore"``, ``"isoscore_star"``,
        ``"participation_ratio"``, ``"cosine_similarity_mean"``, ``"rogue_dimension_share"``,
        ``"twonn_dimension"``, ``"effective_rank"``, ``"rankme"``); another name is refused in one
        line with a did-you-mean.
    n_features : int, optional
        Width of the rows (see :class:`IsoScore`).
    **options
        Passed to the class (``zeta=``, ``n_dimensions=``, ``max_samples=``, ...).

    Returns
    -------
    torchmetrics.Metric

    Examples
    --------
    >>> from isotropy.training.metrics import metric_from_name
    >>> type(metric_from_name("cosine_similarity_mean", n_features=8)).__name__
    'MeanCosine'
    """
    from isotropy.metrics.table import METRICS, check_metric_names, metric_names

    (name,) = check_metric_names([name], caller="metric_from_name", name="name", allowed=metric_names(torchmetric=True))
    return globals()[METRICS[name].torchmetric](n_features=n_features, **options)
