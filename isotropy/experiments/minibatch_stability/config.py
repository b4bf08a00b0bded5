"""Typed configuration of the mini-batch stability experiment (pydantic: types and ranges checked, unknown keys rejected)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from isotropy.experiments._config import ExperimentConfig, Seeds, expects
from isotropy.models.resolve import MODEL_HELP

__all__ = ["EmbeddingCloud", "MinibatchStabilityConfig", "SyntheticCloud"]

SOURCES = ("synthetic", "embeddings")


class SyntheticCloud(ExperimentConfig):
    """A Gaussian N(0, diag(λ)) with λ_i ∝ i^(−decay): its IsoScore is known in closed form."""

    n_features: int = Field(ge=2, description="Dimension d of the cloud (384 = MiniLM's width).")
    decay: float = Field(ge=0.0, description="Power-law decay of the eigenvalues (0 = isotropic).")


class EmbeddingCloud(ExperimentConfig):
    """Sentence embeddings of a GLUE single-sentence task: mean-pooled hidden states of one layer."""

    task: Literal["sst2", "cola"]
    split: str = Field(description="The cloud: every sentence of this split (SST-2 dev: 872).")
    shrinkage_split: str = Field(description="Split whose sentences give Σ_S (held out from the cloud).")
    model: str = Field(description=MODEL_HELP + ".")
    layer: int = Field(description="Hidden-state index pooled (0 = embeddings, -1 = last layer).")
    max_length: int = Field(ge=2)
    batch_size: int = Field(ge=1, description="Sentences per forward pass when encoding.")


class MinibatchStabilityConfig(ExperimentConfig):
    """IsoScore and IsoScore* on mini-batches against the whole cloud (Rudman & Eickhoff, Figure 4)."""

    sources: list[Literal[SOURCES]] = expects(f"a non-empty list from {', '.join(SOURCES)}", choices=SOURCES, min_length=1)
    batch_sizes: list[int] = expects("a non-empty list of distinct ints >= 2", min_length=1)
    zetas: list[float] = expects("a non-empty list of distinct floats in [0, 1]", min_length=1)
    n_batches: int = Field(ge=2, description="Mini-batches drawn per size and seed.")
    shrinkage: Literal["sample", "identity"] = Field(
        description="Σ_S: covariance of a held-out sample (as I-STAR) or the identity.")
    shrinkage_sample: int = Field(ge=2, description="Rows of the held-out sample giving Σ_S.")
    synthetic: SyntheticCloud
    embeddings: EmbeddingCloud
    seeds: Seeds

    @field_validator("batch_sizes")
    @classmethod
    def _sizes(cls, value):
        if any(v < 2 for v in value) or len(set(value)) != len(value):
            raise ValueError(f"expected distinct ints >= 2, got {value}")
        return sorted(value)

    @field_validator("zetas")
    @classmethod
    def _zetas(cls, value):
        if any(not 0.0 <= v <= 1.0 for v in value) or len(set(value)) != len(value):
            raise ValueError(f"expected distinct floats in [0, 1], got {value}")
        return sorted(value)


def unused(config: MinibatchStabilityConfig) -> dict[str, str]:
    """The cloud sections this config does not read, with why: a value given for one is refused (see ``Experiment``).

    ``--set sources=[synthetic] --set embeddings.model=doesnotexist`` finished and recorded the model it never loaded.
    """
    return {name: (f"applies only when {name} is in sources (this config's sources are {list(config.sources)}): add "
                   f"{name} to sources, or leave it out")
            for name in SOURCES if name not in config.sources}
