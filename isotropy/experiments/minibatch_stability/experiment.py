"""``isotropy run minibatch-stability``: the :class:`Experiment` record (config schema in ``config.py``)."""

from __future__ import annotations

from isotropy.experiments._runner import Experiment
from isotropy.experiments.minibatch_stability.config import MinibatchStabilityConfig

__all__ = ["EXPERIMENT"]


def _prepare(config, ctx):
    from isotropy.experiments.minibatch_stability.run import prepare

    return prepare(config, ctx)


def _run(config, results_dir, ctx):
    from isotropy.experiments.minibatch_stability.run import run

    return run(config, results_dir, ctx)


def _plot(results_dir):
    from isotropy.experiments.minibatch_stability.plot import plot_results

    return plot_results(results_dir)


def _report(results, results_dir):
    from isotropy.experiments.minibatch_stability.run import report

    return report(results, results_dir)


EXPERIMENT = Experiment(
    name="minibatch-stability",
    config_model=MinibatchStabilityConfig,
    prepare=_prepare,
    run=_run,
    plot=_plot,
    report=_report,
    default_setup="minilm",
    resume_keys=frozenset(),
    shortcuts=(("--model", "embeddings.model", "all-MiniLM-L6-v2 (packaged), gemma-3-270m or a local model directory"),),
    help="""IsoScore and IsoScore* on mini-batches against the whole cloud (Rudman & Eickhoff, Figure 4).

    Clouds: a Gaussian of known isotropy (closed form; with the Wishart prediction of every batch
    mean) and the sentence embeddings of SST-2 validation. Batches of 8 to 1,024 rows, ζ in
    {0, 0.1, 0.2, 0.5, 0.9}. Writes results.json, results.md, scores.csv and
    figures/minibatch_stability.""",
)
