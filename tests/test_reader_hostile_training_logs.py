"""Hostile-input review of the readers: training logs drawn by ``isotropy plot``.

- ``plot_geometry_log`` draws one line per logged layer, each over every step of its metric, and a layer x step heat
  map: work and memory of layers x steps. A log whose every entry names a layer of its own (a 210 KB
  trainer_state.json of 4,000 entries, ``geometry/isoscore/layer_<i>`` at step i) drew thousands of lines in
  ``isotropy plot``; ten times the entries, a hundred times that. More layers than any model has
  (:data:`isotropy.training.logs.MAX_PLOTTED_LAYERS`) are refused in one line before anything is drawn.
"""

from __future__ import annotations

import json

import pytest

from isotropy._utils.errors import IsotropyValueError
from isotropy.training.logs import MAX_PLOTTED_LAYERS, plot_geometry_log, read_geometry_log


def _log(run, n_layers: int, n_steps: int = 2) -> None:
    history = [{"step": step, **{f"geometry/isoscore/layer_{i}": 0.5 for i in range(n_layers)}}
               for step in range(n_steps)]
    run.mkdir()
    (run / "trainer_state.json").write_text(json.dumps({"log_history": history}), encoding="utf-8")


def test_a_log_of_more_layers_than_a_model_has_is_refused_before_drawing(tmp_path):
    _log(tmp_path / "run", MAX_PLOTTED_LAYERS + 1)
    frame = read_geometry_log(tmp_path / "run")
    assert frame["layer"].nunique() == MAX_PLOTTED_LAYERS + 1  # read whole: the table is linear in the log
    with pytest.raises(IsotropyValueError) as err:
        plot_geometry_log(frame)
    assert str(err.value) == (f"The geometry log holds {MAX_PLOTTED_LAYERS + 1} layers of 'isoscore' (layer_0 to "
                              f"layer_{MAX_PLOTTED_LAYERS}); expected at most {MAX_PLOTTED_LAYERS}, a model's layers, "
                              f"each drawn as a line over every step.")


def test_a_log_of_as_many_layers_as_allowed_is_drawn(tmp_path):
    _log(tmp_path / "run", MAX_PLOTTED_LAYERS)
    figures = plot_geometry_log(read_geometry_log(tmp_path / "run"))
    assert list(figures) == ["geometry_isoscore"]
    lines = figures["geometry_isoscore"].axes[0].get_lines()
    assert len(lines) == MAX_PLOTTED_LAYERS


def test_isotropy_plot_of_a_refused_log_writes_nothing(tmp_path, capsys):
    """'isotropy plot' wrote geometry.csv (and made its folder) before the figures refused the log: a refusal left
    half a result. The figures are now built first."""
    from isotropy.cli import main

    _log(tmp_path / "run", MAX_PLOTTED_LAYERS + 1)
    with pytest.raises(SystemExit) as exit_:
        main(["plot", str(tmp_path / "run")])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.startswith(f"Error: The geometry log holds {MAX_PLOTTED_LAYERS + 1} layers of "
                                              f"'isoscore'")
    assert not (tmp_path / "run" / "geometry-figures").exists()
    _log(tmp_path / "fine", 3)
    main(["plot", str(tmp_path / "fine")])
    assert (tmp_path / "fine" / "geometry-figures" / "geometry.csv").is_file()
