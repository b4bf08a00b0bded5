"""The config schema of ``isotropy run sts-isotropy``: every key typed and range-checked (pydantic)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from isotropy.experiments._config import ExperimentConfig, Seeds, expects
from isotropy.experiments._methods import method_list
from isotropy.experiments.sts_isotropy.run import METHODS

__all__ = ["StsIsotropyConfig"]

DATASETS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSB", "SICK")
Dataset = Literal[DATASETS]


class SweepConfig(ExperimentConfig):
    """K-means + Mean + PCA on ``datasets``, one parameter varied at a time (empty lists: no sweep)."""

    datasets: list[Dataset] = expects(f"a list of data sets from {', '.join(DATASETS)}", default_factory=list)
    n_clusters: list[Annotated[int, Field(ge=1)]] = expects("a list of ints >= 1", default_factory=list)
    n_components: list[Annotated[int, Field(ge=0)]] = expects("a list of ints >= 0", default_factory=list)


class TokenLevelConfig(ExperimentConfig):
    """The paper's own level (``tokens.py``): methods fitted on token states, tokens transformed, then pooled."""

    datasets: list[Dataset] = expects(f"a non-empty list of data sets from {', '.join(DATASETS)}", min_length=1)
    methods: method_list(METHODS)
    fit_max_tokens: int = Field(ge=2)


class StsIsotropyConfig(ExperimentConfig):
    """Rajaee & Pilehvar (2021); the packaged setups are ``isotropy/configs/sts-isotropy/*.yaml``."""

    model: str = Field(min_length=1)
    pooling: Literal["sentence-transformers", "mean"] = expects("sentence-transformers or mean")
    layer: int
    max_length: int = Field(ge=1)
    fit_on: str = expects("self, stsb-train, wikitext-2 or a path to a text file", min_length=1)
    fit_max_sentences: int = Field(ge=1)
    datasets: list[Dataset] = expects(f"a non-empty list of data sets from {', '.join(DATASETS)}", min_length=1)
    limit: int | None = Field(None, ge=2)
    aggregate: Literal["all", "wmean", "mean"] = expects("all, wmean or mean")
    methods: method_list(METHODS)  # typed mean+pca or Mean + PCA (as frozen-classification); recorded as METHODS
    abtt_components: int | Literal["auto"] = expects("'auto' or an int >= 0")
    n_clusters: int = Field(ge=1)
    n_components: int = Field(ge=0)
    whitening_components: int | None = Field(None, ge=1)
    whitening_eps: float = Field(ge=0)
    metric_sample: int | None = Field(None, ge=2)
    sweep: SweepConfig | None = None
    token_level: TokenLevelConfig | None = None
    seeds: Seeds
    batch_size: int = Field(ge=1)
