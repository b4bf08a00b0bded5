"""A tiny randomly initialised BERT with the packaged MiniLM tokenizer, for the reproduction experiments' tests."""

from __future__ import annotations

from pathlib import Path


def make_tiny_bert_with_minilm_tokenizer(directory: Path, *, n_layers: int = 2, hidden_size: int = 32,
                                         seed: int = 0) -> Path:
    """Save a ``BertModel`` (random weights, real WordPiece vocabulary) and its tokenizer to ``directory``."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from isotropy.models.encoders import resolve_model

    directory = Path(directory)
    tokenizer = AutoTokenizer.from_pretrained(resolve_model("all-MiniLM-L6-v2"))
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=hidden_size, num_hidden_layers=n_layers,
                        num_attention_heads=2, intermediate_size=2 * hidden_size, max_position_embeddings=128)
    BertModel(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
