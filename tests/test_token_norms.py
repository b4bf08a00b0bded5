"""``token_norms``: the tokens with the largest norms over the median, special tokens listed apart."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import isotropy
from isotropy import token_norms
from isotropy.metrics.norms import token_norms as from_module


def _rows(norms, d=3):
    """Rows of ``X`` with exactly the given norms: ±norm on one axis each (e_0, -e_1, e_2, -e_0, ...)."""
    X = np.zeros((len(norms), d))
    for i, norm in enumerate(norms):
        X[i, i % d] = norm * (-1) ** i
    return X


def test_exported_from_the_package_face():
    assert token_norms is from_module and "token_norms" in isotropy.__all__


def test_one_outlier_of_ten_times_the_median():
    # norms 1, 1, 1, 10: median 1, the outlier 10x
    X = _rows([1.0, 1.0, 1.0, 10.0])
    result = token_norms(X, ["a", "b", "c", "<s>"], top=2)
    assert set(result) == {"max_over_median", "median_norm", "top", "special"}
    assert result["max_over_median"] == pytest.approx(10.0, rel=1e-12)
    assert result["median_norm"] == pytest.approx(1.0, rel=1e-12)
    assert result["top"][0][0] == "<s>" and result["top"][0][1] == pytest.approx(10.0, rel=1e-12)
    assert len(result["top"]) == 2 and result["top"][1][1] == pytest.approx(1.0, rel=1e-12)
    assert result["special"] == []
    assert all(isinstance(ratio, float) for _, ratio in result["top"])


def test_each_token_once_with_its_largest_ratio():
    # norms 2, 4, 4, 8, 1 (median 4); "the" twice (ratios 0.5 and 2): listed once, with 2
    X = _rows([2.0, 4.0, 4.0, 8.0, 1.0])
    result = token_norms(X, ["the", "cat", "dog", "the", "sat"], top=10)
    assert [token for token, _ in result["top"]] == ["the", "cat", "dog", "sat"]  # cat/dog tie: by token
    np.testing.assert_allclose([ratio for _, ratio in result["top"]], [2.0, 1.0, 1.0, 0.25], rtol=1e-12)
    assert result["median_norm"] == pytest.approx(4.0, rel=1e-12)


def test_ties_are_ordered_by_token_string():
    X = _rows([3.0, 3.0, 3.0])
    result = token_norms(X, ["z", "b", "m"], top=2)
    assert [token for token, _ in result["top"]] == ["b", "m"]
    assert result["max_over_median"] == pytest.approx(1.0, rel=1e-12)


def test_special_tokens_are_listed_apart_and_leave_the_median_alone():
    X = _rows([1.0, 2.0, 3.0])  # median 2
    special = [("[CLS]", 30.0), ("[SEP]", 4.0), ("[CLS]", 50.0), ("[SEP]", 1.0)]
    result = token_norms(X, ["a", "b", "c"], special=special)
    assert result["median_norm"] == pytest.approx(2.0, rel=1e-12)
    assert result["max_over_median"] == pytest.approx(1.5, rel=1e-12)  # specials are not rows of X
    assert [token for token, _ in result["special"]] == ["[CLS]", "[SEP]"]
    np.testing.assert_allclose([ratio for _, ratio in result["special"]], [25.0, 2.0], rtol=1e-12)
    assert [token for token, _ in result["top"]] == ["c", "b", "a"]  # top=5 > 3 distinct tokens
    assert token_norms(X, ["a", "b", "c"], special=[])["special"] == []


def test_extreme_scales_and_torch_input():
    X = _rows([1.0, 1.0, 1.0, 10.0])
    for scale in (1e-200, 1e200):  # the squares would underflow / overflow without the rescaling
        result = token_norms(X * scale, list("abcd"), special=[("<bos>", 20.0 * scale)])
        assert result["max_over_median"] == pytest.approx(10.0, rel=1e-12)
        assert result["median_norm"] == pytest.approx(scale, rel=1e-12)
        assert result["special"][0][1] == pytest.approx(20.0, rel=1e-12)
    torch = pytest.importorskip("torch")
    tensor = torch.tensor(X, dtype=torch.float32, requires_grad=True)
    result = token_norms(tensor, list("abcd"))
    assert isinstance(result["max_over_median"], float)
    assert result["max_over_median"] == pytest.approx(10.0, rel=1e-6)


def test_one_row_is_enough():
    result = token_norms(np.array([[3.0, 4.0]]), ["x"], special=[("<bos>", 10.0)])
    assert result == {"max_over_median": 1.0, "median_norm": 5.0, "top": [["x", 1.0]], "special": [["<bos>", 2.0]]}


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"tokens": ["a", "b"]}, ValueError,
     r"^The 'tokens' parameter of token_norms must hold one token string per row of X \(3\)\. Got 2 instead\.$"),
    ({"tokens": "abc"}, TypeError, r"'tokens' parameter of token_norms must be a sequence of strings.*Got str"),
    ({"tokens": ["a", 1, "c"]}, TypeError, r"'tokens' parameter of token_norms must hold strings\. Got 1 at position 1"),
    ({"top": 0}, ValueError, r"^The 'top' parameter of token_norms must be an int in the range \[1, inf\)\. Got 0 instead\.$"),
    ({"top": 2.5}, ValueError, r"'top' parameter of token_norms must be an int"),
    ({"special": "[CLS]"}, TypeError, r"'special' parameter of token_norms must be None or a sequence"),
    ({"special": [("[CLS]",)]}, TypeError, (r"'special' parameter of token_norms must hold \(token, norm\) pairs\. "
                                           r"Got \('\[CLS\]',\) at position 0")),
    ({"special": [(1, 2.0)]}, TypeError, r"with a string token\. Got 1 at position 0"),
    ({"special": [("[CLS]", -1.0)]}, ValueError, r"with a finite norm >= 0\. Got -1\.0 at position 0"),
    ({"special": [("[CLS]", float("nan"))]}, ValueError, r"with a finite norm >= 0\. Got nan"),
    ({"special": [("[CLS]", "big")]}, TypeError, r"with a finite norm >= 0\. Got 'big'"),
])
def test_input_errors(kwargs, error, message):
    arguments = {"tokens": ["a", "b", "c"], **kwargs}
    tokens = arguments.pop("tokens")
    with pytest.raises(error, match=message):
        token_norms(_rows([1.0, 2.0, 3.0]), tokens, **arguments)


def test_bad_X():
    with pytest.raises(ValueError, match=r"'X' parameter of token_norms must be a 2-d array.*Got an array with shape \(3,\)"):
        token_norms(np.ones(3), ["a", "b", "c"])
    with pytest.raises(ValueError, match="'X' parameter of token_norms must contain only finite values"):
        token_norms(np.array([[1.0], [np.nan]]), ["a", "b"])
    with pytest.raises(ValueError, match=r"^The 'X' parameter of token_norms must have a positive median row norm "
                                         r"\(more than half of its rows are zero vectors\)\. Got a median norm of 0"):
        token_norms(np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 1.0]]), ["a", "b", "c"])
    with pytest.raises(ValueError, match=r"at least 1 sample \(row\)\. Got 0 instead"):
        token_norms(np.ones((0, 2)), [])


_TOKENS = st.sampled_from(["the", "cat", "<s>", ".", "##s"])


@settings(max_examples=60, deadline=None)
@given(data=st.data(), n=st.integers(1, 30), d=st.integers(1, 6), seed=st.integers(0, 2**16),
       scale=st.floats(1e-3, 1e3), top=st.integers(1, 6))
def test_scale_and_row_order_leave_the_ratios_alone(data, n, d, seed, scale, top):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.lognormal(size=(n, 1))  # a spread of norms
    tokens = data.draw(st.lists(_TOKENS, min_size=n, max_size=n))
    special = [(token, float(norm)) for token, norm in zip(["[CLS]", "[SEP]", "[CLS]"], rng.lognormal(size=3))]
    base = token_norms(X, tokens, special=special, top=top)

    scaled = token_norms(scale * X, tokens, special=[(t, scale * s) for t, s in special], top=top)
    assert scaled["max_over_median"] == pytest.approx(base["max_over_median"], rel=1e-10)
    assert scaled["median_norm"] == pytest.approx(scale * base["median_norm"], rel=1e-10)
    for key in ("top", "special"):  # the same ratios (a near-tie may swap two tokens, never a value)
        assert len(scaled[key]) == len(base[key])
        np.testing.assert_allclose([r for _, r in scaled[key]], [r for _, r in base[key]], rtol=1e-10)
    assert {t for t, _ in scaled["special"]} == {t for t, _ in base["special"]}

    order = rng.permutation(n)
    permuted = token_norms(X[order], [tokens[i] for i in order], special=special[::-1], top=top)
    assert permuted == base
    assert len(base["top"]) == min(top, len(set(tokens)))
    assert [r for _, r in base["top"]] == sorted((r for _, r in base["top"]), reverse=True)


# --- a user trial: subnormal X read in float64, and a special norm past float64 -------------------------------------

def _subnormal_cases():
    X = np.random.default_rng(0).normal(size=(60, 5))
    cases = [("float64", X * 1e-310, "3.11e-310 < 2.23e-308", 1028),
             ("float32", (X * 1e-40).astype(np.float32), "3.11e-40 < 1.18e-38", 131)]
    return X, cases


@pytest.mark.parametrize("backend", ["numpy", "torch", "dask"])
def test_subnormal_X_is_refused_as_every_metric_refuses_it(backend):
    # read in float64, subnormal data were accepted and their ratios off (1.868547 for the 1.868601 of the same
    # data at a normal scale): refused in the words of check_X's rescaling (isotropy._utils.magnitude)
    X, cases = _subnormal_cases()
    tokens = [f"t{i}" for i in range(60)]
    for dtype, S, shown, lift in cases:
        if backend == "torch":
            import torch
            S = torch.tensor(S)
        elif backend == "dask":
            import dask.array as da
            S = da.from_array(S, chunks=(25, 5))
        with pytest.raises(isotropy.IsotropyValueError) as info:
            token_norms(S, tokens)
        assert str(info.value) == (f"The 'X' parameter of token_norms must have values of normal magnitude. Got only "
                                   f"subnormal {dtype} numbers (largest |x| = {shown}), which have already lost most "
                                   f"of their significant digits; store the data at a larger scale (e.g. multiplied "
                                   f"by 2**{lift}).")
    # the smallest normal scale is still measured, exactly: the ratios of the data at unit scale
    norms = np.linalg.norm(X, axis=1)
    expected = norms.max() / np.median(norms)
    tiny = np.finfo(np.float64).tiny
    assert token_norms(X * (tiny / np.abs(X).max()), tokens)["max_over_median"] == pytest.approx(expected, rel=1e-12)


def test_a_special_norm_past_float64_is_refused_in_one_line():
    X = _rows([1.0, 2.0, 3.0])
    with pytest.raises(isotropy.IsotropyValueError) as info:  # was numpy's own TypeError from np.isfinite
        token_norms(X, ["a", "b", "c"], special=[("[CLS]", 1.0), ("<bos>", 10**400)])
    assert str(info.value) == ("The 'special' parameter of token_norms must hold (token, norm) pairs with a finite "
                               "norm >= 0 inside float64's range (at most 1.8e308). Got "
                               "100000000000000000000000000000000000000000000000000000000... at position 1 instead.")
    # an int inside float64's range is taken, as its float
    result = token_norms(X, ["a", "b", "c"], special=[("<bos>", 10**300)])
    assert result["special"] == [["<bos>", pytest.approx(1e300 / 2.0, rel=1e-15)]]
