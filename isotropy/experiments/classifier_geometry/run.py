"""``run(config) -> results``: every seed of one setup (or the GLUE grid), resumable, written atomically.

Layout of a results directory (one setup)::

    run.json, config.yaml     resolved config, seeds, command, versions (write_run_metadata)
    seeds/seed_<s>.json       one finished seed: per-step metrics and timing (written atomically)
    metrics.csv               per seed and recorded step: loss, accuracy, micro_f1, isoscore, silhouette
    curves.csv                per step: mean and std over seeds
    summary.json              data, final values, correlations, timing
    correlations.md/.json     the correlation table
    figures/*.png, *.svg      Figures 2 and 3 (and 4 for the GLUE grid)

The GLUE setup writes one such directory per model and task under ``<results_dir>/<model>/<task>/``
and the grid's table and Figure 4 at the top.
"""

from __future__ import annotations

import json
import numbers
from pathlib import Path

from isotropy._validation import IsotropyValueError, check_scalar
from isotropy.experiments._results import data_dir as default_data_dir
from isotropy.experiments._results import write_json, write_run_metadata, write_text

__all__ = ["EXPERIMENT", "default_results_dir", "run", "validate_config"]

EXPERIMENT = "classifier-geometry"
_CALLER = "classifier-geometry"
# keys that do not change the numbers: a resumed run may differ in these
_RUN_ONLY = {"seeds", "device", "threads", "results_dir", "encode_device"}


def default_results_dir(config) -> Path:
    return Path("results") / EXPERIMENT / str(config.get("setup", "custom"))


def validate_config(config: dict) -> dict:
    """Check the values of a resolved config; return it with normalised types."""
    config = dict(config)
    check_scalar(config.get("updates"), "updates", caller=_CALLER, kind=numbers.Integral, low=1)
    check_scalar(config.get("lr"), "lr", caller=_CALLER, kind=numbers.Real, low=0, closed="neither")
    check_scalar(config.get("metric_interval"), "metric_interval", caller=_CALLER, kind=numbers.Integral, low=1)
    check_scalar(config.get("sample_size"), "sample_size", caller=_CALLER, kind=numbers.Integral, low=3,
                 allow_none=True)
    seeds = config.get("seeds")
    if isinstance(seeds, numbers.Integral) and not isinstance(seeds, bool):
        seeds = [seeds]
    if (not isinstance(seeds, (list, tuple)) or not seeds
            or not all(isinstance(s, numbers.Integral) and not isinstance(s, bool) and s >= 0 for s in seeds)
            or len(set(seeds)) != len(seeds)):
        raise IsotropyValueError(f"The 'seeds' parameter of {_CALLER} must be a non-empty list of distinct "
                                 f"non-negative ints, e.g. 0,1,2,3,4. Got {seeds!r} instead.")
    config["seeds"] = [int(s) for s in seeds]
    config["lr"] = float(config["lr"])
    config["device"] = _check_device(config.get("device") or "cpu")
    check_scalar(config.get("threads"), "threads", caller=_CALLER, kind=numbers.Integral, low=1, allow_none=True)
    return config


def _check_device(device: str) -> str:
    import torch

    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError):
        raise IsotropyValueError(f"The 'device' parameter of {_CALLER} must be a torch device such as 'cpu', "
                                 f"'cuda' or 'cuda:1'. Got {device!r} instead.") from None
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise IsotropyValueError(f"The 'device' parameter of {_CALLER} is {device!r}, but torch sees no CUDA "
                                 f"device here; use --device cpu.")
    if parsed.type == "mps" and not torch.backends.mps.is_available():
        raise IsotropyValueError(f"The 'device' parameter of {_CALLER} is {device!r}, but MPS is not available here.")
    return str(parsed)


def _numbers_config(config: dict) -> dict:
    return {k: v for k, v in config.items() if k not in _RUN_ONLY}


def _seed_path(results_dir: Path, seed: int) -> Path:
    return results_dir / "seeds" / f"seed_{seed}.json"


def run(config: dict, *, results_dir=None, resume: bool = False, data_dir=None, show_progress: bool = True,
        echo=None) -> dict:
    """Run every seed of the setup described by ``config``; write and return the results.

    Parameters
    ----------
    config : dict
        A resolved config (see ``isotropy/configs/classifier-geometry/*.yaml``).
    results_dir : path-like, optional
        Defaults to ``config["results_dir"]`` or ``results/classifier-geometry/<setup>``.
    resume : bool, default=False
        Keep the seeds already finished in ``results_dir`` (their config must match) and run the rest.
    data_dir : path-like, optional
        Where data sets live (default ``$ISOTROPY_DATA``, else ``./data``).

    Returns
    -------
    dict
        ``{"results_dir", "summary", "paths"}`` (for the GLUE grid: ``"runs"`` with one per model and task).
    """
    config = validate_config(config)
    results_dir = Path(results_dir or config.get("results_dir") or default_results_dir(config))
    data_dir = default_data_dir(data_dir)
    if config.get("task") == "glue" and "glue_task" not in config:
        return _run_glue(config, results_dir=results_dir, resume=resume, data_dir=data_dir,
                         show_progress=show_progress, echo=echo)
    return _run_one(config, results_dir=results_dir, resume=resume, data_dir=data_dir,
                    show_progress=show_progress, echo=echo)


def _check_resumable(results_dir: Path, config: dict) -> None:
    meta = results_dir / "run.json"
    if not meta.is_file():
        return
    previous = json.loads(meta.read_text()).get("config", {})
    old, new = _numbers_config(previous), _numbers_config(config)
    if old != new:
        changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
        raise IsotropyValueError(f"Cannot resume in {results_dir}: its run used a different config (keys {changed} "
                                 f"differ). Use another --results-dir or drop --resume to start afresh.")


# every file a run writes (besides run.json/config.yaml, rewritten first): a fresh run removes the
# previous run's, so that an interrupted fresh run never leaves old results beside its new run.json
_OUTPUT_FILES = ("metrics.csv", "curves.csv", "summary.json", "correlations.json", "correlations.md")
_OUTPUT_GLOBS = ("seeds/seed_*.json", "figures/fig[234]_*.png", "figures/fig[234]_*.svg")


def _clear_outputs(results_dir: Path) -> None:
    stale = [results_dir / name for name in _OUTPUT_FILES]
    for pattern in _OUTPUT_GLOBS:
        stale += results_dir.glob(pattern)
    for path in stale:
        path.unlink(missing_ok=True)


def _run_one(config, *, results_dir: Path, resume: bool, data_dir, show_progress: bool, echo) -> dict:
    from tqdm.auto import tqdm

    from isotropy.experiments.classifier_geometry.problem import build_problem
    from isotropy.experiments.classifier_geometry.report import (
        correlation_markdown,
        curves,
        seed_frame,
        summarise,
    )
    from isotropy.experiments.classifier_geometry.train import train_seed

    if resume:
        _check_resumable(results_dir, config)
    else:
        _clear_outputs(results_dir)
    config = {**config, "encode_device": config["device"]}
    problem = build_problem(config, data_dir=data_dir, show_progress=show_progress)
    info = {"name": problem.name, "n_items": problem.n_items, "n_rows": int(problem.embeddings.shape[0]),
            "dim": int(problem.embeddings.shape[1]), "item_width": int(problem.index.shape[1]),
            "n_classes": problem.n_classes, "label_names": problem.label_names, "multilabel": problem.multilabel,
            "n_parameters": int(problem.n_parameters), "source": problem.source,
            "isoscore_on": "embedding matrix (distinct texts/words, unpaired)",
            "silhouette_on": "item representations (pairs: concatenation [premise; hypothesis]) with item labels"}
    write_run_metadata(results_dir, experiment=EXPERIMENT, config=config, seeds=config["seeds"],
                       extra={"data": info})
    records, todo = [], []
    for seed in config["seeds"]:
        path = _seed_path(results_dir, seed)
        if resume and path.is_file():
            records.append(json.loads(path.read_text()))
        else:
            todo.append(seed)
    if todo:
        bar = tqdm(total=len(todo) * config["updates"], desc=f"{config.get('setup')} ({problem.name})",
                   unit="update", disable=not show_progress)
        try:
            for seed in todo:
                bar.set_postfix(seed=seed)
                record = train_seed(problem, seed=seed, updates=config["updates"], lr=config["lr"],
                                    metric_interval=config["metric_interval"], sample_size=config["sample_size"],
                                    device=config["device"], threads=config.get("threads"), progress=bar.update)
                write_json(_seed_path(results_dir, seed), record)
                records.append(record)
        finally:
            bar.close()
    records.sort(key=lambda r: config["seeds"].index(r["seed"]))
    frame = seed_frame(records)
    paths = [results_dir / "metrics.csv", results_dir / "curves.csv"]
    write_text(paths[0], frame.to_csv(index=False))
    write_text(paths[1], curves(frame).to_csv(index=False))
    summary = summarise(info, config, records)
    name = config.get("setup") if config.get("task") != "glue" else f"{config['model_label']}/{config['glue_task']}"
    paths.append(write_json(results_dir / "summary.json", summary))
    paths.append(write_json(results_dir / "correlations.json", {name: summary["correlation"]}))
    paths.append(write_text(results_dir / "correlations.md", correlation_markdown({name: summary})))
    from isotropy.experiments.classifier_geometry.plot import plot_setup

    paths += plot_setup(results_dir)
    if echo:
        echo(f"{name}: IsoScore {summary['initial']['isoscore']['mean']:.3f} -> {summary['final']['isoscore']['mean']:.3f}, "
             f"silhouette {summary['initial']['silhouette']['mean']:.3f} -> {summary['final']['silhouette']['mean']:.3f}, "
             f"Pearson r {summary['correlation']['seed_means']['pearson_r']:.3f}")
    return {"results_dir": results_dir, "summary": summary, "paths": paths}


def model_label(model: str) -> str:
    """A short folder-safe name of a model ("all-MiniLM-L6-v2" -> "all-MiniLM-L6-v2", a path -> its name)."""
    return Path(str(model).rstrip("/")).name or "model"


def _run_glue(config, *, results_dir: Path, resume: bool, data_dir, show_progress: bool, echo) -> dict:
    from isotropy.experiments.classifier_geometry.plot import plot_glue_grid
    from isotropy.experiments.classifier_geometry.report import correlation_markdown

    tasks = config.get("tasks") or []
    models = config.get("models") or [config["model"]]
    if isinstance(tasks, str):
        tasks = [t for t in tasks.split(",") if t]
    if isinstance(models, str):
        models = [m for m in models.split(",") if m]
    from isotropy.datasets.glue import GLUE_TASKS

    unknown = [t for t in tasks if t not in GLUE_TASKS]
    if not tasks or unknown:
        raise IsotropyValueError(f"The 'tasks' parameter of {_CALLER} must be a non-empty list of GLUE tasks from "
                                 f"{sorted(GLUE_TASKS)}. Got {tasks!r} instead.")
    config = {**config, "tasks": list(tasks), "models": list(models)}
    if not resume:
        _clear_outputs(results_dir)
    write_run_metadata(results_dir, experiment=EXPERIMENT, config=config, seeds=config["seeds"],
                       extra={"grid": True})
    runs, summaries = {}, {}
    for model in models:
        for task in tasks:
            sub = {**config, "model": model, "glue_task": task, "model_label": model_label(model)}
            sub.pop("tasks", None)
            sub.pop("models", None)
            out = _run_one(sub, results_dir=results_dir / model_label(model) / task, resume=resume,
                           data_dir=data_dir, show_progress=show_progress, echo=echo)
            key = f"{model_label(model)}/{task}"
            runs[key] = out
            summaries[key] = out["summary"]
    paths = [write_json(results_dir / "correlations.json", {k: s["correlation"] for k, s in summaries.items()}),
             write_text(results_dir / "correlations.md", correlation_markdown(summaries)),
             write_json(results_dir / "summary.json", summaries)]
    paths += plot_glue_grid(results_dir)
    return {"results_dir": results_dir, "runs": runs, "summary": summaries, "paths": paths}
