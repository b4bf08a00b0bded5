"""``silhouette_score`` takes ``chunk_size`` as ``silhouette_samples``, ``dunn_index`` and ``kneighbors`` do, so that
the score of all rows is memory-bounded without ``silhouette_samples(...).mean()`` (a user trial: a TypeError)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.metrics import silhouette_score as sklearn_silhouette

from isotropy import IsotropyValueError, silhouette_samples, silhouette_score

rng = np.random.default_rng(0)
Y = np.repeat(np.arange(4), 75)
X = rng.normal(size=(300, 12)) + 1.5 * Y[:, None]


@pytest.mark.parametrize("chunk_size", [7, 64, 300, 10_000])
def test_the_score_is_the_same_whatever_the_chunks(chunk_size):
    reference = sklearn_silhouette(X, Y)
    assert silhouette_score(X, Y, chunk_size=chunk_size) == pytest.approx(reference, abs=1e-12)
    assert silhouette_score(X, Y, chunk_size=chunk_size) == pytest.approx(
        float(np.mean(silhouette_samples(X, Y, chunk_size=chunk_size))), abs=1e-15)
    on_torch = silhouette_score(torch.as_tensor(X), torch.as_tensor(Y), chunk_size=chunk_size)
    assert float(on_torch) == pytest.approx(reference, abs=1e-12)
    sampled = silhouette_score(X, Y, sample_size=120, random_state=0, chunk_size=chunk_size)
    assert sampled == pytest.approx(sklearn_silhouette(X, Y, sample_size=120, random_state=0), abs=1e-12)


def test_a_dask_array_takes_it_as_its_tile_rows():
    import dask.array as da

    assert silhouette_score(da.from_array(X, chunks=(100, 12)), Y, chunk_size=64) == pytest.approx(
        sklearn_silhouette(X, Y), abs=1e-12)


@pytest.mark.parametrize("bad", [0, -3, 2.5, "big"])
def test_a_bad_chunk_size_is_refused_naming_it(bad):
    with pytest.raises((IsotropyValueError, TypeError), match=r"The .chunk_size. parameter of silhouette_score must be"):
        silhouette_score(X, Y, chunk_size=bad)
