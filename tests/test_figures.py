"""Figures a paper would take (issue 12, item 4), drawn from small hand-made results: no run needed."""

from __future__ import annotations

import json

import matplotlib.colors as mcolors
import numpy as np
import pytest


def _layer_results(n_layers=3, static=True):
    row = {"n": 100, "d": 8, "n_types": 10, "s_inter": 0.3, "s_intra": 0.6, "n_clusters": 2, "silhouette": 0.4,
           "s_inter_centered": 0.05, "s_intra_centered": 0.3, "isoscore": 0.2, "isoscore_centered": 0.4,
           "lid_euclidean": 9.0, "lid_cosine": 8.0}
    return {"model": "tiny", "corpus": "toy", "n_tokens": 100, "n_types": 10,
            "metric_options": {"n_neighbors": 20, "min_silhouette": 0.1},
            "layers": [{"layer": i, **row, "clusters": []} for i in range(n_layers)],
            "static": {"name": "GloVe 6B 50d", **row} if static else None}


def _write_projection(path, clusters):
    rng = np.random.default_rng(0)
    n = len(clusters)
    np.savez(path, coords=rng.normal(size=(n, 3)).astype(np.float32), cluster=np.asarray(clusters),
             frequency=rng.integers(1, 100, n), words=np.array(["w"] * n))


def test_layer_metrics_fit_a_column_with_real_legends(tmp_path):
    from isotropy.experiments.layer_geometry.plot import plot_results

    (tmp_path / "metrics.json").write_text(json.dumps(_layer_results()))
    fig = plot_results(tmp_path)["figures/layer_metrics"]
    width, _ = fig.get_size_inches()
    assert width <= 7.2  # a two-column paper's full width (figure*)
    panels = [ax for ax in fig.axes if ax.get_title()]
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]  # the 4th sits on its twin axis
    assert len(panels) == 4 and len(legends) == 4
    labels = [t.get_text() for t in panels[0].get_legend().get_texts()]
    assert "S_inter, GloVe 6B 50d (static)" in labels and "S_intra, cluster-centred" in labels
    assert all(t.get_fontsize() >= 7 for legend in legends for t in legend.get_texts())


@pytest.mark.parametrize("clusters, n_panels", [([0] * 40, 1), ([0] * 20 + [1] * 20, 2)])
def test_pca_figures_have_no_empty_panel_when_k_is_1(tmp_path, clusters, n_panels):
    from isotropy.experiments.layer_geometry.plot import plot_results

    (tmp_path / "metrics.json").write_text(json.dumps(_layer_results()))
    _write_projection(tmp_path / "projection_layer2.npz", clusters)
    figures = plot_results(tmp_path)
    for key in ("figures/pca_layer2_2d", "figures/pca_layer2_3d"):
        titled = [ax for ax in figures[key].axes if ax.get_title()]
        assert len(titled) == n_panels, key
    assert ("one K-means cluster" in figures["figures/pca_layer2_2d"].get_suptitle()) == (n_panels == 1)


def test_every_lambda_gets_a_readable_distinct_colour():
    from isotropy.experiments.istar.plot import _lambda_colours

    lams = [-5.0, -3.0, -1.0, 0.5, 1.0, 3.0, 5.0]
    colours = _lambda_colours(lams)
    rgb = [mcolors.to_rgb(colours[lam]) for lam in lams]
    luminance = [0.2126 * r + 0.7152 * g + 0.0722 * b for r, g, b in rgb]
    assert max(luminance) < 0.75  # none washes out against a white background (coolwarm's middle is ~0.87)
    assert len({tuple(np.round(c, 3)) for c in rgb}) == len(lams)
    blue, red = rgb[0], rgb[-1]
    assert blue[2] > blue[0] and red[0] > red[2]  # negative λ blue, positive λ red
