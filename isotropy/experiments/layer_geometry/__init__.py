"""Contextual embedding geometry layer by layer after Cai et al. (ICLR 2021): ``isotropy run layer-geometry``.

Modules: :mod:`.metrics` (the numbers of one space), :mod:`.run` (extraction, per-layer metrics,
tables), :mod:`.plot` (per-layer curves, 2-D/3-D PCA projections), :mod:`.cli` (the command).
"""
