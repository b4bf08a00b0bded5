"""Kernels of the cluster indices shared by :mod:`isotropy.metrics.cluster_indices` and :mod:`isotropy.distributed`.

Private: the Dunn index locates its extreme pairs on a product kernel, then recomputes their
distances straight from the data with :func:`_pair_distance` (numpy or torch, in memory or on a
dask worker); the Davies-Bouldin index finds each cluster's worst partner from the centroids with
:func:`_worst_partners` (the centroids of data in memory, or those a dask pass gathered).
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from isotropy._utils.backend import is_torch
from isotropy._utils.validation import IsotropyValueError


def _scalar(value) -> float:
    return float(value.detach()) if is_torch(value) else float(value)


def _sqrt(x, xp):
    """Square root with a zero (not NaN) gradient at 0, e.g. for a singleton's distance to its centroid."""
    positive = x > 0
    return xp.where(positive, xp.sqrt(xp.where(positive, x, xp.ones_like(x))), xp.zeros_like(x))


def _pair_distance(X, i, j, metric, xp):
    """d(x_i, x_j) straight from the data (keeps a torch graph; the gradient of a zero distance is 0, not NaN: two
    clusters sharing a point gave a NaN gradient to a Dunn index of 0)."""
    if metric == "euclidean":
        return _sqrt(xp.sum((X[i, :] - X[j, :]) ** 2), xp)
    ni, nj = xp.sqrt(xp.sum(X[i, :] ** 2)), xp.sqrt(xp.sum(X[j, :] ** 2))
    if _scalar(ni) == 0.0 or _scalar(nj) == 0.0:
        return xp.sum(X[i, :]) * 0.0 + (0.0 if i == j else 1.0)
    # 1 - cos as half the squared distance of the unit rows: never negative, 0 for parallel rows, and no
    # cancellation for nearly parallel ones (1 - x.y/(|x||y|) read -7e-5 for a duplicate row at an offset of 1e6)
    diff = X[i, :] / ni - X[j, :] / nj
    value = xp.sum(diff * diff) / 2.0
    # parallel rows of different norms ((0.1, 0.1) and (2.1, 2.1)) have unit rows a rounding apart: a distance up to
    # (d + 4)²·eps²/2 (isotropy._kernels.silhouette.exact_resolution) is that rounding, read 0 (rows all parallel gave
    # an index of 0, or of noise over noise, for the 0/0 that exactly parallel unit rows are refused as)
    if _scalar(value) <= float((X.shape[1] + 4) * float(xp.finfo(X.dtype).eps)) ** 2:
        return value * 0.0
    return value


def _check_dunn_defined(separation: float, diameter: float, n_samples: int, metric: str, caller: str = "dunn_index"):
    """Refuse a Dunn index that is 0/0: every cluster one repeated point, and two clusters at the same point.

    The same refusal in memory and on dask (:mod:`isotropy.distributed`), as isoscore refuses identical
    samples: the smallest distance between clusters and the largest diameter are both 0, and no value
    (inf, nan, 0) is right. A zero diameter with clusters apart stays inf (perfectly compact clusters).
    """
    if diameter == 0.0 and separation == 0.0:
        raise IsotropyValueError(
            f"The 'X' parameter of {caller} must have a cluster of non-zero diameter or clusters at a non-zero "
            f"distance from each other. Got {n_samples} samples whose clusters are each a single repeated point, "
            f"two of them at the same point ({metric} distance 0), so the index is 0/0, undefined.")


# Relative spread of product distances below which _extreme_pair takes the extreme product distance's pair without
# comparing the pairs the rounding bound cannot tell apart: their distances differ from the extreme one by at most
# that much (in the worst case of the bound; about sqrt(d)·eps in practice). On data of tied distances (one-hot rows,
# a lattice) every pair of a block is such a candidate, and recomputing them all made the index 20-40x slower.
_NEGLIGIBLE = 2.0**-36
# Entries of the gathered rows of the candidate pairs whose exact distances are computed at a time (_extreme_pair).
_CANDIDATE_ELEMENTS = 1 << 21


def _dunn_slack(q_i, q_j, metric: str, n_features: int, xp) -> float:
    r"""A bound on :math:`|\tilde D_{ij} - D_{ij}|` for every pair of a block of the Dunn index's product distances.

    :math:`\tilde D_{ij} = q_i + q_j - s\,u_i^\top u_j` on centred rows ``u`` (:func:`_extreme_pair`) carries
    the rounding of a dot product of ``d`` terms and of the centring, at most :math:`\tau (q_i + q_j)`
    with :math:`\tau = 8 (d + 16) \epsilon` (Higham 2002, §3.1, as :func:`_worst_partners`).

    Under the cosine metric the distances it is compared with (:func:`_pair_values`) come from unit rows
    :math:`\hat x` computed again from the rows, which may round otherwise than the block's (another
    summation order): each within :math:`\eta = 2 (d + 4) \epsilon \le \tau / 4` of the other. Half the
    squared distance of two rows moves by at most :math:`\lVert \hat x_i - \hat x_j \rVert \, 2\eta + 2\eta^2`,
    and :math:`\lVert \hat x_i - \hat x_j \rVert \le 2 \sqrt{q_i + q_j}` (centred unit rows; a zero row's
    ``q`` holds its 1/2): at most :math:`\tau \sqrt{q_i + q_j} + \tau^2 / 8` more. That term was a constant
    ``4τ`` (the unit rows' norm), which on tight clusters far from the origin (cosine distances of 1e-18
    inside a cluster) made every pair of a cluster a candidate to recompute, O(n²) of them. Taken over the
    block (its largest ``q``): one number per block.
    """
    tau = 8.0 * (n_features + 16) * float(xp.finfo(q_i.dtype).eps)
    top = _scalar(xp.max(q_i)) + _scalar(xp.max(q_j))
    return tau * (top + (math.sqrt(top) + tau / 8.0 if metric == "cosine" else 0.0))


def _pair_values(Wi, Wj, a, b, metric: str, xp, work=None):
    """Distances of the pairs ``(Wi[a_t], Wj[b_t])`` from the differences of the rows, in the units of the product
    distances: squared euclidean, or 1 - cos as half the squared distance of the unit rows (a zero row: 1). ``work``:
    the dtype the rows taken are converted to first (exactly, from a narrower one), None: W's own."""
    A, B = xp.take(Wi, a, axis=0), xp.take(Wj, b, axis=0)
    if work is not None:
        A, B = xp.astype(A, work), xp.astype(B, work)
    if metric == "euclidean":
        diff = A - B
        return xp.sum(diff * diff, axis=1)
    na, nb = xp.sqrt(xp.sum(A * A, axis=1)), xp.sqrt(xp.sum(B * B, axis=1))
    ones = xp.ones_like(na)
    diff = A / xp.where(na > 0, na, ones)[:, None] - B / xp.where(nb > 0, nb, ones)[:, None]
    return xp.where((na == 0) | (nb == 0), ones, xp.sum(diff * diff, axis=1) / 2.0)


def _extreme_pair(E, slack: float, best: tuple, Wi, Wj, offsets: tuple, metric: str, xp, *, farthest: bool,
                  work=None) -> tuple:
    r"""The closest (or ``farthest``) pair of a block by exact distances, if it beats ``best = (value, (i, j))``.

    ``E`` holds the block's product distances :math:`\tilde D` (``inf``, or ``-inf`` when ``farthest``,
    where a pair does not count), each within ``slack`` of its exact distance (:func:`_dunn_slack`). A
    pair can be the block's closest only when :math:`\tilde D \le \min \tilde D + 2\,slack`, and beat
    ``best`` only when :math:`\tilde D < best + slack`: those candidates (one pair, on data whose
    distances the rounding does not blur) get their distances from the rows ``Wi``, ``Wj``
    (:func:`_pair_values`), and the exact closest one is kept. Before, the pair of the smallest
    :math:`\tilde D` was taken, which cancellation can make the wrong pair (two tight clusters side by
    side far from the data's centre: an index 19 % off). Ties keep the pair found first. Where the
    bound is below ``_NEGLIGIBLE`` of the extreme (most data), the extreme product distance's pair is
    taken as before: any candidate's distance is within that relative spread of it. ``work``: the dtype of the
    distances, when ``Wi`` and ``Wj`` are rows of a narrower one (:func:`_pair_values`; the dask tiles pass the rows
    as stored, float32, rather than float64 copies of them).
    """
    extreme = _scalar(xp.max(E) if farthest else xp.min(E))
    if math.isinf(extreme):  # no pair of the kind in the block
        return best
    if 2.0 * slack <= _NEGLIGIBLE * abs(extreme):  # the rounding cannot move the value past _NEGLIGIBLE (relative)
        flat = E.shape[1]
        at = int(xp.argmax(xp.reshape(E, (-1,))) if farthest else xp.argmin(xp.reshape(E, (-1,))))
        index = xp.asarray([at], device=getattr(Wi, "device", None))
        value = _scalar(_pair_values(Wi, Wj, index // flat, index % flat, metric, xp, work)[0])
        better = value > best[0] if farthest else value < best[0]
        return (value, (offsets[0] + at // flat, offsets[1] + at % flat)) if better else best
    if farthest:
        if extreme + slack < best[0]:
            return best
        mask = E >= max(extreme - 2.0 * slack, best[0] - slack)
    else:
        if extreme - slack > best[0]:
            return best
        mask = E <= min(extreme + 2.0 * slack, best[0] + slack)
    width = E.shape[1]
    flat = xp.nonzero(xp.reshape(mask, (-1,)))[0]
    step = max(1, _CANDIDATE_ELEMENTS // max(1, Wi.shape[1]))
    for s in range(0, flat.shape[0], step):
        part = flat[s:s + step]
        a, b = part // width, part % width
        values = _pair_values(Wi, Wj, a, b, metric, xp, work)
        k = int(xp.argmax(values) if farthest else xp.argmin(values))
        value = _scalar(values[k])
        if (value > best[0]) if farthest else (value < best[0]):
            best = (value, (offsets[0] + int(a[k]), offsets[1] + int(b[k])))
    return best


# entries of one block of rows of the k x k centroid matrices (4 MiB of float64 each, four alive at a time), and of
# one block of centroid differences
_PAIR_BLOCK = 1 << 19


def _fill(a, mask, value):
    """``a[mask] = value`` in place (numpy: ``copyto``, several times faster than a boolean assignment; torch: ``masked_fill_``)."""
    if is_torch(a):
        a.masked_fill_(mask, value)
    else:
        np.copyto(a, value, where=mask)


def _pair_ratios(C, spread, i, j, xp):
    """``(s_i + s_j) / ‖μ_i − μ_j‖`` for the pairs ``(i, j)``, from the exact differences; 0 for coinciding centroids.

    Coinciding: within the rounding of the centroids themselves, ``τ (‖μ_i‖ + ‖μ_j‖ + s_i + s_j)`` with ``τ`` of
    :func:`_worst_partners` (``C`` in any frame; its norms and the spreads bound the offsets the means were taken
    of). Two clusters of one mean computed from different samples differ by a rounding, not by 0: their ratio was
    the spreads over that rounding, an index many orders of magnitude above the exact one, which skips them as
    scikit-learn does (tests/test_cluster_indices.py).
    """
    dist = _sqrt(xp.sum((C[i, :] - C[j, :]) ** 2, axis=1), xp)
    inf = xp.asarray(float("inf"), dtype=dist.dtype, device=getattr(dist, "device", None))
    tau = 8.0 * (C.shape[1] + 8) * float(xp.finfo(C.dtype).eps)
    norms = _sqrt(xp.sum(C * C, axis=1), xp)
    tol = tau * (norms[i] + norms[j] + xp.abs(spread[i]) + xp.abs(spread[j]))
    if is_torch(tol):
        tol = tol.detach()
    return (spread[i] + spread[j]) / xp.where(dist <= tol, inf, dist)


def _worst_partners(C, spread, xp):
    r"""For each cluster :math:`i`, the :math:`j \ne i` of largest :math:`(s_i + s_j) / \|\mu_i - \mu_j\|`.

    Returns ``(partner, largest)``: ``partner[i]`` that :math:`j` (a coinciding centroid, equal to
    :math:`\mu_i` to the centroids' rounding (:func:`_pair_ratios`), reads 0) and ``largest`` the largest centroid distance (to rounding, for the degenerate test).

    The k x k squared distances come from one product of the centred centroids :math:`c_i`, a block of rows at a
    time: :math:`\hat d^2_{ij} = q_i + q_j - 2 c_i^\top c_j` with :math:`q_i = \|c_i\|^2` (BLAS, O(k² d) flops,
    O(block) memory). It carries a rounding of at most :math:`\tau (q_i + q_j)` with :math:`\tau = 8 (d + 8)
    \epsilon`, which bounds each ratio between :math:`(s_i + s_j)/\sqrt{\hat d^2 + \tau(q_i + q_j)}` and
    :math:`(s_i + s_j)/\sqrt{\hat d^2 - \tau(q_i + q_j)}` (infinite when that is not positive: the pair may
    coincide). Every :math:`j` whose upper bound reaches the row's largest lower bound is a candidate, and the
    candidates' ratios are recomputed from the exact differences :math:`\mu_i - \mu_j` (the values of the k x k x d
    computation, 3.7 GB for 21,622 clusters a block at a time): the worst partner is that of the exact ratios. Ties
    and near-coinciding centroids only add candidates. Detached: the caller recomputes the chosen pairs with the graph.
    """
    if is_torch(C):
        import torch as mod  # the native functions, for their out= (the array-API namespace has none)

        C, spread = C.detach(), spread.detach()
    else:
        mod = np
    k, d = C.shape
    device = getattr(C, "device", None)
    Cc = C - xp.mean(C, axis=0)  # the Gram's rounding is relative to the centroids' spread, not to their offset
    CcT = Cc.T.contiguous() if mod is not np else np.ascontiguousarray(Cc.T)
    q = xp.sum(Cc * Cc, axis=1)
    tau = 8.0 * (d + 8) * float(xp.finfo(C.dtype).eps)
    slack = 16.0 * float(xp.finfo(C.dtype).eps)  # the rounding of the bounds' own products and quotients
    rows = min(k, max(64, _PAIR_BLOCK // k))  # 64 rows at least: each block's product reads all of Cc
    # four float and one boolean rows x k buffers, reused block after block (new ones cost a page fault per page)
    A, B, N, L = (xp.empty((rows, k), dtype=C.dtype, device=device) for _ in range(4))
    M = xp.empty((rows, k), dtype=xp.bool, device=device)
    inf = float("inf")
    partner, largest = [], 0.0
    def quiet():  # 0/0 and x/0 of the pairs that may coincide: replaced below
        return np.errstate(divide="ignore", invalid="ignore") if mod is np else contextlib.nullcontext()

    for r0 in range(0, k, rows):
        r1 = min(k, r0 + rows)
        m = r1 - r0
        d2, err, num, lo2, unsure = A[:m], B[:m], N[:m], L[:m], M[:m]
        diagonal = (xp.arange(m, device=device), xp.arange(r0, r1, device=device))
        mod.add(q[r0:r1, None], q[None, :], out=err)
        mod.matmul(Cc[r0:r1, :], CcT, out=d2)
        mod.multiply(d2, -2.0, out=d2)
        mod.add(d2, err, out=d2)  # q_i + q_j - 2 c_i.c_j
        largest = max(largest, math.sqrt(max(_scalar(xp.max(d2)), 0.0)))
        mod.multiply(err, tau, out=err)
        mod.subtract(d2, err, out=lo2)
        hi2 = mod.add(d2, err, out=d2)
        lo2[diagonal] = 0.0  # a cluster is not its own partner
        mod.less_equal(lo2, 0.0, out=unsure)  # the pair may coincide
        mod.add(spread[r0:r1, None], spread[None, :], out=num)
        mod.multiply(num, num, out=num)  # the bounds of the squared ratios: no square roots
        with quiet():
            low = mod.divide(num, hi2, out=err)
            _fill(low, unsure, 0.0)
            best = xp.max(low, axis=1) * (1.0 - slack)
            high = mod.divide(num, lo2, out=num)
        mod.multiply(high, 1.0 + slack, out=high)
        _fill(high, unsure, inf)
        high[diagonal] = -inf
        candidate = mod.greater_equal(high, best[:, None], out=unsure)
        ii, jj = xp.nonzero(candidate)
        exact = A[:m]
        exact[...] = -inf
        step = max(1, _PAIR_BLOCK // max(d, 1))
        for p0 in range(0, ii.shape[0], step):
            a, b = ii[p0:p0 + step], jj[p0:p0 + step]
            exact[a, b] = _pair_ratios(C, spread, a + r0, b, xp)
        partner.append(xp.argmax(exact, axis=1))
    return xp.concat(partner, axis=0), largest


def _certainly_degenerate(C, spread, xp) -> bool:
    """Whether the Davies-Bouldin index is 0 by its degenerate rule (every spread, or every centroid distance, at most
    1e-8 of the largest of them) before any pair is compared: the largest centroid distance lies between ``R`` and
    ``2R`` with ``R`` the largest distance of a centroid to the centroids' mean (which lies in their hull). Every
    spread 0 (each cluster one repeated point) made every pair a candidate of :func:`_worst_partners` (639,200 of
    640,000 at k = 800) for a value of 0. ``False`` when the bounds cannot tell: the full rule decides.
    """
    if is_torch(C):
        C, spread = C.detach(), spread.detach()
    centred = C - xp.mean(C, axis=0)
    radius = math.sqrt(max(_scalar(xp.max(xp.sum(centred * centred, axis=1))), 0.0))
    top = _scalar(xp.max(xp.abs(spread)))
    return top <= 1e-8 * radius or 2.0 * radius <= 1e-8 * top or (top == 0.0 and radius == 0.0)


def _warn_convention(caller: str, what: str, value: float) -> None:
    """Say that a cluster index is given by scikit-learn's convention for degenerate clusters, not measured: a trial's
    Gemma layer of identical rows read Davies-Bouldin 0.0, its best value, beside NaN IsoScore and TwoNN with their
    warnings."""
    import warnings

    from isotropy._utils.warn import user_stacklevel

    warnings.warn(f"{caller}: {what}, so the index divides by 0; {value:g} by scikit-learn's convention, not a measured "
                  f"value.", UserWarning, stacklevel=user_stacklevel())


_DB_DEGENERATE = "every cluster has the same centroid (no spread between clusters)"


def _warn_davies_bouldin() -> None:
    """The Davies-Bouldin warning: its degenerate rule's 0 stands for a division by 0 (the centroids coincide)."""
    _warn_convention("davies_bouldin_score", _DB_DEGENERATE, 0.0)


def _warn_if_coincident(centroids, spread, xp) -> None:
    """:func:`_warn_davies_bouldin` where the centroids coincide (to 1e-8 of the largest spread, or all of them and
    every spread 0). Every spread 0 beside centroids apart is the index's own limit, 0, and no warning."""
    if is_torch(centroids):
        centroids, spread = centroids.detach(), spread.detach()
    centred = centroids - xp.mean(centroids, axis=0)
    radius = float(_scalar(xp.max(xp.sum(centred * centred, axis=1)))) ** 0.5
    top = _scalar(xp.max(xp.abs(spread)))
    if 2.0 * radius <= 1e-8 * top or radius == 0.0:
        _warn_davies_bouldin()
