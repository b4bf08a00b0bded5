"""I-STAR / CosReg as a drop-in for a Lightning module: a callback refreshing Σ_S, plus ``penalty``."""

from __future__ import annotations

from lightning.pytorch.callbacks import Callback

from isotropy.training.lightning_callback import _find_tokenizer, resolve_submodule
from isotropy.training.regularisers import HiddenStateRegulariser

__all__ = ["LightningRegulariser"]


class LightningRegulariser(HiddenStateRegulariser, Callback):
    """I-STAR / CosReg for a Lightning module: a callback that refreshes Σ_S, plus ``penalty``.

    Register it (``Trainer(callbacks=[reg])``) and add ``reg.penalty(out.hidden_states,
    batch["attention_mask"])`` to the loss in ``training_step`` (call the model with
    ``output_hidden_states=True``). Σ_S is recomputed from ``shrinkage_sample`` at the start
    of every training epoch.

    Parameters
    ----------
    method, weight, zeta, shrinkage_sample, layers, level, pooling, batch_size, max_length
        See :class:`HiddenStateRegulariser`.
    model : None, str or callable, default=None
        What to call to embed the sample: the LightningModule, its attribute of that name, or
        ``model(pl_module)`` (as :class:`LightningGeometryCallback`).
    tokenizer : transformers tokenizer, optional
        For a text sample; default ``pl_module.tokenizer`` or ``trainer.datamodule.tokenizer``.

    Examples
    --------
    >>> from isotropy.training import LightningRegulariser
    >>> LightningRegulariser("cosreg", weight=0.5).method
    'cosreg'
    """

    def __init__(self, method="istar", *, weight=1.0, zeta=0.2, shrinkage_sample=None, layers="all",
                 level="token", pooling="mean", model=None, tokenizer=None, batch_size=32, max_length=128):
        super().__init__(method, weight=weight, zeta=zeta, shrinkage_sample=shrinkage_sample, layers=layers,
                         level=level, pooling=pooling, batch_size=batch_size, max_length=max_length,
                         caller="LightningRegulariser")
        self.model = model
        self.set_tokenizer(tokenizer)

    def on_train_epoch_start(self, trainer, pl_module):
        self.set_tokenizer(_find_tokenizer(trainer, pl_module))
        self.refresh(resolve_submodule(pl_module, self.model, self.caller))
