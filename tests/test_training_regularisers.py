"""I-STAR / CosReg drop-ins in real runs: the HF Trainer's logged loss and Lightning's Σ_S, recomputed independently."""

from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("lightning")

from _tiny_models import make_tiny_bert

from isotropy._utils.validation import IsotropyValueError
from isotropy.training.regularisers import LOG_KEYS, HiddenStateRegulariser, regularised_states

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TEXTS = ["the cat sat on the mat .", "a dog ran .", "the dog sat on a cat .", "unbelievable cats",
         "cats ran on the mat", "a mat , a cat"]
SAMPLE = ["the dog ran far", "a cat sat .", "the mat , the dog", "cats sat on a dog", "a dog , a mat .",
          "the cat ran", "unbelievable dogs ran on the mat"]


def _isoscore_star_eig(C, S, zeta):
    lam = np.linalg.eigvalsh((1 - zeta) * C + zeta * S)
    return ((lam.sum() ** 2 / (lam ** 2).sum()) - 1) / (C.shape[0] - 1)


def _token_states(model, enc):
    """Token states of layers 1..L without padding, float64 numpy."""
    with torch.no_grad():
        hidden = model(**enc, output_hidden_states=True).hidden_states
    keep = enc["attention_mask"].bool()
    return torch.cat([h[keep] for h in hidden[1:]]).double().numpy()


def test_hf_trainer_loss_is_task_loss_minus_lambda_isoscore_star(tmp_path):
    from transformers import (
        BertForSequenceClassification,
        BertTokenizerFast,
        DataCollatorWithPadding,
        Trainer,
        TrainingArguments,
    )

    from isotropy.training import HFRegulariser

    bert = make_tiny_bert(tmp_path / "bert", n_layers=2, hidden_size=16)
    tokenizer = BertTokenizerFast.from_pretrained(bert)

    def fresh_model():
        torch.manual_seed(0)
        return BertForSequenceClassification.from_pretrained(bert, num_labels=2, hidden_dropout_prob=0.0,
                                                             attention_probs_dropout_prob=0.0)

    labels = [0, 1, 1, 0, 1, 0]
    enc = tokenizer(TEXTS)
    train = [{"input_ids": i, "attention_mask": m, "labels": y} for i, m, y in
             zip(enc["input_ids"], enc["attention_mask"], labels)]
    reg = HFRegulariser("istar", weight=-1.0, zeta=0.2, shrinkage_sample=SAMPLE)
    args = TrainingArguments(output_dir=str(tmp_path / "out"), per_device_train_batch_size=len(TEXTS), max_steps=2,
                             learning_rate=1e-2, logging_steps=1, save_strategy="no", report_to=[], use_cpu=True,
                             seed=0, disable_tqdm=True)
    trainer = Trainer(model=fresh_model(), args=args, train_dataset=train, processing_class=tokenizer,
                      data_collator=DataCollatorWithPadding(tokenizer), compute_loss_func=reg, callbacks=[reg])
    trainer.train()
    logged = next(e["loss"] for e in trainer.state.log_history if e.get("step") == 1 and "loss" in e)

    # independent: the initial model, the whole (padded) batch, Σ_S from the sample one text at a time
    model = fresh_model().eval()
    batch = tokenizer(TEXTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = model(**batch).logits
    task = float(torch.nn.functional.cross_entropy(logits, torch.tensor(labels)))
    H = _token_states(model, batch)
    S = np.cov(np.concatenate([_token_states(model, tokenizer([t], return_tensors="pt")) for t in SAMPLE]),
               rowvar=False)
    expected = task + 1.0 * _isoscore_star_eig(np.cov(H, rowvar=False), S, 0.2)  # λ = −1: task + IsoScore*
    assert logged == pytest.approx(expected, rel=1e-5)
    assert reg._hook is None  # the forward hook is removed after training


def _encoder_module(config, reg):
    """A LightningModule around a float64 BertModel whose training step adds ``reg``'s penalty to a plain loss."""
    import lightning as L
    from transformers import BertModel

    class Module(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.encoder = BertModel(config).double()

        def training_step(self, batch, batch_idx):
            out = self.encoder(**batch, output_hidden_states=True)
            return out.last_hidden_state.pow(2).mean() + reg.penalty(out.hidden_states, batch["attention_mask"])

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.5)

    return Module()


def test_lightning_regulariser_refreshes_sigma_from_the_current_model():
    import lightning as L
    from transformers import BertConfig, BertModel

    from isotropy.training import LightningRegulariser

    torch.manual_seed(0)
    config = BertConfig(vocab_size=19, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=16, max_position_embeddings=16)
    g = torch.Generator().manual_seed(3)
    sample = {"input_ids": torch.randint(5, 19, (9, 6), generator=g),
              "attention_mask": (torch.arange(6)[None] < torch.tensor([6, 4, 5, 6, 3, 6, 2, 5, 6])[:, None]).long()}
    data = [{"input_ids": torch.randint(5, 19, (6,), generator=g), "attention_mask": torch.ones(6, dtype=torch.long)}
            for _ in range(8)]

    reg = LightningRegulariser("istar", weight=1.0, zeta=0.2, shrinkage_sample=sample, model="encoder",
                               level="sentence", pooling="mean")

    class Record(L.Callback):
        def on_train_epoch_start(self, trainer, pl_module):
            self.weights = copy.deepcopy(pl_module.encoder.state_dict())
            self.sigma = reg.shrinkage_cov.clone()

    record = Record()
    trainer = L.Trainer(accelerator="cpu", max_epochs=2, callbacks=[reg, record], logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    module = _encoder_module(config, reg)
    initial = copy.deepcopy(module.encoder.state_dict())
    trainer.fit(module, torch.utils.data.DataLoader(data, batch_size=4))

    encoder = BertModel(config).double().eval()
    sigmas = []
    for weights in (initial, record.weights):
        encoder.load_state_dict(weights)
        with torch.no_grad():
            hidden = encoder(**sample, output_hidden_states=True).hidden_states
        mask = sample["attention_mask"].unsqueeze(-1).double()
        pooled = torch.cat([(h * mask).sum(1) / mask.sum(1) for h in hidden[1:]]).numpy()  # layers 1..L
        sigmas.append(np.cov(pooled, rowvar=False))
    np.testing.assert_allclose(record.sigma.numpy(), sigmas[1], rtol=1e-10, atol=1e-12)
    assert not np.allclose(sigmas[0], sigmas[1])  # training moved it: the refresh is not a leftover
    assert reg.last_penalty is not None and -1.0 <= reg.last_penalty <= 0.0


def test_regularised_states_match_the_istar_experiment_selection():
    from isotropy.experiments._finetune.model import select_states

    g = torch.Generator().manual_seed(0)
    hidden = tuple(torch.randn(3, 5, 4, generator=g) for _ in range(4))
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 1, 0, 0, 0]])
    for level in ("token", "sentence"):
        for layers in ("all", "last", [1, 3]):
            pooled = {"pooling": "mean"} if level == "sentence" else {}
            ours = regularised_states(hidden, mask, layers=layers, level=level, **pooled)
            theirs = select_states(hidden, mask, layers=layers, level=level, pooling="mean")
            assert torch.equal(ours, theirs), (level, layers)


def test_cosreg_penalty_and_errors():
    from isotropy import cosine_similarity_mean

    g = torch.Generator().manual_seed(1)
    hidden = tuple(torch.randn(4, 3, 6, generator=g, dtype=torch.float64) for _ in range(3))
    mask = torch.ones(4, 3, dtype=torch.long)
    reg = HiddenStateRegulariser("cosreg", weight=0.5, level="sentence", layers="last")
    expected = 0.5 * cosine_similarity_mean(hidden[2].mean(1).numpy())
    assert float(reg.penalty(hidden, mask)) == pytest.approx(expected, rel=1e-12)
    with pytest.raises(IsotropyValueError, match="'method' parameter of HiddenStateRegulariser"):
        HiddenStateRegulariser("whitening")
    with pytest.raises(IsotropyValueError, match="'level' parameter"):
        HiddenStateRegulariser(level="word")
    with pytest.raises(IsotropyValueError, match="'shrinkage_sample' parameter"):
        HiddenStateRegulariser(shrinkage_sample=["only", "two"])


@pytest.mark.parametrize(("build", "name", "why"), [
    (lambda T: T.HFRegulariser("cosreg", batch_size=8), "batch_size", "CosReg has no shrinkage sample"),
    (lambda T: T.HFRegulariser("cosreg", max_length=64), "max_length", "CosReg has no shrinkage sample"),
    (lambda T: T.LightningRegulariser("cosreg", model="encoder"), "model", "CosReg has no shrinkage sample"),
    (lambda T: T.LightningRegulariser("cosreg", tokenizer=lambda text: text), "tokenizer", "CosReg has no"),
    (lambda T: T.HFRegulariser("cosreg", tokenizer=lambda text: text), "tokenizer", "CosReg has no"),
    (lambda T: T.HFRegulariser("istar", batch_size=8), "batch_size", "no shrinkage_sample was given"),
    (lambda T: T.LightningRegulariser("istar", model="encoder"), "model", "no shrinkage_sample was given"),
    (lambda T: T.HFRegulariser("istar", shrinkage_sample=_ENCODED, max_length=12), "max_length",
     "the shrinkage_sample given is already tokenised"),
    (lambda T: T.LightningRegulariser("istar", shrinkage_sample=_ENCODED, tokenizer=lambda text: text), "tokenizer",
     "the shrinkage_sample given is already tokenised"),
])
def test_options_that_embed_the_shrinkage_sample_are_refused_where_nothing_uses_them(build, name, why):
    import warnings

    import isotropy.training as T

    # before: taken and ignored (CosReg embeds no sample; an encoded sample is not tokenised), so the user believed
    # a batch size, a truncation, a tokenizer or a submodule in effect
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # I-STAR without a sample warns of Σ_S = I before the refusal
        with pytest.raises(IsotropyValueError, match=rf"^The '{name}' parameter of \w+Regulariser applies to "
                                                     rf"embedding the shrinkage_sample only, and {why}"):
            build(T)


def test_options_that_embed_the_shrinkage_sample_are_kept_where_they_are_used():
    from isotropy.training import HFRegulariser, LightningRegulariser

    reg = HFRegulariser("istar", shrinkage_sample=["a b", "c d", "e f"], batch_size=8, max_length=16,
                        tokenizer=lambda text: text)
    assert (reg.batch_size, reg.sample.max_length) == (8, 16)
    reg = LightningRegulariser("istar", shrinkage_sample=_ENCODED, batch_size=2, model="encoder")
    assert (reg.batch_size, reg.model) == (2, "encoder")


def test_regularised_states_refuse_a_pooling_at_the_token_level():
    hidden = (torch.zeros(2, 3, 4), torch.ones(2, 3, 4))
    with pytest.raises(IsotropyValueError, match=r"'pooling' parameter of regularised_states applies to "
                                                 r"level='sentence' only.*Got 'last'"):
        regularised_states(hidden, level="token", pooling="last")  # before: taken, and every token state kept
    assert regularised_states(hidden, level="sentence", pooling="last").shape == (2, 4)


_ENCODED = {"input_ids": torch.ones(3, 4, dtype=torch.long), "attention_mask": torch.ones(3, 4, dtype=torch.long)}


def test_pooling_cls_mean_and_last_token_with_left_or_right_padding():
    from isotropy.models import pool_hidden_states

    g = torch.Generator().manual_seed(2)
    hidden = torch.randn(2, 4, 3, generator=g)
    right = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    left = torch.tensor([[0, 1, 1, 1], [0, 0, 1, 1]])
    assert torch.equal(pool_hidden_states(hidden, right, pooling="last"), torch.stack([hidden[0, 2], hidden[1, 1]]))
    assert torch.equal(pool_hidden_states(hidden, left, pooling="last"), torch.stack([hidden[0, 3], hidden[1, 3]]))
    assert torch.equal(pool_hidden_states(hidden, right, pooling="first"), hidden[:, 0])
    expected = torch.stack([hidden[0, :3].mean(0), hidden[1, :2].mean(0)])
    assert torch.allclose(pool_hidden_states(hidden, right, pooling="mean"), expected, atol=1e-6)


# ---------------------------------------------------------------- an all-padding row names the training step
_NO_TOKEN = ("The 'attention_mask' parameter of {caller} has no real token in row 1 (all zeros): at level='token' "
             "that row has no token (no unmasked position) to regularise. Expected at least one 1 per row.")
_NO_SENTENCE = ("The 'attention_mask' parameter of {caller} has no real token in row 1 (all zeros): that row has no "
                "sentence vector. Expected at least one 1 per row.")
_STEP = (" This batch is the one of training step {step}; its rows are counted within that step's batch, in the "
         "order the data loader gave them.")


def _hf_trainer(tmp_path, texts, reg, *, blank=None, **training):
    """A Trainer of a tiny BERT on ``texts`` (labels alternating, batches of 2 in order, 3 steps) with ``reg`` as its
    loss and callback; ``blank``: the index of a row given an all-zero attention mask."""
    from transformers import (
        BertForSequenceClassification,
        BertTokenizerFast,
        DataCollatorWithPadding,
        Trainer,
        TrainingArguments,
    )

    bert = make_tiny_bert(tmp_path / "bert", n_layers=1, hidden_size=16)
    tokenizer = BertTokenizerFast.from_pretrained(bert)
    enc = tokenizer(texts)
    train = [{"input_ids": i, "attention_mask": [0] * len(m) if k == blank else m, "labels": k % 2}
             for k, (i, m) in enumerate(zip(enc["input_ids"], enc["attention_mask"]))]
    args = TrainingArguments(output_dir=str(tmp_path / "out"), per_device_train_batch_size=2, max_steps=3,
                             train_sampling_strategy="sequential", save_strategy="no", report_to=[], use_cpu=True,
                             seed=0, disable_tqdm=True, **training)
    return Trainer(model=BertForSequenceClassification.from_pretrained(bert, num_labels=2), args=args,
                   train_dataset=train, processing_class=tokenizer, data_collator=DataCollatorWithPadding(tokenizer),
                   compute_loss_func=reg, callbacks=[reg])


def test_hf_regulariser_says_a_bad_layer_index_without_the_batch(tmp_path):
    """`layers=[9]` of a 2-state model was refused with "This batch is the one of training step ...; its rows are
    counted within that step's batch": a sentence about rows, for a constructor argument (a trial). Said alone."""
    from isotropy.training import HFRegulariser

    reg = HFRegulariser("cosreg", weight=0.1, layers=[9])
    trainer = _hf_trainer(tmp_path, TEXTS, reg)
    with pytest.raises(IsotropyValueError) as info:
        trainer.train()
    assert "Got [9] instead" in str(info.value) and "This batch is" not in str(info.value)


@pytest.mark.parametrize(("accumulation", "step"), [
    (1, "global_step=1 (trainer.state.global_step as the step began)"),
    (2, "global_step=0 (trainer.state.global_step as the step began), micro-batch 2 of 2"),
])
def test_hf_regulariser_names_the_training_step_of_an_all_padding_row(tmp_path, accumulation, step):
    """The message named only "row 1" of the (shuffled) batch: a row the user cannot find in the dataset."""
    from isotropy.training import HFRegulariser

    reg = HFRegulariser("cosreg", weight=0.1)
    trainer = _hf_trainer(tmp_path, TEXTS, reg, blank=3, gradient_accumulation_steps=accumulation)  # row 1, batch 2
    with pytest.raises(IsotropyValueError) as info:
        trainer.train()
    assert str(info.value) == _NO_TOKEN.format(caller="HFRegulariser") + _STEP.format(step=step)


def test_lightning_regulariser_names_the_training_step_of_an_all_padding_row():
    import lightning as L
    from transformers import BertConfig, BertModel

    from isotropy.training import LightningRegulariser

    torch.manual_seed(0)
    config = BertConfig(vocab_size=19, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=16, max_position_embeddings=16)
    g = torch.Generator().manual_seed(3)
    data = [{"input_ids": torch.randint(5, 19, (6,), generator=g), "attention_mask": torch.full((6,), int(k != 5))}
            for k in range(8)]  # row 1 of the second batch of 4
    reg = LightningRegulariser("cosreg", weight=0.1, level="sentence")

    class Module(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.encoder = BertModel(config)

        def training_step(self, batch, batch_idx):
            out = self.encoder(**batch, output_hidden_states=True)
            return out.last_hidden_state.pow(2).mean() + reg.penalty(out.hidden_states, batch["attention_mask"])

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    trainer = L.Trainer(accelerator="cpu", max_epochs=1, callbacks=[reg], logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    with pytest.raises(IsotropyValueError) as info:
        trainer.fit(Module(), torch.utils.data.DataLoader(data, batch_size=4))
    assert str(info.value) == (_NO_SENTENCE.format(caller="LightningRegulariser")
                               + _STEP.format(step="global_step=1 (trainer.global_step), batch_idx=1"))


def test_regulariser_called_by_hand_names_only_the_row():
    # the pure path knows no training step: the message is pool_hidden_states' own
    hidden = tuple(torch.randn(3, 4, 8) for _ in range(2))
    mask = torch.ones(3, 4, dtype=torch.long)
    mask[1] = 0
    with pytest.raises(IsotropyValueError) as info:
        HiddenStateRegulariser("cosreg").penalty(hidden, mask)
    assert str(info.value) == _NO_TOKEN.format(caller="HiddenStateRegulariser")


def test_lightning_regulariser_starts_each_fit_from_its_own_weights_and_keeps_sigma_in_checkpoints(tmp_path):
    """A second fit from epoch 0 with the same regulariser computes Σ_S from its own module (a Σ_S kept for the
    epoch it was computed in must not carry over to another fit), and Lightning's checkpoints hold Σ_S and its epoch
    (read back by load_state_dict: test_lightning_regulariser_keeps_its_shrinkage_in_the_checkpoint_state)."""
    import lightning as L
    from transformers import BertConfig

    from isotropy.training import LightningRegulariser

    config = BertConfig(vocab_size=19, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=16, max_position_embeddings=16)
    g = torch.Generator().manual_seed(3)
    sample = {"input_ids": torch.randint(5, 19, (9, 6), generator=g), "attention_mask": torch.ones(9, 6).long()}
    data = [{"input_ids": torch.randint(5, 19, (6,), generator=g), "attention_mask": torch.ones(6, dtype=torch.long)}
            for _ in range(8)]
    reg = LightningRegulariser("istar", weight=1.0, shrinkage_sample=sample, model="encoder", level="sentence")

    def fit(seed, save=None):
        trainer = L.Trainer(accelerator="cpu", max_epochs=1, callbacks=[reg], logger=False, enable_checkpointing=False,
                            enable_progress_bar=False, enable_model_summary=False)
        torch.manual_seed(seed)
        module = _encoder_module(config, reg)
        first = LightningRegulariser("istar", shrinkage_sample=sample, model="encoder", level="sentence")
        expected = first.refresh_for_epoch(module.encoder, 0).shrinkage_cov  # Σ_S of this module's initial weights
        trainer.fit(module, torch.utils.data.DataLoader(data, batch_size=4))
        if save is not None:
            trainer.save_checkpoint(save)
        return expected

    expected = fit(0, save=tmp_path / "one.ckpt")
    assert reg.shrinkage_epoch == 0
    kept = torch.load(tmp_path / "one.ckpt", weights_only=True)["callbacks"]
    (state,) = [v for k, v in kept.items() if "LightningRegulariser" in k]
    assert state["epoch"] == 0 and torch.equal(state["shrinkage_cov"], reg.shrinkage_cov)
    assert torch.allclose(reg.shrinkage_cov, expected)
    expected = fit(1)  # another module from epoch 0: its own Σ_S, not the last fit's epoch-0 one
    assert torch.allclose(reg.shrinkage_cov, expected)


_SAMPLE_IDS = {"input_ids": torch.ones(3, 2, dtype=torch.long)}  # a shrinkage sample (Σ_S is loaded, not embedded)


def _identical_hidden_states(requires_grad=True):
    """hidden_states of 3 layers, batch 2 × seq 3 × 4 features, every state of layers 1 and 2 the same vector."""
    g = torch.Generator().manual_seed(0)
    row = torch.randn(4, generator=g, dtype=torch.float64)
    states = row.expand(2, 3, 4).clone().requires_grad_(requires_grad)
    return [torch.randn(2, 3, 4, generator=g, dtype=torch.float64), states, states * 1.0], states


@pytest.mark.parametrize("zeta, shrink", [(0.0, True), (0.2, False)], ids=["zeta-0", "identity"])
def test_istar_on_identical_states_where_undefined_is_a_zero_penalty_as_for_one_state(zeta, shrink):
    """A batch of identical states stopped training ("(numerically) identical samples ... undefined") where IsoScore*
    is undefined (ζ = 0; Σ_S = I, which would score them 1.0), while a batch of one state gives 0 with a warning: it
    now gives 0 too, without gradient, warned of once; the metric function still refuses it."""
    import warnings

    from isotropy import isoscore_star

    if shrink:
        reg = HiddenStateRegulariser("istar", zeta=zeta, weight=3.0, shrinkage_sample=_SAMPLE_IDS)
        reg.load_shrinkage_state({"shrinkage_cov": torch.eye(4, dtype=torch.float64), "epoch": 0}, source="a test")
    else:
        with pytest.warns(UserWarning, match="Σ_S = I"):
            reg = HiddenStateRegulariser("istar", zeta=zeta, weight=3.0)
    hidden, leaf = _identical_hidden_states()
    with pytest.warns(UserWarning, match=r"^HiddenStateRegulariser: a training batch gave 12 identical regularised "
                                         r"states \(level='token'\); their covariance is zero and IsoScore\* is "
                                         r"undefined with .*, so I-STAR's penalty is 0 for that batch, as for a batch "
                                         r"of one state\. Later such batches are not warned of\.$"):
        penalty = reg.penalty(hidden)
    assert float(penalty.detach()) == 0.0 and reg.last_penalty == 0.0 and penalty.requires_grad
    (penalty + (leaf * 0.0).sum()).backward()
    assert torch.equal(leaf.grad, torch.zeros_like(leaf))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per regulariser
        assert float(reg.penalty(_identical_hidden_states()[0]).detach()) == 0.0
    H = regularised_states(hidden, layers="all")
    with pytest.raises(IsotropyValueError, match="must have non-zero variance"):
        isoscore_star(H.detach(), shrinkage_cov=reg.shrinkage_cov, zeta=zeta)


def test_istar_on_identical_states_with_a_shrinkage_cov_is_minus_lambda_isoscore_of_sigma_s():
    """With ζ > 0 and a Σ_S the shrunk covariance ζ·Σ_S of identical states is defined: the penalty is −λ·IsoScore*
    from Algorithm 1 by hand (float64 eigenvalues of Σ_ζ, Σ_X = 0), with no gradient to the states, and no warning."""
    import warnings

    rng = np.random.default_rng(2)
    S = np.cov(rng.normal(size=(40, 4)) * [2.0, 1.0, 0.5, 0.25], rowvar=False)
    reg = HiddenStateRegulariser("istar", zeta=0.3, weight=-2.0, shrinkage_sample=_SAMPLE_IDS)
    reg.load_shrinkage_state({"shrinkage_cov": torch.tensor(S), "epoch": 0}, source="a test")
    hidden, leaf = _identical_hidden_states()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        penalty = reg.penalty(hidden)
    expected = _isoscore_star_eig(np.zeros((4, 4)), S, 0.3)  # Σ_X of identical rows is 0
    lam = np.linalg.eigvalsh(0.3 * S)  # the same by the paper's steps: normalised eigenvalues, defect, φ, ι
    lam_hat = 2.0 * lam / np.linalg.norm(lam)
    delta_sq = np.sum((lam_hat - 1) ** 2) / (2 * (4 - 2.0))
    assert expected == pytest.approx((4 * ((4 - delta_sq * 2.0) ** 2 / 16) - 1) / 3, rel=1e-12)
    assert float(penalty.detach()) == pytest.approx(2.0 * expected, rel=1e-12)  # −λ·IsoScore* with λ = −2
    penalty.backward()
    assert torch.equal(leaf.grad, torch.zeros_like(leaf))


def test_istar_penalty_of_an_ordinary_batch_compares_no_rows(monkeypatch):
    """The identical-states case is told only once IsoScore* has refused the batch: an ordinary batch is not
    compared row by row on every training step (an O(n·d) pass and, on a GPU, a device sync)."""
    from isotropy.training import regularisers

    calls = []
    monkeypatch.setattr(regularisers, "all_rows_equal", lambda X: calls.append(X) or False)
    with pytest.warns(UserWarning, match="Σ_S = I"):
        reg = HiddenStateRegulariser("istar", zeta=0.2, weight=1.0)
    g = torch.Generator().manual_seed(0)
    hidden = [torch.randn(2, 3, 4, generator=g, dtype=torch.float64) for _ in range(3)]
    assert float(reg.penalty(hidden).detach()) < 0.0
    assert calls == []


def test_logged_means_reduce_under_nccl_on_the_states_device(monkeypatch):
    """Under NCCL the logged sums are added across processes on the device of the states the regulariser was given,
    not on ``.cuda()``'s current device (device comes from the input; on this CPU-only torch ``.cuda()`` raised).
    The reduction is stood in for by one that doubles the sums, as two processes with the same sums would."""
    from isotropy import cosine_similarity_mean

    g = torch.Generator().manual_seed(2)
    hidden = tuple(torch.randn(5, 3, 4, generator=g, dtype=torch.float64) for _ in range(2))
    reg = HiddenStateRegulariser("cosreg", weight=0.5, level="sentence", layers="last")
    penalty = reg.penalty(hidden, torch.ones(5, 3, dtype=torch.long))
    assert float(penalty) == pytest.approx(0.5 * cosine_similarity_mean(hidden[1].mean(1).numpy()), rel=1e-12)
    reg._record(torch.tensor(2.0), penalty)
    reg._record(torch.tensor(4.0), penalty)
    seen = []

    def all_reduce(tensor):
        seen.append(tensor.device)
        tensor.mul_(2)

    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.distributed, "get_backend", lambda: "nccl")
    monkeypatch.setattr(torch.distributed, "all_reduce", all_reduce)
    means = reg.logged_means()
    assert seen == [hidden[1].device]
    assert means == pytest.approx({LOG_KEYS[0]: 3.0, LOG_KEYS[1]: float(penalty)}, rel=1e-12)


@pytest.mark.parametrize("cls", ["HiddenStateRegulariser", "HFRegulariser", "LightningRegulariser"])
def test_istar_of_one_state_at_zeta_one_with_a_shrinkage_cov_is_minus_lambda_isoscore_of_sigma_s(cls):
    """At ζ = 1 with a Σ_S, IsoScore* of one state is defined (Σ_ζ = Σ_S alone): isoscore_star and IStarLoss give
    IsoScore(Σ_S) for a one-row batch, while the regulariser gave it a penalty of 0 with a warning ("needs at least
    2"), a logged penalty unlike the function's. Now −λ·IsoScore(Σ_S), no warning, still no gradient to the state.
    Reference: the closed form ((tr Σ_S)² / ‖Σ_S‖²_F − 1) / (d − 1), and the `isoscore` package 2.0.1 on the sample
    whose covariance Σ_S is (it computes √d in float32: 1e-6). Below ζ = 1 the batch keeps 0 and its warning."""
    import warnings
    from types import SimpleNamespace

    from IsoScore import IsoScore as pkg

    from isotropy import isoscore_star, training
    from isotropy.torch import IStarLoss

    make = getattr(training, cls)
    sample = np.random.default_rng(11).normal(size=(80, 4)) * [3.0, 1.5, 1.0, 0.5]
    S = np.cov(sample, rowvar=False)
    expected = (np.trace(S) ** 2 / np.sum(S * S) - 1) / 3
    assert float(pkg.IsoScore(sample)) == pytest.approx(expected, abs=1e-6)
    assert 0.05 < expected < 0.95
    g = torch.Generator().manual_seed(4)
    leaf = torch.randn(1, 3, 4, generator=g, dtype=torch.float64, requires_grad=True)
    hidden = (torch.randn(1, 3, 4, generator=g, dtype=torch.float64), leaf * 1.0)  # 1 layer, a one-row batch
    reg = make("istar", zeta=1.0, weight=-2.0, shrinkage_sample=_SAMPLE_IDS, level="sentence", layers="last")
    reg.load_shrinkage_state({"shrinkage_cov": torch.tensor(S), "epoch": 0}, source="a test")
    if cls == "LightningRegulariser":  # a penalty with gradients belongs to a training batch of the Trainer
        reg.on_train_batch_start(SimpleNamespace(global_step=0), None, None, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        penalty = reg.penalty(hidden)
    H = reg.states(hidden).detach()
    assert H.shape == (1, 4)
    assert isoscore_star(H.numpy(), shrinkage_cov=S, zeta=1.0) == pytest.approx(expected, rel=1e-12)
    assert float(penalty.detach()) == pytest.approx(2.0 * expected, rel=1e-12)  # −λ·IsoScore(Σ_S) with λ = −2
    assert reg.last_penalty == float(penalty.detach())
    if cls == "LightningRegulariser":
        assert reg._batch_penalty == float(penalty.detach())  # the batch's penalty, as it logs it
    loss = IStarLoss(zeta=1.0, weight=-2.0, shrinkage_cov=torch.tensor(S))
    assert float(loss(H)) == pytest.approx(float(penalty.detach()), rel=1e-12)
    penalty.backward()
    assert torch.equal(leaf.grad, torch.zeros_like(leaf))
    below = make("istar", zeta=0.9, weight=-2.0, shrinkage_sample=_SAMPLE_IDS, level="sentence", layers="last")
    below.load_shrinkage_state({"shrinkage_cov": torch.tensor(S), "epoch": 0}, source="a test")
    if cls == "LightningRegulariser":
        below.on_train_batch_start(SimpleNamespace(global_step=0), None, None, 0)
    with pytest.warns(UserWarning, match="a training batch gave 1 regularised state"):
        assert float(below.penalty(hidden).detach()) == 0.0 and below.last_penalty == 0.0


def test_hf_regulariser_warning_in_a_trainer_names_the_users_train_line(tmp_path):
    """A warning given inside the Trainer's loss (here: a last batch of one row, whose penalty is 0) had a fixed
    stacklevel=2 and named a line of transformers/trainer.py, which the user can neither read nor filter by; it now
    names the user's ``trainer.train()`` line (_utils/warn.user_stacklevel walks out of transformers and accelerate)."""
    import inspect
    import warnings

    from isotropy.training import HFRegulariser

    reg = HFRegulariser("cosreg", weight=0.1, level="sentence")
    trainer = _hf_trainer(tmp_path, TEXTS[:5], reg)  # batches of 2, 2 and 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = inspect.currentframe().f_lineno + 1
        trainer.train()
    ours = [w for w in caught if "a training batch gave 1 regularised state" in str(w.message)]
    assert [(w.filename, w.lineno) for w in ours] == [(__file__, line)]


def test_a_refused_model_or_task_loss_comes_without_the_identity_shrinkage_warning():
    # LightningRegulariser('istar', model=3) warned that Σ_S is the identity (no shrinkage_sample) and then refused
    # model: a warning about a regulariser that was never made (a user trial); the refusal alone now
    import warnings

    from isotropy.training import HFRegulariser, LightningRegulariser

    for make, error in ((lambda: LightningRegulariser("istar", weight=1.0, model=3),
                         ("The 'model' parameter of LightningRegulariser must be None, an attribute name or a callable. "
                         "Got int instead.")),
                        (lambda: HFRegulariser("istar", weight=1.0, task_loss=3),
                         "The 'task_loss' parameter of HFRegulariser must be callable or None. Got int instead.")):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(TypeError) as caught:
                make()
        assert str(caught.value) == error
