"""One float64 pass over the rows of ``X`` for the covariance metrics, shared by a table of them.

The covariance metrics of a numpy ``X`` read it for four statistics, each accumulated in float64 a
chunk of rows at a time, on one worker per core (a reused float64 chunk each, never a float64 copy
of ``X``; the chunks added in order, :func:`in_order`):

- ``"scatter"``: the centred scatter ``Σ(x − μ)(x − μ)ᵀ`` with ``μ = K + m`` in two parts (``K`` the
  mean of the first chunk): IsoScore, IsoScore* and the participation ratio
  (:func:`isotropy._kernels.isoscore._numpy_scatter`);
- ``"second"``: the uncentred ``XᵀX``, whose eigenvectors I(W) projects on
  (:mod:`isotropy.metrics.partition`), from the same centred products:
  ``Σ(x − K)(x − K)ᵀ + K tᵀ + t Kᵀ + n K Kᵀ`` with ``t = Σ(x − K)`` (as accurate as ``Σ x xᵀ``, one
  product per chunk for both);
- ``"units"``: ``Σ x/‖x‖`` (the mean cosine similarity), and ``"unit_squares"``: ``Σ (x/‖x‖)²`` per
  dimension (the rogue-dimension share), with the rows that leave them undefined (zero, or made
  only of subnormal numbers); ``"unit_gram"``: ``Σ (x/‖x‖)(x/‖x‖)ᵀ`` (d × d), asked for alone when
  the rogue-dimension share needs the noise of a small mean cosine (never part of a table's pass); for
  fewer rows than features (n < d) the n × n ``Σ_d (x̂ᵢ)_d (x̂ⱼ)_d`` instead, ÛÛᵀ (the same non-zero
  eigenvalues, hence Frobenius norm, as ÛᵀÛ);
- for n < d, the n × n side of the first two (the covariance's non-zero eigenvalues are those of the
  centred Gram matrix, XᵀX's those of XXᵀ): ``"centred_gram"``, ``X_c X_cᵀ`` of the rows centred on
  their mean, and ``‖μ‖²`` (:class:`CentredGram`; IsoScore and the participation ratio), and ``"gram"``,
  the uncentred ``XXᵀ`` (I(W)). They are summed over blocks of columns (each column centred on its own
  mean, twice, as two-pass centring), one float64 block of all the rows at a time, on one worker with
  BLAS's threads: no d × d matrix, memory O(n² + n·block).

:func:`row_statistics` computes what one metric asks for. Within :func:`shared_statistics` (which
``isotropy measure`` opens around its table), the first metric that asks for statistics of the
registered array computes every statistic of its pass (of rows, or for n < d of columns) the table's
metrics need (:data:`METRIC_STATISTICS`, with the n × n statistics for the d × d ones when n < d), and
the others read them: for n ≥ d one pass for all, for n < d the unit-row sums with the cosine metrics
and the Gram matrices with the covariance ones (each pass's time counts as the metric's that needed
it). The values are the same either way: a chunk's statistics do not depend on which others are
computed with them, and the chunks are added in order.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections import Counter
from typing import NamedTuple

import numpy as np

from isotropy._utils.backend import is_torch
from isotropy._utils.errors import IsotropyValueError
from isotropy._utils.threads import one_blas_thread

_CHUNK_ELEMENTS = 1 << 20  # float64 entries of a chunk (8 MiB)

#: The statistics each covariance metric of the table reads from :func:`row_statistics`.
METRIC_STATISTICS = {
    "isoscore": ("scatter",),
    "isoscore_star": ("scatter",),
    "participation_ratio": ("scatter",),
    "partition_isotropy": ("second",),
    "cosine_similarity_mean": ("units",),
    "rogue_dimension_share": ("units", "unit_squares"),
}

#: The n × n statistics read instead of the d × d ones when ``X`` has fewer rows than features.
WIDE_STATISTICS = {"scatter": "centred_gram", "second": "gram"}

_STATISTICS = ("scatter", "second", "units", "unit_squares", "unit_gram", "centred_gram", "gram")
_COLUMN_STATISTICS = ("centred_gram", "gram")  # and "unit_gram" for n < d


class Scatter(NamedTuple):
    """``Σ(x − μ)(x − μ)ᵀ`` (float64, d × d) and ``μ = shift + mean`` (see :func:`isotropy._kernels.isoscore._numpy_scatter`)."""

    scatter: np.ndarray
    shift: np.ndarray
    mean: np.ndarray


class CentredGram(NamedTuple):
    """``X_c X_cᵀ`` (float64, n × n) of the rows centred on their mean ``μ``, and ``‖μ‖²`` (for the zero-variance check)."""

    gram: np.ndarray
    mean_sq: float


class Units(NamedTuple):
    """``Σ x/‖x‖`` and ``Σ (x/‖x‖)²`` (None unless asked for) over the rows, and the rows that leave them undefined.

    ``zero`` and ``subnormal``: indices of the all-zero rows and of the rows made only of subnormal
    numbers (their direction is lost); the sums are meaningless when either is not empty.
    """

    sum: np.ndarray
    squares: np.ndarray | None
    zero: np.ndarray
    subnormal: np.ndarray


def mean_pair_cosine(sum_sq, count):
    """(‖s‖² − m)/(m(m − 1)): the mean cosine over the distinct pairs of ``m`` unit vectors of sum ``s``, in its range.

    ``‖s‖² ≥ 0`` bounds it below by −1/(m − 1) and the pairs' cosines above by 1; the rounding of
    the sums could leave it just outside (identical rows read 1.0000000000000007), so it is clamped
    there. A torch value keeps the gradient of the unclamped one; arrays of sums and counts allowed.
    """
    value = (sum_sq - count) / (count * (count - 1))
    low = -1.0 / (count - 1)
    if is_torch(value):
        import torch

        low = torch.as_tensor(low, dtype=value.dtype, device=value.device)  # a tensor of counts gives one per count
        held = value.detach()
        return value + (torch.minimum(torch.maximum(held, low), torch.ones_like(held)) - held)
    clipped = np.clip(value, low, 1.0)
    return float(clipped) if np.ndim(clipped) == 0 else clipped


def norm_range(dtype_info) -> tuple[float, float]:
    """Squared norms inside ``(lo, hi)`` were formed without overflow or precision lost to underflow."""
    return float(dtype_info.tiny / dtype_info.eps), float(dtype_info.max * dtype_info.eps)


def all_rows_equal(X) -> bool:
    """Whether every row of ``X`` (numpy or torch, in memory) equals its first, compared bit for bit a block of
    ``_CHUNK_ELEMENTS`` entries at a time (a boolean block, not one of ``X``'s size)."""
    step = max(1, _CHUNK_ELEMENTS // max(1, X.shape[1]))
    first = X[0:1]
    return all(bool((X[s:s + step] == first).all()) for s in range(0, X.shape[0], step))


def first_chunk_shift(first):
    """The shift ``K`` of the centred sums: the mean of the rows ``first`` (numpy or torch, float64 for numpy), or
    their first row exactly when they are all equal to it.

    Identical rows are then centred to exact zeros and their scatter is exactly 0 (their rounded mean
    left a residual of a few ulps, which the streamed checks, without the rows, could not tell from
    rows a few ulps apart, :func:`isotropy._kernels.isoscore._check_variance`); a merge of such parts
    with equal shifts stays 0 (:func:`isotropy._kernels.accumulator.merge_moments`).
    """
    if all_rows_equal(first):
        return first[0].clone() if is_torch(first) else np.asarray(first[0], dtype=np.float64)
    return first.mean(0) if is_torch(first) else first.mean(axis=0, dtype=np.float64)


def refuse_rows(bad, subnormal, *, caller, name, offset=0):
    """The one message for all-zero rows (``bad``) and rows made only of subnormal numbers (their row indices),
    in memory (:mod:`isotropy.metrics.cosine`, torch too) and on dask (:mod:`isotropy.distributed._rows`)."""
    if bad.size:
        raise IsotropyValueError(
            f"The '{name}' parameter of {caller} must not contain zero vectors, for which cosine similarity is "
            f"undefined. Got {bad.size} all-zero row(s) (first at index {int(bad[0]) + offset}) instead.")
    if subnormal.size:
        raise IsotropyValueError(
            f"The '{name}' parameter of {caller} must have rows of normal magnitude. Got {subnormal.size} row(s) "
            f"(first at index {int(subnormal[0]) + offset}) made only of subnormal numbers, which have already "
            f"lost most of their significant digits; store the data at a larger scale.")


def _unit_rows_block(B: np.ndarray, start: int, zero: list, subnormal: list, scales: list | None = None) -> np.ndarray:
    """Rows of the float64 block ``B`` scaled to unit norm, in place; undefined rows are recorded (offset ``start``).

    Rows whose squared norm would over- or underflow are first brought to unit scale by a power of
    two (exact), so every row's direction counts, whatever its length (data up to 1.8e308).
    ``scales``: ``(odd rows, their exponents, every row's norm)`` of the block is appended to it, to
    scale the rows' blocks of columns exactly alike (:func:`_scale_rows`).
    """
    sq = np.einsum("ij,ij->i", B, B)
    info = np.finfo(np.float64)
    lo, hi = norm_range(info)
    odd = np.flatnonzero(~((sq > lo) & (sq < hi)))  # also inf and 0
    exponents = np.empty(0, dtype=np.intc)
    if odd.size:
        top = np.abs(B[odd]).max(axis=1)
        bad = (top == 0) | (top < info.tiny)
        zero.append(odd[top == 0] + start)
        subnormal.append(odd[(top > 0) & (top < info.tiny)] + start)
        top[bad] = 1.0  # left as they are; the sums are not used (see Units)
        exponents = -np.frexp(top)[1]
        B[odd] = np.ldexp(B[odd], exponents[:, None])
        sq[odd] = np.einsum("ij,ij->i", B[odd], B[odd])
        sq[odd[bad]] = 1.0
    root = np.sqrt(sq)
    B /= root[:, None]
    if scales is not None:
        scales.append((odd + start, exponents, root))
    return B


def _scale_rows(B: np.ndarray, odd: np.ndarray, exponents: np.ndarray, root: np.ndarray) -> np.ndarray:
    """The columns ``B`` of the rows scaled by :func:`_unit_rows_block` (its ``scales``), scaled the same way, in place."""
    if odd.size:
        B[odd] = np.ldexp(B[odd], exponents[:, None])
    B /= root[:, None]
    return B


def in_order(fn, n_chunks: int, merge, make_state, *, max_workers: int | None = None, make_slot=None,
             blas: bool = True) -> None:
    """``merge(c, fn(c, state, slot))`` for ``c = 0, 1, …, n_chunks − 1``: ``fn`` on one worker per core, ``merge`` in order.

    Each worker runs single-threaded BLAS with its own ``state`` (:func:`make_state`, its buffers;
    :func:`isotropy._kernels.silhouette._run_tasks`); ``merge`` is called under a lock, chunk after
    chunk, whatever order the workers finish in, so that sums over the chunks are the same on any
    number of cores. A worker waits before a chunk more than one round of workers ahead of the last
    merged one: at most one result per worker is held, and chunk ``c`` may write its result into
    ``slot`` number ``c`` modulo the number of workers (``make_slot()``, built here, or None).
    Every buffer is allocated in this thread: its memory serves this thread's later allocations
    once the pass is over. One worker (a small ``X``) runs in this thread, single-threaded BLAS too
    when ``blas`` (``fn`` calls BLAS: on several threads each small call waits at BLAS's barriers).
    """
    import threading

    from isotropy._kernels.silhouette import _cores, _run_tasks

    ahead = max(1, min(_cores(), n_chunks, max_workers or n_chunks))
    slots = [None if make_slot is None else make_slot() for _ in range(ahead)]
    if ahead == 1:
        with one_blas_thread() if blas else contextlib.nullcontext():
            state = make_state()
            for c in range(n_chunks):
                merge(c, fn(c, state, slots[0]))
        return
    done = threading.Condition()
    pending, merged, failed = {}, [0], [False]

    def task(c, state):
        with done:  # chunk c - ahead, the last user of its slot, must be merged
            done.wait_for(lambda: c < merged[0] + ahead or failed[0])
            if failed[0]:
                return
        try:
            result = fn(c, state, slots[c % ahead])
            with done:
                pending[c] = result
                while merged[0] in pending:
                    merge(merged[0], pending.pop(merged[0]))
                    merged[0] += 1
        except BaseException:
            failed[0] = True  # the workers waiting for this chunk give up; _run_tasks raises the error
            raise
        finally:
            with done:
                done.notify_all()

    _run_tasks(task, [(c,) for c in range(n_chunks)], make_state=make_state, max_workers=ahead)


def _workers_for(n_chunks: int) -> int:
    """Workers of a pass over ``n_chunks`` chunks: their float64 chunks hold at most a quarter of all of them."""
    return max(1, n_chunks // 4)


def _pass(X: np.ndarray, statistics) -> dict:
    """The ``statistics`` (names of :data:`_STATISTICS`) of the rows of ``X``: one pass over chunks of rows, and
    for the n × n statistics (``"unit_gram"`` too when n < d) one over blocks of columns (:func:`_column_pass`).

    The unit rows' scales of the column pass come from the row pass (which then gives ``"units"`` too).
    """
    wanted = set(statistics)
    n, d = X.shape
    columns = [name for name in _COLUMN_STATISTICS if name in wanted]
    if "unit_gram" in wanted and n < d:
        columns.append("unit_gram")
    by_rows = wanted - set(columns)
    if "unit_gram" in columns:
        by_rows.add("units")
    result = _row_pass(X, by_rows, scales="unit_gram" in columns) if by_rows else {}
    if columns:
        result.update(_column_pass(X, columns, result.pop("scales", None)))
    return result


def _row_pass(X: np.ndarray, wanted, *, scales=False) -> dict:
    """The row statistics ``wanted`` of ``X`` (and with ``scales`` the unit rows' scales), in one pass over its chunks.

    The chunks are read on one worker per core (:func:`in_order`); each converts its chunk to
    float64 in its own buffer (for a float32 ``X``, a quarter of ``X``'s size in all, at most).
    """
    n, d = X.shape
    step = max(1, _CHUNK_ELEMENTS // max(d, 1))
    starts = range(0, n, step)
    gram = "unit_gram" in wanted
    units = "units" in wanted or "unit_squares" in wanted or gram or scales
    squares = "unit_squares" in wanted
    centred = "scatter" in wanted or "second" in wanted
    shift = first_chunk_shift(X[:step]) if centred else None
    acc = {"scatter": np.zeros((d, d)) if centred else None, "total": np.zeros(d), "unit_sum": np.zeros(d),
           "unit_squares": np.zeros(d), "unit_gram": np.zeros((d, d)) if gram else None, "zero": [], "subnormal": [],
           "scales": []}

    def chunk(c, state, slot):
        start = starts[c]
        B = state["B"][: min(step, n - start)]
        np.copyto(B, X[start:start + step])
        out = {}
        if centred:
            B -= shift
            out["total"] = B.sum(axis=0)
            out["scatter"] = np.matmul(B.T, B, out=slot["scatter"])  # BLAS syrk
            if units:
                np.copyto(B, X[start:start + step])  # converted again rather than a second float64 chunk
        if units:
            out["zero"], out["subnormal"] = [], []
            if scales:
                out["scales"] = []
            _unit_rows_block(B, start, out["zero"], out["subnormal"], out.get("scales"))
            out["unit_sum"] = B.sum(axis=0)
            if gram:
                out["unit_gram"] = np.matmul(B.T, B, out=slot["gram"])  # before B is squared in place
            if squares:
                out["unit_squares"] = np.multiply(B, B, out=B).sum(axis=0)
        return out

    def merge(c, out):
        for name, value in out.items():
            acc[name] += value  # arrays in place, lists extended: chunk after chunk

    in_order(chunk, len(starts), merge, lambda: {"B": np.empty((min(step, n), d))},
             max_workers=_workers_for(len(starts)),
             make_slot=lambda: {"scatter": np.empty((d, d)) if centred else None, "gram": np.empty((d, d)) if gram else None},
             blas=centred or gram)
    result = {}
    if "second" in wanted:  # Σ x xᵀ = Σ(x − K)(x − K)ᵀ + K tᵀ + t Kᵀ + n K Kᵀ, t = Σ(x − K)
        cross = np.outer(shift, acc["total"])
        result["second"] = acc["scatter"] + (cross + cross.T) + n * np.outer(shift, shift)
    if "scatter" in wanted:
        mean = acc["total"] / n
        scatter = acc["scatter"]
        scatter -= n * np.outer(mean, mean)
        result["scatter"] = Scatter(scatter, shift, mean)
    if units:
        rows = [np.concatenate(found) if found else np.empty(0, dtype=np.intp) for found in (acc["zero"], acc["subnormal"])]
        result["units"] = result["unit_squares"] = Units(acc["unit_sum"], acc["unit_squares"] if squares else None,
                                                         *rows)
    if gram:
        result["unit_gram"] = acc["unit_gram"]
    if scales:
        odd, exponents, root = zip(*acc["scales"])
        result["scales"] = (np.concatenate(odd), np.concatenate(exponents), np.concatenate(root))
    return result


def _column_pass(X: np.ndarray, names, scales) -> dict:
    """The n × n statistics ``names`` of ``X`` (``"gram"``, ``"centred_gram"``, ``"unit_gram"``), summed over blocks of
    its columns, in order, each block of all the rows converted to float64 in one buffer.

    One worker, this thread, with BLAS's threads (each block's product is large: n² per column): the
    memory is the sums, one product of each and the block, O(n² + n·block), whatever the cores. A
    column of ``"centred_gram"`` is centred on its mean, then on the mean of what that leaves (two-pass
    centring: float32 data and large offsets lose nothing); ``"unit_gram"`` scales the rows as the row
    pass did (``scales``, from :func:`_unit_rows_block`), so its entries are those of the unit rows.
    """
    n, d = X.shape
    step = max(1, _CHUNK_ELEMENTS // max(n, 1))
    starts = range(0, d, step)
    acc = {name: np.zeros((n, n)) for name in names}
    acc["mean_sq"] = 0.0
    centred, units = "centred_gram" in names, "unit_gram" in names

    def chunk(c, state, slot):
        start = starts[c]
        width = min(step, d - start)
        B = state["B"][: n * width].reshape(n, width)
        np.copyto(B, X[:, start:start + width])
        out = {}
        if "gram" in names:
            out["gram"] = np.matmul(B, B.T, out=slot["gram"])  # BLAS syrk
        if centred:
            mean = B.mean(axis=0)
            B -= mean
            B -= B.mean(axis=0)
            out["centred_gram"] = np.matmul(B, B.T, out=slot["centred_gram"])
            out["mean_sq"] = float(mean @ mean)
            if units:
                np.copyto(B, X[:, start:start + width])
        if units:
            _scale_rows(B, *scales)
            out["unit_gram"] = np.matmul(B, B.T, out=slot["unit_gram"])
        return out

    def merge(c, out):
        for name, value in out.items():
            acc[name] += value

    in_order(chunk, len(starts), merge, lambda: {"B": np.empty(n * min(step, d))}, max_workers=1,
             make_slot=lambda: {name: np.empty((n, n)) for name in names}, blas=False)
    result = {name: acc[name] for name in names}
    if centred:
        result["centred_gram"] = CentredGram(acc["centred_gram"], acc["mean_sq"])
    return result


class _Scope:
    """The array of a table and the statistics its metrics need: each pass's computed at the first request of one
    of them, each statistic released once every metric that reads it has had it (a d × d or n × n matrix is not
    kept through the rest of the table).

    For n < d the metrics read the n × n statistics (:data:`WIDE_STATISTICS`), from the pass over the columns,
    run when the first covariance metric asks; the unit-row sums come from the pass over the rows, run when the
    first cosine metric asks: each pass's time is that of the metric that needed it.
    """

    def __init__(self, X, metric_names):
        wide = getattr(X, "ndim", 0) == 2 and X.shape[0] < X.shape[1]
        needs = [WIDE_STATISTICS.get(s, s) if wide else s for name in metric_names for s in METRIC_STATISTICS.get(name, ())]
        self.X, self.statistics, self.readers = X, tuple(dict.fromkeys(needs)), Counter(needs)
        self.pending, self.values = list(self.statistics), {}

    def get(self, statistics) -> dict:
        passes = {_pass_of(name) for name in statistics if name in self.pending}
        if passes:
            batch = [name for name in self.pending if _pass_of(name) in passes]
            self.pending = [name for name in self.pending if name not in batch]
            self.values.update(_pass(self.X, _usable(self.X, batch)))
        if not all(name in self.values for name in statistics):
            return _pass(self.X, statistics)  # not announced by the table, or already released
        out = {name: self.values[name] for name in statistics}
        for name in statistics:
            self.readers[name] -= 1
            if self.readers[name] <= 0:
                del self.values[name]
        return out


def _pass_of(name: str) -> str:
    """Which pass of :func:`_pass` computes the statistic ``name`` (in a table, where ``"unit_gram"`` is not)."""
    return "columns" if name in _COLUMN_STATISTICS else "rows"


_SCOPE: contextvars.ContextVar = contextvars.ContextVar("isotropy_row_statistics", default=None)


def _usable(X, statistics):
    """The statistics the metrics compute on ``X`` itself: only the unit-row sums when ``X`` is not at a safe scale.

    IsoScore, the participation ratio and I(W) work on ``X`` brought to unit scale by a power of two
    when its magnitude is extreme (:mod:`isotropy._utils.magnitude`), that is on another array; the
    cosine statistics scale each row themselves.
    """
    from isotropy._utils.magnitude import extremes, safe_exponent_range

    low, high = extremes(X)
    top = max(abs(low), abs(high))
    if top == 0.0 or not math.isfinite(top) or abs(math.frexp(top)[1]) <= safe_exponent_range(X):
        return statistics
    return tuple(name for name in statistics if name in ("units", "unit_squares"))


def row_statistics(X: np.ndarray, statistics) -> dict:
    """``{name: value}`` for the ``statistics`` of the rows of the numpy array ``X`` (at least those asked for).

    From the table's one pass when ``X`` is the array of an open :func:`shared_statistics`, else
    computed now. The arrays may be shared with other metrics: read them, do not change them.
    """
    scope = _SCOPE.get()
    if scope is not None and scope.X is X and isinstance(X, np.ndarray):
        return scope.get(statistics)
    return _pass(X, statistics)


@contextlib.contextmanager
def shared_statistics(X, metric_names):
    """Within the block, the covariance metrics among ``metric_names`` read ``X``'s statistics from one pass.

    ``X`` is the array the metrics are called with (a numpy array; anything else shares nothing),
    and must not change within the block. The pass runs when the first of them asks (its time
    counts as that metric's), for the statistics of every metric named (:data:`METRIC_STATISTICS`);
    the minimum and maximum of ``X`` that every metric's check reads are found once too.
    """
    from isotropy._utils.magnitude import remembered_extremes

    scope = _Scope(X, metric_names)
    if not isinstance(X, np.ndarray) or X.ndim != 2 or X.dtype.kind != "f":
        yield
        return
    token = _SCOPE.set(scope if scope.statistics else None)
    try:
        with remembered_extremes(X):  # every metric checks X's magnitude: one read of it for all
            yield
    finally:
        _SCOPE.reset(token)
