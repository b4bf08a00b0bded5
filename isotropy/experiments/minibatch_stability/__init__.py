"""Mini-batch stability of IsoScore and IsoScore* (Rudman & Eickhoff, Figure 4): ``isotropy run minibatch-stability``."""
