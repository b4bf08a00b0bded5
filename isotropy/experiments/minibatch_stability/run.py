"""``run(config, results_dir) -> results`` of the mini-batch stability experiment (never plots).

Two point clouds, each scored on ``n_batches`` mini-batches of every size for every seed:

- ``synthetic``: fresh draws from N(0, diag(λ)) with a power-law spectrum; the whole-cloud value is
  the closed form IsoScore(Σ) and every (size, ζ) also gets the Wishart prediction of
  :func:`~isotropy.experiments.minibatch_stability.science.expected_batch_isoscore`.
- ``embeddings``: the mean-pooled sentence embeddings of a GLUE split (SST-2 validation by default);
  batches are drawn without replacement from its rows, the whole-cloud value is the IsoScore* of all
  rows. Sizes above the number of rows are left out (and listed in the results).

Σ_S (``shrinkage: sample``) is the covariance of ``shrinkage_sample`` held-out rows: an independent draw
of the Gaussian, or sentences of ``embeddings.shrinkage_split`` (SST-2 train), as I-STAR estimates it
from a stored training sample.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from isotropy import isoscore, isoscore_star
from isotropy.experiments.minibatch_stability.science import (
    batch_scores,
    expected_batch_isoscore,
    power_law_spectrum,
    summarise_scores,
)
from isotropy.metrics.isoscore import isoscore_from_covariance

__all__ = ["EXPERIMENT", "embed_split", "markdown_table", "prepare", "run"]

EXPERIMENT = "minibatch-stability"


def _subset(n: int, size: int, seed) -> np.ndarray:
    """Sorted indices of ``min(size, n)`` rows chosen without replacement."""
    if size >= n:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=size, replace=False))


def embed_split(spec, split: str, *, data_dir=None, device=None, rows: int | None = None, seed: int = 0):
    """Mean-pooled embeddings (n_sentences, n_features) of ``split`` of ``spec.task`` (all or ``rows`` sentences)."""
    from isotropy.datasets.glue import load_glue_task
    from isotropy.models.encoders import encode_mean_pooled

    data = load_glue_task(spec.task, split, data_dir=data_dir)
    idx = np.arange(len(data)) if rows is None else _subset(len(data), rows, seed)
    texts = [data.text_a[i] for i in idx]
    X = encode_mean_pooled(texts, model=spec.model, device=device, layer=spec.layer, batch_size=spec.batch_size,
                           max_length=spec.max_length)
    return np.asarray(X, dtype=np.float64), {**data.source, "n_sentences": len(texts)}


def _sample_cov(X: np.ndarray) -> np.ndarray:
    return np.cov(X, rowvar=False, ddof=1)


def _score(X, zeta, shrinkage_cov):
    return float(isoscore(X) if zeta == 0.0 else isoscore_star(X, shrinkage_cov=shrinkage_cov, zeta=zeta))


def _synthetic(config, log) -> dict:
    spec = config.synthetic
    lam = power_law_spectrum(spec.n_features, decay=spec.decay)
    scale = np.sqrt(lam)
    cov = np.diag(lam)
    shrink = None
    if config.shrinkage == "sample":
        held_out = np.random.default_rng([config.seeds[0], 1]).normal(size=(config.shrinkage_sample, spec.n_features))
        shrink = _sample_cov(held_out * scale)
    truth = isoscore_from_covariance(cov)
    reference = {z: float(isoscore_from_covariance(cov, shrinkage_cov=shrink, zeta=z)) for z in config.zetas}
    rows = []
    for seed in config.seeds:
        log(f"synthetic cloud (d={spec.n_features}, decay={spec.decay:g}, IsoScore {truth:.4f}): seed {seed}")

        def draw(size, index, seed=seed):
            return np.random.default_rng([seed, 0, size, index]).normal(size=(size, spec.n_features)) * scale

        rows += [{**r, "seed": seed} for r in batch_scores(draw, config.batch_sizes, config.zetas,
                                                           n_batches=config.n_batches, shrinkage_cov=shrink)]
    summary = summarise_scores(rows, reference={z: truth for z in config.zetas})
    for row in summary:
        row["whole_cloud_star"] = reference[row["zeta"]]
        row["predicted"] = expected_batch_isoscore(cov, row["batch_size"], zeta=row["zeta"], shrinkage_cov=shrink)
    return {"kind": "synthetic", "n_features": spec.n_features, "decay": spec.decay, "whole_cloud": truth,
            "whole_cloud_star": reference, "shrinkage_isoscore": None if shrink is None else isoscore_from_covariance(shrink),
            "batch_sizes": list(config.batch_sizes), "skipped_batch_sizes": [], "summary": summary, "scores": rows}


def prepare(config, ctx) -> dict:
    """Encode the sentence cloud and the held-out sample of Σ_S (when ``embeddings`` is a source); writes nothing."""
    if "embeddings" not in config.sources:
        return {}
    spec = config.embeddings
    ctx.log(f"encoding {spec.task}/{spec.split} with {spec.model} (layer {spec.layer})")
    X, source = embed_split(spec, spec.split, data_dir=ctx.data_dir, device=ctx.device)
    prepared = {"X": X, "source": source, "held_out": None, "held_out_source": None}
    if config.shrinkage == "sample":
        ctx.log(f"encoding {config.shrinkage_sample} sentences of {spec.task}/{spec.shrinkage_split} for Σ_S")
        prepared["held_out"], prepared["held_out_source"] = embed_split(
            spec, spec.shrinkage_split, data_dir=ctx.data_dir, device=ctx.device, rows=config.shrinkage_sample,
            seed=[config.seeds[0], 1])
    return prepared


def _embeddings(config, prepared: dict, log) -> dict:
    spec = config.embeddings
    X, source = prepared["X"], prepared["source"]
    n, d = X.shape
    held_out, shrink_source = prepared["held_out"], prepared["held_out_source"]
    shrink = None if held_out is None else _sample_cov(held_out)
    sizes = [b for b in config.batch_sizes if b <= n]
    skipped = [b for b in config.batch_sizes if b > n]
    if skipped:
        log(f"batch sizes {skipped} exceed the {n} rows of the cloud: left out")
    whole = isoscore(X)
    reference = {z: _score(X, z, shrink) for z in config.zetas}
    rows = []
    for seed in config.seeds:
        log(f"{spec.task}/{spec.split} cloud ({n} x {d}, IsoScore {whole:.4f}): seed {seed}")

        def draw(size, index, seed=seed):
            return X[np.random.default_rng([seed, 0, size, index]).choice(n, size=size, replace=False)]

        rows += [{**r, "seed": seed} for r in batch_scores(draw, sizes, config.zetas, n_batches=config.n_batches,
                                                           shrinkage_cov=shrink)]
    summary = summarise_scores(rows, reference={z: whole for z in config.zetas}) if rows else []
    for row in summary:
        row["whole_cloud_star"] = reference[row["zeta"]]
    return {"kind": "embeddings", "model": spec.model, "task": spec.task, "split": spec.split, "n_samples": n,
            "n_features": d, "whole_cloud": whole, "whole_cloud_star": reference,
            "shrinkage_isoscore": None if shrink is None else isoscore(held_out),
            "data": source, "shrinkage_data": shrink_source, "batch_sizes": sizes, "skipped_batch_sizes": skipped,
            "summary": summary, "scores": rows}


def _fmt(value) -> str:
    return "–" if value is None else f"{value:.3f}"


def markdown_table(results: dict) -> str:
    """One table per cloud: mean ± sd of each score per batch size and ζ, with the whole-cloud value."""
    lines = []
    for name, cloud in results["clouds"].items():
        zetas = sorted({r["zeta"] for r in cloud["summary"]})
        title = (f"synthetic N(0, diag(i^-{cloud['decay']:g})), d = {cloud['n_features']}" if cloud["kind"] == "synthetic"
                 else f"{cloud['task']}/{cloud['split']} ({cloud['n_samples']} sentences, {cloud['model']})")
        lines += [f"### {name}: {title}", "",
                  f"Whole-cloud IsoScore: {cloud['whole_cloud']:.4f}" + (
                      f" (closed form); Σ_S {results['shrinkage']}" if cloud["kind"] == "synthetic"
                      else f"; Σ_S {results['shrinkage']}"), ""]
        header = "| batch | " + " | ".join("IsoScore" if z == 0 else f"ζ = {z:g}" for z in zetas) + " |"
        lines += [header, "|" + "---|" * (len(zetas) + 1)]
        for size in cloud["batch_sizes"]:
            cells = []
            for z in zetas:
                row = next(r for r in cloud["summary"] if r["batch_size"] == size and r["zeta"] == z)
                cells.append(f"{row['mean']:.3f} ± {row['std']:.3f}")
            lines.append(f"| {size} | " + " | ".join(cells) + " |")
        lines.append("| whole cloud | " + " | ".join(_fmt(cloud["whole_cloud_star"][z]) for z in zetas) + " |")
        if cloud["skipped_batch_sizes"]:
            lines += ["", f"Left out (more rows than the cloud has): {cloud['skipped_batch_sizes']}."]
        lines.append("")
    return "\n".join(lines)


def _write_scores(path: Path, results: dict) -> None:
    from isotropy._utils.atomic import atomic_write

    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["cloud", "seed", "batch_size", "batch", "zeta", "score"])
    for name, cloud in results["clouds"].items():
        for r in cloud["scores"]:
            writer.writerow([name, r["seed"], r["batch_size"], r["batch"], r["zeta"], repr(r["score"])])
    with atomic_write(path) as handle:
        handle.write(buffer.getvalue())


def run(config, results_dir, ctx) -> dict:
    """Score every cloud, write ``results.json``, ``results.md`` and ``scores.csv`` to ``results_dir``; never plots.

    Returns the results dict (``clouds`` -> per cloud: whole-cloud values, per-(size, ζ) summary, raw scores).
    """
    from isotropy.experiments._results import write_json, write_text

    results_dir = Path(results_dir)
    prepared = ctx.prepared
    clouds = {}
    if "synthetic" in config.sources:
        clouds["synthetic"] = _synthetic(config, ctx.log)
    if "embeddings" in config.sources:
        clouds[config.embeddings.task] = _embeddings(config, prepared, ctx.log)
        ctx.record(data={"cloud": prepared["source"], "shrinkage_sample": prepared["held_out_source"]})
    results = {"experiment": EXPERIMENT, "shrinkage": (f"= covariance of {config.shrinkage_sample} held-out rows"
                                                      if config.shrinkage == "sample" else "= identity"),
               "zetas": list(config.zetas), "seeds": list(config.seeds), "clouds": clouds}
    _write_scores(results_dir / "scores.csv", results)
    compact = {**results, "clouds": {k: {kk: vv for kk, vv in v.items() if kk != "scores"} for k, v in clouds.items()}}
    write_json(results_dir / "results.json", compact)
    write_text(results_dir / "results.md", markdown_table(results))
    return results
