"""The keyword of ``from_pretrained`` that sets a model's dtype, for the transformers installed.

Its own module, below :mod:`isotropy.models.loading` and :mod:`isotropy.models.gguf`, which both load models with
it: in ``loading`` it made an import cycle (``gguf`` -> ``loading`` -> ``resolve`` -> ``gguf``).
"""

from __future__ import annotations

import re

__all__ = ["dtype_kwargs"]


def dtype_kwargs(dtype="float32", *, version: str | None = None) -> dict:
    """The keyword of ``from_pretrained`` that sets the dtype a model is built in, for the transformers installed.

    ``dtype`` from transformers 4.56, which deprecated ``torch_dtype`` for it; ``torch_dtype`` before. The project
    supports transformers 4.40 onwards, where a ``dtype=`` keyword is not read but passed on to the model's
    ``__init__`` ("BertModel.__init__() got an unexpected keyword argument 'dtype'": no model loaded at all).
    ``version``: transformers' version (default: the one imported).

    >>> dtype_kwargs(version="4.46.3"), dtype_kwargs(version="4.56.0"), dtype_kwargs(version="5.0.0.dev0")
    ({'torch_dtype': 'float32'}, {'dtype': 'float32'}, {'dtype': 'float32'})
    """
    if version is None:
        import transformers

        version = transformers.__version__
    major_minor = tuple(int(part) for part in re.findall(r"\d+", version)[:2])
    return {"dtype" if major_minor >= (4, 56) else "torch_dtype": dtype}
