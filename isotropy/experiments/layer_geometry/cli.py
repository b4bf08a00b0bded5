"""``isotropy run layer-geometry`` (light at import; torch and transformers load in the callback)."""

from __future__ import annotations

from pathlib import Path

import click

from isotropy.experiments._cli import parse_set_options

__all__ = ["command"]


@click.command(name="layer-geometry")
@click.option("--config", "setup", default="minilm-wikitext2", show_default=True,
              help="Packaged config (minilm-wikitext2, bert-base-wikitext2, gpt2-wikitext2, distilbert-ptb) "
                   "or a path to a .yaml file.")
@click.option("--model", default=None,
              help="all-MiniLM-L6-v2 (packaged), a local transformers model directory, or a hub name (online).")
@click.option("--corpus", default=None, help="wikitext-2, ptb, or a path to a plain-text file.")
@click.option("--split", type=click.Choice(["validation", "test", "train"]), default=None,
              help="Split of wikitext-2 / ptb [default: the config's, validation].")
@click.option("--layers", default=None, help="'all' or comma-separated hidden-state indices, e.g. 0,3,6.")
@click.option("--pooling", type=click.Choice(["first", "mean"]), default=None,
              help="A word is its first sub-word piece or the mean of its pieces.")
@click.option("--max-tokens", type=int, default=None, help="Total word tokens kept.")
@click.option("--max-per-type", type=int, default=None, help="Instances kept per word type.")
@click.option("--pca-layers", default=None, help="Comma-separated layers drawn in the PCA projections, e.g. 3,6.")
@click.option("--threads", type=int, default=None,
              help="BLAS/OpenMP threads for the metrics (1 avoids oversubscription on a busy machine).")
@click.option("--device", default=None, help="Torch device, e.g. cpu or cuda [default: CUDA when available].")
@click.option("--data-dir", default=None,
              help="Folder holding wikitext-2/ and ptb/ [default: $ISOTROPY_DATA, else ./data].")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where results go [default: results/layer-geometry/<config>].")
@click.option("--seed", type=int, default=None)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Override any config value (dotted keys, YAML values), e.g. --set static=null.")
@click.option("--no-plot", is_flag=True, help="Skip drawing the figures.")
@click.option("--quiet", is_flag=True, help="No progress bar or per-layer lines.")
def command(setup, model, corpus, split, layers, pooling, max_tokens, max_per_type, pca_layers, threads, device, data_dir,
            results_dir, seed, sets, no_plot, quiet):
    """Geometry of a transformer's contextual embeddings, layer by layer (Cai et al. 2021).

    Extracts one vector per corpus word at every selected hidden layer, then reports per layer
    S_inter and S_intra, the same after per-cluster centring (K-means, k by silhouette), IsoScore
    and the mean local intrinsic dimension (MLE, 100 neighbours, euclidean and cosine), with a
    static GloVe row for comparison. Writes metrics.md, metrics.json, run.json and the figures.
    """
    from isotropy.experiments._results import load_config
    from isotropy.experiments.layer_geometry.run import EXPERIMENT, run

    for name, value in (("--max-tokens", max_tokens), ("--max-per-type", max_per_type), ("--threads", threads)):
        if value is not None and value < 1:
            raise click.BadParameter(f"expected a positive integer. Got {value} instead.", param_hint=name)
    overrides = {"model": model, "corpus": corpus, "split": split, "layers": layers, "pooling": pooling,
                 "max_tokens": max_tokens, "max_per_type": max_per_type, "pca_layers": pca_layers, "threads": threads,
                 "data_dir": data_dir, "seed": seed}
    config = load_config(EXPERIMENT, setup, overrides,
                         sets=parse_set_options(sets, example="metrics.n_neighbors=50"))
    name = Path(setup).stem if setup.endswith((".yaml", ".yml")) else setup
    results_dir = results_dir or Path("results") / EXPERIMENT / name
    log = None if quiet else (lambda message: click.echo(message, err=True))
    results = run(config, results_dir, device=device, log=log, show_progress=not quiet)
    click.echo((results_dir / "metrics.md").read_text(), nl=False)
    if not no_plot:
        from isotropy.experiments.layer_geometry.plot import plot_results

        for path in plot_results(results_dir):
            click.echo(str(path))
    click.echo(f"Results in {results_dir} ({results['timings']['total_s']:.0f} s)")
