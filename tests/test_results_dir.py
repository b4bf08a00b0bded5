"""A fresh ``isotropy run`` only removes what the toolkit wrote (issue 19): a user's NOTES.md beside the results stays.

Before, a fresh run moved every entry of the results directory into ``.previous/`` and deleted it
once the new run had a result, the user's own notes included.
"""

from __future__ import annotations

import json
import os
import time

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
        (results_dir / "run.json").write_text(json.dumps({"status": "running"}))
        if killed:
            return  # no restore, no commit, no release: the process died
        if fail_before_result:
            replacement.restore()
            return
        for name, text in files.items():
            path = results_dir / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
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
