"""Tiny randomly initialised BERT and GPT-2 models with their tokenizers, saved to a directory (no download)."""

from __future__ import annotations

from pathlib import Path

# a hand-made WordPiece vocabulary: "unbelievable" -> un ##believ ##able, "cats" -> cat ##s
BERT_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "a", "dog",
              "ran", "un", "##believ", "##able", "##s", ".", ","]
GPT2_TRAINING_TEXT = ["the cat sat on the mat .", "a dog ran far away , the dog sat ."] * 5


def make_tiny_bert(directory: Path, *, n_layers: int = 2, hidden_size: int = 16, seed: int = 0) -> Path:
    """A ``BertModel`` of ``n_layers`` layers and a WordPiece tokenizer over :data:`BERT_VOCAB`."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    vocab = directory / "vocab.txt"
    vocab.write_text("\n".join(BERT_VOCAB) + "\n")
    BertTokenizerFast(str(vocab)).save_pretrained(directory)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(BERT_VOCAB), hidden_size=hidden_size, num_hidden_layers=n_layers,
                        num_attention_heads=2, intermediate_size=2 * hidden_size, max_position_embeddings=64)
    BertModel(config).eval().save_pretrained(directory)
    return directory


def make_tiny_gpt2(directory: Path, *, n_layers: int = 2, hidden_size: int = 16, seed: int = 0) -> Path:
    """A ``GPT2Model`` of ``n_layers`` layers and a byte-level BPE tokenizer trained on a few sentences."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2Model, GPT2TokenizerFast

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(GPT2_TRAINING_TEXT, vocab_size=300, min_frequency=1, show_progress=False)
    bpe.save_model(str(directory))
    tokenizer = GPT2TokenizerFast(str(directory / "vocab.json"), str(directory / "merges.txt"))
    tokenizer.save_pretrained(directory)
    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=len(tokenizer), n_embd=hidden_size, n_layer=n_layers, n_head=2, n_positions=64,
                        bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id)
    GPT2Model(config).eval().save_pretrained(directory)
    return directory
