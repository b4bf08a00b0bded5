"""Labels given as Python lists, sets, generators and nullable pandas columns (a user trial).

``np.asarray`` ran before the label checks: a list mixing ``0`` and ``"0"`` became strings (one cluster of two
labels; as an object array the same labels are refused as "labels of one kind"), and Python ints from 2**63 mixed
with negative ones became float64 (2**63, 2**63 + 1 and 2**63 + 2 one cluster). A set, a dict or a generator was
"an array with shape ()", and ``pd.NA`` in an ``Int64`` column "NaN or inf" without a row.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import sklearn.metrics as skm

from isotropy import IsotropyValueError, silhouette_score

rng = np.random.default_rng(0)
X = rng.normal(size=(60, 5))
LABELS = np.arange(60) % 3


def _partition(labels) -> np.ndarray:
    """Cluster ids of ``labels`` by Python equality (a dict, no numpy): the partition the labels define."""
    ids: dict = {}
    return np.array([ids.setdefault(label, len(ids)) for label in labels])


def test_ints_and_strings_in_a_list_are_labels_of_two_kinds():
    mixed = [str(label) if i % 2 else int(label) for i, label in enumerate(LABELS)]  # was -0.0314: 0 and "0" merged
    message = (r"^The 'labels' parameter of silhouette_score must hold labels of one kind \(all numbers or all "
               r"strings\)\. Got a mix of {} instead\.$")
    for labels in (mixed, tuple(mixed), np.array(mixed, dtype=object)):  # the object array was refused already
        with pytest.raises(TypeError, match=message.format("int, str")):
            silhouette_score(X, labels)
    with pytest.raises(TypeError, match=message.format("bytes, str")):  # numpy made b"a" and "a" one string
        silhouette_score(X, [b"a" if i % 2 else "a" for i in range(30)] + ["b"] * 30)


@pytest.mark.parametrize("labels", [
    [2**63 + int(label) if i % 2 else -1 - int(label) for i, label in enumerate(LABELS)],  # was float64: -0.0862
    [2**64 + int(label) for label in LABELS],  # beyond uint64
    [2**53 + int(label) if i % 2 else 0.5 + int(label) for i, label in enumerate(LABELS)],  # ints beyond float's 53 bits
    [-(2**70) * (int(label) + 1) for label in LABELS],
])
def test_large_python_ints_keep_their_clusters(labels):
    """Each distinct Python int is its own cluster: the value of the same partition (by Python equality) as
    scikit-learn computes it."""
    expected = skm.silhouette_score(X, _partition(labels))
    assert silhouette_score(X, labels) == pytest.approx(expected, abs=1e-12)
    assert silhouette_score(X, tuple(labels)) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("labels", [
    LABELS.tolist(), [float(label) for label in LABELS], [f"c{label}" for label in LABELS],
    [np.int64(label) for label in LABELS], [bool(label) for label in LABELS],
])
def test_lists_of_one_kind_are_read_as_before(labels):
    assert silhouette_score(X, labels) == pytest.approx(skm.silhouette_score(X, _partition(labels)), abs=1e-12)


_AS_LIST = "give the labels in row order as a list, e.g. list(labels.values())"


@pytest.mark.parametrize("labels, got", [
    (set(LABELS.tolist()), "a set instead; a set has no row order: give a list of the labels in row order"),
    (frozenset(LABELS.tolist()), "a frozenset instead; a set has no row order: give a list of the labels in row order"),
    (dict(enumerate(LABELS.tolist())), "a dict instead; " + _AS_LIST),
    (dict(enumerate(LABELS.tolist())).values(), "a dict_values instead; " + _AS_LIST),
    ((label for label in LABELS), "a generator instead; an iterator has no length and is read once: give list(labels)"),
    (iter(LABELS.tolist()), "a list_iterator instead; an iterator has no length and is read once: give list(labels)"),
])
def test_labels_without_row_order_or_length_are_named(labels, got):
    with pytest.raises(TypeError) as info:
        silhouette_score(X, labels)
    assert isinstance(info.value, IsotropyValueError)  # what "an array with shape ()" raised
    assert str(info.value) == ("The 'labels' parameter of silhouette_score must be a sequence or array with one label "
                               "per sample (row of X), of shape (n_samples,), or a 2-d 0/1 matrix of shape "
                               f"(n_samples, n_labels). Got {got}.")


@pytest.mark.parametrize("form", ["array", "series", "series with an index", "frame"])
def test_pd_na_is_a_missing_label_at_its_row(form):
    labels = pd.array(LABELS, dtype="Int64")
    labels[4] = pd.NA
    if form == "series":
        labels = pd.Series(labels)
    elif form == "series with an index":  # the row is the position, not the index label
        labels = pd.Series(labels, index=np.arange(60)[::-1] * 10)
    elif form == "frame":
        labels = pd.DataFrame({"label": labels})
    with pytest.raises(IsotropyValueError, match=r"^The 'labels' parameter of silhouette_score must have a label for "
                                                 r"every sample\. Got a missing label \(<NA>\) at row 4 instead\.$"):
        silhouette_score(X, labels)
    with pytest.raises(IsotropyValueError, match=r"missing label \(None\) at row 0 instead"):  # as a list says it
        silhouette_score(X, [None, *LABELS.tolist()[1:]])
    complete = pd.array(LABELS, dtype="Int64")
    assert silhouette_score(X, complete) == pytest.approx(skm.silhouette_score(X, LABELS), abs=1e-12)


def test_a_nan_or_inf_in_float_labels_names_its_row():
    for bad in (np.nan, np.inf):
        labels = LABELS.astype(float)
        labels[7] = bad
        with pytest.raises(IsotropyValueError, match=rf"^The 'labels' parameter of silhouette_score must contain only "
                                                     rf"finite values\. Got {bad} at row 7 instead\.$"):
            silhouette_score(X, labels)
