"""A run interrupted after its numbers, or killed mid-run, leaves no other run's claims or figures beside its run.json.

A user trial found (1) ``claims.json`` written by the report step after the lock was released: it
was never listed in ``.isotropy.files.json``, so a fresh run kept the old claims as the user's own
file; a Ctrl-C while the figures were drawn left ``run.json`` "finished" beside the previous
config's claims, and ``--resume`` said "nothing to run" without rewriting them; after ``kill -9``
mid-run the old claims sat beside the new ``run.json``. (2) ``isotropy plot`` of an interrupted
run printed ``[Errno 2] No such file or directory: '.../results.json'``.

The template experiment stands in for a real one (seconds, no data), with a ``report`` that writes
``claims.json`` as every paper's experiment does. Interruptions are deterministic: the figure step
raises ``KeyboardInterrupt``, or a child process ``kill -9``s itself at a given seed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from isotropy.experiments import _runner
from isotropy.experiments._results import write_json
from isotropy.experiments._results_dir import MANIFEST_NAME, PREVIOUS_NAME, ResultsLock
from isotropy.experiments._runner import execute
from isotropy.experiments._template import run as template_run
from isotropy.experiments._template.experiment import EXPERIMENT as TEMPLATE

REPO = Path(__file__).resolve().parent.parent
SMALL = ["sample_sizes=[50, 200]", "n_features=8", "seeds=[0, 1, 2]"]
TEMPLATE_TARGET = "isotropy.experiments._template.experiment:EXPERIMENT"


def _report(results, results_dir) -> str:
    """A report as the papers' experiments have one: ``claims.json`` from these results, then the table."""
    write_json(Path(results_dir) / "claims.json", [{"id": "isoscore", "ours": results["isoscore_mean"][-1],
                                                    "decay": json.loads((Path(results_dir) / "run.json").read_text())
                                                    ["config"]["decay"]}])
    return (Path(results_dir) / "summary.md").read_text()


@pytest.fixture(autouse=True)
def template_with_claims(monkeypatch):
    """The template with a ``report`` writing ``claims.json``, reachable as ``isotropy run _template``."""
    from isotropy import cli

    monkeypatch.setattr(template_run, "report", _report, raising=False)
    monkeypatch.setattr(cli, "EXPERIMENTS", {**cli.EXPERIMENTS, "_template": TEMPLATE_TARGET})


def _cli(argv, capsys) -> tuple[int, str]:
    from isotropy.cli import main

    try:
        main(argv)
        code = 0
    except SystemExit as stop:
        code = stop.code
    return code, capsys.readouterr().err


def _run_cli(out, capsys, *sets, extra=()):
    # a fresh run replaces the run of other settings these tests leave there (--overwrite: refused without it)
    argv = ["run", "_template", "--device", "cpu", "--quiet", "--results-dir", str(out),
            *(() if "--resume" in extra else ("--overwrite",))]
    for item in [*SMALL, *sets]:
        argv += ["--set", item]
    return _cli([*argv, *extra], capsys)


def _claims(out) -> dict:
    return json.loads((out / "claims.json").read_text())[0]


def _meta(out) -> dict:
    return json.loads((out / "run.json").read_text())


def _interrupt_the_figures(monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(_runner, "save_figures", interrupted)


_KILL_CODE = """
import os, signal, sys
from isotropy.experiments._template import run as R
from isotropy.experiments._template.experiment import EXPERIMENT as E
from isotropy.experiments._runner import execute
kill_at, original = int(sys.argv[2]), R._one_seed
def dying(spectrum, sizes, seed):
    if seed == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
    return original(spectrum, sizes, seed)
R._one_seed = dying
execute(E, E.config(sets=sys.argv[3:]), results_dir=sys.argv[1], device="cpu", quiet=True, plot=False, overwrite=True)
"""


def _killed_run(out, *, at_seed: int, sets) -> None:
    """A fresh run in ``out`` that ``kill -9``s itself when it reaches seed ``at_seed`` (0: before its first result)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", _KILL_CODE, str(out), str(at_seed), *SMALL, *sets], check=False,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr


# ---------------------------------------------------------------- 1. claims.json is the run's, written before "finished"
def test_ctrl_c_while_the_figures_are_drawn_leaves_this_runs_claims_and_resume_keeps_them(tmp_path, capsys,
                                                                                          monkeypatch):
    out = tmp_path / "r"
    assert _run_cli(out, capsys, "decay=0.8")[0] == 0
    assert _claims(out)["decay"] == 0.8
    with monkeypatch.context() as patch:
        _interrupt_the_figures(patch)
        code, err = _run_cli(out, capsys, "decay=0.5")
    assert code == 130 and "Interrupted." in err
    assert _meta(out)["status"] == "finished" and _meta(out)["config"]["decay"] == 0.5
    assert _claims(out)["decay"] == 0.5  # was 0.8: the previous config's claims beside a "finished" run
    assert "claims.json" in json.loads((out / MANIFEST_NAME).read_text())
    assert _run_cli(out, capsys, "decay=0.5", extra=["--resume"])[0] == 0
    assert _claims(out)["decay"] == 0.5 and _meta(out)["status"] == "finished"
    assert (out / "figures" / "isoscore_vs_n.png").is_file()


def test_run_json_says_finished_only_once_claims_json_is_written(tmp_path, monkeypatch):
    seen = []

    def report(results, results_dir):
        seen.append(_meta(Path(results_dir))["status"])
        return _report(results, results_dir)

    monkeypatch.setattr(template_run, "report", report, raising=False)
    outcome = execute(TEMPLATE, TEMPLATE.config(sets=SMALL), results_dir=tmp_path, device="cpu", quiet=True,
                      plot=False)
    assert seen == ["running"] and _meta(tmp_path)["status"] == "finished"
    assert outcome.report == (tmp_path / "summary.md").read_text()  # what the command prints, computed once


def test_a_failing_report_marks_the_run_failed(tmp_path, monkeypatch):
    def report(results, results_dir):
        raise RuntimeError("no claims today")

    monkeypatch.setattr(template_run, "report", report, raising=False)
    with pytest.raises(RuntimeError):
        execute(TEMPLATE, TEMPLATE.config(sets=SMALL), results_dir=tmp_path, device="cpu", quiet=True, plot=False)
    meta = _meta(tmp_path)
    assert meta["status"] == "failed" and meta["error"] == "RuntimeError: no claims today"
    assert (tmp_path / "summary.json").is_file()  # the new numbers exist: they are not swapped for the old ones


def test_kill_9_mid_run_leaves_no_claims_of_the_previous_run(tmp_path, capsys):
    out = tmp_path / "r"
    assert _run_cli(out, capsys, "decay=0.8")[0] == 0
    _killed_run(out, at_seed=1, sets=["decay=0.5"])  # after its first result: the previous run's files are gone
    assert _meta(out)["status"] == "running" and _meta(out)["config"]["decay"] == 0.5
    assert not (out / "claims.json").exists()  # was the decay=0.8 claims beside the decay=0.5 run.json
    assert not (out / "figures").exists() and not (out / PREVIOUS_NAME).exists()


def test_kill_9_before_the_first_result_moves_the_claims_aside_and_the_next_run_restores_them(tmp_path, capsys):
    out = tmp_path / "r"
    assert _run_cli(out, capsys, "decay=0.8")[0] == 0
    _killed_run(out, at_seed=0, sets=["decay=0.5"])
    assert not (out / "claims.json").exists() and not (out / "figures").exists()
    assert _claims(out / PREVIOUS_NAME)["decay"] == 0.8 and (out / PREVIOUS_NAME / "figures").is_dir()
    assert _run_cli(out, capsys, "decay=0.8", extra=["--resume"])[0] == 0  # restored, then resumed: all of 0.8
    assert _claims(out)["decay"] == 0.8 and not (out / PREVIOUS_NAME).exists()


# ---------------------------------------------------------------- a results directory an earlier version wrote
def _as_an_earlier_version_left_it(out: Path, *, claims_decay: float) -> None:
    """claims.json not in the manifest (written after the lock was released), older than the results."""
    names = [n for n in json.loads((out / MANIFEST_NAME).read_text()) if n not in ("claims.json", "figures")]
    (out / MANIFEST_NAME).write_text(json.dumps(names))
    write_json(out / "claims.json", [{"id": "isoscore", "ours": None, "decay": claims_decay}])
    oldest = min(p.stat().st_mtime_ns for p in out.iterdir()) - 10**10
    os.utime(out / "claims.json", ns=(oldest, oldest))


def test_resume_rewrites_stale_claims_of_a_finished_run(tmp_path, monkeypatch):
    """The state the trial left: run.json finished with the new config, claims.json the old config's."""
    experiment = TEMPLATE
    config = experiment.config(sets=[*SMALL, "decay=0.5"])
    execute(experiment, config, results_dir=tmp_path, device="cpu", quiet=True, plot=False)
    _as_an_earlier_version_left_it(tmp_path, claims_decay=0.8)
    outcome = execute(experiment, config, results_dir=tmp_path, device="cpu", quiet=True, plot=False, resume=True)
    assert not outcome.skipped and _claims(tmp_path)["decay"] == 0.5 and _claims(tmp_path)["ours"] is not None
    assert _meta(tmp_path)["status"] == "finished"
    (tmp_path / "claims.json").unlink()  # missing: rewritten as well
    execute(experiment, config, results_dir=tmp_path, device="cpu", quiet=True, plot=False, resume=True)
    assert _claims(tmp_path)["decay"] == 0.5
    skipped = execute(experiment, config, results_dir=tmp_path, device="cpu", quiet=True, plot=False, resume=True)
    assert skipped.skipped  # current claims: a finished run is not run again (parts kept or not)


def test_a_fresh_run_moves_aside_the_claims_an_earlier_version_left_unlisted(tmp_path):
    config = TEMPLATE.config(sets=[*SMALL, "decay=0.8"])
    execute(TEMPLATE, config, results_dir=tmp_path, device="cpu", quiet=True, plot=False)
    _as_an_earlier_version_left_it(tmp_path, claims_decay=0.8)
    (tmp_path / "NOTES.md").write_text("mine\n")

    def failing(*args):
        raise RuntimeError("out of memory")

    original = template_run._one_seed
    template_run._one_seed = failing
    try:
        with pytest.raises(RuntimeError):  # fails before its first result: the old claims come back
            execute(TEMPLATE, TEMPLATE.config(sets=[*SMALL, "decay=0.5"]), results_dir=tmp_path, device="cpu",
                    quiet=True, plot=False, overwrite=True)
    finally:
        template_run._one_seed = original
    assert _claims(tmp_path)["decay"] == 0.8 and _meta(tmp_path)["config"]["decay"] == 0.8
    execute(TEMPLATE, TEMPLATE.config(sets=[*SMALL, "decay=0.5"]), results_dir=tmp_path, device="cpu", quiet=True,
            plot=False, overwrite=True)
    assert _claims(tmp_path)["decay"] == 0.5 and (tmp_path / "NOTES.md").read_text() == "mine\n"
    assert not (tmp_path / PREVIOUS_NAME).exists()


# ---------------------------------------------------------------- figures drawn later by `isotropy plot` are the run's
def test_figures_drawn_by_isotropy_plot_go_with_the_run_they_were_drawn_from(tmp_path, capsys):
    out = tmp_path / "r"
    assert _run_cli(out, capsys, "decay=0.8", extra=["--no-plot"])[0] == 0
    assert _cli(["plot", str(out), "--format", "png", "--dpi", "30"], capsys)[0] == 0
    assert (out / "figures" / "isoscore_vs_n.png").is_file()
    assert "figures" in json.loads((out / MANIFEST_NAME).read_text())
    assert _run_cli(out, capsys, "decay=0.5", extra=["--no-plot"])[0] == 0
    assert not (out / "figures").exists()  # were the decay=0.8 figures beside the decay=0.5 numbers


# ---------------------------------------------------------------- 2. `isotropy plot` of a run that has no results
def test_plot_of_a_run_killed_before_its_first_result_names_the_state_and_the_previous_results(tmp_path, capsys):
    out = tmp_path / "r"
    assert _run_cli(out, capsys, "decay=0.8", extra=["--no-plot"])[0] == 0
    _killed_run(out, at_seed=0, sets=["decay=0.5"])
    code, err = _cli(["plot", str(out)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "Errno" not in err and "interrupted" in err and "'running'" in err
    assert str(out / PREVIOUS_NAME) in err
    assert not (out / "figures").exists()


def test_plot_of_a_run_killed_after_its_first_result_says_so_without_previous_results(tmp_path, capsys):
    out = tmp_path / "r"
    _killed_run(out, at_seed=1, sets=["decay=0.5"])
    code, err = _cli(["plot", str(out)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "Errno" not in err and "interrupted" in err and PREVIOUS_NAME not in err


def test_ctrl_c_mid_run_is_recorded_as_interrupted_not_failed(tmp_path, capsys, monkeypatch):
    """run.json said "failed" (with "KeyboardInterrupt: KeyboardInterrupt") and plot said the run failed."""
    out = tmp_path / "r"
    original = template_run._one_seed

    def ctrl_c(spectrum, sizes, seed):
        if seed == 1:  # after its first result
            raise KeyboardInterrupt
        return original(spectrum, sizes, seed)

    monkeypatch.setattr(template_run, "_one_seed", ctrl_c)
    code, err = _run_cli(out, capsys, "decay=0.5")
    assert code == 130 and "Interrupted." in err
    # what to do next, with --quiet too (the last line was "Terminated." alone, a trial)
    assert f"{out}: interrupted; its finished parts are kept, and the same command with --resume finishes it." in err
    meta = _meta(out)
    assert meta["status"] == "interrupted" and meta["ended"] and "error" not in meta and meta["stopped_by"] == "Ctrl-C"
    assert sorted(p.name for p in (out / "seeds").iterdir()) == ["seed_0.json"]  # no half-written seed 1
    assert not (out / "claims.json").exists() and not (out / "figures").exists()
    code, err = _cli(["plot", str(out)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"the run in {str(out)!r} was interrupted (Ctrl-C before it finished) and has no results to plot" in err
    assert "failed" not in err and "Errno" not in err
    # plot said "Ctrl-C" of a run SIGTERM stopped; a run.json from before stopped_by says it does not know which
    for by, said in (("SIGTERM", "SIGTERM"), (None, "Ctrl-C or SIGTERM")):
        (out / "run.json").write_text(json.dumps({k: v for k, v in {**meta, "stopped_by": by}.items() if v}))
        code, err = _cli(["plot", str(out)], capsys)
        assert code == 2 and f"was interrupted ({said} before it finished) and has no results to plot" in err, err
    monkeypatch.setattr(template_run, "_one_seed", original)
    assert _run_cli(out, capsys, "decay=0.5", extra=["--resume", "--no-plot"])[0] == 0
    assert _meta(out)["status"] == "finished"


def test_plot_of_a_failed_run_names_its_error(tmp_path, capsys, monkeypatch):
    out = tmp_path / "r"

    original = template_run._one_seed

    def failing(spectrum, sizes, seed):
        if seed == 1:  # after its first result: the run is marked failed
            raise RuntimeError("disk on fire")
        return original(spectrum, sizes, seed)

    monkeypatch.setattr(template_run, "_one_seed", failing)
    with pytest.raises(RuntimeError):  # a bug in a run is a traceback, not a one-line refusal
        _run_cli(out, capsys, "decay=0.5")
    code, err = _cli(["plot", str(out)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "failed" in err and "disk on fire" in err and "Errno" not in err


def test_plot_while_a_run_holds_the_directory_says_it_is_running(tmp_path, capsys):
    out = tmp_path / "r"
    assert _run_cli(out, capsys, "decay=0.8", extra=["--no-plot"])[0] == 0
    with ResultsLock(out):  # a run in progress (this process holds the lock)
        code, err = _cli(["plot", str(out)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "running" in err and f"pid {os.getpid()}" in err
    assert not (out / "figures").exists()


# ---------------------------------------------------------------- `isotropy plot --out D`: the figures go into D
def test_plot_out_writes_the_figures_into_the_folder_named(tmp_path, capsys):
    """As for a training log (``isotropy plot LOG --out D`` writes D/geometry_*.png): D is the figures' folder."""
    from isotropy.cli import main

    out = tmp_path / "r"
    assert _run_cli(out, capsys, "decay=0.8", extra=["--no-plot"])[0] == 0
    main(["plot", str(out), "--out", str(tmp_path / "D"), "--format", "png", "--dpi", "30"])
    printed = capsys.readouterr().out.split()
    assert sorted(p.name for p in (tmp_path / "D").iterdir()) == ["isoscore_vs_n.png"]
    assert printed == [str(tmp_path / "D" / "isoscore_vs_n.png")] and not (out / "figures").exists()
    main(["plot", str(out), "--format", "png", "--dpi", "30"])  # without --out: the run's own figures/ folder
    assert (out / "figures" / "isoscore_vs_n.png").is_file()


def test_plot_out_the_run_folder_itself_draws_into_its_figures_and_resume_runs_nothing(tmp_path, capsys):
    """``--out RUN`` put the figures at RUN's top level, newer than claims.json: the next --resume ran it all again."""
    from isotropy.cli import main

    out = tmp_path / "r"
    assert _run_cli(out, capsys, "decay=0.8", extra=["--no-plot"])[0] == 0
    main(["plot", str(out), "--out", str(tmp_path / "." / "r"), "--format", "png", "--dpi", "30"])
    assert capsys.readouterr().out.split() == [str(out / "figures" / "isoscore_vs_n.png")]
    assert not list(out.glob("*.png"))
    before = (out / "run.json").read_text()
    code, err = _run_cli(out, capsys, "decay=0.8", extra=["--no-plot", "--resume"])
    assert code == 0 and (out / "run.json").read_text() == before, err  # nothing run: run.json untouched


def test_plot_out_a_folder_inside_the_run_other_than_its_figures_is_one_line(tmp_path, capsys):
    out = tmp_path / "r"
    assert _run_cli(out, capsys, "decay=0.8", extra=["--no-plot"])[0] == 0
    code, err = _cli(["plot", str(out), "--out", str(out / "figs"), "--format", "png", "--dpi", "30"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "would count as its results" in err, err
    assert not (out / "figs").exists()
    before = (out / "run.json").read_text()
    code, err = _run_cli(out, capsys, "decay=0.8", extra=["--no-plot", "--resume"])
    assert code == 0 and (out / "run.json").read_text() == before, err


def test_plot_out_another_runs_folder_is_refused_and_its_figures_are_kept(tmp_path, capsys):
    """A trial: ``isotropy plot A --out B`` (B another finished run) replaced B's figures with A's, listed as B's."""
    a, b = tmp_path / "a", tmp_path / "b"
    assert _run_cli(a, capsys, "decay=0.8", extra=["--no-plot"])[0] == 0
    assert _run_cli(b, capsys, "decay=0.5")[0] == 0
    figures = {p.name: p.read_bytes() for p in (b / "figures").iterdir()}
    manifest = (b / MANIFEST_NAME).read_text()
    for out in (b, b / "figures", b / "figures" / "more"):
        code, err = _cli(["plot", str(a), "--out", str(out), "--format", "png", "--dpi", "30"], capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert f"is in the run in {str(b.resolve())!r}, not {str(a)!r}: figures there would replace that run's own" \
            in err, err
    assert {p.name: p.read_bytes() for p in (b / "figures").iterdir()} == figures
    assert (b / MANIFEST_NAME).read_text() == manifest
    assert _cli(["plot", str(a), "--out", str(tmp_path / "elsewhere"), "--format", "png", "--dpi", "30"],
                capsys)[0] == 0  # a folder of no run: drawn


def test_plot_of_previous_out_the_run_takes_the_runs_lock_and_is_refused_while_another_holds_it(tmp_path, capsys):
    """``isotropy plot RUN/.previous --out RUN`` drew into RUN without RUN's lock, beside the run holding it."""
    out = tmp_path / "r"
    assert _run_cli(out, capsys, "decay=0.8", extra=["--no-plot"])[0] == 0
    _killed_run(out, at_seed=0, sets=["decay=0.5"])  # RUN/.previous holds the decay=0.8 results
    assert _claims(out / PREVIOUS_NAME)["decay"] == 0.8
    code = ("import sys, time; from pathlib import Path; from isotropy.experiments._results_dir import ResultsLock; "
            "lock = ResultsLock(Path(sys.argv[1])); lock.acquire(); print('held', flush=True); time.sleep(60)")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    holder = subprocess.Popen([sys.executable, "-c", code, str(out)], stdout=subprocess.PIPE, text=True, env=env)
    argv = ["plot", str(out / PREVIOUS_NAME), "--out", str(out), "--format", "png", "--dpi", "30"]
    try:
        assert holder.stdout.readline().strip() == "held"
        code, err = _cli(argv, capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert f"Error: --results-dir {str(out)!r} is in use by another run (pid {holder.pid} on " in err, err
        assert not (out / "figures").exists() and not list(out.glob("*.png"))
    finally:
        holder.kill()
        holder.wait()
    assert _cli(argv, capsys)[0] == 0  # released: drawn into RUN/figures/ under RUN's lock, listed as the run's
    assert (out / "figures" / "isoscore_vs_n.png").is_file() and not list(out.glob("*.png"))
    assert "figures" in json.loads((out / MANIFEST_NAME).read_text())
