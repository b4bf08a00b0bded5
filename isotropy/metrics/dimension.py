"""Intrinsic dimension from nearest-neighbour distances: TwoNN and the Levina–Bickel MLE.

Both estimators read only the distances from each point to its nearest neighbours, found by the
exact chunked search of :func:`isotropy.metrics.neighbors.kneighbors`.

Duplicate points (distance 0 to another point, under the chosen metric) would make the
distance ratios infinite or undefined. They are merged with a warning: the estimators see each
distinct point once (neighbours are searched among the distinct points), and in
:func:`local_mle_dimension` every copy of a point gets that point's value. scikit-dimension's
``TwoNN`` instead drops the points whose first neighbour is at distance 0 but keeps them as
neighbours of the others, and its ``MLE`` gives duplicated points a local estimate of 0 (so a
harmonic mean of 0); results differ on data with duplicates.
For torch input with duplicates the second search runs on the CPU; for a dask array the duplicates
are found by a hashing pass over the chunks (:mod:`isotropy.distributed`), with the same result.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from isotropy._kernels.dimension import (
    _AVERAGING,
    DEFAULT_MLE_NEIGHBOURS,
    _local_mle,
    _pool,
    _twonn,
    duplicate_rows_message,
    merge_parallel,
    parallel_radius,
    too_few_distinct,
    twonn_kept,
    undefined_estimates,
    underflowed_distances,
)
from isotropy._kernels.neighbors import _METRICS, _finish, _prepare
from isotropy._kernels.repeats import distinct_rows, maybe_repeated
from isotropy._utils.backend import is_dask, is_torch
from isotropy._utils.validation import IsotropyValueError, check_n_neighbors, check_option, check_scalar, check_X
from isotropy._utils.warn import user_stacklevel
from isotropy.metrics.neighbors import _kneighbors_numpy, _kneighbors_torch

__all__ = ["local_mle_dimension", "mle_dimension", "neighbour_dimensions", "twonn_dimension"]


def _rescaling(metric) -> bool | str:
    """How :func:`check_X` brings X to scale: row by row for the cosine metric (directions alone), else whole (to the
    neighbour searches' scale)."""
    return "directions" if isinstance(metric, str) and metric == "cosine" else "neighbours"  # (an array: refused after)


def _neighbour_distances(X, *, n_neighbors: int, metric: str, caller: str, given=None):
    """Neighbour distances of the distinct points of ``X``.

    Returns ``(distances, inverse)``: ``distances`` (n_distinct, n_neighbors) float64 numpy with
    no zero, and ``inverse`` mapping each row of ``X`` to its distinct point (None when all rows
    are distinct, then distinct point i is row i). ``given``: the dtype ``X`` came in before it was checked (the
    precision of its values, for the cosine metric's parallel rows; ``X``'s own by default).
    """
    n = X.shape[0]
    n_neighbors = check_n_neighbors(n_neighbors, n, caller=caller, low=1)
    radius = parallel_radius(X.shape[1], X.dtype if given is None else given, metric)
    if is_torch(X):
        dist, _ = _kneighbors_torch(X, n_neighbors, metric, None, caller)
        dist = dist.cpu().numpy().astype(np.float64, copy=False)
        if not (dist[:, 0] <= radius).any():
            return dist, None
        X, scale = _prepare(X.detach().cpu().numpy(), metric, caller)
        first, inverse = distinct_rows(X, scale, np.ones(X.shape[0], dtype=bool))  # device arithmetic: every row
        found = None
    else:  # the duplicates first, so that the search runs once, on the distinct points
        X, scale = _prepare(X, metric, caller)
        first, inverse = distinct_rows(X, scale, maybe_repeated(X, scale))
        found = None if first.size < n else _kneighbors_numpy(X, scale, n_neighbors, None, caller, distinct=True)
    parallel = False
    while True:  # cosine: rows parallel to another to the input's precision merge too (a search or two more)
        k = n_neighbors
        if first.size - 1 < n_neighbors:
            if metric != "cosine" or first.size < 2:
                raise too_few_distinct(caller, n_neighbors, first.size, n - first.size)
            # too few points, but rows parallel to another are duplicates too: merged before they are counted (the
            # refusal said 4 distinct points of 2 directions), with as many neighbours as there are
            k, found = first.size - 1, None
        if found is None:
            found = _kneighbors_numpy(X[first], None if scale is None else scale[first], k, None, caller,
                                      distinct=True)
        sq, ind = found
        merged = merge_parallel(sq, ind, 2.0 * radius)
        if merged is None:
            if k < n_neighbors:
                raise too_few_distinct(caller, n_neighbors, first.size, n - first.size)
            break
        if metric != "cosine":  # equal rows are merged already: these differ, by less than float64's squares hold
            raise underflowed_distances(caller, int(np.count_nonzero(sq[:, 0] == 0)))
        first, inverse, found, parallel = first[merged[0]], merged[1][inverse], None, True
    if first.size < n:
        # the user's line, however many of the package's frames lie between (TwoNN.fit, twonn_dimension's body)
        warnings.warn(duplicate_rows_message(caller, n - first.size, first.size, metric, parallel), UserWarning,
                      stacklevel=user_stacklevel())
    return _finish(sq, metric), (inverse if first.size < n else None)


def distinct_points(X, *, metric: str = "euclidean") -> int:
    """The number of distinct points the neighbour estimators see in ``X``: equal rows count once, and under the
    cosine metric so do rows parallel to another (positive multiples, to the precision of their values).

    ``n_neighbors`` must stay below it (a ``k`` chosen as ``min(k, distinct_points(X, metric=...) - 1)`` always
    fits). Costs one nearest-neighbour search under the cosine metric when rows are parallel.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    >>> distinct_points(X), distinct_points(X, metric="cosine")
    (3, 2)
    """
    caller = "distinct_points"
    check_option(metric, "metric", _METRICS, caller=caller)
    given = getattr(X, "dtype", None)
    X = check_X(X, caller=caller, min_samples=1, rescale=_rescaling(metric))
    return _count_distinct(X, metric, caller, given)


def _count_distinct(X, metric: str, caller: str, given) -> int:
    """:func:`distinct_points` of the checked ``X`` (``given``: its dtype as it came in, see :func:`_neighbour_distances`)."""
    if X.shape[0] < 2:
        return int(X.shape[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the duplicates are what is counted here
        try:
            dist, _ = _neighbour_distances(X, n_neighbors=1, metric=metric, caller=caller, given=given)
        except IsotropyValueError:  # one distinct point: no neighbour to search
            return 1
    return int(dist.shape[0])


def _check_n_neighbors(X, n_neighbors, metric: str, caller: str, given=None) -> int:
    """``n_neighbors`` of the MLE: an int in ``[2, n_samples - 1]``; returned as int.

    Past ``n_samples - 1``, when ``X`` has duplicate rows, it is the distinct points that limit ``k``
    (no ``k`` of the range would do either once it reaches them): the error is then the one of a
    ``k`` within the range that reaches them (:func:`too_few_distinct`), not the range of the rows.
    The distinct points are counted only on that error path; under the cosine metric rows parallel to another count
    as duplicates, as in the search (``given``: X's dtype as it came in, the precision they are parallel to).
    """
    n = X.shape[0]
    try:
        check_n_neighbors(n_neighbors, n, caller=caller, low=2)
    except ValueError:
        if isinstance(n_neighbors, numbers.Integral) and not isinstance(n_neighbors, bool) and n_neighbors > n - 1:
            if metric == "cosine":
                n_distinct = _count_distinct(X, metric, caller, given)
            else:
                A, scale = _prepare(X.detach().cpu().numpy() if is_torch(X) else X, metric, caller)
                n_distinct = distinct_rows(A, scale, maybe_repeated(A, scale))[0].size
            if n_distinct < n:
                raise too_few_distinct(caller, int(n_neighbors), n_distinct, n - n_distinct) from None
        raise
    return int(n_neighbors)


def _output(value, like):
    """Python float (numpy input) or a tensor on the input's device (torch input)."""
    if is_torch(like):
        import torch

        return torch.as_tensor(value, dtype=like.dtype, device=like.device)
    return float(value) if np.ndim(value) == 0 else value


def twonn_dimension(X, *, discard_fraction: float = 0.1, method: str = "linear", metric: str = "euclidean"):
    """TwoNN intrinsic dimension (Facco et al. 2017) from the two nearest neighbours of each point.

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        The points.
    discard_fraction : float, default=0.1
        Fraction of the largest ratios ``μ`` left out (the paper's heuristic against noise and
        curvature at large scales). Must be in ``[0, 1)``, and above 0 for ``method="linear"``.
    method : {"linear", "mle"}, default="linear"
        ``"linear"``: least-squares slope through the origin of ``−log(1 − F(μ))`` against
        ``log μ`` (Facco et al.; scikit-dimension's default). ``"mle"``: closed-form maximum
        likelihood with the discarded ratios treated as censored.
    metric : {"euclidean", "cosine"}, default="euclidean"
        Distance; the cosine distance ``1 − cos`` is about half a squared chord length, so on
        normalised data it gives about half the euclidean estimate.

    Returns
    -------
    dimension : float
        The estimated intrinsic dimension (a 0-dim tensor on the input's device for torch input,
        without a graph: the estimate is not differentiable, and in a loss it adds no gradient).

    Notes
    -----
    With ``r1 < r2`` the distances to the first and second neighbours, ``μ = r2/r1`` follows
    the Pareto law ``F(μ) = 1 − μ^(−d)``. Sort the ``N`` ratios, keep the ``K = ⌊N(1 − f)⌋``
    smallest, and set ``F_i = i/N``. ``"linear"`` returns
    ``d = Σ x_i y_i / Σ x_i²`` with ``x_i = log μ_(i)`` and ``y_i = −log(1 − F_i)``;
    ``"mle"`` returns ``(K − 1) / (Σ_{i≤K} log μ_(i) + (N − K) log μ_(K))``.
    Both equal scikit-dimension's ``TwoNN(discard_fraction=f, method=...)`` on data without
    duplicate points (see the module docstring for duplicates).

    References
    ----------
    E. Facco, M. d'Errico, A. Rodriguez and A. Laio, "Estimating the intrinsic dimension of
    datasets by a minimal neighborhood information", Scientific Reports 7, 12140 (2017).

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy import twonn_dimension
    >>> rng = np.random.default_rng(0)
    >>> plane = rng.random((2000, 2)) @ rng.standard_normal((2, 50))  # a 2-d plane in 50-d
    >>> round(twonn_dimension(plane))
    2
    """
    if is_dask(X):  # a dask array: computed by tiles / chunk statistics on the dask scheduler
        from isotropy import distributed
        return distributed.twonn_dimension(X, discard_fraction=discard_fraction, method=method, metric=metric)
    return _twonn_dimension(X, discard_fraction=discard_fraction, method=method, metric=metric,
                            caller="twonn_dimension")


def _twonn_dimension(X, *, discard_fraction, method, metric, caller):
    """:func:`twonn_dimension` (in memory), its errors and warnings naming ``caller`` (``TwoNN.fit`` there)."""
    given = getattr(X, "dtype", None)  # the precision of the values as given (bfloat16 is read as float32)
    X = check_X(X, caller=caller, min_samples=3, rescale=_rescaling(metric))
    check_scalar(discard_fraction, "discard_fraction", caller=caller, low=0, high=1, closed="left")
    method = check_option(method, "method", ("linear", "mle"), caller=caller)
    metric = check_option(metric, "metric", _METRICS, caller=caller)
    dist, _ = _neighbour_distances(X, n_neighbors=2, metric=metric, caller=caller, given=given)
    return _output(_twonn(dist, discard_fraction, method, caller), X)


def local_mle_dimension(X, *, n_neighbors: int = 100, metric: str = "euclidean"):
    """Local intrinsic dimension of every point: the Levina–Bickel MLE on its neighbourhood.

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        The points.
    n_neighbors : int, default=100
        Neighbours per point, ``2 <= n_neighbors <= n_samples - 1`` (Cai et al. 2021 use 100).
    metric : {"euclidean", "cosine"}, default="euclidean"
        Distance between points; ``"cosine"`` is ``1 − cos(x, y)``.

    Returns
    -------
    lid : ndarray of shape (n_samples,)
        One estimate per point (a tensor on the input's device for torch input, without a graph:
        not differentiable). Copies of a duplicated point share its value (see the module docstring).

    Notes
    -----
    With ``T_1 <= ... <= T_k`` the distances from ``x`` to its ``k`` nearest neighbours,

    ``m̂_k(x) = [ (1/(k − 1)) Σ_{j<k} log(T_k / T_j) ]⁻¹``.

    This equals scikit-dimension's ``MLE().fit(X, n_neighbors=k).dimension_pw_``. A point whose
    ``k`` neighbours are all equidistant gets ``inf``, with a warning.

    References
    ----------
    E. Levina and P. J. Bickel, "Maximum likelihood estimation of intrinsic dimension",
    NeurIPS 17 (2005).
    X. Cai, J. Huang, Y. Bian and K. Church, "Isotropy in the contextual embedding space:
    clusters and manifolds", ICLR (2021).

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy import local_mle_dimension
    >>> rng = np.random.default_rng(0)
    >>> cube = rng.random((2000, 3)) @ rng.standard_normal((3, 40))  # a 3-d cube in 40-d
    >>> lid = local_mle_dimension(cube, n_neighbors=20)
    >>> lid.shape, round(float(np.median(lid)))
    ((2000,), 3)
    """
    if is_dask(X):  # a dask array: computed by tiles / chunk statistics on the dask scheduler
        from isotropy import distributed
        return distributed.local_mle_dimension(X, n_neighbors=n_neighbors, metric=metric)
    caller = "local_mle_dimension"
    given = getattr(X, "dtype", None)  # the precision of the values as given (bfloat16 is read as float32)
    X = check_X(X, caller=caller, min_samples=3, rescale=_rescaling(metric))
    metric = check_option(metric, "metric", _METRICS, caller=caller)
    _check_n_neighbors(X, n_neighbors, metric, caller, given)
    dist, inverse = _neighbour_distances(X, n_neighbors=n_neighbors, metric=metric, caller=caller, given=given)
    local = _local_mle(dist, caller)
    if inverse is not None:
        local = local[inverse]
    return _output(local, X)


def mle_dimension(X, *, n_neighbors: int = DEFAULT_MLE_NEIGHBOURS, metric: str = "euclidean", averaging: str = "mean"):
    """Global Levina–Bickel maximum-likelihood intrinsic dimension.

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        The points.
    n_neighbors : int, default=20
        Neighbours per point, ``2 <= n_neighbors <= n_samples - 1``. Under the estimator's own
        Poisson model the local estimate is ``(k − 1)/S`` with ``S ~ Gamma(k − 1)``: its mean is
        infinite at ``k = 2`` and its variance at ``k = 3``, so ``averaging="mean"`` warns there.
    metric : {"euclidean", "cosine"}, default="euclidean"
        Distance between points; ``"cosine"`` is ``1 − cos(x, y)``.
    averaging : {"mean", "harmonic", "median"}, default="mean"
        How the local estimates ``m̂_k(x_i)`` of :func:`local_mle_dimension` are pooled:
        ``"mean"`` is Levina & Bickel's average; ``"harmonic"`` inverts the mean of the inverses
        (MacKay & Ghahramani's correction, and scikit-dimension's default ``comb="mle"``);
        ``"median"`` is the median.

    Returns
    -------
    dimension : float
        The estimate (a 0-dim tensor on the input's device for torch input, without a graph: not
        differentiable, and in a loss it adds no gradient).

    Notes
    -----
    ``"mean"``: ``m̂_k = (1/n) Σ_i m̂_k(x_i)``; ``"harmonic"``: ``m̂_k = [ (1/n) Σ_i m̂_k(x_i)⁻¹ ]⁻¹``,
    over the ``n`` distinct points. With the same ``k`` these equal scikit-dimension's
    ``MLE().fit(X, n_neighbors=k, comb="mean" | "mle" | "median").dimension_``.

    References
    ----------
    E. Levina and P. J. Bickel, "Maximum likelihood estimation of intrinsic dimension",
    NeurIPS 17 (2005).
    D. J. C. MacKay and Z. Ghahramani, "Comments on 'Maximum likelihood estimation of intrinsic
    dimension' by E. Levina and P. Bickel" (2005).

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy import mle_dimension
    >>> rng = np.random.default_rng(0)
    >>> cube = rng.random((2000, 3)) @ rng.standard_normal((3, 40))  # a 3-d cube in 40-d
    >>> round(mle_dimension(cube))
    3
    """
    if is_dask(X):  # a dask array: computed by tiles / chunk statistics on the dask scheduler
        from isotropy import distributed
        return distributed.mle_dimension(X, n_neighbors=n_neighbors, metric=metric, averaging=averaging)
    caller = "mle_dimension"
    given = getattr(X, "dtype", None)  # the precision of the values as given (bfloat16 is read as float32)
    X = check_X(X, caller=caller, min_samples=3, rescale=_rescaling(metric))
    metric = check_option(metric, "metric", _METRICS, caller=caller)
    averaging = check_option(averaging, "averaging", _AVERAGING, caller=caller)
    _check_n_neighbors(X, n_neighbors, metric, caller, given)
    dist, _ = _neighbour_distances(X, n_neighbors=n_neighbors, metric=metric, caller=caller, given=given)
    return _output(_pool(_local_mle(dist, caller), averaging, caller, n_neighbors), X)


def neighbour_dimensions(X, *, twonn: bool = True, mle: bool = True, local_mle: bool = False,
                         n_neighbors: int = DEFAULT_MLE_NEIGHBOURS, discard_fraction: float = 0.1, method: str = "linear",
                         averaging: str = "mean", metric: str = "euclidean") -> dict:
    """TwoNN, the MLE and the local MLE from one exact neighbour search.

    Equal to :func:`twonn_dimension`, :func:`mle_dimension` and :func:`local_mle_dimension` with
    the same options, at the cost of one search with ``k = max(2, n_neighbors)`` neighbours (the
    TwoNN ratio reads the first two columns, the MLE all ``k``) instead of one search each.

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        The points.
    twonn, mle, local_mle : bool, default=True, True, False
        Which estimates to return.
    n_neighbors : int, default=20
        ``k`` of the MLE and the local MLE.
    discard_fraction, method : as in :func:`twonn_dimension`.
    averaging : as in :func:`mle_dimension`.
    metric : {"euclidean", "cosine"}, default="euclidean"

    Returns
    -------
    dimensions : dict
        ``{"twonn_dimension": float, "mle_dimension": float, "local_mle_dimension": ndarray of shape
        (n_samples,)}``, the requested keys only. An estimate the data do not define (TwoNN on tied first
        and second neighbour distances: a lattice, binary data) is NaN (an array of NaN for the local MLE),
        with one ``UserWarning`` naming it and giving the refusal its function alone raises; the others
        keep their values. When every estimate asked for is undefined the call raises that refusal (an
        :class:`~isotropy.IsotropyValueError`), as do bad options and data no estimate can read (too few
        distinct points, say).

    Notes
    -----
    TwoNN (Facco et al. 2017): ``μ = r2/r1``, ``F(μ) = 1 − μ^(−d)``; MLE (Levina & Bickel 2005):
    ``m̂_k(x) = [ (1/(k − 1)) Σ_{j<k} log(T_k / T_j) ]⁻¹``, pooled by ``averaging``. The ``k``
    nearest neighbours are exact and ties are broken by index, so the first two of them are the two
    nearest of a search with ``k = 2``: the values equal the separate functions'.

    References
    ----------
    E. Facco, M. d'Errico, A. Rodriguez and A. Laio, Scientific Reports 7, 12140 (2017).
    E. Levina and P. J. Bickel, NeurIPS 17 (2005).

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy.metrics.dimension import neighbour_dimensions
    >>> rng = np.random.default_rng(0)
    >>> cube = rng.random((2000, 3)) @ rng.standard_normal((3, 40))
    >>> out = neighbour_dimensions(cube, n_neighbors=20)
    >>> round(out["twonn_dimension"]), round(out["mle_dimension"])
    (3, 3)
    """
    caller = "neighbour_dimensions"
    if not (twonn or mle or local_mle):  # an empty dict said nothing of why nothing was measured
        raise IsotropyValueError(f"{caller} needs at least one of twonn, mle and local_mle to be True. Got all three "
                                 f"False instead.")
    if is_dask(X):  # one pass of neighbour tiles, as in memory one search
        from isotropy.distributed import neighbour_dimensions as on_dask

        return on_dask(X, twonn=twonn, mle=mle, local_mle=local_mle, n_neighbors=n_neighbors,
                       discard_fraction=discard_fraction, method=method, averaging=averaging, metric=metric)
    given = getattr(X, "dtype", None)  # the precision of the values as given (bfloat16 is read as float32)
    X = check_X(X, caller=caller, min_samples=3, rescale=_rescaling(metric))
    metric = check_option(metric, "metric", _METRICS, caller=caller)
    check_scalar(discard_fraction, "discard_fraction", caller=caller, low=0, high=1, closed="left")
    method = check_option(method, "method", ("linear", "mle"), caller=caller)
    averaging = check_option(averaging, "averaging", _AVERAGING, caller=caller)
    k = 2
    if mle or local_mle:
        k = _check_n_neighbors(X, n_neighbors, metric, caller, given)
    dist, inverse = _neighbour_distances(X, n_neighbors=k, metric=metric, caller=caller, given=given)
    out, failed = {}, {}  # an estimate the data refuse is NaN, the others computed (undefined_estimates)
    if twonn:
        twonn_kept(dist.shape[0], discard_fraction, method, caller)  # an option no data could meet: the call's error
        try:
            # its warning names TwoNN, as MLE's below name MLE: isotropy measure gives each estimate its own
            out["twonn_dimension"] = _output(_twonn(dist[:, :2], discard_fraction, method, caller,
                                                    warns_as="twonn_dimension"), X)
        except IsotropyValueError as exc:  # tied neighbour distances (a lattice, binary data)
            failed["twonn_dimension"], out["twonn_dimension"] = exc, _output(np.nan, X)
    if mle or local_mle:
        # a warning of these estimates names them, not the search (as on dask, where each estimator runs alone):
        # isotropy measure keeps it under mle_dimension, not under TwoNN, which reads the same search
        estimate = "mle_dimension" if mle else "local_mle_dimension"
        try:
            local = _local_mle(dist, caller, warns_as=estimate)
        except IsotropyValueError as exc:
            local = np.full(dist.shape[0], np.nan)
            failed.update(dict.fromkeys([name for name, asked in (("mle_dimension", mle),
                                                                  ("local_mle_dimension", local_mle)) if asked], exc))
        if mle:
            try:
                value = np.nan if "mle_dimension" in failed else _pool(local, averaging, caller, k, warns_as=estimate)
            except IsotropyValueError as exc:
                failed["mle_dimension"], value = exc, np.nan
            out["mle_dimension"] = _output(value, X)
        if local_mle:
            out["local_mle_dimension"] = _output(local if inverse is None else local[inverse], X)
    undefined_estimates(failed, list(out), caller)
    return out


# The scikit-learn estimators TwoNN and MLE moved to isotropy.metrics.estimators, the one metrics module that imports
# scikit-learn (with pandas, most of a small `isotropy measure`'s time and memory: docs/benchmarks.md), so that these functions, and `isotropy measure`, which calls
# them, do not load it. The old path still gives them for one release, with a DeprecationWarning.
_MOVED_ESTIMATORS = ("MLE", "TwoNN")


def __getattr__(name):
    if name in _MOVED_ESTIMATORS:
        warnings.warn(f"isotropy.metrics.dimension.{name} moved to isotropy.metrics.estimators.{name} (also "
                      f"isotropy.{name}); the old path goes in the next release.", DeprecationWarning, stacklevel=2)
        from isotropy.metrics import estimators

        return getattr(estimators, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
