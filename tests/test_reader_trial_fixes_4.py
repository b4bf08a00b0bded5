"""Fixes from a trial of the readers (fourth round): labels ending with a NUL character in text and CSV/TSV files,
the semicolon hint of read_embeddings for a decimal-comma export."""

from __future__ import annotations

import pytest

from isotropy.io.labels import read_labels

# 1. a text or CSV/TSV label ending with a NUL character is refused naming its line, not merged with the label
# without it (numpy's string array drops trailing NULs: 'a\x00' became 'a'), as a .parquet one is (589e724)

_NUL = "ends with a NUL character"


@pytest.mark.parametrize(("name", "content", "where", "kwargs"), [
    ("y.txt", "a\x00\na\nb\n", "line 1", {}),
    ("y.txt", "a\nb\n\x00\n", "line 3", {}),  # a NUL alone became an empty label
    ("y.txt", "a\na\x00\nb\n\n\n", "line 2", {}),  # blank lines at the end: read line by line
    ("y.labels", "a\r\nb \x00 \r\n", "line 2", {}),  # stripped of spaces, the NUL last
    ("y.csv", "a\x00\na\nb\n", "line 1", {}),
    ("y.csv", "label\na\nb\x00\n", "line 3", {}),  # under a header
    ("y.tsv", "a\nb\x00\na\n", "line 2", {}),
    ("y.csv", "1,0\n1\x00,0\n0,1\n", "line 2, column 1", {}),  # a 0/1 cell: '1\x00' was read as 1
    ("y.csv", "text,label\nx,a\n\ny,a\x00\n", "line 4 of column 'label'", {"column": "label"}),
    ("y.tsv", "label\ttext\na\x00\tx\nb\ty\n", "line 2 of column 'label'", {"column": "label"}),
])
def test_a_label_ending_with_nul_is_refused_naming_its_line(tmp_path, name, content, where, kwargs):
    path = tmp_path / name
    path.write_bytes(content.encode())
    with pytest.raises(ValueError, match=f"{where} {_NUL}") as info:  # was read: 'a\x00' the same label as 'a'
        read_labels(path, **kwargs)
    assert "\n" not in str(info.value)
    assert "expected labels without a trailing NUL" in str(info.value)


def test_a_nul_inside_a_label_is_kept(tmp_path):
    path = tmp_path / "y.txt"
    path.write_bytes(b"a\x00b\na\n")  # numpy keeps a NUL that is not trailing: no merge, nothing to refuse
    assert read_labels(path).tolist() == ["a\x00b", "a"]


def test_a_nul_label_in_a_long_text_file_is_found_past_the_first_piece(tmp_path):
    path = tmp_path / "y.txt"
    path.write_bytes(b"a\n" * 200_000 + b"b\x00\n" + b"a\n" * 10)
    with pytest.raises(ValueError, match=f"line 200001 {_NUL}"):
        read_labels(path)
