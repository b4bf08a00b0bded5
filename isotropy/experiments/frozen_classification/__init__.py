"""Frozen-encoder classification with cluster-based isotropy (Rajaee & Pilehvar): ``isotropy run frozen-classification``."""
