"""The versions recorded beside every result: the git commit a run was made from (isotropy._utils.versions)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import isotropy
from isotropy._utils.versions import _git_revision, package_versions, source_revision


def _git(root, *args):
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "HOME": str(root), "PATH": "/usr/bin:/bin:/usr/local/bin"}
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True, env=env).stdout.strip()


@pytest.fixture
def checkout(tmp_path):
    root = tmp_path / "repo"
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


def test_git_revision_is_none_outside_a_checkout_of_that_root(checkout, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    assert _git_revision(plain, "pkg") is None  # not a checkout
    assert _git_revision(checkout / "pkg", "pkg") is None  # inside a checkout of something else
    (checkout / ".git" / "HEAD").write_text("garbage\n")  # a broken checkout: no error, no commit
    assert _git_revision(checkout, "pkg") is None


def test_a_file_system_monitor_in_the_checkout_config_is_not_run(checkout, tmp_path):
    marker = tmp_path / "ran"
    _git(checkout, "config", "core.fsmonitor", f"touch {marker}; false")
    assert _git_revision(checkout, "pkg") == _git(checkout, "-c", "core.fsmonitor=false", "rev-parse", "HEAD")
    assert not marker.exists()


def test_every_record_carries_the_source_revision():
    recorded = package_versions()["isotropy-source"]
    assert recorded == source_revision()
    root = Path(isotropy.__file__).resolve().parents[1]
    if (root / ".git").exists():  # a checkout (the tests' own clone): its HEAD
        assert recorded.removesuffix("+modified") == _git(root, "rev-parse", "HEAD")
    else:  # an installed package: no commit to name
        assert recorded is None
