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


def test_the_sentence_regulariser_checks_the_mask_once_for_every_layer_and_pools_as_pool_hidden_states(monkeypatch):
    from isotropy.training import regularisers
    from isotropy.training.regularisers import regularised_states

    states = [torch.randn(2, 4, 3, generator=torch.Generator().manual_seed(i)) for i in range(4)]
    mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])
    calls = []
    check = regularisers.check_attention_mask
    monkeypatch.setattr(regularisers, "check_attention_mask", lambda *a, **k: calls.append(1) or check(*a, **k))
    got = regularised_states(states, mask, layers="all", level="sentence", pooling="last")
    assert len(calls) == 1  # 3 layers, one check
    expected = torch.cat([pool_hidden_states(h, mask, pooling="last") for h in states[1:]])
    assert torch.equal(got, expected)
    mask[0] = 0
    with pytest.raises(IsotropyValueError, match="^The 'attention_mask' parameter of regularised_states has no real "
                                                 "token in row 0"):
        regularised_states(states, mask, level="sentence")
    # the token level takes a list mask too, and refuses a wrong shape in one line
    tokens = regularised_states(states, [[1, 1, 0, 0], [1, 0, 0, 0]], layers=[1], level="token")
    assert torch.equal(tokens, states[1][torch.tensor([[1, 1, 0, 0], [1, 0, 0, 0]]).bool()])
    with pytest.raises(IsotropyValueError, match=r"^The 'attention_mask' parameter of regularised_states must have "
                                                 r"shape \(2, 4\)"):
        regularised_states(states, [[1, 1, 0]], level="token")


@pytest.mark.parametrize("mask, what", [([[1, 1, 1], [1, 1, 1, 1]], "list"), (None, "NoneType"),
                                        ([["a", "b", "c", "d"]], "list")], ids=["ragged", "none", "strings"])
def test_a_mask_that_is_not_a_table_of_numbers_is_one_line(mask, what):
    with pytest.raises(IsotropyValueError, match=f"^The 'attention_mask' parameter of pool_hidden_states must be a "
                                                 f"tensor or nested sequence of 0s and 1s of shape \\(1, 4\\).*Got "
                                                 f"{what} that is not one"):
        pool_hidden_states(HIDDEN, mask)


@pytest.mark.parametrize("value", [-1, 2, 0.5, float("nan")])
def test_a_cpu_mask_holds_only_zeros_and_ones(value):
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0]])
    mask[0, 2] = value
    with pytest.raises(IsotropyValueError, match=f"^The 'attention_mask' parameter of pool_hidden_states must hold "
                                                 f"only 0s and 1s. Got {re.escape(repr(float(value)))} at row 0, "
                                                 f"position 2 instead.$"):
        pool_hidden_states(HIDDEN, mask)
    assert pool_hidden_states(HIDDEN, mask.bool().logical_or(mask == 0)).shape == (1, 3)  # bool masks are taken


def test_a_mask_on_another_device_is_not_read_back_and_an_empty_row_pools_to_nan():
    from isotropy.models.pooling import _pool, check_attention_mask

    # a meta tensor has no values: reading them back (a sync on an accelerator) would raise here
    meta = torch.zeros(1, 4, device="meta")
    assert check_attention_mask(HIDDEN, meta).device.type == "meta"
    hidden = torch.arange(24.0).reshape(2, 4, 3)
    mask = torch.tensor([[1, 1, 0, 0], [0, 0, 0, 0]])
    for pooling in ("mean", "last", "first"):
        pooled = _pool(hidden, mask, pooling)
        assert torch.isnan(pooled[1]).all() and torch.isfinite(pooled[0]).all(), pooling


def test_no_attention_mask_means_no_padding():
    """``penalty(hidden_states)`` without a mask (a Python API trial: None was refused as "a tensor or nested sequence
    of 0s and 1s ... Got NoneType"): every position counts, as a transformers model reads a missing mask."""
    import torch

    from isotropy.torch import cosine_penalty, istar_penalty
    from isotropy.training import HiddenStateRegulariser
    from isotropy.training.regularisers import regularised_states

    g = torch.Generator().manual_seed(0)
    states = tuple(torch.randn(3, 5, 4, generator=g) for _ in range(3))
    ones = torch.ones(3, 5, dtype=torch.long)
    torch.testing.assert_close(regularised_states(states), regularised_states(states, ones))
    assert regularised_states(states).shape == (2 * 15, 4)  # layers 1 and 2, every token
    H = torch.cat([states[1].reshape(15, 4), states[2].reshape(15, 4)])
    assert float(HiddenStateRegulariser("cosreg", weight=2.0).penalty(states)) == pytest.approx(
        2.0 * float(cosine_penalty(H)), rel=1e-6)
    with pytest.warns(UserWarning, match="without a shrinkage sample"):
        istar = HiddenStateRegulariser("istar", weight=1.0)
    assert float(istar.penalty(states)) == pytest.approx(float(istar_penalty(H, shrinkage_cov=None)), rel=1e-6)


def test_a_lightning_module_without_forward_or_a_misspelt_model_is_named():
    """A LightningModule with no forward failed with torch's bare "_forward_unimplemented() got an unexpected keyword
    argument 'input_ids'", and model='modle' said "(NoneType)" with no suggestion (a new-user trial)."""
    import torch
    from lightning.pytorch import LightningModule

    from isotropy import IsotropyValueError
    from isotropy.training.lightning_callback import resolve_submodule

    class Module(LightningModule):
        def __init__(self):
            super().__init__()
            self.model = torch.nn.Linear(2, 2)

    module = Module()
    with pytest.raises(IsotropyValueError, match=r"^The LightningModule given to LightningGeometryCallback has no "
                                                 r"forward method, so it cannot embed the probe itself: pass model= "
                                                 r"naming its transformers model \('model'\), or a callable\.$"):
        resolve_submodule(module, None, "LightningGeometryCallback")
    with pytest.raises(IsotropyValueError, match=r"Got 'modle' \(no such attribute\) instead\. Did you mean 'model'\?$"):
        resolve_submodule(module, "modle", "LightningGeometryCallback")
    assert resolve_submodule(module, "model", "LightningGeometryCallback") is module.model


@pytest.mark.parametrize("method", ["istar", "cosreg"])
def test_a_one_row_batch_at_sentence_level_has_no_penalty_and_one_warning(method):
    """The last batch of an epoch of batch_size·m + 1 sentences gives 1 sentence state: IsoScore* and the mean cosine
    are undefined there, and training stopped with "The 'H' parameter of istar_penalty must have at least 2 samples"
    (an experiments trial). The penalty is 0 for that batch, said once; two rows are penalised as before."""
    import warnings

    import torch

    from isotropy.experiments._finetune.train import regularised_loss
    from isotropy.torch import cosine_penalty, istar_penalty
    from isotropy.training import HiddenStateRegulariser

    g = torch.Generator().manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # istar's warning of a missing shrinkage sample
        regulariser = HiddenStateRegulariser(method, level="sentence", layers="last")
    one = tuple(torch.randn(1, 5, 4, generator=g, requires_grad=True) for _ in range(3))
    with pytest.warns(UserWarning, match=rf"a training batch gave 1 regularised state \(level='sentence'\); "
                                         rf"{method}'s penalty needs at least 2, so it is 0 for that batch"):
        assert float(regulariser.penalty(one)) == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once
        assert float(regulariser.penalty(one)) == 0.0
    two = tuple(torch.randn(2, 5, 4, generator=g) for _ in range(3))
    H = two[-1].mean(dim=1)
    expected = istar_penalty(H, shrinkage_cov=None) if method == "istar" else cosine_penalty(H)
    assert float(regulariser.penalty(two)) == pytest.approx(float(expected), rel=1e-6)
    logits, labels = torch.randn(1, 2, generator=g), torch.tensor([1])
    total, task, iso, cos = regularised_loss(logits, labels, H[:1], method=method, lam=-1.0,
                                             shrinkage_cov=torch.eye(4, dtype=torch.float64))
    assert float(total) == float(task) == pytest.approx(float(torch.nn.functional.cross_entropy(logits, labels)))
    assert iso is None and cos is None


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_mean_pooling_of_half_states_is_the_float64_mean_of_those_states(dtype):
    """float16 states of GPT-2's outlier size (1000) over 100 tokens pooled to inf (the sum overflowed float16), 500 to
    499.75; bfloat16 means were 1e-3 off. The reference is numpy's float64 mean of the very same half values."""
    import numpy as np

    g = torch.Generator().manual_seed(0)
    hidden = (torch.randn(3, 100, 8, generator=g) * 300 + 1000).to(dtype)
    mask = (torch.arange(100)[None] < torch.tensor([100, 37, 1])[:, None]).long()
    pooled = pool_hidden_states(hidden, mask, pooling="mean")
    states, keep = hidden.double().numpy(), mask.numpy().astype(bool)
    expected = np.stack([states[i][keep[i]].mean(0) for i in range(3)])
    assert pooled.dtype == torch.float32
    np.testing.assert_allclose(pooled.double().numpy(), expected, rtol=2**-23, atol=0)
    # the probe pools the same way: its metrics of a float16 model's states are those of their float64 means
    from transformers import GPT2Config, GPT2Model

    import isotropy
    from isotropy.training import GeometryProbe

    torch.manual_seed(0)
    model = GPT2Model(GPT2Config(vocab_size=40, n_embd=16, n_layer=1, n_head=2, n_positions=128)).eval()
    with torch.no_grad():  # outliers of size 2000 in one feature of the embeddings: GPT-2's "rogue dimension"
        model.wte.weight[:, 3] = 2000.0
    model = model.to(dtype)
    ids = torch.randint(0, 40, (6, 100), generator=g)
    values = GeometryProbe({"input_ids": ids}, layers=[0], metrics=["participation_ratio"]).measure(model)
    with torch.no_grad():
        states = model(input_ids=ids, output_hidden_states=True).hidden_states[0].double().numpy()
    reference = isotropy.participation_ratio(states.mean(1))
    assert values["geometry/participation_ratio/layer_0"] == pytest.approx(reference, rel=1e-5)


@pytest.mark.parametrize("level", ["sentence", "token"])
def test_a_batch_of_no_rows_is_said_to_give_no_state(level):
    """A batch of no rows (a filtered batch that came out empty) has a penalty of 0, as a batch of one state has, but
    its warning said "gave 1 regularised state" and blamed an epoch of batch_size·m + 1 rows (or a mask keeping one
    token): it now says 0 states, and why."""
    import torch

    from isotropy.training import HiddenStateRegulariser

    regulariser = HiddenStateRegulariser("cosreg", level=level, layers="last")
    empty = tuple(torch.zeros(0, 5, 4, requires_grad=True) for _ in range(3))
    with pytest.warns(UserWarning) as said:
        assert float(regulariser.penalty(empty, torch.ones(0, 5, dtype=torch.long)).detach()) == 0.0
    expected = (f"HiddenStateRegulariser: a training batch gave 0 regularised states (level={level!r}); cosreg's "
                f"penalty needs at least 2, so it is 0 for that batch (the batch has no rows). Later such batches are "
                f"not warned of.")
    assert [str(w.message) for w in said] == [expected]
