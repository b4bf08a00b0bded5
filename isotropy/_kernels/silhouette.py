"""Blocks of a pairwise distance matrix on CPU, for the exact silhouette (numpy).

Samples are stored sorted by cluster as the rows of an augmented, centred matrix ``R`` such
that ``L @ R[J].T`` (``L`` built from ``R[I]``) is the block ``(I, J)`` of squared euclidean or of
cosine distances; :class:`_BlockKernel` turns one block into per-cluster distance sums and
:func:`_run_tasks` spreads blocks over the cores. The cluster-count check, the seeded subsample
and the step from cluster sums to coefficients (:func:`_coefficients_numpy`, :func:`_resolution`)
live here too: :mod:`isotropy.metrics.silhouette` and :mod:`isotropy.distributed` both use them, and the
dask path must not import the public module (which hands dask arrays to it).
"""

from __future__ import annotations

import contextlib
import numbers
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np

from isotropy._kernels.centre import distance_centre
from isotropy._kernels.repeats import maybe_repeated
from isotropy._utils.threads import blas_on_one_thread, one_blas_thread
from isotropy._utils.validation import IsotropyValueError


def _unit_rows(block):
    """Rows scaled to unit norm (a zero row stays zero) and a 0/1 flag of the zero rows."""
    norms = np.sqrt(np.einsum("ij,ij->i", block, block))
    block /= np.where(norms > 0, norms, 1.0)[:, None]
    return block, (norms == 0).astype(np.float64)


def _augmented_numpy(X, metric, dtype, order, mean=None):
    """Right operand R = [u, 1, q] with u the centred rows (of X, or of the unit rows of X).

    With L = [-s u, q, 1] (s = 2 for euclidean, 1 for cosine), L @ R.T is the squared euclidean
    distance, or the cosine distance 1 - cos(x, y) = |u_x - u_y|^2 / 2 (+ 1/2 per zero row).
    Centring keeps |u| small, hence the cancellation error of the float32 product: on the mean, or
    the coordinate-wise median of a sample of the rows where a few rows of huge norm drag the mean
    (euclidean; :func:`isotropy._kernels.centre.distance_centre`), or the mean of the unit rows
    (cosine). Row ``i`` of R is sample ``order[i]``. ``mean`` gives the centre (float64), e.g. that of the rows of a
    distributed array, instead.
    """
    n, d = X.shape
    step = max(1, (1 << 22) // max(d, 1))  # convert ~32 MiB of float64 at a time
    chunks = [slice(start, min(n, start + step)) for start in range(0, n, step)]
    if mean is not None:
        pass
    elif metric == "euclidean":
        mean = distance_centre(X, X.mean(axis=0, dtype=np.float64))  # a median where a few rows drag the mean
    else:
        mean = sum(_unit_rows(X[rows].astype(np.float64))[0].sum(axis=0) for rows in chunks) / n
    R = np.empty((n, d + 2), dtype=dtype)
    for rows in chunks:
        block = X[order[rows]].astype(np.float64)
        zero = 0.0
        if metric == "cosine":
            block, zero = _unit_rows(block)
        block -= mean
        R[rows, :d] = block
        block = R[rows, :d].astype(np.float64)  # norms of the values actually multiplied
        q = np.einsum("ij,ij->i", block, block)
        R[rows, d + 1] = q if metric == "euclidean" else (q + zero) / 2.0
    R[:, d] = 1.0
    return R


def _left_operand_numpy(R_rows, metric, d):
    """L such that L @ R.T is the squared euclidean distance (or the cosine distance)."""
    L = np.empty_like(R_rows)
    np.multiply(R_rows[:, :d], -2.0 if metric == "euclidean" else -1.0, out=L[:, :d])
    L[:, d] = R_rows[:, d + 1]
    L[:, d + 1] = 1.0
    return L


_PARALLEL = threading.Lock()  # one parallel section at a time: BLAS thread limits are process-wide


def _cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no sched_getaffinity (macOS, Windows)
        return os.cpu_count() or 1


_CALLING_THREAD = threading.local()  # .only: _run_tasks runs its tasks in the calling thread (tasks_in_this_thread)


@contextlib.contextmanager
def tasks_in_this_thread():
    """Within the block, :func:`_run_tasks` runs every task in the calling thread where BLAS runs on one thread.

    For kernels called by a scheduler that already runs one call per core: a dask tile. A dask
    worker runs ``threads_per_worker`` tiles at once, and the nanny that starts it sets BLAS to
    one thread: worker threads of the tile's own, one per core, would put several threads on every
    core. Where BLAS is not on one thread (dask's threaded scheduler, in this process), the tasks
    keep the kernel's worker threads, one parallel section at a time (``_PARALLEL``), each on one
    BLAS thread: the BLAS limits belong to the process, so a tile cannot set them for itself.
    """
    before = getattr(_CALLING_THREAD, "only", False)
    _CALLING_THREAD.only = blas_on_one_thread()
    try:
        yield
    finally:
        _CALLING_THREAD.only = before


def _run_tasks(fn, tasks, *, progress=False, make_state=None, max_workers=None):
    """Run fn(*task, state) for every task on one thread per core (state: a per-thread dict).

    With ``progress``, each finished task is reported to the caller's progress reporter, if any
    (:mod:`isotropy._utils.progress`).

    Each worker runs single-threaded BLAS (threadpoolctl, restored on exit): independent
    workers keep both the products and the element-wise work busy on every core, and do not
    stall on BLAS's internal thread barriers when the machine is oversubscribed.

    ``make_state``: builds each worker's state (its buffers) in the calling thread, before the
    workers start, instead of an empty dict: memory allocated there is reused by the caller's own
    allocations once the workers are done (a worker thread's allocator arena is not).
    ``max_workers``: at most this many workers (e.g. to bound the memory of their buffers). Within
    :func:`tasks_in_this_thread`, the tasks run in the calling thread.
    """
    if progress:
        from isotropy._utils.progress import blocks

        advance, inner = blocks(len(tasks)), fn

        def fn(*args):
            inner(*args)
            advance()
    workers = 1 if getattr(_CALLING_THREAD, "only", False) else min(_cores(), len(tasks), max_workers or len(tasks))
    try:
        import threadpoolctl  # noqa: F401 - present: workers run one BLAS thread each
    except ImportError:
        workers = 1
    if workers <= 1:
        state = {} if make_state is None else make_state()
        for task in tasks:
            fn(*task, state)
        return
    pending, take, stop = iter(tasks), threading.Lock(), threading.Event()

    def worker(state):
        while not stop.is_set():
            with take:
                task = next(pending, None)
            if task is None:
                return
            fn(*task, state)

    states = [{} if make_state is None else make_state() for _ in range(workers)]
    with _PARALLEL, one_blas_thread():
        futures = [_threads(workers).submit(worker, state) for state in states]
        try:
            errors = [future.exception() for future in futures]  # waits for every worker
        except BaseException:  # interrupted: no new task starts; the running ones finish before the limits go
            stop.set()
            for future in futures:
                with contextlib.suppress(BaseException):
                    future.exception()
            raise
    for error in errors:
        if error is not None:
            raise error


# The worker threads of _run_tasks, kept between calls (starting threads costs ~1 ms each, which small
# problems called often, such as the metrics of every layer, paid several times per call); new in a
# forked child, whose copy of the parent's threads does not run.
_THREADS: list = [None, 0, 0]  # executor, its size, the process that started it


def _threads(workers: int) -> ThreadPoolExecutor:
    """At least ``workers`` idle worker threads (only one parallel section runs at a time: ``_PARALLEL``)."""
    pool, size, pid = _THREADS
    if pool is None or pid != os.getpid() or size < workers:
        if pool is not None and pid == os.getpid():  # too few: this process's idle threads end (a fork's never ran)
            pool.shutdown(wait=False)
        size = max(workers, _cores())
        pool = ThreadPoolExecutor(size, thread_name_prefix="isotropy-kernel")
        _THREADS[:] = [pool, size, os.getpid()]
    return pool


def duplicate_groups(X):
    """Per row of ``X``: the number of its group of equal rows (bit for bit), -1 for a row equal to no other; None
    when no two rows are equal.

    The product kernel gives two equal rows the distance √(rounding of q_i + q_j − 2·u_i·u_j), up to √δ where
    its other distances are off by δ/(2·d): averaged over many duplicates, a float32 silhouette was off by 1e-4
    (a review). Candidates are rows with equal projections on one fixed random direction
    (:func:`isotropy._kernels.repeats.maybe_repeated`, the exact search's), checked bit for bit: O(n·d).
    """
    candidates = np.flatnonzero(maybe_repeated(X, None))
    return groups_among(candidates, X[candidates] if candidates.size else None, X.shape[0])


def groups_among(candidates, rows, n):
    """:func:`duplicate_groups` from the candidate row numbers (sorted; a superset of the equal rows) and their
    rows: the candidates compared bit for bit. Also the dask tiles' (:mod:`isotropy.distributed._clusters`)."""
    if not candidates.size:
        return None
    rows = np.ascontiguousarray(rows)
    view = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    _, inverse, counts = np.unique(view, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    if not (counts > 1).any():
        return None
    groups = np.full(n, -1, dtype=np.int64)
    groups[candidates] = np.where(counts[inverse] > 1, inverse, -1)
    return groups


# Rows per block inside a diagonal block of the distance matrix (:meth:`_BlockKernel.add_span`): a diagonal block formed
# whole holds each of its pairs twice; in blocks of this many rows on and above its diagonal, only its smaller
# diagonal blocks are; smaller blocks run BLAS less efficiently. A 4096-row diagonal dask tile: 1.32 times half its
# product against 2.43 whole (benchmarks/bench_dask.py, docs/benchmarks.md, "Later on 2026-12-04").
DIAGONAL_ROWS = 512


# A squared euclidean distance from the product within this many times its rounding bound δ of 0 (two near-equal
# rows, their distance within 2√δ of 0): its square root is then mostly rounding, off by up to √δ, not the δ/(2·d)
# the estimate of the coefficients' error assumes (Resolution.error), and a few such pairs in a small cluster moved a
# float32 coefficient by 3e-4 (a review: rows 1e-9 apart in clusters of 3). Beyond it a distance's error is at most
# δ/((2 + √3)·√δ) < √δ/3, which the estimate covers with its margin; 100 rounding bounds also caught rows merely
# close (2.7 % of their norm apart in float32 at d = 384, within 1e-7 already) and sent every row of such data to the
# exact float64 pass, many times slower (a review).
_NEAR = 4.0


def _rounding_factor(dtype, d: int) -> float:
    """``c`` of the rounding bound ``c·(q_i + q_j)`` of a squared distance (or cosine distance) from the product
    kernel of precision ``dtype`` on rows of ``d`` features (see :func:`_resolution`)."""
    return 4.0 * float(np.sqrt(d + 2.0)) * float(np.finfo(dtype).eps)


class _BlockKernel:
    """One block of the distance matrix and its per-cluster sums (the samples sorted by cluster).

    ``duplicates`` (euclidean): per sorted row, its group of equal rows (:func:`duplicate_groups`), whose
    distances are set to 0 exactly, as the diagonal's. A row with another row within ``_NEAR`` rounding bounds
    of it (euclidean; not an equal one) gets NaN sums: the estimate of its error is then NaN and it is
    recomputed from differences (:func:`_uncertain_numpy`), on every path that adds these sums.
    """

    def __init__(self, R, sorted_ids, n_clusters, metric, b, duplicates=None):
        self.R, self.sorted_ids, self.metric, self.b = R, sorted_ids, metric, b
        self.duplicates = duplicates
        self.d = R.shape[1] - 2
        self.near = _NEAR * _rounding_factor(R.dtype, self.d) if metric == "euclidean" else None
        self.first = np.searchsorted(sorted_ids, np.arange(n_clusters + 1))  # cluster c: rows first[c]:first[c+1]
        self.counts = np.diff(self.first).astype(np.float64)
        self.high = 2.0 if metric == "cosine" else np.inf

    def add_block(self, i0, j0, state, sums, *, symmetric, stop=None):
        """Add block (I, J)'s cluster sums to sums[I] (rows i0:i1 of sums, or all of a panel's
        rows), and with ``symmetric`` its transpose's to sums[J]. ``stop``: ``(i1, j1)``, the blocks'
        ends when they are not ``b`` rows on (the default: ``b`` rows, or to the last row)."""
        R, n, b, dtype = self.R, self.R.shape[0], self.b, self.R.dtype
        i1, j1 = (min(n, i0 + b), min(n, j0 + b)) if stop is None else stop
        if state.get("i0") != (i0, i1):  # left operand of the current row block, cached per thread
            L = _left_operand_numpy(R[i0:i1], self.metric, self.d)
            state.update(i0=(i0, i1), L=L, L_mean=L.mean(axis=0, dtype=np.float64), onehot=None,
                         q_median=float(np.median(R[i0:i1, -1].astype(np.float64))))
        L = state["L"]
        if "buffer" not in state:
            state["buffer"] = np.empty(b * b, dtype=dtype)
        D = state["buffer"][: (i1 - i0) * (j1 - j0)].reshape(i1 - i0, j1 - j0)
        np.matmul(L, R[j0:j1].T, out=D)
        np.clip(D, 0.0, self.high, out=D)
        equal = None
        if self.duplicates is not None:  # equal rows: at distance 0 exactly, as the diagonal
            gi, gj = self.duplicates[i0:i1], self.duplicates[j0:j1]
            ri, cj = np.flatnonzero(gi >= 0), np.flatnonzero(gj >= 0)
            if ri.size and cj.size:
                pairs = gi[ri][:, None] == gj[cj][None, :]
                if pairs.any():
                    r, c = np.nonzero(pairs)
                    equal = (ri[r], cj[c])
        near = None if self.near is None else self._near_rows(D, i0, i1, j0, j1, equal)
        if self.metric == "euclidean":
            np.sqrt(D, out=D)
        if i0 == j0:
            D.flat[:: D.shape[1] + 1] = 0.0  # d(x, x) = 0 exactly, whatever the rounding
        if equal is not None:
            D[equal] = 0.0
        # Sums of many similar float32 terms lose digits: sum d - shift instead, shift ~ a typical d, and add
        # n * shift in float64. Cosine: the mean of L @ R.T over the block, mean(L) @ mean(R). Euclidean: about
        # the centre a typical squared distance |u_i - u_j|^2 is about q_i + q_j, so the medians of q over the
        # two blocks; the block's mean would be dominated by one row of huge norm (its distances ~|u|), and
        # d - shift of every other pair would lose its digits to that shift.
        if self.metric == "euclidean":
            shift = np.sqrt(state["q_median"] + float(np.median(R[j0:j1, -1].astype(np.float64))))
        else:
            shift = float(state["L_mean"] @ R[j0:j1].mean(axis=0, dtype=np.float64))
        D -= dtype.type(shift)
        shift = float(dtype.type(shift))
        cj, col_starts = _segments(self.sorted_ids, self.first, j0, j1)
        rows = slice(i0, i1) if symmetric else slice(0, i1 - i0)
        sums[rows, cj] += np.add.reduceat(D, col_starts, axis=1) + shift * np.diff([*col_starts, j1 - j0])
        if near is not None:  # NaN stays NaN through every later sum: these rows go to the exact pass
            sums[rows.start + near[0]] = np.nan
            if symmetric:
                sums[j0 + near[1]] = np.nan
        if j0 == i0 or not symmetric:
            return
        ci, row_starts = _segments(self.sorted_ids, self.first, i0, i1)
        if len(ci) <= 32:  # few clusters in block I: column sums over each cluster's rows
            for c, r0, r1 in zip(ci, row_starts, [*row_starts[1:], i1 - i0]):
                sums[j0:j1, c] += _column_sums(D[r0:r1]) + shift * (r1 - r0)
        else:  # many: one product with the block's one-hot matrix
            if state["onehot"] is None:
                state["onehot"] = np.zeros((i1 - i0, len(ci)), dtype=dtype)
                state["onehot"][np.arange(i1 - i0), self.sorted_ids[i0:i1] - ci[0]] = 1.0
            sums[j0:j1, ci] += D.T @ state["onehot"] + shift * np.diff([*row_starts, i1 - i0])

    def _near_rows(self, D, i0, i1, j0, j1, equal):
        """``(rows, columns)`` of the block's squared distances ``D`` (clipped at 0) within ``_NEAR`` rounding bounds
        of 0, leaving out the diagonal and the ``equal`` pairs; None when there are none (one pass: its minimum)."""
        q = self.R[:, -1]
        if not D.size or D.min() >= self.near * (float(q[i0:i1].max()) + float(q[j0:j1].max())):
            return None
        # the pairs' own bounds (a row far from the rest would lift a bound from the blocks' largest q to every pair)
        hit = D < (self.near * q[i0:i1].astype(np.float64)).astype(D.dtype)[:, None] + (
            self.near * q[j0:j1].astype(np.float64)).astype(D.dtype)[None, :]
        if i0 == j0:
            hit.flat[:: D.shape[1] + 1] = False
        if equal is not None:
            hit[equal] = False
        rows, columns = np.flatnonzero(hit.any(axis=1)), np.flatnonzero(hit.any(axis=0))
        return (rows, columns) if rows.size else None

    def add_span(self, rows, columns, sums, *, size=None, state=None):
        """Add the cluster sums of the rows ``rows = (start, stop)`` against the rows ``columns`` (both ways), or,
        with ``columns=None``, of the rows against each other, in blocks of at most ``size`` rows (default and
        at most ``b``), on this thread.

        ``columns=None`` forms only the blocks on and above the diagonal (each pair once, as the
        in-memory kernel does); ``rows`` and ``columns`` must not overlap otherwise. ``state``: the
        thread's buffers (:meth:`add_block`), a new one by default.
        """
        size = self.b if size is None else min(size, self.b)

        def cuts(start, stop):
            return [(s, min(stop, s + size)) for s in range(start, stop, size)]

        row_blocks, state = cuts(*rows), {} if state is None else state  # one score buffer, one left operand a block
        for a, (i0, i1) in enumerate(row_blocks):
            for j0, j1 in row_blocks[a:] if columns is None else cuts(*columns):
                self.add_block(i0, j0, state, sums, symmetric=True, stop=(i1, j1))


def _column_sums(block, group=128):
    """float64 column sums of a float32 block: float32 sums of 128 rows at a time, then float64.

    (numpy sums along axis 0 row after row; 2048 float32 rows in a row would lose ~6 digits.)
    """
    full = block.shape[0] // group * group
    total = block[full:].sum(axis=0, dtype=np.float64)
    if full:
        total += block[:full].reshape(-1, group, block.shape[1]).sum(axis=1).sum(axis=0, dtype=np.float64)
    return total


def _segments(sorted_ids, first, start, stop):
    """Clusters present in sorted rows start:stop, and where each begins (relative to start)."""
    clusters = np.arange(sorted_ids[start], sorted_ids[stop - 1] + 1)
    starts = np.maximum(first[clusters], start) - start
    return clusters, starts


def _check_n_clusters(ids, n_samples, caller):
    n_clusters = int(ids.max()) + 1 if ids.size else 0
    if not 2 <= n_clusters <= n_samples - 1:
        raise IsotropyValueError(
            f"The 'labels' parameter of {caller} must define between 2 and n_samples - 1 = {n_samples - 1} "
            f"clusters. Got {n_clusters} cluster{'s' if n_clusters != 1 else ''} instead.")
    return n_clusters


def sampled_ids(ids, indices, n_samples: int, caller: str):
    """The cluster ids of the subsample ``indices`` of ``silhouette_score``, numbered 0.., checked.

    A subsample holding a single cluster (or one cluster per row) has no silhouette; the error
    says it is the subsample's, drawn from how many rows, not the user's labels (which the
    checks before the draw accepted).
    """
    _, sample = np.unique(ids[indices], return_inverse=True)
    sample = sample.reshape(-1)
    m = indices.size
    found = int(sample.max()) + 1 if sample.size else 0
    if not 2 <= found <= m - 1:
        raise IsotropyValueError(
            f"The 'sample_size' parameter of {caller} drew {m} of the {n_samples} rows, which hold {found} "
            f"cluster{'s' if found != 1 else ''} of 'labels'; a silhouette needs between 2 and sample_size - 1 = "
            f"{m - 1} clusters in the sample. Draw more rows (or another random_state).")
    return sample


def _sample_indices(n_samples, sample_size, random_state, caller):
    """Indices of the subsample, chosen exactly as scikit-learn chooses them."""
    if isinstance(random_state, (np.random.Generator, np.random.RandomState)):
        permutation = random_state.permutation(n_samples)
    elif random_state is None or (isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool)):
        from isotropy._utils.validation import check_seed

        permutation = np.random.RandomState(check_seed(random_state, caller=caller)).permutation(n_samples)
    else:
        raise TypeError(f"The 'random_state' parameter of {caller} must be None, an int, a numpy RandomState "
                        f"or a numpy Generator. Got {random_state!r} instead.")
    return permutation[:sample_size]


class Resolution(NamedTuple):
    """The smallest mean distance the product kernel resolves, per sample and cluster (:func:`_resolution`)."""

    q: np.ndarray  # squared norms of the centred operands of the samples (rows of the sums)
    q_mean: np.ndarray  # the mean of each cluster
    factor: float
    euclidean: bool

    def rows(self, start, stop):
        """The resolution of samples ``start:stop`` (a row panel of the sums)."""
        return self._replace(q=self.q[start:stop])

    def at(self, clusters):
        """Per sample: the resolution of its mean distance to the cluster ``clusters[i]``."""
        error = self.factor * (self.q + self.q_mean[clusters])
        return np.sqrt(error) if self.euclidean else error

    def error(self, clusters, mean):
        """Per sample: the estimated rounding error of its mean distance ``mean`` to the cluster ``clusters[i]``.

        The product's error ``δ`` is that of a squared euclidean distance (or of a cosine distance); its square
        root moves by about ``δ / (2·dist)``, and by at most ``√δ`` where the distance is within ``√δ`` of 0.
        """
        error = self.factor * (self.q + self.q_mean[clusters])
        if not self.euclidean:
            return error
        with np.errstate(invalid="ignore"):
            return error / np.maximum(2.0 * mean, np.sqrt(error))


def _resolution(q, ids, n_clusters, dtype, d, metric, q_mean=None):
    """The smallest mean distance the product kernel resolves, per sample and cluster.

    A distance from ``q_i + q_j - s·u_i·u_j`` carries a rounding error up to about
    ``c·eps·(q_i + q_j)`` (``q`` the squared norms of the centred operands, ``c`` growing like
    √d), and the euclidean distance is its square root. Below this, a distance is
    indistinguishable from 0: a sample whose own cluster and nearest other cluster both lie
    within it has a = b = 0, hence s = 0 (as scikit-learn gives for exact duplicates), not the
    ±1 that rounding noise would decide. A mean distance to a cluster is bounded by the same with
    the mean ``q_j`` of that cluster (``q_mean``: from ``q`` and the cluster ids ``ids`` unless given;
    the square root is concave): not the largest ``q`` of all samples, with which one row far from
    the rest raised every sample's bound above its distances and the silhouette of every other
    cluster read 0, nor of the cluster, with which such a row zeroed its own cluster's neighbours.
    """
    if q_mean is None:
        q_mean = np.bincount(ids, weights=q, minlength=n_clusters) / np.maximum(
            np.bincount(ids, minlength=n_clusters), 1)
    return Resolution(q, q_mean, _rounding_factor(dtype, d), metric == "euclidean")


def _mean_distances(sums, ids, counts):
    """``(a, b, nearest)`` from the cluster sums of rows i: the mean distance to the own cluster, to the nearest
    other, and which cluster that is.

    ``a`` and ``b`` are clipped at 0 (NaN kept): the sums of a block are shifted by a typical distance
    (:meth:`_BlockKernel.add_block`), and a mean of distances far below that shift could come out slightly
    negative in float32, which made a coefficient ``(b - a) / max(a, b)`` exceed 1 (cosine metric, a tight cluster
    far from the others' centre: tests/test_silhouette.py)."""
    rows = np.arange(sums.shape[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        a = sums[rows, ids] / (counts[ids] - 1.0)
        means = sums / counts
    means[rows, ids] = np.inf
    nearest = means.argmin(axis=1)
    return np.maximum(a, 0.0), np.maximum(means[rows, nearest], 0.0), nearest


def _coefficients_numpy(sums, ids, counts, resolution):
    """s_i from the cluster sums of rows i (cluster ids ``ids``), the cluster sizes and the kernel's resolution."""
    a, b, nearest = _mean_distances(sums, ids, counts)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = (b - a) / np.maximum(a, b)
    s[(a <= resolution.at(ids)) & (b <= resolution.at(nearest))] = 0.0  # a = b = 0 to the kernel's precision
    return np.nan_to_num(s, nan=0.0, posinf=0.0, neginf=0.0)  # singletons (a = 0/0) and a = b = 0


# A sample whose coefficient's estimated rounding error exceeds this (by the kernel's precision) has its sums
# recomputed in float64 from coordinate differences (_exact_sums). The product kernel centres every row on one
# centre: where clusters lie much closer to each other than to that centre (two tight clusters near each other, a
# third far away), a distance between the near ones is the small difference of large products, and in float32 the
# silhouette of their samples read 0 (a = b = 0 to the kernel's precision) for a true 0.46. The estimate stays below
# 6e-5 in float32 on data whose clusters are not much tighter than their spread about the centre (normal data,
# d = 64 to 1024, and blobs 20 standard deviations apart), so nothing is recomputed there.
_TOLERANCE = {np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-9}


def _uncertain_numpy(sums, ids, counts, resolution, dtype):
    """Rows whose coefficient the product kernel (of precision ``dtype``) may be wrong about beyond tolerance."""
    a, b, nearest = _mean_distances(sums, ids, counts)
    with np.errstate(divide="ignore", invalid="ignore"):
        # the sums of a block are shifted by a typical distance: a and b within rounding of 0 may come out below it
        estimate = (resolution.error(ids, a) + resolution.error(nearest, b)) / np.maximum(np.maximum(a, b), 0.0)
    return (counts[ids] > 1) & ~(estimate <= _TOLERANCE[np.dtype(dtype)])  # NaN (a = b = 0): uncertain too


def _prepared_rows(block, metric):
    """float64 rows (unit rows for cosine) and the 0/1 flags of the zero rows (0.0 for euclidean)."""
    if metric == "cosine":
        return _unit_rows(np.array(block, dtype=np.float64))  # a copy: _unit_rows scales in place
    return np.asarray(block, dtype=np.float64), 0.0


def _exact_tile(A, index_a, B, index_b, ids_b, n_clusters, metric):
    """float64 cluster sums of the distances from rows ``A`` to rows ``B``, from their differences.

    ``A`` rows with global row numbers ``index_a``, ``B`` rows with row numbers ``index_b`` and clusters
    ``ids_b``. Each distance comes from the coordinate differences (scipy's ``cdist``; on the unit rows for
    cosine, ``|u - v|²/2`` plus 1/2 per zero row as in the product kernel), so it carries a rounding error
    relative to itself, whatever the distance of the rows to the data's centre; no product of large
    numbers. ``3·len(A)·len(B)·d`` flops. Returns the sums, shape ``(len(A), n_clusters)``.
    """
    from scipy.spatial.distance import cdist

    sums = np.zeros((len(A), n_clusters))
    if not len(A) or not len(B):
        return sums
    A, zero_a = _prepared_rows(A, metric)
    sort = np.argsort(ids_b, kind="stable")
    B, zero_b = _prepared_rows(np.asarray(B)[sort], metric)
    clusters, starts = np.unique(np.asarray(ids_b)[sort], return_index=True)
    if metric == "euclidean":
        D = cdist(A, B, "euclidean")
    else:
        D = cdist(A, B, "sqeuclidean")
        D /= 2.0
        D += (np.asarray(zero_a)[:, None] + np.asarray(zero_b)[None, :]) / 2.0
        np.clip(D, 0.0, 2.0, out=D)
    D[np.asarray(index_a)[:, None] == np.asarray(index_b)[sort]] = 0.0  # d(x, x) = 0 (a zero row reads 1 above)
    sums[:, clusters] = np.add.reduceat(D, starts, axis=1)
    return sums


class _ExactResolution:
    """The resolution of :func:`_exact_tile`'s sums: their distances carry a rounding error relative to themselves,
    so a mean distance is 0 only when every distance is (a = b = 0 for exact duplicates alone), or, under the
    cosine metric, when it is within ``floor`` (:func:`exact_resolution`)."""

    def __init__(self, floor: float = 0.0):
        self.floor = floor

    def at(self, clusters):
        return np.full(len(clusters), self.floor)


EXACT_RESOLUTION = _ExactResolution()


def exact_resolution(metric: str, n_features: int, dtype=np.float64) -> _ExactResolution:
    """The resolution of :func:`_exact_tile`'s sums of ``metric`` distances between rows of ``n_features``.

    Euclidean: 0 (a difference of equal rows is exactly 0). Cosine: the distances are ``|u - v|²/2`` of the unit
    rows ``u = x/|x|``, each coordinate rounded within ``(d/2 + 2)·eps`` of itself, so two parallel rows of
    different norms ((0.1, 0.1) and (2.1, 2.1)) are up to ``(d + 4)²·eps²/2`` apart, not 0: a sample whose own and
    nearest other clusters were both parallel to it read ±1 (the sign of that rounding) for the 0 of a = b = 0.
    Mean distances within ``(d + 4)²·eps²`` (twice that) read 0 with the other. ``dtype``: the precision the
    distances are computed in (float64; float32 on MPS).
    """
    if metric != "cosine":
        return EXACT_RESOLUTION
    return _ExactResolution(float((n_features + 4) * np.finfo(dtype).eps) ** 2)


def _exact_sums(X, ids, rows, metric, *, block=4096, rows_at_once=256):
    """float64 cluster sums of the samples ``rows`` of ``X`` (in memory), by :func:`_exact_tile`.

    ``3·n·d`` flops per sample, in blocks of ``rows_at_once`` samples by ``block`` columns.
    """
    n = X.shape[0]
    n_clusters = int(ids.max()) + 1
    sums = np.zeros((rows.size, n_clusters))
    for i0 in range(0, rows.size, rows_at_once):
        mine = rows[i0:i0 + rows_at_once]
        for j0 in range(0, n, block):
            cols = np.arange(j0, min(n, j0 + block))
            sums[i0:i0 + mine.size] += _exact_tile(X[mine], mine, X[cols], cols, ids[cols], n_clusters, metric)
    return sums


