"""``isotropy run classifier-geometry``: the :class:`~isotropy.experiments._runner.Experiment` record.

The schema is in ``config.py``; ``run.py`` holds ``prepare`` and ``run``, ``plot.py`` holds
``plot_results`` (bound by module name, imported when called).
"""

from __future__ import annotations

from isotropy.experiments._runner import Experiment
from isotropy.experiments.classifier_geometry.config import ClassifierGeometryConfig
from isotropy.models.resolve import MODEL_HELP

__all__ = ["EXPERIMENT"]

EXPERIMENT = Experiment(
    name="classifier-geometry",
    package=__package__,
    config_model=ClassifierGeometryConfig,
    report_file="correlations.md",
    default_setup="demo",
    resume_keys=frozenset({"seeds"}),
    shortcuts=(("--model", "model",
                f"{MODEL_HELP}; or static word vectors (glove-6b-50d, a .txt/.vec/.bin/.w2v/.gz file)"),
               ("--data-path", "data_path", "A specific data file or folder (the table setup's CSV/TSV/JSONL)"),
               ("--updates", "updates", "Number of full-batch Adam updates"),
               ("--lr", "lr", "Adam learning rate")),
    help="""Optimise embeddings under a linear classifier; record IsoScore and silhouette (Mickus et al., 2024).

    Writes per-seed files, per-update metrics, the IsoScore-silhouette correlation table, a summary
    and Figures 2-4 (figures/) to the results directory.""",
)
