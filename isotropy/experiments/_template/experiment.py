"""``_template``: the :class:`~isotropy.experiments._runner.Experiment` record of the template experiment.

The schema is in ``config.py``; ``run.py`` holds ``prepare`` and ``run``, ``plot.py`` holds
``plot_results`` (bound by module name, imported when called).
"""

from __future__ import annotations

from isotropy.experiments._runner import Experiment
from isotropy.experiments._template.config import TemplateConfig

__all__ = ["EXPERIMENT"]

EXPERIMENT = Experiment(
    name="_template",
    package=__package__,
    config_model=TemplateConfig,
    report_file="summary.md",
    default_setup="default",
    resume_keys=frozenset({"seeds"}),
    shortcuts=(("--decay", "decay", "Ratio of consecutive covariance eigenvalues"),),
    help="The template experiment: IsoScore of anisotropic Gaussian samples against the sample size.",
)
