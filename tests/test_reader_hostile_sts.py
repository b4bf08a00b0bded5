"""Hostile-input review of the readers: STS files (``load_sts``) that are damaged or not what they are named.

Each was a traceback naming no file: an empty ``SICK.txt`` an ``IndexError`` ("list index out of range"), a gold
score that is not a number ``could not convert string to float: 'x'``, a file that is not UTF-8 a
``UnicodeDecodeError``. Each is now one line naming the file, its line and what was expected.
"""

from __future__ import annotations

import pytest

from isotropy._utils.errors import IsotropyValueError
from isotropy.datasets.sts import load_sts


def _stsb(tmp_path, content: bytes):
    folder = tmp_path / "senteval" / "STS" / "STSBenchmark"
    folder.mkdir(parents=True)
    (folder / "sts-train.csv").write_bytes(content)
    return folder / "sts-train.csv"


def test_an_empty_sick_file_is_refused_naming_it(tmp_path):
    (tmp_path / "SICK").mkdir()
    (tmp_path / "SICK" / "SICK.txt").write_bytes(b"")
    with pytest.raises(IsotropyValueError) as err:
        load_sts("SICK", data_dir=tmp_path)
    assert str(err.value) == (f"SICK: {tmp_path / 'SICK' / 'SICK.txt'} is empty; expected the full release's columns "
                              f"sentence_A, sentence_B, relatedness_score, SemEval_set.")


def test_a_gold_score_that_is_not_a_number_is_refused_naming_its_line(tmp_path):
    path = _stsb(tmp_path, b"g\tf\t2012\t1\t4.5\ta b\tc d\ng\tf\t2012\t2\tx\te f\tg h\n")
    with pytest.raises(IsotropyValueError) as err:
        load_sts("STSB", split="train", data_dir=tmp_path)
    assert str(err.value) == f"STSB: line 2 of {path} has the score 'x'; expected a number in column 5."
    folder = tmp_path / "senteval" / "STS" / "STS12-en-test"
    folder.mkdir(parents=True)
    for subset in ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"):
        (folder / f"STS.input.{subset}.txt").write_text("a b\tc d\n", encoding="utf-8")
        (folder / f"STS.gs.{subset}.txt").write_text("4.5\n" if subset != "MSRvid" else "four\n", encoding="utf-8")
    with pytest.raises(IsotropyValueError) as err:
        load_sts("STS12", data_dir=tmp_path)
    assert str(err.value) == (f"STS12: line 1 of {folder / 'STS.gs.MSRvid.txt'} has the score 'four'; expected a "
                              f"number (or an empty line for an unscored pair).")


def test_a_file_that_is_not_utf8_is_refused_naming_its_line(tmp_path):
    path = _stsb(tmp_path, b"g\tf\t2012\t1\t4.5\ta b\tc d\ng\tf\t2012\t2\t3.0\tcaf\xe9\tg h\n")
    with pytest.raises(IsotropyValueError) as err:
        load_sts("STSB", split="train", data_dir=tmp_path)
    assert str(err.value) == f"STSB: {path} is not UTF-8 text (line 2, byte 0xe9); expected the file as published."


def test_scores_read_as_written(tmp_path):
    _stsb(tmp_path, b"g\tf\t2012\t1\t4.5\ta b\tc d\ng\tf\t2012\t2\t0\te f\tg h\n")
    pairs = load_sts("STSB", split="train", data_dir=tmp_path)
    assert pairs.scores.tolist() == [4.5, 0.0] and pairs.text_a == ["a b", "e f"]


def test_a_sick_row_cut_short_or_with_a_bad_score_is_refused_naming_its_line(tmp_path):
    (tmp_path / "SICK").mkdir()
    path = tmp_path / "SICK" / "SICK.txt"
    header = "pair_ID\tsentence_A\tsentence_B\tentailment_label\trelatedness_score\tSemEval_set\n"
    path.write_text(header + "1\ta\tb\tNEUTRAL\t3.5\tTEST\n2\tc\td\tNEUTRAL\tmany\tTEST\n", encoding="utf-8")
    with pytest.raises(IsotropyValueError) as err:
        load_sts("SICK", data_dir=tmp_path)
    assert str(err.value) == (f"SICK: line 3 of {path} has the score 'many'; expected a number in the column "
                              f"relatedness_score.")
    path.write_text(header + "1\ta\tb\tNEUTRAL\t3.5\tTEST\n", encoding="utf-8")
    assert load_sts("SICK", data_dir=tmp_path).scores.tolist() == [3.5]


def test_a_sick_row_without_its_later_columns_is_refused_naming_its_line(tmp_path):
    """A header whose SemEval_set comes first: a row of the split cut short was an IndexError traceback."""
    (tmp_path / "SICK").mkdir()
    path = tmp_path / "SICK" / "SICK.txt"
    path.write_text("SemEval_set\tsentence_A\tsentence_B\trelatedness_score\nTEST\ta\tb\t3.5\nTEST\tc\n",
                    encoding="utf-8")
    with pytest.raises(IsotropyValueError) as err:
        load_sts("SICK", data_dir=tmp_path)
    assert str(err.value) == f"SICK: line 3 of {path} has 2 tab-separated fields; expected 4, as its header names."
