"""The versions recorded beside every result: the git commit a run was made from (isotropy._utils.versions)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import isotropy
from isotropy._utils.versions import _git_revision, package_versions, source_revision


def _git(root, *args):
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "HOME": str(root), "PATH": os.environ.get("PATH", "")}
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True, env=env).stdout.strip()


@pytest.fixture
def checkout(tmp_path):
    root = tmp_path / "a repo"  # a space in the path
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "code.py").write_text("x = 1\n")
    (root / "notes.txt").write_text("a\n")
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "first")
    return root


def test_git_revision_is_the_commit_and_says_when_the_package_was_changed(checkout):
    head = _git(checkout, "rev-parse", "HEAD")
    assert len(head) == 40
    assert _git_revision(checkout, "pkg") == head
    (checkout / "notes.txt").write_text("b\n")  # outside the package: the package's code is the commit's
    (checkout / "pkg" / "new.py").write_text("y = 2\n")  # untracked: not imported by anything tracked
    assert _git_revision(checkout, "pkg") == head
    (checkout / "pkg" / "code.py").write_text("x = 2\n")
    assert _git_revision(checkout, "pkg") == head + "+modified"
    (checkout / "pkg" / "code.py").write_text("x = 1\n")  # the commit's bytes again
    assert _git_revision(checkout, "pkg") == head
    (checkout / "pkg" / "code.py").unlink()
    assert _git_revision(checkout, "pkg") == head + "+modified"


def test_git_revision_is_none_outside_a_checkout_of_that_root(checkout, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    assert _git_revision(plain, "pkg") is None  # not a checkout
    assert _git_revision(checkout / "pkg", "pkg") is None  # inside a checkout of something else
    (checkout / ".git" / "HEAD").write_text("garbage\n")  # a broken checkout: no error, no commit
    assert _git_revision(checkout, "pkg") is None


def test_programs_the_checkout_configures_are_not_run(checkout, tmp_path):
    """A file system monitor and a clean filter: git status would start both (the file's timestamp below is not
    the index's); the revision reads only the repository."""
    head = _git(checkout, "rev-parse", "HEAD")
    marker = tmp_path / "ran"
    (checkout / ".gitattributes").write_text("*.py filter=evil\n")
    _git(checkout, "add", ".gitattributes")
    _git(checkout, "commit", "-q", "-m", "attributes")
    head = _git(checkout, "rev-parse", "HEAD")
    _git(checkout, "config", "core.fsmonitor", f"touch '{marker}'; false")
    _git(checkout, "config", "filter.evil.clean", f"sh -c \"touch '{marker}'; cat\"")
    os.utime(checkout / "pkg" / "code.py", (946684800, 946684800))
    assert _git_revision(checkout, "pkg") == head
    assert not marker.exists()


def test_the_environment_does_not_choose_another_repository(checkout, tmp_path, monkeypatch):
    other = tmp_path / "other"
    (other / "pkg").mkdir(parents=True)
    (other / "pkg" / "b.py").write_text("b = 1\n")
    _git(other, "init", "-q")
    _git(other, "add", ".")
    _git(other, "commit", "-q", "-m", "other")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))  # as in a git hook that runs isotropy
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    assert _git_revision(checkout, "pkg") == _git(checkout, "rev-parse", "HEAD")


def test_every_record_carries_the_source_revision():
    recorded = package_versions()["isotropy-source"]
    assert recorded == source_revision()
    root = Path(isotropy.__file__).resolve().parents[1]
    try:  # a checkout git can read (the tests' own clone): its HEAD
        head = _git(root, "rev-parse", "HEAD") if (root / ".git").exists() else None
    except subprocess.CalledProcessError:  # e.g. a checkout owned by another user, which git refuses
        head = None
    if head is None:  # an installed package, or no commit git will name
        assert recorded is None
    else:
        assert recorded.removesuffix("+modified") == head
