"""The methods of the STS table and what every level of the comparison shares: fit, score, summarise.

Used by ``run`` (transforms of pooled sentence vectors) and ``tokens`` (transforms of token states,
pooled afterwards); kept apart so that neither imports the other.
"""

from __future__ import annotations

import numpy as np

from isotropy._utils.sampling import subsample_indices

__all__ = ["METHODS", "RANDOM_METHODS", "ZERO_RTOL", "cosine_rows", "fit_method", "isotropy_metrics", "make_method", "method_record",
           "pair_correlations", "pair_cosines"]

METHODS = ("Baseline", "Mean", "Mean + PCA", "K-means + Mean", "GMM + Mean + PCA", "K-means + Mean + PCA",
           "Whitening")
RANDOM_METHODS = frozenset({"K-means + Mean", "GMM + Mean + PCA", "K-means + Mean + PCA"})  # run once per seed
# A transformed vector whose norm is at most ZERO_RTOL times its norm before the transform is the zero vector: a
# cluster of n_j <= n_components points spans n_j - 1 directions, all removed, and what is left of each point is
# rounding (seen: 4e-16 to 7e-16 of the input norm), not a direction, so its cosine is undefined (docs/refusals.md
# section 3). The smallest genuine residual seen in the same runs was 2e-5 of the input norm: far above the cut.
ZERO_RTOL = 1e-10


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
        "GMM + Mean + PCA": lambda: ClusterIsotropy(n_clusters=k, n_components=D, clustering="gmm", random_state=seed),
        "K-means + Mean + PCA": lambda: ClusterIsotropy(n_clusters=k, n_components=D, clustering="kmeans", random_state=seed),
        "Whitening": lambda: Whitening(n_components=config.whitening_components, eps=config.whitening_eps),
    }
    if name not in factories:
        raise ValueError(f"The 'methods' config entry must list names from {list(METHODS)}. Got {name!r} instead.")
    return factories[name]()


def fit_method(method, name: str, X, config):
    """``method.fit(X)``; Whitening's refusal of a rank-deficient covariance said in the config's keys.

    The rank is known only once the embeddings are: Whitening's own message named its parameters
    (``n_components``, ``eps``), which the config calls ``whitening_components`` and ``whitening_eps``.
    """
    from isotropy.transforms._whitening import RankDeficient

    if method is None:
        return None
    try:
        return method.fit(X)
    except RankDeficient as exc:
        if name != "Whitening":
            raise
        from isotropy.experiments._config import ConfigError

        if config.whitening_eps > 0:  # eps regularises, but some of the zero-variance directions would be arbitrary
            raise ConfigError(f"The 'whitening_components' setting of sts-isotropy must be at most {exc.rank}, the "
                              f"rank of these embeddings' covariance, or null (all features) with whitening_eps > 0: "
                              f"which of the directions past the rank to keep is arbitrary. Got "
                              f"{config.whitening_components!r} instead.") from None
        raise ConfigError(f"The 'whitening_eps' setting of sts-isotropy must be > 0 for these embeddings, whose "
                          f"covariance is rank-deficient (rank {exc.rank} < {exc.n_directions} directions) and cannot "
                          f"be whitened without it (the paper setup's 1e-8), or set whitening_components <= "
                          f"{exc.rank}. Got {config.whitening_eps!r} instead.") from None


def cosine_rows(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Cosine similarity of each row of ``A`` with the same row of ``B`` (0 where a row is zero)."""
    num = np.einsum("ij,ij->i", A, B)
    den = np.linalg.norm(A, axis=1) * np.linalg.norm(B, axis=1)
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def pair_cosines(Y: np.ndarray, X: np.ndarray, n_pairs: int) -> np.ndarray:
    """Cosine of each pair ``(Y[i], Y[n_pairs + i])``, NaN where either vector is zero (see :data:`ZERO_RTOL`).

    ``X`` holds the same rows before the transform (their scale): a row of ``Y`` is zero when its norm
    is at most ``ZERO_RTOL`` times that of ``X``'s row. Such a pair has no cosine: NaN, never a number.
    """
    norm_y, norm_x = np.linalg.norm(Y, axis=1), np.linalg.norm(X, axis=1)
    zero = norm_y <= ZERO_RTOL * norm_x
    cos = cosine_rows(Y[:n_pairs], Y[n_pairs:])
    cos[zero[:n_pairs] | zero[n_pairs:]] = np.nan
    return cos


def pair_correlations(cos: np.ndarray, scores, subsets=None) -> dict:
    """:func:`isotropy.datasets.sts.sts_correlations` over the pairs whose cosine is defined (not NaN).

    Why the pairs are left out and counted rather than the row made undefined: the left-out pairs are
    those of clusters too small for ``n_components`` (a few in a sweep at 60 clusters on STS-B's 2,758
    sentences), and the other pairs' cosines are what the method gives them; a zero cosine in their
    place (as before) was a number the transform never produced. The count is ``n_undefined`` (only
    when > 0, so that rows without it keep their keys); the table marks such a row, and a claim that
    compares it with another row is not established (the rows are not over the same pairs).
    """
    from isotropy.datasets.sts import sts_correlations

    defined = ~np.isnan(cos)
    if defined.all():
        return sts_correlations(cos, scores, subsets)
    subsets = None if subsets is None else np.asarray(subsets)[defined]
    return {**sts_correlations(cos[defined], np.asarray(scores)[defined], subsets),
            "n_undefined": int((~defined).sum())}


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
    if any("n_undefined" in r for r in rows):  # every seed's row says how many pairs it left out, 0 included
        rows = [{**r, "n_undefined": r.get("n_undefined", 0)} for r in rows]
    mean = mean_over_seeds([{k: v for k, v in r.items() if k != "seconds"} for r in rows])
    per_seed = [{"seed": s, **{k: v for k, v in r.items() if k != "subsets"}} for s, r in zip(seeds, rows)]
    return {**mean, "depends_on_seed": random, "per_seed": per_seed}
