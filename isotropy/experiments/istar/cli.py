"""``isotropy run istar``: the I-STAR / CosReg fine-tuning sweep (light at import; torch loads in the callback)."""

from __future__ import annotations

from pathlib import Path

import click

from isotropy.experiments._cli import parse_set_options

__all__ = ["command"]


def _int_list(option: str, text: str | None):
    if text is None:
        return None
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers such as 0,1,2. Got {text!r} instead.",
                                 param_hint=option) from None


def _float_list(option: str, text: str | None):
    if text is None:
        return None
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated numbers such as -5,-1,1. Got {text!r} instead.",
                                 param_hint=option) from None


@click.command(name="istar")
@click.option("--setup", default="sst2-cpu", show_default=True,
              help="Packaged config (sst2-cpu, sst2, cola, mrpc, rte) or a path to a .yaml file.")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where results go [default: results/istar/<setup>].")
@click.option("--device", default=None, help="Torch device, e.g. cpu or cuda [default: the config's, cpu].")
@click.option("--data-dir", default=None, help="Folder holding glue_data/ [default: $ISOTROPY_DATA, else ./data].")
@click.option("--model", default=None, help="Packaged model name or a local transformers model directory.")
@click.option("--seeds", default=None, help="Comma-separated seeds, e.g. 0,1,2.")
@click.option("--lambdas", default=None, help="Comma-separated I-STAR weights, e.g. -5,-1,1,5.")
@click.option("--train-size", type=int, default=None, help="Training subsample size.")
@click.option("--epochs", type=int, default=None)
@click.option("--resume", is_flag=True, help="Continue an interrupted sweep in --results-dir.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Override any config value (dotted keys, YAML values; null allowed), e.g. --set istar.level=sentence.")
@click.option("--no-plot", is_flag=True, help="Skip drawing the figures.")
@click.option("--quiet", is_flag=True, help="No per-run progress lines.")
def command(setup, results_dir, device, data_dir, model, seeds, lambdas, train_size, epochs, resume, sets,
            no_plot, quiet):
    """Fine-tune an encoder with I-STAR (λ sweep), CosReg and no regularisation over seeds.

    Records per run the validation metric and IsoScore*, IsoScore and TwoNN intrinsic dimension
    of the validation sentence representations; writes runs/*.json, results.json, results.md,
    run.json and the figures (performance vs IsoScore*, intrinsic dimension per λ).
    """
    from isotropy.experiments._results import load_config
    from isotropy.experiments.istar.run import EXPERIMENT, run

    overrides = {"data_dir": data_dir, "model": model, "seeds": _int_list("--seeds", seeds),
                 "lambdas": _float_list("--lambdas", lambdas), "train_size": train_size, "epochs": epochs}
    config = load_config(EXPERIMENT, setup, overrides)
    for key, value in parse_set_options(sets, example="istar.zeta=0.5").items():  # applied here so that KEY=null works (e.g. train_size=null)
        node, parts = config, key.split(".")
        for part in parts[:-1]:
            if not isinstance(node.get(part), dict):
                raise click.BadParameter(f"{key!r} names no nested option of the config.", param_hint="--set")
            node = node[part]
        if parts[-1] not in node:
            raise click.BadParameter(f"unknown config key {key!r}; expected one of {sorted(node)}.", param_hint="--set")
        node[parts[-1]] = value
    name = Path(setup).stem if setup.endswith((".yaml", ".yml")) else setup
    results_dir = results_dir or Path("results") / EXPERIMENT / name
    log = None if quiet else (lambda message: click.echo(message, err=True))
    results = run(config, results_dir, resume=resume, device=device, log=log)
    click.echo((results_dir / "results.md").read_text(), nl=False)
    if not no_plot:
        from isotropy.experiments.istar.plot import plot_results

        for path in plot_results(results_dir):
            click.echo(str(path))
    click.echo(f"Results in {results_dir} ({results['seconds_this_invocation']:.0f} s)")
