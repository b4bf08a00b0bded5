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
