"""``isotropy measure`` on sharded data or on a dask cluster (``--scheduler`` / ``--workers``).

The command's options, table and JSON are those of :mod:`isotropy.measure.command` (:mod:`isotropy.measure.report`); this module opens
the cluster, reads the embeddings lazily (:func:`isotropy.io.shards.read_shards`) and hands the
dask array to the same metric functions, which dispatch to :mod:`isotropy.distributed`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import sys
import warnings

__all__ = ["MIN_WORKER_MEMORY", "open_cluster", "run"]


def _chunks(count: int) -> str:
    """``1 chunk``, ``3 chunks``: the header's count of the dask array's row chunks."""
    return f"{count} chunk" if count == 1 else f"{count} chunks"


# dask's own key for how long a client tries to reach a scheduler, and the environment variable that sets it
_CONNECT_KEY = "distributed.comm.timeouts.connect"
_CONNECT_VARIABLE = "DASK_" + _CONNECT_KEY.upper().replace(".", "__").replace("-", "_")


def connect_timeout() -> float:
    """Seconds ``--scheduler`` tries to reach its address: dask's config key ``distributed.comm.timeouts.connect`` (30 s)."""
    import dask
    from dask.utils import parse_timedelta

    value = dask.config.get(_CONNECT_KEY, "30s")
    try:
        seconds = float(parse_timedelta(value, default="seconds"))
    except (ValueError, TypeError, KeyError):
        seconds = -1.0
    if not seconds > 0:
        from isotropy.measure.report import InputError

        raise InputError(f"The dask config key {_CONNECT_KEY} is {value!r}; expected a positive duration such as "
                         f"'30s' (environment {_CONNECT_VARIABLE}).")
    return seconds


def check_scheduler_address(address: str) -> None:
    """Refuse an address dask cannot connect to whatever the wait (no port, an unknown scheme, a port out of range)."""
    from distributed.comm import registry
    from distributed.comm.addressing import parse_address, parse_host_port

    from isotropy.measure.report import InputError

    expected = "expected an address such as tcp://host:8786"
    try:
        scheme, location = parse_address(address)
        if scheme not in registry.backends:
            raise ValueError(f"unknown scheme {scheme!r} (dask knows {', '.join(sorted(registry.backends))})")
        if scheme in ("tcp", "tls", "ws", "wss"):
            port = parse_host_port(location)[1]
            if not 0 < int(port) < 65536:
                raise ValueError(f"port {port} is out of range (1 to 65535)")
    except (ValueError, TypeError) as exc:
        raise InputError(f"--scheduler {address!r}: {' '.join(str(exc).split())}; {expected}.") from None


@contextlib.contextmanager
def open_cluster(scheduler: str | None, workers: int | None, memory_limit: int | str | None = None):
    """Yield a description of where the work runs: a client of ``scheduler``, a LocalCluster of
    ``workers`` processes, or dask's default (threaded) scheduler when both are None.

    A LocalCluster's per-worker memory is ``memory_limit`` (bytes, or ``"auto"``; ``isotropy measure
    --memory-limit``), else the dask config key ``isotropy.memory-limit`` (environment
    ``DASK_ISOTROPY__MEMORY_LIMIT``, e.g. ``2GB``), else ``"auto"``: the machine's memory divided
    among the workers (:func:`_divided`). The description holds ``memory_limit``, the workers' limit in bytes as the
    scheduler reports it (None for the threaded scheduler, or for workers of differing or no limits), and ``threads``:
    ``(the tiles run at once, whether they share this machine's cores)``, with ``True`` after them on dask's threaded
    scheduler (the tiles run in this process), for the O(n²) notes
    (:func:`isotropy._kernels.cost.estimate_tiled_seconds`).
    """
    from isotropy._kernels.silhouette import _cores

    if scheduler is None and workers is None:
        # dask's threads, one per core, each tile's kernel on its own threads as in memory: this machine's cores
        yield {"scheduler": "threads (dask default)", "workers": None, "memory_limit": None,
               "threads": (_cores(), True, True)}
        return
    import dask
    from dask.utils import format_bytes
    from distributed import Client, LocalCluster

    # this machine's speed for the O(n²) notes, measured before any work starts here (once per process, about 120 ms).
    # Measured after it, it read the cores while the new local worker processes imported dask, numpy and isotropy, up
    # to 3 times slower: the note of TwoNN and MLE on 80,000 rows said 73 s for a search of 39 s (26 s and 29 s for
    # TwoNN alone in the run before it); and, with --scheduler, at the first note, while the workers of a cluster on
    # this machine were reading the input the command had just asked them to hold: 54-78 s for a search of 31 s, in 3
    # of 3 runs right after another command (benchmarks: docs/benchmarks.md, the O(n²) notes on the dask path)
    from isotropy._kernels.cost import machine_speed

    machine_speed()
    # a Ctrl-C ends the client's pending gathers with AllExit while the command writes its JSON, and asyncio's "Task
    # exception was never retrieved" with a traceback followed the command's one line: that record only is dropped
    asyncio_log = logging.getLogger("asyncio")
    if scheduler is not None:
        seconds = connect_timeout()
        _check_is_scheduler(scheduler, seconds)
        asyncio_log.addFilter(_unretrieved_exit)
        try:
            with Client(scheduler, timeout=seconds) as client:
                found = client.scheduler_info(n_workers=-1)["workers"]
                yield {"scheduler": scheduler, "workers": len(found), "memory_limit": _one_limit(found),
                       "threads": (sum(int(w.get("nthreads") or 1) for w in found.values()), False)}
        finally:
            asyncio_log.removeFilter(_unretrieved_exit)
        return
    limit = memory_limit if memory_limit is not None else dask.config.get("isotropy.memory-limit", "auto")
    limit = _divided(workers) if isinstance(limit, str) and limit.strip().lower() == "auto" else limit
    # silence_logs: a task that fails (bad data in a shard) reaches the user once, as the one-line error of the
    # command; the workers' own log of it (a traceback per failed task) would come before that line
    # the worker processes start with Ctrl-C blocked (inherited by them); one pressed meanwhile is acted on after it
    cluster = _start_shielded_from_ctrl_c(functools.partial(
        LocalCluster, n_workers=workers, processes=True, threads_per_worker=1, memory_limit=limit,
        dashboard_address=None, silence_logs=logging.CRITICAL,
        # no dashboard, and the scheduler's HTTP routes on a free port of this machine alone: with
        # dashboard_address=None dask still binds them to 8787, and printed "Port 8787 is already in use" beside the
        # command's lines whenever another dask (a notebook's dashboard, a second command) held it
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}))
    asyncio_log.addFilter(_unretrieved_exit)
    try:
        with cluster, Client(cluster) as client:
            processes = f"{workers} worker process" + ("es" if workers != 1 else "")  # "1 worker process"
            shared = _one_limit(client.scheduler_info(n_workers=-1)["workers"])
            shown = format_bytes(shared) if shared is not None else limit  # "11.77 GiB", not 12638091264
            yield {"scheduler": f"LocalCluster({processes}, memory_limit={shown})", "workers": workers,
                   "memory_limit": shared,  # in bytes, for the JSON
                   "threads": (workers, True)}  # one thread per worker, on this machine
    finally:
        asyncio_log.removeFilter(_unretrieved_exit)


def _check_is_scheduler(address: str, seconds: float) -> None:
    """Ask ``address`` who it is (dask's ``identity`` call), all within ``seconds``; refuse what is no dask scheduler.

    A client of an address that accepts the connection but does not speak dask's protocol (a web server, another
    service) waited for ever for its handshake, whatever the connect timeout, or read the other side's first bytes
    as a frame length and failed allocating exbibytes (a user trial). No answer within the wait is an OSError,
    reported as the addresses that refuse the connection are.
    """
    import asyncio

    from distributed.core import rpc

    from isotropy.measure.report import InputError

    async def identity():
        async with rpc(address, timeout=seconds) as remote:
            return await remote.identity()

    try:  # called inside a running event loop (a notebook's): asyncio.run cannot; the client's own connect checks
        asyncio.get_running_loop()
        return
    except RuntimeError:
        pass

    try:
        info = asyncio.run(asyncio.wait_for(identity(), seconds))
    except (OSError, asyncio.TimeoutError) as exc:
        raise OSError(f"no dask scheduler answered within {seconds:g} s ({' '.join(str(exc).split()) or type(exc).__name__})") from None
    except Exception as exc:  # noqa: BLE001 -- whatever the other side's bytes made of the protocol
        raise InputError(f"--scheduler {address!r} answered, but not as a dask scheduler ({type(exc).__name__}: "
                         f"{' '.join(str(exc).split())[:200]}); expected the address of a dask scheduler, such as "
                         f"tcp://host:8786.") from None
    kind = info.get("type") if isinstance(info, dict) else None
    if kind != "Scheduler":
        raise InputError(f"--scheduler {address!r} is a dask {kind or 'service'}, not a scheduler; expected the "
                         f"address of a dask scheduler, such as tcp://host:8786 (the scheduler's, not a worker's).")


#: The smallest memory of a worker (--memory-limit, or "auto"'s share): a worker process holds 60-90 MiB before any
#: data, and dask pauses it (waiting for memory that is never freed) at 80% of its limit: 40MiB printed the table's
#: header and hung.
MIN_WORKER_MEMORY = 256 * 2**20


def _divided(workers: int) -> int:
    """``"auto"``: the memory of the machine (as dask reads it: the smaller of the physical memory, the cgroup's and
    the rlimit) divided among the ``workers``. dask's own ``"auto"`` gives each worker the memory times its share of
    the cores, whatever the number of workers: 4 one-thread workers on 2 cores got half the machine each, twice the
    machine between them, and 1 worker half of it."""
    from distributed.system import MEMORY_LIMIT

    from isotropy.measure.report import InputError

    share = int(MEMORY_LIMIT) // max(1, int(workers))
    if share < MIN_WORKER_MEMORY:  # as an explicit --memory-limit below it: each worker would pause for ever
        raise InputError(f"--workers {workers} divides this machine's {MEMORY_LIMIT / 2**30:.1f} GiB into "
                         f"{share // 2**20} MiB per worker; a worker needs at least {MIN_WORKER_MEMORY // 2**20} MiB "
                         f"(dask pauses it at 80% of its limit): expected at most "
                         f"{max(1, int(MEMORY_LIMIT) // MIN_WORKER_MEMORY)} workers.")
    return share


def _unretrieved_exit(record) -> bool:
    """A filter of the asyncio logger: False (dropped) for "Task exception was never retrieved" of a client's gather
    ended by ``AllExit`` as its cluster closed; every other record kept."""
    info = getattr(record, "exc_info", None)
    return not (isinstance(record.msg, str) and record.msg.startswith("Task exception was never retrieved")
                and info and type(info[1]).__name__ == "AllExit")


def _start_shielded_from_ctrl_c(start):
    """``start()`` (the LocalCluster) with SIGINT blocked in this thread; a Ctrl-C meanwhile is handled once the start
    is over, as the handler in place would have (Python's default: ``KeyboardInterrupt``), what it started closed first.

    The threads made meanwhile (distributed's event loop, which starts the worker processes) inherit the blocked
    SIGINT, and so do the worker processes (a signal mask is kept across fork and exec): a Ctrl-C in the terminal,
    sent to the whole process group, stops this process only, which closes the cluster and says so in one line; each
    worker printed its own KeyboardInterrupt traceback (a user trial: six tracebacks). SIGINT was ignored instead
    before, which the workers inherited too, but a Ctrl-C in those seconds was then lost: the command went on. Blocked,
    it waits for the start to end, noted by a Python handler (Python's own, where the Ctrl-C reaches a thread that
    does not block it, as one of BLAS's, would raise KeyboardInterrupt midway through the start, the cluster left
    unclosed). A start that fails after a Ctrl-C is the Ctrl-C (its error chained). Outside the main thread no
    handler can be set: SIGINT is blocked there all the same (the workers inherit it) and the main thread takes the
    Ctrl-C. Not when this process was started with SIGINT ignored (a script's background job): a Ctrl-C is then for
    none of its processes. On Windows (no signal masks) SIGINT is ignored during the start instead, and a Ctrl-C then
    is lost.
    """
    import signal
    import sys
    import threading

    previous = signal.getsignal(signal.SIGINT)
    if previous == signal.SIG_IGN:  # ignored by whoever started this process: it stays so, the workers inherit it
        return start()
    main = threading.current_thread() is threading.main_thread()
    if not hasattr(signal, "pthread_sigmask"):  # (Windows) no signal masks
        if not main:
            return start()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            return start()
        finally:
            signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)
    # the thread that starts multiprocessing's resource tracker unblocks SIGINT and SIGTERM after it (Python's
    # resource_tracker.ensure_running: SIG_BLOCK around the tracker's spawn, then SIG_UNBLOCK): started by distributed's
    # event loop, it unblocked them there, and the workers started from it then took Ctrl-C. Started here first (the
    # workers' start would start it), it is left alone meanwhile.
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    pressed, started, restored = [], None, not main
    if main:
        previous = signal.signal(signal.SIGINT, lambda signum, frame: pressed.append(signum))

    def restore():
        nonlocal restored
        if not restored:  # (None: a handler not set from Python, as an embedding application's; the default is what
            restored = True  # it did)
            signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)

    def handle():  # as the handler in place would have (default_int_handler raises KeyboardInterrupt), once
        pressed.clear()
        if callable(previous):
            previous(signal.SIGINT, sys._getframe(1))
        else:  # (SIG_DFL, or a handler not set from Python: the process would have ended) the same, closed first
            raise KeyboardInterrupt

    try:
        unblocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            started = start()
        finally:  # a Ctrl-C kept pending is delivered here, to the handler above (pthread_sigmask runs it)
            signal.pthread_sigmask(signal.SIG_SETMASK, unblocked)
        restore()  # from here a second Ctrl-C raises at once, and what started is closed below
        if pressed:
            handle()
    except BaseException as error:
        restore()
        if started is not None:
            with contextlib.suppress(Exception):  # the error (or the Ctrl-C) says more than a failed close
                started.close()
        if pressed and not isinstance(error, KeyboardInterrupt):  # a Ctrl-C during a start that failed
            handle()
        raise
    return started


def _one_limit(workers: dict) -> int | None:
    """The memory limit in bytes the workers share, as the scheduler reports it; None when they differ or have
    none (an existing cluster's workers keep the limit they were started with: it was recorded as null)."""
    limits = {info.get("memory_limit") for info in workers.values()}
    return int(limits.pop()) if len(limits) == 1 and None not in limits and 0 not in limits else None


# An input this small is read once and held by the workers for every metric of the table: each metric's graph would
# otherwise read it again (1,500 one-row shards: 1,500 files opened per metric, 1.6x the same rows in one file).
# Larger inputs are read again by each metric, a chunk per task, so that a worker holds its chunks only while it
# works on them (bounded memory).
_HOLD_BYTES = 1 << 30
_HOLD_SHARE = 4  # at most this fraction (1/4) of the workers' memory


# A chunk takes at most this fraction (1/16) of a worker's memory: a metric converts its chunk to float64 (2x a float32
# chunk) and holds a temporary or two of that size, beside the chunks the worker holds for other tasks (64 MiB chunks
# of float32 shards killed the workers of --memory-limit 512MiB in calinski_harabasz_score, a user trial).
_CHUNK_SHARE = 16


def _fit_chunks(X, where_run):
    """``X`` with row chunks of at most ``1/_CHUNK_SHARE`` of a worker's memory (as it is where that holds, or where
    the workers have no common limit)."""
    limit = where_run["memory_limit"]
    if not limit:
        return X
    row_bytes = max(1, X.shape[1] * X.dtype.itemsize)
    rows = max(1, int(limit) // _CHUNK_SHARE // row_bytes)
    return X.rechunk({0: rows}) if max(X.chunks[0]) > rows else X


def _hold(X, where_run):
    """``X`` persisted on the cluster when it is small enough (see above), else None (read by each metric)."""
    workers, limit = where_run["workers"], where_run["memory_limit"]
    # dask's threaded scheduler has nothing to hold the data between metrics; workers of differing or no memory limits
    # (a --scheduler cluster) give no budget to hold it within
    if not workers or limit is None:
        return None
    budget = min(_HOLD_BYTES, int(limit) * int(workers) // _HOLD_SHARE)
    return X.persist() if X.nbytes <= budget else None  # a chunk that fails to load fails the first metric, as before


def _read_by_workers(embeddings) -> bool:
    """Whether :func:`_lazy_embeddings` reads ``embeddings`` lazily (shards, single ``.npy``/``.parquet`` files: each
    chunk by the worker that computes it), not into this process."""
    from pathlib import Path

    from isotropy.io.shards import is_sharded
    from isotropy.io.word_vectors import PACKAGED_GLOVE

    path = Path(str(embeddings))
    # a missing path goes to read_shards too: --workers/--scheduler may have meant shards, and its message
    # names the path as given and every accepted form (a file, a directory of shards, a glob, a Zarr store)
    return is_sharded(embeddings) or path.suffix.lower() in (".npy", ".parquet") or \
        (not path.exists() and not path.is_symlink() and str(embeddings) != PACKAGED_GLOVE)


# Rows per chunk of the embeddings on the dask path: at most a neighbour tile's rows (and at most about 64 MiB). With
# the reader's 64 MiB chunks (43,690 rows of 384 float32) a worker held a whole chunk to cut each 8192-row tile from
# it: on 80,000 x 384 float32 rows in .npy shards the default table's largest worker peaked 77-137 MiB lower with
# these chunks (--workers 2), the command's own process 98-202 MiB lower on dask's threads, at the same time within
# the machine's noise (benchmarks/bench_read_chunks.py, docs/scaling.md). The streaming metrics sum chunk by chunk, so
# their values move within float64 rounding (there at most 1.2e-14 relative; 6.3e-13 for partition_isotropy, a
# ratio of two exponentials' sums). Narrow rows keep chunks of at least twice the values below which the streaming
# metrics join chunks again (check_dask_X: 8192 rows of up to 32 values are "small"), and a Parquet shard is read
# whole (its rows stay one chunk).
def _chunk_limits() -> dict:
    """``most_rows`` and ``least_elements`` of the embeddings' chunks on the dask path (see above)."""
    from isotropy.distributed._graph import _SMALL_CHUNK_ELEMENTS, NEIGHBOUR_TILE_ROWS

    return {"most_rows": NEIGHBOUR_TILE_ROWS, "least_elements": 2 * _SMALL_CHUNK_ELEMENTS}


def _lazy_embeddings(embeddings, key, label_column=None):
    """The embeddings as a dask array: shards (and single .npy files) read lazily, others in memory; chunks within
    :func:`_chunk_limits`."""
    from isotropy.io.shards import default_chunk_rows, read_capped_shards
    from isotropy.measure.report import _guard

    if _read_by_workers(embeddings):
        # --labels EMBEDDINGS.parquet --label-column COL: that column left out of the features, as in memory
        return _guard(read_capped_shards, embeddings, key=key, label_column=label_column, **_chunk_limits()), None
    import dask.array as da

    from isotropy.io.embeddings import read_embeddings

    X, row_names = _guard(read_embeddings, embeddings, key=key, label_column=label_column)
    return da.from_array(X, chunks=(default_chunk_rows(X.shape[1], X.itemsize, **_chunk_limits()), -1)), row_names


def run(embeddings, *, labels_path, metric_names, needing_labels, json_path, sample_size, random_state, distance,
        key, progress, scheduler, workers, memory_limit=None, shrinkage_sample=None, shrinkage_key=None, default_table=False,
        n_neighbors=None, zeta=None, averaging=None, label_column=None, labels_encoding="utf-8"):
    """The body of ``isotropy measure`` for sharded input or a dask cluster."""
    if scheduler is not None:  # before any data is read
        check_scheduler_address(scheduler)

    from isotropy.distributed import show_progress
    from isotropy.measure.report import InputError, own_label_column, prepare_input, report

    X, row_names = _lazy_embeddings(embeddings, key, own_label_column(embeddings, labels_path, label_column))
    data = prepare_input(X, row_names, embeddings, labels_path, key=key, sample_size=sample_size,
                         random_state=random_state, needing_labels=needing_labels, shrinkage_sample=shrinkage_sample,
                         shrinkage_key=shrinkage_key,
                         label_column=label_column, labels_encoding=labels_encoding)
    terminal = sys.stderr.isatty()
    show = terminal if progress is None else progress
    if scheduler is not None and show:  # a wrong address is only known once the wait is over
        print(f"Connecting to the dask scheduler at {scheduler} (up to {connect_timeout():g} s) ...", file=sys.stderr,
              flush=True)
    try:
        # a terminal: dask's bar of the tasks; a log file (--progress): the command's lines, one per metric and per
        # tenth of its work, and no bar redrawn with '\r'
        with open_cluster(scheduler, workers, memory_limit) as where_run, show_progress(show and terminal), \
                warnings.catch_warnings():
            # a file read into this process goes to the workers inside the graph: dask's "Sending large graph ...
            # Consider loading the data with Dask directly" named nothing a user of the command can do (a Note below)
            warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
            from isotropy._utils.versions import package_versions

            data = dataclasses.replace(data, X=_fit_chunks(data.X, where_run), tile_threads=where_run["threads"])
            held = _hold(data.X, where_run)
            if held is not None:
                data = dataclasses.replace(data, X=held)
            elif not _read_by_workers(embeddings):
                from isotropy.measure._notes import note

                note(f"{embeddings} is read into this process and sent to the workers with each metric's tasks; as "
                     f".npy or a folder of .npy/.parquet shards the workers read it themselves.")
            record_extra = {
                "scheduler": where_run["scheduler"],
                "workers": where_run["workers"],
                "memory_limit": where_run["memory_limit"],
                "chunking": {"n_chunks": len(data.X.chunks[0]),
                             "rows_per_chunk": sorted(set(map(int, data.X.chunks[0]))), "dtype": str(data.X.dtype),
                             "held_by_workers": held is not None},
                "threads": None,  # the workers' own, not this process's: the scheduler and workers keys say where it ran
                "versions": package_versions(extra=("dask", "distributed", "zarr")),
            }
            report(data, embeddings, metric_names=metric_names, json_path=json_path, key=key,
                   labels_path=labels_path, sample_size=sample_size, random_state=random_state, distance=distance,
                   progress=bool(show and not terminal), header_extra=f"; dask: {where_run['scheduler']}, {_chunks(len(data.X.chunks[0]))}",
                   record_extra=record_extra, shrinkage_sample=shrinkage_sample, default_table=default_table,
                   n_neighbors=n_neighbors, zeta=zeta, averaging=averaging, label_column=label_column,
                   digest_inputs=False)
    except OSError as exc:  # no scheduler at that address, ports refused
        # not a closed stdout (`| head -1`: EPIPE, which click ends with status 1, as in memory), nor without an address
        if scheduler is None or isinstance(exc, BrokenPipeError):
            raise
        raise InputError(f"--scheduler {scheduler!r}: cannot connect ({' '.join(str(exc).split())}); check the address "
                         f"(the wait is the dask config key {_CONNECT_KEY}, environment {_CONNECT_VARIABLE}).") from None
