"""A GGUF file's metadata and tensor table, read from a memory map in one pass.

``gguf.GGUFReader`` builds a numpy view for every element of every metadata array, which for a
262,144-token vocabulary (three such arrays) takes longer than dequantising all the weights. The
conversion needs only the scalar metadata, the tensor table and the tensors' bytes, so this
reader walks the header with :mod:`struct` (string arrays skipped by their lengths, numeric arrays
left as counts) and hands each tensor out as a read-only ``uint8`` view of the mapped file, shaped
as ``gguf.quants.dequantize`` takes it. The file has already passed
:func:`isotropy.models._weights.check_gguf_header` (every length checked against its size).
"""

from __future__ import annotations

import os
import struct
from typing import NamedTuple

import numpy as np

__all__ = ["GGUFLayout", "TensorEntry", "read_layout", "tensor_blocks"]

# fixed-size metadata value types: u8, i8, u16, i16, u32, i32, f32, bool, u64, i64, f64
_FORMAT = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


class TensorEntry(NamedTuple):
    """One row of the tensor table: its GGUF name, dimensions (ggml order: fastest first), type, data offset."""

    name: str
    dims: tuple[int, ...]
    ggml_type: int
    offset: int


class GGUFLayout(NamedTuple):
    """Metadata (scalars and strings as values, arrays as ``("array", element type, count)``) and tensors."""

    path: str
    metadata: dict
    tensors: tuple[TensorEntry, ...]
    data_start: int


def _string(blob, pos: int) -> tuple[str, int]:
    (length,) = struct.unpack_from("<Q", blob, pos)
    pos += 8
    return bytes(blob[pos:pos + length]).decode("utf-8", errors="replace"), pos + length


def _value(blob, pos: int, kind: int):
    if kind in _FORMAT:
        (value,) = struct.unpack_from(_FORMAT[kind], blob, pos)
        return value, pos + struct.calcsize(_FORMAT[kind])
    if kind == _STRING:
        return _string(blob, pos)
    if kind == _ARRAY:
        inner, count = struct.unpack_from("<IQ", blob, pos)
        pos += 12
        if inner in _FORMAT:
            values = struct.unpack_from(f"<{count}{_FORMAT[inner][1]}", blob, pos) if count <= 64 else None
            end = pos + count * struct.calcsize(_FORMAT[inner])
            return (list(values) if values is not None else ("array", inner, count)), end
        if inner == _STRING:
            start = pos
            for _ in range(count):  # variable length: walked, not decoded (a vocabulary is 262k strings)
                (length,) = struct.unpack_from("<Q", blob, pos)
                pos += 8 + length
            if count <= 64:
                return [_string(blob, p)[0] for p in _string_offsets(blob, start, count)], pos
            return ("array", inner, count), pos
        raise ValueError(f"a metadata array of element type {inner} (numbers or strings expected)")
    raise ValueError(f"a metadata value of unknown type {kind}")


def _string_offsets(blob, pos: int, count: int) -> list[int]:
    offsets = []
    for _ in range(count):
        offsets.append(pos)
        (length,) = struct.unpack_from("<Q", blob, pos)
        pos += 8 + length
    return offsets


def read_layout(path: str | os.PathLike) -> GGUFLayout:
    """Read a (header-checked) GGUF file's metadata and tensor table; no tensor data is touched."""
    path = os.fspath(path)
    blob = np.memmap(path, mode="r", dtype=np.uint8)
    _, tensor_count, kv_count = struct.unpack_from("<IQQ", blob, 4)
    pos, metadata = 24, {}
    for _ in range(kv_count):
        key, pos = _string(blob, pos)
        (kind,) = struct.unpack_from("<I", blob, pos)
        metadata[key], pos = _value(blob, pos + 4, kind)
    tensors = []
    for _ in range(tensor_count):
        name, pos = _string(blob, pos)
        (n_dims,) = struct.unpack_from("<I", blob, pos)
        dims = struct.unpack_from(f"<{n_dims}Q", blob, pos + 4)
        ggml_type, offset = struct.unpack_from("<IQ", blob, pos + 4 + 8 * n_dims)
        pos += 4 + 8 * n_dims + 12
        tensors.append(TensorEntry(name, tuple(int(d) for d in dims), int(ggml_type), int(offset)))
    alignment = metadata.get("general.alignment", 32)
    alignment = alignment if isinstance(alignment, int) and alignment > 0 else 32
    return GGUFLayout(path, metadata, tuple(tensors), (pos + alignment - 1) // alignment * alignment)


def tensor_blocks(layout: GGUFLayout, entry: TensorEntry, blob: np.ndarray | None = None) -> np.ndarray:
    """The tensor's bytes as a read-only ``uint8`` view of shape ``(*reversed(dims)[:-1], row bytes)``.

    This is the shape ``gguf.GGUFReader`` gives a quantised tensor's ``data`` and the one
    ``gguf.quants.dequantize`` expects for every type (float types are viewed, not copied).
    """
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    if blob is None:
        blob = np.memmap(layout.path, mode="r", dtype=np.uint8)
    block_size, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(entry.ggml_type)]
    shape = tuple(reversed(entry.dims))
    row_bytes = shape[-1] // block_size * type_size
    count = int(np.prod(shape[:-1], dtype=np.int64)) * row_bytes
    start = layout.data_start + entry.offset
    return blob[start:start + count].reshape(*shape[:-1], row_bytes)
