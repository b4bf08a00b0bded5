"""layer-geometry's layers string: the indices the run reads (check_layers) are held to MAX_INT.

A review: the bound was checked on the text by a regex of digits, and Python's int() reads underscores:
``--layers 0,1_000_000_000_000`` passed ``--print-config`` and check_layers returned 10**12.
"""

from __future__ import annotations

import pytest
from test_experiment_config import _cli

HUGE = "1" * 5000


@pytest.mark.parametrize("layers", ["1_000_000_000_000", "0,-1_000_000_001", "+1_0_0_0_0_0_0_0_0_0_0, 3",
                                    f"0,{HUGE}"])
def test_layer_geometry_bounds_the_indices_the_run_reads(layers, capsys):
    """A layers string's indices as int() reads them (underscores too) are held to MAX_INT: a check of the digits
    let '1_000_000_000_000' through (--print-config printed it; check_layers read 10**12)."""
    from isotropy.experiments._config import ConfigError
    from isotropy.experiments.layer_geometry.experiment import EXPERIMENT

    refusal = "The 'layers' setting of layer-geometry must hold hidden-state indices in [-1000000000, 1000000000]"
    with pytest.raises(ConfigError) as info:
        EXPERIMENT.config(layers=layers)  # a string (a YAML file's quoted value), not read as an int by YAML
    assert str(info.value).startswith(refusal) and len(str(info.value)) < 400, str(info.value)[:2000]
    if "," in layers:  # a comma-separated --layers is a string
        code, out, err = _cli(["run", "layer-geometry", "--layers", layers, "--print-config"], capsys)
        assert code == 2 and not out and err.startswith(f"Error: {refusal}") and len(err) < 400, err[:2000]


def test_layer_geometry_takes_indices_inside_the_bound_as_int_reads_them():
    from isotropy.experiments.layer_geometry.experiment import EXPERIMENT

    assert EXPERIMENT.config(layers="0, 1_0,-1", pca_layers=None).layers == "0, 1_0,-1"
    for layers in ("0,x", "0,1__0"):
        with pytest.raises(ValueError, match="must be 'all', a comma-separated string"):
            EXPERIMENT.config(layers=layers)
