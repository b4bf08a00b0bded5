"""Figures from a results directory (no re-run): the paper's Figures 2, 3 and 4.

Figure 2: IsoScore and silhouette against updates (mean over seeds, ±1 std band).
Figure 3: IsoScore against silhouette (seed means; colour = update).
Figure 4: the GLUE grid, one panel per model (row) and task (column), both metrics against updates.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from isotropy.experiments._files import read_json

__all__ = ["plot_glue_grid", "plot_results", "plot_setup"]


def _figure(**kwargs):
    """A matplotlib Figure outside pyplot: no global state, no backend switch (a notebook shows it as is)."""
    from matplotlib.figure import Figure

    return Figure(layout="constrained", **kwargs)


def _load(results_dir: Path):
    import pandas as pd

    curves = pd.read_csv(results_dir / "curves.csv")
    summary = read_json(results_dir / "summary.json")
    return curves, summary


def _title(summary) -> str:
    setup, name = summary.get("setup") or "", summary["data"]["name"]
    label = name if setup in ("", name) else f"{setup}: {name}"
    return f"{label} ({summary['data']['n_items']:,} items, {len(summary['seeds'])} seeds)"


def _band(ax, c, metric, color, label):
    x, mean, std = c["step"], c[f"{metric}_mean"], c[f"{metric}_std"]
    ax.plot(x, mean, color=color, label=label, lw=1.5)
    ax.fill_between(x, mean - std, mean + std, color=color, alpha=0.25, lw=0)


def plot_setup(results_dir, *, prefix: str = "") -> dict:
    """Figures 2 and 3 of one setup's results directory, keyed ``<prefix>figures/<name>``."""
    results_dir = Path(results_dir)
    c, summary = _load(results_dir)
    figures = {}
    fig = _figure(figsize=(9, 3.3))
    axes = fig.subplots(1, 2)
    for ax, metric, color, label in ((axes[0], "isoscore", "tab:blue", "IsoScore"),
                                     (axes[1], "silhouette", "tab:orange", "silhouette")):
        _band(ax, c, metric, color, label)
        ax.set_xlabel("update")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    fig.suptitle(f"{_title(summary)}: mean ± 1 std over seeds")
    figures[f"{prefix}figures/fig2_metrics_vs_updates"] = fig

    fig = _figure(figsize=(4.6, 3.8))
    ax = fig.subplots()
    points = ax.scatter(c["isoscore_mean"], c["silhouette_mean"], c=c["step"], cmap="viridis", s=8)
    fig.colorbar(points, ax=ax, label="update")
    corr = summary["correlation"]["seed_means"]
    ax.set_xlabel("IsoScore")
    ax.set_ylabel("silhouette")
    ax.set_title(f"{summary.get('setup') or summary['data']['name']}: Pearson r = {corr['pearson_r']:.3f}, "
                 f"Spearman ρ = {corr['spearman_rho']:.3f}", fontsize=9)
    ax.grid(alpha=0.3)
    figures[f"{prefix}figures/fig3_isoscore_vs_silhouette"] = fig
    return figures


def plot_glue_grid(results_dir) -> dict:
    """Figure 4: models (rows) x tasks (columns), IsoScore (left axis) and silhouette (right axis)."""
    results_dir = Path(results_dir)
    config = read_json(results_dir / "run.json")["config"]
    from isotropy.experiments.classifier_geometry.report import model_label

    models = [model_label(m) for m in (config.get("models") or [config["model"]])]
    tasks = list(config["tasks"])
    fig = _figure(figsize=(3.0 * len(tasks), 2.3 * len(models)))
    axes = fig.subplots(len(models), len(tasks), squeeze=False)
    for i, model in enumerate(models):
        for j, task in enumerate(tasks):
            ax = axes[i][j]
            sub = results_dir / model / task
            if not (sub / "curves.csv").is_file():
                ax.set_axis_off()
                ax.set_title(f"{task}: no results", fontsize=8)
                continue
            c, _ = _load(sub)
            _band(ax, c, "isoscore", "tab:blue", "IsoScore")
            right = ax.twinx()
            _band(right, c, "silhouette", "tab:orange", "silhouette")
            ax.set_title(f"{model} / {task}", fontsize=8)
            ax.tick_params(labelsize=7)
            right.tick_params(labelsize=7, colors="tab:orange")
            ax.tick_params(axis="y", colors="tab:blue")
            ax.set_ylabel("IsoScore", fontsize=8, color="tab:blue")
            right.set_ylabel("silhouette", fontsize=8, color="tab:orange")
            if i == len(models) - 1:
                ax.set_xlabel("update", fontsize=8)
    fig.suptitle("GLUE: IsoScore (blue, left) and silhouette (orange, right), mean ± 1 std over seeds", fontsize=9)
    return {"figures/fig4_glue_grid": fig}


def plot_results(results_dir) -> dict:
    """Every figure of a classifier-geometry results directory (a setup or the GLUE grid), keyed by path stem."""
    results_dir = Path(results_dir)
    meta = read_json(results_dir / "run.json")
    if meta.get("config", {}).get("task") == "glue":
        figures = {}
        for curves in sorted(results_dir.glob("*/*/curves.csv")):
            prefix = f"{curves.parent.relative_to(results_dir).as_posix()}/"
            figures.update(plot_setup(curves.parent, prefix=prefix))
        return {**figures, **plot_glue_grid(results_dir)}
    if not (results_dir / "curves.csv").is_file():
        raise FileNotFoundError(_no_curves(results_dir, meta))
    return plot_setup(results_dir)


def _no_curves(results_dir: Path, meta: dict) -> str:
    """Why a setup's folder has no ``curves.csv``, and how to get it: written once every seed has finished, it is
    rewritten from the seeds' files (``seeds/seed_<s>.json``) by ``--resume``, which trains only seeds without one."""
    seeds = sorted(int(m.group(1)) for p in (results_dir / "seeds").glob("seed_*.json")
                   if (m := re.fullmatch(r"seed_(\d+)\.json", p.name)))
    if not seeds:
        return (f"{results_dir} has no curves.csv: no seed has finished there yet "
                f"(run 'isotropy run classifier-geometry ... --resume').")
    command = meta.get("command")
    try:
        words = shlex.split(command) if isinstance(command, str) and " run classifier-geometry" in command else []
    except ValueError:  # a run.json edited by hand
        words = []
    if words:  # the run's own command, drawing the figures
        command = shlex.join([w for w in words if w not in ("--resume", "--no-plot")] + ["--resume"])
    else:  # a run started from Python records the Python command
        command = f"isotropy run classifier-geometry ... --results-dir {shlex.quote(str(results_dir))} --resume"
    names = ", ".join(str(s) for s in seeds)
    return (f"{results_dir} has no curves.csv (the per-update table), though seed{'s' if len(seeds) > 1 else ''} "
            f"{names} finished there (seeds/seed_<s>.json): rewrite it from them, training only the seeds without "
            f"a file, with '{command}'.")
