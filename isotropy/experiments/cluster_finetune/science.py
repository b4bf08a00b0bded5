"""Pure measurements of the cluster fine-tuning experiment: is the [CLS] cloud zero-mean, how isotropic is each layer."""

from __future__ import annotations

import numpy as np

__all__ = ["layer_geometry", "zero_mean_ratio"]


def zero_mean_ratio(X) -> float:
    """‖mean of the rows‖ / mean row norm: 0 for a zero-mean cloud, 1 when every row is the same vector.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)

    Returns
    -------
    float in [0, 1]
        By the triangle inequality ‖(1/n)Σxᵢ‖ ≤ (1/n)Σ‖xᵢ‖. Rajaee & Pilehvar observe that fine-tuned
        BERT's [CLS] vectors are already zero-mean, so centring (the first step of their transform)
        has nothing to remove; a small ratio is that observation in one number.

    Examples
    --------
    >>> round(zero_mean_ratio([[1.0, 0.0], [-1.0, 0.0]]), 3), round(zero_mean_ratio([[2.0, 1.0], [2.0, 1.0]]), 3)
    (0.0, 1.0)
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 1:
        raise ValueError(f"The 'X' parameter of zero_mean_ratio must be a 2-d array of shape (n_samples, n_features) "
                         f"with at least one row. Got an array with shape {X.shape} instead.")
    norms = np.linalg.norm(X, axis=1).mean()
    if norms == 0.0:
        raise ValueError("The 'X' parameter of zero_mean_ratio must have a non-zero row. Got only zero rows instead.")
    return float(np.linalg.norm(X.mean(axis=0)) / norms)


def layer_geometry(states, *, first_layer: int = 1) -> list[dict]:
    """Per layer: I(W), IsoScore, mean cosine and zero-mean ratio of pooled vectors.

    Parameters
    ----------
    states : sequence of array-like of shape (n_samples, n_features)
        One pooled matrix per transformer layer, the first layer first.
    first_layer : int, default=1
        Number of the first layer in ``states`` (1: the output of the first transformer layer).

    Returns
    -------
    list of dict
        ``layer``, ``partition_isotropy`` (I(W), Rajaee & Pilehvar's measure), ``isoscore``,
        ``mean_cosine``, ``zero_mean_ratio``.
    """
    from isotropy import cosine_similarity_mean, isoscore, partition_isotropy

    out = []
    for layer, X in enumerate(states, start=first_layer):
        X = np.asarray(X, dtype=np.float64)
        out.append({"layer": layer, "partition_isotropy": float(partition_isotropy(X)), "isoscore": float(isoscore(X)),
                    "mean_cosine": float(cosine_similarity_mean(X)), "zero_mean_ratio": zero_mean_ratio(X)})
    return out
