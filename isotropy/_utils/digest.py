"""The sha256 of a file, read in blocks: one writer for the GGUF cache key and the inputs a record names."""

from __future__ import annotations

import hashlib
import os

__all__ = ["file_sha256"]

_BLOCK = 1 << 22  # 4 MiB: hashlib's own speed, bounded memory


def file_sha256(path: str | os.PathLike) -> str:
    """Hex sha256 of the file at ``path``, read in 4 MiB blocks.

    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = pathlib.Path(d, "x"); _ = p.write_bytes(b"abc")
    ...     file_sha256(p)[:16]
    'ba7816bf8f01cfea'
    """
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()
