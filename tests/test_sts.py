"""Tests of isotropy.datasets.sts: loaders on the real files (exact counts) and SentEval-style scoring."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import rankdata

from conftest import shared_data_path
from isotropy._utils.validation import IsotropyValueError
from isotropy.datasets.sts import load_sts, sts_correlations


@pytest.fixture(scope="module")
def data_root():
    shared_data_path("senteval", "STS")
    shared_data_path("SICK", "SICK.txt")
    return shared_data_path()


# counts of scored pairs per sub-file: SentEval's STS12-16 sizes (3108, 1500, 3750, 3000, 1186), by
# `grep -c . STS.gs.<subset>.txt` on the files here (empty gold lines are unscored pairs)
EXPECTED = {
    "STS12": {"MSRpar": 750, "MSRvid": 750, "SMTeuroparl": 459, "surprise.OnWN": 750, "surprise.SMTnews": 399},
    "STS13": {"FNWN": 189, "headlines": 750, "OnWN": 561},
    "STS14": {"deft-forum": 450, "deft-news": 300, "headlines": 750, "images": 750, "OnWN": 750, "tweet-news": 750},
    "STS15": {"answers-forums": 375, "answers-students": 750, "belief": 375, "headlines": 750, "images": 750},
    "STS16": {"answer-answer": 254, "headlines": 249, "plagiarism": 230, "postediting": 244, "question-question": 209},
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sts_years_exact_counts(name, data_root):
    data = load_sts(name, data_dir=data_root)
    counts = {s: int((data.subsets == s).sum()) for s in data.subset_names}
    assert counts == EXPECTED[name]
    assert len(data) == sum(EXPECTED[name].values()) == len(data.text_b) == data.scores.size
    assert data.scores.min() >= 0.0 and data.scores.max() <= 5.0
    assert all(data.text_a) and all(data.text_b)


def test_sts12_first_pair(data_root):
    data = load_sts("STS12", data_dir=data_root)
    # first line of STS.input.MSRpar.txt / STS.gs.MSRpar.txt
    assert data.text_a[0] == "the problem likely will mean corrective changes before the shuttle fleet starts flying again ."
    assert data.scores[0] == pytest.approx(4.4)


@pytest.mark.parametrize("name, split, n", [
    ("STSB", "train", 5749), ("STSB", "dev", 1500), ("STSB", "test", 1379),
    ("SICK", "train", 4439), ("SICK", "dev", 495), ("SICK", "test", 4906),
])
def test_stsb_and_sick_exact_counts(name, split, n, data_root):
    data = load_sts(name, split=split, data_dir=data_root)
    assert len(data) == n
    assert data.name == f"{name}/{split}"


def test_stsb_test_and_sick_test_first_rows(data_root):
    stsb = load_sts("STSB", data_dir=data_root)
    assert (stsb.text_a[0], stsb.text_b[0], stsb.scores[0]) == (
        "a girl is styling her hair .", "a girl is brushing her hair .", 2.5)
    sick = load_sts("SICK", data_dir=data_root)  # CRLF file: the split column must still match
    assert sick.text_a[0] == "There is no boy playing outdoors and there is no man smiling"
    assert sick.scores[0] == pytest.approx(3.3)
    assert sick.scores.min() >= 1.0 and sick.scores.max() <= 5.0


def test_load_sts_bad_arguments(tmp_path):
    with pytest.raises(IsotropyValueError, match="'name' parameter of load_sts must be one of"):
        load_sts("STS17")
    with pytest.raises(IsotropyValueError, match="must be 'test' for STS12"):
        load_sts("STS12", split="train", data_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match="STS.input.MSRpar.txt"):
        load_sts("STS12", data_dir=tmp_path)


def test_sts_correlations_match_closed_forms(rng):
    pred = rng.normal(size=60)
    gold = pred + rng.normal(size=60)
    subsets = np.repeat(["a", "b", "c"], [10, 20, 30])
    r = sts_correlations(pred, gold, subsets)
    per = {}
    for s in "abc":
        m = subsets == s
        per[s] = (np.corrcoef(pred[m], gold[m])[0, 1], np.corrcoef(rankdata(pred[m]), rankdata(gold[m]))[0, 1], m.sum())
        assert r["subsets"][s]["pearson"] == pytest.approx(per[s][0], abs=1e-12)
        assert r["subsets"][s]["spearman"] == pytest.approx(per[s][1], abs=1e-12)
        assert r["subsets"][s]["n"] == per[s][2]
    assert r["all"]["pearson"] == pytest.approx(np.corrcoef(pred, gold)[0, 1], abs=1e-12)
    assert r["mean"]["pearson"] == pytest.approx(np.mean([v[0] for v in per.values()]), abs=1e-12)
    assert r["wmean"]["spearman"] == pytest.approx(
        sum(v[1] * v[2] for v in per.values()) / 60, abs=1e-12)
    # pooling differs from the weighted mean in general
    assert abs(r["all"]["pearson"] - r["wmean"]["pearson"]) > 1e-6


def test_sts_correlations_monotone_and_length_check():
    r = sts_correlations([0.1, 0.2, 0.9, 0.3], [1.0, 1.5, 5.0, 2.0])
    assert r["all"]["spearman"] == pytest.approx(1.0)
    assert r["wmean"] == r["mean"]  # one sub-file
    with pytest.raises(IsotropyValueError, match="one value per gold score"):
        sts_correlations([0.1, 0.2], [1.0, 2.0, 3.0])
