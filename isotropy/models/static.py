"""A transformers model's input embedding rows as static word vectors (one vector per word)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from isotropy._utils.errors import IsotropyValueError

__all__ = ["input_word_vectors"]


def input_word_vectors(words: Sequence[str], *, model: str = "gemma-3-270m", pieces: str = "mean",
                       prefix_space: bool = True) -> tuple[list[str], np.ndarray]:
    """Static word vectors read from a model's input embedding matrix.

    Each word is tokenised (with a leading space when ``prefix_space``, as in running text, so
    Gemma's ``"▁cat"`` piece is used) without special tokens, and its vector is the input
    embedding of its piece(s), as the model's first layer sees them (Gemma's embedding scale
    :math:`\\sqrt{d}` included, since the embedding module applies it).

    Parameters
    ----------
    words : sequence of str
    model : str, default="gemma-3-270m"
        Any name :func:`isotropy.models.resolve_model` accepts.
    pieces : {"mean", "single"}, default="mean"
        ``"mean"``: average a multi-piece word's rows; ``"single"``: keep only the words that are
        a single piece.
    prefix_space : bool, default=True

    Returns
    -------
    kept_words : list of str
        The words that have a vector, in the given order.
    X : ndarray of shape (n_samples, n_features), float32
    """
    import torch

    from isotropy._utils.validation import check_option, check_texts
    from isotropy.models.loading import load_transformer

    check_option(pieces, "pieces", ("mean", "single"), caller="input_word_vectors")
    words = check_texts(words, caller="input_word_vectors", name="words", what="a sequence of words")
    if not words:
        raise IsotropyValueError("The 'words' parameter of input_word_vectors must hold at least one word. Got none.")
    blank = next((i for i, w in enumerate(words) if not w.strip()), None)
    if blank is not None:  # it would get the vector of the bare prefix space (or no pieces), not of a word
        raise IsotropyValueError(f"The 'words' parameter of input_word_vectors must hold non-empty words. Got "
                                 f"{words[blank]!r} at position {blank} instead.")
    tokenizer, network, _ = load_transformer(model, device="cpu")
    embedding = network.get_input_embeddings()
    ids = tokenizer([(" " + w) if prefix_space else w for w in words], add_special_tokens=False)["input_ids"]
    kept, rows = [], []
    with torch.inference_mode():
        for word, piece_ids in zip(words, ids):
            if not piece_ids or (pieces == "single" and len(piece_ids) != 1):
                continue
            kept.append(word)
            rows.append(embedding(torch.tensor(piece_ids)).float().mean(0).numpy())
    if not rows:
        raise IsotropyValueError(f"None of the {len(words)} words has a vector with pieces={pieces!r}.")
    return kept, np.stack(rows).astype(np.float32)
