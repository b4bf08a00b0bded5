"""``isotropy run cluster-finetune``: the :class:`~isotropy.experiments._runner.Experiment` record.

The schema is in ``config.py``; ``run.py`` holds ``prepare`` and ``run``, ``plot.py`` holds
``plot_results`` (bound by module name, imported when called).
"""

from __future__ import annotations

from isotropy.experiments._runner import Experiment
from isotropy.experiments.cluster_finetune.config import ClusterFinetuneConfig
from isotropy.models.resolve import MODEL_HELP

__all__ = ["EXPERIMENT"]

EXPERIMENT = Experiment(
    name="cluster-finetune",
    package=__package__,
    config_model=ClusterFinetuneConfig,
    default_setup="minilm",
    resume_keys=frozenset({"seeds", "conditions"}),
    shortcuts=(("--model", "model", MODEL_HELP),
               ("--task", "task", "GLUE task: rte (default), mrpc, qnli, wnli, sst2 or cola")),
    help="""Fine-tuning with and without the in-batch cluster transform (Rajaee & Pilehvar, "Fine-Tuning BERT").

    The transform (k-means on the batch of pooled [CLS] vectors, subtract each cluster's mean,
    remove each cluster's top directions) sits between the encoder and the classifier; the
    geometry callback records per-layer I(W), IsoScore and mean cosine of a probe over training.
    Reports accuracy, I(W) and whether [CLS] is zero-mean per layer. Writes runs/*.json,
    results.json, results.md and figures/layers, figures/training_curves.""",
)
