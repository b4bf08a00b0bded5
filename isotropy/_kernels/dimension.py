"""Kernels of the nearest-neighbour dimension estimators, shared by :mod:`isotropy.metrics.dimension` and :mod:`isotropy.distributed`.

Private: the TwoNN fit of Facco et al. (2017) and the maximum-likelihood terms of Levina & Bickel
(2004) from neighbour distances, and their pooling over samples. The in-memory estimators and the
dask ones call these (and only these) on the distances of the same exact kNN kernel
(:func:`isotropy._kernels.neighbors.exact_knn`), so both give the same numbers.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from isotropy._utils.validation import IsotropyValueError
from isotropy._utils.warn import user_stacklevel

#: ``k`` of the MLE when none is given (``mle_dimension``, ``neighbour_dimensions``, :class:`~isotropy.MLE`, the
#: dask estimator, ``isotropy measure --n-neighbors``): scikit-dimension's default.
DEFAULT_MLE_NEIGHBOURS = 20

_AVERAGING = ("mean", "harmonic", "median")


class TooFewDistinctError(IsotropyValueError):
    """:func:`too_few_distinct`'s refusal, with its counts: ``n_neighbors`` asked for, ``n_distinct`` points found.

    ``isotropy measure`` reads them: a default table whose rows hold too few distinct points for MLE's default ``k``
    leaves MLE out with a note, as it does for too few rows (:func:`isotropy.measure.report._mle_left_out`).
    """

    def __init__(self, message: str, n_neighbors: int, n_distinct: int):
        super().__init__(message)
        self.n_neighbors, self.n_distinct = int(n_neighbors), int(n_distinct)

    def __reduce__(self):  # pickled with its counts (a dask worker's error is sent to the client)
        return type(self), (str(self), self.n_neighbors, self.n_distinct)


def too_few_distinct(caller: str, n_neighbors: int, n_distinct: int, n_dup: int) -> TooFewDistinctError:
    """The error of a search for ``n_neighbors`` among fewer distinct points (in memory and on dask alike).

    TwoNN has no ``n_neighbors`` parameter: the message of any of its callers (``twonn_dimension``, ``TwoNN.fit``,
    ``TwoNNDimension.compute``) names the two neighbours it reads instead.
    """
    needs = (f"more than {n_neighbors} distinct points (TwoNN reads the two nearest neighbours of each)"
             if caller.lower().startswith("twonn") else f"more than n_neighbors={n_neighbors} distinct points")
    return TooFewDistinctError(f"The 'X' parameter of {caller} must have {needs}. Got {n_distinct} distinct "
                               f"point{'' if n_distinct == 1 else 's'} ({n_dup} duplicate rows) instead.",
                               n_neighbors, n_distinct)


def duplicate_rows_message(caller: str, n_dup: int, n_distinct: int, metric: str, parallel: bool = False) -> str:
    """The warning of ``n_dup`` rows merged into ``n_distinct`` distinct points (in memory and on dask alike).

    ``parallel``: under the cosine metric, rows parallel to another (positive multiples) were merged as well; they are
    counted with the equal rows, as one number of duplicates.
    """
    what = f"at {metric} distance 0 from another row" + (", or parallel to it to the input's precision" if parallel
                                                         else "")
    return (f"{caller}: X has {n_dup} duplicate rows ({what}); each distinct point is counted once and neighbours are "
            f"searched among the {n_distinct} distinct points.")


def underflowed_distances(caller: str, count: int, *, identical: str = "are merged",
                          at_least: bool = False) -> IsotropyValueError:
    """The error for distinct rows at euclidean distance 0 (TwoNN, MLE and ``kneighbors``, in memory and on dask).

    Equal rows are merged before the search (``kneighbors``: they are neighbours at distance 0, ``identical``
    says so); a distinct row at distance 0 from another is one whose squared difference underflowed float64
    (values spanning some 300 orders of magnitude once brought to the search's scale). Its neighbour order is
    lost, so no estimate is formed from it, and no distance is returned for it. ``at_least``: ``count`` is of the
    rows one task found (a dask tile), not of them all.
    """
    return IsotropyValueError(
        f"The 'X' parameter of {caller} must have its distinct rows at a nonzero float64 distance from each other "
        f"(identical rows {identical}). Got {'at least ' if at_least else ''}{count} distinct row(s) at distance 0 from another row instead: their "
        f"squared differences underflow float64 (X's values span too many orders of magnitude).")


#: ``identical=`` of :func:`underflowed_distances` for ``kneighbors`` (in memory and on dask), which does not merge
#: equal rows.
NEIGHBOURS_AT_ZERO = "are neighbours at distance 0"

# Entries compared at a time by rows_at_zero_distance (32 MiB of float64 pairs).
_COMPARED = 2**21


def rows_at_zero_distance(X, sq, ind, *, rows=None, fingerprints=None):
    """The rows (sorted, distinct) that have a row other than themselves among their neighbours at distance 0.

    ``sq``, ``ind``: squared distances and indices of the neighbours (into ``X``) of the rows ``rows`` of ``X``
    (default all, in order). Only the pairs at distance 0 are compared (none on data without equal rows, and
    without values beyond float64's squares: one pass over ``sq``). ``fingerprints``: for rows whose values lost
    digits when brought to the search's scale (two distinct rows may then be equal in ``X``), a digest of the
    row as given (``b""`` for the others), compared too (the dask tiles, which hold the rows at that scale only).
    Numpy arrays or torch tensors (``X``, ``sq`` and ``ind`` of one kind): the rows come back in that kind, compared
    on the tensors' device, in pieces of ``_COMPARED`` entries.
    """
    from isotropy._utils.backend import get_namespace

    xp = get_namespace(X, sq, ind)
    zero = sq == 0
    if not bool(xp.any(zero)):
        return xp.zeros(0, dtype=xp.int64)
    at, col = xp.nonzero(zero)
    i = at if rows is None else xp.asarray(rows)[at]
    j = ind[at, col]
    step = max(1, _COMPARED // max(1, X.shape[1]))
    differ = xp.concat([xp.any(X[i[s:s + step], :] != X[j[s:s + step], :], axis=1)
                        for s in range(0, i.shape[0], step)])
    if fingerprints is not None:
        differ = differ | (fingerprints[i] != fingerprints[j])
    return xp.unique_values(i[differ])


def parallel_radius(n_features: int, dtype, metric: str) -> float:
    """The cosine distance below which two rows are the same direction to the precision of their values.

    The cosine metric reads directions: a row and its positive multiple (a normalised copy, ``3·x``) are one
    point, at distance 0. Their unit rows, computed in float64 from values rounded to ``dtype``, differ by up to
    about ``2·eps(dtype)`` per entry (the copy's rounding) and by a common factor of up to ``(d + 12)/2·eps64``
    (the norm's): half the square of their sum is the bound. Exactly parallel float64 rows came out ~1e-32 apart
    and were not merged, and TwoNN read 0.02 for a true 4.2 (a new-user trial). 0 for the euclidean metric, whose
    rows are merged only when equal. ``dtype``: the dtype the values were given in (numpy's, torch's or dask's, before
    any cast), bfloat16 included; other dtypes (integers) count as float64.
    """
    if metric != "cosine":
        return 0.0
    eps64 = float(np.finfo(np.float64).eps)
    return 0.5 * (4.0 * _EPS.get(str(dtype).removeprefix("torch."), eps64) + (n_features + 12) * eps64) ** 2


# The precision of the floating dtypes rows may come in (bfloat16 has no numpy dtype): their machine epsilon
_EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52}


def _computed(value: float, caller: str) -> float:
    """``value`` as a float; a NaN (no estimate can be formed from these distances) is an error."""
    value = float(value)
    if math.isnan(value):
        raise IsotropyValueError(f"The 'X' parameter of {caller} must give finite neighbour distance ratios. Got an "
                                 f"undefined (NaN) estimate instead (distances at the limits of float64).")
    return value


# Ratios kept below which TwoNN warns: its relative standard error 1/√K is then above 20 %.
_TWONN_FEW_RATIOS = 25


def twonn_kept(N: int, discard_fraction: float, method: str, caller: str) -> int:
    """The ``K = ⌊N(1 − f)⌋`` ratios TwoNN keeps of ``N`` distinct points; an error of ``discard_fraction`` (of the
    options, not of the data's values) when they leave no fit (:func:`neighbour_dimensions` raises it for the call)."""
    n_keep = int(N * (1 - discard_fraction))
    if method == "linear" and n_keep == N:
        raise IsotropyValueError(
            f"The 'discard_fraction' parameter of {caller} must leave out at least the largest ratio with "
            f"method='linear' (where F(mu) = 1 and -log(1 - F) is infinite). Got {discard_fraction!r} instead.")
    if n_keep < 2:
        raise IsotropyValueError(f"The 'discard_fraction' parameter of {caller} must keep at least 2 of the {N} "
                                 f"distinct points. Got {discard_fraction!r} instead.")
    return n_keep


def undefined_estimates(failed: dict, requested: list, caller: str, *, stacklevel: int = 3) -> None:
    """The estimates of ``caller`` (``neighbour_dimensions``, in memory and on dask) that the data refused.

    ``failed``: name -> the refusal (an :class:`IsotropyValueError` about X's values) of each estimate that could not
    be formed from the shared search; ``requested``: the names asked for. Each failed estimate is NaN with one
    warning naming it and giving its refusal, as its function alone would raise it, while the others keep their
    values; when every estimate asked for failed, nothing was measured and the call raises instead (the one
    refusal, or each estimate's in one line). ``stacklevel``: as in :func:`_pool`.
    """
    if not failed:
        return
    if len(failed) == len(requested):
        refusals = list(dict.fromkeys(failed.values()))  # the MLE and the local MLE fail on one computation
        if len(refusals) == 1:
            raise refusals[0]
        raise IsotropyValueError(f"The 'X' parameter of {caller} must allow at least one of the estimates asked for. "
                                 f"Got none instead: " + "; ".join(f"{name}: {str(exc).rstrip('.')}"
                                                                   for name, exc in failed.items()) + ".")
    computed = ", ".join(name for name in requested if name not in failed)
    for name, exc in failed.items():
        warnings.warn(UndefinedEstimateWarning(f"{name}: undefined on these data, so it is NaN ({computed} computed): "
                                               f"{exc}", estimate=name, error=exc), stacklevel=stacklevel)


class UndefinedEstimateWarning(UserWarning):
    """The warning of :func:`undefined_estimates`: ``estimate`` is NaN because the data refused it with ``error``.

    It carries the refusal, so that ``isotropy measure`` reports it as the estimate's error without searching the
    neighbours again for the estimate alone (an O(n²) search only to raise what the shared one already found).
    """

    def __init__(self, message: str, *, estimate: str, error: Exception):
        super().__init__(message)
        self.estimate, self.error = estimate, error


def _twonn(dist: np.ndarray, discard_fraction: float, method: str, caller: str, *, warns_as: str | None = None) -> float:
    """TwoNN estimate from sorted neighbour distances ``dist`` (n, >= 2), no zero first distance.

    ``μ_i = r2/r1`` sorted; the ``K = ⌊N(1 − f)⌋`` smallest kept; ``"linear"``: the least-squares
    slope through the origin of ``−log(1 − i/N)`` on ``log μ_(i)``; ``"mle"``:
    ``(K − 1) / (Σ_{i≤K} log μ_(i) + (N − K) log μ_(K))`` (Facco et al. 2017). ``warns_as``: as in
    :func:`_local_mle` (the estimate a shared search's warning concerns).
    """
    mu = np.sort(dist[:, 1] / dist[:, 0])
    N = mu.shape[0]
    n_keep = twonn_kept(N, discard_fraction, method, caller)
    if n_keep < _TWONN_FEW_RATIOS:
        # d̂ from K ratios μ ~ Pareto(d) has a relative standard error of about 1/√K (both the likelihood and the
        # regression of Facco et al.): 3 points gave 3.6, 58 % either way, with nothing said
        warnings.warn(f"{warns_as or caller}: {n_keep} distance ratios kept (of {N} points): the estimate's relative standard "
                      f"error is about 1/sqrt({n_keep}) = {100 / np.sqrt(n_keep):.0f} %; measure at least "
                      f"{int(np.ceil(_TWONN_FEW_RATIOS / (1 - discard_fraction)))} points for 20 %.", UserWarning,
                      stacklevel=user_stacklevel())  # the user's line, from twonn_dimension and TwoNN.fit alike
    log_mu = np.log(mu[:n_keep])
    if not log_mu.any():
        # every ratio kept is 1 (tied first and second neighbour distances: a lattice, binary data), so the linear
        # slope is 0/0 and the maximum-likelihood estimate (K - 1)/0; said with its cause here. scikit-dimension's
        # TwoNN (0.5) returns 0 for such data (its LinearRegression takes the minimum-norm slope of an all-zero x):
        # we refuse rather than return 0 (or inf), which reads as a dimension while the ratios carry no information
        raise _tied_ratios(mu, n_keep, discard_fraction, caller)
    if method == "mle":
        value = _computed((n_keep - 1) / (log_mu.sum() + (N - n_keep) * log_mu[-1]), caller)
    else:
        y = -np.log1p(-np.arange(1, n_keep + 1) / N)
        value = _computed(np.dot(log_mu, y) / np.dot(log_mu, log_mu), caller)
    if value > N - 1:
        # N points span at most N - 1 dimensions: an estimate above it is the noise of few ratios, not a dimension (10
        # texts of a 32-d model read 26 and 28 at two layers with only the standard-error warning, a trial). Without
        # the value, so that the layers of a table that give it are said in one warning
        warnings.warn(f"{warns_as or caller}: the estimate is above the {N - 1} dimension{'s' if N != 2 else ''} that "
                      f"{N} distinct points span at most: it is the noise of their few distance ratios, not a "
                      f"dimension of the data; measure more points.", UserWarning, stacklevel=user_stacklevel())
    return value


def _tied_ratios(mu: np.ndarray, n_keep: int, discard_fraction: float, caller: str) -> IsotropyValueError:
    """The error of a TwoNN fit whose kept ratios ``μ = r2/r1`` are all 1 (the count of such points, the cure)."""
    N = mu.shape[0]
    tied = int(np.count_nonzero(mu == 1.0))
    return IsotropyValueError(
        f"The 'X' parameter of {caller} must have unequal first and second neighbour distances at more than "
        f"{N - n_keep} of its {N} distinct points (discard_fraction={discard_fraction!r} leaves out the {N - n_keep} "
        f"largest ratios). Got {N - tied} instead: {tied} points have r2/r1 = 1 (tied neighbours, as on a lattice or binary "
        f"data), so log(r2/r1) = 0 at every ratio kept and the fit is undefined; add a little noise to X (jitter) or "
        f"use another estimator.")


def _local_mle(dist: np.ndarray, caller: str, *, warns_as: str | None = None) -> np.ndarray:
    """Levina–Bickel local estimates ``(k − 1) / Σ_{j<k} log(T_k/T_j)`` from sorted distances (n, k), k >= 2.

    ``warns_as``: the name its warning starts with (default ``caller``, which its errors name), the estimate the
    warning concerns where ``caller`` computes several (``neighbour_dimensions``).
    """
    k = dist.shape[1]
    total = np.log(dist[:, -1:] / dist[:, :-1]).sum(axis=1)
    if np.isnan(total).any():
        raise IsotropyValueError(f"The 'X' parameter of {caller} must give finite neighbour distance ratios. Got "
                                 f"undefined (NaN) ratios instead (distances at the limits of float64).")
    flat = int(np.count_nonzero(total == 0))
    if flat:
        warnings.warn(flat_points_message(warns_as or caller, flat, k), UserWarning, stacklevel=3)
    with np.errstate(divide="ignore"):
        return (k - 1) / total


def flat_points_message(name: str, flat: int, n_neighbors: int) -> str:
    """The warning for ``flat`` points whose ``n_neighbors`` nearest all lie at one distance (in memory and on dask)."""
    return (f"{name}: {flat} points have all their {n_neighbors} nearest neighbours at the same distance; their local "
            f"MLE dimension is infinite (increase n_neighbors; a point far from all the others stays so at any "
            f"n_neighbors: pool with averaging='harmonic' or 'median', which it does not carry away).")


def _pool(local: np.ndarray, averaging: str, caller: str = "mle_dimension", n_neighbors: int | None = None, *,
          warns_as: str | None = None, stacklevel: int = 3) -> float:
    """Pool local estimates: arithmetic mean, harmonic mean (inverse of the mean inverse) or median.

    The mean of ``k`` neighbours' local estimates ``(k − 1)/S``, with ``S ~ Gamma(k − 1)`` under the
    estimator's own Poisson model, has no finite expectation at ``k = 2`` and no finite variance at
    ``k = 3``: it is then warned of (``n_neighbors``), since one point with two almost equal
    distances can carry it beyond the number of features. ``warns_as``: as in :func:`_local_mle`. ``stacklevel``: of
    its warnings, so that they name the caller's line (3: the public function's caller; one more frame on dask).
    """
    if averaging == "mean" and n_neighbors is not None and n_neighbors <= 3:
        warnings.warn(f"{warns_as or caller}: with n_neighbors={n_neighbors} the mean of the local estimates has no finite "
                      f"{'expectation' if n_neighbors == 2 else 'variance'} (one point whose nearest distances "
                      f"are almost equal can carry it beyond the number of features); Levina and Bickel use "
                      f"10 to 20 neighbours, or pool with averaging='harmonic' or 'median'.", UserWarning,
                      stacklevel=stacklevel)
    if averaging == "mean":
        value = _computed(local.mean(), caller)
        # Under the estimator's own model the mean of k > 3 local estimates is within a few per cent of their
        # median; twice it means a few points carry it (a point far from all the others has its k neighbours at
        # about the same distance, hence a huge local estimate): one row 1e8 times the others gave 820,848 for
        # 16-dimensional data, without a word.
        if (n_neighbors is not None and n_neighbors > 3 and local.size and math.isfinite(value)
                and value > 2.0 * float(np.median(local))):
            warnings.warn(f"{warns_as or caller}: the mean of the local estimates ({value:.4g}) is more than twice "
                          f"their median ({float(np.median(local)):.4g}), so a few points carry it (e.g. points far "
                          f"from all the others); pool with averaging='harmonic' (scikit-dimension's default) or "
                          f"'median'.", UserWarning, stacklevel=stacklevel)
        return value
    if averaging == "median":
        return _computed(np.median(local), caller)
    return _computed(1.0 / np.mean(1.0 / local), caller)


def merge_parallel(sq, ind, limit: float):
    """``(keep, inverse)`` of the points whose neighbours lie within squared distance ``limit`` of them (``sq``,
    ``ind``: each point's neighbours), merged with them into one point, the first of each group; None when no
    neighbour is that close. Shared by the in-memory estimators and the dask ones (cosine rows parallel to
    another: ``sq`` the squared distances of the unit rows and ``limit`` twice the radius, or ``sq`` the cosine
    distances and ``limit`` the radius)."""
    close = sq <= limit
    if not close[:, 0].any():
        return None
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    rows, cols = np.nonzero(close)
    n = sq.shape[0]
    graph = coo_matrix((np.ones(rows.size), (rows, ind[rows, cols])), shape=(n, n))
    _, label = connected_components(graph, directed=False)
    representative = np.full(label.max() + 1, n, dtype=np.intp)
    np.minimum.at(representative, label, np.arange(n))  # each group's first point
    keep, inverse = np.unique(representative[label], return_inverse=True)
    return keep, inverse.reshape(-1)
