"""The I-STAR / CosReg sweep of Rudman & Eickhoff: ``run(config, results_dir) -> results``.

Each finished run is written atomically to ``runs/<run_id>.json``; an interrupted sweep started
again with ``--resume`` skips the finished runs and continues the unfinished one from its
last mid-run checkpoint (``checkpoints/<run_id>.pt``). The summary over seeds goes to
``results.json`` and ``results.md``, rewritten after every finished run.
"""

from __future__ import annotations

import time
from pathlib import Path

from isotropy.experiments._finetune.config import resolve, sweep_specs
from isotropy.experiments.istar.tables import collect_results, markdown_table, summarise

__all__ = ["EXPERIMENT", "markdown_table", "prepare", "run", "summarise"]

EXPERIMENT = "istar"


def prepare(config, ctx) -> dict:
    """Load and tokenise the data, load the encoder: before the results directory is touched."""
    from isotropy.experiments._finetune.data import prepare as prepare_finetuning

    return prepare_finetuning(resolve(config), data_dir=ctx.data_dir)


def run(config, results_dir, ctx) -> dict:
    """Run the sweep of ``config`` into ``results_dir``; returns ``{"runs": [...], "summary": [...]}``.

    Finished runs (``runs/<run_id>.json``, kept on ``--resume`` when their seed and config hash
    match) are read back instead of re-run; an unfinished run continues from its checkpoint.
    """
    import torch

    from isotropy.experiments._finetune import train as train_module

    config = resolve(config)
    results_dir = Path(results_dir)
    prepared = ctx.prepared
    device = torch.device(ctx.device)
    started = time.perf_counter()
    train_data, valid_data = prepared["train_data"], prepared["valid_data"]
    specs = sweep_specs(config)
    ctx.record(data={"train": train_data.source, "validation": valid_data.source,
                     "n_train": len(train_data), "n_validation": len(valid_data)},
               runs=[s.run_id for s in specs], resolved_metric=config.metric)
    n_classes = len(train_data.label_names)
    for k, spec in enumerate(specs, start=1):
        part = f"runs/{spec.run_id}.json"
        if ctx.read_part(part, seed=spec.seed, keys=train_module.RECORD_KEYS) is not None:
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
                        metric=config.metric)  # an interrupted sweep keeps its partial table
    return collect_results(results_dir, planned=[s.run_id for s in specs], metric=config.metric,
                           seconds=round(time.perf_counter() - started, 1))
