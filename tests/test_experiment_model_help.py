"""Every experiment's ``--model`` help names what the code accepts, and agrees with docs/models.md.

The experiments load their model through :func:`isotropy.models.resolve_model` (sentence encoders, pooled
layers, token extraction, the fine-tuning encoder), which takes the packaged all-MiniLM-L6-v2 and
gemma-3-270m, any ``PATH.gguf``, a local transformers directory and a hub name: the help of ``isotropy run
EXPERIMENT --help`` says so for every experiment, from one source, and the table of docs/models.md
lists the same forms.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from isotropy.cli import EXPERIMENTS, cli, load_experiment

DOC = Path(__file__).resolve().parent.parent / "docs" / "models.md"
WITH_MODEL = [name for name in EXPERIMENTS if any(flag == "--model" for flag, _, _ in load_experiment(name).shortcuts)]


def _model_help(name: str) -> str:
    result = CliRunner().invoke(cli, ["run", name, "--help"], terminal_width=400)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("--model"))
    block = [lines[start]]
    for line in lines[start + 1:]:
        if line.strip().startswith("-"):
            break
        block.append(line)
    return " ".join(" ".join(block).split())


def _doc_table_forms() -> list[str]:
    """The first cells of the table at the top of docs/models.md ("you give | what is loaded | ...")."""
    text = DOC.read_text(encoding="utf-8")
    table = text[text.index("| you give |"):].split("\n\n")[0].splitlines()[2:]
    return [row.split("|")[1].strip() for row in table]


def test_every_experiment_has_a_model_option():
    assert set(WITH_MODEL) == {"activation-diagrams", "classifier-geometry", "cluster-finetune",
                               "frozen-classification", "istar", "layer-geometry", "minibatch-stability",
                               "sts-isotropy"}


@pytest.mark.parametrize("name", WITH_MODEL)
def test_the_model_help_names_every_form_of_the_doc_table(name):
    shown = _model_help(name)
    forms = _doc_table_forms()
    assert forms[:3] == ["`all-MiniLM-L6-v2`", "`gemma-3-270m`", "`PATH.gguf`"]
    for form in forms[:3]:
        assert form.strip("`") in shown, (name, form, shown)
    assert "a directory" in forms and "local transformers model directory" in shown, shown
    assert "anything else" in forms and "hub name" in shown, shown


def test_the_model_help_is_one_text_for_every_experiment():
    from isotropy.models.resolve import MODEL_HELP

    for name in WITH_MODEL:
        (text,) = [text for flag, _, text in load_experiment(name).shortcuts if flag == "--model"]
        assert text.startswith(MODEL_HELP), name
        extra = text[len(MODEL_HELP):]
        # classifier-geometry alone also takes static word vectors
        assert extra == "" or name == "classifier-geometry" and re.search(r"glove-6b-50d", extra), (name, extra)


def test_each_form_of_the_help_is_what_resolve_model_accepts(tmp_path, monkeypatch):
    """The packaged names and a .gguf path go to the GGUF conversion (MiniLM to its package), a directory as is."""
    from isotropy.models import gguf, resolve

    converted = []

    def fake_convert(model, **kwargs):
        converted.append(str(model))
        return tmp_path, None

    monkeypatch.setattr(gguf, "_convert_gguf", fake_convert)
    assert Path(resolve.resolve_model("all-MiniLM-L6-v2"), "config.json").is_file()
    assert resolve.resolve_model("gemma-3-270m") == str(tmp_path)
    assert resolve.resolve_model(tmp_path / "some.gguf") == str(tmp_path)
    assert converted == ["gemma-3-270m", str(tmp_path / "some.gguf")]
    assert resolve.resolve_model(tmp_path) == str(tmp_path.resolve())
    for name in ("all-MiniLM-L6-v2", "gemma-3-270m"):
        assert name in resolve.MODEL_HELP and name.lower() in resolve.PACKAGED_MODELS
