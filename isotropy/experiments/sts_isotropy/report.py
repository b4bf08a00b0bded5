"""Markdown tables of an sts-isotropy results dictionary: the seed mean, with the seed spread for the random rows."""

from __future__ import annotations

__all__ = ["LEFT_OUT_MARK", "compare_table", "correlation", "left_out", "left_out_note", "markdown_report",
           "markdown_table", "metric_table", "seed_values"]

#: beside a correlation computed without the pairs whose cosine is undefined (a zero vector after the transform)
LEFT_OUT_MARK = "‡"

_AGGREGATE_TEXT = {
    "all": "SentEval's \"all\" value (the correlation over the pooled pairs of all sub-files)",
    "wmean": "SentEval's \"wmean\" (the mean of the per-sub-file correlations weighted by their sizes)",
    "mean": "SentEval's \"mean\" (the plain mean of the per-sub-file correlations)",
}


def correlation(row: dict, measure: str, aggregate: str) -> float:
    """The table value of ``measure`` ("pearson"/"spearman") of one method on one data set (its seed mean)."""
    return row[aggregate][measure]


def seed_values(row: dict, metric: str, aggregate: str) -> list[float]:
    """The per-seed values of ``metric`` of one method on one data set (one value for a one-seed results file)."""
    rows = row.get("per_seed") or [row]
    if metric in ("pearson", "spearman"):
        return [float(r[aggregate][metric]) for r in rows]
    return [float(r[metric]) for r in rows]


def left_out(row: dict) -> list[int]:
    """The pairs each seed's correlations of ``row`` left out (undefined cosines); [] when none did."""
    counts = [int(r.get("n_undefined", 0)) for r in (row.get("per_seed") or [row])]
    return counts if any(counts) else []


def left_out_note(blocks: dict) -> str:
    """One line naming every row whose correlations left pairs out, and why; "" when none did."""
    found = [f"{method} on {name}, {_range(counts)} of {block['n_pairs']:,} pairs"
             + (f" (over {len(counts)} seeds)" if len(counts) > 1 else "")
             for name, block in blocks.items() for method, row in block["methods"].items()
             if (counts := left_out(row))]
    if not found:
        return ""
    return (f"{LEFT_OUT_MARK} Correlation over the pairs whose cosine is defined: {'; '.join(found)} left out, whose "
            f"sentence vector is the zero vector after the transform (a cluster of at most n_components points loses "
            f"every direction), so its cosine is undefined. Not comparable with the other rows as it stands.")


def _range(counts: list[int]) -> str:
    return str(counts[0]) if min(counts) == max(counts) else f"{min(counts)}–{max(counts)}"


def _fmt(value: float, kind: str) -> str:
    if kind == "corr":
        return f"{100 * value:.2f}"
    return f"{value:.3f}" if value >= 1e-3 else f"{value:.2e}"


def _cell(mean: float, values: list[float], kind: str, *, spread: bool) -> str:
    """``mean`` and, for a row that depends on the seed, its seed spread ``(min–max)``."""
    if not spread or len(values) < 2:
        return _fmt(mean, kind)
    return f"{_fmt(mean, kind)} ({_fmt(min(values), kind)}–{_fmt(max(values), kind)})"


def _random(row: dict) -> bool:
    return bool(row.get("depends_on_seed", False))


def metric_table(results: dict, metric: str) -> str:
    """Rows = methods, columns = data sets (+ the average for correlations); seed mean (min–max) for random rows."""
    agg = results["config"]["aggregate"]
    names = list(results["datasets"])
    methods = list(next(iter(results["datasets"].values()))["methods"])
    is_corr = metric in ("pearson", "spearman")
    kind = "corr" if is_corr else "iso"
    header = ["Method", *names, *(["Avg."] if is_corr and len(names) > 1 else [])]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for method in methods:
        rows = [results["datasets"][name]["methods"][method] for name in names]
        per_name = [seed_values(row, metric, agg) for row in rows]
        means = [correlation(row, metric, agg) if is_corr else row[metric] for row in rows]
        cells = [_cell(m, v, kind, spread=_random(row)) + (LEFT_OUT_MARK if is_corr and left_out(row) else "")
                 for m, v, row in zip(means, per_name, rows)]
        if is_corr and len(names) > 1:
            n_seeds = min(len(v) for v in per_name)
            averages = [sum(v[i] if len(v) > 1 else v[0] for v in per_name) / len(names) for i in range(n_seeds)]
            cells.append(_cell(sum(means) / len(means), averages, kind, spread=any(_random(r) for r in rows))
                         + (LEFT_OUT_MARK if any(left_out(r) for r in rows) else ""))
        lines.append("| " + " | ".join([method, *cells]) + " |")
    return "\n".join(lines)


def compare_table(named: dict, *, metric: str = "spearman") -> str:
    """One run per column (``named``: a label per run's ``results.json``), one table per data set they all evaluated.

    Rows are the methods every run has, cells the seed mean with the seed spread of the rows that
    depend on the seed, as in :func:`metric_table`; a column names the run's hidden layer when the
    runs differ in it (one run per layer: how depth moves each method). The runs must share the
    model and the correlation's aggregate, or their columns would not compare.
    """
    labels = list(named)
    if len(labels) < 2:
        raise ValueError(f"compare_table needs at least 2 runs. Got {len(labels)} instead.")
    configs = [named[label]["config"] for label in labels]
    for key in ("model", "aggregate"):
        if len({str(c.get(key)) for c in configs}) > 1:
            raise ValueError(f"compare_table compares runs of one {key}. Got "
                             f"{', '.join(f'{label}: {c.get(key)}' for label, c in zip(labels, configs))} instead.")
    names = [name for name in named[labels[0]]["datasets"] if all(name in named[lb]["datasets"] for lb in labels)]
    if not names:
        raise ValueError(f"compare_table needs a data set every run evaluated. Got none in common among {labels}.")
    layers = [c.get("layer") for c in configs]
    header_of = ({label: f"layer {layer}" for label, layer in zip(labels, layers)} if len(set(map(str, layers))) > 1
                 else {label: label for label in labels})
    agg = configs[0]["aggregate"]
    is_corr = metric in ("pearson", "spearman")
    kind = "corr" if is_corr else "iso"
    lines = []
    for name in names:
        blocks = [named[label]["datasets"][name] for label in labels]
        methods = [m for m in blocks[0]["methods"] if all(m in block["methods"] for block in blocks)]
        header = ["Method", *(header_of[label] for label in labels)]
        lines += [f"{name} ({blocks[0]['n_pairs']:,} pairs):", "", "| " + " | ".join(header) + " |",
                  "|" + "---|" * len(header)]
        for method in methods:
            cells = []
            for block in blocks:
                row = block["methods"][method]
                mean = correlation(row, metric, agg) if is_corr else row[metric]
                cells.append(_cell(mean, seed_values(row, metric, agg), kind, spread=_random(row))
                             + (LEFT_OUT_MARK if is_corr and left_out(row) else ""))
            lines.append("| " + " | ".join([method, *cells]) + " |")
        lines.append("")
        if is_corr and (note := left_out_note(dict(zip((header_of[label] for label in labels), blocks)))):
            lines += [note, ""]
    return "\n".join(lines)


def _seeds_text(results: dict) -> str:
    seeds = results.get("seeds") or results["config"].get("seeds") or []
    if len(seeds) < 2:
        return f"One seed ({', '.join(map(str, seeds))}): no seed spread."
    return (f"Mean over {len(seeds)} seeds ({', '.join(map(str, seeds))}); in brackets the seed spread (min–max) of "
            f"the rows that depend on the seed (K-means, GMM, and any row whose I(W)/IsoScore or fitting corpus "
            f"is a seeded sample); the other rows are computed once.")


def token_tables(results: dict) -> str:
    """The token-level rows (the paper's order: tokens transformed, then pooled), or "" when the run has none."""
    level = results.get("token_level") or {}
    if not level.get("datasets"):
        return ""
    as_results = {"config": results["config"], "datasets": level["datasets"]}
    fit = "the evaluated sentences' tokens" if level.get("fit") == "self" else f"the tokens of {level.get('fit')}"
    return "\n".join([
        (f"At the token level (the paper's order): each method fitted on {fit} (at most "
        f"{level.get('fit_max_tokens', 0):,}), every token transformed, each sentence the mean of its tokens. "
        f"Spearman × 100; in brackets the seed spread of the rows that depend on the seed:"), "",
        metric_table(as_results, "spearman"), "",
        *([note, ""] if (note := left_out_note(level["datasets"])) else []),
        ("I(W) of the sentence vectors pooled from the transformed tokens (not normalised, unlike "
        "sentence-transformers' own output):"), "", metric_table(as_results, "I(W)"), "",
        "IsoScore of the same sentence vectors:", "", metric_table(as_results, "IsoScore"), ""])


def markdown_table(results: dict) -> str:
    """Spearman × 100 and the isotropy of every method: the tables the docs render from a committed run."""
    seeds = _seeds_text(results)
    return "\n".join([
        f"Spearman × 100 (STS12-16: {results['config']['aggregate']}). {seeds}", "",
        metric_table(results, "spearman"), "",
        *([note, ""] if (note := left_out_note(results["datasets"])) else []),
        "I(W) of the transformed embeddings (1 = isotropic):", "", metric_table(results, "I(W)"), "",
        "IsoScore of the transformed embeddings (1 = isotropic):", "", metric_table(results, "IsoScore"), "",
        token_tables(results)])


def _per_dataset(results: dict, name: str) -> str:
    agg = results["config"]["aggregate"]
    block = results["datasets"][name]
    lines = [f"#### {name} ({block['n_pairs']:,} pairs)", "",
             "| Method | Pearson | Spearman | I(W) | IsoScore |", "|---|---|---|---|---|"]
    for method, row in block["methods"].items():
        spread = _random(row)
        mark = LEFT_OUT_MARK if left_out(row) else ""
        cells = [_cell(correlation(row, m, agg), seed_values(row, m, agg), "corr", spread=spread) + mark
                 for m in ("pearson", "spearman")]
        cells += [_cell(row[m], seed_values(row, m, agg), "iso", spread=spread) for m in ("I(W)", "IsoScore")]
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def describe(results: dict) -> str:
    """One paragraph: model, pooling, what the transforms were fitted on, what the values are, the seeds."""
    c, fit = results["config"], results["fit"]
    fitted = ("on the sentences of each evaluated data set itself (both sides of every pair), as Rajaee & "
              "Pilehvar do" if c["fit_on"] == "self" else
              f"once on a separate corpus, {c['fit_on']} ({fit.get('n_sentences', '?'):,} sentences"
              f"{', a seeded sample per seed' if results.get('fit_per_seed') else ''}), and applied unchanged to "
              f"every data set")
    pooling = ("its sentence-transformers pipeline" if c["pooling"] == "sentence-transformers"
               else f"the attention-masked mean of hidden layer {c['layer']}")
    seeds = results.get("seeds") or c.get("seeds") or []
    limit = f" At most {c['limit']} pairs per data set (the same sample for every seed)." if c.get("limit") else ""
    return (f"Model `{c['model']}` ({results['n_features']}-d, {pooling}); the transforms act on these pooled "
            f"sentence vectors (the paper transforms token vectors). Transforms fitted {fitted}. "
            f"Pearson and Spearman (x100) between the cosine similarity of the two sentence embeddings and the "
            f"gold score; STS12-16: {_AGGREGATE_TEXT[c['aggregate']]}; STS-B and SICK: their test splits. "
            f"I(W) (Mu & Viswanath's partition measure) and IsoScore of the transformed embeddings of all "
            f"the data set's sentences (at most {c['metric_sample']:,}, a seeded sample per seed); 1 = isotropic. "
            f"Clusters: {c['n_clusters']}, directions removed per cluster: {c['n_components']}, "
            f"Mean + PCA removes {c['abtt_components']} global direction(s) (auto = round(d/100)); seeds "
            f"{', '.join(map(str, seeds))}. {_seeds_text(results)}{limit}")


def markdown_report(results: dict) -> str:
    """The whole ``results.md``: description, one table per measure, per-data-set tables, the sweep."""
    parts = ["# sts-isotropy", "", describe(results), ""]
    for title, metric in (("Spearman x100", "spearman"), ("Pearson x100", "pearson"), ("I(W)", "I(W)"),
                          ("IsoScore", "IsoScore")):
        parts += [f"### {title}", "", metric_table(results, metric), ""]
    if note := left_out_note(results["datasets"]):
        parts += [note, ""]
    parts += ["### Per data set", ""]
    for name in results["datasets"]:
        parts += [_per_dataset(results, name), ""]
    if results.get("sweep"):
        seed = results.get("sweep_seed", (results.get("seeds") or [None])[0])
        parts += [(f"### Sweep (K-means + Mean + PCA; one parameter varied, the other at its configured value; "
                   f"seed {seed} only: the sweep is exploratory)"), "",
                  "| Data set | Varied | Value | Spearman | Pearson | I(W) | IsoScore |", "|---|---|---|---|---|---|---|"]
        for p in results["sweep"]:
            mark = LEFT_OUT_MARK if p.get("n_undefined") else ""
            parts.append(f"| {p['dataset']} | {p['param']} | {p['value']} | {_fmt(p['spearman'], 'corr')}{mark} | "
                         f"{_fmt(p['pearson'], 'corr')}{mark} | {_fmt(p['I(W)'], 'iso')} | {_fmt(p['IsoScore'], 'iso')} |")
        parts.append("")
        left = [f"{p['param']}={p['value']} on {p['dataset']}: {p['n_undefined']}" for p in results["sweep"]
                if p.get("n_undefined")]
        if left:
            parts += [(f"{LEFT_OUT_MARK} Pairs left out (an undefined cosine: a zero vector after the transform, a "
                       f"cluster of at most n_components points): {'; '.join(left)}."), ""]
    if results.get("token_level"):
        parts += ["### Token level", "", token_tables(results)]
    boot = results.get("bootstrap") or {}
    if boot:
        parts += ["### Bootstrap over sentence pairs (for claims.json)", ""]
        parts += [f"- `{key}`: [{value['low']:.2f}, {value['high']:.2f}] ({value['how']})" for key, value in boot.items()]
        parts.append("")
    parts.append(f"Runtime: {results['seconds']} s.")
    return "\n".join(parts) + "\n"
