"""``isotropy run activation-diagrams``: the :class:`Experiment` record (config schema in ``config.py``)."""

from __future__ import annotations

from isotropy.experiments._runner import Experiment
from isotropy.experiments.activation_diagrams.config import ActivationDiagramsConfig

__all__ = ["EXPERIMENT"]


def _prepare(config, ctx):
    from isotropy.experiments.activation_diagrams.run import prepare

    return prepare(config, ctx)


def _run(config, results_dir, ctx):
    from isotropy.experiments.activation_diagrams.run import run

    return run(config, results_dir, ctx)


def _plot(results_dir):
    from isotropy.experiments.activation_diagrams.plot import plot_results

    return plot_results(results_dir)


def _report(results, results_dir):
    from isotropy.experiments.activation_diagrams.run import markdown_table

    return markdown_table(results)


EXPERIMENT = Experiment(
    name="activation-diagrams",
    config_model=ActivationDiagramsConfig,
    prepare=_prepare,
    run=_run,
    plot=_plot,
    report=_report,
    default_setup="minilm",
    resume_keys=frozenset({"seeds", "lambdas", "cosreg"}),
    shortcuts=(("--model", "model", "all-MiniLM-L6-v2 (packaged) or a local transformers model directory"),
               ("--lambdas", "lambdas[]", "Comma-separated I-STAR weights, e.g. -5,5")),
    help="""Average activation diagrams and rogue dimensions (Rudman & Eickhoff, Figure 1).

    Mean |value| per dimension of the SST-2 validation sentence embeddings, for the pre-trained
    encoder and after fine-tuning with the istar experiment's code (no regulariser, I-STAR at each
    λ), with the share of the mean cosine similarity carried by the top-k dimensions (Timkey & van
    Schijndel). Writes states/*.json, results.json, results.md and figures/activation_diagrams.""",
)
