"""``isotropy run frozen-classification``: the :class:`~isotropy.experiments._runner.Experiment` record.

The schema is in ``config.py``; ``run.py`` holds ``prepare`` and ``run``, ``plot.py`` holds
``plot_results`` (bound by module name, imported when called).
"""

from __future__ import annotations

from isotropy.experiments._runner import Experiment
from isotropy.experiments.frozen_classification.config import FrozenClassificationConfig
from isotropy.models.resolve import MODEL_HELP

__all__ = ["EXPERIMENT"]

EXPERIMENT = Experiment(
    name="frozen-classification",
    package=__package__,
    config_model=FrozenClassificationConfig,
    default_setup="minilm",
    resume_keys=frozenset(),
    shortcuts=(("--model", "model", MODEL_HELP),),
    help="""Frozen encoder + isotropy transform + logistic regression (Rajaee & Pilehvar, classification test).

    Rows: baseline, mean, mean+pca, kmeans+mean, kmeans+mean+pca (the proposed algorithm),
    gmm+mean+pca; the transforms are fitted on the training representations. Columns: validation
    accuracy, I(W) and IsoScore of the validation representations. Writes results.json,
    results.md and figures/frozen_classification.""",
)
