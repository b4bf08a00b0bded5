"""Sentence embeddings of one hidden layer for an experiment, a bad layer said as its config key."""

from __future__ import annotations

__all__ = ["encode_layer"]


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
