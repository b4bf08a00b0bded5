"""``python -m isotropy``: the same as the ``isotropy`` command."""

from isotropy.cli import main

if __name__ == "__main__":
    main()
