"""All-But-The-Top (Mu & Viswanath, 2018): remove the mean and the top principal directions."""

from __future__ import annotations

import math
import numbers

import numpy as np

from isotropy._utils.magnitude import extremes, safe_exponent_range
from isotropy._utils.validation import IsotropyValueError, check_scalar
from isotropy.transforms._base import SameFeaturesTransformer, to_numpy, transformed, warn_at_caller
from isotropy.transforms._scatter import MEAN_ROUNDING, centred_rows, column_mean, row_chunks

__all__ = ["AllButTheTop", "all_but_the_top"]


def resolve_n_components(n_components, n_samples: int, n_features: int, *, caller: str) -> int:
    """``"auto"`` -> ``max(1, round(n_features / 100))``, capped at ``n_samples - 1`` with a warning; an int is
    checked against ``min(n_samples - 1, n_features)``.

    Why ``n_samples - 1``: n centred rows span at most n - 1 directions, so a principal direction past the
    (n-1)-th has singular value ~1e-15 and is round-off (fitted on one row, D=1 would remove coordinate 0;
    on 8x768 rows, the 8th direction changes completely under a 1e-12 perturbation). Removing it changes
    nothing on the fitting data but removes an arbitrary direction from new data. An explicit int asks for
    that, so it is refused; ``"auto"`` is a rule of thumb, so it is capped and says so (as ClusterIsotropy
    caps its per-cluster D at n_j - 1).
    """
    limit = min(n_samples - 1, n_features)
    if isinstance(n_components, str):
        if n_components != "auto":
            raise IsotropyValueError(f"The 'n_components' parameter of {caller} must be an int >= 0 or 'auto'. "
                                     f"Got {n_components!r} instead.")
        n_components = max(1, round(n_features / 100))
        if n_components > limit:
            warn_at_caller(f"{caller}: n_components='auto' gives {n_components} = round(n_features / 100) "
                           f"directions, but n_samples={n_samples} rows span at most n_samples - 1 = {limit} "
                           f"directions after centring; removing {limit}. Fit on more rows.")
            n_components = limit
    else:
        check_scalar(n_components, "n_components", caller=caller, kind=numbers.Integral, low=0)
    if n_components > limit:
        # the bound that binds, said (the rows' span was given as the reason for 200 rows of 10 features, a trial)
        why = (f"X has n_features={n_features} directions" if n_features <= n_samples - 1 else
               f"n_samples={n_samples} rows span at most n_samples - 1 directions after centring")
        raise IsotropyValueError(f"The 'n_components' parameter of {caller} must be at most min(n_samples - 1, "
                                 f"n_features) = {limit}: {why}. Got {n_components} instead.")
    return int(n_components)


def top_directions(Xc: np.ndarray, n_components: int, *, singular_values: bool = False):
    """The ``n_components`` leading principal directions (rows, unit norm) of centred ``Xc``.

    With ``singular_values``, also all the singular values of ``Xc`` (descending; none when ``n_components`` is 0).
    """
    if n_components == 0:
        directions, s = np.zeros((0, Xc.shape[1])), np.zeros(0)
    else:
        _, s, vt = np.linalg.svd(Xc, full_matrices=False)
        directions = vt[:n_components]
    return (directions, s) if singular_values else directions


def numerical_rank(s: np.ndarray, n_samples: int, n_features: int, mean: np.ndarray) -> int:
    """The number of singular values ``s`` (descending) of ``n_samples x n_features`` rows centred on ``mean`` (at
    the scale of ``s``) above round-off.

    The tolerance is ``max(n, d) · eps · s_1`` (``np.linalg.matrix_rank``'s for the centred rows: the SVD computes
    every singular value to about ``eps · s_1``) plus ``MEAN_ROUNDING · eps · √n · |mean|``: rows centred on their
    two-pass mean (:func:`~isotropy.transforms._scatter.column_mean`) keep about one rounding of it as an offset
    common to every row, a singular value of up to ``√n · eps · |mean|`` (rows of one repeated point are centred to
    that offset, not to exact zeros; relative to ``s_1`` alone, it read as one direction of variance). A direction
    below the tolerance has no variance the data determine, and which direction the SVD returns there is arbitrary.
    """
    if not s.size or not s[0] > 0:
        return 0
    unit = max(float(s[0]), float(np.abs(mean).max()) if mean.size else 0.0)  # |mean|² overflowed from |x| ~ 1e154
    eps = np.finfo(float).eps
    tolerance = (max(n_samples, n_features) * eps * float(s[0]) / unit
                 + MEAN_ROUNDING * eps * np.sqrt(n_samples) * float(np.linalg.norm(mean / unit)))
    return int((s / unit > tolerance).sum())


def top_principal_directions(X: np.ndarray, mean: np.ndarray, n_components: int, *, rank: bool = False):
    """The ``n_components`` leading principal directions (rows, unit norm) of ``X`` (float64, or float32 read as
    float64) with mean ``mean``.

    The right singular vectors of ``X − μ``, as :func:`top_directions` finds them, without a centred copy
    of ``X`` nor an ``n x d`` factor when ``n >= d``: ``X − μ = QR`` is factored a chunk of rows at a time
    (the ``R`` so far stacked on the next centred chunk and factored again, Householder QR: backward
    stable), and the SVD of the ``d x d`` triangle ``R`` has the same right singular vectors. The thin SVD
    of ``X − μ`` took 10.1x the float32 input's memory and 44-58 s on 100,000 x 384; the eigenvectors of the
    ``d x d`` scatter (what a first version of this function took) square the condition: where ``D`` cut
    between nearly equal small eigenvalues (rank 3 plus noise of 1e-6) they were off by 1e-9 to 3e-8 of the
    data's scale. With ``n < d`` the ``n x d`` centred rows are the smaller object: their thin SVD is kept.
    The rows are brought to unit scale by a power of two (exact), so that no norm overflows or underflows.
    With ``rank``, also the numerical rank of ``X − μ`` (:func:`numerical_rank`).
    """
    n, d = X.shape
    if n_components == 0:
        return (np.zeros((0, d)), 0) if rank else np.zeros((0, d))
    if n < d:
        directions, sv = top_directions(X - mean, n_components, singular_values=True)
        return (directions, numerical_rank(sv, n, d, mean)) if rank else directions
    low, high = extremes(X)
    top = max(abs(low), abs(high))
    safe = safe_exponent_range(np.dtype(np.float64))  # float64's: the rows are read as float64 (float32 X too)
    exponent = math.frexp(top)[1] if 0.0 < top < math.inf and abs(math.frexp(top)[1]) > safe else 0
    shifted = np.ldexp(mean, -exponent)
    R = np.zeros((0, d))
    step = max(d, row_chunks(n, d)[0][1])  # chunks of at least d rows: the stacked R is at most half of a factored block
    for start in range(0, n, step):
        R = np.linalg.qr(np.vstack([R, centred_rows(X, start, min(n, start + step), shifted, exponent)]), mode="r")
    _, sv, vt = np.linalg.svd(R, full_matrices=False)
    directions = np.ascontiguousarray(vt[:n_components])
    return (directions, numerical_rank(sv, n, d, shifted)) if rank else directions


def fit_all_but_the_top(X: np.ndarray, *, n_components="auto", caller="all_but_the_top"):
    """Return ``(mean, components)`` of All-But-The-Top fitted on numpy ``X``, float64 or float32 (read as float64 a
    row chunk at a time: no float64 copy)."""
    D = resolve_n_components(n_components, X.shape[0], X.shape[1], caller=caller)
    mean = column_mean(X)  # two-pass: the rank test's floor is a few roundings of it (numerical_rank)
    components, rank = top_principal_directions(X, mean, D, rank=True)
    if D > rank:
        # Past the rank of the centred rows a "principal direction" has no variance: which one the SVD returns is
        # round-off (a perturbation of 1e-14 turned it around), and removing it from new data removes an arbitrary
        # direction, as resolve_n_components says of the directions past n_samples - 1 (a bound of the rank).
        if n_components == "auto":
            warn_at_caller(f"{caller}: n_components='auto' gives {D} directions, but the centred X has rank {rank} "
                           f"(repeated rows, or rows spanning fewer directions); removing {rank}.")
        else:
            raise IsotropyValueError(
                f"The 'n_components' parameter of {caller} must be at most the rank of the centred X, {rank}: the "
                f"directions past it have zero variance and are arbitrary (round-off), and removing them would "
                f"remove arbitrary directions from new data. Got {D} instead.")
        components = components[:rank]
    # nothing of the rows is left (as ClusterIsotropy warns of a cluster); 'auto' capped below its rule said so already
    capped = n_components == "auto" and max(1, round(X.shape[1] / 100)) > components.shape[0]
    if rank > 0 and components.shape[0] >= rank and not capped:
        fewer = (f"use at most {rank - 1} component{'s' if rank > 2 else ''} to keep some of its variance" if rank > 1 else
                 "fit on rows that span more than one direction")
        warn_at_caller(f"{caller}: n_components={components.shape[0]} removes every direction of variance of X (the "
                       f"centred X has rank {rank}), so the rows fitted on (and any row in their span) become the "
                       f"zero vector; {fewer}.")
    return mean, components


def remove_directions(Xc: np.ndarray, components: np.ndarray) -> np.ndarray:
    """``Xc - (Xc U^T) U`` for orthonormal rows ``U``."""
    return Xc - (Xc @ components.T) @ components


def centre_and_remove(X: np.ndarray, mean: np.ndarray, components: np.ndarray) -> np.ndarray:
    """``remove_directions(X - mean, components)`` as a new float64 array, computed in row chunks (no other n x d copy)."""
    out = np.empty(X.shape)
    for start, stop in row_chunks(*X.shape):
        B = out[start:stop]
        np.subtract(X[start:stop], mean, out=B)
        if len(components):
            B -= (B @ components.T) @ components
    return out


def all_but_the_top(X, *, n_components="auto"):
    """Subtract the mean and remove the projections on the top principal directions (All-But-The-Top).

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        The embeddings.
    n_components : int or "auto", default="auto"
        Number D of dominant directions removed. ``"auto"`` is Mu & Viswanath's rule of thumb
        ``D = max(1, round(n_features / 100))`` (3 for 300-d GloVe, 4 for 384-d MiniLM, 8 for 768-d
        BERT), capped at ``n_samples - 1`` with a warning: n centred rows span at most n - 1 directions,
        and a direction past them is round-off. An int above ``min(n_samples - 1, n_features)`` is
        refused (``ValueError``). The same holds for the rank of the centred rows (repeated rows,
        rows spanning fewer directions): ``"auto"`` is capped at it with a warning, an int above it
        is refused. ``0`` is plain centring.

    Returns
    -------
    X_new : ndarray or torch.Tensor of shape (n_samples, n_features)
        Float32 for float32 numpy input and float64 for other numpy input (computed in float64 either
        way), the input's dtype and device for a tensor.

    Notes
    -----
    With :math:`\\mu` the mean and :math:`u_1, \\dots, u_D` the leading eigenvectors of the covariance
    of :math:`X`, :math:`\\tilde x = (x - \\mu) - \\sum_{i=1}^{D} (u_i^\\top (x - \\mu))\\, u_i`.
    The result has zero mean and zero variance along :math:`u_1, \\dots, u_D`.

    References
    ----------
    Mu, J. and Viswanath, P. (2018). All-but-the-Top: Simple and effective postprocessing for word
    representations. ICLR 2018. arXiv:1702.01417.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy.transforms import all_but_the_top
    >>> X = np.random.default_rng(0).normal(size=(100, 5)) * [10.0, 1, 1, 1, 1] + 3.0
    >>> Y = all_but_the_top(X, n_components=1)
    >>> bool(np.allclose(Y.mean(axis=0), 0.0)), bool(Y[:, 0].std() < 0.5)
    (True, True)
    """
    Xn, dtype = to_numpy(X, caller="all_but_the_top", min_samples=1, keep_float32=True)  # no float64 copy
    mean, components = fit_all_but_the_top(Xn, n_components=n_components)
    return transformed(lambda rows, _: centre_and_remove(rows, mean, components), Xn, X, dtype=dtype,
                       caller="all_but_the_top")


class AllButTheTop(SameFeaturesTransformer):
    """All-But-The-Top as a scikit-learn transformer (Mu & Viswanath, 2018).

    See :func:`all_but_the_top` for the parameter, formula and reference. ``n_components="auto"``
    (``max(1, round(n_features / 100))``) is capped at ``n_samples - 1`` of the fitting data with a
    warning; an int above ``min(n_samples - 1, n_features)`` is refused by ``fit`` (``ValueError``), as is
    one above the rank of the centred rows ("auto" is capped at that rank with a warning).

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
    components_ : ndarray of shape (n_components_, n_features)
        The removed principal directions (orthonormal rows, largest variance first).
    n_components_ : int
        D, after resolving ``"auto"`` (and capping it at ``n_samples - 1``).
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy.transforms import AllButTheTop
    >>> X = np.random.default_rng(0).normal(size=(50, 300))
    >>> AllButTheTop().fit(X).n_components_  # round(300 / 100)
    3
    """

    _fit_keeps_float32 = True  # fit_all_but_the_top reads float32 X as float64 a row chunk at a time

    def __init__(self, *, n_components="auto"):
        self.n_components = n_components

    def _fit(self, X):
        self.mean_, self.components_ = fit_all_but_the_top(X, n_components=self.n_components, caller="AllButTheTop")
        self.n_components_ = int(self.components_.shape[0])

    def _transform(self, X):
        return centre_and_remove(X, self.mean_, self.components_)
