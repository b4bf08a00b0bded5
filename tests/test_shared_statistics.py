"""One float64 pass over X for the covariance metrics of a table (issue 20, item 2): isotropy._kernels.rows.

Within ``shared_statistics`` (what ``isotropy measure`` opens around its table) the first covariance
metric computes every statistic the table needs in one pass; the values must be those of the metrics
called alone, bit for bit, on any number of workers, and a statistic one metric cannot use (zero rows
for the cosine) must not fail the others.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import isotropy as iso
from isotropy._kernels import rows
from isotropy._utils.errors import IsotropyValueError

COVARIANCE = ["isoscore", "partition_isotropy", "cosine_similarity_mean", "participation_ratio",
              "rogue_dimension_share"]


@pytest.fixture
def X():
    rng = np.random.default_rng(3)
    return (rng.standard_normal((3000, 24)) @ rng.standard_normal((24, 24)) + 2.0).astype(np.float32)


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(rows, "_CHUNK_ELEMENTS", 24 * 97)  # 97-row chunks: 31 of them, the last one short


def _values(X, names):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {name: getattr(iso, name)(X) for name in names}


def test_the_table_values_are_those_of_the_metrics_alone(X, small_chunks, monkeypatch):
    alone = _values(X, COVARIANCE)
    calls = []
    real = rows._pass
    monkeypatch.setattr(rows, "_pass", lambda X_, statistics: calls.append(tuple(statistics)) or real(X_, statistics))
    with rows.shared_statistics(X, COVARIANCE + ["twonn_dimension"]):
        shared = _values(X, COVARIANCE)
    assert shared == alone  # bit for bit
    assert calls == [("scatter", "second", "units", "unit_squares")]  # one pass for the five metrics


def test_the_statistics_do_not_depend_on_the_number_of_workers(X, small_chunks, monkeypatch):
    wanted = ("scatter", "second", "units", "unit_squares")
    monkeypatch.setattr(rows, "_workers_for", lambda n_chunks: 1)
    one = rows._pass(X, wanted)
    monkeypatch.setattr(rows, "_workers_for", lambda n_chunks: 7)
    seven = rows._pass(X, wanted)
    assert np.array_equal(one["second"], seven["second"])
    assert all(np.array_equal(a, b) for a, b in zip(one["scatter"], seven["scatter"]))
    assert np.array_equal(one["units"].sum, seven["units"].sum)
    assert np.array_equal(one["units"].squares, seven["units"].squares)
    # and each statistic alone is the same as computed with the others
    for name in wanted:
        alone = rows._pass(X, (name,))[name]
        together = one[name]
        if name == "second":
            assert np.array_equal(alone, together)
        elif name == "scatter":
            assert all(np.array_equal(a, b) for a, b in zip(alone, together))
        else:
            assert np.array_equal(alone.sum, together.sum)


def test_the_statistics_match_float64_references(X, small_chunks):
    out = rows._pass(X, ("scatter", "second", "units", "unit_squares"))
    X64 = X.astype(np.float64)
    centred = X64 - X64.mean(axis=0)
    scatter, shift, mean = out["scatter"]
    np.testing.assert_allclose(scatter, centred.T @ centred, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(shift + mean, X64.mean(axis=0), rtol=1e-12)
    second = X64.T @ X64
    np.testing.assert_allclose(out["second"], second, rtol=1e-12, atol=1e-13 * np.abs(second).max())
    U = X64 / np.linalg.norm(X64, axis=1, keepdims=True)
    np.testing.assert_allclose(out["units"].sum, U.sum(axis=0), rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(out["units"].squares, (U * U).sum(axis=0), rtol=1e-10)


def test_zero_rows_fail_the_cosine_metrics_only(X, small_chunks):
    X = X.copy()
    X[[500, 2000]] = 0.0
    with rows.shared_statistics(X, COVARIANCE):
        assert iso.isoscore(X) == iso.isoscore(X.copy())  # the shared pass served it, as the pass alone would
        for name in ("cosine_similarity_mean", "rogue_dimension_share"):
            with pytest.raises(IsotropyValueError, match=r"2 all-zero row\(s\) \(first at index 500\)"):
                getattr(iso, name)(X)


def test_data_at_an_extreme_scale_share_only_the_unit_sums(X, small_chunks, monkeypatch):
    big = X.astype(np.float64) * 2.0**900  # IsoScore and I(W) rescale it: they work on another array
    alone = _values(big, ["isoscore", "cosine_similarity_mean", "rogue_dimension_share"])
    calls = []
    real = rows._pass
    monkeypatch.setattr(rows, "_pass", lambda X_, statistics: calls.append(tuple(statistics)) or real(X_, statistics))
    with rows.shared_statistics(big, COVARIANCE):
        shared = _values(big, ["isoscore", "cosine_similarity_mean", "rogue_dimension_share"])
    assert shared == alone
    assert ("units", "unit_squares") in calls and ("scatter", "second", "units", "unit_squares") not in calls


def test_outside_a_table_nothing_is_kept(X, small_chunks, monkeypatch):
    calls = []
    real = rows._pass
    monkeypatch.setattr(rows, "_pass", lambda X_, statistics: calls.append(tuple(statistics)) or real(X_, statistics))
    iso.isoscore(X)
    iso.participation_ratio(X)
    assert calls == [("scatter",), ("scatter",)]


def test_a_statistic_is_released_once_its_metrics_have_read_it(X, small_chunks):
    with rows.shared_statistics(X, ["isoscore", "participation_ratio", "partition_isotropy"]):
        scope = rows._SCOPE.get()
        iso.isoscore(X)
        assert set(scope.values) == {"scatter", "second"}  # participation_ratio still to read the scatter
        iso.partition_isotropy(X)
        assert set(scope.values) == {"scatter"}
        iso.participation_ratio(X)
        assert scope.values == {}
    assert rows._SCOPE.get() is None


def test_isotropy_measure_reads_x_once_for_its_covariance_metrics(X, tmp_path, monkeypatch):
    import json

    from click.testing import CliRunner

    from isotropy.cli import cli

    np.save(tmp_path / "x.npy", X)
    calls = []
    real = rows._pass
    monkeypatch.setattr(rows, "_pass", lambda X_, statistics: calls.append(tuple(statistics)) or real(X_, statistics))
    result = CliRunner().invoke(cli, ["measure", str(tmp_path / "x.npy"), "--json", str(tmp_path / "m.json")])
    assert result.exit_code == 0, result.output
    assert calls == [("scatter", "second", "units", "unit_squares")]
    values = json.loads((tmp_path / "m.json").read_text())["values"]
    assert {name: values[name] for name in COVARIANCE} == _values(X, COVARIANCE)  # the metrics alone, bit for bit


def test_the_magnitude_check_reads_x_once_in_a_table(X):
    from isotropy._utils.magnitude import extremes

    Y = X.copy()
    with rows.shared_statistics(Y, COVARIANCE):
        first = extremes(Y)
        Y[0, 0] = 1e6  # not allowed within a table; shows that the first read is remembered
        assert extremes(Y) == first
        assert extremes(Y.copy()) != first  # another array is read
    assert extremes(Y)[1] == 1e6


def test_a_failing_chunk_stops_the_pass_without_hanging(monkeypatch):
    from isotropy._kernels import silhouette

    monkeypatch.setattr(silhouette, "_cores", lambda: 3)

    def fn(c, state, slot):
        if c == 2:
            raise MemoryError("chunk 2")
        return c

    merged = []
    with pytest.raises(MemoryError, match="chunk 2"):
        rows.in_order(fn, 40, lambda c, value: merged.append(value), dict, max_workers=3)
    assert merged == [0, 1]  # in order, and nothing after the failed chunk


# ---- fewer rows than features (n < d): the n × n side, never a d × d matrix -------------------------------------

def _wide(dtype, *, n=60, d=3000, rank=8, offset=0.3, seed=5):
    """n < d rows of rank ``rank`` < n plus an offset, with duplicate rows."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, rank)) @ rng.standard_normal((rank, d)) + offset
    X[7] = X[3]
    X[n - 1] = X[0]
    return X.astype(dtype)


def _same(a, b):
    return a == b or (np.isnan(a) and np.isnan(b))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("offset", [3.0, 0.0])  # 0.0: a small mean cosine, where rogue_dimension_share reads ÛÛᵀ
def test_wide_table_values_are_those_of_the_metrics_alone_from_n_by_n_statistics(dtype, offset, monkeypatch):
    X = _wide(dtype, offset=offset)
    names = COVARIANCE + ["isoscore_star"]
    alone = _values(X, names)
    calls, shapes = [], []
    real = rows._pass

    def spy(X_, statistics):
        calls.append(tuple(statistics))
        out = real(X_, statistics)
        shapes.extend(np.shape(v[0] if isinstance(v, tuple) else v) for v in out.values())
        return out

    monkeypatch.setattr(rows, "_pass", spy)
    with rows.shared_statistics(X, names + ["twonn_dimension"]):
        shared = _values(X, names)
    assert all(_same(shared[name], alone[name]) for name in names), (shared, alone)  # bit for bit
    # the Gram matrices when a covariance metric first asks, the unit sums when the cosine does
    assert calls[:2] == [("centred_gram", "gram"), ("units", "unit_squares")]
    assert all(shape == (60, 60) for shape in shapes if len(shape) == 2)  # n × n, never d × d


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_wide_values_match_the_d_by_d_closed_forms(dtype):
    X = _wide(dtype, n=40, d=300)
    X64 = X.astype(np.float64)
    Xc = X64 - X64.mean(axis=0)
    lam = np.clip(np.linalg.eigvalsh(Xc.T @ Xc), 0.0, None)  # the covariance's spectrum from the d × d side
    pr = lam.sum() ** 2 / (lam ** 2).sum()
    assert iso.participation_ratio(X) == pytest.approx(pr, rel=1e-10)
    assert iso.isoscore(X) == pytest.approx((pr - 1) / (300 - 1), rel=1e-10)
    # I(W) over the eigenvectors of XᵀX (d × d), both signs
    _, U = np.linalg.eigh(X64.T @ X64)
    P = X64 @ U
    log_z = np.concatenate([np.log(np.exp(P).sum(axis=0)), np.log(np.exp(-P).sum(axis=0))])
    assert np.log(iso.partition_isotropy(X)) == pytest.approx(log_z.min() - log_z.max(), rel=1e-10)
    Û = X64 / np.linalg.norm(X64, axis=1, keepdims=True)
    cos = Û @ Û.T
    assert iso.cosine_similarity_mean(X) == pytest.approx((cos.sum() - 40) / (40 * 39), rel=1e-10)
    from isotropy.metrics.rogue import _unit_gram_frob_sq

    G = Û.T @ Û  # d × d
    assert _unit_gram_frob_sq(X, "t") == pytest.approx(np.vdot(G, G), rel=1e-10)
    out = rows._pass(X, ("centred_gram", "gram", "unit_gram"))
    np.testing.assert_allclose(out["centred_gram"].gram, Xc @ Xc.T, rtol=1e-10, atol=1e-10 * np.abs(Xc @ Xc.T).max())
    np.testing.assert_allclose(out["gram"], X64 @ X64.T, rtol=1e-12)
    np.testing.assert_allclose(out["unit_gram"], cos, rtol=1e-12, atol=1e-14)
    assert out["centred_gram"].mean_sq == pytest.approx(X64.mean(axis=0) @ X64.mean(axis=0), rel=1e-12)


def test_wide_statistics_are_summed_alike_over_any_blocks_of_columns(monkeypatch):
    X = _wide(np.float32)
    whole = rows._pass(X, ("centred_gram", "gram", "unit_gram"))
    monkeypatch.setattr(rows, "_CHUNK_ELEMENTS", 60 * 97)  # 97-column blocks, the last one short
    blocks = rows._pass(X, ("centred_gram", "gram", "unit_gram"))
    for name in ("gram", "unit_gram"):
        np.testing.assert_allclose(blocks[name], whole[name], rtol=1e-12, atol=1e-13 * np.abs(whole[name]).max())
    np.testing.assert_allclose(blocks["centred_gram"].gram, whole["centred_gram"].gram, rtol=1e-10,
                               atol=1e-12 * np.abs(whole["centred_gram"].gram).max())


@pytest.mark.parametrize("offset", [0.3, 0.0])
def test_a_wide_table_builds_no_d_by_d_matrix(offset):
    """60 × 3000: a d × d float64 matrix is 72 MB; the table's statistics and metrics stay within a few MB."""
    import tracemalloc

    X = _wide(np.float32, offset=offset)
    tracemalloc.start()
    try:
        with rows.shared_statistics(X, COVARIANCE):
            _values(X, COVARIANCE)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20, peak  # n × d float64 is 1.4 MB, n × n 29 kB


def test_wide_isoscore_star_with_a_shrinkage_covariance_is_unchanged():
    X = _wide(np.float64, n=30, d=200)
    S = np.diag(np.linspace(0.5, 2.0, 200))
    Xc = X - X.mean(axis=0)
    C = Xc.T @ Xc / 29
    M = 0.8 * C + 0.2 * S
    expected = (np.trace(M) ** 2 / np.vdot(M, M) - 1) / 199
    assert iso.isoscore_star(X, shrinkage_cov=S, zeta=0.2) == pytest.approx(expected, rel=1e-10)
