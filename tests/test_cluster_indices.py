"""Calinski-Harabasz and Davies-Bouldin against scikit-learn 1.x (sklearn.metrics, same arrays);
the Dunn index against a brute-force reference built from scipy.spatial.distance.cdist;
closed forms, invariances, errors, numpy/torch parity and gradients."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist
from sklearn import metrics as skm

from isotropy import (
    IsotropyValueError,
    calinski_harabasz_score,
    davies_bouldin_score,
    dunn_index,
)


def _blobs(rng, n, d, k, offset=3.0):
    centres = rng.normal(scale=2.0, size=(k, d))
    labels = rng.integers(0, k, n)
    labels[:k] = np.arange(k)
    return centres[labels] + rng.normal(size=(n, d)) + offset, labels


def _dunn_reference(X, labels, metric):
    D = cdist(X, X, metric=metric)
    same = labels[:, None] == labels[None, :]
    return D[~same].min() / D[same].max()


SHAPES = [(40, 2, 2), (301, 17, 5), (500, 3, 40), (120, 1, 4)]


@pytest.mark.parametrize(("n", "d", "k"), SHAPES)
def test_calinski_harabasz_and_davies_bouldin_match_sklearn(rng, n, d, k):
    X, labels = _blobs(rng, n, d, k)
    for ours, theirs in ((calinski_harabasz_score, skm.calinski_harabasz_score),
                         (davies_bouldin_score, skm.davies_bouldin_score)):
        got = ours(X, labels)
        assert isinstance(got, float)
        assert got == pytest.approx(theirs(X, labels), rel=1e-10)
        X32 = X.astype(np.float32)  # computed in float64 from the float32 values
        assert ours(X32, labels) == pytest.approx(theirs(X32.astype(np.float64), labels), rel=1e-10)


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
@pytest.mark.parametrize(("n", "d", "k"), [*SHAPES[:3], (120, 2, 4)])  # 1-d cosine distances are only 0 or 2
def test_dunn_matches_brute_force_cdist(rng, metric, n, d, k):
    X, labels = _blobs(rng, n, d, k)
    expected = _dunn_reference(X, labels, metric)
    for chunk_size in (None, 37):
        assert dunn_index(X, labels, metric=metric, chunk_size=chunk_size) == pytest.approx(expected, rel=1e-10)


def test_closed_forms():
    # two pairs of points 1 apart, 10 apart from each other:
    # CH = (4 * 25 / 1) / (4 * 0.25 / 2) = 200, DB = (0.5 + 0.5) / 10, Dunn = 10 / 1
    X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    assert calinski_harabasz_score(X, [0, 0, 1, 1]) == pytest.approx(200.0, rel=1e-14)
    assert davies_bouldin_score(X, [0, 0, 1, 1]) == pytest.approx(0.1, rel=1e-14)
    assert dunn_index(X, [0, 0, 1, 1]) == pytest.approx(10.0, rel=1e-14)
    # cosine: directions 0 and 90 degrees vs 180 and 270 degrees: separation 1 - cos 90, diameter 1 - cos 90
    V = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])
    assert dunn_index(V, [0, 0, 1, 1], metric="cosine") == pytest.approx(1.0, rel=1e-14)


def test_degenerate_cases_follow_sklearn():
    X = np.array([[0.0, 0.0], [0.0, 0.0], [3.0, 4.0], [3.0, 4.0]])  # clusters are repeated points
    labels = [0, 0, 1, 1]
    assert calinski_harabasz_score(X, labels) == skm.calinski_harabasz_score(X, labels) == 1.0
    assert davies_bouldin_score(X, labels) == skm.davies_bouldin_score(X, labels) == 0.0
    assert dunn_index(X, labels) == np.inf


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_clusters_of_one_repeated_point_follow_the_convention_whatever_the_rounding(backend):
    # each cluster one repeated point whose mean rounds (3·0.1/3 != 0.1): the spread was rounding, and
    # Calinski-Harabasz read 12.0 (numpy, as scikit-learn) and 0.923 (torch) for the documented 1.0 of W = 0
    import torch
    wrap = torch.tensor if backend == "torch" else np.asarray
    A = np.tile([[0.1, 0.7, 1 / 3]], (9, 1))
    assert float(calinski_harabasz_score(wrap(A), [0, 0, 0, 1, 1, 1, 2, 2, 2])) == 1.0
    assert float(davies_bouldin_score(wrap(A), [0, 0, 0, 1, 1, 1, 2, 2, 2])) == 0.0
    C = np.tile([[0.1, 0.7]], (6, 1))
    C[3:, 0] = np.nextafter(0.1, 1)  # two such clusters 1 ulp apart (15.876 before)
    assert float(calinski_harabasz_score(wrap(C), [0, 0, 0, 1, 1, 1])) == 1.0


@pytest.mark.parametrize("offset", [1e8, 1e10, 1e12])
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_an_offset_costs_no_precision(offset, backend, rng):
    # the reference: scikit-learn on the data less their first row, a subtraction that is exact here (Sterbenz);
    # plain means lost the clusters' spread to the offset (CH off by 2e-8 at 1e8, 3e-4 at 1e12)
    torch = pytest.importorskip("torch")
    X, labels = _blobs(rng, 300, 6, 3)
    X = X + offset
    data = torch.tensor(X) if backend == "torch" else X
    assert float(calinski_harabasz_score(data, labels)) == pytest.approx(
        skm.calinski_harabasz_score(X - X[0], labels), rel=1e-13)
    assert float(davies_bouldin_score(data, labels)) == pytest.approx(
        skm.davies_bouldin_score(X - X[0], labels), rel=1e-13)


def test_multilabel_each_distinct_row_is_a_cluster(rng):
    X, _ = _blobs(rng, 200, 6, 3)
    Y = rng.integers(0, 2, size=(200, 3)).astype(np.int8)
    _, ids = np.unique(Y, axis=0, return_inverse=True)
    ids = ids.ravel()
    assert calinski_harabasz_score(X, Y) == pytest.approx(skm.calinski_harabasz_score(X, ids), rel=1e-10)
    assert davies_bouldin_score(X, Y) == pytest.approx(skm.davies_bouldin_score(X, ids), rel=1e-10)
    assert dunn_index(X, Y) == pytest.approx(_dunn_reference(X, ids, "euclidean"), rel=1e-10)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), k=st.integers(2, 6), shift=st.floats(-1e3, 1e3), scale=st.floats(0.01, 100))
def test_invariances(seed, k, shift, scale):
    rng = np.random.default_rng(seed)
    X, labels = _blobs(rng, 50, 4, k)
    Q, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    relabelled = rng.permutation(k)[labels] * 3 - 7
    order = rng.permutation(50)
    for fn in (calinski_harabasz_score, davies_bouldin_score, dunn_index):
        base = fn(X, labels)
        assert fn(X, relabelled) == pytest.approx(base, rel=1e-10)  # label permutation
        assert fn(X[order], labels[order]) == pytest.approx(base, rel=1e-10)  # sample order
        assert fn(X @ Q + shift, labels) == pytest.approx(base, rel=1e-7)  # rigid motion
        assert fn(scale * X, labels) == pytest.approx(base, rel=1e-10)  # all three are scale-free


@pytest.mark.parametrize("fn", [calinski_harabasz_score, davies_bouldin_score, dunn_index])
def test_errors(fn):
    X = np.random.default_rng(0).normal(size=(10, 3))
    name = fn.__name__
    with pytest.raises(IsotropyValueError, match=f"'labels' parameter of {name} must define between 2 and"):
        fn(X, np.zeros(10, int))
    with pytest.raises(IsotropyValueError, match="Got 10 clusters instead"):
        fn(X, np.arange(10))
    with pytest.raises(IsotropyValueError, match="one entry per sample \\(10\\). Got 11 instead"):
        fn(X, np.arange(11) % 2)
    bad = X.copy()
    bad[0, 0] = np.inf
    with pytest.raises(IsotropyValueError, match=f"'X' parameter of {name} must contain only finite"):
        fn(bad, np.arange(10) % 2)


def test_dunn_bad_options():
    X = np.random.default_rng(0).normal(size=(10, 3))
    with pytest.raises(IsotropyValueError, match="'metric' parameter of dunn_index must be one of"):
        dunn_index(X, np.arange(10) % 2, metric="cityblock")
    with pytest.raises(IsotropyValueError, match="'chunk_size' parameter of dunn_index"):
        dunn_index(X, np.arange(10) % 2, chunk_size=0)


@pytest.mark.parametrize("fn", [calinski_harabasz_score, davies_bouldin_score, dunn_index])
def test_backend_parity_and_gradients(backend, rng, fn):
    X, labels = _blobs(rng, 80, 5, 4)
    labels[0] = 9  # a singleton cluster: zero spread, still finite gradients
    expected = fn(X, labels)
    Xb = backend(X, requires_grad=True)
    got = fn(Xb, backend(labels))
    assert float(got.detach() if hasattr(got, "detach") else got) == pytest.approx(expected, rel=1e-10)
    if type(Xb).__module__.startswith("torch"):
        import torch

        assert got.ndim == 0 and got.dtype == torch.float64
        (grad,) = torch.autograd.grad(got, Xb)
        assert torch.isfinite(grad).all() and grad.abs().sum() > 0
        if fn is not dunn_index:  # smooth in X; Dunn is piecewise (min / max of distances)
            assert torch.autograd.gradcheck(lambda Z: fn(Z, labels[:12]), (Xb[:12, :3].detach().requires_grad_(),))


@pytest.mark.parametrize("dtype", [np.int64, np.uint16, np.float64])
def test_label_matrix_with_values_other_than_0_and_1_is_rejected(dtype):
    # int8 casting would wrap 256 onto 0 and silently merge two clusters
    labels = np.array([[256, 1], [0, 1], [3, 1], [0, 1]], dtype=dtype)
    X = np.random.default_rng(0).standard_normal((4, 2))
    with pytest.raises(ValueError, match="'labels' parameter of calinski_harabasz_score must contain only 0 and 1"):
        calinski_harabasz_score(X, labels)


@pytest.mark.parametrize("scale", [1e-9, 1e-20, 1e-30, 1e-31, 1e-100, 1e100], ids=lambda s: f"{s:.0e}")
def test_davies_bouldin_does_not_depend_on_the_scale(scale):
    # scikit-learn's absolute 1e-8 test made the index 0.0 for data near 1e-9 to 1e-30 (the value came back below,
    # where the data are rescaled); the test is relative to the largest spread or distance now
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 5))
    labels = (X[:, 0] > 0).astype(int)
    reference = skm.davies_bouldin_score(X, labels)
    assert davies_bouldin_score(X * scale, labels) == pytest.approx(reference, rel=1e-10)
    points = np.repeat([[0.0, 0.0], [scale, scale]], 3, axis=0)  # no spread at any scale: 0.0, as scikit-learn
    assert davies_bouldin_score(points, [0, 0, 0, 1, 1, 1]) == 0.0


def test_cosine_dunn_of_a_row_in_two_clusters_is_zero_not_negative():
    """A row repeated in two clusters: the clusters touch, Dunn = 0. The recomputed pair read 1 - x.y/(|x||y|),
    which rounding made -1.2e-16 in float32 and -7.3e-5 at an offset of 1e6 (a new-user trial): now half the
    squared distance of the unit rows, 0 for parallel rows and never negative."""
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 3, 1200)
    X = rng.normal(size=(1200, 16)) + labels[:, None]
    X[100] = X[7]
    assert labels[100] != labels[7]
    for Y in (X, X.astype(np.float32), X + 1e6):
        assert dunn_index(Y, labels, metric="cosine") == 0.0


def _side_by_side(rng, m):
    """Two tight clusters 1e-5 apart at 1e3 from the origin, a third at -1e3 (a new-user trial's data)."""
    X = np.vstack([1e3 + 1e-6 * rng.normal(size=(m, 3)), 1e3 + 1e-5 + 1e-6 * rng.normal(size=(m, 3)),
                   -1e3 + rng.normal(size=(m, 3))])
    return X, np.repeat([0, 1, 2], m)


@pytest.mark.parametrize("m", [20, 100])
def test_dunn_of_tight_clusters_side_by_side_far_from_the_centre_is_exact(m):
    # the closest pair was the one of the smallest product distance q_i + q_j - 2 u_i.u_j, which cancellation at
    # q ~ 1e6 made the wrong pair: 3.58e-6 against 3.02e-6 (+18.6 %, m = 20) and 3.25e-6 against 2.48e-6 (m = 100).
    # Now every pair the rounding bound cannot tell from the closest is compared by its exact distance
    X, labels = _side_by_side(np.random.default_rng(0), m)
    expected = _dunn_reference(X, labels, "euclidean")
    for chunk_size in (None, 7, 2 * m + 1):
        assert dunn_index(X, labels, chunk_size=chunk_size) == pytest.approx(expected, rel=1e-12)
    torch = pytest.importorskip("torch")
    assert float(dunn_index(torch.tensor(X), labels)) == pytest.approx(expected, rel=1e-12)
    # the farthest pair by the same rule: the diameters of tight clusters far from the centre (a repeated point,
    # the majority); the product distances took a pair 3.3x (m = 20) and 4.4x (m = 100) shorter than the diameter
    rng = np.random.default_rng(1)
    Y = np.vstack([1e3 + 1e-6 * rng.normal(size=(m, 3)), 1e3 + 1e-3 + 1e-6 * rng.normal(size=(m, 3)),
                   np.full((3 * m, 3), -1e3)])
    groups = np.repeat([0, 1, 2], [m, m, 3 * m])
    assert dunn_index(Y, groups) == pytest.approx(_dunn_reference(Y, groups, "euclidean"), rel=1e-12)


def test_dunn_gradient_is_finite_when_two_clusters_share_a_point():
    # the separation of two clusters sharing a point is 0 (a legal index of 0); its sqrt(0) gave a NaN gradient to
    # every coordinate of the two rows; the subgradient 0 is taken, and elsewhere the gradient is unchanged
    import torch

    X = torch.tensor([[0.0, 0], [1, 0], [0, 1], [1, 1], [0, 0]], dtype=torch.float64, requires_grad=True)
    value = dunn_index(X, np.array([0, 0, 1, 1, 1]))
    value.backward()
    assert float(value) == 0.0
    assert torch.equal(X.grad, torch.zeros_like(X))
    Z = torch.tensor(np.random.default_rng(3).normal(size=(24, 3)), requires_grad=True)
    assert torch.autograd.gradcheck(lambda Z: dunn_index(Z, np.arange(24) % 3), (Z,))


def _traced_peak(fn):
    import tracemalloc

    tracemalloc.start()
    try:
        value = fn()
        return value, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(("ours", "theirs"), [(calinski_harabasz_score, skm.calinski_harabasz_score),
                                              (davies_bouldin_score, skm.davies_bouldin_score)])
def test_many_clusters_cost_no_samples_by_clusters_matrix(ours, theirs):
    # the cluster sums were a one-hot (n, k) float64 matrix product, and X was copied to float64 about 5 times:
    # 353 MiB (CH) and 421 MiB (DB) here, beyond n k 8 bytes (305 MiB), and "Unable to allocate 8.05 GiB" for
    # 50,000 samples in 21,622 clusters. Now segment sums over the rows sorted by cluster, a block of rows at a time
    rng = np.random.default_rng(0)
    n, d, k = 20_000, 64, 2_000
    labels = rng.integers(0, k, n)
    labels[:k] = np.arange(k)
    X = (rng.normal(size=(k, d))[labels] + rng.normal(size=(n, d)) + 3.0).astype(np.float32)
    got, peak = _traced_peak(lambda: ours(X, labels))
    assert peak < min(n * k * 8 / 6, 10 * X.nbytes), f"peak {peak / 2**20:.1f} MiB"
    assert got == pytest.approx(theirs(X.astype(np.float64), labels), rel=1e-10)
    torch = pytest.importorskip("torch")  # the torch path (index_add, no one-hot matrix either) agrees
    assert float(ours(torch.tensor(X), torch.tensor(labels))) == pytest.approx(got, rel=1e-10)


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_dunn_holds_no_float64_copy_of_the_data(rng, metric):
    # dunn_index held three float64 copies of X (the working copy, the centred U, and X again for the two extreme
    # pairs): 6.0x a float32 input here with small blocks (8.0x cosine). Now U is made a block of rows at a time
    n, d = 3_000, 256
    X, labels = _blobs(rng, n, d, 5)
    X32 = X.astype(np.float32)
    expected = _dunn_reference(X32.astype(np.float64), labels, metric)
    got, peak = _traced_peak(lambda: dunn_index(X32, labels, metric=metric, chunk_size=256))
    assert peak < 2.5 * X32.nbytes, f"peak {peak / X32.nbytes:.2f}x the input"
    assert got == pytest.approx(expected, rel=1e-10)
    assert dunn_index(X32, labels, metric=metric) == got  # the block size does not change the pair found


def _davies_bouldin_reference(X, labels):
    """The formula by brute force from exact centroid differences (k x k x d), coinciding centroids skipped."""
    ks = np.unique(labels)
    C = np.array([X[labels == c].mean(axis=0) for c in ks])
    s = np.array([np.linalg.norm(X[labels == c] - C[i], axis=1).mean() for i, c in enumerate(ks)])
    dist = np.sqrt(((C[:, None, :] - C[None, :, :]) ** 2).sum(axis=2))
    return np.mean(np.max((s[:, None] + s[None, :]) / np.where(dist == 0, np.inf, dist), axis=1))


def test_davies_bouldin_with_thousands_of_clusters_matches_sklearn():
    # the worst partner of each of k clusters comes from a k x k Gram product of the centroids a block of rows at a
    # time, its ratio from the exact centroid differences: scikit-learn's value, 2,000 clusters of 3 samples (no
    # singletons: scikit-learn's Gram-based distance of a singleton to its centroid reads ~1e-7, not 0)
    rng = np.random.default_rng(0)
    n, d, k = 6_000, 16, 2_000
    labels = rng.permutation(np.arange(n) % k)
    X = rng.normal(scale=2.0, size=(k, d))[labels] + rng.normal(size=(n, d)) + 3.0
    assert davies_bouldin_score(X, labels) == pytest.approx(skm.davies_bouldin_score(X, labels), rel=1e-10)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_davies_bouldin_partners_are_exact_where_the_gram_is_not(backend):
    # two groups of clusters 1e6 apart, centroids ~1 apart within a group (the Gram's rounding, ~1e-4 of a squared
    # distance, cannot order the partners), and two clusters of the same points, whose centroids coincide exactly
    # (skipped): the brute-force value from exact differences
    torch = pytest.importorskip("torch") if backend == "torch" else None
    rng = np.random.default_rng(1)
    k, d = 300, 5
    centres = rng.normal(size=(k, d)) + np.where(np.arange(k) < k // 2, 0.0, 1e6)[:, None]
    labels = np.repeat(np.arange(k), 4)
    X = centres[labels] + 0.1 * rng.normal(size=(4 * k, d))
    X[12:16] = X[8:12]  # clusters 2 and 3
    expected = _davies_bouldin_reference(X, labels)
    got = davies_bouldin_score(torch.tensor(X) if torch else X, torch.tensor(labels) if torch else labels)
    assert float(got) == pytest.approx(expected, rel=1e-9)  # the reference's plain means at 1e6: ~1e-11 off


def test_davies_bouldin_of_clusters_of_one_repeated_point_compares_no_pair(monkeypatch):
    """A review: with every spread 0 the index is 0 by its degenerate rule, but every pair was first a candidate of
    the worst-partner search (639,200 of 640,000 at k = 800). The rule is now decided before the pairs; data whose
    bounds cannot tell still run the full search, with scikit-learn's values."""
    from sklearn.metrics import davies_bouldin_score as sk_davies_bouldin

    import isotropy._kernels.clusters as kernels
    import isotropy.metrics.cluster_indices as module

    calls = []
    search = kernels._worst_partners
    monkeypatch.setattr(module, "_worst_partners", lambda *a: calls.append(1) or search(*a))
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(800), 2)
    X = rng.normal(size=(800, 8))[labels]  # each cluster one point, twice
    assert davies_bouldin_score(X, labels) == 0.0 and not calls
    X = X + 1e-3 * rng.normal(size=X.shape)
    assert davies_bouldin_score(X, labels) == pytest.approx(sk_davies_bouldin(X, labels), rel=1e-10) and calls


def _count_recomputed_pairs(monkeypatch) -> list:
    """The pairs the Dunn kernel recomputes from their rows, one count per call (``clusters._pair_values``)."""
    from isotropy._kernels import clusters

    counted = []
    original = clusters._pair_values

    def counting(Wi, Wj, a, b, metric, xp, work=None):
        counted.append(int(a.shape[0]))
        return original(Wi, Wj, a, b, metric, xp, work)

    monkeypatch.setattr(clusters, "_pair_values", counting)
    return counted


def test_dunn_of_tied_distances_recomputes_one_pair_per_block(monkeypatch):
    # one-hot rows: every pair at distance sqrt(2), every pair of a block within the product distances' rounding
    # bound of the block's extreme, and each was recomputed from its rows (a user trial: tens of seconds for 1,000 rows
    # of 1,000 features). Where that bound is negligible against the extreme, the extreme's pair is taken as before
    counted = _count_recomputed_pairs(monkeypatch)
    X, labels = np.eye(300), np.arange(300) % 7
    assert dunn_index(X, labels, chunk_size=100) == pytest.approx(_dunn_reference(X, labels, "euclidean"), rel=1e-12)
    assert sum(counted) <= 2 * 6  # one pair per side of each of the 6 blocks on or above the diagonal


def _cosine_dunn_extended(X, labels):
    """The cosine Dunn index by brute force in extended precision (np.longdouble): 1 - cos as half the squared distance
    of the unit rows, over every pair (no product kernel, no cancellation of 1 - x.y/(|x||y|))."""
    L = np.asarray(X, dtype=np.longdouble)
    U = L / np.sqrt((L * L).sum(axis=1))[:, None]
    D = ((U[:, None, :] - U[None, :, :]) ** 2).sum(axis=-1) / 2
    same = labels[:, None] == labels[None, :]
    pair = same & ~np.eye(len(labels), dtype=bool)
    return float(D[~same].min() / D[pair].max())


def test_cosine_dunn_of_a_float32_tensor_has_the_float64_value_of_its_values():
    # the two pairs were recomputed from the float32 rows, where the unit rows' difference of nearly parallel rows
    # cancelled: 0.0022299 for the 0.0011662 of numpy on the same float32 values (+91 %)
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    A = (rng.normal(size=(60, 5)) + 1e6).astype(np.float32)
    labels = np.arange(60) % 3
    expected = _cosine_dunn_extended(A, labels)
    assert dunn_index(A, labels, metric="cosine") == pytest.approx(expected, rel=1e-9)
    t = torch.tensor(A, requires_grad=True)
    got = dunn_index(t, labels, metric="cosine")
    assert got.dtype == torch.float64 and float(got.detach()) == pytest.approx(expected, rel=1e-9)
    (grad,) = torch.autograd.grad(got, t)
    assert grad.dtype == torch.float32 and torch.isfinite(grad).all() and grad.abs().sum() > 0
    assert float(dunn_index(torch.tensor(A), labels)) == pytest.approx(_dunn_reference(A.astype(np.float64), labels,
                                                                                       "euclidean"), rel=1e-12)


def test_cosine_dunn_of_tight_clusters_far_from_the_origin_recomputes_few_pairs(monkeypatch):
    # the cosine rounding bound held a constant 4τ for the unit rows, far above the distances inside tight clusters
    # far from the origin (1e-18): every pair of a cluster in a block was recomputed from its rows (141,578 of the
    # 180,300 pairs here; O(n²) work of Python-side gathers, a user trial's slowest case). The unit rows' share
    # of the bound is now relative to the block's distances (τ·sqrt(q_i + q_j))
    counted = _count_recomputed_pairs(monkeypatch)
    rng = np.random.default_rng(0)
    labels = np.arange(600) % 3
    X = rng.normal(size=(3, 5))[labels] + 1e6 + 1e-3 * rng.normal(size=(600, 5))
    # float64's own unit rows carry a relative 1e-16 of 1, 1e-7 of these directions' differences: rel=1e-7
    assert dunn_index(X, labels, metric="cosine", chunk_size=200) == pytest.approx(_cosine_dunn_extended(X, labels),
                                                                                   rel=1e-7)
    assert sum(counted) <= 2 * 6 * 4  # a few pairs per side of each of the 6 blocks on or above the diagonal


@pytest.mark.parametrize(("labels", "got"), [
    (np.array([[0, 1], [1, 1], [0, 2], [0, 1]]), "Got 2 at row 2, column 1 instead"),
    (np.array([[0, 1], [1, 0.5], [0, 0], [0, 1]]), "Got 0.5 at row 1, column 1 instead"),
    (np.array([[0, 1], [1, 1], [0, 0], [-1, 1]]), "Got -1 at row 3, column 0 instead"),
    (np.array([["0", "1"], ["1", "1"], ["0", "0"], ["0", "1"]]), r"<U1 \(not numbers: '0' at row 0, column 0\)"),
    # an object matrix names its first entry that is not 0 or 1 (it said "not numbers: 1 at row 0, column 0")
    (np.array([[0, 1], [1, 1], [0, "a"], [0, 1]], dtype=object), r"\(not numbers: 'a' at row 2, column 1\)"),
    (np.array([[0, 1], [1, 1], [0, 0], [0, 1]], dtype=object), r"\(0s and 1s held as Python objects: convert"),
])
def test_label_matrix_refusal_names_the_value_and_where_it_is(labels, got):
    # the refusal said "Got other values instead", naming neither the value nor its place
    X = np.random.default_rng(0).standard_normal((4, 2))
    with pytest.raises(ValueError, match="must contain only 0 and 1 when 2-d .*" + got):
        davies_bouldin_score(X, labels)


def test_davies_bouldin_skips_centroids_that_coincide_up_to_their_rounding():
    # clusters 0 and 1 both have the mean (-2/3, 0, 0), computed from different samples: their centroids came out one
    # rounding apart, and the ratio of their spreads to that rounding made the index ~1e16 instead of the exact value
    # (scikit-learn's, whose plain means happen to be equal here), which skips coinciding centroids
    X = np.array([[0, 0, -1], [1, 0, 0], [-1, 0, 1], [0, -1, 0], [-1, -1, 0], [0, 0, 0], [0, 0, 0], [0, 0, 1],
                  [1, 0, -2], [-1, 0, 0], [-1, 1, 0], [0, 0, 0], [0, 0, 0], [-1, 0, 0], [-1, 1, -1], [1, 1, -1],
                  [0, 1, 0], [-1, 0, 1], [-1, 0, 0], [0, 0, 0], [1, 0, -1], [1, -1, 0], [0, 1, 0]], dtype=float)
    labels = np.array([2, 7, 8, 1, 0, 2, 4, 0, 2, 1, 1, 4, 2, 4, 0, 6, 6, 5, 3, 8, 6, 2, 7])
    expected = skm.davies_bouldin_score(X, labels)
    assert davies_bouldin_score(X, labels) == pytest.approx(expected, rel=1e-12)
    torch = pytest.importorskip("torch")
    assert davies_bouldin_score(torch.tensor(X), labels).item() == pytest.approx(expected, rel=1e-12)


def test_cosine_dunn_index_of_parallel_rows_is_refused_whatever_their_norms():
    # every row on one ray: separation and diameter are both 0 under the cosine metric, 0/0, refused for norms that are
    # powers of two (exact unit rows); for others (0.1, 2.1, 3.3) the unit rows' rounding gave an index of 0.0
    for scale in ([1.0, 2.0, 4.0, 8.0], [1.0, 2.1, 3.3, 0.1]):
        X = np.outer(scale, [1.0, 1.0])
        with pytest.raises(IsotropyValueError, match="the index is 0/0"):
            dunn_index(X, [0, 0, 1, 1], metric="cosine")
    # rows on two rays: the diameter is 0 and the clusters are apart, inf as documented
    X = np.array([[1.0, 1.0], [2.1, 2.1], [0.3, 0.0], [1.7, 0.0]])
    assert dunn_index(X, [0, 0, 1, 1], metric="cosine") == float("inf")


def test_the_degenerate_conventions_are_said_and_the_values_are_scikit_learns():
    """A trial: a layer of identical rows read Davies-Bouldin 0.0 (its best value) and Calinski-Harabasz 1.0 beside
    NaN IsoScore and TwoNN with their warnings. The values stay scikit-learn's; where they stand for a division by 0
    a warning says so. Compact clusters apart (every spread 0, centroids distinct) are Davies-Bouldin's own limit 0:
    no warning there."""
    import warnings

    from sklearn import metrics as skm

    from isotropy import calinski_harabasz_score, davies_bouldin_score

    labels = np.arange(20) % 2
    same = np.ones((20, 3))
    with pytest.warns(UserWarning, match=r"^calinski_harabasz_score: every cluster is one point repeated \(no spread "
                                         r"within clusters\), so the index divides by 0; 1 by scikit-learn's "
                                         r"convention, not a measured value\.$"):
        assert calinski_harabasz_score(same, labels) == skm.calinski_harabasz_score(same, labels) == 1.0
    with pytest.warns(UserWarning, match=r"^davies_bouldin_score: every cluster has the same centroid \(no spread "
                                         r"between clusters\), so the index divides by 0; 0 by scikit-learn's "
                                         r"convention"):
        assert davies_bouldin_score(same, labels) == skm.davies_bouldin_score(same, labels) == 0.0
    Z = np.random.default_rng(0).normal(size=(10, 3))
    Z -= Z.mean(axis=0)
    mirrored = np.vstack([Z, -Z])  # two clusters of one centroid, spread out
    with pytest.warns(UserWarning, match=r"^davies_bouldin_score: every cluster has the same centroid"):
        assert davies_bouldin_score(mirrored, np.repeat([0, 1], 10)) == 0.0
    points = np.repeat(np.eye(2, 3), 10, axis=0)  # two repeated points apart
    with pytest.warns(UserWarning, match=r"one point repeated, apart from each other"):
        assert calinski_harabasz_score(points, np.repeat([0, 1], 10)) == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert davies_bouldin_score(points, np.repeat([0, 1], 10)) == 0.0  # the limit of compact clusters apart
        X = np.random.default_rng(1).normal(size=(30, 4))
        y = np.arange(30) % 3
        assert davies_bouldin_score(X, y) == pytest.approx(skm.davies_bouldin_score(X, y), rel=1e-10)
        assert calinski_harabasz_score(X, y) == pytest.approx(skm.calinski_harabasz_score(X, y), rel=1e-10)
