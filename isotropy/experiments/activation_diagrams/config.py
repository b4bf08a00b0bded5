"""Typed configuration of the activation diagrams (pydantic: types and ranges checked, unknown keys rejected)."""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field, field_validator

from isotropy.experiments._config import ExperimentConfig, Seeds, expects
from isotropy.models.resolve import MODEL_HELP

__all__ = ["ActivationDiagramsConfig"]


class ActivationDiagramsConfig(ExperimentConfig):
    """Activation diagrams of the pre-trained encoder and of the istar experiment's fine-tuned ones."""

    model: str = Field(min_length=1, description=MODEL_HELP + ".")
    fine_tune_setup: str = Field(min_length=1, description="The istar experiment's setup giving the training settings.")
    fine_tune: dict[str, Any] = Field(description="Overrides of that setup (istar keys, e.g. train_size, epochs).")
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
        owned = sorted({"model", "seeds", "lambdas", "baseline", "cosreg"} & set(value))
        if owned:
            raise ValueError(f"set {owned} at the top level of this config, not under fine_tune")
        return value
