"""Files of a results folder and configs that are not what a run writes: refused at once, in one line naming them.

A security trial found that ``isotropy plot``, ``--resume`` and ``--setup`` read them with ``json.loads(path.read_text())``
or ``open()``: a FIFO blocked forever, a link to /dev/zero was read until memory ran out (``MemoryError``), a manifest
of 200,000 ``[`` was a ``RecursionError`` traceback, a ``summary.json`` cut at 100 bytes said only "Expecting property
name ... (char 100)", and a folder whose ``run.json`` is a FIFO was read as a training log. Every read now goes through
:mod:`isotropy.experiments._files`. The commands run in a fresh interpreter with a timeout (and a cap on its memory),
so that the old behaviour fails the test instead of hanging it or exhausting the machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from isotropy._utils.errors import IsotropyValueError
from isotropy.experiments._files import read_bytes, read_json

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"),
                                reason="FIFOs and /dev/zero are POSIX")

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 60  # seconds: each command here takes about one; the old code blocked for ever on a FIFO
MEMORY = 3 * 2**30  # bytes of address space: the old code read /dev/zero until it ran out of memory


def _isotropy(*argv, timeout: float = TIMEOUT) -> tuple[int, str]:
    """``isotropy ARGV`` in a fresh interpreter: (exit status, stderr); a hang fails the test."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    env.pop("ISOTROPY_DEBUG", None)
    try:
        done = subprocess.run([sys.executable, "-m", "isotropy", *map(str, argv)], capture_output=True, text=True,
                              timeout=timeout, env=env, preexec_fn=limit, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"isotropy {' '.join(map(str, argv))} did not finish within {timeout} s (blocked on a FIFO?)")
    return done.returncode, done.stderr


def _in_thread(function, *args, timeout: float = TIMEOUT, unblock: Path | None = None):
    """``function(*args)`` in a thread: its result or exception; a call still blocked after ``timeout`` fails the test
    (and a writer opened on the FIFO ``unblock`` lets the thread end)."""
    outcome = {}

    def target():
        try:
            outcome["value"] = function(*args)
        except BaseException as exc:  # noqa: BLE001 (handed to the test)
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        if unblock is not None:
            os.close(os.open(unblock, os.O_WRONLY | os.O_NONBLOCK))  # the reader sees end of file
            thread.join(5)
        pytest.fail(f"{function.__name__} did not return within {timeout} s (blocked on a FIFO?)")
    return outcome


def _run_folder(folder: Path, experiment: str) -> Path:
    """A finished run's folder of ``experiment`` as far as ``isotropy plot`` looks before it reads the results."""
    folder.mkdir(exist_ok=True)
    (folder / "run.json").write_text(json.dumps({"experiment": experiment, "status": "finished"}))
    if experiment == "classifier-geometry":
        (folder / "curves.csv").write_text("step,isoscore_mean,isoscore_std\n")
    return folder


def _one_line(code: int, err: str) -> str:
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1, err[-2000:]
    return err


# the reproducer's folders: (experiment, the results file plot reads first)
FOLDERS = [("classifier-geometry", "summary.json"), ("minibatch-stability", "results.json")]


@pytest.mark.parametrize(("experiment", "name"), FOLDERS)
def test_plot_refuses_a_fifo_results_file_at_once(tmp_path, experiment, name):
    folder = _run_folder(tmp_path / "run", experiment)
    os.mkfifo(folder / name)
    err = _one_line(*_isotropy("plot", folder, "--out", tmp_path / "figures"))
    assert err == (f"Error: The results file {str(folder / name)!r} is a FIFO (named pipe), not a regular file; "
                   f"expected the JSON an 'isotropy run' writes there (re-run the experiment into this folder).\n")


@pytest.mark.parametrize(("experiment", "name"), FOLDERS)
def test_plot_refuses_a_link_to_dev_zero_without_reading_it(tmp_path, experiment, name):
    folder = _run_folder(tmp_path / "run", experiment)
    os.symlink("/dev/zero", folder / name)
    err = _one_line(*_isotropy("plot", folder, "--out", tmp_path / "figures"))
    assert f"The results file {str(folder / name)!r} is a character device, not a regular file; expected" in err


def test_plot_of_a_summary_cut_short_names_the_file_and_what_was_expected(tmp_path):
    folder = _run_folder(tmp_path / "run", "classifier-geometry")
    summary = json.dumps({"setup": "demo", "data": {"name": "lexicon", "n_items": 1000, "dim": 50},
                          "seeds": [0, 1], "final": {"isoscore": 0.5}}, indent=2)
    (folder / "summary.json").write_text(summary[:summary.index('"data"') + 11])  # cut after '"data": {', as
    # the reproducer's 100 bytes were: it said only "Expecting property name enclosed in double quotes: line 6 column
    # 20 (char 100)"
    err = _one_line(*_isotropy("plot", folder, "--out", tmp_path / "figures"))
    assert err == (f"Error: The results file {str(folder / 'summary.json')!r} is not valid JSON: it ends mid-document "
                   f"(Expecting property name enclosed in double quotes at line 4, column 2), as a file cut short "
                   f"does; expected the JSON an 'isotropy run' writes there (re-run the experiment into this folder).\n")
    (folder / "summary.json").write_text(summary[:100])  # inside a string
    err = _one_line(*_isotropy("plot", folder, "--out", tmp_path / "figures"))
    assert "summary.json' is not valid JSON: it ends mid-document (Unterminated string starting at line" in err


def test_plot_of_a_folder_whose_run_json_is_a_fifo_names_it(tmp_path):
    # it was read as a training log: "holds no 'geometry/<metric>/layer_<i>' value ... geometry callbacks"
    folder = tmp_path / "run"
    folder.mkdir()
    os.mkfifo(folder / "run.json")
    (folder / "results.json").write_text("{}")
    err = _one_line(*_isotropy("plot", folder, "--out", tmp_path / "figures"))
    assert err == (f"Error: The run record {str(folder / 'run.json')!r} is a FIFO (named pipe), not a regular file; "
                   f"expected the run.json an 'isotropy run' writes.\n")


def test_a_fifo_setup_file_is_refused_before_it_is_opened(tmp_path):
    setup = tmp_path / "fifo.yaml"
    os.mkfifo(setup)
    err = _one_line(*_isotropy("run", "classifier-geometry", "--setup", setup, "--print-config"))
    assert err == (f"Error: The config file {str(setup)!r} is a FIFO (named pipe), not a regular file; expected a "
                   f"config file (a few kilobytes of YAML).\n")


def test_load_yaml_of_a_fifo_returns_at_once(tmp_path):
    from isotropy.experiments._config import ConfigError, load_yaml

    setup = tmp_path / "fifo.yaml"
    os.mkfifo(setup)
    outcome = _in_thread(load_yaml, setup, unblock=setup)
    assert isinstance(outcome.get("error"), ConfigError) and "is a FIFO (named pipe)" in str(outcome["error"])


# ---------------------------------------------------------------- the manifest of a results folder
def test_a_manifest_nested_200000_deep_is_unreadable_not_a_recursion_error(tmp_path, capsys):
    from isotropy.cli import main
    from isotropy.experiments._results_dir import MANIFEST_NAME, toolkit_entries

    folder = _run_folder(tmp_path / "run", "minibatch-stability")
    (folder / "results.json").write_text("{}")
    (folder / MANIFEST_NAME).write_text("[" * 200_000)
    # unreadable: the rule for a folder without a list (what is not newer than run.json)
    assert {p.name for p in toolkit_entries(folder)} == {"run.json", "results.json"}
    with pytest.raises(SystemExit) as exit_info:  # isotropy plot reads it when it takes the folder's lock
        main(["plot", str(folder)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "Traceback" not in err and "no 'clouds' where expected" in err


def test_a_fifo_manifest_is_unreadable_at_once(tmp_path):
    from isotropy.experiments._results_dir import MANIFEST_NAME, toolkit_entries

    folder = _run_folder(tmp_path / "run", "minibatch-stability")
    os.mkfifo(folder / MANIFEST_NAME)
    outcome = _in_thread(toolkit_entries, folder, unblock=folder / MANIFEST_NAME)
    assert "error" not in outcome and [p.name for p in outcome["value"]] == ["run.json"]


def test_a_manifest_linked_to_dev_zero_is_not_read(tmp_path):
    folder = _run_folder(tmp_path / "run", "minibatch-stability")
    os.symlink("/dev/zero", folder / ".isotropy.files.json")
    code = (f"import resource, sys; resource.setrlimit(resource.RLIMIT_AS, ({MEMORY}, {MEMORY})); "
            f"from isotropy.experiments._results_dir import toolkit_entries; "
            f"print([p.name for p in toolkit_entries(sys.argv[1])])")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, timeout=TIMEOUT,
                          env=env, check=False)
    assert done.returncode == 0 and done.stdout == "['run.json']\n", done.stderr[-2000:]


# ---------------------------------------------------------------- the reader itself
def test_read_json_caps_the_bytes_and_keeps_good_files(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"a": [1, 2.5, None], "b": "é"}))
    assert read_json(good) == {"a": [1, 2.5, None], "b": "é"}
    with pytest.raises(IsotropyValueError, match=r"good.json' is larger than 10 bytes; expected the JSON"):
        read_json(good, limit=10)
    with pytest.raises(IsotropyValueError, match=r"is larger than 1 MiB; expected x"):
        read_bytes(_big(tmp_path), what="file", expected="x", limit=2**20)  # refused by its size, before reading
    with pytest.raises(FileNotFoundError, match=r"nope.json' does not exist; expected the JSON"):
        read_json(tmp_path / "nope.json")
    with pytest.raises(IsotropyValueError, match=r"is a directory, not a regular file"):
        read_json(tmp_path)
    (tmp_path / "bad.json").write_bytes(b'{"a": "\xff"}')
    with pytest.raises(IsotropyValueError, match=r"bad.json' is not UTF-8 text \(byte 7 is 0xff\)"):
        read_json(tmp_path / "bad.json")
    (tmp_path / "empty.json").write_text("  \n")
    with pytest.raises(IsotropyValueError, match=r"empty.json' is not valid JSON: it is empty"):
        read_json(tmp_path / "empty.json")
    (tmp_path / "odd.json").write_text('{"a": 1,, "b": 2}')
    with pytest.raises(IsotropyValueError, match=r"odd.json' is not valid JSON: Expecting property name enclosed "
                                                 r"in double quotes at line 1, column 9; expected"):
        read_json(tmp_path / "odd.json")


def _big(tmp_path: Path) -> Path:
    path = tmp_path / "big.json"
    path.write_text("[" + "0," * 2**20 + "0]")
    return path
