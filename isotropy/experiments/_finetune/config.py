"""The fine-tuning settings shared by istar, activation-diagrams and cluster-finetune (pydantic schema).

:class:`FinetuneConfig` is the schema of ``isotropy run istar`` (whose packaged setups,
``isotropy/configs/istar/*.yaml``, activation-diagrams names as ``fine_tune_setup``);
:func:`finetune_setup` resolves one of those setups with overrides, :func:`resolve` fills
``metric: auto`` and :func:`sweep_specs` lists the runs of a sweep.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field, ValidationInfo, field_validator

from isotropy.experiments._config import MAX_SEED, ExperimentConfig, Seeds, config_rule, expects

__all__ = ["FinetuneConfig", "IstarSettings", "Pooling", "TableSpec", "finetune_setup", "resolve", "sweep_specs"]

SETUPS = "istar"  # the folder of isotropy/configs holding the packaged fine-tuning setups
DEFAULT_SETUP = "sst2-cpu"


def _pooling_name(value):
    """``"cls"`` is read as ``"first"`` (the library's name of first-token pooling), with a DeprecationWarning."""
    if value == "cls":
        import warnings

        warnings.warn("pooling 'cls' is deprecated; use 'first' (the first token, an encoder's [CLS]).",
                      DeprecationWarning, stacklevel=2)
        return "first"
    return value


Pooling = Annotated[Literal["mean", "first"], BeforeValidator(_pooling_name), expects("mean or first")]


def _nonzero_finite(values: list[float]) -> list[float]:
    if not all(math.isfinite(v) and v != 0 for v in values):
        raise ValueError("non-zero")
    if len(set(values)) != len(values):  # one run per (λ, seed): a repeated λ was counted as more seeds in the tables
        raise ValueError("distinct")
    return values


class TableSpec(ExperimentConfig):
    """``task: table``: a user's training and validation files (CSV, TSV or JSON lines)."""

    train: str = Field(min_length=1)
    validation: str = Field(min_length=1)
    text_column: str = "text"
    label_column: str = "label"
    text_pair_column: str | None = None


class IstarSettings(ExperimentConfig):
    """Which hidden states I-STAR regularises and how Σ_S is estimated."""

    layers: Literal["all", "last"] | list[int] = expects("'all', 'last' or a non-empty list of distinct hidden-state "
                                                         "indices")
    level: Literal["token", "sentence"] = expects("token or sentence")
    zeta: float = Field(ge=0, le=1)
    shrinkage_sample: int = Field(ge=2)

    @field_validator("layers")
    @classmethod
    def _layers(cls, value):
        # before any model is loaded: [] and a repeated index were refused, or silently merged, only at run time
        if isinstance(value, list) and (not value or len(set(value)) != len(value)):
            raise ValueError("expected a non-empty list of distinct indices")
        return value


class FinetuneConfig(ExperimentConfig):
    """Rudman & Eickhoff (ICLR 2024); the packaged setups are ``isotropy/configs/istar/*.yaml``."""

    task: str = expects("a GLUE task (sst2, cola, mrpc, rte, ...) or 'table'", min_length=1)
    validation_split: str = Field(min_length=1)
    table: TableSpec | None = None
    metric: Literal["auto", "accuracy", "f1", "matthews"] = expects("auto, accuracy, f1 or matthews")
    model: str = Field(min_length=1)
    pooling: Pooling
    max_length: int = Field(ge=2)
    train_size: int | None = Field(None, ge=2)
    validation_size: int | None = Field(None, ge=2)
    data_seed: int = Field(ge=0, le=MAX_SEED)
    epochs: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    eval_batch_size: int = Field(ge=1)
    lr: float = Field(gt=0)
    head_lr: float | None = Field(None, gt=0)
    weight_decay: float = Field(ge=0)
    warmup_ratio: float = Field(ge=0, le=1)
    max_grad_norm: float | None = Field(None, gt=0)
    dropout: float = Field(ge=0, le=1)
    seeds: Seeds
    lambdas: Annotated[list[float], AfterValidator(_nonzero_finite)] = expects(
        "a list of distinct non-zero finite numbers (the I-STAR weights)")
    baseline: bool
    cosreg: float | Literal[False] | None = expects(
        "a finite number (the CosReg weight), or false / 0 / null for no CosReg runs", allow_inf_nan=False)
    istar: IstarSettings
    checkpoint_every: int = Field(ge=0)

    @field_validator("cosreg")
    @classmethod
    def _something_to_run(cls, value, info: ValidationInfo):
        """A sweep with no run (no λ, no baseline, no CosReg) was accepted and its empty tables marked finished."""
        if (value is None or value is False or value == 0) and info.data.get("lambdas") == [] and \
                info.data.get("baseline") is False:
            raise config_rule("leaves nothing to run with lambdas: [] and baseline: false; give a CosReg weight, a "
                              "λ in lambdas, or baseline: true")
        return value


def finetune_setup(setup: str, **overrides) -> FinetuneConfig:
    """The validated fine-tuning settings of the packaged istar ``setup`` with ``overrides`` (nested mappings)."""
    from isotropy.experiments._config import resolve_config

    return resolve_config(FinetuneConfig, experiment=SETUPS, setup=setup, default_setup=DEFAULT_SETUP,
                          overrides=overrides)


def resolve(config: FinetuneConfig) -> FinetuneConfig:
    """A copy of the validated ``config`` with ``metric: auto`` filled from the task and ``cosreg: false/0`` as None."""
    from isotropy.experiments._finetune.data import GLUE_METRICS

    update = {}
    if config.metric == "auto":
        update["metric"] = GLUE_METRICS.get(str(config.task).lower(), "accuracy")
    if config.cosreg is False or config.cosreg == 0:
        update["cosreg"] = None
    return config.model_copy(update=update)


def sweep_specs(config: FinetuneConfig) -> list:
    """The runs of the sweep of a resolved ``config``, seed-major: for each seed, base, the I-STAR λs, then CosReg."""
    from isotropy.experiments._finetune.train import RunSpec

    specs = []
    for seed in config.seeds:
        if config.baseline:
            specs.append(RunSpec("none", 0.0, seed))
        specs += [RunSpec("istar", float(lam), seed) for lam in config.lambdas]
        if config.cosreg is not None:
            specs.append(RunSpec("cosreg", float(config.cosreg), seed))
    return specs
