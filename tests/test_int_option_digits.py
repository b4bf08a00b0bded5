"""An integer of 5,000 digits (past Python's 4,300-digit limit of int()) given to an experiment command.

Each is one line naming the argument, the value shortened and what was expected, never Python's "Exceeds the limit
(4300 digits) for integer string conversion" nor the value echoed whole.
"""

from __future__ import annotations

import pytest
from test_experiment_config import _cli

from isotropy.experiments._context import max_threads

HUGE = "1" * 5000


def _one_short_line(code, out, err, *starts) -> str:
    line = err.strip()
    assert code == 2 and not out and "\n" not in line, err
    assert "Exceeds the limit" not in line and "sys.set_int_max_str_digits" not in line, line
    assert len(line) < 400 and "(5,0" in line, line  # the value cut, its length said
    assert line.startswith(starts), line
    return line


@pytest.mark.parametrize("argv, start", [
    (["--layers", HUGE], ("Error: The 'layers' setting of layer-geometry must hold hidden-state indices in "
                          "[-1000000000, 1000000000]")),
    (["--layers", f"0,-{HUGE}"], "Error: The 'layers' setting of layer-geometry must hold hidden-state indices in "),
    (["--set", f"pca_layers={HUGE}"], "Error: The 'pca_layers' setting of layer-geometry must hold hidden-state "),
    (["--layers", f"[{HUGE}]"], ("Error: The 'layers' setting of layer-geometry must be 'all', a comma-separated "
                                 "string such as '0,3,6', or a list of hidden-state indices. Got '[1111")),
])
def test_layers_of_5000_digits_is_the_config_error_of_layers(argv, start, capsys):
    code, out, err = _cli(["run", "layer-geometry", *argv, "--print-config"], capsys)
    _one_short_line(code, out, err, start)


def test_a_layers_text_the_run_would_refuse_is_refused_with_the_config():
    """'0,x' passed --print-config and was refused once the model had loaded."""
    from isotropy.experiments._config import ConfigError
    from isotropy.experiments.layer_geometry.experiment import EXPERIMENT

    with pytest.raises(ConfigError, match=r"^The 'layers' setting of layer-geometry must be 'all', a comma-separated "
                                          r"string .* Got '0,x' instead\.$"):
        EXPERIMENT.config(sets=["layers=0,x"])
    for spec in ("all", "LAST", "0, 3,-1", "1000000000"):
        EXPERIMENT.config(sets=[f"layers={spec}", "pca_layers=null"])


@pytest.mark.parametrize("argv, start", [
    (["--seeds", HUGE], ("Error: Invalid value for '--seeds': expected comma-separated non-negative ints such as "
                         "0,1,2. Got '1111")),
    (["--threads", HUGE], f"Error: Invalid value for '--threads': expected an integer in [1, {max_threads()}]. Got '1111"),
    (["--set", f"metrics.n_neighbors={HUGE}"], "Error: --set metrics.n_neighbors: '1111"),
    (["--set", f"seeds=[0, {HUGE}]"], "Error: --set seeds: '[0, 1111"),
])
def test_other_ints_of_5000_digits_are_one_short_line(argv, start, capsys):
    code, out, err = _cli(["run", "layer-geometry", *argv, "--print-config"], capsys)
    line = _one_short_line(code, out, err, start)
    if "--set" in argv:  # what YAML refused, and why
        assert "has too many digits: 5,000, where Python converts at most 4,300" in line


def test_plot_dpi_of_5000_digits_is_one_short_line(tmp_path, capsys):
    code, out, err = _cli(["plot", str(tmp_path), "--dpi", HUGE], capsys)
    _one_short_line(code, out, err, "Error: Invalid value for '--dpi': expected an integer in [10, 2400]. Got '1111")


@pytest.mark.parametrize("layers", ["9" * 5000, 10**5000, [0, 10**5000], (3, -(10**4400))],
                         ids=["string", "int", "list", "tuple"])
def test_the_library_layer_selection_names_a_huge_index_in_one_short_line(layers):
    """select_layers / check_layers formatted the value with repr: Python's 'Exceeds the limit (4300 digits)' for an
    int index of 5,000 digits (or a list holding one), and 5,000 characters echoed for a string."""
    from isotropy._utils.validation import IsotropyValueError
    from isotropy.models.layers import select_layers

    with pytest.raises(IsotropyValueError) as info:
        select_layers(layers, 7, caller="encode_pooled")
    text = str(info.value)
    assert text.startswith("The 'layers' parameter of encode_pooled must be") and len(text) < 300, text
    assert "digits" in text or "..." in text, text
