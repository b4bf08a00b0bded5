"""``isotropy run sts-isotropy``: the :class:`~isotropy.experiments._runner.Experiment` record.

The schema is in ``config.py``; ``run.py`` holds ``prepare`` and ``run``, ``plot.py`` holds
``plot_results`` (bound by module name, imported when called).
"""

from __future__ import annotations

from isotropy.experiments._runner import Experiment
from isotropy.experiments.sts_isotropy.config import DATASETS, StsIsotropyConfig
from isotropy.models.resolve import MODEL_HELP

__all__ = ["EXPERIMENT"]

EXPERIMENT = Experiment(
    name="sts-isotropy",
    package=__package__,
    config_model=StsIsotropyConfig,
    default_setup="paper",
    resume_keys=frozenset(),
    shortcuts=(("--model", "model", MODEL_HELP),
               ("--fit-on", "fit_on", "What the transforms are fitted on: self, stsb-train, wikitext-2 or a text file"),
               ("--datasets", "datasets[]", f"Comma-separated data sets from {', '.join(DATASETS)}")),
    help="""Isotropy-enhancing transforms on STS 2012-2016, STS-B and SICK (Rajaee & Pilehvar, 2021).

    Rows: Baseline, Mean, Mean + PCA (All-But-The-Top), K-means + Mean, GMM + Mean + PCA,
    K-means + Mean + PCA, Whitening. Columns per data set: Pearson, Spearman, I(W), IsoScore.
    The embeddings are encoded once; K-means, GMM and the seeded samples run once per seed (the
    sweep on the first seed only). Writes results.json (per-seed values), results.md (seed mean
    and spread), claims.json and figures/ (Spearman per method, the sweep).""",
)
