"""The metrics on a real ``dask.distributed.LocalCluster`` of 2 worker processes with a memory limit.

- every metric equals the in-memory function on the materialised array;
- a worker process killed (SIGKILL) in the middle of a silhouette: the scheduler reruns the lost
  tasks and the value is still exact;
- shards larger than a worker's ``memory_limit`` are measured exactly, by the library and by
  ``isotropy measure SHARD_DIR --workers 2`` (a fresh process starting its own cluster).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import dask.array as da
import numpy as np
import pytest
from distributed import Client, LocalCluster

import isotropy
from isotropy import CovarianceAccumulator
from isotropy.io.shards import read_shards

REPO = Path(__file__).resolve().parent.parent
WORKER_MEMORY = 400 * 2**20  # bytes per worker process (400 MiB)
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, memory_limit=WORKER_MEMORY,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        yield client


@pytest.fixture(scope="module")
def big_shards(tmp_path_factory):
    """600 MB of float64 shards (1.4x a worker's memory limit) with labels; streamed statistics as reference."""
    root = tmp_path_factory.mktemp("big") / "shards"
    root.mkdir()
    rng = np.random.default_rng(0)
    reference = CovarianceAccumulator()
    labels = []
    for k in range(6):
        part = rng.standard_normal((97_656, 128)) * np.linspace(0.5, 3.0, 128) + k  # 100 MB
        np.save(root / f"part-{k:02d}.npy", part)
        reference.update(part)
        labels.append(np.full(part.shape[0], k % 3))
    labels = np.concatenate(labels)
    np.savetxt(root.parent / "labels.txt", labels, fmt="%d")
    return root, reference, labels


def test_every_metric_equals_in_memory_on_the_cluster(client):
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 3, 900)
    X = rng.normal(size=(900, 6)) + labels[:, None] * 1.5
    Xd = da.from_array(X, chunks=(128, 6))
    for name in ("isoscore", "isoscore_star", "participation_ratio", "cosine_similarity_mean", "partition_isotropy",
                 "twonn_dimension", "mle_dimension"):
        assert getattr(isotropy, name)(Xd) == pytest.approx(getattr(isotropy, name)(X), rel=1e-10), name
    for name in ("silhouette_score", "calinski_harabasz_score", "davies_bouldin_score", "dunn_index"):
        assert getattr(isotropy, name)(Xd, labels) == pytest.approx(getattr(isotropy, name)(X, labels), rel=1e-10)
    np.testing.assert_allclose(isotropy.local_mle_dimension(Xd, n_neighbors=8).compute(),
                               isotropy.local_mle_dimension(X, n_neighbors=8), rtol=1e-10)
    assert isotropy.silhouette_score(Xd, labels, metric="cosine") == pytest.approx(
        isotropy.silhouette_score(X, labels, metric="cosine"), rel=1e-10)


def test_results_reach_the_client_aligned_and_the_mle_is_the_in_memory_one_bit_for_bit(client):
    """dask.distributed hands the client an array received from a worker as a view of the message, at any address:
    float64 arrays arrived at addresses 1 or 2 past a multiple of 8, which numpy reduces with other loops (another
    summation order), so the dask MLE differed from run to run and from the in-memory value in its last bits (a
    helper's measurement, n = 40,000). Every computed array now reaches the caller aligned."""
    from dask import delayed

    from isotropy.distributed._graph import compute

    parts = [delayed(np.arange, pure=True)(i, i + 8192, dtype=np.float64) for i in range(0, 5 * 8192, 8192)]
    (joined,) = compute(delayed(np.concatenate, pure=True)(parts))
    assert joined.flags.aligned and joined.ctypes.data % 8 == 0
    np.testing.assert_array_equal(joined, np.arange(5 * 8192, dtype=np.float64))
    rng = np.random.default_rng(11)
    X = (rng.normal(size=(6000, 8)) @ rng.normal(size=(8, 24))).astype(np.float32)
    expected = isotropy.neighbour_dimensions(X, n_neighbors=20)
    for _ in range(2):  # the same bits each time, and those of the in-memory search
        got = isotropy.neighbour_dimensions(da.from_array(X, chunks=(1500, 24)), n_neighbors=20)
        assert got == expected


def test_a_task_gets_a_block_made_on_the_other_worker_and_gives_the_bits_of_the_aligned_block(client):
    """A task pinned to one worker receives a block made on the other as a view of the message, at an unaligned
    address (3 bytes past a multiple of 8 when measured): I(W)'s Gram of it differed from numpy's ``BᵀB`` of the
    aligned block (the reference) in its last bits, until the tasks aligned their arguments. The dask I(W) is then the
    same bits on every run, and the in-memory value to rounding."""

    def block():
        rng = np.random.default_rng(3)
        return rng.standard_normal((300, 12)) * np.linspace(0.3, 3, 12) + 0.7

    def gram(B):
        from isotropy.distributed._covariance import _gram

        return _gram(B)[1]

    first, second = sorted(client.scheduler_info()["workers"])[:2]
    made = client.submit(block, workers=[first], pure=False)
    G = client.submit(gram, made, workers=[second], pure=False).result()
    B = block()
    assert G.tobytes() == (B.T @ B).tobytes()
    X = np.concatenate([block() + k for k in range(4)])
    values = [isotropy.partition_isotropy(da.from_array(X, chunks=(300, 12))) for _ in range(2)]
    assert values[0] == values[1]
    assert values[0] == pytest.approx(isotropy.partition_isotropy(X), rel=1e-10)


def test_successive_metrics_send_each_key_once_defined(client):
    """mle_dimension then twonn_dimension on a float16 array, and on the user's own ``astype``: the scheduler logged
    "Detected different `run_spec`" (a Python API trial), since each metric makes several computes over the same
    array and dask's task fusion renamed shared tasks differently in each graph. No such message, same values."""
    import logging

    x = np.random.default_rng(0).normal(size=(3000, 16)).astype(np.float16)
    X = da.from_array(x, chunks=(700, 16))
    messages = []
    handler = logging.Handler()
    handler.emit = lambda record: messages.append(record.getMessage())
    logger = logging.getLogger("distributed.scheduler")
    logger.addHandler(handler)
    try:
        for Y in (X, X, X.astype(np.float32), X):
            assert isotropy.mle_dimension(Y, n_neighbors=10) == isotropy.mle_dimension(x, n_neighbors=10)
            assert isotropy.twonn_dimension(Y) == isotropy.twonn_dimension(x)
    finally:
        logger.removeHandler(handler)
    assert not [m for m in messages if "run_spec" in m], messages[:1]


def _finished_tiles(dask_scheduler):
    """Tiles computed so far (from the scheduler's log: a finished tile is soon released by its reduction)."""
    return sum(1 for entry in dask_scheduler.transition_log if "_silhouette_tile" in str(entry[0]) and entry[2] == "memory")


def test_killing_a_worker_mid_silhouette_gives_the_exact_value(client):
    labels = np.random.default_rng(6).integers(0, 4, 12_000)
    Xd = da.random.default_rng(6).normal(size=(12_000, 128), chunks=(2000, 128))  # 6 row blocks: 21 tiles
    Xd = Xd + da.from_array(labels[:, None] * 0.2, chunks=(2000, 1))
    expected = isotropy.silhouette_score(Xd.compute(), labels)
    pids = set(client.run(os.getpid).values())
    result = []
    worker = threading.Thread(target=lambda: result.append(isotropy.silhouette_score(Xd, labels)))
    worker.start()
    deadline = time.monotonic() + 120
    while client.run_on_scheduler(_finished_tiles) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert worker.is_alive(), "the silhouette finished before a worker could be killed"
    victim = max(client.run(lambda dask_worker: (len(dask_worker.data), os.getpid())).values())[1]
    os.kill(victim, signal.SIGKILL)  # its results in memory are lost; the nanny starts a new process
    worker.join(timeout=300)
    assert result and result[0] == pytest.approx(expected, rel=1e-10)
    client.wait_for_workers(2, timeout=600)  # the nanny restarts the killed worker (slow on a loaded machine)
    after = set(client.run(os.getpid).values())
    assert victim not in after and len(after) == 2 and after != pids


def test_data_larger_than_a_worker_memory_limit(client, big_shards):
    root, reference, labels = big_shards
    X = read_shards(root, chunk_rows=32_768)  # 32 MiB chunks
    assert X.nbytes > 1.4 * WORKER_MEMORY
    assert isotropy.isoscore(X) == pytest.approx(reference.isoscore(), rel=1e-10)
    assert isotropy.participation_ratio(X) == pytest.approx(reference.participation_ratio(), rel=1e-10)
    full_ch = isotropy.calinski_harabasz_score(X, labels)
    assert full_ch > 0
    # each worker's peak resident memory: VmHWM of its own address space (ru_maxrss would also count the
    # parent's peak, which Linux carries over fork and exec into the worker processes)
    peaks = client.run(lambda: int(next(line for line in __import__("pathlib").Path("/proc/self/status")
                                        .read_text().splitlines() if line.startswith("VmHWM:")).split()[1]) * 1024)
    assert max(peaks.values()) < WORKER_MEMORY  # no worker ever held the data


def test_covariance_accumulator_update_takes_a_dask_array_a_few_chunks_at_a_time(client, big_shards):
    """``CovarianceAccumulator.update(dask_array)`` made it one numpy array in the caller's process (600 MB here); it
    is now computed a few row chunks at a time, the same statistics, the rows of a refusal counted over the array."""
    import tracemalloc

    root, reference, _ = big_shards
    X = read_shards(root, chunk_rows=8192)  # 8 MiB chunks
    head = np.load(next(iter(sorted(root.glob("*.npy")))))[:10]
    tracemalloc.start()
    try:
        acc = CovarianceAccumulator().update(head).update(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < X.nbytes / 10  # the 600 MB never sat in this process
    expected = CovarianceAccumulator().update(head).merge(reference)
    assert acc.n_samples_ == expected.n_samples_ == X.shape[0] + 10
    np.testing.assert_allclose(acc.covariance(), expected.covariance(), rtol=1e-10, atol=1e-12)
    assert acc.isoscore() == pytest.approx(expected.isoscore(), rel=1e-10)
    bad = da.from_array(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, np.inf]]), chunks=(2, 2))
    with pytest.raises(ValueError, match=r"^The 'X_chunk' parameter of CovarianceAccumulator\.update must have 128 "
                                         r"features \(columns\), like the previous chunks\. Got 2 instead\.$"):
        acc.update(bad)
    fresh = CovarianceAccumulator().update(np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"^The 'X_chunk' parameter of CovarianceAccumulator\.update must contain only "
                                         r"finite values\. Got inf at row 2, column 1 instead\.$"):  # row 2 of bad
        fresh.update(bad)
    assert fresh.n_samples_ == 3  # a refusal leaves the accumulator as it was
    # chunks of unknown size (a boolean selection) and a dask DataFrame: accepted, as before, with the same values
    Z = da.from_array(np.random.default_rng(1).normal(size=(500, 3)), chunks=(64, 3))
    kept = Z[Z[:, 0] > 0]
    assert np.isnan(kept.shape[0])
    want = CovarianceAccumulator().update(kept.compute())
    got = CovarianceAccumulator().update(kept)
    assert got.n_samples_ == want.n_samples_
    np.testing.assert_allclose(got.covariance(), want.covariance(), rtol=1e-12)
    frame = __import__("dask.dataframe", fromlist=["from_dask_array"]).from_dask_array(Z)
    np.testing.assert_allclose(CovarianceAccumulator().update(frame).covariance(),
                               CovarianceAccumulator().update(Z.compute()).covariance(), rtol=1e-12)


def test_measure_workers_2_on_shards_larger_than_worker_memory(big_shards, tmp_path):
    """From a fresh process, as a user would run it; the worker memory limit comes from the dask config."""
    root, reference, _ = big_shards
    env = dict(os.environ, PYTHONPATH=str(REPO), DASK_ISOTROPY__MEMORY_LIMIT=str(WORKER_MEMORY))
    out = tmp_path / "m.json"
    # partition_isotropy, effective_rank and rankme held about 9 float64 copies of a chunk (the projections; the
    # tall-and-skinny QR), and killed 400 MiB workers on 64 MiB chunks
    run = subprocess.run([sys.executable, "-m", "isotropy", "measure", str(root), "--workers", "2", "--metrics",
                          "isoscore,participation_ratio,partition_isotropy,effective_rank,rankme,cosine_similarity_mean",
                          "--json", str(out), "--progress"],
                         check=False, capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr
    record = json.loads(out.read_text())
    assert record["values"]["isoscore"] == pytest.approx(reference.isoscore(), rel=1e-10)
    assert record["values"]["cosine_similarity_mean"] == pytest.approx(reference.cosine_similarity_mean(), rel=1e-10)
    assert record["values"]["effective_rank"] == pytest.approx(reference.effective_rank(), rel=1e-9)
    assert record["values"]["rankme"] == pytest.approx(reference.rankme(), rel=1e-9)
    whole = np.concatenate([np.load(path) for path in sorted(root.glob("*.npy"))])
    assert record["values"]["partition_isotropy"] == pytest.approx(isotropy.partition_isotropy(whole), rel=1e-9)
    del whole
    assert record["workers"] == 2 and "memory_limit=400.00 MiB)" in record["scheduler"]
    assert record["n_samples"] * record["n_features"] * 8 > 1.4 * WORKER_MEMORY
    # shards are coalesced into chunks of about 64 MiB: several chunks, each far below a worker's memory
    chunk_bytes = max(record["chunking"]["rows_per_chunk"]) * record["n_features"] * np.dtype(
        record["chunking"]["dtype"]).itemsize
    assert record["chunking"]["n_chunks"] >= 2 and chunk_bytes <= min(64 * 2**20 * 1.01, WORKER_MEMORY / 2)
    # stderr is a pipe here: the command's progress lines, no bar redrawn with '\r'; stdout holds no progress
    assert "metrics 6/6: cosine_similarity_mean" in run.stderr.splitlines() and "\r" not in run.stderr
    assert "metrics 1/6" not in run.stdout and "Completed" not in run.stdout + run.stderr


def test_measure_scheduler_address_and_progress(client, tmp_path):
    X = np.random.default_rng(8).normal(size=(300, 4))
    np.save(tmp_path / "x.npy", X)
    out = tmp_path / "m.json"
    from click.testing import CliRunner

    from isotropy.cli import cli

    address = client.scheduler.address
    result = CliRunner().invoke(cli, ["measure", str(tmp_path / "x.npy"), "--scheduler", address, "--metrics",
                                      "isoscore,twonn_dimension", "--json", str(out)])
    assert result.exit_code == 0, result.output
    record = json.loads(out.read_text())
    assert record["scheduler"] == address and record["workers"] == 2
    assert record["memory_limit"] == WORKER_MEMORY  # the workers' own limit, as with --workers (null before)
    assert record["values"]["twonn_dimension"] == pytest.approx(isotropy.twonn_dimension(X), rel=1e-10)
    with isotropy.distributed.show_progress():
        isotropy.isoscore(da.from_array(X, chunks=(50, 4)))
    import dask

    import isotropy.measure.distributed as measure_distributed

    timeouts = []
    probe = measure_distributed._check_is_scheduler

    def recording(address, seconds):  # the wait it is given (a timed assert would read the CPU's speed)
        timeouts.append(seconds)
        return probe(address, seconds)

    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}), \
            pytest.MonkeyPatch.context() as patch:  # dask's key: the wait for a dead address
        patch.setattr(measure_distributed, "_check_is_scheduler", recording)
        bad = CliRunner().invoke(cli, ["measure", str(tmp_path / "x.npy"), "--scheduler", "tcp://127.0.0.1:9",
                                       "--progress"])
    assert bad.exit_code == 2, bad.output
    assert bad.stderr.splitlines()[0] == "Connecting to the dask scheduler at tcp://127.0.0.1:9 (up to 2 s) ..."
    assert bad.stderr.splitlines()[1].startswith("Error: --scheduler 'tcp://127.0.0.1:9': cannot connect")
    assert "distributed.comm.timeouts.connect" in bad.stderr
    assert timeouts == [2.0]  # the key's 2 s, not the 30 s default


class _Speaker:
    """A TCP server of this process that answers each connection as another service would: an HTTP status line at
    once (``talks``), or nothing until the client gives up (a server waiting for a request line)."""

    def __init__(self, talks: bool):
        import socketserver
        import threading

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                if talks:
                    self.request.sendall(b"HTTP/1.0 426 Upgrade Required\r\nContent-Length: 0\r\n\r\n")
                else:
                    self.request.settimeout(30)
                    with contextlib.suppress(OSError):
                        while self.request.recv(1 << 16):
                            pass

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.address = f"tcp://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("talks", [True, False], ids=["answers-http", "waits-for-a-request"])
def test_an_address_that_is_no_dask_scheduler_is_one_line_exit_2(tmp_path, talks):
    """A service that is not dask at the --scheduler address: the client read an HTTP status line as a frame length
    (numpy's "Unable to allocate 3.07 EiB" traceback), or waited for ever for a handshake a web server never sends,
    whatever the connect timeout (a user trial). Now one line, exit 2, within the wait."""
    import dask
    from click.testing import CliRunner

    from isotropy.cli import cli

    np.save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(50, 3)))
    speaker = _Speaker(talks)
    try:
        with dask.config.set({"distributed.comm.timeouts.connect": "3s"}):
            result = CliRunner().invoke(cli, ["measure", str(tmp_path / "x.npy"), "--scheduler", speaker.address,
                                              "--metrics", "isoscore"])
    finally:
        speaker.close()
    assert result.exit_code == 2, result.output
    error = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(error) == 1 and f"--scheduler {speaker.address!r}" in error[0]
    assert "Traceback" not in result.output
    if talks:
        assert "answered, but not as a dask scheduler" in error[0]
    else:
        assert "cannot connect (no dask scheduler answered within 3 s" in error[0]


def test_a_worker_address_is_not_taken_for_the_scheduler(client, tmp_path):
    from click.testing import CliRunner

    from isotropy.cli import cli

    np.save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(50, 3)))
    worker = min(client.scheduler_info(n_workers=-1)["workers"])
    result = CliRunner().invoke(cli, ["measure", str(tmp_path / "x.npy"), "--scheduler", worker])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[-1] == (
        f"Error: --scheduler {worker!r} is a dask Worker, not a scheduler; expected the address of a dask scheduler, "
        f"such as tcp://host:8786 (the scheduler's, not a worker's).")


def test_a_failing_task_on_the_local_cluster_prints_no_worker_traceback(capfd):
    import dask
    import pytest

    from isotropy.measure.distributed import open_cluster

    def boom(x):
        raise ValueError("bad shard")

    with open_cluster(None, 1), pytest.raises(ValueError, match="bad shard"):
        dask.delayed(boom)(1).compute()
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err and "bad shard" not in captured.err, captured.err[-2000:]


def test_local_workers_take_no_well_known_port(capfd):
    """With dashboard_address=None dask still bound the scheduler's HTTP routes to 8787, and printed "Port 8787 is
    already in use" beside the command's lines whenever another dask held it (a notebook's dashboard, a second
    command; found when two test runs overlapped). Now a free port of this machine, no warning."""
    import socket
    import warnings

    from isotropy.measure.distributed import open_cluster

    holder = socket.socket()
    try:
        holder.bind(("0.0.0.0", 8787))
        holder.listen()
    except OSError:  # held by another process already: the same situation
        pass
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with open_cluster(None, 1, 300 * 2**20) as where:
                assert where["workers"] == 1
                assert where["threads"] == (1, True)  # what the O(n²) notes price the tiles on
    finally:
        holder.close()
    said = [str(w.message) for w in caught] + [capfd.readouterr().err]
    assert not any("8787" in text for text in said), said


def test_scheduler_wait_comes_from_dask_config_and_a_bad_value_is_one_line():
    import dask
    import pytest

    from isotropy.measure.distributed import connect_timeout
    from isotropy.measure.report import InputError

    assert connect_timeout() == 30.0  # dask's default
    with dask.config.set({"distributed.comm.timeouts.connect": "7s"}):
        assert connect_timeout() == 7.0
    for bad in ("soon", "0s", None):
        with dask.config.set({"distributed.comm.timeouts.connect": bad}), \
                pytest.raises(InputError, match="distributed.comm.timeouts.connect is .*; expected a positive duration"):
            connect_timeout()


@pytest.mark.parametrize(("address", "message"), [
    ("127.0.0.1", "missing port number"), ("nonsense://x:1", "unknown scheme 'nonsense'"),
    ("tcp://127.0.0.1:99999", "port 99999 is out of range (1 to 65535)"), ("tcp://h:0", "port 0 is out of range")])
def test_scheduler_address_dask_cannot_reach_is_refused_before_any_wait(tmp_path, monkeypatch, address, message):
    import distributed
    from click.testing import CliRunner

    from isotropy.cli import cli

    def never(*args, **kwargs):  # refused before a connection is tried (no timed assert: the machine's load varies)
        raise AssertionError("a dask Client was started for an address that cannot be reached")

    monkeypatch.setattr(distributed, "Client", never)
    np.save(tmp_path / "x.npy", np.zeros((10, 2)))
    result = CliRunner().invoke(cli, ["measure", str(tmp_path / "x.npy"), "--scheduler", address])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"Error: --scheduler {address!r}: ") and message in result.output
    assert result.output.rstrip().endswith("expected an address such as tcp://host:8786.")


def test_show_progress_with_a_client_draws_its_bar_on_a_terminal_and_lines_elsewhere(client, monkeypatch, capsys):
    import io

    import dask.array as da

    from isotropy.distributed import _graph, show_progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    X = da.ones((400, 4), chunks=(100, 4))
    screen = Terminal()
    monkeypatch.setattr(_graph, "_stderr", lambda: screen)
    with show_progress():
        assert _graph.compute(X.sum())[0] == 1600
    assert "100% Completed" in screen.getvalue()  # distributed's console bar, kept off stdout
    assert "Completed" not in capsys.readouterr().out
    log = io.StringIO()
    monkeypatch.setattr(_graph, "_stderr", lambda: log)
    with show_progress():
        assert _graph.compute(X.sum())[0] == 1600
    assert log.getvalue().splitlines() == ["dask: computing on the cluster ...", "dask: done"]


def test_a_function_using_the_package_runs_on_the_workers(client):
    # the package's module type (a ModuleType subclass, isotropy/__init__.py) was not picklable by cloudpickle, which
    # looks modules up by their exact type: "cannot pickle '_Package' object" from dask and joblib
    import cloudpickle

    def score(X):  # a user's function (pickled by value) that names the package (pickled by reference)
        return isotropy.isoscore(X)

    assert cloudpickle.loads(cloudpickle.dumps(isotropy)) is isotropy
    assert client.submit(score, np.eye(3) - 1 / 3).result() == pytest.approx(0.5, abs=1e-12)


@pytest.mark.parametrize("row", [437, 0])  # drawn into the sample of 200, and not drawn
def test_sampled_dask_silhouette_checks_every_row_as_in_memory(row):
    """silhouette_score(sample_size=...) of a dask array drew its rows first: a NaN in a row not drawn was taken (a
    value returned where the in-memory function refuses), and one drawn was named by its place in the sample."""
    import dask
    import dask.array as da

    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, 600)
    X = rng.normal(size=(600, 12)) + labels[:, None]
    with dask.config.set(scheduler="threads"):
        assert isotropy.silhouette_score(da.from_array(X, chunks=(150, -1)), labels, sample_size=200,
                                         random_state=3) == pytest.approx(
            isotropy.silhouette_score(X, labels, sample_size=200, random_state=3), abs=1e-12)
        X[row, 5] = np.nan
        for data in (X, da.from_array(X, chunks=(150, -1))):
            with pytest.raises(isotropy.IsotropyValueError, match=rf"must contain only finite values\. Got nan at row "
                                                                  rf"{row}, column 5 instead"):
                isotropy.silhouette_score(data, labels, sample_size=200, random_state=3)


def test_the_scheduler_probe_leaves_a_running_event_loop_to_the_client():
    """Inside a running event loop (a notebook's) asyncio.run cannot run the identity probe: its RuntimeError was
    reported as "answered, but not as a dask scheduler". There the client's own connect is the check."""
    import asyncio

    from isotropy.measure.distributed import _check_is_scheduler

    async def probe():
        _check_is_scheduler("tcp://127.0.0.1:1", 1.0)
        return "left to the client"

    assert asyncio.run(probe()) == "left to the client"
    with pytest.raises(OSError, match="no dask scheduler answered within 1 s"):
        _check_is_scheduler("tcp://127.0.0.1:1", 1.0)


def test_a_metric_on_the_cluster_reports_its_tasks_to_the_callers_reporter(client):
    """On worker processes the kernels' blocks reach no reporter: `isotropy measure --workers 2 --progress` into a log
    file printed nothing for the minutes of a search (a user's trial). The tasks done, as the scheduler reports them,
    reach the caller's callback now."""
    from isotropy._utils.progress import reporting

    X = np.random.default_rng(4).normal(size=(1200, 6))
    calls = []
    with reporting(lambda done, total: calls.append((done, total))):
        value = isotropy.distributed.twonn_dimension(da.from_array(X, chunks=(100, 6)), chunk_size=200)
    assert value == pytest.approx(isotropy.twonn_dimension(X), rel=1e-12)
    assert calls and calls[-1][0] == calls[-1][1] > 1, calls
    assert all(0 <= done <= total for done, total in calls)


def test_measure_progress_into_a_log_on_the_cluster_says_how_far_each_metric_got(client, tmp_path):
    """`--progress` into a file on the dask path: one line per metric and per tenth of its tasks, whole lines."""
    import re

    from click.testing import CliRunner

    from isotropy.cli import cli

    X = np.random.default_rng(5).normal(size=(1500, 8)).astype(np.float32)
    for part in range(5):
        np.save(tmp_path / f"part{part}.npy", X[300 * part:300 * (part + 1)])
    result = CliRunner().invoke(cli, ["measure", str(tmp_path), "--scheduler", client.scheduler.address,
                                      "--metrics", "twonn_dimension,isoscore", "--progress"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("metrics ")]
    assert all(re.fullmatch(r"metrics [12]/2: (twonn_dimension|isoscore)( \d+%)?", line) for line in lines), lines
    assert "metrics 1/2: twonn_dimension 100%" in lines, result.stderr


def test_a_scheduler_that_refuses_the_progress_feed_still_computes(client, monkeypatch):
    """Following the tasks asks the scheduler to run a pickled function (its progress feed); one that refuses it (pickled
    code turned off) must not fail the metric: the results come without progress."""
    import dask.array as da

    from isotropy._utils.progress import reporting
    from isotropy.distributed import _graph

    def refused(futures, reporter):
        raise RuntimeError("pickled code is not allowed on this scheduler")

    monkeypatch.setattr(_graph, "_follow", refused)
    calls = []
    with reporting(lambda done, total: calls.append((done, total))):
        assert _graph.compute(da.ones((400, 4), chunks=(100, 4)).sum())[0] == 1600
    assert calls == []


@pytest.mark.parametrize("where", [[], ["--workers", "1"]], ids=["threads", "local-workers"])
def test_a_closed_stdout_on_the_dask_path_is_not_blamed_on_a_scheduler(tmp_path, where):
    """``isotropy measure SHARDS | head -1``: the pipe closed under the table (EPIPE, an OSError) was reported as
    "Error: --scheduler None: cannot connect ([Errno 32] Broken pipe); check the address" with exit status 2, though
    no --scheduler was given (a user trial). The reference is the in-memory command on the same rows: click's exit
    status 1 for a closed stdout, and no error line."""
    X = np.random.default_rng(0).normal(size=(60, 4))
    (tmp_path / "shards").mkdir()
    for part in range(3):
        np.save(tmp_path / "shards" / f"part-{part}.npy", X[20 * part:20 * (part + 1)])
    np.save(tmp_path / "x.npy", X)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}

    def closed_stdout(embeddings, *options):
        process = subprocess.Popen([sys.executable, "-m", "isotropy", "measure", str(embeddings), "--metrics",
                                    "isoscore,twonn_dimension", *options], env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        process.stdout.close()  # before the command has printed anything: its first line meets a closed pipe
        stderr = process.stderr.read()
        return process.wait(timeout=120), stderr

    reference = closed_stdout(tmp_path / "x.npy")
    assert reference == (1, "")
    assert closed_stdout(tmp_path / "shards", *where) == reference


@pytest.mark.parametrize("where", [None, [], ["--workers", "1"]], ids=["in-memory", "threads", "local-workers"])
def test_a_closed_stdout_still_gets_the_json_it_was_asked_for(tmp_path, where):
    """``isotropy measure X --json out.json | head -1``: the closed pipe under the table (EPIPE) ended the command with
    status 1 and no out.json, in memory and on dask (a user trial). The JSON the user asked for is now written, with
    every metric, and the command ends as a finished one (status 0); the values are those of the same command whose
    stdout is read (the reference, in process)."""
    from click.testing import CliRunner

    from isotropy.cli import cli

    X = np.random.default_rng(0).normal(size=(60, 4))
    np.save(tmp_path / "x.npy", X)
    (tmp_path / "shards").mkdir()
    for part in range(3):
        np.save(tmp_path / "shards" / f"part-{part}.npy", X[20 * part:20 * (part + 1)])
    metrics = ["--metrics", "isoscore,twonn_dimension,cosine_similarity_mean"]
    reference = tmp_path / "reference.json"
    assert CliRunner().invoke(cli, ["measure", str(tmp_path / "x.npy"), *metrics, "--json", str(reference)]
                              ).exit_code == 0
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "out.json"
    source = tmp_path / ("x.npy" if where is None else "shards")
    process = subprocess.Popen([sys.executable, "-m", "isotropy", "measure", str(source), *metrics, "--json", str(out),
                                *(where or [])], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    process.stdout.close()  # before the command has printed anything: its first line meets a closed pipe
    stderr = process.stderr.read()
    assert (process.wait(timeout=120), stderr) == (0, "")
    got, expected = (json.loads(path.read_text()) for path in (out, reference))
    assert got["complete"] is True and got["errors"] == {}
    if where:  # one worker process, in the singular (the record said "LocalCluster(1 worker processes, ...)")
        assert got["scheduler"].startswith("LocalCluster(1 worker process, memory_limit=")
    assert set(got["values"]) == set(expected["values"]) == {"isoscore", "twonn_dimension", "cosine_similarity_mean"}
    for name, value in expected["values"].items():
        assert got["values"][name] == pytest.approx(value, rel=1e-12), name
    if where is None:  # a JSON to stderr, still open, is written too (a review: only a file's was)
        process = subprocess.Popen([sys.executable, "-m", "isotropy", "measure", str(source), *metrics, "--json",
                                    "/dev/stderr"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        process.stdout.close()
        stderr = process.stderr.read()
        assert process.wait(timeout=120) == 0, stderr
        assert json.loads(stderr)["values"] == got["values"]
