"""Shared plumbing of the transformers: numpy/torch in and out, sklearn input validation."""

from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from isotropy._utils.backend import is_torch
from isotropy._utils.validation import IsotropyValueError, check_X

__all__ = [
    "IsotropyTransformer",
    "NewFeaturesTransformer",
    "SameFeaturesTransformer",
    "apply_rows",
    "like_input",
    "output_dtype",
    "to_numpy",
    "transformed",
    "warn_at_caller",
    "warn_if_gathered",
]


def warn_if_gathered(X, caller: str) -> None:
    """Say that a dask ``X`` is gathered into memory: the transforms fit and apply in memory, and a dask array became a
    numpy one without a word (a trial), where the metrics of the same array run by tiles on the cluster."""
    from isotropy._utils.backend import is_dask

    if not is_dask(X) or X.ndim != 2:  # (not 2-d: refused by the checks, as a numpy array of that shape)
        return
    n, d = X.shape
    size = "" if math.isnan(n) or math.isnan(d) else f" ({n * d * 8 / 2**20:,.1f} MiB in float64)"  # NaN: unknown
    warn_at_caller(f"{caller}: X is a dask array, gathered into one in-memory array{size}: the transforms fit and "
                   f"apply in memory. Call X.compute() first to say so, or fit on a sample that fits in memory and "
                   f"apply the fitted transform a block of rows at a time (map_blocks, docs/api/transforms.md).")


def to_numpy(X, *, caller: str, min_samples: int = 2, keep_float32: bool = False) -> tuple[np.ndarray, type]:
    """Validate ``X`` of shape ``(n_samples, n_features)``; return it as a float64 numpy array (never a view to
    mutate) and the dtype of the transform's numpy output (:func:`output_dtype` of the checked ``X``).

    ``keep_float32``: float32 data (an array, or a tensor's values on the CPU) come back as float32, for a fit that
    reads them as float64 a row chunk at a time (:attr:`IsotropyTransformer._fit_keeps_float32`): no float64 copy.
    """
    warn_if_gathered(X, caller)
    X = check_X(X, caller=caller, min_samples=min_samples)
    if is_torch(X):
        import torch

        kept = keep_float32 and X.dtype == torch.float32
        return X.detach().to("cpu").numpy() if kept else X.detach().to("cpu").double().numpy(), output_dtype(X)
    dtype = np.float32 if keep_float32 and _float32(X.dtype) else np.float64
    return np.asarray(X, dtype=dtype), output_dtype(X)


def output_dtype(X) -> type:
    """The dtype of a transform's numpy output for the input ``X``: float32 for float32 input, float64 otherwise.

    scikit-learn's rule for its transformers that preserve float32 (``PCA``, ``StandardScaler``): the fit and the
    arithmetic stay in float64 (:func:`apply_rows`), and only the result is stored in float32, so that a float32
    embedding matrix is not doubled in memory by its transform (a torch tensor comes back in its own dtype, by
    :func:`like_input`). Integers, float16 and anything else give float64, as before. ``X``: the checked numpy array,
    or the torch tensor given (a float32 tensor's values rounded into float32 here rather than by torch: the same
    rounding, without the float64 result beside the tensor).
    """
    if is_torch(X):
        import torch

        return np.float32 if X.dtype == torch.float32 else np.float64
    return np.float32 if _float32(X.dtype) else np.float64


def _float32(dtype) -> bool:
    """Whether a numpy ``dtype`` is float32 in either byte order: a big-endian file's ``'>f4'`` (not equal to
    ``np.float32`` on a little-endian machine) came back as float64."""
    return dtype.kind == "f" and dtype.itemsize == 4


def apply_rows(apply, X: np.ndarray, *, dtype=np.float64, caller: str) -> np.ndarray:
    """``apply(rows, where)`` (a row-wise transform of the float64 ``rows``, ``X[where]``) over ``X``, in ``dtype``.

    Float64: ``apply(X, slice(0, n))`` itself, as it always was. Float32: ``apply`` on float64 copies of the row
    chunks of ``X`` (:func:`~isotropy.transforms._scatter.row_chunks`), each result rounded into one float32 array:
    the same arithmetic, in float64, and no float64 copy of ``X`` nor of the result beside it (one chunk of each).
    A float32 result beyond float32's range is refused naming ``caller`` (rounded, it was ``inf`` with numpy's
    "overflow encountered in cast" warning pointing here).
    """
    if dtype == np.float64:
        return apply(np.asarray(X, dtype=np.float64), slice(0, X.shape[0]))
    from isotropy.transforms._scatter import row_chunks

    out = None
    for start, stop in row_chunks(*X.shape):
        values = apply(np.asarray(X[start:stop], dtype=np.float64), slice(start, stop))
        if out is None:
            out = np.empty((X.shape[0], values.shape[1]), dtype=dtype)
        _refuse_overflow(values, float(np.finfo(dtype).max), np.dtype(dtype).name, caller)
        out[start:stop] = values
        del values  # (before the next chunk's: one chunk's arrays at a time)
    return np.empty((0, X.shape[1]), dtype=dtype) if out is None else out


def _refuse_overflow(values: np.ndarray, top: float, kind: str, caller: str) -> None:
    """Refuse ``values`` (finite float64 or float32) beyond ``±top``, the largest value of the output's dtype ``kind``
    (a float32 or float16 ``X`` transformed into its own dtype)."""
    # (no temporary: max and min; the float64 values are finite, as X and the fitted attributes are)
    if values.size and (values.max() > top or values.min() < -top):
        peak = max(float(values.max()), -float(values.min()))
        raise IsotropyValueError(f"The 'X' parameter of {caller} is {kind} and its transformed values reach "
                                 f"{peak:.3g}, beyond {kind}'s largest {top:.3g}. Pass X as float64 to keep them.")


def transformed(apply, X: np.ndarray, like, *, dtype, caller: str):
    """:func:`apply_rows` of ``apply`` over the checked ``X``, returned as the type of the input ``like``
    (:func:`like_input`): the one way a transform's output is made."""
    return like_input(apply_rows(apply, X, dtype=dtype, caller=caller), like, caller=caller)


def like_input(values: np.ndarray, like, *, caller: str):
    """Return ``values`` as the type of ``like``: a tensor on ``like``'s device and dtype, or a numpy array.

    Values beyond the range of a floating tensor's dtype are refused naming ``caller`` (torch rounded them to ``inf``
    without a word).
    """
    if is_torch(like):
        import torch

        if like.is_floating_point() and like.dtype != torch.float64:
            _refuse_overflow(values, float(torch.finfo(like.dtype).max), str(like.dtype).removeprefix("torch."), caller)

        return torch.as_tensor(values, dtype=like.dtype if like.is_floating_point() else None, device=like.device)
    return values


def warn_at_caller(message: str, category=UserWarning) -> None:
    """Warn with the user's line: the first frame outside isotropy and scikit-learn, whatever the path taken.

    A fixed ``stacklevel`` fits one path only: ``cluster_isotropy(X)``, ``ClusterIsotropy().fit(X)``,
    ``fit_transform`` (wrapped by sklearn's ``set_output``) and a ``Pipeline`` are each a different number
    of frames deep.
    """
    from isotropy._utils.warn import user_stacklevel

    warnings.warn(message, category, stacklevel=user_stacklevel(libraries=("isotropy", "sklearn")))


class IsotropyTransformer(TransformerMixin, BaseEstimator):
    """Base class: validation with scikit-learn's rules; torch tensors converted at the boundary.

    Subclasses implement ``_fit(X)`` and ``_transform(X)`` on float64 numpy arrays (``_transform`` row-wise: each
    output row depends on its input row and the fitted attributes only). ``transform`` keeps float32 input in
    float32 (:func:`output_dtype`), scikit-learn's ``preserves_dtype`` tag says so.
    """

    _min_samples = 1
    # Whether ``_fit`` reads float32 ``X`` as float64 a row chunk at a time, with the values of a fit on the float64
    # copy (then ``fit`` makes none: 2x the float32 input, where AllButTheTop's and Whitening's fits hold 0.1x). The
    # clustering fits are not: scikit-learn's KMeans clusters float32 data in float32 (other centres).
    _fit_keeps_float32 = False

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    def _validated(self, X, *, reset: bool, method: str | None = None, keep_float32: bool = False) -> np.ndarray:
        """``X`` as float64 numpy (float32 kept with ``keep_float32``), checked by scikit-learn's rules, and finite
        (refused in the toolkit's one line).

        ``method`` names the caller in messages (default ``fit`` when ``reset``, else ``transform``).
        """
        from isotropy._utils.sklearn_input import validated_input

        caller = f"{type(self).__name__}.{method or ('fit' if reset else 'transform')}"
        warn_if_gathered(X, caller)
        if keep_float32 and isinstance(X, np.ndarray) and _float32(X.dtype) and not X.dtype.isnative:
            X = X.astype(np.float32)  # native order: scikit-learn took '>f4' for another dtype, made float64
        return validated_input(self, X, caller=caller, reset=reset,
                               dtype=(np.float64, np.float32) if keep_float32 else np.float64,
                               ensure_min_samples=self._min_samples if reset else 1)

    def fit(self, X, y=None):
        """Learn the transform from ``X`` of shape ``(n_samples, n_features)``; ``y`` is ignored. Returns ``self``."""
        self._fit(self._validated(X, reset=True, keep_float32=self._fit_keeps_float32))
        return self

    def transform(self, X):
        """Apply the fitted transform to ``X`` of shape ``(n_samples, n_features)``.

        Returns an array of shape ``(n_samples, n_features_out)``, float32 for float32 input and float64 otherwise
        (computed in float64 either way); a torch tensor input gives a tensor on the same device with the same dtype.
        """
        check_is_fitted(self)
        valid = self._validated(X, reset=False, keep_float32=True)
        dtype = output_dtype(X if is_torch(X) else valid)  # (a tensor's own dtype: valid is its float64 copy)
        return transformed(lambda rows, _: self._transform(rows), valid, X, dtype=dtype,
                           caller=f"{type(self).__name__}.transform")

    def fit_transform(self, X, y=None, **fit_params):
        """Fit on ``X`` and return the transformed ``X`` (same as ``fit(X).transform(X)``).

        ``fit_params`` go to ``fit``, which takes none: an unknown keyword raises ``TypeError`` here as there. A dask
        ``X`` is gathered once, with one warning (fit and transform each gathered it, and each said so).
        """
        from isotropy._utils.backend import is_dask

        if is_dask(X) and X.ndim == 2:
            warn_if_gathered(X, f"{type(self).__name__}.fit_transform")
            X = X.compute()
        return self.fit(X, y, **fit_params).transform(X)


class SameFeaturesTransformer(OneToOneFeatureMixin, IsotropyTransformer):
    """A transform whose output column ``j`` is a modified input column ``j`` (centring, removing directions).

    ``get_feature_names_out`` returns the input's names (``x0, x1, ...`` for an array), and
    ``set_output(transform="pandas")`` gives a DataFrame with those columns.
    """


class NewFeaturesTransformer(ClassNamePrefixFeaturesOutMixin, IsotropyTransformer):
    """A transform whose output columns are new directions (whitening): named ``<classname>0, <classname>1, ...``.

    Subclasses set ``_n_features_out`` when fitted.
    """
