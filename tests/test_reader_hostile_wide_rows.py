"""Hostile-input review of the readers: text files of few, very wide rows.

- Word-vector text (GloVe, word2vec text): the lines were parsed 8,192 rows at a time, whatever their width, so a
  block held every field of up to 8,192 lines of up to 1 MiB each as Python strings, 20-30 times the bytes they take
  in the file: a file of 200 lines of 349,000 two-digit numbers held gigabytes of strings for the 279 MB of
  vectors it returns. A block now ends at :data:`isotropy.io.word_vectors._FIELDS_PER_BLOCK` fields too.
- JSON-lines texts (``read_texts``, ``isotropy measure --model --texts t.jsonl``): pandas makes a column of every
  field of any line, so n lines with a field of their own each were an n x n table (quadratic in the lines
  of a file of a few hundred KB), and the message of a file without ``--text-column`` named all 15,000 fields. Each object is now
  cut to the text field (or, to be named in a message, the first 64 fields) before pandas reads it.
- A line of JSON that is not an object (a list, a string, a number, null) in such a file was a ``TypeError``
  traceback from pandas or pandas' "dictionary update sequence element #0 has length 1"; refused naming its line.
- A texts table whose text column is not named, or another one is, was refused naming every column: a 1 MB line
  for 100,000 columns. At most 20 now, and how many there are.
- A texts table of many tiny cells: pandas holds each as a Python string, about 200 bytes with its parser's own,
  whatever the one or two bytes it takes in the file (a wide .csv of short cells held many times its
  size to read one column of). More cells than ``MAX_TABLE_CELLS`` are refused before pandas reads them.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from isotropy.io import word_vectors
from isotropy.io.word_vectors import read_word_vectors


def _wide_vectors(path, n_words: int, dim: int) -> np.ndarray:
    """A GloVe text file of ``n_words`` lines of ``dim`` two-digit numbers (written as np.savetxt would)."""
    rng = np.random.default_rng(0)
    X = rng.integers(10, 100, size=(n_words, dim)).astype(np.float32)
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(f"w{i} " + " ".join(str(int(v)) for v in row) + "\n" for i, row in enumerate(X))
    return X


def test_wide_word_vector_rows_are_parsed_in_blocks_bounded_by_their_fields(tmp_path):
    """The peak memory of reading few, very wide rows stays within a few times the file, not 20-30 times."""
    path = tmp_path / "wide.txt"
    X = _wide_vectors(path, n_words=60, dim=40_000)  # 7.2 MB, 2.4 million fields: under 8,192 rows, one block before
    size = path.stat().st_size
    tracemalloc.start()
    try:
        words, read = read_word_vectors(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert words == [f"w{i}" for i in range(60)]
    np.testing.assert_array_equal(read, X)  # the same vectors, across the blocks
    # before: about 20 times the file (every field a Python string at once); now the strings of one block of
    # _FIELDS_PER_BLOCK fields, the vectors parsed (1.3 times the file here) and their concatenation
    assert peak < 8 * size, f"peak {peak / 2**20:.0f} MiB for a file of {size / 2**20:.1f} MiB"


def test_a_block_ends_at_its_fields_and_the_vectors_are_exact(tmp_path, monkeypatch):
    """Blocks cut by fields, at a line that fills one exactly and mid-way: the same words and vectors, in order."""
    monkeypatch.setattr(word_vectors, "_FIELDS_PER_BLOCK", 10)
    path = tmp_path / "v.vec"
    rng = np.random.default_rng(1)
    X = rng.normal(size=(7, 5)).astype(np.float32)
    lines = ["7 5"] + [f"w{i} " + " ".join(repr(float(v)) for v in row) for i, row in enumerate(X)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    words, read = read_word_vectors(path)
    assert words == [f"w{i}" for i in range(7)]
    np.testing.assert_array_equal(read, X)
    words, read = read_word_vectors(path, limit=3)
    np.testing.assert_array_equal(read, X[:3])


def _distinct_fields_jsonl(path, n: int, extra: str = "") -> None:
    """A JSON-lines file of ``n`` texts, each line with a field of its own besides ``text``."""
    path.write_text("".join(f'{{"text": "text {i}", "k{i}": {i}}}\n' for i in range(n)) + extra, encoding="utf-8")


def test_json_lines_each_with_fields_of_their_own_are_read_without_a_table_of_every_field(tmp_path):
    """pandas builds one column per field of any line: a file of n lines, each with a field of its own, was an n x n
    table (quadratic in the lines). Only the fields read are kept now."""
    from isotropy.measure.from_model import read_texts

    path = tmp_path / "t.jsonl"
    _distinct_fields_jsonl(path, 3000)
    tracemalloc.start()
    try:
        texts = read_texts(path, column="text")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert texts == [f"text {i}" for i in range(3000)]
    assert peak < 32 * 2**20, f"peak {peak / 2**20:.0f} MiB for a file of {path.stat().st_size / 2**10:.0f} KiB"


def test_json_lines_of_many_fields_without_a_column_name_a_few_of_them(tmp_path):
    """Without ``column``, a file of several fields is refused naming them: a few, not 3,000."""
    import pytest

    from isotropy._utils.errors import IsotropyValueError  # noqa: F401 (the refusal is a ValueError)
    from isotropy.measure.from_model import read_texts

    path = tmp_path / "t.jsonl"
    _distinct_fields_jsonl(path, 3000)
    with pytest.raises(ValueError, match="name the text column") as err:
        read_texts(path)
    assert len(str(err.value)) < 2000
    assert "'text', 'k0', 'k1'" in str(err.value)
    with pytest.raises(ValueError, match="The text column 'txt' is not in") as err:
        read_texts(path, column="txt")
    assert len(str(err.value)) < 2000


@pytest.mark.parametrize("extra", ['{"text": "a", \n', '{"text": null}\n', '{"text": 1' + '0' * 5000 + '}\n'])
def test_json_lines_with_a_bad_line_after_many_fields_are_refused_as_before(tmp_path, extra):
    """A line that is not JSON, or without a text, after lines of fields of their own: refused in one line."""
    from isotropy.measure.from_model import read_texts

    path = tmp_path / "t.jsonl"
    _distinct_fields_jsonl(path, 3000, extra)
    with pytest.raises(ValueError) as err:
        read_texts(path, column="text")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(("extra", "kind"), [("[1, 2]", "list"), ('"a"', "str"), ("7", "int"), ("null", "NoneType"),
                                             ("true", "bool")])
@pytest.mark.parametrize("first", [True, False])
def test_a_json_line_that_is_not_an_object_is_refused_naming_its_line(tmp_path, extra, kind, first):
    """A line holding a JSON list, string, number or null among the objects of a JSON-lines texts file was a
    ``TypeError`` traceback from pandas ("cannot convert dictionary update sequence element #0 to a sequence",
    "'int' object is not iterable") or pandas' words ("dictionary update sequence element #0 has length 1"); it is
    refused naming its line, as the labels reader refuses it. A file of lists only was read as columns '0', '1'."""
    from isotropy.measure.from_model import read_texts

    path = tmp_path / "t.jsonl"
    lines = ['{"text": "a"}', "", '{"text": "b"}']
    lines.insert(0 if first else 3, extra)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    line = 1 if first else 4
    for column in ("text", None):
        with pytest.raises(ValueError) as err:
            read_texts(path, column=column)
        assert str(err.value) == (f"The texts file {str(path)!r} has a JSON {kind} on line {line}, not an object; "
                                  f"expected one JSON object per line, its text in a field (--text-column).")


def _wide_texts_csv(path, n_rows: int, n_columns: int) -> None:
    """A texts table of ``n_rows`` rows under a header: a text column, then ``n_columns`` columns of two letters."""
    filler = ",xy" * n_columns
    path.write_text("text" + "".join(f",c{i}" for i in range(n_columns)) + "\n"
                    + "".join(f"text {i}{filler}\n" for i in range(n_rows)), encoding="utf-8")


def test_a_texts_table_of_more_cells_than_read_is_refused_before_pandas_reads_it(tmp_path, monkeypatch):
    """pandas holds every cell of a texts table as a Python string (about 200 bytes each, with its parser's own),
    whatever the one or two bytes it takes in the file: a wide .csv of short cells held many times its size to
    read its one text column. A table of more cells (columns of line 1 x lines) than
    :data:`isotropy.measure.from_model.MAX_TABLE_CELLS` is refused in one line before pandas reads it."""
    from isotropy.measure import from_model
    from isotropy.measure.from_model import read_texts

    monkeypatch.setattr(from_model, "MAX_TABLE_CELLS", 1000)
    path = tmp_path / "t.csv"
    _wide_texts_csv(path, 9, 99)  # 10 lines of 100 columns: 1,000 cells, read
    assert read_texts(path, column="text") == [f"text {i}" for i in range(9)]
    _wide_texts_csv(path, 10, 99)  # 11 lines: refused
    with pytest.raises(ValueError) as err:
        read_texts(path, column="text")
    assert str(err.value) == (f"The texts file {str(path)!r} is a table of 100 columns and 11 lines (1,100 cells), "
                              f"more than the 1,000 isotropy reads (pandas holds each cell as a Python string); "
                              f"expected a few columns: keep the text column alone (a .txt file, one text a line, "
                              f"or a .csv of that column).")
    # one column: the lines are what is too many, and a .txt file is read without pandas
    path.write_text("".join(f"text {i}\n" for i in range(1001)), encoding="utf-8")
    with pytest.raises(ValueError) as err:
        read_texts(path)
    assert str(err.value).endswith("is a table of 1 column and 1,001 lines (1,001 cells), more than the 1,000 "
                                   "isotropy reads (pandas holds each cell as a Python string); expected fewer lines: "
                                   "a .txt file, one text a line, is read without pandas.")
    txt = tmp_path / "t.txt"
    txt.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    assert len(read_texts(txt)) == 1001


@pytest.mark.parametrize("n_columns", [3, 100])
def test_a_texts_table_message_names_at_most_20_columns(tmp_path, n_columns):
    """A table without its text column named, or with another one named, was refused naming every column (a 1 MB
    line for 100,000 columns): at most 20 now, and how many there are. Its other refusals are as before."""
    from isotropy.measure.from_model import read_texts

    path = tmp_path / "t.csv"
    _wide_texts_csv(path, 5, n_columns)
    assert read_texts(path, column="text") == [f"text {i}" for i in range(5)]
    assert read_texts(path, column="c1") == ["xy"] * 5
    shown = ("['text', 'c0', 'c1', 'c2']" if n_columns == 3 else
             "['text', " + ", ".join(f"'c{i}'" for i in range(19)) + ", ...] (101 in all)")
    with pytest.raises(ValueError) as err:
        read_texts(path)
    assert f"has the columns {shown}; name the text column" in str(err.value)
    with pytest.raises(ValueError) as err:
        read_texts(path, column="txt")
    assert (f"The text column 'txt' is not in {str(path)!r}; expected one of {shown} or a position from 1 to "
            f"{n_columns + 1}.") in str(err.value)
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("text 3,", "text 3,a,", 1), encoding="utf-8")
    with pytest.raises(ValueError, match=rf"line 5 has {n_columns + 2} columns, the lines above it {n_columns + 1}"):
        read_texts(path, column="text")
    path.write_text(text.replace("c0,", "text,", 1), encoding="utf-8")
    with pytest.raises(ValueError, match=r"has 2 columns named 'text'"):
        read_texts(path, column="text")


def test_fuzzed_json_lines_of_any_json_values_read_or_are_refused_in_one_line(tmp_path):
    """Lines of any JSON values (objects with or without the text field, lists, numbers, strings, null): texts, or
    one ValueError line; never another kind of error (a list line was a TypeError traceback)."""
    import json

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from isotropy.measure.from_model import read_texts

    scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False), st.text(max_size=5))
    values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["text", "k", "y"]), inner, max_size=3), max_leaves=6)
    path = tmp_path / "t.jsonl"

    @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(lines=st.lists(values, min_size=1, max_size=6), column=st.sampled_from(["text", None]))
    def check(lines, column):
        path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
        try:
            texts = read_texts(path, column=column)
        except ValueError as exc:
            assert "\n" not in str(exc)
        else:
            assert len(texts) == len(lines) and all(isinstance(text, str) and text.strip() for text in texts)

    check()


def test_json_lines_texts_keep_their_escapes_when_cut_to_the_text_field(tmp_path):
    """The objects cut to the text field were written back with ensure_ascii=False: a lone surrogate escape (an emoji
    cut in half by a scraper, "\\ud800") became a raw surrogate that could not be encoded for pandas, and the whole file
    was refused (a review). They are read as before the cut: the same texts as pandas reads from the file itself."""
    import pandas as pd

    from isotropy.measure.from_model import read_texts

    path = tmp_path / "t.jsonl"
    path.write_text('{"text": "a\\ud800b", "y": 1}\n{"text": "caf\\u00e9 \\ud83d\\ude00", "y": 0}\n{"text": "é 😀", "y": 2}\n',
                    encoding="utf-8")
    expected = pd.read_json(path, lines=True, dtype=False)["text"].str.strip().tolist()
    assert read_texts(path, column="text") == expected == ["ab", "café 😀", "é 😀"]


def test_a_texts_table_counts_rows_not_the_line_breaks_of_its_quoted_texts(tmp_path, monkeypatch):
    """Its cells were counted as columns x line breaks: a CSV of multi-paragraph texts (line breaks inside quotes)
    was refused for cells it does not have (a review). Where the line breaks are too many, the rows are counted as the
    csv module reads them."""
    from isotropy.measure import from_model
    from isotropy.measure.from_model import read_texts

    monkeypatch.setattr(from_model, "MAX_TABLE_CELLS", 100)
    path = tmp_path / "t.csv"
    texts = [f"paragraph {i}\n" + "\n".join(f"line {j}" for j in range(9)) for i in range(10)]
    path.write_text("text,y\n" + "".join(f'"{t}",{i}\n' for i, t in enumerate(texts)), encoding="utf-8")
    assert read_texts(path, column="text") == texts  # 2 columns x 11 rows, 101 line breaks
    path.write_text("text,y\n" + "".join(f'"{t}",{i}\n' for i, t in enumerate(texts * 5)), encoding="utf-8")
    with pytest.raises(ValueError, match=r"is a table of 2 columns and 51 lines \(102 cells\), more than the 100"):
        read_texts(path, column="text")
