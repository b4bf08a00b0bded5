"""``isotropy run classifier-geometry``: one setup (or ``--all``), config-file driven.

Kept light at import: torch, the data loaders and the encoders are imported inside the callback.
"""

from __future__ import annotations

import click

SETUPS = ("polarity", "snli", "pos", "supersense", "glue", "demo", "table")
ALL_SETUPS = ("polarity", "snli", "pos", "supersense", "glue")


def _csv_list(ctx, param, value):
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise click.BadParameter(f"expected a comma-separated list. Got {value!r} instead.")
    return items


def _seed_list(ctx, param, value):
    items = _csv_list(ctx, param, value)
    if items is None:
        return None
    try:
        return [int(v) for v in items]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated non-negative ints such as 0,1,2,3,4. Got {value!r} instead.") from None


@click.command(name="classifier-geometry")
@click.option("--setup", "setup", default=None,
              help=f"One of {', '.join(SETUPS)}, or a path to a .yaml config file.")
@click.option("--all", "run_all", is_flag=True, help=f"Run {', '.join(ALL_SETUPS)} one after the other.")
@click.option("--model", default=None, help="Sentence-transformers model (name or directory) or word vectors "
              "(glove-6b-50d, or a word2vec/GloVe file).")
@click.option("--data-dir", type=click.Path(file_okay=False), default=None,
              help="Folder holding the data sets (rt-polaritydata, snli_1.0, glue_data, nltk_data). "
                   "Default: $ISOTROPY_DATA, else ./data.")
@click.option("--data-path", default=None, help="A specific data file or folder (overrides --data-dir for the data set).")
@click.option("--updates", type=int, default=None, help="Number of full-batch Adam updates.")
@click.option("--lr", type=float, default=None, help="Adam learning rate.")
@click.option("--seeds", callback=_seed_list, default=None, help="Comma-separated seeds, e.g. 0,1,2,3,4.")
@click.option("--metric-interval", type=int, default=None, help="Record the metrics every N updates.")
@click.option("--sample-size", type=int, default=None,
              help="Compute the metrics on a fresh random sample of this many items when there are more.")
@click.option("--device", default=None, help="Torch device for embeddings, optimisation and metrics (default cpu).")
@click.option("--threads", type=int, default=None,
              help="Torch CPU threads (default: torch's choice; 1 is faster on a busy shared machine).")
@click.option("--results-dir", type=click.Path(file_okay=False), default=None,
              help="Where to write results (default results/classifier-geometry/<setup>).")
@click.option("--resume", is_flag=True, help="Keep the finished seeds in the results directory and run the rest.")
@click.option("--tasks", callback=_csv_list, default=None, help="GLUE tasks, e.g. cola,mrpc,rte,sst2.")
@click.option("--models", callback=_csv_list, default=None, help="GLUE: comma-separated sentence-transformers models.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def command(setup, run_all, model, data_dir, data_path, updates, lr, seeds, metric_interval, sample_size, device,
            threads, results_dir, resume, tasks, models, quiet):
    """Optimise embeddings under a linear classifier; record IsoScore and silhouette (Mickus et al., 2024).

    Writes per-update metrics, a summary, the IsoScore-silhouette correlation table and figures
    to the results directory and prints where they are.
    """
    from pathlib import Path

    from isotropy.experiments._results import available_setups, load_config

    if run_all == (setup is not None):
        raise click.UsageError("Give exactly one of --setup NAME or --all.")
    names = list(ALL_SETUPS) if run_all else [setup]
    for name in names:
        if not name.endswith((".yaml", ".yml")) and name not in available_setups("classifier-geometry"):
            raise click.BadParameter(f"expected one of {', '.join(available_setups('classifier-geometry'))} or a "
                                     f"path to a .yaml config file. Got {name!r} instead.", param_hint="'--setup'")
    overrides = {"model": model, "data_path": data_path, "updates": updates, "lr": lr, "seeds": seeds,
                 "metric_interval": metric_interval, "sample_size": sample_size, "device": device, "threads": threads, "tasks": tasks,
                 "models": models}
    from isotropy.experiments.classifier_geometry.run import default_results_dir, run

    failures = []
    for name in names:
        config = load_config("classifier-geometry", name, overrides)
        out_dir = Path(results_dir) / config["setup"] if (results_dir and run_all) else results_dir
        try:
            result = run(config, results_dir=out_dir or default_results_dir(config), resume=resume,
                         data_dir=data_dir, show_progress=not quiet, echo=click.echo)
        except (FileNotFoundError, ImportError) as exc:
            if not run_all:
                raise
            click.echo(f"Skipped {name}: {' '.join(str(exc).split())}", err=True)
            failures.append(name)
            continue
        where = Path(result["results_dir"])
        click.echo(f"Results of {config['setup']} in {where}/")
        click.echo(f"  table:   {where / 'correlations.md'}")
        figures = sorted(p for p in result["paths"] if Path(p).suffix == ".png")
        for path in figures:
            click.echo(f"  figure:  {path}")
    if failures:
        raise FileNotFoundError(f"setups not run for lack of data: {', '.join(failures)} (see the messages above).")
