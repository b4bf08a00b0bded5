"""``isotropy run layer-geometry``: the :class:`~isotropy.experiments._runner.Experiment` record.

The schema is in ``config.py``; ``run.py`` holds ``prepare`` and ``run``, ``plot.py`` holds
``plot_results`` (bound by module name, imported when called).
"""

from __future__ import annotations

from isotropy.experiments._runner import Experiment
from isotropy.experiments.layer_geometry.config import LayerGeometryConfig
from isotropy.models.resolve import MODEL_HELP

__all__ = ["EXPERIMENT"]

EXPERIMENT = Experiment(
    name="layer-geometry",
    package=__package__,
    config_model=LayerGeometryConfig,
    report_file="metrics.md",
    default_setup="minilm-wikitext2",
    resume_keys=frozenset(),
    shortcuts=(("--model", "model", MODEL_HELP),
               ("--corpus", "corpus", "wikitext-2, ptb, or a path to a plain-text file"),
               ("--layers", "layers", "'all' or comma-separated hidden-state indices, e.g. 0,3,6")),
    help="""Geometry of a transformer's contextual embeddings, layer by layer (Cai et al. 2021).

    Extracts one vector per corpus word at every selected hidden layer, then reports per layer
    S_inter and S_intra, the same after per-cluster centring (K-means, k by silhouette), IsoScore
    and the mean local intrinsic dimension (MLE, 100 neighbours, euclidean and cosine), with a
    static GloVe row for comparison. Writes metrics.md, metrics.json and figures/.""",
)
