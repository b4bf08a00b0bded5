"""click parameter types shared by the library's commands (``isotropy measure``) and the experiments' (``isotropy run``).

Here, not in :mod:`isotropy.experiments`, which the library never imports.
"""

from __future__ import annotations

import click

from isotropy._utils.validation import _describe

__all__ = ["BoundedInt"]


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
