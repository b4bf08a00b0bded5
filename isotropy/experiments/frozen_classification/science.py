"""The science of the frozen-encoder classification test (Rajaee & Pilehvar, "Test on Classification Task").

Sentence representations of a frozen encoder are post-processed by one of the isotropy transforms of
:mod:`isotropy.transforms` (fitted on the training representations only), a logistic regression is
trained on them, and the validation accuracy and the isotropy I(W) of the validation representations
are reported. The methods are the rows of Rajaee & Pilehvar's comparison table:

=====================  ========================================================================
``baseline``           the representations as the encoder gives them
``mean``               global centring (All-But-The-Top with D = 0)
``mean+pca``           global centring and removal of the top D directions (All-But-The-Top)
``kmeans+mean``        per-cluster centring (cluster-based method with D = 0)
``kmeans+mean+pca``    per-cluster centring and per-cluster removal of the top D directions
``gmm+mean+pca``       the same with a Gaussian-mixture clustering
=====================  ========================================================================
"""

from __future__ import annotations

import numpy as np

from isotropy import isoscore, partition_isotropy

__all__ = ["DETERMINISTIC", "METHODS", "evaluate_method", "make_transform"]

METHODS = ("baseline", "mean", "mean+pca", "kmeans+mean", "kmeans+mean+pca", "gmm+mean+pca")
DETERMINISTIC = ("baseline", "mean", "mean+pca")  # no clustering: the same numbers for every seed


def make_transform(method: str, *, n_clusters: int, n_components: int, random_state=None):
    """The unfitted scikit-learn transformer of ``method`` (``None`` for ``baseline``)."""
    from isotropy.transforms import AllButTheTop, ClusterIsotropy

    if method == "baseline":
        return None
    if method == "mean":
        return AllButTheTop(n_components=0)
    if method == "mean+pca":
        return AllButTheTop(n_components=n_components)
    if method == "kmeans+mean":
        return ClusterIsotropy(n_clusters=n_clusters, n_components=0, clustering="kmeans", random_state=random_state)
    if method == "kmeans+mean+pca":
        return ClusterIsotropy(n_clusters=n_clusters, n_components=n_components, clustering="kmeans", random_state=random_state)
    if method == "gmm+mean+pca":
        return ClusterIsotropy(n_clusters=n_clusters, n_components=n_components, clustering="gmm", random_state=random_state)
    raise ValueError(f"The 'method' parameter of make_transform must be one of {list(METHODS)}. Got {method!r} instead.")


def evaluate_method(X_train, y_train, X_valid, y_valid, transform=None, *, C: float = 1.0, max_iter: int = 2000) -> dict:
    """Fit ``transform`` on ``X_train``, train a logistic regression, score ``X_valid``.

    Parameters
    ----------
    X_train, X_valid : ndarray of shape (n_samples, n_features)
        Frozen sentence representations of the training and validation sentences.
    y_train, y_valid : ndarray of shape (n_samples,)
        Class ids.
    transform : scikit-learn transformer or None
        Fitted on ``X_train`` only, then applied to both; ``None`` keeps the representations.
    C : float, default=1.0
        Inverse L2 strength of :class:`sklearn.linear_model.LogisticRegression` (lbfgs).
    max_iter : int, default=2000

    Returns
    -------
    dict
        ``accuracy`` (validation), ``train_accuracy``, ``partition_isotropy`` (I(W) of the transformed
        validation representations, as Rajaee & Pilehvar report it), ``isoscore`` of the same, and
        ``partition_isotropy_train``, and ``valid_correct``: one character per validation item, ``"1"``
        where the classifier is right (for a bootstrap over the items).
    """
    from sklearn.linear_model import LogisticRegression

    Z_train = np.asarray(X_train, dtype=np.float64)
    Z_valid = np.asarray(X_valid, dtype=np.float64)
    if transform is not None:
        Z_train = transform.fit(Z_train).transform(Z_train)
        Z_valid = transform.transform(Z_valid)
    clf = LogisticRegression(C=float(C), max_iter=int(max_iter)).fit(Z_train, y_train)
    correct = clf.predict(Z_valid) == np.asarray(y_valid)
    return {"accuracy": float(correct.mean()), "train_accuracy": float(clf.score(Z_train, y_train)),
            "partition_isotropy": float(partition_isotropy(Z_valid)), "isoscore": float(isoscore(Z_valid)),
            "partition_isotropy_train": float(partition_isotropy(Z_train)),
            "valid_correct": "".join("1" if c else "0" for c in correct)}
