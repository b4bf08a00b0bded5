"""Expected running time of the O(n²) metrics, from n, d and this machine's measured speed.

The pairwise metrics (silhouette, Dunn, uniformity, TwoNN, MLE) form the blocks of the n x n distance
matrix: one product of d-long rows per pair, plus a few element-wise passes per pair (clip,
square root, per-cluster sums or neighbour selection). Their time is therefore close to

    t ≈ n² · (α_metric · d / F + β_metric / E)

with F the float32 product speed (flop/s) and E the element-wise speed (elements/s) of this
machine, both measured once per process by a short calibration (512 x 256 x 512 products on one BLAS
thread, times the cores, and square roots over 512² elements on one thread, times the cores over the 2 of the machine
the constants were fitted on: the median rate of five windows of 15 and 8 ms), and α, β per-metric constants fitted on this code
(``_PAIR_COST``). The exact neighbour search of TwoNN and MLE also grows with its ``k`` neighbours:
it recomputes the ``n·k`` neighbour distances exactly (``n·k·d`` memory-bound operations), each
row's candidates are replaced about ``k·ln(n/k)`` times as the blocks go by (the expected number of
updates of a running top ``k`` over ``n`` values in random order), and at large ``k`` the row's
slots of ``k`` candidates are passed over again as they fill (``n·k²``), so for it

    t ≈ n² · (α · d / F + β / E) + (γ · d + δ · ln(1 + n/k) + ε · k) · n · k / E

with one set of constants per loop (``_SEARCH_COST``: numpy, compiled). On the machine they were fitted on, the
estimates fall within 1.5× of the measured times at widths and sizes the fit did not see
(``benchmarks/bench_cost_notes.py``, docs/benchmarks.md); on other machines they were not measured.
Enough to choose between waiting, ``--sample-size`` and the distributed path.
"""

from __future__ import annotations

import functools
import math
import time

import numpy as np

from isotropy._kernels.dimension import DEFAULT_MLE_NEIGHBOURS
from isotropy._kernels.silhouette import _cores
from isotropy._utils.threads import one_blas_thread

__all__ = ["estimate_seconds", "estimate_tiled_seconds", "format_duration", "machine_speed", "measured_speed"]

# (α, β) from ``benchmarks/bench_cost_notes.py --fit`` (float32 data near a 10-dimensional subspace, 10 clusters,
# d = 50, 128 and 384, n where the estimate is 15 s, 2 cores; docs/benchmarks.md gives the run): α·d/F is the
# product per pair, β/E the element-wise work per pair (the silhouette and the neighbour search form the
# blocks on and above the diagonal only; the Dunn index and the uniformity every block, the former scanning
# each for extremes, the latter taking an exponential per pair).
_PAIR_COST = {"silhouette_score": (0.83, 0.735), "dunn_index": (2.95, 9.38), "uniformity": (1.94, 14.2)}
# (α, β, γ, δ, ε) of the exact neighbour search per loop (numpy; compiled: isotropy._kernels.neighbors.compiled_kernels),
# from ``benchmarks/bench_cost_notes.py --neighbours-only --n-neighbors 5,20,100,1000,3000 --fit`` (d = 50 and 384,
# k = 2 for TwoNN alone and 5 to 3000 for the search TwoNN and MLE share; docs/benchmarks.md gives the run; refitted
# after the numpy loops' block changes of eb4a724 and f1cdf9b, with machine_speed in the units below).
_SEARCH_COST = {"numpy": (0.909, 1.05, 1.89, 144.0, 0.104), "compiled": (0.909, 0.451, 0.335, 75.9, 0.0417)}
# ρ of estimate_tiled_seconds: the dask path's wall time over the model of its tiles' work, per metric (the neighbour
# searches share one), from ``benchmarks/bench_cost_notes.py --dask 2 --fit`` (2 local workers, d = 384 and 128;
# docs/benchmarks.md gives the run). Beyond the scheduling, transfers and reductions, it holds what sets a metric's
# tiles apart from its in-memory kernel: a silhouette tile's per-cluster sums for both blocks' rows, a Dunn or
# uniformity tile, which ran faster than the in-memory constants give.
_TILED_OVERHEAD = {"silhouette_score": 1.44, "dunn_index": 0.639, "uniformity": 0.506}
# (ρ_pairs, ρ_rows) of a neighbour search on the dask path: the measured wall time over its tiles' pair term and over
# the per-row share the tiles repeat, fitted together (``benchmarks/bench_cost_notes.py --dask 2 --dims 384,128
# --n-neighbors 20,100 --fit``, docs/benchmarks.md gives the run). In that run one ρ for both (1.13, fitted on
# 2026-12-05) read TwoNN alone (k = 2, its time nearly all pairs) at 0.71 and 0.83 of its time and the search at
# k = 100 at 1.05 and 1.16; the two factors read every case at 0.91 to 1.09. The tiles' pairs take about 1.5 times
# the in-memory kernel's (a tile on one thread, 8192 rows, against panels of the whole search on every core), and the
# repeated per-row share less than B whole copies of the in-memory one.
_TILED_SEARCH = (1.49, 0.819)
# The same on dask's threaded scheduler in this process (a folder of shards without --workers: each tile's kernel on
# the threads of this process, no transfers), from ``bench_cost_notes.py --dask 0`` with the same arguments: the
# worker processes' factors read it at 1.10-1.40 of its time.
_TILED_SEARCH_IN_PROCESS = (1.26, 0.533)
# Seconds of one window of the product calibration (the element-wise one: half), five windows each: a window
# spans several scheduler time slices.
_WINDOW_SECONDS = 0.015
# The neighbours each searches for by default (the search TwoNN and MLE share in a table is MLE's).
_NEIGHBOURS = {"twonn_dimension": 2, "mle_dimension": DEFAULT_MLE_NEIGHBOURS}


# The constants above were fitted (_SEARCH_COST: its first fit) with an earlier calibration (the median of 7 single 512 x 256 x 512 products on
# all BLAS threads, each followed by one square root pass): :func:`machine_speed` converts this calibration's
# readings to its units by the ratios of the two measured side by side on an idle machine
# (``benchmarks/bench_calibration.py``; docs/benchmarks.md gives the run), so the fitted constants still hold.
_TO_FITTED_UNITS = (0.88, 0.62)
# The cores of the machine every constant above was fitted on. The element-wise rate is measured on one thread while
# the kernels run their element-wise work on one worker thread per core, as their products: the fitted β, γ, δ, ε
# hold that machine's cores, so the rate is scaled by the cores here over these (the product rate is measured per
# core and times the cores already). Without it, the element terms stayed those of 2 cores on any machine, and the
# dask path's estimate, which spreads the work of one thread per core over the tiles' threads, grew with the cores.
_FITTED_CORES = 2


@functools.lru_cache(maxsize=1)
def machine_speed() -> tuple[float, float]:
    """(float32 product flop/s, element-wise float32 elements/s) in the units of the fitted constants: those of
    :func:`measured_speed` times ``_TO_FITTED_UNITS``, the element-wise rate for this machine's cores (``_FITTED_CORES``);
    measured once per process."""
    flops, elements = measured_speed()
    return flops * _TO_FITTED_UNITS[0], elements * _TO_FITTED_UNITS[1] * _cores() / _FITTED_CORES


def calibration_operands():
    """``(A, B, C)``: the float32 512 x 256 and 256 x 512 operands of the calibration and its 512 x 512 output."""
    rng = np.random.default_rng(0)
    size, width = 512, 256
    A = rng.standard_normal((size, width), dtype=np.float32)
    B = rng.standard_normal((width, size), dtype=np.float32)
    return A, B, np.empty((size, size), dtype=np.float32)


def measured_speed() -> tuple[float, float]:
    """(float32 product flop/s, element-wise float32 elements/s) of a short calibration (about 120 ms), uncached."""
    A, B, C = calibration_operands()
    width, pairs = A.shape[1], C.size
    # One BLAS thread, times the cores, as the kernels run (a worker thread per core, each with single-threaded
    # BLAS): a product on all BLAS threads waits for the slowest, and on a shared machine, with another process on
    # one core, read 3x to 30x slower from one call to the next. Each call takes well under a millisecond, less
    # than the scheduler's time slice, so a call either runs alone or waits a whole slice, and a median of a few
    # calls read either (the estimates moved 10x between two processes): the throughput over calls that span
    # several slices is the share of the machine the metric itself will get (_rate).
    with one_blas_thread():
        np.matmul(A, B, out=C)  # untimed: the first call after a change of threads is slower
        per_core = _rate(lambda: np.matmul(A, B, out=C), _WINDOW_SECONDS)
    flops = 2.0 * pairs * width * per_core * _cores()
    elements = pairs * _rate(lambda: np.sqrt(np.abs(C, out=C), out=C), _WINDOW_SECONDS / 2)
    return flops, elements


def _rate(call, seconds: float, windows: int = 5) -> float:
    """Calls of ``call`` per second: the median over ``windows`` windows of about ``seconds`` each (at least 2 calls
    per window). A window spans several scheduler slices (the machine's share); the median leaves out one
    window that a passing job slowed."""
    rates = []
    for _ in range(windows):
        done, start = 0, time.perf_counter()
        while True:
            call()
            done += 1
            elapsed = time.perf_counter() - start
            if done >= 2 and elapsed >= seconds:
                rates.append(done / max(elapsed, 1e-9))
                break
    return float(np.median(rates))


def estimate_seconds(name: str, n_samples: int, n_features: int, *, n_neighbors: int | None = None,
                     loops: str | None = None) -> float:
    """Expected seconds of the O(n²) metric ``name`` (a key of ``_PAIR_COST``) on ``n_samples`` x ``n_features`` data here.

    ``n_neighbors``: the neighbours the search of ``twonn_dimension`` or ``mle_dimension`` takes (default: the
    metric's own, ``_NEIGHBOURS``); ignored by the other metrics. ``loops``: ``"numpy"`` or ``"compiled"`` prices
    the search on those loops; ``None``, on the loops it will run (:func:`isotropy._kernels.neighbors.uses_compiled_kernels`).
    """
    if loops not in (None, *_SEARCH_COST):
        raise ValueError(f"loops must be None, 'numpy' or 'compiled'. Got {loops!r} instead.")
    pairs = float(n_samples) * float(n_samples)
    if name not in _NEIGHBOURS:
        flops, elements = machine_speed()
        alpha, beta = _PAIR_COST[name]
        return pairs * (alpha * n_features / flops + beta / elements)
    k = int(n_neighbors or _NEIGHBOURS[name])
    loops = _loops_of(n_samples, n_features, k, loops)
    return _search_seconds(pairs, float(n_samples) * k, n_samples, k, n_features, loops)


def _loops_of(n_samples: int, n_features: int, k: int, loops: str | None) -> str:
    """``loops``, or the loops a search of this size runs (:func:`isotropy._kernels.neighbors.uses_compiled_kernels`)."""
    if loops not in (None, *_SEARCH_COST):
        raise ValueError(f"loops must be None, 'numpy' or 'compiled'. Got {loops!r} instead.")
    if loops is not None:
        return loops
    from isotropy._kernels.neighbors import uses_compiled_kernels
    from isotropy._utils.validation import IsotropyValueError

    try:
        return "compiled" if uses_compiled_kernels(n_samples, n_features, k) else "numpy"
    except IsotropyValueError:  # a bad ISOTROPY_JIT: the search itself says so; the note is not the place
        return "numpy"


def _search_seconds(pairs: float, rows: float, others: float, k: int, n_features: int, loops: str) -> float:
    """The neighbour search's model: ``pairs`` products (in the units of ``n²`` for ``n`` points), ``rows`` row-neighbour
    pairs recomputed exactly (``n·k``), each row's candidates replaced about ``ln(1 + others/k)`` times."""
    flops, elements = machine_speed()
    alpha, beta, gamma, delta, epsilon = _SEARCH_COST[loops]
    return (pairs * (alpha * n_features / flops + beta / elements)
            + (gamma * n_features + delta * math.log1p(others / k) + epsilon * k) * rows / elements)


def estimate_tiled_seconds(name: str, n_samples: int, n_features: int, *, tile_rows: int, threads: int,
                           n_neighbors: int | None = None, loops: str | None = None, in_process: bool = False) -> float:
    """Expected seconds of the O(n²) metric ``name`` on the dask path: tiles of ``tile_rows`` rows, ``threads`` at once,
    each on one thread at this machine's speed per core.

    The tiles (I, J >= I) of ``B = ⌈n/b⌉`` row blocks of ``b = tile_rows`` rows form the same ``n²/2`` products as the
    in-memory kernels, so the pair term of :func:`estimate_seconds` stays; a neighbour tile also recomputes
    its own candidates' distances exactly and starts its thresholds from nothing, so each row's share of the search
    (``(γ·d + δ·ln(1 + b/k) + ε·k)·k``) is paid once per tile it is in, ``B`` times instead of once. On
    ``t = threads`` threads where this machine has ``c`` cores:

        t_dask ≈ ρ · t_tiles · c / t

    (both terms of the in-memory model are rates of all ``c`` cores, :func:`machine_speed`: times ``c``, the work of
    one thread; local workers share this machine's cores: ``t`` is at most ``c`` for them, which the caller says), with ``ρ``
    (``_TILED_OVERHEAD``) the measured wall time over that model per metric (scheduling, transfers, reductions, and
    how a metric's tiles differ from its in-memory kernel), fitted by ``benchmarks/bench_cost_notes.py --dask`` on a
    local cluster; for a neighbour search one ``ρ`` on the pair term and one on the per-row share the tiles repeat
    (``_TILED_SEARCH``), fitted together, and with ``in_process`` (dask's threaded scheduler in this process) their
    own (``_TILED_SEARCH_IN_PROCESS``).
    """
    share = _cores() / max(1, int(threads))
    if name not in _NEIGHBOURS:
        return _TILED_OVERHEAD[name] * estimate_seconds(name, n_samples, n_features) * share
    pairs, rows = tiled_search_terms(name, n_samples, n_features, tile_rows=tile_rows, n_neighbors=n_neighbors,
                                     loops=loops)
    rho_pairs, rho_rows = _TILED_SEARCH_IN_PROCESS if in_process else _TILED_SEARCH
    return (rho_pairs * pairs + rho_rows * rows) * share


def tiled_search_terms(name: str, n_samples: int, n_features: int, *, tile_rows: int, n_neighbors: int | None = None,
                       loops: str | None = None) -> tuple[float, float]:
    """The two terms of a neighbour search's tiles at factors 1, in seconds of all this machine's cores: the pair term
    (the in-memory one) and the per-row share the ``B`` row blocks repeat (:func:`estimate_tiled_seconds`, whose
    ``_TILED_SEARCH`` weighs them; ``benchmarks/bench_cost_notes.py --dask --fit`` fits those weights on them)."""
    b = max(1, min(int(tile_rows), int(n_samples)))
    k = int(n_neighbors or _NEIGHBOURS[name])
    blocks = -(-int(n_samples) // b)
    # a tile of b points runs the loops the whole search runs (isotropy.distributed._neighbors._knn_tile)
    loops = _loops_of(n_samples, n_features, k, loops)
    n = float(n_samples)
    return (_search_seconds(n * n, 0.0, b, k, n_features, loops),
            _search_seconds(0.0, n * k * blocks, b, k, n_features, loops))


def format_duration(seconds: float) -> str:
    """'45 s', '12 min', '3.2 h'."""
    if seconds < 90:
        return f"{max(seconds, 0.0):.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
