"""The differentiable in-batch cluster transform: gradcheck, the fitted numpy transform, k-means vs scikit-learn."""

from __future__ import annotations

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
