"""The config schema of ``isotropy run classifier-geometry``: every key typed and range-checked (pydantic)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from isotropy.experiments._config import ExperimentConfig, Seeds, expects
from isotropy.experiments.classifier_geometry.problem import TASKS

__all__ = ["ClassifierGeometryConfig"]


class ClassifierGeometryConfig(ExperimentConfig):
    """One setup of Mickus et al. (2024); the packaged setups are ``isotropy/configs/classifier-geometry/*.yaml``."""

    task: Literal[TASKS] = expects(f"one of {', '.join(TASKS)}")
    model: str = Field(min_length=1)
    vocab_limit: int | None = Field(None, ge=1)
    n_items: int | None = Field(None, ge=3)
    updates: int = Field(ge=1)
    lr: float = Field(gt=0)
    seeds: Seeds
    metric_interval: int = Field(ge=1)
    sample_size: int | None = Field(None, ge=3)
    data_path: str | None = None
    split: str | None = None
    tasks: list[str] | None = expects("a list of GLUE task names such as [cola, rte]", default=None)
    models: list[str] | None = expects("a list of sentence-transformers models", default=None)
    text_column: str = "text"
    text_pair_column: str | None = None
    label_column: str | list[str] = expects("a column name or a list of 0/1 indicator columns", default="label")
    multilabel: bool = False
    label_sep: str = ","
