"""The dtype of a metric's tensor result is what its docstring says: float32 for float16, bfloat16 and integer tensors.

A user's trial: the docstrings of isoscore and participation_ratio (and of the cosine, rogue-dimension, partition,
silhouette and contrastive metrics) promised a tensor "on the input's device and dtype", but half-precision and
integer tensors are computed in float32 and give a float32 result (said only in docs/api/torch.md).
"""

import inspect

import numpy as np
import pytest

import isotropy as iso
from isotropy.metrics.contrastive import alignment, uniformity
from isotropy.metrics.rogue import cosine_contributions, rogue_dimension_share
from isotropy.metrics.silhouette import silhouette_samples

torch = pytest.importorskip("torch")

_X = np.random.default_rng(0).normal(size=(40, 6)) * 20 + 3
_LABELS = np.repeat([0, 1], 20)

METRICS = {
    iso.isoscore: lambda T: iso.isoscore(T),
    iso.isoscore_star: lambda T: iso.isoscore_star(T, zeta=0.2),
    iso.participation_ratio: lambda T: iso.participation_ratio(T),
    iso.partition_isotropy: lambda T: iso.partition_isotropy(T),
    iso.cosine_similarity_mean: lambda T: iso.cosine_similarity_mean(T),
    cosine_contributions: lambda T: cosine_contributions(T),
    rogue_dimension_share: lambda T: rogue_dimension_share(T),
    silhouette_samples: lambda T: silhouette_samples(T, torch.tensor(_LABELS)),
    alignment: lambda T: alignment(T, torch.tensor(_X[::-1].copy()).to(T.dtype)),
    uniformity: lambda T: uniformity(T),
}


@pytest.mark.parametrize("metric", METRICS, ids=lambda fn: fn.__name__)
def test_half_and_integer_tensors_give_float32_as_the_docstring_says(metric):
    doc = " ".join(inspect.getdoc(metric).split())
    assert "float32 for float16, bfloat16 and integer tensors" in doc
    assert "device and dtype" not in doc and "the input's dtype and device" not in doc
    for dtype, expected in ((torch.float16, torch.float32), (torch.bfloat16, torch.float32),
                            (torch.int64, torch.float32), (torch.float32, torch.float32),
                            (torch.float64, torch.float64)):
        assert METRICS[metric](torch.tensor(_X).to(dtype)).dtype == expected, dtype
