"""Typed configuration of the frozen-encoder classification test (pydantic: types and ranges checked, unknown keys rejected)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from isotropy.experiments._config import MAX_SEED, ExperimentConfig, Seeds
from isotropy.experiments._methods import method_list
from isotropy.experiments.frozen_classification.science import METHODS
from isotropy.models.resolve import MODEL_HELP

__all__ = ["FrozenClassificationConfig"]


class FrozenClassificationConfig(ExperimentConfig):
    """Frozen encoder + isotropy post-processing + logistic regression on a GLUE single-sentence task."""

    task: Literal["sst2", "cola"]
    validation_split: str = Field(min_length=1)
    model: str = Field(description=MODEL_HELP + ".")
    layer: int = Field(description="Hidden-state index mean-pooled (0 = embeddings, -1 = last layer).")
    max_length: int = Field(ge=2)
    encode_batch_size: int = Field(ge=1)
    train_size: int | None = Field(ge=2, description="Random training subset (null = the whole split).")
    data_seed: int = Field(ge=0, le=MAX_SEED, description="Seed of the training subset (the same for every seed below).")
    methods: method_list(METHODS)  # typed mean+pca or Mean + PCA (as sts-isotropy); recorded as METHODS
    n_clusters: int = Field(ge=1, description="Clusters of the cluster-based methods (paper: 27 for BERT).")
    n_components: int = Field(ge=0, description="Directions removed (globally or per cluster; paper: 12).")
    C: float = Field(gt=0, description="Inverse L2 strength of the logistic regression.")
    max_iter: int = Field(ge=1)
    seeds: Seeds  # seeds of the clustering (k-means / GMM)
