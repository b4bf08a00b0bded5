"""The config schema of ``isotropy run istar``: every key typed and range-checked (pydantic)."""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from isotropy.experiments._config import ExperimentConfig, Seeds, expects

__all__ = ["IstarConfig"]


def _nonzero_finite(values: list[float]) -> list[float]:
    if not all(math.isfinite(v) and v != 0 for v in values):
        raise ValueError("non-zero")
    return values


class TableSpec(ExperimentConfig):
    """``task: table``: a user's training and validation files (CSV, TSV or JSON lines)."""

    train: str = Field(min_length=1)
    validation: str = Field(min_length=1)
    text_column: str = "text"
    label_column: str = "label"
    text_pair_column: str | None = None


class IstarSettings(ExperimentConfig):
    """Which hidden states I-STAR regularises and how Σ_S is estimated."""

    layers: Literal["all", "last"] | list[int] = expects("'all', 'last' or a list of hidden-state indices")
    level: Literal["token", "sentence"] = expects("token or sentence")
    zeta: float = Field(ge=0, le=1)
    shrinkage_sample: int = Field(ge=2)


class IstarConfig(ExperimentConfig):
    """Rudman & Eickhoff (ICLR 2024); the packaged setups are ``isotropy/configs/istar/*.yaml``."""

    task: str = expects("a GLUE task (sst2, cola, mrpc, rte, ...) or 'table'", min_length=1)
    validation_split: str = Field(min_length=1)
    table: TableSpec | None = None
    metric: Literal["auto", "accuracy", "f1", "matthews"] = expects("auto, accuracy, f1 or matthews")
    model: str = Field(min_length=1)
    pooling: Literal["mean", "cls"] = expects("mean or cls")
    max_length: int = Field(ge=2)
    train_size: int | None = Field(None, ge=2)
    validation_size: int | None = Field(None, ge=2)
    data_seed: int = Field(ge=0)
    epochs: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    eval_batch_size: int = Field(ge=1)
    lr: float = Field(gt=0)
    head_lr: float | None = Field(None, gt=0)
    weight_decay: float = Field(ge=0)
    warmup_ratio: float = Field(ge=0, le=1)
    max_grad_norm: float | None = Field(None, gt=0)
    dropout: float = Field(ge=0, le=1)
    seeds: Seeds
    lambdas: Annotated[list[float], AfterValidator(_nonzero_finite)] = expects(
        "a list of non-zero finite numbers (the I-STAR weights)")
    baseline: bool
    cosreg: float | Literal[False] | None = expects(
        "a finite number (the CosReg weight), or false / 0 / null for no CosReg runs", allow_inf_nan=False)
    istar: IstarSettings
    checkpoint_every: int = Field(ge=0)
