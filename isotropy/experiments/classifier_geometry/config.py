"""The config schema of ``isotropy run classifier-geometry``: every key typed and range-checked (pydantic)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from isotropy.experiments._config import ExperimentConfig, Seeds, config_rule, expects
from isotropy.experiments.classifier_geometry.problem import TASKS

__all__ = ["ClassifierGeometryConfig"]

# The keys only `task: table` reads (problem.py: load_table), with what they mean when left null there. For every
# other task the data set brings its own items and labels (the NRC lexicon is multi-label, SNLI is pairs), so these
# keys are null: a resolved config that said `multilabel: false` for the lexicon was untrue, and one is refused.
# data_path is not one of them (every task reads it: the lexicon's file, the data folder of the others).
TABLE_DEFAULTS = {"text_column": "text", "text_pair_column": None, "label_column": "label", "multilabel": False,
                  "label_sep": ","}


def _same(a, b) -> bool:
    return type(a) is type(b) and a == b  # False is not 0


class ClassifierGeometryConfig(ExperimentConfig):
    """One setup of Mickus et al. (2024); the packaged setups are ``isotropy/configs/classifier-geometry/*.yaml``.

    ``text_column``, ``text_pair_column``, ``label_column``, ``multilabel`` and ``label_sep`` describe the
    file of ``task: table`` (null there: the defaults of :data:`TABLE_DEFAULTS`); for any other task they
    are null, and a value is refused. Before they were null, every run saved them at those defaults
    whatever its task: such a config (all five at the defaults) still loads, and
    :meth:`hashed_values` hashes a config as that version did, so its runs resume.
    """

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
    text_column: str | None = None
    text_pair_column: str | None = None
    label_column: str | list[str] | None = expects("a column name or a list of 0/1 indicator columns", default=None)
    multilabel: bool | None = None
    label_sep: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _table_keys(cls, data):
        if not isinstance(data, dict):
            return data
        if data.get("task") == "table":  # null: the table's default
            return {**data, **{k: v for k, v in TABLE_DEFAULTS.items() if data.get(k) is None}}
        if all(k in data and _same(data[k], v) for k, v in TABLE_DEFAULTS.items()):  # saved by an earlier version
            return {**data, **dict.fromkeys(TABLE_DEFAULTS)}
        return data

    @field_validator("metric_interval")
    @classmethod
    def _three_points(cls, value, info: ValidationInfo):
        updates = info.data.get("updates")
        if updates is None:
            return value
        points = len(range(0, updates + 1, value)) + (updates % value != 0)  # step 0, every interval, the last
        if points < 3:  # a correlation over the recorded points needs 3 of them (it was NaN, without a word)
            fixes = [f"metric_interval of at most {updates // 2}"] if updates >= 2 else []
            fix = "give " + " or ".join([*fixes, f"updates of at least {value + 1}"])
            raise config_rule(f"records the metrics at {points} points with updates={updates} (step 0 and every "
                              f"metric_interval-th update), and the correlations over them need at least 3: {fix}")
        return value

    @field_validator(*TABLE_DEFAULTS)
    @classmethod
    def _only_for_a_table(cls, value, info: ValidationInfo):
        task = info.data.get("task")
        if value is not None and task is not None and task != "table":
            raise config_rule(f"applies to task: table only (this config's task is {task!r}, whose items and labels "
                              f"come with the task); leave it out or null")
        return value

    @classmethod
    def hashed_values(cls, values: dict) -> dict:
        """``values`` with the table-only keys' nulls at their earlier defaults: the hash runs were saved with."""
        return {**values, **{k: v for k, v in TABLE_DEFAULTS.items() if k in values and values[k] is None}}
