"""TwoNNDimension(max_samples=...) keeps a uniform sample of all rows seen, whatever the split, merge or resume.

Before, each instance drew its keys from a generator seeded with (random_state, rank) that was neither in the
state nor shared: two instances merged in one process gave their i-th rows the same key (200 rows kept, 100
distinct keys, rows i and 500 + i kept or left together), and a resume from ``state_dict`` restarted the stream
(6.318 instead of 5.596 uninterrupted). Expected samples come from an independent numpy uint64 implementation of
the row hash; expected values from :func:`isotropy.twonn_dimension` on that sample in float64 numpy.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from isotropy import twonn_dimension
from isotropy.training import TwoNNDimension

MASK = (1 << 64) - 1


def _mix64(x):
    """SplitMix64's mixing function on numpy uint64 (wrapping arithmetic)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _reference_keys(X, random_state):
    """The documented key of each float64 row: 53 bits of mix(Σ_j mix(bits_ij + j·φ + seed)), j = 1..d."""
    seed = np.random.SeedSequence(random_state).generate_state(1, np.uint64)[0]
    bits = (np.asarray(X, dtype=np.float64) + 0.0).view(np.uint64)
    salt = (np.arange(1, X.shape[1] + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) + seed
    with np.errstate(over="ignore"):
        h = _mix64(_mix64(bits + salt).sum(axis=1, dtype=np.uint64))
    return (h >> np.uint64(11)).astype(np.float64) * 2.0**-53


def _reference_value(X, max_samples, random_state=0):
    X = np.asarray(X, dtype=np.float64)
    keep = np.sort(np.argsort(_reference_keys(X, random_state), kind="stable")[:max_samples])
    return twonn_dimension(X[keep])


@pytest.fixture
def X():
    return torch.randn(1000, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(0))


def _kept_keys(metric):
    return torch.cat(list(metric.keys)) if isinstance(metric.keys, list) else metric.keys


def test_keys_are_the_documented_row_hash(X):
    metric = TwoNNDimension(random_state=7)
    metric.update(X[:300])
    np.testing.assert_array_equal(_kept_keys(metric).numpy(), _reference_keys(X[:300].numpy(), 7))
    # a row's key is its values': -0.0 and 0.0 are one value, another seed gives other keys
    signed = torch.tensor([[0.0, 1.0], [-0.0, 1.0]], dtype=torch.float64)
    other = TwoNNDimension(random_state=7)
    other.update(signed)
    keys = _kept_keys(other)
    assert keys[0] == keys[1]
    assert not torch.equal(TwoNNDimension(random_state=8)._keys(X[:300]), _kept_keys(metric))


def test_merge_of_disjoint_streams_keeps_distinct_keys_and_the_uninterrupted_sample(X):
    a, b = TwoNNDimension(max_samples=100), TwoNNDimension(max_samples=100)
    a.update(X[:500])
    b.update(X[500:])
    a.merge_state(b)
    keys = _kept_keys(a)
    assert keys.numel() == 200 and torch.unique(keys).numel() == 200
    whole = TwoNNDimension(max_samples=100)
    for batch in X.split(128):
        whole.update(batch)
    expected = _reference_value(X.numpy(), 100)
    assert float(a.compute()) == float(whole.compute())
    assert float(whole.compute()) == pytest.approx(expected, rel=1e-12)
    # the other order of the merge keeps the same rows
    c = TwoNNDimension(max_samples=100)
    c.update(X[500:])
    first = TwoNNDimension(max_samples=100)
    first.update(X[:500])
    c.merge_state(first)
    assert float(c.compute()) == float(a.compute())


def test_resume_from_state_dict_equals_the_uninterrupted_stream(X):
    m = TwoNNDimension(max_samples=100)
    m.persistent(True)
    m.update(X[:500])
    resumed = TwoNNDimension(max_samples=100)
    resumed.persistent(True)
    resumed.load_state_dict(m.state_dict())
    resumed.update(X[500:])
    whole = TwoNNDimension(max_samples=100)
    whole.update(X[:500])
    whole.update(X[500:])
    assert float(resumed.compute()) == float(whole.compute())  # bit-identical
    assert float(resumed.compute()) == pytest.approx(_reference_value(X.numpy(), 100), rel=1e-12)


def test_forward_keeps_the_same_sample(X):
    metric = TwoNNDimension(max_samples=100)
    for batch in X.split(250):
        metric(batch)
    assert float(metric.compute()) == pytest.approx(_reference_value(X.numpy(), 100), rel=1e-12)


def test_merged_sample_is_uniform_over_both_streams():
    """Over 200 seeds, two instances see the halves of 60 rows and keep 12 each; after the merge, 12 are kept.

    Each row is kept with probability 12/60 = 0.2, and rows i and 30 + i (the same position in each stream)
    together with probability 0.2 · 11/59 ≈ 0.037 (they were kept in pairs: 0.2)."""
    n, half, cap, seeds = 60, 30, 12, 200
    X = torch.randn(n, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    X[:, 0] = torch.arange(n, dtype=torch.float64)  # the row's index, read back from the kept rows
    kept = np.zeros((seeds, n), dtype=bool)
    for seed in range(seeds):
        a, b = TwoNNDimension(max_samples=cap, random_state=seed), TwoNNDimension(max_samples=cap, random_state=seed)
        a.update(X[:half])
        b.update(X[half:])
        a.merge_state(b)
        rows = torch.cat(list(a.rows)) if isinstance(a.rows, list) else a.rows
        keys = _kept_keys(a)
        keep = torch.topk(keys, cap, largest=False).indices
        kept[seed, rows[keep, 0].long().numpy()] = True
    frequency = kept.mean(axis=0)
    assert np.abs(frequency - cap / n).max() < 0.12  # 5 standard deviations of one row's frequency
    assert abs(frequency[:half].mean() - frequency[half:].mean()) < 0.03
    together = (kept[:, :half] & kept[:, half:]).mean()
    assert together == pytest.approx(cap / n * (cap - 1) / (n - 1), abs=0.02)
