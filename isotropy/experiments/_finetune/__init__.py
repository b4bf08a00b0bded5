"""Fine-tuning shared by the istar, activation-diagrams and cluster-finetune experiments.

Modules: :mod:`.config` (the fine-tuning settings, the istar schema; the sweep's runs),
:mod:`.data` (GLUE or table splits, tokenisation, task metrics, :func:`.data.prepare`),
:mod:`.model` (encoder loading, pooling, the regularised hidden states, the sentence classifier),
:mod:`.train` (one run with I-STAR, CosReg or no regulariser, mid-run checkpoints). No experiment
imports another; what two experiments share lives here.
"""
