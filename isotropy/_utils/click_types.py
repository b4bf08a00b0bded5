"""click parameter types shared by the library's commands (``isotropy measure``) and the experiments' (``isotropy run``).

Here, not in :mod:`isotropy.experiments`, which the library never imports.
"""

from __future__ import annotations

import click

from isotropy._utils.validation import _describe

__all__ = ["FIGURE_FORMATS", "STDIN", "BoundedInt", "NonEmpty"]


#: The figure formats every command writes (``isotropy plot --format``, ``isotropy run --format``, ``measure --plot``):
#: those matplotlib writes with its default backends on every platform.
FIGURE_FORMATS = ("png", "svg", "pdf", "eps", "ps", "jpg", "jpeg", "tif", "tiff", "webp")


class BoundedInt(click.IntRange):
    """click's ``IntRange`` whose refusal says what was expected and the value shortened.

    click's own said ``'x' is not a valid integer range`` and echoed the value whole (5,000 digits
    of ``--threads`` or ``--batch-size``, past int()'s 4,300-digit limit, were a 5,000-character line).
    """

    def convert(self, value, param, ctx):
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter:
            if self.max is None:
                expected = f"an integer of at least {self.min}"
            else:
                expected = f"an integer in [{self.min}, {self.max}]"
            self.fail(f"expected {expected}. Got {_describe(value, 80, length=True)} instead.", param, ctx)


#: ``NonEmpty(dash=STDIN)``: ``-`` is standard input, given on as this string.
STDIN = "-"


class NonEmpty(click.ParamType):
    """``inner`` (default a string) refusing the empty string, as an unset shell variable (``"$EMB"``) gives it.

    click's ``Path`` turned ``''`` into ``Path('')``, the current folder: ``isotropy measure ""`` measured every
    ``.npy`` file there as shards of one array, and ``--labels ""`` was refused as "a directory".

    ``dash``: what ``-`` (standard input or output, as in most Unix tools) is for this parameter: ``None``, a path
    like any other; :data:`STDIN`, standard input, given on as the string ``"-"`` (never a ``Path``: ``./-`` is
    the file of that name); else the words that refuse it, after ``Got '-'`` (a file named ``-`` is then ``./-``).
    """

    def __init__(self, inner: click.ParamType = click.STRING, *, expected: str = "a path", dash: str | None = None):
        self.inner, self.expected, self.name, self.dash = inner, expected, inner.name, dash

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value == "":
            self.fail(f"expected {self.expected}. Got '' instead (empty: an unset shell variable?).", param, ctx)
        if self.dash is not None and isinstance(value, str) and value == "-":
            if self.dash == STDIN:
                return STDIN
            self.fail(f"expected {self.expected}. Got '-' {self.dash}; a file named '-' is ./-.", param, ctx)
        return self.inner.convert(value, param, ctx)

    def get_metavar(self, param, ctx):
        return self.inner.get_metavar(param, ctx)

    def shell_complete(self, ctx, param, incomplete):
        return self.inner.shell_complete(ctx, param, incomplete)
