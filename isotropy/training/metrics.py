"""torchmetrics metrics of embedding geometry: IsoScore, IsoScore*, mean cosine, rogue-dimension share, TwoNN.

Each metric is a thin stateful wrapper around the toolkit's pure function: ``update`` adds a batch of
rows of shape ``(n_samples, n_features)``, ``compute`` returns the pure function's value on every
row seen. The covariance and cosine metrics keep float64 sums (``dist_reduce_fx="sum"``), so the
value after any split into batches, after ``merge_state`` or after a sync across DDP processes is
the pure function on all rows (to float64 rounding). TwoNN is not a function of sums: it keeps the
rows (``dist_reduce_fx="cat"``), optionally capped by a seeded uniform sample.

States live on the device of the first batch (or wherever ``.to(device)`` put the metric); values
are returned as 0-dim float64 tensors there (MPS, which has no float64, accumulates on the CPU).
"""

from __future__ import annotations

import numbers
from typing import ClassVar

import numpy as np
import torch
from torchmetrics import Metric

from isotropy._utils.validation import IsotropyValueError, check_scalar, check_X

__all__ = ["IsoScore", "IsoScoreStar", "MeanCosine", "RogueDimensionShare", "TwoNNDimension"]


def _as_rows(X, metric):
    """Validated detached float64 rows of ``X`` on the metric's working device (moving the states there first)."""
    caller = f"{type(metric).__name__}.update"
    if not isinstance(X, torch.Tensor):
        X = torch.as_tensor(np.asarray(X))
    X = check_X(X, caller=caller, min_samples=1)
    device = X.device if X.device.type != "mps" else torch.device("cpu")
    if metric.device != device and not metric._has_data():
        metric.to(device)  # a fresh metric follows its input
    return X.detach().to(device=metric.device, dtype=torch.float64)


class _SumMetric(Metric):
    """Common base: float64 per-feature sum states, sized by ``n_features`` or by the first batch."""

    full_state_update = False
    is_differentiable = False
    _sum_states: ClassVar[dict] = {}  # name -> number of (n_features,)-sized axes: 1 = vector, 2 = matrix

    def __init__(self, *, n_features=None, **kwargs):
        super().__init__(**kwargs)
        check_scalar(n_features, "n_features", caller=type(self).__name__, kind=numbers.Integral, low=1,
                     allow_none=True)
        self.n_features = None if n_features is None else int(n_features)
        d = self.n_features or 0
        self.add_state("n_samples", default=torch.zeros((), dtype=torch.float64), dist_reduce_fx="sum")
        for name, n_axes in self._sum_states.items():
            self.add_state(name, default=torch.zeros((d,) * n_axes, dtype=torch.float64), dist_reduce_fx="sum")

    def _has_data(self):
        return bool(self.n_samples.item() > 0)

    def _ensure_shape(self, d):
        first = next(iter(self._sum_states))
        current = getattr(self, first).shape[0]
        if current == 0:
            for name, n_axes in self._sum_states.items():
                setattr(self, name, torch.zeros((d,) * n_axes, dtype=torch.float64, device=self.device))
        elif current != d:
            raise IsotropyValueError(f"The 'X' parameter of {type(self).__name__}.update must have {current} features "
                                     f"(columns), like the previous batches. Got {d} instead.")

    def merge_state(self, incoming_state):
        """Add the state of another instance (or its ``metric_state`` dict); an empty side is allowed."""
        other = incoming_state.metric_state if isinstance(incoming_state, Metric) else incoming_state
        first = next(iter(self._sum_states))
        if other[first].numel() == 0:
            return
        self._ensure_shape(other[first].shape[0])
        super().merge_state({key: value.to(self.device) for key, value in other.items()})

    def _require(self, min_samples=2):
        n = int(self.n_samples.item())
        if n < min_samples:
            raise IsotropyValueError(f"{type(self).__name__}.compute needs at least {min_samples} rows; call update() "
                                     f"with data first. Got {n} instead.")
        return n


class _CovarianceMetric(_SumMetric):
    """States n, Σx and Σxxᵀ (float64); the covariance follows as (Σxxᵀ − n·μμᵀ)/(n − 1)."""

    _sum_states: ClassVar[dict] = {"sum_x": 1, "sum_xxt": 2}

    def update(self, X):
        """Add a batch ``X`` of shape ``(n_samples, n_features)`` (tensor or array; float64 accumulation)."""
        X = _as_rows(X, self)
        self._ensure_shape(X.shape[1])
        self.n_samples += X.shape[0]
        self.sum_x += X.sum(0)
        self.sum_xxt += X.T @ X

    def _covariance(self):
        """Sample covariance (ddof=1) of all rows seen; raises when they are (numerically) identical."""
        n = self._require()
        if self.sum_x.shape[0] < 2:
            raise IsotropyValueError(f"{type(self).__name__}.compute needs at least 2 features. "
                                     f"Got {self.sum_x.shape[0]} instead.")
        mean = self.sum_x / n
        scatter = self.sum_xxt - n * torch.outer(mean, mean)
        # Σxxᵀ − nμμᵀ cancels to a few ulps of tr Σxxᵀ when every row is the same
        if float(scatter.diagonal().sum()) <= 64 * float(torch.finfo(torch.float64).eps) * float(
                self.sum_xxt.diagonal().sum()):
            raise IsotropyValueError(f"{type(self).__name__}.compute: the {n} rows seen are (numerically) identical; "
                                     f"their covariance is zero, so the score is undefined.")
        return scatter / (n - 1)


def _score(trace, frob_sq, d):
    from isotropy.metrics.isoscore import _score_from_moments

    return _score_from_moments(trace, frob_sq, d)


class IsoScore(_CovarianceMetric):
    """IsoScore of all rows seen, as a torchmetrics metric (exact over batches, merges and DDP).

    Parameters
    ----------
    n_features : int, optional
        Width of the rows. Optional on one process (taken from the first batch); under DDP give it
        (or make sure every process updates before ``compute``) so every process holds states of
        the same shape for the sum across processes.
    **kwargs
        Passed to :class:`torchmetrics.Metric` (``sync_on_compute``, ``process_group``, ...).

    Notes
    -----
    States: n, Σx (d,) and Σxxᵀ (d, d), float64, reduced by sum. ``compute`` forms
    C = (Σxxᵀ − n·μμᵀ)/(n − 1) and returns ((tr C)²/‖C‖²_F − 1)/(d − 1), the closed form of
    :func:`isotropy.isoscore`, which it equals on the concatenated rows to float64 rounding. Memory
    O(d²), time O(n·d²).

    References
    ----------
    .. [1] W. Rudman, N. Gillman, T. Rayne and C. Eickhoff, "IsoScore: Measuring the Uniformity
       of Embedding Space Utilization", Findings of ACL 2022.

    Examples
    --------
    >>> import torch
    >>> from isotropy import isoscore
    >>> from isotropy.training import IsoScore
    >>> X = torch.randn(300, 5, generator=torch.Generator().manual_seed(0)) * torch.tensor([1.0, 1, 2, 2, 3])
    >>> metric = IsoScore()
    >>> for batch in X.split(64):
    ...     metric.update(batch)
    >>> abs(float(metric.compute()) - isoscore(X.double().numpy())) < 1e-12
    True
    """

    higher_is_better = True

    def compute(self):
        C = self._covariance()
        return _score(C.diagonal().sum(), (C * C).sum(), C.shape[0])


class IsoScoreStar(_CovarianceMetric):
    """IsoScore* (IsoScore of (1 − ζ)·C + ζ·Σ_S) of all rows seen, as a torchmetrics metric.

    Parameters
    ----------
    shrinkage_cov : tensor or array of shape (n_features, n_features), optional
        Σ_S, the covariance of a larger sample; ``None`` (default) uses the identity. Kept as a
        float64 buffer that moves with the metric.
    zeta : float in [0, 1], default=0.2
        Shrinkage weight ζ.
    n_features : int, optional
        As :class:`IsoScore`; implied by ``shrinkage_cov`` when given.
    **kwargs
        Passed to :class:`torchmetrics.Metric`.

    Notes
    -----
    Same states as :class:`IsoScore`; ``compute`` equals :func:`isotropy.isoscore_star` on all
    rows seen (to float64 rounding).

    References
    ----------
    .. [1] W. Rudman and C. Eickhoff, "Stable Anisotropic Regularization", ICLR 2024.

    Examples
    --------
    >>> import torch
    >>> from isotropy import isoscore_star
    >>> from isotropy.training import IsoScoreStar
    >>> X = torch.randn(40, 6, generator=torch.Generator().manual_seed(0))
    >>> metric = IsoScoreStar(zeta=0.5)
    >>> metric.update(X[:25]); metric.update(X[25:])
    >>> abs(float(metric.compute()) - isoscore_star(X.double().numpy(), zeta=0.5)) < 1e-12
    True
    """

    higher_is_better = True

    def __init__(self, *, shrinkage_cov=None, zeta=0.2, n_features=None, **kwargs):
        caller = "IsoScoreStar"
        self.zeta = float(check_scalar(zeta, "zeta", caller=caller, low=0.0, high=1.0))
        S = None
        if shrinkage_cov is not None:
            from isotropy.metrics.isoscore import _check_shrinkage_cov

            S = torch.as_tensor(shrinkage_cov).detach().to(torch.float64)
            d = S.shape[0] if S.ndim == 2 else -1
            if n_features is not None and d != n_features:
                raise IsotropyValueError(f"The 'shrinkage_cov' parameter of {caller} must have shape "
                                         f"({n_features}, {n_features}) (n_features). Got {tuple(S.shape)} instead.")
            S = _check_shrinkage_cov(S, d, like=S, caller=caller)
            n_features = d
        super().__init__(n_features=n_features, **kwargs)
        self.register_buffer("shrinkage_cov", S, persistent=False)

    def compute(self):
        C = self._covariance()
        d = C.shape[0]
        if self.shrinkage_cov is None:
            trace_s = frob_sq_s = torch.tensor(float(d), dtype=torch.float64, device=C.device)
            inner = C.diagonal().sum()
        else:
            S = self.shrinkage_cov.to(C.device)
            if S.shape[0] != d:
                raise IsotropyValueError(f"IsoScoreStar.compute: 'shrinkage_cov' has shape {tuple(S.shape)} but the "
                                         f"rows have {d} features.")
            trace_s, frob_sq_s, inner = S.diagonal().sum(), (S * S).sum(), (C * S).sum()
        # tr and ‖·‖²_F of Σ_ζ = a·C + b·Σ_S from those of C, Σ_S and ⟨C, Σ_S⟩_F
        a, b = 1.0 - self.zeta, self.zeta
        trace = a * C.diagonal().sum() + b * trace_s
        frob_sq = a * a * (C * C).sum() + 2.0 * a * b * inner + b * b * frob_sq_s
        return _score(trace, frob_sq, d)


class _UnitSumMetric(_SumMetric):
    """States n, Σ x̂ and Σ x̂² over the unit-normalised rows x̂ = x/‖x‖ (float64)."""

    _sum_states: ClassVar[dict] = {"unit_sum": 1, "unit_sq_sum": 1}

    def update(self, X):
        """Add a batch ``X`` of shape ``(n_samples, n_features)``; all-zero rows are rejected."""
        X = _as_rows(X, self)
        norms = torch.linalg.vector_norm(X, dim=1)
        zero = int((norms == 0).sum())
        if zero:
            raise IsotropyValueError(f"The 'X' parameter of {type(self).__name__}.update must not contain zero vectors, "
                                     f"for which cosine similarity is undefined. Got {zero} all-zero row(s) instead.")
        self._ensure_shape(X.shape[1])
        U = X / norms[:, None]
        self.n_samples += X.shape[0]
        self.unit_sum += U.sum(0)
        self.unit_sq_sum += (U * U).sum(0)


class MeanCosine(_UnitSumMetric):
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
    sums (exact over batches, merges and DDP).

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
        n = self._require()
        return ((self.unit_sum * self.unit_sum).sum() - n) / (n * (n - 1))


class RogueDimensionShare(_UnitSumMetric):
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
    mean cosine is not positive). Exact over batches, merges and DDP.

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

    higher_is_better = False

    def __init__(self, *, n_dimensions=1, n_features=None, **kwargs):
        check_scalar(n_dimensions, "n_dimensions", caller="RogueDimensionShare", kind=numbers.Integral, low=1)
        self.n_dimensions = int(n_dimensions)
        super().__init__(n_features=n_features, **kwargs)

    def compute(self):
        from isotropy.metrics.rogue import _check_n_dimensions, _contributions_from_sums, _share_from_contributions

        n = self._require()
        k = _check_n_dimensions(self.n_dimensions, self.unit_sum.shape[0], caller="RogueDimensionShare")
        cc = _contributions_from_sums(self.unit_sum, self.unit_sq_sum, n)
        return _share_from_contributions(cc, k, caller="RogueDimensionShare")


class TwoNNDimension(Metric):
    """TwoNN intrinsic dimension of the rows seen, as a torchmetrics metric (keeps the rows).

    TwoNN depends on every pair of nearest neighbours, not on sums: this metric **stores the rows**
    (float64, on the metric's device; ``dist_reduce_fx="cat"`` under DDP). With ``max_samples``
    it keeps at most that many, a uniform random sample of all rows seen: every row draws a key
    from a generator seeded with ``random_state`` (and the process rank), and the rows with the
    smallest keys are kept; merging or syncing keeps the smallest keys of the union, so the kept
    rows are a uniform sample of all rows, but *which* rows depends on the seed, the rank and the
    batch split. Without a cap ``compute`` equals :func:`isotropy.twonn_dimension` on all rows.

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

    def __init__(self, *, max_samples=None, random_state=0, discard_fraction=0.1, method="linear",
                 metric="euclidean", **kwargs):
        super().__init__(**kwargs)
        caller = "TwoNNDimension"
        check_scalar(max_samples, "max_samples", caller=caller, kind=numbers.Integral, low=3, allow_none=True)
        check_scalar(random_state, "random_state", caller=caller, kind=numbers.Integral, low=0)
        self.max_samples = None if max_samples is None else int(max_samples)
        self.random_state = int(random_state)
        self.twonn_kwargs = {"discard_fraction": discard_fraction, "method": method, "metric": metric}
        self._generator = None
        self.add_state("rows", default=[], dist_reduce_fx="cat")
        self.add_state("keys", default=[], dist_reduce_fx="cat")

    def _has_data(self):
        return len(self.rows) > 0 if isinstance(self.rows, list) else self.rows.numel() > 0

    def _keys(self, n):
        if self._generator is None:
            rank = torch.distributed.get_rank() if torch.distributed.is_available() and \
                torch.distributed.is_initialized() else 0
            seed = int(np.random.SeedSequence([self.random_state, rank]).generate_state(1)[0])
            self._generator = torch.Generator().manual_seed(seed)
        return torch.rand(n, generator=self._generator, dtype=torch.float64).to(self.device)

    @staticmethod
    def _cat(state):
        return torch.cat(state) if isinstance(state, list) else state

    def _keep_smallest(self, rows, keys):
        if self.max_samples is None or rows.shape[0] <= self.max_samples:
            return rows, keys
        keep = torch.topk(keys, self.max_samples, largest=False).indices.sort().values
        return rows[keep], keys[keep]

    def update(self, X):
        """Add a batch ``X`` of shape ``(n_samples, n_features)``."""
        X = _as_rows(X, self)
        if self._has_data() and self._cat(self.rows).shape[1] != X.shape[1]:
            raise IsotropyValueError(f"The 'X' parameter of TwoNNDimension.update must have "
                                     f"{self._cat(self.rows).shape[1]} features (columns), like the previous "
                                     f"batches. Got {X.shape[1]} instead.")
        keys = self._keys(X.shape[0])
        if self.max_samples is None:
            self.rows.append(X)
            self.keys.append(keys)
            return
        rows, keys = self._keep_smallest(torch.cat([*self.rows, X]), torch.cat([*self.keys, keys]))
        self.rows, self.keys = [rows], [keys]

    def reset(self):
        super().reset()
        self._generator = None

    def compute(self):
        from isotropy.metrics.dimension import twonn_dimension

        if not self._has_data():
            raise IsotropyValueError("TwoNNDimension.compute needs at least 3 rows; call update() with data first. "
                                     "Got 0 instead.")
        rows, _ = self._keep_smallest(self._cat(self.rows), self._cat(self.keys))
        value = twonn_dimension(rows, **self.twonn_kwargs)
        return torch.as_tensor(value, dtype=torch.float64, device=rows.device)
