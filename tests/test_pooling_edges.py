"""pool_hidden_states refuses a mask of the wrong shape and a row without a real token; input_word_vectors an empty word."""

from __future__ import annotations

import re

import pytest
import torch

from isotropy import IsotropyValueError
from isotropy.models import input_word_vectors, pool_hidden_states

HIDDEN = torch.arange(12.0).reshape(1, 4, 3)


@pytest.mark.parametrize("mask", [[[1, 1, 1]], torch.ones(1, 3, dtype=torch.long), torch.ones(4)], ids=["list", "tensor", "1-d"])
def test_a_mask_of_the_wrong_shape_names_mask_and_the_shape_expected(mask):
    got = tuple(torch.as_tensor(mask).shape)
    message = (f"The 'attention_mask' parameter of pool_hidden_states must have shape (1, 4) (batch, seq of 'hidden'). "
               f"Got shape {got} instead.")
    with pytest.raises(IsotropyValueError, match=f"^{re.escape(message)}$"):
        pool_hidden_states(HIDDEN, mask)


def test_a_list_mask_of_the_right_shape_pools():
    assert pool_hidden_states(HIDDEN, [[1, 1, 1, 0]]).tolist() == [[3.0, 4.0, 5.0]]


@pytest.mark.parametrize("pooling", ["mean", "last", "first"])
def test_a_row_without_a_real_token_is_refused_with_its_row(pooling):
    hidden = torch.arange(24.0).reshape(2, 4, 3)
    mask = torch.tensor([[1, 1, 0, 0], [0, 0, 0, 0]])
    message = ("The 'attention_mask' parameter of pool_hidden_states has no real token in row 1 (all zeros): that row "
               "has no sentence vector. Expected at least one 1 per row.")
    with pytest.raises(IsotropyValueError, match=f"^{re.escape(message)}$"):
        pool_hidden_states(hidden, mask, pooling=pooling)


def test_hidden_must_be_three_dimensional():
    with pytest.raises(IsotropyValueError, match=re.escape("must be a tensor of shape (batch, seq, d). Got shape (4, 3)")):
        pool_hidden_states(HIDDEN[0], [1, 1, 1, 1])


@pytest.mark.parametrize("words, position, word", [(["cat", ""], 1, "''"), (["  ", "cat"], 0, "'  '")])
def test_an_empty_word_is_refused_with_its_position(words, position, word):
    # refused before any model is resolved or loaded
    with pytest.raises(ValueError, match=f"^The 'words' parameter of input_word_vectors must hold non-empty words. "
                                         f"Got {re.escape(word)} at position {position} instead.$"):
        input_word_vectors(words, model="no-such-model")


def test_the_sentence_regulariser_checks_the_mask_once_for_every_layer_and_pools_as_pool_hidden_states():
    from isotropy.training.regularisers import regularised_states

    states = [torch.randn(2, 4, 3, generator=torch.Generator().manual_seed(i)) for i in range(3)]
    mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])
    got = regularised_states(states, mask, layers="all", level="sentence", pooling="last")
    expected = torch.cat([pool_hidden_states(h, mask, pooling="last") for h in states[1:]])
    assert torch.equal(got, expected)
    mask[0] = 0
    with pytest.raises(IsotropyValueError, match="^The 'attention_mask' parameter of regularised_states has no real "
                                                 "token in row 0"):
        regularised_states(states, mask, level="sentence")
