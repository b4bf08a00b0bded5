"""No code runs from a model directory or a checkpoint.

Two rules, applied by every loader of the package:

- **Model directories.** transformers runs a directory's own Python module when its
  ``config.json`` (or ``tokenizer_config.json``) has an ``auto_map`` and ``trust_remote_code`` is
  not ``False``; left unset it *prompts* on stdin, so any "y" on stdin runs the code.
  :func:`refuse_remote_code` reads those JSON files (never executes them) and refuses such a
  directory in one line, and :data:`NO_REMOTE_CODE` is passed explicitly to every
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
        in the directory's ``.py`` files), or ``modules.json`` names a module class that is not
        part of sentence-transformers.
    """
    path = Path(location).expanduser()
    if not path.is_dir():
        return
    for name in ("config.json", "tokenizer_config.json"):
        file = path / name
        if file.is_file():
            content = _read_json(file)
            if isinstance(content, dict) and content.get("auto_map"):
                raise IsotropyValueError(
                    f"The model directory {str(path)!r} needs its own Python code ('auto_map' in {name}); isotropy "
                    f"never runs code shipped with a model (trust_remote_code=False): expected a model whose "
                    f"architecture transformers implements.")
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
