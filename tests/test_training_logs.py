"""Reading logged geometry back (isotropy.training.logs) from real Hugging Face, Lightning and TensorBoard logs.

The runs are real (a tiny random BERT trained a few steps by each framework with the geometry
callbacks); the expected values are those the frameworks wrote, read with json, csv and
TensorBoard's own EventAccumulator, independently of the reader under test.
"""

from __future__ import annotations

import csv
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from _fuzz import spliced
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from isotropy import IsotropyValueError
from isotropy.cli import main
from isotropy.training.logs import plot_geometry_log, read_geometry_log

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _data():
    g = torch.Generator().manual_seed(2)
    return [{"input_ids": torch.randint(5, 19, (7,), generator=g), "attention_mask": torch.ones(7, dtype=torch.long),
             "labels": torch.tensor(i % 2)} for i in range(24)]


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory):
    from _lightning_geometry_run import probe_inputs, tiny_bert
    from transformers import Trainer, TrainingArguments

    from isotropy.training import HFGeometryCallback

    out = tmp_path_factory.mktemp("hf") / "out"
    callback = HFGeometryCallback(probe_inputs(), every_n_steps=2, pooling="mean", metrics=("isoscore",))
    args = TrainingArguments(output_dir=str(out), per_device_train_batch_size=4, max_steps=4, learning_rate=0.5,
                             optim="sgd", logging_steps=1, save_strategy="steps", save_steps=4,
                             report_to=["tensorboard"], use_cpu=True, seed=0, disable_tqdm=True)
    torch.manual_seed(0)
    Trainer(model=tiny_bert(), args=args, train_dataset=_data(), callbacks=[callback]).train()
    return out


@pytest.fixture(scope="module")
def lightning_dir(tmp_path_factory):
    import lightning as L
    from _lightning_geometry_run import Module, probe_inputs
    from lightning.pytorch.loggers import CSVLogger

    from isotropy.training import LightningGeometryCallback

    out = tmp_path_factory.mktemp("lightning")
    callback = LightningGeometryCallback(probe_inputs(), every_n_steps=2, model="model", pooling="mean",
                                         metrics=("isoscore",))
    trainer = L.Trainer(accelerator="cpu", devices=1, max_steps=4, logger=CSVLogger(out, name="run"),
                        callbacks=[callback], enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, log_every_n_steps=1, deterministic=True)
    trainer.fit(Module(), torch.utils.data.DataLoader(_data(), batch_size=4))
    return out


def _as_dict(frame):
    return {(m, int(layer), int(step)): float(v) for m, layer, step, v in
            frame[["metric", "layer", "step", "value"]].itertuples(index=False)}


def test_a_hugging_face_output_directory_reads_back_its_trainer_state(hf_dir):
    history = json.loads((hf_dir / "checkpoint-4" / "trainer_state.json").read_text())["log_history"]
    expected = {("isoscore", int(k.rsplit("_", 1)[1]), e["step"]): v for e in history for k, v in e.items()
                if k.startswith("geometry/isoscore/layer_")}
    assert len(expected) >= 6
    frame = read_geometry_log(hf_dir)
    assert list(frame.columns) == ["metric", "layer", "step", "value", "source"]
    assert _as_dict(frame) == expected
    assert _as_dict(read_geometry_log(hf_dir / "checkpoint-4" / "trainer_state.json")) == expected


def test_tensorboard_events_read_back_under_the_trainers_prefix(hf_dir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (events_dir,) = {p.parent for p in hf_dir.rglob("events.out.tfevents.*")}
    accumulator = EventAccumulator(str(events_dir)).Reload()
    expected = {("isoscore", int(tag.rsplit("_", 1)[1]), e.step): e.value for tag in accumulator.Tags()["scalars"]
                if tag.startswith("train/geometry/isoscore/layer_") for e in accumulator.Scalars(tag)}
    assert len(expected) >= 6
    frame = read_geometry_log(events_dir)
    got = _as_dict(frame)
    assert got.keys() == expected.keys()
    assert all(got[k] == pytest.approx(expected[k], rel=1e-7) for k in expected)
    hf = _as_dict(read_geometry_log(hf_dir))
    assert all(got[k] == pytest.approx(hf[k], rel=1e-6) for k in hf)  # TensorBoard stores float32


def test_a_lightning_csv_logger_directory_reads_back_its_metrics(lightning_dir):
    (metrics,) = lightning_dir.rglob("metrics.csv")
    expected = {}
    for row in csv.DictReader(metrics.open()):
        for key, value in row.items():
            if key.startswith("geometry/isoscore/layer_") and value:
                expected[("isoscore", int(key.rsplit("_", 1)[1]), int(row["step"]))] = float(value)
    assert len(expected) >= 4
    assert _as_dict(read_geometry_log(lightning_dir)) == expected


def test_isotropy_plot_draws_a_training_log(hf_dir, lightning_dir, tmp_path, capsys):
    for run, out in ((hf_dir, tmp_path / "hf"), (lightning_dir, tmp_path / "lightning")):
        main(["plot", str(run), "--out", str(out), "--format", "png", "--dpi", "40"])
        printed = capsys.readouterr().out.split()
        assert sorted(printed) == sorted([str(out / "geometry.csv"), str(out / "geometry_isoscore.png")])
        assert (out / "geometry_isoscore.png").read_bytes().startswith(b"\x89PNG")
        table = list(csv.DictReader((out / "geometry.csv").open()))
        assert {r["metric"] for r in table} == {"isoscore"} and len(table) == len(read_geometry_log(run))


def test_the_geometry_table_of_the_figures_is_redrawn_as_the_log_it_came_from(lightning_dir, tmp_path, capsys):
    """`isotropy plot FIGURES/geometry.csv` (the table `plot` wrote beside its figures, or read_geometry_log's table
    saved with to_csv) draws the figures of the log again, beside the table, without writing over it; it was refused
    as a log without geometry (a user trial)."""
    first = tmp_path / "first"
    main(["plot", str(lightning_dir), "--out", str(first), "--format", "png", "--dpi", "40"])
    capsys.readouterr()
    table = first / "geometry.csv"
    written = table.read_bytes()
    from pandas.testing import assert_frame_equal

    assert_frame_equal(read_geometry_log(table), read_geometry_log(lightning_dir))
    (first / "geometry_isoscore.png").unlink()
    main(["plot", str(table), "--format", "png", "--dpi", "40"])  # beside the table, which stays as it was
    assert capsys.readouterr().out.split() == [str(first / "geometry_isoscore.png")]
    assert (first / "geometry_isoscore.png").read_bytes().startswith(b"\x89PNG") and table.read_bytes() == written
    again = tmp_path / "again"
    main(["plot", str(table), "--out", str(again), "--format", "png", "--dpi", "40"])  # elsewhere: a copy of the table
    assert (again / "geometry.csv").read_bytes() == written
    bad = tmp_path / "bad.csv"
    bad.write_text("metric,layer,step,value\nisoscore,one,0,0.5\n")
    with pytest.raises(IsotropyValueError, match=r"has the metric 'isoscore' and layer 'one' on line 2: expected a "
                                                 r"metric name and a layer number"):
        read_geometry_log(bad)
    bad.write_text("metric,layer,step,value\nisoscore,1,0,high\n")
    with pytest.raises(IsotropyValueError, match=r"has the value 'high' on line 2: expected a number"):
        read_geometry_log(bad)


def test_a_training_logs_figures_go_into_a_run_folder_only_under_its_figures(hf_dir, tmp_path, capsys):
    """--out into an 'isotropy run' folder put geometry.csv and the figures among the run's results (the measure
    JSON's figure was refused there already); only the run's figures/ is taken, under its lock."""
    import shutil

    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"experiment": "layer-geometry", "status": "finished"}))
    with pytest.raises(SystemExit) as info:
        main(["plot", str(hf_dir), "--out", str(run / "logs")])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.startswith(f"Error: --out {str(run / 'logs')!r} is a folder of the run in "
                                                   f"{str(run.resolve())!r}: figures there would count as its results")
    assert sorted(p.name for p in run.iterdir()) == ["run.json"]
    log = run / "hf"  # a log inside the run, without --out: its default folder named
    shutil.copytree(hf_dir, log)
    with pytest.raises(SystemExit) as info:
        main(["plot", str(log)])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.startswith(f"Error: The log's figures folder {str(log / 'geometry-figures')!r} "
                                                   f"(where the figures go without --out) is a folder of the run")
    assert f"Give --out {str(run.resolve() / 'figures')!r} or a folder outside the run." in err
    main(["plot", str(log), "--out", str(run / "figures"), "--format", "png", "--dpi", "40"])
    assert (run / "figures" / "geometry.csv").is_file() and (run / "figures" / "geometry_isoscore.png").is_file()


def test_the_figure_has_one_line_per_layer_and_a_heat_map():
    import pandas as pd

    frame = pd.DataFrame({"metric": ["a"] * 6, "layer": [1, 1, 1, 2, 2, 2], "step": [0, 5, 10] * 2,
                          "value": [0.1, 0.2, 0.3, 0.4, 0.5, np.nan], "source": "x"})
    (fig,) = plot_geometry_log(frame).values()
    lines_ax, map_ax = fig.axes[:2]
    assert [line.get_label() for line in lines_ax.get_lines()] == ["layer 1", "layer 2"]
    image = map_ax.get_images()[0].get_array()
    assert image.shape == (2, 3) and image.mask[1, 2] and image[0, 2] == pytest.approx(0.3)


@pytest.mark.parametrize(("content", "name", "match"), [
    ('{"log_history": [{"step": 1, "loss": 0.5}]}', "trainer_state.json", "holds no 'geometry/<metric>/layer_<i>'"),
    ("not json", "trainer_state.json", "not a Hugging Face trainer_state.json"),
    ("epoch,loss\n0,1\n", "metrics.csv", "no 'step' column"),
    # hostile or corrupt files: one line each, not a RecursionError, OverflowError or csv.Error traceback
    ("[" * 100_000, "trainer_state.json", "not a Hugging Face trainer_state.json"),
    ('{"log_history": [{"step": 1e400, "geometry/x/layer_0": 0.1}]}', "trainer_state.json",
     "has the step 'inf': expected a finite number"),
    ("step,geometry/x/layer_0\ninf,0.1\n", "metrics.csv", "has the step 'inf': expected a finite number"),
    ('{"log_history": [{"step": 1' + "0" * 400 + ', "geometry/x/layer_0": 0.1}]}', "trainer_state.json",
     "has the step '1000000000.*: expected a finite number"),
    ('{"log_history": [{"step": 1' + "0" * 5000 + '}]}', "trainer_state.json", "not a Hugging Face trainer_state"),
    ("step,geometry/x/layer_0\n1,abc\n", "metrics.csv", "has the value 'abc' in column 'geometry/x/layer_0'"),
    ("step,geometry/x/layer_0\n" + "1," + "9" * 200_000 + "\n", "metrics.csv",
     "is not a readable CSV \\(field larger than field limit"),
])
def test_logs_without_geometry_are_refused_in_one_line(tmp_path, content, name, match):
    (tmp_path / name).write_text(content)
    with pytest.raises(IsotropyValueError, match=match) as info:
        read_geometry_log(tmp_path)
    assert "\n" not in str(info.value)


def test_an_out_folder_that_cannot_be_made_is_refused_naming_out(hf_dir, tmp_path, capsys):
    """``isotropy plot LOG --out afile/sub`` (a file on the way) printed Python's "[Errno 20] Not a directory:
    'afile/sub'", naming neither --out nor what it expects (a user trial); nothing is written."""
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    out = blocker / "sub" / "deeper"
    with pytest.raises(SystemExit) as info:
        main(["plot", str(hf_dir), "--out", str(out), "--format", "png", "--dpi", "40"])
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert err == (f"Error: --out {str(out)!r} cannot be made ({str(blocker)!r} on its way is a file, not a directory); "
                   f"expected a folder path where this user can write.\n")
    assert blocker.read_text() == "x" and sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_a_directory_without_a_log_is_refused(tmp_path, capsys):
    with pytest.raises(IsotropyValueError, match="holds no training log"):
        read_geometry_log(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(["plot", str(tmp_path)])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "holds no training log" in err
    # PATH is none of the three kinds plot draws: the other two are named too
    assert err.rstrip().endswith("; 'isotropy plot' also draws the results folder of an 'isotropy run' (it holds a "
                                 "run.json) and the JSON of 'isotropy measure --model M --texts T --json FILE'.")


def test_the_latest_checkpoint_wins_and_a_resumed_step_keeps_its_last_value(tmp_path):
    for step, value in ((2, 0.5), (10, 0.7)):
        folder = tmp_path / f"checkpoint-{step}"
        folder.mkdir()
        history = [{"step": 0, "geometry/x/layer_0": 0.1}, {"step": step, "geometry/x/layer_0": 0.2},
                   {"step": step, "geometry/x/layer_0": value}]
        (folder / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    assert _as_dict(read_geometry_log(tmp_path)) == {("x", 0, 0): 0.1, ("x", 0, 10): 0.7}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=400), name=st.sampled_from(["trainer_state.json", "metrics.csv", "geometry.csv"]),
       mutate=st.booleans())
def test_fuzzed_logs_read_or_are_refused_in_one_line(tmp_path, data, name, mutate):
    """Any bytes, or a real log (or the geometry.csv table of `isotropy plot`) with bytes spliced in: a table of
    finite values, or one IsotropyValueError line."""
    if mutate:  # a valid log of each kind with the fuzzed bytes inside it
        valid = {"trainer_state.json": json.dumps({"log_history": [{"step": 3, "geometry/x/layer_1": 0.25}]}),
                 "metrics.csv": "step,geometry/x/layer_1\n3,0.25\n",
                 "geometry.csv": "metric,layer,step,value,source\nx,1,3,0.25,run/metrics.csv\n"}[name].encode()
        data = spliced(valid, data)
    (tmp_path / name).write_bytes(data)
    try:
        frame = read_geometry_log(tmp_path / name)
    except IsotropyValueError as exc:
        assert "\n" not in str(exc)
    else:
        assert list(frame.columns) == ["metric", "layer", "step", "value", "source"]
        assert np.isfinite(frame["value"]).all() and (frame["layer"] >= 0).all()


def test_lightning_versions_are_read_in_version_order_with_a_warning(tmp_path, capsys):
    """version_10 is later than version_9 (a plain sort put it before version_2, so version_2's value won at a
    shared step), and reading several versions as one run says so, in one line from 'isotropy plot'."""
    from isotropy.cli import main

    for version in (2, 10):
        folder = tmp_path / "lightning_logs" / f"version_{version}"
        folder.mkdir(parents=True)
        (folder / "metrics.csv").write_text(f"step,geometry/x/layer_0\n{version},0.{version}\n4,{version}\n")
    with pytest.warns(UserWarning, match=r"2 Lightning logs under .*version_2, lightning_logs/version_10\) are read as one run"):
        frame = read_geometry_log(tmp_path)
    assert _as_dict(frame) == {("x", 0, 2): 0.2, ("x", 0, 4): 10.0, ("x", 0, 10): 0.1}
    main(["plot", str(tmp_path), "--format", "png", "--out", str(tmp_path / "figures")])
    err = capsys.readouterr().err
    assert err.startswith("Warning: read_geometry_log: 2 Lightning logs under") and err.count("\n") == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one version: no warning
        assert _as_dict(read_geometry_log(tmp_path / "lightning_logs" / "version_2")) == {("x", 0, 2): 0.2, ("x", 0, 4): 2.0}


def test_tensorboard_runs_in_several_folders_warn_and_one_folder_does_not(tmp_path):
    """Event files in two folders are two runs read as one (warned); two event files of one folder are one run."""
    from torch.utils.tensorboard import SummaryWriter

    for folder, value in (("run_a", 0.25), ("run_a", 0.5), ("run_b", 0.75)):
        with SummaryWriter(str(tmp_path / folder), filename_suffix=f".{value}") as writer:
            writer.add_scalar("geometry/x/layer_0", value, int(value * 4))
    assert len(list((tmp_path / "run_a").glob("events.out.tfevents.*"))) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _as_dict(read_geometry_log(tmp_path / "run_a")) == {("x", 0, 1): 0.25, ("x", 0, 2): 0.5}
    with pytest.warns(UserWarning, match=r"2 TensorBoard logs under .*\(run_a, run_b\) are read as one run, in "
                                         r"the order their event files were written"):
        assert _as_dict(read_geometry_log(tmp_path)) == {("x", 0, 1): 0.25, ("x", 0, 2): 0.5, ("x", 0, 3): 0.75}


def test_tensorboard_runs_are_read_in_the_order_they_were_written(tmp_path):
    """Hugging Face names run folders runs/Dec01_..., runs/Nov30_...: by name, December's run came first and
    November's value won at a shared step. The event files' creation times (in their names) order them (by name,
    November's run starting before December's would be a separate run, refused)."""
    from torch.utils.tensorboard import SummaryWriter

    for folder, written, steps in (("runs/Nov30_host", 1_700_000_000, {2: 0.25, 4: 0.25}),
                                   ("runs/Dec01_host", 1_701_000_000, {4: 0.5})):
        with SummaryWriter(str(tmp_path / folder)) as writer:
            for step, value in steps.items():
                writer.add_scalar("geometry/x/layer_0", value, step)
        (event,) = (tmp_path / folder).glob("events.out.tfevents.*")
        parts = event.name.split(".")
        event.rename(event.with_name(".".join([*parts[:3], str(written), *parts[4:]])))
    with pytest.warns(UserWarning, match="2 TensorBoard logs"):
        frame = read_geometry_log(tmp_path)
    assert _as_dict(frame) == {("x", 0, 2): 0.25, ("x", 0, 4): 0.5}  # the resumed run's value at the shared step


def test_lightning_versions_of_separate_runs_are_refused_in_one_line(tmp_path, capsys):
    """Lightning makes a version folder for every script run: a crashed run (version_2, step 0) was merged with an
    earlier run (version_0, steps 0-5), geometry.csv taking step 0 from the crashed one. A folder whose geometry
    starts at or before an earlier folder's first step is a separate run, refused naming the folders; a resume
    (version_1, starting after version_0's first step) is still read with version_0."""
    logs = tmp_path / "lightning_logs"
    for version, steps in ((0, range(6)), (1, range(4, 8)), (2, [0])):
        (logs / f"version_{version}").mkdir(parents=True)
        rows = "".join(f"{step},0.{version}\n" for step in steps)
        (logs / f"version_{version}" / "metrics.csv").write_text(f"step,geometry/x/layer_0\n{rows}")
    expected = (f"The directory {str(tmp_path)!r} holds 2 Lightning runs (lightning_logs/version_0 resumed in "
                f"lightning_logs/version_1, lightning_logs/version_2), read as separate runs: name the one to read "
                f"(lightning_logs/version_2's geometry starts at step 0, at or before lightning_logs/version_0's first "
                f"step 0: a resumed run starts after it); to read a resumed run whole, move the other runs' logs out "
                f"and name the directory again.")
    with pytest.raises(IsotropyValueError) as info:
        read_geometry_log(tmp_path)
    assert str(info.value) == expected
    with pytest.raises(SystemExit) as exit_info:
        main(["plot", str(tmp_path), "--format", "png", "--out", str(tmp_path / "figures")])
    assert exit_info.value.code == 2 and capsys.readouterr().err == f"Error: {expected}\n"
    assert not (tmp_path / "figures").exists()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one run alone: no warning
        assert _as_dict(read_geometry_log(logs / "version_2")) == {("x", 0, 0): 0.2}
    (logs / "version_2" / "metrics.csv").unlink()
    (logs / "version_2").rmdir()
    with pytest.warns(UserWarning, match="2 Lightning logs under"):  # the resume alone: read as one run
        frame = read_geometry_log(tmp_path)
    assert _as_dict(frame) == {("x", 0, s): 0.0 for s in range(4)} | {("x", 0, s): 0.1 for s in range(4, 8)}


def test_tensorboard_folders_of_separate_runs_are_refused(tmp_path):
    """Two TensorBoard run folders whose geometry both starts at step 0 are separate runs, not one resumed."""
    from torch.utils.tensorboard import SummaryWriter

    for folder, value in (("run_a", 0.25), ("run_b", 0.5)):
        with SummaryWriter(str(tmp_path / folder)) as writer:
            writer.add_scalar("geometry/x/layer_0", value, 0)
            writer.add_scalar("geometry/x/layer_0", value, 1)
    with pytest.raises(IsotropyValueError, match=r"^The directory .* holds 2 TensorBoard runs \(run_a, run_b\), read as "
                                                 r"separate runs: name the one to read \(run_b's geometry starts at "
                                                 r"step 0, at or before run_a's first step 0: a resumed run starts "
                                                 r"after it\)\.$"):
        read_geometry_log(tmp_path)


def test_other_tables_called_metrics_csv_are_not_read_as_lightning_logs(tmp_path, capsys):
    """A folder holding an experiment's results (their metrics.csv has no geometry column) beside a Lightning log:
    'isotropy plot' read all three as one run and said so (a new-user trial); the log alone is read."""
    for name in ("cg1", "cg2"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "metrics.csv").write_text("seed,step,loss,isoscore\n0,0,1.0,0.5\n")
    folder = tmp_path / "pl-logs" / "version_0"
    folder.mkdir(parents=True)
    (folder / "metrics.csv").write_text("step,geometry/x/layer_0\n3,0.25\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one log: no 'read as one run' warning
        frame = read_geometry_log(tmp_path)
    assert _as_dict(frame) == {("x", 0, 3): 0.25}
    assert list(frame["source"].unique()) == [str(folder / "metrics.csv")]


def _masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC-32C (Castagnoli), written out here independently of tensorboard's."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _record_header(length: int, *, valid_crc: bool = True) -> bytes:
    import struct

    head = struct.pack("<Q", length)
    return head + struct.pack("<I", _masked_crc32c(head) ^ (0 if valid_crc else 1))


def _geometry_events(folder: Path, values) -> Path:
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(folder)) as writer:
        for step, value in enumerate(values):
            writer.add_scalar("geometry/isoscore/layer_1", value, step)
    (event,) = folder.glob("events.out.tfevents.*")
    return event


def test_the_masked_crc_of_the_tests_is_tfrecords():
    # the trial's file (/tmp/trial_sec/tl/tb) framed the length 2**40 with these bytes
    assert _record_header(2**40) == bytes.fromhex("0000000000010000aa3d6be4")


def test_an_event_record_longer_than_its_file_is_refused_in_one_line_without_reading_it(tmp_path, capsys):
    """28 bytes declaring a record of 2**40 bytes (its length's CRC valid): tensorboard's reader asked the file for
    2**40 bytes in one read, a 51-line MemoryError traceback; the framing is now walked first."""
    import tracemalloc

    folder = tmp_path / "tb"
    folder.mkdir()
    event = folder / "events.out.tfevents.1700000000.host"
    event.write_bytes(_record_header(2**40) + b"x" * 16)
    assert event.stat().st_size == 28
    tracemalloc.start()
    try:
        with pytest.raises(IsotropyValueError) as refused:
            read_geometry_log(folder)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**26  # bounded work: the 2**40 bytes are never asked for
    message = str(refused.value)
    assert "\n" not in message and f"The TensorBoard event file {str(event)!r} is truncated or corrupt" in message
    assert "record at byte 0 declares 1,099,511,627,776 bytes of data" in message and "only 16 bytes follow" in message
    with pytest.raises(SystemExit) as exit_info:
        main(["plot", str(folder), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert str(event) in err and not (tmp_path / "out").exists()


def test_a_real_event_log_reads_and_a_record_past_its_end_after_it_is_refused(tmp_path):
    event = _geometry_events(tmp_path / "run", [0.5, 0.25, 0.125])
    frame = read_geometry_log(tmp_path / "run")
    assert _as_dict(frame) == {("isoscore", 1, 0): 0.5, ("isoscore", 1, 1): 0.25, ("isoscore", 1, 2): 0.125}
    size = event.stat().st_size
    with open(event, "ab") as handle:  # a later record whose length runs past the end of the file
        handle.write(_record_header(2**40) + b"x" * 8)
    with pytest.raises(IsotropyValueError, match=rf"record at byte {size:,} declares 1,099,511,627,776 bytes"):
        read_geometry_log(tmp_path / "run")


@pytest.mark.parametrize("tail", [_record_header(2**40, valid_crc=False) + b"x" * 8, b"\x00" * 7, b""])
def test_a_tail_tensorboard_stops_at_keeps_the_records_before_it(tmp_path, tail):
    """A length whose CRC is wrong, or a header cut short: tensorboard's loader reads no further (nothing of the
    bad record is read), and neither check nor reader refuses the records before it."""
    event = _geometry_events(tmp_path / "run", [0.5, 0.25])
    with open(event, "ab") as handle:
        handle.write(tail)
    assert _as_dict(read_geometry_log(tmp_path / "run")) == {("isoscore", 1, 0): 0.5, ("isoscore", 1, 1): 0.25}


@pytest.mark.parametrize("cut", [1, 10, 20])
def test_the_last_record_of_a_run_still_writing_is_skipped_not_refused(tmp_path, cut):
    """A run still writing leaves its last record partly flushed: tensorboard reads the records before it and skips
    it, and so does the check (it refused the whole log: 'record at byte 338 declares 47 bytes ... only 41 follow')."""
    event = _geometry_events(tmp_path / "run", [0.5, 0.25, 0.125])
    data = event.read_bytes()
    event.write_bytes(data[:-cut])  # the last record (0.125) cut short
    assert _as_dict(read_geometry_log(tmp_path / "run")) == {("isoscore", 1, 0): 0.5, ("isoscore", 1, 1): 0.25}


def _unblock_a_reader(fifo, done, unblocked):
    """Open ``fifo`` for writing (and close it) once a reader waits on it, and set ``unblocked``: a reader that opened
    it gets EOF instead of blocking the test forever; with no reader, nothing happens (the bounded reader never opens a
    FIFO)."""
    import os
    import time

    while not done.is_set():
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            unblocked.set()
            return
        except OSError:  # ENXIO: no reader yet
            time.sleep(0.01)


def test_trainer_state_is_read_through_the_bounded_reader(tmp_path, capsys):
    """A FIFO trainer_state.json was opened and blocked (or passed over: 'holds no training log'), a FIFO named on the
    command line 'does not exist', a file of any size was read whole, and deep nesting or a 5,000-digit integer said
    only 'not a Hugging Face trainer_state.json'. Now each is one line saying what it is."""
    import os
    import threading

    from isotropy.training.logs import _rows_trainer_state

    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    out = tmp_path / "out"
    out.mkdir()
    fifo = out / "trainer_state.json"
    os.mkfifo(fifo)
    done, unblocked = threading.Event(), threading.Event()
    threading.Thread(target=_unblock_a_reader, args=(fifo, done, unblocked), daemon=True).start()
    try:
        for path in (out, fifo):  # the output directory, and the file named
            with pytest.raises(IsotropyValueError) as info:
                read_geometry_log(path)
            assert str(info.value) == (f"The file {str(fifo)!r} is not a Hugging Face trainer_state.json (it is a FIFO "
                                       f"(named pipe), not a regular file): expected a JSON object with a "
                                       f"'log_history' list.")
        with pytest.raises(IsotropyValueError, match=r"\(it is a FIFO \(named pipe\), not a regular file\)"):
            list(_rows_trainer_state(fifo, None))
        assert not unblocked.is_set()  # no reader ever opened the FIFO (one that had would have blocked)
    finally:
        done.set()
    with pytest.raises(SystemExit) as exit_:
        main(["plot", str(out)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "is a FIFO (named pipe)" in err and err.count("\n") == 1, err
    fifo.unlink()
    state = out / "trainer_state.json"  # a regular file now
    with open(state, "wb") as handle:  # sparse: 257 MiB of nothing, refused by its size before a byte is read
        handle.truncate(257 * 2**20)
    with pytest.raises(IsotropyValueError, match=r"not a Hugging Face trainer_state\.json \(it is larger than 256 "
                                                 r"MiB\): expected a JSON object with a 'log_history' list\.$"):
        read_geometry_log(out)
    for content, why in (("[" * 100_000, "nested too deeply to parse"),
                         ('{"log_history": [{"step": 1' + "0" * 5000 + '}]}', "an integer of too many digits"),
                         ('[{"log_history": []}]', "it holds a JSON list")):
        state.write_text(content)
        with pytest.raises(IsotropyValueError, match=r"^The file .* is not a Hugging Face trainer_state\.json \(") as info:
            read_geometry_log(out)
        assert why in str(info.value) and "\n" not in str(info.value), str(info.value)


def test_plot_of_a_folder_holding_runs_names_them(tmp_path, capsys):
    """'isotropy plot results/' read a run's metrics.csv below it as a Lightning log ("holds no 'geometry/<metric>/
    layer_<i>' value"); it names the runs it holds. Repeated --format values are drawn once."""
    from isotropy.experiments._command import parse_formats

    for name in ("a", "b"):
        run = tmp_path / "results" / "classifier-geometry" / name
        run.mkdir(parents=True)
        (run / "run.json").write_text(json.dumps({"experiment": "classifier-geometry", "status": "finished"}))
        (run / "metrics.csv").write_text("seed,step,loss\n0,0,1.0\n")
    for folder in (tmp_path / "results", tmp_path / "results" / "classifier-geometry"):
        with pytest.raises(SystemExit) as info:
            main(["plot", str(folder)])
        err = capsys.readouterr().err
        runs = f"'{tmp_path / 'results' / 'classifier-geometry' / 'a'}', '{tmp_path / 'results' / 'classifier-geometry' / 'b'}'"
        assert info.value.code == 2 and err.startswith(f"Error: {str(folder)!r} is not the results folder of one run, "
                                                       f"but holds 2 runs ({runs}); plot one of them")
    assert parse_formats("png,PNG, png,svg") == ("png", "svg")


def test_a_misspelt_figure_format_gets_did_you_mean():
    import click

    from isotropy.experiments._command import parse_formats

    with pytest.raises(click.BadParameter, match=r"Got 'pgn' instead\. Did you mean 'png'\?$"):
        parse_formats("pgn")
    with pytest.raises(click.BadParameter) as far:
        parse_formats("png,xyz")
    assert "Got 'png,xyz' instead." in str(far.value) and "Did you mean" not in str(far.value)


def test_runs_in_folders_below_are_read_alone_or_named_never_merged(hf_dir, lightning_dir, tmp_path, capsys):
    """A sweep's folder of three HF runs was read as one run from their TensorBoard files (the last run's values
    replacing the others' at every step), an HF run one folder down was 'no training log', and an HF run beside a
    Lightning run was passed over for it without a word (trial): one run below is read as its own log (its
    checkpoint's trainer_state.json, not its TensorBoard files); several are named, in one line."""
    import shutil

    alone = read_geometry_log(hf_dir)
    one = tmp_path / "one"
    shutil.copytree(hf_dir, one / "a")
    frame = read_geometry_log(one)
    assert _as_dict(frame) == _as_dict(alone) and set(frame["source"]) == {str(one / "a" / "checkpoint-4" /
                                                                               "trainer_state.json")}
    sweep = tmp_path / "sweep"
    for name in ("lambda_-1", "lambda_0", "lambda_1"):
        shutil.copytree(hf_dir, sweep / name)
    both = tmp_path / "both"
    shutil.copytree(hf_dir, both / "hf")
    shutil.copytree(lightning_dir, both / "pl")
    (both / "results").mkdir()
    (both / "results" / "metrics.csv").write_text("name,value\na,1\n")  # not a log: no run of its own
    nested = tmp_path / "nested"
    shutil.copytree(hf_dir, nested / "run")
    shutil.copytree(hf_dir, nested / "run" / "best")  # inside the run: part of it, whatever its name sorts as
    assert _as_dict(read_geometry_log(nested)) == _as_dict(alone)
    top = tmp_path / "top"
    shutil.copytree(hf_dir, top / "hf")
    shutil.copy(next(lightning_dir.glob("**/metrics.csv")), top / "metrics.csv")
    for folder, named in ((sweep, "3 Hugging Face runs (lambda_0, lambda_1, lambda_-1)"),
                          (both, "2 training logs (hf, pl/run/version_0)"),
                          (top, "2 training logs (hf, metrics.csv)")):  # the file: naming 'top' would not choose it
        message = f"The directory {str(folder)!r} holds {named}, read as separate runs: name the one to read."
        with pytest.raises(IsotropyValueError) as caught:
            read_geometry_log(folder)
        assert str(caught.value) == message
        with pytest.raises(SystemExit) as info:
            main(["plot", str(folder), "--out", str(tmp_path / "figures")])
        assert info.value.code == 2 and capsys.readouterr().err == f"Error: {message}\n"
    assert _as_dict(read_geometry_log(sweep / "lambda_0")) == _as_dict(alone)


def test_a_metric_undefined_at_every_step_is_named_and_gaps_stay_gaps(tmp_path, capsys):
    """A metric the callbacks log as NaN at every step (rogue_dimension_share on a probe sharing no direction) vanished
    from the table and the figures without a word, and a layer's line joined the steps around an undefined one."""
    nan = float("nan")
    history = [{"step": s, "geometry/isoscore/layer_1": v, "geometry/isoscore/layer_2": 0.5,
                "geometry/rogue_dimension_share/layer_1": nan} for s, v in ((0, 0.1), (2, nan), (4, 0.3))]
    (tmp_path / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    with pytest.warns(UserWarning, match=r"rogue_dimension_share: every logged value is NaN or infinite .* left out of "
                                         r"the table and the figures"):
        frame = read_geometry_log(tmp_path)
    assert set(frame["metric"]) == {"isoscore"}
    assert _as_dict(frame) == {("isoscore", 1, 0): 0.1, ("isoscore", 1, 4): 0.3, ("isoscore", 2, 0): 0.5,
                               ("isoscore", 2, 2): 0.5, ("isoscore", 2, 4): 0.5}
    figure = plot_geometry_log(frame)["geometry_isoscore"]
    line = figure.axes[0].lines[0]  # layer 1, on every step of the metric: a gap at step 2
    assert list(line.get_xdata()) == [0, 2, 4] and np.isnan(line.get_ydata()[1])
    main(["plot", str(tmp_path), "--out", str(tmp_path / "figures"), "--format", "png", "--dpi", "40"])
    assert (tmp_path / "figures" / "geometry_isoscore.png").is_file()
    assert "Warning: rogue_dimension_share: every logged value is NaN" in capsys.readouterr().err


def test_tensorboard_runs_written_into_one_folder_are_told_apart(tmp_path):
    """A plain loop run twice with the same SummaryWriter folder writes two event files there: they were read as one
    run restarted, the second run's step 0 replacing the first's without a word (a trial). Each event file is now a
    session: one that starts at or before an earlier one's first step is a separate run, refused naming the files;
    a restart that writes on from a later step is still the same run."""
    from torch.utils.tensorboard import SummaryWriter

    folder = tmp_path / "tb"
    for suffix, steps in ((".a", range(0, 32, 8)), (".b", range(0, 8, 8))):
        with SummaryWriter(str(folder), filename_suffix=suffix) as writer:
            for step in steps:
                writer.add_scalar("geometry/isoscore/layer_1", 0.5 if suffix == ".a" else 0.25, step)
    first, second = sorted(folder.glob("events.out.tfevents.*"), key=lambda p: p.name.endswith(".b"))
    with pytest.raises(IsotropyValueError) as info:
        read_geometry_log(folder)
    assert str(info.value) == (
        f"The directory {str(folder)!r} holds 2 TensorBoard runs ({first.name}, {second.name}), read as separate "
        f"runs: name the one to read ({second.name}'s geometry starts at step 0, at or before {first.name}'s first "
        f"step 0: a resumed run starts after it).")
    assert _as_dict(read_geometry_log(first)) == {("isoscore", 1, s): 0.5 for s in range(0, 32, 8)}
    second.unlink()
    with SummaryWriter(str(folder), filename_suffix=".c") as writer:  # a restart from step 24: the same run
        writer.add_scalar("geometry/isoscore/layer_1", 0.75, 24)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one folder: one run, restarted, without a warning
        assert _as_dict(read_geometry_log(folder)) == {("isoscore", 1, 0): 0.5, ("isoscore", 1, 8): 0.5,
                                                        ("isoscore", 1, 16): 0.5, ("isoscore", 1, 24): 0.75}


def test_a_tensorboard_run_apart_from_a_lightning_table_is_refused_as_another_run(tmp_path):
    # a folder holding a Lightning CSVLogger run and a separate TensorBoard run was plotted from the table alone, in
    # silence (a user trial); event files in the table's own folder are the same run, logged by both loggers
    from torch.utils.tensorboard import SummaryWriter

    def table(folder, value):
        folder.mkdir(parents=True)
        (folder / "metrics.csv").write_text(f"step,geometry/x/layer_0\n0,{value}\n1,{value}\n")

    def events(folder, value):
        with SummaryWriter(str(folder)) as writer:
            for step in (0, 1):
                writer.add_scalar("geometry/x/layer_0", value, step)

    mixed = tmp_path / "mix"
    table(mixed / "csv" / "version_0", 0.25)
    events(mixed / "tb" / "version_0", 0.5)
    with pytest.raises(IsotropyValueError) as caught:
        read_geometry_log(mixed)
    assert str(caught.value) == (f"The directory {str(mixed)!r} holds 2 training logs (csv/version_0, tb/version_0), "
                                 f"read as separate runs: name the one to read.")
    assert _as_dict(read_geometry_log(mixed / "tb")) == {("x", 0, 0): 0.5, ("x", 0, 1): 0.5}
    same = tmp_path / "same"  # both loggers in one version folder: one run, read from its table
    table(same / "version_0", 0.25)
    events(same / "version_0", 0.25)
    assert _as_dict(read_geometry_log(same)) == {("x", 0, 0): 0.25, ("x", 0, 1): 0.25}


def test_one_file_with_two_values_for_a_step_is_warned_of(tmp_path):
    # a geometry.csv holding 0.5 and 0.6 for one (metric, layer, step) was drawn as 0.6 without a word (a user
    # trial): the last is still drawn, and said; a value repeated alike says nothing
    path = tmp_path / "dup.csv"
    path.write_text("metric,layer,step,value\nisoscore,1,0,0.4\nisoscore,1,5,0.5\nisoscore,1,5,0.6\n"
                    "isoscore,1,10,0.7\nisoscore,1,10,0.7\n")
    with pytest.warns(UserWarning) as caught:
        frame = read_geometry_log(path)
    assert [str(w.message) for w in caught] == [
        (f"{str(path)!r} holds more than one value for 1 (metric, layer, step) entry (first: isoscore at layer 1, "
        f"step 5: 0.5, 0.6); the last of each is drawn.")]
    assert _as_dict(frame) == {("isoscore", 1, 0): 0.4, ("isoscore", 1, 5): 0.6, ("isoscore", 1, 10): 0.7}
    path.write_text("metric,layer,step,value\nisoscore,1,0,0.4\nisoscore,1,0,0.4\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _as_dict(read_geometry_log(path)) == {("isoscore", 1, 0): 0.4}
