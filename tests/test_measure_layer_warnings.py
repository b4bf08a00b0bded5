"""``measure_layers``' notes and layer warnings are Python warnings, not lines printed to standard error (a user
trial: a Python caller could neither filter, record nor silence them); ``isotropy measure --model`` prints them as
before, ``Note: ...`` and ``Warning: ...``, in the same place among its lines."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from _tiny_models import make_tiny_bert
from click.testing import CliRunner

from isotropy.measure.from_model import LayerNote, LayerWarning, measure_layers

torch = pytest.importorskip("torch")

DISTINCT = ["the cat sat on the mat .", "a dog ran .", "the dog sat on a mat", "a cat ran"]
TEXTS = DISTINCT * 2  # identical rows at every layer: TwoNN's duplicate-rows and few-points warnings
MAX_LENGTH = 7


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("layer-warnings") / "bert")


@pytest.fixture(scope="module")
def expected(bert):
    """The note and the two layer warnings, from the tokenizer's own token counts and the distinct texts."""
    from transformers import AutoConfig, AutoTokenizer

    lengths = [len(ids) for ids in AutoTokenizer.from_pretrained(str(bert))(TEXTS)["input_ids"]]
    n_cut = sum(n > MAX_LENGTH for n in lengths)
    assert 1 < n_cut < len(TEXTS)
    positions = AutoConfig.from_pretrained(str(bert)).max_position_embeddings
    n_distinct = len(set(TEXTS))
    n_ratios = n_distinct - 1
    note = (f"{n_cut} of {len(TEXTS)} texts are longer than {MAX_LENGTH} tokens (max_length={MAX_LENGTH}; the model "
            f"takes up to {positions}): each was cut to its first {MAX_LENGTH} tokens")
    layers = "layers 0, 1, 2: twonn_dimension"
    duplicates = (f"{layers}: the layer has {len(TEXTS) - n_distinct} duplicate rows (at euclidean distance 0 from another "
                  f"row); each distinct point is counted once and neighbours are searched among the {n_distinct} "
                  f"distinct points.")
    few = (f"{layers}: {n_ratios} distance ratios kept (of {n_distinct} points): the estimate's relative standard "
           f"error is about 1/sqrt({n_ratios}) = {round(100 / np.sqrt(n_ratios))} %; measure at least 28 points for "
           f"20 %.")
    # the layers whose estimate is above the n_distinct - 1 dimensions the points span: that warning too, said once
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = _measure(bert)["rows"]
    over = [row["layer"] for row in rows if row["twonn_dimension"] > n_distinct - 1]
    if not over:
        return note, [duplicates, few]
    named = f"layer {over[0]}" if len(over) == 1 else f"layers {', '.join(map(str, over))}"
    span = (f"{named}: twonn_dimension: the estimate is above the {n_distinct - 1} dimensions that {n_distinct} distinct "
            f"points span at most: it is the noise of their few distance ratios, not a dimension of the data; measure "
            f"more points.")
    return note, [duplicates, few, span]


def _measure(bert):
    return measure_layers(TEXTS, model=str(bert), device="cpu", metrics=["twonn_dimension"], max_length=MAX_LENGTH)


def test_notes_and_layer_warnings_are_warnings_and_nothing_is_printed(bert, expected, capsys):
    note, layer_warnings = expected
    with pytest.warns(LayerNote, match="texts are longer than") as caught:
        result = _measure(bert)
    assert capsys.readouterr().err == ""  # printed nothing: it was print(..., file=sys.stderr)
    assert [str(w.message) for w in caught if w.category is LayerNote] == [note]
    assert [str(w.message) for w in caught if w.category is LayerWarning] == layer_warnings
    assert all(w.filename == __file__ for w in caught if w.category in (LayerNote, LayerWarning))  # the user's line
    assert issubclass(LayerNote, UserWarning) and issubclass(LayerWarning, UserWarning)
    assert result["warnings"] == [f"every layer: {note}", *layer_warnings]  # kept with the values, as before
    for category, message in [(LayerNote, note), *((LayerWarning, w) for w in layer_warnings)]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the other two, which pytest.warns passes on
            with pytest.warns(category, match=f"^{re.escape(message)}$"):
                _measure(bert)


def test_the_warnings_can_be_silenced(bert, expected, capsys):
    note, layer_warnings = expected
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("ignore")
        result = _measure(bert)
    assert caught == [] and capsys.readouterr().err == ""
    assert result["warnings"] == [f"every layer: {note}", *layer_warnings]
    with warnings.catch_warnings(record=True) as caught:  # one category off, the other still said
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=LayerNote)
        _measure(bert)
    assert [str(w.message) for w in caught if issubclass(w.category, UserWarning)] == layer_warnings
    assert capsys.readouterr().err == ""


def test_the_command_prints_them_as_before(bert, expected, tmp_path, monkeypatch):
    """``Note: <note>.`` then ``Warning: <layer warning>``, before the IsoScore* warning (said after measure_layers
    returns): the lines and their order of the command when measure_layers printed them itself."""
    from isotropy.cli import cli
    from isotropy.metrics.table import ISOSCORE_STAR_WARNING

    monkeypatch.setenv("ISOTROPY_CACHE", str(tmp_path / "cache"))
    note, layer_warnings = expected
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["measure", "--model", str(bert), "--texts", str(texts), "--max-length",
                                      str(MAX_LENGTH), "--metrics", "twonn_dimension,isoscore_star", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [f"Note: {note}.", *(f"Warning: {w}" for w in layer_warnings),
                                          f"Warning: {ISOSCORE_STAR_WARNING} (--shrinkage-sample)."]
