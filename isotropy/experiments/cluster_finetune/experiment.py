"""``isotropy run cluster-finetune``: the :class:`Experiment` record (config schema in ``config.py``)."""

from __future__ import annotations

from isotropy.experiments._runner import Experiment
from isotropy.experiments.cluster_finetune.config import ClusterFinetuneConfig

__all__ = ["EXPERIMENT"]


def _prepare(config, ctx):
    from isotropy.experiments.cluster_finetune.run import prepare

    return prepare(config, ctx)


def _run(config, results_dir, ctx):
    from isotropy.experiments.cluster_finetune.run import run

    return run(config, results_dir, ctx)


def _plot(results_dir):
    from isotropy.experiments.cluster_finetune.plot import plot_results

    return plot_results(results_dir)


def _report(results, results_dir):
    from isotropy.experiments.cluster_finetune.run import markdown_table

    return markdown_table(results)


EXPERIMENT = Experiment(
    name="cluster-finetune",
    config_model=ClusterFinetuneConfig,
    prepare=_prepare,
    run=_run,
    plot=_plot,
    report=_report,
    default_setup="minilm",
    resume_keys=frozenset({"seeds", "conditions"}),
    shortcuts=(("--model", "model", "all-MiniLM-L6-v2 (packaged) or a local transformers model directory"),
               ("--task", "task", "GLUE task: rte (default), mrpc, qnli, wnli, sst2 or cola")),
    help="""Fine-tuning with and without the in-batch cluster transform (Rajaee & Pilehvar, "Fine-Tuning BERT").

    The transform (k-means on the batch of pooled [CLS] vectors, subtract each cluster's mean,
    remove each cluster's top directions) sits between the encoder and the classifier; the
    geometry callback records per-layer I(W), IsoScore and mean cosine of a probe over training.
    Reports accuracy, I(W) and whether [CLS] is zero-mean per layer. Writes runs/*.json,
    results.json, results.md and figures/layers, figures/training_curves.""",
)
