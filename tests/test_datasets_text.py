"""Text data set loaders on the real files in ../shared/data (row counts from its README)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from _fuzz import spliced
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import shared_data_path
from isotropy.datasets.corpora import load_ptb, load_wikitext2
from isotropy.datasets.glue import load_glue_task
from isotropy.datasets.lexicon import load_nrc_emotion_lexicon
from isotropy.datasets.polarity import load_polarity
from isotropy.datasets.snli import load_snli
from isotropy.datasets.sts import load_sts
from isotropy.datasets.tables import load_table


# ---------------------------------------------------------------- GLUE
@pytest.mark.parametrize("task, split, n, pair", [
    ("sst2", "train", 67_349, False), ("sst2", "dev", 872, False),
    ("cola", "train", 8_551, False), ("cola", "dev", 527, False), ("cola", "dev_out_of_domain", 516, False),
    ("mrpc", "train", 3_668, True), ("mrpc", "dev", 408, True),
    ("rte", "train", 2_490, True), ("rte", "dev", 277, True),
    ("qnli", "dev", 5_463, True),
])
def test_glue_row_counts(task, split, n, pair):
    data = load_glue_task(task, split, data_dir=shared_data_path())
    assert len(data) == n
    assert data.is_pair is pair
    assert data.labels.shape == (n,)
    assert set(np.unique(data.labels)) == set(range(len(data.label_names)))
    assert data.source["skipped_malformed_rows"] == 0


def test_glue_accepts_glue_data_itself_and_reads_by_header():
    data = load_glue_task("rte", "train", data_dir=shared_data_path("glue_data"))
    # first row of RTE/train.tsv: label 1 = not_entailment in this file's 0/1 convention
    assert data.text_a[0] == "No Weapons of Mass Destruction Found in Iraq Yet."
    assert data.text_b[0] == "Weapons of Mass Destruction Found in Iraq."
    assert data.label_names[data.labels[0]] == "not_entailment"
    assert np.bincount(data.labels).tolist() == [1249, 1241]  # cut -f3 | sort | uniq -c


def test_glue_cola_without_header_and_label_names():
    data = load_glue_task("cola", "train", data_dir=shared_data_path())
    assert data.text_a[0] == "Our friends won't buy this analysis, let alone the next one we propose."
    assert np.bincount(data.labels).tolist() == [2528, 6023]  # unacceptable, acceptable
    qnli = load_glue_task("qnli", "dev", data_dir=shared_data_path())
    assert np.bincount(qnli.labels).tolist() == [2702, 2761]  # entailment, not_entailment (label names)
    mrpc = load_glue_task("mrpc", "train", data_dir=shared_data_path())  # header with a BOM, quotes in text
    assert mrpc.text_b[0].startswith('Referring to him as only "the witness"')
    sst = load_glue_task("sst-2", "dev", data_dir=shared_data_path())
    assert sst.text_a[0] == "it 's a charming and often affecting journey ."


def test_glue_missing_file_names_path_and_source(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"glue_data/SST-2/train\.tsv.*gluebenchmark\.com"):
        load_glue_task("sst2", data_dir=tmp_path)
    with pytest.raises(ValueError, match=r"'task' parameter of load_glue_task must be one of"):
        load_glue_task("stsb", data_dir=tmp_path)


@pytest.mark.parametrize(("load", "where"), [
    (lambda d: load_sts("STS12", data_dir=d), r"STS12-en-test/STS\.input\.MSRpar\.txt.*github\.com/facebookresearch/SentEval"),
    (lambda d: load_sts("STSB", data_dir=d), r"SentEval's layout.*github\.com/facebookresearch/SentEval"),
    (lambda d: load_sts("SICK", data_dir=d), r"SICK/SICK\.txt.*full SICK release.*marcobaroni\.org"),
    (lambda d: load_wikitext2(data_dir=d), r"wikitext-2/wiki\.valid\.tokens.*huggingface\.co/datasets/Salesforce/wikitext"),
    (lambda d: load_ptb(data_dir=d), r"ptb/ptb\.valid\.txt.*simple-examples\.tgz"),
])
def test_sts_and_corpora_missing_name_path_and_source(tmp_path, load, where):
    """Like GLUE's: the one line names the file expected and where the data set is published."""
    with pytest.raises(FileNotFoundError, match=where) as info:
        load(tmp_path)
    assert "\n" not in str(info.value)


# ---------------------------------------------------------------- sentence polarity
def test_polarity_counts_and_latin1():
    data = load_polarity(data_dir=shared_data_path())
    assert len(data) == 10_662
    assert np.bincount(data.labels).tolist() == [5_331, 5_331]
    assert data.label_names == ["negative", "positive"]
    # reference: the raw bytes of the files decoded as latin-1, one sentence a line
    raw = shared_data_path("rt-polaritydata", "rt-polarity.pos").read_bytes().decode("latin-1").splitlines()
    assert data.text_a[5_331] == raw[0].strip()
    assert any(any(ord(ch) > 127 for ch in t) for t in data.text_a)  # accented letters survive
    assert load_polarity(data_dir=shared_data_path("rt-polaritydata")).text_a == data.text_a


def test_polarity_missing_names_files_and_source(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"rt-polaritydata/rt-polarity\.pos .*cornell\.edu"):
        load_polarity(data_dir=tmp_path)


# ---------------------------------------------------------------- SNLI
def test_snli_dev_gold_pairs():
    data = load_snli("dev", data_dir=shared_data_path())
    path = shared_data_path("snli_1.0", "snli_1.0_dev.jsonl")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(data) == 9_842 == len(records)
    expected = Counter(r["gold_label"] for r in records)
    assert {name: int((data.labels == i).sum()) for i, name in enumerate(data.label_names)} == expected
    assert len(set(data.text_a) | set(data.text_b)) == 12_982  # the distinct sentences the paper optimises
    assert data.text_b[1] == records[1]["sentence2"]


def test_snli_txt_format_and_ungold_pairs(tmp_path):
    folder = tmp_path / "snli_1.0"
    folder.mkdir()
    (folder / "snli_1.0_test.txt").write_text(
        "gold_label\tsentence1_binary_parse\tsentence1\tsentence2\n"
        "neutral\t( A )\tA man.\tA tall man.\n-\t( B )\tB.\tC.\ncontradiction\t( D )\tD.\tE.\n")
    data = load_snli("test", data_dir=tmp_path)
    assert data.text_a == ["A man.", "D."] and data.labels.tolist() == [1, 2]
    assert data.source["dropped_without_gold_label"] == 1
    with pytest.raises(ValueError, match=r"'split' parameter of load_snli"):
        load_snli("training", data_dir=tmp_path)


# ---------------------------------------------------------------- generic tables
def test_table_formats_single_and_multi_label(tmp_path):
    (tmp_path / "a.tsv").write_text('text\tlabel\n"quoted" start\tb\nplain\ta\n')
    tsv = load_table(tmp_path / "a.tsv")
    assert tsv.text_a == ['"quoted" start', "plain"] and tsv.label_names == ["a", "b"] and tsv.labels.tolist() == [1, 0]
    (tmp_path / "b.jsonl").write_text(json.dumps({"s1": "x", "s2": "y", "tags": ["p", "q"]}) + "\n"
                                      + json.dumps({"s1": "z", "s2": "w", "tags": ["q"]}) + "\n")
    pairs = load_table(tmp_path / "b.jsonl", text_column="s1", text_pair_column="s2", label_column="tags",
                       multilabel=True)
    assert pairs.text_b == ["y", "w"] and pairs.labels.tolist() == [[1, 1], [0, 1]] and pairs.is_multilabel
    (tmp_path / "c.csv").write_text("text,joy,fear\nhi,1,0\nboo,0,1\n")
    indicators = load_table(tmp_path / "c.csv", label_column=["joy", "fear"])
    assert indicators.label_names == ["joy", "fear"] and indicators.labels.dtype == np.int8
    (tmp_path / "d.csv").write_text("text,label\na,10\nb,2\nc,2\n")
    assert load_table(tmp_path / "d.csv").label_names == ["2", "10"]  # numeric ids in numeric order


def test_table_errors(tmp_path):
    (tmp_path / "a.csv").write_text("sentence,label\nx,1\n")
    # the message named neither the parameter nor what it expected; a plain ValueError escaped
    # `except IsotropyValueError` (as from load_glue_task, load_snli and shrinkage_covariance)
    from isotropy import IsotropyValueError

    with pytest.raises(IsotropyValueError, match=r"^The 'text_column' parameter of load_table must name a column of "
                                                 r".*a\.csv', one of \['sentence', 'label'\]\. Got 'text' instead\.$"):
        load_table(tmp_path / "a.csv")
    with pytest.raises(IsotropyValueError, match=r"Got 'sentense' instead\. Did you mean 'sentence'\?$"):
        load_table(tmp_path / "a.csv", text_column="sentense")
    with pytest.raises(IsotropyValueError, match=r"^The 'label_column' parameter of load_table"):
        load_table(tmp_path / "a.csv", text_column="sentence", label_column="y")
    import torch

    from isotropy.torch import shrinkage_covariance

    for call in (lambda: load_glue_task("nope", "train"), lambda: load_snli("nope"),
                 lambda: shrinkage_covariance(torch.ones(3))):
        with pytest.raises(IsotropyValueError):
            call()
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_table(tmp_path / "missing.csv")
    (tmp_path / "a.xlsx").write_text("")
    with pytest.raises(ValueError, match=r"'format' parameter of load_table"):
        load_table(tmp_path / "a.xlsx")


_VALID_TABLES = {"csv": 'text,label\n"a, b",1\nc,0\n', "tsv": "text\tlabel\na\t1\nc\t0\n",
                 "jsonl": '{"text": "a", "label": 1}\n{"text": "c", "label": 0}\n'}


@pytest.mark.parametrize(("name", "content", "match"), [
    ("deep.jsonl", "[" * 100_000 + "\n", r"deep.jsonl:1: not a JSON object \(nested too deeply"),
    ("list.jsonl", '{"text": "a", "label": 1}\n[1, 2]\n', r"list.jsonl:2: a JSON list, not an object"),
    ("short.jsonl", '{"text": "a", "label": 1}\n{"text": "b"}\n', r"data row 2 has no value in the column\(s\) \['label'\]"),
    ("long.csv", "text,label\n" + "x" * 200_000 + ",1\n", r"not a readable CSV file \(field larger than field limit"),
    ("nul.csv", b"text,label\n\x80\x00,1\n", r"not a readable CSV file \('utf-8' codec can't decode"),
    ("inf.csv", "text,joy,fear\nhi,inf,0\n", r"indicator columns \['joy', 'fear'\] must hold 0 or 1"),
])
def test_table_refuses_corrupt_files_in_one_line(tmp_path, name, content, match):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    columns = ["joy", "fear"] if name == "inf.csv" else "label"
    with pytest.raises(ValueError, match=match) as info:
        load_table(path, label_column=columns)
    assert "\n" not in str(info.value)
    (tmp_path / "big.csv").write_text("text,label\na," + "1" * 5000 + "\nb,2\n")  # a label of 5000 digits: a name
    assert load_table(tmp_path / "big.csv").label_names == ["2", "1" * 5000]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300), fmt=st.sampled_from(sorted(_VALID_TABLES)), splice=st.booleans())
def test_fuzzed_tables_load_or_are_refused_in_one_line(tmp_path, data, fmt, splice):
    """Any bytes, or a valid table with bytes spliced in: a LabeledTexts whose sizes agree, or one ValueError line."""
    if splice:
        valid = _VALID_TABLES[fmt].encode()
        data = spliced(valid, data)
    path = tmp_path / f"t.{fmt}"
    path.write_bytes(data)
    try:
        table = load_table(path)
    except ValueError as exc:
        assert "\n" not in str(exc)
    else:
        assert len(table.text_a) == len(table.labels) >= 1
        assert table.labels.min() >= 0 and table.labels.max() < len(table.label_names)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300), suffix=st.sampled_from([".jsonl", ".txt"]), splice=st.booleans())
def test_fuzzed_snli_files_load_or_are_refused_in_one_line(tmp_path, data, suffix, splice):
    if splice:
        valid = (json.dumps({"gold_label": "neutral", "sentence1": "A.", "sentence2": "B."}) + "\n" if suffix == ".jsonl"
                 else "gold_label\tsentence1\tsentence2\nneutral\tA.\tB.\n").encode()
        data = spliced(valid, data)
    folder = tmp_path / "snli_1.0"
    folder.mkdir(exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    (folder / f"snli_1.0_dev{suffix}").write_bytes(data)
    try:
        pairs = load_snli("dev", data_dir=tmp_path)
    except ValueError as exc:
        assert "\n" not in str(exc)
    else:
        assert len(pairs.text_a) == len(pairs.text_b) == len(pairs.labels)


@pytest.mark.parametrize(("content", "match"), [
    ("[" * 100_000, "not readable JSON \\(nested too deeply"),
    ('{"cat": [{"x": 1}]}', "expected a JSON object mapping words to lists of labels"),
    ("\udcff", "not readable JSON"),
])
def test_lexicon_refuses_corrupt_files_in_one_line(tmp_path, content, match):
    path = tmp_path / "lexicon.json"
    path.write_bytes(content.encode("utf-8", "surrogateescape"))
    with pytest.raises(ValueError, match=match):
        load_nrc_emotion_lexicon(path)


# ---------------------------------------------------------------- NRC emotion lexicon
def test_nrc_lexicon_matches_its_json():
    import nrclex

    mapping = json.loads((Path(nrclex.__file__).parent / "data" / "nrc_en.json").read_text())
    data = load_nrc_emotion_lexicon()
    assert len(data) == len(mapping) == 6_468
    assert data.labels.shape == (6_468, 10)
    counts = Counter(tag for tags in mapping.values() for tag in tags)
    assert dict(zip(data.label_names, data.labels.sum(axis=0).tolist())) == counts
    i = data.text_a.index("abandon")
    assert [n for n, v in zip(data.label_names, data.labels[i]) if v] == sorted(mapping["abandon"])


# ---------------------------------------------------------------- WordNet
@pytest.fixture(scope="module")
def wordnet():
    shared_data_path("nltk_data", "corpora", "wordnet")
    from isotropy.datasets.wordnet import load_wordnet

    return load_wordnet()


def test_wordnet_pos_labels_follow_exact_lemmas(wordnet):
    from isotropy.datasets.wordnet import wordnet_pos_items

    items = wordnet_pos_items(["the", "dog", "dogs", "quickly", "good", "x", "well-known", "dog"], n_items=10)
    assert items.text_a == ["dog", "quickly", "good", "well-known"]  # "dogs" is no lemma, "x" too short
    for word, row in zip(items.text_a, items.labels.tolist()):
        # reference: the parts of speech of the synsets holding a lemma spelled exactly like the word
        pos = {s.pos() for s in wordnet.synsets(word) if word in [lemma.name().lower() for lemma in s.lemmas()]}
        assert row == [int("n" in pos), int("v" in pos), int(bool(pos & {"a", "s"})), int("r" in pos)], word


def test_wordnet_selections_from_glove(wordnet):
    from isotropy.datasets.wordnet import wordnet_pos_items, wordnet_supersense_items
    from isotropy.io.word_vectors import packaged_glove

    words, _ = packaged_glove(limit=60_000)
    pos = wordnet_pos_items(words, n_items=11_462)
    assert len(pos) == 11_462 and pos.labels.shape == (11_462, 4) and pos.labels.sum(axis=1).min() >= 1
    supersense = wordnet_supersense_items(words, n_items=2_275)
    assert len(supersense) == 2_275 and supersense.labels.shape == (2_275, 26)
    assert all(name.startswith("noun.") for name in supersense.label_names)
    verbs = set(wordnet.all_lemma_names("v"))
    assert not verbs & set(supersense.text_a)
    order = {w: i for i, w in enumerate(words)}
    assert [order[w] for w in supersense.text_a] == sorted(order[w] for w in supersense.text_a)
    i = supersense.text_a.index("government")
    expected = {s.lexname() for s in wordnet.synsets("government", "n")}
    assert {n for n, v in zip(supersense.label_names, supersense.labels[i]) if v} == expected


def test_wordnet_missing_gives_clear_message(tmp_path, monkeypatch):
    import nltk

    from isotropy.datasets import wordnet as module

    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])

    class Missing:
        def ensure_loaded(self):
            raise LookupError("Resource wordnet not found.")

    monkeypatch.setattr("nltk.corpus.wordnet", Missing(), raising=False)
    with pytest.raises(FileNotFoundError, match=r"WordNet 3\.0 not found: .*corpora/wordnet.*NLTK_DATA"):
        module.load_wordnet(data_dir=tmp_path)


@pytest.mark.parametrize("module", ["glue", "polarity", "snli", "tables", "lexicon", "wordnet"])
def test_docstring_examples_run(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(f"isotropy.datasets.{module}"), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_sts_correlations_refuse_non_finite_scores():
    # a NaN gave pearson nan without a word
    from isotropy import IsotropyValueError
    from isotropy.datasets.sts import sts_correlations

    with pytest.raises(IsotropyValueError, match=r"^The 'predicted' parameter of sts_correlations must hold finite "
                                                 r"numbers\. Got nan at index 1 \(1 non-finite in all\)"):
        sts_correlations([1.0, float("nan"), 3.0], [1.0, 2.0, 3.0])
    with pytest.raises(IsotropyValueError, match=r"^The 'gold' parameter"):
        sts_correlations([1.0, 2.0, 3.0], [1.0, 2.0, float("inf")])


@pytest.mark.parametrize(("name", "text", "said"), [
    ("first.csv", "text,label\nhello,1,2,3\nfine,0\n", ("data row 1 has 4 fields where the header names 2; expected as "
                                                       "many fields on every row (quote a text that holds the delimiter)")),
    ("later.csv", "text,label\nfine,0\nhello, world,1\n", "data row 2 has 3 fields where the header names 2"),
    ("tab.tsv", "text\tlabel\nfine\t0\nhe\tllo\t1\n", ("data row 2 has 3 fields where the header names 2; expected as "
                                                      "many fields on every row (a text cannot hold a tab)")),
])
def test_load_table_refuses_a_row_of_more_fields_than_its_header(tmp_path, name, text, said):
    """csv.DictReader keeps the fields past the header's under the key None: 'hello,1,2,3' was read as the text
    'hello' with label 1, the rest dropped without a word (a hostile-input review); 'hello, world,1' had the
    label ' world'."""
    from isotropy import IsotropyValueError
    from isotropy.datasets.tables import load_table

    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(IsotropyValueError, match=re.escape(said)):
        load_table(path)
    trailing = tmp_path / "trailing.csv"  # a delimiter after each row's last field: empty fields, read as before
    trailing.write_text("text,label\nhello,1,\nbye,0,,\n")
    assert load_table(trailing).text_a == ["hello", "bye"] and load_table(trailing).labels.tolist() == [1, 0]
    quoted = tmp_path / "quoted.csv"
    quoted.write_text('text,label\n"hello, world",1\nfine,0\n')
    data = load_table(quoted)
    assert data.text_a == ["hello, world", "fine"] and data.label_names == ["0", "1"] and data.labels.tolist() == [1, 0]
