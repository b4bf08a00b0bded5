"""Exact silhouette: isotropy vs scikit-learn, against the matrix-product floor, in one run.

For float32 blobs of n samples in d dimensions with 2 and 20 clusters, prints (markdown):
- the median time of ``sklearn.metrics.silhouette_score`` and of ``isotropy.silhouette_score``,
- the floor: one float32 product ``X @ X.T`` (2 n^2 d flops), timed in the same run,
- our time / floor and sklearn time / our time,
- the largest |s_i(float32) - s_i(float64)| over the samples, with the float64 values from
  ``isotropy.silhouette_samples`` on the float64 data (which the tests check against sklearn
  to 1e-10), and |our score - sklearn's score|,
then the peak extra memory of ``silhouette_score`` at n x 768 (float32), measured in a fresh
subprocess as the rise of VmHWM (peak resident set, reset first through /proc/self/clear_refs)
and, for numpy's own allocations, with tracemalloc.

Timings on a shared machine are noisy: compare the ratios, which come from the same run.

``--compare DIR`` (another checkout: ``git worktree add DIR COMMIT``) prints instead, per cluster count, the
silhouette against the floor of this checkout and of ``DIR``, each timed in a fresh interpreter with its package
first on ``PYTHONPATH`` (a warm-up call, then the call and the floor ``X @ X.T`` interleaved ``--repeats`` times,
medians), the two checkouts' interpreters alternating ``--rounds`` times (the fastest ratio of each kept), and
whether the two give the same coefficients (bit for bit, or their largest difference).

``--json PATH`` also writes the rows and the memory, each with its target and verdict (``SPEEDUP_TARGET``,
``MEMORY_TARGET_MIB``: fixed here before any run), and what ran (``_common.write_record``); the docs' summary
reads the committed one, ``docs/runs/benchmarks/silhouette/bench.json``, through value markers.

    nice -n 5 .venv/bin/python benchmarks/bench_silhouette.py [--compare DIR [--rounds 3]] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np

# The speed-up over scikit-learn the exact silhouette is held to (median wall time, same run), and the most peak
# extra memory (VmHWM rise) it may take at n x --memory-d float32.
SPEEDUP_TARGET = 5.0
MEMORY_TARGET_MIB = 300.0


def blobs(n, d, k, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=0.5, size=(k, d))
    labels = rng.integers(0, k, n)
    X = centres[labels] + rng.normal(scale=1.0, size=(n, d)) + 1.0  # offset: float32 cancellation matters
    return X.astype(np.float32), labels


def timed(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), value


def run_timings(n, d, clusters, repeats, sklearn_repeats):
    from sklearn.metrics import silhouette_score as sk_score

    from isotropy import silhouette_samples, silhouette_score

    rows = []
    for k in clusters:
        X, labels = blobs(n, d, k)
        floors, ours_times = [], []
        for _ in range(repeats):  # interleaved, so that both see the same load
            floors.append(timed(lambda: X @ X.T, 1)[0])  # noqa: B023
            t, ours_value = timed(lambda: silhouette_score(X, labels), 1)  # noqa: B023
            ours_times.append(t)
        theirs, theirs_value = timed(lambda: sk_score(X, labels), sklearn_repeats)  # noqa: B023
        floors.append(timed(lambda: X @ X.T, 1)[0])  # once more after the slow part  # noqa: B023
        floor, ours = float(np.median(floors)), float(np.median(ours_times))
        s32 = silhouette_samples(X, labels)
        s64 = silhouette_samples(X.astype(np.float64), labels)
        rows.append({"k": k, "sklearn_s": theirs, "ours_s": ours, "floor_s": floor, "ours_over_floor": ours / floor,
                         "speedup": theirs / ours, "max_abs_diff_f64": float(np.abs(s32 - s64).max()),
                         "score_diff_sklearn": abs(ours_value - theirs_value)})
    return rows


def memory_child(n, d):
    """In a fresh process: peak extra memory of silhouette_score on (n, d) float32 blobs."""
    import tracemalloc

    from isotropy import silhouette_score

    X, labels = blobs(n, d, 20)
    silhouette_score(X[:500], labels[:500])  # import and warm up everything first

    def status(field):
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith(field)) * 1024

    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset VmHWM to the current RSS
        hwm_ok = True
    except OSError:
        hwm_ok = False
    rss_before = status("VmRSS:")
    tracemalloc.start()
    silhouette_score(X, labels)
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    extra_hwm = status("VmHWM:") - rss_before if hwm_ok else None
    print(json.dumps({"n": n, "d": d, "data_mib": X.nbytes / 2**20, "tracemalloc_peak_mib": traced_peak / 2**20,
                          "vmhwm_extra_mib": None if extra_hwm is None else extra_hwm / 2**20}))


def ratio_child(n, d, k, repeats, out):
    """In a fresh interpreter (the checkout on PYTHONPATH first): the silhouette against the floor; the samples to out."""
    import isotropy
    from isotropy import silhouette_samples, silhouette_score

    X, labels = blobs(n, d, k)
    silhouette_score(X[:2000], labels[:2000])  # imports and thread pools warm
    floors, times = [], []
    for _ in range(repeats):
        floors.append(timed(lambda: X @ X.T, 1)[0])
        times.append(timed(lambda: silhouette_score(X, labels), 1)[0])
    np.save(out, silhouette_samples(X, labels))
    print(json.dumps({"ratio": float(np.median(times) / np.median(floors)), "seconds": float(np.median(times)),
                      "package": isotropy.__file__}))


def compare(args):
    """This checkout against ``args.compare``, in alternating fresh interpreters (see the module docstring)."""
    import os
    import tempfile
    from pathlib import Path

    here = Path(__file__).resolve().parents[1]
    checkouts = [("this checkout", here), (Path(args.compare).name, Path(args.compare).resolve())]
    print(f"n = {args.n}, d = {args.d}, float32; silhouette_score / floor (X @ X.T), medians of {args.repeats} "
          f"interleaved calls per interpreter, the fastest of {args.rounds} alternating interpreters per checkout\n")
    print("| clusters | " + " | ".join(f"{name} / floor" for name, _ in checkouts) + " | same coefficients |")
    print("|---:|" + "---:|" * len(checkouts) + "---|")
    with tempfile.TemporaryDirectory() as tmp:
        for k in args.clusters:
            best = {}
            for r in range(args.rounds):
                for name, root in checkouts:
                    out = Path(tmp) / f"{k}-{name.replace(' ', '_')}.npy"
                    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
                    child = subprocess.run([sys.executable, __file__, "--ratio-child", "--n", str(args.n), "--d",
                                            str(args.d), "--clusters", str(k), "--repeats", str(args.repeats),
                                            "--out", str(out)], capture_output=True, text=True, env=env, check=True)
                    got = json.loads(child.stdout.strip().splitlines()[-1])
                    if not Path(got["package"]).resolve().is_relative_to(root):
                        raise SystemExit(f"{name}: imported {got['package']}, not the package of {root}")
                    best[name] = min(best.get(name, np.inf), got["ratio"])
            a, b = (np.load(Path(tmp) / f"{k}-{name.replace(' ', '_')}.npy") for name, _ in checkouts)
            same = "yes (bit for bit)" if np.array_equal(a, b) else f"max |diff| {np.abs(a - b).max():.1e}"
            print(f"| {k} | " + " | ".join(f"{best[name]:.2f}" for name, _ in checkouts) + f" | {same} |", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--clusters", type=int, nargs="+", default=[2, 20])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sklearn-repeats", type=int, default=1)
    parser.add_argument("--memory-d", type=int, default=768)
    parser.add_argument("--memory-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--compare", metavar="DIR", help="another checkout: its silhouette / floor beside this one's")
    parser.add_argument("--rounds", type=int, default=3, help="alternating interpreters per checkout (--compare)")
    parser.add_argument("--ratio-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--json", metavar="PATH", help="also write the rows, the memory and what ran as JSON to PATH")
    args = parser.parse_args(argv)
    if args.memory_child:
        memory_child(args.n, args.memory_d)
        return
    if args.ratio_child:
        ratio_child(args.n, args.d, args.clusters[0], args.repeats, args.out)
        return
    if args.compare:
        if args.json:  # the comparison prints ratios of two checkouts, not the rows --json records
            parser.error("--json records the table against scikit-learn; it does not go with --compare")
        compare(args)
        return

    import sklearn
    import threadpoolctl

    blas = [f"{i['internal_api']} {i.get('version')} ({i['num_threads']} threads)"
            for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
    print(f"n = {args.n}, d = {args.d}, float32; numpy {np.__version__}, scikit-learn {sklearn.__version__}, "
          f"BLAS: {', '.join(blas)}; medians of {args.repeats} (sklearn: {args.sklearn_repeats})\n")
    print("| clusters | sklearn (s) | isotropy (s) | floor X@X.T (s) | isotropy / floor | speed-up vs sklearn "
          "| max abs diff vs float64 | abs diff vs sklearn score |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = run_timings(args.n, args.d, args.clusters, args.repeats, args.sklearn_repeats)
    for r in rows:
        r.update(target=SPEEDUP_TARGET, verdict="met" if r["speedup"] >= SPEEDUP_TARGET else "not met")
        print(f"| {r['k']} | {r['sklearn_s']:.2f} | {r['ours_s']:.2f} | {r['floor_s']:.2f} | "
              f"{r['ours_over_floor']:.2f} | {r['speedup']:.1f}x | {r['max_abs_diff_f64']:.1e} | "
              f"{r['score_diff_sklearn']:.1e} |", flush=True)
    child = subprocess.run([sys.executable, __file__, "--memory-child", "--n", str(args.n),
                            "--memory-d", str(args.memory_d)], capture_output=True, text=True, check=True)
    mem = json.loads(child.stdout.strip().splitlines()[-1])
    hwm = "n/a" if mem["vmhwm_extra_mib"] is None else f"{mem['vmhwm_extra_mib']:.0f} MiB"
    print(f"\nPeak extra memory of silhouette_score at n = {mem['n']}, d = {mem['d']} float32 "
          f"(data itself {mem['data_mib']:.0f} MiB): {hwm} (VmHWM rise), "
          f"{mem['tracemalloc_peak_mib']:.0f} MiB (tracemalloc peak of numpy allocations)")
    if args.json:
        from _common import write_record

        extra = mem["vmhwm_extra_mib"]
        mem.update(target_mib=MEMORY_TARGET_MIB,
                   verdict="not measured" if extra is None else "met" if extra < MEMORY_TARGET_MIB else "not met")
        write_record(args.json, {"n": args.n, "d": args.d, "dtype": "float32", "repeats": args.repeats,
                                 "sklearn_repeats": args.sklearn_repeats, "blas": blas,
                                 "statistic": "medians; ours and the floor interleaved", "rows": rows, "memory": mem},
                     argv=None if argv is None else [__file__, *argv])
    return rows


if __name__ == "__main__":
    main()
