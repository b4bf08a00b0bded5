"""Sentence embeddings of one hidden layer for an experiment, a bad layer said as its config key; and the check of a
``max_length`` setting against the model's positions, said the same way."""

from __future__ import annotations

__all__ = ["check_max_length", "encode_layer"]


def check_max_length(max_length: int, config, *, model: str, experiment: str, key: str = "max_length",
                     given: bool = True) -> None:
    """Refuse a ``max_length`` setting past the positions of ``model``, once its config is known and before any work.

    ``config`` is the model's loaded config, or the mapping of its ``config.json`` read without loading it
    (:func:`isotropy.models.resolve.peek_config`); the limit is its table of learned positions
    (:func:`isotropy.models.loading.longest_input` without the tokenizer: ``max_position_embeddings`` or
    ``n_positions``, less RoBERTa's padding offset). Where it is unknown (``None``, a config without positions:
    T5, ALiBi) nothing is checked and the texts are cut where they are tokenised, as before. Only there was a
    larger value cut, without a word, while ``config.yaml`` recorded it: ``--set max_length=512`` on a model of 64
    positions trained on 64 tokens.

    Only a value the user gave (``given``: :meth:`~isotropy.experiments._config.ExperimentConfig.was_given`) is
    refused: a packaged default (128) on a model of fewer positions is cut where the texts are tokenised, as before
    (the tiny test models have 64), rather than refusing a run whose only choice was the model.
    """
    if config is None or not given:
        return
    from types import SimpleNamespace

    from isotropy.models.loading import longest_input

    if isinstance(config, dict):
        config = SimpleNamespace(**{"pad_token_id": None, "model_type": None, **config})
    limit = longest_input(config)
    if limit is None or int(max_length) <= limit:
        return
    from isotropy.experiments._config import ConfigError

    name = "max_position_embeddings" if getattr(config, "max_position_embeddings", None) else "n_positions"
    table = getattr(config, name)
    offset = "" if table == limit else f", less {table - limit} for its padding offset"
    raise ConfigError(f"The '{key}' setting of {experiment} must be at most {limit}, the most tokens {model!r} takes "
                      f"({name}: {table} in its config{offset}). Got {max_length} instead.")


def encode_layer(texts, *, key: str, experiment: str, **kwargs):
    """:func:`isotropy.models.encoders.encode_mean_pooled` of ``texts``; a layer the model lacks names the config key.

    The range depends on the model, so it is checked where the model is first run; the library's message named its own
    function (``The 'layer' parameter of encode_mean_pooled``), not the key the user set (``embeddings.layer``).
    """
    from isotropy.experiments._config import ConfigError
    from isotropy.models.encoders import LayerOutOfRange, encode_mean_pooled

    try:
        return encode_mean_pooled(texts, **kwargs)
    except LayerOutOfRange as exc:
        raise ConfigError(f"The '{key}' setting of {experiment} must be a hidden-state index in [{exc.low}, "
                          f"{exc.high}] for {exc.model!r} (0 = the embeddings, -1 = the last layer). Got {exc.layer} "
                          f"instead.") from None
