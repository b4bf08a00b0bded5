"""Rajaee & Pilehvar's cluster-based isotropy enhancement on one batch, differentiable, for use in a forward pass.

K-means clusters the (detached) batch; each cluster's mean is subtracted and its top principal
directions are projected out. The cluster assignment is piecewise constant in the input (no
gradient flows through it, as through an argmax); the means and the principal directions are
differentiated exactly (the latter through a symmetric eigendecomposition). The fitted,
whole-data version is :class:`isotropy.transforms.ClusterIsotropy`.
"""

from __future__ import annotations

import numbers

import torch
from torch import nn

from isotropy._utils.validation import IsotropyValueError, check_scalar, check_X

__all__ = ["InBatchClusterIsotropy", "in_batch_cluster_isotropy", "kmeans_labels"]


@torch.no_grad()
def kmeans_labels(X, n_clusters, *, n_iter=50, random_state=0):
    """Lloyd's k-means with k-means++ seeding on the rows of ``X`` (no graph); labels on ``X``'s device.

    Seeding draws from a CPU ``torch.Generator`` seeded with ``random_state``, so the labels are
    the same on every device and every call. An emptied cluster is re-seeded at the point farthest
    from its centre.
    """
    X = X.detach()
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
    """
    n, d = Xc.shape
    if n <= d:
        _, vectors = torch.linalg.eigh(Xc @ Xc.T)
        A = vectors[:, -n_components:]
        return Xc - A @ (A.T @ Xc)
    _, vectors = torch.linalg.eigh(Xc.T @ Xc)
    V = vectors[:, -n_components:]
    return Xc - (Xc @ V) @ V.T


def in_batch_cluster_isotropy(H, *, n_clusters=2, n_components=1, n_iter=50, random_state=0, return_labels=False):
    """Cluster-based isotropy enhancement of one batch ``H``, differentiable with respect to ``H``.

    Parameters
    ----------
    H : torch.Tensor of shape (n_samples, n_features)
        A batch of representations (e.g. the [CLS] vectors of a fine-tuning batch), float dtype.
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
        Same device and dtype as ``H``, with its graph.
    labels : torch.Tensor of shape (n_samples,)
        Only with ``return_labels=True``.

    Notes
    -----
    For cluster :math:`C_j` with mean :math:`\\mu_j` and top principal directions
    :math:`u_{j,1..D}` of :math:`\\{h - \\mu_j\\}`, :math:`\\tilde h = (h - \\mu_j) - \\sum_{i \\le D}
    (u_{j,i}^\\top (h - \\mu_j))\\, u_{j,i}`. Rajaee & Pilehvar apply it to the [CLS] vectors of each
    batch during fine-tuning. The labels are constant under small perturbations of ``H``, so the
    gradient is that of the transform with the partition fixed; the derivative of the principal
    directions needs a gap between the D-th and (D+1)-th eigenvalue of each cluster.

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
    caller = "in_batch_cluster_isotropy"
    if not isinstance(H, torch.Tensor):
        raise TypeError(f"The 'H' parameter of {caller} must be a torch.Tensor of shape (n_samples, n_features). "
                        f"Got {type(H).__name__} instead.")
    H = check_X(H, caller=caller, name="H", min_samples=1)
    n, d = H.shape
    k = int(check_scalar(n_clusters, "n_clusters", caller=caller, kind=numbers.Integral, low=1, high=n))
    D = int(check_scalar(n_components, "n_components", caller=caller, kind=numbers.Integral, low=0, high=d))
    check_scalar(n_iter, "n_iter", caller=caller, kind=numbers.Integral, low=1)
    check_scalar(random_state, "random_state", caller=caller, kind=numbers.Integral, low=0)
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

    def __init__(self, n_clusters=2, n_components=1, *, n_iter=50, random_state=0, only_training=False):
        super().__init__()
        caller = "InBatchClusterIsotropy"
        self.n_clusters = int(check_scalar(n_clusters, "n_clusters", caller=caller, kind=numbers.Integral, low=1))
        self.n_components = int(check_scalar(n_components, "n_components", caller=caller, kind=numbers.Integral,
                                             low=0))
        self.n_iter = int(check_scalar(n_iter, "n_iter", caller=caller, kind=numbers.Integral, low=1))
        self.random_state = int(check_scalar(random_state, "random_state", caller=caller, kind=numbers.Integral,
                                             low=0))
        self.only_training = bool(only_training)

    def forward(self, H):
        """Transform the batch ``H`` of shape ``(n_samples, n_features)``."""
        if self.only_training and not self.training:
            return H
        if isinstance(H, torch.Tensor) and H.ndim == 2 and H.shape[0] < self.n_clusters:
            raise IsotropyValueError(f"InBatchClusterIsotropy needs at least n_clusters={self.n_clusters} rows per "
                                     f"batch. Got a batch of {H.shape[0]} instead.")
        return in_batch_cluster_isotropy(H, n_clusters=self.n_clusters, n_components=self.n_components,
                                         n_iter=self.n_iter, random_state=self.random_state)

    def extra_repr(self):
        return (f"n_clusters={self.n_clusters}, n_components={self.n_components}, "
                f"only_training={self.only_training}")
