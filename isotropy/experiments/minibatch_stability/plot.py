"""Figure of the mini-batch stability experiment: score against batch size, one line per ζ (Figure 4 style)."""

from __future__ import annotations

from pathlib import Path

from isotropy.experiments._files import read_json

__all__ = ["make_figure", "plot_results"]


def make_figure(results: dict):
    """A matplotlib Figure: one panel per cloud, mean ± sd over the batches of each size, dashed whole-cloud IsoScore.

    On the synthetic cloud, dotted lines give the Wishart prediction of each ζ.
    """
    from matplotlib.figure import Figure

    clouds = results["clouds"]
    fig = Figure(figsize=(4.2 * len(clouds), 3.4), layout="constrained")
    axes = fig.subplots(1, len(clouds), squeeze=False, sharey=True)[0]
    zetas = results["zetas"]
    colors = {z: c for z, c in zip(zetas, ["#000000", "#0072B2", "#009E73", "#E69F00", "#CC79A7", "#D55E00",
                                          "#56B4E9", "#F0E442"] * 4)}
    for ax, (name, cloud) in zip(axes, clouds.items()):
        for z in zetas:
            rows = sorted((r for r in cloud["summary"] if r["zeta"] == z), key=lambda r: r["batch_size"])
            if not rows:
                continue
            x = [r["batch_size"] for r in rows]
            mean = [r["mean"] for r in rows]
            label = "IsoScore (ζ = 0)" if z == 0 else f"IsoScore*, ζ = {z:g}"
            ax.plot(x, mean, marker="o", ms=3, color=colors[z], label=label)
            ax.fill_between(x, [r["mean"] - r["std"] for r in rows], [r["mean"] + r["std"] for r in rows],
                            color=colors[z], alpha=0.18, lw=0)
            if "predicted" in rows[0]:
                ax.plot(x, [r["predicted"] for r in rows], ls=":", lw=1.2, color=colors[z])
        ax.axhline(cloud["whole_cloud"], ls="--", color="0.3", lw=1.2, label="whole cloud IsoScore")
        ax.set_xscale("log", base=2)
        ax.set_xticks(cloud["batch_sizes"], [str(b) for b in cloud["batch_sizes"]], fontsize=7)
        ax.minorticks_off()
        ax.set_xlabel("mini-batch size (rows)")
        title = (f"Gaussian, d = {cloud['n_features']}, decay {cloud['decay']:g}" if cloud["kind"] == "synthetic"
                 else f"{cloud['task']} {cloud['split']}, {Path(cloud['model']).name}")
        ax.set_title(title, fontsize=10)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("score (mean ± sd over batches)")
    handles, labels = axes[0].get_legend_handles_labels()
    if any(c["kind"] == "synthetic" for c in clouds.values()):
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], ls=":", color="0.3"))
        labels.append("Wishart prediction")
    fig.legend(handles, labels, loc="outside right center", fontsize=8, frameon=False)
    return fig


def plot_results(results_dir) -> dict:
    """``{"figures/minibatch_stability": Figure}`` from ``results_dir/results.json`` (saved by the caller)."""
    results = read_json(Path(results_dir) / "results.json")
    return {"figures/minibatch_stability": make_figure(results)}
