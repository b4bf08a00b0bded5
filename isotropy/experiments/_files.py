"""Text and JSON files read back from a results folder or a config, with bounded work and one-line refusals.

A results folder is written by a run but read back by ``isotropy plot``, ``--resume`` and the claims from
whatever is there. Read with ``json.loads(path.read_text())``, a FIFO named ``summary.json`` (or ``--setup
fifo.yaml``) blocked forever in ``open()``, a link to ``/dev/zero`` was read until memory ran out
(``MemoryError``), a manifest of 200,000 ``[`` raised ``RecursionError``, and a file cut short said only
``Expecting property name ...: line 6 column 20 (char 100)``, naming no file.

:func:`read_bytes` refuses what is not a regular file once links are followed (a FIFO, a device, a directory,
a dangling link) before it is opened, and a file past ``limit`` bytes by its size and again while reading (a
file that grows); :func:`read_text` decodes UTF-8 and :func:`read_json` parses with
:func:`isotropy._utils.jsontext.loads` (deep nesting a ``JSONDecodeError`` too). Every refusal is one line,
``The <what> '<path>' <problem>; expected <expected>.``, raised as ``error`` (an
:class:`~isotropy._utils.errors.IsotropyValueError` unless the caller names its own, e.g. ``ConfigError``);
a path that is not there at all is a ``FileNotFoundError`` with the same wording. The exception's
``problem`` attribute holds the ``<problem>`` part alone, for a caller that words its own line.

The readers themselves are :mod:`isotropy.io._paths`' (beside :func:`~isotropy.io._paths.path_kind`, which says
what a path that is not a regular file is, in words), shared with the library's readers (a Hugging Face
``trainer_state.json``: :mod:`isotropy.training.logs`, which may not import the experiments); here they read a
results file unless told otherwise.
"""

from __future__ import annotations

from isotropy._utils.errors import IsotropyValueError
from isotropy.io import _paths
from isotropy.io._paths import read_bytes

__all__ = ["RESULTS_EXPECTED", "RESULTS_LIMIT", "read_bytes", "read_json", "read_text"]

RESULTS_LIMIT = 256 * 2**20  # a results file: the committed runs' largest are under 200 KB
RESULTS_EXPECTED = "the JSON an 'isotropy run' writes there (re-run the experiment into this folder)"


def read_text(path, *, what: str = "results file", expected: str = RESULTS_EXPECTED, limit: int = RESULTS_LIMIT,
              error=IsotropyValueError) -> str:
    """The UTF-8 text of ``path`` (a results file by default): :func:`isotropy.io._paths.read_text`."""
    return _paths.read_text(path, what=what, expected=expected, limit=limit, error=error)


def read_json(path, *, what: str = "results file", expected: str = RESULTS_EXPECTED, limit: int = RESULTS_LIMIT,
              error=IsotropyValueError):
    """The JSON document in ``path`` (a results file by default): :func:`isotropy.io._paths.read_json`."""
    return _paths.read_json(path, what=what, expected=expected, limit=limit, error=error)
