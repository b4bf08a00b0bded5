"""Cluster-based isotropy enhancement (Rajaee & Pilehvar, 2021): per-cluster centring and PCA removal."""

from __future__ import annotations

import copy
import math
import numbers
import warnings

import numpy as np

from isotropy._utils.magnitude import rescaled, times_power_of_two
from isotropy._utils.validation import (
    IsotropyValueError,
    check_option,
    check_random_state,
    check_scalar,
)
from isotropy.transforms._all_but_the_top import numerical_rank, remove_directions, top_directions
from isotropy.transforms._base import SameFeaturesTransformer, to_numpy, transformed, warn_at_caller
from isotropy.transforms._cluster_centering import nearest_center
from isotropy.transforms._scatter import column_mean

__all__ = ["ClusterIsotropy", "cluster_isotropy"]

CLUSTERINGS = ("kmeans", "gmm")


def fit_clusterer(X: np.ndarray, n_clusters: int, *, clustering: str, seed: int):
    """Fit K-means (k-means++, 3 restarts) or a diagonal-covariance Gaussian mixture; return the model."""
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.mixture import GaussianMixture

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if clustering == "kmeans":
            return KMeans(n_clusters=n_clusters, n_init=3, random_state=seed).fit(X)
        # Fitted on the centred data, then moved back: scikit-learn's mixture expands (x - μ)² as x² - 2xμ + μ²,
        # which cancels under a large common offset (clusters 0.05 apart at an offset of 1e6 failed to fit with
        # "ill-defined empirical covariance"); K-means centres the data itself. The mixture of X is the same.
        centre = X.mean(axis=0)
        mixture = GaussianMixture(n_components=n_clusters, covariance_type="diag", random_state=seed).fit(X - centre)
        mixture.means_ = mixture.means_ + centre
        return mixture


def assign(clusterer, X: np.ndarray, exponent: int = 0) -> np.ndarray:
    """The cluster of every row of float64 ``X``: the nearest centroid (K-means) or most probable component.

    ``exponent`` is the ``e`` of a ``clusterer`` fitted on ``X · 2**-e`` and scaled back by :func:`at_scale`
    (0 at an ordinary scale): a mixture is then asked about ``X · 2**-e`` with its parameters at that scale, as
    ``GaussianMixture.predict`` squares ``x`` (``|x| ~ 2**520`` overflowed). The nearest centroid is found at any
    scale by :func:`nearest_center` itself.

    K-means goes through :func:`nearest_center`, not ``KMeans.predict``, whose ``-2 x.c + |c|^2``
    expansion cancels catastrophically under a large common offset (two clusters 0.05 apart at an offset of
    1e7: ``predict`` agreed with ``fit``'s labels on half of the training points; ``KMeans.fit`` centres
    the data first, ``predict`` does not).
    """
    if hasattr(clusterer, "cluster_centers_"):
        return nearest_center(X, clusterer.cluster_centers_)
    if exponent:
        clusterer, X = at_scale(clusterer, -exponent), times_power_of_two(X, -exponent)
    return most_probable_component(clusterer, X)


# Entries of the (rows, components, features) differences of most_probable_component held at a time.
_MIXTURE_ENTRIES = 2**21


def most_probable_component(mixture, X: np.ndarray) -> np.ndarray:
    """The most probable component of every row of float64 ``X`` under a diagonal-covariance Gaussian mixture.

    ``log p_k(x) = log w_k + Σ_d log ρ_kd − ½ Σ_d ((x_d − μ_kd) ρ_kd)²`` (``ρ``: ``precisions_cholesky_``; the
    common ``−(d/2) log 2π`` left out), the largest winning, ties to the first component, as
    ``GaussianMixture.predict``. Unlike ``predict``, from the direct differences ``x − μ_k`` (its expansion
    ``x² − 2xμ + μ²`` cancels under a large common offset), each pair of a row and a component scaled by a
    power of two that keeps its squares finite (``predict`` overflowed from ``|x| ~ 1e154`` and put points
    there in the wrong component). Where ``Σ_d ((x_d − μ_kd) ρ_kd)²`` is beyond float64's range for every
    component, the smallest (compared by its logarithm) wins: the other terms are then far below its rounding.
    """
    means, rho = np.asarray(mixture.means_, dtype=float), np.asarray(mixture.precisions_cholesky_, dtype=float)
    n_components, d = means.shape
    with np.errstate(divide="ignore"):
        const = np.log(np.asarray(mixture.weights_, dtype=float)) + np.log(rho).sum(axis=1)
    # |(x - μ)·2**-s| <= 2**-h keeps every square, and their sum over d features, below float64's largest number
    # (ρ <= 1.3e154, since precisions_ = ρ² is stored)
    h = math.ceil(math.log2(max(d, 1)) / 2) + 1
    mean_top = np.frexp(np.abs(means).max(axis=1))[1]  # per component
    labels = np.empty(X.shape[0], dtype=np.intp)
    step = max(1, _MIXTURE_ENTRIES // max(1, n_components * d))
    for s in range(0, X.shape[0], step):
        x = X[s:s + step]
        shift = np.maximum(np.frexp(np.abs(x).max(axis=1))[1][:, None], mean_top[None, :]) + 1 + h  # (rows, k)
        with np.errstate(under="ignore"):  # only parts far below the largest of x and μ_k lose digits
            y = np.ldexp(x[:, None, :], -shift[:, :, None]) - np.ldexp(means[None], -shift[:, :, None])
        y *= rho[None]
        q = np.einsum("rkd,rkd->rk", y, y)  # Σ ((x - μ_k) ρ_k)² · 4**-shift
        with np.errstate(over="ignore", under="ignore"):
            score = const[None, :] - 0.5 * np.ldexp(q, 2 * shift)
        at = labels[s:s + step]
        at[:] = np.argmax(score, axis=1)
        beyond = np.isneginf(score).all(axis=1) if np.isfinite(const).any() else np.zeros(len(at), dtype=bool)
        if beyond.any():
            with np.errstate(divide="ignore"):
                size = np.log2(q[beyond]) + 2.0 * shift[beyond]
            size[:, np.isneginf(const)] = np.inf  # a component of weight 0 is never the most probable
            at[beyond] = np.argmin(size, axis=1)
    return labels


def at_scale(clusterer, exponent: int):
    """A copy of the fitted ``clusterer`` describing the data times ``2**exponent``: centres and means times
    ``2**exponent``, variances (and ``inertia_``, a sum of squares) times ``4**exponent``, precisions divided
    by them, the mixture's log-likelihood bounds moved by ``-d·exponent·ln 2``. Exact (powers of two) wherever
    the results are normal numbers; ``inertia_`` beyond float64's range is inf (or 0)."""
    if not exponent:
        return clusterer
    clusterer = copy.copy(clusterer)
    with np.errstate(over="ignore", under="ignore"):
        for name, power in (("cluster_centers_", 1), ("inertia_", 2), ("means_", 1), ("covariances_", 2),
                            ("precisions_", -2), ("precisions_cholesky_", -1)):
            if hasattr(clusterer, name):
                value = np.ldexp(getattr(clusterer, name), power * exponent)
                setattr(clusterer, name, float(value) if name == "inertia_" else value)
    shift = -clusterer.n_features_in_ * exponent * math.log(2.0)
    if hasattr(clusterer, "lower_bound_"):
        clusterer.lower_bound_ = clusterer.lower_bound_ + shift
    if hasattr(clusterer, "lower_bounds_"):
        clusterer.lower_bounds_ = [bound + shift for bound in clusterer.lower_bounds_]
    return clusterer


def _refuse_unrepresentable(X, clusterer, exponent, *, caller):
    """Refuse ``X`` whose mixture ``clusterer`` (fitted on ``X · 2**-exponent``) float64 cannot hold at ``X``'s scale.

    :func:`cluster_isotropy` returns only the transformed data and labels, exact at any scale; ``ClusterIsotropy``
    also stores ``clusterer_``, whose ``covariances_`` (``|x|**2``) and ``precisions_`` (``|x|**-2``) leave
    float64's normal range from ``|x| ~ 1e154`` and below ``|x| ~ 1e-154``: stored so (inf, 0, or subnormal
    numbers that have lost their digits) they would be a silent wrong answer, so the fit is refused there.
    K-means stores centres only (representable wherever ``X`` is), and ``inertia_``, a sum of squares left
    inf or 0 beyond the range as float64 itself rounds it.
    """
    if not exponent or not hasattr(clusterer, "covariances_"):
        return
    tiny = np.finfo(float).tiny
    with np.errstate(over="ignore", under="ignore"):
        scaled = [np.ldexp(clusterer.covariances_, 2 * exponent), np.ldexp(clusterer.precisions_, -2 * exponent),
                  np.ldexp(clusterer.precisions_cholesky_, -exponent)]
    if all(np.isfinite(v).all() and not ((v != 0) & (np.abs(v) < tiny)).any() for v in scaled):
        return
    variances = np.asarray(clusterer.covariances_, dtype=float)
    low, high = (round(math.log10(v) + 2 * exponent * math.log10(2.0)) for v in (variances.min(), variances.max()))
    span = f"1e{low}" if low == high else f"1e{low} to 1e{high}"
    raise IsotropyValueError(
        f"The 'X' parameter of {caller} with clustering='gmm' must have variances that float64 holds (clusterer_ "
        f"stores the mixture's covariances_ and precisions_, their reciprocals). Got X with largest |x| = "
        f"{float(np.abs(X).max()):.3g}, whose variances, about {span}, or their reciprocals are "
        f"outside float64's normal range 2.2e-308 to 1.8e+308: {caller}(clustering='gmm') is fitted on data with "
        f"|x| about 1e-150 to 1e150; clustering='kmeans', and cluster_isotropy(X) with either, work at any scale.")


def fit_cluster_isotropy(X: np.ndarray, *, n_clusters=27, n_components=12, clustering="kmeans",
                         random_state=None, caller="cluster_isotropy"):
    """Fit on float64 numpy ``X``; return ``(clusterer, labels, centers, components, n_removed, exponent)``.

    ``components`` has shape ``(n_clusters, n_components, n_features)``, zero-padded where a cluster
    has fewer than ``n_components`` directions of variance (at most ``n_j - 1`` for ``n_j`` points).

    Far from unit scale (largest ``|x|`` beyond ``2**±100``) everything is fitted on ``X · 2**-exponent``
    (:func:`~isotropy._utils.magnitude.rescaled`, exact for normal numbers; ``exponent`` is 0 at an ordinary
    scale and ``X`` is used as it is): K-means and the mixture on ``X`` itself square ``|x|``, which overflows
    from ``|x| ~ 2**512`` and underflows below ``2**-537`` (at ``2**520`` ``predict`` agreed with ``labels_`` on
    only part of the points). ``clusterer`` is the model of ``X · 2**-exponent`` (:func:`at_scale` gives that of
    ``X``); the labels, and the directions (unit vectors), are those of the unit-scale data, and ``centers``
    are scaled back to ``X``'s (the mixture's ``reg_covar`` acts on the unit-scale data).
    """
    check_scalar(n_clusters, "n_clusters", caller=caller, kind=numbers.Integral, low=1)
    check_scalar(n_components, "n_components", caller=caller, kind=numbers.Integral, low=0)
    check_option(clustering, "clustering", CLUSTERINGS, caller=caller)
    n, d = X.shape
    if n_clusters > n:
        raise IsotropyValueError(f"The 'X' parameter of {caller} must have at least n_clusters={n_clusters} "
                                 f"samples. Got n_samples={n} instead.")
    if n_components > d:
        raise IsotropyValueError(f"The 'n_components' parameter of {caller} must be at most n_features={d}. "
                                 f"Got {n_components} instead.")
    seed = int(check_random_state(random_state, caller=caller).integers(2**31 - 1))
    X, exponent = rescaled(X, caller=caller)
    clusterer = fit_clusterer(X, n_clusters, clustering=clustering, seed=seed)
    labels = assign(clusterer, X)
    # a copy: the loop below sets the member means, and np.asarray aliased the model's own centres (so clusterer_
    # assigned points by those means afterwards: predict(X) disagreed with labels_, and transform with the fit)
    centers = np.array(clusterer.cluster_centers_ if clustering == "kmeans" else clusterer.means_, dtype=float)
    components = np.zeros((n_clusters, n_components, d))
    n_removed = np.zeros(n_clusters, dtype=np.intp)
    repeated = {}  # clusters of more than n_components + 1 points whose rank is at most n_components: their ranks
    for j in range(n_clusters):
        members = X[labels == j]
        if members.shape[0] == 0:  # an empty mixture component: keep the model's mean, remove nothing
            continue
        centers[j] = column_mean(members)  # two-pass: numerical_rank's floor is a few roundings of it
        D = min(n_components, members.shape[0] - 1)
        directions, singular = top_directions(members - centers[j], D, singular_values=True)
        # and at most the cluster's rank: past it a direction has no variance and the SVD returns an arbitrary one
        # (round-off), which transform then removed from new points (a cluster of one repeated point removed one)
        rank = (numerical_rank(singular, *members.shape, centers[j]) if D > 0
                else None if np.ptp(members, axis=0).any() else 0)  # D = 0: no SVD; copies of one point have rank 0
        if rank is not None:
            D = min(D, rank)
            if members.shape[0] > n_components + 1 and rank <= n_components:
                repeated[j] = rank
        components[j, :D] = directions[:D]
        n_removed[j] = D
    sizes = np.bincount(labels, minlength=n_clusters)
    if repeated:  # all their variance removed, as for the small clusters below, but they are not small
        # their points span few directions: repeated rows, or data of low rank (a trial: 200 distinct rows of rank 3
        # were said to be repeated points); their ranks say which
        low, high = min(repeated.values()), max(repeated.values())
        ranks = f"rank {low}" if low == high else f"ranks {low} to {high}"
        warn_at_caller(f"{caller}: {len(repeated)} of {n_clusters} clusters have more than n_components + 1 = "
                       f"{n_components + 1} points but at most n_components = {n_components} directions of variance "
                       f"({ranks}: their points span no more, as repeated rows or data of low rank do; "
                       f"{int(sizes[list(repeated)].sum())} points in all); every direction of theirs is removed and "
                       f"their points become the zero vector. "
                       + (f"Use fewer components (at most {low - 1} keeps some variance in each), or fewer clusters."
                          if low > 1 else "Use fewer clusters, or leave out repeated rows."))
    # n_j centred points span n_j - 1 directions: with n_j <= n_components + 1 all of them are removed and each point
    # is 0 (the test was n_j <= n_components, which missed clusters of n_components + 1 points: 2 points, D = 1)
    flat = np.flatnonzero((sizes > 0) & (sizes <= n_components + 1))
    if flat.size and n_components == 0:  # no direction is removed: a one-point cluster is 0 once centred on itself
        warn_at_caller(f"{caller}: {flat.size} of {n_clusters} clusters have a single point, which centring on its "
                       f"cluster's mean makes the zero vector. Use fewer clusters, or more rows.")
    elif flat.size:
        warn_at_caller(f"{caller}: {flat.size} of {n_clusters} clusters have at most n_components + 1 = "
                       f"{n_components + 1} points ({int(sizes[flat].sum())} points in all, the smallest "
                       f"{int(sizes[flat].min())}); every direction of theirs is removed and their points become the "
                       f"zero vector. Use fewer clusters or components, or more rows.")
    return clusterer, labels, times_power_of_two(centers, exponent), components, n_removed, exponent


def _apply(X, labels, centers, components):
    out = X - centers[labels]
    for j in np.unique(labels):
        rows = labels == j
        out[rows] = remove_directions(out[rows], components[j])
    return out


def cluster_isotropy(X, *, n_clusters=27, n_components=12, clustering="kmeans", random_state=None):
    """Cluster-based isotropy enhancement: per cluster, subtract the mean and remove the top directions.

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        The embeddings.
    n_clusters : int, default=27
        Number of clusters (Rajaee & Pilehvar's setting for BERT-base).
    n_components : int, default=12
        Number of dominant directions removed within each cluster (their setting for BERT-base);
        ``0`` is per-cluster centring only. A cluster of ``n_j`` points has at most ``n_j - 1``
        directions of variance (at most its rank: repeated points have none); fewer are removed there.
    clustering : {"kmeans", "gmm"}, default="kmeans"
        K-means (k-means++, 3 restarts) or a Gaussian mixture with diagonal covariances (full
        covariances are singular for small clusters of high-dimensional points). The mixture adds
        scikit-learn's fixed ``reg_covar`` (1e-6) to every variance, so its clusters depend on the
        data's scale: data whose variances are near or below 1e-6 can fall into one component (data
        with ``|x|`` below ``2**-100`` are brought to unit scale first, and do not). Scale such data up
        (the transform is scale-covariant) or use K-means, which does not depend on the scale.
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState

    Returns
    -------
    X_new : ndarray or torch.Tensor of shape (n_samples, n_features)
        Float32 for float32 numpy input and float64 for other numpy input (computed in float64 either
        way), the input's dtype and device for a tensor.
    labels : ndarray of shape (n_samples,)
        The cluster of every point, ``0 .. n_clusters − 1`` (its K-means cluster, or its most probable
        mixture component), numpy whatever the input.

    Notes
    -----
    For cluster :math:`C_j` with mean :math:`\\mu_j` and leading principal directions
    :math:`u_{j,1}, \\dots, u_{j,D}` of :math:`\\{x - \\mu_j : x \\in C_j\\}`,
    :math:`\\tilde x = (x - \\mu_j) - \\sum_{i=1}^{D} (u_{j,i}^\\top (x - \\mu_j))\\, u_{j,i}`.
    It is All-But-The-Top applied within each cluster: the global view is dominated by
    between-cluster directions, and each cluster has its own dominant (degenerate) directions.

    References
    ----------
    Rajaee, S. and Pilehvar, M. T. (2021). A cluster-based approach for improving isotropy in
    contextual embedding space. ACL-IJCNLP 2021 (short papers), 575-584.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy.transforms import cluster_isotropy
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(size=(40, 3)) * [5.0, 1, 1], rng.normal(size=(40, 3)) * [1, 5.0, 1] + 30])
    >>> Y, labels = cluster_isotropy(X, n_clusters=2, n_components=1, random_state=0)
    >>> bool(np.allclose(Y[labels == 0].mean(axis=0), 0.0)), bool(Y[:, :2].std() < 2.0)
    (True, True)
    """
    Xn, dtype = to_numpy(X, caller="cluster_isotropy", min_samples=1)
    _, labels, centers, components, _, _ = fit_cluster_isotropy(
        Xn, n_clusters=n_clusters, n_components=n_components, clustering=clustering, random_state=random_state)
    return transformed(lambda rows, where: _apply(rows, labels[where], centers, components), Xn, X, dtype=dtype,
                       caller="cluster_isotropy"), labels


class ClusterIsotropy(SameFeaturesTransformer):
    """Cluster-based isotropy enhancement as a scikit-learn transformer (Rajaee & Pilehvar, 2021).

    ``fit`` clusters the training points and learns every cluster's mean and top directions;
    ``transform`` assigns new points to the fitted clusters (nearest centroid for K-means, most
    probable component for the mixture) and applies that cluster's transform. See
    :func:`cluster_isotropy` for the parameters, formula and reference.

    Attributes
    ----------
    clusterer_ : sklearn.cluster.KMeans or sklearn.mixture.GaussianMixture
        The model of ``X``. Far from unit scale (``|x|`` beyond ``2**±100``) it is fitted on ``X`` times a power
        of two and scaled back exactly; its K-means ``inertia_`` (a sum of squares) is then inf or 0 beyond
        float64's range, and a mixture whose variances float64 cannot hold (``|x|`` beyond about ``1e±150``)
        is refused. Beyond about ``2**±511`` the K-means model's own ``predict``, ``score`` and ``transform``
        square ``x`` and overflow: use this class's :meth:`predict` and :meth:`transform`, exact at any scale.
    labels_ : ndarray of shape (n_samples,)
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
        The mean of the training points of each cluster.
    components_ : ndarray of shape (n_clusters, n_components, n_features)
        Removed directions per cluster, zero rows where a cluster has fewer.
    n_components_ : ndarray of shape (n_clusters,)
        Directions actually removed in each cluster (at most ``n_j - 1`` and the cluster's rank).
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy.transforms import ClusterIsotropy
    >>> X = np.random.default_rng(0).normal(size=(100, 8))
    >>> ci = ClusterIsotropy(n_clusters=3, n_components=2, random_state=0).fit(X)
    >>> ci.components_.shape
    (3, 2, 8)
    """

    def __init__(self, *, n_clusters=27, n_components=12, clustering="kmeans", random_state=None):
        self.n_clusters = n_clusters
        self.n_components = n_components
        self.clustering = clustering
        self.random_state = random_state

    def _fit(self, X):
        clusterer, labels, centers, components, n_removed, exponent = fit_cluster_isotropy(
            X, n_clusters=self.n_clusters, n_components=self.n_components, clustering=self.clustering,
            random_state=self.random_state, caller="ClusterIsotropy")
        _refuse_unrepresentable(X, clusterer, exponent, caller="ClusterIsotropy")
        self.clusterer_, self.labels_, self.cluster_centers_ = at_scale(clusterer, exponent), labels, centers
        self.components_, self.n_components_ = components, n_removed
        self._exponent = exponent  # the scale clusterer_ was fitted at: assign asks the mixture there

    def predict(self, X):
        """The fitted cluster of every row of ``X`` of shape ``(n_samples, n_features)``."""
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        return assign(self.clusterer_, self._validated(X, reset=False, method="predict"), getattr(self, "_exponent", 0))

    def _transform(self, X):
        return _apply(X, assign(self.clusterer_, X, getattr(self, "_exponent", 0)), self.cluster_centers_,
                      self.components_)
