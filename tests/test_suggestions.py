"""Misspelt names get a one-line refusal with the closest accepted name; an unknown model fails in seconds offline."""

from __future__ import annotations

import re

import pytest

from isotropy import IsotropyValueError
from isotropy._utils.suggest import did_you_mean
from isotropy.cli import main


def _cli(args, capsys):
    with pytest.raises(SystemExit) as info:
        main(args)
    captured = capsys.readouterr()
    return info.value.code, captured.out, captured.err


def test_did_you_mean_finds_the_closest_name_case_insensitively():
    assert did_you_mean("ISOSCOR", ["isoscore", "isoscore_star"]) == " Did you mean 'isoscore'?"
    assert did_you_mean("nothing-like-it", ["isoscore"]) == ""
    assert did_you_mean(3, ["isoscore"]) == ""


@pytest.mark.parametrize(("args", "expected"), [
    (["run", "classifer-geometry"], "Did you mean 'classifier-geometry'?"),
    (["run", "istra"], "Did you mean 'istar'?"),
    (["mesure", "x.npy"], "Did you mean 'measure'?"),
])
def test_a_misspelt_command_is_one_line_with_a_suggestion(args, expected, capsys):
    code, out, err = _cli(args, capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("Error: ") and expected in err, err


def test_a_usage_error_is_one_line_that_points_at_help(capsys):
    code, _, err = _cli(["plot"], capsys)
    assert code == 2 and err.count("\n") == 1 and "Missing argument 'PATH'" in err and "isotropy plot --help" in err


@pytest.mark.parametrize(("name", "suggestion"), [("gemma-3-27m", "gemma-3-270m"),
                                                  ("all-MiniLM_L6-v2", "all-MiniLM-L6-v2"),  # as written
                                                  ("gema3-270M", "gemma-3-270m"),
                                                  ("some-org/unknown-model", None),
                                                  # other models, not typos (a trial was sent to them)
                                                  ("all-MiniLM-L12-v2", None), ("gemma-3-270m-it", None),
                                                  ("paraphrase-MiniLM-L6-v2", None), ("gemma-3-1b", None),
                                                  ("gemma-3-27b", None), ("google/gemma-3-27b-it", None),
                                                  ("all-MiniLM-L6-v1", None), ("all-MiniLM-L6-v3", None)])
def test_an_unknown_model_name_fails_fast_offline_with_the_accepted_forms(name, suggestion, monkeypatch):
    from isotropy.models.resolve import resolve_model

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(IsotropyValueError, match="hub cannot be reached") as info:
        resolve_model(name)
    message = str(info.value)
    assert "packaged name (all-MiniLM-L6-v2, gemma-3-270m)" in message and "\n" not in message
    assert (f"Did you mean '{suggestion}'?" in message) if suggestion else "Did you mean" not in message
    from isotropy.models.resolve import _PACKAGED_NAMES, PACKAGED_MODELS

    assert sorted(name.lower() for name in _PACKAGED_NAMES) == sorted(PACKAGED_MODELS)  # the same names, as written


def test_a_missing_path_is_named_as_a_path(tmp_path):
    from isotropy.models.resolve import resolve_model

    with pytest.raises(FileNotFoundError, match="does not exist"):
        resolve_model(str(tmp_path / "no-such-model"))
    (tmp_path / "notes.yaml").write_text("x: 1\n")  # exists, but is no model: it was said not to exist
    with pytest.raises(IsotropyValueError, match=r"^The model '.*notes\.yaml' is a file, not a model directory or a "
                                                 r"\.gguf file: expected a local model directory"):
        resolve_model(str(tmp_path / "notes.yaml"))


def test_the_hub_check_honours_offline_mode(monkeypatch):
    from isotropy.models import resolve

    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    assert resolve._hub_reachable() is False


def test_a_weights_or_embeddings_file_named_as_a_model_says_what_to_give_instead(tmp_path):
    """``--model vectors.vec`` (word vectors) and ``--model folder/model.safetensors`` (a model's weights file) were told
    only that a file is not a model directory (a user trial): the weights file now names its folder, and an
    embeddings or word-vector file is sent to ``isotropy measure FILE``; a file of no known kind keeps the plain line."""
    from isotropy.models.resolve import resolve_model

    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"\0" * 8)
    with pytest.raises(IsotropyValueError, match=rf"is a weights file of the model folder '{re.escape(str(folder))}' "
                                                 r"\(beside its config\.json\): give that folder\.$"):
        resolve_model(str(folder / "model.safetensors"))
    for name in ("vectors.vec", "emb.npy", "glove.6B.50d.txt", "GoogleNews.bin"):
        (tmp_path / name).write_bytes(b"0")
        with pytest.raises(IsotropyValueError, match=rf"measure them as EMBEDDINGS \(isotropy measure "
                                                     rf"{re.escape(str(tmp_path / name))}\)\.$"):
            resolve_model(str(tmp_path / name))
    (tmp_path / "notes.yaml").write_text("x: 1\n")
    with pytest.raises(IsotropyValueError, match=r"or a Hugging Face hub name while online\.$"):
        resolve_model(str(tmp_path / "notes.yaml"))


@pytest.mark.parametrize(("given", "name"), [("I_W", "partition_isotropy"), ("I(W)", "partition_isotropy"),
                                             ("PR", "participation_ratio"), ("erank", "effective_rank"),
                                             ("CH", "calinski_harabasz_score"), ("IsoScore*", "isoscore_star"),
                                             ("ParticipationRatio", "participation_ratio")])
def test_a_metrics_table_header_or_class_name_suggests_its_metric(given, name):
    """The --model table heads its columns I(W), PR, CH, erank: `--metrics I_W` got no suggestion (a trial)."""
    from isotropy.metrics.table import check_metric_names

    with pytest.raises(ValueError, match=rf" Did you mean '{name}'\?"):
        check_metric_names([given], caller="isotropy measure")
