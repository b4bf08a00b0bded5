"""Token-level contextual embeddings from any Hugging Face transformers model, all layers at once.

:func:`extract_token_embeddings` runs an encoder (BERT, DistilBERT, MiniLM, RoBERTa, ...) or a
decoder (GPT-2 style) over a whitespace-tokenised corpus and returns, for every selected hidden
layer, one vector per corpus word, with the word's type and corpus frequency: the input of the
layer-by-layer geometry of Cai et al. (2021).

How words map to sub-word pieces: each line's words are given to the model's fast tokenizer as
pre-split words (``is_split_into_words=True``; byte-level BPE tokenizers such as GPT-2's are loaded
with ``add_prefix_space=True`` so each word is encoded as if preceded by a space; SentencePiece
tokenizers that mark a space with ``▁`` but add none to a pre-split word, such as Gemma's, get each
word with a leading space, for the same reason: ``▁cat`` as in running text, not ``cat``), and
``word_ids()`` tells which pieces belong to which word. A word is represented by its **first**
piece (``pooling="first"``, the default) or by the mean of its pieces (``pooling="mean"``).
Special tokens ([CLS], [SEP], ...) are never part of a word. Lines longer than the model's window
are cut into consecutive, non-overlapping windows of whole words.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from isotropy._utils.device import resolve_device
from isotropy._utils.validation import (
    IsotropyValueError,
    check_option,
    check_random_state,
    check_scalar,
)
from isotropy.models.layers import check_layers_before_loading, select_layers
from isotropy.models.loading import capped_max_length, check_dtype, forward_failed, load_transformer, words_tokenizer

__all__ = ["TokenEmbeddings", "extract_token_embeddings", "load_transformer", "n_transformer_layers", "parse_layers"]

_CALLER = "extract_token_embeddings"


@dataclass
class TokenEmbeddings:
    """Contextual embeddings of corpus words, one array per hidden layer.

    Attributes
    ----------
    hidden_states : dict of int to ndarray of shape (n_samples, n_features)
        Layer index (0 = embedding output, ``n_layers`` = last layer) to one row per kept word token.
    type_ids : ndarray of shape (n_samples,)
        Index of each token's word type in ``types``.
    types : list of str
        The word types of the kept tokens, in order of first appearance.
    type_frequency : ndarray of shape (n_types,)
        Frequency of each type in the whole corpus given (not only among the kept tokens).
    positions : ndarray of shape (n_samples, 2)
        (line index, word index within the line) of each token in the corpus.
    n_pieces : ndarray of shape (n_samples,)
        Number of sub-word pieces of each token's word.
    model : str
        The model name or directory.
    pooling : {"first", "mean"}
    n_layers : int
        Number of transformer layers of the model (hidden states ``0..n_layers``).
    stats : dict
        Counts of the extraction (lines, windows, words seen, kept, truncated).
    special_norms : dict of int to list of (str, float)
        Layer index to the ``(token, norm)`` of every special-token position ([CLS] and [SEP] for
        BERT, ``<bos>`` for Gemma; none for GPT-2) of every window that went through the model, in the
        order of the forward passes: the norms that :func:`isotropy.metrics.norms.token_norms` lists
        apart (``special=``), e.g. to show a decoder's massive ``<bos>`` activations. Empty when
        not recorded.
    """

    hidden_states: dict[int, np.ndarray]
    type_ids: np.ndarray
    types: list[str]
    type_frequency: np.ndarray
    positions: np.ndarray
    n_pieces: np.ndarray
    model: str
    pooling: str
    n_layers: int
    stats: dict = field(default_factory=dict)
    special_norms: dict[int, list[tuple[str, float]]] = field(default_factory=dict)

    @property
    def layers(self) -> list[int]:
        """The extracted layer indices, ascending."""
        return sorted(self.hidden_states)

    @property
    def n_tokens(self) -> int:
        return len(self.type_ids)

    @property
    def token_frequency(self) -> np.ndarray:
        """Corpus frequency of each token's type, shape ``(n_samples,)``."""
        return self.type_frequency[self.type_ids]

    @property
    def words(self) -> list[str]:
        """The word (type string) of each token."""
        return [self.types[i] for i in self.type_ids]


def n_transformer_layers(config) -> int:
    """Number of transformer layers of a model config (hidden states are ``0..n_layers``)."""
    from isotropy.models.resolve import DEPTH_KEYS

    for name in DEPTH_KEYS:
        value = getattr(config, name, None)
        if isinstance(value, int):
            return value
    raise IsotropyValueError(f"Cannot tell the number of layers of a {type(config).__name__}.")


def parse_layers(layers, n_layers: int, *, caller: str = _CALLER, name: str = "layers") -> list[int]:
    """Deprecated: :func:`isotropy.models.select_layers` with ``n_hidden_states = n_layers + 1``."""
    import warnings

    warnings.warn("isotropy.models.contextual.parse_layers(layers, n_layers) is deprecated; use "
                  "isotropy.models.select_layers(layers, n_layers + 1). It goes in the next release.",
                  DeprecationWarning, stacklevel=2)
    return select_layers(layers, n_layers + 1, caller=caller, name=name)


def _as_lines(lines) -> list[list[str]]:
    lines = getattr(lines, "lines", lines)  # a Corpus
    if isinstance(lines, (str, bytes, bytearray)):
        from isotropy._utils.validation import check_texts

        check_texts(lines, caller=_CALLER, name="lines", what="a Corpus or a sequence of lines")
    out = [line.split() if isinstance(line, str) else [str(w) for w in line if str(w).strip()]
           for line in lines]
    out = [line for line in out if line]
    if not out:
        raise IsotropyValueError(f"The 'lines' parameter of {_CALLER} must hold at least one word. Got an empty corpus.")
    return out


def _select(lines, order, *, skip, max_tokens, max_per_type):
    """Which (line, word) tokens to keep: visit lines in ``order``, cap per type and in total."""
    kept: dict[int, list[int]] = {}
    per_type: Counter = Counter()
    total = 0
    for li in order:
        for wi, word in enumerate(lines[li]):
            if word in skip or (max_per_type is not None and per_type[word] >= max_per_type):
                continue
            per_type[word] += 1
            kept.setdefault(li, []).append(wi)
            total += 1
            if max_tokens is not None and total >= max_tokens:
                return kept
    return kept


def _space_prefixer(tokenizer, leading_space="auto"):
    """How to hand pre-split words to ``tokenizer`` so each is encoded as in running text.

    ``"auto"`` probes the tokenizer: if the second of two pre-split words gets other pieces than in
    the text ``"a cat"`` and a leading space restores them (SentencePiece with a ``▁``-replacing
    normalizer and no prefix, e.g. Gemma), every word is given with a leading space; otherwise
    unchanged. ``True`` always prefixes a space, ``False`` never does (words as given).
    """
    if leading_space is True:
        return lambda words: [" " + w for w in words]
    if leading_space is False:
        return list

    def pieces(words):
        return tokenizer(words, is_split_into_words=True, add_special_tokens=False)["input_ids"]

    running = tokenizer("a cat", add_special_tokens=False)["input_ids"]
    if pieces(["a", "cat"]) != running and pieces(["a", " cat"]) == running:
        return lambda words: [" " + w for w in words]
    return list


def _windows(word_ids: list, n_words: int, budget: int):
    """Cut a line into windows of consecutive whole words of at most ``budget`` pieces."""
    pieces = np.bincount([w for w in word_ids if w is not None], minlength=n_words)
    windows, start, size = [], 0, 0
    for wi in range(n_words):
        if size and size + pieces[wi] > budget:
            windows.append((start, wi))
            start, size = wi, 0
        size += pieces[wi]
    windows.append((start, n_words))
    return windows, pieces


def extract_token_embeddings(lines, *, model: str = "all-MiniLM-L6-v2", layers="all", pooling: str = "first",
                             max_tokens: int | None = None, max_per_type: int | None = None,
                             skip_types: Sequence[str] = (), shuffle: bool = False, random_state=None,
                             max_length: int = 128, batch_size: int = 32, device=None, dtype: str = "float32",
                             leading_space="auto", show_progress: bool = True,
                             tokenizer_and_model=None, compute_dtype: str | None = None) -> TokenEmbeddings:
    """Contextual embedding of every corpus word at every selected hidden layer.

    Parameters
    ----------
    lines : Corpus or sequence of (list of str or str)
        The corpus: one list of words per line (a string line is split on whitespace).
    model : str, default="all-MiniLM-L6-v2"
        The packaged MiniLM (a 6-layer BERT), a local transformers model directory, or a hub name.
    layers : "all", str or sequence of int, default="all"
        Hidden states to keep: ``0`` is the embedding output, ``n_layers`` the last layer;
        ``"0,3,6"``, ``[0, 3, 6]``, ``"last"`` or negative indices (see :func:`isotropy.models.select_layers`).
    pooling : {"first", "mean"}, default="first"
        A word is its first sub-word piece, or the mean of its pieces.
    max_tokens : int or None
        Keep at most this many word tokens in total (lines are visited in corpus order, or in a
        random order with ``shuffle=True``); the model runs only on windows holding kept tokens.
    max_per_type : int or None
        Keep at most this many instances of each word type.
    skip_types : sequence of str
        Word types never kept (e.g. ``"<unk>"``); they still serve as context.
    shuffle : bool, default=False
        Visit lines in a random order (``random_state``) when selecting tokens under the caps.
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState, default=None
        Seeds the order of ``shuffle`` (a RandomState seeds a Generator with one draw of it).
    max_length : int, default=128
        Window length in pieces, special tokens included; longer lines are cut into windows of
        whole words.
    batch_size : int, default=32
        Windows per forward pass (windows are sorted by length to limit padding). Windows with
        the same words run once (``stats["n_windows_run"]`` of ``stats["n_windows"]``): their
        tokens get equal vectors, whatever batches they would have fallen in; so do a causal
        decoder's tokens with the same prefix (``stats["n_same_prefix"]`` rows copied,
        :func:`isotropy.models.batching.copy_same_prefix_rows`).
    device : str, torch.device or None
        ``"auto"``/``None`` (CUDA when available, else CPU), ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or
        ``"mps"`` (:func:`isotropy._utils.device.resolve_device`); checked even when
        ``tokenizer_and_model`` is given (the model then stays where it is).
    dtype : {"float32", "float16"}, default="float32"
        Storage type of the returned arrays (the model runs in ``compute_dtype``).
    leading_space : {"auto", True, False}, default="auto"
        Give each word to the tokenizer with a leading space: ``"auto"`` where the tokenizer needs
        it to encode a word as in running text (``▁cat`` in Gemma's SentencePiece), ``True`` always,
        ``False`` never (words as given: ``cat``, a word-initial piece the model rarely sees mid-text).
    show_progress : bool, default=True
        A tqdm progress bar over batches.
    tokenizer_and_model : (tokenizer, model) or None
        Already loaded objects (see :func:`load_transformer`), to skip loading.
    compute_dtype : {"float32", "bfloat16", "float16"} or None, default=None
        The precision the model is built and run in (:func:`load_transformer`'s ``dtype``): float32 (what
        ``None`` loads), or a half dtype that halves the model's memory on a GPU at ~1e-3 relative error in
        its hidden states; the vectors are gathered in float32 and stored as ``dtype``. A model given in
        ``tokenizer_and_model`` runs in its own precision: ``None`` takes it as it is, a dtype named must be
        that precision.

    Returns
    -------
    TokenEmbeddings
        ``hidden_states[layer]`` has shape ``(n_samples, n_features)``, one row per kept token, in
        the order of selection.

    Notes
    -----
    Type frequencies count every word of ``lines``; caps never change them. Words that the
    tokenizer maps to no piece at all (rare control characters) cannot be represented and are
    dropped (``stats["n_without_pieces"]``). A single word longer than a window keeps the pieces
    that fit (``stats["n_truncated"]``).

    References
    ----------
    Cai, X., Huang, J., Bian, Y. and Church, K. (2021). Isotropy in the contextual embedding space:
    clusters and manifolds. ICLR 2021.

    Examples
    --------
    >>> emb = extract_token_embeddings([["the", "cat", "sat"], ["the", "dog"]], layers="0,6",
    ...                                show_progress=False, device="cpu")
    >>> emb.layers, emb.hidden_states[6].shape, emb.words[:3]
    ([0, 6], (5, 384), ['the', 'cat', 'sat'])
    >>> int(emb.token_frequency[0])
    2
    """
    if tokenizer_and_model is None:
        from isotropy.models.resolve import require_model_packages

        require_model_packages(model)  # torch and transformers named up front, with their extra
    import torch

    lines = _as_lines(lines)
    check_option(pooling, "pooling", ("first", "mean"), caller=_CALLER)
    check_option(dtype, "dtype", ("float32", "float16"), caller=_CALLER)
    if not (isinstance(leading_space, bool) or isinstance(leading_space, str) and leading_space == "auto"):
        raise IsotropyValueError(f"The 'leading_space' parameter of {_CALLER} must be 'auto', True or False. "
                                 f"Got {leading_space!r} instead.")
    check_scalar(max_tokens, "max_tokens", caller=_CALLER, kind=int, low=1, allow_none=True)
    check_scalar(max_per_type, "max_per_type", caller=_CALLER, kind=int, low=1, allow_none=True)
    check_scalar(max_length, "max_length", caller=_CALLER, kind=int, low=4)
    check_scalar(batch_size, "batch_size", caller=_CALLER, kind=int, low=1)
    rng = check_random_state(random_state, caller=_CALLER)
    device = resolve_device(device, caller=_CALLER)
    if compute_dtype is not None:
        compute_dtype = check_dtype(compute_dtype, caller=_CALLER, name="compute_dtype")

    if tokenizer_and_model is None:
        check_layers_before_loading(layers, model, caller=_CALLER)
        compute_dtype = compute_dtype or "float32"
        tokenizer, network, _ = load_transformer(model, device=device, dtype=compute_dtype)
    else:
        tokenizer, network = tokenizer_and_model
        held = str(getattr(network, "dtype", None) or next(network.parameters()).dtype).removeprefix("torch.")
        # the model is used as given (None: whatever its precision, as before compute_dtype existed); a precision
        # named and not the model's is not run silently
        if compute_dtype is not None and held != compute_dtype:
            raise IsotropyValueError(f"The 'compute_dtype' parameter of {_CALLER} must be the precision of the model "
                                     f"given in tokenizer_and_model ({held!r}), which runs as it is, or None. Got "
                                     f"{compute_dtype!r} instead; load the model in {compute_dtype} (load_transformer"
                                     f"(..., dtype={compute_dtype!r})) or leave compute_dtype out.")
        compute_dtype = held if compute_dtype is not None else None  # None: torch's own error of a forward that fails
    tokenizer = words_tokenizer(tokenizer)  # words given pre-split: a byte-level BPE one with add_prefix_space
    n_layers = n_transformer_layers(network.config)
    layers = select_layers(layers, n_layers + 1, caller=_CALLER)
    max_length = capped_max_length(max_length, network.config, tokenizer)  # the model's positions bound it
    budget = max_length - tokenizer.num_special_tokens_to_add(pair=False)
    if budget < 1:
        raise IsotropyValueError(f"The 'max_length' parameter of {_CALLER} leaves no room for words after the "
                                 f"special tokens. Got {max_length} instead.")

    frequency = Counter(word for line in lines for word in line)
    order = rng.permutation(len(lines)) if shuffle else range(len(lines))
    kept = _select(lines, order, skip=set(skip_types), max_tokens=max_tokens, max_per_type=max_per_type)
    if not kept:
        raise IsotropyValueError(f"No word token is left to embed in a corpus of {sum(frequency.values())} words "
                                 f"after skip_types={list(skip_types)!r}.")

    # word -> piece mapping of every used line, then windows of whole words
    used = sorted(kept)
    as_words = _space_prefixer(tokenizer, leading_space)
    encoded = tokenizer([as_words(lines[li]) for li in used], is_split_into_words=True, add_special_tokens=False)
    jobs = []  # (n_pieces, line index, start word, stop word, [kept word indices in window])
    pieces_of: dict[tuple[int, int], int] = {}
    n_without = n_truncated = 0
    for b, li in enumerate(used):
        windows, pieces = _windows(encoded.word_ids(b), len(lines[li]), budget)
        keep = kept[li]
        for wi in keep:
            pieces_of[(li, wi)] = int(pieces[wi])
            n_truncated += int(pieces[wi] > budget)
        for start, stop in windows:
            inside = [wi for wi in keep if start <= wi < stop and pieces[wi] > 0]
            n_without += sum(1 for wi in keep if start <= wi < stop and pieces[wi] == 0)
            if inside:
                jobs.append((int(pieces[start:stop].sum()), li, start, stop, inside))
    jobs.sort(key=lambda job: job[0])

    n_out = sum(len(job[4]) for job in jobs)
    if n_out == 0:
        raise IsotropyValueError("No kept word has a sub-word piece in this tokenizer's vocabulary.")
    # output rows: kept tokens in the order the lines were visited
    ordered = [(li, wi) for li in (order if shuffle else range(len(lines))) if li in kept for wi in kept[li]
               if pieces_of[(li, wi)] > 0]
    row_of = {pos: r for r, pos in enumerate(ordered)}

    d = int(getattr(network.config, "hidden_size", 0) or getattr(network.config, "n_embd", 0) or network.config.dim)
    np_dtype = np.float32 if dtype == "float32" else np.float16
    out = {layer: np.empty((n_out, d), dtype=np_dtype) for layer in layers}
    filled = np.zeros(n_out, dtype=bool)
    special_norms: dict[int, list[tuple[str, float]]] = {layer: [] for layer in layers}
    device_ = next(network.parameters()).device

    from tqdm.auto import tqdm

    # windows with the same words (a repeated line, a heading) run once: in other batches, other padded widths would
    # give their tokens vectors a few ulps apart, which the neighbour metrics read as distinct points
    same: dict[tuple, list] = {}
    for job in jobs:
        same.setdefault(tuple(lines[job[1]][job[2]:job[3]]), []).append(job)
    runs = list(same.values())  # in the order of the jobs: by length
    batches = [runs[i:i + batch_size] for i in range(0, len(runs), batch_size)]
    from isotropy.models.batching import Prefixes, copies_prefixes

    trie = Prefixes() if copies_prefixes(network, tokenizer) else None  # only a causal decoder's are copied
    prefix_of: list[int] = [0] * n_out  # each row's prefix (its token ids up to its word's last piece), as an id
    for batch in tqdm(batches, desc="windows", unit="batch", disable=not show_progress):
        words = [as_words(lines[li][start:stop]) for (_, li, start, stop, _), *_ in batch]
        enc = tokenizer(words, is_split_into_words=True, padding=True, truncation=True, max_length=max_length,
                        return_tensors="pt")
        b_idx, t_idx, r_idx = [], [], []
        ids = enc["input_ids"].tolist()
        real = enc["attention_mask"].sum(1).tolist() if "attention_mask" in enc else [len(row) for row in ids]
        for b, group in enumerate(batch):
            nodes = trie.ids(ids[b][:real[b]]) if trie is not None else []  # its prefixes (real tokens lead)
            wanted: dict[int, list[int]] = {}  # word of the window -> the output rows of every window like it
            for _, li, start, _, inside in group:
                for wi in inside:
                    wanted.setdefault(wi - start, []).append(row_of[(li, wi)])
            seen = set()
            for t, w in enumerate(enc.word_ids(b)):
                if w is None or w not in wanted or (pooling == "first" and w in seen):
                    continue
                seen.add(w)
                for row in wanted[w]:
                    b_idx.append(b)
                    t_idx.append(t)
                    r_idx.append(row)
                    prefix_of[row] = nodes[t] if t < len(nodes) else -1 - row  # its last piece's (t rises)
        # special-token positions ([CLS], [SEP], <bos>): no word, not padding; counted once per window like it
        mask = enc["attention_mask"].tolist() if "attention_mask" in enc else None
        specials = [(b, t) for b in range(len(batch)) for t, w in enumerate(enc.word_ids(b))
                    if w is None and (mask is None or mask[b][t]) for _ in batch[b]]
        s_b, s_t = [b for b, _ in specials], [t for _, t in specials]
        s_names = tokenizer.convert_ids_to_tokens(enc["input_ids"][s_b, s_t].tolist()) if specials else []
        with torch.inference_mode():
            inputs = {k: v.to(device_) for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
            try:
                hidden = network(**inputs, output_hidden_states=True).hidden_states
            except (RuntimeError, NotImplementedError) as exc:  # an operation torch lacks in a half dtype here
                said = forward_failed(exc, dtype=compute_dtype or "float32", device=device, caller=_CALLER,
                                      name="compute_dtype")
                if said is None:
                    raise
                raise said from None
            stacked = torch.stack([hidden[layer] for layer in layers])  # (L, B, T, d)
            b_t = torch.tensor(b_idx, device=device_)
            t_t = torch.tensor(t_idx, device=device_)
            picked = stacked[:, b_t, t_t].float()  # (L, n_pieces, d)
            rows = np.asarray(r_idx)
            if pooling == "mean":
                unique, inverse = np.unique(rows, return_inverse=True)
                inv = torch.as_tensor(inverse, device=device_)
                sums = torch.zeros(len(layers), len(unique), d, device=device_).index_add_(1, inv, picked)
                counts = torch.bincount(inv, minlength=len(unique)).clamp_min(1).to(sums.dtype)
                picked, rows = sums / counts[None, :, None], unique
            values = picked.cpu().numpy()
            if s_b:  # norms in float32 on the device; only the norms come to the CPU
                special = stacked[:, torch.tensor(s_b, device=device_), torch.tensor(s_t, device=device_)]
                special = special.float().norm(dim=-1).cpu().tolist()  # (L, n_special)
        for j, layer in enumerate(layers):
            out[layer][rows] = values[j]
            if s_b:
                special_norms[layer].extend(zip(s_names, special[j]))
        filled[rows] = True
    if not filled.all():  # every kept word has a piece inside its window by construction
        raise RuntimeError(f"{int((~filled).sum())} kept tokens received no embedding; please report this.")
    from isotropy.models.batching import copy_same_prefix_rows

    n_same_prefix = copy_same_prefix_rows(out, prefix_of, network=network, tokenizer=tokenizer) \
        if trie is not None else 0

    type_index: dict[str, int] = {}
    type_ids = np.array([type_index.setdefault(lines[li][wi], len(type_index)) for li, wi in ordered], dtype=np.intp)
    types = list(type_index)
    return TokenEmbeddings(
        hidden_states=out,
        type_ids=type_ids,
        types=types,
        type_frequency=np.array([frequency[t] for t in types], dtype=np.int64),
        positions=np.array(ordered, dtype=np.int64).reshape(-1, 2),
        n_pieces=np.array([pieces_of[pos] for pos in ordered], dtype=np.int64),
        model=str(model),
        pooling=pooling,
        n_layers=n_layers,
        stats={"n_lines": len(lines), "n_lines_used": len(used), "n_windows": len(jobs), "n_windows_run": len(runs),
               "n_same_prefix": n_same_prefix,
               "n_words": sum(frequency.values()), "n_kept": n_out, "n_without_pieces": n_without,
               "n_truncated": n_truncated, "leading_space": as_words is not list},
        special_norms=special_norms,
    )
