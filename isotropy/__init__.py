"""isotropy: the geometry of embedding spaces.

Exact, fast metrics of isotropy (IsoScore, IsoScore*, I(W), cosine statistics), of clusters
(silhouette, Calinski-Harabasz, Davies-Bouldin, Dunn) and of intrinsic dimension (TwoNN, MLE,
participation ratio), for numpy arrays and torch tensors of shape ``(n_samples, n_features)``.

Submodules are imported on first use, so ``import isotropy`` stays fast and never imports torch.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# public name -> submodule that defines it (PEP 562 lazy attributes)
_EXPORTS = {
    "isoscore": "isotropy.isoscore",
    "isoscore_star": "isotropy.isoscore",
    "isoscore_from_covariance": "isotropy.isoscore",
    "partition_isotropy": "isotropy.partition",
    "cosine_similarity_mean": "isotropy.cosine",
    "inter_type_cosine": "isotropy.cosine",
    "intra_type_cosine": "isotropy.cosine",
    "participation_ratio": "isotropy.covariance",
    "CovarianceAccumulator": "isotropy.covariance",
    "silhouette_samples": "isotropy.silhouette",
    "silhouette_score": "isotropy.silhouette",
    "calinski_harabasz_score": "isotropy.cluster_indices",
    "davies_bouldin_score": "isotropy.cluster_indices",
    "dunn_index": "isotropy.cluster_indices",
    "twonn_dimension": "isotropy.dimension",
    "rogue_dimension_share": "isotropy.rogue",
    "mle_dimension": "isotropy.dimension",
    "local_mle_dimension": "isotropy.dimension",
    "extract_token_embeddings": "isotropy.contextual",
    "IsotropyValueError": "isotropy._validation",
}

__all__ = sorted(_EXPORTS)  # noqa: PLE0605 (the lazy exports are the public names)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'isotropy' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


# ``isoscore`` names both a submodule and its function. Bind the function now (numpy only, no
# torch): otherwise a later ``import isotropy.isoscore`` would set the package attribute to the
# module and ``from isotropy import isoscore`` would return the module instead of the function.
from isotropy.isoscore import isoscore as isoscore
