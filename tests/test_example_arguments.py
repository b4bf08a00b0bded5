"""The packaged training example's command line (examples/training_geometry_sst2.py)."""

import importlib.util
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "training_geometry_sst2.py"


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("training_geometry_sst2", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # (argument parsing only: its heavy imports are inside main)
    return module


@pytest.mark.parametrize("argv, lambdas", [
    ([], [-1.0, 0.0, 1.0]),
    (["--lambdas", "-1", "0", "1"], [-1.0, 0.0, 1.0]),
    (["--lambdas=-5,-3,0.5"], [-5.0, -3.0, 0.5]),  # as `isotropy run istar --lambdas` takes them (a trial's error)
    (["--lambdas", "0,1", "2"], [0.0, 1.0, 2.0]),
])
def test_lambdas_are_space_or_comma_separated(example, argv, lambdas):
    assert example.parse_args(argv).lambdas == lambdas


@pytest.mark.parametrize("argv", [["--lambdas=x,1"], ["--lambdas=,"]])
def test_bad_lambdas_are_one_error_naming_the_option(example, argv, capsys):
    with pytest.raises(SystemExit) as info:
        example.parse_args(argv)
    assert info.value.code == 2 and "error: --lambdas: expected " in capsys.readouterr().err


def _runs(tmp_path, lambdas=("-1", "0"), settings=None, commands=None):
    """Folders lambda_<λ> under tmp_path/out, each with its settings.json when ``settings`` (per λ when a list)."""
    import json

    out = tmp_path / "out"
    for i, lam in enumerate(lambdas):
        (out / f"lambda_{lam}").mkdir(parents=True)
        if settings is not None:
            own = settings[i] if isinstance(settings, list) else settings
            command = commands[i] if commands else "python example.py --x"
            (out / f"lambda_{lam}" / "settings.json").write_text(json.dumps({"settings": own, "command": command}))
    return out


def _plot_only(example, argv):
    args = example.parse_args(argv)
    return example.with_run_settings(args, example.given_options(argv))


def test_plot_only_takes_the_runs_settings_and_lambdas_not_the_defaults(example, tmp_path):
    """--plot-only wrote the defaults (probe of 256, 200 steps) into summary.json and the figure's title, whatever the
    runs had used; it now reads each run's settings.json, and draws every λ run unless --lambdas is given."""
    out = _runs(tmp_path, settings={"probe_size": 64, "max_steps": 120, "lambdas": [0.0], "out": "elsewhere"})
    args, command = _plot_only(example, ["--plot-only", "--out", str(out)])
    assert (args.probe_size, args.max_steps, args.lambdas, args.out) == (64, 120, [-1.0, 0.0], out)
    assert command == "python example.py --x"
    args, _ = _plot_only(example, ["--plot-only", "--out", str(out), "--probe-size", "64", "--lambdas", "0"])
    assert (args.probe_size, args.lambdas) == (64, [0.0])  # the same value given: accepted


def test_plot_only_of_runs_made_one_process_per_lambda(example, tmp_path):
    """The docs' figure: each λ ran in its own process (--lambdas=-1, then --lambdas=0), then --plot-only drew both."""
    out = _runs(tmp_path, settings=[{"probe_size": 64, "lambdas": [-1.0]}, {"probe_size": 64, "lambdas": [0.0]}],
                commands=["python example.py --lambdas=-1", "python example.py --lambdas=0"])
    args, command = _plot_only(example, ["--plot-only", "--out", str(out)])
    assert (args.lambdas, args.probe_size) == ([-1.0, 0.0], 64)
    assert command == ["python example.py --lambdas=-1", "python example.py --lambdas=0"]


def test_plot_only_without_settings_reads_the_lambdas_of_the_folders(example, tmp_path):
    out = _runs(tmp_path, lambdas=("1", "-0.5", "notanumber"))
    args, command = _plot_only(example, ["--plot-only", "--out", str(out), "--probe-size", "32"])
    assert (args.lambdas, args.probe_size, command) == ([-0.5, 1.0], 32, None)


@pytest.mark.parametrize("argv, settings, message", [
    (["--probe-size", "32"], {"probe_size": 64},
     ("error: --probe-size 32: the runs under {out} ran with 64; --plot-only draws them as they ran (leave the option "
     "out)")),
    (["--lambdas", "0,2,3"], {"probe_size": 64},
     "error: --lambdas: no run of λ = 2, 3 under {out}; it holds the runs of λ = -1, 0"),
    ([], [{"probe_size": 64}, {"probe_size": 32}],
     ("error: --plot-only: the runs of λ = -1 and λ = 0 under {out} ran with --probe-size 64 and 32; draw them apart "
     "(--lambdas)")),
])
def test_plot_only_refuses_what_the_runs_did_not_do(example, tmp_path, argv, settings, message):
    """A λ that was not run gave a traceback from the log reader; a setting unlike the runs' would mislabel them."""
    out = _runs(tmp_path, settings=settings)
    with pytest.raises(SystemExit) as info:
        _plot_only(example, ["--plot-only", "--out", str(out), *argv])
    assert str(info.value) == message.format(out=out)


def test_plot_only_without_runs_is_one_error(example, tmp_path):
    with pytest.raises(SystemExit) as info:
        _plot_only(example, ["--plot-only", "--out", str(tmp_path / "nothing")])
    assert str(info.value) == (f"error: --plot-only: no runs under --out {tmp_path / 'nothing'} (folders lambda_<λ>, "
                               f"written by this script without --plot-only)")
