"""The geometry callbacks in real training runs: a Hugging Face Trainer and a two-process DDP Lightning run.

Both runs train tiny randomly initialised BERTs built here; the logged values are read back from
what the trainers wrote (trainer_state.json, TensorBoard events, Lightning's metrics.csv) and
checked against a recomputation from the saved weights that does not use the callbacks.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("lightning")

from _subprocess import run_script
from _tiny_models import make_tiny_bert

HERE = Path(__file__).resolve().parent
TEXTS = ["the cat sat on the mat .", "a dog ran .", "the dog sat on a cat .", "unbelievable cats",
         "cats ran on the mat", "a mat , a cat", "the dog ran far", "a cat sat .", "the mat , the dog"]


# ----------------------------------------------------------------------------- independent references
def _isoscore_from_eigenvalues(C):
    lam = np.linalg.eigvalsh(C)
    return ((lam.sum() ** 2 / (lam ** 2).sum()) - 1) / (C.shape[0] - 1)


def _pairwise_cosine_stats(X):
    """Mean cosine over distinct pairs and the top-1 rogue share, from the full n×n product tensor."""
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    off = ~np.eye(len(X), dtype=bool)
    per_dim = (U[:, None, :] * U[None, :, :])[off].mean(axis=0)
    return per_dim.sum(), per_dim.max() / per_dim.sum()


def _mean_pooled_layers(model_dir, tokenizer, texts):
    """Per-layer mean-pooled states, one text at a time (no padding), float64 numpy."""
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(model_dir).eval()
    rows = []
    with torch.no_grad():
        for text in texts:
            enc = tokenizer(text, return_tensors="pt")
            out = model(**enc, output_hidden_states=True)
            rows.append([h[0].double().mean(0).numpy() for h in out.hidden_states])
    return [np.stack([r[i] for r in rows]) for i in range(len(rows[0]))]


# ----------------------------------------------------------------------------- Hugging Face Trainer
@pytest.fixture(scope="module")
def hf_run(tmp_path_factory):
    from transformers import BertForSequenceClassification, BertTokenizerFast, Trainer, TrainingArguments

    from isotropy.training import HFGeometryCallback

    root = tmp_path_factory.mktemp("hf_geometry")
    bert = make_tiny_bert(root / "bert", n_layers=2, hidden_size=16)
    tokenizer = BertTokenizerFast.from_pretrained(bert)
    torch.manual_seed(0)
    model = BertForSequenceClassification.from_pretrained(bert, num_labels=2)
    enc = tokenizer(TEXTS * 3)
    train = [{"input_ids": ids, "attention_mask": mask, "labels": i % 2}
             for i, (ids, mask) in enumerate(zip(enc["input_ids"], enc["attention_mask"]))]
    args = TrainingArguments(output_dir=str(root / "out"), per_device_train_batch_size=4, max_steps=4,
                             learning_rate=5e-3, logging_steps=2, save_strategy="steps", save_steps=4,
                             report_to=["tensorboard"], use_cpu=True, seed=0,
                             disable_tqdm=True)
    callback = HFGeometryCallback(TEXTS[:7], every_n_steps=2, layers="all", pooling="mean",
                                  shrinkage_sample=TEXTS, zeta=0.3)
    from transformers import DataCollatorWithPadding

    trainer = Trainer(model=model, args=args, train_dataset=train, processing_class=tokenizer,
                      data_collator=DataCollatorWithPadding(tokenizer), callbacks=[callback])
    trainer.train()
    return root, tokenizer


def test_hf_trainer_logs_geometry_equal_to_a_recomputation_from_the_saved_model(hf_run):
    root, tokenizer = hf_run
    checkpoint = root / "out" / "checkpoint-4"
    history = json.loads((checkpoint / "trainer_state.json").read_text())["log_history"]
    geometry = {entry["step"]: entry for entry in history if "geometry/isoscore/layer_1" in entry}
    assert sorted(geometry) == [0, 2, 4]
    assert any("loss" in entry and entry["step"] == 2 for entry in history)  # the Trainer's own logs still happen
    logged = geometry[4]
    probe_layers = _mean_pooled_layers(checkpoint, tokenizer, TEXTS[:7])
    sample_layers = _mean_pooled_layers(checkpoint, tokenizer, TEXTS)
    assert len(probe_layers) == 3 and "geometry/isoscore/layer_0" not in logged  # layers="all": 1..L
    for i, (X, S) in list(enumerate(zip(probe_layers, sample_layers)))[1:]:
        C, Sigma = np.cov(X, rowvar=False), np.cov(S, rowvar=False)
        mean_cos, rogue = _pairwise_cosine_stats(X)
        expected = {"isoscore": _isoscore_from_eigenvalues(C),
                    "isoscore_star": _isoscore_from_eigenvalues(0.7 * C + 0.3 * Sigma),
                    "cosine_similarity_mean": mean_cos, "rogue_dimension_share": rogue}
        for name, value in expected.items():
            # float32 forward passes of padded batches vs one text at a time: agree to ~1e-6
            assert logged[f"geometry/{name}/layer_{i}"] == pytest.approx(value, rel=2e-4, abs=2e-5), (name, i)


def test_hf_trainer_geometry_reaches_tensorboard(hf_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    root, _ = hf_run
    events = sorted(root.rglob("events.out.tfevents.*"))
    assert events
    accumulator = EventAccumulator(str(events[0].parent)).Reload()
    tags = accumulator.Tags()["scalars"]
    assert "train/geometry/isoscore_star/layer_2" in tags  # the Trainer's TensorBoard callback adds "train/"
    history = json.loads((root / "out" / "checkpoint-4" / "trainer_state.json").read_text())["log_history"]
    written = {e.step: e.value for e in accumulator.Scalars("train/geometry/cosine_similarity_mean/layer_1")}
    logged = {e["step"]: e["geometry/cosine_similarity_mean/layer_1"] for e in history if "geometry/cosine_similarity_mean/layer_1" in e}
    assert sorted(written) == sorted(logged) == [0, 2, 4]
    for step, value in logged.items():
        assert written[step] == pytest.approx(value, rel=1e-6)  # TensorBoard stores float32


# ----------------------------------------------------------------------------- Lightning, 2 processes
@pytest.mark.slow
def test_lightning_ddp_two_processes_log_the_one_process_value_on_all_rows(tmp_path):
    sys.path.insert(0, str(HERE))
    import _lightning_geometry_run as run

    from isotropy import cosine_similarity_mean, isoscore, isoscore_star, rogue_dimension_share, twonn_dimension
    from isotropy.models import pool_hidden_states
    from isotropy.training import GeometryProbe

    done = run_script("_lightning_geometry_run.py", tmp_path, 2)
    assert done.returncode == 0, done.stderr[-3000:]
    (metrics_csv,) = (tmp_path / "csv").rglob("metrics.csv")
    rows = list(csv.DictReader(metrics_csv.open()))
    geometry_rows = [r for r in rows if r.get("geometry/isoscore/layer_1")]
    assert sorted(int(r["step"]) for r in geometry_rows) == [0, 2, 4]  # step 0, then every 2 steps, each once
    last = max(geometry_rows, key=lambda r: int(r["step"]))

    model = run.tiny_bert()
    model.load_state_dict(torch.load(tmp_path / "final.pt"))
    model.eval()
    probe = torch.load(tmp_path / "probe.pt")
    names = ("isoscore", "isoscore_star", "cosine_similarity_mean", "rogue_dimension_share", "twonn_dimension")
    one_process = GeometryProbe(probe, metrics=names, pooling="mean").measure(model, rank=0, world_size=1)
    assert sorted(one_process) == sorted(f"geometry/{n}/layer_{i}" for n in names for i in (1, 2))
    with torch.no_grad():
        states = model(**probe, output_hidden_states=True).hidden_states
    for i, hidden in list(enumerate(states))[1:]:  # layers="all": the transformer layers
        X = pool_hidden_states(hidden, probe["attention_mask"], pooling="mean").numpy()
        pure = {"isoscore": isoscore(X), "isoscore_star": isoscore_star(X, zeta=0.2),
                "cosine_similarity_mean": cosine_similarity_mean(X), "rogue_dimension_share": rogue_dimension_share(X),
                "twonn_dimension": twonn_dimension(X)}
        for name in names:
            key = f"geometry/{name}/layer_{i}"
            assert float(last[key]) == pytest.approx(one_process[key], rel=1e-10, abs=1e-10), key
            assert one_process[key] == pytest.approx(pure[name], rel=1e-10, abs=1e-10), key


# ----------------------------------------------------------------------------- Hugging Face Trainer, 2 processes
@pytest.mark.slow
def test_hf_trainer_ddp_two_processes_log_the_one_process_value_on_all_rows(tmp_path):
    """torchrun with two CPU processes (gloo): each rank embeds half the probe, the logged value is the whole probe's."""
    sys.path.insert(0, str(HERE))
    import _lightning_geometry_run as run

    from isotropy import cosine_similarity_mean, isoscore, isoscore_star, rogue_dimension_share, twonn_dimension
    from isotropy.models import pool_hidden_states

    done = run_script("_hf_geometry_run.py", tmp_path, nproc=2)
    assert done.returncode == 0, done.stderr[-3000:]
    history = json.loads((tmp_path / "log_history.json").read_text())
    geometry = {entry["step"]: entry for entry in history if "geometry/isoscore/layer_1" in entry}
    assert sorted(geometry) == [0, 2, 4]
    # both ranks computed the same (synced) values at every measurement
    rank0, rank1 = (json.loads((tmp_path / f"history_rank{r}.json").read_text()) for r in (0, 1))
    assert [step for step, _ in rank0] == [step for step, _ in rank1] == [0, 2, 4]
    for (_, a), (_, b) in zip(rank0, rank1):
        assert a == pytest.approx(b, rel=1e-12, abs=1e-12)

    model = run.tiny_bert()
    model.load_state_dict(torch.load(tmp_path / "final.pt"))
    model.eval()
    probe = run.probe_inputs()
    with torch.no_grad():
        states = model(**probe, output_hidden_states=True).hidden_states
    for i, hidden in list(enumerate(states))[1:]:  # layers="all": the transformer layers
        X = pool_hidden_states(hidden, probe["attention_mask"], pooling="mean").numpy()
        pure = {"isoscore": isoscore(X), "isoscore_star": isoscore_star(X, zeta=0.2),
                "cosine_similarity_mean": cosine_similarity_mean(X), "rogue_dimension_share": rogue_dimension_share(X),
                "twonn_dimension": twonn_dimension(X)}
        for name, value in pure.items():
            assert geometry[4][f"geometry/{name}/layer_{i}"] == pytest.approx(value, rel=1e-10, abs=1e-10), (name, i)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"metrics": ("isoscore", "mean_cosine")}, "Got 'mean_cosine' instead. Did you mean 'cosine_similarity_mean'?"),
    ({"metrics": ("twonn",)}, "Did you mean 'twonn_dimension'?"),
    ({"metrics": ("partition_isotropy",)}, ("Got 'partition_isotropy' instead: a metric of the toolkit, "
                                             "but not one GeometryProbe takes.")),
    ({"pooling": "cls"}, "Got 'cls' instead. Did you mean 'first'?"),
    ({"layers": "al"}, "The 'layers' parameter of GeometryProbe must be 'all', 'last' or hidden-state indices"),
])
def test_the_probe_refuses_old_or_bad_names_in_its_constructor(kwargs, message):
    from isotropy._utils.validation import IsotropyValueError
    from isotropy.training import GeometryProbe

    with pytest.raises(IsotropyValueError) as info:
        GeometryProbe(["one", "two", "three"], **kwargs)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_every_table_name_with_a_class_is_accepted_by_the_probe():
    from isotropy.metrics.table import metric_names
    from isotropy.training import GeometryProbe

    probe = GeometryProbe(["one", "two", "three"], metrics=metric_names(torchmetric=True))
    assert list(probe.metric_factories) == metric_names(torchmetric=True)


_FIRST_MEASUREMENT = r"""
import sys
sys.path.insert(0, sys.argv[1])
import torch
from _lightning_geometry_run import probe_inputs, tiny_bert
from isotropy.training import HFGeometryCallback, LightningGeometryCallback, HiddenStateRegulariser

names = ["isoscore", "isoscore_star", "cosine_similarity_mean", "rogue_dimension_share", "twonn_dimension"]
for cls in (HFGeometryCallback, LightningGeometryCallback):
    callback = cls(probe_inputs(), metrics=names, shrinkage_sample=probe_inputs())
    for module in ("torchmetrics", "isotropy.training.metrics", "isotropy.metrics.isoscore", "isotropy.metrics.rogue",
                   "isotropy.metrics.dimension"):
        assert module in sys.modules, (cls.__name__, module)
HiddenStateRegulariser("cosreg")
assert "isotropy.torch" in sys.modules
model = tiny_bert()
before = set(sys.modules)
callback.probe.measure(model)
new = sorted(m for m in set(sys.modules) - before if m.split(".")[0] in ("isotropy", "torchmetrics", "scipy",
                                                                          "sklearn", "lightning_utilities"))
assert not new, new
print("ok")
"""


def test_the_callbacks_import_at_construction_what_the_first_measurement_needs(tmp_path):
    """A fresh interpreter: the callbacks' constructors import torchmetrics, the metric classes and the modules
    their compute reads (the regulariser its penalties), so the first measurement imports none of them."""
    script = tmp_path / "first.py"
    script.write_text(_FIRST_MEASUREMENT)
    done = subprocess.run([sys.executable, str(script), str(HERE)], check=False, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-2000:]
