"""The I-STAR / CosReg sweep of Rudman & Eickhoff: ``run(config, results_dir) -> results``.

Each finished run is written atomically to ``runs/<run_id>.json``; an interrupted sweep started
again with ``resume=True`` skips the finished runs and continues the unfinished one from its
last mid-run checkpoint (``checkpoints/<run_id>.pt``). The summary over seeds goes to
``results.json`` and ``results.md``, rewritten after every finished run.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from isotropy.experiments._results import write_json, write_run_metadata
from isotropy.experiments.istar.tables import collect_results, markdown_table, summarise
from isotropy.experiments.istar.train import RunSpec

__all__ = ["EXPERIMENT", "markdown_table", "resolve_config", "run", "summarise", "sweep_specs"]

EXPERIMENT = "istar"
# keys whose change does not change the numbers: a sweep may resume with other values
_VOLATILE = {"device", "num_threads"}


def _fail(key, value, expected):
    raise ValueError(f"The '{key}' option of istar must be {expected}. Got {value!r} instead.")


def resolve_config(config: dict) -> dict:
    """Validate the config and fill ``metric: auto`` from the task; returns a new dict."""
    from isotropy.experiments.istar.data import GLUE_METRICS, METRICS
    from isotropy.experiments.istar.model import LEVELS, POOLINGS

    config = json.loads(json.dumps(config))  # deep copy, plain types
    for key in ("epochs", "batch_size", "eval_batch_size", "max_length"):
        value = config.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            _fail(key, value, "a positive int")
    for key in ("train_size", "validation_size"):
        value = config.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 2):
            _fail(key, value, "an int >= 2 or null (all items)")
    for key in ("lr", "weight_decay", "warmup_ratio", "dropout"):
        value = config.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or (key != "lr" and value > 1
                                                                                          and key != "weight_decay"):
            _fail(key, value, "a non-negative float" + ("" if key in ("lr", "weight_decay") else " in [0, 1]"))
    if config.get("pooling") not in POOLINGS:
        _fail("pooling", config.get("pooling"), f"one of {list(POOLINGS)}")
    seeds = config.get("seeds")
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                                                          for s in seeds) or len(set(seeds)) != len(seeds):
        _fail("seeds", seeds, "a non-empty list of distinct non-negative ints")
    lambdas = config.get("lambdas")
    if not isinstance(lambdas, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                and np.isfinite(v) and v != 0 for v in lambdas):
        _fail("lambdas", lambdas, "a list of non-zero finite numbers (the I-STAR weights)")
    istar = config.get("istar") or {}
    zeta = istar.get("zeta")
    if isinstance(zeta, bool) or not isinstance(zeta, (int, float)) or not 0 <= zeta <= 1:
        _fail("istar.zeta", zeta, "a float in the range [0, 1]")
    if istar.get("level") not in LEVELS:
        _fail("istar.level", istar.get("level"), f"one of {list(LEVELS)}")
    sample = istar.get("shrinkage_sample")
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 2:
        _fail("istar.shrinkage_sample", sample, "an int >= 2 (training items whose states estimate Sigma_S)")
    cosreg = config.get("cosreg")
    if cosreg is False or cosreg == 0:
        config["cosreg"] = cosreg = None
    if cosreg is not None and (isinstance(cosreg, bool) or not isinstance(cosreg, (int, float)) or not np.isfinite(cosreg)):
        _fail("cosreg", cosreg, "a non-zero finite number (the CosReg weight), or false / 0 / null for no CosReg runs")
    head_lr = config.get("head_lr")
    if head_lr is not None and (isinstance(head_lr, bool) or not isinstance(head_lr, (int, float)) or head_lr <= 0):
        _fail("head_lr", head_lr, "a positive float or null (the encoder's lr)")
    every = config.get("checkpoint_every", 0)
    if isinstance(every, bool) or not isinstance(every, int) or every < 0:
        _fail("checkpoint_every", every, "an int >= 0 (0 = no mid-run checkpoints)")
    clip = config.get("max_grad_norm")
    if clip is not None and (isinstance(clip, bool) or not isinstance(clip, (int, float)) or clip <= 0):
        _fail("max_grad_norm", clip, "a positive float or null (no clipping)")
    threads = config.get("num_threads")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        _fail("num_threads", threads, "a positive int or null (torch's default)")
    metric = config.get("metric", "auto")
    if metric == "auto":
        metric = GLUE_METRICS.get(str(config.get("task")).lower(), "accuracy")
    if metric not in METRICS:
        _fail("metric", metric, f"'auto' or one of {list(METRICS)}")
    config["metric"] = metric
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


def _comparable(config: dict) -> dict:
    return {k: v for k, v in config.items() if k not in _VOLATILE}


def _check_resume(results_dir: Path, config: dict, resume: bool):
    meta = results_dir / "run.json"
    finished = sorted((results_dir / "runs").glob("*.json"))
    unfinished = sorted((results_dir / "checkpoints").glob("*.pt"))
    if not resume:
        if finished or unfinished:
            raise FileExistsError(f"The results directory {str(results_dir)!r} already holds {len(finished)} finished "
                                  f"and {len(unfinished)} unfinished runs; pass --resume to continue that sweep or "
                                  f"choose another --results-dir.")
        return
    if meta.is_file():
        previous = json.loads(meta.read_text()).get("config", {})
        if _comparable(previous) != _comparable(config):
            changed = sorted(k for k in set(previous) | set(config) - _VOLATILE
                             if k not in _VOLATILE and previous.get(k) != config.get(k))
            raise ValueError(f"--resume: the config differs from the one in {str(meta)!r} (keys {changed}); "
                             f"resume with the same settings or choose another --results-dir.")


def run(config: dict, results_dir, *, resume: bool = False, device: str | None = None, log=print,
        _interrupt: tuple[str, int] | None = None) -> dict:
    """Run the sweep of ``config`` into ``results_dir``; returns ``{"runs": [...], "summary": [...]}``.

    ``device`` overrides ``config["device"]`` (default ``"cpu"``). With ``resume=True`` finished
    runs are read back instead of re-run and an unfinished run continues from its checkpoint;
    without it, a directory that already holds finished runs is an error.
    """
    import torch

    from isotropy.experiments.istar.data import load_splits, subsample, tokenise
    from isotropy.experiments.istar.model import load_encoder
    from isotropy.experiments.istar.train import train_run

    if device is not None:
        config = {**config, "device": device}
    config = resolve_config(config)
    device = torch.device(config.get("device") or "cpu")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"The 'device' option of istar is {str(device)!r} but CUDA is not available here; "
                         f"use --device cpu.")
    results_dir = Path(results_dir)
    _check_resume(results_dir, config, resume)
    if config.get("num_threads"):
        torch.set_num_threads(int(config["num_threads"]))
    log = log or (lambda message: None)
    started = time.perf_counter()
    train_data, valid_data = load_splits(config)
    train_data = subsample(train_data, config.get("train_size"), seed=int(config.get("data_seed", 0)))
    valid_data = subsample(valid_data, config.get("validation_size"), seed=int(config.get("data_seed", 0)))
    specs = sweep_specs(config)
    write_run_metadata(results_dir, experiment=EXPERIMENT, config=config, seeds=config["seeds"],
                       extra={"data": {"train": train_data.source, "validation": valid_data.source,
                                       "n_train": len(train_data), "n_validation": len(valid_data)},
                              "runs": [s.run_id for s in specs]})
    tokenizer, encoder = load_encoder(config["model"])
    train = tokenise(tokenizer, train_data, max_length=config["max_length"])
    valid = tokenise(tokenizer, valid_data, max_length=config["max_length"])
    n_classes = len(train_data.label_names)
    for k, spec in enumerate(specs, start=1):
        done = results_dir / "runs" / f"{spec.run_id}.json"
        if done.is_file():
            log(f"[{k}/{len(specs)}] {spec.run_id}: finished earlier, skipped")
            continue
        interrupt = _interrupt[1] if _interrupt and _interrupt[0] == spec.run_id else None
        record = train_run(spec, config, encoder, n_classes, train, valid, device=device,
                           checkpoint=results_dir / "checkpoints" / f"{spec.run_id}.pt",
                           interrupt_at_step=interrupt, log=log)
        write_json(done, record)
        log(f"[{k}/{len(specs)}] {spec.run_id}: {record['metric']}={record['score']:.4f} "
            f"IsoScore*={record['isoscore_star']:.4f} TwoNN={record['twonn_dimension']:.2f} ({record['seconds']:.0f} s)")
        collect_results(results_dir)  # tables after every run: an interrupted sweep keeps its partial table
    return collect_results(results_dir, seconds=round(time.perf_counter() - started, 1))
