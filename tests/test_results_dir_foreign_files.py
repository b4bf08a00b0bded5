"""A run lists as its own only what it wrote, never what another process wrote into its folder meanwhile.

Before, the lock listed every name created or changed while it was held: an ``isotropy measure --json``
output, another run's folder inside it, or a user's NOTES.md appended to during the run were listed,
and the next fresh run moved them aside and deleted them.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from isotropy.experiments._results import write_text
from isotropy.experiments._results_dir import (
    MANIFEST_NAME,
    PREVIOUS_NAME,
    Replacement,
    ResultsLock,
    check_results_dir,
    toolkit_entries,
)


def _fresh_run(results_dir, files, *, during=None):
    """What the runner does: lock, move the previous results aside, write through the run's writer, commit."""
    check_results_dir(results_dir)
    with ResultsLock(results_dir):
        replacement = Replacement(results_dir)
        replacement.recover()
        replacement.move_aside()
        write_text(results_dir / "run.json", json.dumps({"status": "running"}))
        for name, text in files.items():
            write_text(results_dir / name, text)
            replacement.commit()
        if during is not None:
            during()


def _another_process_writes(path, text, mode="w"):
    code = "import sys; open(sys.argv[1], sys.argv[3]).write(sys.argv[2])"
    subprocess.run([sys.executable, "-c", code, str(path), text, mode], check=True)


def test_files_another_process_writes_during_a_run_are_not_listed_and_survive_the_next_fresh_run(tmp_path):
    out = tmp_path / "n2"
    _fresh_run(out, {"summary.json": "1"})
    (out / "NOTES.md").write_text("my notes\n")

    def meanwhile():
        _another_process_writes(out / "my-measure.json", '{"isoscore": 0.5}')
        _another_process_writes(out / "NOTES.md", "appended during the run\n", "a")
        (out / "inner").mkdir()
        _another_process_writes(out / "inner" / "data.txt", "x")

    _fresh_run(out, {"summary.json": "2", "seeds/seed_0.json": "s"}, during=meanwhile)
    listed = set(json.loads((out / MANIFEST_NAME).read_text()))
    assert listed == {"run.json", "summary.json", "seeds"}
    _fresh_run(out, {"summary.json": "3"})
    assert (out / "my-measure.json").read_text() == '{"isoscore": 0.5}'
    assert (out / "NOTES.md").read_text() == "my notes\nappended during the run\n"
    assert (out / "inner" / "data.txt").read_text() == "x"
    assert not (out / "seeds").exists() and not (out / PREVIOUS_NAME).exists()  # the run's own old files went


def test_a_name_the_run_writes_is_listed_before_its_file_is_in_place(tmp_path):
    # a kill -9 after the rename still finds the name listed: the next fresh run moves it aside
    out = tmp_path / "run"
    with ResultsLock(out):
        write_text(out / "part.json", "1")
        assert "part.json" in json.loads((out / MANIFEST_NAME).read_text())


def test_a_results_dir_inside_a_folder_in_use_is_refused_and_one_inside_a_finished_run_is_left_alone(tmp_path):
    outer = tmp_path / "n2"
    _fresh_run(outer, {"summary.json": "1"})
    refusal = (r"^--results-dir '.*n2/inner-run' lies inside '.*n2', which is in use \(pid \d+ on .*\); expected a "
               r"directory outside a folder that is being written\.$")
    with ResultsLock(outer), pytest.raises(ValueError, match=refusal):  # a run going on there (or a plot drawing)
        check_results_dir(outer / "inner-run")
    check_results_dir(tmp_path / "beside")  # a folder beside it is fine
    _fresh_run(outer / "inner-run", {"summary.json": "inner"})  # inside the finished run: its own run
    _fresh_run(outer, {"summary.json": "2"})
    assert (outer / "inner-run" / "summary.json").read_text() == "inner"


def test_a_failed_run_restores_the_previous_results_and_leaves_what_others_wrote_meanwhile(tmp_path):
    out = tmp_path / "n2"
    _fresh_run(out, {"summary.json": "1"})
    check_results_dir(out)
    with ResultsLock(out):
        replacement = Replacement(out)
        replacement.move_aside()
        write_text(out / "run.json", "{}")
        write_text(out / "part.json", "new")
        _another_process_writes(out / "my-measure.json", "{}")
        (out / "inner-run").mkdir()  # a run's folder copied in (cp -a c1 n2/inner-run)
        (out / "inner-run" / "run.json").write_text("{}")
        replacement.restore()  # the run failed before its first result
    assert (out / "summary.json").read_text() == "1" and not (out / "part.json").exists()
    assert (out / "my-measure.json").read_text() == "{}"
    assert (out / "inner-run" / "run.json").read_text() == "{}"


def test_another_runs_folder_listed_by_an_earlier_version_is_never_moved_aside(tmp_path):
    out = tmp_path / "n2"
    _fresh_run(out, {"summary.json": "1"})
    inner = out / "inner-run"
    inner.mkdir()
    (inner / "run.json").write_text('{"status": "finished"}')
    listed = json.loads((out / MANIFEST_NAME).read_text())
    (out / MANIFEST_NAME).write_text(json.dumps([*listed, "inner-run"]))  # as the old lock listed it
    assert inner not in toolkit_entries(out)
    _fresh_run(out, {"summary.json": "2"})
    assert (inner / "run.json").read_text() == '{"status": "finished"}'


def _plot_holds(results):
    """A process that holds ``results``' lock as ``isotropy plot`` does, until killed; started once it holds it."""
    code = ("import sys, time; from pathlib import Path; from isotropy.experiments._results_dir import ResultsLock; "
            "ResultsLock(Path(sys.argv[1]), purpose='plot').acquire(); print('held', flush=True); time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", code, str(results)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_a_run_or_plot_refused_because_a_plot_holds_the_folder_is_told_it_is_a_plot(tmp_path, capsys):
    from isotropy.cli import main

    results = tmp_path / "p2"
    _fresh_run(results, {"summary.json": "1"})
    (results / "run.json").write_text(json.dumps({"experiment": "classifier-geometry", "status": "finished"}))
    holder = _plot_holds(results)
    try:
        with pytest.raises(ValueError, match=r"^--results-dir '.*p2' is in use by an 'isotropy plot' drawing its "
                                             r"figures \(pid \d+ on .*\); wait for it to finish"):
            ResultsLock(results).acquire()
        with pytest.raises(SystemExit):
            main(["plot", str(results)])
        err = capsys.readouterr().err
        assert err.startswith(f"Error: {str(results)!r} is in use by an 'isotropy plot' drawing its figures (pid ")
        assert err.rstrip().endswith("plot it once that has finished.") and "is running" not in err
    finally:
        holder.kill()
        holder.wait()


def test_plot_of_a_run_killed_before_its_run_json_says_where_the_previous_results_are(tmp_path, capsys):
    from isotropy.cli import main

    results = tmp_path / "d"
    _fresh_run(results, {"summary.json": "1"})
    with ResultsLock(results):  # the next run moved them aside and was killed before it wrote run.json
        Replacement(results).move_aside()
    with pytest.raises(SystemExit) as info:
        main(["plot", str(results)])
    err = capsys.readouterr().err.strip()
    assert info.value.code == 2
    assert err == (f"Error: The run in {str(results)!r} was interrupted before it wrote its run.json and has no "
                   f"results to plot. The previous run's results are in {str(results / PREVIOUS_NAME)!r}; the next "
                   f"'isotropy run' there (with --resume or without) puts them back before it starts.")
