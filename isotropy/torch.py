"""Differentiable isotropy regularisers for PyTorch: I-STAR (IsoScore*) and CosReg (mean cosine).

Sign convention (one rule for every regulariser here): each function or module returns a *penalty*
``P(H)`` that you **add** to the task loss with a weight λ::

    total = task_loss + λ · P(H)

so that **λ > 0 raises isotropy and λ < 0 lowers it**.

- I-STAR (Rudman & Eickhoff): ``P(H) = −IsoScore*(H)``, i.e. ``total = task_loss − λ·IsoScore*(H)``,
  exactly the I-STAR objective. :func:`istar_penalty` returns ``−IsoScore*(H)``;
  ``IStarLoss(weight=λ)(H)`` returns ``−λ·IsoScore*(H)``.
- CosReg: ``P(H) = mean pairwise cosine similarity of the batch``; :func:`cosine_penalty` returns it,
  ``CosRegLoss(weight=λ)(H)`` returns ``λ·mean_cos(H)``. Lower mean cosine = more isotropic.

``H`` is a batch of hidden states, a tensor of shape ``(n_samples, n_features)`` (flatten
``(batch, seq, hidden)`` to ``(batch·seq, hidden)`` first, dropping padding). Device and dtype
come from ``H``; ``H`` is never modified. This module imports torch (the rest of :mod:`isotropy`
does not).
"""

from __future__ import annotations

import math
import warnings

from isotropy._utils.install import extra_imports

with extra_imports("isotropy.torch", "torch"):  # one line naming the extra and PyTorch's command, not a traceback
    import torch
    from torch import nn

from isotropy._kernels.isoscore import as_shrinkage_tensor, check_covariance
from isotropy._utils.backend import no_autocast
from isotropy._utils.magnitude import rescaled, times_power_of_two
from isotropy._utils.validation import (
    IsotropyValueError,
    check_real,
    check_tensor_data,
    check_weight,
    check_zeta,
    first_nonfinite,
)
from isotropy.metrics.cosine import _cosine_similarity_mean
from isotropy.metrics.isoscore import _check_shrinkage_cov, _isoscore_star

__all__ = ["CosRegLoss", "IStarLoss", "cosine_penalty", "istar_penalty", "shrinkage_covariance"]


def _check_tensor(H, caller):
    if not isinstance(H, torch.Tensor):
        raise TypeError(f"The 'H' parameter of {caller} must be a torch.Tensor of shape (n_samples, n_features). "
                        f"Got {type(H).__name__} instead.")
    return check_tensor_data(H, caller=caller, name="H")


def _identity_warning(caller: str) -> str:
    """The warning of an I-STAR penalty without Σ_S (and ζ > 0): the table's and the callbacks' warning, in these terms."""
    how = ("call refresh_shrinkage_cov(sample) first" if caller == "IStarLoss" else
           "give shrinkage_cov=shrinkage_covariance(sample)")
    from isotropy._utils.warn import TRACKS_NORMS

    return (f"{caller}: without shrinkage_cov, Σ_S is the identity and {TRACKS_NORMS}, so the penalty saturates and "
            f"pushes on the norms; {how}, the covariance of a larger sample of hidden states.")


def _one_row_batch(module, H, caller: str, what: str):
    """The penalty of a training batch of one row, for the loss modules: 0, without gradient, warned of once per
    module, as the drop-in regularisers give it (an epoch of batch_size·m + 1 rows ends with a one-row batch, which
    crashed a plain training loop on its last step where the drop-ins went on); ``None`` for any other batch, refused
    or measured as before (no rows: refused, the mistake of a caller, not the end of an epoch)."""
    if H.ndim != 2 or H.shape[0] != 1:  # (no rows: refused, as the functions refuse it)
        return None
    if not getattr(module, "_warned_single", False):  # not a buffer: not in state_dict
        import warnings

        from isotropy._utils.warn import user_stacklevel

        module._warned_single = True
        warnings.warn(f"{caller}: a batch of 1 row; {what} needs at least 2, so the penalty is "
                      f"0 for that batch (an epoch of batch_size·m + 1 rows ends with such a batch; drop_last, or a batch "
                      f"size that divides the data, avoids it). Later such batches are not warned of.", UserWarning,
                      stacklevel=user_stacklevel())
    dtype = torch.float32 if H.dtype in (torch.float16, torch.bfloat16) else H.dtype
    return torch.zeros((), dtype=dtype, device=H.device).requires_grad_(H.requires_grad)


def _istar(H, *, shrinkage_cov, zeta, caller: str, warn: bool):
    """``−IsoScore*(H)`` for :func:`istar_penalty`; ``warn``: warn when Σ_S is the identity (``None``, ζ > 0)."""
    H = _check_tensor(H, caller)
    zeta = check_zeta(zeta, caller=caller)  # a 0-d tensor (a schedule's value) as a float: compared below
    value = -_isoscore_star(H, shrinkage_cov=shrinkage_cov, zeta=zeta, caller=caller, name="H")
    if warn and shrinkage_cov is None and zeta > 0:  # after the checks: a refused call does not warn first
        from isotropy._utils.warn import user_stacklevel

        # the user's line: module(H) passes through torch's Module.__call__, whose depth changes between versions
        warnings.warn(_identity_warning(caller), UserWarning, stacklevel=user_stacklevel())
    return value


def istar_penalty(H, *, shrinkage_cov, zeta=0.2):
    """I-STAR penalty ``−IsoScore*(H)``: add ``λ·istar_penalty(H, ...)`` to the task loss.

    Parameters
    ----------
    H : torch.Tensor of shape (n_samples, n_features)
        A batch of hidden states (rows are samples), float dtype, any device.
    shrinkage_cov : torch.Tensor or array-like of shape (n_features, n_features) or None
        Σ_S, the covariance of a larger stored sample of hidden states (see
        :func:`shrinkage_covariance`); ``None`` uses the identity, and warns when ``zeta > 0``
        (the value then tracks the vector norms, not isotropy). Moved to ``H``'s device/dtype.
    zeta : float in [0, 1] or 0-d tensor, default=0.2
        Shrinkage weight ζ of Σ_ζ = (1 − ζ)·Σ_H + ζ·Σ_S; a 0-d real tensor or array (a schedule's
        value) is read once as a float (one that requires grad is refused: no gradient reaches ζ).

    Returns
    -------
    penalty : torch.Tensor
        0-dim tensor, ``−IsoScore*(H)`` in [−1, 0], differentiable with respect to ``H``.
        ``total = task_loss + λ·penalty``: λ > 0 raises isotropy, λ < 0 lowers it.

    Notes
    -----
    IsoScore*(H) = ((tr Σ_ζ)²/‖Σ_ζ‖²_F − 1)/(d − 1) (see :func:`isotropy.isoscore_star`); the
    shrinkage keeps the score stable on mini-batches with fewer samples than features.

    References
    ----------
    .. [1] W. Rudman and C. Eickhoff, "Stable Anisotropic Regularization", ICLR 2024
       (arXiv:2305.19358).

    Examples
    --------
    >>> import torch
    >>> from isotropy.torch import istar_penalty
    >>> H = torch.tensor([[-1.0, 0, 0], [1.0, 0, 0]]) / 2 ** 0.5   # covariance diag(1, 0, 0)
    >>> round(float(istar_penalty(H, shrinkage_cov=torch.eye(3), zeta=0.2)), 6)
    -0.407407
    """
    return _istar(H, shrinkage_cov=shrinkage_cov, zeta=zeta, caller="istar_penalty", warn=True)


def cosine_penalty(H):
    """CosReg penalty: the mean cosine similarity over distinct pairs of the batch ``H``.

    Parameters
    ----------
    H : torch.Tensor of shape (n_samples, n_features)
        A batch of hidden states; no all-zero rows.

    Returns
    -------
    penalty : torch.Tensor
        0-dim tensor in [−1/(n−1), 1], differentiable. ``total = task_loss + λ·penalty``:
        λ > 0 pushes cosines down (more isotropic), λ < 0 up.

    Notes
    -----
    (‖Σᵢ hᵢ/‖hᵢ‖‖² − n)/(n(n − 1)), O(n·d) (see :func:`isotropy.cosine_similarity_mean`).

    References
    ----------
    .. [1] J. Gao, D. He, X. Tan, T. Qin, L. Wang and T. Liu, "Representation Degeneration
       Problem in Training Natural Language Generation Models", ICLR 2019.
    .. [2] W. Rudman and C. Eickhoff, "Stable Anisotropic Regularization", ICLR 2024.

    Examples
    --------
    >>> import torch
    >>> from isotropy.torch import cosine_penalty
    >>> float(cosine_penalty(torch.eye(4)))
    0.0
    """
    return _cosine_penalty(H, caller="cosine_penalty")


def _cosine_penalty(H, *, caller):
    """:func:`cosine_penalty`, its errors naming ``caller`` (``CosRegLoss`` for the module's forward)."""
    return _cosine_similarity_mean(_check_tensor(H, caller), caller=caller, name="H")


def shrinkage_covariance(H):
    """Sample covariance (ddof=1, no graph) of a large sample of hidden states, for Σ_S.

    Parameters
    ----------
    H : torch.Tensor of shape (n_samples, n_features), or a list/tuple of such tensors
        Hidden states; several tensors (e.g. the batches of an epoch) are concatenated.

    Returns
    -------
    cov : torch.Tensor of shape (n_features, n_features)
        On the (first) input's device and dtype (float32 for float16 and bfloat16 input, whose range the
        second moments of hidden states overflow), or float64 where that dtype cannot hold the covariance
        (float32 states beyond about 1e19 or below about 1e-15 in spread: their covariance would be inf, zero or
        subnormal); accumulated in float64 where the device allows, at unit scale (an exact power of two), so
        that its values are numpy's float64 ``np.cov`` of the same numbers at any scale.

    Raises
    ------
    IsotropyValueError
        An empty list, an entry that is not a 2-d tensor, or entries of different widths (each is named); a NaN or
        inf in ``H`` (its row and column, and the entry of a list, are named); a covariance beyond the range of
        float64 (of float32 on a device without float64), which no dtype of the device holds.
    TypeError
        Complex hidden states (their imaginary parts were dropped).

    Examples
    --------
    >>> import torch
    >>> from isotropy.torch import shrinkage_covariance
    >>> shrinkage_covariance(torch.tensor([[0.0, 0.0], [2.0, 0.0]]))
    tensor([[2., 0.],
            [0., 0.]])
    """
    return _shrinkage_covariance(H, caller="shrinkage_covariance")


@torch.no_grad()
def _shrinkage_covariance(H, *, caller):
    """:func:`shrinkage_covariance`, its errors naming ``caller`` (``IStarLoss.refresh_shrinkage_cov`` there)."""
    source = None  # the dtype of the (first) input
    if isinstance(H, (list, tuple)):
        if not H:
            raise IsotropyValueError(f"The 'H' parameter of {caller} must be a tensor or a non-empty list "
                                     f"of tensors. Got an empty {type(H).__name__} instead.")
        # each entry is checked before torch.cat, whose own errors named neither the argument nor the entry ("Sizes
        # of tensors must match except in dimension 0"), and which joined 1-d entries into one long vector
        for i, h in enumerate(H):
            if not isinstance(h, torch.Tensor) or h.ndim != 2:
                error = TypeError if not isinstance(h, torch.Tensor) else IsotropyValueError
                got = f"shape {tuple(h.shape)}" if isinstance(h, torch.Tensor) else type(h).__name__
                raise error(f"The 'H' parameter of {caller} must be a list of torch.Tensors of shape "
                            f"(n_samples, n_features). Got {got} at H[{i}] instead.")
        tensors = [check_tensor_data(h, caller=caller, name=f"H[{i}]") for i, h in enumerate(H)]
        for i, h in enumerate(tensors):  # cast to float64, complex states lost their imaginary parts silently
            check_real(h, caller=caller, name=f"H[{i}]", what="tensor")
        other = next((i for i, h in enumerate(tensors) if h.shape[1] != tensors[0].shape[1]), None)
        if other is not None:
            raise IsotropyValueError(
                f"The 'H' parameter of {caller} must be a list of tensors with the same number of "
                f"features (columns). Got {tensors[0].shape[1]} features in H[0] and {tensors[other].shape[1]} in "
                f"H[{other}] (shape {tuple(tensors[other].shape)}) instead.")
        for i, h in enumerate(tensors):
            _refuse_nonfinite(h, caller, f" of H[{i}]")
        source = tensors[0].dtype  # the result's, as documented (not the promoted dtype of float32 + float64)
        H = torch.cat([h.detach().to(tensors[0].device) for h in tensors])
    H = check_real(_check_tensor(H, caller), caller=caller, name="H", what="tensor").detach()
    joined = "" if source is None else " (the list's entries joined)"
    source = H.dtype if source is None else source
    if H.ndim != 2 or H.shape[0] < 2:
        raise IsotropyValueError(f"The 'H' parameter of {caller} must have shape (n_samples, n_features) with "
                         f"n_samples >= 2. Got shape {tuple(H.shape)}{joined} instead.")
    if not joined:  # a list's entries were checked one by one, each named
        _refuse_nonfinite(H, caller)
    work = torch.float64 if H.device.type != "mps" else torch.float32
    with no_autocast(H):  # float32 on MPS: autocast would take the product to half precision
        # at unit scale (H = 2^e·Ĥ, exact): float64 states beyond ~1e154 overflowed the product to inf
        Hc, exponent = rescaled(H.to(work), caller=caller, name="H")
        Hc = Hc - Hc.mean(dim=0, keepdim=True)
        cov = (Hc.T @ Hc) / (H.shape[0] - 1)  # in units of 4^e
    top = float(cov.abs().max())  # the largest variance (a diagonal entry), in units of 4^e
    power = math.frexp(top)[1] + 2 * exponent if top > 0.0 else 0  # the covariance's largest entry is < 2^power
    # half precision gives float32, as the metrics compute it: a float16 covariance of states with a spread above
    # ~256 overflowed to inf, and I-STAR then refused a 'shrinkage_cov' the user never passed
    dtype = source if source in (torch.float32, torch.float64) else (
        torch.float32 if source.is_floating_point else torch.get_default_dtype())
    if top > 0.0 and not _holds(dtype, power):
        # float32 states at 1e20 have a covariance of 1e40 (inf in float32), at 1e-30 one of 1e-60 (0): kept in
        # float64, which holds it, rather than refused (isoscore_star takes such a Σ_S with float32 states)
        dtype = work
        if not _holds(dtype, power):
            name = str(dtype).replace("torch.", "")
            digits = math.log10(top) + 2 * exponent * math.log10(2)  # of the largest variance, which float64 may not hold
            raise IsotropyValueError(
                f"The 'H' parameter of {caller} must have a covariance that {name} holds. Got a largest variance of "
                f"about {_power_of_ten(digits)} (a spread of about {_power_of_ten(digits / 2)}) instead, beyond "
                f"{name}'s range; rescale the states (IsoScore* of states and a Σ_S rescaled together does not "
                f"change).")
    return times_power_of_two(cov, 2 * exponent).to(dtype)


def _power_of_ten(digits: float) -> str:
    """``10**digits`` written as ``2.6e+361``, for a value beyond float64's range."""
    whole = math.floor(digits)
    return f"{10 ** (digits - whole):.2g}e{whole:+d}"


def _holds(dtype, power: int) -> bool:
    """Whether ``dtype`` holds a covariance whose largest entry is below ``2**power`` (and at least half that):
    not inf, and its entries down to the dtype's precision relative to the largest still normal numbers."""
    info = torch.finfo(dtype)
    return math.frexp(info.tiny / info.eps)[1] <= power - 1 and power <= math.frexp(info.max)[1] - 1


def _holding_dtype(cov, dtype):
    """``dtype`` where it holds the values of the covariance ``cov`` (see :func:`_holds`), else ``cov``'s own."""
    if dtype == cov.dtype or not dtype.is_floating_point:
        return dtype
    top = float(cov.detach().abs().max()) if cov.numel() else 0.0
    return dtype if top == 0.0 or _holds(dtype, math.frexp(top)[1]) else cov.dtype


def _refuse_nonfinite(H, caller, where=""):
    """Refuse a NaN or inf in the 2-d ``H`` of shrinkage_covariance (named ``caller`` in the message), naming its row
    and column (``where``: which entry of a list): its covariance was NaN, and istar_penalty then refused a
    'shrinkage_cov' the user never saw."""
    found = first_nonfinite(H)
    if found is not None:
        raise IsotropyValueError(f"The 'H' parameter of {caller} must contain only finite values. Got "
                                 f"{found.at()}{where} instead.")


class IStarLoss(nn.Module):
    """I-STAR regulariser as a module: ``forward(H)`` returns ``−weight·IsoScore*(H)``.

    Add it to the task loss, ``loss = task_loss + istar(H)``: ``weight`` (λ) > 0 raises isotropy,
    λ < 0 lowers it (Rudman & Eickhoff report better fine-tuning with λ < 0).

    Parameters
    ----------
    zeta : float in [0, 1] or 0-d torch.Tensor, default=0.2
        Shrinkage weight ζ: a real number, or a 0-d real tensor or array read once as a float, as
        ``weight`` (refused as it is, and outside [0, 1]).
    weight : float or 0-d torch.Tensor, default=1.0
        λ, the signed regularisation strength: a real number (numpy's too), or a 0-d real tensor such
        as a λ schedule's value (``torch.linspace(0.0, -1.0, steps)[step]``), read once as a float,
        so that the penalty keeps the dtype of ``H``. A tensor that is not 0-d, of bool or complex
        dtype, not finite, or that requires grad (no gradient would reach it) is refused.
    shrinkage_cov : torch.Tensor of shape (n_features, n_features) or None, default=None
        Initial Σ_S; ``None`` uses the identity until :meth:`refresh_shrinkage_cov` is called (the
        first ``forward`` without it warns once when ``zeta > 0``: the value then tracks the
        vector norms, not isotropy).

    Attributes
    ----------
    shrinkage_cov : torch.Tensor or None
        Σ_S, a buffer: saved in ``state_dict`` and moved by ``.to(device)``.

    Examples
    --------
    >>> import torch
    >>> from isotropy.torch import IStarLoss
    >>> istar = IStarLoss(zeta=0.2, weight=-1.0)       # λ < 0: push toward anisotropy
    >>> _ = istar.refresh_shrinkage_cov(torch.randn(512, 8, generator=torch.Generator().manual_seed(0)))
    >>> H = torch.randn(16, 8, requires_grad=True)
    >>> penalty = istar(H)           # = +1 · IsoScore*(H) here, since weight = -1
    >>> penalty.backward()
    >>> H.grad.shape
    torch.Size([16, 8])
    """

    def __init__(self, *, zeta=0.2, weight=1.0, shrinkage_cov=None):
        super().__init__()
        # ζ as λ: a number, or a 0-d real tensor or array (a schedule's value), read once as a float, in [0, 1]
        self.zeta = check_zeta(zeta, caller="IStarLoss")
        self.weight = check_weight(weight, caller="IStarLoss")
        if shrinkage_cov is not None:
            shrinkage_cov = self._checked(shrinkage_cov, caller="IStarLoss").clone()
        self.register_buffer("shrinkage_cov", shrinkage_cov)

    def _checked(self, shrinkage_cov, *, caller: str):
        """Σ_S checked as the constructor takes it (a real, finite, symmetric square matrix; a covariance, not the zero
        matrix, when ``zeta > 0``), as a detached floating tensor (not copied where it need not be)."""
        check_tensor_data(shrinkage_cov, caller=caller, name="shrinkage_cov")
        check_real(shrinkage_cov, caller=caller, name="shrinkage_cov")  # .to() dropped imaginary parts
        shrinkage_cov = as_shrinkage_tensor(shrinkage_cov, caller=caller).detach()
        if not shrinkage_cov.is_floating_point():
            shrinkage_cov = shrinkage_cov.to(torch.get_default_dtype())
        shrinkage_cov = _check_shrinkage_cov(shrinkage_cov, None, like=shrinkage_cov, caller=caller)
        if self.zeta > 0:  # given once: checked once (forward, every step, checks its trace alone)
            check_covariance(shrinkage_cov, caller=caller)
        return shrinkage_cov

    @torch.no_grad()
    def refresh_shrinkage_cov(self, H):
        """Set Σ_S to the covariance of ``H`` (a large sample, or a list of batches); returns ``self``.

        Written into the current Σ_S (its device and dtype) where that dtype holds the new values; a covariance it
        cannot hold (float64, of float32 states beyond about 1e19) replaces it, on its device.
        """
        caller = "IStarLoss.refresh_shrinkage_cov"
        cov = _shrinkage_covariance(H, caller=caller)
        if self.zeta > 0 and not bool(cov.any()):  # (exactly zero for rows of one point) forward refused it, later,
            # naming a 'shrinkage_cov' parameter never passed (a user trial)
            raise IsotropyValueError(f"The 'H' parameter of {caller} must have rows that vary: Σ_S is their "
                                     f"covariance. Got rows that are all the same point (the zero matrix) instead.")
        current = self.shrinkage_cov
        if current is not None and current.shape == cov.shape:
            dtype = _holding_dtype(cov, current.dtype)
            if dtype == current.dtype:
                current.copy_(cov.to(current))
                return self
            cov = cov.to(device=current.device, dtype=dtype)  # copied into float32, 1e40 became inf silently
        self.shrinkage_cov = cov
        return self

    def _apply(self, fn, recurse=True):
        # model.half() / .to(torch.bfloat16) on a model owning the loss cast Σ_S too: a covariance of states of
        # magnitude 300 (9e4 per entry, squared in IsoScore*'s moments) overflowed float16 and forward refused it;
        # shrinkage_covariance keeps float32 for half input for that reason, so a half cast keeps float32 here too
        # (and a Σ_S that float32 cannot hold, float64 from shrinkage_covariance, keeps float64 under .float())
        S = self.shrinkage_cov
        module = super()._apply(fn, recurse)
        if S is not None and self.shrinkage_cov.dtype != S.dtype and self.shrinkage_cov.is_floating_point():
            cast = self.shrinkage_cov.dtype
            dtype = _holding_dtype(S, torch.float32 if cast in (torch.float16, torch.bfloat16) else cast)
            if dtype != cast:
                self.shrinkage_cov = S.to(device=self.shrinkage_cov.device, dtype=dtype)
        return module

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        key = prefix + "shrinkage_cov"
        if state_dict.get(key) is not None:  # checked as the constructor checks it, before anything is loaded (any
            # matrix was taken: a non-square one was then blamed on the next batch 'H')
            self._checked(state_dict[key], caller="IStarLoss.load_state_dict")
        # a fresh module holds no Σ_S yet: take its shape from the checkpoint
        if self.shrinkage_cov is None and state_dict.get(key) is not None:
            self.shrinkage_cov = torch.empty_like(state_dict[key])
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def forward(self, H):
        """Return ``−weight·IsoScore*(H)`` (0-dim tensor on ``H``'s device and dtype; float32 for half ``H``).

        A batch of one row (the last of an epoch of ``batch_size·m + 1`` rows) has no IsoScore*: its penalty is 0,
        without gradient, with one warning per module, as the drop-in regularisers give it; except at ``zeta=1``
        with a Σ_S, where IsoScore* is IsoScore(Σ_S) whatever the row. :func:`istar_penalty` refuses such a batch.
        """
        H = _check_tensor(H, "IStarLoss")
        if self.shrinkage_cov is not None and H.ndim == 2 and H.shape[1] != self.shrinkage_cov.shape[0]:
            # the module's Σ_S fixes the width: the batch is what is wrong here, not the stored matrix
            width = self.shrinkage_cov.shape[0]
            raise IsotropyValueError(
                f"The 'H' parameter of IStarLoss must have {width} features (columns), the width of its "
                f"shrinkage_cov. Got shape {tuple(H.shape)} instead; call refresh_shrinkage_cov on hidden states "
                f"of this width, or build a new IStarLoss.")
        # one state: no IsoScore*, except at ζ = 1 with a Σ_S (IsoScore(Σ_S) whatever the state: computed below)
        if not (self.zeta == 1.0 and self.shrinkage_cov is not None):
            zero = _one_row_batch(self, H, "IStarLoss", "IsoScore*")
            if zero is not None:
                return zero
        warn = not getattr(self, "_warned_identity", False)  # once per module (not a buffer: not in state_dict)
        value = _istar(H, shrinkage_cov=self.shrinkage_cov, zeta=self.zeta, caller="IStarLoss", warn=warn)
        if warn and self.shrinkage_cov is None and self.zeta > 0:
            self._warned_identity = True
        return self.weight * value

    def extra_repr(self):
        shape = None if self.shrinkage_cov is None else tuple(self.shrinkage_cov.shape)
        return f"zeta={self.zeta}, weight={self.weight}, shrinkage_cov={shape or 'identity'}"


class CosRegLoss(nn.Module):
    """CosReg regulariser: ``forward(H)`` returns ``weight·mean_cos(H)`` (add it to the task loss).

    ``weight`` (λ) > 0 lowers the mean cosine similarity of the batch (raises isotropy), λ < 0
    raises it. See :func:`cosine_penalty`.

    Parameters
    ----------
    weight : float or 0-d torch.Tensor, default=1.0
        λ: a real number, or a 0-d real tensor (a λ schedule's value) read once as a float; refused
        as by :class:`IStarLoss`.

    Examples
    --------
    >>> import torch
    >>> from isotropy.torch import CosRegLoss
    >>> round(float(CosRegLoss(weight=0.5)(torch.tensor([[1.0, 1.0], [2.0, 2.0]]))), 6)
    0.5
    """

    def __init__(self, *, weight=1.0):
        super().__init__()
        self.weight = check_weight(weight, caller="CosRegLoss")

    def forward(self, H):
        """Return ``weight·mean_cos(H)`` (0-dim tensor on ``H``'s device and dtype; float32 for half ``H``); 0, with one
        warning, for a batch of one row (no pair: see :class:`IStarLoss`)."""
        zero = _one_row_batch(self, _check_tensor(H, "CosRegLoss"), "CosRegLoss", "the mean cosine")
        return zero if zero is not None else self.weight * _cosine_penalty(H, caller="CosRegLoss")

    def extra_repr(self):
        return f"weight={self.weight}"
