"""Figures of a layer-geometry results directory: per-layer curves and 2-D / 3-D PCA projections.

``plot_results(results_dir)`` reads ``metrics.json`` and ``projection_layer<L>.npz`` and returns
matplotlib Figures: ``figures/layer_metrics`` (S_inter / S_intra raw and cluster-centred, IsoScore,
mean LID, clusters per layer, static row dotted; the min–max over token samples shaded),
``figures/pca_layer<L>_2d`` and
``figures/pca_layer<L>_3d`` (a sample of tokens coloured by K-means cluster, a panel drawn only
when there is more than one cluster, and by log corpus frequency; points beyond the percentile view
pinned to its border, see :func:`clip_to_view`).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from isotropy.experiments._files import read_json

__all__ = ["clip_to_view", "plot_results"]


def _series(rows, key):
    return np.array([np.nan if r.get(key) is None else r[key] for r in rows], dtype=float)


def _band(ax, layers, rows, key, color):
    """The min–max over the token samples (``spread``), shaded; nothing for a single sample."""
    spread = [(r.get("spread") or {}).get(key) for r in rows]
    if len(rows) and all(s is not None for s in spread) and rows[0].get("n_samples", 1) > 1:
        low, high = np.array(spread, dtype=float).T
        ax.fill_between(layers, low, high, color=color, alpha=0.18, linewidth=0)


def _static_line(ax, static, key, color, label=None):
    if static and static.get(key) is not None and not math.isnan(static[key]):
        ax.axhline(static[key], color=color, linestyle=":", linewidth=1.4,
                   label=f"{label}, {static['name']} (static)" if label else f"{static['name']} (static)")


def _layer_figure(results):
    """Four panels in a 2 x 2 grid, 7 inches wide: legible at the width of a two-column paper's figure*."""
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    rows, static = results["layers"], results.get("static")
    layers = [r["layer"] for r in rows]
    with matplotlib.rc_context({"font.size": 8, "legend.fontsize": 7, "axes.titlesize": 9}):
        fig = Figure(figsize=(7.0, 5.6), layout="constrained")
        axes = fig.subplots(2, 2).ravel()
        ax = axes[0]
        for key, label, color, style in [("s_inter", "S_inter", "C0", "-"), ("s_intra", "S_intra", "C1", "-"),
                                         ("s_inter_centered", "S_inter, cluster-centred", "C0", "--"),
                                         ("s_intra_centered", "S_intra, cluster-centred", "C1", "--")]:
            ax.plot(layers, _series(rows, key), style, marker="o", markersize=3, color=color, label=label)
            _band(ax, layers, rows, key, color)
        _static_line(ax, static, "s_inter", "C0", "S_inter")
        ax.axhline(0.0, color="grey", linewidth=0.6)
        ax.set(title="Cosine similarity", ylabel="mean cosine")
        ax.legend(loc="best")
        ax = axes[1]
        ax.plot(layers, _series(rows, "isoscore"), marker="o", markersize=3, color="C2", label="IsoScore")
        ax.plot(layers, _series(rows, "isoscore_centered"), "--", marker="o", markersize=3, color="C2",
                label="IsoScore, cluster-centred")
        _band(ax, layers, rows, "isoscore", "C2")
        _band(ax, layers, rows, "isoscore_centered", "C2")
        _static_line(ax, static, "isoscore", "C2")
        ax.set(title="IsoScore (1 = isotropic)", ylim=(0, None))
        ax.legend(loc="best")
        ax = axes[2]
        for key, label, color in [("lid_euclidean", "euclidean", "C3"), ("lid_cosine", "cosine", "C4")]:
            ax.plot(layers, _series(rows, key), marker="o", markersize=3, color=color, label=label)
            _band(ax, layers, rows, key, color)
            _static_line(ax, static, key, color, label)
        ax.set(title=f"Mean local intrinsic dimension (MLE, k={results['metric_options']['n_neighbors']})",
               xlabel="layer", ylim=(0, None))
        ax.legend(loc="best")
        ax = axes[3]
        bars = ax.bar(layers, _series(rows, "n_clusters"), color="C5", alpha=0.6, label="k (K-means)")
        ax.set(title="Clusters chosen by silhouette", xlabel="layer", ylabel="k")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        twin = ax.twinx()
        (line,) = twin.plot(layers, _series(rows, "silhouette"), marker="o", markersize=3, color="C6",
                            label="best silhouette")
        threshold = twin.axhline(results["metric_options"]["min_silhouette"], color="C6", linestyle=":",
                                 linewidth=1, label="k = 1 below this")
        twin.set_ylabel("silhouette")
        twin.legend(handles=[bars, line, threshold], loc="best")  # on the twin: drawn above both
        for a in axes:
            a.set_xticks(layers)
        n_samples = len(results.get("seeds") or [0])
        fig.suptitle(f"{Path(str(results['model'])).name} on {results['corpus']}: "
                     f"{results['n_tokens']:,} tokens, {results['n_types']:,} types"
                     + (f"; mean of {n_samples} token samples, min–max shaded" if n_samples > 1 else ""), fontsize=9)
    return fig


# PCA axes span the 0.1st-99.9th percentile of each coordinate, widened by this share of that range; points
# beyond are drawn on the border (as triangles) and counted in the title, so one outlier token (a massive
# activation) cannot set the axes and squeeze every other point into a corner
CLIP_PERCENTILES = (0.1, 99.9)
CLIP_MARGIN = 0.1


def clip_to_view(coords: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[tuple[float, float]]]:
    """Coordinates pinned into the view (see :data:`CLIP_PERCENTILES`), which rows were pinned, and the limits."""
    coords = np.asarray(coords, dtype=np.float64)
    low, high = np.percentile(coords, CLIP_PERCENTILES, axis=0)
    pad = (high - low) * CLIP_MARGIN
    pad = np.where(pad > 0, pad, 1.0)
    low, high = low - pad, high + pad
    clipped = np.clip(coords, low, high)
    outside = np.any((coords < low) | (coords > high), axis=1)
    return clipped, outside, list(zip(low.tolist(), high.tolist()))


def _draw(ax, coords, values, kind, *, three_d: bool, fig):
    import matplotlib

    coords, outside, limits = clip_to_view(coords if three_d else coords[:, :2])
    xyz = (coords[:, 0], coords[:, 1], coords[:, 2]) if three_d else (coords[:, 0], coords[:, 1])
    size = 2 if three_d else 3
    if kind == "cluster":
        k = int(values.max()) + 1
        cmap = matplotlib.colormaps["tab10" if k <= 10 else "tab20"]
        for j in range(k):
            mask = values == j
            ax.scatter(*(c[mask] for c in xyz), color=cmap(j % cmap.N), s=size, alpha=0.6, rasterized=True,
                       label=f"cluster {j} ({int(mask.sum()):,})")
        ax.set_title(f"K-means cluster (k={k})")
        ax.legend(fontsize=7, markerscale=4, loc="best")
    else:
        sc = ax.scatter(*xyz, c=np.log10(np.maximum(values, 1)), cmap="viridis", s=size, alpha=0.6, rasterized=True)
        ax.set_title("log10 corpus frequency of the word")
        fig.colorbar(sc, ax=ax, shrink=0.6 if three_d else 0.8, pad=0.12 if three_d else 0.04)
    if outside.any():
        ax.scatter(*(c[outside] for c in xyz), marker="^", s=18, facecolors="none", edgecolors="black",
                   linewidths=0.6, label=f"{int(outside.sum())} beyond the axes (pinned)")
        n_out = int(outside.sum())
        ax.set_title(ax.get_title() + f"; {n_out} point{'s' if n_out != 1 else ''} pinned to the border", fontsize=9)
    ax.set_xlim(*limits[0])
    ax.set_ylim(*limits[1])
    ax.set_xlabel("PC 1")
    ax.set_ylabel("PC 2")
    if three_d:
        ax.set_zlim(*limits[2])
        ax.set_zlabel("PC 3")


def _projection_figures(results, path: Path) -> dict:
    from matplotlib.figure import Figure

    data = np.load(path, allow_pickle=False)
    coords = data["coords"]
    layer = int(path.stem.removeprefix("projection_layer"))
    title = f"{Path(str(results['model'])).name}, layer {layer}, {len(coords):,} tokens"
    panels = [(data["frequency"], "frequency")]
    if len(data["cluster"]) and int(data["cluster"].max()) > 0:  # k = 1: a one-colour panel says nothing
        panels.insert(0, (data["cluster"], "cluster"))
    else:
        title += ", one K-means cluster"
    figures = {}
    fig = Figure(figsize=(5.5 * len(panels), 4.8), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (values, kind) in zip(axes, panels):
        _draw(ax, coords, values, kind, three_d=False, fig=fig)
    fig.suptitle(f"PCA 2-D: {title}", fontsize=10)
    figures[f"figures/pca_layer{layer}_2d"] = fig
    if coords.shape[1] >= 3:
        fig = Figure(figsize=(6 * len(panels), 5.2))
        for i, (values, kind) in enumerate(panels):
            _draw(fig.add_subplot(1, len(panels), i + 1, projection="3d"), coords, values, kind, three_d=True,
                  fig=fig)
        fig.suptitle(f"PCA 3-D: {title}", fontsize=10)
        figures[f"figures/pca_layer{layer}_3d"] = fig
    return figures


def plot_results(results_dir) -> dict:
    """Every figure of a layer-geometry results directory, keyed ``figures/<name>`` (matplotlib Figures)."""
    results_dir = Path(results_dir)
    metrics = results_dir / "metrics.json"
    if not metrics.is_file():
        raise FileNotFoundError(f"The results directory {str(results_dir)!r} has no metrics.json: expected a "
                                f"directory written by 'isotropy run layer-geometry'.")
    results = read_json(metrics)
    figures = {"figures/layer_metrics": _layer_figure(results)}
    for projection in sorted(results_dir.glob("projection_layer*.npz")):
        figures.update(_projection_figures(results, projection))
    return figures
