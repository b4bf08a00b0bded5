"""Alignment and uniformity of embeddings on the hypersphere (Wang & Isola, ICML 2020).

Alignment: how close the embeddings of positive pairs are (lower is better aligned).
Uniformity: how evenly the embeddings spread over the unit sphere, as the log of the average
Gaussian potential between all pairs (lower is more uniform). Both are defined on L2-normalised
embeddings, which is the default here (``normalize=True``).
"""

from __future__ import annotations

import functools
import numbers

import numpy as np

from isotropy._kernels.sphere import pair_potentials, unit_rows
from isotropy._utils.backend import is_dask, is_torch, to_output
from isotropy._utils.errors import IsotropyValueError
from isotropy._utils.validation import check_bool, check_scalar, check_X

__all__ = ["alignment", "uniformity"]

_BLOCK_ROWS, _BLOCK_COLS = 1024, 8192  # uniformity's tiles: 1024 x 8192 float64 distances (64 MB) at a time


def alignment(X, Y, *, alpha: float = 2, normalize: bool = True):
    """Alignment of positive pairs: the mean of ``‖x_i − y_i‖^α`` over the rows.

    Parameters
    ----------
    X, Y : array-like, torch.Tensor or dask array of shape (n_samples, n_features)
        Row ``i`` of ``X`` and row ``i`` of ``Y`` embed the two sides of the ``i``-th positive pair
        (two augmentations, a sentence and its paraphrase, a query and its document). One tensor and
        one array: the array is taken as a tensor on the tensor's device, in its dtype. One dask
        array and one numpy array: both are read as dask arrays; a dask array with a tensor is refused.
    alpha : float, default=2
        The exponent (the paper's default is 2).
    normalize : bool, default=True
        Project every row onto the unit sphere first, as the paper's definition assumes.

    Returns
    -------
    align : float or torch.Tensor
        In ``[0, 2^α]`` with ``normalize``; 0 when every pair coincides. Python float for numpy
        and dask input; a differentiable 0-dim tensor when ``X`` or ``Y`` is a tensor.

    Notes
    -----
    .. math:: \\mathcal{L}_{\\text{align}} = \\mathbb{E}_{(x, y) \\sim p_{\\text{pos}}}
              \\lVert f(x) - f(y) \\rVert_2^{\\alpha}

    References
    ----------
    .. [1] T. Wang and P. Isola, "Understanding Contrastive Representation Learning through
       Alignment and Uniformity on the Hypersphere", ICML 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy.metrics.contrastive import alignment
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> round(alignment(X, X[::-1]), 12)          # orthogonal unit pairs: squared distance 2
    2.0
    """
    caller = "alignment"
    check_scalar(alpha, "alpha", caller=caller, kind=numbers.Real, low=0, closed="neither")
    check_bool(normalize, "normalize", caller=caller)
    if is_dask(X) or is_dask(Y):
        for name, data in (("X", X), ("Y", Y)):
            if is_torch(data):  # da.asarray of a tensor needing grad raised torch's "Can't call numpy() on Tensor ..."
                other = "Y" if name == "X" else "X"
                raise IsotropyValueError(f"The '{name}' parameter of {caller} must be a dask or numpy array when "
                                         f"'{other}' is a dask array. Got a torch.Tensor instead (pass "
                                         f"{name}.detach().cpu().numpy(), or two tensors).")
        import dask.array as da

        X, Y = da.asarray(X), da.asarray(Y)
        if X.shape != Y.shape or X.ndim != 2:
            raise IsotropyValueError(f"The 'Y' parameter of {caller} must have the shape of 'X' {X.shape}. "
                                     f"Got {Y.shape} instead.")
        X = X.rechunk({1: -1}).astype(np.float64)  # whole rows per block: each is projected as in memory
        Y = Y.rechunk(X.chunks).astype(np.float64)
        if normalize:  # a zero row is refused by the same words as in memory, when its block is computed
            # (map_blocks keeps its own name=: the parameter's name goes in through partial)
            X = X.map_blocks(functools.partial(unit_rows, caller=caller, name="X"), dtype=np.float64)
            Y = Y.map_blocks(functools.partial(unit_rows, caller=caller, name="Y"), dtype=np.float64)
        value = float((da.linalg.norm(X - Y, axis=1) ** float(alpha)).mean().compute())
        if not np.isfinite(value):
            raise IsotropyValueError(f"The 'X' and 'Y' parameters of {caller} must be finite with non-zero rows. "
                                     f"Got a result of {value} instead.")
        return value
    X = check_X(X, caller=caller, min_samples=1)
    Y = check_X(Y, caller=caller, name="Y", min_samples=1)
    if is_torch(X) != is_torch(Y):
        # One tensor and one numpy array: a decision, the numpy one becomes a tensor on the tensor's device and in its
        # dtype, and the value is the tensor's (differentiable in it), as if both had been tensors. Refusing would
        # make the common training use (a model's output against fixed numpy targets) convert by hand; the numpy
        # side has no graph to lose, and style says device and dtype come from the input. Before, the tensor went
        # through numpy: torch's raw "Can't call numpy() on Tensor that requires grad", or a float64 float with a
        # NumPy DeprecationWarning for a float32 tensor.
        import torch

        if is_torch(X):
            Y = torch.as_tensor(Y, dtype=X.dtype, device=X.device)
        else:
            X = torch.as_tensor(X, dtype=Y.dtype, device=Y.device)
    if tuple(X.shape) != tuple(Y.shape):
        raise IsotropyValueError(f"The 'Y' parameter of {caller} must have the shape of 'X' {tuple(X.shape)}. "
                                 f"Got {tuple(Y.shape)} instead.")
    if normalize:
        X, Y = unit_rows(X, caller=caller, name="X"), unit_rows(Y, caller=caller, name="Y")
    if is_torch(X):
        import torch

        # ‖x − y‖^α as (‖x − y‖²)^(α/2), with the gradient 0 (a subgradient) where a pair coincides: for α < 1 the
        # norm's 0 times the power's infinite slope gave a NaN gradient to both rows of an identical pair
        sq = (X - Y).pow(2).sum(dim=1)
        apart = sq > 0
        return torch.where(apart, torch.where(apart, sq, torch.ones_like(sq)).pow(float(alpha) / 2),
                           torch.zeros_like(sq)).mean()
    diff = np.asarray(X, dtype=np.float64) - np.asarray(Y, dtype=np.float64)
    return to_output(np.mean(np.linalg.norm(diff, axis=1) ** float(alpha)), X)


def uniformity(X, *, t: float = 2, normalize: bool = True):
    """Uniformity: the log of the mean Gaussian potential ``exp(−t ‖x_i − x_j‖²)`` over all pairs ``i < j``.

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        The embeddings, one sample per row.
    t : float, default=2
        The potential's scale (the paper's default is 2).
    normalize : bool, default=True
        Project every row onto the unit sphere first, as the paper's definition assumes.

    Returns
    -------
    unif : float or torch.Tensor
        ``≤ 0``; more negative is more uniform, 0 when all rows coincide. Python float for numpy
        input, and for a dask array (every pair, by tiles: :func:`isotropy.distributed.uniformity`);
        a differentiable 0-dim tensor for torch input.

    Notes
    -----
    .. math:: \\mathcal{L}_{\\text{uniform}} = \\log \\frac{2}{n(n-1)} \\sum_{i<j}
              e^{-t \\lVert f(x_i) - f(x_j) \\rVert_2^2}

    Exact over all ``n(n − 1)/2`` pairs, as the paper's reference code (``torch.pdist``). numpy
    input: float64 tiles on and above the diagonal of the Gram matrix (each pair once, bounded
    memory), ``‖x − y‖² = ‖x‖² + ‖y‖² − 2x·y`` clipped at 0, and a running log-sum-exp so that a
    large ``t`` does not underflow to ``log 0``. On the unit sphere the rounding of a squared
    distance is about 1e-16 in absolute terms, far below what moves the potential. Torch input
    is computed in one differentiable ``torch.pdist``, as in training.

    References
    ----------
    .. [1] T. Wang and P. Isola, "Understanding Contrastive Representation Learning through
       Alignment and Uniformity on the Hypersphere", ICML 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy.metrics.contrastive import uniformity
    >>> X = np.array([[1.0, 0.0], [-1.0, 0.0]])       # antipodal: squared distance 4
    >>> uniformity(X, t=2)
    -8.0
    """
    caller = "uniformity"
    check_scalar(t, "t", caller=caller, kind=numbers.Real, low=0, closed="neither")
    check_bool(normalize, "normalize", caller=caller)
    if is_dask(X):  # a dask array: every pair once, by tiles on the dask scheduler (the same value)
        from isotropy import distributed

        return distributed.uniformity(X, t=t, normalize=normalize)
    X = check_X(X, caller=caller)
    if normalize:
        X = unit_rows(X, caller=caller)
    t = float(t)
    if is_torch(X):
        import torch

        sq = torch.pdist(X, p=2).pow(2)
        # the log-sum-exp in float64: in float32, exp(−t·d²) of nearly collapsed rows (d² ~ 1e-8) rounds to 1 and the
        # value read exactly 0 ("all rows coincide") where numpy reads −1e-7 on the same values
        wide = torch.float32 if sq.device.type == "mps" else torch.float64  # MPS has no float64
        value = torch.logsumexp(-t * sq.to(wide), dim=0) - float(np.log(sq.numel()))
        return value.to(sq.dtype)
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    sq = np.einsum("ij,ij->i", X, X)
    # every pair once, in tiles of _BLOCK_ROWS x _BLOCK_COLS on and above the diagonal (the dask tiles' kernel)
    top, total = pair_potentials(X, sq, X, sq, t, diagonal=True, rows=_BLOCK_ROWS, cols=_BLOCK_COLS)
    return float(top + np.log(total) - np.log(n * (n - 1) / 2))
