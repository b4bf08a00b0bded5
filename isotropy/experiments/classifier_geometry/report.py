"""Aggregate per-seed records: per-step mean and std, correlations, the summary and its tables."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from isotropy.experiments._results import mean_sd

__all__ = ["correlation_markdown", "correlations", "curves", "model_label", "seed_frame", "summarise"]


def model_label(model: str) -> str:
    """A short folder-safe name of a model ("all-MiniLM-L6-v2" -> "all-MiniLM-L6-v2", a path -> its name)."""
    return Path(str(model).rstrip("/")).name or "model"


def seed_frame(seed_records: list[dict]):
    """Long table: one row per (seed, recorded step)."""
    import pandas as pd

    frames = [pd.DataFrame({"seed": r["seed"], **r["metrics"]}) for r in seed_records]
    return pd.concat(frames, ignore_index=True)


def curves(frame):
    """Per-step mean and standard deviation (ddof=0) over seeds of every metric."""
    grouped = frame.drop(columns="seed").groupby("step")
    out = grouped.mean().add_suffix("_mean").join(grouped.std(ddof=0).add_suffix("_std"))
    return out.reset_index()


def _pair(x, y) -> dict:
    from scipy import stats

    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"pearson_r": math.nan, "spearman_rho": math.nan, "n_steps": len(x)}
    return {"pearson_r": float(stats.pearsonr(x, y)[0]), "spearman_rho": float(stats.spearmanr(x, y)[0]),
            "n_steps": len(x)}


def correlations(frame) -> dict:
    """Pearson r and Spearman rho between IsoScore and silhouette across recorded steps.

    Per seed, and on the per-step means over seeds.
    """
    per_seed = {int(seed): _pair(g["isoscore"], g["silhouette"]) for seed, g in frame.groupby("seed")}
    means = frame.groupby("step")[["isoscore", "silhouette"]].mean()
    values = lambda key: [v[key] for v in per_seed.values()]
    return {"seed_means": _pair(means["isoscore"], means["silhouette"]), "per_seed": per_seed,
            "per_seed_mean": {k: float(np.mean(values(k))) for k in ("pearson_r", "spearman_rho")},
            "per_seed_max": {k: float(np.max(values(k))) for k in ("pearson_r", "spearman_rho")}}


def summarise(problem_info: dict, config, seed_records: list[dict], *, setup: str) -> dict:
    """The summary written to ``summary.json``: ``setup`` names the problem (the setup, or ``model/task`` of the grid)."""
    frame = seed_frame(seed_records)
    c = curves(frame)
    first, last = c.iloc[0], c.iloc[-1]
    metric_names = ("isoscore", "silhouette", "accuracy", "micro_f1", "loss")
    timing = {int(r["seed"]): r["timing"] for r in seed_records}
    return {
        "setup": setup,
        "data": problem_info,
        "updates": int(config.updates),
        "metric_interval": int(config.metric_interval),
        "seeds": sorted(int(r["seed"]) for r in seed_records),
        "initial": {m: {"mean": float(first[f"{m}_mean"]), "std": float(first[f"{m}_std"])} for m in metric_names},
        "final": {m: {"mean": float(last[f"{m}_mean"]), "std": float(last[f"{m}_std"])} for m in metric_names},
        "max_std_over_steps": {m: float(c[f"{m}_std"].max()) for m in ("isoscore", "silhouette")},
        "mean_std_over_steps": {m: float(c[f"{m}_std"].mean()) for m in ("isoscore", "silhouette")},
        "correlation": correlations(frame),
        "timing_s": {"per_seed": timing,
                     "total": float(sum(t["total"] for t in timing.values())),
                     "per_update_mean": {k: float(np.mean([t[k] / max(t["updates"], 1) for t in timing.values()]))
                                         for k in ("optimisation", "isoscore", "silhouette", "total")}},
    }


def _fmt(x, digits=3):
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _final(stat: dict, n_seeds: int) -> str:
    """The final value's ``mean ± std`` over seeds (the mean alone for one seed)."""
    if stat["mean"] is None or (isinstance(stat["mean"], float) and math.isnan(stat["mean"])):
        return "nan"
    return mean_sd(stat["mean"], stat["std"], n_seeds)


def correlation_markdown(summaries: dict[str, dict]) -> str:
    """Markdown table, one row per setup: final metrics and IsoScore-silhouette correlations."""
    lines = [("| setup | items | updates | seeds | IsoScore start → end | silhouette start → end | train acc. / micro-F1 "
             "| Pearson r (seed means) | Spearman ρ (seed means) | max per-seed r / ρ | time (s) |"),
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, s in summaries.items():
        i, f, corr = s["initial"], s["final"], s["correlation"]
        score = "micro_f1" if s["data"].get("multilabel") else "accuracy"
        lines.append(
            f"| {name} | {s['data']['n_items']:,} | {s['updates']} | {len(s['seeds'])} "
            f"| {_fmt(i['isoscore']['mean'])} → {_final(f['isoscore'], len(s['seeds']))} "
            f"| {_fmt(i['silhouette']['mean'])} → {_final(f['silhouette'], len(s['seeds']))} "
            f"| {_fmt(f[score]['mean'])} | {_fmt(corr['seed_means']['pearson_r'])} "
            f"| {_fmt(corr['seed_means']['spearman_rho'])} "
            f"| {_fmt(corr['per_seed_max']['pearson_r'])} / {_fmt(corr['per_seed_max']['spearman_rho'])} "
            f"| {s['timing_s']['total']:.0f} |")
    return "\n".join(lines) + "\n"
