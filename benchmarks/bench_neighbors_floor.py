"""Benchmark: the exact neighbour family (TwoNN, MLE, kneighbors) against the half-GEMM floor, before and after.

The floor is the minimal exact work: the float32 blocks on and above the diagonal of ``X·Xᵀ``
(about ``n²d/2`` multiply-adds, multi-threaded BLAS), in the fastest of 1024-, 2048- and 4096-row blocks, each
with its diagonal blocks whole and split (two halves and the block between them: 3/4 of its products), on this data (timed first; printed), timed in the same run. Until 2026-12-04 it was always 4096-row blocks, on
2 shared cores about 1.2 times the fastest floor at n = 20,000 (the ratios measured before read that much lower). Three kernels
run the same exact search (``n_neighbors = k``, euclidean): with ``--history``, the one of commit
``7acb82b`` and the one of commit ``b79a661`` (both read from git history at run time, so this
script then needs the repository's history); those of the ``--compare`` checkouts; and the current
one, on its numpy loops (``ISOTROPY_JIT=0``) and on its compiled ones
(``ISOTROPY_JIT=1``, numba: the ``fast`` extra). The floor and the kernels are interleaved, each timed
``--repeat`` times, and each ratio is the kernel's fastest time over the floor's fastest.

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

Usage::

    nice -n 5 .venv/bin/python benchmarks/bench_neighbors_floor.py [--n 20000] [--d 384] [--repeat 2]
        [--measure-only | --kernels-only] [--compare DIR] [--history] [--cold 10000,20000,40000 [--cold-k 20,100]] [--stages]
        [--live-memory]
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
from _common import isotropy_jit, low_rank_data, timed

from isotropy._kernels.neighbors import compiled_kernels, exact_knn, uses_compiled_kernels

BEFORE = "7acb82b"  # the kernel before the exact rewrite
START = "b79a661"  # the exact kernel before this round (two passes per block, one thread)
ROOT = Path(__file__).resolve().parent.parent


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
    """The default table against TwoNN alone, and its peak memory, for each ``(checkout, ISOTROPY_JIT)`` of ``trees``
    (interleaved)."""
    with tempfile.TemporaryDirectory() as tmp:
        path, tiny = Path(tmp) / "X.npy", Path(tmp) / "tiny.npy"
        np.save(path, X)
        np.save(tiny, X[:100])
        runs = {name: {"table": [], "alone": [], "peaks": []} for name in trees}
        for _ in range(repeat):
            for name, (tree, jit) in trees.items():
                *seconds, peak = _measure_command(path, tree=tree, jit=jit)
                runs[name]["table"].append(seconds)
                runs[name]["peaks"].append(peak)
                runs[name]["alone"].append(_measure_command(path, "twonn_dimension", tree=tree, jit=jit)[:2])
        for name, (tree, jit) in trees.items():
            runs[name]["interpreter_bytes"] = min(_measure_command(tiny, tree=tree, jit=jit)[2] for _ in range(2))
    print(f"`isotropy measure` default table / `--metrics twonn_dimension` alone (fastest of {repeat}, interleaved), "
          f"and the table's peak resident memory above the interpreter's own (the same command on 100 rows) / input "
          f"({X.nbytes / 2**20:.1f} MiB):", flush=True)
    print("| checkout | metrics' own seconds (goal <= 1.3) | whole commands | peak memory / input (goal <= 2) |",
          flush=True)
    print("|---|---|---|---|", flush=True)
    for name, run in runs.items():
        metrics = min(t[0] for t in run["table"]) / min(a[0] for a in run["alone"])
        whole = min(t[1] for t in run["table"]) / min(a[1] for a in run["alone"])
        memory = (min(run["peaks"]) - run["interpreter_bytes"]) / X.nbytes
        print(f"| {name} | {metrics:.2f} | {whole:.2f} | {memory:.2f} |", flush=True)
    print(json.dumps({name: {"table_s": run["table"], "twonn_alone_s": run["alone"], "peak_bytes": run["peaks"],
                             "interpreter_bytes": run["interpreter_bytes"]} for name, run in runs.items()}), flush=True)


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
    args = parser.parse_args(argv)
    if args.cold:
        _cold_rows([int(n) for n in args.cold.split(",")], args.d, args.repeat, [int(k) for k in args.cold_k.split(",")])
        return
    if args.stages:
        X = low_rank_data(args.n, args.d)
        _floor_block(X)  # chosen (and printed) before the table
        _stage_rows(X, args.repeat, args.compare)
        return
    if args.live_memory:
        _live_memory_rows(low_rank_data(args.n, args.d), args.compare)
        return
    X = low_rank_data(args.n, args.d)
    if not args.measure_only:
        _floor_block(X)  # chosen (and printed) before the table
        _kernel_rows(X, args.repeat, args.compare, history=args.history)
    if args.kernels_only:
        return
    trees = {f"{_commit(tree)} ({tree})": (Path(tree).resolve(), None) for tree in args.compare}
    here = f"this checkout ({_commit(ROOT)} + working tree)"
    trees[here] = (ROOT, None)
    with isotropy_jit(None):  # the compiled row only where auto would not already run the compiled loops
        auto_compiles = uses_compiled_kernels(args.n, args.d, 20)
    if not auto_compiles:
        trees[f"{here}, ISOTROPY_JIT=1"] = (ROOT, "1")
    _measure_rows(X, trees, args.repeat)


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
    row per case."""
    kernels = {BEFORE: _kernel_before(), START: _kernel_start()} if history else {}
    for tree in compare:
        kernels.update(_kernels_of(tree))
    kernels.update({"after": lambda X, k: _with_loops("0", X, k), "after, compiled": lambda X, k: _with_loops("1", X, k)})
    print(f"data: float32, n={X.shape[0]:,}, d={X.shape[1]}; floor = blocks on and above the diagonal of X·Xᵀ "
          f"(float32, {_floor_block(X)[0]}-row blocks{', diagonal ones split' if _floor_block(X)[1] else ''}); "
          f"fastest of {repeat}, interleaved", flush=True)
    print(f"| case | k | {' | '.join(f'{key} / floor' for key in kernels)} | same values |", flush=True)
    print(f"|---|---|{'---|' * len(kernels)}---|", flush=True)
    for name, k in (("TwoNN", 2), ("MLE", 20), ("kneighbors", 100)):
        floor, spent, values = [], {key: [] for key in kernels}, {}
        for _ in range(repeat):
            for key, kernel in kernels.items():
                floor.append(timed(lambda: _floor(X))[1])
                values[key], seconds, _ = timed(lambda kernel=kernel, k=k: kernel(X, k))
                spent[key].append(seconds)
            floor.append(timed(lambda: _floor(X))[1])
        checked = [key for key in kernels if key not in (BEFORE, "after", "after, compiled")]
        def agreement(a, b):
            if np.array_equal(a[1], b[1]) and np.array_equal(a[0], b[0]):
                return "yes"
            if not np.array_equal(a[1], b[1]):
                return "NO"
            relative = np.max(np.abs(a[0] - b[0]) / np.maximum(b[0], np.finfo(np.float64).tiny))
            return f"indices yes, distances within {relative:.0e} relative"

        same = {key: agreement(values[key], values[_peer(key)]) for key in checked}
        (d0, i0), (d1, i1) = values["after"], values["after, compiled"]
        compiled = f"indices {'equal' if np.array_equal(i0, i1) else 'DIFFER'}, distances within " \
                   f"{np.max(np.abs(d1 - d0) / np.maximum(d0, np.finfo(np.float64).tiny)):.0e} relative"
        ratios = " | ".join(f"{min(spent[key]) / min(floor):.2f}" for key in kernels)
        versus = "".join(f"{key} vs {_peer(key)}, bit for bit: {same[key]}; " for key in checked)
        print(f"| {name} | {k} | {ratios} | {versus}compiled: {compiled} |", flush=True)


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
