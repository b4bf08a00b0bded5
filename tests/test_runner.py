"""The experiment contract's run safety, on the template experiment (fast) and the classifier-geometry CLI.

Each test reproduces a case of issue 11 (items 2, 3, 7, 8) that the code before the contract got wrong:
old results deleted before the model had loaded, no lock, ``run.json`` never marked finished or
failed, ``--resume`` trusting any seed file. The fault suite kills a run with SIGKILL at random
points and checks that ``--resume`` then gives exactly the numbers of an uninterrupted run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from isotropy.experiments._context import resolve_device
from isotropy.experiments._runner import execute
from isotropy.experiments._template import experiment as template
from isotropy.experiments._template import run as template_run

REPO = Path(__file__).resolve().parent.parent
TEMPLATE = template.EXPERIMENT
SMALL = ["sample_sizes=[50, 400]", "n_features=16"]


def _run(results_dir, *, sets=SMALL, resume=False, plot=True, threads=None, overwrite=False):
    return execute(TEMPLATE, TEMPLATE.config(sets=sets), results_dir=results_dir, device="cpu", resume=resume,
                   quiet=True, plot=plot, threads=threads, overwrite=overwrite)


def _snapshot(directory: Path) -> dict:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*"))
            if p.is_file() and not p.name.startswith(".isotropy.")}


def _population_isoscore(variances: np.ndarray) -> float:
    """IsoScore of a covariance with these eigenvalues, by the closed form of Rudman et al. (2022), Alg. 1."""
    n = len(variances)
    normalised = np.sqrt(n) * variances / np.linalg.norm(variances)
    defect = np.linalg.norm(normalised - 1) / np.sqrt(2 * (n - np.sqrt(n)))
    phi = (n - defect ** 2 * (n - np.sqrt(n))) ** 2 / n ** 2
    return float((n * phi - 1) / (n - 1))


def test_template_end_to_end_matches_the_closed_form_and_is_reproducible(tmp_path):
    outcome = _run(tmp_path / "a", sets=[])
    summary = outcome.results
    expected = _population_isoscore(0.8 ** np.arange(20))  # the default setup: 20 features, decay 0.8
    assert abs(summary["isoscore_mean"][-1] - expected) < 0.02  # n = 1600 samples
    assert abs(summary["isoscore_mean"][0] - expected) > abs(summary["isoscore_mean"][-1] - expected)
    meta = json.loads((tmp_path / "a" / "run.json").read_text())
    assert meta["status"] == "finished" and meta["ended"] and meta["results_dir"] == str((tmp_path / "a").resolve())
    assert meta["config"]["seeds"] == [0, 1, 2] and meta["device"] == "cpu" and meta["versions"]["numpy"]
    assert sorted(p.name for p in (tmp_path / "a" / "figures").iterdir()) == ["isoscore_vs_n.png", "isoscore_vs_n.svg"]
    _run(tmp_path / "b", sets=[])  # same seeds, same numbers
    assert (tmp_path / "a" / "summary.json").read_bytes() == (tmp_path / "b" / "summary.json").read_bytes()
    assert not (tmp_path / "a" / ".previous").exists()


def test_failed_run_is_marked_failed_and_resume_finishes_it_identically(tmp_path, monkeypatch):
    reference = _run(tmp_path / "ref", plot=False).results
    original = template_run._one_seed

    def failing(spectrum, sizes, seed):
        if seed == 2:
            raise RuntimeError("disk on fire")
        return original(spectrum, sizes, seed)

    monkeypatch.setattr(template_run, "_one_seed", failing)
    with pytest.raises(RuntimeError):
        _run(tmp_path / "run", plot=False)
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["status"] == "failed" and meta["error"] == "RuntimeError: disk on fire" and meta["ended"]
    assert sorted(p.name for p in (tmp_path / "run" / "seeds").iterdir()) == ["seed_0.json", "seed_1.json"]
    monkeypatch.setattr(template_run, "_one_seed", original)
    resumed = _run(tmp_path / "run", resume=True, plot=False).results
    assert resumed == reference
    assert json.loads((tmp_path / "run" / "run.json").read_text())["status"] == "finished"


def test_failing_fresh_run_keeps_the_previous_results(tmp_path, monkeypatch):
    _run(tmp_path)
    before = _snapshot(tmp_path)

    def failing(*args):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(template_run, "_one_seed", failing)
    with pytest.raises(RuntimeError):
        _run(tmp_path, sets=[*SMALL, "decay=0.5"], overwrite=True)
    assert _snapshot(tmp_path) == before  # byte for byte, run.json included
    assert not (tmp_path / ".previous").exists()


def test_bad_model_into_a_finished_results_dir_changes_nothing(tmp_path, capsys):
    """Issue 11, item 2: `--model /nonexistent.vec` into a directory holding a finished run."""
    from isotropy.cli import main
    from isotropy.datasets.lexicon import load_nrc_emotion_lexicon

    words = load_nrc_emotion_lexicon().text_a[:80]  # small word vectors over the demo's words: a fast run
    vectors = tmp_path / "tiny.vec"
    rows = np.random.default_rng(0).normal(size=(len(words), 6))
    vectors.write_text(f"{len(words)} 6\n" + "".join(f"{w} {' '.join(f'{v:.5f}' for v in r)}\n"
                                                      for w, r in zip(words, rows)))
    out = tmp_path / "results"
    common = ["run", "classifier-geometry", "--setup", "demo", "--updates", "2", "--seeds", "0", "--device", "cpu",
              "--threads", "1", "--quiet", "--no-plot", "--results-dir", str(out)]
    main([*common, "--model", str(vectors)])
    before = _snapshot(out)
    assert json.loads(before["run.json"])["status"] == "finished" and "summary.json" in before
    with pytest.raises(SystemExit) as exit_info:
        main([*common, "--model", str(tmp_path / "nonexistent.vec")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "nonexistent.vec" in err and len(err.strip().splitlines()) == 1
    assert _snapshot(out) == before


def test_second_run_is_refused_with_one_line_naming_the_first(tmp_path, capsys):
    from isotropy.cli import main
    from isotropy.experiments._results_dir import ResultsLock

    out = tmp_path / "busy"
    with ResultsLock(out):  # the "first run": this process holds the lock
        with pytest.raises(SystemExit) as exit_info:
            main(["run", "classifier-geometry", "--results-dir", str(out), "--device", "cpu", "--quiet"])
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and len(err.strip().splitlines()) == 1
        assert f"is in use by another run (pid {os.getpid()} on " in err and "started 20" in err
        assert not (out / "run.json").exists()
    _run(out, plot=False)  # released: the directory is usable again


def test_concurrent_runs_one_wins_the_other_is_refused(tmp_path):
    code = ("import sys; from isotropy.experiments._template.experiment import EXPERIMENT as E; "
            "from isotropy.experiments._runner import execute; "
            "execute(E, E.config(sets=['seeds=[0,1,2,3,4,5]', 'sample_sizes=[50, 400]', 'n_features=16']), "
            "results_dir=sys.argv[1], device='cpu', quiet=True, plot=False)")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "r")], env=env, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    codes = sorted(code for code, _ in results)
    assert codes[0] == 0, results
    if codes[1] != 0:  # they overlapped: the loser names the winner and wrote nothing
        loser = next(err for code, err in results if code != 0)
        assert "is in use by another run" in loser
    meta = json.loads((tmp_path / "r" / "run.json").read_text())
    assert meta["status"] == "finished" and len(list((tmp_path / "r" / "seeds").iterdir())) == 6


@pytest.mark.parametrize("damage, message", [
    (lambda p: p.with_name("seed_1.json").write_bytes(p.read_bytes()), "holds seed 0, not 1"),
    (lambda p: p.write_text(json.dumps({**json.loads(p.read_text()), "config_hash": "0" * 16})),
     "was written under another config"),
    (lambda p: p.write_text(json.dumps({k: v for k, v in json.loads(p.read_text()).items() if k != "complete"})),
     "is incomplete"),
    (lambda p: p.write_text("{}"), "is incomplete"),
    (lambda p: p.write_text("{not json"), "is not a readable part file"),
])
def test_resume_refuses_duplicate_foreign_and_incomplete_seed_files(tmp_path, damage, message):
    _run(tmp_path, sets=[*SMALL, "seeds=[0]"], plot=False)
    damage(tmp_path / "seeds" / "seed_0.json")
    records = {name: (tmp_path / name).read_bytes() for name in ("run.json", "config.yaml")}
    with pytest.raises(ValueError, match=message) as info:
        _run(tmp_path, sets=[*SMALL, "seeds=[0, 1]"], resume=True, plot=False)
    assert "\n" not in str(info.value) and "--resume" in str(info.value)
    # the finished run's records as they were: config.yaml said seeds [0, 1] and run.json 'failed' (a user trial)
    assert {name: (tmp_path / name).read_bytes() for name in records} == records


def _drop(key):
    def damage(path):
        path.write_text(json.dumps({k: v for k, v in json.loads(path.read_text()).items() if k != key}))
    return damage


@pytest.mark.parametrize("damage, message", [
    # a valid mark (complete, seed, config hash) but not the numbers: a KeyError traceback before issue 19
    (_drop("isoscore"), (r"is marked complete but lacks \['isoscore'\]: expected a finished part holding "
                         r"\['isoscore', 'sample_sizes'\]")),
    (lambda p: p.write_bytes(np.random.default_rng(0).bytes(300)), "is not a readable part file"),  # random bytes
    (lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]), "is not a readable part file"),  # cut short
    (lambda p: p.write_text("[" * 100_000 + "]" * 100_000), "is not a readable part file"),  # nested past the stack
    (lambda p: p.write_text(""), "is not a readable part file"),  # empty
])
def test_resume_refuses_a_marked_part_without_its_numbers_and_unreadable_part_files(tmp_path, damage, message):
    """Refused, not re-run: a damaged part file may be the only copy of a long run's numbers (issue 19 item 7)."""
    _run(tmp_path, sets=[*SMALL, "seeds=[0]"], plot=False)
    part = tmp_path / "seeds" / "seed_0.json"
    damage(part)
    with pytest.raises(ValueError, match=message) as info:
        _run(tmp_path, sets=[*SMALL, "seeds=[0, 1]"], resume=True, plot=False)
    text = str(info.value)
    assert "\n" not in text and len(text) < 600 and text.startswith(f"--resume: {str(part)!r}")
    assert text.endswith("delete it to run that part again.")
    part.unlink()  # what the message says to do: the part runs again, and the numbers are the fresh run's
    resumed = _run(tmp_path, sets=[*SMALL, "seeds=[0, 1]"], resume=True, plot=False).results
    assert resumed == _run(tmp_path / "fresh", sets=[*SMALL, "seeds=[0, 1]"], plot=False).results


def test_quiet_restores_the_progress_switches_when_it_is_the_first_to_import_transformers():
    """transformers copies the hub's switch when first imported: --quiet must not leave its bars off for good."""
    code = ("import sys\nfrom isotropy.experiments._context import quiet_progress\n"
            "assert 'transformers' not in sys.modules\n"
            "with quiet_progress(True):\n"
            "    from transformers.utils import logging\n"
            "    from huggingface_hub.utils import are_progress_bars_disabled\n"
            "    assert not logging.is_progress_bar_enabled() and are_progress_bars_disabled()\n"
            "print(logging.is_progress_bar_enabled(), are_progress_bars_disabled())\n")
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, env=env, cwd=REPO,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False"]


def test_resume_refuses_another_config_and_accepts_more_seeds(tmp_path, capsys):
    _run(tmp_path, sets=[*SMALL, "seeds=[0]"], plot=False)
    # the values, and what to do instead: "drop --resume" alone was refused in turn (a trial)
    with pytest.raises(ValueError, match=r"^Cannot resume in .*: its run ran with decay=0\.8 where this one has 0\.5\. "
                                         r"Give another --results-dir to keep both, or drop --resume and give "
                                         r"--overwrite to replace it\.$"):
        _run(tmp_path, sets=[*SMALL, "seeds=[0]", "decay=0.5"], resume=True, plot=False)
    more = _run(tmp_path, sets=[*SMALL, "seeds=[0, 1]"], resume=True, plot=False).results
    assert more["seeds"] == [0, 1]
    assert more == _run(tmp_path / "fresh", sets=[*SMALL, "seeds=[0, 1]"], plot=False).results
    # fewer seeds: this run's tables are of them, said (a trial's finished 4-seed run was rewritten for 2 silently)
    capsys.readouterr()
    execute(TEMPLATE, TEMPLATE.config(sets=[*SMALL, "seeds=[1]"]), results_dir=tmp_path, device="cpu", resume=True,
            quiet=False, plot=False)
    assert (f"{tmp_path}: --resume leaves out seeds 0 of the run there: this run's tables and figures are of the values "
            f"given (their finished parts stay in the folder; give them again to include them).") in capsys.readouterr().err


def test_a_results_dir_holding_other_files_is_refused(tmp_path):
    (tmp_path / "thesis.tex").write_text("precious")
    with pytest.raises(ValueError, match="holds files but no run.json"):
        _run(tmp_path)
    assert (tmp_path / "thesis.tex").read_text() == "precious" and len(list(tmp_path.iterdir())) == 1


def test_threads_are_set_during_the_run_and_restored(tmp_path, monkeypatch):
    import torch
    from threadpoolctl import threadpool_info

    seen = []
    original = template_run._one_seed

    def recording(*args):
        seen.append((torch.get_num_threads(), {pool["num_threads"] for pool in threadpool_info()}))
        return original(*args)

    monkeypatch.setattr(template_run, "_one_seed", recording)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        _run(tmp_path, threads=1, plot=False)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    assert seen and all(t == 1 and pools <= {1} for t, pools in seen)


def test_device_auto_and_bad_devices():
    import torch

    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device("cpu") == "cpu"
    for bad in ("gpu", "cuda:x", "cpu:1", ""):
        with pytest.raises(ValueError, match="--device must be auto, cpu, cuda, cuda:N"):
            resolve_device(bad)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="torch sees no CUDA device"):
            resolve_device("cuda:0")


# ---------------------------------------------------------------- fault suite: kill -9, then --resume
_KILL_CODE = """
import sys
from isotropy.experiments._template.experiment import EXPERIMENT as E
from isotropy.experiments._runner import execute
execute(E, E.config(sets=sys.argv[2:]), results_dir=sys.argv[1], device="cpu", quiet=True, plot=False)
"""
_KILL_SETS = ["seeds=[0, 1, 2, 3, 4, 5, 6, 7]", "sample_sizes=[50, 800]", "n_features=24"]


def test_kill_9_at_random_points_then_resume_gives_identical_results(tmp_path):
    reference = _run(tmp_path / "ref", sets=_KILL_SETS, plot=False)
    expected = _snapshot(tmp_path / "ref")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    rng = np.random.default_rng(12345)
    out = tmp_path / "killed"
    for attempt in range(3):
        proc = subprocess.Popen([sys.executable, "-c", _KILL_CODE, str(out), *_KILL_SETS], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # wait until the child holds the results directory, then kill it at a random point of its work
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and not (out / ".isotropy.owner.json").exists():
            time.sleep(0.005)
        time.sleep(float(rng.uniform(0.0, 0.4)) * attempt)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        resumed = _run(out, sets=_KILL_SETS, resume=True, plot=False)
        # killed after it finished: --resume has nothing to run (no results returned; the files are compared below)
        assert resumed.skipped or resumed.results == reference.results, attempt
        got = _snapshot(out)
        assert {k: v for k, v in got.items() if k not in ("run.json", "config.yaml")} == \
               {k: v for k, v in expected.items() if k not in ("run.json", "config.yaml")}, attempt
        assert json.loads((out / "run.json").read_text())["status"] == "finished"
        assert not (out / ".previous").exists()
        # the next attempt starts a fresh run over these finished results and is killed in turn


# ---------------------------------------------------------------- the template is a real experiment of the one layout
def test_template_has_the_layout_and_its_record_binds_the_science_by_module_name(tmp_path):
    import importlib

    from click.testing import CliRunner

    from isotropy.experiments._template import config as template_config

    for module in ("config", "run", "plot", "experiment"):
        importlib.import_module(f"isotropy.experiments._template.{module}")
    assert TEMPLATE.package == "isotropy.experiments._template"
    assert TEMPLATE.config_model is template_config.TemplateConfig
    from isotropy.experiments._command import make_command

    result = CliRunner().invoke(make_command(TEMPLATE), ["--set", "sample_sizes=[50, 100]", "--set", "n_features=8",
                                                         "--seeds", "0,1", "--results-dir", str(tmp_path / "t"),
                                                         "--quiet", "--no-plot"])
    assert result.exit_code == 0, result.output
    table = (tmp_path / "t" / "summary.md").read_text()
    assert result.output.startswith(table)  # the runner reads the report file back, once
    assert json.loads((tmp_path / "t" / "run.json").read_text())["status"] == "finished"
    figures = TEMPLATE.plot(tmp_path / "t")
    assert list(figures) == ["figures/isoscore_vs_n"]


def test_runner_always_hands_run_the_prepared_data(tmp_path, monkeypatch):
    seen = []
    original = template_run.run

    def spying(config, results_dir, ctx):
        seen.append(ctx.prepared)
        return original(config, results_dir, ctx)

    monkeypatch.setattr(template_run, "run", spying)
    _run(tmp_path / "p", plot=False)
    assert len(seen) == 1 and set(seen[0]) == {"spectrum"}


def test_run_json_records_the_command_shell_quoted(monkeypatch, tmp_path):
    """A --set value with a space is recorded quoted, so the command in run.json (and claims.json) re-runs as given."""
    import shlex
    import sys

    from click.testing import CliRunner

    from isotropy.experiments._claims import command_of
    from isotropy.experiments._command import make_command

    args = ["--set", "sample_sizes=[50, 100]", "--set", "n_features=8", "--seeds", "0", "--results-dir",
            str(tmp_path / "t"), "--quiet", "--no-plot"]
    monkeypatch.setattr(sys, "argv", ["isotropy", "run", "_template", *args])
    result = CliRunner().invoke(make_command(TEMPLATE), args)
    assert result.exit_code == 0, result.output
    recorded = json.loads((tmp_path / "t" / "run.json").read_text())["command"]
    assert shlex.split(recorded) == ["isotropy", "run", "_template", *args]
    assert "--set sample_sizes=[50, 100]" not in recorded  # quoted, not joined with a bare space
    assert shlex.split(command_of(tmp_path / "t", "x"))[3:5] == ["--set", "sample_sizes=[50, 100]"]


def test_run_json_of_python_m_isotropy_records_a_command_a_shell_runs(monkeypatch, tmp_path):
    """`python -m isotropy run ...` was recorded as `__main__.py run ...` (argv[0] is isotropy/__main__.py), a command
    no shell runs, and the claims then fell back to the generic command instead of the one that ran."""
    import shlex
    import sys

    from click.testing import CliRunner

    from isotropy.experiments._claims import command_of
    from isotropy.experiments._command import make_command

    args = ["--set", "n_features=8", "--seeds", "0", "--results-dir", str(tmp_path / "t"), "--quiet", "--no-plot"]
    monkeypatch.setattr(sys, "argv", ["/site-packages/isotropy/__main__.py", "run", "_template", *args])
    result = CliRunner().invoke(make_command(TEMPLATE), args)
    assert result.exit_code == 0, result.output
    recorded = json.loads((tmp_path / "t" / "run.json").read_text())["command"]
    assert shlex.split(recorded) == ["python", "-m", "isotropy", "run", "_template", *args]
    assert command_of(tmp_path / "t", "fallback") == "isotropy run _template --set n_features=8 --seeds 0"


def test_run_and_measure_share_their_silencing_flags(tmp_path):
    """`isotropy run` takes --no-progress as --quiet; `isotropy measure --quiet` is run's --quiet (no progress, no
    notes; warnings and the table stay), where it was --no-progress alone and still printed every note (a trial)."""
    import numpy as np
    from click.testing import CliRunner

    from isotropy.cli import cli, load_experiment
    from isotropy.experiments._command import make_command
    from isotropy.measure.command import command as measure_command

    run = make_command(load_experiment("classifier-geometry"))
    for flag in ("--quiet", "--no-progress"):
        assert run.make_context("classifier-geometry", [flag]).params["quiet"] is True
    assert run.make_context("classifier-geometry", []).params["quiet"] is False
    for flag, progress, quiet in (("--quiet", None, True), ("--no-progress", False, False), ("--progress", True, False)):
        params = measure_command.make_context("measure", ["x.npy", flag]).params
        assert (params["progress"], params["quiet"]) == (progress, quiet)
    assert measure_command.make_context("measure", ["x.npy"]).params["progress"] is None
    np.save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(40, 60)))  # 40 rows of 60: a span warning
    said = {}
    for flags in ((), ("--quiet",), ("--no-progress",)):
        result = CliRunner().invoke(cli, ["measure", str(tmp_path / "x.npy"), *flags])
        assert result.exit_code == 0, result.output
        said[flags] = result.stderr.splitlines()
        assert "isoscore" in result.stdout
    assert any(line.startswith("Note: isoscore_star left out") for line in said[()])
    assert said[("--no-progress",)] == said[()]
    assert said[("--quiet",)] == [line for line in said[()] if not line.startswith("Note: ")]
    assert any(line.startswith("Warning: isoscore: 40 rows in 60 features") for line in said[("--quiet",)])
    result = CliRunner().invoke(cli, ["measure", str(tmp_path / "x.npy"), "--quiet", "--progress"])
    assert result.exit_code == 2 and "--quiet turns the progress off; give --progress or --quiet, not both." in \
        result.output
    # the switch is put back when the command ends: the next command in this process notes again
    assert CliRunner().invoke(cli, ["measure", str(tmp_path / "x.npy")]).stderr.splitlines() == said[()]


def test_progress_bars_are_drawn_on_a_terminal_only(monkeypatch):
    """An experiment's bars (and those of the libraries it calls) go to a terminal, never into a log file: redirected,
    stderr keeps the log lines without hundreds of carriage-return updates. --quiet draws none anywhere."""
    import io

    from isotropy.experiments._context import RunContext

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    for stream, quiet, drawn in ((io.StringIO(), False, False), (Terminal(), False, True), (Terminal(), True, False)):
        monkeypatch.setattr(sys, "stderr", stream)
        context = RunContext(experiment="t", results_dir=Path("unused"), quiet=quiet)
        assert context.show_progress is drawn
        with context.progress(total=3, file=stream) as bar:
            bar.update(3)
        assert ("3/3" in stream.getvalue()) is (drawn or not quiet)
        assert ("\r" in stream.getvalue()) is drawn  # a bar's updates on a terminal only


def test_a_run_in_a_log_file_says_each_tenth_of_its_work(monkeypatch):
    """`isotropy run ... > log 2>&1` printed nothing for minutes, then everything (a trial): with stderr not a
    terminal, a progress bar is one line at each tenth of the work, as `isotropy measure --progress` writes in a log."""
    import io

    from isotropy.experiments._context import RunContext

    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    context = RunContext(experiment="t", results_dir=Path("unused"), quiet=False)
    bar = context.progress(total=40, desc="demo (polarity)", unit="update")
    bar.set_postfix(seed=0)
    for _ in range(40):
        bar.update(1)
    bar.close()
    lines = stream.getvalue().splitlines()
    assert lines == [f"demo (polarity): {10 * t}% ({4 * t}/40 update), seed=0" for t in range(1, 11)]
    stream.truncate(0)
    stream.seek(0)
    assert list(context.progress(iterable=[7, 8, 9], desc="t", unit="seed")) == [7, 8, 9]
    assert stream.getvalue().splitlines() == ["t: 33% (1/3 seed)", "t: 66% (2/3 seed)", "t: 100% (3/3 seed)"]


def test_run_alone_prints_its_help_as_help_lays_it_out(capsys):
    """`isotropy run` alone: the help and the list of experiments on several lines, not one squeezed 'Error:' line."""
    from isotropy.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["run"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and not err.startswith("Error:")
    assert err.splitlines()[0].startswith("Usage: isotropy run") and "classifier-geometry" in err
    assert len(err.splitlines()) > 8


def test_resume_without_plotting_says_the_figures_are_the_earlier_runs(tmp_path, capfd):
    """--resume --no-plot leaves figures drawn from fewer seeds: the run says so, and how to redraw them."""
    config = TEMPLATE.config(sets=[*SMALL, "seeds=[0]"])
    execute(TEMPLATE, config, results_dir=tmp_path, device="cpu", quiet=False, plot=True)
    capfd.readouterr()
    more = TEMPLATE.config(sets=[*SMALL, "seeds=[0, 1]"])
    execute(TEMPLATE, more, results_dir=tmp_path, device="cpu", resume=True, quiet=False, plot=False)
    err = capfd.readouterr().err
    assert "drawn from an earlier run's results" in err and f"isotropy plot {tmp_path}" in err
    execute(TEMPLATE, TEMPLATE.config(sets=[*SMALL, "seeds=[0, 1, 2]"]), results_dir=tmp_path, device="cpu",
            resume=True, quiet=False, plot=True)
    assert "earlier run's results" not in capfd.readouterr().err  # redrawn: nothing to say


def test_run_json_records_the_data_folder_as_an_absolute_path(tmp_path, monkeypatch):
    """Without --data-dir the record said "data" (relative to wherever the run was started: a new-user trial); it is
    now the folder's absolute path, as with the flag."""
    monkeypatch.delenv("ISOTROPY_DATA", raising=False)
    monkeypatch.chdir(tmp_path)
    _run(tmp_path / "run", plot=False)
    assert json.loads((tmp_path / "run" / "run.json").read_text())["data_dir"] == str(tmp_path / "data")


def test_resume_refuses_other_thread_counts_and_records_each_part(tmp_path):
    # a run on 2 threads resumed with --threads 1 finished with seeds of each, and run.json said 1 thread; a default run
    # recorded "threads": null, not the counts that made its numbers
    _run(tmp_path, sets=[*SMALL, "seeds=[0]"], plot=False, threads=2)
    first = json.loads((tmp_path / "run.json").read_text())
    assert first["threads"] == 2 and first["threads_in_effect"]["torch"] == 2
    assert all(count == 2 for count in first["threads_in_effect"].values())
    with pytest.raises(ValueError, match=r"^Cannot resume in .*: its run computed with threads \{.*'torch': 2.*\} and "
                                         r"this one would use \{.*'torch': 1.*\}, which changes the last digits of the "
                                         r"numbers\. Resume with --threads 2, or use another --results-dir\.$"):
        _run(tmp_path, sets=[*SMALL, "seeds=[0, 1]"], resume=True, plot=False, threads=1)
    assert json.loads((tmp_path / "run.json").read_text()) == first  # refused before anything was written
    more = _run(tmp_path, sets=[*SMALL, "seeds=[0, 1]"], resume=True, plot=False, threads=2).results
    meta = json.loads((tmp_path / "run.json").read_text())
    assert [part["started"] for part in meta["earlier_runs"]] == [first["started"]]
    assert meta["earlier_runs"][0]["versions"] == first["versions"] and meta["resumed"]
    assert more == _run(tmp_path / "fresh", sets=[*SMALL, "seeds=[0, 1]"], plot=False, threads=2).results
    default = json.loads((_run(tmp_path / "default", plot=False).results_dir / "run.json").read_text())
    assert default["threads"] is None and default["threads_in_effect"]["torch"] >= 1


def test_resume_refuses_another_device(tmp_path):
    _run(tmp_path, sets=[*SMALL, "seeds=[0]"], plot=False)
    meta = json.loads((tmp_path / "run.json").read_text())
    (tmp_path / "run.json").write_text(json.dumps({**meta, "device": "cuda:0", "status": "interrupted"}))
    with pytest.raises(ValueError, match=r"^Cannot resume in .*: its run computed on device 'cuda:0' and this one on "
                                         r"'cpu', which changes the numbers\. Resume with --device cuda:0, or use "
                                         r"another --results-dir\.$"):
        _run(tmp_path, sets=[*SMALL, "seeds=[0, 1]"], resume=True, plot=False)


def test_resume_compares_only_the_thread_pools_both_runs_saw():
    from isotropy.experiments._runner import _resume_conditions

    previous = {"device": "cpu", "threads": None, "threads_in_effect": {"torch": 2, "blas": 2, "openmp": 2}}
    # before prepare, a fresh process may not have loaded the library of a pool yet: not a change of threads
    assert _resume_conditions(previous, {"device": "cpu", "threads_in_effect": {"torch": 2, "blas": 2}}, Path("r"))
    with pytest.raises(ValueError, match=r"Resume with the thread settings it ran with"):
        _resume_conditions(previous, {"device": "cpu", "threads_in_effect": {"torch": 2, "blas": 1}}, Path("r"))


def test_a_replaced_run_and_a_resume_with_nothing_to_resume_are_said(tmp_path, capsys):
    """A fresh run into a finished run's folder replaced it without a word, and --resume into a new (mistyped) folder
    quietly started a fresh run: both are said on stderr."""
    def run(resume):
        return execute(TEMPLATE, TEMPLATE.config(sets=SMALL), results_dir=tmp_path / "r", device="cpu",
                       resume=resume, quiet=False, plot=False)

    capsys.readouterr()
    run(resume=True)
    err = capsys.readouterr().err
    assert f"{tmp_path / 'r'}: --resume found no earlier run there; starting a fresh run." in err
    assert "replacing" not in err
    run(resume=False)
    err = capsys.readouterr().err
    assert (f"{tmp_path / 'r'}: replacing the finished _template run there (without --resume), which ran with the "
            f"same settings; its results are deleted once this run writes its first result, and put back if it stops "
            f"before (--results-dir DIR runs it elsewhere and keeps both).") in err
    assert "found no earlier run" not in err


def test_a_run_of_other_settings_is_refused_without_overwrite_and_said_with_it(tmp_path, capsys):
    """`--set updates=20 --quiet` replaced the setup's finished run in its folder without a word (a user trial), then
    with a notice, which a later trial still found too easy to miss (`--updates 5` after `--updates 10` deleted a
    finished run): a fresh run into a folder holding a run of other settings is refused, naming them and the ways to
    keep it, unless --overwrite; with it, the notice is given with --quiet too, naming the settings that differ."""

    _run(tmp_path / "r", plot=False)
    before = _snapshot(tmp_path / "r")
    capsys.readouterr()
    with pytest.raises(ValueError) as refused:
        _run(tmp_path / "r", sets=[*SMALL, "seeds=[1]"], plot=False)
    assert str(refused.value) == (f"{tmp_path / 'r'} holds a finished _template run, which ran with seeds=[0, 1, 2] where "
                                  f"this one has [1]: a fresh run there would delete its results. Give --results-dir DIR "
                                  f"to keep both, or --overwrite to replace it (results_dir= and overwrite=True in "
                                  f"Python).")
    assert _snapshot(tmp_path / "r") == before  # nothing touched
    with pytest.raises(ValueError, match=r"^--resume continues the run in --results-dir \(same settings\) and --overwrite"):
        _run(tmp_path / "r", resume=True, overwrite=True, plot=False)
    from click.testing import CliRunner

    from isotropy.experiments._command import make_command

    args = ["--set", "sample_sizes=[50, 400]", "--set", "n_features=16", "--seeds", "1", "--device", "cpu", "--quiet",
            "--no-plot", "--results-dir", str(tmp_path / "r")]
    result = CliRunner().invoke(make_command(TEMPLATE), args)  # the command: refused (its ValueError is the CLI's line)
    assert isinstance(result.exception, ValueError) and "or --overwrite to replace it" in str(result.exception)
    assert _snapshot(tmp_path / "r") == before
    capsys.readouterr()
    _run(tmp_path / "r", sets=[*SMALL, "seeds=[1]"], plot=False, overwrite=True)
    err = capsys.readouterr().err
    assert err == (f"{tmp_path / 'r'}: replacing the finished _template run there (without --resume), which ran with "
                   f"seeds=[0, 1, 2] where this one has [1]; its results are deleted once this run writes its first result, "
                   f"and put back if it stops before (--results-dir DIR runs it elsewhere and keeps both).\n")
    assert json.loads((tmp_path / "r" / "run.json").read_text())["config"]["seeds"] == [1]


def test_a_resume_that_wrote_its_results_and_then_failed_is_recorded_as_failed(tmp_path, monkeypatch):
    """A resume whose parts were all there rewrites the run's aggregates and then failed in its report: its records
    must say so (failed, with the seeds it ran), not be put back to the finished run before it (a review), which
    they are only when the resume wrote nothing."""
    _run(tmp_path, sets=[*SMALL, "seeds=[0, 1]"], plot=False)

    def broken(*args, **kwargs):
        raise RuntimeError("the report failed")

    monkeypatch.setattr(type(TEMPLATE), "report", broken)
    with pytest.raises(RuntimeError, match="the report failed"):
        _run(tmp_path, sets=[*SMALL, "seeds=[0]"], resume=True, plot=False)
    meta = json.loads((tmp_path / "run.json").read_text())
    assert meta["status"] == "failed" and meta["seeds"] == [0]


@pytest.mark.parametrize("variables", [{}, {"MKL_NUM_THREADS": "1"}])
def test_thread_limits_reach_the_pools_a_run_loads_inside_the_block(variables):
    """``--threads 1`` left the pools loaded after the block started (scipy's own OpenBLAS, scikit-learn's libgomp:
    loaded by an experiment's prepare or run) on one thread per CPU, while run.json said 1; a pool loaded inside the
    block is set back when it ends, to the count it loads with under the same environment (MKL's variable, which
    OpenBLAS does not read, set it to 1). A fresh process, so that scipy and scikit-learn are loaded inside it."""
    import os
    import subprocess
    import sys

    script = """
import json, numpy, torch
from threadpoolctl import threadpool_info
from isotropy.experiments._context import thread_limits
from isotropy.experiments._runner import threads_in_effect
def pools():
    return {lib["filepath"]: lib["num_threads"] for lib in threadpool_info()}
outside = pools()
with thread_limits(1):
    import scipy.linalg, sklearn.cluster
    inside, recorded = pools(), threads_in_effect()
after = pools()
print(json.dumps({"outside": outside, "inside": inside, "recorded": recorded, "after": after}))
"""
    # the same imports without the block, in a process of their own: the counts the pools load with (the reference
    # for "set back", measured rather than assumed one per CPU: a BLAS may cap its own count)
    fresh = """
import json, numpy, torch, scipy.linalg, sklearn.cluster
from threadpoolctl import threadpool_info
print(json.dumps({lib["filepath"]: lib["num_threads"] for lib in threadpool_info()}))
"""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                             "GOTO_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")}
    env.update(variables)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    done = subprocess.run([sys.executable, "-c", fresh], capture_output=True, text=True, env=env, check=True)
    loaded_alone = json.loads(done.stdout.strip().splitlines()[-1])
    new = set(seen["inside"]) - set(seen["outside"])
    assert new, "scipy and scikit-learn brought no pool of their own: nothing to check here"
    assert all(count == 1 for count in seen["inside"].values()), seen["inside"]
    assert all(count == 1 for count in seen["recorded"].values()), seen["recorded"]
    assert any(loaded_alone[path] > 1 for path in new) or os.cpu_count() == 1, loaded_alone  # else nothing is set back
    assert all(seen["after"][path] == loaded_alone[path] for path in new), (seen["after"], loaded_alone)
    assert all(seen["after"][path] == count for path, count in seen["outside"].items())


def test_a_runs_own_config_yaml_reruns_into_a_folder_named_for_that_run(tmp_path):
    """A trial: re-running two finished runs from their config.yaml (--setup A/config.yaml, --setup B/config.yaml) sent
    both to results/<experiment>/config, the second replacing the first. A config.yaml beside a run.json is named for
    its run's folder; any other YAML file keeps its stem, and a packaged setup its name."""
    from isotropy.cli import load_experiment
    from isotropy.experiments._runner import _setup_label

    experiment = load_experiment("classifier-geometry")
    for name in ("cg", "cgk2"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "run.json").write_text("{}")
        (tmp_path / name / "config.yaml").write_text("experiment: classifier-geometry\n")
        assert experiment.default_results_dir(str(tmp_path / name / "config.yaml")) == Path(
            "results", "classifier-geometry", name)
        # and its setup is that name in the table row, the claims' ids and messages (it was "config", a trial)
        assert _setup_label(str(tmp_path / name / "config.yaml")) == name
    (tmp_path / "config.yaml").write_text("experiment: classifier-geometry\n")  # no run beside it: its stem
    assert (_setup_label(str(tmp_path / "config.yaml")), _setup_label("mine.yml"), _setup_label("demo")) == (
        "config", "mine", "demo")
    assert experiment.default_results_dir(str(tmp_path / "config.yaml")) == Path("results", "classifier-geometry",
                                                                                   "config")
    assert experiment.default_results_dir(str(tmp_path / "mine.yml")) == Path("results", "classifier-geometry", "mine")
    assert experiment.default_results_dir("demo") == Path("results", "classifier-geometry", "demo")
    # the run's own folder (results/<experiment>/<name>, from the folder the command runs in) is never the default:
    # a fresh run there moves the run's results aside; nor is a run's .previous folder named '.previous'
    own = tmp_path / "results" / "classifier-geometry" / "demo"
    (own / ".previous").mkdir(parents=True)
    for folder in (own, own / ".previous"):
        (folder / "run.json").write_text("{}")
        (folder / "config.yaml").write_text("experiment: classifier-geometry\n")
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        assert experiment.default_results_dir("results/classifier-geometry/demo/config.yaml") == Path(
            "results", "classifier-geometry", "demo-rerun")
        assert experiment.default_results_dir("results/classifier-geometry/demo/.previous/config.yaml") == Path(
            "results", "classifier-geometry", "demo-previous")
        assert _setup_label("results/classifier-geometry/demo/.previous/config.yaml") == "demo-previous"
        assert _setup_label("results/classifier-geometry/demo/config.yaml") == "demo"
    finally:
        os.chdir(cwd)


def test_a_rerun_whose_saved_config_differs_only_by_an_old_default_is_not_refused(tmp_path, monkeypatch, capsys):
    """A run saved before a default changed records the old value (classifier-geometry's text_column "text", now
    null): compared raw, the same command was refused as a run of other settings (a review), where --resume takes it
    as the same config. Compared through hashed_values, as --resume compares them, it is replaced as the same."""
    _run(tmp_path / "r", plot=False)
    meta_path = tmp_path / "r" / "run.json"
    meta = json.loads(meta_path.read_text())
    new_default = meta["config"]["decay"]
    meta["config"]["decay"] = 0.123  # what an earlier version saved for today's default
    meta_path.write_text(json.dumps(meta))
    config_model = TEMPLATE.config_model

    def hashed_values(cls, values):
        return {**values, "decay": new_default if values.get("decay") == 0.123 else values.get("decay")}

    monkeypatch.setattr(config_model, "hashed_values", classmethod(hashed_values))
    capsys.readouterr()
    _run(tmp_path / "r", plot=False)  # not refused
    assert "which ran with the same settings" in capsys.readouterr().err
    meta["config"]["decay"] = 0.5  # another value: other settings, refused
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(ValueError, match=rf"which ran with decay=0\.5 where this one has {new_default}"):
        _run(tmp_path / "r", plot=False)
