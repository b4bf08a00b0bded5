"""The command line run from a test: ``(exit code, stdout, stderr)`` of an ``isotropy`` command that exits."""

from __future__ import annotations

import pytest


def exiting_cli(argv, capsys):
    """``(exit code, stdout, stderr)`` of ``isotropy ARGV``, which must end in ``SystemExit`` (an error, ``--help``)."""
    from isotropy.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    out = capsys.readouterr()
    return exit_info.value.code, out.out, out.err
