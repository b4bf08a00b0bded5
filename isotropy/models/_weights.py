"""Weight files checked before a loader touches them: one-line refusals instead of library tracebacks.

- **safetensors**: the 8-byte header length, the JSON header and every tensor's dtype, shape and
  byte range are checked against the file's size (a truncated or random ``model.safetensors`` was a
  ``SafetensorError`` traceback);
- **pickles** (``pytorch_model.bin``, ``*.pt``, ``*.ckpt``, ``*.pkl``): refused when they are the
  only weights of a model directory; a pickle can run code, and isotropy reads safetensors only;
- **config.json against the weights**: the layers it counts, the token embeddings' shape and the
  model it describes (built on the ``meta`` device) are compared with the safetensors headers
  before any model is built (1000 layers over 6 built 994 random ones); after loading, any weight
  transformers initialised at random (a missing key) is refused (:func:`refuse_missing_weights`);
- **GGUF**: the header, every metadata entry and every tensor description are walked with their
  lengths checked against the file's size (a file cut short was a ``struct.error``, one claiming
  2^62 tensors asked for that many), and the metadata's size capped (a 5-million-string array kept
  the GGUF readers after this check busy for minutes).
"""

from __future__ import annotations

import math
import os
import re
import struct
from pathlib import Path

from isotropy._utils import jsontext
from isotropy._utils.validation import IsotropyValueError

__all__ = ["check_config_matches_weights", "check_gguf_header", "check_model_weights", "check_module_folders",
           "check_safetensors", "refuse_missing_weights"]

_MAX_HEADER = 100 * 2**20
_ST_DTYPES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
              "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}
_PICKLES = ("*.bin", "*.pt", "*.pth", "*.ckpt", "*.pkl", "*.pickle")


def _refuse(path, reason: str, expected: str) -> IsotropyValueError:
    what = "The GGUF file" if str(path).lower().endswith(".gguf") else "The weights file"
    return IsotropyValueError(f"{what} {str(path)!r} {reason}; expected {expected}.")


def check_safetensors(path: str | os.PathLike) -> dict[str, tuple[int, ...]]:
    """Refuse a ``.safetensors`` file whose header does not describe its bytes; return its tensors' shapes by name."""
    from isotropy.io._paths import path_kind

    path = Path(path)
    expected = "a complete .safetensors file (as written by save_pretrained)"
    kind = path_kind(path)  # a FIFO blocked the read below for ever; /dev/zero read as a 0-byte file
    if kind is not None:
        raise _refuse(path, kind, expected)
    size = path.stat().st_size
    with open(path, "rb") as handle:
        head = handle.read(8)
        if len(head) < 8:
            raise _refuse(path, f"has {size} bytes, too short for a safetensors header", expected)
        (n,) = struct.unpack("<Q", head)
        if n > min(_MAX_HEADER, size - 8):
            raise _refuse(path, f"announces a {n}-byte header in a {size}-byte file (truncated or not safetensors)",
                          expected)
        raw = handle.read(n)
    try:
        header = jsontext.loads(raw.decode("utf-8"))  # 100k '[' is a JSONDecodeError, not a RecursionError
    except (UnicodeDecodeError, ValueError):
        raise _refuse(path, "has a header that is not JSON (not a safetensors file)", expected) from None
    if not isinstance(header, dict):
        raise _refuse(path, "has a header that is not a JSON object", expected)
    data = size - 8 - n
    shapes = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        ok = isinstance(info, dict) and info.get("dtype") in _ST_DTYPES and isinstance(info.get("shape"), list) \
            and all(isinstance(d, int) and 0 <= d < 2**63 for d in info["shape"]) \
            and isinstance(info.get("data_offsets"), list) and len(info["data_offsets"]) == 2 \
            and all(isinstance(o, int) for o in info["data_offsets"])
        if not ok:
            raise _refuse(path, f"describes tensor {name[:60]!r} wrongly", expected)
        start, stop = info["data_offsets"]
        # a 0 makes any dimension (below numpy's 2^63) fit in no bytes; else the product is bounded as it grows
        count = 0 if 0 in info["shape"] else _bounded_count(path, name, info["shape"], data, expected)
        if not 0 <= start <= stop <= data or stop - start != count * _ST_DTYPES[info["dtype"]]:
            raise _refuse(path, f"is cut short or corrupt: tensor {name[:60]!r} needs bytes {start}..{stop} of "
                                f"{data}", expected)
        shapes[name] = tuple(info["shape"])
    return shapes


def _bounded_count(path, name: str, shape: list, data: int, expected: str) -> int:
    """The element count of a shape without a 0, refused as soon as it exceeds the data section's bytes.

    Every element takes at least one byte, so no dimension and no partial product may exceed ``data``;
    checking as we go keeps the product small (800 dimensions of 4000-digit numbers took 33 s in full).
    """
    count = 1
    for d in shape:
        count *= min(d, data + 1)  # a dimension past the data is never multiplied in full
        if count > data:
            raise _refuse(path, f"is cut short or corrupt: tensor {name[:60]!r} has a shape of more elements "
                                f"than the {data} bytes of data", expected)
    return count


def check_model_weights(directory: str | os.PathLike) -> None:
    """Check a local model directory's safetensors files; refuse one whose only weights are pickles."""
    directory = Path(directory)
    if not directory.is_dir():
        return
    safetensors = sorted(directory.glob("*.safetensors"))
    for file in safetensors:
        check_safetensors(file)
    if not safetensors:
        pickles = sorted(p for pattern in _PICKLES for p in directory.glob(pattern))
        if pickles:
            raise _refuse(pickles[0], "is a pickle (torch.save / pytorch_model.bin), which can run code when "
                                      "loaded; isotropy never unpickles",
                          "the weights as model.safetensors (model.save_pretrained(dir, safe_serialization=True))")
        if (directory / "config.json").is_file():  # a model directory without weights: said now, not by
            # transformers after the tokenizer has loaded ("Error: Error no file named model.safetensors", 10-23 s)
            raise IsotropyValueError(f"The model directory {str(directory)!r} holds no weights (no .safetensors "
                                     f"file); expected the weights as model.safetensors beside config.json "
                                     f"(model.save_pretrained(dir)).")


# ---------------------------------------------------------------- config.json against the weights
# where a config names its number of layers, and how checkpoints number them (bert: encoder.layer.N.,
# llama/gemma: layers.N., gpt2: h.N., t5/bloom-style: block.N.)
_LAYER_COUNT_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
_LAYER_INDEX = re.compile(r"(?:^|\.)(?:layer|layers|h|block|blocks)\.(\d+)\.")
_WIDTH_KEYS = ("hidden_size", "n_embd", "d_model", "dim")
_EMBEDDING_NAMES = ("word_embeddings.weight", "embed_tokens.weight", "wte.weight")
# the parameters that do not feed the hidden states isotropy measures: BERT-style poolers, absent from MLM checkpoints
# (roberta-base), newly initialised by transformers and never used here
_UNUSED = re.compile(r"(?:^|\.)pooler\.")


def _config_mismatch(directory: Path, reason: str) -> IsotropyValueError:
    return IsotropyValueError(f"The model directory {str(directory)!r} has a config.json that does not match its "
                              f"weights: {reason}; expected the config.json saved with these weights "
                              f"(model.save_pretrained(dir)), as a model built from it would hold randomly "
                              f"initialised weights.")


def _safetensors_shapes(directory: Path) -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {}
    for file in sorted(directory.glob("*.safetensors")):
        shapes.update(check_safetensors(file))
    return shapes


def check_config_matches_weights(directory: str | os.PathLike) -> None:
    """Refuse a model directory whose ``config.json`` describes a model its safetensors weights do not fill.

    Read from the ``config.json`` and the safetensors headers only, before any model is built (a
    config of ``num_hidden_layers`` 1000 over MiniLM's 6-layer weights built 994 random layers in
    60 s at 7.6 GB; one of vocabulary 2,000,000 and width 4096 asked for tens of GB):

    - the layers the config counts must all be in the weights (``encoder.layer.N.``, ``layers.N.``, ``h.N.``);
    - the token embeddings' shape must be ``(vocab_size, hidden_size)``;
    - the model transformers would build (on the ``meta`` device: no memory) must find every tensor
      it shares a name with in the shape the weights hold, and no more parameters than the weights hold.
    """
    from isotropy.models._safety import _read_json

    directory = Path(directory)
    if not (directory / "config.json").is_file() or not any(directory.glob("*.safetensors")):
        return
    config = _read_json(directory / "config.json")
    if not isinstance(config, dict):
        raise IsotropyValueError(f"The model directory {str(directory)!r} has a config.json that is not a JSON object; "
                                 f"expected a Hugging Face model configuration.")
    shapes = _safetensors_shapes(directory)
    _check_layers(directory, config, shapes)
    _check_embeddings(directory, config, shapes)
    if "quantization_config" not in config:  # quantised weights are packed: their shapes are not the model's
        _check_against_meta_model(directory, shapes)


def _int(config: dict, keys) -> tuple[str, int] | None:
    for key in keys:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return key, value
    return None


def _check_layers(directory: Path, config: dict, shapes: dict) -> None:
    found = _int(config, _LAYER_COUNT_KEYS)
    if found is None:
        return
    key, n_layers = found
    present = {int(m.group(1)) for name in shapes for m in [_LAYER_INDEX.search(name)] if m}
    if not present:
        return  # layers named otherwise: left to the checks below and to the load's missing keys
    lacking = [i for i in range(min(n_layers, max(present) + 2)) if i not in present]
    if n_layers > max(present) + 1 or lacking:
        held = f"layers 0-{max(present)}" if len(present) == max(present) + 1 else f"{len(present)} layers"
        raise _config_mismatch(directory, f"it counts {n_layers} layers ({key}) but the weights hold {held} "
                                          f"(layer {lacking[0] if lacking else max(present) + 1} is missing)")


def _check_embeddings(directory: Path, config: dict, shapes: dict) -> None:
    # ALBERT and ELECTRA embed in embedding_size, OPT in word_embed_proj_dim, then project to hidden_size
    vocab, width = config.get("vocab_size"), _int(config, ("embedding_size", "word_embed_proj_dim", *_WIDTH_KEYS))
    if not (isinstance(vocab, int) and width is not None):
        return
    for name, shape in shapes.items():
        if name.endswith(_EMBEDDING_NAMES) and len(shape) == 2:
            if shape != (vocab, width[1]):
                raise _config_mismatch(directory, f"it says vocab_size {vocab} and {width[0]} {width[1]}, but the "
                                                  f"token embeddings {name!r} are {shape[0]} x {shape[1]}")
            return


def base_model_class(config):
    """The transformers class that builds the hidden-state model of ``config``: ``AutoModel``'s base model, or
    the encoder-only class the config's ``architectures`` names (``T5EncoderModel``, ``MT5EncoderModel``,
    ``UMT5EncoderModel``: the encoder half of an encoder-decoder, as sentence-T5 and GTR ship it), for which
    ``AutoModel`` would build the whole encoder-decoder, a decoder the weights do not hold.

    Only a class of the ``transformers`` package whose ``config_class`` is the config's own class is taken
    (never code from the directory).
    """
    import transformers

    for name in getattr(config, "architectures", None) or ():
        if isinstance(name, str) and name.endswith("EncoderModel"):
            cls = getattr(transformers, name, None)
            if isinstance(cls, type) and getattr(cls, "config_class", None) is type(config):
                return cls
    return transformers.AutoModel


def _check_against_meta_model(directory: Path, shapes: dict) -> None:
    """The model transformers would build from the config, on the meta device, against the weights' shapes."""
    try:
        import torch
        from transformers import AutoConfig, AutoModel

        from isotropy.models._quiet import quiet_transformers
        from isotropy.models._safety import NO_REMOTE_CODE

        with quiet_transformers():
            config = AutoConfig.from_pretrained(str(directory), **NO_REMOTE_CODE)
            cls = base_model_class(config)
            with torch.device("meta"):
                model = AutoModel.from_config(config, **NO_REMOTE_CODE) if cls is AutoModel else cls(config)
    except Exception:  # noqa: BLE001 - a config transformers cannot build from is the load's to report
        return
    prefix = f"{model.base_model_prefix}." if getattr(model, "base_model_prefix", "") else ""
    needed = 0
    for name, parameter in model.named_parameters():
        if _UNUSED.search(name):
            continue
        needed += parameter.numel()
        held = shapes.get(name, shapes.get(prefix + name))
        if held is not None and tuple(held) != tuple(parameter.shape):
            raise _config_mismatch(directory, f"the model it describes has {name!r} of shape "
                                              f"{tuple(parameter.shape)}, the weights hold {tuple(held)}")
    held_total = sum(math.prod(shape) for shape in shapes.values())
    if needed > held_total:
        raise _config_mismatch(directory, f"the model it describes has {needed:,} parameters, the weights hold "
                                          f"{held_total:,}")


def check_module_folders(location: str | os.PathLike) -> None:
    """:func:`check_model_weights` and :func:`check_config_matches_weights` for a sentence-transformers directory.

    The directory itself and each folder of a ``Transformer`` module its ``modules.json`` lists
    (``0_Transformer/``), where sentence-transformers reads that module's config and weights.
    """
    from isotropy.models._safety import _read_json

    directory = Path(location)
    if not directory.is_dir():
        return
    folders = [directory]
    if (directory / "modules.json").is_file():
        entries = _read_json(directory / "modules.json")
        for entry in entries if isinstance(entries, list) else []:
            sub = entry.get("path") if isinstance(entry, dict) else None
            kind = entry.get("type") if isinstance(entry, dict) else None
            if isinstance(sub, str) and sub not in ("", ".") and isinstance(kind, str) \
                    and kind.endswith(".Transformer") and (directory / sub).is_dir():
                folders.append(directory / sub)
    for folder in folders:
        if folder != directory:
            check_model_weights(folder)
        check_config_matches_weights(folder)


def refuse_missing_weights(location, missing_keys, mismatched_keys=()) -> None:
    """Refuse a model transformers loaded with weights it initialised at random (``output_loading_info``).

    A missing key is a tensor of the architecture that the weights do not hold: transformers fills
    it with random numbers and says so in a note, and every geometry measured through it is wrong.
    Only BERT-style poolers (never used here) may be missing.
    """
    missing = sorted(key for key in missing_keys or () if not _UNUSED.search(key))
    mismatched = sorted(str(item[0] if isinstance(item, (tuple, list)) else item) for item in mismatched_keys or ())
    if missing or mismatched:
        names = missing or mismatched
        shown = ", ".join(repr(k) for k in names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        what = "lack" if missing else "hold in another shape"
        raise IsotropyValueError(f"The model directory {str(location)!r} has weights that {what} {len(names)} "
                                 f"tensor(s) its config.json's architecture needs ({shown}); transformers would "
                                 f"initialise them at random: expected complete weights for the config "
                                 f"(model.save_pretrained(dir)).")


# ---------------------------------------------------------------- GGUF
_GGUF_SCALARS = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}  # type id -> bytes
_GGUF_STRING, _GGUF_ARRAY = 8, 9
# Metadata caps. The readers after this check (gguf.GGUFReader, behind transformers' GGUF loading)
# build Python objects per array element: about 28 us and 1.5 KB each on a 2-core CPU, so a 40 MB
# file with one 5-million-string array ran past 60 s at 2.6 GB. Real files stay far below: Gemma 3
# 270M holds 33 entries and three tokenizer arrays of 262,144 (the largest vocabularies in use,
# Gemma's and mT5/XLM-R's ~250k; BPE merges of Llama 3 / Qwen2 are ~150k-280k). One array may hold
# 2^20 = 1,048,576 elements (4x the largest vocabulary) and the metadata 2^21 values in all (entries
# plus array elements: 2.7x Gemma's 786,465), which keeps the slowest reader under about a minute.
_GGUF_MAX_ARRAY = 2**20
_GGUF_MAX_VALUES = 2**21


class _Reader:
    def __init__(self, handle, size: int, path):
        self.handle, self.size, self.path = handle, size, path
        self.values = 0  # metadata entries and array elements so far

    def take(self, n: int) -> bytes:
        if n < 0 or self.handle.tell() + n > self.size:
            raise _refuse(self.path, f"is cut short or corrupt: {n} more bytes announced at byte "
                                     f"{self.handle.tell()} of {self.size}", "a complete GGUF file")
        return self.handle.read(n)

    def u32(self) -> int:
        return struct.unpack("<I", self.take(4))[0]

    def u64(self) -> int:
        return struct.unpack("<Q", self.take(8))[0]

    def skip(self, n: int) -> None:
        if n < 0 or self.handle.tell() + n > self.size:
            self.take(n)  # raises
        self.handle.seek(n, os.SEEK_CUR)

    def string(self) -> None:
        self.skip(self.u64())

    def count(self, n: int) -> None:
        self.values += n
        if self.values > _GGUF_MAX_VALUES:
            raise _refuse(self.path, f"holds more than {_GGUF_MAX_VALUES} metadata values (entries and array "
                                     f"elements)", f"at most {_GGUF_MAX_VALUES} (real models hold under a million)")

    def value(self, kind: int) -> None:
        if kind in _GGUF_SCALARS:
            self.skip(_GGUF_SCALARS[kind])
        elif kind == _GGUF_STRING:
            self.string()
        elif kind == _GGUF_ARRAY:
            inner, count = self.u32(), self.u64()
            if inner not in _GGUF_SCALARS and inner != _GGUF_STRING:  # arrays of arrays: no reader here takes them
                raise _refuse(self.path, f"has a metadata array of element type {inner}",
                              "arrays of numbers or strings (GGUF version 2 or 3)")
            if count > _GGUF_MAX_ARRAY:
                raise _refuse(self.path, f"has a metadata array of {count} elements",
                              f"at most {_GGUF_MAX_ARRAY} (the largest tokenizer vocabularies hold about 262,144)")
            self.count(count)
            if inner in _GGUF_SCALARS:
                self.skip(count * _GGUF_SCALARS[inner])
            else:
                for _ in range(count):
                    self.string()
        else:
            raise _refuse(self.path, f"has a metadata value of unknown type {kind}", "a GGUF file (version 2 or 3)")


def check_gguf_header(path: str | os.PathLike) -> None:
    """Walk a GGUF file's header, metadata and tensor descriptions; refuse one that lies about its size."""
    path = Path(path)
    size = path.stat().st_size
    expected = "a GGUF file (version 2 or 3)"
    with open(path, "rb") as handle:
        reader = _Reader(handle, size, path)
        if size < 24 or reader.take(4) != b"GGUF":
            raise _refuse(path, "does not start with the GGUF magic bytes", expected)
        version = reader.u32()
        if version not in (2, 3):
            raise _refuse(path, f"has GGUF version {version}", expected)
        n_tensors, n_kv = reader.u64(), reader.u64()
        # every entry takes at least 12 bytes (metadata) or 24 bytes (tensor description)
        if n_kv * 12 > size or n_tensors * 24 > size:
            raise _refuse(path, f"claims {n_tensors} tensors and {n_kv} metadata entries in {size} bytes",
                          "a complete GGUF file")
        for _ in range(n_kv):
            reader.count(1)
            reader.string()
            reader.value(reader.u32())
        for _ in range(n_tensors):
            reader.string()
            n_dims = reader.u32()
            if n_dims > 8:
                raise _refuse(path, f"describes a tensor of {n_dims} dimensions", "at most 8")
            reader.skip(8 * n_dims + 4)
            if reader.u64() > size:
                raise _refuse(path, "has a tensor whose data lies past the end of the file", "a complete GGUF file")
