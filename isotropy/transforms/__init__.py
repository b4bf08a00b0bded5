"""Isotropy-enhancing post-processing of embeddings, as scikit-learn transformers.

Every transformer takes ``X`` of shape ``(n_samples, n_features)`` (numpy, or a torch tensor that is
converted and returned on its device with its dtype) and follows the scikit-learn estimator contract.
Each has a pure function beside it that is the source of truth.

- :class:`AllButTheTop` / :func:`all_but_the_top` (Mu & Viswanath, 2018)
- :class:`ClusterCentering` / :func:`cluster_center` (Cai et al., 2021)
- :class:`ClusterIsotropy` / :func:`cluster_isotropy` (Rajaee & Pilehvar, 2021)
- :class:`Whitening` / :func:`whiten` (Su et al., 2021)
"""

from isotropy.transforms._all_but_the_top import AllButTheTop, all_but_the_top
from isotropy.transforms._cluster_centering import ClusterCentering, cluster_center
from isotropy.transforms._cluster_isotropy import ClusterIsotropy, cluster_isotropy
from isotropy.transforms._whitening import Whitening, whiten

__all__ = [
    "AllButTheTop",
    "ClusterCentering",
    "ClusterIsotropy",
    "Whitening",
    "all_but_the_top",
    "cluster_center",
    "cluster_isotropy",
    "whiten",
]
