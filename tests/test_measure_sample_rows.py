"""``isotropy measure FILE --sample-size N``: a metric's error that names a row names it in the file too.

A new user's trial: a file of 1,000 rows whose row 7 is all zeros, measured with ``--sample-size 900``, was told
"EMBEDDINGS must not contain zero vectors ... (first at index 5)": 5 is the row's place among the 900 rows drawn,
and row 5 of the file is fine. (The NaN check of the input names the file's row; the metrics see only the sample.)
"""

from __future__ import annotations

import numpy as np
import pytest
from _cli import exiting_cli

from isotropy._utils.sampling import subsample_indices


@pytest.fixture
def zero_row_file(tmp_path):
    X = np.random.default_rng(0).normal(size=(1000, 6)) + 1.0
    X[7] = 0.0
    np.save(tmp_path / "x.npy", X)
    return tmp_path / "x.npy"


@pytest.mark.parametrize("metric, extra, said", [
    ("cosine_similarity_mean", [], ("must not contain zero vectors, for which cosine similarity is undefined. Got 1 "
                                    "all-zero row(s) (first at index {k} of the 900 rows sampled: row 7 of EMBEDDINGS) "
                                    "instead.")),
    ("twonn_dimension", ["--metric", "cosine"], ("must have no zero rows with metric='cosine' (the cosine distance is "
                                                 "undefined for them). Got 1 zero row (at index {k} of the 900 rows "
                                                 "sampled: row 7 of EMBEDDINGS) instead.")),
])
def test_a_sampled_rows_index_is_said_as_its_row_in_the_file(zero_row_file, metric, extra, said, capsys):
    k = int(np.flatnonzero(subsample_indices(1000, 900, random_state=1) == 7)[0])  # row 7's place in the sample
    assert k != 7  # else the test would not tell the two apart
    code, _, err = exiting_cli(["measure", str(zero_row_file), "--sample-size", "900", "--random-state", "1",
                                  "--metrics", metric, *extra], capsys)
    assert code == 2
    errors = [line for line in err.splitlines() if line.startswith(f"Error: {metric}: ")]
    assert errors == [f"Error: {metric}: EMBEDDINGS {said.format(k=k)}"], err


def test_without_a_sample_the_index_is_the_files_row_as_before(zero_row_file, capsys):
    code, _, err = exiting_cli(["measure", str(zero_row_file), "--metrics", "cosine_similarity_mean"], capsys)
    assert code == 2
    assert ("Error: cosine_similarity_mean: EMBEDDINGS must not contain zero vectors, for which cosine similarity is "
            "undefined. Got 1 all-zero row(s) (first at index 7) instead.") in err.splitlines()
