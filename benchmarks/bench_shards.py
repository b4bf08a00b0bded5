"""``isotropy measure DIR --workers 2`` on many one-row shards against the same rows in one file, in one run.

Writes ``--n-shards`` one-row ``.npy`` shards (float32, ``--dim`` features) and one ``.npy`` file of
the same rows, then times ``isotropy measure`` (default metrics, in this process through click's
runner, a ``LocalCluster`` of ``--workers`` processes each time) on

- **after**: the shard directory as :func:`isotropy.io.shards.read_shards` reads it now (shards
  cut and joined into chunks of about 64 MiB before any metric runs: here one chunk);
- **before**: the same directory read one chunk per shard (``_CHUNK_BYTES`` set to one byte,
  which for one-row shards is the graph of the reader before coalescing: one task per shard),
  on ``--before-shards`` shards (default 300: the 1,500-shard run did not finish in 300 s);
- the one file of the same rows, for each;

and prints the ratios shards / one file. The values of each pair are equal (checked here and in
tests/test_distributed_shards.py). Timings on a shared machine are noisy; compare the ratios.

    nice -n 10 .venv/bin/python benchmarks/bench_shards.py
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
from _common import low_rank_data, timed


def _measure(source: Path, out: Path, workers: int) -> dict:
    from click.testing import CliRunner

    from isotropy.cli import cli

    result = CliRunner().invoke(cli, ["measure", str(source), "--workers", str(workers), "--no-progress",
                                      "--json", str(out)])
    if result.exit_code != 0:
        raise RuntimeError(result.output)
    return json.loads(out.read_text())


def _write(root: Path, X: np.ndarray) -> tuple[Path, Path]:
    shards = root / f"shards-{len(X)}"
    shards.mkdir()
    for i, row in enumerate(X):
        np.save(shards / f"part-{i:05d}.npy", row[None])
    single = root / f"one-file-{len(X)}.npy"
    np.save(single, X)
    return shards, single


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-shards", type=int, default=1500)
    parser.add_argument("--before-shards", type=int, default=300)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    from isotropy.io import shards as shards_module

    X = low_rank_data(args.n_shards, args.dim)
    rows = []
    with tempfile.TemporaryDirectory() as work:
        root = Path(work)
        _measure(_write(root, X[:100])[1], root / "warm.json", args.workers)  # imports, not timed
        for label, n, chunk_bytes in (("after", args.n_shards, shards_module._CHUNK_BYTES),
                                      ("before", args.before_shards, 1)):
            shards, single = _write(root, X[:n])
            default = shards_module._CHUNK_BYTES
            shards_module._CHUNK_BYTES = chunk_bytes
            try:
                sharded, t_shards, _ = timed(lambda: _measure(shards, root / "s.json", args.workers))  # noqa: B023
            finally:
                shards_module._CHUNK_BYTES = default
            one, t_one, _ = timed(lambda: _measure(single, root / "o.json", args.workers))  # noqa: B023
            for name, value in one["values"].items():
                if not np.isclose(sharded["values"][name], value, rtol=1e-9, equal_nan=True):
                    raise AssertionError(f"{label}: {name} {sharded['values'][name]} != {value}")
            rows.append((label, n, sharded["chunking"]["n_chunks"], t_shards, t_one))
    print(f"isotropy measure --workers {args.workers}, default metrics, {args.dim} float32 features\n")
    print("| reader | one-row shards | chunks | shards s | one file s | shards / one file |\n|---|---:|---:|---:|---:|---:|")
    for label, n, chunks, t_shards, t_one in rows:
        print(f"| {label} | {n} | {chunks} | {t_shards:.1f} | {t_one:.1f} | {t_shards / t_one:.2f} |")


if __name__ == "__main__":
    main()
