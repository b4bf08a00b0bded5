"""Validation at the public boundary: one message shape for every bad argument.

Every public function validates its inputs here, once, and raises
:class:`IsotropyValueError` (a ``ValueError``) or ``TypeError`` with a one-line message
naming the function, the argument, the value received and what was expected, e.g.::

    The 'zeta' parameter of isoscore_star must be a float in the range [0, 1]. Got 1.5 instead.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Iterator, Mapping, MappingView
from collections.abc import Set as AbstractSet
from typing import NamedTuple

import numpy as np

from isotropy._utils.backend import is_torch
from isotropy._utils.errors import IsotropyTypeError, IsotropyValueError

__all__ = [
    "IsotropyValueError",
    "check_X",
    "check_labels",
    "check_n_neighbors",
    "check_option",
    "check_random_state",
    "check_real",
    "check_scalar",
    "check_tensor_data",
    "check_texts",
    "check_weight",
    "check_zeta",
]


def _describe(value, limit: int = 60, *, length: bool = False) -> str:
    """``repr(value)`` cut to ``limit`` characters; an int past Python's 4,300-digit limit of ``repr`` said by its size.

    Cut, the text is the first ``limit - 3`` characters and ``...``; with ``length``, the first ``limit`` characters,
    ``...`` and the length of the whole (``'1111...... (5,000 characters)'``).
    """
    try:
        text = repr(value)
    except ValueError:  # "Exceeds the limit (4300 digits) for integer string conversion": an int, or a list of them
        if isinstance(value, int):
            return f"an int of about {_digits(value):,} digits"
        return f"a {type(value).__name__} holding an int of more than 4,300 digits"
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)" if length else text[:limit - 3] + "..."


def _digits(value: int) -> int:
    """The decimal digits of ``abs(value)``, counted without converting it to text (past 4,300 digits Python refuses).

    ``n`` of ``b`` bits lies in ``[2**(b-1), 2**b)``: its digits are ``floor(b·log10 2) + 1`` or one fewer.
    """
    n = abs(value)
    digits = int(n.bit_length() * math.log10(2)) + 1
    return digits - 1 if digits > 1 and n < 10 ** (digits - 1) else digits


#: The largest count or index an option or config key takes (every int of an experiment config, the counts of
#: ``isotropy measure``): a bound far past any real run, which keeps the work a value may ask for bounded (10**4000
#: workers or rows reached the cluster and the sampler).
MAX_INT = 10**9

#: The most K-means restarts ``n_init`` takes (ClusterCentering, and layer-geometry's config when it loads): it
#: multiplies the whole K-means work of every k tried, so MAX_INT would still allow weeks of restarts; 1000 is about
#: a hundred times scikit-learn's default of 10.
MAX_N_INIT = 1000


def check_X(X, *, caller: str, name: str = "X", min_samples: int = 2, min_features: int = 1,
            allow_nonfinite: bool = False, rescale: bool | str = False):
    """Check a data matrix of shape ``(n_samples, n_features)``; return it unchanged or as ndarray.

    Accepts a numpy array (or anything ``np.asarray`` turns into a numeric array) or a torch
    tensor (returned as is: same device, dtype and graph). Integer and boolean input is
    converted to float64 (numpy) or the default float dtype (torch), and floats of 8 bytes or more that are not
    native float64 (big-endian, ``longdouble``) to float64 (:func:`native_float`). Never copies other float input,
    except with ``rescale=True`` (for
    scale-invariant metrics) when the largest ``|x|`` lies
    outside the range where the metric's products and squares are safe in the working
    precision: then ``X`` is multiplied by a power of two (exact, never rounds a normal number)
    that brings it to unit scale (see :func:`isotropy._utils.magnitude.unit_scale`). With
    ``rescale="directions"`` (metrics of the rows' directions alone: the cosine distance) each row
    outside that range is brought to unit scale by its own power of two instead
    (:func:`isotropy._utils.magnitude.directions_at_unit_scale`), so that rows of very different
    lengths all keep their directions. ``rescale="neighbours"`` (the euclidean neighbour searches) brings it
    to ``2**40`` instead of unit scale (:func:`isotropy._utils.magnitude.neighbour_target`). Data whose largest
    ``|x|`` is subnormal are refused: they have already lost their significant digits.
    """
    if is_torch(X):
        given = X  # as it came in: half precision is computed in float32, and judged in its own dtype below
        check_tensor_data(X, caller=caller, name=name)
        if X.is_complex() or not (X.is_floating_point() or X.dtype.is_signed or str(X.dtype) in {"torch.uint8", "torch.bool"}):
            raise TypeError(f"The '{name}' parameter of {caller} must be a real-valued tensor. Got dtype {X.dtype} instead.")
        import torch

        if not X.is_floating_point():
            X = X.to(torch.get_default_dtype())
        elif X.dtype in (torch.float16, torch.bfloat16):
            # half precision overflows in the second moments (Xᵀ X) and has no CPU eigensolver:
            # compute in float32 (differentiable; results come back as float32 tensors)
            X = X.float()
        shape = tuple(X.shape)
    else:
        if isinstance(X, (str, bytes)) or X is None:
            raise TypeError(f"The '{name}' parameter of {caller} must be an array of shape (n_samples, n_features). "
                            f"Got {type(X).__name__} instead.")
        sparse = sys.modules.get("scipy.sparse")  # loaded by whoever made a sparse matrix; None: there is none
        if sparse is not None and sparse.issparse(X):  # np.asarray made it a 0-d object array: "dtype object"
            # both a TypeError and an IsotropyValueError, as a torch sparse tensor is (check_tensor_data)
            raise IsotropyTypeError(f"The '{name}' parameter of {caller} must be a dense array. Got a scipy sparse "
                                    f"{type(X).__name__} instead; convert it with .toarray().")
        _refuse_masked(X, caller=caller, name=name, drop=f"rows ({name}[~{name}.mask.any(axis=1)].data)")
        try:
            X = np.asarray(_masked_pandas_as_numpy(X))
        except Exception:  # noqa: BLE001 - ragged lists and the like
            raise TypeError(f"The '{name}' parameter of {caller} must be an array of shape (n_samples, n_features). "
                            f"Got an object numpy cannot convert.") from None
        if X.dtype.kind in "biu":
            X = X.astype(np.float64)
        elif X.dtype.kind != "f":
            raise TypeError(f"The '{name}' parameter of {caller} must be a real-valued array. Got dtype {X.dtype} instead.")
        elif X.dtype != native_float(X.dtype):
            X = _as_native_float(X, caller=caller, name=name)
        shape = X.shape
    if len(shape) != 2:
        raise IsotropyValueError(
            f"The '{name}' parameter of {caller} must be a 2-d array of shape (n_samples, n_features). "
            f"Got an array with shape {shape} instead.")
    if shape[0] < min_samples:
        raise IsotropyValueError(
            f"The '{name}' parameter of {caller} must have at least {min_samples} "
            f"{'sample (row)' if min_samples == 1 else 'samples (rows)'}. Got {shape[0]} instead.")
    if shape[1] < min_features:
        raise IsotropyValueError(
            f"The '{name}' parameter of {caller} must have at least {min_features} "
            f"{'feature (column)' if min_features == 1 else 'features (columns)'}. Got {shape[1]} instead.")
    if allow_nonfinite:
        return X
    from isotropy._utils.magnitude import (
        directions_at_unit_scale,
        extremes,
        neighbour_target,
        refuse_subnormal,
        unit_scale,
    )

    low, high = extremes(X)  # NaN propagates through min and max: one read of X, no n x d temporary
    if not (np.isfinite(low) and np.isfinite(high)):
        found = first_nonfinite(X)
        raise IsotropyValueError(f"The '{name}' parameter of {caller} must contain only finite values. Got "
                                 f"{'NaN or inf' if found is None else found.at()} instead.")
    if rescale and is_torch(X):
        refuse_subnormal_as_given(given, X, caller=caller, name=name, top=max(abs(low), abs(high)))
    elif rescale:
        X = half_as_float32(X, max(abs(low), abs(high)), caller=caller, name=name)
    if rescale == "directions":
        refuse_subnormal(X, max(abs(low), abs(high)), caller=caller, name=name)
        return directions_at_unit_scale(X)
    if rescale == "neighbours":
        return unit_scale(X, max(abs(low), abs(high)), caller=caller, name=name, target=neighbour_target(X))
    return unit_scale(X, max(abs(low), abs(high)), caller=caller, name=name) if rescale else X


def half_as_float32(X, top: float, *, caller: str, name: str = "X"):
    """A half-precision numpy array judged in its own dtype (refused when its largest ``|x|``, ``top``, is subnormal
    there), then as float32, as a tensor or a dask array of it is read; any other array as it is. Rescaled in float16
    (whose safe range is 2**8), data above 256 pushed their small entries to subnormal float16 numbers or zero:
    distinct rows merged, and other values than torch's and dask's (a review)."""
    if X.dtype.itemsize >= 4:
        return X
    from isotropy._utils.magnitude import refuse_subnormal

    refuse_subnormal(X, top, caller=caller, name=name)
    return X.astype(np.float32)


def refuse_subnormal_as_given(given, X, *, caller: str, name: str = "X", top: float | None = None) -> None:
    """Refuse, as :func:`isotropy._utils.magnitude.refuse_subnormal`, data ``given`` in a narrower float dtype than
    the ``X`` they are computed as (a float16 tensor, numpy or dask array read as float32) whose largest ``|x|``
    (``top``; read from ``X`` when not given, which a dask ``X`` must give) is subnormal in the dtype they came in.

    The one place the other backends judge float16 data as numpy does (:func:`half_as_float32`); computed in float32
    without a word, the same values were measured on torch and dask where numpy refused them. ``given``: the data as
    they came in, or their dtype (numpy's or torch's); anything else (a list, an integer dtype) is not judged.
    """
    narrow = _narrower_float(getattr(given, "dtype", given), X.dtype)
    if narrow is None:
        return
    from isotropy._utils.magnitude import extremes, refuse_subnormal

    if top is None:
        low, high = extremes(X)
        top = max(abs(low), abs(high))
    refuse_subnormal(narrow, top, caller=caller, name=name)


def _narrower_float(given, dtype):
    """An empty array (or tensor) of the float dtype ``given`` when it is narrower than ``dtype`` (numpy's or torch's);
    None otherwise."""
    if given is None:
        return None
    if type(given).__module__ == "torch":  # a torch.dtype
        import torch

        if not given.is_floating_point or torch.finfo(given).bits >= _bits(dtype):
            return None
        return torch.empty(0, dtype=given)
    try:
        given = np.dtype(given)
    except TypeError:
        return None
    if given.kind != "f" or given.itemsize * 8 >= _bits(dtype):
        return None
    return np.empty(0, dtype=given)


def _bits(dtype) -> int:
    """The width of a numpy or torch float dtype, in bits."""
    if type(dtype).__module__ == "torch":
        import torch

        return torch.finfo(dtype).bits if dtype.is_floating_point else 64
    return np.dtype(dtype).itemsize * 8


def check_real(value, *, caller: str, name: str, what: str = "matrix"):
    """Refuse complex values in a matrix or tensor argument (a covariance, Σ_S, hidden states); return ``value``.

    Cast to a real dtype, numpy and torch drop the imaginary parts (numpy with a ComplexWarning, torch with a
    UserWarning or, from complex64, with nothing): a Hermitian matrix was scored as its real part. Refused as a
    complex ``X`` is (:func:`check_X`), with :class:`IsotropyTypeError` (a TypeError, and an IsotropyValueError as
    the other refusals of these matrices are). Anything numpy cannot read as an array passes: its conversion
    refuses it.
    """
    if is_torch(value):
        dtype = value.dtype if value.is_complex() else None
    else:
        try:
            dtype = getattr(value, "dtype", None)
            dtype = dtype if isinstance(dtype, np.dtype) else np.asarray(value).dtype
        except Exception:  # noqa: BLE001 - ragged lists and the like: refused by the conversion that follows
            return value
        dtype = dtype if dtype.kind == "c" else None
    if dtype is not None:
        raise IsotropyTypeError(f"The '{name}' parameter of {caller} must be a real-valued {what}. Got dtype {dtype} "
                                f"instead.")
    return value


def _refuse_masked(value, *, caller: str, name: str, drop: str) -> None:
    """Refuse a numpy masked array holding masked values: ``np.asarray`` reads what is under the mask."""
    if not isinstance(value, np.ma.MaskedArray) or np.ma.getmask(value) is np.ma.nomask:
        return
    count = int(np.ma.count_masked(value))
    if count:
        raise TypeError(f"The '{name}' parameter of {caller} must be an array without masked values. Got a masked "
                        f"array with {count} masked value{'s' if count > 1 else ''} instead; drop their {drop} or "
                        f"fill them ({name}.filled(value)).")


def native_float(dtype) -> np.dtype:
    """The float ``dtype`` the kernels are given: float64 for every float of 8 bytes or more, else ``dtype`` itself.

    The kernels choose their precision by ``dtype == float64`` (else float32): a big-endian ``'>f8'`` or a
    ``longdouble`` array was computed in float32 (silhouette: errors of 1e-7 where float64 gives 1e-15). Smaller
    floats keep their byte order: they are computed in float32 either way, and a big-endian float32 memory map
    would otherwise be copied whole.
    """
    dtype = np.dtype(dtype)
    return np.dtype(np.float64) if dtype.itemsize >= 8 else dtype


def _as_native_float(X: np.ndarray, *, caller: str, name: str) -> np.ndarray:
    """``X`` as :func:`native_float` of its dtype; extended-precision values beyond float64's range are refused."""
    with np.errstate(over="ignore", under="ignore"):
        Y = X.astype(native_float(X.dtype))
    beyond = np.isinf(Y) & np.isfinite(X) if Y.dtype.itemsize < X.dtype.itemsize else None
    if beyond is not None and beyond.any():
        digits = int(np.floor(np.log10(np.abs(X[beyond]).max())))
        raise IsotropyValueError(f"The '{name}' parameter of {caller} must have values that float64 holds (it computes "
                                 f"in float64 at most). Got largest |x| about 1e{digits}, beyond float64's 1.8e308, "
                                 f"instead.")
    return Y


def _masked_pandas_as_numpy(X):
    """A pandas frame or series with nullable numeric columns (``Float64``, ``Int32``, ``boolean``, Arrow), or a bool
    column beside numeric ones, as an ndarray.

    ``np.asarray`` turns those columns into dtype object (their missing value is ``pd.NA``), which a metric
    cannot read: here they become the numpy dtype the columns share, float64 for integers and booleans, with
    ``pd.NA`` as NaN (refused next, at its row and column, as any NaN is). Anything else is returned as is:
    pandas is never imported here, and plain numpy columns of one kind go through ``np.asarray`` unchanged.
    """
    if not type(X).__module__.startswith("pandas") or not hasattr(X, "dtypes"):
        return X
    dtypes = list(X.dtypes) if hasattr(X, "columns") else [X.dtypes]
    if not dtypes:
        return X
    numpy_dtypes = [dtype if isinstance(dtype, np.dtype) else getattr(dtype, "numpy_dtype", None) for dtype in dtypes]
    if any(dtype is None or dtype.kind not in "biuf" for dtype in numpy_dtypes):
        return X  # strings, categories, dates: refused as dtype object, as before
    if all(isinstance(dtype, np.dtype) for dtype in dtypes) and len({dtype.kind == "b" for dtype in numpy_dtypes}) == 1:
        return X  # plain numpy columns: np.asarray gives their common dtype (but dtype object for bool beside numbers)
    common = np.result_type(*numpy_dtypes)
    return X.to_numpy(dtype=common if common.kind == "f" else np.float64, na_value=np.nan)


def _strided_layout():
    import torch

    return torch.strided


def _nested_hint(X, name: str) -> str:
    """How to make one dense tensor of the nested tensor ``X``, for its error message.

    Pieces of shape ``(n_i, n_features)``: their rows, concatenated. Padding (``.to_padded_tensor(0)``) would add
    rows of zeros that count as samples, and keep a third axis.
    """
    if X.dim() == 3:  # pieces of shape (n_i, n_features)
        return (f"concatenate the rows of its pieces with torch.cat({name}.unbind()) (not .to_padded_tensor(0), "
                f"whose padding would count as samples)")
    return (f"its pieces are {X.dim() - 1}-d: join them into one dense tensor with torch.cat({name}.unbind()), or "
            f"torch.stack({name}.unbind()) if they have one shape")


def check_tensor_data(X, *, caller: str, name: str = "X"):
    """Refuse a torch tensor that holds no data; return ``X`` (anything but a tensor as is).

    A tensor on the ``meta`` device, or a FakeTensor (the stand-in torch.compile and torch.export
    trace with, whatever device it reports), has a shape and a dtype but no values: torch's own
    error would come later, from deep inside a metric (``Tensor.item() cannot be called on meta
    tensors``), naming neither the argument nor the cause. Reads no value and syncs no device, so
    the tensors torch.compile hands a traced loss (it sees their metadata, not FakeTensors) pass.
    A tensor subclass without storage of its own (a wrapper such as DTensor, or functorch's) is not
    refused: it may well hold data elsewhere, and one that does not raises its own error.
    """
    if not is_torch(X):
        return X
    if X.is_nested:  # torch's own error: "NestedTensorImpl doesn't support sizes" (its layout may be strided)
        raise IsotropyTypeError(f"The '{name}' parameter of {caller} must be a dense tensor. Got a nested tensor of "
                                f"{X.size(0)} pieces instead; {_nested_hint(X, name)}.")
    if X.layout != _strided_layout():  # torch's own error came from deep inside ("Could not run 'aten::aminmax' ...")
        kind = "an MKL-DNN tensor" if "mkldnn" in str(X.layout) else "a sparse tensor"
        # a wrong type: a TypeError, and an IsotropyValueError as it always was (a scipy sparse matrix is the same)
        raise IsotropyTypeError(f"The '{name}' parameter of {caller} must be a dense tensor. Got {kind} (layout "
                                f"{X.layout}) instead; convert it with .to_dense().")
    if X.is_meta:
        got = "a tensor on the 'meta' device"
    else:
        fake = sys.modules.get("torch._subclasses.fake_tensor")  # loaded by torch itself; None: no FakeTensor exists
        if fake is None or not isinstance(X, fake.FakeTensor):
            return X
        got = "a FakeTensor (the stand-in with no values that torch.compile and torch.export trace with)"
    raise IsotropyValueError(f"The '{name}' parameter of {caller} must be a tensor holding data. Got {got} instead.")


# entries per block of rows read by first_nonfinite: a boolean mask of 1 MiB (and a flag per row of the block)
# is all it allocates, whatever the size of the array
_NONFINITE_BLOCK = 2**20


class NonFinite(NamedTuple):
    """The first non-finite entry of a 2-d array in row order: its row, its column and its value."""

    row: int
    column: int
    value: float  # nan, inf or -inf

    def at(self, row: int | None = None) -> str:
        """``"nan at row 5, column 3"``: the one wording of every non-finite message.

        ``row`` names the row as the caller counts it (a row of the file, of all shards, of the
        whole dask array) instead of ``self.row``, the row in the array searched.
        """
        return f"{self.value} at row {self.row if row is None else row}, column {self.column}"


def first_nonfinite(X) -> NonFinite | None:
    """The first NaN or inf of a 2-d numpy array or torch tensor in row order, or ``None`` when all are finite.

    Reads ``X`` a block of rows (about 2**20 entries) at a time: what it allocates is one boolean
    mask of a block (reused from block to block for numpy) and a flag per row of the block, never
    an ``n x d`` temporary, nor a list of every bad entry. torch is not imported unless ``X`` is a
    tensor; a tensor stays on its device (only the position found and its value come back).
    """
    n_rows, n_columns = X.shape
    step = max(1, _NONFINITE_BLOCK // max(1, n_columns))
    if is_torch(X):
        import torch

        for start in range(0, n_rows, step):
            block = X[start:start + step].detach()
            finite = torch.isfinite(block)
            if bool(finite.all()):
                continue
            r = int(finite.all(dim=1).to(torch.uint8).argmin())  # the first row holding a bad entry
            c = int(finite[r].to(torch.uint8).argmin())
            return NonFinite(start + r, c, float(block[r, c]))
        return None
    mask = np.empty((min(step, n_rows), n_columns), dtype=bool)
    for start in range(0, n_rows, step):
        block = X[start:start + step]
        finite = np.isfinite(block, out=mask[:block.shape[0]])
        if finite.all():
            continue
        r = int(np.argmin(finite.all(axis=1)))  # the first row holding a bad entry
        c = int(np.argmin(finite[r]))
        return NonFinite(start + r, c, float(block[r, c]))
    return None


def _refuse_missing_labels(labels, *, caller: str, name: str) -> None:
    """Refuse a missing label (``None``, a float NaN, ``pd.NA``) in a 1-d sequence, naming its row."""
    for row, label in enumerate(labels):
        missing = label is None or (isinstance(label, float) and math.isnan(label)) or \
            type(label).__name__ in ("NAType", "NaTType")
        if missing:
            _missing_label(label, row, caller=caller, name=name)


def _missing_label(label, row: int, *, caller: str, name: str):
    """Raise the one refusal of a missing label (``None``, NaN, ``pd.NA``), naming it and its row."""
    raise IsotropyValueError(f"The '{name}' parameter of {caller} must have a label for every sample. Got a "
                             f"missing label ({label!r}) at row {row} instead.")


def _refuse_pandas_missing_labels(labels, *, caller: str, name: str) -> None:
    """Refuse a missing label of a pandas Series, array, Index or frame (``pd.NA``, ``None``, NaN), naming its row.

    ``np.asarray`` of a nullable ``Int64`` column turns ``pd.NA`` into NaN, which was refused as "NaN or inf" without
    a row, where ``None`` in a list is "a missing label (None) at row 0". Rows are counted by position (not by the
    index). pandas is never imported here: anything not from pandas is returned untouched.
    """
    if not type(labels).__module__.startswith("pandas") or not hasattr(labels, "isna"):
        return
    missing = np.asarray(labels.isna())
    if missing.ndim == 2:  # a frame (a multi-label matrix): a row with any missing entry
        missing = missing.any(axis=1)
    if missing.ndim != 1 or not missing.any():
        return
    row = int(np.argmax(missing))
    value = labels.iloc[row] if hasattr(labels, "iloc") else labels[row]
    if getattr(value, "ndim", 0):  # a frame's row: its first missing entry
        value = value[np.asarray(value.isna())].iloc[0] if hasattr(value, "isna") else value
    _missing_label(value, row, caller=caller, name=name)


def _sequence_labels(labels) -> np.ndarray:
    """A list or tuple of scalar labels as an array, without numpy's coercions that merge distinct labels.

    ``np.asarray`` makes ``[0, "0"]`` the strings ``'0', '0'`` (and ``['a', b'a']`` two ``'a'``): one cluster of two
    labels of different kinds, which as an object array are refused as "labels of one kind"; and it makes Python
    ints from 2**63 float64 (``[2**63, 2**63 + 1, -1]``: the first two one label). Such lists become an object array,
    whose labels :func:`check_labels` compares as Python does: exactly, and refused when of different kinds. Lists of
    one kind that numpy holds exactly (ints of int64, floats, strings) are converted as before.
    """
    kinds = {type(label) for label in labels}
    if not all(issubclass(kind, (numbers.Number, str, bytes)) for kind in kinds):
        return np.asarray(labels)  # nested rows (a multi-label matrix) and the like: numpy's reading
    numeric = all(issubclass(kind, numbers.Number) for kind in kinds)
    if numeric or len(kinds) == 1 or all(issubclass(kind, str) for kind in kinds):
        array = np.asarray(labels)
        if not numeric or array.dtype.kind in "biuc" or array.dtype == object:
            return array
        # floats (from ints and floats, or ints beyond int64): exact only for ints within float64's 53 bits
        integral = [kind for kind in kinds if issubclass(kind, numbers.Integral)]
        if not integral or all(abs(int(label)) <= 2**53 for label in labels if isinstance(label, numbers.Integral)):
            return array
    as_objects = np.empty(len(labels), dtype=object)
    as_objects[:] = labels
    return as_objects


def _refuse_unordered_labels(labels, *, caller: str, name: str) -> None:
    """Refuse labels given as a set, a dict (or one of its views) or an iterator: numpy made them a 0-d object array,
    refused as "Got an array with shape ()", which said neither what was given nor what is expected."""
    if isinstance(labels, (AbstractSet, Mapping, MappingView)):
        hint = ("a set has no row order: give a list of the labels in row order" if isinstance(labels, AbstractSet) and
                not isinstance(labels, MappingView) else "give the labels in row order as a list, e.g. "
                "list(labels.values())")
    elif isinstance(labels, Iterator):
        hint = "an iterator has no length and is read once: give list(labels)"
    else:
        return
    raise IsotropyTypeError(f"The '{name}' parameter of {caller} must be a sequence or array with one label per "
                            f"sample (row of X), of shape (n_samples,), or a 2-d 0/1 matrix of shape (n_samples, "
                            f"n_labels). Got a {type(labels).__name__} instead; {hint}.")


def check_labels(labels, *, n_samples: int, caller: str, name: str = "labels") -> np.ndarray:
    """Return integer cluster ids ``(n_samples,)`` from a 1-d label array or a 0/1 multi-label matrix.

    A 2-d ``labels`` of shape ``(n_samples, n_labels)`` is a multi-label indicator matrix: each
    distinct row (label vector) is one cluster, as in Mickus et al. (2024); one column is read as
    a 1-d label array (for 0/1 the same clusters).
    """
    if labels is None or isinstance(labels, (str, bytes, numbers.Number)):  # np.asarray: a 0-d array, "shape ()"
        raise IsotropyValueError(f"The '{name}' parameter of {caller} must be a 1-d label array or a 2-d 0/1 matrix "
                                 f"of shape (n_samples, n_labels). Got {_describe(labels)} instead.")
    _refuse_unordered_labels(labels, caller=caller, name=name)
    _refuse_masked(labels, caller=caller, name=name, drop=f"rows ({name}[~{name}.mask].data, and the same rows of X)")
    if is_torch(labels):
        labels = check_tensor_data(labels, caller=caller, name=name).detach().cpu().numpy()
    _refuse_pandas_missing_labels(labels, caller=caller, name=name)
    if isinstance(labels, (list, tuple)):
        # numpy turns ['a', nan] into the strings 'a' and 'nan': a missing label would silently become a cluster
        _refuse_missing_labels(labels, caller=caller, name=name)
        labels = _sequence_labels(labels)
    labels = np.asarray(labels)
    if labels.dtype == object and labels.ndim == 1:
        _refuse_missing_labels(labels.tolist(), caller=caller, name=name)
    if labels.ndim not in (1, 2):
        raise IsotropyValueError(f"The '{name}' parameter of {caller} must be a 1-d label array or a 2-d 0/1 "
                                 f"matrix of shape (n_samples, n_labels). Got an array with shape {labels.shape} instead.")
    if isinstance(n_samples, float) and math.isnan(n_samples):
        # X's rows are not known (a dask array selected by a mask): X is at fault, not the labels, and the
        # labels are checked before X on the dask path (isotropy.distributed), so the refusal is X's, said here
        raise IsotropyValueError(f"The 'X' parameter of {caller} must be a dask array with known chunk sizes. Got "
                                 f"an unknown number of samples (nan) instead (call X.compute_chunk_sizes() first).")
    if labels.shape[0] != n_samples:
        raise IsotropyValueError(f"The '{name}' parameter of {caller} must have one entry per sample ({n_samples}). "
                                 f"Got {labels.shape[0]} instead.")
    if labels.ndim == 2 and labels.shape[1] == 1:  # a column of labels (scikit-learn reads it so): for 0/1
        labels = labels[:, 0]                       # the same clusters as a one-label indicator matrix
    if labels.ndim == 2:
        if labels.dtype.kind not in "biuf" or not np.isin(labels, (0, 1)).all():
            # name the first offending entry and where it is, as the other label checks do
            if labels.dtype.kind in "biuf":
                row, column = np.argwhere(~np.isin(labels, (0, 1)))[0]
                got = f"{labels[row, column].item()!r} at row {row}, column {column}"
            else:  # strings, objects: the first entry that is not the number 0 or 1 (an object 1 is a number)
                bad = next(((index, value) for index, value in np.ndenumerate(labels)
                            if not (isinstance(value, numbers.Real) and value in (0, 1))), None)
                if bad is None:
                    got = (f"entries of dtype {labels.dtype} (0s and 1s held as Python objects: convert the matrix to "
                           f"a numeric dtype, e.g. .astype(int))")
                else:
                    (row, column), value = bad
                    value = value.item() if hasattr(value, "item") else value
                    kind = "" if isinstance(value, numbers.Real) else "not numbers: "
                    got = f"entries of dtype {labels.dtype} ({kind}{value!r} at row {row}, column {column})"
            raise IsotropyValueError(f"The '{name}' parameter of {caller} must contain only 0 and 1 when 2-d "
                                     f"(a multi-label indicator matrix). Got {got} instead.")
        _, ids = np.unique(labels.astype(np.int8), axis=0, return_inverse=True)
        return ids.reshape(-1).astype(np.intp)
    if labels.dtype.kind == "f" and not np.isfinite(labels).all():
        row = int(np.argmin(np.isfinite(labels)))  # named, as a missing label in a list or a pandas column is
        raise IsotropyValueError(f"The '{name}' parameter of {caller} must contain only finite values. Got "
                                 f"{labels[row]} at row {row} instead.")
    try:
        _, ids = np.unique(labels, return_inverse=True)
    except TypeError:  # an object array mixing kinds that do not compare (1 and 'a')
        kinds = sorted({type(label).__name__ for label in labels.tolist()})
        raise TypeError(f"The '{name}' parameter of {caller} must hold labels of one kind (all numbers or all "
                        f"strings). Got a mix of {', '.join(kinds)} instead.") from None
    return ids.reshape(-1).astype(np.intp)


def check_scalar(value, name: str, *, caller: str, kind=numbers.Real, low=None, high=None,
                 closed: str = "both", allow_none: bool = False, high_why: str | None = None):
    """Check a scalar option: type ``kind`` and range ``[low, high]`` (``closed`` in both/left/right/neither).

    ``kind=int`` means any integer (:class:`numbers.Integral`, numpy's included) and the message says
    "an int"; an infinite end of the range is written open ("[1, inf)"). ``high_why`` says where
    ``high`` comes from, in brackets after the range (see :func:`check_n_neighbors`).
    """
    if value is None and allow_none:
        return None
    integral = isinstance(kind, type) and issubclass(kind, numbers.Integral)
    kind = numbers.Integral if integral else kind
    type_name = "an int" if integral else "a float"
    lo_br = "[" if closed in ("both", "left") and low is not None else "("
    hi_br = "]" if closed in ("both", "right") and high is not None else ")"
    rng = f" in the range {lo_br}{'-inf' if low is None else low}, {'inf' if high is None else high}{hi_br}"
    why = f" ({high_why})" if high_why else ""
    msg = (f"The '{name}' parameter of {caller} must be {type_name}{rng}{why}{' or None' if allow_none else ''}. "
           f"Got {_describe(value)} instead.")
    if isinstance(value, bool) or not isinstance(value, kind):
        raise (TypeError if not isinstance(value, numbers.Number) else IsotropyValueError)(msg)
    if not _finite(value, as_float=not integral):
        raise IsotropyValueError(msg)
    if low is not None and (value < low or (value == low and closed in ("right", "neither"))):
        raise IsotropyValueError(msg)
    if high is not None and (value > high or (value == high and closed in ("left", "neither"))):
        raise IsotropyValueError(msg)
    return value


def _finite(value, *, as_float: bool) -> bool:
    """Whether the real number ``value`` is finite: an int always, whatever its size (``np.isfinite`` raised numpy's
    own TypeError for a Python int from 2**64 on), unless ``as_float`` (a float option, read as a float) and it lies
    beyond float64's range."""
    if isinstance(value, numbers.Integral):
        if not as_float:
            return True
        try:
            float(value)
        except OverflowError:
            return False
        return True
    return math.isfinite(value)


def check_weight(weight, *, caller: str, name: str = "weight", low=None, high=None) -> float:
    """A regulariser's λ (or ζ) as a Python float: a real number, or a 0-d real torch tensor or numpy array, read once.

    A λ schedule computes its value as a tensor (``torch.linspace(0, -1, steps)[step]``); taken by ``float()``,
    the penalty keeps the dtype and device of ``H`` (a 0-d float64 λ times a float32 penalty would be float64).
    Refused: a tensor or array that is not 0-d, of bool or complex dtype, non-finite, or one that requires grad (read
    as a float, no gradient would reach it: a learned λ would silently stay as it was), or whose value lies outside
    ``[low, high]`` (``zeta``: ``low=0.0, high=1.0``; the tensor or array named as given). Anything else goes through
    :func:`check_scalar`, with its messages.
    """
    tensor = is_torch(weight)
    if not tensor and not isinstance(weight, np.ndarray):
        return float(check_scalar(weight, name, caller=caller, kind=numbers.Real, low=low, high=high))
    what = "tensor" if tensor else "array"
    expected = f"The '{name}' parameter of {caller} must be a real number or a 0-d real {what}"
    if weight.ndim != 0:
        raise IsotropyValueError(f"{expected}. Got {'a' if tensor else 'an'} {what} of shape {tuple(weight.shape)} "
                                 f"instead.")
    dtype = weight.dtype
    if (dtype.is_complex or dtype == sys.modules["torch"].bool) if tensor else dtype.kind not in "iuf":
        raise TypeError(f"{expected}. Got a 0-d {what} of dtype {dtype} instead.")
    if tensor and weight.requires_grad:
        raise IsotropyValueError(f"{expected} that does not require grad: it is read once as a float, and no "
                                 f"gradient would reach it. Got {_describe(weight)} instead.")
    value = float(weight)
    if not math.isfinite(value):
        raise IsotropyValueError(f"{expected} with a finite value. Got {_describe(weight)} instead.")
    if (low is not None and value < low) or (high is not None and value > high):
        raise IsotropyValueError(f"{expected} in the range [{'-inf' if low is None else low}, "
                                 f"{'inf' if high is None else high}]. Got {_describe(weight)} instead.")
    return value


def check_zeta(zeta, *, caller: str) -> float:
    """IsoScore*'s shrinkage weight ζ as a Python float in [0, 1]: a real number, or a 0-d real tensor or array.

    One check for every ζ of the toolkit (:func:`isotropy.isoscore_star`, its torch, dask and streaming forms,
    :class:`~isotropy.training.IsoScoreStar`, the probe, the callbacks, :class:`~isotropy.torch.IStarLoss` and the
    regularisers): a ζ schedule's value is a 0-d tensor, read once as a float as λ is (:func:`check_weight`, with its
    messages; a number keeps :func:`check_scalar`'s "must be a float in the range [0.0, 1.0]").
    """
    return check_weight(zeta, caller=caller, name="zeta", low=0.0, high=1.0)


def check_n_neighbors(n_neighbors, n_samples: int, *, caller: str, low: int = 1, name: str = "n_neighbors") -> int:
    """Check a neighbour count against the rows: an int in ``[low, n_samples - 1]``, returned as int.

    The one check of every neighbour function (kneighbors, TwoNN, MLE, local MLE, in memory and on dask):
    the message says that the upper end comes from the sample count, so that "[2, 2]" explains itself.
    """
    check_scalar(n_neighbors, name, caller=caller, kind=numbers.Integral, low=low, high=n_samples - 1,
                 high_why=f"at most n_samples - 1 = {n_samples - 1} for {n_samples} samples")
    return int(n_neighbors)


def check_texts(texts, *, caller: str, name: str = "texts", what: str = "a sequence of texts") -> list[str]:
    """Return ``texts`` as a list of str; a bare str or bytes is refused (iterating it would give one text per character).

    An element that is not a str is refused, naming its index: ``None``, a pandas NaN or bytes were embedded as the
    texts "None", "nan" and "b'...'" (the same vectors as those texts), where the command line and the training probes
    refuse them. Blank texts are the caller's to judge (a data set's empty cell reaches the encoders from the
    experiments; the command line and the probes refuse them).
    """
    if isinstance(texts, (str, bytes, bytearray)):
        kind = "a string" if isinstance(texts, str) else "bytes"
        raise TypeError(f"The '{name}' parameter of {caller} must be {what}. Got {kind} ({_describe(texts)}) instead; "
                        f"put a single text in a list: [text].")
    texts = list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"The '{name}' parameter of {caller} must be {what}, each a str. Got "
                            f"{type(text).__name__} ({_describe(text)}) at index {i} instead"
                            f"{'; decode bytes first' if isinstance(text, (bytes, bytearray)) else ''}.")
    return [str(t) for t in texts]


def check_bool(value, name: str, *, caller: str) -> bool:
    """Check a bool option (a numpy bool counts); return it as a Python bool."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"The {name!r} parameter of {caller} must be a bool. Got {type(value).__name__} instead.")
    return bool(value)


def check_option(value, name: str, options, *, caller: str):
    """Check that ``value`` is one of ``options``.

    Options that are all strings given something not a string (``metric=1``, ``metric=['cosine']``) raise
    :class:`IsotropyTypeError`, a TypeError (a wrong type, as scikit-learn raises it) that is still the
    IsotropyValueError these refusals always were; a string not among them, IsotropyValueError.
    """
    listed = ", ".join(repr(o) for o in options)
    message = f"The '{name}' parameter of {caller} must be one of {{{listed}}}. Got {_describe(value)} instead."
    if not isinstance(value, str) and all(isinstance(option, str) for option in options):
        raise IsotropyTypeError(message)  # before `in`: an array would be compared element by element
    if value not in options:
        raise IsotropyValueError(message)
    return value


SEED_MAX = 2**32 - 1  # numpy's RandomState (scikit-learn's subsamples) takes seeds in [0, 2**32 - 1]; so do we all


def check_seed(random_state, *, caller: str, name: str = "random_state"):
    """Refuse an int seed outside ``[0, 2**32 - 1]`` in one line; anything else is returned unchanged.

    A negative seed gave numpy's "expected non-negative integer" (naming neither the parameter nor
    the function), and 2**40 was taken by the functions that seed a Generator but refused by
    ``silhouette_score`` (a RandomState, as scikit-learn's): one range for every function.
    """
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool) and not (
            0 <= int(random_state) <= SEED_MAX):
        raise IsotropyValueError(f"The '{name}' parameter of {caller} must be None, a numpy Generator or RandomState, "
                                 f"or an int in the range [0, 2**32 - 1]. Got {int(random_state)} instead.")
    return random_state


def check_random_state(random_state, *, caller: str) -> np.random.Generator:
    """Turn ``None``, an int seed, a Generator or a RandomState into a :class:`numpy.random.Generator`."""
    if random_state is None or isinstance(random_state, (numbers.Integral, np.random.Generator)) and not isinstance(random_state, bool):
        return np.random.default_rng(check_seed(random_state, caller=caller))
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    raise TypeError(f"The 'random_state' parameter of {caller} must be None, an int, a numpy Generator or a numpy RandomState. "
                    f"Got {_describe(random_state)} instead.")
