"""The config schema of ``isotropy run layer-geometry``: every key typed and range-checked (pydantic)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from isotropy.experiments._config import ExperimentConfig, Seeds, expects

__all__ = ["LayerGeometryConfig"]

_LAYERS = "'all', a comma-separated string such as '0,3,6', or a list of hidden-state indices"


class MetricsConfig(ExperimentConfig):
    """Options of the per-layer metrics (Cai et al. 2021)."""

    intra_max_instances: int = Field(ge=2)
    n_neighbors: int = Field(ge=1)
    k_range: list[int] = expects("a list [k_min, k_max] of two ints >= 1", min_length=2, max_length=2)
    min_silhouette: float = Field(ge=-1, le=1)
    silhouette_sample_size: int | None = Field(None, ge=3)
    n_init: int = Field(ge=1)


class LayerGeometryConfig(ExperimentConfig):
    """Cai et al. (ICLR 2021); the packaged setups are ``isotropy/configs/layer-geometry/*.yaml``."""

    model: str = Field(min_length=1)
    corpus: str = expects("wikitext-2, ptb or a path to a plain-text file", min_length=1)
    split: Literal["validation", "test", "train"] = expects("validation, test or train")
    layers: int | str | list[int] = expects(_LAYERS)
    pooling: Literal["first", "mean"] = expects("first or mean")
    max_tokens: int | None = Field(None, ge=1)
    max_per_type: int | None = Field(None, ge=1)
    skip_types: list[str] = expects("a list of words", default_factory=list)
    shuffle: bool
    max_length: int = Field(ge=2)
    leading_space: bool | Literal["auto"] = expects("'auto', true or false", default="auto")
    batch_size: int = Field(ge=1)
    dtype: Literal["float32", "float16"] = expects("float32 or float16")
    seeds: Seeds
    metrics: MetricsConfig
    static: str | None = None
    static_vocabulary: Literal["corpus", "kept"] = expects("corpus or kept")
    pca_layers: int | str | list[int] | None = expects(_LAYERS + ", or null (the middle layer)", default=None)
    pca_max_points: int = Field(ge=3)
