"""The config schema of ``isotropy run layer-geometry``: every key typed and range-checked (pydantic)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PrivateAttr, field_validator

from isotropy._utils.validation import MAX_N_INIT
from isotropy.experiments._config import MAX_INT, ConfigError, ExperimentConfig, Seeds, _shown, config_rule, expects

__all__ = ["LayerGeometryConfig", "settle"]

_LAYERS = "'all', a comma-separated string such as '0,3,6', or a list of hidden-state indices"


class MetricsConfig(ExperimentConfig):
    """Options of the per-layer metrics (Cai et al. 2021)."""

    intra_max_instances: int = Field(ge=2)
    n_neighbors: int = Field(ge=1)
    k_range: list[int] = expects("a list [k_min, k_max] of two ints with 2 <= k_min <= k_max", min_length=2,
                                 max_length=2)
    min_silhouette: float = Field(ge=-1, le=1)
    silhouette_sample_size: int | None = Field(None, ge=3)
    n_init: int = Field(ge=1, le=MAX_N_INIT)  # ClusterCentering's own bound, checked when the config loads

    @field_validator("k_range")
    @classmethod
    def _k_range(cls, value):
        # checked here, before any layer is extracted: ClusterCentering refused [15, 2] or [1, 1] only afterwards, in
        # its own words (its 'k_range' parameter); k-means needs 2 clusters at least for the silhouette choosing k
        if not 2 <= value[0] <= value[1]:
            raise ValueError("expected 2 <= k_min <= k_max")
        return value


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
    leading_space: bool | Literal["auto"] = expects("'auto', true or false", default="auto")
    batch_size: int = Field(ge=1)
    dtype: Literal["float32", "float16"] = expects("float32 or float16")
    seeds: Seeds
    metrics: MetricsConfig
    static: str | None = None
    static_vocabulary: Literal["corpus", "kept"] = expects("corpus or kept")
    pca_layers: int | str | list[int] | None = expects(_LAYERS + ", or null (the middle layer)", default=None)
    pca_max_points: int = Field(ge=3)
    _notes: list = PrivateAttr(default_factory=list)  # what settle decided, logged by prepare
    # the setup's pca_layers with another --model: prepare fits them to that model's depth (settle)
    _pca_follows_model: bool = PrivateAttr(default=False)

    @field_validator("layers", "pca_layers")
    @classmethod
    def _layers_text(cls, value):
        """A layers string is checked as the run reads it (``check_layers``), its indices held to ``MAX_INT``.

        Checked with the config (``--print-config`` too): ``--layers`` of 5,000 digits was Python's own
        "Exceeds the limit (4300 digits) for integer string conversion" and ``--layers x`` passed until
        the model had loaded.
        """
        if not isinstance(value, str):
            return value  # an int and a list of ints: bounded by ExperimentConfig
        from isotropy.models.layers import check_layers

        try:
            parsed = check_layers(value)
        except ValueError:
            if any(_too_many_digits(part) for part in value.split(",")):
                raise _past_max_int() from None
            raise ValueError("not a layer selection") from None  # said with the field's own wording (expects)
        # the ints the run reads, bounded (as int() reads them: '1_000_000_000_000' passed a check of the digits)
        if not isinstance(parsed, str) and any(not -MAX_INT <= index <= MAX_INT for index in parsed):
            raise _past_max_int()
        return value


def _past_max_int():
    return config_rule(f"must hold hidden-state indices in [-{MAX_INT}, {MAX_INT}] (as every int of a config)")


def _too_many_digits(text: str) -> bool:
    """Whether ``text`` is an index int() refuses for its size alone (past Python's 4,300 digits)."""
    try:
        int(text)
    except ValueError as exc:
        return "Exceeds the limit" in str(exc) and text.strip().lstrip("+-").replace("_", "").isdecimal()
    return False


def _indices(spec) -> list[int] | None:
    """The hidden-state indices of a layers spec known without the model (non-negative); None for 'all' and the rest."""
    if isinstance(spec, bool):
        return None
    if isinstance(spec, int):
        items = [spec]
    elif isinstance(spec, str):
        items = [part.strip() for part in spec.split(",") if part.strip()]
        if not all(part.isdigit() for part in items):
            return None  # 'all', 'last', negative indices: checked against the model's depth in prepare
        items = [int(part) for part in items]
    else:
        items = list(spec)
    if not items or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in items):
        return None
    return sorted(set(items))


def settle(config: LayerGeometryConfig, given: frozenset) -> LayerGeometryConfig:
    """The PCA layers follow ``--layers``; a ``pca_layers`` outside the extracted layers is refused before any data.

    When the user gives ``layers`` (``--layers 0,1``) and not ``pca_layers``, the setup's
    ``pca_layers`` (``[3, 6]``) may name layers that are not extracted. They then become those of
    them that are extracted, else the first and last extracted layers: the setup's choice is kept
    where it can be, and the figures still show how the geometry changes across the layers given.
    A ``pca_layers`` the user gave (or a setup's own pair that disagree) outside the extracted
    layers stays a one-line error, raised here, before the corpus or the model is read. A config
    whose PCA layers are extracted is returned as it is (committed runs keep their config hash).
    """
    layers, pca = _indices(config.layers), config.pca_layers
    # The setup's pca_layers were chosen for the setup's model; with another --model (and no pca_layers given)
    # prepare, which knows the model's depth, keeps those the model has and draws its first and last extracted
    # layers when it has none of them (a note says so).
    config._pca_follows_model = "model" in given and "pca_layers" not in given and pca is not None
    pca_layers = None if pca is None else _indices(pca)
    if layers is None or pca_layers is None or set(pca_layers) <= set(layers):
        return config  # 'all', null (the middle extracted layer) or negative indices: prepare checks them
    if "pca_layers" in given or "layers" not in given:
        raise ConfigError(f"The 'pca_layers' setting of layer-geometry must list extracted layers, here {layers}. "
                          f"Got {_shown(pca)} instead: give --set 'pca_layers=[{layers[-1]}]' or --set pca_layers=null "
                          f"(the middle extracted layer).")
    kept = [layer for layer in pca_layers if layer in layers] or sorted({layers[0], layers[-1]})
    config.pca_layers = kept
    why = "those of them that are extracted" if set(kept) <= set(pca_layers) else "the first and last extracted"
    config._notes.append(f"pca_layers: the setup's {pca!r} with layers {layers} drawn as {kept} ({why}; "
                         f"--set pca_layers=... to choose)")
    return config
