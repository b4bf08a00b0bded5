"""The config schema of ``isotropy run classifier-geometry``: every key typed and range-checked (pydantic)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from isotropy.experiments._config import ConfigError, ExperimentConfig, Seeds, config_rule, expects
from isotropy.experiments.classifier_geometry.problem import TASKS

__all__ = ["ClassifierGeometryConfig"]

# The keys only `task: table` reads (problem.py: load_table), with what they mean when left null there. For every
# other task the data set brings its own items and labels (the NRC lexicon is multi-label, SNLI is pairs), so these
# keys are null: a resolved config that said `multilabel: false` for the lexicon was untrue, and one is refused.
# data_path is not one of them (every task reads it: the lexicon's file, the data folder of the others).
TABLE_DEFAULTS = {"text_column": "text", "text_pair_column": None, "label_column": "label", "multilabel": False,
                  "label_sep": ","}


# Every key only some tasks read, with those tasks: a value given for another task was accepted, recorded in the
# config and had no effect (`tasks: [cola, rte]` and `models: [...]` under the lexicon task: the outputs were those of
# the lexicon alone), so it is refused as the table-only keys are. Null is "not set" and is taken by every task.
ONLY_FOR = {**dict.fromkeys(TABLE_DEFAULTS, ("table",)), "tasks": ("glue",), "models": ("glue",),
            "split": ("snli", "glue")}
_WHY = {("table",): "whose items and labels come with the task", ("glue",): "one problem, not the GLUE grid",
        ("snli", "glue"): "which reads no split"}


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
    tasks: list[str] | None = expects("a list of GLUE task names such as [cola, rte]", default=None,
                                      validate_default=True)  # task: glue refuses the default null
    models: list[str] | None = expects("a list of sentence-transformers models", default=None)
    text_column: str | None = None
    text_pair_column: str | None = None
    label_column: str | list[str] | None = expects("a column name or a list of 0/1 indicator columns", default=None)
    multilabel: bool | None = None
    label_sep: str | None = None

    _notes: list = PrivateAttr(default_factory=list)  # what settle decided, logged by prepare

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

    @field_validator(*ONLY_FOR)
    @classmethod
    def _only_for_its_tasks(cls, value, info: ValidationInfo):
        task, tasks = info.data.get("task"), ONLY_FOR[info.field_name]
        if value is not None and task is not None and task not in tasks:
            raise config_rule(f"applies to task: {' or '.join(tasks)} only (this config's task is {task!r}, "
                              f"{_WHY[tasks]}); leave it out or null")
        return value

    @field_validator("tasks", "models")
    @classmethod
    def _grid(cls, value, info: ValidationInfo):
        """The GLUE grid's lists, checked before any model is loaded (an empty, repeated or unknown task was refused
        only after the embeddings were made, and a repeated one ran twice into the same folder)."""
        if info.data.get("task") != "glue" or (value is None and info.field_name == "models"):
            return value
        if info.field_name == "tasks":
            from isotropy.datasets.glue import GLUE_TASKS

            unknown = [t for t in value or () if t not in GLUE_TASKS]
            if not value or unknown or len(set(value)) != len(value):  # null too: the grid needs its tasks
                raise config_rule(f"must be a non-empty list of distinct GLUE tasks from {', '.join(sorted(GLUE_TASKS))}"
                                  f" for task: glue")
        elif not value or len(set(value)) != len(value):
            raise config_rule("must be a non-empty list of distinct sentence-transformers models, or null for the "
                              "'model' key alone")
        return value

    @classmethod
    def hashed_values(cls, values: dict) -> dict:
        """``values`` with the table-only keys' nulls at their earlier defaults: the hash runs were saved with."""
        return {**values, **{k: v for k, v in TABLE_DEFAULTS.items() if k in values and values[k] is None}}


def recorded_points(updates: int, metric_interval: int) -> int:
    """How many steps the metrics are recorded at: step 0, every ``metric_interval``-th update and the last one."""
    return len(range(0, updates + 1, metric_interval)) + (updates % metric_interval != 0)


def check_recorded_points(config) -> None:
    """Refuse a config whose metrics are recorded at fewer than 3 points: the correlations over them would be NaN."""
    updates, interval = int(config.updates), int(config.metric_interval)
    points = recorded_points(updates, interval)
    if points < 3:
        fixes = [f"metric_interval of at most {updates // 2}"] if updates >= 2 else []
        raise ConfigError(f"The 'metric_interval' setting of classifier-geometry records the metrics at {points} "
                          f"points with updates={updates} (step 0 and every metric_interval-th update), and the "
                          f"correlations over them need at least 3: give "
                          f"{' or '.join([*fixes, f'updates of at least {interval + 1}'])}. Got {interval} instead.")


def settle(config: ClassifierGeometryConfig, given: frozenset) -> ClassifierGeometryConfig:
    """The setup's ``metric_interval`` follows a small ``--updates``; an interval that records fewer than 3 points is
    refused before any data is read.

    ``--updates 2`` under the demo's ``metric_interval: 10`` recorded steps 0 and 2 only, whose correlations are
    NaN: when the user gives ``updates`` and not ``metric_interval``, the interval becomes ``updates // 2`` (3
    points at least) and a note says so; one the user gives is refused in one line (the correlations were NaN,
    without a word).
    """
    updates, interval = int(config.updates), int(config.metric_interval)
    if recorded_points(updates, interval) < 3 and "metric_interval" not in given and updates >= 2:
        config.metric_interval = max(1, updates // 2)
        config._notes.append(f"metric_interval: the setup's {interval} with updates={updates} drawn as "
                             f"{config.metric_interval} (3 points at least for the correlations; --set "
                             f"metric_interval=... to choose)")
    check_recorded_points(config)
    return config
