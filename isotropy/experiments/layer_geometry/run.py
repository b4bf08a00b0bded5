"""``run(config, results_dir) -> results``: extract every layer, measure its geometry, write tables.

Writes into ``results_dir``: ``metrics.json`` (all numbers, extraction counts, timings),
``metrics.md`` (the table) and ``projection_layer<L>.npz`` (PCA coordinates of a sample of tokens of
the projected layer, their clusters and frequencies, for the figures); the runner writes
``run.json`` and ``config.yaml`` (resolved config, seeds, versions).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from isotropy._utils.atomic import atomic_write
from isotropy._utils.sampling import subsample_indices
from isotropy.experiments._results import write_json, write_text
from isotropy.experiments.layer_geometry.metrics import (
    METRIC_LABELS,
    pc1_frequency_rho,
    space_metrics,
    static_space,
)

__all__ = ["EXPERIMENT", "compare_table", "markdown_table", "prepare", "projection_path", "run"]

EXPERIMENT = "layer-geometry"
_LABELS = {**METRIC_LABELS, "pc1_frequency_rho": "PC1–frequency |ρ|", "norm_max_over_median": "max norm / median"}
_TABLE_KEYS = ["n", "d", "n_types", *_LABELS]
# the spread table: the numbers the claims read, and the frequency manifold
_SPREAD_KEYS = ["s_inter", "s_inter_centered", "isoscore", "isoscore_centered", "pc1_frequency_rho", "lid_cosine",
                "norm_max_over_median"]


def projection_path(results_dir, layer: int) -> Path:
    """Where the PCA projection of ``layer`` is stored."""
    return Path(results_dir) / f"projection_layer{layer}.npz"


def _fmt(value) -> str:
    if isinstance(value, float):
        return "–" if math.isnan(value) else f"{value:.3f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _cell(row: dict, key: str) -> str:
    per_sample = (row.get("per_sample") or {}).get(key)
    if per_sample:  # an integer count that differs between token samples: every sample's value
        return "/".join(f"{v:,}" for v in per_sample)
    return _fmt(row.get(key, math.nan))


def markdown_table(results: dict) -> str:
    """The per-layer table (means over the token samples), the static row, the spread and the clusters."""
    header = ["layer", "n", "d", "types", *_LABELS.values()]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    rows = [(str(r["layer"]), r) for r in results["layers"]]
    if results.get("static"):
        rows.append((results["static"]["name"] + " (static)", results["static"]))
    for name, row in rows:
        lines.append("| " + " | ".join([name, *(_cell(row, k) for k in _TABLE_KEYS)]) + " |")
    n_samples = len(results.get("seeds") or [0])
    if n_samples > 1:
        lines += ["", (f"Mean over {n_samples} token samples (seeds {', '.join(map(str, results['seeds']))}); "
                      "k and types list every sample's value where they differ. Spread over the samples (min–max):"), "",
                  "| layer | " + " | ".join(_LABELS[k] for k in _SPREAD_KEYS) + " |",
                  "|---|" + "---|" * len(_SPREAD_KEYS)]
        for r in results["layers"]:
            spread = r.get("spread") or {}
            cells = [f"{_fmt(spread[k][0])}–{_fmt(spread[k][1])}" if k in spread else "–" for k in _SPREAD_KEYS]
            lines.append(f"| {r['layer']} | " + " | ".join(cells) + " |")
    with_norms = [r for r in results["layers"] if r.get("token_norms")]
    if with_norms:
        lines += ["", "Token norms over the median norm of the measured words"
                  + (" (the first token sample)" if n_samples > 1 else "")
                  + ": the largest, the words that carry the largest, and the special tokens (never measured)", "",
                  "| layer | max / median | largest words (ratio) | special tokens (largest ratio) |", "|---|---|---|---|"]
        for r in with_norms:
            norms = r["token_norms"]
            top = ", ".join(f"`{w}` {v:.1f}" for w, v in norms["top"])
            special = ", ".join(f"`{w}` {v:.1f}" for w, v in norms["special"]) or "–"
            lines.append(f"| {r['layer']} | {_fmt(norms['max_over_median'])} | {top} | {special} |")
    first = (results.get("samples") or [results])[0]["layers"]  # the clusters of the first sample (its figures)
    clustered = [r for r in first if r.get("n_clusters", 1) > 1 and r.get("clusters")]
    if clustered:
        lines += ["", "K-means clusters (k > 1"
                  + (", the first token sample" if n_samples > 1 else "") + "): size and most frequent words", ""]
        lines += ["| layer | cluster | size | most frequent words |", "|---|---|---|---|"]
        for r in clustered:
            lines += [f"| {r['layer']} | {c['cluster']} | {c['size']:,} | {' '.join(c['top_words'])} |"
                      for c in r["clusters"]]
    return "\n".join(lines) + "\n"


def compare_table(named: dict, *, keys=("isoscore", "s_inter")) -> str:
    """How extraction choices move the per-layer numbers: one column per run and metric, and the change.

    ``named`` maps a label to a run's ``metrics.json``; the first is the reference. When the other
    runs are one token sample each, all with the same seed, and the reference holds that seed's
    sample, the changes (``Δ``) are taken against that very sample (the same tokens, only the
    extraction differs); otherwise against the reference's mean over its samples. The reference's
    min–max over its token samples shows how large a change sampling alone makes. Only the layers
    present in every run are compared.
    """
    labels = list(named)
    if len(labels) < 2:
        raise ValueError(f"compare_table needs at least 2 runs. Got {len(labels)} instead.")
    reference = named[labels[0]]
    other_seeds = {tuple(named[label].get("seeds") or []) for label in labels[1:]}
    by_seed = {s.get("seed"): s for s in reference.get("samples") or []}
    paired = None
    if len(other_seeds) == 1 and len(next(iter(other_seeds))) == 1 and next(iter(other_seeds))[0] in by_seed:
        paired = next(iter(other_seeds))[0]
    ref_rows = by_seed[paired]["layers"] if paired is not None else reference["layers"]
    spread_rows = {r["layer"]: (r.get("spread") or {}) for r in reference["layers"]}
    rows = {labels[0]: {r["layer"]: r for r in ref_rows}}
    rows.update({label: {r["layer"]: r for r in named[label]["layers"]} for label in labels[1:]})
    layers = [layer for layer in rows[labels[0]] if all(layer in rows[label] for label in labels[1:])]
    ref_label = f"{labels[0]} (seed {paired})" if paired is not None else labels[0]
    lines = []
    for key in keys:
        header = ["layer", ref_label, f"{labels[0]}: spread over samples", *(f"{label} (Δ)" for label in labels[1:])]
        lines += [f"{_LABELS.get(key, key)}:", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for layer in layers:
            ref = rows[labels[0]][layer].get(key, math.nan)
            spread = spread_rows.get(layer, {}).get(key)
            cells = [str(layer), _fmt(ref), f"{_fmt(spread[0])}–{_fmt(spread[1])}" if spread else "–"]
            for label in labels[1:]:
                value = rows[label][layer].get(key, math.nan)
                cells.append(f"{_fmt(value)} ({value - ref:+.3f})")
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def _cluster_summary(labels, type_ids, types, *, top: int = 8) -> list[dict]:
    """Size and most frequent word types of every cluster."""
    summary = []
    for j in range(int(labels.max()) + 1):
        counts = np.bincount(type_ids[labels == j], minlength=len(types))
        best = np.argsort(-counts, kind="stable")[:top]
        summary.append({"cluster": j, "size": int((labels == j).sum()),
                        "top_words": [types[i] for i in best if counts[i] > 0]})
    return summary


def _write_projection(path: Path, X: np.ndarray, labels, frequency, words, *, max_points: int, seed: int) -> None:
    from sklearn.decomposition import PCA

    coords = PCA(n_components=min(3, X.shape[1]), random_state=seed).fit_transform(X.astype(np.float64))
    keep = subsample_indices(len(X), max_points, random_state=seed)
    with atomic_write(path, "wb") as handle:
        np.savez_compressed(handle, coords=coords[keep].astype(np.float32), cluster=np.asarray(labels)[keep],
                            frequency=np.asarray(frequency)[keep], words=np.asarray(words, dtype=object)[keep]
                            .astype(str))


def _fit_pca_layers(spec, layers: list[int], n_layers: int, log) -> list[int] | str:
    """The setup's PCA layers for a model of ``n_layers`` layers: those extracted, else the first and last extracted.

    Non-negative indices beyond the model (a 12-layer setup's ``[6, 12]`` with a 6-layer model) are
    dropped; ``"all"``, ``"last"`` and negative indices keep their meaning at any depth.
    """
    from isotropy.experiments.layer_geometry.config import _indices

    wanted = _indices(spec)
    if wanted is None or set(wanted) <= set(layers):
        return spec
    kept = [layer for layer in wanted if layer in layers] or sorted({layers[0], layers[-1]})
    why = "those of them that are extracted" if set(kept) <= set(wanted) else "the first and last extracted"
    log(f"pca_layers: the setup's {spec!r} with a model of {n_layers} layers and layers {layers} drawn as {kept} "
        f"({why}; --set pca_layers=... to choose)")
    return kept


def prepare(config, ctx) -> dict:
    """Load the corpus and the transformer, check the layers: before the results directory is touched."""
    from isotropy.datasets.corpora import load_corpus
    from isotropy.models.contextual import load_transformer, n_transformer_layers
    from isotropy.models.layers import check_layers_before_loading, select_layers

    for note in config._notes:  # what the config's settle decided (the PCA layers after --layers)
        ctx.log(note)
    check_layers_before_loading(config.layers, config.model, caller=EXPERIMENT)
    tokenizer, network, location = load_transformer(config.model, device=ctx.device)
    from isotropy.experiments._encode import check_max_length

    check_max_length(config.max_length, network.config, model=config.model, experiment=EXPERIMENT,
                     given=config.was_given("max_length"))
    n_layers = n_transformer_layers(network.config)
    layers = select_layers(config.layers, n_layers + 1, caller=EXPERIMENT)
    pca_layers = config.pca_layers
    pca_layers = [layers[len(layers) // 2]] if pca_layers is None else pca_layers
    if config._pca_follows_model:  # the setup's choice, for the setup's model: fitted to this one (settle)
        pca_layers = _fit_pca_layers(pca_layers, layers, n_layers, ctx.log)
        if pca_layers != config.pca_layers and config.pca_layers is not None:
            # what the run draws is what its config.yaml says: re-running that file gives the same figures
            config.pca_layers = pca_layers
    pca_layers = select_layers(pca_layers, n_layers + 1, caller=EXPERIMENT, name="pca_layers") if pca_layers else []
    if not set(pca_layers) <= set(layers):  # 'all' or negative indices, known with the model's depth: before the corpus
        raise ValueError(f"The 'pca_layers' setting of {EXPERIMENT} must list extracted layers, here {layers}. "
                         f"Got {pca_layers!r} instead (the setup's, unless set): give --set "
                         f"'pca_layers=[{layers[-1]}]' or --set pca_layers=null (the middle extracted layer).")
    corpus = load_corpus(config.corpus, split=config.split, data_dir=ctx.data_dir)
    ctx.log(f"corpus {corpus.name}: {len(corpus):,} lines, {corpus.n_words:,} words")
    return {"corpus": corpus, "tokenizer": tokenizer, "network": network, "location": location,
            "n_layers": n_layers, "layers": layers, "pca_layers": pca_layers}


def _sample(config, prepared, seed, *, results_dir, log, show_progress, project: bool) -> dict:
    """One token sample (drawn with ``seed``): extract it, measure every layer; write the projections if ``project``."""
    from isotropy.metrics.norms import token_norms
    from isotropy.models.contextual import extract_token_embeddings

    metric_options = config.metrics.model_dump()  # the keyword arguments of space_metrics, as DEFAULT_METRICS
    start = time.perf_counter()
    emb = extract_token_embeddings(
        prepared["corpus"], model=config.model, layers=prepared["layers"], pooling=config.pooling,
        max_tokens=config.max_tokens, max_per_type=config.max_per_type,
        skip_types=config.skip_types or (), shuffle=bool(config.shuffle), random_state=seed,
        max_length=int(config.max_length), batch_size=int(config.batch_size),
        dtype=config.dtype, leading_space=config.leading_space, show_progress=show_progress,
        tokenizer_and_model=(prepared["tokenizer"], prepared["network"]))
    extraction_s = time.perf_counter() - start
    log(f"seed {seed}: extracted {emb.n_tokens:,} tokens of {len(emb.types):,} types at layers "
        f"{prepared['layers']} ({extraction_s:.0f} s)")
    frequency = emb.token_frequency
    rows = []
    for layer in prepared["layers"]:
        t = time.perf_counter()
        X = emb.hidden_states[layer]
        metrics, labels = space_metrics(X, emb.type_ids, seed=seed, return_labels=True, **metric_options)
        metrics["pc1_frequency_rho"] = pc1_frequency_rho(X, frequency)
        norms = token_norms(X, emb.words, special=emb.special_norms.get(layer))
        metrics["norm_max_over_median"] = norms["max_over_median"]
        metrics["special_max_over_median"] = max((r for _, r in norms["special"]), default=math.nan)
        metrics["token_norms"] = norms
        rows.append({"layer": layer, **metrics, "clusters": _cluster_summary(labels, emb.type_ids, emb.types),
                     "seconds": time.perf_counter() - t})
        log(f"seed {seed}, layer {layer}: " + ", ".join(f"{k}={_fmt(metrics[k])}" for k in _LABELS)
            + f" ({rows[-1]['seconds']:.0f} s)")
        if project and layer in prepared["pca_layers"]:
            _write_projection(projection_path(results_dir, layer), X, labels, frequency, emb.words,
                              max_points=int(config.pca_max_points), seed=seed)
    return {"seed": seed, "n_tokens": emb.n_tokens, "n_types": len(emb.types), "extraction": emb.stats,
            "extraction_s": extraction_s, "layers": rows, "types": emb.types}


def _aggregate(samples: list[dict]) -> list[dict]:
    """One row per layer over the token samples: the mean of every number, its min–max in ``spread``.

    Integer counts that differ between samples (``n_types``, ``k``) keep every sample's value in
    ``per_sample``; the cluster summary is the first sample's (the one the figures show).
    """
    rows = []
    for j, first in enumerate(samples[0]["layers"]):
        group = [s["layers"][j] for s in samples]
        row = {"layer": first["layer"], "n_samples": len(group), "spread": {}, "per_sample": {}}
        for key, value in first.items():
            if key in ("layer", "clusters", "seconds"):
                continue
            values = [g[key] for g in group]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                row[key] = value
            elif isinstance(value, int) and all(isinstance(v, int) for v in values):
                row[key] = value if len(set(values)) == 1 else float(np.mean(values))
                if len(set(values)) > 1:
                    row["per_sample"][key] = values
            else:
                finite = [float(v) for v in values if v is not None and math.isfinite(v)]
                row[key] = float(np.mean(finite)) if len(finite) == len(values) else math.nan
                row["spread"][key] = [min(finite), max(finite)] if finite else [math.nan, math.nan]
        row["clusters"] = first.get("clusters", [])
        row["seconds"] = float(sum(g.get("seconds", 0.0) for g in group))
        rows.append(row)
    return rows


def run(config, results_dir, ctx) -> dict:
    """Run the layer-geometry experiment described by ``config``; return (and write) the results.

    ``config`` (a :class:`~isotropy.experiments.layer_geometry.config.LayerGeometryConfig`) keys (see ``isotropy/configs/layer-geometry/*.yaml``): ``model``, ``corpus``
    (``wikitext-2``, ``ptb`` or a text file), ``split``, ``layers``, ``pooling``, ``max_tokens``,
    ``max_per_type``, ``skip_types``, ``shuffle``, ``max_length``, ``leading_space`` (``auto``: where
    the tokenizer needs it, as in running text), ``batch_size``, ``dtype``, ``seeds`` (one token sample per seed: the lines visited, the instance draws and K-means),
    ``metrics`` (see :data:`~isotropy.experiments.layer_geometry.metrics.DEFAULT_METRICS`),
    ``static`` (static vectors for the comparison row, or null), ``static_vocabulary`` (``corpus``:
    every corpus word type; ``kept``: the types of the kept tokens), ``pca_layers`` (layers projected
    for the figures, from the first seed's sample; null: the middle layer), ``pca_max_points``.
    Device, threads and the data directory come from ``ctx``.

    ``metrics.json`` holds every sample (``samples``: per seed, per layer) and ``layers``, one row per
    layer with the mean over the samples and the min–max in ``spread``; the table shows the means.
    """
    prepared = ctx.prepared
    log = ctx.log
    results_dir = Path(results_dir)
    seeds = [int(s) for s in config.seeds]
    metric_options = config.metrics.model_dump()
    timings = {}
    start = time.perf_counter()
    corpus, network = prepared["corpus"], prepared["network"]
    device_used = str(next(network.parameters()).device)
    samples = [_sample(config, prepared, seed, results_dir=results_dir, log=log, show_progress=ctx.show_progress,
                       project=i == 0) for i, seed in enumerate(seeds)]
    prepared.pop("network", None)
    del network
    timings["extraction_s"] = sum(s.pop("extraction_s") for s in samples)
    kept_types = samples[0]["types"]
    for sample in samples:
        del sample["types"]
    timings["layers_s"] = sum(r["seconds"] for s in samples for r in s["layers"])

    static = None
    if config.static:
        t = time.perf_counter()
        skip = set(config.skip_types or ())
        vocabulary = config.static_vocabulary
        types = corpus.word_counts() if vocabulary == "corpus" else kept_types  # kept: the first sample's types
        X, words = static_space([w for w in types if w not in skip], vectors=config.static)
        static = {"name": "GloVe 6B 50d" if config.static == "glove-6b-50d" else str(config.static),
                  "vectors": str(config.static), "vocabulary": vocabulary,
                  **space_metrics(X, np.arange(len(words)), seed=seeds[0], **metric_options)}
        timings["static_s"] = time.perf_counter() - t
        log(f"static {static['name']}: {len(words):,} of the corpus types; LID (cosine) {static['lid_cosine']:.2f}")
    timings["total_s"] = time.perf_counter() - start

    first = samples[0]
    results = {
        "experiment": EXPERIMENT, "model": str(config.model), "model_location": prepared["location"],
        "device": device_used, "corpus": corpus.name, "corpus_source": corpus.source,
        "n_layers": prepared["n_layers"], "pooling": config.pooling, "seeds": seeds,
        "n_tokens": first["n_tokens"], "n_types": first["n_types"], "extraction": first["extraction"],
        "metric_options": metric_options, "pca_layers": prepared["pca_layers"],
        "layers": _aggregate(samples), "samples": samples, "static": static, "timings": timings,
    }
    write_json(results_dir / "metrics.json", results)
    write_text(results_dir / "metrics.md", markdown_table(results))
    return results


# --- claims: the rules are fixed in this code, not typed (written after first results; see contract.md) (Cai, Huang, Bian & Church, ICLR 2021, slides:
# S_inter / S_intra high; cluster-centring reveals near-isotropy, worded here by the mean cosine and by IsoScore;
# Section 4: tokens lie on a manifold ordered by word frequency) -------------------------------------------------

_PAPER = "Cai, Huang, Bian & Church, ICLR 2021, slides"
CONTEXTUAL_FROM = 1  # the claims read the layers >= 1: layer 0 is the static input-embedding lookup


def _contextual(row: dict) -> bool:
    """Whether a per-layer row is a contextual layer (layer >= 1); a row without a layer number counts as one."""
    layer = row.get("layer")
    return layer is None or int(layer) >= CONTEXTUAL_FROM


def claims(results, results_dir, *, model: str | None = None, reason: str | None = None) -> list:
    """Cai et al.'s space-level claims over the contextual layers, one value per token sample (a sample is one seed).

    The claims are about contextual token spaces, so every statistic is taken over the layers >= 1
    (:data:`CONTEXTUAL_FROM`): layer 0 is the static input-embedding lookup, not a contextual layer, and
    is left out (on Gemma it alone would decide "S_inter is high at every layer").
    """
    from isotropy.experiments._claims import Rule, claim, command_of, not_run, run_config

    rules = {
        "s_inter": Rule("holds if S_inter (mean cosine of tokens of different types) is above 0.3 at every contextual "
                        "layer (layer >= 1), in every token sample", above=0.3),
        "s_inter_centered": Rule("holds if S_inter after cluster-centring is below 0.1 at every contextual layer "
                                 "(layer >= 1), in every token sample", below=0.1),
        "isoscore_centered": Rule("holds if IsoScore after cluster-centring is above 0.5 at every contextual layer "
                                  "(layer >= 1), in every token sample", above=0.5),
        "pc1_frequency_rho": Rule("holds if |Spearman ρ| between the first principal component and the word's corpus "
                                  "frequency is above 0.5 at some contextual layer (layer >= 1), in every token "
                                  "sample", above=0.5),
    }
    left_out = "layer 0, the input embeddings, is static and left out"
    specs = [("anisotropic-globally", "S_inter is high at every layer: contextual token spaces are anisotropic.",
              "high for every model and layer", f"smallest S_inter over the contextual layers ({left_out})",
              "s_inter", min),
             ("centring-near-isotropic-cosine", "Cluster-centring reveals near-isotropy (by the mean cosine).",
              "adjusted S_inter near 0",
              f"largest S_inter after cluster-centring over the contextual layers ({left_out})", "s_inter_centered",
              max),
             ("centring-near-isotropic-isoscore", "Cluster-centring reveals near-isotropy (by IsoScore).",
              "near-isotropic after centring",
              f"smallest IsoScore after cluster-centring over the contextual layers ({left_out})",
              "isoscore_centered", min),
             ("frequency-manifold", ("The first principal component of the token space is ordered by word frequency "
              "(Cai et al. Section 4's frequency-coloured PCA pictures)."),
              "frequency-ordered manifolds (Swiss roll in GPT-2)",
              ("largest |Spearman ρ| between the first principal component and corpus frequency over the contextual "
               f"layers ({left_out}): 'at some layer' is this maximum, a selection of the best layer, not a value "
               "at a layer fixed in advance"),
              "pc1_frequency_rho", max)]
    config = run_config(results_dir) if results_dir is not None else {}
    command = (command_of(results_dir, "isotropy run layer-geometry --data-dir DATA_DIR") if results_dir is not None
               else "isotropy run layer-geometry --data-dir DATA_DIR")
    model = model or str((results or {}).get("model") or config.get("model", "–"))
    samples = (results or {}).get("samples") or []
    out = []
    for id_, text, paper_value, statistic, key, pick in specs:
        values = []  # one per token sample: the smallest (or largest) value over the contextual layers
        for sample in samples:
            per_layer = [float(r[key]) for r in sample["layers"] if _contextual(r) and r.get(key) is not None
                         and math.isfinite(r[key])]
            if per_layer:
                values.append(pick(per_layer))
        if values:
            out.append(claim(id=id_, paper=_PAPER, claim=text, paper_value=paper_value, model=model,
                             statistic=f"{statistic} ({len(values)} token sample(s), one per seed)", values=values,
                             rule=rules[key], command=command))
        else:
            out.append(not_run(id=id_, paper=_PAPER, claim=text, paper_value=paper_value, model=model,
                               statistic=statistic, rule=rules[key], command=command,
                               reason=reason or f"the run has no {key!r} per contextual layer (layer >= 1)"))
    return out


def report(results, results_dir) -> str:
    """Write ``claims.json`` beside the results; the command prints ``metrics.md``."""
    from isotropy.experiments._claims import write_claims

    write_claims(results_dir, claims(results, results_dir))
    path = Path(results_dir) / "metrics.md"
    return path.read_text(encoding="utf-8") if path.is_file() else ""
