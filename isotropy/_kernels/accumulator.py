"""The streaming covariance accumulator, shared by :mod:`isotropy.metrics.covariance` and :mod:`isotropy.distributed`.

Exact float64 sufficient statistics (count, mean, centred scatter matrix, sum of unit vectors),
merged chunk by chunk with the pairwise update of Chan, Golub & LeVeque. The class is public as
:class:`isotropy.CovarianceAccumulator` (re-exported by :mod:`isotropy.metrics.covariance`); it lives here
so that the dask reductions can build it without importing the public metric modules, which hand
dask arrays to :mod:`isotropy.distributed`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from isotropy._kernels.isoscore import (
    _CHUNK_ELEMENTS,
    _check_variance,
    _isoscore_from_covariance,
    _numpy_scatter,
    _shrinkage_weights,
    isoscore_from_covariance,
)
from isotropy._utils.backend import is_torch
from isotropy._utils.magnitude import rescaled, rows_at_unit_scale
from isotropy._utils.validation import (
    IsotropyValueError,
    check_X,
    check_zeta,
    refuse_subnormal_as_given,
)
from isotropy._utils.warn import warn_identity_shrinkage


def _host_array(X):
    """A numpy array holding ``X`` (float32/float64 kept; no copy for numpy input)."""
    if is_torch(X):
        import torch

        X = X.detach().cpu()
        return (X if X.dtype in (torch.float32, torch.float64) else X.double()).numpy()
    return X


def _unit_vector_sum(A):
    """Float64 Σ x/‖x‖ over the non-zero rows of ``A``, and the number of all-zero rows.

    Rows whose squared norm would over- or underflow are first brought to unit scale by a power
    of two (exact), so every row's direction counts, whatever its length.
    """
    n, d = A.shape
    total = np.zeros(d)
    n_zero = 0
    step = max(1, _CHUNK_ELEMENTS // max(d, 1))
    lo, hi = float(np.finfo(np.float64).tiny / np.finfo(np.float64).eps), float(np.finfo(np.float64).max * 2.0**-60)
    for start in range(0, n, step):
        B = A[start:start + step].astype(np.float64)
        sq = np.einsum("ij,ij->i", B, B)
        odd = np.flatnonzero(~((sq > lo) & (sq < hi)))
        if odd.size:
            B[odd] = rows_at_unit_scale(B[odd])
            sq[odd] = np.einsum("ij,ij->i", B[odd], B[odd])
        norms = np.sqrt(sq)
        zero = norms == 0
        n_zero += int(zero.sum())
        norms[zero] = 1.0  # all-zero rows add nothing
        total += (B / norms[:, None]).sum(axis=0)
    return total, n_zero


class Moments(NamedTuple):
    """Count, mean and centred scatter of some rows, the mean and scatter stored in units of ``2**exponent``.

    The rows are ``x = 2**exponent · y`` with ``mean(y) = shift + mean`` and
    ``scatter = Σ(y − mean(y))(y − mean(y))ᵀ``; ``shift``, ``mean`` and ``scatter`` are numpy arrays
    or torch tensors (float64), ``n_samples`` and ``exponent`` Python ints. The mean is kept in two
    parts, a shift near the data (e.g. a first estimate of the mean) and the small remainder, so
    that data far from the origin (an offset of 1e8) lose no digits to the rounding of their mean:
    the difference of two means, which the merge needs, is formed from the exact difference of the
    shifts and the difference of the remainders.
    """

    n_samples: int
    mean: object
    scatter: object
    exponent: int = 0
    shift: object = 0.0


def _ldexp(A, shift: int):
    """``A · 2**shift`` for a numpy array or a torch tensor (exact; ``shift <= 0`` here, so nothing overflows)."""
    if shift == 0:
        return A
    if is_torch(A):
        return A * math.ldexp(1.0, shift)
    return np.ldexp(A, shift)


def _outer(v):
    if is_torch(v):
        import torch

        return torch.outer(v, v)
    return np.outer(v, v)


def merge_moments(first: Moments, second: Moments) -> Moments:
    """The :class:`Moments` of the union of two sets of rows (Chan, Golub & LeVeque's pairwise update).

    Both are first brought to the larger exponent (exact powers of two; the smaller data's parts
    may underflow, below float64's precision relative to the larger anyway). With δ = μ_B − μ_A and
    n = n_A + n_B: μ = μ_A + δ·n_B/n and M = M_A + M_B + δδᵀ·n_A·n_B/n. An empty side (``n = 0``)
    returns the other unchanged. Works on numpy arrays and on torch tensors (one device).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.arange(12.0).reshape(6, 2) ** 2
    >>> def moments(A):
    ...     return Moments(len(A), A.mean(0), (A - A.mean(0)).T @ (A - A.mean(0)))
    >>> merged = merge_moments(moments(X[:2]), moments(X[2:]))
    >>> bool(np.allclose(merged.scatter, moments(X).scatter))
    True
    """
    if second.n_samples == 0:
        return first
    if first.n_samples == 0:
        return second
    exponent = max(first.exponent, second.exponent)  # the larger data dominate the sums
    shift_a, mean_a, scatter_a = _at(first, exponent)
    shift_b, mean_b, scatter_b = _at(second, exponent)
    n_a, n_b = first.n_samples, second.n_samples
    n = n_a + n_b
    delta = (shift_b - shift_a) + (mean_b - mean_a)
    return Moments(n, mean_a + delta * (n_b / n), scatter_a + scatter_b + _outer(delta) * (n_a * n_b / n), exponent,
                   shift_a)


def _at(moments: Moments, exponent: int):
    """``(shift, mean, scatter)`` of ``moments`` in units of ``2**exponent``."""
    step = moments.exponent - exponent
    return _ldexp(moments.shift, step), _ldexp(moments.mean, step), _ldexp(moments.scatter, 2 * step)


def entropy_rank(s, *, epsilon: float = 0.0, caller: str = "effective_rank") -> float:
    """exp(−Σ p log p) with p = s/Σs + ε of singular values ``s`` (numpy): the effective rank / RankMe core.

    Terms with ``p = 0`` contribute 0. Shared by :func:`isotropy.effective_rank`,
    :func:`isotropy.rankme` and the streaming values of :class:`CovarianceAccumulator`.

    Examples
    --------
    >>> entropy_rank(np.array([1.0, 1.0, 0.0]))
    2.0
    """
    s = np.asarray(s, dtype=np.float64)
    total = s.sum()
    if total == 0:
        raise IsotropyValueError(f"The 'X' parameter of {caller} must not be all zero (after centring when "
                                 f"center=True): every singular value is 0.")
    p = s / total + epsilon
    p = p[p > 0]
    return float(np.exp(-np.sum(p * np.log(p))))


def entropy_rank_bound(n_values: int, reachable: int, epsilon: float = 0.0) -> float:
    """The largest :func:`entropy_rank` of ``n_values`` singular values of which at most ``reachable`` are non-zero:
    that of ``reachable`` equal values (the entropy is concave). ``reachable`` itself when ``epsilon`` is 0; above
    it with ``epsilon > 0``, whose ``p`` sum to ``1 + n_values·ε`` (RankMe of the identity of size 4000 is
    4011.7), so a rank normalised by ``reachable`` alone exceeded 1.

    Examples
    --------
    >>> entropy_rank_bound(3, 2)
    2.0
    >>> entropy_rank_bound(5, 5, 1e-7) == entropy_rank(np.ones(5), epsilon=1e-7)
    True
    """
    if epsilon == 0:
        return float(reachable)
    return entropy_rank(np.concatenate([np.ones(reachable), np.zeros(n_values - reachable)]), epsilon=epsilon)


def participation_ratio_in_range(ratio, n_features: int):
    """``(tr C)²/‖C‖²_F`` clipped into its range ``[1, n_features]``: a float, or a torch tensor (clamped, its graph kept).

    Both ends are exact bounds (Cauchy–Schwarz on the eigenvalues); the rounding of the trace and of the squared
    Frobenius norm put a set of rank 1 at 0.9999999999999998, below the documented lower bound. Shared by
    :func:`isotropy.participation_ratio` (numpy and torch) and :meth:`CovarianceAccumulator.participation_ratio`
    (the streaming, torchmetrics and dask values).

    Examples
    --------
    >>> participation_ratio_in_range(0.9999999999999998, 5)
    1.0
    """
    if is_torch(ratio):
        return ratio.clamp(1.0, float(n_features))
    return min(max(float(ratio), 1.0), float(n_features))


def entropy_rank_in_range(rank, n_values: int, reachable: int, epsilon: float = 0.0, *, normalize: bool = False):
    """An :func:`entropy_rank` of ``n_values`` singular values, at most ``reachable`` of them non-zero, clipped into its
    range (with ``normalize``, divided by its largest value first): a float, or a torch tensor (its graph kept).

    Both ends are exact bounds (the entropy is concave in ``p``): below, the value of one non-zero singular value
    (1 when ``epsilon`` is 0); above, that of ``reachable`` equal ones (:func:`entropy_rank_bound`), so ``(0, 1]``
    normalised. The rounding of ``Σ p log p`` put the identity of size 5 at 5.000000000000001 (1.0000000000000002
    normalised), past the documented ``[1, min(n, d)]``. Shared by :func:`isotropy.effective_rank`,
    :func:`isotropy.rankme` (numpy, torch and dask) and :class:`CovarianceAccumulator`, as
    :func:`participation_ratio_in_range` is; a torch value keeps the gradient of the unclipped one (as IsoScore's
    clipped ratio does).

    Examples
    --------
    >>> entropy_rank_in_range(5.000000000000001, 5, 5), entropy_rank_in_range(5.000000000000001, 5, 5, normalize=True)
    (5.0, 1.0)
    """
    high = entropy_rank_bound(n_values, reachable, epsilon)
    low = 1.0 if epsilon == 0 else entropy_rank(np.eye(1, n_values).ravel(), epsilon=epsilon)
    if normalize:
        rank, low, high = rank / high, low / high, 1.0
    if is_torch(rank):
        held = rank.detach()
        return rank + (held.clamp(low, high) - held)  # the clipped value exactly: a rounding away, c − r is exact
    return min(max(float(rank), low), high)


# Row chunks of a dask array computed at once by CovarianceAccumulator.update: some parallelism, memory of a few chunks.
_DASK_CHUNKS_AT_ONCE = 4


class CovarianceAccumulator:
    """Streaming, exact float64 covariance statistics: feed chunks, read IsoScore and friends.

    For data that never sits in memory at once, e.g. a memory-mapped ``.npy`` of millions of
    rows: ``update`` with chunks of shape ``(n_chunk, n_features)``, then read the metrics. The
    results equal those of the in-memory functions on the concatenated data (to rounding).

    Attributes
    ----------
    n_samples_ : int
        Rows seen so far.
    n_features_ : int or None
        Columns, fixed by the first chunk.

    Notes
    -----
    Statistics: count n, mean μ, centred scatter M = Σ(x − μ)(x − μ)ᵀ and s = Σ x/‖x‖, all in
    float64. A chunk B is centred on its own mean before its scatter is formed, then merged
    (Chan, Golub & LeVeque 1979): with δ = μ_B − μ_A, n = n_A + n_B,
    μ = μ_A + δ·n_B/n and M = M_A + M_B + δδᵀ·n_A·n_B/n. Large common offsets therefore cost
    no precision (unlike Σxxᵀ − nμμᵀ). Memory O(d²); time O(n·d²).

    References
    ----------
    .. [1] T. F. Chan, G. H. Golub and R. J. LeVeque, "Updating Formulae and a Pairwise
       Algorithm for Computing Sample Variances", Stanford CS report STAN-CS-79-773, 1979.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy import CovarianceAccumulator, isoscore
    >>> X = np.random.default_rng(0).normal(size=(1000, 4)) * [1.0, 2.0, 3.0, 4.0]
    >>> acc = CovarianceAccumulator()
    >>> for start in range(0, 1000, 300):
    ...     _ = acc.update(X[start:start + 300])
    >>> acc.n_samples_
    1000
    >>> abs(acc.isoscore() - isoscore(X)) < 1e-12
    True
    """

    def __init__(self):
        self.n_samples_ = 0
        self.n_features_ = None
        self._mean = None
        self._scatter = None
        self._unit_sum = None
        self._n_zero_rows = 0
        self._exponent = 0  # mean and scatter are stored in units of 2**_exponent (data far from unit scale)
        self._shift = 0.0  # the mean is _shift + _mean (see Moments)

    def _moments(self) -> Moments:
        return Moments(self.n_samples_, self._mean, self._scatter, self._exponent, self._shift)

    def _set_moments(self, moments: Moments) -> None:
        self.n_samples_, self._mean, self._scatter, self._exponent, self._shift = moments

    @classmethod
    def _from_moments(cls, moments: Moments, *, n_features: int, unit_sum=None, n_zero_rows: int = 0):
        """An accumulator holding these statistics (numpy float64), e.g. merged elsewhere (the torchmetrics classes)."""
        acc = cls()
        if moments.n_samples:
            acc._set_moments(moments)
            acc.n_features_ = int(n_features)
            acc._unit_sum = np.zeros(n_features) if unit_sum is None else unit_sum
            acc._n_zero_rows = int(n_zero_rows)
        return acc

    def update(self, X_chunk):
        """Add a chunk of rows (array or tensor of shape ``(n_chunk, n_features)``); returns ``self``.

        A 2-d dask array is computed a few row chunks at a time and fed in order: it is never held
        in memory whole (to merge its chunks' statistics on a cluster's workers instead, without
        sending the chunks here, see :func:`isotropy.distributed.covariance_accumulator`).
        """
        caller = "CovarianceAccumulator.update"
        # a 2-d dask array (known chunks or not), told without importing dask for other inputs; a dask DataFrame or
        # another shape is computed by check_X below, as before
        if type(X_chunk).__name__ == "Array" and type(X_chunk).__module__.startswith("dask.array") \
                and getattr(X_chunk, "ndim", None) == 2:
            return self._update_dask(X_chunk, caller)
        X = check_X(X_chunk, caller=caller, name="X_chunk", min_samples=0)
        # float16 tensors judged in float16, as numpy arrays are (by rescaled, below)
        refuse_subnormal_as_given(X_chunk, X, caller=caller, name="X_chunk")
        if self.n_features_ is not None and X.shape[1] != self.n_features_:
            raise IsotropyValueError(f"The 'X_chunk' parameter of {caller} must have {self.n_features_} features "
                                     f"(columns), like the previous chunks. Got {X.shape[1]} instead.")
        if X.shape[0] == 0:  # an empty chunk of a stream (a shard, a batch without rows): its width, no rows
            self.n_features_ = X.shape[1]
            return self
        A = _host_array(X)  # a numpy view of the chunk: read, never written
        scaled, exponent = rescaled(A, caller=caller, name="X_chunk")  # (A, 0) for data at a safe scale
        scatter_b, shift_b, mean_b = _numpy_scatter(scaled, split_mean=True)  # float64, by sub-chunks
        unit_sum_b, n_zero = _unit_vector_sum(A)
        self._n_zero_rows += n_zero
        self._unit_sum = unit_sum_b if self._unit_sum is None else self._unit_sum + unit_sum_b
        self.n_features_ = A.shape[1]
        self._set_moments(merge_moments(self._moments(), Moments(A.shape[0], mean_b, scatter_b, exponent, shift_b)))
        return self

    def _update_dask(self, X_chunk, caller):
        """:meth:`update` for a 2-d dask array: its row chunks computed a few at a time and fed in order.

        The array is never held whole by this process (a chunk or four at a time): what ``update`` of
        the computed array gave before, at the memory of its chunks. Rows are counted over the whole
        array in the refusals (a NaN is named by its row of ``X_chunk``, not of its chunk), and a
        refusal leaves ``self`` as it was: the chunks are fed to a new accumulator, merged at the end.
        To merge the chunks' statistics on a cluster's workers instead, see
        :func:`isotropy.distributed.covariance_accumulator`.
        """
        import dask

        from isotropy._utils.validation import first_nonfinite

        if self.n_features_ is not None and X_chunk.shape[1] != self.n_features_:
            raise IsotropyValueError(f"The 'X_chunk' parameter of {caller} must have {self.n_features_} features "
                                     f"(columns), like the previous chunks. Got {X_chunk.shape[1]} instead.")
        X = X_chunk.rechunk({1: -1}) if len(X_chunk.chunks[1]) > 1 else X_chunk
        blocks = X.to_delayed().ravel()
        part, start, top = CovarianceAccumulator(), 0, 0.0
        for first in range(0, len(blocks), _DASK_CHUNKS_AT_ONCE):
            for block in dask.compute(*blocks[first:first + _DASK_CHUNKS_AT_ONCE]):
                block = np.asarray(block)
                if block.ndim == 2 and block.shape[0] and block.dtype.kind in "fc":
                    found = first_nonfinite(block)
                    if found is not None:
                        raise IsotropyValueError(f"The 'X_chunk' parameter of {caller} must contain only finite "
                                                 f"values. Got {found.at(start + found.row)} instead.")
                if block.shape[0] and block.dtype.kind == "f" and block.dtype.itemsize < 4:
                    # half precision read as float32 (as update reads the computed array) and judged whole, below: a
                    # chunk of subnormal float16 numbers beside normal ones was refused, the whole array measured
                    top = max(top, float(np.abs(block).max()))
                    block = block.astype(np.float32)
                if block.shape[0]:
                    part.update(block)
                start += block.shape[0]
        refuse_subnormal_as_given(X.dtype, np.empty(0, dtype=np.float32), caller=caller, name="X_chunk", top=top)
        if part.n_samples_ == 0:  # no rows: their width alone, as for an empty numpy chunk
            self.n_features_ = X.shape[1]
            return self
        return self.merge(part)

    def _require(self, caller, min_samples=2):
        if self.n_samples_ < min_samples:
            needed = f"{min_samples} sample (row)" if min_samples == 1 else f"{min_samples} samples (rows)"
            more = "rows" if self.n_samples_ == 0 else "more rows"
            raise IsotropyValueError(f"CovarianceAccumulator.{caller} needs at least {needed}; call update() with "
                                     f"{more} first. Got {self.n_samples_} instead.")

    def mean(self):
        """Mean vector, float64 array of shape (n_features,)."""
        self._require("mean", min_samples=1)
        with np.errstate(over="ignore"):  # checked by _representable
            return self._representable(np.ldexp(self._shift + self._mean, self._exponent), "mean")

    def covariance(self):
        """Sample covariance (ddof=1), float64 array of shape (n_features, n_features)."""
        self._require("covariance")
        with np.errstate(over="ignore"):  # checked by _representable
            return self._representable(np.ldexp(self._scaled_covariance(), 2 * self._exponent), "covariance")

    def _scaled_covariance(self):
        """The covariance in units of 4**_exponent: what the scale-invariant statistics use."""
        return self._scatter / (self.n_samples_ - 1)

    def _representable(self, value, what):
        if not np.isfinite(value).all():
            raise IsotropyValueError(
                f"CovarianceAccumulator.{what} of data at scale 2**{self._exponent} overflows float64. The "
                f"scale-invariant statistics (isoscore, participation_ratio, cosine_similarity_mean) are still exact.")
        return value

    def _check_variance(self, caller):
        self._require(caller)
        _check_variance(np.trace(self._scatter), n_samples=self.n_samples_, mean_sq_norm=float(np.sum((self._shift + self._mean) ** 2)),
                        eps=float(np.finfo(np.float64).eps), caller="CovarianceAccumulator.update", name=None)

    def isoscore(self):
        """IsoScore of all rows seen (Python float); see :func:`isotropy.isoscore`."""
        self._check_variance("isoscore")
        if self.n_features_ < 2:
            raise IsotropyValueError(f"CovarianceAccumulator.isoscore needs at least 2 features. Got {self.n_features_} instead.")
        return isoscore_from_covariance(self._scaled_covariance())

    def isoscore_star(self, *, shrinkage_cov=None, zeta=0.2):
        """IsoScore* of all rows seen (Python float); see :func:`isotropy.isoscore_star` (which warns, as this does,
        without ``shrinkage_cov``)."""
        value = self._isoscore_star(shrinkage_cov=shrinkage_cov, zeta=zeta)
        if shrinkage_cov is None and float(zeta) != 0.0:
            warn_identity_shrinkage("CovarianceAccumulator.isoscore_star", stacklevel=2)
        return value

    def _isoscore_star(self, *, shrinkage_cov=None, zeta=0.2):
        """:meth:`isoscore_star` without its warning (for callers that say it in their own terms)."""
        zeta = check_zeta(zeta, caller="CovarianceAccumulator.isoscore_star")
        # ζ = 1 with Σ_S: Σ_S alone, one row enough (its undefined Σ_X weighs nothing), as isoscore_star
        only_s = zeta == 1.0 and shrinkage_cov is not None
        self._require("isoscore_star", min_samples=1 if only_s else 2)
        if zeta == 0.0 or shrinkage_cov is None:  # identical rows with ζ > 0 and Σ_S: ζ·Σ_S, as isoscore_star
            self._check_variance("isoscore_star")
        if self._exponent and 0 < zeta < 1:  # (1 − ζ)·4^e·Ĉ + ζ·S ∝ (1 − ζ')·Ĉ + ζ'·S: same score, no overflow
            a, b = _shrinkage_weights(float(zeta), self._exponent, 0)
            zeta = b / (a + b)
        # one row: Σ_X as 0 (its scatter is 0; / (n − 1) would be 0/0), which ζ = 1 replaces by Σ_S
        cov = self._scaled_covariance() if self.n_samples_ > 1 else np.zeros_like(self._scatter)
        return _isoscore_from_covariance(cov, shrinkage_cov=shrinkage_cov, zeta=zeta,
                                         caller="CovarianceAccumulator.isoscore_star", data_name="the rows seen")

    def participation_ratio(self):
        """(Σλ)²/Σλ² of the covariance of all rows seen (Python float), in [1, n_features]."""
        self._check_variance("participation_ratio")
        C = self._scaled_covariance()
        return participation_ratio_in_range(float(np.trace(C) ** 2 / np.vdot(C, C)), self.n_features_)

    def singular_values(self, *, center: bool = False):
        """Singular values of the rows seen (or of the rows minus their mean), largest first, up to a common scale.

        From the eigenvalues of the centred scatter ``M`` (``center=True``), whose square roots are
        the singular values of ``X − μ``; uncentred, from ``XᵀX = M + n·μμᵀ = BBᵀ`` with
        ``B = [V·Λ^½, √n·μ]`` (``M = VΛVᵀ``), as the singular values of ``B``: never forming
        ``M + n·μμᵀ``, whose eigenvalues would be rounded relative to ``n·|μ|²`` (data far from the
        origin lost their small singular values: 3.5e-3 off at an offset of 1e6 times the spread, 0 at
        1e8). The ``min(n, d)`` largest are returned (centred with ``n ≤ d``, the last is
        exactly 0: ``n`` centred rows span at most ``n − 1`` dimensions), in units
        of the power of two the accumulator keeps (only their ratios are meaningful, as for
        :func:`isotropy.metrics.spectrum.singular_values`).

        Notes
        -----
        An eigenvalue is a squared singular value, so its rounding, about ``1e-16·λ_max`` of ``M``, is
        ``1e-8·σ_max`` of ``X − μ`` on a singular value: a rank computed from them equals the one from the SVD
        of the rows to about 1e-10 relative on well-conditioned data, and to about 1e-7 where
        directions carry no variance at all (exactly rank-deficient data).
        """
        self._require("singular_values", min_samples=1 if not center else 2)
        mean = self._shift + self._mean
        k = min(self.n_samples_, self.n_features_)  # as many as the SVD of the rows gives
        if center:
            s = np.sqrt(np.clip(np.linalg.eigvalsh((self._scatter + self._scatter.T) / 2)[::-1][:k], 0.0, None))
        else:
            lam, V = np.linalg.eigh((self._scatter + self._scatter.T) / 2)
            B = np.column_stack([V * np.sqrt(np.clip(lam, 0.0, None)), np.sqrt(float(self.n_samples_)) * mean])
            s = np.linalg.svd(B, compute_uv=False)[:k]
        if center and self.n_samples_ <= self.n_features_:
            s[-1] = 0.0  # n centred rows span at most n − 1 dimensions: exactly 0, not its rounding
        return s

    def effective_rank(self, *, center: bool = False, normalize: bool = False):
        """Effective rank of the rows seen (Python float); see :func:`isotropy.effective_rank`.

        From :meth:`singular_values` (the eigenvalues of the second-moment matrix): equal to the
        in-memory function, which takes the SVD of the rows, to ~1e-10 relative on
        well-conditioned data.
        """
        return self._spectral_rank(center=center, normalize=normalize, epsilon=0.0, caller="effective_rank")

    def rankme(self, *, epsilon: float = 1e-7, center: bool = False, normalize: bool = False):
        """RankMe of the rows seen (Python float); see :func:`isotropy.rankme` and :meth:`effective_rank`."""
        return self._spectral_rank(center=center, normalize=normalize, epsilon=float(epsilon), caller="rankme")

    def _spectral_rank(self, *, center, normalize, epsilon, caller):
        self._require(caller)
        values = self.singular_values(center=bool(center))
        rank = entropy_rank(values, epsilon=epsilon, caller=f"CovarianceAccumulator.{caller}")
        reachable = min(self.n_samples_ - 1 if center else self.n_samples_, self.n_features_, len(values))
        return entropy_rank_in_range(rank, len(values), reachable, epsilon, normalize=bool(normalize))

    def cosine_similarity_mean(self):
        """Mean cosine similarity over distinct pairs of all rows seen (Python float)."""
        self._require("cosine_similarity_mean")
        if self._n_zero_rows:
            raise IsotropyValueError(f"CovarianceAccumulator.cosine_similarity_mean is undefined with zero vectors. "
                                     f"Got {self._n_zero_rows} all-zero row(s) instead.")
        n = self.n_samples_
        from isotropy._kernels.rows import mean_pair_cosine

        return float(mean_pair_cosine(self._unit_sum @ self._unit_sum, n))

    def __repr__(self):
        return f"CovarianceAccumulator(n_samples_={self.n_samples_}, n_features_={self.n_features_})"

    def merge(self, other):
        """Add the statistics of another accumulator (rows seen elsewhere: a worker, a rank); returns ``self``.

        The result equals one accumulator fed both streams of rows (Chan, Golub & LeVeque's
        pairwise update, as in :meth:`update`); ``other`` is not modified. This is how dask
        workers, Ray or Spark tasks and torch DDP ranks combine their partial statistics
        (see docs/scaling.md).

        Examples
        --------
        >>> import numpy as np
        >>> from isotropy import CovarianceAccumulator, isoscore
        >>> X = np.random.default_rng(0).normal(size=(1000, 4)) * [1.0, 2.0, 3.0, 4.0]
        >>> first, second = CovarianceAccumulator().update(X[:600]), CovarianceAccumulator().update(X[600:])
        >>> merged = first.merge(second)
        >>> merged.n_samples_, abs(merged.isoscore() - isoscore(X)) < 1e-12
        (1000, True)
        """
        caller = "CovarianceAccumulator.merge"
        if not isinstance(other, CovarianceAccumulator):
            raise TypeError(f"The 'other' parameter of {caller} must be a CovarianceAccumulator. "
                            f"Got {type(other).__name__} instead.")
        if other.n_samples_ == 0:
            return self
        if self.n_features_ is not None and other.n_features_ != self.n_features_:
            raise IsotropyValueError(f"The 'other' parameter of {caller} must have {self.n_features_} features, "
                                     f"like this accumulator. Got {other.n_features_} instead.")
        self.n_features_ = other.n_features_
        self._unit_sum = other._unit_sum.copy() if self._unit_sum is None else self._unit_sum + other._unit_sum
        self._n_zero_rows += other._n_zero_rows
        theirs = other._moments()
        if self.n_samples_ == 0:  # keep no array of other's: it may go on updating
            theirs = Moments(theirs.n_samples, theirs.mean.copy(), theirs.scatter.copy(), theirs.exponent,
                             np.copy(theirs.shift))
        self._set_moments(merge_moments(self._moments(), theirs))
        return self

    def reset(self):
        """Forget every row seen (e.g. at the start of an epoch); returns ``self``."""
        self.__init__()
        return self
