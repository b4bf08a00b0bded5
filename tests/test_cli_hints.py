"""Command-line advice that leads somewhere (from a user trial: each failed as described before its fix)."""

from __future__ import annotations

import contextlib

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from isotropy.cli import cli


def test_parquet_shards_with_a_label_column_are_told_to_name_the_folder(tmp_path):
    """The advice named one shard (--labels pshards/part-0.parquet), which gave the same error again."""
    rng = np.random.default_rng(0)
    folder = tmp_path / "pshards"
    folder.mkdir()
    for k in range(2):
        frame = pd.DataFrame(rng.normal(size=(40, 4)), columns=list("abcd"))
        frame["label"] = rng.integers(0, 3, 40)
        frame.to_parquet(folder / f"part-{k}.parquet")
    refused = CliRunner().invoke(cli, ["measure", str(folder), "--metrics", "isoscore"])
    assert refused.exit_code != 0
    assert f"give the labels with --labels {folder} --label-column label" in refused.output
    followed = CliRunner().invoke(cli, ["measure", str(folder), "--labels", str(folder), "--label-column", "label",
                                        "--metrics", "isoscore,silhouette_score"])
    assert followed.exit_code == 0, followed.output
    assert "silhouette_score" in followed.output


def test_an_empty_experiment_shortcut_is_refused(tmp_path):
    """--data-path "" (an unset shell variable) became null, and the run then asked for --data-path."""
    result = CliRunner().invoke(cli, ["run", "classifier-geometry", "--setup", "table", "--data-path", "",
                                      "--seeds", "0", "--results-dir", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert "Invalid value for '--data-path': expected a value. Got '' instead (empty: an unset shell variable?)" \
        in result.output
    assert not (tmp_path / "r").exists()


def test_a_results_folder_as_setup_points_to_its_config(tmp_path):
    run = tmp_path / "cg1"
    run.mkdir()
    (run / "config.yaml").write_text("experiment: classifier-geometry\n")
    result = CliRunner().invoke(cli, ["run", "classifier-geometry", "--setup", str(run), "--print-config"])
    assert result.exit_code != 0  # (the console command prints the error as one 'Error:' line)
    assert f"To run the configuration of that results folder again, give --setup '{run / 'config.yaml'}'." \
        in str(result.exception)


def test_gzipped_word_vectors_are_read_as_the_experiments_read_them(tmp_path):
    """docs/models.md lists .gz word-vector files, but read_word_vectors read the compressed bytes as text and
    'isotropy measure vectors.txt.gz' said "unknown file extension '.gz'" (a user trial)."""
    import gzip

    from isotropy.io.word_vectors import read_word_vectors

    rng = np.random.default_rng(0)
    X = (rng.integers(-99, 99, size=(30, 5)) / 8).astype(np.float32)
    text = "".join(f"w{i} " + " ".join(repr(float(v)) for v in row) + "\n" for i, row in enumerate(X))
    plain, packed = tmp_path / "v.txt", tmp_path / "v.txt.gz"
    plain.write_text(text)
    packed.write_bytes(gzip.compress(text.encode()))
    words, got = read_word_vectors(packed)
    assert words == [f"w{i}" for i in range(30)] and np.array_equal(got, X)
    outputs = [CliRunner().invoke(cli, ["measure", str(path), "--metrics", "isoscore,participation_ratio"])
               for path in (plain, packed)]
    assert all(r.exit_code == 0 for r in outputs), outputs[1].output
    # the metric and value columns (the first line names the file; the last column is each metric's seconds)
    tables = [[line.split()[:2] for line in r.output.splitlines()[1:] if line.strip()] for r in outputs]
    assert tables[0] == tables[1] and len(tables[0]) == 3 and "30 samples x 5 features" in outputs[1].output
    assert not list(tmp_path.glob("isotropy-vectors-*"))


def test_a_gzip_bomb_of_word_vectors_is_refused_and_leaves_nothing(tmp_path, monkeypatch):
    import gzip
    import tempfile

    from isotropy import IsotropyValueError
    from isotropy.io.word_vectors import read_word_vectors

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the decompressed bytes would go
    bomb = tmp_path / "v.vec.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as out:
        out.write(b"2 3\na 1 2 3\n")  # text (its first vector line reads as one): decompressed whole, then read
        for _ in range(80):
            out.write(b" " * 2**20)  # 80 MiB of spaces: ~80 KiB compressed
    with pytest.raises(IsotropyValueError, match=r"v.vec.gz' expands from \d+ to at least \d+ bytes .* as a "
                                                 r"decompression bomb would"):
        read_word_vectors(bomb)
    assert not list(tmp_path.glob("isotropy-vectors-*"))
    # with no vector line after its header it reads as word2vec binary, parsed as it decompresses: refused at its
    # first record (tests/test_io_word_vectors_gzip.py has the bomb cap of that stream)
    with gzip.open(bomb, "wb", compresslevel=9) as out:
        out.write(b"2 3\n")
        for _ in range(80):
            out.write(b" " * 2**20)
    with pytest.raises(IsotropyValueError, match=r"v.vec.gz' has an empty word at vector 0: the header '2 3' does not"):
        read_word_vectors(bomb)
    assert not list(tmp_path.glob("isotropy-vectors-*"))
    small = tmp_path / "small.vec.gz"
    small.write_bytes(gzip.compress(b"2 3\na 1 2 3\nb 4 5 6\n")[:-6])  # cut short
    with pytest.raises(IsotropyValueError, match=r"small.vec.gz' is not a readable gzip file \(EOFError"):
        read_word_vectors(small)
    assert not list(tmp_path.glob("isotropy-vectors-*"))


def test_a_file_read_into_this_process_on_local_workers_says_how_the_workers_read_it(tmp_path, monkeypatch):
    """On --workers, a file read into this process (word vectors, CSV) goes to the workers with each metric's tasks:
    dask's own warning ("Sending large graph ... Consider loading the data with Dask directly") named nothing a user
    of the command can do. A note now says what does (.npy or shards, read by the workers); none for a .npy."""
    monkeypatch.setattr("isotropy.measure.distributed._HOLD_BYTES", 0)  # not held by the workers: as a large file
    X = np.random.default_rng(0).normal(size=(200, 6)).astype(np.float32)
    text, npy = tmp_path / "v.txt", tmp_path / "v.npy"
    text.write_text("".join(f"w{i} " + " ".join(f"{v:.6f}" for v in row) + "\n" for i, row in enumerate(X)))
    np.save(npy, X)
    said = CliRunner().invoke(cli, ["measure", str(text), "--workers", "1", "--metrics", "isoscore"])
    assert said.exit_code == 0, said.output
    assert f"Note: {text} is read into this process and sent to the workers with each metric's tasks; as .npy or a " \
           f"folder of .npy/.parquet shards the workers read it themselves." in said.output
    quiet = CliRunner().invoke(cli, ["measure", str(npy), "--workers", "1", "--metrics", "isoscore"])
    assert quiet.exit_code == 0, quiet.output
    assert "read into this process" not in quiet.output


# The Ctrl-C tests' commands handle SIGINT as Python does when a terminal starts them. A suite started as a script's
# background job ignores SIGINT and its commands inherit that (and keep it ignored, as they should:
# test_a_ctrl_c_ignored_by_the_parent_stays_ignored): the tests would fail for where they were run from.
_CTRL_C_AS_IN_A_TERMINAL = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)"


def _live_members(group: int) -> list:
    """The processes of the process group ``group`` that still run (Linux's /proc): not the zombies, which an init
    that reaps no orphan (a container's ``tail -f /dev/null``) keeps in the group, as multiprocessing's resource
    tracker, which the command never waits for."""
    from pathlib import Path

    live = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()  # after the command's name, which may hold spaces
        except (OSError, IndexError):  # gone meanwhile
            continue
        if int(fields[2]) == group and fields[0] != "Z":  # state, ppid, pgrp
            live.append(int(stat.parent.name))
    return live


def _interrupt_at_twonn(command, *, whole_group: bool):
    """Run ``command`` (a new session), send it Ctrl-C two seconds into its TwoNN search (the whole process group, as a
    terminal does, or the command alone), and return ``(exit status, stderr)``; killed after 600 s in any case."""
    import os
    import signal
    import subprocess
    import threading
    import time

    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    watchdog = threading.Timer(600, lambda: os.killpg(process.pid, signal.SIGKILL))  # never hang the suite
    watchdog.start()
    try:
        before = []
        for line in process.stderr:  # the TwoNN note comes once the cluster is up, just before its search
            before.append(line)
            if line.startswith("Note: twonn_dimension"):
                break
        assert process.poll() is None, "".join(before)
        time.sleep(2)  # the search under way
        (os.killpg if whole_group else os.kill)(process.pid, signal.SIGINT)
        _, rest = process.communicate(timeout=300)
        return process.returncode, "".join(before) + rest
    finally:
        watchdog.cancel()
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)


def test_ctrl_c_on_local_workers_ends_in_the_commands_own_line(tmp_path):
    """A terminal's Ctrl-C reaches the whole process group: each worker printed its own KeyboardInterrupt traceback
    and asyncio its "Task exception was never retrieved" (a user trial). The workers now start with Ctrl-C
    blocked (the command closes them) and asyncio's log is silenced as distributed's: the command's lines only."""
    import sys

    data = tmp_path / "big.npy"
    np.save(data, np.random.default_rng(0).normal(size=(400_000, 32)).astype(np.float32))  # TwoNN: a minute or more
    command = [sys.executable, "-c", (f"{_CTRL_C_AS_IN_A_TERMINAL}; import runpy; runpy.run_module('isotropy', "
                                      f"run_name='__main__', alter_sys=True)"), "measure", str(data), "--workers", "2", "--metrics",
               "isoscore,twonn_dimension"]
    status, err = _interrupt_at_twonn(command, whole_group=True)  # as a terminal's Ctrl-C: the whole process group
    assert status == 130, err
    assert "Traceback" not in err and "Task exception" not in err, err
    assert len([line for line in err.splitlines() if line.strip()]) <= 3, err


def test_ctrl_c_on_a_scheduler_cluster_ends_in_the_commands_own_line(tmp_path):
    """With --scheduler, a Ctrl-C during a metric printed asyncio's "Task exception was never retrieved" and an AllExit
    traceback after "Error: interrupted." (a user trial), as on local workers before; the cluster, not the command's,
    keeps running and still computes."""
    import sys

    from distributed import Client, LocalCluster

    data = tmp_path / "big.npy"
    X = np.random.default_rng(0).normal(size=(400_000, 32)).astype(np.float32)  # TwoNN: a minute or more
    np.save(data, X)
    with LocalCluster(n_workers=1, processes=True, threads_per_worker=1, memory_limit="1GiB", dashboard_address=None,
                      scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}) as cluster:
        command = [sys.executable, "-c", (f"{_CTRL_C_AS_IN_A_TERMINAL}; import runpy; runpy.run_module('isotropy', "
                                          f"run_name='__main__', alter_sys=True)"), "measure", str(data), "--scheduler",
                   cluster.scheduler_address, "--metrics", "isoscore,twonn_dimension"]
        status, err = _interrupt_at_twonn(command, whole_group=False)  # the command's: the cluster runs apart from it
        assert status == 130, err
        assert "Traceback" not in err and "Task exception" not in err, err
        assert err.splitlines()[-1] == "Error: interrupted.", err
        with Client(cluster) as client:  # the cluster was left as it was
            assert client.submit(sum, [1, 2]).result() == 3


def test_ctrl_c_while_the_local_workers_start_stops_the_command(tmp_path):
    """A Ctrl-C in the seconds the local workers started was lost (SIGINT was ignored then, for the workers to inherit
    it so): the command went on to measure everything. It now stops the command once the start is over, with its
    "Interrupted." and status 130, and no worker process is left behind."""
    import os
    import signal
    import subprocess
    import sys
    import textwrap
    import threading
    import time

    data = tmp_path / "x.npy"
    np.save(data, np.random.default_rng(0).normal(size=(2000, 8)).astype(np.float32))  # measured in a second
    # the start held for a while once a worker process is up: the Ctrl-C comes while the cluster starts
    script = _CTRL_C_AS_IN_A_TERMINAL + textwrap.dedent(f"""
        import asyncio, sys
        from distributed.nanny import Nanny

        started = Nanny.start_unsafe

        async def start_unsafe(self):
            result = await started(self)
            print("worker up", file=sys.stderr, flush=True)
            await asyncio.sleep(3)
            return result

        Nanny.start_unsafe = start_unsafe
        from isotropy.__main__ import entry
        entry(["measure", {str(data)!r}, "--workers", "2", "--metrics", "isoscore"])
    """)
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    watchdog = threading.Timer(300, lambda: os.killpg(process.pid, signal.SIGKILL))  # never hang the suite
    watchdog.start()
    try:
        before = []
        for line in process.stderr:
            before.append(line)
            if line.startswith("worker up"):
                break
        assert process.poll() is None, "".join(before)
        os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
        sent = time.monotonic()
        out, rest = process.communicate(timeout=60)
        took = time.monotonic() - sent
        err = "".join(before) + rest
        gone = time.monotonic() + 20  # the workers end as the command closes them (or when it is gone)
        while _live_members(process.pid):
            assert time.monotonic() < gone, f"processes outlived the command: {_live_members(process.pid)}"
            time.sleep(0.2)
    finally:
        watchdog.cancel()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, (out, err)
    assert took < 30, took  # the start's few seconds (held 3 s here) and the workers' close, not the whole table
    assert "isoscore" not in out, out  # no table: it stopped before the first metric
    assert err.strip().splitlines()[-1] == "Interrupted." and "Traceback" not in err, err


def test_gzipped_text_vectors_with_a_limit_are_read_as_they_decompress(tmp_path, monkeypatch):
    """With a limit (classifier-geometry's vocab_limit), a gzipped text file was decompressed whole to a temporary
    file first (GoogleNews: gigabytes for a few thousand words; a review). Its first lines are now read as they
    decompress, no temporary file; a stream cut short is either read to the limit before its end or refused."""
    import gzip
    import tempfile

    from isotropy import IsotropyValueError
    from isotropy.io.word_vectors import read_word_vectors

    rng = np.random.default_rng(0)
    X = (rng.integers(-99, 99, size=(1000, 5)) / 8).astype(np.float32)
    text = "1000 5\n" + "".join(f"w{i} " + " ".join(repr(float(v)) for v in row) + "\n" for i, row in enumerate(X))
    path = tmp_path / "v.vec.gz"
    data = gzip.compress(text.encode(), mtime=0)
    path.write_bytes(data)

    def no_temporary_file(*args, **kwargs):
        raise AssertionError("a temporary file was made")

    monkeypatch.setattr(tempfile, "mkstemp", no_temporary_file)
    words, got = read_word_vectors(path, limit=10)
    assert words == [f"w{i}" for i in range(10)] and np.array_equal(got, X[:10])
    for cut in range(10, len(data), max(1, len(data) // 40)):
        path.write_bytes(data[:cut])
        for limit in (10, 500):
            try:
                words, got = read_word_vectors(path, limit=limit)
            except IsotropyValueError as exc:
                assert "is not a readable gzip file" in str(exc) or "holds no word vectors" in str(exc), str(exc)
            else:
                assert len(words) == limit and np.array_equal(got, X[:limit])


class _Started:
    """What a start returns, and whether it was closed."""

    def __init__(self):
        self.closed = 0

    def close(self):
        self.closed += 1


def _start_with_a_ctrl_c():
    """A start during which this process gets a Ctrl-C (SIGINT), and what it started."""
    import os
    import signal

    started = _Started()

    def start():
        os.kill(os.getpid(), signal.SIGINT)
        return started

    return start, started


@pytest.fixture
def python_ctrl_c():
    """SIGINT handled by Python's default handler during the test (a suite started as a script's background job
    ignores it, and the start then rightly leaves it so), restored after."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_ctrl_c_during_the_start_is_raised_once_it_is_over_and_what_started_is_closed(python_ctrl_c):
    import signal

    from isotropy.measure.distributed import _start_shielded_from_ctrl_c

    start, started = _start_with_a_ctrl_c()
    with pytest.raises(KeyboardInterrupt):
        _start_shielded_from_ctrl_c(start)
    assert started.closed == 1
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])


def test_a_ctrl_c_during_a_start_that_fails_is_the_ctrl_c(python_ctrl_c):
    """A Ctrl-C, then the start failed: the start's error reached the user, the Ctrl-C was dropped. It is now the
    Ctrl-C, the error chained; a failed start without one is its own error, the handler restored either way."""
    import os
    import signal

    from isotropy.measure.distributed import _start_shielded_from_ctrl_c

    def failing(ctrl_c: bool):
        def start():
            if ctrl_c:
                os.kill(os.getpid(), signal.SIGINT)
            raise OSError("the scheduler could not bind")
        return start

    with pytest.raises(KeyboardInterrupt) as interrupted:
        _start_shielded_from_ctrl_c(failing(True))
    assert isinstance(interrupted.value.__context__, OSError)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(OSError, match="could not bind"):
        _start_shielded_from_ctrl_c(failing(False))
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])


def test_the_start_blocks_ctrl_c_outside_the_main_thread_too(python_ctrl_c):
    """Where no handler can be set (not the main thread), SIGINT was left as it was during the start, so that the
    workers took a terminal's Ctrl-C; it is now blocked there too, then unblocked."""
    import signal
    import threading

    from isotropy.measure.distributed import _start_shielded_from_ctrl_c

    seen = {}

    def start():
        seen["during"] = signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        return _Started()

    def thread():
        seen["started"] = _start_shielded_from_ctrl_c(start)
        seen["after"] = signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])

    worker = threading.Thread(target=thread)
    worker.start()
    worker.join(30)
    assert seen["during"] and not seen["after"] and seen["started"].closed == 0


def test_a_ctrl_c_ignored_by_the_parent_stays_ignored():
    """A process started with SIGINT ignored (a script's background job) kept it ignored everywhere but while the local
    workers started, where a Ctrl-C was noted and raised: the command stopped on a Ctrl-C meant for none of its
    processes. It now stays ignored (and the workers inherit that)."""
    import signal

    from isotropy.measure.distributed import _start_shielded_from_ctrl_c

    start, started = _start_with_a_ctrl_c()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert _start_shielded_from_ctrl_c(start) is started
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
    assert started.closed == 0


def test_a_ctrl_c_during_the_start_goes_to_the_handler_in_place():
    """An application's own SIGINT handler (one that does not raise) gets the Ctrl-C once the start is over, and the
    cluster it started is kept: it was closed and KeyboardInterrupt raised whatever the handler."""
    import signal

    from isotropy.measure.distributed import _start_shielded_from_ctrl_c

    start, started = _start_with_a_ctrl_c()
    calls = []

    def handler(signum, frame):
        calls.append(signum)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        assert _start_shielded_from_ctrl_c(start) is started
        assert signal.getsignal(signal.SIGINT) is handler
    finally:
        signal.signal(signal.SIGINT, previous)
    assert calls == [signal.SIGINT] and started.closed == 0
