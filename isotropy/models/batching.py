"""Token batches of texts: tokenised once, grouped by token count, padded batch by batch.

The one batching of texts for a forward pass, shared by :func:`isotropy.models.encoders.encode_pooled`
(``isotropy measure --model``) and the training probe (:mod:`isotropy.training.probe`). Grouping
rows by their token counts rather than by their lengths in characters pads less: on the 1,379
STS-B test sentences under all-MiniLM-L6-v2 in batches of 32, 20,161 token positions instead of
25,121 for 19,592 tokens (``benchmarks/bench_measure_model.py`` prints both), and the forward
pass's work is proportional to the positions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["INPUT_KEYS", "distinct_sequences", "pad_rows", "token_count_batches", "tokenize_texts"]

#: The tokenizer outputs a forward pass takes (others, such as offsets, are dropped).
INPUT_KEYS = ("input_ids", "attention_mask", "token_type_ids")


def tokenize_texts(tokenizer, texts: Sequence[str], *, max_length: int) -> dict[str, list[list[int]]]:
    """``{key: one id list per text}`` of :data:`INPUT_KEYS`, truncated to ``max_length`` tokens, unpadded.

    One call of the tokenizer for all texts (a fast tokenizer encodes them in parallel), special
    tokens added as the model does.
    """
    encoded = tokenizer(list(texts), truncation=True, max_length=max_length)
    return {key: [list(v) for v in encoded[key]] for key in INPUT_KEYS if key in encoded}


def distinct_sequences(tokens: dict[str, list[list[int]]]) -> tuple[np.ndarray, np.ndarray]:
    """``(distinct, source)``: the first row of each distinct token sequence, and for every row that first row.

    Rows whose every key of ``tokens`` holds the same ids are the same input to a model: running the
    first of them once and copying its output to the others (``X[rows] = X[source[rows]]``) gives them
    exactly equal vectors. Run in different batches, their float32 results would differ by the rounding
    of each batch's padded width, and a neighbour metric would see near-duplicates instead of duplicates.
    """
    n = len(tokens["input_ids"])
    source = np.empty(n, dtype=np.intp)
    first: dict = {}
    for row in range(n):
        source[row] = first.setdefault(tuple(tuple(values[row]) for values in tokens.values()), row)
    return np.flatnonzero(source == np.arange(n)), source


def token_count_batches(lengths: Sequence[int], batch_size: int) -> list[np.ndarray]:
    """Row indices in batches of at most ``batch_size``, rows of similar token counts together.

    A stable sort by ``lengths``, cut every ``batch_size`` rows: each batch is padded to its own
    longest row, so neighbours in the order waste the fewest positions.
    """
    order = np.argsort(np.asarray(lengths), kind="stable")
    return [order[s:s + batch_size] for s in range(0, order.size, batch_size)]


def pad_rows(tokens: dict[str, list[list[int]]], rows, *, pad_id: int | None) -> dict:
    """CPU ``torch.long`` tensors of the rows ``rows`` of ``tokens``, padded on the right to the longest of them.

    ``input_ids`` are padded with ``pad_id`` (0 when ``None``), every other key with 0; an
    ``attention_mask`` of ones on the real tokens is added when ``tokens`` has none.
    """
    import torch

    ids = tokens["input_ids"]
    counts = [len(ids[i]) for i in rows]
    width = max(counts)
    out = {}
    for key, values in tokens.items():
        fill = (pad_id if pad_id is not None else 0) if key == "input_ids" else 0
        block = np.full((len(counts), width), fill, dtype=np.int64)
        for r, i in enumerate(rows):
            block[r, :counts[r]] = values[i]
        out[key] = torch.from_numpy(block)
    if "attention_mask" not in out:
        out["attention_mask"] = (torch.arange(width)[None, :] < torch.tensor(counts)[:, None]).long()
    return out
