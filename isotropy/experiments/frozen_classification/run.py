"""``run(config, results_dir) -> results`` of the frozen-encoder classification test (never plots).

The training subset and the validation split are encoded once (mean-pooled hidden states of one layer,
cached on disk by :func:`isotropy.models.encoders.encode_mean_pooled`); every method is then evaluated for every
seed by :func:`~isotropy.experiments.frozen_classification.science.evaluate_method`. The seeds change
only the clustering; deterministic methods give the same numbers for every seed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from isotropy._utils.sampling import subsample_indices
from isotropy.experiments._claims import Rule
from isotropy.experiments._results import mean_sd
from isotropy.experiments.frozen_classification.science import DETERMINISTIC, evaluate_method, make_transform

__all__ = ["EXPERIMENT", "PAPER", "claims", "markdown_table", "prepare", "report", "run", "summarise"]

EXPERIMENT = "frozen-classification"

# Rajaee & Pilehvar, slide "Test on Classification Task" (the paper's slides): pre-trained BERT-base on
# SST-2; accuracy in %, isotropy I(W). The slide prints 84.36 as the isotropy of the proposed algorithm
# (I(W) is at most 1: presumably 0.8436 or a percentage).
PAPER = {"task": "sst2", "model": "bert-base",
         "baseline": {"accuracy": 55.67, "partition_isotropy": 7.97e-6},
         "kmeans+mean+pca": {"accuracy": 56.08, "partition_isotropy_as_printed": 84.36}}


def _encode(config, split: str, size, ctx):
    from isotropy.datasets.glue import load_glue_task
    from isotropy.experiments._encode import encode_layer

    data = load_glue_task(config.task, split, data_dir=ctx.data_dir)
    idx = subsample_indices(len(data), size, random_state=config.data_seed)
    ctx.log(f"encoding {len(idx)} sentences of {config.task}/{split} with {config.model}")
    X = encode_layer([data.text_a[i] for i in idx], key="layer", experiment=EXPERIMENT, model=config.model,
                     device=ctx.device, layer=config.layer, batch_size=config.encode_batch_size,
                     max_length=config.max_length)
    return (np.asarray(X, dtype=np.float64), np.asarray(data.labels)[idx],
            {**data.source, "n_sentences": len(idx), "subset_seed": config.data_seed if size else None})


def summarise(records: list[dict], methods: list[str]) -> list[dict]:
    """Mean and sd (ddof=1; 0 for one seed) over seeds of every measure, per method in ``methods`` order."""
    rows = []
    for method in methods:
        mine = [r for r in records if r["method"] == method]
        row = {"method": method, "n_seeds": len(mine)}
        for key in ("accuracy", "train_accuracy", "partition_isotropy", "isoscore", "partition_isotropy_train"):
            values = np.array([r[key] for r in mine])
            row[key] = float(values.mean())
            row[f"{key}_sd"] = float(values.std(ddof=1)) if len(values) > 1 else 0.0
        rows.append(row)
    return rows


def _spread(mean: float, sd: float) -> str:
    """``sd`` to two significant digits, or ``0`` when it is rounding: below ``1e-9`` of ``mean`` (a method
    that does not depend on the seed gives the same value in every seed up to its last bits, 1e-17)."""
    return "0" if sd <= 1e-9 * abs(mean) else f"{sd:.2g}"


def markdown_table(results: dict) -> str:
    """Validation accuracy (%) and I(W) per method, mean ± sd over seeds (the mean alone for one seed)."""
    n_train, n_valid = results["data"]["train"]["n_sentences"], results["data"]["validation"]["n_sentences"]
    lines = [(f"{results['task']} with frozen {results['model']} (mean-pooled layer {results['layer']}); "
              f"logistic regression on {n_train} training sentences, accuracy on {n_valid} validation sentences; "
              f"{len(results['seeds'])} seed(s) of the clustering."), "",
             "| method | accuracy (%) | I(W) | IsoScore | train accuracy (%) |", "|---|---|---|---|---|"]
    for r in results["summary"]:
        n = r.get("n_seeds", len(results["seeds"]))  # rows written before n_seeds: every seed
        lines.append(f"| {r['method']} | {mean_sd(r['accuracy'], r['accuracy_sd'], n, '.2f', scale=100)} | "
                     f"{mean_sd(r['partition_isotropy'], r['partition_isotropy_sd'], n, '.3g', sd_text=_spread)} | "
                     f"{mean_sd(r['isoscore'], r['isoscore_sd'], n)} | {100 * r['train_accuracy']:.2f} |")
    return "\n".join(lines) + "\n"


def prepare(config, ctx) -> dict:
    """Encode the training subset and the validation split (cached on disk); writes nothing."""
    from isotropy.experiments._encode import check_max_length
    from isotropy.models.resolve import peek_config

    check_max_length(config.max_length, peek_config(config.model), model=config.model, experiment=EXPERIMENT,
                     given=config.was_given("max_length"))
    X_train, y_train, train_source = _encode(config, "train", config.train_size, ctx)
    X_valid, y_valid, valid_source = _encode(config, config.validation_split, None, ctx)
    return {"train": (X_train, y_train, train_source), "valid": (X_valid, y_valid, valid_source)}


def run(config, results_dir, ctx) -> dict:
    """Evaluate every method for every seed, write ``results.json`` and ``results.md``; never plots."""
    from isotropy.experiments._results import write_json, write_text

    results_dir = Path(results_dir)
    prepared = ctx.prepared
    X_train, y_train, train_source = prepared["train"]
    X_valid, y_valid, valid_source = prepared["valid"]
    ctx.record(data={"train": train_source, "validation": valid_source})
    log = ctx.log
    records = []
    for method in config.methods:
        for seed in config.seeds:
            if method in DETERMINISTIC and seed != config.seeds[0]:  # no randomness: the first seed's numbers
                records.append({**records[-1], "seed": seed})
                continue
            transform = make_transform(method, n_clusters=config.n_clusters, n_components=config.n_components,
                                       random_state=seed)
            record = {"method": method, "seed": seed,
                      **evaluate_method(X_train, y_train, X_valid, y_valid, transform, C=config.C,
                                        max_iter=config.max_iter)}
            records.append(record)
            log(f"{method} seed {seed}: accuracy {100 * record['accuracy']:.2f} %, "
                f"I(W) {record['partition_isotropy']:.3g}, IsoScore {record['isoscore']:.3f}")
    results = {"experiment": EXPERIMENT, "task": config.task, "model": config.model, "layer": config.layer,
               "seeds": list(config.seeds), "n_features": int(X_train.shape[1]),
               "majority_class": float(np.bincount(y_valid).max() / len(y_valid)),
               "data": {"train": train_source, "validation": valid_source},
               "records": records, "summary": summarise(records, list(config.methods)), "paper": PAPER}
    write_json(results_dir / "results.json", results)
    write_text(results_dir / "results.md", markdown_table(results))
    return results


# --- claims: the rules are fixed in this code, not typed (written after first results; see contract.md) (Rajaee & Pilehvar, slide "Test on
# Classification Task": pre-trained BERT-base on SST-2, 55.67 % / I(W) 7.97e-6 -> 56.08 % / 84.36 as printed) ------

_PAPER = "Rajaee & Pilehvar, ACL 2021, slide 'Test on Classification Task'"
_COMMAND = "isotropy run frozen-classification --setup minilm --data-dir DATA_DIR"
_METHOD = "kmeans+mean+pca"
_ISOTROPY_UP = Rule("holds if log10 I(W) after the transform minus log10 I(W) of the baseline is above 0 in every "
                    "clustering seed", above=0.0)
_ACCURACY_KEPT = Rule("holds if the accuracy change is above −1 point in every seed and across the interval; does "
                      "not hold if it is at or below −1 point throughout", above=-1.0)


def claims(results: dict, results_dir) -> list:
    """The slide's two claims (isotropy up, accuracy kept) for the cluster-based method, per clustering seed."""
    from isotropy.experiments._claims import claim, command_of, not_run

    command = command_of(results_dir, _COMMAND)
    records = results["records"]
    model = (f"{results['model']} (frozen, mean-pooled layer {results['layer']}), {results['task']} validation "
             f"({results['data']['validation']['n_sentences']} sentences)")
    base = next((r for r in records if r["method"] == "baseline"), None)
    mine = [r for r in records if r["method"] == _METHOD]
    texts = {"isotropy": ("The cluster-based method (K-means, per-cluster mean and PCA removal) raises the isotropy "
                          "I(W) of frozen sentence representations."),
             "accuracy": "The cluster-based method keeps (slightly raises) the frozen-classifier accuracy."}
    if base is None or not mine:
        reason = "the run has no baseline or no kmeans+mean+pca rows"
        return [not_run(id="isotropy-up", paper=_PAPER, claim=texts["isotropy"], paper_value="7.97e-6 → 84.36 (as printed)",
                        model=model, statistic="log10 I(W) ratio", rule=_ISOTROPY_UP, command=command, reason=reason),
                not_run(id="accuracy-kept", paper=_PAPER, claim=texts["accuracy"], paper_value="55.67 → 56.08 % (+0.41)",
                        model=model, statistic="accuracy change (points)", rule=_ACCURACY_KEPT, command=command,
                        reason=reason)]
    out = [claim(id="isotropy-up", paper=_PAPER, claim=texts["isotropy"], paper_value="7.97e-6 → 84.36 (as printed)",
                 model=model, statistic=(f"log10 I(W) of the validation vectors, {_METHOD} minus baseline "
                                         f"(baseline I(W) {base['partition_isotropy']:.3g})"),
                 values=[np.log10(r["partition_isotropy"]) - np.log10(base["partition_isotropy"]) for r in mine],
                 rule=_ISOTROPY_UP, command=command)]
    changes = [100.0 * (r["accuracy"] - base["accuracy"]) for r in mine]
    statistic = f"validation accuracy change (points), {_METHOD} minus baseline ({100 * base['accuracy']:.2f} %)"
    if base.get("valid_correct") and all(r.get("valid_correct") for r in mine):
        as_array = lambda s: np.frombuffer(s.encode("ascii"), dtype=np.uint8) - ord("0")
        items = [(as_array(r["valid_correct"]), as_array(base["valid_correct"])) for r in mine]
        out.append(claim(id="accuracy-kept", paper=_PAPER, claim=texts["accuracy"], paper_value="55.67 → 56.08 % (+0.41)",
                         model=model, statistic=statistic, values=changes, rule=_ACCURACY_KEPT, command=command,
                         interval="both", items=items,
                         item_statistic=lambda a, b: 100.0 * float(np.mean(a) - np.mean(b))))
    else:
        out.append(claim(id="accuracy-kept", paper=_PAPER, claim=texts["accuracy"], paper_value="55.67 → 56.08 % (+0.41)",
                         model=model, statistic=statistic, values=changes, rule=_ACCURACY_KEPT, command=command))
    return out


def report(results: dict, results_dir) -> str:
    """Write ``claims.json`` beside the results; the command prints ``results.md``."""
    from isotropy.experiments._claims import write_claims

    write_claims(results_dir, claims(results, results_dir))
    path = Path(results_dir) / "results.md"
    return path.read_text(encoding="utf-8") if path.is_file() else ""
