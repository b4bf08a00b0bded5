"""Rajaee & Pilehvar's cluster-based isotropy enhancement on one batch, differentiable, for use in a forward pass.

K-means clusters the (detached) batch; each cluster's mean is subtracted and its top principal
directions are projected out. The cluster assignment is piecewise constant in the input (no
gradient flows through it, as through an argmax); the means and the principal directions are
differentiated exactly (the latter through a symmetric eigendecomposition or, where its
eigenvalues tie or vanish, through the derivative of the removed subspace alone, which stays
finite). The fitted, whole-data version is :class:`isotropy.transforms.ClusterIsotropy`.
"""

from __future__ import annotations

import math
import numbers
import warnings

from isotropy._utils.install import extra_imports

with extra_imports("isotropy.training", "train"):  # a missing package named with its extra, in one line
    import torch
    from torch import nn
    from torch.autograd.function import once_differentiable

from isotropy._utils.magnitude import extremes, times_power_of_two
from isotropy._utils.validation import SEED_MAX, IsotropyValueError, check_scalar, check_X
from isotropy._utils.warn import user_stacklevel

__all__ = ["InBatchClusterIsotropy", "in_batch_cluster_isotropy", "kmeans_labels"]

# |binary exponent| of max|x| inside which the batch (and each centred cluster) is used as it is. The transform
# forms squared distances (k-means), sums of n_j·d products (Gram or scatter matrix) and, in the backward,
# reciprocals of eigenvalue gaps: at 2**±40 in float32 (2**±100 in float64) all stay normal numbers. Outside,
# the data are multiplied by an exact power of two that brings max|x| into [0.5, 1) and the output by its
# inverse: clustering and the removal of principal directions are scale-covariant, and a power of two changes
# no significant digit. Inside, nothing is rescaled, so the values at ordinary scales are those computed as is.
# Wider for float32 than the metrics' range (isotropy._utils.magnitude: 2**±8 for float32 tensors, whose IsoScore
# forms fourth moments): this transform forms second moments only, and LAPACK is not bit-exact under a rescaling,
# so rescaling batches of max|x| above 256 would move the last bits of ordinary float32 results.
_SAFE_EXPONENT = {torch.float32: 40, torch.float64: 100}


def _unit_exponent(X) -> int:
    """``e`` with ``max|X|`` in ``[2**(e-1), 2**e)`` when that lies outside the safe range of X's dtype, else 0."""
    if X.numel() == 0 or X.dtype not in _SAFE_EXPONENT:
        return 0
    low, high = extremes(X)
    top = max(abs(low), abs(high))
    if top == 0.0:
        return 0
    exponent = math.frexp(top)[1]
    return exponent if abs(exponent) > _SAFE_EXPONENT[X.dtype] else 0


@torch.no_grad()
def kmeans_labels(X, n_clusters, *, n_iter=50, random_state=0):
    """Lloyd's k-means with k-means++ seeding on the rows of ``X`` (no graph); labels on ``X``'s device.

    Seeding draws from a CPU ``torch.Generator`` seeded with ``random_state``, so the labels are
    the same on every device and every call. An emptied cluster is re-seeded at the point farthest
    from its centre. Data whose largest ``|x|`` lies outside ``2**±40`` (float32; ``2**±100`` for
    float64) are first brought to unit scale by an exact power of two, which changes no distance's
    ranking, so that the squared distances of the seeding neither overflow nor underflow.
    """
    X = X.detach()
    X = times_power_of_two(X, -_unit_exponent(X))
    n = X.shape[0]
    generator = torch.Generator().manual_seed(int(random_state))
    centres = X[int(torch.randint(n, (1,), generator=generator))][None].clone()
    for _ in range(1, n_clusters):
        d2 = torch.cdist(X, centres).min(dim=1).values.pow(2)
        if float(d2.sum()) == 0.0:
            pick = int(torch.randint(n, (1,), generator=generator))
        else:
            pick = int(torch.multinomial((d2 / d2.sum()).double().cpu(), 1, generator=generator))
        centres = torch.cat([centres, X[pick][None]])
    labels = None
    for _ in range(n_iter):
        distances = torch.cdist(X, centres)
        new = distances.argmin(dim=1)
        if labels is not None and torch.equal(new, labels):
            break
        labels = new
        for j in range(n_clusters):
            members = labels == j
            if members.any():
                centres[j] = X[members].mean(dim=0)
            else:
                far = int(distances.min(dim=1).values.argmax())
                centres[j] = X[far]
    return labels


def _remove_top_directions(Xc, n_components):
    """``Xc`` minus its projection on its ``n_components`` leading principal directions (differentiable).

    With n ≤ d the directions are read from the n×n Gram matrix G = Xc Xcᵀ: if A holds its top
    eigenvectors, the projection of the rows is A Aᵀ Xc (= Xc V Vᵀ for the top right singular
    vectors V), so no d×d matrix is formed and the zero eigenvalues of a rank-deficient d×d
    scatter never enter the eigenvector derivative.

    A centred cluster whose largest ``|x|`` lies outside ``2**±40`` (float32; ``2**±100`` for
    float64), e.g. a tight cluster of nearly equal rows, is brought to unit scale by an exact power
    of two first (the removal is scale-covariant), so that its eigenvalues and their gaps are normal
    numbers.

    Where the eigenvalues are well separated, the gradient is torch's own through
    :func:`torch.linalg.eigh` (also twice differentiable). That backward divides by the gap between
    every two eigenvalues, so it is NaN or inf when two tie or all vanish (a cluster of identical
    rows, a scatter with a repeated eigenvalue), even where the removal itself is smooth. Then
    (some gap touching the removed directions below ``sqrt(eps)·λ_max``, or an exact tie, or a zero
    matrix) :class:`_RemovalWithTiesHeld` gives the same values with the derivative of the removed
    subspace instead, which only involves the gaps between removed and kept directions.
    """
    exponent = _unit_exponent(Xc)
    if exponent:
        return times_power_of_two(_remove_top_directions(times_power_of_two(Xc, -exponent), n_components),
                                   exponent)
    n, d = Xc.shape
    gram = n <= d
    values, vectors = torch.linalg.eigh(Xc @ Xc.T if gram else Xc.T @ Xc)
    if _eigh_backward_is_unsafe(values.detach(), n_components):
        return _RemovalWithTiesHeld.apply(Xc, values.detach(), vectors.detach(), n_components, gram)
    if gram:
        A = vectors[:, -n_components:]
        return Xc - A @ (A.T @ Xc)
    V = vectors[:, -n_components:]
    return Xc - (Xc @ V) @ V.T


def _eigh_backward_is_unsafe(values, n_components):
    """Whether torch's eigh backward would divide by a (nearly) vanishing gap that the removal depends on.

    ``values`` ascending. The backward of the top ``n_components`` eigenvectors divides by every gap
    that touches one of them (the smallest of those are adjacent in sorted order) and, elementwise, by
    every other gap too (an exact tie there gives 0/0). Unsafe: a zero matrix, an exact tie anywhere,
    or a gap touching the top directions below ``sqrt(eps)·λ_max`` (where the division by it loses
    more than half the digits of the within-top terms that cancel in exact arithmetic).
    """
    top = float(values[-1])
    if not top > 0.0:
        return True
    gaps = values[1:] - values[:-1]
    if bool((gaps <= 0).any()):
        return True
    touching = gaps[-n_components:]  # the gaps (k, k + 1) with k + 1 among the top n_components
    return bool((touching <= math.sqrt(torch.finfo(values.dtype).eps) * top).any())


# Eigenvalues (and gaps) within this many rounding units of the largest are read as zero by _RemovalWithTiesHeld.
_ZERO_GAP_ULPS = 8


class _RemovalWithTiesHeld(torch.autograd.Function):
    """Removal of the top directions with the derivative of the removed subspace, finite at ties and zeros.

    With S the Gram (n ≤ d) or scatter matrix, eigenpairs (λ_i, v_i) and P the projector on the
    removed directions, the output is (I − P) Xc or Xc (I − P), and

        dP = Σ_{i removed, j kept} (v_i v_jᵀ + v_j v_iᵀ) · v_jᵀ dS v_i / (λ_i − λ_j):

    pairs of removed (or of kept) directions cancel, so a tie among the removed directions, or among
    the kept ones, has no effect (P is unique there; torch's eigh backward is 0/0 = NaN). The
    gradient of a loss L is then G(I − P) + Xc (B + Bᵀ) (scatter) or (I − P) G + (B + Bᵀ) Xc
    (Gram), with B = V_kept ((V_keptᵀ (Γ + Γᵀ) V_removed) ∘ F) V_removedᵀ, Γ = ∂L/∂P and
    F_ji = 1 / (λ_i − λ_j).

    Three cases have no unique derivative or a trivial one; each is a documented, finite choice:

    - Removed directions of zero variance (λ ≤ 8·eps·λ_max, a few rounding units of the largest: eigh
      finds the eigenvalues to about eps·λ_max; m·eps·λ_max, m the matrix's size, took real directions
      of float32 batches for zero, a singular value 2 beside 1000 at d = 64, and their gradient was
      15 % off the float64 one): Xc v = 0 for them,
      so removing them or not gives the same output, and the subspace of zero variance has no
      preferred basis. They count as kept: the gradient is that of the removal of the directions of
      positive variance alone, independent of the arbitrary basis eigh returns. A cluster whose
      centred rows are all zero thus passes its gradient on as it is (then through the centring).
    - A tie straddling the boundary (a removed λ_i and a kept λ_j within 8·eps·λ_max of each other):
      which of the tied directions are removed is decided by eigh's arbitrary basis, and the output
      jumps with it, like the cluster labels; F_ji is set to 0, i.e. the gradient is that of the
      removal the forward pass made, with the split of the tied eigenspace held fixed.
    - All variance removed (``n_components`` ≥ min(n_j − 1, d), the rank of a centred cluster at
      most): the output is identically zero for every input of that partition, so the gradient is
      exactly zero.

    Not twice differentiable (the eigenvectors are constants here): a double backward raises.
    """

    @staticmethod
    def forward(ctx, Xc, values, vectors, n_components, gram):
        top = vectors[:, -n_components:]
        out = Xc - top @ (top.T @ Xc) if gram else Xc - (Xc @ top) @ top.T  # the ops of the eigh path: same values
        ctx.save_for_backward(Xc, values, vectors)
        ctx.n_components, ctx.gram = n_components, gram
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, G):
        Xc, values, vectors = ctx.saved_tensors
        n, d = Xc.shape
        if ctx.n_components >= min(n - 1, d):
            return torch.zeros_like(Xc), None, None, None, None
        m = values.numel()
        tol = _ZERO_GAP_ULPS * torch.finfo(values.dtype).eps * max(float(values[-1]), 0.0)
        removed = (torch.arange(m, device=values.device) >= m - ctx.n_components) & (values > tol)
        Vr, Vk = vectors[:, removed], vectors[:, ~removed]
        gaps = values[removed][None, :] - values[~removed][:, None]
        resolved = gaps > tol
        F = torch.where(resolved, 1.0 / torch.where(resolved, gaps, torch.ones_like(gaps)), torch.zeros_like(gaps))
        Gamma = -(G @ Xc.T) if ctx.gram else -(Xc.T @ G)
        B = Vk @ (((Vk.T @ (Gamma + Gamma.T)) @ Vr) * F) @ Vr.T
        if ctx.gram:
            grad = G - Vr @ (Vr.T @ G) + (B + B.T) @ Xc
        else:
            grad = G - (G @ Vr) @ Vr.T + Xc @ (B + B.T)
        return grad, None, None, None, None


def in_batch_cluster_isotropy(H, *, n_clusters=2, n_components=1, n_iter=50, random_state=0, return_labels=False):
    """Cluster-based isotropy enhancement of one batch ``H``, differentiable with respect to ``H``.

    Parameters
    ----------
    H : torch.Tensor of shape (n_samples, n_features)
        A batch of representations (e.g. the [CLS] vectors of a fine-tuning batch), float dtype, any
        finite values. float16 and bfloat16 are computed in float32 and returned in their own dtype.
    n_clusters : int, default=2
        k of k-means on the batch, at most ``n_samples``.
    n_components : int, default=1
        Leading principal directions removed within each cluster, at most ``n_features``. A
        cluster of ``n_j`` rows has at most ``n_j − 1`` directions of variance; fewer are removed
        there (a cluster of one row becomes the zero vector after centring).
    n_iter : int, default=50
        Maximum Lloyd iterations.
    random_state : int, default=0
        Seed of the k-means++ seeding (the same for every call: a batch always gets the same clusters).
    return_labels : bool, default=False
        Also return the cluster of every row.

    Returns
    -------
    H_new : torch.Tensor of shape (n_samples, n_features)
        Same device and dtype as ``H`` (the default float dtype for integer ``H``), with its graph.
        An entry beyond the range of the dtype (|x| near its largest value, e.g. 65504 for
        float16, where a centred row can double) is ±inf, as in any arithmetic of that dtype.
    labels : torch.Tensor of shape (n_samples,)
        Only with ``return_labels=True``.

    Notes
    -----
    For cluster :math:`C_j` with mean :math:`\\mu_j` and top principal directions
    :math:`u_{j,1..D}` of :math:`\\{h - \\mu_j\\}`, :math:`\\tilde h = (h - \\mu_j) - \\sum_{i \\le D}
    (u_{j,i}^\\top (h - \\mu_j))\\, u_{j,i}`. Rajaee & Pilehvar apply it to the [CLS] vectors of each
    batch during fine-tuning. The labels are constant under small perturbations of ``H``, so the
    gradient is that of the transform with the partition fixed. The removal depends on the span of
    the D directions alone, so its derivative needs no gap among them, only between the D-th and
    (D+1)-th eigenvalue of each cluster. Where the output does not depend smoothly on the input,
    the gradient is finite by a documented choice (see ``_RemovalWithTiesHeld``): directions of
    zero variance count as not removed (a cluster of identical rows passes the gradient through its
    centring), and a tie across the D-th eigenvalue keeps the forward pass's split of the tied
    eigenspace fixed, as the labels are kept. A cluster whose variance is all removed
    (``D ≥ n_j − 1``) outputs zero for every input, so its gradient is exactly zero. Such
    degenerate clusters are not twice differentiable (a double backward through them raises).

    Clustering and the removal of principal directions are scale-covariant: a batch whose largest
    ``|x|`` lies outside ``2**±40`` (float32; ``2**±100`` for float64) is computed at unit scale,
    after multiplication by an exact power of two, and the output multiplied back, so any finite
    batch works and ``H · 2**k`` gives the output of ``H`` times ``2**k``.

    References
    ----------
    .. [1] S. Rajaee and M. T. Pilehvar, "A Cluster-based Approach for Improving Isotropy in
       Contextual Embedding Space", ACL-IJCNLP 2021 (short papers), 575-584.

    Examples
    --------
    >>> import torch
    >>> from isotropy.training import in_batch_cluster_isotropy
    >>> g = torch.Generator().manual_seed(0)
    >>> H = torch.cat([torch.randn(6, 4, generator=g), torch.randn(6, 4, generator=g) + 20.0]).requires_grad_()
    >>> out, labels = in_batch_cluster_isotropy(H, n_clusters=2, n_components=1, return_labels=True)
    >>> labels.tolist()
    [1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0]
    >>> bool(out[labels == 0].mean(0).abs().max() < 1e-5)
    True
    >>> out.sum().backward(); H.grad.shape
    torch.Size([12, 4])
    """
    return _in_batch_cluster_isotropy(H, n_clusters=n_clusters, n_components=n_components, n_iter=n_iter,
                                      random_state=random_state, return_labels=return_labels,
                                      caller="in_batch_cluster_isotropy")


def _in_batch_cluster_isotropy(H, *, n_clusters, n_components, n_iter, random_state, return_labels, caller):
    """:func:`in_batch_cluster_isotropy`, its errors and warning naming ``caller`` (the module's forward names the
    module, whose parameters n_clusters and n_components are: a function the user never called was named there)."""
    if not isinstance(H, torch.Tensor):
        raise TypeError(f"The 'H' parameter of {caller} must be a torch.Tensor of shape (n_samples, n_features). "
                        f"Got {type(H).__name__} instead.")
    half_dtype = H.dtype if H.dtype in (torch.float16, torch.bfloat16) else None
    H = check_X(H, caller=caller, name="H", min_samples=1)  # half precision comes back as float32
    n, d = H.shape
    k = int(check_scalar(n_clusters, "n_clusters", caller=caller, kind=numbers.Integral, low=1, high=n))
    D = int(check_scalar(n_components, "n_components", caller=caller, kind=numbers.Integral, low=0, high=d))
    check_scalar(n_iter, "n_iter", caller=caller, kind=numbers.Integral, low=1)
    check_scalar(random_state, "random_state", caller=caller, kind=numbers.Integral, low=0, high=SEED_MAX)
    exponent = _unit_exponent(H)  # 0 at ordinary scales: H is used as it is
    H = times_power_of_two(H, -exponent)
    labels = kmeans_labels(H, k, n_iter=int(n_iter), random_state=int(random_state))
    pieces, order = [], []
    for j in range(k):
        rows = (labels == j).nonzero().reshape(-1)
        if rows.numel() == 0:
            continue
        Xc = H[rows] - H[rows].mean(dim=0, keepdim=True)
        removed = min(D, rows.numel() - 1)
        pieces.append(_remove_top_directions(Xc, removed) if removed > 0 else Xc)
        order.append(rows)
    out = torch.zeros_like(H).index_copy(0, torch.cat(order), torch.cat(pieces))
    if D >= d:  # every direction of every cluster removed, whatever its size
        warnings.warn(f"{caller}: n_components={D} removes every one of the n_features={d} directions from each "
                      f"cluster: every row becomes the zero vector and passes no gradient. Use fewer components.",
                      UserWarning, stacklevel=user_stacklevel())
    elif any(rows.numel() <= D + 1 for rows in order):
        # n_j centred rows span n_j - 1 directions: all removed, the rows are 0 (and their gradient); the message
        # does not change from batch to batch (Python shows it once per place, not at every step)
        warnings.warn(f"{caller}: clusters of at most n_components + 1 = {D + 1} rows (n_clusters={k} on batches of "
                      f"{n} rows) have all their variance removed: their rows become the zero vector and pass no "
                      f"gradient. Use fewer clusters or components, or larger batches.", UserWarning,
                      stacklevel=user_stacklevel())  # the user's line, through torch's Module.__call__ too
    out = times_power_of_two(out, exponent)
    if half_dtype is not None:
        out = out.to(half_dtype)  # computed in float32; the gradient flows back through the cast
    return (out, labels) if return_labels else out


class InBatchClusterIsotropy(nn.Module):
    """:func:`in_batch_cluster_isotropy` as a module for a forward pass (no parameters).

    Parameters
    ----------
    n_clusters, n_components, n_iter, random_state
        See :func:`in_batch_cluster_isotropy`.
    only_training : bool, default=False
        If True, the module is the identity in eval mode (apply the transform during fine-tuning only).

    Examples
    --------
    >>> import torch
    >>> from isotropy.training import InBatchClusterIsotropy
    >>> layer = InBatchClusterIsotropy(n_clusters=3, n_components=2)
    >>> layer(torch.randn(32, 8)).shape
    torch.Size([32, 8])
    """

    def __init__(self, *, n_clusters=2, n_components=1, n_iter=50, random_state=0, only_training=False):
        super().__init__()
        caller = "InBatchClusterIsotropy"
        self.n_clusters = int(check_scalar(n_clusters, "n_clusters", caller=caller, kind=numbers.Integral, low=1))
        self.n_components = int(check_scalar(n_components, "n_components", caller=caller, kind=numbers.Integral,
                                             low=0))
        self.n_iter = int(check_scalar(n_iter, "n_iter", caller=caller, kind=numbers.Integral, low=1))
        self.random_state = int(check_scalar(random_state, "random_state", caller=caller, kind=numbers.Integral,
                                             low=0, high=SEED_MAX))
        self.only_training = bool(only_training)

    def forward(self, H):
        """Transform the batch ``H`` of shape ``(n_samples, n_features)``."""
        if self.only_training and not self.training:
            return H
        if isinstance(H, torch.Tensor) and H.ndim == 2 and H.shape[0] < self.n_clusters:
            raise IsotropyValueError(f"InBatchClusterIsotropy needs at least n_clusters={self.n_clusters} rows per "
                                     f"batch. Got a batch of {H.shape[0]} instead.")
        return _in_batch_cluster_isotropy(H, n_clusters=self.n_clusters, n_components=self.n_components,
                                          n_iter=self.n_iter, random_state=self.random_state, return_labels=False,
                                          caller="InBatchClusterIsotropy")

    def extra_repr(self):
        return (f"n_clusters={self.n_clusters}, n_components={self.n_components}, "
                f"only_training={self.only_training}")
