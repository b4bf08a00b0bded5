"""The tasks of the dask paths give the same bits whatever the address of their input arrays.

dask.distributed hands a task an array computed on another worker as a view of the message's bytes, at any address
(float64 blocks arrived 1 to 3 bytes past a multiple of 8), and numpy runs a matrix product on an unaligned array
with other loops, which sum in another order. The unaligned arrays are made here directly (a view of a bytearray at
an odd offset), and a scheduler hands every task its inputs so (:func:`_unaligned_get`): no cluster is needed.
"""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest
from dask.local import get_async, synchronous_executor

import isotropy
import isotropy.distributed as dd
from isotropy.distributed import _covariance


def _unaligned(value, offset=1):
    """``value`` with each numpy array of more than one byte per item copied to ``offset`` bytes past an aligned
    address (also inside tuples, lists and dicts), as dask.distributed hands them over."""
    if isinstance(value, np.ndarray) and value.dtype.itemsize > 1 and value.size:
        view = np.frombuffer(bytearray(value.nbytes + offset), dtype=value.dtype, offset=offset,
                             count=value.size).reshape(value.shape)
        view[...] = value
        assert not view.flags.aligned
        return view
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(_unaligned(item, offset) for item in value)
    if isinstance(value, list):
        return [_unaligned(item, offset) for item in value]
    if isinstance(value, dict):
        return {key: _unaligned(item, offset) for key, item in value.items()}
    return value


def _loads(info):
    if isinstance(info, tuple) and len(info) == 2 and isinstance(info[1], dict):  # (task, its inputs)
        return info[0], {key: _unaligned(value) for key, value in info[1].items()}
    return info  # a result or an error on its way back


def _unaligned_get(dsk, keys, **kwargs):
    """dask's synchronous scheduler, each task handed the results of the tasks it depends on at unaligned addresses."""
    kwargs.pop("num_workers", None)
    return get_async(synchronous_executor.submit, 1, dsk, keys, dumps=lambda info: info, loads=_loads, **kwargs)


def test_a_decorated_task_gets_aligned_copies_of_unaligned_arrays_and_aligned_ones_as_they_are():
    from isotropy.distributed._graph import aligned_arguments

    seen = []

    @aligned_arguments
    def task(a, pair, *, named):
        seen.extend([a, *pair, *named.values()])
        return a.sum()

    rng = np.random.default_rng(0)
    A, B, C = rng.normal(size=(5, 3)), rng.normal(size=4).astype(np.float32), rng.normal(size=2)
    task(_unaligned(A), (B, [1, 2]), named={"c": _unaligned(C, 3)})
    assert all(x.flags.aligned for x in seen if isinstance(x, np.ndarray))
    np.testing.assert_array_equal(seen[0], A)
    assert seen[1] is B  # aligned: not copied
    np.testing.assert_array_equal(seen[3], C)
    assert task.__name__ == "task" and task.__wrapped__.__name__ == "task"


@pytest.mark.parametrize("offset", [1, 2, 3, 4])
@pytest.mark.parametrize("n_features", [4, 12, 24])
def test_the_gram_of_a_chunk_is_the_same_bits_at_any_address(n_features, offset):
    """I(W)'s per-chunk Gram ``BᵀB`` (float64): numpy's product of an unaligned B differed in its last bits
    (1.1e-13 in 44 of the 144 entries of a 300 x 12 chunk, the largest 2853; so the I(W) of the test below); the
    reference is numpy's product of the aligned B."""
    rng = np.random.default_rng(3)
    B = rng.standard_normal((300, n_features)) * np.linspace(0.3, 3, n_features) + 0.7
    e, G, top = _covariance._gram(_unaligned(B, offset))
    assert e == 0 and top == np.abs(B).max()
    assert G.tobytes() == (B.T @ B).tobytes()


_LABELS = np.arange(900) % 4

_METRICS = {
    "isoscore": lambda Y: isotropy.isoscore(Y),
    "isoscore_star": lambda Y: isotropy.isoscore_star(Y, shrinkage_cov=np.eye(Y.shape[1]), zeta=0.3),
    "participation_ratio": lambda Y: isotropy.participation_ratio(Y),
    "cosine_similarity_mean": lambda Y: isotropy.cosine_similarity_mean(Y),
    "partition_isotropy": lambda Y: isotropy.partition_isotropy(Y),
    "uniformity": lambda Y: dd.uniformity(Y, chunk_size=300),
    "uniformity_raw": lambda Y: dd.uniformity(Y, normalize=False, chunk_size=300),
    "silhouette_score": lambda Y: dd.silhouette_score(Y, _LABELS, chunk_size=300),
    "silhouette_cosine": lambda Y: dd.silhouette_samples(Y, _LABELS, metric="cosine", chunk_size=300).compute(),
    "calinski_harabasz_score": lambda Y: dd.calinski_harabasz_score(Y, _LABELS),
    "davies_bouldin_score": lambda Y: dd.davies_bouldin_score(Y, _LABELS),
    "dunn_index": lambda Y: dd.dunn_index(Y, _LABELS, chunk_size=300),
    "neighbour_dimensions": lambda Y: tuple(dd.neighbour_dimensions(Y, n_neighbors=10, chunk_size=300,
                                                                    local_mle=True).values()),
    "kneighbors": lambda Y: dask.compute(*dd.kneighbors(Y, n_neighbors=5, chunk_size=300)),
    "rogue_dimension_share": lambda Y: isotropy.rogue_dimension_share(Y),
    "inter_type_cosine": lambda Y: isotropy.inter_type_cosine(Y, _LABELS, type_vector="mean"),
}


def _bits(value):
    if isinstance(value, tuple | list):
        return b"".join(_bits(item) for item in value)
    return np.asarray(value, dtype=np.float64).tobytes()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(_METRICS))
def test_every_metric_is_the_same_bits_when_every_task_gets_its_inputs_unaligned(name, dtype):
    """Each task handed the results it depends on at unaligned addresses (:func:`_unaligned_get`), the worst a
    cluster does: the value is the bits of the synchronous scheduler's (before the tasks aligned their arguments,
    I(W) of these 900 x 12 float64 rows was 0.004446832045271305, or ...322 with every input unaligned; in
    memory ...314), and that of the in-memory function
    on the materialised array (the reference) to rounding."""
    rng = np.random.default_rng(3)
    X = (rng.standard_normal((900, 12)) * np.linspace(0.3, 3, 12) + 0.7).astype(dtype)
    Y = da.from_array(X, chunks=(300, 12))
    metric = _METRICS[name]
    with dask.config.set(scheduler="sync"):
        expected = metric(Y)
    with dask.config.set(scheduler=_unaligned_get):
        got = metric(Y)
    assert _bits(got) == _bits(expected)
    if name in ("isoscore", "participation_ratio", "cosine_similarity_mean", "partition_isotropy",
                "rogue_dimension_share"):
        assert got == pytest.approx(_METRICS[name](X), rel=1e-10 if dtype == np.float64 else 1e-5)
