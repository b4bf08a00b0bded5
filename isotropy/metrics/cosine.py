"""Mean cosine similarity statistics in O(n·d): never an n×n similarity matrix.

The mean cosine over the distinct pairs of n unit vectors x̂ᵢ follows from their sum s = Σ x̂ᵢ:
Σ_{i≠j} x̂ᵢᵀx̂ⱼ = ‖s‖² − Σᵢ‖x̂ᵢ‖² = ‖s‖² − n. Per-type statistics use one such sum per type.
numpy input is computed in float64 and returns a Python float; torch input keeps its device and
dtype and returns a differentiable 0-dim tensor.
"""

from __future__ import annotations

import numbers

import numpy as np

from isotropy._kernels.rows import mean_pair_cosine, norm_range
from isotropy._kernels.rows import refuse_rows as _refuse_rows
from isotropy._utils.backend import is_dask, is_torch, to_output, without_autocast
from isotropy._utils.validation import (
    IsotropyValueError,
    check_labels,
    check_option,
    check_random_state,
    check_scalar,
    check_X,
)

__all__ = ["cosine_similarity_mean", "inter_type_cosine", "intra_type_cosine"]


def _unit_rows_numpy(B, *, caller, name, offset=0):
    """Unit rows of a float64 block (the caller's own copy, scaled in place); rows whose squared norm over- or underflows are first
    brought to unit scale by a power of two (exact), so norms never overflow (data up to 1.8e308)."""
    from isotropy._kernels.rows import _unit_rows_block

    zero, subnormal = [], []
    _unit_rows_block(B, 0, zero, subnormal)
    if zero or subnormal:
        _refuse_rows(np.concatenate(zero), np.concatenate(subnormal), caller=caller, name=name, offset=offset)
    return B


def _unit_rows(X, *, caller, name="X"):
    """Rows of ``X`` scaled to unit norm (float64 numpy or torch in its dtype); zero rows raise."""
    if not is_torch(X):
        return _unit_rows_numpy(np.array(X, dtype=np.float64), caller=caller, name=name)
    import torch

    odd = _odd_rows_torch(X, caller=caller, name=name)
    if odd is not None:
        top = X.detach().abs().amax(dim=1)
        exponent = torch.where(odd, torch.frexp(top).exponent, torch.zeros_like(top, dtype=torch.int32))
        X = torch.ldexp(X, -exponent[:, None].to(X.dtype))  # exact power-of-two row scaling, differentiable
    return X / torch.linalg.vector_norm(X, dim=1)[:, None]


def _odd_rows_torch(X, *, caller, name="X"):
    """The rows of the tensor ``X`` whose squared norm over- or underflows (a boolean mask; ``None`` when there are
    none), after refusing its zero and subnormal rows by their indices in ``X``."""
    import torch

    sq = (X.detach() * X.detach()).sum(dim=1)
    lo, hi = norm_range(torch.finfo(X.dtype))
    odd = ~((sq > lo) & (sq < hi))
    if not bool(odd.any()):
        return None
    top = X.detach().abs().amax(dim=1)
    tiny = torch.finfo(X.dtype).tiny
    _refuse_rows((top == 0).nonzero().reshape(-1).cpu().numpy(),
                 ((top > 0) & (top < tiny)).nonzero().reshape(-1).cpu().numpy(), caller=caller, name=name)
    return odd


def _refuse_bad_rows(X, ids, n_types, *, caller):
    """Refuse the zero and subnormal rows of all of ``X`` (numpy, torch or dask), by their indices in ``X``."""
    if is_dask(X):  # one pass over the chunks (a NaN/inf refused on the way, at its row and column)
        from isotropy.distributed._rows import type_sums

        _refuse_rows(*type_sums(X, ids, n_types, caller=caller)[1:], caller=caller, name="X")
    elif is_torch(X):
        _odd_rows_torch(X, caller=caller)
    else:
        _unit_sums(X, caller=caller)  # the rows' chunked float64 pass (shared with an isotropy measure table)


def _unit_row_sum(X, *, caller, name="X"):
    """Σ x̂ᵢ over the rows of ``X``: float64, a block of rows at a time for numpy (no n×d float64 copy)."""
    if is_torch(X):
        return _unit_rows(X, caller=caller, name=name).sum(0)
    return _unit_sums(X, caller=caller, name=name).sum


def _unit_sums(X, *, caller, name="X", squares=False):
    """:class:`isotropy._kernels.rows.Units` of a numpy ``X`` (Σ x̂ᵢ, and Σ x̂ᵢ² with ``squares``); zero rows raise.

    One chunked float64 pass (:func:`isotropy._kernels.rows.row_statistics`), shared with the other
    covariance metrics of an ``isotropy measure`` table.
    """
    from isotropy._kernels.rows import row_statistics

    units = row_statistics(X, ("units", "unit_squares") if squares else ("units",))["units"]
    _refuse_rows(units.zero, units.subnormal, caller=caller, name=name)
    return units


def _mean_pairwise_cosine_of_units(sum_vec, count):
    """(‖s‖² − m) / (m(m − 1)) for the sum ``s`` of ``m`` unit vectors (arrays of sums allowed)."""
    return mean_pair_cosine((sum_vec * sum_vec).sum(-1), count)


def _group_sums(U, ids, n_groups):
    """Per-group sums of the rows of ``U``: array of shape (n_groups, n_features)."""
    if is_torch(U):
        import torch

        index = torch.as_tensor(ids, device=U.device)
        return torch.zeros((n_groups, U.shape[1]), device=U.device, dtype=U.dtype).index_add(0, index, U)
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    sums = np.zeros((n_groups, U.shape[1]))
    sums[sorted_ids[starts]] = np.add.reduceat(U[order], starts, axis=0)
    return sums


def _take_rows(X, index):
    if is_torch(X):
        import torch

        return X[torch.as_tensor(index, device=X.device)]
    return X[index]


def cosine_similarity_mean(X):
    """Mean cosine similarity over all distinct pairs of samples.

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        One vector per row, ``n_samples >= 2``; no all-zero rows.

    Returns
    -------
    mean_cos : float or torch.Tensor
        In [-1/(n−1), 1]; near 0 for isotropic data, near 1 when all vectors point alike (anisotropy
        in the sense of Ethayarajh). Python float (float64 arithmetic) for numpy input; a
        differentiable 0-dim tensor on the input's device for torch input: float32 for float16,
        bfloat16 and integer tensors (computed in float32), else the input's dtype.

    Notes
    -----
    With x̂ᵢ = xᵢ/‖xᵢ‖ and s = Σᵢ x̂ᵢ,

    .. math:: \\frac{1}{n(n-1)} \\sum_{i \\neq j} \\cos(x_i, x_j) = \\frac{\\|s\\|^2 - n}{n(n-1)},

    O(n·d) time and O(d) extra memory (rows are converted to float64 a block at a time). Rows whose
    squared norm would over- or underflow are first scaled by a power of two (exact).

    References
    ----------
    .. [1] K. Ethayarajh, "How Contextual are Contextualized Word Representations? Comparing the
       Geometry of BERT, ELMo, and GPT-2 Embeddings", EMNLP 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy import cosine_similarity_mean
    >>> round(cosine_similarity_mean(np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]])), 6)  # (0 + 2·√½) / 3
    0.471405
    """
    if is_dask(X):  # a dask array: computed by tiles / chunk statistics on the dask scheduler
        from isotropy import distributed
        return distributed.cosine_similarity_mean(X)
    return _cosine_similarity_mean(X, caller="cosine_similarity_mean")


@without_autocast
def _cosine_similarity_mean(X, *, caller, name="X"):
    """:func:`cosine_similarity_mean` whose errors name ``caller``'s parameter ``name`` (``cosine_penalty``'s H)."""
    X = check_X(X, caller=caller, name=name)
    return to_output(_mean_pairwise_cosine_of_units(_unit_row_sum(X, caller=caller, name=name), X.shape[0]), X)


@without_autocast
def inter_type_cosine(X, groups, *, type_vector="instance", random_state=None):
    """S_inter of Cai et al.: mean cosine similarity between vectors of distinct types.

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        Contextual embeddings, one instance (token occurrence) per row.
    groups : array-like of shape (n_samples,)
        The type (e.g. word) of each instance; at least 2 distinct types.
    type_vector : {"instance", "mean"}, default="instance"
        How a type is represented: ``"instance"`` draws one random instance of each type, as
        Cai et al. do; ``"mean"`` uses the mean of the type's instances (deterministic).
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState, default=None
        Seeds the draw of instances for ``type_vector="instance"`` (a RandomState seeds a Generator
        with one draw of it).

    Returns
    -------
    s_inter : float or torch.Tensor
        Python float for numpy input; 0-dim tensor (differentiable) for torch input.

    Notes
    -----
    .. math:: S_{inter} = \\mathbb{E}_{i \\neq j}\\left[\\cos(\\phi(t_i), \\phi(t_j))\\right]

    over distinct types tᵢ ≠ tⱼ, φ(t) the type's representative vector; computed as
    :func:`cosine_similarity_mean` of the k representatives. ``"instance"``: any row may be drawn,
    so every row of ``X`` is checked (one O(n·d) pass): an all-zero (or subnormal) row is refused by
    its row index whatever ``random_state``. ``"mean"``: a type whose instances sum to zero has no
    direction and is refused by its label; a zero instance only adds nothing to its type's mean.

    References
    ----------
    .. [1] X. Cai, J. Huang, Y. Bian and K. Church, "Isotropy in the Contextual Embedding Space:
       Clusters and Manifolds", ICLR 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy import inter_type_cosine
    >>> X = np.array([[1.0, 0.0], [2.0, 0.1], [0.0, 1.0], [0.1, 3.0]])
    >>> round(inter_type_cosine(X, ["a", "a", "b", "b"], type_vector="mean"), 4)
    0.0583
    """
    caller = "inter_type_cosine"
    X = _checked(X, caller)
    check_option(type_vector, "type_vector", ("instance", "mean"), caller=caller)
    ids = _checked_groups(groups, X.shape[0], caller)
    n_types = int(ids.max()) + 1
    if n_types < 2:
        raise IsotropyValueError(f"The 'groups' parameter of {caller} must contain at least 2 distinct types. "
                                 f"Got {n_types} instead.")
    if type_vector == "instance":
        # every row of X could be drawn: a zero (or subnormal) row is refused whichever rows the seed draws, by its
        # row of X. Only the drawn rows were checked, and named by their place among them: refused or not by the seed
        # (a zero row 40 gave -0.0143 with random_state=0, "first at index 0" with 1), against docs/refusals.md
        rng = check_random_state(random_state, caller=caller)  # a bad parameter is told before the O(n·d) pass
        _refuse_bad_rows(X, ids, n_types, caller=caller)
        perm = rng.permutation(X.shape[0])
        _, first = np.unique(ids[perm], return_index=True)  # first instance of each type in random order
        if is_dask(X):  # the k rows drawn, gathered (every chunk checked for NaN/inf)
            from isotropy.distributed._rows import drawn_rows

            V = drawn_rows(X, perm[first], caller=caller)
        else:
            V = _take_rows(X, perm[first])
    else:
        if is_dask(X):  # per-chunk type sums merged on the dask scheduler
            from isotropy.distributed._rows import type_sums

            sums = type_sums(X, ids, n_types, unit=False, caller=caller)[0]
        else:
            sums = _group_sums(X if is_torch(X) else np.asarray(X, dtype=np.float64), ids, n_types)
        V = sums  # a type mean is its sum up to a positive factor: same cosines
        _refuse_zero_means(V, ids, groups, caller=caller)
    U = _unit_rows(V, caller=caller)  # its zero and subnormal rows refused above
    return to_output(_mean_pairwise_cosine_of_units(U.sum(0), n_types), X)


def _refuse_zero_means(V, ids, groups, *, caller):
    """Refuse a type whose mean (``V``: the types' sums) is the zero vector or made only of subnormal numbers, naming
    the type by its label: the type's place among the sorted labels was reported as a row index."""
    if is_torch(V):
        import torch

        top = V.detach().abs().amax(dim=1).cpu().numpy()
        tiny = float(torch.finfo(V.dtype).tiny)
    else:
        top = np.abs(V).max(axis=1)
        tiny = float(np.finfo(V.dtype).tiny)
    for bad, what in ((top == 0, "sum to the zero vector"),
                      ((top > 0) & (top < tiny), "have a mean made only of subnormal numbers")):
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            raise IsotropyValueError(
                f"The 'X' parameter of {caller} must give every type a mean of non-zero length with "
                f"type_vector='mean' (the cosine of a zero vector is undefined). Got {int(bad.sum())} type(s) whose "
                f"instances {what} (first: type {_type_label(groups, ids, first)}) instead.")


def _type_label(groups, ids, index):
    """The label of the type ``index`` (``ids`` numbers the types by their sorted labels), for a message."""
    from isotropy._utils.validation import _describe

    row = int(np.flatnonzero(ids == index)[0])
    if is_dask(groups):
        groups = groups.compute()
    if is_torch(groups):
        groups = groups.detach().cpu().numpy()
    label = np.asarray(groups)[row]
    return _describe(label.tolist() if hasattr(label, "tolist") else label)


def _checked(X, caller):
    """:func:`check_X`, or for a dask array its lazy check (its values are checked chunk by chunk when read)."""
    if is_dask(X):
        from isotropy.distributed._graph import check_dask_X

        return check_dask_X(X, caller=caller)
    return check_X(X, caller=caller)


def _checked_groups(groups, n_samples, caller):
    if is_dask(groups):  # one label per row: brought to the client
        groups = groups.compute()
    return check_labels(groups, n_samples=n_samples, caller=caller, name="groups")


@without_autocast
def intra_type_cosine(X, groups, *, max_instances=None, random_state=None):
    """S_intra of Cai et al.: mean over types of the mean pairwise cosine of that type's instances.

    Parameters
    ----------
    X : array-like or torch.Tensor of shape (n_samples, n_features)
        Contextual embeddings, one instance per row.
    groups : array-like of shape (n_samples,)
        The type of each instance. Types with a single instance have no pair and are left out;
        at least one type must have 2 or more instances.
    max_instances : int >= 2 or None, default=None
        Use at most this many randomly drawn instances of each type (``None``: all of them).
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState, default=None
        Seeds the draw for ``max_instances`` (a RandomState seeds a Generator with one draw of it).

    Returns
    -------
    s_intra : float or torch.Tensor
        Python float for numpy input; 0-dim tensor (differentiable) for torch input.

    Notes
    -----
    .. math:: S_{intra} = \\mathbb{E}_i\\left[\\mathbb{E}_{k \\neq l}
              \\left[\\cos(\\phi_k(t_i), \\phi_l(t_i))\\right]\\right]
              = \\frac{1}{|T|}\\sum_{t \\in T} \\frac{\\|s_t\\|^2 - m_t}{m_t(m_t - 1)},

    T the types with m_t ≥ 2 instances, s_t the sum of their unit vectors; O(n·d). Every row of
    ``X`` is checked, whichever rows ``max_instances`` and ``random_state`` draw: an all-zero (or
    subnormal) row is refused by its row index, also in a type with a single instance.

    References
    ----------
    .. [1] X. Cai, J. Huang, Y. Bian and K. Church, "Isotropy in the Contextual Embedding Space:
       Clusters and Manifolds", ICLR 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from isotropy import intra_type_cosine
    >>> X = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [0.0, 2.0], [5.0, 5.0]])
    >>> round(intra_type_cosine(X, [0, 0, 1, 1, 2]), 4)   # (cos 45° + 1) / 2; type 2 has no pair
    0.8536
    """
    caller = "intra_type_cosine"
    X = _checked(X, caller)
    if max_instances is not None:
        check_scalar(max_instances, "max_instances", caller=caller, kind=numbers.Integral, low=2)
    ids = _checked_groups(groups, X.shape[0], caller)
    n_types = int(ids.max()) + 1
    counts = np.bincount(ids, minlength=n_types)  # a draw keeps min(count, max_instances) >= 1 of each type
    if counts.max() < 2:
        raise IsotropyValueError(f"The 'groups' parameter of {caller} must have at least one type with 2 or more "
                                 f"instances. Got {n_types} types with one instance each instead.")
    keep = None
    if max_instances is not None:
        rng = check_random_state(random_state, caller=caller)
        # every row of X could be drawn: a zero (or subnormal) row is refused whichever rows the seed draws, by its
        # row of X (inter_type_cosine's check). Only the drawn rows were checked, and named by their place among
        # them: a zero row 40 measured 0.0529 with random_state=0, "first at index 30" with 1
        _refuse_bad_rows(X, ids, n_types, caller=caller)
        perm = rng.permutation(X.shape[0])
        order = perm[np.argsort(ids[perm], kind="stable")]  # grouped by type, random within type
        sorted_ids = ids[order]
        starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
        rank = np.arange(order.size) - np.repeat(starts, np.diff(np.r_[starts, order.size]))
        keep = np.sort(order[rank < max_instances])
        ids = ids[keep]
        counts = np.minimum(counts, max_instances)
        if not is_dask(X):
            X = _take_rows(X, keep)
    paired = np.flatnonzero(counts >= 2)
    if is_dask(X):  # per-chunk type sums of unit rows merged on the dask scheduler
        from isotropy.distributed._rows import type_sums

        sums, zero, subnormal = type_sums(X, ids, n_types, keep=keep, caller=caller)
        _refuse_rows(zero, subnormal, caller=caller, name="X")
        return float(_mean_pairwise_cosine_of_units(sums[paired], counts[paired].astype(np.float64)).mean())
    U = _unit_rows(X, caller=caller)
    sums = _group_sums(U, ids, n_types)
    if is_torch(U):
        import torch

        m = torch.as_tensor(counts[paired], device=U.device, dtype=U.dtype)
        per_type = _mean_pairwise_cosine_of_units(sums[torch.as_tensor(paired, device=U.device)], m)
    else:
        per_type = _mean_pairwise_cosine_of_units(sums[paired], counts[paired].astype(np.float64))
    return to_output(per_type.mean(), X)
