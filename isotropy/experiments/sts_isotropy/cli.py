"""``isotropy run sts-isotropy``: config-file driven; every value overridable on the command line.

Kept light at import: numpy, torch, the encoders and the transforms are imported inside the callback.
"""

from __future__ import annotations

import click

DATASETS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSB", "SICK")


def _csv_list(ctx, param, value):
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    for item in items:
        if param.name == "datasets" and item not in DATASETS:
            raise click.BadParameter(f"expected a comma-separated list from {', '.join(DATASETS)}. "
                                     f"Got {item!r} instead.")
    if not items:
        raise click.BadParameter(f"expected a comma-separated list. Got {value!r} instead.")
    return items


@click.command(name="sts-isotropy")
@click.option("--setup", default="paper", show_default=True,
              help="Packaged config (paper: fit on the evaluated sentences; separate-corpus: fit on STS-B train) "
                   "or a path to a .yaml file.")
@click.option("--model", default=None, help="all-MiniLM-L6-v2 (packaged), or a local model directory.")
@click.option("--pooling", type=click.Choice(["sentence-transformers", "mean"]), default=None,
              help="sentence-transformers pipeline, or the attention-masked mean of --layer of any transformers model.")
@click.option("--layer", type=int, default=None, help="Hidden layer for --pooling mean (-1 = last).")
@click.option("--fit-on", "fit_on", default=None,
              help="What the transforms are fitted on: self (each evaluated data set), stsb-train, wikitext-2, "
                   "or a text file with one sentence a line.")
@click.option("--fit-max-sentences", "fit_max_sentences", type=int, default=None,
              help="Separate corpus: at most this many sentences (seeded sample).")
@click.option("--datasets", callback=_csv_list, default=None, help=f"Comma-separated, from {', '.join(DATASETS)}.")
@click.option("--n-clusters", "n_clusters", type=int, default=None, help="Clusters of the cluster-based rows.")
@click.option("--n-components", "n_components", type=int, default=None, help="Directions removed per cluster.")
@click.option("--limit", type=int, default=None, help="At most this many pairs per data set (seeded sample).")
@click.option("--no-sweep", is_flag=True, help="Skip the sweep over n_clusters and n_components.")
@click.option("--seed", type=int, default=None)
@click.option("--device", default=None, help="Torch device for encoding (default: CUDA when present, else CPU).")
@click.option("--data-dir", type=click.Path(file_okay=False), default=None,
              help="Folder holding senteval/STS, SICK and wikitext-2. Default: $ISOTROPY_DATA, else ./data.")
@click.option("--results-dir", type=click.Path(file_okay=False), default=None,
              help="Where to write results (default results/sts-isotropy/fit-<fit_on>).")
@click.option("--quiet", is_flag=True, help="No progress output.")
def command(setup, model, pooling, layer, fit_on, fit_max_sentences, datasets, n_clusters, n_components, limit, no_sweep, seed, device,
            data_dir, results_dir, quiet):
    """Isotropy-enhancing transforms on STS 2012-2016, STS-B and SICK (Rajaee & Pilehvar, 2021).

    Rows: Baseline, Mean, Mean + PCA (All-But-The-Top), K-means + Mean, GMM + Mean + PCA,
    K-means + Mean + PCA, Whitening. Columns per data set: Pearson, Spearman, I(W), IsoScore.
    Writes results.json, results.md, sweep figures and run.json to the results directory.
    """
    import time
    from pathlib import Path

    from isotropy.experiments._results import load_config
    from isotropy.experiments.sts_isotropy.run import default_results_dir, run

    overrides = {"model": model, "pooling": pooling, "layer": layer, "fit_on": fit_on, "fit_max_sentences": fit_max_sentences,
                 "datasets": datasets,
                 "n_clusters": n_clusters, "n_components": n_components, "limit": limit, "seed": seed}
    config = load_config("sts-isotropy", setup, overrides)
    if no_sweep:
        config["sweep"] = {}
    out = Path(results_dir) if results_dir is not None else default_results_dir(config)
    start = time.perf_counter()
    results = run(config, results_dir=out, data_dir=data_dir, device=device, progress=not quiet)
    click.echo(f"Wrote {out / 'results.md'} ({time.perf_counter() - start:.0f} s)")
    for path in results.get("figures", []):
        click.echo(path)
