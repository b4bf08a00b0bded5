"""``isotropy measure`` messages about its input files, from a new-user trial: a --texts folder, a .txt that is a
table, a headerless .csv, a misspelt column, Python's spellings on the command line, a bad byte's line and a file
of blank lines. Each refusal is one line that names the option, the value and what was expected; all come before
any model is loaded (the texts are read first)."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from isotropy.cli import cli
from isotropy.measure.from_model import read_texts

TEXTS = ["the cat sat on the mat .", "a dog ran .", "the dog sat on a mat", "a cat ran"]
SICK_HEADER = "pair_ID\tsentence_A\tsentence_B\trelatedness_score"
STS_LINES = ["main-captions\tMSRvid\t2012test\t0001\t5.000\ta plane is taking off .\tan air plane is taking off .",
             "main-captions\tMSRvid\t2012test\t0004\t3.800\ta man is playing a flute .\ta man plays a flute ."]


def _error(*args) -> str:
    """The one line of a refused ``measure --model`` (exit status 2)."""
    result = CliRunner().invoke(cli, ["measure", "--model", "all-MiniLM-L6-v2", *map(str, args), "--device", "cpu"])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    return lines[0]


def test_a_texts_folder_gets_the_one_line_message_of_a_texts_file(tmp_path):
    """click said "Invalid value for '--texts': File 'shards' is a directory." with a usage hint."""
    (tmp_path / "shards").mkdir()
    assert _error("--texts", tmp_path / "shards") == (
        f"Error: --texts: the texts file {str(tmp_path / 'shards')!r} is a directory, not a regular file; expected a "
        f"text file (one text a line), a CSV/TSV file or a JSON-lines file.")
    assert _error("--texts", tmp_path / "nothing.txt").startswith(
        f"Error: --texts: the texts file {str(tmp_path / 'nothing.txt')!r} does not exist; expected a text file")
    (tmp_path / "t.txt").write_text("\n".join(TEXTS) + "\n")
    line = _error("--texts", tmp_path / "t.txt", "--plot", tmp_path / "shards")
    assert "--plot" in line and repr(str(tmp_path / "shards")) in line and "is a directory; expected" in line
    assert "Invalid value" not in line


def test_a_txt_table_says_to_name_it_after_its_format(tmp_path):
    """SICK.txt is tab-separated: --text-column said it was read as plain text, and not what to do."""
    sick = tmp_path / "SICK.txt"
    sick.write_text(f"{SICK_HEADER}\n1\tA kid plays.\tA child plays.\t4.5\n2\tA dog runs.\tA cat sits.\t1.2\n")
    assert _error("--texts", sick, "--text-column", "sentence_A") == (
        f"Error: --text-column 'sentence_A' needs a CSV/TSV or JSON-lines file; {str(sick)!r} is read as plain text, "
        f"one text a line, though its lines hold tab-separated columns: name it, or a copy or link of it, "
        f"'SICK.tsv' to read its column 'sentence_A'.")
    link = tmp_path / "SICK.tsv"
    link.symlink_to(sick)  # the advice works
    assert read_texts(link, column="sentence_A") == ["A kid plays.", "A dog runs."]
    plain = tmp_path / "t.txt"
    plain.write_text("\n".join(TEXTS) + "\n")
    assert _error("--texts", plain, "--text-column", "text").endswith(
        "is read as plain text, one text a line; name it, or a copy or link of it, after its format (.csv, .tsv, "
        ".jsonl) to read a column, or leave --text-column out to read one text a line.")


@pytest.mark.parametrize("column", [None, "sentence1"])
def test_a_headerless_csv_says_it_has_no_header(tmp_path, column):
    """SentEval's sts-train.csv: its first line was listed as the "columns" ('0001', '5.000', a sentence)."""
    sts = tmp_path / "sts-train.csv"
    sts.write_text("\n".join(STS_LINES) + "\n")
    line = _error("--texts", sts, *(["--text-column", column] if column else []))
    named = "" if column is None else f", so --text-column {column!r} names none of them"
    assert line == (f"Error: --texts: the texts file {str(sts)!r} has no header line: line 1 holds data "
                    f"('main-captions', 'MSRvid', '2012test', '0001', ...), not column names{named}; expected "
                    f"--text-column giving the texts' column by its position, 1 to 7 (as cut -f counts its 7 "
                    f"tab-separated columns), or a first line naming them.")


def test_a_misspelt_column_gets_a_suggestion(tmp_path):
    """Metric and model names got "Did you mean"; --text-column and --label-column listed the columns only."""
    table = tmp_path / "sst.csv"
    table.write_text("sentence,label\n" + "".join(f"{t},{i % 2}\n" for i, t in enumerate(TEXTS)))
    assert _error("--texts", table, "--text-column", "sentense") == (
        f"Error: --texts: the text column 'sentense' is not in {str(table)!r}; expected one of ['sentence', "
        f"'label'] or a position from 1 to 2. Did you mean 'sentence'?")
    jsonl = tmp_path / "t.jsonl"
    jsonl.write_text("".join(f'{{"premise": "{t}", "label": 1}}\n' for t in TEXTS))
    assert _error("--texts", jsonl, "--text-column", "premis").endswith(". Did you mean 'premise'?")
    line = _error("--texts", table, "--text-column", "sentence", "--labels", table, "--label-column", "lable")
    assert line.endswith("expected the name of a column of its first line or a position from 1 to 2. Did you mean "
                         "'label'?"), line
    # a name like none of them: no suggestion, the header hint instead
    assert _error("--texts", table, "--text-column", "zzz").endswith(
        "or a position from 1 to 2 (line 1 was read as the file's header line; a file without one gives its column "
        "by position).")


def test_command_line_messages_speak_the_command_line(tmp_path):
    """The readers' messages name Python's spelling beside the option's; the command's say the option only."""
    np.savez(tmp_path / "E.npz", emb=np.eye(4), other=np.eye(4))
    result = CliRunner().invoke(cli, ["measure", str(tmp_path / "E.npz")])
    assert result.exit_code == 2
    assert result.output.strip().endswith("expected --key naming one of them."), result.output
    np.save(tmp_path / "E.npy", np.random.default_rng(0).normal(size=(4, 3)))
    labels = tmp_path / "lab.txt"
    labels.write_bytes("négatif\npositif\nnégatif\npositif\n".encode("latin-1"))
    result = CliRunner().invoke(cli, ["measure", str(tmp_path / "E.npy"), "--labels", str(labels), "--metrics",
                                      "silhouette_score"])
    assert result.exit_code == 2 and "or give its encoding: --encoding latin-1)" in result.output, result.output
    assert "in Python" not in result.output and "encoding=" not in result.output
    from isotropy.measure.report import command_words

    assert command_words("a (--label-column; column= in Python) b --label-column x (label_column= in Python).") == \
        "a (--label-column) b --label-column x."


def test_a_bad_byte_is_said_by_its_line(tmp_path):
    """"at byte 4645" pointed nowhere an editor shows; the line does."""
    path = tmp_path / "lat.txt"
    path.write_bytes("one\r\ntwo\n\nthree café\n".encode("latin-1"))
    assert _error("--texts", path) == (
        f"Error: --texts: the texts file {str(path)!r} is not utf-8 text (byte 0xe9 on line 4: invalid continuation "
        f"byte); give its encoding (--encoding, e.g. latin-1 or cp1252).")


@pytest.mark.parametrize(("content", "said"), [
    ("\n\n  \n\n", "holds 0 texts (4 blank lines skipped)"),
    ("one text\n\n\n", "holds 1 text (2 blank lines skipped)"),
    ("", "holds 0 texts (it is empty)"),
])
def test_a_file_of_blank_lines_says_they_were_skipped(tmp_path, content, said):
    """It said "holds 0 text(s); expected at least 2" of a file of 4 lines."""
    path = tmp_path / "blank.txt"
    path.write_text(content)
    assert _error("--texts", path) == (f"Error: --texts: the texts file {str(path)!r} {said}; expected at least 2 "
                                       f"(one text a line).")


def test_a_utf16_texts_file_asks_for_utf16(tmp_path):
    """It suggested latin-1, which then measured the UTF-16 bytes as garbage texts."""
    path = tmp_path / "u16.txt"
    path.write_text("a man is dancing .\nA dog runs .\n" * 20, encoding="utf-16")
    assert _error("--texts", path) == (
        f"Error: --texts: the texts file {str(path)!r} is not utf-8 text (byte 0xff on line 1: invalid start byte); "
        f"give its encoding (--encoding utf-16: it starts with a UTF-16 byte-order mark).")
    assert "holds a NUL character on line 1" in _error("--texts", path, "--encoding", "latin-1")


def test_a_utf32_texts_file_read_as_utf16_asks_for_utf32(tmp_path):
    """--encoding utf-16 on a UTF-32 file: "holds a NUL character ...; expected text without NUL characters", with no
    word of UTF-32."""
    path = tmp_path / "u32.txt"
    path.write_text("a man is dancing .\nA dog runs .\n" * 20, encoding="utf-32")
    assert _error("--texts", path, "--encoding", "utf-16") == (
        f"Error: --texts: the texts file {str(path)!r} holds a NUL character on line 1 (read as utf-16), which no "
        f"text does; give its encoding (--encoding utf-32: it starts with a UTF-32 byte-order mark).")
    path.write_text("a man is dancing .\nA dog runs .\n" * 20, encoding="utf-32-be")  # without a mark
    assert _error("--texts", path).endswith(
        "(read as utf-8), which no text does; give its encoding (--encoding utf-32-be: its bytes decode as UTF-32 "
        "text, without a byte-order mark).")


@pytest.mark.parametrize(("name", "content", "said"), [
    ("t.jsonl", '{"text": "a cat", "label": 1}\n\n{"text": "a dog", "label": 0}\n{"txt": "oops", "label": 1}\n',
     "has no field 'text' on line 4 (1 of 3 lines without a text); expected a text in the field 'text' on every line."),
    ("t.jsonl", '{"text": "a cat"}\n{"text": " "}\n{"text": "a dog"}\n',
     "has an empty 'text' on line 2 (1 of 3 lines without a text); expected a text in the field 'text' on every line."),
    # a null was said to be "no field" (pandas reads both as missing; found in review)
    ("t.jsonl", '{"text": "a cat"}\n{"text": "a dog"}\n{"text": null}\n',
     "has a null 'text' on line 3 (1 of 3 lines without a text); expected a text in the field 'text' on every line."),
    ("t.csv", 'text,label\na cat,1\n"",0\na dog,1\n',
     "is empty in row 2 under the header line (1 of 3 rows empty); expected a text in every row."),
])
def test_a_missing_or_empty_text_is_said_at_the_line_the_user_sees(tmp_path, name, content, said):
    """A JSON-lines file whose line 3 lacked the text field was said to be "empty at row 2" (a 0-based row of the
    parsed table, and a missing field called empty), while the labels reader names the same line "line 3" (a user
    trial with bad.jsonl). The line is counted in the file as an editor numbers it, blank lines included; a CSV's
    row from 1 under its header."""
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError) as err:
        read_texts(path, column="text")
    message = str(err.value)
    assert message.endswith(said), message
    assert message.startswith((f"The texts file {str(path)!r} ", f"The text column 'text' of {str(path)!r} "))
    assert _error("--texts", path, "--text-column", "text").endswith(said)


@pytest.mark.parametrize("suffix", [".jsonl", ".ndjson"])
def test_a_json_lines_file_of_several_fields_is_not_told_to_add_a_header_line(tmp_path, suffix):
    """SNLI's JSON lines (gold_label, sentence1, sentence2) without --text-column were told "line 1 names the columns,
    so a file without a header line needs one": JSON lines have no header line, each line names its fields."""
    path = tmp_path / f"snli{suffix}"
    path.write_text('{"gold_label": "neutral", "sentence1": "a cat sat .", "sentence2": "a dog ran ."}\n'
                    '{"gold_label": "entailment", "sentence1": "a man sang .", "sentence2": "a man made a sound ."}\n')
    expected = (f"The texts file {str(path)!r} has the columns ['gold_label', 'sentence1', 'sentence2']; name the "
                f"text column (--text-column, a field of each line).")
    with pytest.raises(ValueError) as caught:
        read_texts(path)
    assert str(caught.value) == expected
    assert _error("--texts", path) == "Error: --texts: t" + expected[1:]


def test_a_table_of_several_columns_is_still_told_about_its_header_line(tmp_path):
    path = tmp_path / "dev.tsv"
    path.write_text("sentence\tlabel\na cat sat .\t1\na dog ran .\t0\n")
    with pytest.raises(ValueError) as caught:
        read_texts(path)
    assert str(caught.value) == (f"The texts file {str(path)!r} has the columns ['sentence', 'label']; name the text "
                                 f"column (--text-column; line 1 names the columns, so a file without a header line "
                                 f"needs one).")


@pytest.mark.parametrize(("value", "kind"), [('["the", "cat", "sat"]', "array"), ('{"en": "a cat"}', "object"),
                                             ("5", "number"), ("true", "true/false")])
def test_a_json_lines_text_that_is_not_a_string_is_refused_at_its_line(tmp_path, value, kind):
    """A JSON-lines field holding a list of tokens, an object, a number or true/false was embedded as Python's
    str() of it ("['the', 'cat', 'sat']", "{'en': 'a cat'}", "True"): a silently wrong text (a user trial). JSON says
    what a value is: a text is a JSON string, and anything else is refused at its line, as a null is."""
    path = tmp_path / "t.jsonl"
    path.write_text(f'{{"text": "a cat"}}\n\n{{"text": "a dog"}}\n{{"text": {value}}}\n{{"text": "a bird"}}\n',
                    encoding="utf-8")
    said = (f"has a JSON {kind} in the field 'text' on line 4, not a string (1 of 4 lines); expected a text (a JSON "
            f"string) in the field 'text' on every line.")
    with pytest.raises(ValueError) as err:
        read_texts(path, column="text")
    assert str(err.value) == f"The texts file {str(path)!r} {said}"
    assert _error("--texts", path, "--text-column", "text") == f"Error: --texts: the texts file {str(path)!r} {said}"



COLA_LINES = ["gj04\t1\t\tThe sailors rode the breeze clear of the rocks.",
              "gj04\t1\t\tThe weights made the rope stretch over the pulley.",
              "gj04\t0\t*\tThe mechanical doll wriggled itself loose itself."]


def test_a_headerless_table_gives_its_text_column_by_position(tmp_path):
    """GLUE's CoLA has no header line: --text-column 4 said it had none and asked for one. A 1-based position reads
    the column, line 1 included, and says which column it read; one past the columns names their count and line 1."""
    cola = tmp_path / "dev.tsv"
    cola.write_text("\n".join(COLA_LINES) + "\n")
    texts = read_texts(cola, column="4")
    assert texts == [line.split("\t")[3] for line in COLA_LINES]
    assert texts.column_read == "the 4th of 4 tab-separated columns (no header line)"
    assert read_texts(cola, column="1") == ["gj04"] * 3  # a position, though '1' is a cell of line 1 (a label)
    with pytest.raises(ValueError) as caught:
        read_texts(cola, column="5")
    assert str(caught.value) == (
        f"The text column '5' is a position past the 4 tab-separated columns of {str(cola)!r} (line 1, data: 'gj04', "
        f"'1', '', 'The sailors rode the breeze clear of the rocks.'); expected a position from 1 to 4 (it has no "
        f"header line to name one by).")
    with pytest.raises(ValueError) as caught:  # the labels beside the texts: numbers, not texts
        read_texts(cola, column="2")
    assert str(caught.value).startswith("The text column '2', the 2nd of 4 tab-separated columns (no header line), of ")
    with pytest.raises(ValueError, match=r"^The text column '3', the 3rd of 4 tab-separated columns \(no header "
                                         r"line\), of '.*' is empty in row 1 \(2 of 3 rows empty\)"):
        read_texts(cola, column="3")


def test_a_position_reads_under_a_header_line_and_a_name_on_it_wins(tmp_path):
    """With a header line, a position reads the rows under it; a cell of line 1 that is a number is a name first
    (pandas' default column names over texts), whatever column that number gives as a position."""
    table = tmp_path / "t.tsv"
    table.write_text("id\tsentence\tother\n" + "".join(f"{i}\t{t}\tx {t}\n" for i, t in enumerate(TEXTS)))
    texts = read_texts(table, column="2")
    assert texts == TEXTS and texts.column_read == "the 2nd of 3 tab-separated columns, 'sentence' on the header line"
    with pytest.raises(ValueError) as caught:
        read_texts(table, column="4")
    assert str(caught.value) == (
        f"The text column '4' is a position past the 3 tab-separated columns of {str(table)!r} (its header line: "
        f"'id', 'sentence', 'other'); expected a position from 1 to 3 or one of those names.")
    numbered = tmp_path / "numbered.tsv"
    numbered.write_text("0\t1\t2\n" + "".join(f"{t}\tx {t}\ty {t}\n" for t in TEXTS))
    named = read_texts(numbered, column="1")
    assert named == [f"x {t}" for t in TEXTS] and getattr(named, "column_read", None) is None


def test_a_text_column_position_is_said_in_a_note_and_recorded_as_given(tmp_path):
    """A position off by one reads another column without an error: the command names the column it read and its
    first text, before the model is loaded (here refused after the note: a model name that is no model)."""
    cola = tmp_path / "dev.tsv"
    cola.write_text("\n".join(COLA_LINES) + "\n")
    result = CliRunner().invoke(cli, ["measure", "--model", str(tmp_path / "no-model"), "--texts", str(cola),
                                      "--text-column", "4", "--labels", str(cola), "--label-column", "2",
                                      "--device", "cpu"])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and lines[:2] == [
        ('Note: --text-column 4: the 4th of 4 tab-separated columns (no header line), first text: "The sailors rode '
         'the breeze clear of the rocks."'),
        'Note: --label-column 2: the 2nd of 4 tab-separated columns (no header line), first label: "1"'], lines
