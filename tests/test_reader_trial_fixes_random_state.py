"""Fixes from a new user's trial of ``isotropy measure``: a negative --random-state with --model."""

from __future__ import annotations

import pytest

from isotropy.cli import main
from isotropy.measure.from_model import measure_layers


def test_a_negative_random_state_is_refused_by_name(tmp_path, capsys):
    texts = tmp_path / "t.txt"
    texts.write_text("a cat sat\na dog ran\nthe mat\n")
    with pytest.raises(SystemExit) as exit_:
        main(["measure", "--model", str(tmp_path / "no-model"), "--texts", str(texts), "--random-state", "-1",
              "--sample-size", "2"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == ("Error: --random-state '-1': expected an integer in [0, 2**32 - 1] (the seed "
                                       "of the row sample and of randomised metrics).\n")
    with pytest.raises(ValueError) as caught:  # before the model is looked for
        measure_layers(["a cat sat", "a dog ran"], model=str(tmp_path / "no-model"), random_state=-1)
    assert str(caught.value) == ("The 'random_state' parameter of measure_layers must be an int in the range [0, 4294967295]. "
                                 "Got -1 instead.")


@pytest.mark.parametrize(("args", "message"), [
    (["--sample-size", "10", "--random-state", "-1"], "--random-state '-1': expected an integer in [0, 2**32 - 1]"),
    (["--random-state", "abc"], "--random-state 'abc': expected an integer in [0, 2**32 - 1]"),
    # 2**40 ran (silhouette's sample, numpy's RandomState, takes no more than 2**32 - 1)
    (["--random-state", "1099511627776"], "--random-state '1099511627776': expected an integer in [0, 2**32 - 1]"),
    (["--workers", "two"], "--workers 'two': expected an integer number of worker processes of at least 1."),
    (["--workers", "0"], "--workers '0': expected an integer number of worker processes of at least 1."),
])
def test_seed_and_workers_of_an_embeddings_file_are_checked_up_front(tmp_path, capsys, args, message):
    """With an embeddings file a negative seed reached numpy's sampler ("Error: expected non-negative integer", naming
    nothing), and --workers two gave click's "'two' is not a valid integer range" (a new-user trial)."""
    import numpy as np

    np.save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(30, 4)))
    with pytest.raises(SystemExit) as exit_:
        main(["measure", str(tmp_path / "x.npy"), *args])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.startswith(f"Error: {message}")


def test_cosine_notes_the_cluster_metrics_that_stay_euclidean(tmp_path, capsys):
    """--metric cosine with Calinski-Harabasz and Davies-Bouldin printed their euclidean values under a 'cosine
    distance' header without a word (a new-user trial): a note names them, on stderr and in the JSON."""
    import json

    import numpy as np

    from isotropy import calinski_harabasz_score

    X = np.random.default_rng(1).normal(size=(40, 5))
    labels = np.arange(40) % 2
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "lab.npy", labels)
    main(["measure", str(tmp_path / "x.npy"), "--labels", str(tmp_path / "lab.npy"), "--metric", "cosine",
          "--metrics", "silhouette_score,calinski_harabasz_score,davies_bouldin_score", "--json",
          str(tmp_path / "out.json")])
    err = capsys.readouterr().err
    assert ("Note: calinski_harabasz_score, davies_bouldin_score: defined by the clusters' centroids in euclidean "
            "space, so computed with the euclidean distance whatever --metric says") in err
    record = json.loads((tmp_path / "out.json").read_text())
    assert record["values"]["calinski_harabasz_score"] == pytest.approx(calinski_harabasz_score(X, labels), rel=1e-12)
    assert "euclidean distance whatever --metric says" in record["warnings"]["davies_bouldin_score"][0]
    assert "silhouette_score" not in record["warnings"]


def test_when_every_metric_fails_the_last_line_points_to_no_others(tmp_path, capsys):
    import numpy as np

    np.save(tmp_path / "const.npy", np.ones((20, 3)))
    with pytest.raises(SystemExit) as exit_:
        main(["measure", str(tmp_path / "const.npy"), "--metrics", "isoscore"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == ("Error: isoscore: EMBEDDINGS must have non-zero variance. Got 20 (numerically) identical samples "
                      "instead, whose covariance is zero, so the score is undefined.")
    assert err[-1] == "Error: the metric failed (isoscore); the reason is above."
    with pytest.raises(SystemExit):
        main(["measure", str(tmp_path / "const.npy"), "--metrics", "isoscore,participation_ratio"])
    assert capsys.readouterr().err.splitlines()[-1] == ("Error: all 2 metrics failed (isoscore, participation_ratio); "
                                                         "the reasons are above.")


def test_labels_no_metric_reads_are_refused_unless_they_are_a_column_of_embeddings(tmp_path, capsys):
    """--labels with --metrics isoscore was read and ignored without a word (a new-user trial), where --n-neighbors
    without mle_dimension is refused. A label column of the embeddings table itself still leaves the features."""
    import json

    import numpy as np
    import pandas as pd

    from isotropy import isoscore

    X = np.random.default_rng(2).normal(size=(30, 4))
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "lab.npy", np.arange(30) % 3)
    with pytest.raises(SystemExit) as exit_:
        main(["measure", str(tmp_path / "x.npy"), "--labels", str(tmp_path / "lab.npy"), "--metrics", "isoscore"])
    assert exit_.value.code == 2
    assert "--labels is read by the cluster metrics only (silhouette_score, calinski_harabasz_score, " in \
        capsys.readouterr().err
    table = pd.DataFrame(X, columns=list("abcd")).assign(label=np.arange(30) % 3)
    table.to_csv(tmp_path / "t.csv", index=False)
    main(["measure", str(tmp_path / "t.csv"), "--labels", str(tmp_path / "t.csv"), "--label-column", "label",
          "--metrics", "isoscore", "--json", str(tmp_path / "out.json")])
    record = json.loads((tmp_path / "out.json").read_text())
    assert record["n_features"] == 4
    assert record["values"]["isoscore"] == pytest.approx(isoscore(X), rel=1e-9)
