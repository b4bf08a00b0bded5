"""The per-layer geometry of Cai et al. (2021), computed with the library's metrics.

For one embedding space (a hidden layer, or a static embedding table): S_inter and S_intra, the
same two after per-cluster centring (K-means, k by silhouette), IsoScore before and after, and the
mean local intrinsic dimension (Levina–Bickel MLE, Euclidean and cosine distance).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

__all__ = ["DEFAULT_METRICS", "METRIC_LABELS", "pc1_frequency_rho", "space_metrics", "static_space"]

DEFAULT_METRICS = {
    "intra_max_instances": 1000,  # S_intra: up to 1,000 instances per type (Cai et al.)
    "n_neighbors": 100,  # LID: 100 neighbours (Cai et al.)
    "k_range": [2, 15],  # K-means k chosen by silhouette in 2..15
    "min_silhouette": 0.1,  # best silhouette below this: one cluster
    "silhouette_sample_size": 5000,
    "n_init": 3,
}

# result key -> column label (the Markdown table and the figures)
METRIC_LABELS = {
    "s_inter": "S_inter",
    "s_intra": "S_intra",
    "n_clusters": "k",
    "silhouette": "silhouette",
    "s_inter_centered": "S_inter (cluster-centred)",
    "s_intra_centered": "S_intra (cluster-centred)",
    "isoscore": "IsoScore",
    "isoscore_centered": "IsoScore (cluster-centred)",
    "lid_euclidean": "LID (euclidean)",
    "lid_cosine": "LID (cosine)",
}


def _mean_finite(values) -> float:
    values = np.asarray(values, dtype=np.float64)
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else math.nan


def _intra(X, type_ids, max_instances, seed) -> float:
    if np.bincount(type_ids).max() < 2:  # one instance per type (a static table): S_intra is undefined
        return math.nan
    from isotropy import intra_type_cosine

    return intra_type_cosine(X, type_ids, max_instances=max_instances, random_state=seed)


def space_metrics(X, type_ids, *, seed: int = 0, intra_max_instances: int | None = 1000, n_neighbors: int = 100,
                  k_range=(2, 15), min_silhouette: float = 0.1, silhouette_sample_size: int | None = 5000,
                  n_init: int = 3, return_labels: bool = False):
    """All the per-layer numbers of one space.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        One row per token (or per type for a static table).
    type_ids : ndarray of shape (n_samples,)
        Word type of every row.
    seed : int
        Seeds the instance draws of S_inter / S_intra and K-means.
    intra_max_instances, n_neighbors, k_range, min_silhouette, silhouette_sample_size, n_init
        See :data:`DEFAULT_METRICS`.
    return_labels : bool
        Also return the cluster of every row.

    Returns
    -------
    metrics : dict
        ``n``, ``d``, ``n_types``, ``n_distinct`` (distinct rows), ``lid_n_neighbors`` and the keys of
        :data:`METRIC_LABELS`; ``s_intra`` is NaN when no type has two instances; LIDs are the mean
        over points with a finite estimate, copies of a row sharing its value (``n_neighbors`` is
        capped at ``n_distinct - 1``).
    labels : ndarray of shape (n_samples,), only with ``return_labels=True``

    Notes
    -----
    S_inter = E_{i≠j} cos(φ(t_i), φ(t_j)) over types, one random instance φ(t) per type;
    S_intra = E_i E_{k≠l} cos(φ_k(t_i), φ_l(t_i)) over the instances of each type. "Cluster-centred"
    values use x − μ_{c(x)}, μ_c the mean of x's K-means cluster. Cosine LID is the Levina–Bickel
    MLE on the distance 1 − cos.

    References
    ----------
    Cai, X., Huang, J., Bian, Y. and Church, K. (2021). Isotropy in the contextual embedding space:
    clusters and manifolds. ICLR 2021.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.vstack([np.eye(6), -np.eye(6)])  # ± the basis vectors: covariance ∝ identity
    >>> m = space_metrics(X, np.arange(12), n_neighbors=5, k_range=(2, 4))  # at least 3 points a cluster
    >>> round(m["isoscore"], 6), m["n_clusters"], round(m["s_inter"], 4)  # S_inter = -1/11
    (1.0, 1, -0.0909)
    """
    from isotropy import inter_type_cosine, isoscore, local_mle_dimension
    from isotropy.metrics.dimension import distinct_points
    from isotropy.transforms import ClusterCentering

    X = np.asarray(X, dtype=np.float64)
    type_ids = np.asarray(type_ids)
    n, d = X.shape
    out = {"n": int(n), "d": int(d), "n_types": int(np.unique(type_ids).size)}
    out["s_inter"] = inter_type_cosine(X, type_ids, random_state=seed)
    out["s_intra"] = _intra(X, type_ids, intra_max_instances, seed)
    cc = ClusterCentering(n_clusters="auto", k_range=tuple(k_range), min_silhouette=min_silhouette, n_init=n_init,
                          silhouette_sample_size=silhouette_sample_size, random_state=seed)
    with warnings.catch_warnings():  # one cluster is this table's n_clusters = 1, with its silhouette: not said again
        warnings.filterwarnings("ignore", message="ClusterCentering took the data as one cluster", category=UserWarning)
        Xc = cc.fit_transform(X)
    out["n_clusters"] = int(cc.n_clusters_)
    out["silhouette"] = max(cc.silhouette_scores_.values()) if cc.silhouette_scores_ else math.nan
    out["s_inter_centered"] = inter_type_cosine(Xc, type_ids, random_state=seed)
    out["s_intra_centered"] = _intra(Xc, type_ids, intra_max_instances, seed)
    out["isoscore"] = isoscore(X)
    out["isoscore_centered"] = isoscore(Xc)
    # identical rows (e.g. the same word at the same position in layer 0) count once in the LID, and under the
    # cosine metric so do rows parallel to another (one direction, two norms): k stays below each metric's count
    out["n_distinct"] = int(np.unique(X, axis=0).shape[0])
    k = out["lid_n_neighbors"] = int(min(n_neighbors, out["n_distinct"] - 1))
    with warnings.catch_warnings():  # duplicates are merged; equidistant neighbourhoods give inf, left out
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        for metric in ("euclidean", "cosine"):
            k_metric = k if metric == "euclidean" else int(min(k, distinct_points(X, metric=metric) - 1))
            if k_metric != k:  # recorded where it differs from the euclidean k
                out[f"lid_n_neighbors_{metric}"] = k_metric
            out[f"lid_{metric}"] = _mean_finite(local_mle_dimension(X, n_neighbors=k_metric, metric=metric)) \
                if k_metric >= 2 else math.nan
    out = {key: (float(v) if isinstance(v, (float, np.floating)) else v) for key, v in out.items()}
    return (out, cc.labels_) if return_labels else out


def pc1_frequency_rho(X, frequency) -> float:
    """|Spearman ρ| between the first principal component of ``X`` and the corpus frequency of each row's word.

    Cai et al. (2021, Section 4) see contextual tokens lie on a manifold ordered by word frequency;
    this is the one-number version of their frequency-coloured PCA pictures. The sign of a principal
    component is arbitrary, so the absolute value is returned (ranks make log frequency and frequency
    the same). NaN when the frequencies or the projections are all equal.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.arange(1.0, 50.0)
    >>> X = np.c_[t, np.sin(t) * 0.01]  # spread along the first axis, in order of frequency
    >>> round(pc1_frequency_rho(X, 1000 - t), 6)
    1.0
    """
    from scipy.stats import spearmanr

    X = np.asarray(X, dtype=np.float64)
    frequency = np.asarray(frequency, dtype=np.float64)
    centred = X - X.mean(axis=0)
    _, vectors = np.linalg.eigh(centred.T @ centred)
    pc1 = centred @ vectors[:, -1]
    if np.ptp(frequency) == 0 or np.ptp(pc1) == 0:
        return math.nan
    return float(abs(spearmanr(pc1, frequency).statistic))


def static_space(types, *, vectors="glove-6b-50d", lowercase: bool = True):
    """Rows of a static embedding table for the given word types (the corpus vocabulary).

    Returns ``(X, words)`` with one row per distinct (lower-cased) type found in the table.
    """
    from isotropy.io.word_vectors import packaged_glove, read_word_vectors

    words, table = packaged_glove() if vectors == "glove-6b-50d" else read_word_vectors(vectors)
    index = {w: i for i, w in enumerate(words)}
    wanted = dict.fromkeys(t.lower() if lowercase else t for t in types)
    found = [w for w in wanted if w in index]
    if len(found) < 3:
        raise ValueError(f"Only {len(found)} corpus word types are in the static vectors {vectors!r}; "
                         f"expected at least 3.")
    return table[[index[w] for w in found]].astype(np.float64), found
