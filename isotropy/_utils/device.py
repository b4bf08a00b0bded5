"""The one device rule: what ``device="auto"`` (or ``None``) means, and a check of an explicit device.

:func:`resolve_device` is called wherever the toolkit picks a torch device for the user (model
loading for ``measure --model`` and token extraction, the experiments' ``--device``). Torch is
imported only when a device other than ``"cpu"`` has to be checked.
"""

from __future__ import annotations

from isotropy._utils.errors import IsotropyValueError

__all__ = ["resolve_device"]


def resolve_device(device=None, *, name: str = "device", caller: str = "resolve_device") -> str:
    """``"auto"`` or ``None``: ``"cuda"`` when torch sees a GPU, else ``"cpu"``; an explicit device is checked.

    Parameters
    ----------
    device : str, torch.device or None, default=None
        ``"auto"``/``None``, ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"`` (Apple GPUs; never chosen
        by ``"auto"``).
    name, caller : str
        The argument and function (or command option, e.g. ``"--device"``) named in the message.

    Returns
    -------
    str
        ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"``.

    Raises
    ------
    IsotropyValueError
        A ``ValueError``, one line: an unknown device, CUDA asked for where torch sees none, or an index beyond the
        devices present.

    Examples
    --------
    >>> resolve_device("cpu")
    'cpu'
    """
    text = "auto" if device is None else str(device).strip()
    if text == "cpu":  # no need to import torch for that
        return "cpu"
    import torch

    if text == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    where = f"The {name!r} parameter of {caller}" if not name.startswith("-") else name
    try:
        parsed = torch.device(text)
    except (RuntimeError, TypeError, ValueError):
        parsed = None
    if parsed is None or parsed.type not in ("cpu", "cuda", "mps") or (parsed.type != "cuda" and parsed.index):
        raise IsotropyValueError(f"{where} must be auto, cpu, cuda, cuda:N or mps. Got {text!r} instead.")
    if parsed.type == "mps" and not torch.backends.mps.is_available():
        raise IsotropyValueError(f"{where} is {text!r}, but torch sees no MPS device here; use cpu or auto.")
    if parsed.type == "cuda":
        if not torch.cuda.is_available():
            raise IsotropyValueError(f"{where} is {text!r}, but torch sees no CUDA device here; use cpu or auto.")
        count = torch.cuda.device_count()
        if parsed.index is not None and parsed.index >= count:
            raise IsotropyValueError(f"{where} is {text!r}, but torch sees {count} CUDA device(s) (cuda:0 to "
                                     f"cuda:{count - 1}).")
    return str(parsed)
