"""Metrics on pandas frames with nullable columns (``Float64``, ``Int64``, Arrow): the values of the same numbers.

``np.asarray`` turns a nullable column into dtype object, which the metrics refused as not real-valued (a Python
API trial); a frame read with ``dtype_backend="numpy_nullable"`` or ``"pyarrow"`` holds exactly such columns.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import isotropy
from isotropy import IsotropyValueError

X = np.random.default_rng(0).normal(size=(60, 5))
LABELS = np.arange(60) % 3


@pytest.mark.parametrize("dtype", ["Float64", "Float32", "double[pyarrow]", "float32[pyarrow]"])
@pytest.mark.parametrize("metric", [
    lambda A: isotropy.isoscore(A),
    lambda A: isotropy.twonn_dimension(A),
    lambda A: isotropy.mle_dimension(A, n_neighbors=5),
    lambda A: isotropy.silhouette_score(A, LABELS),
    lambda A: isotropy.silhouette_score(A, LABELS, metric="cosine"),
])
def test_nullable_float_frame_gives_the_value_of_its_numbers(dtype, metric):
    frame = pd.DataFrame(X).astype(dtype)
    plain = X.astype(np.float32 if "32" in dtype else np.float64)
    assert metric(frame) == pytest.approx(metric(plain), rel=1e-12, abs=1e-15)  # the column-major layout pandas gives


def test_nullable_integer_and_mixed_columns():
    ints = (X * 10).astype(np.int64)
    assert isotropy.isoscore(pd.DataFrame(ints).astype("Int64")) == isotropy.isoscore(ints.astype(np.float64))
    mixed = pd.DataFrame(X).astype("Float64")
    mixed[2] = mixed[2].astype("float64")  # one plain numpy column among nullable ones
    assert isotropy.isoscore(mixed) == isotropy.isoscore(X)
    assert isotropy.isoscore(pd.Series(X[:, 0]).astype("Float64").to_frame().assign(b=X[:, 1])) == \
        isotropy.isoscore(X[:, :2])


def test_missing_value_is_refused_at_its_row_and_column():
    frame = pd.DataFrame(X).astype("Float64")
    frame.iloc[3, 1] = pd.NA
    with pytest.raises(IsotropyValueError, match=r"^The 'X' parameter of isoscore must contain only finite values\. "
                                                 r"Got nan at row 3, column 1 instead\.$"):
        isotropy.isoscore(frame)


def test_text_columns_are_still_refused():
    frame = pd.DataFrame({"a": ["x", "y", "z"], "b": [1.0, 2.0, 3.0]})
    with pytest.raises(TypeError, match=r"^The 'X' parameter of isoscore must be a real-valued array\. Got dtype object"):
        isotropy.isoscore(frame)


@pytest.mark.parametrize("numbers", ["float64", "float32", "int64"])
def test_a_bool_column_beside_numeric_columns_is_read_as_numbers(numbers):
    """A frame of plain numpy columns, one of them bool (a flag beside the features), was refused as "Got dtype
    object" (``np.asarray`` of bool beside numbers): a bool array alone, and such a frame in the transforms (through
    scikit-learn), are read as numbers (an API trial)."""
    values = (X * 10).astype(numbers)
    frame = pd.DataFrame(values).assign(flag=X[:, 0] > 0)
    plain = np.column_stack([values, X[:, 0] > 0]).astype(np.float32 if numbers == "float32" else np.float64)
    assert isotropy.isoscore(frame) == pytest.approx(isotropy.isoscore(plain), rel=1e-12)
    assert isotropy.silhouette_score(frame, LABELS) == pytest.approx(isotropy.silhouette_score(plain, LABELS), rel=1e-12)
