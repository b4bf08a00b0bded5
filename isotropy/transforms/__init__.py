"""Isotropy-enhancing post-processing of embeddings, as scikit-learn transformers.

Every transformer takes ``X`` of shape ``(n_samples, n_features)`` (numpy, or a torch tensor that is
converted and returned on its device with its dtype) and follows the scikit-learn estimator contract.
Each has a pure function beside it that is the source of truth.
"""

from isotropy.transforms._cluster_centering import ClusterCentering, cluster_center

__all__ = ["ClusterCentering", "cluster_center"]
