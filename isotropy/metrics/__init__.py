"""The public metric modules: isotropy (:mod:`~isotropy.metrics.isoscore`, :mod:`~isotropy.metrics.partition`,
:mod:`~isotropy.metrics.cosine`, :mod:`~isotropy.metrics.covariance`, :mod:`~isotropy.metrics.rogue`),
clusters (:mod:`~isotropy.metrics.silhouette`, :mod:`~isotropy.metrics.cluster_indices`) and intrinsic
dimension (:mod:`~isotropy.metrics.dimension`, :mod:`~isotropy.metrics.neighbors`), outlier tokens
(:mod:`~isotropy.metrics.norms`), and the metric table
(:mod:`~isotropy.metrics.table`): every metric once, with the one name the command line, the JSON records, the
training callbacks and the torchmetrics classes use.

Users call them from the package face (``isotropy.isoscore(X)``); the modules are imported on first use.
"""


def __getattr__(name):
    """``isotropy.metrics.silhouette`` and the like without importing them first (imported on first use)."""
    import importlib
    import importlib.util

    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
