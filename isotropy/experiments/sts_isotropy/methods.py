"""The methods of the STS table and what every level of the comparison shares: fit, score, summarise.

Used by ``run`` (transforms of pooled sentence vectors) and ``tokens`` (transforms of token states,
pooled afterwards); kept apart so that neither imports the other.
"""

from __future__ import annotations

import numpy as np

from isotropy._utils.sampling import subsample_indices

__all__ = ["METHODS", "RANDOM_METHODS", "cosine_rows", "isotropy_metrics", "make_method", "method_record"]

METHODS = ("Baseline", "Mean", "Mean + PCA", "K-means + Mean", "GMM + Mean + PCA", "K-means + Mean + PCA",
           "Whitening")
RANDOM_METHODS = frozenset({"K-means + Mean", "GMM + Mean + PCA", "K-means + Mean + PCA"})  # run once per seed


def make_method(name: str, config, *, seed: int):
    """The transformer of a table row (``None`` for the baseline)."""
    from isotropy.transforms import (
        AllButTheTop,
        ClusterCentering,
        ClusterIsotropy,
        Whitening,
    )

    k, D = config.n_clusters, config.n_components
    factories = {
        "Baseline": lambda: None,
        "Mean": lambda: AllButTheTop(n_components=0),
        "Mean + PCA": lambda: AllButTheTop(n_components=config.abtt_components),
        "K-means + Mean": lambda: ClusterCentering(n_clusters=k, random_state=seed),
        "GMM + Mean + PCA": lambda: ClusterIsotropy(k, D, clustering="gmm", random_state=seed),
        "K-means + Mean + PCA": lambda: ClusterIsotropy(k, D, clustering="kmeans", random_state=seed),
        "Whitening": lambda: Whitening(config.whitening_components, eps=config.whitening_eps),
    }
    if name not in factories:
        raise ValueError(f"The 'methods' config entry must list names from {list(METHODS)}. Got {name!r} instead.")
    return factories[name]()


def cosine_rows(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Cosine similarity of each row of ``A`` with the same row of ``B`` (0 where a row is zero)."""
    num = np.einsum("ij,ij->i", A, B)
    den = np.linalg.norm(A, axis=1) * np.linalg.norm(B, axis=1)
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def isotropy_metrics(Y: np.ndarray, *, sample: int, seed: int) -> dict:
    """I(W) and IsoScore of the embeddings ``Y`` (on a seeded subsample of ``sample`` rows when larger)."""
    from isotropy import isoscore, partition_isotropy

    if sample and Y.shape[0] > sample:
        Y = Y[subsample_indices(Y.shape[0], sample, random_state=seed)]
    return {"I(W)": float(partition_isotropy(Y)), "IsoScore": float(isoscore(Y))}


def mean_over_seeds(values: list):
    """The mean over seeds of equally shaped rows (nested dicts of numbers); equal ints (counts) stay ints."""
    first = values[0]
    if isinstance(first, dict):
        return {k: mean_over_seeds([v[k] for v in values]) for k in first}
    if isinstance(first, bool) or not isinstance(first, (int, float)):
        return first
    if isinstance(first, int) and all(v == first for v in values):
        return first
    return float(sum(values) / len(values))


def method_record(rows: list[dict], seeds: list[int], *, random: bool) -> dict:
    """One method on one data set: the seed mean of every number, and the per-seed rows (without sub-files)."""
    mean = mean_over_seeds([{k: v for k, v in r.items() if k != "seconds"} for r in rows])
    per_seed = [{"seed": s, **{k: v for k, v in r.items() if k != "subsets"}} for s, r in zip(seeds, rows)]
    return {**mean, "depends_on_seed": random, "per_seed": per_seed}
