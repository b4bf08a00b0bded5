"""transformers' own progress bars, off while isotropy loads or converts a model."""

from __future__ import annotations

import contextlib

__all__ = ["quiet_transformers"]


@contextlib.contextmanager
def quiet_transformers():
    """Within the block, transformers draws no progress bars of its own (restored on exit).

    Loading and converting a model print transformers' bars ("Loading weights", "Writing model
    shards", the GGUF reader's) on stderr whether or not it is a terminal. The commands report
    their own progress (``isotropy: converting ... / converted in N s``), and a bar under the
    table, in a log or beside ``--json`` is noise.
    """
    from transformers.utils import logging

    was = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            logging.enable_progress_bar()
