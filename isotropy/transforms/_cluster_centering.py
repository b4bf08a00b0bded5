"""Per-cluster centring (Cai et al., 2021): K-means, then subtract each cluster's mean."""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from isotropy._utils.magnitude import rescaled, safe_exponent_range, times_power_of_two
from isotropy._utils.validation import (
    MAX_INT,
    MAX_N_INIT,
    IsotropyValueError,
    check_random_state,
    check_scalar,
)
from isotropy.transforms._base import SameFeaturesTransformer, to_numpy, transformed, warn_at_caller

__all__ = ["ClusterCentering", "cluster_center"]



def _silhouette(X, labels, *, sample_size, seed, caller) -> float:
    """Mean silhouette (Euclidean), on a random subsample of ``sample_size`` points when n is larger.

    The subsample is silhouette_score's own draw (:func:`isotropy._kernels.silhouette._sample_indices`, the rows
    scikit-learn draws for that seed), taken here so that a draw holding fewer than 2 of the clusters, or one cluster
    per row, is refused naming ``caller``'s 'silhouette_sample_size' (silhouette_score named its own 'sample_size').
    """
    from isotropy._kernels.silhouette import _sample_indices
    from isotropy.metrics.silhouette import silhouette_score

    n = X.shape[0]
    if sample_size is not None and n > sample_size:
        rows = _sample_indices(n, sample_size, seed, caller)
        found = np.unique(labels[rows]).size
        if not 2 <= found <= sample_size - 1:
            k = np.unique(labels).size
            raise IsotropyValueError(
                f"The 'silhouette_sample_size' parameter of {caller} drew {sample_size} of the {n} rows, which hold "
                f"{found} of the k={k} K-means clusters; a silhouette needs between 2 and silhouette_sample_size - 1 "
                f"= {sample_size - 1} clusters in the sample. Pass a larger silhouette_sample_size (or None for all "
                f"rows), or another random_state.")
        return float(silhouette_score(X[rows], labels[rows]))
    return float(silhouette_score(X, labels))


def kmeans_labels(X: np.ndarray, n_clusters: int, *, seed: int, n_init: int):
    """K-means on float64 ``X``; returns ``(centers, labels)``."""
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():  # duplicate points: fewer distinct clusters than asked is fine here
        warnings.simplefilter("ignore", ConvergenceWarning)
        km = KMeans(n_clusters=n_clusters, n_init=n_init, random_state=seed).fit(X)
    return km.cluster_centers_, km.labels_.astype(np.intp)


def _check_params(n_clusters, k_range, min_silhouette, n_init, silhouette_sample_size, *, caller):
    if isinstance(n_clusters, str):
        if n_clusters != "auto":
            # "one of:" keeps the opening of the earlier message, which tests/test_transforms.py matches
            raise IsotropyValueError(f"The 'n_clusters' parameter of {caller} must be one of: an int >= 1, or "
                                     f"'auto'. Got {n_clusters!r} instead.")
    else:
        check_scalar(n_clusters, "n_clusters", caller=caller, kind=numbers.Integral, low=1)
    ok = (isinstance(k_range, (tuple, list)) and len(k_range) == 2
          and all(isinstance(k, numbers.Integral) and not isinstance(k, bool) for k in k_range)
          and 2 <= k_range[0] <= k_range[1])
    if not ok:
        raise IsotropyValueError(f"The 'k_range' parameter of {caller} must be a pair of ints (low, high) with "
                                 f"2 <= low <= high. Got {k_range!r} instead.")
    check_scalar(min_silhouette, "min_silhouette", caller=caller, low=-1, high=1)
    # n_init multiplies the work of every k tried (each restart is a whole K-means run): unbounded, 10**12 on a 30 x 3
    # input ran for ever. The library's bound for counts (MAX_INT = 10**9) bounds sizes, not repeated work: 10**9
    # restarts would still run for weeks, so n_init has a bound of its own, MAX_N_INIT, two orders of magnitude past
    # the restarts in use (3 here and in the experiments, scikit-learn's default 10), which keeps a fit within a
    # thousand times its default cost
    check_scalar(n_init, "n_init", caller=caller, kind=numbers.Integral, low=1, high=MAX_N_INIT,
                 high_why="each restart is a whole K-means run, for every k tried")
    # silhouette_score takes a subsample of 3 rows or more (2 rows hold no silhouette: one cluster, or one per row);
    # the bound was 2, which passed here and was refused there under silhouette_score's own 'sample_size'
    check_scalar(silhouette_sample_size, "silhouette_sample_size", caller=caller, kind=numbers.Integral, low=3,
                 high=MAX_INT, allow_none=True)


def fit_cluster_centers(X: np.ndarray, *, n_clusters="auto", k_range=(2, 15), min_silhouette=0.1, n_init=3,
                        silhouette_sample_size=5000, random_state=None, caller="cluster_center"):
    """Fit the clusters of :func:`cluster_center` on float64 numpy ``X``.

    Returns ``(centers, labels, silhouettes)`` with ``silhouettes`` a dict ``k -> mean silhouette``
    (empty unless ``n_clusters="auto"``).

    Far from unit scale (largest ``|x|`` beyond ``2**±100``) the clusters are found on ``X · 2**-e``
    (:func:`~isotropy._utils.magnitude.rescaled`: ``e`` the binary exponent of the largest ``|x|``, exact for
    normal numbers) and the centres are scaled back by ``2**e``: K-means on ``X`` itself squares ``|x|`` (inf
    from ``|x| ~ 2**512``, 0 below ``2**-537``), and its labels and centres were wrong there (``predict`` agreed
    with ``labels_`` on only part of the points at ``2**520``). K-means, its k-means++ seeding and the silhouette are
    unchanged by a power of two, so the labels and the ``"auto"`` choice of k are those of the unit-scale data.
    At an ordinary scale ``e = 0`` and ``X`` is used as it is.
    """
    _check_params(n_clusters, k_range, min_silhouette, n_init, silhouette_sample_size, caller=caller)
    rng = check_random_state(random_state, caller=caller)
    seed = int(rng.integers(2**31 - 1))
    n = X.shape[0]
    if n_clusters != "auto" and n_clusters > n:
        raise IsotropyValueError(f"The 'X' parameter of {caller} must have at least n_clusters={n_clusters} "
                                 f"samples. Got n_samples={n} instead.")
    Xu, exponent = rescaled(X, caller=caller)
    centers, labels, silhouettes = _fit_at_unit_scale(Xu, n_clusters, k_range, min_silhouette, n_init,
                                                      silhouette_sample_size, seed, caller=caller)
    if n_clusters == "auto":
        _warn_if_unreliable(int(centers.shape[0]), n, k_range, caller=caller)
    return times_power_of_two(centers, exponent), labels, silhouettes


# The rule of the warning below, on "auto" only (an int n_clusters is the caller's own choice). The silhouette that
# chooses k is not a measure of clusters when they hold one or two points: a point alone scores 0, and a pair scores
# how much nearer its two points are to each other than to the rest, a nearest-neighbour statistic that every small
# sample has (12 Gaussian points in 2-d chose k=6, pairs); centring then leaves little (a point alone becomes 0, a
# pair ± half its difference). So a mean cluster size n_samples / k under 3 (the smallest cluster whose mean is not
# fixed by one or two of its own points) is warned of. A k_range cut by n_samples - 1 (the most the silhouette takes)
# is warned of too: the range asked for was not the range tried, and it only happens on data of few points.
MIN_POINTS_PER_CLUSTER = 3


def _warn_if_unreliable(k: int, n: int, k_range, *, caller: str) -> None:
    """Warn when ``"auto"`` chose ``k`` on too few points: see the comment above for the rule."""
    reasons = []
    low, high = int(k_range[0]), int(k_range[1])
    if high > n - 1:
        reasons.append(f"k_range={(low, high)} was cut to k <= n_samples - 1 = {n - 1}, the most the silhouette "
                       f"takes" if low <= n - 1 else f"k_range={(low, high)} lies above n_samples - 1 = {n - 1}, the "
                       f"most the silhouette takes, so no k was tried")
    if k >= 2 and n < MIN_POINTS_PER_CLUSTER * k:
        reasons.append(f"{n / k:.1f} points per cluster on average, fewer than {MIN_POINTS_PER_CLUSTER}: the "
                       f"silhouette of clusters of one or two points scores nearest neighbours, not clusters")
    if not reasons:
        return
    top = n // MIN_POINTS_PER_CLUSTER
    hint = (f"a k_range whose high is at most n_samples // {MIN_POINTS_PER_CLUSTER} = {top}" if top >= 2
            else "n_clusters=1 (plain centring)")
    warn_at_caller(f"{caller} chose n_clusters={k} for n_samples={n} with n_clusters='auto', an unreliable choice: "
                   f"{'; '.join(reasons)}. Give more samples, or {hint}.")


def _fit_at_unit_scale(X, n_clusters, k_range, min_silhouette, n_init, silhouette_sample_size, seed, *, caller):
    """:func:`fit_cluster_centers` on ``X`` at a safe scale (``n_clusters <= n_samples`` checked)."""
    n = X.shape[0]
    silhouettes: dict[int, float] = {}
    if n_clusters == "auto":
        best = None
        for k in range(k_range[0], min(k_range[1], n - 1) + 1):  # silhouette needs 2 <= k <= n - 1
            centers, labels = kmeans_labels(X, k, seed=seed, n_init=n_init)
            if np.unique(labels).size < 2:
                continue
            silhouettes[k] = _silhouette(X, labels, sample_size=silhouette_sample_size, seed=seed, caller=caller)
            if best is None or silhouettes[k] > best[0]:
                best = (silhouettes[k], centers, labels)
        if best is not None and best[0] >= min_silhouette:
            return best[1], best[2], silhouettes
        if silhouettes:  # Cai et al.'s rule, said: a report of "cluster-based centring" is otherwise plain centring
            top = max(silhouettes, key=silhouettes.get)
            warn_at_caller(f"{caller} took the data as one cluster (plain centring) with n_clusters='auto': the highest "
                           f"mean silhouette over k = {min(silhouettes)}..{max(silhouettes)} was "
                           f"{silhouettes[top]:.3g} (k = {top}), below min_silhouette={min_silhouette:g}. Pass "
                           f"n_clusters=k to centre on k clusters whatever their silhouette, or a lower min_silhouette.")
        n_clusters = 1
    if n_clusters == 1:
        return X.mean(axis=0, keepdims=True), np.zeros(n, dtype=np.intp), silhouettes
    centers, labels = kmeans_labels(X, n_clusters, seed=seed, n_init=n_init)
    return centers, labels, silhouettes


def cluster_center(X, *, n_clusters="auto", k_range=(2, 15), min_silhouette=0.1, n_init=3,
                   silhouette_sample_size=5000, random_state=None):
    """Subtract from every point the mean of its K-means cluster (Cai et al., 2021).

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        The embeddings.
    n_clusters : int or "auto", default="auto"
        Number of K-means clusters. ``"auto"`` tries every k in ``k_range`` and keeps the one with the
        highest mean silhouette; when that silhouette is below ``min_silhouette`` the data is taken as
        one cluster (plain centring), as Cai et al. do, with a warning that gives the best k and its
        silhouette. ``1`` is plain centring.
    k_range : (int, int), default=(2, 15)
        Inclusive range of k tried by ``"auto"`` (capped at ``n_samples - 1``, with a warning).
    min_silhouette : float, default=0.1
        Below this best silhouette, ``"auto"`` keeps one cluster. Note that K-means splits of a single
        Gaussian in 2 or 3 dimensions already reach silhouettes of about 0.3; the threshold is meant
        for high-dimensional embeddings, where such splits score below 0.1.
    n_init : int in [1, 1000], default=3
        K-means restarts (k-means++ initialisation) per k.
    silhouette_sample_size : int >= 3 or None, default=5000
        Silhouettes are computed on a random subsample of this many points when ``n_samples`` is larger
        (the same subsample for every k); ``None`` uses all points. A subsample holding fewer than 2 of
        a k's clusters, or one cluster per point, has no silhouette and is refused.
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState
        Seeds K-means and the silhouette subsample.

    Returns
    -------
    X_centered : ndarray or torch.Tensor of shape (n_samples, n_features)
        ``x_i - mu_{c(i)}``; float32 for float32 numpy input and float64 for other numpy input
        (computed in float64 either way), the input's dtype and device for a tensor.
    labels : ndarray of shape (n_samples,)
        The cluster of every point (all zeros for one cluster).

    Warns
    -----
    UserWarning
        With ``n_clusters="auto"``, when ``k_range`` was capped at ``n_samples - 1`` or the chosen k
        leaves fewer than 3 points per cluster on average: the silhouette of clusters of one or two
        points scores nearest neighbours, not clusters (12 Gaussian points in 2-d choose k = 6).
        The values are those computed without the warning.

    Notes
    -----
    With clusters :math:`C_1, \\dots, C_k` found by K-means and means :math:`\\mu_j`,
    :math:`\\tilde x_i = x_i - \\mu_{c(i)}`. Removing the cluster means removes the directions that
    separate the clusters, which dominate the global (anisotropic) view of contextual embeddings;
    within clusters the space is close to isotropic.

    References
    ----------
    Cai, X., Huang, J., Bian, Y. and Church, K. (2021). Isotropy in the contextual embedding space:
    Clusters and manifolds. ICLR 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy.transforms import cluster_center
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(size=(50, 2)), rng.normal(size=(50, 2)) + [20.0, 0.0]])
    >>> Xc, labels = cluster_center(X, random_state=0)
    >>> int(labels.max()) + 1
    2
    >>> bool(np.allclose(Xc[labels == 1].mean(axis=0), 0.0))
    True
    """
    Xn, dtype = to_numpy(X, caller="cluster_center", min_samples=1)
    centers, labels, _ = fit_cluster_centers(Xn, n_clusters=n_clusters, k_range=k_range,
                                             min_silhouette=min_silhouette, n_init=n_init,
                                             silhouette_sample_size=silhouette_sample_size,
                                             random_state=random_state)
    return transformed(lambda rows, where: rows - centers[labels[where]], Xn, X, dtype=dtype,
                       caller="cluster_center"), labels


class ClusterCentering(SameFeaturesTransformer):
    """Per-cluster centring as a scikit-learn transformer (Cai et al., 2021).

    ``fit`` finds K-means clusters (choosing k by silhouette with ``n_clusters="auto"``);
    ``transform`` assigns every point to its nearest fitted centre and subtracts that centre.
    See :func:`cluster_center` for the parameters, formula and reference.

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters_, n_features)
    n_clusters_ : int
        The number of clusters used (1 when ``"auto"`` found no clear cluster structure).
    labels_ : ndarray of shape (n_samples,)
        Clusters of the training points.
    silhouette_scores_ : dict
        ``k -> mean silhouette`` for every k tried by ``"auto"`` (empty otherwise).
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy.transforms import ClusterCentering
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 10))
    >>> cc = ClusterCentering(random_state=0).fit(X)
    >>> cc.n_clusters_  # one 10-d Gaussian: no k reaches silhouette 0.1, so plain centring
    1
    """

    def __init__(self, *, n_clusters="auto", k_range=(2, 15), min_silhouette=0.1, n_init=3,
                 silhouette_sample_size=5000, random_state=None):
        self.n_clusters = n_clusters
        self.k_range = k_range
        self.min_silhouette = min_silhouette
        self.n_init = n_init
        self.silhouette_sample_size = silhouette_sample_size
        self.random_state = random_state

    def _fit(self, X):
        centers, labels, scores = fit_cluster_centers(
            X, n_clusters=self.n_clusters, k_range=self.k_range, min_silhouette=self.min_silhouette,
            n_init=self.n_init, silhouette_sample_size=self.silhouette_sample_size,
            random_state=self.random_state, caller="ClusterCentering")
        self.cluster_centers_ = centers
        self.n_clusters_ = int(centers.shape[0])
        self.labels_ = labels
        self.silhouette_scores_ = scores

    def predict(self, X):
        """The fitted cluster (nearest centre) of every row of ``X``."""
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        return nearest_center(self._validated(X, reset=False, method="predict"), self.cluster_centers_)

    def _transform(self, X):
        return X - self.cluster_centers_[nearest_center(X, self.cluster_centers_)]


def nearest_center(X: np.ndarray, centers: np.ndarray) -> np.ndarray:
    """Index of the nearest centre (Euclidean) of every row of ``X``: the argmin of ``|x - c|^2`` that direct differences give.

    ``|x - c|^2`` is expanded as ``|x|^2 - 2 x.c + |c|^2`` (one matrix product; ``|x|^2`` is the same for
    every centre and left out), on ``X`` and the centres both shifted by the mean of the centres. Unshifted,
    the expansion cancels catastrophically when ``|x|`` is large beside the gaps between centres: with a
    common offset of 1e7 and clusters 0.05 apart, half of the training points went to the wrong cluster.
    The shift removes a common offset, not a spread: with centres at 0, 1e8·e0 and 1e8·e0 + 0.05·e1,
    ``|x'|`` is still ~3e7 beside a gap of 0.05. So a row whose best and second-best expanded distances
    are within the expansion's rounding bound (below) is decided again by direct differences
    ``x - c`` (float64) to every centre; the other rows keep the expansion's answer, which is then the
    direct one. Rows go in chunks of about 2**16 values (the re-decided rows' differences in chunks of
    about 2**22), so memory is bounded.

    All in float64, whatever the dtypes. Duplicated centres are searched once, and a row's label is the
    smallest index of its centre (as an argmin over all of them). Far from unit scale (``|x|`` beyond about
    ``2**±100``), each row and the centres are first multiplied by the power of two that brings the larger
    of the row's and the centres' ``max|x|`` to unit scale (exact; the argmin does not change), so that
    their squares neither overflow nor underflow.
    """
    # all in float64: centres of lower precision would otherwise set the dtype of the shift and the products
    # while the bound below takes float64's eps (float32 centres: half the rows near a tie went astray)
    centers = np.asarray(centers, dtype=np.float64)
    if centers.shape[0] > 1:
        # Duplicated centres (K-means on fewer distinct points than clusters) tie exactly, a gap of 0 that sent
        # every row to the direct differences: the search is among the distinct centres, in the order of their
        # first occurrence, and a label is the smallest index of its centre (as an argmin over all breaks ties).
        distinct, first = np.unique(centers, axis=0, return_index=True)
        if distinct.shape[0] < centers.shape[0]:
            order = np.argsort(first)
            return first[order][nearest_center(X, distinct[order])].astype(np.intp, copy=False)
    n, d = X.shape
    k = centers.shape[0]
    labels = np.empty(n, dtype=np.intp)
    # ~2**16 values per chunk: the shifted rows go into one reused buffer and a chunk's distances stay in
    # cache (chunks of 2**22 values took longer and held ~70 MiB on 200,000 x 384; time and peak memory against
    # KMeans.predict and the product's floor: benchmarks/bench_nearest_center.py)
    step = max(1, 2**16 // max(d, k, 1))
    buf = np.empty((min(step, n), d))  # float64: the rows are converted chunk by chunk
    top_centers = float(np.abs(centers).max()) if centers.size else 0.0
    safe = safe_exponent_range(buf)
    scaled: dict[int, tuple] = {}

    def expanded(rows, e, out):
        """``(D, |x'|^2, the centres, max |c'|^2)`` of ``rows`` (into ``out``: x') and the centres, all times 2**-e."""
        if e not in scaled:
            cen = times_power_of_two(centers, -e)
            ref = cen.mean(axis=0)
            C = cen - ref
            c2 = np.einsum("ij,ij->i", C, C)
            scaled[e] = (cen, ref, C, c2)
        cen, ref, C, c2 = scaled[e]
        if e:
            np.copyto(out, rows)
            np.ldexp(out, -e, out=out)
            out -= ref
        else:
            np.subtract(rows, ref, out=out)
        with np.errstate(over="ignore", invalid="ignore"):  # rows far above safe centres: computed again below
            D = out @ C.T
            D *= -2.0
            D += c2
            return D, np.einsum("ij,ij->i", out, out), cen, c2.max()

    def decide(rows, e, out):
        """Labels of ``rows`` (in ``out``: their shifted copy) with the rows and the centres times ``2**-e``, and the
        rows' ``|x'|^2``: the expansion, the rows near a tie decided again by direct differences."""
        D, sq, cen, cmax = expanded(rows, e, out)
        lab = np.argmin(D, axis=1)
        if k < 2:
            return lab, sq
        # The rounding bound of one distance, with u the unit roundoff (eps / 2 of the computing dtype) and
        # gamma_d = d u / (1 - d u) <= 1.01 d u (Higham, Accuracy and Stability of Numerical Algorithms, 3.1 and
        # 3.5; any summation order, BLAS's too), and S = |x'|^2 + |c'|^2 (2|x'||c'| <= S, |x - c|^2 <= 2S):
        #   the expansion: fl(x'.c') off by gamma_d |x'||c'|, fl(|c'|^2) by gamma_d |c'|^2, the last subtraction
        #     by u (|c'|^2 + 2|x'||c'|)                                            -> 2 (gamma_d + 2u) S;
        #   the shift: x' = fl(x - ref), c' = fl(c - ref) move each entry by u of itself, so the distance by
        #     2 |x' - c'| u (|x'| + |c'|)                                          -> 4u S;
        #   the direct differences the answer is measured against: fl(x - c), squared and summed
        #                                                                          -> 2 (gamma_d + 2u) S.
        # In all 4 gamma_d + 12u <= (4.04 d + 12) u <= 6 (d + 4) u = c eps with c = 3 (d + 4) (the rest covers
        # second-order terms), |c'|^2 taken as the largest over the centres. Two centres are ordered alike by the
        # expansion and directly unless their expanded distances are within twice that: only those rows are
        # re-decided. Ordinary data have gaps far above it (it is ~1e-12 of S at d = 768): only near-ties.
        at = np.arange(rows.shape[0])
        best = D[at, lab]
        D[at, lab] = np.inf  # the runner-up is then the row's minimum
        with np.errstate(over="ignore", invalid="ignore"):  # overflowed rows (inf - inf): decided again by the caller
            bound = 3.0 * (d + 4) * np.finfo(D.dtype).eps * (sq + cmax)
            close = np.flatnonzero(D.min(axis=1) - best <= 2.0 * bound)
        if close.size:
            lab[close] = _nearest_by_differences(times_power_of_two(np.asarray(rows[close], dtype=np.float64), -e), cen)
        return lab, sq

    def own_scales(rows, out):
        """Labels of ``rows``, each row brought to unit scale with the centres by the power of two of the larger of
        its own ``max|x|`` and the centres' (rows grouped by that exponent): one stray huge row among ordinary ones
        sets only its own scale (a chunk's common exponent turned its ordinary rows subnormal: all tied, label 0)."""
        with np.errstate(invalid="ignore"):
            top = np.maximum(np.abs(rows).max(axis=1), top_centers)
        e_rows = np.frexp(np.where(np.isfinite(top), top, 1.0))[1]
        e_rows[np.abs(e_rows) <= safe] = 0
        lab = np.empty(rows.shape[0], dtype=np.intp)
        for e in np.unique(e_rows):
            which = np.flatnonzero(e_rows == e)
            lab[which] = decide(rows[which], int(e), out[:which.size])[0]
        return lab

    # The argmin is unchanged when a row and every centre are multiplied by one power of two, exactly for normal
    # numbers. Far from unit scale (|x| ~ 2**540 squares to inf, 2**-540 to 0) each row is brought to it with the
    # centres by 2**-e, e the binary exponent of the larger of its max|x| and the centres' (own_scales). With the
    # centres at a safe scale (the common case: no pass over the rows for their extremes) only rows far above it
    # can fail, their products overflowing to inf or NaN (tiny rows beside the centres are at the centres' scale):
    # only the rows whose |x'|^2 is out of range are decided again at their own scales.
    e_centers = math.frexp(top_centers)[1] if math.isfinite(top_centers) else 0
    e_centers = e_centers if abs(e_centers) > safe else 0  # the centres' own unit scale; 0 at a safe scale
    for start in range(0, n, step):
        stop = min(start + step, n)
        rows_in = X[start:stop]
        Xs = buf[:stop - start]
        if e_centers:
            labels[start:stop] = own_scales(rows_in, Xs)
            continue
        lab, sq = decide(rows_in, 0, Xs)
        odd = np.flatnonzero(~(sq <= 2.0 ** (2 * safe)))  # also inf and NaN
        if odd.size:
            lab[odd] = own_scales(np.asarray(rows_in)[odd], Xs)
        labels[start:stop] = lab
    return labels


def _nearest_by_differences(X: np.ndarray, centers: np.ndarray) -> np.ndarray:
    """Argmin over ``centers`` of ``sum((x - c)**2)`` in float64, by direct differences; chunks of ~2**22 values."""
    X = np.asarray(X, dtype=np.float64)
    centers = np.asarray(centers, dtype=np.float64)
    labels = np.empty(X.shape[0], dtype=np.intp)
    step = max(1, 2**22 // max(centers.size, 1))
    for start in range(0, X.shape[0], step):
        diff = X[start:start + step, None, :] - centers[None, :, :]
        labels[start:start + step] = np.argmin(np.einsum("rkd,rkd->rk", diff, diff), axis=1)
    return labels
