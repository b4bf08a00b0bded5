"""Figures of an sts-isotropy results directory (no re-run): Spearman per method, and the sweep."""

from __future__ import annotations

from pathlib import Path

from isotropy.experiments._files import read_json

__all__ = ["plot_results"]


def _methods_figure(results):
    import matplotlib
    from matplotlib.figure import Figure

    from isotropy.experiments.sts_isotropy.report import LEFT_OUT_MARK, correlation, left_out, seed_values

    agg = results["config"]["aggregate"]
    names = list(results["datasets"])
    methods = list(next(iter(results["datasets"].values()))["methods"])
    fig = Figure(figsize=(12, 4.2), layout="constrained")
    ax, ax_iso = fig.subplots(1, 2, gridspec_kw={"width_ratios": [2.2, 1]})
    width = 0.8 / len(methods)
    cmap = matplotlib.colormaps["tab10"]
    for m, method in enumerate(methods):
        rows = [results["datasets"][n]["methods"][method] for n in names]
        ys = [100 * correlation(row, "spearman", agg) for row in rows]
        spread = [[100 * v for v in seed_values(row, "spearman", agg)] for row in rows]
        # the seed spread (min-max) of a row that depends on the seed, as an error bar
        yerr = [[y - min(s) for y, s in zip(ys, spread)], [max(s) - y for y, s in zip(ys, spread)]]
        random = any(row.get("depends_on_seed") for row in rows)
        mark = LEFT_OUT_MARK if any(left_out(row) for row in rows) else ""  # pairs left out: results.md says which
        ax.bar([i + (m - (len(methods) - 1) / 2) * width for i in range(len(names))], ys, width, label=method + mark,
               color=cmap(m), yerr=yerr if random else None, error_kw={"elinewidth": 0.8, "capsize": 1.5})
        iw = [results["datasets"][n]["methods"][method]["I(W)"] for n in names]
        iso = [results["datasets"][n]["methods"][method]["IsoScore"] for n in names]
        ax_iso.scatter([sum(iw) / len(iw)], [sum(iso) / len(iso)], color=cmap(m), s=40)
    ax.set_xticks(range(len(names)), names)
    seeds = results.get("seeds") or []
    ax.set_ylabel("Spearman x100" + (f" (mean of {len(seeds)} seeds, bars: min-max)" if len(seeds) > 1 else ""))
    values = [100 * correlation(results["datasets"][n]["methods"][m], "spearman", agg) for n in names for m in methods]
    # bars start at zero: a negative correlation is drawn below the axis, never cut off
    ax.set_ylim(min(0.0, min(values) * 1.1), max(0.0, max(values)) * 1.08 + 1)
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.1))
    if any(left_out(row) for block in results["datasets"].values() for row in block["methods"].values()):
        ax.set_xlabel(f"{LEFT_OUT_MARK} pairs with an undefined cosine (a zero vector after the transform) left out: "
                      f"see results.md", fontsize=7)
    fit = "evaluated sentences" if results["config"]["fit_on"] == "self" else results["config"]["fit_on"]
    ax.set_title(f"{Path(str(results['config']['model'])).name}: STS with transforms fitted on {fit}", fontsize=9)
    ax_iso.set_xlim(0, 1.05)
    ax_iso.set_ylim(0, 1.05)
    ax_iso.set_xlabel("I(W) (mean over data sets)")
    ax_iso.set_ylabel("IsoScore (mean over data sets)")
    ax_iso.set_title("isotropy after each transform", fontsize=9)
    return fig


def _sweep_figure(results):
    from matplotlib.figure import Figure

    sweep = results["sweep"]
    params = [p for p in ("n_clusters", "n_components") if any(s["param"] == p for s in sweep)]
    fig = Figure(figsize=(5.2 * len(params), 3.8), layout="constrained")
    axes = fig.subplots(1, len(params), squeeze=False)
    c = results["config"]
    for ax, param in zip(axes[0], params):
        iso_ax = ax.twinx()
        for dataset in dict.fromkeys(s["dataset"] for s in sweep):
            pts = sorted((s for s in sweep if s["param"] == param and s["dataset"] == dataset), key=lambda s: s["value"])
            xs = [s["value"] for s in pts]
            ax.plot(xs, [100 * s["spearman"] for s in pts], "o-", color="C0", label=f"Spearman ({dataset})")
            left = [s for s in pts if s.get("n_undefined")]  # correlations without the pairs of undefined cosine
            if left:
                ax.plot([s["value"] for s in left], [100 * s["spearman"] for s in left], "x", color="black", ms=9,
                        label="pairs left out (zero vector)")
            iso_ax.plot(xs, [s["IsoScore"] for s in pts], "s--", color="C3", label="IsoScore")
            iso_ax.plot(xs, [s["I(W)"] for s in pts], "^:", color="C2", label="I(W)")
        fixed = "n_components" if param == "n_clusters" else "n_clusters"
        ax.set_xlabel(f"{param} ({fixed} = {c[fixed]})")
        ax.set_ylabel("Spearman x100", color="C0")
        iso_ax.set_ylabel("isotropy (1 = isotropic)")
        iso_ax.set_ylim(0, 1.05)
        handles = ax.get_legend_handles_labels()[0] + iso_ax.get_legend_handles_labels()[0]
        labels = ax.get_legend_handles_labels()[1] + iso_ax.get_legend_handles_labels()[1]
        ax.legend(handles, labels, fontsize=7, loc="lower right")
    seed = results.get("sweep_seed")
    fig.suptitle("K-means + Mean + PCA: choosing the number of clusters and of removed directions"
                 + ("" if seed is None else f" (seed {seed})"), fontsize=10)
    return fig


def plot_results(results_dir) -> dict:
    """The figures of ``results_dir`` (from its ``results.json``), keyed ``figures/<name>``."""
    results_dir = Path(results_dir)
    path = results_dir / "results.json"
    if not path.is_file():
        raise FileNotFoundError(f"{str(path)!r} does not exist: expected the directory that 'isotropy run "
                                f"sts-isotropy' wrote.")
    results = read_json(path)
    figures = {"figures/sts_spearman": _methods_figure(results)}
    if results.get("sweep"):
        figures["figures/sts_sweep"] = _sweep_figure(results)
    return figures
