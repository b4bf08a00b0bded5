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
    assert capsys.readouterr().err == ("Error: --random-state '-1': expected an integer >= 0 (the seed of the row "
                                       "sample and of randomised metrics).\n")
    with pytest.raises(ValueError) as caught:  # before the model is looked for
        measure_layers(["a cat sat", "a dog ran"], model=str(tmp_path / "no-model"), random_state=-1)
    assert str(caught.value) == ("The 'random_state' parameter of measure_layers must be an int in the range [0, inf). "
                                 "Got -1 instead.")


@pytest.mark.parametrize(("args", "message"), [
    (["--sample-size", "10", "--random-state", "-1"], "--random-state '-1': expected an integer >= 0"),
    (["--random-state", "abc"], "--random-state 'abc': expected an integer >= 0"),
    (["--workers", "two"], "--workers 'two': expected an integer number of worker processes of at least 1."),
    (["--workers", "0"], "--workers '0': expected an integer number of worker processes of at least 1."),
])
def test_seed_and_workers_of_an_embeddings_file_are_checked_up_front(tmp_path, capsys, args, message):
    """With an embeddings file a negative seed reached numpy's sampler ("Error: expected non-negative integer", naming
    nothing), and --workers two gave click's "'two' is not a valid integer range" (a new-user trial)."""
    import numpy as np

    np.save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(30, 4)))
    with pytest.raises(SystemExit) as exit_:
        main(["measure", str(tmp_path / "x.npy"), *args])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.startswith(f"Error: {message}")
