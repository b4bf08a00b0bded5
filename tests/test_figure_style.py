"""The house figure style: no text under 8 pt, x tick labels thinned until they do not overlap."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from isotropy.experiments._style import MIN_FONT_SIZE, _overlaps, declutter, house_style


def _crowded_figure():
    with house_style():
        fig = Figure(figsize=(3, 2), layout="constrained")
        left, right = fig.subplots(1, 2)
        left.plot(np.linspace(0.2060, 0.2085, 50), np.arange(50))     # long decimals on a narrow panel
        layers = list(range(19))
        right.plot(layers, np.arange(19))
        right.set_xticks(layers, [f"layer {i}" for i in layers])      # one label per layer
        right.legend(["x"], fontsize=5)
    return fig


def test_declutter_leaves_no_overlapping_tick_labels_and_no_tiny_text():
    fig = _crowded_figure()
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    assert any(_overlaps(ax.xaxis.get_ticklabels(), renderer) for ax in fig.axes)  # the input is crowded
    declutter(fig)
    renderer = fig.canvas.get_renderer()
    assert not any(_overlaps(ax.xaxis.get_ticklabels(), renderer) for ax in fig.axes)
    from matplotlib.text import Text

    assert min(t.get_fontsize() for t in fig.findobj(Text) if t.get_text()) >= MIN_FONT_SIZE
    visible = [label for label in fig.axes[1].xaxis.get_ticklabels() if label.get_visible()]
    assert 1 <= len(visible) < 19  # thinned, not emptied


def test_a_zero_on_a_log_axis_is_marked_not_dropped():
    from isotropy.experiments._style import mark_zeros_on_log_axis

    fig = Figure()
    ax = fig.subplots()
    layers, values = [0, 1, 2, 3], [1e-3, 0.0, 0.2, 0.0]
    ax.plot(layers, values)
    ax.set_yscale("log")
    mark_zeros_on_log_axis(ax, layers, values, color="k")
    marks = [line for line in ax.get_lines() if line.get_marker() == "v"]
    assert len(marks) == 1 and list(marks[0].get_xdata()) == [1, 3] and marks[0].get_label().startswith("0 (off")
    mark_zeros_on_log_axis(ax, layers, values, color="r")  # a second series: marked, labelled once
    assert [line.get_label() for line in ax.get_lines() if line.get_marker() == "v"][1] == "_nolegend_"
