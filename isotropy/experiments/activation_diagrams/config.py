"""Typed configuration of the activation diagrams (pydantic: types and ranges checked, unknown keys rejected)."""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import Field, field_validator

from isotropy.experiments._config import ExperimentConfig, OverridesOf, Seeds, config_rule, expects
from isotropy.experiments._finetune.config import DEFAULT_SETUP, SETUPS, FinetuneConfig
from isotropy.models.resolve import MODEL_HELP

__all__ = ["ActivationDiagramsConfig", "istar_overrides", "istar_values"]

# the istar keys this config sets at its top level, not under fine_tune
OWNED = frozenset({"model", "seeds", "lambdas", "baseline", "cosreg"})


def istar_overrides(config) -> dict:
    """What this run's fine-tuning changes of the istar setup ``fine_tune_setup``: ``fine_tune``, model, λs, seeds."""
    overrides = {**config.fine_tune, "model": config.model, "seeds": list(config.seeds),
                 "lambdas": [float(v) for v in config.lambdas], "baseline": True}
    overrides["cosreg"] = None if config.cosreg is None else float(config.cosreg)
    return overrides


def istar_values(config) -> dict:
    """The istar setup ``fine_tune_setup`` with :func:`istar_overrides` merged in, not yet validated."""
    from isotropy.experiments._config import resolve_values

    return resolve_values(FinetuneConfig, experiment=SETUPS, setup=config.fine_tune_setup,
                          default_setup=DEFAULT_SETUP, overrides=istar_overrides(config))


# istar keys, checked with this config (--print-config too) in the setup they override, as a section's keys are
FineTune = Annotated[dict[str, Any], OverridesOf(FinetuneConfig, istar_values, source="fine_tune_setup", exclude=OWNED)]


class ActivationDiagramsConfig(ExperimentConfig):
    """Activation diagrams of the pre-trained encoder and of the istar experiment's fine-tuned ones."""

    model: str = Field(min_length=1, description=MODEL_HELP + ".")
    fine_tune_setup: str = Field(min_length=1, description="The istar experiment's setup giving the training settings.")
    fine_tune: FineTune = Field(description="Overrides of that setup (istar keys, e.g. train_size, epochs).")
    lambdas: list[float] = expects("a list of distinct non-zero finite numbers (I-STAR weights)")
    cosreg: float | None = Field(None, description="Also fine-tune with CosReg of this weight (null: no).")
    top_k: list[int] = expects("a non-empty list of distinct ints >= 1", min_length=1)
    seeds: Seeds

    @field_validator("lambdas")
    @classmethod
    def _lambdas(cls, value):
        if not all(math.isfinite(v) and v != 0 for v in value) or len(set(value)) != len(value):
            raise ValueError(f"expected distinct non-zero finite numbers, got {value}")
        return value

    @field_validator("top_k")
    @classmethod
    def _top_k(cls, value):
        if any(k < 1 for k in value) or len(set(value)) != len(value):
            raise ValueError(f"expected distinct ints >= 1, got {value}")
        return sorted(value)

    @field_validator("fine_tune")
    @classmethod
    def _fine_tune(cls, value):
        if "baseline" in value:  # not a key of this config: the hint "--set baseline=..." named an unknown key
            raise config_rule("may not set baseline: this experiment always fine-tunes the baseline (the diagram the "
                              "I-STAR and CosReg ones are compared with); leave it out")
        owned = sorted((OWNED - {"baseline"}) & set(value))
        if owned:
            raise config_rule(f"may not set {', '.join(owned)}: this config sets {'it' if len(owned) == 1 else 'them'} "
                              f"at its top level (e.g. --set {owned[0]}=...)")
        return value
