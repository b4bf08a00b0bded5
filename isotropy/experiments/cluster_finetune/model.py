"""A sentence(-pair) classifier whose pooled vector can pass through an in-batch transform before the head."""

from __future__ import annotations

import functools

from torch import nn

from isotropy.experiments._finetune.model import pool

__all__ = ["PairClassifier", "PartitionIsotropyMetric"]


class PairClassifier(nn.Module):
    """Encoder → pooled vector ([CLS] or masked mean) → optional in-batch transform → dropout → linear head.

    Parameters
    ----------
    encoder : transformers.PreTrainedModel
        Called with ``input_ids``, ``attention_mask`` (and ``token_type_ids``); returns hidden states.
    n_classes : int
    pooling : {"first", "mean"}, default="first"
    transform : torch.nn.Module, optional
        Maps the batch of pooled vectors ``(batch, d)`` to ``(batch, d)`` (e.g.
        :class:`isotropy.training.InBatchClusterIsotropy`), in training and, with
        ``transform_at_eval``, in evaluation, batch by batch.
    transform_at_eval : bool, default=True
    dropout : float, default=0.1

    Notes
    -----
    ``forward`` follows the Hugging Face conventions the ``Trainer`` and the geometry callback rely
    on: ``labels`` gives a cross-entropy ``loss``; ``output_hidden_states=True`` returns the encoder's
    hidden states.
    """

    def __init__(self, encoder, n_classes: int, *, pooling: str = "first", transform=None, transform_at_eval=True,
                 dropout: float = 0.1):
        super().__init__()
        if pooling not in ("first", "mean"):
            raise ValueError(f"The 'pooling' parameter of PairClassifier must be 'first' or 'mean'. "
                             f"Got {pooling!r} instead.")
        if pooling == "first":  # a causal decoder's first token is the same for every input: refused there
            from isotropy.models.pooling import check_pooling

            check_pooling(pooling, encoder.config, caller="cluster-finetune", instead=("mean",))
        self.encoder = encoder
        self.pooling = pooling
        self.transform = transform
        self.transform_at_eval = bool(transform_at_eval)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(encoder.config.hidden_size, n_classes)

    def pooled(self, input_ids, attention_mask, token_type_ids=None, output_hidden_states=False):
        """``(pooled before the transform, classifier input, encoder output)``."""
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            inputs["token_type_ids"] = token_type_ids
        out = self.encoder(**inputs, output_hidden_states=output_hidden_states, return_dict=True)
        hidden = out.last_hidden_state
        raw = pool(hidden, attention_mask, self.pooling)
        use = self.transform is not None and (self.training or self.transform_at_eval)
        return raw, (self.transform(raw) if use else raw), out

    def forward(self, input_ids, attention_mask, token_type_ids=None, labels=None, output_hidden_states=False,
                return_dict=True):
        from transformers.modeling_outputs import SequenceClassifierOutput

        _, features, out = self.pooled(input_ids, attention_mask, token_type_ids, output_hidden_states)
        logits = self.head(self.dropout(features))
        loss = None if labels is None else nn.functional.cross_entropy(logits, labels)
        return SequenceClassifierOutput(loss=loss, logits=logits,
                                        hidden_states=out.hidden_states if output_hidden_states else None)


@functools.cache
def _partition_isotropy_metric_class():
    from torchmetrics import Metric
    from torchmetrics.utilities import dim_zero_cat

    class PartitionIsotropyMetric(Metric):
        """I(W) of all rows seen (rows kept: I(W) is not a function of sums); for the geometry callback."""

        full_state_update = False
        higher_is_better = True

        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.add_state("rows", default=[], dist_reduce_fx="cat")

        def update(self, X):
            self.rows.append(X.detach().double())

        def compute(self):
            from isotropy import partition_isotropy

            return partition_isotropy(dim_zero_cat(self.rows))

    return PartitionIsotropyMetric


def PartitionIsotropyMetric(n_features=None):
    """A fresh I(W) torchmetrics metric (the factory signature the geometry callback expects)."""
    return _partition_isotropy_metric_class()()
