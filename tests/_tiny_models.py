"""Tiny randomly initialised BERT and GPT-2 models with their tokenizers, saved to a directory (no download)."""

from __future__ import annotations

import contextlib
from pathlib import Path

# a hand-made WordPiece vocabulary: "unbelievable" -> un ##believ ##able, "cats" -> cat ##s
BERT_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "a", "dog",
              "ran", "un", "##believ", "##able", "##s", ".", ","]
GPT2_TRAINING_TEXT = ["the cat sat on the mat .", "a dog ran far away , the dog sat ."] * 5


def make_tiny_bert(directory: Path, *, n_layers: int = 2, hidden_size: int = 16, seed: int = 0,
                   head: bool = False) -> Path:
    """A ``BertModel`` of ``n_layers`` layers and a WordPiece tokenizer over :data:`BERT_VOCAB`; with ``head``, a
    ``BertForSequenceClassification`` checkpoint (the base model plus its classifier)."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertModel, BertTokenizerFast

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    vocab = directory / "vocab.txt"
    vocab.write_text("\n".join(BERT_VOCAB) + "\n")
    BertTokenizerFast(str(vocab)).save_pretrained(directory)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(BERT_VOCAB), hidden_size=hidden_size, num_hidden_layers=n_layers,
                        num_attention_heads=2, intermediate_size=2 * hidden_size, max_position_embeddings=64)
    (BertForSequenceClassification if head else BertModel)(config).eval().save_pretrained(directory)
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


# a tiny SentencePiece-style vocabulary ("\u2581" marks a word start) for a Gemma-style GGUF
GEMMA_SPECIAL = ["<pad>", "<eos>", "<bos>", "<unk>"]
GEMMA_PIECES = ["\u2581", "a", "c", "d", "e", "h", "m", "n", "o", "r", "s", "t", ".", "\u2581t", "\u2581th",
                "\u2581the", "\u2581c", "\u2581ca", "\u2581cat", "\u2581s", "\u2581sa", "\u2581sat", "\u2581o",
                "\u2581on", "\u2581m", "\u2581ma", "\u2581mat", "\u2581d", "\u2581do", "\u2581dog", "\u2581r",
                "\u2581ra", "\u2581ran", "\u2581a"]


def tiny_gemma_config(*, n_layers: int = 2, hidden_size: int = 16):
    """A Gemma 3 text config small enough for unit tests, with the values a GGUF file records."""
    from transformers import Gemma3TextConfig

    return Gemma3TextConfig(vocab_size=len(GEMMA_SPECIAL) + len(GEMMA_PIECES), hidden_size=hidden_size,
                            intermediate_size=2 * hidden_size, num_hidden_layers=n_layers, num_attention_heads=2,
                            num_key_value_heads=1, head_dim=8, max_position_embeddings=64, sliding_window=8,
                            rms_norm_eps=1e-6, pad_token_id=0, eos_token_id=1, bos_token_id=2,
                            # what llama.cpp runs a GGUF file with (it stores no scale): 1/sqrt(head size)
                            query_pre_attn_scalar=8)


def make_tiny_gemma_gguf(path: Path, *, n_layers: int = 2, hidden_size: int = 16, seed: int = 0):
    """Write a randomly initialised Gemma-3-style causal LM as an F32 GGUF file; return ``(path, state_dict)``.

    Tensors are named and stored as llama.cpp's converter writes Gemma 3 (RMSNorm weights + 1).
    """
    import gguf
    import torch
    from transformers import Gemma3ForCausalLM

    torch.manual_seed(seed)
    config = tiny_gemma_config(n_layers=n_layers, hidden_size=hidden_size)
    model = Gemma3ForCausalLM(config).eval()
    with torch.no_grad():  # random norm weights, so that the +1/-1 round trip is tested
        for name, param in model.named_parameters():
            if "norm" in name:
                param.normal_(0.0, 0.1)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight"}
    per_layer = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
                 "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm",
                 "self_attn.k_norm": "attn_k_norm", "input_layernorm": "attn_norm",
                 "post_attention_layernorm": "post_attention_norm", "pre_feedforward_layernorm": "ffn_norm",
                 "post_feedforward_layernorm": "post_ffw_norm", "mlp.gate_proj": "ffn_gate",
                 "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    for i in range(n_layers):
        for hf, gg in per_layer.items():
            names[f"model.layers.{i}.{hf}.weight"] = f"blk.{i}.{gg}.weight"
    path = Path(path)
    writer = gguf.GGUFWriter(str(path), "gemma3")
    writer.add_name("tiny gemma")
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(hidden_size)
    writer.add_block_count(n_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_key_length(config.head_dim)
    writer.add_value_length(config.head_dim)
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_rope_freq_base(config.rope_parameters["full_attention"]["rope_theta"]
                              if hasattr(config, "rope_parameters") else config.rope_theta)
    writer.add_sliding_window(config.sliding_window)
    tokens = GEMMA_SPECIAL + GEMMA_PIECES
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * len(tokens))
    writer.add_token_types([3] * len(GEMMA_SPECIAL) + [1] * len(GEMMA_PIECES))
    writer.add_pad_token_id(0)
    writer.add_eos_token_id(1)
    writer.add_bos_token_id(2)
    writer.add_unk_token_id(3)
    writer.add_add_bos_token(True)
    for hf, gg in names.items():
        tensor = state[hf].float().numpy()
        writer.add_tensor(gg, tensor + 1.0 if "norm" in hf else tensor)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path, state


@contextlib.contextmanager
def width_rounding(model_class):
    """Within the block, ``model_class``'s hidden states move with the padded width of their batch (1e-6 per
    position), as a real model's float32 results do; a tiny model's do not, so tests of what is copied between
    batches could not fail without it."""
    forward = model_class.forward

    def shifted(self, *args, **kwargs):
        output = forward(self, *args, **kwargs)
        output.hidden_states = tuple(h + 1e-6 * h.shape[1] for h in output.hidden_states)
        return output

    model_class.forward = shifted
    try:
        yield
    finally:
        model_class.forward = forward


# SentencePiece-style vocabulary of make_tiny_decoder_gguf (llama, gemma2) and a byte-level BPE one (qwen3, gpt2).
_SP_SPECIAL = ["<unk>", "<s>", "</s>"]


def _byte_pieces() -> list[str]:
    """The 256 byte symbols of GPT-2's byte-level BPE (printable bytes as themselves, the rest shifted past 255)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    symbols, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            symbols[byte] = chr(byte)
        else:
            symbols[byte] = chr(256 + extra)
            extra += 1
    return [symbols[b] for b in range(256)]


def make_tiny_decoder_gguf(path: Path, kind: str, *, seed: int = 0, drop: tuple = (), nan_in: str | None = None,
                           metadata: dict | None = None):
    """A randomly initialised causal LM of ``kind`` (llama, qwen3, gemma2, gpt2) as an F32 GGUF file written as
    llama.cpp writes it (its tensor names from the ``gguf`` package's own map, Llama's q/k rows permuted, Gemma's
    norms stored as w + 1, GPT-2's Conv1D weights transposed); return ``(path, model)``.

    The head size (8) is not width / heads (32 / 4) for qwen3 and gemma2 (Gemma 2's attention scale 1/sqrt(8)),
    and GPT-2's context is 64 (not transformers' 1024). ``drop``: GGUF tensor names left out; ``nan_in``: a
    tensor given a NaN; ``metadata``: GGUF keys replaced (``None`` removes one; a ``gguf.GGUFValue`` is written with
    its own type) after the writer's own.
    """
    import gguf
    import numpy as np
    import torch
    import transformers as T

    torch.manual_seed(seed)
    width, layers, heads = 32, 2, 4
    sp = kind in ("llama", "gemma2")
    tokens = _SP_SPECIAL + GEMMA_PIECES if sp else _byte_pieces() + ["Ġt", "Ġth", "Ġthe", "<|endoftext|>"]
    common = {"vocab_size": len(tokens), "hidden_size": width, "intermediate_size": 2 * width, "num_hidden_layers": layers,
                  "num_attention_heads": heads, "num_key_value_heads": 2, "max_position_embeddings": 64}
    if kind == "llama":
        config = T.LlamaConfig(**common, rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)
        model = T.LlamaForCausalLM(config)
    elif kind == "qwen3":
        config = T.Qwen3Config(**common, head_dim=8, rms_norm_eps=1e-6, tie_word_embeddings=False,
                               bos_token_id=len(tokens) - 1, eos_token_id=len(tokens) - 1)
        model = T.Qwen3ForCausalLM(config)
    elif kind == "gemma2":
        config = T.Gemma2Config(**common, head_dim=8, query_pre_attn_scalar=8, rms_norm_eps=1e-6, sliding_window=8,
                                bos_token_id=1, eos_token_id=2, pad_token_id=0)
        model = T.Gemma2ForCausalLM(config)
    else:
        config = T.GPT2Config(vocab_size=len(tokens), n_embd=width, n_layer=layers, n_head=heads, n_positions=64,
                              bos_token_id=len(tokens) - 1, eos_token_id=len(tokens) - 1)
        model = T.GPT2LMHeadModel(config)
    model.eval()
    with torch.no_grad():  # norms and biases away from their initial 1 and 0, so that their handling is tested
        for name, param in model.named_parameters():
            if "norm" in name or "ln_" in name or name.endswith(".bias"):
                param.add_(torch.randn_like(param) * 0.1)
    writer = gguf.GGUFWriter(str(path), kind)
    writer.add_name(f"tiny {kind}")
    writer.add_context_length(64)
    writer.add_embedding_length(width)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(2 * width if kind != "gpt2" else 4 * width)
    writer.add_head_count(heads)
    if kind == "gpt2":
        writer.add_layer_norm_eps(config.layer_norm_epsilon)
    else:
        writer.add_head_count_kv(2)
        writer.add_layer_norm_rms_eps(config.rms_norm_eps)
        writer.add_rope_freq_base(10000.0)
    if kind in ("qwen3", "gemma2"):
        writer.add_key_length(8)
        writer.add_value_length(8)
    if kind == "gemma2":
        writer.add_sliding_window(8)
        writer.add_attn_logit_softcapping(config.attn_logit_softcapping)
        writer.add_final_logit_softcapping(config.final_logit_softcapping)
    if sp:
        writer.add_tokenizer_model("llama")
        writer.add_token_list(tokens)
        writer.add_token_scores([0.0] * 3 + [-float(i) for i in range(len(GEMMA_PIECES))])
        writer.add_token_types([2, 3, 3] + [1] * len(GEMMA_PIECES))
        writer.add_bos_token_id(1)
        writer.add_eos_token_id(2)
        writer.add_unk_token_id(0)
        if kind == "gemma2":
            writer.add_pad_token_id(0)
    else:
        writer.add_tokenizer_model("gpt2")
        writer.add_tokenizer_pre("qwen2" if kind == "qwen3" else "gpt-2")
        writer.add_token_list(tokens)
        writer.add_token_types([1] * (len(tokens) - 1) + [3])
        writer.add_token_merges(["Ġ t", "Ġt h", "Ġth e"])
        writer.add_eos_token_id(len(tokens) - 1)
        writer.add_bos_token_id(len(tokens) - 1)
    for key, value in (metadata or {}).items():
        writer.kv_data[0].pop(key, None)
        if isinstance(value, gguf.GGUFValue):  # a type of its own (the writer makes every int an INT32)
            writer.kv_data[0][key] = value
        elif value is not None:
            kind_of = gguf.GGUFValueType.get_type(value)
            writer.kv_data[0][key] = gguf.GGUFValue(value, kind_of)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH[kind.upper()], layers)
    for hf, tensor in model.state_dict().items():
        if kind == "gpt2" and hf.endswith((".attn.bias", ".attn.masked_bias")) or (
                kind == "gemma2" and hf == "lm_head.weight") or (kind == "gpt2" and hf == "lm_head.weight"):
            continue  # buffers, and heads tied to the embedding (not in the file)
        name = names.get_name(hf, try_suffixes=(".weight", ".bias"))
        array = tensor.detach().float().numpy().copy()
        if kind == "llama" and ("q_proj" in hf or "k_proj" in hf):  # llama.cpp's rotary layout of the q/k rows
            n = heads if "q_proj" in hf else 2
            array = array.reshape(n, 2, array.shape[0] // n // 2, *array.shape[1:]).swapaxes(1, 2).reshape(array.shape)
        if kind == "gemma2" and hf.endswith("norm.weight"):
            array = array + 1.0
        if kind == "gpt2" and hf.endswith(("c_attn.weight", "c_proj.weight", "c_fc.weight")):
            array = array.T.copy()
        if name in drop:
            continue
        if name == nan_in:
            array.reshape(-1)[0] = np.nan
        writer.add_tensor(name, np.ascontiguousarray(array, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return Path(path), model
