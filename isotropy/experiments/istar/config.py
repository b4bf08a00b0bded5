"""The config schema of ``isotropy run istar``: the shared fine-tuning settings (:mod:`.._finetune.config`)."""

from __future__ import annotations

from isotropy.experiments._finetune.config import FinetuneConfig

__all__ = ["IstarConfig"]


class IstarConfig(FinetuneConfig):
    """Rudman & Eickhoff (ICLR 2024); the packaged setups are ``isotropy/configs/istar/*.yaml``.

    Every key is a fine-tuning setting shared with activation-diagrams (which names an istar setup
    as its ``fine_tune_setup``), so the schema is :class:`~isotropy.experiments._finetune.config.FinetuneConfig`.
    """
