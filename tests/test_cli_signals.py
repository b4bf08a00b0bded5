"""SIGTERM is handled as Ctrl-C by the commands, and a Ctrl-C while the CLI is imported is the usual one line.

Before, ``kill PID`` killed a run with no handling: its run.json said 'running' for ever, and the previous results
it had moved aside stayed in ``.previous/`` until the next run; a Ctrl-C in the first fraction of a second printed
a KeyboardInterrupt traceback from inside the imports and the process died by the signal.
"""

from __future__ import annotations

import importlib.abc
import json
import os
import signal
import sys
import time

import pytest

import isotropy.cli
from isotropy.experiments._runner import Experiment, execute
from isotropy.experiments._template import experiment as template

SMALL = ["sample_sizes=[50, 400]", "n_features=16"]
ARGS = ["run", "template", "--device", "cpu", "--quiet", "--no-plot", *(a for s in SMALL for a in ("--set", s))]


@pytest.fixture
def terminated_run(monkeypatch):
    """``isotropy run template`` whose run is sent SIGTERM after writing ``parts`` results; returns its exit status."""
    monkeypatch.setitem(isotropy.cli.EXPERIMENTS, "template", "isotropy.experiments._template.experiment:EXPERIMENT")

    def start(results_dir, *, parts: int):
        def run(self, config, results_dir, ctx):
            for seed in range(parts):
                ctx.write_part(f"seeds/seed_{seed}.json", {"value": seed}, seed=seed)
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(500):  # the handler raises at the next instruction; never reached in practice
                time.sleep(0.01)
            raise AssertionError("SIGTERM was not handled")

        monkeypatch.setattr(Experiment, "run", run)
        with pytest.raises(SystemExit) as info:
            isotropy.cli.main([*ARGS, "--results-dir", str(results_dir)])
        return info.value.code

    return start


def test_sigterm_after_the_first_result_marks_the_run_interrupted_and_exits_143(tmp_path, terminated_run, capsys):
    out = tmp_path / "run"
    previous = signal.getsignal(signal.SIGTERM)
    assert terminated_run(out, parts=1) == 143
    assert capsys.readouterr().err.strip().splitlines()[-1] == "Terminated."
    meta = json.loads((out / "run.json").read_text())
    assert meta["status"] == "interrupted" and meta["ended"] is not None and meta["stopped_by"] == "SIGTERM"
    assert not (out / ".previous").exists()
    assert signal.getsignal(signal.SIGTERM) == previous  # the handler is the command's only


def test_sigterm_before_the_first_result_puts_the_previous_results_back(tmp_path, terminated_run, capsys):
    out = tmp_path / "run"
    execute(template.EXPERIMENT, template.EXPERIMENT.config(sets=SMALL), results_dir=out, device="cpu", quiet=True,
            plot=False)
    before = {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
              if p.is_file() and not p.name.startswith(".isotropy.")}
    assert terminated_run(out, parts=0) == 143
    assert capsys.readouterr().err.strip().splitlines()[-1] == "Terminated."
    after = {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
             if p.is_file() and not p.name.startswith(".isotropy.")}
    assert after == before and json.loads((out / "run.json").read_text())["status"] == "finished"


def test_ctrl_c_while_the_cli_is_imported_is_interrupted_and_130(monkeypatch, capsys):
    class Interrupting(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "isotropy.cli":
                raise KeyboardInterrupt

    monkeypatch.delitem(sys.modules, "isotropy.cli")
    monkeypatch.setattr(sys, "meta_path", [Interrupting(), *sys.meta_path])
    from isotropy.__main__ import entry

    with pytest.raises(SystemExit) as info:
        entry(["--version"])
    assert info.value.code == 130 and capsys.readouterr().err == "Interrupted.\n"


def test_the_console_command_is_the_entry_that_handles_ctrl_c_during_imports():
    from pathlib import Path

    import tomllib

    project = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["isotropy"] == "isotropy.__main__:entry"


def test_sigterm_during_measure_keeps_the_finished_metrics_and_exits_143(tmp_path, monkeypatch, capsys):
    # measure's own Ctrl-C handling caught the SIGTERM (a KeyboardInterrupt) and exited 130 with "interrupted"
    import numpy as np

    from isotropy.measure import report

    np.save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(200, 8)))
    original = report._measure

    def measured_then_killed(*args, **kwargs):
        for item in original(*args, **kwargs):
            yield item
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler raises before this returns
            raise AssertionError("SIGTERM was not handled")

    monkeypatch.setattr(report, "_measure", measured_then_killed)
    out = tmp_path / "m.json"
    with pytest.raises(SystemExit) as info:
        isotropy.cli.main(["measure", str(tmp_path / "x.npy"), "--metrics", "isoscore,participation_ratio",
                           "--json", str(out)])
    assert info.value.code == 143
    assert "Error: terminated; the JSON holds the metrics that finished." in capsys.readouterr().err
    record = json.loads(out.read_text())
    assert record["complete"] is False and "isoscore" in json.dumps(record)


@pytest.mark.parametrize(("signum", "code", "word"), [(signal.SIGINT, 130, "interrupted"),
                                                      (signal.SIGTERM, 143, "terminated")])
def test_a_stopped_measure_without_json_names_no_json(tmp_path, monkeypatch, capsys, signum, code, word):
    # without --json, Ctrl-C said "Error: interrupted; the JSON holds the metrics that finished.": there was no JSON
    # (a user trial); the finished metrics are the rows of the table printed before it
    import numpy as np

    from isotropy.measure import report

    X = np.random.default_rng(0).normal(size=(200, 8))
    np.save(tmp_path / "x.npy", X)
    original = report._measure

    def measured_then_stopped(*args, **kwargs):
        for item in original(*args, **kwargs):
            yield item
            os.kill(os.getpid(), signum)
            time.sleep(5)  # the handler raises before this returns
            raise AssertionError(f"{signum!r} was not handled")

    monkeypatch.setattr(report, "_measure", measured_then_stopped)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, whatever ran the suite
    try:
        with pytest.raises(SystemExit) as info:
            isotropy.cli.main(["measure", str(tmp_path / "x.npy"), "--metrics", "isoscore,participation_ratio"])
    finally:
        signal.signal(signal.SIGINT, previous)
    captured = capsys.readouterr()
    assert info.value.code == code
    assert captured.err.splitlines()[-1] == f"Error: {word}."
    assert "JSON" not in captured.err
    assert captured.out.splitlines()[-1].split()[:2] == ["isoscore", f"{isotropy.isoscore(X):g}"]  # the one finished
