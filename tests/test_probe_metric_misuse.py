"""Misuses from a user trial that were taken without a word or refused in misleading terms.

A misnamed mask in a dict probe (``"attention_masks"``, ``"mask"``) was passed to the model, which ignores it, and
the mean pooling counted the padding; a metric instance where a factory goes failed at the first measurement with
an error about a 0-d ``X``; ``merge_state`` of metrics built with other settings merged (TwoNN of another seed,
RogueDimensionShare of another k); HFGeometryCallback's docstring said the states were summed across processes.
"""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from isotropy import IsotropyValueError, isoscore, isoscore_star, twonn_dimension


def _bert():
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    return BertModel(BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=32, max_position_embeddings=16)).eval()


def _padded(rows=24, seq=8):
    # more rows than the model's 16 features: the probe's values are not bounded by its span (a warning)
    """Token ids and a mask whose even rows are padded from position 4 on."""
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1, 30, (rows, seq), generator=g)
    mask = torch.ones(rows, seq, dtype=torch.long)
    mask[::2, 4:] = 0
    return ids.masked_fill(mask == 0, 0), mask


def _mask_message(key, caller="GeometryProbe", name="probe"):
    return (f"The '{name}' parameter of {caller} must have the mask of its padding as 'attention_mask' (the pooling "
            f"and the model read that key; without it every position counts as a token). Got {key!r} and no "
            f"'attention_mask' instead. Did you mean 'attention_mask'?")


# ----------------------------------------------------------------------------------------------- 1. the mask's key
@pytest.mark.parametrize("key", ["attention_masks", "attn_mask", "mask", "input_mask", "AttentionMask",
                                 "attention-mask", "padding_mask", "masks"])
def test_a_misnamed_mask_is_refused_with_attention_mask_suggested(key):
    from isotropy.training import GeometryProbe

    ids, mask = _padded()
    with pytest.raises(IsotropyValueError) as info:
        GeometryProbe({"input_ids": ids, key: mask}, layers=[2])
    assert str(info.value) == _mask_message(key)


def test_a_misnamed_mask_is_refused_by_the_callback_and_in_the_shrinkage_sample():
    from isotropy.training import GeometryProbe, HFGeometryCallback

    ids, mask = _padded()
    with pytest.raises(IsotropyValueError) as info:
        HFGeometryCallback({"input_ids": ids, "mask": mask})
    assert str(info.value) == _mask_message("mask", caller="HFGeometryCallback")
    with pytest.raises(IsotropyValueError) as info:
        GeometryProbe({"input_ids": ids, "attention_mask": mask}, shrinkage_sample={"input_ids": ids, "input_mask": mask})
    assert str(info.value) == _mask_message("input_mask", name="shrinkage_sample")


def test_the_mask_given_as_attention_mask_pools_without_the_padding():
    """The value the misnamed mask lost: with the mask, the mean is over the real tokens only (not over all ones)."""
    from isotropy.training import GeometryProbe

    ids, mask = _padded()
    model = _bert()
    with torch.no_grad():
        states = model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states[2].double()
    pooled = (states * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
    value = GeometryProbe({"input_ids": ids, "attention_mask": mask}, layers=[2], metrics=["isoscore"]).measure(model)
    assert value["geometry/isoscore/layer_2"] == pytest.approx(isoscore(pooled.numpy()), rel=1e-6)
    # beside attention_mask, a key named like a mask is the user's own (XLNet's input_mask): taken, not refused
    probe = GeometryProbe({"input_ids": ids, "attention_mask": mask, "mask": mask}, layers=[2])
    assert sorted(probe.rows.encoded) == ["attention_mask", "input_ids", "mask"]


def test_other_model_inputs_are_not_taken_for_the_mask():
    from isotropy.training import GeometryProbe

    ids, _ = _padded()
    keys = ("token_type_ids", "position_ids", "special_tokens_mask", "decoder_attention_mask", "global_attention_mask",
            "encoder_attention_mask", "cross_attention_mask", "pixel_mask", "token_mask", "labels")
    probe = GeometryProbe({"input_ids": ids, **{key: torch.zeros_like(ids) for key in keys}}, layers=[2])
    assert sorted(probe.rows.encoded) == sorted(("input_ids", "attention_mask", *keys))
    # and a probe of unpadded rows needs no mask: all ones, measured as before
    positions = torch.arange(ids.shape[1]).expand_as(ids)
    model = _bert()
    plain = GeometryProbe({"input_ids": ids}, layers=[2], metrics=["isoscore"]).measure(model)
    with_positions = GeometryProbe({"input_ids": ids, "position_ids": positions}, layers=[2],
                                   metrics=["isoscore"]).measure(model)
    assert with_positions == plain


# --------------------------------------------------------------------------------- 2. a metric instance, not a factory
def _instance_message(cls, name, example, caller="GeometryProbe"):
    return (f"The 'metrics' parameter of {caller} must map names to factories factory(n_features) that return a new "
            f"metric (one per layer and measurement), not to a metric instance. Got an instance of {cls} for {name!r} "
            f"instead; pass a factory such as {example} (with any options the instance had).")


def test_a_metric_instance_in_place_of_a_factory_is_refused_when_built():
    from torchmetrics.aggregation import MeanMetric

    from isotropy.training import GeometryProbe, HFGeometryCallback, IsoScore, TwoNNDimension

    ids, mask = _padded()
    probe = {"input_ids": ids, "attention_mask": mask}
    with pytest.raises(TypeError) as info:
        GeometryProbe(probe, metrics={"foo": IsoScore()})
    assert str(info.value) == _instance_message("IsoScore", "foo", "lambda d: IsoScore(n_features=d)")
    with pytest.raises(TypeError) as info:
        HFGeometryCallback(probe, metrics={"iso": lambda d: IsoScore(n_features=d), "twonn": TwoNNDimension()})
    assert str(info.value) == _instance_message("TwoNNDimension", "twonn", "lambda d: TwoNNDimension(n_features=d)",
                                                caller="HFGeometryCallback")
    with pytest.raises(TypeError) as info:  # a torchmetrics metric without n_features
        GeometryProbe(probe, metrics={"mean": MeanMetric()})
    assert str(info.value) == _instance_message("MeanMetric", "mean", "lambda d: MeanMetric()")


def test_the_factory_the_message_suggests_measures():
    from isotropy.training import GeometryProbe, IsoScore

    ids, mask = _padded()
    probe = {"input_ids": ids, "attention_mask": mask}
    model = _bert()
    by_factory = GeometryProbe(probe, layers=[2], metrics={"isoscore": lambda d: IsoScore(n_features=d)}).measure(model)
    by_name = GeometryProbe(probe, layers=[2], metrics=["isoscore"]).measure(model)
    assert by_factory == by_name


# -------------------------------------------------------------------------------- 3. merge_state of other settings
def _data(seed, n=300, d=5):
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _settings_message(cls, what, settings):
    return (f"{cls}.merge_state: the incoming metric has other settings ({what}); merge {cls} metrics built with the "
            f"same {settings}.")


_TWONN = "max_samples, random_state, discard_fraction, method and metric"


def _other_settings():
    from isotropy.training import EffectiveRank, IsoScoreStar, RankMe, RogueDimensionShare, TwoNNDimension

    S = torch.cov(_data(9).T)
    return [
        (lambda: TwoNNDimension(max_samples=100, random_state=0), lambda: TwoNNDimension(max_samples=100, random_state=1),
         "TwoNNDimension", "random_state 1, where this metric has 0", _TWONN),
        (lambda: TwoNNDimension(max_samples=100), lambda: TwoNNDimension(max_samples=200),
         "TwoNNDimension", "max_samples 200, where this metric has 100", _TWONN),
        (lambda: TwoNNDimension(max_samples=100), lambda: TwoNNDimension(),
         "TwoNNDimension", "max_samples None, where this metric has 100", _TWONN),
        (lambda: TwoNNDimension(), lambda: TwoNNDimension(method="mle"),
         "TwoNNDimension", "method 'mle', where this metric has 'linear'", _TWONN),
        (lambda: TwoNNDimension(), lambda: TwoNNDimension(discard_fraction=0.2),
         "TwoNNDimension", "discard_fraction 0.2, where this metric has 0.1", _TWONN),
        (lambda: TwoNNDimension(), lambda: TwoNNDimension(metric="cosine"),
         "TwoNNDimension", "metric 'cosine', where this metric has 'euclidean'", _TWONN),
        (lambda: RogueDimensionShare(n_dimensions=1), lambda: RogueDimensionShare(n_dimensions=3),
         "RogueDimensionShare", "n_dimensions 3, where this metric has 1", "n_dimensions"),
        (lambda: EffectiveRank(), lambda: EffectiveRank(normalize=True),
         "EffectiveRank", "normalize True, where this metric has False", "center and normalize"),
        (lambda: EffectiveRank(), lambda: RankMe(center=True),  # a RankMe's center into an EffectiveRank
         "EffectiveRank", "center True, where this metric has False", "center and normalize"),
        (lambda: RankMe(), lambda: RankMe(epsilon=1e-6),
         "RankMe", "epsilon 1e-06, where this metric has 1e-07", "epsilon, center and normalize"),
        (lambda: IsoScoreStar(shrinkage_cov=S, zeta=0.3), lambda: IsoScoreStar(shrinkage_cov=S, zeta=0.5),
         "IsoScoreStar", "zeta 0.5, where this metric has 0.3", "zeta and shrinkage_cov"),
        (lambda: IsoScoreStar(shrinkage_cov=S, zeta=0.3), lambda: IsoScoreStar(shrinkage_cov=2 * S, zeta=0.3),
         "IsoScoreStar", "another shrinkage_cov matrix", "zeta and shrinkage_cov"),
    ]


@pytest.mark.parametrize("case", range(12))
def test_merge_state_refuses_another_instance_of_other_settings(case):
    mine, theirs, cls, what, settings = _other_settings()[case]
    first, second = mine(), theirs()
    first.update(_data(1)[:150])
    second.update(_data(1)[150:])
    kept = _rows_kept(first)
    with pytest.raises(IsotropyValueError) as info:
        first.merge_state(second)
    assert str(info.value) == _settings_message(cls, what, settings)
    assert _rows_kept(first) == kept  # nothing merged


def _rows_kept(metric):
    state = metric.metric_state
    return int(state["n_samples"].sum()) if "n_samples" in state else sum(int(rows.shape[0]) for rows in state["rows"])


def test_settings_not_in_effect_and_state_dicts_still_merge():
    from isotropy.training import IsoScore, IsoScoreStar, RogueDimensionShare, TwoNNDimension

    X = _data(2)
    # without max_samples the seed chooses nothing: every row is kept
    first, second = TwoNNDimension(random_state=0), TwoNNDimension(random_state=7)
    first.update(X[:150])
    second.update(X[150:])
    first.merge_state(second)
    assert float(first.compute()) == pytest.approx(twonn_dimension(X.numpy()), rel=1e-10)
    # at zeta = 0 Σ_S is unused
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        first, second = IsoScoreStar(shrinkage_cov=torch.eye(5), zeta=0.0), IsoScoreStar(zeta=0.0)
    first.update(X[:150])
    second.update(X[150:])
    first.merge_state(second)
    assert float(first.compute()) == pytest.approx(isoscore_star(X.numpy(), zeta=0.0), rel=1e-10)
    # IsoScore's rows into IsoScoreStar: it has no settings to compare; the receiver's apply to all rows
    S = torch.cov(_data(9).T)
    star, plain = IsoScoreStar(shrinkage_cov=S, zeta=0.3), IsoScore()
    star.update(X[:150])
    plain.update(X[150:])
    star.merge_state(plain)
    assert float(star.compute()) == pytest.approx(isoscore_star(X.numpy(), shrinkage_cov=S.numpy(), zeta=0.3),
                                                  rel=1e-10)
    # a metric_state dict carries no settings: merged as the rows it holds (of a shared direction: a defined share)
    Y = X + torch.tensor([0.0, 0.0, 3.0, 0.0, 0.0], dtype=torch.float64)
    first, second = RogueDimensionShare(n_dimensions=1), RogueDimensionShare(n_dimensions=1)
    first.update(Y[:150])
    second.update(Y[150:])
    first.merge_state(second.metric_state)
    whole = RogueDimensionShare(n_dimensions=1)
    whole.update(Y)
    assert float(first.compute()) == pytest.approx(float(whole.compute()), rel=1e-10)


# ------------------------------------------------------------------------------- 4. the callback's docstring is true
def test_the_callback_docstring_says_how_the_states_are_reduced():
    from torchmetrics.utilities.data import dim_zero_cat

    from isotropy.metrics.table import metric_names
    from isotropy.training import HFGeometryCallback
    from isotropy.training.metrics import metric_from_name

    doc = " ".join(HFGeometryCallback.__doc__.split())
    assert "summed" not in doc
    assert ('states of every process are gathered and merged in ``compute`` (the table\'s metrics: gathered with '
            '``dist_reduce_fx="cat"``, merged exactly; a factory\'s metric by its own reduction)') in doc
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # isoscore_star without shrinkage_cov
        for name in metric_names(torchmetric=True):
            reductions = metric_from_name(name)._reductions
            assert reductions and all(fn is dim_zero_cat for fn in reductions.values()), name
