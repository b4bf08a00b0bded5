"""Token batches (:mod:`isotropy.models.batching`): the tokenizer's own padding, grouped by token count."""

from __future__ import annotations

import numpy as np
import pytest
from _tiny_models import make_tiny_bert, make_tiny_gpt2
from hypothesis import given, settings
from hypothesis import strategies as st

from isotropy.models.batching import TokenRows, distinct_sequences, pad_rows, token_count_batches, tokenize_texts

# token counts under the tiny BERT vocabulary, [CLS] and [SEP] included: the order by characters is not the
# order by tokens ("unbelievable cats": 17 characters, 5 word pieces; "a a a a a a a": 13 characters, 7 tokens)
TEXTS = ["unbelievable", "a a a a a a a", "the cat", "unbelievable cats", "a", "the dog ran on the mat ."]
COUNTS = [5, 9, 4, 7, 3, 9]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("batching")
    return make_tiny_bert(root / "bert"), make_tiny_gpt2(root / "gpt2")


@pytest.mark.parametrize("which", [0, 1])
def test_padded_rows_are_the_tokenizers_own_padding(models, which):
    from isotropy.models.loading import load_transformer

    tokenizer, _, _ = load_transformer(str(models[which]), device="cpu")  # GPT-2: pad token set to its eos
    texts = TEXTS if which == 0 else ["the cat sat .", "a dog", "the dog ran far away , the dog sat ."]
    tokens = tokenize_texts(tokenizer, texts, max_length=6)
    rows = [2, 0, 1] if which else [3, 4, 1]
    ours = pad_rows(tokens, rows, pad_id=tokenizer.pad_token_id)
    theirs = tokenizer([texts[i] for i in rows], padding=True, truncation=True, max_length=6, return_tensors="pt")
    assert set(ours) == {k for k in theirs if k in ("input_ids", "attention_mask", "token_type_ids")}
    for key, value in ours.items():
        assert value.dtype == theirs[key].dtype
        assert value.tolist() == theirs[key].tolist(), key


def test_token_counts_and_batches(models):
    from isotropy.models.loading import load_transformer

    tokenizer, _, _ = load_transformer(str(models[0]), device="cpu")
    tokens = tokenize_texts(tokenizer, TEXTS, max_length=64)
    assert tokens.lengths.tolist() == COUNTS
    batches = token_count_batches(COUNTS, 2)
    assert [b.tolist() for b in batches] == [[4, 2], [0, 3], [1, 5]]  # 3 4 | 5 7 | 9 9 (stable among equals)
    # positions run: 2·4 + 2·7 + 2·9 = 40, against 2·4 + 2·9 + 2·9 = 44 with the texts sorted by characters
    assert sum(len(b) * max(COUNTS[i] for i in b) for b in batches) == 40
    by_chars = np.argsort([len(t) for t in TEXTS], kind="stable")
    assert sum(2 * max(COUNTS[i] for i in by_chars[s:s + 2]) for s in range(0, 6, 2)) == 44


def test_distinct_sequences_compare_every_key():
    tokens = TokenRows.from_lists({"input_ids": [[1, 5], [1, 5], [1, 6], [1, 5], [1, 5]],
                                   "token_type_ids": [[0, 0], [0, 0], [0, 0], [0, 1], [0, 1]]})
    distinct, source = distinct_sequences(tokens)
    assert distinct.tolist() == [0, 2, 3]  # row 3 has other token types than row 0
    assert source.tolist() == [0, 0, 2, 3, 3]


def test_no_attention_mask_given_gets_one():
    tokens = TokenRows.from_lists({"input_ids": [[5, 6, 7], [8]]})
    out = pad_rows(tokens, [1, 0], pad_id=None)
    assert out["input_ids"].tolist() == [[8, 0, 0], [5, 6, 7]]
    assert out["attention_mask"].tolist() == [[1, 0, 0], [1, 1, 1]]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 50), min_size=1, max_size=40), st.integers(1, 9))
def test_batches_cover_every_row_once_in_token_order(lengths, batch_size):
    batches = token_count_batches(lengths, batch_size)
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(len(lengths)))
    assert all(1 <= len(b) <= batch_size for b in batches) and all(len(b) == batch_size for b in batches[:-1])
    assert np.all(np.diff(np.asarray(lengths)[flat]) >= 0)


def test_encode_pooled_runs_the_batches_by_token_count_with_the_values_of_one_text_at_a_time(models, monkeypatch):
    from transformers import BertModel

    from isotropy.models.encoders import encode_pooled

    seen = []
    forward = BertModel.forward

    def spy(self, *args, **kwargs):
        seen.append(tuple(kwargs["input_ids"].shape))
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(BertModel, "forward", spy)
    batched = encode_pooled(TEXTS, model=str(models[0]), layers=[1, 2], device="cpu", batch_size=2, use_cache=False)
    assert seen == [(2, 4), (2, 7), (2, 9)]  # the batches of test_token_counts_and_batches
    seen.clear()
    one = encode_pooled(TEXTS, model=str(models[0]), layers=[1, 2], device="cpu", batch_size=1, use_cache=False)
    assert sorted(seen) == sorted((1, c) for c in COUNTS)  # no padding at all
    for layer in (1, 2):
        assert batched[layer].dtype == np.float32
        np.testing.assert_allclose(batched[layer], one[layer], rtol=1e-5, atol=1e-6)


def test_texts_with_the_same_tokens_run_once_and_get_the_same_vectors(models, monkeypatch):
    from transformers import BertModel

    from isotropy.models.encoders import encode_pooled

    rows_run = []
    forward = BertModel.forward

    def spy(self, *args, **kwargs):
        rows_run.append(kwargs["input_ids"].shape[0])
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(BertModel, "forward", spy)
    # the tiny BERT tokenizer lower-cases: "The cat" and "the cat" are the same tokens; the long text is cut
    texts = ["the cat", "a dog ran", "The cat", "the cat", "a dog ran on the mat .", "a dog ran on the mat . a"]
    out = encode_pooled(texts, model=str(models[0]), layers=[2], device="cpu", batch_size=2, use_cache=False,
                        max_length=9)
    assert sum(rows_run) == 3  # "the cat", "a dog ran", and the two texts cut to the same 9 tokens
    X = out[2]
    for a, b in ((0, 2), (0, 3), (4, 5)):
        assert np.array_equal(X[a], X[b])
    assert not np.array_equal(X[0], X[1])
    alone = encode_pooled(texts, model=str(models[0]), layers=[2], device="cpu", batch_size=1, use_cache=False,
                          max_length=9)[2]
    np.testing.assert_allclose(X, alone, rtol=1e-5, atol=1e-6)


def test_a_cache_file_of_the_batching_before_is_not_read_back(models, tmp_path):
    """Files cached before texts with the same tokens ran once (their repeated rows differ by float32 rounding)
    are not read back: the cache key names the batching. The old key below is the one of 561ca82."""
    import hashlib

    from isotropy.models.encoders import _cache_key, encode_pooled, resolve_model

    texts = ["the cat", "a dog ran", "the cat"]
    location = resolve_model(str(models[0]))
    base = _cache_key(location, texts, False)
    old = hashlib.sha256(f"{base}|mean-pooled|layer=2|max_length=128".encode()).hexdigest()[:32]
    stale = np.full((3, 16), 7.0, dtype=np.float32)
    np.save(tmp_path / f"{old}.npy", stale)
    X = encode_pooled(texts, model=str(models[0]), layers=[2], device="cpu", cache_dir=tmp_path)[2]
    assert not np.array_equal(X, stale) and np.array_equal(X[0], X[2])
    again = encode_pooled(texts, model=str(models[0]), layers=[2], device="cpu", cache_dir=tmp_path)[2]
    assert np.array_equal(again, X)  # the new file is read back


def test_tokenised_a_chunk_at_a_time_as_in_one_call(models, monkeypatch):
    from isotropy.models import batching
    from isotropy.models.loading import load_transformer

    tokenizer, _, _ = load_transformer(str(models[0]), device="cpu")
    whole = tokenizer(TEXTS, truncation=True, max_length=8)
    monkeypatch.setattr(batching, "_TOKENIZE_CHUNK", 4)  # 6 texts: chunks of 4 and 2
    tokens = tokenize_texts(tokenizer, TEXTS, max_length=8)
    assert set(tokens.values) == {"input_ids", "attention_mask", "token_type_ids"}
    for key, values in tokens.values.items():
        assert values.dtype == np.int64
        assert [tokens.row(key, i).tolist() for i in range(len(TEXTS))] == whole[key]


def test_a_text_without_tokens_is_a_clear_error(models):
    from isotropy.models.encoders import encode_pooled

    # GPT-2's tokenizer adds no start token: "" is no token at all (the model would fail on an empty batch)
    with pytest.raises(ValueError, match=r"The 'texts' parameter of encode_pooled must have texts with at least one "
                                         r"token .* Got 1 without any \(the first: '', at index 1\)"):
        encode_pooled(["the cat", "", "a dog"], model=str(models[1]), layers=[1], device="cpu", use_cache=False)
    # BERT's adds [CLS] and [SEP]: "" has two tokens and a vector
    X = encode_pooled(["the cat", ""], model=str(models[0]), layers=[1], device="cpu", use_cache=False)[1]
    assert np.isfinite(X).all()


def test_a_key_with_other_lengths_than_the_ids_is_an_error():
    with pytest.raises(ValueError, match=r"'token_type_ids' must have one value per token .* Got 3 values for 2 tokens "
                                         r"in row 0"):
        TokenRows.from_lists({"input_ids": [[1, 2], [3, 4, 5]], "token_type_ids": [[7, 7, 7], [8, 8, 8, 8]]})

    class Ragged:  # a tokenizer whose token types are one longer than its ids
        def __call__(self, texts, **kwargs):
            ids = [[1] * (len(t) + 1) for t in texts]
            return {"input_ids": ids, "token_type_ids": [[0] * (len(v) + 1) for v in ids]}

    with pytest.raises(ValueError, match="one value per token"):
        tokenize_texts(Ragged(), ["ab", "c"], max_length=8)


def test_ids_beyond_int32_are_kept():
    tokens = TokenRows.from_lists({"input_ids": [[2**31 + 5, 1]]})
    assert pad_rows(tokens, [0], pad_id=0)["input_ids"].tolist() == [[2**31 + 5, 1]]


def test_a_probe_text_without_tokens_is_a_clear_error(models):
    from isotropy.models.loading import load_transformer
    from isotropy.training import GeometryProbe
    from isotropy.training.probe import IsotropyValueError

    tokenizer, network, _ = load_transformer(str(models[1]), device="cpu")
    with pytest.raises(IsotropyValueError, match=r"The 'probe' parameter of GeometryProbe must have texts that are "
                                                 r"not blank.* \(the first: '', at index 1\)"):
        GeometryProbe(["the cat sat .", "", "a dog"], metrics=("isoscore",))  # refused when built
    probe = GeometryProbe(["the cat sat .", "a dog", "a bird"], metrics=("isoscore",)).set_tokenizer(tokenizer)
    assert probe.measure(network)


def test_a_shrinkage_text_without_tokens_names_the_shrinkage_sample(models):
    from isotropy.measure.from_model import measure_layers

    with pytest.raises(ValueError, match=r"The 'shrinkage_sample' parameter of measure_layers must have texts with "
                                         r"at least one token"):
        measure_layers(["the cat sat .", "a dog ran .", "the dog sat ."], model=str(models[1]), device="cpu",
                       shrinkage_sample=["the cat", "", "a dog"], metrics=["isoscore_star"])


def test_encode_sentences_encodes_each_distinct_text_once(tmp_path, monkeypatch):
    """A repeated text gets exactly its first occurrence's vector; a file cached before (under the key of
    561ca82, which holds no tag) is not read back."""
    pytest.importorskip("sentence_transformers")
    from sentence_transformers import SentenceTransformer

    from isotropy.models.encoders import _cache_key, encode_sentences, load_sentence_model, resolve_model

    texts = ["a girl is styling her hair .", "hi", "a girl is styling her hair .", "a man plays a guitar .", "hi"]
    old = _cache_key(resolve_model("all-MiniLM-L6-v2"), texts, False)
    np.save(tmp_path / f"{old}.npy", np.zeros((5, 384), dtype=np.float32))
    seen = []
    real = SentenceTransformer.encode
    monkeypatch.setattr(SentenceTransformer, "encode", lambda self, sentences, **k: seen.append(list(sentences))
                        or real(self, sentences, **k))
    X = encode_sentences(texts, device="cpu", cache_dir=tmp_path, show_progress=False)
    assert seen == [["a girl is styling her hair .", "hi", "a man plays a guitar ."]]
    assert np.array_equal(X[0], X[2]) and np.array_equal(X[1], X[4]) and np.abs(X).max() > 0
    model = load_sentence_model("all-MiniLM-L6-v2", device="cpu")
    alone = np.vstack([real(model, [t], convert_to_numpy=True) for t in texts])
    np.testing.assert_allclose(X, alone, rtol=1e-5, atol=1e-6)
    seen.clear()
    np.testing.assert_array_equal(encode_sentences(texts, device="cpu", cache_dir=tmp_path, show_progress=False), X)
    assert seen == []  # the second call read the new file


def test_copy_same_prefix_rows_copies_a_decoder_s_rows_with_right_padding_only():
    from types import SimpleNamespace

    from isotropy.models.batching import copy_same_prefix_rows

    decoder = SimpleNamespace(config=SimpleNamespace(model_type="gpt2", architectures=["GPT2LMHeadModel"]))
    encoder = SimpleNamespace(config=SimpleNamespace(model_type="bert", architectures=["BertModel"]))
    right, left = SimpleNamespace(padding_side="right"), SimpleNamespace(padding_side="left")
    prefixes = [(2, 5), (2, 5, 7), (2, 5), (3,), (2, 5, 7), (2, 5)]
    rng = np.random.default_rng(0)
    states = {0: rng.normal(size=(6, 4)).astype(np.float32), 3: rng.normal(size=(6, 4)).astype(np.float32)}
    before = {k: v.copy() for k, v in states.items()}
    for network, tokenizer in ((encoder, right), (decoder, left)):
        assert copy_same_prefix_rows(states, prefixes, network=network, tokenizer=tokenizer) == 0
        assert all(np.array_equal(states[k], before[k]) for k in states)
    assert copy_same_prefix_rows(states, prefixes, network=decoder, tokenizer=right) == 3
    for k, X in states.items():
        np.testing.assert_array_equal(X, before[k][[0, 1, 0, 3, 1, 0]])  # each row: the first with its prefix


def test_prefixes_name_equal_prefixes_alike_and_only_them():
    from isotropy.models.batching import Prefixes

    trie = Prefixes()
    a, b, c = trie.ids([5, 7, 9]), trie.ids([5, 7, 2]), trie.ids([7])
    assert a[:2] == b[:2] and a[2] != b[2] and c[0] not in (a[0], a[1], a[2], b[2])
    assert trie.ids(np.array([5, 7, 9], dtype=np.int64)) == a  # numpy ids as ints


@pytest.mark.parametrize(("model_type", "architectures", "is_decoder_flag", "copies"), [
    ("gemma3_text", ["Gemma3ForCausalLM"], False, True),  # a known decoder type
    ("newlm", ["NewLMForCausalLM"], False, True),  # a causal-LM head by its class name
    ("bert", ["BertLMHeadModel"], True, True),  # the config says it runs causally
    ("xlnet", ["XLNetLMHeadModel"], False, False),  # "LMHead" over bidirectional attention
    ("xlm", ["XLMWithLMHeadModel"], False, False),
    ("flaubert", ["FlaubertWithLMHeadModel"], False, False),
    ("openai-gpt", ["OpenAIGPTLMHeadModel"], False, False),  # only guessed from a name: not copied
    ("bert", ["BertModel"], False, False),
])
def test_prefixes_are_copied_only_for_models_known_to_be_causal(model_type, architectures, is_decoder_flag, copies):
    from types import SimpleNamespace

    from isotropy.models.batching import copies_prefixes
    from isotropy.models.loading import is_decoder

    config = SimpleNamespace(model_type=model_type, architectures=architectures, is_decoder=is_decoder_flag)
    network = SimpleNamespace(config=config)
    assert copies_prefixes(network, SimpleNamespace(padding_side="right")) is copies
    assert copies_prefixes(network, SimpleNamespace(padding_side="left")) is False
    if model_type in ("xlnet", "xlm", "flaubert"):
        assert not is_decoder(config)  # nor is "first" pooling refused for them


def test_a_gemma_with_bidirectional_attention_is_measured_as_an_encoder(tmp_path):
    """A model trial: Gemma 3 configured with use_bidirectional_attention (EmbeddingGemma's layout) was taken for a
    causal decoder by its model type: at token level the states of tokens whose earlier tokens matched another
    text's were copied from it (off by 1.16), and --pooling first was refused as for a decoder. It is an encoder:
    every text's token states are the model's own, and 'first' pooling is taken."""
    import torch
    from _tiny_models import BERT_VOCAB
    from click.testing import CliRunner
    from transformers import BertTokenizerFast, Gemma3TextConfig, Gemma3TextModel

    from isotropy.cli import cli
    from isotropy.measure.from_model import token_hidden_states
    from isotropy.models.loading import is_decoder, load_transformer

    directory = tmp_path / "gemma-bidirectional"
    directory.mkdir()
    (directory / "vocab.txt").write_text("\n".join(BERT_VOCAB) + "\n")
    BertTokenizerFast(str(directory / "vocab.txt")).save_pretrained(directory)
    config = Gemma3TextConfig(vocab_size=len(BERT_VOCAB), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                              num_attention_heads=2, num_key_value_heads=1, head_dim=8, max_position_embeddings=64,
                              sliding_window=8, use_bidirectional_attention=True, pad_token_id=0)
    torch.manual_seed(0)
    Gemma3TextModel(config).eval().save_pretrained(directory)

    tokenizer, network, _ = load_transformer(str(directory), device="cpu")
    assert not is_decoder(network.config)
    texts = ["the cat sat on the mat .", "the cat ran"]  # "[CLS] the cat" opens both
    states, owner, *_ = token_hidden_states(texts, tokenizer, network, [2], batch_size=4, max_length=64,
                                            keep_special=True, sample_size=None, rng=0)
    owner = np.asarray(owner)
    for i, text in enumerate(texts):
        with torch.no_grad():
            own = network(**tokenizer(text, return_tensors="pt"), output_hidden_states=True).hidden_states[2][0]
        np.testing.assert_allclose(states[2][owner == i], own.numpy(), rtol=1e-5, atol=1e-6)
    (tmp_path / "texts.txt").write_text("\n".join(texts) + "\n")
    result = CliRunner().invoke(cli, ["measure", "--model", str(directory), "--texts", str(tmp_path / "texts.txt"),
                                      "--pooling", "first", "--metrics", "isoscore"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("which", ["bert", "gpt2"])
def test_texts_longer_than_the_model_s_positions_are_cut_to_them(models, which, tmp_path):
    """A model trial: with max_length (default 128) above a model's table of positions (64 here), a long text
    crashed the forward pass with a traceback ("The size of tensor a (31) must match the size of tensor b (16)",
    GPT-2's "index out of range in self"), at both levels. Texts are now cut to the model's positions, and their
    vectors are those of the model run on the cut text."""
    import torch
    from click.testing import CliRunner

    from isotropy.cli import cli
    from isotropy.models.encoders import encode_pooled
    from isotropy.models.loading import load_transformer, longest_input

    directory = str(models[0] if which == "bert" else models[1])
    tokenizer, network, _ = load_transformer(directory, device="cpu")
    longest = longest_input(network.config, tokenizer)
    assert longest == 64
    text = " ".join(["the cat sat on the mat ."] * 15)
    assert len(tokenizer(text)["input_ids"]) > 64
    pooled = encode_pooled([text], model=directory, layers=[-1], pooling="mean", device="cpu", use_cache=False,
                           max_length=128)[-1]
    ids = tokenizer(text, truncation=True, max_length=64, return_tensors="pt")
    with torch.no_grad():
        own = network(**ids).last_hidden_state[0].mean(0).numpy()
    np.testing.assert_allclose(pooled[0], own, rtol=1e-5, atol=1e-6)
    (tmp_path / "texts.txt").write_text(text + "\nthe dog ran\n")
    for level in ("sentence", "token"):
        result = CliRunner().invoke(cli, ["measure", "--model", directory, "--texts", str(tmp_path / "texts.txt"),
                                          "--level", level, "--metrics", "isoscore"])
        assert result.exit_code == 0, result.output


def test_longest_input_reads_the_position_table_and_the_tokenizer():
    """RoBERTa's positions start after its padding index (514 rows hold 512 tokens); the tokenizer's own
    model_max_length bounds it too when set; relative positions (T5) set no bound."""
    from types import SimpleNamespace

    from transformers import BertConfig, MPNetConfig, RobertaConfig, T5Config

    from isotropy.models.loading import capped_max_length, longest_input

    assert longest_input(RobertaConfig(max_position_embeddings=514, pad_token_id=1)) == 512
    assert longest_input(MPNetConfig(max_position_embeddings=514, pad_token_id=1)) == 512  # all-mpnet-base-v2
    assert longest_input(BertConfig(max_position_embeddings=512), SimpleNamespace(model_max_length=256)) == 256
    assert longest_input(BertConfig(max_position_embeddings=512), SimpleNamespace(model_max_length=int(1e30))) == 512
    assert longest_input(T5Config()) is None and capped_max_length(4096, T5Config()) == 4096
    assert capped_max_length(1024, BertConfig(max_position_embeddings=512)) == 512


def test_vectors_cached_before_the_tokenisation_fixes_are_not_read_back(models, tmp_path):
    """A review: 7ee04b9 changed how byte-level BPE models tokenise whole texts (no leading space) and 87ea6f3 cut
    them to the tokenizer's model_max_length, but encode_pooled's cache key named neither, so a file written before
    (vectors of other tokens) was read back as today's. The key names the tokenisation now."""
    import hashlib

    from isotropy.models import encoders

    directory = str(models[1])
    texts = ["the cat sat", "a dog ran"]
    kwargs = {"model": directory, "layers": [-1], "pooling": "mean", "device": "cpu", "batch_size": 64,
              "max_length": 128, "cache_dir": tmp_path}
    location = encoders.resolve_model(directory)
    base = encoders._cache_key(location, texts, False)
    old = (f"{base}|mean-pooled|layer=-1|max_length=128|{encoders._BATCHING}|"
           f"{encoders._computed_by(64, 'cpu')}")
    stale = np.full((2, 16), 7.0, dtype=np.float32)
    np.save(tmp_path / f"{hashlib.sha256(old.encode()).hexdigest()[:32]}.npy", stale)
    got = encoders.encode_pooled(texts, use_cache=True, **kwargs)[-1]
    fresh = encoders.encode_pooled(texts, use_cache=False, **kwargs)[-1]
    assert not np.array_equal(got, stale)
    np.testing.assert_array_equal(got, fresh)


def test_encode_pooled_refuses_a_max_length_of_only_the_special_tokens(models, tmp_path):
    """max_length=2 on a BERT kept [CLS] [SEP] only: every text pooled to the same vector. Refused, naming the least
    value (the tokenizer's special tokens plus one); GPT-2 adds none, so 2 keeps two tokens of each text."""
    from transformers import AutoTokenizer

    from isotropy import IsotropyValueError
    from isotropy.models.encoders import encode_pooled

    bert, gpt2 = (str(m) for m in models)
    added = AutoTokenizer.from_pretrained(bert).num_special_tokens_to_add(pair=False)
    with pytest.raises(IsotropyValueError, match=rf"^The 'max_length' parameter of encode_pooled must be at least "
                                                 rf"{added + 1} for .*Got {added} instead\.$"):
        encode_pooled(TEXTS, model=bert, device="cpu", max_length=added, use_cache=False)
    rows = encode_pooled(TEXTS, model=bert, device="cpu", max_length=added + 1, use_cache=False)[-1]
    assert len(np.unique(rows, axis=0)) > 1  # "unbelievable", "a", "the": first tokens differ
    assert AutoTokenizer.from_pretrained(gpt2).num_special_tokens_to_add(pair=False) == 0
    rows = encode_pooled(TEXTS, model=gpt2, device="cpu", max_length=2, use_cache=False)[-1]
    assert rows.shape[0] == len(TEXTS) and len(np.unique(rows, axis=0)) > 1
