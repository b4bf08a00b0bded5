"""Packaging: a light ``import isotropy``, every exported name resolves, the console script answers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import isotropy

ISOTROPY = Path(sys.executable).parent / "isotropy"
HEAVY = ("torch", "sklearn", "scipy", "pandas", "matplotlib", "transformers", "sentence_transformers")


def _run(*args):
    return subprocess.run([*args], check=False, capture_output=True, text=True, timeout=120)


def test_import_does_not_import_heavy_frameworks():
    code = ("import json, sys, isotropy; "
            f"print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))")
    result = _run(sys.executable, "-c", code)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


@pytest.mark.parametrize("command", ["measure", "run"])
def test_help_does_not_import_heavy_frameworks(command):
    code = ("import json, sys\n"
            "from isotropy.cli import main\n"
            f"try:\n    main([{command!r}, '--help'])\nexcept SystemExit:\n    pass\n"
            f"print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))")
    result = _run(sys.executable, "-c", code)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


@pytest.mark.parametrize("name", isotropy.__all__)
def test_every_exported_name_resolves(name):
    value = getattr(isotropy, name)
    assert value is not None
    assert getattr(value, "__name__", name) == name
    assert name in dir(isotropy)


def test_dir_offers_the_package_not_what_its_init_imports_for_itself():
    """A trial: tab completion on ``isotropy.`` offered sys, warnings, importlib, types and annotations."""
    public = [name for name in dir(isotropy) if not name.startswith("_")]
    assert not {"annotations", "importlib", "sys", "types", "warnings"} & set(public)
    assert set(isotropy.__all__) <= set(public)


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'isoscroe'"):
        isotropy.isoscroe  # noqa: B018


@pytest.mark.parametrize("args,expect", [
    (["--help"], ["measure", "run", "plot"]),
    (["run", "--help"], ["classifier-geometry", "sts-isotropy", "layer-geometry", "istar"]),
    (["measure", "--help"], ["EMBEDDINGS", "--labels", "--metrics", "--json", "--sample-size", "--key"]),
    (["--version"], [isotropy.__version__]),
])
def test_console_script_help(args, expect):
    result = _run(str(ISOTROPY), *args)
    assert result.returncode == 0, result.stderr
    for word in expect:
        assert word in result.stdout


def test_python_dash_m():
    result = _run(sys.executable, "-m", "isotropy", "--help")
    assert result.returncode == 0, result.stderr
    assert "measure" in result.stdout
