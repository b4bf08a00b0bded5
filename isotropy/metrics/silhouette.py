"""Exact silhouette coefficients, computed blockwise without an n x n distance matrix.

The silhouette of sample ``i`` in cluster ``C`` compares its mean distance to the other
members of ``C`` with its mean distance to the nearest other cluster. Everything the
coefficient needs is the table ``S[i, c] = sum_{j in c} d(x_i, x_j)`` of per-cluster distance
sums. We build ``S`` from square blocks of the distance matrix: a block is one matrix
product (the squared distances come out of the product directly, by augmenting the centred
operands with their squared norms), a clip and a square root. The distance matrix is
symmetric, so only the blocks on and above the diagonal are formed, and each off-diagonal
block serves both its rows and (transposed) its columns. Memory is a few blocks plus one
copy of the data.

numpy input (and CPU tensors, which share memory with numpy) runs on numpy, one worker
thread per core, each forming whole blocks with single-threaded BLAS; with the samples
sorted by cluster the per-cluster sums of a block are segmented row and column sums. Tensors on other devices run on torch, on their
own device, detached and without a graph; their per-cluster sums are a float64 product with
the one-hot label matrix.
"""

from __future__ import annotations

import numbers

import numpy as np

from isotropy._kernels.centre import distance_centre
from isotropy._kernels.silhouette import (
    _NEAR,
    _TOLERANCE,
    DIAGONAL_ROWS,
    _augmented_numpy,
    _BlockKernel,
    _check_n_clusters,
    _coefficients_numpy,
    _exact_sums,
    _resolution,
    _rounding_factor,
    _run_tasks,
    _sample_indices,
    _uncertain_numpy,
    duplicate_groups,
    exact_resolution,
    sampled_ids,
)
from isotropy._utils.backend import is_dask, is_torch
from isotropy._utils.validation import (
    check_labels,
    check_option,
    check_scalar,
    check_X,
)

__all__ = ["silhouette_samples", "silhouette_score"]

_METRICS = ("euclidean", "cosine")
_DEFAULT_CHUNK = 2048  # rows per block on CPU: a 2048 x 2048 float32 block is 16 MiB
_DEFAULT_CHUNK_ACCEL = 8192  # on GPUs larger blocks keep the device busy
_SUMS_BUDGET = 256 * 2**20  # bytes for the (n_samples, n_clusters) float64 table of cluster sums


# ----------------------------------------------------------------------------------------------
# validation shared by the public functions


def _validate(X, labels, metric, chunk_size, caller):
    # the silhouette is scale-invariant; the cosine one depends on each row's direction alone
    check_option(metric, "metric", _METRICS, caller=caller)  # first: X's rescaling depends on it
    X = check_X(X, caller=caller, rescale="directions" if metric == "cosine" else True)
    ids = check_labels(labels, n_samples=X.shape[0], caller=caller)
    check_scalar(chunk_size, "chunk_size", caller=caller, kind=numbers.Integral, low=1, allow_none=True)
    return X, ids


def _silhouette_numpy(X, ids, n_clusters, metric, chunk_size):
    """Silhouette coefficients from the per-cluster sums S[i, c] = sum_{j in c} d(x_i, x_j) (float64).

    The samples are processed sorted by cluster, so that the per-cluster sums of a block are
    sums over contiguous column ranges (``np.add.reduceat``) and contiguous row ranges. Only
    blocks (I, J) with I <= J are formed, each feeding S for rows I and (transposed) rows J, a
    diagonal block as its smaller blocks on and above its diagonal (``DIAGONAL_ROWS`` rows: its pairs
    once); when the n x n_clusters table S itself would be large (many clusters), row panels of S are
    completed one at a time instead, forming every block. Blocks are spread over one worker
    thread per core, each with single-threaded BLAS and its own buffers (numpy releases the
    GIL), which also runs the element-wise work in parallel.
    """
    n = X.shape[0]
    dtype = np.float64 if X.dtype == np.float64 else np.float32
    order = np.argsort(ids, kind="stable")
    groups = duplicate_groups(X) if metric == "euclidean" else None  # cosine: a duplicate's error is δ, not √δ
    kernel = _BlockKernel(_augmented_numpy(X, metric, dtype, order), ids[order], n_clusters, metric,
                          min(n, chunk_size or _DEFAULT_CHUNK), duplicates=None if groups is None else groups[order])
    starts = range(0, n, kernel.b)
    resolution = _resolution(kernel.R[:, -1].astype(np.float64), kernel.sorted_ids, n_clusters, kernel.R.dtype,
                             kernel.d, metric)
    s_sorted = np.empty(n, dtype=np.float64)
    if n * n_clusters * 8 <= _SUMS_BUDGET:
        tables = []

        def pair(i0, j0, state):
            if "sums" not in state:
                state["sums"] = np.zeros((n, n_clusters), dtype=np.float64)
                tables.append(state["sums"])
            if i0 == j0:  # a diagonal block: its pairs once, in smaller blocks on and above its diagonal
                kernel.add_span((i0, min(n, i0 + kernel.b)), None, state["sums"], size=DIAGONAL_ROWS, state=state)
            else:
                kernel.add_block(i0, j0, state, state["sums"], symmetric=True)

        _run_tasks(pair, [(i0, j0) for i0 in starts for j0 in starts if j0 >= i0], progress=True)
        sums = tables[0]
        for other in tables[1:]:
            sums += other
        s_sorted = _coefficients_numpy(sums, kernel.sorted_ids, kernel.counts, resolution)
        uncertain = _uncertain_numpy(sums, kernel.sorted_ids, kernel.counts, resolution, dtype)
    else:
        uncertain = np.zeros(n, dtype=bool)

        def panel(i0, state):
            i1 = min(n, i0 + kernel.b)
            sums = np.zeros((i1 - i0, n_clusters), dtype=np.float64)
            for j0 in starts:
                kernel.add_block(i0, j0, state, sums, symmetric=False)
            s_sorted[i0:i1] = _coefficients_numpy(sums, kernel.sorted_ids[i0:i1], kernel.counts,
                                                    resolution.rows(i0, i1))
            uncertain[i0:i1] = _uncertain_numpy(sums, kernel.sorted_ids[i0:i1], kernel.counts, resolution.rows(i0, i1),
                                                dtype)

        _run_tasks(panel, [(i0,) for i0 in starts], progress=True)
    positions = np.flatnonzero(uncertain)
    if positions.size:  # clusters much closer to each other than to the centre: these samples from differences
        sums = _exact_sums(X, ids, order[positions], metric)
        s_sorted[positions] = _coefficients_numpy(sums, kernel.sorted_ids[positions], kernel.counts,
                                                  exact_resolution(metric, X.shape[1]))
    s = np.empty(n, dtype=np.float64)
    s[order] = s_sorted
    return s


# ----------------------------------------------------------------------------------------------
# the same in torch, on the tensor's device


def _cluster_sums_torch(X, ids, n_clusters, metric, chunk_size):
    import torch

    device = X.device
    n, d = X.shape
    dtype = torch.float64 if X.dtype == torch.float64 else torch.float32
    acc = torch.float32 if device.type == "mps" else torch.float64  # MPS has no float64
    U = X.detach().to(acc)
    zero = 0.0
    if metric == "cosine":
        norms = U.pow(2).sum(dim=1).sqrt()
        U = U / torch.where(norms > 0, norms, torch.ones_like(norms))[:, None]
        zero = (norms == 0).to(acc)
    # euclidean: a median where a few rows of huge norm drag the mean (_kernels.centre)
    U = (U - (distance_centre(U, U.mean(dim=0)) if metric == "euclidean" else U.mean(dim=0))).to(dtype)
    q = U.to(acc).pow(2).sum(dim=1)
    q = q if metric == "euclidean" else (q + zero) / 2.0
    R = torch.cat([U, torch.ones(n, 1, dtype=dtype, device=device), q.to(dtype)[:, None]], dim=1)
    del U
    ids_t = torch.as_tensor(ids, device=device)
    groups = _duplicate_groups_torch(X) if metric == "euclidean" else None  # as the numpy kernel's (_BlockKernel)
    onehot = torch.zeros(n, n_clusters, dtype=acc, device=device)
    onehot[torch.arange(n, device=device), ids_t] = 1.0
    sums = torch.zeros(n, n_clusters, dtype=acc, device=device)
    # rows with another row within _NEAR rounding bounds (as _BlockKernel): NaN sums, hence recomputed from differences
    near = torch.zeros(n, dtype=torch.bool, device=device) if metric == "euclidean" else None
    near_factor = _NEAR * _rounding_factor(np.float64 if dtype == torch.float64 else np.float32, d)
    b = min(n, chunk_size or (_DEFAULT_CHUNK if device.type == "cpu" else _DEFAULT_CHUNK_ACCEL))
    for i0 in range(0, n, b):
        i1 = min(n, i0 + b)
        L = torch.cat([R[i0:i1, :d] * (-2.0 if metric == "euclidean" else -1.0), R[i0:i1, d + 1:], R[i0:i1, d:d + 1]],
                      dim=1)
        for j0 in range(i0, n, b):
            j1 = min(n, j0 + b)
            D = L @ R[j0:j1].T
            equal = None
            if groups is not None:  # equal rows at distance 0 exactly, as the diagonal
                gi, gj = groups[i0:i1, None], groups[None, j0:j1]
                equal = (gi == gj) & (gi >= 0)
            if metric == "euclidean":
                D.clamp_(min=0.0)
                hit = D < (near_factor * q[i0:i1]).to(dtype)[:, None] + (near_factor * q[j0:j1]).to(dtype)[None, :]
                if i0 == j0:
                    hit.diagonal().zero_()
                if equal is not None:
                    hit &= ~equal
                near[i0:i1] |= hit.any(dim=1)
                near[j0:j1] |= hit.any(dim=0)
                D.sqrt_()
            else:
                D.clamp_(0.0, 2.0)
            if i0 == j0:
                D.diagonal().zero_()
            if equal is not None:
                D.masked_fill_(equal, 0.0)
            D = D.to(acc)  # per-cluster sums of thousands of terms: in float64 (cheap next to L @ R.T)
            sums[i0:i1] += D @ onehot[j0:j1]
            if j0 != i0:
                sums[j0:j1] += D.T @ onehot[i0:i1]
    if near is not None:
        sums[near] = float("nan")
    return sums, R[:, d + 1].to(acc)


def _duplicate_groups_torch(X):
    """:func:`isotropy._kernels.silhouette.duplicate_groups` on the tensor's device: per row, the number of its group
    of equal rows, -1 for a row equal to no other; None when no two rows are equal.

    Candidates are the rows equal to another on 16 evenly spaced columns (``torch.unique`` over those entries: a
    comparison, no arithmetic whose rounding could tell equal rows apart, as a sum's reduction order may on a GPU),
    then ``torch.unique`` over the candidate rows compares them entry by entry (``-0.0`` equals ``0.0`` there: those
    rows are at distance 0 too).
    """
    import torch

    n, d = X.shape
    rows = X.detach()
    columns = torch.as_tensor(np.unique(np.linspace(0, d - 1, min(d, 16)).astype(np.int64)), device=rows.device)
    _, inverse, counts = torch.unique(rows[:, columns], dim=0, return_inverse=True, return_counts=True)
    candidates = (counts[inverse] > 1).nonzero().flatten()
    if not candidates.numel():
        return None
    _, inverse, counts = torch.unique(rows[candidates], dim=0, return_inverse=True, return_counts=True)
    if not bool((counts > 1).any()):
        return None
    groups = torch.full((n,), -1, dtype=torch.int64, device=rows.device)
    groups[candidates] = torch.where(counts[inverse] > 1, inverse, torch.full_like(inverse, -1))
    return groups


def _resolution_torch(q, ids, n_clusters, X, metric):
    """:func:`_resolution` for the torch kernel (its operands are float32 unless ``X`` is float64): per sample,
    ``(resolution to its own cluster, resolution to every cluster)`` as a function of the cluster."""
    import torch

    dtype = np.float64 if X.dtype == torch.float64 else np.float32
    factor = _rounding_factor(dtype, X.shape[1])
    ids_t = torch.as_tensor(ids, device=q.device)
    counts = torch.bincount(ids_t, minlength=n_clusters).clamp(min=1).to(q.dtype)
    q_mean = torch.zeros(n_clusters, dtype=q.dtype, device=q.device).index_add_(0, ids_t, q) / counts

    def at(clusters):
        error = factor * (q + q_mean[clusters])
        return error.sqrt() if metric == "euclidean" else error

    def error(clusters, mean):  # as Resolution.error
        error = factor * (q + q_mean[clusters])
        return error if metric == "cosine" else error / torch.maximum(2.0 * mean, error.sqrt())

    at.error = error
    return at


# ----------------------------------------------------------------------------------------------
# from the sums to the coefficients (any namespace with numpy-like semantics)


def _mean_distances_torch(sums, ids_t, counts):
    import torch

    rows = torch.arange(sums.shape[0], device=sums.device)
    a = sums[rows, ids_t] / (counts[ids_t] - 1.0)
    means = sums / counts
    means[rows, ids_t] = float("inf")
    b, nearest = means.min(dim=1)
    return torch.clamp(a, min=0.0), torch.clamp(b, min=0.0), nearest  # as _mean_distances: NaN kept


def _coefficients_torch(sums, ids, resolution, counts=None):
    """s_i from the cluster sums of rows i; ``counts`` the cluster sizes (default: those of ``ids``)."""
    import torch

    ids_t = torch.as_tensor(ids, device=sums.device)
    if counts is None:
        counts = torch.bincount(ids_t, minlength=sums.shape[1]).to(sums.dtype)
    a, b, nearest = _mean_distances_torch(sums, ids_t, counts)
    s = (b - a) / torch.maximum(a, b)
    s = torch.where((a <= resolution(ids_t)) & (b <= resolution(nearest)), torch.zeros_like(s), s)  # see _resolution
    return torch.nan_to_num(s, nan=0.0, posinf=0.0, neginf=0.0)


def _uncertain_torch(sums, ids, resolution, dtype):
    """:func:`isotropy._kernels.silhouette._uncertain_numpy` for the torch kernel: the rows to recompute."""
    import torch

    ids_t = torch.as_tensor(ids, device=sums.device)
    counts = torch.bincount(ids_t, minlength=sums.shape[1]).to(sums.dtype)
    a, b, nearest = _mean_distances_torch(sums, ids_t, counts)
    estimate = (resolution.error(ids_t, a) + resolution.error(nearest, b)) / torch.clamp(torch.maximum(a, b), min=0.0)
    return ((counts[ids_t] > 1) & ~(estimate <= _TOLERANCE[np.dtype(dtype)])).nonzero().flatten()


def _exact_sums_torch(X, ids, rows, metric, *, block=4096, rows_at_once=256):
    """:func:`isotropy._kernels.silhouette._exact_sums` on the tensor's device: float64 cluster sums of the samples
    ``rows`` (a tensor of row numbers) from coordinate differences (``torch.cdist`` without its matrix-product
    shortcut; float32 on MPS, which has no float64)."""
    import torch

    device = X.device
    acc = torch.float32 if device.type == "mps" else torch.float64
    n = X.shape[0]
    ids_t = torch.as_tensor(ids, device=device)
    n_clusters = int(ids_t.max()) + 1

    def prepared(R):
        U = R.detach().to(acc)
        if metric == "euclidean":
            return U, None
        norms = U.pow(2).sum(dim=1).sqrt()
        return U / torch.where(norms > 0, norms, torch.ones_like(norms))[:, None], (norms == 0).to(acc)

    sums = torch.zeros(rows.numel(), n_clusters, dtype=acc, device=device)
    for i0 in range(0, rows.numel(), rows_at_once):
        mine = rows[i0:i0 + rows_at_once]
        A, zero_a = prepared(X[mine])
        for j0 in range(0, n, block):
            j1 = min(n, j0 + block)
            B, zero_b = prepared(X[j0:j1])
            D = torch.cdist(A, B, compute_mode="donot_use_mm_for_euclid_dist")
            if metric == "cosine":
                D = (D.pow(2) / 2.0 + (zero_a[:, None] + zero_b[None, :]) / 2.0).clamp_(0.0, 2.0)
            D[mine[:, None] == torch.arange(j0, j1, device=device)] = 0.0  # d(x, x) = 0 (a zero row reads 1 above)
            sums[i0:i0 + mine.numel()].index_add_(1, ids_t[j0:j1], D)
    counts = torch.bincount(ids_t, minlength=n_clusters).to(acc)
    floor = exact_resolution(metric, X.shape[1], np.float64 if acc == torch.float64 else np.float32).floor
    return sums, counts, lambda clusters: torch.full(clusters.shape, floor, dtype=acc, device=device)


def _silhouette_torch(X, ids, n_clusters, metric, chunk_size):
    """The coefficients of a tensor on its device (the GPU path; CPU tensors take the numpy kernel)."""
    import torch

    precision = torch.get_float32_matmul_precision()
    try:  # TF32 / bfloat16 products would cost ~3 digits of every distance
        torch.set_float32_matmul_precision("highest")
        with torch.no_grad():
            sums, q = _cluster_sums_torch(X, ids, n_clusters, metric, chunk_size)
            resolution = _resolution_torch(q, ids, n_clusters, X, metric)
            s = _coefficients_torch(sums, ids, resolution)
            rows = _uncertain_torch(sums, ids, resolution, np.float64 if X.dtype == torch.float64 else np.float32)
            if rows.numel():  # clusters much closer to each other than to the centre: around their own centre
                exact, counts, local = _exact_sums_torch(X, ids, rows, metric)
                s[rows] = _coefficients_torch(exact, ids[rows.cpu().numpy()], local, counts=counts).to(s.dtype)
    finally:
        torch.set_float32_matmul_precision(precision)
    return s


def _silhouette(X, ids, metric, chunk_size, caller):
    """Coefficients in float64 (float32 on MPS): a numpy array, or a tensor on X's device."""
    n_clusters = _check_n_clusters(ids, X.shape[0], caller)
    if is_torch(X) and X.device.type == "cpu":  # CPU tensors share memory with numpy: use the CPU path
        import torch

        Xn = X.detach()
        Xn = (Xn if Xn.dtype in (torch.float32, torch.float64) else Xn.float()).numpy()
        return torch.from_numpy(_silhouette_numpy(Xn, ids, n_clusters, metric, chunk_size))
    if is_torch(X):
        return _silhouette_torch(X, ids, n_clusters, metric, chunk_size)
    return _silhouette_numpy(X, ids, n_clusters, metric, chunk_size)


# ----------------------------------------------------------------------------------------------
# public API


def silhouette_samples(X, labels, *, metric="euclidean", chunk_size=None):
    r"""Silhouette coefficient of every sample, exact, in blocks (no n x n matrix in memory).

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        Data, one sample per row. A torch tensor is processed on its own device, detached.
    labels : array-like of shape (n_samples,) or (n_samples, n_labels)
        Cluster labels, or a 0/1 multi-label indicator matrix in which each distinct label
        vector is one cluster (Mickus et al., 2024). There must be between 2 and
        ``n_samples - 1`` clusters.
    metric : {"euclidean", "cosine"}, default="euclidean"
        Distance between samples. ``"cosine"`` is ``1 - cos(x, y)``; a zero vector is at
        distance 1 from every other sample.
    chunk_size : int, optional
        Rows per block of the distance matrix. Extra memory is about one block per CPU core
        plus one copy of ``X``; the default (2048 on CPU, 8192 on accelerators) keeps it
        under ~150 MiB on CPU for 20,000 x 768 float32 data.

    Returns
    -------
    numpy.ndarray or torch.Tensor of shape (n_samples,)
        Coefficients in ``[-1, 1]``; float64 for numpy input; on the input's device for torch input:
        float32 for float16, bfloat16 and integer tensors (computed in float32), else the input's
        dtype.

    Notes
    -----
    With :math:`C(i)` the cluster of sample :math:`i` and :math:`d` the distance,

    .. math::

        a_i = \frac{1}{|C(i)| - 1} \sum_{j \in C(i)} d(x_i, x_j), \qquad
        b_i = \min_{C \ne C(i)} \frac{1}{|C|} \sum_{j \in C} d(x_i, x_j), \qquad
        s_i = \frac{b_i - a_i}{\max(a_i, b_i)},

    and :math:`s_i = 0` when :math:`i` is alone in its cluster (the conventions of
    scikit-learn, whose ``silhouette_samples`` this matches to 1e-10 in float64). Euclidean
    distances come from :math:`\|x\|^2 + \|y\|^2 - 2 x^\top y` on centred data (which keeps
    the float32 cancellation error small); cluster sums are accumulated in float64. float32
    input is computed in float32 (results within 1e-4 of the float64 values, far closer on
    ordinary data: a sample whose estimated error exceeds 1e-4 is recomputed in float64); float64
    in float64.

    References
    ----------
    .. [1] P. J. Rousseeuw (1987). "Silhouettes: a graphical aid to the interpretation and
       validation of cluster analysis". Journal of Computational and Applied Mathematics 20,
       53-65.
    .. [2] T. Mickus, S.-A. Grönroos, J. Attieh (2024). "Isotropy, Clusters, and Classifiers".
       ACL 2024.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy import silhouette_samples
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    >>> silhouette_samples(X, [0, 0, 1, 1]).round(4)
    array([0.9002, 0.9002, 0.9002, 0.9002])
    """
    if is_dask(X):  # a dask array: computed by tiles / chunk statistics on the dask scheduler
        from isotropy import distributed
        return distributed.silhouette_samples(X, labels, metric=metric, chunk_size=chunk_size)
    caller = "silhouette_samples"
    X, ids = _validate(X, labels, metric, chunk_size, caller)
    s = _silhouette(X, ids, metric, chunk_size, caller)
    return s.to(X.dtype) if is_torch(X) else s


def silhouette_score(X, labels, *, metric="euclidean", sample_size=None, random_state=None, chunk_size=None):
    r"""Mean silhouette coefficient over the samples (1 = compact, separated clusters).

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        Data, one sample per row. A torch tensor is processed on its own device, detached.
    labels : array-like of shape (n_samples,) or (n_samples, n_labels)
        Cluster labels, or a 0/1 multi-label indicator matrix in which each distinct label
        vector is one cluster. There must be between 2 and ``n_samples - 1`` clusters (in
        the subsample, when ``sample_size`` is given).
    metric : {"euclidean", "cosine"}, default="euclidean"
        Distance between samples.
    sample_size : int, optional
        Compute the score on this many samples drawn without replacement (all samples when
        None or at least ``n_samples``, as scikit-learn), at least 3 (a silhouette needs two
        clusters, one of two samples or more).
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Chooses the subsample when ``sample_size`` is given. The subset is
        ``random_state.permutation(n_samples)[:sample_size]``; an int seed builds a
        ``numpy.random.RandomState`` first, so an int or a RandomState selects exactly the
        samples that ``sklearn.metrics.silhouette_score`` selects with the same argument.
    chunk_size : int, optional
        Rows per block of the distance matrix, as in :func:`silhouette_samples` (on a dask array:
        rows per tile); the value does not depend on it.

    Returns
    -------
    float or torch.Tensor
        The score in ``[-1, 1]``: 1 for compact, well separated clusters, near 0 for
        overlapping clusters, negative when samples sit nearer another cluster than their own.
        A Python float for numpy input; a 0-dim tensor on the input's device (no graph) for
        torch input.

    Notes
    -----
    The mean of :func:`silhouette_samples`, :math:`\frac{1}{n} \sum_i s_i`, computed exactly
    in :math:`O(n^2 d)` time and :math:`O(n d)` memory. Matches
    ``sklearn.metrics.silhouette_score`` to 1e-10 in float64.

    References
    ----------
    .. [1] P. J. Rousseeuw (1987). "Silhouettes: a graphical aid to the interpretation and
       validation of cluster analysis". Journal of Computational and Applied Mathematics 20,
       53-65.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy import silhouette_score
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    >>> round(silhouette_score(X, [0, 0, 1, 1]), 4)
    0.9002
    >>> round(silhouette_score(X, [0, 1, 0, 1]), 4)
    -0.4475
    """
    if is_dask(X):  # a dask array: computed by tiles / chunk statistics on the dask scheduler
        from isotropy import distributed
        return distributed.silhouette_score(X, labels, metric=metric, sample_size=sample_size, random_state=random_state,
                                            chunk_size=chunk_size)
    caller = "silhouette_score"
    X, ids = _validate(X, labels, metric, chunk_size, caller)
    if sample_size is not None:
        # more than the rows: every row, permuted as scikit-learn permutes them (its permutation(n)[:sample_size])
        check_scalar(sample_size, "sample_size", caller=caller, kind=numbers.Integral, low=3, allow_none=True)
        n = X.shape[0]
        indices = _sample_indices(n, min(int(sample_size), n), random_state, caller)
        if is_torch(X):
            import torch

            X = X[torch.as_tensor(indices, device=X.device)]
        else:
            X = X[indices]
        ids = sampled_ids(ids, indices, n, caller)
    s = _silhouette(X, ids, metric, chunk_size, caller)
    if is_torch(X):
        return s.mean().to(X.dtype)
    return float(np.mean(s))
