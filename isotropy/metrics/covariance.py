"""Covariance-spectrum statistics: participation ratio, and a streaming accumulator for data too big for memory.

The accumulator keeps exact float64 sufficient statistics (count, mean, centred scatter matrix,
sum of unit vectors), merged chunk by chunk with the pairwise update of Chan, Golub & LeVeque, and
hands the covariance to the same covariance -> score functions as the in-memory metrics
(:func:`isotropy.metrics.isoscore.isoscore_from_covariance`). The accumulator is defined in the private
:mod:`isotropy._kernels.accumulator` (shared with :mod:`isotropy.distributed`) and re-exported here.
"""

from __future__ import annotations

from isotropy._kernels.accumulator import CovarianceAccumulator, participation_ratio_in_range
from isotropy._kernels.isoscore import _check_variance, _eps, _scatter_stats
from isotropy._utils.backend import is_dask, to_output, without_autocast
from isotropy._utils.validation import check_X
from isotropy.metrics.table import warn_span_bound

__all__ = ["CovarianceAccumulator", "participation_ratio"]


@without_autocast
def participation_ratio(X):
    """Participation ratio (Σλ)²/Σλ² of the covariance spectrum: the "effective number of dimensions".

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        The point cloud, one sample per row.

    Returns
    -------
    pr : float or torch.Tensor
        In [1, n_features]: 1 when all variance lies along one direction, n_features when it is
        spread evenly (at most ``n_samples - 1``: with ``n_samples <= n_features`` a
        ``SpanBoundWarning`` says so, as for :func:`isotropy.isoscore`). Python float (float64)
        for numpy input; differentiable 0-dim tensor on the input's device for torch input:
        float32 for float16, bfloat16 and integer tensors (computed in float32), else the input's
        dtype.

    Notes
    -----
    With λ the eigenvalues of the sample covariance C,

    .. math:: PR = \\frac{(\\sum_i \\lambda_i)^2}{\\sum_i \\lambda_i^2}
              = \\frac{(\\operatorname{tr} C)^2}{\\|C\\|_F^2} = 1 + (d - 1)\\,\\mathrm{IsoScore},

    computed from the smaller Gram matrix without an eigendecomposition (see
    :func:`isotropy.isoscore`).

    References
    ----------
    .. [1] P. Gao, E. Trautmann, B. Yu, G. Santhanam, S. Ryu, K. Shenoy and S. Ganguli, "A theory
       of multineuronal dimensionality, dynamics and measurement", bioRxiv 2017.
    .. [2] W. Rudman, N. Gillman, T. Rayne and C. Eickhoff, "IsoScore: Measuring the Uniformity
       of Embedding Space Utilization", Findings of ACL 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy import participation_ratio
    >>> X = np.array([[1.0, 0, 0], [-1.0, 0, 0], [0, 1.0, 0], [0, -1.0, 0]])   # two equal directions
    >>> participation_ratio(X)
    2.0
    """
    if is_dask(X):  # a dask array: computed by tiles / chunk statistics on the dask scheduler
        from isotropy import distributed
        value = distributed.participation_ratio(X)
        warn_span_bound("participation_ratio", *X.shape)
        return value
    caller = "participation_ratio"
    X = check_X(X, caller=caller, rescale=True)
    st = _scatter_stats(X)
    _check_variance(st.trace, n_samples=X.shape[0], mean_sq_norm=st.mean_sq, eps=_eps(X), caller=caller,
                    X=X)
    warn_span_bound(caller, *X.shape)
    return to_output(participation_ratio_in_range(st.trace * st.trace / st.frob_sq, X.shape[1]), X)


