"""Whitening of sentence embeddings (Su et al., 2021): centre, rotate, scale to unit variance."""

from __future__ import annotations

import math
import numbers

import numpy as np
from sklearn.utils.validation import check_is_fitted

from isotropy._utils.magnitude import rescaled_as_float64, times_power_of_two
from isotropy._utils.validation import IsotropyValueError, check_scalar
from isotropy.transforms._base import NewFeaturesTransformer, to_numpy, transformed
from isotropy.transforms._scatter import (
    MEAN_ROUNDING,
    centred_product,
    centred_scatter,
    centred_transpose_product,
    column_mean,
    row_chunks,
)

__all__ = ["Whitening", "whiten"]


def fit_whitening(X: np.ndarray, *, n_components=None, eps=0.0, caller="whiten"):
    """Return ``(mean, W, eigenvalues, exponent)`` for numpy ``X`` (float64, or float32 read as float64 a row chunk at
    a time: :func:`~isotropy._utils.magnitude.rescaled_as_float64`), at unit scale.

    ``X`` is read as ``2**exponent * Xu`` with ``Xu`` at unit scale (``exponent`` is 0 for data at an
    ordinary scale): the whitened data are ``(X * 2**-exponent - mean) @ W`` with ``W`` of shape
    ``(n_features, k)``; the mean of ``X`` is ``mean * 2**exponent``, its whitening matrix
    ``W * 2**-exponent`` and its covariance eigenvalues ``eigenvalues * 4**exponent``. Whitening is
    scale-covariant (``W(cX) = W(X) / c``) and powers of two change no digit, so this is exact at any
    scale: the covariance of ``X`` itself would overflow float64 from ``|x| ~ 1e154`` (NaN in ``eigh``)
    and underflow below ``|x| ~ 1e-154`` (a false rank error).
    """
    n, d = X.shape
    check_scalar(n_components, "n_components", caller=caller, kind=numbers.Integral, low=1, high=d, allow_none=True)
    check_scalar(eps, "eps", caller=caller, low=0)
    if n < 2:
        raise IsotropyValueError(f"The 'X' parameter of {caller} must have at least 2 samples to estimate a "
                                 f"covariance. Got n_samples={n} instead.")
    k = d if n_components is None else int(n_components)
    Xu, exponent = rescaled_as_float64(X, caller=caller)  # a float32 X read a row chunk at a time
    mean = column_mean(Xu)  # two-pass: the rank test's floor is a few roundings of it (_rank_tolerance)
    lam = vecs = None
    # eps > 0 regularises the directions of zero variance; all d of them kept (n_components=None) are whitened alike,
    # whatever basis eigh picks for them, but a part of them is an arbitrary choice (round-off: perturbing X by 1e-14
    # turned the kept ones around), which new data were projected on and scaled by eps**-1/2. So with k < d the rank
    # is checked whatever eps.
    refuse = eps == 0 or k < d
    if n < d and (refuse or k <= n - 1):
        # The n x n side: n centred rows span at most n - 1 directions, and the scatter's nonzero eigenvalues are those
        # of the centred Gram. With k > n - 1 (and eps = 0) the refusal is certain and comes before any d x d work
        # (2,000 x 5,000 took 13.7 s to refuse; 2,000 x 20,000 crashed in np.cov at 4.4 GB); with k <= n - 1 the top
        # k directions come from the Gram's eigenvectors, memory O(n² + n·block + d·k), never the d x d covariance.
        lam, vecs = _gram_route(Xu, mean, k)
        if refuse:
            _refuse_rank(lam, n, d, k, n_components, mean, eps, caller=caller)
        if vecs is None:  # eps > 0 and fewer than k directions of nonzero variance: the d x d route completes them
            lam = None
    if lam is None:
        # np.cov's covariance (divisor n - 1) from row chunks: no centred n x d copy, no d x n by n x d product
        cov = centred_scatter(Xu, mean)
        cov *= 1.0 / (n - 1)
        lam, vecs = np.linalg.eigh(cov)
        del cov
        order = np.argsort(lam)[::-1]
        lam, vecs = np.clip(lam[order], 0.0, None), vecs[:, order]
        if refuse:
            _refuse_rank(lam, n, d, k, n_components, mean, eps, caller=caller)
    lam = lam[:k]
    # (lam * 4**exponent + eps)**-1/2, each column brought to the scale 4**h of its larger term: eps is in
    # X's units, and at an extreme exponent eps * 4**-exponent alone would overflow (or vanish beside a zero lam).
    # A zero lam has no scale (frexp(0) gives exponent 0, not -inf): it must not set h, or eps * 4**-h underflows
    # to 0 at |x| above ~1e158 and its column is 1/0 (NaN in the output).
    top = np.maximum(np.where(lam > 0, np.frexp(lam)[1] + 2 * exponent, -np.inf),
                     np.frexp(eps)[1] if eps > 0 else -np.inf)
    h = np.where(np.isfinite(top), np.ceil(top / 2), exponent).astype(int)
    term = np.ldexp(lam, 2 * (exponent - h)) + np.ldexp(float(eps), -2 * h)
    W = np.ldexp(vecs[:, :k] / np.sqrt(term), exponent - h)
    return mean, W, lam, exponent


def _gram_route(Xu, mean, k):
    r"""Covariance eigenvalues (all ``n``, descending) and top-``k`` eigenvectors of ``Xu`` from its ``n x n`` centred Gram.

    With :math:`X_c = X_u - \mathbf{1}\mu^\top = U \Sigma V^\top` (thin SVD), the centred Gram is
    :math:`G = X_c X_c^\top = U \Sigma^2 U^\top` and the covariance :math:`X_c^\top X_c / (n - 1)` has the
    eigenvalues :math:`\lambda_i = \sigma_i^2 / (n - 1)` and eigenvectors :math:`v_i = X_c^\top u_i / \sigma_i`.
    ``G`` is summed over blocks of columns (:func:`isotropy._kernels.rows.row_statistics`, ``"centred_gram"``) and
    :math:`X_c^\top U_k` over blocks of columns too (:func:`~isotropy.transforms._scatter.centred_transpose_product`):
    memory O(n² + n·block + d·k). Returns ``(lam, None)`` when ``k > n - 1`` or the ``k``-th eigenvalue is round-off
    (:func:`_refuse_rank`'s tolerance), where ``v_k`` is not determined by the Gram.
    """
    from isotropy._kernels.rows import row_statistics  # the n x n Gram of the covariance metrics, by columns

    n, d = Xu.shape
    g, U = np.linalg.eigh(row_statistics(Xu, ("centred_gram",))["centred_gram"].gram)
    g, U = np.clip(g[::-1], 0.0, None), U[:, ::-1]
    lam = g * (1.0 / (n - 1))
    tol = _rank_tolerance(lam, n, d, mean)
    if k > n - 1 or not lam[k - 1] > tol:
        return lam, None
    # v_i = X_cᵀu_i/σ_i carries the Gram's rounding of u_i times σ_1/σ_i (ill-conditioned wide data: the whitened
    # covariance 6e-6 from I at σ_k/σ_1 = 1e-6, against 4e-7 on the covariance route): one Rayleigh-Ritz step on
    # the span of those v_i (orthonormal basis Q, then the eigenvectors of Qᵀ C Q from the n x k product B = X_c Q),
    # in O(n·d·k) more flops. Qᵀ C Q's eigenpairs come from the SVD of B, not from eigh(BᵀB): squaring B put an
    # absolute error of eps·σ_1² on σ_k², a relative 1e-5 at σ_k/σ_1 = 3e-6 (the whitened covariance 3.2e-6 from I
    # on OpenBLAS 0.3.31 where an older one happened to give 1e-7); the SVD's error is relative to σ_1, not σ_1²
    Q, _ = np.linalg.qr(centred_transpose_product(Xu, mean, U[:, :k]))
    B = centred_product(Xu, mean, Q)
    _, s, Zt = np.linalg.svd(B, full_matrices=False)  # descending
    lam = lam.copy()
    lam[:k] = s * s * (1.0 / (n - 1))
    return lam, Q @ Zt.T


def _rank_tolerance(lam, n, d, mean) -> float:
    """The covariance eigenvalue below which a direction is round-off, for ``n x d`` rows centred on ``mean``.

    ``max(n, d) · eps · λ_1``, and at least ``(MEAN_ROUNDING · eps)² · |mean|²``: the rows are centred on their
    two-pass mean (:func:`~isotropy.transforms._scatter.column_mean`), which keeps about one rounding of the mean as an
    offset common to every row, so rows of one repeated point have a covariance of at most that rounding, whose
    ``λ_1`` is not a scale to measure the others by (copies of one point were whitened as one direction: a
    rounding's variance, scaled up by its inverse square root). The floor is the square of the one of
    :func:`isotropy.transforms._all_but_the_top.numerical_rank` on singular values.
    """
    eps = np.finfo(float).eps
    scale = max(n, d) * eps
    return max(lam[0] * scale, (MEAN_ROUNDING * eps) ** 2 * float(mean @ mean), np.finfo(float).tiny * scale)


def _refuse_rank(lam, n, d, k, n_components, mean, eps=0.0, *, caller):
    """Refuse a whitening of ``k`` directions when the ``k``-th covariance eigenvalue (``lam``, descending) is round-off
    (:func:`_rank_tolerance`; ``mean`` the mean of the rows, at the scale of ``lam``). With ``eps > 0`` (and
    ``k < d``: the caller checks) the directions past the rank would be regularised, but which of them are kept is
    arbitrary."""
    tol = _rank_tolerance(lam, n, d, mean)
    if len(lam) >= k and lam[k - 1] > tol:
        return
    rank = int((lam > tol).sum())
    regularise = "eps > 0" if k == d else "eps > 0 with n_components=None (all features)"
    if eps > 0:
        raise RankDeficient(f"The 'n_components' parameter of {caller} must be at most the rank of the covariance, "
                            f"{rank}, or None (all {d} features) with eps > 0: the {d - rank} directions past the rank "
                            f"have zero variance, and which {k - rank} of them to keep is an arbitrary choice (round-off) "
                            f"that eps would scale up in new data. Got {k} instead.", rank=rank, n_directions=k)
    asked = f"n_components={k}" if n_components is not None else f"the {k} features (n_components=None)"
    if rank == 0:
        # every sample the same point: "Pass n_components <= 0" named a value n_components' own range [1, d] refuses;
        # no number of components can be whitened, only a regularised (eps > 0) whitening or data that vary
        raise RankDeficient(f"The 'X' parameter of {caller} has a zero covariance (rank 0: all {n} samples are the "
                            f"same point), so no direction can be whitened. Pass {regularise} to regularise, or "
                            f"samples that vary.", rank=rank, n_directions=k)
    regularise = "eps > 0" if k == d else "eps > 0 with n_components=None (all features)"
    raise RankDeficient(f"The 'X' parameter of {caller} has a rank-deficient covariance (rank {rank} < "
                        f"{asked}), which cannot be whitened. Pass n_components <= {rank}, "
                        f"or {regularise} to regularise, or more samples.", rank=rank, n_directions=k)


class RankDeficient(IsotropyValueError):
    """:func:`_refuse_rank`'s refusal, with ``rank`` and the ``n_directions`` asked for, so that a caller can say it in
    its own terms (the sts-isotropy config's ``whitening_eps`` and ``whitening_components``)."""

    def __init__(self, message: str, *, rank: int, n_directions: int):
        super().__init__(message)
        self.rank, self.n_directions = rank, n_directions


def _refuse_unrepresentable(X, lam, exponent, *, caller):
    """Refuse ``X`` whose :class:`Whitening` variances float64 cannot hold (``lam``, ``exponent``: ``fit_whitening``'s).

    Why refuse here and not in :func:`whiten`: ``whiten`` returns only the whitened data, at unit scale
    whatever the scale of ``X``, so it whitens ``X`` exactly at any scale. ``Whitening`` also stores
    ``explained_variance_``, variances of order ``|x|**2``: from ``|x| ~ 1e154`` they overflow (inf) and
    below ``|x| ~ 1e-154`` they underflow (0 or subnormal, a variance that contradicts the whitening or has
    lost its digits). Storing them so would be a silent wrong answer, so the fit is refused there, saying
    what float64 holds and that ``whiten`` does the same whitening. (``components_ ~ 1/|x|`` and ``mean_``
    are representable wherever the variances are.)
    """
    with np.errstate(over="ignore", under="ignore"):
        variances = np.ldexp(lam, 2 * exponent)
    meaningful = lam > lam[0] * np.finfo(float).eps  # round-off eigenvalues (kept with eps > 0) may underflow
    if np.isfinite(variances).all() and not (variances[meaningful] < np.finfo(float).tiny).any():
        return
    over = not np.isfinite(variances).all()
    value = lam[0] if over else lam[meaningful].min()
    which, where = (("largest", "above float64's largest number 1.8e+308") if over
                    else ("smallest", "below float64's smallest normal number 2.2e-308"))
    raise IsotropyValueError(
        f"The 'X' parameter of {caller} must have variances that float64 holds (explained_variance_ stores "
        f"them). Got X with largest |x| = {float(np.abs(X).max()):.3g}, whose {which} variance, about "
        f"1e{round(math.log10(value) + 2 * exponent * math.log10(2.0))}, is {where}: {caller} is fitted on "
        f"data with |x| about 1e-154 to 1e154; whiten(X) whitens X exactly at any scale.")


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
        rank; a small ``eps`` (e.g. 1e-6 times the largest variance) whitens rank-deficient data, with
        ``n_components`` at most the rank or ``None`` (some but not all of the directions past the rank
        would be an arbitrary choice among them, refused with the rank).

    Returns
    -------
    X_white : ndarray or torch.Tensor of shape (n_samples, k)
        Float32 for float32 numpy input and float64 for other numpy input (computed in float64 either
        way), the input's dtype and device for a tensor.

    Notes
    -----
    With :math:`\\mu` the mean and :math:`\\Sigma = U \\Lambda U^\\top` the sample covariance
    (``np.cov``, divisor n - 1, as Su et al.), :math:`\\tilde x = (x - \\mu)\\, U_k \\Lambda_k^{-1/2}`.
    On the fitting data the sample covariance of the output is the identity: perfectly isotropic.

    With fewer samples than features (n < d) and ``n_components`` <= n - 1, :math:`U_k` and
    :math:`\\Lambda_k` come from the n x n centred Gram :math:`X_c X_c^\\top = P S^2 P^\\top`
    (:math:`X_c` the centred rows): :math:`U_k = X_c^\\top P_k S_k^{-1}`,
    :math:`\\Lambda_k = S_k^2 / (n - 1)`, in memory O(n² + n·d) instead of the d x d covariance's
    O(d²). Each direction's sign is arbitrary, as that of an eigenvector.

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
    Xn, dtype = to_numpy(X, caller="whiten", keep_float32=True)  # no float64 copy (fit_whitening)
    mean, W, _, exponent = fit_whitening(Xn, n_components=n_components, eps=eps)
    # X itself at an ordinary scale
    return transformed(lambda rows, _: centre_and_project(rows, mean, W, exponent=exponent), Xn, X, dtype=dtype,
                       caller="whiten")


def centre_and_project(X, mean, W, *, exponent: int = 0) -> np.ndarray:
    """``(X * 2**-exponent - mean) @ W`` in row chunks: no centred n x d copy beside the n x k result."""
    out = np.empty((X.shape[0], W.shape[1]))
    for start, stop in row_chunks(*X.shape):
        np.matmul(times_power_of_two(X[start:stop], -exponent) - mean, W, out=out[start:stop])
    return out


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
    eps_ : float
        The ``eps`` the fit used (``inverse_transform`` undoes it, whatever ``set_params`` sets later).
    n_components_ : int
    n_features_in_ : int

    Notes
    -----
    ``inverse_transform(Z) = Z @ (components_ * (explained_variance_ + eps_)[:, None]) + mean_`` maps
    whitened data back to the input space (into the kept subspace when ``n_components < n_features``,
    as ``PCA(whiten=True).inverse_transform`` does).

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy.transforms import Whitening
    >>> X = np.random.default_rng(0).normal(size=(100, 4))
    >>> Whitening(n_components=2).fit_transform(X).shape
    (100, 2)
    """

    _min_samples = 2
    _fit_keeps_float32 = True  # fit_whitening reads float32 X as float64 a row chunk at a time

    def __init__(self, *, n_components=None, eps=0.0):
        self.n_components = n_components
        self.eps = eps

    def _fit(self, X):
        mean, W, lam, exponent = fit_whitening(X, n_components=self.n_components, eps=self.eps, caller="Whitening")
        _refuse_unrepresentable(X, lam, exponent, caller="Whitening")
        self.mean_, self.explained_variance_ = np.ldexp(mean, exponent), np.ldexp(lam, 2 * exponent)
        self.components_ = np.ldexp(W, -exponent).T
        self.n_components_ = int(W.shape[1])
        self.eps_ = float(self.eps)  # what components_ were scaled with: the inverse must not read a later eps

    @property
    def _n_features_out(self):
        return self.n_components_

    def _transform(self, X):
        return centre_and_project(X, self.mean_, self.components_.T)

    def inverse_transform(self, X):
        """Map whitened ``X`` of shape ``(n_samples, n_components_)`` back to shape ``(n_samples, n_features_in_)``.

        ``X @ (components_ * (explained_variance_ + eps_)[:, None]) + mean_``: the exact inverse of
        ``transform`` with all components kept, else the projection on the kept directions (as
        ``PCA(whiten=True).inverse_transform``). Float32 for float32 input, float64 otherwise (computed in
        float64 either way); a torch tensor input gives a tensor on the same device with the same dtype.
        """
        check_is_fitted(self)
        caller = "Whitening.inverse_transform"
        Z, dtype = to_numpy(X, caller=caller, min_samples=1)
        if Z.shape[1] != self.n_components_:
            raise IsotropyValueError(f"The 'X' parameter of {caller} must have n_components_={self.n_components_} "
                                     f"columns (whitened data). Got {Z.shape[1]} columns instead.")
        unwhiten = self.components_ * (self.explained_variance_ + self.eps_)[:, None]
        return transformed(lambda rows, _: rows @ unwhiten + self.mean_, Z, X, dtype=dtype, caller=caller)
