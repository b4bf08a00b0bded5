"""The ``stacklevel`` that makes a warning name the user's line, whatever path led to it."""

from __future__ import annotations

import os
import sys
import warnings

__all__ = ["TRACKS_NORMS", "IdentityShrinkageWarning", "SpanBoundWarning", "identity_shrinkage_message", "user_stacklevel",
           "warn_identity_shrinkage"]

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


#: What IsoScore* measures when Σ_S is the identity, said once for every warning of it (the table's, the callbacks',
#: the torch losses' and the torchmetrics class's). In words: its values depend on the model (all-MiniLM-L6-v2 on
#: rt-polarity sentences reads near 1 by layer where IsoScore reads far lower; `isotropy measure --model
#: all-MiniLM-L6-v2 --texts FILE --metrics isoscore,isoscore_star` shows both), so no range is quoted.
TRACKS_NORMS = ("the value tracks the vector norms, not isotropy (near 1 on contextual embeddings whose isoscore is "
                "far lower)")


class IdentityShrinkageWarning(UserWarning):
    """IsoScore* computed without ``shrinkage_cov``: Σ_S is the identity, and the value tracks the vector norms rather
    than isotropy. Its own category, so that a caller that says it in its own terms (``isotropy measure``, the
    training callbacks, :class:`isotropy.training.IsoScoreStar`) can leave this one out."""


def identity_shrinkage_message(caller: str) -> str:
    """What ``caller`` says when it runs IsoScore* without ``shrinkage_cov`` (the functions, the accumulator and
    :class:`isotropy.training.IsoScoreStar` alike)."""
    return (f"{caller}: without shrinkage_cov, Σ_S is the identity and {TRACKS_NORMS}; give shrinkage_cov=, the "
            "(n_features, n_features) covariance matrix of a larger sample (isotropy.torch.shrinkage_covariance(sample) "
            "or np.cov(sample, rowvar=False)).")


def warn_identity_shrinkage(caller: str, stacklevel: int) -> None:
    """Warn that ``caller`` ran IsoScore* with Σ_S = I (:class:`IdentityShrinkageWarning`)."""
    warnings.warn(identity_shrinkage_message(caller), IdentityShrinkageWarning, stacklevel=stacklevel + 1)


class SpanBoundWarning(UserWarning):
    """IsoScore or the participation ratio of ``n_samples <= n_features`` rows: the rows span at most ``n − 1``
    dimensions, which caps the value (:func:`isotropy.metrics.table.span_bound_warning`). Its own category, so that a
    caller that says it in its own terms (``isotropy measure``, the training probe, the experiments, whose small
    batches are their subject) can leave this one out."""
