"""Fuzz tests of the data-set readers that had none: the corpora (``load_text_file``, the named corpora), STS
(``load_sts``: STS-B, SICK, STS12-16) and GLUE (``load_glue_task``). Any bytes, or a valid file with bytes spliced
in or cut short: read, or refused in one :class:`~isotropy.IsotropyValueError` line (a ``UnicodeDecodeError`` or
``IndexError`` naming no file was one of them)."""

from __future__ import annotations

from _fuzz import spliced
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from isotropy._utils.errors import IsotropyValueError
from isotropy.datasets.corpora import load_text_file, load_wikitext2
from isotropy.datasets.glue import load_glue_task
from isotropy.datasets.sts import load_sts

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
_HOW = st.sampled_from(["raw", "splice", "cut"])


def _content(valid: bytes, data: bytes, how: str) -> bytes:
    if how == "raw":
        return data
    if how == "splice":
        return spliced(valid, data)
    return valid[:len(data) % (len(valid) + 1)]


def _one_line_or(read, check) -> None:
    try:
        result = read()
    except IsotropyValueError as exc:
        assert "\n" not in str(exc), str(exc)
    else:
        check(result)


@SETTINGS
@given(data=st.binary(max_size=200), how=_HOW, encoding=st.sampled_from(["utf-8", "latin-1"]))
def test_fuzzed_corpus_files_load_or_are_refused_in_one_line(tmp_path, data, how, encoding):
    path = tmp_path / "c.txt"
    path.write_bytes(_content("un café au lait\n\nthe cat sat\n".encode(), data, how))
    _one_line_or(lambda: load_text_file(path, encoding=encoding),
                 lambda corpus: all(words and all(w.strip() for w in words) for words in corpus.lines))
    folder = tmp_path / "wikitext-2"
    folder.mkdir(exist_ok=True)
    (folder / "wiki.valid.tokens").write_bytes(path.read_bytes())
    _one_line_or(lambda: load_wikitext2("validation", data_dir=tmp_path), lambda corpus: None)


_STSB = b"main-captions\tMSRvid\t2012test\t0001\t5.000\tA plane is taking off.\tAn air plane is taking off.\n"
_SICK = (b"pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\tSemEval_set\n"
         b"1\tA boy plays.\tA kid plays.\t4.5\tENTAILMENT\tTEST\n")


@SETTINGS
@given(data=st.binary(max_size=200), how=_HOW, which=st.sampled_from(["STSB", "SICK"]))
def test_fuzzed_sts_files_load_or_are_refused_in_one_line(tmp_path, data, how, which):
    folder = tmp_path / ("senteval/STS/STSBenchmark" if which == "STSB" else "SICK")
    folder.mkdir(parents=True, exist_ok=True)
    name = "sts-test.csv" if which == "STSB" else "SICK.txt"
    (folder / name).write_bytes(_content(_STSB if which == "STSB" else _SICK, data, how))

    def check(pairs):
        assert len(pairs.text_a) == len(pairs.text_b) == len(pairs.scores)

    _one_line_or(lambda: load_sts(which, split="test", data_dir=tmp_path), check)


@SETTINGS
@given(data=st.binary(max_size=200), how=_HOW, task=st.sampled_from(["sst2", "mrpc", "cola"]))
def test_fuzzed_glue_files_load_or_are_refused_in_one_line(tmp_path, data, how, task):
    valid = {"sst2": ("SST-2", b"sentence\tlabel\na fine film \t1\n"),
             "mrpc": ("MRPC", b"Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\tA cat.\tThe cat.\n"),
             "cola": ("CoLA", b"gj04\t1\t\tThe sailors rode the breeze clear of the rocks.\n")}
    folder, content = valid[task]
    (tmp_path / "glue_data" / folder).mkdir(parents=True, exist_ok=True)
    (tmp_path / "glue_data" / folder / "train.tsv").write_bytes(_content(content, data, how))

    def check(texts):
        assert len(texts.text_a) == len(texts.labels)

    _one_line_or(lambda: load_glue_task(task, "train", data_dir=tmp_path), check)
