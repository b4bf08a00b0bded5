"""scikit-learn estimators of the intrinsic dimension: :class:`TwoNN` and :class:`MLE`.

Thin wrappers of the functions of :mod:`isotropy.metrics.dimension` (the source of truth), with
scikit-learn's input validation and parameters (``get_params``, ``clone``, ``check_estimator``), as
scikit-dimension's estimators are. A module of their own so that the functions do not import
scikit-learn; ``isotropy.TwoNN`` and ``isotropy.MLE`` are these classes.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator

from isotropy._kernels.dimension import _AVERAGING, DEFAULT_MLE_NEIGHBOURS, _local_mle, _pool
from isotropy._kernels.neighbors import _METRICS
from isotropy._utils.validation import (
    IsotropyValueError,
    check_option,
    check_scalar,
    check_X,
    refuse_subnormal_as_given,
)
from isotropy.metrics.dimension import _neighbour_distances, _rescaling, _twonn_dimension, distinct_points

__all__ = ["MLE", "TwoNN"]


class _DimensionEstimator(BaseEstimator):
    """Shared ``fit`` plumbing: scikit-learn input validation, then the pure function."""

    def _validate(self, X):
        from isotropy._utils.sklearn_input import validated_input

        caller = f"{type(self).__name__}.fit"
        checked = validated_input(self, X, caller=caller, reset=True, dtype=[np.float64, np.float32],
                                  ensure_min_samples=3)
        # float16 read as float32: judged in float16, as the functions judge it (twonn_dimension refused such data
        # whose largest |x| is subnormal, TwoNN.fit measured them)
        refuse_subnormal_as_given(X, checked, caller=caller)
        return checked


class TwoNN(_DimensionEstimator):
    """TwoNN intrinsic dimension as a scikit-learn estimator (a thin wrapper of :func:`twonn_dimension`).

    Parameters
    ----------
    discard_fraction : float, default=0.1
    method : {"linear", "mle"}, default="linear"
    metric : {"euclidean", "cosine"}, default="euclidean"
        As in :func:`twonn_dimension`.

    Attributes
    ----------
    dimension_ : float
        The estimated intrinsic dimension.
    n_features_in_ : int
        Number of features seen in ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy.metrics.estimators import TwoNN
    >>> rng = np.random.default_rng(0)
    >>> plane = rng.random((2000, 2)) @ rng.standard_normal((2, 50))
    >>> round(TwoNN().fit(plane).dimension_)
    2
    """

    def __init__(self, *, discard_fraction=0.1, method="linear", metric="euclidean"):
        self.discard_fraction = discard_fraction
        self.method = method
        self.metric = metric

    def fit(self, X, y=None):
        """Estimate the dimension of ``X`` of shape (n_samples, n_features); return ``self``."""
        X = self._validate(X)
        # the errors and warnings name the class the user called, as MLE.fit's do, not the function it wraps
        self.dimension_ = _twonn_dimension(X, discard_fraction=self.discard_fraction, method=self.method,
                                           metric=self.metric, caller="TwoNN.fit")
        return self


class MLE(_DimensionEstimator):
    """Levina–Bickel MLE as a scikit-learn estimator: :func:`mle_dimension` and :func:`local_mle_dimension` in one fit.

    Parameters
    ----------
    n_neighbors : int, default=20
        Neighbours per point, by default :func:`mle_dimension`'s (the pooled estimate's; the local
        estimates of :func:`local_mle_dimension` default to Cai et al.'s 100 there); lowered to the number of distinct points minus one, with a
        warning, for smaller data (as scikit-dimension does).
    metric : {"euclidean", "cosine"}, default="euclidean"
    averaging : {"mean", "harmonic", "median"}, default="mean"
        As in :func:`mle_dimension`.

    Attributes
    ----------
    dimension_ : float
        The pooled estimate, equal to :func:`mle_dimension`.
    dimension_pw_ : ndarray of shape (n_samples,)
        The local estimates, equal to :func:`local_mle_dimension`.
    n_neighbors_ : int
        Neighbours used.
    n_features_in_ : int
        Number of features seen in ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy.metrics.estimators import MLE
    >>> rng = np.random.default_rng(0)
    >>> cube = rng.random((2000, 3)) @ rng.standard_normal((3, 40))
    >>> est = MLE(n_neighbors=20).fit(cube)
    >>> round(est.dimension_), est.dimension_pw_.shape
    (3, (2000,))
    """

    def __init__(self, *, n_neighbors=DEFAULT_MLE_NEIGHBOURS, metric="euclidean", averaging="mean"):
        self.n_neighbors = n_neighbors
        self.metric = metric
        self.averaging = averaging

    def fit(self, X, y=None):
        """Estimate the local and pooled dimension of ``X`` (n_samples, n_features); return ``self``."""
        caller = "MLE.fit"
        given = getattr(X, "dtype", None)
        X = self._validate(X)
        metric = check_option(self.metric, "metric", _METRICS, caller=caller)
        averaging = check_option(self.averaging, "averaging", _AVERAGING, caller=caller)
        check_scalar(self.n_neighbors, "n_neighbors", caller=caller, kind=numbers.Integral, low=2)
        # at the neighbour searches' scale, as mle_dimension: X near 1e200 or 1e-200 overflowed or underflowed here
        X = check_X(X, caller=caller, min_samples=1, rescale=_rescaling(metric))
        # the points the estimators see: equal rows once, and under the cosine metric parallel rows once too
        n_distinct = distinct_points(X, metric=metric)
        k = min(int(self.n_neighbors), n_distinct - 1)
        if k < 2:
            raise IsotropyValueError(f"The 'X' parameter of {caller} must have at least 3 distinct points. "
                                     f"Got {n_distinct} instead.")
        if k < self.n_neighbors:
            warnings.warn(f"{caller}: n_neighbors={self.n_neighbors} is not below the {n_distinct} distinct "
                          f"points; using n_neighbors={k}.", UserWarning, stacklevel=2)
        dist, inverse = _neighbour_distances(X, n_neighbors=k, metric=metric, caller=caller, given=given)
        local = _local_mle(dist, caller)
        self.n_neighbors_ = k
        self.dimension_ = _pool(local, averaging, caller, k)
        self.dimension_pw_ = local if inverse is None else local[inverse]
        return self
