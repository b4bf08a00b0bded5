"""``python -m isotropy`` and the ``isotropy`` console command: :func:`entry`.

:func:`entry` imports the command-line interface inside its own ``try``: a Ctrl-C while it loads (click, the
CLI module) is the command's ``Interrupted.`` and exit status 130, as later, not a ``KeyboardInterrupt``
traceback from inside the imports. What runs before it, ``import isotropy`` itself, imports nothing but the
standard library (its names are loaded on first use), so that window is a few milliseconds.
"""

import sys


def entry(argv=None):
    """The console entry point: :func:`isotropy.cli.main`, with a Ctrl-C during its import handled as it handles one."""
    try:
        from isotropy.cli import main
    except KeyboardInterrupt:
        sys.stderr.write("Interrupted.\n")
        sys.exit(130)
    main(argv)


if __name__ == "__main__":
    entry()
