"""The differentiable in-batch cluster transform: gradcheck, the fitted numpy transform, k-means vs scikit-learn."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score

from isotropy._utils.validation import IsotropyValueError
from isotropy.training import InBatchClusterIsotropy, in_batch_cluster_isotropy
from isotropy.transforms._all_but_the_top import top_directions
from isotropy.transforms._cluster_isotropy import _apply

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _blobs(sizes, d, seed=0, spread=25.0):
    g = torch.Generator().manual_seed(seed)
    parts = [torch.randn(n, d, generator=g, dtype=torch.float64) * torch.linspace(0.5, 2.0, d, dtype=torch.float64)
             + spread * j for j, n in enumerate(sizes)]
    return torch.cat(parts)


@pytest.mark.parametrize(("sizes", "d", "n_components"), [
    ((9, 8), 3, 1),   # clusters larger than d: directions from the d×d scatter
    ((4, 5), 6, 2),   # clusters smaller than d: directions from the Gram matrix
    ((6, 1, 5), 4, 2),  # a singleton cluster (centred to zero) and removal capped at n_j − 1
])
def test_gradcheck(sizes, d, n_components):
    H = _blobs(sizes, d).requires_grad_()
    labels = in_batch_cluster_isotropy(H, n_clusters=len(sizes), n_components=n_components, return_labels=True)[1]
    assert adjusted_rand_score(np.repeat(np.arange(len(sizes)), sizes), labels.numpy()) == 1.0
    assert torch.autograd.gradcheck(
        lambda X: in_batch_cluster_isotropy(X, n_clusters=len(sizes), n_components=n_components), (H,),
        eps=1e-6, atol=1e-6)


def test_equals_the_fitted_numpy_transform_for_the_same_clusters():
    H = _blobs((30, 25, 20), 10, seed=1)
    out, labels = in_batch_cluster_isotropy(H, n_clusters=3, n_components=3, return_labels=True)
    X, ids = H.numpy(), labels.numpy()
    centres = np.stack([X[ids == j].mean(axis=0) for j in range(3)])
    components = np.stack([top_directions(X[ids == j] - centres[j], 3) for j in range(3)])
    np.testing.assert_allclose(out.numpy(), _apply(X.copy(), ids, centres, components), atol=1e-10)
    # every cluster is centred and has no variance left along its removed directions
    for j in range(3):
        rows = out[labels == j].numpy()
        np.testing.assert_allclose(rows.mean(axis=0), 0.0, atol=1e-10)
        np.testing.assert_allclose(rows @ components[j].T, 0.0, atol=1e-9)


def test_kmeans_partition_matches_scikit_learn_on_separated_blobs():
    H = _blobs((40, 30, 50, 20), 6, seed=2, spread=12.0)
    labels = in_batch_cluster_isotropy(H, n_clusters=4, n_components=0, return_labels=True)[1].numpy()
    reference = KMeans(n_clusters=4, n_init=5, random_state=0).fit_predict(H.numpy())
    assert adjusted_rand_score(reference, labels) == 1.0


def test_module_float32_device_and_eval_mode():
    H = _blobs((16, 16), 8).float()
    layer = InBatchClusterIsotropy(n_clusters=2, n_components=1, only_training=True)
    out = layer(H)
    assert out.dtype == torch.float32 and out.device == H.device and out.shape == H.shape
    assert torch.allclose(out, in_batch_cluster_isotropy(H.double(), n_clusters=2).float(), atol=1e-4)
    assert torch.equal(layer(H), out)  # the same batch always gets the same clusters
    layer.eval()
    assert layer(H) is H


def test_errors():
    with pytest.raises(TypeError, match="'H' parameter"):
        in_batch_cluster_isotropy(np.zeros((4, 2)))
    with pytest.raises(IsotropyValueError, match="'n_clusters' parameter of in_batch_cluster_isotropy"):
        in_batch_cluster_isotropy(torch.randn(3, 2), n_clusters=4)
    with pytest.raises(IsotropyValueError, match="'n_components' parameter"):
        in_batch_cluster_isotropy(torch.randn(5, 2), n_components=3)
    with pytest.raises(IsotropyValueError, match="at least n_clusters=3 rows"):
        InBatchClusterIsotropy(n_clusters=3)(torch.randn(2, 4))


def test_module_errors_name_the_module():
    """A new-user trial: ``InBatchClusterIsotropy(n_clusters=2, n_components=7)(H)`` on 6 features said "The
    'n_components' parameter of in_batch_cluster_isotropy", a function the user never called (the constructor's own
    checks named the module already), and so did a 3-d or NaN batch. The forward pass names the module, as IStarLoss
    and CosRegLoss do; the function still names itself."""
    H = torch.randn(8, 6, generator=torch.Generator().manual_seed(0))
    with pytest.raises(IsotropyValueError, match=r"^The 'n_components' parameter of InBatchClusterIsotropy must be an "
                                                 r"int in the range \[0, 6\]\. Got 7 instead\.$"):
        InBatchClusterIsotropy(n_clusters=2, n_components=7)(H)
    with pytest.raises(IsotropyValueError, match=r"^The 'H' parameter of InBatchClusterIsotropy must be a 2-d array"):
        InBatchClusterIsotropy()(H[None])
    bad = H.clone()
    bad[3, 2] = float("nan")
    with pytest.raises(IsotropyValueError, match=r"^The 'H' parameter of InBatchClusterIsotropy must contain only "
                                                 r"finite values\. Got nan at row 3, column 2 instead\.$"):
        InBatchClusterIsotropy()(bad)
    with pytest.raises(TypeError, match=r"^The 'H' parameter of InBatchClusterIsotropy must be a torch\.Tensor"):
        InBatchClusterIsotropy()(H.numpy())
    with pytest.raises(IsotropyValueError, match=r"^The 'n_components' parameter of in_batch_cluster_isotropy"):
        in_batch_cluster_isotropy(H, n_clusters=2, n_components=7)
    assert torch.equal(InBatchClusterIsotropy(n_clusters=2, n_components=1)(H),
                       in_batch_cluster_isotropy(H, n_clusters=2, n_components=1))


def _fn(n_clusters, n_components):
    return lambda X: in_batch_cluster_isotropy(X, n_clusters=n_clusters, n_components=n_components)


def _grad(H, n_clusters, n_components, weights):
    H = H.detach().clone().requires_grad_()
    (in_batch_cluster_isotropy(H, n_clusters=n_clusters, n_components=n_components) * weights).sum().backward()
    return H.grad


def test_duplicated_rows_get_the_exact_gradient_zero():
    """Two identical rows form a cluster whose centred rows are all zero: torch's eigh backward gave NaN (16 of 144
    entries). With n_components=1 = n_j − 1 the removal takes all of the cluster's variance, so its output is zero
    for every input of that partition: the gradient of those rows is exactly 0, and gradcheck (finite differences)
    agrees on the whole batch."""
    g = torch.Generator().manual_seed(0)
    H = torch.cat([torch.randn(16, 8, generator=g, dtype=torch.float64), torch.full((2, 8), 30.0, dtype=torch.float64)])
    grad = _grad(H, 2, 1, torch.randn(18, 8, generator=g, dtype=torch.float64))
    assert torch.isfinite(grad).all() and torch.equal(grad[16:], torch.zeros(2, 8, dtype=torch.float64))
    assert torch.autograd.gradcheck(_fn(2, 1), (H.requires_grad_(),), eps=1e-6, atol=1e-6)
    # a duplicated sentence among three rows with two directions removed: a rank-1 centred cluster whose variance
    # is all removed (a tie at zero across the boundary): zero gradient there, the other cluster's own elsewhere
    # (finite differences are no reference here: the forward's rounding, eps/λ₂, dominates them)
    H3 = torch.cat([H[:16], torch.full((2, 8), 30.0, dtype=torch.float64), torch.full((1, 8), 31.0, dtype=torch.float64)])
    W = torch.randn(19, 8, generator=g, dtype=torch.float64)
    grad = _grad(H3, 2, 2, W)
    assert torch.equal(grad[16:], torch.zeros(3, 8, dtype=torch.float64))
    torch.testing.assert_close(grad[:16], _grad(H[:16], 1, 2, W[:16]), rtol=0, atol=1e-12)
    H32 = H.detach().float()
    assert torch.isfinite(_grad(H32, 2, 1, torch.randn(18, 8, generator=g))).all()


@pytest.mark.parametrize("gram", [False, True])
def test_a_tie_among_the_removed_directions_is_differentiated_exactly(gram):
    """Tied leading eigenvalues with a gap below them: the removed subspace is unique and smooth, torch's eigh
    backward was NaN (0/0); the gradient now matches finite differences (scatter path n > d, Gram path n ≤ d)."""
    d = 8 if gram else 4
    base = torch.zeros(3, d, dtype=torch.float64)
    base[0, 0], base[1, 1], base[2, 2] = 3.0, 3.0, 1.0
    H = torch.cat([base, -base]) if gram else torch.cat([base, -base, 0.5 * base, -0.5 * base])
    assert torch.autograd.gradcheck(_fn(1, 2), (H.requires_grad_(),), eps=1e-6, atol=1e-6)


def test_non_differentiable_degenerate_batches_get_the_documented_finite_gradient():
    """Where the removed subspace is not unique the gradient is the documented choice, finite (NaN before: 40/40
    for an all-identical batch, 72/72 for [I; −I])."""
    g = torch.Generator().manual_seed(1)
    # all rows identical: no direction has variance, none counts as removed; the gradient is that of the centring
    W = torch.randn(5, 8, generator=g, dtype=torch.float64)
    grad = _grad(torch.ones(5, 8, dtype=torch.float64), 1, 1, W)
    torch.testing.assert_close(grad, W - W.mean(dim=0), rtol=0, atol=1e-15)
    # [I; −I]: six tied eigenvalues, one removed (eigh's choice v): the gradient of X ↦ X(I − v vᵀ), centred
    H = torch.cat([torch.eye(6, dtype=torch.float64), -torch.eye(6, dtype=torch.float64)])
    W = torch.randn(12, 6, generator=g, dtype=torch.float64)
    out = in_batch_cluster_isotropy(H, n_clusters=1, n_components=1)
    v = torch.linalg.svd(H - out).Vh[0]  # (H − out) = H v vᵀ
    torch.testing.assert_close(H - out, H @ torch.outer(v, v), rtol=0, atol=1e-15)
    keep = torch.eye(6, dtype=torch.float64) - torch.outer(v, v)
    grad = _grad(H, 1, 1, W)
    torch.testing.assert_close(grad, W @ keep - (W @ keep).mean(dim=0), rtol=0, atol=1e-14)
    for H, k in [(torch.ones(5, 8), 1), (torch.cat([torch.eye(6), -torch.eye(6)]), 1)]:
        assert torch.isfinite(_grad(H, k, 1, torch.randn(H.shape, generator=g))).all()


def test_tiny_float64_batch_has_the_gradient_of_the_unit_scale_batch():
    """float64 × 2**-565 (about 1e-170): the Gram entries underflowed to zero and the gradient was NaN. The batch is
    now computed at unit scale: output and gradient are exactly those of the unit-scale batch (scaled)."""
    g = torch.Generator().manual_seed(2)
    X = _blobs((9, 8), 5, seed=3)
    X = X / 2.0 ** math.frexp(float(X.abs().max()))[1]  # max|x| in [0.5, 1)
    W = torch.randn(X.shape, generator=g, dtype=torch.float64)
    tiny = X * 2.0 ** -565
    assert torch.equal(in_batch_cluster_isotropy(tiny, n_clusters=2, n_components=2),
                       in_batch_cluster_isotropy(X, n_clusters=2, n_components=2) * 2.0 ** -565)
    assert torch.equal(_grad(tiny, 2, 2, W), _grad(X, 2, 2, W))
    grad = _grad(X.detach() * 1e-170, 2, 2, W)
    assert torch.isfinite(grad).all()
    torch.testing.assert_close(grad, _grad(X, 2, 2, W), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(("dtype", "scale"), [
    (torch.float32, 2.0 ** 70), (torch.float32, 1e19), (torch.float32, 2.0 ** -100),
    (torch.bfloat16, 1e20), (torch.float64, 1e160), (torch.float64, 2.0 ** 600)])
def test_any_finite_scale_gives_the_output_at_ordinary_scale_times_the_scale(dtype, scale):
    """float32 × 1e19, bfloat16 × 1e20 and float64 × 1e160 raised torch's 'probability tensor contains either inf,
    nan or element < 0' (the k-means++ squared distances overflowed). The batch is brought to unit scale by a power
    of two: at a power-of-two scale the output is exactly the unit-scale output times the scale."""
    g = torch.Generator().manual_seed(4)
    X = torch.cat([torch.randn(12, 6, generator=g) * 0.1, torch.randn(10, 6, generator=g) * 0.1 + 0.6])
    X = X.to(dtype)
    reference = in_batch_cluster_isotropy(X, n_clusters=2, n_components=1)
    out = in_batch_cluster_isotropy(X * scale, n_clusters=2, n_components=1)
    assert out.dtype == dtype and torch.isfinite(out).all()
    exact = math.frexp(scale)[0] == 0.5 and dtype != torch.bfloat16
    if exact:
        assert torch.equal(out, reference * scale)
    else:  # X·scale rounds in its dtype: equal up to that rounding
        torch.testing.assert_close(out.double() / scale, reference.double(), rtol=0,
                                   atol=2e-2 if dtype == torch.bfloat16 else 1e-5)
    H = (X * scale).requires_grad_()
    (in_batch_cluster_isotropy(H, n_clusters=2, n_components=1) * torch.ones_like(H)).sum().backward()
    assert torch.isfinite(H.grad).all()


def test_k_means_labels_at_any_scale():
    from isotropy.training.cluster_transform import kmeans_labels

    X = _blobs((10, 12), 4).float() / 64
    assert torch.equal(kmeans_labels(X * 1e19, 2), kmeans_labels(X, 2))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_comes_back_in_its_dtype(dtype):
    """float16/bfloat16 came back as float32 (docstring: same dtype as H), so a half-precision next layer failed.
    Computed in float32 as before, returned in H's dtype; the gradient flows through the cast."""
    H = _blobs((16, 16), 8).to(dtype).requires_grad_()
    out = InBatchClusterIsotropy(n_clusters=2, n_components=1)(H)
    assert out.dtype == dtype
    H32 = H.detach().float().requires_grad_()
    out32 = in_batch_cluster_isotropy(H32, n_clusters=2, n_components=1)
    assert torch.equal(out, out32.to(dtype))
    W = torch.randn(H.shape, generator=torch.Generator().manual_seed(5))
    (out.float() * W).sum().backward()
    (out32.to(dtype).float() * W).sum().backward()
    assert H.grad.dtype == dtype and torch.equal(H.grad, H32.grad.to(dtype))
    if dtype == torch.float16:
        layer = torch.nn.Linear(8, 4).half()
        assert layer(InBatchClusterIsotropy()(torch.randn(16, 8).half())).dtype == torch.float16


def test_ordinary_batches_stay_twice_differentiable():
    H = _blobs((7, 6), 5, seed=6).requires_grad_()
    assert torch.autograd.gradgradcheck(_fn(2, 2), (H,), eps=1e-6, atol=1e-5)


@pytest.mark.parametrize(("sizes", "d", "n_components"), [((9, 8), 3, 1), ((4, 5), 6, 2), ((6, 1, 5), 4, 2)])
def test_the_subspace_derivative_is_exact_on_ordinary_batches(sizes, d, n_components, monkeypatch):
    """The backward used at ties and zeros, forced on ordinary batches: same values, gradient equal to finite
    differences and to torch's eigh backward."""
    from isotropy.training import cluster_transform

    H = _blobs(sizes, d).requires_grad_()
    W = torch.randn(H.shape, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    reference = in_batch_cluster_isotropy(H, n_clusters=len(sizes), n_components=n_components)
    expected = _grad(H, len(sizes), n_components, W)
    monkeypatch.setattr(cluster_transform, "_eigh_backward_is_unsafe", lambda values, n_components: True)
    assert torch.equal(in_batch_cluster_isotropy(H, n_clusters=len(sizes), n_components=n_components), reference)
    assert torch.autograd.gradcheck(_fn(len(sizes), n_components), (H,), eps=1e-6, atol=1e-6)
    torch.testing.assert_close(_grad(H, len(sizes), n_components, W), expected, rtol=1e-10, atol=1e-12)


def test_a_small_real_direction_of_a_float32_batch_keeps_its_gradient():
    # singular values 1000, 2, 1 ... 0.5 at d = 64 with two directions removed: float32 took the second (λ = 4e-6 of
    # λ_max, below m·eps·λ_max) for a direction of zero variance, and the gradient was 15 % off the float64 one
    # (torch's own eigh backward: 0.3 %); now as close as torch's own
    g = torch.Generator().manual_seed(0)
    n, d = 200, 64
    A = torch.randn(n, d, generator=g, dtype=torch.float64)
    U = torch.linalg.svd(A - A.mean(0), full_matrices=False)[0]
    V = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))[0]
    s = torch.linspace(1.0, 0.5, d, dtype=torch.float64)
    s[0], s[1] = 1000.0, 2.0
    H = U @ torch.diag(s) @ V.T + 5.0
    W = torch.randn(n, d, generator=g, dtype=torch.float64)
    reference = _grad(H, 1, 2, W)
    single = _grad(H.float(), 1, 2, W.float()).double()
    assert float((single - reference).norm() / reference.norm()) < 0.01


def test_in_batch_clusters_whose_rows_all_become_zero_are_warned_of():
    """The paper's n_clusters=27, n_components=12 on a batch of 32 rows made most rows zero with nothing said (the
    offline ClusterIsotropy warns): one warning, whose text does not change from batch to batch."""
    import warnings

    from isotropy.training import InBatchClusterIsotropy

    H = torch.randn(32, 16, generator=torch.Generator().manual_seed(0))
    with pytest.warns(UserWarning, match=r"^InBatchClusterIsotropy: clusters of at most n_components \+ 1 = 13 rows "
                                         r"\(n_clusters=27 on batches of 32 rows\) have all their variance removed"):
        out = InBatchClusterIsotropy(n_clusters=27, n_components=12)(H)
    with pytest.warns(UserWarning, match=r"^in_batch_cluster_isotropy: clusters of at most") as record:
        in_batch_cluster_isotropy(H, n_clusters=27, n_components=12)
    assert record[0].filename == __file__  # the user's line, not one of isotropy's
    assert (out.abs().amax(dim=1) < 1e-5).sum() >= 20
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        InBatchClusterIsotropy(n_clusters=2, n_components=1)(H)  # clusters of many rows: nothing said
