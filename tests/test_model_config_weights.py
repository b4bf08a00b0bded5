"""A model directory whose config.json does not match its weights is refused in one line, before a model is built.

The trial (/tmp/trial_sec/models): MiniLM's 6-layer model.safetensors under a config.json saying
``num_hidden_layers`` 1000 ran ``isotropy measure`` for 60 s at 7.58 GB and measured 994 randomly
initialised layers (transformers' "MISSING ... newly initialized" note only); 3000 layers was a
MemoryError traceback, vocabulary 2,000,000 x width 4096 a RuntimeError traceback. Weights that the
architecture needs but the files lack (random after loading) are an error too.
"""

from __future__ import annotations

import json

import pytest
from _tiny_models import make_tiny_bert
from click.testing import CliRunner

torch = pytest.importorskip("torch")

from isotropy._utils.validation import IsotropyValueError
from isotropy.cli import cli
from isotropy.models.loading import load_transformer


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("bert") / "model", n_layers=2, hidden_size=16)


def _copy(src, dst):
    dst.mkdir()
    for file in src.iterdir():
        (dst / file.name).write_bytes(file.read_bytes())
    return dst


def _edit_config(directory, **changes):
    config = json.loads((directory / "config.json").read_text())
    config.update(changes)
    (directory / "config.json").write_text(json.dumps(config))


def _drop_tensor(directory, name):
    from safetensors.torch import load_file, save_file

    weights = load_file(str(directory / "model.safetensors"))
    del weights[name]
    save_file(weights, str(directory / "model.safetensors"), metadata={"format": "pt"})


def _never_build(monkeypatch):
    import transformers

    def never(*args, **kwargs):
        raise AssertionError("a model was built")

    # the weights are never read into a model (one on the meta device, without memory, may be built to compare shapes)
    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", never)
    monkeypatch.setattr(transformers.BertModel, "from_pretrained", never)


def _one_line(directory, call):
    with pytest.raises(IsotropyValueError) as info:
        call(str(directory))
    message = str(info.value)
    assert "\n" not in message and repr(str(directory)) in message, message
    return message


@pytest.mark.parametrize("loader", ["load_transformer", "load_sentence_model"])
def test_a_config_counting_more_layers_than_the_weights_hold_is_refused_without_building(bert_dir, tmp_path,
                                                                                         monkeypatch, loader):
    from isotropy.models.encoders import load_sentence_model

    model = _copy(bert_dir, tmp_path / "m")
    _edit_config(model, num_hidden_layers=50)
    _never_build(monkeypatch)
    call = {"load_transformer": load_transformer, "load_sentence_model": load_sentence_model}[loader]
    message = _one_line(model, lambda m: call(m, device="cpu"))  # _never_build: refused before any model is built
    assert "50 layers (num_hidden_layers)" in message and "layers 0-1" in message, message


def test_measure_refuses_the_trials_layer_count_in_one_line(bert_dir, tmp_path):
    model = _copy(bert_dir, tmp_path / "m")
    _edit_config(model, num_hidden_layers=50)
    texts = tmp_path / "t.txt"
    texts.write_text("the cat sat\na dog ran\nthe mat\n")
    result = CliRunner().invoke(cli, ["measure", "--model", str(model), "--texts", str(texts), "--device", "cpu",
                                      "--metrics", "isoscore", "--layers", "last"])
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert str(model) in lines[0] and "50 layers" in lines[0] and "MISSING" not in result.output


@pytest.mark.parametrize(("change", "said"), [
    ({"hidden_size": 32}, "token embeddings"),  # the embeddings' width against hidden_size
    ({"vocab_size": 2_000_000, "hidden_size": 4096}, "token embeddings"),  # the trial's 'huge': no 30 GB asked for
    ({"intermediate_size": 64}, "intermediate.dense.weight"),  # a shape only the architecture knows
])
def test_a_config_whose_shapes_disagree_with_the_weights_is_refused_without_building(bert_dir, tmp_path,
                                                                                      monkeypatch, change, said):
    model = _copy(bert_dir, tmp_path / "m")
    _edit_config(model, **change)
    _never_build(monkeypatch)
    message = _one_line(model, lambda m: load_transformer(m, device="cpu"))
    assert said in message and "does not match its weights" in message, message


@pytest.mark.parametrize("tensor", ["encoder.layer.1.output.dense.weight", "encoder.layer.1.output.LayerNorm.bias",
                                    "embeddings.LayerNorm.weight"])
def test_weights_missing_a_tensor_are_refused_not_randomly_initialised(bert_dir, tmp_path, tensor):
    model = _copy(bert_dir, tmp_path / "m")
    _drop_tensor(model, tensor)
    message = _one_line(model, lambda m: load_transformer(m, device="cpu"))
    assert "random" in message, message


def test_the_missing_tensor_is_named_after_loading(bert_dir, tmp_path):
    """A tensor smaller than the pooler passes the count from the headers; the load's missing keys name it."""
    model = _copy(bert_dir, tmp_path / "m")
    _drop_tensor(model, "encoder.layer.1.output.LayerNorm.bias")
    message = _one_line(model, lambda m: load_transformer(m, device="cpu"))
    assert "'encoder.layer.1.output.LayerNorm.bias'" in message and "at random" in message, message


def test_weights_without_the_pooler_still_load(bert_dir, tmp_path):
    """An MLM checkpoint has no pooler (roberta-base): never used for hidden states, so not a refusal."""
    model = _copy(bert_dir, tmp_path / "m")
    _drop_tensor(model, "pooler.dense.weight")
    _drop_tensor(model, "pooler.dense.bias")
    _, network, _ = load_transformer(str(model), device="cpu")
    assert network.config.num_hidden_layers == 2


def test_matching_config_and_weights_load(bert_dir):
    _, network, _ = load_transformer(str(bert_dir), device="cpu")
    assert network.config.num_hidden_layers == 2


def test_the_fine_tuning_loader_makes_the_same_checks(bert_dir, tmp_path):
    """istar / cluster-finetune load their encoder themselves (load_encoder): a config counting 50 layers over 2 was
    built (48 random layers fine-tuned), and a missing tensor was drawn at random; both refused as load_transformer
    refuses them, and a matching directory still loads."""
    from isotropy.experiments._finetune.model import load_encoder

    more = _copy(bert_dir, tmp_path / "more")
    _edit_config(more, num_hidden_layers=50)
    assert "50" in _one_line(more, load_encoder)
    dropped = _copy(bert_dir, tmp_path / "dropped")
    _drop_tensor(dropped, "encoder.layer.1.output.LayerNorm.bias")
    message = _one_line(dropped, load_encoder)
    assert "'encoder.layer.1.output.LayerNorm.bias'" in message and "at random" in message, message
    _, encoder = load_encoder(str(bert_dir))
    assert encoder.config.num_hidden_layers == 2


def test_an_opt_model_embedding_in_its_projection_width_loads(tmp_path):
    """OPT embeds in word_embed_proj_dim and projects to hidden_size (facebook/opt-350m: 512 and 1024): the check
    of the token embeddings against (vocab_size, hidden_size) refused it as a config its weights do not match."""
    from transformers import BertTokenizerFast, OPTConfig, OPTModel

    bert = make_tiny_bert(tmp_path / "tokenizer")  # a model directory needs its tokenizer files (load_transformer)
    config = OPTConfig(vocab_size=len((bert / "vocab.txt").read_text().split()), hidden_size=32,
                       word_embed_proj_dim=16, num_hidden_layers=2, num_attention_heads=2, ffn_dim=37,
                       max_position_embeddings=64)
    torch.manual_seed(0)
    OPTModel(config).save_pretrained(tmp_path / "opt")
    BertTokenizerFast(str(bert / "vocab.txt")).save_pretrained(tmp_path / "opt")
    _, network, _ = load_transformer(str(tmp_path / "opt"), device="cpu")
    assert network.config.word_embed_proj_dim == 16 and network.config.hidden_size == 32



def _tiny_t5(directory, *, encoder_only=True, **config_changes):
    """A 2-layer T5 (its encoder alone, as sentence-T5 and GTR ship it, or the whole encoder-decoder) with the tiny
    BERT tokenizer."""
    from transformers import BertTokenizerFast, T5Config, T5EncoderModel, T5Model

    bert = make_tiny_bert(directory.parent / f"{directory.name}-tokenizer")
    config = T5Config(vocab_size=len((bert / "vocab.txt").read_text().split()), d_model=16, d_kv=8, d_ff=32,
                      num_layers=2, num_heads=2, decoder_start_token_id=0)
    torch.manual_seed(0)
    (T5EncoderModel if encoder_only else T5Model)(config).eval().save_pretrained(directory)
    BertTokenizerFast(str(bert / "vocab.txt")).save_pretrained(directory)
    if config_changes:
        _edit_config(directory, **config_changes)
    return directory


@pytest.mark.parametrize("is_encoder_decoder", [False, True])
def test_an_encoder_only_t5_loads_as_its_encoder(tmp_path, is_encoder_decoder):
    """An encoder-only T5 (T5EncoderModel; sentence-T5 and GTR, whose older configs say is_encoder_decoder) was refused
    as a config its weights do not match ("the model it describes has 10,864 parameters, the weights hold 4,544"):
    AutoModel builds the whole encoder-decoder. It loads as T5EncoderModel, its hidden states those of the saved
    model, and the fine-tuning loader takes it too."""
    from transformers import T5EncoderModel

    from isotropy.experiments._finetune.model import load_encoder

    directory = _tiny_t5(tmp_path / "t5", is_encoder_decoder=is_encoder_decoder)
    tokenizer, network, _ = load_transformer(str(directory), device="cpu")
    assert type(network) is T5EncoderModel
    reference = T5EncoderModel.from_pretrained(str(directory)).eval()
    batch = tokenizer(["the cat sat on the mat", "a dog ran"], return_tensors="pt", padding=True)
    with torch.no_grad():
        ours = network(**batch, output_hidden_states=True).hidden_states
        theirs = reference(**batch, output_hidden_states=True).hidden_states
    assert len(ours) == 3 and all(torch.equal(a, b) for a, b in zip(ours, theirs))
    assert type(load_encoder(str(directory))[1]) is T5EncoderModel


def test_an_encoder_only_t5_is_measured(tmp_path):
    directory = _tiny_t5(tmp_path / "t5")
    texts = tmp_path / "texts.txt"
    texts.write_text("the cat sat\na dog ran\nthe mat\n")
    result = CliRunner().invoke(cli, ["measure", "--model", str(directory), "--texts", str(texts),
                                      "--metrics", "isoscore"])
    assert result.exit_code == 0, result.output
    assert "16 features per layer" in result.output and "3 texts" in result.output


def test_an_encoder_decoder_t5_is_still_refused_in_one_line(tmp_path):
    directory = _tiny_t5(tmp_path / "t5", encoder_only=False)
    message = _one_line(directory, lambda d: load_transformer(d, device="cpu"))
    assert "encoder-decoder (t5)" in message and "T5EncoderModel" in message, message


def test_a_checkpoint_with_its_head_loads_its_base_model_without_transformers_load_report(tmp_path, capfd):
    """A model trial: a BertForSequenceClassification (or LlamaForCausalLM) directory printed transformers' "LOAD
    REPORT" table of UNEXPECTED head tensors, with terminal escapes, at every load; the base model's states were
    right. Now nothing is printed, and the states are those of the checkpoint's base model."""
    from transformers import BertForSequenceClassification, BertModel

    directory = make_tiny_bert(tmp_path / "classifier", head=True)
    capfd.readouterr()
    tokenizer, network, _ = load_transformer(str(directory), device="cpu")
    captured = capfd.readouterr()
    assert "LOAD REPORT" not in captured.err + captured.out and "UNEXPECTED" not in captured.err, captured.err
    reference = BertForSequenceClassification.from_pretrained(str(directory)).bert.eval()
    batch = tokenizer(["the cat sat"], return_tensors="pt")
    with torch.no_grad():
        assert torch.equal(network(**batch).last_hidden_state, reference(**batch).last_hidden_state)
    assert isinstance(network, BertModel)
