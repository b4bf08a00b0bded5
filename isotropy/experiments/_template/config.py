"""The config schema of the template experiment: every key typed and range-checked (pydantic).

The values live in ``isotropy/configs/_template/default.yaml``; other setups state only what
differs from it.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from isotropy.experiments._config import ExperimentConfig, Seeds, expects

__all__ = ["TemplateConfig"]


class TemplateConfig(ExperimentConfig):
    """IsoScore of Gaussian samples with a geometric spectrum ``1, decay, decay², ...``."""

    n_features: int = Field(ge=2)
    decay: float = Field(gt=0, le=1)
    sample_sizes: list[Annotated[int, Field(ge=2)]] = expects("a non-empty list of ints >= 2", min_length=1)
    seeds: Seeds
