"""Shared fixtures: the real data sets in ../shared/data, offline model hubs, the numpy/torch backends.

Under ``CI=true`` a missing data set (in ../shared/data or a packaged one) fails the test (never a skip); elsewhere
it skips.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings as _hypothesis_settings

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("ISOTROPY_SHARED_DATA", REPO.parent / "shared" / "data"))

# model hubs are unreachable here: never wait on them
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("NLTK_DATA", str(SHARED_DATA / "nltk_data"))

# Property tests: no per-example deadline (the CPU is shared and its speed varies several-fold), and
# under CI the same examples on every run (derandomised), so that CI's verdict on a commit is the
# commit's, not the draw's; elsewhere hypothesis explores new examples on each run.
_hypothesis_settings.register_profile("isotropy", deadline=None)
_hypothesis_settings.register_profile("ci", deadline=None, derandomize=True, database=None)
_hypothesis_settings.load_profile("ci" if os.environ.get("CI", "").lower() == "true" else "isotropy")


def shared_data_path(*parts: str) -> Path:
    """Path to a data set under ../shared/data: fail under CI, skip elsewhere, when it is missing."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        message = f"data set {path} is missing (expected ../shared/data beside the repository)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


class MarkerPayload:
    """Pickles to a call of ``open(marker, "w")``: a file whose reader unpickles it with full pickle creates the marker
    (the readers' tests check that no file runs code)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def packaged_data(module: str, extra: str) -> None:
    """Require the pip package ``module`` that ships a data set or model: fail under CI, skip elsewhere, when it is
    not installed (the [test] extra installs it, so CI never skips the test for want of it)."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        from isotropy._utils.install import extra_command

        message = f"the packaged data of {module!r} is not installed ({extra_command(extra)})"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The ../shared/data directory (fails under CI, skips elsewhere, when absent)."""
    return shared_data_path()


@pytest.fixture(params=["numpy", "torch"])
def backend(request):
    """Run a test once per backend: yields a function turning a numpy array into that backend's array."""
    if request.param == "numpy":
        return lambda a, **kw: np.asarray(a)
    import torch

    return lambda a, requires_grad=False: torch.tensor(np.asarray(a), requires_grad=requires_grad)


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny tensors: one intra-op thread avoids OpenMP spin contention on a shared CPU (restored after)."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Keep embedding caches of tests out of the user's home directory (shared within a session)."""
    monkeypatch.setenv("ISOTROPY_CACHE", str(tmp_path_factory.getbasetemp() / "isotropy-cache"))
