"""The I-STAR / CosReg sweep of Rudman & Eickhoff: ``run(config, results_dir) -> results``.

Each finished run is written atomically to ``runs/<run_id>.json``; an interrupted sweep started
again with ``--resume`` skips the finished runs and continues the unfinished one from its
last mid-run checkpoint (``checkpoints/<run_id>.pt``). The summary over seeds goes to
``results.json`` and ``results.md``, rewritten after every finished run.
"""

from __future__ import annotations

import time
from pathlib import Path

from isotropy.experiments.istar.tables import collect_results, markdown_table, summarise
from isotropy.experiments.istar.train import RunSpec

__all__ = ["EXPERIMENT", "markdown_table", "prepare", "resolve", "run", "summarise", "sweep_specs"]

EXPERIMENT = "istar"


def resolve(config) -> dict:
    """The validated config as a plain dict, ``metric: auto`` filled from the task, ``cosreg: false/0`` as None."""
    from isotropy.experiments.istar.data import GLUE_METRICS

    config = config.model_dump() if hasattr(config, "model_dump") else dict(config)
    if config.get("metric", "auto") == "auto":
        config["metric"] = GLUE_METRICS.get(str(config.get("task")).lower(), "accuracy")
    if config.get("cosreg") is False or config.get("cosreg") == 0:
        config["cosreg"] = None
    return config


def sweep_specs(config: dict) -> list[RunSpec]:
    """The runs of the sweep, seed-major: for each seed, base, the I-STAR λs, then CosReg."""
    specs = []
    for seed in config["seeds"]:
        if config.get("baseline", True):
            specs.append(RunSpec("none", 0.0, seed))
        specs += [RunSpec("istar", float(lam), seed) for lam in config["lambdas"]]
        if config.get("cosreg") is not None:
            specs.append(RunSpec("cosreg", float(config["cosreg"]), seed))
    return specs


def prepare(config, ctx) -> dict:
    """Load and tokenise the data, load the encoder: before the results directory is touched."""
    from isotropy.experiments.istar.data import load_splits, subsample, tokenise
    from isotropy.experiments.istar.model import load_encoder

    config = resolve(config)
    train_data, valid_data = load_splits(config, data_dir=ctx.data_dir)
    train_data = subsample(train_data, config.get("train_size"), seed=int(config.get("data_seed", 0)))
    valid_data = subsample(valid_data, config.get("validation_size"), seed=int(config.get("data_seed", 0)))
    tokenizer, encoder = load_encoder(config["model"])
    return {"train_data": train_data, "valid_data": valid_data, "encoder": encoder,
            "train": tokenise(tokenizer, train_data, max_length=config["max_length"]),
            "valid": tokenise(tokenizer, valid_data, max_length=config["max_length"])}


def run(config, results_dir, ctx) -> dict:
    """Run the sweep of ``config`` into ``results_dir``; returns ``{"runs": [...], "summary": [...]}``.

    Finished runs (``runs/<run_id>.json``, kept on ``--resume`` when their seed and config hash
    match) are read back instead of re-run; an unfinished run continues from its checkpoint.
    """
    import torch

    from isotropy.experiments.istar import train as train_module

    config = resolve(config)
    results_dir = Path(results_dir)
    prepared = ctx.prepared
    device = torch.device(ctx.device)
    started = time.perf_counter()
    train_data, valid_data = prepared["train_data"], prepared["valid_data"]
    specs = sweep_specs(config)
    ctx.record(data={"train": train_data.source, "validation": valid_data.source,
                     "n_train": len(train_data), "n_validation": len(valid_data)},
               runs=[s.run_id for s in specs], resolved_metric=config["metric"])
    n_classes = len(train_data.label_names)
    for k, spec in enumerate(specs, start=1):
        part = f"runs/{spec.run_id}.json"
        if ctx.read_part(part, seed=spec.seed) is not None:
            ctx.log(f"[{k}/{len(specs)}] {spec.run_id}: finished earlier, skipped")
            continue
        record = train_module.train_run(spec, config, prepared["encoder"], n_classes, prepared["train"],
                                        prepared["valid"], device=device,
                                        checkpoint=results_dir / "checkpoints" / f"{spec.run_id}.pt",
                                        log=ctx.log)
        ctx.write_part(part, record, seed=spec.seed)
        ctx.log(f"[{k}/{len(specs)}] {spec.run_id}: {record['metric']}={record['score']:.4f} "
                f"IsoScore*={record['isoscore_star']:.4f} TwoNN={record['twonn_dimension']:.2f} "
                f"({record['seconds']:.0f} s)")
        collect_results(results_dir, planned=[s.run_id for s in specs],
                        metric=config["metric"])  # an interrupted sweep keeps its partial table
    return collect_results(results_dir, planned=[s.run_id for s in specs], metric=config["metric"],
                           seconds=round(time.perf_counter() - started, 1))
