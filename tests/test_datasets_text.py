"""Text data set loaders on the real files in ../shared/data (row counts from its README)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import shared_data_path

from isotropy.datasets.glue import load_glue_task


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
