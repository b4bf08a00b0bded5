"""Errors of the dask paths: the in-memory function's message for the same input (the reference), and a refused
input does not make a worker log a failed task.

Each expected message is the one the in-memory function raises on the materialised array.
"""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest

import isotropy


@pytest.fixture(scope="module", autouse=True)
def threaded_scheduler():
    with dask.config.set(scheduler="threads"):
        yield


def _message(function, X, *args, **kwargs):
    with pytest.raises((isotropy.IsotropyValueError, TypeError)) as info:
        value = function(X, *args, **kwargs)
        if isinstance(value, tuple | da.Array):
            dask.compute(value)
    return str(info.value)


def _assert_same_error(name, X, *args, chunks=None, **kwargs):
    function = getattr(isotropy, name)
    expected = _message(function, X, *args, **kwargs)
    assert _message(function, da.from_array(X, chunks=chunks or (max(1, X.shape[0]), X.shape[1])), *args,
                    **kwargs) == expected
    return expected


ROWS = np.random.default_rng(0).normal(size=(5, 3))


@pytest.mark.parametrize("n_samples", [0, 1])
@pytest.mark.parametrize(("name", "kwargs"), [("kneighbors", {"n_neighbors": 1}), ("twonn_dimension", {}),
                                              ("mle_dimension", {}), ("uniformity", {})])
def test_too_few_rows_for_the_neighbour_metrics(name, kwargs, n_samples):
    message = _assert_same_error(name, ROWS[:n_samples], **kwargs)
    assert "must have at least" in message and f"Got {n_samples} instead." in message


@pytest.mark.parametrize("n_samples", [0, 1])
@pytest.mark.parametrize("name", ["silhouette_score", "silhouette_samples", "calinski_harabasz_score",
                                  "davies_bouldin_score", "dunn_index"])
def test_too_few_rows_for_the_cluster_metrics(name, n_samples):
    message = _assert_same_error(name, ROWS[:n_samples], np.zeros(n_samples, dtype=int))
    assert message == (f"The 'X' parameter of {name} must have at least 2 samples (rows). Got {n_samples} "
                       f"instead.")


@pytest.mark.parametrize("name", ["isoscore", "isoscore_star", "participation_ratio", "cosine_similarity_mean"])
def test_subnormal_data_name_x_and_the_function(name):
    X = np.random.default_rng(1).normal(size=(300, 5)) * 1e-315
    message = _assert_same_error(name, X, chunks=(70, 5))
    assert message.startswith(f"The 'X' parameter of {name} must have ")
    assert "X_chunk" not in message


def test_cosine_similarity_mean_names_the_first_zero_row():
    X = np.random.default_rng(2).normal(size=(300, 5))
    X[[250, 120]] = 0.0
    assert "Got 2 all-zero row(s) (first at index 120) instead." in \
        _assert_same_error("cosine_similarity_mean", X, chunks=(70, 5))


def test_a_chunk_made_only_of_subnormal_numbers_names_its_rows():
    """Chunks large enough not to be joined (2**18 entries each): the second holds only subnormal numbers."""
    rows = 2**18 // 8
    X = np.random.default_rng(3).normal(size=(2 * rows, 8))
    X[rows:] *= 1e-315
    with pytest.raises(isotropy.IsotropyValueError) as info:
        isotropy.isoscore(da.from_array(X, chunks=(rows, 8)))
    assert str(info.value).startswith(f"The 'X' parameter of isoscore must have a normal number in every row chunk "
                                      f"of a dask array. Got rows {rows} to {2 * rows - 1} made only of subnormal")


# ---------------------------------------------------------------------------- on worker processes: no failed task
@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, memory_limit=400 * 2**20,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        yield client


def _failed_tasks(client):
    """The "Compute Failed" records in the workers' logs (distributed keeps each worker's recent log records)."""
    return sum("Compute Failed" in message for records in client.get_worker_logs().values() for _, message in records)


@pytest.mark.parametrize(("name", "args"), [("isoscore", ()), ("participation_ratio", ()),
                                            ("cosine_similarity_mean", ()), ("rogue_dimension_share", ()),
                                            ("intra_type_cosine", (np.arange(400) % 7,))])
def test_a_refused_nan_is_not_a_failed_task_on_the_workers(client, name, args):
    X = np.random.default_rng(4).normal(size=(400, 6))
    X[321, 4] = np.nan
    X[390, 1] = np.inf  # later in row order, in another chunk
    before = _failed_tasks(client)
    with pytest.raises(isotropy.IsotropyValueError) as info:
        getattr(isotropy, name)(da.from_array(X, chunks=(100, 6)), *args)
    assert str(info.value) == (f"The 'X' parameter of {name} must contain only finite values. "
                               f"Got nan at row 321, column 4 instead.")
    assert _failed_tasks(client) == before


def test_the_failed_task_count_sees_a_failed_task(client):
    """The check above can fail: a task that raises on a worker is counted."""
    def fails():
        raise ValueError("a task that fails")

    before = _failed_tasks(client)
    with pytest.raises(ValueError, match="a task that fails"):
        client.submit(fails, pure=False).result()
    assert _failed_tasks(client) == before + 1


def test_the_machine_speed_of_the_notes_is_measured_before_local_workers_start(monkeypatch):
    """The O(n²) note of `isotropy measure --workers N` calibrated this machine while the new worker processes imported
    dask, numpy and isotropy: it read the cores up to 3 times slower, and announced 73 s for a search of 39 s. The
    calibration (once per process) now runs before the LocalCluster starts."""
    import distributed

    from isotropy._kernels import cost
    from isotropy.measure.distributed import open_cluster

    class Started(Exception):
        pass

    seen = []

    def cluster(**kwargs):
        seen.append(cost.machine_speed.cache_info().currsize)
        raise Started

    cost.machine_speed.cache_clear()
    monkeypatch.setattr(distributed, "LocalCluster", cluster)
    with pytest.raises(Started), open_cluster(None, 2):
        pass
    assert seen == [1]  # measured, and cached for the note, when the workers were asked for
    flops, elements = cost.machine_speed()
    assert flops > 1e8 and elements > 1e6


def test_the_machine_speed_of_the_notes_is_measured_before_connecting_to_a_scheduler(monkeypatch):
    """With --scheduler the calibration ran at the first note, after the command had asked the workers to hold the
    input: the workers of a cluster on this machine were reading it meanwhile, and the note of TwoNN and MLE on 80,000
    rows said 54-78 s for a search of 31 s. It now runs before the command connects, before any work is asked for."""
    from isotropy._kernels import cost
    from isotropy.measure import distributed

    class Connecting(Exception):
        pass

    seen = []

    def check(address, seconds):
        seen.append(cost.machine_speed.cache_info().currsize)
        raise Connecting

    cost.machine_speed.cache_clear()
    monkeypatch.setattr(distributed, "_check_is_scheduler", check)
    with pytest.raises(Connecting), distributed.open_cluster("tcp://127.0.0.1:8786", None):
        pass
    assert seen == [1]  # measured, and cached for the note, before the scheduler was asked anything
