"""Average activation diagrams and rogue dimensions (Rudman & Eickhoff, Figure 1): ``isotropy run activation-diagrams``."""
