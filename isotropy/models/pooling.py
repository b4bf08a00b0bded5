"""Sentence vectors from token states: attention-masked mean, last token, or first token."""

from __future__ import annotations

from isotropy._utils.errors import IsotropyValueError

__all__ = ["POOLINGS", "check_attention_mask", "check_pooling", "pool_hidden_states"]

POOLINGS = ("mean", "last", "first")
_RENAMED = {"cls": "first"}  # the training probe's name before 0.2: refused, with the new name suggested


def check_pooling(pooling: str, config=None, *, caller: str = "pool_hidden_states",
                  instead: tuple[str, ...] = ("mean", "last")) -> str:
    """Validate a pooling name; refuse first-token pooling of a decoder.

    A causal decoder's first token attends only to itself, so its state is identical for every
    input: a sentence vector taken there would carry no information about the sentence; the
    refusal advises the poolings of ``instead`` (those the caller takes). An unknown name
    (``"cls"``, ``"avg"``) is refused in one line with the closest name suggested (``"first"``,
    ``"mean"``).
    """
    name = pooling
    if name not in POOLINGS:
        from isotropy.metrics.table import suggest_name

        raise IsotropyValueError(f"The 'pooling' parameter of {caller} must be one of {list(POOLINGS)}. "
                                 f"Got {pooling!r} instead.{suggest_name(pooling, POOLINGS, _RENAMED)}")
    if name == "first" and config is not None:
        from isotropy.models.loading import is_decoder

        if is_decoder(config):
            raise IsotropyValueError(f"The 'pooling' parameter of {caller} cannot be {pooling!r} for the causal "
                                     f"decoder {getattr(config, 'model_type', '?')!r}: its first token sees only "
                                     f"itself, so every sentence would get the same vector. Use "
                                     f"{' or '.join(repr(name) for name in instead)}.")
    return name


def pool_hidden_states(hidden, attention_mask, *, pooling: str = "mean"):
    """Pool token states of shape ``(batch, seq, d)`` into sentence vectors of shape ``(batch, d)``.

    Parameters
    ----------
    hidden : torch.Tensor of shape (batch, seq, d)
    attention_mask : torch.Tensor or array-like of shape (batch, seq)
        1 for real tokens, 0 for padding (padding may sit on either side); every row needs at least
        one real token. A CPU mask is checked (only 0s and 1s, no row of zeros: refused, naming the
        row); a mask on an accelerator is not read back (no sync per batch), and a row of zeros
        there pools to NaN (see :func:`check_attention_mask`).
    pooling : {"mean", "last", "first"}, default="mean"
        ``"mean"``: average of the real tokens (special tokens such as ``<bos>`` included, as
        sentence-transformers' mean pooling); ``"last"``: the last real token (for a causal
        decoder, the one that has seen the whole sentence); ``"first"``: the first real token (an
        encoder's [CLS]).

    Returns
    -------
    torch.Tensor of shape (batch, d)
        In ``hidden``'s dtype; float32 for ``"mean"`` of float16 or bfloat16 states (averaged in float32, whose
        range holds the sum over the tokens).

    Notes
    -----
    Mean pooling computes :math:`\\bar h = \\sum_t m_t h_t / \\sum_t m_t` with the attention mask
    :math:`m`.

    Examples
    --------
    >>> import torch
    >>> h = torch.arange(12.).reshape(1, 4, 3)
    >>> m = torch.tensor([[1, 1, 1, 0]])
    >>> pool_hidden_states(h, m, pooling="mean").tolist(), pool_hidden_states(h, m, pooling="last").tolist()
    ([[3.0, 4.0, 5.0]], [[6.0, 7.0, 8.0]])
    """
    pooling = check_pooling(pooling)
    mask = check_attention_mask(hidden, attention_mask, caller="pool_hidden_states")
    return _pool(hidden, mask.to(hidden.device), pooling)


def check_attention_mask(hidden, attention_mask, *, caller: str = "pool_hidden_states", name: str = "hidden",
                         empty_row: str = "that row has no sentence vector"):
    """Validate token states ``(batch, seq, d)`` and their mask ``(batch, seq)``; return the mask as a tensor.

    ``name``: the states' argument in the caller's words (``hidden_states`` for the regularisers);
    ``empty_row``: what a row of zeros lacks there (a sentence vector; at the token level, a token).

    The shapes are always checked. The mask's values (0 or 1, at least one 1 per row) are read back
    only where that costs nothing: a mask on the CPU (a tokenizer's). A row without a real token has
    no sentence vector (its mean is 0/0; "last"/"first" would pick a padding state), so it is refused,
    row named, as texts that tokenise to nothing are (``batching.refuse_empty_rows``). A mask already
    on an accelerator (a training batch) is not read back: that would stall the step until the device
    catches up; a row without a real token then pools to NaN (:func:`_pool`), which every metric
    refuses by row, and is never silently a vector.
    """
    import torch

    if not isinstance(hidden, torch.Tensor) or hidden.ndim != 3:
        got = f"shape {tuple(hidden.shape)}" if isinstance(hidden, torch.Tensor) else type(hidden).__name__
        raise IsotropyValueError(f"The '{name}' parameter of {caller} must be a tensor of shape (batch, seq, d). "
                                 f"Got {got} instead.")
    expected = f"{tuple(hidden.shape[:2])} (batch, seq of '{name}')"
    try:
        mask = attention_mask if isinstance(attention_mask, torch.Tensor) else torch.as_tensor(attention_mask)
    except (TypeError, ValueError, RuntimeError):
        raise IsotropyValueError(f"The 'attention_mask' parameter of {caller} must be a tensor or nested sequence of "
                                 f"0s and 1s of shape {expected}. Got {type(attention_mask).__name__} that is not "
                                 f"one (ragged rows, or values that are not numbers) instead.") from None
    if tuple(mask.shape) != tuple(hidden.shape[:2]):
        raise IsotropyValueError(f"The 'attention_mask' parameter of {caller} must have shape {expected}. "
                                 f"Got shape {tuple(mask.shape)} instead.")
    if mask.device.type != "cpu" or mask.numel() == 0:
        return mask
    bad = ~((mask == 0) | (mask == 1))
    if bool(bad.any()):
        row, col = (int(i) for i in bad.nonzero()[0])
        raise IsotropyValueError(f"The 'attention_mask' parameter of {caller} must hold only 0s and 1s. Got "
                                 f"{mask[row, col].item()!r} at row {row}, position {col} instead.")
    empty = (mask == 0).all(1)
    if bool(empty.any()):
        row = int(empty.nonzero()[0, 0])
        raise IsotropyValueError(f"The 'attention_mask' parameter of {caller} has no real token in row {row} "
                                 f"(all zeros): {empty_row}. Expected at least one 1 per row.")
    return mask


def _pool(hidden, mask, pooling: str):
    """The pooling arithmetic of :func:`pool_hidden_states`, on a checked mask already on ``hidden``'s device."""
    import torch

    if pooling == "mean":
        # half-precision states are averaged in float32, the metrics' arithmetic for half input: a float16 sum of 100
        # tokens of GPT-2's outlier size (~1000) overflowed to inf (and the metrics then refused the vector), and a
        # bfloat16 mean was rounded to 3 significant digits, 1e-3 off the mean of the very states the model gave
        work = torch.float32 if hidden.dtype in (torch.float16, torch.bfloat16) else hidden.dtype
        weights = mask.unsqueeze(-1).to(work)
        return (hidden.to(work) * weights).sum(1) / weights.sum(1)
    positions = torch.arange(mask.shape[1], device=hidden.device).expand_as(mask)
    real = mask.bool()
    if pooling == "last":
        index = torch.where(real, positions, torch.full_like(positions, -1)).amax(1).clamp_min(0)
    else:
        index = torch.where(real, positions, torch.full_like(positions, mask.shape[1])).amin(1)
        index = index.clamp_max(mask.shape[1] - 1)
    picked = hidden[torch.arange(hidden.shape[0], device=hidden.device), index]
    # a row without a real token (only possible for an unchecked accelerator mask) has no vector: NaN, as mean's 0/0
    return torch.where(real.any(1, keepdim=True), picked, picked.new_tensor(float("nan")))
