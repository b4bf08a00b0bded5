"""scikit-learn's input validation for the toolkit's estimators, with the toolkit's one-line messages.

The estimators (:mod:`isotropy.transforms`, :mod:`isotropy.metrics.estimators`) validate ``X`` as
scikit-learn does (``validate_data``: ``n_features_in_``, feature names, its estimator checks), but
its refusals run over many lines: a 1-d ``X`` printed the whole array and "Reshape your data ...", a
complex one 82 lines, a NaN recommended HistGradientBoostingClassifier. Here the shapes
scikit-learn only describes in prose are refused first by :func:`isotropy._utils.validation.check_X`
(naming the caller), the non-finite values by the toolkit's finder (row and column), and any other
refusal of scikit-learn's is kept to its first line, prefixed by the caller (its key words stay, as
its estimator checks look for them: "Complex data not supported", "0 feature(s)").
"""

from __future__ import annotations

import numpy as np

from isotropy._utils.backend import is_torch
from isotropy._utils.validation import IsotropyValueError, _refuse_masked, check_tensor_data, check_X, first_nonfinite

__all__ = ["validated_input"]


def _first_line(message: str) -> str:
    """scikit-learn's refusal in one line: its first, or all of them joined when they list names (not an array).

    The feature-name mismatch says which names on the lines after its first ("Feature names unseen at fit
    time: - z"); a complex or 1-d array is printed there instead, which is left out.
    """
    lines = [line.strip() for line in str(message).strip().splitlines() if line.strip()]
    if not lines:
        return ""
    if lines[0].startswith("The feature names should match"):
        segments = []  # "Feature names unseen at fit time:" then "- z" lines: "... unseen at fit time: z, y"
        for part in lines:
            if part.startswith("- ") and segments:
                head, items = segments[-1]
                segments[-1] = (head, [*items, part[2:]])
            else:
                segments.append((part, []))
        line = " ".join(f"{head} {', '.join(items)};" if items else head for head, items in segments).rstrip(";")
    else:
        line = lines[0].rstrip(":").strip()
    return line if line.endswith(".") else f"{line}."


def _ndim(X) -> int | None:
    """``X``'s number of dimensions, or None where only scikit-learn's own conversion can tell (an array-like that
    refuses numpy's functions: scikit-learn's estimator checks pass one)."""
    shape = getattr(X, "shape", None)
    if shape is not None:
        return len(shape)
    try:
        return int(np.ndim(X))
    except (TypeError, ValueError):
        return None


def validated_input(estimator, X, *, caller: str, reset: bool, **kwargs) -> np.ndarray:
    """``validate_data(estimator, X, reset=reset, ensure_all_finite=False, **kwargs)`` with one-line refusals.

    ``X`` comes back as scikit-learn returns it (numpy; a torch tensor is first moved to the CPU
    as float64). Raises ``IsotropyValueError`` or ``TypeError`` naming ``caller``. When ``reset``,
    a refused ``X`` leaves the fitted attributes ``n_features_in_`` and ``feature_names_in_`` of a
    previous fit as they were.
    """
    from sklearn.utils.validation import validate_data

    if is_torch(X):
        check_tensor_data(X, caller=caller)
        if X.is_complex():  # .double() dropped the imaginary part with only torch's warning: refused as numpy's is
            check_X(X, caller=caller, min_samples=1)
        X = X.detach().to("cpu").double().numpy()
    if X is None or isinstance(X, (str, bytes, int, float, complex)) or _ndim(X) not in (2, None):
        try:
            check_X(X, caller=caller, min_samples=1)  # raises: not an array, or not 2-d
        except IsotropyValueError as exc:
            if _ndim(X) != 1:
                raise
            # scikit-learn's words for it, which its estimator checks look for
            raise IsotropyValueError(f"{exc} Reshape your data with X.reshape(-1, 1) if it holds one feature or "
                                     f"X.reshape(1, -1) if it holds one sample.") from None
    # scikit-learn reads a masked array's values under the mask (np.asarray): refused as the functions refuse it
    _refuse_masked(X, caller=caller, name="X", drop="rows (X[~X.mask.any(axis=1)].data)")
    # scikit-learn casts dates and durations to their integer ticks: refused, an array's dtype or a frame's column's
    # (pandas' timezone-aware dates have a dtype of their own, whose kind is "M" too)
    dtypes = getattr(X, "dtypes", None)
    for dtype in (getattr(X, "dtype", None), *(() if dtypes is None or isinstance(dtypes, np.dtype) else dtypes)):
        if getattr(dtype, "kind", None) in ("m", "M"):
            raise TypeError(f"The 'X' parameter of {caller} must be a real-valued array. Got dtype {dtype} instead.")
    before = {key: estimator.__dict__[key] for key in ("n_features_in_", "feature_names_in_")
              if key in estimator.__dict__}

    def put_back():
        if reset:  # validate_data may have set these for the refused X: put back what a previous fit left
            for key in ("n_features_in_", "feature_names_in_"):
                estimator.__dict__.pop(key, None)
            estimator.__dict__.update(before)

    try:
        X = validate_data(estimator, X, reset=reset, ensure_all_finite=False, **kwargs)
    except ValueError as exc:
        put_back()
        raise IsotropyValueError(f"The 'X' parameter of {caller} is refused: {_first_line(exc)}") from None
    except TypeError as exc:
        put_back()
        raise TypeError(f"The 'X' parameter of {caller} is refused: {_first_line(exc)}") from None
    found = first_nonfinite(X)
    if found is not None:
        put_back()
        # "(no NaN or inf)" as the command line says it (scikit-learn's estimator checks look for "NaN" or "inf")
        raise IsotropyValueError(f"The 'X' parameter of {caller} must contain only finite values (no NaN or "
                                 f"inf). Got {found.at()} instead.")
    return X
