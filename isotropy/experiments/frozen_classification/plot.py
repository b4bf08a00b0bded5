"""Figure of the frozen-encoder classification test: accuracy and I(W) per method."""

from __future__ import annotations

from pathlib import Path

from isotropy.experiments._files import read_json
from isotropy.experiments._style import mark_zeros_on_log_axis

__all__ = ["make_figure", "plot_results"]


def make_figure(results: dict):
    """A matplotlib Figure: validation accuracy (bars from zero, ± sd) and I(W) (log scale) per method."""
    from matplotlib.figure import Figure

    rows = results["summary"]
    names = [r["method"] for r in rows]
    x = range(len(rows))
    fig = Figure(figsize=(7.5, 3.0), layout="constrained")
    ax_acc, ax_iso = fig.subplots(1, 2)
    ax_acc.bar(x, [100 * r["accuracy"] for r in rows], yerr=[100 * r["accuracy_sd"] for r in rows], color="#0072B2",
               capsize=3)
    ax_acc.set_ylim(0.0, 100.0)
    if results.get("majority_class") is not None:
        ax_acc.axhline(100 * results["majority_class"], ls="--", color="0.3", lw=1, label="majority class")
        ax_acc.legend(fontsize=7, frameon=False, loc="lower right")
    ax_acc.set_ylabel("validation accuracy (%)")
    ax_iso.bar(x, [r["partition_isotropy"] for r in rows], color="#D55E00")
    ax_iso.set_yscale("log")
    mark_zeros_on_log_axis(ax_iso, list(x), [r["partition_isotropy"] for r in rows], color="#D55E00")
    if any(line.get_marker() == "v" for line in ax_iso.get_lines()):
        ax_iso.legend(fontsize=8, frameon=False)
    ax_iso.set_ylabel("I(W), validation (log scale)")
    for ax in (ax_acc, ax_iso):
        ax.set_xticks(list(x), names, rotation=30, ha="right", fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"{results['task']}, frozen {Path(results['model']).name}: logistic regression", fontsize=10)
    return fig


def plot_results(results_dir) -> dict:
    """``{"figures/frozen_classification": Figure}`` from ``results_dir/results.json`` (saved by the caller)."""
    results = read_json(Path(results_dir) / "results.json")
    return {"figures/frozen_classification": make_figure(results)}
