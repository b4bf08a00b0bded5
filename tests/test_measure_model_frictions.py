"""``measure --model`` frictions (issue 21): the sentence-transformers output row, the default table, one
warning for many layers, texts cut before tokenisation, and ``shrinkage_sample``."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from _tiny_models import make_tiny_bert
from click.testing import CliRunner

from isotropy._utils.validation import IsotropyValueError
from isotropy.cli import cli
from isotropy.measure.from_model import DEFAULT_LAYER_METRICS, LayerNote, LayerWarning, measure_layers

torch = pytest.importorskip("torch")

TEXTS = ["the cat sat on the mat .", "a dog ran .", "the dog sat on a mat", "a cat ran", "the mat .",
         "dog sat", "the cat ran on the mat", "a dog sat ."]


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("frictions") / "bert")


def test_sentence_transformers_output_row_equals_encode():
    pytest.importorskip("sentence_transformers")
    from isotropy import cosine_similarity_mean, isoscore
    from isotropy.models.encoders import load_sentence_model

    result = measure_layers(TEXTS, model="all-MiniLM-L6-v2", layers="last", device="cpu",
                            metrics=["isoscore", "cosine_similarity_mean"])
    assert result["output_modules"] == ["Pooling", "Normalize"]
    assert [r["layer"] for r in result["rows"]] == [6, "output"]
    encoded = load_sentence_model("all-MiniLM-L6-v2", device="cpu").encode(TEXTS, convert_to_numpy=True)
    output = result["rows"][-1]
    assert output["isoscore"] == pytest.approx(isoscore(encoded.astype(np.float64)), rel=1e-6)
    assert output["cosine_similarity_mean"] == pytest.approx(cosine_similarity_mean(encoded.astype(np.float64)),
                                                             rel=1e-6)
    assert output["norm_max_over_median"] == pytest.approx(1.0, abs=1e-6)  # Normalize applied
    assert result["rows"][0]["norm_max_over_median"] != pytest.approx(1.0, abs=1e-6)


def test_plain_transformers_directory_has_no_output_row_and_rogue_share_is_in_the_table(bert):
    assert "rogue_dimension_share" in DEFAULT_LAYER_METRICS and "isoscore_star" not in DEFAULT_LAYER_METRICS
    result = measure_layers(TEXTS, model=str(bert), device="cpu")
    assert [r["layer"] for r in result["rows"]] == [0, 1, 2] and result["output_modules"] == []
    assert "rogue_dimension_share" in result["metrics"] and "isoscore_star" not in result["metrics"]
    from isotropy.metrics.table import ISOSCORE_STAR_NOTE

    # as isotropy measure's JSON: the metric, with the note's reason
    assert result["left_out"] == {"isoscore_star": f"{ISOSCORE_STAR_NOTE} (shrinkage_sample=)"}


def test_isoscore_star_with_and_without_a_shrinkage_sample(bert):
    from isotropy import isoscore_star
    from isotropy.metrics.table import ISOSCORE_STAR_WARNING

    with pytest.warns(UserWarning, match="tracks the vector norms"):
        warned = measure_layers(TEXTS, model=str(bert), device="cpu", layers="2", metrics=["isoscore_star"])
    assert [note for note in warned["warnings"] if "Σ_S = I" in note] == [  # kept with the values (the JSON)
        f"every layer: isoscore_star: {ISOSCORE_STAR_WARNING} (shrinkage_sample=)."]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.simplefilter("ignore", LayerWarning)  # TwoNN's on 8 texts, of the default metrics: not IsoScore*'s
        result = measure_layers(TEXTS, model=str(bert), device="cpu", layers="2", shrinkage_sample=5,
                                random_state=1)
    # 5 rows of the layer's n_features: a singular Σ_S, said (a trial's 5 rows of 64 features were taken without a word)
    from isotropy.metrics.table import shrinkage_span_warning

    assert [note for note in result["warnings"] if "isoscore_star" in note] == [
        f"every layer: isoscore_star: {shrinkage_span_warning(5, result['n_features'])} (shrinkage_sample=)."]
    assert result["n_features"] >= 5 and any("spans at most 4 dimensions, so Σ_S is singular" in n for n in result["warnings"])
    assert result["metrics"][:2] == ["isoscore", "isoscore_star"] and result["left_out"] == {}
    from isotropy.models.encoders import encode_pooled

    X = encode_pooled(TEXTS, model=str(bert), layers=[2], device="cpu")[2].astype(np.float64)
    rows = np.sort(np.random.default_rng([1, 1]).choice(len(TEXTS), size=5, replace=False))
    expected = isoscore_star(X, shrinkage_cov=np.cov(X[rows], rowvar=False))
    assert result["rows"][0]["isoscore_star"] == pytest.approx(expected, rel=1e-6)
    texts = measure_layers(TEXTS, model=str(bert), device="cpu", layers="2", metrics=["isoscore_star"],
                           shrinkage_sample=TEXTS[:6])
    S = encode_pooled(TEXTS[:6], model=str(bert), layers=[2], device="cpu")[2].astype(np.float64)
    assert texts["rows"][0]["isoscore_star"] == pytest.approx(
        isoscore_star(X, shrinkage_cov=np.cov(S, rowvar=False)), rel=1e-6)


def test_one_warning_names_every_layer_that_gives_it(bert, capsys):
    duplicated = TEXTS[:4] * 2  # identical rows at every layer
    with pytest.warns(LayerWarning) as caught:  # warned, not printed (a user trial: nothing to filter or silence)
        measure_layers(duplicated, model=str(bert), device="cpu", metrics=["twonn_dimension"])
    assert capsys.readouterr().err == ""
    lines = [str(w.message) for w in caught if w.category is LayerWarning]
    few = [line for line in lines if "relative standard error" in line]  # 4 distinct points: TwoNN's own warning
    assert few == [("layers 0, 1, 2: twonn_dimension: 3 distance ratios kept (of 4 points): the estimate's "
                   "relative standard error is about 1/sqrt(3) = 58 %; measure at least 28 points for 20 %.")]
    # (and, where a layer's estimate is above the 3 dimensions 4 points span, TwoNN's warning of that)
    lines = [line for line in lines if line not in few and "the estimate is above the 3 dimensions" not in line]
    assert len(lines) == 1, lines
    assert lines[0].startswith("layers 0, 1, 2: twonn_dimension:")


def test_texts_are_cut_before_tokenisation(bert, monkeypatch):
    from isotropy.models import loading

    seen = []
    real = loading.load_transformer

    class Recording:
        def __init__(self, tokenizer):
            self._tokenizer = tokenizer

        def __call__(self, texts, *args, **kwargs):
            seen.extend(len(t) for t in ([texts] if isinstance(texts, str) else texts))
            return self._tokenizer(texts, *args, **kwargs)

        def __getattr__(self, name):
            return getattr(self._tokenizer, name)

    def load(*args, **kwargs):
        tokenizer, network, location = real(*args, **kwargs)
        return Recording(tokenizer), network, location

    monkeypatch.setattr(loading, "load_transformer", load)
    long_text = "word " * 400_000  # 2 MB on one line
    result = measure_layers([long_text, *TEXTS], model=str(bert), device="cpu", level="token", layers="1",
                            max_length=16, metrics=["isoscore"])
    assert seen and max(seen) <= 100 * 16
    assert result["n_texts"] == len(TEXTS) + 1


def test_cli_says_what_the_output_row_is_and_what_was_left_out(tmp_path):
    pytest.importorskip("sentence_transformers")
    (tmp_path / "t.txt").write_text("\n".join(TEXTS) + "\n")
    from isotropy.metrics.table import ISOSCORE_STAR_NOTE

    result = CliRunner().invoke(cli, ["measure", "--model", "all-MiniLM-L6-v2", "--texts", str(tmp_path / "t.txt"),
                                      "--layers", "last", "--device", "cpu", "--json", str(tmp_path / "m.json")])
    assert result.exit_code == 0, result.output
    assert "row 'output' is its own output (SentenceTransformer.encode: Pooling, Normalize)" in result.stderr
    reason = f"{ISOSCORE_STAR_NOTE} (--shrinkage-sample)"  # in the command's words, as isotropy measure's JSON has it
    assert f"Note: {reason}." in result.stderr
    record = json.loads((tmp_path / "m.json").read_text())
    assert record["left_out"] == {"isoscore_star": reason} and "isoscore_star_left_out" not in record
    assert result.stdout.splitlines()[-1].split()[0] == "output"


def test_sentence_transformers_directory_reads_its_weights_once(monkeypatch, tmp_path):
    """The output row's SentenceTransformer is built around the network already loaded: model.safetensors is
    opened by the command only as often as one load_transformer opens it (load_sentence_model reloaded it), and
    the row's value is still SentenceTransformer.encode's (at the layers' token limit), long texts included."""
    pytest.importorskip("sentence_transformers")
    from transformers import modeling_utils

    from isotropy import isoscore
    from isotropy.models.encoders import load_sentence_model

    monkeypatch.setenv("ISOTROPY_CACHE", str(tmp_path))  # no embeddings cached: the forward pass runs
    opened = []
    real = modeling_utils.safe_open
    monkeypatch.setattr(modeling_utils, "safe_open", lambda *args, **kwargs: opened.append(args) or real(*args, **kwargs))
    long_text = " ".join(["word"] * 40)  # cut at max_length=16, by the layers and the output row alike
    texts = [*TEXTS, long_text, "  spaced out  "]
    result = measure_layers(texts, model="all-MiniLM-L6-v2", layers="last", device="cpu", metrics=["isoscore"],
                            max_length=16)
    assert result["rows"][-1]["layer"] == "output"
    from isotropy.models.loading import load_transformer

    in_command, opened[:] = len(opened), []
    load_transformer("all-MiniLM-L6-v2", device="cpu")  # the one load (transformers also opens the header for the dtype)
    assert in_command == len(opened) >= 1
    monkeypatch.setattr(modeling_utils, "safe_open", real)
    encoder = load_sentence_model("all-MiniLM-L6-v2", device="cpu")
    encoder.max_seq_length = 16
    encoded = encoder.encode(texts, convert_to_numpy=True)
    assert result["rows"][-1]["isoscore"] == pytest.approx(isoscore(encoded.astype(np.float64)), rel=1e-6)


def test_output_row_of_repeated_texts_comes_from_the_one_pass(monkeypatch, tmp_path):
    """Texts with the same tokens run once (encode_pooled); their output rows are copied from that pass, not
    encoded again, and equal SentenceTransformer.encode's."""
    pytest.importorskip("sentence_transformers")
    from sentence_transformers import SentenceTransformer

    from isotropy import isoscore
    from isotropy.models.encoders import load_sentence_model

    monkeypatch.setenv("ISOTROPY_CACHE", str(tmp_path))
    texts = [*TEXTS, TEXTS[0], TEXTS[1].upper(), TEXTS[0]]  # MiniLM lower-cases: the same tokens
    encoded = load_sentence_model("all-MiniLM-L6-v2", device="cpu").encode(texts, convert_to_numpy=True)
    calls = []
    real = SentenceTransformer.encode
    monkeypatch.setattr(SentenceTransformer, "encode", lambda self, *a, **k: calls.append(a) or real(self, *a, **k))
    result = measure_layers(texts, model="all-MiniLM-L6-v2", layers="last", device="cpu", metrics=["isoscore"])
    assert calls == []
    assert result["rows"][-1]["layer"] == "output"
    assert result["rows"][-1]["isoscore"] == pytest.approx(isoscore(encoded.astype(np.float64)), rel=1e-6)


def test_measuring_other_layers_of_the_same_texts_runs_no_forward_pass(monkeypatch, tmp_path):
    """The layers' cache (encode_pooled) and the output row's cache: a second measurement of the same texts, the
    output row included, runs the network on nothing, and reads back the values of the first."""
    pytest.importorskip("sentence_transformers")
    from transformers import BertModel

    monkeypatch.setenv("ISOTROPY_CACHE", str(tmp_path))
    first = measure_layers(TEXTS, model="all-MiniLM-L6-v2", layers="all", device="cpu", metrics=["isoscore"])
    calls = []
    forward = BertModel.forward
    monkeypatch.setattr(BertModel, "forward", lambda self, *a, **k: calls.append(1) or forward(self, *a, **k))
    again = measure_layers(TEXTS, model="all-MiniLM-L6-v2", layers="2,6", device="cpu", metrics=["isoscore"])
    assert calls == []
    by_layer = {row["layer"]: row["isoscore"] for row in first["rows"]}
    assert [row["layer"] for row in again["rows"]] == [2, 6, "output"]
    assert all(row["isoscore"] == by_layer[row["layer"]] for row in again["rows"])


def test_the_shared_search_warns_once_for_twonn_and_mle(bert, capsys):
    """TwoNN and MLE share one neighbour search: its duplicate-rows warning is one line naming both."""
    duplicated = TEXTS[:6] * 2  # identical rows at every layer
    with pytest.warns(LayerWarning) as caught:
        result = measure_layers(duplicated, model=str(bert), device="cpu",
                                metrics=["twonn_dimension", "mle_dimension"], n_neighbors=4)
    assert capsys.readouterr().err == ""
    # (6 distinct points: TwoNN's own warnings too, of the few ratios and, at a layer whose estimate is above 5, of that)
    own = ("relative standard error", "the estimate is above the 5 dimensions")
    lines = [str(w.message) for w in caught if w.category is LayerWarning
             and not any(text in str(w.message) for text in own)]
    assert len(lines) == 1, lines
    assert lines[0].startswith("layers 0, 1, 2: twonn_dimension, mle_dimension: the layer has 6 duplicate rows")
    assert " X " not in lines[0] and "'X'" not in lines[0]  # the layer's vectors, not a parameter the caller never gave
    assert "neighbour_dimensions" not in lines[0]
    assert [w for w in result["warnings"] if not any(text in w for text in own)] == lines


def test_max_length_cuts_the_output_row_as_it_cuts_the_layers(monkeypatch, tmp_path):
    """--max-length is the token limit of every row: the output row is SentenceTransformer.encode with
    max_seq_length = max_length (it stayed at the model's own 256, so --max-length 8 changed layer 6 and not the
    output row), and equals layer 6 mean-pooled and normalised (MiniLM's Pooling and Normalize), long texts too.
    A row cached at one limit is not read back at another."""
    pytest.importorskip("sentence_transformers")
    from isotropy import cosine_similarity_mean, isoscore
    from isotropy.models.encoders import load_sentence_model

    monkeypatch.setenv("ISOTROPY_CACHE", str(tmp_path))
    texts = [*TEXTS, " ".join(["word"] * 40), "  " + " ".join(TEXTS) + "  "]  # cut at 8 tokens, not at 256
    encoder = load_sentence_model("all-MiniLM-L6-v2", device="cpu")
    for max_length in (8, 128):
        result = measure_layers(texts, model="all-MiniLM-L6-v2", layers="last", device="cpu", max_length=max_length,
                                metrics=["isoscore", "cosine_similarity_mean"])
        layer, output = result["rows"]
        assert output["layer"] == "output"
        encoder.max_seq_length = max_length
        encoded = encoder.encode(texts, convert_to_numpy=True).astype(np.float64)
        assert output["isoscore"] == pytest.approx(isoscore(encoded), rel=1e-5)
        # the cosine of mean-pooled rows does not depend on their norms: layer 6 and output read the same
        assert output["cosine_similarity_mean"] == pytest.approx(cosine_similarity_mean(encoded), rel=1e-5)
        assert output["cosine_similarity_mean"] == pytest.approx(layer["cosine_similarity_mean"], rel=1e-5)


def test_a_max_length_past_the_models_positions_is_noted_and_the_used_one_recorded(bert, capsys):
    """--max-length 1000 on a model of fewer positions was cut without a word, and the JSON recorded 1000 (a user
    trial). The result's max_length is the tokens each text was cut to; a note says how many texts that cut, and
    only when it cut one: --max-length 100000 said "texts longer than 512 tokens were cut to 512" of texts that all
    fit. The default (128) is cut without a word about max_length."""
    from transformers import AutoConfig

    positions = AutoConfig.from_pretrained(str(bert)).max_position_embeddings
    with warnings.catch_warnings(record=True) as caught:  # no text is longer than the model's positions: no note
        warnings.simplefilter("always")
        fitting = measure_layers(TEXTS, model=str(bert), device="cpu", metrics=["isoscore"], max_length=positions + 100)
    assert [w for w in caught if w.category is LayerNote] == [] and fitting["n_truncated"] == 0
    assert not any("cut" in w for w in fitting["warnings"]) and fitting["max_length"] == positions
    long = " ".join(["cat"] * (positions + 10))  # more tokens than the model's positions
    with pytest.warns(LayerNote) as caught:  # warned, not printed: a Python caller can filter or silence it
        asked = measure_layers([*TEXTS, long], model=str(bert), device="cpu", metrics=["isoscore"],
                               max_length=positions + 100)
    note = (f"1 of {len(TEXTS) + 1} texts is longer than {positions} tokens (the most the model takes: "
            f"max_length={positions + 100} is more than its {positions} positions): it was cut to its first "
            f"{positions} tokens")
    assert [str(w.message) for w in caught if w.category is LayerNote] == [note]
    assert capsys.readouterr().err == ""
    assert f"every layer: {note}" in asked["warnings"] and asked["max_length"] == positions
    assert asked["n_truncated"] == 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        default = measure_layers(TEXTS, model=str(bert), device="cpu", metrics=["isoscore"])
    assert not [w for w in caught if "max_length" in str(w.message)] and default["max_length"] == min(128, positions)
    assert capsys.readouterr().err == ""
    assert positions <= 128  # the tiny model's table: both runs cut every text to it, so the same values
    assert [row["isoscore"] for row in default["rows"]] == [row["isoscore"] for row in fitting["rows"]]


@pytest.mark.parametrize("level", ["sentence", "token"])
def test_a_max_length_of_only_the_special_tokens_is_refused_before_the_forward_pass(bert, monkeypatch, level):
    """--max-length 2 on a BERT kept [CLS] [SEP] only: every text became the same row and the metrics failed on
    identical vectors (a user trial). Refused in one line naming the least value: the tokenizer's own count of the
    special tokens it adds, plus one token of the text."""
    from transformers import AutoTokenizer

    from isotropy import IsotropyValueError
    from isotropy.measure import from_model
    from isotropy.models import encoders

    added = AutoTokenizer.from_pretrained(str(bert)).num_special_tokens_to_add(pair=False)
    assert added == 2  # [CLS] and [SEP]

    def no_pass(*args, **kwargs):
        raise AssertionError("the forward pass ran")

    with monkeypatch.context() as patched:
        patched.setattr(encoders, "encode_pooled", no_pass)
        patched.setattr(from_model, "token_hidden_states", no_pass)
        with pytest.raises(IsotropyValueError) as info:
            measure_layers(TEXTS, model=str(bert), device="cpu", level=level, max_length=added)
    assert str(info.value) == (f"The 'max_length' parameter of measure_layers must be at least {added + 1} for "
                               f"{str(bert)!r}, whose tokenizer adds {added} special tokens to every text, so that a "
                               f"text keeps at least one token of its own. Got {added} instead.")
    # the least value runs: each text keeps its first token, so texts of different first words differ
    with pytest.warns(LayerNote, match=f"cut to their first {added + 1} tokens|cut to its first {added + 1} tokens"):
        result = measure_layers(TEXTS, model=str(bert), device="cpu", level=level, max_length=added + 1,
                                metrics=["cosine_similarity_mean"])
    assert result["max_length"] == added + 1 and not result["errors"]


def test_cli_refuses_a_max_length_of_only_the_special_tokens(bert, tmp_path):
    (tmp_path / "t.txt").write_text("\n".join(TEXTS) + "\n")
    result = CliRunner().invoke(cli, ["measure", "--model", str(bert), "--texts", str(tmp_path / "t.txt"),
                                      "--layers", "last", "--device", "cpu", "--max-length", "2"])
    assert result.exit_code == 2
    expected = (f"Error: --max-length must be at least 3 for {str(bert)!r}, whose tokenizer adds 2 special tokens "
                f"to every text, so that a text keeps at least one token of its own. Got 2 instead.")
    assert result.output.strip().splitlines() == [expected]


def test_cli_notes_a_max_length_given_past_the_positions_and_not_its_default(bert, tmp_path):
    """--help shows --max-length's default 128; left out, it is still cut to the model's 64 positions without naming
    it, while the same 128 given is named (its default is told apart by where it came from, not its value). Either
    way a note comes only when a text was cut, with how many: none of short texts."""
    (tmp_path / "t.txt").write_text("\n".join(TEXTS) + "\n")
    (tmp_path / "long.txt").write_text("\n".join([*TEXTS, " ".join(["cat"] * 80), " ".join(["dog"] * 90)]) + "\n")
    args = ["measure", "--model", str(bert), "--layers", "last", "--device", "cpu", "--metrics", "isoscore",
            "--no-progress"]
    cut = "Note: 2 of 10 texts are longer than 64 tokens (the most the model takes{}): each was cut to its first 64 tokens."
    for texts, note in (("t.txt", None), ("long.txt", cut)):
        default = CliRunner().invoke(cli, [*args, "--texts", str(tmp_path / texts)])
        given = CliRunner().invoke(cli, [*args, "--texts", str(tmp_path / texts), "--max-length", "128"])
        assert default.exit_code == 0 and given.exit_code == 0, default.output + given.output
        notes = [[line for line in result.output.splitlines() if "cut" in line] for result in (default, given)]
        assert notes == ([[], []] if note is None else
                         [[note.format("")], [note.format(": max_length=128 is more than its 64 positions")]]), notes


def test_n_neighbors_past_the_distinct_texts_is_refused_before_the_model_loads(monkeypatch):
    """The check of n_neighbors counted every text: on 12 texts of 6 distinct, k = 6 passed it, the model ran, and the
    MLE then failed at every layer (its points are the distinct texts). Refused now before the model loads."""
    from isotropy import IsotropyValueError
    from isotropy.models import loading

    monkeypatch.setattr(loading, "load_transformer", lambda *a, **k: pytest.fail("the model was loaded"))
    with pytest.raises(IsotropyValueError, match=r"'n_neighbors' parameter of measure_layers must be at most the "
                                                 r"distinct texts less one, 5 \(6 distinct of 12: equal texts are one "
                                                 r"point\)\. Got 6 instead\."):
        measure_layers(TEXTS[:6] * 2, model="all-MiniLM-L6-v2", device="cpu", metrics=["mle_dimension"], n_neighbors=6)


def test_the_packaged_glove_vectors_as_a_model_say_what_they_are(tmp_path, monkeypatch):
    """``--model glove-6b-50d`` (the packaged GloVe, offline like the packaged models) was refused as a name "not a
    local path or a packaged model" while "the Hugging Face hub cannot be reached": it is packaged, and no network
    would help. Static word vectors have no layers to run texts through: the message says so and how they are
    measured, before the hub is tried and before the texts are read (a user trial)."""
    from isotropy.models import resolve
    from isotropy.models.resolve import _ACCEPTED, resolve_model

    monkeypatch.setattr(resolve, "_hub_reachable", lambda *a, **k: pytest.fail("the hub was tried"))
    said = ("is static word vectors (the packaged GloVe 6B 50-d: one vector per word, no layers to run texts "
            f"through), not a transformers model: {_ACCEPTED}; measure the vectors themselves as EMBEDDINGS "
            "(isotropy measure glove-6b-50d).")
    for name in ("glove-6b-50d", "GloVe-6B-50d"):
        with pytest.raises(ValueError) as err:
            resolve_model(name)
        assert str(err.value) == f"The model {name!r} {said}"
    result = CliRunner().invoke(cli, ["measure", "--model", "glove-6b-50d", "--texts", str(tmp_path / "absent.txt"),
                                      "--device", "cpu"])
    assert result.exit_code == 2, result.output
    assert result.output == f"Error: The model 'glove-6b-50d' {said}\n"
    # said so on a core install too, not that the packages a model needs are missing (a review); and a folder of that
    # name is a local model directory, for measure as for resolve_model
    monkeypatch.setattr(resolve, "require_model_packages", lambda *a, **k: pytest.fail("asked for model packages"))
    result = CliRunner().invoke(cli, ["measure", "--model", "glove-6b-50d", "--texts", str(tmp_path / "absent.txt"),
                                      "--device", "cpu"])
    assert result.output == f"Error: The model 'glove-6b-50d' {said}\n"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "glove-6b-50d").mkdir()
    resolve.refuse_word_vectors("glove-6b-50d")  # nothing to refuse: a folder
    assert resolve_model("glove-6b-50d") == str((tmp_path / "glove-6b-50d").resolve())


def test_measure_layers_refusals_are_isotropy_value_errors():
    """``measure_layers`` refused fewer than 2 texts (and its other bad inputs) with a plain ``ValueError`` while the
    library's refusals are ``IsotropyValueError`` (docs/refusals.md; a trial): the same message, the library's type."""
    from isotropy import IsotropyValueError
    from isotropy.measure.from_model import measure_layers

    with pytest.raises(IsotropyValueError, match=r"The 'texts' parameter of measure_layers must hold at least 2 texts"):
        measure_layers(["only one"], model="all-MiniLM-L6-v2")


def test_two_texts_leave_twonn_out_of_the_default_table_and_are_refused_for_it_before_the_model_runs(bert, monkeypatch,
                                                                                                     tmp_path):
    """Two texts ran the whole model, then TwoNN failed at every layer ("The layer must have at least 3 samples"),
    where one text was refused at once (a new user's trial): at the sentence level the rows are the texts, known
    beforehand. Asked for by name, TwoNN is refused before the model runs; the default table leaves it out with a note
    (as the file's default table leaves MLE out) and measures the rest."""
    from isotropy.models import encoders

    def never(*args, **kwargs):
        raise AssertionError("the model ran")

    with monkeypatch.context() as patch:
        patch.setattr(encoders, "encode_pooled", never)
        with pytest.raises(IsotropyValueError, match=r"^twonn_dimension needs at least 3 rows, and the texts measured "
                                                     r"give 2 \(one row per text at the sentence level\): give at least "
                                                     r"3 texts, or measure without twonn_dimension\.$"):
            measure_layers(TEXTS[:2], model=str(bert), device="cpu", layers="2", metrics=["isoscore", "twonn_dimension"])
        with pytest.raises(IsotropyValueError, match=r"give 2 .*: measure a sample of at least 3 of the 8 texts "
                                                     r"\(--sample-size; sample_size= in Python\)"):
            measure_layers(TEXTS, model=str(bert), device="cpu", layers="2", sample_size=2, metrics=["twonn_dimension"])
    result = measure_layers(TEXTS[:2], model=str(bert), device="cpu", layers="2")
    assert "twonn_dimension" not in result["metrics"] and "isoscore" in result["metrics"] and result["errors"] == {}
    assert result["left_out"]["twonn_dimension"] == (
        "twonn_dimension left out: twonn_dimension needs at least 3 rows, and the texts measured give 2 (one row per "
        "text at the sentence level); give at least 3 texts to measure it")
    (tmp_path / "two.txt").write_text("\n".join(TEXTS[:2]) + "\n")
    done = CliRunner().invoke(cli, ["measure", "--model", str(bert), "--texts", str(tmp_path / "two.txt"), "--layers",
                                    "2", "--device", "cpu"])
    assert done.exit_code == 0, done.output
    assert "Note: twonn_dimension left out: twonn_dimension needs at least 3 rows" in done.stderr
