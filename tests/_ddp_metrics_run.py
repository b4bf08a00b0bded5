"""The torchmetrics classes under a real gloo sync with one process that saw no rows (run as a script by the tests).

``torchrun --nproc_per_node 3 _ddp_metrics_run.py OUT_DIR``: rank 0 updates each metric with rows 0-24 of a fixed
float64 sample, rank 1 with rows 25-39, rank 2 with nothing (no ``n_features``); every rank computes the synced
value and writes ``{name: value}`` to OUT_DIR/rank{R}.json, with whether the metric holds rows after the sync.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

from isotropy.training import IsoScore, MeanCosine, ParticipationRatio, TwoNNDimension


def main(out_dir: str) -> None:
    warnings.simplefilter("ignore")
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    X = torch.tensor(np.random.default_rng(0).normal(size=(40, 5)))
    out = {}
    for name, make in (("isoscore", IsoScore), ("participation_ratio", ParticipationRatio),
                       ("cosine_similarity_mean", MeanCosine), ("twonn_dimension", TwoNNDimension)):
        metric = make()
        if rank < 2:
            metric.update(X[:25] if rank == 0 else X[25:])
        out[name] = float(metric.compute())
        out[f"{name}_has_rows_after"] = metric._has_data()
    (Path(out_dir) / f"rank{rank}.json").write_text(json.dumps(out))
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
