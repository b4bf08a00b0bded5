"""Settings for every test, including the docstring examples under isotropy/ (``--doctest-modules``).

The docstring examples that read data (WordNet) find it in ../shared/data/nltk_data, as the tests
do; model hubs are never contacted.
"""

from __future__ import annotations

import os
from pathlib import Path

_SHARED_DATA = Path(os.environ.get("ISOTROPY_SHARED_DATA", Path(__file__).resolve().parent.parent / "shared" / "data"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("NLTK_DATA", str(_SHARED_DATA / "nltk_data"))
