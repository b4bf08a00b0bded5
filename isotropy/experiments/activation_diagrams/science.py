"""The science of the activation diagrams (Rudman & Eickhoff, Figure 1), as pure functions.

An *activation diagram* is the mean magnitude of every dimension over a set of sentence embeddings:
a few "rogue" dimensions with magnitudes far above the rest are the visible face of anisotropy.
Timkey & van Schijndel (2021) measure their weight in the geometry by the share of the expected
cosine similarity that the top-k dimensions carry (:func:`isotropy.metrics.rogue.rogue_dimension_share`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["activation_profile", "profile_summary"]


def activation_profile(X) -> np.ndarray:
    """Mean absolute value of every dimension, ``(1/n)·Σⱼ |xⱼᵢ|``: the bars of an activation diagram.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Sentence embeddings, one per row.

    Returns
    -------
    ndarray of shape (n_features,)

    Examples
    --------
    >>> activation_profile([[1.0, -4.0], [-3.0, 0.0]]).tolist()
    [2.0, 2.0]
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 1:
        raise ValueError(f"The 'X' parameter of activation_profile must be a 2-d array of shape (n_samples, "
                         f"n_features) with at least one row. Got an array with shape {X.shape} instead.")
    return np.abs(X).mean(axis=0)


def profile_summary(X, *, top_k=(1, 3, 10), n_listed: int = 5) -> dict:
    """Activation diagram and rogue-dimension statistics of the sentence embeddings ``X``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    top_k : sequence of int, default=(1, 3, 10)
        k of the rogue-dimension shares reported (values above n_features are left out).
    n_listed : int, default=5
        How many of the largest dimensions are listed (by mean magnitude and by cosine contribution).

    Returns
    -------
    dict
        ``profile`` (mean |value| per dimension), ``max_over_median`` (largest mean magnitude over the
        median one), ``top_dimensions`` (indices, largest mean magnitude first), ``top_cosine_dimensions``
        (largest contributions to the mean cosine first), ``rogue_share`` {k: share}, ``mean_cosine``,
        ``isoscore``.
    """
    from isotropy import cosine_similarity_mean, isoscore
    from isotropy.metrics.rogue import cosine_contributions, rogue_dimension_share

    X = np.asarray(X, dtype=np.float64)
    profile = activation_profile(X)
    contributions = cosine_contributions(X)
    d = X.shape[1]
    return {"profile": profile.tolist(),
            "max_over_median": float(profile.max() / np.median(profile)),
            "top_dimensions": [int(i) for i in np.argsort(-profile, kind="stable")[:n_listed]],
            "top_cosine_dimensions": [int(i) for i in np.argsort(-contributions, kind="stable")[:n_listed]],
            "rogue_share": {str(k): float(rogue_dimension_share(X, n_dimensions=int(k))) for k in top_k if k <= d},
            "mean_cosine": float(cosine_similarity_mean(X)), "isoscore": float(isoscore(X))}
