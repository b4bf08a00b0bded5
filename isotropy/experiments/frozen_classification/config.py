"""Typed configuration of the frozen-encoder classification test (pydantic: types and ranges checked, unknown keys rejected)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from isotropy.experiments._config import ExperimentConfig, Seeds, expects

from isotropy.experiments.frozen_classification.science import METHODS

__all__ = ["FrozenClassificationConfig"]

Method = Literal[METHODS]  # one of the science module's method names


class FrozenClassificationConfig(ExperimentConfig):
    """Frozen encoder + isotropy post-processing + logistic regression on a GLUE single-sentence task."""

    task: Literal["sst2", "cola"] = "sst2"
    validation_split: str = "dev"
    model: str = Field("all-MiniLM-L6-v2", description="Packaged model name or a local transformers directory.")
    layer: int = Field(-1, description="Hidden-state index mean-pooled (0 = embeddings, -1 = last layer).")
    max_length: int = Field(128, ge=2)
    encode_batch_size: int = Field(64, ge=1)
    train_size: int | None = Field(5000, ge=2, description="Random training subset (null = the whole split).")
    data_seed: int = Field(0, ge=0, description="Seed of the training subset (the same for every seed below).")
    methods: list[Method] = expects(f"a non-empty list of distinct methods from {', '.join(METHODS)}",
                                    default=["baseline", "mean", "mean+pca", "kmeans+mean", "kmeans+mean+pca"],
                                    min_length=1)
    n_clusters: int = Field(27, ge=1, description="Clusters of the cluster-based methods (paper: 27 for BERT).")
    n_components: int = Field(12, ge=0, description="Directions removed (globally or per cluster; paper: 12).")
    C: float = Field(1.0, gt=0, description="Inverse L2 strength of the logistic regression.")
    max_iter: int = Field(2000, ge=1)
    seeds: Seeds = [0, 1, 2]  # seeds of the clustering (k-means / GMM)

    @field_validator("methods")
    @classmethod
    def _distinct(cls, value):
        if len(set(value)) != len(value):
            raise ValueError(f"expected distinct values, got {value}")
        return value
