"""``isotropy run istar``: the :class:`~isotropy.experiments._runner.Experiment` record.

The schema is in ``config.py``; ``run.py`` holds ``prepare`` and ``run``, ``plot.py`` holds
``plot_results`` (bound by module name, imported when called).
"""

from __future__ import annotations

from isotropy.experiments._runner import Experiment
from isotropy.experiments.istar.config import IstarConfig
from isotropy.models.resolve import MODEL_HELP

__all__ = ["EXPERIMENT"]

EXPERIMENT = Experiment(
    name="istar",
    package=__package__,
    config_model=IstarConfig,
    default_setup="sst2-cpu",
    resume_keys=frozenset({"seeds", "lambdas", "baseline", "cosreg"}),
    shortcuts=(("--model", "model", MODEL_HELP),
               ("--lambdas", "lambdas[]", "Comma-separated I-STAR weights, e.g. -5,-1,1,5"),
               ("--train-size", "train_size", "Training subsample size (null: the whole split)")),
    help="""Fine-tune an encoder with I-STAR (λ sweep), CosReg and no regularisation over seeds (Rudman & Eickhoff, 2024).

    Records per run the validation metric and IsoScore*, IsoScore and TwoNN intrinsic dimension
    of the validation sentence representations; writes runs/*.json, results.json, results.md and
    figures/ (performance vs IsoScore*, intrinsic dimension per λ).""",
)
