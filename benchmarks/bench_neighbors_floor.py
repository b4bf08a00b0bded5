"""Benchmark: the exact neighbour family (TwoNN, MLE, kneighbors) against the half-GEMM floor, before and after.

The floor is the minimal exact work: the float32 blocks on and above the diagonal of ``X·Xᵀ``
(about ``n²d/2`` multiply-adds, multi-threaded BLAS), in the fastest of 1024-, 2048- and 4096-row blocks, each
with its diagonal blocks whole and split (two halves and the block between them: 3/4 of its products), on this data (timed first; printed), timed in the same run. Until 2026-12-04 it was always 4096-row blocks, on
2 shared cores about 1.2 times the fastest floor at n = 20,000 (the ratios measured before read that much lower). Three kernels
run the same exact search (``n_neighbors = k``, euclidean): with ``--history``, the one of commit
``7acb82b`` and the one of commit ``b79a661`` (both read from git history at run time, so this
script then needs the repository's history); those of the ``--compare`` checkouts; and the current
one, on its numpy loops (``ISOTROPY_JIT=0``) and on its compiled ones
(``ISOTROPY_JIT=1``, numba: the ``fast`` extra). After one untimed search of each kernel on the first 3,000 rows
(numba's loops loaded), the floor and the kernels are interleaved, each timed ``--repeat`` times, and each ratio is
the kernel's fastest time over the floor's fastest.

``--cold N,N,...`` times one search (``n_neighbors`` from ``--cold-k K,K,...``, 20 by default) in a
fresh interpreter per call, with each loop, for each ``n`` and ``k``: what a single call costs,
loading numba and its cached kernels included, and what ``ISOTROPY_JIT=auto`` picks there.

The last rows run the ``isotropy measure`` command in subprocesses on the same data saved as
``.npy``: the default table (all default metrics) against ``--metrics twonn_dimension`` alone
(interleaved, fastest of ``--repeat``; the metrics' own seconds from ``--json``, and the whole
commands), and the default table's peak resident memory above the
same command's on a 100-row file (the interpreter and its imports) against the input's size; this
checkout's rows run with ``ISOTROPY_JIT`` unset (auto), and also with ``ISOTROPY_JIT=1`` where auto would run
the numpy loops at this size (the search of the table, k = 20).
``--compare DIR`` runs the same commands from another checkout too (``git worktree add DIR
COMMIT``; its package first on ``PYTHONPATH``), interleaved with this one's, one row each, and adds
that checkout's kernel as columns of the kernel table: on its numpy loops, and on its compiled loops
if it has them (its own ``_neighbors_jit.py``). Each column's values are compared bit for bit with
this checkout's on the same loops.
``--stages`` only splits each search (on each loop) into its candidate pass, the read-out of the
candidates' slots and the exact distances with their certificate, each against the floor; with
``--compare``, the ``--compare`` checkouts' searches too, interleaved with this one's (an A/B of one stage).
``--live-memory`` only prints, for each case and each kernel (the ``--compare`` checkouts' and this one's, on
each loop), the most memory the search's arrays held at once above what was held before it (``tracemalloc``:
numpy's allocations; the compiled loops allocate nothing of their own size): one search each, no timing.
``--measure-only`` skips the kernel table. On a shared CPU read the ratios, measured in the same
run, not the absolute times.

``--json PATH`` also writes the rows of the kernel table and of the ``isotropy measure`` rows (whichever ran), each
with its goal (``FLOOR_GOAL``, ``TABLE_GOAL`` and ``MEMORY_GOAL``: issue 20's, fixed here before any run) and its
verdict, and what ran (``_common.write_record``). A ratio is printed as the fastest over the fastest; the record
also holds each round's ratio (a kernel's time over the fastest floor of the same round; the table's over TwoNN
alone's of the same round; each round's peak) and the verdict reads their interval (``round_interval`` and
``verdict_at_most``), never one round. ``--cold``, ``--stages`` and ``--live-memory`` measure no goal: they take no
``--json``.

Usage::

    nice -n 5 .venv/bin/python benchmarks/bench_neighbors_floor.py [--n 20000] [--d 384] [--repeat 2]
        [--measure-only | --kernels-only] [--compare DIR] [--history] [--cold 10000,20000,40000 [--cold-k 20,100]] [--stages]
        [--live-memory] [--json PATH]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np
from _common import isotropy_jit, low_rank_data, round_interval, timed, verdict_at_most, write_record

from isotropy._kernels.neighbors import compiled_kernels, exact_knn, uses_compiled_kernels

BEFORE = "7acb82b"  # the kernel before the exact rewrite
START = "b79a661"  # the exact kernel before this round (two passes per block, one thread)
ROOT = Path(__file__).resolve().parent.parent

# Issue 20, "What to build" 1: "Goal: each at most 1.2× the half-GEMM floor measured in the same run, on n = 20,000,
# d = 384 float32" (TwoNN, MLE and kneighbors; here on each loop, numpy and compiled).
FLOOR_GOAL = 1.2
# Issue 20, "What to build" 2: "Goal: the default table costs at most 1.3× TwoNN alone" (the metrics' own seconds),
TABLE_GOAL = 1.3
# "and its peak memory is at most 2× the input plus the interpreter's own" (the peak above the interpreter's / input).
MEMORY_GOAL = 2.0


def _source(commit, path):
    return subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, check=True, capture_output=True,
                          text=True).stdout


def _module(name, text):
    module = types.ModuleType(name)
    exec(compile(text, name, "exec"), module.__dict__)  # noqa: S102 - our own history
    sys.modules[name] = module
    return module


def _kernel_before():
    """``_kneighbors_numpy`` of commit ``BEFORE`` (its kernels module loaded under another name)."""
    kernels = _module("_before_neighbour_kernels", _source(BEFORE, "isotropy/_kernels/neighbors.py"))
    text = _source(BEFORE, "isotropy/metrics/neighbors.py").replace("from isotropy._kernels.neighbors import",
                                                                  f"from {kernels.__name__} import")
    public = _module("_before_neighbours", text)
    return lambda X, k: public._kneighbors_numpy(X, None, k, None)


def _kernel_start():
    """``exact_knn`` of commit ``START``."""
    kernels = _module("_start_neighbour_kernels", _source(START, "isotropy/_kernels/neighbors.py"))
    return lambda X, k: kernels.exact_knn(X, None, k)


# Block sizes tried for the floor, each with its diagonal blocks whole and split (two halves and the block between
# them: 3/4 of a whole diagonal block's products): the fastest is the floor of the run (_floor_block).
_FLOOR_BLOCKS = (1024, 2048, 4096)
_floor_rows = {}
_floor_tried = {}  # per data shape, the seconds of each (rows per block, split) tried


def _floor_block(X) -> tuple[int, bool]:
    """``(rows per block, split)`` of :func:`_floor` for ``X``: the fastest of ``_FLOOR_BLOCKS``, each with its
    diagonal blocks whole and split, each timed twice, once per data shape: the floor is the least time the
    minimal work takes in BLAS-shaped blocks, not one block size's.

    Larger blocks waste more of the diagonal (a diagonal block formed whole: at n = 20,000, 4096-row
    blocks form 1.26 times the half product, 1024-row ones 1.05) and smaller ones run BLAS less efficiently.
    """
    if X.shape not in _floor_rows:
        times = {(b, split): min(timed(lambda b=b, split=split: _floor(X, b, split))[1] for _ in range(2))
                 for b in _FLOOR_BLOCKS for split in (False, True)}
        _floor_rows[X.shape] = min(times, key=times.get)
        _floor_tried[X.shape] = times
        b, split = _floor_rows[X.shape]
        tried = ", ".join(f"{rows} rows{' split' if cut else ''} {t:.3f} s" for (rows, cut), t in times.items())
        print(f"floor blocks: {tried}; the floor runs {b}-row blocks{', diagonal ones split' if split else ''}",
              flush=True)
    return _floor_rows[X.shape]


def _floor(X, b=None, split=False):
    """The float32 blocks on and above the diagonal of X·Xᵀ (``b`` rows per block, each diagonal one whole or, with
    ``split``, as its two halves and the block between them; by default those of :func:`_floor_block`)."""
    n = X.shape[0]
    b, split = _floor_block(X) if b is None else (b, split)
    buf = np.empty(min(n, b) ** 2, dtype=np.float32)

    def block(a, e, a2, e2):
        np.matmul(X[a:e], X[a2:e2].T, out=buf[: (e - a) * (e2 - a2)].reshape(e - a, e2 - a2))

    for a in range(0, n, b):
        e = min(n, a + b)
        if split and n > b:
            h = a + (e - a) // 2
            block(a, h, a, h)
            block(h, e, h, e)
            block(a, h, h, e)
        else:
            block(a, e, a, e)
        for a2 in range(a + b, n, b):
            block(a, e, a2, min(n, a2 + b))


_CHILD = """
import resource, subprocess, sys, time
start = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
seconds = time.perf_counter() - start
if done.returncode:
    sys.exit(done.stderr)
print(seconds, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
"""


def _measure_command(path, *metrics, tree=ROOT, jit=None):
    """``isotropy measure path [--metrics ...]`` in a fresh process, with the package of the checkout ``tree``:
    its metrics' own seconds (summed, from ``--json``), the whole command's wall seconds and its peak
    resident bytes."""
    record = Path(path).with_suffix(".json")
    command = [sys.executable, "-c", "from isotropy.cli import main; main()", "measure", str(path), "--no-progress",
               "--json", str(record)]
    if metrics:
        command += ["--metrics", ",".join(metrics)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))}
    env.pop("ISOTROPY_JIT", None)
    if jit is not None:
        env["ISOTROPY_JIT"] = jit
    out = subprocess.run([sys.executable, "-c", _CHILD, *command], check=True, capture_output=True, text=True,
                         cwd=tree, env=env).stdout.split()
    return sum(json.loads(record.read_text())["seconds"].values()), float(out[0]), int(out[1])


def _measure_rows(X, trees, repeat):
    """The default table against TwoNN alone, and its peak memory, for each ``(checkout's folder, ISOTROPY_JIT, its
    name in the record)`` of ``trees`` (interleaved); printed, and returned as the record's rows (:func:`_measure_row`)."""
    with tempfile.TemporaryDirectory() as tmp:
        path, tiny = Path(tmp) / "X.npy", Path(tmp) / "tiny.npy"
        np.save(path, X)
        np.save(tiny, X[:100])
        runs = {name: {"table": [], "alone": [], "peaks": []} for name in trees}
        for _ in range(repeat):
            for name, (tree, jit, _) in trees.items():
                *seconds, peak = _measure_command(path, tree=tree, jit=jit)
                runs[name]["table"].append(seconds)
                runs[name]["peaks"].append(peak)
                runs[name]["alone"].append(_measure_command(path, "twonn_dimension", tree=tree, jit=jit)[:2])
        for name, (tree, jit, _) in trees.items():
            runs[name]["interpreter_bytes"] = min(_measure_command(tiny, tree=tree, jit=jit)[2] for _ in range(2))
    print(f"`isotropy measure` default table / `--metrics twonn_dimension` alone (fastest of {repeat}, interleaved), "
          f"and the table's peak resident memory above the interpreter's own (the same command on 100 rows) / input "
          f"({X.nbytes / 2**20:.1f} MiB):", flush=True)
    print(f"| checkout | metrics' own seconds (goal <= {TABLE_GOAL:g}) | whole commands | peak memory / input (goal <= "
          f"{MEMORY_GOAL:g}) |", flush=True)
    print("|---|---|---|---|", flush=True)
    rows = []
    for name, run in runs.items():
        _, jit, checkout = trees[name]
        rows.append(_measure_row(name, checkout, jit, run, X.nbytes))
        print(f"| {name} | {rows[-1]['seconds_ratio']:.2f} | {rows[-1]['whole_ratio']:.2f} | "
              f"{rows[-1]['memory_ratio']:.2f} |", flush=True)
    print(json.dumps({name: {"table_s": run["table"], "twonn_alone_s": run["alone"], "peak_bytes": run["peaks"],
                             "interpreter_bytes": run["interpreter_bytes"]} for name, run in runs.items()}), flush=True)
    return rows


def _measure_row(label, checkout, jit, run, input_bytes):
    """One checkout's row of the record: the table's metrics' own seconds over TwoNN alone's (goal ``TABLE_GOAL``),
    the whole commands' (no goal), and the table's peak resident memory above the interpreter's own over the input
    (goal ``MEMORY_GOAL``). Each ratio as printed (fastest over fastest; the least peak), each round's (the table over
    TwoNN alone in the same round; that round's peak), and the verdict on the interval of the rounds.

    ``run``: ``"table"`` and ``"alone"``, per round ``(metrics' own seconds, whole command's seconds)``; ``"peaks"``,
    the table's peak resident bytes per round; ``"interpreter_bytes"``, the same command's on 100 rows.
    """
    table, alone = [t[0] for t in run["table"]], [a[0] for a in run["alone"]]
    table_whole, alone_whole = [t[1] for t in run["table"]], [a[1] for a in run["alone"]]
    seconds = [t / a for t, a in zip(table, alone)]
    memory = [(peak - run["interpreter_bytes"]) / input_bytes for peak in run["peaks"]]
    seconds_low, seconds_high = round_interval(seconds)
    memory_low, memory_high = round_interval(memory)
    return {"label": label, "checkout": checkout, "jit": "auto" if jit is None else jit,
            "table_s": table, "twonn_alone_s": alone, "seconds_ratio": min(table) / min(alone),
            "seconds_ratio_rounds": seconds, "seconds_ratio_low": seconds_low, "seconds_ratio_high": seconds_high,
            "seconds_goal": TABLE_GOAL, "seconds_verdict": verdict_at_most(seconds_low, seconds_high, TABLE_GOAL),
            "table_whole_s": table_whole, "twonn_alone_whole_s": alone_whole,
            "whole_ratio": min(table_whole) / min(alone_whole),
            "whole_ratio_rounds": [t / a for t, a in zip(table_whole, alone_whole)],
            "peak_mib": [peak / 2**20 for peak in run["peaks"]], "interpreter_mib": run["interpreter_bytes"] / 2**20,
            "input_mib": input_bytes / 2**20, "memory_ratio": (min(run["peaks"]) - run["interpreter_bytes"]) / input_bytes,
            "memory_ratio_rounds": memory, "memory_ratio_low": memory_low, "memory_ratio_high": memory_high,
            "memory_goal": MEMORY_GOAL, "memory_verdict": verdict_at_most(memory_low, memory_high, MEMORY_GOAL)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--measure-only", action="store_true", help="only the `isotropy measure` rows")
    parser.add_argument("--kernels-only", action="store_true", help="only the kernels against the floor")
    parser.add_argument("--compare", metavar="DIR", action="append", default=[],
                        help="also run the `isotropy measure` rows from this checkout (repeatable)")
    parser.add_argument("--history", action="store_true", help="also the kernels of 7acb82b and b79a661 (slow)")
    parser.add_argument("--cold", metavar="N,N,...", help="only one search per fresh interpreter at these n, per loop")
    parser.add_argument("--cold-k", metavar="K,K,...", default="20", help="the n_neighbors of the --cold searches")
    parser.add_argument("--stages", action="store_true", help="only where each search's time goes, against the floor")
    parser.add_argument("--live-memory", action="store_true", help="only the most memory each search's arrays hold")
    parser.add_argument("--json", metavar="PATH",
                        help="also write the rows, each goal's verdict and what ran as JSON to PATH")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"argument --repeat: expected at least 1 round, got {args.repeat}")
    if args.measure_only and args.kernels_only:
        parser.error("argument --kernels-only: not allowed with --measure-only (each skips what the other runs)")
    if args.json:
        modes = [flag for flag, on in (("--cold", args.cold), ("--stages", args.stages),
                                       ("--live-memory", args.live_memory)) if on]
        if modes:
            parser.error(f"argument --json: not allowed with {modes[0]} (it measures no goal of issue 20; --json "
                         f"records the kernel table and the `isotropy measure` rows)")
    seen = {}  # commit -> the first --compare checkout at it: their rows and loaded kernels are named by commit
    for tree in args.compare:
        commit = _commit(tree)
        if commit in seen:
            parser.error(f"argument --compare: {seen[commit]} and {tree} are both at commit {commit}, and each "
                         f"checkout's rows are named by its commit; compare one of them (commit the other's changes)")
        seen[commit] = tree
    if args.cold:
        _cold_rows([int(n) for n in args.cold.split(",")], args.d, args.repeat, [int(k) for k in args.cold_k.split(",")])
        return None
    if args.stages:
        X = low_rank_data(args.n, args.d)
        _floor_block(X)  # chosen (and printed) before the table
        _stage_rows(X, args.repeat, args.compare)
        return None
    if args.live_memory:
        _live_memory_rows(low_rank_data(args.n, args.d), args.compare)
        return None
    X = low_rank_data(args.n, args.d)
    record = {"n": args.n, "d": args.d, "dtype": "float32", "repeat": args.repeat, "history": args.history,
              "compare": [{"dir": tree, "commit": _commit(tree)} for tree in args.compare],
              "floor_goal": FLOOR_GOAL, "table_goal": TABLE_GOAL, "memory_goal": MEMORY_GOAL,
              "statistic": "ratio: the fastest over the fastest of the interleaved rounds, as printed (memory: the "
                           "least peak); ratio_rounds: each round's ratio (a kernel over the fastest floor of its "
                           "round; the table over TwoNN alone of its round; that round's peak); ratio_low and "
                           "ratio_high: their interval (round_interval), which the verdict reads (verdict_at_most)",
              "floor": None, "kernels": None, "auto_compiles": None, "measure": None}
    if not args.measure_only:
        block, split = _floor_block(X)  # chosen (and printed) before the table
        record["floor"] = {"rows_per_block": block, "split": split,
                           "tried_s": [{"rows_per_block": b, "split": cut, "seconds": t}
                                       for (b, cut), t in _floor_tried[X.shape].items()]}
        record["kernels"] = _kernel_rows(X, args.repeat, args.compare, history=args.history)
    if not args.kernels_only:
        trees = {f"{_commit(tree)} ({tree})": (Path(tree).resolve(), None, _commit(tree)) for tree in args.compare}
        here = f"this checkout ({_commit(ROOT)} + working tree)"
        trees[here] = (ROOT, None, "this")
        with isotropy_jit(None):  # the compiled row only where auto would not already run the compiled loops
            auto_compiles = uses_compiled_kernels(args.n, args.d, 20)
        if not auto_compiles:
            trees[f"{here}, ISOTROPY_JIT=1"] = (ROOT, "1", "this")
        record["auto_compiles"] = auto_compiles
        record["measure"] = _measure_rows(X, trees, args.repeat)
    if args.json:
        return write_record(args.json, record, argv=None if argv is None else [__file__, *argv])
    return record


_COLD = """
import sys, time
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/benchmarks"]
from _common import low_rank_data
X = low_rank_data(int(sys.argv[2]), int(sys.argv[3]))
start = time.perf_counter()
from isotropy._kernels.neighbors import exact_knn
exact_knn(X, None, int(sys.argv[4]))
print(time.perf_counter() - start)
"""


def _cold_rows(sizes, d, repeat, neighbors=(20,)):
    """One search per fresh interpreter (import and numba's loading included) on each loop, per ``n`` and ``k``."""
    print(f"one search (d = {d}) in a fresh interpreter, fastest of {repeat}, interleaved: compiled loops "
          f"(ISOTROPY_JIT=1, loading numba included) / numpy loops (ISOTROPY_JIT=0)", flush=True)
    print("| n | k | compiled / numpy | ISOTROPY_JIT=auto picks |", flush=True)
    print("|---|---|---|---|", flush=True)
    for k in neighbors:
        for n in sizes:
            spent = {"0": [], "1": []}
            for _ in range(repeat):
                for jit, seconds in spent.items():
                    out = subprocess.run([sys.executable, "-c", _COLD, str(ROOT), str(n), str(d), str(k)], check=True,
                                         text=True, capture_output=True, env={**os.environ, "ISOTROPY_JIT": jit})
                    seconds.append(float(out.stdout.split()[0]))
            with isotropy_jit(None):
                auto = "compiled" if compiled_kernels(n, d, k) is not None else "numpy"
            print(f"| {n:,} | {k} | {min(spent['1']) / min(spent['0']):.2f} | {auto} |", flush=True)


_STAGES = {"_candidate_pass": "candidate pass", "result": "slots read out", "_exact_selection": "exact distances"}


def _stage_rows(X, repeat, compare=()):
    """Each case's search on each loop split into its stages (the functions of ``_STAGES``, timed by wrapping them),
    as fractions of the floor; the fastest of ``repeat`` searches, interleaved with the floor; with ``compare``, the
    same for those checkouts' kernels (loaded as ``--compare`` loads them), interleaved with this checkout's."""
    import isotropy._kernels.neighbors as kernels

    seconds = {}

    def timing(owner, name):
        inner = getattr(owner, name)

        def stage(*args, **kwargs):
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - start
        return inner, stage

    searches = {}  # label: (the kernels module whose stages are timed, the search)
    for tree in compare:
        for label, module in _kernel_modules(tree).items():
            searches[label] = (module, lambda X, k, module=module: module.exact_knn(X, None, k))
    searches["after"] = (kernels, lambda X, k: _with_loops("0", X, k))
    searches["after, compiled"] = (kernels, lambda X, k: _with_loops("1", X, k))
    for _, search in searches.values():  # numba's loops loaded (or compiled, for a copy) before anything is timed
        for k in (2, 100):
            search(X[:3000], k)
    modules = list({id(module): module for module, _ in searches.values()}.values())
    patched = [(owner, name, *timing(owner, name)) for module in modules for owner, name in
               ((module, "_candidate_pass"), (module._Best, "result"), (module, "_exact_selection"))]
    print(f"where a search's time goes (n={X.shape[0]:,}, d={X.shape[1]}, float32): each stage / floor, from the "
          f"fastest of {repeat} searches (interleaved with the floor); the rest: centre, operands, the thread pool",
          flush=True)
    print(f"| case | k | loops | search / floor | {' | '.join(_STAGES.values())} | rest |", flush=True)
    print(f"|---|---|---|---|{'---|' * len(_STAGES)}---|", flush=True)
    try:
        for owner, name, _, stage in patched:
            setattr(owner, name, stage)
        for case, k in (("TwoNN", 2), ("MLE", 20), ("kneighbors", 100)):
            floor, runs = [], {label: [] for label in searches}
            for _ in range(repeat):
                for label, (_, search) in searches.items():
                    floor.append(timed(lambda: _floor(X))[1])
                    seconds.clear()
                    total = timed(lambda search=search, k=k: search(X, k))[1]
                    runs[label].append((total, dict(seconds)))
            least = min(floor)
            for label, timings in runs.items():
                total, parts = min(timings, key=lambda run: run[0])
                cells = " | ".join(f"{parts.get(name, 0.0) / least:.2f}" for name in _STAGES)
                loops = {"after": "numpy", "after, compiled": "compiled"}.get(label, label)
                print(f"| {case} | {k} | {loops} | {total / least:.2f} | {cells} | "
                      f"{(total - sum(parts.values())) / least:.2f} |", flush=True)
    finally:
        for owner, name, inner, _ in reversed(patched):
            setattr(owner, name, inner)


def _commit(tree):
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, check=True, capture_output=True,
                          text=True).stdout.strip()


def _kernels_of(tree):
    """``exact_knn`` of the checkout ``tree`` on its numpy loops and, if it has them, on its compiled loops (its
    kernels modules loaded under other names, each told which loops to use)."""
    commit = _commit(tree)
    if not (Path(tree) / "isotropy" / "_kernels" / "neighbors.py").exists():  # the flat layout before folders (8e450e5)
        return {commit: _flat_kernel(Path(tree) / "isotropy", commit)}
    return {label: lambda X, k, module=module: module.exact_knn(X, None, k)
            for label, module in _kernel_modules(tree).items()}


def _kernel_modules(tree):
    """The kernels module (``isotropy/_kernels/neighbors.py``) of the checkout ``tree``, loaded under another name
    and told to run its numpy loops, and, if it has compiled loops, a second one told to run those."""
    commit, folder = _commit(tree), Path(tree) / "isotropy" / "_kernels"
    if not (folder / "neighbors.py").exists():
        raise SystemExit(f"{tree} has no isotropy/_kernels/neighbors.py (a checkout before the package's folders): "
                         f"its stages cannot be timed")
    numpy_loops = _module(f"_neighbour_kernels_{commit}", (folder / "neighbors.py").read_text())
    numpy_loops.compiled_kernels = lambda *size: None
    kernels = {commit: numpy_loops}
    if (folder / "_neighbors_jit.py").exists():
        # loaded from a copy outside the checkout: numba caches the compiled loops beside the file under this module's
        # name, and such a cache beside the checkout's own file broke its next plain import (ModuleNotFoundError of
        # "_neighbour_jit_<commit>" when numba loaded a loop)
        copy = Path(tempfile.gettempdir()) / f"isotropy-bench-{commit}" / "_neighbors_jit.py"
        source = (folder / "_neighbors_jit.py").read_text()
        if not copy.exists() or copy.read_text() != source:
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_text(source)
        spec = importlib.util.spec_from_file_location(f"_neighbour_jit_{commit}", copy)
        loops = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = loops  # numba finds the module of a cached loop by its name
        spec.loader.exec_module(loops)  # (and caches the compiled loops beside the copy)
        compiled = _module(f"_neighbour_kernels_{commit}_compiled", (folder / "neighbors.py").read_text())
        compiled.compiled_kernels = lambda *size: loops
        kernels[f"{commit}, compiled"] = compiled
    return kernels


# the flat layout's helper modules and where the same names live now (each used by the search as it was: the
# error class, the progress hook and the backend tests; none of them times anything)
_FLAT_IMPORTS = {"isotropy._validation": "isotropy._utils.validation", "isotropy._progress": "isotropy._utils.progress",
                 "isotropy._backend": "isotropy._utils.backend"}


def _flat_kernel(package, commit):
    """``_kneighbors_numpy`` of a checkout with the flat layout (``isotropy/_neighbors_kernels.py`` beside
    ``isotropy/neighbors.py``): both loaded under other names, their helper imports pointed at this package."""
    def text(name):
        source = (package / name).read_text()
        for old, new in _FLAT_IMPORTS.items():
            source = source.replace(f"from {old} import", f"from {new} import")
        return source

    kernels = _module(f"_flat_neighbour_kernels_{commit}", text("_neighbors_kernels.py"))
    public = _module(f"_flat_neighbours_{commit}", text("neighbors.py").replace(
        "from isotropy._neighbors_kernels import", f"from {kernels.__name__} import"))
    return lambda X, k: public._kneighbors_numpy(X, None, k, None)


def _kernel_rows(X, repeat, compare=(), history=False):
    """The kernels of BEFORE and START (``history``), the ``compare`` checkouts and this one against the floor, one
    row per case; printed, and returned as the record's rows, one per case and kernel (:func:`_kernel_row`)."""
    kernels = {BEFORE: _kernel_before(), START: _kernel_start()} if history else {}
    for tree in compare:
        kernels.update(_kernels_of(tree))
    kernels.update({"after": lambda X, k: _with_loops("0", X, k), "after, compiled": lambda X, k: _with_loops("1", X, k)})
    for kernel in kernels.values():  # numba's loops loaded (or compiled, for a copy) before anything is timed: a
        for k in (2, 100):  # first round that paid for it read as a round of the kernel, and the verdict reads rounds
            kernel(X[:3000], k)
    print(f"data: float32, n={X.shape[0]:,}, d={X.shape[1]}; floor = blocks on and above the diagonal of X·Xᵀ "
          f"(float32, {_floor_block(X)[0]}-row blocks{', diagonal ones split' if _floor_block(X)[1] else ''}); "
          f"fastest of {repeat}, interleaved", flush=True)
    print(f"| case | k | {' | '.join(f'{key} / floor' for key in kernels)} | same values |", flush=True)
    print(f"|---|---|{'---|' * len(kernels)}---|", flush=True)
    rows = []
    for name, k in (("TwoNN", 2), ("MLE", 20), ("kneighbors", 100)):
        floor, spent, values = [], {key: [] for key in kernels}, {}
        for _ in range(repeat):
            floor.append([])  # this round's floors: one before each kernel and one after the last
            for key, kernel in kernels.items():
                floor[-1].append(timed(lambda: _floor(X))[1])
                values[key], seconds, _ = timed(lambda kernel=kernel, k=k: kernel(X, k))
                spent[key].append(seconds)
            floor[-1].append(timed(lambda: _floor(X))[1])
        checked = [key for key in kernels if key not in (BEFORE, "after", "after, compiled")]
        same = {key: _same_values(values[key], values[_peer(key)], _peer(key)) for key in checked}
        compiled = _same_values(values["after, compiled"], values["after"], "after")
        text = f"indices {'equal' if compiled['indices_equal'] else 'DIFFER'}, distances within " \
               f"{compiled['max_relative_difference']:.0e} relative"
        ratios = " | ".join(f"{min(spent[key]) / min(min(r) for r in floor):.2f}" for key in kernels)
        versus = "".join(f"{key} vs {_peer(key)}, bit for bit: {_agreement(same[key])}; " for key in same)
        print(f"| {name} | {k} | {ratios} | {versus}compiled: {text} |", flush=True)
        same["after, compiled"] = compiled
        for key in kernels:
            rows.append(_kernel_row(name.lower(), k, key, spent[key], floor, same.get(key)))
    return rows


def _kernel_row(case, k, label, seconds, floor, same):
    """One kernel's row of the record for one case: its time over the floor's, fastest over fastest as printed, and
    each round's (its time over the fastest floor of that round: ``floor`` holds each round's floors), with the verdict
    on the interval of the rounds against ``FLOOR_GOAL``; ``same``: its values against those of this checkout's same
    loops (:func:`_same_values`; ``None`` for this checkout's numpy loops, the reference, and for ``BEFORE``, whose
    values are not compared)."""
    floors = [min(runs) for runs in floor]
    rounds = [s / f for s, f in zip(seconds, floors)]
    low, high = round_interval(rounds)
    commit, _, compiled = label.partition(", ")
    none = {"against": None, "bit_for_bit": None, "indices_equal": None, "max_relative_difference": None}
    return {"case": case, "k": k, "label": label, "checkout": "this" if commit == "after" else commit,
            "loops": "compiled" if compiled else "numpy", "kernel_s": seconds, "floor_s": floors,
            "floor_runs_s": floor, "ratio": min(seconds) / min(floors), "ratio_rounds": rounds, "ratio_low": low,
            "ratio_high": high, "goal": FLOOR_GOAL, "verdict": verdict_at_most(low, high, FLOOR_GOAL),
            **{f"values_{key}": value for key, value in (same or none).items()}}


def _agreement(same):
    """The "same values" cell of a kernel checked bit for bit (:func:`_same_values`)."""
    if same["bit_for_bit"]:
        return "yes"
    if not same["indices_equal"]:
        return "NO"
    return f"indices yes, distances within {same['max_relative_difference']:.0e} relative"


def _same_values(a, b, against):
    """Whether the search result ``a`` (distances, indices) is ``b`` (the kernel ``against``'s) bit for bit, its
    indices are ``b``'s, and the largest difference of its distances relative to ``b``'s (``None`` where the shapes
    differ)."""
    relative = None
    if a[0].shape == b[0].shape:
        relative = float(np.max(np.abs(a[0] - b[0]) / np.maximum(b[0], np.finfo(np.float64).tiny)))
    return {"against": against, "bit_for_bit": bool(np.array_equal(a[1], b[1]) and np.array_equal(a[0], b[0])),
            "indices_equal": bool(np.array_equal(a[1], b[1])), "max_relative_difference": relative}


def _peer(key):
    """The column of this checkout that runs the same loops as the column ``key`` (its values must be the same bits)."""
    return "after, compiled" if key.endswith(", compiled") else "after"


def _live_memory_rows(X, compare=()):
    """The most memory each kernel's search holds in numpy arrays at once above what was held before it (MiB)."""
    import tracemalloc

    kernels = {}
    for tree in compare:
        kernels.update(_kernels_of(tree))
    kernels.update({"after": lambda X, k: _with_loops("0", X, k), "after, compiled": lambda X, k: _with_loops("1", X, k)})
    for kernel in kernels.values():  # compiled loops loaded and compiled before anything is traced
        kernel(X[:3000], 2)
    print(f"the most memory a search's numpy arrays hold at once, above what was held before it (MiB; tracemalloc; "
          f"float32, n={X.shape[0]:,}, d={X.shape[1]}, X itself {X.nbytes / 2**20:.1f} MiB)", flush=True)
    print(f"| case | k | {' | '.join(kernels)} |", flush=True)
    print(f"|---|---|{'---|' * len(kernels)}", flush=True)
    for name, k in (("TwoNN", 2), ("MLE", 20), ("kneighbors", 100)):
        peaks = []
        for kernel in kernels.values():
            tracemalloc.start()
            held = tracemalloc.get_traced_memory()[0]
            result = kernel(X, k)
            peaks.append((tracemalloc.get_traced_memory()[1] - held) / 2**20)
            tracemalloc.stop()
            del result
        print(f"| {name} | {k} | {' | '.join(f'{peak:.1f}' for peak in peaks)} |", flush=True)


def _with_loops(jit, X, k):
    """``exact_knn`` of this checkout on its numpy (``"0"``) or compiled (``"1"``) loops."""
    with isotropy_jit(jit):
        return exact_knn(X, None, k)


if __name__ == "__main__":
    main()
