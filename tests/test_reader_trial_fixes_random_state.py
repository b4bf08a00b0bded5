"""Fixes from a new user's trial of ``isotropy measure``: a negative --random-state with --model."""

from __future__ import annotations

import pytest

from isotropy.cli import main
from isotropy.measure.from_model import measure_layers


def test_a_negative_random_state_is_refused_by_name(tmp_path, capsys):
    texts = tmp_path / "t.txt"
    texts.write_text("a cat sat\na dog ran\nthe mat\n")
    with pytest.raises(SystemExit) as exit_:
        main(["measure", "--model", str(tmp_path / "no-model"), "--texts", str(texts), "--random-state", "-1",
              "--sample-size", "2"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == "Error: --random-state -1: expected an integer >= 0 (the seed of the samples).\n"
    with pytest.raises(ValueError) as caught:  # before the model is looked for
        measure_layers(["a cat sat", "a dog ran"], model=str(tmp_path / "no-model"), random_state=-1)
    assert str(caught.value) == ("The 'random_state' parameter of measure_layers must be an int in the range [0, inf). "
                                 "Got -1 instead.")
