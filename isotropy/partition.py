"""I(W), the partition-function isotropy measure of Mu & Viswanath (2018), computed in log space."""

from __future__ import annotations

import numpy as np

from isotropy._backend import is_dask, is_torch, to_output
from isotropy._validation import check_X

__all__ = ["partition_isotropy"]


def _logsumexp_columns(P):
    """log Σᵢ exp(Pᵢⱼ) for each column j, stable for large entries."""
    if is_torch(P):
        import torch

        return torch.logsumexp(P, dim=0)
    top = P.max(axis=0)
    return top + np.log(np.exp(P - top).sum(axis=0))


def partition_isotropy(X):
    """Isotropy I(W) = min_u Z(u) / max_u Z(u) of Mu & Viswanath (2018); 1 = isotropic.

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        Word or sentence vectors, one per row. Used as given (not centred): I(W) measures how
        far the vectors are from being spread evenly around the origin, so a common mean vector
        lowers it.

    Returns
    -------
    score : float or torch.Tensor
        In (0, 1]. Python float for numpy input (float64 arithmetic); a 0-dim tensor on the
        input's device and dtype for torch input (differentiable through ``torch.linalg.eigh``,
        whose gradient is undefined when eigenvalues repeat).

    Notes
    -----
    .. math:: I(W) = \\frac{\\min_{u \\in U} Z(u)}{\\max_{u \\in U} Z(u)},
              \\qquad Z(u) = \\sum_{i=1}^{n} \\exp(u^\\top x_i),

    where U is the set of unit eigenvectors of XᵀX. An eigenvector is defined only up to sign
    and Z(u) ≠ Z(−u), so U holds both u and −u: the value does not depend on the signs a
    LAPACK routine happens to return (implementations that keep one sign per eigenvector give
    a value ≥ this one). Everything is computed in log space,
    I = exp(min_u log Z(u) − max_u log Z(u)) with a stable log-sum-exp, so vectors with large
    norms do not overflow. Cost O(n·d² + d³).

    References
    ----------
    .. [1] J. Mu and P. Viswanath, "All-but-the-Top: Simple and Effective Postprocessing for
       Word Representations", ICLR 2018.
    .. [2] S. Rajaee and M. T. Pilehvar, "A Cluster-based Approach for Improving Isotropy in
       Contextual Embedding Space", ACL 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy import partition_isotropy
    >>> X = np.vstack([np.eye(3), -np.eye(3)])          # symmetric around the origin
    >>> partition_isotropy(X)
    1.0
    >>> round(partition_isotropy(X + [1.0, 0.0, 0.0]), 4)   # a common direction lowers it
    0.1353
    """
    if is_dask(X):  # a dask array: computed by tiles / chunk statistics on the dask scheduler
        from isotropy import distributed
        return distributed.partition_isotropy(X)
    X = check_X(X, caller="partition_isotropy", min_samples=1)
    if is_torch(X):
        import torch

        _, U = torch.linalg.eigh(X.T @ X)
        P = X @ U
        log_z = torch.cat([_logsumexp_columns(P), _logsumexp_columns(-P)])
        return log_z.min().sub(log_z.max()).exp()
    X64 = np.asarray(X, dtype=np.float64)
    _, U = np.linalg.eigh(X64.T @ X64)
    P = X64 @ U
    log_z = np.concatenate([_logsumexp_columns(P), _logsumexp_columns(-P)])
    return to_output(np.exp(log_z.min() - log_z.max()), X)
