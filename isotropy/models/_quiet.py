"""transformers' own progress bars, off while isotropy loads or converts a model."""

from __future__ import annotations

import contextlib

__all__ = ["no_load_report", "quiet_transformers"]


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


@contextlib.contextmanager
def no_load_report():
    """Within the block, transformers logs errors only (restored on exit): no "LOAD REPORT" table.

    transformers 5 prints that table (with terminal escapes, whatever stderr is) when a checkpoint holds more or
    less than the model built: for the base model of a checkpoint with its head (``BertForSequenceClassification``,
    ``LlamaForCausalLM``), the head's tensors as UNEXPECTED, on every load. The head is never used here, and a
    tensor the base model needs but the checkpoint lacks is refused by the loader itself
    (:func:`isotropy.models._weights.refuse_missing_weights`), so the table says nothing the user must act on.
    """
    from transformers.utils import logging

    was = logging.get_verbosity()
    logging.set_verbosity_error()
    try:
        yield
    finally:
        logging.set_verbosity(was)
