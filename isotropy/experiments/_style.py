"""One figure style for every experiment: readable text at page width, tick labels that never run together.

The experiments draw with plain matplotlib (``plot.py`` of each); the runner draws them inside
:func:`house_style` and passes the finished figures through :func:`declutter`:

- text sizes are set once (:data:`RC`), and no text of a finished figure is smaller than
  :data:`MIN_FONT_SIZE` points (a figure shown at the 750-pixel width of a docs page scales
  down; 8 pt at 150 dpi stays legible);
- tick labels that overlap (long decimals on a narrow panel, one label per layer of a 19-layer
  model) are thinned: an automatic locator gets fewer bins, a fixed one shows every k-th label.
"""

from __future__ import annotations

import contextlib
import itertools

__all__ = ["MIN_FONT_SIZE", "RC", "declutter", "house_style"]

MIN_FONT_SIZE = 8.0

RC = {
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.fontsize": 9,
    "legend.title_fontsize": 9,
    "figure.titlesize": 12,
    "axes.formatter.useoffset": False,  # "1e-5 + 0.2060" offsets read as noise: full tick values instead
    "axes.formatter.limits": (-3, 4),
}


@contextlib.contextmanager
def house_style():
    """Within the block, figures are created with :data:`RC`."""
    import matplotlib

    with matplotlib.rc_context(RC):
        yield


def _overlaps(labels, renderer) -> bool:
    boxes = [label.get_window_extent(renderer) for label in labels if label.get_visible() and label.get_text()]
    boxes.sort(key=lambda b: b.x0)
    return any(a.x1 > b.x0 + 0.5 for a, b in itertools.pairwise(boxes))


def _thin_x_axis(ax, renderer) -> None:
    from matplotlib.ticker import AutoLocator, FixedLocator, MaxNLocator

    axis = ax.xaxis
    locator = axis.get_major_locator()
    for _ in range(6):
        labels = axis.get_ticklabels()
        if not _overlaps(labels, renderer):
            return
        if isinstance(locator, (AutoLocator, MaxNLocator)):
            n = max(2, len([t for t in axis.get_majorticklocs() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]) // 2)
            locator = MaxNLocator(nbins=n, steps=[1, 2, 2.5, 5, 10])
            axis.set_major_locator(locator)
        elif isinstance(locator, FixedLocator):
            visible = [label for label in labels if label.get_visible()]
            for k, label in enumerate(visible):
                if k % 2:
                    label.set_visible(False)
        else:
            return
        ax.figure.canvas.draw()


def declutter(fig) -> None:
    """Raise every text of ``fig`` to :data:`MIN_FONT_SIZE` and thin x tick labels that overlap (in place)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        if text.get_text() and text.get_fontsize() < MIN_FONT_SIZE:
            text.set_fontsize(MIN_FONT_SIZE)
    if not isinstance(fig.canvas, FigureCanvasAgg):  # a bare Figure(): measure its text with an Agg canvas
        FigureCanvasAgg(fig)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        _thin_x_axis(ax, renderer)


def mark_zeros_on_log_axis(ax, x, y, *, color=None, label: str = "0 (off the log axis)") -> None:
    """On a log y axis, show where ``y`` is 0 (or below) instead of silently dropping those points.

    A value of 0 has no place on a log axis, and matplotlib leaves it out without a mark; I(W) of a
    raw model's layer underflows to exactly 0. Each such point is drawn as a downward triangle on
    the bottom edge of the axes (x in data coordinates), labelled once per axes.
    """
    import numpy as np
    from matplotlib.transforms import blended_transform_factory

    x, y = np.asarray(x), np.asarray(y, dtype=float)
    zero = ~(y > 0)
    if not zero.any():
        return
    labelled = any(line.get_label() == label for line in ax.get_lines())
    ax.plot(x[zero], np.full(int(zero.sum()), 0.0), linestyle="none", marker="v", ms=6, color=color,
            clip_on=False, transform=blended_transform_factory(ax.transData, ax.transAxes),
            label="_nolegend_" if labelled else label)
