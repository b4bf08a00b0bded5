"""Fuzz tests of the readers that had none (trial-readers): ``--set KEY=VALUE`` overrides, checkpoints read with
``load_checkpoint``, entries of the embeddings cache, and ``.npy`` files cut short or with bytes after the array.

The contract, as in ``test_fuzz_readers.py``: every input is either read exactly (the values written) or refused
in one line by a ``ValueError``; never another exception, never other values.
"""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
from _fuzz import spliced
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _one_line(exc: BaseException) -> str:
    message = str(exc)
    assert "\n" not in message.strip() and len(message) < 800, message
    return message


# ---------------------------------------------------------------- --set KEY=VALUE
_KEYS = st.sampled_from(["seeds", "zetas", "batch_sizes", "n_batches", "synthetic.n_features", "synthetic", "x",
                         "seeds.0", "synthetic.decay.x", "", ".", "a..b", "x" * 1000, "synthetic." + "y" * 1000])
_VALUES = st.one_of(
    st.text(alphabet="[]{},:&*!|>-0123456789.e+ \nabx'\"#@%", max_size=40),
    st.sampled_from(["[0, 1]", "[.nan]", "1e999", "&a [*a]", "!!python/name:os.system", "[" * 80 + "]" * 80,
                     "9" * 5000, "null", "yes", "[0.1, 0.2]", "{a: 1, a: 2}", "\x00", "\udcff"]))


@SETTINGS
@given(pairs=st.lists(st.tuples(_KEYS, _VALUES), min_size=1, max_size=3), raw=st.booleans())
def test_set_overrides_resolve_or_are_refused_in_one_line(pairs, raw):
    from isotropy.experiments._config import resolve_config
    from isotropy.experiments.minibatch_stability.config import MinibatchStabilityConfig

    sets = [k if raw and not i else f"{k}={v}" for i, (k, v) in enumerate(pairs)]  # a pair without '=' too
    try:
        config = resolve_config(MinibatchStabilityConfig, experiment="minibatch-stability", default_setup="minilm",
                                sets=sets)
    except ValueError as exc:
        _one_line(exc)
        return
    assert isinstance(config, MinibatchStabilityConfig)


# ---------------------------------------------------------------- checkpoints (torch.load(weights_only=True))
def _checkpoint() -> tuple[bytes, dict]:
    torch = pytest.importorskip("torch")
    state = {"step": 3, "weights": torch.arange(6, dtype=torch.float32).reshape(2, 3), "name": "run-0"}
    buf = io.BytesIO()
    torch.save(state, buf)
    return buf.getvalue(), state


@SETTINGS
@given(data=st.binary(max_size=64), cut=st.integers(0, 2000), how=st.sampled_from(["splice", "cut", "flip", "raw"]))
def test_damaged_checkpoints_load_exactly_or_are_refused_in_one_line(tmp_path_factory, data, cut, how):
    import torch

    from isotropy.models._safety import load_checkpoint

    valid, state = _checkpoint()
    if how == "splice":
        damaged = spliced(valid, data)
    elif how == "cut":
        damaged = valid[: cut % len(valid)]
    elif how == "flip":
        damaged = bytearray(valid)
        for i, byte in enumerate(data[:8]):
            damaged[(cut + 97 * i) % len(damaged)] = byte
        damaged = bytes(damaged)
    else:
        damaged = data
    path = tmp_path_factory.mktemp("ckpt") / "state.pt"
    path.write_bytes(damaged)
    try:
        loaded = load_checkpoint(path)
    except ValueError as exc:
        assert str(path) in _one_line(exc)
        return
    assert isinstance(loaded, dict)
    if damaged == valid:
        assert loaded["step"] == 3 and loaded["name"] == "run-0"
        assert torch.equal(loaded["weights"], state["weights"])


# ---------------------------------------------------------------- the embeddings cache
def _cache_entry(X) -> bytes:
    buf = io.BytesIO()
    np.save(buf, X)
    return buf.getvalue()


@SETTINGS
@given(data=st.binary(max_size=64), cut=st.integers(0, 400), how=st.sampled_from(["splice", "cut", "append", "raw"]),
       n=st.integers(1, 4))
def test_damaged_cache_entries_are_a_miss_or_the_rows_written(tmp_path_factory, data, cut, how, n):
    from isotropy.models.encoders import _load_cached

    X = (np.arange(n * 3, dtype=np.float32).reshape(n, 3) - 4) / 8  # exact in float32
    valid = _cache_entry(X)
    damaged = {"splice": lambda: spliced(valid, data), "cut": lambda: valid[: cut % len(valid)],
               "append": lambda: valid + data, "raw": lambda: data}[how]()
    path = tmp_path_factory.mktemp("cache") / "entry.npy"
    path.write_bytes(damaged)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _load_cached(path, n)
    if got is None:  # a miss: said in one warning naming the file
        assert len(caught) == 1 and str(path) in str(caught[0].message) and "\n" not in str(caught[0].message)
        return
    assert not caught
    np.testing.assert_array_equal(got, X)  # the only rows a cache entry may give back


# ---------------------------------------------------------------- .npy: cut, appended, spliced
@SETTINGS
@given(n=st.integers(1, 5), d=st.integers(1, 4), data=st.binary(max_size=64), cut=st.integers(0, 300),
       how=st.sampled_from(["cut", "append", "splice"]), reader=st.sampled_from(["embeddings", "mmap", "labels"]))
def test_damaged_npy_files_read_exactly_or_are_refused_in_one_line(tmp_path_factory, n, d, data, cut, how, reader):
    from isotropy.io.embeddings import read_embeddings
    from isotropy.io.labels import read_labels

    X = np.arange(n * d, dtype=np.float32).reshape(n, d) / 4
    if reader == "labels":
        X = np.arange(n, dtype=np.int64) % 3
    valid = _cache_entry(X)
    damaged = {"cut": lambda: valid[: cut % len(valid)], "append": lambda: valid + data,
               "splice": lambda: spliced(valid, data)}[how]()
    path = tmp_path_factory.mktemp("npy") / "x.npy"
    path.write_bytes(damaged)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if reader == "labels":
                got = read_labels(path)
            else:
                got = read_embeddings(path, mmap_mode="r" if reader == "mmap" else None)[0]
    except ValueError as exc:
        _one_line(exc)
        return
    assert damaged == valid  # anything else read is a silent wrong answer (bytes after the array were ignored)
    if reader == "labels":
        np.testing.assert_array_equal(got, X)
    else:
        np.testing.assert_array_equal(got, X.astype(got.dtype))
