"""Token batches of texts: tokenised once, grouped by token count, padded batch by batch.

The batching of sentence-level texts for a forward pass, shared by
:func:`isotropy.models.encoders.encode_pooled` (``isotropy measure --model``) and the training probe
(:mod:`isotropy.training.probe`). Grouping rows by their token counts rather than by their lengths
in characters pads less: on the 1,379 STS-B test sentences under all-MiniLM-L6-v2 in batches of 32,
20,161 token positions instead of 25,121 for 19,592 tokens (``benchmarks/bench_measure_model.py``
prints both), and the forward pass's work is proportional to the positions.

The token ids of all texts are held flat (:class:`TokenRows`: one int64 array per key and the rows'
offsets, 8 bytes a token and key, where a Python list holds an 8-byte pointer to a 28-byte int
object for most ids), and texts are tokenised a chunk at a time, so that the tokenizer's per-text
objects exist for one chunk only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from isotropy._utils.errors import IsotropyValueError

__all__ = ["INPUT_KEYS", "Prefixes", "TokenRows", "copies_prefixes", "copy_same_prefix_rows", "distinct_sequences",
           "first_of_equal", "pad_rows", "refuse_empty_rows", "token_count_batches", "tokenize_texts"]

#: The tokenizer outputs a forward pass takes (others, such as offsets, are dropped).
INPUT_KEYS = ("input_ids", "attention_mask", "token_type_ids")
# Texts handed to the tokenizer at a time: its per-text objects (offsets, tokens) exist for one chunk only.
_TOKENIZE_CHUNK = 4096


class TokenRows:
    """The unpadded token ids of many rows: ``values[key][offsets[i]:offsets[i + 1]]`` is row ``i``'s.

    ``values`` maps each key of :data:`INPUT_KEYS` that the tokenizer gave to one int64 array of all
    rows' ids, one after the other; ``offsets`` (int64, ``n_rows + 1``) are where each row starts.
    """

    def __init__(self, values: dict[str, np.ndarray], offsets: np.ndarray):
        self.values, self.offsets = values, offsets

    @classmethod
    def from_lists(cls, lists: dict[str, Sequence[Sequence[int]]]) -> TokenRows:
        """From one list of ids per row for each key (every key with the same row lengths)."""
        first = next(iter(lists.values()))
        offsets = np.zeros(len(first) + 1, dtype=np.int64)
        np.cumsum([len(ids) for ids in first], out=offsets[1:])
        _check_lengths(lists, [len(ids) for ids in first])
        flat = {key: np.fromiter((t for ids in rows for t in ids), dtype=np.int64, count=int(offsets[-1]))
                for key, rows in lists.items()}
        return cls(flat, offsets)

    @classmethod
    def concatenate(cls, parts: Sequence[TokenRows]) -> TokenRows:
        """The rows of ``parts``, one part after the other."""
        if not parts:
            return cls({}, np.zeros(1, dtype=np.int64))
        offsets = np.concatenate([[0], *(np.diff(part.offsets) for part in parts)]).cumsum()
        return cls({key: np.concatenate([part.values[key] for part in parts]) for key in parts[0].values}, offsets)

    def __len__(self) -> int:
        return self.offsets.size - 1

    @property
    def lengths(self) -> np.ndarray:
        """The token count of every row."""
        return np.diff(self.offsets)

    def row(self, key: str, i: int) -> np.ndarray:
        """The ids of row ``i`` under ``key``."""
        return self.values[key][self.offsets[i]:self.offsets[i + 1]]


def tokenize_texts(tokenizer, texts: Sequence[str], *, max_length: int) -> TokenRows:
    """The ids of :data:`INPUT_KEYS` of every text, truncated to ``max_length`` tokens, unpadded.

    The tokenizer gets ``_TOKENIZE_CHUNK`` texts a call (a fast tokenizer encodes each call's texts
    in parallel), special tokens added as the model does.
    """
    chunks = []
    for start in range(0, len(texts), _TOKENIZE_CHUNK):
        encoded = tokenizer(list(texts[start:start + _TOKENIZE_CHUNK]), truncation=True, max_length=max_length)
        chunks.append(TokenRows.from_lists({key: encoded[key] for key in INPUT_KEYS if key in encoded}))
    return TokenRows.concatenate(chunks)


def refuse_empty_rows(tokens: TokenRows, texts: Sequence[str], *, name: str, caller: str, tokenizer_of: str) -> None:
    """An error that names the first text with no token at all (``""`` under a decoder that adds no start token).

    A model cannot run on it, and a batch of such rows fails inside torch with a reshape error.
    """
    empty = np.flatnonzero(tokens.lengths == 0)
    if empty.size:
        raise IsotropyValueError(f"The '{name}' parameter of {caller} must have texts with at least one token under "
                                 f"{tokenizer_of}. Got {empty.size} without any (the first: {texts[empty[0]]!r}, at "
                                 f"index {empty[0]}); remove them.")


def _check_lengths(keys: dict, counts: list[int]) -> None:
    """Every key has, row by row, as many ids as ``input_ids`` (``counts``): one position per token."""
    for key, rows in keys.items():
        bad = next((i for i, (ids, n) in enumerate(zip(rows, counts, strict=True)) if len(ids) != n), None)
        if bad is not None:
            raise IsotropyValueError(f"The tokenizer's {key!r} must have one value per token of 'input_ids'. Got "
                                     f"{len(rows[bad])} values for {counts[bad]} tokens in row {bad} instead.")


def distinct_sequences(tokens: TokenRows) -> tuple[np.ndarray, np.ndarray]:
    """``(distinct, source)``: the first row of each distinct token sequence, and for every row that first row.

    Rows whose every key holds the same ids are the same input to a model: running the first of them
    once and copying its output to the others (``X[rows] = X[source[rows]]``) gives them exactly equal
    vectors. Run in different batches, their float32 results would differ by the rounding of each
    batch's padded width, and a neighbour metric would see near-duplicates instead of duplicates.
    """
    n = len(tokens)
    keys = list(tokens.values)
    # equal ids have equal lengths: the keys' bytes one after the other are unambiguous
    source = first_of_equal(b"".join(tokens.row(key, row).tobytes() for key in keys) for row in range(n))
    return np.flatnonzero(source == np.arange(n)), source


def first_of_equal(keys) -> np.ndarray:
    """For each of ``keys`` (hashable, in order), the index of the first key equal to it (intp)."""
    first: dict = {}
    return np.fromiter((first.setdefault(key, row) for row, key in enumerate(keys)), dtype=np.intp)


class Prefixes:
    """One int per distinct token prefix (a trie's nodes): ``ids(tokens)[t]`` names ``tokens[:t + 1]``.

    Equal prefixes get equal ids across every sequence given, in memory of one entry per distinct
    (prefix, next token), not a copy of each prefix.
    """

    def __init__(self):
        self._node: dict[tuple[int, int], int] = {}

    def ids(self, tokens) -> list[int]:
        out, node = [], 0
        for token in tokens:
            node = self._node.setdefault((node, int(token)), len(self._node) + 1)
            out.append(node)
        return out


def copies_prefixes(network, tokenizer) -> bool:
    """Whether :func:`copy_same_prefix_rows` copies for this model and tokenizer: a model known to be causal
    (:func:`isotropy.models.loading.is_certainly_causal`, never a guess from a name) that pads on the right."""
    from isotropy.models.loading import is_certainly_causal

    return is_certainly_causal(network.config) and getattr(tokenizer, "padding_side", "right") == "right"


def copy_same_prefix_rows(states: dict, prefixes: Sequence, *, network, tokenizer) -> int:
    """Give token rows with the same prefix exactly the vector of the first of them, for a causal decoder.

    A causal decoder's state of a token is a function of the tokens up to it (its prefix, start
    token included): the same word after the same prefix (a window's first word after ``<bos>``)
    is one point. Computed in batches of other padded widths, its copies come out a few float32
    ulps apart, near-duplicates that neighbour metrics (TwoNN, LID) read as distinct points. This
    holds with right padding only, where the real tokens sit at positions ``0..t`` in every batch,
    and for a model known to be causal (:func:`copies_prefixes`); for left padding, an encoder
    (whose tokens see the whole window) or a model whose causality is only guessed, nothing is copied.

    ``states``: ``{layer: (n_rows, d)}``, changed in place; ``prefixes[r]``: row ``r``'s token ids up to
    and including its last piece, or an id of them (:class:`Prefixes`). Returns the number of rows copied.
    """
    if not copies_prefixes(network, tokenizer):
        return 0
    source = first_of_equal(prefixes)
    copies = np.flatnonzero(source != np.arange(len(prefixes)))
    for X in states.values():
        X[copies] = X[source[copies]]
    return int(copies.size)


def token_count_batches(lengths: Sequence[int], batch_size: int) -> list[np.ndarray]:
    """Row indices in batches of at most ``batch_size``, rows of similar token counts together.

    A stable sort by ``lengths``, cut every ``batch_size`` rows: each batch is padded to its own
    longest row, so neighbours in the order waste the fewest positions.
    """
    order = np.argsort(np.asarray(lengths), kind="stable")
    return [order[s:s + batch_size] for s in range(0, order.size, batch_size)]


def pad_rows(tokens: TokenRows, rows, *, pad_id: int | None) -> dict:
    """CPU ``torch.long`` tensors of the rows ``rows`` of ``tokens``, padded on the right to the longest of them.

    ``input_ids`` are padded with ``pad_id`` (0 when ``None``), every other key with 0; an
    ``attention_mask`` of ones on the real tokens is added when ``tokens`` has none.
    """
    import torch

    rows = np.asarray(rows, dtype=np.intp)
    counts = tokens.lengths[rows]
    width = int(counts.max())
    out = {}
    for key, values in tokens.values.items():
        fill = (pad_id if pad_id is not None else 0) if key == "input_ids" else 0
        block = np.full((rows.size, width), fill, dtype=np.int64)
        for r, i in enumerate(rows):
            block[r, :counts[r]] = values[tokens.offsets[i]:tokens.offsets[i + 1]]
        out[key] = torch.from_numpy(block)
    if "attention_mask" not in out:
        out["attention_mask"] = torch.from_numpy((np.arange(width)[None, :] < counts[:, None]).astype(np.int64))
    return out
