"""Typed configuration of the cluster fine-tuning experiment (pydantic: types and ranges checked, unknown keys rejected)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["ClusterFinetuneConfig", "GeometrySettings", "TransformSettings"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, validate_assignment=True)


class TransformSettings(_Strict):
    """The in-batch cluster-based transform between the pooled vector and the classifier."""

    n_clusters: int = Field(ge=1, description="k-means clusters per batch.")
    n_components: int = Field(ge=0, description="Dominant directions removed per cluster.")
    at_evaluation: bool = Field(description="Also transform each evaluation batch (as the classifier was trained).")


class GeometrySettings(_Strict):
    """What the geometry callback measures over training."""

    every_n_steps: int = Field(ge=1)
    probe_size: int | None = Field(None, ge=3, description="Validation items in the probe (null = all).")


class ClusterFinetuneConfig(_Strict):
    """Fine-tuning with and without the in-batch cluster transform (Rajaee & Pilehvar, "Fine-Tuning BERT")."""

    task: Literal["rte", "mrpc", "qnli", "wnli", "sst2", "cola"]
    validation_split: str = Field(min_length=1)
    model: str = Field(min_length=1)
    pooling: Literal["cls", "mean"]
    max_length: int = Field(ge=2)
    train_size: int | None = Field(None, ge=2)
    validation_size: int | None = Field(None, ge=2)
    data_seed: int = Field(ge=0)
    epochs: float = Field(gt=0)
    batch_size: int = Field(ge=2)
    eval_batch_size: int = Field(ge=2)
    lr: float = Field(gt=0)
    weight_decay: float = Field(ge=0)
    warmup_ratio: float = Field(ge=0, le=1)
    max_grad_norm: float = Field(gt=0)
    dropout: float = Field(ge=0, le=1)
    conditions: list[Literal["baseline", "cluster"]] = Field(min_length=1)
    transform: TransformSettings
    geometry: GeometrySettings
    seeds: list[int] = Field(min_length=1)

    @field_validator("conditions", "seeds")
    @classmethod
    def _distinct(cls, value):
        if len(set(value)) != len(value):
            raise ValueError(f"expected distinct values, got {value}")
        return value
