"""Which hidden layers to measure: the one layer selector of the toolkit.

A transformer with L layers returns L + 1 hidden states: index 0 is the embedding output, index k
the output of layer k. :func:`select_layers` turns what a user writes (``"all"``, ``"last"``,
``"0,6,12"``, ``-1``, ``"last,0"``, ``[0, 3]``) into sorted indices into that tuple; ``isotropy measure --model``,
:func:`isotropy.models.contextual.extract_token_embeddings`, the training probe, callbacks and
regularisers all call it. :func:`check_layers` checks the form alone, for constructors that do not
know the model yet.
"""

from __future__ import annotations

import numbers

from isotropy._utils.errors import IsotropyValueError
from isotropy._utils.validation import _describe

__all__ = ["check_layers", "check_layers_before_loading", "select_layers"]

_WORDS = ("all", "last")


def _expected(n_hidden_states=None) -> str:
    if n_hidden_states is None:
        return "'all', 'last' or hidden-state indices (0 = embedding output, negative from the end)"
    last = n_hidden_states - 1
    return (f"'all', 'last' or hidden-state indices in [-{n_hidden_states}, {last}] "
            f"(0 = embedding output, {last} = last layer)")


def _is_index(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _index(part):
    """One entry of a list of layers as an index: ``"last"`` (any case) is -1, the index of the last hidden state
    whatever the depth, so that ``"last,0"`` reads as ``"0,-1"`` does (it was refused, though ``"last"`` alone and
    ``"0,-1"`` were not); a string is parsed as an int, anything else returned as it is."""
    if isinstance(part, str):
        return -1 if part.strip().lower() == "last" else int(part)
    return part


def check_layers(layers, *, caller: str = "check_layers", name: str = "layers"):
    """Check the form of a layer selection; return ``"all"``, ``"last"`` or a tuple of ints.

    Parameters
    ----------
    layers : {"all", "last"}, str, int or sequence of int
        A word, comma-separated indices (``"0,6,-1"``), one index or several; among indices,
        ``"last"`` is the last hidden state, -1 (``"last,0"`` is ``(-1, 0)``).
    caller, name : str
        The function and argument named in the error message.

    Returns
    -------
    "all", "last" or tuple of int
        The indices are not yet bounded: that needs the model (see :func:`select_layers`).

    Raises
    ------
    IsotropyValueError
        One line naming the argument, the value and the accepted forms.

    Examples
    --------
    >>> check_layers("0, 6,-1"), check_layers(3), check_layers("ALL"), check_layers("last,0")
    ((0, 6, -1), (3,), 'all', (-1, 0))
    """
    bad = IsotropyValueError(f"The {name!r} parameter of {caller} must be {_expected()}. "
                             f"Got {_describe(layers)} instead.")  # shortened: a 5,000-digit index was echoed whole
    if isinstance(layers, str):
        word = layers.strip().lower()
        if word in _WORDS:
            return word
        try:
            parsed = tuple(_index(part) for part in layers.split(",") if part.strip())
        except ValueError:
            raise bad from None
    elif _is_index(layers):
        parsed = (int(layers),)
    else:
        try:
            parsed = tuple(-1 if isinstance(i, str) and i.strip().lower() == "last" else i for i in layers)
        except TypeError:
            raise bad from None
        if not all(_is_index(i) for i in parsed):
            raise bad
        parsed = tuple(int(i) for i in parsed)
    if not parsed:
        raise bad
    return parsed


def select_layers(layers, n_hidden_states: int, *, include_embeddings: bool = True, caller: str = "select_layers",
                  name: str = "layers") -> list[int]:
    """Sorted indices into a model's ``hidden_states`` tuple of length ``n_hidden_states`` (= L + 1).

    Parameters
    ----------
    layers : {"all", "last"}, str, int or sequence of int
        ``"all"``: every hidden state (see ``include_embeddings``); ``"last"``: ``[L]``; indices as
        ints, a sequence or a comma-separated string (``"0,6,12"``); a negative index counts from the
        end (-1 = L), and ``"last"`` among them is L too (``"last,0"``). Repeats are dropped.
    n_hidden_states : int
        Length of the model's ``hidden_states``: its number of layers L plus one (at least 1; a
        bool, a float or a smaller count is refused in one line).
    include_embeddings : bool, default=True
        Whether ``"all"`` includes index 0, the embedding output. ``False`` makes ``"all"`` the
        outputs of the transformer layers 1..L, as I-STAR regularises them and the training
        callbacks log them (index 0 is then measured only when listed).
    caller, name : str
        The function and argument named in the error message.

    Returns
    -------
    list of int
        Sorted, distinct indices in ``0..n_hidden_states - 1``.

    Raises
    ------
    IsotropyValueError
        One line naming the argument, the value and the accepted range.

    Examples
    --------
    >>> select_layers("all", 4)
    [0, 1, 2, 3]
    >>> select_layers("all", 4, include_embeddings=False), select_layers("last", 4), select_layers("3,0,-1", 7)
    ([1, 2, 3], [3], [0, 3, 6])
    >>> select_layers("last,0", 7)
    [0, 6]
    """
    from isotropy._utils.validation import check_scalar

    # the model's count, not the user's layers: named as select_layers' own argument, whoever called it
    n = int(check_scalar(n_hidden_states, "n_hidden_states", caller="select_layers", kind=int, low=1))
    form = check_layers(layers, caller=caller, name=name)
    if form == "all":
        return list(range(0 if include_embeddings or n == 1 else 1, n))
    if form == "last":
        return [n - 1]
    outside = [i for i in form if not -n <= i < n]
    if outside:
        raise IsotropyValueError(f"The {name!r} parameter of {caller} must be {_expected(n)}. "
                                 f"Got {_describe(layers)} instead.")
    return sorted({i % n for i in form})


def check_layers_before_loading(layers, model, *, caller: str, name: str = "layers") -> None:
    """Refuse ``layers`` beyond ``model`` before it is loaded, where its depth can be read without loading it.

    The depth comes from the model's ``config.json`` or GGUF header
    (:func:`isotropy.models.resolve.peek_n_layers`); where it cannot be read (a hub name, a packaged GGUF
    not yet converted) nothing is checked here, and :func:`select_layers` checks after loading, with the
    same message. A GGUF converts for seconds, and a large model loads for longer, before that check.
    """
    from isotropy.models.resolve import peek_n_layers

    depth = peek_n_layers(model)
    if depth is not None:
        select_layers(layers, depth + 1, caller=caller, name=name)
