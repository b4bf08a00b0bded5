"""Readers for the files embeddings and word vectors come in.

The readers are names of this package (``isotropy.io.read_embeddings``), imported on first use.
"""

from __future__ import annotations

from isotropy._utils.lazy import lazy_exports

_EXPORTS = {
    "read_embeddings": "isotropy.io.embeddings",
    "read_labels": "isotropy.io.labels",
    "read_shards": "isotropy.io.shards",
    "is_sharded": "isotropy.io.shards",
    "read_word_vectors": "isotropy.io.word_vectors",
    "packaged_glove": "isotropy.io.word_vectors",
}

__all__ = sorted(_EXPORTS)  # noqa: PLE0605 (the lazy exports are the public names)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
