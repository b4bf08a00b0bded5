"""``prepare`` (load; write nothing) and ``run`` (compute and write numbers; never plot) of the template."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from isotropy.experiments._results import write_json, write_text

__all__ = ["prepare", "run"]

NAME = "_template"
PART_KEYS = ("sample_sizes", "isoscore")  # what run reads back from a seed's part file on --resume


def prepare(config, ctx) -> dict:
    """Load what the run needs (here: the population spectrum) before the results directory is touched."""
    return {"spectrum": config.decay ** np.arange(config.n_features)}


def _one_seed(spectrum: np.ndarray, sizes: list[int], seed: int) -> dict:
    from isotropy import isoscore

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((max(sizes), len(spectrum))) * np.sqrt(spectrum)
    return {"sample_sizes": list(sizes), "isoscore": [float(isoscore(X[:n])) for n in sizes]}


def run(config, results_dir, ctx) -> dict:
    """One part file per seed (kept on ``--resume``), then ``summary.json`` and the table ``summary.md``."""
    spectrum = ctx.prepared["spectrum"]
    records = []
    for seed in ctx.progress(iterable=config.seeds, desc=NAME, unit="seed"):
        part = f"seeds/seed_{seed}.json"
        record = ctx.read_part(part, seed=seed, keys=PART_KEYS)
        if record is None:
            record = _one_seed(spectrum, config.sample_sizes, seed)
            ctx.write_part(part, record, seed=seed)
        records.append(record)
    values = np.array([r["isoscore"] for r in records])
    summary = {"sample_sizes": config.sample_sizes, "seeds": list(config.seeds),
               "isoscore_mean": values.mean(axis=0).tolist(), "isoscore_std": values.std(axis=0).tolist()}
    write_json(Path(results_dir) / "summary.json", summary)
    rows = [f"| {n} | {m:.4f} | {s:.4f} |" for n, m, s in zip(config.sample_sizes, summary["isoscore_mean"],
                                                                summary["isoscore_std"])]
    write_text(Path(results_dir) / "summary.md", "\n".join(["| n | IsoScore | std |", "|---|---|---|", *rows]) + "\n")
    ctx.log(f"{NAME}: IsoScore at n={config.sample_sizes[-1]}: {summary['isoscore_mean'][-1]:.4f}")
    return summary
