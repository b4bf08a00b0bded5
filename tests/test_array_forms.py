"""Numpy array forms beyond the native float dtypes: byte-swapped and extended-precision floats, masked arrays.

The kernels choose their precision by ``dtype == float64`` (else float32): a big-endian ``'>f8'`` or a ``longdouble``
array was computed in float32 (silhouette off by 2.6e-9 on 40 rows, 1e-7 on 3,000, where float64 gives 1e-17), and a
masked array was read with its masked values (an API audit).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import sklearn.metrics

import isotropy
from isotropy import IsotropyValueError

X = np.random.default_rng(10).normal(size=(40, 5))
LABELS = np.arange(40) % 2


@pytest.mark.parametrize("dtype", [">f8", np.longdouble])
def test_byte_swapped_and_extended_floats_compute_in_float64(dtype):
    reference = sklearn.metrics.silhouette_score(X, LABELS)
    assert isotropy.silhouette_score(X.astype(dtype), LABELS) == pytest.approx(reference, abs=1e-15)
    assert isotropy.silhouette_score(X.astype(dtype), LABELS) == isotropy.silhouette_score(X, LABELS)
    assert isotropy.twonn_dimension(X.astype(dtype)) == isotropy.twonn_dimension(X)
    assert isotropy.isoscore(X.astype(dtype)) == isotropy.isoscore(X)


def test_byte_swapped_float32_is_float32():
    assert isotropy.silhouette_score(X.astype(">f4"), LABELS) == isotropy.silhouette_score(X.astype(np.float32), LABELS)


def test_dask_byte_swapped_float64_computes_in_float64():
    import dask
    import dask.array as da

    from isotropy.distributed import silhouette_score

    with dask.config.set(scheduler="synchronous"):
        value = silhouette_score(da.from_array(X.astype(">f8"), chunks=20), LABELS)
    assert float(value) == pytest.approx(sklearn.metrics.silhouette_score(X, LABELS), abs=1e-15)


@pytest.mark.skipif(np.finfo(np.longdouble).max <= np.finfo(np.float64).max, reason="longdouble is float64 here")
def test_extended_values_beyond_float64_are_refused_by_name():
    big = X.astype(np.longdouble)
    big[3, 1] = np.longdouble("1e400")
    with pytest.raises(IsotropyValueError) as info:
        isotropy.isoscore(big)
    assert str(info.value) == ("The 'X' parameter of isoscore must have values that float64 holds (it computes in "
                               "float64 at most). Got largest |x| about 1e400, beyond float64's 1.8e308, instead.")


def test_masked_values_are_refused_and_an_unmasked_array_is_its_data():
    masked = np.ma.masked_array(X.copy(), mask=False)
    assert isotropy.isoscore(masked) == isotropy.isoscore(X)
    masked[0, 0] = np.ma.masked
    masked[5, 2] = np.ma.masked
    with pytest.raises(TypeError) as info:
        isotropy.isoscore(masked)
    assert str(info.value) == ("The 'X' parameter of isoscore must be an array without masked values. Got a masked "
                               "array with 2 masked values instead; drop their rows (X[~X.mask.any(axis=1)].data) or "
                               "fill them (X.filled(value)).")
    dropped = masked[~masked.mask.any(axis=1)].data
    assert isotropy.isoscore(dropped) == isotropy.isoscore(np.delete(X, [0, 5], axis=0))


@pytest.mark.parametrize(("labels", "shown"), [(None, "None"), (3, "3"), ("abc", "'abc'")])
def test_labels_that_are_not_an_array_are_named(labels, shown):
    """silhouette_score(X, None) said "Got an array with shape () instead" (an API audit)."""
    with pytest.raises(IsotropyValueError) as info:
        isotropy.silhouette_score(X, labels)
    assert str(info.value) == ("The 'labels' parameter of silhouette_score must be a 1-d label array or a 2-d 0/1 "
                               f"matrix of shape (n_samples, n_labels). Got {shown} instead.")


def test_a_big_endian_float32_memory_map_is_not_copied(tmp_path):
    """Only floats whose precision the kernels would lower are converted: a '>f4' memory map stays a memory map (a
    review: it was copied whole into memory, for the same values)."""
    from isotropy._utils.validation import check_X

    path = tmp_path / "x.npy"
    np.save(path, X.astype(">f4"))
    mapped = np.load(path, mmap_mode="r")
    checked = check_X(mapped, caller="test")
    assert checked.dtype == np.dtype(">f4") and np.shares_memory(checked, mapped)
    assert check_X(X.astype(">f8"), caller="test").dtype == np.float64
    assert isotropy.isoscore(mapped) == isotropy.isoscore(X.astype(np.float32))


@pytest.mark.skipif(np.finfo(np.longdouble).max <= np.finfo(np.float64).max, reason="longdouble is float64 here")
def test_extended_values_beyond_float64_are_refused_beside_a_nan():
    big = X.astype(np.longdouble)
    big[3, 1], big[0, 0] = np.longdouble("1e400"), np.nan
    with pytest.raises(IsotropyValueError, match=r"Got largest \|x\| about 1e400, beyond float64's 1\.8e308"):
        isotropy.isoscore(big)


def test_masked_labels_are_refused():
    labels = np.ma.masked_array(LABELS, mask=np.arange(40) == 7)
    with pytest.raises(TypeError) as info:
        isotropy.silhouette_score(X, labels)
    assert str(info.value) == ("The 'labels' parameter of silhouette_score must be an array without masked values. "
                               "Got a masked array with 1 masked value instead; drop their rows (labels[~labels.mask]"
                               ".data, and the same rows of X) or fill them (labels.filled(value)).")
    assert isotropy.silhouette_score(X, np.ma.masked_array(LABELS)) == isotropy.silhouette_score(X, LABELS)


def test_measure_gives_a_big_endian_file_the_values_of_its_native_twin(tmp_path):
    """`isotropy measure` of a '>f4' .npy measured it as float64 (silhouette off in the 8th digit from the same data
    in native order, and from the same array in Python; a user trial)."""
    import json

    from click.testing import CliRunner

    from isotropy.cli import cli

    X32 = X.astype(np.float32)
    np.save(tmp_path / "native.npy", X32)
    np.save(tmp_path / "swapped.npy", X32.astype(">f4"))
    np.savetxt(tmp_path / "y.txt", LABELS, fmt="%d")
    values = []
    for name in ("native", "swapped"):
        out = tmp_path / f"{name}.json"
        result = CliRunner().invoke(cli, ["measure", str(tmp_path / f"{name}.npy"), "--labels", str(tmp_path / "y.txt"),
                                          "--metrics", "silhouette_score,isoscore", "--json", str(out)])
        assert result.exit_code == 0, result.output
        values.append(json.loads(out.read_text())["values"])
    assert values[0] == values[1]
    assert values[1]["silhouette_score"] == isotropy.silhouette_score(X32.astype(">f4"), LABELS)


@pytest.mark.parametrize("make", [
    lambda: __import__("isotropy.transforms", fromlist=["Whitening"]).Whitening(),
    lambda: __import__("isotropy.transforms", fromlist=["AllButTheTop"]).AllButTheTop(n_components=1),
    lambda: isotropy.TwoNN(),
])
def test_estimators_refuse_masked_values_as_the_functions_do(make):
    """``Whitening().fit(masked)`` read the values under the mask (np.asarray through scikit-learn's validation) and
    whitened them silently, where ``whiten(masked)`` and every metric refuse them (an API trial)."""
    masked = np.ma.masked_array(X.copy(), mask=False)
    masked[3, 1] = np.ma.masked
    estimator = make()
    name = type(estimator).__name__
    with pytest.raises(TypeError) as info:
        estimator.fit(masked)
    assert str(info.value) == (f"The 'X' parameter of {name}.fit must be an array without masked values. Got a "
                               "masked array with 1 masked value instead; drop their rows (X[~X.mask.any(axis=1)]"
                               ".data) or fill them (X.filled(value)).")
    assert not hasattr(estimator, "n_features_in_")
    unmasked = np.ma.masked_array(X.copy(), mask=False)  # no masked value: its data, as for the functions
    fitted = make().fit(unmasked)
    assert np.array_equal(np.asarray(fitted.transform(unmasked) if hasattr(fitted, "transform") else fitted.dimension_),
                          np.asarray(make().fit(X).transform(X) if hasattr(fitted, "transform") else
                                     make().fit(X).dimension_))
    if hasattr(fitted, "transform"):
        with pytest.raises(TypeError, match=rf"^The 'X' parameter of {name}\.transform must be an array without "
                                            r"masked values\. Got a masked array with 1 masked value instead"):
            fitted.transform(masked)


@pytest.mark.parametrize("dtype", ["datetime64[s]", "timedelta64[ms]"])
def test_estimators_refuse_dates_and_durations_as_the_functions_do(dtype):
    """``Whitening().fit`` read datetime64 as its integer ticks (scikit-learn's cast) and whitened timestamps, where
    ``whiten`` and every metric refuse them as not real-valued (an API trial)."""
    from isotropy.transforms import AllButTheTop, Whitening

    T = (np.arange(120).reshape(40, 3) ** 2).astype(dtype)
    for estimator in (Whitening(), AllButTheTop(n_components=1), isotropy.TwoNN()):
        with pytest.raises(TypeError) as info:
            estimator.fit(T)
        assert str(info.value) == (f"The 'X' parameter of {type(estimator).__name__}.fit must be a real-valued array. "
                                   f"Got dtype {dtype} instead.")
    fitted = Whitening().fit(X)
    with pytest.raises(TypeError, match=r"^The 'X' parameter of Whitening\.transform must be a real-valued array\. "):
        fitted.transform(T[:, :1].repeat(5, axis=1))


def test_estimators_refuse_a_frame_with_a_date_column_as_the_functions_do():
    """A DataFrame with a date, timezone-aware date or duration column beside numbers slipped past the estimators'
    dtype check, which read ``X.dtype`` (a frame has ``dtypes``): ``Whitening().fit`` whitened the ticks (a review)."""
    pd = pytest.importorskip("pandas")
    from isotropy.transforms import Whitening

    rng = np.random.default_rng(0)
    columns = {"naive": pd.date_range("2020-01-01", periods=50), "aware": pd.date_range("2020", periods=50, tz="UTC"),
               "duration": pd.to_timedelta(np.arange(50), unit="s")}
    for name, column in columns.items():
        frame = pd.DataFrame({"a": rng.normal(size=50), "b": rng.normal(size=50), name: column})
        with pytest.raises(TypeError, match=r"^The 'X' parameter of Whitening\.fit must be a real-valued array\. "
                                            rf"Got dtype {re.escape(str(frame[name].dtype))} instead\.$"):
            Whitening().fit(frame)
        with pytest.raises(TypeError, match=r"must be a real-valued array"):
            isotropy.isoscore(frame)
