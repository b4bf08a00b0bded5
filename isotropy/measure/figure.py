"""The per-layer figure of ``isotropy measure --model``: drawn from the measurement, or later from its ``--json`` file.

``isotropy measure --model M --texts T --plot OUT`` draws it as it measures; ``isotropy plot OUT.json`` draws the
same figure from the JSON that ``--json OUT.json`` wrote, without loading the model again.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

__all__ = ["layers_figure", "read_layers_json"]

# a --model JSON holds a few kilobytes per layer; a file far larger is not one
_JSON_LIMIT = 256 * 2**20  # as the training logs' reader: a trainer_state.json under another name is read there
_MAX_ROWS = 100_000
_WRITES = "the JSON that 'isotropy measure --model M --texts T --json FILE' writes"
_EXPECTED = f"expected {_WRITES}"


def read_layers_json(path: str | os.PathLike) -> dict | None:
    """The record of ``isotropy measure --model ... --json`` in ``path``, checked, with ``null`` values as NaN.

    ``None`` when the file is JSON of another kind (a training log's ``trainer_state.json``): the caller reads it as
    such. The JSON of ``isotropy measure`` on an embeddings file (one row of values, no layers) is refused, as is a
    ``--model`` record whose rows are not what the command writes, each in one line naming the file.

    Raises
    ------
    IsotropyValueError
        Not JSON, larger than 256 MiB, or a measure record that cannot be drawn against the layer.
    """
    from isotropy._utils.errors import IsotropyValueError
    from isotropy.io._paths import read_json
    from isotropy.metrics.table import METRICS

    path = Path(path)
    record = read_json(path, what="JSON file", expected=f"{_WRITES}, or a Hugging Face trainer_state.json",
                       limit=_JSON_LIMIT)
    if not isinstance(record, dict):
        return None
    name = repr(str(path))
    if "rows" not in record and {"values", "n_features", "file"} <= record.keys():
        raise IsotropyValueError(f"The measure JSON {name} is of an embeddings file: one row of values, with no layer "
                                 f"to draw them against; {_EXPECTED}, one row per layer.")
    needed = ("model", "rows", "metrics")
    if not set(needed) <= record.keys() and "log_history" not in record and (path.parent / "run.json").is_file():
        # a run's metrics.json (layer-geometry's has 'model' and 'pooling'), run.json, claims.json: the run draws them
        raise IsotropyValueError(f"The JSON {name} is a file of the run {str(path.parent)!r}, not {_WRITES}; draw the "
                                 f"run's figures from its folder: isotropy plot {path.parent}")
    if not set(needed) <= record.keys():
        if "log_history" in record or not {*needed, "level", "pooling"} & record.keys():
            return None  # a training log, or JSON of another kind: the training logs' reader says what it is
        missing = [key for key in needed if key not in record]
        raise IsotropyValueError(f"The measure JSON {name} cannot be drawn: it has no {', '.join(map(repr, missing))}; "
                                 f"{_EXPECTED}.")

    def refuse(problem: str):
        return IsotropyValueError(f"The measure JSON {name} cannot be drawn: {problem}; {_EXPECTED}.")

    metrics, rows = record["metrics"], record["rows"]
    if not isinstance(metrics, list) or not all(isinstance(m, str) and m in METRICS for m in metrics):
        raise refuse(f"'metrics' is {_short(metrics)}, not a list of metric names ({', '.join(sorted(METRICS))})")
    if not isinstance(rows, list) or not rows or len(rows) > _MAX_ROWS:
        raise refuse(f"'rows' is {_short(rows)}, not a list of 1 to {_MAX_ROWS:,} layers")
    if record.get("level") not in ("sentence", "token") or not isinstance(record.get("model"), str):
        raise refuse(f"'level' is {_short(record.get('level'))} and 'model' {_short(record.get('model'))}, not "
                     f"'sentence' or 'token' and a model's name")
    if record["level"] == "sentence" and not isinstance(record.get("pooling"), str):
        raise refuse(f"'pooling' is {_short(record.get('pooling'))}, not a pooling's name")
    out, previous = [], None
    for i, row in enumerate(rows):
        layer = row.get("layer") if isinstance(row, dict) else None
        last = i == len(rows) - 1
        if not (layer == "output" and last and i > 0) and (isinstance(layer, bool) or not isinstance(layer, int)
                                                           or not 0 <= layer <= _MAX_ROWS
                                                           or (previous is not None and layer <= previous)):
            raise refuse(f"row {i} has the layer {_short(layer)}; expected layer indices (0 to {_MAX_ROWS:,}) in "
                         f"increasing order, and 'output' only as the last row")
        previous = layer if isinstance(layer, int) else previous
        values = {}
        for key in [*metrics, "norm_max_over_median"]:
            value = row.get(key)
            if value is None:
                value = math.nan  # a metric that failed, or a non-finite value: written as null
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise refuse(f"row {i} (layer {layer}) has {key} = {_short(value)}, not a number")
            try:
                values[key] = float(value)
            except OverflowError:  # an integer past the floats
                raise refuse(f"row {i} (layer {layer}) has {key} = {_short(value)}, beyond the floats") from None
        count = row.get("n_samples")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise refuse(f"row {i} (layer {layer}) has n_samples = {_short(count)}, not a count of vectors")
        values["n_samples"] = count
        out.append({**row, **values})
    return {**record, "rows": out}


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def layers_figure(result: dict):
    """One panel per metric against the layer index, and the max / median vector norm; a matplotlib ``Figure``.

    ``result`` is what :func:`isotropy.measure.from_model.measure_layers` returns, or the JSON that
    ``isotropy measure --model ... --json`` writes (:func:`read_layers_json`): ``metrics``, ``rows`` (one per
    hidden state, ``layer`` its index, and a sentence-transformers model's ``"output"`` row last), ``model``,
    ``level`` and ``pooling``. No pyplot: the user's backend is never switched.
    """
    from matplotlib.figure import Figure

    from isotropy.metrics.table import METRICS

    names = [*result["metrics"], "norm_max_over_median"]
    titles = {**{m: METRICS[m].display_name for m in result["metrics"]}, "norm_max_over_median": "max / median norm"}
    n_cols = min(4, len(names))
    n_rows = math.ceil(len(names) / n_cols)
    fig = Figure(figsize=(3.2 * n_cols, 2.6 * n_rows))
    axes = fig.subplots(n_rows, n_cols, squeeze=False)
    hidden = [r for r in result["rows"] if r["layer"] != "output"]
    output = [r for r in result["rows"] if r["layer"] == "output"]  # a sentence-transformers model's own output
    layers = [r["layer"] for r in hidden]
    # solid lines join adjacent layers only; a dotted one crosses layers that were not measured
    breaks = [i for i in range(1, len(layers)) if layers[i] != layers[i - 1] + 1]
    runs = [slice(a, b) for a, b in zip([0, *breaks], [*breaks, len(layers)])]
    ticks = layers if len(layers) <= 12 else layers[::math.ceil(len(layers) / 12)]
    at = layers[-1] + max(1, (layers[-1] - layers[0]) // 10)  # the output row: its own tick, apart from the layers
    for ax, name in zip(axes.flat, names):
        y = [r[name] for r in hidden]
        for part in runs:
            ax.plot(layers[part], y[part], marker="o", ms=3, color="C0")
        for i in breaks:
            ax.plot(layers[i - 1:i + 1], y[i - 1:i + 1], linestyle=":", linewidth=1, color="C0")
        ax.set_xticks(ticks, [str(layer) for layer in ticks])
        if output:
            ax.axvline((layers[-1] + at) / 2, color="0.8", linewidth=0.8)
            ax.plot([at], [output[0][name]], marker="*", ms=7, linestyle="none", color="C1", label="model output")
            ax.set_xticks([*ticks, at], [*map(str, ticks), "output"])
            ax.legend(fontsize=6)
        ax.set_title(titles[name], fontsize=9)
        ax.set_xlabel("layer", fontsize=8)
        values = [r[name] for r in result["rows"] if math.isfinite(r[name]) and r[name] > 0]
        if name in ("partition_isotropy", "norm_max_over_median") and values and max(values) > 20 * min(values):
            ax.set_yscale("log")
            under = [r["layer"] for r in hidden if name == "partition_isotropy" and r[name] == 0.0]
            if under:  # I(W) underflowed to 0.0, which a log axis cannot show: marked below the smallest value
                ax.plot(under, [min(values) / 10] * len(under), marker="v", ms=4, linestyle="none", color="C3",
                        label="< 5e-324 (underflow)")
                ax.legend(fontsize=6)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    what = f"{result['level']} level" + (f", {result['pooling']} pooling" if result["level"] == "sentence" else "")
    fig.suptitle(f"{result['model']}: {what}, {result['rows'][0]['n_samples']} vectors per layer", fontsize=10)
    fig.tight_layout()
    return fig


