"""The template experiment: IsoScore of anisotropic Gaussian samples against the sample size.

Copy this module's shape for a new experiment (see the package docstring): a pydantic config
model, ``prepare`` (load; write nothing), ``run`` (compute and write numbers; never plot), ``plot``
(return matplotlib Figures keyed by their path under the results directory) and the
:class:`~isotropy.experiments._runner.Experiment` record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import numpy as np
from pydantic import Field

from isotropy.experiments._config import ExperimentConfig, Seeds, expects
from isotropy.experiments._results import write_json, write_text
from isotropy.experiments._runner import Experiment

__all__ = ["EXPERIMENT", "TemplateConfig", "plot", "prepare", "run"]

NAME = "_template"


class TemplateConfig(ExperimentConfig):
    """Every key, typed and range-checked; the values live in ``isotropy/configs/_template/default.yaml``."""

    n_features: int = Field(ge=2)
    decay: float = Field(gt=0, le=1)
    sample_sizes: list[Annotated[int, Field(ge=2)]] = expects("a non-empty list of ints >= 2", min_length=1)
    seeds: Seeds


def prepare(config: TemplateConfig, ctx) -> dict:
    """Load what the run needs (here: the population covariance) before the results directory is touched."""
    return {"spectrum": config.decay ** np.arange(config.n_features)}


def _one_seed(spectrum: np.ndarray, sizes: list[int], seed: int) -> dict:
    from isotropy import isoscore

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((max(sizes), len(spectrum))) * np.sqrt(spectrum)
    return {"sample_sizes": list(sizes), "isoscore": [float(isoscore(X[:n])) for n in sizes]}


def run(config: TemplateConfig, results_dir: Path, ctx) -> dict:
    """One part file per seed (kept on ``--resume``), then the summary and its table."""
    spectrum = ctx.prepared["spectrum"]
    records = []
    for seed in ctx.progress(iterable=config.seeds, desc=NAME, unit="seed"):
        part = f"seeds/seed_{seed}.json"
        record = ctx.read_part(part, seed=seed)
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


def plot(results_dir) -> dict:
    """``figures/isoscore_vs_n``: mean ± std over seeds against the sample size (a Figure; nothing saved)."""
    import json

    from matplotlib.figure import Figure

    summary = json.loads((Path(results_dir) / "summary.json").read_text())
    fig = Figure(figsize=(4.5, 3.2), layout="constrained")
    ax = fig.subplots()
    ax.errorbar(summary["sample_sizes"], summary["isoscore_mean"], yerr=summary["isoscore_std"], marker="o",
                capsize=3)
    ax.set(xscale="log", xlabel="samples n", ylabel="IsoScore", title=f"{len(summary['seeds'])} seeds")
    ax.grid(alpha=0.3)
    return {"figures/isoscore_vs_n": fig}


def report(results: dict, results_dir) -> str:
    """What the command prints when the run has finished."""
    return (Path(results_dir) / "summary.md").read_text()


EXPERIMENT = Experiment(
    name=NAME,
    config_model=TemplateConfig,
    prepare=prepare,
    run=run,
    plot=plot,
    report=report,
    default_setup="default",
    resume_keys=frozenset({"seeds"}),
    shortcuts=(("--decay", "decay", "Ratio of consecutive covariance eigenvalues"),),
    help="The template experiment: IsoScore of anisotropic Gaussian samples against the sample size.",
)
