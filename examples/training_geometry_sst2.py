"""An ordinary Hugging Face Trainer script with isotropy's geometry callback and I-STAR drop-in added.

Fine-tunes MiniLM (the packaged all-MiniLM-L6-v2) on a subsample of GLUE SST-2 with I-STAR weight
λ ∈ {−1, 0, +1} (0 = no regulariser), logs per-layer IsoScore* (and IsoScore, mean cosine, rogue
share) of a fixed probe of SST-2 dev sentences every ``--every`` steps to trainer_state.json and
TensorBoard, and draws per-layer IsoScore* over training steps for the three runs.

    python examples/training_geometry_sst2.py --out results/training-demo \
        --figure docs/figures/training/minilm_sst2_isoscore_star.png

CPU-sized (the defaults): 2,000 training sentences, 200 steps of batch 16 (1.6 epochs), max length
64, probe of 256 dev sentences, Σ_S of IsoScore* from 512 training sentences. The paper's setting
(the whole training set, 3 epochs, BERT-base, λ ∈ {−5 … 5}) runs with ``--train-size 0 --epochs 3
--model DIR`` on a GPU. Everything the run wrote (trainer_state.json, TensorBoard events,
summary.json with the resolved settings, seeds and package versions) is under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

# The options that say where the runs are and how to draw them; the others describe the runs, and --plot-only takes
# them from each run's own lambda_<λ>/settings.json (or an older summary.json), never from the defaults
_PLOT_OPTIONS = ("out", "figure", "plot_only", "lambdas")


def _parser(*, suppress=False):
    """The command line; ``suppress``: no defaults, so that a parse holds only the options given."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/training-demo"))
    parser.add_argument("--figure", type=Path, default=None, help="also save the figure here (.png; .svg beside)")
    parser.add_argument("--lambdas", nargs="+", default=["-1,0,1"],
                        help="the weights λ, space- or comma-separated (--lambdas -1 0 1, or --lambdas=-1,0,1 as "
                             "`isotropy run istar` takes them: a value after a space that starts with '-' and holds a "
                             "comma reads as an option)")
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--data-dir", default=None, help="folder holding glue_data/SST-2 (default: $ISOTROPY_DATA, else ./data)")
    parser.add_argument("--train-size", type=int, default=2000, help="0 = the whole training split")
    parser.add_argument("--probe-size", type=int, default=256)
    parser.add_argument("--sample-size", type=int, default=512, help="sentences whose covariance is Σ_S")
    parser.add_argument("--max-steps", type=int, default=200)
    parser.add_argument("--epochs", type=float, default=1.0, help="used when --max-steps is 0")
    parser.add_argument("--every", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--zeta", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, ...")
    parser.add_argument("--plot-only", action="store_true",
                        help="redraw the figure and summary.json from the runs under --out, with their own settings")
    if suppress:
        for action in parser._actions:
            action.default = argparse.SUPPRESS
    return parser


def given_options(argv=None) -> set:
    """The options given on the command line ``argv`` (their ``dest`` names), whatever their values."""
    return set(vars(_parser(suppress=True).parse_args(argv)))


def parse_args(argv=None):
    parser = _parser()
    args = parser.parse_args(argv)
    values = [value for token in args.lambdas for value in token.split(",") if value.strip()]
    try:
        args.lambdas = [float(value) for value in values]
    except ValueError:
        parser.error(f"--lambdas: expected numbers, space- or comma-separated (e.g. -1,0,1). Got {args.lambdas!r}.")
    if not args.lambdas:
        parser.error("--lambdas: expected at least one number (e.g. -1,0,1).")
    return args


def run_one(lam, args, tokenizer, train, probe, sample, dev):
    import torch
    from transformers import (
        AutoModelForSequenceClassification,
        DataCollatorWithPadding,
        Trainer,
        TrainingArguments,
    )

    from isotropy.models.encoders import resolve_model
    from isotropy.training import HFGeometryCallback, HFRegulariser

    out = args.out / f"lambda_{lam:g}"
    torch.manual_seed(args.seed)
    model = AutoModelForSequenceClassification.from_pretrained(resolve_model(args.model), num_labels=2)
    training_args = TrainingArguments(
        output_dir=str(out), per_device_train_batch_size=args.batch_size, per_device_eval_batch_size=128,
        learning_rate=args.lr, max_steps=args.max_steps or -1, num_train_epochs=args.epochs,
        warmup_steps=max(1, round(0.1 * args.max_steps)) if args.max_steps else 0,
        weight_decay=0.01, logging_steps=args.every, save_strategy="no", report_to=["tensorboard"],
        train_sampling_strategy="group_by_length",  # batches of similar lengths: little padding
        use_cpu=args.device == "cpu", seed=args.seed, disable_tqdm=True)

    # --- the two lines this toolkit adds to an existing Trainer script -------------------------
    geometry = HFGeometryCallback(probe, every_n_steps=args.every, layers="all", pooling="mean",
                                  shrinkage_sample=sample, zeta=args.zeta)
    istar = HFRegulariser("istar", weight=lam, zeta=args.zeta, shrinkage_sample=sample) if lam else None
    # -------------------------------------------------------------------------------------------

    def accuracy(prediction):
        return {"accuracy": float((prediction.predictions.argmax(-1) == prediction.label_ids).mean())}

    trainer = Trainer(model=model, args=training_args, train_dataset=train, eval_dataset=dev,
                      processing_class=tokenizer, data_collator=DataCollatorWithPadding(tokenizer),
                      compute_metrics=accuracy, compute_loss_func=istar,
                      callbacks=[geometry] + ([istar] if istar else []))
    if args.device != "cpu":
        trainer.model.to(args.device)
    trainer.train()
    metrics = trainer.evaluate()  # dev accuracy (geometry was measured at this step already)
    trainer.state.save_to_json(str(out / "trainer_state.json"))
    return {"lambda": lam, "dev_accuracy": metrics["eval_accuracy"], "steps": trainer.state.global_step,
            "trainer_state": str(out / "trainer_state.json"), "run_dir": str(out)}


# The metrics whose first and last values per layer summary.json keeps (the callback's defaults).
_SUMMARISED = ("isoscore_star", "isoscore", "cosine_similarity_mean", "rogue_dimension_share")


def curves(record, metric="isoscore_star"):
    """{layer: (steps, values)} of ``geometry/<metric>/layer_<i>``, read by :func:`isotropy.training.logs.read_geometry_log`.

    From trainer_state.json; a run that was stopped early has none yet, and its TensorBoard
    events (written as the run goes) give the curves up to where it stopped.
    """
    from isotropy.training.logs import read_geometry_log

    state = record.get("trainer_state")
    frame = read_geometry_log(state if state and Path(state).is_file() else record["run_dir"])
    if len(frame) and metric not in set(frame["metric"]):  # a name the callback does not log: say so, never plot nothing
        raise SystemExit(f"error: the geometry log of {record['run_dir']} has no metric {metric!r}; it holds "
                         f"{sorted(set(frame['metric']))}.")
    part = frame[frame["metric"] == metric]
    return {int(layer): (rows["step"].to_numpy(), rows["value"].to_numpy()) for layer, rows in part.groupby("layer")}


def plot(records, args):
    """Row 1: per-layer IsoScore* over training steps, one panel per λ; row 2: mean cosine similarity."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = (("isoscore_star", f"IsoScore* (ζ = {args.zeta:g})"), ("cosine_similarity_mean", "mean cosine similarity"))
    fig, axes = plt.subplots(len(rows), len(records), figsize=(4.2 * len(records), 6.2), sharex=True, sharey="row",
                             squeeze=False)
    cmap = plt.get_cmap("viridis")
    for column, record in enumerate(records):
        last = 0
        for row, (metric, label) in enumerate(rows):
            ax = axes[row][column]
            layers = curves(record, metric)
            for k, (layer, (steps, values)) in enumerate(layers.items()):
                ax.plot(steps, values, marker="o", ms=2.5, lw=1.2, color=cmap(k / max(1, len(layers) - 1)),
                        label=f"layer {layer}")
                last = max(last, int(steps[-1]))
            ax.grid(alpha=0.3)
            if column == 0:
                ax.set_ylabel(label)
            if row == len(rows) - 1:
                ax.set_xlabel("training step")
        lam = record["lambda"]
        name = "no regulariser (λ = 0)" if lam == 0 else f"I-STAR λ = {lam:+g}"
        detail = (f"dev accuracy {record['dev_accuracy']:.3f}" if record.get("dev_accuracy") is not None
                  else f"stopped at step {last}, not evaluated")
        axes[0][column].set_title(f"{name}\n{detail}", fontsize=10)
    axes[0][-1].legend(fontsize=8, loc="best")
    fig.suptitle(f"MiniLM fine-tuned on SST-2 ({args.train_size or 'all'} training sentences, batch {args.batch_size}): "
                 f"geometry of {args.probe_size} dev sentences per layer", fontsize=10)
    fig.tight_layout()
    return fig


def _saved_settings(out: Path, lam: float):
    """``(settings, command)`` of the run of ``lam`` under ``out``: its settings.json, written when the run starts,
    else the summary.json of an earlier version of this script; ``(None, None)`` when neither is there."""
    for path in (out / f"lambda_{lam:g}" / "settings.json", out / "summary.json"):
        if path.is_file():
            saved = json.loads(path.read_text())
            return saved["settings"], saved.get("command")
    return None, None


def _settings(args) -> dict:
    """The settings of a run as written to settings.json and summary.json (paths as text)."""
    return {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items() if k != "plot_only"}


def _as_lambda(folder: Path):
    try:
        return float(folder.name[len("lambda_"):])
    except ValueError:
        return None


def with_run_settings(args, given: set):
    """``args`` for --plot-only: the runs' own settings (the figure's title and summary.json then describe the runs,
    not this command's defaults), every λ run under --out unless --lambdas is given, and the runs' command (a list
    when they ran in several processes; None if unknown).

    Refused, each in one line naming the option: a λ with no run under --out (nothing to draw), runs whose settings
    differ (one title cannot describe them), an option given here unlike the runs' (the figure would mislabel them).
    """
    found = sorted(lam for lam in (_as_lambda(p) for p in args.out.glob("lambda_*") if p.is_dir()) if lam is not None)
    if not found:
        raise SystemExit(f"error: --plot-only: no runs under --out {args.out} (folders lambda_<λ>, written by this "
                         f"script without --plot-only)")
    if "lambdas" not in given:
        args.lambdas = found
    missing = [lam for lam in args.lambdas if lam not in found]
    if missing:
        raise SystemExit(f"error: --lambdas: no run of λ = {', '.join(f'{lam:g}' for lam in missing)} under "
                         f"{args.out}; it holds the runs of λ = {', '.join(f'{lam:g}' for lam in found)}")
    ran, commands = {}, []  # setting: (value, the λ whose run had it first)
    for lam in args.lambdas:  # each λ may have run in a process of its own (the docs' figure did)
        settings, command = _saved_settings(args.out, lam)
        if command is not None and command not in commands:
            commands.append(command)
        for name, value in (settings or {}).items():
            if name in _PLOT_OPTIONS or not hasattr(args, name):
                continue
            first = ran.setdefault(name, (value, lam))
            if str(first[0]) != str(value):
                raise SystemExit(f"error: --plot-only: the runs of λ = {first[1]:g} and λ = {lam:g} under {args.out} "
                                 f"ran with --{name.replace('_', '-')} {first[0]} and {value}; draw them apart "
                                 f"(--lambdas)")
    for name, (value, _) in ran.items():
        if name in given and str(getattr(args, name)) != str(value):
            raise SystemExit(f"error: --{name.replace('_', '-')} {getattr(args, name)}: the runs under {args.out} ran "
                             f"with {value}; --plot-only draws them as they ran (leave the option out)")
        setattr(args, name, value)
    command = None if not commands else commands[0] if len(commands) == 1 else commands
    return args, command


def main(argv=None):
    args = parse_args(argv)
    given = given_options(argv if argv is not None else sys.argv[1:])
    this_command = " ".join(["python", *sys.argv])
    runs_command = this_command
    if args.plot_only:
        args, runs_command = with_run_settings(args, given)
    import torch
    from transformers import AutoTokenizer

    from isotropy._utils.atomic import atomic_write
    from isotropy._utils.versions import package_versions
    from isotropy.datasets.glue import load_glue_task
    from isotropy.models.encoders import resolve_model

    records = []
    if not args.plot_only:
        torch.manual_seed(args.seed)
        tokenizer = AutoTokenizer.from_pretrained(resolve_model(args.model))
        try:
            train_all = load_glue_task("sst2", "train", data_dir=args.data_dir)
            dev_all = load_glue_task("sst2", "dev", data_dir=args.data_dir)
        except (OSError, ValueError) as exc:  # no SST-2 where it was looked for: one line, not a traceback
            raise SystemExit(f"error: {' '.join(str(exc).split())}")
        rng = np.random.default_rng(args.seed)
        n = len(train_all.text_a)
        order = rng.permutation(n)
        train_rows = order[:args.train_size] if args.train_size else order
        sample_rows = order[-args.sample_size:]  # disjoint from the training subsample when it is smaller
        probe_rows = np.random.default_rng([args.seed, 1]).choice(len(dev_all.text_a), args.probe_size, replace=False)

        def encode(texts, labels):
            enc = tokenizer(list(texts), truncation=True, max_length=64)
            return [{"input_ids": i, "attention_mask": m, "labels": int(y)}
                    for i, m, y in zip(enc["input_ids"], enc["attention_mask"], labels)]

        train = encode([train_all.text_a[i] for i in train_rows], train_all.labels[train_rows])
        dev = encode(dev_all.text_a, dev_all.labels)
        probe = [dev_all.text_a[i] for i in probe_rows]
        sample = [train_all.text_a[i] for i in sample_rows]
        args.out.mkdir(parents=True, exist_ok=True)
        for lam in args.lambdas:
            done = args.out / f"lambda_{lam:g}" / "record.json"
            done.parent.mkdir(parents=True, exist_ok=True)
            with atomic_write(done.parent / "settings.json") as handle:  # first: --plot-only draws a stopped run too
                json.dump({"settings": _settings(args), "command": this_command}, handle, indent=2)
            records.append(run_one(lam, args, tokenizer, train, probe, sample, dev))
            with atomic_write(done) as handle:
                json.dump(records[-1], handle, indent=2)
    else:  # finished runs have a record; a stopped one is read from its TensorBoard events
        for lam in args.lambdas:
            done = args.out / f"lambda_{lam:g}" / "record.json"
            records.append(json.loads(done.read_text()) if done.is_file() else
                           {"lambda": lam, "dev_accuracy": None, "steps": None, "run_dir": str(done.parent)})
    # the first and last logged value of each metric per layer, in the summary itself: the docs' table reads them from
    # the committed summary.json, without the runs' trainer_state.json
    runs = [{**record, "geometry": {metric: {str(layer): [float(v[0]), float(v[-1])]
                                             for layer, (_, v) in curves(record, metric).items()}
                                    for metric in _SUMMARISED}} for record in records]
    summary = {"settings": _settings(args), "runs": runs, "seeds": {"torch": args.seed, "data": args.seed},
               "command": runs_command, "versions": package_versions(["torchmetrics"])}
    if args.plot_only:  # the runs' command above (None: not known, from an output of an older script), and this one
        summary["plot_command"] = this_command
    with atomic_write(args.out / "summary.json") as handle:
        json.dump(summary, handle, indent=2)
    fig = plot(records, args)
    targets = [args.out / "isoscore_star.png"] + ([args.figure] if args.figure else [])
    for target in targets:
        target.parent.mkdir(parents=True, exist_ok=True)
        for path in (target, target.with_suffix(".svg")):
            with atomic_write(path, "wb") as handle:
                fig.savefig(handle, format=path.suffix[1:], dpi=130, bbox_inches="tight")
    for record in runs:
        for metric, values in record["geometry"].items():
            shown = {int(layer): (round(first, 4), round(last, 4)) for layer, (first, last) in values.items()}
            print(f"lambda={record['lambda']:+g}  {metric} first->last per layer: {shown}")
        print(f"lambda={record['lambda']:+g}  dev accuracy={record['dev_accuracy']}  steps={record['steps']}")


if __name__ == "__main__":
    main()
