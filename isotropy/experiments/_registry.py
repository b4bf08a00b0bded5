"""The experiments of ``isotropy run``: one name each, loaded only when asked for.

The command line (:mod:`isotropy.cli`) and the Python entry point (:func:`isotropy.experiments.run_experiment`) read
this one table: a new experiment is one line here (see ``isotropy/experiments/_template/``).
"""

from __future__ import annotations

import importlib

# experiment name -> "module:attribute" of its Experiment record (isotropy.experiments._runner.Experiment)
EXPERIMENTS = {
    "classifier-geometry": "isotropy.experiments.classifier_geometry.experiment:EXPERIMENT",
    "sts-isotropy": "isotropy.experiments.sts_isotropy.experiment:EXPERIMENT",
    "layer-geometry": "isotropy.experiments.layer_geometry.experiment:EXPERIMENT",
    "istar": "isotropy.experiments.istar.experiment:EXPERIMENT",
    "minibatch-stability": "isotropy.experiments.minibatch_stability.experiment:EXPERIMENT",
    "frozen-classification": "isotropy.experiments.frozen_classification.experiment:EXPERIMENT",
    "activation-diagrams": "isotropy.experiments.activation_diagrams.experiment:EXPERIMENT",
    "cluster-finetune": "isotropy.experiments.cluster_finetune.experiment:EXPERIMENT",
}


def load_target(target: str):
    """The object ``"module:attribute"`` names (an Experiment record of :data:`EXPERIMENTS`)."""
    module, attr = target.split(":")
    return getattr(importlib.import_module(module), attr)


def load_experiment(name: str, *, experiments: dict | None = None):
    """The :class:`~isotropy.experiments._runner.Experiment` record called ``name`` in ``experiments`` (default
    :data:`EXPERIMENTS`; :mod:`isotropy.cli` passes its own, which tests extend)."""
    experiments = EXPERIMENTS if experiments is None else experiments
    if not isinstance(name, str) or name not in experiments:
        from isotropy._utils.suggest import did_you_mean

        raise ValueError(f"Unknown experiment {name!r}; expected one of {', '.join(sorted(experiments))}."
                         f"{did_you_mean(name, experiments)}")
    return load_target(experiments[name])
