"""The ``stacklevel`` that makes a warning name the user's line, whatever path led to it."""

from __future__ import annotations

import os
import sys

__all__ = ["user_stacklevel"]

# the packages whose frames lie between the user's call and a metric's warning: isotropy's own wrappers
# (without_autocast), torch's Module.__call__, torchmetrics' wrapped compute and forward, and the training frameworks
# that call the callbacks and the regularisers' losses (a warning from HFGeometryCallback named a line of
# transformers/trainer_callback.py; it now names the user's trainer.train() or trainer.fit() line). A user's own
# function between them (a compute_loss of their own, a hook) is outside these packages: the walk stops there.
_LIBRARIES = ("isotropy", "torch", "torchmetrics", "transformers", "accelerate", "lightning", "pytorch_lightning")


def user_stacklevel(*, libraries: tuple[str, ...] = _LIBRARIES) -> int:
    """``stacklevel`` for a ``warnings.warn`` in the calling function: the first frame outside the packages
    ``libraries`` (default isotropy, torch, torchmetrics and the training frameworks that call the callbacks:
    transformers, accelerate, lightning; those not imported are not looked for).

    A fixed ``stacklevel`` fits one path only: ``rogue_dimension_share(X)`` passes through the autocast wrapper, and
    ``RogueDimensionShare().compute()`` through torchmetrics' wrapper and the metric's own frames; with 3 its warning
    named a line of isotropy itself (``isotropy/_utils/backend.py``), which the user can neither read nor filter by.
    The one walk of the package: the transforms' (isotropy and scikit-learn, :func:`isotropy.transforms._base.
    warn_at_caller`) and the torch losses' (:func:`isotropy.torch._istar`) are this one. A package is its
    folder with the separator after it: ``.../torch`` alone also held ``.../torchvision`` and a user's
    ``isotropy_demo.py`` beside a source checkout.
    """
    roots = tuple(os.path.dirname(os.path.abspath(module.__file__)) + os.sep
                  for module in (sys.modules.get(name) for name in libraries)
                  if module is not None and getattr(module, "__file__", None))
    frame, level = sys._getframe(2), 2  # level 1 is the function that warns, which called this
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(roots):
        frame, level = frame.f_back, level + 1
    return level
