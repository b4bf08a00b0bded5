"""Typed configuration of the cluster fine-tuning experiment (pydantic: types and ranges checked, unknown keys rejected)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from isotropy.experiments._config import MAX_SEED, ExperimentConfig, Seeds, expects
from isotropy.experiments._finetune.config import Pooling

__all__ = ["ClusterFinetuneConfig", "GeometrySettings", "TransformSettings"]

CONDITIONS = ("baseline", "cluster")


class TransformSettings(ExperimentConfig):
    """The in-batch cluster-based transform between the pooled vector and the classifier."""

    n_clusters: int = Field(ge=1, description="k-means clusters per batch.")
    n_components: int = Field(ge=0, description="Dominant directions removed per cluster.")
    at_evaluation: bool = Field(description="Also transform each evaluation batch (as the classifier was trained).")


class GeometrySettings(ExperimentConfig):
    """What the geometry callback measures over training."""

    every_n_steps: int = Field(ge=1)
    probe_size: int | None = Field(None, ge=3, description="Validation items in the probe (null = all).")


class ClusterFinetuneConfig(ExperimentConfig):
    """Fine-tuning with and without the in-batch cluster transform (Rajaee & Pilehvar, "Fine-Tuning BERT")."""

    task: Literal["rte", "mrpc", "qnli", "wnli", "sst2", "cola"]
    validation_split: str = Field(min_length=1)
    model: str = Field(min_length=1)
    pooling: Pooling
    max_length: int = Field(ge=2)
    train_size: int | None = Field(None, ge=2)
    validation_size: int | None = Field(None, ge=2)
    data_seed: int = Field(ge=0, le=MAX_SEED)
    epochs: float = Field(gt=0)
    batch_size: int = Field(ge=2)
    eval_batch_size: int = Field(ge=2)
    lr: float = Field(gt=0)
    weight_decay: float = Field(ge=0)
    warmup_ratio: float = Field(ge=0, lt=1)
    max_grad_norm: float = Field(gt=0)
    dropout: float = Field(ge=0, le=1)
    conditions: list[Literal[CONDITIONS]] = expects(f"a non-empty list from {', '.join(CONDITIONS)}", choices=CONDITIONS, min_length=1)
    transform: TransformSettings
    geometry: GeometrySettings
    seeds: Seeds

    @field_validator("conditions")
    @classmethod
    def _distinct(cls, value):
        if len(set(value)) != len(value):
            raise ValueError(f"expected distinct values, got {value}")
        return value
