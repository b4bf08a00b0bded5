"""Corpus loaders (isotropy.datasets.corpora) on the real WikiText-2 and PTB files in ../shared/data."""

from __future__ import annotations

from collections import Counter

import pytest

from conftest import shared_data_path
from isotropy.datasets.corpora import (
    corpus_path,
    load_corpus,
    load_ptb,
    load_text_file,
    load_wikitext2,
)


def _raw_words(path, *, drop_headings=False):
    """Independent count: every whitespace token of the file, optionally without '= ... =' heading lines."""
    words = []
    for line in path.read_text(encoding="utf-8").splitlines():
        tokens = line.split()
        if drop_headings and len(tokens) >= 2 and tokens[0] == tokens[-1] == "=":
            continue
        words.extend(tokens)
    return words


@pytest.mark.parametrize("split, n_words, n_lines", [("validation", 213_886, 2_461), ("test", 241_211, 2_891)])
def test_wikitext2_real_files(split, n_words, n_lines):
    root = shared_data_path()
    corpus = load_wikitext2(split, data_dir=root, drop_headings=False)
    # counts match the data README (~214k / ~241k words) and an independent pass over the file
    assert corpus.n_words == n_words == len(_raw_words(corpus_path("wikitext-2", split, data_dir=root)))
    assert len(corpus) == n_lines
    assert corpus.lines[0][:3] == (["=", "Homarus", "gammarus"] if split == "validation" else ["=", "Robert", "<unk>"])
    body = load_wikitext2(split, data_dir=root)  # default: headings dropped
    expected = _raw_words(corpus_path("wikitext-2", split, data_dir=root), drop_headings=True)
    assert body.n_words == len(expected) and body.word_counts() == Counter(expected)
    assert body.lines[0][:3] == (["Homarus", "gammarus", ","] if split == "validation" else ["Robert", "<unk>", "is"])
    assert body.source["split"] == split and body.name == f"wikitext-2/{split}"


@pytest.mark.parametrize("split, n_words, n_lines", [("validation", 70_390, 3_370), ("test", 78_669, 3_761)])
def test_ptb_real_files(split, n_words, n_lines):
    corpus = load_ptb(split, data_dir=shared_data_path())
    assert corpus.n_words == n_words and len(corpus) == n_lines
    counts = corpus.word_counts()
    assert counts["the"] == (4_122 if split == "validation" else 4_529)
    assert counts["N"] > 2_000 and "<unk>" in counts  # PTB's number and unknown-word markers kept as words
    assert all(w == w.lower() or w == "N" for w in counts)  # lower-cased text


def test_load_corpus_dispatch_and_text_files(tmp_path):
    root = shared_data_path()
    assert load_corpus("ptb", split="test", data_dir=root).name == "ptb/test"
    path = tmp_path / "mine.txt"
    path.write_text("Hello  world .\n\n   \nsecond line\twith tab\n", encoding="utf-8")
    corpus = load_corpus(path)
    assert corpus.lines == [["Hello", "world", "."], ["second", "line", "with", "tab"]]
    assert corpus.n_words == 7 and load_text_file(path).name == "mine.txt"


def test_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"expected the file '.*wikitext-2/wiki\.valid\.tokens'"):
        load_wikitext2(data_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match=r"expected the file '.*ptb/ptb\.test\.txt'"):
        load_corpus("ptb", split="test", data_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_corpus(tmp_path / "missing.txt")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    with pytest.raises(ValueError, match="is empty"):
        load_text_file(empty)
    (tmp_path / "wikitext-2").mkdir()
    (tmp_path / "wikitext-2" / "wiki.valid.tokens").write_text(" \n = Only a heading = \n")
    with pytest.raises(ValueError, match="is empty"):
        load_wikitext2(data_dir=tmp_path)
    with pytest.raises(ValueError, match="'split' parameter of corpus_path must be one of"):
        corpus_path("ptb", "dev")
