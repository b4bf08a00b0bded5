"""The transforms' scikit-learn output API with pandas (the ``io`` extra): ``set_output(transform="pandas")``."""

from __future__ import annotations

import numpy as np
import pytest

from isotropy.transforms import AllButTheTop, ClusterCentering, ClusterIsotropy, Whitening


@pytest.mark.parametrize(("make", "names"), [
    (lambda: AllButTheTop(n_components=1), ["a", "b", "c", "d", "e"]),
    (lambda: ClusterCentering(n_clusters=2, random_state=0), ["a", "b", "c", "d", "e"]),
    (lambda: ClusterIsotropy(n_clusters=2, n_components=1, random_state=0), ["a", "b", "c", "d", "e"]),
    (lambda: Whitening(n_components=3), ["whitening0", "whitening1", "whitening2"]),
])
def test_pandas_output_keeps_names_index_and_values(make, names):
    import pandas as pd

    X = np.random.default_rng(3).normal(size=(120, 5))
    frame = pd.DataFrame(X, columns=list("abcde"), index=np.arange(100, 220))
    plain = make().fit_transform(X)
    transformer = make().set_output(transform="pandas")
    out = transformer.fit_transform(frame)
    assert list(transformer.get_feature_names_out()) == names
    assert isinstance(out, pd.DataFrame) and list(out.columns) == names and list(out.index) == list(frame.index)
    np.testing.assert_allclose(out.to_numpy(), plain, atol=1e-12)
    unnamed = make().fit(X)  # fitted on an array: x0, x1, ... or the class prefix
    expected = [f"x{i}" for i in range(5)] if names[0] == "a" else names
    assert list(unnamed.get_feature_names_out()) == expected
