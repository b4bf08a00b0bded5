"""``plot_results``: the template's figure from a results directory (a Figure; nothing saved)."""

from __future__ import annotations

from pathlib import Path

from isotropy.experiments._files import read_json

__all__ = ["plot_results"]


def plot_results(results_dir) -> dict:
    """``figures/isoscore_vs_n``: mean ± std over seeds against the sample size."""
    from matplotlib.figure import Figure

    summary = read_json(Path(results_dir) / "summary.json")
    fig = Figure(figsize=(4.5, 3.2), layout="constrained")
    ax = fig.subplots()
    ax.errorbar(summary["sample_sizes"], summary["isoscore_mean"], yerr=summary["isoscore_std"], marker="o",
                capsize=3)
    ax.set(xscale="log", xlabel="samples n", ylabel="IsoScore", title=f"{len(summary['seeds'])} seeds")
    ax.grid(alpha=0.3)
    return {"figures/isoscore_vs_n": fig}
