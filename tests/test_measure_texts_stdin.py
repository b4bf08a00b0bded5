"""``isotropy measure --model NAME --texts -`` reads the texts from standard input, as most Unix tools read ``-``.

It said "the texts file '-' does not exist". Standard input is read as a plain-text file is (one text a line, the
same ``--encoding``, the same blank-line and NUL checks), and its messages name "standard input"; ``./-`` is a file
named ``-``. The other file options of ``measure`` refuse ``-`` in one line: embeddings and labels are read by
their file's suffix (often binary formats), and a figure's format is its file's suffix.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from _tiny_models import make_tiny_bert
from click.testing import CliRunner

from isotropy.cli import cli

TEXTS = ["the cat sat on the mat .", "a dog ran .", "the dog sat on a mat", "a cat ran", "the mat .", "dog sat"]


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("stdin") / "bert")


def _measure(*args, input=None):
    return CliRunner().invoke(cli, ["measure", *map(str, args)], input=input)


def _error(*args, input=None) -> str:
    """The one line of a refused ``measure`` (exit status 2)."""
    result = _measure(*args, input=input)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    return lines[0]


def test_texts_from_standard_input_measure_as_the_same_file(bert, tmp_path, monkeypatch):
    monkeypatch.setenv("ISOTROPY_CACHE", str(tmp_path / "cache"))
    content = "\n".join(TEXTS) + "\n\n"  # a blank line at the end, as in a file: it ends the texts
    (tmp_path / "t.txt").write_text(content)
    common = ["--model", bert, "--layers", "all", "--device", "cpu", "--metrics", "isoscore,cosine_similarity_mean"]
    from_file = _measure(*common, "--texts", tmp_path / "t.txt", "--json", tmp_path / "file.json")
    from_stdin = _measure(*common, "--texts", "-", "--json", tmp_path / "stdin.json", input=content.encode())
    assert from_file.exit_code == 0, from_file.output
    assert from_stdin.exit_code == 0, from_stdin.output
    head = f"{bert} on standard input: {len(TEXTS)} texts, sentence level"
    assert from_stdin.stdout.splitlines()[0].startswith(head), from_stdin.stdout
    assert from_stdin.stdout.splitlines()[1:] == from_file.stdout.splitlines()[1:]  # the same table
    file_record = json.loads((tmp_path / "file.json").read_text())
    record = json.loads((tmp_path / "stdin.json").read_text())
    assert record["rows"] == file_record["rows"] and record["n_texts"] == len(TEXTS)
    assert record["texts"] == "-"
    # the bytes read, as a file's identity: their size and SHA-256 (hashlib's, of the bytes given)
    assert record["inputs"]["texts"] == [{"path": "-", "bytes": len(content.encode()),
                                          "sha256": hashlib.sha256(content.encode()).hexdigest()}]
    assert record["inputs"]["texts"][0]["sha256"] == file_record["inputs"]["texts"][0]["sha256"]


def test_standard_input_is_decoded_with_encoding(bert, tmp_path, monkeypatch):
    """latin-1 bytes: refused as UTF-8 at their line, read with --encoding latin-1 as the same file is."""
    monkeypatch.setenv("ISOTROPY_CACHE", str(tmp_path / "cache"))
    texts = ["un café noir", "a dog ran .", "the crème brûlée", "a cat ran"]
    content = ("\n".join(texts) + "\n").encode("latin-1")
    (tmp_path / "t.txt").write_bytes(content)
    assert _error("--model", bert, "--texts", "-", "--device", "cpu", input=content) == (
        "Error: --texts -: standard input is not utf-8 text (byte 0xe9 on line 1: invalid continuation byte); give "
        "its encoding (--encoding, e.g. latin-1 or cp1252).")
    common = ["--model", bert, "--layers", "last", "--device", "cpu", "--metrics", "isoscore", "--encoding", "latin-1"]
    from_stdin = _measure(*common, "--texts", "-", input=content)
    from_file = _measure(*common, "--texts", tmp_path / "t.txt")
    assert from_stdin.exit_code == 0, from_stdin.output
    assert from_stdin.stdout.splitlines()[1:] == from_file.stdout.splitlines()[1:]


@pytest.mark.parametrize(("content", "said"), [
    (b"a man\nis\x00 dancing .\nA dog runs .\n",
     ("is binary data (it holds NUL bytes, which no text does), not text; expected texts, one a line (embeddings are "
      "measured as EMBEDDINGS, a file, without --model).")),
    ("a b\nc d\n".encode("utf-16"),
     ("is not utf-8 text (byte 0xff on line 1: invalid start byte); give its encoding (--encoding utf-16: it starts "
      "with a UTF-16 byte-order mark).")),
    ("a b\nc d\n".encode("utf-32-le"),
     ("holds a NUL character on line 1 (read as utf-8), which no text does; give its encoding (--encoding utf-32-le: "
      "its bytes decode as UTF-32 text, without a byte-order mark).")),
    (b"one text\n\n\n", "holds 1 text (2 blank lines skipped); expected at least 2 (one text a line)."),
    (b"", "holds 0 texts (it is empty); expected at least 2 (one text a line)."),
])
def test_standard_input_is_checked_as_a_file_and_named(content, said):
    assert _error("--model", "all-MiniLM-L6-v2", "--texts", "-", "--device", "cpu", input=content) == (
        f"Error: --texts -: standard input {said}")


def test_binary_data_on_standard_input_are_said_to_be_what_they_are(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((3, 4)))
    line = _error("--model", "all-MiniLM-L6-v2", "--texts", "-", "--device", "cpu",
                  input=(tmp_path / "x.npy").read_bytes())
    assert line == ("Error: --texts -: standard input is a .npy array (as np.save writes), not text; expected texts, "
                    "one a line (embeddings are measured as EMBEDDINGS, a file, without --model).")


def test_a_text_column_of_standard_input_is_refused():
    assert _error("--model", "all-MiniLM-L6-v2", "--texts", "-", "--text-column", "text", "--device", "cpu",
                  input=b"text\na\nb\n") == (
        "Error: --text-column 'text' needs a CSV/TSV or JSON-lines file; standard input is read as plain text, one "
        "text a line. Save it under a name after its format (.csv, .tsv, .jsonl) and give that file to --texts, or "
        "leave --text-column out.")


def test_dot_slash_dash_is_the_file_named_dash(bert, tmp_path, monkeypatch):
    monkeypatch.setenv("ISOTROPY_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-").write_text("\n".join(TEXTS) + "\n")
    result = _measure("--model", bert, "--texts", "./-", "--layers", "last", "--device", "cpu", "--metrics",
                      "isoscore", input=b"not read\n")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"{bert} on -: {len(TEXTS)} texts")  # the file's six texts, not standard input


@pytest.mark.parametrize(("args", "said"), [
    (["-"], ("Error: Invalid value for 'EMBEDDINGS': expected a file, a folder of shards, a quoted pattern or "
             "'glove-6b-50d'. Got '-' (standard input), from which embeddings are not read: their format, often "
             "binary, is told by a file's suffix (--model reads --texts - from it); a file named '-' is ./-.")),
    (["EMB", "--labels", "-"], ("Error: Invalid value for '--labels': expected a path. Got '-' (standard input), from "
                                "which labels are not read: their format is told by a file's suffix (--model reads "
                                "--texts - from it); a file named '-' is ./-.")),
    (["EMB", "--shrinkage-sample", "-"], ("Error: --shrinkage-sample '-': expected a number of rows of at least 2 or a "
                                          "file of rows; standard input is not read for it (--model reads --texts - "
                                          "from it), and a file named '-' is ./-.")),
    (["--model", "all-MiniLM-L6-v2", "--texts", "T", "--plot", "-"],
     ("Error: Invalid value for '--plot': expected a path. Got '-' (standard output), to which no figure is written: "
      "its format is told by its file's suffix; a file named '-' is ./-.")),
])
def test_the_other_file_options_refuse_dash_in_one_line(tmp_path, args, said, capsys):
    from _cli import exiting_cli

    np.save(tmp_path / "e.npy", np.random.default_rng(0).normal(size=(20, 4)))
    (tmp_path / "t.txt").write_text("\n".join(TEXTS) + "\n")
    given = [str({"EMB": tmp_path / "e.npy", "T": tmp_path / "t.txt"}.get(arg, arg)) for arg in args]
    code, out, err = exiting_cli(["measure", *given], capsys)  # as the console command prints it
    assert code == 2 and out == ""
    assert err.strip().removesuffix(" (see 'isotropy measure --help')") == said


def test_plot_refuses_dash_in_one_line(capsys):
    from _cli import exiting_cli

    code, out, err = exiting_cli(["plot", "-"], capsys)
    assert code == 2 and out == ""
    assert err.strip() == ("Error: Invalid value for 'PATH': expected a path. Got '-' (standard input), from which "
                           "nothing is plotted: PATH is a run's results folder, a training log or a JSON of 'isotropy "
                           "measure --model', each told by what is on disk; a file named '-' is ./-. (see 'isotropy "
                           "plot --help')")
