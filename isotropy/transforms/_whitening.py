"""Whitening of sentence embeddings (Su et al., 2021): centre, rotate, scale to unit variance."""

from __future__ import annotations

import numbers

import numpy as np

from isotropy._utils.validation import IsotropyValueError, check_scalar
from isotropy.transforms._base import NewFeaturesTransformer, like_input, to_numpy

__all__ = ["Whitening", "whiten"]


def fit_whitening(X: np.ndarray, *, n_components=None, eps=0.0, caller="whiten"):
    """Return ``(mean, W, eigenvalues)`` with ``W`` of shape ``(n_features, k)`` for float64 numpy ``X``."""
    n, d = X.shape
    check_scalar(n_components, "n_components", caller=caller, kind=numbers.Integral, low=1, high=d, allow_none=True)
    check_scalar(eps, "eps", caller=caller, low=0)
    if n < 2:
        raise IsotropyValueError(f"The 'X' parameter of {caller} must have at least 2 samples to estimate a "
                                 f"covariance. Got n_samples={n} instead.")
    k = d if n_components is None else int(n_components)
    mean = X.mean(axis=0)
    cov = np.cov(X - mean, rowvar=False).reshape(d, d)
    lam, vecs = np.linalg.eigh(cov)
    order = np.argsort(lam)[::-1]
    lam, vecs = np.clip(lam[order], 0.0, None), vecs[:, order]
    tol = max(lam[0], np.finfo(float).tiny) * max(n, d) * np.finfo(float).eps
    if eps == 0 and lam[k - 1] <= tol:
        rank = int((lam > tol).sum())
        raise IsotropyValueError(f"The 'X' parameter of {caller} has a rank-deficient covariance (rank {rank} < "
                                 f"n_components={k}), which cannot be whitened. Pass n_components <= {rank}, "
                                 f"or eps > 0 to regularise, or more samples.")
    W = vecs[:, :k] / np.sqrt(lam[:k] + eps)
    return mean, W, lam[:k]


def whiten(X, *, n_components=None, eps=0.0):
    """Whiten embeddings: centre, rotate to the covariance eigenbasis and scale to unit variance.

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        The embeddings.
    n_components : int or None, default=None
        Keep only the top k directions (largest variance), giving shape ``(n_samples, k)``; ``None``
        keeps all ``n_features``. Su et al. report k = 256 of BERT's 768 as a good reduction.
    eps : float, default=0.0
        Regulariser added to the eigenvalues, :math:`(\\lambda_i + \\varepsilon)^{-1/2}`. With
        ``eps=0`` a kept direction with (numerically) zero variance raises an error that states the
        rank; a small ``eps`` (e.g. 1e-6 times the largest variance) whitens rank-deficient data.

    Returns
    -------
    X_white : ndarray or torch.Tensor of shape (n_samples, k)
        Float64 for numpy input, the input's dtype and device for a tensor.

    Notes
    -----
    With :math:`\\mu` the mean and :math:`\\Sigma = U \\Lambda U^\\top` the sample covariance
    (``np.cov``, divisor n - 1, as Su et al.), :math:`\\tilde x = (x - \\mu)\\, U_k \\Lambda_k^{-1/2}`.
    On the fitting data the sample covariance of the output is the identity: perfectly isotropic.

    References
    ----------
    Su, J., Cao, J., Liu, W. and Ou, Y. (2021). Whitening sentence representations for better
    semantics and faster retrieval. arXiv:2103.15316.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy.transforms import whiten
    >>> X = np.random.default_rng(0).normal(size=(200, 3)) @ [[2.0, 1, 0], [0, 1, 0], [0, 0, 0.1]]
    >>> bool(np.allclose(np.cov(whiten(X), rowvar=False), np.eye(3)))
    True
    """
    Xn = to_numpy(X, caller="whiten")
    mean, W, _ = fit_whitening(Xn, n_components=n_components, eps=eps)
    return like_input((Xn - mean) @ W, X)


class Whitening(NewFeaturesTransformer):
    """Whitening as a scikit-learn transformer (Su et al., 2021).

    See :func:`whiten` for the parameters, formula and reference.

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
    components_ : ndarray of shape (n_components_, n_features)
        The whitening matrix transposed: ``transform(X) = (X - mean_) @ components_.T``.
    explained_variance_ : ndarray of shape (n_components_,)
        The covariance eigenvalues of the kept directions, largest first.
    n_components_ : int
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy.transforms import Whitening
    >>> X = np.random.default_rng(0).normal(size=(100, 4))
    >>> Whitening(n_components=2).fit_transform(X).shape
    (100, 2)
    """

    _min_samples = 2

    def __init__(self, n_components=None, *, eps=0.0):
        self.n_components = n_components
        self.eps = eps

    def _fit(self, X):
        self.mean_, W, self.explained_variance_ = fit_whitening(X, n_components=self.n_components, eps=self.eps,
                                                                caller="Whitening")
        self.components_ = W.T
        self.n_components_ = int(W.shape[1])

    @property
    def _n_features_out(self):
        return self.n_components_

    def _transform(self, X):
        return (X - self.mean_) @ self.components_.T
