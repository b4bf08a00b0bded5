"""isotropy: the geometry of embedding spaces.

Exact, fast metrics of isotropy (IsoScore, IsoScore*, I(W), cosine statistics), of clusters
(silhouette, Calinski-Harabasz, Davies-Bouldin, Dunn), of intrinsic dimension (TwoNN, MLE,
participation ratio, effective rank, RankMe), of contrastive geometry (alignment, uniformity) and
the outlier tokens of a layer (token norms over their median), for numpy arrays and torch tensors of shape ``(n_samples, n_features)``.

Submodules are imported on first use, so ``import isotropy`` stays fast and never imports torch.

The package is laid out in floors, each importing only from the floors below it:
``_utils`` (validation, errors, backend) < ``_kernels`` (array kernels, the streaming accumulator) <
``distributed`` (the same kernels on dask) < ``metrics`` (the public functions and the metric table) <
``transforms``, ``io``, ``models``, ``datasets``, ``torch`` < ``measure``, ``training`` < ``experiments`` < ``cli``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import types
import warnings

__version__ = "0.1.0"

# public name -> submodule that defines it (PEP 562 lazy attributes)
_EXPORTS = {
    "isoscore": "isotropy.metrics.isoscore",
    "isoscore_star": "isotropy.metrics.isoscore",
    "isoscore_from_covariance": "isotropy.metrics.isoscore",
    "partition_isotropy": "isotropy.metrics.partition",
    "cosine_similarity_mean": "isotropy.metrics.cosine",
    "inter_type_cosine": "isotropy.metrics.cosine",
    "intra_type_cosine": "isotropy.metrics.cosine",
    "participation_ratio": "isotropy.metrics.covariance",
    "CovarianceAccumulator": "isotropy.metrics.covariance",
    "silhouette_samples": "isotropy.metrics.silhouette",
    "silhouette_score": "isotropy.metrics.silhouette",
    "calinski_harabasz_score": "isotropy.metrics.cluster_indices",
    "davies_bouldin_score": "isotropy.metrics.cluster_indices",
    "dunn_index": "isotropy.metrics.cluster_indices",
    "twonn_dimension": "isotropy.metrics.dimension",
    "rogue_dimension_share": "isotropy.metrics.rogue",
    "mle_dimension": "isotropy.metrics.dimension",
    "local_mle_dimension": "isotropy.metrics.dimension",
    "neighbour_dimensions": "isotropy.metrics.dimension",
    "kneighbors": "isotropy.metrics.neighbors",
    "effective_rank": "isotropy.metrics.spectrum",
    "rankme": "isotropy.metrics.spectrum",
    "alignment": "isotropy.metrics.contrastive",
    "uniformity": "isotropy.metrics.contrastive",
    "token_norms": "isotropy.metrics.norms",
    "TwoNN": "isotropy.metrics.estimators",
    "MLE": "isotropy.metrics.estimators",
    "IsotropyValueError": "isotropy._utils.errors",
    "IdentityShrinkageWarning": "isotropy._utils.warn",
    "SpanBoundWarning": "isotropy._utils.warn",
}

# sub-packages reachable as attributes of the package (imported on first use)
_SUBPACKAGES = frozenset({"datasets", "distributed", "experiments", "io", "measure", "metrics", "models", "torch",
                          "training", "transforms"})

# Names and module paths that moved in 0.2 (the "one house" layout): still importable for one release, with a
# DeprecationWarning that gives the new place.
_MOVED_NAMES = {"extract_token_embeddings": "isotropy.models.contextual"}
_MOVED_MODULES = {
    "isotropy.isoscore": "isotropy.metrics.isoscore",
    "isotropy.partition": "isotropy.metrics.partition",
    "isotropy.cosine": "isotropy.metrics.cosine",
    "isotropy.covariance": "isotropy.metrics.covariance",
    "isotropy.silhouette": "isotropy.metrics.silhouette",
    "isotropy.cluster_indices": "isotropy.metrics.cluster_indices",
    "isotropy.dimension": "isotropy.metrics.dimension",
    "isotropy.neighbors": "isotropy.metrics.neighbors",
    "isotropy.rogue": "isotropy.metrics.rogue",
    "isotropy.encoders": "isotropy.models.encoders",
    "isotropy.contextual": "isotropy.models.contextual",
    "isotropy.measure_cli": "isotropy.measure.command",
    "isotropy.measure_model": "isotropy.measure.from_model",
    "isotropy.distributed.measure": "isotropy.measure.distributed",
}

__all__ = sorted(_EXPORTS)  # noqa: PLE0605 (the lazy exports are the public names)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None and name in _MOVED_NAMES:
        module = _MOVED_NAMES[name]
        warnings.warn(f"isotropy.{name} moved to {module}.{name}; the old name goes in the next release.",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(module), name)
    if module is None and name in _SUBPACKAGES:  # isotropy.distributed.kneighbors(...) without importing it first
        return importlib.import_module(f"isotropy.{name}")
    if module is None:
        raise AttributeError(f"module 'isotropy' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


# what this module imports for itself: not the package's, so not offered by dir() and tab completion (a trial)
_OWN_IMPORTS = {"annotations", "importlib", "sys", "types", "warnings"}


def __dir__():
    return sorted((set(globals()) | set(__all__)) - _OWN_IMPORTS)


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old module path (``isotropy.silhouette``) as its new module, with a DeprecationWarning."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in _MOVED_MODULES:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        new = _MOVED_MODULES[spec.name]
        warnings.warn(f"{spec.name} moved to {new}; the old path goes in the next release.",
                      DeprecationWarning, stacklevel=2)
        return importlib.import_module(new)

    def exec_module(self, module):
        pass  # the new module is already executed


if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModuleFinder())


class _Package(types.ModuleType):
    """The package's module type: ``isotropy.isoscore`` stays the function when the old module path of that name
    is imported (the import system binds an imported submodule as an attribute of its parent).

    So the old path is one more moved module (``_MOVED_MODULES``) and nothing is imported with the package:
    ``import isotropy`` loads no numpy, and a Ctrl-C while a command starts falls inside the console entry's
    handler (:func:`isotropy.__main__.entry`), not in a traceback from the package's own imports.
    """

    def __setattr__(self, name, value):
        if name in _EXPORTS and isinstance(value, types.ModuleType):
            return  # the submodule isotropy.isoscore, bound by its import: the name keeps the function
        super().__setattr__(name, value)

    def __reduce__(self):
        # by reference, as pickle and cloudpickle treat any importable module: cloudpickle looks modules up by their
        # exact type, so a function of a script that uses isotropy.<name> could not be sent to dask or joblib workers
        return importlib.import_module, (self.__name__,)


sys.modules[__name__].__class__ = _Package
