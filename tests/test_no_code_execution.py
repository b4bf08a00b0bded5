"""No file runs code: a payload planted in each place a file is read never runs.

Each payload, if executed, creates a marker file; every test asserts a one-line refusal and that
the marker does not exist. Places: an I-STAR checkpoint read on ``--resume``, a model directory
with custom code (``auto_map`` in ``config.json`` / ``tokenizer_config.json``, a foreign class in
``modules.json``) loaded by every loader, ``.pt`` embeddings and ``.npy`` object arrays.
"""

from __future__ import annotations

import io
import json
import os
import sys

import numpy as np
import pytest
import torch

from conftest import MarkerPayload
from isotropy._utils.validation import IsotropyValueError


def _tiny_bert_dir(path):
    from transformers import AutoTokenizer, BertConfig, BertModel

    from isotropy.models.resolve import resolve_model

    tokenizer = AutoTokenizer.from_pretrained(resolve_model("all-MiniLM-L6-v2"))
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32, max_position_embeddings=32)).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def remote_code_dirs(tmp_path_factory):
    """Model directories whose custom module would create ``marker`` when imported."""
    root = tmp_path_factory.mktemp("remote-code")
    marker = root / "RAN"
    module = f"open({str(marker)!r}, 'w').close()\nfrom transformers import BertConfig as EvilConfig\n"
    dirs = {}
    for where in ("config.json", "tokenizer_config.json"):
        path = _tiny_bert_dir(root / where.split(".")[0])
        (path / "evil.py").write_text(module)
        content = json.loads((path / where).read_text())
        content["auto_map"] = {"AutoConfig": "evil.EvilConfig", "AutoModel": "evil.EvilConfig",
                               "AutoTokenizer": ["evil.EvilConfig", None]}
        (path / where).write_text(json.dumps(content))
        dirs[where] = path
    path = _tiny_bert_dir(root / "modules")
    (path / "evil.py").write_text(module)
    (path / "modules.json").write_text(json.dumps([{"idx": 0, "name": "0", "path": "", "type": "evil.EvilConfig"}]))
    dirs["modules.json"] = path
    return dirs, marker


# modules.json is read by sentence-transformers only: the plain transformers loaders never import from it
@pytest.mark.parametrize(("where", "loader"), [
    (where, loader) for where in ("config.json", "tokenizer_config.json")
    for loader in ("load_transformer", "load_sentence_model", "load_encoder")] + [("modules.json", "load_sentence_model")])
def test_a_model_directory_with_custom_code_is_refused_and_never_runs(remote_code_dirs, where, loader, monkeypatch):
    from isotropy.experiments._finetune.model import load_encoder
    from isotropy.models.encoders import load_sentence_model
    from isotropy.models.loading import load_transformer

    dirs, marker = remote_code_dirs
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n" * 10))  # a prompt, if any, would be answered "yes"
    load = {"load_transformer": load_transformer, "load_sentence_model": load_sentence_model,
            "load_encoder": load_encoder}[loader]
    with pytest.raises(IsotropyValueError, match="never") as info:
        load(str(dirs[where]))
    assert "\n" not in str(info.value) and str(dirs[where]) in str(info.value)
    assert not marker.exists()


def test_measure_refuses_a_model_with_custom_code_in_one_line(remote_code_dirs, tmp_path):
    import subprocess

    dirs, marker = remote_code_dirs
    texts = tmp_path / "t.txt"
    texts.write_text("a cat sat\nthe dog ran\n")
    out = subprocess.run([sys.executable, "-m", "isotropy", "measure", "--model", str(dirs["config.json"]),
                          "--texts", str(texts)], input="y\ny\ny\n", capture_output=True, text=True, timeout=300, check=False,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 2, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "auto_map" in lines[0], out.stderr
    assert "trust" not in out.stdout.lower()
    assert not marker.exists()


def test_a_pickled_payload_in_a_checkpoint_never_runs(tmp_path):
    from isotropy.models._safety import load_checkpoint

    marker = tmp_path / "RAN"
    checkpoint = tmp_path / "run.pt"
    torch.save({"model": {}, "step": 1, "payload": MarkerPayload(marker)}, checkpoint)
    with pytest.raises(IsotropyValueError, match="weights_only=True") as info:
        load_checkpoint(checkpoint)
    assert "\n" not in str(info.value) and not marker.exists()
    # the payload is real: full unpickling would have run it
    torch.load(checkpoint, weights_only=False)
    assert marker.exists()


@pytest.mark.parametrize("content", [b"", b"\x00" * 100, os.urandom(4096), b"PK\x03\x04 not a zip"])
def test_a_random_or_truncated_checkpoint_is_refused_in_one_line(tmp_path, content):
    from isotropy.models._safety import load_checkpoint

    checkpoint = tmp_path / "run.pt"
    checkpoint.write_bytes(content)
    with pytest.raises(IsotropyValueError, match="could not be read") as info:
        load_checkpoint(checkpoint)
    assert "\n" not in str(info.value)


def test_a_device_or_fifo_is_refused_as_a_checkpoint_or_weights_without_reading_it(tmp_path):
    # load_checkpoint('/dev/zero') read the device without end (24 GB before the kernel killed it); a FIFO named
    # model.safetensors blocked `isotropy measure --model DIR` for ever
    from isotropy.models._safety import load_checkpoint
    from isotropy.models._weights import check_safetensors

    with pytest.raises(IsotropyValueError, match=r"^The checkpoint '/dev/zero' is a character device, not a regular file; expected a "
                                                 r"checkpoint file written by isotropy\.$"):
        load_checkpoint("/dev/zero")
    fifo = tmp_path / "model.safetensors"
    os.mkfifo(fifo)
    with pytest.raises(IsotropyValueError, match=r"^The weights file '.*model\.safetensors' is a FIFO \(named pipe\), not a regular "
                                                 r"file; expected a complete \.safetensors file"):
        check_safetensors(fifo)
    with pytest.raises(IsotropyValueError, match=r"^The weights file '/dev/zero' is a character device"):
        check_safetensors("/dev/zero")


def test_a_checkpoint_of_plain_data_is_read_back_exactly(tmp_path):
    from isotropy.models._safety import load_checkpoint

    state = {"model": {"w": torch.arange(6.0).reshape(2, 3)}, "step": 3, "history": {"loss": [0.5, None]},
             "rng": torch.get_rng_state(), "optimizer": {"param_groups": [{"lr": 1e-3, "params": [0]}]}}
    torch.save(state, tmp_path / "run.pt")
    back = load_checkpoint(tmp_path / "run.pt")
    assert back["step"] == 3 and back["history"] == {"loss": [0.5, None]}
    assert torch.equal(back["model"]["w"], state["model"]["w"]) and torch.equal(back["rng"], state["rng"])


def test_istar_resume_refuses_a_planted_checkpoint(tmp_path, monkeypatch):
    from conftest import shared_data_path
    from isotropy.experiments._finetune import train as train_module
    from isotropy.experiments._runner import execute
    from isotropy.experiments.istar.experiment import EXPERIMENT

    model_dir = _tiny_bert_dir(tmp_path / "tiny")
    config = EXPERIMENT.config("sst2-cpu", model=str(model_dir), train_size=16, validation_size=8, batch_size=8,
                               eval_batch_size=16, seeds=[0], lambdas=[-1.0], cosreg=False, checkpoint_every=1,
                               **{"istar.shrinkage_sample": 8, "max_length": 16})
    results, marker = tmp_path / "results", tmp_path / "RAN"

    def sweep(**kwargs):
        return execute(EXPERIMENT, config, results_dir=results, device="cpu", quiet=True, plot=False,
                       data_dir=shared_data_path("glue_data").parent, **kwargs)

    original = train_module.train_run
    monkeypatch.setattr(train_module, "train_run", lambda spec, *a, **k: original(  # the base run finishes
        spec, *a, **k, interrupt_at_step=None if spec.method == "none" else 1))
    with pytest.raises(KeyboardInterrupt):
        sweep()
    monkeypatch.setattr(train_module, "train_run", original)
    [checkpoint] = (results / "checkpoints").glob("istar_*.pt")
    torch.save({"model": {}, "payload": MarkerPayload(marker)}, checkpoint)  # planted in place of the real one
    with pytest.raises(IsotropyValueError, match="weights_only=True"):
        sweep(resume=True)
    assert not marker.exists()
    torch.save({"model": {}, "step": 1}, checkpoint)  # plain data, but not a checkpoint of ours
    with pytest.raises(IsotropyValueError, match=r"lacks \['history'"):
        sweep(resume=True)


def test_embeddings_readers_never_unpickle(tmp_path):
    from isotropy.io.embeddings import read_embeddings

    marker = tmp_path / "RAN"
    torch.save({"X": torch.zeros(3, 2), "payload": MarkerPayload(marker)}, tmp_path / "x.pt")
    np.save(tmp_path / "x.npy", np.array([MarkerPayload(marker), 1], dtype=object), allow_pickle=True)
    for name in ("x.pt", "x.npy"):
        with pytest.raises((IsotropyValueError, ValueError)) as info:
            read_embeddings(tmp_path / name)
        assert "\n" not in str(info.value)
    assert not marker.exists()


def test_the_sentence_transformers_loader_refuses_pickled_weights(tmp_path):
    """A sentence-transformers directory whose weights are a pickle is refused before anything is unpickled."""
    from isotropy.models.encoders import load_sentence_model

    model_dir = _tiny_bert_dir(tmp_path / "st")
    (model_dir / "model.safetensors").unlink()
    marker = tmp_path / "RAN"
    torch.save({"payload": MarkerPayload(marker)}, model_dir / "pytorch_model.bin")
    with pytest.raises(IsotropyValueError, match="never unpickles") as info:
        load_sentence_model(str(model_dir))
    assert "\n" not in str(info.value) and not marker.exists()


def test_refusals_never_repeat_torchs_advice_to_unpickle(tmp_path):
    """torch's UnpicklingError says how to load the file with weights_only=False; our one line must not."""
    from isotropy.io.embeddings import read_embeddings
    from isotropy.models._safety import load_checkpoint

    torch.save({"X": torch.zeros(3, 2), "payload": MarkerPayload(tmp_path / "RAN")}, tmp_path / "x.pt")
    for call in (lambda: read_embeddings(tmp_path / "x.pt"), lambda: load_checkpoint(tmp_path / "x.pt")):
        with pytest.raises(ValueError) as info:
            call()
        message = str(info.value)
        assert "never unpickles" in message and "weights_only=False" not in message and "can still be loaded" not in message
    assert not (tmp_path / "RAN").exists()


def _sentence_model_with_module_folder(root, where):
    """A sentence-transformers directory whose Transformer module lives in ``0_T/`` and asks for custom code there.

    The trial's /tmp/trial_sec/models/sub: the top-level files were clean (isotropy's check passed it) and
    only sentence-transformers stopped ``0_T/`` ('auto_map' in its config.json, trust_remote_code in the
    *_args of its sentence_bert_config.json).
    """
    path = _tiny_bert_dir(root / "top")
    module = _tiny_bert_dir(path / "0_T")
    (module / "evil.py").write_text(f"open({str(root / 'RAN')!r}, 'w').close()\n"
                                    f"from transformers import BertConfig as EvilConfig\n")
    (path / "1_Pooling").mkdir()
    (path / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 16,
                                                                "pooling_mode_mean_tokens": True}))
    (path / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "0_T", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    if where == "0_T/config.json":
        content = json.loads((module / "config.json").read_text())
        content["auto_map"] = {"AutoConfig": "evil.EvilConfig", "AutoModel": "evil.EvilConfig"}
        (module / "config.json").write_text(json.dumps(content))
    else:
        (path / where).write_text(json.dumps({"max_seq_length": 32, "model_args": {"trust_remote_code": True},
                                              "config_args": {"trust_remote_code": True},
                                              "tokenizer_args": {"trust_remote_code": True}}))
    return path


@pytest.mark.parametrize("where", ["0_T/config.json", "0_T/sentence_bert_config.json", "sentence_bert_config.json"])
@pytest.mark.parametrize("loader", ["load_sentence_model", "load_transformer"])
def test_a_module_folder_asking_for_custom_code_is_refused_before_anything_loads(tmp_path, where, loader,
                                                                                  monkeypatch):
    import sentence_transformers
    import transformers

    from isotropy.models.encoders import load_sentence_model
    from isotropy.models.loading import load_transformer

    path = _sentence_model_with_module_folder(tmp_path, where)

    def never(*args, **kwargs):
        raise AssertionError("a loader ran before the refusal")

    monkeypatch.setattr(sentence_transformers.SentenceTransformer, "__init__", never)
    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained", never)
    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", never)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", never)
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n" * 10))
    load = {"load_sentence_model": load_sentence_model, "load_transformer": load_transformer}[loader]
    with pytest.raises(IsotropyValueError, match="never runs code") as info:
        load(str(path))
    message = str(info.value)
    assert "\n" not in message and str(path) in message and where in message
    assert not (tmp_path / "RAN").exists()
