"""Per-token vector norms over their median: the outlier tokens that stretch a layer's geometry.

Raw decoders put *massive activations* on a few tokens (Gemma's ``<bos>``, sometimes a window's
first position or a delimiter): hidden states many times the median norm (5-16x on Gemma 3 270M's
``<bos>`` in its middle layers). They stretch PCA figures and dominate covariance-based scores such
as IsoScore. :func:`token_norms` names the tokens that carry the largest norms relative to the
median, with the special tokens ([CLS], [SEP], ``<bos>``) listed apart.
"""

from __future__ import annotations

import numbers

import numpy as np

from isotropy._utils.backend import is_dask, is_torch
from isotropy._utils.errors import IsotropyValueError
from isotropy._utils.magnitude import extremes, refuse_subnormal
from isotropy._utils.validation import _describe, _finite, check_scalar, check_X, refuse_subnormal_as_given

__all__ = ["token_norms"]

_CALLER = "token_norms"


def _check_tokens(tokens, n_samples: int) -> list[str]:
    if isinstance(tokens, (str, bytes)) or not hasattr(tokens, "__len__"):
        raise TypeError(f"The 'tokens' parameter of {_CALLER} must be a sequence of strings, one per row of X. "
                        f"Got {type(tokens).__name__} instead.")
    tokens = list(tokens)
    if len(tokens) != n_samples:
        raise IsotropyValueError(f"The 'tokens' parameter of {_CALLER} must hold one token string per row of X "
                                 f"({n_samples}). Got {len(tokens)} instead.")
    for i, token in enumerate(tokens):
        if not isinstance(token, str):
            raise TypeError(f"The 'tokens' parameter of {_CALLER} must hold strings. Got {_describe(token)} "
                            f"at position {i} instead.")
    return [str(token) for token in tokens]


def _check_special(special) -> list[tuple[str, float]]:
    if special is None:
        return []
    if isinstance(special, (str, bytes)) or not hasattr(special, "__iter__"):
        raise TypeError(f"The 'special' parameter of {_CALLER} must be None or a sequence of (token, norm) pairs. "
                        f"Got {type(special).__name__} instead.")
    pairs = []
    for i, pair in enumerate(special):
        if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise TypeError(f"The 'special' parameter of {_CALLER} must hold (token, norm) pairs. "
                            f"Got {_describe(pair)} at position {i} instead.")
        token, norm = pair
        if not isinstance(token, str):
            raise TypeError(f"The 'special' parameter of {_CALLER} must hold (token, norm) pairs with a string "
                            f"token. Got {_describe(token)} at position {i} instead.")
        real = isinstance(norm, numbers.Real) and not isinstance(norm, bool)
        # a norm is read as a float: an int past float64's range (10**400) is not finite there (np.isfinite raised
        # numpy's own TypeError for it, and float() an OverflowError)
        if not real or not _finite(norm, as_float=True) or norm < 0:
            beyond = real and isinstance(norm, numbers.Integral) and norm > 0
            where = " inside float64's range (at most 1.8e308)" if beyond else ""
            raise (IsotropyValueError if real else TypeError)(
                f"The 'special' parameter of {_CALLER} must hold (token, norm) pairs with a finite norm >= 0{where}. "
                f"Got {_describe(norm)} at position {i} instead.")
        pairs.append((str(token), float(norm)))
    return pairs


def _largest_per_token(pairs) -> list[list]:
    """Each distinct token once with its largest ratio, largest first (ties by token string)."""
    best: dict[str, float] = {}
    for token, ratio in pairs:
        if ratio > best.get(token, -np.inf):
            best[token] = ratio
    return [[token, ratio] for token, ratio in sorted(best.items(), key=lambda item: (-item[1], item[0]))]


def token_norms(X, tokens, *, special=None, top: int = 5) -> dict:
    """The tokens with the largest vector norms, as multiples of the median norm of the rows of ``X``.

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        The hidden states of the measured tokens, one token per row (a tensor is detached and
        read on the CPU; a row-chunked dask array is read chunk by chunk on the dask scheduler,
        and only its row norms, one float per row, come to the client for the median).
    tokens : sequence of str of length n_samples
        The token text of each row of ``X`` (e.g. ``tokenizer.convert_ids_to_tokens``).
    special : sequence of (str, float) or None, default=None
        ``(token, norm)`` pairs of special tokens ([CLS], [SEP], ``<bos>``, ...) measured apart: their
        norms, not rows of ``X``. They are compared with the median of ``X`` but never change it.
    top : int, default=5
        How many distinct token strings ``top`` lists.

    Returns
    -------
    dict
        ``max_over_median`` (float): the largest row norm of ``X`` over the median row norm, 1 when
        every row has the same norm; ``median_norm`` (float): the median row norm of ``X``; ``top``:
        ``[[token, ratio], ...]``, the ``top`` distinct token strings of ``tokens`` with the largest
        ratio ``norm / median_norm`` (each string once, with its largest ratio), largest first;
        ``special``: ``[[token, ratio], ...]``, each distinct token of ``special`` once with its
        largest ratio, largest first (empty when ``special`` is None or empty). Ties are ordered by
        token string, so the result does not depend on the order of the rows.

    Raises
    ------
    IsotropyValueError
        If ``X`` is not 2-d or holds NaN/inf, if its largest ``|x|`` is subnormal (its digits are lost),
        if its median row norm is 0 (more than half of its rows are zero vectors), if
        ``len(tokens) != n_samples``, if a special norm is negative or not finite as a float64, or if
        ``top < 1``.
    TypeError
        If ``tokens`` or ``special`` are not sequences of strings and ``(token, norm)`` pairs.

    Notes
    -----
    With ``m = median_j ‖x_j‖`` over the rows of ``X``, the ratio of a row (or of a special token of
    norm ``s``) is

    .. math:: r_j = \\frac{\\lVert x_j \\rVert_2}{m}, \\qquad
              \\text{max\\_over\\_median} = \\max_j r_j, \\qquad r_{\\text{special}} = \\frac{s}{m}.

    The ratios do not change when ``X`` (and the special norms) are multiplied by a positive
    constant, nor when the rows are permuted. Norms are computed in float64 after dividing ``X`` by
    its largest ``|x|``, so no square overflows.

    Why it matters: large language models put a few activations up to 10⁵ times larger than the others
    on fixed tokens (the first token, delimiters) in their middle layers (Sun et al. 2024), and BERT-like
    encoders have outlier dimensions of large magnitude (Kovaleva et al. 2021). A token with a ratio
    of 10 holds 100 times the squared norm of a typical token, so it can dominate the covariance,
    the principal components and every covariance-based isotropy score of its layer. Read a ratio
    near 1-3 as ordinary spread; far above that as an outlier worth leaving out, or at least
    naming beside the figure.

    References
    ----------
    .. [1] M. Sun, X. Chen, J. Z. Kolter and Z. Liu, "Massive Activations in Large Language Models",
       COLM 2024 (arXiv:2402.17762).
    .. [2] O. Kovaleva, S. Kulshreshtha, A. Rogers and A. Rumshisky, "BERT Busters: Outlier Dimensions
       that Disrupt Transformers", Findings of ACL 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy import token_norms
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, -1.0], [6.0, 8.0]])  # norms 1, 1, 1, 10
    >>> result = token_norms(X, ["the", "cat", "the", "."], special=[("<bos>", 30.0)], top=2)
    >>> result["max_over_median"], result["median_norm"]
    (10.0, 1.0)
    >>> result["top"], result["special"]
    ([['.', 10.0], ['cat', 1.0]], [['<bos>', 30.0]])
    """
    given = X  # float16 tensors and dask arrays are read as float32: judged in float16 below, as numpy arrays are
    if is_dask(X):  # the rows' norms computed chunk by chunk on the dask scheduler; one float per row comes back
        from isotropy.distributed._graph import check_dask_X
        from isotropy.distributed._rows import row_norms

        X = check_dask_X(X, caller=_CALLER, min_samples=1)
    else:
        X = check_X(X, caller=_CALLER, min_samples=1)
        # data whose largest |x| is subnormal (in their own dtype) have lost their digits: refused as every other
        # metric refuses them (check_X's rescale); read in float64 they were accepted, and the ratios were off
        # (1.868547 for the 1.868601 of the same data at a normal scale)
        low, high = extremes(X)
        scale = max(abs(low), abs(high))  # max|x|, exact in float64 whatever X's float dtype
        refuse_subnormal_as_given(given, X, caller=_CALLER, top=scale)
        refuse_subnormal(X, scale, caller=_CALLER)
        if is_torch(X):
            X = X.detach().cpu().numpy()
        X = np.asarray(X, dtype=np.float64)
    tokens = _check_tokens(tokens, X.shape[0])
    special = _check_special(special)
    check_scalar(top, "top", caller=_CALLER, kind=numbers.Integral, low=1)
    if is_dask(X):
        unit_norms, scale = row_norms(X, caller=_CALLER)
        refuse_subnormal_as_given(given, X, caller=_CALLER, top=scale)
        refuse_subnormal(X, scale, caller=_CALLER)  # scale is max|x|, as in memory (the same words)
    else:
        unit = X / scale if scale > 0 else X  # |x| <= 1: no square overflows, whatever the scale of X
        unit_norms = np.sqrt(np.einsum("ij,ij->i", unit, unit))
    unit_median = float(np.median(unit_norms))
    if unit_median == 0:
        raise IsotropyValueError(f"The 'X' parameter of {_CALLER} must have a positive median row norm (more than "
                                 f"half of its rows are zero vectors). Got a median norm of 0 instead.")
    ratios = unit_norms / unit_median
    median_norm = scale * unit_median
    return {"max_over_median": float(ratios.max()),
            "median_norm": float(median_norm),
            "top": _largest_per_token(zip(tokens, ratios.tolist()))[:int(top)],
            "special": _largest_per_token((token, norm / median_norm) for token, norm in special)}
