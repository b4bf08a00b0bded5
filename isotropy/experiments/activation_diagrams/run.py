"""``prepare`` / ``run`` of the activation diagrams: the pre-trained encoder and the istar experiment's fine-tuned ones.

The fine-tuning is the istar experiment's own: its packaged setup (``fine_tune_setup``, with
``fine_tune`` overrides) gives the training settings, :func:`isotropy.experiments._finetune.data.prepare`
loads the data and the encoder, and :func:`isotropy.experiments._finetune.train.train_model` trains one
model per (λ, seed) exactly as ``isotropy run istar`` does (same seeds → same numbers: the record
it returns is kept beside the diagram). The sentence embeddings are the validation representations
that run evaluates (:func:`isotropy.experiments._finetune.train.evaluate`: the pooled last layer).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from isotropy.experiments._claims import Rule
from isotropy.experiments.activation_diagrams.science import profile_summary

__all__ = ["EXPERIMENT", "claims", "istar_config", "markdown_table", "prepare", "report", "run", "share_k", "summarise"]

EXPERIMENT = "activation-diagrams"
# what summarise reads back from a states/*.json part on --resume
STATE_KEYS = ("condition", "accuracy", "profile", "max_over_median", "mean_cosine", "isoscore", "rogue_share",
              "top_dimensions", "top_cosine_dimensions")


def istar_config(config):
    """The fine-tuning settings of this run: the istar setup, then ``fine_tune``, model, λs and seeds."""
    from isotropy.experiments._finetune.config import finetune_setup
    from isotropy.experiments.activation_diagrams.config import istar_overrides

    return finetune_setup(config.fine_tune_setup, **istar_overrides(config))


def prepare(config, ctx) -> dict:
    """Validate the fine-tuning settings, load the data and the encoder (as istar does); writes nothing."""
    from isotropy.experiments._finetune.config import resolve
    from isotropy.experiments._finetune.data import prepare as prepare_finetuning

    settings = resolve(istar_config(config))
    prepared = prepare_finetuning(settings, data_dir=ctx.data_dir, experiment="activation-diagrams",
                                  max_length_key="fine_tune.max_length",
                                  max_length_given=config.was_given("fine_tune.max_length"))
    check_top_k(config.top_k, width=getattr(prepared["encoder"].config, "hidden_size", None), model=settings.model)
    return {"istar": settings, **prepared}


def check_top_k(top_k, *, width: int | None, model: str) -> None:
    """Refuse a top_k past the model's width once it is known, before any fine-tuning: a k > width has no rogue share
    (profile_summary leaves it out), and results.json dropped it while config.yaml recorded it."""
    wide = [int(k) for k in top_k if width is not None and int(k) > width]
    if wide:
        from isotropy.experiments._config import ConfigError

        raise ConfigError(f"The 'top_k' setting of activation-diagrams must hold ints in [1, {width}] (the width of "
                          f"{model}'s embeddings); {wide} are past it. Got {list(top_k)} instead.")


def _embeddings(encoder, prepared: dict, istar, device) -> np.ndarray:
    """Validation sentence embeddings ``(n, d)`` as the fine-tuning's ``evaluate`` computes them (eval mode, pooled last layer)."""
    from isotropy.experiments._finetune.model import SentenceClassifier
    from isotropy.experiments._finetune.train import evaluate

    n_classes = len(prepared["train_data"].label_names)
    model = SentenceClassifier(encoder, n_classes, pooling=istar.pooling, dropout=0.0).to(device)
    _, pooled = evaluate(model, prepared["valid"], batch_size=int(istar.eval_batch_size), device=device)
    return pooled


def summarise(states: list[dict]) -> list[dict]:
    """Per condition (pretrained, base, istar:λ, cosreg:w): the profile and the statistics averaged over seeds."""
    out = []
    for condition in dict.fromkeys(s["condition"] for s in states):
        mine = [s for s in states if s["condition"] == condition]
        row = {"condition": condition, "n_seeds": len(mine), "profile": np.mean([s["profile"] for s in mine], 0).tolist()}
        for key in ("max_over_median", "mean_cosine", "isoscore", "accuracy"):
            values = [s[key] for s in mine if s.get(key) is not None]
            row[key] = float(np.mean(values)) if values else None
            row[f"{key}_sd"] = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
        row["rogue_share"] = {k: float(np.mean([s["rogue_share"][k] for s in mine])) for k in mine[0]["rogue_share"]}
        row["top_dimensions"] = mine[0]["top_dimensions"]
        row["top_cosine_dimensions"] = mine[0]["top_cosine_dimensions"]
        out.append(row)
    return out


def markdown_table(results: dict) -> str:
    """One row per condition: accuracy, IsoScore, mean cosine, max/median magnitude, rogue shares, top dimensions."""
    ks = list(results["summary"][0]["rogue_share"])
    lines = [(f"Sentence embeddings of {results['n_validation']} {results['task']} validation sentences "
              f"({results['model']}, {results['pooling']}-pooled last layer); fine-tuning: istar setup "
              f"'{results['fine_tune_setup']}', {results['n_train']} training sentences, {results['epochs']} "
              f"epoch(s), {len(results['seeds'])} seed(s)."), "",
             "| model | accuracy (%) | IsoScore | mean cosine | max / median mean abs. value | " +
             " | ".join(f"rogue share k={k}" for k in ks) + " | top dims (magnitude) | top dims (cosine) |",
             "|---|---|---|---|---|" + "---|" * len(ks) + "---|---|"]
    for r in results["summary"]:
        acc = "–" if r["accuracy"] is None else f"{100 * r['accuracy']:.1f}"
        lines.append(f"| {r['condition']} | {acc} | {r['isoscore']:.3f} | {r['mean_cosine']:.3f} | "
                     f"{r['max_over_median']:.1f} | " + " | ".join(f"{r['rogue_share'][k]:.3f}" for k in ks) +
                     f" | {', '.join(map(str, r['top_dimensions'][:3]))} | "
                     f"{', '.join(map(str, r['top_cosine_dimensions'][:3]))} |")
    return "\n".join(lines) + "\n"


def run(config, results_dir, ctx) -> dict:
    """Diagram of the pre-trained encoder, then one per fine-tuned (condition, seed); writes parts, results, table."""
    import torch

    from isotropy.experiments._finetune.config import sweep_specs
    from isotropy.experiments._finetune.train import train_model
    from isotropy.experiments._results import write_json, write_text

    results_dir = Path(results_dir)
    prepared = ctx.prepared
    istar = prepared["istar"]
    device = torch.device(ctx.device)
    top_k = [int(k) for k in config.top_k]
    specs = sweep_specs(istar)
    ctx.record(fine_tune=istar.model_dump(), data={"train": prepared["train_data"].source,
                                      "validation": prepared["valid_data"].source})
    states = []
    first = int(config.seeds[0])
    pretrained = ctx.read_part("states/pretrained.json", seed=first, keys=STATE_KEYS)
    if pretrained is None:
        ctx.log("pre-trained encoder: embedding the validation sentences")
        X = _embeddings(prepared["encoder"], prepared, istar, device)
        pretrained = {"condition": "pretrained", "accuracy": None, **profile_summary(X, top_k=top_k)}
        ctx.write_part("states/pretrained.json", pretrained, seed=first)
    states.append(pretrained)
    n_classes = len(prepared["train_data"].label_names)
    for k, spec in enumerate(specs, start=1):
        part = f"states/{spec.run_id}.json"
        state = ctx.read_part(part, seed=spec.seed, keys=STATE_KEYS)
        if state is None:
            ctx.log(f"[{k}/{len(specs)}] fine-tuning {spec.run_id} (istar's training)")
            record, model = train_model(spec, istar, prepared["encoder"], n_classes, prepared["train"],
                                        prepared["valid"], device=device, checkpoint=None, log=ctx.log)
            X = _embeddings(model.encoder, prepared, istar, device)
            state = {"condition": spec.condition, "accuracy": record["accuracy"], "run": record,
                     **profile_summary(X, top_k=top_k)}
            ctx.write_part(part, state, seed=spec.seed)
            ctx.log(f"[{k}/{len(specs)}] {spec.run_id}: accuracy {record['accuracy']:.3f}, IsoScore "
                    f"{state['isoscore']:.3f}, rogue share (k=1) {state['rogue_share'][str(top_k[0])]:.3f}")
        states.append(state)
    results = {"experiment": EXPERIMENT, "model": istar.model, "task": istar.task, "pooling": istar.pooling,
               "fine_tune_setup": config.fine_tune_setup, "epochs": istar.epochs,
               "n_train": len(prepared["train_data"]), "n_validation": len(prepared["valid_data"]),
               "seeds": list(config.seeds), "top_k": top_k, "summary": summarise(states)}
    write_json(results_dir / "results.json", results)
    write_text(results_dir / "results.md", markdown_table(results))
    return results


# --- claims: the rules are fixed in this code, not typed (written after first results; see contract.md) (Rudman & Eickhoff, Figure 1) --------------------

_PAPER = "Rudman & Eickhoff, ICLR 2024 (arXiv 2305.19358), Figure 1"
# I-STAR's sign moving IsoScore is Figure 5's statement (IsoScore* against λ), not Figure 1's
_PAPER_ISOSCORE = "Rudman & Eickhoff, ICLR 2024 (arXiv 2305.19358), Figure 5"
# the poster's text keeps Figure 1's caption (average activation diagrams on SST-2) but not its panels: which λ each
# diagram shows is not in the extracted text, so the paper's value of the two "sharper" claims says so
_SHOWN_PER_LAMBDA = "shown (activation diagrams; the panels per λ are not in the extracted poster text)"
_COMMAND = "isotropy run activation-diagrams --setup minilm --seeds 0,1,2 --data-dir DATA_DIR"
_ROGUE = Rule("holds if the largest mean magnitude is at least 5 times the median one (no randomness: the "
              "pre-trained encoder)", above=5.0, random=False)
_SHARPER = Rule("holds if largest / median mean magnitude is higher at the most negative λ than at the most positive "
                "λ, in every seed", above=0.0)
# The same paper statement measured a second way: the share of the mean cosine carried by the top-k dimensions
# (``rogue_share``). Two statistics of one statement, both reported, so a reader sees where they disagree.
_SHARPER_SHARE = Rule("holds if the top-k dimensions' share of the mean cosine is higher at the most negative λ than "
                      "at the most positive λ, in every seed", above=0.0)
_ISOSCORE = Rule("holds if IsoScore is lower at the most negative λ than at the most positive λ, in every seed",
                 below=0.0)


def share_k(results: dict) -> int:
    """The k of the rogue-share claim: the smallest of the run's ``top_k`` (the setups record 1, 3, 10).

    k = 1 is the share of the single largest dimension, the rogue-dimension share of Timkey & van Schijndel
    (2021) that ``isotropy.metrics.rogue`` computes; chosen by that definition, not by its verdict.
    """
    return min(int(k) for k in results["top_k"])


def _states(results_dir) -> list[dict]:
    """Every finished part (``states/*.json``): the pre-trained encoder and each (condition, seed)."""
    from isotropy.experiments._files import read_json

    return [read_json(p) for p in sorted((Path(results_dir) / "states").glob("*.json"))]


def claims(results: dict, results_dir) -> list:
    """Figure 1's claims: rogue dimensions in the pre-trained encoder; I-STAR's λ moves them and IsoScore."""
    from isotropy.experiments._claims import claim, command_of, not_run

    command = command_of(results_dir, _COMMAND)
    states = _states(results_dir)
    model = f"{results['model']} ({results['pooling']}-pooled last layer), {results['task']} validation"
    out = []
    pre = [s for s in states if s["condition"] == "pretrained"]
    text = "A few dimensions dominate the average activation diagram of pre-trained sentence embeddings."
    if pre:
        out.append(claim(id="rogue-pretrained", paper=_PAPER, claim=text, paper_value="shown (BERT, ALBERT, DistilBERT)",
                         model=model, statistic="largest / median mean absolute value per dimension",
                         values=[pre[0]["max_over_median"]], rule=_ROGUE, command=command))
    else:
        out.append(not_run(id="rogue-pretrained", paper=_PAPER, claim=text, paper_value="shown", model=model,
                           statistic="largest / median mean magnitude", rule=_ROGUE, command=command,
                           reason="no pre-trained state in the run"))
    lams = sorted({float(s["condition"].split(":")[1]) for s in states if s["condition"].startswith("istar:")})
    texts = {"sharper": ("Fine-tuning with I-STAR towards lower isotropy concentrates the activations in fewer "
                         "dimensions than towards higher isotropy."),
             "sharper-rogue-share": ("Fine-tuning with I-STAR towards lower isotropy concentrates the activations in "
                                     "fewer dimensions than towards higher isotropy."),
             "isoscore": "I-STAR moves isotropy in the direction of its sign: lower IsoScore with λ < 0 than with λ > 0."}
    if len(lams) < 2 or lams[0] >= 0 or lams[-1] <= 0:
        for key, rule in (("sharper", _SHARPER), ("sharper-rogue-share", _SHARPER_SHARE), ("isoscore", _ISOSCORE)):
            out.append(not_run(id=f"istar-{key}", paper=_PAPER_ISOSCORE if key == "isoscore" else _PAPER,
                               claim=texts[key], paper_value="shown", model=model,
                               statistic="difference between the most negative and the most positive λ", rule=rule,
                               command=command, reason="the run has no negative and positive I-STAR λ"))
        return out
    low, high = f"istar:{lams[0]:g}", f"istar:{lams[-1]:g}"
    by = {(s["condition"], s["seed"]): s for s in states}
    seeds = [s for s in results["seeds"] if (low, s) in by and (high, s) in by]
    k = share_k(results)
    between = f"at λ = {lams[0]:g} minus at λ = {lams[-1]:g}"
    for key, statistic, value, rule in (
            ("sharper", f"max_over_median {between}", lambda st: st["max_over_median"], _SHARPER),
            ("sharper-rogue-share", f"rogue share (top-{k} dimensions' share of the mean cosine) {between}",
             lambda st: st["rogue_share"][str(k)], _SHARPER_SHARE),
            ("isoscore", f"isoscore {between}", lambda st: st["isoscore"], _ISOSCORE)):
        values = [value(by[(low, s)]) - value(by[(high, s)]) for s in seeds]
        out.append(claim(id=f"istar-{key}", paper=_PAPER_ISOSCORE if key == "isoscore" else _PAPER, claim=texts[key],
                         paper_value="IsoScore* falls with λ" if key == "isoscore" else _SHOWN_PER_LAMBDA,
                         model=f"{model}, fine-tuned {results['n_train']} sentences, {results['epochs']} epoch(s)",
                         statistic=statistic, values=values, rule=rule, command=command))
    return out


def report(results: dict, results_dir) -> str:
    """Write ``claims.json`` beside the results; the command prints ``results.md``."""
    from isotropy.experiments._claims import write_claims

    write_claims(results_dir, claims(results, results_dir))
    path = Path(results_dir) / "results.md"
    return path.read_text(encoding="utf-8") if path.is_file() else ""
