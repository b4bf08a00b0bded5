"""Sentence embeddings of one hidden layer for an experiment, a bad layer said as its config key."""

from __future__ import annotations

import re

__all__ = ["encode_layer"]

# encode_mean_pooled's refusal of a layer past the model's hidden states (known only once the model has run)
_LAYER_RANGE = re.compile(r"^The 'layer' parameter of encode_mean_pooled must be in (\[-?\d+, -?\d+\]) for (.+)\. "
                          r"Got (-?\d+) instead\.$")


def encode_layer(texts, *, key: str, experiment: str, **kwargs):
    """:func:`isotropy.models.encoders.encode_mean_pooled` of ``texts``; a layer the model lacks names the config key.

    The range depends on the model, so it is checked where the model is first run; the library's message named its own
    function (``The 'layer' parameter of encode_mean_pooled``), not the key the user set (``embeddings.layer``).
    """
    from isotropy.experiments._config import ConfigError
    from isotropy.models.encoders import encode_mean_pooled

    try:
        return encode_mean_pooled(texts, **kwargs)
    except ValueError as exc:
        found = _LAYER_RANGE.match(" ".join(str(exc).split()))
        if found is None:
            raise
        raise ConfigError(f"The '{key}' setting of {experiment} must be a hidden-state index in {found[1]} for "
                          f"{found[2]} (0 = the embeddings, -1 = the last layer). Got {found[3]} instead.") from None
