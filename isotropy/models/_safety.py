"""No code runs from a model directory or a checkpoint.

Two rules, applied by every loader of the package:

- **Model directories.** transformers runs a directory's own Python module when its
  ``config.json`` (or ``tokenizer_config.json``) has an ``auto_map`` and ``trust_remote_code`` is
  not ``False``; left unset it *prompts* on stdin, so any "y" on stdin runs the code.
  :func:`refuse_remote_code` reads those JSON files (never executes them), in the directory and in
  each module folder its ``modules.json`` lists (with ``sentence_bert_config.json``'s
  ``*_args: {trust_remote_code: true}``), and refuses such a directory in one line, and :data:`NO_REMOTE_CODE` is passed explicitly to every
  ``from_pretrained`` / ``SentenceTransformer`` call as a second lock. A sentence-transformers
  ``modules.json`` naming a class outside ``sentence_transformers`` is refused the same way
  (sentence-transformers would import it).
- **Checkpoints.** :func:`load_checkpoint` reads tensors and plain data only
  (``torch.load(weights_only=True)``): a pickled object in the file is an error, never a call.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from isotropy._utils import jsontext
from isotropy._utils.validation import IsotropyValueError

__all__ = ["NO_REMOTE_CODE", "load_checkpoint", "refuse_remote_code"]

#: keyword arguments for every transformers / sentence-transformers load
NO_REMOTE_CODE = {"trust_remote_code": False}

_MAX_JSON_BYTES = 16 * 2**20  # a config larger than this is not a config


def _read_json(path: Path) -> object:
    try:
        if path.stat().st_size > _MAX_JSON_BYTES:
            raise IsotropyValueError(f"The model file {str(path)!r} is {path.stat().st_size} bytes: expected a JSON "
                                     f"configuration of at most {_MAX_JSON_BYTES} bytes.")
        return jsontext.loads(path.read_text(encoding="utf-8"))  # deep nesting: JSONDecodeError too
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise IsotropyValueError(f"The model file {str(path)!r} is not valid JSON ({exc.__class__.__name__}): "
                                 f"expected a Hugging Face configuration file.") from None


def refuse_remote_code(location: str | os.PathLike) -> None:
    """Refuse a local model directory that would need its own Python code to load.

    Parameters
    ----------
    location : path-like
        A resolved model location; a hub name (not a local directory) is left to the loaders,
        which get ``trust_remote_code=False``.

    Raises
    ------
    IsotropyValueError
        When ``config.json`` or ``tokenizer_config.json`` declares an ``auto_map`` (custom classes
        in the directory's ``.py`` files), ``sentence_bert_config.json`` sets ``trust_remote_code``
        in its ``model_args``/``config_args``/``tokenizer_args``, or ``modules.json`` names a module
        class that is not part of sentence-transformers. The folders of the modules listed in
        ``modules.json`` (``0_Transformer/``) are checked as the directory itself is.
    """
    path = Path(location).expanduser()
    if not path.is_dir():
        return
    _refuse_code_in_folder(path, path)
    modules = path / "modules.json"
    if modules.is_file():
        content = _read_json(modules)
        entries = content if isinstance(content, list) else []
        for entry in entries:
            kind = entry.get("type", "") if isinstance(entry, dict) else ""
            if not (isinstance(kind, str) and kind.startswith("sentence_transformers.")):
                raise IsotropyValueError(
                    f"The model directory {str(path)!r} lists the module {str(kind)[:80]!r} in modules.json; "
                    f"isotropy never imports code named by a model (trust_remote_code=False): expected "
                    f"sentence_transformers.* modules only.")
        # each module's own folder (sentence-transformers loads a Transformer module from it, e.g. 0_Transformer/):
        # its config.json, tokenizer_config.json and sentence_bert_config.json are read by the loaders as the
        # top-level ones are
        for entry in entries:
            sub = entry.get("path") if isinstance(entry, dict) else None
            if isinstance(sub, str) and sub not in ("", "."):
                folder = path / sub
                if folder.is_dir():
                    _refuse_code_in_folder(path, folder)


_ARGS_KEYS = ("model_args", "config_args", "tokenizer_args", "processor_args", "model_kwargs", "config_kwargs",
              "tokenizer_kwargs", "processor_kwargs")


def _refuse_code_in_folder(model: Path, folder: Path) -> None:
    """Refuse ``folder`` (``model`` itself or one of its modules' folders) when a file in it asks for custom code."""
    for name in ("config.json", "tokenizer_config.json"):
        file = folder / name
        if file.is_file():
            content = _read_json(file)
            if isinstance(content, dict) and content.get("auto_map"):
                raise IsotropyValueError(
                    f"The model directory {str(model)!r} needs its own Python code ('auto_map' in {_shown(model, file)}); "
                    f"isotropy never runs code shipped with a model (trust_remote_code=False): expected a model whose "
                    f"architecture transformers implements.")
    file = folder / "sentence_bert_config.json"
    if file.is_file():
        content = _read_json(file)
        if isinstance(content, dict):
            for key in _ARGS_KEYS:
                args = content.get(key)
                if isinstance(args, dict) and args.get("trust_remote_code"):
                    raise IsotropyValueError(
                        f"The model directory {str(model)!r} asks for its own Python code ('trust_remote_code' in "
                        f"{key} of {_shown(model, file)}); isotropy never runs code shipped with a model "
                        f"(trust_remote_code=False): expected a model whose architecture transformers implements.")


def _shown(model: Path, file: Path) -> str:
    """``file`` as named in a refusal: relative to the model directory (``0_T/config.json``), else in full."""
    try:
        return str(file.relative_to(model))
    except ValueError:
        return str(file)


def load_checkpoint(path: str | os.PathLike, *, map_location="cpu", what: str = "checkpoint") -> dict:
    """Read a checkpoint of tensors and plain data (``torch.load(weights_only=True)``).

    A file that holds anything else (a pickled object, a truncated or random file, a compressed
    entry that would expand as a decompression bomb: see :mod:`isotropy.io._archives`) is refused
    in one line naming the file; nothing in it is executed.
    """
    import pickle

    import torch

    from isotropy.io._archives import zip_expansion_problem
    from isotropy.io._paths import check_regular_file

    # a device or a FIFO: zipfile's test below read /dev/zero without end (24 GB before the kernel killed it)
    check_regular_file(path, f"The {what}", "a checkpoint file written by isotropy", value_error=IsotropyValueError)
    problem = zip_expansion_problem(path)  # torch.save stores its entries: a deflated one may be a bomb
    if problem is not None:
        raise IsotropyValueError(f"The {what} {str(path)!r} could not be read as tensors and plain data ({problem}): "
                                 f"expected a checkpoint written by isotropy (torch.save does not compress); delete "
                                 f"it to start over.")
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, TypeError, AttributeError, OSError, KeyError,
            IndexError) as exc:
        if "Weights only load failed" in str(exc):  # torch's message then advises weights_only=False: not repeated
            raise IsotropyValueError(f"The {what} {str(path)!r} could not be read as tensors and plain data "
                                     f"(torch.load(weights_only=True) refused the pickled Python objects it holds; "
                                     f"isotropy never unpickles, as that can run code): expected a checkpoint written "
                                     f"by isotropy; delete it to start over.") from None
        first = (str(exc).strip().splitlines() or [exc.__class__.__name__])[0][:160]
        raise IsotropyValueError(f"The {what} {str(path)!r} could not be read as tensors and plain data "
                                 f"(torch.load(weights_only=True): {first}): expected a checkpoint written by "
                                 f"isotropy; delete it to start over.") from None
    if not isinstance(state, dict):
        raise IsotropyValueError(f"The {what} {str(path)!r} holds a {type(state).__name__}: expected a dict "
                                 f"written by isotropy; delete it to start over.")
    return state
