"""The config schema of ``isotropy run sts-isotropy``: every key typed and range-checked (pydantic)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator

from isotropy.experiments._config import ExperimentConfig, Seeds, config_rule, expects
from isotropy.experiments._methods import method_list
from isotropy.experiments.sts_isotropy.run import METHODS

__all__ = ["StsIsotropyConfig"]

DATASETS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSB", "SICK")
Dataset = Literal[DATASETS]


class SweepConfig(ExperimentConfig):
    """K-means + Mean + PCA on ``datasets``, one parameter varied at a time (empty lists: no sweep)."""

    datasets: list[Dataset] = expects(f"a list of data sets from {', '.join(DATASETS)}", choices=DATASETS, default_factory=list)
    n_clusters: list[Annotated[int, Field(ge=1)]] = expects("a list of ints >= 1", default_factory=list)
    n_components: list[Annotated[int, Field(ge=0)]] = expects("a list of ints >= 0", default_factory=list)


class TokenLevelConfig(ExperimentConfig):
    """The paper's own level (``tokens.py``): methods fitted on token states, tokens transformed, then pooled."""

    datasets: list[Dataset] = expects(f"a non-empty list of data sets from {', '.join(DATASETS)}", choices=DATASETS, min_length=1)
    methods: method_list(METHODS)
    fit_max_tokens: int = Field(ge=2)


# `layer` is read by `pooling: mean` only: `--set layer=3` under the default sentence-transformers pooling ran the
# pipeline's own last layer and said nothing. Why a refusal of any layer but the last (-1), and not a null default
# meaning "the last layer": -1 already means the last layer, which is what the sentence-transformers pipeline pools,
# so the default is true for both poolings; and every committed run saved `layer: -1` in run.json and results.json,
# which the committed-run tests compare verbatim with a fresh run's resolved config (a null default would change
# them). So configs saved before this check load, hash and resume unchanged.
LAST_LAYER = -1


class StsIsotropyConfig(ExperimentConfig):
    """Rajaee & Pilehvar (2021); the packaged setups are ``isotropy/configs/sts-isotropy/*.yaml``.

    ``layer`` is read by ``pooling: mean`` only; with the sentence-transformers pooling (which pools
    its own last layer) a layer other than the last, -1, is refused in one line.
    """

    model: str = Field(min_length=1)
    pooling: Literal["sentence-transformers", "mean"] = expects("sentence-transformers or mean")
    layer: int
    max_length: int = Field(ge=1)
    fit_on: str = expects("self, stsb-train, wikitext-2 or a path to a text file", min_length=1)
    fit_max_sentences: int = Field(ge=1)
    datasets: list[Dataset] = expects(f"a non-empty list of data sets from {', '.join(DATASETS)}", choices=DATASETS, min_length=1)
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

    @field_validator("layer")
    @classmethod
    def _layer_needs_mean_pooling(cls, value, info: ValidationInfo):
        pooling = info.data.get("pooling")
        if value != LAST_LAYER and pooling is not None and pooling != "mean":
            raise config_rule(f"applies to pooling: mean only (this config's pooling is {pooling!r}, whose pipeline "
                              f"pools its own last layer, -1); leave it at -1, or set pooling=mean")
        return value
