"""Exact ``kneighbors`` on data whose distances tie, against the same shape of Gaussian data, before and after.

Repeated rows, one-hot rows and 0/1 lattice points tie at every distance, and Gaussian rows of which every fourth
is one padding row tie wherever that row is among the nearest: the float32 certificate cannot separate such a
row's k-th neighbour from the others, so it went to the float64 fallbacks (``_float64_candidates``,
``_exact_rows``), whose work then decided the time. For each kind of data (n × d float64, ``k`` neighbours) this
prints, per checkout (this one and each ``--compare DIR``, a ``git worktree``) and per loops (numpy, compiled):
the fastest of ``--rounds`` searches, each in a fresh interpreter with that checkout first on ``PYTHONPATH`` (the
checkouts alternating), the ratio to the same checkout's search on Gaussian data, and the ratio to scikit-learn's
brute-force ``NearestNeighbors`` (float64 products: not exact where the distances tie or nearly do) timed in the
same interpreter; and whether every checkout gives the stable sort of scipy's ``cdist`` (ties by index).

``--dask ROWS`` times the dask search instead (``isotropy.distributed.kneighbors`` of a dask array in chunks of
``ROWS`` rows, on dask's threaded scheduler), whose off-diagonal tiles run the cross search.

    nice -n 5 .venv/bin/python benchmarks/bench_neighbors_ties.py [--n 4000] [--compare DIR] [--rounds 2] [--dask ROWS]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("gaussian", "identical", "one-hot", "lattice", "padded")

_CHILD = """
import hashlib, json, sys, time
import numpy as np
from sklearn.neighbors import NearestNeighbors
from isotropy import kneighbors
kind, n, d, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
sys.path.insert(0, sys.argv[5])
from bench_neighbors_ties import _data
X = _data(kind, n, d)
chunk = int(sys.argv[6])
if chunk:  # the dask search, on dask's threaded scheduler: tiles of `chunk` rows
    import dask
    import dask.array as da
    import isotropy.distributed

    def search(A):
        return dask.compute(*isotropy.distributed.kneighbors(da.from_array(A, chunks=(chunk, A.shape[1])),
                                                             n_neighbors=k, chunk_size=chunk))
else:
    def search(A):
        return kneighbors(A, n_neighbors=k)
search(X[:300])  # imports and compilation outside the clock
start = time.perf_counter()
dist, ind = search(X)
ours = time.perf_counter() - start
start = time.perf_counter()
NearestNeighbors(n_neighbors=k, algorithm="brute").fit(X).kneighbors()
peer = time.perf_counter() - start
print(json.dumps({"ours": ours, "peer": peer, "ind": hashlib.sha256(np.ascontiguousarray(ind)).hexdigest()}))
"""


def _data(kind, n, d):
    rng = np.random.default_rng(0)
    return {"gaussian": lambda: rng.standard_normal((n, d)), "identical": lambda: np.ones((n, d)),
            "one-hot": lambda: np.eye(d)[rng.integers(0, d, n)],
            "lattice": lambda: rng.integers(0, 2, (n, d)) * 1.0, "padded": lambda: _padded(rng, n, d)}[kind]()


def _padded(rng, n, d):
    """Gaussian rows, every fourth one the same row (as token embeddings with their padding)."""
    X = rng.standard_normal((n, d))
    X[::4] = X[1]
    return X


def _reference_digest(kind, n, d, k):
    """sha256 of the indices of the stable sort of cdist (ties by index), in blocks of rows."""
    import hashlib

    from scipy.spatial.distance import cdist

    X = _data(kind, n, d)
    ind = np.empty((n, k), dtype=np.intp)
    for s in range(0, n, 1000):
        D = cdist(X[s:s + 1000], X)
        D[np.arange(D.shape[0]), np.arange(s, s + D.shape[0])] = np.inf
        ind[s:s + 1000] = np.argsort(D, axis=1, kind="stable")[:, :k]
    return hashlib.sha256(np.ascontiguousarray(ind)).hexdigest()


def _run(tree, kind, n, d, k, jit, chunk=0):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")])),
           "ISOTROPY_JIT": jit}
    out = subprocess.run([sys.executable, "-c", _CHILD, kind, str(n), str(d), str(k), str(Path(__file__).parent),
                          str(chunk)], check=True,
                         capture_output=True, text=True, cwd=tree, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4000)
    parser.add_argument("--d", type=int, default=32)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--dask", type=int, default=0, metavar="ROWS",
                        help="the dask search (isotropy.distributed.kneighbors, threaded scheduler) in tiles of ROWS")
    parser.add_argument("--compare", action="append", default=[], metavar="DIR",
                        help="also another checkout (repeatable)")
    args = parser.parse_args()
    trees = {"this checkout": ROOT, **{Path(p).name: Path(p).resolve() for p in args.compare}}
    loops = {"numpy": "0", "compiled": "1"}
    runs = {}
    for _ in range(args.rounds):
        for kind in KINDS:
            for (name, tree) in trees.items():
                for loop, jit in loops.items():
                    got = _run(tree, kind, args.n, args.d, args.k, jit, args.dask)
                    best = runs.get((name, loop, kind))
                    runs[(name, loop, kind)] = got if best is None or got["ours"] < best["ours"] else best
    where = f"the dask search in tiles of {args.dask:,} rows (threaded scheduler)" if args.dask else "in memory"
    print(f"n = {args.n:,}, d = {args.d}, float64, k = {args.k}, {where}; fastest of {args.rounds} searches in fresh "
          f"interpreters; tied / Gaussian: against the same checkout's search on Gaussian data; / peer: against "
          f"scikit-learn's brute force in the same interpreter")
    print("| checkout | loops | " + " | ".join(f"{kind} s" for kind in KINDS) + " | "
          + " | ".join(f"{kind} / Gaussian" for kind in KINDS[1:]) + " | " + " | ".join(
              f"{kind} / peer" for kind in KINDS) + " |")
    print("|---|---|" + "---:|" * (3 * len(KINDS) - 1))
    for name in trees:
        for loop in loops:
            r = {kind: runs[(name, loop, kind)] for kind in KINDS}
            print(f"| {name} | {loop} | " + " | ".join(f"{r[kind]['ours']:.2f}" for kind in KINDS) + " | "
                  + " | ".join(f"{r[kind]['ours'] / r['gaussian']['ours']:.1f}" for kind in KINDS[1:]) + " | "
                  + " | ".join(f"{r[kind]['ours'] / r[kind]['peer']:.1f}" for kind in KINDS) + " |")
    for kind in KINDS:
        reference = _reference_digest(kind, args.n, args.d, args.k)
        same = all(runs[(name, loop, kind)]["ind"] == reference for name in trees for loop in loops)
        print(f"{kind}: every checkout and loop gives the stable sort of cdist (ties by index): "
              f"{'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
