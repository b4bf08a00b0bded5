"""I(W), the partition-function isotropy measure of Mu & Viswanath (2018), computed in log space."""

from __future__ import annotations

import math

import numpy as np

from isotropy._utils.backend import is_dask, is_torch, to_output, without_autocast
from isotropy._utils.magnitude import extremes, refuse_partition_all_zero, rescaled
from isotropy._utils.magnitude import refuse_partition_overflow as _refuse_overflow
from isotropy._utils.validation import check_X, refuse_subnormal_as_given

__all__ = ["partition_isotropy"]


# Float64 entries of a worker's chunk and of its projections, each, on the numpy path (512 KiB: in cache), and never
# fewer rows than _CHUNK_ROWS. Small on purpose: with 4 MiB chunks the default table's peak, reached later in its
# neighbour search, was higher, though the buffers are freed when I(W) ends (why is not established: giving freed
# memory back with malloc_trim did not lower it; docs/benchmarks.md, "The default table's memory"). The rows'
# floor: each chunk is one product with the d x d eigenvectors, which BLAS reads and packs again for every chunk; at
# d = 2048 and more, chunks of 512 KiB (32 rows and fewer) made I(W) markedly slower in a review's measurement, and
# 128 rows is what the 4 MiB chunks before held at d = 4096 (the d x d eigenvectors dominate the memory there)
_CHUNK_ELEMENTS = 1 << 16
_CHUNK_ROWS = 128
_ONE_THREAD_EIGH = 1024  # largest n_features whose eigenvectors are found on one BLAS thread


def _logsumexp_columns(P):
    """log Σᵢ exp(Pᵢⱼ) for each column j, stable for large entries."""
    if is_torch(P):
        import torch

        return torch.logsumexp(P, dim=0)
    top = P.max(axis=0)
    with np.errstate(over="ignore"):
        return top + np.log(np.exp(P - top).sum(axis=0))


# Eigenvalues closer than this many float epsilons of the largest leave their eigenvectors undetermined (a
# symmetric eigensolver's eigenvectors are accurate to about eps·λ_max / gap): the gradient then holds the basis fixed.
_UNDETERMINED_GAP = 1e3


def _undetermined(lam) -> bool:
    """Whether two non-zero eigenvalues (ascending) are too close for their eigenvectors, hence eigh's gradient, to exist."""
    import torch

    if lam.numel() < 2:
        return False
    tol = _UNDETERMINED_GAP * torch.finfo(lam.dtype).eps * lam.abs().max()
    # ties among the zero eigenvalues do not count: every row projects to 0 on any basis of their space
    return bool(((lam[1:] - lam[:-1] <= tol) & (lam[1:] > tol)).any())


def _eigh(A):
    """``torch.linalg.eigh(A)`` whose backward leaves out the rotations within a block of tied eigenvalues.

    eigh's gradient divides by the gaps between eigenvalues: two zero ones (two dead columns of ``X``, rows that
    span fewer dimensions than the Gram matrix has) made every entry of I(W)'s gradient NaN (a user trial), although
    the value does not depend on the basis of their space (every row projects to 0 on it). The rotations between
    distinct eigenvalues are kept, so the gradient is exact there.
    """
    import torch

    class SafeEigh(torch.autograd.Function):
        @staticmethod
        def forward(ctx, matrix):
            lam, vectors = torch.linalg.eigh(matrix)
            ctx.save_for_backward(lam, vectors)
            return lam, vectors

        @staticmethod
        def backward(ctx, grad_lam, grad_vectors):
            lam, vectors = ctx.saved_tensors
            inner = torch.diag_embed(grad_lam if grad_lam is not None else torch.zeros_like(lam))
            if grad_vectors is not None:
                gap = lam[None, :] - lam[:, None]  # λ_j − λ_i
                tol = _UNDETERMINED_GAP * torch.finfo(lam.dtype).eps * lam.abs().max()
                apart = gap.abs() > tol
                inverse = torch.where(apart, 1.0 / torch.where(apart, gap, torch.ones_like(gap)), torch.zeros_like(gap))
                inner = inner + inverse * (vectors.T @ grad_vectors)
            grad = vectors @ inner @ vectors.T
            return (grad + grad.T) / 2

    return SafeEigh.apply(A)


def _zero_ties_only(lam) -> bool:
    """Whether the eigenvalues (ascending) tie among the zero ones only: no tie among the non-zero ones (those are
    :func:`_undetermined`'s), at least two at zero."""
    import torch

    if lam.numel() < 2:
        return False
    tol = _UNDETERMINED_GAP * torch.finfo(lam.dtype).eps * lam.abs().max()
    return bool(((lam[1:] - lam[:-1] <= tol) & (lam[1:] <= tol)).any())


def _torch_projections(X, exponent):
    """Projections of the rows on the eigenvectors of XᵀX (X at unit scale; the ``2**exponent`` put back).

    Differentiable through ``torch.linalg.eigh`` where the eigenvectors are determined. Where two eigenvalues
    tie (isotropic data, repeated rows, fewer rows than features with a rank below the rows), eigh's gradient is
    NaN (it divides by their gap) and I(W) depends on which basis of the tied space the solver returns: the
    gradient is then that of the projections on the returned basis held fixed, ``∂(XU)/∂X = U`` (the value
    is unchanged). Ties among zero eigenvalues only (dead dimensions, rows spanning fewer dimensions than there are
    rows) leave the value independent of their basis: the gradient is then exact, through :func:`_eigh`.
    """
    import torch

    n, d = X.shape
    if n < d:  # the rank's space: XXᵀ = W Λ Wᵀ gives X u_k = √λ_k w_k
        G = X @ X.T
        lam, W = torch.linalg.eigh(G)
        if X.requires_grad and _zero_ties_only(lam.detach()) and not _undetermined(lam.detach()):
            lam, W = _eigh(G)
        positive = lam > 0
        root = torch.where(positive, torch.sqrt(torch.where(positive, lam, torch.ones_like(lam))), torch.zeros_like(lam))
        if X.requires_grad and _undetermined(lam.detach()):
            with torch.no_grad():  # u_k = Xᵀw_k / √λ_k (0 where λ_k = 0: those projections are 0 for every row)
                U = (X.T @ W) / torch.where(positive, root, torch.ones_like(root)) * positive
                P = W * root
            P = P + (X - X.detach()) @ U  # the value of W·√λ, the gradient of X·U with U fixed
        else:
            P = W * root
    else:
        A = X.T @ X
        lam, U = torch.linalg.eigh(A)
        if X.requires_grad and _undetermined(lam.detach()):
            U = U.detach()
        elif X.requires_grad and _zero_ties_only(lam.detach()):
            lam, U = _eigh(A)  # dead dimensions: the gradient without the rotations within their space
        P = X @ U
    half = exponent // 2
    return P * (2.0 ** half) * (2.0 ** (exponent - half))


def _numpy_log_z(X, exponent):
    """log Z(±u) over the eigenvectors u of XᵀX, float64, a block of rows (or columns) at a time."""
    from isotropy._kernels.rows import _workers_for, in_order, row_statistics

    n, d = X.shape
    if n < d:  # n×n Gram XXᵀ, by blocks of columns (shared with a table); directions orthogonal to every row add Z = n
        G = row_statistics(X, ("gram",))["gram"]  # read, never changed
        lam, W = np.linalg.eigh(G)
        with np.errstate(over="ignore"):  # checked just below
            P = np.ldexp(W * np.sqrt(np.clip(lam, 0.0, None)), exponent)
        if not np.isfinite(P).all():
            _refuse_overflow(exponent)
        return np.concatenate([_logsumexp_columns(P), _logsumexp_columns(-P)])
    A = row_statistics(X, ("second",))["second"]  # XᵀX, float64 (shared with the other metrics of a table)
    U = _eigenvectors(A)
    step = max(_CHUNK_ROWS, _CHUNK_ELEMENTS // d)  # rows per chunk: a worker holds the chunk and its projections
    starts = range(0, n, step)

    def chunk(c, state, slot):
        """Per column of [U, −U]: the largest projection of the chunk's rows and Σ exp(projection − it)."""
        start = starts[c]
        B = state["B"][: min(step, n - start)]
        np.copyto(B, X[start:start + step])
        P = np.matmul(B, U, out=state["P"][: B.shape[0]])  # the projections on −u are −P
        if exponent:
            with np.errstate(over="ignore"):  # checked just below
                P = np.ldexp(P, exponent, out=P)
        high, low = P.max(axis=0), P.min(axis=0)
        if not (np.isfinite(high).all() and np.isfinite(low).all()):
            return None
        sums = np.empty(2 * d)
        # a difference below -1.8e308 (projections near float64's limit, of both signs) is -inf: its exp is 0, the
        # float64 value of the true exp (below 5e-324), so the sums are exact and the overflow is not an error
        with np.errstate(over="ignore"):
            E = np.subtract(P, high, out=B)  # the chunk is no longer needed: its buffer takes exp(P - high)
            sums[:d] = np.exp(E, out=E).sum(axis=0)
            np.subtract(low, P, out=P)  # -P - (-low)
            sums[d:] = np.exp(P, out=P).sum(axis=0)
        return np.concatenate([high, -low]), sums

    top, total, overflow = np.full(2 * d, -np.inf), np.zeros(2 * d), [False]

    def merge(c, result):  # streaming log-sum-exp, chunk after chunk: no n×d matrix
        nonlocal top, total
        if result is None:
            overflow[0] = True
            return
        chunk_top, sums = result
        new_top = np.maximum(top, chunk_top)
        with np.errstate(over="ignore"):  # a difference below -1.8e308 is -inf: its exp is 0, as it should be
            total = total * np.exp(top - new_top) + sums * np.exp(chunk_top - new_top)
        top = new_top

    in_order(chunk, len(starts), merge, lambda: {"B": np.empty((min(step, n), d)), "P": np.empty((min(step, n), d))},
             max_workers=_workers_for(len(starts)))
    if overflow[0]:
        _refuse_overflow(exponent)
    return top + np.log(total)


def _eigenvectors(A):
    """Eigenvectors of the symmetric ``A`` (numpy), on one BLAS thread when ``A`` is small.

    A d × d eigendecomposition with d up to about a thousand is many small BLAS calls: on several
    threads each waits at a barrier for the others, which costs seconds instead of tens of
    milliseconds when the cores are busy with other work.
    """
    if A.shape[0] > _ONE_THREAD_EIGH:
        return np.linalg.eigh(A)[1]
    from isotropy._utils.threads import one_blas_thread

    with one_blas_thread():
        return np.linalg.eigh(A)[1]


@without_autocast
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
        In (0, 1]. Python float for numpy input (float64 arithmetic); a 0-dim tensor on the input's
        device for torch input, differentiable through ``torch.linalg.eigh``: float32 for float16,
        bfloat16 and integer tensors (computed in float32), else the input's dtype. Where two
        non-zero eigenvalues of XᵀX tie (isotropic data: the very target of a regulariser), eigh's
        gradient is NaN and the value depends on which basis of the tied space the solver returns;
        the gradient there is that of the projections on the returned basis held fixed (finite; the
        value is unchanged).

    Raises
    ------
    IsotropyValueError
        For fewer than 2 rows, and for all-zero data, where the value is meaningless (below).
        Identical non-zero rows are not refused (unlike isoscore and participation_ratio, which
        centre them to a zero covariance): I(W) is not centred, and n copies of one vector are a
        set of vectors all in one direction, maximally anisotropic for their norm:
        ``I = exp(-2|x|)``, from Z(±x/|x|) = n·exp(±|x|) and Z = n on the directions orthogonal to ``x``.

    Notes
    -----
    .. math:: I(W) = \\frac{\\min_{u \\in U} Z(u)}{\\max_{u \\in U} Z(u)},
              \\qquad Z(u) = \\sum_{i=1}^{n} \\exp(u^\\top x_i),

    where U is the set of unit eigenvectors of XᵀX. An eigenvector is defined only up to sign
    and Z(u) ≠ Z(−u), so U holds both u and −u: the value does not depend on the signs a
    LAPACK routine happens to return (implementations that keep one sign per eigenvector give
    a value ≥ this one). Everything is computed in log space,
    I = exp(min_u log Z(u) − max_u log Z(u)) with a stable log-sum-exp, so vectors with large
    norms do not overflow. When n < d, XᵀX has rank at most n: the eigenvectors with a non-zero
    eigenvalue λ come from the n×n Gram matrix XXᵀ = WΛWᵀ (u = Xᵀw/√λ, so Xu = √λ·w), and every
    other eigenvector is orthogonal to all rows, so Z(u) = n exactly for it. Cost
    O(n·d·min(n, d) + min(n, d)³), memory O(min(n, d)²) besides ``X``. The eigenvectors are found
    on ``X`` brought to unit scale by a power of two (exact), so XᵀX never overflows; a value
    below the smallest number of the result's dtype underflows to 0.0 (5e-324 in float64; 1.4e-45 for
    a float32 tensor, whose gradient is then 0 too: data far from the origin, e.g. 1,000 rows of
    N(20, 1) in 16 dimensions, I = 3.2e-70, need a float64 tensor), and data whose projections uᵀx overflow
    float64 are refused.

    Meaningless inputs are refused, as by the other metrics. One row: I(W) measures how evenly a set of
    vectors spreads around the origin, and a single vector has no spread to measure; its value
    exp(-2|x|) would only restate its norm (at least 2 samples, as every metric). All-zero data: the
    formula gives Z(u) = n for every u, hence I = 1, "perfectly isotropic", for vectors that have no
    direction at all (XᵀX = 0: every direction is an eigenvector); refused as effective_rank refuses
    them ("must not be all zero").

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
    # at least 2 rows, and not all zero: one vector has no spread to measure (its value exp(-2|x|) only restates
    # its norm), and all-zero rows give Z = n for every c, I = 1, "isotropic" for rows without a direction; both
    # refused as the other metrics refuse them (docstring, Notes). Identical non-zero rows keep their value.
    given = X
    X = check_X(X, caller="partition_isotropy", min_samples=2)
    n, d = X.shape
    low, high = extremes(X)
    refuse_partition_all_zero(max(abs(low), abs(high)), n)
    # float16 tensors judged in float16, as numpy arrays are (by rescaled, below)
    refuse_subnormal_as_given(given, X, caller="partition_isotropy", top=max(abs(low), abs(high)))
    Xs, exponent = rescaled(X, caller="partition_isotropy")  # eigenvectors at unit scale: no overflow in XᵀX
    if is_torch(X):
        import torch

        P = _torch_projections(Xs, exponent)
        if not bool(torch.isfinite(P.detach()).all()):
            _refuse_overflow(exponent)
        log_z = torch.cat([_logsumexp_columns(P), _logsumexp_columns(-P)])
        if n < d:
            log_z = torch.cat([log_z, log_z.new_full((1,), math.log(n))])
        return log_z.min().sub(log_z.max()).exp()
    log_z = _numpy_log_z(Xs, exponent)
    if n < d:
        log_z = np.append(log_z, math.log(n))
    with np.errstate(over="ignore"):  # log I below -1.8e308: I = 0.0, the underflow the docstring describes
        return to_output(np.exp(log_z.min() - log_z.max()), X)
