"""The row-wise metrics on dask arrays: intra/inter type cosine, rogue-dimension share and token norms.

Each equals the in-memory function on the materialised array (the reference: those functions, tested
against their closed forms in test_cosine.py, test_token_norms.py and test_beyond_papers.py), never
turns the dask array into one numpy array on the client, and refuses bad input with the in-memory message.
"""

from __future__ import annotations

import warnings

import dask
import dask.array as da
import numpy as np
import pytest

import isotropy
from isotropy import IsotropyValueError

CHUNKS = (137, 12)  # uneven row chunks: 1000 rows in 8 chunks, the last of 41


@pytest.fixture(scope="module", autouse=True)
def threaded_scheduler():
    with dask.config.set(scheduler="threads"):
        yield


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    groups = rng.integers(0, 30, 1000)
    X = rng.normal(size=(1000, 12)) + rng.normal(scale=2.0, size=(30, 12))[groups] + 0.5
    return X, groups


@pytest.fixture
def no_materialising(monkeypatch):
    """Fail the test if a dask array is turned into a numpy array on the client (np.asarray(X))."""
    def refuse(self, *args, **kwargs):
        raise AssertionError(f"a dask array of shape {self.shape} was materialised on the client")

    monkeypatch.setattr(da.Array, "__array__", refuse)


CASES = [
    ("intra_type_cosine", {}),
    ("intra_type_cosine", {"max_instances": 4, "random_state": 3}),
    ("inter_type_cosine", {"type_vector": "mean"}),
    ("inter_type_cosine", {"random_state": 5}),
    ("inter_type_cosine", {"type_vector": "instance", "random_state": np.random.default_rng(7)}),
]


@pytest.mark.parametrize(("name", "kwargs"), CASES)
def test_type_cosines_equal_in_memory_without_materialising(data, name, kwargs, no_materialising):
    X, groups = data
    expected = getattr(isotropy, name)(X, groups, **kwargs)
    kwargs = {k: np.random.default_rng(7) if isinstance(v, np.random.Generator) else v for k, v in kwargs.items()}
    got = getattr(isotropy, name)(da.from_array(X, chunks=CHUNKS), da.from_array(groups, chunks=300), **kwargs)
    assert isinstance(got, float)
    assert abs(got - expected) < 1e-12


@pytest.mark.parametrize("k", [1, 3])
def test_rogue_dimension_share_equals_in_memory_without_materialising(data, k, no_materialising):
    X, _ = data
    X = X.copy()
    X[:, 4] += 8.0
    got = isotropy.rogue_dimension_share(da.from_array(X, chunks=CHUNKS), n_dimensions=k)
    assert isinstance(got, float)
    assert abs(got - isotropy.rogue_dimension_share(X, n_dimensions=k)) < 1e-12


@pytest.mark.parametrize(("shape", "offset"), [((300, 8), 0.3), ((300, 8), 0.4), ((20, 50), 2.0), ((20, 50), 3.0)])
def test_rogue_dimension_share_noise_check_equals_in_memory(shape, offset, no_materialising):
    """A mean cosine below the cheap bound: ‖Σ x̂x̂ᵀ‖_F decides (d x d for n >= d, n x n by tiles for n < d);
    the first offset of each shape is read as noise (NaN), the second is not."""
    X = np.random.default_rng(1).normal(size=shape)
    X[:, 0] += offset
    values, messages = [], []
    for A in (X, da.from_array(X, chunks=(7, shape[1]))):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            values.append(isotropy.rogue_dimension_share(A))
        messages.append([str(w.message) for w in caught])
    assert messages[0] == messages[1]
    if offset in (0.3, 2.0):
        assert np.isnan(values[0]) and np.isnan(values[1])
        assert "against 5 times its standard deviation" in messages[0][0]
    else:
        assert messages[0] == []
        assert abs(values[1] - values[0]) < 1e-12


def test_token_norms_equal_in_memory_without_materialising(data, no_materialising):
    X, _ = data
    X = X.copy()
    X[555] *= 40.0
    tokens = [f"t{i % 97}" for i in range(1000)]
    kwargs = {"special": [("<bos>", 120.0)], "top": 3}
    assert isotropy.token_norms(da.from_array(X, chunks=CHUNKS), tokens, **kwargs) == \
        isotropy.token_norms(X, tokens, **kwargs)


def _message(function, X, *args, **kwargs):
    with pytest.raises((IsotropyValueError, TypeError)) as info:
        function(X, *args, **kwargs)
    return str(info.value)


def _same_error(name, X, *args, **kwargs):
    function = getattr(isotropy, name)
    expected = _message(function, X, *args, **kwargs)
    assert _message(function, da.from_array(X, chunks=(137, X.shape[1])), *args, **kwargs) == expected
    return expected


@pytest.mark.parametrize(("name", "kwargs"), CASES[:3] + [("rogue_dimension_share", None)])
def test_zero_nan_and_subnormal_rows_get_the_in_memory_message(data, name, kwargs):
    X, groups = data
    args = () if kwargs is None else (groups,)
    kwargs = kwargs or {}
    # zero rows in the third and last chunk: named by their row of the whole array (of the rows drawn with
    # max_instances: there all rows of a type, so that some are drawn)
    zero = np.flatnonzero(groups == 5) if "max_instances" in kwargs else [300, 301, 950]
    subnormal = np.flatnonzero(groups == 6) if "max_instances" in kwargs else [420, 800]
    Z = X.copy()
    Z[zero] = 0.0
    S = X.copy()
    S[subnormal] = 1e-310
    if kwargs.get("type_vector") != "mean":
        message = _same_error(name, Z, *args, **kwargs)
        assert "all-zero row(s) (first at index " in message
        if "max_instances" not in kwargs:
            assert "Got 3 all-zero row(s) (first at index 300)" in message
        assert "rows of normal magnitude" in _same_error(name, S, *args, **kwargs)
    N = X.copy()
    N[700, 3] = np.inf
    N[299, 5] = np.nan  # the first in row order, in an earlier chunk
    assert _same_error(name, N, *args, **kwargs) == (f"The 'X' parameter of {name} must contain only finite "
                                                     f"values. Got nan at row 299, column 5 instead.")


def test_parameter_errors_get_the_in_memory_message(data):
    X, groups = data
    _same_error("inter_type_cosine", X, np.zeros(1000, dtype=int))
    _same_error("inter_type_cosine", X, groups, type_vector="median")
    _same_error("intra_type_cosine", X, np.arange(1000))
    _same_error("intra_type_cosine", X, groups, max_instances=1)
    _same_error("intra_type_cosine", X, groups[:-1])
    _same_error("rogue_dimension_share", X, n_dimensions=13)
    M = X.copy()
    M[groups == 4] = 0.0
    M[np.flatnonzero(groups == 4)[0]] = 1.0  # type 4's mean points nowhere only if its rows cancel
    M[np.flatnonzero(groups == 4)[1]] = -1.0
    assert "(first: type 4)" in _same_error("inter_type_cosine", M, groups, type_vector="mean")
    tokens = ["a"] * 1000
    _same_error("token_norms", X, tokens[:-1])
    _same_error("token_norms", np.zeros((1000, 12)), tokens)
    N = X.copy()
    N[640, 0] = -np.inf
    _same_error("token_norms", N, tokens)


def test_token_norms_never_holds_every_chunk_at_once(monkeypatch):
    # every chunk's norms waited for max|X|, which needs every chunk: in one graph, the scheduler held all the chunks
    # until the first norm. Now the maxima are one pass and the norms another, each streaming its chunks: no graph
    # computes both (dask's local schedulers load ready chunks in batches anyway, so the graphs are what is checked)
    from isotropy.distributed import _rows

    graphs, original = [], _rows.compute

    def recording(*args, **kwargs):
        graphs.append({getattr(getattr(a, "_obj", None), "__name__", None) or str(a.key).split("-")[0] for a in args})
        return original(*args, **kwargs)

    monkeypatch.setattr(_rows, "compute", recording)
    X = np.random.default_rng(0).normal(size=(4000, 8))
    tokens = [f"t{i}" for i in range(4000)]
    assert isotropy.token_norms(da.from_array(X, chunks=(500, 8)), tokens) == isotropy.token_norms(X, tokens)
    together = [g for g in graphs if any("top_chunk" in k for k in g) and any("norms_chunk" in k for k in g)]
    assert not together and any(any("norms_chunk" in k for k in g) for g in graphs), graphs


def test_dask_davies_bouldin_skips_centroids_that_coincide_up_to_their_rounding():
    # as tests/test_cluster_indices.py: two clusters of the mean (-2/3, 0, 0) came out one rounding apart (~1e16)
    from sklearn.metrics import davies_bouldin_score

    X = np.array([[0, 0, -1], [1, 0, 0], [-1, 0, 1], [0, -1, 0], [-1, -1, 0], [0, 0, 0], [0, 0, 0], [0, 0, 1],
                  [1, 0, -2], [-1, 0, 0], [-1, 1, 0], [0, 0, 0], [0, 0, 0], [-1, 0, 0], [-1, 1, -1], [1, 1, -1],
                  [0, 1, 0], [-1, 0, 1], [-1, 0, 0], [0, 0, 0], [1, 0, -1], [1, -1, 0], [0, 1, 0]], dtype=float)
    labels = np.array([2, 7, 8, 1, 0, 2, 4, 0, 2, 1, 1, 4, 2, 4, 0, 6, 6, 5, 3, 8, 6, 2, 7])
    got = isotropy.davies_bouldin_score(da.from_array(X, chunks=8), labels)
    assert got == pytest.approx(davies_bouldin_score(X, labels), rel=1e-12)


def test_dask_cosine_silhouette_of_rows_parallel_to_their_clusters_is_0():
    # as tests/test_silhouette.py: a = b = 0 exactly read +-1 from the rounding of the unit rows in the exact pass
    X = np.array([[1.1, 2.1], [-0.9, 1.1], [-0.9, -1.9], [0.1, -0.9], [1.1, 1.1], [2.1, 0.1], [1.1, -0.9], [-0.9, 1.1],
                  [1.1, 0.1], [-1.9, 0.1], [-1.9, -1.9], [0.1, 0.1], [2.1, 2.1], [-1.9, -0.9], [-0.9, 0.1]])
    labels = np.array([1, 5, 2, 5, 6, 5, 5, 1, 4, 5, 5, 7, 6, 0, 5])
    s = np.asarray(isotropy.silhouette_samples(da.from_array(X, chunks=5), labels, metric="cosine"))
    assert s[4] == 0.0 and s[12] == 0.0
