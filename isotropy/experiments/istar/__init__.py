"""I-STAR and CosReg fine-tuning after Rudman & Eickhoff (ICLR 2024): ``isotropy run istar``.

Modules: :mod:`.model` (encoder + linear head, the regularised hidden states), :mod:`.data`
(GLUE or table splits, tokenisation, metrics), :mod:`.train` (one run, mid-run checkpoints),
:mod:`.run` (the sweep, resume, tables), :mod:`.plot` (figures), :mod:`.cli` (the command).
"""
