"""``isotropy run frozen-classification``: the :class:`Experiment` record (config schema in ``config.py``)."""

from __future__ import annotations

from isotropy.experiments._runner import Experiment
from isotropy.experiments.frozen_classification.config import FrozenClassificationConfig

__all__ = ["EXPERIMENT"]


def _prepare(config, ctx):
    from isotropy.experiments.frozen_classification.run import prepare

    return prepare(config, ctx)


def _run(config, results_dir, ctx):
    from isotropy.experiments.frozen_classification.run import run

    return run(config, results_dir, ctx)


def _plot(results_dir):
    from isotropy.experiments.frozen_classification.plot import plot_results

    return plot_results(results_dir)


def _report(results, results_dir):
    from isotropy.experiments.frozen_classification.run import report

    return report(results, results_dir)


EXPERIMENT = Experiment(
    name="frozen-classification",
    config_model=FrozenClassificationConfig,
    prepare=_prepare,
    run=_run,
    plot=_plot,
    report=_report,
    default_setup="minilm",
    resume_keys=frozenset(),
    shortcuts=(("--model", "model", "all-MiniLM-L6-v2 (packaged), gemma-3-270m or a local model directory"),),
    help="""Frozen encoder + isotropy transform + logistic regression (Rajaee & Pilehvar, classification test).

    Rows: baseline, mean, mean+pca, kmeans+mean, kmeans+mean+pca (the proposed algorithm),
    gmm+mean+pca; the transforms are fitted on the training representations. Columns: validation
    accuracy, I(W) and IsoScore of the validation representations. Writes results.json,
    results.md and figures/frozen_classification.""",
)
