"""Where models and embeddings are cached, shared by :mod:`isotropy.models.resolve` and :mod:`isotropy.models.gguf`."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cached_sha256", "default_cache_dir"]


def default_cache_dir() -> Path:
    """``$ISOTROPY_CACHE`` or ``~/.cache/isotropy``: embeddings and converted models are cached here.

    An empty (or blank) ``ISOTROPY_CACHE`` is unset, as an empty ``HF_HOME`` is: ``Path("")`` is the working
    directory, and ``ISOTROPY_CACHE= isotropy measure --model ...`` wrote ``./embeddings/`` there.
    """
    given = os.environ.get("ISOTROPY_CACHE", "")
    return Path(given) if given.strip() else Path.home() / ".cache" / "isotropy"


# The digests of model files (cached_sha256): one small file each, named by the file's identity on disk.
_DIGESTS = "digests"


def cached_sha256(path: str | os.PathLike, *, cache_dir: str | os.PathLike | None = None) -> str:
    """Hex sha256 of the file at ``path``, computed once per version of the file on disk and then read back.

    A model's weights are hashed to name them (the GGUF file's converted folder, the ``--json`` record's
    ``inputs.model``): reading gigabytes once more on every run to hash them would cost what loading them costs.
    The digest is kept under ``<cache>/digests/`` in a file named by the sha256 of the file's resolved path, size,
    modification and change times (ns), inode and device; a file written again gets another name, hence a new
    digest, even with its modification time set back where the change time moves with any write (POSIX; on
    Windows ``st_ctime`` is the creation time, so there a file rewritten in place to the same size with its
    modification time set back by hand keeps its old digest). The digest file is read as
    at most 64 hexadecimal characters, nothing else (anything else, or an unreadable or unwritable cache, and the
    file is hashed again, which gives the same value: only the time is at stake).

    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = pathlib.Path(d, "w.bin"); _ = p.write_bytes(b"abc")
    ...     [cached_sha256(p, cache_dir=pathlib.Path(d, "cache"))[:16] for _ in range(2)]
    ['ba7816bf8f01cfea', 'ba7816bf8f01cfea']
    """
    import hashlib
    import re

    from isotropy._utils.digest import file_sha256

    path = Path(path).resolve()
    stat = path.stat()
    # the change time too: a file rewritten in place to the same size with its modification time set back (os.utime,
    # touch -d, a copy that keeps times) kept its old name, hence its old digest; the change time moves with any
    # write or utime and cannot be set back short of the system clock (a metadata change alone, chmod say: a new
    # name, hashed again, the same digest)
    identity = f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\0{stat.st_ctime_ns}\0{stat.st_ino}\0{stat.st_dev}"
    folder = Path(cache_dir if cache_dir is not None else default_cache_dir()) / _DIGESTS
    entry = folder / hashlib.sha256(identity.encode("utf-8", "surrogateescape")).hexdigest()
    try:
        with open(entry, "rb") as handle:
            kept = handle.read(65)
        if re.fullmatch(rb"[0-9a-f]{64}", kept):
            return kept.decode("ascii")
    except OSError:
        pass
    digest = file_sha256(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        partial = entry.with_name(f"{entry.name}.{os.getpid()}.partial")
        partial.write_bytes(digest.encode("ascii"))
        os.replace(partial, entry)  # whole or absent: a reader never sees half a digest
    except OSError:
        pass  # an unwritable cache: hashed again next time
    return digest
