"""``isotropy run classifier-geometry``: the config schema and the :class:`Experiment` record."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from isotropy.experiments._config import ExperimentConfig, Seeds, expects
from isotropy.experiments._runner import Experiment
from isotropy.experiments.classifier_geometry.problem import TASKS

__all__ = ["EXPERIMENT", "ClassifierGeometryConfig"]


class ClassifierGeometryConfig(ExperimentConfig):
    """One setup of Mickus et al. (2024); the packaged setups are ``isotropy/configs/classifier-geometry/*.yaml``."""

    task: Literal[TASKS] = expects(f"one of {', '.join(TASKS)}")
    model: str = Field(min_length=1)
    vocab_limit: int | None = Field(None, ge=1)
    n_items: int | None = Field(None, ge=3)
    updates: int = Field(ge=1)
    lr: float = Field(gt=0)
    seeds: Seeds
    metric_interval: int = Field(ge=1)
    sample_size: int | None = Field(None, ge=3)
    data_path: str | None = None
    split: str | None = None
    tasks: list[str] | None = expects("a list of GLUE task names such as [cola, rte]", default=None)
    models: list[str] | None = expects("a list of sentence-transformers models", default=None)
    text_column: str = "text"
    text_pair_column: str | None = None
    label_column: str | list[str] = expects("a column name or a list of 0/1 indicator columns", default="label")
    multilabel: bool = False
    label_sep: str = ","


def _prepare(config, ctx):
    from isotropy.experiments.classifier_geometry.run import prepare

    return prepare(config, ctx)


def _run(config, results_dir, ctx):
    from isotropy.experiments.classifier_geometry.run import run

    return run(config, results_dir, ctx)


def _plot(results_dir):
    from isotropy.experiments.classifier_geometry.plot import plot_results

    return plot_results(results_dir)


def _report(results, results_dir):
    from isotropy.experiments.classifier_geometry.run import report

    return report(results, results_dir)


EXPERIMENT = Experiment(
    name="classifier-geometry",
    config_model=ClassifierGeometryConfig,
    prepare=_prepare,
    run=_run,
    plot=_plot,
    report=_report,
    default_setup="demo",
    resume_keys=frozenset({"seeds"}),
    shortcuts=(("--model", "model:str", "Sentence-transformers model or word vectors (glove-6b-50d, a vector file)"),
               ("--data-path", "data_path:str", "A specific data file or folder (the table setup's CSV/TSV/JSONL)"),
               ("--updates", "updates", "Number of full-batch Adam updates"),
               ("--lr", "lr", "Adam learning rate")),
    help="""Optimise embeddings under a linear classifier; record IsoScore and silhouette (Mickus et al., 2024).

    Writes per-seed files, per-update metrics, the IsoScore-silhouette correlation table, a summary
    and Figures 2-4 (figures/) to the results directory.""",
)
