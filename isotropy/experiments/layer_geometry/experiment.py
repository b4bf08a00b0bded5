"""``isotropy run layer-geometry``: the config schema and the :class:`Experiment` record."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from isotropy.experiments._config import ExperimentConfig, Seeds, expects
from isotropy.experiments._runner import Experiment

__all__ = ["EXPERIMENT", "LayerGeometryConfig"]

_LAYERS = "'all', a comma-separated string such as '0,3,6', or a list of hidden-state indices"


class MetricsConfig(ExperimentConfig):
    """Options of the per-layer metrics (Cai et al. 2021)."""

    intra_max_instances: int = Field(ge=2)
    n_neighbors: int = Field(ge=1)
    k_range: list[int] = expects("a list [k_min, k_max] of two ints >= 1", min_length=2, max_length=2)
    min_silhouette: float = Field(ge=-1, le=1)
    silhouette_sample_size: int | None = Field(None, ge=3)
    n_init: int = Field(ge=1)


class LayerGeometryConfig(ExperimentConfig):
    """Cai et al. (ICLR 2021); the packaged setups are ``isotropy/configs/layer-geometry/*.yaml``."""

    model: str = Field(min_length=1)
    corpus: str = expects("wikitext-2, ptb or a path to a plain-text file", min_length=1)
    split: Literal["validation", "test", "train"] = expects("validation, test or train")
    layers: int | str | list[int] = expects(_LAYERS)
    pooling: Literal["first", "mean"] = expects("first or mean")
    max_tokens: int | None = Field(None, ge=1)
    max_per_type: int | None = Field(None, ge=1)
    skip_types: list[str] = expects("a list of words", default_factory=list)
    shuffle: bool
    max_length: int = Field(ge=2)
    batch_size: int = Field(ge=1)
    dtype: Literal["float32", "float16"] = expects("float32 or float16")
    seeds: Seeds
    metrics: MetricsConfig
    static: str | None = None
    static_vocabulary: Literal["corpus", "kept"] = expects("corpus or kept")
    pca_layers: int | str | list[int] | None = expects(_LAYERS + ", or null (the middle layer)", default=None)
    pca_max_points: int = Field(ge=3)


def _prepare(config, ctx):
    from isotropy.experiments.layer_geometry.run import prepare

    return prepare(config, ctx)


def _run(config, results_dir, ctx):
    from isotropy.experiments.layer_geometry.run import run

    return run(config, results_dir, ctx)


def _plot(results_dir):
    from isotropy.experiments.layer_geometry.plot import plot_results

    return plot_results(results_dir)


def _report(results, results_dir):
    from isotropy.experiments.layer_geometry.run import report

    return report(results, results_dir)


EXPERIMENT = Experiment(
    name="layer-geometry",
    config_model=LayerGeometryConfig,
    prepare=_prepare,
    run=_run,
    plot=_plot,
    report=_report,
    default_setup="minilm-wikitext2",
    resume_keys=frozenset(),
    max_seeds=1,
    partial=False,
    shortcuts=(("--model", "model:str", "all-MiniLM-L6-v2 (packaged), a local transformers model directory or a hub name"),
               ("--corpus", "corpus:str", "wikitext-2, ptb, or a path to a plain-text file"),
               ("--layers", "layers", "'all' or comma-separated hidden-state indices, e.g. 0,3,6")),
    help="""Geometry of a transformer's contextual embeddings, layer by layer (Cai et al. 2021).

    Extracts one vector per corpus word at every selected hidden layer, then reports per layer
    S_inter and S_intra, the same after per-cluster centring (K-means, k by silhouette), IsoScore
    and the mean local intrinsic dimension (MLE, 100 neighbours, euclidean and cosine), with a
    static GloVe row for comparison. Writes metrics.md, metrics.json and figures/.""",
)
