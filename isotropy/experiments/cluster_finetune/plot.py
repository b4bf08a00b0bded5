"""Figures of the cluster fine-tuning experiment: per-layer geometry after training, and over training."""

from __future__ import annotations

from pathlib import Path

from isotropy.experiments._files import read_json
from isotropy.experiments._style import mark_zeros_on_log_axis

__all__ = ["make_figures", "plot_results"]

_COLORS = {"pretrained": "0.4", "baseline": "#0072B2", "cluster": "#D55E00"}


def _layers_figure(results: dict):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.5, 3.0), layout="constrained")
    ax_iso, ax_mean = fig.subplots(1, 2)
    for row in results["summary"]:
        layers = [r["layer"] for r in row["layers"]]
        color = _COLORS.get(row["condition"], None)
        values = [r["partition_isotropy"] for r in row["layers"]]
        ax_iso.plot(layers, values, marker="o", ms=3, color=color, label=row["condition"])
        mark_zeros_on_log_axis(ax_iso, layers, values, color=color)
        ax_mean.plot(layers, [r["zero_mean_ratio"] for r in row["layers"]], marker="o", ms=3, color=color,
                     label=row["condition"])
    pooled = "[CLS]" if results["pooling"] in ("first", "cls") else "mean-pooled"
    ax_iso.set_yscale("log")
    ax_iso.set_ylabel(f"I(W) of {pooled} vectors")
    ax_mean.set_ylabel("zero-mean ratio (0 = zero-mean)")
    ax_mean.set_ylim(0, 1)
    for ax in (ax_iso, ax_mean):
        ax.set_xlabel("transformer layer")
        ax.grid(alpha=0.3)
    ax_mean.legend(fontsize=8, frameon=False)
    if any(line.get_marker() == "v" for line in ax_iso.get_lines()):
        ax_iso.legend(handles=[line for line in ax_iso.get_lines() if line.get_marker() == "v"][:1], fontsize=8,
                      frameon=False)
    fig.suptitle(f"{results['task']} validation, {Path(results['model']).name} after {results['epochs']} epoch(s)",
                 fontsize=10)
    return fig


def _curves_figure(results: dict, metric: str = "partition_isotropy"):
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    runs = {name: [c for c in curve if c["metric"] == metric] for name, curve in results["curves"].items()}
    runs = {name: curve for name, curve in runs.items() if curve}
    fig = Figure(figsize=(3.8 * max(1, len(runs)), 3.0), layout="constrained")
    axes = fig.subplots(1, max(1, len(runs)), squeeze=False, sharey=True)[0]
    n_layers = 1 + max((c["layer"] for curve in runs.values() for c in curve), default=0)
    cmap = colormaps["viridis"]
    for ax, (name, curve) in zip(axes, runs.items()):
        for layer in range(n_layers):
            points = sorted((c["step"], c["value"]) for c in curve if c["layer"] == layer)
            if points:
                color = cmap(layer / max(1, n_layers - 1))
                ax.plot(*zip(*points), color=color, label=f"layer {layer}")
                mark_zeros_on_log_axis(ax, *zip(*points), color=color)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("training step")
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("I(W) of the probe's pooled vectors" if metric == "partition_isotropy" else metric)
    axes[-1].legend(fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return fig


def make_figures(results: dict) -> dict:
    """``{"figures/layers": ..., "figures/training_curves": ...}`` (matplotlib Figures)."""
    figures = {"figures/layers": _layers_figure(results)}
    if any(results["curves"].values()):
        figures["figures/training_curves"] = _curves_figure(results)
    return figures


def plot_results(results_dir) -> dict:
    """The figures of ``results_dir/results.json``."""
    return make_figures(read_json(Path(results_dir) / "results.json"))
