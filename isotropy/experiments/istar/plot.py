"""Figures of the I-STAR sweep from ``results.json``: performance vs IsoScore* and TwoNN dimension per λ."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from isotropy.experiments._files import read_json

__all__ = ["plot_results"]

_METRIC_NAMES = {"accuracy": "accuracy", "f1": "F1", "matthews": "Matthews correlation"}


def _label(row) -> str:
    if row["method"] == "none":
        return "base"
    if row["method"] == "cosreg":
        return f"CosReg ({row['lambda']:g})"
    return f"λ={row['lambda']:g}"


def _lambda_colours(lams) -> dict:
    """λ < 0 in blues, λ > 0 in reds, darker for larger |λ|; never the pale middle of a diverging map."""
    import matplotlib

    colours = {}
    for sign, name in ((-1, "Blues"), (1, "Reds")):
        side = sorted((lam for lam in lams if np.sign(lam) == sign), key=abs)
        cmap = matplotlib.colormaps[name]
        for i, lam in enumerate(side):
            colours[lam] = cmap(0.5 + 0.45 * (i / max(1, len(side) - 1)) if len(side) > 1 else 0.75)
    return colours


def plot_results(results_dir) -> dict:
    """``figures/performance_vs_isoscore_star`` and ``figures/twonn_dimension`` as matplotlib Figures.

    Parameters
    ----------
    results_dir : path-like
        A directory written by ``isotropy run istar`` (holding ``results.json``, rewritten after
        every finished run, so an unfinished sweep can be drawn too).

    Returns
    -------
    dict of str to matplotlib.figure.Figure
        Keyed by the path of each figure relative to ``results_dir``, without suffix.
    """
    from matplotlib.figure import Figure

    results_dir = Path(results_dir)
    path = results_dir / "results.json"
    if not path.is_file():
        raise FileNotFoundError(f"{str(results_dir)!r} has no results.json: no run of the sweep has finished "
                                f"there yet (expected a directory written by 'isotropy run istar').")
    results = read_json(path)
    rows = results["summary"]
    if not rows:
        raise ValueError(f"{path} holds no finished runs to plot.")
    metric = _METRIC_NAMES.get(results.get("metric"), results.get("metric", "score"))
    seeds = max(r["n_seeds"] for r in rows)
    partial = "" if results.get("complete", True) else (
        f" — partial: {results['finished_runs']} of {results['planned_runs']} runs")
    figures = {}
    lams = sorted({r["lambda"] for r in rows if r["method"] == "istar"})
    colours = _lambda_colours(lams)

    def colour(row):
        if row["method"] == "none":
            return "black"
        if row["method"] == "cosreg":
            return "tab:green"
        return colours[row["lambda"]]

    # Figure 5 of Rudman & Eickhoff: task performance against IsoScore* of validation representations
    fig = Figure(figsize=(6.4, 4.6), layout="constrained")
    ax = fig.subplots()
    for row in rows:
        marker = {"none": "s", "istar": "o", "cosreg": "^"}[row["method"]]
        ax.errorbar(row["isoscore_star_mean"], row["score_mean"], xerr=row["isoscore_star_std"],
                    yerr=row["score_std"], fmt=marker, color=colour(row), ecolor=colour(row), capsize=3,
                    markersize=7, label=_label(row))
    ax.set_xlabel("IsoScore* of validation sentence representations")
    ax.set_ylabel(f"validation {metric}")
    spread = f"mean ± std over {seeds} seeds" if seeds > 1 else "1 seed"
    ax.set_title(f"Performance vs isotropy ({spread}){partial}", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2, loc="best")
    figures["figures/performance_vs_isoscore_star"] = fig

    # Figure 7: TwoNN intrinsic dimension of validation representations per condition
    fig = Figure(figsize=(6.4, 4.0), layout="constrained")
    ax = fig.subplots()
    xs = range(len(rows))
    ax.bar(xs, [r["twonn_dimension_mean"] for r in rows], yerr=[r["twonn_dimension_std"] for r in rows],
           color=[colour(r) for r in rows], capsize=3, edgecolor="black", linewidth=0.5)
    ax.set_xticks(list(xs), [_label(r) for r in rows], rotation=30, ha="right")
    ax.set_ylabel("TwoNN intrinsic dimension")
    ax.set_title(f"TwoNN dimension of validation representations ({spread}){partial}", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    figures["figures/twonn_dimension"] = fig
    return figures
