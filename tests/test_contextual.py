"""Token-level extraction (isotropy.models.contextual) on tiny random BERT and GPT-2 models and the packaged MiniLM."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from _tiny_models import make_tiny_bert, make_tiny_gpt2, width_rounding
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

import itertools

from isotropy.models import select_layers
from isotropy.models.contextual import extract_token_embeddings, load_transformer, parse_layers
from isotropy.models.loading import words_tokenizer

LINES = [["the", "unbelievable", "cat", "sat", "on", "the", "mat"], ["a", "dog", "ran"],
         ["the", "cats", "sat"], ["the", "dog", "sat", "on", "a", "mat", "."]]


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    return str(make_tiny_bert(tmp_path_factory.mktemp("bert")))


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory):
    return str(make_tiny_gpt2(tmp_path_factory.mktemp("gpt2")))


def _extract(model, lines=LINES, **kw):
    kw.setdefault("show_progress", False)
    kw.setdefault("device", "cpu")
    return extract_token_embeddings(lines, model=model, **kw)


def _manual_hidden(model_dir, words):
    """Hidden states of one pre-split line run alone, and its word_ids (the reference)."""
    tokenizer, network, _ = load_transformer(model_dir, device="cpu")
    enc = words_tokenizer(tokenizer)([words], is_split_into_words=True, return_tensors="pt")
    with torch.no_grad():
        hidden = network(**enc, output_hidden_states=True).hidden_states
    return [h[0].numpy() for h in hidden], enc.word_ids(0), tokenizer.convert_ids_to_tokens(enc["input_ids"][0])


@pytest.mark.parametrize("pooling", ["first", "mean"])
def test_bert_word_to_piece_mapping(tiny_bert, pooling):
    words = ["the", "unbelievable", "cat"]
    hidden, _, tokens = _manual_hidden(tiny_bert, words)
    # hand-made vocabulary: the expected pieces are known
    assert tokens == ["[CLS]", "the", "un", "##believ", "##able", "cat", "[SEP]"]
    emb = _extract(tiny_bert, [words], pooling=pooling)
    assert emb.layers == [0, 1, 2] and emb.n_layers == 2
    assert emb.n_pieces.tolist() == [1, 3, 1]
    assert emb.words == words
    pieces = {0: [1], 1: [2, 3, 4], 2: [5]}
    for layer in emb.layers:
        for w, positions in pieces.items():
            expected = hidden[layer][positions[0]] if pooling == "first" else hidden[layer][positions].mean(axis=0)
            np.testing.assert_allclose(emb.hidden_states[layer][w], expected, rtol=1e-5, atol=1e-6)


def test_gpt2_prefix_space_and_first_piece(tiny_gpt2):
    tokenizer, _, _ = load_transformer(tiny_gpt2, device="cpu")
    tokenizer = words_tokenizer(tokenizer)
    words = ["the", "cats", "sat"]
    # pre-split words get the same pieces as running text with a leading space ("Ġcat", "s")
    split_ids = tokenizer([words], is_split_into_words=True)["input_ids"][0]
    text_ids = tokenizer(" the cats sat")["input_ids"]
    assert split_ids == text_ids
    hidden, word_ids, tokens = _manual_hidden(tiny_gpt2, words)
    assert tokens[0] == "Ġthe" and word_ids[:1] == [0]
    first = [word_ids.index(w) for w in range(3)]
    emb = _extract(tiny_gpt2, [words])
    assert emb.n_pieces.tolist() == [word_ids.count(w) for w in range(3)]
    for layer in emb.layers:
        np.testing.assert_allclose(emb.hidden_states[layer], hidden[layer][first], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("which", ["tiny_bert", "tiny_gpt2"])
def test_padding_and_batching_do_not_change_embeddings(which, request):
    model = request.getfixturevalue(which)
    alone = _extract(model, batch_size=1)
    batched = _extract(model, batch_size=4)
    assert alone.n_tokens == batched.n_tokens == sum(map(len, LINES))
    np.testing.assert_array_equal(alone.positions, batched.positions)
    for layer in alone.layers:
        np.testing.assert_allclose(alone.hidden_states[layer], batched.hidden_states[layer], rtol=1e-4, atol=1e-5)


def test_decoder_is_causal_encoder_is_not(tiny_gpt2, tiny_bert):
    lines = [["the", "cat", "sat"], ["the", "dog", "ran", "far"]]
    gpt = _extract(tiny_gpt2, lines)
    bert = _extract(tiny_bert, lines)
    first_the = [0, 3]  # rows of the two sentence-initial "the"
    for layer in gpt.layers:
        np.testing.assert_allclose(*gpt.hidden_states[layer][first_the], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(*bert.hidden_states[0][first_the], rtol=1e-5, atol=1e-6)  # embedding output
    assert not np.allclose(*bert.hidden_states[2][first_the], atol=1e-3)


def test_long_lines_are_cut_into_windows_of_whole_words(tiny_bert):
    line = LINES[0]  # pieces 1,3,1,1,1,1,1; max_length 6 leaves 4 pieces beside [CLS] and [SEP]
    emb = _extract(tiny_bert, [line], max_length=6)
    assert emb.stats["n_windows"] == 3  # [the unbelievable] [cat sat on the] [mat]
    middle = _extract(tiny_bert, [line[2:6]])
    for layer in emb.layers:
        np.testing.assert_allclose(emb.hidden_states[layer][2:6], middle.hidden_states[layer], rtol=1e-5, atol=1e-6)


def test_caps_frequencies_and_skipped_types(tiny_bert):
    counts = Counter(w for line in LINES for w in line)
    emb = _extract(tiny_bert, max_per_type=2, skip_types=["."])
    kept = Counter(emb.words)
    assert kept == Counter({w: min(c, 2) for w, c in counts.items() if w != "."})
    assert dict(zip(emb.types, emb.type_frequency.tolist())) == {w: counts[w] for w in emb.types}
    assert emb.token_frequency.tolist() == [counts[w] for w in emb.words]
    capped = _extract(tiny_bert, max_tokens=4)
    assert capped.words == LINES[0][:4] and capped.stats["n_lines_used"] == 1
    assert capped.positions.tolist() == [[0, 0], [0, 1], [0, 2], [0, 3]]
    shuffled = _extract(tiny_bert, max_tokens=5, shuffle=True, random_state=1)
    assert shuffled.n_tokens == 5


def test_special_norms_of_every_window(tiny_bert, tiny_gpt2):
    from isotropy.models.contextual import TokenEmbeddings

    emb = _extract(tiny_bert, batch_size=3, layers="0,2")  # padded batches: padding is no special token
    assert sorted(emb.special_norms) == [0, 2]
    for layer in emb.layers:
        expected = []
        for line in LINES:  # one window per line, run alone: its [CLS] and [SEP]
            hidden, word_ids, tokens = _manual_hidden(tiny_bert, line)
            expected += [(tokens[t], float(np.linalg.norm(hidden[layer][t]))) for t, w in enumerate(word_ids) if w is None]
        got = emb.special_norms[layer]
        assert len(got) == 2 * len(LINES) and {t for t, _ in got} == {"[CLS]", "[SEP]"}
        assert all(isinstance(t, str) and isinstance(n, float) for t, n in got)
        for token in ("[CLS]", "[SEP]"):  # the windows run in the order of their lengths
            np.testing.assert_allclose(sorted(n for t, n in got if t == token),
                                       sorted(n for t, n in expected if t == token), rtol=1e-5)
    windows = _extract(tiny_bert, [LINES[0]], max_length=6)  # three windows, each with its [CLS] and [SEP]
    assert [t for t, _ in windows.special_norms[2]] == ["[CLS]", "[SEP]"] * 3
    assert _extract(tiny_gpt2).special_norms == {0: [], 1: [], 2: []}  # GPT-2 adds no special token
    bare = TokenEmbeddings(hidden_states={}, type_ids=np.array([]), types=[], type_frequency=np.array([]),
                           positions=np.zeros((0, 2)), n_pieces=np.array([]), model="m", pooling="first", n_layers=0)
    assert bare.special_norms == {}  # the field has a default: existing constructors still work


def test_layers_subset_and_float16(tiny_gpt2):
    full = _extract(tiny_gpt2)
    sub = _extract(tiny_gpt2, layers="2,0", dtype="float16")
    assert sub.layers == [0, 2] and sub.hidden_states[2].dtype == np.float16
    assert sub.hidden_states[2].shape == (sum(map(len, LINES)), 16)
    np.testing.assert_allclose(sub.hidden_states[2], full.hidden_states[2], rtol=1e-2, atol=1e-2)


def test_packaged_minilm_matches_sentence_transformers():
    from sentence_transformers import SentenceTransformer

    from isotropy.models.encoders import resolve_model

    words = ["the", "cat", "sat", "on", "the", "mat"]  # one WordPiece each
    emb = _extract("all-MiniLM-L6-v2", [words], layers="all")
    assert emb.layers == list(range(7)) and emb.hidden_states[6].shape == (6, 384)
    st = SentenceTransformer(resolve_model("all-MiniLM-L6-v2"), device="cpu")
    tokens = st.encode(" ".join(words), output_value="token_embeddings", convert_to_numpy=True)
    np.testing.assert_allclose(emb.hidden_states[6], np.asarray(tokens)[1:-1], rtol=1e-4, atol=1e-4)


def test_select_layers_is_the_one_layer_selector():
    assert select_layers("all", 3) == [0, 1, 2] and select_layers("all", 3, include_embeddings=False) == [1, 2]
    assert select_layers([2, 0, 2], 3) == [0, 2] and select_layers("last", 3) == [2] and select_layers("0,-1", 7) == [0, 6]
    with pytest.raises(ValueError, match=r"in \[-7, 6\] \(0 = embedding output, 6 = last layer\)\. Got '0,7' instead"):
        select_layers("0,7", 7)
    with pytest.raises(ValueError, match="Got 'x' instead"):
        select_layers("x", 7)
    with pytest.warns(DeprecationWarning, match="select_layers"):
        assert parse_layers("all", 2) == [0, 1, 2]  # the old name, for one release


def test_last_among_indices_is_the_last_hidden_state():
    """--layers last,0 was refused ("must be 'all', 'last' or ... indices") while 0,-1 and last alone were taken:
    among indices, 'last' (any case) is -1, and a layer it repeats is what a repeated index is (dropped here; the
    training probe refuses it, tests/test_training_probe.py)."""
    from isotropy.models.layers import check_layers

    assert check_layers("last,0") == (-1, 0) and check_layers(" 0 , LAST ") == (0, -1)
    assert check_layers(["last", 3]) == (-1, 3)
    assert select_layers("last,0", 7) == select_layers("0,-1", 7) == [0, 6]
    assert select_layers("last,6", 7) == select_layers("-1,6", 7) == [6]
    assert select_layers("last", 7) == [6] and check_layers("last") == "last"  # alone, the word as before
    for value in ("all,0", "last,x", "lastly,0"):
        with pytest.raises(ValueError, match=f"must be 'all', 'last' or hidden-state indices .*Got '{value}' instead"):
            check_layers(value)


@pytest.mark.parametrize("n", [0, -2, 2.7, True, "3", None])
def test_select_layers_refuses_a_count_that_is_not_a_positive_int(n):
    """"last" of 0 hidden states was [-1], of -2 [-3]; "all" of 2.7 was [0, 1] and of True [0]."""
    with pytest.raises((TypeError, ValueError), match=r"^The 'n_hidden_states' parameter of select_layers must be an "
                                                      r"int in the range \[1, inf\)\. Got .* instead\.$"):
        select_layers("last" if n != 2.7 else "all", n, caller="encode_pooled")
    assert select_layers("all", np.int64(2)) == [0, 1] and select_layers("last", 1) == [0]


def test_errors(tiny_bert, tmp_path):
    with pytest.raises(ValueError, match=r"'layers'.*in \[-3, 2\].*Got '0,5' instead"):
        _extract(tiny_bert, layers="0,5")
    with pytest.raises(ValueError, match="empty corpus"):
        _extract(tiny_bert, [[], [" "]])
    with pytest.raises(FileNotFoundError, match="does not exist"):
        _extract(str(tmp_path / "no-such-model"))
    (tmp_path / "empty-dir").mkdir()
    with pytest.raises(FileNotFoundError, match="has no config.json"):
        _extract(str(tmp_path / "empty-dir"))
    with pytest.raises(ValueError, match="'pooling' parameter of extract_token_embeddings"):
        _extract(tiny_bert, pooling="max")
    with pytest.raises(ValueError, match="No word token is left"):
        _extract(tiny_bert, [["."]], skip_types=["."])
    for bad in ("yes", 1, None):
        with pytest.raises(ValueError, match=r"'leading_space' parameter of extract_token_embeddings must be 'auto', "
                                             r"True or False\. Got " + repr(bad)):
            _extract(tiny_bert, leading_space=bad)


def test_leading_space_choice(tiny_bert, tiny_gpt2):
    """auto: a space only where the tokenizer needs one; True / False force it, and stats say which was used."""
    lines = [["the", "cats", "sat"], ["a", "dog"]]
    auto = _extract(tiny_bert, lines)
    assert auto.stats["leading_space"] is False  # WordPiece encodes pre-split words as in running text
    forced = _extract(tiny_bert, lines, leading_space=True)
    assert forced.stats["leading_space"] is True
    for layer in auto.layers:  # BERT's basic tokenizer strips the space: the same pieces, the same states
        np.testing.assert_array_equal(forced.hidden_states[layer], auto.hidden_states[layer])
    gpt2_auto = _extract(tiny_gpt2, lines)
    gpt2_plain = _extract(tiny_gpt2, lines, leading_space=False)
    assert gpt2_auto.stats["leading_space"] is False and gpt2_plain.n_pieces.tolist() == gpt2_auto.n_pieces.tolist()


@pytest.mark.parametrize("module", ["isotropy.models.contextual", "isotropy.datasets.corpora",
                                    "isotropy.experiments.layer_geometry.metrics"])
def test_docstring_examples_run(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


@given(pieces=st.lists(st.integers(0, 6), min_size=1, max_size=40), budget=st.integers(1, 10))
@settings(max_examples=200, deadline=None)
def test_windows_cover_every_word_once_within_budget(pieces, budget):
    from isotropy.models.contextual import _windows

    word_ids = [w for w, p in enumerate(pieces) for _ in range(p)] + [None]  # a special token at the end
    windows, counted = _windows(word_ids, len(pieces), budget)
    assert counted.tolist() == pieces
    assert windows[0][0] == 0 and windows[-1][1] == len(pieces)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(windows))  # consecutive, no overlap, no gap
    for start, stop in windows:
        assert stop > start
        size = sum(pieces[start:stop])
        # within budget, unless one word alone is longer; and no window could take the next word
        assert size <= budget or sum(1 for p in pieces[start:stop] if p) == 1
    for (start, stop), (nxt, _) in itertools.pairwise(windows):
        assert sum(pieces[start:stop]) + pieces[nxt] > budget


@pytest.mark.parametrize("pooling", ["first", "mean"])
def test_windows_with_the_same_words_run_once_and_give_equal_rows(tiny_bert, pooling):
    """A repeated line in another batch would give its tokens vectors a few ulps from its first copy's (another
    padded width): near-duplicates the neighbour metrics read as distinct points. It runs once; every row is still
    its own line's state."""
    from transformers import BertModel

    lines = [*LINES, LINES[1], ["x"] * 9, LINES[1]]  # batches of 2: the repeats of line 1 fall in other batches
    run, forward = [], BertModel.forward

    def spy(self, *args, **kwargs):
        run.append(int(kwargs["input_ids"].shape[0]))
        return forward(self, *args, **kwargs)

    BertModel.forward = spy
    try:
        emb = _extract(tiny_bert, lines, batch_size=2, layers="0,2", pooling=pooling)
    finally:
        BertModel.forward = forward
    assert sum(run) == len(lines) - 2  # the two repeats of line 1 did not run
    assert emb.stats["n_windows"] == len(lines) and emb.stats["n_windows_run"] == len(lines) - 2
    rows = {tuple(p): r for r, p in enumerate(emb.positions.tolist())}
    alone = _extract(tiny_bert, [LINES[1]], layers="0,2", pooling=pooling)
    for layer in (0, 2):
        H = emb.hidden_states[layer]
        for wi in range(len(LINES[1])):
            first, *repeats = (rows[(li, wi)] for li in (1, len(LINES), len(LINES) + 2))
            for r in repeats:
                assert np.array_equal(H[first], H[r])
            np.testing.assert_allclose(H[first], alone.hidden_states[layer][wi], rtol=1e-5, atol=1e-6)
    names = [name for name, _ in emb.special_norms[2]]
    assert names.count("[CLS]") == len(lines) and names.count("[SEP]") == len(lines)  # every window's, as before


def test_a_decoder_s_tokens_with_the_same_prefix_get_one_vector(tiny_gpt2, tiny_bert):
    """A causal decoder's token is a function of its prefix: lines that start alike give their first words one
    vector (copied from the first such row), whatever batches the lines fell in; an encoder's are left alone."""
    from transformers import GPT2Model

    lines = [["the", "cat", "sat"], ["x"] * 9, ["the", "cat", "ran", "far"], ["the", "dog"], ["a", "b", "c", "d", "e"]]
    with width_rounding(GPT2Model):
        gpt = _extract(tiny_gpt2, lines, batch_size=2, layers="0,2")
    rows = {tuple(p): r for r, p in enumerate(gpt.positions.tolist())}
    same = [(rows[(0, 0)], rows[(2, 0)]), (rows[(0, 0)], rows[(3, 0)]), (rows[(0, 1)], rows[(2, 1)])]
    for layer in gpt.layers:
        for a, b in same:
            assert np.array_equal(gpt.hidden_states[layer][a], gpt.hidden_states[layer][b])
        assert not np.array_equal(gpt.hidden_states[2][rows[(0, 2)]], gpt.hidden_states[2][rows[(2, 2)]])  # sat/ran
    # at least those (the tiny vocabulary also splits "x" and "a" into the same first piece "Ġ" + a letter)
    assert gpt.stats["n_same_prefix"] >= len(same)
    alone = _extract(tiny_gpt2, [lines[0]], layers="0,2")  # the first copy's values: line 0's own (to the shift)
    np.testing.assert_allclose(gpt.hidden_states[2][rows[(2, 1)]], alone.hidden_states[2][1], rtol=1e-5, atol=1e-4)
    assert _extract(tiny_bert, lines, batch_size=2).stats["n_same_prefix"] == 0  # an encoder's tokens see the window


def test_whole_texts_are_tokenised_as_the_model_s_own_tokenizer_does(tiny_gpt2):
    """A model trial: load_transformer reloaded every byte-level BPE tokenizer with add_prefix_space=True (for
    pre-split words) and that tokenizer then encoded whole texts too, each beginning with a space ('Ġthe' for
    'the'): GPT-2's, Qwen's and RoBERTa's sentence vectors (encode_pooled, measure --model) were those of other
    tokens (0.35 to 1.3 relative). Whole texts now get the tokenizer's own pieces and the vectors of the model run
    on them; pre-split words still get running text's pieces (words_tokenizer)."""
    from transformers import AutoModel, AutoTokenizer

    from isotropy.models.encoders import encode_pooled

    tokenizer, _, _ = load_transformer(tiny_gpt2, device="cpu")
    reference = AutoTokenizer.from_pretrained(tiny_gpt2)
    text = "the cat sat on the mat ."
    assert tokenizer(text)["input_ids"] == reference(text)["input_ids"]
    assert tokenizer.convert_ids_to_tokens(tokenizer(text)["input_ids"])[0] == "the"
    words = words_tokenizer(tokenizer)
    assert words is not tokenizer and words.pad_token is not None and words.padding_side == "right"
    first = words(["the", "cat"], is_split_into_words=True, add_special_tokens=False)["input_ids"]
    assert words.convert_ids_to_tokens(first)[0] == "Ġthe"

    texts = ["the cat sat on the mat .", "a dog ran"]
    pooled = encode_pooled(texts, model=tiny_gpt2, layers=[-1], pooling="mean", device="cpu", use_cache=False)[-1]
    model = AutoModel.from_pretrained(tiny_gpt2).eval()
    for row, text in zip(pooled, texts):
        with torch.no_grad():
            states = model(**reference(text, return_tensors="pt")).last_hidden_state[0]
        np.testing.assert_allclose(row, states.mean(0).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("compute_dtype", ["bfloat16", "float16"])
def test_compute_dtype_runs_the_model_cast_to_it(tiny_bert, compute_dtype):
    """``compute_dtype`` runs the model in a half precision (its memory halved on a GPU), as ``measure --model
    --dtype`` does; the vectors are gathered in float32. The reference: the float32 model cast to that dtype, each
    line alone (the same windows); the default stays the float32 forward."""
    half = getattr(torch, compute_dtype)
    words = LINES[0]
    tokenizer, network, _ = load_transformer(tiny_bert, device="cpu")
    enc = words_tokenizer(tokenizer)([words], is_split_into_words=True, return_tensors="pt")
    with torch.no_grad():
        want = {dtype: network.to(dtype)(**enc, output_hidden_states=True).hidden_states[2][0].float().numpy()
                for dtype in (torch.float32, half)}
    first = [enc.word_ids(0).index(w) for w in range(len(words))]  # each word's first piece
    got = _extract(tiny_bert, lines=[words], layers=[2], compute_dtype=compute_dtype).hidden_states[2]
    default = _extract(tiny_bert, lines=[words], layers=[2]).hidden_states[2]
    assert got.dtype == default.dtype == np.float32
    np.testing.assert_array_equal(got, want[half][first])
    np.testing.assert_allclose(default, want[torch.float32][first], rtol=1e-6, atol=1e-6)
    assert np.abs(got - default).max() > 1e-5  # the half forward differs from the float32 one
    # a model given loaded runs as it is: another precision asked for is refused, not ignored
    loaded = load_transformer(tiny_bert, device="cpu", dtype=compute_dtype)[:2]
    np.testing.assert_array_equal(_extract(tiny_bert, lines=[words], layers=[2], compute_dtype=compute_dtype,
                                           tokenizer_and_model=loaded).hidden_states[2], got)
    np.testing.assert_array_equal(_extract(tiny_bert, lines=[words], layers=[2],  # None: the model as it is
                                           tokenizer_and_model=loaded).hidden_states[2], got)
    with pytest.raises(ValueError, match=f"must be the precision of the model given in tokenizer_and_model "
                                         f"\\('{compute_dtype}'\\), which runs as it is, or None. Got 'float32' "
                                         f"instead; load the model in float32 .* or leave compute_dtype out"):
        _extract(tiny_bert, lines=[words], layers=[2], tokenizer_and_model=loaded, compute_dtype="float32")
    # a model in a precision compute_dtype cannot name (float64) runs as it is, as before compute_dtype existed
    double = load_transformer(tiny_bert, device="cpu")[:2]
    double[1].to(torch.float64)
    np.testing.assert_allclose(_extract(tiny_bert, lines=[words], layers=[2], tokenizer_and_model=double)
                               .hidden_states[2], default, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="The 'compute_dtype' parameter of extract_token_embeddings must be one of"):
        _extract(tiny_bert, lines=[words], layers=[2], compute_dtype="float64")
