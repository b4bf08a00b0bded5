"""``isotropy run sts-isotropy``: the config schema and the :class:`Experiment` record."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from isotropy.experiments._config import ExperimentConfig, Seeds, expects
from isotropy.experiments._runner import Experiment
from isotropy.experiments.sts_isotropy.run import METHODS

__all__ = ["EXPERIMENT", "StsIsotropyConfig"]

DATASETS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSB", "SICK")
Dataset = Literal[DATASETS]


class SweepConfig(ExperimentConfig):
    """K-means + Mean + PCA on ``datasets``, one parameter varied at a time (empty lists: no sweep)."""

    datasets: list[Dataset] = expects(f"a list of data sets from {', '.join(DATASETS)}", default_factory=list)
    n_clusters: list[int] = expects("a list of ints >= 1", default_factory=list)
    n_components: list[int] = expects("a list of ints >= 0", default_factory=list)


class StsIsotropyConfig(ExperimentConfig):
    """Rajaee & Pilehvar (2021); the packaged setups are ``isotropy/configs/sts-isotropy/*.yaml``."""

    model: str = Field(min_length=1)
    pooling: Literal["sentence-transformers", "mean"] = expects("sentence-transformers or mean")
    layer: int
    max_length: int = Field(ge=1)
    fit_on: str = expects("self, stsb-train, wikitext-2 or a path to a text file", min_length=1)
    fit_max_sentences: int = Field(ge=1)
    datasets: list[Dataset] = expects(f"a non-empty list of data sets from {', '.join(DATASETS)}", min_length=1)
    limit: int | None = Field(None, ge=2)
    aggregate: Literal["all", "wmean", "mean"] = expects("all, wmean or mean")
    methods: list[Literal[METHODS]] = expects(f"a non-empty list of methods from {', '.join(METHODS)}",
                                              min_length=1)
    abtt_components: int | Literal["auto"] = expects("'auto' or an int >= 0")
    n_clusters: int = Field(ge=1)
    n_components: int = Field(ge=0)
    whitening_components: int | None = Field(None, ge=1)
    whitening_eps: float = Field(ge=0)
    metric_sample: int | None = Field(None, ge=2)
    sweep: SweepConfig | None = None
    seeds: Seeds
    batch_size: int = Field(ge=1)


def _prepare(config, ctx):
    from isotropy.experiments.sts_isotropy.run import prepare

    return prepare(config, ctx)


def _run(config, results_dir, ctx):
    from isotropy.experiments.sts_isotropy.run import run

    return run(config, results_dir, ctx)


def _plot(results_dir):
    from isotropy.experiments.sts_isotropy.plot import plot_results

    return plot_results(results_dir)


def _report(results, results_dir):
    from isotropy.experiments.sts_isotropy.run import report

    return report(results, results_dir)


EXPERIMENT = Experiment(
    name="sts-isotropy",
    config_model=StsIsotropyConfig,
    prepare=_prepare,
    run=_run,
    plot=_plot,
    report=_report,
    default_setup="paper",
    resume_keys=frozenset(),
    max_seeds=1,
    partial=False,
    shortcuts=(("--model", "model:str", "all-MiniLM-L6-v2 (packaged) or a local model directory"),
               ("--fit-on", "fit_on:str", "What the transforms are fitted on: self, stsb-train, wikitext-2 or a text file"),
               ("--datasets", "datasets[]", f"Comma-separated data sets from {', '.join(DATASETS)}")),
    help="""Isotropy-enhancing transforms on STS 2012-2016, STS-B and SICK (Rajaee & Pilehvar, 2021).

    Rows: Baseline, Mean, Mean + PCA (All-But-The-Top), K-means + Mean, GMM + Mean + PCA,
    K-means + Mean + PCA, Whitening. Columns per data set: Pearson, Spearman, I(W), IsoScore.
    Writes results.json, results.md and figures/ (Spearman per method, the sweep).""",
)
