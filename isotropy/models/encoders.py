"""Sentence encoders with an on-disk cache.

``encode_sentences`` embeds texts with a sentence-transformers model (the packaged
all-MiniLM-L6-v2 by default, the packaged ``gemma-3-270m``, a ``.gguf`` file, any local model
directory, or a hub name when online) and caches the result keyed by the model's identity and the
exact texts, so a second run does not re-encode. ``encode_pooled`` pools the token states of any
transformers encoder or decoder at one or several hidden layers (masked mean, last or first token).
Model names are resolved by :func:`isotropy.models.resolve_model`.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from isotropy._utils.errors import IsotropyValueError
from isotropy.models.resolve import DEFAULT_MODEL, default_cache_dir, require_model_packages, resolve_model

__all__ = [
    "DEFAULT_MODEL",
    "default_cache_dir",
    "encode_mean_pooled",
    "encode_pooled",
    "encode_sentences",
    "load_sentence_model",
    "resolve_model",
]


def load_sentence_model(model: str = DEFAULT_MODEL, *, device: str | None = None, dtype: str = "float32"):
    """Load a :class:`sentence_transformers.SentenceTransformer` on ``device`` (``"auto"``/``None``: CUDA, else CPU).

    ``device`` is checked (:func:`isotropy._utils.device.resolve_device`) before the model is resolved.
    ``dtype`` (``"float32"``, the exact default, ``"bfloat16"`` or ``"float16"``): the precision its transformer runs
    in, whatever its files store (:func:`isotropy.models.load_transformer`); the token states of a half dtype are
    handed on to the modules after it (pooling, dense layers) in float32.
    """
    require_model_packages(model, sentence_transformers=True)  # torch and the rest named up front, with their extra
    from isotropy._utils.device import resolve_device
    from isotropy.models.loading import check_dtype

    device = resolve_device(device, caller="load_sentence_model")
    dtype = check_dtype(dtype, caller="load_sentence_model")
    from sentence_transformers import SentenceTransformer

    from isotropy.models._safety import NO_REMOTE_CODE, refuse_remote_code
    from isotropy.models._weights import check_model_weights, check_module_folders

    location = resolve_model(model)
    refuse_remote_code(location)
    check_model_weights(location)  # truncated or random safetensors, pickled weights: one line, never unpickled
    check_module_folders(location)  # a config.json its weights do not fill (random layers): one line, nothing built
    from isotropy.models._pretrained import dtype_kwargs
    from isotropy.models._quiet import quiet_transformers

    try:
        with quiet_transformers():
            # float32 whatever the files store unless asked otherwise, as load_transformer
            # (isotropy.models.loading._COMPUTE_DTYPE): a bfloat16 folder ran in bfloat16 under transformers 5
            encoder = SentenceTransformer(location, device=device, model_kwargs=dtype_kwargs(dtype),
                                          **NO_REMOTE_CODE)
    except (OSError, ValueError) as exc:
        raise OSError(f"Could not load the sentence-transformers model {model!r} (resolved to {location!r}): "
                      f"expected a local model directory, the packaged 'all-MiniLM-L6-v2', or a hub name "
                      f"while online. ({exc.__class__.__name__}: {str(exc).splitlines()[0]})") from None
    return float32_token_states(encoder)


def float32_token_states(encoder):
    """``encoder`` (a SentenceTransformer) with the token states of its first module handed on in float32.

    Where its transformer runs in a half dtype (``dtype="bfloat16"``), sentence-transformers' own mean pooling sums in
    float32 but rounds the mean back to bfloat16 (3 significant digits), and a Dense module of float32 weights
    refuses bfloat16 input: the modules after the transformer get its states as float32, as
    :func:`isotropy.models.pool_hidden_states` pools them. A forward hook on the first module; float32 states pass
    unchanged.
    """
    from collections.abc import MutableMapping

    import torch

    def hook(module, args, output):
        # a dict, or the tokenizer's BatchEncoding (a UserDict) that encode() hands through the modules
        states = output.get("token_embeddings") if isinstance(output, MutableMapping) else None
        if isinstance(states, torch.Tensor) and states.dtype in (torch.float16, torch.bfloat16):
            output["token_embeddings"] = states.float()
        return output

    encoder[0].register_forward_hook(hook)
    return encoder


def _cache_key(model_location: str, texts: Sequence[str], normalize: bool, tag: str = "") -> str:
    digest = hashlib.sha256()
    digest.update(tag.encode())
    # a local model is identified by its path and the size, mtime and ctime of its files: every file, not only the
    # weights and .json files (a vocab.txt, merges.txt or tokenizer.model changed alone gave the old tokens' vectors
    # back: a user trial), hidden folders (a clone's .git) left out
    digest.update(model_location.encode())
    location = Path(model_location)
    if location.is_dir():
        for weight in sorted(location.rglob("*")):
            if weight.is_file() and not any(part.startswith(".") for part in weight.relative_to(location).parts):
                stat = weight.stat()
                # (the change time too: a file rewritten to the same size with its modification time set back; POSIX
                # only, on Windows st_ctime is the creation time)
                digest.update(f"{weight.relative_to(location)}:{stat.st_size}:{stat.st_mtime_ns}:{stat.st_ctime_ns}"
                              .encode())
    digest.update(b"normalize" if normalize else b"raw")
    for text in texts:
        digest.update(text.encode("utf-8", errors="surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()[:32]


def encode_sentences(texts: Sequence[str], *, model: str = DEFAULT_MODEL, device: str | None = None,
                     batch_size: int = 128, normalize: bool = False, cache_dir: str | os.PathLike | None = None,
                     use_cache: bool = True, show_progress: bool = True, dtype: str = "float32") -> np.ndarray:
    """Embed ``texts`` with a sentence-transformers model, with an on-disk cache.

    Each distinct text is encoded once: a repeated text gets exactly its first occurrence's vector.

    Parameters
    ----------
    texts : sequence of str
        The sentences, in order; row ``i`` of the result embeds ``texts[i]``.
    model : str, default="all-MiniLM-L6-v2"
        Packaged model name, local directory, or hub name (see :func:`resolve_model`).
    device : str, torch.device or None
        ``"auto"``/``None`` (CUDA when available, else CPU), ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or
        ``"mps"``; checked before the cache is read, so a device this machine lacks is refused
        whether or not the vectors are cached (:func:`isotropy._utils.device.resolve_device`).
    batch_size : int, default=128
        Texts per forward pass, at least 1; checked before the cache is read, as ``device``.
    normalize : bool, default=False
        L2-normalise the embeddings.
    cache_dir : path-like or None
        Where to cache; default :func:`default_cache_dir` ``/ "embeddings"``.
    use_cache : bool, default=True
    show_progress : bool, default=True
    dtype : {"float32", "bfloat16", "float16"}, default="float32"
        The precision the model runs in (:func:`load_sentence_model`): float32, exact, or a half
        dtype that halves its memory at ~1e-3 relative error; part of the cache key. Checked before
        the cache is read, as ``device``.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float32
    """
    from isotropy._utils.validation import check_scalar, check_texts
    from isotropy.models.loading import check_dtype

    texts = check_texts(texts, caller="encode_sentences")
    if not texts:
        raise IsotropyValueError("The 'texts' parameter of encode_sentences must hold at least one sentence. Got none.")
    # before the cache, as the device: the same call fails or succeeds whether or not its vectors are cached
    check_scalar(batch_size, "batch_size", caller="encode_sentences", kind=int, low=1)
    require_model_packages(model, sentence_transformers=True)  # torch and the rest named up front, with their extra
    from isotropy._utils.device import resolve_device

    device = resolve_device(device, caller="encode_sentences")  # before the cache: refused whether cached or not
    dtype = check_dtype(dtype, caller="encode_sentences")
    location = resolve_model(model)
    cache_file = None
    if use_cache:
        cache_root = Path(cache_dir) if cache_dir is not None else default_cache_dir() / "embeddings"
        # the tag: each distinct text encoded once (files from before, with repeated texts encoded apart, not read),
        # and the dtype the model ran in (a bfloat16 run's vectors are not a float32 run's; files from before the
        # dtype was in the key may hold a bfloat16 folder's vectors computed in bfloat16, and are not read back)
        cache_file = cache_root / f"{_cache_key(location, texts, normalize, tag=f'distinct-texts|dtype={dtype}')}.npy"
        X = _load_cached(cache_file, len(texts))
        if X is not None:
            return X
    encoder = load_sentence_model(model, device=device, dtype=dtype)
    # each distinct text once: a repeated text gets exactly its first occurrence's vector (encoded in another
    # batch, it would differ by float32 rounding, and a neighbour metric would see two points 1e-7 apart)
    first: dict[str, int] = {}
    row_of = np.fromiter((first.setdefault(t, len(first)) for t in texts), dtype=np.intp, count=len(texts))
    from isotropy.models.loading import forward_failed

    try:
        X = encoder.encode(list(first), batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=normalize,
                           show_progress_bar=show_progress).astype(np.float32, copy=False)
    except (RuntimeError, NotImplementedError) as exc:  # an operation torch lacks in a half dtype on this device
        said = forward_failed(exc, dtype=dtype, device=device, caller="encode_sentences")
        if said is None:
            raise
        raise said from None
    if len(first) < len(texts):
        X = X[row_of]
    if cache_file is not None:
        _save(cache_file, X)
    return X


def _save(path: Path, X: np.ndarray) -> None:
    """Write the rows to the cache; a cache that cannot be written (read-only, full) is a warning, not an abort.

    The rows were computed at the cost of a forward pass over every text: losing them to the cache's
    own failure would lose the run that asked for them (they are returned all the same).
    """
    _save_all([(path, X)])


# The cache folders whose failure was already said in this pass (one_cache_warning), or None outside one.
_CACHE_WARNED: contextvars.ContextVar = contextvars.ContextVar("isotropy_cache_warned", default=None)


@contextlib.contextmanager
def one_cache_warning():
    """Within the block, a cache folder that could not be written is said once, whatever saves it fails.

    ``measure --model`` caches the layers of its forward pass and then, apart, the sentence-transformers
    output row built from the same pass: a read-only cache said the same thing twice.
    """
    token = _CACHE_WARNED.set(set())
    try:
        yield
    finally:
        _CACHE_WARNED.reset(token)


def _save_all(entries) -> None:
    """:func:`_save` of each ``(path, rows)`` of one forward pass, with one warning for all the files not written.

    A read-only cache fails every layer's file alike: one warning per file said the same thing once per layer.
    Within :func:`one_cache_warning`, a folder already said is not said again.
    """
    import warnings

    from isotropy._utils.atomic import atomic_write

    failed = []
    for path, X in entries:
        try:
            with atomic_write(path, "wb") as handle:
                np.save(handle, X)
        except (OSError, ValueError) as exc:  # ValueError: the writer's one-line refusal of an unwritable folder
            failed.append((path, exc))
    warned = _CACHE_WARNED.get()
    if warned is not None:
        failed = [(path, exc) for path, exc in failed if str(path.parent) not in warned]
        warned.update(str(path.parent) for path, _ in failed)
    if failed:
        path, exc = failed[0]
        others = len(failed) - 1
        more = f" and {others} other file{'s' if others > 1 else ''} of the same folder" if others else ""
        warnings.warn_explicit(f"The embeddings could not be cached at {str(path)!r}{more} "
                               f"({' '.join(str(exc).split())}); they are used without the cache (set ISOTROPY_CACHE "
                               f"to a writable folder to keep them).", UserWarning, str(path), 0,
                               module="isotropy.models.encoders")


def _load_cached(path: Path | None, n: int) -> np.ndarray | None:
    """The cached rows in ``path`` (an ``n``-row float matrix); None when there are none to read.

    An entry that cannot be read back (cut short by a copy or a full disk, damaged, not an array of
    ``n`` rows) is a cache miss: one warning names the file, and the caller recomputes the rows and
    rewrites it (atomically, :func:`_save`).
    """
    if path is None or not path.is_file():
        return None
    problem = _cached_header_problem(path, n)  # before np.load: a header claiming (10**12, 384) asked for 1.36 PiB
    if problem is not None:
        _unusable_cache(path, problem)
        return None
    try:
        X = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, MemoryError) as exc:  # numpy: "Failed to read all data for array ..."
        _unusable_cache(path, " ".join(str(exc).split()) or type(exc).__name__)
        return None
    if not isinstance(X, np.ndarray):  # a zip archive (an .npz) under the .npy name
        getattr(X, "close", lambda: None)()
        _unusable_cache(path, "not a single array")
        return None
    if X.ndim != 2 or X.shape[0] != n or not np.issubdtype(X.dtype, np.floating):
        _unusable_cache(path, f"an array of shape {X.shape} and dtype {X.dtype}, expected {n} rows of floats")
        return None
    return X


def _cached_header_problem(path: Path, n: int) -> str | None:
    """Why the ``.npy`` header of ``path`` does not describe ``n`` rows of floats filling the file; None when it does.

    Read without the data: the shape and dtype the header claims are checked against ``n`` and the
    file's size before numpy allocates anything (a file whose header claimed shape (10**12, 384) made
    ``np.load`` ask for 1.36 PiB). An ``.npz`` (a zip archive) is left to ``np.load`` and the checks after it.
    """
    from numpy.lib.format import MAGIC_PREFIX

    from isotropy.io._paths import npy_header

    try:
        with open(path, "rb") as handle:
            head = handle.read(6)
            if head != MAGIC_PREFIX:
                if head.startswith(b"PK"):
                    return None  # a zip archive (an .npz): np.load opens it, and the checks after it refuse it
                # not an .npy (an empty or random file): np.load called it "pickled (object) data" and advised loading
                # it "unsafely" with allow_pickle (a user trial), which no cache file of ours needs
                return "not an .npy file (it does not start with numpy's .npy header)"
            handle.seek(0)
            shape, _, dtype, _ = npy_header(handle)
    except (OSError, ValueError, EOFError, TypeError, SyntaxError) as exc:
        return f"a damaged .npy header ({' '.join(str(exc).split())[:160] or type(exc).__name__})"
    if dtype.hasobject or not np.issubdtype(dtype, np.floating):
        return f"an array of dtype {dtype}, expected {n} rows of floats"
    if len(shape) != 2 or shape[0] != n:
        return f"an array of shape {shape} and dtype {dtype}, expected {n} rows of floats"
    from isotropy.io._paths import npy_size_problem

    return npy_size_problem(path)  # the readers' size rule, in their words


def _unusable_cache(path: Path, reason: str) -> None:
    import warnings

    # located at the file itself (line 0: no source line is printed under it), so that the warning is one line
    warnings.warn_explicit(f"The cached embeddings {str(path)!r} could not be read back ({reason}); recomputing "
                           f"them and rewriting the file.", UserWarning, str(path), 0, module="isotropy.models.encoders")




# How encode_pooled computes its rows, part of its cache keys: batches by token count, each token sequence once.
_BATCHING = "batches=token-count,distinct-sequences"
# How encode_pooled tokenises, in its cache keys: whole texts by the model's own tokenizer (before 7ee04b9 a byte-level
# BPE one began every text with a space: GPT-2's, Qwen's and RoBERTa's vectors were those of other tokens) and cut to
# the model's positions and its tokenizer's model_max_length (87ea6f3; a max_length between the two read more tokens).
# Files computed otherwise are not read back.
_TOKENS = "tokens=own-tokenizer,cut-to-positions"


def _computed_by(batch_size: int, device, dtype: str = "float32") -> str:
    """The part of a cache key that names what the rows' last digits depend on besides the texts and the model: the
    batch size (which texts share a padded batch) and the kind of device (``cpu``, ``cuda``, ``mps``). A file
    computed with another ``--batch-size`` was read back as this one's (isoscore 0.07334928926671543 where batches
    of 7 give 0.0733492895040497). And the dtype the model runs in (``dtype``, default
    :data:`isotropy.models.loading._COMPUTE_DTYPE`): a bfloat16 run's rows are never read back as a float32 run's."""
    # the dtype the model runs in (files computed in a model's own bfloat16, before it was float32, are not read back)
    return f"batch_size={int(batch_size)}|device={str(device or 'cpu').split(':')[0]}|dtype={dtype}"


class LayerOutOfRange(IsotropyValueError):
    """A layer index past the model's hidden states, known once the model has run (:func:`encode_pooled`).

    The message names the function's parameter; ``low``, ``high``, ``model`` and ``layer`` let a caller say it in
    its own terms (an experiment's config key, :mod:`isotropy.experiments._encode`).
    """

    def __init__(self, message: str, *, low: int, high: int, model: str, layer: int):
        super().__init__(message)
        self.low, self.high, self.model, self.layer = low, high, model, layer


def output_row_file(location: str, texts: Sequence[str], cache_dir: str | os.PathLike | None = None, *,
                    batch_size: int, max_length: int, device=None, dtype: str = "float32") -> Path:
    """Where ``isotropy measure --model`` keeps a sentence-transformers model's own output row of ``texts``.

    The row is ``SentenceTransformer.encode(texts)`` (the model's pooling and normalisation, its
    ``max_seq_length`` set to ``max_length``), taken from the hidden layers' forward pass where the
    tokens agree; kept beside the layers' cache (:func:`encode_pooled`, with the same ``batch_size``,
    ``max_length``, ``device`` and ``dtype``) so that measuring other layers of the same texts later runs no pass.
    The token limit is part of the key: a row cut at another limit is never read back as this one.
    """
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir() / "embeddings"
    tag = f"measure-output-row|{_BATCHING}|{_computed_by(batch_size, device, dtype)}|max_length={int(max_length)}"
    return root / f"{_cache_key(location, texts, False, tag=tag)}.npy"


def encode_pooled(texts: Sequence[str], *, model: str = DEFAULT_MODEL, layers: Sequence[int] = (-1,),
                  pooling: str = "mean", device: str | None = None, batch_size: int = 64, max_length: int = 128,
                  cache_dir: str | os.PathLike | None = None, use_cache: bool = True,
                  show_progress: bool = False, dtype: str = "float32", _other_layers_budget: int = 0,
                  _caller: str = "encode_pooled",
                  _texts_name: str = "texts", _name: str = "layers", _loaded: tuple | None = None,
                  _on_batch=None) -> dict[int, np.ndarray]:
    """Pooled token states of any transformers encoder or decoder at several hidden layers, cached per layer.

    Each text is tokenised (truncated to ``max_length`` tokens, special tokens such as [CLS] or
    ``<bos>`` added as the model does), run once through the model, and the hidden states of every
    requested layer are pooled (see :func:`isotropy.models.pool_hidden_states`). Layers already
    in the cache are not recomputed. The texts run in batches of similar token counts
    (:mod:`isotropy.models.batching`); texts with the same tokens run once and get the same vectors
    (their rows are exact duplicates, whatever batch they would have been in).

    Parameters
    ----------
    texts : sequence of str
    model : str, default="all-MiniLM-L6-v2"
        Any name :func:`isotropy.models.resolve_model` accepts (packaged MiniLM or ``gemma-3-270m``,
        a ``.gguf`` file, a local transformers directory, a hub name while online).
    layers : int or sequence of int, default=(-1,)
        Indices into the hidden states (0 = the embedding layer, -1 = the last layer). A string
        (``"all"``, ``"last"``) is refused: :func:`isotropy.models.select_layers` turns it into
        indices given the model's ``n_hidden_states``.
    pooling : {"mean", "last", "first"}, default="mean"
        Attention-masked mean (padding excluded, special tokens included, as sentence-transformers'
        mean pooling), the last real token, or the first token ([CLS]; refused for a causal decoder,
        whose first token is the same for every input).
    device : str, torch.device or None
        ``"auto"``/``None`` (CUDA when available, else CPU), ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or
        ``"mps"``; checked before the cache is read, so a device this machine lacks is refused
        whether or not the layers are cached (:func:`isotropy._utils.device.resolve_device`).
    batch_size : int, default=64
    max_length : int, default=128
        Tokens per text, special tokens included: more than the tokenizer adds (BERT's ``[CLS]`` and ``[SEP]``),
        else refused once the tokenizer is loaded.
    cache_dir : path-like or None
        Default :func:`default_cache_dir` ``/ "embeddings"``; the key includes the model, texts,
        layer, pooling and ``max_length``.
    use_cache : bool, default=True
    show_progress : bool, default=False
    dtype : {"float32", "bfloat16", "float16"}, default="float32"
        The precision the model runs in, whatever its files store (:func:`isotropy.models.load_transformer`):
        float32, exact, or a half dtype that halves the model's memory at ~1e-3 relative error in
        its states. Half states are pooled in float32; the rows are float32 either way. Part of the
        cache key; checked before the cache is read, as ``device``.

    Returns
    -------
    dict of int to ndarray of shape (n_samples, n_features), float32
        Keyed by the layers as given.
    """
    from isotropy._utils.validation import check_scalar, check_texts
    from isotropy.io._encoding import shorten
    from isotropy.models.pooling import check_pooling

    caller = "encode_pooled"
    texts = check_texts(texts, caller=_caller, name=_texts_name)
    if not texts:
        raise IsotropyValueError(f"The 'texts' parameter of {caller} must hold at least one sentence. Got none.")
    if isinstance(layers, str):  # list("all") was ['a', 'l', 'l']: the words need the model's depth, known later
        raise TypeError(f"The 'layers' parameter of {caller} must be an int or a sequence of ints (indices into the "
                        f"hidden states: 0 = embedding output, -1 = last layer; for 'all' or 'last' pass "
                        f"isotropy.models.select_layers({shorten(layers)!r}, n_hidden_states)). Got "
                        f"{shorten(layers)!r} instead.")
    layers = [layers] if isinstance(layers, (int, np.integer)) else list(layers)
    if not layers or any(isinstance(x, bool) or not isinstance(x, (int, np.integer)) for x in layers):
        raise TypeError(f"The 'layers' parameter of {caller} must be a sequence of ints. Got {layers!r} instead.")
    layers = [int(x) for x in dict.fromkeys(layers)]
    pooling = check_pooling(pooling, caller=caller)
    check_scalar(batch_size, "batch_size", caller=caller, kind=int, low=1)
    check_scalar(max_length, "max_length", caller=caller, kind=int, low=2)
    require_model_packages(model)  # torch and transformers named up front, with their extra
    from isotropy._utils.device import resolve_device

    device = resolve_device(device, caller=_caller)  # before the cache: refused whether cached or not
    from isotropy.models.loading import check_dtype, forward_failed

    dtype = check_dtype(dtype, caller=_caller)
    location = resolve_model(model)
    files: dict[int, Path | None] = dict.fromkeys(layers)
    out: dict[int, np.ndarray] = {}
    base = _cache_key(location, texts, False) if use_cache else ""
    cache_root = Path(cache_dir) if cache_dir is not None else default_cache_dir() / "embeddings"

    def cache_file(layer: int) -> Path:
        tag = "mean-pooled" if pooling == "mean" else f"{pooling}-pooled"
        # _BATCHING names how the rows were computed: files of the batching before it (repeated texts run apart,
        # so not exactly equal) are not read back
        key = (f"{base}|{tag}|layer={layer}|max_length={max_length}|{_TOKENS}|{_BATCHING}|"
               f"{_computed_by(batch_size, device, dtype)}")
        key = hashlib.sha256(key.encode()).hexdigest()[:32]
        return cache_root / f"{key}.npy"

    if use_cache:
        for layer in layers:
            files[layer] = cache_file(layer)
            cached = _load_cached(files[layer], len(texts))
            if cached is not None:
                out[layer] = cached
    todo = [layer for layer in layers if layer not in out]
    if not todo:
        return {layer: out[layer] for layer in layers}

    import torch
    from tqdm.auto import tqdm

    from isotropy.models import batching
    from isotropy.models.loading import capped_max_length, check_max_length, load_transformer
    from isotropy.models.pooling import _pool

    # _loaded: (tokenizer, network) the caller already holds, so one command reads the weights once;
    # _on_batch(rows, batch, last_hidden_state) sees every batch of the forward pass (when one runs)
    tokenizer, network = _loaded if _loaded is not None else load_transformer(model, device=device, dtype=dtype)[:2]
    check_pooling(pooling, network.config, caller=caller)
    check_max_length(max_length, tokenizer, model=model, caller=_caller)  # room for a token beside [CLS] [SEP]
    # no longer than the model's positions (a longer max_length failed inside the forward pass)
    tokens = batching.tokenize_texts(tokenizer, texts, max_length=capped_max_length(max_length, network.config,
                                                                                    tokenizer))
    batching.refuse_empty_rows(tokens, texts, name=_texts_name, caller=_caller,
                               tokenizer_of=f"the tokenizer of {model!r}")
    # texts with the same tokens run once: the same vectors whatever their batch mates (float32 results depend
    # on a batch's padded width, and near-duplicates at distance 1e-7 would reach TwoNN as distinct points)
    distinct, source = batching.distinct_sequences(tokens)
    batches = [distinct[at] for at in
               batching.token_count_batches(tokens.lengths[distinct], batch_size)]  # least padding
    fresh: dict[int, np.ndarray] = {}
    with torch.inference_mode():
        for number, rows in enumerate(tqdm(batches, desc="batches", unit="batch", disable=not show_progress)):
            batch = {k: v.to(network.device) for k, v in
                     batching.pad_rows(tokens, rows, pad_id=tokenizer.pad_token_id).items()}
            try:
                output = network(**batch, output_hidden_states=True)
            except (RuntimeError, NotImplementedError) as exc:  # an operation torch lacks in a half dtype here
                said = forward_failed(exc, dtype=dtype, device=device, caller=_caller)
                if said is None:
                    raise
                raise said from None
            hidden = output.hidden_states
            if _on_batch is not None:  # e.g. a sentence-transformers model's own output, from this same pass
                _on_batch(rows, batch, output.last_hidden_state)
            if number == 0 and use_cache and _other_layers_budget:
                # also keep the other layers of this pass when they fit the budget (non-negative indices)
                size = len(texts) * hidden[0].shape[-1] * 4 * len(hidden)
                extra = [i for i in range(len(hidden)) if i not in todo] if size <= _other_layers_budget else []
                todo = todo + extra
                files.update({i: cache_file(i) for i in extra})
            mask = batch["attention_mask"]  # padded from rows with a token each (refuse_empty_rows): no check per batch
            for layer in todo:
                if not -len(hidden) <= layer < len(hidden):
                    raise LayerOutOfRange(f"The '{_name}' parameter of {_caller} must be in [{-len(hidden)}, "
                                          f"{len(hidden) - 1}] for {model!r}. Got {layer} instead.",
                                          low=-len(hidden), high=len(hidden) - 1, model=model, layer=layer)
                pooled = _pool(hidden[layer], mask, pooling)
                if layer not in fresh:
                    fresh[layer] = np.empty((len(texts), pooled.shape[1]), dtype=np.float32)
                fresh[layer][rows] = pooled.float().cpu().numpy()
    repeated = np.flatnonzero(source != np.arange(len(texts)))
    for X in fresh.values():
        X[repeated] = X[source[repeated]]
    _save_all([(files[layer], X) for layer, X in fresh.items() if files[layer] is not None])
    out.update(fresh)
    return {layer: out[layer] for layer in layers}


#: encode_mean_pooled caches every hidden layer of its forward pass when they take at most this many bytes
_ALL_LAYERS_CACHE_BYTES = 512 * 2**20


def encode_mean_pooled(texts: Sequence[str], *, model: str = DEFAULT_MODEL, device: str | None = None, layer: int = -1,
                       batch_size: int = 64, max_length: int = 128, cache_dir: str | os.PathLike | None = None,
                       use_cache: bool = True, pooling: str = "mean", dtype: str = "float32") -> np.ndarray:
    """Pooled token vectors of one hidden layer of any transformers model (e.g. BERT, as Rajaee & Pilehvar), cached.

    The one-layer form of :func:`encode_pooled` (same parameters, ``layer`` instead of
    ``layers``): the hidden states of layer ``layer`` averaged over the tokens the attention mask
    keeps (special tokens included, padding excluded), as sentence-transformers' mean pooling
    does, or the last (``pooling="last"``) or first (``"first"``) token. With the cache on, the other
    hidden layers of the same forward pass are cached too when together they take at most 512 MiB,
    so a sweep over layers runs the model once. ``dtype``: the precision the model runs in (see
    :func:`encode_pooled`).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float32
    """
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)):
        raise TypeError(f"The 'layer' parameter of encode_mean_pooled must be an int. Got {layer!r} instead.")
    from isotropy._utils.validation import check_texts

    texts = check_texts(texts, caller="encode_mean_pooled")
    if not texts:
        raise IsotropyValueError("The 'texts' parameter of encode_mean_pooled must hold at least one sentence. Got none.")
    layer = int(layer)
    if use_cache:
        # one forward pass gives every layer: cache them all when they are small (a layer sweep then costs no
        # further pass); a cached layer is read back without loading the model
        only = encode_pooled(texts, model=model, layers=[layer], pooling=pooling, device=device,
                             batch_size=batch_size, max_length=max_length, cache_dir=cache_dir, use_cache=True,
                             dtype=dtype, _other_layers_budget=_ALL_LAYERS_CACHE_BYTES, _caller="encode_mean_pooled", _name="layer")
        return only[layer]
    return encode_pooled(texts, model=model, layers=[layer], pooling=pooling, device=device, batch_size=batch_size,
                         max_length=max_length, cache_dir=cache_dir, use_cache=False, dtype=dtype,
                         _caller="encode_mean_pooled",
                         _name="layer")[layer]
