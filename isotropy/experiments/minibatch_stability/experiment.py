"""``isotropy run minibatch-stability``: the :class:`~isotropy.experiments._runner.Experiment` record.

The schema is in ``config.py``; ``run.py`` holds ``prepare`` and ``run``, ``plot.py`` holds
``plot_results`` (bound by module name, imported when called).
"""

from __future__ import annotations

from isotropy.experiments._runner import Experiment
from isotropy.experiments.minibatch_stability.config import MinibatchStabilityConfig
from isotropy.models.resolve import MODEL_HELP

__all__ = ["EXPERIMENT"]

EXPERIMENT = Experiment(
    name="minibatch-stability",
    package=__package__,
    config_model=MinibatchStabilityConfig,
    default_setup="minilm",
    resume_keys=frozenset(),
    shortcuts=(("--model", "embeddings.model", MODEL_HELP),),
    help="""IsoScore and IsoScore* on mini-batches against the whole cloud (Rudman & Eickhoff, Figure 4).

    Clouds: a Gaussian of known isotropy (closed form; with the Wishart prediction of every batch
    mean) and the sentence embeddings of SST-2 validation. Batches of 8 to 1,024 rows, ζ in
    {0, 0.1, 0.2, 0.5, 0.9}. Writes results.json, results.md, scores.csv and
    figures/minibatch_stability.""",
)
