"""What ``isotropy measure`` reports, shared by the in-memory command and the dask path.

The metric names (:data:`METRICS`, read from :mod:`isotropy.metrics.table`), the input checks, the per-metric run with its timing and
failure handling, the printed table and the JSON record live here; :mod:`isotropy.measure.command`
(the click command) and :mod:`isotropy.measure.distributed` (sharded data, a dask cluster) both
import this module, never each other. Kept light at import (``isotropy --help`` imports the
command): click, the standard library and the metric table only; numpy, the readers and the metric modules are
imported inside the functions.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import os
import sys
import time
import warnings

import click

from isotropy._utils.errors import Terminated
from isotropy.measure._notes import note, notes_silenced
from isotropy.metrics import table as _table

__all__ = ["CLUSTER", "LABEL_FREE", "METRICS", "QUADRATIC", "InputError", "report", "shrinkage_covariance"]


# the one metric table (isotropy.metrics.table): names, functions, families, labels
METRICS = _table.METRICS


LABEL_FREE = _table.metric_names(needs_labels=False)  # every label-free metric (the default table: _table.default_metric_names)


CLUSTER = _table.metric_names(needs_labels=True)


class InputError(click.ClickException):
    """Bad input data: printed as one line ``Error: ...``, exit status 2."""

    exit_code = 2


# O(n²) metrics: the cost note before they start (see _cost_note)
QUADRATIC = {name for name, spec in METRICS.items() if spec.pairwise}


_COST_NOTE_SECONDS = 10.0  # estimates below this are not worth a note


def report(data, embeddings, *, metric_names, json_path, key, labels_path, sample_size, random_state, distance,
           progress, header_extra="", record_extra=None, shrinkage_sample=None, default_table=False, n_neighbors=None,
           zeta=None, averaging=None, label_column=None, digest_inputs=True):
    """Measure ``data`` metric by metric: print each line as it finishes, write the JSON, set the exit status.

    Shared by the in-memory path and the dask path (:mod:`isotropy.measure.distributed`), which
    passes a dask array as ``data.X``, its cluster description in ``header_extra`` and the
    scheduler, workers, memory_limit and chunking in ``record_extra``. ``default_table``: no
    ``--metrics`` was given (the note on a left-out IsoScore* is then printed). ``n_neighbors``: ``k`` of
    ``mle_dimension`` (``--n-neighbors``; ``None``: its default); ``zeta``: ζ of ``isoscore_star`` (``--zeta``;
    ``None``: its default); ``averaging``: how ``mle_dimension`` pools (``--averaging``; ``None``: its default).
    """
    if "mle_dimension" in metric_names and not _mle_may_be_left_out(default_table=default_table,
                                                                   n_neighbors=n_neighbors, averaging=averaging):
        # MLE asked for (by name, or with --n-neighbors or --averaging) with a k the rows cannot give, the default k
        # as a given one: refused before any metric runs (a default table leaves it out instead: _mle_left_out)
        from isotropy._utils.validation import check_n_neighbors

        try:
            check_n_neighbors(_mle_neighbours(n_neighbors), data.n_samples, caller="mle_dimension", low=2)
        except ValueError as exc:
            raise InputError(option_names(str(exc), n_neighbors_given=n_neighbors is not None)) from None
    to_stdout = json_path == "-"
    from isotropy.measure._json_output import stream_fd

    # --json -: stdout carries the JSON alone; a JSON elsewhere (a file, stderr) is still written when the table's
    # reader has gone
    echo = _Echo(err=to_stdout, keep_going=json_path is not None and stream_fd(json_path) != 1)
    # a file name with a line break or another control character: escaped, not printed raw into the table
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(embeddings))
    header = f"{shown}: {data.n_samples} samples x {data.n_features} features{data.where}"
    if data.n_clusters is not None:
        header += f", {data.n_clusters} clusters"
    if distance != "euclidean":
        header += f", {distance} distance"
    echo(header + header_extra)
    star_left_out = _isoscore_star_note(metric_names, has_shrinkage=data.shrinkage_cov is not None,
                                        default_table=default_table)
    singular = None  # the warning of a Σ_S of too few rows, said now and kept with the value (the JSON's warnings)
    if "isoscore_star" in metric_names and data.shrinkage_rows is not None:
        few = _table.shrinkage_span_warning(data.shrinkage_rows, data.n_features)
        if few is not None:  # a Σ_S of all the rows of EMBEDDINGS: more rows can only come from a file
            more = ("; or give a FILE of more rows" if data.shrinkage_rows >= data.n_rows else "")
            singular = f"{few}{more} (--shrinkage-sample)."
            click.echo(f"Warning: isoscore_star: {singular}", err=True)
    too_few = _mle_left_out(metric_names, data.n_samples, default_table=default_table, n_neighbors=n_neighbors,
                           averaging=averaging, X=data.X, distance=distance)
    if too_few is not None:
        note(f"{too_few}.")
        metric_names = [name for name in metric_names if name != "mle_dimension"]
    if distance == "cosine" and _COSINE_HALVES.intersection(metric_names):
        note(f"{', '.join(sorted(_COSINE_HALVES.intersection(metric_names)))}: {_COSINE_NOTE}")
    euclidean_only = _euclidean_only(metric_names) if distance != "euclidean" else []
    if euclidean_only:  # the table would otherwise show their euclidean values under the header's "cosine distance"
        note(f"{', '.join(euclidean_only)}: {_EUCLIDEAN_NOTE}")
    rows = _TableRows(metric_names)
    echo(rows.head())

    results = _Results()
    # a default table's MLE on rows of too few distinct points for its default k: left out, as on too few rows
    leave_out = _mle_may_be_left_out(default_table=default_table, n_neighbors=n_neighbors, averaging=averaging)
    try:
        for name, outcome in _measure(metric_names, data, distance=distance, random_state=random_state,
                                      progress=progress, n_neighbors=n_neighbors, zeta=zeta, averaging=averaging,
                                      leave_out=leave_out):
            if outcome.left_out is not None:
                note(f"{outcome.left_out}.")
                results.left_out[name] = outcome.left_out
                continue
            results.add(name, outcome)
            echo(rows.row(name, outcome))
    except KeyboardInterrupt as stop:  # Ctrl-C, or SIGTERM (Terminated): the finished metrics are kept, then 130 / 143
        results.interrupted = 143 if isinstance(stop, Terminated) else 130
        kept = "" if json_path is None else "; the JSON holds the metrics that finished"  # else the table's rows
        click.echo(f"Error: {'terminated' if results.interrupted == 143 else 'interrupted'}{kept}.", err=True)
    for name in _COSINE_HALVES.intersection(results.values) if distance == "cosine" else ():  # kept with the value
        results.notes.setdefault(name, []).insert(0, _COSINE_NOTE)
    if singular is not None and "isoscore_star" in results.values:
        results.notes.setdefault("isoscore_star", []).insert(0, singular)
    for name in euclidean_only:
        if name in results.values:
            results.notes.setdefault(name, []).insert(0, _EUCLIDEAN_NOTE)
    if "isoscore_star" in results.values and data.shrinkage_cov is None:  # the warning above, kept with the value
        results.notes.setdefault("isoscore_star", []).insert(0, f"{_table.ISOSCORE_STAR_WARNING} (--shrinkage-sample).")
    if json_path is not None:
        record = _record(data, embeddings, key=key, labels_path=labels_path, sample_size=sample_size,
                         random_state=random_state, distance=distance, results=results, metric_names=metric_names,
                         shrinkage_sample=shrinkage_sample, n_neighbors=n_neighbors, zeta=zeta,
                         averaging=averaging, label_column=label_column, digest_inputs=digest_inputs)
        record.update(record_extra or {})
        # the metrics of the default table it left out, with why, as its notes said (a table that left none out
        # records {})
        record["left_out"] = {**({} if star_left_out is None else {"isoscore_star": star_left_out}),
                              **({} if too_few is None else {"mle_dimension": too_few}), **results.left_out}
        from isotropy.measure._json_output import write_json_output

        _guard(write_json_output, json_path, record)
    if results.interrupted:
        sys.exit(results.interrupted)
    if results.errors:
        click.echo(failed_line(results.errors, [name for name in metric_names if name not in results.left_out],
                               json_path), err=True)
        sys.exit(2 if all(kind == "input" for kind in results.error_kinds.values()) else 1)


def failed_line(errors, metric_names, json_path) -> str:
    """The command's last line when metrics failed: how many of how many, which, and where the others are."""
    if len(errors) == len(metric_names):  # no others to point to
        return (f"Error: {'the metric' if len(errors) == 1 else f'all {len(errors)} metrics'} failed "
                f"({', '.join(errors)}); the reason{' is' if len(errors) == 1 else 's are'} above"
                f"{' and in the JSON' if json_path is not None else ''}.")
    return (f"Error: {len(errors)} of {len(metric_names)} metrics failed ({', '.join(errors)}); the others are above"
            f"{' and in the JSON' if json_path is not None else ''}.")


class _Echo:
    """Print a line at once (flushed), to stdout or to stderr.

    ``keep_going``: a stream whose reader has gone (``isotropy measure X --json out.json | head -3``: EPIPE) is not an
    error: the rest of the table goes nowhere, and the command measures on and writes the JSON it was asked for
    (which the first closed write stopped, as a table nobody reads would). Without it, the closed pipe ends the command
    as click ends it (status 1, no message), as for any command whose output is no longer read.
    """

    def __init__(self, *, err: bool, keep_going: bool = False):
        self.err, self.keep_going, self.closed = err, keep_going, False

    def __call__(self, line: str) -> None:
        if self.closed:
            return
        stream = sys.stderr if self.err else sys.stdout
        try:
            click.echo(line, err=self.err)
            stream.flush()
        except BrokenPipeError:
            if not self.keep_going:
                raise
            self.closed = True
            # the stream's descriptor on the null device: what Python still holds for it (and flushes at exit) goes
            # nowhere instead of failing again
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, stream.fileno())
            finally:
                os.close(null)


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
        value = "failed" if outcome.error is not None else value_text(name, outcome.value, 6)
        return self._line(name, value, f"{outcome.seconds:.3f}")


class _Results:
    """What has finished: values, seconds, warnings and errors by metric name."""

    def __init__(self):
        self.values, self.seconds, self.notes, self.errors, self.error_kinds = {}, {}, {}, {}, {}
        self.left_out = {}  # metric -> why a default table left it out once measured (_mle_may_be_left_out)
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
    shrinkage_cov: object = None  # Σ_S of isoscore_star from --shrinkage-sample (float64, d x d), or None
    shrinkage_key: str | None = None  # the array read from a --shrinkage-sample container (the JSON's shrinkage_key)
    shrinkage_rows: int | None = None  # the rows Σ_S is the covariance of (a singular Σ_S is said where IsoScore* runs)
    # on the dask path: (the tiles run at once, whether on this machine's cores[, whether in this process]), for the
    # O(n²) notes (open_cluster's "threads"); None in memory
    tile_threads: tuple | None = None
    rows: object = None  # with --sample-size: the file's row of each row measured (sampled_rows), else None


def _load_input(embeddings, labels_path, *, key, sample_size, random_state, needing_labels,
                shrinkage_sample=None, label_column=None, labels_encoding="utf-8", shrinkage_key=None) -> _Input:
    """Read EMBEDDINGS into memory, then :func:`prepare_input` (the sample, finiteness, clusters, Σ_S)."""
    import os
    from pathlib import Path

    from isotropy.io.embeddings import missing_embeddings, read_embeddings

    given = str(embeddings)
    from isotropy.io.word_vectors import PACKAGED_GLOVE

    if (given.endswith(("/", os.sep)) or not Path(given).suffix) and given != PACKAGED_GLOVE \
            and not os.path.lexists(given) and not Path(given).exists():
        # a directory may have been meant (the separator, or no extension: a trial's missing folder of shards was
        # named "the embeddings file" and the file formats alone): every form the command takes is named
        raise InputError(str(missing_embeddings(given)))
    # a sample reads only its rows from a memory-mapped .npy; all rows are read into memory once
    X, row_names = _guard(read_embeddings, embeddings, key=key, mmap_mode="r" if sample_size is not None else None,
                          label_column=own_label_column(embeddings, labels_path, label_column))
    return prepare_input(X, row_names, embeddings, labels_path, key=key, sample_size=sample_size,
                         random_state=random_state, needing_labels=needing_labels, shrinkage_sample=shrinkage_sample,
                         shrinkage_key=shrinkage_key,
                         label_column=label_column, labels_encoding=labels_encoding)


def own_label_column(embeddings, labels_path, label_column):
    """``label_column`` when the labels are a column of EMBEDDINGS itself (``--labels EMBEDDINGS --label-column COL``):
    that column is then left out of the features; else ``None``. An ``.npz`` archive's labels are a member of their
    own, a ``.pt``/``.pth`` or ``.safetensors`` file's a tensor of their own (``--key`` picks the features'), never a
    column of the features."""
    from pathlib import Path

    from isotropy.io.labels import MEMBER_EXTENSIONS

    if label_column is None or labels_path is None or Path(str(labels_path)).suffix.lower() in MEMBER_EXTENSIONS:
        return None
    return label_column if Path(labels_path).resolve() == Path(str(embeddings)).resolve() else None


def prepare_input(X, row_names, embeddings, labels_path, *, key, sample_size, random_state, needing_labels,
                  shrinkage_sample=None, label_column=None, labels_encoding="utf-8", shrinkage_key=None) -> _Input:
    """The one input path of ``isotropy measure``, in process and on dask: labels, Σ_S, the sample, the checks.

    ``X`` is the whole input, a numpy array (or memory map) or a lazy dask array. The labels are read and
    checked against its rows, Σ_S of ``--shrinkage-sample`` is drawn from all of them, then ``--sample-size``
    rows are drawn (:func:`isotropy._utils.sampling.subsample_indices`, the same rows on both paths), and
    the cluster count is checked. A numpy input becomes an own C-contiguous array in its float dtype and is
    checked for NaN/inf here (naming the row); a dask input stays lazy and is checked by the metrics.
    """
    import numpy as np

    from isotropy._utils.backend import is_dask
    from isotropy._utils.sampling import subsample_indices
    from isotropy._utils.validation import check_labels

    n_rows, n_features = X.shape
    if n_features < 2:  # one number a row is a labels file given as EMBEDDINGS more often than an embedding (a user
        # trial: four metrics failed and two gave values for a file of 600 labels); no metric describes 1-d geometry
        raise InputError(f"EMBEDDINGS {embeddings!r} has {n_features} feature{'' if n_features == 1 else 's'} "
                         f"(column{'' if n_features == 1 else 's'}); "
                         f"expected at least 2: the geometry of an embedding space needs 2 dimensions or more (a file of "
                         f"one label per row goes to --labels).")
    labels = None
    if labels_path is not None:
        from isotropy.io._delimited import shorten_cell
        from isotropy.io.labels import read_labels

        read_as = []  # a position off by one reads another column without an error: what it read is said
        labels = _guard(read_labels, labels_path, n_rows=n_rows, column=label_column, encoding=labels_encoding,
                        _read_as=read_as)
        if read_as:
            note(f'--label-column {label_column}: {read_as[0]}, first label: "{shorten_cell(labels[0])}"')
    shrinkage_cov = shrinkage_rows = None
    if shrinkage_sample is not None:
        from isotropy.io.embeddings import takes_key

        # --shrinkage-key, else --key where the file holds several arrays (an .npz of the same members as EMBEDDINGS)
        inherited = shrinkage_key is None and key is not None and not isinstance(shrinkage_sample, int) \
            and takes_key(shrinkage_sample)
        shrinkage_key = key if inherited else shrinkage_key
        shrinkage_cov, shrinkage_rows = shrinkage_covariance(shrinkage_sample, X, key=shrinkage_key,
                                                             random_state=random_state, n_features=n_features,
                                                             inherited=inherited)
    rows = subsample_indices(n_rows, sample_size, random_state=random_state)
    if len(rows) < n_rows:
        X = X[rows]
        labels = None if labels is None else labels[rows]
    if not is_dask(X):
        # an own array in the file's float dtype (never the memory map itself); metrics accumulate in float64
        # (a big-endian file's floats in native order at the same precision: '>f4' was measured as float64, which the
        # same array in Python is not)
        dtype = X.dtype.newbyteorder("=") if X.dtype.kind == "f" and X.dtype.itemsize in (4, 8) else np.float64
        X = np.array(X, dtype=dtype, order="C") if isinstance(X, np.memmap) else np.ascontiguousarray(X, dtype=dtype)
        _check_finite(X, embeddings, row_names, rows, n_rows)
    n_samples = X.shape[0]
    where = f" (a sample of {n_samples} of its {n_rows} rows)" if n_samples < n_rows else ""
    if sample_size is not None and sample_size >= n_rows:  # not silently: the JSON still says what was asked
        note(f"--sample-size {sample_size} is not below the {n_rows} rows of {embeddings}: every row is "
             f"measured.")
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
        fraction = _fractional_label(labels) if needing_labels else None
        if needing_labels and (fraction is not None or 2 * n_clusters > n_samples):
            # scores given as labels (STS similarities, ratings): every distinct value became a cluster of a row or
            # two, and the silhouette read -0.24 without a word (a user trial)
            singles = int(np.count_nonzero(np.bincount(cluster_ids) == 1))
            why = (f"the labels are numbers with fractions ({fraction!r}), scores rather than classes?"
                   if fraction is not None else f"fewer than 2 rows per cluster on average, {singles} of them of a "
                                                f"single row")
            note(f"LABELS {str(labels_path)!r}: {n_clusters} clusters for {n_samples} rows{where}, each "
                 f"distinct label one cluster; {why}")
    return _Input(X=X, n_rows=n_rows, n_samples=n_samples, n_features=n_features, where=where,
                  cluster_ids=cluster_ids, n_clusters=n_clusters, shrinkage_cov=shrinkage_cov, shrinkage_key=shrinkage_key,
                  shrinkage_rows=shrinkage_rows, rows=rows if n_samples < n_rows else None)


def _fractional_label(labels) -> str | None:
    """The first label that is a number with a fraction (``'4.09'``, ``2.5``), if every label is a number; else ``None``."""
    import numpy as np

    values = np.asarray(labels)
    if values.dtype.kind == "f":
        numbers, shown = values, values
    elif values.dtype.kind in "US":
        try:
            numbers, shown = values.astype(np.float64), values
        except ValueError:  # a label that is not a number: classes
            return None
    else:  # integers, booleans: classes
        return None
    fractional = np.flatnonzero(np.isfinite(numbers) & (numbers != np.round(numbers)))
    return None if fractional.size == 0 else str(shown.reshape(-1)[fractional[0]])


def _record(data, embeddings, *, key, labels_path, sample_size, random_state, distance, results, metric_names,
            shrinkage_sample=None, n_neighbors=None, zeta=None, averaging=None, label_column=None, digest_inputs=True):
    from isotropy._utils.threads import threads_in_effect
    from isotropy._utils.versions import package_versions
    from isotropy.io._identity import input_identity

    return {
        "file": str(embeddings),
        "key": key,
        "labels": None if labels_path is None else str(labels_path),
        "label_column": label_column,
        # which bytes were read: each file's path, size and sha256 (sizes only over dask: isotropy.io._identity)
        "inputs": {"embeddings": input_identity(embeddings, digest=digest_inputs),
                   "labels": None if labels_path is None else input_identity(labels_path, digest=digest_inputs)},
        "n_rows": int(data.n_rows),
        "n_samples": int(data.n_samples),
        "n_features": int(data.n_features),
        "n_clusters": data.n_clusters,
        "sample_size": sample_size,
        "random_state": random_state,
        "metric": distance,
        "n_neighbors": _mle_neighbours(n_neighbors) if "mle_dimension" in metric_names else None,
        "shrinkage_sample": shrinkage_sample if shrinkage_sample is None or isinstance(shrinkage_sample, int) else str(shrinkage_sample),
        "shrinkage_key": data.shrinkage_key,
        "zeta": _isoscore_star_zeta(zeta) if "isoscore_star" in metric_names else None,
        "averaging": _mle_averaging(averaging) if "mle_dimension" in metric_names else None,
        "values": {name: _json_float(results.values[name]) for name in metric_names if name in results.values},
        "seconds": {name: round(results.seconds[name], 6) for name in metric_names if name in results.seconds},
        "warnings": results.notes,
        "errors": results.errors,
        "complete": not results.errors and not results.interrupted,
        "scheduler": None, "workers": None, "memory_limit": None, "chunking": None,  # in memory (dask runs: isotropy.distributed)
        "threads": threads_in_effect(),
        "versions": package_versions(),
    }


# the functions behind ``measure`` (and ``measure --model``) whose parameters are the command's options: their
# errors name the option
_BEHIND_THE_COMMAND = ("measure_layers", "load_transformer", "encode_pooled", "select_layers", "check_layers",
                       "check_pooling", "mle_dimension", "neighbour_dimensions", "read_texts")
_OPTION_OF = {"layers": "--layers", "level": "--level", "pooling": "--pooling", "device": "--device",
              "batch_size": "--batch-size", "max_length": "--max-length", "sample_size": "--sample-size",
              "texts": "--texts", "labels": "--labels", "shrinkage_sample": "--shrinkage-sample",
              "metrics": "--metrics", "n_neighbors": "--n-neighbors", "encoding": "--encoding",
              "dtype": "--dtype"}


# The readers (isotropy.io) serve Python and the command line alike, so their messages give both spellings of a
# parameter; the command's own messages keep its spelling only (a user of the command line need not know Python's)
_PYTHON_SPELLINGS = (
    (r"(--[\w-]+) \(\w+=\)", r"\1"),  # "expected --key (key=) naming one of them"
    (r" \(\w+= in Python\)", ""),  # "--label-column NAME (label_column= in Python)"
    (r"\((--[\w-]+); \w+= in Python\)", r"(\1)"),  # "(--label-column; column= in Python)"
    (r"\w+='([^']*)' in Python, (--[\w-]+ \S+) on the command line", r"\2"),  # "encoding='latin-1' in Python, ..."
    # "key='emb' was given but .npy files hold a single array" (the readers): "--key emb was given but ..."
    (r"\bkey=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\") was given but",
     lambda match: f"--key {_shell_word(match.group(1))} was given but"),
    # "label_column='label' was given but .npy shards have no named columns; expected no label_column ..."
    (r"\blabel_column=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\") was given but",
     lambda match: f"--label-column {_shell_word(match.group(1))} was given but"),
    (r"\bexpected no label_column\b", "expected no --label-column"),
    (r"\(shrinkage_sample=\)", "(--shrinkage-sample)"),  # "give one to measure it (shrinkage_sample=)"
    # "The 'encoding' parameter of read_labels must be a text encoding ...": the option that gave it
    (r"^The 'encoding' parameter of \w+ must", "--encoding must"),
)


def _shell_word(literal: str) -> str:
    """A Python string literal (``'emb'``, its ``repr``) as the command line spells the value: ``emb``, quoted for
    the shell where it must be."""
    import ast
    import shlex

    return shlex.quote(ast.literal_eval(literal))


def command_words(message: str) -> str:
    """A reader's message as the command says it: its options alone, without their Python spellings.

    >>> command_words("several arrays ['a', 'b']; expected --key (key=) naming one of them.")
    "several arrays ['a', 'b']; expected --key naming one of them."
    """
    import re

    for pattern, replacement in _PYTHON_SPELLINGS:
        message = re.sub(pattern, replacement, message)
    return message


def named_data(message: str, data: str) -> str:
    """A metric's message about its ``X`` parameter naming ``data``, the command's word for it (``"EMBEDDINGS"``):
    its errors ("The 'X' parameter of twonn_dimension must ...") and its warnings ("X has 5 duplicate rows ...")."""
    import re

    return re.sub(r"^(?:The 'X' parameter of \w+|X(?= has ))", data, message)


def sampled_rows(message: str, rows) -> str:
    """A metric's ``(at index 5)`` or ``(first at index 5)``, a row of the ``--sample-size`` rows it measured, said
    with the row of the file that is (``rows``: the file's row of each row measured; ``None``: every row, in order).

    >>> sampled_rows("Got 1 zero row (at index 1) instead.", [3, 7, 9])
    'Got 1 zero row (at index 1 of the 3 rows sampled: row 7 of EMBEDDINGS) instead.'
    """
    import re

    if rows is None:
        return message
    return re.sub(r"\((first )?at index (\d+)\)", lambda found: f"({found[1] or ''}at index {found[2]} of the "
                  f"{len(rows)} rows sampled: row {int(rows[int(found[2])])} of EMBEDDINGS)", message)


def option_names(message: str, *, n_neighbors_given: bool = True, data: str | None = None) -> str:
    """``The 'layers' parameter of measure_layers ...`` -> ``--layers ...``: a command's error names its option.

    ``n_neighbors_given=False``: the command line gave no ``--n-neighbors``, so an error about it is about its default.
    ``data``: what the metrics' ``X`` is on the command line (``"EMBEDDINGS"``): a metric's error about its
    ``'X' parameter`` then names that, not the Python parameter.
    """
    import re

    def option(match):
        return _OPTION_OF.get(match.group(1), match.group(0))

    callers = "|".join(_BEHIND_THE_COMMAND)
    message = command_words(message)
    message = re.sub(rf"The '(\w+)' parameter of (?:{callers})\b", option, message)
    # MLE's k against the distinct rows (isotropy.metrics.dimension): k is the command's --n-neighbors
    # (on a model's layer, "The layer must have more than n_neighbors=9 ...": layer_message)
    message = re.sub(r"((?:of (?:mle_dimension|neighbour_dimensions)|^The layer) must have more than )n_neighbors=(\d+)",
                     r"\1--n-neighbors \2", message)
    if data is not None:
        message = named_data(message, data)
    if n_neighbors_given:
        return message
    return message.replace("--n-neighbors must", "the default --n-neighbors must", 1).replace(
        "more than --n-neighbors ", "more than the default --n-neighbors ", 1)


def _guard(function, *args, **kwargs):
    """Call a reader or validator; turn its ValueError/OSError into a one-line error, exit status 2.

    Its user warnings (a shard directory whose sub-directories are not read, ...) are printed as the
    command's own ``Warning:`` lines, not in Python's format with a source line; other warnings pass on.
    """
    import warnings

    caught: list = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UserWarning)
            return function(*args, **kwargs)
    except (ValueError, TypeError, OSError) as exc:
        raise InputError(command_words(" ".join(str(exc).split()))) from None
    finally:  # before the error too: a warning may say why it came (shards in sub-directories, none at the top)
        for found in caught:
            if issubclass(found.category, UserWarning):
                click.echo(f"Warning: {command_words(' '.join(str(found.message).split()))}", err=True)
            else:
                warnings.warn_explicit(found.message, found.category, found.filename, found.lineno)


def _check_finite(X, embeddings, row_names, rows, n_rows: int) -> None:
    """Reject NaN and inf in the rows measured; name the first one by its row in the file (of ``n_rows``), and for a
    text file by its line too: the row counts from 0 and skips a header, blank lines and comments, the line does not
    (an empty CSV cell read as NaN was named at "row 1, column 1" on the file's line 3, field 2: a user trial)."""
    import numpy as np

    from isotropy._utils.validation import first_nonfinite

    if X.size == 0 or (np.isfinite(X.min()) and np.isfinite(X.max())):  # NaN propagates: no n x d temporary
        return
    found = first_nonfinite(X)  # a block of rows at a time: no n x d temporary either
    row = int(rows[found.row])
    from isotropy.io._encoding import shorten
    from isotropy.io.embeddings import data_line

    said = [f"row name {shorten(str(row_names[row]))!r}"] if row_names is not None else []  # 1 GB names were quoted
    line = data_line(embeddings, row, n_rows, named=row_names is not None) if isinstance(embeddings, str) else None
    said += [] if line is None else [f"counted from 0: the row is line {line} of the file"]
    name = f" ({'; '.join(said)})" if said else ""
    raise InputError(f"EMBEDDINGS {embeddings!r} has a non-finite value {found.at(row)}{name}; "
                     f"expected finite numbers (no NaN or inf).")


class _Outcome:
    """One metric's result: a value, or an error message (kind "input" for a ValueError/TypeError)."""

    def __init__(self, value=None, seconds=0.0, notes=(), error=None, error_kind=None, left_out=None):
        self.value, self.seconds, self.notes, self.error, self.error_kind = value, seconds, list(notes), error, error_kind
        self.left_out = left_out  # why a default table leaves the metric out (no row, no error), or None


def _measure(metric_names, data, *, distance, random_state, progress, n_neighbors=None, zeta=None, averaging=None,
             leave_out=False):
    """Yield ``(name, _Outcome)`` for each metric as soon as it is computed; a failure does not stop the rest.

    The covariance metrics read ``X``'s float64 statistics from one pass (:mod:`isotropy._kernels.rows`),
    TwoNN and MLE their neighbours from one search (:func:`_one_neighbour_pass`).
    """
    from isotropy._kernels.rows import shared_statistics

    with shared_statistics(data.X, metric_names):
        yield from _measure_each(metric_names, data, distance=distance, random_state=random_state, progress=progress,
                                 n_neighbors=n_neighbors, zeta=zeta, averaging=averaging, leave_out=leave_out)


def own_message(name: str, message) -> str:
    """A warning or error of metric ``name`` as one line, without a leading ``"<name>: "``.

    Nor the name of the search TwoNN and MLE share (``neighbour_dimensions``, or on the dask path each
    estimator's own), so that the warning of that search reads the same under both metrics. MLE's advice to pool
    with ``averaging='harmonic'`` or ``'median'`` adds the command's words (``--averaging harmonic``): the notes of
    :func:`~isotropy.measure.from_model.measure_layers` are the Python API's and the command's alike.
    """
    import re

    text = re.sub(r"averaging='(\w+)'(.*?) or '(\w+)'", r"averaging='\1'\2 or '\3' (--averaging \1 or \3 on the "
                  r"command line)", " ".join(str(message).split()))
    for prefix in [name, *(sorted(_ONE_PASS) + ["neighbour_dimensions"] if name in _ONE_PASS else [])]:
        if text.startswith(f"{prefix}: "):
            return text[len(prefix) + 2:]
    return text


def layer_message(name: str, message) -> str:
    """:func:`own_message` of a metric measured on a model's layer, whose ``X`` is that layer's vectors: "the
    layer has 6 duplicate rows", "the layer must have more than ...", not the Python parameter the caller of
    :func:`~isotropy.measure.from_model.measure_layers` never gave (a user trial: "X has" under ``--model``)."""
    return named_data(own_message(name, message), "the layer")


def _mle_averaging(averaging) -> str:
    """How ``mle_dimension`` pools: ``averaging``, or its default when ``None``."""
    import inspect

    from isotropy.metrics.dimension import mle_dimension

    return str(inspect.signature(mle_dimension).parameters["averaging"].default if averaging is None else averaging)


def _isoscore_star_zeta(zeta) -> float:
    """ζ of ``isoscore_star``: ``zeta``, or its default when ``None``."""
    import inspect

    from isotropy.metrics.isoscore import isoscore_star

    return float(inspect.signature(isoscore_star).parameters["zeta"].default if zeta is None else zeta)


def _mle_neighbours(n_neighbors) -> int:
    """``k`` of ``mle_dimension``: ``n_neighbors``, or its default when ``None``."""
    from isotropy._kernels.dimension import DEFAULT_MLE_NEIGHBOURS

    return DEFAULT_MLE_NEIGHBOURS if n_neighbors is None else int(n_neighbors)


def _mle_may_be_left_out(*, default_table: bool, n_neighbors, averaging) -> bool:
    """Whether a default table leaves MLE out, rather than failing it, when its default ``k`` does not fit the rows."""
    return default_table and n_neighbors is None and averaging is None


def _mle_left_out(metric_names, n_samples: int, *, default_table: bool, n_neighbors, averaging=None, X=None,
                  distance="euclidean") -> str | None:
    """The note of a default table too small for MLE's default ``k`` (which then leaves it out), else None.

    A default table (no ``--metrics``) on ``n_samples <= k`` rows, ``k`` the default of
    ``--n-neighbors``: the metric cannot be computed, and the user asked for nothing that needs it,
    so the table goes on without it (exit status 0) and says how to measure it (the JSON's
    ``left_out``). Asked for by name, or with ``--n-neighbors`` or ``--averaging``, a ``k`` the rows
    cannot give stays an error. The ``K`` the note suggests is below the distinct points of those few rows ``X``
    under ``distance`` (a ``K`` up to ``n_samples - 1`` was suggested, and refused, on rows with copies). More rows
    than ``k`` of too few distinct points are found by the search itself, and left out then (:func:`_measure_each`).
    """
    if not _mle_may_be_left_out(default_table=default_table, n_neighbors=n_neighbors, averaging=averaging) \
            or "mle_dimension" not in metric_names:
        return None
    k = _mle_neighbours(None)
    if n_samples > k:
        return None
    return _too_few_note(k, n_samples, n_samples if X is None else _distinct_of_few(X, distance))


def _distinct_of_few(X, distance: str) -> int:
    """The distinct points of the few rows ``X`` (at most MLE's default ``k``) under ``distance``, as the estimators
    count them (:func:`~isotropy.metrics.dimension.distinct_points`); the rows' count where they cannot be counted."""
    from isotropy._utils.backend import is_dask
    from isotropy.metrics.dimension import distinct_points

    try:
        return distinct_points(X.compute() if is_dask(X) else X, metric=distance)
    except ValueError:  # (rows the metric refuses: its own error comes with the table)
        return int(X.shape[0])


def _too_few_note(k: int, n_samples: int, n_distinct: int) -> str:
    """Why a default table leaves MLE out: ``n_samples`` rows of ``n_distinct`` distinct points, ``k`` neighbours."""
    low = ("--n-neighbors 2" if n_distinct == 3 else f"--n-neighbors K with 2 <= K <= {n_distinct - 1}") if n_distinct > 2 else \
        ("more rows" if n_distinct == n_samples else "more distinct rows")
    if n_distinct == n_samples:
        return (f"mle_dimension left out: its default {k} neighbours need more than {k} rows, and {n_samples} are "
                f"measured; give {low} to measure it")
    return (f"mle_dimension left out: its default {k} neighbours need more than {k} distinct points, and the "
            f"{n_samples} rows measured hold {n_distinct} ({n_samples - n_distinct} duplicate rows); give {low} to "
            f"measure it")


def _measure_each(metric_names, data, *, distance, random_state, progress, n_neighbors=None, zeta=None,
                  averaging=None, leave_out=False):
    """The metrics of :func:`_measure`, one after the other.

    ``leave_out``: MLE refused for too few distinct points (:class:`~isotropy._kernels.dimension.TooFewDistinctError`)
    is an outcome with ``left_out`` set, not an error (see :func:`_mle_may_be_left_out`).
    """
    import inspect

    from tqdm import tqdm

    from isotropy._kernels.dimension import TooFewDistinctError
    from isotropy._utils.backend import is_dask
    from isotropy._utils.warn import IdentityShrinkageWarning, SpanBoundWarning
    from isotropy.io.embeddings import EmbeddingsReadError

    X, cluster_ids = data.X, data.cluster_ids
    shared = {}  # the one neighbour pass of TwoNN and MLE (_one_neighbour_pass)
    one_pass = [name for name in metric_names if name in _ONE_PASS] if _ONE_PASS <= set(metric_names) else []
    terminal = sys.stderr.isatty()
    if progress and not terminal:  # --progress into a log file: whole lines, not a bar redrawn with '\r'
        bar = _LineProgress(metric_names)
    else:
        bar = tqdm(metric_names, desc="metrics", unit="metric", file=sys.stderr, leave=False,
                   disable=not (terminal if progress is None else progress))
    for name in bar:
        bar.set_postfix_str(name)
        spec = METRICS[name]
        labelled = spec.needs_labels
        search = name in one_pass  # TwoNN and MLE from one search: one note, before it
        if name in QUADRATIC and not (search and shared):
            tiles = (data.tile_threads or (None, True)) if is_dask(X) else None
            cost = _cost_note(_SHARED_SEARCH if search else name, *X.shape, distributed=tiles,
                              names=one_pass if search else None, n_neighbors=n_neighbors)
            if cost and not notes_silenced():
                bar.write(cost, file=sys.stderr)
        function = spec.function
        if search:
            function = functools.partial(_one_neighbour_pass, shared, name, n_neighbors=n_neighbors,
                                         averaging=averaging)
        accepted = inspect.signature(function).parameters
        kwargs = {}
        if "metric" in accepted:
            kwargs["metric"] = distance
        if "random_state" in accepted:
            kwargs["random_state"] = random_state
        if name == "mle_dimension" and n_neighbors is not None and not search:
            kwargs["n_neighbors"] = n_neighbors
        if name == "isoscore_star" and data.shrinkage_cov is not None:
            kwargs["shrinkage_cov"] = data.shrinkage_cov
        if name == "isoscore_star" and zeta is not None:
            kwargs["zeta"] = zeta
        if name == "mle_dimension" and averaging is not None and not search:
            kwargs["averaging"] = averaging
        args = (X, cluster_ids) if labelled else (X,)
        start = time.perf_counter()
        error = kind = value = left_out = None
        with warnings.catch_warnings(record=True) as caught, _reporting_to(bar, name):
            warnings.simplefilter("always")
            # said in the command's terms: once (Σ_S = I, report), and with the value (span_bound_warning, below)
            warnings.simplefilter("ignore", IdentityShrinkageWarning)
            warnings.simplefilter("ignore", SpanBoundWarning)
            try:
                value = float(function(*args, **kwargs))
            except EmbeddingsReadError as exc:  # a lazily read shard is bad: the data, not this metric
                bar.close()
                raise InputError(" ".join(str(exc).split())) from None
            except (ValueError, TypeError) as exc:  # the data do not suit this metric
                if leave_out and name == "mle_dimension" and isinstance(exc, TooFewDistinctError):
                    left_out = _too_few_note(exc.n_neighbors, data.n_samples, exc.n_distinct)
                else:
                    error = option_names(" ".join(str(exc).split()), n_neighbors_given=n_neighbors is not None,
                                         data="EMBEDDINGS")
                    error = sampled_rows(error, data.rows)
                    kind = "input"
                    _debug_traceback(bar)
            except Exception as exc:  # noqa: BLE001 - a failing metric must not lose the others
                error, kind = f"{type(exc).__name__}: {' '.join(str(exc).split())}", "internal"
                if type(exc).__name__ == "KilledWorker":  # dask's word for workers that died running a task
                    error += (" (dask workers die this way most often when a task outgrows their memory: raise "
                              "--memory-limit, or run fewer --workers, each with more memory)")
                _debug_traceback(bar)
        if left_out is not None:  # no row, no error (nor the warnings of the search that found too few points)
            yield name, _Outcome(left_out=left_out)
            continue
        seconds = time.perf_counter() - start
        # a metric's warning about its data names the command's EMBEDDINGS, as its errors do (option_names), not the
        # Python parameter X ("X has 597 duplicate rows" beside "EMBEDDINGS must have at least 2 features")
        notes = list(dict.fromkeys(named_data(own_message(name, w.message), "EMBEDDINGS") for w in caught))
        bound = _table.span_bound_warning(name, data.n_samples, data.n_features) if error is None else None
        if bound is not None:
            notes.append(bound)
        for message in notes:  # one line each, not the file:line form of the warnings module
            bar.write(f"Warning: {name}: {message}", file=sys.stderr)
        if error is not None:
            bar.write(f"Error: {name}: {error}", file=sys.stderr)
        yield name, _Outcome(value, seconds, notes, error, kind)
    bar.close()


def _debug_traceback(bar) -> None:
    """With ``ISOTROPY_DEBUG`` set, the traceback of the exception being handled (a failing metric), to stderr."""
    import traceback

    from isotropy._utils.errors import debugging

    if debugging():
        bar.write(traceback.format_exc().rstrip(), file=sys.stderr)


_ONE_PASS = {"twonn_dimension", "mle_dimension"}
_SHARED_SEARCH = "mle_dimension"  # the one pass searches MLE's neighbours: its cost is the pass's


def _one_neighbour_pass(shared, name, X, *, metric, n_neighbors=None, averaging=None):
    """``name``'s value from one search for both TwoNN and MLE (:func:`~isotropy.metrics.dimension.neighbour_dimensions`).

    The first call searches; each call gives the search's warnings that concern ``name``: all but those that
    name the other estimator (MLE's on a small ``k``, say: TwoNN reads two neighbours whatever ``k`` is), as
    the estimator alone would give. When the shared search fails (MLE's
    ``k`` does not fit a few rows, say), each metric runs alone, so that its own error names it and TwoNN,
    which needs only 2 neighbours, is not refused for MLE's sake. An estimate the search gives as NaN (undefined on
    these data, the other one computed: TwoNN on tied neighbour distances) raises the refusal its warning carries
    (:class:`~isotropy._kernels.dimension.UndefinedEstimateWarning`), as the estimator alone would, without a
    second search. ``n_neighbors``: MLE's ``k`` (``None``: its default); ``averaging``: how MLE
    pools (``None``: its default).
    """
    from isotropy.metrics.dimension import neighbour_dimensions

    if not shared:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                shared["result"] = neighbour_dimensions(X, metric=metric, n_neighbors=_mle_neighbours(n_neighbors),
                                                        averaging=_mle_averaging(averaging))
            except Exception as exc:  # noqa: BLE001 - each metric then runs alone
                shared["result"] = exc
        shared["warnings"] = caught
    if not isinstance(shared["result"], Exception) and math.isnan(shared["result"][name]):
        from isotropy._kernels.dimension import UndefinedEstimateWarning

        for w in shared["warnings"]:  # the refusal the search found: no second search for the estimate alone
            if isinstance(w.message, UndefinedEstimateWarning) and w.message.estimate == name:
                raise w.message.error
    if isinstance(shared["result"], Exception) or math.isnan(shared["result"][name]):
        alone = {"n_neighbors": _mle_neighbours(n_neighbors), "averaging": _mle_averaging(averaging)} \
            if name == "mle_dimension" else {}
        return METRICS[name].function(X, metric=metric, **alone)
    others = tuple(f"{other}: " for other in _ONE_PASS - {name})
    for w in shared["warnings"]:
        if not str(w.message).startswith(others):  # the search's own ("neighbour_dimensions: ...") go to both
            warnings.warn(w.message, w.category, stacklevel=2)
    return shared["result"][name]


class _LineProgress:
    """The metrics' progress as whole lines on stderr, for ``--progress`` into a file or a pipe.

    The bar of a terminal redraws one line with carriage returns: in a log file that is one endless line that the
    table's rows (stdout) cut into. Here each metric's start is a line (``metrics 2/3: silhouette_score``) and so is
    each tenth of its blocks (``metrics 2/3: silhouette_score 40%``), so a log shows how far a long metric got.
    """

    disable = False

    def __init__(self, names):
        self._names = list(names)
        self._position = 0
        self._last = None

    def __iter__(self):
        for position, name in enumerate(self._names, start=1):
            self._position = position
            yield name

    def set_postfix_str(self, text: str) -> None:
        name, _, percent = text.partition(" ")
        if percent:  # a kernel's blocks: a line per tenth
            tenth = int(percent.rstrip("%")) // 10
            if tenth == 0 or (name, tenth) == self._last:
                return
            self._last, text = (name, tenth), f"{name} {10 * tenth}%"
        self.write(f"metrics {self._position}/{len(self._names)}: {text}")

    @staticmethod
    def write(text: str, file=None) -> None:
        print(text, file=file or sys.stderr, flush=True)

    def close(self) -> None:
        return None


def _reporting_to(bar, name):
    """Within a metric, its kernel's blocks move the bar's label on ('silhouette 37%')."""
    from isotropy._utils.progress import reporting

    if bar.disable:
        return contextlib.nullcontext()

    def show(done, total):
        percent = 100 * done // total
        if percent != getattr(show, "last", None):  # at most 101 refreshes per metric
            show.last = percent
            bar.set_postfix_str(f"{name} {percent}%")

    return reporting(show)


# The compiled loops' estimate at most this share of the numpy loops' for the note to suggest installing numba (its
# gain is largest at small widths and many neighbours; at d = 384, k = 20 and many rows it is within the estimate's error).
_NUMBA_ADVICE = 0.75


def _cost_note(name, n_samples, n_features, *, distributed=None, names=None, n_neighbors=None) -> str | None:
    """A one-line estimate of an O(n²) metric's time, or None when it is short (see _COST_NOTE_SECONDS).

    ``distributed``: None (or False) in memory; on the dask path ``(threads, local)`` or ``(threads, local,
    in_process)`` (``open_cluster``'s ``threads``): the tiles that run at once (None: this machine's cores), whether
    they share this machine's cores, and whether they run in this process (dask's threaded scheduler; default
    False); ``True`` is ``(None, True)``. There the tiles are priced
    (:func:`~isotropy._kernels.cost.estimate_tiled_seconds`) and ``--scheduler`` is not suggested again. ``names``:
    the metrics that share this search (the note names them all), default ``[name]``. ``n_neighbors``: MLE's ``k``
    (``None``: its default), which the search of ``mle_dimension`` takes.
    """
    from isotropy._kernels.cost import estimate_seconds, estimate_tiled_seconds, format_duration
    from isotropy._kernels.neighbors import numba_would_run
    from isotropy._utils.install import extra_command

    k = _mle_neighbours(n_neighbors) if name == "mle_dimension" else None
    if distributed is True:
        distributed = (None, True)
    if distributed:
        from isotropy._kernels.silhouette import _cores
        from isotropy.distributed._graph import DEFAULT_TILE_ROWS, NEIGHBOUR_TILE_ROWS, check_tile_rows

        threads, local, *in_process = distributed
        in_process = bool(in_process and in_process[0])
        cores = _cores()
        threads = cores if threads is None else int(threads)
        run_on = max(1, min(threads, cores) if local else threads)  # local workers share this machine's cores
        tile_rows = check_tile_rows(None, name, n_features,
                                    default=NEIGHBOUR_TILE_ROWS if name in _ONE_PASS else DEFAULT_TILE_ROWS)

        def estimate(n, loops=None):
            return estimate_tiled_seconds(name, n, n_features, tile_rows=tile_rows, threads=run_on, n_neighbors=k,
                                          loops=loops, in_process=in_process)

        if local and threads > cores:
            where = f"the dask path, its {threads} workers sharing this machine's {cores} cores"
        elif local:
            where = f"the dask path on {run_on} thread{'s' if run_on > 1 else ''} of this machine"
        elif threads < 1:  # (the work waits for workers to join)
            where = "one worker thread at this machine's speed (the cluster has no worker yet)"
        else:
            where = f"the cluster's {threads} worker thread{'s' if threads > 1 else ''} at this machine's speed per core"
    else:
        def estimate(n, loops=None):
            return estimate_seconds(name, n, n_features, n_neighbors=k, loops=loops)

        where = "this machine"
    seconds = estimate(n_samples)
    if seconds < _COST_NOTE_SECONDS:
        return None
    sample, guess = n_samples, seconds
    for _ in range(8):  # time grows as n² for one loop, less for the neighbour search at large k; a smaller sample may
        # run on other loops (the neighbour search)
        sample = max(2, int(sample * math.sqrt(_COST_NOTE_SECONDS / guess)))
        guess = estimate(sample)
    # a sample the metric accepts: more rows than the search's neighbours (TwoNN's 2, MLE's k), and 3 at least
    fewest = max(3, (k or 2) + 1) if name in _ONE_PASS else 2
    sample = max(fewest, int(float(f"{sample:.2g}")))
    subject = f"{name} compares" if names is None else f"{' and '.join(names)} compare (one neighbour search)"
    advice = []
    if sample < n_samples:  # (on the dask path the sample is measured there too)
        advice.append(f"--sample-size {sample} takes about {format_duration(max(_COST_NOTE_SECONDS, estimate(sample)))}")
    # (a cluster's workers follow their own installation: numba here says nothing of theirs)
    compiled = (estimate(n_samples, loops="compiled") if name in _ONE_PASS and (not distributed or distributed[1])
                and numba_would_run(n_samples, n_features, k or 2) else math.inf)
    if compiled <= _NUMBA_ADVICE * seconds:  # the numpy loops for want of numba, and the compiled ones much faster
        advice.append(f"with numba ({extra_command('fast')}) all rows take about {format_duration(compiled)}")
    if not distributed:
        # a cluster's cores, not --workers N: local workers share this machine's cores, and the same search ran slower
        # on 2 local workers than in memory (a user trial)
        advice.append("for all rows sooner, the distributed path on a dask cluster with more cores "
                      "(--scheduler ADDRESS)")
    advice = "; ".join(advice)
    return (f"Note: {subject} all {n_samples} x {n_samples} pairs (O(n²)): about {format_duration(seconds)} on "
            f"{where}." + (f" {advice[0].upper()}{advice[1:]}." if advice else ""))


# the neighbour-distance dimension estimators, whose value under --metric cosine is about half the sphere's dimension
_COSINE_HALVES = {"twonn_dimension", "mle_dimension"}
_COSINE_NOTE = ("the cosine distance 1 - cos grows as the square of the angle between near neighbours, so the "
                "estimate is about half the dimension the rows have on the unit sphere; for that dimension, measure "
                "the normalised rows with --metric euclidean.")


# cluster metrics defined by centroids in euclidean space (Calinski-Harabasz, Davies-Bouldin): no --metric
_EUCLIDEAN_NOTE = ("defined by the clusters' centroids in euclidean space, so computed with the euclidean distance "
                   "whatever --metric says; for the cosine geometry, measure the normalised rows.")


def _euclidean_only(metric_names) -> list[str]:
    """The cluster metrics of ``metric_names`` that take no distance (``--metric`` does not apply to them)."""
    import inspect

    return [name for name in metric_names if METRICS[name].needs_labels
            and "metric" not in inspect.signature(METRICS[name].function).parameters]


def _isoscore_star_note(metric_names, *, has_shrinkage, default_table) -> str | None:
    """The IsoScore* rule: a note when a default table leaves it out, a warning when it is asked for without Σ_S.

    Returns the note (the JSON's ``left_out`` reason) when the table leaves it out, else ``None``.
    """
    if has_shrinkage:
        return None
    if default_table and "isoscore_star" not in metric_names:
        left_out = f"{_table.ISOSCORE_STAR_NOTE} (--shrinkage-sample)"
        note(f"{left_out}.")
        return left_out
    if "isoscore_star" in metric_names:
        click.echo(f"Warning: {_table.ISOSCORE_STAR_WARNING} (--shrinkage-sample).", err=True)
    return None


def shrinkage_covariance(spec, X_full, *, key, random_state, n_features, inherited=False):
    """``(Σ_S, rows)`` of ``--shrinkage-sample``: the covariance of ``spec`` rows drawn from ``X_full``, or of a file's
    rows, and how many rows it is of.

    ``spec`` is an int N (N rows drawn without replacement, seeded by ``random_state``, from all rows
    of EMBEDDINGS, whether or not ``--sample-size`` measures fewer) or a path to an embeddings file
    of the same width (its array ``key``, ``--shrinkage-key``, where it holds several: an ``.npz``, ``.pt``, ...).
    ``X_full`` is the whole input (numpy, memory map or dask). ``inherited``: ``key`` is the ``--key`` of EMBEDDINGS
    (no ``--shrinkage-key`` was given), which a refusal then says.
    """
    import numpy as np

    from isotropy._utils.backend import is_dask
    from isotropy._utils.sampling import subsample_indices
    from isotropy.metrics.covariance import CovarianceAccumulator

    if isinstance(spec, int):
        n_rows = X_full.shape[0]
        if spec >= n_rows:  # as --sample-size: a note, every row (an error before, where --sample-size was a note)
            note(f"--shrinkage-sample {spec} is not below the {n_rows} rows of EMBEDDINGS: Σ_S is the "
                 f"covariance of every row (with every row measured, that of the rows measured: isoscore_star is "
                 f"then isoscore).")
        rows = subsample_indices(n_rows, spec, random_state=[random_state, 1])
        S = X_full[rows]
        S = S.compute() if is_dask(S) else S
    else:
        from isotropy.io.embeddings import read_embeddings, takes_key

        if key is not None and not takes_key(spec):  # read_embeddings would name --key, the option of EMBEDDINGS
            raise InputError(f"--shrinkage-key {key!r}: --shrinkage-sample {str(spec)!r} is no container of several "
                             f"arrays (.npz, .pt, .safetensors, .parquet); leave --shrinkage-key out.")
        try:
            S, _ = _guard(read_embeddings, spec, key=key)
        except InputError as exc:  # which option's file it is ("tx.txt:1: expected a word vector" named none)
            tried = (f" (--key {key!r}, the array of EMBEDDINGS, was tried in it: give --shrinkage-key K for this file)"
                     if inherited else "")
            raise InputError(f"--shrinkage-sample: {_shrinkage_words(str(exc)).rstrip('.')}{tried}.") from None
        if S.ndim != 2 or S.shape[1] != n_features or S.shape[0] < 2:
            raise InputError(f"--shrinkage-sample {str(spec)!r} has shape {tuple(S.shape)}; expected at least 2 rows "
                             f"of {n_features} features, like EMBEDDINGS.")
    S = np.asarray(S)
    _refuse_shrinkage_rows(S, spec, rows if isinstance(spec, int) else None)
    accumulator = _guard(CovarianceAccumulator().update, S)
    return _guard(accumulator.covariance), int(S.shape[0])


def _refuse_shrinkage_rows(S, spec, rows=None) -> None:
    """Refuse a ``--shrinkage-sample`` whose rows hold a NaN or inf, or are all one point (a zero Σ_S), in the option's
    words: the covariance accumulator and isoscore_star named their own parameters ('X_chunk' of
    CovarianceAccumulator.update, 'shrinkage_cov' of isoscore_star), neither the option nor its file (a user trial).
    ``spec``: the option's value (a row count drawn from EMBEDDINGS, or a file); ``rows``: the rows drawn, for a count.
    """
    import numpy as np

    from isotropy._kernels.rows import all_rows_equal
    from isotropy._utils.validation import first_nonfinite

    drawn = isinstance(spec, int)
    whose = f"--shrinkage-sample {spec}" if drawn else f"--shrinkage-sample {str(spec)!r}"
    found = None if np.isfinite(S.min()) and np.isfinite(S.max()) else first_nonfinite(S)
    if found is not None:
        where = f"drew a non-finite value of EMBEDDINGS, {found.at(int(rows[found.row]))}" if drawn else \
            f"has a non-finite value {found.at()} (rows counted from 0)"
        raise InputError(f"{whose} {where}; expected finite numbers (no NaN or inf).")
    if all_rows_equal(S):  # (a block at a time: no boolean array of S's size)
        what = f"its {S.shape[0]} rows drawn from EMBEDDINGS" if drawn else f"its {S.shape[0]} rows"
        raise InputError(f"{whose}: {what} are all the same point, so Σ_S, their covariance, is the zero matrix; "
                         f"expected rows that vary, such as a larger sample of the embeddings.")


def _shrinkage_words(message: str) -> str:
    """A reader's message about a --shrinkage-sample container in that file's option's words: its array is picked by
    --shrinkage-key (read_embeddings' own messages say key= or --key, the option of EMBEDDINGS)."""
    import re

    return re.sub(r"--key\b|\bkey=", lambda m: "--shrinkage-key" + (" " if m.group().endswith("=") else ""), message)


def value_text(metric: str, value: float, digits: int) -> str:
    """A metric's value in a printed table, ``digits`` significant digits; I(W), which is positive, as ``<5e-324``
    where it underflowed to 0.0 (min Z / max Z below float64's smallest number, as on Gemma's middle layers)."""
    if metric == "partition_isotropy" and value == 0.0:
        return "<5e-324"
    return f"{value:.{digits}g}"


def _json_float(value: float):
    return value if math.isfinite(value) else None
