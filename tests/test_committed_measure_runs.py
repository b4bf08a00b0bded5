"""The committed ``isotropy measure`` outputs that the docs read (docs/runs/measure-model/): their inputs can be made
again, and the pages show what the files hold."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path

from conftest import shared_data_path

RUN = Path(__file__).resolve().parents[1] / "docs" / "runs" / "measure-model" / "gemma-wikitext"


def _make_texts():
    spec = importlib.util.spec_from_file_location("make_texts", RUN / "make_texts.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_gemma_table_texts_are_made_again_byte_for_byte(tmp_path):
    """make_texts.py draws the 200 sentences the committed gemma.json measured: the same bytes (its sha256)."""
    shared_data_path("wikitext-2", "wiki.test.tokens")
    out = tmp_path / "wikitext_test_200.txt"
    _make_texts().main(str(shared_data_path()), str(out))
    record = json.loads((RUN / "gemma.json").read_text())
    (texts,) = record["inputs"]["texts"]
    assert hashlib.sha256(out.read_bytes()).hexdigest() == texts["sha256"]
    assert out.stat().st_size == texts["bytes"]
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == record["n_texts"] == 200 and all(8 <= len(line.split()) <= 30 for line in lines)


def test_the_gemma_table_is_the_committed_json():
    """Every cell of docs/models.md's layer table is the committed gemma.json's value for its layer."""
    sys.path.insert(0, str(RUN.parents[2]))
    try:
        import _hooks
    finally:
        sys.path.pop(0)
    page = (RUN.parents[2] / "models.md").read_text(encoding="utf-8")
    rendered = _hooks.render_claims(page, "models.md")
    rows = {row["layer"]: row for row in json.loads((RUN / "gemma.json").read_text())["rows"]}
    table = [line for line in rendered.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert [int(line.split("|")[1].split()[0]) for line in table] == [0, 1, 3, 6, 9, 12, 15, 17, 18]
    for line in table:
        cells = [c.strip() for c in line.split("|")[1:-1]]
        row = rows[int(cells[0].split()[0])]
        assert cells[1:] == [format(row["isoscore"], ".2g").replace("-", "−"),
                             format(row["partition_isotropy"], ".2g").replace("-", "−"),
                             f"{row['cosine_similarity_mean']:.3f}", f"{row['rogue_dimension_share']:.2f}",
                             f"{row['twonn_dimension']:.1f}", f"{row['norm_max_over_median']:.2f}"]


def test_the_training_demo_table_is_the_committed_summary():
    """docs/training.md's SST-2 table (typed by hand before; a user trial) is the committed summary.json of
    examples/training_geometry_sst2.py: per λ, the dev accuracy and the first and last logged values."""
    sys.path.insert(0, str(RUN.parents[2]))
    try:
        import _hooks
    finally:
        sys.path.pop(0)
    summary = json.loads((RUN.parents[1] / "training-demo" / "minilm-sst2" / "summary.json").read_text())
    rendered = _hooks.render_claims((RUN.parents[2] / "training.md").read_text(encoding="utf-8"), "training.md")
    table = [line for line in rendered.splitlines() if line.startswith(("| −1 |", "| 0 (none) |", "| +1 |"))]
    assert len(table) == 3
    for line, run in zip(table, sorted(summary["runs"], key=lambda r: r["lambda"])):
        def span(metric, layer, spec, geometry=run["geometry"]):
            first, last = geometry[metric][str(layer)]
            return f"{first:{spec}} → {last:{spec}}"

        cells = [c.strip() for c in line.split("|")[1:-1]]
        assert cells[1:] == [f"{run['dev_accuracy']:.3f}", span("isoscore_star", 1, ".3f"), span("isoscore_star", 6, ".3f"),
                             span("cosine_similarity_mean", 4, ".2f"), span("rogue_dimension_share", 5, ".2f")]
    assert summary["settings"]["max_steps"] == 120 and summary["seeds"] == {"torch": 0, "data": 0}
