"""Internal cluster-validity indices: Calinski-Harabasz, Davies-Bouldin and Dunn.

All three take data ``X`` of shape ``(n_samples, n_features)`` and cluster ``labels`` (1-d, or a
0/1 multi-label matrix whose distinct rows are the clusters), from numpy or torch. The first
two need only the cluster centroids (O(n d)); the Dunn index needs extreme pairwise distances,
found block by block without an n x n matrix in memory.
"""

from __future__ import annotations

import numbers

import numpy as np

from isotropy._kernels.centre import distance_centre
from isotropy._kernels.clusters import (
    _certainly_degenerate,
    _check_dunn_defined,
    _dunn_slack,
    _extreme_pair,
    _pair_distance,
    _pair_ratios,
    _scalar,
    _sqrt,
    _warn_convention,
    _warn_davies_bouldin,
    _warn_if_coincident,
    _worst_partners,
)
from isotropy._kernels.silhouette import _check_n_clusters
from isotropy._utils.backend import get_namespace, is_dask, is_torch, to_output
from isotropy._utils.progress import blocks
from isotropy._utils.validation import check_labels, check_option, check_scalar, check_X

__all__ = ["calinski_harabasz_score", "davies_bouldin_score", "dunn_index"]

_METRICS = ("euclidean", "cosine")


def _validate(X, labels, caller, metric="euclidean"):
    # all three are scale-invariant; the cosine Dunn index depends on each row's direction alone
    X = check_X(X, caller=caller, rescale="directions" if metric == "cosine" else True)
    ids = check_labels(labels, n_samples=X.shape[0], caller=caller)
    n_clusters = _check_n_clusters(ids, X.shape[0], caller)
    return X, ids, n_clusters


def _work_copy(X):
    """X in float64 (float32 on MPS, which has no float64), keeping a torch graph."""
    if is_torch(X):
        import torch

        return X.to(torch.float32 if X.device.type == "mps" else torch.float64)
    return np.asarray(X, dtype=np.float64)


# bytes of one float64 row-block temporary: numpy input is read a block of rows at a time, never as a float64 copy
_BLOCK_BYTES = 1 << 24


def _block_rows(n_features):
    return max(1, _BLOCK_BYTES // (8 * n_features))


def _cluster_frame(X, ids, n_clusters, xp):
    """Cluster sizes, centroids relative to one sample, and each sample's squared distance to its centroid.

    Returns ``(counts, C, r2, owner)``: ``C[c] = μ_c − x_0`` (``x_0`` the first sample of cluster 0), ``r2`` the
    ``‖x_i − μ_{c(i)}‖²`` and ``owner`` their clusters (in an order of the samples of the function's choosing), in
    X's namespace, float64 (float32 on MPS) whatever X's dtype. Each sample is first taken from the first sample
    of its cluster, a difference that is exact for near samples (Sterbenz) and exactly 0 for a repeated one; the
    means are then taken of those offsets. The sums of the indices thus carry rounding relative to the clusters'
    spread, not to the data's offset: centroids taken as plain means lost the spread to the offset
    (Calinski-Harabasz was off by 1e-8 at an offset of 1e8, 3e-4 at 1e12), and a cluster of one repeated point had
    a spread of rounding (0.923 and 12.0 for the exact 1.0 of the convention below).

    Memory is O(n + k d): the cluster sums are segment sums (numpy: the samples sorted by cluster once, then
    ``np.add.reduceat`` over blocks of sorted rows, converted to float64 a block at a time; torch: ``index_add``,
    which keeps the graph), never an n x k one-hot matrix (8 GiB for 50,000 samples in 21,622 clusters) nor a
    float64 copy of X.
    """
    first = np.unique(np.asarray(ids), return_index=True)[1]  # each cluster's first sample (clusters 0..k-1)
    if is_torch(X):
        return _cluster_frame_torch(_work_copy(X), ids, first, n_clusters)
    n, d = X.shape
    order = np.argsort(ids, kind="stable")
    owner = ids[order]
    counts = np.bincount(ids, minlength=n_clusters).astype(np.float64)
    step = _block_rows(d)

    def offsets(start):  # x_i − x_first(c(i)) for a block of rows in cluster order, exact in float64
        rows, own = order[start:start + step], owner[start:start + step]
        D = X[rows].astype(np.float64)
        D -= X[first[own]]
        return D, own

    sums = np.zeros((n_clusters, d))
    for start in range(0, n, step):
        D, own = offsets(start)
        heads = np.flatnonzero(np.concatenate(([True], own[1:] != own[:-1])))  # a cluster's run in this block
        sums[own[heads]] += np.add.reduceat(D, heads, axis=0)
    shift = sums / counts[:, None]  # μ_c − x_first(c)
    r2 = np.empty(n)
    for start in range(0, n, step):
        D, own = offsets(start)
        D -= shift[own]
        r2[start:start + len(own)] = np.einsum("ij,ij->i", D, D)
    reps = X[first].astype(np.float64)
    return counts, (reps - reps[0:1, :]) + shift, r2, owner


def _cluster_frame_torch(Xw, ids, first, n_clusters):
    import torch

    ids_t = torch.as_tensor(ids, device=Xw.device)
    zeros = torch.zeros((n_clusters, Xw.shape[1]), dtype=Xw.dtype, device=Xw.device)
    counts = torch.zeros(n_clusters, dtype=Xw.dtype, device=Xw.device).index_add(
        0, ids_t, torch.ones(Xw.shape[0], dtype=Xw.dtype, device=Xw.device))
    reps = Xw[torch.as_tensor(first, device=Xw.device), :]
    D = Xw - reps[ids_t, :]
    shift = zeros.index_add(0, ids_t, D) / counts[:, None]  # μ_c − reps_c
    R = D - shift[ids_t, :]
    return counts, (reps - reps[0:1, :]) + shift, torch.sum(R * R, dim=1), ids_t


def _segment_sum(values, owner, n_clusters, xp):
    """Per-cluster sums of one value per sample (``owner`` its cluster), keeping a torch graph."""
    if is_torch(values):
        import torch

        return torch.zeros(n_clusters, dtype=values.dtype, device=values.device).index_add(0, owner, values)
    return np.bincount(owner, weights=values, minlength=n_clusters)


def calinski_harabasz_score(X, labels):
    r"""Calinski-Harabasz index: between- over within-cluster dispersion (higher = better separated).

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        Data, one sample per row.
    labels : array-like of shape (n_samples,) or (n_samples, n_labels)
        Cluster labels, or a 0/1 multi-label matrix whose distinct rows are the clusters;
        between 2 and ``n_samples - 1`` clusters.

    Returns
    -------
    float or torch.Tensor
        The index in ``[0, inf)``; 1.0 when every cluster is a single repeated point (as
        scikit-learn). A Python float for numpy input, a 0-dim tensor with its graph for
        torch input, float64 (float32 on MPS) whatever the input dtype: computed in float64.

    Notes
    -----
    With :math:`k` clusters of sizes :math:`n_c`, centroids :math:`\mu_c` and overall mean
    :math:`\mu`,

    .. math::

        CH = \frac{\sum_c n_c \|\mu_c - \mu\|^2 / (k - 1)}
                  {\sum_c \sum_{i \in c} \|x_i - \mu_c\|^2 / (n - k)}.

    Matches ``sklearn.metrics.calinski_harabasz_score`` to a relative 1e-10.

    References
    ----------
    .. [1] T. Calinski and J. Harabasz (1974). "A dendrite method for cluster analysis".
       Communications in Statistics 3(1), 1-27.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy import calinski_harabasz_score
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    >>> calinski_harabasz_score(X, [0, 0, 1, 1])
    200.0
    """
    if is_dask(X):  # a dask array: computed by tiles / chunk statistics on the dask scheduler
        from isotropy import distributed
        return distributed.calinski_harabasz_score(X, labels)
    X, ids, n_clusters = _validate(X, labels, "calinski_harabasz_score")
    xp = get_namespace(X)
    n = X.shape[0]
    counts, centroids, r2, _ = _cluster_frame(X, ids, n_clusters, xp)
    mean = (counts @ centroids) / n  # the overall mean, in the centroids' frame
    extra = xp.sum(counts * xp.sum((centroids - mean) ** 2, axis=1))
    intra = xp.sum(r2)
    if _scalar(intra) == 0.0:
        apart = "" if _scalar(extra) == 0.0 else ", apart from each other"
        _warn_convention("calinski_harabasz_score", f"every cluster is one point repeated{apart} (no spread within "
                                                    f"clusters)", 1.0)
        return to_output(xp.asarray(1.0, dtype=r2.dtype, device=getattr(r2, "device", None)) + 0 * intra, X)
    return to_output(extra * (n - n_clusters) / (intra * (n_clusters - 1.0)), X)


def davies_bouldin_score(X, labels):
    r"""Davies-Bouldin index: mean worst-case ratio of cluster spread to centroid distance (lower = better).

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        Data, one sample per row.
    labels : array-like of shape (n_samples,) or (n_samples, n_labels)
        Cluster labels, or a 0/1 multi-label matrix whose distinct rows are the clusters;
        between 2 and ``n_samples - 1`` clusters.

    Returns
    -------
    float or torch.Tensor
        The index in ``[0, inf)``; 0 is the best possible. 0.0 when all spreads or all centroid
        distances are (close to) zero, as in scikit-learn, but relative to the largest of them (scikit-learn's
        1e-8 is absolute, so data at 1e-9 read 0.0 there). A Python float for numpy input, a
        0-dim tensor with its graph for torch input, float64 (float32 on MPS) whatever the input dtype.

    Notes
    -----
    With :math:`s_c` the mean euclidean distance of cluster :math:`c`'s samples to its
    centroid :math:`\mu_c`,

    .. math::

        DB = \frac{1}{k} \sum_c \max_{c' \ne c} \frac{s_c + s_{c'}}{\|\mu_c - \mu_{c'}\|}

    (coinciding centroids are skipped). Matches ``sklearn.metrics.davies_bouldin_score`` to a
    relative 1e-10.

    Each cluster's worst partner :math:`c'` is found from the :math:`k \times k` Gram product of the
    centred centroids, :math:`\|\mu_c - \mu_{c'}\|^2 = q_c + q_{c'} - 2 \mu_c^\top \mu_{c'}`, a block
    of rows at a time (O(k² d) BLAS flops, memory O(k) rows of k, never the k x k matrix); every
    partner the rounding of that product leaves in doubt is then compared on its exact centroid
    difference, from which the ratio is computed.

    References
    ----------
    .. [1] D. L. Davies and D. W. Bouldin (1979). "A cluster separation measure". IEEE
       Transactions on Pattern Analysis and Machine Intelligence PAMI-1(2), 224-227.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy import davies_bouldin_score
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    >>> davies_bouldin_score(X, [0, 0, 1, 1])
    0.1
    """
    if is_dask(X):  # a dask array: computed by tiles / chunk statistics on the dask scheduler
        from isotropy import distributed
        return distributed.davies_bouldin_score(X, labels)
    X, ids, n_clusters = _validate(X, labels, "davies_bouldin_score")
    xp = get_namespace(X)
    counts, centroids, r2, owner = _cluster_frame(X, ids, n_clusters, xp)
    device = getattr(r2, "device", None)
    spread = _segment_sum(_sqrt(r2, xp), owner, n_clusters, xp) / counts
    # each cluster's worst partner from a k x k Gram product of the centroids, a block of rows at a time (never the
    # k x k distances, 20 GB for 50,000 clusters, nor a k x k x d difference); the ratio itself is then recomputed
    # from the exact centroid differences of that pair (with the graph, for torch)
    if _certainly_degenerate(centroids, spread, xp):  # before the pairs: each would be a candidate
        _warn_if_coincident(centroids, spread, xp)
        return to_output(xp.sum(spread) * 0.0, X)
    partner, largest = _worst_partners(centroids, spread, xp)
    # scikit-learn's test is absolute (every spread or every distance <= 1e-8), which made the index 0.0 for any
    # data near 1e-9 to 1e-30 (below that the data were rescaled, and the value came back): here relative to the
    # largest of them, so that the index does not depend on the scale of X (the same at unit scale)
    ref = max(_scalar(xp.max(xp.abs(spread))), largest)  # no graph: a float of the values
    if bool(xp.all(xp.abs(spread) <= 1e-8 * ref)) or largest <= 1e-8 * ref:
        if largest <= 1e-8 * ref:  # (every spread 0 beside centroids apart: 0 is the index's own limit, no warning)
            _warn_davies_bouldin()
        return to_output(xp.sum(spread) * 0.0, X)
    return to_output(xp.mean(_pair_ratios(centroids, spread, xp.arange(n_clusters, device=device), partner, xp)), X)


# ----------------------------------------------------------------------------------------------
# Dunn index


def _rows_work(X, i0, i1):
    """Rows i0:i1 of X in float64 (float32 on MPS), a block at a time: the Dunn index holds no float64 copy of X."""
    if is_torch(X):
        return _work_copy(X[i0:i1, :])
    return X[i0:i1].astype(np.float64)


class _Operands:
    """Blocks of U and q with d(x_i, x_j) = q_i + q_j - s u_i . u_j (squared euclidean: s = 2; cosine: s = 1).

    U is X centred (cosine: its rows scaled to unit length, then centred), computed block by block from X on
    demand, the same values for a row whatever the block (elementwise), instead of a float64 copy of X and one of U
    (three float64 copies of X with the checked data: 6-7x a float32 input).
    """

    def __init__(self, X, metric, xp, step):
        self.X, self.metric, self.xp = X, metric, xp
        self.s = 2.0 if metric == "euclidean" else 1.0
        n = X.shape[0]
        total = None
        if metric == "cosine" or is_torch(X):
            for i0 in range(0, n, step):
                part = xp.sum(self._directions(_rows_work(X, i0, min(n, i0 + step))), axis=0)
                total = part if total is None else total + part
            mean = total / n
        else:
            mean = np.mean(X, axis=0, dtype=np.float64)  # float64 accumulation without a float64 copy
        self.centre = distance_centre(X, mean) if metric == "euclidean" else mean  # a median where a few rows drag the mean

    def _directions(self, W):
        if self.metric == "euclidean":
            return W
        norms = self.xp.sqrt(self.xp.sum(W**2, axis=1))
        return W / self.xp.where(norms > 0, norms, self.xp.ones_like(norms))[:, None]

    def block(self, i0, i1):
        """(U[i0:i1], q[i0:i1], W[i0:i1]): W the rows in float64, whose differences give the exact distances."""
        xp = self.xp
        W = _rows_work(self.X, i0, i1)
        U = self._directions(W) - self.centre
        q = xp.sum(U**2, axis=1)
        if self.metric == "euclidean":
            return U, q, W
        zero = xp.astype(xp.sqrt(xp.sum(W**2, axis=1)) == 0, U.dtype)
        return U, (q + zero) / 2.0, W


def dunn_index(X, labels, *, metric="euclidean", chunk_size=None):
    r"""Dunn index: smallest distance between clusters over largest cluster diameter (higher = better).

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        Data, one sample per row.
    labels : array-like of shape (n_samples,) or (n_samples, n_labels)
        Cluster labels, or a 0/1 multi-label matrix whose distinct rows are the clusters;
        between 2 and ``n_samples - 1`` clusters.
    metric : {"euclidean", "cosine"}, default="euclidean"
        Distance between samples (cosine: ``1 - cos(x, y)``).
    chunk_size : int, optional
        Rows per block of the distance matrix (default 2048); memory is a few blocks.

    Returns
    -------
    float or torch.Tensor
        The index in ``[0, inf]``: ``inf`` when every cluster is a single (repeated) point and
        no two clusters share it. Where two of them do (all samples identical, for one), the
        index is 0/0 and is refused with an :class:`~isotropy.IsotropyValueError`, as
        :func:`isotropy.isoscore` refuses identical samples. Under the cosine metric a zero row is
        at distance 1 from every other row (as ``sklearn.metrics.pairwise.cosine_distances`` and
        :func:`isotropy.silhouette_score`), so all-zero data give 1.0.
        A Python float for numpy input, a 0-dim tensor (with its graph, through the two
        extreme pairs) for torch input, float64 (float32 on MPS) whatever the input dtype: the
        two pairs' distances are computed in float64.

    Notes
    -----
    .. math::

        D = \frac{\min_{c \ne c'} \min_{i \in c, j \in c'} d(x_i, x_j)}
                 {\max_c \max_{i, j \in c} d(x_i, x_j)}

    The extreme pairs are located block by block from :math:`q_i + q_j - s\,u_i^\top u_j`
    on centred data (only blocks on or above the diagonal); every pair whose product distance
    is within that product's rounding bound of the block's extreme is compared by its distance
    from the differences of its rows (one pair on most data), and the two pairs' distances are
    recomputed directly from ``X``: the value carries no cancellation error, even for tight
    clusters side by side far from the data's centre.

    References
    ----------
    .. [1] J. C. Dunn (1973). "A fuzzy relative of the ISODATA process and its use in detecting
       compact well-separated clusters". Journal of Cybernetics 3(3), 32-57.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy import dunn_index
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    >>> dunn_index(X, [0, 0, 1, 1])
    10.0
    """
    if is_dask(X):  # a dask array: computed by tiles / chunk statistics on the dask scheduler
        from isotropy import distributed
        return distributed.dunn_index(X, labels, metric=metric, chunk_size=chunk_size)
    caller = "dunn_index"
    X, ids, _ = _validate(X, labels, caller, metric)
    check_option(metric, "metric", _METRICS, caller=caller)
    check_scalar(chunk_size, "chunk_size", caller=caller, kind=numbers.Integral, low=1, allow_none=True)
    xp = get_namespace(X)
    if is_torch(X):
        import torch

        with torch.no_grad():
            inter, intra = _extreme_pairs(X.detach(), ids, metric, chunk_size, xp)
    else:
        inter, intra = _extreme_pairs(X, ids, metric, chunk_size, xp)
    # the four rows of the two pairs in float64 (float32 on MPS), not a float64 copy of X (indices mapped, equal ones
    # kept equal), with the graph for torch. A float32 tensor's pairs were recomputed from its float32 rows: the unit
    # rows' difference of nearly parallel rows cancelled in float32 (a cosine index +91 % off at an offset of 1e6)
    rows, at = np.unique(np.array([*inter, *intra]), return_inverse=True)
    Xv = _work_copy(X[torch.as_tensor(rows, device=X.device)] if is_torch(X) else X[rows])
    inter, intra = (int(at[0]), int(at[1])), (int(at[2]), int(at[3]))
    separation = _pair_distance(Xv, *inter, metric, xp)
    diameter = _pair_distance(Xv, *intra, metric, xp)
    _check_dunn_defined(_scalar(separation), _scalar(diameter), X.shape[0], metric)  # 0/0: refused
    if _scalar(diameter) == 0.0:
        return to_output(separation * 0.0 + float("inf"), X)
    return to_output(separation / diameter, X)


def _extreme_pairs(X, ids, metric, chunk_size, xp):
    """(i, j) of the closest pair in different clusters and of the farthest pair in one cluster."""
    n = X.shape[0]
    device = getattr(X, "device", None)
    b = min(n, chunk_size or 2048)
    ops = _Operands(X, metric, xp, b)
    s = ops.s
    ids_x = xp.asarray(ids, device=device) if is_torch(X) else ids
    best_inter, best_intra = (float("inf"), None), (-float("inf"), None)
    n_blocks = -(-n // b)
    advance = blocks(n_blocks * (n_blocks + 1) // 2)  # progress, when a caller asked for it
    for i0 in range(0, n, b):
        i1 = min(n, i0 + b)
        Ui, qi, Wi = ops.block(i0, i1)
        for j0 in range(i0, n, b):
            j1 = min(n, j0 + b)
            Uj, qj, Wj = (Ui, qi, Wi) if j0 == i0 else ops.block(j0, j1)
            D = qi[:, None] + qj[None, :] - s * (Ui @ Uj.T)
            same = ids_x[i0:i1, None] == ids_x[None, j0:j1]
            # the diameter is over pairs of two samples: a sample's distance to itself is 0, but the kernel reads
            # it as 1 for a zero row under the cosine metric (its +1/2 term, which makes it 1 from every other
            # row, as scikit-learn's cosine_distances), so the diagonal (i, i) was chosen as the farthest pair,
            # recomputed as 0, and the index read inf. Blocks share one size, so only i0 == j0 holds a diagonal;
            # a cluster of two or more samples always exists (at most n - 1 clusters), so a pair is always found
            pair = same if i0 != j0 else same & ~xp.eye(i1 - i0, j1 - j0, dtype=xp.bool, device=device)
            slack = _dunn_slack(qi, qj, metric, X.shape[1], xp)
            # the pairs of the smallest and largest product distances, unless rounding blurs them: then the exact
            # closest (farthest) of those it may have swapped (_extreme_pair)
            best_inter = _extreme_pair(xp.where(same, float("inf"), D), slack, best_inter, Wi, Wj, (i0, j0),
                                       metric, xp, farthest=False)
            best_intra = _extreme_pair(xp.where(pair, D, -float("inf")), slack, best_intra, Wi, Wj, (i0, j0),
                                       metric, xp, farthest=True)
            advance()
    return best_inter[1], best_intra[1]
