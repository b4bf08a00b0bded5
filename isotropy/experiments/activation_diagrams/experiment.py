"""``isotropy run activation-diagrams``: the :class:`~isotropy.experiments._runner.Experiment` record.

The schema is in ``config.py``; ``run.py`` holds ``prepare`` and ``run``, ``plot.py`` holds
``plot_results`` (bound by module name, imported when called).
"""

from __future__ import annotations

from isotropy.experiments._runner import Experiment
from isotropy.experiments.activation_diagrams.config import ActivationDiagramsConfig
from isotropy.models.resolve import MODEL_HELP

__all__ = ["EXPERIMENT"]

EXPERIMENT = Experiment(
    name="activation-diagrams",
    package=__package__,
    config_model=ActivationDiagramsConfig,
    default_setup="minilm",
    resume_keys=frozenset({"seeds", "lambdas", "cosreg"}),
    shortcuts=(("--model", "model", MODEL_HELP),
               ("--lambdas", "lambdas[]", "Comma-separated I-STAR weights, e.g. -5,5")),
    help="""Average activation diagrams and rogue dimensions (Rudman & Eickhoff, Figure 1).

    Mean |value| per dimension of the SST-2 validation sentence embeddings, for the pre-trained
    encoder and after fine-tuning with the istar experiment's code (no regulariser, I-STAR at each
    λ), with the share of the mean cosine similarity carried by the top-k dimensions (Timkey & van
    Schijndel). Writes states/*.json, results.json, results.md and figures/activation_diagrams.""",
)
