"""Plumbing shared by the dask implementations: input checks, tree reductions, computing with progress.

Every function here imports dask inside its body: importing :mod:`isotropy.distributed` costs
nothing until a dask array is actually handed over.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import numbers
import sys
import threading

import numpy as np

from isotropy._utils.errors import IsotropyTypeError
from isotropy._utils.validation import IsotropyValueError, check_labels, check_scalar, native_float

# Rows per block of the tiled (pairwise) computations: a 4096 x 4096 float32 tile is 64 MiB.
DEFAULT_TILE_ROWS = 4096
# Rows per block of the neighbour tiles. Their kernel scores 512 x 1024 at a time (no b x b product is held),
# and what a tile does per row beyond its products (first thresholds that start from nothing, the exact
# distances of its candidates) is a share of the tile that halves as b doubles: an MLE tile (k = 20, d = 384)
# ran at 1.95 of its floor at 4096 rows, 1.55 at 8192 and 1.34 at 16,384 (one thread; bench_dask.py --tile-sweep,
# docs/scaling.md). 8192 keeps a tile's blocks at 12 MiB each (float32, d = 384) and n = 100,000 at 91 tiles.
NEIGHBOUR_TILE_ROWS = 8192
_TILE_BLOCK_BYTES = 32 * 2**20  # wide data: fewer rows per tile, so that a tile's blocks stay small
# Rows per chunk of the streaming (covariance) computations when the input's chunks are wider.
_STREAM_ELEMENTS = 1 << 24  # 128 MiB of float64 per chunk
# Chunks smaller than this on average (1 MiB of float32) are joined into chunks of _STREAM_ELEMENTS before a
# streaming metric runs: a task costs the scheduler milliseconds whatever its size, so an array of many
# one-row shards spent its time on tasks, not on rows (500 chunks of 8 x 96: isoscore 12.7 s, 4.2 s joined).
_SMALL_CHUNK_ELEMENTS = 1 << 18

_PROGRESS = contextvars.ContextVar("isotropy_distributed_progress", default=False)


@contextlib.contextmanager
def show_progress(enabled: bool = True):
    """Within this block, distributed computations show a progress bar on stderr.

    With a ``dask.distributed`` client active the bar is ``distributed.progress`` (it follows
    the tasks on the cluster); otherwise ``dask.diagnostics.ProgressBar``.
    """
    token = _PROGRESS.set(bool(enabled))
    try:
        yield
    finally:
        _PROGRESS.reset(token)


def _active_client():
    """The ``dask.distributed`` client in use, or None (never imports distributed itself)."""
    import sys

    if "distributed" not in sys.modules:
        return None
    from distributed import default_client

    try:
        return default_client()
    except ValueError:
        return None


def compute(*collections):
    """``dask.compute`` on the active scheduler, with a progress bar inside :func:`show_progress`.

    Without dask's low-level task fusion: a metric makes several computes over the same array, and fusion
    renamed a shared task after whichever chain it joined in each graph, so the scheduler saw one key with
    two definitions and logged "Detected different `run_spec`" (dask/dask#9888). The tasks here are tiles
    of many rows each, for which fusing saves nothing measurable. The graphs are optimised here, under a lock
    (``dask.config.set`` changes the process's configuration: two threads setting and restoring it at once
    could leave fusion off for every later compute of the user's), and computed as they are.
    """
    import dask

    with _FUSION_OFF, dask.config.set({"optimization.fuse.active": False}):
        collections = dask.optimize(*collections)
    return _compute(collections)


_FUSION_OFF = threading.Lock()


def _compute(collections):
    """The computation, its progress shown as asked: dask's bars (:func:`show_progress`), or the tasks done reported
    to the caller's :func:`isotropy._utils.progress.reporting` callback (``isotropy measure --progress`` into a log
    file), or nothing.

    The tiles run the in-memory kernels with no reporter: a kernel's blocks reported to the caller's as if they were
    the whole metric's, 0 to 100 % once per tile from several threads at once (hundreds of interleaved lines in a
    user's log), and nothing at all from worker processes. The tasks of the graph are what is reported instead.
    """
    from isotropy._utils.progress import current, reporting

    reporter = None if _PROGRESS.get() else current()
    with reporting(None):
        return aligned(_compute_showing(collections, reporter))


def aligned(value):
    """``value`` with each numpy array in it (also inside tuples, lists and dicts) at an address its dtype aligns to.

    dask.distributed hands over an array received from a worker as a view of the message's bytes, at any address:
    float64 results reached the client at addresses 1 or 2 past a multiple of 8 (``flags.aligned`` False). numpy
    reduces an unaligned array with other loops than an aligned one, which sum in another order: the mean of the same
    local MLE estimates differed in its last bits between runs (10.394182229907683 or ...685) and from the in-memory
    value (...685). An unaligned array is copied (numpy allocates aligned memory); an aligned one is returned as is.
    """
    if isinstance(value, np.ndarray):
        return value if value.flags.aligned else np.array(value, copy=True)
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(aligned(item) for item in value)
    if isinstance(value, list):
        return [aligned(item) for item in value]
    if isinstance(value, dict):
        return {key: aligned(item) for key, item in value.items()}
    return value


def aligned_arguments(task):
    """Decorator: ``task`` runs on its array arguments :func:`aligned` (also inside tuples, lists and dicts).

    A task on a dask.distributed worker receives an array computed on another worker as a view of the message's bytes,
    at any address (a float64 block arrived 3 bytes past a multiple of 8). numpy runs a matrix product, or a sum of a
    whole array, on an unaligned array with other loops, which sum in another order: I(W)'s Gram ``BᵀB`` of a
    300 x 12 float64 chunk differed in 44 of its 144 entries (by up to 1.1e-13 of 2853) with the chunk's address, so
    the value of a metric depended on which worker had computed what. The tasks that compute on arrays are decorated
    (those that only compare values, NaN checks, maxima and hashes, or join arrays into new ones, need not be): their
    arrays are copied when unaligned (an aligned one is used as is), so that a result is the same bits wherever its
    inputs were computed (``tests/test_distributed_alignment.py`` hands every task its inputs unaligned). Most tasks
    copy, cast or centre their inputs before any sum, and gave the same bits unaligned; decorating them all keeps a
    later change from depending on that. Applied where the function is defined, so that it pickles by reference.
    """

    @functools.wraps(task)
    def run(*args, **kwargs):
        return task(*aligned(args), **aligned(kwargs))

    return run


def _compute_showing(collections, reporter):
    import dask

    if not _PROGRESS.get():
        if reporter is None:
            return dask.compute(*collections, optimize_graph=False)
        client = _active_client()
        if client is None:
            with _TasksDone(reporter):
                return dask.compute(*collections, optimize_graph=False)
        futures = client.compute(list(collections), optimize_graph=False)
        # progress is a courtesy: a scheduler that refuses its feed (pickled code turned off) still computes, and the
        # gather below gives the results or their error
        with contextlib.suppress(Exception):
            _follow(futures, reporter)
        return tuple(client.gather(futures))
    client = _active_client()
    terminal = _stderr().isatty()
    if client is not None:
        from distributed import progress

        futures = client.compute(list(collections), optimize_graph=False)
        if terminal:
            with contextlib.redirect_stdout(_stderr()):  # the console bar writes to stdout: keep stdout for results
                progress(futures, multi=False)
        else:  # a log file: whole lines, not a bar redrawn with '\r'
            print("dask: computing on the cluster ...", file=_stderr(), flush=True)
        results = tuple(client.gather(futures))
        if not terminal:
            print("dask: done", file=_stderr(), flush=True)
        return results
    if not terminal:
        with _TasksDone(_tenths_printed()):
            return dask.compute(*collections, optimize_graph=False)
    from dask.diagnostics import ProgressBar

    with ProgressBar(out=_stderr()):
        return dask.compute(*collections, optimize_graph=False)


def _tenths_printed():
    """A reporter writing one line per tenth of the tasks done: a log file's progress (graphs of fewer than 50 tasks,
    done in moments, write nothing)."""
    last = [0]

    def report(done, total):
        tenth = 10 * done // total
        if tenth > last[0] and total >= 50:
            last[0] = tenth
            print(f"dask: {10 * tenth}% of {total} tasks", file=_stderr(), flush=True)

    return report


class _TasksDone:
    """Context manager: ``reporter(done, total)`` as the tasks of a local scheduler's graph finish (in the thread that
    computes)."""

    def __init__(self, reporter):
        self._reporter = reporter

    def __enter__(self):
        from dask.callbacks import Callback

        reporter = self._reporter

        class TasksDone(Callback):
            def _start_state(self, dsk, state):
                self._total = sum(len(state[key]) for key in ("ready", "waiting", "running", "finished"))
                self._done = 0

            def _posttask(self, key, result, dsk, state, worker_id):
                self._done += 1
                reporter(min(self._done, self._total), max(self._total, 1))

        self._callback = TasksDone()
        self._callback.__enter__()
        return self

    def __exit__(self, *exc):
        return self._callback.__exit__(*exc)


def _follow(futures, reporter) -> None:
    """``reporter(done, total)`` as the scheduler reports the tasks behind ``futures`` done (every 100 ms), until they
    are all done or one fails (its error comes with the gather that follows)."""
    from distributed.diagnostics.progressbar import TextProgressBar

    class TasksDone(TextProgressBar):  # distributed's text bar, its drawing replaced (it listens to the scheduler)
        def _draw_bar(self, remaining, all, **kwargs):
            if all:
                reporter(all - remaining, all)

        def _draw_stop(self, **kwargs):
            return None

    TasksDone(futures, complete=True)


def _stderr():
    import sys

    return sys.stderr


def tree_reduce(items, combine, *, name):
    """Combine delayed ``items`` pairwise, level by level: depth log2(len(items)), no single fan-in."""
    from dask import delayed

    merge = delayed(combine, pure=True, name=name)
    items = list(items)
    while len(items) > 1:
        paired = [merge(items[k], items[k + 1]) for k in range(0, len(items) - 1, 2)]
        if len(items) % 2:
            paired.append(items[-1])
        items = paired
    return items[0]


def row_chunks(X, *, caller: str) -> tuple:
    """``X.chunks[0]`` of a dask array; anything else refused in one line (the in-memory function takes it)."""
    from isotropy._utils.backend import is_dask

    if not is_dask(X):
        raise IsotropyTypeError(f"The 'X' parameter of isotropy.distributed.{caller} must be a dask array. Got "
                                 f"{type(X).__module__.split('.')[0]}.{type(X).__name__} instead (the metrics of the "
                                 f"isotropy package take in-memory arrays and dask arrays alike).")
    return X.chunks[0]


def check_dask_shape(X, *, caller: str, name: str = "X", min_samples: int = 2, min_features: int = 1,
                     allow_unknown_rows: bool = False):
    """The metadata checks of :func:`isotropy._utils.validation.check_X` on a dask array, in its words: 2-d, known
    chunk sizes (``allow_unknown_rows``: a row count of NaN, a masked array's, is taken and its rows not counted
    here), real numbers (integers and booleans as float64, float16 as float32; complex and object refused: a
    complex array's imaginary part was silently dropped by ``astype``), at least ``min_samples`` rows and
    ``min_features`` columns. Returns ``X``, cast where needed; its values are not read."""
    shape = tuple(X.shape)
    if len(shape) != 2:
        raise IsotropyValueError(f"The '{name}' parameter of {caller} must be a 2-d array of shape (n_samples, "
                                 f"n_features). Got an array with shape {shape} instead.")
    unknown = [isinstance(s, float) and math.isnan(s) for s in shape]  # unknown chunk sizes
    if unknown[1] or (unknown[0] and not allow_unknown_rows):
        raise IsotropyValueError(f"The '{name}' parameter of {caller} must be a dask array with known chunk sizes. "
                                 f"Got shape {shape} instead (call {name}.compute_chunk_sizes() first).")
    if X.dtype.kind in "biu":
        X = X.astype(np.float64)
    elif X.dtype.kind != "f":
        raise TypeError(f"The '{name}' parameter of {caller} must be a real-valued array. Got dtype {X.dtype} "
                        f"instead.")
    elif X.dtype.itemsize < 4:
        X = X.astype(np.float32)
    elif X.dtype != native_float(X.dtype):  # big-endian or extended precision: computed as float32 before
        X = X.astype(native_float(X.dtype))
    if not unknown[0] and shape[0] < min_samples:
        raise IsotropyValueError(f"The '{name}' parameter of {caller} must have at least {min_samples} "
                                 f"{'sample (row)' if min_samples == 1 else 'samples (rows)'}. Got {shape[0]} instead.")
    if shape[1] < min_features:
        raise IsotropyValueError(f"The '{name}' parameter of {caller} must have at least {min_features} "
                                 f"{'feature (column)' if min_features == 1 else 'features (columns)'}. Got {shape[1]} "
                                 f"instead.")
    return X


def check_dask_X(X, *, caller: str, min_samples: int = 2, min_features: int = 1, rows: int | None = None):
    """Check a dask array of shape (n_samples, n_features); return it row-chunked (one column chunk).

    Same messages as :func:`isotropy._utils.validation.check_X` (:func:`check_dask_shape`). Finiteness is checked
    chunk by chunk when the chunks are computed (:func:`finite_blocks`). ``rows`` rechunks to that many rows per
    chunk (the tile size of the pairwise computations). Anything but a dask array is refused
    (:func:`row_chunks`).
    """
    row_chunks(X, caller=caller)
    X = check_dask_shape(X, caller=caller, min_samples=min_samples, min_features=min_features)
    shape = X.shape
    if rows is None:
        rows = max(1, _STREAM_ELEMENTS // max(1, shape[1]))
        small = len(X.chunks[0]) > 1 and shape[0] * shape[1] < len(X.chunks[0]) * _SMALL_CHUNK_ELEMENTS
        if len(X.chunks[1]) == 1 and max(X.chunks[0]) <= rows and not small:
            return X
    return X.rechunk({0: rows, 1: -1})


@aligned_arguments
def _finite_block(block, caller, start):
    """``block`` (rows ``start`` on of the whole array) when all finite; else its first NaN/inf, by global row."""
    from isotropy._utils.validation import first_nonfinite

    found = first_nonfinite(block)
    if found is not None:
        raise IsotropyValueError(f"The 'X' parameter of {caller} must contain only finite values. "
                                 f"Got {found.at(start + found.row)} instead.")
    return block


def nonfinite_in(B, start):
    """The first NaN/inf of the numpy block ``B`` (rows ``start`` on), its row counted in the whole array; or None.

    For checks whose result is returned as data and refused on the client (:func:`refuse_nonfinite`): no task fails
    on a worker, and the first in row order is named, as in memory.
    """
    from isotropy._utils.validation import first_nonfinite

    if not B.size or (np.isfinite(B.min()) and np.isfinite(B.max())):  # a NaN propagates through both, an inf is one
        return None
    found = first_nonfinite(B)
    return found._replace(row=start + found.row)


def refuse_nonfinite(found, caller):
    """Raise the in-memory message for the first (by row) of the NaN/inf the chunks found (:func:`nonfinite_in`)."""
    if found:
        first = min(found, key=lambda f: f.row)
        raise IsotropyValueError(f"The 'X' parameter of {caller} must contain only finite values. Got {first.at()} "
                                 f"instead.")


def finite_blocks(X, caller):
    """The row blocks of ``X`` as delayed numpy arrays, each checked for NaN/inf when computed."""
    from dask import delayed

    check = delayed(_finite_block, pure=True)
    starts = np.cumsum((0, *X.chunks[0]))
    return [check(block, caller, int(start)) for block, start in zip(X.to_delayed().ravel(), starts)]


@aligned_arguments
def _finite_block_top(block, caller, start):
    """``(block, max|x|)`` of a block checked for NaN/inf (as :func:`_finite_block`); ``max|x|`` is 0.0 for an empty block.

    The block's minimum and maximum are the check: a NaN propagates through both, an inf is one of them
    (as :func:`isotropy._utils.validation.check_X` checks in memory); only a block that fails it is searched
    for its first NaN/inf, for the message. Two reads of the block (min and max), where the plain check makes one.
    """
    B = np.asarray(block)
    if not B.size:
        return block, 0.0
    low, high = float(B.min()), float(B.max())
    if not (np.isfinite(low) and np.isfinite(high)):
        _finite_block(block, caller, start)  # raises, naming the first NaN/inf by its global row
    return block, max(-low, high)


def _unit_exponent(dtype, caller, target, *tops):
    from isotropy._utils.magnitude import unit_exponent

    return unit_exponent(max(tops, default=0.0), dtype, caller=caller, target=target)


def unit_blocks(X, caller, *, neighbours: bool = False):
    """:func:`finite_blocks`, and a delayed ``e`` that brings ``X`` to unit scale: ``X·2**-e`` (:func:`at_unit_scale`).

    ``e`` is the exponent the in-memory functions rescale the materialised array by
    (:func:`isotropy._utils.magnitude.rescaled`: 0 at a safe scale), so the scale-invariant metrics computed
    on the blocks times ``2**-e`` are those of the in-memory function, also near float64's or float32's
    limits. The largest ``|x|`` of each block is read in the task that checks it for NaN/inf (it holds the
    block already): no pass of its own over the shards, and the consumers of the blocks in the same graph
    take ``e`` with them (one small reduction of n_blocks floats ahead of them). ``neighbours``: the scale of the
    in-memory neighbour searches (:func:`isotropy._utils.magnitude.neighbour_target`), not unit scale.
    """
    from dask import delayed

    from isotropy._utils.magnitude import neighbour_target

    check = delayed(_finite_block_top, pure=True, nout=2)
    starts = np.cumsum((0, *X.chunks[0]))
    pairs = [check(block, caller, int(start)) for block, start in zip(X.to_delayed().ravel(), starts)]
    # one task takes the n_blocks floats at once, as separate arguments (a tree of max tasks, or a list argument,
    # cost more to build and schedule than the floats cost to send)
    target = neighbour_target(np.dtype(X.dtype)) if neighbours else 0
    exponent = delayed(_unit_exponent, pure=True)(X.dtype.str, caller, target, *(pair[1] for pair in pairs))
    return [pair[0] for pair in pairs], exponent


def at_unit_scale(block, exponent):
    """The numpy block times ``2**-exponent`` (exact: a power of two), in its dtype; the block as is for 0."""
    from isotropy._utils.magnitude import times_power_of_two

    return times_power_of_two(np.asarray(block), -exponent)


def at_metric_scale(block, exponent, metric):
    """The numpy block ready for ``metric``: each row at its own unit scale for the cosine metric, where it must be
    (:func:`isotropy._utils.magnitude.directions_at_unit_scale`, as the in-memory cosine metrics; ``exponent`` is
    not read), else :func:`at_unit_scale`."""
    if metric == "cosine":
        from isotropy._utils.magnitude import directions_at_unit_scale

        return directions_at_unit_scale(np.asarray(block))
    return at_unit_scale(block, exponent)


def exponent_as_given(exponent, blocks, given, dtype, caller):
    """:func:`unit_blocks`' exponent ``e`` of the checked ``blocks`` (of ``dtype``), which first refuses, when ``X`` came
    in a narrower float dtype ``given`` (float16, read as float32: :func:`check_dask_shape`), data whose largest ``|x|``
    is subnormal in that dtype, as the in-memory functions refuse them (float16 data of 1e-6 gave a TwoNN of 5.64 on
    dask, an error in memory); ``e`` itself otherwise. The blocks' maxima are read again only in that case."""
    top = largest_as_given(blocks, given, dtype)
    if top is None:
        return exponent
    from dask import delayed

    return delayed(_refuse_subnormal_as_given, pure=True)(exponent, np.dtype(given).str, np.dtype(dtype).str, caller,
                                                          top)


def largest_as_given(blocks, given, dtype):
    """A delayed ``max|x|`` of the checked ``blocks`` (of ``dtype``) when ``X`` came in a narrower float dtype ``given``
    (float16, read as float32), for :func:`isotropy._utils.validation.refuse_subnormal_as_given`; None otherwise (no
    task: the blocks are read for it only in that case, in the graph that reads them anyway)."""
    from isotropy._utils.validation import _narrower_float

    if _narrower_float(given, dtype) is None:
        return None
    from dask import delayed

    return delayed(_largest, pure=True)(*[delayed(_largest_magnitude, pure=True)(block) for block in blocks])


def _largest(*tops) -> float:
    return max(tops, default=0.0)


def _largest_magnitude(block) -> float:
    B = np.asarray(block)
    return float(max(-B.min(), B.max())) if B.size else 0.0


def _refuse_subnormal_as_given(exponent, given, dtype, caller, top):
    from isotropy._utils.validation import refuse_subnormal_as_given

    refuse_subnormal_as_given(np.dtype(given), np.empty(0, dtype=dtype), caller=caller, top=top)
    return exponent


def row_starts(X):
    """First row of every row chunk, and n_samples last."""
    return [int(s) for s in np.cumsum((0, *X.chunks[0]))]


def like_rows(result, rows):
    """The per-sample dask array ``result`` rechunked to the row chunks ``rows`` of the input (``X.chunks[0]``).

    The graph computes a result per tile row block; handing it back in the input's row chunks is a
    lazy rechunk (slices and joins of those blocks), so that it lines up chunk for chunk with ``X``.
    """
    return result.rechunk({0: rows, **{axis: -1 for axis in range(1, result.ndim)}})


def host_labels(labels, X, caller):
    """Integer cluster ids (numpy, n_samples) from labels given as numpy, a list or a dask array.

    The dask array ``X`` is checked first (its shape: at least 2 samples), as the in-memory functions check
    ``X`` before the labels: one row got the labels' "between 2 and n_samples - 1 = -1 clusters".
    """
    from isotropy._utils.backend import is_dask

    check_dask_X(X, caller=caller)
    if is_dask(labels):
        labels = labels.compute()
    return check_labels(labels, n_samples=X.shape[0], caller=caller)


def check_tile_rows(chunk_size, caller, n_features, *, default=DEFAULT_TILE_ROWS):
    """Rows per tile: ``chunk_size``, or ``default`` rows, fewer for wide data (a block of at most ~32 MiB in float64)."""
    check_scalar(chunk_size, "chunk_size", caller=caller, kind=numbers.Integral, low=1, allow_none=True)
    if chunk_size is not None:
        # more rows than any array has is one tile of all the rows; from 2**64 on dask's rechunk raised numpy's
        # "ufunc 'isnan' not supported" (its chunk sums are numpy ints): capped, the same tiles for every such value
        return min(int(chunk_size), sys.maxsize)
    return int(min(default, max(256, _TILE_BLOCK_BYTES // (8 * max(1, n_features)))))


def sample_rows(X, ids, sample_size, random_state, caller):
    """The seeded subsample of :func:`isotropy.silhouette_score`: the same rows for the same seed."""
    from isotropy._kernels.silhouette import _sample_indices, sampled_ids

    # more than the rows: every row, permuted as scikit-learn permutes them (its permutation(n)[:sample_size])
    check_scalar(sample_size, "sample_size", caller=caller, kind=numbers.Integral, low=3, allow_none=True)
    n = X.shape[0]
    indices = np.sort(_sample_indices(n, min(int(sample_size), n), random_state, caller))
    # every row checked first, as in memory (check_X of the whole array): drawn first, a NaN in a row not drawn was
    # taken, and one drawn was named by its place in the sample (a user trial)
    from dask import delayed

    from isotropy._utils.validation import refuse_subnormal_as_given

    given = X.dtype
    X = check_dask_shape(X, caller=caller, min_samples=3)
    starts = np.cumsum((0, *X.chunks[0]))
    blocks = X.rechunk({1: -1}).to_delayed().ravel()
    found = [delayed(nonfinite_in, pure=True)(block, int(start)) for block, start in zip(blocks, starts)]
    # float16 judged in float16 on the whole array too, as in memory (the sample drawn is float32); no None handed to
    # compute (a client's progress feed waited for it as for a future)
    top = largest_as_given(blocks, given, X.dtype)
    *found, top = compute(*found, top) if top is not None else (*compute(*found), None)
    refuse_nonfinite([f for f in found if f is not None], caller)
    if top is not None:
        refuse_subnormal_as_given(given, X, caller=caller, top=top)
    X = X[indices]
    if ids is None:
        return X, None
    return X, sampled_ids(ids, indices, n, caller)
