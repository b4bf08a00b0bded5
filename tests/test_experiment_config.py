"""Config loading and ``--set`` parsing shared by the experiment commands."""

from __future__ import annotations

import click
import pytest

from isotropy.experiments._cli import parse_set_options
from isotropy.experiments._results import load_config


def test_overrides_skip_none_but_sets_keep_null():
    config = load_config("layer-geometry", "minilm-wikitext2", {"max_tokens": None, "seed": 7},
                         sets={"static": None, "metrics.n_neighbors": 50})
    assert config["max_tokens"] == 6000  # the packaged value: None means "option not given"
    assert config["seed"] == 7
    assert config["static"] is None  # --set static=null turns the static comparison row off
    assert config["metrics"]["n_neighbors"] == 50


@pytest.mark.parametrize("key", ["bogus", "metrics.bogus", "seed.deeper"])
def test_unknown_keys_are_rejected_at_every_depth(key):
    with pytest.raises(ValueError, match=rf"Unknown config key '{key}' for layer-geometry/minilm-wikitext2"):
        load_config("layer-geometry", "minilm-wikitext2", sets={key: 1})


def test_set_options_parse_yaml_values_and_exponent_numbers():
    parsed = parse_set_options(["a=3e-5", "b=null", "c=first", "d=[1, 2]", "e=true"], example="x=1")
    assert parsed == {"a": 3e-5, "b": None, "c": "first", "d": [1, 2], "e": True}
    with pytest.raises(click.BadParameter, match=r"expected KEY=VALUE \(e.g. x=1\). Got 'novalue' instead"):
        parse_set_options(["novalue"], example="x=1")
