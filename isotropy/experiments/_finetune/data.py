"""Train/validation data for fine-tuning: GLUE tasks or a user's table, tokenised once, batched."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isotropy._utils.sampling import subsample_indices
from isotropy.datasets._types import LabeledTexts

__all__ = ["GLUE_METRICS", "Tokenised", "load_splits", "prepare", "subsample", "task_metric", "tokenise"]

# the validation metric GLUE reports for each task (MRPC: F1 of the positive class 'equivalent')
GLUE_METRICS = {"sst2": "accuracy", "cola": "matthews", "mrpc": "f1", "rte": "accuracy", "qnli": "accuracy",
                "wnli": "accuracy", "qqp": "f1", "mnli": "accuracy"}
METRICS = ("accuracy", "f1", "matthews")


def _remap(data: LabeledTexts, names: list[str], where: str) -> LabeledTexts:
    """Re-index ``data.labels`` onto ``names`` (a validation table may lack a class of the training table)."""
    if list(data.label_names) == list(names):
        return data
    index = {n: j for j, n in enumerate(names)}
    missing = sorted(set(data.label_names) - set(index))
    if missing:
        raise ValueError(f"The {where} data has labels {missing} that the training data lacks "
                         f"(training labels: {names}).")
    labels = np.asarray([index[data.label_names[i]] for i in data.labels], dtype=np.int64)
    return LabeledTexts(data.name, data.text_a, data.text_b, labels, list(names), data.source)


def load_splits(config, *, data_dir=None, experiment: str = "istar", section: str = "") -> tuple[LabeledTexts,
                                                                                                 LabeledTexts]:
    """``(train, validation)`` for ``config.task``: a GLUE task name (under ``data_dir``), or ``"table"``; errors name
    ``experiment`` and the config ``section`` the fine-tuning keys are in (``"fine_tune."``, or ``""`` at the top)."""
    task = str(config.task).lower()
    if task == "table":
        from isotropy.datasets.tables import load_table

        spec = config.table
        if spec is None:  # its schema (TableSpec) requires both paths once the section is given
            raise ValueError(f"The '{section}table' option of {experiment} must give 'train' and 'validation' file "
                             f"paths (CSV, TSV or JSON lines) when task is 'table'. Got None instead.")
        options = {"text_column": spec.text_column, "label_column": spec.label_column,
                   "text_pair_column": spec.text_pair_column}
        from isotropy.experiments._config import table_words

        try:
            train = load_table(spec.train, **options)
            valid = load_table(spec.validation, **options)
        except ValueError as exc:
            raise table_words(exc, experiment=experiment, prefix=f"{section}table.") from None
        if train.is_multilabel:
            raise ValueError(f"The '{section}table' option of {experiment} needs single-label data; {spec.train} is "
                             f"multi-label.")
        return train, _remap(valid, train.label_names, "validation")
    from isotropy.datasets.glue import GLUE_TASKS, load_glue_task

    if task not in GLUE_TASKS:
        raise ValueError(f"The '{section}task' option of {experiment} must be one of {sorted(GLUE_TASKS)} or 'table'. "
                         f"Got {config.task!r} instead.")
    return (load_glue_task(task, "train", data_dir=data_dir),
            load_glue_task(task, config.validation_split, data_dir=data_dir))


def subsample(data: LabeledTexts, size, *, seed: int) -> LabeledTexts:
    """A random subset of ``size`` items (all when ``size`` is None or not smaller than the data)."""
    if size is None or size >= len(data):
        return data
    idx = subsample_indices(len(data), int(size), random_state=seed)
    return LabeledTexts(data.name, [data.text_a[i] for i in idx],
                        None if data.text_b is None else [data.text_b[i] for i in idx],
                        np.asarray(data.labels)[idx], list(data.label_names),
                        {**data.source, "subsample": {"size": int(size), "seed": seed}})


@dataclass
class Tokenised:
    """Token ids of every item (unpadded) and labels; ``batch(idx)`` pads a selection into tensors."""

    input_ids: list
    token_type_ids: list | None
    labels: np.ndarray
    pad_id: int

    def __len__(self) -> int:
        return len(self.input_ids)

    def lengths(self) -> np.ndarray:
        return np.fromiter((len(x) for x in self.input_ids), dtype=np.int64, count=len(self))

    def batch(self, idx, device) -> dict:
        import torch

        rows = [self.input_ids[i] for i in idx]
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        types = torch.zeros((len(rows), width), dtype=torch.long)
        for j, (i, row) in enumerate(zip(idx, rows)):
            ids[j, :len(row)] = torch.as_tensor(row)
            mask[j, :len(row)] = 1
            if self.token_type_ids is not None:
                types[j, :len(row)] = torch.as_tensor(self.token_type_ids[i])
        out = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types,
               "labels": torch.as_tensor(self.labels[list(idx)], dtype=torch.long)}
        return {k: v.to(device) for k, v in out.items()}


def tokenise(tokenizer, data: LabeledTexts, *, max_length: int, config=None) -> Tokenised:
    """Tokenise single sentences or pairs once, truncated to ``max_length`` tokens.

    ``max_length`` is cut to what the model takes (:func:`isotropy.models.loading.capped_max_length`): the table of
    positions of its ``config`` and the tokenizer's ``model_max_length`` (which
    :func:`~isotropy.experiments._finetune.model.load_encoder` sets to it). The default 128 on a model of 64 positions
    crashed the forward pass of a longer text.
    """
    from isotropy.models.loading import capped_max_length

    max_length = capped_max_length(int(max_length), config, tokenizer)
    encoded = tokenizer(data.text_a, data.text_b, truncation=True, max_length=max_length, padding=False)
    types = encoded.get("token_type_ids")
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    return Tokenised(list(encoded["input_ids"]), None if types is None else list(types),
                     np.asarray(data.labels, dtype=np.int64), int(pad))


def task_metric(name: str, labels, predictions) -> float:
    """Accuracy, F1 (of class 1; binary tasks) or Matthews correlation, from scikit-learn."""
    from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

    if name == "accuracy":
        return float(accuracy_score(labels, predictions))
    if name == "f1":
        return float(f1_score(labels, predictions, average="binary" if max(labels.max(), predictions.max()) <= 1
                              else "macro"))
    if name == "matthews":
        return float(matthews_corrcoef(labels, predictions))
    raise ValueError(f"The 'metric' option of istar must be one of {list(METRICS)} or 'auto'. Got {name!r} instead.")


def prepare(config, *, data_dir=None, experiment: str = "istar", max_length_key: str = "max_length",
            max_length_given: bool | None = None) -> dict:
    """Load, subsample and tokenise the splits of a resolved fine-tuning ``config``; load its encoder.

    Returns ``{"train_data", "valid_data", "encoder", "train", "valid"}`` (the tokenised splits
    under ``train`` and ``valid``); writes nothing. A ``max_length`` the user gave past the model's positions is
    refused (:func:`~isotropy.experiments._encode.check_max_length`), named ``max_length_key`` of ``experiment``
    (activation-diagrams: ``fine_tune.max_length``); ``max_length_given`` says whether the user gave it (default:
    ``config.was_given(max_length_key)``).
    """
    from isotropy.experiments._finetune.model import load_encoder

    section = max_length_key[: -len("max_length")]  # "fine_tune." for activation-diagrams, "" at the top
    train_data, valid_data = load_splits(config, data_dir=data_dir, experiment=experiment, section=section)
    train_data = subsample(train_data, config.train_size, seed=int(config.data_seed))
    valid_data = subsample(valid_data, config.validation_size, seed=int(config.data_seed))
    tokenizer, encoder = load_encoder(config.model)
    from isotropy.experiments._encode import check_max_length
    from isotropy.experiments._finetune.model import check_istar_layers
    from isotropy.models.contextual import n_transformer_layers

    given = config.was_given(max_length_key) if max_length_given is None else max_length_given
    check_max_length(config.max_length, encoder.config, model=config.model, experiment=experiment,
                     key=max_length_key, given=given)
    check_istar_layers(config, n_transformer_layers(encoder.config) + 1, model=config.model)
    return {"train_data": train_data, "valid_data": valid_data, "encoder": encoder,
            "train": tokenise(tokenizer, train_data, max_length=config.max_length, config=encoder.config),
            "valid": tokenise(tokenizer, valid_data, max_length=config.max_length, config=encoder.config)}
