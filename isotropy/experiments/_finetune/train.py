"""One fine-tuning run with I-STAR, CosReg or no regularisation, with mid-run checkpoints.

Sign convention (as :mod:`isotropy.torch`): I-STAR minimises ``task_loss − λ·IsoScore*(H)``, so
λ > 0 raises the isotropy of the regularised hidden states ``H`` and λ < 0 lowers it; CosReg
minimises ``task_loss + λ·mean_cos(H)``.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from isotropy._utils.sampling import subsample_indices
from isotropy._utils.validation import IsotropyValueError
from isotropy.experiments._finetune.model import SentenceClassifier, select_states
from isotropy.torch import cosine_penalty, istar_penalty
from isotropy.torch import shrinkage_covariance as torch_shrinkage_covariance

__all__ = [
    "METHODS",
    "RECORD_KEYS",
    "RunSpec",
    "evaluate",
    "regularised_loss",
    "shrinkage_covariance",
    "train_model",
    "train_run",
    "training_step",
]

METHODS = ("none", "istar", "cosreg")
# the entries of a run's record that the sweep's tables read back (istar's runs/<run_id>.json on --resume)
RECORD_KEYS = ("run_id", "condition", "method", "lambda", "metric", "score", "accuracy", "isoscore_star", "isoscore",
               "twonn_dimension", "silhouette", "train_isoscore_star_first", "train_isoscore_star_last")


# Resamples of the validation items behind the claims' "bootstrap over items" (isotropy.experiments.istar.run.claims)
BOOTSTRAP_RESAMPLES = 200
BOOTSTRAP_FIELDS = ("score", "isoscore_star", "twonn_dimension", "silhouette")


def item_bootstrap(X, labels, predictions, *, metric: str, shrinkage_cov, zeta: float) -> dict:
    """The validation statistics on :data:`BOOTSTRAP_RESAMPLES` resamples of the validation items (with replacement).

    The resamples are drawn from the number of items alone (``random_state=[0, n_items]``), so every run of a sweep
    resamples the same items in the same order and two runs' replicates are paired: replicate ``b`` of a run
    minus replicate ``b`` of another is that difference on one resample of the items, whose percentile interval is
    the interval over items of the claims (the seed spread covers training randomness). TwoNN counts each distinct
    point of a resample once (a repeated item is a duplicate row); a statistic that cannot be formed on a resample
    is ``None`` there.

    Returns
    -------
    dict
        ``{"n_resamples", "random_state", "score": [...], "isoscore_star": [...], "twonn_dimension": [...],
        "silhouette": [...]}``.
    """
    import warnings

    labels, predictions = np.asarray(labels), np.asarray(predictions)
    n = len(labels)
    rng = np.random.default_rng([0, n])
    out = {field: [] for field in BOOTSTRAP_FIELDS}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the duplicate rows of each resample, merged by TwoNN
        for _ in range(BOOTSTRAP_RESAMPLES):
            idx = rng.integers(0, n, size=n)
            for field, value in _resample_statistics(X[idx], labels[idx], predictions[idx], metric=metric,
                                                     shrinkage_cov=shrinkage_cov, zeta=zeta).items():
                out[field].append(value)
    return {"n_resamples": BOOTSTRAP_RESAMPLES, "random_state": [0, n], **out}


def _resample_statistics(X, labels, predictions, *, metric, shrinkage_cov, zeta) -> dict:
    """:data:`BOOTSTRAP_FIELDS` of one resample of the validation items; ``None`` for one that cannot be formed."""
    from isotropy import isoscore_star, twonn_dimension
    from isotropy.experiments._finetune.data import task_metric

    calls = {"score": lambda: task_metric(metric, labels, predictions),
             "isoscore_star": lambda: isoscore_star(X, shrinkage_cov=shrinkage_cov, zeta=zeta),
             "twonn_dimension": lambda: twonn_dimension(X),
             "silhouette": lambda: _class_silhouette(X, labels)}
    out = {}
    for field in BOOTSTRAP_FIELDS:
        try:
            value = calls[field]()
        except ValueError:  # e.g. one class in the resample, too few distinct points
            value = None
        out[field] = None if value is None or not math.isfinite(value) else float(value)
    return out


def _class_silhouette(X, labels) -> float | None:
    """Silhouette (euclidean, exact) of the validation representations by gold class (Rudman & Eickhoff's
    "minimising IsoScore maximises silhouette"); None for a regression task or fewer than two classes."""
    from isotropy import silhouette_score

    labels = np.asarray(labels)
    if not np.issubdtype(labels.dtype, np.integer):
        return None
    n_classes = np.unique(labels).size
    return float(silhouette_score(X, labels)) if 2 <= n_classes < len(labels) else None


@dataclass(frozen=True)
class RunSpec:
    """One run of the sweep: regulariser ``method`` with weight ``lam``, and a ``seed``."""

    method: str
    lam: float
    seed: int

    @property
    def condition(self) -> str:
        """Label shared by the seeds of one setting: ``base``, ``istar:-5``, ``cosreg:1``."""
        return "base" if self.method == "none" else f"{self.method}:{self.lam:g}"

    @property
    def run_id(self) -> str:
        return f"{self.condition.replace(':', '_')}_seed{self.seed}"


def regularised_loss(logits, labels, states, *, method: str, lam: float, shrinkage_cov=None, zeta: float = 0.2):
    """Total loss and its parts for one batch.

    Returns ``(total, task_loss, iso_star, mean_cos)``: ``iso_star`` is IsoScore* of ``states``
    (with graph for ``method="istar"``, detached otherwise, ``None`` when ``shrinkage_cov`` is
    None and the method is not I-STAR), ``mean_cos`` the mean pairwise cosine (CosReg only).
    A batch of one state (sentence level, the last batch of an epoch of ``batch_size·m + 1`` sentences)
    has neither a covariance nor a pair: its loss is the task loss alone and both are ``None``.
    """

    if method not in METHODS:
        raise ValueError(f"The 'method' parameter of regularised_loss must be one of {list(METHODS)}. "
                         f"Got {method!r} instead.")
    task = torch.nn.functional.cross_entropy(logits, labels)
    total, iso, cos = task, None, None
    if states.shape[0] < 2:  # no IsoScore* nor mean cosine of one state: no penalty this step
        return total, task, iso, cos
    if method == "istar":
        penalty = istar_penalty(states, shrinkage_cov=shrinkage_cov, zeta=zeta)  # −IsoScore*(states)
        total = task + lam * penalty  # = task − λ·IsoScore*
        iso = -penalty
    elif shrinkage_cov is not None:
        with torch.no_grad():
            iso = -istar_penalty(states.detach(), shrinkage_cov=shrinkage_cov, zeta=zeta)
    if method == "cosreg":
        cos = cosine_penalty(states)
        total = task + lam * cos
    return total, task, iso, cos


def _set_train(model, flag: bool):
    model.train(flag)
    return model


@torch.no_grad()
def shrinkage_covariance(model, data, idx, *, config, device, sentence_level: bool = False):
    """Σ_S: covariance (ddof=1) of the regularised states of the stored sample ``idx``, in eval mode.

    With ``sentence_level=True``, the covariance of the pooled sentence representations instead
    (the Σ_S used for IsoScore* of validation sentence representations).
    """
    was_training = model.training
    _set_train(model, False)
    istar = config.istar
    size = int(config.eval_batch_size)
    order = np.asarray(idx)[np.argsort(data.lengths()[np.asarray(idx)], kind="stable")]
    parts = []
    for start in range(0, len(order), size):
        batch = data.batch(order[start:start + size], device)
        out = model(batch)
        parts.append(out.pooled if sentence_level else
                     select_states(out.hidden_states, batch["attention_mask"], layers=istar.layers,
                                   level=istar.level, pooling=config.pooling))
    _set_train(model, was_training)
    if sum(len(p) for p in parts) < 2:
        raise ValueError(f"The 'istar.shrinkage_sample' option of istar must give at least 2 states. "
                         f"Got {sum(len(p) for p in parts)} instead.")
    return torch_shrinkage_covariance(parts)


@torch.no_grad()
def evaluate(model, data, *, batch_size: int, device):
    """``(predictions, pooled)`` for every item: argmax classes and float64 sentence representations."""
    was_training = model.training
    _set_train(model, False)
    order = np.argsort(data.lengths(), kind="stable")  # length-sorted batches pad little
    preds = np.empty(len(data), dtype=np.int64)
    pooled = None
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        out = model(data.batch(idx, device))
        if pooled is None:
            pooled = np.empty((len(data), out.pooled.shape[1]), dtype=np.float64)
        preds[idx] = out.logits.argmax(-1).cpu().numpy()
        pooled[idx] = out.pooled.double().cpu().numpy()
    _set_train(model, was_training)
    return preds, pooled


def training_step(model, batch: dict, optimizer, *, method: str, lam: float, shrinkage_cov, config) -> dict:
    """One optimiser step on ``batch`` with the regularised loss; returns the loss parts as floats.

    The regularised states are :func:`~isotropy.experiments._finetune.model.select_states` of the
    forward pass (``config.istar``: layers, level); gradients are clipped to
    ``config.max_grad_norm`` when set.
    """
    istar = config.istar
    out = model(batch)
    states = select_states(out.hidden_states, batch["attention_mask"], layers=istar.layers,
                           level=istar.level, pooling=config.pooling)
    total, task, iso, cos = regularised_loss(out.logits, batch["labels"], states, method=method, lam=lam,
                                             shrinkage_cov=shrinkage_cov, zeta=float(istar.zeta))
    optimizer.zero_grad(set_to_none=True)
    total.backward()
    if config.max_grad_norm:
        torch.nn.utils.clip_grad_norm_(model.parameters(), float(config.max_grad_norm))
    optimizer.step()
    return {key: None if value is None else float(value.detach())
            for key, value in (("loss", total), ("task_loss", task), ("iso_star", iso), ("mean_cos", cos))}


def _lr_lambda(total_steps: int, warmup: int):
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup))
    return factor


def _save_checkpoint(path: Path, state: dict):
    from isotropy._utils.atomic import atomic_write

    with atomic_write(path, "wb") as handle:
        torch.save(state, handle)


def train_run(spec: RunSpec, config, encoder, n_classes: int, train, valid, *, device,
              checkpoint: Path | None = None, interrupt_at_step: int | None = None, log=None) -> dict:
    """Fine-tune a copy of ``encoder`` under ``spec``; the run's record (see :func:`train_model`), with the validation
    statistics on resamples of the items that istar's claims read (``bootstrap``)."""
    return train_model(spec, config, encoder, n_classes, train, valid, device=device, checkpoint=checkpoint,
                       interrupt_at_step=interrupt_at_step, log=log, bootstrap=True)[0]


def train_model(spec: RunSpec, config, encoder, n_classes: int, train, valid, *, device,
                checkpoint: Path | None = None, interrupt_at_step: int | None = None,
                log=None, bootstrap: bool = False) -> tuple[dict, SentenceClassifier]:
    """Fine-tune a copy of ``encoder`` under ``spec`` and measure the validation set.

    Parameters
    ----------
    spec : RunSpec
    config : FinetuneConfig
        The resolved fine-tuning config (:func:`isotropy.experiments._finetune.config.resolve`; keys as in
        ``configs/istar/sst2-cpu.yaml``).
    encoder : transformers model
        The pre-trained encoder; a deep copy is trained, ``encoder`` itself is not modified.
    n_classes : int
    train, valid : Tokenised
    device : torch.device or str
    checkpoint : path, optional
        Mid-run state (weights, optimiser, scheduler, RNG, Σ_S, step) is saved here every
        ``config.checkpoint_every`` steps and restored from here if present.
    interrupt_at_step : int, optional
        Save a checkpoint and raise ``KeyboardInterrupt`` after this global step (tests).
    bootstrap : bool, default=False
        Also record the validation statistics on resamples of the items (``record["bootstrap"]``,
        :func:`item_bootstrap`: about 200 times each statistic's cost).

    Returns
    -------
    record : dict
        The run's record: validation metric, accuracy, IsoScore* / IsoScore / TwoNN dimension / class silhouette of
        the validation sentence representations, and the IsoScore* of the regularised training
        states at the start and end of training.
    model : SentenceClassifier
        The trained classifier (its ``encoder`` is the trained copy).
    """
    from isotropy import isoscore, isoscore_star, twonn_dimension
    from isotropy.experiments._finetune.data import task_metric

    started = time.perf_counter()
    device = torch.device(device)
    seed, istar = int(spec.seed), config.istar
    torch.manual_seed(seed)
    model = SentenceClassifier(copy.deepcopy(encoder), n_classes, pooling=config.pooling,
                               dropout=float(config.dropout)).to(device)
    model.train()
    batch_size, epochs = int(config.batch_size), int(config.epochs)
    steps_per_epoch = math.ceil(len(train) / batch_size)
    total_steps = steps_per_epoch * epochs
    head_lr = float(config.head_lr or config.lr)  # the new head may learn faster than the encoder
    optimizer = torch.optim.AdamW([{"params": model.encoder.parameters(), "lr": float(config.lr)},
                                   {"params": model.head.parameters(), "lr": head_lr}],
                                  weight_decay=float(config.weight_decay))
    warmup = round(float(config.warmup_ratio) * total_steps)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _lr_lambda(total_steps, max(1, warmup)))
    step, shrink, history = 0, None, {"loss": [], "task_loss": [], "iso_star": [], "mean_cos": []}
    if checkpoint is not None and Path(checkpoint).is_file():
        from isotropy.models._safety import load_checkpoint

        state = load_checkpoint(checkpoint, map_location=device, what=f"checkpoint of run {spec.run_id}")
        missing = {"model", "optimizer", "scheduler", "step", "shrinkage_cov", "history", "rng"} - set(state)
        if missing:
            raise IsotropyValueError(f"The checkpoint {str(checkpoint)!r} of run {spec.run_id} lacks "
                                     f"{sorted(missing)}: expected a checkpoint written by isotropy; delete it "
                                     f"to start over.")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        step, shrink, history = state["step"], state["shrinkage_cov"], state["history"]
        torch.set_rng_state(state["rng"])
        if state.get("cuda_rng") is not None and device.type == "cuda":
            torch.cuda.set_rng_state(state["cuda_rng"], device)
        if log:
            log(f"{spec.run_id}: resumed at step {step}/{total_steps}")
    every = int(config.checkpoint_every or 0)
    sample_size = min(int(istar.shrinkage_sample), len(train))
    while step < total_steps:
        epoch, offset = divmod(step, steps_per_epoch)
        if offset == 0 or shrink is None:  # Σ_S refreshed at the start of every epoch
            sample = subsample_indices(len(train), sample_size, random_state=[seed, epoch, 1], sort=False)
            shrink = shrinkage_covariance(model, train, sample, config=config, device=device)
        order = np.random.default_rng([seed, epoch]).permutation(len(train))
        batch = train.batch(order[offset * batch_size:(offset + 1) * batch_size], device)
        parts = training_step(model, batch, optimizer, method=spec.method, lam=float(spec.lam),
                              shrinkage_cov=shrink, config=config)
        scheduler.step()
        step += 1
        for key, value in parts.items():
            history[key].append(value)
        if not math.isfinite(history["loss"][-1]):
            raise ValueError(f"Run {spec.run_id} diverged at step {step}: loss {history['loss'][-1]}; "
                             f"lower 'lr' or |lambda|.")
        if checkpoint is not None and ((every and step % every == 0 and step < total_steps)
                                       or step == interrupt_at_step):
            _save_checkpoint(Path(checkpoint), {
                "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "step": step, "shrinkage_cov": shrink, "history": history,
                "rng": torch.get_rng_state(),
                "cuda_rng": torch.cuda.get_rng_state(device) if device.type == "cuda" else None})
        if step == interrupt_at_step:
            raise KeyboardInterrupt(f"interrupted after step {step} of {spec.run_id}")
    # validation: task metric and the geometry of the sentence representations
    preds, X = evaluate(model, valid, batch_size=int(config.eval_batch_size), device=device)
    sample = subsample_indices(len(train), sample_size, random_state=[seed, epochs, 1], sort=False)
    sentence_cov = shrinkage_covariance(model, train, sample, config=config, device=device, sentence_level=True)
    zeta = float(istar.zeta)
    tail = max(1, len(history["iso_star"]) // 10)
    iso_hist = [v for v in history["iso_star"] if v is not None]
    record = {
        "run_id": spec.run_id, "condition": spec.condition, "method": spec.method,
        "lambda": float(spec.lam) if spec.method != "none" else 0.0, "seed": seed,
        "metric": config.metric, "score": task_metric(config.metric, valid.labels, preds),
        "accuracy": task_metric("accuracy", valid.labels, preds),
        "isoscore_star": isoscore_star(X, shrinkage_cov=sentence_cov.double().cpu().numpy(), zeta=zeta),
        "isoscore": isoscore(X),
        "twonn_dimension": twonn_dimension(X),
        "silhouette": _class_silhouette(X, valid.labels),
        "train_isoscore_star_first": float(np.mean(iso_hist[:tail])) if iso_hist else None,
        "train_isoscore_star_last": float(np.mean(iso_hist[-tail:])) if iso_hist else None,
        "train_task_loss_last": float(np.mean(history["task_loss"][-tail:])),
        "steps": total_steps, "n_train": len(train), "n_validation": len(valid),
    }
    if bootstrap:
        record["bootstrap"] = item_bootstrap(X, valid.labels, preds, metric=config.metric,
                                             shrinkage_cov=sentence_cov.double().cpu().numpy(), zeta=zeta)
    record["seconds"] = round(time.perf_counter() - started, 2)
    if checkpoint is not None and Path(checkpoint).is_file():
        Path(checkpoint).unlink()
    return record, model
