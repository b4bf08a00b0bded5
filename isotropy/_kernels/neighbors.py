"""Kernels of the exact k-nearest-neighbour search, shared by :mod:`isotropy.metrics.neighbors` and :mod:`isotropy.distributed`.

Private: the in-memory search (:func:`isotropy.metrics.neighbors.kneighbors`) runs them over blocks of one
array, the dask search over tiles of a chunked one; keeping them here lets both import them without
the public module and the dask package importing each other.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import threading

import numpy as np

from isotropy._kernels.centre import column_medians
from isotropy._kernels.repeats import _representation, distinct_rows, maybe_repeated
from isotropy._utils.install import extra_command
from isotropy._utils.validation import IsotropyValueError

# Entries per group of the first threshold of a point (_group_threshold).
_GROUP = 8
# Groups per line per candidate below which the groups are smaller (_group_threshold).
_GROUPS_PER_CANDIDATE = 4
# Gathered candidate rows for the exact recomputation, in bytes (small: stays in cache).
_GATHER_MEMORY = 2**20


_METRICS = ("euclidean", "cosine")


def _n_candidates(n_neighbors: int, n_samples: int) -> int:
    """Candidates kept from the matrix-product distances before the exact recomputation.

    A margin beyond ``n_neighbors`` lets the exact float64 distances reorder neighbours whose
    matrix-product distances were swapped by rounding (float32 input, near-ties).
    """
    return min(n_samples - 1, n_neighbors + max(8, n_neighbors // 8))


def _exact_sq_distances(X: np.ndarray, scale, rows: np.ndarray, cand: np.ndarray, jit=None) -> np.ndarray:
    """``‖y_rows[i] − y_cand[i, j]‖²`` in float64 by direct differences, ``y_i = X[i]·scale[i]``.

    With the compiled kernels (``jit``, :func:`compiled_kernels`), one pass; otherwise through the
    candidates a few rows at a time so that the gathered rows stay in cache, gathered
    candidate-major (``j`` outer, ``i`` inner): the query rows are then subtracted from whole
    ``rows × d`` slabs.
    """
    n_rows, m = cand.shape
    out = np.empty((n_rows, m), dtype=np.float64)
    if jit is not None:
        jit.sq_distances(X, _NO_SCALE if scale is None else scale, np.ascontiguousarray(rows, dtype=np.intp),
                         np.asarray(cand, dtype=np.intp), out)  # a broadcast cand (_exact_rows) is not copied
        return out
    step = max(1, _GATHER_MEMORY // max(1, m * X.shape[1] * 8))
    gathered = np.empty((m, min(step, n_rows), X.shape[1]), dtype=X.dtype)
    diff = np.empty(gathered.shape, dtype=np.float64)
    for s in range(0, n_rows, step):
        e = min(n_rows, s + step)
        g, dd, which = gathered[:, : e - s], diff[:, : e - s], cand[s:e].T
        np.take(X, which, axis=0, out=g, mode="clip")  # valid indices; "clip" writes to out unbuffered
        query = X[rows[s:e]].astype(np.float64)
        # the float32 rows cast inside the float64 operation: one pass fewer than a cast first (the same values). A
        # cast into the float64 buffer first, then a float64 subtraction, was no faster in the search (--stages
        # --compare, docs/benchmarks.md, 2026-12-05)
        if scale is not None:
            query *= scale[rows[s:e], None]
            np.multiply(g, scale[which, None], out=dd)
            dd -= query
        else:
            np.subtract(g, query, out=dd)
        out[s:e] = np.einsum("mbd,mbd->mb", dd, dd).T
    return out


# Candidates per row up to which the compiled loops sort a row by insertion (_neighbors_jit.sort_rows):
# at most _INSERTION² / 4 moves for a row in an unfavourable order (many equal distances).
_INSERTION = 256


def _sort_candidates(sq: np.ndarray, cand: np.ndarray, n_neighbors: int, jit=None):
    """Sort each row by (distance, index) and keep the first ``n_neighbors`` (``jit``: :func:`compiled_kernels`)."""
    if jit is not None and sq.shape[1] <= _INSERTION:
        dist = np.empty((sq.shape[0], n_neighbors), dtype=sq.dtype)
        ind = np.empty((sq.shape[0], n_neighbors), dtype=cand.dtype)
        jit.sort_rows(sq, np.ascontiguousarray(cand), n_neighbors, dist, ind)
        return dist, ind
    # One sort by distance, and the (distance, index) order only for the rows where equal distances (or NaN) among the
    # first n_neighbors + 1 make the order of the indices matter: elsewhere the two orders keep the same entries.
    order = np.argsort(sq, axis=1)
    first = np.take_along_axis(sq, order[:, : n_neighbors + 1], axis=1)
    tied = np.flatnonzero((~(first[:, 1:] > first[:, :-1])).any(axis=1))
    order = order[:, :n_neighbors]
    if tied.size:
        order[tied] = np.lexsort((cand[tied], sq[tied]), axis=-1)[:, :n_neighbors]
    return np.take_along_axis(sq, order, axis=1), np.take_along_axis(cand, order, axis=1)


def _prepare(X: np.ndarray, metric: str, caller: str):
    """``(X, scale)``: the metric is the euclidean distance between the rows ``X[i]·scale[i]``.

    ``X`` comes back as float32 or float64 (never copied then); ``scale`` is ``None`` for the
    euclidean metric and ``1/‖x_i‖`` (float64) for the cosine metric.
    """
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    if metric != "cosine":
        return X, None
    if X.flags.c_contiguous:
        norms = np.sqrt(np.einsum("ij,ij->i", X, X, dtype=np.float64))
    else:  # the sums in the order of contiguous rows, as for any other layout of the same values (and on dask's blocks)
        norms = np.empty(X.shape[0], dtype=np.float64)
        step = max(1, _OPERAND_ELEMENTS // max(1, X.shape[1]))
        for s in range(0, X.shape[0], step):
            rows = np.ascontiguousarray(X[s:s + step])
            norms[s:s + step] = np.einsum("ij,ij->i", rows, rows, dtype=np.float64)
        np.sqrt(norms, out=norms)
    refuse_zero_rows(np.flatnonzero(norms == 0), caller=caller)
    return X, 1.0 / norms


def refuse_zero_rows(zero: np.ndarray, *, caller: str) -> None:
    """Refuse the rows of indices ``zero`` (sorted) under the cosine metric, naming the first (numpy and device searches)."""
    if zero.size:
        rows = "1 zero row (at index" if zero.size == 1 else f"{zero.size} zero rows (first at index"
        raise IsotropyValueError(f"The 'X' parameter of {caller} must have no zero rows with metric='cosine' "
                                 f"(the cosine distance is undefined for them). Got {rows} {int(zero[0])}) instead.")


def _finish(sq: np.ndarray, metric: str) -> np.ndarray:
    """Squared euclidean distances of the representation -> distances of ``metric`` (in place)."""
    if metric == "cosine":
        sq /= 2  # 1 - cos(x, y) = ‖u - v‖² / 2 for unit vectors u, v
        return sq
    return np.sqrt(sq, out=sq)


# ---------------------------------------------------------------------------------------------
# The exact search: candidates from float32 blocks of the upper triangle, exact float64 distances,
# a certificate per row from the float32 error bound, and exact fallbacks where it fails.
# ---------------------------------------------------------------------------------------------

# The compiled kernels (numba, the ``fast`` extra): "auto" (used when installed, for searches whose work
# n² + _RECOMPUTATION_WEIGHT·n·k·d is at least _COMPILED_WORK), "1" (always; an error when numba is
# missing) or "0" (never).
_JIT_VARIABLE = "ISOTROPY_JIT"
# What the compiled loops save grows with the score entries the candidate pass scans and appends (n², whatever
# d: its products are the same BLAS calls on both loops) and with the float64 recomputation of the n·k
# neighbours (n·k·d: numpy's separate gather, cast, subtraction and sum passes against one compiled pass),
# the latter this many times more per unit.
_RECOMPUTATION_WEIGHT = 3.0
# The work from which "auto" uses them: loading numba and its cached kernels in a new process costs about
# what the compiled loops save on a search of this size. Both constants fit (in log n, least squares) the
# crossovers of one search per fresh interpreter (benchmarks/bench_neighbors_floor.py --cold, the runs in
# docs/benchmarks.md): n ≈ 32,000 at d = 50 (k = 2 and 20); 27,500, 16,500 and 9,500 at d = 384 (k = 20,
# 50, 100); about 40,000 and 22,000 to 25,000 at d = 768 (k = 2, 20). The rule puts them within about a
# fifth of n, where the two loops are within a few per cent of each other. Larger searches gain, and
# smaller ones keep the numpy loops, which need no import.
_COMPILED_WORK = 1.4e9
# ``scale`` for the compiled kernels when there is none.
_NO_SCALE = np.empty(0)
# Entries found per side of a block before they are appended to the slots (compiled kernels).
_FOUND = 2**15


def _installed(name: str) -> bool:
    """Whether the top-level package ``name`` can be found (not imported)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # an import hook that refuses it
        return False


def _jit_mode() -> str:
    """``ISOTROPY_JIT`` read: ``"auto"``, ``"0"`` or ``"1"`` (anything else is an error that names it)."""
    raw = os.environ.get(_JIT_VARIABLE, "auto")
    mode = raw.strip().lower() or "auto"
    if mode not in ("auto", "0", "1"):
        raise IsotropyValueError(f"The {_JIT_VARIABLE} environment variable must be 'auto', '0' or '1'. "
                                 f"Got {raw!r} instead.")
    return mode


def _compiled_work(n_samples: int, n_features: int, n_neighbors: int) -> bool:
    """Whether a search of this size is large enough for the compiled loops under ``auto`` (see ``_COMPILED_WORK``)."""
    n = float(n_samples)
    return n * n + _RECOMPUTATION_WEIGHT * n * n_neighbors * n_features >= _COMPILED_WORK


def uses_compiled_kernels(n_samples: int, n_features: int, n_neighbors: int = 2) -> bool:
    """Whether :func:`compiled_kernels` would choose the compiled loops for this search, without loading numba.

    True under ``ISOTROPY_JIT=1``, and under ``auto`` for a search large enough when numba can be
    found (whether it then loads is not known before it is imported). For the time estimates of
    :mod:`isotropy._kernels.cost`. Raises :class:`IsotropyValueError` for a bad ``ISOTROPY_JIT``, as
    :func:`compiled_kernels` does.
    """
    mode = _jit_mode()
    return mode == "1" or (mode == "auto" and _compiled_work(n_samples, n_features, n_neighbors)
                           and _installed("numba"))


def numba_would_run(n_samples: int, n_features: int, n_neighbors: int = 2) -> bool:
    """Whether this search runs the numpy loops only because numba is not installed: ``ISOTROPY_JIT`` is ``auto``,
    the search is large enough for the compiled loops, and numba cannot be found (for the advice of the O(n²) notes).
    False for a bad ``ISOTROPY_JIT`` (the search itself says so)."""
    try:
        mode = _jit_mode()
    except IsotropyValueError:
        return False
    return mode == "auto" and _compiled_work(n_samples, n_features, n_neighbors) and not _installed("numba")


def compiled_kernels(n_samples: int, n_features: int, n_neighbors: int = 2):
    """The compiled loops of the search (:mod:`isotropy._kernels._neighbors_jit`), or ``None`` for the numpy ones.

    Decided by the environment variable ``ISOTROPY_JIT`` and the size of the search alone (its
    work ``n² + w·n·k·d``, never what the process imported before), so that the same data gives
    the same values in every process on one machine (a dask worker follows its own environment). Under ``auto``, numba
    missing or failing to load (an old numba for this numpy, no writable cache directory) means
    the numpy loops; under ``1`` it is an error that says which.
    """
    mode = _jit_mode()
    if mode == "0" or (mode == "auto" and not _compiled_work(n_samples, n_features, n_neighbors)):
        return None
    try:
        return importlib.import_module("isotropy._kernels._neighbors_jit")
    except Exception as error:  # any failure to load numba means the numpy loops under auto
        if mode != "1":
            return None
        if not _installed("numba"):
            raise IsotropyValueError(f"The {_JIT_VARIABLE} environment variable is '1', which needs numba. "
                                     f"Install it with {extra_command('fast')}, or unset {_JIT_VARIABLE}."
                                     ) from None
        cause = " ".join(f"{type(error).__name__}: {error}".split())
        raise IsotropyValueError(f"The {_JIT_VARIABLE} environment variable is '1', but numba could not be "
                                 f"loaded ({cause}). Unset {_JIT_VARIABLE} to use the numpy loops.") from error


def _loops(X, n_neighbors, search):
    """:func:`compiled_kernels` for a search of ``X``, or for the whole ``search = (n_samples, n_neighbors)`` it is part of."""
    n_samples, n_neighbors = (X.shape[0], n_neighbors) if search is None else search
    return compiled_kernels(n_samples, X.shape[1], n_neighbors)


# Rows (and columns) of one square block of the score matrix.
_BLOCK = 1024
# Rows of a block scored at a time (the score buffer of a worker: _ROWS x _BLOCK), on either loops. The numpy loops
# scored a whole block at once until 2026-12-05 (half the numpy calls per block), for a score buffer and a mask twice
# as large: two workers held 5 MiB more. With this and smaller I(W) chunks, the default `isotropy measure` table of
# 20,000 x 384 float32 rows went from 2.26 to 1.83 times its input; whether the smaller blocks cost time two runs
# could not tell from this machine's noise (benchmarks/bench_neighbors_floor.py --measure-only, --live-memory and
# --kernels-only --compare, docs/benchmarks.md, 2026-12-05).
_ROWS = 512
# Column panels per task of the candidate pass (_tasks): each worker holds this many right operand panels. One: a
# left panel is built for every block instead of every second one (b·d more reads of X per block), and each worker
# holds one b x (d + 2) panel less (benchmarks/bench_neighbors_floor.py --live-memory, docs/benchmarks.md).
_COLUMN_PANELS = 1
# Rows sampled for the centre (a coordinate-wise median: a few rows of huge norm do not move it).
_CENTRE_SAMPLE = 1025
# Scores per chunk of the float64 fallbacks (rows x all points).
_FALLBACK_SCORES = 2**22
# Points up to which a search (its candidate blocks, its refinement) runs on one worker thread with
# BLAS on its own threads: below, the per-block Python work of two worker threads contends for the
# GIL and costs more than the second core brings (n = 1,379 to 4,000, d = 384: 10-15 % slower).
_ONE_WORKER = 4096
# Float64 entries of X converted at a time when the operands are built (4 MiB).
_OPERAND_ELEMENTS = 2**19


def _centre(X: np.ndarray, scale) -> np.ndarray:
    """Coordinate-wise lower median (float64) of up to ``_CENTRE_SAMPLE`` evenly spaced rows of ``X·scale``.

    Any centre gives the same distances; a median keeps the centred norms of the bulk of the
    points small even when a few rows are ``10^12`` times larger than the rest (a mean would be
    dragged to them, and the float32 scores of the bulk would lose every digit). Taken a few
    columns at a time, each column contiguous (one partition per column), so that the float64
    sample stays small and the centre costs a few milliseconds whatever ``n``.
    """
    rows = np.unique(np.linspace(0, X.shape[0] - 1, min(X.shape[0], _CENTRE_SAMPLE)).astype(np.intp))
    return column_medians(X[rows], None if scale is None else scale[rows])


# Largest centred squared norm ‖c_i‖² of integer rows for which every float32 score is exact (_Operands.exact): the
# operands are then integers, ‖c_i‖²/2 a multiple of 1/2, and every partial sum of a score, in any order and with
# fused multiply-adds, a multiple of 1/2 of magnitude at most Σ_k |l_k r_k| <= ‖c_i‖² + ‖c_j‖² <= 2^23, which
# float32 holds exactly (its integers are exact up to 2^24).
_EXACT_NORM = 2.0**22


class _Operands:
    """The score operands of :func:`exact_knn`, built a panel of rows at a time (never the ``n × (d + 2)`` matrix).

    Left rows ``[c_i, ‖c_i‖²/2, 1]`` and right rows ``[c_j, −1, −‖c_j‖²/2]`` of the centred rows
    ``c_i = X[i]·scale[i] − centre`` in ``dtype`` (float32, or float64 where float32 cannot hold the
    scores), so that ``left[i]·right[j] = c_i·c_j − ‖c_i‖²/2 − ‖c_j‖²/2 = −‖c_i − c_j‖²/2``; and
    ``q_i = ‖c_i‖²`` in float64 for every row. ``exact``: every entry of ``X`` and of the centre is an
    integer and every ``q_i <= _EXACT_NORM`` (euclidean metric only), so that the float32 scores are exact
    (one-hot, 0/1, count and other integer rows; see :func:`_exact_selection`). A worker builds the panels of its blocks from ``X``
    into its own buffers (one more read of ``b·d`` entries per ``b × b`` block, :func:`_tasks`)
    instead of an ``n × (d + 2)`` copy of ``X`` held throughout.
    """

    def __init__(self, X: np.ndarray, scale, centre: np.ndarray, caller: str):
        self.X, self.scale, self.centre = X, scale, centre
        self.order = None  # the order of the points that slices of left() and right() refer to (None: their own)
        self.jit = None  # the compiled loops that build the panels (exact_knn; None: numpy's)
        n, self.d = X.shape
        # float32 rows, a float32 centre: their float32 difference is their float64 difference rounded to float32
        low = centre.astype(np.float32)
        self.low_centre = low if X.dtype == np.float32 and scale is None and np.array_equal(low, centre) else None
        self.q = np.empty(n, dtype=np.float64)
        half = np.empty(n, dtype=np.float32)  # ‖ĉ_i‖²/2 of the float32 operands, if they can be used
        step = max(1, _OPERAND_ELEMENTS // max(self.d, 1))
        # whether every entry of X and of the centre is an integer (checked until one is not): then every centred entry
        # is an exact integer. Not from the centred rows: a small fraction beside a large integer rounds away there
        # (2⁻⁶⁰ − (−7) is 7.0), and rows that differ by it would get equal scores.
        integral = scale is None and bool(np.all(np.floor(centre) == centre))
        for s in range(0, n, step):  # one chunk at a time (on the workers, their chunks raised the peak memory)
            if integral:
                rows = X[s:s + step]
                integral = bool(np.all(np.floor(rows) == rows))
            c = self._centred(slice(s, min(n, s + step)))
            self.q[s:s + step] = np.einsum("ij,ij->i", c, c)
            with np.errstate(over="ignore", under="ignore"):  # not used when it overflows (below)
                low = c.astype(np.float32)
                half[s:s + step] = np.einsum("ij,ij->i", low, low) / 2
        # |s_ij| <= ‖c_i‖² + ‖c_j‖² must not overflow the products' dtype
        if np.all(self.q <= np.finfo(np.float32).max / 8):
            self.dtype, self.half = np.dtype(np.float32), half
        elif np.all(self.q <= np.finfo(np.float64).max / 8):
            self.dtype = np.dtype(np.float64)
            with np.errstate(under="ignore"):
                self.half = self.q / 2  # ĉ = c in float64
        else:
            raise IsotropyValueError(f"The 'X' parameter of {caller} must have values whose squared distances fit "
                                     f"in float64. Got values too large instead.")
        # Integer rows whose centred squared norms are at most 2^22: every score is exact (see _EXACT_NORM)
        self.exact = integral and self.dtype == np.float32 and n > 0 and float(self.q.max()) <= _EXACT_NORM

    def _centred(self, rows: slice | np.ndarray) -> np.ndarray:
        """Float64 ``X[rows]·scale[rows] − centre`` (an own array)."""
        c = np.array(self.X[rows], dtype=np.float64)
        if self.scale is not None:
            c *= self.scale[rows, None]
        c -= self.centre
        return c

    def _panel(self, rows: slice | np.ndarray, out: np.ndarray, left: bool) -> np.ndarray:
        """The left (``left``) or right rows of ``rows`` (a slice, or indices) in ``out``.

        With an ``order`` (:func:`_cell_order`), a slice is of positions in that order.
        """
        if self.order is not None and isinstance(rows, slice):
            rows = self.order[rows]
        contiguous = isinstance(rows, slice)
        d, r = self.d, rows.stop - rows.start if contiguous else rows.size
        P = out[: r * (d + 2)].reshape(r, d + 2)
        if self.low_centre is not None and self.dtype == np.float32 and self.jit is not None:
            # one nogil call (the same values): a numpy call per column costs a hand-over of the GIL between workers
            if contiguous:
                self.jit.panel(self.X, rows.start, rows.stop, self.low_centre, self.half, left, P)
            else:  # gathered in the same pass, without a copy of the rows
                self.jit.gathered_panel(self.X, rows, self.low_centre, self.half, left, P)
            return P
        if self.low_centre is not None and self.dtype == np.float32:  # float32 throughout: one rounding
            np.subtract(self.X[rows], self.low_centre, out=P[:, :d])
        elif self.scale is None:  # the float64 difference, rounded to dtype as stored
            np.subtract(self.X[rows], self.centre, out=P[:, :d], dtype=np.float64, casting="unsafe")
        else:
            step = max(1, _OPERAND_ELEMENTS // 8 // max(d, 1))
            for s in range(0, r, step):
                e = min(r, s + step)
                P[s:e, :d] = self._centred(slice(rows.start + s, rows.start + e) if contiguous else rows[s:e])
        if left:
            P[:, d] = self.half[rows]
            P[:, d + 1] = 1
        else:
            P[:, d] = -1
            np.negative(self.half[rows], out=P[:, d + 1])
        return P

    def left(self, rows: slice | np.ndarray, out: np.ndarray) -> np.ndarray:
        """Rows ``[ĉ_i, ‖ĉ_i‖²/2, 1]`` in ``out`` (``ĉ``: ``c`` rounded to ``dtype``)."""
        return self._panel(rows, out, left=True)

    def right(self, rows: slice | np.ndarray, out: np.ndarray) -> np.ndarray:
        """Rows ``[ĉ_j, −1, −‖ĉ_j‖²/2]`` in ``out``."""
        return self._panel(rows, out, left=False)


# Candidates per point from which exact_knn offers its blocks in the order of _cell_order (float32 points, on either
# loops: the numpy ones gather the panels' rows with X[rows], the compiled ones in one pass): fewer entries reach the
# thresholds, and from about this many on, that saves more than gathering the panels' rows costs (compiled loops,
# 20,000 x 384 low-rank float32 points, interleaved searches: 7 % of the floor at k = 100, even at k = 50, 3 % slower
# to 2 % faster at k = 20; greedily chaining nearby cells gained nothing more). The numpy loops, whose every entry
# that reaches a threshold costs more, take the same rule: below it (k = 2, 20) the order did not pay for its gathers
# on them either (benchmarks/bench_neighbors_floor.py --compare).
_ORDERED = 64


def _cell_order(ops: _Operands, size: int) -> np.ndarray:
    """The points grouped by the nearest of ``n // size`` evenly spaced points (by their float32 scores): a permutation.

    The candidate pass offers its blocks in this order (:attr:`_Operands.order`), so that a point's
    first block, on the diagonal, holds points near it: its first threshold is then near its final
    one, and fewer entries reach the thresholds of the blocks after it. Any order gives the same
    neighbours (among candidates of equal scores the order may keep others; the exact stages decide ties).
    """
    n, d = ops.X.shape
    centres = np.unique(np.linspace(0, n - 1, max(2, n // size)).astype(np.intp))
    right = ops.right(centres, np.empty(centres.size * (d + 2), dtype=ops.dtype))
    nearest = np.empty(n, dtype=np.intp)
    left = np.empty(_BLOCK * (d + 2), dtype=ops.dtype)
    for rows in _panels(0, n, _BLOCK):
        nearest[rows] = np.argmax(ops.left(rows, left) @ right.T, axis=1)
    return np.argsort(nearest, kind="stable")


def _error_factor(dtype, n_features: int) -> float:
    """``γ`` with ``|s̃_ij − s_ij| <= γ·(q_i + q_j)`` for the scores of :class:`_Operands` in ``dtype``.

    With ``u`` the unit roundoff: rounding ``c`` to ``dtype`` moves ``−‖c_i − c_j‖²/2`` by at most
    ``2u(q_i + q_j)``, the rounded ``‖ĉ_i‖²/2`` by ``(d + 1)u·q_i/2``, and a dot product of ``d + 2``
    terms in any summation order by ``(d + 2)u·Σ|a_k b_k| <= (d + 2)u·(q_i + q_j)`` (Higham 2002,
    §3.1): ``γ = (1.5d + 4.5)u``, taken as ``(1.5d + 6)u`` with a 2 % margin for second-order terms.
    """
    u = float(np.finfo(dtype).eps) / 2
    return 1.02 * (1.5 * n_features + 6) * u


def _certified(tau, kth_sq, q, gamma: float, floor: float, n_features: int, q_max: float) -> np.ndarray:
    """Rows whose ``k`` nearest are provably among their candidates.

    ``tau[i]`` is row i's ``m``-th best approximate score: every other point j has
    ``s̃_ij <= tau[i]``, hence ``d²_ij >= −2·tau[i] − 2γ(q_i + q_j) − floor``, and, by the triangle
    inequality around the centre, ``d_ij >= √q_j − √q_i``. The row is certified when every
    ``q_j`` in ``[0, q_max]`` makes one of the two bounds exceed the exact ``k``-th squared distance
    (inflated by the float64 rounding of the exact distances). ``q`` holds the rows' own ``q_i``;
    ``q_max`` is the largest ``q_j`` of every point searched, not only of these rows (the largest of
    a chunk of rows let a row be certified past a point of larger norm in another chunk).
    """
    kth = kth_sq * (1 + (n_features + 4) * float(np.finfo(np.float64).eps)) + floor
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):  # (γ = 0: exact scores, q1 = ±inf)
        base = -2.0 * tau.astype(np.float64) - 2.0 * gamma * q - floor  # bound at q_j = 0
        ok = base - 2.0 * gamma * q > kth  # every q_j <= q_i (the first bound decreases in q_j)
        q1 = (base - kth) / (2.0 * gamma)  # beyond q1 the first bound no longer suffices
        shrink = 1 - 4 * (n_features + 2) * float(np.finfo(np.float64).eps)
        far = (np.sqrt(np.maximum(q1, q)) * shrink - np.sqrt(q)) ** 2 > kth
    return ok & (far | (q1 > q_max))


# Key of an unfilled slot: score −inf, index 0 (the old kernel's unfilled candidate).
_EMPTY = np.int64(((0xFF800000 ^ 0x7FFFFFFF) - (1 << 32)) << 32 | 0xFFFFFFFF)


def _keys(vals: np.ndarray, index: np.ndarray) -> np.ndarray:
    """One int64 per float32 entry, ordered as (score ascending, index descending): the order-preserving
    bits of the score, then the index reversed (``+ 0`` turns ``−0`` into ``+0``)."""
    bits = (vals + np.float32(0)).view(np.int32)
    key = (bits ^ ((bits >> 31) & 0x7FFFFFFF)).astype(np.int64) << 32
    key |= 0xFFFFFFFF - index
    return key


def _scores(keys: np.ndarray) -> np.ndarray:
    """The float32 scores of :func:`_keys`."""
    o = (keys >> 32).astype(np.int32)
    return (o ^ ((o >> 31) & 0x7FFFFFFF)).view(np.float32)


def _indices(keys: np.ndarray) -> np.ndarray:
    """The indices of :func:`_keys`."""
    return (0xFFFFFFFF - (keys & 0xFFFFFFFF)).astype(np.intp)


# Points per lock of the running best (_Stripes): about a panel, so that two workers appending to
# different panels do not wait for each other.
_STRIPE = 1024


class _Stripes:
    """One lock per ``_STRIPE`` consecutive points; ``hold(start, stop)`` takes those of the points
    ``start:stop`` in increasing order (the same order for every caller: no deadlock)."""

    def __init__(self, size: int):
        self.locks = [threading.Lock() for _ in range(max(1, -(-size // _STRIPE)))]

    def hold(self, start: int, stop: int) -> _Held:
        return _Held(self.locks[start // _STRIPE: max(start, stop - 1) // _STRIPE + 1])


class _Held:
    """The locks of :meth:`_Stripes.hold`, held inside a ``with`` block."""

    def __init__(self, locks: list):
        self.locks = locks

    def __enter__(self):
        for lock in self.locks:
            lock.acquire()

    def __exit__(self, *exc):
        for lock in reversed(self.locks):
            lock.release()


class _Best:
    """The running best ``m`` candidates ``(score, index)`` of the points ``offset:offset + size`` (float32 scores).

    Kept under a total order (higher score first, then smaller index), so that the final set is the
    best ``m`` of everything offered whatever the order the blocks arrive in (the worker threads
    finish them in any order). Each point has ``capacity = 1.5m`` slots of :func:`_keys` (``2m``
    held ``n·m/2`` keys more for no speed): new entries are appended, and a point whose slots are
    full is compacted to its best ``m`` (one partition).
    ``tau`` is each point's ``m``-th best score at its last compaction (``−inf`` before the first):
    an entry below it cannot be among the best ``m``.
    """

    def __init__(self, size: int, m: int, offset: int = 0):
        self.m, self.capacity, self.offset = m, m + max(1, m // 2), offset
        self.keys = np.full((size, self.capacity), _EMPTY, dtype=np.int64)
        self.fill = np.zeros(size, dtype=np.intp)
        self.tau = np.full(size, -np.inf, dtype=np.float32)
        self.stripes = _Stripes(size)  # a target's slots, fill and tau change under its stripe's lock
        self.live = 1.0  # share of the targets of the last block offered that had an entry to keep (_offer)
        self.ready = False  # every target has a threshold (current); once true, for good (tau only rises)

    def thresholds(self, targets: slice, S: np.ndarray, axis: int) -> np.ndarray:
        """Entries of ``S`` a target must reach (targets along ``axis`` of ``S``: 1 rows, 0 columns).

        The current ``tau`` (a snapshot: it only rises, so a stale one is still valid); for a target
        without one, the ``m``-th largest maximum of groups of entries of its line of ``S``
        (:func:`_group_threshold`: ``m`` groups reach it, hence at least ``m`` entries do, and every
        entry below it has ``m`` entries strictly above it). Never ``−inf``: the diagonal's ``−inf`` never enters.
        """
        thr = self.tau[targets.start - self.offset: targets.stop - self.offset].copy()
        low = np.isneginf(thr)
        if low.any():
            thr[low] = _group_threshold(S, axis, self.m)[low]
        return np.maximum(thr, -np.finfo(thr.dtype).max, out=thr)

    def current(self, targets: slice) -> np.ndarray | None:
        """The targets' ``tau`` itself (a view, no copy) once every point has a threshold, else ``None``.

        Other threads raise ``tau`` while a block is compared against the view: any value read is a valid
        threshold (it only rises, and an entry below a point's ``tau`` at any moment is not among its best
        ``m``). Before every point has one (the self search's diagonal blocks, a cross search's first blocks),
        :meth:`thresholds` is used instead. Looking costs one pass over ``tau`` per block until every point has
        one, and nothing after: the numpy calls of :meth:`thresholds` on every block cost each worker a hand-over
        of the GIL (with the compiled panels, a few per cent of the floor on both loops at n = 20,000:
        ``benchmarks/bench_neighbors_floor.py --kernels-only --compare``, docs/benchmarks.md).
        """
        if not self.ready:
            self.ready = not np.isneginf(self.tau).any()
            if not self.ready:
                return None
        return self.tau[targets.start - self.offset: targets.stop - self.offset]

    def _compact(self, rows: np.ndarray, extra: np.ndarray | None = None) -> None:
        """Keep the best ``m`` of the slots of ``rows`` (and of ``extra``, one row of keys per row)."""
        keys = self.keys[rows] if extra is None else np.concatenate([self.keys[rows], extra], axis=1)
        width, m = keys.shape[1], self.m
        keys.partition(width - m, axis=1)
        self.keys[rows, :m] = keys[:, width - m:]
        self.keys[rows, m:] = _EMPTY
        self.fill[rows] = m
        self.tau[rows] = _scores(keys[:, width - m])

    def merge(self, targets: np.ndarray, others: np.ndarray, vals: np.ndarray) -> None:
        """Offer the entries ``(targets[t], others[t], vals[t])`` (targets relative to ``offset``)."""
        if targets.size == 0:
            return
        keys = _keys(vals, others)
        del others, vals  # (fewer arrays of the entries' size at once: the peak memory of the search)
        if targets.size > 1 and np.any(targets[1:] < targets[:-1]):
            order = _group_order(targets)
            targets, keys = targets[order], keys[order]
            del order
        counts = np.bincount(targets)
        rows = np.flatnonzero(counts)
        counts = counts[rows]
        first = np.cumsum(counts) - counts
        pos = np.arange(targets.size) - np.repeat(first, counts)
        m, capacity = self.m, self.capacity
        with self.stripes.hold(int(targets[0]), int(targets[-1]) + 1):  # targets are sorted
            over = self.fill[rows] + counts > capacity
            if over.any():
                huge = over & (counts > capacity - m)  # more than fit even after a compaction
                if huge.any():  # merged at once: their slots and their new keys, padded
                    which = np.repeat(huge, counts)
                    width = int(counts[huge].max())
                    extra = np.full((int(huge.sum()), width), _EMPTY, dtype=np.int64)
                    extra[np.repeat(np.arange(extra.shape[0]), counts[huge]), pos[which]] = keys[which]
                    self._compact(rows[huge], extra)
                    keep = ~which
                    targets, keys, pos = targets[keep], keys[keep], pos[keep]
                    rows, counts, over = rows[~huge], counts[~huge], over[~huge]
                if over.any():
                    self._compact(rows[over])
            # flat positions (the slots are one C-contiguous array, so reshape is a view): faster than 2-d indices
            self.keys.reshape(-1)[targets * capacity + self.fill[targets] + pos] = keys
            self.fill[rows] += counts
            fresh = rows[np.isneginf(self.tau[rows]) & (self.fill[rows] >= m)]
            if fresh.size:  # the first m: a threshold from now on
                self._compact(fresh)

    def result(self, jit=None, order=None):
        """``(scores, indices)`` of the best ``m`` of every point (unfilled: ``−inf``, index 0, or ``order[0]``).

        ``order`` (a permutation, or ``None``): the points were offered in this order (slot row
        ``t`` and index ``j`` are the points ``order[t]`` and ``order[j]``); the rows and indices
        come back in the points' own order. A few rows at a time (no temporary of the size of the
        slots), or in compiled loops (``jit``: :func:`compiled_kernels`) a stripe of points per
        task on one worker per core (they run without the GIL), after which the slots are
        released: call it once, after the last merge.
        """
        n, m = self.keys.shape[0], self.m
        scores, indices = np.empty((n, m), dtype=np.float32), np.empty((n, m), dtype=np.intp)
        if jit is not None:
            from isotropy._kernels.silhouette import _run_tasks

            where = np.empty(0, dtype=np.intp) if order is None else order

            def stripe(s, state):
                e = min(n, s + _STRIPE)
                jit.finish(self.keys[s:e], self.fill[s:e], m, scores, indices, s, where)

            _run_tasks(stripe, [(s,) for s in range(0, n, _STRIPE)], max_workers=1 if n <= _ONE_WORKER else None)
            self.keys = None
            return scores, indices
        step = max(1, _GATHER_MEMORY // (8 * self.capacity))
        for s in range(0, n, step):
            rows = np.arange(s, min(n, s + step))
            self._compact(rows)
            keys = self.keys[rows, :m]
            if order is None:
                scores[rows], indices[rows] = _scores(keys), _indices(keys)
            else:
                scores[order[rows]], indices[order[rows]] = _scores(keys), order[_indices(keys)]
        self.keys = None
        return scores, indices


class _Best64:
    """:class:`_Best` for float64 scores (float32 could not hold them): every merge keeps the best ``m`` at once."""

    def __init__(self, size: int, m: int, offset: int = 0):
        self.m, self.offset = m, offset
        self.v = np.full((size, m), -np.inf)
        self.i = np.zeros((size, m), dtype=np.intp)
        self.tau = np.full(size, -np.inf)
        self.stripes = _Stripes(size)
        self.live = 1.0
        self.ready = False

    thresholds, current = _Best.thresholds, _Best.current

    def merge(self, targets, others, vals) -> None:
        if targets.size == 0:
            return
        order = _group_order(targets)
        targets, others, vals = targets[order], others[order], vals[order]
        counts = np.bincount(targets)
        rows = np.flatnonzero(counts)
        counts = counts[rows]
        m = self.m
        which = np.repeat(np.arange(rows.size), counts)
        pos = np.arange(targets.size) - np.repeat(np.cumsum(counts) - counts, counts) + m
        V = np.full((rows.size, m + int(counts.max())), -np.inf)
        V[which, pos] = vals
        Ind = np.zeros(V.shape, dtype=np.intp)
        Ind[which, pos] = others
        with self.stripes.hold(int(rows[0]), int(rows[-1]) + 1):
            V[:, :m], Ind[:, :m] = self.v[rows], self.i[rows]
            top = np.lexsort((Ind, -V), axis=1)[:, :m]
            self.v[rows] = v = np.take_along_axis(V, top, axis=1)
            self.i[rows] = np.take_along_axis(Ind, top, axis=1)
            self.tau[rows] = v.min(axis=1)

    def result(self, jit=None, order=None):
        return self.v, self.i  # (never ordered: exact_knn orders only float32 operands)


def _group_order(targets: np.ndarray) -> np.ndarray:
    """Stable order grouping equal ``targets`` (a radix sort when they fit in 16 bits)."""
    if targets.max() < 2**15:
        targets = targets.astype(np.int16)
    return np.argsort(targets, kind="stable")


def _best(size: int, m: int, dtype, offset: int = 0):
    """The running best ``m`` of ``size`` points for scores of ``dtype``."""
    return _Best(size, m, offset) if dtype == np.float32 else _Best64(size, m, offset)


def _group_threshold(S: np.ndarray, axis: int, m: int) -> np.ndarray:
    """Per line of ``S`` along ``axis``: the ``m``-th largest maximum of interleaved groups of entries.

    Groups of ``_GROUP`` entries, fewer (down to one) where that leaves fewer than
    ``_GROUPS_PER_CANDIDATE·m`` groups per line: with about ``m`` groups the ``m``-th largest maximum
    lets most of the line through (k = 100: ~230 of 1,024 entries of a line of independent scores
    with groups of 8, ~120 with groups of 2, for a few milliseconds more of the 20,000 lines).
    """
    size = max(1, min(_GROUP, S.shape[axis] // (_GROUPS_PER_CANDIDATE * m)))
    g = S.shape[axis] // size  # groups per line
    if g < m:
        return np.full(S.shape[1 - axis], -np.inf, dtype=S.dtype)
    if axis == 1:
        maxima = S[:, :g].copy()
        for t in range(1, size):
            np.maximum(maxima, S[:, t * g:(t + 1) * g], out=maxima)
        return np.partition(maxima, g - m, axis=1)[:, g - m]
    maxima = S[: g * size].reshape(size, g, S.shape[1]).max(axis=0)
    return np.partition(maxima, g - m, axis=0)[g - m]


def _offer(S: np.ndarray, best: _Best, targets: slice, other0: int, axis: int, mask: np.ndarray, into: list) -> None:
    """Offer the block ``S`` to its rows (``axis=1``) or, through the transpose, its columns (``axis=0``).

    When the side's last block left few of its targets reachable (:attr:`_Best.live`), the block's
    maximum per target comes first (a reduction, no mask) and only the lines of the targets it can
    reach are compared and scanned; otherwise the whole block is, at once. Only the entries that
    reach the thresholds (few once every target holds ``m``) are kept, as ``(targets, others,
    scores)`` appended to ``into`` for one merge (:func:`_merge`) of the parts of a block.
    """
    thr = best.current(targets)
    if thr is None:
        thr = best.thresholds(targets, S, axis)
    if best.live < 0.25:
        live = np.flatnonzero(S.max(axis=axis) >= thr)
        best.live = live.size / thr.size
        if live.size == 0:
            return
    else:
        live = None
    if live is None or 4 * live.size > thr.size:
        np.greater_equal(S, thr[:, None] if axis == 1 else thr[None, :], out=mask)
        flat = np.flatnonzero(mask)
        r = flat // S.shape[1]
        c = flat - r * S.shape[1]  # (np.divmod's integer loop is several times slower)
        vals = S.ravel()[flat]
        if live is None:  # a heuristic only (the entries kept are the same either way): not locked
            best.live = np.count_nonzero(np.bincount(r if axis == 1 else c)) / thr.size
    elif axis == 1:  # (flat indices: numpy's nonzero of a 2-d mask is several times slower than of a 1-d one)
        lines = S[live]
        flat = np.flatnonzero(lines >= thr[live, None])
        r = flat // lines.shape[1]
        c = flat - r * lines.shape[1]
        vals, r = lines.ravel()[flat], live[r]
    else:
        lines = S[:, live]
        flat = np.flatnonzero(lines >= thr[None, live])
        r = flat // lines.shape[1]
        c = flat - r * lines.shape[1]
        vals, c = lines.ravel()[flat], live[c]
    if r.size == 0:
        return
    if axis == 1:
        into.append((r + (targets.start - best.offset), c + other0, vals))
    else:
        into.append((c + (targets.start - best.offset), r + other0, vals))


def _merge(best, offered: list) -> None:
    """Merge the entries :func:`_offer` kept into ``best`` (once for the parts of a block), and forget them."""
    if not offered:
        return
    targets, others, vals = offered[0] if len(offered) == 1 else (np.concatenate(part) for part in zip(*offered))
    offered.clear()  # the parts go before the merge's own arrays come
    best.merge(targets, others, vals)


def _panels(start: int, stop: int, b: int) -> list:
    """Equal panels of at most ``b`` points covering ``start:stop``."""
    count = max(1, -(-(stop - start) // b))
    size = -(-(stop - start) // count)
    return [slice(s, min(stop, s + size)) for s in range(start, stop, size)]


def _tasks(rows, columns, *, diagonal: bool) -> list:
    """Tasks ``(I, (J, ...))`` of :func:`_candidate_pass`: each row panel against ``_COLUMN_PANELS`` column panels.

    ``diagonal``: ``rows`` and ``columns`` are the same panels and only the blocks on and above the
    diagonal are wanted, the diagonal ones first (every point then has a threshold). Then by group
    of column panels, so that a worker's consecutive tasks share their right operands (and, with
    more than one panel per group, each left operand it builds serves several blocks).
    """
    tasks = [(I, (I,)) for I in rows] if diagonal else []
    for t in range(0, len(columns), _COLUMN_PANELS):
        Js = tuple(columns[t:t + _COLUMN_PANELS])
        tasks += [(I, Js) for I in (rows[:t] if diagonal else rows)]
        if diagonal:
            tasks += [(J, Js[i + 1:]) for i, J in enumerate(Js[:-1])]
    return tasks


def _scan(S: np.ndarray, sides, rows: slice, J: slice, diagonal: bool, found: list, jit) -> None:
    """:func:`_offer` and :func:`_merge` of a float32 block for its rows and (off the diagonal) its columns, compiled.

    One scan of the block finds the entries that reach either side's thresholds, as keys
    (:func:`_keys`); they are appended to the sides' slots (:class:`_Best`, compacted as its
    ``merge`` does) whenever the buffers ``found`` (and the scan's mask) fill, and at the end.
    """
    row_best, col_best = sides
    if min(found[0].shape[0], found[1].shape[0], found[2].size) < S.shape[1]:  # a row must fit (no bounds checks)
        raise ValueError(f"scan buffers of {found[0].shape[0]}/{found[1].shape[0]} entries and a mask of "
                         f"{found[2].size} bytes for a block of {S.shape[1]} columns")
    # each side's own thresholds, read as the scan goes (_Best.current), once every point has one; before, from
    # the block itself where a point has none yet (its first block)
    row_thr = row_best.current(rows)
    if row_thr is None:
        row_thr = row_best.thresholds(rows, S, 1)
    col_thr = row_thr if diagonal else col_best.current(J)
    if col_thr is None:
        col_thr = col_best.thresholds(J, S, 0)
    offsets = np.array([rows.start - row_best.offset, J.start, J.start - col_best.offset, rows.start])
    start = 0
    while start < S.shape[0]:
        start, n_row, n_col = jit.scan(S, S.view(np.int32), row_thr, col_thr, offsets, start, not diagonal, *found)
        for best, entries, count, targets in ((row_best, found[0], n_row, rows), (col_best, found[1], n_col, J)):
            if count:  # (found[2]: the mask)
                with best.stripes.hold(targets.start - best.offset, targets.stop - best.offset):
                    jit.push(best.keys, best.fill, best.tau.view(np.int32), best.m, entries, count, _EMPTY)


def _candidate_pass(ops: _Operands, sides, tasks, b: int, jit=None) -> None:
    """Offer the score blocks ``(rows I, columns J)`` of ``tasks`` (:func:`_tasks`) to ``sides`` on one worker per core.

    ``sides = (row_best, col_best)``: a diagonal block (``I is J``) is offered to its rows only, the
    others to their rows and, transposed, to their columns. Each worker builds the operand panels of
    its blocks from ``X`` (:class:`_Operands`; the right ones are kept while consecutive tasks share
    them) and computes its blocks into its own buffer with single-threaded BLAS
    (:func:`isotropy._kernels.silhouette._run_tasks`), so that the selection of one block overlaps
    the products of the others.
    """
    from isotropy._kernels.silhouette import _run_tasks

    d2 = ops.d + 2
    row_best, col_best = sides

    select = jit if ops.dtype == np.float32 else None  # compiled for float32 scores (float64 ones: rare, _Best64)
    # one task (a few points) runs whole, on BLAS's own threads
    h = b if len(tasks) == 1 else min(b, _ROWS)

    def buffers():
        state = {"S": np.empty(h * b, dtype=ops.dtype), "L": np.empty(h * d2, dtype=ops.dtype),
                 "right": [None] * _COLUMN_PANELS, "B": [np.empty(b * d2, dtype=ops.dtype) for _ in range(_COLUMN_PANELS)]}
        if select is None:
            state["mask"] = np.empty(h * b, dtype=bool)
        else:  # a row's entries always fit; a mask of b bytes read as uint64 words
            state["found"] = [np.empty((max(_FOUND, b), 2), dtype=np.int64) for _ in range(2)]
            state["found"].append(np.zeros(-(-b // 8), dtype=np.uint64).view(np.uint8))
        return state

    def task(I, Js, state):
        rights = []
        for slot, J in enumerate(Js):
            key, right = state["right"][slot] or (None, None)
            if key != (J.start, J.stop):
                right = ops.right(J, state["B"][slot])
                state["right"][slot] = ((J.start, J.stop), right)
            rights.append(right)
        offered = [([], []) for _ in Js]  # per block: the entries for its rows and for its columns
        for start in range(I.start, I.stop, h):  # h rows of the block at a time: a small score buffer
            rows = slice(start, min(I.stop, start + h))
            left = ops.left(rows, state["L"])
            for J, right, (to_rows, to_columns) in zip(Js, rights, offered):
                r, c = rows.stop - rows.start, J.stop - J.start
                S = np.matmul(left, right.T, out=state["S"][: r * c].reshape(r, c))
                if I == J:
                    np.fill_diagonal(S[:, start - J.start:], -np.inf)  # a point is not its own neighbour
                if select is not None:
                    _scan(S, sides, rows, J, I == J, state["found"], select)
                    continue
                mask = state["mask"][: r * c].reshape(r, c)
                if I == J:
                    _offer(S, row_best, rows, J.start, 1, mask, to_rows)
                    continue
                _offer(S, row_best, rows, J.start, 1, mask, to_rows)
                _offer(S, col_best, J, rows.start, 0, mask, to_columns)
        for to_rows, to_columns in offered:  # one merge per side of each block
            _merge(row_best, to_rows)
            _merge(col_best, to_columns)

    points = ops.X.shape[0]  # small searches: one worker, BLAS on its own threads (see _ONE_WORKER)
    _run_tasks(task, tasks, progress=True, make_state=buffers, max_workers=1 if points <= _ONE_WORKER else None)


def _exact_rows(X, scale, rows: np.ndarray, n_neighbors: int, cols: tuple[int, int], jit=None):
    """Exact search for a few rows among the points ``cols[0]:cols[1]``: float64 differences, ties by index.

    The rows go in chunks of at most ``_FALLBACK_SCORES`` distances (rows x columns per step) on one worker per
    core, so memory is bounded whatever the number of rows; each step updates the rows' ``n_neighbors`` best
    (:func:`_take_smallest`) without sorting every distance by (distance, index): the rows that reach this stage
    are mostly those whose neighbours tie (repeated rows, one-hot or lattice data), where such sorts made it
    O(n² log n) on many rows.
    """
    from isotropy._kernels.silhouette import _run_tasks

    step = max(1, _GATHER_MEMORY // max(1, X.shape[1] * 8))  # columns per step: their gathered rows stay in cache
    step = min(step, max(1, cols[1] - cols[0]))
    chunk = max(1, _FALLBACK_SCORES // (step + n_neighbors))  # rows per chunk
    best_sq = np.full((rows.size, n_neighbors), np.inf)
    best_i = np.zeros((rows.size, n_neighbors), dtype=np.intp)

    def rows_chunk(first, state):
        R = rows[first:first + chunk]
        for s in range(cols[0], cols[1], step):
            c = np.arange(s, min(cols[1], s + step))
            sq = _exact_sq_distances(X, scale, R, np.broadcast_to(c, (R.size, c.size)), jit)
            sq[R[:, None] == c[None, :]] = np.inf  # a point is not its own neighbour
            _take_smallest(best_sq[first:first + chunk], best_i[first:first + chunk], sq, c)

    _run_tasks(rows_chunk, [(first,) for first in range(0, rows.size, chunk)],
               max_workers=1 if rows.size <= chunk else None)
    return best_sq, best_i


def _take_smallest(held: np.ndarray, held_i: np.ndarray, values: np.ndarray, cols: np.ndarray) -> None:
    """Update each row's ``k`` smallest (``held``, sorted, with their indices ``held_i``; in place) with ``values``
    of the points ``cols`` (increasing, all above the indices held), by (value, index).

    Only a value below a row's ``k``-th so far can enter (at an equal value the lower index held wins): after the
    first steps of a search few do, and none where the values tie. When most do (the first step), the rows are
    merged whole; otherwise only the rows that take one, with only those values (:func:`_smallest_by_position`).
    """
    enter = values < held[:, -1:]
    passed = np.count_nonzero(enter)
    if passed == 0:
        return
    k = held.shape[1]
    if 4 * passed > values.size:  # the values that do not enter are never chosen: right of k held ones at most equal
        held[:], held_i[:] = _smallest_by_position(np.concatenate([held, values], axis=1),
                                                   np.concatenate([held_i, np.broadcast_to(cols, values.shape)],
                                                                  axis=1), k)
        return
    r, j = np.nonzero(enter)
    counts = np.bincount(r, minlength=values.shape[0])
    live = np.flatnonzero(counts)  # only the rows that take a new value
    at = np.arange(r.size) - np.repeat(np.cumsum(counts) - counts, counts)  # place within its row
    r = np.searchsorted(live, r)
    V = np.full((live.size, int(counts.max())), np.inf)
    V[r, at] = values[live[r], j]
    C = np.zeros(V.shape, dtype=np.intp)  # padding right of every value: never among a row's k first
    C[r, at] = cols[j]
    # the values held stand left of the new ones (their indices are lower), and the new ones by index, so that among
    # equal values the position orders the indices
    held[live], held_i[live] = _smallest_by_position(np.concatenate([held[live], V], axis=1),
                                                     np.concatenate([held_i[live], C], axis=1), k)


def _smallest_by_position(values: np.ndarray, ind: np.ndarray, k: int):
    """The ``k`` smallest of each row of ``values`` by (value, position), sorted by (value, index), and their ``ind``.

    A sort of the values and a few linear passes (no sort of the indices), for rows whose indices increase with the
    position among equal values, so that (value, position) is (value, index). A row with NaN (not expected: the
    distances and scores of finite rows) goes through :func:`_sort_candidates`.
    """
    if np.isnan(values).any():
        return _sort_candidates(values, ind, k)
    # the k-th smallest value of each row, from a sort: numpy's partition slows down badly on rows of many equal
    # values and a few larger ones (the rows that reach the fallbacks), its (vectorised) sort does not
    kth = np.sort(values, axis=1)[:, k - 1:k]
    below = values < kth
    tied = values == kth
    # of the values equal to the k-th, the first (k - values below) by position (counted only in the rows that hold
    # more of them than that, over as many first columns as hold each row's first ones: often a few)
    need = k - np.count_nonzero(below, axis=1)
    keep = below | tied
    excess = np.flatnonzero(np.count_nonzero(tied, axis=1) > need)
    if excess.size:
        keep[excess] = below[excess]
        width, need = values.shape[1], need[excess, None]
        w = min(width, 2 * k + 64)
        while True:
            count = np.cumsum(tied[excess, :w], axis=1, dtype=np.int32)
            if w == width or (count[:, -1:] >= need).all():
                break
            w = min(width, 4 * w)
        keep[excess, :w] |= tied[excess, :w] & (count <= need)
    r, c = np.nonzero(keep)  # k per row, row-major: by position within each row
    kept, kept_i = values[r, c].reshape(-1, k), ind[r, c].reshape(-1, k)
    order = np.argsort(kept, axis=1, kind="stable")  # equal values keep their order: by index
    return np.take_along_axis(kept, order, axis=1), np.take_along_axis(kept_i, order, axis=1)


def _float64_candidates(X, scale, centre, q, rows: np.ndarray, m: int, cols: tuple[int, int]):
    """Best ``m`` float64 scores (and indices) of ``rows`` against the points ``cols[0]:cols[1]``, best first.

    Kept as negated scores by :func:`_take_smallest` (no partition: numpy's slows down badly on rows of many
    equal scores, the rows that reach this stage).
    """
    C = _representation(X[rows], None if scale is None else scale[rows]) - centre
    held = np.full((rows.size, m), np.inf)  # -score
    best_i = np.zeros((rows.size, m), dtype=np.intp)
    step = max(m + 1, _FALLBACK_SCORES // max(1, rows.size))
    for s in range(cols[0], cols[1], step):
        e = min(cols[1], s + step)
        c = _representation(X[s:e], None if scale is None else scale[s:e]) - centre
        S = C @ c.T - q[rows, None] / 2 - q[None, s:e] / 2
        S[(rows[:, None] == np.arange(s, e)[None, :])] = -np.inf
        _take_smallest(held, best_i, np.negative(S, out=S), np.arange(s, e))
    return np.negative(held, out=held), best_i


def _refine(X, scale, rows, best_v, best_i, n_neighbors, q, gamma, floor, jit=None):
    """Exact float64 distances of the candidates, sorted; and which rows are certified.

    Unfilled candidates (score ``−inf``: fewer other points than candidates) are at distance
    ``inf``; a row with one has no point outside its candidates, hence is certified. Rows are
    refined in chunks on one worker per core. With the compiled kernels, when ``rows`` are all the
    points, in the breadth-first order of the candidate graph (:func:`_neighbors_jit.locality_order`):
    consecutive rows then share most of their candidates, which stay in cache for the gathers; each
    row's values do not depend on the order.
    """
    from isotropy._kernels.silhouette import _run_tasks

    dist = np.empty((rows.size, n_neighbors), dtype=np.float64)
    ind = np.empty((rows.size, n_neighbors), dtype=np.intp)
    ok = np.empty(rows.size, dtype=bool)
    step = min(1024, max(256, -(-rows.size // 8)))  # one task (no threads) for a few rows
    order = jit.locality_order(best_i) if jit is not None and rows.size == X.shape[0] else None

    def chunk(s, state):
        e = min(rows.size, s + step)
        at = slice(s, e) if order is None else order[s:e]
        dist[at], ind[at], ok[at] = _refine_chunk(X, scale, rows[at], best_v[at], best_i[at], n_neighbors, q, gamma,
                                                  floor, jit)

    _run_tasks(chunk, [(s,) for s in range(0, rows.size, step)], max_workers=1 if rows.size <= _ONE_WORKER else None)
    return dist, ind, ok


def _refine_chunk(X, scale, rows, best_v, best_i, k, q, gamma, floor, jit=None):
    """:func:`_refine` for a few rows.

    The exact distances of the ``k`` best candidates by score bound the ``k``-th exact distance
    (``U``, inflated by its float64 rounding); a further candidate is recomputed only when the
    rounding bound of its score (the one of :func:`_certified`) does not put it beyond ``U``; the
    others are not among the ``k`` nearest, exactly as a non-candidate the certificate excludes.
    With the compiled loops, one loop per row does all of it (``_neighbors_jit.refine_rows``).
    """
    n_rows, m = best_v.shape
    d = X.shape[1]
    order = np.argsort(best_v, axis=1)[:, ::-1]  # best score first
    rounding = 1 + (d + 4) * float(np.finfo(np.float64).eps)  # the float64 rounding of an exact distance
    if jit is not None and m <= _INSERTION:
        dist = np.empty((n_rows, k), dtype=np.float64)
        ind = np.empty((n_rows, k), dtype=best_i.dtype)
        jit.refine_rows(X, _NO_SCALE if scale is None else scale, np.ascontiguousarray(rows, dtype=np.intp), best_v,
                        best_i, order, k, q, gamma, floor, rounding, dist, ind)
    else:
        v = np.take_along_axis(best_v, order, axis=1).astype(np.float64)
        cand = np.take_along_axis(best_i, order, axis=1)
        filled = ~np.isneginf(v)
        sq = np.full((n_rows, m), np.inf)
        sq[:, :k] = _exact_sq_distances(X, scale, rows, np.ascontiguousarray(cand[:, :k]), jit)
        sq[:, :k][~filled[:, :k]] = np.inf
        if m > k:
            bound = sq[:, :k].max(axis=1) * rounding + floor
            with np.errstate(invalid="ignore", over="ignore"):
                low = -2.0 * v[:, k:] - 2.0 * gamma * (q[rows, None] + q[cand[:, k:]]) - floor
                need = filled[:, k:] & ~(low > bound[:, None])
            pr, pc = np.nonzero(need)
            if pr.size:
                sq[pr, pc + k] = _exact_pair_distances(X, scale, rows[pr], cand[pr, pc + k], jit)
        dist, ind = _sort_candidates(sq, cand, k, jit)
    tau = best_v.min(axis=1)
    ok = np.isneginf(tau) | _certified(tau, dist[:, -1], q[rows], gamma, floor, d, float(q.max()))
    return dist, ind, ok


def _exact_pair_distances(X: np.ndarray, scale, rows: np.ndarray, cols: np.ndarray, jit=None) -> np.ndarray:
    """``‖y_rows[t] − y_cols[t]‖²`` in float64 by direct differences (the arithmetic of :func:`_exact_sq_distances`)."""
    return _exact_sq_distances(X, scale, rows, cols[:, None], jit)[:, 0]


def _exact_selection(X, scale, centre, q, rows, best_v, best_i, n_neighbors, dtype, cols, jit=None, exact=False):
    """Stages 2 and 3 of :func:`exact_knn` for ``rows`` searched among the points ``cols[0]:cols[1]``.

    ``exact`` (:attr:`_Operands.exact`): the scores are exact, ``s_ij = −‖x_i − x_j‖²/2``, so no rounding bound
    is needed (``γ = 0``) and every row is certified without stage 3: its candidates are its best ``m`` by
    (score, index), which is (distance, index), hence hold its first ``k`` by (distance, index), ties included;
    the candidates tied with the ``k``-th exact distance are all recomputed (:func:`_refine_chunk`) and sorted
    by index. Integer rows whose distances tie everywhere (one-hot, 0/1 lattice) thus skip the float64 fallbacks,
    which the float32 rounding bound sent every such row to.
    """
    d = X.shape[1]
    if exact:
        return _refine(X, scale, rows, best_v, best_i, n_neighbors, q, 0.0, 0.0, jit)[:2]
    dist, ind, ok = _refine(X, scale, rows, best_v, best_i, n_neighbors, q, _error_factor(dtype, d),
                            4.0 * (d + 2) * float(np.finfo(dtype).tiny), jit)
    failed = np.flatnonzero(~ok)
    # a row whose m candidates all hold one score has at least m points tied there, repeated rows or one-hot rows as
    # a rule: float64 scores tie there too and cannot certify it, so it goes to stage 3b at once (only the time is at
    # stake: 3b is exact for any row)
    tied = failed[best_v[failed].min(axis=1) == best_v[failed].max(axis=1)] if failed.size else failed
    failed = np.setdiff1d(failed, tied, assume_unique=True)
    if failed.size:  # stage 3a: float64 scores for the rows float32 could not certify
        v, i = _float64_candidates(X, scale, centre, q, rows[failed], best_v.shape[1], cols)
        d64, i64, ok64 = _refine(X, scale, rows[failed], v, i, n_neighbors, q, _error_factor(np.float64, d),
                                 4.0 * (d + 2) * float(np.finfo(np.float64).tiny), jit)
        dist[failed], ind[failed] = d64, i64
        failed = failed[~ok64]
    failed = np.union1d(failed, tied)
    if failed.size:  # stage 3b: differences to every point
        dist[failed], ind[failed] = _exact_rows(X, scale, rows[failed], n_neighbors, cols, jit)
    return dist, ind


def exact_knn(X: np.ndarray, scale, n_neighbors: int, *, block: int | None = None, caller: str = "kneighbors",
              search: tuple[int, int] | None = None, distinct: bool = False):
    """Squared distances (float64, sorted) and indices of the ``n_neighbors`` nearest other points.

    The metric is the euclidean distance between the rows ``y_i = X[i]·scale[i]`` (see
    :func:`_prepare`). Three stages, each exact where the one before cannot prove it is:

    1. scores ``s̃_ij ≈ −‖c_i − c_j‖²/2`` of the centred rows ``c`` (centre: :func:`_centre`) as
       BLAS products of float32 blocks (float64 when float32 cannot hold them), over the blocks on
       and above the diagonal only, each offered to its rows and its columns; every row keeps its
       ``m = n_neighbors + max(8, n_neighbors // 8)`` best (:class:`_Best`: the same set whatever
       order the worker threads finish the blocks in); with at least ``_ORDERED`` candidates
       (float32 points, on either loops), the blocks hold the points grouped by :func:`_cell_order`, so that
       the thresholds rise sooner (the same neighbours: among equal scores the set may differ, and a row
       whose ``k``-th distance such a tie could reach is not certified and goes to the stages below);
    2. their squared distances ``Σ (y_i − y_j)²`` in float64 from the differences, sorted by
       (distance, index);
    3. a certificate per row (:func:`_certified`, from the rounding bound of stage 1): a row
       whose ``k``-th exact distance is not provably below every non-candidate's is searched again
       with float64 scores, and if still not certified, by float64 differences to every point.
       Integer rows of moderate norm (:attr:`_Operands.exact`) have exact scores and need no
       certificate: every row is final after stage 2 (:func:`_exact_selection`).

    With numba installed, large searches run the selection and the recomputation in compiled loops
    (:func:`compiled_kernels`): the same candidates, and distances equal up to the order of their
    float64 sums. ``search``: ``(n_samples, n_neighbors)`` of the whole search this one is part of
    (a dask tile's, :mod:`isotropy.distributed._neighbors`), by which the loops are chosen instead
    of this search's own: every tile then runs the loops the in-memory search of the same data runs,
    and a worker loads numba once for all its tiles.

    Memory: per worker thread a ``512 × block`` score buffer and mask (``1024 × block`` on the numpy
    loops; with the compiled loops, a ``block``-byte mask and two buffers of ``max(2¹⁵, block)`` found
    entries instead of the mask), a left operand panel of as many rows and ``_COLUMN_PANELS`` right
    ones of ``block`` rows (built from ``X``, :class:`_Operands`); the ``n × 1.5m`` candidate keys;
    no copy of ``X`` (but of its distinct rows when rows repeat, below).

    Rows repeated more than ``m − n_neighbors`` times (padding rows, a constant row, one-hot rows) tie
    at every threshold and defeat the certificate of every row they reach. Then the search runs on the
    distinct points (a copy of them) and each row's neighbours are read from its distinct point's
    (:func:`_search_distinct`): the same neighbours and the same bits, for a search of fewer points.
    ``distinct``: the caller knows no two rows are equal (the dimension metrics search their distinct
    points), so the rows are not looked at for repeats.
    """
    n = X.shape[0]
    if n > 2 and not distinct:
        repeated = maybe_repeated(X, scale)
        if repeated.any():
            first, inverse = distinct_rows(X, scale, repeated)
            sizes = np.bincount(inverse)
            if sizes.max() > _n_candidates(n_neighbors, n) - n_neighbors:
                return _search_distinct(X, scale, n_neighbors, first, inverse, sizes, block=block, caller=caller,
                                        search=search or (n, n_neighbors))
    return _search_points(X, scale, n_neighbors, block=block, caller=caller, search=search)


def _search_points(X: np.ndarray, scale, n_neighbors: int, *, block, caller: str, search):
    """:func:`exact_knn` without the look for repeated rows."""
    n = X.shape[0]
    jit = _loops(X, n_neighbors, search)
    if jit is not None and not X.flags.c_contiguous:
        # the compiled sums are vectorised for rows in contiguous memory (reassociated): a Fortran-ordered or strided
        # X gave other last bits than the same values in C order, and than the dask tiles (a copy, O(n·d))
        X = np.ascontiguousarray(X)
    m = _n_candidates(n_neighbors, n)
    centre = _centre(X, scale)
    if X.dtype == np.float32 and scale is None:  # a float32 centre: the operands are float32 differences
        centre = centre.astype(np.float32).astype(np.float64)
    b = min(max(block or _BLOCK, m + 1), n)  # a diagonal block holds m others; no block beyond the n points
    ops = _Operands(X, scale, centre, caller)
    ops.jit = jit
    best = _best(n, m, ops.dtype)
    # (not for exact scores: their certificate needs the slots' ties broken by index, not by position in the order)
    if ops.low_centre is not None and ops.dtype == np.float32 and m >= _ORDERED and n >= 2 * b and not ops.exact:
        ops.order = _cell_order(ops, b)
    panels = _panels(0, n, b)
    _candidate_pass(ops, (best, best), _tasks(panels, panels, diagonal=True), b, jit)
    best_v, best_i = best.result(jit, ops.order)
    del best
    return _exact_selection(X, scale, centre, ops.q, np.arange(n), best_v, best_i, n_neighbors, ops.dtype, (0, n),
                            jit, ops.exact)


# Entries (row, candidate) that _search_distinct sorts at a time.
_EXPANSION_ENTRIES = 2**21


def _search_distinct(X, scale, n_neighbors: int, first, inverse, sizes, *, block, caller: str, search):
    """:func:`exact_knn` of ``X`` through its distinct points ``X[first]`` (``inverse``: each row's; ``sizes``:
    each one's rows).

    The distinct points' own nearest (``min(n_neighbors + 1, n_distinct − 1)`` of them) give each point
    ``u`` its list of rows by (distance, index): the rows of ``u`` at distance 0, then the rows of its
    neighbours at theirs, equal distances merged by index (a neighbour's rows all have the index of
    its first row or a larger one, so the first ``n_neighbors + 1`` of the list come from the neighbours
    up to the one where the count reaches ``n_neighbors + 1``, and those tied with it). A row's
    neighbours are its point's first ``n_neighbors + 1`` without the row itself. No point beyond the
    ``n_neighbors + 1`` found reaches a list: the first rows of ``u`` and of those points are
    ``n_neighbors + 2`` rows, and every row of a point not found comes after all of them (at a larger
    distance, or at the same one with a larger first row, as the search breaks ties, and its other
    rows larger still). The distances are those of the distinct points, which equal the rows' bit for bit.
    """
    n, k, n_u = X.shape[0], n_neighbors, first.size
    X_u, scale_u = np.ascontiguousarray(X[first]), None if scale is None else scale[first]
    k_u = min(k + 1, n_u - 1)
    if k_u > 0:
        sq_u, ind_u = _search_points(X_u, scale_u, k_u, block=block, caller=caller, search=search)
    else:  # one distinct point: every neighbour is a repeat
        sq_u, ind_u = np.empty((n_u, 0)), np.empty((n_u, 0), dtype=np.intp)
    del X_u
    members = np.argsort(inverse, kind="stable")  # the rows of each point, ascending
    starts = np.concatenate([[0], np.cumsum(sizes)])
    lists_sq = np.empty((n_u, k + 1))
    lists_ind = np.empty((n_u, k + 1), dtype=np.intp)
    # a point whose rows and whose first k neighbours' rows are one each: its list is itself, then those rows (a
    # later neighbour at the k-th one's distance has its rows at larger indices)
    single = np.zeros(n_u, dtype=bool)
    if k_u >= k:
        single = (sizes == 1) & (sizes[ind_u[:, :k]] == 1).all(axis=1)
        lists_sq[single, 0], lists_ind[single, 0] = 0.0, first[single]
        lists_sq[single, 1:], lists_ind[single, 1:] = sq_u[single, :k], first[ind_u[single, :k]]
    points = np.flatnonzero(~single)
    _expanded(points, sq_u[points], ind_u[points], sizes, members, starts, k, lists_sq, lists_ind)
    del sq_u, ind_u
    rows = np.arange(n)
    own = lists_ind[inverse]  # each row's point's list; the row itself, where in it, goes
    keep = np.argsort(own == rows[:, None], axis=1, kind="stable")[:, :k]
    return np.take_along_axis(lists_sq[inverse], keep, axis=1), np.take_along_axis(own, keep, axis=1)


def _expanded(points, sq, ind, sizes, members, starts, k, lists_sq, lists_ind, *, own: bool = True) -> None:
    """The lists of :func:`_search_distinct` for ``points`` (their neighbours: ``sq``, ``ind``) into ``lists_sq``
    and ``lists_ind``, a few points at a time (``_EXPANSION_ENTRIES`` rows of their slots).

    ``own``: each list starts with the point's own rows at distance 0 and holds ``k + 1`` rows; otherwise
    (:func:`exact_knn_cross`, where ``ind`` are points of the other part and ``sizes``, ``members``,
    ``starts`` describe that part) only the neighbours' rows, ``k`` of them, and a neighbour past the
    points found (``ind >= sizes.size``, distance ``inf``) holds none; a list left short keeps what
    ``lists_sq`` and ``lists_ind`` held (the caller's padding).
    """
    want = k + 1 if own else k
    group = np.concatenate([points[:, None], ind], axis=1) if own else np.minimum(ind, sizes.size - 1)
    dist = np.concatenate([np.zeros((points.size, 1)), sq], axis=1) if own else sq
    cap = np.minimum(sizes[group], want)  # a slot's first rows at most (its rows share one distance)
    if not own:
        cap[ind >= sizes.size] = 0
    counts = np.cumsum(cap, axis=1)
    reach = np.argmax(counts >= want, axis=1)  # the slot where the count reaches want
    bound = np.where(counts[:, -1] >= want, dist[np.arange(points.size), reach], np.inf)
    take = np.where(dist <= bound[:, None], cap, 0)  # the slots up to it and those tied with it
    ends = np.cumsum(take.sum(axis=1))
    start = 0
    while start < points.size:  # points whose entries fit in _EXPANSION_ENTRIES (at least one)
        stop = max(start + 1, int(np.searchsorted(ends, (ends[start - 1] if start else 0) + _EXPANSION_ENTRIES)))
        part = slice(start, stop)
        counts = take[part].ravel()
        slot_point = np.repeat(np.arange(start, stop), take.shape[1])
        owner = np.repeat(slot_point, counts)
        at = np.arange(owner.size) - np.repeat(np.cumsum(counts) - counts, counts)  # a row's place in its slot
        row = members[starts[np.repeat(group[part].ravel(), counts)] + at]
        value = np.repeat(dist[part].ravel(), counts)
        order = np.lexsort((row, value, owner))
        owner, row, value = owner[order], row[order], value[order]
        rank = np.arange(owner.size) - np.searchsorted(owner, owner)  # place in its point's list
        first_k = rank < want
        lists_sq[points[owner[first_k]], rank[first_k]] = value[first_k]
        lists_ind[points[owner[first_k]], rank[first_k]] = row[first_k]
        start = stop


def exact_knn_cross(X: np.ndarray, scale, n_p: int, n_neighbors: int, *, caller: str = "kneighbors",
                    search: tuple[int, int] | None = None):
    """:func:`exact_knn` between two parts of ``X``: rows ``:n_p`` among rows ``n_p:``, and back.

    One product of the two parts (the off-diagonal block of :func:`exact_knn`), offered to the
    rows and, transposed, to the columns, then the same exact stages 2 and 3. Returns
    ``(sq_p, ind_p), (sq_q, ind_q)`` with indices into ``X``; a part with fewer points than
    ``n_neighbors`` pads with ``inf``. The dask search runs it on each tile, with the loops chosen for
    its ``search`` (as in :func:`exact_knn`). A part with rows repeated more than ``m − n_neighbors``
    times is searched through the distinct points of both parts (as :func:`exact_knn` does).
    """
    n = X.shape[0]
    parts = []
    for rows in (slice(0, n_p), slice(n_p, n)):
        part, part_scale = X[rows], None if scale is None else scale[rows]
        repeated = maybe_repeated(part, part_scale) if part.shape[0] > 1 else np.zeros(part.shape[0], dtype=bool)
        first, inverse = (distinct_rows(part, part_scale, repeated) if repeated.any()
                          else (np.arange(part.shape[0]), np.arange(part.shape[0])))
        parts.append((first, inverse, np.bincount(inverse, minlength=first.size)))
    if max(int(sizes.max(initial=1)) for _, _, sizes in parts) > _n_candidates(n_neighbors, n) - n_neighbors:
        return _cross_distinct(X, scale, n_p, n_neighbors, parts, caller=caller, search=search or (n, n_neighbors))
    return _cross_points(X, scale, n_p, n_neighbors, caller=caller, search=search)


def _cross_distinct(X, scale, n_p: int, n_neighbors: int, parts, *, caller: str, search):
    """:func:`exact_knn_cross` through the distinct points of each part (``parts``: ``(first, inverse, sizes)`` of
    rows ``:n_p`` and of rows ``n_p:``): the distinct points of one part among those of the other, each point's
    list of rows of the other part by (distance, index) read as in :func:`_search_distinct` (no rows of its own;
    the ``n_neighbors`` points found suffice: their first rows are ``n_neighbors`` rows before every row of a point
    not found), each row given its point's list."""
    n, k = X.shape[0], n_neighbors
    (first_p, inverse_p, _), (first_q, inverse_q, _) = parts
    picked = np.concatenate([first_p, n_p + first_q])
    n_pu = first_p.size
    (sq_p, ind_p), (sq_q, ind_q) = _cross_points(np.ascontiguousarray(X[picked]), None if scale is None else
                                                 scale[picked], n_pu, k, caller=caller, search=search)
    out = []
    for (sq, ind), inverse, (_, inverse_o, sizes_o), offset, shift in (
            ((sq_p, ind_p), inverse_p, parts[1], n_p, n_pu), ((sq_q, ind_q), inverse_q, parts[0], 0, 0)):
        members = np.argsort(inverse_o, kind="stable") + offset  # the other part's rows of each point, ascending
        starts = np.concatenate([[0], np.cumsum(sizes_o)])
        lists_sq = np.full((sq.shape[0], k), np.inf)
        lists_ind = np.full((sq.shape[0], k), n, dtype=np.intp)
        _expanded(np.arange(sq.shape[0]), sq, ind - shift, sizes_o, members, starts, k, lists_sq, lists_ind, own=False)
        out.append((lists_sq[inverse], lists_ind[inverse]))
    return out[0], out[1]


def _cross_points(X: np.ndarray, scale, n_p: int, n_neighbors: int, *, caller: str, search):
    """:func:`exact_knn_cross` without the look for repeated rows."""
    n = X.shape[0]
    n_q = n - n_p
    jit = _loops(X, n_neighbors, search)
    if jit is not None and not X.flags.c_contiguous:
        # the compiled sums are vectorised for rows in contiguous memory (reassociated): a Fortran-ordered or strided
        # X gave other last bits than the same values in C order, and than the dask tiles (a copy, O(n·d))
        X = np.ascontiguousarray(X)
    centre = _centre(X, scale)
    ops = _Operands(X, scale, centre, caller)
    ops.jit = jit
    sides = [_best(size, min(_n_candidates(n_neighbors, n), other), ops.dtype, offset)
             for size, other, offset in ((n_p, n_q, 0), (n_q, n_p, n_p))]
    b = _BLOCK
    _candidate_pass(ops, sides, _tasks(_panels(0, n_p, b), _panels(n_p, n, b), diagonal=False), b, jit)
    out = []
    for best, cols in zip(sides, ((n_p, n), (0, n_p))):
        (best_v, best_i), m = best.result(jit), best.m
        rows = np.arange(best_v.shape[0]) + best.offset
        k = min(n_neighbors, m)
        sq, ind = _exact_selection(X, scale, centre, ops.q, rows, best_v, best_i, k, ops.dtype, cols, jit, ops.exact)
        if k < n_neighbors:
            sq = np.pad(sq, ((0, 0), (0, n_neighbors - k)), constant_values=np.inf)
            ind = np.pad(ind, ((0, 0), (0, n_neighbors - k)), constant_values=n)
        out.append((sq, ind))
    return out[0], out[1]
