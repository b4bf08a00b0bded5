"""Input checks of the training integration (probe, regularisers, torchmetrics wrappers): one-line errors that name
the argument, the value given and what is expected, raised where the mistake is made."""

import re

import numpy as np
import pytest

from isotropy import IsotropyValueError


def test_regulariser_method_suggests_the_closest_name():
    """HFRegulariser("isstar") listed the methods without the did-you-mean every other name of the toolkit gets."""
    from isotropy.training import HFRegulariser, HiddenStateRegulariser

    with pytest.raises(IsotropyValueError) as info:
        HFRegulariser("isstar")
    assert str(info.value) == ("The 'method' parameter of HFRegulariser must be one of {'istar', 'cosreg'}. "
                               "Got 'isstar' instead. Did you mean 'istar'?")
    with pytest.raises(IsotropyValueError) as info:
        HiddenStateRegulariser("zzz")
    assert str(info.value) == ("The 'method' parameter of HiddenStateRegulariser must be one of {'istar', 'cosreg'}. "
                               "Got 'zzz' instead.")


def test_merge_state_of_another_metric_names_both_classes():
    """IsoScore().merge_state(MeanCosine()) raised a bare KeyError: 'mean'."""
    import torch

    from isotropy.training import IsoScore, MeanCosine, TwoNNDimension

    X = torch.randn(10, 4, generator=torch.Generator().manual_seed(0))
    iso, cos, twonn = IsoScore(), MeanCosine(), TwoNNDimension()
    for metric in (iso, cos, twonn):
        metric.update(X)
    with pytest.raises(IsotropyValueError) as info:
        iso.merge_state(cos)
    assert str(info.value) == ("IsoScore.merge_state: the incoming state comes from a different metric (MeanCosine); "
                               "merge the states of two IsoScore metrics.")
    with pytest.raises(IsotropyValueError) as info:
        twonn.merge_state(iso)
    assert str(info.value) == ("TwoNNDimension.merge_state: the incoming state comes from a different metric "
                               "(IsoScore); merge the states of two TwoNNDimension metrics.")
    with pytest.raises(IsotropyValueError) as info:
        cos.merge_state(iso.metric_state)
    assert str(info.value) == (
        "MeanCosine.merge_state: the incoming state comes from a different metric (keys ['exponent', 'mean', "
        "'n_samples', 'scatter', 'shift'], where MeanCosine has ['n_samples', 'unit_sq_sum', 'unit_sum']); merge the "
        "states of two MeanCosine metrics.")
    with pytest.raises(TypeError) as info:
        iso.merge_state([1, 2])
    assert str(info.value) == ("The 'incoming_state' parameter of IsoScore.merge_state must be another IsoScore or its "
                               "metric_state dict. Got list instead.")
    iso.merge_state(IsoScore())  # the same metric, empty: allowed
    # a metric that keeps the same statistics merges as its state dict does (it was refused as an object only)
    from isotropy.training import IsoScoreStar

    star, by_dict = IsoScoreStar(shrinkage_cov=torch.eye(4)), IsoScoreStar(shrinkage_cov=torch.eye(4))
    star.merge_state(iso)
    by_dict.merge_state(iso.metric_state)
    assert float(star.compute()) == float(by_dict.compute())


def test_isoscore_star_width_is_said_to_come_from_shrinkage_cov():
    """IsoScoreStar(shrinkage_cov=eye(5)) fed 8 columns said 'like n_features', which the user never passed."""
    import torch

    from isotropy.training import IsoScoreStar

    metric = IsoScoreStar(shrinkage_cov=torch.eye(5))
    with pytest.raises(IsotropyValueError) as info:
        metric.update(torch.randn(10, 8))
    assert str(info.value) == ("The 'X' parameter of IsoScoreStar.update must have 5 features (columns), like "
                               "shrinkage_cov's shape (5, 5). Got 8 instead.")
    metric = IsoScoreStar(shrinkage_cov=torch.eye(5), n_features=5)  # given: named as given
    with pytest.raises(IsotropyValueError) as info:
        metric.update(torch.randn(10, 8))
    assert str(info.value) == ("The 'X' parameter of IsoScoreStar.update must have 5 features (columns), like "
                               "n_features. Got 8 instead.")


@pytest.mark.parametrize("options, message", [
    ({"method": "lineer"}, ("The 'method' parameter of TwoNNDimension must be one of {'linear', 'mle'}. Got 'lineer' "
                           "instead.")),
    ({"metric": "cosin"}, ("The 'metric' parameter of TwoNNDimension must be one of {'euclidean', 'cosine'}. Got "
                          "'cosin' instead.")),
    ({"discard_fraction": 1.0}, ("The 'discard_fraction' parameter of TwoNNDimension must be a float in the range "
                                "[0, 1). Got 1.0 instead.")),
    ({"discard_fraction": 0.0}, ("The 'discard_fraction' parameter of TwoNNDimension must be above 0 with "
                                "method='linear' (the fit leaves out at least the largest ratio, whose -log(1 - i/N) "
                                "is infinite). Got 0.0 instead; or use method='mle'.")),
])
def test_twonn_dimension_options_are_refused_when_made(options, message):
    """TwoNNDimension(method='lineer') was made, and failed only at compute() naming twonn_dimension."""
    from isotropy.training import TwoNNDimension

    with pytest.raises(IsotropyValueError) as info:
        TwoNNDimension(**options)
    assert str(info.value) == message


_HIDDEN = ("The 'hidden_states' parameter of {} must be a sequence of (batch, seq, d) tensors, one per layer "
           "(outputs.hidden_states of a model called with output_hidden_states=True). Got ")


@pytest.mark.parametrize("cls", ["HiddenStateRegulariser", "LightningRegulariser"])
def test_regulariser_penalty_names_wrong_hidden_states(cls):
    """penalty(None, mask) said "object of type 'NoneType' has no len()"; one layer or the whole output gave raw
    IndexError/AttributeError-like errors; the mask checks are one line."""
    import torch

    from isotropy import training

    reg = getattr(training, cls)("cosreg")
    H = tuple(torch.randn(2, 5, 4, generator=torch.Generator().manual_seed(i)) for i in range(3))
    mask = torch.ones(2, 5, dtype=torch.long)
    cases = [
        (None, TypeError, "None instead: call the model with output_hidden_states=True."),
        (H[-1], TypeError, "one tensor of shape (2, 5, 4) instead; pass the whole tuple, not one layer of it."),
        ({"logits": H[0], "hidden_states": H}, TypeError,
         "the model's output (dict) instead; pass its hidden_states (outputs.hidden_states)."),
        ((), IsotropyValueError, "an empty tuple instead."),
        ((H[0], H[1][0]), IsotropyValueError, "shape (5, 4) at index 1 instead."),
    ]
    for hidden_states, error, got in cases:
        with pytest.raises(error) as info:
            reg.penalty(hidden_states, mask)
        assert str(info.value) == _HIDDEN.format(cls) + got
    for bad, shape in ((torch.ones(2, 4), "(2, 4)"), (torch.ones(3, 5), "(3, 5)")):
        with pytest.raises(IsotropyValueError) as info:
            reg.penalty(H, bad)
        assert str(info.value) == (f"The 'attention_mask' parameter of {cls} must have shape (2, 5) (batch, seq of "
                                   f"'hidden_states'). Got shape {shape} instead.")
    assert torch.isfinite(reg.penalty(list(H), mask))


def _ids(n=6, seq=8):
    import torch

    return torch.randint(5, 50, (n, seq), generator=torch.Generator().manual_seed(0))


def test_probe_takes_arrays_and_lists_as_tensors():
    """A numpy mask was dropped (lengths [8]*6 where a torch mask gives [5]*6); numpy input_ids were refused."""
    import torch

    from isotropy.training import GeometryProbe

    ids = _ids()
    mask = torch.ones(6, 8, dtype=torch.long)
    mask[:, 5:] = 0
    assert GeometryProbe({"input_ids": ids, "attention_mask": mask}).rows.lengths == [5] * 6
    assert GeometryProbe({"input_ids": ids, "attention_mask": mask.numpy()}).rows.lengths == [5] * 6
    probe = GeometryProbe({"input_ids": ids.numpy(), "attention_mask": mask.tolist(),
                           "token_type_ids": np.zeros((6, 8), dtype=np.int64)})
    assert probe.rows.lengths == [5] * 6
    assert all(isinstance(v, torch.Tensor) for v in probe.rows.encoded.values())
    assert probe.rows.encode([0, 1])["attention_mask"].shape == (2, 5)


@pytest.mark.parametrize("value, error, message", [
    ("ones(4, 8)", IsotropyValueError,
     ("The 'probe' parameter of GeometryProbe must have 'attention_mask' of shape (6, 8) like 'input_ids'. Got shape "
     "(4, 8) instead.")),
    ("ones(6, 7)", IsotropyValueError,
     ("The 'probe' parameter of GeometryProbe must have 'attention_mask' of shape (6, 8) like 'input_ids'. Got shape "
     "(6, 7) instead.")),
    ("none", TypeError,
     ("The 'probe' parameter of GeometryProbe must have 'attention_mask' as a tensor, array or nested list of numbers "
     "of shape (6, 8) like 'input_ids'. Got NoneType instead.")),
    ("ragged", TypeError,
     ("The 'probe' parameter of GeometryProbe must have 'attention_mask' as a tensor, array or nested list of numbers "
     "of shape (6, 8) like 'input_ids'. Got ragged rows instead.")),
])
def test_probe_refuses_a_mask_of_the_wrong_shape_or_type(value, error, message):
    """A (4, 8) mask for 6 rows was dropped (all ones used instead); a (6, 7) one silently cut the last column."""
    import torch

    from isotropy.training import GeometryProbe

    mask = {"ones(4, 8)": torch.ones(4, 8), "ones(6, 7)": torch.ones(6, 7, dtype=torch.long), "none": None,
            "ragged": [[1] * 8] * 5 + [[1] * 7]}[value]
    with pytest.raises(error) as info:
        GeometryProbe({"input_ids": _ids(), "attention_mask": mask})
    assert str(info.value) == message


def test_probe_names_the_problem_of_input_ids_and_other_keys():
    """1-D input_ids said "Got keys ['input_ids'] instead"; a token_type_ids or per-row value of another shape was
    dropped without a word."""
    import torch

    from isotropy.training import GeometryProbe

    start = "The 'probe' parameter of GeometryProbe must have "
    cases = [
        ({"input_ids": _ids()[0]}, IsotropyValueError,
         "'input_ids' of integer token ids of shape (n_rows, seq). Got shape (8,) instead."),
        ({"input_ids": _ids().float()}, IsotropyValueError,
         "'input_ids' of integer token ids of shape (n_rows, seq). Got dtype torch.float32 instead."),
        ({"input_ids": "hello"}, TypeError,
         "'input_ids' as a tensor, array or nested list of numbers of shape (n_rows, seq). Got str instead."),
        ({"input_ids": _ids(), "token_type_ids": torch.zeros(6, 9)}, IsotropyValueError,
         "'token_type_ids' of shape (6, 8) like 'input_ids'. Got shape (6, 9) instead."),
        ({"input_ids": _ids(), "labels": torch.zeros(5)}, IsotropyValueError,
         "'labels' of shape (6, ...): one row per row of 'input_ids'. Got shape (5,) instead."),
    ]
    for probe, error, got in cases:
        with pytest.raises(error) as info:
            GeometryProbe(probe)
        assert str(info.value) == start + got


def test_probe_refuses_an_all_padding_row_when_built_naming_its_row():
    """A mask row of zeros was refused only at the first measurement, as row 23 (its place after sorting by length)
    of pool_hidden_states' attention_mask."""
    import torch

    from isotropy.training import GeometryProbe, HFGeometryCallback

    mask = torch.ones(24, 8, dtype=torch.long)
    mask[3] = 0
    with pytest.raises(IsotropyValueError) as info:
        GeometryProbe({"input_ids": _ids(24), "attention_mask": mask})
    assert str(info.value) == ("The 'attention_mask' parameter of GeometryProbe's probe has no real token in row 3 "
                               "(all zeros): that row has no sentence vector. Expected at least one 1 per row.")
    with pytest.raises(IsotropyValueError) as info:
        HFGeometryCallback({"input_ids": _ids(24), "attention_mask": mask.numpy()})
    assert str(info.value).startswith("The 'attention_mask' parameter of HFGeometryCallback's probe has no real "
                                      "token in row 3 (all zeros)")
    mask[3] = 1
    mask[5, 2] = 2
    with pytest.raises(IsotropyValueError) as info:
        GeometryProbe({"input_ids": _ids(4), "attention_mask": mask[:4]},
                      shrinkage_sample={"input_ids": _ids(24), "attention_mask": mask})
    assert str(info.value) == ("The 'attention_mask' parameter of GeometryProbe's shrinkage_sample must hold only 0s "
                               "and 1s. Got 2 at row 5, position 2 instead.")


@pytest.mark.parametrize("probe, error, got", [
    ([], IsotropyValueError, "an empty list"),
    ([[1, 2, 3], [4, 5, 6]], TypeError, "list at index 0"),
    (["a", None, "c"], TypeError, "NoneType at index 1"),
])
def test_probe_texts_name_what_is_wrong(probe, error, got):
    """[], a list of id lists and a list with None all said 'Got list instead'."""
    from isotropy.training import GeometryProbe

    with pytest.raises(error) as info:
        GeometryProbe(probe)
    assert str(info.value) == ("The 'probe' parameter of GeometryProbe must be a non-empty list of texts or a dict of "
                               f"tensors with 'input_ids'. Got {got} instead.")


@pytest.mark.parametrize("kind", ["tensor", "ids", "texts_2d"])
def test_a_probe_of_an_array_is_a_type_error_that_says_what_to_pass(kind):
    """A tensor of token ids was refused with a ValueError (IsotropyValueError) for what is a wrong type, without
    saying what to pass instead. (A 1-d array of texts is taken: test_a_probe_of_a_1d_array_or_series_of_texts...)"""
    import torch

    from isotropy.training import GeometryProbe, HFRegulariser

    probe = {"tensor": torch.ones(4, 6, dtype=torch.long), "ids": np.ones((4, 6), dtype=np.int64),
             "texts_2d": np.array([["a cat", "a dog"], ["the mat", "a hat"]])}[kind]
    hint = ("a 1-d array or a list of its texts" if kind == "texts_2d" else
            "token ids as a dict, {'input_ids': probe}")
    start = "The 'probe' parameter of GeometryProbe must be a non-empty list of texts or a dict of tensors with "
    with pytest.raises(TypeError) as info:
        GeometryProbe(probe)
    assert str(info.value) == f"{start}'input_ids'. Got {type(probe).__name__} instead; pass {hint}."
    with pytest.raises(TypeError) as info:
        HFRegulariser("istar", shrinkage_sample=probe)
    assert str(info.value).startswith("The 'shrinkage_sample' parameter of HFRegulariser must be a non-empty list")



def test_probe_refuses_blank_texts_naming_the_index(tmp_path):
    """Empty and whitespace-only texts were taken under an encoder's tokenizer: each became a [CLS] [SEP] vector.
    Refused when the probe (or the regulariser's sample) is built."""
    from _tiny_models import make_tiny_bert
    from transformers import AutoModel, AutoTokenizer

    from isotropy.training import GeometryProbe, HiddenStateRegulariser

    directory = make_tiny_bert(tmp_path, n_layers=2, hidden_size=16)
    tokenizer, model = AutoTokenizer.from_pretrained(directory), AutoModel.from_pretrained(directory)
    with pytest.raises(IsotropyValueError) as info:
        GeometryProbe(["a cat", " \t", "a dog", ""], metrics=("isoscore",))
    assert str(info.value) == ("The 'probe' parameter of GeometryProbe must have texts that are not blank. Got 2 "
                               "blank (the first: ' \\t', at index 1); remove them.")
    with pytest.raises(IsotropyValueError) as info:
        HiddenStateRegulariser(shrinkage_sample=["a cat", "a dog", "a bird", "\n"])
    assert str(info.value) == ("The 'shrinkage_sample' parameter of HiddenStateRegulariser must have texts that are "
                               "not blank. Got 1 blank (the first: '\\n', at index 3); remove them.")
    # a text with no word token that is not blank (a zero-width space: [CLS] [SEP] under BERT) is refused once the
    # tokenizer is known, before any forward pass
    special = GeometryProbe(["a cat", "\u200b", "a dog"], metrics=("isoscore",)).set_tokenizer(tokenizer)
    with pytest.raises(IsotropyValueError) as info:
        special.measure(model)
    zero_width = "\u200b"
    assert str(info.value) == ("The 'probe' parameter of GeometryProbe must have texts with at least one token under "
                               f"its tokenizer besides its special tokens. Got 1 without any (the first: {zero_width!r}, "
                               f"at index 1); remove them.")
    kept = GeometryProbe(["a cat", "a dog", "a bird"], metrics=("isoscore",)).set_tokenizer(tokenizer)
    assert sorted(kept.measure(model)) == ["geometry/isoscore/layer_1", "geometry/isoscore/layer_2"]


def test_istar_without_a_shrinkage_sample_warns_as_the_metric_does():
    import warnings

    from isotropy.metrics.table import ISOSCORE_STAR_WARNING
    from isotropy.training import HiddenStateRegulariser

    with pytest.warns(UserWarning, match=f"^{re.escape(f'HiddenStateRegulariser: {ISOSCORE_STAR_WARNING} (shrinkage_sample=).')}$"):
        HiddenStateRegulariser("istar")
    from isotropy.training import HFRegulariser

    with pytest.warns(UserWarning, match=f"^{re.escape(f'HFRegulariser: {ISOSCORE_STAR_WARNING}')}") as caught:
        HFRegulariser("istar")  # reported at this line, not inside the drop-in
    assert [w.filename for w in caught] == [__file__]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        HiddenStateRegulariser("cosreg")  # no Σ_S in CosReg
        HiddenStateRegulariser("istar", shrinkage_sample=["a cat", "a dog", "a bird"])


def test_an_encoded_probe_passes_on_tensors_of_its_rows_only_and_casts_small_integer_ids(tmp_path):
    """A datasets batch keeps its text column as a list of str and its labels as a list: both were refused by the
    first version of the probe's checks (they are not the model's inputs); uint8 ids failed inside the embedding."""
    import torch
    from _tiny_models import make_tiny_bert
    from transformers import AutoModel, AutoTokenizer

    from isotropy.training import GeometryProbe

    directory = make_tiny_bert(tmp_path, n_layers=2, hidden_size=16)
    tokenizer, model = AutoTokenizer.from_pretrained(directory), AutoModel.from_pretrained(directory)
    texts = ["a cat sat", "the dog ran far", "birds fly", "a fish"]
    encoded = dict(tokenizer(texts, padding=True, return_tensors="pt"))
    reference = GeometryProbe(encoded, metrics=("isoscore",)).measure(model)
    batch = {"sentence": texts, "label": [0, 1, 0, 1], "idx": list(range(4)), **encoded}
    probe = GeometryProbe(batch, metrics=("isoscore",))
    assert sorted(probe.rows.encoded) == ["attention_mask", "input_ids", "token_type_ids"]
    assert probe.measure(model) == reference
    small = GeometryProbe({**encoded, "input_ids": encoded["input_ids"].to(torch.uint8)}, metrics=("isoscore",))
    assert small.rows.encoded["input_ids"].dtype == torch.int64 and small.measure(model) == reference


def test_twonn_dimension_with_no_discard_is_made_with_mle():
    import torch

    from isotropy import twonn_dimension
    from isotropy.training import TwoNNDimension

    X = torch.randn(200, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    metric = TwoNNDimension(discard_fraction=0.0, method="mle")
    metric.update(X)
    assert float(metric.compute()) == pytest.approx(twonn_dimension(X.numpy(), discard_fraction=0.0, method="mle"),
                                                    rel=1e-12)


def test_shrinkage_covariance_of_a_list_names_the_entry_that_does_not_fit():
    """shrinkage_covariance([randn(3, 4), randn(2, 5)]) raised torch.cat's "Sizes of tensors must match except in
    dimension 0", naming neither the argument nor the entry; 1-d entries were joined into one long vector, and a
    float64 entry after a float32 one gave a float64 covariance where the first input's dtype is documented."""
    import torch

    from isotropy.torch import shrinkage_covariance

    with pytest.raises(IsotropyValueError) as info:
        shrinkage_covariance([torch.randn(3, 4), torch.randn(2, 4), torch.randn(2, 5)])
    assert str(info.value) == ("The 'H' parameter of shrinkage_covariance must be a list of tensors with the same "
                               "number of features (columns). Got 4 features in H[0] and 5 in H[2] (shape (2, 5)) "
                               "instead.")
    for entries, got in [([torch.randn(4), torch.randn(4)], "shape (4,) at H[0]"),
                         ([torch.randn(3, 4), torch.randn(4)], "shape (4,) at H[1]"),
                         ([torch.randn(3, 4), torch.randn(3, 4, 2)], "shape (3, 4, 2) at H[1]")]:
        with pytest.raises(IsotropyValueError) as info:
            shrinkage_covariance(entries)
        assert str(info.value) == ("The 'H' parameter of shrinkage_covariance must be a list of torch.Tensors of "
                                   f"shape (n_samples, n_features). Got {got} instead.")
    with pytest.raises(TypeError, match=r"Got list at H\[1\] instead\.$"):
        shrinkage_covariance([torch.randn(3, 4), [[1.0, 2.0, 3.0, 4.0]]])
    with pytest.raises(IsotropyValueError, match=r"non-empty list of tensors\. Got an empty tuple instead\.$"):
        shrinkage_covariance(())
    with pytest.raises(ValueError, match=r"Got shape \(1, 4\) \(the list's entries joined\) instead\.$"):
        shrinkage_covariance([torch.randn(0, 4), torch.randn(1, 4)])
    H = torch.randn(6, 4, generator=torch.Generator().manual_seed(0))
    mixed = shrinkage_covariance([H[:3], H[3:].double()])
    assert mixed.dtype == torch.float32
    torch.testing.assert_close(mixed, shrinkage_covariance(H))
    assert shrinkage_covariance([H[:3].double(), H[3:]]).dtype == torch.float64


@pytest.mark.parametrize("drop_in", ["LightningRegulariser", "HFRegulariser", "HiddenStateRegulariser"])
def test_a_regularisers_mask_of_the_wrong_shape_names_hidden_states(drop_in):
    """LightningRegulariser.penalty(hidden_states, mask) said the mask must have the shape "(batch, seq of 'hidden')",
    pool_hidden_states' argument: the regularisers' argument is hidden_states."""
    import torch

    from isotropy import training

    reg = getattr(training, drop_in)("cosreg")
    states = tuple(torch.randn(2, 4, 3, generator=torch.Generator().manual_seed(i)) for i in range(3))
    with pytest.raises(IsotropyValueError) as info:
        reg.penalty(states, torch.ones(2, 5, dtype=torch.long))
    assert str(info.value) == (f"The 'attention_mask' parameter of {drop_in} must have shape (2, 4) (batch, seq of "
                               "'hidden_states'). Got shape (2, 5) instead.")
    with pytest.raises(IsotropyValueError) as info:
        reg.penalty(states, [[1, 1, 1, 1], [1, 1]])
    assert str(info.value) == (f"The 'attention_mask' parameter of {drop_in} must be a tensor or nested sequence of "
                               "0s and 1s of shape (2, 4) (batch, seq of 'hidden_states'). Got list that is not one "
                               "(ragged rows, or values that are not numbers) instead.")


def test_an_all_padding_row_at_the_token_level_is_said_to_have_no_token():
    """At the default token level an all-padding row was said to have "no sentence vector", the sentence level's
    wording: the token level regularises token states, and that row has none."""
    import torch

    from isotropy.training import HFRegulariser, HiddenStateRegulariser, LightningRegulariser

    states = tuple(torch.randn(3, 4, 2, generator=torch.Generator().manual_seed(i)) for i in range(2))
    mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]])
    start = "The 'attention_mask' parameter of {} has no real token in row 2 (all zeros): "
    for cls in (HiddenStateRegulariser, HFRegulariser, LightningRegulariser):
        with pytest.raises(IsotropyValueError) as info:
            cls("cosreg").penalty(states, mask)
        assert str(info.value) == (start.format(cls.__name__) + "at level='token' that row has no token (no unmasked "
                                   "position) to regularise. Expected at least one 1 per row.")
        with pytest.raises(IsotropyValueError) as info:
            cls("cosreg", level="sentence").penalty(states, mask)
        assert str(info.value) == (start.format(cls.__name__) + "that row has no sentence vector. Expected at least "
                                   "one 1 per row.")


@pytest.mark.parametrize("drop_in", ["HFRegulariser", "LightningRegulariser", "HiddenStateRegulariser"])
def test_cosreg_refuses_the_arguments_of_istar(drop_in):
    """HFRegulariser('cosreg', zeta=0.5) and ('cosreg', shrinkage_sample=...) were taken and never used (a new-user
    trial): CosReg has no shrinkage. A zeta passed is refused, 0.2 too; the default is not a zeta passed."""
    import warnings

    from isotropy import training

    cls = getattr(training, drop_in)
    for zeta in (0.5, 0.2):
        with pytest.raises(IsotropyValueError) as info:
            cls("cosreg", zeta=zeta)
        assert str(info.value) == (f"The 'zeta' parameter of {drop_in} applies to method='istar' only: CosReg has no "
                                   f"shrinkage. Got {zeta!r} with method='cosreg' instead; leave it out.")
    with pytest.raises(IsotropyValueError) as info:
        cls("cosreg", shrinkage_sample=["a cat", "a dog", "a bird"])
    assert str(info.value) == (f"The 'shrinkage_sample' parameter of {drop_in} applies to method='istar' only: CosReg "
                               "has no shrinkage covariance Σ_S to estimate. Got a list with method='cosreg' instead; "
                               "leave it out.")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cls("cosreg", shrinkage_sample=None).zeta == 0.2
        istar = cls("istar", shrinkage_sample=["a cat", "a dog", "a bird"])
    assert istar.zeta == 0.2 and type(istar.zeta) is float
    assert cls("istar", zeta=0.5, shrinkage_sample=["a cat", "a dog", "a bird"]).zeta == 0.5
    import inspect

    assert inspect.signature(cls).parameters["zeta"].default == 0.2
    assert repr(inspect.signature(cls).parameters["zeta"].default) == "0.2"


@pytest.mark.parametrize("drop_in", ["HFRegulariser", "LightningRegulariser", "HiddenStateRegulariser"])
def test_a_pooling_passed_at_the_token_level_is_refused(drop_in):
    """HFRegulariser(pooling='last') at the default level='token' was taken and never used: every token state is
    regularised, none pooled. A pooling passed there is refused, 'mean' too; the default is not a pooling passed, and
    level='sentence' takes one or none."""
    import inspect
    import warnings

    from isotropy import training

    cls = getattr(training, drop_in)
    for pooling in ("last", "mean"):
        for level in ({}, {"level": "token"}):
            with pytest.raises(IsotropyValueError) as info:
                cls("cosreg", pooling=pooling, **level)
            assert str(info.value) == (f"The 'pooling' parameter of {drop_in} applies to level='sentence' only: at "
                                       f"level='token' every token state is regularised, none pooled. Got "
                                       f"{pooling!r} with level='token' instead; leave it out, or pass "
                                       f"level='sentence'.")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        token = cls("cosreg")
        sentence = cls("cosreg", level="sentence")
        last = cls("cosreg", level="sentence", pooling="last")
    assert (token.level, token.pooling, type(token.pooling)) == ("token", "mean", str)
    assert (sentence.pooling, type(sentence.pooling), last.pooling) == ("mean", str, "last")
    assert repr(inspect.signature(cls).parameters["pooling"].default) == "'mean'"


def test_shrinkage_covariance_refuses_a_nan_or_inf_in_h_naming_its_row():
    """shrinkage_covariance(H) with a NaN in H returned a covariance of NaNs without a word; the error came only later,
    from istar_penalty (or the regularisers' next step), blaming a 'shrinkage_cov' the user never passed."""
    import torch

    from isotropy.torch import shrinkage_covariance

    H = torch.randn(6, 3, generator=torch.Generator().manual_seed(0))
    for value, shown in ((float("nan"), "nan"), (float("inf"), "inf"), (-float("inf"), "-inf")):
        bad = H.clone()
        bad[4, 2] = value
        with pytest.raises(IsotropyValueError) as info:
            shrinkage_covariance(bad)
        assert str(info.value) == ("The 'H' parameter of shrinkage_covariance must contain only finite values. Got "
                                   f"{shown} at row 4, column 2 instead.")
        with pytest.raises(IsotropyValueError) as info:
            shrinkage_covariance([H, bad.double()])
        assert str(info.value) == ("The 'H' parameter of shrinkage_covariance must contain only finite values. Got "
                                   f"{shown} at row 4, column 2 of H[1] instead.")
    assert torch.isfinite(shrinkage_covariance([H, H])).all()


def test_a_module_that_is_not_a_transformers_model_is_one_line():
    """A plain module whose forward takes no output_hidden_states raised torch's bare TypeError from deep in the
    probe (HFGeometryCallback, GeometryProbe.measure) and from the regulariser's refresh."""
    import torch

    from isotropy.training import GeometryProbe, HiddenStateRegulariser

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(50, 4)

        def forward(self, input_ids, attention_mask=None):
            return self.embed(input_ids)

    encoded = {"input_ids": _ids(), "attention_mask": torch.ones(6, 8, dtype=torch.long)}
    message = (r"^GeometryProbe: the model \(Tiny\) cannot be called as model\(input_ids=\.\.\., attention_mask=\.\.\., "
               r"output_hidden_states=True, return_dict=True\) \(.*unexpected keyword argument 'output_hidden_states'"
               r"\); expected a transformers model")
    with pytest.raises(IsotropyValueError, match=message):
        GeometryProbe(encoded).measure(Tiny())
    reg = HiddenStateRegulariser("istar", shrinkage_sample=encoded)
    with pytest.raises(IsotropyValueError, match=message.replace("GeometryProbe", "HiddenStateRegulariser")):
        reg.refresh(Tiny())


def test_messages_name_what_the_user_gave():
    """A dict probe of 2 rows was said to need '3 rows (texts)'; identical rows seen by a metric were 'The 'data'
    parameter of IsoScore.compute', which takes no data."""
    import torch

    from isotropy.training import GeometryProbe, IsoScore

    with pytest.raises(IsotropyValueError, match=r"^The 'probe' parameter of GeometryProbe must have at least 3 rows "
                                                 r"of input_ids\. Got 2 instead\.$"):
        GeometryProbe({"input_ids": torch.ones(2, 3, dtype=torch.long)})
    with pytest.raises(IsotropyValueError, match=r"^The 'probe' parameter of GeometryProbe must have at least 3 "
                                                 r"texts\. Got 2 instead\.$"):
        GeometryProbe(["a b", "c d"])
    metric = IsoScore()
    metric.update(torch.ones(5, 3))
    with pytest.raises(IsotropyValueError, match=r"^The rows given to IsoScore\.update must have non-zero variance\. "
                                                 r"Got 5 \(numerically\) identical samples"):
        metric.compute()


def test_a_typo_in_forward_kwargs_is_the_models_own_error():
    """Any 'unexpected keyword argument' was said to mean 'not a transformers model' (a review): a typo in
    forward_kwargs, or an error inside a real model's forward, is now torch's own error."""
    import torch

    from isotropy.training.probe import forward_hidden_states

    class Accepting(torch.nn.Module):
        def forward(self, input_ids, attention_mask=None, output_hidden_states=False, return_dict=True):
            return {"hidden_states": (torch.zeros(*input_ids.shape, 4),) * 2}

    inputs = {"input_ids": _ids(), "attention_mask": torch.ones(6, 8, dtype=torch.long)}
    with pytest.raises(TypeError, match="token_type_idz"):
        forward_hidden_states(Accepting(), inputs, "X", {"token_type_idz": 1})
    assert len(forward_hidden_states(Accepting(), inputs, "X")) == 2


def test_the_hf_callback_does_not_measure_the_best_checkpoint_as_the_trained_weights():
    """With load_best_model_at_end the Trainer swaps in the best checkpoint before on_train_end (a review)."""
    from types import SimpleNamespace

    from isotropy.training import HFGeometryCallback

    callback = HFGeometryCallback(["a b", "c d", "e f"], every_n_steps=3)
    calls = []
    callback._measure_and_log = lambda *args: calls.append(args)
    state, control = SimpleNamespace(global_step=5), SimpleNamespace()
    callback.on_train_end(SimpleNamespace(load_best_model_at_end=True), state, control, model=object())
    assert calls == []
    callback.on_train_end(SimpleNamespace(load_best_model_at_end=False), state, control, model=object())
    assert len(calls) == 1


# each torchmetrics wrapper and the function it wraps (whose numpy refusal it gives, in its own name)
_WRAPPED = {"IsoScore": "isoscore", "IsoScoreStar": "isoscore_star", "ParticipationRatio": "participation_ratio",
            "EffectiveRank": "effective_rank", "RankMe": "rankme", "TwoNNDimension": "twonn_dimension",
            "MeanCosine": "cosine_similarity_mean", "RogueDimensionShare": "rogue_dimension_share"}


def test_every_torchmetrics_wrapper_is_checked_below():
    from isotropy.training import metrics

    assert set(_WRAPPED) == set(metrics.__all__) - {"metric_from_name"}


@pytest.mark.parametrize("as_tensor", [True, False])
@pytest.mark.parametrize("name", list(_WRAPPED))
def test_a_float16_batch_subnormal_in_float16_is_refused_as_the_function_refuses_it(name, as_tensor):
    """The wrappers read a float16 batch as float32 (where these values are normal numbers) and measured it where the
    functions refuse the same numpy array. Now refused in the function's words (the metrics of rows' directions,
    which judge each row, measure it as the function does)."""
    import warnings

    import torch

    import isotropy
    from isotropy.training import metrics

    rng = np.random.default_rng(0)
    # values from 1e-6 to 5e-5, four in five positive: all subnormal float16 numbers (the smallest normal is 6.1e-5)
    X = (rng.uniform(1e-6, 5e-5, (60, 8)) * rng.choice([-1.0, 1.0], (60, 8), p=[0.2, 0.8])).astype(np.float16)
    function = getattr(isotropy, _WRAPPED[name])
    metric = getattr(metrics, name)()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (IsoScore* without a shrinkage sample)
        try:
            expected = function(X)
        except IsotropyValueError as error:
            assert "Got only subnormal float16 numbers" in str(error)
            with pytest.raises(IsotropyValueError) as info:
                metric.update(torch.from_numpy(X) if as_tensor else X)
            assert str(info.value) == str(error).replace(f"parameter of {_WRAPPED[name]} ", f"parameter of {name}.update ")
            return
        assert name in {"MeanCosine", "RogueDimensionShare"}
        metric.update(torch.from_numpy(X) if as_tensor else X)
        assert float(metric.compute()) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("case", ["IsoScore", "MeanCosine", "TwoNNDimension", "IsoScoreStar", "IStarLoss", "probe"])
def test_read_only_arrays_are_taken_without_torch_s_not_writable_warning(case):
    """A read-only array (``np.load(..., mmap_mode="r")``, a pandas 3 frame's ``.to_numpy()``) gave PyTorch's
    "The given NumPy array is not writable ... undefined behavior" UserWarning from the toolkit's own conversion (an
    error under ``-W error``); the value is that of a writable copy. The reference is the pure function (numpy)."""
    import warnings

    import torch

    import isotropy
    from isotropy.torch import IStarLoss
    from isotropy.training import GeometryProbe, IsoScore, IsoScoreStar, MeanCosine, TwoNNDimension

    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 4)) * [0.5, 1.0, 2.0, 3.0]
    S = np.cov(rng.normal(size=(200, 4)), rowvar=False)
    ids = rng.integers(5, 20, size=(6, 5))
    frozen = [a.copy() for a in (X, S, ids)]
    for a in frozen:
        a.setflags(write=False)
    Xr, Sr, idsr = frozen
    H = torch.from_numpy(X)
    warn_always = torch.is_warn_always_enabled()
    torch.set_warn_always(True)  # torch says it once per process: say it every time here
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            if case == "probe":
                probe = GeometryProbe({"input_ids": idsr}, metrics=["isoscore"])
                assert torch.equal(probe.rows.encoded["input_ids"], torch.from_numpy(ids))
                return
            if case == "IStarLoss":
                got, expected = float(IStarLoss(shrinkage_cov=Sr, zeta=0.2)(H)), -isotropy.isoscore_star(
                    X, shrinkage_cov=S, zeta=0.2)
            elif case == "IsoScoreStar":
                metric = IsoScoreStar(shrinkage_cov=Sr, zeta=0.2)
                metric.update(Xr)
                got, expected = float(metric.compute()), isotropy.isoscore_star(X, shrinkage_cov=S, zeta=0.2)
            else:
                metric = {"IsoScore": IsoScore, "MeanCosine": MeanCosine, "TwoNNDimension": TwoNNDimension}[case]()
                metric.update(Xr)
                function = {"IsoScore": isotropy.isoscore, "MeanCosine": isotropy.cosine_similarity_mean,
                            "TwoNNDimension": isotropy.twonn_dimension}[case]
                got, expected = float(metric.compute()), function(X)
    finally:
        torch.set_warn_always(warn_always)
    assert got == pytest.approx(expected, rel=1e-9)


def test_measure_refuses_a_plain_callable_naming_the_model_argument():
    """``GeometryProbe.measure(<function>)`` raised ``AttributeError: 'function' object has no attribute 'parameters'``.
    measure takes a module (put in eval mode, its device that of its parameters), as the Lightning callback's
    callable ``model=`` returns one (``model(pl_module)``): a function of a batch is refused in one line, from measure
    and from the Lightning callback whose callable returns one."""
    from types import SimpleNamespace

    import torch
    from lightning.pytorch import LightningModule

    from isotropy.training import (
        GeometryProbe,
        HiddenStateRegulariser,
        LightningGeometryCallback,
        LightningRegulariser,
    )

    def hidden_states(batch):
        return (torch.zeros(batch["input_ids"].shape[0], batch["input_ids"].shape[1], 4),) * 2

    probe = GeometryProbe({"input_ids": _ids()}, metrics=("isoscore",))
    expected = ("The 'model' parameter of GeometryProbe.measure must be a torch.nn.Module (called as "
                "model(**inputs, output_hidden_states=True, return_dict=True), in eval mode, on the device of its "
                "parameters). Got function 'test_measure_refuses_a_plain_callable_naming_the_model_argument.<locals>."
                "hidden_states' instead; pass the module whose hidden states to measure.")
    with pytest.raises(TypeError) as info:
        probe.measure(hidden_states)
    assert str(info.value) == expected
    with pytest.raises(TypeError) as info:
        probe.check_model(hidden_states)
    assert str(info.value) == expected.replace("GeometryProbe.measure", "GeometryProbe.check_model")

    class Module(LightningModule):
        def forward(self, **inputs):
            return hidden_states(inputs)

    callback = LightningGeometryCallback({"input_ids": _ids()}, metrics=("isoscore",), model=lambda m: hidden_states)
    with pytest.raises(TypeError) as info:
        callback._measure(SimpleNamespace(datamodule=None), Module())
    assert str(info.value) == ("The 'model' parameter of LightningGeometryCallback must be None, an attribute name or a "
                               "callable returning a torch.nn.Module (model(pl_module)). Got a callable returning "
                               "function 'test_measure_refuses_a_plain_callable_naming_the_model_argument.<locals>."
                               "hidden_states' instead.")
    reg = HiddenStateRegulariser("istar", shrinkage_sample={"input_ids": _ids()})
    with pytest.raises(TypeError) as info:
        reg.refresh(hidden_states)
    assert str(info.value) == expected.replace("GeometryProbe.measure", "HiddenStateRegulariser.refresh")
    reg = LightningRegulariser("istar", shrinkage_sample={"input_ids": _ids()}, model=lambda m: hidden_states)
    with pytest.raises(TypeError, match=r"^The 'model' parameter of LightningRegulariser must be None, an attribute "
                                        r"name or a callable returning a torch\.nn\.Module"):
        reg.on_train_epoch_start(SimpleNamespace(datamodule=None, current_epoch=0), Module())


@pytest.mark.parametrize("cls", ["GeometryProbe", "HFGeometryCallback", "LightningGeometryCallback"])
def test_a_repeated_metric_or_layer_is_refused_naming_it(cls):
    """``metrics=["isoscore", "isoscore"]`` and ``layers=[1, 1]`` were taken silently (measured once, logged once):
    refused in one line naming the argument, the value and the repeat."""
    from isotropy import training

    make = getattr(training, cls)
    with pytest.raises(IsotropyValueError) as info:
        make(["one", "two", "three"], metrics=["isoscore", "isoscore"])
    assert str(info.value) == (f"The 'metrics' parameter of {cls} must name each metric once. Got ['isoscore', "
                               f"'isoscore'] instead: 'isoscore' is repeated.")
    for layers, shown in (([1, 1], "[1, 1]"), ("2,1,2", "'2,1,2'"), ((3, -1, 3), "(3, -1, 3)")):
        repeated = shown.strip("[]()'").split(",")[0]
        with pytest.raises(IsotropyValueError) as info:
            make(["one", "two", "three"], layers=layers)
        assert str(info.value) == (f"The 'layers' parameter of {cls} must name each layer once. Got {shown} instead: "
                                   f"{repeated} is repeated.")


def test_last_among_the_layers_is_minus_one_and_a_repeat_of_it_is_refused_saying_so():
    """``layers="last,0"`` was refused as no layer selection; 'last' among indices is -1, so "last,-1" repeats it,
    refused as "-1,-1" is, with the -1 the message names said to be the 'last' the user wrote."""
    from isotropy.training import GeometryProbe
    from isotropy.training.probe import check_distinct_layers

    assert GeometryProbe(["one", "two", "three"], layers="last,0").layers == "last,0"
    assert check_distinct_layers("last,0", 7, caller="GeometryProbe") == (-1, 0)
    with pytest.raises(IsotropyValueError) as info:
        GeometryProbe(["one", "two", "three"], layers="last,-1")
    assert str(info.value) == ("The 'layers' parameter of GeometryProbe must name each layer once. Got 'last,-1' "
                               "instead: -1 is repeated ('last' is -1).")
    with pytest.raises(IsotropyValueError) as info:
        check_distinct_layers("last,6", 7, caller="GeometryProbe")
    assert str(info.value) == ("The 'layers' parameter of GeometryProbe must name each layer once. Got 'last,6' "
                               "instead: -1 and 6 are both layer_6 (the model's hidden states are 0..6; 'last' is "
                               "-1).")


def test_layers_that_resolve_to_the_same_hidden_state_are_refused_at_the_first_measurement(tmp_path):
    """``layers=[-1, 2]`` on a model of 2 layers names hidden state 2 twice (known once the depth is): refused in one
    line at the first measurement, not measured once and logged as layer_2 alone."""
    from _tiny_models import make_tiny_bert
    from transformers import AutoModel

    from isotropy.training import GeometryProbe

    model = AutoModel.from_pretrained(make_tiny_bert(tmp_path, n_layers=2, hidden_size=16))
    ids = _ids() % model.config.vocab_size
    probe = GeometryProbe({"input_ids": ids}, layers=[-1, 2], metrics=("isoscore",))
    with pytest.raises(IsotropyValueError) as info:
        probe.measure(model)
    assert str(info.value) == ("The 'layers' parameter of GeometryProbe must name each layer once. Got [-1, 2] "
                               "instead: -1 and 2 are both layer_2 (the model's hidden states are 0..2).")
    # distinct layers are measured, each once
    values = GeometryProbe({"input_ids": ids}, layers=[-1, 1], metrics=("isoscore",)).measure(model)
    assert sorted(values) == ["geometry/isoscore/layer_1", "geometry/isoscore/layer_2"]


def test_a_probe_of_a_1d_array_or_series_of_texts_is_taken_as_its_list(tmp_path):
    """``df["text"]`` or ``df["text"].to_numpy()`` as the probe (or a regulariser's shrinkage sample) was a TypeError
    telling the user to pass ``list(probe)``: a 1-d array or Series whose elements are all str is taken as that list
    (the same values as the list); numeric arrays keep the TypeError, an element that is not a str is named."""
    import pandas as pd
    from _tiny_models import make_tiny_bert
    from transformers import AutoModel, AutoTokenizer

    from isotropy.training import GeometryProbe, HiddenStateRegulariser

    directory = make_tiny_bert(tmp_path, n_layers=2, hidden_size=16)
    tokenizer, model = AutoTokenizer.from_pretrained(directory), AutoModel.from_pretrained(directory)
    texts = ["a cat sat", "the dog ran", "a mat", "the cat and the dog", "a dog sat on a mat"]
    expected = GeometryProbe(texts).set_tokenizer(tokenizer).measure(model)
    columns = {"ndarray": np.array(texts), "object ndarray": np.array(texts, dtype=object),
               "Series": pd.Series(texts, index=[10, 11, 12, 13, 14]), "string Series": pd.Series(texts, dtype="string")}
    for kind, column in columns.items():
        probe = GeometryProbe(column)
        assert probe.rows.texts == texts and all(type(t) is str for t in probe.rows.texts), kind
        assert probe.set_tokenizer(tokenizer).measure(model) == expected, kind
        reg = HiddenStateRegulariser("istar", shrinkage_sample=column).set_tokenizer(tokenizer)
        assert reg.sample.texts == texts, kind
    with pytest.raises(TypeError) as info:
        GeometryProbe(pd.Series(["a cat", None, "a dog"], dtype=object))
    assert str(info.value) == ("The 'probe' parameter of GeometryProbe must be a non-empty list of texts or a dict of "
                               "tensors with 'input_ids'. Got NoneType at index 1 instead.")
    with pytest.raises(IsotropyValueError) as info:
        GeometryProbe(np.array([], dtype=str))
    assert str(info.value) == ("The 'probe' parameter of GeometryProbe must be a non-empty list of texts or a dict of "
                               "tensors with 'input_ids'. Got an empty ndarray instead.")
    with pytest.raises(TypeError) as info:
        GeometryProbe(pd.Series([3, 4, 5]))
    assert str(info.value) == ("The 'probe' parameter of GeometryProbe must be a non-empty list of texts or a dict of "
                               "tensors with 'input_ids'. Got Series instead; pass token ids as a dict, "
                               "{'input_ids': probe}.")


@pytest.mark.parametrize("cls", ["HiddenStateRegulariser", "HFRegulariser", "LightningRegulariser"])
def test_a_regulariser_refuses_a_repeated_layer_as_the_probe_does(cls):
    """``HiddenStateRegulariser(layers=[1, 1])`` (and the drop-ins) was taken, the repeat dropped silently (layer 1
    regularised once), where GeometryProbe refuses it: refused in the probe's words, when made for a written repeat
    and at the first forward pass for two indices of one hidden state (-1 beside the last index)."""
    import torch

    from isotropy import training
    from isotropy.torch import cosine_penalty

    make = getattr(training, cls)
    for layers, shown in (([1, 1], "[1, 1]"), ("2,1,2", "'2,1,2'"), ((3, -1, 3), "(3, -1, 3)")):
        repeated = shown.strip("[]()'").split(",")[0]
        with pytest.raises(IsotropyValueError) as info:
            make("cosreg", layers=layers)
        assert str(info.value) == (f"The 'layers' parameter of {cls} must name each layer once. Got {shown} instead: "
                                   f"{repeated} is repeated.")
    g = torch.Generator().manual_seed(3)
    hidden = tuple(torch.randn(2, 5, 4, generator=g, dtype=torch.float64) for _ in range(3))  # 2 layers: 0..2
    reg = make("cosreg", layers=[-1, 2])
    with pytest.raises(IsotropyValueError) as info:
        reg.penalty(hidden)
    assert str(info.value) == (f"The 'layers' parameter of {cls} must name each layer once. Got [-1, 2] instead: -1 "
                               f"and 2 are both layer_2 (the model's hidden states are 0..2).")
    # distinct layers: each regularised once, the penalty of the pure function on their stacked token states
    value = make("cosreg", layers=[-1, 1]).penalty(hidden)
    expected = cosine_penalty(torch.cat([hidden[1].reshape(-1, 4), hidden[2].reshape(-1, 4)]))
    assert float(value) == pytest.approx(float(expected), rel=1e-12)


@pytest.mark.parametrize("cls", ["IsoScoreStar", "GeometryProbe", "HFGeometryCallback", "LightningGeometryCallback"])
def test_zeta_takes_a_0d_real_tensor_or_array_as_the_regularisers_do(cls, tmp_path):
    """IsoScoreStar(zeta=torch.tensor(0.25)) and GeometryProbe (the callbacks') raised TypeError "must be a float ...
    Got tensor(0.2500)" where IStarLoss and the regularisers read a 0-d tensor once as a float: read so here too,
    range-checked in the regularisers' words. Values: the metric's compute equals isoscore_star at the float ζ; the
    probe measures what it measures with the float ζ."""
    import torch

    from isotropy import isoscore_star, training

    make = getattr(training, cls)
    ids = _ids()
    S = torch.cov(torch.randn(50, 4, generator=torch.Generator().manual_seed(2), dtype=torch.float64).T)

    def build(zeta):
        if cls == "IsoScoreStar":
            return make(shrinkage_cov=S, zeta=zeta)
        return make({"input_ids": ids}, metrics=("isoscore_star",), shrinkage_sample={"input_ids": ids}, zeta=zeta)

    def zeta_of(built):
        return built.zeta if cls == "IsoScoreStar" else getattr(built, "probe", built).zeta

    for zeta, plain in ((torch.linspace(0.0, 1.0, 5)[1], 0.25), (torch.tensor(0.5, dtype=torch.float64), 0.5),
                        (np.array(0.75), 0.75), (torch.tensor(1), 1.0)):
        built = build(zeta)
        assert type(zeta_of(built)) is float and zeta_of(built) == plain
    if cls == "IsoScoreStar":
        X = torch.randn(30, 4, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
        metric = build(torch.tensor(0.25))
        metric.update(X)
        assert float(metric.compute()) == pytest.approx(
            isoscore_star(X.numpy(), shrinkage_cov=S.numpy(), zeta=0.25), rel=1e-12)
    elif cls == "GeometryProbe":
        from _tiny_models import make_tiny_bert
        from transformers import AutoModel

        model = AutoModel.from_pretrained(make_tiny_bert(tmp_path, n_layers=2, hidden_size=16))
        ids = ids % model.config.vocab_size
        values = make({"input_ids": ids}, metrics=("isoscore_star",), shrinkage_sample={"input_ids": ids},
                      zeta=torch.tensor(0.25)).measure(model)
        assert values == make({"input_ids": ids}, metrics=("isoscore_star",), shrinkage_sample={"input_ids": ids},
                              zeta=0.25).measure(model)
        assert len(values) == 2
    from _zeta_cases import zeta_refusals

    cases = zeta_refusals(cls, grad=False)
    for zeta, error, message in cases:
        with pytest.raises(error) as info:
            build(zeta)
        assert str(info.value) == message
