"""A tensor that holds no data (on the ``meta`` device, or a FakeTensor) is refused in one line, by every public name.

Such a tensor has a shape and a dtype but no values: torch's own error comes later, from deep inside
a metric (``Tensor.item() cannot be called on meta tensors``, ``Cannot copy out of meta tensor``) and
names neither the argument nor the cause. The one shared check (:func:`isotropy._utils.validation.check_X`,
and :func:`~isotropy._utils.validation.check_tensor_data` where a tensor does not go through it) says
which argument it is. Every public name of :mod:`isotropy`, :mod:`isotropy.torch` and
:mod:`isotropy.transforms` that takes a tensor has an entry here; a new public name without one fails
:func:`test_every_public_name_has_an_entry`.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import isotropy
import isotropy.torch as isotropy_torch
import isotropy.transforms as isotropy_transforms
from isotropy import IsotropyValueError
from isotropy._utils.errors import IsotropyTypeError

N, D = 40, 6
LABELS = np.arange(N) % 3
REAL = torch.tensor(np.random.default_rng(0).normal(size=(N, D)))


def _fit_transform(cls):
    """``cls().fit_transform(empty)`` (the check at fit time)."""
    return lambda X: cls().fit_transform(X)


def _fitted(cls):
    """``cls().transform(empty)`` after fitting on real data (the check at transform time)."""
    def call(X):
        kwargs = {"n_clusters": 2} if cls.__name__ in {"ClusterCentering", "ClusterIsotropy"} else {}
        if cls.__name__ == "ClusterIsotropy":
            kwargs["n_components"] = 1
        return cls(**kwargs).fit(REAL).transform(X)
    return call


# public name -> (how it is called on an empty tensor, the parameter named, the caller named)
CALLS = {
    # isotropy
    "isoscore": (lambda X: isotropy.isoscore(X), "X", "isoscore"),
    "isoscore_star": (lambda X: isotropy.isoscore_star(X), "X", "isoscore_star"),
    "partition_isotropy": (lambda X: isotropy.partition_isotropy(X), "X", "partition_isotropy"),
    "cosine_similarity_mean": (lambda X: isotropy.cosine_similarity_mean(X), "X", "cosine_similarity_mean"),
    "inter_type_cosine": (lambda X: isotropy.inter_type_cosine(X, LABELS), "X", "inter_type_cosine"),
    "intra_type_cosine": (lambda X: isotropy.intra_type_cosine(X, LABELS), "X", "intra_type_cosine"),
    "participation_ratio": (lambda X: isotropy.participation_ratio(X), "X", "participation_ratio"),
    "CovarianceAccumulator": (lambda X: isotropy.CovarianceAccumulator().update(X), "X_chunk",
                              "CovarianceAccumulator.update"),
    "rogue_dimension_share": (lambda X: isotropy.rogue_dimension_share(X), "X", "rogue_dimension_share"),
    "effective_rank": (lambda X: isotropy.effective_rank(X), "X", "effective_rank"),
    "rankme": (lambda X: isotropy.rankme(X), "X", "rankme"),
    "alignment": (lambda X: isotropy.alignment(X, X), "X", "alignment"),
    "uniformity": (lambda X: isotropy.uniformity(X), "X", "uniformity"),
    "token_norms": (lambda X: isotropy.token_norms(X, [f"t{i}" for i in range(N)]), "X", "token_norms"),
    # clusters
    "silhouette_samples": (lambda X: isotropy.silhouette_samples(X, LABELS), "X", "silhouette_samples"),
    "silhouette_score": (lambda X: isotropy.silhouette_score(X, LABELS), "X", "silhouette_score"),
    "calinski_harabasz_score": (lambda X: isotropy.calinski_harabasz_score(X, LABELS), "X",
                                "calinski_harabasz_score"),
    "davies_bouldin_score": (lambda X: isotropy.davies_bouldin_score(X, LABELS), "X", "davies_bouldin_score"),
    "dunn_index": (lambda X: isotropy.dunn_index(X, LABELS), "X", "dunn_index"),
    # dimension
    "twonn_dimension": (lambda X: isotropy.twonn_dimension(X), "X", "twonn_dimension"),
    "mle_dimension": (lambda X: isotropy.mle_dimension(X, n_neighbors=5), "X", "mle_dimension"),
    "local_mle_dimension": (lambda X: isotropy.local_mle_dimension(X, n_neighbors=5), "X", "local_mle_dimension"),
    "neighbour_dimensions": (lambda X: isotropy.neighbour_dimensions(X, n_neighbors=5), "X", "neighbour_dimensions"),
    "kneighbors": (lambda X: isotropy.kneighbors(X, n_neighbors=3), "X", "kneighbors"),
    "TwoNN": (lambda X: isotropy.TwoNN().fit(X), "X", "TwoNN.fit"),
    "MLE": (lambda X: isotropy.MLE(n_neighbors=5).fit(X), "X", "MLE.fit"),
    # isotropy.torch
    "torch.istar_penalty": (lambda H: isotropy_torch.istar_penalty(H, shrinkage_cov=None), "H", "istar_penalty"),
    "torch.cosine_penalty": (lambda H: isotropy_torch.cosine_penalty(H), "H", "cosine_penalty"),
    "torch.shrinkage_covariance": (lambda H: isotropy_torch.shrinkage_covariance(H), "H", "shrinkage_covariance"),
    "torch.IStarLoss": (lambda H: isotropy_torch.IStarLoss()(H), "H", "IStarLoss"),
    "torch.CosRegLoss": (lambda H: isotropy_torch.CosRegLoss()(H), "H", "CosRegLoss"),
    # isotropy.transforms: the functions, the estimators' fit and their transform
    "transforms.all_but_the_top": (lambda X: isotropy_transforms.all_but_the_top(X), "X", "all_but_the_top"),
    "transforms.cluster_center": (lambda X: isotropy_transforms.cluster_center(X), "X", "cluster_center"),
    "transforms.cluster_isotropy": (lambda X: isotropy_transforms.cluster_isotropy(X), "X", "cluster_isotropy"),
    "transforms.whiten": (lambda X: isotropy_transforms.whiten(X), "X", "whiten"),
    **{f"transforms.{name}": (_fit_transform(getattr(isotropy_transforms, name)), "X", f"{name}.fit")
       for name in ("AllButTheTop", "ClusterCentering", "ClusterIsotropy", "Whitening")},
    **{f"transforms.{name}.transform": (_fitted(getattr(isotropy_transforms, name)), "X", f"{name}.transform")
       for name in ("AllButTheTop", "ClusterCentering", "ClusterIsotropy", "Whitening")},
}

# public names that take no data matrix of their own
NOT_TAKING_X = {"IsotropyValueError", "IdentityShrinkageWarning", "SpanBoundWarning"}
# isoscore_from_covariance checks its 'cov' in isotropy/_kernels/isoscore.py (_check_shrinkage_cov), outside the
# files of this change: it still ends in torch's "Tensor.item() cannot be called on meta tensors"
KNOWN_GAPS = {"isoscore_from_covariance"}


def test_every_public_name_has_an_entry():
    public = ({*isotropy.__all__} - NOT_TAKING_X - KNOWN_GAPS
              | {f"torch.{name}" for name in isotropy_torch.__all__}
              | {f"transforms.{name}" for name in isotropy_transforms.__all__})
    covered = {name.removesuffix(".transform") for name in CALLS}
    assert public == covered, f"missing: {sorted(public - covered)}, unknown: {sorted(covered - public)}"


def _meta():
    return torch.empty(N, D, device="meta", dtype=torch.float64)


def _fake():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        return torch.empty(N, D, dtype=torch.float64)


EMPTY = {"meta": (_meta, "a tensor on the 'meta' device"),
         "fake": (_fake, "a FakeTensor")}


@pytest.mark.parametrize("kind", sorted(EMPTY))
@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_tensor_without_data_is_refused_in_one_line(name, kind):
    call, parameter, caller = CALLS[name]
    make, got = EMPTY[kind]
    with pytest.raises(IsotropyValueError) as info:
        call(make())
    message = str(info.value)
    assert message.startswith(f"The '{parameter}' parameter of {caller} must be a tensor holding data. Got {got}")
    assert message.endswith(" instead.") and "\n" not in message


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_sparse_tensor_is_refused_in_one_line(name):
    # torch's own error came from deep inside ("Could not run 'aten::aminmax' with arguments from the 'SparseCPU'
    # backend", naming neither the argument nor the cause)
    call, parameter, caller = CALLS[name]
    with pytest.raises(IsotropyValueError) as info:
        call(REAL.to_sparse())
    assert str(info.value) == (f"The '{parameter}' parameter of {caller} must be a dense tensor. Got a sparse tensor "
                               f"(layout torch.sparse_coo) instead; convert it with .to_dense().")


def _nested(layout, pieces=(REAL[:15], REAL[15:])):
    import warnings

    with warnings.catch_warnings():  # "The PyTorch API of nested tensors is in prototype stage"
        warnings.simplefilter("ignore", UserWarning)
        return torch.nested.nested_tensor(list(pieces), layout=layout)


@pytest.mark.parametrize("layout", ["strided", "jagged"])
@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_nested_tensor_is_refused_in_one_line(name, layout):
    # torch's own error: "Internal error: NestedTensorImpl doesn't support sizes. Please file an issue." (strided);
    # a jagged one was called "a sparse tensor" and told to use .to_dense(), which nested tensors do not have
    call, parameter, caller = CALLS[name]
    with pytest.raises(IsotropyValueError) as info:
        call(_nested(getattr(torch, layout)))
    assert isinstance(info.value, TypeError)
    assert str(info.value) == (f"The '{parameter}' parameter of {caller} must be a dense tensor. Got a nested tensor "
                               f"of 2 pieces instead; concatenate the rows of its pieces with "
                               f"torch.cat({parameter}.unbind()) (not .to_padded_tensor(0), whose padding would count "
                               f"as samples).")


def test_the_advice_for_a_nested_tensor_gives_its_rows():
    nested = _nested(torch.strided)
    assert torch.equal(torch.cat(nested.unbind()), REAL)
    assert isotropy.isoscore(torch.cat(nested.unbind())) == isotropy.isoscore(REAL)


def test_a_nested_tensor_of_vectors_is_refused_in_one_line():
    with pytest.raises(IsotropyValueError, match=r"^The 'X' parameter of isoscore must be a dense tensor\. Got a "
                                                 r"nested tensor of 2 pieces instead; its pieces are 1-d: join them "
                                                 r"into one dense tensor with torch\.cat\(X\.unbind\(\)\), or "
                                                 r"torch\.stack\(X\.unbind\(\)\) if they have one shape\.$"):
        isotropy.isoscore(_nested(torch.strided, [REAL[0], REAL[1, :3]]))


def test_a_scipy_sparse_matrix_is_refused_in_one_line():
    # it was read as "must be a real-valued array. Got dtype object" (numpy's 0-d object array of it)
    import scipy.sparse

    with pytest.raises(TypeError, match=r"^The 'X' parameter of isoscore must be a dense array\. Got a scipy sparse "
                                        r"csr_\w+ instead; convert it with \.toarray\(\)\.$"):
        isotropy.isoscore(scipy.sparse.csr_matrix(REAL.numpy()))


def test_isoscore_from_covariance_refuses_a_nested_cov():
    # torch's own error: "Internal error: NestedTensorImpl doesn't support sizes"
    with pytest.raises(IsotropyTypeError, match=r"^The 'cov' parameter of isoscore_from_covariance must be a dense "
                                                r"tensor\. Got a nested tensor of 2 pieces instead; "):
        isotropy.isoscore_from_covariance(_nested(torch.strided, [torch.eye(D), torch.eye(D)]))


def test_isoscore_from_covariance_refuses_a_meta_cov():
    with pytest.raises(IsotropyValueError, match=r"The 'cov' parameter of isoscore_from_covariance must be a tensor "
                                                 r"holding data"):
        isotropy.isoscore_from_covariance(torch.empty(D, D, device="meta", dtype=torch.float64))


@pytest.mark.parametrize(("call", "parameter", "caller"), [
    (lambda S: isotropy.isoscore_star(REAL, shrinkage_cov=S), "shrinkage_cov", "isoscore_star"),
    (lambda S: isotropy_torch.istar_penalty(REAL, shrinkage_cov=S), "shrinkage_cov", "istar_penalty"),
    (lambda S: isotropy_torch.IStarLoss(shrinkage_cov=S), "shrinkage_cov", "IStarLoss"),
], ids=["isoscore_star", "istar_penalty", "IStarLoss"])
def test_an_empty_shrinkage_cov_is_refused(call, parameter, caller):
    with pytest.raises(IsotropyValueError, match=rf"^The '{parameter}' parameter of {caller} must be a tensor holding "
                                                 rf"data. Got a tensor on the 'meta' device instead.$"):
        call(torch.empty(D, D, device="meta", dtype=torch.float64))


def test_empty_labels_are_refused():
    with pytest.raises(IsotropyValueError, match=r"^The 'labels' parameter of silhouette_score must be a tensor holding "
                                                 r"data. Got a tensor on the 'meta' device instead.$"):
        isotropy.silhouette_score(REAL, torch.empty(N, device="meta", dtype=torch.int64))


def test_tensors_with_data_still_pass_under_torch_compile():
    """The check reads no values: the losses still trace (dynamo sees the tensor, not its data) and backpropagate."""
    H = torch.randn(32, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(0), requires_grad=True)
    loss = torch.compile(isotropy_torch.IStarLoss(), backend="eager")(H)
    loss.backward()
    assert float(loss.detach()) == pytest.approx(float(isotropy_torch.IStarLoss()(H.detach())), rel=1e-12)
    assert H.grad is not None and torch.isfinite(H.grad).all()
