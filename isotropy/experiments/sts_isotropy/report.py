"""Markdown tables of an sts-isotropy results dictionary."""

from __future__ import annotations

__all__ = ["correlation", "markdown_report", "metric_table"]

_AGGREGATE_TEXT = {
    "all": "SentEval's \"all\" value (the correlation over the pooled pairs of all sub-files)",
    "wmean": "SentEval's \"wmean\" (the mean of the per-sub-file correlations weighted by their sizes)",
    "mean": "SentEval's \"mean\" (the plain mean of the per-sub-file correlations)",
}


def correlation(row: dict, measure: str, aggregate: str) -> float:
    """The table value of ``measure`` ("pearson"/"spearman") of one method on one data set."""
    return row[aggregate][measure]


def _fmt(value: float, kind: str) -> str:
    if kind == "corr":
        return f"{100 * value:.2f}"
    return f"{value:.3f}" if value >= 1e-3 else f"{value:.2e}"


def metric_table(results: dict, metric: str) -> str:
    """Rows = methods, columns = data sets (+ the average for correlations)."""
    agg = results["config"]["aggregate"]
    names = list(results["datasets"])
    methods = list(next(iter(results["datasets"].values()))["methods"])
    is_corr = metric in ("pearson", "spearman")
    header = ["Method", *names, *(["Avg."] if is_corr and len(names) > 1 else [])]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for method in methods:
        values = []
        for name in names:
            row = results["datasets"][name]["methods"][method]
            values.append(correlation(row, metric, agg) if is_corr else row[metric])
        cells = [_fmt(v, "corr" if is_corr else "iso") for v in values]
        if is_corr and len(names) > 1:
            cells.append(f"{100 * sum(values) / len(values):.2f}")
        lines.append("| " + " | ".join([method, *cells]) + " |")
    return "\n".join(lines)


def _per_dataset(results: dict, name: str) -> str:
    agg = results["config"]["aggregate"]
    block = results["datasets"][name]
    lines = [f"#### {name} ({block['n_pairs']:,} pairs)", "",
             "| Method | Pearson | Spearman | I(W) | IsoScore |", "|---|---|---|---|---|"]
    for method, row in block["methods"].items():
        lines.append(f"| {method} | {_fmt(correlation(row, 'pearson', agg), 'corr')} | "
                     f"{_fmt(correlation(row, 'spearman', agg), 'corr')} | {_fmt(row['I(W)'], 'iso')} | "
                     f"{_fmt(row['IsoScore'], 'iso')} |")
    return "\n".join(lines)


def describe(results: dict) -> str:
    """One paragraph: model, pooling, what the transforms were fitted on, what the values are."""
    c, fit = results["config"], results["fit"]
    fitted = ("on the sentences of each evaluated data set itself (both sides of every pair), as Rajaee & "
              "Pilehvar do" if c["fit_on"] == "self" else
              f"once on a separate corpus, {c['fit_on']} ({fit.get('n_sentences', '?'):,} sentences), and "
              f"applied unchanged to every data set")
    pooling = ("its sentence-transformers pipeline" if c["pooling"] == "sentence-transformers"
               else f"the attention-masked mean of hidden layer {c['layer']}")
    limit = f" At most {c['limit']} pairs per data set (seeded sample)." if c.get("limit") else ""
    return (f"Model `{c['model']}` ({results['n_features']}-d, {pooling}). Transforms fitted {fitted}. "
            f"Pearson and Spearman (x100) between the cosine similarity of the two sentence embeddings and the "
            f"gold score; STS12-16: {_AGGREGATE_TEXT[c['aggregate']]}; STS-B and SICK: their test splits. "
            f"I(W) (Mu & Viswanath's partition measure) and IsoScore of the transformed embeddings of all "
            f"the data set's sentences (at most {c['metric_sample']:,}, seeded sample); 1 = isotropic. "
            f"Clusters: {c['n_clusters']}, directions removed per cluster: {c['n_components']}, "
            f"Mean + PCA removes {c['abtt_components']} global direction(s) (auto = round(d/100)); seed "
            f"{c['seed']}.{limit}")


def markdown_report(results: dict) -> str:
    """The whole ``results.md``: description, one table per measure, per-data-set tables, the sweep."""
    parts = ["# sts-isotropy", "", describe(results), ""]
    for title, metric in (("Spearman x100", "spearman"), ("Pearson x100", "pearson"), ("I(W)", "I(W)"),
                          ("IsoScore", "IsoScore")):
        parts += [f"### {title}", "", metric_table(results, metric), ""]
    parts += ["### Per data set", ""]
    for name in results["datasets"]:
        parts += [_per_dataset(results, name), ""]
    if results.get("sweep"):
        parts += ["### Sweep (K-means + Mean + PCA; one parameter varied, the other at its configured value)", "",
                  "| Data set | Varied | Value | Spearman | Pearson | I(W) | IsoScore |", "|---|---|---|---|---|---|---|"]
        for p in results["sweep"]:
            parts.append(f"| {p['dataset']} | {p['param']} | {p['value']} | {_fmt(p['spearman'], 'corr')} | "
                         f"{_fmt(p['pearson'], 'corr')} | {_fmt(p['I(W)'], 'iso')} | {_fmt(p['IsoScore'], 'iso')} |")
        parts.append("")
    parts.append(f"Runtime: {results['seconds']} s.")
    return "\n".join(parts) + "\n"
