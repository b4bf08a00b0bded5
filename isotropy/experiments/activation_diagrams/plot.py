"""Activation diagrams (Rudman & Eickhoff, Figure 1 style): mean |value| per dimension, one panel per model."""

from __future__ import annotations

from pathlib import Path

from isotropy.experiments._files import read_json

__all__ = ["make_figure", "plot_results"]


def _label(condition: str) -> str:
    if condition == "pretrained":
        return "pre-trained"
    if condition == "base":
        return "fine-tuned, no regulariser"
    method, _, value = condition.partition(":")
    return f"I-STAR, λ = {value}" if method == "istar" else f"CosReg, weight {value}"


def make_figure(results: dict):
    """A matplotlib Figure: one panel per model state; the three largest dimensions are labelled."""
    import numpy as np
    from matplotlib.figure import Figure

    rows = results["summary"]
    n_cols = 2 if len(rows) > 1 else 1
    n_rows = -(-len(rows) // n_cols)
    fig = Figure(figsize=(4.0 * n_cols, 2.2 * n_rows), layout="constrained")
    axes = fig.subplots(n_rows, n_cols, squeeze=False, sharex=True).ravel()
    for ax, row in zip(axes, rows):
        profile = np.asarray(row["profile"])
        # one line per dimension: bars narrower than a pixel are snapped away by the renderer, which hid
        # some of the tallest dimensions; a line is always drawn at least one pixel wide
        ax.vlines(np.arange(profile.size), 0.0, profile, color="#0072B2", linewidth=0.6)
        for i in row["top_dimensions"][:3]:
            ax.annotate(str(i), (i, profile[i]), textcoords="offset points", xytext=(0, 2), ha="center", fontsize=7,
                        color="#D55E00")
        ax.set_ylim(0, profile.max() * 1.15)
        share = row["rogue_share"].get("1")
        ax.set_title(f"{_label(row['condition'])}: max/median {row['max_over_median']:.1f}"
                     + (f", rogue share (k=1) {share:.2f}" if share is not None else ""), fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes[len(rows):]:
        ax.set_visible(False)
    for ax in axes[(n_rows - 1) * n_cols:]:
        ax.set_xlabel("dimension")
    for ax in axes[::n_cols]:
        ax.set_ylabel("mean |value|")
    fig.suptitle(f"{Path(results['model']).name}, {results['task']} validation sentence embeddings", fontsize=10)
    return fig


def plot_results(results_dir) -> dict:
    """``{"figures/activation_diagrams": Figure}`` from ``results_dir/results.json``."""
    results = read_json(Path(results_dir) / "results.json")
    return {"figures/activation_diagrams": make_figure(results)}
