"""Where models come from and how their token states become vectors.

- :func:`resolve_model` turns a model name into a directory that transformers and
  sentence-transformers can load: the packaged ``all-MiniLM-L6-v2``, the packaged
  ``gemma-3-270m`` (converted once from its GGUF and cached), any ``PATH.gguf`` (likewise), a local
  model directory, or a hub name while online.
- :func:`convert_gguf` is that conversion: GGUF -> safetensors directory under the cache, keyed by
  the GGUF's sha256.
- :func:`load_transformer` loads a tokenizer and a base model for hidden-state extraction.
- :func:`input_word_vectors` reads static word vectors from a model's input embedding matrix.
- :func:`select_layers` turns ``"all"``, ``"last"``, ``"0,6,12"`` or indices into hidden-state indices: the one
  layer selector of ``measure --model``, token extraction and the training callbacks.
- :mod:`isotropy.models.batching` tokenises texts once and runs them in batches of similar token
  counts, each padded to its own longest row (``measure --model`` and the training probe).
- :func:`pool_hidden_states` pools token states into sentence vectors (masked mean, last or first
  token), refusing first-token pooling for a causal decoder.

Heavy libraries (torch, transformers, gguf) are imported only inside the functions.
"""

from isotropy.models.gguf import PACKAGED_GGUF, convert_gguf, gguf_sha256
from isotropy.models.layers import check_layers, select_layers
from isotropy.models.loading import is_decoder, load_transformer
from isotropy.models.pooling import POOLINGS, check_pooling, pool_hidden_states
from isotropy.models.resolve import DEFAULT_MODEL, PACKAGED_MODELS, default_cache_dir, resolve_model
from isotropy.models.static import input_word_vectors

__all__ = ["DEFAULT_MODEL", "PACKAGED_GGUF", "PACKAGED_MODELS", "POOLINGS", "check_layers", "check_pooling",
           "convert_gguf", "default_cache_dir", "gguf_sha256", "input_word_vectors", "is_decoder", "load_transformer",
           "pool_hidden_states", "resolve_model", "select_layers"]
