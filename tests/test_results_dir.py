"""A fresh ``isotropy run`` only removes what the toolkit wrote (issue 19): a user's NOTES.md beside the results stays.

Before, a fresh run moved every entry of the results directory into ``.previous/`` and deleted it
once the new run had a result, the user's own notes included.
"""

from __future__ import annotations

import json
import os
import time

from isotropy.experiments._results import write_text
from isotropy.experiments._results_dir import MANIFEST_NAME, PREVIOUS_NAME, Replacement, ResultsLock, check_results_dir


def _run(results_dir, files, *, fail_before_result=False, killed=False):
    """What the runner does: lock, recover, move aside, write, commit (or restore when nothing was written)."""
    check_results_dir(results_dir)
    lock = ResultsLock(results_dir)
    lock.acquire()
    try:
        replacement = Replacement(results_dir)
        replacement.recover()
        replacement.move_aside()
        write_text(results_dir / "run.json", json.dumps({"status": "running"}))  # the run's writer, as the runner's
        if killed:
            return  # no restore, no commit, no release: the process died
        if fail_before_result:
            replacement.restore()
            return
        for name, text in files.items():
            write_text(results_dir / name, text)
            replacement.commit()
    finally:
        if not killed:
            lock.release()


def test_a_fresh_run_keeps_the_users_own_files(tmp_path):
    out = tmp_path / "results"
    _run(out, {"summary.json": "1", "seeds/seed_0.json": "a"})
    (out / "NOTES.md").write_text("my notes\n")
    (out / "extra").mkdir()
    (out / "extra" / "mine.txt").write_text("x")
    _run(out, {"summary.json": "2"})
    assert (out / "NOTES.md").read_text() == "my notes\n" and (out / "extra" / "mine.txt").read_text() == "x"
    assert (out / "summary.json").read_text() == "2"
    assert not (out / "seeds").exists() and not (out / PREVIOUS_NAME).exists()  # the toolkit's old files went
    assert "NOTES.md" not in json.loads((out / MANIFEST_NAME).read_text())
    _run(out, {"summary.json": "3"})  # and again
    assert (out / "NOTES.md").read_text() == "my notes\n"


def test_a_failed_run_restores_the_previous_results_and_keeps_the_users_files(tmp_path):
    out = tmp_path / "results"
    _run(out, {"summary.json": "1"})
    (out / "NOTES.md").write_text("my notes\n")
    _run(out, {}, fail_before_result=True)
    assert (out / "NOTES.md").read_text() == "my notes\n" and (out / "summary.json").read_text() == "1"
    assert not (out / PREVIOUS_NAME).exists()


def test_a_killed_run_is_recovered_without_touching_the_users_files(tmp_path):
    out = tmp_path / "results"
    _run(out, {"summary.json": "1"})
    (out / "NOTES.md").write_text("my notes\n")
    _run(out, {}, killed=True)
    assert (out / PREVIOUS_NAME / "summary.json").is_file() and (out / "NOTES.md").is_file()
    (out / ".isotropy.lock").unlink(missing_ok=True)  # the operating system released the dead process's lock
    _run(out, {"summary.json": "2"})
    assert (out / "NOTES.md").read_text() == "my notes\n" and (out / "summary.json").read_text() == "2"


def test_a_directory_from_before_the_list_keeps_files_newer_than_its_run_json(tmp_path):
    out = tmp_path / "results"
    out.mkdir()
    (out / "run.json").write_text("{}")
    (out / "summary.json").write_text("old")
    past = time.time() - 3600
    for name in ("run.json", "summary.json"):
        os.utime(out / name, (past, past))
    (out / "NOTES.md").write_text("my notes\n")
    _run(out, {"summary.json": "new"})
    assert (out / "NOTES.md").read_text() == "my notes\n" and (out / "summary.json").read_text() == "new"


def test_a_results_dir_that_cannot_be_made_is_said_as_the_option(tmp_path):
    """A file where a parent folder should be gave a bare '[Errno 20] Not a directory'."""
    import pytest

    (tmp_path / "file").write_text("x")
    lock = ResultsLock(tmp_path / "file" / "sub")
    with pytest.raises(ValueError, match=r"^--results-dir '.*file/sub' cannot be written \(not a directory\); expected "
                                         r"a directory this user can create and write in\.$"):
        lock.acquire()


def test_a_directory_whose_run_has_not_written_run_json_yet_is_in_use_not_foreign(tmp_path):
    """A second run that came while the first held the lock but had not yet written run.json was told the directory
    holds files that are not a run's (CI: test_concurrent_runs_one_wins_the_other_is_refused, under load)."""
    import subprocess
    import sys

    import pytest

    results = tmp_path / "r"
    code = ("import sys, time; from pathlib import Path; from isotropy.experiments._results_dir import ResultsLock; "
            "lock = ResultsLock(Path(sys.argv[1])); lock.acquire(); (Path(sys.argv[1]) / 'config.yaml').write_text('x'); "
            "print('held', flush=True); time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", code, str(results)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ValueError, match=r"^--results-dir '.*r' is in use by another run \(pid \d+ on .*\); wait "
                                             r"for it to finish or choose another directory\.$"):
            check_results_dir(results)
    finally:
        holder.kill()
        holder.wait()


# --- a run killed at any point of moving aside, restoring or committing (second Ctrl-C, kill -9) -------------------
# restore() deleted .previous/.kept.json (the user's names) first: killed after that, the next recover() took every
# entry for the new run's and deleted the user's NOTES.md and the previous run's files already moved back.


class _Killed(BaseException):
    """The process died here: nothing after it runs, no handler either."""


def _killed_after(monkeypatch, n):
    """Let ``n`` file-system changes (rename, unlink, rmdir, mkdir) happen, then die at each one that follows."""
    done = [0]
    dead = [False]

    def wrap(real):
        def changed(*args, **kwargs):
            if dead[0] or done[0] >= n:
                dead[0] = True
                raise _Killed
            done[0] += 1
            return real(*args, **kwargs)
        return changed

    for name in ("replace", "rename", "unlink", "remove", "rmdir", "mkdir"):
        monkeypatch.setattr(os, name, wrap(getattr(os, name)))
    return dead


def _tree(directory):
    """Every file and folder under ``directory`` (content of files), but the lock's own bookkeeping."""
    skip = {".isotropy.lock", ".isotropy.owner.json", MANIFEST_NAME}
    tree = {}
    for path in sorted(directory.rglob("*")):
        if path.relative_to(directory).parts[0] in skip:
            continue
        tree[str(path.relative_to(directory))] = path.read_bytes() if path.is_file() else None
    return tree


def _previous_run_and_users_files(out):
    _run(out, {"summary.json": "old", "seeds/seed_0.json": "old seed", "config.yaml": "old: 1", "claims.json": "[]",
               "figures/a.png": "png"})
    (out / "NOTES.md").write_text("my notes\n")
    (out / "mine").mkdir()
    (out / "mine" / "data.txt").write_text("mine")
    return _tree(out)


def _each_kill(tmp_path, monkeypatch, setup, step, check):
    """Run ``step`` killed after 0, 1, 2, ... changes until it finishes; after each kill, recover and ``check``."""
    for n in range(200):
        out = tmp_path / f"r{n}"
        state = setup(out)
        with monkeypatch.context() as patch:
            dead = _killed_after(patch, n)
            try:
                step(out)
            except _Killed:
                pass
        if not dead[0]:
            return n
        Replacement(out).recover()
        check(out, state, n)
    raise AssertionError("the step never finished")


def test_a_restore_killed_at_any_point_is_completed_by_the_next_recover(tmp_path, monkeypatch):
    def setup(out):
        before = _previous_run_and_users_files(out)
        replacement = Replacement(out)
        replacement.recover()
        replacement.move_aside()
        (out / "run.json").write_text('{"status": "running"}')  # the new run began, wrote no result
        (out / "config.yaml").write_text("new: 2")
        (out / "seeds").mkdir()
        (out / "seeds" / "seed_0.json").write_text("new seed")
        return before

    def check(out, before, n):
        assert _tree(out) == before, f"killed after {n} changes"

    steps = _each_kill(tmp_path, monkeypatch, setup, lambda out: Replacement(out).restore(), check)
    assert steps > 5  # every removal and every move back was a kill point


def test_a_move_aside_killed_at_any_point_is_undone_by_the_next_recover(tmp_path, monkeypatch):
    def check(out, before, n):
        assert _tree(out) == before, f"killed after {n} changes"

    steps = _each_kill(tmp_path, monkeypatch, _previous_run_and_users_files, lambda out: Replacement(out).move_aside(),
                       check)
    assert steps > 5


def test_a_commit_killed_at_any_point_keeps_the_new_results_and_nothing_of_the_previous_run(tmp_path, monkeypatch):
    def setup(out):
        _previous_run_and_users_files(out)
        with ResultsLock(out):  # the new run's files are written through its writer, under its lock: listed
            replacement = Replacement(out)
            replacement.move_aside()
            write_text(out / "run.json", '{"status": "running"}')
            write_text(out / "summary.json", "new")
            write_text(out / "other.json", "new")
        return _tree(out)

    def check(out, state, n):
        after = _tree(out)
        if n == 0:  # killed before the commit renamed .previous: a run with no result, the previous one comes back
            assert after["summary.json"] == b"old" and "other.json" not in after and "NOTES.md" in after
            return
        assert not any(name.startswith(PREVIOUS_NAME) for name in after), f"killed after {n} changes"
        assert after == {k: v for k, v in state.items() if not k.startswith(PREVIOUS_NAME)}, f"killed after {n} changes"

    _each_kill(tmp_path, monkeypatch, setup, lambda out: Replacement(out).commit(), check)


# --- recover() removed every ".*.tmp" under the results directory (rglob): a user's runs/ref/.my-notes.tmp and
# sub/.x.tmp were deleted. Only atomic_write's own leftovers (".<name>.<8 random>.tmp") where runs write go.


def test_recover_removes_only_the_atomic_writers_leftovers(tmp_path, monkeypatch):
    import pytest

    from isotropy._utils.atomic import atomic_write

    out = tmp_path / "results"
    _run(out, {"summary.json": "1", "seeds/seed_0.json": "a"})
    (out / ".my-notes.tmp").write_text("user data")
    (out / "sub").mkdir()
    (out / "sub" / ".x.tmp").write_text("user data 2")
    (out / "sub" / ".notes.md.abcd1234.tmp").write_text("in the user's own folder")
    for path in (out / "summary.json", out / "seeds" / "seed_1.json"):  # killed while writing: the temp file stays
        with monkeypatch.context() as patch, pytest.raises(_Killed):
            _killed_after(patch, 1)  # its mkdir of the folder, then the rename onto the file
            with atomic_write(path) as handle:
                handle.write("half")
    leftovers = sorted(p.name for p in out.rglob(".*.json.*.tmp"))
    assert len(leftovers) == 2, leftovers
    Replacement(out).recover()
    assert (out / ".my-notes.tmp").read_text() == "user data" and (out / "sub" / ".x.tmp").read_text() == "user data 2"
    assert (out / "sub" / ".notes.md.abcd1234.tmp").is_file()
    assert not list(out.rglob(".*.json.*.tmp"))
    assert (out / "summary.json").read_text() == "1" and (out / "seeds" / "seed_0.json").read_text() == "a"


def test_a_results_dir_or_run_json_that_is_a_fifo_or_a_device_is_named_as_such_unopened(tmp_path):
    """A FIFO run.json was 'holds files but no run.json' (and a FIFO --results-dir 'is not a directory'): now what it
    is, in the words of the results files' reader, without opening it (opening a FIFO blocks until a writer comes)."""
    import pytest

    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    results = tmp_path / "r"
    results.mkdir()
    os.mkfifo(results / "run.json")
    with pytest.raises(ValueError) as error:
        check_results_dir(results)
    assert str(error.value) == (f"--results-dir {str(results)!r} has a run.json that is a FIFO (named pipe), not a "
                                f"regular file ({str(results / 'run.json')!r}); expected the run.json an 'isotropy "
                                f"run' writes (a regular file), or a new or empty directory, or one an 'isotropy run' "
                                f"wrote.")
    (results / "run.json").unlink()
    (results / "run.json").symlink_to("/dev/null")
    with pytest.raises(ValueError, match=r"has a run\.json that is a character device, not a regular file \("):
        check_results_dir(results)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ValueError) as error:
        check_results_dir(fifo)
    assert str(error.value) == (f"--results-dir {str(fifo)!r} is a FIFO (named pipe), not a directory; expected a new "
                                f"or empty directory, or one an 'isotropy run' wrote.")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match=r"file' is a regular file, not a directory; expected a new or empty "):
        check_results_dir(tmp_path / "file")


def test_a_run_that_fails_early_removes_the_folders_it_created_above_its_directory(tmp_path):
    """A docs trial: a run failing on a missing data set removed results/frozen-classification/minilm/ but left the
    results/ and results/frozen-classification/ it had created, empty. Those go too; a folder that existed before,
    or that another run wrote in meanwhile, stays."""
    results = tmp_path / "results" / "frozen-classification" / "minilm"
    _run(results, {}, fail_before_result=True)
    assert not (tmp_path / "results").exists()

    (tmp_path / "kept").mkdir()
    _run(tmp_path / "kept" / "a" / "b", {}, fail_before_result=True)
    assert (tmp_path / "kept").is_dir() and not (tmp_path / "kept" / "a").exists()

    lock = ResultsLock(tmp_path / "shared" / "one")
    lock.acquire()
    (tmp_path / "shared" / "other").mkdir()  # another run's directory beside it
    lock.release()
    assert not (tmp_path / "shared" / "one").exists() and (tmp_path / "shared" / "other").is_dir()
