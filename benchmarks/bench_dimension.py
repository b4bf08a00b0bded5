"""Benchmark: intrinsic dimension (TwoNN, Levina–Bickel MLE, local MLE) vs scikit-dimension.

Same data for both: float32, n = 20,000 x d = 384, points near a 10-dimensional linear subspace
(Gaussian latent, random mixing, isotropic noise of scale 0.1). Each repeat runs ours and
scikit-dimension's estimator back to back (interleaved); the table gives the median wall time
and the median CPU time (``time.process_time``, all threads of this process) over the repeats,
the ratios skdim / ours measured in the same run, and the two results with their difference.
Timings on a shared CPU are noisy: read the ratios, not the absolute times.

``--json PATH`` also writes the rows, each with its target speed-up and verdict (``TARGETS``: the wall
ratio at least the target, fixed here before any run), and what ran (``_common.write_record``); the docs'
summary reads the committed one, ``docs/runs/benchmarks/dimension/bench.json``, through value markers.

Usage::

    nice -n 5 .venv/bin/python benchmarks/bench_dimension.py [--repeats 3] [--n 20000] [--d 384] [--json PATH]
"""

from __future__ import annotations

import argparse
import statistics
import warnings

import numpy as np
from _common import low_rank_data, timed, write_record

from isotropy import local_mle_dimension, mle_dimension, twonn_dimension

# The speed-up over scikit-dimension each estimator is held to (wall time, same run); None: measured, no target.
TARGETS = {"twonn": 5.0, "mle": 5.0, "local_mle": None}


def verdict(ratio: float, target: float | None) -> str:
    """``"met"`` when ``ratio`` reaches ``target``, ``"not met"`` below it, ``"no target"`` without one."""
    return "no target" if target is None else ("met" if ratio >= target else "not met")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--json", metavar="PATH", help="also write the rows and what ran as JSON to PATH")
    args = parser.parse_args(argv)
    import skdim

    X = low_rank_data(args.n, args.d)
    cases = [
        ("twonn", "twonn_dimension (linear fit, discard 0.1)", lambda: twonn_dimension(X),
         lambda: skdim.id.TwoNN().fit(X).dimension_),
        ("mle", "mle_dimension (k=20, harmonic = skdim comb='mle')", lambda: mle_dimension(X, n_neighbors=20, averaging="harmonic"),
         lambda: skdim.id.MLE().fit(X, n_neighbors=20).dimension_),
        ("local_mle", "local_mle_dimension (k=100, per point)", lambda: local_mle_dimension(X, n_neighbors=100),
         lambda: skdim.id.MLE().fit(X, n_neighbors=100).dimension_pw_),
    ]
    print(f"data: float32, n={args.n:,}, d={args.d}; repeats: {args.repeats} (median), interleaved", flush=True)
    print("| estimator | skdim wall (s) | ours wall (s) | ratio wall | skdim CPU (s) | ours CPU (s) | ratio CPU "
          "| skdim value | ours value | max abs difference |", flush=True)
    print("|" + "---|" * 10, flush=True)
    records = []
    for case, name, ours_fn, ref_fn in cases:
        rows = {"ours": [], "ref": []}
        for _ in range(args.repeats):
            ours, *t_ours = timed(ours_fn)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # skdim's own deprecation noise
                ref, *t_ref = timed(ref_fn)
            rows["ours"].append(t_ours)
            rows["ref"].append(t_ref)
        wall_o, cpu_o = (statistics.median(t[i] for t in rows["ours"]) for i in (0, 1))
        wall_r, cpu_r = (statistics.median(t[i] for t in rows["ref"]) for i in (0, 1))
        diff = float(np.max(np.abs(np.asarray(ours) - np.asarray(ref))))
        shown = (lambda v: f"{float(v):.6f}") if np.ndim(ours) == 0 else (lambda v: f"mean {float(np.mean(v)):.6f}")
        print(f"| {name} | {wall_r:.2f} | {wall_o:.2f} | {wall_r / wall_o:.1f}x | {cpu_r:.2f} | {cpu_o:.2f} "
              f"| {cpu_r / cpu_o:.1f}x | {shown(ref)} | {shown(ours)} | {diff:.1e} |", flush=True)
        records.append({"case": case, "estimator": name, "peer_wall_s": wall_r, "ours_wall_s": wall_o,
                        "ratio_wall": wall_r / wall_o, "peer_cpu_s": cpu_r, "ours_cpu_s": cpu_o,
                        "ratio_cpu": cpu_r / cpu_o, "peer_value": float(np.mean(ref)), "ours_value": float(np.mean(ours)),
                        "value": "mean over points" if np.ndim(ours) else "estimate", "max_abs_difference": diff,
                        "target": TARGETS[case], "verdict": verdict(wall_r / wall_o, TARGETS[case])})
    if args.json:
        write_record(args.json, {"n": args.n, "d": args.d, "dtype": "float32", "repeats": args.repeats,
                                 "statistic": "median of the repeats, ours and the peer interleaved", "rows": records},
                     argv=None if argv is None else [__file__, *argv])
    return records


if __name__ == "__main__":
    main()
