"""Tables of the I-STAR sweep: mean ± std over seeds from the per-run files (light: no torch)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from isotropy.experiments._files import read_json
from isotropy.experiments._results import mean_sd, write_json, write_text

__all__ = ["collect_results", "markdown_table", "summarise"]


def summarise(records: list[dict]) -> list[dict]:
    """Mean and standard deviation (ddof=1; 0 for one seed) over seeds, one row per condition."""
    fields = ("score", "accuracy", "isoscore_star", "isoscore", "twonn_dimension", "silhouette",
              "train_isoscore_star_first", "train_isoscore_star_last")
    rows, order = [], {"none": 0, "istar": 1, "cosreg": 2}
    for condition in sorted({r["condition"] for r in records},
                            key=lambda c: next((order[r["method"]], r["lambda"]) for r in records if r["condition"] == c)):
        group = [r for r in records if r["condition"] == condition]
        row = {"condition": condition, "method": group[0]["method"], "lambda": group[0]["lambda"],
               "metric": group[0]["metric"], "n_seeds": len(group), "seeds": sorted(r["seed"] for r in group)}
        for field in fields:
            values = np.asarray([r[field] for r in group if r.get(field) is not None], dtype=np.float64)
            row[f"{field}_mean"] = float(values.mean()) if values.size else None
            row[f"{field}_std"] = float(values.std(ddof=1)) if values.size > 1 else (0.0 if values.size else None)
            row[f"{field}_n"] = int(values.size)  # the seeds that recorded it (older runs lack some fields)
        rows.append(row)
    return rows


def markdown_table(rows) -> str:
    """The summary as a Markdown table (mean ± std over seeds; the mean alone for one seed): ``rows`` is :func:`summarise`'s list or ``results.json``."""
    if isinstance(rows, dict):  # results.json of a sweep (the docs' run tables)
        rows = rows.get("summary") or []
    def cell(row, field, digits):
        # older runs lack a field: "–"
        return mean_sd(row.get(f"{field}_mean"), row.get(f"{field}_std"), row.get(f"{field}_n", row["n_seeds"]),
                       f".{digits}f")

    metric = rows[0]["metric"] if rows else "score"
    lines = [(f"| condition | λ | seeds | {metric} | IsoScore* (val) | IsoScore (val) | TwoNN ID (val) | "
             f"class silhouette (val) | IsoScore* of regularised train states (first → last 10% of steps) |"),
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        lam = "–" if row["method"] == "none" else f"{row['lambda']:g}"
        first, last = row["train_isoscore_star_first_mean"], row["train_isoscore_star_last_mean"]
        trend = "–" if first is None else f"{first:.3f} → {last:.3f}"
        lines.append(f"| {row['method'] if row['method'] != 'none' else 'base (no reg.)'} | {lam} | {row['n_seeds']} | "
                     f"{cell(row, 'score', 4)} | {cell(row, 'isoscore_star', 4)} | {cell(row, 'isoscore', 4)} | "
                     f"{cell(row, 'twonn_dimension', 2)} | {cell(row, 'silhouette', 3)} | {trend} |")
    return "\n".join(lines) + "\n"


def collect_results(results_dir, *, planned: list[str], metric: str, seconds: float | None = None) -> dict:
    """Gather ``runs/*.json`` in the sweep's order (``planned`` run ids) into ``results.json`` and ``results.md``.

    Works on an unfinished sweep too: ``complete`` is false and the tables cover the finished runs.
    """
    results_dir = Path(results_dir)
    files = {p.stem: p for p in (results_dir / "runs").glob("*.json")}
    records = [read_json(files[r]) for r in planned if r in files]
    summary = summarise(records)
    results = {"experiment": "istar", "metric": metric,
               "complete": all(r in files for r in planned), "finished_runs": len(records),
               "planned_runs": len(planned), "runs": records, "summary": summary}
    if seconds is not None:
        results["seconds_this_invocation"] = seconds
    write_json(results_dir / "results.json", results)
    table = markdown_table(summary)
    if not results["complete"]:
        table = f"Partial: {len(records)} of {len(planned)} runs finished.\n\n" + table
    write_text(results_dir / "results.md", table)
    return results
