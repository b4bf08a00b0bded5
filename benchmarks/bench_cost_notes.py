"""Benchmark: the time the O(n²) notes of ``isotropy measure`` announce against the time the metric takes.

``isotropy measure`` prints, before an O(n²) metric starts, the time it expects it to take
(:func:`isotropy._kernels.cost.estimate_seconds`: ``n² · (α·d/F + β/E)``, with this machine's
product and element-wise speeds ``F`` and ``E`` measured once per process, and ``(α, β)`` per
metric, ``β`` per loop for the neighbour search). For each metric the command announces (the
silhouette and the Dunn index on 10 clusters; the uniformity; TwoNN alone and the neighbour search
TwoNN and MLE share in the default table, on the numpy loops and, when numba is installed, on the
compiled ones), at each ``--dims`` and at ``n`` chosen so that the note's estimate is about
``--seconds`` (the notes appear from 10 s), this prints the estimate, the measured time (the
metric's own call, as ``measure`` makes it; the compiled loops loaded beforehand) and their ratio.
Goal: every ratio within 1.5× either way.

``--fit`` also solves, per metric, the ``(α, β)`` that the measured times give (least squares of
the relative errors over all ``--dims``, at least two of them, non-negative), and for the neighbour
search (TwoNN alone, k = 2, and the search TwoNN and MLE share at each ``--n-neighbors``) the
``(α, β, γ, δ, ε)`` of ``n²·(α·d/F + β/E) + (γ·d + δ·ln(1 + n/k) + ε·k)·n·k/E``: one ``α``, its products being
the same BLAS calls on both loops, the rest per loop. Both use the ``F`` and ``E`` of this run: the
constants of ``isotropy/_kernels/cost.py`` come from this command's output.

``--dask N`` prices and times the same metrics on the dask path instead
(:func:`isotropy._kernels.cost.estimate_tiled_seconds`, the note ``isotropy measure`` prints there): a dask array
of 4096-row chunks held by a ``LocalCluster`` of ``N`` worker processes of one thread each (as ``isotropy measure
DIR --workers N`` starts; the package and the compiled loops loaded on the workers before the clock starts; ``--dask
0``: dask's threaded scheduler in this process, as for a folder of shards without ``--workers``), each
metric at the rows per tile it takes by default, ``n`` chosen so that the estimate is about ``--seconds``, the
table's TwoNN and MLE as :func:`~isotropy.metrics.dimension.neighbour_dimensions` (one pass of tiles), on the loops
the search of all ``n`` points runs. With ``--fit``, the ``ρ`` per metric (one for the neighbour searches) that the
measured times give (least squares of the relative errors): ``_TILED_OVERHEAD`` in ``isotropy/_kernels/cost.py``; for the
neighbour searches, together, the ``ρ`` of their pair term and of the per-row share their tiles repeat
(``_TILED_SEARCH``; with ``--dask 0``, ``_TILED_SEARCH_IN_PROCESS``; fit on two ``k`` at least, TwoNN's 2 and one of
``--n-neighbors``, so the two terms can be told apart).

``--repeats R`` times each metric ``R`` times at the same ``n`` (the table then gives the median measured time).
``--json PATH`` also writes the rows (``metric``: the function timed, ``loops``, ``k``, ``d``, ``n``), each with its
estimate, measured seconds (each round's and their median), the ratio measured / estimate of each round, the
median of those (``ratio``; the table prints its inverse, estimate / measured), their interval
(``_common.round_interval``) and the verdict on the goal (:func:`verdict_within`, ``WITHIN``: fixed here before any
run), and what ran (``_common.write_record``); the ``--fit`` constants are not recorded.

Usage::

    nice -n 5 .venv/bin/python benchmarks/bench_cost_notes.py [--dims 384,50,128] [--seconds 15] [--fit]
        [--n-neighbors 5,20,100] [--neighbours-only] [--dask 2] [--repeats 1] [--json PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import statistics
import time
import warnings

import numpy as np
from _common import isotropy_jit, low_rank_data, round_interval, write_record

from isotropy._kernels import cost
from isotropy._kernels.neighbors import _installed
from isotropy.metrics.cluster_indices import dunn_index
from isotropy.metrics.contrastive import uniformity
from isotropy.metrics.dimension import neighbour_dimensions, twonn_dimension
from isotropy.metrics.silhouette import silhouette_score

_CLUSTERS = 10

# Issue 20, item 2: "The O(n²) notes estimate the time they announce within 1.5×": measured / estimate from 1 / 1.5
# to 1.5, each metric at each width.
WITHIN = 1.5


def verdict_within(low: float, high: float, factor: float = WITHIN) -> str:
    """The verdict on a ratio whose goal is ``within factor either way``, from the interval ``[low, high]`` of its
    per-round ratios (:func:`_common.round_interval`): ``"met"`` when all of it lies in ``[1 / factor, factor]``,
    ``"not met"`` when all of it lies outside (below ``1 / factor`` or above ``factor``), else ``"not established"``."""
    if 1 / factor <= low and high <= factor:
        return "met"
    return "not met" if high < 1 / factor or low > factor else "not established"


def _row(fields: dict, estimate: float, rounds_s: list) -> dict:
    """One recorded row: ``fields`` (what identifies it), the estimate, each round's seconds and the verdict."""
    ratios = [t / estimate for t in rounds_s]
    low, high = round_interval(ratios)
    measured = statistics.median(rounds_s)
    return {**fields, "estimate_s": estimate, "measured_s": measured, "rounds_s": list(rounds_s),
            "ratio": statistics.median(ratios), "rounds": ratios, "ratio_low": low, "ratio_high": high,
            "estimate_over_measured": estimate / measured, "goal_within": WITHIN,
            "verdict": verdict_within(low, high, WITHIN)}


def _overall(rows) -> str:
    """Every row's verdict together: ``"met"`` when all are, ``"not met"`` when one is not, else not established."""
    verdicts = {row["verdict"] for row in rows}
    return "not met" if "not met" in verdicts else "met" if verdicts == {"met"} else "not established"


def _write(args, argv, rows, **what):
    """The ``--json`` record: the options, this run's machine speeds (``what``), the rows and their overall verdict."""
    write_record(args.json, {
        "dims": [int(v) for v in args.dims.split(",")], "seconds": args.seconds,
        "n_neighbors": [int(v) for v in args.n_neighbors.split(",")], "neighbours_only": args.neighbours_only,
        "repeats": args.repeats, "dask": args.dask, "goal_within": WITHIN, **what,
        "statistic": "ratio: measured / estimate, the median of the rounds' (the table prints estimate / measured "
                     "of the median time); ratio_low and ratio_high: the least and greatest of the rounds', their "
                     "quartiles from four rounds on; verdict: verdict_within(ratio_low, ratio_high, goal_within)",
        "verdict": _overall(rows), "rows": rows}, argv=None if argv is None else [__file__, *argv])


def _cases(compiled: bool, ks, neighbours_only: bool):
    """``(label, estimate name, jit, k, call(X, labels))`` for each note ``measure`` prints (``k``: the search's neighbours)."""
    cases = [] if neighbours_only else [
        ("silhouette_score", "silhouette_score", None, None, lambda X, y: silhouette_score(X, y)),
        ("dunn_index", "dunn_index", None, None, lambda X, y: dunn_index(X, y)),
        ("uniformity", "uniformity", None, None, lambda X, y: uniformity(X))]
    for jit in ("0", "1") if compiled else ("0",):
        loop = "compiled" if jit == "1" else "numpy"
        cases.append((f"twonn_dimension ({loop})", "twonn_dimension", jit, 2, lambda X, y: twonn_dimension(X)))
        cases += [(f"twonn + mle search, k = {k} ({loop})", "mle_dimension", jit, k,
                   lambda X, y, k=k: neighbour_dimensions(X, n_neighbors=k)) for k in ks]
    return cases


def _loops(jit):
    """``ISOTROPY_JIT`` set to ``jit`` within the block; left as it is for ``None`` (the metrics that do not read it)."""
    return contextlib.nullcontext() if jit is None else isotropy_jit(jit)


def _size(name, d, seconds, jit, k):
    """The ``n`` at which the estimate for ``name`` (``k`` neighbours) is ``seconds`` (rounded to a thousand)."""
    n = 1000
    with _loops(jit):
        for _ in range(8):  # n² dominates; the neighbour search's n·k·d term makes one step not enough
            n = max(1000, n * math.sqrt(seconds / cost.estimate_seconds(name, int(n), d, n_neighbors=k)))
    return int(round(n, -3))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", default="384,50,128", help="comma-separated n_features")
    parser.add_argument("--seconds", type=float, default=15.0, help="the estimate each run is sized for")
    parser.add_argument("--fit", action="store_true", help="also solve (α, β) per metric from the measured times")
    parser.add_argument("--n-neighbors", default="20", help="comma-separated k of the shared TwoNN + MLE search")
    parser.add_argument("--neighbours-only", action="store_true", help="only the neighbour searches")
    parser.add_argument("--dask", type=int, metavar="N", default=None,
                        help="the dask path on a LocalCluster of N one-thread workers instead (0: dask's threaded "
                             "scheduler in this process)")
    parser.add_argument("--repeats", type=int, default=1, help="times each metric runs at its n (the median is shown)")
    parser.add_argument("--json", metavar="PATH",
                        help="also write the rows, each goal's verdict and what ran as JSON to PATH")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1. Got {args.repeats} instead.")
    if not args.seconds > 0:
        parser.error(f"--seconds must be positive. Got {args.seconds} instead.")
    if args.dask is not None:
        if args.dask < 0:
            parser.error(f"--dask must be 0 (dask's threaded scheduler) or a number of workers. Got {args.dask} "
                         f"instead.")
        return _dask_main(args, argv)
    dims = [int(v) for v in args.dims.split(",")]
    if args.fit and len(set(dims)) < 2:
        parser.error(f"--fit needs at least two different --dims to separate α from β. Got {args.dims!r} instead.")
    compiled = _installed("numba")
    if compiled:  # loaded before the timings (a note's run pays it once, under 1 s of the >= 10 s)
        with isotropy_jit("1"):
            twonn_dimension(low_rank_data(200, 8))
    flops, elements = cost.machine_speed()
    print(f"machine speed of this run: F = {flops:.3g} flop/s (float32 products), E = {elements:.3g} elements/s",
          flush=True)
    if args.repeats > 1:
        print(f"measured: the median of {args.repeats} runs at the same n", flush=True)
    print("| metric | d | n | estimate (s) | measured (s) | estimate / measured (goal 0.67-1.5) |", flush=True)
    print("|---|---|---|---|---|---|", flush=True)
    measured, records = {}, []
    ks = [int(v) for v in args.n_neighbors.split(",")]
    for label, name, jit, k, call in _cases(compiled, ks, args.neighbours_only):
        for d in dims:
            n = _size(name, d, args.seconds, jit, k)
            X = low_rank_data(n, d)
            labels = np.random.default_rng(1).integers(0, _CLUSTERS, n)
            rounds = []
            with _loops(jit):
                estimate = cost.estimate_seconds(name, n, d, n_neighbors=k)
                for _ in range(args.repeats):
                    start = time.perf_counter()
                    call(X, labels)
                    rounds.append(time.perf_counter() - start)
            seconds = statistics.median(rounds)
            measured.setdefault(name, []).append((n, d, jit, k, seconds))
            loops = None if jit is None else "compiled" if jit == "1" else "numpy"
            records.append(_row({"case": label, "metric": _timed_function(label), "estimate_name": name,
                                 "loops": loops, "k": k, "d": d, "n": n}, estimate, rounds))
            print(f"| {label} | {d} | {n:,} | {estimate:.1f} | {seconds:.1f} | {estimate / seconds:.2f} |", flush=True)
            del X
    if args.json:
        _write(args, argv, records, mode="in memory", compiled=compiled, flops=flops, elements=elements)
    if args.fit:
        from scipy.optimize import nnls

        search = [row for name in cost._NEIGHBOURS for row in measured.pop(name, [])]
        if measured:
            print("\n(α, β) of t = n²·(α·d/F + β/E), least squares of the relative errors over the dims, with this "
                  "run's F and E:", flush=True)
        for name, rows in measured.items():
            loops = sorted({jit for _, _, jit, _, _ in rows}, key=str)
            A = np.zeros((len(rows), 1 + len(loops)))
            for r, (n, d, jit, _, seconds) in enumerate(rows):
                A[r, 0] = n * n * d / flops / seconds
                A[r, 1 + loops.index(jit)] = n * n / elements / seconds
            theta, _ = nnls(A, np.ones(len(rows)))
            betas = ", ".join(f"β = {b:.3g}" + ("" if jit is None else f" ({'compiled' if jit == '1' else 'numpy'})")
                              for jit, b in zip(loops, theta[1:]))
            print(f"- {name}: α = {theta[0]:.3g}, {betas}", flush=True)
        if search:
            _fit_search(search, flops, elements)
    return records


def _timed_function(label: str) -> str:
    """The function a case's label times: the table's search is ``neighbour_dimensions`` (TwoNN and MLE at once)."""
    return "neighbour_dimensions" if label.startswith("twonn + mle") else label.split(" ")[0]


def _fit_search(rows, flops, elements):
    """(α, β, γ, δ, ε) of the neighbour search, ``t = n²·(α·d/F + β/E) + (γ·d + δ·ln(1 + n/k) + ε·k)·n·k/E``: one α,
    the rest per loop."""
    from scipy.optimize import nnls

    loops = sorted({jit for _, _, jit, _, _ in rows}, key=str)
    A = np.zeros((len(rows), 1 + 4 * len(loops)))
    for r, (n, d, jit, k, seconds) in enumerate(rows):
        at = 1 + 4 * loops.index(jit)
        A[r, 0] = n * n * d / flops / seconds
        A[r, at:at + 4] = np.array([n * n, n * k * d, n * k * math.log1p(n / k), n * k * k]) / elements / seconds
    theta, _ = nnls(A, np.ones(len(rows)))
    print("\n(α, β, γ, δ, ε) of the neighbour search, t = n²·(α·d/F + β/E) + (γ·d + δ·ln(1 + n/k) + ε·k)·n·k/E (one α; "
          "the rest per loop), from every TwoNN and MLE row above; _SEARCH_COST in isotropy/_kernels/cost.py:",
          flush=True)
    for i, jit in enumerate(loops):
        loop = "compiled" if jit == "1" else "numpy"
        beta, gamma, delta, epsilon = theta[1 + 4 * i: 5 + 4 * i]
        print(f"- {loop}: ({theta[0]:.3g}, {beta:.3g}, {gamma:.3g}, {delta:.3g}, {epsilon:.3g})", flush=True)
    fitted = A @ theta
    print(f"fitted / measured over these rows: {fitted.min():.2f} to {fitted.max():.2f}", flush=True)


def _tile_rows(name, d):
    """The rows per tile ``name`` takes by default on ``d`` features (isotropy.distributed)."""
    from isotropy.distributed._graph import NEIGHBOUR_TILE_ROWS, check_tile_rows

    default = {} if name not in cost._NEIGHBOURS else {"default": NEIGHBOUR_TILE_ROWS}
    return check_tile_rows(None, "bench", d, **default)


def _dask_cases(ks, neighbours_only: bool):
    """``(label, estimate name, k, call(X, labels))`` of each note on the dask path (the default loops)."""
    from isotropy.metrics.dimension import neighbour_dimensions

    cases = [] if neighbours_only else [
        ("silhouette_score", "silhouette_score", None, lambda X, y: silhouette_score(X, y)),
        ("dunn_index", "dunn_index", None, lambda X, y: dunn_index(X, y)),
        ("uniformity", "uniformity", None, lambda X, y: uniformity(X))]
    cases.append(("twonn_dimension", "twonn_dimension", 2, lambda X, y: twonn_dimension(X)))
    cases += [(f"twonn + mle, k = {k} (one pass)", "mle_dimension", k,
               lambda X, y, k=k: neighbour_dimensions(X, n_neighbors=k)) for k in ks]
    return cases


def _warm_worker():
    import importlib

    importlib.import_module("isotropy.distributed")
    with contextlib.suppress(Exception):  # no numba: the numpy loops, nothing to load
        importlib.import_module("isotropy._kernels._neighbors_jit")


def _dask_main(args, argv=None):
    import dask.array as da
    from distributed import Client, LocalCluster, wait

    from isotropy._kernels.silhouette import _cores

    dims = [int(v) for v in args.dims.split(",")]
    ks = [int(v) for v in args.n_neighbors.split(",")]
    # local workers share this machine's cores (as isotropy measure counts them); dask's threads: one per core
    threads = min(args.dask, _cores()) if args.dask else _cores()
    where = (f"LocalCluster of {args.dask} one-thread workers" if args.dask else
             "dask's threaded scheduler in this process (a folder of shards without --workers)")
    factors = "_TILED_SEARCH" if args.dask else "_TILED_SEARCH_IN_PROCESS"  # the neighbour searches' (rho_pairs, rho_rows)
    flops, elements = cost.machine_speed()
    print(f"machine speed of this run: F = {flops:.3g} flop/s (float32 products), E = {elements:.3g} elements/s; "
          f"{where} on {_cores()} cores; rho (_TILED_OVERHEAD) = {cost._TILED_OVERHEAD}, neighbour searches "
          f"({factors}: pair term, per-row share) = {getattr(cost, factors)}", flush=True)
    if args.repeats > 1:
        print(f"measured: the median of {args.repeats} runs at the same n", flush=True)
    print("| metric | d | n | rows per tile | estimate (s) | measured (s) | estimate / measured (goal 0.67-1.5) |",
          flush=True)
    print("|---|---|---|---|---|---|---|", flush=True)
    measured, records = {}, []
    # the data go to the workers inside the graph (then held there): dask's advice about it is not this benchmark's
    warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
    with contextlib.ExitStack() as stack:
        if args.dask:
            cluster = stack.enter_context(LocalCluster(n_workers=args.dask, threads_per_worker=1, processes=True,
                                                       dashboard_address=None))
            stack.enter_context(Client(cluster)).run(_warm_worker)
        else:
            _warm_worker()
        for label, name, k, call in _dask_cases(ks, args.neighbours_only):
            for d in dims:
                b = _tile_rows(name, d)

                def estimate(n, name=name, d=d, b=b, k=k):
                    return cost.estimate_tiled_seconds(name, n, d, tile_rows=b, threads=threads, n_neighbors=k,
                                                       in_process=not args.dask)

                n = 1000
                for _ in range(12):  # the tiles' per-row term makes one step not enough
                    n = max(1000, n * math.sqrt(args.seconds / estimate(int(n))))
                n = int(round(n, -3))
                X = low_rank_data(n, d)
                labels = np.random.default_rng(1).integers(0, _CLUSTERS, n)
                Xd = da.from_array(X, chunks=(4096, -1))
                if args.dask:
                    Xd = Xd.persist()  # held by the workers, as shards would be read
                    wait(Xd)
                rounds = []
                for _ in range(args.repeats):
                    start = time.perf_counter()
                    call(Xd, labels)
                    rounds.append(time.perf_counter() - start)
                seconds = statistics.median(rounds)
                guess = estimate(n)
                records.append(_row({"case": label, "metric": _timed_function(label), "estimate_name": name,
                                  "loops": "default", "k": k, "d": d, "n": n, "tile_rows": b}, guess, rounds))
                if name in cost._NEIGHBOURS:  # the pair term and the repeated per-row share at rho = 1, over the time
                    terms = cost.tiled_search_terms(name, n, d, tile_rows=b, n_neighbors=k)
                    measured.setdefault("neighbours", []).append(
                        [term * _cores() / threads / seconds for term in terms])
                else:
                    measured.setdefault(name, []).append(guess / cost._TILED_OVERHEAD[name] / seconds)
                print(f"| {label} | {d} | {n:,} | {b} | {guess:.1f} | {seconds:.1f} | {guess / seconds:.2f} |",
                      flush=True)
                del X, Xd
    if args.json:
        _write(args, argv, records, mode="dask", workers=args.dask, where=where, threads=threads, cores=_cores(),
               flops=flops, elements=elements, tiled_overhead=dict(cost._TILED_OVERHEAD),
               search_factors={factors: list(getattr(cost, factors))})
    if args.fit:
        print("\nrho of estimate_tiled_seconds per metric (least squares of the relative errors; _TILED_OVERHEAD):",
              flush=True)
        for family, ratios in measured.items():
            if family == "neighbours":
                terms = np.asarray(ratios)  # (pair term, per-row share) at rho = 1, over the measured time
                rho = _least_squares(terms)
                fitted = terms @ rho
                print(f"- neighbours ({factors}: rho of the pair term, of the per-row share): ({rho[0]:.3g}, "
                      f"{rho[1]:.3g}) (estimate / measured at those: {fitted.min():.2f} to {fitted.max():.2f})",
                      flush=True)
                continue
            r = np.asarray(ratios)  # the estimate at rho = 1 over the measured time
            rho = float((r.sum()) / (r * r).sum())
            print(f"- {family}: {rho:.3g} (estimate / measured at that rho: {rho * r.min():.2f} to {rho * r.max():.2f})",
                  flush=True)
    return records


def _least_squares(terms):
    """The non-negative ``rho`` that brings ``terms @ rho`` (each row: the terms at rho = 1 over the measured time)
    closest to 1 in least squares: the relative errors; a factor the data would make negative is 0 and the other
    is fitted alone."""
    rho = np.linalg.lstsq(terms, np.ones(len(terms)), rcond=None)[0]
    if (rho >= 0).all():
        return rho
    rho = np.zeros(terms.shape[1])
    best = max(range(terms.shape[1]), key=lambda j: terms[:, j].sum() ** 2 / (terms[:, j] ** 2).sum())
    rho[best] = terms[:, best].sum() / (terms[:, best] ** 2).sum()
    return rho


if __name__ == "__main__":
    main()
