"""How far a compressed file may expand when read: one rule for ``.npz``, ``.pt`` and ``.parquet``.

A few megabytes of deflate, zstd or run-length encoding can decode to gigabytes (a "bomb"). Every
reader of a compressed container asks :func:`expansion_problem` before decoding, with the sizes the
container's own metadata declares (a zip member's ``file_size``, which zipfile and torch's reader
both enforce while extracting; a Parquet file's row and value counts), and refuses in one line.

The cap: more than :data:`MAX_EXPANSION` times the compressed size, once the decoded size is above
:data:`EXPANSION_FLOOR_BYTES`. Embeddings are floats, and float data barely compresses: real
vectors shrink by 1.1-1.5x under deflate or zstd, quantised or low-precision ones by a few times,
so 100x is far beyond any real matrix (the bombs found expand 1,000x-4,000x). Below 64 MiB (the
size of one chunk read by :mod:`isotropy.io.shards`) any expansion is allowed, so small arrays of
zeros or constants, which do compress 1,000x, still read; past it the memory at stake is real.
"""

from __future__ import annotations

import os
import zipfile

__all__ = ["EXPANSION_FLOOR_BYTES", "MAX_EXPANSION", "expansion_problem", "zip_expansion_problem"]

MAX_EXPANSION = 100
EXPANSION_FLOOR_BYTES = 64 * 2**20


def expansion_problem(what: str, decoded: int, stored: int) -> str | None:
    """Why ``what``, ``stored`` bytes that decode to ``decoded`` bytes, is refused; ``None`` when it is not."""
    if decoded <= EXPANSION_FLOOR_BYTES or decoded <= MAX_EXPANSION * max(stored, 1):
        return None
    return (f"{what} expands from {stored} to {decoded} bytes ({decoded // max(stored, 1)}x; isotropy refuses more "
            f"than {MAX_EXPANSION}x above {EXPANSION_FLOOR_BYTES // 2**20} MiB, as a decompression bomb would)")


def zip_expansion_problem(path: str | os.PathLike) -> str | None:
    """Why the zip archive at ``path`` would expand too far when read, from its directory alone; ``None`` if not.

    Each member is checked against its compressed size, and all members together against the size
    of the file. A file that is not a zip archive (a legacy ``torch.save`` pickle) or whose
    directory cannot be read gives ``None``: its reader reports it as before.
    """
    try:
        if not zipfile.is_zipfile(path):
            return None
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
        size = os.path.getsize(path)
    except (OSError, zipfile.BadZipFile, ValueError, EOFError, TypeError):  # TypeError: not a path
        return None
    for info in infos:
        problem = expansion_problem(f"member {info.filename!r}", info.file_size, info.compress_size)
        if problem is not None:
            return problem
    return expansion_problem(f"its {len(infos)} members", sum(info.file_size for info in infos), size)
