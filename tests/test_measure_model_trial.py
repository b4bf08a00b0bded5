"""``measure --model`` seen by a new user (trial of the model plumbing against independent references): texts cut at
``max_length`` are counted and said, the precision the model ran in, the model's identity in the JSON record, and
the cache of pooled vectors."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest
from _tiny_models import make_tiny_bert

from isotropy.measure.from_model import LayerNote, measure_layers

torch = pytest.importorskip("torch")

TEXTS = ["the cat sat on the mat .", "a dog ran .", "the dog sat on a mat", "a cat ran", "the mat .",
         "dog sat", "the cat ran on the mat , the dog sat on the mat .", "a dog sat ."]


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("trial") / "bert")


@pytest.mark.parametrize("level", ["sentence", "token"])
def test_texts_cut_at_max_length_are_counted_and_said(bert, capsys, level):
    """A text longer than max_length was cut to its first tokens without a word, at the default 128 as at a value
    given (a user trial: 4 of 6 texts cut at --max-length 3, nothing said). The count is now said and recorded; the
    reference is the tokenizer's own token count of each whole text."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(bert))
    lengths = [len(ids) for ids in tokenizer(TEXTS)["input_ids"]]  # whole texts, [CLS] and [SEP] included
    max_length = 7
    expected = sum(n > max_length for n in lengths)
    assert 0 < expected < len(TEXTS)
    with pytest.warns(LayerNote) as caught:  # warned, not printed: a Python caller can filter or silence it
        result = measure_layers(TEXTS, model=str(bert), device="cpu", metrics=["isoscore"], max_length=max_length,
                                level=level)
    assert capsys.readouterr().err == ""
    assert result["n_truncated"] == expected
    note = (f"{expected} of {len(TEXTS)} texts are longer than {max_length} tokens (max_length={max_length}; the "
            f"model takes up to 64): each was cut to its first {max_length} tokens")
    assert [str(w.message) for w in caught if w.category is LayerNote] == [note]
    assert f"every layer: {note}" in result["warnings"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        whole = measure_layers(TEXTS, model=str(bert), device="cpu", metrics=["isoscore"], max_length=max(lengths),
                               level=level)
    assert whole["n_truncated"] == 0 and not [w for w in caught if "longer than" in str(w.message)]


@pytest.fixture(scope="module")
def bert_bf16(tmp_path_factory):
    """The tiny BERT saved in bfloat16 (as many hub models are)."""
    from transformers import AutoModel

    directory = make_tiny_bert(tmp_path_factory.mktemp("trial") / "bert16", seed=3)
    AutoModel.from_pretrained(str(directory)).to(torch.bfloat16).save_pretrained(directory)
    return directory


def _float32_mean_pooled(directory, texts, layer):
    """A hand-written forward: the weights read in float32, one text at a time (no padding), masked mean in float64."""
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(directory))
    network = AutoModel.from_pretrained(str(directory), dtype=torch.float32).eval()
    with torch.no_grad():
        return np.stack([network(**tokenizer(text, return_tensors="pt"), output_hidden_states=True)
                         .hidden_states[layer][0].double().mean(0).numpy() for text in texts])


def test_a_bfloat16_model_runs_in_float32_and_the_record_says_so(bert_bf16):
    """transformers 5 loads a model in its files' dtype: a bfloat16 folder ran in bfloat16 and its pooled states were
    ~1e-2 off those of float32 arithmetic on the same weights, unsaid (a user trial). Every loader now runs float32
    (the reference: the weights read in float32, each text alone) and measure_layers records the dtype."""
    from isotropy.models.encoders import encode_pooled, encode_sentences

    reference = _float32_mean_pooled(bert_bf16, TEXTS, 2)
    pooled = encode_pooled(TEXTS, model=str(bert_bf16), layers=[2], device="cpu", batch_size=3, use_cache=False)[2]
    assert np.abs(pooled - reference).max() <= 1e-5 * np.abs(reference).max()
    # sentence-transformers' own loading (encode_sentences): its default module is the mean pooling of the last layer
    encoded = encode_sentences(TEXTS, model=str(bert_bf16), device="cpu", use_cache=False, show_progress=False)
    assert np.abs(encoded - reference).max() <= 1e-5 * np.abs(reference).max()
    result = measure_layers(TEXTS, model=str(bert_bf16), device="cpu", metrics=["isoscore"], layers="last")
    assert result["dtype"] == "float32"


def test_the_json_record_names_the_models_files_by_sha256(tmp_path, monkeypatch):
    """--json recorded the texts' sha256 but of the model only a name and folder, whose contents change under it
    (a user trial). It now names every file of a model folder with its size and sha256 (compared with hashlib's), so
    other weights saved in the same folder give another record; of a GGUF model, the file's sha256."""
    import hashlib
    import json

    from _tiny_models import make_tiny_gemma_gguf
    from click.testing import CliRunner

    from isotropy.cli import cli

    monkeypatch.setenv("ISOTROPY_CACHE", str(tmp_path / "cache"))
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n")

    def record(model):
        out = tmp_path / "out.json"
        result = CliRunner().invoke(cli, ["measure", "--model", str(model), "--texts", str(texts), "--device", "cpu",
                                          "--metrics", "isoscore", "--layers", "last", "--json", str(out)])
        assert result.exit_code == 0, result.output
        return json.loads(out.read_text())["inputs"]["model"]

    folder = make_tiny_bert(tmp_path / "bert", seed=1)
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # a clone's own files are not the model's
    first = record(folder)
    on_disk = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and ".git" not in p.parts)
    assert [entry["path"] for entry in first["files"]] == on_disk and "model.safetensors" in on_disk
    for entry in first["files"]:
        data = (folder / entry["path"]).read_bytes()
        assert (entry["bytes"], entry["sha256"]) == (len(data), hashlib.sha256(data).hexdigest())
    make_tiny_bert(folder, seed=2)  # other weights, the same folder and file names
    second = {entry["path"]: entry["sha256"] for entry in record(folder)["files"]}
    assert second["model.safetensors"] != {e["path"]: e["sha256"] for e in first["files"]}["model.safetensors"]
    gguf_path, _ = make_tiny_gemma_gguf(tmp_path / "tiny.gguf")
    assert record(gguf_path)["gguf_sha256"] == hashlib.sha256(gguf_path.read_bytes()).hexdigest()


def test_a_tokenizer_file_changed_alone_is_no_stale_cache_hit(tmp_path):
    """The cache key named a model folder's .safetensors, .bin and .json files only: a folder tokenised by its
    vocab.txt (no tokenizer.json, as older BERT folders) whose vocab.txt was corrected gave the old tokens' vectors
    back from the cache (a user trial). The reference: the same call without the cache."""
    from _tiny_models import BERT_VOCAB

    from isotropy.models.encoders import encode_pooled

    folder = make_tiny_bert(tmp_path / "bert")
    (folder / "tokenizer.json").unlink()
    texts = ["the cat sat", "a dog ran", "the mat"]
    kwargs = {"model": str(folder), "layers": [1], "device": "cpu"}
    before = encode_pooled(texts, cache_dir=tmp_path / "cache", **kwargs)[1]
    vocab = list(BERT_VOCAB)
    vocab[5], vocab[6] = vocab[6], vocab[5]  # "the" and "cat" swap ids
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    fresh = encode_pooled(texts, use_cache=False, **kwargs)[1]
    assert not np.array_equal(fresh, before)
    np.testing.assert_array_equal(encode_pooled(texts, cache_dir=tmp_path / "cache", **kwargs)[1], fresh)


@pytest.mark.skipif(sys.platform == "win32", reason="st_ctime is the creation time on Windows")
def test_a_model_file_rewritten_with_its_modification_time_set_back_is_no_stale_cache_hit(tmp_path):
    """The cache key named each model file by its size and modification time: vocab.txt rewritten to the same size
    with its time set back (a copy that keeps times) gave the old tokens' vectors back. Its change time names it too.
    The reference: the same call without the cache."""
    import os
    import time

    from _tiny_models import BERT_VOCAB

    from isotropy.models.encoders import encode_pooled

    folder = make_tiny_bert(tmp_path / "bert")
    (folder / "tokenizer.json").unlink()
    texts = ["the cat sat", "a dog ran", "the mat"]
    kwargs = {"model": str(folder), "layers": [1], "device": "cpu"}
    stat = (folder / "vocab.txt").stat()
    before = encode_pooled(texts, cache_dir=tmp_path / "cache", **kwargs)[1]
    time.sleep(0.02)  # a change time of its own, on file systems of coarse clocks too
    vocab = list(BERT_VOCAB)
    vocab[5], vocab[6] = vocab[6], vocab[5]  # "the" and "cat" swap ids: the same bytes in another order
    with open(folder / "vocab.txt", "r+", encoding="utf-8") as handle:
        handle.write("\n".join(vocab) + "\n")
    os.utime(folder / "vocab.txt", ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert (folder / "vocab.txt").stat().st_size == stat.st_size
    fresh = encode_pooled(texts, use_cache=False, **kwargs)[1]
    assert not np.array_equal(fresh, before)
    np.testing.assert_array_equal(encode_pooled(texts, cache_dir=tmp_path / "cache", **kwargs)[1], fresh)


def test_a_cache_file_that_is_not_an_npy_is_one_warning_line_that_advises_nothing_unsafe(bert, tmp_path, monkeypatch):
    """A cache file overwritten with other bytes was read by np.load, whose refusal was printed as the reason: "This
    file contains pickled (object) data. If you trust the file you can load it unsafely using the `allow_pickle=`
    keyword argument" (a user trial), advice no cache file of ours needs. It is now said as not an .npy file, in one
    Warning line, and the vectors are recomputed: equal to those of the run without the cache."""
    import json

    from click.testing import CliRunner

    from isotropy.cli import cli

    monkeypatch.setenv("ISOTROPY_CACHE", str(tmp_path))
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n")
    args = ["measure", "--model", str(bert), "--texts", str(texts), "--device", "cpu", "--metrics", "isoscore",
            "--layers", "1", "--json", str(tmp_path / "out.json")]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 0, first.output
    value = json.loads((tmp_path / "out.json").read_text())["rows"][0]["isoscore"]
    (cached,) = (tmp_path / "embeddings").glob("*.npy")
    cached.write_bytes(b"garbage")
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 0, again.output
    # (besides the rows' bound on IsoScore: 8 texts of a 16-wide model, span_bound_warning)
    said = [line for line in again.stderr.splitlines() if line.startswith("Warning:") and "span at most" not in line]
    assert said == [(f"Warning: The cached embeddings {str(cached)!r} could not be read back (not an .npy file (it "
                     f"does not start with numpy's .npy header)); recomputing them and rewriting the file.")]
    assert json.loads((tmp_path / "out.json").read_text())["rows"][0]["isoscore"] == value
    assert np.load(cached).shape == (len(TEXTS), 16)  # rewritten


def test_the_dtype_keyword_is_the_one_the_installed_transformers_reads():
    """transformers 4.56 renamed ``torch_dtype`` to ``dtype``; before it (the project allows 4.40 onwards) a
    ``dtype=`` keyword is not read but passed on to the model's ``__init__``, and no model loaded at all ("BertModel.
    __init__() got an unexpected keyword argument 'dtype'", found in review with transformers 4.46.3)."""
    from isotropy.models._pretrained import dtype_kwargs

    assert dtype_kwargs(version="4.40.0") == {"torch_dtype": "float32"}
    assert dtype_kwargs(version="4.55.4") == {"torch_dtype": "float32"}
    assert dtype_kwargs(version="4.56.0") == {"dtype": "float32"}
    assert dtype_kwargs(version="5.0.0rc1") == {"dtype": "float32"}
    assert dtype_kwargs(torch.float32, version="10.1") == {"dtype": torch.float32}


@pytest.mark.parametrize("version", ["4.46.3", "5.0.0"])
def test_every_loader_passes_the_dtype_under_the_keyword_of_its_transformers(bert_bf16, monkeypatch, version):
    """Each loader's ``from_pretrained`` call (load_transformer's, sentence-transformers' through model_kwargs) is
    spied on under a transformers that says it is ``version``: the float32 request goes under ``torch_dtype`` before
    4.56 and ``dtype`` from it (the installed transformers reads both), and the model runs in float32 either way."""
    import transformers
    from transformers import modeling_utils

    from isotropy.models.encoders import load_sentence_model
    from isotropy.models.loading import load_transformer

    keywords = []
    original = modeling_utils.PreTrainedModel.from_pretrained.__func__

    def spy(cls, *args, **kwargs):
        keywords.append({key for key in kwargs if key in ("dtype", "torch_dtype")})
        return original(cls, *args, **kwargs)

    monkeypatch.setattr(modeling_utils.PreTrainedModel, "from_pretrained", classmethod(spy))
    monkeypatch.setattr(transformers, "__version__", version)
    expected = {"torch_dtype"} if version.startswith("4.") else {"dtype"}
    _, network, _ = load_transformer(str(bert_bf16), device="cpu")
    encoder = load_sentence_model(str(bert_bf16), device="cpu")
    assert keywords == [expected, expected]
    assert {p.dtype for p in network.parameters()} == {p.dtype for p in encoder.parameters()} == {torch.float32}


def test_no_more_texts_than_features_is_said_with_the_layers_it_caps(bert):
    """8 texts of a 16-wide model span 7 dimensions at every layer: IsoScore at most 6/15, PR at most 7 whatever the
    layer holds (a trial: 40 texts of MiniLM read IsoScore 0.05 where 0.09 was the most possible). One warning per
    metric naming every layer, kept with the values; the values lie within the bounds; none for mean cos."""
    result = measure_layers(TEXTS, model=str(bert), device="cpu",
                            metrics=["isoscore", "participation_ratio", "cosine_similarity_mean"])
    layers = ", ".join(str(row["layer"]) for row in result["rows"])
    span = "8 rows in 16 features span at most 7 dimensions, so the value is at most"
    tail = "on any such rows (a regular simplex reaches it); measure more rows than features to compare spaces by it."
    assert [w for w in result["warnings"] if "span at most" in w] == [
        f"layers {layers}: isoscore: {span} 0.4 {tail}", f"layers {layers}: participation_ratio: {span} 7 {tail}"]
    assert all(0 < row["isoscore"] <= 0.4 + 1e-9 and row["participation_ratio"] <= 7 + 1e-9 for row in result["rows"])


def test_white_space_around_texts_is_left_out_and_said(bert, tmp_path):
    """A trial: SST-2's dev.tsv ends every sentence with a space, which Gemma's tokenizer makes a token of its own:
    --pooling last read that token for every text (layer 0: 20 identical rows). Texts read from a file lose the white
    space around them, in every format, and the command says how many had it; the vectors are those of the stripped
    texts."""
    import json

    from click.testing import CliRunner

    from isotropy.cli import cli
    from isotropy.measure.from_model import read_texts

    padded = [f"  {text}  " if i % 2 else f"{text} " for i, text in enumerate(TEXTS)]
    (tmp_path / "t.txt").write_text("\n".join(f"\t{t}" for t in padded) + "\n")  # a tab too, in a plain-text file
    (tmp_path / "t.tsv").write_text("text\tlabel\n" + "".join(f"{t}\t{i % 2}\n" for i, t in enumerate(padded)))
    (tmp_path / "t.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in padded))
    for name, column in (("t.txt", None), ("t.tsv", "text"), ("t.jsonl", "text")):
        texts = read_texts(tmp_path / name, column=column)
        assert list(texts) == [text.strip() for text in TEXTS] and texts.stripped == len(TEXTS), name
    assert getattr(read_texts(tmp_path / "t.txt"), "stripped", 0) == len(TEXTS)
    (tmp_path / "clean.txt").write_text("\n".join(t.strip() for t in TEXTS) + "\n")
    assert getattr(read_texts(tmp_path / "clean.txt"), "stripped", 0) == 0
    runs = {}
    for name in ("t.txt", "clean.txt"):
        out = tmp_path / f"{name}.json"
        result = CliRunner().invoke(cli, ["measure", "--model", str(bert), "--texts", str(tmp_path / name), "--device",
                                          "cpu", "--metrics", "isoscore", "--layers", "last", "--pooling", "last",
                                          "--json", str(out)])
        assert result.exit_code == 0, result.output
        runs[name] = (json.loads(out.read_text())["rows"], result.stderr)
    note = (f"Note: the white space around {len(TEXTS)} of {len(TEXTS)} texts was stripped, every text kept (a "
            f"tokenizer may make a token of a trailing space, and --pooling last would read it).")
    assert note in runs["t.txt"][1] and "white space around" not in runs["clean.txt"][1]
    assert runs["t.txt"][0] == runs["clean.txt"][0]
