"""Hostile-input review of the readers: GLUE files (``load_glue_task``) that are not UTF-8 TSV as published.

A file that is not UTF-8 was a ``UnicodeDecodeError`` traceback naming no file, and a field longer than Python's
``csv`` limit (131,072 characters) a ``_csv.Error`` traceback; both are one line naming the file now.
"""

from __future__ import annotations

import re

import pytest

from isotropy._utils.errors import IsotropyValueError
from isotropy.datasets.glue import load_glue_task


def _sst2(tmp_path, content: bytes):
    folder = tmp_path / "glue_data" / "SST-2"
    folder.mkdir(parents=True)
    (folder / "train.tsv").write_bytes(content)
    return folder / "train.tsv"


def test_a_glue_file_that_is_not_utf8_is_refused_naming_its_line(tmp_path):
    path = _sst2(tmp_path, b"sentence\tlabel\nfine\t1\ncaf\xe9\t1\n")
    with pytest.raises(IsotropyValueError) as err:
        load_glue_task("sst2", data_dir=tmp_path)
    assert str(err.value) == (f"GLUE task 'sst2': {path} is not a readable UTF-8 TSV file (line 3, byte 0xe9); "
                              f"expected the file as download_glue_data.py writes it.")


def test_a_glue_field_past_the_csv_limit_is_refused_in_one_line(tmp_path):
    path = _sst2(tmp_path, b"sentence\tlabel\n" + b"a" * 200_000 + b"\t1\n")
    with pytest.raises(IsotropyValueError) as err:
        load_glue_task("sst2", data_dir=tmp_path)
    assert str(err.value) == (f"GLUE task 'sst2': {path} is not a readable UTF-8 TSV file (field larger than field "
                              f"limit (131072)); expected the file as download_glue_data.py writes it.")


def test_a_glue_file_as_published_still_reads(tmp_path):
    _sst2(tmp_path, "sentence\tlabel\ncafé au lait \t1\nbad\t0\n".encode())
    data = load_glue_task("sst2", data_dir=tmp_path)
    assert data.text_a == ["café au lait", "bad"] and data.labels.tolist() == [1, 0]


def test_a_glue_label_error_names_its_line_of_the_file_past_blank_lines(tmp_path):
    """The rows were numbered after the blank lines were dropped: a bad label on line 5, after a blank line 3, was said
    to be on line 4 (a review)."""
    path = _sst2(tmp_path, b"sentence\tlabel\nfine\t1\n\nok\t0\nbad\tmaybe\n")
    with pytest.raises(IsotropyValueError, match=rf"{re.escape(str(path))}:5\b"):
        load_glue_task("sst2", data_dir=tmp_path)
