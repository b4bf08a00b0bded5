"""The chunked float64 scatter of the transformers, without an n x d copy (the n x n Gram side: ``isotropy._kernels.rows``).

``np.cov(X, rowvar=False)`` centres a full copy of ``X`` and multiplies ``d x n`` by ``n x d`` (a general
product: on 2,000 x 20,000 it crashed inside OpenBLAS at 4.4 GB); here the rows go a chunk at a time
(about 2 MiB of float64, at least 256 rows), each centred chunk multiplied by its own transpose (BLAS ``syrk``) and the products added
in order. The result is ``np.cov``'s to rounding.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MEAN_ROUNDING", "centred_rows", "centred_scatter", "centred_transpose_product", "column_mean", "row_chunks"]

_CHUNK_ELEMENTS = 1 << 18  # float64 entries of a chunk (2 MiB): a small fraction of the data, kept in cache
_MIN_ROWS = 256  # but at least this many rows: each chunk's product also reads and writes the d x d sum


def row_chunks(n_rows: int, n_columns: int):
    """``(start, stop)`` of the row chunks of an ``n_rows x n_columns`` array: 2 MiB of float64, or 256 rows."""
    step = max(_MIN_ROWS, _CHUNK_ELEMENTS // max(n_columns, 1))
    return [(start, min(start + step, n_rows)) for start in range(0, n_rows, step)]


#: How many roundings of the mean (``eps · |mean|`` each) the rows centred on :func:`column_mean` may keep as a common
#: offset: the floor of the transformers' rank tests (``numerical_rank``, Whitening's tolerance), with a margin.
MEAN_ROUNDING = 4


def column_mean(X) -> np.ndarray:
    """The float64 mean of the rows of ``X``, two-pass: the mean, plus the mean of the rows less it (in row chunks).

    numpy adds the rows of ``X.mean(axis=0)`` one after the other, which leaves an error of up to about
    ``n · eps · |x|``: one offset common to every row centred on it, which a rank test must then take for round-off
    (its floor grew with ``n``, and GloVe rows 3e9 from the origin were refused as rank 44 of 50, 1e11 from it as
    "all the same point"). The second pass leaves about one rounding of the mean, ``eps · |mean|`` (rows of one
    repeated point less the first mean are exact, so their two-pass mean is the point itself), and the rank tests'
    floor is :data:`MEAN_ROUNDING` such roundings. One more read of ``X``; memory one chunk.
    """
    n, d = X.shape
    mean = X.mean(axis=0, dtype=np.float64)
    if n == 0 or not np.isfinite(mean).all():
        return mean
    residual = np.zeros(d)
    for start, stop in row_chunks(n, d):
        residual += centred_rows(X, start, stop, mean, 0).sum(axis=0)
    return mean + residual / n


def centred_rows(X, start, stop, mean, exponent):
    """Rows ``start:stop`` of ``X`` as float64, times ``2**-exponent``, minus ``mean`` (a new array)."""
    B = np.asarray(X[start:stop], dtype=np.float64)
    if exponent:
        B = np.ldexp(B, -exponent)  # exact for normal numbers (a subnormal brought up is exact too)
    return B - mean if mean is not None else B.copy()


def centred_scatter(X, mean, *, exponent: int = 0) -> np.ndarray:
    """``Σ (x·2**-exponent − mean)(x·2**-exponent − mean)ᵀ``, float64 ``d x d``, over the rows of ``X`` in chunks.

    Memory: the ``d x d`` result, one product buffer when there is more than one chunk, and one chunk.
    """
    n, d = X.shape
    scatter = buffer = None
    for start, stop in row_chunks(n, d):
        B = centred_rows(X, start, stop, mean, exponent)
        if scatter is None:
            scatter = B.T @ B  # syrk: B.T and B are the same buffer
        else:
            if buffer is None:
                buffer = np.empty((d, d))
            scatter += np.matmul(B.T, B, out=buffer)
    return np.zeros((d, d)) if scatter is None else scatter


def centred_transpose_product(X, mean, U) -> np.ndarray:
    r"""``(X − 1 meanᵀ)ᵀ U``, float64 ``d x k``, over blocks of the columns of ``X`` (``n x d``; ``U``: ``n x k``).

    Each block of all the rows (about 2 MiB of float64, at least one column) is converted to float64, centred on
    its part of ``mean`` and multiplied by ``U``: :math:`V_{[c]} = (X_{[:, c]} - \mathbf{1}\mu_{[c]}^\top)^\top U`.
    Memory: the ``d x k`` result and one block, no centred ``n x d`` copy (the ``n x n`` side of the transformers,
    beside :func:`isotropy._kernels.rows.row_statistics`' centred Gram).
    """
    out = np.empty((X.shape[1], U.shape[1]))
    for columns, B in _centred_column_blocks(X, mean):
        np.matmul(B.T, U, out=out[columns])
    return out


def centred_product(X, mean, Q) -> np.ndarray:
    r"""``(X − 1 meanᵀ) Q``, float64 ``n x k``, over blocks of the columns of ``X`` (``n x d``; ``Q``: ``d x k``).

    The other side of :func:`centred_transpose_product`: :math:`\sum_c (X_{[:, c]} - \mathbf{1}\mu_{[c]}^\top)
    Q_{[c]}`, one block of all the rows at a time, no centred ``n x d`` copy.
    """
    out = np.zeros((X.shape[0], Q.shape[1]))
    for columns, B in _centred_column_blocks(X, mean):
        out += B @ Q[columns]
    return out


def _centred_column_blocks(X, mean):
    """``(columns, X[:, columns] − mean[columns])``: float64 blocks of all the rows, about 2 MiB each (a column at
    least), for :func:`centred_transpose_product` and :func:`centred_product`."""
    n, d = X.shape
    step = max(1, _CHUNK_ELEMENTS // max(n, 1))
    for start in range(0, d, step):
        columns = slice(start, min(start + step, d))
        yield columns, np.asarray(X[:, columns], dtype=np.float64) - mean[columns]
