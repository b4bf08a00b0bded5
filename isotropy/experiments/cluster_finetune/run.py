"""``prepare`` / ``run`` of the cluster fine-tuning experiment (Rajaee & Pilehvar, "Fine-Tuning BERT").

For every seed, the encoder is fine-tuned twice on a GLUE pair task (RTE by default) with the Hugging
Face ``Trainer``: once as is (``baseline``) and once with the in-batch cluster-based isotropy transform
(:class:`isotropy.training.InBatchClusterIsotropy`: k-means on the batch of pooled vectors, subtract each
cluster's mean, remove each cluster's top directions) between the pooled [CLS] vector and the classifier.
:class:`isotropy.training.HFGeometryCallback` records the per-layer geometry of the pooled vectors of a
probe (validation pairs) over training, through the Trainer's own log. After training: validation
accuracy, I(W) of the classifier's input, and per layer I(W), IsoScore and the zero-mean ratio of the
pooled vectors, beside the same numbers for the pre-trained encoder.
"""

from __future__ import annotations

import copy
import re
import tempfile
from pathlib import Path

import numpy as np

from isotropy._utils.sampling import subsample_indices
from isotropy.experiments._claims import Rule
from isotropy.experiments._results import mean_sd
from isotropy.experiments.cluster_finetune.science import layer_geometry

__all__ = ["EXPERIMENT", "PAPER", "claims", "markdown_table", "prepare", "report", "run", "summarise"]

EXPERIMENT = "cluster-finetune"
# what summarise reads back from a runs/*.json part on --resume
PART_KEYS = ("condition", "accuracy", "partition_isotropy", "isoscore", "partition_isotropy_pooled", "layers")

# Rajaee & Pilehvar, slide "Fine-tuning results" (the paper's slides): BERT-base, dev sets; accuracy in %,
# isotropy I(W) of the [CLS] vectors.
PAPER = {"rte": {"baseline": {"accuracy": 65.3, "partition_isotropy": 4.86e-5},
                 "cluster": {"accuracy": 62.8, "partition_isotropy": 0.29}},
         "wic": {"baseline": {"accuracy": 64.04, "partition_isotropy": 8.26e-4},
                 "cluster": {"accuracy": 62.1, "partition_isotropy": 0.13}}}
_GEOMETRY_KEY = re.compile(r"^geometry/(?P<metric>[^/]+)/layer_(?P<layer>\d+)$")


def _bars_only():
    """transformers' ``ProgressCallback`` without its ``on_log``, which writes every log entry to stdout."""
    from transformers import ProgressCallback

    class BarsOnly(ProgressCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            return None

    return BarsOnly()


def prepare(config, ctx) -> dict:
    """Load and tokenise the task, load the encoder; writes nothing."""
    from isotropy.datasets.glue import load_glue_task
    from isotropy.experiments._finetune.data import subsample, tokenise
    from isotropy.experiments._finetune.model import load_encoder

    train = load_glue_task(config.task, "train", data_dir=ctx.data_dir)
    valid = load_glue_task(config.task, config.validation_split, data_dir=ctx.data_dir)
    train = subsample(train, config.train_size, seed=config.data_seed)
    valid = subsample(valid, config.validation_size, seed=config.data_seed)
    if "cluster" in config.conditions:  # every batch the transform sees needs at least n_clusters rows
        k = config.transform.n_clusters
        for name, n, size in (("train_size", len(train), config.batch_size),
                              ("validation_size", len(valid), config.eval_batch_size)):
            if 0 < n % size < k and (name == "train_size" or config.transform.at_evaluation):
                raise ValueError(f"The '{name}' setting of cluster-finetune gives {n} items, whose last batch of "
                                 f"{n % size} has fewer rows than transform.n_clusters={k}; choose a size or batch "
                                 f"size whose remainder is 0 or at least {k}.")
    check_epochs(config.epochs, n_train=len(train), batch_size=config.batch_size)
    tokenizer, encoder = load_encoder(config.model)
    from isotropy.experiments._encode import check_max_length

    check_max_length(config.max_length, encoder.config, model=config.model, experiment="cluster-finetune",
                     given=config.was_given("max_length"))
    if config.pooling == "first":  # a decoder's first token is the same for every input: refused before any work
        from isotropy.models.pooling import check_pooling

        check_pooling(config.pooling, encoder.config, caller="cluster-finetune", instead=("mean",))
    return {"train_data": train, "valid_data": valid, "tokenizer": tokenizer, "encoder": encoder,
            "train": tokenise(tokenizer, train, max_length=config.max_length, config=encoder.config),
            "valid": tokenise(tokenizer, valid, max_length=config.max_length, config=encoder.config)}


def _rows(tokenised) -> list[dict]:
    """The Trainer's data set: one dict of unpadded ids per item (the collator pads a batch)."""
    rows = []
    for i, ids in enumerate(tokenised.input_ids):
        row = {"input_ids": list(ids), "attention_mask": [1] * len(ids), "labels": int(tokenised.labels[i])}
        if tokenised.token_type_ids is not None:
            row["token_type_ids"] = list(tokenised.token_type_ids[i])
        rows.append(row)
    return rows


def _probe(tokenised, size: int | None, seed: int) -> dict:
    """Padded tensors of (a random subset of) the validation items: the callback's probe."""
    n = len(tokenised)
    idx = subsample_indices(n, size, random_state=seed)
    batch = tokenised.batch(idx, "cpu")
    return {k: v for k, v in batch.items() if k != "labels"}


def _make_transform(config):
    from isotropy.training import InBatchClusterIsotropy

    t = config.transform
    return InBatchClusterIsotropy(n_clusters=t.n_clusters, n_components=t.n_components)


def _pooled_states(model, tokenised, *, batch_size: int, device) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Per transformer layer (1..L) the pooled vectors of every item, the pooled last layer and the classifier input.

    Computed in eval mode, batch by batch (so an evaluation-time transform sees the batches the Trainer's
    evaluation sees).
    """
    import torch

    from isotropy.experiments._finetune.model import pool

    was_training = model.training
    model.eval()
    layers, raw, features = None, [], []
    with torch.no_grad():
        for start in range(0, len(tokenised), batch_size):
            batch = tokenised.batch(list(range(start, min(start + batch_size, len(tokenised)))), device)
            r, f, out = model.pooled(batch["input_ids"], batch["attention_mask"], batch.get("token_type_ids"),
                                     output_hidden_states=True)
            # layers 1..L: the embedding output's [CLS] is the same vector for every input (no variance)
            per_layer = [pool(h, batch["attention_mask"], model.pooling) for h in out.hidden_states[1:]]
            layers = [[] for _ in per_layer] if layers is None else layers
            for store, p in zip(layers, per_layer):
                store.append(p.double().cpu().numpy())
            raw.append(r.double().cpu().numpy())
            features.append(f.double().cpu().numpy())
    model.train(was_training)
    return [np.concatenate(s) for s in layers], np.concatenate(raw), np.concatenate(features)


def _curves(log_history: list[dict]) -> list[dict]:
    """``{step, metric, layer, value}`` of every geometry entry the callback logged through the Trainer."""
    out = []
    for entry in log_history:
        for key, value in entry.items():
            match = _GEOMETRY_KEY.match(key)
            if match:
                out.append({"step": int(entry.get("step", 0)), "metric": match["metric"], "layer": int(match["layer"]),
                            "value": float(value)})
    return out


def _epoch_accuracies(log_history: list[dict]) -> list[dict]:
    """``{epoch, accuracy}`` of each evaluation at an epoch's end, once: the final ``trainer.evaluate()`` evaluates the
    model the last epoch's end already did, at the same epoch, and was a second entry of it."""
    out = []
    for entry in log_history:
        if "eval_accuracy" in entry and not (out and out[-1]["epoch"] == entry.get("epoch")):
            out.append({"epoch": entry.get("epoch"), "accuracy": entry["eval_accuracy"]})
    return out


def check_epochs(epochs: float, *, n_train: int, batch_size: int) -> None:
    """Refuse ``epochs`` below one optimiser step: the Trainer rounds the steps up (``epochs: 1e-9`` trained one step,
    a quarter of an epoch, and the run recorded 1e-09 epochs)."""
    steps = -(-int(n_train) // int(batch_size))  # batches per epoch (the last one may be short)
    if float(epochs) * steps < 1:
        from isotropy.experiments._config import ConfigError

        raise ConfigError(f"The 'epochs' setting of cluster-finetune must be at least {1 / steps:g}, one optimiser step "
                          f"({n_train} training items in batches of {batch_size}: {steps} steps per epoch). Got "
                          f"{epochs!r} instead.")


def _train_one(config, prepared, condition: str, seed: int, device: str, ctx) -> dict:
    import torch
    from transformers import DataCollatorWithPadding, Trainer, TrainingArguments

    from isotropy.experiments.cluster_finetune.model import PairClassifier, PartitionIsotropyMetric
    from isotropy.training import HFGeometryCallback
    from isotropy.training.metrics import metric_from_name

    torch.manual_seed(seed)
    transform = _make_transform(config) if condition == "cluster" else None
    model = PairClassifier(copy.deepcopy(prepared["encoder"]), len(prepared["train_data"].label_names),
                           pooling=config.pooling, transform=transform,
                           transform_at_eval=config.transform.at_evaluation, dropout=config.dropout)
    geometry = config.geometry
    callback = HFGeometryCallback(
        _probe(prepared["valid"], geometry.probe_size, seed), every_n_steps=geometry.every_n_steps, layers="all",
        pooling=config.pooling, batch_size=config.eval_batch_size,
        metrics={"partition_isotropy": PartitionIsotropyMetric,
                 "isoscore": lambda d: metric_from_name("isoscore", n_features=d),
                 "cosine_similarity_mean": lambda d: metric_from_name("cosine_similarity_mean", n_features=d)})

    def accuracy(prediction):
        return {"accuracy": float((np.argmax(prediction.predictions, -1) == prediction.label_ids).mean())}

    with tempfile.TemporaryDirectory(prefix="isotropy-trainer-") as scratch:  # nothing of the Trainer's is kept
        args = TrainingArguments(
            output_dir=scratch, num_train_epochs=config.epochs, per_device_train_batch_size=config.batch_size,
            per_device_eval_batch_size=config.eval_batch_size, learning_rate=config.lr,
            weight_decay=config.weight_decay, max_grad_norm=config.max_grad_norm,
            warmup_steps=float(config.warmup_ratio),  # transformers reads a float in [0, 1) as a share of the steps
            lr_scheduler_type="linear", seed=seed, data_seed=seed, logging_steps=geometry.every_n_steps,
            eval_strategy="epoch", save_strategy="no", report_to=[], use_cpu=str(device) == "cpu",
            dataloader_num_workers=0, disable_tqdm=not ctx.show_progress)
        trainer = Trainer(model=model, args=args, train_dataset=_rows(prepared["train"]),
                          eval_dataset=_rows(prepared["valid"]),
                          data_collator=DataCollatorWithPadding(prepared["tokenizer"]),
                          processing_class=prepared["tokenizer"], compute_metrics=accuracy, callbacks=[callback])
        # the Trainer prints each log entry (the geometry dicts every few steps) on stdout, ahead of the results
        # table: never; its progress bars only where the run draws its own (a terminal, without --quiet)
        from transformers import PrinterCallback, ProgressCallback

        trainer.remove_callback(PrinterCallback)
        trainer.remove_callback(ProgressCallback)
        if ctx.show_progress:
            trainer.add_callback(_bars_only())
        trainer.train()
        final = trainer.evaluate()
        history = list(trainer.state.log_history)
    states, raw, features = _pooled_states(model, prepared["valid"], batch_size=config.eval_batch_size,
                                           device=next(model.parameters()).device)
    from isotropy import isoscore, partition_isotropy

    return {"condition": condition, "seed": int(seed), "accuracy": float(final["eval_accuracy"]),
            "partition_isotropy": float(partition_isotropy(features)), "isoscore": float(isoscore(features)),
            "partition_isotropy_pooled": float(partition_isotropy(raw)),
            "layers": layer_geometry(states), "curves": _curves(history),
            "epochs": _epoch_accuracies(history),
            "train_loss": [{"step": e["step"], "loss": e["loss"]} for e in history if "loss" in e],
            "steps": int(trainer.state.global_step)}


def summarise(runs: list[dict], conditions: list[str]) -> list[dict]:
    """Mean and sd (ddof=1) over seeds per condition: accuracy, I(W), and per-layer I(W) / zero-mean ratio."""
    out = []
    for condition in conditions:
        mine = [r for r in runs if r["condition"] == condition]
        if not mine:
            continue
        row = {"condition": condition, "n_seeds": len(mine)}
        for key in ("accuracy", "partition_isotropy", "isoscore", "partition_isotropy_pooled"):
            values = np.array([r[key] for r in mine if r.get(key) is not None], dtype=float)
            row[key] = float(values.mean()) if values.size else None
            row[f"{key}_sd"] = float(values.std(ddof=1)) if values.size > 1 else 0.0
        row["layers"] = [{key: float(np.mean([r["layers"][i][key] for r in mine])) if key != "layer" else layer[key]
                          for key in layer} for i, layer in enumerate(mine[0]["layers"])]
        out.append(row)
    return out


def markdown_table(results: dict) -> str:
    """Paper vs ours (accuracy, I(W)), then per-layer I(W) and zero-mean ratio of the pooled vectors."""
    paper = PAPER.get(results["task"], {})
    pooled = "[CLS]" if results["pooling"] in ("first", "cls") else "mean-pooled"
    lines = [(f"{results['task']} ({results['n_train']} training / {results['n_validation']} validation pairs), "
              f"{results['model']} fine-tuned {results['epochs']} epoch(s), {len(results['seeds'])} seed(s); "
              f"I(W) of the classifier's input ({pooled} vector, after the transform where there is one)."), "",
             "| | paper accuracy | paper I(W) | our accuracy (%) | our I(W) | our I(W) before the transform |",
             "|---|---|---|---|---|---|"]
    for row in results["summary"]:
        ref = paper.get(row["condition"], {})
        acc = mean_sd(row["accuracy"], row["accuracy_sd"], row.get("n_seeds", len(results["seeds"])), ".1f", scale=100)
        lines.append(f"| {row['condition']} | {ref.get('accuracy', '–')} | {ref.get('partition_isotropy', '–')} | "
                     f"{acc} | {row['partition_isotropy']:.3g} | {row['partition_isotropy_pooled']:.3g} |")
    lines += ["", (f"Per layer ({pooled} vectors of the validation pairs): I(W) / zero-mean ratio "
                   f"‖mean‖ / mean ‖x‖."), "",
              "| layer | " + " | ".join(r["condition"] for r in results["summary"]) + " |",
              "|---|" + "---|" * len(results["summary"])]
    for i, layer in enumerate(results["summary"][0]["layers"]):
        cells = [f"{r['layers'][i]['partition_isotropy']:.3g} / {r['layers'][i]['zero_mean_ratio']:.3f}"
                 for r in results["summary"]]
        lines.append(f"| {layer['layer']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def run(config, results_dir, ctx) -> dict:
    """Pre-trained geometry, then every (condition, seed) fine-tuned; parts, ``results.json``, ``results.md``."""
    import torch

    from isotropy.experiments._results import write_json, write_text
    from isotropy.experiments.cluster_finetune.model import PairClassifier

    results_dir = Path(results_dir)
    prepared = ctx.prepared
    ctx.record(data={"train": prepared["train_data"].source, "validation": prepared["valid_data"].source})
    first = int(config.seeds[0])
    pretrained = ctx.read_part("runs/pretrained.json", seed=first, keys=PART_KEYS)
    if pretrained is None:
        ctx.log("pre-trained encoder: per-layer geometry of the validation pairs")
        model = PairClassifier(prepared["encoder"], len(prepared["train_data"].label_names), pooling=config.pooling)
        states, raw, _ = _pooled_states(model.to(torch.device(ctx.device)), prepared["valid"],
                                        batch_size=config.eval_batch_size, device=torch.device(ctx.device))
        from isotropy import isoscore, partition_isotropy

        pretrained = {"condition": "pretrained", "accuracy": None, "partition_isotropy": float(partition_isotropy(raw)),
                      "isoscore": float(isoscore(raw)), "partition_isotropy_pooled": float(partition_isotropy(raw)),
                      "layers": layer_geometry(states)}
        ctx.write_part("runs/pretrained.json", pretrained, seed=first)
    runs = [pretrained]
    for seed in config.seeds:
        for condition in config.conditions:
            part = f"runs/{condition}_seed{seed}.json"
            record = ctx.read_part(part, seed=seed, keys=PART_KEYS)
            if record is None:
                ctx.log(f"fine-tuning {condition}, seed {seed}")
                record = _train_one(config, prepared, condition, seed, ctx.device, ctx)
                ctx.write_part(part, record, seed=seed)
                ctx.log(f"{condition} seed {seed}: accuracy {100 * record['accuracy']:.1f} %, "
                        f"I(W) {record['partition_isotropy']:.3g}")
            runs.append(record)
    results = {"experiment": EXPERIMENT, "task": config.task, "model": config.model, "pooling": config.pooling,
               "epochs": config.epochs, "seeds": list(config.seeds), "n_train": len(prepared["train_data"]),
               "n_validation": len(prepared["valid_data"]), "transform": config.transform.model_dump(),
               "summary": summarise(runs, ["pretrained", *config.conditions]),
               "curves": {f"{r['condition']}_seed{r['seed']}": r["curves"] for r in runs if "curves" in r},
               "paper": PAPER}
    write_json(results_dir / "results.json", results)
    write_text(results_dir / "results.md", markdown_table(results))
    return results


# --- claims: the rules are fixed in this code, not typed (written after first results; see contract.md) (Rajaee & Pilehvar, slides "Fine-tuning
# results" (RTE re-implemented, BERT-base: 65.3 % / I(W) 4.86e-5 -> 62.8 % / 0.29) and "CLS Token Analysis") --------

_PAPER = "Rajaee & Pilehvar, ACL 2021"
_COMMAND = "isotropy run cluster-finetune --setup minilm --seeds 0,1,2 --data-dir DATA_DIR"
_COST = Rule("holds if the accuracy change (transform minus baseline, same seed) is below 0 in every seed and across "
             "the interval; does not hold if it is at or above 0 throughout", below=0.0)
_ISOTROPY = Rule("holds if log10 I(W) of the classifier's input, transform minus baseline, is above 0 in every seed",
                 above=0.0)
# "cannot improve": the change must stay near zero, not merely below some large gain. The margin is 0.1 decade
# (I(W) at most ×1.26 the baseline's): small next to the 3.8 decades by which the slides' transform raises I(W)
# of its classifier input (4.86e-5 -> 0.29), so any gain on the paper's scale is a violation, while a no-change
# measured with a little sampling jitter is not. A fall (a negative change) satisfies the claim.
CLS_MARGIN = 0.1
_CLS_NOT_IMPROVED = Rule(f"holds if log10 I(W) of the raw pooled vector, transform minus baseline, is below "
                         f"{CLS_MARGIN:g} (a gain of less than ×{10 ** CLS_MARGIN:.2f}: a margin near zero, small next "
                         f"to the slides' 3.8-decade gain of the classifier's input) in every seed and across the "
                         f"interval; does not hold if it is at or above {CLS_MARGIN:g} throughout", below=CLS_MARGIN)
_ZERO_MEAN = Rule("holds if the last layer's zero-mean ratio ‖mean‖ / mean ‖x‖ after baseline fine-tuning is below "
                  "0.1 in every seed", below=0.1)


def claims(results: dict, results_dir) -> list:
    """The slides' fine-tuning claims, per seed from the finished parts ``runs/{condition}_seed{seed}.json``."""
    from isotropy.experiments._claims import claim, command_of, not_run
    from isotropy.experiments._files import read_json

    command = command_of(results_dir, _COMMAND)
    runs = {}
    for path in sorted((Path(results_dir) / "runs").glob("*_seed*.json")):
        record = read_json(path)
        runs[(record["condition"], int(record["seed"]))] = record
    seeds = [int(s) for s in results["seeds"] if ("baseline", int(s)) in runs and ("cluster", int(s)) in runs]
    pooled = "[CLS]" if results["pooling"] in ("first", "cls") else "mean-pooled"
    model = (f"{results['model']} fine-tuned on {results['task']} ({results['n_train']} pairs, {results['epochs']:g} "
             f"epoch(s)), {results['n_validation']} validation pairs")
    specs = [
        ("accuracy-cost", "slide 'Fine-tuning results'", "The in-batch cluster transform lowers the fine-tuned accuracy.",
         "RTE 65.3 → 62.8 % (−2.5)", "accuracy change (points), transform minus baseline", _COST,
         lambda b, c: 100.0 * (c["accuracy"] - b["accuracy"])),
        ("isotropy-up", "slide 'Fine-tuning results'", "The transform raises I(W) of the classifier's input.",
         "RTE 4.86e-5 → 0.29", f"log10 I(W) of the {pooled} vector after the transform, minus baseline", _ISOTROPY,
         lambda b, c: float(np.log10(c["partition_isotropy"]) - np.log10(b["partition_isotropy"]))),
        ("cls-not-improved", "slide 'CLS Token Analysis'",
         "The algorithm cannot improve the isotropy of the CLS tokens during fine-tuning.",
         "can not improve the isotropy of CLS tokens", f"log10 I(W) of the raw {pooled} vector, transform minus baseline",
         _CLS_NOT_IMPROVED,
         lambda b, c: float(np.log10(c["partition_isotropy_pooled"]) - np.log10(b["partition_isotropy_pooled"]))),
        ("cls-zero-mean", "slide 'CLS Token Analysis'", "After fine-tuning, the CLS tokens are zero-mean.",
         "CLS token already are zero-mean", f"zero-mean ratio of the last layer's {pooled} vectors, baseline",
         _ZERO_MEAN, lambda b, c: float(b["layers"][-1]["zero_mean_ratio"])),
    ]
    out = []
    for id_, where, text, paper_value, statistic, rule, value in specs:
        if seeds:
            out.append(claim(id=id_, paper=f"{_PAPER}, {where}", claim=text, paper_value=paper_value, model=model,
                             statistic=statistic, values=[value(runs[("baseline", s)], runs[("cluster", s)]) for s in seeds],
                             rule=rule, command=command))
        else:
            out.append(not_run(id=id_, paper=f"{_PAPER}, {where}", claim=text, paper_value=paper_value, model=model,
                               statistic=statistic, rule=rule, command=command,
                               reason="the run has no seed with both the baseline and the cluster condition"))
    return out


def report(results: dict, results_dir) -> str:
    """Write ``claims.json`` beside the results; the command prints ``results.md``."""
    from isotropy.experiments._claims import write_claims

    write_claims(results_dir, claims(results, results_dir))
    path = Path(results_dir) / "results.md"
    return path.read_text(encoding="utf-8") if path.is_file() else ""
