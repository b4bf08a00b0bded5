"""``run(config, results_dir, ctx) -> results``: every seed of one setup (or the GLUE grid), resumable.

Layout of a results directory (one setup)::

    run.json, config.yaml     resolved config, seeds, status, command, versions (written by the runner)
    seeds/seed_<s>.json       one finished seed: per-step metrics and timing, its seed and config hash
    metrics.csv               per seed and recorded step: loss, accuracy, micro_f1, isoscore, silhouette
    curves.csv                per step: mean and std over seeds
    summary.json              data, final values, correlations, timing
    correlations.md/.json     the correlation table
    figures/*.png, *.svg      Figures 2 and 3 (and 4 for the GLUE grid)

The GLUE setup writes one such directory per model and task under ``<results_dir>/<model>/<task>/``
and the grid's table and Figure 4 at the top.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from isotropy.experiments._results import write_json, write_text
from isotropy.experiments.classifier_geometry.config import ClassifierGeometryConfig
from isotropy.experiments.classifier_geometry.report import model_label

__all__ = ["Unit", "missing", "model_label", "prepare", "run"]


PART_KEYS = ("metrics", "timing")  # what the tables read back from a seeds/seed_<s>.json part on --resume
# what run writes from the seeds' parts: in each problem's folder, and at the top of the GLUE grid
TABLES = ("metrics.csv", "curves.csv", "summary.json", "correlations.json", "correlations.md")
GRID_TABLES = ("summary.json", "correlations.json", "correlations.md")


def _seed_part(prefix: str, seed: int) -> str:
    return f"{prefix}seeds/seed_{seed}.json"


@dataclass(frozen=True)
class Unit:
    """One optimisation problem of a run: the typed config (its ``model`` the problem's), the GLUE task, the name."""

    config: ClassifierGeometryConfig
    name: str  # labels tables and figures: the setup's name, its task, or ``model/task`` in the GLUE grid
    glue_task: str | None = None


def _units(config: ClassifierGeometryConfig, setup: str | None) -> list[tuple[str, Unit]]:
    """``(sub-directory, unit)`` of each optimisation problem: one, or one per GLUE model and task."""
    if config.task != "glue":
        return [("", Unit(config, setup or config.task))]
    from isotropy.datasets.glue import GLUE_TASKS

    tasks = list(config.tasks or [])
    unknown = [t for t in tasks if t not in GLUE_TASKS]
    if not tasks or unknown:
        raise ValueError(f"The 'tasks' setting of classifier-geometry must be a non-empty list of GLUE tasks from "
                         f"{sorted(GLUE_TASKS)}. Got {tasks!r} instead.")
    units = []
    for model in config.models or [config.model]:
        for task in tasks:
            unit = Unit(config.model_copy(update={"model": model}), f"{model_label(model)}/{task}", glue_task=task)
            units.append((f"{model_label(model)}/{task}/", unit))
    return units


def prepare(config, ctx) -> list:
    """Load the data and embed it (every problem of the GLUE grid) before the results directory is touched."""
    from isotropy.experiments.classifier_geometry.config import check_recorded_points
    from isotropy.experiments.classifier_geometry.problem import build_problem

    for note in config._notes:  # what the config's settle decided (the interval after --updates)
        ctx.log(note)
    check_recorded_points(config)  # a config made in Python does not pass through settle
    return [(prefix, unit, build_problem(unit.config, glue_task=unit.glue_task, data_dir=ctx.data_dir,
                                         device=ctx.device, show_progress=ctx.show_progress))
            for prefix, unit in _units(config, ctx.setup)]  # the setup's name labels tables and figures


def missing(config, results_dir) -> list[str]:
    """The tables of a finished run that are not there (removed by hand); ``--resume`` rewrites them from the parts."""
    results_dir = Path(results_dir)
    names = [f"{prefix}{name}" for prefix, _ in _units(config, None) for name in TABLES]
    names += list(GRID_TABLES) if config.task == "glue" else []
    return [name for name in names if not (results_dir / name).is_file()]


def run(config, results_dir, ctx) -> dict:
    """Every seed of every problem of ``config``: per-seed files, tables, summary (figures come from ``plot``).

    Returns ``{"summary": ...}`` (one setup) or ``{"summary": {"model/task": ...}}`` (the GLUE grid).
    """
    from isotropy.experiments.classifier_geometry.report import correlation_markdown

    results_dir = Path(results_dir)
    problems = ctx.prepared
    summaries = {}
    for prefix, unit, problem in problems:
        summaries[unit.name] = _run_one(unit, problem, results_dir / prefix, prefix, ctx)
    if config.task != "glue":
        return {"summary": next(iter(summaries.values()))}
    write_json(results_dir / "correlations.json", {k: s["correlation"] for k, s in summaries.items()})
    write_text(results_dir / "correlations.md", correlation_markdown(summaries))
    write_json(results_dir / "summary.json", summaries)
    return {"summary": summaries}


def _run_one(unit: Unit, problem, out_dir: Path, prefix: str, ctx) -> dict:
    from isotropy.experiments.classifier_geometry import train as train_module
    from isotropy.experiments.classifier_geometry.report import correlation_markdown, curves, seed_frame, summarise

    info = {"name": problem.name, "n_items": problem.n_items, "n_rows": int(problem.embeddings.shape[0]),
            "dim": int(problem.embeddings.shape[1]), "item_width": int(problem.index.shape[1]),
            "n_classes": problem.n_classes, "label_names": problem.label_names, "multilabel": problem.multilabel,
            "n_parameters": int(problem.n_parameters), "source": problem.source,
            "isoscore_on": "embedding matrix (distinct texts/words, unpaired)",
            "silhouette_on": "item representations (pairs: concatenation [premise; hypothesis]) with item labels"}
    ctx.record(**({"data": info} if not prefix else {f"data:{prefix.rstrip('/')}": info}))
    config, name = unit.config, unit.name
    records = {}
    for seed in config.seeds:
        record = ctx.read_part(_seed_part(prefix, seed), seed=seed, keys=PART_KEYS)
        if record is not None:
            records[seed] = record
    todo = [s for s in config.seeds if s not in records]
    if todo:
        bar = ctx.progress(total=len(todo) * config.updates, desc=f"{name} ({problem.name})",
                           unit="update")
        try:
            for seed in todo:
                bar.set_postfix(seed=seed)
                record = train_module.train_seed(problem, seed=seed, updates=config.updates, lr=config.lr,
                                                 metric_interval=config.metric_interval,
                                                 sample_size=config.sample_size, device=ctx.device,
                                                 progress=bar.update)
                ctx.write_part(_seed_part(prefix, seed), record, seed=seed)
                records[seed] = record
        finally:
            bar.close()
    ordered = [records[s] for s in config.seeds]
    frame = seed_frame(ordered)
    write_text(out_dir / "metrics.csv", frame.to_csv(index=False))
    write_text(out_dir / "curves.csv", curves(frame).to_csv(index=False))
    summary = summarise(info, config, ordered, setup=name)
    write_json(out_dir / "summary.json", summary)
    write_json(out_dir / "correlations.json", {name: summary["correlation"]})
    write_text(out_dir / "correlations.md", correlation_markdown({name: summary}))
    ctx.log(f"{name}: IsoScore {summary['initial']['isoscore']['mean']:.3f} -> "
            f"{summary['final']['isoscore']['mean']:.3f}, silhouette {summary['initial']['silhouette']['mean']:.3f} "
            f"-> {summary['final']['silhouette']['mean']:.3f}, "
            f"Pearson r {summary['correlation']['seed_means']['pearson_r']:.3f}")
    return summary


# --- claims: the rules are fixed in this code, not typed (written after first results; see contract.md) (Mickus, Grönroos & Attieh, ACL 2024: Section 3.2
# and Figure 3, Table 3 for GLUE: IsoScore and silhouette strongly negatively correlated over the updates) -----------

_PAPER = "Mickus, Grönroos & Attieh, ACL 2024, Section 3.2 and Figure 3 (Table 3 for GLUE)"
# A Spearman ρ over a few recorded updates decides nothing: over 3 it takes only the values ±1 and ±0.5, and a random
# order of n updates gives ρ < −0.5 in 17 % of orderings at n = 3, 10 % at 8, 7 % at 10 and under 5 % from 12 on. A
# seed with fewer recorded updates leaves the claim not established (the committed runs record 14 to 1,001).
MIN_STEPS = 12


def claims(results, results_dir, *, setup: str | None = None, model: str | None = None,
           reason: str | None = None) -> list:
    """One claim per problem: the per-seed Spearman ρ between IsoScore and silhouette over the recorded updates."""
    import dataclasses

    from isotropy.experiments._claims import REASON_MARK, Rule, claim, command_of, not_run, run_config, with_reason

    rule = Rule("holds if Spearman ρ(IsoScore, silhouette) over the recorded updates is below −0.5 in every seed and "
                "across the interval; does not hold if at or above −0.5 throughout", below=-0.5)
    text = ("Optimised under a linear classifier, IsoScore and silhouette are strongly negatively correlated: "
            "isotropy falls as the classes cluster.")
    statistic = "Spearman ρ between IsoScore and silhouette over the recorded updates, per seed"
    if results is None:  # a setup whose run is not committed
        return [not_run(id=f"isoscore-silhouette-anticorrelated-{setup}", paper=_PAPER, claim=text,
                        paper_value="strongly negative in every setup", model=f"{setup}: {model}", statistic=statistic,
                        rule=rule, command=f"isotropy run classifier-geometry --setup {setup} --data-dir DATA_DIR",
                        reason=reason or "no committed run")]
    config = run_config(results_dir)
    command = command_of(results_dir, "isotropy run classifier-geometry --data-dir DATA_DIR")
    summary = results["summary"]
    problems = {summary.get("setup", "run"): summary} if "correlation" in summary else dict(summary)
    out = []
    for name, s in problems.items():
        per_seed = s["correlation"]["per_seed"]
        values = [float(v["spearman_rho"]) for _, v in sorted(per_seed.items(), key=lambda kv: int(kv[0]))]
        model = str(config.get("model") or s.get("data", {}).get("model") or "–")
        record = claim(id=f"isoscore-silhouette-anticorrelated-{str(name).replace('/', '-')}", paper=_PAPER,
                       claim=text,
                       paper_value="strongly negative in every setup",
                       model=f"{name}: {model}, {s.get('updates', '?')} updates",
                       statistic=statistic,
                       values=values, rule=rule, command=command)
        steps = [int(v["n_steps"]) for v in per_seed.values() if v.get("n_steps") is not None]
        if steps and min(steps) < MIN_STEPS:
            seeds_how = str(record.interval["how"]).split(REASON_MARK, 1)[0]
            record = dataclasses.replace(record, verdict="not established", interval=with_reason(
                {**record.interval, "how": seeds_how},
                f"a seed's ρ is over {min(steps)} recorded updates, fewer than {MIN_STEPS} (with so few, a random "
                f"order of the updates gives ρ < −0.5 in more than 5 % of orderings): record more with a longer run "
                f"or a smaller metric_interval"))
        out.append(record)
    return out


def report(results, results_dir) -> str:
    """Write ``claims.json`` beside the results; the command prints ``correlations.md``."""
    from isotropy.experiments._claims import write_claims

    write_claims(results_dir, claims(results, results_dir))
    path = Path(results_dir) / "correlations.md"
    return path.read_text(encoding="utf-8") if path.is_file() else ""
