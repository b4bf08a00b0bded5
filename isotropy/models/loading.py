"""Load a tokenizer and a base transformers model (encoder or decoder) for hidden-state extraction."""

from __future__ import annotations

import os
from pathlib import Path

from isotropy._utils.validation import IsotropyValueError
from isotropy.models._pretrained import dtype_kwargs

__all__ = ["COMPUTE_DTYPES", "check_dtype", "is_decoder", "load_transformer"]

# language-model heads over bidirectional attention, whose architecture names say "LMHead" (XLNetLMHeadModel,
# XLMWithLMHeadModel, FlaubertWithLMHeadModel): not causal
_BIDIRECTIONAL_LM_HEADS = {"xlnet", "xlm", "flaubert"}
_DECODER_TYPES = {"gpt2", "gpt_neo", "gpt_neox", "gptj", "llama", "mistral", "mixtral", "qwen2", "qwen3", "gemma",
                  "gemma2", "gemma3", "gemma3_text", "phi", "phi3", "falcon", "bloom", "opt", "stablelm",
                  "starcoder2", "olmo", "olmo2"}


def _bidirectional(config) -> bool:
    """Whether a config of a decoder family says its attention sees both ways (``use_bidirectional_attention``: Gemma,
    Gemma 2 and Gemma 3 as an embedding model, EmbeddingGemma's layout): an encoder, whatever its model type."""
    return getattr(config, "use_bidirectional_attention", False) is True


def is_decoder(config) -> bool:
    """Whether a transformers config describes a causal (left-to-right) decoder.

    Its first token sees only itself, so a "[CLS]"/first-token sentence vector is the same for
    every input: such models are pooled by the masked mean or the last token.
    """
    if getattr(config, "is_encoder_decoder", False) or _bidirectional(config):
        return False
    if getattr(config, "is_decoder", False) or getattr(config, "model_type", None) in _DECODER_TYPES:
        return True
    if getattr(config, "model_type", None) in _BIDIRECTIONAL_LM_HEADS:
        return False
    return any("CausalLM" in name or "LMHead" in name for name in (getattr(config, "architectures", None) or []))


def is_certainly_causal(config) -> bool:
    """Whether a config is known to describe a causal decoder, not guessed from an architecture's name.

    For what is only right for a causal model (copying the states of tokens with the same prefix,
    :func:`isotropy.models.batching.copy_same_prefix_rows`): the config says so (``is_decoder``), its
    model type is a known decoder, or an architecture is a ``...ForCausalLM``.
    """
    if getattr(config, "is_encoder_decoder", False) or getattr(config, "model_type", None) in _BIDIRECTIONAL_LM_HEADS \
            or _bidirectional(config):
        return False
    return bool(getattr(config, "is_decoder", False) or getattr(config, "model_type", None) in _DECODER_TYPES
                or any(name.endswith("ForCausalLM") for name in (getattr(config, "architectures", None) or [])))


def _base_model_weights(weights: dict, cls) -> dict:
    """The causal LM's state ``weights`` less what its base model ``cls`` does not hold (the LM head).

    What the converted ``model.safetensors`` holds (``save_pretrained`` writes a tied head once, under
    the embeddings' name): given whole, transformers reports ``lm_head.weight`` as an unexpected key.
    """
    prefix = f"{cls.base_model_prefix}."
    if not any(name.startswith(prefix) for name in weights):
        return weights
    return {name: tensor for name, tensor in weights.items() if name.startswith(prefix)}


# Model types whose position ids start after the padding index (RoBERTa's create_position_ids_from_input_ids): their
# table of max_position_embeddings rows holds pad_token_id + 1 fewer tokens (514 rows, 512 tokens for roberta-base).
_OFFSET_POSITIONS = {"roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "longformer", "data2vec-text",
                     "roberta-prelayernorm", "xmod", "ernie_m", "mpnet", "ibert", "luke", "esm", "markuplm",
                     "layoutlmv3", "lilt"}


def longest_input(config, tokenizer=None) -> int | None:
    """The most tokens one sequence may hold for the model of ``config``: its table of learned positions
    (``max_position_embeddings``, ``n_positions``; less RoBERTa's offset) and the tokenizer's ``model_max_length`` when
    it sets one; ``None`` when neither bounds it (relative positions: T5, ALiBi).

    A longer ``max_length`` is cut to it: past the table the forward pass failed with a traceback (a BERT of 16
    positions at the default 128: "The size of tensor a (31) must match the size of tensor b (16)", GPT-2's "index out
    of range in self").
    """
    limits = []
    positions = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
    if isinstance(positions, int) and positions > 0:
        if getattr(config, "model_type", None) in _OFFSET_POSITIONS and isinstance(config.pad_token_id, int):
            positions -= config.pad_token_id + 1
        limits.append(positions)
    declared = getattr(tokenizer, "model_max_length", None)
    if isinstance(declared, int) and 0 < declared < 10**9:  # unset: transformers' VERY_LARGE_INTEGER (1e30)
        limits.append(declared)
    return min(limits) if limits else None


def capped_max_length(max_length: int, config, tokenizer=None) -> int:
    """``max_length`` cut to :func:`longest_input` (never below 2)."""
    longest = longest_input(config, tokenizer)
    return max_length if longest is None else max(2, min(int(max_length), longest))


def check_max_length(max_length: int, tokenizer, *, model, caller: str, name: str = "max_length") -> int:
    """``max_length`` when it leaves each text at least one token of its own, else a one-line refusal.

    The tokenizer adds ``tokenizer.num_special_tokens_to_add()`` special tokens to every text (``[CLS]`` and
    ``[SEP]`` for BERT, a start token for Gemma, none for GPT-2); a ``max_length`` of that many or fewer leaves only
    them, so that every text becomes the same row and the metrics fail on identical vectors.
    """
    try:
        added = int(tokenizer.num_special_tokens_to_add(pair=False))
    except (AttributeError, NotImplementedError, TypeError, ValueError):  # a tokenizer that cannot say: not checked
        return max_length
    if max_length <= added:
        raise IsotropyValueError(f"The {name!r} parameter of {caller} must be at least {added + 1} for {str(model)!r}, "
                                 f"whose tokenizer adds {added} special tokens to every text, so that a text keeps "
                                 f"at least one token of its own. Got {max_length} instead.")
    return max_length


# The attribute of a tokenizer loaded by load_transformer that holds its variant for pre-split words (words_tokenizer).
_WORDS_TOKENIZER = "_isotropy_words_tokenizer"


def words_tokenizer(tokenizer):
    """The tokenizer for pre-split words (``is_split_into_words=True``) of one :func:`load_transformer` returned.

    For a byte-level BPE tokenizer (GPT-2, RoBERTa, Qwen) the same vocabulary loaded with ``add_prefix_space=True``,
    so that each word is encoded as in running text; otherwise ``tokenizer`` itself (also for a tokenizer not
    loaded here).
    """
    return getattr(tokenizer, _WORDS_TOKENIZER, tokenizer)


def load_transformer(model: str = "all-MiniLM-L6-v2", *, device=None, dtype: str = "float32"):
    """Load a fast tokenizer and a base transformers model (evaluation mode).

    Parameters
    ----------
    model : str, default="all-MiniLM-L6-v2"
        Any name :func:`isotropy.models.resolve_model` accepts: the packaged MiniLM or
        ``gemma-3-270m``, a ``.gguf`` file, a local model directory (``config.json`` plus
        weights), or a hub name (needs network).
    device : str, torch.device or None
        ``"auto"``/``None`` (CUDA when available, else CPU), ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or
        ``"mps"``; checked (:func:`isotropy._utils.device.resolve_device`) before the model is resolved.
    dtype : {"float32", "bfloat16", "float16"}, default="float32"
        The precision the model is built and run in, whatever dtype its files store (a GGUF file's
        weights are dequantised to float32, then cast to it): float32, the exact default, or a half
        dtype that halves the model's memory at ~1e-3 relative error in its hidden states
        (:func:`check_dtype`; the torch dtypes of these names are accepted too).

    Returns
    -------
    tokenizer, model, location
        The tokenizer (pads on the right; a missing pad token is set to the end-of-sequence or
        unknown token), the base model (for a causal LM, its decoder stack without the LM head)
        on ``device`` in ``dtype``, and the resolved location.
    """
    from isotropy.models.resolve import _resolve

    if not isinstance(model, (str, os.PathLike)):
        raise TypeError(f"The 'model' parameter of load_transformer must be a model name or directory. "
                        f"Got {type(model).__name__} instead.")
    model = str(model)
    from isotropy.models.resolve import require_model_packages

    require_model_packages(model)  # torch and transformers named up front, with their extra
    from isotropy._utils.device import resolve_device

    device = resolve_device(device, caller="load_transformer")  # before a GGUF is converted or weights are read
    dtype = check_dtype(dtype, caller="load_transformer")
    location, weights = _resolve(model)  # weights: those of a GGUF converted just now, else None
    path = Path(location).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise FileNotFoundError(f"The model directory {str(path)!r} has no config.json: expected a Hugging Face "
                                    f"transformers model directory (config.json, weights, tokenizer files).")
    elif model.startswith((".", "~", "/")) or model.count("/") > 1 or model.endswith(os.sep):
        raise FileNotFoundError(f"The model directory {model!r} does not exist: expected a local Hugging Face model "
                                f"directory, a .gguf file, the packaged 'all-MiniLM-L6-v2' or 'gemma-3-270m', or a "
                                f"hub name while online.")

    from isotropy.models._safety import refuse_remote_code

    refuse_remote_code(location)
    from isotropy.models._weights import check_config_matches_weights, check_model_weights

    if weights is None:  # (else a GGUF converted just now: its weights in memory, its folder ours)
        check_model_weights(location)  # truncated or random safetensors, pickled weights, none: one line
        # a config.json its weights do not fill (1000 layers over 6: 994 random layers built in 60 s at 7.6 GB;
        # a 2M x 4096 vocabulary): one line from the headers, before the model is built
        check_config_matches_weights(location)
    from isotropy.models._quiet import no_load_report, quiet_transformers

    with quiet_transformers(), no_load_report():  # a checkpoint's unused head was a table of UNEXPECTED keys
        return _load(model, location, weights, device, dtype)


# The precision every model runs in here: float32, whatever its files store. transformers 5 loads a model in the dtype
# of its files by default (dtype="auto"; transformers 4 in float32): a model saved in bfloat16 ran in bfloat16, its
# hidden states 3 significant digits off those of float32 arithmetic on the same weights (a user trial: 1e-2 relative,
# not said). A design decision: geometry is measured on float32 states (as a GGUF file's are, dequantised to float32);
# the record says which dtype ran (measure_layers' "dtype").
_COMPUTE_DTYPE = "float32"
# What a caller may ask for instead (dtype=, --dtype): a half dtype halves the memory of a large model on a GPU (before
# the line above, transformers 5 ran a bfloat16 model in bfloat16), at ~1e-3 relative error in its states. An explicit
# opt-in, recorded as "dtype" and in the cache keys; the states are pooled in float32 (isotropy.models.pooling._pool)
# and handed to the metrics as float32.
COMPUTE_DTYPES = (_COMPUTE_DTYPE, "bfloat16", "float16")


def check_dtype(dtype, *, caller: str, name: str = "dtype") -> str:
    """``dtype`` as one of :data:`COMPUTE_DTYPES` (a name, or the torch dtype of one); refused in one line otherwise.

    >>> check_dtype("bfloat16", caller="encode_pooled")
    'bfloat16'
    """
    from isotropy._utils.validation import check_option

    if type(dtype).__module__ == "torch" and type(dtype).__name__ == "dtype":  # torch.bfloat16 (torch not imported)
        dtype = str(dtype).removeprefix("torch.")
    return check_option(dtype, name, COMPUTE_DTYPES, caller=caller)


def forward_failed(exc: BaseException, *, dtype: str, device, caller: str, name: str = "dtype"):
    """The one-line error of a forward pass that failed in a half ``dtype`` (``None`` where ``exc`` is not that).

    torch does not run every operation in every dtype on every device (float16 matrix products on the CPU of older
    torch: ``"addmm_impl_cpu_" not implemented for 'Half'``): said as the ``dtype`` parameter's refusal, with the
    device, not as torch's traceback. An out-of-memory error, and any error of a float32 pass, are left as they are.
    """
    import torch

    if dtype == _COMPUTE_DTYPE or not isinstance(exc, (RuntimeError, NotImplementedError)) \
            or isinstance(exc, getattr(torch.cuda, "OutOfMemoryError", ())):
        return None
    said = " ".join(str(exc).split())[:200] or type(exc).__name__
    return IsotropyValueError(f"The '{name}' parameter of {caller} is {dtype!r}, in which the model could not run "
                              f"on the device {str(device)!r} ({type(exc).__name__}: {said}); expected 'float32' "
                              f"(the default) there, or a device that runs {dtype}.")


def _load(model: str, location: str, weights, device, dtype: str = _COMPUTE_DTYPE):
    """:func:`load_transformer` once ``location`` and ``device`` are checked: the tokenizer and the model built.

    ``weights``: see :func:`load_transformer`.
    """
    import torch
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    from isotropy.models._safety import NO_REMOTE_CODE

    try:
        config = AutoConfig.from_pretrained(location, **NO_REMOTE_CODE)
        tokenizer = AutoTokenizer.from_pretrained(location, use_fast=True, **NO_REMOTE_CODE)
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: a tokenizer.json nested without end
        raise OSError(f"Could not load the model {model!r} (resolved to {location!r}): expected a local model "
                      f"directory, a .gguf file, the packaged 'all-MiniLM-L6-v2' or 'gemma-3-270m', or a hub name "
                      f"while online. ({exc.__class__.__name__}: {str(exc).splitlines()[0]})") from None
    from isotropy.models._weights import base_model_class

    network_class = base_model_class(config)  # AutoModel, or an encoder-only T5 (T5EncoderModel)
    if getattr(config, "is_encoder_decoder", False) and network_class is AutoModel:
        raise IsotropyValueError(f"The model {model!r} is an encoder-decoder ({config.model_type}); expected an "
                                 f"encoder (BERT-style), an encoder-only T5 (T5EncoderModel) or a decoder "
                                 f"(GPT-2-style) model.")
    special = set(getattr(tokenizer, "all_special_ids", ()))
    if len(tokenizer) <= len(special):
        # a folder without its tokenizer files (tokenizer.json, vocab.txt, ...): transformers built the tokenizer of the
        # model type from its special tokens alone, and every word became the unknown token (a measured table of one
        # vector per text length, exit 0: a user trial)
        raise IsotropyValueError(f"The tokenizer of {model!r} (resolved to {location!r}) holds only its "
                                 f"{len(tokenizer)} special tokens: its tokenizer files (tokenizer.json, vocab.txt, "
                                 f"tokenizer.model, ...) are missing, and every word would be the unknown token. Copy "
                                 f"them beside config.json (tokenizer.save_pretrained(directory)).")
    if not getattr(tokenizer, "is_fast", False):
        raise IsotropyValueError(f"The tokenizer of {model!r} is not a fast tokenizer; the word-to-piece mapping "
                                 f"(word_ids) needs one (a tokenizer.json or a convertible vocabulary).")
    # byte-level BPE (GPT-2, RoBERTa, Qwen): each pre-split word must be encoded as if preceded by a space, as in
    # running text ("Ġcat"); without add_prefix_space it would get its sentence-initial pieces (transformers 4 refuses
    # such input, transformers 5 silently accepts it). Only for pre-split words (words_tokenizer): whole texts are
    # tokenised as the model's own tokenizer does (with add_prefix_space every text began with a space, "Ġ" "The",
    # and GPT-2's, Qwen's and RoBERTa's sentence vectors were those of other tokens)
    pre_tokenizer = getattr(getattr(tokenizer, "backend_tokenizer", None), "pre_tokenizer", None)
    words = tokenizer
    if "ByteLevel" in repr(pre_tokenizer) and not getattr(tokenizer, "add_prefix_space", False):
        words = AutoTokenizer.from_pretrained(location, use_fast=True, add_prefix_space=True, **NO_REMOTE_CODE)
    for each in {id(tokenizer): tokenizer, id(words): words}.values():
        each.padding_side = "right"
        if each.pad_token is None:
            fallback = each.eos_token or each.unk_token
            if fallback is None:
                raise IsotropyValueError(f"The tokenizer of {model!r} has no pad, end or unknown token to pad with.")
            each.pad_token = fallback
    if words is not tokenizer:
        setattr(tokenizer, _WORDS_TOKENIZER, words)
    if weights is None:
        from isotropy.models._weights import refuse_missing_weights

        try:
            network, info = network_class.from_pretrained(location, output_loading_info=True,
                                                          **dtype_kwargs(dtype), **NO_REMOTE_CODE)
        except RuntimeError as exc:  # "You set ignore_mismatched_sizes to False": shapes the config does not give
            if "mismatched" not in str(exc) and "size mismatch" not in str(exc):
                raise
            raise IsotropyValueError(f"The model directory {str(location)!r} has weights whose shapes do not match "
                                     f"its config.json ({str(exc).strip().splitlines()[0][:160]}); expected the "
                                     f"config.json saved with these weights (model.save_pretrained(dir)).") from None
        # weights the architecture needs but the files lack are initialised at random by transformers (a note only):
        # every geometry measured through them would be wrong
        refuse_missing_weights(location, info.get("missing_keys"), info.get("mismatched_keys"))
    else:  # a cold GGUF cache: the converted weights are in memory, not read back from model.safetensors
        from transformers.models.auto.modeling_auto import MODEL_MAPPING

        cls = MODEL_MAPPING[type(config)]
        # the GGUF file's weights, dequantised to float32, cast to dtype here
        network = cls.from_pretrained(None, config=config, state_dict=_base_model_weights(weights, cls),
                                      **dtype_kwargs(dtype))
        del weights
    network = network.to(torch.device(device)).eval()  # device: resolved by load_transformer
    return tokenizer, network, location
